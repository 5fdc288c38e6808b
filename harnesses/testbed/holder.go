package testbed

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"strings"
	"syscall"
	"time"
)

// The link emulator runs in a holder process: a re-execution of the
// current binary (migaudit, or a test binary) that this package's init
// turns into the holder when holderEnv is set. Keeping the emulator out of
// the caller's process keeps its timing out of the caller's garbage
// collector: in-process, GC stop-the-world pauses on a loaded 2-core
// machine delayed packets by 3-5 ms (p99 of the echo test went from
// 10.16 ms to 13.2 ms).
const holderEnv = "MIGAUDIT_TESTBED_HOLDER"

func init() {
	if spec := os.Getenv(holderEnv); spec != "" {
		os.Exit(holderMain(spec))
	}
}

type holderSpec struct {
	Config   Config `json:"config"`
	Detached bool   `json:"detached"` // held until `testbed down`, not until the parent exits
}

// holderMain builds the instance, reports on fd 3 ("ok NAME" or
// "error: ..."), serves the control socket and tears everything down when
// asked, on SIGINT/SIGTERM/SIGHUP (detached), or when fd 4 — the parent's
// lifeline, attached mode — reaches EOF.
func holderMain(specJSON string) int {
	// No garbage collection unless memory passes 256 MiB: a GC
	// stop-the-world waits for every P, and on a loaded machine a P held
	// by a descheduled normal-priority thread stalled the SCHED_FIFO
	// emulator threads for up to 124 ms. The holder allocates almost
	// nothing per packet (pooled buffers), only per control request.
	debug.SetGCPercent(-1)
	debug.SetMemoryLimit(256 << 20)
	ready := os.NewFile(3, "ready")
	fail := func(err error) int {
		fmt.Fprintf(ready, "error: %s\n", strings.ReplaceAll(err.Error(), "\n", "; "))
		ready.Close()
		return 1
	}
	var spec holderSpec
	if err := json.Unmarshal([]byte(specJSON), &spec); err != nil {
		return fail(fmt.Errorf("holder spec: %w", err))
	}
	sigs := []os.Signal{syscall.SIGTERM}
	if spec.Detached {
		sigs = append(sigs, syscall.SIGINT, syscall.SIGHUP)
	} else {
		// The parent decides; a terminal's ^C reaches it, and its death
		// reaches us through the lifeline.
		signal.Ignore(syscall.SIGINT, syscall.SIGHUP)
	}
	ctx, stop := signal.NotifyContext(context.Background(), sigs...)
	defer stop()
	t, err := upLocal(ctx, spec.Config)
	if err != nil {
		return fail(err)
	}
	defer t.Down()
	sock := filepath.Join(StateDir, t.name, "ctl.sock")
	_ = os.Remove(sock)
	l, err := net.Listen("unix", sock)
	if err != nil {
		return fail(fmt.Errorf("control socket: %w", err))
	}
	defer l.Close()
	in, err := ReadInstance(t.name)
	if err != nil {
		return fail(err)
	}
	in.Control = sock
	in.Detached = spec.Detached
	if err := writeInstance(in); err != nil {
		return fail(err)
	}
	downc := make(chan struct{}, 1)
	go t.Serve(l, downc)
	lifec := make(chan struct{})
	if !spec.Detached {
		go func() {
			_, _ = io.Copy(io.Discard, os.NewFile(4, "lifeline"))
			close(lifec)
		}()
	}
	fmt.Fprintf(ready, "ok %s\n", t.name)
	ready.Close()
	select {
	case <-ctx.Done():
	case <-downc:
	case <-lifec:
	}
	if err := t.Down(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// Up builds an instance whose link emulator runs in a holder process tied
// to this one: when this process exits in any way, the holder tears the
// instance down. Call Down when done. Setup honours ctx.
func Up(ctx context.Context, cfg Config) (*Testbed, error) {
	return spawn(ctx, cfg, false)
}

// UpDetached builds an instance held by a detached holder (its own
// session) that outlives this process until Down (`migaudit testbed up`).
func UpDetached(ctx context.Context, cfg Config) (*Testbed, error) {
	return spawn(ctx, cfg, true)
}

func spawn(ctx context.Context, cfg Config, detached bool) (*Testbed, error) {
	if err := checkConfig(&cfg); err != nil {
		return nil, err
	}
	// /proc/self/exe: exactly this binary, even if its file was replaced
	// or deleted since we started.
	exe := "/proc/self/exe"
	if _, err := os.Stat(exe); err != nil {
		if exe, err = os.Executable(); err != nil {
			return nil, fmt.Errorf("testbed %q: find own executable to run the holder: %w", cfg.Name, err)
		}
	}
	specJSON, _ := json.Marshal(holderSpec{Config: cfg, Detached: detached})
	readyR, readyW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer readyR.Close()
	lifeR, lifeW, err := os.Pipe()
	if err != nil {
		readyW.Close()
		return nil, err
	}
	if err := os.MkdirAll(filepath.Join(StateDir, cfg.Name), 0o755); err != nil {
		return nil, fmt.Errorf("testbed %q: state directory: %w", cfg.Name, err)
	}
	// A provisional record naming us, so that Stale never mistakes an
	// instance that is coming up for a leftover; the holder replaces it.
	self := os.Getpid()
	if err := writeInstance(Instance{Name: cfg.Name, PID: self, PIDStart: procStart(self), ClientNS: clientNS(cfg.Name),
		ServerNS: serverNS(cfg.Name), Config: cfg, Started: time.Now().UTC()}); err != nil {
		return nil, fmt.Errorf("testbed %q: record instance: %w", cfg.Name, err)
	}
	logf, err := os.OpenFile(filepath.Join(StateDir, cfg.Name, "holder.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("testbed %q: holder log: %w", cfg.Name, err)
	}
	defer logf.Close()
	cmd := exec.Command(exe)
	cmd.Args = []string{"migaudit-testbed-holder", cfg.Name}
	// asyncpreemptoff: the emulator goroutines sit in raw ppoll calls the
	// runtime sees as running; its preemption signal would interrupt them
	// 100 times a second each for nothing (2 % of a core while idle).
	cmd.Env = append(os.Environ(), holderEnv+"="+string(specJSON), "GODEBUG=asyncpreemptoff=1")
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.ExtraFiles = []*os.File{readyW, lifeR}
	if detached {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	} else {
		// No Pdeathsig: it fires when the forking thread exits, which in
		// Go is any thread. The lifeline pipe says when we are gone.
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	}
	if err := cmd.Start(); err != nil {
		readyW.Close()
		lifeR.Close()
		lifeW.Close()
		return nil, fmt.Errorf("testbed %q: start holder: %w", cfg.Name, err)
	}
	readyW.Close()
	lifeR.Close()
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()

	linec := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(readyR).ReadString('\n')
		linec <- strings.TrimSpace(line)
	}()
	var line string
	select {
	case line = <-linec:
	case <-ctx.Done():
		_ = cmd.Process.Signal(syscall.SIGTERM)
		<-exited
		lifeW.Close()
		_ = removeNS(clientNS(cfg.Name), time.Second)
		_ = removeNS(serverNS(cfg.Name), time.Second)
		_ = os.RemoveAll(filepath.Join(StateDir, cfg.Name))
		return nil, fmt.Errorf("testbed %q: %w while coming up", cfg.Name, ctx.Err())
	}
	if !strings.HasPrefix(line, "ok ") {
		lifeW.Close()
		<-exited
		if line == "" {
			line = "holder exited without a word (see " + filepath.Join(StateDir, cfg.Name, "holder.log") + ")"
		}
		_ = removeNS(clientNS(cfg.Name), time.Second)
		_ = removeNS(serverNS(cfg.Name), time.Second)
		_ = os.RemoveAll(filepath.Join(StateDir, cfg.Name))
		return nil, errors.New(strings.TrimPrefix(line, "error: "))
	}
	in, err := ReadInstance(cfg.Name)
	if err != nil {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		lifeW.Close()
		<-exited
		return nil, fmt.Errorf("testbed %q: %w", cfg.Name, err)
	}
	t := &Testbed{name: in.Name, cli: in.ClientNS, srv: in.ServerNS, ctl: in.Control,
		specs: map[string]PathSpec{"A": cfg.PathA, "B": cfg.PathB}}
	if detached {
		lifeW.Close() // the holder does not read it
		go func() { <-exited }()
		return t, nil
	}
	t.holder, t.life, t.exited = cmd, lifeW, exited
	return t, nil
}

// downSpawned tears down an instance this process spawned with Up.
func downSpawned(t *Testbed) error {
	callErr := t.call(request{Op: "down"}, nil)
	t.life.Close()
	select {
	case <-t.exited:
	case <-time.After(10 * time.Second):
		_ = t.holder.Process.Kill()
		<-t.exited
	}
	// Backstop, and the answer if the holder could not be reached.
	return t.removeState(callErr)
}
