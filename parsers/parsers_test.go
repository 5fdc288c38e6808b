package parsers

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/migaudit/migaudit/parsers/timeline"
)

var update = flag.Bool("update", false, "rewrite testdata/golden/*.json from the parsers' output")

// repoRoot walks up from the package directory to go.mod.
func repoRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("go.mod not found above the package directory")
		}
		dir = parent
	}
}

// shared returns a path under ../shared/reference, skipping when absent.
func shared(t testing.TB, rel ...string) string {
	t.Helper()
	p := filepath.Join(append([]string{repoRoot(t), "..", "shared", "reference"}, rel...)...)
	if _, err := os.Stat(p); err != nil {
		t.Skipf("reference data %s not present (needs ../shared from the repository root): %v", p, err)
	}
	return p
}

// gunzipFile returns a file's content, decompressed if it is gzip.
func gunzipFile(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > 2 && b[0] == 0x1f && b[1] == 0x8b {
		z, err := gzip.NewReader(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		if b, err = io.ReadAll(z); err != nil {
			t.Fatal(err)
		}
	}
	return b
}

func parseBytes(t testing.TB, name string, b []byte, format string) (*timeline.Timeline, error) {
	t.Helper()
	var c timeline.Collector
	err := Parse(name, bytes.NewReader(b), Options{Format: format}, &c)
	return &c.T, err
}

// TestGolden parses every hand-written trace in testdata/ and compares the
// whole timeline with testdata/golden/<file>.json (go test -update rewrites
// them; review the diff).
func TestGolden(t *testing.T) {
	files, err := filepath.Glob("testdata/*.*")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no testdata traces")
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			tl, err := ParseFile(f, Options{})
			if err != nil {
				t.Fatal(err)
			}
			tl.Source = filepath.Base(f)
			got, err := json.MarshalIndent(tl, "", " ")
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, '\n')
			golden := filepath.Join("testdata", "golden", filepath.Base(f)+".json")
			if *update {
				if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("timeline differs from %s; run go test -run TestGolden -update and review the diff\n got: %s", golden, excerpt(got))
			}
		})
	}
}

// findSample returns the first sample that reports cwnd == v (and, if
// after >= 0, lies at or after that time).
func findCwnd(tl *timeline.Timeline, v int64, after int64) (timeline.Sample, bool) {
	for _, s := range tl.Samples {
		if s.Fields.Has(timeline.FieldCwnd) && s.CwndBytes == v && s.TimeUS >= after {
			return s, true
		}
	}
	return timeline.Sample{}, false
}

func countKind(tl *timeline.Timeline, k timeline.EventKind) int {
	n := 0
	for _, e := range tl.Events {
		if e.Kind == k {
			n++
		}
	}
	return n
}

