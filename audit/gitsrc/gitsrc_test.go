package gitsrc

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// commitRepo makes a repository at dir with one file and returns the commit.
func commitRepo(t *testing.T, dir string) string {
	t.Helper()
	r, err := git.PlainInit(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "lib", "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"lib/a.c", "lib/sub/b.c", "lib/sub/c.h", "README"} {
		if err := os.WriteFile(filepath.Join(dir, p), []byte(p+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	wt, _ := r.Worktree()
	if err := wt.AddGlob("."); err != nil {
		t.Fatal(err)
	}
	h, err := wt.Commit("x", &git.CommitOptions{Author: &object.Signature{Name: "t", Email: "t@x", When: time.Unix(1, 0)}})
	if err != nil {
		t.Fatal(err)
	}
	return h.String()
}

func TestMirrorLayouts(t *testing.T) {
	for _, layout := range []string{"o+name/repo", "o+name", "name", "name.git"} {
		t.Run(layout, func(t *testing.T) {
			src := t.TempDir()
			commit := commitRepo(t, src)
			mirrors := t.TempDir()
			dst := filepath.Join(mirrors, layout)
			if _, err := git.PlainClone(dst, true, &git.CloneOptions{URL: src}); err != nil {
				t.Fatal(err)
			}
			t.Setenv(MirrorsEnv, mirrors)
			r, err := Locate("https://github.com/o/name", "")
			if err != nil {
				t.Fatal(err)
			}
			if r.Dir != dst {
				t.Errorf("found %s, want %s", r.Dir, dst)
			}
			s, err := r.At(commit[:8])
			if err != nil {
				t.Fatal(err)
			}
			got, err := s.Files("lib/**/*.c")
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 2 || got[0] != "lib/a.c" || got[1] != "lib/sub/b.c" {
				t.Errorf("lib/**/*.c = %v", got)
			}
			if got, _ := s.Files("lib/sub"); len(got) != 2 {
				t.Errorf("lib/sub = %v", got)
			}
		})
	}
}

func TestMatch(t *testing.T) {
	tests := []struct {
		pattern, file string
		want          bool
	}{
		{"picoquic/*.c", "picoquic/frames.c", true},
		{"picoquic/*.c", "picoquic/sub/frames.c", false},
		{"quiche/src/**/*.rs", "quiche/src/lib.rs", true},
		{"quiche/src/**/*.rs", "quiche/src/recovery/congestion/mod.rs", true},
		{"src/core", "src/core/path.c", true},
		{"src/core", "src/corex/path.c", false},
		{"*.go", "connection.go", true},
		{"*.go", "internal/x.go", false},
	}
	for _, tc := range tests {
		if got := match(tc.pattern, tc.file); got != tc.want {
			t.Errorf("match(%q, %q) = %v", tc.pattern, tc.file, got)
		}
	}
}
