package validator

// The window (Q1): scope, decreases, their classification, the windows
// before and after.

import (
	"math"

	"github.com/tidwall/gjson"
)

// windowFacts re-derives the window figures of one repetition.
type windowFacts struct {
	decreases [][3]int64 // t, value, previous
	hits      []int64    // times of exact initial-window samples in scope
	minAfter  int64
	cwnd      []sample
}

func deriveWindow(f *traceFacts, from, at, to int64, initial []int64) windowFacts {
	var w windowFacts
	w.minAfter = -1
	w.cwnd = make([]sample, 0, len(f.Samples))
	// Per path: a decrease is against the same path's previous value; a
	// path's first sample is against the last value of the path that was in
	// use (a new path born at its initial window is the reset a per-path
	// implementation performs).
	prev := map[string]int64{}
	last := int64(-1)
	for _, s := range f.Samples {
		if s.Cwnd < 0 {
			continue
		}
		w.cwnd = append(w.cwnd, s)
		p, seen := prev[s.Path]
		if !seen {
			p = last
		}
		if s.T >= from && s.T <= to {
			if p >= 0 && s.Cwnd < p {
				w.decreases = append(w.decreases, [3]int64{s.T, s.Cwnd, p})
			}
			for _, iv := range initial {
				if s.Cwnd == iv && (seen || s.T >= at) {
					w.hits = append(w.hits, s.T)
				}
			}
			if s.T >= at && (w.minAfter < 0 || s.Cwnd < w.minAfter) {
				w.minAfter = s.Cwnd
			}
		}
		prev[s.Path] = s.Cwnd
		last = s.Cwnd
	}
	return w
}

// constantsOf gathers the values a repetition is judged against: the run's
// own evaluation where present, else the source constants.
func constantsOf(im, rep gjson.Result) (initial []int64, minWin int64, factor float64) {
	minWin, factor = -1, 0
	collect := func(list gjson.Result) (ini []int64, mw int64, lf float64) {
		mw = -1
		list.ForEach(func(_, c gjson.Result) bool {
			switch c.Get("name").String() {
			case "initial_window":
				ini = append(ini, int64(math.Round(c.Get("value").Float())))
			case "min_window":
				mw = int64(math.Round(c.Get("value").Float()))
			case "loss_factor":
				lf = c.Get("value").Float()
			}
			return true
		})
		return
	}
	initial, minWin, factor = collect(im.Get("constants"))
	ri, rm, rf := collect(rep.Get("constants"))
	if len(ri) > 0 {
		initial = ri
	}
	if rm >= 0 {
		minWin = rm
	}
	if rf > 0 {
		factor = rf
	}
	return
}

func classify(value, prev int64, initial []int64, minWin int64, factor float64) string {
	for _, iv := range initial {
		if value == iv {
			return "RESET"
		}
	}
	if minWin > 0 && value == minWin {
		return "LOSS_FLOOR"
	}
	if factor > 0 && isBackoffOf(value, prev, factor) {
		return "LOSS_BACKOFF"
	}
	lowest := int64(math.MaxInt64)
	for _, iv := range initial {
		lowest = min(lowest, iv)
	}
	if value < lowest {
		return "BELOW_INITIAL"
	}
	return "UNEXPLAINED"
}

