package validator

// xquic. Without multipath (enable_multipath defaults to 0) every endpoint
// advertises disable_active_migration = enable_multipath ? 0 : 1: a client
// cannot migrate (migrating NOT_SUPPORTED, and N/A for Q3). A server treats
// a new peer address as NAT rebinding and, on PATH_RESPONSE, copies it into
// the same path (xqc_memcpy(path->peer_addr, path->rebinding_addr)),
// keeping that path's send controller: observing NO for Q1 and Q3 (no
// reset, old-address packets acknowledged into the same state). Roles that
// cannot migrate do not count, so Q1 → NO and Q3 → NO. Q2:
// xqc_process_path_response_frame takes no RTT sample → NO.
func init() { deciders["xquic"] = decideXquic }

func decideXquic(r *reader) map[string]Decision {
	out := map[string]Decision{}
	const conn, frame = "src/transport/xqc_conn.c", "src/transport/xqc_frame.c"
	cf := r.file(conn)
	disabled := r.has(cf, "disable_active_migration = ls->enable_multipath ? 0 : 1;", "active migration disabled unless multipath")
	r.has(cf, ".enable_multipath = 0,", "multipath off by default")
	disabled = disabled && cf.find(".enable_multipath = 0,") > 0
	if !disabled && cf.find("enable_multipath") == 0 {
		// before multipath (1.3 and earlier) the local settings always disable it
		disabled = r.has(r.fn(conn, "^xqc_conn_init_trans_settings("), "ls->disable_active_migration = 1;", "active migration always disabled (no multipath yet)")
	}
	resp := r.fn(frame, "^xqc_process_path_response_frame(")
	r.body(resp, "xqc_process_path_response_frame")
	rebind := resp.find("xqc_memcpy(path->peer_addr, path->rebinding_addr") > 0
	copyAt := "xqc_memcpy(path->peer_addr"
	if rebind {
		r.has(resp, "xqc_memcpy(path->peer_addr, path->rebinding_addr", "a rebinding's new address copied into the same path")
	} else {
		// before multipath: into the connection, whose one conn_send_ctl stays
		rebind = r.has(resp, "xqc_memcpy(conn->peer_addr, conn->rebinding_addr", "a rebinding's new address copied into the connection")
		copyAt = "xqc_memcpy(conn->peer_addr"
	}
	resets := r.has(resp, "xqc_send_ctl_reset(", "path response resets the send controller")
	roles := map[string]string{"migrating": "UNKNOWN", "observing": "UNKNOWN"}
	roles3 := map[string]string{"migrating": "UNKNOWN", "observing": "UNKNOWN"}
	if disabled {
		roles["migrating"], roles3["migrating"] = "NOT_SUPPORTED", "N/A"
	}
	switch {
	case rebind && !resets:
		roles["observing"], roles3["observing"] = "NO", "NO"
	case rebind && resets:
		roles["observing"] = "YES"
	}
	out["Q1"] = r.decide(combineRoles(roles), roles)

	switch {
	case !resp.ok():
		out["Q2"] = r.decide("UNKNOWN", nil)
	case r.has(resp, "rtt", "PATH_RESPONSE handling touches an RTT"):
		out["Q2"] = r.decide("YES", nil)
	default:
		out["Q2"] = r.decide("NO", nil)
	}

	r.see(resp, boolLine(rebind, resp.find(copyAt)), "the rebinding keeps the path and its send controller")
	out["Q3"] = r.decide(combineRoles(roles3), roles3)
	return out
}
