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
		if seen && inScope && s.CwndBytes < p {
			c := classify(s.CwndBytes, p, cs)
			c.AtUS, c.PathID = s.TimeUS, s.PathID
			if t, ok := lastEvent[s.PathID]; ok {
				c.SincePreviousUS = s.TimeUS - t
			}
			lastEvent[s.PathID] = s.TimeUS
			out = append(out, classified{c, i})
		}
		prev[s.PathID] = s.CwndBytes
		lastPath, havePrev = s.PathID, true
	}
	return out
}

// classify explains one decrease from prev to v with the constants.
func classify(v, prev int64, cs constantSet) Collapse {
	c := Collapse{ValueBytes: v, PreviousBytes: prev}
	isReset := containsInt(cs.initial, v)
	backoff, backoffText := isBackoff(v, prev, cs)
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
			prev, v, joinInts(cs.initial, " / "), orUnknown(cs.minWindow), notBackoff(prev, cs))
	default:
		c.Kind = Unexplained
		c.Explanation = fmt.Sprintf("%d → %d: not an initial window (%s), not the floor (%s)%s",
			prev, v, joinInts(cs.initial, " / "), orUnknown(cs.minWindow), notBackoff(prev, cs))
	}
	return c
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

func notBackoff(prev int64, cs constantSet) string {
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
