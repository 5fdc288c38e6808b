package rules

import (
	"fmt"
	"strings"

	"github.com/migaudit/migaudit/audit"
	"github.com/migaudit/migaudit/audit/query"
	"github.com/migaudit/migaudit/audit/syntax"
)

// lsquic (litespeedtech/lsquic, C). Connection-wide state: one send
// controller (congestion controller through the cci_* vtable) and one
// rtt_stats. switch_path_to -> lsquic_send_ctl_repath resets both on a path
// switch unless es_optimistic_nat and only the peer port changed — and it
// re-labels every packet still tracked on the old path as a new-path packet.

const (
	lsqConn  = "src/liblsquic/lsquic_full_conn_ietf.c"
	lsqCtl   = "src/liblsquic/lsquic_send_ctl.c"
	lsqCubic = "src/liblsquic/lsquic_cubic.c"
	lsqBBR   = "src/liblsquic/lsquic_bbr.c"
)

var lsqFiles = []string{lsqConn, lsqCtl, lsqCubic, lsqBBR, "src/liblsquic/lsquic_adaptive_cc.c", "src/liblsquic/lsquic_cubic.h",
	"src/liblsquic/lsquic_engine.c", "include/lsquic.h"}

func init() { query.Register("lsquic", lsqQ1, lsqQ2, lsqQ3, lsqConstants) }

var lsqResetNeeds = []query.Anchor{query.FuncIn(lsqConn, "switch_path_to", ""), query.FuncIn(lsqCtl, "lsquic_send_ctl_repath", "")}

// lsqReset: what switch_path_to does, and the exemption.
func lsqReset(x *query.Code) (query.Verdict, []syntax.Call) {
	v := query.Verdict{}
	d := x.Defs(lsqResetNeeds...)
	sw, rp := d[0], d[1]
	v.Add(x.Evidence(sw.Pos, "definition", "switch_path_to"))
	keep, okK := x.AssignIn(sw, "keep_path_properties", "only_peer_port_changed")
	call, okC := x.CallIn(sw, "lsquic_send_ctl_repath", "keep_path_properties")
	reinit, okR := x.CallIn(rp, "cci_reinit")
	memset, okM := x.CallIn(rp, "memset", "rtt_stats")
	if okK {
		v.Add(x.Evidence(keep.Pos, "assignment", "keep_path_properties = "+keep.RHS))
	}
	if okC {
		v.Add(x.Evidence(call.Pos, "call", call.Text))
	}
	if okM {
		v.Add(x.Evidence(memset.Pos, "call", "RTT estimator zeroed ("+query.GuardText(memset.Guards)+")"))
	}
	if okR {
		v.Add(x.Evidence(reinit.Pos, "call", "congestion controller re-initialised through the cci_reinit vtable slot ("+query.GuardText(reinit.Guards)+")"))
	}
	sites := x.File(lsqConn).Calls("switch_path_to")
	v.Count("switch_path_to_call_sites", len(sites))
	if okR && okM && query.ContainsAll(query.GuardText(reinit.Guards), "else", "keep_path_properties") {
		v.Answer = audit.Yes
		v.Mechanism = "connection-wide state reset on every path switch: switch_path_to -> lsquic_send_ctl_repath zeroes rtt_stats and calls cci_reinit"
	} else {
		v.Answer = audit.No
		v.Mechanism = "lsquic_send_ctl_repath does not reset RTT and congestion state"
	}
	if okK && strings.Contains(keep.RHS, "es_optimistic_nat") {
		v.Note("Port-only exemption implemented on purpose: with es_optimistic_nat (default LSQUIC_DF_OPTIMISTIC_NAT) and only the peer port changed, the RTT and CC state are kept (`%s`).", keep.RHS)
		v.Count("port_only_exemption", 1)
		if d, ok := x.Const("LSQUIC_DF_OPTIMISTIC_NAT"); ok {
			v.Add(x.Evidence(d.Pos, "setting", "LSQUIC_DF_OPTIMISTIC_NAT "+d.Value))
		}
		if d := x.Opt(query.FuncIn(lsqConn, "only_peer_port_changed", "")); d.Line > 0 {
			v.Add(x.Evidence(d.Pos, "definition", "only_peer_port_changed: same local address, same peer IP, different peer port"))
		}
	}
	return v, sites
}

