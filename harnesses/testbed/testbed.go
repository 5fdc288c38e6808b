package testbed

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/migaudit/migaudit/harnesses/testbed/linkemu"
)

// Fixed addresses inside every instance (namespaces isolate instances, so
// two instances may use the same ones). All in 198.18.0.0/15 (RFC 2544).
var (
	serverAddr   = netip.MustParseAddr("198.18.0.1")
	clientAddrA  = netip.MustParseAddr("198.18.1.2")
	clientAddrB  = netip.MustParseAddr("198.18.2.2")
	serverPrefix = "198.18.0.0/24"
)

// Paths are the two path names, in order.
var Paths = []string{"A", "B"}

// DirCounters count one direction of one path (what the emulator delivered
// and what it dropped).
type DirCounters = linkemu.Counters

// PathCounters are one path's counters; Up is client→server.
type PathCounters struct {
	Up   DirCounters `json:"up"`
	Down DirCounters `json:"down"`
}

// Testbed is one running instance, owned (Up) or attached (Attach).
type Testbed struct {
	name     string
	cli, srv string

	mu    sync.Mutex
	specs map[string]PathSpec
	down  bool

	// Owned instances only.
	links   map[string][2]*linkemu.Link // path → [up, down]
	fds     []int                       // TUN descriptors; closing them removes the devices
	reaper  *exec.Cmd
	reaperW *os.File

	// Owned instances: the holder's sentinel and the tuning applied.
	sentinel   *sentinel
	tuning     Tuning
	tuningErrs []string
	capture    *capture // the wire capture in progress (capture.go)

	// Attached instances only: the holder's control socket.
	ctl string
	// Instances this process spawned (Up): the holder and the pipe whose
	// closing tells it we are gone.
	holder *exec.Cmd
	life   *os.File
	exited chan struct{}
}

// checkConfig validates cfg and fills in a generated name.
func checkConfig(cfg *Config) error {
	if err := Preflight(); err != nil {
		return err
	}
	for _, p := range []struct {
		n string
		s PathSpec
	}{{"A", cfg.PathA}, {"B", cfg.PathB}} {
		if err := p.s.Validate(); err != nil {
			return fmt.Errorf("testbed: path %s: %w", p.n, err)
		}
	}
	if cfg.Name == "" {
		cfg.Name = newName()
	}
	if err := ValidName(cfg.Name); err != nil {
		return fmt.Errorf("testbed: %w", err)
	}
	for _, ns := range []string{clientNS(cfg.Name), serverNS(cfg.Name)} {
		if nsExists(ns) {
			return fmt.Errorf("testbed %q: namespace %s already exists (another instance, or a stale one: migaudit testbed status / down --all-stale)", cfg.Name, ns)
		}
	}
	return nil
}

// upLocal builds an instance and runs its link emulator in this process
// until Down; the holder process (holder.go) calls it. Setup honours ctx.
func upLocal(ctx context.Context, cfg Config) (tb *Testbed, err error) {
	if err := checkConfig(&cfg); err != nil {
		return nil, err
	}
	// The emulator's eight threads block in syscalls and must find a P the
	// moment they wake; with GOMAXPROCS = NumCPU a busy goroutine can hold
	// them off. Extra Ps cost nothing while idle.
	if n := runtime.NumCPU() + 8; runtime.GOMAXPROCS(0) < n {
		runtime.GOMAXPROCS(n)
	}
	t := &Testbed{
		name:   cfg.Name,
		cli:    clientNS(cfg.Name),
		srv:    serverNS(cfg.Name),
		specs:  map[string]PathSpec{"A": cfg.PathA, "B": cfg.PathB},
		links:  map[string][2]*linkemu.Link{},
		tuning: cfg.tuning(),
	}
	t.applyTuning()
	// The reaper comes first, so that a crash at any later point is covered.
	if err := t.startReaper(); err != nil {
		return nil, fmt.Errorf("testbed %q: start reaper: %w", cfg.Name, err)
	}
	defer func() {
		if err != nil {
			_ = t.Down()
			tb = nil
		}
	}()
	pid := os.Getpid()
	if err := writeInstance(Instance{Name: t.name, PID: pid, PIDStart: procStart(pid), ClientNS: t.cli,
		ServerNS: t.srv, Config: cfg, Started: time.Now().UTC()}); err != nil {
		return nil, fmt.Errorf("testbed %q: record instance: %w", cfg.Name, err)
	}
	if err := t.build(ctx); err != nil {
		return nil, fmt.Errorf("testbed %q: %w", cfg.Name, err)
	}
	return t, nil
}

