package rules

import (
	"strings"

	"github.com/migaudit/migaudit/audit"
	"github.com/migaudit/migaudit/audit/query"
	"github.com/migaudit/migaudit/audit/syntax"
)

// s2n-quic (aws/s2n-quic, Rust). Per-path state: path::Manager keeps one Path
// per peer address, each with its own RttEstimator and congestion controller,
// and every packet records the path it was sent on. Only a server follows a
// peer's migration (handle_connection_migration); the client has no
// migration API and updates its path handle in place.

const (
	s2nManager = "quic/s2n-quic-transport/src/path/manager.rs"
	s2nPath    = "quic/s2n-quic-transport/src/path/mod.rs"
	s2nRecov   = "quic/s2n-quic-transport/src/recovery/manager.rs"
	s2nRTT     = "quic/s2n-quic-core/src/recovery/rtt_estimator.rs"
	s2nCubic   = "quic/s2n-quic-core/src/recovery/cubic.rs"
	s2nMTU     = "quic/s2n-quic-core/src/path/mtu.rs"
	s2nDefCC   = "quic/s2n-quic/src/provider/congestion_controller.rs"
	// before path/mtu.rs (1.3x and earlier): MINIMUM_MTU in the core path
	// module, a new controller's max_datagram_size in PathInfo
	s2nCorePath = "quic/s2n-quic-core/src/path/mod.rs"
	s2nCCInfo   = "quic/s2n-quic-core/src/recovery/congestion_controller.rs"
)

var s2nFiles = []string{s2nManager, s2nPath, s2nRecov, s2nRTT, s2nCubic, s2nMTU,
	"quic/s2n-quic-core/src/path/migration.rs", "quic/s2n-quic-core/src/connection/limits.rs"}

func init() { query.Register("s2n-quic", s2nQ1, s2nQ2, s2nQ3, s2nConstants) }

var s2nObservingNeeds = []query.Anchor{query.FuncIn(s2nManager, "handle_connection_migration", ""), query.FuncIn(s2nManager, "on_datagram_received", "")}

