package validator

import (
	"fmt"
	"math"
	"strings"

	"github.com/migaudit/migaudit/survey"
	"github.com/tidwall/gjson"
)

// The fidelity rule, held here independently of harnesses/run (which
// writes its own copy into every manifest): a manifest may not carry a
// looser rule than this one, and every counted repetition is re-judged by
// this one from its raw figures, whatever rule it was recorded under (the
// first rule, fixed limits, was stricter everywhere the verdict is
// concerned). docs/testbed.md derives each figure; in short, lateness and
// stalls can change a verdict only by inflating the RTT sample it reads,
// by shifting the ACK clock in the reset window, or by letting a packet be
// overtaken by one on the other path (each path is FIFO).
const (
	fidRuleName = "verdict-sensitivity/3"
	// fidRuleName2 is the rule before the emulator's order record: its
	// manifests carry no order figures, so the density estimate alone
	// judges them, as it did.
	fidRuleName2        = "verdict-sensitivity/2"
	fidLateToleranceNS  = 1_000_000 // lateness counted from here; the slower path's cross-path limit
	fidMinSentinelShare = 0.5       // the sentinel must have woken for half the window's milliseconds
	fidSampleLeadUS     = 5_000     // a sample window starts one sample RTT and 5 ms before it
	fidDefaultMinRTTUS  = 20_000    // when neither manifest nor survey gives a path RTT
	fidResetWindowRTTs  = 2         // the stall rule holds to this many new-path RTTs after the first decrease
	fidPacketThreshold  = 3         // RFC 9002 kPacketThreshold
	fidStallPeriodNS    = 1_000_000 // the sentinel's period: a stall's ends are known to within it
	// A sample whose value and references this validator cannot read (a
	// second sample in a manifest without rtt_samples) is held to the
	// first rule's fixed limits instead of its sensitivity.
	fidSampleMaxLateNS  = 1_000_000
	fidSampleMaxStallNS = 2_000_000
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
		ws, wf, problems := fidelityProblems(v, im, man, rep)
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
func fidelityProblems(v *Validator, im, man, rep gjson.Result) (float64, float64, []string) {
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
	owdA, owdB := oneWayNS(man, rep)
	// The cross-path limit of a packet on path p written in a span of
	// spanNS (0: density unknown) in which the other path wrote
	// otherPackets in the same direction: on the faster path the one-way
	// difference (it cannot be overtaken below it); on the slower path,
	// 9/8 of the shortest RTT less the difference (the time threshold)
	// when the faster path wrote fewer than 3 packets there (never 3
	// overtakers) or 3 per difference (3 overtakers without lateness),
	// else the tolerance. Both capped at the stall limit.
	slow := max(fidLateToleranceNS, min(maxStall, minRTT*1000*9/8-absDiff(owdA, owdB)))
	reorder := func(p string, otherPackets, spanNS int64) int64 {
		own, other := owdA, owdB
		if p == "B" {
			own, other = owdB, owdA
		}
		if other-own > fidLateToleranceNS {
			return max(fidLateToleranceNS, min(maxStall, other-own))
		}
		d := own - other
		if otherPackets < fidPacketThreshold || (d > 0 && spanNS > 0 && otherPackets*d >= fidPacketThreshold*spanNS) {
			return slow
		}
		return fidLateToleranceNS
	}
	rule := f.Get("rule")
	if n := rule.Get("name").String(); n != "" && n != fidRuleName && n != fidRuleName2 {
		out = append(out, fmt.Sprintf("rule %q is not this validator's %q", n, fidRuleName))
	}
	for _, r := range []struct {
		name string
		got  float64
		want float64
	}{
		{"max_stall_ns", rule.Get("max_stall_ns").Float(), float64(maxStall)},
		{"reset_window_rtts", rule.Get("reset_window_rtts").Float(), fidResetWindowRTTs},
		{"fast_path_reorder_ns", rule.Get("fast_path_reorder_ns").Float(), float64(max(fidLateToleranceNS, min(maxStall, absDiff(owdA, owdB))))},
		{"slow_path_reorder_ns", rule.Get("slow_path_reorder_ns").Float(), float64(slow)},
		// The first rule's limits, where a manifest still carries them.
		{"sample_max_late_ns", rule.Get("sample_max_late_ns").Float(), fidSampleMaxLateNS},
		{"sample_max_stall_ns", rule.Get("sample_max_stall_ns").Float(), fidSampleMaxStallNS},
	} {
		if r.got > r.want {
			out = append(out, fmt.Sprintf("rule %s is %g, looser than %g", r.name, r.got, r.want))
		}
	}
	if pt := rule.Get("packet_threshold"); pt.Exists() && pt.Int() != fidPacketThreshold {
		out = append(out, fmt.Sprintf("rule packet_threshold is %d, RFC 9002's is %d", pt.Int(), fidPacketThreshold))
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
	var sampleFrom, sampleTo int64 // the survey's RTT sample, emulator ns
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
			sampleFrom, sampleTo = mono(at-s-fidSampleLeadUS), mono(at)
		}
		for _, n := range need {
			if mono(n[0]) < from || mono(n[1]) > to {
				out = append(out, fmt.Sprintf("verdict window %.3f s long does not cover trace %.3f–%.3f s", float64(to-from)/1e9, float64(n[0])/1e6, float64(n[1])/1e6))
			}
		}
	}
	// Host stalls: from the whole repetition's list, not the window's own.
	var worst float64
	allStalls := append(f.Get("repetition.stalls").Array(), win.Get("stalls").Array()...)
	seen := map[int64]bool{}
	for _, s := range allStalls {
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
	dirs := win.Get("dirs")
	dirs.ForEach(func(k, dir gjson.Result) bool {
		n, late := dir.Get("packets").Int(), dir.Get("late_over_tolerance").Int()
		if late > n || late < 0 {
			out = append(out, fmt.Sprintf("path %s: %d late of %d packets is impossible", k.String(), late, n))
			return true
		}
		if n > 0 {
			// The share is recorded, not judged: lateness does not
			// accumulate, and what one late packet can do is judged below.
			worstFrac = math.Max(worstFrac, float64(late)/float64(n))
		}
		if wd := dir.Get("write_drops").Int(); wd > 0 {
			out = append(out, fmt.Sprintf("path %s: %d packets the emulator failed to deliver", k.String(), wd))
		}
		if p := crossPathProblem(f, win, k.String(), dir, owdA, owdB, reorder); p != "" {
			out = append(out, p)
		}
		return true
	})
	if win.Get("truncated").Bool() {
		out = append(out, "the emulator's record of the verdict window was overwritten")
	}
	recorded := f.Get("rtt_samples").Array()
	for i, s := range f.Get("rtt_sample_windows").Array() {
		if s.Get("truncated").Bool() {
			out = append(out, fmt.Sprintf("RTT sample %d: the lateness around it was not measured", i+1))
			continue
		}
		sFrom, sTo := s.Get("from_ns").Int(), s.Get("to_ns").Int()
		var up, down, stalls int64
		// Stalls around the sample, from the repetition's list too.
		seenS := map[int64]bool{}
		var worstStall int64
		var spans [][2]int64
		for _, st := range append(s.Get("stalls").Array(), f.Get("repetition.stalls").Array()...) {
			at, l := st.Get("at_ns").Int(), st.Get("late_ns").Int()
			// A stall that began before the window and ran into it
			// froze the sample's round trip too.
			if seenS[at] || (st.Get("at_ns").Exists() && sTo > sFrom && (at+l < sFrom || at > sTo)) {
				continue
			}
			seenS[at] = true
			stalls += max(l, 0)
			worstStall = max(worstStall, l)
			spans = append(spans, [2]int64{at - fidStallPeriodNS, at + l + 2*fidStallPeriodNS})
		}
		// A packet late because a stall froze the emulator (due and
		// written within it) is that stall, which adds its length once
		// to any chain of events running through it.
		s.Get("dirs").ForEach(func(k, dir gjson.Result) bool {
			l := max(dir.Get("late_max_ns").Int(), 0)
			w := dir.Get("late_max_at_ns").Int()
			for _, sp := range spans {
				if w > 0 && sp[0] <= w-l && w <= sp[1] {
					return true
				}
			}
			if strings.HasSuffix(k.String(), "/up") {
				up = max(up, l)
			} else {
				down = max(down, l)
			}
			return true
		})
		val, olds, newPath, def, ok := sampleRefs(v, im, rep, recorded, i)
		if i == 0 && sampleTo > 0 && (sFrom > sampleFrom || sTo < sampleTo) {
			out = append(out, fmt.Sprintf("RTT sample 1: its window does not cover the survey's sample (trace %.3f ms)", float64(rep.Get("rtt.first_after_at_us").Int())/1000))
		}
		if !ok {
			// Nothing to re-derive the attribution from: the first rule.
			if l := max(up, down); l > fidSampleMaxLateNS {
				out = append(out, fmt.Sprintf("RTT sample %d: a packet %.2f ms late (limit %.2f ms; the sample's value is not recorded)", i+1, float64(l)/1e6, fidSampleMaxLateNS/1e6))
			}
			if worstStall > fidSampleMaxStallNS {
				out = append(out, fmt.Sprintf("RTT sample %d: host stall of %.2f ms (limit %.2f ms; the sample's value is not recorded)", i+1, float64(worstStall)/1e6, fidSampleMaxStallNS/1e6))
			}
			continue
		}
		infl := up + down + stalls
		// A Q3 the wire decides (the validator's own reading of the
		// repetition's wire claims) rests on the packet behind the sample,
		// not its value: delay the host added moves the value, not the
		// path the packet crossed (a packet overtaken across paths is
		// judged above).
		if i == 0 {
			if _, _, stated, err := v.wireQ3(im, rep); stated && err == nil {
				continue
			}
		}
		if at, x, a, held := sampleHolds(val, olds, newPath, def, infl); !held {
			out = append(out, fmt.Sprintf("RTT sample %d: %.3f ms reads %s, but %.3f ms reads %s, and the host may have added %.2f ms (packets %.2f ms late up + %.2f ms down, stalls %.2f ms): its attribution could be the host's", i+1, float64(val)/1000, orUndecided(at), float64(x)/1000, orUndecided(a), float64(infl)/1e6, float64(up)/1e6, float64(down)/1e6, float64(stalls)/1e6))
		}
	}
	return worst, worstFrac, out
}

// sampleHolds says whether an RTT sample of val µs, which lateness and
// stalls may have inflated by up to infl ns, reads the same (attributionOf)
// at every whole µs down to val − infl; if not, x is the highest value
// that reads otherwise (as a). A sample at the default (to the trace's
// rounding) is no measurement at all: the estimator took no sample, so no
// lateness went into it.
func sampleHolds(val int64, olds []int64, newPath, def, infl int64) (at string, x int64, a string, held bool) {
	at = attributionOf(val, olds, newPath, def)
	if at == "default" {
		return at, 0, "", true
	}
	lo := max(val-(infl+999)/1000, 1)
	for x := val - 1; x >= lo; x-- {
		if a := attributionOf(x, olds, newPath, def); a != at {
			return at, x, a, false
		}
	}
	return at, 0, "", true
}

// crossPathProblem judges one direction while the other path carried
// traffic in the same direction: a packet written at w, ℓ late, can be
// overtaken only by a packet of the other path written by w, so from the
// other direction's first write to its last + ℓ (+ the one-way delays'
// difference when this path is the slower). The whole window's worst
// lateness answers when it is within the limit; else the runner's
// measurement of exactly that span (cross_paths); else the window's first
// late packet, when it comes after the span.
func crossPathProblem(f, win gjson.Result, dir string, dv gjson.Result, owdA, owdB int64, reorder func(string, int64, int64) int64) string {
	p, rest, _ := strings.Cut(dir, "/")
	op, own, oth := "B", owdA, owdB
	if p == "B" {
		op, own, oth = "A", owdB, owdA
	}
	other := op + "/" + rest
	o := win.Get("dirs." + gjsonEscape(other))
	if !o.Exists() || o.Get("packets").Int() == 0 || o.Get("first_sent_ns").Int() == 0 {
		return ""
	}
	lateMax := dv.Get("late_max_ns").Int()
	from := max(win.Get("from_ns").Int(), o.Get("first_sent_ns").Int())
	to := min(win.Get("to_ns").Int(), o.Get("last_sent_ns").Int()+max(lateMax, 0)+max(own-oth, 0))
	if to < from {
		return ""
	}
	// Without a measurement of the span: the window's count of the
	// other path's packets (at least the span's) and no density.
	otherPackets, spanNS := o.Get("packets").Int(), int64(0)
	how := "the whole window's worst"
	var measured gjson.Result
	for _, c := range f.Get("cross_paths").Array() {
		if c.Get("dir").String() == dir && c.Get("measured").Bool() && c.Get("from_ns").Int() <= from && c.Get("to_ns").Int() >= to {
			lateMax, how, measured = c.Get("late_max_ns").Int(), "measured over that span", c
			otherPackets, spanNS = c.Get("other_packets").Int(), c.Get("to_ns").Int()-c.Get("from_ns").Int()
			break
		}
	}
	limit := reorder(p, otherPackets, spanNS)
	if lateMax <= limit {
		return ""
	}
	// The emulator's order record of that span: a packet over the
	// density estimate's limit could not have been overtaken, or have
	// overtaken, when no packet of this direction over the limit was
	// written out of its scheduled order against the other path's; then
	// only timing is left, held to the limit with no reordering (the time
	// threshold, or the one-way difference, capped at the stall limit).
	if measured.Get("order_checked").Bool() {
		if measured.Get("order_packets").Int() > 0 && measured.Get("order_late_max_ns").Int() > limit {
			return fmt.Sprintf("path %s: a packet %.2f ms late while path %s carried traffic, written out of its scheduled order against path %s's packets (%d pairs, the emulator's record): it could have looked lost (limit %.2f ms)",
				dir, float64(measured.Get("order_late_max_ns").Int())/1e6, other, other, measured.Get("order_changed_pairs").Int(), float64(limit)/1e6)
		}
		if cap := reorder(p, 0, 0); lateMax > cap {
			return fmt.Sprintf("path %s: a packet %.2f ms late while path %s carried traffic, its order kept: past the time threshold or the ACK clock's limit (%.2f ms)", dir, float64(lateMax)/1e6, other, float64(cap)/1e6)
		}
		return ""
	}
	if e := dv.Get("earliest_late_ns").Int(); dv.Get("late_over_tolerance").Int() == 0 || e > to {
		return "" // no packet over the tolerance (≤ every limit) before the span ended
	}
	w0 := win.Get("from_ns").Int()
	return fmt.Sprintf("path %s: a packet %.2f ms late (%s) while path %s carried traffic (%+.3f–%+.3f s into the verdict window, %d packets there): it could have been overtaken and looked lost (limit %.2f ms)",
		dir, float64(lateMax)/1e6, how, other, float64(from-w0)/1e9, float64(to-w0)/1e9, otherPackets, float64(limit)/1e6)
}

func absDiff(a, b int64) int64 {
	if a > b {
		return a - b
	}
	return b - a
}

// sampleRefs is RTT sample i's value and the references its attribution
// compares it with: for the first, the survey's value, the trace's last
// smoothed RTT before the migration (as checkLive reads it; the survey's
// old-path figure without the trace), the new path's and the default; for
// a later one, what the manifest recorded. ok is false when there is none.
func sampleRefs(v *Validator, im, rep gjson.Result, recorded []gjson.Result, i int) (val int64, olds []int64, newPath, def int64, ok bool) {
	if i == 0 && rep.Get("rtt.first_after_us").Int() > 0 {
		val = rep.Get("rtt.first_after_us").Int()
		def = defaultRTTConstant(im, rep.Get("rtt.default_us").Int())
		olds = []int64{rep.Get("rtt.old_path_us").Int()}
		if tr, err := v.repTrace(im, rep); err == nil {
			if _, last := rttFacts(tr, rep.Get("migration.at_us").Int(), def); last > 0 {
				olds = append(olds, last)
			}
		}
		newPath = rep.Get("new_path_rtt_us").Int()
		if newPath == 0 {
			newPath = rep.Get("rtt.new_path_us").Int()
		}
		return val, olds, newPath, def, true
	}
	if i < len(recorded) && recorded[i].Get("value_us").Int() > 0 {
		r := recorded[i]
		olds = []int64{r.Get("old_path_us").Int(), r.Get("old_path_measured_us").Int()}
		return r.Get("value_us").Int(), olds, r.Get("new_path_us").Int(), r.Get("default_us").Int(), true
	}
	return 0, nil, 0, 0, false
}

func orUndecided(a string) string {
	if a == "" {
		return "undecided"
	}
	return a
}

// gjsonEscape escapes a key for a gjson path ("A/up" has no specials, but
// a dot or wildcard would).
func gjsonEscape(k string) string {
	r := strings.NewReplacer(".", `\.`, "*", `\*`, "?", `\?`)
	return r.Replace(k)
}

// oneWayNS is the paths' configured one-way delays (half their RTTs): the
// manifest's paths, else the survey's old and new path RTTs.
func oneWayNS(man, rep gjson.Result) (a, b int64) {
	a, b = man.Get("paths.A.rtt_us").Int()*500, man.Get("paths.B.rtt_us").Int()*500
	if a <= 0 {
		a = rep.Get("rtt.old_path_us").Int() * 500
	}
	if b <= 0 {
		b = newRTTUS(man, rep) * 500
	}
	return a, b
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
