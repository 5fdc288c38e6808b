package rules

import (
	"strings"

	"github.com/migaudit/migaudit/audit"
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
)

var s2nFiles = []string{s2nManager, s2nPath, s2nRecov, s2nRTT, s2nCubic, s2nMTU,
	"quic/s2n-quic-core/src/path/migration.rs", "quic/s2n-quic-core/src/connection/limits.rs"}

func init() {
	audit.Register("s2n-quic",
		n9Rule("s2n-quic/q1", "Server: handle_connection_migration builds a new Path with for_new_path RTT and a new controller; the port-only MAY is a marked TODO. Client: no migration API, path handle updated in place.", audit.Q1, s2nQ1),
		n9Rule("s2n-quic/q2", "Does on_path_response touch the RTT estimator?", audit.Q2, s2nQ2),
		n9Rule("s2n-quic/q3", "RTT, growth, loss and bytes in flight attributed by the packet's path_id.", audit.Q3, s2nQ3),
		n9Rule("s2n-quic/constants", "Cubic (the default) initial window, minimum window, BETA_CUBIC, DEFAULT_INITIAL_RTT.", audit.ConstInitialWindow, s2nConstants),
	)
}

func s2nObserving(x *n9) (n9Verdict, bool) {
	v := n9Verdict{}
	hcm, _, ok1 := x.fnIn(s2nManager, "handle_connection_migration", "")
	odr, _, ok2 := x.fnIn(s2nManager, "on_datagram_received", "")
	fnp, _, ok3 := x.fnIn(s2nRTT, "for_new_path", "RttEstimator")
	if !ok1 || !ok2 || !ok3 {
		return v, false
	}
	v.add(x.ev(hcm.Pos, "definition", "path::Manager::handle_connection_migration"))
	sites := x.callsIn(odr, "handle_connection_migration")
	v.count("handle_connection_migration_call_sites", len(x.calls("handle_connection_migration")))
	v.add(x.evCalls(sites, "call", "")...)
	if c, ok := x.callIn(hcm, "debug_assert!", "is_server"); ok {
		v.add(x.ev(c.Pos, "guard", "server only: "+c.Text))
	}
	for _, c := range x.conds(odr) {
		if strings.Contains(c.Text, "is_client()") {
			v.add(x.ev(c.Pos, "guard", c.Text+" -> Err(UnknownServerAddress) before handle_connection_migration"))
			break
		}
	}
	rtt, okR := x.assignIn(hcm, "rtt", "for_new_path(")
	cc, okC := x.assignIn(hcm, "cc", "new_congestion_controller(")
	np, okN := x.callIn(hcm, "new", "Path::new")
	inner, okI := x.callIn(fnp, "new_with_max_ack_delay")
	if okR {
		v.add(x.ev(rtt.Pos, "assignment", "rtt = "+rtt.RHS))
	}
	if okI {
		v.add(x.ev(inner.Pos, "call", "for_new_path carries only max_ack_delay: "+inner.Text))
	}
	if okC {
		v.add(x.ev(cc.Pos, "assignment", "cc = "+cc.RHS))
	}
	if okN {
		v.add(x.ev(np.Pos, "call", "new Path with that RTT estimator and controller"))
	}
	if okR && okC && okN && okI && strings.Contains(inner.Text, "initial_rtt") {
		v.Answer = audit.Yes
		v.Mechanism = "per-path state: handle_connection_migration creates a new Path whose RttEstimator is for_new_path(initial_round_trip_time) and whose controller is new_congestion_controller(path_info)"
	} else {
		v.Answer = audit.No
		v.Mechanism = "handle_connection_migration does not build fresh RTT/CC state"
	}
	// The port-only exemption is a compliance annotation marked TODO.
	todo := x.commentsIn(s2nManager, hcm.Line, hcm.EndLine, "type=TODO")
	for _, t := range todo {
		if next := x.commentsIn(s2nManager, t.Line+1, t.Line+3, "port-only"); len(next) > 0 {
			v.add(x.ev(t.Pos, "comment", "compliance annotation type=TODO"), x.ev(next[0].Pos, "comment", n9OneLine(next[0].Context)))
			v.note("Port-only exemption not implemented: the RFC 9000 §9.4 MAY (retain state on a port-only change) is annotated `type=TODO`, so a NAT rebinding also gets a fresh path.")
			v.count("port_only_exemption", 0)
			break
		}
	}
	if c := x.commentsIn(s2nManager, hcm.Line, hcm.EndLine, "separate congestion controller"); len(c) > 0 {
		v.add(x.ev(c[0].Pos, "comment", n9OneLine(c[0].Context)))
	}
	if d := x.optFn("quic/s2n-quic-core/src/path/migration.rs", "on_migration_attempt", "Validator"); d.Line > 0 {
		v.add(x.ev(d.Pos, "setting", "default migration validator (allows except blocked ports / port-scope changes)"))
	}
	return v, true
}

