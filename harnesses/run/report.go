package run

import (
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/migaudit/migaudit/discriminator"
	"github.com/migaudit/migaudit/survey/tables"
)

// PrintTable prints one row per repetition and the aggregate line.
func PrintTable(w io.Writer, s *Summary) {
	cal := "calibrated"
	switch {
	case !s.Calibration.Calibrated:
		cal = "UNCALIBRATED (--skip-calibration)"
	case !s.Calibration.Passed:
		cal = "calibration FAILED"
	}
	fmt.Fprintf(w, "%s %s, scenario %s, cc %s, %s; path A %s, path B %s\n", s.Implementation, s.Version, s.Scenario, orDefault(s.CC),
		cal, s.Calibration.Paths[PathA], s.Calibration.Paths[PathB])
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "REP\tSTATUS\tCLIENT MOVED TO\tWINDOW BEFORE\tWINDOW AFTER\tRESET\tFIRST RTT AFTER\tRTT IS\tQ1\tQ3\tCOMPLETE\tFIDELITY (VERDICT WINDOW)")
	for _, r := range allAttempts(s) {
		moved := "-"
		if len(r.Verification.Evidence) > 0 || len(r.Verification.Problems) > 0 {
			moved = movedTo(r)
		}
		id := strconv.Itoa(r.Rep)
		if r.Attempt > 1 || r.Status == Spoiled {
			id = fmt.Sprintf("%d.%d", r.Rep, r.Attempt)
		}
		fid := "-"
		if r.Fidelity != nil {
			fid = r.Fidelity.Summary
		}
		a := r.Analysis
		if a == nil || r.Status == Spoiled {
			// Never a verdict on spoiled data.
			fmt.Fprintf(tw, "%s\t%s\t%s\t-\t-\t-\t-\t-\t-\t-\t%v\t%s\n", id, r.Status, moved, r.Completed, fid)
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s B\t%s B\t%v\t%s\t%s\t%s\t%s\t%v\t%s\n", id, r.Status, moved,
			tables.Thousands(a.WindowBeforeBytes), tables.Thousands(a.WindowAfterBytes), a.ResetObserved,
			ms(a.RTT.FirstAfterUS), a.RTT.Attribution, a.Q1.Answer, a.Q3.Answer, r.Completed, fid)
		if r.Return != nil {
			b := r.Return
			fmt.Fprintf(tw, "%d↩\t(return B→A)\t\t%s B\t%s B\t%v\t%s\t%s\t%s\t%s\t\n", r.Rep,
				tables.Thousands(b.WindowBeforeBytes), tables.Thousands(b.WindowAfterBytes), b.ResetObserved,
				ms(b.RTT.FirstAfterUS), b.RTT.Attribution, b.Q1.Answer, b.Q3.Answer)
		}
	}
	tw.Flush()
	for _, r := range allAttempts(s) {
		switch {
		case r.Status == Spoiled:
			fmt.Fprintf(w, "rep %d.%d SPOILED (kept in %s, not counted): %s\n", r.Rep, r.Attempt, r.Dir, spoiledReason(r))
		case r.Status != Valid:
			fmt.Fprintf(w, "rep %d %s: %s\n", r.Rep, r.Status, strings.Join(append(append([]string{}, r.Verification.Problems...), nonEmpty(r.Error)...), "; "))
		}
	}
	fmt.Fprintln(w, s.Aggregate)
	fmt.Fprintf(w, "repetitions in %s\n", s.Out)
}

// allAttempts lists every attempt in order: each spoiled one before the
// counted one of the same repetition.
func allAttempts(s *Summary) []RepSummary {
	var out []RepSummary
	sp := s.Spoiled
	for _, r := range s.Reps {
		for len(sp) > 0 && sp[0].Rep <= r.Rep {
			out = append(out, sp[0])
			sp = sp[1:]
		}
		out = append(out, r)
	}
	return append(out, sp...)
}

