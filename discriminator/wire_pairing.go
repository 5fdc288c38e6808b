package discriminator

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/migaudit/migaudit/parsers/timeline"
	"github.com/migaudit/migaudit/parsers/wire"
)

// Pairing window: a sample is produced by an ACK processed at about the
// same instant; formats differ in whether the sample is logged before the
// ACK's packet_received (quic-go) or after it.
const (
	pairWindowUS = 5_000
	// pairToleranceUS (+ pairToleranceFrac of the sample): how far the
	// ACK's timing may be from the sample and still explain it.
	pairToleranceUS   = 1_000
	pairToleranceFrac = 0.02
)

// ackRecord is one received ACK with what the sender knew then.
type ackRecord struct {
	t, carrier, largest int64
	newly               bool // largest was not acknowledged before
	sentT               int64
	haveSent            bool
}

// ackHistory reads the trace's received ACKs in time order, noting for
// each whether its largest packet was newly acknowledged and when that
// packet was sent.
func ackHistory(events []timeline.Event) []ackRecord {
	sent := map[int64]int64{}
	var acked intervals
	var out []ackRecord
	for _, e := range events {
		if !appSpace(e.PacketSpace) {
			continue
		}
		switch e.Kind {
		case timeline.PacketSent:
			sent[e.PacketNumber] = e.TimeUS
		case timeline.PacketsAcked:
			if len(e.AckRanges) == 0 {
				continue
			}
			largest := int64(math.MinInt64)
			for _, r := range e.AckRanges {
				largest = max(largest, r.Last)
			}
			st, ok := sent[largest]
			out = append(out, ackRecord{t: e.TimeUS, carrier: e.PacketNumber, largest: largest, newly: !acked.contains(largest), sentT: st, haveSent: ok})
			for _, r := range e.AckRanges {
				acked.add(min(r.First, r.Last), max(r.First, r.Last))
			}
		}
	}
	return out
}

func appSpace(s string) bool { return s != "initial" && s != "handshake" }

// intervals is a sorted set of disjoint inclusive ranges.
type intervals [][2]int64

func (s intervals) contains(v int64) bool {
	i := sort.Search(len(s), func(i int) bool { return s[i][1] >= v })
	return i < len(s) && s[i][0] <= v
}

func (s *intervals) add(lo, hi int64) {
	a := *s
	i := sort.Search(len(a), func(i int) bool { return a[i][1] >= lo-1 })
	j := i
	for j < len(a) && a[j][0] <= hi+1 {
		lo, hi = min(lo, a[j][0]), max(hi, a[j][1])
		j++
	}
	if i == j {
		a = append(a, [2]int64{})
		copy(a[i+1:], a[i:])
		a[i] = [2]int64{lo, hi}
	} else {
		a[i] = [2]int64{lo, hi}
		a = append(a[:i+1], a[j:]...)
	}
	*s = a
}

// oldPathVotes is how many of the sender's last packets before the
// migration, found on the wire, name the old path by majority.
const oldPathVotes = 32

