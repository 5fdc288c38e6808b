package validator

// Q2 live (docs/validator-decisions.md, "Q2 live"): every repetition's
// q2 — the path validation's round trip and the new path's data round
// trip on the wire, the estimator's first value after the reset, the
// answer — re-derived from the repetition's capture, key log and trace
// with the validator's own readers. Written apart from the
// discriminator's (discriminator/q2.go); the rule is the same:
//
//   - the validation round trip is the first PATH_RESPONSE towards the
//     trace's endpoint that echoes one of its PATH_CHALLENGEs: the
//     response's arrival (EPB time) − the challenge's entry into the
//     link (arr=);
//   - the data round trip is the median of the first 16 ACKs towards the
//     endpoint arriving within 2 s after that response whose largest
//     acknowledged packet is newly acknowledged, crossed the challenge's
//     path and was not held: ACK arrival − the packet's entry;
//   - the two must be 2× apart, or the repetition does not answer Q2;
//   - the estimator's first smoothed RTT from the reset on is compared,
//     as is or, when it carries a sample, as the value it held before
//     (smoothed = 7/8 prior + 1/8 sample), with the validation round trip
//     (YES) and the default (NO).

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"

	"github.com/tidwall/gjson"
)

const (
	q2MinRatio       = 2.0
	q2Tol            = 0.15
	q2SlackUS        = 2_000
	q2DataWindowNS   = 2_000_000_000
	q2DataACKs       = 16
	q2FigureTolUS    = 50 // the wire's figures: same capture, same ns
	q2DefaultSlackUS = 1_000
)

func init() {
	perImplChecks = append(perImplChecks, check{"q2", checkQ2, "q2"})
}

// q2Reps calls fn for every repetition that carries a q2: the standard
// scenario's and every live_scenarios entry's.
func q2Reps(im gjson.Result, fn func(where string, origin string, rep gjson.Result)) {
	for _, rep := range im.Get("live.repetitions").Array() {
		if rep.Get("q2").Exists() {
			fn(rep.Get("id").String(), im.Get("live.origin").String(), rep)
		}
	}
	for _, sc := range im.Get("live_scenarios").Array() {
		for _, rep := range sc.Get("live.repetitions").Array() {
			if rep.Get("q2").Exists() {
				fn(sc.Get("scenario").String()+"/"+rep.Get("id").String(), sc.Get("live.origin").String(), rep)
			}
		}
	}
}

// wireQ2 is what the capture says of one endpoint's path validation.
type wireQ2 struct {
	challenge, response WireProbe
	pvUS, dataUS        int64
	dataN               int
}

// deriveWireQ2 finds the exchange and the two round trips for the
// endpoint that sends in direction s2c (true: the server).
func deriveWireQ2(m *WireMap, s2c bool) (wireQ2, error) {
	var w wireQ2
	first := map[[8]byte]WireProbe{}
	n := 0
	for _, p := range m.Probes {
		if !p.Response && p.S2C == s2c && p.Delivered() {
			n++
			if _, ok := first[p.Data]; !ok {
				first[p.Data] = p
			}
		}
	}
	who := map[bool]string{true: "server", false: "client"}[s2c]
	if n == 0 {
		return w, fmt.Errorf("no PATH_CHALLENGE from the %s in %s", who, m.Capture)
	}
	found := false
	for _, p := range m.Probes {
		c, ok := first[p.Data]
		if p.Response && p.S2C != s2c && p.Delivered() && ok && p.WireNS > entry(c.WireSighting) {
			w.challenge, w.response, found = c, p, true
			break
		}
	}
	if !found {
		return w, fmt.Errorf("none of the %s's %d PATH_CHALLENGEs is answered in %s", who, n, m.Capture)
	}
	w.pvUS = (w.response.WireNS - entry(w.challenge.WireSighting)) / 1000
	back := dirIndex(!s2c)
	largest := int64(math.MinInt64)
	var rtts []int64
	from := w.response.WireNS
	for _, a := range m.Acks[back] {
		if !a.Delivered() {
			continue
		}
		newly := a.Largest() > largest
		largest = max(largest, a.Largest())
		if !newly || a.WireNS < from || a.WireNS > from+q2DataWindowNS || a.HeldNS != 0 {
			continue
		}
		s, ok := m.First(s2c, a.Largest())
		if !ok || s.Path != w.challenge.Path || s.HeldNS != 0 {
			continue
		}
		if r := (a.WireNS - entry(s)) / 1000; r > 0 {
			rtts = append(rtts, r)
			if len(rtts) == q2DataACKs {
				break
			}
		}
	}
	if len(rtts) > 0 {
		slices.Sort(rtts)
		w.dataUS, w.dataN = rtts[len(rtts)/2], len(rtts)
	}
	return w, nil
}

