package run

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/migaudit/migaudit/discriminator"
	"github.com/migaudit/migaudit/harnesses/fidelity"
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

// FidelityWindow, DirFidelity and Stall are the emulator's own
// measurement of one window (harnesses/fidelity, which the testbed
// measures into): DirFidelity is one path direction ("A/up" = client →
// server on path A), Stall one host stall seen by its sentinel.
type (
	FidelityWindow = fidelity.Window
	DirFidelity    = fidelity.Dir
	Stall          = fidelity.Stall
)

// The rule that judges a window lives beside its types in
// harnesses/fidelity; these are its names in the runner's records.
type (
	FidelityRule   = fidelity.Rule
	CrossPath      = fidelity.CrossPath
	RTTSampleCheck = fidelity.SampleCheck
	Span           = fidelity.Span
)

// FidelityRuleName names the rule in every manifest.
const FidelityRuleName = fidelity.RuleName

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
	// RTTSamples are the samples themselves (one per window in Samples)
	// with how much lateness and stalls could have inflated them and
	// whether that could have changed their attribution.
	RTTSamples []RTTSampleCheck `json:"rtt_samples,omitempty"`
	// CrossPaths are the directions' lateness while the other path carried
	// traffic in the same direction.
	CrossPaths []CrossPath `json:"cross_paths,omitempty"`
	// ResetWindows are where the stall rule applies (emulator ns).
	ResetWindows []Span `json:"reset_windows,omitempty"`
	// Held is true when every part of the rule held; Problems says what
	// did not, with numbers.
	Held     bool     `json:"held"`
	Problems []string `json:"problems,omitempty"`
	Summary  string   `json:"summary"`
	Error    string   `json:"error,omitempty"`
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
	f := &Fidelity{Clock: "CLOCK_MONOTONIC ns (the emulator's, shared by every process on the host)", Rule: fidelity.DefaultRule(netw.PathRTT(PathA), netw.PathRTT(PathB))}
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
		var sampleRefs []discriminator.RTTAttribution
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
				sampleRefs = append(sampleRefs, s)
				lo, hi = min(lo, sFrom), max(hi, s.FirstAfterAtUS)
			}
		}
		wFrom, wTo = f.Anchor.traceToMono(lo), f.Anchor.traceToMono(hi)
		f.WindowBasis = fmt.Sprintf("trace %.3f–%.3f s (discriminator scope %.3f–%.3f s, RTT-attribution samples included), placed by %s",
			float64(lo)/1e6, float64(hi)/1e6, float64(an.ScopeFromUS)/1e6, float64(an.ScopeToUS)/1e6, f.Anchor.Basis)
		for i, s := range samples {
			w, err := fm.Fidelity(f.Anchor.traceToMono(s[0]), f.Anchor.traceToMono(s[1]), tol)
			if err != nil {
				// Unmeasured: the sample's sensitivity is unknown.
				w = FidelityWindow{FromNS: f.Anchor.traceToMono(s[0]), ToNS: f.Anchor.traceToMono(s[1]), Truncated: true}
			}
			f.Samples = append(f.Samples, w)
			ref := sampleRefs[i]
			// A stall that began before the window and ran into it froze
			// the sample's round trip too: take those from the
			// repetition's list.
			w.Stalls = fidelity.StallsOverlapping(append(slices.Clone(w.Stalls), rep.Stalls...), w.FromNS, w.ToNS)
			up, down, st := fidelity.SampleInflation(w)
			c := fidelity.CheckSample(ref.FirstAfterUS, up+down+st, ref.Classify)
			c.AtUS, c.LateUpNS, c.LateDownNS, c.StallsNS = ref.FirstAfterAtUS, up, down, st
			c.OldPathUS, c.OldPathMeasuredUS, c.NewPathUS, c.DefaultUS = ref.OldPathUS, ref.OldPathMeasuredUS, ref.NewPathUS, ref.DefaultUS
			if err != nil {
				c.Decided = false
			}
			f.RTTSamples = append(f.RTTSamples, c)
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
	f.CrossPaths = crossPaths(fm, f.Rule, win, tol)
	f.Problems = fidelity.Judge(f.Rule, win, f.ResetWindows, f.CrossPaths, f.Samples, f.RTTSamples)
	f.Held = len(f.Problems) == 0
	f.Summary = summariseFidelity(f)
	return f
}

// crossPaths measures every direction's lateness in its CrossPathSpan.
func crossPaths(fm FidelityMeter, r FidelityRule, win FidelityWindow, tol time.Duration) []CrossPath {
	var out []CrossPath
	for _, k := range fidelity.SortedDirs(win.Dirs) {
		other, from, to, ok := fidelity.CrossPathSpan(r, win, k)
		if !ok {
			continue
		}
		p, _, _ := strings.Cut(k, "/")
		c := CrossPath{Dir: k, Other: other, FromNS: from, ToNS: to}
		if w, err := fm.Fidelity(from, to, tol); err == nil && !w.Truncated {
			d := w.Dirs[k]
			c.Packets, c.OtherPackets, c.LateMaxNS, c.LateOver, c.Measured = d.Packets, w.Dirs[other].Packets, d.LateMaxNS, d.LateOver, true
			c.LimitNS = r.ReorderLimit(p, c.OtherPackets, to-from)
			if o := d.Order; o != nil && o.Other == other {
				c.OrderChecked, c.OrderChangedPairs, c.OrderPackets, c.OrderLateMaxNS = true, o.ChangedPairs, o.Packets, o.LateMaxNS
				c.OrderLimitNS = r.OrderedLimit(p)
			}
		} else {
			// Unmeasured: the window's figures, and no credit for a
			// dense faster path (its density in the span is unknown).
			d := win.Dirs[k]
			c.Packets, c.OtherPackets, c.LateMaxNS, c.LateOver = d.Packets, win.Dirs[other].Packets, d.LateMaxNS, d.LateOver
			c.LimitNS = r.ReorderLimit(p, c.OtherPackets, 0)
		}
		out = append(out, c)
	}
	return out
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
		word = string(Spoiled)
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
		if r.Status == Spoiled && r.Fidelity != nil {
			parts = append(parts, fmt.Sprintf("rep %d try %d: %s", r.Rep, r.Attempt, strings.Join(r.Fidelity.Problems, "; ")))
		}
	}
	return strings.Join(parts, " | ")
}

func msf(ns int64) float64 { return float64(ns) / 1e6 }
