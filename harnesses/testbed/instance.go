package testbed

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/migaudit/migaudit/data/atomicfile"
	"github.com/migaudit/migaudit/harnesses/testbed/linkemu"
)

// StateDir holds one directory per live instance: instance.json (who holds
// it), and for daemon-held instances ctl.sock and daemon.log.
var StateDir = "/run/migaudit"

// Instance is the record in StateDir/<name>/instance.json.
type Instance struct {
	Name     string `json:"name"`
	PID      int    `json:"pid"`
	PIDStart uint64 `json:"pid_start"` // /proc/<pid>/stat starttime, against pid reuse
	ClientNS string `json:"client_ns"`
	ServerNS string `json:"server_ns"`
	Config   Config `json:"config"`
	Control  string `json:"control,omitempty"` // the holder's control socket
	// Detached: held by `migaudit testbed up` until `testbed down`; else
	// private to the process that called Up (e.g. a `migaudit run`).
	Detached bool      `json:"detached"`
	Started  time.Time `json:"started"`
}

func instanceFile(name string) string { return filepath.Join(StateDir, name, "instance.json") }

// procStart returns a process's start time in clock ticks, 0 if it is gone.
func procStart(pid int) uint64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 20 {
		return 0
	}
	v, _ := strconv.ParseUint(f[19], 10, 64)
	return v
}

// Alive reports whether the instance's holder is still running.
func (in Instance) Alive() bool {
	return in.PID > 0 && procStart(in.PID) == in.PIDStart && in.PIDStart != 0
}

