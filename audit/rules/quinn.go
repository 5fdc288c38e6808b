package rules

import (
	"fmt"
	"strings"

	"github.com/migaudit/migaudit/audit"
	"github.com/migaudit/migaudit/audit/query"
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
	"quinn-proto/src/connection/*.rs", "quinn-proto/src/config/*.rs", "quinn-proto/src/config.rs", "quinn-proto/src/congestion.rs",
	"quinn-proto/src/congestion/cubic.rs", "quinn-proto/src/lib.rs", "quinn/src/*.rs",
}

func init() { query.Register("quinn", quinnQ1, quinnQ2, quinnQ3, quinnConstants) }

var quinnObservingNeeds = []query.Anchor{query.FuncIn(quinnConn, "migrate", ""), query.FuncIn(quinnPaths, "new", "PathData"), query.FuncIn(quinnPaths, "from_previous", "PathData")}

// quinnObserving: Connection::migrate at the server.
func quinnObserving(x *query.Code) query.Verdict {
	v := query.Verdict{}
	d := x.Defs(quinnObservingNeeds...)
	mig, newFn, prev := d[0], d[1], d[2]
	v.Add(x.Evidence(mig.Pos, "definition", "Connection::migrate"))
	sites := query.Filter(x.File(quinnConn).Calls("migrate"), func(c syntax.Call) bool { return c.Callee == "self.migrate" })
	v.Count("migrate_call_sites", len(sites))
	for _, c := range sites {
		v.Add(x.Evidence(c.Pos, "call", "in "+c.Func+": "+query.GuardText(c.Guards)))
		if s := x.StringsIn(x.Opt(query.FuncIn(quinnConn, c.Func, "")), "dropped by clients"); len(s) > 0 {
			v.Add(x.Evidence(s[0], "guard", "server only: packets from an unknown remote are dropped by clients"))
		}
	}
	fresh, okF := x.CallIn(mig, "new", "PathData::new")
	keep, okK := x.CallIn(mig, "from_previous", "PathData::from_previous")
	rttNew, okR := x.FieldInit(newFn, "rtt")
	ccNew, okC := x.AssignIn(newFn, "congestion", "build(")
	rttPrev, okRP := x.FieldInit(prev, "rtt")
	if okF {
		v.Add(x.Evidence(fresh.Pos, "call", "fresh PathData for the new remote ("+query.GuardText(fresh.Guards)+")"))
	}
	if okR {
		v.Add(x.Evidence(rttNew.Pos, "assignment", "rtt: "+rttNew.RHS))
	}
	if okC {
		v.Add(x.Evidence(ccNew.Pos, "assignment", "congestion: fresh controller from the factory"))
	} else if okF && strings.Contains(fresh.Text, "congestion_controller_factory") && strings.Contains(fresh.Text, ".build(") {
		// before 0.11 migrate builds the controller and passes it to PathData::new
		okC = true
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
		v.Add(x.Evidence(keep.Pos, "call", "state carried over: from_previous"), x.Evidence(g.Pos, "guard", g.Cond))
		if okRP {
			v.Add(x.Evidence(rttPrev.Pos, "assignment", "rtt: "+rttPrev.RHS+" (carried over)"))
		}
		if strings.Contains(g.Cond, "ip()") {
			exempt := "Port-only exemption implemented: the same peer IP keeps RTT and congestion state (PathData::from_previous)"
			if strings.Contains(g.Cond, "is_ipv4()") {
				exempt += ", for IPv4 peers only (an IPv6 port-only change resets)"
			}
			v.Note("%s; guard `%s`.", exempt, g.Cond)
			v.Count("port_only_exemption", 1)
		}
	}
	if d := x.Opt(query.FuncIn("quinn-proto/src/config/mod.rs", "default", "ServerConfig")); d.Line > 0 {
		if a, ok := x.FieldInit(d, "migration"); ok {
			v.Add(x.Evidence(a.Pos, "setting", "ServerConfig.migration default "+a.RHS))
			v.Note("Server-side migration is on by default (ServerConfig.migration = %s).", a.RHS)
		}
	}
	return v
}

