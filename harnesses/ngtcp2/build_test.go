package ngtcp2

import (
	"context"

	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/migaudit/migaudit/harnesses/upstream"
)

func TestNghttp3Version(t *testing.T) {
	for _, tc := range []struct {
		name       string
		files      map[string]string
		want, from string
		err        string
	}{
		{name: "cmake minimum", files: map[string]string{"CMakeLists.txt": "  find_package(Libnghttp3 1.18.0)\n", "configure.ac": "libnghttp3 >= 1.17.0"},
			want: "1.18.0", from: "CMakeLists.txt"},
		{name: "cmake 0.0.0 falls back to configure.ac (v1.0.0)", files: map[string]string{"CMakeLists.txt": "find_package(Libnghttp3 0.0.0)", "configure.ac": "PKG_CHECK_MODULES([LIBNGHTTP3], [libnghttp3 >= 1.0.0],"},
			want: "1.0.0", from: "configure.ac"},
		{name: "nothing stated", files: map[string]string{"CMakeLists.txt": "find_package(Libev 4.11)"}, err: "--dep nghttp3=DIR@COMMIT"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			read := func(p string) ([]byte, error) {
				s, ok := tc.files[p]
				if !ok {
					return nil, os.ErrNotExist
				}
				return []byte(s), nil
			}
			v, from, err := Nghttp3Version(read)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want it to mention %q", err, tc.err)
				}
				return
			}
			if err != nil || v != tc.want || !strings.HasPrefix(from, tc.from) {
				t.Fatalf("got %q from %q (%v), want %q from %s", v, from, err, tc.want, tc.from)
			}
		})
	}
}

// planOrSkip resolves a plan from the mirrors, skipping without them.
func planOrSkip(t *testing.T, o upstream.Options) *Plan {
	t.Helper()
	if os.Getenv("MIGAUDIT_MIRRORS") == "" {
		t.Skip("MIGAUDIT_MIRRORS unset: no ngtcp2/nghttp3 mirrors to build from")
	}
	p, err := NewPlan(o)
	if upstream.IsNoSource(err) {
		t.Skipf("no mirror: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestPlanPin: the pin's plan asks for nghttp3 v1.18.0 and the two
// submodules at the commits the trees pin (or says it substituted).
func TestPlanPin(t *testing.T) {
	p := planOrSkip(t, upstream.Options{})
	if !strings.HasPrefix(p.Recipe.Src.Commit, "d7fb3ed0") {
		t.Errorf("ngtcp2 commit %s, want the pin d7fb3ed0", p.Recipe.Src.Commit)
	}
	if !strings.Contains(p.From["nghttp3"], "v1.18.0") {
		t.Errorf("nghttp3 chosen as %q, want v1.18.0", p.From["nghttp3"])
	}
	for _, n := range []string{"sfparse", "urlparse"} {
		if _, ok := p.Recipe.Deps[n]; !ok {
			t.Errorf("no %s dependency: %+v", n, p.Recipe.Deps)
		}
	}
	if p.Recipe.Deps["urlparse"].Commit != "c8168839c89fc5c5917c375e1bd6ffeddf3f7f88" {
		t.Errorf("urlparse %s, want ngtcp2's gitlink c8168839", p.Recipe.Deps["urlparse"].Commit)
	}
}

// TestPlanV100: v1.0.0 vendors its URL parser and nghttp3 v1.0.0 vendors
// sfparse, so neither submodule is a dependency.
func TestPlanV100(t *testing.T) {
	p := planOrSkip(t, upstream.Options{Commit: "v1.0.0"})
	if !strings.Contains(p.From["nghttp3"], "v1.0.0") || !strings.Contains(p.From["nghttp3"], "configure.ac") {
		t.Errorf("nghttp3 chosen as %q, want v1.0.0 from configure.ac", p.From["nghttp3"])
	}
	if len(p.Recipe.Deps) != 1 {
		t.Errorf("deps %+v, want nghttp3 only", p.Recipe.Deps)
	}
}

func TestPlanErrors(t *testing.T) {
	if os.Getenv("MIGAUDIT_MIRRORS") == "" {
		t.Skip("MIGAUDIT_MIRRORS unset")
	}
	empty := t.TempDir()
	for _, tc := range []struct {
		name string
		o    upstream.Options
		want string
	}{
		{"missing nghttp3 checkout", upstream.Options{Deps: map[string]string{"nghttp3": empty + "/nope"}}, "nghttp3"},
		{"unknown dep", upstream.Options{Deps: map[string]string{"picotls": empty}}, "ngtcp2's dependencies are nghttp3, sfparse, urlparse"},
		{"unknown commit", upstream.Options{Commit: "v9.9.9"}, `commit "v9.9.9"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewPlan(tc.o)
			if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("err = %v, want one line mentioning %q", err, tc.want)
			}
		})
	}
}

// TestPlanNoNghttp3: mirrors with ngtcp2 but not nghttp3 (and no clone in
// the user cache) get the one line saying how to get nghttp3.
func TestPlanNoNghttp3(t *testing.T) {
	real := os.Getenv("MIGAUDIT_MIRRORS")
	if real == "" {
		t.Skip("MIGAUDIT_MIRRORS unset: no ngtcp2 mirror to plan from")
	}
	if _, err := os.Stat(filepath.Join(real, "ngtcp2+ngtcp2", "repo")); err != nil {
		t.Skipf("no ngtcp2 mirror: %v", err)
	}
	only := t.TempDir()
	if err := os.Symlink(filepath.Join(real, "ngtcp2+ngtcp2"), filepath.Join(only, "ngtcp2+ngtcp2")); err != nil {
		t.Fatal(err)
	}
	t.Setenv("MIGAUDIT_MIRRORS", only)
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	_, err := NewPlan(upstream.Options{})
	const want = "ngtcp2's examples need nghttp3 v1.18.0 and there is no nghttp3 checkout: clone it (git clone --mirror https://github.com/ngtcp2/nghttp3 $MIGAUDIT_MIRRORS/ngtcp2+nghttp3/repo) or pass --dep nghttp3=DIR[@COMMIT]"
	if err == nil || err.Error() != want {
		t.Fatalf("err = %v\nwant %s", err, want)
	}
}

// TestBuildPin builds the pin (minutes the first time; the cache after).
func TestBuildPin(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: no upstream build")
	}
	p := planOrSkip(t, upstream.Options{})
	a, err := upstream.Ensure(context.Background(), p.Recipe, testLog{t})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range []string{OutClient, OutServer} {
		if _, err := os.Stat(a.Path(o)); err != nil {
			t.Error(err)
		}
	}
	t.Logf("built in %s (reused %v): %s", a.Duration, a.Reused, a.Dir)
}

type testLog struct{ t *testing.T }

func (l testLog) Write(b []byte) (int, error) {
	l.t.Log(strings.TrimRight(string(b), "\n"))
	return len(b), nil
}
