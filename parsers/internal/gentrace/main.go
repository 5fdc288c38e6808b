// Command gentrace writes a synthetic quic-go-style JSON-SEQ qlog of a
// given size to stdout: a connection that migrates (path validation at
// 5 s, the window reset to its initial value, the RTT moving to the new
// path's) and then runs on for as long as the size asks, at about the
// record rate of the reference quic-go trace (one record per 0.3 ms). It
// is how the memory of a one-pass analysis is shown to be flat in the
// trace's length:
//
//	go run ./parsers/internal/gentrace -bytes 2000000000 > /tmp/gen.sqlog
//	migaudit analyze --impl quic-go /tmp/gen.sqlog --format json
package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"strconv"
)

func main() {
	size := flag.Int64("bytes", 1<<30, "approximate size of the trace")
	stepMS := flag.Float64("step-ms", 0.3, "time between records, ms")
	flag.Parse()
	w := bufio.NewWriterSize(os.Stdout, 1<<20)
	defer w.Flush()
	var n int64
	put := func(b []byte) {
		w.Write(b)
		n += int64(len(b))
	}
	put([]byte("\x1e{\"file_schema\":\"urn:ietf:params:qlog:file:sequential\",\"serialization_format\":\"application/qlog+json-seq\",\"title\":\"quic-go qlog (gentrace)\",\"trace\":{\"vantage_point\":{\"type\":\"server\"}},\"qlog_format\":\"JSON-SEQ\",\"qlog_version\":\"0.3\"}\n"))
	const migMS = 5000.0
	var b []byte
	cwnd, srtt := int64(40960), 114.7
	migrated, validated := false, false
	for i := int64(0); n < *size; i++ {
		t := float64(i) * *stepMS
		b = b[:0]
		ts := strconv.FormatFloat(t, 'f', 6, 64)
		pn := strconv.FormatInt(i, 10)
		if !migrated && t >= migMS {
			migrated = true
			for _, r := range []string{
				`{"time":` + ts + `,"name":"transport:packet_received","data":{"header":{"packet_type":"1RTT","packet_number":` + pn + `},"raw":{"length":1252},"frames":[{"frame_type":"path_challenge","data":"02318c61ea63c880"}]}}`,
				`{"time":` + ts + `,"name":"transport:packet_sent","data":{"header":{"packet_type":"1RTT","packet_number":` + pn + `},"raw":{"length":60},"frames":[{"frame_type":"path_response","data":"02318c61ea63c880"},{"frame_type":"path_challenge","data":"1400a1f110edc725"}]}}`,
			} {
				put([]byte("\x1e" + r + "\n"))
			}
			cwnd, srtt = 40960, 100
		}
		if migrated && !validated && t >= migMS+40.7 {
			validated = true
			put([]byte("\x1e{\"time\":" + ts + `,"name":"transport:packet_received","data":{"header":{"packet_type":"1RTT","packet_number":` + pn + `},"raw":{"length":60},"frames":[{"frame_type":"path_response","data":"1400a1f110edc725"}]}}` + "\n"))
		}
		switch i % 3 {
		case 0:
			b = fmt.Appendf(b, "\x1e{\"time\":%s,\"name\":\"recovery:metrics_updated\",\"data\":{\"congestion_window\":%d,\"bytes_in_flight\":%d,\"smoothed_rtt\":%.3f,\"latest_rtt\":%.3f,\"rtt_variance\":2.1}}\n",
				ts, cwnd, i%200000, srtt, srtt)
			if cwnd < 300000 {
				cwnd += 1280
			}
			if migrated && srtt > 40.5 {
				srtt = 40.5 + (srtt-40.5)*0.9
			}
		case 1:
			b = fmt.Appendf(b, "\x1e{\"time\":%s,\"name\":\"transport:packet_sent\",\"data\":{\"header\":{\"packet_type\":\"1RTT\",\"packet_number\":%s,\"dcil\":4,\"dcid\":\"55a7b9eb\"},\"raw\":{\"length\":1252,\"payload_length\":1235},\"frames\":[{\"frame_type\":\"stream\",\"stream_id\":0,\"offset\":%s000,\"length\":1220}]}}\n",
				ts, pn, pn)
		case 2:
			b = fmt.Appendf(b, "\x1e{\"time\":%s,\"name\":\"transport:packet_received\",\"data\":{\"header\":{\"packet_type\":\"1RTT\",\"packet_number\":%s,\"dcil\":4,\"dcid\":\"9070953e\"},\"raw\":{\"length\":46,\"payload_length\":39},\"frames\":[{\"frame_type\":\"ack\",\"ack_delay\":0.056,\"acked_ranges\":[[%d,%d]]}]}}\n",
				ts, pn, max(i-20, 0), i-1)
		}
		put(b)
	}
}
