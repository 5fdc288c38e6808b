package fidelity

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// RuleName names the rule below in every manifest. The first rule
// (no name; fixed limits: every packet around an RTT sample within 1 ms, no
// stall there over 2 ms, at most 1 % or 2 packets per direction over 1 ms)
// was stricter everywhere the verdict is concerned; manifests judged by it
// are re-judged by this one from their raw figures. The second
// ("verdict-sensitivity/2") had no exact order record: a packet over its
// cross-path limit spoiled the repetition whether or not it changed the
// order of the two paths' packets; its manifests carry no order figures
// and are judged as it judged them.
const RuleName = "verdict-sensitivity/3"

// Rule is what a repetition's verdict window must satisfy: the
// emulation may be imperfect, but never in a way that could have changed
// the repetition's verdict. The values are recorded in every manifest; the
// validator holds its own copy and refuses a manifest whose rule is looser.
//
// What lateness and stalls can do to the verdict. Every path direction is
// FIFO (a late packet delays every packet behind it, never overtakes or is
// overtaken by one on the same path), so within a path a late packet
// cannot make a packet look lost: RFC 9002 declares a packet lost only
// when a later one is acknowledged first (3 packets, or 9/8 RTT, later).
// What lateness does is (1) inflate the RTT samples taken across it, (2)
// shift the ACK clock, and (3), while both paths carry traffic in one
// direction, let a packet on one path be overtaken by a later one on the
// other, which can look like a loss. The window's classification (reset:
// exactly the initial window; loss backoff: β × the previous window; loss
// floor: the minimum window) reads exact window values, which timing does
// not change, so (2) and (3) matter only where they could create or remove
// a loss: that is what the stall and cross-path limits bound, and (1) is
// what the RTT-sample rule bounds.
type Rule struct {
	Name string `json:"name"`
	// LateToleranceNS: a packet written later than this after its
	// scheduled time counts as "late" in the recorded figures
	// (late_over_tolerance, late_fraction), which are kept for every
	// direction but not judged by a share: the schedule is absolute (each
	// packet is due at its arrival plus the path's delay, whatever its
	// predecessors did), so lateness does not accumulate, and a share of
	// late packets changes nothing a single one of them could not. It is
	// also the cross-path limit on the slower path (below).
	LateToleranceNS int64 `json:"late_tolerance_ns"`
	// MaxStallNS: no host stall in the reset window may be longer. The
	// reset window runs from the scope's start (before path validation)
	// to two new-path RTTs after the first window decrease that follows
	// the migration (the end of the scope when there is none): the
	// exchange the Q1 verdict reads. A stall freezes the endpoints and
	// cannot make a packet look lost (FIFO, above), and a PTO alone does
	// not touch the window; what a stall does is shift the ACK clock. Half
	// the shortest path RTT (10 ms at 20 ms) keeps that shift below the
	// difference between the paths the verdict tells apart, and far below
	// the 3 PTOs of persistent congestion, the one way a pause collapses a
	// window.
	MaxStallNS int64 `json:"max_stall_ns"`
	// ResetWindowRTTs is how many new-path RTTs after the first decrease
	// the reset window extends.
	ResetWindowRTTs int `json:"reset_window_rtts"`
	// OneWayANS / OneWayBNS are the paths' configured one-way delays
	// (half their RTTs), from which the cross-path limits follow.
	OneWayANS int64 `json:"one_way_a_ns"`
	OneWayBNS int64 `json:"one_way_b_ns"`
	// FastPathReorderNS / SlowPathReorderNS / PacketThreshold: while
	// the other path carries traffic in the same direction (CrossPath
	// spans), a late packet could be overtaken by one sent after it on
	// the other path, which is how lateness could make a packet look
	// lost. With d the one-way delays' difference (10 ms for 20 and
	// 40 ms paths) and RFC 9002's thresholds (a packet is lost once 3
	// later ones, or any later one 9/8 RTT after it, are acknowledged):
	//   - faster path: a packet sent before one on the slower path still
	//     arrives first unless it is more than d late, so up to d (capped
	//     at MaxStallNS for the ACK clock) it cannot be overtaken at all;
	//   - slower path: the faster path's later packets overtake it by d
	//     already; lateness ℓ lengthens that to d + ℓ. The time threshold
	//     is not reached while d + ℓ < 9/8 of the shortest RTT (22.5 ms:
	//     ℓ < 12.5 ms, capped at MaxStallNS). The packet threshold is not
	//     changed by ℓ when the faster path carried at most 2 packets in
	//     the span (never 3 overtakers), or at least 3 per d on average
	//     (3 overtakers already without ℓ); between the two the limit is
	//     the 1 ms tolerance (at most 2 packet times at 20 Mbit/s).
	FastPathReorderNS int64 `json:"fast_path_reorder_ns"`
	SlowPathReorderNS int64 `json:"slow_path_reorder_ns"`
	PacketThreshold   int   `json:"packet_threshold"`
	// CrossOrder: the limits above estimate from a span's packet count
	// whether a late packet could have been overtaken; the emulator's own
	// record says whether it was. A packet over its limit spoils nothing
	// when the record (Order, measured over the same span) shows that no
	// packet of this direction over the limit was written in another
	// order than scheduled against the other path's packets, and it
	// stays within OrderedLimit (RFC 9002's time threshold and the ACK
	// clock, which do not need a reordering).
	CrossOrder string `json:"cross_order,omitempty"`
	// SampleRule: lateness and stalls only inflate an RTT sample; with L
	// every host stall around the sample (from one sample RTT + 5 ms
	// before it to it) plus the worst lateness of a packet on an up
	// direction and on a down direction that no stall explains
	// (SampleInflation), the sample's attribution must be the same for
	// every value from the measured one down to the measured one minus L.
	// Otherwise the host could have decided the attribution.
	SampleRule string `json:"sample_rule"`
	// MinSentinelShare: the sentinel must have run through the window
	// (at least this share of its 1 ms wake-ups); otherwise the absence of
	// stalls proves nothing.
	MinSentinelShare float64 `json:"min_sentinel_share"`
}

