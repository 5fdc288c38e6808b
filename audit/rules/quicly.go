package rules

import (
	"strings"

	"github.com/migaudit/migaudit/audit"
	"github.com/migaudit/migaudit/audit/query"
	"github.com/migaudit/migaudit/audit/syntax"
)

// quicly (h2o/quicly, C). Connection-wide egress.cc and egress.loss.rtt;
// conn->paths[] hold addresses and path-challenge state only. A server
// switching to a validated new path calls promote_path: every packet in
// flight is declared lost, the controller is re-initialised through its
// cc_init callback, the RTT estimator is re-initialised but seeded with the
// old path's smoothed RTT when that is below the default, and pn_path_start
// records the first packet number of the new path (a watermark that keeps
// older packets out of RTT, growth and loss).

const (
	qlyC    = "lib/quicly.c"
	qlyReno = "lib/cc-reno.c"
)

var qlyFiles = []string{qlyC, qlyReno, "lib/defaults.c", "include/quicly/cc.h", "include/quicly/loss.h", "include/quicly/defaults.h", "include/quicly/constants.h"}

func init() { query.Register("quicly", qlyQ1, qlyQ2, qlyQ3, qlyConstants) }

var qlyObservingNeeds = []query.Anchor{query.FuncIn(qlyC, "promote_path", "")}

func qlyObserving(x *query.Code) query.Verdict {
	v := query.Verdict{}
	pp := x.Defs(qlyObservingNeeds...)[0]
	v.Add(x.Evidence(pp.Pos, "definition", "promote_path"))
	sites := query.Filter(x.File(qlyC).Calls("promote_path"), func(c syntax.Call) bool { return c.Func != "promote_path" })
	v.Count("promote_path_call_sites", len(sites))
	for _, c := range sites {
		v.Add(x.Evidence(c.Pos, "call", "in "+c.Func+": "+query.GuardText(c.Guards)))
	}
	ccInit, okC := x.CallIn(pp, "cb", "cc_init")
	rttInit, okR := x.CallIn(pp, "quicly_rtt_init")
	if okC {
		v.Add(x.Evidence(ccInit.Pos, "call", "controller re-initialised through the cc_init callback"))
	}
	if okR {
		v.Add(x.Evidence(rttInit.Pos, "call", query.OneLine(rttInit.Text)))
		for _, c := range x.CommentsIn(qlyC, rttInit.Line-2, rttInit.Line, "SRTT") {
			v.Add(x.Evidence(c.Pos, "comment", query.OneLine(c.Context)))
		}
	}
	if ri := x.Opt(query.FuncIn("include/quicly/loss.h", "quicly_rtt_init", "")); ri.Line > 0 {
		v.Add(x.Evidence(ri.Pos, "definition", "quicly_rtt_init: minimum = UINT32_MAX, latest = 0, smoothed = initial_rtt, variance = initial_rtt / 2"))
	}
	// client: packets from any other server address are ignored, so no second path exists at a client.
	dr := x.Opt(query.FuncIn(qlyC, "do_receive", ""))
	if dr.Line == 0 {
		dr = x.Opt(query.FuncIn(qlyC, "quicly_receive", "")) // before do_receive was split out
	}
	if dr.Line > 0 {
		if c, ok := x.CondIn(dr, "quicly_is_client(conn)"); ok {
			v.Add(x.Evidence(c.Pos, "guard", "a client drops packets whose source is not paths[0]'s remote: only a server promotes paths"))
		}
		v.Note("No port-only exemption: paths are matched on the full remote address (compare_socket_address includes the port), so a NAT rebinding is promoted and reset too.")
	}
	if df := x.File("lib/defaults.c"); df != nil {
		for _, a := range df.Assigns("") {
			if a.Func == "" && strings.TrimPrefix(a.LHS, ".") == "max_path_validation_failures" {
				if d, ok := x.Const(strings.TrimSpace(a.RHS)); ok {
					v.Add(x.Evidence(a.Pos, "setting", "max_path_validation_failures = "+a.RHS+" = "+d.Value+" (0 would disable responding to migration)"))
					v.Note("Server-side migration is on by default (max_path_validation_failures = %s).", d.Value)
				}
				break
			}
		}
	}
	switch {
	case okC && okR && len(rttInit.Args) == 3 && strings.Contains(rttInit.Args[2].Text, "rtt.smoothed"):
		v.Answer = audit.ResetKeepsRTT
		v.Mechanism = "promote_path re-initialises the controller (cc_init) and the RTT estimator, but seeds the new smoothed RTT with the old path's SRTT when it is below the default initial RTT"
		v.Note("The seed lasts until the first sample on the new path (quicly_rtt_init sets latest = 0, so the first sample replaces smoothed).")
	case okC && okR:
		v.Answer = audit.Yes
		v.Mechanism = "promote_path re-initialises the controller and the RTT estimator"
	default:
		v.Answer = audit.No
		v.Mechanism = "promote_path does not reset the controller and RTT"
	}
	return v
}

