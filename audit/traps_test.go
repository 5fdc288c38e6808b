package audit_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/migaudit/migaudit/audit"
	"github.com/migaudit/migaudit/audit/gitsrc"
	"github.com/migaudit/migaudit/audit/syntax"
	"github.com/migaudit/migaudit/data"
)

// The trap sources: every way a name can appear without being a call.
var trapFiles = map[string]string{
	"src/cc.h": `#ifndef CC_H
#define CC_H
enum cc_event { EV_ACK, EV_LOSS, EV_RESET };
struct cc_vtable {
    void (*notify)(struct cc *c, enum cc_event ev, int v);
    void (*reset)(struct cc *c);
};
void cc_reset(struct cc *c); /* a prototype is not a call */
#endif
`,
	"src/algo_a.c": `#include "cc.h"
static void a_reset(struct cc *c) { c->cwnd = 10; }
static void a_notify(struct cc *c, enum cc_event ev, int v) {
    switch (ev) {
    case EV_RESET:
        a_reset(c);
        break;
    case EV_ACK:
        break;
    default:
        break;
    }
}
const struct cc_vtable algo_a = { a_notify, a_reset };
`,
	"src/algo_b.c": `#include "cc.h"
static void b_reset(struct cc *c) { }
static void b_notify(struct cc *c, enum cc_event ev, int v) {
    if (ev == EV_RESET) { b_reset(c); }
}
const struct cc_vtable algo_b = { .notify = b_notify, .reset = b_reset };
`,
	"src/conn.c": `#include "cc.h"
/* On migration we should call cc_reset(c); but nobody does: c->vt->reset(c) */
static void log_msg(const char *s) { }
void cc_reset(struct cc *c) { c->cwnd = 0; }
void on_ack(struct cc *c, int lost) {
    log_msg("cc_reset() would go here; reset(c)");
    c->vt->notify(c, EV_ACK, 0);
    c->vt->notify(c, lost ? EV_LOSS : EV_ACK, 1);
}
void on_migrate(struct cc *c, int migrated) {
    if (migrated && c != 0) {
        cc_reset(c);
    }
}
`,
	"pkg/conn.go": `package pkg

// ResetCC() is called on migration (it is not: this is a comment).
type Controller interface {
	ResetCC()
}

type reno struct{ cwnd int }

func (r *reno) ResetCC() {}

type Event int

const (
	EvAck Event = iota
	EvReset
)

func notify(e Event) {}

func logf(s string) {}

func onPacket(c Controller, ev Event, migrated bool) {
	logf("ResetCC()")
	switch ev {
	case EvReset:
		notify(EvAck)
	}
	if migrated {
		c.ResetCC()
	}
	hook := c.ResetCC
	_ = hook
}
`,
	"rs/src/lib.rs": `/// Called when the connection migrates: on_migration() resets cwnd.
pub trait Cc {
    fn on_migration(&mut self);
}

pub struct A;

impl Cc for A {
    fn on_migration(&mut self) {}
}

pub enum Ev { Ack, Reset }

fn notify(e: Ev) {}

pub fn g(c: &mut dyn Cc, ev: Ev) {
    let s = "on_migration()";
    match ev {
        Ev::Reset => {}
        _ => {}
    }
    notify(Ev::Ack);
}

#[cfg(test)]
mod tests {
    fn t(c: &mut dyn super::Cc) {
        c.on_migration();
    }
}
`,
}

