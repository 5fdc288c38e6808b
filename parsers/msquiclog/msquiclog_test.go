package msquiclog

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// golden is what the test compares: the parsed counts and both summaries.
type golden struct {
	Events, Gates, Active, Sent, Losses int
	Server, Client                      Summary
	Congestion                          Congestion
}

func TestGolden(t *testing.T) {
	for _, name := range []string{"server_small"} {
		t.Run(name, func(t *testing.T) {
			l, err := ReadFile(filepath.Join("testdata", name+".log"))
			if err != nil {
				t.Fatal(err)
			}
			g := golden{Events: len(l.Events), Gates: len(l.Gates), Active: len(l.Active), Sent: len(l.Sent), Losses: len(l.Losses),
				Server: Summarize(l, true), Client: Summarize(l, false)}
			if g.Server.Switch != nil {
				g.Congestion = CongestionAfter(l, true, g.Server.Switch.UnixUS, 1_000_000, g.Server.Switch.Remote)
			}
			got, err := json.MarshalIndent(g, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			gp := filepath.Join("testdata", name+".golden.json")
			if *update {
				if err := os.WriteFile(gp, append(got, '\n'), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(gp)
			if err != nil {
				t.Fatalf("%v (run go test -update once)", err)
			}
			if !bytes.Equal(bytes.TrimSpace(got), bytes.TrimSpace(want)) {
				t.Errorf("summary differs from %s:\n%s", gp, got)
			}
		})
	}
}

// TestSummaryFacts states the facts of the small log the golden encodes,
// so that a wrong golden cannot pass unnoticed.
func TestSummaryFacts(t *testing.T) {
	l, err := ReadFile(filepath.Join("testdata", "server_small.log"))
	if err != nil {
		t.Fatal(err)
	}
	s := Summarize(l, true)
	if s.Switch == nil || s.Switch.PathID != 1 || s.Switch.PrevPathID != 0 {
		t.Fatalf("switch = %+v, want path 0 → 1", s.Switch)
	}
	if s.Before.Gates != 3 || s.Before.Updates != 2 || s.Before.Eligible != 2 {
		t.Errorf("before = %+v", s.Before)
	}
	if s.After.Eligible != 3 || s.After.DifferentPath != 3 || s.After.Updates != 0 || s.After.LastSRTTUS != 333000 {
		t.Errorf("after = %+v", s.After)
	}
	if IDs(s.After.LargestPathIDs) != "0 ×3" || IDs(s.After.AckPathIDs) != "1 ×3" {
		t.Errorf("path ids: largest %s, ack %s", IDs(s.After.LargestPathIDs), IDs(s.After.AckPathIDs))
	}
	if s.FirstSentOnNew == nil || s.FirstSentOnNew.PN != 5001 || s.FirstSentOnNew.StampedPathID != 0 {
		t.Errorf("first sent on new path = %+v", s.FirstSentOnNew)
	}
	if c := CongestionAfter(l, true, s.Switch.UnixUS, 1_000_000, s.Switch.Remote); c.Events != 2 || c.Lowest != 5978 || c.OffPath != 1 {
		t.Errorf("congestion in 1 s = %+v, want 2 events (the 12.0 s one is outside, the 10.15 s one no event), lowest 5978, 1 off-path (pn 4990 went to the old address, pn 5012 to the new)", c)
	}
	for pn, want := range map[int64]int64{0: 0, 4990: 0, 5001: 5001, 5002: 5002, 5012: 5003} {
		if x := l.SentAs(true, pn); x == nil || x.PN != want {
			t.Errorf("SentAs(%d) = %+v, want the SENT line of pn %d", pn, x, want)
		}
	}
	if l.SentAs(false, 5001) != nil {
		t.Error("SentAs found a client line in a server-only log")
	}
	if g := l.Gates[2]; g.MinRTTUS != 1<<63-1 || g.LargestPathID != -1 {
		t.Errorf("UINT64_MAX min_rtt / -1 path id read as %d / %d", g.MinRTTUS, g.LargestPathID)
	}
	if e := l.Events[len(l.Events)-1]; e.Kind != "MIGAUDIT_FUTURE" || e.Fields["note"] != "kept" {
		t.Errorf("unknown kind not kept: %+v", e)
	}
}

func TestGzip(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "server_small.log"))
	if err != nil {
		t.Fatal(err)
	}
	var z bytes.Buffer
	zw := gzip.NewWriter(&z)
	zw.Write(b)
	zw.Close()
	a, err := Read("plain", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	c, err := Read("gz", &z)
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Events) != len(c.Events) || len(a.Gates) != len(c.Gates) {
		t.Fatalf("gzip read %d events, plain %d", len(c.Events), len(a.Events))
	}
}

func TestErrors(t *testing.T) {
	cases := []struct{ name, in, want string }{
		{"empty", "", "empty file"},
		{"no magic", "unix_us=1 mono_us=1 SENT\n", "not a migaudit msquic instrumentation log"},
		{"short line", Magic + "\nunix_us=1 mono_us=2\n", ":2: want unix_us"},
		{"bad clock", Magic + "\nunix_us=x mono_us=2 SENT\n", `:2: unix_us="x"`},
		{"swapped clocks", Magic + "\nmono_us=1 unix_us=2 SENT\n", "want unix_us"},
		{"no kind", Magic + "\nunix_us=1 mono_us=2 server=1\n", "no event kind"},
		{"bare word", Magic + "\nunix_us=1 mono_us=2 SENT oops\n", `"oops" is not key=value`},
		{"missing field", Magic + "\nunix_us=1 mono_us=2 SENT server=1 pn=3 send_path_id=1\n", ":2: SENT has no stamped_path_id"},
		{"bad number", Magic + "\nunix_us=1 mono_us=2 PATH_NEW server=1 path_id=a index=0\n", `path_id="a" is not an integer`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Read("x.log", strings.NewReader(c.in))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want one containing %q", err, c.want)
			}
			if !strings.HasPrefix(err.Error(), "x.log") {
				t.Errorf("error %q does not name the file", err)
			}
		})
	}
}

func FuzzRead(f *testing.F) {
	b, err := os.ReadFile(filepath.Join("testdata", "server_small.log"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Add([]byte(Magic + "\n"))
	f.Add([]byte(Magic + "\nunix_us=1 mono_us=2 RTT_GATE server=1\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		l, err := Read("fuzz", bytes.NewReader(in))
		if err != nil {
			if l != nil {
				t.Fatal("a log and an error")
			}
			return
		}
		for _, server := range []bool{true, false} {
			s := Summarize(l, server)
			if s.After.DifferentPath > s.After.Eligible || s.Before.Updates > s.Before.Gates || s.After.Updates > s.After.Gates {
				t.Fatalf("summary counts inconsistent: %+v", s)
			}
			if s.Switch != nil {
				if c := CongestionAfter(l, server, s.Switch.UnixUS, 1_000_000, s.Switch.Remote); c.OffPath > c.Events || c.Persistent > c.Events {
					t.Fatalf("congestion counts inconsistent: %+v", c)
				}
			}
		}
	})
}
