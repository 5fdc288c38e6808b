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
	pathIDs    bool
	mig        Migration
	startUS    int64 // the instant the implementation is on the new path
	startWhy   string
	newPathUS  int64
	newPathSrc string
	oldGivenUS int64
	defaultUS  int64
	anyFields  bool
	// measured and oldPath: the last smoothed RTT reported before the
	// migration and the path it was on (oldRTT).
	measured int64
	oldPath  string
}

// oldRTT finds the last smoothed RTT reported before the migration on the
// path that carried the connection then.
func oldRTT(samples []timeline.Sample, atUS int64, anyFields bool) (measured int64, path string) {
	for i := len(samples) - 1; i >= 0; i-- {
		s := samples[i]
		if s.TimeUS >= atUS || !reportsSmoothed(s, anyFields) {
			continue
		}
		return s.SmoothedRTTUS, s.PathID
	}
	return 0, ""
}

// rttSplit feeds the samples after the switch to the attribution of the
// new path's series. With path ids the new path is the first other path
// seen after the switch, else the old path itself: both are followed,
// each in O(1) memory, until the end says which it was.
type rttSplit struct {
	in      rttInput
	same    *rttMachine // newPath == oldPath
	other   *rttMachine // the first other path, once one appears
	otherID string
}

func newRTTSplit(in rttInput) *rttSplit {
	return &rttSplit{in: in, same: &rttMachine{in: in}}
}

func (r *rttSplit) add(s timeline.Sample) {
	if !r.in.pathIDs {
		if reportsSmoothed(s, r.in.anyFields) {
			r.same.add(s)
		}
		return
	}
	if r.other == nil && s.PathID != r.in.oldPath {
		r.other, r.otherID = &rttMachine{in: r.in}, s.PathID
	}
	if !reportsSmoothed(s, r.in.anyFields) {
		return
	}
	switch {
	case r.other != nil && s.PathID == r.otherID:
		r.other.add(s)
	case s.PathID == r.in.oldPath:
		r.same.add(s)
	}
}

// machine is the series the attribution is made from.
func (r *rttSplit) machine() *rttMachine {
	if r.other != nil {
		return r.other
	}
	return r.same
}

// attributeRTT compares the first post-migration smoothed RTT samples with
// the old path's RTT, the new path's and the default: samples are those
// from the switch on; acks finds the packet behind the first sample.
func attributeRTT(in rttInput, samples []timeline.Sample, acks ackIndex) RTTAttribution {
	r := newRTTSplit(in)
	for _, s := range samples {
		r.add(s)
	}
	return r.machine().result(acks)
}

// rttMachine follows the new path's smoothed-RTT series ("post": samples
// that report it) one sample at a time and keeps only what the attribution
// reads: the leading run at the default, the leading run unchanged from
// before the migration, the first other sample, and the scans after it.
type rttMachine struct {
	in   rttInput
	n    int
	p0   timeline.Sample // post[0]
	last timeline.Sample
	// k counts the leading samples at the default; kEnd is set at the
	// first other one.
	k    int
	kEnd bool
	// u counts the leading samples unchanged from before the migration
	// (followed only when post[0] is not at the default).
	u     int
	uEnd  bool
	prevT int64 // time of the sample before first
	// first is the first sample after the leading runs.
	first     timeline.Sample
	haveFirst bool
	fk        int // its index in post
	// After first: the run near the old path (mixed) and convergence.
	mixed     bool
	jLastT    int64
	jNext     timeline.Sample
	haveJNext bool
	attr      string
	conv      timeline.Sample
	haveConv  bool
}

func (m *rttMachine) isDefault(v int64) bool {
	return m.in.defaultUS > 0 && abs64(v-m.in.defaultUS) <= defaultToleranceUS
}

