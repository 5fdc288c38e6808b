package validator

import (
	"fmt"
	"math"

	"github.com/migaudit/migaudit/survey"
	"github.com/tidwall/gjson"
)

// The fidelity rule, held here independently of harnesses/run (which
// writes it into every manifest): a manifest may not carry a looser rule
// than this one. docs/testbed.md says what each figure protects.
const (
	fidLateToleranceNS  = 1_000_000 // a packet later than this after its schedule is late
	fidMaxLateFraction  = 0.01      // share of late packets per direction in the verdict window
	fidMaxLatePackets   = 2         // ... or this many late packets, whichever is more
	fidSampleMaxLateNS  = 1_000_000 // around an RTT-attribution sample: every packet
	fidSampleMaxStallNS = 2_000_000 // and every host stall
	fidMinSentinelShare = 0.5       // the sentinel must have woken for half the window's milliseconds
	fidSampleLeadUS     = 5_000     // a sample window starts one sample RTT and 5 ms before it
	fidDefaultMinRTTUS  = 20_000    // when neither manifest nor survey gives a path RTT
	fidResetWindowRTTs  = 2         // the stall rule holds to this many new-path RTTs after the first decrease
)

func init() {
	// Applies where repetitions name a manifest: this project's own runs
	// (the study's reference traces were not recorded on this testbed).
	perImplChecks = append(perImplChecks, check{"fidelity", checkFidelity, "live.repetitions.#.manifest"})
}

// checkFidelity: every counted repetition of this project's own runs
// carries the emulator's fidelity record, is VALID, and the record shows
// the emulation held inside the window its verdict depends on — re-derived
// here from the raw stalls of the whole repetition and the per-direction
// figures, with the window re-placed from the survey's own scope and RTT
// sample through the manifest's anchor.
func checkFidelity(v *Validator, doc, im gjson.Result) (Status, string) {
	var d verdict
	if noLive(&d, im) {
		return d.result()
	}
	origin := im.Get("live.origin").String()
	if origin != survey.OwnRuns {
		d.unverifiable("%s evidence has no emulator record (not run on this project's testbed)", origin)
		return d.result()
	}
	held, worstStall, worstFrac := 0, 0.0, 0.0
	reps := im.Get("live.repetitions").Array()
	for _, rep := range reps {
		id := rep.Get("id").String()
		p, err := v.resolve(origin, rep.Get("manifest").String())
		if err != nil {
			d.fail("%s: %v", id, err)
			continue
		}
		b, err := readMaybeGz(p)
		if err != nil {
			d.fail("%s: manifest: %v", id, err)
			continue
		}
		man := gjson.ParseBytes(b)
		ws, wf, problems := fidelityProblems(man, rep)
		worstStall, worstFrac = math.Max(worstStall, ws), math.Max(worstFrac, wf)
		for _, pr := range problems {
			d.fail("%s: %s", id, pr)
		}
		if len(problems) == 0 {
			held++
		}
	}
	d.note("fidelity held in the verdict window of %d/%d repetitions (worst host stall there %.1f ms, worst late share %.2f%%)", held, len(reps), worstStall, 100*worstFrac)
	return d.result()
}

