package validator

// mvfst. Q1: since QuicPathManager (2025-09) both the server's
// onConnectionMigration (observing) and, since 2026-04, the client's
// migrateConnection (migrating) install a new congestion controller. The RTT:
// until 451a8a54 (2025-12) the path manager's restore put srtt = 0us (no
// sample) when the new path had no validation sample → YES; since, it keeps
// the RTT unless a sample is known → RESET_KEEPS_RTT. Before 2026-04 the
// client's migrateConnection only switched the path (NO). Before
// QuicPathManager, the server's onConnectionMigration ran
// recoverOrResetCongestionAndRttState → resetCongestionAndRttState (new
// controller, srtt = 0us) → YES, and the client's onNetworkSwitch only
// replaced its socket → NO. Q2: the PATH_RESPONSE round trip is fed to
// updateRtt (validatedPath->rttSample; before QuicPathManager, the
// sampleRtt measured from conn.pathChallengeStartTime) → YES. Q3:
// AckHandlers.cpp never reads a packet's pathId, so old-path ACKs reach the
// new estimators → NO.
func init() { deciders["mvfst"] = decideMvfst }

func decideMvfst(r *reader) map[string]Decision {
	out := map[string]Decision{}
	const ssm, pm = "quic/server/state/ServerStateMachine.cpp", "quic/state/QuicPathManager.cpp"
	// zero: where srtt = 0us (no sample: the PTO uses the initial RTT) may
	// be set for the role, besides its own body.
	role := func(b block, ccNeedle, who string, zero block, zeroNeedle string) string {
		if !r.body(b, who) {
			return "UNKNOWN"
		}
		cc := r.has(b, ccNeedle, who+" installs a new controller")
		toInitial := false
		if at := zero.find(zeroNeedle); at > 0 {
			toInitial = r.see(zero, at, "srtt = 0us: no sample, the PTO falls back to the initial RTT")
		} else {
			toInitial = r.see(b, b.find("srtt = kDefaultInitialRtt")+b.find("srtt = conn.transportSettings.initialRtt")+b.find("srtt = conn_->transportSettings.initialRtt"), who+" puts srtt back to the initial RTT")
		}
		switch {
		case cc && toInitial:
			return "YES"
		case cc:
			return "RESET_KEEPS_RTT"
		}
		return "NO"
	}
	ocm := r.fn(ssm, "onConnectionMigration(")
	var obs string
	if reset := r.fn(ssm, "void resetCongestionAndRttState("); reset.ok() && ocm.find("recoverOrResetCongestionAndRttState(conn,") > 0 {
		// Before QuicPathManager: the reset is a function of its own.
		r.has(ocm, "recoverOrResetCongestionAndRttState(conn,", "server onConnectionMigration recovers or resets the state")
		obs = role(reset, "conn.congestionController =", "resetCongestionAndRttState (observing)", reset, "conn.lossState.srtt = 0us;")
	} else {
		restore := r.fn(pm, "QuicPathManager::maybeRestoreCongestionControlAndRttStateForCurrentPath(")
		obs = role(ocm, "conn.congestionController =", "server onConnectionMigration (observing)", restore, "conn_.lossState.srtt = 0us;")
	}
	mc := r.fn("quic/client/QuicClientTransportLite.cpp", "QuicClientTransportLite::migrateConnection(")
	var mig string
	if !mc.ok() {
		// Before migrateConnection (2025-10): onNetworkSwitch swaps the socket.
		ns := r.fn("quic/client/QuicClientTransport.cpp", "QuicClientTransport::onNetworkSwitch(")
		if !ns.ok() {
			ns = r.fn("quic/client/QuicClientTransportLite.cpp", "QuicClientTransportLite::onNetworkSwitch(")
		}
		r.has(ns, "socket_ = std::move(newSock);", "client onNetworkSwitch replaces the socket")
		mig = role(ns, "conn_->congestionController =", "client onNetworkSwitch (migrating)", block{}, "")
	} else {
		mig = role(mc, "conn_->congestionController =", "client migrateConnection (migrating)", block{}, "")
	}
	r.has(r.file(pm), "conn_.lossState.srtt = rttSample;", "srtt replaced only by a known validation sample")
	roles := map[string]string{"migrating": mig, "observing": obs}
	out["Q1"] = r.decide(combineRoles(roles), roles)

	sff := r.file("quic/state/SimpleFrameFunctions.cpp")
	resp := sff.span("conn.pathManager->onPathResponseReceived(", "case QuicSimpleFrame::Type::")
	switch {
	case !resp.ok() && sff.find("Clock::now() - conn.pathChallengeStartTime") > 0:
		// Before QuicPathManager the PATH_RESPONSE case measured it itself.
		r.has(sff, "Clock::now() - conn.pathChallengeStartTime", "the PATH_RESPONSE case measures the challenge round trip")
		if r.has(sff, "updateRtt(conn, sampleRtt, 0us);", "the validation round trip is fed to updateRtt") {
			out["Q2"] = r.decide("YES", nil)
		} else {
			out["Q2"] = r.decide("UNKNOWN", nil)
		}
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