// s2nObserving: the server's handle_connection_migration. The new path's
// estimator is RttEstimator::for_new_path(initial_round_trip_time) since
// 1.3x; before, RttEstimator::new(max_ack_delay), which starts every field
// at DEFAULT_INITIAL_RTT.
func s2nObserving(x *query.Code) query.Verdict {
	v := query.Verdict{}
	d := x.Defs(s2nObservingNeeds...)
	hcm, odr := d[0], d[1]
	v.Add(x.Evidence(hcm.Pos, "definition", "path::Manager::handle_connection_migration"))
	sites := x.CallsIn(odr, "handle_connection_migration")
	v.Count("handle_connection_migration_call_sites", len(x.Calls("handle_connection_migration")))
	v.Add(x.CallEvidence(sites, "call", "")...)
	if c, ok := x.CallIn(hcm, "debug_assert!", "is_server"); ok {
		v.Add(x.Evidence(c.Pos, "guard", "server only: "+c.Text))
	}
	for _, c := range x.Conds(odr) {
		if strings.Contains(c.Text, "is_client()") {
			v.Add(x.Evidence(c.Pos, "guard", c.Text+" -> Err(UnknownServerAddress) before handle_connection_migration"))
			break
		}
	}
	rtt, okR := x.AssignIn(hcm, "rtt", "for_new_path(")
	cc, okC := x.AssignIn(hcm, "cc", "new_congestion_controller(")
	np, okN := x.CallIn(hcm, "new", "Path::new")
	fresh := "for_new_path(initial_round_trip_time)"
	var okI bool
	if fnp, ok := x.Lookup(query.FuncIn(s2nRTT, "for_new_path", "RttEstimator")); ok && okR {
		v.Add(x.Evidence(rtt.Pos, "assignment", "rtt = "+rtt.RHS))
		inner, ok := x.CallIn(fnp, "new_with_max_ack_delay")
		if ok {
			v.Add(x.Evidence(inner.Pos, "call", "for_new_path carries only max_ack_delay: "+inner.Text))
		}
		okI = ok && strings.Contains(inner.Text, "initial_rtt")
	} else if a, ok := x.AssignIn(hcm, "rtt", "RttEstimator::new("); ok {
		okR = true
		v.Add(x.Evidence(a.Pos, "assignment", "rtt = "+a.RHS))
		fresh = "RttEstimator::new(max_ack_delay)"
		if nd, ok := x.Lookup(query.FuncIn(s2nRTT, "new", "RttEstimator")); ok {
			if init, ok := x.AssignIn(nd, "smoothed_rtt", "DEFAULT_INITIAL_RTT"); ok {
				v.Add(x.Evidence(init.Pos, "assignment", "RttEstimator::new: "+init.LHS+" = "+init.RHS))
				fresh += ", which starts at DEFAULT_INITIAL_RTT"
				okI = true
			}
		}
	}
	if okC {
		v.Add(x.Evidence(cc.Pos, "assignment", "cc = "+cc.RHS))
	}
	if okN {
		v.Add(x.Evidence(np.Pos, "call", "new Path with that RTT estimator and controller"))
	}
	if okR && okC && okN && okI {
		v.Answer = audit.Yes
		v.Mechanism = "per-path state: handle_connection_migration creates a new Path whose RttEstimator is " + fresh + " and whose controller is new_congestion_controller(path_info)"
	} else {
		v.Answer = audit.No
		v.Mechanism = "handle_connection_migration does not build fresh RTT/CC state"
	}
	// The port-only exemption is a compliance annotation marked TODO.
	todo := x.CommentsIn(s2nManager, hcm.Line, hcm.EndLine, "type=TODO")
	for _, t := range todo {
		if next := x.CommentsIn(s2nManager, t.Line+1, t.Line+3, "port-only"); len(next) > 0 {
			v.Add(x.Evidence(t.Pos, "comment", "compliance annotation type=TODO"), x.Evidence(next[0].Pos, "comment", query.OneLine(next[0].Context)))
			v.Note("Port-only exemption not implemented: the RFC 9000 §9.4 MAY (retain state on a port-only change) is annotated `type=TODO`, so a NAT rebinding also gets a fresh path.")
			v.Count("port_only_exemption", 0)
			break
		}
	}
	if c := x.CommentsIn(s2nManager, hcm.Line, hcm.EndLine, "separate congestion controller"); len(c) > 0 {
		v.Add(x.Evidence(c[0].Pos, "comment", query.OneLine(c[0].Context)))
	}
	if d := x.Opt(query.FuncIn("quic/s2n-quic-core/src/path/migration.rs", "on_migration_attempt", "Validator")); d.Line > 0 {
		v.Add(x.Evidence(d.Pos, "setting", "default migration validator (allows except blocked ports / port-scope changes)"))
	}
	return v
}

var s2nMigratingNeeds = []query.Anchor{query.FuncIn(s2nPath, "on_datagram_received", "Path")}

// Before Path::on_datagram_received (1.5x), path::Manager looks a datagram's
// path up with Path::eq_by_handle, which for a client compares the remote
// address only: a client whose local address changed finds its one Path.
var s2nLookupNeeds = []query.Anchor{query.FuncIn(s2nPath, "eq_by_handle", "Path")}

const (
	s2nDesignPath   = "Path::on_datagram_received updates a client's handle in place"
	s2nDesignLookup = "before Path::on_datagram_received: a client's path found by remote address (Path::eq_by_handle)"
)

