package parsers

import (
	"bytes"
	"math"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/migaudit/migaudit/parsers/timeline"
)

// point is one (time, cwnd) observation.
type point struct{ t, cwnd int64 }

// rawCwnd extracts every reported congestion window from the raw text with
// a regular expression per line — deliberately not the parsers' method —
// so the parsers can be checked against it.
func rawCwnd(t *testing.T, raw []byte, format string) []point {
	t.Helper()
	var re *regexp.Regexp
	scale := 1000.0 // ms
	switch format {
	case FormatNgtcp2, FormatQuicGo:
		re = regexp.MustCompile(`"time":([0-9.]+),"name":"recovery:metrics_updated".*"congestion_window":(\d+)`)
	case FormatQuiche:
		re = regexp.MustCompile(`"time":([0-9.]+),"name":"quic:recovery_metrics_updated".*"congestion_window":(\d+)`)
	case FormatPicoquic:
		re = regexp.MustCompile(`^\[(\d+), "recovery", "metrics_updated", \{.*"cwnd": (\d+)`)
		scale = 1
	case FormatMsquic:
		re = regexp.MustCompile(`t_us=(\d+) STATS cwnd=(\d+)`)
		scale = 1
	}
	var out []point
	for _, line := range bytes.Split(raw, []byte("\n")) {
		m := re.FindSubmatch(line)
		if m == nil {
			continue
		}
		tf, err := strconv.ParseFloat(string(m[1]), 64)
		if err != nil {
			t.Fatal(err)
		}
		c, _ := strconv.ParseInt(string(m[2]), 10, 64)
		out = append(out, point{int64(math.Round(tf * scale)), c})
	}
	return out
}

func parsedCwnd(tl *timeline.Timeline) []point {
	var out []point
	for _, s := range tl.Samples {
		if s.Fields.Has(timeline.FieldCwnd) {
			out = append(out, point{s.TimeUS, s.CwndBytes})
		}
	}
	return out
}

// countLines counts lines containing every one of subs and at least one of any.
func countLines(raw []byte, subs []string, any []string) int {
	n := 0
next:
	for _, line := range bytes.Split(raw, []byte("\n")) {
		for _, s := range subs {
			if !bytes.Contains(line, []byte(s)) {
				continue next
			}
		}
		if len(any) == 0 {
			n++
			continue
		}
		for _, s := range any {
			if bytes.Contains(line, []byte(s)) {
				n++
				continue next
			}
		}
	}
	return n
}

// firstAfter returns the first point with cwnd v at or after time t.
func firstAfter(ps []point, v, t int64) (point, bool) {
	for _, p := range ps {
		if p.cwnd == v && p.t >= t {
			return p, true
		}
	}
	return point{}, false
}

