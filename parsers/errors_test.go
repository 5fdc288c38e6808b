package parsers

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/migaudit/migaudit/parsers/timeline"
)

// TestMalformed feeds every file in testdata/errors to Parse and checks the
// error (or warning) names the file, record and byte offset. Offsets are
// computed from the file by locating the offending record's text.
func TestMalformed(t *testing.T) {
	// at returns "record N at byte B" for the record starting with marker
	// (its first occurrence), counting records as lines.
	at := func(raw []byte, marker string) string {
		i := bytes.Index(raw, []byte(marker))
		if i < 0 {
			t.Fatalf("marker %q not in file", marker)
		}
		return "record " + strconv.Itoa(bytes.Count(raw[:i], []byte("\n"))+1) + " at byte " + strconv.Itoa(i)
	}
	tests := []struct {
		file   string
		format string
		// want are substrings of the error; a func computes position text.
		want    []string
		wantPos func(raw []byte) string
		// warn: no error, one warning at wantPos.
		warn    bool
		samples int
	}{
		{file: "bad_json_mid.sqlog", want: []string{"invalid JSON"},
			wantPos: func(raw []byte) string { return at(raw, `{"time":2,`) }},
		{file: "cut_record_mid.sqlog", want: []string{"invalid JSON"},
			wantPos: func(raw []byte) string { return at(raw, `{"time":2,`) }},
		{file: "truncated_final.sqlog", warn: true, samples: 1,
			wantPos: func(raw []byte) string { return at(raw, `{"time":2,`) }},
		{file: "missing_time.sqlog", want: []string{`without "time"`},
			wantPos: func(raw []byte) string { return at(raw, `{"name"`) }},
		{file: "time_not_number.sqlog", want: []string{`"time" is not a number`},
			wantPos: func(raw []byte) string { return at(raw, `{"time":"soon"`) }},
		{file: "cwnd_not_number.sqlog", want: []string{`"congestion_window" is not a number`},
			wantPos: func(raw []byte) string { return at(raw, `{"time":1,`) }},
		{file: "not_object.sqlog", want: []string{"not a JSON object"},
			wantPos: func(raw []byte) string { return at(raw, `[1,2,3]`) }},
		{file: "bad_ack_range.sqlog", want: []string{"ack frame: range 5 is not an array"},
			wantPos: func(raw []byte) string { return at(raw, `{"time":1,`) }},
		{file: "truncated.sqlog.gz", want: []string{"truncated gzip stream"}},
		{file: "unknown.txt", want: []string{"unrecognised trace format"}},
		{file: "empty.sqlog", want: []string{"empty trace"}},
		{file: "empty.sqlog", format: FormatCSV, want: []string{"empty CSV"}},
		{file: "missing_time_column.csv", format: FormatCSV, want: []string{"no time_us column"}},
		{file: "no_metric_column.csv", want: []string{"no metric column"}},
		{file: "bad_number.csv", want: []string{`column cwnd: "twelve" is not a number`},
			wantPos: func(raw []byte) string { return at(raw, "2,twelve") }},
		{file: "truncated_row.csv", warn: true, samples: 2,
			wantPos: func(raw []byte) string { return at(raw, "3,14000") }},
		{file: "short_row_mid.csv", want: []string{"wrong number of fields"},
			wantPos: func(raw []byte) string { return at(raw, "2,13000") }},
		{file: "picoquic_truncated.qlog", warn: true, samples: 2,
			wantPos: func(raw []byte) string {
				return "record 6 at byte " + strconv.Itoa(bytes.Index(raw, []byte("[4983057, \"transport\", \"packet_received\"")))
			}},
		{file: "picoquic_syntax.qlog", want: []string{"record 3 at byte", "invalid character"}},
		{file: "picoquic_no_traces.qlog", format: FormatPicoquic, want: []string{`no "traces"`}},
		{file: "msquic_bad_stats.log", want: []string{`STATS cwnd="148x569" is not an integer`},
			wantPos: func(raw []byte) string { return at(raw, "[mq_server] t_us=5527022") }},
		{file: "quicly_missing_pn.jsonl", want: []string{"missing packet_sent.pn"},
			wantPos: func(raw []byte) string { return at(raw, `{"module":"quicly","type":"packet_sent"`) }},
		{file: "quicly_bad_epoch.jsonl", want: []string{"packet_lost.packet_type 9 is not an epoch"},
			wantPos: func(raw []byte) string { return at(raw, `{"module":"quicly","type":"packet_lost"`) }},
		{file: "quicly_bad_json_mid.jsonl", want: []string{"not a JSON object"},
			wantPos: func(raw []byte) string { return at(raw, `{"module":"quicly","type":"cc_ack_received","time":1001`) }},
		{file: "quicly_truncated.jsonl", warn: true, samples: 2,
			wantPos: func(raw []byte) string {
				return at(raw, `{"module":"quicly","type":"cc_ack_received","tid":1,"time":1003`)
			}},
		{file: "quicly_rtt_not_number.jsonl", want: []string{`rtt.min_rtt is "20ms", not a number`},
			wantPos: func(raw []byte) string { return at(raw, `{"module":"qlyharness"`) }},
		{file: "quicly_no_records.jsonl", format: FormatQuicly, want: []string{"no quicly event log records"}},
		{file: "quinn_bad_cwnd.log", want: []string{`ack cwnd="15x600" is not an integer`},
			wantPos: func(raw []byte) string { return at(raw, "25433 ack") }},
		{file: "quinn_no_header.log", format: FormatQuinn, want: []string{"record 1 at byte 0", `before the "# quinn-cc-log" header`}},
		{file: "quinn_bad_pn.log", want: []string{`sent pn="9-2" is not a packet number range`},
			wantPos: func(raw []byte) string { return at(raw, "5100 sent") }},
		{file: "unknown.txt", format: "nosuch-log", want: []string{`unknown format "nosuch-log"`}},
		{file: "lsquic_bad_stats.log", want: []string{`STATS cwnd="12x4" is not a non-negative integer`},
			wantPos: func(raw []byte) string { return at(raw, "[lsq_server] t_us=20 ") }},
		{file: "xquic_bad_cwnd.log", want: []string{`xquic log field cwnd:"4x" is not a non-negative integer`},
			wantPos: func(raw []byte) string { return at(raw, "[xqc_server] t_us=20 ") }},
	}
	for _, tc := range tests {
		t.Run(tc.file+"/"+tc.format, func(t *testing.T) {
			path := filepath.Join("testdata", "errors", tc.file)
			raw, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			var c timeline.Collector
			err = Parse(tc.file, bytes.NewReader(raw), Options{Format: tc.format}, &c)
			if tc.warn {
				if err != nil {
					t.Fatalf("want a warning, got error %v", err)
				}
				if len(c.T.Warnings) != 1 {
					t.Fatalf("warnings %+v, want 1", c.T.Warnings)
				}
				w := c.T.Warnings[0]
				if tc.wantPos != nil {
					if got := "record " + strconv.Itoa(w.Record) + " at byte " + strconv.FormatInt(w.Offset, 10); got != tc.wantPos(raw) {
						t.Errorf("warning at %q, want %q (%s)", got, tc.wantPos(raw), w.Message)
					}
				}
				if len(c.T.Samples) != tc.samples {
					t.Errorf("samples %d before the truncation, want %d", len(c.T.Samples), tc.samples)
				}
				return
			}
			if err == nil {
				t.Fatalf("no error; timeline %+v", c.T)
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, "parse "+tc.file+": ") {
				t.Errorf("error %q does not start with the file name", msg)
			}
			if strings.Contains(msg, "\n") {
				t.Errorf("error %q is not one line", msg)
			}
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q lacks %q", msg, w)
				}
			}
			if tc.wantPos != nil {
				if pos := tc.wantPos(raw); !strings.Contains(msg, pos) {
					t.Errorf("error %q lacks position %q", msg, pos)
				}
				var pe *PositionError
				if !errors.As(err, &pe) {
					t.Errorf("error %T is not a *PositionError", err)
				}
			}
		})
	}
}

