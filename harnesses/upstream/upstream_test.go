package upstream

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// newRepo makes a git repository with files committed at one commit and a
// dirty work tree (a modified file that must never reach a build).
func newRepo(t *testing.T, files map[string]string) (dir, commit string) {
	t.Helper()
	dir = t.TempDir()
	r, err := git.PlainInit(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	wt, err := r.Worktree()
	if err != nil {
		t.Fatal(err)
	}
	for n, c := range files {
		p := filepath.Join(dir, n)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		mode := os.FileMode(0o644)
		if strings.HasSuffix(n, ".sh") {
			mode = 0o755
		}
		if err := os.WriteFile(p, []byte(c), mode); err != nil {
			t.Fatal(err)
		}
		if _, err := wt.Add(n); err != nil {
			t.Fatal(err)
		}
	}
	h, err := wt.Commit("test", &git.CommitOptions{Author: &object.Signature{Name: "t", Email: "t@example.org", When: time.Unix(1700000000, 0)}})
	if err != nil {
		t.Fatal(err)
	}
	for n := range files { // local edits after the commit
		if err := os.WriteFile(filepath.Join(dir, n), []byte("DIRTY WORK TREE\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir, h.String()
}

func recipe(src, dep string, builds *int) Recipe {
	return Recipe{
		Impl: "toy", Version: "1",
		Src:     Source{Impl: "toy", Upstream: "https://example.org/o/toy", Dir: src, Commit: "HEAD"},
		Deps:    map[string]Source{"lib": {Upstream: "https://example.org/o/lib", Dir: dep, Commit: "HEAD"}},
		Options: []string{"-DX=1"},
		Files:   map[string][]byte{"harness.c": []byte("int main(void){return 0;}\n")},
		Tools:   []string{"sh"},
		Build: func(ctx context.Context, w *Workspace) error {
			*builds++
			return w.Run(ctx, w.BuildDir, "sh", "-c",
				`cat "$0/main.txt" "$1/lib.txt" "$2/harness.c" > out.bin && test -x "$0/run.sh"`,
				w.SrcDir, w.DepDirs["lib"], w.FilesDir)
		},
		Outputs: []string{"out.bin"},
	}
}

func TestEnsureBuildsFromCommitAndReusesCache(t *testing.T) {
	t.Setenv(CacheEnv, t.TempDir())
	src, commit := newRepo(t, map[string]string{"main.txt": "main at commit\n", "run.sh": "#!/bin/sh\n"})
	dep, depCommit := newRepo(t, map[string]string{"lib.txt": "lib at commit\n"})
	builds := 0
	ctx := context.Background()
	a, err := Ensure(ctx, recipe(src, dep, &builds), nil)
	if err != nil {
		t.Fatal(err)
	}
	if a.Commit != commit || a.Deps["lib"] != depCommit || a.Reused || builds != 1 {
		t.Fatalf("first Ensure: commit %s deps %v reused %v builds %d", a.Commit, a.Deps, a.Reused, builds)
	}
	out, err := os.ReadFile(a.Path("out.bin"))
	if err != nil {
		t.Fatal(err)
	}
	if want := "main at commit\nlib at commit\nint main(void){return 0;}\n"; string(out) != want {
		t.Fatalf("output built from %q, want the committed trees (never the dirty work tree): %q", out, want)
	}
	if _, err := os.Stat(filepath.Join(a.Dir, "build.json")); err != nil {
		t.Fatal(err)
	}

	b, err := Ensure(ctx, recipe(src, dep, &builds), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !b.Reused || builds != 1 || b.SHA256["out.bin"] != a.SHA256["out.bin"] {
		t.Fatalf("second Ensure: reused %v builds %d", b.Reused, builds)
	}

	// A tampered output no longer matches build.json: rebuilt.
	if err := os.WriteFile(a.Path("out.bin"), []byte("tampered"), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := Ensure(ctx, recipe(src, dep, &builds), nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.Reused || builds != 2 || c.SHA256["out.bin"] != a.SHA256["out.bin"] {
		t.Fatalf("after tampering: reused %v builds %d sha %s vs %s", c.Reused, builds, c.SHA256["out.bin"], a.SHA256["out.bin"])
	}

	// Another option is another cache entry.
	r := recipe(src, dep, &builds)
	r.Options = []string{"-DX=2"}
	d, err := Ensure(ctx, r, nil)
	if err != nil {
		t.Fatal(err)
	}
	if d.Dir == a.Dir || d.Reused || builds != 3 {
		t.Fatalf("other options: dir %s (first %s) reused %v builds %d", d.Dir, a.Dir, d.Reused, builds)
	}
}

func TestEnsureErrors(t *testing.T) {
	t.Setenv(CacheEnv, t.TempDir())
	t.Setenv("MIGAUDIT_MIRRORS", "")
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	src, _ := newRepo(t, map[string]string{"main.txt": "x\n", "run.sh": "#!/bin/sh\n"})
	dep, _ := newRepo(t, map[string]string{"lib.txt": "y\n"})
	builds := 0
	ctx := context.Background()
	cases := []struct {
		name string
		mod  func(r *Recipe)
		want string
	}{
		{"missing dependency", func(r *Recipe) { r.Deps["lib"] = Source{Upstream: "https://example.org/o/lib", Commit: "HEAD"} }, "no source for lib (https://example.org/o/lib)"},
		{"missing tool", func(r *Recipe) { r.Tools = []string{"cmake-does-not-exist"} }, "apt-get install cmake-does-not-exist"},
		{"unknown commit", func(r *Recipe) { r.Src.Commit = "v9.9.9" }, `commit "v9.9.9" not in`},
		{"failing build", func(r *Recipe) {
			r.Build = func(ctx context.Context, w *Workspace) error {
				return w.Run(ctx, w.BuildDir, "sh", "-c", "echo compiler says no >&2; exit 3")
			}
		}, "compiler says no"},
		{"missing output", func(r *Recipe) { r.Outputs = []string{"never-made"} }, "expected output never-made"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := recipe(src, dep, &builds)
			c.mod(&r)
			_, err := Ensure(ctx, r, nil)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want it to contain %q", err, c.want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("error is not one line: %q", err)
			}
			if c.name != "failing build" {
				return
			}
			// A build that fails names its log, which holds the whole output.
			_, log, ok := strings.Cut(err.Error(), "(full log ")
			log = strings.TrimSuffix(log, ")")
			b, rerr := os.ReadFile(log)
			if !ok || rerr != nil || !strings.Contains(string(b), "compiler says no") {
				t.Fatalf("err = %v: no build log holding the output (%v)", err, rerr)
			}
		})
	}
}

func TestParseDeps(t *testing.T) {
	cases := []struct {
		in   []string
		want map[string]string
		err  string
	}{
		{nil, map[string]string{}, ""},
		{[]string{"picotls=/src/picotls"}, map[string]string{"picotls": "/src/picotls"}, ""},
		{[]string{"picotls"}, nil, "want name=DIR"},
		{[]string{"=/x"}, nil, "want name=DIR"},
		{[]string{"a=/x", "a=/y"}, nil, "given twice"},
	}
	for _, c := range cases {
		got, err := ParseDeps(c.in)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("ParseDeps(%q) err = %v, want %q", c.in, err, c.err)
			}
			continue
		}
		if err != nil || len(got) != len(c.want) {
			t.Errorf("ParseDeps(%q) = %v, %v", c.in, got, err)
		}
		for k, v := range c.want {
			if got[k] != v {
				t.Errorf("ParseDeps(%q)[%s] = %q, want %q", c.in, k, got[k], v)
			}
		}
	}
	if err := CheckDeps("picoquic", map[string]string{"openssl": "/x"}, "picotls"); err == nil || !strings.Contains(err.Error(), "picoquic's dependencies are picotls") {
		t.Errorf("CheckDeps: %v", err)
	}
}

func TestTailBufferLast(t *testing.T) {
	for _, tc := range []struct{ name, out, want string }{
		{"compiler error before make's lines",
			"a.cc:35:10: fatal error: print: No such file or directory\n   35 | #include <print>\ngmake[2]: *** [x] Error 2\ngmake: *** [y] Error 2\n",
			"a.cc:35:10: fatal error: print: No such file or directory"},
		{"no error line: the last three", "one\ntwo\n\nthree\nfour\n", "two | three | four"},
		{"cmake", "-- ok\nCMake Error at CMakeLists.txt:141 (find_package):\n  Could not find GnuTLS\n", "CMake Error at CMakeLists.txt:141 (find_package):"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b tailBuffer
			_, _ = b.Write([]byte(tc.out))
			if got := b.last(); got != tc.want {
				t.Fatalf("last() = %q, want %q", got, tc.want)
			}
		})
	}
}
