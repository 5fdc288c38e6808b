package validator

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/migaudit/migaudit/data"
	"github.com/tidwall/gjson"
)

// backoffClaim is what a LOSS_BACKOFF explanation states:
// "⌊7/10 × W⌋ (int-muldiv) = 147724 with W = 211035 … ; lib/ngtcp2_cc.c:482 at v0.12.1, cubic".
var backoffClaim = regexp.MustCompile(`⌊(\d+)/(\d+) × W⌋ \(([a-z0-9-]+)\) = (\d+) with W = (\d+)`)
var backoffCite = regexp.MustCompile(`; ([^ ;]+):(\d+) at (\S+), ([a-z0-9]+), (the default controller|selected with --cc)`)

// checkCollapseArithmetic re-decides every LOSS_BACKOFF of every repetition
// with the validator's own arithmetic: the factor stated must be the one the
// implementation's audited controller applies (and its source line), the
// value must be that factor applied to the stated W in the stated integer
// or float arithmetic, and W must lie between the previous sample and what
// the trace's own series allows (no more above it than the series rose over
// the scope up to the collapse).
func checkCollapseArithmetic(v *Validator, doc, im gjson.Result) (Status, string) {
	var d verdict
	if noLive(&d, im) {
		return d.result()
	}
	name := im.Get("name").String()
	sourceLines(v, &d, im, name)
	n, legacy := 0, 0
	for _, rep := range im.Get("live.repetitions").Array() {
		id := rep.Get("id").String()
		f, err := v.repTrace(im, rep)
		if err != nil {
			liveErr(&d, id, err)
			continue
		}
		for i, ev := range rep.Get("events").Array() {
			if ev.Get("kind").String() != "LOSS_BACKOFF" {
				continue
			}
			if !backoffClaim.MatchString(ev.Get("explanation").String()) {
				legacy++ // "0.7 × prev" claims: checkWindow's own classifier decides them
				continue
			}
			n++
			if why := backoffFault(name, repCC(v, im, rep), ev, f, rep.Get("scope_from_us").Int()); why != "" {
				d.fail("%s: event %d (%d → %d B at %d µs): %s", id, i, ev.Get("previous_bytes").Int(), ev.Get("value_bytes").Int(), ev.Get("at_us").Int(), why)
			}
		}
	}
	d.note("%d loss backoffs re-derived from the factor, the arithmetic and the trace (%d stated as a plain factor of the previous sample, left to the window check)", n, legacy)
	return d.result()
}

// repCC is the controller the repetition's manifest says ran ("" = the
// implementation's default; also when the manifest cannot be read, which
// the repetition checks report).
func repCC(v *Validator, im, rep gjson.Result) string {
	p, err := v.resolve(im.Get("live.origin").String(), rep.Get("manifest").String())
	if err != nil {
		return ""
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return ""
	}
	return gjson.GetBytes(b, "cc").String()
}

// backoffFault is "" when the claim holds, else why not; cc is the
// controller that ran ("" = the default).
func backoffFault(impl, cc string, ev gjson.Result, f *traceFacts, from int64) string {
	expl := ev.Get("explanation").String()
	m := backoffClaim.FindStringSubmatch(expl)
	if m == nil {
		return fmt.Sprintf("the explanation states no loss response arithmetic (⌊N/D × W⌋ … with W = …): %q", expl)
	}
	return backoffFaultOf(impl, cc, m, expl, ev, f, from)
}

