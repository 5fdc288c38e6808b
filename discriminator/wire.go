package discriminator

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/migaudit/migaudit/parsers/timeline"
	"github.com/migaudit/migaudit/parsers/wire"
)

// Names of a repetition's wire evidence beside its traces (the wire
// contract of issue #31).
const (
	WireCaptureName = "wire.pcapng.gz"
	KeyLogName      = "keylog.txt"
)

// WireEvidence is a repetition's capture, read with its key log: which
// path every packet crossed, and the ACK delay each ACK frame carried.
type WireEvidence struct {
	// Source names the files, for the detail.
	Source string
	ix     *wire.Index
	paths  []string
	// ackDelay: packet number of a packet carrying an ACK frame, by
	// direction → the frame's ACK delay (µs).
	ackDelay [2]map[int64]int64
	// numbered is false when no 1-RTT packet number could be read (no
	// key log): the wire cannot name the packets.
	numbered bool
	// lastPN is, by direction, the largest 1-RTT packet number the capture
	// holds: a packet above it was sent after the capture ends (committed
	// evidence keeps a window around the migration, docs/wire.md).
	lastPN [2]int64
	notes  []string
	// pv: the path-validation frames, the packets' departures and the
	// ACKs, for Q2 (q2.go).
	pv wirePV
	// sent: by direction, packet number → where and when it entered the
	// link; acks: by direction, the ACK frames in capture order. The
	// wire-only pairing reads them (traces without packet events).
	sent [2]map[int64]wireSent
	acks [2][]wireAck
	// firstOn: by direction and path, the first 1-RTT packet's wire time.
	firstOn [2]map[string]int64
}

type wireSent struct {
	path          string
	arrNS, wireNS int64
	record        int
	delivered     bool
}

type wireAck struct {
	wireNS  int64
	carrier int64
	record  int
	path    string
	delayUS int64
	ranges  []wire.AckRange
}

// LoadWireEvidence reads a capture and its key log (keylogPath may be
// empty: the capture is then read without decryption and cannot name
// 1-RTT packets).
func LoadWireEvidence(capturePath, keylogPath string) (*WireEvidence, error) {
	c, err := wire.ReadFiles(capturePath, keylogPath)
	if err != nil {
		return nil, err
	}
	w := &WireEvidence{ix: c.Index(), paths: c.Paths, notes: c.Notes, ackDelay: [2]map[int64]int64{{}, {}},
		sent: [2]map[int64]wireSent{{}, {}}, firstOn: [2]map[string]int64{{}, {}}}
	w.Source = filepath.Base(capturePath)
	if keylogPath != "" {
		w.Source += " + " + filepath.Base(keylogPath)
	}
	for i := range c.Packets {
		p := &c.Packets[i]
		w.pv.addPacket(p)
		if p.Type == wire.OneRTT && p.PN >= 0 {
			w.numbered = true
			w.lastPN[p.Dir] = max(w.lastPN[p.Dir], p.PN)
			if _, seen := w.sent[p.Dir][p.PN]; !seen {
				w.sent[p.Dir][p.PN] = wireSent{path: p.Path, arrNS: p.ArrivalNS, wireNS: p.WireNS, record: p.Record, delivered: p.Fate == "" || p.Fate == "sent"}
			}
			if _, seen := w.firstOn[p.Dir][p.Path]; !seen {
				w.firstOn[p.Dir][p.Path] = p.WireNS
			}
		}
		for j := range p.Frames {
			f := &p.Frames[j]
			if (f.Type == wire.FrameAck || f.Type == wire.FrameAckECN) && p.Type == wire.OneRTT {
				w.ackDelay[p.Dir][p.PN] = f.AckDelayUS
				if p.Fate == "" || p.Fate == "sent" {
					w.acks[p.Dir] = append(w.acks[p.Dir], wireAck{wireNS: p.WireNS, carrier: p.PN, record: p.Record, path: p.Path, delayUS: f.AckDelayUS, ranges: f.Ranges})
				}
			}
		}
	}
	return w, nil
}

// WireBeside finds the wire evidence beside a trace: the capture's path
// ("" when there is none) and the key log's ("" when there is none). A
// trace in a subdirectory of its repetition (ngtcp2's and picoquic's
// qlog-server/) finds the repetition's capture one level up.
func WireBeside(tracePath string) (capturePath, keylogPath string) {
	dir := filepath.Dir(tracePath)
	for range 2 {
		c := filepath.Join(dir, WireCaptureName)
		if _, err := os.Stat(c); err == nil {
			k := filepath.Join(dir, KeyLogName)
			if _, err := os.Stat(k); err != nil {
				k = ""
			}
			return c, k
		}
		dir = filepath.Dir(dir)
	}
	return "", ""
}

