package discriminator

import (
	"fmt"
	"math"

	"github.com/migaudit/migaudit/parsers/timeline"
)

// Tolerances for RTT attribution. A sample "matches" a reference RTT when
// within matchTolerance of it; the estimate has "converged" on the new path
// when within convergeTolerance. The two study paths (20 ms and 40 ms base,
// far more under load) are never this close, and a smoothed RTT on an idle
// path sits within a few percent of the path delay.
const (
	matchTolerance    = 0.15
	convergeTolerance = 0.10
	// defaultTolerance: a stuck estimator shows the default exactly; allow
	// only the trace's own rounding (ms-resolution qlogs).
	defaultToleranceUS = 1000
	// firstSampleSlackUS: an estimator's first sample sets smoothed = latest
	// (RFC 9002 §5.3); allow the µs rounding of float-ms traces.
	firstSampleSlackUS = 2
)

type rttInput struct {
	samples    []timeline.Sample
	events     []timeline.Event
	pathIDs    bool
	mig        Migration
	startIdx   int   // first sample index that belongs after the switch
	startUS    int64 // its instant
	startWhy   string
	newPathUS  int64
	newPathSrc string
	oldGivenUS int64
	defaultUS  int64
}

// attributeRTT compares the first post-migration smoothed RTT samples with
// the old path's RTT, the new path's and the default.
func attributeRTT(in rttInput) RTTAttribution {
	anyFields := hasAnyFields(in.samples)
	r := RTTAttribution{Attribution: "unknown", NewPathUS: in.newPathUS, NewPathSource: in.newPathSrc, DefaultUS: in.defaultUS}

	// Old path: the last smoothed RTT reported before the migration on the
	// path that carried the connection then.
	oldPath := ""
	var measured int64
	for i := len(in.samples) - 1; i >= 0; i-- {
		s := in.samples[i]
		if s.TimeUS >= in.mig.AtUS || !reportsSmoothed(s, anyFields) {
			continue
		}
		measured, oldPath = s.SmoothedRTTUS, s.PathID
		break
	}
	r.OldPathUS = measured
	if in.oldGivenUS > 0 {
		r.OldPathUS = in.oldGivenUS
		if measured != in.oldGivenUS {
			r.OldPathMeasuredUS = measured
		}
	}
	// New path's samples: with path ids, the first other path seen after
	// the switch, else the same path; without path ids, everything.
	newPath := oldPath
	if in.pathIDs {
		for _, s := range in.samples[in.startIdx:] {
			if s.PathID != oldPath {
				newPath = s.PathID
				break
			}
		}
	}
	var post []timeline.Sample
	for _, s := range in.samples[in.startIdx:] {
		if in.pathIDs && s.PathID != newPath {
			continue
		}
		if reportsSmoothed(s, anyFields) {
			post = append(post, s)
		}
	}
	if len(post) == 0 {
		r.Detail = fmt.Sprintf("no smoothed RTT reported after %s", in.startWhy)
		return r
	}
	isDefault := func(v int64) bool { return in.defaultUS > 0 && abs64(v-in.defaultUS) <= defaultToleranceUS }

	// Leading samples at the default are the reset estimator before its
	// first measurement (or a stuck one).
	k := 0
	for k < len(post) && isDefault(post[k].SmoothedRTTUS) {
		k++
	}
	if k > 0 {
		r.PinnedSamples = k
		end := post[len(post)-1].TimeUS
		if k < len(post) {
			end = post[k].TimeUS
		}
		r.PinnedUS = end - post[0].TimeUS
	}
	if k == len(post) {
		r.Attribution = "default"
		r.FirstAfterUS, r.FirstAfterAtUS = post[0].SmoothedRTTUS, post[0].TimeUS
		r.Detail = fmt.Sprintf("smoothed RTT pinned at the default %s for all %d samples after %s, %s to the end of the trace; the estimator never measured the new path",
			fmtRTT(in.defaultUS), k, in.startWhy, fmtDur(r.PinnedUS))
		if in.newPathUS > 0 {
			r.Detail += fmt.Sprintf(" (%s %s)", in.newPathSrc, fmtRTT(in.newPathUS))
		}
		return r
	}

	lead := ""
	if k > 0 {
		lead = fmt.Sprintf("after %d sample(s) at the default %s; ", k, fmtRTT(in.defaultUS))
	}
	// Polled statistics repeat the last value until a new sample lands:
	// values unchanged from before the migration are not a new sample.
	if k == 0 {
		u := 0
		for u < len(post) && post[u].SmoothedRTTUS == measured {
			u++
		}
		if u == len(post) {
			r.Attribution = "old-path"
			r.FirstAfterUS, r.FirstAfterAtUS = post[0].SmoothedRTTUS, post[0].TimeUS
			r.Detail = fmt.Sprintf("smoothed RTT never changed after %s: all %d samples repeat the pre-migration %s", in.startWhy, len(post), fmtRTT(measured))
			return r
		}
		if u > 0 {
			lead = fmt.Sprintf("after %d sample(s) unchanged from before the migration; ", u)
			k = u
		}
	}
	first := post[k]
	r.FirstAfterUS, r.FirstAfterAtUS = first.SmoothedRTTUS, first.TimeUS

	// Without path ids, a fresh estimator (default) followed by a sample
	// near the old path that is not a first sample (smoothed ≠ latest) is
	// the old path's own estimator still logging: the series is a union.
	if !in.pathIDs && k > 0 && near(first.SmoothedRTTUS, measured, matchTolerance) &&
		first.Fields.Has(timeline.FieldLatestRTT) && first.LatestRTTUS > 0 &&
		abs64(first.SmoothedRTTUS-first.LatestRTTUS) > firstSampleSlackUS {
		j := k
		for j < len(post) && near(post[j].SmoothedRTTUS, measured, matchTolerance) {
			j++
		}
		r.Attribution = "mixed"
		r.Detail = fmt.Sprintf("%smetrics carry no path id: after a fresh estimator appeared at the default, samples near the old path (%s) continue until %s with smoothed ≠ latest (an estimator continuing, not a first sample) — the old path's own estimator",
			lead, fmtRTT(measured), fmtMS(post[max(j-1, k)].TimeUS))
		if j < len(post) {
			r.FirstAfterUS, r.FirstAfterAtUS = post[j].SmoothedRTTUS, post[j].TimeUS
			r.Detail += fmt.Sprintf("; the first other sample is %s at %s (%s)", fmtRTT(post[j].SmoothedRTTUS), fmtMS(post[j].TimeUS), closestName(post[j].SmoothedRTTUS, r))
		}
		return r
	}

	r.Attribution = closestName(first.SmoothedRTTUS, r)
	if r.Attribution == "none" {
		r.Attribution = "unknown"
	}
	oldText := fmtRTT(r.OldPathUS)
	if r.OldPathMeasuredUS > 0 {
		oldText = fmt.Sprintf("%s given, %s measured before the migration", fmtRTT(r.OldPathUS), fmtRTT(r.OldPathMeasuredUS))
	}
	r.Detail = fmt.Sprintf("%sfirst smoothed RTT after %s is %s at %s; old path %s, new path %s, default %s",
		lead, in.startWhy, fmtRTT(first.SmoothedRTTUS), fmtMS(first.TimeUS), oldText, fmtRTTSrc(in.newPathUS, in.newPathSrc), fmtRTT(in.defaultUS))

	if in.newPathUS > 0 && r.Attribution != "new-path" {
		for _, s := range post[k:] {
			if near(s.SmoothedRTTUS, in.newPathUS, convergeTolerance) {
				r.ConvergedAfterUS = s.TimeUS - in.mig.AtUS
				r.Detail += fmt.Sprintf("; within %.0f%% of the new path from %s (%s after migration)", convergeTolerance*100, fmtMS(s.TimeUS), fmtDur(r.ConvergedAfterUS))
				break
			}
		}
		if r.ConvergedAfterUS == 0 {
			r.Detail += "; never came within " + fmt.Sprintf("%.0f%%", convergeTolerance*100) + " of the new path"
		}
	}

	// Packet-number evidence: which packet's ACK produced the first sample?
	// Before the migration instant a packet can only have taken the old
	// path; from the switch (reset / path validation done) on, the new
	// one; in between the trace does not say which path carried it.
	if pn, sentUS, ok := ackedPacketBehind(in.events, first.TimeUS, post, k); ok {
		switch {
		case sentUS < in.mig.AtUS:
			r.OldPathPacket, r.OldPathPacketNumber = true, pn
			r.Detail += fmt.Sprintf("; that sample came from the ACK of packet %d, sent at %s — before the migration, on the old path", pn, fmtMS(sentUS))
		case sentUS >= in.startUS:
			r.Detail += fmt.Sprintf("; that sample came from the ACK of packet %d, sent at %s — after %s", pn, fmtMS(sentUS), in.startWhy)
		default:
			r.Detail += fmt.Sprintf("; that sample came from the ACK of packet %d, sent at %s — during path validation, on a path the trace does not name", pn, fmtMS(sentUS))
		}
	}
	return r
}

