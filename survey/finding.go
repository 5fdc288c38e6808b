package survey

// LiveFinding explains something the live runs showed with the evidence of
// an instrumented build (msquic's RTT estimator pinned at 333 ms after a
// migration: harnesses/msquic --instrument). Written by survey/build from the
// instrumented repetitions kept under data/evidence/<impl>/instrumented/,
// rendered by `migaudit report` as a section that can be filed upstream, and
// re-derived by the validator from the instrumented logs with its own reader.
type LiveFinding struct {
	ID string `json:"id"`
	// Questions are the survey questions whose live answer the finding
	// explains ("Q3": the estimator is never fed, so old-path samples cannot
	// be observed).
	Questions   []string `json:"questions,omitempty"`
	Statement   string   `json:"statement"`
	Requirement string   `json:"requirement"`
	// Evidence are the source positions of the mechanism at the pinned commit.
	Evidence []Evidence `json:"evidence"`
	// Repetitions are the instrumented repetitions, relative to
	// data/evidence/<impl> ("instrumented/rep1").
	Repetitions []string `json:"repetitions"`
	// Figures are what each repetition's instrumented log shows.
	Figures      []FindingFigures `json:"figures,omitempty"`
	Reproduction string           `json:"reproduction"`
	// Fix is what a fix would change.
	Fix string `json:"fix,omitempty"`
}

// FindingFigures are the counts one instrumented repetition's server log
// gives around the server's switch of its active path.
type FindingFigures struct {
	Repetition string `json:"repetition"`
	// Log is the instrumented log, relative to the repository root.
	Log string `json:"log"`
	// PatchSHA256 is the instrumentation patch the build carried (manifest).
	PatchSHA256 string `json:"patch_sha256,omitempty"`
	// SwitchUnixUS is the CLOCK_REALTIME of the server's QuicPathSetActive
	// that replaced Paths[0]; NewPathID / PrevPathID the IDs it swapped.
	SwitchUnixUS int64 `json:"switch_unix_us"`
	NewPathID    int64 `json:"new_path_id"`
	PrevPathID   int64 `json:"prev_path_id"`
	// Before the switch: ACK frames acknowledging packets and RTT updates.
	GatesBefore   int `json:"gates_before"`
	UpdatesBefore int `json:"updates_before"`
	// From the switch: ACK frames whose largest newly acknowledged packet is
	// ack-eliciting (an RTT sample by RFC 9002 §5.1), how many were gated as
	// "different path", how many updated the estimator.
	EligibleAfter      int `json:"eligible_after"`
	DifferentPathAfter int `json:"different_path_after"`
	UpdatesAfter       int `json:"updates_after"`
	// AckPathIDsAfter / LargestPathIDsAfter: the receiving path's ID and the
	// largest acknowledged packet's recorded PathId over the eligible ACKs
	// ("1": 4210).
	AckPathIDsAfter     map[string]int `json:"ack_path_ids_after"`
	LargestPathIDsAfter map[string]int `json:"largest_path_ids_after"`
	// SRTTAfterUS is the smoothed RTT the server's last ACK left.
	SRTTAfterUS int64 `json:"srtt_after_us"`
	// FirstSentOnNewPN / FirstSentOnNewStampedPathID: the first packet sent
	// on the new path and the PathId its metadata records (-1: none seen).
	FirstSentOnNewPN            int64 `json:"first_sent_on_new_pn"`
	FirstSentOnNewStampedPathID int64 `json:"first_sent_on_new_stamped_path_id"`
	// CongestionEventsAfter counts CUBIC congestion events in the first
	// second after the switch; LowestWindowAfter is the smallest window they
	// left (bytes; 0 when none).
	CongestionEventsAfter int   `json:"congestion_events_after"`
	LowestWindowAfter     int64 `json:"lowest_window_after"`
	// OldPathCongestionEventsAfter: of those, how many were triggered by the
	// loss of a packet sent to the client's old address.
	OldPathCongestionEventsAfter int `json:"old_path_congestion_events_after"`
	// LowestWindowAfterUS is how long after the switch the lowest window was
	// first reached (0: no event).
	LowestWindowAfterUS int64 `json:"lowest_window_after_us"`
	// OldPathSendsAfter counts the runs of packets sent to the client's old
	// address after the switch (SENT lines), the last one
	// OldPathLastSendAfterUS after it.
	OldPathSendsAfter      int   `json:"old_path_sends_after"`
	OldPathLastSendAfterUS int64 `json:"old_path_last_send_after_us"`
}
