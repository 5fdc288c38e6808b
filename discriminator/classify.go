package discriminator

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/migaudit/migaudit/parsers/timeline"
)

// reportsCwnd says whether a sample reported its window. Timelines whose
// parser set no Fields at all are read as reporting every non-zero value;
// carried-forward values never look like a decrease either way.
func reportsCwnd(s timeline.Sample, anyFields bool) bool {
	if anyFields {
		return s.Fields.Has(timeline.FieldCwnd)
	}
	return s.CwndBytes > 0
}

func reportsSmoothed(s timeline.Sample, anyFields bool) bool {
	if anyFields {
		return s.Fields.Has(timeline.FieldSmoothedRTT) && s.SmoothedRTTUS > 0
	}
	return s.SmoothedRTTUS > 0
}

func hasAnyFields(samples []timeline.Sample) bool {
	for _, s := range samples {
		if s.Fields != 0 {
			return true
		}
	}
	return false
}

// classified is a Collapse plus the sample index it came from.
type classified struct {
	Collapse
	index int
}

// classifyDecreases classifies every window decrease whose sample lies in
// [from, to], per path. A path that first appears inside the scope at an
// initial window while another path exists is a new path born at its
// initial window (quiche's per-path state): reported as RESET from the
// other path's window.
func classifyDecreases(samples []timeline.Sample, from, to int64, cs constantSet, anyFields bool) []classified {
	prev := map[string]int64{}
	lastEvent := map[string]int64{}
	hist := map[string][]cwndPoint{} // since the path's last decrease
	var lastPath string
	havePrev := false
	var out []classified
	for i, s := range samples {
		if !reportsCwnd(s, anyFields) {
			continue
		}
		p, seen := prev[s.PathID]
		inScope := s.TimeUS >= from && s.TimeUS <= to
		if !seen && inScope && havePrev && lastPath != s.PathID && containsInt(cs.initial, s.CwndBytes) {
			c := Collapse{
				Kind: Reset, AtUS: s.TimeUS, ValueBytes: s.CwndBytes, PreviousBytes: prev[lastPath], PathID: s.PathID,
				Explanation: fmt.Sprintf("new path %q starts at initial window %d (path %q was at %d)", s.PathID, s.CwndBytes, lastPath, prev[lastPath]),
			}
			out = append(out, classified{c, i})
			lastEvent[s.PathID] = s.TimeUS
		}
		h := hist[s.PathID]
		for len(h) > 0 && (s.TimeUS-h[0].t > growthLookbackUS || h[0].t < from) {
			h = h[1:]
		}
		if seen && inScope && s.CwndBytes < p {
			sc := seriesContext{from: from, atUS: s.TimeUS, hist: h}
			if len(h) > 0 {
				sc.sinceUS = s.TimeUS - h[len(h)-1].t
			}
			sc.resumesAt, sc.resumes = nextOnPath(samples[i+1:], s.PathID, to, anyFields)
			c := classifyIn(s.CwndBytes, p, cs, sc)
			c.AtUS, c.PathID = s.TimeUS, s.PathID
			if t, ok := lastEvent[s.PathID]; ok {
				c.SincePreviousUS = s.TimeUS - t
			}
			lastEvent[s.PathID] = s.TimeUS
			out = append(out, classified{c, i})
			if sc.resumes.CwndBytes < p {
				h = nil // the series itself fell: its growth restarts here
			}
		}
		if s.TimeUS >= from {
			h = append(h, cwndPoint{s.TimeUS, s.CwndBytes})
		}
		hist[s.PathID] = h
		prev[s.PathID] = s.CwndBytes
		lastPath, havePrev = s.PathID, true
	}
	return out
}

// seriesContext is what the series around one decrease shows: its history
// since its last decrease, the time since its last sample, and its next
// sample (resumes) if any.
type seriesContext struct {
	from, atUS, sinceUS int64
	hist                []cwndPoint
	resumes             timeline.Sample
	resumesAt           bool
}

// nextOnPath is the path's next window sample up to the scope's end (the
// one-pass analysis holds nothing later).
func nextOnPath(rest []timeline.Sample, path string, to int64, anyFields bool) (bool, timeline.Sample) {
	for _, s := range rest {
		if s.TimeUS > to {
			break
		}
		if s.PathID == path && reportsCwnd(s, anyFields) {
			return true, s
		}
	}
	return false, timeline.Sample{}
}

// classify explains one decrease from prev to v with the constants, with
// no series around it (the window at the loss is prev).
func classify(v, prev int64, cs constantSet) Collapse {
	return classifyIn(v, prev, cs, seriesContext{})
}

// classifyIn explains one decrease from prev to v with the constants and
// the series around it.
func classifyIn(v, prev int64, cs constantSet, sc seriesContext) Collapse {
	if cs.loss != nil && cs.loss.model {
		return classifyModel(v, prev, cs)
	}
	c := Collapse{ValueBytes: v, PreviousBytes: prev}
	isReset := containsInt(cs.initial, v)
	backoff, backoffText := isBackoff(v, prev, cs)
	if cs.loss != nil {
		backoff, backoffText = lossBackoff(v, prev, cs.loss, sc)
	}
	isFloor := cs.minWindow > 0 && v == cs.minWindow
	switch {
	case isReset:
		c.Kind = Reset
		c.Explanation = fmt.Sprintf("%d → %d = initial window %s (exact)", prev, v, joinInts(cs.initial, " / "))
		if backoff {
			c.Ambiguous = true
			c.Explanation += "; but also " + backoffText + ": a loss backoff gives the same number, so this is not evidence of a reset"
		}
		if isFloor {
			c.Ambiguous = true
			c.Explanation += "; but also the minimum window: a loss floor gives the same number"
		}
	case backoff:
		c.Kind = LossBackoff
		c.Explanation = backoffText
		if isFloor {
			c.Explanation += " (also the minimum window)"
		}
	case isFloor:
		c.Kind = LossFloor
		c.Explanation = fmt.Sprintf("%d → %d = minimum window (loss floor)", prev, v)
	case v < minInt(cs.initial):
		c.Kind = BelowInitial
		c.Explanation = fmt.Sprintf("%d → %d: below the initial window %s and not the floor %s%s — a loss cascade, never a reset",
			prev, v, joinInts(cs.initial, " / "), orUnknown(cs.minWindow), notBackoff(prev, cs, sc))
	default:
		c.Kind = Unexplained
		c.Explanation = fmt.Sprintf("%d → %d: not an initial window (%s), not the floor (%s)%s",
			prev, v, joinInts(cs.initial, " / "), orUnknown(cs.minWindow), notBackoff(prev, cs, sc))
	}
	return c
}

