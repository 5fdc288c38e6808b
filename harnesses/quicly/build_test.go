package quicly

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/migaudit/migaudit/harnesses/run/runtest"
	"github.com/migaudit/migaudit/harnesses/upstream"
)

// TestBuildPinned builds the pinned quicly with its picotls and klib from the
// mirrors and runs the harness binary's version command.
func TestBuildPinned(t *testing.T) {
	b := runtest.Built(t, "quicly/picotls/klib mirrors", func(log io.Writer) (*Built, error) {
		return Ensure(context.Background(), upstream.Options{}, log)
	})
	t.Logf("picotls %s, klib %s", b.Lib.Deps["src/deps/picotls"], b.Lib.Deps["src/deps/klib"])
	out, err := exec.Command(b.Harness.Path(Binary), "version").Output()
	if err != nil {
		t.Fatal(err)
	}
	if want := "quicly " + b.Lib.Commit; strings.TrimSpace(string(out)) != want {
		t.Fatalf("version printed %q, want %q", out, want)
	}
	t.Logf("%s: %s (library built in %s)", b.Harness.Dir, out, b.Lib.Duration)
}

// TestMissingPicotls: with a mirror of quicly but none of picotls, the build
// stops with one line naming picotls and how to get it.
func TestMissingPicotls(t *testing.T) {
	mirrors := os.Getenv("MIGAUDIT_MIRRORS")
	if mirrors == "" {
		t.Skip("MIGAUDIT_MIRRORS not set: no quicly mirror (CI has none)")
	}
	only := t.TempDir()
	if err := os.Symlink(filepath.Join(mirrors, "h2o+quicly"), filepath.Join(only, "h2o+quicly")); err != nil {
		t.Fatal(err)
	}
	t.Setenv("MIGAUDIT_MIRRORS", only)
	t.Setenv("MIGAUDIT_BUILD_CACHE", t.TempDir())
	t.Setenv("XDG_CACHE_HOME", t.TempDir()) // no cached clones either
	_, err := Ensure(context.Background(), upstream.Options{}, nil)
	if err == nil {
		t.Fatal("built without picotls")
	}
	msg := err.Error()
	t.Log(msg)
	for _, want := range []string{"picotls", "--dep picotls=DIR", "git clone --mirror https://github.com/h2o/picotls"} {
		if !strings.Contains(msg, want) || strings.Contains(msg, "\n") {
			t.Errorf("error %q: want one line containing %q", msg, want)
		}
	}
}

// A --dep directory that does not exist is one line naming it, before any
// cache lookup: a cached build never reads it, and would hide the typo.
func TestMissingDepDir(t *testing.T) {
	for _, dep := range []string{"picotls=/nonexistent/picotls", "klib=/nonexistent/klib@abc123"} {
		name, v, _ := strings.Cut(dep, "=")
		_, err := Ensure(context.Background(), upstream.Options{Deps: map[string]string{name: v}}, nil)
		if err == nil || !strings.Contains(err.Error(), "--dep "+dep) || !strings.Contains(err.Error(), "git clone --mirror") || strings.Contains(err.Error(), "\n") {
			t.Errorf("--dep %s: %v, want one line naming it and how to get a clone", dep, err)
		}
	}
}