// TestDetect checks detection on the hand-written traces, on a gzip peek,
// and that --format overrides detection.
func TestDetect(t *testing.T) {
	tests := []struct {
		in   string
		want string
		err  string
	}{
		{in: "\x1e{\"qlog_version\":\"0.3\",\"trace\":{\"vantage_point\":{\"name\":\"ngtcp2\"}}}\n", want: FormatNgtcp2},
		{in: "\x1e{\"qlog_version\":\"0.3\",\"trace\":{}}\n", want: FormatNgtcp2},
		{in: "\x1e{\"title\":\"quic-go qlog\"}\n", want: FormatQuicGo},
		{in: "\x1e{\"trace\":{\"event_schemas\":[\"urn:ietf:params:qlog:events:quic-12\"]}}\n\x1e{\"time\":0,\"name\":\"quic:packet_sent\"}\n", want: FormatQuiche},
		{in: "\x1e{\"trace\":{\"event_schemas\":[\"urn:ietf:params:qlog:events:quic-12\"]}}\n\x1e{\"time\":0,\"name\":\"transport:packet_sent\"}\n", want: FormatQuicGo},
		{in: "{\"time\":0,\"name\":\"quic:packet_sent\"}\n", want: FormatQuiche},
		{in: "{ \"qlog_version\": \"draft-00\", \"traces\": [\n", want: FormatPicoquic},
		{in: "{\"qlog_version\":\"draft-02\",\"title\":\"quic-go\",\"traces\":[{\"events\":[]}]}\n", want: FormatPicoquic},
		{in: "[mq_client] t_us=5 STATS cwnd=1\n", want: FormatMsquic},
		{in: "[conn][0x1] New Remote IP: 1.2.3.4:5\n", want: FormatMsquic},
		{in: "[lsq_server] t_us=5 listening unix_us=1\n", want: FormatLsquic},
		{in: "[xqc_client] t_us=5 start unix_us=1\n", want: FormatXquic},
		{in: "time_us,cwnd\n1,2\n", want: FormatCSV},
		{in: "arm,rep,time_us,cwnd\n", want: FormatCSV},
		{in: "  \n\x1e ", err: "empty trace"},
		{in: "{\"a\":1}\n", err: "unrecognised producer"},
		{in: "[S][TX] x\n", err: "unrecognised trace"},
		{in: "time,cwnd\n", err: "unrecognised trace format"},
	}
	for _, tc := range tests {
		got, err := Detect([]byte(tc.in))
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("Detect(%q) = %q, %v; want error %q", tc.in, got, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("Detect(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
	// A gzip peek is decompressed; a cut-off one as far as it goes.
	raw, err := os.ReadFile("testdata/errors/truncated.sqlog.gz")
	if err != nil {
		t.Fatal(err)
	}
	if got, err := Detect(raw); err != nil || got != FormatQuicGo {
		t.Errorf("Detect(truncated gzip) = %q, %v", got, err)
	}
	// --format overrides: the quiche trace read as ngtcp2's dialect.
	var c timeline.Collector
	qr, _ := os.ReadFile("testdata/quiche_small.sqlog")
	if err := Parse("q", bytes.NewReader(qr), Options{Format: FormatNgtcp2}, &c); err != nil {
		t.Fatal(err)
	}
	if c.T.Meta.Format != FormatNgtcp2 {
		t.Errorf("override ignored: format %q", c.T.Meta.Format)
	}
	if len(Formats()) != len(parsersByFormat) {
		t.Errorf("Formats() %v and the parser table disagree", Formats())
	}
}

// TestTruncatedGzip cuts every hand-written trace's gzip stream short: each
// parser must report the cut-off stream, naming the file, whatever partial
// record the cut leaves.
func TestTruncatedGzip(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.*")
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var z bytes.Buffer
		w := gzip.NewWriter(&z)
		w.Write(raw)
		w.Close()
		for _, frac := range []int{30, 60, 90} {
			name := filepath.Base(f) + ".gz"
			cut := z.Bytes()[:z.Len()*frac/100]
			var c timeline.Collector
			err := Parse(name, bytes.NewReader(cut), Options{}, &c)
			if err == nil || !strings.HasPrefix(err.Error(), "parse "+name+": truncated gzip stream") {
				t.Errorf("%s cut at %d%%: error %v", name, frac, err)
			}
		}
	}
}

// TestJSONSeqTimeFormats checks the qlog header's time settings: relative
// (default), delta (each time is an increment) and absolute (minus the
// numeric reference_time), in ms unless configuration.time_units says us.
func TestJSONSeqTimeFormats(t *testing.T) {
	ev := func(tm string, cwnd int) string {
		return "\x1e{\"time\":" + tm + ",\"name\":\"recovery:metrics_updated\",\"data\":{\"congestion_window\":" + strconv.Itoa(cwnd) + "}}\n"
	}
	tests := []struct {
		header string
		times  []string
		want   []int64
	}{
		{`{"qlog_version":"0.3","trace":{"vantage_point":{"name":"ngtcp2"}}}`, []string{"1", "2.5"}, []int64{1000, 2500}},
		{`{"qlog_version":"0.3","trace":{"vantage_point":{"name":"ngtcp2"},"common_fields":{"time_format":"delta"}}}`, []string{"1", "2.5", "0.25"}, []int64{1000, 3500, 3750}},
		{`{"qlog_version":"0.3","trace":{"vantage_point":{"name":"ngtcp2"},"common_fields":{"time_format":"absolute","reference_time":1000}}}`, []string{"1001", "1010"}, []int64{1000, 10000}},
		{`{"qlog_version":"0.3","trace":{"vantage_point":{"name":"ngtcp2"},"configuration":{"time_units":"us"}}}`, []string{"17", "25"}, []int64{17, 25}},
	}
	for _, tc := range tests {
		in := "\x1e" + tc.header + "\n"
		for i, tm := range tc.times {
			in += ev(tm, 1000+i)
		}
		tl, err := parseBytes(t, "t.sqlog", []byte(in), "")
		if err != nil {
			t.Fatal(err)
		}
		var got []int64
		for _, s := range tl.Samples {
			got = append(got, s.TimeUS)
		}
		if !equalInts(got, tc.want) {
			t.Errorf("%s: times %v, want %v", tc.header, got, tc.want)
		}
	}
}

// TestLineLimit checks the guard that keeps a CSV row from being the whole file.
func TestLineLimit(t *testing.T) {
	for _, tc := range []struct {
		in  string
		max int
		ok  bool
	}{
		{"ab\ncd\n", 2, true},
		{"abc\nd\n", 2, false},
		{"a\nbcdef", 4, false},
		{strings.Repeat("abcd\n", 1000), 4, true},
	} {
		l := &lineLimit{r: iotest.OneByteReader(strings.NewReader(tc.in)), max: tc.max}
		_, err := io.ReadAll(l)
		if (err == nil) != tc.ok {
			t.Errorf("%q max %d (one byte at a time): err %v", tc.in, tc.max, err)
		}
		l = &lineLimit{r: strings.NewReader(tc.in), max: tc.max}
		_, err = io.ReadAll(l)
		if (err == nil) != tc.ok {
			t.Errorf("%q max %d: err %v", tc.in, tc.max, err)
		}
	}
}