// qlyRecv is the receive function holding the client's address check:
// do_receive at the pin, inline in quicly_receive before it was split out
// (2025). Each is a design of Q1 and Q3 (query.Choose).
func qlyRecv(recv string) []query.Anchor { return []query.Anchor{query.FuncIn(qlyC, recv, "")} }

const (
	qlyDesignDoReceive = "the client's address check in do_receive"
	qlyDesignReceive   = "the client's address check inline in quicly_receive (before do_receive)"
)

func qlyMigrating(x *query.Code, recv string) query.Verdict {
	v := query.Verdict{}
	dr := x.Defs(qlyRecv(recv)...)[0]
	c, okC := x.CondIn(dr, "quicly_is_client(conn)")
	if okC {
		v.Add(x.Evidence(c.Pos, "guard", "client: only paths[0]'s remote is accepted"))
	}
	for _, n := range []string{"quicly_set_local_address", "quicly_migrate"} {
		v.Count(n+"_calls", len(x.Calls(n)))
	}
	v.AnswerIf(okC, audit.No,
		"no client-side migration: a client keeps paths[0], and a change of its own local address beneath it leaves egress.cc and egress.loss.rtt untouched",
		"client path handling not recognised")
	return v
}

var qlyQ1 = query.Choose(qlyQ1For("do_receive", qlyDesignDoReceive), qlyQ1For("quicly_receive", qlyDesignReceive))

func qlyQ1For(recv, design string) *query.Rule {
	return &query.Rule{
		Name: "quicly/q1", Question: audit.Q1, Role: query.Both, Files: qlyFiles, Design: design,
		Doc:   "promote_path (server): cc_init re-initialisation and quicly_rtt_init seeded with min(old srtt, default); client: no path switch at all.",
		Needs: query.Join(qlyObservingNeeds, qlyRecv(recv)),
		Decide: func(x *query.Code) ([]audit.Finding, error) {
			o := qlyObserving(x)
			m := qlyMigrating(x, recv)
			fm, fo := x.RoleFinding(audit.Q1, query.Migrating, m), x.RoleFinding(audit.Q1, query.Observing, o)
			out := x.PerRole(audit.Q1, fm, fo)
			pp := x.Opt(query.FuncIn(qlyC, "promote_path", ""))
			out = append(out, x.Hook("promote_path", "the path switch that resets CC and RTT", []syntax.Def{pp},
				query.Filter(x.File(qlyC).Calls("promote_path"), func(c syntax.Call) bool { return c.Func != "promote_path" })))
			return out, nil
		},
	}
}

