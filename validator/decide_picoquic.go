package validator

// picoquic. Q1: the reset notification is handled by the algorithms but no
// alg_notify call passes picoquic_congestion_notification_reset (the
// validator's own symbol counter finds 0 dispatches) → NO. Q2: the
// path-challenge round trip is passed with epoch -1 to
// picoquic_update_path_rtt, whose guard `!old_path->rtt_is_initialized ||
// epoch >= 0` is false on a path that already has a sample → INERT.
// Before tuples (2025-03) a new address had its own path object: Q1 YES
// (promotion runs alg_init), Q2 YES (the challenge seeds the new path,
// which has no sample), Q3 YES (ACK samples go to the sending path).
// Q3: a migration promotes a tuple within the same path object
// (path_x->first_tuple = tuple) and the ACK RTT sample is keyed by the
// acknowledged path, not the tuple → NO.
func init() { deciders["picoquic"] = decidePicoquic }

func decidePicoquic(r *reader) map[string]Decision {
	out := map[string]Decision{}
	const sym = "picoquic_congestion_notification_reset"
	sites, err := findSites(r.t, sym, "notification")
	rc := countReach(sites, "notification")
	hdr := r.file("picoquic/picoquic.h")
	// Before the tuple structure (2025-03) a new address had its own path
	// object, and promoting it to the default ran the algorithm's init.
	tuples := r.file("picoquic/picoquic_internal.h").find("} picoquic_tuple_t;") > 0
	promote := r.fn("picoquic/quicctx.c", "void picoquic_promote_path_to_default(")
	switch {
	case !tuples && promote.ok():
		r.facts = append(r.facts, "no picoquic_tuple_t: a path object per address")
		// alg_init(path_x, …) until 2024, alg_init(cnx, path_x, …) since.
		if r.see(promote, promote.find("->alg_init(path_x")+promote.find("->alg_init(cnx, path_x"), "promotion to the default path runs alg_init on the new path") {
			out["Q1"] = r.decide("YES", nil)
		} else {
			out["Q1"] = r.decide("NO", nil)
		}
	case err != nil || !r.has(hdr, sym, "reset notification declared"):
		out["Q1"] = r.decide("UNKNOWN", nil)
	case len(rc.Calls) == 0:
		r.facts = append(r.facts, "0 dispatches of "+sym+" (handled in "+itoa(rc.HandlerUnits)+" files)")
		out["Q1"] = r.decide("NO", nil)
	default:
		r.facts = append(r.facts, itoa(len(rc.Calls))+" dispatches of "+sym+", first at "+rc.Calls[0].Path+":"+itoa(rc.Calls[0].Line))
		out["Q1"] = r.decide("YES", nil)
	}

	frames := r.file("picoquic/frames.c")
	if !tuples && frames.find("path_x->smoothed_rtt == PICOQUIC_INITIAL_RTT") > 0 {
		// Pre-tuple shape: the challenge round trip seeds a path that has
		// no sample yet, which a new path never has.
		if r.has(frames, "picoquic_update_path_rtt(cnx, path_x, path_x, path_x->challenge_time_first,", "path-challenge round trip seeds the new path's RTT while it has no sample") {
			out["Q2"] = r.decide("YES", nil)
		}
	} else if !tuples && promote.ok() && frames.find("picoquic_update_path_rtt(cnx, path_x, path_x, -1, path_x->challenge_time_first,") > 0 {
		// Later pre-tuple shape: epoch -1, gated by !rtt_is_initialized in
		// timing.c, which a new path object has not.
		if r.has(frames, "picoquic_update_path_rtt(cnx, path_x, path_x, -1, path_x->challenge_time_first,", "path-challenge round trip passed with epoch -1 for the new path object") &&
			r.has(r.file("picoquic/timing.c"), "(!old_path->rtt_is_initialized || epoch >= 0)", "applied while the path has no sample") {
			out["Q2"] = r.decide("YES", nil)
		}
	}
	challenge := r.has(frames, "-1, tuple->challenge_time_first", "path-challenge round trip passed to picoquic_update_path_rtt with epoch -1")
	guard := r.has(r.file("picoquic/timing.c"), "(!old_path->rtt_is_initialized || epoch >= 0)", "RTT update guarded by !rtt_is_initialized || epoch >= 0")
	switch {
	case out["Q2"].Answer != "":
		r.facts = nil
	case challenge && guard:
		out["Q2"] = r.decide("INERT", nil)
	case challenge:
		out["Q2"] = r.decide("YES", nil)
	default:
		out["Q2"] = r.decide("NO", nil)
	}

	if !tuples && promote.ok() {
		// A path object per address: ACK samples and acknowledgements go to
		// the path the acked packet was sent on, so the new path's
		// estimators see only its own packets.
		r.facts = nil
		if r.has(frames, "picoquic_update_path_rtt(cnx, packet_data->path_ack[i].acked_path,", "ACK RTT sample keyed by the path the packet was sent on") &&
			r.has(frames, "alg_notify(cnx, packet_data->path_ack[i].acked_path,", "acknowledgement notified to the path the packet was sent on") {
			out["Q3"] = r.decide("YES", nil)
		} else {
			out["Q3"] = r.decide("UNKNOWN", nil)
		}
		return out
	}
	promoted := r.has(frames, "path_x->first_tuple = tuple;", "migration promotes the tuple within the same path")
	keyed := r.has(frames, "picoquic_update_path_rtt(cnx, packet_data->path_ack[i].acked_path,", "ACK RTT sample keyed by the acknowledged path object")
	if promoted && keyed {
		out["Q3"] = r.decide("NO", nil)
	} else {
		out["Q3"] = r.decide("UNKNOWN", nil)
	}
	return out
}

func itoa(n int) string { return fmtInt(n) }