// fidelityProblems re-applies the rule to one manifest; it also returns the
// worst stall (ms) and late share found in the window.
func fidelityProblems(man, rep gjson.Result) (float64, float64, []string) {
	var out []string
	f := man.Get("fidelity")
	if !f.Exists() {
		return 0, 0, []string{"manifest has no fidelity record (recorded before per-repetition fidelity: re-record it)"}
	}
	if st := man.Get("status").String(); st != "VALID" {
		out = append(out, fmt.Sprintf("manifest status %q, not VALID", st))
	}
	if e := f.Get("error").String(); e != "" {
		out = append(out, "fidelity not measured: "+e)
	}
	minRTT := minRTTUS(man, rep)
	maxStall := minRTT * 1000 / 2
	rule := f.Get("rule")
	for _, r := range []struct {
		name string
		got  float64
		want float64
	}{
		{"late_tolerance_ns", rule.Get("late_tolerance_ns").Float(), fidLateToleranceNS},
		{"max_late_fraction", rule.Get("max_late_fraction").Float(), fidMaxLateFraction},
		{"max_late_packets", rule.Get("max_late_packets").Float(), fidMaxLatePackets},
		{"max_stall_ns", rule.Get("max_stall_ns").Float(), float64(maxStall)},
		{"sample_max_late_ns", rule.Get("sample_max_late_ns").Float(), fidSampleMaxLateNS},
		{"sample_max_stall_ns", rule.Get("sample_max_stall_ns").Float(), fidSampleMaxStallNS},
		{"reset_window_rtts", rule.Get("reset_window_rtts").Float(), fidResetWindowRTTs},
	} {
		if r.got > r.want {
			out = append(out, fmt.Sprintf("rule %s is %g, looser than %g", r.name, r.got, r.want))
		}
	}
	win := f.Get("window")
	from, to := win.Get("from_ns").Int(), win.Get("to_ns").Int()
	if to <= from {
		return 0, 0, append(out, fmt.Sprintf("verdict window %d..%d ns is empty", from, to))
	}
	// The window must cover what the verdict rests on: the survey's scope
	// and its first post-migration RTT sample, placed by the anchor.
	anc := f.Get("anchor")
	resetFrom, resetTo := from, to // without an anchor: the whole window
	if !anc.Exists() {
		out = append(out, "no anchor ties the trace's clock to the emulator's: the verdict window cannot be placed")
	} else {
		mono := func(us int64) int64 {
			return anc.Get("emulator_ns").Int() + (us-anc.Get("trace_us").Int())*1000
		}
		pv := rep.Get("migration.path_validation_at_us").Int()
		if pv == 0 {
			pv = rep.Get("migration.at_us").Int()
		}
		// The reset window: scope start to two new-path RTTs after the
		// first window decrease at or after the migration.
		end := rep.Get("scope_to_us").Int()
		first := int64(-1)
		for _, e := range rep.Get("events").Array() {
			if at := e.Get("at_us").Int(); at >= pv && (first < 0 || at < first) {
				first = at
			}
		}
		if first >= 0 {
			end = min(end, first+fidResetWindowRTTs*newRTTUS(man, rep))
		}
		resetFrom, resetTo = mono(rep.Get("scope_from_us").Int()), mono(end)
		if t := anc.Get("trace_us").Int(); t != pv {
			out = append(out, fmt.Sprintf("anchor at trace %d µs, the survey's migration is at %d µs", t, pv))
		}
		need := [][2]int64{{rep.Get("scope_from_us").Int(), rep.Get("scope_to_us").Int()}}
		if at, s := rep.Get("rtt.first_after_at_us").Int(), rep.Get("rtt.first_after_us").Int(); at > 0 && s > 0 {
			need = append(need, [2]int64{at - s - fidSampleLeadUS, at})
		}
		for _, n := range need {
			if mono(n[0]) < from || mono(n[1]) > to {
				out = append(out, fmt.Sprintf("verdict window %.3f s long does not cover trace %.3f–%.3f s", float64(to-from)/1e9, float64(n[0])/1e6, float64(n[1])/1e6))
			}
		}
	}
	// Host stalls: from the whole repetition's list, not the window's own.
	var worst float64
	stalls := append(f.Get("repetition.stalls").Array(), win.Get("stalls").Array()...)
	seen := map[int64]bool{}
	for _, s := range stalls {
		at, late := s.Get("at_ns").Int(), s.Get("late_ns").Int()
		if at < from || at > to || seen[at] {
			continue
		}
		seen[at] = true
		if at < resetFrom || at > resetTo {
			continue
		}
		worst = math.Max(worst, float64(late)/1e6)
		if late > maxStall {
			out = append(out, fmt.Sprintf("host stall of %.1f ms in the reset window, %+.3f s into the verdict window (limit %.1f ms)", float64(late)/1e6, float64(at-from)/1e9, float64(maxStall)/1e6))
		}
	}
	if span := float64(to-from) / 1e6; span >= 10 && float64(win.Get("sentinel_samples").Int()) < fidMinSentinelShare*span {
		out = append(out, fmt.Sprintf("the sentinel woke %d times in %.0f ms: host stalls unknown", win.Get("sentinel_samples").Int(), span))
	}
	var worstFrac float64
	win.Get("dirs").ForEach(func(k, dir gjson.Result) bool {
		n, late := dir.Get("packets").Int(), dir.Get("late_over_tolerance").Int()
		if late > n || late < 0 {
			out = append(out, fmt.Sprintf("path %s: %d late of %d packets is impossible", k.String(), late, n))
			return true
		}
		if n > 0 {
			fr := float64(late) / float64(n)
			worstFrac = math.Max(worstFrac, fr)
			if late > fidMaxLatePackets && fr > fidMaxLateFraction {
				out = append(out, fmt.Sprintf("path %s: %d of %d packets (%.2f%%) later than %.1f ms in the verdict window (limit %.0f%% or %d packets)", k.String(), late, n, 100*fr, fidLateToleranceNS/1e6, 100*fidMaxLateFraction, fidMaxLatePackets))
			}
		}
		if wd := dir.Get("write_drops").Int(); wd > 0 {
			out = append(out, fmt.Sprintf("path %s: %d packets the emulator failed to deliver", k.String(), wd))
		}
		return true
	})
	if win.Get("truncated").Bool() {
		out = append(out, "the emulator's record of the verdict window was overwritten")
	}
	for i, s := range f.Get("rtt_sample_windows").Array() {
		s.Get("dirs").ForEach(func(k, dir gjson.Result) bool {
			if l := dir.Get("late_max_ns").Int(); l > fidSampleMaxLateNS {
				out = append(out, fmt.Sprintf("RTT sample %d: a packet on %s %.2f ms late (limit %.2f ms)", i+1, k.String(), float64(l)/1e6, fidSampleMaxLateNS/1e6))
			}
			return true
		})
		for _, st := range s.Get("stalls").Array() {
			if l := st.Get("late_ns").Int(); l > fidSampleMaxStallNS {
				out = append(out, fmt.Sprintf("RTT sample %d: host stall of %.2f ms (limit %.2f ms)", i+1, float64(l)/1e6, fidSampleMaxStallNS/1e6))
			}
		}
	}
	return worst, worstFrac, out
}

// newRTTUS is the configured RTT of the path migrated to: the manifest's
// path B, else the survey's new-path RTT, else twice the study's 20 ms.
func newRTTUS(man, rep gjson.Result) int64 {
	if r := man.Get("paths.B.rtt_us").Int(); r > 0 {
		return r
	}
	if r := rep.Get("new_path_rtt_us").Int(); r > 0 {
		return r
	}
	return 2 * fidDefaultMinRTTUS
}

// minRTTUS is the shortest configured path RTT: the manifest's paths, else
// the survey's old and new path RTTs, else the study's 20 ms.
func minRTTUS(man, rep gjson.Result) int64 {
	var m int64
	for _, r := range []int64{man.Get("paths.A.rtt_us").Int(), man.Get("paths.B.rtt_us").Int()} {
		if r > 0 && (m == 0 || r < m) {
			m = r
		}
	}
	if m > 0 {
		return m
	}
	for _, r := range []int64{rep.Get("new_path_rtt_us").Int(), rep.Get("rtt.old_path_us").Int()} {
		if r > 0 && (m == 0 || r < m) {
			m = r
		}
	}
	if m > 0 {
		return m
	}
	return fidDefaultMinRTTUS
}