var qlyQ2 = &query.Rule{
	Name: "quicly/q2", Question: audit.Q2, Role: query.Both, Files: qlyFiles,
	Doc:   "Is the path-challenge round trip used (promote_path's TODO)?",
	Needs: []query.Anchor{query.FuncIn(qlyC, "promote_path", "")},
	Decide: func(x *query.Code) ([]audit.Finding, error) {
		pp := x.Needed()[0]
		v := query.Verdict{}
		todo := x.CommentsIn(qlyC, pp.Line, pp.EndLine, "TODO", "path challenge")
		for _, c := range todo {
			v.Add(x.Evidence(c.Pos, "comment", query.OneLine(c.Context)))
		}
		if c, ok := x.CallIn(pp, "quicly_rtt_init"); ok {
			v.Add(x.Evidence(c.Pos, "call", "seed: "+c.Args[len(c.Args)-1].Text))
		}
		if len(todo) > 0 {
			v.Answer = audit.No
			v.Mechanism = "the new path's RTT is seeded from the old SRTT or the default; using the path-challenge round trip is an explicit TODO in promote_path"
		} else if len(x.Touches(pp, "path_challenge")) > 0 {
			v.Answer, v.Mechanism = audit.Yes, "promote_path uses path challenge timing"
		} else {
			v.Answer, v.Mechanism = audit.No, "the path-challenge round trip is not used"
		}
		return []audit.Finding{x.RoleFinding(audit.Q2, query.Both, v)}, nil
	},
}

var qlyQ3 = query.Choose(qlyQ3For("do_receive", qlyDesignDoReceive), qlyQ3For("quicly_receive", qlyDesignReceive))

func qlyQ3For(recv, design string) *query.Rule {
	return &query.Rule{
		Name: "quicly/q3", Question: audit.Q3, Role: query.Both, Files: qlyFiles, Design: design,
		Doc:   "pn_path_start watermark guards and the loss-marking of in-flight packets at promotion.",
		Needs: query.Join([]query.Anchor{query.FuncIn(qlyC, "promote_path", ""), query.FuncIn(qlyC, "handle_ack_frame", ""), query.FuncIn(qlyC, "notify_congestion_to_cc", "")}, qlyRecv(recv)),
		Decide: func(x *query.Code) ([]audit.Finding, error) {
			n := x.Needed()
			pp, ack, ncc := n[0], n[1], n[2]
			wm, okW := x.AssignIn(pp, "pn_path_start", "packet_number")
			var wmEv []audit.Evidence
			if okW {
				wmEv = append(wmEv, x.Evidence(wm.Pos, "assignment", wm.LHS+" = "+wm.RHS+" (watermark set at promotion)"))
			}
			gate := func(name, why string, def syntax.Def) query.Aspect {
				var ev []audit.Evidence
				for _, c := range x.Conds(def) {
					if strings.Contains(c.Text, "pn_path_start") {
						ev = append(ev, x.Evidence(c.Pos, "guard", c.Text))
					}
				}
				if len(ev) > 0 && okW {
					return query.Aspect{Name: name, Answer: audit.Yes, Why: why, Ev: append(ev, wmEv...)}
				}
				return query.Aspect{Name: name, Answer: audit.No, Why: "no pn_path_start gate in " + def.Name, Ev: nil}
			}
			var as []query.Aspect
			a := gate("rtt", "largest_newly_acked (the RTT sample) is taken only from packets at or above pn_path_start", ack)
			as = append(as, a)
			g := gate("growth", "acked bytes count towards the window only for packets at or above pn_path_start", ack)
			as = append(as, g)
			as = append(as, gate("loss", "cc_on_lost is called only for lost packets at or above pn_path_start", ncc))
			// in flight: promote_path declares every sentmap packet lost (QUICLY_SENTMAP_EVENT_PTO).
			if c, ok := x.CallIn(pp, "quicly_sentmap_update", "QUICLY_SENTMAP_EVENT_PTO"); ok {
				ev := []audit.Evidence{x.Evidence(c.Pos, "call", "every packet still in flight is marked lost at promotion")}
				for _, cm := range x.CommentsIn(qlyC, pp.Line, c.Line, "mark all packets as lost") {
					ev = append(ev, x.Evidence(cm.Pos, "comment", query.OneLine(cm.Context)))
				}
				as = append(as, query.Aspect{Name: "inflight", Answer: audit.Yes, Why: "old-path packets leave bytes in flight at promotion (declared lost), like quic-go", Ev: ev})
			} else {
				as = append(as, query.Aspect{Name: "inflight", Answer: audit.No, Why: "in-flight packets not removed at promotion", Ev: nil})
			}
			m := qlyMigrating(x, recv)
			m.Mechanism = "a client never promotes a path, so no watermark is set when its own address changes"
			return x.Q3PerRole("packet-number watermark pn_path_start (set in promote_path) plus loss-marking of everything in flight at promotion", as, m), nil
		},
	}
}

