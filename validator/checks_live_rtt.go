package validator

// The RTT (Q3): the first post-migration sample and what it matches.

import (
	"fmt"
	"math"

	"github.com/tidwall/gjson"
)

// rttAround returns the first smoothed-RTT samples after the migration
// (candidates: at or after it; after path validation completes) and the
// RTT just before.
func rttFacts(f *traceFacts, at, def int64) (firsts []int64, lastBefore int64) {
	lastBefore = -1
	var respT int64 = -1
	for _, e := range f.Events {
		if e.Kind == "response_received" && e.T >= at {
			respT = e.T
			break
		}
	}
	got := map[string]bool{}
	known := map[string]bool{}
	newPath := ""
	for _, s := range f.Samples {
		if s.SRTT < 0 {
			continue
		}
		if s.T < at {
			lastBefore = s.SRTT
			known[s.Path] = true
			continue
		}
		if f.PathIDs && !known[s.Path] && newPath == "" {
			newPath = s.Path
		}
		if def > 0 && within(s.SRTT, def, 1000) {
			got["reset"] = true
		} else if got["reset"] && !got["afterreset"] {
			// the first measurement after the estimator was reset
			got["afterreset"] = true
			firsts = append(firsts, s.SRTT)
		}
		// The first value that is a measurement, not the default an
		// estimator starts (or sits) at: overall and on the new path.
		if def > 0 && !within(s.SRTT, def, 1000) {
			if !got["measured"] {
				got["measured"] = true
				firsts = append(firsts, s.SRTT)
			}
			if newPath != "" && s.Path == newPath && !got["newpath"] {
				got["newpath"] = true
				firsts = append(firsts, s.SRTT)
			}
		}
		// A smoothed RTT equal to its own latest sample is an estimator's
		// first sample (RFC 9002 §5.3: smoothed_rtt = latest_rtt): an
		// estimator restarted without logging its default (quic-go).
		if s.Latest > 0 && within(s.SRTT, s.Latest, 1) && !got["fresh"] {
			got["fresh"] = true
			firsts = append(firsts, s.SRTT)
		}
		if !got["at"] {
			got["at"] = true
			firsts = append(firsts, s.SRTT)
		}
		if s.T > at && !got["after"] {
			got["after"] = true
			firsts = append(firsts, s.SRTT)
		}
		if respT >= 0 && s.T >= respT && !got["resp"] {
			got["resp"] = true
			firsts = append(firsts, s.SRTT)
		}
	}
	return
}

