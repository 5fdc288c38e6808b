package parsers

import "github.com/migaudit/migaudit/parsers/timeline"

// parseNgtcp2 reads ngtcp2's qlog: JSON-SEQ, qlog 0.3, 0x1E before each
// record, names "recovery:metrics_updated", "transport:packet_sent", ...
// ngtcp2 writes "time" and every RTT as integer milliseconds (ts /
// NGTCP2_MILLISECONDS in lib/ngtcp2_qlog.c), so µs values here are
// multiples of 1000 and sub-millisecond order within one millisecond is the
// record order only. Packets carry no addresses; the path-validation frames
// carry their data.
func parseNgtcp2(in *input, h timeline.Handler) error {
	return parseJSONSeq(in, h, seqFormat{
		format: FormatNgtcp2,
		impl:   "ngtcp2",
		notes:  []string{"times and RTTs are logged in whole milliseconds (ngtcp2 truncates); µs values are ms × 1000"},
	})
}
