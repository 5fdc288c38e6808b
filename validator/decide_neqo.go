package validator

// neqo. Q1: every new path is built by Path::temporary with a fresh
// PacketSender (congestion at its initial window), but Paths::find_path
// primes its RttEstimate from the primary path (prime_rtt →
// set_initial(smoothed_rtt + rttvar)), not the initial RTT; client
// (Connection::migrate) and server (input → find_path) both get paths that
// way → RESET_KEEPS_RTT at both roles. Q2: Paths::path_response records no
// RTT sample → NO. Q3: the RTT sample is taken only for packets sent on the
// primary path (on_primary_path), so is congestion input (cc_in_flight,
// cc_outstanding), and Loss::migrate clears that flag of the old packets; the client's migrate and the PATH_RESPONSE that completes a
// migration call it (migrating YES), the server's handle_migration does not
// (observing NO) → ASYMMETRIC. Before #3520 (8fe27535, 2026-04) the
// congestion event took the last lost packet whatever its flag: migrating
// SPLIT → ROLE_DEPENDENT.
func init() { deciders["neqo"] = decideNeqo }

func decideNeqo(r *reader) map[string]Decision {
	out := map[string]Decision{}
	const pathRS, connRS = "neqo-transport/src/path.rs", "neqo-transport/src/connection/mod.rs"
	fresh := r.has(r.fn(pathRS, "pub fn temporary("), "PacketSender::new(", "a new path gets a fresh PacketSender")
	primed := r.has(r.fn(pathRS, "pub fn find_path("), "p.prime_rtt(", "find_path primes the new path's RTT from the primary path")
	fromOld := r.has(r.fn("neqo-transport/src/rtt.rs", "pub fn prime_rtt("), "self.set_initial(other.smoothed_rtt", "prime_rtt starts from the old path's smoothed RTT")
	client := r.has(r.fn(connRS, "pub fn migrate("), "self.paths.find_path(", "client migration builds its path with find_path")
	server := r.has(r.fn(connRS, "fn input("), "self.paths.find_path(", "server builds a received datagram's path with find_path")
	role := func(creates bool) string {
		switch {
		case !creates:
			return "UNKNOWN"
		case fresh && primed && fromOld:
			return "RESET_KEEPS_RTT"
		case fresh:
			return "YES"
		}
		return "NO"
	}
	roles := map[string]string{"migrating": role(client), "observing": role(server)}
	out["Q1"] = r.decide(combineRoles(roles), roles)

	resp := r.fn(pathRS, "pub fn path_response(")
	switch {
	case !r.body(resp, "Paths::path_response (PATH_RESPONSE)"):
		out["Q2"] = r.decide("UNKNOWN", nil)
	case r.see(resp, resp.find("rtt_sample(")+resp.find("rtt_mut()")+resp.find(".update_rtt("), "path_response records an RTT sample"):
		out["Q2"] = r.decide("YES", nil)
	default:
		out["Q2"] = r.decide("NO", nil)
	}

	rec := r.file("neqo-transport/src/recovery/mod.rs")
	gated := r.has(rec, "largest_acked_pkt.on_primary_path()", "RTT sample only for packets sent on the primary path")
	sent := r.file("neqo-transport/src/recovery/sent.rs")
	ccGated := r.see(sent, boolLine(sent.find("fn cc_in_flight(&self) -> bool { self.ack_eliciting() && self.on_primary_path()") > 0 &&
		sent.find("fn cc_outstanding(&self) -> bool { self.ack_eliciting() && self.on_primary_path()") > 0,
		sent.find("fn cc_in_flight(")), "congestion input (cc_in_flight, cc_outstanding) only for packets sent on the primary path")
	// The congestion event: since #3520 (2026-04) it starts only from a lost
	// cc_in_flight packet; before, from the last lost packet whatever its flag.
	cc := r.file("neqo-transport/src/cc/classic_cc.rs")
	lossGated := r.has(cc, "rfind(|pkt| pkt.cc_in_flight())", "the congestion event starts only from a lost in-flight packet")
	// Loss::migrate → each space's migrate → SentPacket::clear_primary_path.
	space := r.fn("neqo-transport/src/recovery/mod.rs", "    fn migrate(&mut self)")
	clears := r.has(r.fn("neqo-transport/src/recovery/mod.rs", "pub fn migrate(&mut self)"), "space.migrate()", "Loss::migrate migrates every packet-number space") &&
		r.has(space, "clear_primary_path()", "a space's migrate clears its packets' primary-path flag")
	mig := r.has(r.fn(connRS, "pub fn migrate("), "self.loss_recovery.migrate()", "client migration calls Loss::migrate")
	mig = r.has(r.fn(connRS, "fn input_frame(").span("Frame::PathResponse", "Frame::"), "self.loss_recovery.migrate()", "PATH_RESPONSE completing a migration calls Loss::migrate") || mig
	hm := r.fn(connRS, "fn handle_migration(")
	hmFound := r.body(hm, "server handle_migration defined")
	obs := r.has(hm, "self.loss_recovery.migrate()", "server handle_migration calls Loss::migrate")
	role3 := func(calls bool) string {
		switch {
		case !clears || !calls:
			return "NO"
		case gated && ccGated && lossGated:
			return "YES"
		case gated || ccGated || lossGated:
			return "SPLIT"
		}
		return "NO"
	}
	if !gated {
		out["Q3"] = r.decide("UNKNOWN", nil)
	} else {
		roles3 := map[string]string{"migrating": role3(mig), "observing": role3(obs)}
		if !hmFound {
			roles3["observing"] = "UNKNOWN"
		}
		out["Q3"] = r.decide(combineRoles(roles3), roles3)
	}
	return out
}
