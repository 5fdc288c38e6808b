package validator

// aioquic. Q1: the connection has one QuicPacketRecovery (self._loss,
// assigned once, in __init__) whose RTT fields are initialised only in its
// own __init__; receive_datagram promotes the peer's new address to the
// active network path without touching self._loss (observing NO), and the
// sans-IO connection never learns its own address, so a moving client
// changes nothing either (migrating NO) → NO. Q2:
// _handle_path_response_frame takes no RTT sample → NO. Q3: sent packets
// carry no path (QuicSentPacket has no path field) and the single recovery
// takes every ACK → NO.
func init() { deciders["aioquic"] = decideAioquic }

func decideAioquic(r *reader) map[string]Decision {
	out := map[string]Decision{}
	const conn, rec = "src/aioquic/quic/connection.py", "src/aioquic/quic/recovery.py"
	cf := r.file(conn)
	single := cf.count("self._loss = ") == 1
	r.has(cf, "self._loss = QuicPacketRecovery(", "one connection-wide QuicPacketRecovery")
	rttInits := r.file(rec).count("self._rtt_initialized = False")
	r.see(r.file(rec), boolLine(rttInits == 1, r.file(rec).find("self._rtt_initialized = False")), "RTT estimator initialised only once (QuicPacketRecovery.__init__)")
	recv := r.pyfn(conn, "def receive_datagram(")
	promotes := r.has(recv, "self._network_paths.insert(0,", "receive_datagram promotes the peer's new address")
	touches := r.see(recv, recv.find("self._loss = ")+recv.find("_rtt_initialized")+recv.find("create_congestion_control("), "receive_datagram rebuilds the RTT estimator or the controller")
	localAddr := r.has(recv, "local_addr", "the connection learns its own address")
	switch {
	case !recv.ok() || !single:
		out["Q1"] = r.decide("UNKNOWN", nil)
	case promotes && !touches && rttInits == 1 && !localAddr:
		out["Q1"] = r.decide("NO", map[string]string{"migrating": "NO", "observing": "NO"})
	default:
		out["Q1"] = r.decide("UNKNOWN", nil)
	}

	resp := r.pyfn(conn, "def _handle_path_response_frame(")
	switch {
	case !r.body(resp, "PATH_RESPONSE handler"):
		out["Q2"] = r.decide("UNKNOWN", nil)
	case r.has(resp, "rtt", "PATH_RESPONSE handler takes an RTT sample"):
		out["Q2"] = r.decide("YES", nil)
	default:
		out["Q2"] = r.decide("NO", nil)
	}

	sent := r.pyfn("src/aioquic/quic/packet_builder.py", "class QuicSentPacket")
	r.body(sent, "QuicSentPacket defined")
	pathField := r.has(sent, "path", "sent packets record their path")
	single = r.has(r.file(conn), "self._loss = QuicPacketRecovery(", "one connection-wide recovery takes every ACK") && single
	switch {
	case !sent.ok():
		out["Q3"] = r.decide("UNKNOWN", nil)
	case single && !pathField:
		out["Q3"] = r.decide("NO", nil)
	default:
		out["Q3"] = r.decide("UNKNOWN", nil)
	}
	return out
}

// boolLine is line when ok, else 0 (for see).
func boolLine(ok bool, line int) int {
	if ok {
		return line
	}
	return 0
}
