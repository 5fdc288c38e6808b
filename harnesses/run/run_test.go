package run

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"io"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/migaudit/migaudit/discriminator"
)

// fakeNet is a Net with fixed addresses and no namespaces.
type fakeNet struct{}

func (fakeNet) ClientNS() string { return "" }
func (fakeNet) ServerNS() string { return "" }
func (fakeNet) ClientAddr(p Path) netip.Addr {
	if p == PathB {
		return netip.MustParseAddr("198.18.2.2")
	}
	return netip.MustParseAddr("198.18.1.2")
}
func (fakeNet) ServerAddr() netip.Addr { return netip.MustParseAddr("198.18.0.1") }
func (fakeNet) Command(ctx context.Context, ns, name string, args ...string) *exec.Cmd {
	return exec.CommandContext(ctx, name, args...)
}
func (fakeNet) RouteVia(Path) error { return nil }
func (fakeNet) PathRTT(p Path) time.Duration {
	return map[Path]time.Duration{PathA: 20e6, PathB: 40e6}[p]
}
func (fakeNet) PathRate(Path) int64                     { return 20e6 }
func (fakeNet) Counters() (map[Path]PathCounter, error) { return nil, nil }

func counters(aUp, aDown, bUp, bDown int64) map[Path]PathCounter {
	return map[Path]PathCounter{
		PathA: {ToServerPackets: aUp, FromServerPackets: aDown},
		PathB: {ToServerPackets: bUp, FromServerPackets: bDown},
	}
}

func TestVerify(t *testing.T) {
	zero := counters(0, 0, 0, 0)
	move := func(to string) []AddrChange { return []AddrChange{{To: to, Evidence: "moved to " + to}} }
	tests := []struct {
		name      string
		sc        Scenario
		res       RepResult
		after     map[Path]PathCounter
		an        *discriminator.Analysis
		wantValid bool
		wantIn    string // substring of a problem (invalid) or evidence (valid)
	}{
		{"ip migration confirmed by counters", Standard, RepResult{Moves: move("[198.18.2.2]:5000")}, counters(3000, 6000, 4000, 8000), nil, true, "path counters"},
		{"port-only trap: client stayed on A", Standard, RepResult{Moves: move("[198.18.1.2]:5001")}, counters(3000, 6000, 0, 0), nil, false, "not to the path-B address"},
		{"client says B but path B idle", Standard, RepResult{Moves: move("198.18.2.2:5000")}, counters(3000, 6000, 2, 1), nil, false, "path B carried too little"},
		{"no move reported", Standard, RepResult{}, counters(3000, 6000, 4000, 8000), nil, false, "no change of address"},
		{"server view confirms", Standard, RepResult{Moves: move("198.18.2.2:5000"), ServerSaw: []AddrChange{{From: "198.18.1.2:4000", To: "198.18.2.2:5000", Evidence: "server saw"}}}, nil, nil, true, "server saw"},
		{"server view contradicts", Standard, RepResult{Moves: move("198.18.2.2:5000"), ServerSaw: []AddrChange{{From: "198.18.1.2:4000", To: "198.18.1.2:4001"}}}, counters(1, 1, 4000, 8000), nil, false, "never to 198.18.2.2"},
		{"trace addresses confirm", Standard, RepResult{Moves: move("198.18.2.2:5000")}, nil, &discriminator.Analysis{Migration: discriminator.Migration{Found: true, OldAddr: "198.18.1.2:4000", NewAddr: "198.18.2.2:5000"}}, true, "server trace"},
		{"port-rebind valid", PortRebind, RepResult{Moves: []AddrChange{{From: "198.18.1.2:4000", To: "198.18.1.2:4001", Evidence: "rebound"}}}, counters(3000, 6000, 0, 0), nil, true, "path B idle"},
		{"port-rebind that went to B", PortRebind, RepResult{Moves: move("198.18.2.2:4001")}, counters(3000, 6000, 4000, 8000), nil, false, "port-rebind"},
		{"port-rebind same port", PortRebind, RepResult{Moves: []AddrChange{{From: "198.18.1.2:4000", To: "198.18.1.2:4000"}}}, counters(3000, 6000, 0, 0), nil, false, "did not change"},
		{"migrate-back without return", MigrateBack, RepResult{Moves: move("198.18.2.2:5000")}, counters(3000, 6000, 4000, 8000), nil, false, "never returned"},
		{"migrate-back", MigrateBack, RepResult{Moves: append(move("198.18.2.2:5000"), AddrChange{To: "198.18.1.2:5001", Evidence: "back"})}, counters(3000, 6000, 4000, 8000), nil, true, "returned"},
		{"no server-side evidence at all", Standard, RepResult{Moves: move("198.18.2.2:5000")}, nil, nil, false, "no server-side evidence"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var before map[Path]PathCounter
			if tc.after != nil {
				before = zero
			}
			v := Verify(tc.sc, fakeNet{}, tc.res, before, tc.after, tc.an)
			if v.Valid != tc.wantValid {
				t.Fatalf("valid = %v, want %v (evidence %q, problems %q)", v.Valid, tc.wantValid, v.Evidence, v.Problems)
			}
			hay := strings.Join(v.Evidence, "\n")
			if !tc.wantValid {
				hay = strings.Join(v.Problems, "\n")
			}
			if !strings.Contains(hay, tc.wantIn) {
				t.Errorf("%q not in %q", tc.wantIn, hay)
			}
		})
	}
}

