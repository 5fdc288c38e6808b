package rules

import (
	"strings"

	"github.com/migaudit/migaudit/audit"
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

func init() {
	audit.Register("quicly",
		n9Rule("quicly/q1", "promote_path (server): cc_init re-initialisation and quicly_rtt_init seeded with min(old srtt, default); client: no path switch at all.", audit.Q1, qlyQ1),
		n9Rule("quicly/q2", "Is the path-challenge round trip used (promote_path's TODO)?", audit.Q2, qlyQ2),
		n9Rule("quicly/q3", "pn_path_start watermark guards and the loss-marking of in-flight packets at promotion.", audit.Q3, qlyQ3),
		n9Rule("quicly/constants", "Reno (default) quicly_cc_calc_initial_cwnd(initcwnd_packets, max_udp_payload_size), QUICLY_MIN_CWND, QUICLY_RENO_BETA, QUICLY_DEFAULT_INITIAL_RTT.", audit.ConstInitialWindow, qlyConstants),
	)
}

func qlyObserving(x *n9) (n9Verdict, bool) {
	v := n9Verdict{}
	pp, _, ok1 := x.fnIn(qlyC, "promote_path", "")
	if !ok1 {
		return v, false
	}
	v.add(x.ev(pp.Pos, "definition", "promote_path"))
	sites := n9Filter(x.file(qlyC).Calls("promote_path"), func(c syntax.Call) bool { return c.Func != "promote_path" })
	v.count("promote_path_call_sites", len(sites))
	for _, c := range sites {
		v.add(x.ev(c.Pos, "call", "in "+c.Func+": "+n9GuardText(c.Guards)))
	}
	ccInit, okC := x.callIn(pp, "cb", "cc_init")
	rttInit, okR := x.callIn(pp, "quicly_rtt_init")
	if okC {
		v.add(x.ev(ccInit.Pos, "call", "controller re-initialised through the cc_init callback"))
	}
	if okR {
		v.add(x.ev(rttInit.Pos, "call", n9OneLine(rttInit.Text)))
		for _, c := range x.commentsIn(qlyC, rttInit.Line-2, rttInit.Line, "SRTT") {
			v.add(x.ev(c.Pos, "comment", n9OneLine(c.Context)))
		}
	}
	if ri := x.optFn("include/quicly/loss.h", "quicly_rtt_init", ""); ri.Line > 0 {
		v.add(x.ev(ri.Pos, "definition", "quicly_rtt_init: minimum = UINT32_MAX, latest = 0, smoothed = initial_rtt, variance = initial_rtt / 2"))
	}
	// client: packets from any other server address are ignored, so no second path exists at a client.
	if dr := x.optFn(qlyC, "do_receive", ""); dr.Line > 0 {
		if c, ok := x.cond(dr, "quicly_is_client(conn)"); ok {
			v.add(x.ev(c.Pos, "guard", "a client drops packets whose source is not paths[0]'s remote: only a server promotes paths"))
		}
		v.note("No port-only exemption: paths are matched on the full remote address (compare_socket_address includes the port), so a NAT rebinding is promoted and reset too.")
	}
	if df := x.file("lib/defaults.c"); df != nil {
		for _, a := range df.Assigns("") {
			if a.Func == "" && strings.TrimPrefix(a.LHS, ".") == "max_path_validation_failures" {
				if d, ok := x.def(strings.TrimSpace(a.RHS)); ok {
					v.add(x.ev(a.Pos, "setting", "max_path_validation_failures = "+a.RHS+" = "+d.Value+" (0 would disable responding to migration)"))
					v.note("Server-side migration is on by default (max_path_validation_failures = %s).", d.Value)
				}
				break
			}
		}
	}
	switch {
	case okC && okR && len(rttInit.Args) == 3 && strings.Contains(rttInit.Args[2].Text, "rtt.smoothed"):
		v.Answer = audit.ResetKeepsRTT
		v.Mechanism = "promote_path re-initialises the controller (cc_init) and the RTT estimator, but seeds the new smoothed RTT with the old path's SRTT when it is below the default initial RTT"
		v.note("The seed lasts until the first sample on the new path (quicly_rtt_init sets latest = 0, so the first sample replaces smoothed).")
	case okC && okR:
		v.Answer = audit.Yes
		v.Mechanism = "promote_path re-initialises the controller and the RTT estimator"
	default:
		v.Answer = audit.No
		v.Mechanism = "promote_path does not reset the controller and RTT"
	}
	return v, true
}

func qlyMigrating(x *n9) (n9Verdict, bool) {
	v := n9Verdict{}
	dr, _, ok := x.fnIn(qlyC, "do_receive", "")
	if !ok {
		return v, false
	}
	c, okC := x.cond(dr, "quicly_is_client(conn)")
	if okC {
		v.add(x.ev(c.Pos, "guard", "client: only paths[0]'s remote is accepted"))
	}
	for _, n := range []string{"quicly_set_local_address", "quicly_migrate"} {
		v.count(n+"_calls", len(x.calls(n)))
	}
	if okC {
		v.Answer = audit.No
		v.Mechanism = "no client-side migration: a client keeps paths[0], and a change of its own local address beneath it leaves egress.cc and egress.loss.rtt untouched"
	} else {
		v.Answer = audit.Unknown
		v.Mechanism = "client path handling not recognised"
	}
	return v, true
}

func qlyQ1(p *audit.Pass) ([]audit.Finding, error) {
	x, err := n9Open(p, qlyFiles...)
	if err != nil {
		return nil, err
	}
	o, ok1 := qlyObserving(x)
	m, ok2 := qlyMigrating(x)
	if !ok1 || !ok2 {
		return x.absent(audit.Q1), nil
	}
	fm, fo := x.finding(audit.Q1, n9Migrating, m), x.finding(audit.Q1, n9Observing, o)
	out := []audit.Finding{fm, fo, x.combined(audit.Q1, fm, fo)}
	pp := x.optFn(qlyC, "promote_path", "")
	out = append(out, x.hook("promote_path", "the path switch that resets CC and RTT", []syntax.Def{pp},
		n9Filter(x.file(qlyC).Calls("promote_path"), func(c syntax.Call) bool { return c.Func != "promote_path" })))
	return out, nil
}

func qlyQ2(p *audit.Pass) ([]audit.Finding, error) {
	x, err := n9Open(p, qlyFiles...)
	if err != nil {
		return nil, err
	}
	pp, _, ok := x.fnIn(qlyC, "promote_path", "")
	if !ok {
		return x.absent(audit.Q2), nil
	}
	v := n9Verdict{}
	todo := x.commentsIn(qlyC, pp.Line, pp.EndLine, "TODO", "path challenge")
	for _, c := range todo {
		v.add(x.ev(c.Pos, "comment", n9OneLine(c.Context)))
	}
	if c, ok := x.callIn(pp, "quicly_rtt_init"); ok {
		v.add(x.ev(c.Pos, "call", "seed: "+c.Args[len(c.Args)-1].Text))
	}
	if len(todo) > 0 {
		v.Answer = audit.No
		v.Mechanism = "the new path's RTT is seeded from the old SRTT or the default; using the path-challenge round trip is an explicit TODO in promote_path"
	} else if len(x.touches(pp, "path_challenge")) > 0 {
		v.Answer, v.Mechanism = audit.Yes, "promote_path uses path challenge timing"
	} else {
		v.Answer, v.Mechanism = audit.No, "the path-challenge round trip is not used"
	}
	return []audit.Finding{x.finding(audit.Q2, n9Both, v)}, nil
}

func qlyQ3(p *audit.Pass) ([]audit.Finding, error) {
	x, err := n9Open(p, qlyFiles...)
	if err != nil {
		return nil, err
	}
	pp, _, ok1 := x.fnIn(qlyC, "promote_path", "")
	ack, _, ok2 := x.fnIn(qlyC, "handle_ack_frame", "")
	ncc, _, ok3 := x.fnIn(qlyC, "notify_congestion_to_cc", "")
	if !ok1 || !ok2 || !ok3 {
		return x.absent(audit.Q3), nil
	}
	wm, okW := x.assignIn(pp, "pn_path_start", "packet_number")
	var wmEv []audit.Evidence
	if okW {
		wmEv = append(wmEv, x.ev(wm.Pos, "assignment", wm.LHS+" = "+wm.RHS+" (watermark set at promotion)"))
	}
	gate := func(name, why string, def syntax.Def) n9Aspect {
		var ev []audit.Evidence
		for _, c := range x.conds(def) {
			if strings.Contains(c.Text, "pn_path_start") {
				ev = append(ev, x.ev(c.Pos, "guard", c.Text))
			}
		}
		if len(ev) > 0 && okW {
			return n9Aspect{name, audit.Yes, why, append(ev, wmEv...)}
		}
		return n9Aspect{name, audit.No, "no pn_path_start gate in " + def.Name, nil}
	}
	var as []n9Aspect
	a := gate("rtt", "largest_newly_acked (the RTT sample) is taken only from packets at or above pn_path_start", ack)
	as = append(as, a)
	g := gate("growth", "acked bytes count towards the window only for packets at or above pn_path_start", ack)
	as = append(as, g)
	as = append(as, gate("loss", "cc_on_lost is called only for lost packets at or above pn_path_start", ncc))
	// in flight: promote_path declares every sentmap packet lost (QUICLY_SENTMAP_EVENT_PTO).
	if c, ok := x.callIn(pp, "quicly_sentmap_update", "QUICLY_SENTMAP_EVENT_PTO"); ok {
		ev := []audit.Evidence{x.ev(c.Pos, "call", "every packet still in flight is marked lost at promotion")}
		for _, cm := range x.commentsIn(qlyC, pp.Line, c.Line, "mark all packets as lost") {
			ev = append(ev, x.ev(cm.Pos, "comment", n9OneLine(cm.Context)))
		}
		as = append(as, n9Aspect{"inflight", audit.Yes, "old-path packets leave bytes in flight at promotion (declared lost), like quic-go", ev})
	} else {
		as = append(as, n9Aspect{"inflight", audit.No, "in-flight packets not removed at promotion", nil})
	}
	of, aux := x.q3(n9Observing, "packet-number watermark pn_path_start (set in promote_path) plus loss-marking of everything in flight at promotion", as)
	m, ok := qlyMigrating(x)
	if !ok {
		return x.absent(audit.Q3), nil
	}
	m.Mechanism = "a client never promotes a path, so no watermark is set when its own address changes"
	fm := x.finding(audit.Q3, n9Migrating, m)
	return append([]audit.Finding{fm, of, x.combined(audit.Q3, fm, of)}, aux...), nil
}

func qlyConstants(p *audit.Pass) ([]audit.Finding, error) {
	x, err := n9Open(p, qlyFiles...)
	if err != nil {
		return nil, err
	}
	calc, _, ok1 := x.fnIn(qlyReno, "quicly_cc_calc_initial_cwnd", "")
	lost, _, ok2 := x.fnIn(qlyReno, "quicly_cc_reno_on_lost", "")
	pp, _, ok3 := x.fnIn(qlyC, "promote_path", "")
	df := x.file("lib/defaults.c")
	if !ok1 || !ok2 || !ok3 || df == nil {
		return x.absent(audit.ConstInitialWindow), nil
	}
	field := func(name string) (syntax.Assign, bool) {
		for _, a := range df.Assigns("") {
			if a.Func == "" && strings.TrimPrefix(a.LHS, ".") == name {
				return a, true
			}
		}
		x.missing = append(x.missing, "quicly_spec_context."+name)
		return syntax.Assign{}, false
	}
	icw, ok4 := field("initcwnd_packets")
	mus, ok5 := field("initial_egress_max_udp_payload_size")
	icc, ok6 := field("init_cc")
	lossConf, ok7 := field("loss")
	if !ok4 || !ok5 || !ok6 || !ok7 {
		return x.absent(audit.ConstInitialWindow), nil
	}
	ni, err := x.resolver(nil).eval(icw.RHS)
	if err != nil {
		return nil, err
	}
	s, err := x.resolver(nil).eval(mus.RHS)
	if err != nil {
		return nil, err
	}
	mtuMax, okM := x.assignIn(calc, "mtu_max", "")
	if !okM {
		x.missing = append(x.missing, "mtu_max in quicly_cc_calc_initial_cwnd")
		return x.absent(audit.ConstInitialWindow), nil
	}
	common := []audit.Evidence{x.ev(icw.Pos, "setting", "initcwnd_packets = "+icw.RHS), x.ev(mus.Pos, "setting", "initial_egress_max_udp_payload_size = "+mus.RHS),
		x.ev(icc.Pos, "setting", "init_cc = "+icc.RHS)}
	if pos, ok := x.lineWith("include/quicly/defaults.h", 1, "#define quicly_default_init_cc"); ok {
		common = append(common, x.ev(pos, "setting", "default controller"))
	}
	if c, ok := x.callIn(pp, "quicly_cc_calc_initial_cwnd"); ok {
		common = append(common, x.ev(c.Pos, "call", "the same window is assigned by the reset in promote_path"))
	}
	// quicly_cc_calc_initial_cwnd: `if (max_packets < QUICLY_MIN_CWND) max_packets = QUICLY_MIN_CWND;`,
	// `if (max_udp_payload_size > mtu_max) max_udp_payload_size = mtu_max;`, then their product:
	// max(max_packets, QUICLY_MIN_CWND) * min(max_udp_payload_size, mtu_max). Each piece is checked.
	c1, okC1 := x.cond(calc, "max_packets < QUICLY_MIN_CWND")
	c2, okC2 := x.cond(calc, "max_udp_payload_size > mtu_max")
	prod, okP := x.assignIn(calc, "cwnd_bytes", "max_packets", "max_udp_payload_size")
	if !okC1 || !okC2 || !okP {
		x.missing = append(x.missing, "filters and product in quicly_cc_calc_initial_cwnd")
		return x.absent(audit.ConstInitialWindow), nil
	}
	common = append(common, x.ev(c1.Pos, "guard", c1.Text), x.ev(c2.Pos, "guard", c2.Text))
	par := map[string]n9Param{"max_packets": {"initcwnd_packets", ni}, "max_udp_payload_size": {"S", s}, "mtu_max": {"mtu_max", 0}}
	mm, err := x.resolver(nil).eval(mtuMax.RHS)
	if err != nil {
		return nil, err
	}
	par["mtu_max"] = n9Param{"mtu_max", mm}
	var out []audit.Finding
	f, err := x.resolver(par).constant(audit.ConstInitialWindow, "max(max_packets, QUICLY_MIN_CWND) * min(max_udp_payload_size, mtu_max)",
		prod.Pos, "quicly_cc_calc_initial_cwnd(initcwnd_packets, max_udp_payload_size)",
		"the filters and product of quicly_cc_calc_initial_cwnd; S = egress max_udp_payload_size (initially initial_egress_max_udp_payload_size; a server raises it to the client's Initial datagram size, at most 1472)", false)
	if err != nil {
		return nil, err
	}
	f.Evidence = n9Dedupe(append(f.Evidence, append(common, x.ev(mtuMax.Pos, "definition", "mtu_max = "+mtuMax.RHS))...))
	out = append(out, f)
	floor, okF := x.assignIn(lost, "cwnd", "QUICLY_MIN_CWND")
	if okF {
		f, err = x.resolver(map[string]n9Param{"max_udp_payload_size": {"S", s}}).constant(audit.ConstMinWindow, floor.RHS, floor.Pos, "QUICLY_MIN_CWND * max_udp_payload_size", "floor of the Reno loss reduction", false)
		if err != nil {
			return nil, err
		}
		out = append(out, f)
	} else {
		x.missing = append(x.missing, "floor in quicly_cc_reno_on_lost")
	}
	red, okR := x.assignIn(lost, "cwnd", "QUICLY_RENO_BETA")
	if okR {
		// cc->cwnd *= cc->ssthresh == UINT32_MAX ? 0.5 : QUICLY_RENO_BETA
		f, err = x.resolver(nil).constant(audit.ConstLossFactor, "QUICLY_RENO_BETA", red.Pos, "QUICLY_RENO_BETA (after the first loss)", "cwnd *= ssthresh == UINT32_MAX ? 0.5 : QUICLY_RENO_BETA", false)
		if err != nil {
			return nil, err
		}
		f.Detail = "source expression: " + red.RHS + "; the first loss out of slow start halves the window (0.5), later losses apply QUICLY_RENO_BETA"
		out = append(out, f)
		alt, err := x.resolver(nil).constant(audit.ConstLossFactor, "0.5", red.Pos, "first loss out of slow start (ssthresh == UINT32_MAX)", "without HyStart++ quicly halves on the first loss", true)
		if err != nil {
			return nil, err
		}
		out = append(out, alt)
	} else {
		x.missing = append(x.missing, "reduction in quicly_cc_reno_on_lost")
	}
	// default RTT: QUICLY_LOSS_SPEC_CONF's initial_rtt field is QUICLY_DEFAULT_INITIAL_RTT (ms).
	if d, ok := x.def("QUICLY_DEFAULT_INITIAL_RTT"); ok {
		f, err = x.resolver(nil).constant(audit.ConstDefaultRTT, "QUICLY_DEFAULT_INITIAL_RTT * 1000", d.Pos, "QUICLY_DEFAULT_INITIAL_RTT (ms → µs)", "loss = "+lossConf.RHS+" (QUICLY_LOSS_SPEC_CONF initial_rtt)", false)
		if err != nil {
			return nil, err
		}
		f.Evidence = append(f.Evidence, x.ev(lossConf.Pos, "setting", "loss = "+lossConf.RHS))
		if pos, ok := x.lineWith("include/quicly/loss.h", 1, "QUICLY_DEFAULT_INITIAL_RTT,"); ok {
			f.Evidence = append(f.Evidence, x.ev(pos, "setting", "QUICLY_LOSS_SPEC_CONF initial_rtt"))
		}
		out = append(out, f)
	}
	if len(x.missing) > 0 {
		out = append(out, x.absent(audit.ConstInitialWindow)...)
	}
	return out, nil
}
