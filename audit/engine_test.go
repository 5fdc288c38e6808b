package audit_test

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/migaudit/migaudit/audit"
	"github.com/migaudit/migaudit/data"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata/")

// memSource is an in-memory Source: a commit is a map of files.
type memSource struct {
	commit string
	files  map[string]string
}

func (m memSource) Commit() string { return m.commit }
func (m memSource) ReadFile(p string) ([]byte, error) {
	if s, ok := m.files[p]; ok {
		return []byte(s), nil
	}
	return nil, fmt.Errorf("%s: %w", p, fs.ErrNotExist)
}
func (m memSource) Files(patterns ...string) ([]string, error) {
	var out []string
	for p := range m.files {
		for _, pat := range patterns {
			if ok, _ := path.Match(pat, p); ok {
				out = append(out, p)
				break
			}
		}
	}
	sort.Strings(out)
	return out, nil
}

const commitA = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
const commitB = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"

var hookRule = &audit.Rule{
	Name:     "engine/hook",
	Question: audit.Q1,
	Run: func(p *audit.Pass) ([]audit.Finding, error) {
		fs, err := p.Files("*.c")
		if err != nil {
			return nil, err
		}
		set := audit.Set(fs)
		defs := set.Funcs("cc_reset")
		if len(defs) == 0 {
			return []audit.Finding{p.Absent("cc_reset")}, nil
		}
		calls := set.Calls("cc_reset")
		f := p.Finding(audit.Inert, "dead hook")
		f.Counts["call_sites"] = len(calls)
		for _, c := range calls {
			f.Evidence = append(f.Evidence, p.Evidence(c.Pos, "call", ""))
		}
		f.Evidence = append(f.Evidence, p.Evidence(defs[0].Pos, "definition", ""))
		if len(calls) > 0 {
			f.Answer, f.Mechanism = audit.Yes, "reset called"
		}
		return []audit.Finding{f}, nil
	},
}

var constRule = &audit.Rule{
	Name:     "engine/constants",
	Question: audit.ConstInitialWindow,
	Run: func(p *audit.Pass) ([]audit.Finding, error) {
		f, err := p.File("cc.c")
		if err != nil {
			return nil, err
		}
		d := f.Defs("INITIAL_PACKETS")
		if len(d) == 0 {
			return []audit.Finding{p.Absent("INITIAL_PACKETS")}, nil
		}
		c, err := p.Constant(audit.ConstInitialWindow, d[0].Value+"*S", map[string]float64{"S": 1200}, "packets x S", "", d[0].Pos)
		return []audit.Finding{c}, err
	},
}

var panicRule = &audit.Rule{Name: "engine/panics", Question: audit.Q3, Run: func(p *audit.Pass) ([]audit.Finding, error) {
	var m map[string]int
	m["x"]++ // a rule bug must not take the audit down
	return nil, nil
}}

func init() { audit.Register("engine-test", hookRule, constRule, panicRule) }

var engineImpl = data.Implementation{Name: "engine-test", Upstream: "https://example.invalid/eng"}

func srcAt(commit string, called bool) memSource {
	conn := "void on_migrate(struct cc *c) { /* cc_reset(c); */ }\n"
	if called {
		conn = "void on_migrate(struct cc *c) {\n  if (c->moved) {\n    cc_reset(c);\n  }\n}\n"
	}
	packets := "10"
	if called {
		packets = "32"
	}
	return memSource{commit: commit, files: map[string]string{
		"cc.c":   "#define INITIAL_PACKETS " + packets + "\nvoid cc_reset(struct cc *c) { c->cwnd = 0; }\n",
		"conn.c": conn,
	}}
}

