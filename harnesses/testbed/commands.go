package testbed

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/migaudit/migaudit/data/atomicfile"
)

// The functions below are the work behind `migaudit testbed …`; the
// command layer only wires flags to them.

// UpOptions configures RunUp.
type UpOptions struct {
	Config Config
	JSON   bool
}

// RunUp brings an instance up under a detached holder and describes it.
func RunUp(ctx context.Context, opt UpOptions, w io.Writer) error {
	t, err := UpDetached(ctx, opt.Config)
	if err != nil {
		return err
	}
	in, err := ReadInstance(t.Name())
	if err != nil {
		return err
	}
	if opt.JSON {
		return writeJSON(w, in)
	}
	fmt.Fprintf(w, "testbed %s up (holder pid %d)\n", in.Name, in.PID)
	describe(w, t, in.Config)
	fmt.Fprintf(w, "down with: migaudit testbed down --name %s\n", in.Name)
	return nil
}

func describe(w io.Writer, t *Testbed, cfg Config) {
	fmt.Fprintf(w, "  client  %s  path A %s  path B %s\n", t.ClientNS(), t.ClientAddrA(), t.ClientAddrB())
	fmt.Fprintf(w, "  server  %s  %s\n", t.ServerNS(), t.ServerAddr())
	fmt.Fprintf(w, "  path A  %s\n  path B  %s\n", cfg.PathA, cfg.PathB)
}

// DownOptions configures RunDown.
type DownOptions struct {
	Name     string // "" = the only instance up
	AllStale bool   // instead: remove every leftover of crashed instances
}

// RunDown takes an instance down; it succeeds if there is nothing to do.
func RunDown(opt DownOptions, w io.Writer) error {
	if opt.AllStale {
		ls, err := RemoveStale()
		for _, l := range ls {
			fmt.Fprintf(w, "removed stale %s: %s\n", l.Name, leftoverWords(l))
		}
		if len(ls) == 0 {
			fmt.Fprintln(w, "no stale testbed leftovers")
		}
		return err
	}
	if opt.Name != "" {
		if err := ValidName(opt.Name); err != nil {
			return err
		}
		if in, err := ReadInstance(opt.Name); err != nil || !in.Alive() {
			// Not up: clean whatever a crash of this very instance left.
			removed := false
			for _, ns := range []string{clientNS(opt.Name), serverNS(opt.Name)} {
				if nsExists(ns) {
					if err := removeNS(ns, time.Second); err != nil {
						return err
					}
					removed = true
				}
			}
			_ = os.RemoveAll(filepath.Join(StateDir, opt.Name))
			if removed {
				fmt.Fprintf(w, "testbed %s was not running; removed its leftovers\n", opt.Name)
			} else {
				fmt.Fprintf(w, "testbed %s is not up\n", opt.Name)
			}
			return nil
		}
	} else if !anyDetached() {
		fmt.Fprintln(w, "no testbed is up (instances private to a running process are left alone)")
		return nil
	}
	t, err := Attach(opt.Name)
	if err != nil {
		return err
	}
	if err := t.Down(); err != nil {
		return err
	}
	fmt.Fprintf(w, "testbed %s down\n", t.Name())
	return nil
}

func leftoverWords(l Leftover) string {
	var parts []string
	if len(l.Namespaces) > 0 {
		parts = append(parts, "namespaces "+strings.Join(l.Namespaces, " "))
	}
	if len(l.PIDs) > 0 {
		parts = append(parts, fmt.Sprintf("processes %v", l.PIDs))
	}
	if l.StateDir != "" {
		parts = append(parts, "state "+l.StateDir)
	}
	if len(parts) == 0 {
		return "nothing"
	}
	return strings.Join(parts, ", ")
}

// StatusOptions configures RunStatus.
type StatusOptions struct{ JSON bool }

// Status is what RunStatus reports.
type Status struct {
	Up    []InstanceStatus `json:"up"`
	Stale []Leftover       `json:"stale"`
}

// InstanceStatus is one live instance.
type InstanceStatus struct {
	Instance
	Route    string                  `json:"route,omitempty"` // path of the client's main-table route
	Paths    map[string]PathSpec     `json:"paths,omitempty"` // current emulation
	Counters map[string]PathCounters `json:"counters,omitempty"`
	Holder   *HolderInfo             `json:"holder,omitempty"`
	Error    string                  `json:"error,omitempty"`
}