func (m *rttMachine) add(s timeline.Sample) {
	idx := m.n
	m.n++
	if idx == 0 {
		m.p0 = s
	}
	m.last = s
	if m.haveFirst {
		m.after(s)
		return
	}
	if !m.kEnd {
		if m.isDefault(s.SmoothedRTTUS) {
			m.k++
			m.prevT = s.TimeUS
			return
		}
		m.kEnd = true
		if m.k > 0 {
			m.found(s, m.k)
			return
		}
	}
	// post[0] is not at the default: the leading run unchanged from
	// before the migration.
	if s.SmoothedRTTUS == m.in.measured {
		m.u++
		m.prevT = s.TimeUS
		return
	}
	m.uEnd = true
	m.found(s, m.u)
}

// found records the first sample after the leading runs, at index k.
func (m *rttMachine) found(s timeline.Sample, k int) {
	m.first, m.haveFirst, m.fk = s, true, k
	// Without path ids, a fresh estimator (default) followed by a sample
	// near the old path that is not a first sample (smoothed ≠ latest) is
	// the old path's own estimator still logging: the series is a union.
	if !m.in.pathIDs && k > 0 && near(s.SmoothedRTTUS, m.in.measured, matchTolerance) &&
		s.Fields.Has(timeline.FieldLatestRTT) && s.LatestRTTUS > 0 &&
		abs64(s.SmoothedRTTUS-s.LatestRTTUS) > firstSampleSlackUS {
		m.mixed = true
	}
	m.after(s)
}

// after scans the samples from first on.
func (m *rttMachine) after(s timeline.Sample) {
	if m.mixed {
		if m.haveJNext {
			return
		}
		if near(s.SmoothedRTTUS, m.in.measured, matchTolerance) {
			m.jLastT = s.TimeUS
			return
		}
		m.jNext, m.haveJNext = s, true
		return
	}
	if m.attr == "" {
		m.attr = closestName(m.first.SmoothedRTTUS, m.refs())
	}
	if !m.haveConv && m.in.newPathUS > 0 && m.attr != "new-path" && near(s.SmoothedRTTUS, m.in.newPathUS, convergeTolerance) {
		m.conv, m.haveConv = s, true
	}
}

// refs is the attribution as far as the references go.
func (m *rttMachine) refs() RTTAttribution {
	in := m.in
	r := RTTAttribution{Attribution: "unknown", NewPathUS: in.newPathUS, NewPathSource: in.newPathSrc, DefaultUS: in.defaultUS}
	r.OldPathUS = in.measured
	if in.oldGivenUS > 0 {
		r.OldPathUS = in.oldGivenUS
		if in.measured != in.oldGivenUS {
			r.OldPathMeasuredUS = in.measured
		}
	}
	return r
}

