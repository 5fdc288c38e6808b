package rules

import (
	"fmt"
	"strings"

	"github.com/migaudit/migaudit/audit"
	"github.com/migaudit/migaudit/audit/syntax"
)

// quinn (quinn-rs/quinn, Rust). Per-path state: PathData owns its RttEstimator
// and congestion controller; the connection holds the active `path` and a
// `prev_path`. The server builds a fresh PathData when the peer migrates
// (unless only the port of an IPv4 peer changed); the client's Rebind only
// rotates the connection ID.

const (
	quinnConn  = "quinn-proto/src/connection/mod.rs"
	quinnPaths = "quinn-proto/src/connection/paths.rs"
)

var quinnFiles = []string{
	"quinn-proto/src/connection/*.rs", "quinn-proto/src/config/*.rs", "quinn-proto/src/congestion.rs",
	"quinn-proto/src/congestion/cubic.rs", "quinn-proto/src/lib.rs", "quinn/src/*.rs",
}

func init() {
	audit.Register("quinn",
		n9Rule("quinn/q1", "Per role: does a migration build fresh RTT/CC state (PathData::new) or keep it (from_previous, Rebind)? Also the public path_changed() hook and its call sites.", audit.Q1, quinnQ1),
		n9Rule("quinn/q2", "Does the PATH_RESPONSE handler touch the RTT estimator?", audit.Q2, quinnQ2),
		n9Rule("quinn/q3", "Which of RTT, congestion growth, loss reduction and bytes in flight are gated by the packet's path generation?", audit.Q3, quinnQ3),
		n9Rule("quinn/constants", "Cubic (the default controller) initial and minimum window, BETA_CUBIC, default initial RTT.", audit.ConstInitialWindow, quinnConstants),
	)
}

// quinnObserving: Connection::migrate at the server.
func quinnObserving(x *n9) (n9Verdict, bool) {
	v := n9Verdict{}
	mig, _, ok1 := x.fnIn(quinnConn, "migrate", "")
	newFn, _, ok2 := x.fnIn(quinnPaths, "new", "PathData")
	prev, _, ok3 := x.fnIn(quinnPaths, "from_previous", "PathData")
	if !ok1 || !ok2 || !ok3 {
		return v, false
	}
	v.add(x.ev(mig.Pos, "definition", "Connection::migrate"))
	sites := n9Filter(x.file(quinnConn).Calls("migrate"), func(c syntax.Call) bool { return c.Callee == "self.migrate" })
	v.count("migrate_call_sites", len(sites))
	for _, c := range sites {
		v.add(x.ev(c.Pos, "call", "in "+c.Func+": "+n9GuardText(c.Guards)))
		if s := x.stringsIn(x.optFn(quinnConn, c.Func, ""), "dropped by clients"); len(s) > 0 {
			v.add(x.ev(s[0], "guard", "server only: packets from an unknown remote are dropped by clients"))
		}
	}
	fresh, okF := x.callIn(mig, "new", "PathData::new")
	keep, okK := x.callIn(mig, "from_previous", "PathData::from_previous")
	rttNew, okR := x.fieldInit(newFn, "rtt")
	ccNew, okC := x.assignIn(newFn, "congestion", "build(")
	rttPrev, okRP := x.fieldInit(prev, "rtt")
	if okF {
		v.add(x.ev(fresh.Pos, "call", "fresh PathData for the new remote ("+n9GuardText(fresh.Guards)+")"))
	}
	if okR {
		v.add(x.ev(rttNew.Pos, "assignment", "rtt: "+rttNew.RHS))
	}
	if okC {
		v.add(x.ev(ccNew.Pos, "assignment", "congestion: fresh controller from the factory"))
	}
	if okF && okR && strings.Contains(rttNew.RHS, "RttEstimator::new") && okC {
		v.Answer = audit.Yes
		v.Mechanism = "per-path state: Connection::migrate builds PathData::new (RttEstimator::new(initial_rtt), fresh controller) for the new remote"
	} else {
		v.Answer = audit.No
		v.Mechanism = "Connection::migrate does not build fresh RTT/CC state"
	}
	if okK && len(keep.Guards) > 0 {
		g := keep.Guards[0]
		v.add(x.ev(keep.Pos, "call", "state carried over: from_previous"), x.ev(g.Pos, "guard", g.Cond))
		if okRP {
			v.add(x.ev(rttPrev.Pos, "assignment", "rtt: "+rttPrev.RHS+" (carried over)"))
		}
		if strings.Contains(g.Cond, "ip()") {
			exempt := "Port-only exemption implemented: the same peer IP keeps RTT and congestion state (PathData::from_previous)"
			if strings.Contains(g.Cond, "is_ipv4()") {
				exempt += ", for IPv4 peers only (an IPv6 port-only change resets)"
			}
			v.note("%s; guard `%s`.", exempt, g.Cond)
			v.count("port_only_exemption", 1)
		}
	}
	if d := x.optFn("quinn-proto/src/config/mod.rs", "default", "ServerConfig"); d.Line > 0 {
		if a, ok := x.fieldInit(d, "migration"); ok {
			v.add(x.ev(a.Pos, "setting", "ServerConfig.migration default "+a.RHS))
			v.note("Server-side migration is on by default (ServerConfig.migration = %s).", a.RHS)
		}
	}
	return v, true
}

