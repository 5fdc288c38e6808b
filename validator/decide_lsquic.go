package validator

// lsquic. Q1: switch_path_to calls lsquic_send_ctl_repath, which zeroes
// rtt_stats and calls cci_reinit; the client switches after PATH_RESPONSE
// (process_path_response_frame, migrating) and the server on a packet from
// a new path (on_new_or_unconfirmed_path, observing) → YES at both roles.
// Q2: process_path_response_frame takes no RTT sample → NO. Q3: repath
// re-labels every old-path packet as a new-path one (po_path = new) and the
// RTT sample is gated only by packet-number order, not by path → NO.
func init() { deciders["lsquic"] = decideLsquic }

func decideLsquic(r *reader) map[string]Decision {
	out := map[string]Decision{}
	const conn, ctl = "src/liblsquic/lsquic_full_conn_ietf.c", "src/liblsquic/lsquic_send_ctl.c"
	sw := r.fn(conn, "^switch_path_to (")
	repaths := r.has(sw, "lsquic_send_ctl_repath(", "switch_path_to repaths the send controller")
	repath := r.fn(ctl, "^lsquic_send_ctl_repath (")
	rtt := r.has(repath, "memset(&ctl->sc_conn_pub->rtt_stats, 0,", "repath zeroes the RTT estimator")
	cc := r.has(repath, "cci_reinit(CGP(ctl))", "repath re-initialises the controller")
	mig := r.has(r.fn(conn, "^process_path_response_frame ("), "switch_path_to(conn", "client switches on PATH_RESPONSE (migrating)")
	obs := r.has(r.fn(conn, "^on_new_or_unconfirmed_path ("), "switch_path_to(conn", "server switches to a new path (observing)")
	role := func(switches bool) string {
		switch {
		case !switches:
			return "NO"
		case repaths && rtt && cc:
			return "YES"
		case repaths && cc:
			return "RESET_KEEPS_RTT"
		}
		return "NO"
	}
	roles := map[string]string{"migrating": role(mig), "observing": role(obs)}
	if !sw.ok() || !repath.ok() {
		out["Q1"] = r.decide("UNKNOWN", nil)
	} else {
		out["Q1"] = r.decide(combineRoles(roles), roles)
	}

	resp := r.fn(conn, "^process_path_response_frame (")
	switch {
	case !r.body(resp, "PATH_RESPONSE handler"):
		out["Q2"] = r.decide("UNKNOWN", nil)
	case r.has(resp, "rtt", "PATH_RESPONSE handler takes an RTT sample"):
		out["Q2"] = r.decide("YES", nil)
	default:
		out["Q2"] = r.decide("NO", nil)
	}

	repath = r.fn(ctl, "^lsquic_send_ctl_repath (")
	relabel := r.has(repath, "packet_out->po_path = new;", "repath re-labels old-path packets as new-path ones")
	f := r.file(ctl)
	gate := f.find("if ((!packno || packno > ctl->sc_max_rtt_packno) && lack_delta < measured_rtt)")
	r.see(f, gate, "RTT sample gated by packet-number order only")
	switch {
	case !repath.ok():
		out["Q3"] = r.decide("UNKNOWN", nil)
	case relabel && gate > 0:
		out["Q3"] = r.decide("NO", nil)
	default:
		out["Q3"] = r.decide("UNKNOWN", nil)
	}
	return out
}
