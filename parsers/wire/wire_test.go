package wire

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files")

const (
	fixture = "testdata/quicgo/wire.pcapng.gz"
	keylog  = "testdata/quicgo/keylog.txt"
)

func summary(c *Capture) string {
	var b strings.Builder
	fmt.Fprintf(&b, "capture %s: %d records, %d packets, paths %v, suite %q, client_random %x\n", c.Name, c.Records, len(c.Packets), c.Paths, c.Suite, c.ClientRandom)
	for _, n := range c.Notes {
		fmt.Fprintf(&b, "note: %s\n", n)
	}
	for i := range c.Packets {
		b.WriteString(c.Packets[i].String())
		b.WriteByte('\n')
	}
	return b.String()
}

func TestGolden(t *testing.T) {
	cases := []struct {
		name, keylog, golden string
	}{
		{"with key log", keylog, "testdata/quicgo.golden"},
		{"without key log", "", "testdata/quicgo-nokeylog.golden"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			capt, err := ReadFiles(fixture, c.keylog)
			if err != nil {
				t.Fatal(err)
			}
			got := summary(capt)
			if *update {
				if err := os.WriteFile(c.golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(c.golden)
			if err != nil {
				t.Fatalf("%v (run with -update)", err)
			}
			if got != string(want) {
				t.Errorf("summary differs from %s (run with -update and review the diff)", c.golden)
			}
		})
	}
}

// What the fixture must show whatever its golden says: both paths, every
// 1-RTT packet numbered, the path validation exchange, a key update.
func TestFixtureFacts(t *testing.T) {
	c, err := ReadFiles(fixture, keylog)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Notes) != 0 {
		t.Errorf("notes on a complete capture and key log: %q", c.Notes)
	}
	var perPath = map[string]int{}
	var challenge, response, phase1, decrypted int
	for _, p := range c.Packets {
		perPath[p.Path]++
		if p.PN < 0 {
			t.Errorf("record %d: %s packet without a packet number (%s)", p.Record, p.Type, p.Note)
		}
		if p.Whole && !p.Decrypted {
			t.Errorf("record %d: whole %s packet %d not decrypted (%s)", p.Record, p.Type, p.PN, p.Note)
		}
		if p.Decrypted {
			decrypted++
		}
		if p.KeyPhase == 1 {
			phase1++
		}
		for _, f := range p.Frames {
			switch f.Type {
			case FramePathChallenge:
				challenge++
			case FramePathResponse:
				response++
			}
		}
	}
	if perPath["pathA"] == 0 || perPath["pathB"] == 0 {
		t.Errorf("packets per path %v, want both", perPath)
	}
	if challenge == 0 || response == 0 {
		t.Errorf("PATH_CHALLENGE %d, PATH_RESPONSE %d, want both", challenge, response)
	}
	if phase1 == 0 {
		t.Error("no packet in key phase 1: the key update is not exercised")
	}
	ix := c.Index()
	if ix.Len(S2C) == 0 || ix.Len(C2S) == 0 {
		t.Fatalf("index holds %d s2c and %d c2s packets", ix.Len(S2C), ix.Len(C2S))
	}
	t.Logf("%d packets, %d decrypted, per path %v, %d indexed s2c", len(c.Packets), decrypted, perPath, ix.Len(S2C))
}

func TestIndexMatchesPackets(t *testing.T) {
	c, err := ReadFiles(fixture, keylog)
	if err != nil {
		t.Fatal(err)
	}
	ix := c.Index()
	for _, p := range c.Packets {
		if p.Type != OneRTT {
			continue
		}
		s, ok := ix.Lookup(p.Dir, p.PN)
		if !ok || s.Record > p.Record {
			t.Fatalf("record %d: %s packet %d: index %+v %v", p.Record, p.Dir, p.PN, s, ok)
		}
		if s.Record == p.Record && (s.Path != p.Path || s.WireNS != p.WireNS) {
			t.Fatalf("record %d: index says %+v", p.Record, s)
		}
	}
	if _, ok := ix.Lookup(S2C, 1<<40); ok {
		t.Error("index finds a packet number never sent")
	}
}

func TestReadPlainPcapng(t *testing.T) {
	plain := gunzipFixture(t)
	a, err := Read("wire.pcapng", bytes.NewReader(plain), Options{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := ReadFiles(fixture, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Packets) != len(b.Packets) {
		t.Errorf("plain pcapng: %d packets, gzip: %d", len(a.Packets), len(b.Packets))
	}
}

func gunzipFixture(t testing.TB) []byte {
	t.Helper()
	out := filepath.Join(t.TempDir(), "wire.pcapng")
	if err := gunzipTo(fixture, out); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