// RunAggregate is the run's last line: how many of the wanted repetitions
// are valid and how many attempts the host spoiled, then Aggregate over
// the counted ones, e.g. "5/5 valid (2 re-run after host stalls); ...".
func RunAggregate(sc Scenario, wanted int, reps, spoiled []RepSummary) string {
	valid := 0
	for _, r := range reps {
		if r.Status == Valid {
			valid++
		}
	}
	head := fmt.Sprintf("%d/%d valid", valid, wanted)
	if len(spoiled) > 0 {
		head += fmt.Sprintf(" (%d re-run after host stalls)", len(spoiled))
	}
	return head + "; " + Aggregate(sc, reps)
}

func nonEmpty(s string) []string {
	if s == "" {
		return nil
	}
	return []string{s}
}

func orDefault(cc string) string {
	if cc == "" {
		return "(implementation default)"
	}
	return cc
}

func movedTo(r RepSummary) string {
	for _, e := range r.Verification.Evidence {
		if strings.HasPrefix(e, "client: ") {
			if i := strings.LastIndex(e, "now "); i >= 0 {
				return strings.TrimSpace(e[i+4:])
			}
			if i := strings.Index(e, `"to":"`); i >= 0 {
				rest := e[i+6:]
				return rest[:strings.IndexByte(rest, '"')]
			}
		}
	}
	return "?"
}

// Aggregate summarises the VALID repetitions, e.g. "reset observed 5/5 at
// 14,520 B; pre-migration peaks 532,322–572,685 B; ...".
func Aggregate(sc Scenario, reps []RepSummary) string {
	var valid []RepSummary
	invalid, failed, spoiled, completed := 0, 0, 0, 0
	for _, r := range reps {
		switch r.Status {
		case Valid:
			valid = append(valid, r)
		case Invalid:
			invalid++
		case Spoiled:
			spoiled++
		default:
			failed++
		}
		if r.Completed {
			completed++
		}
	}
	kind := "IP migrations"
	if !sc.IsIPMigration() {
		kind = "port-only rebindings"
	}
	parts := []string{fmt.Sprintf("%d/%d repetitions verified as %s", len(valid), len(reps), kind)}
	if invalid > 0 {
		parts = append(parts, fmt.Sprintf("%d INVALID (kept, excluded)", invalid))
	}
	if failed > 0 {
		parts = append(parts, fmt.Sprintf("%d FAILED", failed))
	}
	if spoiled > 0 {
		parts = append(parts, fmt.Sprintf("%d SPOILED by the host after every retry (kept, excluded)", spoiled))
	}
	parts = append(parts, describe("", valid, func(r RepSummary) *discriminator.Analysis { return r.Analysis })...)
	if sc == MigrateBack {
		ret := describe("return B→A: ", valid, func(r RepSummary) *discriminator.Analysis { return r.Return })
		parts = append(parts, ret...)
	}
	parts = append(parts, fmt.Sprintf("transfers completed %d/%d", completed, len(reps)))
	return strings.Join(parts, "; ")
}