// checkRTT: the first post-migration RTT is the trace's, and its
// attribution follows from comparing it with the old path, the new path
// and the default.
func checkRTT(v *Validator, doc, im gjson.Result) (Status, string) {
	var d verdict
	if noLive(&d, im) {
		return d.result()
	}
	defRTT := defaultRTTConstant(im, -1)
	for _, rep := range im.Get("live.repetitions").Array() {
		id := rep.Get("id").String()
		f, err := v.repTrace(im, rep)
		if err != nil {
			liveErr(&d, id, err)
			continue
		}
		at := rep.Get("migration.at_us").Int()
		firsts, lastBefore := rttFacts(f, at, defRTT)
		first := rep.Get("rtt.first_after_us").Int()
		if !anyNear(first, firsts, 1) {
			d.fail("%s: first post-migration RTT %d µs is not the trace's (%v)", id, first, firsts)
			continue
		}
		attr := rep.Get("rtt.attribution").String()
		if du := rep.Get("rtt.default_us"); du.Exists() && du.Int() != 0 && defRTT >= 0 && du.Int() != defRTT {
			d.fail("%s: default_us %d, the default_rtt constant is %d", id, du.Int(), defRTT)
			continue
		}
		cfgA, cfgB := v.configuredRTT(im, rep, "A"), v.configuredRTT(im, rep, "B")
		if op := rep.Get("rtt.old_path_us"); op.Exists() && op.Int() != 0 {
			// A run's manifest gives the configured RTT, and then that is
			// the claim; without one, the trace's last pre-migration value.
			if cfgA > 0 && op.Int() != cfgA {
				d.fail("%s: old-path RTT %d µs, the manifest configures path A at %d µs", id, op.Int(), cfgA)
				continue
			}
			if cfgA <= 0 && lastBefore > 0 && !within(op.Int(), lastBefore, 1) {
				d.fail("%s: old-path RTT %d µs is not what the trace reads before migrating (%d µs)", id, op.Int(), lastBefore)
				continue
			}
		}
		newPath := rep.Get("new_path_rtt_us").Int()
		if newPath == 0 {
			newPath = rep.Get("rtt.new_path_us").Int()
		}
		pvs := pathValidationRTTs(f)
		badNew := false
		for _, field := range []string{"new_path_rtt_us", "rtt.new_path_us"} {
			nv := rep.Get(field).Int()
			if nv <= 0 || nv == cfgB {
				continue
			}
			switch {
			case len(pvs) > 0 && !roughly(nv, pvs[0], 0.25):
				d.fail("%s: %s %d µs is neither the configured path B RTT (%d µs) nor near the path-validation round trip (%d µs)", id, field, nv, cfgB, pvs[0])
				badNew = true
			case len(pvs) == 0 && cfgB > 0:
				d.fail("%s: %s %d µs, the manifest configures path B at %d µs and the trace logs no path validation", id, field, nv, cfgB)
				badNew = true
			}
		}
		if badNew {
			continue
		}
		want := attributionOf(first, []int64{lastBefore, cfgA}, newPath, defRTT)
		if attr == "mixed" {
			if n := interleavings(f, at, lastBefore, newPath, defRTT); n < 2 {
				d.fail("%s: survey says mixed, but the RTT samples after migration switch between old (%d µs), new (%d µs) and default values %d times: not two estimators interleaved", id, lastBefore, newPath, n)
				continue
			}
			want = "mixed"
		}
		if want == "" && decisiveAttribution(attr) {
			// Ambiguity is not a pass: the validator's own reading cannot
			// tell which path the value is, so a stated one must rest on
			// evidence in the repetition that does.
			if msg, ok := v.undecidedAttribution(im, rep, f, at, defRTT, attr); !ok {
				d.fail("%s: first RTT %d µs (old %d, new %d, default %d) is undecided in the validator's reading, and %s; survey says %s", id, first, lastBefore, newPath, defRTT, msg, attr)
				continue
			}
		}
		if want != "" && want != attr && !(want == "old-path" && attr == "converging") && !(want == "converging" && attr == "old-path") {
			d.fail("%s: first RTT %d µs (old %d, new %d, default %d) reads as %s, survey says %s", id, first, lastBefore, newPath, defRTT, want, attr)
			continue
		}
		if ca := rep.Get("rtt.converged_after_us").Int(); ca > 0 {
			if !convergedAt(f, at+ca, newPath, rep.Get("rtt.new_path_us").Int()) {
				d.fail("%s: converged_after_us %d: no smoothed-RTT sample at +%d µs is near the new path", id, ca, ca)
				continue
			}
			// …and it is the first: from the first post-migration sample on,
			// none earlier is already within 10% of the new path (the
			// survey's "within 10% of the new path from").
			if t, ok := earlierNear(f, at, first, at+ca-1000, 0.10, newPath, rep.Get("rtt.new_path_us").Int()); ok {
				d.fail("%s: converged_after_us %d, but the smoothed RTT is already within 10%% of the new path at +%d µs", id, ca, t-at)
				continue
			}
		}
		q3 := rep.Get("q3").String()
		w := q3Of(attr)
		if attr == "converging" && q3 == "UNKNOWN" {
			// Between the paths and not from an old-path packet's ACK
			// (checked below): not evidence either way.
			w = "UNKNOWN"
		}
		if attr == "unknown" || attr == "default" {
			// Near two references or none, or no sample at all: the value
			// says nothing of which path fed the estimator; only an
			// old-path packet's ACK (below) decides.
			w = "UNKNOWN"
		}
		why := "RTT attributed to " + attr
		if attr == "mixed" {
			// Two estimators interleaved without path ids (checked above):
			// which path an old packet's ACK fed cannot be told.
			w = "UNKNOWN"
		} else if pn, sentAt, ok := ackedBefore(f, at, rep.Get("rtt.first_after_us").Int(), defRTT); ok {
			// The sample came from acknowledging a packet sent on the old
			// path, before the migration: old-path input to the new path's
			// estimator, whatever value it happens to have.
			w, why = "NO", fmt.Sprintf("the first RTT sample after migration acknowledges packet %d, sent at %d µs before the migration", pn, sentAt)
		}
		// Wire evidence, re-read with the validator's own reader, decides
		// over the value (docs/validator-decisions.md, "Wire claims").
		if ww, wwhy, stated, err := v.wireQ3(im, rep); stated {
			if err != nil {
				d.fail("%s: its wire evidence does not decide q3: %v", id, err)
				continue
			}
			w, why = ww, wwhy
		}
		if w != "" && w != q3 {
			d.fail("%s: %s means q3 %s, survey says %s", id, why, w, q3)
			continue
		}
		d.note("%s: first %s ms (%s)", id, fms(first), attr)
	}
	return d.result()
}