// ackedPacketBehind finds the largest packet number newly acknowledged by
// the ACK processed at or just before the sample (after the previous
// post-migration sample) and when that packet was sent. ok is false when the
// trace does not log packet numbers and ACK ranges.
func ackedPacketBehind(events []timeline.Event, atUS int64, post []timeline.Sample, k int) (pn, sentUS int64, ok bool) {
	lo := int64(math.MinInt64)
	if k > 0 {
		lo = post[k-1].TimeUS
	}
	var ack *timeline.Event
	for i := range events {
		e := &events[i]
		if e.TimeUS > atUS {
			break
		}
		if e.Kind == timeline.PacketsAcked && len(e.AckRanges) > 0 && e.TimeUS >= lo {
			ack = e
		}
	}
	if ack == nil {
		return 0, 0, false
	}
	largest := int64(math.MinInt64)
	for _, rg := range ack.AckRanges {
		largest = max(largest, rg.Last)
	}
	// The latest send of that number before the ACK (packet-number spaces
	// restart at 0; the application space's numbers are the late ones).
	found := false
	for _, e := range events {
		if e.TimeUS > ack.TimeUS {
			break
		}
		if e.Kind == timeline.PacketSent && e.PacketNumber == largest {
			sentUS, found = e.TimeUS, true
		}
	}
	return largest, sentUS, found
}

