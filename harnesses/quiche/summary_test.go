package quiche

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/*/summary.golden.json")

// TestSummarizeGolden recomputes the per-path figures of recorded server
// traces (a shaped testbed run, a loopback migrate-back, loopback
// nat-rebinds whose new address was never validated or failed validation)
// and compares them
// with the golden files; -update rewrites those.
func TestSummarizeGolden(t *testing.T) {
	cases := []struct {
		dir        string
		migrations int
		fresh      []bool
	}{
		{"standard", 1, []bool{true}},
		{"migrate-back", 2, []bool{true, false}},
		{"nat-rebind-unvalidated", 1, []bool{true}},
		// quiche switched to the rebound address unvalidated, later logged
		// FailedValidation and a PeerMigrated naming the original address,
		// while pathStats kept the rebound path active to the end: the
		// switch pathStats shows is the one counted.
		{"nat-rebind-failed", 1, []bool{true}},
	}
	for _, c := range cases {
		t.Run(c.dir, func(t *testing.T) {
			dir := filepath.Join("testdata", c.dir)
			s, err := Summarize(dir, "server")
			if err != nil {
				t.Fatal(err)
			}
			if len(s.Migrations) != c.migrations {
				t.Fatalf("%d migrations, want %d", len(s.Migrations), c.migrations)
			}
			for i, m := range s.Migrations {
				if m.NewPathFresh != c.fresh[i] {
					t.Errorf("migration %d: fresh %v, want %v", i+1, m.NewPathFresh, c.fresh[i])
				}
				if m.NewPathFresh && m.NewCwndFirst != s.InitialWindow {
					t.Errorf("migration %d: fresh path created at %d B, connection's first window %d B", i+1, m.NewCwndFirst, s.InitialWindow)
				}
				if !m.IPChanged {
					t.Errorf("migration %d: %s → %s is not an IP change", i+1, m.OldAddr, m.NewAddr)
				}
			}
			got, _ := json.MarshalIndent(s, "", "  ")
			got = append(got, '\n')
			golden := filepath.Join(dir, "summary.golden.json")
			if *update {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("summary differs from %s (run with -update after checking):\n%s", golden, got)
			}
		})
	}
}

// TestStandardFigures checks the shaped run's figures against the testbed
// it ran on (path A 20 ms, path B 40 ms): the new path's RTT is path B's,
// and the old path's stays path A's.
func TestStandardFigures(t *testing.T) {
	s, err := Summarize(filepath.Join("testdata", "standard"), "server")
	if err != nil {
		t.Fatal(err)
	}
	m := s.Migrations[0]
	if m.NewMinRTTUS < 40_000 || m.NewMinRTTUS > 60_000 {
		t.Errorf("new path min smoothed RTT %d µs, want path B's 40 ms (+queueing)", m.NewMinRTTUS)
	}
	if m.OldMinRTTBeforeUS < 20_000 || m.OldMinRTTBeforeUS >= 40_000 {
		t.Errorf("old path min smoothed RTT %d µs, want path A's 20 ms (+queueing)", m.OldMinRTTBeforeUS)
	}
	if m.OldPeakBefore <= s.InitialWindow {
		t.Errorf("old path never grew past the initial window (%d B)", m.OldPeakBefore)
	}
}

func TestReadCSVErrors(t *testing.T) {
	cases := []struct{ name, content, want string }{
		{"header", "time,cwnd\n1,2\n", "line 1: header"},
		// The second line starts right after the header and its newline.
		{"columns", CSVHeader + "\n1,0,a,b,1,12000,,333000\n", fmt.Sprintf("line 2 at byte %d: 8 columns, want 10", len(CSVHeader)+1)},
		{"number", CSVHeader + "\n1,0,a,b,1,x,,333000,,\n", fmt.Sprintf(`line 2 at byte %d: cwnd "x"`, len(CSVHeader)+1)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "server.csv")
			if err := os.WriteFile(p, []byte(c.content), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := ReadCSV(p)
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), p) {
				t.Errorf("error %v, want one naming %s and %q", err, p, c.want)
			}
		})
	}
}

func TestActiveSwitches(t *testing.T) {
	rows := []Row{
		{TimeUS: 1, Local: "s", Peer: "a", Active: true},
		{TimeUS: 2, Local: "s", Peer: "b", Active: false},
		{TimeUS: 3, Local: "s", Peer: "a", Active: true},
		{TimeUS: 4, Local: "s", Peer: "b", Active: true},
		{TimeUS: 4, Local: "s", Peer: "a", Active: false},
		{TimeUS: 5, Local: "s", Peer: "a", Active: true},
	}
	got := ActiveSwitches(rows)
	want := []Switch{{AtUS: 4, Old: "s|a", New: "s|b"}, {AtUS: 5, Old: "s|b", New: "s|a"}}
	if len(got) != len(want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("switch %d: %+v, want %+v", i, got[i], want[i])
		}
	}
}