// DefaultRule is the rule for paths A and B of these RTTs.
func DefaultRule(rttA, rttB time.Duration) Rule {
	minRTT := min(rttA, rttB)
	if minRTT <= 0 {
		minRTT = max(rttA, rttB)
	}
	stall := int64(minRTT / 2)
	if stall <= 0 {
		stall = int64(10 * time.Millisecond)
	}
	tol := int64(time.Millisecond)
	diff := int64(rttA-rttB) / 2
	if diff < 0 {
		diff = -diff
	}
	timeThreshold := int64(minRTT) * 9 / 8
	return Rule{
		Name:              RuleName,
		LateToleranceNS:   tol,
		MaxStallNS:        stall,
		ResetWindowRTTs:   2,
		OneWayANS:         int64(rttA / 2),
		OneWayBNS:         int64(rttB / 2),
		FastPathReorderNS: max(tol, min(stall, diff)),
		SlowPathReorderNS: max(tol, min(stall, timeThreshold-diff)),
		PacketThreshold:   3,
		CrossOrder:        "a packet over its cross-path limit is held only to the path's time-threshold limit when the emulator's record shows no packet of its direction over the limit written out of its scheduled order against the other path's packets",
		SampleRule:        "the attribution of the measured sample equals that of every value down to the sample minus (host stalls + worst up and down lateness no stall explains) around it",
		MinSentinelShare:  0.5,
	}
}

// ReorderLimit is the cross-path limit for a packet on path p ("A"/"B")
// written in a span of spanNS in which the other path wrote otherPackets
// in the same direction (spanNS 0: the density there is unknown).
func (r Rule) ReorderLimit(p string, otherPackets int, spanNS int64) int64 {
	own, other := r.OneWayANS, r.OneWayBNS
	if p == "B" {
		own, other = other, own
	}
	if d := other - own; d > r.LateToleranceNS {
		return r.FastPathReorderNS
	}
	d := own - other
	if otherPackets < r.PacketThreshold || (d > 0 && spanNS > 0 && int64(otherPackets)*d >= int64(r.PacketThreshold)*spanNS) {
		return r.SlowPathReorderNS
	}
	return r.LateToleranceNS
}