func fms(us int64) string { return fmt.Sprintf("%.1f", float64(us)/1000) }

func roughly(a, b int64, tol float64) bool {
	return math.Abs(float64(a-b)) <= tol*math.Max(float64(b), 1)
}

// attributionOf names what a first post-migration RTT value matches: the
// default; the new path (within 20 %); between the new path and an old-path
// reference (the configured RTT or the one measured before migrating), the
// old path when nearer it, else "converging"; beyond every reference
// (queueing only adds to a path's RTT, so a value outside them is no
// smoothed value moving between them), the nearest in ratio within a
// factor of two. "" = undecided.
func attributionOf(first int64, olds []int64, newPath, def int64) string {
	if def > 0 && within(first, def, 1000) {
		return "default"
	}
	if newPath <= 0 {
		return ""
	}
	var refs []int64
	for _, o := range olds {
		if o <= 0 {
			continue
		}
		if roughly(o, newPath, 0.25) {
			// The old path measured about what the new one is configured
			// at (queueing on path A under load): a value cannot tell
			// them apart.
			return ""
		}
		refs = append(refs, o)
	}
	if roughly(first, newPath, 0.2) {
		return "new-path"
	}
	if len(refs) == 0 {
		return "converging"
	}
	for _, old := range refs {
		if first > min(old, newPath) && first < max(old, newPath) {
			if math.Abs(float64(first-old)) < math.Abs(float64(first-newPath)) {
				return "old-path"
			}
			return "converging"
		}
	}
	best, bestD := "", math.Log(2)
	for _, ref := range append([]int64{newPath}, refs...) {
		if d := math.Abs(math.Log(float64(first) / float64(ref))); d <= bestD {
			best, bestD = "old-path", d
			if ref == newPath {
				best = "new-path"
			}
		}
	}
	return best
}

// interleavings counts switches between old-path, new-path and default
// smoothed-RTT values in the second after migration. A trace that logs two
// paths' estimators without a path id (quiche) interleaves them: a fresh
// estimator appears and the old one keeps logging after it.
func interleavings(f *traceFacts, at, old, newPath, def int64) int {
	if old <= 0 || newPath <= 0 {
		return 0
	}
	last, n := "", 0
	for _, s := range f.Samples {
		if s.T < at || s.T > at+1_000_000 || s.SRTT < 0 {
			continue
		}
		cur := ""
		switch {
		case def > 0 && within(s.SRTT, def, 1000):
			cur = "default"
		case roughly(s.SRTT, old, 0.15):
			cur = "old"
		case roughly(s.SRTT, newPath, 0.15):
			cur = "new"
		default:
			continue
		}
		if last != "" && cur != last {
			n++
		}
		last = cur
	}
	return n
}