func s2nClientLookup(x *query.Code) query.Verdict {
	v := query.Verdict{}
	eq := x.Defs(s2nLookupNeeds...)[0]
	c, ok := x.CondIn(eq, "is_client()")
	var api []syntax.Call
	for _, n := range []string{"migrate", "rebind", "local_address_changed", "path_changed"} {
		api = append(api, x.Calls(n)...)
	}
	v.Count("client_migration_api_calls", len(api))
	if ok {
		v.Add(x.Evidence(c.Pos, "guard", c.Text))
	}
	if mu, okM := x.CallIn(x.Opt(query.FuncIn(s2nManager, "on_datagram_received", "")), "maybe_update"); okM {
		v.Add(x.Evidence(mu.Pos, "call", "the found path's handle updated in place"))
	}
	if !ok && len(api) == 0 {
		// 1.19-1.25: only a path whose local address is still unknown is
		// matched by remote address; otherwise the full handle must match,
		// and a client's datagram on another local address is dropped.
		c, okP := x.CondIn(eq, "local_address().port() == 0")
		var drop syntax.Call
		for _, r := range x.CallsIn(x.Opt(query.FuncIn(s2nManager, "on_datagram_received", "")), "Err") {
			if strings.Contains(r.Text, "UnknownServerAddress") && strings.Contains(query.GuardText(r.Guards), "is_client()") {
				drop = r
			}
		}
		if okP && drop.Line > 0 {
			v.Add(x.Evidence(c.Pos, "guard", c.Text), x.Evidence(drop.Pos, "call", "client: "+drop.Text))
			v.Answer = audit.No
			v.Mechanism = "no client migration API: once its local address is known a client's datagrams must match its Path's full handle (Path::eq_by_handle), and one arriving on another local address is dropped (UnknownServerAddress): the single Path, RTT and controller are never reset"
			return v
		}
	}
	v.AnswerIf(ok && len(api) == 0 && len(x.Touches(eq, "remote_address")) > 0, audit.No,
		"no client migration API: a client's datagrams are matched to its Path by the remote address only (Path::eq_by_handle under is_client()), so a local address change keeps the single Path, RTT and controller untouched",
		"client-side path lookup not recognised")
	return v
}

func s2nMigrating(x *query.Code) query.Verdict {
	v := query.Verdict{}
	odr := x.Defs(s2nMigratingNeeds...)[0]
	mu, okM := x.CallIn(odr, "maybe_update")
	if okM {
		v.Add(x.Evidence(mu.Pos, "call", "client: "+query.GuardText(mu.Guards)))
	}
	var api []syntax.Call
	for _, n := range []string{"migrate", "rebind", "local_address_changed", "path_changed"} {
		api = append(api, x.Calls(n)...)
	}
	v.Count("client_migration_api_calls", len(api))
	v.AnswerIf(okM && strings.Contains(query.GuardText(mu.Guards), "is_client()") && len(api) == 0, audit.No,
		"no client migration API: a client whose local address changes keeps its single Path and updates the handle in place (Path::on_datagram_received -> handle.maybe_update), RTT and controller untouched",
		"client-side path handling not recognised")
	return v
}

var s2nQ1 = query.Choose(s2nQ1For(s2nDesignPath, s2nMigratingNeeds, s2nMigrating), s2nQ1For(s2nDesignLookup, s2nLookupNeeds, s2nClientLookup))

func s2nQ1For(design string, migNeeds []query.Anchor, migrating func(*query.Code) query.Verdict) *query.Rule {
	return &query.Rule{
		Name: "s2n-quic/q1", Question: audit.Q1, Role: query.Both, Files: s2nFiles, Design: design,
		Doc:   "Server: handle_connection_migration builds a new Path with a fresh RTT estimator and a new controller; the port-only MAY is a marked TODO. Client: no migration API, path handle updated in place.",
		Needs: query.Join(s2nObservingNeeds, migNeeds),
		Decide: func(x *query.Code) ([]audit.Finding, error) {
			o := s2nObserving(x)
			m := migrating(x)
			fm, fo := x.RoleFinding(audit.Q1, query.Migrating, m), x.RoleFinding(audit.Q1, query.Observing, o)
			hcm := x.Opt(query.FuncIn(s2nManager, "handle_connection_migration", ""))
			what := "creates the new Path with fresh RTT estimator and controller"
			if o.Answer != audit.Yes {
				what = "creates the new Path (" + o.Mechanism + ")"
			}
			h := x.Hook("path::Manager::handle_connection_migration", what, []syntax.Def{hcm},
				query.Filter(x.Calls("handle_connection_migration"), func(c syntax.Call) bool { return c.Func != "handle_connection_migration" }))
			return append(x.PerRole(audit.Q1, fm, fo), h), nil
		},
	}
}

