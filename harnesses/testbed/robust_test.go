package testbed

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestHelperProcess is not a test: the robustness tests run the test
// binary again with TESTBED_HELPER set, to have a process they can kill.
func TestHelperProcess(t *testing.T) {
	mode := os.Getenv("TESTBED_HELPER")
	if mode == "" {
		return
	}
	name := os.Getenv("TESTBED_HELPER_NAME")
	cfg := Standard()
	cfg.Name = name
	ctx := context.Background()
	if mode == "graceful" {
		var stop context.CancelFunc
		ctx, stop = signal.NotifyContext(ctx, os.Interrupt)
		defer stop()
	}
	var tb *Testbed
	var err error
	if mode == "detached" {
		tb, err = UpDetached(ctx, cfg)
	} else {
		tb, err = Up(ctx, cfg)
	}
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	in, _ := ReadInstance(name)
	sleep := tb.Command(ctx, tb.ServerNS(), "sleep", "300")
	if err := sleep.Start(); err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	fmt.Printf("ready %d %d\n", in.PID, sleep.Process.Pid)
	if mode == "detached" {
		os.Exit(0)
	}
	if mode == "graceful" {
		defer tb.Down()
	}
	// Work that SIGINT interrupts half-way.
	_, _ = Calibrate(ctx, tb, CalibrateOptions{Quick: true, SkipGates: []string{"isolation"}})
	if mode == "graceful" {
		tb.Down()
		os.Exit(0)
	}
	time.Sleep(time.Minute)
	os.Exit(0)
}

// startHelper runs the test binary in helper mode and returns it once the
// testbed is up, with the holder's and the in-namespace sleep's pids.
func startHelper(t *testing.T, mode, name string) (cmd *exec.Cmd, holder, sleeper int) {
	t.Helper()
	cmd = exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), "TESTBED_HELPER="+mode, "TESTBED_HELPER_NAME="+name)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(out).ReadString('\n')
	if _, err := fmt.Sscanf(line, "ready %d %d", &holder, &sleeper); err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("helper %s: %q", mode, line)
	}
	go func() { // keep draining so the helper never blocks on stdout
		b := make([]byte, 4096)
		for {
			if _, err := out.Read(b); err != nil {
				return
			}
		}
	}()
	return cmd, holder, sleeper
}

func alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// A zombie (state Z) has already exited.
	i := strings.LastIndexByte(string(b), ')')
	return i > 0 && len(b) > i+2 && b[i+2] != 'Z'
}

func waitGone(t *testing.T, name string, pids ...int) {
	t.Helper()
	deadline := time.Now().Add(8 * time.Second)
	for {
		var left []string
		for _, p := range pids {
			if alive(p) {
				left = append(left, fmt.Sprintf("pid %d", p))
			}
		}
		left = append(left, leftovers(t, name)...)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("left behind by %s: %v", name, left)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestSIGINTHalfway kills processes holding a testbed with SIGINT in the
// middle of a calibration and checks that nothing is left: namespaces,
// state, holder, reaper, the process started inside the namespace.
func TestSIGINTHalfway(t *testing.T) {
	needRoot(t)
	for _, mode := range []string{"abrupt", "graceful"} {
		t.Run(mode, func(t *testing.T) {
			// abrupt: the default SIGINT action kills the process outright
			// (the holder sees its lifeline close); graceful: the process
			// catches SIGINT, the calibration stops and Down runs.
			name := "t-int-" + newName()
			cmd, holder, sleeper := startHelper(t, mode, name)
			if !nsExists(clientNS(name)) || !alive(holder) || !alive(sleeper) {
				t.Fatalf("helper reported ready but the testbed is not there")
			}
			time.Sleep(2 * time.Second) // half-way into the calibration
			if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case <-done:
			case <-time.After(15 * time.Second):
				cmd.Process.Kill()
				t.Fatal("helper did not exit within 15 s of SIGINT")
			}
			waitGone(t, name, holder, sleeper)
		})
	}
}

// TestDetachedHolderSignals: a detached holder (`migaudit testbed up`)
// outlives its starter, and SIGINT or SIGTERM to it tears everything down.
func TestDetachedHolderSignals(t *testing.T) {
	needRoot(t)
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			name := "t-det-" + newName()
			cmd, holder, sleeper := startHelper(t, "detached", name)
			_ = cmd.Wait()
			if !alive(holder) || !nsExists(serverNS(name)) {
				t.Fatalf("detached holder %d gone with its starter", holder)
			}
			tb, err := Attach(name)
			if err != nil {
				t.Fatal(err)
			}
			if r, err := tb.Route(); err != nil || r != "A" {
				t.Errorf("attached Route() = %q, %v", r, err)
			}
			if err := syscall.Kill(holder, sig); err != nil {
				t.Fatal(err)
			}
			waitGone(t, name, holder, sleeper)
		})
	}
}

// TestStaleLeftovers: Stale lists what a crashed instance left and
// RemoveStale removes only that — not a live instance, not a namespace
// without the prefix.
func TestStaleLeftovers(t *testing.T) {
	needRoot(t)
	stale := "t-stale-" + newName()
	foreign := "mgtest-foreign-" + newName()
	for _, ns := range []string{clientNS(stale), serverNS(stale), foreign} {
		if err := ip("netns", "add", ns); err != nil {
			t.Fatal(err)
		}
	}
	defer ip("netns", "del", foreign)
	defer removeNS(clientNS(stale), 0)
	defer removeNS(serverNS(stale), 0)
	// A crashed holder: its record names a pid that is gone.
	if err := writeInstance(Instance{Name: stale, PID: 1 << 22, PIDStart: 1}); err != nil {
		t.Fatal(err)
	}
	cfg := Standard()
	cfg.Name = "t-live-" + newName()
	live, err := Up(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer live.Down()

	var found bool
	for _, l := range Stale() {
		if l.Name == cfg.Name {
			t.Errorf("live instance %s listed as stale", cfg.Name)
		}
		if l.Name == stale {
			found = len(l.Namespaces) == 2 && l.StateDir != ""
		}
	}
	if !found {
		t.Fatalf("stale instance %s not listed with its 2 namespaces and state: %+v", stale, Stale())
	}
	var out strings.Builder
	if err := RunDown(DownOptions{AllStale: true}, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "removed stale "+stale) {
		t.Errorf("down --all-stale output %q does not name %s", out.String(), stale)
	}
	if nsExists(clientNS(stale)) || nsExists(serverNS(stale)) {
		t.Error("stale namespaces survived --all-stale")
	}
	if !nsExists(foreign) {
		t.Error("--all-stale removed a namespace without the prefix")
	}
	if !nsExists(live.ClientNS()) {
		t.Error("--all-stale removed a live instance")
	}
	// down of an instance that is not up is not an error.
	out.Reset()
	if err := RunDown(DownOptions{Name: stale}, &out); err != nil || !strings.Contains(out.String(), "not up") {
		t.Errorf("down of absent instance: %q, %v", out.String(), err)
	}
}