// OrderedLimit is the cross-path limit for a packet on path p whose
// order against the other path's packets the emulator's record shows
// unchanged: no reordering, so only timing is left, RFC 9002's time
// threshold on the slower path and the one-way difference on the faster
// (both capped at MaxStallNS for the ACK clock): ReorderLimit's largest.
func (r Rule) OrderedLimit(p string) int64 { return r.ReorderLimit(p, 0, 0) }

// CrossPath is one direction's lateness while the other path carried
// traffic in the same direction: the span (CrossPathSpan) in which a
// packet written on this path could have been overtaken by one sent after
// it on the other.
type CrossPath struct {
	Dir          string `json:"dir"`
	Other        string `json:"other"`
	FromNS       int64  `json:"from_ns"`
	ToNS         int64  `json:"to_ns"`
	Packets      int    `json:"packets"`
	OtherPackets int    `json:"other_packets"`
	LateMaxNS    int64  `json:"late_max_ns"`
	LateOver     int    `json:"late_over_tolerance"`
	LimitNS      int64  `json:"limit_ns"`
	Measured     bool   `json:"measured"` // false: the whole window's figures stand in
	// OrderChecked: the emulator's order record of the span (Order) is
	// below; OrderChangedPairs and OrderLateMaxNS are its figures, and
	// OrderLimitNS what a packet that kept its order is held to.
	OrderChecked      bool  `json:"order_checked,omitempty"`
	OrderChangedPairs int   `json:"order_changed_pairs,omitempty"`
	OrderPackets      int   `json:"order_packets,omitempty"`
	OrderLateMaxNS    int64 `json:"order_late_max_ns,omitempty"`
	OrderLimitNS      int64 `json:"order_limit_ns,omitempty"`
}

// CrossProblem judges one direction's cross-path figures: "" when no
// packet's lateness could have made one look lost.
func CrossProblem(c CrossPath, winFromNS int64) string {
	if c.LateMaxNS <= c.LimitNS {
		return ""
	}
	where := fmt.Sprintf("%+.3f–%+.3f s into the verdict window, %d packets there", float64(c.FromNS-winFromNS)/1e9, float64(c.ToNS-winFromNS)/1e9, c.OtherPackets)
	if c.OrderChecked {
		if c.OrderPackets > 0 && c.OrderLateMaxNS > c.LimitNS {
			return fmt.Sprintf("path %s: a packet %.2f ms late while path %s carried traffic (%s), and the emulator wrote %d of this path's packets out of their scheduled order against path %s's (%d pairs): one could have looked lost (limit %.2f ms)",
				c.Dir, msf(c.OrderLateMaxNS), c.Other, where, c.OrderPackets, c.Other, c.OrderChangedPairs, msf(c.LimitNS))
		}
		if c.LateMaxNS <= c.OrderLimitNS {
			return "" // over the estimate, but the record shows the order kept
		}
		return fmt.Sprintf("path %s: a packet %.2f ms late while path %s carried traffic (%s, measured there; the order of the paths' packets kept): past RFC 9002's time threshold or the ACK clock's limit (%.2f ms)",
			c.Dir, msf(c.LateMaxNS), c.Other, where, msf(c.OrderLimitNS))
	}
	how := "measured there"
	if !c.Measured {
		how = "the whole window's worst, the span unmeasured"
	}
	return fmt.Sprintf("path %s: a packet %.2f ms late while path %s carried traffic (%s, %s): it could have been overtaken and looked lost (limit %.2f ms)",
		c.Dir, msf(c.LateMaxNS), c.Other, where, how, msf(c.LimitNS))
}