var s2nQ2 = &query.Rule{
	Name: "s2n-quic/q2", Question: audit.Q2, Role: query.Both, Files: s2nFiles,
	Doc:   "Does on_path_response touch the RTT estimator?",
	Needs: []query.Anchor{query.FuncIn(s2nManager, "on_path_response", ""), query.FuncIn(s2nPath, "on_path_response", "Path")},
	Decide: func(x *query.Code) ([]audit.Finding, error) {
		n := x.Needed()
		mgr, pth := n[0], n[1]
		v := query.Verdict{}
		v.Add(x.Evidence(mgr.Pos, "handler", "path::Manager::on_path_response"), x.Evidence(pth.Pos, "handler", "Path::on_path_response"))
		if hit := append(x.Touches(mgr, "rtt_estimator", "update_rtt", "for_new_path"), x.Touches(pth, "rtt_estimator", "update_rtt")...); len(hit) > 0 {
			v.Answer, v.Mechanism = audit.Yes, "PATH_RESPONSE handling touches "+strings.Join(hit, ", ")
		} else {
			v.Answer, v.Mechanism = audit.No, "PATH_RESPONSE marks the path validated (and unblocks amplification); the new path's RttEstimator keeps initial_round_trip_time"
			if _, ok := x.Lookup(query.FuncIn(s2nRTT, "for_new_path", "RttEstimator")); !ok {
				v.Mechanism = "PATH_RESPONSE marks the path validated (and unblocks amplification); the new path's RttEstimator keeps its initial RTT"
			}
		}
		return []audit.Finding{x.RoleFinding(audit.Q2, query.Both, v)}, nil
	},
}

var s2nQ3 = query.Choose(s2nQ3For(s2nDesignPath, s2nMigratingNeeds, s2nMigrating), s2nQ3For(s2nDesignLookup, s2nLookupNeeds, s2nClientLookup))