func TestRunEngine(t *testing.T) {
	fs, err := audit.Run(context.Background(), engineImpl, srcAt(commitA, false))
	if err == nil || !strings.Contains(err.Error(), "engine/panics") {
		t.Errorf("panicking rule: error %v", err)
	}
	if len(fs) != 3 {
		t.Fatalf("got %d findings, want 3", len(fs))
	}
	if fs[0].Answer != audit.Inert || fs[0].Counts["call_sites"] != 0 || fs[0].Impl != "engine-test" || fs[0].Rule != "engine/hook" {
		t.Errorf("hook finding %+v", fs[0])
	}
	ev := fs[0].Evidence[0]
	if ev.Permalink != "https://example.invalid/eng/blob/"+commitA+"/cc.c#L2" || ev.Excerpt != "void cc_reset(struct cc *c) { c->cwnd = 0; }" {
		t.Errorf("evidence %+v", ev)
	}
	if c := fs[1].Constant; c == nil || c.Value != 12000 || c.Arithmetic != "10*1200 = 12000" {
		t.Errorf("constant %+v", fs[1].Constant)
	}
	if fs[2].Answer != audit.Unknown || !strings.Contains(fs[2].Detail, "panic") {
		t.Errorf("panic finding %+v", fs[2])
	}
	// Absent symbol: graceful.
	fs, _ = audit.Run(context.Background(), engineImpl, memSource{commit: commitB, files: map[string]string{"x.c": "int x;"}})
	if fs[0].Answer != audit.Unknown || !strings.Contains(fs[0].Detail, "cc_reset absent at bbbbbbbbbbbb") {
		t.Errorf("absent: %+v", fs[0])
	}
	if _, err := audit.Run(context.Background(), data.Implementation{Name: "nobody"}, srcAt(commitA, false)); err == nil {
		t.Error("running an implementation without rules succeeded")
	}
}

func TestRegisterTwicePanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("registering a rule name twice did not panic")
		}
	}()
	audit.Register("engine-test", &audit.Rule{Name: "engine/hook"})
}

func reports(t *testing.T) (*audit.Report, *audit.Report) {
	a, _ := audit.Run(context.Background(), engineImpl, srcAt(commitA, false))
	b, _ := audit.Run(context.Background(), engineImpl, srcAt(commitB, true))
	ra := &audit.Report{Impl: "engine-test", Upstream: engineImpl.Upstream, Commit: commitA, Pinned: true, Findings: stable(a), Elapsed: "1ms"}
	rb := &audit.Report{Impl: "engine-test", Upstream: engineImpl.Upstream, Commit: commitB, Findings: stable(b), Elapsed: "1ms"}
	return ra, rb
}

// stable drops the panic detail (a stack trace) so golden files do not churn.
func stable(fs []audit.Finding) []audit.Finding {
	for i := range fs {
		if strings.Contains(fs[i].Detail, "panic") {
			fs[i].Detail = "panic (stack omitted)"
		}
	}
	return fs
}

func TestDiffReports(t *testing.T) {
	a, b := reports(t)
	ch := audit.DiffReports(a, b)
	got := map[string]string{}
	for _, c := range ch {
		got[c.Key] = c.What
	}
	want := map[string]string{
		"Q1 engine/hook": "answer, mechanism, counts",
		"initial_window engine/constants [packets x S]": "constant",
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("diff = %v, want %v", got, want)
	}
}

func TestPrintGolden(t *testing.T) {
	a, b := reports(t)
	for _, format := range []string{"table", "json"} {
		var buf bytes.Buffer
		if err := audit.Print(&buf, format, []*audit.Report{a, b}); err != nil {
			t.Fatal(err)
		}
		golden := filepath.Join("testdata", "print."+format)
		if *update {
			if err := os.WriteFile(golden, buf.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		want, err := os.ReadFile(golden)
		if err != nil {
			t.Fatalf("%v (run with -update)", err)
		}
		if !bytes.Equal(buf.Bytes(), want) {
			t.Errorf("%s output differs from %s:\n%s", format, golden, buf.String())
		}
	}
	if err := audit.Print(&bytes.Buffer{}, "xml", nil); err == nil {
		t.Error("unknown format accepted")
	}
}

func TestConstantsFrom(t *testing.T) {
	a, _ := reports(t)
	c, err := audit.ConstantsFrom(a)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.InitialWindows) != 1 || c.InitialWindows[0].Provenance != "audit "+commitA || c.InitialWindows[0].Source.Path != "cc.c" {
		t.Errorf("constants %+v", c)
	}
	dir := t.TempDir()
	p, err := audit.WriteConstants(dir, "engine-test", c)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p); err != nil {
		t.Error(err)
	}
	empty := &audit.Report{Impl: "x", Commit: commitA}
	if _, err := audit.ConstantsFrom(empty); err == nil {
		t.Error("constants without an initial window accepted")
	}
}