// quinnMigrating: the client's Rebind.
func quinnMigrating(x *n9) (n9Verdict, bool) {
	v := n9Verdict{}
	lac, _, ok := x.fnIn(quinnConn, "local_address_changed", "")
	if !ok {
		return v, false
	}
	v.add(x.ev(lac.Pos, "definition", "Connection::local_address_changed"))
	sites := x.calls("local_address_changed")
	v.count("local_address_changed_call_sites", len(sites))
	for _, c := range sites {
		v.add(x.ev(c.Pos, "call", "in "+c.Func+": "+n9GuardText(c.Guards)))
	}
	calls := x.allCallsIn(lac)
	v.add(x.evCalls(calls, "call", "")...)
	if hit := x.touches(lac, "reset", "path_changed", "migrate", "from_previous", "rtt", "congestion"); len(hit) > 0 {
		v.Answer = audit.Yes
		v.Mechanism = "Rebind -> local_address_changed touches " + strings.Join(hit, ", ")
		return v, true
	}
	v.Answer = audit.No
	v.Mechanism = fmt.Sprintf("client Rebind -> local_address_changed() only calls %s: the PathData (RTT estimator, controller) is kept", strings.Join(n9Names(calls), ", "))
	return v, true
}

func quinnQ1(p *audit.Pass) ([]audit.Finding, error) {
	x, err := n9Open(p, quinnFiles...)
	if err != nil {
		return nil, err
	}
	obs, ok1 := quinnObserving(x)
	mig, ok2 := quinnMigrating(x)
	reset, _, ok3 := x.fnIn(quinnPaths, "reset", "PathData")
	if !ok1 || !ok2 || !ok3 {
		return x.absent(audit.Q1), nil
	}
	fo := x.finding(audit.Q1, n9Observing, obs)
	fm := x.finding(audit.Q1, n9Migrating, mig)
	out := []audit.Finding{fm, fo, x.combined(audit.Q1, fm, fo)}
	// Hooks: the public Connection::path_changed and PathData::reset behind it.
	h := x.hook("Connection::path_changed", "public API documented to reset the congestion controller, RTT estimator and MTU discovery",
		x.set.Funcs("path_changed"), x.calls("path_changed"))
	for _, a := range x.assignsIn(reset) {
		h.Evidence = append(h.Evidence, x.ev(a.Pos, "assignment", "PathData::reset assigns "+a.LHS))
	}
	exposed := 0
	for _, f := range x.set {
		if strings.HasPrefix(f.Path, "quinn/src/") {
			for _, m := range f.Mentions("path_changed") {
				if m.Kind != syntax.MentionComment && m.Kind != syntax.MentionString {
					exposed++
				}
			}
		}
	}
	h.Counts["mentions_in_quinn_crate"] = exposed
	if exposed == 0 {
		h.Detail = "Public only on quinn_proto::Connection: the high-level quinn crate neither calls nor re-exposes it, and quinn's own Rebind path (local_address_changed) does not use it."
	}
	out = append(out, h)
	resetCalls := n9Filter(x.calls("reset"), func(c syntax.Call) bool { return c.Callee == "self.path.reset" })
	out = append(out, x.hook("PathData::reset", "assigns rtt and congestion and resets MTU discovery", []syntax.Def{reset}, resetCalls))
	return out, nil
}