// earlierNear finds a smoothed-RTT sample before before, from the first
// post-migration sample on (the last sample of value first between at and
// before: the trace may hold the same value earlier, before the path was
// validated), within tol of one of the new-path RTTs.
func earlierNear(f *traceFacts, at, first, before int64, tol float64, newPaths ...int64) (int64, bool) {
	t0 := int64(-1)
	for _, s := range f.Samples {
		if s.T >= at && s.T <= before+1000 && s.SRTT >= 0 && within(s.SRTT, first, 1) {
			t0 = s.T
		}
	}
	if t0 < 0 {
		return 0, false
	}
	for _, s := range f.Samples {
		if s.T < t0 || s.SRTT < 0 {
			continue
		}
		if s.T >= before {
			continue // events are logged slightly out of time order
		}
		for _, np := range newPaths {
			if np > 0 && roughly(s.SRTT, np, tol) {
				return s.T, true
			}
		}
	}
	return 0, false
}

// convergedAt: a smoothed-RTT sample at t (±1 ms) within 25% of the new
// path's RTT.
func convergedAt(f *traceFacts, t int64, newPaths ...int64) bool {
	for _, s := range f.Samples {
		if s.SRTT < 0 || !within(s.T, t, 1000) {
			continue
		}
		for _, np := range newPaths {
			if np > 0 && roughly(s.SRTT, np, 0.25) {
				return true
			}
		}
	}
	return false
}

// ackedBefore finds the ACK that produced the first post-migration RTT
// sample of value first (the first such sample at or after the migration
// that is not the default) and reports whether the packet it acknowledged
// (its largest) was sent before the migration.
func ackedBefore(f *traceFacts, at, first, def int64) (pn, sentAt int64, ok bool) {
	pn, sentAt, found := firstSampleAck(f, at, first, def)
	if !found || sentAt >= at {
		return 0, 0, false
	}
	return pn, sentAt, true
}

// firstSampleAck finds the ACK that produced the first post-migration RTT
// sample of value first and the packet it acknowledged (its largest) with
// the instant it was sent; found is false when the trace does not show
// them.
func firstSampleAck(f *traceFacts, at, first, def int64) (pn, sentAt int64, found bool) {
	if len(f.Acks) == 0 || f.Sent == nil {
		return 0, 0, false
	}
	sampleT := int64(-1)
	for _, s := range f.Samples {
		if s.T < at || s.SRTT < 0 || (def > 0 && within(s.SRTT, def, 1000)) {
			continue
		}
		if within(s.SRTT, first, 1) {
			sampleT = s.T
			break
		}
	}
	if sampleT < 0 {
		return 0, 0, false
	}
	var last *ack
	for i := range f.Acks {
		if f.Acks[i].T > sampleT {
			break
		}
		last = &f.Acks[i]
	}
	if last == nil || last.T < at {
		return 0, 0, false
	}
	st, known := f.Sent[last.Largest]
	if !known {
		return 0, 0, false
	}
	return last.Largest, st, true
}

// q3Of is the per-trace Q3 verdict an RTT attribution supports.
func q3Of(attr string) string {
	switch attr {
	case "new-path":
		return "YES"
	case "old-path", "converging":
		return "NO"
	}
	return ""
}

// defaultRTTConstant is the implementation's default_rtt constant in µs as
// the survey states it (the last such entry), else fallback.
func defaultRTTConstant(im gjson.Result, fallback int64) int64 {
	def := fallback
	im.Get("constants").ForEach(func(_, c gjson.Result) bool {
		if c.Get("name").String() == "default_rtt" {
			def = int64(math.Round(c.Get("value").Float()))
		}
		return true
	})
	return def
}
