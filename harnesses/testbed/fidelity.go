package testbed

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/migaudit/migaudit/harnesses/fidelity"
	"github.com/migaudit/migaudit/harnesses/testbed/linkemu"
)

// Fidelity, DirFidelity and Stall are the emulator's per-window
// measurement, defined once in harnesses/fidelity and shared with the
// runner that judges it.
type (
	Fidelity    = fidelity.Window
	DirFidelity = fidelity.Dir
	Stall       = fidelity.Stall
)

// MonoNow is the clock of Fidelity windows (CLOCK_MONOTONIC, ns; the same
// in every process on the machine).
func MonoNow() int64 { return linkemu.MonoNow() }

// Fidelity measures [from, to] (MonoNow ns) with the given lateness
// tolerance.
func (t *Testbed) Fidelity(from, to int64, tol time.Duration) (Fidelity, error) {
	if t.ctl != "" {
		var f Fidelity
		err := t.call(request{Op: "fidelity", From: from, To: to, Tol: int64(tol)}, &f)
		return f, err
	}
	t.mu.Lock()
	if t.down {
		t.mu.Unlock()
		return Fidelity{}, fmt.Errorf("testbed %q is down", t.name)
	}
	links := map[string]*linkemu.Link{}
	for _, p := range Paths {
		links[p+"/up"], links[p+"/down"] = t.links[p][0], t.links[p][1]
	}
	sen := t.sentinel
	t.mu.Unlock()
	f := Fidelity{FromNS: from, ToNS: to, LateToleranceNS: int64(tol), Dirs: map[string]DirFidelity{}, Stalls: []Stall{}}
	recs := map[string][]linkemu.Record{}
	for k, l := range links {
		recs[k], _ = l.Records(0)
	}
	f.Dirs, f.Truncated = summariseDirs(recs, from, to, int64(tol))
	if sen != nil {
		f.Stalls, f.SentinelSamples = sen.monoWindow(from, to)
	}
	return f, nil
}

// summariseDirs computes every direction's figures over [from, to], each
// with its order against the other path's same direction (the whole
// record of it: a packet written just outside the window can still have
// changed places with one inside).
func summariseDirs(recs map[string][]linkemu.Record, from, to, tol int64) (map[string]DirFidelity, bool) {
	dirs := map[string]DirFidelity{}
	truncated := false
	for k := range recs {
		d, trunc := summariseRecords(recs[k], from, to, tol)
		truncated = truncated || trunc
		if d.Packets > 0 {
			other := otherDir(k)
			o := fidelity.CrossOrder(deliveries(recs[k], from, to), deliveries(recs[other], 0, 0), other)
			d.Order = &o
		}
		if d.Packets > 0 || d.QueueDrops+d.LossDrops+d.WriteDrops > 0 {
			dirs[k] = d
		}
	}
	return dirs, truncated
}

// otherDir is the same direction on the other path ("A/up" → "B/up").
func otherDir(k string) string {
	p, rest, _ := strings.Cut(k, "/")
	if p == "A" {
		return "B/" + rest
	}
	return "A/" + rest
}

// deliveries are the delivered packets of recs written in [from, to]
// (to 0: all of them).
func deliveries(recs []linkemu.Record, from, to int64) []fidelity.Delivery {
	var out []fidelity.Delivery
	for _, r := range recs {
		if r.Cause != linkemu.Sent || (to != 0 && (r.Sent < from || r.Sent > to)) {
			continue
		}
		out = append(out, fidelity.Delivery{DueNS: r.Due, SentNS: r.Sent})
	}
	return out
}

// summariseRecords computes one direction's figures over [from, to].
func summariseRecords(recs []linkemu.Record, from, to, tol int64) (DirFidelity, bool) {
	var d DirFidelity
	var delays, lates []int64
	trunc := len(recs) > 0 && recs[0].Arr > from && len(recs) >= linkemu.RecordCap-2048
	for _, r := range recs {
		if r.Cause != linkemu.Sent {
			if r.Arr >= from && r.Arr <= to {
				switch r.Cause {
				case linkemu.QueueDrop:
					d.QueueDrops++
				case linkemu.LossDrop:
					d.LossDrops++
				default:
					d.WriteDrops++
				}
			}
			continue
		}
		if r.Sent < from || r.Sent > to {
			continue
		}
		d.Packets++
		d.Bytes += int64(r.Size)
		if d.FirstSentNS == 0 || r.Sent < d.FirstSentNS {
			d.FirstSentNS = r.Sent
		}
		d.LastSentNS = max(d.LastSentNS, r.Sent)
		late := r.Sent - r.Due
		// The hold's extra delay is deliberate (Spec.Hold): not the
		// path's delay, and (Due includes it) not lateness either.
		delays = append(delays, r.Sent-r.Arr-int64(r.HeldUS)*1000)
		if r.HeldUS > 0 {
			d.Held++
		}
		lates = append(lates, late)
		if late > d.LateMaxNS || d.Packets == 1 {
			d.LateMaxNS, d.LateMaxAtNS = late, r.Sent
		}
		if late > tol {
			d.LateOver++
			if d.EarliestLateNS == 0 {
				d.EarliestLateNS = r.Sent
			}
		}
	}
	if d.Packets == 0 {
		return d, trunc
	}
	if d.Packets > 1 && d.LastSentNS > d.FirstSentNS {
		d.RateBps = float64(d.Bytes) * 8 / (float64(d.LastSentNS-d.FirstSentNS) / 1e9)
	}
	slices.Sort(delays)
	slices.Sort(lates)
	d.DelayMedianNS, d.DelayP99NS = pick(delays, 0.5), pick(delays, 0.99)
	d.LateMedianNS, d.LateP99NS = pick(lates, 0.5), pick(lates, 0.99)
	d.LateFraction = float64(d.LateOver) / float64(d.Packets)
	return d, trunc
}