func s2nMigrating(x *n9) (n9Verdict, bool) {
	v := n9Verdict{}
	odr, _, ok := x.fnIn(s2nPath, "on_datagram_received", "Path")
	if !ok {
		return v, false
	}
	mu, okM := x.callIn(odr, "maybe_update")
	if okM {
		v.add(x.ev(mu.Pos, "call", "client: "+n9GuardText(mu.Guards)))
	}
	var api []syntax.Call
	for _, n := range []string{"migrate", "rebind", "local_address_changed", "path_changed"} {
		api = append(api, x.calls(n)...)
	}
	v.count("client_migration_api_calls", len(api))
	if okM && strings.Contains(n9GuardText(mu.Guards), "is_client()") && len(api) == 0 {
		v.Answer = audit.No
		v.Mechanism = "no client migration API: a client whose local address changes keeps its single Path and updates the handle in place (Path::on_datagram_received -> handle.maybe_update), RTT and controller untouched"
	} else {
		v.Answer = audit.Unknown
		v.Mechanism = "client-side path handling not recognised"
	}
	return v, true
}

func s2nQ1(p *audit.Pass) ([]audit.Finding, error) {
	x, err := n9Open(p, s2nFiles...)
	if err != nil {
		return nil, err
	}
	o, ok1 := s2nObserving(x)
	m, ok2 := s2nMigrating(x)
	if !ok1 || !ok2 {
		return x.absent(audit.Q1), nil
	}
	fm, fo := x.finding(audit.Q1, n9Migrating, m), x.finding(audit.Q1, n9Observing, o)
	hcm := x.optFn(s2nManager, "handle_connection_migration", "")
	h := x.hook("path::Manager::handle_connection_migration", "creates the new Path with fresh RTT estimator and controller", []syntax.Def{hcm},
		n9Filter(x.calls("handle_connection_migration"), func(c syntax.Call) bool { return c.Func != "handle_connection_migration" }))
	return []audit.Finding{fm, fo, x.combined(audit.Q1, fm, fo), h}, nil
}

func s2nQ2(p *audit.Pass) ([]audit.Finding, error) {
	x, err := n9Open(p, s2nFiles...)
	if err != nil {
		return nil, err
	}
	mgr, _, ok1 := x.fnIn(s2nManager, "on_path_response", "")
	pth, _, ok2 := x.fnIn(s2nPath, "on_path_response", "Path")
	if !ok1 || !ok2 {
		return x.absent(audit.Q2), nil
	}
	v := n9Verdict{}
	v.add(x.ev(mgr.Pos, "handler", "path::Manager::on_path_response"), x.ev(pth.Pos, "handler", "Path::on_path_response"))
	if hit := append(x.touches(mgr, "rtt_estimator", "update_rtt", "for_new_path"), x.touches(pth, "rtt_estimator", "update_rtt")...); len(hit) > 0 {
		v.Answer, v.Mechanism = audit.Yes, "PATH_RESPONSE handling touches "+strings.Join(hit, ", ")
	} else {
		v.Answer, v.Mechanism = audit.No, "PATH_RESPONSE marks the path validated (and unblocks amplification); the new path's RttEstimator keeps initial_round_trip_time"
	}
	return []audit.Finding{x.finding(audit.Q2, n9Both, v)}, nil
}

func s2nQ3(p *audit.Pass) ([]audit.Finding, error) {
	x, err := n9Open(p, s2nFiles...)
	if err != nil {
		return nil, err
	}
	ucc, _, ok1 := x.fnIn(s2nRecov, "update_congestion_control", "")
	pna, _, ok2 := x.fnIn(s2nRecov, "process_new_acked_packets", "")
	rlp, _, ok3 := x.fnIn(s2nRecov, "remove_lost_packets", "")
	if !ok1 || !ok2 || !ok3 {
		return x.absent(audit.Q3), nil
	}
	var as []n9Aspect
	if a, ok := x.assignIn(ucc, "should_update_rtt", "path_id"); ok {
		as = append(as, n9Aspect{"rtt", audit.Yes, "should_update_rtt &= current path == path of the largest newly acked packet", []audit.Evidence{x.ev(a.Pos, "assignment", a.LHS+" "+a.Op+" "+a.RHS)}})
	} else {
		as = append(as, n9Aspect{"rtt", audit.No, "RTT update not gated by path", []audit.Evidence{x.ev(ucc.Pos, "definition", "")}})
	}
	if c, ok := x.cond(pna, "path_id == current_path_id"); ok {
		ev := []audit.Evidence{x.ev(c.Pos, "guard", c.Text)}
		if oa, ok := x.callIn(pna, "on_ack"); ok {
			ev = append(ev, x.ev(oa.Pos, "call", "other paths' packets go to their own controller: "+n9GuardText(oa.Guards)))
		}
		as = append(as, n9Aspect{"growth", audit.Yes, "acked bytes count for the current path's controller only when sent on it; others are credited to their own path", ev})
	} else {
		as = append(as, n9Aspect{"growth", audit.No, "acked bytes not attributed by path", []audit.Evidence{x.ev(pna.Pos, "definition", "")}})
	}
	if c, ok := x.callIn(rlp, "path_mut_by_id", "sent_info.path_id"); ok {
		ev := []audit.Evidence{x.ev(c.Pos, "call", "loss charged to the path the packet was sent on")}
		if pl, ok := x.callIn(rlp, "on_packet_lost"); ok {
			ev = append(ev, x.ev(pl.Pos, "call", "on_packet_lost of that path's controller"))
		}
		as = append(as, n9Aspect{"loss", audit.Yes, "each lost packet reduces the controller of the path it was sent on", ev})
		as = append(as, n9Aspect{"inflight", audit.Yes, "bytes in flight are per path and released on the sending path's controller", ev[:1]})
	} else {
		as = append(as, n9Aspect{"loss", audit.No, "loss not attributed by path", nil}, n9Aspect{"inflight", audit.No, "bytes in flight not attributed by path", nil})
	}
	of, aux := x.q3(n9Observing, "per-path state with per-packet path_id attribution in recovery::Manager", as)
	m, ok := s2nMigrating(x)
	if !ok {
		return x.absent(audit.Q3), nil
	}
	m.Mechanism = "the client keeps one Path across a local address change, so old-path packets feed the same estimators"
	fm := x.finding(audit.Q3, n9Migrating, m)
	out := []audit.Finding{fm, of, x.combined(audit.Q3, fm, of)}
	return append(out, aux...), nil
}

