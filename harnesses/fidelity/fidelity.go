// Package fidelity holds the emulator's per-window measurement of how
// faithfully the testbed's paths were emulated: the type the testbed
// measures (harnesses/testbed) and the runner judges (harnesses/run), so
// that the two share one definition instead of bridging copies through
// JSON. It imports nothing of migaudit's.
package fidelity

// Window is what the emulator itself measured over a window of the
// CLOCK_MONOTONIC clock: per path and direction, how the packets it carried
// fared against its own schedule, and the host stalls the holder's
// sentinel saw. It is the per-repetition proof (or disproof) that the paths
// were what the run says they were.
type Window struct {
	FromNS int64 `json:"from_ns"`
	ToNS   int64 `json:"to_ns"`
	// LateToleranceNS is the lateness above which a packet counts in
	// Dir.LateOver.
	LateToleranceNS int64 `json:"late_tolerance_ns"`
	// Dirs are keyed "A/up", "A/down", "B/up", "B/down" (up = client →
	// server); a direction that carried nothing in the window is absent.
	Dirs map[string]Dir `json:"dirs"`
	// Stalls are the sentinel's wake-ups later than its threshold that
	// began in the window, in order.
	Stalls []Stall `json:"stalls"`
	// SentinelSamples is how many 1 ms wake-ups the sentinel made in the
	// window (0: no sentinel ran; then Stalls proves nothing).
	SentinelSamples int `json:"sentinel_samples"`
	// Truncated is set when the records of the window's start had already
	// been overwritten (the emulator's ring is bounded).
	Truncated bool `json:"truncated,omitempty"`
}

// Dir is one direction of one path over a window. Delay is write time −
// arrival time (propagation, plus queueing behind the token bucket);
// lateness is write time − scheduled time, i.e. the emulator's own error.
// Packets are counted by their write time (drops by arrival).
type Dir struct {
	Packets        int     `json:"packets"`
	Bytes          int64   `json:"bytes"`
	FirstSentNS    int64   `json:"first_sent_ns,omitempty"`
	LastSentNS     int64   `json:"last_sent_ns,omitempty"`
	RateBps        float64 `json:"rate_bps"` // bytes × 8 over first..last write (0 for < 2 packets)
	DelayMedianNS  int64   `json:"delay_median_ns"`
	DelayP99NS     int64   `json:"delay_p99_ns"`
	LateMedianNS   int64   `json:"late_median_ns"`
	LateP99NS      int64   `json:"late_p99_ns"`
	LateMaxNS      int64   `json:"late_max_ns"`
	LateMaxAtNS    int64   `json:"late_max_at_ns,omitempty"` // write time of the latest packet
	LateOver       int     `json:"late_over_tolerance"`
	LateFraction   float64 `json:"late_fraction"`
	QueueDrops     int     `json:"queue_drops"`
	LossDrops      int     `json:"loss_drops"`
	WriteDrops     int     `json:"write_drops"`
	EarliestLateNS int64   `json:"earliest_late_ns,omitempty"` // write time of the first packet over the tolerance
	// Held counts the datagrams the emulator's hold delayed on purpose
	// (the pv-distinct scenario); their extra delay is in neither Delay
	// nor lateness.
	Held int `json:"held,omitempty"`
	// Order is how this direction's packets written in the window were
	// ordered against the other path's packets in the same direction,
	// written against scheduled (nil: not measured, e.g. a manifest
	// recorded before it was; CrossOrder).
	Order *Order `json:"cross_order,omitempty"`
}

// Stall is one host stall: a 1 ms real-time sentinel wake-up that began at
// AtNS and came LateNS late.
type Stall struct {
	AtNS   int64 `json:"at_ns"`
	LateNS int64 `json:"late_ns"`
}