func newName() string {
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

const reaperScript = `trap '' INT TERM HUP QUIT
read -r word
[ "$word" = done ] && exit 0
for ns in "$@"; do
  for p in $(ip netns pids "$ns" 2>/dev/null); do kill -9 "$p" 2>/dev/null; done
  ip netns del "$ns" 2>/dev/null
done
[ -n "$MIGAUDIT_STATE" ] && rm -rf "$MIGAUDIT_STATE"
exit 0`

// startReaper starts the process that cleans up if this one dies: it
// blocks reading a pipe whose only writer is us.
func (t *Testbed) startReaper() error {
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	cmd := exec.Command("sh", "-c", reaperScript, "migaudit-reaper", t.cli, t.srv)
	cmd.Stdin = r
	cmd.Env = append(os.Environ(), "MIGAUDIT_STATE="+filepath.Join(StateDir, t.name))
	// Own process group: a terminal's SIGINT goes to our group, not its.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		r.Close()
		w.Close()
		return err
	}
	r.Close()
	t.reaper, t.reaperW = cmd, w
	return nil
}

func (t *Testbed) build(ctx context.Context) error {
	step := func(err error) error {
		if err == nil {
			if cerr := ctx.Err(); cerr != nil {
				return cerr
			}
		}
		return err
	}
	for _, ns := range []string{t.cli, t.srv} {
		if err := step(ip("netns", "add", ns)); err != nil {
			return err
		}
		// No IPv6 (no router solicitations polluting the counters) and no
		// reverse-path filter (replies to B arrive on B while main says A).
		for _, kv := range []string{
			"net.ipv6.conf.all.disable_ipv6=1", "net.ipv6.conf.default.disable_ipv6=1",
			"net.ipv4.conf.all.rp_filter=0", "net.ipv4.conf.default.rp_filter=0",
		} {
			if err := step(ip("netns", "exec", ns, "sysctl", "-q", "-w", kv)); err != nil {
				return err
			}
		}
		if err := step(ip("-n", ns, "link", "set", "lo", "up")); err != nil {
			return err
		}
	}
	fds := map[string]int{}
	for _, ns := range []string{t.cli, t.srv} {
		for _, p := range Paths {
			fd, err := openTUN(ns, "path"+p)
			if err != nil {
				return err
			}
			fds[ns+p] = fd
			t.fds = append(t.fds, fd)
			if err := step(ip("-n", ns, "link", "set", "path"+p, "mtu", "1500", "txqueuelen", "1000", "up")); err != nil {
				return err
			}
		}
	}
	cmds := [][]string{
		{"-n", t.srv, "addr", "add", serverAddr.String() + "/32", "dev", "lo"},
		{"-n", t.srv, "route", "add", "198.18.1.0/24", "dev", "pathA"},
		{"-n", t.srv, "route", "add", "198.18.2.0/24", "dev", "pathB"},
		{"-n", t.cli, "addr", "add", clientAddrA.String() + "/32", "dev", "pathA"},
		{"-n", t.cli, "addr", "add", clientAddrB.String() + "/32", "dev", "pathB"},
		{"-n", t.cli, "route", "add", serverPrefix, "dev", "pathA", "src", clientAddrA.String(), "table", "101"},
		{"-n", t.cli, "route", "add", serverPrefix, "dev", "pathB", "src", clientAddrB.String(), "table", "102"},
		{"-n", t.cli, "rule", "add", "from", clientAddrA.String(), "table", "101", "pref", "100"},
		{"-n", t.cli, "rule", "add", "from", clientAddrB.String(), "table", "102", "pref", "101"},
		// Main-table fallback: unbound sockets must not get ENETUNREACH.
		{"-n", t.cli, "route", "add", serverPrefix, "dev", "pathA", "src", clientAddrA.String()},
	}
	for _, c := range cmds {
		if err := step(ip(c...)); err != nil {
			return err
		}
	}
	// The emulator: client pathX → server pathX (up) and back (down).
	for _, p := range Paths {
		up, down := linkSpecs(t.specs[p])
		cfd, sfd := fds[t.cli+p], fds[t.srv+p]
		lu, err := linkemu.Start(cfd, sfd, up)
		if err != nil {
			return err
		}
		ld, err := linkemu.Start(sfd, cfd, down)
		if err != nil {
			lu.Stop()
			return err
		}
		lu.SetSpin(t.tuning.Spin)
		ld.SetSpin(t.tuning.Spin)
		t.links[p] = [2]*linkemu.Link{lu, ld}
	}
	return nil
}