func TestAggregate(t *testing.T) {
	an := func(reset bool, before, after, rtt int64) *discriminator.Analysis {
		return &discriminator.Analysis{ResetObserved: reset, WindowBeforeBytes: before, WindowAfterBytes: after,
			RTT: discriminator.RTTAttribution{FirstAfterUS: rtt, Attribution: "new-path"}, Q3: discriminator.Verdict{Answer: "UNKNOWN"}}
	}
	// wired: the wire decided this repetition's Q3.
	wired := func(a *discriminator.Analysis) *discriminator.Analysis {
		a.RTT.Wire = &discriminator.WireRTT{Decides: true, Answer: "YES"}
		a.Q3.Answer = "YES"
		return a
	}
	reps := []RepSummary{
		{Rep: 1, Status: "VALID", Completed: true, Analysis: an(true, 532322, 14520, 40400)},
		{Rep: 2, Status: "VALID", Completed: true, Analysis: an(true, 572685, 14520, 40800)},
		{Rep: 4, Status: "VALID", Completed: true, Analysis: wired(an(true, 560000, 14520, 40600))},
		{Rep: 3, Status: "INVALID", Completed: true, Analysis: an(false, 999999, 1, 20000)},
	}
	got := Aggregate(Standard, reps)
	for _, want := range []string{"3/4 repetitions verified as IP migrations", "1 INVALID (kept, excluded)",
		"reset observed 3/3 at 14,520 B", "pre-migration peaks 532,322–572,685 B", "first post-migration RTT 40.4–40.8 ms (new-path 3/3)",
		"Q3 UNKNOWN 2/3, YES 1/3 (through the packet on the wire 1/3)", "transfers completed 4/4"} {
		if !strings.Contains(got, want) {
			t.Errorf("aggregate %q lacks %q", got, want)
		}
	}
	if strings.Contains(got, "999,999") {
		t.Errorf("INVALID repetition leaked into the aggregate: %q", got)
	}
}

