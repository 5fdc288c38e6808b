package validator

// quic-go. Q1: connection.go calls sentPacketHandler.MigratedPath, which
// calls rttStats.ResetForPathMigration (RTT back to DefaultInitialRTT) and
// installs a new cubic sender → YES. Q2: ResetForPathMigration takes no
// sample (no parameter) → NO. Q3: MigratedPath declares every in-flight
// packet lost (DeclareLost sets the history slot to nil, the ACK iterator
// skips nil slots) → YES.
func init() { deciders["quic-go"] = decideQuicGo }

func decideQuicGo(r *reader) map[string]Decision {
	out := map[string]Decision{}
	conn := r.file("connection.go")
	called := r.has(conn, "sentPacketHandler.MigratedPath(", "connection calls MigratedPath")
	mig := r.fn("internal/ackhandler/sent_packet_handler.go", "func (h *sentPacketHandler) MigratedPath(")
	r.body(mig, "MigratedPath defined")
	rttReset := r.has(mig, "h.rttStats.ResetForPathMigration()", "MigratedPath resets the RTT estimator")
	reset := r.fn("internal/utils/rtt_stats.go", "func (r *RTTStats) ResetForPathMigration(")
	// Two shapes of the reset: the pin stores DefaultInitialRTT; v0.50 to
	// v0.55 zero the fields, and PTO falls back to defaultInitialRTT while
	// the smoothed RTT is 0.
	var toDefault bool
	if reset.find("smoothedRTT.Store(DefaultInitialRTT") > 0 {
		toDefault = r.has(reset, "smoothedRTT.Store(DefaultInitialRTT", "smoothed RTT back to DefaultInitialRTT")
	} else {
		zero := "r.smoothedRTT = 0"
		if reset.find("r.smoothedRTT.Store(0)") > 0 {
			zero = "r.smoothedRTT.Store(0)" // v0.55: atomic fields
		}
		toDefault = r.has(reset, zero, "smoothed RTT zeroed") &&
			r.has(r.file("internal/utils/rtt_stats.go"), "return 2 * defaultInitialRTT", "with no smoothed RTT the PTO uses defaultInitialRTT")
	}
	rttReset = toDefault && rttReset
	ccReset := r.has(mig, "h.congestion = congestion.NewCubicSender(", "MigratedPath installs a new controller")
	switch {
	case !called || !mig.ok():
		out["Q1"] = r.decide("UNKNOWN", nil)
	case ccReset && rttReset:
		out["Q1"] = r.decide("YES", nil)
	case ccReset:
		out["Q1"] = r.decide("RESET_KEEPS_RTT", nil)
	default:
		out["Q1"] = r.decide("NO", nil)
	}

	reset = r.fn("internal/utils/rtt_stats.go", "func (r *RTTStats) ResetForPathMigration()")
	if r.body(reset, "ResetForPathMigration takes no RTT sample (no parameter)") {
		out["Q2"] = r.decide("NO", nil)
	} else {
		out["Q2"] = r.decide("UNKNOWN", nil)
	}

	mig = r.fn("internal/ackhandler/sent_packet_handler.go", "func (h *sentPacketHandler) MigratedPath(")
	lost := r.has(mig, "history.DeclareLost(", "MigratedPath declares the in-flight packets lost")
	hist := r.fn("internal/ackhandler/sent_packet_history.go", "func (h *sentPacketHistory) DeclareLost(")
	removed := r.has(hist, "h.packets[idx] = nil", "DeclareLost empties the packet's slot")
	skips := r.has(r.file("internal/ackhandler/sent_packet_history.go"), "if p == nil {", "the history iterator skips emptied slots")
	switch {
	case !mig.ok():
		out["Q3"] = r.decide("UNKNOWN", nil)
	case lost && removed && skips:
		out["Q3"] = r.decide("YES", nil)
	default:
		out["Q3"] = r.decide("NO", nil)
	}
	return out
}