// RunStatus lists live instances and leftovers of crashed ones.
func RunStatus(opt StatusOptions, w io.Writer) error {
	var st Status
	for _, in := range Live() {
		is := InstanceStatus{Instance: in}
		if in.Control != "" {
			if t, err := Attach(in.Name); err != nil {
				is.Error = err.Error()
			} else {
				is.Route, _ = t.Route()
				is.Paths = map[string]PathSpec{}
				for _, p := range Paths {
					if s, err := t.Path(p); err == nil {
						is.Paths[p] = s
					}
				}
				is.Counters, _ = t.Counters()
				if h, err := t.Holder(); err == nil {
					is.Holder = &h
				}
			}
		}
		st.Up = append(st.Up, is)
	}
	st.Stale = Stale()
	if opt.JSON {
		return writeJSON(w, st)
	}
	if len(st.Up) == 0 {
		fmt.Fprintln(w, "no testbed is up")
	}
	for _, is := range st.Up {
		held := "private to its starter"
		if is.Detached {
			held = "detached"
		}
		fmt.Fprintf(w, "%s  up since %s, holder pid %d (%s)", is.Name, is.Started.Format(time.RFC3339), is.PID, held)
		if is.Holder != nil {
			fmt.Fprintf(w, ", emulator %s", is.Holder.Scheduling)
		}
		fmt.Fprintln(w)
		for _, p := range Paths {
			if s, ok := is.Paths[p]; ok {
				c := is.Counters[p]
				fmt.Fprintf(w, "  path %s  %-22s up %d pkts %d B (drops %d/%d)  down %d pkts %d B (drops %d/%d)\n", p, s,
					c.Up.Packets, c.Up.Bytes, c.Up.QueueDrops, c.Up.LossDrops, c.Down.Packets, c.Down.Bytes, c.Down.QueueDrops, c.Down.LossDrops)
			}
		}
		if is.Route != "" {
			fmt.Fprintf(w, "  client main-table route via path %s\n", is.Route)
		}
		if is.Error != "" {
			fmt.Fprintf(w, "  error: %s\n", is.Error)
		}
	}
	for _, l := range st.Stale {
		fmt.Fprintf(w, "STALE %s: %s (remove with: migaudit testbed down --all-stale)\n", l.Name, leftoverWords(l))
	}
	return nil
}

// CalibrateCmdOptions configures RunCalibrate.
type CalibrateCmdOptions struct {
	Name      string // instance to calibrate; "" = the only one up, else a fresh one
	Config    Config // for a fresh instance
	Out       string // record file; "" = calibration-<name>-<UTC>.json under ResultsDir
	Calibrate CalibrateOptions
}

// ResultsDir is where a calibration record goes when no file is named: the
// directory `migaudit run` writes its runs into (ignored by git), so that a
// record never lands loose in the user's work tree.
const ResultsDir = "results"

// RunCalibrate runs the gates on an instance and writes the record. It
// returns the gate error (after writing the record) if a gate failed.
func RunCalibrate(ctx context.Context, opt CalibrateCmdOptions, w io.Writer) error {
	var t *Testbed
	var err error
	switch {
	case opt.Name != "":
		t, err = Attach(opt.Name)
	case anyDetached():
		t, err = Attach("")
	default:
		fmt.Fprintln(w, "no testbed is up: bringing one up for this calibration")
		t, err = Up(ctx, opt.Config)
		if err == nil {
			defer t.Down()
		}
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "calibrating testbed %s\n", t.Name())
	opt.Calibrate.Progress = w
	cal, gerr := Calibrate(ctx, t, opt.Calibrate)
	if cal == nil {
		return gerr
	}
	out := opt.Out
	if out == "" {
		out = filepath.Join(ResultsDir, fmt.Sprintf("calibration-%s-%s.json", t.Name(), cal.Started.Format("20060102T150405Z")))
	}
	if abs, err := filepath.Abs(out); err == nil {
		out = abs // printed: say exactly where it went
	}
	b, _ := json.MarshalIndent(cal, "", "  ")
	if err := writeNew(out, append(b, '\n')); err != nil {
		return fmt.Errorf("write calibration record: %w", err)
	}
	verdict := "PASS: all gates"
	switch {
	case ctx.Err() != nil:
		verdict = "INTERRUPTED (incomplete)"
	case gerr != nil:
		verdict = "FAIL"
	}
	fmt.Fprintf(w, "%s; record %s\n", verdict, out)
	return gerr
}

// writeNew writes path atomically and refuses to replace an existing file.
func writeNew(path string, b []byte) error {
	if _, err := os.Stat(path); err == nil {
		return fmt.Errorf("%s exists; records are never overwritten", path)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return atomicfile.Create(path, b)
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func anyDetached() bool {
	for _, in := range Live() {
		if in.Detached {
			return true
		}
	}
	return false
}