// trapRepo commits trapFiles into a fresh repository in a temp dir, tags it,
// then dirties the work tree (which the audit must never see).
func trapRepo(t *testing.T) (dir, commit string) {
	t.Helper()
	dir = t.TempDir()
	r, err := git.PlainInit(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	wt, err := r.Worktree()
	if err != nil {
		t.Fatal(err)
	}
	for p, body := range trapFiles {
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := wt.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	sig := &object.Signature{Name: "t", Email: "t@example.invalid", When: time.Unix(1700000000, 0)}
	h, err := wt.Commit("traps", &git.CommitOptions{Author: sig})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.CreateTag("v1.2.3", h, &git.CreateTagOptions{Tagger: sig, Message: "annotated"}); err != nil {
		t.Fatal(err)
	}
	// Local edit after the commit: adds a real call to the dead hook.
	if err := os.WriteFile(filepath.Join(dir, "src/algo_b.c"), []byte("void x(struct cc *c){ c->vt->reset(c); }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, h.String()
}

func trapSet(t *testing.T) (audit.Set, string) {
	t.Helper()
	dir, commit := trapRepo(t)
	repo, err := gitsrc.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	snap, err := repo.At(commit)
	if err != nil {
		t.Fatal(err)
	}
	var set audit.Set
	rule := &audit.Rule{Name: "traps/parse", Question: audit.Q1, Run: func(p *audit.Pass) ([]audit.Finding, error) {
		fs, err := p.Files("src/*", "pkg/**/*.go", "rs/src/*.rs")
		set = audit.Set(fs)
		return nil, err
	}}
	audit.Register("traps-"+t.Name(), rule)
	if _, err := audit.Run(context.Background(), data.Implementation{Name: "traps-" + t.Name(), Upstream: "https://example.invalid/traps"}, snap); err != nil {
		t.Fatal(err)
	}
	return set, commit
}

func TestTraps(t *testing.T) {
	set, _ := trapSet(t)
	count := func(ms []syntax.Mention, k syntax.MentionKind) int { return audit.Count(ms)[k] }
	var cSet audit.Set
	for _, f := range set {
		if f.Lang == syntax.C {
			cSet = append(cSet, f)
		}
	}
	enumArgs := func(callee string, idx int) map[string]int {
		out := map[string]int{}
		for _, c := range cSet.Calls(callee) {
			if idx < len(c.Args) {
				for _, id := range c.Args[idx].Idents {
					out[id]++
				}
			}
		}
		return out
	}
	tests := []struct {
		name string
		got  int
		want int
	}{
		// C: dead hook through a vtable: two handlers assigned, no call through ->reset.
		{"C reset field calls (dead hook; the work-tree edit adds one, the commit has none)", len(set.Calls("reset")), 0},
		{"C handlers assigned to the reset slot", count(set.Mentions("a_reset"), syntax.MentionAssigned) + count(set.Mentions("b_reset"), syntax.MentionAssigned), 2},
		// C: call only in a comment or a string; a prototype is no call.
		{"C cc_reset real calls", len(set.Calls("cc_reset")), 1},
		{"C cc_reset in comments", count(set.Mentions("cc_reset"), syntax.MentionComment), 1},
		{"C cc_reset in strings", count(set.Mentions("cc_reset"), syntax.MentionString), 1},
		{"C cc_reset prototypes", len(defsOf(set, "cc_reset", syntax.DefPrototype)), 1},
		{"C cc_reset definitions with body", len(set.Funcs("cc_reset")), 1},
		{"C cc_reset declaration mentions", count(set.Mentions("cc_reset"), syntax.MentionDeclaration), 1},
		// C: dispatch through a function pointer with an enum argument.
		{"C notify dispatches", len(cSet.Calls("notify")), 2},
		{"C EV_ACK dispatched", enumArgs("notify", 1)["EV_ACK"], 2},
		{"C EV_LOSS dispatched (ternary)", enumArgs("notify", 1)["EV_LOSS"], 1},
		{"C EV_RESET dispatched", enumArgs("notify", 1)["EV_RESET"], 0},
		{"C EV_RESET case labels", count(set.Mentions("EV_RESET"), syntax.MentionCaseLabel), 1},
		{"C EV_RESET enumerator definitions", count(set.Mentions("EV_RESET"), syntax.MentionDefinition), 1},
		{"C notify field declarations", count(set.Mentions("notify"), syntax.MentionField), 1},
		{"C guarded call: guards on cc_reset", len(set.Calls("cc_reset")[0].Guards), 1},
		// Go: interface declaration, empty method, comment, string, method value, case label.
		{"Go ResetCC real calls", len(set.Calls("ResetCC")), 1},
		{"Go ResetCC interface declarations", len(defsOf(set, "ResetCC", syntax.DefPrototype)), 1},
		{"Go ResetCC empty implementations", countEmpty(set.Funcs("ResetCC")), 1},
		{"Go ResetCC in comments", count(set.Mentions("ResetCC"), syntax.MentionComment), 1},
		{"Go ResetCC in strings", count(set.Mentions("ResetCC"), syntax.MentionString), 1},
		{"Go ResetCC method values assigned", count(set.Mentions("ResetCC"), syntax.MentionAssigned), 1},
		{"Go EvReset case labels", count(set.Mentions("EvReset"), syntax.MentionCaseLabel), 1},
		{"Go EvAck passed to notify", countArg(set.Mentions("EvAck"), "notify"), 1},
		// Rust: trait declaration, empty impl, doc comment, string, test-only call, match arm.
		{"Rust on_migration live calls", liveCalls(set.Calls("on_migration")), 0},
		{"Rust on_migration test-only calls", len(set.Calls("on_migration")) - liveCalls(set.Calls("on_migration")), 1},
		{"Rust on_migration trait declarations", len(defsOf(set, "on_migration", syntax.DefPrototype)), 1},
		{"Rust on_migration empty impls", countEmpty(set.Funcs("on_migration")), 1},
		{"Rust on_migration in comments", count(set.Mentions("on_migration"), syntax.MentionComment), 1},
		{"Rust on_migration in strings", count(set.Mentions("on_migration"), syntax.MentionString), 1},
		{"Rust Reset match-arm labels", count(set.Mentions("Reset"), syntax.MentionCaseLabel), 1},
		{"Rust Ack passed to notify", countArg(set.Mentions("Ack"), "notify"), 1},
	}
	for _, tc := range tests {
		if tc.got != tc.want {
			t.Errorf("%s: got %d, want %d", tc.name, tc.got, tc.want)
		}
	}
	if c := set.Calls("cc_reset"); len(c) == 1 && c[0].Guards[0].Cond != "(migrated && c != 0)" {
		t.Errorf("guard of cc_reset: %q", c[0].Guards[0].Cond)
	}
}

func defsOf(set audit.Set, name string, k syntax.DefKind) []syntax.Def {
	var out []syntax.Def
	for _, d := range set.Defs(name) {
		if d.Kind == k {
			out = append(out, d)
		}
	}
	return out
}

func countEmpty(ds []syntax.Def) int {
	n := 0
	for _, d := range ds {
		if d.Empty {
			n++
		}
	}
	return n
}

func countArg(ms []syntax.Mention, callee string) int {
	n := 0
	for _, m := range ms {
		if m.Kind == syntax.MentionArgument && m.Context == callee {
			n++
		}
	}
	return n
}

func liveCalls(cs []syntax.Call) int {
	n := 0
	for _, c := range cs {
		if !c.Test {
			n++
		}
	}
	return n
}

func TestResolveRevisions(t *testing.T) {
	dir, commit := trapRepo(t)
	repo, err := gitsrc.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, rev := range []string{commit, commit[:10], "v1.2.3", "refs/tags/v1.2.3", "HEAD"} {
		h, err := repo.Resolve(rev)
		if err != nil {
			t.Errorf("resolve %s: %v", rev, err)
			continue
		}
		if h.String() != commit {
			t.Errorf("resolve %s = %s, want %s", rev, h, commit)
		}
	}
	if _, err := repo.Resolve("v9.9.9"); err == nil {
		t.Error("resolving a missing tag succeeded")
	}
	snap, err := repo.At(commit)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := snap.ReadFile("src/missing.c"); !audit.IsNotExist(err) {
		t.Errorf("missing file: want not-exist, got %v", err)
	}
	b, err := snap.ReadFile("src/algo_b.c")
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != trapFiles["src/algo_b.c"] {
		t.Error("read the work tree instead of the commit")
	}
}

func TestLocateOffline(t *testing.T) {
	t.Setenv(gitsrc.MirrorsEnv, t.TempDir())
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	t.Setenv("HOME", t.TempDir())
	_, err := gitsrc.Locate("http://127.0.0.1:9/nobody/nothing", "")
	if err == nil {
		t.Fatal("clone of an unreachable upstream succeeded")
	}
	for _, want := range []string{"--source", gitsrc.MirrorsEnv} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %s", err, want)
		}
	}
}
