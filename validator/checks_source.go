package validator

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"
)

var perImplChecks = []check{
	{"commit", checkCommit, ""},
	{"evidence-positions", checkEvidencePositions, "evidence"},
	{"reachability", checkReachability, "reachability"},
	{"constants", checkConstants, "constants"},
	{"answers", checkAnswers, ""},
	{"repetitions", checkRepetitions, "live.repetitions"},
	{"ip-change", checkIPChange, "live.repetitions"},
	{"migration-instant", checkMigrationInstant, "live.repetitions"},
	{"window", checkWindow, "live.repetitions"},
	{"collapse-arithmetic", checkCollapseArithmetic, "live.repetitions"},
	{"rtt", checkRTT, "live.repetitions"},
	{"live-findings", checkLiveFindings, "live_findings"},
}

var specificChecks = map[string][]check{
	"picoquic": {{"below-initial", checkBelowInitial, ""}},
	"msquic":   {{"pinned-333ms", checkPinnedRTT, ""}},
	"ngtcp2":   {{"rtt-reset-formula", checkNgtcp2Reset, ""}},
}

var crossChecks = []check{
	{"F1/dead-hooks", checkF1, ""},
	{"F2/distinct-mechanisms", checkF2, ""},
	{"F3/no-path-validation-rtt", checkF3, ""},
}

func sourceErr(d *verdict, err error) {
	if errors.Is(err, errNoSource) {
		d.unverifiable("%v", err)
	} else {
		d.fail("%v", err)
	}
}

// checkCommit: the pinned commit is a commit object in the upstream mirror,
// every permalink names it, and it is the commit the reference pins.
func checkCommit(v *Validator, doc, im gjson.Result) (Status, string) {
	var d verdict
	commit := im.Get("commit").String()
	up := strings.TrimSuffix(im.Get("upstream").String(), "/")
	bad := 0
	total := 0
	eachEvidence(im, func(where string, ev gjson.Result) {
		total++
		if !strings.HasPrefix(ev.Get("permalink").String(), up+"/blob/"+commit+"/") {
			bad++
			if bad <= 2 {
				d.fail("%s permalink %s is not at %s/blob/%s", where, ev.Get("permalink").String(), up, short(commit))
			}
		}
	})
	if bad == 0 {
		d.note("%d permalinks at %s", total, short(commit))
	}
	if pinned, ok := v.referencePin(im.Get("name").String()); ok {
		if pinned != commit {
			d.fail("reference pins %s at %s, survey says %s", im.Get("name").String(), short(pinned), short(commit))
		} else {
			d.note("matches the study's pinned commits")
		}
	}
	if _, err := v.tree(im); err != nil {
		sourceErr(&d, err)
	} else {
		d.note("commit %s present in mirror", short(commit))
	}
	return d.result()
}

func short(c string) string {
	if len(c) > 8 {
		return c[:8]
	}
	return c
}

// referencePin reads the study's list of upstream commits (from its
// repository at the pin, or commit_hashes.txt under --evidence).
func (v *Validator) referencePin(name string) (string, bool) {
	b, _, err := v.studyBlob("commit_hashes.txt")
	if err != nil && v.opts.Evidence != "" {
		// The study's published sample names it upstream_commits.txt.
		b, err = os.ReadFile(filepath.Join(v.opts.Evidence, "upstream_commits.txt"))
	}
	if err != nil {
		return "", false
	}
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) >= 2 && f[0] == name && len(f[1]) == 40 {
			return f[1], true
		}
	}
	return "", false
}

// eachEvidence visits every source position the entry cites.
func eachEvidence(im gjson.Result, fn func(where string, ev gjson.Result)) {
	im.Get("answers").ForEach(func(_, a gjson.Result) bool {
		q := a.Get("question").String()
		a.Get("evidence").ForEach(func(k, ev gjson.Result) bool {
			fn(fmt.Sprintf("%s evidence %d", q, k.Int()), ev)
			return true
		})
		return true
	})
	r := im.Get("reachability")
	for _, part := range []string{"calls", "handler_sites"} {
		r.Get(part).ForEach(func(k, ev gjson.Result) bool {
			fn(fmt.Sprintf("reachability %s %d", part, k.Int()), ev)
			return true
		})
	}
	im.Get("constants").ForEach(func(k, c gjson.Result) bool {
		if s := c.Get("source"); s.Exists() {
			fn(fmt.Sprintf("constant %s", c.Get("name").String()), s)
		}
		return true
	})
	im.Get("live_findings").ForEach(func(_, lf gjson.Result) bool {
		lf.Get("evidence").ForEach(func(k, ev gjson.Result) bool {
			fn(fmt.Sprintf("live finding %s evidence %d", lf.Get("id").String(), k.Int()), ev)
			return true
		})
		return true
	})
}

