package discriminator

import (
	"fmt"
	"math"
	"reflect"
	"sort"

	"github.com/migaudit/migaudit/parsers/timeline"
)

// streamer analyzes a trace while it is parsed (a timeline.Handler), in
// memory bounded by time, not by the trace's length: until the migration is
// settled it keeps a few seconds of samples (older ones fold into the last
// sample per path), then the scope, then only the state of the RTT
// attribution; of the events it keeps the migration finder's state and the
// recent ACK/send records the packet-number evidence needs.
//
// Samples that report neither the window nor the smoothed RTT and name no
// path are dropped on arrival: classification, windows and the RTT read only
// the others (classifyScope's contract).
//
// It computes exactly what Analyze computes on the whole timeline, and it
// checks that it did: anything the one pass had to assume (time order, the
// migration it settled on, the RTT's starting point, retained ACKs) is
// recomputed or verified at the end. When an assumption fails, finish
// reports errNotStreamable and AnalyzeFile analyzes the trace in memory.
type streamer struct {
	opt    Options
	source string

	meta     timeline.Meta
	warnings []timeline.Warning
	nEvents  int
	finder   migFinder
	fver     int // finder state version: bumps when the candidate may change
	cand     Migration
	candVer  int
	bad      string // why one pass cannot be trusted ("" = fine)

	lastSampleT, lastEventT int64
	anySample, anyEvent     bool
	pathIDsSeen             bool
	seq                     int64

	// Before the commit: recent samples, and the fold of older ones.
	ring        sampleQueue
	preCwnd     map[string]seqSample // last window-reporting sample per path, evicted
	preSmoothed seqSample            // last smoothed-RTT-reporting sample, evicted
	havePreSm   bool
	evictedMaxT int64
	evicted     bool

	// From the commit: the migration, the scope's samples, then the RTT.
	committed  bool
	m          Migration
	from, to   int64
	scope      []timeline.Sample
	scopeDone  bool
	cs         constantSet
	in         rttInput
	startIdx   int
	reset      bool
	rtt        *rttSplit
	pathIDsUse bool

	acks streamAcks
}

type seqSample struct {
	s   timeline.Sample
	seq int64
}

// horizonUS is how much sample and ACK history is kept before the commit.
// The migration is settled (committed) at the first sample one
// path-validation window after its anchor; the scope starts `before` the
// anchor and the migration instant at most one path-validation window
// before it, so that much history reaches back to both.
func (st *streamer) horizonUS() int64 {
	before := st.opt.Before
	if before == 0 {
		before = DefaultBefore
	}
	return pathValidationWindowUS + max(before.Microseconds(), pathValidationWindowUS) + 1
}

func newStreamer(source string, opt Options) *streamer {
	return &streamer{source: source, opt: opt, preCwnd: map[string]seqSample{}, candVer: -1}
}

func (st *streamer) Meta(m timeline.Meta)    { st.meta = m }
func (st *streamer) Warn(w timeline.Warning) { st.warnings = append(st.warnings, w) }

func (st *streamer) fail(why string) {
	if st.bad == "" {
		st.bad = why
	}
}

func (st *streamer) Event(e timeline.Event) {
	if st.anyEvent && e.TimeUS < st.lastEventT {
		st.fail("events out of time order")
	}
	st.anyEvent, st.lastEventT = true, e.TimeUS
	st.nEvents++
	npv, had, hs := len(st.finder.pv), st.finder.hasChange, st.finder.hasSwitch
	st.finder.add(e)
	if len(st.finder.pv) != npv || st.finder.hasChange != had || st.finder.hasSwitch != hs {
		st.fver++
	}
	st.acks.add(e, st.horizonUS())
}

// candidate is the migration the events so far show (given instant
// included), recomputed only when the finder's state changed.
func (st *streamer) candidate() Migration {
	if st.candVer != st.fver {
		m, _ := givenMigration(st.finder.result(st.nEvents), st.opt)
		st.cand, st.candVer = m, st.fver
	}
	return st.cand
}

func (st *streamer) Sample(s timeline.Sample) {
	if st.anySample && s.TimeUS < st.lastSampleT {
		st.fail("samples out of time order")
	}
	if s.Fields == 0 {
		st.fail("a sample without reported fields")
	}
	st.anySample, st.lastSampleT = true, s.TimeUS
	if s.PathID != "" {
		st.pathIDsSeen = true
	}
	st.seq++
	// A sample that reports neither the window nor the smoothed RTT, on no
	// named path, is read by nothing the analysis computes (quic-go logs
	// bytes in flight alone in two thirds of its metrics records).
	if s.PathID == "" && !s.Fields.Has(timeline.FieldCwnd) && !s.Fields.Has(timeline.FieldSmoothedRTT) {
		return
	}
	switch {
	case !st.committed:
		if m := st.candidate(); m.Found && s.TimeUS > anchorOf(m)+pathValidationWindowUS {
			st.commit(m)
			st.afterCommit(s)
			return
		}
		st.ring.push(seqSample{s, st.seq})
		st.evict(s.TimeUS - st.horizonUS())
	default:
		st.afterCommit(s)
	}
}