// TestReferenceTraces parses the study's five reference traces and checks
// them against facts extracted independently from the raw text, and against
// the study's published figures.
func TestReferenceTraces(t *testing.T) {
	metricKeys := []string{`"congestion_window"`, `"bytes_in_flight"`, `"smoothed_rtt"`, `"min_rtt"`, `"latest_rtt"`, `"rtt_variance"`}
	tests := []struct {
		file      string
		format    string
		metrics   []string // a line with all of these and one metric key is one sample
		metricKey []string
		challenge string // how a PATH_CHALLENGE frame is written
		response  string
		sentName  string
		addresses bool
		warnings  int
		// figures: cwnd values the study reports, each required at or after a time
		figures []point
		check   func(t *testing.T, tl *timeline.Timeline, raw []byte)
	}{
		{file: "ngtcp2_server.sqlog.gz", format: FormatNgtcp2, metrics: []string{`"recovery:metrics_updated"`}, metricKey: metricKeys,
			challenge: `"frame_type":"path_challenge"`, response: `"frame_type":"path_response"`, sentName: `"transport:packet_sent"`,
			warnings: 1,
			figures:  []point{{0, 532322}, {4_000_000, 12000}},
			check: func(t *testing.T, tl *timeline.Timeline, raw []byte) {
				w := tl.Warnings[0]
				if w.Offset != int64(bytes.LastIndexByte(raw, 0x1e)+1) || w.Record != bytes.Count(raw, []byte{0x1e}) {
					t.Errorf("truncation warning %+v; last record starts at %d and is record %d", w, bytes.LastIndexByte(raw, 0x1e)+1, bytes.Count(raw, []byte{0x1e}))
				}
			}},
		{file: "quicgo_server.sqlog.gz", format: FormatQuicGo, metrics: []string{`"recovery:metrics_updated"`}, metricKey: metricKeys,
			challenge: `"frame_type":"path_challenge"`, response: `"frame_type":"path_response"`, sentName: `"transport:packet_sent"`,
			figures: []point{{0, 280414}, {0, 196289}, {4_000_000, 40960}},
			check: func(t *testing.T, tl *timeline.Timeline, raw []byte) {
				// The study: the reset to 40,960 B follows the 0.7× backoff by 0.44–1.96 ms.
				ps := parsedCwnd(tl)
				b, _ := firstAfter(ps, 196289, 0)
				r, _ := firstAfter(ps, 40960, b.t)
				if d := r.t - b.t; d < 400 || d > 2000 {
					t.Errorf("backoff at %d µs, reset at %d µs: %d µs apart, the study says 0.44–1.96 ms", b.t, r.t, d)
				}
				peak, _ := firstAfter(ps, 280414, 0)
				if peak.t > b.t || int64(math.Floor(0.7*float64(peak.cwnd))) != b.cwnd {
					t.Errorf("backoff %+v is not ⌊0.7 × peak %+v⌋", b, peak)
				}
			}},
		{file: "quiche_server.sqlog.gz", format: FormatQuiche, metrics: []string{`"quic:recovery_metrics_updated"`}, metricKey: metricKeys,
			challenge: `"frame_type":"path_challenge"`, response: `"frame_type":"path_response"`, sentName: `"quic:packet_sent"`,
			figures: []point{{0, 654900}, {4_000_000, 12000}},
			check: func(t *testing.T, tl *timeline.Timeline, raw []byte) {
				if !containsNote(tl.Meta, "union over paths") {
					t.Errorf("quiche notes %q", tl.Meta.Notes)
				}
				var want int64
				re := regexp.MustCompile(`"cf_lost_packets":\{"total":\d+,"delta":(\d+)\}`)
				for _, m := range re.FindAllSubmatch(raw, -1) {
					d, _ := strconv.ParseInt(string(m[1]), 10, 64)
					want += d
				}
				if got := countKind(tl, timeline.PacketLost); int64(got) != want || want == 0 {
					t.Errorf("lost packets %d, cf_lost_packets deltas sum to %d", got, want)
				}
			}},
		{file: "picoquic_server.qlog.gz", format: FormatPicoquic, metrics: []string{`"recovery", "metrics_updated"`},
			metricKey: []string{`"cwnd"`, `"bytes_in_flight"`, `"smoothed_rtt"`, `"min_rtt"`, `"latest_rtt"`},
			challenge: `"frame_type": "path_challenge"`, response: `"frame_type": "path_response"`, sentName: `"transport", "packet_sent"`,
			addresses: true,
			// picoquic: no reset; the window falls below its initial value to the 2,848 B floor.
			figures: []point{{4_900_000, 2848}},
			check: func(t *testing.T, tl *timeline.Timeline, raw []byte) {
				n := countLines(raw, []string{`"datagram_received"`, `"addr_from"`}, nil)
				got := 0
				for _, e := range tl.Events {
					if e.Kind == timeline.DatagramReceived && e.From != "" {
						got++
					}
				}
				if got != n || n == 0 {
					t.Errorf("datagrams with a source address: %d, raw lines %d", got, n)
				}
			}},
		{file: "msquic_server.log.gz", format: FormatMsquic, metrics: []string{"STATS cwnd="}, metricKey: []string{"cwnd="},
			addresses: true,
			figures:   []point{{5_500_000, 12200}},
			check: func(t *testing.T, tl *timeline.Timeline, raw []byte) {
				// After the peer address change every sample reads 333 ms smoothed RTT.
				var at int64 = -1
				for _, e := range tl.Events {
					if e.Kind == timeline.PathEvent && e.Detail == "server_peer_addr_changed" {
						at = e.TimeUS
						if e.From != "10.0.3.1:51637" {
							t.Errorf("new peer %q", e.From)
						}
					}
				}
				if at < 0 {
					t.Fatal("no peer address change event")
				}
				n := 0
				for _, s := range tl.Samples {
					if s.TimeUS > at {
						n++
						if s.SmoothedRTTUS != 333000 || s.MinRTTUS != 0 {
							t.Fatalf("sample after migration %+v", s)
						}
					}
				}
				if n < 3000 {
					t.Errorf("only %d samples after migration", n)
				}
			}},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			path := shared(t, "traces", tc.file)
			raw := gunzipFile(t, path)
			if f, err := Detect(raw[:min(len(raw), peekSize)]); err != nil || f != tc.format {
				t.Fatalf("Detect = %q, %v; want %q", f, err, tc.format)
			}
			tl, err := ParseFile(path, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if tl.Meta.Format != tc.format || tl.Meta.Vantage != "server" || tl.Meta.PathIDs || tl.Meta.LogsAddresses != tc.addresses {
				t.Errorf("meta %+v", tl.Meta)
			}
			if len(tl.Warnings) != tc.warnings {
				t.Fatalf("warnings %+v, want %d", tl.Warnings, tc.warnings)
			}
			if want := countLines(raw, tc.metrics, tc.metricKey); len(tl.Samples) != want {
				t.Errorf("samples %d, raw metrics lines with a metric %d", len(tl.Samples), want)
			}
			want, got := rawCwnd(t, raw, tc.format), parsedCwnd(tl)
			if len(want) == 0 || len(got) != len(want) {
				t.Fatalf("cwnd reports: parsed %d, raw %d", len(got), len(want))
			}
			for i := range want {
				if got[i] != want[i] {
					t.Fatalf("cwnd report %d: parsed %+v, raw %+v", i, got[i], want[i])
				}
			}
			for _, f := range tc.figures {
				if _, ok := firstAfter(got, f.cwnd, f.t); !ok {
					t.Errorf("study figure cwnd %d B at or after %d µs not found", f.cwnd, f.t)
				}
			}
			if tc.challenge != "" {
				counts := map[timeline.EventKind]int{}
				for _, e := range tl.Events {
					counts[e.Kind]++
				}
				cs := strings.Count(linesWith(raw, tc.sentName), tc.challenge)
				ca := strings.Count(string(raw), tc.challenge)
				rs := strings.Count(linesWith(raw, tc.sentName), tc.response)
				ra := strings.Count(string(raw), tc.response)
				if counts[timeline.PathChallengeSent] != cs || counts[timeline.PathChallengeReceived] != ca-cs ||
					counts[timeline.PathResponseSent] != rs || counts[timeline.PathResponseReceived] != ra-rs || ca == 0 {
					t.Errorf("path validation: parsed %v; raw challenges sent %d of %d, responses sent %d of %d", counts, cs, ca, rs, ra)
				}
			}
			if tc.check != nil {
				tc.check(t, tl, raw)
			}
		})
	}
}