var lsqQ1 = &query.Rule{
	Name: "lsquic/q1", Question: audit.Q1, Role: query.Both, Files: lsqFiles,
	Doc:   "switch_path_to -> lsquic_send_ctl_repath: reset of rtt_stats and cci_reinit unless es_optimistic_nat && only_peer_port_changed; its call sites per role; cci_reinit handlers.",
	Needs: lsqResetNeeds,
	Decide: func(x *query.Code) ([]audit.Finding, error) {
		base, sites := lsqReset(x)
		ttbm, ok2 := x.Find(query.FuncIn(lsqConn, "try_to_begin_migration", ""))
		if !ok2 {
			return x.Absence()
		}
		var client, both []syntax.Call
		for _, c := range sites {
			g := query.GuardText(c.Guards)
			if query.ContainsAll(g, "else", "IFC_SERVER") {
				client = append(client, c)
			} else {
				both = append(both, c)
			}
		}
		m := base
		m.Evidence = append([]audit.Evidence{}, base.Evidence...)
		m.Detail = append([]string{}, base.Detail...)
		for _, c := range client {
			m.Add(x.Evidence(c.Pos, "call", "client switches to the validated path: "+query.GuardText(c.Guards)))
		}
		for _, c := range both {
			m.Add(x.Evidence(c.Pos, "call", "in "+c.Func+": "+query.GuardText(c.Guards)))
		}
		if c, ok := x.CondIn(ttbm, "es_allow_migration"); ok {
			m.Add(x.Evidence(c.Pos, "guard", "client-initiated migration: to the server's preferred_address only ("+c.Text+")"))
			m.Note("The client migrates only to a server's preferred_address (try_to_begin_migration, es_allow_migration default LSQUIC_DF_ALLOW_MIGRATION); the library has no API to move a client to a new local address.")
		}
		o := base
		o.Evidence = append([]audit.Evidence{}, base.Evidence...)
		o.Detail = append([]string{}, base.Detail...)
		for _, c := range both {
			o.Add(x.Evidence(c.Pos, "call", "in "+c.Func+": "+query.GuardText(c.Guards)))
		}
		fm, fo := x.RoleFinding(audit.Q1, query.Migrating, m), x.RoleFinding(audit.Q1, query.Observing, o)
		out := x.PerRole(audit.Q1, fm, fo)
		// Hook: cci_reinit, dispatched through the vtable; handlers are vtable initialisers.
		var handlers []syntax.Def
		for _, a := range x.Assigns("") {
			if a.Op == "field" && strings.TrimPrefix(a.LHS, ".") == "cci_reinit" {
				if d, ok := x.Lookup(query.Method("", strings.TrimSpace(a.RHS))); ok {
					handlers = append(handlers, d)
				}
			}
		}
		out = append(out, x.Hook("cci_reinit", "congestion-controller re-initialisation, implemented by "+fmt.Sprint(len(handlers))+" algorithms", handlers, x.Calls("cci_reinit")))
		out = append(out, x.Hook("switch_path_to", "the path switch that resets RTT and CC", []syntax.Def{x.Opt(query.FuncIn(lsqConn, "switch_path_to", ""))}, sites))
		return out, nil
	},
}

var lsqQ2 = &query.Rule{
	Name: "lsquic/q2", Question: audit.Q2, Role: query.Both, Files: lsqFiles,
	Doc:   "Does process_path_response_frame touch rtt_stats?",
	Needs: []query.Anchor{query.FuncIn(lsqConn, "process_path_response_frame", "")},
	Decide: func(x *query.Code) ([]audit.Finding, error) {
		pr := x.Needed()[0]
		v := query.Verdict{}
		v.Add(x.Evidence(pr.Pos, "handler", "process_path_response_frame"))
		if c, ok := x.CallIn(pr, "switch_path_to"); ok {
			v.Add(x.Evidence(c.Pos, "call", "validated path switched to (repath resets rtt_stats to zero)"))
		}
		if hit := x.Touches(pr, "rtt_stats", "lsquic_rtt_stats_update", "srtt"); len(hit) > 0 {
			v.Answer, v.Mechanism = audit.Yes, "PATH_RESPONSE handling touches "+strings.Join(hit, ", ")
		} else {
			v.Answer, v.Mechanism = audit.No, "PATH_RESPONSE marks the path validated and may switch to it; the challenge round trip is not recorded and repath zeroes rtt_stats"
		}
		return []audit.Finding{x.RoleFinding(audit.Q2, query.Both, v)}, nil
	},
}