// afterCommit handles a sample once the migration is settled.
func (st *streamer) afterCommit(s timeline.Sample) {
	if !st.scopeDone {
		if s.TimeUS <= st.to {
			st.scope = append(st.scope, s)
			return
		}
		st.finishScope()
	}
	if !st.reset && s.TimeUS <= st.in.startUS {
		return
	}
	st.rtt.add(s)
	st.acks.need(st.rtt)
}

func anchorOf(m Migration) int64 {
	if m.PathValidationAtUS != 0 {
		return m.PathValidationAtUS
	}
	return m.AtUS
}

// evict folds ring samples older than t into the per-path state.
func (st *streamer) evict(t int64) {
	for st.ring.len() > 0 && st.ring.front().s.TimeUS < t {
		x := *st.ring.front()
		if x.s.Fields.Has(timeline.FieldCwnd) {
			st.preCwnd[x.s.PathID] = x
		}
		if reportsSmoothed(x.s, true) {
			st.preSmoothed, st.havePreSm = x, true
		}
		st.evictedMaxT, st.evicted = max(st.evictedMaxT, x.s.TimeUS), true
		st.ring.pop()
	}
}

// commit settles on m: the scope's samples start from the ring.
func (st *streamer) commit(m Migration) {
	st.committed, st.m = true, m
	st.from, st.to = scopeOf(m, st.opt)
	low := min(st.from, m.AtUS)
	if st.evicted && st.evictedMaxT >= low {
		st.fail("history before the scope was not kept")
	}
	st.evict(low) // what precedes the scope only counts as the last per path
	pre := make([]seqSample, 0, len(st.preCwnd)+1)
	for _, x := range st.preCwnd {
		pre = append(pre, x)
	}
	if st.havePreSm {
		if x, ok := st.preCwnd[st.preSmoothed.s.PathID]; !ok || x.seq != st.preSmoothed.seq {
			pre = append(pre, st.preSmoothed)
		}
	}
	sort.Slice(pre, func(i, j int) bool { return pre[i].seq < pre[j].seq })
	ring := st.ring
	st.scope = make([]timeline.Sample, 0, len(pre)+scopeSamples(&ring, st.to-st.from))
	for _, x := range pre {
		st.scope = append(st.scope, x.s)
	}
	st.ring, st.preCwnd = sampleQueue{}, nil
	ring.each(func(x seqSample) { st.afterCommit(x.s) })
}

// scopeSamples guesses how many samples a scope of spanUS holds from the
// rate of those in ring (a capacity, so that the scope's array is allocated
// about once rather than grown by doubling; at most 1<<16).
func scopeSamples(ring *sampleQueue, spanUS int64) int {
	if ring.len() < 2 || spanUS <= 0 {
		return 16
	}
	dt := ring.back().s.TimeUS - ring.front().s.TimeUS
	if dt <= 0 {
		return 16
	}
	n := float64(ring.len()) * float64(spanUS) / float64(dt)
	return int(min(n*1.1+16, 1<<16))
}

// finishScope classifies the scope and starts the RTT attribution.
func (st *streamer) finishScope() {
	st.scopeDone = true
	a, cs, err := begin(st.source, st.meta, nil, st.opt)
	if err != nil {
		st.fail("no constants yet")
		st.rtt = newRTTSplit(rttInput{})
		return
	}
	a.Migration, a.ScopeFromUS, a.ScopeToUS = st.m, st.from, st.to
	st.cs, st.pathIDsUse = cs, st.pathIDsSeen
	st.in, st.startIdx = a.classifyScope(st.scope, st.finder.pv, cs, st.pathIDsUse, st.anySample, st.opt)
	st.reset = a.ResetObserved
	st.rtt = newRTTSplit(st.in)
	for _, s := range st.scope[st.startIdx:] {
		st.rtt.add(s)
	}
	st.acks.need(st.rtt)
}

// finish completes the analysis at the end of the stream.
func (st *streamer) finish() (Analysis, error) {
	a, cs, err := begin(st.source, st.meta, st.warnings, st.opt)
	if err != nil {
		return Analysis{}, err
	}
	if st.bad != "" {
		return Analysis{}, errNotStreamable{st.bad}
	}
	m, _ := givenMigration(st.finder.result(st.nEvents), st.opt)
	if !st.committed {
		if !m.Found {
			a.setMigration(st.finder.result(st.nEvents), st.opt)
			return a, nil
		}
		st.commit(m)
	}
	if !reflect.DeepEqual(m, st.m) {
		return Analysis{}, errNotStreamable{"the migration changed after the one pass settled on it"}
	}
	if !st.scopeDone {
		st.finishScope()
	}
	if st.bad != "" {
		return Analysis{}, errNotStreamable{st.bad}
	}
	// Recompute what the one pass assumed, with everything now known.
	a.setMigration(st.finder.result(st.nEvents), st.opt)
	in, startIdx := a.classifyScope(st.scope, st.finder.pv, cs, st.meta.PathIDs, st.anySample, st.opt)
	if startIdx != st.startIdx || !reflect.DeepEqual(in, st.in) || !reflect.DeepEqual(cs, st.cs) || st.meta.PathIDs != st.pathIDsUse {
		return Analysis{}, errNotStreamable{"the RTT attribution's start changed after the one pass began it"}
	}
	a.RTT = st.rtt.machine().result(&st.acks)
	if st.acks.bad != "" {
		return Analysis{}, errNotStreamable{st.acks.bad}
	}
	a.answer(cs)
	return a, nil
}