// attributeWire pairs every RTT sample from the switch to the scope's end
// with the ACK that produced it and answers Q3 from the paths the packets
// crossed. vantage is the trace's ("server" or "client").
func attributeWire(w *WireEvidence, in rttInput, vantage string, samples []timeline.Sample, events []timeline.Event, scopeTo, traceRefUS int64) *WireRTT {
	r := &WireRTT{Source: w.Source, Answer: "UNKNOWN"}
	if !w.numbered {
		r.Reason = fmt.Sprintf("%s names no 1-RTT packet: %s; Q3 rests on values", w.Source, firstNote(w.notes))
		return r
	}
	sendDir, ackDir := wire.S2C, wire.C2S
	if vantage == "client" {
		sendDir, ackDir = wire.C2S, wire.S2C
	}
	// The old path: the one that carried most of the last oldPathVotes
	// packets sent before the migration. Not simply the last one: a sender
	// may answer the new address before the path event that marks the
	// migration in its trace (xquic sends there before it logs its
	// REBINDING path challenge), and that packet crossed the new path.
	sentBefore, voted := 0, 0
	votes := map[string]int{}
	for i := len(events) - 1; i >= 0 && voted < oldPathVotes; i-- {
		e := events[i]
		if e.Kind != timeline.PacketSent || e.TimeUS >= in.mig.AtUS || !appSpace(e.PacketSpace) {
			continue
		}
		sentBefore++
		if s, ok := w.ix.Lookup(sendDir, e.PacketNumber); ok {
			votes[s.Path]++
			voted++
			if votes[s.Path] > votes[r.OldPath] || r.OldPath == "" {
				r.OldPath = s.Path
			}
		}
	}
	switch {
	case sentBefore == 0 && in.pathIDs:
		attributeWireOnly(w, r, in, samples, sendDir, ackDir, traceRefUS)
		return r
	case sentBefore == 0:
		r.Reason = fmt.Sprintf("the trace logs no packet the %s sent before the migration (its format has no per-packet events): the wire cannot be joined to the trace", orServer(vantage))
		return r
	case r.OldPath == "":
		r.Reason = fmt.Sprintf("no packet the %s sent before the migration is on the wire: the old path is not known", orServer(vantage))
		return r
	}
	for _, p := range w.paths {
		if p != r.OldPath {
			r.NewPath = p
		}
	}
	r.Decides = true
	acks := ackHistory(events)
	var firstUnpaired *timeline.Sample
	var unpairedAt []int64
	for i := range samples {
		s := &samples[i]
		if s.TimeUS < in.startUS || s.TimeUS > scopeTo || !s.Fields.Has(timeline.FieldLatestRTT) || s.LatestRTTUS <= 0 {
			continue
		}
		if in.pathIDs && s.PathID == in.oldPath {
			continue // the old path's own estimator
		}
		ws, how := pairSample(s, acks, w, ackDir, sendDir)
		if how == afterCapture {
			r.AfterCapture++
			continue
		}
		r.Samples++
		if how != paired {
			if firstUnpaired == nil {
				firstUnpaired = s
			}
			unpairedAt = append(unpairedAt, s.TimeUS)
			continue
		}
		r.Paired++
		if r.First == nil {
			first := ws
			r.First = &first
		}
		if ws.Path != r.NewPath {
			r.OldPathSamples++
			if r.OldPathSamples == 1 {
				r.Deciding = &ws
			}
		} else if r.Deciding == nil {
			r.Deciding = &ws
		}
	}
	r.Bytes = bytesByPath(w, events, sendDir, in.mig.AtUS, scopeTo)
	switch {
	case r.Samples == 0:
		r.Reason = fmt.Sprintf("the estimator logged no RTT sample (latest RTT) from %s to the end of the scope: whether old-path packets would feed it cannot be seen, on the wire or in the trace", in.startWhy)
	case r.OldPathSamples > 0:
		r.Answer = "NO"
		r.Reason = fmt.Sprintf("%d of the %d RTT samples after %s came from the ACK of a packet that crossed the old path %s on the wire; the first: %s",
			r.OldPathSamples, r.Samples, in.startWhy, r.OldPath, describeWireSample(*r.Deciding))
	case r.Paired < r.Samples && r.Paired > 0 && oldPathAckBound(acks, w, sendDir, r.OldPath, unpairedAt) == "":
		r.Answer = "YES"
		r.Reason = fmt.Sprintf("%d of the %d RTT samples after %s came from ACKs of packets that crossed the new path %s on the wire; the other %d pair with no ACK whose timing explains them (the first at %s, %s), but none can be an old-path sample: no ACK the %s received from %s before to %s after any of them newly acknowledged, as its largest, a packet that crossed the old path %s (an RTT sample is taken only for the largest newly acknowledged packet, RFC 9002 §5.1); the first: %s",
			r.Paired, r.Samples, in.startWhy, r.NewPath, r.Samples-r.Paired, fmtMS(firstUnpaired.TimeUS), fmtRTT(firstUnpaired.LatestRTTUS), orServer(vantage), fmtMS(boundBeforeUS), fmtMS(pairWindowUS), r.OldPath, describeWireSample(*r.Deciding))
	case r.Paired < r.Samples:
		r.Reason = fmt.Sprintf("%d of the %d RTT samples after %s pair with no ACK whose timing explains them (the first at %s, %s); the %d paired came from packets on the new path %s",
			r.Samples-r.Paired, r.Samples, in.startWhy, fmtMS(firstUnpaired.TimeUS), fmtRTT(firstUnpaired.LatestRTTUS), r.Paired, r.NewPath)
		if r.Deciding != nil {
			r.Reason += "; the first: " + describeWireSample(*r.Deciding)
		}
		if why := oldPathAckBound(acks, w, sendDir, r.OldPath, unpairedAt); why != "" {
			r.Reason += "; " + why
		}
	default:
		r.Answer = "YES"
		r.Reason = fmt.Sprintf("all %d RTT samples after %s came from ACKs of packets that crossed the new path %s on the wire; the first: %s",
			r.Samples, in.startWhy, r.NewPath, describeWireSample(*r.Deciding))
	}
	if r.AfterCapture > 0 {
		r.Reason += fmt.Sprintf(" (%d later samples came from packets sent after the capture ends, packet %d: not judged)", r.AfterCapture, w.lastPN[sendDir])
	}
	return r
}