func s2nQ3For(design string, migNeeds []query.Anchor, migrating func(*query.Code) query.Verdict) *query.Rule {
	return &query.Rule{
		Name: "s2n-quic/q3", Question: audit.Q3, Role: query.Both, Files: s2nFiles, Design: design,
		Doc:   "RTT, growth, loss and bytes in flight attributed by the packet's path_id.",
		Needs: query.Join([]query.Anchor{query.FuncIn(s2nRecov, "update_congestion_control", ""), query.FuncIn(s2nRecov, "process_new_acked_packets", ""), query.FuncIn(s2nRecov, "remove_lost_packets", "")}, migNeeds),
		Decide: func(x *query.Code) ([]audit.Finding, error) {
			n := x.Needed()
			ucc, pna, rlp := n[0], n[1], n[2]
			var as []query.Aspect
			if a, ok := x.AssignIn(ucc, "should_update_rtt", "path_id"); ok {
				as = append(as, query.Aspect{Name: "rtt", Answer: audit.Yes, Why: "should_update_rtt &= current path == path of the largest newly acked packet", Ev: []audit.Evidence{x.Evidence(a.Pos, "assignment", a.LHS+" "+a.Op+" "+a.RHS)}})
			} else {
				as = append(as, query.Aspect{Name: "rtt", Answer: audit.No, Why: "RTT update not gated by path", Ev: []audit.Evidence{x.Evidence(ucc.Pos, "definition", "")}})
			}
			if c, ok := x.CondIn(pna, "path_id == current_path_id"); ok {
				ev := []audit.Evidence{x.Evidence(c.Pos, "guard", c.Text)}
				if oa, ok := x.CallIn(pna, "on_ack"); ok {
					ev = append(ev, x.Evidence(oa.Pos, "call", "other paths' packets go to their own controller: "+query.GuardText(oa.Guards)))
				}
				as = append(as, query.Aspect{Name: "growth", Answer: audit.Yes, Why: "acked bytes count for the current path's controller only when sent on it; others are credited to their own path", Ev: ev})
			} else {
				as = append(as, query.Aspect{Name: "growth", Answer: audit.No, Why: "acked bytes not attributed by path", Ev: []audit.Evidence{x.Evidence(pna.Pos, "definition", "")}})
			}
			if c, ok := x.CallIn(rlp, "path_mut_by_id", "sent_info.path_id"); ok {
				ev := []audit.Evidence{x.Evidence(c.Pos, "call", "loss charged to the path the packet was sent on")}
				if pl, ok := x.CallIn(rlp, "on_packet_lost"); ok {
					ev = append(ev, x.Evidence(pl.Pos, "call", "on_packet_lost of that path's controller"))
				}
				as = append(as, query.Aspect{Name: "loss", Answer: audit.Yes, Why: "each lost packet reduces the controller of the path it was sent on", Ev: ev})
				as = append(as, query.Aspect{Name: "inflight", Answer: audit.Yes, Why: "bytes in flight are per path and released on the sending path's controller", Ev: ev[:1]})
			} else {
				as = append(as, query.Aspect{Name: "loss", Answer: audit.No, Why: "loss not attributed by path", Ev: nil}, query.Aspect{Name: "inflight", Answer: audit.No, Why: "bytes in flight not attributed by path", Ev: nil})
			}
			m := migrating(x)
			if m.Answer == audit.No {
				m.Mechanism = "the client keeps one Path across a local address change, so old-path packets feed the same estimators"
			}
			mech := "per-path state with per-packet path_id attribution in recovery::Manager"
			if attributed := query.Filter(as, func(a query.Aspect) bool { return a.Answer == audit.Yes }); len(attributed) == 0 {
				mech = "no per-packet path attribution found in recovery::Manager: ACKs and losses feed the active path"
			}
			return x.Q3PerRole(mech, as, m), nil
		},
	}
}