// entry is when a datagram entered the link (its EPB time when arr= is
// not said).
func entry(s WireSighting) int64 {
	if s.ArrNS != 0 {
		return s.ArrNS
	}
	return s.WireNS
}

var (
	q2ChallengeRE = regexp.MustCompile(`PATH_CHALLENGE ([0-9a-f]{16}) in packet (\d+) \(capture record (\d+), (\w+)`)
	q2ResponseRE  = regexp.MustCompile(`PATH_RESPONSE in packet (\d+) \(record (\d+), (\w+)`)
)

// checkQ2 re-derives every repetition's q2.
func checkQ2(v *Validator, doc, im gjson.Result) (Status, string) {
	var d verdict
	def := defaultRTTConstant(im, -1)
	q2Reps(im, func(id, origin string, rep gjson.Result) {
		q := rep.Get("q2")
		answer, detail := q.Get("answer").String(), q.Get("detail").String()
		trace, err := v.resolve(origin, rep.Get("trace").String())
		if err != nil {
			liveErr(&d, id, err)
			return
		}
		if want := rep.Get("trace_sha256").String(); want != "" {
			if got, err := v.fileSHA(trace); err == nil && got != want {
				d.fail("%s: %s has sha256 %s, the survey says %s", id, rep.Get("trace").String(), got, want)
				return
			}
		}
		m, err := v.wire(wireDir(trace))
		if err != nil {
			if q.Get("pv_rtt_us").Int() == 0 && answer == "UNKNOWN" {
				d.note("%s: q2 UNKNOWN without wire figures (%v)", id, err)
			} else {
				liveErr(&d, id, fmt.Errorf("q2 claims wire figures: %w", err))
			}
			return
		}
		s2c := rep.Get("vantage").String() != "client"
		w, werr := deriveWireQ2(m, s2c)
		if werr != nil {
			if answer != "UNKNOWN" || q.Get("pv_rtt_us").Int() != 0 {
				d.fail("%s: q2 %s with a validation round trip of %d µs, but %v", id, answer, q.Get("pv_rtt_us").Int(), werr)
			} else {
				d.note("%s: q2 UNKNOWN: %v", id, werr)
			}
			return
		}
		bad := false
		figure := func(name string, claimed, derived int64) {
			if absDiff(claimed, derived) > q2FigureTolUS {
				d.fail("%s: q2 %s %d µs, the wire gives %d µs", id, name, claimed, derived)
				bad = true
			}
		}
		figure("pv_rtt_us", q.Get("pv_rtt_us").Int(), w.pvUS)
		if w.dataN > 0 || q.Get("data_rtt_us").Int() != 0 {
			figure("data_rtt_us", q.Get("data_rtt_us").Int(), w.dataUS)
		}
		// The detail names the exchange's packets and records: they must be
		// the capture's.
		if mm := q2ChallengeRE.FindStringSubmatch(detail); mm == nil {
			d.fail("%s: q2 detail does not name the PATH_CHALLENGE (packet, capture record, path)", id)
			bad = true
		} else if hex := fmt.Sprintf("%x", w.challenge.Data); mm[1] != hex || atoi64(mm[2]) != w.challenge.Carrier || atoi64(mm[3]) != int64(w.challenge.Record) || mm[4] != w.challenge.Path {
			d.fail("%s: q2 detail names PATH_CHALLENGE %s in packet %s (record %s, %s); the capture has %s in packet %d (record %d, %s)",
				id, mm[1], mm[2], mm[3], mm[4], hex, w.challenge.Carrier, w.challenge.Record, w.challenge.Path)
			bad = true
		}
		if mm := q2ResponseRE.FindStringSubmatch(detail); mm == nil {
			d.fail("%s: q2 detail does not name the PATH_RESPONSE (packet, record, path)", id)
			bad = true
		} else if atoi64(mm[1]) != w.response.Carrier || atoi64(mm[2]) != int64(w.response.Record) || mm[3] != w.response.Path {
			d.fail("%s: q2 detail names the PATH_RESPONSE in packet %s (record %s, %s); the capture has it in packet %d (record %d, %s)",
				id, mm[1], mm[2], mm[3], w.response.Carrier, w.response.Record, w.response.Path)
			bad = true
		}
		if bad {
			return
		}
		distinct := w.dataN > 0 && float64(w.pvUS) >= q2MinRatio*float64(w.dataUS)
		if !distinct {
			if answer != "UNKNOWN" {
				d.fail("%s: q2 %s, but the validation round trip %s ms is not %.0f× the data round trip %s ms on the wire: the repetition cannot answer Q2",
					id, answer, fms(w.pvUS), q2MinRatio, fms(w.dataUS))
			} else {
				d.note("%s: q2 UNKNOWN, round trips %s/%s ms not %.0f× apart", id, fms(w.pvUS), fms(w.dataUS), q2MinRatio)
			}
			return
		}
		f, err := v.trace(trace)
		if err != nil {
			liveErr(&d, id, err)
			return
		}
		firsts := q2FirstEstimates(f, rep)
		claimed := q.Get("first_rtt_after_us").Int()
		if len(firsts) == 0 {
			if claimed != 0 || answer != "UNKNOWN" {
				d.fail("%s: q2 %s from a first estimate of %d µs, but the trace has no smoothed RTT after the reset", id, answer, claimed)
			} else {
				d.note("%s: q2 UNKNOWN, no estimator after the reset", id)
			}
			return
		}
		var first sample
		okFirst := false
		for _, s := range firsts {
			if absDiff(s.SRTT, claimed) <= 1 {
				first, okFirst = s, true
				break
			}
		}
		if !okFirst {
			var vals []int64
			for _, s := range firsts {
				vals = append(vals, s.SRTT)
			}
			d.fail("%s: q2 first estimate after the reset %d µs is not the trace's (%v µs)", id, claimed, vals)
			return
		}
		want, why := q2Decide(first, w.pvUS, w.dataUS, def, lastSRTTBefore(f, rep.Get("migration.at_us").Int()))
		if want != answer {
			d.fail("%s: q2 %s, but %s → %s", id, answer, why, want)
			return
		}
		d.note("%s: q2 %s (validation %s ms, data %s ms on the wire; %s)", id, answer, fms(w.pvUS), fms(w.dataUS), why)
	})
	return d.result()
}