func normSpace(s string) string { return strings.Join(strings.Fields(s), " ") }

// checkEvidencePositions: each cited file exists at the commit, the line
// exists, holds the excerpt, and the permalink points at that line.
func checkEvidencePositions(v *Validator, doc, im gjson.Result) (Status, string) {
	var d verdict
	t, err := v.tree(im)
	total, ok := 0, 0
	eachEvidence(im, func(where string, ev gjson.Result) {
		total++
		p, line := ev.Get("path").String(), int(ev.Get("line").Int())
		if !strings.HasSuffix(ev.Get("permalink").String(), "/"+p+"#L"+strconv.Itoa(line)) {
			d.fail("%s: permalink %s does not point at %s:%d", where, ev.Get("permalink").String(), p, line)
			return
		}
		if err != nil {
			return
		}
		lines, lerr := t.lines(p)
		if lerr != nil {
			d.fail("%s: %v", where, lerr)
			return
		}
		if line < 1 || line > len(lines) {
			d.fail("%s: %s has %d lines, cited line %d", where, p, len(lines), line)
			return
		}
		ex := normSpace(strings.SplitN(ev.Get("excerpt").String(), "\n", 2)[0])
		if ex == "" {
			d.fail("%s: %s:%d cited without an excerpt", where, p, line)
			return
		}
		if !strings.Contains(normSpace(lines[line-1]), strings.TrimSuffix(ex, "…")) {
			d.fail("%s: %s:%d reads %q, not %q", where, p, line, normSpace(lines[line-1]), ex)
			return
		}
		ok++
	})
	if err != nil {
		sourceErr(&d, err)
		return d.result()
	}
	if total == 0 {
		d.unverifiable("no source positions cited")
	}
	d.note("%d/%d positions hold their excerpts", ok, total)
	return d.result()
}

// checkReachability recounts the reset hook's call sites and handlers.
func checkReachability(v *Validator, doc, im gjson.Result) (Status, string) {
	var d verdict
	r := im.Get("reachability")
	if !r.Exists() {
		d.unverifiable("no reachability claim")
		return d.result()
	}
	sym, form := r.Get("symbol").String(), r.Get("form").String()
	claimedCalls := int(r.Get("call_sites").Int())
	if n := len(r.Get("calls").Array()); n != claimedCalls {
		d.fail("call_sites says %d but %d call positions are listed", claimedCalls, n)
	}
	if r.Get("dead").Bool() != (claimedCalls == 0) {
		d.fail("dead=%v with %d call sites", r.Get("dead").Bool(), claimedCalls)
	}
	t, err := v.tree(im)
	if err != nil {
		sourceErr(&d, err)
		return d.result()
	}
	sites, err := v.symbolSites(t, sym, form)
	if err != nil {
		d.fail("%v", err)
		return d.result()
	}
	got := countReach(sites, form)
	if len(got.Calls) != claimedCalls {
		d.fail("%s has %d call sites at %s, survey says %d", sym, len(got.Calls), short(t.commit), claimedCalls)
	}
	if hr := r.Get("handlers"); hr.Exists() && int(hr.Int()) != got.HandlerUnits {
		d.fail("%s has %d handlers, survey says %d", sym, got.HandlerUnits, hr.Int())
	}
	have := map[string]bool{}
	for _, c := range got.Calls {
		have[fmt.Sprintf("%s:%d", c.Path, c.Line)] = true
	}
	r.Get("calls").ForEach(func(_, c gjson.Result) bool {
		pos := fmt.Sprintf("%s:%d", c.Get("path").String(), c.Get("line").Int())
		if !have[pos] {
			d.fail("listed call %s is not a call of %s", pos, sym)
		}
		return true
	})
	hs := map[string]bool{}
	for _, h := range got.Handlers {
		hs[fmt.Sprintf("%s:%d", h.Path, h.Line)] = true
	}
	r.Get("handler_sites").ForEach(func(_, c gjson.Result) bool {
		pos := fmt.Sprintf("%s:%d", c.Get("path").String(), c.Get("line").Int())
		if !hs[pos] {
			d.fail("listed handler %s is not a handler of %s", pos, sym)
		}
		return true
	})
	var where []string
	for _, c := range got.Calls {
		where = append(where, fmt.Sprintf("%s:%d", c.Path, c.Line))
	}
	d.note("%s: %d call sites [%s], %d handlers", sym, len(got.Calls), strings.Join(where, " "), got.HandlerUnits)
	return d.result()
}