func s2nConstants(p *audit.Pass) ([]audit.Finding, error) {
	x, err := n9Open(p, s2nFiles...)
	if err != nil {
		return nil, err
	}
	iw, _, ok1 := x.fnIn(s2nCubic, "initial_window", "")
	mw, _, ok2 := x.fnIn(s2nCubic, "minimum_window", "Cubic")
	if !ok1 || !ok2 {
		return x.absent(audit.ConstInitialWindow), nil
	}
	def, okD := x.assignIn(iw, "default", "INITIAL_WINDOW_LIMIT")
	if !okD {
		x.missing = append(x.missing, "let default in cubic initial_window")
		return x.absent(audit.ConstInitialWindow), nil
	}
	// S = InitialMtu::default().max_datagram_size(ipv4) = (MINIMUM_MTU - UDP_HEADER_LEN - IPV4_MIN_HEADER_LEN).max(MINIMUM_MAX_DATAGRAM_SIZE)
	mds, okM := x.lineWith(s2nMTU, 1, "u16::from(*self) - UDP_HEADER_LEN - min_ip_header_len")
	initMtu, okI := x.lineWith(s2nMTU, 1, "DEFAULT_INITIAL_MTU: InitialMtu", "MINIMUM_MTU")
	if !okM || !okI {
		x.missing = append(x.missing, "InitialMtu default / max_datagram_size in mtu.rs")
		return x.absent(audit.ConstInitialWindow), nil
	}
	r := x.resolver(nil)
	s, err := r.eval("(MINIMUM_MTU - UDP_HEADER_LEN - IPV4_MIN_HEADER_LEN).max(MINIMUM_MAX_DATAGRAM_SIZE)")
	if err != nil {
		return nil, err
	}
	sEv := []audit.Evidence{x.ev(initMtu, "setting", "InitialMtu default = MINIMUM_MTU"), x.ev(mds, "definition", "max_datagram_size = MTU - UDP - IPv4 header, at least MINIMUM_MAX_DATAGRAM_SIZE")}
	for _, d := range r.defs {
		sEv = append(sEv, x.ev(d.Pos, "definition", d.Name))
	}
	par := map[string]n9Param{"max_datagram_size": {"S", s}}
	mech := "S = max_datagram_size of the default InitialMtu on IPv4"
	var out []audit.Finding
	f, err := x.resolver(par).constant(audit.ConstInitialWindow, def.RHS, def.Pos, "Cubic initial_window (RFC 9002 §7.2)", mech, false)
	if err != nil {
		return nil, err
	}
	f.Evidence = n9Dedupe(append(f.Evidence, sEv...))
	if pos, ok := x.lineWith(s2nDefCC, 1, "type Default = Cubic"); ok {
		f.Evidence = append(f.Evidence, x.ev(pos, "setting", "default congestion controller"))
	}
	out = append(out, f)
	f, err = x.resolver(par).constant(audit.ConstMinWindow, n9TailExpr(mw), x.exprPos(mw, n9TailExpr(mw)), "Cubic minimum_window", mech, false)
	if err != nil {
		return nil, err
	}
	out = append(out, f)
	if b, ok := x.def("BETA_CUBIC"); ok {
		f, err = x.resolver(nil).constant(audit.ConstLossFactor, b.Value, b.Pos, "BETA_CUBIC", "cwnd_start = cwnd * BETA_CUBIC on a congestion event", false)
		if err != nil {
			return nil, err
		}
		out = append(out, f)
	}
	if d, ok := x.def("DEFAULT_INITIAL_RTT"); ok {
		f, err = x.resolver(nil).constant(audit.ConstDefaultRTT, d.Value, d.Pos, "DEFAULT_INITIAL_RTT (µs)", "Limits.initial_round_trip_time default, used by for_new_path", false)
		if err != nil {
			return nil, err
		}
		out = append(out, f)
	}
	return out, nil
}