func atoi64(s string) int64 { n, _ := strconv.ParseInt(s, 10, 64); return n }

// q2FirstEstimates are the candidates for the estimator's first smoothed
// RTT from the reset on: the first sample at or after the first RESET
// event (else the migration), over all paths and, with path ids, on a
// path the connection did not use before the migration.
func q2FirstEstimates(f *traceFacts, rep gjson.Result) []sample {
	at := rep.Get("migration.at_us").Int()
	start := at
	for _, e := range rep.Get("events").Array() {
		if e.Get("kind").String() == "RESET" {
			start = e.Get("at_us").Int()
			break
		}
	}
	before := map[string]bool{}
	var out []sample
	gotAll, gotNew := false, false
	for _, s := range f.Samples {
		if s.SRTT <= 0 {
			continue
		}
		if s.T < at {
			before[s.Path] = true
		}
		if s.T < start {
			continue
		}
		if !gotAll {
			gotAll = true
			out = append(out, s)
		}
		if f.PathIDs && !gotNew && !before[s.Path] {
			gotNew = true
			out = append(out, s)
		}
	}
	return out
}

// lastSRTTBefore is the last smoothed RTT the trace reports before at.
func lastSRTTBefore(f *traceFacts, at int64) int64 {
	var last int64
	for _, s := range f.Samples {
		if s.T < at && s.SRTT > 0 {
			last = s.SRTT
		}
	}
	return last
}

// q2Decide answers Q2 from the first estimate s (its latest RTT when it
// carries one), the wire's round trips, the default and the old path's
// last estimate.
func q2Decide(s sample, pvUS, dataUS, def, old int64) (string, string) {
	e := s.SRTT
	prior := e
	isDef := def > 0 && absDiff(e, def) <= q2DefaultSlackUS
	if s.Latest > 0 && !isDef {
		if absDiff(e, s.Latest) <= max(2, s.Latest/1000) {
			return "UNKNOWN", fmt.Sprintf("first estimate %s ms is its own first sample: the initial RTT is not in the trace", fms(e))
		}
		prior = (8*e - s.Latest) / 7
	}
	near := func(ref int64) bool {
		return ref > 0 && (absDiff(prior, ref) <= q2SlackUS || float64(absDiff(prior, ref)) <= q2Tol*float64(ref))
	}
	nearPV, nearDef, nearData := near(pvUS), def > 0 && (absDiff(prior, def) <= q2DefaultSlackUS || near(def)), near(dataUS)
	held := fmt.Sprintf("the estimator held %s ms", fms(prior))
	switch {
	case nearPV && (nearDef || nearData):
		return "UNKNOWN", held + ", near the validation round trip and another reference"
	case nearPV:
		return "YES", held + " = the validation round trip"
	case nearDef:
		return "NO", held + " = the default"
	case old > 0 && near(old):
		return "UNKNOWN", held + " = the old path's estimate (no reset)"
	case nearData:
		return "UNKNOWN", held + " = the data round trip"
	}
	return "NO", held + ": neither the validation round trip nor the default"
}
