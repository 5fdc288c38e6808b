package validator

// msquic. Q1: the observing endpoint resets in QuicPathSetActive (port-only
// changes exempt); the client's own move, QUIC_PARAM_CONN_LOCAL_ADDRESS in
// QuicConnParamSet, rewrites Paths[0] in place without a reset → ASYMMETRIC
// (migrating NO, observing YES). Q2: the PATH_RESPONSE case and
// QuicPathSetValid never touch an RTT → NO. Q3: the RTT sample is gated by
// NewLargestAckDifferentPath but ACK/loss accounting takes
// &Connection->Paths[0] ("TODO - Correct?") → SPLIT.
func init() { deciders["msquic"] = decideMsquic }

func decideMsquic(r *reader) map[string]Decision {
	out := map[string]Decision{}

	active := r.fn("src/core/path.c", "^QuicPathSetActive(")
	r.body(active, "QuicPathSetActive defined")
	obsResets := r.has(active, "QuicCongestionControlReset(", "QuicPathSetActive resets the controller (observing endpoint)")
	r.has(active, "UdpPortChangeOnly", "port-only changes exempt")
	set := r.fn("src/core/connection.c", "^QuicConnParamSet(").span("case QUIC_PARAM_CONN_LOCAL_ADDRESS", "case QUIC_PARAM_CONN_")
	setter := r.body(set, "QUIC_PARAM_CONN_LOCAL_ADDRESS setter (the client's own migration)")
	inPlace := r.has(set, "Connection->Paths[0].Route.LocalAddress", "setter rewrites Paths[0] in place")
	setterResets := set.find("QuicCongestionControlReset(") + set.find("QuicPathSetActive(") + set.find("QuicConnRestart(") + set.find("QuicCongestionControlInitialize(")
	r.see(set, setterResets, "setter resets the controller")
	switch {
	case obsResets && setter && inPlace && setterResets == 0:
		out["Q1"] = r.decide("ASYMMETRIC", map[string]string{"migrating": "NO", "observing": "YES"})
	case obsResets && !setter:
		out["Q1"] = r.decide("YES", nil)
	default:
		out["Q1"] = r.decide("UNKNOWN", nil)
	}

	resp := r.fn("src/core/connection.c", "^QuicConnRecvFrames(").span("case QUIC_FRAME_PATH_RESPONSE", "case QUIC_FRAME_")
	valid := r.fn("src/core/path.c", "^QuicPathSetValid(")
	if r.body(resp, "PATH_RESPONSE case") && r.body(valid, "QuicPathSetValid defined") {
		touches := resp.find("Rtt") + valid.find("Rtt")
		if !r.see(resp, touches, "PATH_RESPONSE handling touches an RTT") {
			out["Q2"] = r.decide("NO", nil)
		} else {
			out["Q2"] = r.decide("UNKNOWN", nil)
		}
	} else {
		out["Q2"] = r.decide("UNKNOWN", nil)
	}

	ld := r.file("src/core/loss_detection.c")
	r.has(ld, "NewLargestAckDifferentPath = Path->ID != LargestAckedPacket->PathId", "ACK of a packet from another path flagged")
	gated := r.see(ld, ld.inner("if (NewLargestAckRetransmittable && !NewLargestAckDifferentPath)").find("QuicConnUpdateRtt("), "RTT sample gated by !NewLargestAckDifferentPath")
	hard := r.has(ld, "&Connection->Paths[0]; // TODO - Correct?", "ACK/loss byte accounting hard-codes Paths[0]")
	switch {
	case gated && hard:
		out["Q3"] = r.decide("SPLIT", nil)
	case gated:
		out["Q3"] = r.decide("YES", nil)
	case hard:
		out["Q3"] = r.decide("NO", nil)
	default:
		out["Q3"] = r.decide("UNKNOWN", nil)
	}
	return out
}
