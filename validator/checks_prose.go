package validator

import (
	"fmt"
	"path"
	"regexp"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"
)

// The survey's sentences are claims too. Each number a sentence states is
// derived again here — from the repetitions, from the entries, or from the
// source at the pinned commit — never compared with another copy of the
// same sentence.

var (
	liveSummaryRe = lazyRegexp(`^(\d+) repetitions?, (\d+) verified IP migrations?, reset observed in (\d+)/(\d+)$`)
	f1Re          = lazyRegexp(`^(\d+) of (\d+) ships? a migration reset hook that nothing calls(?:: (.+))?$`)
	f2Re          = lazyRegexp(`^(\d+) distinct mechanisms? across (\d+) implementations?$`)
	f3NoneRe      = lazyRegexp(`^none of (\d+) uses the path-validation round trip as the new path's initial RTT$`)
	f3SomeRe      = lazyRegexp(`^(\d+) of (\d+) uses? the path-validation round trip as the new path's initial RTT: (.+)$`)

	// "reachable hook: Sym — what it does, N call sites: p:l in fn; p:l in fn"
	hookRe = lazyRegexp(`(reachable|dead) hook: ([A-Za-z_][\w:~]*) — (.*?)(?:(\d+) call sites?|no call site)((?:(?::? |; )[^\s;:()]+\.[a-z]+:\d+ in [\w:~]+)*)`)
	// "implemented by N algorithms" inside a hook's description
	implByRe = lazyRegexp(`implemented by (\d+) algorithms?`)
	// "dead hook: N implementation (M empty), K call sites" (the reachability hook)
	deadHookRe = lazyRegexp(`dead hook: (\d+) implementations? \((\d+) empty\), (\d+) call sites?`)
	// "Sym: N live call sites" / a clause starting "N call sites" (the reachability hook)
	namedCallsRe = lazyRegexp(`(?:^|; )(?:([A-Za-z_][\w]*): )?(\d+) (?:live )?call sites?\b`)
	// "cleared by Loss::migrate (2 call sites in input_frame, migrate)"
	parenCallsRe = lazyRegexp(`([A-Za-z_][\w:]*) \((\d+) call sites? in [^)]*\)`)
	// "Path::new called at 3 sites"
	calledAtRe = lazyRegexp(`([A-Za-z_]\w*::[A-Za-z_]\w*) called at (\d+) sites?`)
	positionRe = lazyRegexp(`([\w./+-]+\.(?:c|h|cc|cpp|hpp|rs|go|py)):(\d+)`)
	roleRe     = lazyRegexp(`\b(migrating|observing) endpoint: ([A-Z][A-Z_/]*[A-Z])\b`)
	combinedRe = lazyRegexp(`combined from the per-role findings: ((?:(?:migrating|observing) [A-Z_/]+(?:, )?)+)`)
	disagreeRe = lazyRegexp(`repetitions disagree: (\d+) YES, (\d+) NO`)
	numberRe   = lazyRegexp(`\b\d+\b`)

	// Counts of the answer's own cited positions (each verified at the
	// commit by evidence-positions): "3 guards in ngtcp2_rtb.c",
	// "handled by 8 of 8 algorithms", "11 alg_notify sites dispatch",
	// "hard-codes Paths[0] at 2 sites".
	kindInFileRe = lazyRegexp(`\b(\d+) (guard|call|assignment|handler|definition|dispatch)s? in ([\w./-]+\.[a-z]+)\b`)
	handledByRe  = lazyRegexp(`handled by (\d+) of \d+ algorithms`)
	sitesOfRe    = lazyRegexp(`\b(\d+) (\w+) sites dispatch`)
	atSitesRe    = lazyRegexp(`(\S+) at (\d+) sites\b`)
)

