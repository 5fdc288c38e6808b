package discriminator

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/migaudit/migaudit/parsers/timeline"
	"github.com/migaudit/migaudit/parsers/wire"
)

// Q2 live (RFC 9002 §6.2.2, MAY: use the path validation's round trip as
// the new path's initial RTT). The wire gives the validation round trip
// (the vantage's PATH_CHALLENGE on the new path → the PATH_RESPONSE that
// echoes it) and the new path's data round trip (its data packets →
// the ACKs that first acknowledge them); the trace gives the estimator's
// first value after the reset. Only a repetition whose two round trips
// differ at least q2MinRatio-fold can show the difference between a seed
// and the data (the pv-distinct scenario makes them differ).
const (
	q2MinRatio = 2.0
	// q2Tolerance: the estimate "is" a reference within this fraction (or
	// q2SlackUS, the endpoint's own timer and stack latency): the
	// validation round trip, the default and the data round trip are at
	// least 2× apart in a valid repetition.
	q2Tolerance = 0.15
	q2SlackUS   = 2_000
	// The data round trip is the median over the first q2DataSamples ACKs
	// received within q2DataWindow after the validation's PATH_RESPONSE:
	// the round trip of the new path's first data, when a seed would
	// matter, before the sender's own queue builds on it.
	q2DataWindow  = 2 * time.Second
	q2DataSamples = 16
)

// Q2Live is one repetition's live answer to Q2.
type Q2Live struct {
	Answer string `json:"answer"` // YES, NO, UNKNOWN
	// PVRTTUS is the validation round trip on the wire: the PATH_RESPONSE's
	// arrival at the vantage endpoint − its PATH_CHALLENGE's departure.
	PVRTTUS int64 `json:"pv_rtt_us,omitempty"`
	// DataRTTUS is the median data round trip on the new path on the
	// wire (ACK arrival − data packet departure), DataSamples
	// how many ACKs it is the median of.
	DataRTTUS   int64 `json:"data_rtt_us,omitempty"`
	DataSamples int   `json:"data_samples,omitempty"`
	// Distinct: PVRTTUS ≥ 2 × DataRTTUS — the repetition can answer Q2.
	Distinct bool `json:"distinct"`
	// FirstRTTAfterUS is the estimator's first smoothed RTT after the
	// reset (FirstRTTAtUS when logged), FirstSampleUS the latest RTT it
	// carried, PriorUS what the estimator held before that sample (the
	// first value itself when it carried none).
	FirstRTTAfterUS int64 `json:"first_rtt_after_us,omitempty"`
	FirstRTTAtUS    int64 `json:"first_rtt_at_us,omitempty"`
	FirstSampleUS   int64 `json:"first_sample_us,omitempty"`
	PriorUS         int64 `json:"prior_us,omitempty"`
	DefaultUS       int64 `json:"default_us,omitempty"`
	// Challenge and Response are the capture records of the exchange.
	Challenge *PVFrame `json:"challenge,omitempty"`
	Response  *PVFrame `json:"response,omitempty"`
	Detail    string   `json:"detail"`
}

// PVFrame is one PATH_CHALLENGE or PATH_RESPONSE on the wire.
type PVFrame struct {
	Record int    `json:"record"`
	Packet int64  `json:"packet"`
	Path   string `json:"path"`
	Dir    string `json:"dir"`
	Data   string `json:"data"`
	// ArrNS: the datagram entered the link (left its sender); WireNS: it
	// left the link (reached its receiver); HeldNS: the emulator's
	// deliberate extra delay (pv-distinct), 0 otherwise. Unix ns.
	ArrNS  int64 `json:"arr_ns"`
	WireNS int64 `json:"wire_ns"`
	HeldNS int64 `json:"held_ns,omitempty"`
}

// wirePV is what LoadWireEvidence keeps for Q2.
type wirePV struct {
	frames []pvSighting
	// sent: by direction, 1-RTT packet number → its first sighting's path,
	// departure (arrival at the link) and hold.
	sent [2]map[int64]sentSighting
	acks []ackSighting // in capture order
}