// SampleCheck is the sensitivity of one RTT-attribution sample to the
// lateness and stalls measured around it.
type SampleCheck struct {
	ValueUS           int64  `json:"value_us"`
	AtUS              int64  `json:"at_us"`
	OldPathUS         int64  `json:"old_path_us,omitempty"`
	OldPathMeasuredUS int64  `json:"old_path_measured_us,omitempty"`
	NewPathUS         int64  `json:"new_path_us,omitempty"`
	DefaultUS         int64  `json:"default_us,omitempty"`
	LateUpNS          int64  `json:"late_up_ns"`
	LateDownNS        int64  `json:"late_down_ns"`
	StallsNS          int64  `json:"stalls_ns"`
	InflationNS       int64  `json:"inflation_ns"`
	LowestUS          int64  `json:"lowest_us"`
	Attribution       string `json:"attribution"`
	// ChangesAtUS is the highest value below the measured one whose
	// attribution differs (0: none down to LowestUS), ChangesTo that
	// attribution.
	ChangesAtUS int64  `json:"changes_at_us,omitempty"`
	ChangesTo   string `json:"changes_to,omitempty"`
	Decided     bool   `json:"decided"`
}

// StallsOverlapping is the stalls (deduplicated by start) whose span
// [start, start + lateness] overlaps [from, to], in order.
func StallsOverlapping(all []Stall, from, to int64) []Stall {
	seen := map[int64]bool{}
	var out []Stall
	for _, s := range all {
		if seen[s.AtNS] || s.AtNS > to || s.AtNS+s.LateNS < from {
			continue
		}
		seen[s.AtNS] = true
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].AtNS < out[j].AtNS })
	return out
}

// SampleInflation is the most lateness and stalls can have added to an
// RTT sample measured across window w: every stall, plus the worst
// lateness on an up direction and on a down direction unless a stall
// explains it. A host stall adds its length once to any chain of events
// that runs through it, so a packet late because the emulator was frozen
// by that stall (due and written within it, give or take the sentinel's
// 1 ms period) is the stall, counted once.
func SampleInflation(w Window) (up, down, stalls int64) {
	for _, s := range w.Stalls {
		stalls += max(s.LateNS, 0)
	}
	for k, d := range w.Dirs {
		l := max(d.LateMaxNS, 0)
		if l == 0 || stallExplains(w.Stalls, d.LateMaxAtNS-l, d.LateMaxAtNS) {
			continue
		}
		if strings.HasSuffix(k, "/up") {
			up = max(up, l)
		} else {
			down = max(down, l)
		}
	}
	return up, down, stalls
}

// stallPeriodNS is the sentinel's wake-up period: a stall's start and end
// are known to within it.
const stallPeriodNS = int64(time.Millisecond)

// stallExplains says whether one stall spans a packet's lateness, from
// when it was due to when it was written.
func stallExplains(stalls []Stall, due, written int64) bool {
	if written <= 0 {
		return false
	}
	for _, s := range stalls {
		if s.AtNS-stallPeriodNS <= due && written <= s.AtNS+s.LateNS+2*stallPeriodNS {
			return true
		}
	}
	return false
}

// CheckSample asks classify whether a sample of v µs has the same
// attribution at every whole µs down to v minus inflation (ns).
func CheckSample(v, inflation int64, classify func(int64) string) SampleCheck {
	c := SampleCheck{ValueUS: v, InflationNS: inflation, Attribution: classify(v), Decided: true}
	lo := max(v-(inflation+999)/1000, 1)
	c.LowestUS = lo
	for x := v - 1; x >= lo; x-- {
		if a := classify(x); a != c.Attribution {
			c.ChangesAtUS, c.ChangesTo, c.Decided = x, a, false
			break
		}
	}
	return c
}

// Span is an interval of the emulator's clock with how it was placed.
type Span struct {
	FromNS int64  `json:"from_ns"`
	ToNS   int64  `json:"to_ns"`
	Basis  string `json:"basis"`
}