// linkSpecs splits a path's spec into its two directions.
func linkSpecs(s PathSpec) (up, down linkemu.Spec) {
	up = linkemu.Spec{Rate: s.Rate, Burst: s.EffectiveBurst(), Queue: s.EffectiveQueue(), Loss: s.Loss, Delay: s.RTT / 2,
		Hold: s.Hold, HoldExtra: s.HoldExtra}
	if s.Hold > 0 {
		up.HoldMinSize = HoldMinIPSize
	}
	down = up
	down.Delay = s.RTT - up.Delay
	if s.LossSeed != 0 {
		up.Seed, down.Seed = s.LossSeed, s.LossSeed+1
	}
	return up, down
}

// Down stops the emulator, kills processes left in the namespaces and
// deletes them. It is idempotent and safe on a partly built instance.
// On an attached instance it asks the holder to go down and waits.
func (t *Testbed) Down() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.down {
		return nil
	}
	t.down = true
	if t.holder != nil {
		return downSpawned(t)
	}
	if t.ctl != "" {
		return downAttached(t)
	}
	t.stopCaptureLocked()
	for _, p := range Paths {
		for _, l := range t.links[p] {
			if l != nil {
				l.Stop()
			}
		}
	}
	if t.sentinel != nil {
		t.sentinel.close()
	}
	var errs []error
	// Processes first, then the namespaces; closing the TUN descriptors
	// removes the devices.
	for _, ns := range []string{t.cli, t.srv} {
		if err := removeNS(ns, 2*time.Second); err != nil {
			errs = append(errs, err)
		}
	}
	for _, fd := range t.fds {
		unix.Close(fd)
	}
	if err := os.RemoveAll(filepath.Join(StateDir, t.name)); err != nil {
		errs = append(errs, err)
	}
	if t.reaperW != nil {
		_, _ = t.reaperW.WriteString("done\n")
		t.reaperW.Close()
		_ = t.reaper.Wait()
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("testbed %q down: %w", t.name, err)
	}
	return nil
}

// Name is the instance name.
func (t *Testbed) Name() string { return t.name }

// ClientNS is the client namespace's name.
func (t *Testbed) ClientNS() string { return t.cli }

// ServerNS is the server namespace's name.
func (t *Testbed) ServerNS() string { return t.srv }

// ClientAddrA is the client's address on path A.
func (t *Testbed) ClientAddrA() netip.Addr { return clientAddrA }

// ClientAddrB is the client's address on path B.
func (t *Testbed) ClientAddrB() netip.Addr { return clientAddrB }

// ServerAddr is the server's only address.
func (t *Testbed) ServerAddr() netip.Addr { return serverAddr }

// ClientAddr returns the client's address on path "A" or "B".
func (t *Testbed) ClientAddr(path string) (netip.Addr, error) {
	switch path {
	case "A":
		return clientAddrA, nil
	case "B":
		return clientAddrB, nil
	}
	return netip.Addr{}, fmt.Errorf("testbed: path %q: want A or B", path)
}

// Command returns `ip netns exec ns name args...`; ns is ClientNS or ServerNS.
// With Tuning.PinCPUs set, the command runs on the other CPUs (taskset),
// away from the emulator.
func (t *Testbed) Command(ctx context.Context, ns, name string, args ...string) *exec.Cmd {
	if t.tuning.PinCPUs != "" {
		if rest := otherCPUs(t.tuning.PinCPUs); rest != "" {
			return command(ctx, ns, "taskset", append([]string{"-c", rest, name}, args...)...)
		}
	}
	return command(ctx, ns, name, args...)
}