type pvSighting struct {
	PVFrame
	dir       wire.Direction
	challenge bool
}

type sentSighting struct {
	path           string
	arrNS, heldNS  int64
	record         int
	whole, decoded bool
}

type ackSighting struct {
	dir             wire.Direction
	path            string
	wireNS, heldNS  int64
	largest         int64
	carrier, record int
}

// addPacket notes one decoded packet's Q2 evidence.
func (q *wirePV) addPacket(p *wire.Packet) {
	if p.Type != wire.OneRTT || p.PN < 0 {
		return
	}
	if q.sent[p.Dir] == nil {
		q.sent[p.Dir] = map[int64]sentSighting{}
	}
	if _, dup := q.sent[p.Dir][p.PN]; !dup {
		arr := p.ArrivalNS
		if arr == 0 {
			arr = p.WireNS
		}
		q.sent[p.Dir][p.PN] = sentSighting{path: p.Path, arrNS: arr, heldNS: p.HeldNS, record: p.Record}
	}
	if p.Fate != "" && p.Fate != "sent" {
		return // dropped: never reached the peer
	}
	for i := range p.Frames {
		f := &p.Frames[i]
		switch f.Type {
		case wire.FramePathChallenge, wire.FramePathResponse:
			arr := p.ArrivalNS
			if arr == 0 {
				arr = p.WireNS
			}
			q.frames = append(q.frames, pvSighting{PVFrame: PVFrame{Record: p.Record, Packet: p.PN, Path: p.Path, Dir: p.Dir.String(),
				Data: fmt.Sprintf("%x", f.Data), ArrNS: arr, WireNS: p.WireNS, HeldNS: p.HeldNS}, dir: p.Dir, challenge: f.Type == wire.FramePathChallenge})
		case wire.FrameAck, wire.FrameAckECN:
			q.acks = append(q.acks, ackSighting{dir: p.Dir, path: p.Path, wireNS: p.WireNS, heldNS: p.HeldNS,
				largest: f.LargestAcked(), carrier: int(p.PN), record: p.Record})
		}
	}
}

// exchange finds the vantage's path validation on the wire: the first
// PATH_RESPONSE towards the vantage that echoes one of its PATH_CHALLENGEs.
func (q *wirePV) exchange(sendDir wire.Direction) (ch, resp *pvSighting, why string) {
	challenges := map[string]*pvSighting{}
	n := 0
	for i := range q.frames {
		f := &q.frames[i]
		if f.challenge && f.dir == sendDir {
			n++
			if _, ok := challenges[f.Data]; !ok {
				challenges[f.Data] = f
			}
		}
	}
	if n == 0 {
		return nil, nil, "no PATH_CHALLENGE from the " + dirSender(sendDir) + " is on the wire (no path validation was captured decrypted)"
	}
	for i := range q.frames {
		f := &q.frames[i]
		if f.challenge || f.dir == sendDir {
			continue
		}
		if c, ok := challenges[f.Data]; ok && f.WireNS > c.ArrNS {
			return c, f, ""
		}
	}
	return nil, nil, fmt.Sprintf("none of the %d PATH_CHALLENGEs from the %s is answered by a PATH_RESPONSE on the wire", n, dirSender(sendDir))
}

// dataRTT is the new path's data round trip on the wire: for the first
// q2DataSamples ACKs towards the sender received within q2DataWindow after fromNS whose
// largest acknowledged packet is newly acknowledged and crossed path
// without being held, ACK arrival − packet departure (the round trip as
// the sender sees it, the peer's ACK delay included: that only makes the
// 2× test harder to pass); the median and the count.
func (q *wirePV) dataRTT(sendDir wire.Direction, path string, fromNS int64) (int64, int) {
	ackDir := wire.C2S
	if sendDir == wire.C2S {
		ackDir = wire.S2C
	}
	var rtts []int64
	largest := int64(math.MinInt64)
	for _, a := range q.acks {
		if a.dir != ackDir {
			continue
		}
		newly := a.largest > largest
		largest = max(largest, a.largest)
		if !newly || a.wireNS < fromNS || a.wireNS > fromNS+int64(q2DataWindow) || a.heldNS != 0 {
			continue
		}
		s, ok := q.sent[sendDir][a.largest]
		if !ok || s.path != path || s.heldNS != 0 {
			continue
		}
		if r := (a.wireNS - s.arrNS) / 1000; r > 0 {
			rtts = append(rtts, r)
			if len(rtts) == q2DataSamples {
				break
			}
		}
	}
	if len(rtts) == 0 {
		return 0, 0
	}
	slices.Sort(rtts)
	return rtts[len(rtts)/2], len(rtts)
}