func quinnQ2(p *audit.Pass) ([]audit.Finding, error) {
	x, err := n9Open(p, quinnFiles...)
	if err != nil {
		return nil, err
	}
	pf, _, ok := x.fnIn(quinnConn, "process_payload", "")
	if !ok {
		return x.absent(audit.Q2), nil
	}
	arms := x.armsWith(pf, "Frame::PathResponse")
	if len(arms) == 0 {
		x.missing = append(x.missing, "match arm Frame::PathResponse")
		return x.absent(audit.Q2), nil
	}
	arm := syntax.Def{Pos: arms[0], Name: "Frame::PathResponse arm"}
	v := n9Verdict{}
	v.add(x.ev(arms[0], "handler", "PATH_RESPONSE handler"))
	for _, a := range x.assignsIn(arm) {
		v.add(x.ev(a.Pos, "assignment", a.LHS+" = "+a.RHS))
	}
	if hit := x.touches(arm, "rtt", "initial_rtt", "RttEstimator"); len(hit) > 0 {
		v.Answer, v.Mechanism = audit.Yes, "the PATH_RESPONSE handler touches "+strings.Join(hit, ", ")
	} else {
		v.Answer, v.Mechanism = audit.No, "the PATH_RESPONSE handler stops the validation timer and marks the path validated; it never touches the RTT estimator (the new PathData starts from config.initial_rtt)"
	}
	return []audit.Finding{x.finding(audit.Q2, n9Both, v)}, nil
}

func quinnQ3(p *audit.Pass) ([]audit.Finding, error) {
	x, err := n9Open(p, quinnFiles...)
	if err != nil {
		return nil, err
	}
	rif, _, ok1 := x.fnIn(quinnPaths, "remove_in_flight", "PathData")
	acked, _, ok2 := x.fnIn(quinnConn, "on_packet_acked", "")
	ackr, _, ok3 := x.fnIn(quinnConn, "on_ack_received", "")
	lost, _, ok4 := x.fnIn(quinnConn, "detect_lost_packets", "")
	if !ok1 || !ok2 || !ok3 || !ok4 {
		return x.absent(audit.Q3), nil
	}
	var as []n9Aspect
	// bytes in flight: PathData::remove_in_flight returns early for another generation.
	if c, ok := x.cond(rif, "path_generation", "generation"); ok {
		as = append(as, n9Aspect{"inflight", audit.Yes, "PathData::remove_in_flight ignores packets of another path generation", []audit.Evidence{x.ev(c.Pos, "guard", c.Text)}})
	} else {
		as = append(as, n9Aspect{"inflight", audit.No, "remove_in_flight has no path-generation gate", []audit.Evidence{x.ev(rif.Pos, "definition", "")}})
	}
	// growth: on_ack only while no path validation is pending.
	if c, ok := x.callIn(acked, "on_ack"); ok {
		g := n9GuardText(c.Guards)
		switch {
		case strings.Contains(g, "generation"):
			as = append(as, n9Aspect{"growth", audit.Yes, "on_ack gated by path generation", []audit.Evidence{x.ev(c.Pos, "call", g)}})
		case strings.Contains(g, "challenge.is_none()"):
			as = append(as, n9Aspect{"growth", audit.No, "partial: old-path ACKs are kept from on_ack only while the new path is being validated (`" + g + "`), not after", []audit.Evidence{x.ev(c.Pos, "call", g)}})
		default:
			as = append(as, n9Aspect{"growth", audit.No, "on_ack ungated", []audit.Evidence{x.ev(c.Pos, "call", g)}})
		}
	}
	// loss: a congestion event only when the current path's in-flight count changed.
	ce, okCE := x.callIn(lost, "on_congestion_event")
	la, okLA := x.assignIn(lost, "lost_ack_eliciting", "in_flight")
	if okCE && okLA && strings.Contains(n9GuardText(ce.Guards), "lost_ack_eliciting") {
		as = append(as, n9Aspect{"loss", audit.Yes, "on_congestion_event only if the current path's bytes in flight changed, which old-path packets never do", []audit.Evidence{x.ev(la.Pos, "assignment", la.LHS+" = "+la.RHS), x.ev(ce.Pos, "call", n9GuardText(ce.Guards))}})
	} else if okCE {
		as = append(as, n9Aspect{"loss", audit.No, "on_congestion_event ungated", []audit.Evidence{x.ev(ce.Pos, "call", n9GuardText(ce.Guards))}})
	}
	// RTT: rtt.update in on_ack_received.
	if c, ok := x.callIn(ackr, "update", "rtt.update"); ok {
		g := n9GuardText(c.Guards)
		if strings.Contains(g, "generation") || strings.Contains(g, "path") {
			as = append(as, n9Aspect{"rtt", audit.Yes, "rtt.update gated by path", []audit.Evidence{x.ev(c.Pos, "call", g)}})
		} else {
			as = append(as, n9Aspect{"rtt", audit.No, "self.path.rtt.update is gated only by `" + g + "`: a late ACK of an old-path packet feeds the new path's estimator", []audit.Evidence{x.ev(c.Pos, "call", g)}})
		}
	}
	obs, aux := x.q3(n9Observing, "per-packet path generation (SentPacket.path_generation) checked in PathData::remove_in_flight", as)
	// Migrating endpoint: the client keeps its PathData, so there is no new path to protect.
	mv, ok := quinnMigrating(x)
	if !ok {
		return x.absent(audit.Q3), nil
	}
	mv.Mechanism = "the client keeps the same PathData across a Rebind (no new path generation), so old-path packets keep feeding its RTT and congestion state"
	mf := x.finding(audit.Q3, n9Migrating, mv)
	out := []audit.Finding{mf, obs, x.combined(audit.Q3, mf, obs)}
	return append(out, aux...), nil
}

