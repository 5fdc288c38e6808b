package msquic

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/migaudit/migaudit/harnesses/run"
	"github.com/migaudit/migaudit/harnesses/upstream"
)

func TestParseLine(t *testing.T) {
	cases := []struct {
		name, in string
		ok       bool
		err      string
		key      string
		fields   map[string]string
		tus      int64
	}{
		{name: "move", in: "MOVE t_us=5036041 unix_us=1796292079932233 why=migrate from=198.18.1.2:46644 to=198.18.2.2:41615 api=QUIC_PARAM_CONN_LOCAL_ADDRESS",
			ok: true, key: "MOVE", tus: 5036041, fields: map[string]string{"from": "198.18.1.2:46644", "to": "198.18.2.2:41615", "why": "migrate"}},
		{name: "peer address", in: "PEER_ADDRESS_CHANGED t_us=5076312 unix_us=1796292079952323 to=198.18.2.2:41615",
			ok: true, key: "PEER_ADDRESS_CHANGED", tus: 5076312, fields: map[string]string{"to": "198.18.2.2:41615"}},
		{name: "ipv6 peer", in: "CONNECTED t_us=1 unix_us=1796292079932233 local=[::1]:4433 peer=[::1]:50000",
			ok: true, key: "CONNECTED", tus: 1, fields: map[string]string{"local": "[::1]:4433", "peer": "[::1]:50000"}},
		{name: "not a harness line", in: "migaudit-msquic: create x: File exists"},
		{name: "lower-case key", in: "move t_us=1 unix_us=2"},
		{name: "empty", in: ""},
		{name: "bad time", in: "MOVE t_us=x unix_us=2 to=a", ok: true, err: "t_us"},
		{name: "bare word", in: "MOVE t_us=1 unix_us=2 oops", ok: true, err: "not key=value"},
		{name: "no wall clock", in: "MOVE t_us=1 to=a", ok: true, err: "unix_us"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l, ok, err := ParseLine(c.in)
			if ok != c.ok {
				t.Fatalf("ok = %v, want %v", ok, c.ok)
			}
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err = %v, want one naming %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !ok {
				return
			}
			if l.Key != c.key || l.TUS != c.tus {
				t.Errorf("key %q t_us %d, want %q %d", l.Key, l.TUS, c.key, c.tus)
			}
			for k, v := range c.fields {
				if l.Fields[k] != v {
					t.Errorf("field %s = %q, want %q", k, l.Fields[k], v)
				}
			}
			if l.At.IsZero() || l.At.Year() < 2020 {
				t.Errorf("wall time %v not read from unix_us", l.At)
			}
		})
	}
}

func TestMTUAfterMove(t *testing.T) {
	// An excerpt of a real server timeline (testbed, msquic 4db8b398): the
	// client's address changes at t=5080309 µs, where SendPathMtu drops
	// from the discovered 1500 to the new path's 1248.
	p, err := mtuAfterMove(filepath.Join("testdata", "server_move.csv"))
	if err != nil {
		t.Fatal(err)
	}
	if p.Value != 1248 || !strings.Contains(p.Source, "198.18.2.2:41615") || !strings.Contains(p.Source, "5080309") {
		t.Errorf("got %+v, want 1248 from the first sample on 198.18.2.2:41615 at 5080309 µs", p)
	}

	dir := t.TempDir()
	write := func(name, s string) string {
		f := filepath.Join(dir, name)
		if err := os.WriteFile(f, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		return f
	}
	bad := []struct{ name, csv, err string }{
		{"no move", "time_us,peer,path_mtu\n1,a:1,1500\n2,a:1,1500\n", "never changes"},
		{"no column", "time_us,peer\n1,a:1\n2,b:1\n", "path_mtu"},
		{"bad value", "time_us,peer,path_mtu\n1,a:1,1500\n2,b:1,x\n", "record 3"},
		{"empty", "", "header"},
	}
	for _, b := range bad {
		if _, err := mtuAfterMove(write(strings.ReplaceAll(b.name, " ", "_")+".csv", b.csv)); err == nil || !strings.Contains(err.Error(), b.err) {
			t.Errorf("%s: err = %v, want one containing %q", b.name, err, b.err)
		}
	}
}

func TestScenariosAndOptions(t *testing.T) {
	h := New()
	caps := h.Capabilities()
	for _, s := range run.AllScenarios {
		if _, listed := caps.Scenarios[s]; !listed {
			t.Errorf("scenario %s neither supported nor explained", s)
		}
	}
	if why := caps.Supports(run.NATRebind); !strings.Contains(why, "QUIC_PARAM_CONN_LOCAL_ADDRESS") {
		t.Errorf("nat-rebind: %q", why)
	}
	if _, err := caps.ResolveCC("reno"); err == nil || !strings.Contains(err.Error(), "cubic and bbr") {
		t.Errorf("--cc reno: %v", err)
	}
	if err := h.ConfigureUpstream(upstream.Options{Deps: map[string]string{"picotls": "/x"}}); err == nil || !strings.Contains(err.Error(), "quictls") {
		t.Errorf("--dep picotls accepted: %v", err)
	}
	t.Setenv("MIGAUDIT_MIRRORS", t.TempDir())
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	if err := h.ConfigureUpstream(upstream.Options{}); err == nil || !strings.Contains(err.Error(), "no source for msquic") {
		t.Errorf("no source anywhere: %v", err)
	}
	src := toyRepo(t)
	if err := h.ConfigureUpstream(upstream.Options{Source: src, Commit: "HEAD", Deps: map[string]string{"quictls": t.TempDir()}}); err != nil {
		t.Errorf("--source with --dep quictls rejected: %v", err)
	}
	if err := h.ConfigureUpstream(upstream.Options{Source: src, Commit: "HEAD", Deps: map[string]string{"quictls": "/nonexistent/quictls"}}); err == nil || !strings.Contains(err.Error(), "/nonexistent/quictls") {
		t.Errorf("missing --dep quictls directory: %v", err)
	}
	if err := h.ConfigureUpstream(upstream.Options{Source: src, Commit: "v0.0.0-no-such-tag"}); err == nil || !strings.Contains(err.Error(), "v0.0.0-no-such-tag") {
		t.Errorf("unknown --commit: %v", err)
	}
	r := LibraryRecipe(upstream.Options{Source: "/src/msquic", Commit: "v2.4.8"})
	if r.Src.Dir != "/src/msquic" || r.Src.Commit != "v2.4.8" || r.Impl != "msquic" {
		t.Errorf("library recipe source %+v", r.Src)
	}
	found := false
	for _, o := range r.Options {
		found = found || o == "-DQUIC_TLS_LIB=quictls"
	}
	if !found {
		t.Errorf("library options %v do not name the TLS library", r.Options)
	}
}

// toyRepo is a one-commit git repository standing in for a checkout.
func toyRepo(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	r, err := git.PlainInit(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "CMakeLists.txt"), []byte("project(toy)\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	wt, err := r.Worktree()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := wt.Add("CMakeLists.txt"); err != nil {
		t.Fatal(err)
	}
	if _, err := wt.Commit("toy", &git.CommitOptions{Author: &object.Signature{Name: "t", Email: "t@example.org", When: time.Unix(1700000000, 0)}}); err != nil {
		t.Fatal(err)
	}
	return dir
}
