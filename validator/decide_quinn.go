package validator

// quinn. The client's move (quinn's Rebind → local_address_changed) only
// rotates the CID and pings: its PathData is kept. The server follows a new
// remote in Connection::migrate, which builds PathData::new (RttEstimator at
// config.initial_rtt, a fresh controller) unless only the IPv4 port changed.
// Q1: migrating NO, observing YES → ASYMMETRIC. Q2: the PATH_RESPONSE arm
// takes no RTT sample → NO. Q3: the client keeps one PathData (migrating
// NO); at the server, packets carry their path generation and
// PathData::remove_in_flight ignores other generations' bytes, but the RTT
// sample (self.path.rtt.update) is not gated by generation (observing
// SPLIT) → ROLE_DEPENDENT.
func init() { deciders["quinn"] = decideQuinn }

func decideQuinn(r *reader) map[string]Decision {
	out := map[string]Decision{}
	const conn, paths = "quinn-proto/src/connection/mod.rs", "quinn-proto/src/connection/paths.rs"
	local := r.fn(conn, "pub fn local_address_changed(&mut self)")
	r.body(local, "local_address_changed (the client's Rebind)")
	keeps := local.ok() && local.find("PathData::") == 0 && local.find("self.path.reset(") == 0 && local.find("self.path =") == 0
	r.see(local, boolLine(keeps, local.start), "local_address_changed keeps the PathData")
	mig := r.fn(conn, "fn migrate(&mut self, now: Instant, remote: SocketAddr)")
	fresh := r.has(mig, "PathData::new(", "Connection::migrate builds a fresh PathData for a new remote IP")
	newFn := r.fn(paths, "pub(super) fn new(")
	rttInit := r.has(newFn, "rtt: RttEstimator::new(config.initial_rtt)", "PathData::new: RTT at config.initial_rtt")
	ccInit := r.has(newFn, ".congestion_controller_factory", "PathData::new: controller from the factory")
	roles := map[string]string{"migrating": "UNKNOWN", "observing": "UNKNOWN"}
	if local.ok() {
		roles["migrating"] = map[bool]string{true: "NO", false: "UNKNOWN"}[keeps]
	}
	switch {
	case fresh && rttInit && ccInit:
		roles["observing"] = "YES"
	case mig.ok() && !fresh:
		roles["observing"] = "NO"
	}
	out["Q1"] = r.decide(combineRoles(roles), roles)

	resp := r.fn(conn, "fn process_payload(").inner("Frame::PathResponse(token) =>")
	if !resp.ok() {
		resp = r.file(conn).inner("Frame::PathResponse(token) =>")
	}
	switch {
	case !r.body(resp, "PATH_RESPONSE arm"):
		out["Q2"] = r.decide("UNKNOWN", nil)
	case r.has(resp, "rtt", "PATH_RESPONSE arm touches an RTT"):
		out["Q2"] = r.decide("YES", nil)
	default:
		out["Q2"] = r.decide("NO", nil)
	}

	gen := r.has(r.fn(paths, "fn remove_in_flight("), "packet.path_generation != self.generation", "in-flight bytes of other path generations ignored")
	c := r.file(conn)
	sample := c.inner("if new_largest && ack_eliciting_acked {")
	r.has(sample, "self.path.rtt.update(", "RTT sample on a new largest acknowledged packet")
	rttGen := r.has(sample, "path_generation", "RTT sample gated by path generation")
	obs3 := "NO"
	switch {
	case !sample.ok():
		obs3 = "UNKNOWN"
	case gen && rttGen:
		obs3 = "YES"
	case gen != rttGen:
		obs3 = "SPLIT"
	}
	roles3 := map[string]string{"migrating": roles["migrating"], "observing": obs3}
	out["Q3"] = r.decide(combineRoles(roles3), roles3)
	return out
}