func quinnConstants(p *audit.Pass) ([]audit.Finding, error) {
	x, err := n9Open(p, quinnFiles...)
	if err != nil {
		return nil, err
	}
	cfgDef, _, ok1 := x.fnIn("quinn-proto/src/congestion/cubic.rs", "default", "CubicConfig")
	minW, _, ok2 := x.fnIn("quinn-proto/src/congestion/cubic.rs", "minimum_window", "Cubic")
	tDef, _, ok3 := x.fnIn("quinn-proto/src/config/transport.rs", "default", "TransportConfig")
	if !ok1 || !ok2 || !ok3 {
		return x.absent(audit.ConstInitialWindow), nil
	}
	var out []audit.Finding
	iw, ok := x.fieldInit(cfgDef, "initial_window")
	cc, okCC := x.fieldInit(tDef, "congestion_controller_factory")
	mtu, okM := x.fieldInit(tDef, "initial_mtu")
	rtt, okR := x.fieldInit(tDef, "initial_rtt")
	if !ok || !okCC || !okM || !okR {
		x.missing = append(x.missing, "TransportConfig/CubicConfig default fields")
		return x.absent(audit.ConstInitialWindow), nil
	}
	mech := "default controller: " + cc.RHS
	f, err := x.resolver(nil).constant(audit.ConstInitialWindow, iw.RHS, iw.Pos, "CubicConfig::default initial_window", mech, false)
	if err != nil {
		return nil, err
	}
	f.Evidence = append(f.Evidence, x.ev(cc.Pos, "setting", cc.RHS))
	out = append(out, f)
	// minimum window: 2 * current_mtu, current_mtu = get_initial_mtu() = INITIAL_MTU by default.
	r := x.resolver(nil)
	s, err := r.eval(mtu.RHS)
	if err != nil {
		return nil, err
	}
	r = x.resolver(map[string]n9Param{"current_mtu": {"S", s}})
	f, err = r.constant(audit.ConstMinWindow, n9TailExpr(minW), x.exprPos(minW, n9TailExpr(minW)), "Cubic::minimum_window", "S = current MTU, initially TransportConfig.initial_mtu = "+mtu.RHS, false)
	if err != nil {
		return nil, err
	}
	f.Evidence = append(f.Evidence, x.ev(mtu.Pos, "setting", "initial_mtu: "+mtu.RHS))
	out = append(out, f)
	// loss factor: BETA_CUBIC, as used in on_congestion_event.
	beta, ok := x.def("BETA_CUBIC")
	if !ok {
		x.missing = append(x.missing, "const BETA_CUBIC")
		return append(out, x.absent(audit.ConstLossFactor)...), nil
	}
	f, err = x.resolver(nil).constant(audit.ConstLossFactor, beta.Value, beta.Pos, "BETA_CUBIC", "ssthresh = window * BETA_CUBIC on a congestion event", false)
	if err != nil {
		return nil, err
	}
	if use, ok := x.assignIn(x.optFn("quinn-proto/src/congestion/cubic.rs", "on_congestion_event", "Cubic"), "ssthresh", "BETA_CUBIC"); ok {
		f.Evidence = append(f.Evidence, x.ev(use.Pos, "assignment", use.LHS+" = "+use.RHS))
	}
	out = append(out, f)
	f, err = x.resolver(nil).constant(audit.ConstDefaultRTT, rtt.RHS, rtt.Pos, "TransportConfig::default initial_rtt (µs)", "initial RTT of every new RttEstimator", false)
	if err != nil {
		return nil, err
	}
	return append(out, f), nil
}
