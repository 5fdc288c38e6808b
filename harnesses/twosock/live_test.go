package twosock_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/migaudit/migaudit/harnesses/lsquic"
	"github.com/migaudit/migaudit/harnesses/run"
	"github.com/migaudit/migaudit/harnesses/run/tbnet"
	"github.com/migaudit/migaudit/harnesses/twosock"
	"github.com/migaudit/migaudit/harnesses/upstream"
	"github.com/migaudit/migaudit/harnesses/xquic"
)

// TestLiveStandard builds the pinned lsquic and xquic (with BoringSSL) from
// the mirrors and runs one short, uncalibrated standard repetition of each
// on the real testbed: it must be verified as an IP migration from both
// sides, complete, record the build (commit, BoringSSL commit, options,
// sha256) in its manifest, and leave a key log written by the server.
func TestLiveStandard(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: network namespaces and TUN devices")
	}
	if testing.Short() {
		t.Skip("-short: skips the live run")
	}
	if os.Getenv("MIGAUDIT_MIRRORS") == "" {
		t.Skip("MIGAUDIT_MIRRORS not set: no lsquic/xquic/boringssl mirrors to build from (CI has none)")
	}
	for _, newH := range []func(func(string)) *twosock.Harness{lsquic.New, xquic.New} {
		h := newH(func(s string) { t.Log(s) })
		t.Run(h.Name(), func(t *testing.T) { liveStandard(t, h) })
	}
}

func liveStandard(t *testing.T, h *twosock.Harness) {
	if err := h.ConfigureUpstream(upstream.Options{}); err != nil {
		if upstream.IsNoSource(err) {
			t.Skip(err)
		}
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	out := filepath.Join(t.TempDir(), "run")
	var stdout, stderr bytes.Buffer
	sum, err := run.Run(ctx, run.Options{Harness: h, Reps: 1, Scenario: run.Standard, Out: out,
		SkipCalibration: true, Transfer: 8 * time.Second, MigrateAt: 3 * time.Second,
		NewNet: tbnet.Factory(nil)}, &stdout, &stderr)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, stderr.String())
	}
	t.Log("\n" + stdout.String())
	r := sum.Reps[0]
	if r.Status != run.Valid || !r.Completed {
		t.Fatalf("rep %s (completed %v): %v %s", r.Status, r.Completed, r.Verification.Problems, r.Error)
	}
	if len(r.Verification.Evidence) < 3 {
		t.Errorf("want client, server and trace/counter confirmations, got %q", r.Verification.Evidence)
	}
	var m run.Manifest
	b, err := os.ReadFile(filepath.Join(r.Dir, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	set := m.Result.Settings
	if len(set["upstream_commit"]) != 40 || len(set["dep_boringssl"]) != 40 || set["build_options"] == "" || len(set["harness_sha256"]) != 64 {
		t.Errorf("manifest settings lack the build record: %v", set)
	}
	if len(m.Binaries) == 0 || m.Binaries[0].SHA256 != set["harness_sha256"] {
		t.Errorf("manifest binaries %+v do not carry the harness sha256 %s", m.Binaries, set["harness_sha256"])
	}
	if m.Result.KeyLogBy != "server" {
		t.Errorf("key log by %q, want server", m.Result.KeyLogBy)
	}
	if st, err := os.Stat(filepath.Join(r.Dir, "keylog.txt")); err != nil || st.Size() == 0 {
		t.Errorf("no key log written: %v", err)
	}
}
