package rules

import (
	"fmt"
	"strings"

	"github.com/migaudit/migaudit/audit"
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

func init() {
	audit.Register("lsquic",
		n9Rule("lsquic/q1", "switch_path_to -> lsquic_send_ctl_repath: reset of rtt_stats and cci_reinit unless es_optimistic_nat && only_peer_port_changed; its call sites per role; cci_reinit handlers.", audit.Q1, lsqQ1),
		n9Rule("lsquic/q2", "Does process_path_response_frame touch rtt_stats?", audit.Q2, lsqQ2),
		n9Rule("lsquic/q3", "After repath, are old-path packets kept out of RTT, growth, loss and bytes in flight?", audit.Q3, lsqQ3),
		n9Rule("lsquic/constants", "Adaptive default (Cubic below es_cc_rtt_thresh, else BBRv1): initial windows, minimum windows, Cubic loss factor, INITIAL_RTT.", audit.ConstInitialWindow, lsqConstants),
	)
}

// lsqReset: what switch_path_to does, and the exemption.
func lsqReset(x *n9) (n9Verdict, []syntax.Call, bool) {
	v := n9Verdict{}
	sw, _, ok1 := x.fnIn(lsqConn, "switch_path_to", "")
	rp, _, ok2 := x.fnIn(lsqCtl, "lsquic_send_ctl_repath", "")
	if !ok1 || !ok2 {
		return v, nil, false
	}
	v.add(x.ev(sw.Pos, "definition", "switch_path_to"))
	keep, okK := x.assignIn(sw, "keep_path_properties", "only_peer_port_changed")
	call, okC := x.callIn(sw, "lsquic_send_ctl_repath", "keep_path_properties")
	reinit, okR := x.callIn(rp, "cci_reinit")
	memset, okM := x.callIn(rp, "memset", "rtt_stats")
	if okK {
		v.add(x.ev(keep.Pos, "assignment", "keep_path_properties = "+keep.RHS))
	}
	if okC {
		v.add(x.ev(call.Pos, "call", call.Text))
	}
	if okM {
		v.add(x.ev(memset.Pos, "call", "RTT estimator zeroed ("+n9GuardText(memset.Guards)+")"))
	}
	if okR {
		v.add(x.ev(reinit.Pos, "call", "congestion controller re-initialised through the cci_reinit vtable slot ("+n9GuardText(reinit.Guards)+")"))
	}
	sites := x.file(lsqConn).Calls("switch_path_to")
	v.count("switch_path_to_call_sites", len(sites))
	if okR && okM && n9ContainsAll(n9GuardText(reinit.Guards), "else", "keep_path_properties") {
		v.Answer = audit.Yes
		v.Mechanism = "connection-wide state reset on every path switch: switch_path_to -> lsquic_send_ctl_repath zeroes rtt_stats and calls cci_reinit"
	} else {
		v.Answer = audit.No
		v.Mechanism = "lsquic_send_ctl_repath does not reset RTT and congestion state"
	}
	if okK && strings.Contains(keep.RHS, "es_optimistic_nat") {
		v.note("Port-only exemption implemented on purpose: with es_optimistic_nat (default LSQUIC_DF_OPTIMISTIC_NAT) and only the peer port changed, the RTT and CC state are kept (`%s`).", keep.RHS)
		v.count("port_only_exemption", 1)
		if d, ok := x.def("LSQUIC_DF_OPTIMISTIC_NAT"); ok {
			v.add(x.ev(d.Pos, "setting", "LSQUIC_DF_OPTIMISTIC_NAT "+d.Value))
		}
		if d := x.optFn(lsqConn, "only_peer_port_changed", ""); d.Line > 0 {
			v.add(x.ev(d.Pos, "definition", "only_peer_port_changed: same local address, same peer IP, different peer port"))
		}
	}
	return v, sites, true
}

func lsqQ1(p *audit.Pass) ([]audit.Finding, error) {
	x, err := n9Open(p, lsqFiles...)
	if err != nil {
		return nil, err
	}
	base, sites, ok := lsqReset(x)
	ttbm, _, ok2 := x.fnIn(lsqConn, "try_to_begin_migration", "")
	if !ok || !ok2 {
		return x.absent(audit.Q1), nil
	}
	var client, both []syntax.Call
	for _, c := range sites {
		g := n9GuardText(c.Guards)
		if n9ContainsAll(g, "else", "IFC_SERVER") {
			client = append(client, c)
		} else {
			both = append(both, c)
		}
	}
	m := base
	m.Evidence = append([]audit.Evidence{}, base.Evidence...)
	m.Detail = append([]string{}, base.Detail...)
	for _, c := range client {
		m.add(x.ev(c.Pos, "call", "client switches to the validated path: "+n9GuardText(c.Guards)))
	}
	for _, c := range both {
		m.add(x.ev(c.Pos, "call", "in "+c.Func+": "+n9GuardText(c.Guards)))
	}
	if c, ok := x.cond(ttbm, "es_allow_migration"); ok {
		m.add(x.ev(c.Pos, "guard", "client-initiated migration: to the server's preferred_address only ("+c.Text+")"))
		m.note("The client migrates only to a server's preferred_address (try_to_begin_migration, es_allow_migration default LSQUIC_DF_ALLOW_MIGRATION); the library has no API to move a client to a new local address.")
	}
	o := base
	o.Evidence = append([]audit.Evidence{}, base.Evidence...)
	o.Detail = append([]string{}, base.Detail...)
	for _, c := range both {
		o.add(x.ev(c.Pos, "call", "in "+c.Func+": "+n9GuardText(c.Guards)))
	}
	fm, fo := x.finding(audit.Q1, n9Migrating, m), x.finding(audit.Q1, n9Observing, o)
	out := []audit.Finding{fm, fo, x.combined(audit.Q1, fm, fo)}
	// Hook: cci_reinit, dispatched through the vtable; handlers are vtable initialisers.
	var handlers []syntax.Def
	for _, f := range x.set {
		for _, a := range f.Assigns("") {
			if a.Op == "field" && strings.TrimPrefix(a.LHS, ".") == "cci_reinit" {
				if d, _, ok := x.fn(strings.TrimSpace(a.RHS), ""); ok {
					handlers = append(handlers, d)
				}
			}
		}
	}
	out = append(out, x.hook("cci_reinit", "congestion-controller re-initialisation, implemented by "+fmt.Sprint(len(handlers))+" algorithms", handlers, x.calls("cci_reinit")))
	out = append(out, x.hook("switch_path_to", "the path switch that resets RTT and CC", []syntax.Def{x.optFn(lsqConn, "switch_path_to", "")}, sites))
	return out, nil
}

func lsqQ2(p *audit.Pass) ([]audit.Finding, error) {
	x, err := n9Open(p, lsqFiles...)
	if err != nil {
		return nil, err
	}
	pr, _, ok := x.fnIn(lsqConn, "process_path_response_frame", "")
	if !ok {
		return x.absent(audit.Q2), nil
	}
	v := n9Verdict{}
	v.add(x.ev(pr.Pos, "handler", "process_path_response_frame"))
	if c, ok := x.callIn(pr, "switch_path_to"); ok {
		v.add(x.ev(c.Pos, "call", "validated path switched to (repath resets rtt_stats to zero)"))
	}
	if hit := x.touches(pr, "rtt_stats", "lsquic_rtt_stats_update", "srtt"); len(hit) > 0 {
		v.Answer, v.Mechanism = audit.Yes, "PATH_RESPONSE handling touches "+strings.Join(hit, ", ")
	} else {
		v.Answer, v.Mechanism = audit.No, "PATH_RESPONSE marks the path validated and may switch to it; the challenge round trip is not recorded and repath zeroes rtt_stats"
	}
	return []audit.Finding{x.finding(audit.Q2, n9Both, v)}, nil
}

func lsqQ3(p *audit.Pass) ([]audit.Finding, error) {
	x, err := n9Open(p, lsqFiles...)
	if err != nil {
		return nil, err
	}
	rp, _, ok1 := x.fnIn(lsqCtl, "lsquic_send_ctl_repath", "")
	ack, _, ok2 := x.fnIn(lsqCtl, "lsquic_send_ctl_got_ack", "")
	trs, _, ok3 := x.fnIn(lsqCtl, "take_rtt_sample", "")
	le, _, ok4 := x.fnIn(lsqCtl, "send_ctl_loss_event", "")
	if !ok1 || !ok2 || !ok3 || !ok4 {
		return x.absent(audit.Q3), nil
	}
	relabel, okL := x.assignIn(rp, "po_path", "new")
	var relabelEv []audit.Evidence
	if okL {
		relabelEv = append(relabelEv, x.ev(relabel.Pos, "assignment", relabel.LHS+" = "+relabel.RHS+" ("+n9GuardText(relabel.Guards)+")"))
	}
	pathGate := func(def syntax.Def) (n9Cond, bool) {
		for _, c := range x.conds(def) {
			if strings.Contains(c.Text, "po_path") || strings.Contains(c.Text, "path_id") {
				return c, true
			}
		}
		return n9Cond{}, false
	}
	var as []n9Aspect
	if c, ok := pathGate(trs); ok {
		as = append(as, n9Aspect{"rtt", audit.Yes, "take_rtt_sample gated by path", []audit.Evidence{x.ev(c.Pos, "guard", c.Text)}})
	} else {
		c, _ := x.cond(trs, "sc_max_rtt_packno")
		as = append(as, n9Aspect{"rtt", audit.No, "take_rtt_sample is gated only by packet-number monotonicity (`" + c.Text + "`), not by path", append([]audit.Evidence{x.ev(c.Pos, "guard", c.Text)}, relabelEv...)})
	}
	if ca, ok := x.callIn(ack, "cci_ack"); ok {
		if _, gated := pathGate(ack); gated {
			as = append(as, n9Aspect{"growth", audit.Yes, "cci_ack gated by path", []audit.Evidence{x.ev(ca.Pos, "call", "")}})
		} else {
			as = append(as, n9Aspect{"growth", audit.No, "every newly acked packet is passed to cci_ack, old-path packets included", append([]audit.Evidence{x.ev(ca.Pos, "call", n9GuardText(ca.Guards))}, relabelEv...)})
		}
	}
	if cl, ok := x.callIn(le, "cci_loss"); ok {
		as = append(as, n9Aspect{"loss", audit.No, "send_ctl_loss_event calls cci_loss for any loss, old-path packets included", []audit.Evidence{x.ev(cl.Pos, "call", "")}})
	}
	as = append(as, n9Aspect{"inflight", audit.No, "repath moves the old path's unacked packets to the new path; their bytes stay in flight and are released by later ACKs", relabelEv})
	obs, aux := x.q3(n9Both, "no exclusion: lsquic_send_ctl_repath re-labels every tracked old-path packet as a new-path packet (po_path = new) right after resetting RTT and CC — the reset without the old-path exclusion", as)
	for i := range aux {
		aux[i].Detail = "aspect " + as[i].Name + " (both roles: the same switch_path_to)"
	}
	return append([]audit.Finding{obs}, aux...), nil
}

func lsqConstants(p *audit.Pass) ([]audit.Finding, error) {
	x, err := n9Open(p, lsqFiles...)
	if err != nil {
		return nil, err
	}
	cr, _, ok1 := x.fnIn(lsqCubic, "cubic_reset", "")
	ib, _, ok2 := x.fnIn(lsqBBR, "init_bbr", "")
	cl, _, ok3 := x.fnIn(lsqCubic, "lsquic_cubic_loss", "")
	ct, _, ok4 := x.fnIn(lsqCubic, "lsquic_cubic_timeout", "")
	sel, _, ok5 := x.fnIn(lsqCtl, "send_ctl_select_cc", "")
	if !ok1 || !ok2 || !ok3 || !ok4 || !ok5 {
		return x.absent(audit.ConstInitialWindow), nil
	}
	algo, okA := x.def("LSQUIC_DF_CC_ALGO")
	thr, okT := x.def("LSQUIC_DF_CC_RTT_THRESH")
	var common []audit.Evidence
	if okA {
		common = append(common, x.ev(algo.Pos, "setting", "LSQUIC_DF_CC_ALGO "+algo.Value+" (3 = adaptive)"))
	}
	if c, ok := x.cond(sel, "es_cc_rtt_thresh"); ok {
		common = append(common, x.ev(c.Pos, "guard", "adaptive: Cubic if "+c.Text+", else BBRv1"))
	}
	if okT {
		common = append(common, x.ev(thr.Pos, "setting", "LSQUIC_DF_CC_RTT_THRESH "+thr.Value+" µs"))
	}
	mech := "default adaptive controller (LSQUIC_DF_CC_ALGO): BBRv1 when the first smoothed RTT exceeds LSQUIC_DF_CC_RTT_THRESH, Cubic otherwise"
	var out []audit.Finding
	add := func(q audit.Question, def syntax.Def, target, sub, label string, alt bool) error {
		a, ok := x.assignIn(def, target, sub)
		if !ok {
			x.missing = append(x.missing, fmt.Sprintf("assignment %s in %s", target, def.Name))
			return nil
		}
		rhs := a.RHS
		if q == audit.ConstLossFactor {
			rhs = strings.TrimSpace(strings.TrimPrefix(rhs, "cubic->cu_cwnd *"))
		}
		f, err := x.resolver(nil).constant(q, rhs, a.Pos, label, mech, alt)
		if err != nil {
			return err
		}
		f.Evidence = n9Dedupe(append(f.Evidence, common...))
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
	lf := x.p.Finding(audit.NA, "BBRv1 (the adaptive choice above LSQUIC_DF_CC_RTT_THRESH, i.e. on any emulated WAN path) applies no multiplicative loss factor; Cubic's is reported as an alternative")
	lf.Question = audit.ConstLossFactor
	lf.Evidence = append(lf.Evidence, common...)
	out = append(out, lf)
	if d, ok := x.def("INITIAL_RTT"); ok {
		f, err := x.resolver(nil).constant(audit.ConstDefaultRTT, d.Value, d.Pos, "INITIAL_RTT (µs, used while srtt is 0)", "rtt_stats are zeroed on reset; srtt 0 falls back to INITIAL_RTT", false)
		if err != nil {
			return nil, err
		}
		// Where the zero srtt is replaced: TLP delay by INITIAL_RTT, retransmission delay by DEFAULT_RETX_DELAY.
		for _, sub := range []string{"srtt = INITIAL_RTT", "delay = DEFAULT_RETX_DELAY"} {
			if pos, ok := x.lineWith(lsqCtl, 1, sub); ok {
				f.Evidence = append(f.Evidence, x.ev(pos, "reference", "fallback while srtt is 0"))
			}
		}
		if rd, ok := x.def("DEFAULT_RETX_DELAY"); ok {
			f.Detail += fmt.Sprintf("; a reset zeroes rtt_stats, so a stuck estimator reads srtt 0: the TLP delay then uses INITIAL_RTT and the retransmission delay DEFAULT_RETX_DELAY (%s µs)", strings.TrimSpace(strings.Split(rd.Value, "/*")[0]))
		}
		out = append(out, f)
	}
	if len(x.missing) > 0 {
		out = append(out, x.absent(audit.ConstInitialWindow)...)
	}
	return out, nil
}