// writeInstance records the instance atomically.
func writeInstance(in Instance) error {
	dir := filepath.Join(StateDir, in.Name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	b, _ := json.MarshalIndent(in, "", "  ")
	return writeAtomic(instanceFile(in.Name), append(b, '\n'))
}

func writeAtomic(path string, b []byte) error { return atomicfile.Write(path, b) }

// ReadInstance reads an instance's record.
func ReadInstance(name string) (Instance, error) {
	var in Instance
	b, err := os.ReadFile(instanceFile(name))
	if err != nil {
		return in, err
	}
	if err := json.Unmarshal(b, &in); err != nil {
		return in, fmt.Errorf("%s: %w", instanceFile(name), err)
	}
	return in, nil
}

// Leftover is something a testbed created whose holder is gone.
type Leftover struct {
	Name       string   `json:"name"`
	Namespaces []string `json:"namespaces,omitempty"`
	PIDs       []int    `json:"pids,omitempty"` // processes still inside them
	StateDir   string   `json:"state_dir,omitempty"`
}

// Live lists instances whose holder is running.
func Live() []Instance {
	var out []Instance
	for _, n := range instanceNames() {
		if in, err := ReadInstance(n); err == nil && in.Alive() {
			out = append(out, in)
		}
	}
	return out
}

// instanceNames is every name seen in StateDir or as a namespace.
func instanceNames() []string {
	set := map[string]bool{}
	if es, err := os.ReadDir(StateDir); err == nil {
		for _, e := range es {
			if e.IsDir() {
				set[e.Name()] = true
			}
		}
	}
	if es, err := os.ReadDir(netnsDir); err == nil {
		for _, e := range es {
			n := e.Name()
			if !strings.HasPrefix(n, Prefix) {
				continue
			}
			n = strings.TrimPrefix(n, Prefix)
			if b, ok := strings.CutSuffix(n, "-cli"); ok {
				set[b] = true
			} else if b, ok := strings.CutSuffix(n, "-srv"); ok {
				set[b] = true
			}
		}
	}
	return sortedKeys(set)
}

// Stale lists what crashed instances left behind: namespaces with Prefix
// and state directories whose holder is not running.
func Stale() []Leftover {
	var out []Leftover
	for _, n := range instanceNames() {
		in, err := ReadInstance(n)
		if err == nil && in.Alive() {
			continue
		}
		if errors.Is(err, os.ErrPermission) {
			continue // cannot tell; never call someone else's instance stale
		}
		l := Leftover{Name: n}
		for _, ns := range []string{clientNS(n), serverNS(n)} {
			if nsExists(ns) {
				l.Namespaces = append(l.Namespaces, ns)
				l.PIDs = append(l.PIDs, nsPids(ns)...)
			}
		}
		if _, err := os.Stat(filepath.Join(StateDir, n)); err == nil {
			l.StateDir = filepath.Join(StateDir, n)
		}
		out = append(out, l)
	}
	return out
}

// RemoveStale removes every leftover Stale lists (only Prefix namespaces
// and StateDir entries whose holder is gone) and returns what it removed.
func RemoveStale() ([]Leftover, error) {
	ls := Stale()
	var errs []error
	for _, l := range ls {
		for _, ns := range l.Namespaces {
			if err := removeNS(ns, time.Second); err != nil {
				errs = append(errs, err)
			}
		}
		if l.StateDir != "" {
			if err := os.RemoveAll(l.StateDir); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return ls, errors.Join(errs...)
}

// --- control socket between a daemon-held instance and its users ---

// HolderInfo describes the process running an instance's emulator.
type HolderInfo struct {
	PID        int    `json:"pid"`
	Scheduling string `json:"scheduling"` // class the emulator threads obtained
	GOMAXPROCS int    `json:"gomaxprocs"`
	Backend    string `json:"backend"` // linkemu loop: C (cgo) or Go
	// Tuning is what the holder applied (CPU pinning, mlockall, spin) and
	// TuningErrors what it could not.
	Tuning       Tuning   `json:"tuning"`
	TuningErrors []string `json:"tuning_errors,omitempty"`
}

func (t *Testbed) holderInfo() HolderInfo {
	return HolderInfo{PID: os.Getpid(), Scheduling: linkemu.Scheduling(), GOMAXPROCS: runtime.GOMAXPROCS(0), Backend: linkemu.Backend,
		Tuning: t.tuning, TuningErrors: t.tuningErrs}
}

// Holder describes the process running t's emulator.
func (t *Testbed) Holder() (HolderInfo, error) {
	if t.ctl == "" {
		return t.holderInfo(), nil
	}
	var h HolderInfo
	err := t.call(request{Op: "info"}, &h)
	return h, err
}

type request struct {
	Op   string    `json:"op"` // path, set-path, counters, timing, fidelity, capture-start, capture-stop, capture-write, info, down
	Path string    `json:"path,omitempty"`
	Spec *PathSpec `json:"spec,omitempty"`
	// fidelity: the window (MonoNow ns) and the lateness tolerance (ns).
	From int64 `json:"from,omitempty"`
	To   int64 `json:"to,omitempty"`
	Tol  int64 `json:"tol,omitempty"`
	// capture-write: what to write where; capture-start: keep counts only.
	Capture *CaptureOptions `json:"capture,omitempty"`
	Discard bool            `json:"discard,omitempty"`
}

type response struct {
	Error  string          `json:"error,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
}

// Attach returns a handle on an instance held by another process; ""
// picks the only live detached instance (`migaudit testbed up`) — never
// one private to another process such as a running `migaudit run`.
// Every method works on it; Down asks the holder to go down.
func Attach(name string) (*Testbed, error) {
	if name == "" {
		var held []Instance
		for _, in := range Live() {
			if in.Control != "" && in.Detached {
				held = append(held, in)
			}
		}
		switch len(held) {
		case 0:
			return nil, errors.New("no testbed is up (migaudit testbed up)")
		case 1:
			name = held[0].Name
		default:
			var ns []string
			for _, in := range held {
				ns = append(ns, in.Name)
			}
			return nil, fmt.Errorf("%d testbeds are up (%s): name one with --name", len(held), strings.Join(ns, ", "))
		}
	}
	in, err := ReadInstance(name)
	if err != nil {
		return nil, fmt.Errorf("testbed %q is not up: %w", name, err)
	}
	if !in.Alive() {
		return nil, fmt.Errorf("testbed %q: its holder (pid %d) is gone; migaudit testbed down --all-stale", name, in.PID)
	}
	if in.Control == "" {
		return nil, fmt.Errorf("testbed %q is held in-process by pid %d and has no control socket", name, in.PID)
	}
	return &Testbed{name: in.Name, cli: in.ClientNS, srv: in.ServerNS, ctl: in.Control,
		specs: map[string]PathSpec{"A": in.Config.PathA, "B": in.Config.PathB}}, nil
}

// call sends one request to the holder and decodes its result into out.
func (t *Testbed) call(req request, out any) error {
	c, err := net.DialTimeout("unix", t.ctl, 2*time.Second)
	if err != nil {
		return fmt.Errorf("testbed %q: control socket: %w", t.name, err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	if err := json.NewEncoder(c).Encode(req); err != nil {
		return fmt.Errorf("testbed %q: %s: %w", t.name, req.Op, err)
	}
	var resp response
	if err := json.NewDecoder(bufio.NewReader(c)).Decode(&resp); err != nil {
		return fmt.Errorf("testbed %q: %s: %w", t.name, req.Op, err)
	}
	if resp.Error != "" {
		return fmt.Errorf("testbed %q: %s: %s", t.name, req.Op, resp.Error)
	}
	if out != nil {
		return json.Unmarshal(resp.Result, out)
	}
	return nil
}

// downAttached asks the holder to go down and waits for it to exit; if it
// is unreachable, cleans up its namespaces directly.
func downAttached(t *Testbed) error {
	in, _ := ReadInstance(t.name)
	callErr := t.call(request{Op: "down"}, nil)
	deadline := time.Now().Add(10 * time.Second)
	for in.Alive() && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if in.Alive() {
		_ = unix.Kill(in.PID, unix.SIGTERM)
		time.Sleep(500 * time.Millisecond)
	}
	return t.removeState(callErr)
}

// Serve answers control requests for an owned instance on a unix socket
// at path until Down (by a "down" request or otherwise); it returns when
// the listener is closed. downc receives once when a "down" arrives.
func (t *Testbed) Serve(l net.Listener, downc chan<- struct{}) {
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			_ = c.SetDeadline(time.Now().Add(30 * time.Second))
			var req request
			if err := json.NewDecoder(c).Decode(&req); err != nil {
				return
			}
			var result any
			var err error
			switch req.Op {
			case "path":
				result, err = t.Path(req.Path)
			case "set-path":
				if req.Spec == nil {
					err = errors.New("set-path without spec")
				} else {
					err = t.SetPath(req.Path, *req.Spec)
				}
			case "counters":
				result, err = t.Counters()
			case "timing":
				result, err = t.EmulatorTiming()
			case "fidelity":
				result, err = t.Fidelity(req.From, req.To, time.Duration(req.Tol))
			case "capture-start":
				err = t.startCapture(req.Discard)
			case "capture-stop":
				result, err = t.StopCapture()
			case "capture-write":
				if req.Capture == nil {
					err = errors.New("capture-write without options")
				} else {
					result, err = t.WriteCapture(*req.Capture)
				}
			case "info":
				result = t.holderInfo()
			case "down":
				err = t.Down()
			default:
				err = fmt.Errorf("unknown op %q", req.Op)
			}
			var resp response
			if err != nil {
				resp.Error = err.Error()
			} else if result != nil {
				resp.Result, _ = json.Marshal(result)
			}
			_ = json.NewEncoder(c).Encode(resp)
			if req.Op == "down" {
				// Answer first: the holder exits as soon as it hears.
				select {
				case downc <- struct{}{}:
				default:
				}
			}
		}()
	}
}

// removeState removes the namespaces and state an instance leaves, whether
// or not its holder took them down (callErr: why it could not be asked).
func (t *Testbed) removeState(callErr error) error {
	var errs []error
	for _, ns := range []string{t.cli, t.srv} {
		if err := removeNS(ns, time.Second); err != nil {
			errs = append(errs, err)
		}
	}
	_ = os.RemoveAll(filepath.Join(StateDir, t.name))
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("testbed %q down: %w (holder: %v)", t.name, err, callErr)
	}
	return nil
}