// InNS runs fn on an OS thread inside ns (ClientNS or ServerNS), e.g. to
// create a Go socket there.
func (t *Testbed) InNS(ns string, fn func() error) error {
	if ns != t.cli && ns != t.srv {
		return fmt.Errorf("testbed %q: namespace %q is not one of its own", t.name, ns)
	}
	return InNS(ns, fn)
}

// RouteVia points the client's main-table route (and its preferred source
// address) at path "A" or "B". Sockets bound to an address are unaffected.
func (t *Testbed) RouteVia(path string) error {
	a, err := t.ClientAddr(path)
	if err != nil {
		return err
	}
	if err := ip("-n", t.cli, "route", "replace", serverPrefix, "dev", "path"+path, "src", a.String()); err != nil {
		return fmt.Errorf("testbed %q: route via %s: %w", t.name, path, err)
	}
	return nil
}

// Route reports which path the client's main table uses.
func (t *Testbed) Route() (string, error) {
	out, err := ipOut("-j", "-n", t.cli, "route", "show", serverPrefix)
	if err != nil {
		return "", err
	}
	var rs []struct {
		Dev string `json:"dev"`
	}
	if err := json.Unmarshal(out, &rs); err != nil || len(rs) != 1 {
		return "", fmt.Errorf("testbed %q: main-table route to %s: %q", t.name, serverPrefix, out)
	}
	switch rs[0].Dev {
	case "pathA":
		return "A", nil
	case "pathB":
		return "B", nil
	}
	return "", fmt.Errorf("testbed %q: main-table route uses unknown device %q", t.name, rs[0].Dev)
}

// Path returns a path's current emulation.
func (t *Testbed) Path(path string) (PathSpec, error) {
	if path != "A" && path != "B" {
		return PathSpec{}, fmt.Errorf("testbed: path %q: want A or B", path)
	}
	if t.ctl != "" {
		var s PathSpec
		err := t.call(request{Op: "path", Path: path}, &s)
		return s, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.specs[path], nil
}

// SetPath changes a path's emulation live.
func (t *Testbed) SetPath(path string, s PathSpec) error {
	if path != "A" && path != "B" {
		return fmt.Errorf("testbed: path %q: want A or B", path)
	}
	if err := s.Validate(); err != nil {
		return fmt.Errorf("testbed: path %s: %w", path, err)
	}
	if t.ctl != "" {
		return t.call(request{Op: "set-path", Path: path, Spec: &s}, nil)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.down {
		return fmt.Errorf("testbed %q is down", t.name)
	}
	t.specs[path] = s
	up, down := linkSpecs(s)
	t.links[path][0].SetSpec(up)
	t.links[path][1].SetSpec(down)
	return nil
}

// Counters returns each path's cumulative counters, keyed "A" and "B".
func (t *Testbed) Counters() (map[string]PathCounters, error) {
	if t.ctl != "" {
		var m map[string]PathCounters
		err := t.call(request{Op: "counters"}, &m)
		return m, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.down {
		return nil, fmt.Errorf("testbed %q is down", t.name)
	}
	m := map[string]PathCounters{}
	for _, p := range Paths {
		m[p] = PathCounters{Up: t.links[p][0].Counters(), Down: t.links[p][1].Counters()}
	}
	return m, nil
}

// EmulatorTiming reports each link direction's self-measured scheduling
// (keys "A/up", "A/down", ...).
func (t *Testbed) EmulatorTiming() (map[string]linkemu.Timing, error) {
	if t.ctl != "" {
		var m map[string]linkemu.Timing
		err := t.call(request{Op: "timing"}, &m)
		return m, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	m := map[string]linkemu.Timing{}
	for _, p := range Paths {
		m[p+"/up"] = t.links[p][0].Timing()
		m[p+"/down"] = t.links[p][1].Timing()
	}
	return m, nil
}

// sortedKeys is for stable output.
func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}