func TestAggregateQ2(t *testing.T) {
	q2 := func(answer string, pv, data, first, prior int64, distinct bool) RepSummary {
		return RepSummary{Status: "VALID", Completed: true, Analysis: &discriminator.Analysis{Q3: discriminator.Verdict{Answer: "YES"},
			Q2: &discriminator.Q2Live{Answer: answer, PVRTTUS: pv, DataRTTUS: data, FirstRTTAfterUS: first, PriorUS: prior, DefaultUS: 100_000, Distinct: distinct}}}
	}
	cases := []struct {
		name string
		reps []RepSummary
		want string
		not  string
	}{
		{"no wire: no Q2", []RepSummary{{Status: "VALID", Analysis: &discriminator.Analysis{}}}, "", "Q2"},
		{"all NO at the default", []RepSummary{q2("NO", 131_000, 41_000, 100_000, 100_000, true), q2("NO", 142_000, 44_000, 100_000, 100_000, true)},
			"Q2 NO 2/2 (validation round trip 131.0–142.0 ms on the wire, data 41.0–44.0 ms; first estimate 100.0 ms = default)", ""},
		{"one not distinct", []RepSummary{q2("YES", 140_000, 40_000, 140_000, 140_000, true), q2("UNKNOWN", 60_000, 40_000, 0, 0, false)},
			"Q2 UNKNOWN 1/2, YES 1/2 (validation round trip 60.0–140.0 ms on the wire, data 40.0 ms; 1/2 not 2× apart: not valid for Q2; first estimate 140.0 ms)", "= default"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := Aggregate(PVDistinct, c.reps)
			if c.want != "" && !strings.Contains(got, c.want) {
				t.Errorf("aggregate %q\nlacks %q", got, c.want)
			}
			if c.not != "" && strings.Contains(got, c.not) {
				t.Errorf("aggregate %q has %q", got, c.not)
			}
		})
	}
}

func TestWriteJSONAtomic(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "a.json")
	if err := WriteJSONAtomic(p, map[string]int{"x": 1}); err != nil {
		t.Fatal(err)
	}
	if err := WriteJSONAtomic(p, map[string]int{"x": 2}); err != nil {
		t.Fatal(err)
	}
	var v map[string]int
	b, _ := os.ReadFile(p)
	if err := json.Unmarshal(b, &v); err != nil || v["x"] != 2 {
		t.Fatalf("content %s, err %v", b, err)
	}
	if m, _ := filepath.Glob(filepath.Join(dir, ".*tmp*")); len(m) != 0 {
		t.Fatalf("temporary files left: %v", m)
	}
}

// TestStartNeverOverwrites: a second process with the same role in the same
// directory must fail rather than overwrite the first one's output.
func TestStartNeverOverwrites(t *testing.T) {
	dir := t.TempDir()
	var lines []string
	p, err := Start(ProcSpec{Role: "x", Dir: dir, Cmd: exec.Command("sh", "-c", "echo one; echo two; echo err >&2; exit 3"),
		OnStdout: func(l string) { lines = append(lines, l) }})
	if err != nil {
		t.Fatal(err)
	}
	rec := p.Wait(10 * time.Second)
	if rec.ExitCode != 3 || strings.Join(lines, ",") != "one,two" {
		t.Fatalf("exit %d lines %q", rec.ExitCode, lines)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "x.stderr")); string(b) != "err\n" {
		t.Fatalf("stderr file %q", b)
	}
	if _, err := Start(ProcSpec{Role: "x", Dir: dir, Cmd: exec.Command("true")}); err == nil {
		t.Fatal("second Start with the same role overwrote the first one's output")
	}
}

// TestStartSaveStderr: SaveStderr decides which stderr lines the saved
// file keeps; OnStderr still sees every line, and the dropped ones are
// counted in the record.
func TestStartSaveStderr(t *testing.T) {
	for _, gz := range []bool{false, true} {
		dir := t.TempDir()
		var seen []string
		p, err := Start(ProcSpec{Role: "c", Dir: dir, GzipStderr: gz, Cmd: exec.Command("sh", "-c", "echo keep1 >&2; echo drop1 >&2; echo keep2 >&2; echo drop2 >&2"),
			OnStderr:   func(l string) { seen = append(seen, l) },
			SaveStderr: func(l string) bool { return strings.HasPrefix(l, "keep") }})
		if err != nil {
			t.Fatal(err)
		}
		rec := p.Wait(10 * time.Second)
		b, err := readMaybeGzip(filepath.Join(dir, rec.Stderr))
		if err != nil || string(b) != "keep1\nkeep2\n" {
			t.Fatalf("gzip %v: saved %q (%v)", gz, b, err)
		}
		if strings.Join(seen, ",") != "keep1,drop1,keep2,drop2" || rec.StderrLinesDropped != 2 {
			t.Fatalf("gzip %v: seen %q, dropped %d", gz, seen, rec.StderrLinesDropped)
		}
	}
}