func backoffFaultOf(impl, cc string, m []string, expl string, ev gjson.Result, f *traceFacts, from int64) string {
	num, _ := strconv.ParseInt(m[1], 10, 64)
	den, _ := strconv.ParseInt(m[2], 10, 64)
	arith := m[3]
	val, _ := strconv.ParseInt(m[4], 10, 64)
	w, _ := strconv.ParseInt(m[5], 10, 64)
	value, prev, at := ev.Get("value_bytes").Int(), ev.Get("previous_bytes").Int(), ev.Get("at_us").Int()
	rs, ok, err := data.LossResponsesFor(impl)
	if err != nil || !ok {
		return fmt.Sprintf("no audited loss response for %s to check the factor %d/%d against (%v)", impl, num, den, err)
	}
	// The controller that ran: the default one, or the one the run's --cc
	// selected; the explanation must name it and use its factor.
	r, ok := rs.DefaultLossResponse()
	if cc != "" {
		r, ok = rs.ResponseOf(cc)
	}
	if !ok {
		return fmt.Sprintf("%s has no audited loss response for controller %q: a LOSS_BACKOFF cannot be re-derived", impl, cc)
	}
	if c := backoffCite.FindStringSubmatch(expl); c == nil || c[4] != r.Algorithm || (c[5] == "the default controller") != r.Default {
		return fmt.Sprintf("the explanation does not name the controller that ran (%s, cc %q)", r.Algorithm, cc)
	}
	if num*r.FactorDen != den*r.FactorNum || arith != r.Arithmetic {
		return fmt.Sprintf("factor %d/%d (%s) is not %s's %s response, %d/%d (%s) at %s:%d", num, den, arith, impl, r.Algorithm, r.FactorNum, r.FactorDen, r.Arithmetic, r.Source.Path, r.Source.Line)
	}
	if c := backoffCite.FindStringSubmatch(expl); c == nil || c[1] != r.Source.Path || c[2] != strconv.Itoa(r.Source.Line) || c[3] != r.Ref {
		return fmt.Sprintf("the explanation does not cite the arithmetic's line %s:%d at %s", r.Source.Path, r.Source.Line, r.Ref)
	}
	var got int64
	if arith == "float64-trunc" {
		// (w as f64 * 0.7) as usize: the factor's double, one rounded
		// product, truncation.
		got = int64(float64(w) * (float64(num) / float64(den)))
	} else {
		got = w * num / den
	}
	if got != val || val != value {
		return fmt.Sprintf("%d/%d × %d is %d in %s, not the %d B logged", num, den, w, got, arith, value)
	}
	if w < prev {
		return fmt.Sprintf("W = %d is below the previous sample %d: a window does not shrink before its loss", w, prev)
	}
	if rise := seriesRise(f, from, at, value, prev); w-prev > rise {
		return fmt.Sprintf("W = %d is %d B above the previous sample, more than the series rose over the scope up to the collapse (%d B)", w, w-prev, rise)
	}
	return ""
}

// seriesRise is how far the window rose, in the trace, from its lowest
// value in [from, at) to prev: the most it can have grown unseen.
func seriesRise(f *traceFacts, from, at, value, prev int64) int64 {
	// A per-path trace: the series is the path whose sample at the collapse
	// logs its value.
	path := ""
	for _, s := range f.Samples {
		if s.T == at && s.Cwnd == value {
			path = s.Path
			break
		}
	}
	low := int64(-1)
	for _, s := range f.Samples {
		if s.Cwnd < 0 || s.T < from || s.T >= at || (f.PathIDs && s.Path != path) {
			continue
		}
		if low < 0 || s.Cwnd < low {
			low = s.Cwnd
		}
	}
	if low < 0 || low > prev {
		return 0
	}
	return prev - low
}

// sourceLines reads, where the upstream source is here, the line each
// audited loss response cites at the commit it names and re-derives the
// factor from that line and the definitions it names: the validator's own
// reading of the arithmetic, not the audit's record of it.
func sourceLines(v *Validator, d *verdict, im gjson.Result, impl string) {
	rs, ok, err := data.LossResponsesFor(impl)
	if err != nil || !ok {
		return
	}
	for _, r := range rs.Responses {
		t, err := v.sources.get(im.Get("upstream").String(), r.Commit)
		if err != nil {
			d.note("%s %s: source at %s not read (%v); the factor is checked against the audit's record only", impl, r.Algorithm, r.Ref, err)
			continue
		}
		num, den, why := factorAt(t, r.Source.Path, r.Source.Line)
		switch {
		case why != "":
			d.fail("%s %s: %s:%d at %s: %s", impl, r.Algorithm, r.Source.Path, r.Source.Line, r.Ref, why)
		case num*r.FactorDen != den*r.FactorNum:
			d.fail("%s %s: %s:%d at %s applies %d/%d, the audit recorded %d/%d", impl, r.Algorithm, r.Source.Path, r.Source.Line, r.Ref, num, den, r.FactorNum, r.FactorDen)
		default:
			d.note("%s %s: %s:%d at %s applies %d/%d", impl, r.Algorithm, r.Source.Path, r.Source.Line, r.Ref, num, den)
		}
	}
}

var (
	lineFraction = regexp.MustCompile(`\* (\w+) / (\w+)\)?;`)               // cwnd * 7 / 10; cwnd * TEN_TIMES_BETA_CUBIC / 10); cwnd * BETA / BETA_SCALE;
	lineTernary  = regexp.MustCompile(`\*= [^?;]+\? *[0-9.]+ *: *(\w+);`)   // cwnd *= ssthresh == UINT32_MAX ? 0.5 : QUICLY_RENO_BETA; (the loss after the first)
	lineHalving  = regexp.MustCompile(`cwi?n?d?\w* / (\d+);`)               // cwin / 2;
	lineShift    = regexp.MustCompile(`>>= (\w+);`)                         // cwnd >>= BITS;
	lineNamed    = regexp.MustCompile(`\* (?:\w+::)?([A-Za-z_]\w*)\)`)      // (cwnd as f64 * BETA_CUBIC), * renoBeta)
	lineNamedEnd = regexp.MustCompile(`^\s*(?:\w+::)?([A-Z_][A-Z0-9_]*)\)`) // continuation: recovery::LOSS_REDUCTION_FACTOR)
)