var qlyConstants = &query.Rule{
	Name: "quicly/constants", Question: audit.ConstInitialWindow, Role: query.Both, Files: qlyFiles,
	Doc:   "Reno (default) quicly_cc_calc_initial_cwnd(initcwnd_packets, max_udp_payload_size), QUICLY_MIN_CWND, QUICLY_RENO_BETA, QUICLY_DEFAULT_INITIAL_RTT.",
	Needs: []query.Anchor{query.FuncIn(qlyReno, "quicly_cc_calc_initial_cwnd", ""), query.FuncIn(qlyReno, "quicly_cc_reno_on_lost", ""), query.FuncIn(qlyC, "promote_path", "")},
	Decide: func(x *query.Code) ([]audit.Finding, error) {
		n := x.Needed()
		calc, lost, pp := n[0], n[1], n[2]
		df := x.File("lib/defaults.c")
		if df == nil {
			return x.Absence()
		}
		field := func(name string) (syntax.Assign, bool) {
			for _, a := range df.Assigns("") {
				if a.Func == "" && strings.TrimPrefix(a.LHS, ".") == name {
					return a, true
				}
			}
			x.Missing("quicly_spec_context." + name)
			return syntax.Assign{}, false
		}
		icw, ok4 := field("initcwnd_packets")
		mus, ok5 := field("initial_egress_max_udp_payload_size")
		icc, ok6 := field("init_cc")
		lossConf, ok7 := field("loss")
		if !ok4 || !ok5 || !ok6 || !ok7 {
			return x.Absence()
		}
		ni, err := x.Resolver(nil).Eval(icw.RHS)
		if err != nil {
			return nil, err
		}
		s, err := x.Resolver(nil).Eval(mus.RHS)
		if err != nil {
			return nil, err
		}
		mtuMax, okM := x.AssignIn(calc, "mtu_max", "")
		if !okM {
			x.Missing("mtu_max in quicly_cc_calc_initial_cwnd")
			return x.Absence()
		}
		common := []audit.Evidence{x.Evidence(icw.Pos, "setting", "initcwnd_packets = "+icw.RHS), x.Evidence(mus.Pos, "setting", "initial_egress_max_udp_payload_size = "+mus.RHS),
			x.Evidence(icc.Pos, "setting", "init_cc = "+icc.RHS)}
		if pos, ok := x.LineWith("include/quicly/defaults.h", 1, "#define quicly_default_init_cc"); ok {
			common = append(common, x.Evidence(pos, "setting", "default controller"))
		}
		if c, ok := x.CallIn(pp, "quicly_cc_calc_initial_cwnd"); ok {
			common = append(common, x.Evidence(c.Pos, "call", "the same window is assigned by the reset in promote_path"))
		}
		// quicly_cc_calc_initial_cwnd: `if (max_packets < QUICLY_MIN_CWND) max_packets = QUICLY_MIN_CWND;`,
		// `if (max_udp_payload_size > mtu_max) max_udp_payload_size = mtu_max;`, then their product:
		// max(max_packets, QUICLY_MIN_CWND) * min(max_udp_payload_size, mtu_max). Each piece is checked.
		c1, okC1 := x.CondIn(calc, "max_packets < QUICLY_MIN_CWND")
		c2, okC2 := x.CondIn(calc, "max_udp_payload_size > mtu_max")
		prod, okP := x.AssignIn(calc, "cwnd_bytes", "max_packets", "max_udp_payload_size")
		if !okC1 || !okC2 || !okP {
			x.Missing("filters and product in quicly_cc_calc_initial_cwnd")
			return x.Absence()
		}
		common = append(common, x.Evidence(c1.Pos, "guard", c1.Text), x.Evidence(c2.Pos, "guard", c2.Text))
		par := map[string]query.Param{"max_packets": {Name: "initcwnd_packets", Default: ni}, "max_udp_payload_size": {Name: "S", Default: s}, "mtu_max": {Name: "mtu_max", Default: 0}}
		mm, err := x.Resolver(nil).Eval(mtuMax.RHS)
		if err != nil {
			return nil, err
		}
		par["mtu_max"] = query.Param{Name: "mtu_max", Default: mm}
		var out []audit.Finding
		f, err := x.Resolver(par).Constant(audit.ConstInitialWindow, "max(max_packets, QUICLY_MIN_CWND) * min(max_udp_payload_size, mtu_max)",
			prod.Pos, "quicly_cc_calc_initial_cwnd(initcwnd_packets, max_udp_payload_size)",
			"the filters and product of quicly_cc_calc_initial_cwnd; S = egress max_udp_payload_size (initially initial_egress_max_udp_payload_size; a server raises it to the client's Initial datagram size, at most 1472)", false)
		if err != nil {
			return nil, err
		}
		f.Evidence = query.Dedupe(append(f.Evidence, append(common, x.Evidence(mtuMax.Pos, "definition", "mtu_max = "+mtuMax.RHS))...))
		out = append(out, f)
		floor, okF := x.AssignIn(lost, "cwnd", "QUICLY_MIN_CWND")
		if okF {
			f, err = x.Resolver(map[string]query.Param{"max_udp_payload_size": {Name: "S", Default: s}}).Constant(audit.ConstMinWindow, floor.RHS, floor.Pos, "QUICLY_MIN_CWND * max_udp_payload_size", "floor of the Reno loss reduction", false)
			if err != nil {
				return nil, err
			}
			out = append(out, f)
		} else {
			x.Missing("floor in quicly_cc_reno_on_lost")
		}
		red, okR := x.AssignIn(lost, "cwnd", "QUICLY_RENO_BETA")
		if okR {
			// cc->cwnd *= cc->ssthresh == UINT32_MAX ? 0.5 : QUICLY_RENO_BETA
			f, err = x.Resolver(nil).Constant(audit.ConstLossFactor, "QUICLY_RENO_BETA", red.Pos, "QUICLY_RENO_BETA (after the first loss)", "cwnd *= ssthresh == UINT32_MAX ? 0.5 : QUICLY_RENO_BETA", false)
			if err != nil {
				return nil, err
			}
			f.Detail = "source expression: " + red.RHS + "; the first loss out of slow start halves the window (0.5), later losses apply QUICLY_RENO_BETA"
			out = append(out, f)
			alt, err := x.Resolver(nil).Constant(audit.ConstLossFactor, "0.5", red.Pos, "first loss out of slow start (ssthresh == UINT32_MAX)", "without HyStart++ quicly halves on the first loss", true)
			if err != nil {
				return nil, err
			}
			out = append(out, alt)
		} else {
			x.Missing("reduction in quicly_cc_reno_on_lost")
		}
		// default RTT: QUICLY_LOSS_SPEC_CONF's initial_rtt field is QUICLY_DEFAULT_INITIAL_RTT (ms).
		if d, ok := x.Const("QUICLY_DEFAULT_INITIAL_RTT"); ok {
			f, err = x.Resolver(nil).Constant(audit.ConstDefaultRTT, "QUICLY_DEFAULT_INITIAL_RTT * 1000", d.Pos, "QUICLY_DEFAULT_INITIAL_RTT (ms → µs)", "loss = "+lossConf.RHS+" (QUICLY_LOSS_SPEC_CONF initial_rtt)", false)
			if err != nil {
				return nil, err
			}
			f.Evidence = append(f.Evidence, x.Evidence(lossConf.Pos, "setting", "loss = "+lossConf.RHS))
			if pos, ok := x.LineWith("include/quicly/loss.h", 1, "QUICLY_DEFAULT_INITIAL_RTT,"); ok {
				f.Evidence = append(f.Evidence, x.Evidence(pos, "setting", "QUICLY_LOSS_SPEC_CONF initial_rtt"))
			}
			out = append(out, f)
		}
		return out, nil
	},
}