// result is the attribution of the series fed so far.
func (m *rttMachine) result(acks ackIndex) RTTAttribution {
	in := m.in
	r := m.refs()
	measured := in.measured
	if m.n == 0 {
		r.Detail = fmt.Sprintf("no smoothed RTT reported after %s", in.startWhy)
		return r
	}
	k := m.k
	if k > 0 {
		r.PinnedSamples = k
		end := m.last.TimeUS
		if k < m.n {
			end = m.first.TimeUS
		}
		r.PinnedUS = end - m.p0.TimeUS
	}
	if k == m.n {
		r.Attribution = "default"
		r.FirstAfterUS, r.FirstAfterAtUS = m.p0.SmoothedRTTUS, m.p0.TimeUS
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
		u := m.u
		if u == m.n {
			r.Attribution = "old-path"
			r.FirstAfterUS, r.FirstAfterAtUS = m.p0.SmoothedRTTUS, m.p0.TimeUS
			r.Detail = fmt.Sprintf("smoothed RTT never changed after %s: all %d samples repeat the pre-migration %s", in.startWhy, m.n, fmtRTT(measured))
			return r
		}
		if u > 0 {
			lead = fmt.Sprintf("after %d sample(s) unchanged from before the migration; ", u)
			k = u
		}
	}
	first := m.first
	r.FirstAfterUS, r.FirstAfterAtUS = first.SmoothedRTTUS, first.TimeUS

	if m.mixed {
		r.Attribution = "mixed"
		r.Detail = fmt.Sprintf("%smetrics carry no path id: after a fresh estimator appeared at the default, samples near the old path (%s) continue until %s with smoothed ≠ latest (an estimator continuing, not a first sample) — the old path's own estimator",
			lead, fmtRTT(measured), fmtMS(m.jLastT))
		if m.haveJNext {
			j := m.jNext
			r.FirstAfterUS, r.FirstAfterAtUS = j.SmoothedRTTUS, j.TimeUS
			r.Detail += fmt.Sprintf("; the first other sample is %s at %s (%s)", fmtRTT(j.SmoothedRTTUS), fmtMS(j.TimeUS), closestName(j.SmoothedRTTUS, r))
		}
		return r
	}

	r.Attribution = m.attr
	ambiguous := false
	if r.Attribution == "none" {
		r.Attribution = "unknown"
		ambiguous = true
	}
	oldText := fmtRTT(r.OldPathUS)
	if r.OldPathMeasuredUS > 0 {
		oldText = fmt.Sprintf("%s given, %s measured before the migration", fmtRTT(r.OldPathUS), fmtRTT(r.OldPathMeasuredUS))
	}
	r.Detail = fmt.Sprintf("%sfirst smoothed RTT after %s is %s at %s; old path %s, new path %s, default %s",
		lead, in.startWhy, fmtRTT(first.SmoothedRTTUS), fmtMS(first.TimeUS), oldText, fmtRTTSrc(in.newPathUS, in.newPathSrc), fmtRTT(in.defaultUS))
	if ambiguous {
		r.Detail += fmt.Sprintf("; within %.0f%% of more than one of them, or near none: the value cannot say which path it measured", matchTolerance*100)
	}

	if in.newPathUS > 0 && r.Attribution != "new-path" {
		if m.haveConv {
			r.ConvergedAfterUS = m.conv.TimeUS - in.mig.AtUS
			r.Detail += fmt.Sprintf("; within %.0f%% of the new path from %s (%s after migration)", convergeTolerance*100, fmtMS(m.conv.TimeUS), fmtDur(r.ConvergedAfterUS))
		}
		if r.ConvergedAfterUS == 0 {
			r.Detail += "; never came within " + fmt.Sprintf("%.0f%%", convergeTolerance*100) + " of the new path"
		}
	}

	// Packet-number evidence: which packet's ACK produced the first sample?
	// Before the migration instant a packet can only have taken the old
	// path; from the switch (reset / path validation done) on, the new
	// one; in between the trace does not say which path carried it.
	lo := int64(math.MinInt64)
	if k > 0 {
		lo = m.prevT
	}
	if pn, sentUS, ok := acks.ackedPacketBehind(first.TimeUS, lo); ok {
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

// ackIndex answers ackedPacketBehind from the events a trace logged.
type ackIndex interface {
	ackedPacketBehind(atUS, lo int64) (pn, sentUS int64, ok bool)
}

// eventAcks is an ackIndex over time-sorted events held in memory.
type eventAcks []timeline.Event

// ackedPacketBehind finds the largest packet number newly acknowledged by
// the ACK processed at or just before the sample (at or after lo, the
// previous post-migration sample) and when that packet was sent. ok is
// false when the trace does not log packet numbers and ACK ranges.
func (events eventAcks) ackedPacketBehind(atUS, lo int64) (pn, sentUS int64, ok bool) {
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

// Classify names what a first post-migration smoothed RTT of v µs would be
// attributed to against r's references, as the attribution itself does:
// "new-path", "old-path", "default", "converging" or "none". The runner
// asks it whether the lateness measured around a sample could have changed
// the sample's attribution.
func (r RTTAttribution) Classify(v int64) string { return closestName(v, r) }

// closestName names the reference a value matches: the nearest (in ratio)
// of those within matchTolerance ("none" when references of two different
// names are both within it); else "converging" when it lies between
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
		// Within the tolerance of two different references (the old
		// path's RTT raised by queueing to about the new path's): the
		// value cannot tell them apart.
		for _, c := range refs {
			if c.name != n && c.ref > 0 && v > 0 && math.Abs(math.Log(float64(v)/float64(c.ref))) <= math.Log(1+matchTolerance) {
				return "none"
			}
		}
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
