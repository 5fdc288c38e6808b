package rules

import (
	"fmt"
	"strings"

	"github.com/migaudit/migaudit/audit"
	"github.com/migaudit/migaudit/audit/query"
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

func init() { query.Register("aioquic", aioQ1, aioQ2, aioQ3, aioConstants) }

// aioNoReset: the recovery state is assigned only in QuicPacketRecovery.__init__.
func aioNoReset(x *query.Code, v *query.Verdict) bool {
	rf := x.File(aioRec)
	init, ok := x.Find(query.FuncIn(aioRec, "__init__", "QuicPacketRecovery"))
	if rf == nil || !ok {
		return false
	}
	resets := 0
	for _, a := range rf.Assigns("") {
		if (a.Target == "_rtt_initialized" && a.RHS == "False") || a.Target == "_cc" || a.Target == "_rtt_smoothed" && a.Func != "on_ack_received" {
			if a.Func == "__init__" {
				v.Add(x.Evidence(a.Pos, "assignment", a.LHS+" = "+query.OneLine(a.RHS)+" (QuicPacketRecovery.__init__ only)"))
			} else {
				resets++
				v.Add(x.Evidence(a.Pos, "assignment", a.LHS+" = "+a.RHS+" in "+a.Func))
			}
		}
	}
	v.Count("recovery_resets_outside_init", resets)
	cf := x.File(aioConn)
	var created []syntax.Call
	for _, c := range cf.Calls("QuicPacketRecovery") {
		created = append(created, c)
	}
	v.Count("QuicPacketRecovery_constructions", len(created))
	for _, c := range created {
		v.Add(x.Evidence(c.Pos, "call", "the connection's only recovery object, built in "+c.Func))
	}
	_ = init
	return resets == 0 && len(created) == 1
}

var aioQ1 = &query.Rule{
	Name: "aioquic/q1", Question: audit.Q1, Role: query.Both, Files: aioFiles,
	Doc: "Where are the recovery state's RTT and controller assigned (only __init__?), and what does a path promotion or CID change do?",
	// QuicNetworkPath was a @dataclass (class-level fields, no __init__)
	// until 1.1; the class is the anchor, its __init__ only lists fields.
	Needs: []query.Anchor{query.FuncIn(aioConn, "receive_datagram", "QuicConnection"), query.Type("QuicNetworkPath"), query.FuncIn(aioConn, "change_connection_id", "QuicConnection")},
	Decide: func(x *query.Code) ([]audit.Finding, error) {
		n := x.Needed()
		rd, np, cci := n[0], n[1], n[2]
		base := query.Verdict{}
		var fields []string
		if ini, ok := x.Lookup(query.FuncIn(aioConn, "__init__", "QuicNetworkPath")); ok {
			for _, a := range x.AssignsIn(ini) {
				fields = append(fields, a.Target)
			}
			base.Add(x.Evidence(ini.Pos, "definition", "QuicNetworkPath holds only: "+strings.Join(fields, ", ")))
		} else {
			base.Add(x.Evidence(np.Pos, "definition", "QuicNetworkPath: a dataclass of the peer address, anti-amplification counters and challenges"))
		}
		noReset := aioNoReset(x, &base)
		// Observing: path promotion.
		o := base
		o.Evidence = append([]audit.Evidence{}, base.Evidence...)
		promo := syntax.Assign{}
		for _, c := range x.CallsIn(rd, "insert") {
			if strings.Contains(c.Text, "_network_paths.insert(0") {
				o.Add(x.Evidence(c.Pos, "call", "peer address promoted to the active path: "+query.GuardText(c.Guards)))
				promo.Pos = c.Pos
			}
		}
		promoTouches := 0
		if promo.Line > 0 {
			for _, g := range x.File(aioConn).GuardsAt(promo.Line) {
				arm := syntax.Def{Pos: syntax.Pos{Path: aioConn, Line: g.Line, EndLine: promo.Line + 2}}
				promoTouches = len(x.Touches(arm, "_loss", "QuicPacketRecovery", "_cc"))
				break
			}
		}
		o.Count("recovery_touched_on_promotion", promoTouches)
		// Migrating: sans-IO, the connection never learns its own address; the app may rotate CIDs.
		m := base
		m.Evidence = append([]audit.Evidence{}, base.Evidence...)
		m.Add(x.Evidence(rd.Pos, "definition", "receive_datagram(data, addr, now): addr is the peer's address only"))
		m.Add(x.Evidence(cci.Pos, "definition", "change_connection_id: the client-side migration aid"))
		m.Count("change_connection_id_touches_recovery", len(x.Touches(cci, "_loss", "_cc", "QuicPacketRecovery")))
		if promo.Line == 0 {
			x.Missing("path promotion (_network_paths.insert(0, ...)) in receive_datagram")
			return x.Absence()
		}
		if noReset && promoTouches == 0 {
			o.Answer = audit.No
			o.Mechanism = "connection-wide recovery state: receive_datagram promotes the peer's new address to the active network path without touching _loss (RTT estimator and controller are never reset after QuicPacketRecovery.__init__)"
			o.Note("No port-only distinction: any address change is handled the same way.")
			m.Answer = audit.No
			m.Mechanism = "sans-IO: QuicConnection never learns its own address, so a client that moves (its application rebinding the socket, optionally calling change_connection_id) keeps _loss unchanged"
		} else {
			o.Answer, m.Answer = audit.Unknown, audit.Unknown
			o.Mechanism = fmt.Sprintf("recovery state reset somewhere (resets outside __init__: %d)", base.Counts["recovery_resets_outside_init"])
			m.Mechanism = o.Mechanism
		}
		fm, fo := x.RoleFinding(audit.Q1, query.Migrating, m), x.RoleFinding(audit.Q1, query.Observing, o)
		return x.PerRole(audit.Q1, fm, fo), nil
	},
}

var aioQ2 = &query.Rule{
	Name: "aioquic/q2", Question: audit.Q2, Role: query.Both, Files: aioFiles,
	Doc:   "Does _handle_path_response_frame touch the RTT estimator?",
	Needs: []query.Anchor{query.FuncIn(aioConn, "_handle_path_response_frame", "QuicConnection")},
	Decide: func(x *query.Code) ([]audit.Finding, error) {
		h := x.Needed()[0]
		v := query.Verdict{}
		v.Add(x.Evidence(h.Pos, "handler", "_handle_path_response_frame"))
		for _, a := range x.AssignsIn(h) {
			v.Add(x.Evidence(a.Pos, "assignment", a.LHS+" = "+a.RHS))
		}
		if hit := x.Touches(h, "_loss", "_rtt_smoothed", "_rtt_initial", "_rtt_latest"); len(hit) > 0 {
			v.Answer, v.Mechanism = audit.Yes, "PATH_RESPONSE handling touches "+strings.Join(hit, ", ")
		} else {
			v.Answer, v.Mechanism = audit.No, "PATH_RESPONSE only marks the network path validated; the round trip is not measured"
		}
		return []audit.Finding{x.RoleFinding(audit.Q2, query.Both, v)}, nil
	},
}

var aioQ3 = &query.Rule{
	Name: "aioquic/q3", Question: audit.Q3, Role: query.Both, Files: aioFiles,
	Doc:   "Do sent packets carry a path, and is ACK/loss processing gated by it?",
	Needs: []query.Anchor{query.FuncIn(aioRec, "on_ack_received", "QuicPacketRecovery"), query.FuncIn(aioRec, "_on_packets_lost", "QuicPacketRecovery")},
	Decide: func(x *query.Code) ([]audit.Finding, error) {
		n := x.Needed()
		oar, lost := n[0], n[1]
		pb := x.File(aioPB)
		if pb == nil {
			return x.Absence()
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
		ev := []audit.Evidence{x.Evidence(sp.Pos, "definition", fmt.Sprintf("QuicSentPacket: path field present = %v", pathField))}
		gated := func(def syntax.Def) bool {
			for _, c := range x.Conds(def) {
				if strings.Contains(c.Text, "path") {
					return true
				}
			}
			return false
		}
		var as []query.Aspect
		mk := func(name string, def syntax.Def, call, why string) {
			a := query.Aspect{Name: name, Answer: audit.No, Why: why, Ev: ev}
			if c, ok := x.CallIn(def, call); ok {
				a.Ev = append([]audit.Evidence{x.Evidence(c.Pos, "call", query.GuardText(c.Guards))}, ev...)
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
		f, aux := x.Q3(query.Both, "no path attribution: sent packets carry no path and the single QuicPacketRecovery takes every ACK and loss", as)
		return append([]audit.Finding{f}, aux...), nil
	},
}

// Before 1.0 the one controller, QuicCongestionControl (NewReno), lived in
// recovery.py beside K_INITIAL_WINDOW = 10 * K_MAX_DATAGRAM_SIZE; the
// initial RTT was QuicConfiguration.initial_rtt (0.9.2x) or K_INITIAL_RTT.
var aioConstants = query.Choose(aioConstantsPackage, aioConstantsRecovery)

var aioConstantsRecovery = &query.Rule{
	Name: "aioquic/constants", Question: audit.ConstInitialWindow, Role: query.Both, Files: aioFiles,
	Design: "before 1.0: QuicCongestionControl in recovery.py",
	Doc:    "QuicCongestionControl's K_INITIAL_WINDOW, the K_MINIMUM_WINDOW floor, K_LOSS_REDUCTION_FACTOR; initial RTT.",
	Needs:  []query.Anchor{query.FuncIn(aioRec, "__init__", "QuicCongestionControl"), query.FuncIn(aioRec, "on_packets_lost", "QuicCongestionControl")},
	Decide: func(x *query.Code) ([]audit.Finding, error) {
		n := x.Needed()
		init, lost := n[0], n[1]
		var fs query.Findings
		mech := "QuicCongestionControl (NewReno, the only controller), in recovery.py"
		if iw, ok := x.AssignIn(init, "congestion_window", "K_INITIAL_WINDOW"); ok {
			fs.Add(x.Resolver(nil).Constant(audit.ConstInitialWindow, iw.RHS, iw.Pos, "K_INITIAL_WINDOW", mech, false))
		} else {
			x.Missing("congestion_window = K_INITIAL_WINDOW in QuicCongestionControl.__init__")
		}
		if cw, ok := x.AssignIn(lost, "congestion_window", "K_MINIMUM_WINDOW"); ok && strings.Contains(cw.RHS, "K_LOSS_REDUCTION_FACTOR") {
			if f := fs.Add(x.Resolver(nil).Constant(audit.ConstMinWindow, "K_MINIMUM_WINDOW", cw.Pos, "K_MINIMUM_WINDOW (loss floor)", mech, false)); f != nil {
				f.Evidence = append(f.Evidence, x.Evidence(cw.Pos, "assignment", "congestion_window = "+query.OneLine(cw.RHS)))
			}
			if d, ok := x.Const("K_LOSS_REDUCTION_FACTOR"); ok {
				fs.Add(x.Resolver(nil).Constant(audit.ConstLossFactor, d.Value, d.Pos, "K_LOSS_REDUCTION_FACTOR", "cwnd * K_LOSS_REDUCTION_FACTOR on a new congestion event", false))
			}
		} else {
			x.Missing("the loss reduction in QuicCongestionControl.on_packets_lost")
		}
		rttFound := false
		if cf := x.File(aioCfg); cf != nil {
			for _, a := range cf.Assigns("") {
				if a.Func == "" && a.Target == "initial_rtt" {
					fs.Add(x.Resolver(nil).Constant(audit.ConstDefaultRTT, a.RHS+" * 1000000", a.Pos, "QuicConfiguration.initial_rtt (seconds → µs)", "initial_rtt default", false))
					rttFound = true
					break
				}
			}
		}
		if d, ok := x.Const("K_INITIAL_RTT"); ok && !rttFound {
			fs.Add(x.Resolver(nil).Constant(audit.ConstDefaultRTT, d.Value+" * 1000000", d.Pos, "K_INITIAL_RTT (seconds → µs)", "the RTT before the first sample", false))
		} else if !rttFound {
			x.Missing("QuicConfiguration.initial_rtt or K_INITIAL_RTT")
		}
		return fs.Result()
	},
}

var aioConstantsPackage = &query.Rule{
	Name: "aioquic/constants", Question: audit.ConstInitialWindow, Role: query.Both, Files: aioFiles,
	Design: "1.0+: congestion/ package (Reno by default)",
	Doc:    "Reno (default) K_INITIAL_WINDOW, K_MINIMUM_WINDOW, K_LOSS_REDUCTION_FACTOR; initial_rtt default.",
	Needs:  []query.Anchor{query.FuncIn(aioBase, "__init__", "QuicCongestionControl"), query.FuncIn(aioReno, "on_packets_lost", "RenoCongestionControl")},
	Decide: func(x *query.Code) ([]audit.Finding, error) {
		cf := x.File(aioCfg)
		base, ok1 := x.Find(query.FuncIn(aioBase, "__init__", "QuicCongestionControl"))
		lost, ok2 := x.Find(query.FuncIn(aioReno, "on_packets_lost", "RenoCongestionControl"))
		if cf == nil || !ok1 || !ok2 {
			return x.Absence()
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
			x.Missing("QuicConfiguration defaults")
			return x.Absence()
		}
		r := x.Resolver(nil)
		s, err := r.Eval(mds.RHS)
		if err != nil {
			return nil, err
		}
		par := map[string]query.Param{"max_datagram_size": {Name: "S", Default: s}, "_max_datagram_size": {Name: "S", Default: s}}
		common := []audit.Evidence{x.Evidence(alg.Pos, "setting", "congestion_control_algorithm = "+alg.RHS), x.Evidence(mds.Pos, "setting", "max_datagram_size = "+mds.RHS)}
		for _, d := range r.Defs() {
			common = append(common, x.Evidence(d.Pos, "definition", d.Name))
		}
		var out []audit.Finding
		iw, ok := x.AssignIn(base, "congestion_window", "K_INITIAL_WINDOW")
		if !ok {
			x.Missing("congestion_window in QuicCongestionControl.__init__")
			return x.Absence()
		}
		f, err := x.Resolver(par).Constant(audit.ConstInitialWindow, iw.RHS, iw.Pos, "QuicCongestionControl.__init__", "Reno (default), S = QuicConfiguration.max_datagram_size", false)
		if err != nil {
			return nil, err
		}
		f.Evidence = query.Dedupe(append(f.Evidence, common...))
		out = append(out, f)
		cw, ok := x.AssignIn(lost, "congestion_window", "K_LOSS_REDUCTION_FACTOR")
		if !ok {
			return append(out, x.AbsentFor(audit.ConstMinWindow, "congestion_window in RenoCongestionControl.on_packets_lost")), nil
		}
		// max(int(cwnd * K_LOSS_REDUCTION_FACTOR), K_MINIMUM_WINDOW * self._max_datagram_size)
		rhs := query.OneLine(cw.RHS)
		inner := strings.TrimSuffix(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rhs), ")")), ",")
		i := strings.LastIndex(inner, ",")
		if i < 0 {
			return append(out, x.AbsentFor(audit.ConstMinWindow, "floor in the loss reduction")), nil
		}
		floor := strings.TrimSpace(inner[i+1:])
		f, err = x.Resolver(par).Constant(audit.ConstMinWindow, floor, cw.Pos, "Reno loss floor", "floor of the loss reduction", false)
		if err != nil {
			return nil, err
		}
		out = append(out, f)
		if d, ok := x.Const("K_LOSS_REDUCTION_FACTOR"); ok {
			f, err = x.Resolver(nil).Constant(audit.ConstLossFactor, d.Value, d.Pos, "K_LOSS_REDUCTION_FACTOR", "Reno: cwnd * K_LOSS_REDUCTION_FACTOR on a new congestion event", false)
			if err != nil {
				return nil, err
			}
			f.Evidence = append(f.Evidence, x.Evidence(cw.Pos, "assignment", "congestion_window = "+rhs))
			out = append(out, f)
		}
		f, err = x.Resolver(nil).Constant(audit.ConstDefaultRTT, rtt.RHS+" * 1000000", rtt.Pos, "QuicConfiguration.initial_rtt (seconds → µs)", "initial_rtt default", false)
		if err != nil {
			return nil, err
		}
		return append(out, f), nil
	},
}
