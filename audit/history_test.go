package audit_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/migaudit/migaudit/audit"
	"github.com/migaudit/migaudit/audit/gitsrc"
	"github.com/migaudit/migaudit/data"
)

// fixtureTree reads a quic-go rule fixture case; a case that names a
// sibling in <case>.base holds only the files it changes (as in
// rules/fixture_test.go).
func fixtureTree(t *testing.T, name string) map[string]string {
	t.Helper()
	root := filepath.Join("rules", "testdata", "src", "quic-go")
	files := map[string]string{}
	if b, err := os.ReadFile(filepath.Join(root, name+".base")); err == nil {
		files = fixtureTree(t, strings.TrimSpace(string(b)))
	}
	dir := filepath.Join(root, name)
	err := filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil || fi.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		files[filepath.ToSlash(rel)] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// Four commits of a quic-go-shaped tree: no migration, an unrelated edit,
// the zeroing RTT reset, the reset to DefaultInitialRTT. Audited at the
// first and last, History must find the answers changed, bisect to the
// third commit, and show the evidence that appeared there.
func TestHistoryBisects(t *testing.T) {
	before := fixtureTree(t, "before-migration")
	edited := map[string]string{"README.md": "an unrelated edit\n"}
	for k, v := range before {
		edited[k] = v
	}
	snaps, err := gitsrc.MemCommits(before, edited, fixtureTree(t, "zeroes-fields"), fixtureTree(t, "stores-default"))
	if err != nil {
		t.Fatal(err)
	}
	repo := snaps[0].Repo()
	im, err := data.Lookup("quic-go")
	if err != nil {
		t.Fatal(err)
	}
	revs := []audit.Rev{{Name: "r0", Commit: snaps[0].Commit()}, {Name: "r3", Commit: snaps[3].Commit()}}
	rep, err := audit.HistoryOf(context.Background(), im, repo, revs, func() (*gitsrc.Repo, error) { return repo, nil }, 1)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]audit.AnswerChange{}
	for _, c := range rep.Changes {
		got[c.What] = c
	}
	for _, tt := range []struct {
		what, from, to string
		at             int
		bisected       bool
		added          string
	}{
		{"Q1", "UNKNOWN", "YES", 2, true, "internal/utils/rtt_stats.go:"},
		{"Q2", "UNKNOWN", "NO", 2, true, "func (r *RTTStats) ResetForPathMigration() {"},
		{"Q3", "UNKNOWN", "YES", 2, true, "h.packets[idx] = nil"},
		{"initial_window [initialCongestionWindow x initial packet size]", "32*1252 = 40064", "32*1280 = 40960", 3, false, ""},
	} {
		c, ok := got[tt.what]
		if !ok {
			t.Errorf("%s: no change found; changes %+v", tt.what, rep.Changes)
			continue
		}
		if c.From != tt.from || c.To != tt.to || c.Commit != snaps[tt.at].Commit() || c.Bisected != tt.bisected {
			t.Errorf("%s: %s -> %s at %.8s (bisected %v), want %s -> %s at commit %d %.8s (bisected %v)", tt.what, c.From, c.To, c.Commit, c.Bisected, tt.from, tt.to, tt.at, snaps[tt.at].Commit(), tt.bisected)
		}
		if tt.added != "" && !strings.Contains(strings.Join(c.Added, "\n"), tt.added) {
			t.Errorf("%s: evidence added %q lacks %q", tt.what, c.Added, tt.added)
		}
	}
	if len(rep.Points) != 2 || rep.Points[0].Answers[audit.Q1] != audit.Unknown || rep.Points[1].Answers[audit.Q1] != audit.Yes {
		t.Errorf("points %+v", rep.Points)
	}
}

func TestHistoryNeedsImpl(t *testing.T) {
	err := audit.History(context.Background(), audit.HistoryOptions{}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "--impl") {
		t.Errorf("error %v, want one naming --impl", err)
	}
}