var quinnMigratingNeeds = []query.Anchor{query.FuncIn(quinnConn, "local_address_changed", "")}

// quinnMigrating: the client's Rebind.
func quinnMigrating(x *query.Code) query.Verdict {
	v := query.Verdict{}
	lac := x.Defs(quinnMigratingNeeds...)[0]
	v.Add(x.Evidence(lac.Pos, "definition", "Connection::local_address_changed"))
	sites := x.Calls("local_address_changed")
	v.Count("local_address_changed_call_sites", len(sites))
	for _, c := range sites {
		v.Add(x.Evidence(c.Pos, "call", "in "+c.Func+": "+query.GuardText(c.Guards)))
	}
	calls := x.AllCallsIn(lac)
	v.Add(x.CallEvidence(calls, "call", "")...)
	if hit := x.Touches(lac, "reset", "path_changed", "migrate", "from_previous", "rtt", "congestion"); len(hit) > 0 {
		v.Answer = audit.Yes
		v.Mechanism = "Rebind -> local_address_changed touches " + strings.Join(hit, ", ")
		return v
	}
	v.Answer = audit.No
	v.Mechanism = fmt.Sprintf("client Rebind -> local_address_changed() only calls %s: the PathData (RTT estimator, controller) is kept", strings.Join(query.Names(calls), ", "))
	return v
}

var quinnRebindNeeds = []query.Anchor{query.FuncIn("quinn/src/endpoint.rs", "rebind", "Endpoint")}

// quinnRebinding: the client's Rebind before 0.11, which has no
// local_address_changed: Endpoint::rebind swaps the socket (since 0.8 it
// also pings every connection); quinn-proto never hears of the move.
func quinnRebinding(x *query.Code) query.Verdict {
	v := query.Verdict{}
	rb := x.Defs(quinnRebindNeeds...)[0]
	v.Add(x.Evidence(rb.Pos, "definition", "Endpoint::rebind (the client's Rebind)"))
	calls := x.AllCallsIn(rb)
	pings := query.Filter(calls, func(c syntax.Call) bool { return strings.Contains(c.Text, "ConnectionEvent::Ping") })
	v.Add(x.CallEvidence(pings, "call", "every connection only gets a ping")...)
	if hit := x.Touches(rb, "local_address_changed", "migrate", "PathData", "rtt", "congestion"); len(hit) > 0 {
		v.Answer = audit.Unknown
		v.Mechanism = "Endpoint::rebind touches " + strings.Join(hit, ", ") + ": a design this rule does not read"
		return v
	}
	v.Answer = audit.No
	v.Mechanism = "client Rebind -> Endpoint::rebind swaps the UDP socket"
	if len(pings) > 0 {
		v.Mechanism += " and sends each connection a ConnectionEvent::Ping"
	}
	v.Mechanism += ": the connection's PathData (RTT estimator, controller) is kept"
	return v
}

// quinn changed its client side in 0.11: before, Endpoint::rebind pings
// (no local_address_changed) and bytes in flight are connection-wide
// (Connection::remove_in_flight); since, local_address_changed rotates the
// CID and PathData::remove_in_flight keeps other paths' packets out.
const (
	quinnDesignLocal  = "0.11+: Rebind calls local_address_changed; in-flight bytes per PathData"
	quinnDesignRebind = "before 0.11: Endpoint::rebind pings; in-flight bytes connection-wide"
)

var quinnQ1 = query.Choose(quinnQ1For(quinnDesignLocal, quinnMigratingNeeds, quinnMigrating), quinnQ1For(quinnDesignRebind, quinnRebindNeeds, quinnRebinding))

