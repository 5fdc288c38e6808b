package discriminator

import (
	"fmt"
	"strings"

	"github.com/migaudit/migaudit/parsers/timeline"
	"github.com/migaudit/migaudit/parsers/wire"
)

// Wire-only pairing: a trace that logs no packet events but polls each
// path's estimator (quiche's per-path statistics) cannot name the ACK
// behind a sample; the wire can. The new path's estimator starts fresh, so
// its first reported smoothed RTT is its first sample (RFC 9002 §5.3:
// smoothed_rtt = latest_rtt). That sample was taken between the poll
// before it and its own poll; the wire holds every ACK the sender received
// then and every packet it acknowledged, with the path each crossed and
// the instants it entered the link and the ACK arrived. An ACK whose
// largest acknowledged packet is newly acknowledged offers that packet as
// the candidate (RFC 9002 §5.1); the sample is the candidate whose round
// trip (ACK arrival − entry into the link; a first sample has no ACK
// delay subtracted) matches it within the trace's resolution. The trace's clock is put on the wire's
// by the migration: the trace sees the new path at the poll after the
// first packet on it reached the sender (up to one poll late), so the
// window is widened by one poll interval on each side.
const (
	// traceRefSlackUS widens the window between two polls when the
	// trace's reference instant is known: its millisecond resolution and
	// the poll's own duration.
	traceRefSlackUS = 2_000
	// How far the wire's round trip (ACK arrival − the packet's entry
	// into the link) may be from the endpoint's sample: the endpoint's
	// own send and receive paths add to one and not the other (the
	// validator's wire tolerance), plus the polled value's resolution
	// (quiche reports milliseconds).
	wireOnlyAbsTolUS     = 2_500
	wireOnlyRelTol       = 0.05
	wireOnlyResolutionUS = 1_000
)

