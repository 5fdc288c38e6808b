package parsers

import (
	"bytes"
	stdgzip "compress/gzip"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"syscall"
	"testing"
	"time"

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
			cpu0 := cpuTime()
			var m0, m1 runtime.MemStats
			runtime.ReadMemStats(&m0)
			items := 0
			for i := 0; i < b.N; i++ {
				var h nopHandler
				if err := Parse(tc.file, bytes.NewReader(raw), Options{}, &h); err != nil {
					b.Fatal(err)
				}
				items += h.samples + h.events
			}
			runtime.ReadMemStats(&m1)
			reportCPU(b, int64(len(raw))*int64(b.N), cpuTime()-cpu0)
			// Per sample or event handed on (one per record, roughly):
			// the buffers set up per trace, spread over its records.
			b.ReportMetric(float64(m1.Mallocs-m0.Mallocs)/float64(max(items, 1)), "allocs/item")
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
	// pico makes a picoquic draft-00 document instead (never closed: the
	// stream ends mid-document, which the parser reports as truncation).
	pico bool
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
	if g.pico {
		return g.picoRecord()
	}
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

func (g *seqGenerator) picoRecord() []byte {
	b := g.buf[:0]
	if g.i == 0 {
		b = append(b, `{ "qlog_version": "draft-00", "title": "picoquic", "traces": [
{ "vantage_point": { "name": "gen", "type": "server" }, "event_fields": ["relative_time", "category", "event", "data"],
"configuration": {"time_units": "us"},
"events": [
`...)
	} else {
		b = append(b, ",\n"...)
	}
	g.i++
	b = append(b, '[')
	b = strconv.AppendInt(b, g.i*37, 10)
	if g.i%2 == 0 {
		b = append(b, `, "recovery", "metrics_updated", {"cwnd": `...)
		b = strconv.AppendInt(b, 15360+g.i%100000, 10)
		b = append(b, `,"bytes_in_flight": 1998,"smoothed_rtt": 21299}]`...)
	} else {
		b = append(b, `, "transport", "packet_sent", { "packet_type": "1RTT", "header": { "packet_size": 1440, "packet_number": `...)
		b = strconv.AppendInt(b, g.i, 10)
		b = append(b, ` }, "frames": [{ "frame_type": "stream", "id": 0, "offset": 1, "length": 1400}]}]`...)
	}
	g.buf = b
	return b
}

// peakHandler samples the heap every `every` callbacks (1<<18 by default).
type peakHandler struct {
	nopHandler
	calls int
	every int
	peak  uint64
}

func (h *peakHandler) tick() {
	h.calls++
	if h.every == 0 {
		h.every = 1 << 18
	}
	if h.calls%h.every == 0 {
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
	cpu0 := cpuTime()
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
	reportCPU(b, size*int64(b.N), cpuTime()-cpu0)
	b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
}

// cpuTime is the process's user+system CPU time. On a shared machine the
// wall-clock MB/s says more about the neighbours than the parser, so the
// benchmarks also report MB per CPU-second (GC included).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func reportCPU(b *testing.B, n int64, cpu time.Duration) {
	if cpu > 0 {
		b.ReportMetric(float64(n)/1e6/cpu.Seconds(), "MB/cpu-s")
	}
}

// TestStreamingMemoryBounded parses generated 64 MB traces (JSON-SEQ and a
// picoquic document) and requires the heap in use to stay far below the
// trace size: the parsers must not accumulate the input.
func TestStreamingMemoryBounded(t *testing.T) {
	const size = 64 << 20
	for _, tc := range []struct {
		format string
		pico   bool
	}{{FormatQuicGo, false}, {FormatPicoquic, true}} {
		t.Run(tc.format, func(t *testing.T) {
			runtime.GC()
			h := &peakHandler{every: 1 << 12}
			if err := Parse("generated", &seqGenerator{limit: size, pico: tc.pico}, Options{Format: tc.format}, h); err != nil {
				t.Fatal(err)
			}
			if h.samples < 10000 {
				t.Fatalf("only %d samples from a %d MB stream", h.samples, size>>20)
			}
			if h.peak == 0 || h.peak > 24<<20 {
				t.Errorf("peak heap in use %.1f MiB while streaming %d MiB (sampled %d times)", float64(h.peak)/(1<<20), size>>20, h.calls/h.every)
			}
			t.Logf("%s: %d samples, %d events, peak heap %.1f MiB", tc.format, h.samples, h.events, float64(h.peak)/(1<<20))
		})
	}
}

// BenchmarkGunzip compares the standard library's gzip with
// klauspost/compress's (the one Parse uses) on every reference trace,
// decompressing to io.Discard; MB/s is of uncompressed output.
//
//	go test -run '^$' -bench BenchmarkGunzip ./parsers
func BenchmarkGunzip(b *testing.B) {
	impls := []struct {
		name string
		open func(io.Reader) (io.Reader, error)
	}{
		{"stdlib", func(r io.Reader) (io.Reader, error) { return stdgzip.NewReader(r) }},
		{"klauspost", newGunzip},
	}
	files, _ := filepath.Glob(filepath.Join(repoRoot(b), "..", "shared", "reference", "traces", "*.gz"))
	if len(files) == 0 {
		b.Skip("reference traces absent (../shared/reference/traces)")
	}
	for _, f := range files {
		gz, err := os.ReadFile(f)
		if err != nil {
			b.Fatal(err)
		}
		size := int64(len(gunzipFile(b, f)))
		for _, im := range impls {
			b.Run(filepath.Base(f)+"/"+im.name, func(b *testing.B) {
				b.SetBytes(size)
				cpu0 := cpuTime()
				for i := 0; i < b.N; i++ {
					z, err := im.open(bytes.NewReader(gz))
					if err != nil {
						b.Fatal(err)
					}
					if _, err := io.Copy(io.Discard, z); err != nil {
						b.Fatal(err)
					}
				}
				reportCPU(b, size*int64(b.N), cpuTime()-cpu0)
			})
		}
	}
}