// pick is the nearest-rank quantile of a sorted slice.
func pick(s []int64, q float64) int64 {
	i := int(q*float64(len(s))+0.999999) - 1
	return s[min(max(i, 0), len(s)-1)]
}

// Tuning is how the holder reduces the emulator's lateness on a small,
// shared machine (docs/testbed.md has the measurements behind each).
type Tuning struct {
	// PinCPUs, when not empty ("1", "2-3"), pins the emulator's threads
	// and the sentinel to these CPUs, and Command runs the endpoints on
	// the other CPUs (taskset).
	PinCPUs string `json:"pin_cpus,omitempty"`
	// Mlock locks the holder's memory (mlockall): no page fault on the
	// packet path.
	Mlock bool `json:"mlock,omitempty"`
	// Spin is how long before each deadline the emulator stops sleeping
	// and busy-waits (cgo loop only); 0 sleeps to the deadline.
	Spin time.Duration `json:"spin_ns,omitempty"`
}

// DefaultTuning is what Up uses unless the Config says otherwise.
func DefaultTuning() Tuning { return Tuning{Mlock: true, Spin: 0} }

// parseCPUs reads "1", "0,2", "2-3" into a CPU set.
func parseCPUs(s string) (unix.CPUSet, error) {
	var set unix.CPUSet
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(strings.TrimSpace(part), "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			return set, fmt.Errorf("cpu list %q: %w", s, err)
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil {
				return set, fmt.Errorf("cpu list %q: %w", s, err)
			}
		}
		for c := a; c <= b; c++ {
			set.Set(c)
		}
	}
	if set.Count() == 0 {
		return set, fmt.Errorf("cpu list %q is empty", s)
	}
	return set, nil
}

// otherCPUs is the complement of s among the online CPUs, as a taskset
// list ("" when nothing remains).
func otherCPUs(s string) string {
	set, err := parseCPUs(s)
	if err != nil {
		return ""
	}
	var all unix.CPUSet
	if unix.SchedGetaffinity(0, &all) != nil {
		return ""
	}
	var out []string
	for c := 0; c < 1024; c++ {
		if all.IsSet(c) && !set.IsSet(c) {
			out = append(out, strconv.Itoa(c))
		}
	}
	sort.Strings(out)
	return strings.Join(out, ",")
}

// applyTuning applies t.tuning to this (holder) process before the
// emulator starts, recording what failed, and starts the sentinel.
func (t *Testbed) applyTuning() {
	var cpus *unix.CPUSet
	if t.tuning.PinCPUs != "" {
		set, err := parseCPUs(t.tuning.PinCPUs)
		if err != nil {
			t.tuningErrs = append(t.tuningErrs, err.Error())
		} else {
			cpus = &set
			linkemu.PinCPUs = cpus
		}
	}
	if t.tuning.Mlock {
		if err := unix.Mlockall(unix.MCL_CURRENT | unix.MCL_FUTURE); err != nil {
			t.tuningErrs = append(t.tuningErrs, "mlockall: "+err.Error())
		}
	}
	t.sentinel = startSentinelOn(cpus)
}

// WarmUp exchanges UDP echoes on each path for about d: the emulator's
// threads, their wake-up compensation, the TUN devices and the kernel's
// neighbour and route caches are then in their running state before the
// first measurement.
func WarmUp(ctx context.Context, t *Testbed, d time.Duration) error {
	e, err := startEcho(t)
	if err != nil {
		return fmt.Errorf("warm-up: %w", err)
	}
	defer e.close()
	gap := 2 * time.Millisecond
	n := max(int(d/gap)/len(Paths), 10)
	for _, p := range Paths {
		a, err := t.ClientAddr(p)
		if err != nil {
			return err
		}
		c, err := newEchoClient(t, a)
		if err != nil {
			return fmt.Errorf("warm-up path %s: %w", p, err)
		}
		_, _, _, err = echoes(ctx, e, t, c, n, gap)
		c.Close()
		if err != nil {
			return fmt.Errorf("warm-up path %s: %w", p, err)
		}
	}
	return nil
}
