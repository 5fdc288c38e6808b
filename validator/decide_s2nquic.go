package validator

// s2n-quic. A client whose local address changes keeps its single Path and
// only updates the path handle in place (Path::on_datagram_received →
// handle.maybe_update): migrating NO for Q1 and Q3. A server follows the
// peer in path::Manager::handle_connection_migration, which builds a new
// Path whose RttEstimator is for_new_path(initial RTT) (only max_ack_delay
// carried) and whose controller is new_congestion_controller: observing
// Q1 YES → ASYMMETRIC. Q2: on_path_response takes no RTT sample → NO.
// Q3: recovery::Manager keeps old-path packets out of the current path's
// RTT (should_update_rtt &= same path id), growth (path_id ==
// current_path_id) and loss (charged to path_mut_by_id(sent path)) →
// observing YES → ASYMMETRIC.
func init() { deciders["s2n-quic"] = decideS2nQuic }

func decideS2nQuic(r *reader) map[string]Decision {
	out := map[string]Decision{}
	const pathMod, mgr = "quic/s2n-quic-transport/src/path/mod.rs", "quic/s2n-quic-transport/src/path/manager.rs"
	inPlace := r.has(r.file(pathMod).inner("if Config::ENDPOINT_TYPE.is_client() {"), "self.handle.maybe_update(", "a client updates its one path's handle in place")
	if !inPlace {
		// Before Path::on_datagram_received: the manager finds a client's
		// path by the remote address alone, so a local change keeps it.
		eq := r.fn(pathMod, "fn eq_by_handle(").inner("if Config::ENDPOINT_TYPE.is_client()")
		inPlace = r.has(eq, "Handle::eq(&self.handle.remote_address(), &handle.remote_address())", "a client's path is found by the remote address alone")
	}
	hcm := r.fn(mgr, "fn handle_connection_migration<")
	r.body(hcm, "handle_connection_migration (server)")
	newRTT := r.has(hcm, ".for_new_path(limits.initial_round_trip_time())", "the new path's RTT estimator starts at the initial RTT")
	carried := r.has(r.fn("quic/s2n-quic-core/src/recovery/rtt_estimator.rs", "pub fn for_new_path("), "Self::new_with_max_ack_delay(self.max_ack_delay, initial_rtt)", "for_new_path carries only max_ack_delay")
	if !newRTT && hcm.find("RttEstimator::new(self.active_path().rtt_estimator.max_ack_delay())") > 0 {
		// Before for_new_path: a new estimator that starts at DEFAULT_INITIAL_RTT.
		newRTT = r.has(hcm, "RttEstimator::new(self.active_path().rtt_estimator.max_ack_delay())", "the new path's RTT estimator is new, carrying only max_ack_delay")
		carried = r.has(r.fn("quic/s2n-quic-core/src/recovery/rtt_estimator.rs", "pub fn new(max_ack_delay: Duration)"), "let smoothed_rtt = DEFAULT_INITIAL_RTT;", "RttEstimator::new starts at DEFAULT_INITIAL_RTT")
	}
	newCC := r.has(hcm, "new_congestion_controller(path_info)", "the new path gets a new controller")
	newPath := r.has(hcm, "Path::new(", "handle_connection_migration builds a new Path")
	roles := map[string]string{"migrating": "UNKNOWN", "observing": "UNKNOWN"}
	if inPlace {
		roles["migrating"] = "NO"
	}
	switch {
	case newPath && newRTT && carried && newCC:
		roles["observing"] = "YES"
	case newPath && newCC:
		roles["observing"] = "RESET_KEEPS_RTT"
	case hcm.ok():
		roles["observing"] = "NO"
	}
	out["Q1"] = r.decide(combineRoles(roles), roles)

	resp := r.fn(mgr, "pub fn on_path_response<")
	switch {
	case !r.body(resp, "path::Manager::on_path_response"):
		out["Q2"] = r.decide("UNKNOWN", nil)
	case r.has(resp, "rtt", "on_path_response touches an RTT"):
		out["Q2"] = r.decide("YES", nil)
	default:
		out["Q2"] = r.decide("NO", nil)
	}

	rec := r.file("quic/s2n-quic-transport/src/recovery/manager.rs")
	rtt := r.has(rec, "should_update_rtt &= context.path_id() == largest_newly_acked_info.path_id;", "RTT sample only from a packet sent on the current path")
	growth := r.has(rec, "if acked_packet_info.path_id == current_path_id {", "acked bytes grow the current path's controller only when sent on it")
	loss := r.has(rec, "context.path_mut_by_id(sent_info.path_id)", "a loss is charged to the path the packet was sent on")
	obs := "NO"
	switch {
	case rtt && growth && loss:
		obs = "YES"
	case rtt != (growth && loss):
		obs = "SPLIT"
	}
	roles3 := map[string]string{"migrating": roles["migrating"], "observing": obs}
	out["Q3"] = r.decide(combineRoles(roles3), roles3)
	return out
}