// checkLiveSummary: the summary's figures are the repetitions' own.
func checkLiveSummary(v *Validator, doc, im gjson.Result) (Status, string) {
	var d verdict
	sum := im.Get("live.summary").String()
	reps := im.Get("live.repetitions").Array()
	ip, resets := 0, 0
	for _, r := range reps {
		if r.Get("migration.kind").String() == "ip" {
			ip++
			if r.Get("reset_observed").Bool() {
				resets++
			}
		}
	}
	m := liveSummaryRe().FindStringSubmatch(sum)
	if m == nil {
		d.fail("summary %q does not state \"N repetitions, N verified IP migrations, reset observed in N/N\"", sum)
		return d.result()
	}
	got := []int{atoi(m[1]), atoi(m[2]), atoi(m[3]), atoi(m[4])}
	want := []int{len(reps), ip, resets, ip}
	what := []string{"repetitions", "verified IP migrations", "resets observed", "IP migrations the resets are counted over"}
	for i := range got {
		if got[i] != want[i] {
			d.fail("summary says %d %s, the repetitions give %d (%q)", got[i], what[i], want[i], sum)
		}
	}
	d.note("%q: the repetitions give %d, %d, %d/%d", sum, want[0], want[1], want[2], want[3])
	return d.result()
}

func atoi(s string) int { n, _ := strconv.Atoi(s); return n }

func answerOf(im gjson.Result, q string) gjson.Result {
	var out gjson.Result
	im.Get("answers").ForEach(func(_, a gjson.Result) bool {
		if a.Get("question").String() == q {
			out = a
			return false
		}
		return true
	})
	return out
}

