package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// BenchmarkStartup execs the built executable's analyze on a 2 KB trace:
// nearly all of each iteration is start-up (loading, package
// initialisation, flag parsing), the figure docs/analyze-performance.md
// reports. Run it under the heavy lock:
//
//	flock /tmp/migaudit-heavy.lock go test -run '^$' -bench Startup ./cmd/migaudit
func BenchmarkStartup(b *testing.B) {
	exe := filepath.Join(b.TempDir(), "migaudit")
	build := exec.Command("go", "build", "-o", exe, ".")
	if out, err := build.CombinedOutput(); err != nil {
		b.Skipf("cannot build migaudit: %v\n%s", err, out)
	}
	trace, err := filepath.Abs("../../parsers/testdata/quicgo_small.sqlog")
	if err != nil {
		b.Fatal(err)
	}
	if _, err := os.Stat(trace); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		cmd := exec.Command(exe, "analyze", "--impl", "quic-go", trace)
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("analyze: %v\n%s", err, out)
		}
	}
}
