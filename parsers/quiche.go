package parsers

import "github.com/migaudit/migaudit/parsers/timeline"

// parseQuiche reads quiche's qlog: JSON-SEQ, quic-12 with "quic:"-prefixed
// names ("quic:recovery_metrics_updated", "quic:packet_sent"), float
// milliseconds. Its metrics events carry no path id although quiche keeps
// recovery state per path, so the samples interleave the paths; that is said
// in Meta.Notes rather than hidden. quiche logs no packet_lost events: losses
// come from cf_lost_packets.delta in the metrics, one PacketLost event per
// counted packet with PacketNumber -1. Its PATH_CHALLENGE/PATH_RESPONSE
// frames are logged without their data.
func parseQuiche(in *input, h timeline.Handler) error {
	return parseJSONSeq(in, h, seqFormat{
		format:           FormatQuiche,
		impl:             "quiche",
		notes:            []string{"times and RTTs are float milliseconds, converted to µs", "PATH_CHALLENGE/PATH_RESPONSE data is not logged"},
		lostFromCounters: true,
		noPathNote:       "metrics carry no path id; the timeline is a union over paths",
	})
}