// boundBeforeUS: an endpoint acts on an ACK as it reads it; a sample
// logged more than this after an ACK arrived is not that ACK's (host
// stalls included: the fidelity record's stall bound is 10 ms).
const boundBeforeUS = 20_000

// oldPathAckBound says why samples the pairing left unexplained (logged at
// unpairedAt) might be old-path samples, or "" when none can be: every ACK
// received from boundBeforeUS before such a sample to pairWindowUS after it
// whose largest acknowledged packet was newly acknowledged names a packet
// that crossed another path than old on the wire. A largest packet the
// capture does not hold (a trimmed capture, a lost record) leaves the
// question open.
func oldPathAckBound(acks []ackRecord, w *WireEvidence, sendDir wire.Direction, old string, unpairedAt []int64) string {
	for _, t := range unpairedAt {
		i := sort.Search(len(acks), func(i int) bool { return acks[i].t >= t-boundBeforeUS })
		for ; i < len(acks) && acks[i].t <= t+pairWindowUS; i++ {
			a := acks[i]
			if !a.newly {
				continue
			}
			s, ok := w.ix.Lookup(sendDir, a.largest)
			switch {
			case !ok:
				return fmt.Sprintf("the ACK at %s newly acknowledges packet %d, which is not in the capture: the sample at %s may be its", fmtMS(a.t), a.largest, fmtMS(t))
			case s.Path == old:
				return fmt.Sprintf("the ACK at %s newly acknowledges packet %d, which crossed the old path %s: the sample at %s may be its", fmtMS(a.t), a.largest, old, fmtMS(t))
			}
		}
	}
	return ""
}

