package tbnet_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/migaudit/migaudit/data"
	"github.com/migaudit/migaudit/harnesses/ngtcp2"
	"github.com/migaudit/migaudit/harnesses/quicgo"
	"github.com/migaudit/migaudit/harnesses/run"
	"github.com/migaudit/migaudit/harnesses/run/runtest"
	"github.com/migaudit/migaudit/harnesses/run/tbnet"
)

// repoRoot walks up to go.mod.
func repoRoot(t *testing.T) string {
	dir, _ := os.Getwd()
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("go.mod not found")
		}
		dir = parent
	}
}

// TestEndToEnd runs one short repetition per implementation on the real
// testbed (uncalibrated: the testbed's own tests gate calibration) and
// checks the whole chain: the repetition is verified as an IP migration,
// the server's window resets to exactly the initial window the constant
// formula gives with the harness's own parameters, and the manifest and
// analysis are on disk.
func TestEndToEnd(t *testing.T) {
	runtest.Live(t)
	tests := []struct {
		name  string
		h     run.Harness
		needs func() error
	}{
		{"ngtcp2", ngtcp2.NewSystem(), func() error { _, err := ngtcp2.NewSystem().Check(context.Background()); return err }},
		{"quic-go", nil, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := tc.h
			if tc.name == "quic-go" {
				// The harness re-executes migaudit: build it.
				exe := filepath.Join(t.TempDir(), "migaudit")
				cmd := exec.Command("go", "build", "-o", exe, "./cmd/migaudit")
				cmd.Dir = repoRoot(t)
				if out, err := cmd.CombinedOutput(); err != nil {
					t.Skipf("cannot build migaudit for the quic-go harness: %v\n%s", err, out)
				}
				h = &quicgo.Harness{Exe: exe}
			} else if err := tc.needs(); err != nil {
				t.Skipf("binaries absent: %v", err)
			}
			out := filepath.Join(t.TempDir(), "run")
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			var stdout, stderr bytes.Buffer
			sum, err := run.Run(ctx, run.Options{Harness: h, Reps: 1, Scenario: run.Standard, Out: out,
				SkipCalibration: true, Transfer: 6 * time.Second, MigrateAt: 2 * time.Second,
				NewNet: tbnet.Factory(nil)}, &stdout, &stderr)
			if err != nil {
				t.Fatalf("run: %v\n%s", err, stderr.String())
			}
			t.Log("\n" + stdout.String())
			r := sum.Reps[0]
			// The emulator's record must be there, whatever the host did.
			if r.Fidelity == nil || r.Fidelity.Error != "" || r.Fidelity.Repetition.SentinelSamples == 0 || len(r.Fidelity.Repetition.Dirs) < 4 {
				t.Fatalf("no usable fidelity record: %+v", r.Fidelity)
			}
			if r.Status == run.Spoiled {
				// One stall is absorbed by the re-runs; a host that spoils
				// every attempt measured itself, not the implementation.
				t.Skipf("host too busy: %d attempts spoiled, the last by: %v", len(sum.Spoiled)+1, r.Fidelity.Problems)
			}
			if r.Status != run.Valid {
				t.Fatalf("rep %s: %v %s", r.Status, r.Verification.Problems, r.Error)
			}
			if r.Analysis == nil {
				t.Fatal("no analysis")
			}
			// The expected reset value, computed from the constant formula
			// and the parameters the harness reported for this run.
			var m run.Manifest
			if err := readJSON(filepath.Join(r.Dir, "manifest.json"), &m); err != nil {
				t.Fatal(err)
			}
			c, _, err := data.ConstantsFor(h.Name())
			if err != nil {
				t.Fatal(err)
			}
			params := map[string]float64{}
			for k, p := range m.Result.Params {
				params[k] = p.Value
			}
			want, arith, err := c.InitialWindows[0].Eval(params)
			if err != nil {
				t.Fatal(err)
			}
			if !r.Analysis.ResetObserved || float64(r.Analysis.WindowAfterBytes) != want {
				t.Errorf("reset observed %v at %d B, want exactly %s", r.Analysis.ResetObserved, r.Analysis.WindowAfterBytes, arith)
			}
			if _, err := os.Stat(filepath.Join(r.Dir, "analysis.json")); err != nil {
				t.Error(err)
			}
			if len(m.Binaries) == 0 || m.Binaries[0].SHA256 == "" || m.Version == "" {
				t.Errorf("manifest lacks binaries/version: %+v %q", m.Binaries, m.Version)
			}
			// The emulator's capture of every datagram, both paths, recorded.
			if c := m.Capture; c == nil || c.Error != "" || c.Overruns != 0 || c.Packets["A/s2c"].Packets == 0 || c.Packets["B/s2c"].Packets == 0 {
				t.Errorf("no usable wire capture in the manifest: %+v", c)
			} else if sum, err := run.SHA256File(filepath.Join(r.Dir, run.WireFile)); err != nil || sum != c.SHA256 {
				t.Errorf("%s: sha256 %s (%v), the manifest says %s", run.WireFile, sum, err, c.SHA256)
			}
		})
	}
}

func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}
