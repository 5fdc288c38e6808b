package parsers

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"

	"github.com/migaudit/migaudit/parsers/timeline"
)

// nopHandler discards everything: the benchmarks measure parsing alone.
type nopHandler struct{ samples, events int }

func (h *nopHandler) Meta(timeline.Meta)     {}
func (h *nopHandler) Sample(timeline.Sample) { h.samples++ }
func (h *nopHandler) Event(timeline.Event)   { h.events++ }
func (h *nopHandler) Warn(timeline.Warning)  {}

// BenchmarkParse measures each parser on its reference trace, decompressed
// in memory first; MB/s is of uncompressed trace.
//
//	go test -run '^$' -bench BenchmarkParse -benchmem ./parsers
func BenchmarkParse(b *testing.B) {
	for _, tc := range []struct{ format, file string }{
		{FormatNgtcp2, "traces/ngtcp2_server.sqlog.gz"},
		{FormatQuicGo, "traces/quicgo_server.sqlog.gz"},
		{FormatQuiche, "traces/quiche_server.sqlog.gz"},
		{FormatPicoquic, "traces/picoquic_server.qlog.gz"},
		{FormatMsquic, "traces/msquic_server.log.gz"},
		{FormatCSV, "timelines/quicgo/rep1_server.csv.gz"},
	} {
		b.Run(tc.format, func(b *testing.B) {
			raw := gunzipFile(b, shared(b, filepath.FromSlash(tc.file)))
			b.SetBytes(int64(len(raw)))
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				var h nopHandler
				if err := Parse(tc.file, bytes.NewReader(raw), Options{}, &h); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// seqGenerator synthesises a quic-go-style JSON-SEQ qlog on the fly, record
// by record, until limit bytes: a 1 GB trace without a 1 GB file.
type seqGenerator struct {
	limit, n int64
	i        int64
	buf      []byte
	pending  []byte
	tbuf     []byte
	pbuf     []byte
}

func (g *seqGenerator) Read(p []byte) (int, error) {
	if g.n >= g.limit {
		return 0, io.EOF
	}
	for len(g.pending) == 0 {
		g.pending = g.record()
	}
	n := copy(p, g.pending)
	if rem := g.limit - g.n; int64(n) > rem {
		n = int(rem)
	}
	g.pending = g.pending[n:]
	g.n += int64(n)
	return n, nil
}

func (g *seqGenerator) record() []byte {
	b := g.buf[:0]
	if g.i == 0 {
		b = append(b, "\x1e{\"qlog_format\":\"JSON-SEQ\",\"qlog_version\":\"0.3\",\"title\":\"quic-go qlog\",\"trace\":{\"vantage_point\":{\"type\":\"server\"}}}\n"...)
	}
	g.i++
	t := strconv.AppendFloat(g.tbuf[:0], float64(g.i)*0.0371, 'f', 6, 64)
	pn := strconv.AppendInt(g.pbuf[:0], g.i, 10)
	g.tbuf, g.pbuf = t, pn
	switch g.i % 3 {
	case 0:
		b = append(b, "\x1e{\"time\":"...)
		b = append(b, t...)
		b = append(b, ",\"name\":\"recovery:metrics_updated\",\"data\":{\"congestion_window\":"...)
		b = strconv.AppendInt(b, 40960+g.i%300000, 10)
		b = append(b, ",\"bytes_in_flight\":"...)
		b = strconv.AppendInt(b, g.i%200000, 10)
		b = append(b, ",\"smoothed_rtt\":40.712,\"latest_rtt\":40.5,\"rtt_variance\":2.1,\"packets_in_flight\":12}}\n"...)
	case 1:
		b = append(b, "\x1e{\"time\":"...)
		b = append(b, t...)
		b = append(b, ",\"name\":\"transport:packet_sent\",\"data\":{\"header\":{\"packet_type\":\"1RTT\",\"packet_number\":"...)
		b = append(b, pn...)
		b = append(b, ",\"dcil\":4,\"dcid\":\"55a7b9eb\",\"key_phase_bit\":\"1\"},\"raw\":{\"length\":1252,\"payload_length\":1235},\"frames\":[{\"frame_type\":\"stream\",\"stream_id\":0,\"offset\":"...)
		b = append(b, pn...)
		b = append(b, "000,\"length\":1220}]}}\n"...)
	case 2:
		b = append(b, "\x1e{\"time\":"...)
		b = append(b, t...)
		b = append(b, ",\"name\":\"transport:packet_received\",\"data\":{\"header\":{\"packet_type\":\"1RTT\",\"packet_number\":"...)
		b = append(b, pn...)
		b = append(b, ",\"dcil\":4,\"dcid\":\"9070953e\"},\"raw\":{\"length\":46,\"payload_length\":39},\"frames\":[{\"frame_type\":\"ack\",\"ack_delay\":0.056,\"acked_ranges\":[["...)
		b = strconv.AppendInt(b, g.i-20, 10)
		b = append(b, ',')
		b = append(b, pn...)
		b = append(b, "]],\"ect0\":8857,\"ect1\":0,\"ce\":0}],\"ecn\":\"ECT(0)\"}}\n"...)
	}
	g.buf = b
	return b
}

// peakHandler samples the heap every 1<<18 callbacks.
type peakHandler struct {
	nopHandler
	calls int
	peak  uint64
}

func (h *peakHandler) tick() {
	h.calls++
	if h.calls&(1<<18-1) == 0 {
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		if m.HeapInuse > h.peak {
			h.peak = m.HeapInuse
		}
	}
}
func (h *peakHandler) Sample(s timeline.Sample) { h.nopHandler.Sample(s); h.tick() }
func (h *peakHandler) Event(e timeline.Event)   { h.nopHandler.Event(e); h.tick() }

// BenchmarkGeneratedJSONSeq streams a generated 1 GB JSON-SEQ trace
// (MIGAUDIT_BENCH_BYTES overrides the size) and reports the peak heap in
// use, which must not grow with the trace:
//
//	go test -run '^$' -bench BenchmarkGeneratedJSONSeq -benchtime 1x -benchmem ./parsers
func BenchmarkGeneratedJSONSeq(b *testing.B) {
	size := int64(1 << 30)
	if s := os.Getenv("MIGAUDIT_BENCH_BYTES"); s != "" {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			b.Fatal(err)
		}
		size = v
	}
	b.SetBytes(size)
	b.ReportAllocs()
	var peak uint64
	for i := 0; i < b.N; i++ {
		runtime.GC()
		h := &peakHandler{}
		if err := Parse("generated.sqlog", &seqGenerator{limit: size}, Options{Format: FormatQuicGo}, h); err != nil {
			b.Fatal(err)
		}
		if h.samples == 0 || h.events == 0 {
			b.Fatal("generator produced nothing the parser recognised")
		}
		peak = max(peak, h.peak)
	}
	b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
}