// closestName names the reference a value matches: the nearest (in ratio)
// of those within matchTolerance; else "converging" when it lies between
// the old and the new path; else the nearest within a factor of two; else
// "none".
func closestName(v int64, r RTTAttribution) string {
	refs := []struct {
		name string
		ref  int64
	}{{"new-path", r.NewPathUS}, {"old-path", r.OldPathUS}, {"old-path", r.OldPathMeasuredUS}, {"default", r.DefaultUS}}
	nearest := func(tol float64) string {
		best, bestD := "none", math.Inf(1)
		for _, c := range refs {
			if c.ref <= 0 || v <= 0 {
				continue
			}
			d := math.Abs(math.Log(float64(v) / float64(c.ref)))
			if d <= tol && d < bestD {
				best, bestD = c.name, d
			}
		}
		return best
	}
	if n := nearest(math.Log(1 + matchTolerance)); n != "none" {
		return n
	}
	for _, old := range []int64{r.OldPathUS, r.OldPathMeasuredUS} {
		if old > 0 && r.NewPathUS > 0 && between(v, old, r.NewPathUS) {
			return "converging"
		}
	}
	return nearest(math.Log(2))
}

func near(v, ref int64, tol float64) bool {
	if ref <= 0 {
		return false
	}
	return math.Abs(float64(v-ref)) <= tol*float64(ref)
}

func between(v, a, b int64) bool { return v > min(a, b) && v < max(a, b) }

func fmtRTT(us int64) string {
	if us <= 0 {
		return "unknown"
	}
	return fmt.Sprintf("%.2f ms", float64(us)/1000)
}

func fmtRTTSrc(us int64, src string) string {
	if us <= 0 {
		return "unknown"
	}
	return fmt.Sprintf("%s (%s)", fmtRTT(us), src)
}

func fmtDur(us int64) string {
	if us >= 1_000_000 {
		return fmt.Sprintf("%.2f s", float64(us)/1e6)
	}
	return fmt.Sprintf("%.2f ms", float64(us)/1000)
}
