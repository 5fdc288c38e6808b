package validator

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

var updateLiveGoldens = flag.Bool("update-live-traces", false, "rewrite testdata/livetraces/*.golden")

// factsSummary writes what a reader found, one fact a line, for a golden.
func factsSummary(f *traceFacts) string {
	var b strings.Builder
	fmt.Fprintf(&b, "format %s vantage %s addrs %v pathids %v\n", f.Format, f.Vantage, f.HasAddrs, f.PathIDs)
	for _, s := range f.Samples {
		fmt.Fprintf(&b, "sample t=%d path=%q cwnd=%d srtt=%d latest=%d min=%d\n", s.T, s.Path, s.Cwnd, s.SRTT, s.Latest, s.MinRTT)
	}
	for _, e := range f.Events {
		fmt.Fprintf(&b, "event t=%d %s %s\n", e.T, e.Kind, e.Addr)
	}
	pns := make([]int64, 0, len(f.Sent))
	for pn := range f.Sent {
		pns = append(pns, pn)
	}
	sort.Slice(pns, func(i, j int) bool { return pns[i] < pns[j] })
	for _, pn := range pns {
		fmt.Fprintf(&b, "sent %d at %d\n", pn, f.Sent[pn])
	}
	for _, a := range f.Acks {
		fmt.Fprintf(&b, "ack t=%d largest=%d\n", a.T, a.Largest)
	}
	if old, nw, ok := addrChange(f); ok {
		fmt.Fprintf(&b, "address change %s -> %s\n", old, nw)
	}
	fmt.Fprintf(&b, "instants %v path-validation %v\n", instants(f), pathValidationRTTs(f))
	return b.String()
}

// The four live formats of the C and Rust harnesses are read by their own
// readers (not as JSON-SEQ qlog, msquic's log or a CSV, which their first
// bytes would otherwise select), each fact checked against a golden.
func TestLiveTraceFormats(t *testing.T) {
	for _, c := range []struct{ file, format string }{
		{"quicly_small.jsonl", "quicly-log"},
		{"lsquic_small.log", "lsquic-log"},
		{"xquic_small.log", "xquic-log"},
		{"quinn_small.log", "quinn-cc-log"},
	} {
		t.Run(c.file, func(t *testing.T) {
			p := filepath.Join("testdata", "livetraces", c.file)
			f, err := readTrace(p)
			if err != nil {
				t.Fatal(err)
			}
			if f.Format != c.format {
				t.Fatalf("format %q, want %q", f.Format, c.format)
			}
			got := factsSummary(f)
			golden := p + ".golden"
			if *updateLiveGoldens {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if got != string(want) {
				t.Errorf("facts differ from %s:\n%s", golden, lineDiff(string(want), got))
			}
		})
	}
}

// lineDiff lists the lines only one side has.
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	for i := 0; i < max(len(w), len(g)); i++ {
		var a, c string
		if i < len(w) {
			a = w[i]
		}
		if i < len(g) {
			c = g[i]
		}
		if a != c {
			fmt.Fprintf(&b, "line %d: want %q\n         got  %q\n", i+1, a, c)
		}
	}
	return b.String()
}

// Bad input is one error naming the line.
func TestLiveTraceFormatErrors(t *testing.T) {
	for _, c := range []struct{ name, data, want string }{
		{"quicly non-JSON line", "{\"module\":\"quicly\",\"type\":\"accept\",\"time\":1}\nnot json\n{\"module\":\"quicly\",\"type\":\"accept\",\"time\":2}\n", "line 2 is not JSON"},
		{"quicly rtt without cwnd", "{\"module\":\"qlyharness\",\"type\":\"rtt\",\"time_us\":1,\"min_rtt\":1,\"smoothed_rtt\":1,\"rttvar\":1,\"latest_rtt\":1}\n", "line 1: rtt without a number cwnd"},
		{"lsquic bad t_us", "[lsq_server] t_us=x STATS cwnd=1\n", "line 1: bad t_us"},
		{"lsquic bad ACK", "[lsq_server] t_us=1 LOG [DEBUG] [QUIC:AB] event: RX ACK frame: [3-5]\n", "line 1: ACK range \"[3-5]\" is not [high-low]"},
		{"xquic bad cwnd", "[xqc_server] t_us=1 LOG [debug] |scid:0a|f|cwnd:-4|\n", "line 1: xquic field cwnd:\"-4\""},
		{"quinn second header", "# quinn-cc-log 1 vantage=server\n# quinn-cc-log 1 vantage=client\n", "line 2: second header line"},
		{"quinn unknown verb", "# quinn-cc-log 1 vantage=server\n7 frobbed cc=1\n", "line 2: unknown record \"frobbed\""},
		{"quinn bad pn range", "# quinn-cc-log 1 vantage=server\n7 sent cc=1 pn=9-3 bytes=1\n", "line 2: sent pn=\"9-3\""},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := traceFrom("x", []byte(c.data), []byte(c.data))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one containing %q", err, c.want)
			}
		})
	}
}
