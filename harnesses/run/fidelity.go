package run

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/migaudit/migaudit/discriminator"
)

// FidelityMeter is optionally implemented by a Net whose emulator records
// every packet (harnesses/testbed does): the runner asks it, after each
// repetition, how faithfully the paths were emulated and whether the host
// stalled, and decides from that whether the repetition may count.
type FidelityMeter interface {
	// MonoNow is the meter's clock (CLOCK_MONOTONIC, ns).
	MonoNow() int64
	// Fidelity measures [from, to] with the given lateness tolerance.
	Fidelity(from, to int64, tol time.Duration) (FidelityWindow, error)
}

// FidelityWindow is the emulator's own measurement of one window (the
// JSON of harnesses/testbed.Fidelity).
type FidelityWindow struct {
	FromNS          int64                  `json:"from_ns"`
	ToNS            int64                  `json:"to_ns"`
	LateToleranceNS int64                  `json:"late_tolerance_ns"`
	Dirs            map[string]DirFidelity `json:"dirs"`
	Stalls          []Stall                `json:"stalls"`
	SentinelSamples int                    `json:"sentinel_samples"`
	Truncated       bool                   `json:"truncated,omitempty"`
}

// DirFidelity is one path direction ("A/up" = client → server on path A).
type DirFidelity struct {
	Packets        int     `json:"packets"`
	Bytes          int64   `json:"bytes"`
	FirstSentNS    int64   `json:"first_sent_ns,omitempty"`
	LastSentNS     int64   `json:"last_sent_ns,omitempty"`
	RateBps        float64 `json:"rate_bps"`
	DelayMedianNS  int64   `json:"delay_median_ns"`
	DelayP99NS     int64   `json:"delay_p99_ns"`
	LateMedianNS   int64   `json:"late_median_ns"`
	LateP99NS      int64   `json:"late_p99_ns"`
	LateMaxNS      int64   `json:"late_max_ns"`
	LateMaxAtNS    int64   `json:"late_max_at_ns,omitempty"`
	LateOver       int     `json:"late_over_tolerance"`
	LateFraction   float64 `json:"late_fraction"`
	QueueDrops     int     `json:"queue_drops"`
	LossDrops      int     `json:"loss_drops"`
	WriteDrops     int     `json:"write_drops"`
	EarliestLateNS int64   `json:"earliest_late_ns,omitempty"`
}

// Stall is one host stall seen by the emulator's sentinel: a 1 ms
// real-time wake-up that began at AtNS and came LateNS late.
type Stall struct {
	AtNS   int64 `json:"at_ns"`
	LateNS int64 `json:"late_ns"`
}

// FidelityRule is what a repetition's verdict window must satisfy. The
// values are recorded in every manifest; the validator holds its own copy
// and refuses a manifest whose rule differs.
type FidelityRule struct {
	// LateToleranceNS: a packet written later than this after its
	// scheduled time is "late". 1 ms: late by that much in both
	// directions, an RTT sample on the 20 ms path moves by 10 %, the
	// discriminator's convergence tolerance.
	LateToleranceNS int64 `json:"late_tolerance_ns"`
	// MaxLateFraction: at most this share of a direction's packets in the
	// window may be late, or MaxLatePackets if that is more (smoothed RTT
	// is an average with gain 1/8 and the window curve spans thousands of
	// packets: 1 % of the samples, or two late ACKs on a quiet direction,
	// cannot move either visibly; the one sample the RTT verdict reads has
	// its own rule below).
	MaxLateFraction float64 `json:"max_late_fraction"`
	MaxLatePackets  int     `json:"max_late_packets"`
	// MaxStallNS: no host stall in the reset window may be longer. The
	// reset window runs from the scope's start (before path validation)
	// to two new-path RTTs after the first window decrease that follows
	// the migration (the end of the scope when there is none): the
	// exchange the Q1 verdict reads. A stall freezes the endpoints;
	// every direction is FIFO, so it cannot make a packet look lost
	// (RFC 9002 needs a later packet acknowledged first, or 9/8 RTT
	// without one while later ones are), and a PTO alone does not touch
	// the window; what a stall does is shift the ACK clock. Half the
	// shortest path RTT (10 ms at 20 ms) keeps that shift below the
	// difference between the paths the verdict tells apart, and far below
	// the 3 PTOs of persistent congestion, the one way a pause collapses a
	// window. Later in the scope the packets' own lateness is the measure.
	MaxStallNS int64 `json:"max_stall_ns"`
	// ResetWindowRTTs is how many new-path RTTs after the first decrease
	// the reset window extends.
	ResetWindowRTTs int `json:"reset_window_rtts"`
	// SampleMaxLateNS / SampleMaxStallNS hold around each RTT-attribution
	// sample (from one sample RTT + 5 ms before it to it): every packet
	// within the tolerance and no stall longer than twice it, so that the
	// sample itself is off by less than the convergence tolerance.
	SampleMaxLateNS  int64 `json:"sample_max_late_ns"`
	SampleMaxStallNS int64 `json:"sample_max_stall_ns"`
	// MinSentinelSamples: the sentinel must have run through the window
	// (at least this share of its 1 ms wake-ups); otherwise the absence of
	// stalls proves nothing.
	MinSentinelShare float64 `json:"min_sentinel_share"`
}

