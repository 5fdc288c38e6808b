package validator

// quicly. A client drops every packet whose source is not paths[0]'s
// remote, so only a server promotes a new path (promote_path, called from
// quicly_receive). Q1: promote_path re-initialises the controller (cc_init)
// and the RTT estimator, seeding it with the old path's SRTT when that is
// below the default → observing RESET_KEEPS_RTT; the client never
// promotes → migrating NO; → ROLE_DEPENDENT. Q2: the seed is the old SRTT
// or the default, never the path-challenge round trip → NO. Q3: promote_path
// sets the pn_path_start watermark and the RTT sample, acked bytes and
// losses are taken only at or above it → observing YES; the client has no
// watermark → migrating NO; → ASYMMETRIC.
func init() { deciders["quicly"] = decideQuicly }

func decideQuicly(r *reader) map[string]Decision {
	out := map[string]Decision{}
	const c = "lib/quicly.c"
	promote := r.fnAny(c, "^static quicly_error_t promote_path(", "^static int promote_path(")
	// the receive path: do_receive at the pin, inline in quicly_receive before
	recv := r.fnAny(c, "^static quicly_error_t do_receive(", "^quicly_error_t quicly_receive(", "^int quicly_receive(")
	r.body(promote, "promote_path defined")
	served := r.has(recv, "promote_path(conn, path_index)", "a validated non-probe path is promoted on receipt")
	clientPinned := r.has(recv.inner("if (quicly_is_client(conn)) {"), "compare_socket_address(src_addr, &conn->paths[0]->address.remote.sa) != 0", "a client drops packets not from paths[0]'s remote")
	cc := r.has(promote, "cc_init->cb(", "promote_path re-initialises the controller")
	rtt := r.has(promote, "quicly_rtt_init(&conn->egress.loss.rtt", "promote_path re-initialises the RTT estimator")
	seedOld := r.has(promote, "conn->egress.loss.rtt.smoothed < conn->super.ctx->loss.default_initial_rtt ? conn->egress.loss.rtt.smoothed", "seeded with the old path's SRTT when below the default")
	obs := "NO"
	switch {
	case !promote.ok() || !served:
		obs = "UNKNOWN"
	case cc && rtt && seedOld:
		obs = "RESET_KEEPS_RTT"
	case cc && rtt:
		obs = "YES"
	case cc:
		obs = "RESET_KEEPS_RTT"
	}
	mig := "UNKNOWN"
	if clientPinned {
		mig = "NO"
	}
	roles := map[string]string{"migrating": mig, "observing": obs}
	out["Q1"] = r.decide(combineRoles(roles), roles)

	if !promote.ok() {
		out["Q2"] = r.decide("UNKNOWN", nil)
	} else {
		rttInit := promote.span("quicly_rtt_init(&conn->egress.loss.rtt", ";")
		if r.has(rttInit, "path_challenge", "the new RTT is seeded from the path-challenge round trip") {
			out["Q2"] = r.decide("YES", nil)
		} else {
			r.has(promote, "default_initial_rtt", "the new RTT is seeded from the old SRTT or the default")
			out["Q2"] = r.decide("NO", nil)
		}
	}

	watermark := r.has(promote, "conn->egress.pn_path_start = conn->egress.packet_number;", "promote_path sets the pn_path_start watermark")
	ack := r.fnAny(c, "^static quicly_error_t handle_ack_frame(", "^static int handle_ack_frame(")
	rttGate := r.has(ack.inner("if (conn->egress.pn_path_start <= pn_acked) {"), "largest_newly_acked.pn = pn_acked;", "RTT sample only from packets at or above the watermark")
	ccGate := r.has(ack.inner("if (sent->cc_bytes_in_flight != 0) {").inner("if (conn->egress.pn_path_start <= pn_acked) {"), "bytes_acked +=", "acked bytes count only at or above the watermark")
	lossGate := r.has(r.file(c), "if (conn->egress.pn_path_start <= lost_pn) {", "losses count only at or above the watermark")
	obs3 := "NO"
	switch {
	case !promote.ok() || !ack.ok():
		obs3 = "UNKNOWN"
	case watermark && rttGate && ccGate && lossGate:
		obs3 = "YES"
	case watermark && (rttGate != ccGate):
		obs3 = "SPLIT"
	}
	mig3 := "UNKNOWN"
	if clientPinned {
		mig3 = "NO"
	}
	roles3 := map[string]string{"migrating": mig3, "observing": obs3}
	out["Q3"] = r.decide(combineRoles(roles3), roles3)
	return out
}