// TestSmallTraces checks facts of the hand-written traces that a reader can
// verify by looking at the file.
func TestSmallTraces(t *testing.T) {
	tests := []struct {
		file      string
		format    string
		samples   int
		vantage   string
		pathIDs   bool
		addresses bool
		warnings  int
		cwnd      []int64 // reported cwnd values, in order
		check     func(t *testing.T, tl *timeline.Timeline)
	}{
		{file: "ngtcp2_small.sqlog", format: FormatNgtcp2, samples: 3, vantage: "server", warnings: 1,
			cwnd: []int64{12000, 13200, 12000},
			check: func(t *testing.T, tl *timeline.Timeline) {
				if got := tl.Samples[1]; got.TimeUS != 41000 || got.SmoothedRTTUS != 21000 || got.MinRTTUS != 21000 {
					t.Errorf("ms→µs: sample 2 = %+v", got)
				}
				if tl.Meta.Params["max_udp_payload_size"] != 1452 || tl.Meta.Params["remote.max_udp_payload_size"] != 1452 {
					t.Errorf("params %v", tl.Meta.Params)
				}
				var acked []timeline.Range
				for _, e := range tl.Events {
					if e.Kind == timeline.PacketsAcked {
						acked = e.AckRanges
					}
				}
				if len(acked) != 2 || acked[0] != (timeline.Range{First: 5, Last: 7}) || acked[1] != (timeline.Range{First: 2, Last: 2}) {
					t.Errorf("ack ranges %v", acked)
				}
				w := tl.Warnings[0]
				raw, _ := os.ReadFile("testdata/ngtcp2_small.sqlog")
				if w.Offset != int64(bytes.LastIndexByte(raw, 0x1e)+1) || w.Record != bytes.Count(raw, []byte{0x1e}) {
					t.Errorf("warning %+v: want the last record's number and offset", w)
				}
			}},
		{file: "quicgo_small.sqlog", format: FormatQuicGo, samples: 4, vantage: "server",
			cwnd: []int64{40960, 196289, 40960},
			check: func(t *testing.T, tl *timeline.Timeline) {
				s := tl.Samples[1]
				if s.TimeUS != 29500 || s.SmoothedRTTUS != 22809 || s.RTTVarUS != 11405 || s.CwndBytes != 40960 || s.Fields.Has(timeline.FieldCwnd) {
					t.Errorf("carry-forward / float ms: %+v", s)
				}
				var pc []timeline.Event
				for _, e := range tl.Events {
					if strings.HasPrefix(string(e.Kind), "path_") && e.Kind != timeline.PathEvent {
						pc = append(pc, e)
					}
				}
				if len(pc) != 4 || pc[0].Kind != timeline.PathChallengeReceived || pc[0].Data != "df82919f6c1cbc14" ||
					pc[3].Kind != timeline.PathResponseReceived || pc[3].Data != "b6dfd36a8c262894" || pc[3].TimeUS != 5068662 {
					t.Errorf("path validation events %+v", pc)
				}
				if tl.Meta.Params["mtu"] != 1366 {
					t.Errorf("mtu param %v", tl.Meta.Params)
				}
			}},
		{file: "quiche_small.sqlog", format: FormatQuiche, samples: 5, vantage: "server",
			cwnd: []int64{12000, 654900, 458430, 12000},
			check: func(t *testing.T, tl *timeline.Timeline) {
				if n := countKind(tl, timeline.PacketLost); n != 3 {
					t.Errorf("lost from cf_lost_packets.delta = %d, want 3", n)
				}
				if !containsNote(tl.Meta, "union over paths") {
					t.Errorf("notes %q lack the union-over-paths warning", tl.Meta.Notes)
				}
				if n := countKind(tl, timeline.PathChallengeSent) + countKind(tl, timeline.PathChallengeReceived); n != 2 {
					t.Errorf("path challenges %d", n)
				}
			}},
		{file: "picoquic_small.qlog", format: FormatPicoquic, samples: 5, vantage: "server", addresses: true,
			cwnd: []int64{15360, 16871, 8608, 2848},
			check: func(t *testing.T, tl *timeline.Timeline) {
				var from []string
				for _, e := range tl.Events {
					if e.Kind == timeline.DatagramReceived {
						from = append(from, e.From)
					}
				}
				if strings.Join(from, " ") != "10.0.1.1:46741 10.0.3.1:46741" {
					t.Errorf("datagram sources %q", from)
				}
				if s := tl.Samples[3]; s.TimeUS != 5110095 || s.SmoothedRTTUS != 30232 || s.MinRTTUS != 21299 {
					t.Errorf("µs sample %+v", s)
				}
				if tl.Meta.Implementation != "picoquic" || tl.Meta.Params["max_packet_size"] != 1440 {
					t.Errorf("meta %+v", tl.Meta)
				}
			}},
		{file: "msquic_small.log", format: FormatMsquic, samples: 3, vantage: "server", addresses: true,
			cwnd: []int64{12200, 1484569, 12200},
			check: func(t *testing.T, tl *timeline.Timeline) {
				s := tl.Samples[2]
				if s.TimeUS != 5532258 || s.SmoothedRTTUS != 333000 || s.MinRTTUS != 0 || !s.Fields.Has(timeline.FieldMinRTT) {
					t.Errorf("post-migration sample %+v", s)
				}
				var details []string
				for _, e := range tl.Events {
					if e.Kind == timeline.PathEvent {
						details = append(details, e.Detail+"@"+e.From)
					}
				}
				want := "new_local_ip@ new_remote_ip@10.0.1.1:50108 connected@10.0.1.1:50108 Set active (rebind=0)@ new_remote_ip@10.0.3.1:51637 server_peer_addr_changed@10.0.3.1:51637"
				if strings.Join(details, " ") != want {
					t.Errorf("path events\n got %s\nwant %s", strings.Join(details, " "), want)
				}
			}},
		{file: "quinn_small.log", format: FormatQuinn, samples: 6, vantage: "server", pathIDs: true, addresses: true,
			cwnd: []int64{12000, 15600, 12000, 13200, 9240, 9240},
			check: func(t *testing.T, tl *timeline.Timeline) {
				// The new path's controller starts at quinn's initial window.
				if s := tl.Samples[2]; s.PathID != "cc2" || s.TimeUS != 5011240 || s.Fields != timeline.FieldCwnd || s.SmoothedRTTUS != 0 {
					t.Errorf("new controller sample %+v", s)
				}
				s := tl.Samples[3]
				if s.SmoothedRTTUS != 24000 || s.LatestRTTUS != 20010 || s.BytesInFlight != 1200 {
					t.Errorf("ack sample %+v", s)
				}
				// "-" is not a measurement: the RTTs carry forward, unreported.
				if s := tl.Samples[5]; s.Fields.Has(timeline.FieldLatestRTT) || s.LatestRTTUS != 20010 || s.SmoothedRTTUS != 30000 {
					t.Errorf("sample without newest RTT %+v", s)
				}
				var sent []int64
				var peers, acked []string
				for _, e := range tl.Events {
					switch e.Kind {
					case timeline.PacketSent:
						sent = append(sent, e.PacketNumber)
					case timeline.PathEvent:
						if e.From != "" {
							peers = append(peers, e.From)
						}
					case timeline.PacketsAcked:
						acked = append(acked, fmt.Sprint(e.AckRanges))
					}
				}
				if !equalInts(sent, []int64{0, 1, 2, 4000, 4001}) {
					t.Errorf("packet_sent numbers %v", sent)
				}
				if strings.Join(peers, " ") != "198.18.1.2:51000 198.18.2.2:40000" || strings.Join(acked, " ") != "[{2 2}] [{4001 4001}]" {
					t.Errorf("peers %q, acks %q", peers, acked)
				}
				if countKind(tl, timeline.CongestionEvent) != 1 || tl.Meta.Implementation != "quinn" {
					t.Errorf("congestion events %d, meta %+v", countKind(tl, timeline.CongestionEvent), tl.Meta)
				}
			}},
		{file: "timeline_small.csv", format: FormatCSV, samples: 4, vantage: "server",
			cwnd: []int64{12200, 40960, 12200},
			check: func(t *testing.T, tl *timeline.Timeline) {
				if s := tl.Samples[1]; s.TimeUS != 6862 {
					t.Errorf("float µs rounding: %+v", s)
				}
				if s := tl.Samples[3]; s.MinRTTUS != 0 || s.SmoothedRTTUS != 333000 {
					t.Errorf("sentinel: %+v", s)
				}
			}},
		{file: "quiche_live.csv", format: FormatCSV, samples: 6, pathIDs: true, addresses: true,
			cwnd: []int64{12000, 24000, 12000, 654900, 12000},
			check: func(t *testing.T, tl *timeline.Timeline) {
				last := tl.Samples[5]
				if last.PathID != "0" || last.CwndBytes != 654900 || last.Fields != timeline.FieldSmoothedRTT {
					t.Errorf("per-path carry-forward: %+v", last)
				}
				var ev []string
				for _, e := range tl.Events {
					ev = append(ev, e.Detail+":"+e.PathID+"@"+e.From)
				}
				want := "path_seen:0@10.0.1.1:50000 path_active:0@10.0.1.1:50000 path_seen:1@10.0.3.1:50000 path_active:1@10.0.3.1:50000"
				if strings.Join(ev, " ") != want {
					t.Errorf("events\n got %s\nwant %s", strings.Join(ev, " "), want)
				}
			}},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			raw, err := os.ReadFile(filepath.Join("testdata", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			if f, err := Detect(raw); err != nil || f != tc.format {
				t.Errorf("Detect = %q, %v; want %q", f, err, tc.format)
			}
			tl, err := parseBytes(t, tc.file, raw, "")
			if err != nil {
				t.Fatal(err)
			}
			if len(tl.Samples) != tc.samples {
				t.Errorf("samples = %d, want %d", len(tl.Samples), tc.samples)
			}
			if tl.Meta.Format != tc.format || tl.Meta.Vantage != tc.vantage || tl.Meta.PathIDs != tc.pathIDs || tl.Meta.LogsAddresses != tc.addresses {
				t.Errorf("meta = %+v", tl.Meta)
			}
			if len(tl.Warnings) != tc.warnings {
				t.Errorf("warnings = %+v, want %d", tl.Warnings, tc.warnings)
			}
			var cw []int64
			for _, s := range tl.Samples {
				if s.Fields.Has(timeline.FieldCwnd) {
					cw = append(cw, s.CwndBytes)
				}
			}
			if !equalInts(cw, tc.cwnd) {
				t.Errorf("reported cwnd = %v, want %v", cw, tc.cwnd)
			}
			if tc.check != nil && len(tl.Samples) == tc.samples {
				tc.check(t, tl)
			}
			// The same content gzip-compressed parses identically.
			var z bytes.Buffer
			w := gzip.NewWriter(&z)
			w.Write(raw)
			w.Close()
			tz, err := parseBytes(t, tc.file+".gz", z.Bytes(), "")
			if err != nil {
				t.Fatalf("gzip: %v", err)
			}
			a, _ := json.Marshal(tl)
			b, _ := json.Marshal(tz)
			if !bytes.Equal(a, b) {
				t.Error("gzip-compressed input parses differently")
			}
		})
	}
}

func equalInts(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func containsNote(m timeline.Meta, s string) bool {
	for _, n := range m.Notes {
		if strings.Contains(n, s) {
			return true
		}
	}
	return false
}