// errNotStreamable says why a trace must be analyzed in memory.
type errNotStreamable struct{ why string }

func (e errNotStreamable) Error() string { return "not analyzable in one pass: " + e.why }

// streamAcks keeps the ACK and send records the packet-number evidence
// reads: the recent ones until the attribution has its first sample, then
// those up to that sample.
type streamAcks struct {
	acks  []ackRec
	sends []sendRec
	// Evicted: the latest evicted ACK and the range of evicted packet
	// numbers, to tell "not logged" from "no longer kept".
	evAckT         int64
	evAck          bool
	evPNLo, evPNHi int64
	evSend         bool
	frozen         bool
	frozenT        int64
	droppedAfter   bool
	bad            string
	evictCountdown int
}

type ackRec struct{ t, largest int64 }
type sendRec struct{ t, pn int64 }

func (k *streamAcks) add(e timeline.Event, horizon int64) {
	switch e.Kind {
	case timeline.PacketsAcked:
		if len(e.AckRanges) == 0 {
			return
		}
		if k.frozen && e.TimeUS > k.frozenT {
			k.droppedAfter = true
			return
		}
		largest := int64(math.MinInt64)
		for _, rg := range e.AckRanges {
			largest = max(largest, rg.Last)
		}
		k.acks = append(k.acks, ackRec{e.TimeUS, largest})
	case timeline.PacketSent:
		if k.frozen && e.TimeUS > k.frozenT {
			k.droppedAfter = true
			return
		}
		k.sends = append(k.sends, sendRec{e.TimeUS, e.PacketNumber})
	default:
		return
	}
	if k.frozen {
		return
	}
	// Evict in batches: sliding the slices on every event would cost more
	// than the parse.
	k.evictCountdown--
	if k.evictCountdown > 0 {
		return
	}
	k.evictCountdown = 4096
	t := e.TimeUS - horizon
	n := 0
	for n < len(k.acks) && k.acks[n].t < t {
		k.evAckT, k.evAck = max(k.evAckT, k.acks[n].t), true
		n++
	}
	k.acks = k.acks[:copy(k.acks, k.acks[n:])]
	n = 0
	for n < len(k.sends) && k.sends[n].t < t {
		pn := k.sends[n].pn
		if !k.evSend {
			k.evPNLo, k.evPNHi, k.evSend = pn, pn, true
		}
		k.evPNLo, k.evPNHi = min(k.evPNLo, pn), max(k.evPNHi, pn)
		n++
	}
	k.sends = k.sends[:copy(k.sends, k.sends[n:])]
}

// need freezes the records once every series the attribution may be made
// from has its first sample: later records cannot be behind it.
func (k *streamAcks) need(r *rttSplit) {
	if k.frozen || !r.same.haveFirst || (r.other != nil && !r.other.haveFirst) {
		return
	}
	t := r.same.first.TimeUS
	if r.other != nil {
		t = max(t, r.other.first.TimeUS)
	}
	k.frozen, k.frozenT = true, t
}

// ackedPacketBehind is eventAcks' answer from the kept records; when the
// answer may lie in what was not kept, it says so in bad.
func (k *streamAcks) ackedPacketBehind(atUS, lo int64) (pn, sentUS int64, ok bool) {
	if k.frozen && atUS > k.frozenT && k.droppedAfter {
		k.bad = "ACK records after the first sample were not kept"
		return 0, 0, false
	}
	var ack *ackRec
	for i := range k.acks {
		a := &k.acks[i]
		if a.t > atUS {
			break
		}
		if a.t >= lo {
			ack = a
		}
	}
	if ack == nil {
		if k.evAck && k.evAckT >= lo {
			k.bad = "the ACK behind the first sample was no longer kept"
		}
		return 0, 0, false
	}
	found := false
	for _, s := range k.sends {
		if s.t > ack.t {
			break
		}
		if s.pn == ack.largest {
			sentUS, found = s.t, true
		}
	}
	if !found && k.evSend && ack.largest >= k.evPNLo && ack.largest <= k.evPNHi {
		k.bad = fmt.Sprintf("the send of packet %d was no longer kept", ack.largest)
	}
	return ack.largest, sentUS, found
}