func dirSender(d wire.Direction) string {
	if d == wire.S2C {
		return "server"
	}
	return "client"
}

// decideQ2 answers Q2 for this trace from the wire and the estimator's
// first value after the reset (samples: from the switch on).
func decideQ2(w *WireEvidence, in rttInput, vantage string, samples []timeline.Sample) *Q2Live {
	q := &Q2Live{Answer: "UNKNOWN", DefaultUS: in.defaultUS}
	if w == nil {
		q.Detail = "no wire evidence (wire.pcapng.gz) beside the trace: the validation round trip is not known"
		return q
	}
	if !w.numbered {
		q.Detail = fmt.Sprintf("%s names no 1-RTT packet (%s): the validation round trip is not known", w.Source, firstNote(w.notes))
		return q
	}
	sendDir := wire.S2C
	if vantage == "client" {
		sendDir = wire.C2S
	}
	ch, resp, why := w.pv.exchange(sendDir)
	if ch == nil {
		q.Detail = fmt.Sprintf("%s: %s", w.Source, why)
		return q
	}
	q.Challenge, q.Response = &ch.PVFrame, &resp.PVFrame
	q.PVRTTUS = (resp.WireNS - ch.ArrNS) / 1000
	q.DataRTTUS, q.DataSamples = w.pv.dataRTT(sendDir, ch.Path, resp.WireNS)
	exch := fmt.Sprintf("validation round trip %s on the wire: PATH_CHALLENGE %s in packet %d (capture record %d, %s%s) → PATH_RESPONSE in packet %d (record %d, %s%s)",
		fmtRTT(q.PVRTTUS), ch.Data, ch.Packet, ch.Record, ch.Path, heldText(ch.HeldNS), resp.Packet, resp.Record, resp.Path, heldText(resp.HeldNS))
	if q.DataSamples == 0 {
		q.Detail = fmt.Sprintf("%s; no data packet the %s sent on %s is acknowledged on the wire within %v after it: the data round trip is not known", exch, dirSender(sendDir), ch.Path, q2DataWindow)
		return q
	}
	exch += fmt.Sprintf("; data round trip on %s %s (median of the first %d ACKs after the PATH_RESPONSE)", ch.Path, fmtRTT(q.DataRTTUS), q.DataSamples)
	q.Distinct = float64(q.PVRTTUS) >= q2MinRatio*float64(q.DataRTTUS)
	if !q.Distinct {
		q.Detail = fmt.Sprintf("not valid for Q2: %s — less than %.0f× apart, so a seed cannot be told from the data (it still counts for Q1/Q3)", exch, q2MinRatio)
		return q
	}
	first, ok := firstEstimate(in, samples)
	if !ok {
		q.Detail = fmt.Sprintf("%s; no smoothed RTT logged after %s: no estimator in the trace", exch, in.startWhy)
		return q
	}
	q.FirstRTTAfterUS, q.FirstRTTAtUS = first.SmoothedRTTUS, first.TimeUS
	e := first.SmoothedRTTUS
	est := fmt.Sprintf("first estimate after %s is %s at %s", in.startWhy, fmtRTT(e), fmtMS(first.TimeUS))
	tol := fmt.Sprintf("tolerance %.0f%% or %s", q2Tolerance*100, fmtDur(q2SlackUS))
	prior, how := e, "the estimate itself"
	hasSample := first.Fields.Has(timeline.FieldLatestRTT) && first.LatestRTTUS > 0
	if hasSample {
		q.FirstSampleUS = first.LatestRTTUS
	}
	// A value that carries a fresh sample is 7/8 of what the estimator
	// held plus 1/8 of the sample; the default exactly is the estimator
	// before any sample (a polled statistic repeats a stale latest RTT).
	if hasSample && !isDefaultRTT(e, in.defaultUS) {
		if abs64(e-first.LatestRTTUS) <= max(firstSampleSlackUS, first.LatestRTTUS/1000) {
			q.Detail = fmt.Sprintf("%s; %s = its first sample %s (RFC 9002 §5.3's first sample replaces whatever the estimator held): the trace logs no estimate between the reset and that sample, so the initial RTT it used is not visible; default %s; %s",
				exch, est, fmtRTT(first.LatestRTTUS), fmtRTT(in.defaultUS), tol)
			return q
		}
		// smoothed = 7/8 prior + 1/8 latest (RFC 9002 §5.3).
		prior = (8*e - first.LatestRTTUS) / 7
		how = fmt.Sprintf("7/8 × prior + 1/8 × its sample %s, so the estimator held %s before it", fmtRTT(first.LatestRTTUS), fmtRTT(prior))
	}
	q.PriorUS = prior
	nearPV, nearDef := q2Near(prior, q.PVRTTUS), isDefaultRTT(prior, in.defaultUS) || q2Near(prior, in.defaultUS)
	nearData := q2Near(prior, q.DataRTTUS)
	switch {
	case nearPV && (nearDef || nearData):
		q.Detail = fmt.Sprintf("%s; %s (%s): within tolerance of the validation round trip and of the %s (%s): ambiguous",
			exch, est, how, map[bool]string{true: "default " + fmtRTT(in.defaultUS), false: "data round trip"}[nearDef], tol)
	case nearPV:
		q.Answer = "YES"
		q.Detail = fmt.Sprintf("%s; %s (%s) = the validation round trip, not the default %s nor the data round trip: seeded from path validation (%s)",
			exch, est, how, fmtRTT(in.defaultUS), tol)
	case nearDef:
		q.Answer = "NO"
		q.Detail = fmt.Sprintf("%s; %s (%s) = the default %s, not the validation round trip: not seeded from path validation (%s)",
			exch, est, how, fmtRTT(in.defaultUS), tol)
	case in.measured > 0 && q2Near(prior, in.measured):
		q.Detail = fmt.Sprintf("%s; %s (%s) = the old path's last estimate %s: no reset of the estimator, so no initial RTT for the new path (%s)",
			exch, est, how, fmtRTT(in.measured), tol)
	case nearData:
		q.Detail = fmt.Sprintf("%s; %s (%s) is the data round trip: the estimator had already measured the new path when the trace first logged it (%s)", exch, est, how, tol)
	default:
		q.Answer = "NO"
		q.Detail = fmt.Sprintf("%s; %s (%s): neither the validation round trip nor the data round trip nor the old path's estimate; the default is %s — not seeded from path validation (%s)",
			exch, est, how, fmtRTT(in.defaultUS), tol)
	}
	return q
}

// firstEstimate is the new path's first smoothed RTT from the switch on.
func firstEstimate(in rttInput, samples []timeline.Sample) (timeline.Sample, bool) {
	for _, s := range samples {
		if s.TimeUS < in.startUS || !reportsSmoothed(s, in.anyFields) {
			continue
		}
		if in.pathIDs && s.PathID == in.oldPath && in.oldPath != "" {
			continue
		}
		return s, true
	}
	return timeline.Sample{}, false
}

func q2Near(v, ref int64) bool {
	return ref > 0 && (abs64(v-ref) <= q2SlackUS || float64(abs64(v-ref)) <= q2Tolerance*float64(ref))
}

func isDefaultRTT(v, def int64) bool { return def > 0 && abs64(v-def) <= defaultToleranceUS }

func heldText(ns int64) string {
	if ns == 0 {
		return ""
	}
	return ", held " + fmtDur(ns/1000) + " by the emulator"
}
