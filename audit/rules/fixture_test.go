package rules

import (
	"context"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/migaudit/migaudit/audit"
	"github.com/migaudit/migaudit/audit/gitsrc"
	"github.com/migaudit/migaudit/audit/query"
	"github.com/migaudit/migaudit/data"
)

// Fixtures in the style of analysistest: testdata/src/<impl>/<case>/ is a
// small source tree imitating the shape of the implementation's code (never
// upstream files), committed into an in-memory git repository and audited
// like a mirror; testdata/src/<impl>/<case>.want states the findings, one a
// line, in rule order:
//
//	<question> <rule> <role|-> <ANSWER|value> [count=n ...] [~"substring" ...]
//
// A case that differs from a sibling in a few files names it in
// testdata/src/<impl>/<case>.base and holds only the files it changes.
// A constant's value stands in place of the answer. Counts listed must be
// equal; substrings must occur in the mechanism or detail. These run in CI
// without mirrors; -update rewrites the .want files from the audit (review
// the diff: every line was checked against the fixture by hand).

var update = flag.Bool("update", false, "rewrite testdata/src/*/*.want from the audit")

const fixtureRoot = "testdata/src"

func readTree(dir string) (map[string]string, error) {
	files := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		files[filepath.ToSlash(rel)] = string(b)
		return nil
	})
	return files, err
}

// fixtureTree is the case's source tree. A case that varies another states
// it in <case>.base (the sibling case's name): the base's files are read
// first and the case's own files replace or add to them.
func fixtureTree(dir string) (map[string]string, error) {
	files := map[string]string{}
	if b, err := os.ReadFile(dir + ".base"); err == nil {
		base := filepath.Join(filepath.Dir(dir), strings.TrimSpace(string(b)))
		if files, err = readTree(base); err != nil {
			return nil, fmt.Errorf("%s.base: %w", dir, err)
		}
	} else if !os.IsNotExist(err) {
		return nil, err
	}
	own, err := readTree(dir)
	if err != nil {
		return nil, err
	}
	for p, text := range own {
		files[p] = text
	}
	return files, nil
}

// fixtureLine renders a finding the way .want lines state it.
func fixtureLine(f audit.Finding) string {
	role := f.Role
	if role == "" {
		role = "-"
	}
	ans := string(f.Answer)
	if f.Constant != nil {
		ans = query.FmtNum(f.Constant.Value)
	}
	s := fmt.Sprintf("%s %s %s %s", f.Question, shortRule(f.Rule), role, ans)
	for _, k := range query.SortedKeys(f.Counts) {
		s += fmt.Sprintf(" %s=%d", k, f.Counts[k])
	}
	return s
}

func shortRule(r string) string {
	if i := strings.IndexByte(r, '/'); i >= 0 {
		return r[i+1:]
	}
	return r
}

var quoted = regexp.MustCompile(`~("(?:[^"\\]|\\.)*")`)

// matchWant checks one finding against one .want line.
func matchWant(f audit.Finding, want string) error {
	var subs []string
	for _, m := range quoted.FindAllStringSubmatch(want, -1) {
		s, err := strconv.Unquote(m[1])
		if err != nil {
			return fmt.Errorf("bad substring %s: %v", m[1], err)
		}
		subs = append(subs, s)
	}
	head := strings.Fields(quoted.ReplaceAllString(want, ""))
	if len(head) < 4 {
		return fmt.Errorf("want line %q: need question, rule, role, answer", want)
	}
	got := strings.Fields(fixtureLine(f))
	for i := 0; i < 4; i++ {
		if got[i] != head[i] {
			return fmt.Errorf("got %s, want %s", strings.Join(got[:4], " "), strings.Join(head[:4], " "))
		}
	}
	for _, kv := range head[4:] {
		k, v, ok := strings.Cut(kv, "=")
		n, err := strconv.Atoi(v)
		if !ok || err != nil {
			return fmt.Errorf("want line %q: %q is not count=n", want, kv)
		}
		if c, has := f.Counts[k]; !has || c != n {
			return fmt.Errorf("count %s = %d (present %v), want %d", k, c, has, n)
		}
	}
	text := f.Mechanism + " | " + f.Detail
	for _, s := range subs {
		if !strings.Contains(text, s) {
			return fmt.Errorf("text %q lacks %q", text, s)
		}
	}
	return nil
}

type fixtureCase struct{ impl, name, dir, want string }