func describe(prefix string, valid []RepSummary, get func(RepSummary) *discriminator.Analysis) []string {
	var resets, peaks, afters, rtts []int64
	attr := map[string]int{}
	q3 := map[string]int{}
	onWire := 0
	n := 0
	for _, r := range valid {
		a := get(r)
		if a == nil {
			continue
		}
		n++
		if a.ResetObserved {
			resets = append(resets, a.WindowAfterBytes)
		} else {
			afters = append(afters, a.WindowAfterBytes)
		}
		peaks = append(peaks, a.WindowBeforeBytes)
		if a.RTT.FirstAfterUS > 0 {
			rtts = append(rtts, a.RTT.FirstAfterUS)
		}
		attr[a.RTT.Attribution]++
		q3[a.Q3.Answer]++
		if a.RTT.Wire != nil && a.RTT.Wire.Decides {
			onWire++
		}
	}
	if n == 0 {
		return []string{prefix + "no analysed repetitions"}
	}
	var out []string
	s := fmt.Sprintf("%sreset observed %d/%d", prefix, len(resets), n)
	if len(resets) > 0 {
		s += " at " + tables.ByteRange(resets)
	}
	if len(afters) > 0 {
		s += "; without reset, lowest window after migration " + tables.ByteRange(afters)
	}
	out = append(out, s)
	out = append(out, "pre-migration peaks "+tables.ByteRange(peaks))
	if len(rtts) > 0 {
		out = append(out, fmt.Sprintf("first post-migration RTT %s (%s)", rangeMS(rtts), counts(attr, n)))
	}
	// Q3 per repetition, and how many the wire decided (the rest rest on
	// RTT values: no capture or no key log).
	out = append(out, fmt.Sprintf("Q3 %s (through the packet on the wire %d/%d)", counts(q3, n), onWire, n))
	if q2 := describeQ2(valid, get); q2 != "" {
		out = append(out, q2)
	}
	return out
}

// describeQ2 summarises Q2 over the repetitions whose analysis carries
// one (wire evidence), e.g. "Q2 NO 5/5 (validation round trip 131–142 ms
// on the wire, data 41–44 ms; first estimate 100.0 ms = default)"; ""
// when none does. Repetitions whose round trips were not 2× apart say so.
func describeQ2(valid []RepSummary, get func(RepSummary) *discriminator.Analysis) string {
	count := map[string]int{}
	var pv, data, first []int64
	n, notDistinct := 0, 0
	defaults := 0
	for _, r := range valid {
		a := get(r)
		if a == nil || a.Q2 == nil {
			continue
		}
		q := a.Q2
		n++
		count[q.Answer]++
		if q.PVRTTUS > 0 {
			pv = append(pv, q.PVRTTUS)
		}
		if q.DataRTTUS > 0 {
			data = append(data, q.DataRTTUS)
		}
		if !q.Distinct {
			notDistinct++
		}
		if q.FirstRTTAfterUS > 0 {
			first = append(first, q.FirstRTTAfterUS)
			if q.PriorUS > 0 && q.DefaultUS > 0 && abs(q.PriorUS-q.DefaultUS) <= 1000 {
				defaults++
			}
		}
	}
	if n == 0 {
		return ""
	}
	var why []string
	if len(pv) > 0 {
		s := "validation round trip " + rangeMS(pv) + " on the wire"
		if len(data) > 0 {
			s += ", data " + rangeMS(data)
		}
		why = append(why, s)
	}
	if notDistinct > 0 {
		why = append(why, fmt.Sprintf("%d/%d not 2× apart: not valid for Q2", notDistinct, n))
	}
	if len(first) > 0 {
		s := "first estimate " + rangeMS(first)
		if defaults == len(first) {
			s += " = default"
		}
		why = append(why, s)
	}
	out := "Q2 " + counts(count, n)
	if len(why) > 0 {
		out += " (" + strings.Join(why, "; ") + ")"
	}
	return out
}

// counts renders a tally as "A 1/5, B 4/5", keys in order.
func counts(m map[string]int, n int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %d/%d", k, m[k], n))
	}
	return strings.Join(parts, ", ")
}

func abs(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}

func rangeMS(v []int64) string {
	lo, hi := minMax(v)
	if lo == hi {
		return ms(lo)
	}
	return strings.TrimSuffix(ms(lo), " ms") + "–" + ms(hi)
}

func minMax(v []int64) (int64, int64) {
	lo, hi := v[0], v[0]
	for _, x := range v[1:] {
		lo, hi = min(lo, x), max(hi, x)
	}
	return lo, hi
}

func ms(us int64) string {
	if us == 0 {
		return "-"
	}
	return strconv.FormatFloat(float64(us)/1000, 'f', 1, 64) + " ms"
}
