package validator

// mvfst. Q1: both the server's onConnectionMigration (observing) and the
// client's migrateConnection (migrating) install a new congestion
// controller, but neither puts the RTT back to the initial value: srtt is
// replaced only by a path-validation sample when one is already known,
// otherwise kept → RESET_KEEPS_RTT (a role that installs no controller:
// NO). Q2: the PATH_RESPONSE case feeds validatedPath->rttSample to
// updateRtt → YES. Q3: AckHandlers.cpp never reads a packet's pathId, so
// old-path ACKs reach the new estimators → NO.
func init() { deciders["mvfst"] = decideMvfst }

func decideMvfst(r *reader) map[string]Decision {
	out := map[string]Decision{}
	role := func(b block, ccNeedle, who string) string {
		if !r.body(b, who) {
			return "UNKNOWN"
		}
		cc := r.has(b, ccNeedle, who+" installs a new controller")
		toInitial := r.see(b, b.find("srtt = kDefaultInitialRtt")+b.find("srtt = conn.transportSettings.initialRtt")+b.find("srtt = conn_->transportSettings.initialRtt"), who+" puts srtt back to the initial RTT")
		switch {
		case cc && toInitial:
			return "YES"
		case cc:
			return "RESET_KEEPS_RTT"
		}
		return "NO"
	}
	obs := role(r.fn("quic/server/state/ServerStateMachine.cpp", "onConnectionMigration("), "conn.congestionController =", "server onConnectionMigration (observing)")
	mig := role(r.fn("quic/client/QuicClientTransportLite.cpp", "QuicClientTransportLite::migrateConnection("), "conn_->congestionController =", "client migrateConnection (migrating)")
	r.has(r.file("quic/state/QuicPathManager.cpp"), "conn_.lossState.srtt = rttSample;", "srtt replaced only by a known validation sample")
	roles := map[string]string{"migrating": mig, "observing": obs}
	out["Q1"] = r.decide(combineRoles(roles), roles)

	resp := r.file("quic/state/SimpleFrameFunctions.cpp").span("conn.pathManager->onPathResponseReceived(", "case QuicSimpleFrame::Type::")
	switch {
	case !r.body(resp, "PATH_RESPONSE case (onPathResponseReceived)"):
		out["Q2"] = r.decide("UNKNOWN", nil)
	case r.has(resp, "updateRtt(conn, validatedPath->rttSample", "the validation round trip is fed to updateRtt"):
		out["Q2"] = r.decide("YES", nil)
	default:
		out["Q2"] = r.decide("NO", nil)
	}

	ack := r.file("quic/state/AckHandlers.cpp")
	sample := r.has(ack, "updateRtt(conn,", "RTT sample taken in ACK processing")
	reads := r.has(ack, "pathId", "ACK processing reads the packet's pathId")
	switch {
	case sample && !reads:
		out["Q3"] = r.decide("NO", nil)
	default:
		out["Q3"] = r.decide("UNKNOWN", nil)
	}
	return out
}