func attributeWireOnly(w *WireEvidence, r *WireRTT, in rttInput, samples []timeline.Sample, sendDir, ackDir wire.Direction, traceRefUS int64) {
	// The new path's first sample: its first smoothed RTT after the
	// switch other than the estimator's default.
	var first *timeline.Sample
	prevT := int64(-1)
	newID := ""
	for i := range samples {
		s := &samples[i]
		if s.TimeUS < in.startUS || s.PathID == in.oldPath || s.SmoothedRTTUS <= 0 {
			continue
		}
		if newID == "" {
			newID = s.PathID
		}
		if s.PathID != newID {
			continue
		}
		if s.SmoothedRTTUS == in.defaultUS {
			prevT = s.TimeUS
			continue
		}
		first = s
		break
	}
	if first == nil {
		r.Reason = "the trace logs no packet events and the new path's estimator reports no sample after " + in.startWhy + ": the wire has nothing to pair"
		return
	}
	poll := int64(10_000)
	if prevT >= 0 {
		poll = max(first.TimeUS-prevT, 1_000)
	} else {
		prevT = first.TimeUS - poll
	}
	// The trace's clock on the wire's: the migration instant is the first
	// packet the sender received on the new path.
	// The old path is the one that carried the sender's first packets.
	var t0, newPathFirst int64
	for p, t := range w.firstOn[sendDir] {
		if t0 == 0 || t < t0 {
			r.OldPath, t0 = p, t
		}
	}
	for p, t := range w.firstOn[ackDir] {
		if p != r.OldPath && (newPathFirst == 0 || t < newPathFirst) {
			newPathFirst = t
		}
	}
	for _, p := range w.paths {
		if p != r.OldPath {
			r.NewPath = p
		}
	}
	if newPathFirst == 0 {
		r.Reason = "the trace logs no packet events, and no packet reached the " + orServer("") + " on a second path in the capture: the wire cannot be put on the trace's clock"
		return
	}
	offsetNS := newPathFirst - in.mig.AtUS*1000
	clock := "the trace's clock put on the wire's by the first packet on the new path"
	fromNS := offsetNS + (prevT-poll)*1000
	toNS := offsetNS + (first.TimeUS+poll)*1000
	if traceRefUS > 0 {
		// The trace states its time 0 on the wall clock the capture
		// uses (to the millisecond): the sample was taken after the poll
		// before it and before its own.
		offsetNS = traceRefUS * 1000
		clock = "the trace's time 0 at its reference_unix_us, ±1 ms"
		fromNS = offsetNS + (prevT-traceRefSlackUS/2)*1000
		toNS = offsetNS + (first.TimeUS+traceRefSlackUS)*1000
	}
	var acked intervals
	// cands: ACKs whose largest packet is newly acknowledged, in arrival
	// order; repeated: those that acknowledge their largest again.
	var cands, repeated []WireSample
	tol := max(wireOnlyAbsTolUS, int64(wireOnlyRelTol*float64(first.SmoothedRTTUS))) + wireOnlyResolutionUS
	for _, a := range w.acks[ackDir] {
		if a.wireNS > toNS {
			break
		}
		// RFC 9002 §5.1: an ACK yields a sample only when its largest
		// acknowledged packet is newly acknowledged; the sample is that
		// packet's (quiche hands every ACK to each path's estimator, and
		// only the one that sent the packet takes it).
		largest := int64(-1)
		for _, rg := range a.ranges {
			largest = max(largest, rg.Largest)
		}
		st, known := w.sent[sendDir][largest]
		newly := known && !acked.contains(largest)
		for _, rg := range a.ranges {
			acked.add(rg.Smallest, rg.Largest)
		}
		if a.wireNS < fromNS || !known || st.arrNS == 0 {
			continue
		}
		// A fresh estimator's first sample is latest_rtt itself, the ACK
		// delay not subtracted (RFC 9002 §5.3).
		raw := (a.wireNS - st.arrNS) / 1000
		c := WireSample{AtUS: first.TimeUS, LatestUS: first.SmoothedRTTUS, AckAtUS: (a.wireNS - offsetNS) / 1000, AckPacket: a.carrier,
			AckDelayUS: a.delayUS, Packet: largest, SentAtUS: (st.arrNS - offsetNS) / 1000, Path: st.path, WireNS: st.wireNS, Record: st.record,
			ErrUS: abs64(raw - first.SmoothedRTTUS), RepeatedAck: !newly}
		if newly {
			cands = append(cands, c)
		} else {
			repeated = append(repeated, c)
		}
	}
	r.Samples = 1
	window := fmt.Sprintf("the ACKs the %s received from %s to %s (from the poll before the new path's first sample to its own; %s)",
		orServer(""), fmtMS((fromNS-offsetNS)/1000), fmtMS((toNS-offsetNS)/1000), clock)
	// The first sample is the first ACK in the window that feeds the new
	// path's estimator. If old-path packets fed it, that is the first
	// candidate of any path; if not, the first on the new path. Which one
	// matches the value reported decides.
	var firstAny, firstNew *WireSample
	for i := range cands {
		if firstAny == nil {
			firstAny = &cands[i]
		}
		if firstNew == nil && cands[i].Path == r.NewPath {
			firstNew = &cands[i]
		}
	}
	fits := func(c *WireSample) bool { return c != nil && c.ErrUS <= tol }
	list := func() string {
		var parts []string
		for _, c := range cands {
			parts = append(parts, fmt.Sprintf("packet %d on %s: %s", c.Packet, c.Path, fmtRTT(c.AckAtUS-c.SentAtUS)))
		}
		if len(parts) == 0 {
			return "none"
		}
		return strings.Join(parts, ", ")
	}
	head := fmt.Sprintf("the trace logs no packet events; the new path's estimator reports its first sample, %s, at %s", fmtRTT(first.SmoothedRTTUS), fmtMS(first.TimeUS))
	switch {
	case fits(firstAny) && firstAny.Path == r.NewPath:
		r.Decides, r.Answer, r.Paired = true, "YES", 1
		r.First, r.Deciding = firstAny, firstAny
		r.Reason = fmt.Sprintf("%s; the first of %s that newly acknowledges its largest packet is of a packet that crossed the new path %s, and its round trip is the sample: %s",
			head, window, r.NewPath, describeWireSample(*firstAny))
	case fits(firstAny) && !fits(firstNew):
		r.Decides, r.Answer, r.Paired, r.OldPathSamples = true, "NO", 1, 1
		r.First, r.Deciding = firstAny, firstAny
		r.Reason = fmt.Sprintf("%s; the first of %s that newly acknowledges its largest packet is of a packet that crossed the old path %s, and its round trip is the sample (the first on the new path would give %s): %s",
			head, window, firstAny.Path, orNone(firstNew), describeWireSample(*firstAny))
	case firstAny != nil && !fits(firstAny) && fits(firstNew):
		r.Decides, r.Answer, r.Paired = true, "YES", 1
		r.First, r.Deciding = firstNew, firstNew
		r.Reason = fmt.Sprintf("%s; among %s, the old path's packet %d acknowledged first would give %s, not the sample; the first on the new path %s gives it: %s",
			head, window, firstAny.Packet, fmtRTT(firstAny.AckAtUS-firstAny.SentAtUS), r.NewPath, describeWireSample(*firstNew))
	case fits(firstAny) && fits(firstNew):
		r.Reason = fmt.Sprintf("%s; among %s, the old path's packet %d and the new path's packet %d both give the sample: the wire cannot tell which fed it",
			head, window, firstAny.Packet, firstNew.Packet)
	default:
		// No ACK that newly acknowledges its largest packet gives the
		// sample. An endpoint may still take it from one that repeats its
		// largest (quiche 0.18 hands a path's estimator an ACK only once
		// the path is in use): the packet is then named by the round trip
		// alone, and decides only when every repeated ACK that fits is of
		// one path.
		var fitNew, fitOld *WireSample
		for i := range repeated {
			c := &repeated[i]
			switch {
			case !fits(c):
			case c.Path == r.NewPath && (fitNew == nil || c.ErrUS < fitNew.ErrUS):
				fitNew = c
			case c.Path != r.NewPath && (fitOld == nil || c.ErrUS < fitOld.ErrUS):
				fitOld = c
			}
		}
		switch {
		case fitNew != nil && fitOld == nil:
			r.Decides, r.Answer, r.Paired = true, "YES", 1
			r.First, r.Deciding = fitNew, fitNew
			r.Reason = fmt.Sprintf("%s; no ACK among %s that newly acknowledges its largest packet gives it (%s), but one repeating its largest does, of a packet that crossed the new path %s, and none of an old-path packet: %s",
				head, window, list(), r.NewPath, describeWireSample(*fitNew))
		case fitOld != nil && fitNew == nil:
			r.Decides, r.Answer, r.Paired, r.OldPathSamples = true, "NO", 1, 1
			r.First, r.Deciding = fitOld, fitOld
			r.Reason = fmt.Sprintf("%s; no ACK among %s that newly acknowledges its largest packet gives it (%s), but one repeating its largest does, of a packet that crossed the old path %s, and none of a new-path packet: %s",
				head, window, list(), fitOld.Path, describeWireSample(*fitOld))
		default:
			r.Reason = fmt.Sprintf("%s; no ACK among %s gives it as the estimator's first sample (round trips of the packets newly acknowledged as largest: %s)", head, window, list())
		}
	}
}

func orNone(c *WireSample) string {
	if c == nil {
		return "no sample"
	}
	return fmtRTT(c.AckAtUS - c.SentAtUS)
}