// pairSample finds the ACK behind a sample: among the ACKs received
// within pairWindowUS of it (either side: formats log the sample before or
// after the ACK's packet) whose largest packet was newly acknowledged, the
// one whose ACK time − send time − ACK delay is nearest the sample.
func pairSample(s *timeline.Sample, acks []ackRecord, w *WireEvidence, ackDir, sendDir wire.Direction) (WireSample, pairing) {
	lo := sort.Search(len(acks), func(i int) bool { return acks[i].t >= s.TimeUS-pairWindowUS })
	best, bestErr := -1, int64(math.MaxInt64)
	var bestDelay int64
	for i := lo; i < len(acks) && acks[i].t <= s.TimeUS+pairWindowUS; i++ {
		a := acks[i]
		if !a.newly || !a.haveSent {
			continue
		}
		raw := a.t - a.sentT
		delay, haveDelay := w.ackDelay[ackDir][a.carrier]
		e := abs64(raw - s.LatestRTTUS)
		// RFC 9002 §5.3: the ACK delay is subtracted when that leaves the
		// sample at least min_rtt; either may have happened.
		if haveDelay {
			if d := abs64(raw - delay - s.LatestRTTUS); d < e {
				e = d
			}
		}
		if e < bestErr {
			best, bestErr, bestDelay = i, e, delay
		}
	}
	if best < 0 || float64(bestErr) > pairToleranceUS+pairToleranceFrac*float64(s.LatestRTTUS) {
		return WireSample{}, unexplained
	}
	a := acks[best]
	sight, ok := w.ix.Lookup(sendDir, a.largest)
	if !ok {
		if a.largest > w.lastPN[sendDir] {
			return WireSample{}, afterCapture
		}
		return WireSample{}, unexplained
	}
	return WireSample{AtUS: s.TimeUS, LatestUS: s.LatestRTTUS, AckAtUS: a.t, AckPacket: a.carrier, AckDelayUS: bestDelay,
		Packet: a.largest, SentAtUS: a.sentT, Path: sight.Path, WireNS: sight.WireNS, Record: sight.Record, ErrUS: bestErr}, paired
}

// pairing is what pairSample found for a sample.
type pairing uint8

const (
	paired      pairing = iota
	unexplained         // no ACK's timing explains it, or its packet is missing inside the capture
	// afterCapture: an ACK explains it, but its packet was sent after the
	// capture ends (a trimmed capture); such a sample is outside what the
	// wire can say, and old-path packets are acknowledged long before.
	afterCapture
)

func describeWireSample(s WireSample) string {
	largest := "largest newly acknowledged packet"
	if s.RepeatedAck {
		largest = "largest acknowledged packet (acknowledged again)"
	}
	return fmt.Sprintf("%s at %s from the ACK in packet %d received at %s (ACK delay %s), whose %s %d was sent at %s and crossed %s at %s (capture record %d)",
		fmtRTT(s.LatestUS), fmtMS(s.AtUS), s.AckPacket, fmtMS(s.AckAtUS), fmtDur(s.AckDelayUS), largest, s.Packet, fmtMS(s.SentAtUS), s.Path,
		time.Unix(0, s.WireNS).UTC().Format("15:04:05.000000 UTC"), s.Record)
}

func orServer(v string) string {
	if v == "" {
		return "server"
	}
	return v
}

func firstNote(notes []string) string {
	if len(notes) == 0 {
		return "no packet numbers recovered"
	}
	return notes[0]
}

// noAcks stands in for the trace's time-ordered ACK evidence when the
// wire pairs the samples itself.
type noAcks struct{}

func (noAcks) ackedPacketBehind(int64, int64) (int64, int64, bool) { return 0, 0, false }

// applyWire adds the wire's pairing to the RTT attribution.
func (a *Analysis) applyWire(w *WireEvidence, in rttInput, samples []timeline.Sample, events []timeline.Event, traceRefUS int64) {
	wr := attributeWire(w, in, a.Vantage, samples, events, a.ScopeToUS, traceRefUS)
	a.RTT.Wire = wr
	if wr.Decides && wr.OldPathSamples > 0 {
		a.RTT.OldPathPacket, a.RTT.OldPathPacketNumber = true, wr.Deciding.Packet
	}
	a.RTT.Detail += "; wire (" + w.Source + "): " + wr.Reason
	if len(wr.Bytes) > 0 {
		var parts []string
		for _, b := range wr.Bytes {
			p := fmt.Sprintf("%s %d B acknowledged (%d packets)", b.Path, b.AckedBytes, b.AckedPackets)
			if b.LostPackets > 0 {
				p += fmt.Sprintf(", %d B declared lost (%d packets)", b.LostBytes, b.LostPackets)
			}
			parts = append(parts, p)
		}
		a.RTT.Detail += "; after the migration, by the path the packets crossed: " + strings.Join(parts, "; ")
	}
}
