// Package timeline is the one model every trace parser produces and every
// consumer (discriminator, survey, reports) reads: a series of congestion and
// RTT samples plus the path and packet events needed to locate a migration.
//
// Parsers know formats, not verdicts; the discriminator knows verdicts, not
// formats. This package is the contract between them.
package timeline

// Field is a bit set naming which values a Sample record actually reported.
// Values not reported are carried forward from the previous sample on the
// same path, so every Sample is a full snapshot, but only the reported
// fields are evidence of a change at that instant.
type Field uint8

const (
	FieldCwnd Field = 1 << iota
	FieldBytesInFlight
	FieldSmoothedRTT
	FieldMinRTT
	FieldLatestRTT
	FieldRTTVar
)

// Has reports whether all bits of g are set in f.
func (f Field) Has(g Field) bool { return f&g == g }

// Sample is one congestion/RTT observation.
type Sample struct {
	// TimeUS is microseconds from the trace's own reference time.
	TimeUS int64 `json:"time_us"`
	// PathID identifies the path the metrics belong to; empty when the
	// format carries none (quiche's qlog, most CSV timelines).
	PathID string `json:"path_id,omitempty"`
	// Fields says which of the values below this record reported.
	Fields        Field `json:"fields"`
	CwndBytes     int64 `json:"cwnd_bytes"`
	BytesInFlight int64 `json:"bytes_in_flight"`
	SmoothedRTTUS int64 `json:"smoothed_rtt_us"`
	MinRTTUS      int64 `json:"min_rtt_us"`
	LatestRTTUS   int64 `json:"latest_rtt_us"`
	RTTVarUS      int64 `json:"rttvar_us"`
}

// Set records v as the value of field f (one bit) and marks f reported.
func (s *Sample) Set(f Field, v int64) {
	switch f {
	case FieldCwnd:
		s.CwndBytes = v
	case FieldBytesInFlight:
		s.BytesInFlight = v
	case FieldSmoothedRTT:
		s.SmoothedRTTUS = v
	case FieldMinRTT:
		s.MinRTTUS = v
	case FieldLatestRTT:
		s.LatestRTTUS = v
	case FieldRTTVar:
		s.RTTVarUS = v
	}
	s.Fields |= f
}

// EventKind names an event the migration audit needs.
type EventKind string

const (
	DatagramSent          EventKind = "datagram_sent"
	DatagramReceived      EventKind = "datagram_received"
	PathChallengeSent     EventKind = "path_challenge_sent"
	PathChallengeReceived EventKind = "path_challenge_received"
	PathResponseSent      EventKind = "path_response_sent"
	PathResponseReceived  EventKind = "path_response_received"
	PacketSent            EventKind = "packet_sent"
	PacketReceived        EventKind = "packet_received"
	PacketLost            EventKind = "packet_lost"
	// PacketsAcked carries AckRanges: packet numbers an ACK frame in a
	// received packet acknowledged.
	PacketsAcked EventKind = "packets_acked"
	// PathEvent is an implementation's own path-state event (quiche's
	// New/Validated/PeerMigrated, msquic's path switch lines); Detail names it.
	PathEvent EventKind = "path_event"
	// ParametersSet records transport parameters; values land in Meta.Params too.
	ParametersSet EventKind = "parameters_set"
	// CongestionStateUpdated is a qlog congestion_state_updated (slow_start,
	// recovery, ...); Detail is the new state.
	CongestionStateUpdated EventKind = "congestion_state_updated"
	// CongestionEvent is an implementation's own congestion-event line
	// (msquic's "Congestion event: IsEcn=0"); Detail carries its text.
	CongestionEvent EventKind = "congestion_event"
)

// Range is an inclusive range of packet numbers.
type Range struct {
	First int64 `json:"first"`
	Last  int64 `json:"last"`
}

// Event is one logged occurrence. Fields that a format does not log stay
// zero/empty; PacketNumber is -1 when not applicable.
type Event struct {
	TimeUS       int64     `json:"time_us"`
	Kind         EventKind `json:"kind"`
	PathID       string    `json:"path_id,omitempty"`
	From         string    `json:"from,omitempty"` // "ip:port" where logged
	To           string    `json:"to,omitempty"`
	Data         string    `json:"data,omitempty"` // PATH_CHALLENGE/RESPONSE data
	PacketNumber int64     `json:"packet_number"`
	PacketSpace  string    `json:"packet_space,omitempty"`
	AckRanges    []Range   `json:"ack_ranges,omitempty"`
	SizeBytes    int64     `json:"size_bytes,omitempty"`
	Detail       string    `json:"detail,omitempty"`
}

// Meta describes the trace as a whole.
type Meta struct {
	Format string `json:"format"`
	// Implementation is what the trace says produced it ("" if it does not say).
	Implementation string `json:"implementation,omitempty"`
	// Vantage is "server", "client" or "".
	Vantage string `json:"vantage,omitempty"`
	// PathIDs is true when metrics carry a path identifier.
	PathIDs bool `json:"path_ids"`
	// LogsAddresses is true when datagram/packet events carry addresses.
	LogsAddresses bool `json:"logs_addresses"`
	// Params holds numeric settings found in the trace (transport parameters
	// such as max_udp_payload_size, a negotiated send size, ...).
	Params map[string]int64 `json:"params,omitempty"`
	// Notes are format facts a reader must know ("metrics carry no path id").
	Notes []string `json:"notes,omitempty"`
}

// Warning is a recoverable problem: the parser used the rest of the trace.
type Warning struct {
	Record  int    `json:"record"`
	Offset  int64  `json:"offset"`
	Message string `json:"message"`
}

// Handler receives a trace as it is streamed. Parsers call Meta possibly
// several times (later calls refine earlier ones); a Handler must not retain
// the AckRanges slice beyond the call unless it copies it.
type Handler interface {
	Meta(Meta)
	Sample(Sample)
	Event(Event)
	Warn(Warning)
}

// Timeline is a whole trace held in memory.
type Timeline struct {
	Source   string    `json:"source"`
	Meta     Meta      `json:"meta"`
	Samples  []Sample  `json:"samples"`
	Events   []Event   `json:"events"`
	Warnings []Warning `json:"warnings,omitempty"`
}

// Collector is a Handler that builds a Timeline.
type Collector struct{ T Timeline }

func (c *Collector) Meta(m Meta)     { c.T.Meta = m }
func (c *Collector) Sample(s Sample) { c.T.Samples = append(c.T.Samples, s) }
func (c *Collector) Warn(w Warning)  { c.T.Warnings = append(c.T.Warnings, w) }
func (c *Collector) Event(e Event) {
	if e.AckRanges != nil {
		e.AckRanges = append([]Range(nil), e.AckRanges...)
	}
	c.T.Events = append(c.T.Events, e)
}
