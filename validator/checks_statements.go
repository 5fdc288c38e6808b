package validator

// The cross-cutting statements F1, F2 and F3, recounted from the entries.

import (
	"sort"
	"strings"

	"github.com/tidwall/gjson"
)

// deadHooks recounts every entry's reset hook at its pinned commit: the
// implementations whose hook nothing calls and how many entries name one.
func deadHooks(v *Validator, doc gjson.Result, d *verdict) (dead []string, withHooks int) {
	reported := false
	for _, im := range doc.Get("implementations").Array() {
		r := im.Get("reachability")
		if !r.Exists() {
			continue
		}
		withHooks++
		n := int(r.Get("call_sites").Int())
		if t, err := v.tree(im); err == nil {
			if sites, serr := v.symbolSites(t, r.Get("symbol").String(), r.Get("form").String()); serr == nil {
				n = len(countReach(sites, r.Get("form").String()).Calls)
			} else {
				d.fail("%s: %v", im.Get("name").String(), serr)
			}
		} else if !reported {
			sourceErr(d, err)
			reported = true
		}
		if n == 0 {
			dead = append(dead, im.Get("name").String())
		}
	}
	sort.Strings(dead)
	return dead, withHooks
}

func splitNames(s string) []string {
	var out []string
	for _, n := range strings.Split(s, ",") {
		if n = strings.TrimSpace(n); n != "" {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

// checkF1Statement: "X of Y ship a migration reset hook that nothing
// calls: names" with X, Y and the names recounted from source.
func checkF1Statement(v *Validator, doc, _ gjson.Result) (Status, string) {
	var d verdict
	st := doc.Get("cross_cutting.F1.statement").String()
	dead, with := deadHooks(v, doc, &d)
	m := f1Re().FindStringSubmatch(st)
	if m == nil {
		d.fail("F1 statement %q does not state \"X of Y ship a migration reset hook that nothing calls\"", st)
		return d.result()
	}
	if atoi(m[1]) != len(dead) || atoi(m[2]) != with {
		d.fail("F1 says %s of %s; recounted at the pinned commits: %d of %d", m[1], m[2], len(dead), with)
	}
	if names := splitNames(m[3]); strings.Join(names, ",") != strings.Join(dead, ",") {
		d.fail("F1 names [%s]; the hooks nothing calls are [%s]", strings.Join(names, ", "), strings.Join(dead, ", "))
	}
	d.note("%d of %d: [%s]", len(dead), with, strings.Join(dead, ", "))
	return d.result()
}

// checkF2Statement: "D distinct mechanisms across N implementations" from
// the entries' own mechanisms.
func checkF2Statement(v *Validator, doc, _ gjson.Result) (Status, string) {
	var d verdict
	st := doc.Get("cross_cutting.F2.statement").String()
	distinct := map[string]bool{}
	of := 0
	for _, im := range doc.Get("implementations").Array() {
		var parts []string
		for _, q := range []string{"Q1", "Q3"} {
			if m := answerOf(im, q).Get("mechanism").String(); m != "" {
				parts = append(parts, q+": "+m)
			}
		}
		if len(parts) > 0 {
			of++
			distinct[strings.Join(strings.Fields(strings.ToLower(strings.Join(parts, " | "))), " ")] = true
		}
	}
	m := f2Re().FindStringSubmatch(st)
	if m == nil {
		d.fail("F2 statement %q does not state \"D distinct mechanisms across N implementations\"", st)
		return d.result()
	}
	if atoi(m[1]) != len(distinct) || atoi(m[2]) != of {
		d.fail("F2 says %s distinct across %s; the entries give %d across %d", m[1], m[2], len(distinct), of)
	}
	d.note("%d distinct across %d", len(distinct), of)
	return d.result()
}

// checkF3Statement: who uses the path-validation round trip, from the
// entries' Q2 answers.
func checkF3Statement(v *Validator, doc, _ gjson.Result) (Status, string) {
	var d verdict
	st := doc.Get("cross_cutting.F3.statement").String()
	var users []string
	of := 0
	for _, im := range doc.Get("implementations").Array() {
		switch answerOf(im, "Q2").Get("answer").String() {
		case "", "UNKNOWN":
		case "YES":
			of++
			users = append(users, im.Get("name").String())
		default:
			of++
		}
	}
	sort.Strings(users)
	if m := f3NoneRe().FindStringSubmatch(st); m != nil {
		if len(users) > 0 || atoi(m[1]) != of {
			d.fail("F3 says none of %s; the entries give %d of %d: [%s]", m[1], len(users), of, strings.Join(users, ", "))
		}
	} else if m := f3SomeRe().FindStringSubmatch(st); m != nil {
		if atoi(m[1]) != len(users) || atoi(m[2]) != of {
			d.fail("F3 says %s of %s; the entries give %d of %d", m[1], m[2], len(users), of)
		}
		if names := splitNames(m[3]); strings.Join(names, ",") != strings.Join(users, ",") {
			d.fail("F3 names [%s]; the entries answering Q2 YES are [%s]", strings.Join(names, ", "), strings.Join(users, ", "))
		}
	} else {
		d.fail("F3 statement %q does not state who uses the path-validation round trip", st)
		return d.result()
	}
	d.note("%d of %d: [%s]", len(users), of, strings.Join(users, ", "))
	return d.result()
}
