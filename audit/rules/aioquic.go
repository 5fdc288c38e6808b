package rules

import (
	"fmt"
	"strings"

	"github.com/migaudit/migaudit/audit"
	"github.com/migaudit/migaudit/audit/syntax"
)

// aioquic (aiortc/aioquic, Python, parsed with tree-sitter's Python grammar).
// Sans-IO and connection-wide: QuicConnection._loss (QuicPacketRecovery)
// holds the one congestion controller and RTT estimator; QuicNetworkPath is
// only an address with anti-amplification counters. A peer moving is a path
// promotion in receive_datagram; nothing resets the recovery state, which is
// assigned only in QuicPacketRecovery.__init__.

const (
	aioConn = "src/aioquic/quic/connection.py"
	aioRec  = "src/aioquic/quic/recovery.py"
	aioCfg  = "src/aioquic/quic/configuration.py"
	aioBase = "src/aioquic/quic/congestion/base.py"
	aioReno = "src/aioquic/quic/congestion/reno.py"
	aioPB   = "src/aioquic/quic/packet_builder.py"
)

var aioFiles = []string{aioConn, aioRec, aioCfg, aioBase, aioReno, aioPB}

func init() {
	audit.Register("aioquic",
		n9Rule("aioquic/q1", "Where are the recovery state's RTT and controller assigned (only __init__?), and what does a path promotion or CID change do?", audit.Q1, aioQ1),
		n9Rule("aioquic/q2", "Does _handle_path_response_frame touch the RTT estimator?", audit.Q2, aioQ2),
		n9Rule("aioquic/q3", "Do sent packets carry a path, and is ACK/loss processing gated by it?", audit.Q3, aioQ3),
		n9Rule("aioquic/constants", "Reno (default) K_INITIAL_WINDOW, K_MINIMUM_WINDOW, K_LOSS_REDUCTION_FACTOR; initial_rtt default.", audit.ConstInitialWindow, aioConstants),
	)
}

// aioNoReset: the recovery state is assigned only in QuicPacketRecovery.__init__.
func aioNoReset(x *n9, v *n9Verdict) bool {
	rf := x.file(aioRec)
	init, _, ok := x.fnIn(aioRec, "__init__", "QuicPacketRecovery")
	if rf == nil || !ok {
		return false
	}
	resets := 0
	for _, a := range rf.Assigns("") {
		if (a.Target == "_rtt_initialized" && a.RHS == "False") || a.Target == "_cc" || a.Target == "_rtt_smoothed" && a.Func != "on_ack_received" {
			if a.Func == "__init__" {
				v.add(x.ev(a.Pos, "assignment", a.LHS+" = "+n9OneLine(a.RHS)+" (QuicPacketRecovery.__init__ only)"))
			} else {
				resets++
				v.add(x.ev(a.Pos, "assignment", a.LHS+" = "+a.RHS+" in "+a.Func))
			}
		}
	}
	v.count("recovery_resets_outside_init", resets)
	cf := x.file(aioConn)
	var created []syntax.Call
	for _, c := range cf.Calls("QuicPacketRecovery") {
		created = append(created, c)
	}
	v.count("QuicPacketRecovery_constructions", len(created))
	for _, c := range created {
		v.add(x.ev(c.Pos, "call", "the connection's only recovery object, built in "+c.Func))
	}
	_ = init
	return resets == 0 && len(created) == 1
}

