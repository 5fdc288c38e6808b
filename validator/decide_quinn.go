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
	if !local.ok() {
		// Before 0.11 there is no local_address_changed: Endpoint::rebind
		// swaps the socket and pings each connection, which keeps its PathData.
		rebind := r.fn("quinn/src/endpoint.rs", "pub fn rebind(&self, socket: std::net::UdpSocket)")
		if r.body(rebind, "Endpoint::rebind (the client's Rebind before 0.11)") {
			keeps = rebind.find("PathData") == 0 && rebind.find("local_address_changed") == 0
			r.see(rebind, boolLine(keeps, rebind.find("ConnectionEvent::Ping")), "Endpoint::rebind only pings the connections")
			local = rebind
		}
	}
	mig := r.fn(conn, "fn migrate(&mut self, now: Instant, remote: SocketAddr)")
	fresh := r.has(mig, "PathData::new(", "Connection::migrate builds a fresh PathData for a new remote IP")
	newFn := r.fnAny(paths, "pub(super) fn new(", "pub fn new(")
	rttInit := r.has(newFn, "rtt: RttEstimator::new(config.initial_rtt)", "PathData::new: RTT at config.initial_rtt")
	ccInit := r.has(newFn, ".congestion_controller_factory", "PathData::new: controller from the factory")
	if !rttInit && !ccInit {
		// Before 0.11 migrate passes the initial RTT and a fresh controller in.
		rttInit = r.has(newFn, "rtt: RttEstimator::new(initial_rtt)", "PathData::new: RTT from its initial_rtt argument")
		call := mig.inner("PathData::new(")
		if !call.ok() {
			call = mig.span("PathData::new(", "};")
		}
		rttInit = rttInit && r.has(call, "self.config.initial_rtt", "Connection::migrate passes config.initial_rtt")
		ccInit = r.has(call, ".congestion_controller_factory", "Connection::migrate passes a controller from the factory")
	}
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

	rif := r.fn(paths, "fn remove_in_flight(")
	gen := rif.find("packet.path_generation != self.generation") > 0
	if gen {
		r.has(rif, "packet.path_generation != self.generation", "in-flight bytes of other path generations ignored")
	} else {
		// 0.11.0 to 0.11.x: packets numbered before the path's first packet are ignored.
		gen = r.has(rif, "self.first_packet.map_or(true, |first| first > pn)", "in-flight bytes of packets sent before the path's first packet ignored")
	}
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