// DefaultFidelityRule is the rule for paths whose shortest RTT is minRTT.
func DefaultFidelityRule(minRTT time.Duration) FidelityRule {
	stall := int64(minRTT / 2)
	if stall <= 0 {
		stall = int64(10 * time.Millisecond)
	}
	return FidelityRule{
		LateToleranceNS:  int64(time.Millisecond),
		MaxLateFraction:  0.01,
		MaxLatePackets:   2,
		MaxStallNS:       stall,
		ResetWindowRTTs:  2,
		SampleMaxLateNS:  int64(time.Millisecond),
		SampleMaxStallNS: int64(2 * time.Millisecond),
		MinSentinelShare: 0.5,
	}
}

// Fidelity is the manifest's "fidelity" block.
type Fidelity struct {
	Clock string       `json:"clock"`
	Rule  FidelityRule `json:"rule"`
	// Repetition covers the whole repetition (start to end).
	Repetition FidelityWindow `json:"repetition"`
	// Anchor ties the trace's clock to the emulator's: the instant the
	// emulator delivered the first packet on the new path, which the
	// server's trace logs as the start of path validation.
	Anchor *FidelityAnchor `json:"anchor,omitempty"`
	// Window is the verdict's window: from before path validation to the
	// end of the discriminator's scope (and any RTT-attribution sample).
	Window      FidelityWindow `json:"window"`
	WindowBasis string         `json:"window_basis"`
	// Samples are the windows around the RTT-attribution samples.
	Samples []FidelityWindow `json:"rtt_sample_windows,omitempty"`
	// ResetWindows are where the stall rule applies (emulator ns).
	ResetWindows []Span `json:"reset_windows,omitempty"`
	// Held is true when every part of the rule held; Problems says what
	// did not, with numbers.
	Held     bool     `json:"held"`
	Problems []string `json:"problems,omitempty"`
	Summary  string   `json:"summary"`
	Error    string   `json:"error,omitempty"`
}

// Span is an interval of the emulator's clock with how it was placed.
type Span struct {
	FromNS int64  `json:"from_ns"`
	ToNS   int64  `json:"to_ns"`
	Basis  string `json:"basis"`
}

// FidelityAnchor maps trace time to emulator time.
type FidelityAnchor struct {
	EmulatorNS int64  `json:"emulator_ns"`
	TraceUS    int64  `json:"trace_us"`
	Basis      string `json:"basis"`
}

// traceToMono converts a trace instant to the emulator's clock.
func (a *FidelityAnchor) traceToMono(us int64) int64 { return a.EmulatorNS + (us-a.TraceUS)*1000 }