func fixtureCases(t *testing.T) []fixtureCase {
	impls, err := os.ReadDir(fixtureRoot)
	if err != nil {
		t.Fatal(err)
	}
	var out []fixtureCase
	for _, im := range impls {
		if !im.IsDir() {
			continue
		}
		cases, err := os.ReadDir(filepath.Join(fixtureRoot, im.Name()))
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range cases {
			if c.IsDir() {
				d := filepath.Join(fixtureRoot, im.Name(), c.Name())
				out = append(out, fixtureCase{im.Name(), c.Name(), d, d + ".want"})
			}
		}
	}
	return out
}

func TestFixtures(t *testing.T) {
	for _, c := range fixtureCases(t) {
		t.Run(c.impl+"/"+c.name, func(t *testing.T) {
			im, err := data.Lookup(c.impl)
			if err != nil {
				t.Fatal(err)
			}
			files, err := fixtureTree(c.dir)
			if err != nil {
				t.Fatal(err)
			}
			snap, err := gitsrc.MemCommit(files)
			if err != nil {
				t.Fatal(err)
			}
			fs, err := audit.Run(context.Background(), im, snap)
			if err != nil {
				t.Fatalf("audit %s: %v", c.dir, err)
			}
			if *update {
				var b strings.Builder
				for _, f := range fs {
					b.WriteString(fixtureLine(f) + "\n")
				}
				if err := os.WriteFile(c.want, []byte(b.String()), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			raw, err := os.ReadFile(c.want)
			if err != nil {
				t.Fatalf("%v (run with -update to create it, then check every line against the fixture)", err)
			}
			var wants []string
			for _, l := range strings.Split(string(raw), "\n") {
				if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
					wants = append(wants, l)
				}
			}
			for i, f := range fs {
				if i >= len(wants) {
					t.Errorf("unexpected finding %d: %s | %s | %s", i+1, fixtureLine(f), f.Mechanism, f.Detail)
					continue
				}
				if err := matchWant(f, wants[i]); err != nil {
					t.Errorf("finding %d (%s): %v", i+1, fixtureLine(f), err)
				}
				if why := garbledText(f); why != "" {
					t.Errorf("finding %d (%s): %s", i+1, fixtureLine(f), why)
				}
			}
			for _, w := range wants[min(len(fs), len(wants)):] {
				t.Errorf("missing finding: %s", w)
			}
		})
	}
}

// garbledText: a confident answer whose text shows an empty piece.
func garbledText(f audit.Finding) string {
	if f.Answer == audit.Unknown {
		return ""
	}
	for _, bad := range []string{" ()", "= ;", "= ,", "(, ", "*0 "} {
		if strings.Contains(f.Mechanism, bad) {
			return fmt.Sprintf("mechanism %q contains %q", f.Mechanism, bad)
		}
	}
	if strings.HasSuffix(strings.TrimSpace(f.Mechanism), "=") {
		return fmt.Sprintf("mechanism %q ends in \"=\"", f.Mechanism)
	}
	return ""
}

// TestEveryRuleFileHasFixtures: each <impl>.go in this package has a
// fixture directory whose cases together reach every rule it registers.
func TestEveryRuleFileHasFixtures(t *testing.T) {
	srcs, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	covered := map[string]map[string]bool{}
	for _, c := range fixtureCases(t) {
		raw, err := os.ReadFile(c.want)
		if err != nil {
			continue
		}
		if covered[c.impl] == nil {
			covered[c.impl] = map[string]bool{}
		}
		for _, l := range strings.Split(string(raw), "\n") {
			if f := strings.Fields(l); len(f) >= 2 && !strings.HasPrefix(l, "#") {
				covered[c.impl][f[1]] = true
			}
		}
	}
	for _, s := range srcs {
		if strings.HasSuffix(s, "_test.go") || s == "rules.go" {
			continue
		}
		b, err := os.ReadFile(s)
		if err != nil {
			t.Fatal(err)
		}
		m := regexp.MustCompile(`query\.Register\("([^"]+)"`).FindSubmatch(b)
		if m == nil {
			t.Errorf("%s registers no rules", s)
			continue
		}
		impl := string(m[1])
		if covered[impl] == nil {
			t.Errorf("%s: no fixture cases under %s/%s", s, fixtureRoot, impl)
			continue
		}
		for _, r := range audit.Rules(impl) {
			if !covered[impl][shortRule(r.Name)] {
				t.Errorf("%s: rule %s appears in no fixture case's .want", s, r.Name)
			}
		}
	}
}