var lsqQ3 = &query.Rule{
	Name: "lsquic/q3", Question: audit.Q3, Role: query.Both, Files: lsqFiles,
	Doc:   "After repath, are old-path packets kept out of RTT, growth, loss and bytes in flight?",
	Needs: []query.Anchor{query.FuncIn(lsqCtl, "lsquic_send_ctl_repath", ""), query.FuncIn(lsqCtl, "lsquic_send_ctl_got_ack", ""), query.FuncIn(lsqCtl, "take_rtt_sample", ""), query.FuncIn(lsqCtl, "send_ctl_loss_event", "")},
	Decide: func(x *query.Code) ([]audit.Finding, error) {
		n := x.Needed()
		rp, ack, trs, le := n[0], n[1], n[2], n[3]
		relabel, okL := x.AssignIn(rp, "po_path", "new")
		var relabelEv []audit.Evidence
		if okL {
			relabelEv = append(relabelEv, x.Evidence(relabel.Pos, "assignment", relabel.LHS+" = "+relabel.RHS+" ("+query.GuardText(relabel.Guards)+")"))
		}
		pathGate := func(def syntax.Def) (query.Cond, bool) {
			for _, c := range x.Conds(def) {
				if strings.Contains(c.Text, "po_path") || strings.Contains(c.Text, "path_id") {
					return c, true
				}
			}
			return query.Cond{}, false
		}
		var as []query.Aspect
		if c, ok := pathGate(trs); ok {
			as = append(as, query.Aspect{Name: "rtt", Answer: audit.Yes, Why: "take_rtt_sample gated by path", Ev: []audit.Evidence{x.Evidence(c.Pos, "guard", c.Text)}})
		} else {
			c, _ := x.CondIn(trs, "sc_max_rtt_packno")
			as = append(as, query.Aspect{Name: "rtt", Answer: audit.No, Why: "take_rtt_sample is gated only by packet-number monotonicity (`" + c.Text + "`), not by path", Ev: append([]audit.Evidence{x.Evidence(c.Pos, "guard", c.Text)}, relabelEv...)})
		}
		if ca, ok := x.CallIn(ack, "cci_ack"); ok {
			if _, gated := pathGate(ack); gated {
				as = append(as, query.Aspect{Name: "growth", Answer: audit.Yes, Why: "cci_ack gated by path", Ev: []audit.Evidence{x.Evidence(ca.Pos, "call", "")}})
			} else {
				as = append(as, query.Aspect{Name: "growth", Answer: audit.No, Why: "every newly acked packet is passed to cci_ack, old-path packets included", Ev: append([]audit.Evidence{x.Evidence(ca.Pos, "call", query.GuardText(ca.Guards))}, relabelEv...)})
			}
		}
		if cl, ok := x.CallIn(le, "cci_loss"); ok {
			as = append(as, query.Aspect{Name: "loss", Answer: audit.No, Why: "send_ctl_loss_event calls cci_loss for any loss, old-path packets included", Ev: []audit.Evidence{x.Evidence(cl.Pos, "call", "")}})
		}
		as = append(as, query.Aspect{Name: "inflight", Answer: audit.No, Why: "repath moves the old path's unacked packets to the new path; their bytes stay in flight and are released by later ACKs", Ev: relabelEv})
		obs, aux := x.Q3(query.Both, "no exclusion: lsquic_send_ctl_repath re-labels every tracked old-path packet as a new-path packet (po_path = new) right after resetting RTT and CC — the reset without the old-path exclusion", as)
		for i := range aux {
			aux[i].Detail = "aspect " + as[i].Name + " (both roles: the same switch_path_to)"
		}
		return append([]audit.Finding{obs}, aux...), nil
	},
}

