package validator

// tquic. The public Connection::migrate_path is a stub ("// TODO: support
// migration", Err(InternalError)): migrating NOT_SUPPORTED. A validated new
// path becomes active only with multipath (set_active(multipath)), and the
// path set defaults to is_multipath: false: observing NOT_SUPPORTED. Q1 →
// NOT_SUPPORTED. Q2: PATH_RESPONSE seeds the validated path's RTT from the
// challenge round trip (try_set_init_rtt), but without multipath that path
// never governs the connection → INERT (before v1.0.0 it seeds nothing, and
// the path still never becomes active → NOT_SUPPORTED). Q3: nothing migrates, so there is
// no new path for old-path packets to contaminate → N/A.
func init() { deciders["tquic"] = decideTquic }

func decideTquic(r *reader) map[string]Decision {
	out := map[string]Decision{}
	const conn, path = "src/connection/connection.rs", "src/connection/path.rs"
	mp := r.fn(conn, "pub fn migrate_path(")
	r.body(mp, "Connection::migrate_path (the public migration API)")
	stub := r.has(mp, "// TODO: support migration", "migrate_path is a TODO") && r.has(mp, "Err(Error::InternalError)", "migrate_path returns InternalError")
	resp := r.fn(path, "fn on_path_resp_received(&mut self, data: [u8; 8], multipath: bool)")
	r.body(resp, "Path::on_path_resp_received")
	onlyMP := r.has(resp, "self.set_active(multipath);", "a validated path becomes active only with multipath")
	offByDefault := r.has(r.file(path), "is_multipath: false,", "multipath off by default")
	neverSwitches := onlyMP && offByDefault
	roles := map[string]string{"migrating": "UNKNOWN", "observing": "UNKNOWN"}
	if mp.ok() && stub {
		roles["migrating"] = "NOT_SUPPORTED"
	}
	if neverSwitches {
		roles["observing"] = "NOT_SUPPORTED"
	}
	out["Q1"] = r.decide(combineRoles(roles), roles)

	seeds := r.has(resp, "self.recovery.rtt.try_set_init_rtt(initial_rtt);", "PATH_RESPONSE seeds the path's initial RTT from the challenge round trip")
	switch {
	case !resp.ok():
		out["Q2"] = r.decide("UNKNOWN", nil)
	case seeds && neverSwitches:
		out["Q2"] = r.decide("INERT", nil)
	case seeds:
		out["Q2"] = r.decide("YES", nil)
	case neverSwitches:
		// Before v1.0.0 (#349) the response seeds nothing, and the path
		// it validates never becomes active either.
		out["Q2"] = r.decide("NOT_SUPPORTED", nil)
	default:
		out["Q2"] = r.decide("NO", nil)
	}

	r.see(resp, boolLine(neverSwitches, resp.find("self.set_active(multipath);")), "the active path never changes without multipath")
	if neverSwitches && stub {
		out["Q3"] = r.decide("N/A", nil)
	} else {
		out["Q3"] = r.decide("UNKNOWN", nil)
	}
	return out
}