// lossBackoff matches v against the audited loss response, with the
// tolerance its arithmetic allows and no other:
//   - W = prev: v must be the code's own result on the previous sample;
//   - W > prev: the window grew between its last sample and the loss (the
//     response's Growth: ACKs processed before loss detection, or sampling),
//     by no more than the series' own fastest growth allows (growthBound);
//   - the series resumes at or above prev right after v: v is another
//     controller's window logged into the same series (metrics without a
//     path id); its W is bounded by the series' growth since the scope
//     began, the earliest a second path can have split off.
func lossBackoff(v, prev int64, r *lossRule, sc seriesContext) (bool, string) {
	cite := fmt.Sprintf("%s, %s", r.cite, r.which())
	if r.product(prev) == v {
		return true, fmt.Sprintf("%s = %d with W = %d, the previous sample (exact); %s", r.formula(), v, prev, cite)
	}
	if sc.hist == nil {
		return false, ""
	}
	g := boundGrowth(sc.hist, sc.sinceUS)
	if lo, hi, ok := r.windowsAt(v, prev+1, prev+g.bytes); ok {
		return true, fmt.Sprintf("%s = %d with W = %d%s = %d + %d B grown since the sample %s before (%s); %s",
			r.formula(), v, lo, rangeTail(lo, hi), prev, lo-prev, fmtMS(sc.sinceUS), g, cite)
	}
	if sc.resumesAt && sc.resumes.CwndBytes >= prev {
		g2 := boundGrowth(sc.hist, sc.atUS-sc.from)
		if lo, hi, ok := r.windowsAt(v, prev, prev+g2.bytes); ok {
			return true, fmt.Sprintf("%s = %d with W = %d%s = %d + %d B, not this series' own window: the series resumes at %d B at %s, back above %d B, which no growth from %d B reaches (metrics carry no path id; another controller or a state this series does not show); W %s since the scope began; %s",
				r.formula(), v, lo, rangeTail(lo, hi), prev, lo-prev, sc.resumes.CwndBytes, fmtMS(sc.resumes.TimeUS), prev, v, g2, cite)
		}
	}
	return false, ""
}

func rangeTail(lo, hi int64) string {
	if hi == lo {
		return ""
	}
	return fmt.Sprintf("…%d", hi)
}

// isBackoff allows the implementation's integer rounding of factor × prev:
// floor, round or truncation, ±1 B.
func isBackoff(v, prev int64, cs constantSet) (bool, string) {
	if !cs.hasFactor {
		return false, ""
	}
	prod := product(cs.factor, prev)
	if float64(v) < math.Floor(prod)-1 || float64(v) > math.Ceil(prod)+1 {
		return false, ""
	}
	how := "±1 B"
	switch {
	case prod == math.Trunc(prod) && float64(v) == prod:
		how = "exact"
	case float64(v) == math.Floor(prod):
		how = "floor"
	case float64(v) == math.Round(prod):
		how = "round"
	case float64(v) == math.Ceil(prod):
		how = "ceil"
	}
	return true, fmt.Sprintf("%s × %d = %s → %d (%s)", fmtFloat(cs.factor), prev, fmtFloat(prod), v, how)
}

func notBackoff(prev int64, cs constantSet, sc seriesContext) string {
	if cs.loss != nil {
		g := boundGrowth(sc.hist, sc.sinceUS)
		return fmt.Sprintf(", not %s (%s) of a window in [%d, %d] (%s)", cs.loss.formula(), cs.loss.cite, prev, prev+g.bytes, g)
	}
	if cs.cc != "" && !cs.hasFactor {
		return fmt.Sprintf(", no audited loss response for controller %q", cs.cc)
	}
	if !cs.hasFactor {
		return ", no loss factor in the data for this implementation"
	}
	return fmt.Sprintf(", not %s × %d = %s", fmtFloat(cs.factor), prev, fmtFloat(product(cs.factor, prev)))
}

// product is factor × prev rounded to 1e-6 so that binary floating point
// (0.7 × 10980 = 7685.999999999999) does not decide a rounding question.
func product(factor float64, prev int64) float64 {
	return math.Round(factor*float64(prev)*1e6) / 1e6
}

func orUnknown(v int64) string {
	if v == 0 {
		return "unknown"
	}
	return strconv.FormatInt(v, 10)
}

func fmtFloat(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

func containsInt(xs []int64, v int64) bool {
	for _, x := range xs {
		if x == v {
			return true
		}
	}
	return false
}

func minInt(xs []int64) int64 {
	m := xs[0]
	for _, x := range xs[1:] {
		m = min(m, x)
	}
	return m
}

func joinInts(xs []int64, sep string) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = strconv.FormatInt(x, 10)
	}
	return strings.Join(s, sep)
}