var s2nConstants = &query.Rule{
	Name: "s2n-quic/constants", Question: audit.ConstInitialWindow, Role: query.Both, Files: append([]string{s2nCCInfo, s2nCorePath}, s2nFiles...),
	Doc:   "Cubic (the default) initial window, minimum window, BETA_CUBIC, DEFAULT_INITIAL_RTT.",
	Needs: []query.Anchor{query.FuncIn(s2nCubic, "initial_window", ""), query.FuncIn(s2nCubic, "minimum_window", "Cubic")},
	Decide: func(x *query.Code) ([]audit.Finding, error) {
		n := x.Needed()
		iw, mw := n[0], n[1]
		def, okD := x.AssignIn(iw, "default", "INITIAL_WINDOW_LIMIT")
		iwExpr, iwPos := def.RHS, def.Pos
		if !okD {
			// before application settings (1.3x and earlier) the formula is
			// initial_window's tail expression
			if t := query.TailExpr(iw); strings.Contains(t, "INITIAL_WINDOW_LIMIT") {
				iwExpr, iwPos, okD = t, x.ExprPos(iw, t), true
			}
		}
		if !okD {
			x.Missing("let default (or the tail expression) in cubic initial_window")
			return x.Absence()
		}
		// S = InitialMtu::default().max_datagram_size(ipv4) = (MINIMUM_MTU - UDP_HEADER_LEN - IPV4_MIN_HEADER_LEN).max(MINIMUM_MAX_DATAGRAM_SIZE)
		mds, okM := x.LineWith(s2nMTU, 1, "u16::from(*self) - UDP_HEADER_LEN - min_ip_header_len")
		initMtu, okI := x.LineWith(s2nMTU, 1, "DEFAULT_INITIAL_MTU: InitialMtu", "MINIMUM_MTU")
		if !okI {
			// rustfmt may break the constant after its type (1.4x-1.6x)
			if decl, ok := x.LineWith(s2nMTU, 1, "DEFAULT_INITIAL_MTU: InitialMtu"); ok {
				if v, ok := x.LineWith(s2nMTU, decl.Line, "MINIMUM_MTU"); ok && v.Line <= decl.Line+1 {
					initMtu, okI = v, true
				}
			}
		}
		r := x.Resolver(nil)
		var s float64
		var sEv []audit.Evidence
		mech := "S = max_datagram_size of the default InitialMtu on IPv4"
		switch pi, okP := x.LineWith(s2nCCInfo, 1, "max_datagram_size: MINIMUM_MTU"); {
		case okM && okI:
			v, err := r.Eval("(MINIMUM_MTU - UDP_HEADER_LEN - IPV4_MIN_HEADER_LEN).max(MINIMUM_MAX_DATAGRAM_SIZE)")
			if err != nil {
				return nil, err
			}
			s = v
			sEv = []audit.Evidence{x.Evidence(initMtu, "setting", "InitialMtu default = MINIMUM_MTU"), x.Evidence(mds, "definition", "max_datagram_size = MTU - UDP - IPv4 header, at least MINIMUM_MAX_DATAGRAM_SIZE")}
		case okP:
			// before InitialMtu (1.3x and earlier) a new controller's
			// PathInfo carries max_datagram_size: MINIMUM_MTU (1200, the
			// minimum UDP payload)
			v, err := r.Eval("MINIMUM_MTU")
			if err != nil {
				return nil, err
			}
			s = v
			sEv = []audit.Evidence{x.Evidence(pi, "setting", "PathInfo::new: max_datagram_size = MINIMUM_MTU")}
			mech = "S = PathInfo's max_datagram_size, MINIMUM_MTU"
		default:
			x.Missing("InitialMtu default / max_datagram_size in mtu.rs, or PathInfo's max_datagram_size")
			return x.Absence()
		}
		for _, d := range r.Defs() {
			sEv = append(sEv, x.Evidence(d.Pos, "definition", d.Name))
		}
		par := map[string]query.Param{"max_datagram_size": {Name: "S", Default: s}}
		var out []audit.Finding
		f, err := x.Resolver(par).Constant(audit.ConstInitialWindow, iwExpr, iwPos, "Cubic initial_window (RFC 9002 §7.2)", mech, false)
		if err != nil {
			return nil, err
		}
		f.Evidence = query.Dedupe(append(f.Evidence, sEv...))
		if pos, ok := x.LineWith(s2nDefCC, 1, "type Default = Cubic"); ok {
			f.Evidence = append(f.Evidence, x.Evidence(pos, "setting", "default congestion controller"))
		}
		out = append(out, f)
		f, err = x.Resolver(par).Constant(audit.ConstMinWindow, query.TailExpr(mw), x.ExprPos(mw, query.TailExpr(mw)), "Cubic minimum_window", mech, false)
		if err != nil {
			return nil, err
		}
		out = append(out, f)
		if b, ok := x.Const("BETA_CUBIC"); ok {
			f, err = x.Resolver(nil).Constant(audit.ConstLossFactor, b.Value, b.Pos, "BETA_CUBIC", "cwnd_start = cwnd * BETA_CUBIC on a congestion event", false)
			if err != nil {
				return nil, err
			}
			out = append(out, f)
		}
		if d, ok := x.Const("DEFAULT_INITIAL_RTT"); ok {
			use := "Limits.initial_round_trip_time default, used by for_new_path"
			if _, ok := x.Lookup(query.FuncIn(s2nRTT, "for_new_path", "RttEstimator")); !ok {
				use = "the starting smoothed RTT of every RttEstimator::new"
			}
			f, err = x.Resolver(nil).Constant(audit.ConstDefaultRTT, d.Value, d.Pos, "DEFAULT_INITIAL_RTT (µs)", use, false)
			if err != nil {
				return nil, err
			}
			out = append(out, f)
		}
		return out, nil
	},
}