// factorAt reads the factor the line applies.
func factorAt(t *sourceTree, path string, line int) (num, den int64, why string) {
	lines, err := t.lines(path)
	if err != nil {
		return 0, 0, err.Error()
	}
	if line < 1 || line > len(lines) {
		return 0, 0, fmt.Sprintf("no line %d (%d lines)", line, len(lines))
	}
	l := lines[line-1]
	value := func(name string) (num, den int64, why string) {
		v, where := definitionOf(t, path, name)
		if v == "" {
			return 0, 0, fmt.Sprintf("%q applies %s, defined nowhere near it", strings.TrimSpace(l), name)
		}
		n, d, ok := decimal(v)
		if !ok {
			return 0, 0, fmt.Sprintf("%s = %q (%s) is not a number", name, v, where)
		}
		return n, d, ""
	}
	if m := lineTernary.FindStringSubmatch(l); m != nil {
		if n, d, ok := decimal(m[1]); ok {
			return n, d, ""
		}
		return value(m[1])
	}
	if m := lineFraction.FindStringSubmatch(l); m != nil {
		d, err := strconv.ParseInt(m[2], 10, 64)
		if err != nil {
			dn, dd, why := value(m[2])
			if why != "" || dd != 1 {
				return 0, 0, why
			}
			d = dn
		}
		if n, err := strconv.ParseInt(m[1], 10, 64); err == nil {
			return n, d, ""
		}
		n, nd, why := value(m[1])
		if why != "" || nd != 1 {
			return 0, 0, why
		}
		return n, d, ""
	}
	if m := lineShift.FindStringSubmatch(l); m != nil {
		k, _, why := value(m[1])
		if why != "" {
			return 0, 0, why
		}
		return 1, 1 << k, ""
	}
	if m := lineHalving.FindStringSubmatch(l); m != nil {
		d, _ := strconv.ParseInt(m[1], 10, 64)
		return 1, d, ""
	}
	for _, re := range []*regexp.Regexp{lineNamed, lineNamedEnd} {
		if m := re.FindStringSubmatch(l); m != nil {
			return value(m[1])
		}
	}
	return 0, 0, fmt.Sprintf("%q applies no factor the validator can read", strings.TrimSpace(l))
}

var definition = regexp.MustCompile(`^\s*(?:#define\s+(\w+)\s+\(?([0-9.]+)\)?|(?:pub\s+)?const\s+(\w+)\s*(?::\s*\w+)?\s*=\s*([0-9.]+)|(\w+)\s+(?:\w+\s+)?=\s*([0-9.]+))`)

// definitionOf finds name's numeric definition in path, then in the files of
// its directory and its parent's.
func definitionOf(t *sourceTree, path, name string) (string, string) {
	look := func(p string) string {
		lines, err := t.lines(p)
		if err != nil {
			return ""
		}
		for _, l := range lines {
			if m := definition.FindStringSubmatch(l); m != nil {
				for i := 1; i+1 < len(m); i += 2 {
					if m[i] == name {
						return m[i+1]
					}
				}
			}
		}
		return ""
	}
	if v := look(path); v != "" {
		return v, path
	}
	dir := filepath.Dir(path)
	for _, p := range t.paths() {
		pd := filepath.Dir(p)
		if p != path && (pd == dir || pd == filepath.Dir(dir)) && (strings.HasSuffix(p, ".h") || strings.HasSuffix(p, ".rs") || strings.HasSuffix(p, ".go") || strings.HasSuffix(p, ".c")) {
			if v := look(p); v != "" {
				return v, p
			}
		}
	}
	// A C library's public headers (quicly's include/quicly/cc.h beside
	// lib/cc-reno.c).
	for _, p := range t.paths() {
		if strings.HasPrefix(p, "include/") && strings.HasSuffix(p, ".h") {
			if v := look(p); v != "" {
				return v, p
			}
		}
	}
	return "", ""
}

// decimal is "0.7" as 7/10, "2" as 2/1.
func decimal(s string) (num, den int64, ok bool) {
	whole, frac, _ := strings.Cut(s, ".")
	den = 1
	for range frac {
		den *= 10
	}
	n, err := strconv.ParseInt(whole+frac, 10, 64)
	if err != nil || den == 0 {
		return 0, 0, false
	}
	for _, p := range []int64{2, 5} {
		for n%p == 0 && den%p == 0 {
			n, den = n/p, den/p
		}
	}
	return n, den, true
}
