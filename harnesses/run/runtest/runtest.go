// Package runtest is what the live harness tests share: whether a live run
// can happen on this machine, and one short standard repetition on the
// real testbed with the manifest it wrote. It is imported by tests only.
package runtest

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/migaudit/migaudit/harnesses/run"
	"github.com/migaudit/migaudit/harnesses/run/tbnet"
	"github.com/migaudit/migaudit/harnesses/upstream"
)

// Root skips t unless it runs as root: the testbed creates network
// namespaces and TUN devices.
func Root(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: network namespaces and TUN devices")
	}
}

// Live skips t unless a live run can happen: root, and not -short.
func Live(t testing.TB) {
	t.Helper()
	Root(t)
	if testing.Short() {
		t.Skip("-short: skips the live run")
	}
}

// Mirrors skips t unless $MIGAUDIT_MIRRORS names the upstream mirrors;
// what says which ones the test builds from.
func Mirrors(t testing.TB, what string) {
	t.Helper()
	if os.Getenv("MIGAUDIT_MIRRORS") == "" {
		t.Skipf("MIGAUDIT_MIRRORS not set: no %s to build from (CI has none)", what)
	}
}

// Configure points h at its upstream sources (the mirrors by default),
// skipping t when there are none.
func Configure(t testing.TB, h interface {
	ConfigureUpstream(upstream.Options) error
}) {
	t.Helper()
	if err := h.ConfigureUpstream(upstream.Options{}); err != nil {
		if upstream.IsNoSource(err) {
			t.Skip(err)
		}
		t.Fatal(err)
	}
}

// Standard runs one uncalibrated standard repetition of h on the real
// testbed (transfer long, migrating at migrateAt, within limit) and
// returns its summary and manifest. The repetition must be valid and
// complete.
func Standard(t testing.TB, h run.Harness, transfer, migrateAt, limit time.Duration) (run.RepSummary, run.Manifest) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	out := filepath.Join(t.TempDir(), "run")
	var stdout, stderr bytes.Buffer
	sum, err := run.Run(ctx, run.Options{Harness: h, Reps: 1, Scenario: run.Standard, Out: out,
		SkipCalibration: true, Transfer: transfer, MigrateAt: migrateAt,
		NewNet: tbnet.Factory(nil)}, &stdout, &stderr)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, stderr.String())
	}
	t.Log("\n" + stdout.String())
	r := sum.Reps[0]
	if r.Status != run.Valid || !r.Completed {
		t.Fatalf("rep %s (completed %v): %v %s", r.Status, r.Completed, r.Verification.Problems, r.Error)
	}
	var m run.Manifest
	b, err := os.ReadFile(filepath.Join(r.Dir, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return r, m
}

// BuildRecord checks that a manifest records the build of a harness built
// from a checkout: the upstream commit, the commit of dep (the dependency
// built with it, "" for none), the options, and the harness binary's
// sha256, also listed among the binaries.
func BuildRecord(t testing.TB, m run.Manifest, dep string) {
	t.Helper()
	set := m.Result.Settings
	if len(set["upstream_commit"]) != 40 || (dep != "" && len(set["dep_"+dep]) != 40) || set["build_options"] == "" || len(set["harness_sha256"]) != 64 {
		t.Errorf("manifest settings lack the build record: %v", set)
	}
	if len(m.Binaries) == 0 || m.Binaries[0].SHA256 != set["harness_sha256"] {
		t.Errorf("manifest binaries %+v do not carry the harness sha256 %s", m.Binaries, set["harness_sha256"])
	}
}
