package validator

// quiche. Q1: every path owns its Recovery (Path.recovery, built fresh by
// Recovery::new_with_config in Path::new) and a migration is a switch to a
// path created by Path::new for the new 4-tuple → YES (a new path is born
// at the initial window and RTT; nothing needs resetting). Q2:
// Path::on_response_received touches no RTT → NO. Q3: the estimators are
// per path (Recovery is a Path field, the Connection has none), so old-path
// ACKs feed the old path's estimators → YES. Before 0.15.0: no path.rs,
// PATH_RESPONSE dropped → NOT_SUPPORTED.
func init() { deciders["quiche"] = decideQuiche }

func decideQuiche(r *reader) map[string]Decision {
	out := map[string]Decision{}
	const pathRS, libRS = "quiche/src/path.rs", "quiche/src/lib.rs"
	// Before connection migration (3e719a33, released in 0.15.0) there is
	// no path.rs and the frame handler drops PATH_RESPONSE.
	if _, err := r.t.lines(pathRS); err != nil {
		for _, q := range []string{"Q1", "Q2", "Q3"} {
			r.see(r.file(pathRS), 0, "per-path state (quiche/src/path.rs)")
			if r.has(r.file(libRS), "frame::Frame::PathResponse { .. } => (),", "PATH_RESPONSE ignored: no connection migration") {
				out[q] = r.decide("NOT_SUPPORTED", nil)
			} else {
				out[q] = r.decide("UNKNOWN", nil)
			}
		}
		return out
	}
	field := r.has(r.fn(pathRS, "pub struct Path {"), "pub recovery: recovery::Recovery,", "Recovery is a field of Path")
	fresh := r.has(r.fn(pathRS, "pub fn new("), "recovery::Recovery::new_with_config(", "Path::new builds a fresh Recovery")
	created := r.has(r.fn(libRS, "fn get_or_create_recv_path_id("), "path::Path::new(", "a datagram from a new 4-tuple creates a Path")
	created = r.has(r.fn(libRS, "fn create_path_on_client("), "path::Path::new(", "a client's probe creates a Path") || created
	// generic (`Connection<F = …>`) since 0.24.0 (a974af38), plain before
	conn := r.fnAny(libRS, "pub struct Connection<", "pub struct Connection {")
	connFound := r.body(conn, "struct Connection defined")
	connWide := r.has(conn, "recovery: recovery::Recovery", "the Connection holds a Recovery of its own")
	switch {
	case !connFound:
		out["Q1"] = r.decide("UNKNOWN", nil)
	case field && fresh && created && !connWide:
		out["Q1"] = r.decide("YES", nil)
	case field && fresh && created:
		out["Q1"] = r.decide("UNKNOWN", nil)
	default:
		out["Q1"] = r.decide("NO", nil)
	}

	resp := r.fn(pathRS, "pub fn on_response_received(&mut self, data: [u8; 8]) -> bool {")
	switch {
	case !r.body(resp, "Path::on_response_received (PATH_RESPONSE)"):
		out["Q2"] = r.decide("UNKNOWN", nil)
	case r.has(resp, "rtt", "PATH_RESPONSE handling touches an RTT"):
		out["Q2"] = r.decide("YES", nil)
	default:
		out["Q2"] = r.decide("NO", nil)
	}

	field = r.has(r.fn(pathRS, "pub struct Path {"), "pub recovery: recovery::Recovery,", "RTT and congestion state are per path (Path.recovery)")
	r.body(conn, "struct Connection defined")
	connWide = r.has(conn, "recovery: recovery::Recovery", "the Connection holds a Recovery of its own")
	switch {
	case !connFound:
		out["Q3"] = r.decide("UNKNOWN", nil)
	case field && !connWide:
		out["Q3"] = r.decide("YES", nil)
	case field:
		out["Q3"] = r.decide("UNKNOWN", nil)
	default:
		out["Q3"] = r.decide("NO", nil)
	}
	return out
}