// CrossPathSpan is where a packet on direction dir (e.g. "A/up") of the
// window could be overtaken by one sent after it on the other path in the
// same direction. A packet written at w, ℓ late, was sent at w − ℓ − its
// one-way delay; a packet of the other path sent after it is written
// after w − ℓ + (other's delay − own delay) and must be written by w, and
// within the other direction's first and last writes: w from the other's
// first write to its last + ℓ + (own delay − other's delay, if positive),
// with ℓ this direction's worst lateness, within the window. ok is false
// when the other path carried nothing there.
func CrossPathSpan(r Rule, win Window, dir string) (other string, from, to int64, ok bool) {
	p, rest, _ := strings.Cut(dir, "/")
	op := "B"
	own, oth := r.OneWayANS, r.OneWayBNS
	if p == "B" {
		op, own, oth = "A", r.OneWayBNS, r.OneWayANS
	}
	other = op + "/" + rest
	o, has := win.Dirs[other]
	if !has || o.Packets == 0 || o.FirstSentNS == 0 {
		return other, 0, 0, false
	}
	from = max(win.FromNS, o.FirstSentNS)
	to = min(win.ToNS, o.LastSentNS+max(win.Dirs[dir].LateMaxNS, 0)+max(own-oth, 0))
	return other, from, to, to >= from
}

// Judge applies the rule to a verdict window, its reset windows
// (where the stall rule applies), its directions' cross-path spans and its
// RTT samples (windows and sensitivity) and returns what did not hold,
// with numbers (nil: it held).
func Judge(r Rule, win Window, resets []Span, cross []CrossPath, sampleWins []Window, samples []SampleCheck) []string {
	var out []string
	span := float64(win.ToNS-win.FromNS) / 1e6 // expected 1 ms wake-ups
	if span >= 10 && float64(win.SentinelSamples) < r.MinSentinelShare*span {
		out = append(out, fmt.Sprintf("the sentinel woke %d times in a %.0f ms window (want ≥ %.0f%%): host stalls unknown", win.SentinelSamples, span, 100*r.MinSentinelShare))
	}
	var over []Stall
	var worst Stall
	inReset := func(at int64) bool {
		for _, rw := range resets {
			if at >= rw.FromNS && at <= rw.ToNS {
				return true
			}
		}
		return false
	}
	for _, s := range win.Stalls {
		if s.LateNS > r.MaxStallNS && inReset(s.AtNS) {
			over = append(over, s)
			if s.LateNS > worst.LateNS {
				worst = s
			}
		}
	}
	switch len(over) {
	case 0:
	case 1:
		out = append(out, fmt.Sprintf("host stall of %.1f ms in the reset window, %+.3f s into the verdict window (limit %.1f ms)", msf(worst.LateNS), float64(worst.AtNS-win.FromNS)/1e9, msf(r.MaxStallNS)))
	default:
		out = append(out, fmt.Sprintf("%d host stalls longer than %.1f ms in the reset window, the worst %.1f ms at %+.3f s into the verdict window", len(over), msf(r.MaxStallNS), msf(worst.LateNS), float64(worst.AtNS-win.FromNS)/1e9))
	}
	for _, c := range cross {
		if p := CrossProblem(c, win.FromNS); p != "" {
			out = append(out, p)
		}
	}
	for _, k := range SortedDirs(win.Dirs) {
		if d := win.Dirs[k]; d.WriteDrops > 0 {
			out = append(out, fmt.Sprintf("path %s: %d packets the emulator could not deliver (write failed)", k, d.WriteDrops))
		}
	}
	if win.Truncated {
		out = append(out, "the emulator's record of the window was overwritten (repetition longer than its ring)")
	}
	for i, c := range samples {
		if i < len(sampleWins) && sampleWins[i].Truncated {
			out = append(out, fmt.Sprintf("RTT sample %d: the lateness around it was not measured", i+1))
			continue
		}
		if !c.Decided {
			out = append(out, fmt.Sprintf("RTT sample %d: %.3f ms (%s) could be as low as %.3f ms without the %.2f ms the host may have added (packets %.2f ms late up + %.2f ms down, stalls %.2f ms), and at %.3f ms it reads %s",
				i+1, float64(c.ValueUS)/1000, c.Attribution, float64(c.LowestUS)/1000, msf(c.InflationNS), msf(c.LateUpNS), msf(c.LateDownNS), msf(c.StallsNS), float64(c.ChangesAtUS)/1000, c.ChangesTo))
		}
	}
	return out
}

func SortedDirs(m map[string]Dir) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

func msf(ns int64) float64 { return float64(ns) / 1e6 }