func aioQ1(p *audit.Pass) ([]audit.Finding, error) {
	x, err := n9Open(p, aioFiles...)
	if err != nil {
		return nil, err
	}
	rd, _, ok1 := x.fnIn(aioConn, "receive_datagram", "QuicConnection")
	np, _, ok2 := x.fnIn(aioConn, "__init__", "QuicNetworkPath")
	cci, _, ok3 := x.fnIn(aioConn, "change_connection_id", "QuicConnection")
	if !ok1 || !ok2 || !ok3 {
		return x.absent(audit.Q1), nil
	}
	base := n9Verdict{}
	var fields []string
	for _, a := range x.assignsIn(np) {
		fields = append(fields, a.Target)
	}
	base.add(x.ev(np.Pos, "definition", "QuicNetworkPath holds only: "+strings.Join(fields, ", ")))
	noReset := aioNoReset(x, &base)
	// Observing: path promotion.
	o := base
	o.Evidence = append([]audit.Evidence{}, base.Evidence...)
	promo := syntax.Assign{}
	for _, c := range x.callsIn(rd, "insert") {
		if strings.Contains(c.Text, "_network_paths.insert(0") {
			o.add(x.ev(c.Pos, "call", "peer address promoted to the active path: "+n9GuardText(c.Guards)))
			promo.Pos = c.Pos
		}
	}
	promoTouches := 0
	if promo.Line > 0 {
		for _, g := range x.file(aioConn).GuardsAt(promo.Line) {
			arm := syntax.Def{Pos: syntax.Pos{Path: aioConn, Line: g.Line, EndLine: promo.Line + 2}}
			promoTouches = len(x.touches(arm, "_loss", "QuicPacketRecovery", "_cc"))
			break
		}
	}
	o.count("recovery_touched_on_promotion", promoTouches)
	// Migrating: sans-IO, the connection never learns its own address; the app may rotate CIDs.
	m := base
	m.Evidence = append([]audit.Evidence{}, base.Evidence...)
	m.add(x.ev(rd.Pos, "definition", "receive_datagram(data, addr, now): addr is the peer's address only"))
	m.add(x.ev(cci.Pos, "definition", "change_connection_id: the client-side migration aid"))
	m.count("change_connection_id_touches_recovery", len(x.touches(cci, "_loss", "_cc", "QuicPacketRecovery")))
	if promo.Line == 0 {
		x.missing = append(x.missing, "path promotion (_network_paths.insert(0, ...)) in receive_datagram")
		return x.absent(audit.Q1), nil
	}
	if noReset && promoTouches == 0 {
		o.Answer = audit.No
		o.Mechanism = "connection-wide recovery state: receive_datagram promotes the peer's new address to the active network path without touching _loss (RTT estimator and controller are never reset after QuicPacketRecovery.__init__)"
		o.note("No port-only distinction: any address change is handled the same way.")
		m.Answer = audit.No
		m.Mechanism = "sans-IO: QuicConnection never learns its own address, so a client that moves (its application rebinding the socket, optionally calling change_connection_id) keeps _loss unchanged"
	} else {
		o.Answer, m.Answer = audit.Unknown, audit.Unknown
		o.Mechanism = fmt.Sprintf("recovery state reset somewhere (resets outside __init__: %d)", base.Counts["recovery_resets_outside_init"])
		m.Mechanism = o.Mechanism
	}
	fm, fo := x.finding(audit.Q1, n9Migrating, m), x.finding(audit.Q1, n9Observing, o)
	return []audit.Finding{fm, fo, x.combined(audit.Q1, fm, fo)}, nil
}

func aioQ2(p *audit.Pass) ([]audit.Finding, error) {
	x, err := n9Open(p, aioFiles...)
	if err != nil {
		return nil, err
	}
	h, _, ok := x.fnIn(aioConn, "_handle_path_response_frame", "QuicConnection")
	if !ok {
		return x.absent(audit.Q2), nil
	}
	v := n9Verdict{}
	v.add(x.ev(h.Pos, "handler", "_handle_path_response_frame"))
	for _, a := range x.assignsIn(h) {
		v.add(x.ev(a.Pos, "assignment", a.LHS+" = "+a.RHS))
	}
	if hit := x.touches(h, "_loss", "_rtt_smoothed", "_rtt_initial", "_rtt_latest"); len(hit) > 0 {
		v.Answer, v.Mechanism = audit.Yes, "PATH_RESPONSE handling touches "+strings.Join(hit, ", ")
	} else {
		v.Answer, v.Mechanism = audit.No, "PATH_RESPONSE only marks the network path validated; the round trip is not measured"
	}
	return []audit.Finding{x.finding(audit.Q2, n9Both, v)}, nil
}

func aioQ3(p *audit.Pass) ([]audit.Finding, error) {
	x, err := n9Open(p, aioFiles...)
	if err != nil {
		return nil, err
	}
	oar, _, ok1 := x.fnIn(aioRec, "on_ack_received", "QuicPacketRecovery")
	lost, _, ok2 := x.fnIn(aioRec, "_on_packets_lost", "QuicPacketRecovery")
	pb := x.file(aioPB)
	if !ok1 || !ok2 || pb == nil {
		return x.absent(audit.Q3), nil
	}
	var sp syntax.Def
	for _, d := range pb.Defs("QuicSentPacket") {
		sp = d
	}
	pathField := false
	if sp.Line > 0 {
		for l := sp.Line; l <= sp.EndLine; l++ {
			if strings.Contains(pb.Line(l), "path") {
				pathField = true
			}
		}
	}
	ev := []audit.Evidence{x.ev(sp.Pos, "definition", fmt.Sprintf("QuicSentPacket: path field present = %v", pathField))}
	gated := func(def syntax.Def) bool {
		for _, c := range x.conds(def) {
			if strings.Contains(c.Text, "path") {
				return true
			}
		}
		return false
	}
	var as []n9Aspect
	mk := func(name string, def syntax.Def, call, why string) {
		a := n9Aspect{Name: name, Answer: audit.No, Why: why, Ev: ev}
		if c, ok := x.callIn(def, call); ok {
			a.Ev = append([]audit.Evidence{x.ev(c.Pos, "call", n9GuardText(c.Guards))}, ev...)
		}
		if pathField && gated(def) {
			a.Answer, a.Why = audit.Yes, name+" gated by path"
		}
		as = append(as, a)
	}
	mk("rtt", oar, "on_rtt_measurement", "the RTT estimate is updated from any newly acked largest packet")
	mk("growth", oar, "on_packet_acked", "every acked in-flight packet grows the single controller")
	mk("loss", lost, "on_packets_lost", "every lost packet reduces the single controller")
	mk("inflight", oar, "on_packet_acked", "one connection-wide bytes_in_flight")
	f, aux := x.q3(n9Both, "no path attribution: sent packets carry no path and the single QuicPacketRecovery takes every ACK and loss", as)
	return append([]audit.Finding{f}, aux...), nil
}