// measureFidelity builds the fidelity block of one repetition run between
// from and to (meter clock), whose analyses are an and ret (either nil).
func measureFidelity(fm FidelityMeter, sc Scenario, netw Net, res RepResult, an, ret *discriminator.Analysis, from, to, wallToMono int64) *Fidelity {
	minRTT := min(netw.PathRTT(PathA), netw.PathRTT(PathB))
	if minRTT <= 0 {
		minRTT = max(netw.PathRTT(PathA), netw.PathRTT(PathB))
	}
	f := &Fidelity{Clock: "CLOCK_MONOTONIC ns (the emulator's, shared by every process on the host)", Rule: DefaultFidelityRule(minRTT)}
	tol := time.Duration(f.Rule.LateToleranceNS)
	rep, err := fm.Fidelity(from, to, tol)
	if err != nil {
		f.Error = err.Error()
		f.Problems = []string{"fidelity not measured: " + err.Error()}
		f.Summary = "unknown (" + err.Error() + ")"
		return f
	}
	f.Repetition = rep
	f.Anchor = anchorFor(sc, netw, rep, res, an, wallToMono)
	wFrom, wTo := from, to
	f.WindowBasis = "the whole repetition (no migration found to place the verdict's window)"
	if f.Anchor != nil && an != nil && an.Migration.Found {
		lo, hi := an.ScopeFromUS, an.ScopeToUS
		var samples [][2]int64
		for i, a := range []*discriminator.Analysis{an, ret} {
			if a == nil {
				continue
			}
			newRTT := netw.PathRTT(PathB)
			if i == 1 || !sc.IsIPMigration() {
				newRTT = netw.PathRTT(PathA)
			}
			rw := ResetWindow(a, newRTT, f.Rule.ResetWindowRTTs)
			f.ResetWindows = append(f.ResetWindows, Span{FromNS: f.Anchor.traceToMono(rw.FromNS / 1000), ToNS: f.Anchor.traceToMono(rw.ToNS / 1000), Basis: rw.Basis})
			lo, hi = min(lo, a.ScopeFromUS), max(hi, a.ScopeToUS)
			if s := a.RTT; s.FirstAfterAtUS > 0 && s.FirstAfterUS > 0 {
				sFrom := s.FirstAfterAtUS - s.FirstAfterUS - 5000
				samples = append(samples, [2]int64{sFrom, s.FirstAfterAtUS})
				lo, hi = min(lo, sFrom), max(hi, s.FirstAfterAtUS)
			}
		}
		wFrom, wTo = f.Anchor.traceToMono(lo), f.Anchor.traceToMono(hi)
		f.WindowBasis = fmt.Sprintf("trace %.3f–%.3f s (discriminator scope %.3f–%.3f s, RTT-attribution samples included), placed by %s",
			float64(lo)/1e6, float64(hi)/1e6, float64(an.ScopeFromUS)/1e6, float64(an.ScopeToUS)/1e6, f.Anchor.Basis)
		for _, s := range samples {
			w, err := fm.Fidelity(f.Anchor.traceToMono(s[0]), f.Anchor.traceToMono(s[1]), tol)
			if err == nil {
				f.Samples = append(f.Samples, w)
			}
		}
	}
	win, err := fm.Fidelity(wFrom, wTo, tol)
	if err != nil {
		f.Error = err.Error()
		f.Problems = []string{"fidelity of the verdict window not measured: " + err.Error()}
		f.Summary = "unknown (" + err.Error() + ")"
		return f
	}
	f.Window = win
	if len(f.ResetWindows) == 0 {
		f.ResetWindows = []Span{{FromNS: win.FromNS, ToNS: win.ToNS, Basis: "the whole verdict window"}}
	}
	f.Problems = JudgeFidelity(f.Rule, win, f.ResetWindows, f.Samples)
	f.Held = len(f.Problems) == 0
	f.Summary = summariseFidelity(f)
	return f
}

// anchorFor finds the emulator instant of the trace's migration: the first
// packet path B delivered to the server (its PATH_CHALLENGE or first
// datagram from the new address) for an IP migration; for a port-only
// rebinding the client's own report of moving plus path A's one-way delay.
func anchorFor(sc Scenario, netw Net, rep FidelityWindow, res RepResult, an *discriminator.Analysis, wallToMono int64) *FidelityAnchor {
	if an == nil || !an.Migration.Found {
		return nil
	}
	tr := an.Migration.PathValidationAtUS
	if tr == 0 {
		tr = an.Migration.AtUS
	}
	if sc.IsIPMigration() {
		if d, ok := rep.Dirs["B/up"]; ok && d.FirstSentNS > 0 {
			return &FidelityAnchor{EmulatorNS: d.FirstSentNS, TraceUS: tr,
				Basis: fmt.Sprintf("path B's first client→server packet delivered at emulator %d ns = the trace's migration instant %.3f ms", d.FirstSentNS, float64(tr)/1000)}
		}
	}
	if len(res.Moves) > 0 && wallToMono != 0 {
		at := res.Moves[0].At.UnixNano() + wallToMono + int64(netw.PathRTT(PathA)/2)
		return &FidelityAnchor{EmulatorNS: at, TraceUS: tr,
			Basis: fmt.Sprintf("the client's report of moving (%s) plus path A's one-way delay = the trace's migration instant %.3f ms", res.Moves[0].At.Format(time.RFC3339Nano), float64(tr)/1000)}
	}
	return nil
}

