package quiche

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/migaudit/migaudit/discriminator"
	"github.com/migaudit/migaudit/harnesses/run"
	"github.com/migaudit/migaudit/harnesses/run/runtest"
	"github.com/migaudit/migaudit/harnesses/run/tbnet"
	"github.com/migaudit/migaudit/parsers"
)

// needNode skips when Node.js or the pinned binding cannot be had; it
// installs the binding with npm ci on first use, as `migaudit run` does.
func needNode(t *testing.T) *Harness {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not installed: the quiche harness needs Node.js >= 20")
	}
	h := New(Options{Log: func(s string) { t.Log(s) }})
	if _, err := h.Check(context.Background()); err != nil {
		if _, nerr := exec.LookPath("npm"); nerr != nil {
			t.Skipf("quiche binding unavailable and npm is not installed: %v", err)
		}
		t.Fatalf("Check: %v", err)
	}
	return h
}

func TestLoopbackScenarios(t *testing.T) {
	if testing.Short() {
		t.Skip("runs Node.js transfers")
	}
	h := needNode(t)
	cases := []struct {
		scenario   run.Scenario
		migrations int
		ipChanged  []bool
		fresh      []bool
	}{
		{run.Standard, 1, []bool{true}, []bool{true}},
		{run.PortRebind, 1, []bool{false}, []bool{true}},
		{run.NATRebind, 1, []bool{true}, []bool{true}},
		// Returning to path A reuses the path object quiche kept.
		{run.MigrateBack, 2, []bool{true, true}, []bool{true, false}},
	}
	for _, c := range cases {
		t.Run(string(c.scenario), func(t *testing.T) {
			dir := t.TempDir()
			if keep := os.Getenv("MIGAUDIT_KEEP_DIR"); keep != "" {
				dir = filepath.Join(keep, "loopback-"+string(c.scenario))
				if err := os.MkdirAll(dir, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			env := run.RepEnv{Net: Loopback{}, Scenario: c.scenario, CC: "cubic",
				Transfer: 3 * time.Second, MigrateAt: 800 * time.Millisecond, BackAfter: 800 * time.Millisecond,
				Dir: dir, Index: 1}
			var err error
			if env.Plan, err = run.PlanRep(h.Capabilities(), env); err != nil {
				t.Fatal(err)
			}
			// Loopback is unshaped: an endless body the client stops
			// downloading after 3 s keeps the migration inside the transfer.
			env.Plan.BodyBytes, env.Plan.ClientGiveUp = 1<<40, 3*time.Second
			res, err := h.RunRep(ctx, env)
			if err != nil {
				t.Fatalf("RunRep: %v", err)
			}
			for _, p := range res.Processes {
				if p.ExitCode != 0 {
					b, _ := os.ReadFile(filepath.Join(dir, p.Stderr))
					t.Fatalf("%s exited %d: %s", p.Role, p.ExitCode, b)
				}
			}
			for _, n := range res.Notes {
				t.Log(n)
			}
			if c.scenario == run.NATRebind && len(res.ServerSaw) > c.migrations {
				// quiche switched to the rebound address unvalidated, then
				// (FailedValidation) back: both switches are real.
				t.Logf("server saw %d address changes (validation of the rebound address failed)", len(res.ServerSaw))
				c.migrations = len(res.ServerSaw)
				c.ipChanged = []bool{true, true}
				c.fresh = []bool{true, false}
			}
			if len(res.ServerSaw) != c.migrations {
				t.Fatalf("server saw %d address changes, want %d: %+v", len(res.ServerSaw), c.migrations, res.ServerSaw)
			}
			s, err := Summarize(dir, "server")
			if err != nil {
				t.Fatal(err)
			}
			if len(s.Migrations) != c.migrations {
				t.Fatalf("summary has %d migrations, want %d", len(s.Migrations), c.migrations)
			}
			for i, m := range s.Migrations {
				if m.IPChanged != c.ipChanged[i] {
					t.Errorf("migration %d: IP changed %v, want %v (%s → %s)", i+1, m.IPChanged, c.ipChanged[i], m.OldAddr, m.NewAddr)
				}
				if m.NewPathFresh != c.fresh[i] {
					t.Errorf("migration %d: new path fresh %v, want %v", i+1, m.NewPathFresh, c.fresh[i])
				}
				if m.NewPathFresh && !m.StartsAtInitial {
					if c.scenario == run.NATRebind && m.NewCwndFirst > s.InitialWindow {
						// Rebinding skips validation, so data flows on the new
						// path at once; on loopback (no delay) its window can
						// grow before the first 5 ms poll sees it.
						t.Logf("migration %d: unvalidated path first polled at %d B, already above the initial %d B", i+1, m.NewCwndFirst, s.InitialWindow)
					} else {
						t.Errorf("migration %d: fresh path started at %d B, not the measured initial window %d B", i+1, m.NewCwndFirst, s.InitialWindow)
					}
				}
				if m.OldPath == m.NewPath {
					t.Errorf("migration %d: old and new path are the same row series", i+1)
				}
			}
			if res.ReceivedBytes == 0 {
				t.Error("client received nothing")
			}
			for _, f := range []string{"server.csv", "client.csv", "server.events.jsonl", "client.events.jsonl", "quiche-paths.json"} {
				if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
					t.Error(err)
				}
			}
			if matches, _ := filepath.Glob(filepath.Join(dir, "*key*")); len(matches) > 0 {
				t.Errorf("key material written to the repetition directory: %v", matches)
			}
			// The runner's parser and discriminator read this trace.
			tl, err := parsers.ParseFile(filepath.Join(dir, "server.csv"), parsers.Options{})
			if err != nil {
				t.Fatalf("parsers: %v", err)
			}
			a, err := discriminator.Analyze(tl, discriminator.Options{Impl: "quiche", Params: map[string]float64{"S": res.Params["S"].Value}})
			if err != nil {
				t.Fatalf("discriminator: %v", err)
			}
			wantKind := discriminator.IPMigration
			if !c.ipChanged[0] {
				wantKind = discriminator.PortRebind
			}
			if a.Migration.Kind != wantKind {
				t.Errorf("discriminator migration kind %q, want %q (%s)", a.Migration.Kind, wantKind, a.Migration.Evidence)
			}
			b, _ := os.ReadFile(filepath.Join(dir, "server.csv"))
			if !strings.HasPrefix(string(b), CSVHeader+"\n") {
				t.Errorf("server.csv header: %q", strings.SplitN(string(b), "\n", 2)[0])
			}
		})
	}
}

// TestRunOneRepetition is the CI test: one short standard repetition
// through the generic runner (directories, verification, parsers,
// discriminator) across the two-path testbed (20 ms / 40 ms: on an
// unshaped link the new path's window can grow before the first 5 ms
// poll sees it). It checks that the runner verified a genuine IP
// migration and that the server's new path started at the window quiche
// created the connection's first path with.
func TestRunOneRepetition(t *testing.T) {
	runtest.Live(t)
	h := needNode(t)
	out := t.TempDir()
	if keep := os.Getenv("MIGAUDIT_KEEP_DIR"); keep != "" {
		out = filepath.Join(keep, "run-one")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var buf strings.Builder
	sum, err := run.Run(ctx, run.Options{Harness: h, Reps: 1, Scenario: run.Standard, CC: "cubic", Out: out,
		SkipCalibration: true, Transfer: 5 * time.Second, MigrateAt: 1500 * time.Millisecond, NewNet: tbnet.Factory(nil)}, &buf, &buf)
	t.Log(buf.String())
	if err != nil {
		if strings.Contains(err.Error(), "network namespaces") {
			t.Skipf("namespaces unavailable: %v", err)
		}
		t.Fatalf("run: %v", err)
	}
	if len(sum.Reps) != 1 {
		t.Fatalf("%d repetitions", len(sum.Reps))
	}
	r := sum.Reps[0]
	if r.Status == run.Spoiled && r.Fidelity != nil && r.Fidelity.Error == "" {
		// One host stall is absorbed by the runner's re-runs; a host that
		// spoiled every attempt measured itself, not quiche.
		t.Skipf("host too busy: %d attempts spoiled, the last by: %v", len(sum.Spoiled)+1, r.Fidelity.Problems)
	}
	if r.Status != run.Valid {
		t.Fatalf("repetition %s: %s %v", r.Status, r.Error, r.Verification.Problems)
	}
	s, err := Summarize(r.Dir, "server")
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Migrations) != 1 {
		t.Fatalf("summary: %d migrations", len(s.Migrations))
	}
	m := s.Migrations[0]
	if !m.IPChanged || !m.NewPathFresh || !m.StartsAtInitial {
		t.Errorf("migration figures: %+v", m)
	}
	// The testbed's fixed path-B client address (harnesses/testbed/doc.go).
	if want := "198.18.2.2"; ipOf(m.NewAddr) != want || ipOf(m.OldAddr) == want {
		t.Errorf("server saw the client move %s → %s, want from path A to %s", m.OldAddr, m.NewAddr, want)
	}
	if r.Analysis == nil || !r.Analysis.ResetObserved || r.Analysis.WindowAfterBytes != s.InitialWindow {
		t.Errorf("discriminator: %+v; measured initial window %d B", r.Analysis, s.InitialWindow)
	}
}
