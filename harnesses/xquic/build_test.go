package xquic

import (
	"context"
	"io"
	"strings"
	"testing"

	"github.com/migaudit/migaudit/harnesses/run/runtest"
	"github.com/migaudit/migaudit/harnesses/upstream"
)

// TestBuildPinned builds BoringSSL and the pinned xquic from the mirrors
// and runs the harness binary's version command.
func TestBuildPinned(t *testing.T) {
	b := runtest.Built(t, "xquic/boringssl mirrors", func(log io.Writer) (*Built, error) {
		return Ensure(context.Background(), upstream.Options{}, log)
	})
	for _, a := range []*upstream.Artifact{b.BoringSSL.Artifact, b.Lib, b.Harness} {
		t.Logf("%s %s: %s (built %s, reused %v)", a.Impl, a.Commit[:12], a.Dir, a.Duration, a.Reused)
	}
	t.Logf("submodules: %v", b.Lib.Deps)
	runtest.Version(t, b.Harness.Path(Binary), "xquic ")
}

// TestMissingDep: a --dep directory that does not exist is one line naming it.
func TestMissingDep(t *testing.T) {
	_, err := Ensure(context.Background(), upstream.Options{Deps: map[string]string{"boringssl": "/nonexistent/boringssl"}}, nil)
	t.Log(err)
	if err == nil || !strings.Contains(err.Error(), "/nonexistent/boringssl") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("want a one-line error naming the missing checkout, got %v", err)
	}
	_, err = Ensure(context.Background(), upstream.Options{Deps: map[string]string{"openssl": "/x"}}, nil)
	if err == nil || !strings.Contains(err.Error(), "xquic's dependencies are boringssl") {
		t.Fatalf("unknown --dep: %v", err)
	}
}
