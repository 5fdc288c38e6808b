package runtest

import (
	"io"
	"os/exec"
	"strings"
	"testing"

	"github.com/migaudit/migaudit/harnesses/upstream"
)

// Logger is a writer that logs each write to t (a build's output).
func Logger(t testing.TB) io.Writer { return logger{t} }

type logger struct{ t testing.TB }

func (w logger) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

// Built runs build with its output logged to t, skipping t unless the
// mirrors are set (what names the ones it needs) or when a source is
// missing, and failing it on any other error.
func Built[T any](t testing.TB, what string, build func(log io.Writer) (T, error)) T {
	t.Helper()
	Mirrors(t, what)
	b, err := build(Logger(t))
	if upstream.IsNoSource(err) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Version runs "bin version" and returns what it printed, failing t unless
// that starts with prefix.
func Version(t testing.TB, bin, prefix string) string {
	t.Helper()
	out, err := exec.Command(bin, "version").Output()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(out), prefix) {
		t.Fatalf("version: %q", out)
	}
	return string(out)
}