// linesWith joins the lines (or, for picoquic, event starts through the
// next event) that contain name.
func linesWith(raw []byte, name string) string {
	var b strings.Builder
	in := false
	for _, line := range bytes.Split(raw, []byte("\n")) {
		if bytes.HasPrefix(line, []byte("[")) || bytes.HasPrefix(line, []byte("\x1e")) || bytes.HasPrefix(line, []byte("{")) {
			in = bytes.Contains(line, []byte(name))
		}
		if in {
			b.Write(line)
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// TestReferenceTimelines parses the study's polled-statistics CSVs.
func TestReferenceTimelines(t *testing.T) {
	dir := shared(t, "timelines")
	files, _ := filepath.Glob(filepath.Join(dir, "*", "*.csv*"))
	if len(files) == 0 {
		t.Skip("no timeline CSVs under " + dir)
	}
	for _, f := range files {
		t.Run(filepath.Base(filepath.Dir(f))+"/"+filepath.Base(f), func(t *testing.T) {
			raw := gunzipFile(t, f)
			lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
			header := strings.Split(lines[0], ",")
			idx := map[string]int{}
			for i, h := range header {
				idx[h] = i
			}
			var want []point
			rows := 0
			for _, l := range lines[1:] {
				c := strings.Split(l, ",")
				any := false
				for _, k := range []string{"cwnd", "bytes_in_flight", "smoothed_rtt", "min_rtt", "latest_rtt"} {
					if c[idx[k]] != "" {
						any = true
					}
				}
				if any {
					rows++
				}
				if c[idx["cwnd"]] != "" {
					tf, _ := strconv.ParseFloat(c[idx["time_us"]], 64)
					cw, _ := strconv.ParseInt(c[idx["cwnd"]], 10, 64)
					want = append(want, point{int64(math.Round(tf)), cw})
				}
			}
			tl, err := ParseFile(f, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if tl.Meta.Format != FormatCSV || len(tl.Samples) != rows {
				t.Errorf("format %s, samples %d, rows with a metric %d", tl.Meta.Format, len(tl.Samples), rows)
			}
			got := parsedCwnd(tl)
			if len(got) != len(want) {
				t.Fatalf("cwnd reports parsed %d, raw %d", len(got), len(want))
			}
			for i := range want {
				if got[i] != want[i] {
					t.Fatalf("cwnd report %d: parsed %+v raw %+v", i, got[i], want[i])
				}
			}
			if r, ok := idx["role"]; ok {
				role := strings.Split(lines[1], ",")[r]
				if tl.Meta.Vantage != role {
					t.Errorf("vantage %q, role column %q", tl.Meta.Vantage, role)
				}
			}
			if strings.Contains(f, "msquic") && strings.Contains(f, "server") {
				// msquic server: 12,200 B after migration with smoothed RTT 333 ms.
				ok := false
				for _, s := range tl.Samples {
					if s.TimeUS > 5_000_000 && s.CwndBytes == 12200 && s.SmoothedRTTUS == 333000 {
						ok = true
						break
					}
				}
				if !ok {
					t.Error("no post-migration sample at 12,200 B with 333 ms smoothed RTT")
				}
			}
		})
	}
}
