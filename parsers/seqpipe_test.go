package parsers

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/migaudit/migaudit/parsers/timeline"
)

// TestSeqPipeline runs JSON-SEQ traces through the two-stage reader where
// its batches break: records around batch boundaries, a record longer than
// a batch, a tape that outgrows a batch's nodes, and a mapper that stops at
// an error with most of a gzip trace unread. The timeline and error must
// be the oracle's, and a stopped reader must not leave goroutines behind.
func TestSeqPipeline(t *testing.T) {
	header := `{"qlog_format":"JSON-SEQ","qlog_version":"0.3","trace":{"vantage_point":{"name":"ngtcp2","type":"server"}}}`
	metrics := func(i int) string {
		return fmt.Sprintf(`{"time":%d,"name":"recovery:metrics_updated","data":{"smoothed_rtt":%d,"congestion_window":%d}}`, i, 20+i%7, 12000+i)
	}
	// A packet whose frames array holds n acks: n*4+12 tape nodes.
	wide := func(i, n int) string {
		var fr []string
		for k := 0; k < n; k++ {
			fr = append(fr, fmt.Sprintf(`{"frame_type":"ack","acked_ranges":[[%d,%d]]}`, k, k+1))
		}
		return fmt.Sprintf(`{"time":%d,"name":"transport:packet_received","data":{"header":{"packet_type":"1RTT","packet_number":%d},"frames":[%s]}}`, i, i, strings.Join(fr, ","))
	}
	build := func(recs []string) []byte {
		var b bytes.Buffer
		for _, r := range recs {
			b.WriteString("\x1e" + r + "\n")
		}
		return b.Bytes()
	}
	var many []string
	many = append(many, header)
	for i := 0; i < 6000; i++ { // about five batches
		many = append(many, metrics(i))
	}
	// A record of n+5 tape nodes in 2n+70 bytes.
	dense := func(i, n int) string {
		return fmt.Sprintf(`{"time":%d,"name":"transport:x","data":{"x":[%s1]}}`, i, strings.Repeat("1,", n-1))
	}
	var big []string
	big = append(big, header, metrics(1))
	big = append(big, `{"time":2,"name":"transport:path_updated","data":{"note":"`+strings.Repeat("x", seqBatchBytes+100)+`"}}`)
	big = append(big, dense(3, 2*seqBatchNodes), metrics(4), wide(5, 40))
	for i := 0; i < 40; i++ { // tapes that overflow a part-filled batch
		big = append(big, metrics(6+i), dense(6+i, seqBatchNodes/3+i))
	}
	stopEarly := append([]string{header, metrics(1), `[1]`}, many[1:]...)
	badLate := append(append([]string{}, many...), `{"time":1,"name":`)
	tests := []struct {
		name  string
		trace []byte
	}{
		{"batches", build(many)},
		{"long-record-and-wide-tapes", build(big)},
		{"mapper-stops-early", build(stopEarly)},
		{"invalid-after-batches", append(build(badLate), []byte("\x1e{\"time\":9}\n")...)},
		{"truncated-final-record", build(badLate)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			checkOracle(t, tc.trace, FormatNgtcp2)
			var z bytes.Buffer
			w := gzip.NewWriter(&z)
			w.Write(tc.trace)
			w.Close()
			before := runtime.NumGoroutine()
			var c timeline.Collector
			err := Parse("p.sqlog.gz", bytes.NewReader(z.Bytes()), Options{Format: FormatNgtcp2}, &c)
			var want timeline.Collector
			werr := parseOracle("p.sqlog.gz", tc.trace, FormatNgtcp2, &want)
			if fmt.Sprint(err) != fmt.Sprint(werr) || len(c.T.Samples) != len(want.T.Samples) || len(c.T.Events) != len(want.T.Events) {
				t.Fatalf("gzip: error %v, %d samples, %d events; oracle %v, %d, %d", err, len(c.T.Samples), len(c.T.Events), werr, len(want.T.Samples), len(want.T.Events))
			}
			// The stopped splitter and read-ahead return at their next
			// hand-off.
			deadline := time.Now().Add(5 * time.Second)
			for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
			if n := runtime.NumGoroutine(); n > before {
				t.Fatalf("%d goroutines after Parse returned, %d before", n, before)
			}
		})
	}
}