// WireRTT is the packet evidence behind the post-migration RTT samples:
// each sample paired with the ACK that produced it, that ACK's largest
// newly acknowledged packet, and the path the packet crossed on the wire.
type WireRTT struct {
	Source  string `json:"source"`
	OldPath string `json:"old_path,omitempty"`
	NewPath string `json:"new_path,omitempty"`
	// Samples counts the post-migration RTT samples considered; Paired
	// those an ACK explains; OldPathSamples those whose packet crossed the
	// old path.
	Samples        int `json:"samples"`
	Paired         int `json:"paired"`
	OldPathSamples int `json:"old_path_samples"`
	// AfterCapture counts the samples whose packet was sent after the
	// capture ends (a capture trimmed to a window): not judged.
	AfterCapture int `json:"after_capture,omitempty"`
	// Deciding is the sample the answer rests on: the first from an
	// old-path packet, else the first sample.
	Deciding *WireSample `json:"deciding,omitempty"`
	// First is the first post-migration sample paired with its packet.
	First *WireSample `json:"first,omitempty"`
	// Bytes is the sender's congestion accounting from the migration to
	// the end of the scope by the path each packet crossed on the wire:
	// bytes newly acknowledged and declared lost (where the trace logs
	// losses). Empty when the trace logs no per-packet events.
	Bytes []PathBytes `json:"bytes_by_path,omitempty"`
	// Decides is false when the wire cannot name the packets (no key log,
	// no pre-migration packet on the wire): Q3 then rests on values.
	Decides bool   `json:"decides"`
	Answer  string `json:"answer"`
	Reason  string `json:"reason"`
}

// WireSample is one RTT sample and the packet behind it.
type WireSample struct {
	AtUS       int64  `json:"at_us"`
	LatestUS   int64  `json:"latest_rtt_us"`
	AckAtUS    int64  `json:"ack_at_us"`
	AckPacket  int64  `json:"ack_packet"` // the packet that carried the ACK
	AckDelayUS int64  `json:"ack_delay_us"`
	Packet     int64  `json:"packet"` // largest newly acknowledged
	SentAtUS   int64  `json:"sent_at_us"`
	Path       string `json:"path"`
	WireNS     int64  `json:"wire_ns"`
	Record     int    `json:"record"`
	// ErrUS is how far (ACK time − send time − ACK delay) is from the
	// sample: what the pairing minimised.
	ErrUS int64 `json:"err_us"`
	// RepeatedAck: the ACK behind the sample acknowledged its largest
	// packet again (an earlier ACK had), so the round trip is not the
	// one the first ACK of the packet gives.
	RepeatedAck bool `json:"repeated_ack,omitempty"`
}

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

// PathBytes is the sender's accounting on one path after the migration.
type PathBytes struct {
	// Path is the capture interface the packets crossed, or "not on the
	// wire" for packets the capture does not hold (sent after a trimmed
	// capture ends, or lost before the link).
	Path         string `json:"path"`
	AckedBytes   int64  `json:"acked_bytes"`
	AckedPackets int    `json:"acked_packets"`
	LostBytes    int64  `json:"lost_bytes,omitempty"`
	LostPackets  int    `json:"lost_packets,omitempty"`
}

// NotOnWire labels packets the capture does not hold in PathBytes.
const NotOnWire = "not on the wire"

// bytesByPath sums, from the migration to the end of the scope, the sizes
// (as the trace logged them when sent) of the sender's packets newly
// acknowledged and declared lost, by the path each crossed on the wire.
func bytesByPath(w *WireEvidence, events []timeline.Event, sendDir wire.Direction, from, to int64) []PathBytes {
	size := map[int64]int64{}
	var acked intervals
	by := map[string]*PathBytes{}
	var order []string
	get := func(pn int64) *PathBytes {
		path := NotOnWire
		if s, ok := w.ix.Lookup(sendDir, pn); ok {
			path = s.Path
		}
		if by[path] == nil {
			by[path] = &PathBytes{Path: path}
			order = append(order, path)
		}
		return by[path]
	}
	seen := false
	for _, e := range events {
		if !appSpace(e.PacketSpace) || e.TimeUS > to {
			continue
		}
		switch e.Kind {
		case timeline.PacketSent:
			size[e.PacketNumber] = e.SizeBytes
		case timeline.PacketsAcked:
			for _, rg := range e.AckRanges {
				lo, hi := min(rg.First, rg.Last), max(rg.First, rg.Last)
				if e.TimeUS >= from {
					for pn := lo; pn <= hi && hi-lo < 1<<20; pn++ {
						if _, sent := size[pn]; !sent || acked.contains(pn) {
							continue
						}
						b := get(pn)
						b.AckedBytes += size[pn]
						b.AckedPackets++
						seen = true
					}
				}
				acked.add(lo, hi)
			}
		case timeline.PacketLost:
			if e.TimeUS < from || e.PacketNumber < 0 {
				continue
			}
			b := get(e.PacketNumber)
			b.LostBytes += size[e.PacketNumber]
			b.LostPackets++
			seen = true
		}
	}
	if !seen {
		return nil
	}
	sort.Strings(order)
	out := make([]PathBytes, 0, len(order))
	for _, p := range order {
		out = append(out, *by[p])
	}
	return out
}

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

// TraceReferenceUnixUS is a timeline CSV's time 0 on the wall clock, from
// its sibling <stem>.meta.json (reference_unix_us, which quiche's harness
// writes); 0 when the trace states none.
func TraceReferenceUnixUS(tracePath string) int64 {
	base := filepath.Base(tracePath)
	stem, _, ok := strings.Cut(base, ".csv")
	if !ok {
		return 0
	}
	b, err := os.ReadFile(filepath.Join(filepath.Dir(tracePath), stem+".meta.json"))
	if err != nil {
		return 0
	}
	var m struct {
		Ref int64 `json:"reference_unix_us"`
	}
	if json.Unmarshal(b, &m) != nil {
		return 0
	}
	return m.Ref
}

func exists(p string) bool { _, err := os.Stat(p); return err == nil }