func aioConstants(p *audit.Pass) ([]audit.Finding, error) {
	x, err := n9Open(p, aioFiles...)
	if err != nil {
		return nil, err
	}
	cf := x.file(aioCfg)
	base, _, ok1 := x.fnIn(aioBase, "__init__", "QuicCongestionControl")
	lost, _, ok2 := x.fnIn(aioReno, "on_packets_lost", "RenoCongestionControl")
	if cf == nil || !ok1 || !ok2 {
		return x.absent(audit.ConstInitialWindow), nil
	}
	cls := map[string]syntax.Assign{}
	for _, a := range cf.Assigns("") {
		if a.Func == "" {
			cls[a.Target] = a
		}
	}
	alg, okA := cls["congestion_control_algorithm"]
	mds, okM := cls["max_datagram_size"]
	rtt, okR := cls["initial_rtt"]
	if !okA || !okM || !okR {
		x.missing = append(x.missing, "QuicConfiguration defaults")
		return x.absent(audit.ConstInitialWindow), nil
	}
	r := x.resolver(nil)
	s, err := r.eval(mds.RHS)
	if err != nil {
		return nil, err
	}
	par := map[string]n9Param{"max_datagram_size": {"S", s}, "_max_datagram_size": {"S", s}}
	common := []audit.Evidence{x.ev(alg.Pos, "setting", "congestion_control_algorithm = "+alg.RHS), x.ev(mds.Pos, "setting", "max_datagram_size = "+mds.RHS)}
	for _, d := range r.defs {
		common = append(common, x.ev(d.Pos, "definition", d.Name))
	}
	var out []audit.Finding
	iw, ok := x.assignIn(base, "congestion_window", "K_INITIAL_WINDOW")
	if !ok {
		x.missing = append(x.missing, "congestion_window in QuicCongestionControl.__init__")
		return x.absent(audit.ConstInitialWindow), nil
	}
	f, err := x.resolver(par).constant(audit.ConstInitialWindow, iw.RHS, iw.Pos, "QuicCongestionControl.__init__", "Reno (default), S = QuicConfiguration.max_datagram_size", false)
	if err != nil {
		return nil, err
	}
	f.Evidence = n9Dedupe(append(f.Evidence, common...))
	out = append(out, f)
	cw, ok := x.assignIn(lost, "congestion_window", "K_LOSS_REDUCTION_FACTOR")
	if !ok {
		x.missing = append(x.missing, "congestion_window in RenoCongestionControl.on_packets_lost")
		return append(out, x.absent(audit.ConstMinWindow)...), nil
	}
	// max(int(cwnd * K_LOSS_REDUCTION_FACTOR), K_MINIMUM_WINDOW * self._max_datagram_size)
	rhs := n9OneLine(cw.RHS)
	inner := strings.TrimSuffix(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rhs), ")")), ",")
	i := strings.LastIndex(inner, ",")
	if i < 0 {
		x.missing = append(x.missing, "floor in the loss reduction")
		return append(out, x.absent(audit.ConstMinWindow)...), nil
	}
	floor := strings.TrimSpace(inner[i+1:])
	f, err = x.resolver(par).constant(audit.ConstMinWindow, floor, cw.Pos, "Reno loss floor", "floor of the loss reduction", false)
	if err != nil {
		return nil, err
	}
	out = append(out, f)
	if d, ok := x.def("K_LOSS_REDUCTION_FACTOR"); ok {
		f, err = x.resolver(nil).constant(audit.ConstLossFactor, d.Value, d.Pos, "K_LOSS_REDUCTION_FACTOR", "Reno: cwnd * K_LOSS_REDUCTION_FACTOR on a new congestion event", false)
		if err != nil {
			return nil, err
		}
		f.Evidence = append(f.Evidence, x.ev(cw.Pos, "assignment", "congestion_window = "+rhs))
		out = append(out, f)
	}
	f, err = x.resolver(nil).constant(audit.ConstDefaultRTT, rtt.RHS+" * 1000000", rtt.Pos, "QuicConfiguration.initial_rtt (seconds → µs)", "initial_rtt default", false)
	if err != nil {
		return nil, err
	}
	return append(out, f), nil
}