var lsqConstants = &query.Rule{
	Name: "lsquic/constants", Question: audit.ConstInitialWindow, Role: query.Both, Files: lsqFiles,
	Doc:   "Adaptive default (Cubic below es_cc_rtt_thresh, else BBRv1): initial windows, minimum windows, Cubic loss factor, INITIAL_RTT.",
	Needs: []query.Anchor{query.FuncIn(lsqCubic, "cubic_reset", ""), query.FuncIn(lsqBBR, "init_bbr", ""), query.FuncIn(lsqCubic, "lsquic_cubic_loss", ""), query.FuncIn(lsqCubic, "lsquic_cubic_timeout", ""), query.FuncIn(lsqCtl, "send_ctl_select_cc", "")},
	Decide: func(x *query.Code) ([]audit.Finding, error) {
		n := x.Needed()
		cr, ib, cl, ct, sel := n[0], n[1], n[2], n[3], n[4]
		algo, okA := x.Const("LSQUIC_DF_CC_ALGO")
		thr, okT := x.Const("LSQUIC_DF_CC_RTT_THRESH")
		var common []audit.Evidence
		if okA {
			common = append(common, x.Evidence(algo.Pos, "setting", "LSQUIC_DF_CC_ALGO "+algo.Value+" (3 = adaptive)"))
		}
		if c, ok := x.CondIn(sel, "es_cc_rtt_thresh"); ok {
			common = append(common, x.Evidence(c.Pos, "guard", "adaptive: Cubic if "+c.Text+", else BBRv1"))
		}
		if okT {
			common = append(common, x.Evidence(thr.Pos, "setting", "LSQUIC_DF_CC_RTT_THRESH "+thr.Value+" µs"))
		}
		mech := "default adaptive controller (LSQUIC_DF_CC_ALGO): BBRv1 when the first smoothed RTT exceeds LSQUIC_DF_CC_RTT_THRESH, Cubic otherwise"
		var out []audit.Finding
		var missing []string
		add := func(q audit.Question, def syntax.Def, target, sub, label string, alt bool) error {
			a, ok := x.AssignIn(def, target, sub)
			if !ok {
				missing = append(missing, fmt.Sprintf("assignment %s in %s", target, def.Name))
				return nil
			}
			rhs := a.RHS
			if q == audit.ConstLossFactor {
				rhs = strings.TrimSpace(strings.TrimPrefix(rhs, "cubic->cu_cwnd *"))
			}
			f, err := x.Resolver(nil).Constant(q, rhs, a.Pos, label, mech, alt)
			if err != nil {
				return err
			}
			f.Evidence = query.Dedupe(append(f.Evidence, common...))
			out = append(out, f)
			return nil
		}
		steps := []struct {
			q                  audit.Question
			def                syntax.Def
			target, sub, label string
			alt                bool
		}{
			{audit.ConstInitialWindow, ib, "bbr_cwnd", "kInitialCongestionWindow", "BBRv1 initial cwnd (init_bbr)", false},
			{audit.ConstInitialWindow, cr, "cu_cwnd", "TCP_MSS", "Cubic initial cwnd (cubic_reset)", false},
			{audit.ConstMinWindow, ib, "bbr_min_cwnd", "kDefaultMinimumCongestionWindow", "BBRv1 minimum cwnd", false},
			{audit.ConstMinWindow, ct, "cu_cwnd", "TCP_MSS", "Cubic cwnd after a retransmission timeout (no floor on ordinary loss)", true},
			{audit.ConstLossFactor, cl, "cu_cwnd", "ONE_MINUS_BETA", "Cubic ONE_MINUS_BETA / 1024 (BBRv1, chosen above the RTT threshold, has no loss factor)", true},
		}
		for _, s := range steps {
			if err := add(s.q, s.def, s.target, s.sub, s.label, s.alt); err != nil {
				return nil, err
			}
		}
		lf := x.Finding(audit.NA, "BBRv1 (the adaptive choice above LSQUIC_DF_CC_RTT_THRESH, i.e. on any emulated WAN path) applies no multiplicative loss factor; Cubic's is reported as an alternative")
		lf.Question = audit.ConstLossFactor
		lf.Evidence = append(lf.Evidence, common...)
		out = append(out, lf)
		if d, ok := x.Const("INITIAL_RTT"); ok {
			f, err := x.Resolver(nil).Constant(audit.ConstDefaultRTT, d.Value, d.Pos, "INITIAL_RTT (µs, used while srtt is 0)", "rtt_stats are zeroed on reset; srtt 0 falls back to INITIAL_RTT", false)
			if err != nil {
				return nil, err
			}
			// Where the zero srtt is replaced: TLP delay by INITIAL_RTT, retransmission delay by DEFAULT_RETX_DELAY.
			for _, sub := range []string{"srtt = INITIAL_RTT", "delay = DEFAULT_RETX_DELAY"} {
				if pos, ok := x.LineWith(lsqCtl, 1, sub); ok {
					f.Evidence = append(f.Evidence, x.Evidence(pos, "reference", "fallback while srtt is 0"))
				}
			}
			if rd, ok := x.Const("DEFAULT_RETX_DELAY"); ok {
				f.Detail += fmt.Sprintf("; a reset zeroes rtt_stats, so a stuck estimator reads srtt 0: the TLP delay then uses INITIAL_RTT and the retransmission delay DEFAULT_RETX_DELAY (%s µs)", strings.TrimSpace(strings.Split(rd.Value, "/*")[0]))
			}
			out = append(out, f)
		}
		if len(missing) > 0 {
			out = append(out, x.AbsentFor(audit.ConstInitialWindow, strings.Join(missing, ", ")))
		}
		return out, nil
	},
}