// clauses splits prose into its clauses and sentences.
func clauses(s string) []string {
	var out []string
	for _, part := range regexp.MustCompile(`; |\. `).Split(s, -1) {
		if p := strings.TrimSpace(strings.TrimSuffix(part, ".")); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// repeated returns the clauses of s (at least 20 characters) that occur
// more than once.
func repeated(s string) []string {
	seen := map[string]int{}
	var out []string
	for _, c := range clauses(s) {
		k := strings.Join(strings.Fields(strings.ToLower(c)), " ")
		if len(k) < 20 {
			continue
		}
		seen[k]++
		if seen[k] == 2 {
			out = append(out, c)
		}
	}
	return out
}

// callCount is the validator's own count of a symbol's call sites at the
// entry's commit (the last component of a qualified name).
func (v *Validator) callCount(t *sourceTree, symbol, form string) (calls, handlers int, err error) {
	if i := strings.LastIndex(symbol, "::"); i >= 0 {
		symbol = symbol[i+2:]
	}
	if form == "" {
		form = "function"
	}
	sites, err := v.symbolSites(t, symbol, form)
	if err != nil {
		return 0, 0, err
	}
	r := countReach(sites, form)
	return len(r.Calls), r.HandlerUnits, nil
}

// qualifiedCalls counts "Type::name(" in the non-test source outside
// comments, Rust #[cfg(test)] modules and the standard library's paths
// (std::path::Path::new is not the crate's Path::new): the calls of one
// associated function whose bare name ("new") every type has.
func qualifiedCalls(t *sourceTree, q string) (int, error) {
	re := regexp.MustCompile(`[\w:]*\b` + regexp.QuoteMeta(q) + `\s*\(`)
	def := "fn " + lastPart(q) + "("
	// Only the crate (or source tree) that defines the type can mean it:
	// another crate's Path is another type.
	typ := q[:strings.Index(q, "::")]
	if i := strings.LastIndex(typ, "::"); i >= 0 {
		typ = typ[i+2:]
	}
	typeDef := regexp.MustCompile(`\b(?:struct|class|enum)\s+` + regexp.QuoteMeta(typ) + `\b`)
	var roots []string
	for _, p := range t.paths() {
		if langOf(p) == "" || isTestPath(p) {
			continue
		}
		lines, err := t.lines(p)
		if err != nil {
			return 0, err
		}
		if typeDef.MatchString(strings.Join(lines, "\n")) {
			root := path.Dir(p)
			if i := strings.Index(p, "src/"); i >= 0 {
				root = p[:i+len("src")]
			}
			roots = append(roots, root+"/")
		}
	}
	inRoots := func(p string) bool {
		if len(roots) == 0 {
			return true
		}
		for _, r := range roots {
			if strings.HasPrefix(p, r) {
				return true
			}
		}
		return false
	}
	n := 0
	for _, p := range t.paths() {
		if langOf(p) == "" || isTestPath(p) || !inRoots(p) {
			continue
		}
		lines, err := t.lines(p)
		if err != nil {
			return 0, err
		}
		skipDepth, depth, testMod := -1, 0, false
		for _, l := range lines {
			trim := strings.TrimSpace(l)
			if strings.HasPrefix(trim, "#[cfg(test)]") {
				testMod = true
				continue
			}
			if i := strings.Index(l, "//"); i >= 0 {
				l = l[:i]
			}
			opens, closes := strings.Count(l, "{"), strings.Count(l, "}")
			if testMod && strings.HasPrefix(trim, "mod ") && opens > 0 && skipDepth < 0 {
				skipDepth = depth
			}
			testMod = testMod && !strings.HasPrefix(trim, "mod ") && !strings.HasPrefix(trim, "fn ")
			depth += opens - closes
			if skipDepth >= 0 {
				if depth <= skipDepth {
					skipDepth = -1
				}
				continue
			}
			if strings.HasPrefix(trim, "*") || strings.HasPrefix(trim, "/*") || strings.Contains(l, def) {
				continue
			}
			for _, m := range re.FindAllString(l, -1) {
				if !strings.HasPrefix(m, "std::") && !strings.HasPrefix(m, "core::") {
					n++
				}
			}
		}
	}
	return n, nil
}

// checkProse: each mechanism and detail sentence appears once, and every
// count it states that names what it counts is recounted — hook call sites
// and implementations at the pinned commit, cited file:line positions at
// the commit, per-role answers against the roles, the repetitions'
// disagreement against the repetitions. Numbers the validator has no
// derivation for are listed, not passed silently.
func checkProse(v *Validator, doc, im gjson.Result) (Status, string) {
	var d verdict
	t, terr := v.tree(im)
	// Without the source, the figures that need it are unverifiable
	// (reported once, at the end); the sentences' other claims are still
	// checked.
	skipped := 0
	reach := im.Get("reachability")
	derived, underived := 0, 0
	var notDerived []string
	recount := func(where, sym, form string, claimed int, what string) {
		if terr != nil {
			skipped++
			return
		}
		calls, handlers, err := v.callCount(t, sym, form)
		if err != nil {
			d.fail("%s: %v", where, err)
			return
		}
		if strings.Contains(sym, "::") && handlers > 1 {
			// Type::name where several types define name: a bare-name
			// count is not this method's (no type resolution here).
			underived++
			notDerived = append(notDerived, fmt.Sprintf("%s: %d %s of %s (%d definitions of %s)", where, claimed, what, sym, handlers, lastPart(sym)))
			return
		}
		derived++
		if calls != claimed {
			d.fail("%s says %s has %d %s; %d at %s", where, sym, claimed, what, calls, short(im.Get("commit").String()))
		}
	}
	im.Get("answers").ForEach(func(_, a gjson.Result) bool {
		q := a.Get("question").String()
		for _, field := range []string{"mechanism", "detail"} {
			text := a.Get(field).String()
			where := q + " " + field
			for _, r := range repeated(text) {
				d.fail("%s repeats %q", where, truncate(r, 90))
			}
			covered := make([]bool, len(text)+1)
			mark := func(lo, hi int) {
				for i := lo; i < hi && i < len(covered); i++ {
					covered[i] = true
				}
			}
			// Hooks named with their call sites.
			for _, m := range hookRe().FindAllStringSubmatchIndex(text, -1) {
				sym := text[m[4]:m[5]]
				if strings.Contains(text[m[6]:m[7]], "hook: ") {
					continue // a hook stated without its count: the count found is the next one's
				}
				claimed := 0
				if m[8] >= 0 {
					claimed = atoi(text[m[8]:m[9]])
				}
				recount(where, sym, "function", claimed, "call sites")
				desc := text[m[6]:m[7]]
				if ib := implByRe().FindStringSubmatch(desc); ib != nil && terr == nil {
					if _, h, err := v.callCount(t, sym, "function"); err == nil {
						derived++
						if h != atoi(ib[1]) {
							d.fail("%s says %s is implemented by %s algorithms; %d implementations at %s", where, sym, ib[1], h, short(im.Get("commit").String()))
						}
					}
				}
				if m[10] >= 0 {
					list := text[m[10]:m[11]]
					pos := positionRe().FindAllStringSubmatch(list, -1)
					if len(pos) > 0 && len(pos) != claimed {
						d.fail("%s lists %d positions for %d call sites of %s", where, len(pos), claimed, sym)
					}
					for _, p := range pos {
						if terr != nil {
							skipped++
							continue
						}
						v.checkPosition(&d, t, terr, where, p[1], atoi(p[2]), lastPart(sym))
						derived++
					}
				}
				mark(m[0], m[1])
			}
			if m := deadHookRe().FindStringSubmatchIndex(text); m != nil && reach.Exists() && !covered[m[0]] {
				recount(where, reach.Get("symbol").String(), reach.Get("form").String(), atoi(text[m[6]:m[7]]), "call sites")
				if terr == nil {
					if _, h, err := v.callCount(t, reach.Get("symbol").String(), reach.Get("form").String()); err == nil {
						derived++
						if h != atoi(text[m[2]:m[3]]) {
							d.fail("%s says the dead hook %s has %s implementations; %d at %s", where, reach.Get("symbol").String(), text[m[2]:m[3]], h, short(im.Get("commit").String()))
						}
					}
				}
				mark(m[0], m[1])
			}
			for _, m := range parenCallsRe().FindAllStringSubmatchIndex(text, -1) {
				if covered[m[0]] {
					continue
				}
				recount(where, text[m[2]:m[3]], "function", atoi(text[m[4]:m[5]]), "call sites")
				mark(m[0], m[1])
			}
			for _, m := range namedCallsRe().FindAllStringSubmatchIndex(text, -1) {
				if covered[m[4]] {
					continue
				}
				sym, form := "", ""
				if m[2] >= 0 {
					sym = text[m[2]:m[3]]
				}
				if sym == "" || (reach.Exists() && sym == lastPart(reach.Get("symbol").String())) {
					if !reach.Exists() {
						continue
					}
					sym, form = reach.Get("symbol").String(), reach.Get("form").String()
				}
				recount(where, sym, form, atoi(text[m[4]:m[5]]), "call sites")
				mark(m[0], m[1])
			}
			for _, m := range calledAtRe().FindAllStringSubmatchIndex(text, -1) {
				if terr != nil {
					skipped++
					continue
				}
				q := text[m[2]:m[3]]
				n, err := memo(&v.mu, v.counts, t.repoDir+"@"+t.commit+"#"+q, func() (int, error) { return qualifiedCalls(t, q) })
				if err != nil {
					d.fail("%s: %v", where, err)
					continue
				}
				derived++
				if n != atoi(text[m[4]:m[5]]) {
					d.fail("%s says %s is called at %s sites; %d at %s", where, q, text[m[4]:m[5]], n, short(im.Get("commit").String()))
				}
				mark(m[0], m[1])
			}
			// Figures re-counted from the source by this implementation's
			// own reading (prose_counts.go).
			for _, pc := range proseCounts[im.Get("name").String()] {
				for _, m := range pc.re().FindAllStringSubmatchIndex(text, -1) {
					if covered[m[2]] {
						continue
					}
					mark(m[0], m[1])
					if terr != nil {
						skipped++
						continue
					}
					n, err := memo(&v.mu, v.counts, t.repoDir+"@"+t.commit+"#prose:"+pc.what, func() (int, error) { return pc.count(t) })
					if err != nil {
						d.fail("%s: %v", where, err)
						continue
					}
					derived++
					if c := atoi(text[m[2]:m[3]]); c != n {
						d.fail("%s says %d %s; %d at %s", where, c, pc.what, n, short(im.Get("commit").String()))
					}
				}
			}
			// Counts of the answer's own cited positions.
			ev := a.Get("evidence").Array()
			countEv := func(keep func(e gjson.Result) bool) int {
				seen := map[string]bool{}
				for _, e := range ev {
					if keep(e) {
						seen[e.Get("path").String()+":"+e.Get("line").String()] = true
					}
				}
				return len(seen)
			}
			evCount := func(m []int, claimedAt int, what string, n int) {
				derived++
				if c := atoi(text[m[claimedAt]:m[claimedAt+1]]); c != n {
					d.fail("%s says %d %s; the answer cites %d", where, c, what, n)
				}
				mark(m[0], m[1])
			}
			for _, m := range kindInFileRe().FindAllStringSubmatchIndex(text, -1) {
				if covered[m[0]] {
					continue
				}
				kind, file := text[m[4]:m[5]], text[m[6]:m[7]]
				evCount(m, 2, kind+"s in "+file, countEv(func(e gjson.Result) bool {
					return e.Get("kind").String() == kind && (e.Get("path").String() == file || strings.HasSuffix(e.Get("path").String(), "/"+file))
				}))
			}
			for _, m := range handledByRe().FindAllStringSubmatchIndex(text, -1) {
				evCount(m, 2, "handling algorithms", countEv(func(e gjson.Result) bool { return e.Get("kind").String() == "handler" }))
			}
			for _, m := range sitesOfRe().FindAllStringSubmatchIndex(text, -1) {
				tok := text[m[4]:m[5]]
				evCount(m, 2, tok+" sites", countEv(func(e gjson.Result) bool {
					return e.Get("kind").String() == "dispatch" && strings.Contains(e.Get("excerpt").String(), tok)
				}))
			}
			for _, m := range atSitesRe().FindAllStringSubmatchIndex(text, -1) {
				tok := text[m[2]:m[3]]
				if covered[m[4]] || !strings.ContainsAny(tok, "[_.>") {
					continue // a code token, not a word
				}
				evCount(m, 4, "sites of "+tok, countEv(func(e gjson.Result) bool { return strings.Contains(e.Get("excerpt").String(), tok) }))
			}
			// Any other cited position must exist at the commit.
			for _, m := range positionRe().FindAllStringSubmatchIndex(text, -1) {
				if covered[m[0]] {
					continue
				}
				mark(m[0], m[1])
				if terr != nil {
					skipped++
					continue
				}
				v.checkPosition(&d, t, terr, where, text[m[2]:m[3]], atoi(text[m[4]:m[5]]), "")
				derived++
			}
			// Per-role answers stated in the prose are the roles'.
			roles := map[string]string{}
			a.Get("roles").ForEach(func(_, r gjson.Result) bool {
				roles[r.Get("role").String()] = r.Get("answer").String()
				return true
			})
			for _, m := range roleRe().FindAllStringSubmatch(text, -1) {
				if got, ok := roles[m[1]]; !ok {
					d.fail("%s states %s endpoint: %s, the answer has no %s role", where, m[1], m[2], m[1])
				} else if got != m[2] {
					d.fail("%s states %s endpoint: %s, the role answers %s", where, m[1], m[2], got)
				}
			}
			for _, m := range combinedRe().FindAllStringSubmatch(text, -1) {
				for _, part := range strings.Split(m[1], ", ") {
					f := strings.Fields(part)
					if len(f) == 2 && roles[f[0]] != f[1] {
						d.fail("%s states %s %s, the role answers %q", where, f[0], f[1], roles[f[0]])
					}
				}
			}
			if m := disagreeRe().FindStringSubmatchIndex(text); m != nil {
				yes, no := repVotes(im, q)
				derived++
				if atoi(text[m[2]:m[3]]) != yes || atoi(text[m[4]:m[5]]) != no {
					d.fail("%s says the repetitions disagree %s YES, %s NO; they vote %d YES, %d NO", where, text[m[2]:m[3]], text[m[4]:m[5]], yes, no)
				}
				mark(m[0], m[1])
			}
			for _, m := range numberRe().FindAllStringIndex(text, -1) {
				if !covered[m[0]] && countLike(text, m[0], m[1]) {
					underived++
					if len(notDerived) < 6 {
						notDerived = append(notDerived, q+" "+strings.TrimSpace(text[max(0, m[0]-24):min(len(text), m[1]+16)]))
					}
				}
			}
		}
		return true
	})
	if skipped > 0 {
		sourceErr(&d, fmt.Errorf("%d stated figures need the source: %w", skipped, terr))
	}
	d.note("%d stated figures recounted", derived)
	if underived > 0 {
		d.note("%d counts stated without a derivation here (e.g. %s)", underived, strings.Join(notDerived, " | "))
	}
	return d.result()
}

// countLike tells a stated count ("3 guards") from a number that is part of
// a name, a value or a reference (Paths[0], RFC 9002, §6.2.2, = 100, 7/8,
// /24, 1 call's "1" in a position).
func countLike(text string, lo, hi int) bool {
	if lo > 0 && strings.ContainsAny(text[lo-1:lo], "[:/§.=_-*x") {
		return false
	}
	if hi < len(text) && strings.ContainsAny(text[hi:hi+1], "]./_*)") {
		return false
	}
	before := strings.TrimSpace(text[max(0, lo-6):lo])
	for _, p := range []string{"RFC", "=", "?", ":"} {
		if strings.HasSuffix(before, p) {
			return false
		}
	}
	rest := strings.TrimLeft(text[hi:], " ")
	return rest != "" && (rest[0] >= 'a' && rest[0] <= 'z' || strings.HasPrefix(rest, "of ") || strings.HasPrefix(rest, "ACK"))
}

func repVotes(im gjson.Result, q string) (yes, no int) {
	key := strings.ToLower(q)
	for _, r := range im.Get("live.repetitions").Array() {
		if k := r.Get("migration.kind").String(); k != "ip" && k != "path-change" {
			continue
		}
		switch r.Get(key).String() {
		case "YES":
			yes++
		case "NO":
			no++
		}
	}
	return
}

// checkPosition: a file:line stated in prose exists at the commit, and
// names sym when the sentence says it calls sym there.
func (v *Validator) checkPosition(d *verdict, t *sourceTree, terr error, where, path string, line int, sym string) {
	if terr != nil {
		return // reported once by the caller
	}
	lines, err := t.lines(path)
	if err != nil {
		d.fail("%s cites %s:%d: %v", where, path, line, err)
		return
	}
	if line < 1 || line > len(lines) {
		d.fail("%s cites %s:%d; the file has %d lines", where, path, line, len(lines))
		return
	}
	// A position is a statement's first line; a call may sit on the
	// statement's continuation lines.
	stmt := strings.Join(lines[line-1:min(len(lines), line+2)], " ")
	if sym != "" && !strings.Contains(stmt, sym) {
		d.fail("%s cites a call of %s at %s:%d, which reads %q", where, sym, path, line, truncate(strings.TrimSpace(lines[line-1]), 80))
	}
}

func lastPart(sym string) string {
	if i := strings.LastIndex(sym, "::"); i >= 0 {
		return sym[i+2:]
	}
	return sym
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
