package parsers

import "github.com/migaudit/migaudit/parsers/timeline"

// parseQuicGo reads quic-go's qlog: JSON-SEQ with 0x1E separators, event
// schema urn:ietf:params:qlog:events:quic-12, "time" and RTTs as float
// milliseconds (µs precision and better). Packets carry no addresses; only
// transport:connection_started names the initial local and remote address,
// which becomes a path event.
func parseQuicGo(in *input, h timeline.Handler) error {
	return parseJSONSeq(in, h, seqFormat{
		format: FormatQuicGo,
		impl:   "quic-go",
		notes:  []string{"times and RTTs are float milliseconds, converted to µs"},
	})
}