func readMaybeGzip(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil || !strings.HasSuffix(path, ".gz") {
		return b, err
	}
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	return io.ReadAll(zr)
}

// TestRunRefusesReuse: an --out that already holds repetitions is refused
// before anything runs.
func TestRunRefusesReuse(t *testing.T) {
	out := t.TempDir()
	if err := os.Mkdir(filepath.Join(out, "rep1"), 0o755); err != nil {
		t.Fatal(err)
	}
	h := stubHarness{}
	_, err := Run(context.Background(), Options{Harness: h, Reps: 1, Scenario: Standard, Out: out, Transfer: 6 * time.Second, MigrateAt: 2 * time.Second,
		NewNet: func(context.Context, Scenario, bool) (Net, Calibration, func() error, error) {
			t.Fatal("network brought up for a refused run")
			return nil, Calibration{}, nil, nil
		}}, os.Stdout, os.Stderr)
	if err == nil || !strings.Contains(err.Error(), "never overwritten") {
		t.Fatalf("err = %v", err)
	}
}

func TestRunRejectsUnsupportedScenario(t *testing.T) {
	_, err := Run(context.Background(), Options{Harness: stubHarness{}, Reps: 1, Scenario: MigrateBack, Out: t.TempDir(), Transfer: 6 * time.Second, MigrateAt: 2 * time.Second}, os.Stdout, os.Stderr)
	if err == nil || !strings.Contains(err.Error(), "one-shot") {
		t.Fatalf("err = %v", err)
	}
}

type stubHarness struct{}

func (stubHarness) Name() string                            { return "ngtcp2" }
func (stubHarness) Check(context.Context) (Binaries, error) { return nil, nil }
func (stubHarness) Capabilities() Capabilities {
	return Capabilities{Scenarios: map[Scenario]string{Standard: "", MigrateBack: "one-shot timer"}, CCs: []string{"cubic"}, DefaultCC: "cubic"}
}
func (stubHarness) RunRep(context.Context, RepEnv) (RepResult, error) { return RepResult{}, nil }

// TestAwaitReady: a process that says it listens is ready; one that exits
// first, or says nothing in time, is an error naming it.
func TestAwaitReady(t *testing.T) {
	tests := []struct {
		name    string
		script  string
		wantErr string
	}{
		{"ready", "echo LISTENING; sleep 5", ""},
		{"exits first", "exit 4", "srv exited (code 4) before listening"},
		{"silent", "sleep 5", "srv did not report listening within 300ms"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ready := make(chan struct{})
			var once sync.Once
			p, err := Start(ProcSpec{Role: "srv", Dir: t.TempDir(), Cmd: exec.Command("sh", "-c", tc.script),
				OnStdout: func(l string) {
					if l == "LISTENING" {
						once.Do(func() { close(ready) })
					}
				}})
			if err != nil {
				t.Fatal(err)
			}
			defer p.Kill()
			err = p.AwaitReady(context.Background(), ready, "srv", "srv.stderr", 300*time.Millisecond)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("ready process: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("got %v, want %q", err, tc.wantErr)
			}
		})
	}
}

// AwaitExit leaves a process that exits by itself alone, and stops one
// that outlives the wait, saying so in the harnesses' note.
func TestAwaitExit(t *testing.T) {
	cases := []struct {
		name, script string
		wantNote     string
	}{
		{"exits by itself", "exit 0", ""},
		{"outlives the wait", "sleep 30", "server still running 1 s after the client exited: stopped with SIGTERM"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Start(ProcSpec{Role: "srv", Dir: t.TempDir(), Cmd: exec.Command("sh", "-c", tc.script)})
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			rec, note := p.AwaitExit("server", time.Second, syscall.SIGTERM, 5*time.Second)
			if note != tc.wantNote {
				t.Errorf("note %q, want %q", note, tc.wantNote)
			}
			if tc.wantNote != "" && (rec.ExitCode == 0 || time.Since(start) > 10*time.Second) {
				t.Errorf("record %+v after %v: the process was not stopped", rec, time.Since(start))
			}
		})
	}
}
