package testbed

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

func needRoot(t *testing.T) {
	t.Helper()
	if err := Preflight(); err != nil {
		t.Skipf("needs a root testbed: %v", err)
	}
}

// leftovers lists everything instance name could have left behind.
func leftovers(t *testing.T, name string) []string {
	t.Helper()
	var out []string
	for _, ns := range []string{clientNS(name), serverNS(name)} {
		if nsExists(ns) {
			out = append(out, "namespace "+ns)
		}
	}
	if _, err := os.Stat(StateDir + "/" + name); err == nil {
		out = append(out, "state "+StateDir+"/"+name)
	}
	b, _ := exec.Command("ps", "-eo", "pid,args").Output()
	for _, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, Prefix+name+"-") || strings.HasSuffix(strings.TrimSpace(l), "migaudit-testbed-holder "+name) {
			out = append(out, "process "+strings.TrimSpace(l))
		}
	}
	return out
}

func waitClean(t *testing.T, name string, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		left := leftovers(t, name)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("left behind by %s: %v", name, left)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestUpDownIdempotent(t *testing.T) {
	needRoot(t)
	cfg := Standard()
	cfg.Name = "t-updown-" + newName()
	tb, err := Up(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	// Everything named after the instance exists while it is up.
	for _, ns := range []string{tb.ClientNS(), tb.ServerNS()} {
		if !nsExists(ns) {
			t.Errorf("namespace %s missing while up", ns)
		}
	}
	if in, err := ReadInstance(cfg.Name); err != nil || !in.Alive() {
		t.Errorf("instance record: %+v, %v", in, err)
	}
	// A second instance with the same name is refused, naming the clash.
	if _, err := Up(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("duplicate Up: err = %v, want 'already exists'", err)
	}
	// A process started in the namespace is killed by Down.
	cmd := tb.Command(context.Background(), tb.ServerNS(), "sleep", "300")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go cmd.Wait()
	for i := 0; i < 2; i++ {
		if err := tb.Down(); err != nil {
			t.Fatalf("Down #%d: %v", i+1, err)
		}
	}
	waitClean(t, cfg.Name, 3*time.Second)
}

func TestCalibrateQuick(t *testing.T) {
	needRoot(t)
	if testing.Short() {
		t.Skip("calibration takes about a minute")
	}
	cfg := Standard()
	cfg.Name = "t-cal-" + newName()
	tb, err := Up(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := tb.Down(); err != nil {
			t.Error(err)
		}
		waitClean(t, cfg.Name, 3*time.Second)
	}()
	opt := CalibrateOptions{Quick: true, Progress: testWriter{t}}
	if os.Getenv("MIGAUDIT_CALIBRATE_FULL") == "" {
		// CI: the path the study runs on, the rates that stress the
		// emulator; the full grid is `migaudit testbed calibrate`.
		opt.Rates = []int64{20_000_000, 100_000_000}
		opt.Repeats = 2
		opt.Transfer = 2500 * time.Millisecond
	}
	cal, err := Calibrate(context.Background(), tb, opt)
	if cal != nil {
		b, _ := json.MarshalIndent(cal, "", "  ")
		_ = os.WriteFile(t.TempDir()+"/calibration.json", b, 0o644)
		if out := os.Getenv("MIGAUDIT_CALIBRATION_OUT"); out != "" {
			_ = os.WriteFile(out, b, 0o644)
		}
	}
	if err != nil {
		var ge *GateError
		if errors.As(err, &ge) {
			if onlyOverload(err) {
				// Every failing measurement coincided with the host
				// stalling a real-time thread (other test packages share
				// the 2 cores): the emulator was not measured, the host was.
				t.Skipf("host overloaded during calibration, every failure coincided with stalls: %v", err)
			}
			if timingSpoiledByHost(err, cal) {
				t.Skipf("host overloaded during calibration, every failing RTT measurement saw a host stall per 10 echoes or more: %v", err)
			}
			t.Fatalf("gate failed: %v", err)
		}
		t.Fatal(err)
	}
	if !cal.Pass {
		t.Fatalf("record says fail without an error: %+v", cal.Gates)
	}
	// The paths are restored after calibration.
	for _, p := range Paths {
		got, _ := tb.Path(p)
		want := cfg.PathA
		if p == "B" {
			want = cfg.PathB
		}
		if got != want {
			t.Errorf("path %s after calibration = %v, want %v", p, got, want)
		}
	}
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(b []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(b), "\n"))
	return len(b), nil
}

// onlyOverload reports whether every gate failure in err was measured while
// the host stalled (its message carries the stall note).
func onlyOverload(err error) bool {
	var gates []*GateError
	var walk func(error)
	walk = func(e error) {
		if j, ok := e.(interface{ Unwrap() []error }); ok {
			for _, x := range j.Unwrap() {
				walk(x)
			}
			return
		}
		var ge *GateError
		if errors.As(e, &ge) {
			gates = append(gates, ge)
		}
	}
	walk(err)
	if len(gates) == 0 {
		return false
	}
	for _, g := range gates {
		for _, f := range g.Failures {
			if !strings.Contains(f, "the machine is overloaded") {
				return false
			}
		}
	}
	return true
}

// timingSpoiledByHost: the only failing gate is timing, and in every
// failing timing measurement (its last attempt) the host stalled the
// sentinel at least once per 10 echoes. Passing runs here see 1–7 stalls
// per 100; one that failed all three attempts in CI saw 40–55 on the
// paths that failed and passed minutes later. The tool's own gate still
// calls such a failure systematic (it cannot tell without more attempts);
// the test does not blame the emulator for it.
func timingSpoiledByHost(err error, cal *Calibration) bool {
	var ge *GateError
	if cal == nil || !errors.As(err, &ge) || ge.Gate != "timing" {
		return false
	}
	for name, g := range cal.Gates {
		if !g.Pass && !g.Skipped && name != "timing" {
			return false
		}
	}
	failed := 0
	for _, r := range cal.Timing {
		if r.Pass {
			continue
		}
		failed++
		if r.N == 0 || r.HostStalls.Count*10 < r.N {
			return false
		}
	}
	return failed > 0
}

func TestTimingSpoiledByHost(t *testing.T) {
	gate := &GateError{Gate: "timing", Failures: []string{"path A rtt 10ms: median 12.654 ms"}}
	busy := TimingResult{N: 100, HostStalls: HostStalls{Count: 40}}
	quiet := TimingResult{N: 100, HostStalls: HostStalls{Count: 3}}
	cal := func(gates map[string]GateVerdict, rs ...TimingResult) *Calibration {
		return &Calibration{Gates: gates, Timing: append([]TimingResult{{N: 100, Pass: true}}, rs...)}
	}
	timingOnly := map[string]GateVerdict{"timing": {}, "throughput": {Pass: true}}
	tests := []struct {
		name string
		err  error
		cal  *Calibration
		want bool
	}{
		{"every failure under heavy stalls", gate, cal(timingOnly, busy, busy), true},
		{"one failure on a quiet host", gate, cal(timingOnly, busy, quiet), false},
		{"another gate failed too", gate, cal(map[string]GateVerdict{"timing": {}, "throughput": {}}, busy), false},
		{"not the timing gate", &GateError{Gate: "throughput"}, cal(timingOnly, busy), false},
		{"no record", gate, nil, false},
		{"nothing failed in the record", gate, cal(timingOnly), false},
	}
	for _, tc := range tests {
		if got := timingSpoiledByHost(tc.err, tc.cal); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestOnlyOverload(t *testing.T) {
	over := &GateError{Gate: "throughput", Failures: []string{"path A: x — the machine is overloaded, retry"}}
	real := &GateError{Gate: "timing", Failures: []string{"path B: median 11 ms"}}
	if !onlyOverload(errors.Join(over, over)) {
		t.Error("all-overload failures not recognised")
	}
	if onlyOverload(errors.Join(over, real)) || onlyOverload(real) || onlyOverload(errors.New("x")) {
		t.Error("a failure without stalls was excused")
	}
}