// checkWindow: scope anchored at the migration (never the whole trace);
// every decrease in scope listed and classified as the validator's own
// classifier does; reset observed iff an exact initial-window hit in scope;
// window before and after as the trace shows.
func checkWindow(v *Validator, doc, im gjson.Result) (Status, string) {
	var d verdict
	if noLive(&d, im) {
		return d.result()
	}
	for _, rep := range im.Get("live.repetitions").Array() {
		id := rep.Get("id").String()
		from, to, at := rep.Get("scope_from_us").Int(), rep.Get("scope_to_us").Int(), rep.Get("migration.at_us").Int()
		if !(from <= at && at <= to) || at-from > 200_000 || to-at > 5_000_000 || to-at < 500_000 {
			d.fail("%s: scope [%d, %d] µs is not anchored at the migration (%d µs): a whole-trace scope proves nothing", id, from, to, at)
			continue
		}
		f, err := v.repTrace(im, rep)
		if err != nil {
			liveErr(&d, id, err)
			continue
		}
		if len(f.Samples) > 0 && from <= f.Samples[0].T {
			d.fail("%s: scope starts at the trace's first sample: the initial window always appears there", id)
			continue
		}
		// The study's scope: 50 ms before path validation to 2 s after.
		if inst := instants(f); len(inst) > 0 && !(anyNear(from+50_000, inst, 1) && anyNear(to-2_000_000, inst, 1)) {
			d.fail("%s: scope [%d, %d] µs is not 50 ms before to 2 s after a path-validation instant of the trace (%v)", id, from, to, inst)
			continue
		}
		initial, minWin, factor := constantsOf(im, rep)
		w := deriveWindow(f, from, at, to, initial)
		claimed := rep.Get("events").Array()
		if len(claimed) != len(w.decreases) {
			d.fail("%s: %d window decreases in scope, survey lists %d", id, len(w.decreases), len(claimed))
			continue
		}
		bad := false
		for i, ev := range claimed {
			g := w.decreases[i]
			kind := classify(g[1], g[2], initial, minWin, factor)
			if kind != "RESET" && ev.Get("kind").String() == "LOSS_BACKOFF" && backoffClaim.MatchString(ev.Get("explanation").String()) && backoffFault(im.Get("name").String(), repCC(v, im, rep), ev, f, from) == "" {
				kind = "LOSS_BACKOFF" // its arithmetic re-derived in checks_collapse.go
			}
			if !within(ev.Get("at_us").Int(), g[0], 1) || ev.Get("value_bytes").Int() != g[1] || ev.Get("previous_bytes").Int() != g[2] || ev.Get("kind").String() != kind {
				d.fail("%s: event %d is %s at %d µs %d→%d B, survey says %s at %d µs %d→%d B", id, i, kind, g[0], g[2], g[1],
					ev.Get("kind").String(), ev.Get("at_us").Int(), ev.Get("previous_bytes").Int(), ev.Get("value_bytes").Int())
				bad = true
				break
			}
		}
		if bad {
			continue
		}
		reset := len(w.hits) > 0
		if rep.Get("reset_observed").Bool() != reset {
			d.fail("%s: %d exact initial-window hits %v in scope, survey says reset_observed=%v", id, len(w.hits), initial, rep.Get("reset_observed").Bool())
			continue
		}
		after := w.minAfter
		if reset {
			after = -1
			for _, e := range w.decreases {
				if classify(e[1], e[2], initial, minWin, factor) == "RESET" {
					after = e[1]
					break
				}
			}
			if after < 0 {
				after = initial[0]
			}
		}
		if got := rep.Get("window_after_bytes").Int(); got != after {
			d.fail("%s: window after %d B, survey says %d B", id, after, got)
			continue
		}
		before := rep.Get("window_before_bytes").Int()
		cands := beforeCandidates(w, from, at, to)
		if !containsInt(cands, before) {
			d.fail("%s: window before %d B is none of the trace's pre-collapse peaks %v", id, before, cands)
			continue
		}
		d.note("%s: %d decreases, %d exact hits, %d→%d B", id, len(w.decreases), len(w.hits), before, after)
	}
	return d.result()
}

// beforeCandidates: the peak from the scope start (or the trace start) to
// the migration or to the first decrease at or after it, and the last
// value before the migration.
func beforeCandidates(w windowFacts, from, at, to int64) []int64 {
	firstDec := to
	for _, e := range w.decreases {
		if e[0] >= at {
			firstDec = e[0]
			break
		}
	}
	var out []int64
	for _, start := range []int64{math.MinInt64, from} {
		for _, end := range []int64{at, firstDec} {
			peak := int64(-1)
			for _, s := range w.cwnd {
				if s.T >= start && s.T < end {
					peak = max(peak, s.Cwnd)
				}
			}
			if peak >= 0 {
				out = append(out, peak)
			}
		}
	}
	for i := len(w.cwnd) - 1; i >= 0; i-- {
		if w.cwnd[i].T < at {
			out = append(out, w.cwnd[i].Cwnd)
			break
		}
	}
	// A trace that logs the window only when it changes (quic-go's
	// metrics_updated) carries the value in effect at the scope's start
	// from before it: with it, the peak in effect from the scope's start
	// to the migration (or the first decrease after it).
	for i := len(w.cwnd) - 1; i >= 0; i-- {
		if w.cwnd[i].T < from {
			carried := w.cwnd[i].Cwnd
			for _, end := range []int64{at, firstDec} {
				peak := carried
				for _, s := range w.cwnd {
					if s.T >= from && s.T < end {
						peak = max(peak, s.Cwnd)
					}
				}
				out = append(out, peak)
			}
			break
		}
	}
	// A per-path trace logs the old path's window at the migration instant
	// beside the new path's first one: that old-path value is still the
	// window before the collapse.
	old := map[string]bool{}
	peak := int64(-1)
	for _, s := range w.cwnd {
		if s.T < at {
			old[s.Path] = true
		}
		if s.T >= from && s.T <= at && old[s.Path] {
			peak = max(peak, s.Cwnd)
		}
	}
	if peak >= 0 {
		out = append(out, peak)
	}
	return out
}

// isBackoffOf: value is factor × prev as an implementation computes it in
// integers — truncated, floored, rounded or rounded up — give or take 1 B (the logged
// previous window can lag the one the backoff multiplied by a few bytes of
// congestion-avoidance growth; docs/analyze.md states the same tolerance).
func isBackoffOf(value, prev int64, factor float64) bool {
	p := factor * float64(prev)
	for _, r := range []float64{math.Trunc(p), math.Floor(p), math.Round(p), math.Ceil(p)} {
		if math.Abs(float64(value)-r) <= 1 {
			return true
		}
	}
	return false
}

func containsInt(xs []int64, x int64) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}
