package run

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/migaudit/migaudit/discriminator"
)

// meterNet is fakeNet with a scripted fidelity record: attempt k (counted
// by the harness) sees the stall script[k-1] in every window (0 = none).
type meterNet struct {
	fakeNet
	attempt *atomic.Int32
	script  []int64
}

func (meterNet) MonoNow() int64 { return time.Now().UnixNano() }
func (m meterNet) Fidelity(from, to int64, tol time.Duration) (FidelityWindow, error) {
	w := FidelityWindow{FromNS: from, ToNS: to, LateToleranceNS: int64(tol), SentinelSamples: int((to - from) / 1e6),
		Dirs: map[string]DirFidelity{"A/down": {Packets: 100}}}
	if k := int(m.attempt.Load()); k >= 1 && k <= len(m.script) && m.script[k-1] > 0 {
		w.Stalls = []Stall{{AtNS: from + (to-from)/2, LateNS: m.script[k-1]}}
	}
	return w, nil
}

type countingHarness struct {
	stubHarness
	n *atomic.Int32
}

func (h countingHarness) RunRep(_ context.Context, env RepEnv) (RepResult, error) {
	h.n.Add(1)
	time.Sleep(20 * time.Millisecond)
	return RepResult{Completed: true}, os.WriteFile(filepath.Join(env.Dir, "client.stdout"), []byte("x\n"), 0o644)
}

func TestRunReRunsSpoiledRepetitions(t *testing.T) {
	tests := []struct {
		name        string
		script      []int64 // stall per attempt, ns
		retries     int
		wantStatus  Status
		wantSpoiled int
		wantAgg     string
	}{
		{"held at once", []int64{0}, 0, "INVALID", 0, "0/1 valid; "},
		{"one stall, re-run", []int64{30e6, 0}, 0, "INVALID", 1, "0/1 valid (1 re-run after host stalls)"},
		{"a stall below the limit does not spoil", []int64{8e6}, 0, "INVALID", 0, "0/1 valid; "},
		{"stalls every time, no retries", []int64{30e6, 30e6}, -1, "SPOILED", 0, "1 SPOILED by the host after every retry"},
		{"stalls every time", []int64{30e6, 30e6, 30e6}, 2, "SPOILED", 2, "0/1 valid (2 re-run after host stalls)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var n atomic.Int32
			out := filepath.Join(t.TempDir(), "run")
			netw := meterNet{attempt: &n, script: tc.script}
			var stdout, stderr bytes.Buffer
			sum, err := Run(context.Background(), Options{Harness: countingHarness{n: &n}, Reps: 1, Scenario: Standard, Out: out,
				Transfer: 6 * time.Second, MigrateAt: 2 * time.Second, Retries: tc.retries,
				NewNet: func(context.Context, Scenario, bool) (Net, Calibration, func() error, error) {
					return netw, Calibration{}, func() error { return nil }, nil
				}}, &stdout, &stderr)
			if err != nil {
				t.Fatal(err)
			}
			if len(sum.Reps) != 1 || sum.Reps[0].Status != tc.wantStatus || len(sum.Spoiled) != tc.wantSpoiled {
				t.Fatalf("reps %+v spoiled %d\n%s", sum.Reps, len(sum.Spoiled), stderr.String())
			}
			if !strings.Contains(sum.Aggregate, tc.wantAgg) {
				t.Errorf("aggregate %q lacks %q", sum.Aggregate, tc.wantAgg)
			}
			for i, sp := range sum.Spoiled {
				want := filepath.Join(out, "spoiled", "rep1-try"+string(rune('1'+i)))
				if sp.Dir != want || sp.Status != "SPOILED" {
					t.Errorf("spoiled %d in %s (%s), want %s", i, sp.Dir, sp.Status, want)
				}
				b, err := os.ReadFile(filepath.Join(sp.Dir, "manifest.json"))
				if err != nil || !strings.Contains(string(b), `"status": "SPOILED"`) || !strings.Contains(string(b), "host stall of 30.0 ms") {
					t.Errorf("spoiled manifest: %v\n%.400s", err, b)
				}
			}
			if m, _ := filepath.Glob(filepath.Join(out, "rep*")); len(m) != 1 {
				t.Errorf("counted directories %v, want exactly rep1", m)
			}
			if !strings.Contains(stdout.String(), "FIDELITY") {
				t.Errorf("table has no fidelity column:\n%s", stdout.String())
			}
		})
	}
}

func TestResetWindow(t *testing.T) {
	a := func(events ...int64) *discriminator.Analysis {
		an := &discriminator.Analysis{ScopeFromUS: 4_950_000, ScopeToUS: 7_000_000,
			Migration: discriminator.Migration{Found: true, AtUS: 5_000_000, PathValidationAtUS: 5_000_000}}
		for _, e := range events {
			an.Events = append(an.Events, discriminator.Collapse{AtUS: e})
		}
		return an
	}
	tests := []struct {
		name     string
		an       *discriminator.Analysis
		from, to int64 // µs
	}{
		{"reset one RTT after validation", a(4_000_000, 5_045_000, 6_000_000), 4_950_000, 5_125_000},
		{"no decrease after the migration", a(4_000_000), 4_950_000, 7_000_000},
		{"decrease near the scope's end", a(6_990_000), 4_950_000, 7_000_000},
	}
	for _, tc := range tests {
		s := ResetWindow(tc.an, 40*time.Millisecond, 2)
		if s.FromNS != tc.from*1000 || s.ToNS != tc.to*1000 {
			t.Errorf("%s: %d–%d µs, want %d–%d (%s)", tc.name, s.FromNS/1000, s.ToNS/1000, tc.from, tc.to, s.Basis)
		}
	}
}