// ResetWindow is where the stall rule applies, in trace µs (FromNS/ToNS
// hold µs × 1000 of the trace clock): from the scope's start to rtts
// new-path RTTs after the first window decrease at or after the
// migration, or to the scope's end when there is none.
func ResetWindow(a *discriminator.Analysis, newRTT time.Duration, rtts int) Span {
	mig := a.Migration.PathValidationAtUS
	if mig == 0 {
		mig = a.Migration.AtUS
	}
	first := int64(-1)
	for _, e := range a.Events {
		if e.AtUS >= mig && (first < 0 || e.AtUS < first) {
			first = e.AtUS
		}
	}
	if first < 0 {
		return Span{FromNS: a.ScopeFromUS * 1000, ToNS: a.ScopeToUS * 1000,
			Basis: fmt.Sprintf("trace %.3f–%.3f s: no window decrease after the migration, the whole scope", float64(a.ScopeFromUS)/1e6, float64(a.ScopeToUS)/1e6)}
	}
	to := min(first+int64(rtts)*newRTT.Microseconds(), a.ScopeToUS)
	return Span{FromNS: a.ScopeFromUS * 1000, ToNS: to * 1000,
		Basis: fmt.Sprintf("trace %.3f–%.3f s: scope start to %d new-path RTTs after the first decrease after the migration (%.3f s)", float64(a.ScopeFromUS)/1e6, float64(to)/1e6, rtts, float64(first)/1e6)}
}

// JudgeFidelity applies the rule to a verdict window, its reset windows
// (where the stall rule applies) and its RTT-sample windows and returns
// what did not hold, with numbers (nil: it held).
func JudgeFidelity(r FidelityRule, win FidelityWindow, resets []Span, samples []FidelityWindow) []string {
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
	for _, k := range sortedDirs(win.Dirs) {
		d := win.Dirs[k]
		if d.LateOver > r.MaxLatePackets && d.LateFraction > r.MaxLateFraction {
			out = append(out, fmt.Sprintf("path %s: %d of %d packets (%.2f%%) later than %.1f ms (limit %.0f%% or %d packets), worst %.1f ms", k, d.LateOver, d.Packets, 100*d.LateFraction, msf(r.LateToleranceNS), 100*r.MaxLateFraction, r.MaxLatePackets, msf(d.LateMaxNS)))
		}
		if d.WriteDrops > 0 {
			out = append(out, fmt.Sprintf("path %s: %d packets the emulator could not deliver (write failed)", k, d.WriteDrops))
		}
	}
	if win.Truncated {
		out = append(out, "the emulator's record of the window was overwritten (repetition longer than its ring)")
	}
	for i, s := range samples {
		for _, k := range sortedDirs(s.Dirs) {
			if d := s.Dirs[k]; d.LateMaxNS > r.SampleMaxLateNS {
				out = append(out, fmt.Sprintf("RTT sample %d: a packet on %s %.2f ms late (limit %.2f ms)", i+1, k, msf(d.LateMaxNS), msf(r.SampleMaxLateNS)))
			}
		}
		for _, st := range s.Stalls {
			if st.LateNS > r.SampleMaxStallNS {
				out = append(out, fmt.Sprintf("RTT sample %d: host stall of %.2f ms (limit %.2f ms)", i+1, msf(st.LateNS), msf(r.SampleMaxStallNS)))
			}
		}
	}
	return out
}

func sortedDirs(m map[string]DirFidelity) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

func msf(ns int64) float64 { return float64(ns) / 1e6 }

// summariseFidelity is the table's one-line form, e.g. "held: late>1ms 0.02%,
// p99 +0.08 ms, stalls 3 (max 1.8 ms) in 2.05 s".
func summariseFidelity(f *Fidelity) string {
	w := f.Window
	var late, pk int
	var p99, worst int64
	for _, d := range w.Dirs {
		late += d.LateOver
		pk += d.Packets
		p99 = max(p99, d.LateP99NS)
		worst = max(worst, d.LateMaxNS)
	}
	var smax, rmax int64
	inReset := 0
	for _, s := range w.Stalls {
		smax = max(smax, s.LateNS)
		for _, rw := range f.ResetWindows {
			if s.AtNS >= rw.FromNS && s.AtNS <= rw.ToNS {
				inReset++
				rmax = max(rmax, s.LateNS)
				break
			}
		}
	}
	word := "held"
	if !f.Held {
		word = "SPOILED"
	}
	frac := 0.0
	if pk > 0 {
		frac = 100 * float64(late) / float64(pk)
	}
	return fmt.Sprintf("%s: late>%.0fms %.2f%%, p99 %+.2f ms, worst %.1f ms, stalls %d (max %.1f ms) in %.2f s, %d in the reset window (max %.1f ms)",
		word, msf(f.Rule.LateToleranceNS), frac, msf(p99), msf(worst), len(w.Stalls), msf(smax), float64(w.ToNS-w.FromNS)/1e9, inReset, msf(rmax))
}

// stallWords describes the spoiling stalls for the final message.
func stallWords(reps []RepSummary) string {
	var parts []string
	for _, r := range reps {
		if r.Status == "SPOILED" && r.Fidelity != nil {
			parts = append(parts, fmt.Sprintf("rep %d try %d: %s", r.Rep, r.Attempt, strings.Join(r.Fidelity.Problems, "; ")))
		}
	}
	return strings.Join(parts, " | ")
}
