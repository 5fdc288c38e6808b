package validator

// ngtcp2. Q1: conn_reset_congestion_state is called on migration (in
// conn_recv_path_response, conn_recv_non_probing_pkt_on_new_path,
// ngtcp2_conn_initiate_immediate_migration) and conn_reset_conn_stat_cc sets
// smoothed_rtt back to settings.initial_rtt and cwnd to the initial window
// → YES. Q2: conn_recv_path_response takes no RTT sample → NO. Q3: the
// reset sets a packet-number watermark (ngtcp2_rtb_reset_cc_state) that
// keeps older packets out of congestion accounting, but the RTT sample
// (ngtcp2_conn_update_rtt in ngtcp2_rtb_recv_ack) is not behind it → SPLIT.
func init() { deciders["ngtcp2"] = decideNgtcp2 }

func decideNgtcp2(r *reader) map[string]Decision {
	out := map[string]Decision{}
	const conn = "lib/ngtcp2_conn.c"
	migrations := 0
	for _, fn := range []string{"conn_recv_path_response(", "conn_recv_non_probing_pkt_on_new_path(", "ngtcp2_conn_initiate_immediate_migration("} {
		if r.has(r.fn(conn, fn), "conn_reset_congestion_state(conn", fn[:len(fn)-1]+" resets congestion state") {
			migrations++
		}
	}
	stat := r.fn(conn, "^static void conn_reset_conn_stat_cc(")
	rtt := r.has(stat, "cstat->smoothed_rtt = conn->local.settings.initial_rtt;", "smoothed RTT back to the initial RTT")
	cwnd := r.has(stat, "cstat->cwnd = ngtcp2_cc_compute_initcwnd(", "window back to the initial window")
	switch {
	case migrations > 0 && rtt && cwnd:
		out["Q1"] = r.decide("YES", nil)
	case migrations > 0 && cwnd:
		out["Q1"] = r.decide("RESET_KEEPS_RTT", nil)
	case !stat.ok():
		out["Q1"] = r.decide("UNKNOWN", nil)
	default:
		out["Q1"] = r.decide("NO", nil)
	}

	resp := r.fn(conn, "^static int conn_recv_path_response(")
	if r.body(resp, "PATH_RESPONSE handler") {
		if r.has(resp, "update_rtt", "PATH_RESPONSE handler takes an RTT sample") {
			out["Q2"] = r.decide("YES", nil)
		} else {
			out["Q2"] = r.decide("NO", nil)
		}
	} else {
		out["Q2"] = r.decide("UNKNOWN", nil)
	}

	watermark := r.has(r.fn(conn, "^static void conn_reset_congestion_state("), "ngtcp2_rtb_reset_cc_state(", "reset sets the cc_pkt_num watermark")
	rtb := r.file("lib/ngtcp2_rtb.c")
	ccGuard := r.has(rtb, "if (ent->hd.pkt_num >= rtb->cc_pkt_num) {", "congestion accounting skips packets below the watermark")
	// the sample's guard: cc_ack.largest_pkt_sent_ts since v1.17.0 (a330faa7); a local
	// largest_pkt_sent_ts before
	recv := r.fn("lib/ngtcp2_rtb.c", "ngtcp2_rtb_recv_ack(")
	sample := recv.inner("if (cc_ack.largest_pkt_sent_ts != UINT64_MAX")
	if !sample.ok() {
		sample = recv.inner("if (largest_pkt_sent_ts != UINT64_MAX && ack_eliciting_pkt_acked")
	}
	r.has(sample, "ngtcp2_conn_update_rtt(", "RTT sample from the largest acknowledged packet")
	rttGuard := r.has(sample, "cc_pkt_num", "RTT sample behind the watermark")
	switch {
	case !sample.ok():
		out["Q3"] = r.decide("UNKNOWN", nil)
	case watermark && ccGuard && rttGuard:
		out["Q3"] = r.decide("YES", nil)
	case watermark && ccGuard:
		out["Q3"] = r.decide("SPLIT", nil)
	default:
		out["Q3"] = r.decide("NO", nil)
	}
	return out
}
