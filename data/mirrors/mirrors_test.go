package mirrors

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func bare(t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(dir, "objects"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "HEAD"), []byte("ref: refs/heads/main\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestFind(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	const up = "https://github.com/quic-go/quic-go"
	bare(t, filepath.Join(b, "quic-go+quic-go", "repo"))
	bare(t, filepath.Join(a, "quic-go.git"))                        // the cache clones' layout
	os.MkdirAll(filepath.Join(a, "quic-go+quic-go", "repo"), 0o755) // a directory that is no repository
	os.MkdirAll(filepath.Join(b, "ngtcp2", ".git"), 0o755)          // a work tree
	list := a + string(filepath.ListSeparator) + b
	tests := []struct {
		list, upstream, want, wantErr string
	}{
		{list, up, filepath.Join(a, "quic-go.git"), ""}, // the first directory wins, whatever its layout
		{b, up, filepath.Join(b, "quic-go+quic-go", "repo"), ""},
		{b, "https://github.com/ngtcp2/ngtcp2.git", filepath.Join(b, "ngtcp2"), ""},
		{list, "https://github.com/cloudflare/quiche", "", "none of " + filepath.Join(a, "cloudflare+quiche", "repo")},
		{"", up, "", "no mirror directory"},
	}
	for _, tc := range tests {
		got, err := Find(tc.list, tc.upstream)
		if tc.wantErr != "" {
			if !errors.Is(err, ErrNoSource) || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("Find(%q, %s): err = %v, want ErrNoSource saying %q", tc.list, tc.upstream, err, tc.wantErr)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("Find(%q, %s) = %q, %v; want %q", tc.list, tc.upstream, got, err, tc.want)
		}
	}
}

func TestResolve(t *testing.T) {
	t.Setenv(Env, "/from/env")
	if got := Resolve("/flag"); got != "/flag" {
		t.Errorf("Resolve(flag) = %q", got)
	}
	if got := Resolve(""); got != "/from/env" {
		t.Errorf("Resolve(\"\") = %q, want $%s", got, Env)
	}
}

func TestOwnerName(t *testing.T) {
	for in, want := range map[string]string{
		"https://github.com/quic-go/quic-go":   "quic-go quic-go",
		"https://github.com/ngtcp2/ngtcp2.git": "ngtcp2 ngtcp2",
		"https://github.com/microsoft/msquic/": "microsoft msquic",
		"msquic":                               " msquic",
	} {
		o, n := OwnerName(in)
		if o+" "+n != want {
			t.Errorf("OwnerName(%q) = %q %q, want %q", in, o, n, want)
		}
	}
}