// checkConstants re-evaluates each constant from its expression and
// parameters, and each repetition's run-specific evaluation.
func checkConstants(v *Validator, doc, im gjson.Result) (Status, string) {
	var d verdict
	n := 0
	im.Get("constants").ForEach(func(_, c gjson.Result) bool {
		n++
		params := map[string]float64{}
		c.Get("params").ForEach(func(k, val gjson.Result) bool {
			params[k.String()] = val.Float()
			return true
		})
		got, err := evalExpr(c.Get("expr").String(), params)
		if err != nil {
			d.fail("%s: %v", c.Get("name").String(), err)
			return true
		}
		if !near(got, c.Get("value").Float()) {
			d.fail("%s: %s evaluates to %s, survey says %s", c.Get("name").String(), c.Get("expr").String(), fnum(got), fnum(c.Get("value").Float()))
		}
		if !arithmeticHolds(c.Get("arithmetic").String(), c.Get("value").Float()) {
			d.fail("%s: arithmetic %q does not give %s", c.Get("name").String(), c.Get("arithmetic").String(), fnum(c.Get("value").Float()))
		}
		// Every parameter is a claim too: the arithmetic must be the
		// expression with exactly these values written in.
		if want := substitute(c.Get("expr").String(), params); !sameArithmetic(c.Get("arithmetic").String(), want) {
			d.fail("%s: arithmetic %q is not %s with %v written in (%s)", c.Get("name").String(), c.Get("arithmetic").String(), c.Get("expr").String(), params, want)
		}
		return true
	})
	im.Get("live.repetitions").ForEach(func(_, rep gjson.Result) bool {
		rep.Get("constants").ForEach(func(_, c gjson.Result) bool {
			n++
			if !arithmeticHolds(c.Get("arithmetic").String(), c.Get("value").Float()) {
				d.fail("%s %s: arithmetic %q does not give %s", rep.Get("id").String(), c.Get("name").String(), c.Get("arithmetic").String(), fnum(c.Get("value").Float()))
			}
			return true
		})
		return true
	})
	if n == 0 {
		d.unverifiable("no constants")
	}
	d.note("%d constants re-evaluate", n)
	return d.result()
}

// substitute writes params' values into expr (whole identifiers only).
func substitute(expr string, params map[string]float64) string {
	var b strings.Builder
	isID := func(c byte) bool {
		return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
	}
	for i := 0; i < len(expr); {
		if isID(expr[i]) {
			j := i
			for j < len(expr) && isID(expr[j]) {
				j++
			}
			w := expr[i:j]
			if v, ok := params[w]; ok {
				b.WriteString(fnum(v))
			} else {
				b.WriteString(w)
			}
			i = j
			continue
		}
		b.WriteByte(expr[i])
		i++
	}
	return b.String()
}

// sameArithmetic compares the left-hand side of "lhs = value" with want,
// ignoring spaces.
func sameArithmetic(arith, want string) bool {
	i := strings.LastIndex(arith, "=")
	if i < 0 {
		return false
	}
	strip := func(s string) string { return strings.Join(strings.Fields(s), "") }
	return strip(arith[:i]) == strip(want)
}