func quinnQ1For(design string, migNeeds []query.Anchor, migrating func(*query.Code) query.Verdict) *query.Rule {
	return &query.Rule{
		Name: "quinn/q1", Question: audit.Q1, Role: query.Both, Files: quinnFiles, Design: design,
		Doc:   "Per role: does a migration build fresh RTT/CC state (PathData::new) or keep it (from_previous, Rebind)? Also the public path_changed() hook and its call sites.",
		Needs: query.Join(quinnObservingNeeds, migNeeds),
		Decide: func(x *query.Code) ([]audit.Finding, error) {
			return quinnQ1Decide(x, migrating)
		},
	}
}

func quinnQ1Decide(x *query.Code, migrating func(*query.Code) query.Verdict) ([]audit.Finding, error) {
	obs := quinnObserving(x)
	mig := migrating(x)
	fo := x.RoleFinding(audit.Q1, query.Observing, obs)
	fm := x.RoleFinding(audit.Q1, query.Migrating, mig)
	out := x.PerRole(audit.Q1, fm, fo)
	// PathData::reset (behind path_changed) arrived in 0.11.9; before, there is no hook to report.
	reset, hasReset := x.Lookup(query.FuncIn(quinnPaths, "reset", "PathData"))
	if !hasReset {
		return out, nil
	}
	// Hooks: the public Connection::path_changed and PathData::reset behind it.
	h := x.Hook("Connection::path_changed", "public API documented to reset the congestion controller, RTT estimator and MTU discovery",
		x.Set.Funcs("path_changed"), x.Calls("path_changed"))
	for _, a := range x.AssignsIn(reset) {
		h.Evidence = append(h.Evidence, x.Evidence(a.Pos, "assignment", "PathData::reset assigns "+a.LHS))
	}
	exposed := 0
	for _, f := range x.Set {
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
	resetCalls := query.Filter(x.Calls("reset"), func(c syntax.Call) bool { return c.Callee == "self.path.reset" })
	out = append(out, x.Hook("PathData::reset", "assigns rtt and congestion and resets MTU discovery", []syntax.Def{reset}, resetCalls))
	return out, nil
}

var quinnQ2 = &query.Rule{
	Name: "quinn/q2", Question: audit.Q2, Role: query.Both, Files: quinnFiles,
	Doc:   "Does the PATH_RESPONSE handler touch the RTT estimator?",
	Needs: []query.Anchor{query.FuncIn(quinnConn, "process_payload", "")},
	Decide: func(x *query.Code) ([]audit.Finding, error) {
		pf := x.Needed()[0]
		arms := x.ArmsWith(pf, "Frame::PathResponse")
		if len(arms) == 0 {
			x.Missing("match arm Frame::PathResponse")
			return x.Absence()
		}
		arm := syntax.Def{Pos: arms[0], Name: "Frame::PathResponse arm"}
		v := query.Verdict{}
		v.Add(x.Evidence(arms[0], "handler", "PATH_RESPONSE handler"))
		for _, a := range x.AssignsIn(arm) {
			v.Add(x.Evidence(a.Pos, "assignment", a.LHS+" = "+a.RHS))
		}
		if hit := x.Touches(arm, "rtt", "initial_rtt", "RttEstimator"); len(hit) > 0 {
			v.Answer, v.Mechanism = audit.Yes, "the PATH_RESPONSE handler touches "+strings.Join(hit, ", ")
		} else {
			v.Answer, v.Mechanism = audit.No, "the PATH_RESPONSE handler stops the validation timer and marks the path validated; it never touches the RTT estimator (the new PathData starts from config.initial_rtt)"
		}
		return []audit.Finding{x.RoleFinding(audit.Q2, query.Both, v)}, nil
	},
}

var quinnQ3 = query.Choose(
	quinnQ3For(quinnDesignLocal, query.FuncIn(quinnPaths, "remove_in_flight", "PathData"), quinnMigratingNeeds, quinnMigrating),
	quinnQ3For(quinnDesignRebind, query.FuncIn(quinnConn, "remove_in_flight", "Connection"), quinnRebindNeeds, quinnRebinding))

func quinnQ3For(design string, rifAnchor query.Anchor, migNeeds []query.Anchor, migrating func(*query.Code) query.Verdict) *query.Rule {
	return &query.Rule{
		Name: "quinn/q3", Question: audit.Q3, Role: query.Both, Files: quinnFiles, Design: design,
		Doc:   "Which of RTT, congestion growth, loss reduction and bytes in flight are gated by the packet's path generation?",
		Needs: query.Join([]query.Anchor{rifAnchor, query.FuncIn(quinnConn, "on_packet_acked", ""), query.FuncIn(quinnConn, "on_ack_received", ""), query.FuncIn(quinnConn, "detect_lost_packets", "")}, migNeeds),
		Decide: func(x *query.Code) ([]audit.Finding, error) {
			n := x.Needed()
			rif, acked, ackr, lost := n[0], n[1], n[2], n[3]
			var as []query.Aspect
			// bytes in flight: PathData::remove_in_flight returns early for
			// another generation (pin), or for packet numbers below the path's
			// first_packet watermark (0.11.x): either keeps old-path packets out.
			// Before 0.11 the count is the connection's (Connection::remove_in_flight).
			perPath := rif.Path == quinnPaths
			marker := ""
			if !perPath {
				a, ok := x.AssignIn(rif, "in_flight.bytes")
				ev := []audit.Evidence{x.Evidence(rif.Pos, "definition", "Connection::remove_in_flight")}
				if ok {
					ev = append(ev, x.Evidence(a.Pos, "assignment", a.LHS+" -= "+a.RHS))
				}
				as = append(as, query.Aspect{Name: "inflight", Answer: audit.No, Why: "bytes in flight are the connection's (Connection::remove_in_flight), shared by the old and the new path", Ev: ev})
			} else if c, ok := x.CondIn(rif, "path_generation", "generation"); ok {
				marker = "per-packet path generation (SentPacket.path_generation)"
				if _, ok := x.Lookup(query.Field("SentPacket", "path_generation")); !ok {
					marker = "path generation"
				}
				as = append(as, query.Aspect{Name: "inflight", Answer: audit.Yes, Why: "PathData::remove_in_flight ignores packets of another path generation", Ev: []audit.Evidence{x.Evidence(c.Pos, "guard", c.Text)}})
			} else if c, ok := x.CondIn(rif, "first_packet", "pn"); ok {
				marker = "first-packet watermark (PathData.first_packet)"
				as = append(as, query.Aspect{Name: "inflight", Answer: audit.Yes, Why: "PathData::remove_in_flight ignores packets numbered before the path's first_packet watermark (`" + c.Text + "`)", Ev: []audit.Evidence{x.Evidence(c.Pos, "guard", c.Text)}})
			} else {
				as = append(as, query.Aspect{Name: "inflight", Answer: audit.No, Why: "remove_in_flight has no path-generation gate", Ev: []audit.Evidence{x.Evidence(rif.Pos, "definition", "")}})
			}
			// growth: on_ack only while no path validation is pending.
			if c, ok := x.CallIn(acked, "on_ack"); ok {
				g := query.GuardText(c.Guards)
				switch {
				case strings.Contains(g, "generation"):
					as = append(as, query.Aspect{Name: "growth", Answer: audit.Yes, Why: "on_ack gated by path generation", Ev: []audit.Evidence{x.Evidence(c.Pos, "call", g)}})
				case strings.Contains(g, "challenge.is_none()"):
					as = append(as, query.Aspect{Name: "growth", Answer: audit.No, Why: "partial: old-path ACKs are kept from on_ack only while the new path is being validated (`" + g + "`), not after", Ev: []audit.Evidence{x.Evidence(c.Pos, "call", g)}})
				default:
					as = append(as, query.Aspect{Name: "growth", Answer: audit.No, Why: "on_ack ungated", Ev: []audit.Evidence{x.Evidence(c.Pos, "call", g)}})
				}
			}
			// loss: a congestion event only when the current path's in-flight count changed.
			ce, okCE := x.CallIn(lost, "on_congestion_event")
			la, okLA := x.AssignIn(lost, "lost_ack_eliciting", "in_flight")
			if okCE && okLA && strings.Contains(query.GuardText(ce.Guards), "lost_ack_eliciting") && !strings.Contains(la.RHS, "path.in_flight") {
				as = append(as, query.Aspect{Name: "loss", Answer: audit.No, Why: "on_congestion_event when the connection's bytes in flight changed (`" + la.RHS + "`), which old-path packets do", Ev: []audit.Evidence{x.Evidence(la.Pos, "assignment", la.LHS+" = "+la.RHS), x.Evidence(ce.Pos, "call", query.GuardText(ce.Guards))}})
			} else if okCE && okLA && strings.Contains(query.GuardText(ce.Guards), "lost_ack_eliciting") {
				as = append(as, query.Aspect{Name: "loss", Answer: audit.Yes, Why: "on_congestion_event only if the current path's bytes in flight changed, which old-path packets never do", Ev: []audit.Evidence{x.Evidence(la.Pos, "assignment", la.LHS+" = "+la.RHS), x.Evidence(ce.Pos, "call", query.GuardText(ce.Guards))}})
			} else if okCE {
				as = append(as, query.Aspect{Name: "loss", Answer: audit.No, Why: "on_congestion_event ungated", Ev: []audit.Evidence{x.Evidence(ce.Pos, "call", query.GuardText(ce.Guards))}})
			}
			// RTT: rtt.update in on_ack_received.
			if c, ok := x.CallIn(ackr, "update", "rtt.update"); ok {
				g := query.GuardText(c.Guards)
				if strings.Contains(g, "generation") || strings.Contains(g, "path") {
					as = append(as, query.Aspect{Name: "rtt", Answer: audit.Yes, Why: "rtt.update gated by path", Ev: []audit.Evidence{x.Evidence(c.Pos, "call", g)}})
				} else {
					as = append(as, query.Aspect{Name: "rtt", Answer: audit.No, Why: "self.path.rtt.update is gated only by `" + g + "`: a late ACK of an old-path packet feeds the new path's estimator", Ev: []audit.Evidence{x.Evidence(c.Pos, "call", g)}})
				}
			}
			// Migrating endpoint: the client keeps its PathData, so there is no new path to protect.
			mv := migrating(x)
			if mv.Answer == audit.No {
				mv.Mechanism = "the client keeps the same PathData across a Rebind (no new path generation), so old-path packets keep feeding its RTT and congestion state"
			}
			obs := "no per-packet path marker in PathData::remove_in_flight"
			switch {
			case !perPath:
				obs = "one connection-wide count of bytes in flight and no per-packet path marker"
			case marker != "":
				obs = marker + " checked in PathData::remove_in_flight"
			}
			return x.Q3PerRole(obs, as, mv), nil
		},
	}
}

var quinnConstants = &query.Rule{
	Name: "quinn/constants", Question: audit.ConstInitialWindow, Role: query.Both, Files: quinnFiles,
	Doc: "Cubic (the default controller) initial and minimum window, BETA_CUBIC, default initial RTT.",
	// quinn 0.9 (Debian's, run live) keeps TransportConfig in config.rs and
	// the minimum window in CubicConfig::default; later versions moved
	// TransportConfig to config/transport.rs and compute Cubic::minimum_window.
	Needs: []query.Anchor{query.FuncIn("quinn-proto/src/congestion/cubic.rs", "default", "CubicConfig")},
	Decide: func(x *query.Code) ([]audit.Finding, error) {
		cfgDef := x.Needed()[0]
		tDef, ok := x.Lookup(query.FuncIn("quinn-proto/src/config/transport.rs", "default", "TransportConfig"))
		if !ok {
			tDef, ok = x.Lookup(query.FuncIn("quinn-proto/src/config.rs", "default", "TransportConfig"))
		}
		if !ok {
			x.Missing("function default for TransportConfig in quinn-proto/src/config/transport.rs or quinn-proto/src/config.rs")
			return x.Absence()
		}
		minW, computed := x.Lookup(query.FuncIn("quinn-proto/src/congestion/cubic.rs", "minimum_window", "Cubic"))
		var out []audit.Finding
		iw, ok := x.FieldInit(cfgDef, "initial_window")
		cc, okCC := x.FieldInit(tDef, "congestion_controller_factory")
		mtu, okM := x.FieldInit(tDef, "initial_mtu")
		rtt, okR := x.FieldInit(tDef, "initial_rtt")
		if !ok || !okCC || computed && !okM || !okR {
			x.Missing("TransportConfig/CubicConfig default fields")
			return x.Absence()
		}
		mech := "default controller: " + cc.RHS
		f, err := x.Resolver(nil).Constant(audit.ConstInitialWindow, iw.RHS, iw.Pos, "CubicConfig::default initial_window", mech, false)
		if err != nil {
			return nil, err
		}
		f.Evidence = append(f.Evidence, x.Evidence(cc.Pos, "setting", cc.RHS))
		out = append(out, f)
		if !computed {
			// quinn 0.9: CubicConfig::default sets minimum_window, and
			// Cubic::on_congestion_event floors the window at it.
			mw, ok := x.FieldInit(cfgDef, "minimum_window")
			if !ok {
				out = append(out, x.AbsentFor(audit.ConstMinWindow, "Cubic::minimum_window or CubicConfig::default minimum_window"))
			} else {
				f, err := x.Resolver(nil).Constant(audit.ConstMinWindow, mw.RHS, mw.Pos, "CubicConfig::default minimum_window", "window floor after a congestion event (self.config.minimum_window)", false)
				if err != nil {
					return nil, err
				}
				out = append(out, f)
			}
		}
		// minimum window: 2 * current_mtu, current_mtu = get_initial_mtu() = INITIAL_MTU by default.
		if computed {
			r := x.Resolver(nil)
			s, err := r.Eval(mtu.RHS)
			if err != nil {
				return nil, err
			}
			r = x.Resolver(map[string]query.Param{"current_mtu": {Name: "S", Default: s}})
			f, err = r.Constant(audit.ConstMinWindow, query.TailExpr(minW), x.ExprPos(minW, query.TailExpr(minW)), "Cubic::minimum_window", "S = current MTU, initially TransportConfig.initial_mtu = "+mtu.RHS, false)
			if err != nil {
				return nil, err
			}
			f.Evidence = append(f.Evidence, x.Evidence(mtu.Pos, "setting", "initial_mtu: "+mtu.RHS))
			out = append(out, f)
		}
		// loss factor: BETA_CUBIC, as used in on_congestion_event.
		beta, ok := x.Const("BETA_CUBIC")
		if !ok {
			return append(out, x.AbsentFor(audit.ConstLossFactor, "const BETA_CUBIC")), nil
		}
		f, err = x.Resolver(nil).Constant(audit.ConstLossFactor, beta.Value, beta.Pos, "BETA_CUBIC", "ssthresh = window * BETA_CUBIC on a congestion event", false)
		if err != nil {
			return nil, err
		}
		if use, ok := x.AssignIn(x.Opt(query.FuncIn("quinn-proto/src/congestion/cubic.rs", "on_congestion_event", "Cubic")), "ssthresh", "BETA_CUBIC"); ok {
			f.Evidence = append(f.Evidence, x.Evidence(use.Pos, "assignment", use.LHS+" = "+use.RHS))
		}
		out = append(out, f)
		f, err = x.Resolver(nil).Constant(audit.ConstDefaultRTT, rtt.RHS, rtt.Pos, "TransportConfig::default initial_rtt (µs)", "initial RTT of every new RttEstimator", false)
		if err != nil {
			return nil, err
		}
		return append(out, f), nil
	},
}