// arithmeticHolds evaluates "lhs = rhs" written out with numbers and
// checks both sides equal value.
func arithmeticHolds(arith string, value float64) bool {
	i := strings.LastIndex(arith, "=")
	if i < 0 {
		return false
	}
	lhs, err := evalExpr(strings.TrimSpace(arith[:i]), nil)
	if err != nil {
		return false
	}
	rhs, err := evalExpr(strings.TrimSpace(arith[i+1:]), nil)
	if err != nil {
		return false
	}
	return near(lhs, value) && near(rhs, value)
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

func fnum(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// checkNgtcp2Reset: the reset assigns latest, minimum and smoothed RTT and
// the variance (= initial/2) and recomputes the window by the RFC 9002 §7.2
// formula, and the survey's initial-window constant is that formula.
func checkNgtcp2Reset(v *Validator, doc, im gjson.Result) (Status, string) {
	var d verdict
	t, err := v.tree(im)
	if err != nil {
		sourceErr(&d, err)
		return d.result()
	}
	body, at, err := functionBody(t, "lib/ngtcp2_conn.c", "conn_reset_conn_stat_cc")
	if err != nil {
		d.fail("%v", err)
		return d.result()
	}
	want := []string{
		"cstat->latest_rtt = 0;",
		"cstat->min_rtt = UINT64_MAX;",
		"cstat->smoothed_rtt = conn->local.settings.initial_rtt;",
		"cstat->rttvar = conn->local.settings.initial_rtt / 2;",
		"cstat->first_rtt_sample_ts = UINT64_MAX;",
		"cstat->bytes_in_flight = 0;",
		"cstat->cwnd = ngtcp2_cc_compute_initcwnd(",
	}
	flat := normSpace(body)
	for _, w := range want {
		if !strings.Contains(flat, w) {
			d.fail("conn_reset_conn_stat_cc (lib/ngtcp2_conn.c:%d) lacks %q", at, w)
		}
	}
	cc, ccAt, err := functionBody(t, "lib/ngtcp2_cc.c", "ngtcp2_cc_compute_initcwnd")
	if err != nil {
		d.fail("%v", err)
		return d.result()
	}
	ccFlat := normSpace(cc)
	if !strings.Contains(ccFlat, "ngtcp2_max(2 * max_udp_payload_size, 14720)") || !strings.Contains(ccFlat, "ngtcp2_min(10 * max_udp_payload_size, n)") {
		d.fail("ngtcp2_cc_compute_initcwnd (lib/ngtcp2_cc.c:%d) is not min(10*S, max(2*S, 14720)): %s", ccAt, ccFlat)
	}
	formula := func(s float64) float64 { return math.Min(10*s, math.Max(2*s, 14720)) }
	found := false
	im.Get("constants").ForEach(func(_, c gjson.Result) bool {
		if c.Get("name").String() != "initial_window" {
			return true
		}
		found = true
		for _, s := range []float64{1200, 1452, c.Get("params.S").Float()} {
			got, err := evalExpr(c.Get("expr").String(), map[string]float64{"S": s})
			if err != nil || !near(got, formula(s)) {
				d.fail("initial_window expr %q with S=%s gives %s, the source's formula %s", c.Get("expr").String(), fnum(s), fnum(got), fnum(formula(s)))
			}
		}
		return true
	})
	if !found {
		d.fail("no initial_window constant for ngtcp2")
	}
	d.note("conn_reset_conn_stat_cc (ngtcp2_conn.c:%d) resets latest=0, min=UINT64_MAX, smoothed=initial, rttvar=initial/2; initcwnd (ngtcp2_cc.c:%d) = min(10*S, max(2*S, 14720)) = %s at S=1200, %s at S=1452",
		at, ccAt, fnum(formula(1200)), fnum(formula(1452)))
	return d.result()
}

// functionBody returns a C function's definition text and its line.
func functionBody(t *sourceTree, path, name string) (string, int, error) {
	lines, err := t.lines(path)
	if err != nil {
		return "", 0, err
	}
	for i, l := range lines {
		if !strings.Contains(l, name+"(") || strings.HasSuffix(strings.TrimSpace(l), ";") {
			continue
		}
		if strings.HasPrefix(strings.TrimSpace(l), "*") || strings.HasPrefix(strings.TrimSpace(l), "/") {
			continue
		}
		// a definition starts at column 0 with a type (not indented, not a call)
		if strings.HasPrefix(l, " ") || strings.HasPrefix(l, "\t") {
			continue
		}
		var b strings.Builder
		for j := i; j < len(lines); j++ {
			b.WriteString(lines[j])
			b.WriteByte('\n')
			if lines[j] == "}" {
				return b.String(), i + 1, nil
			}
		}
	}
	return "", 0, fmt.Errorf("%s: no definition of %s at %s", path, name, short(t.commit))
}
