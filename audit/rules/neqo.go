package rules

import (
	"fmt"
	"strings"

	"github.com/migaudit/migaudit/audit"
	"github.com/migaudit/migaudit/audit/query"
	"github.com/migaudit/migaudit/audit/syntax"
)

// neqo (mozilla/neqo, Rust). Per-path state: each Path owns an RttEstimate and
// a PacketSender (congestion controller). Every new path is created by
// Paths::find_path -> Path::temporary (fresh sender, initial RTT) and then
// primed with the primary path's RTT (prime_rtt). Old-path packets are kept out
// of the new path's accounting by a per-packet "primary path" flag that
// Loss::migrate clears — but only on the client's migration paths.

const (
	neqoPath = "neqo-transport/src/path.rs"
	neqoConn = "neqo-transport/src/connection/mod.rs"
	neqoRec  = "neqo-transport/src/recovery/mod.rs"
	neqoCC   = "neqo-transport/src/cc/classic_cc.rs"
)

var neqoFiles = []string{
	"neqo-transport/src/path.rs", "neqo-transport/src/connection/mod.rs", "neqo-transport/src/connection/params.rs",
	"neqo-transport/src/recovery/*.rs", "neqo-transport/src/cc/*.rs", "neqo-transport/src/rtt.rs",
	"neqo-transport/src/pmtud.rs", "neqo-transport/src/sender.rs",
}

func init() { query.Register("neqo", neqoQ1, neqoQ2, neqoQ3, neqoConstants) }

var neqoNewPathNeeds = []query.Anchor{query.FuncIn(neqoPath, "find_path", "Paths"), query.FuncIn(neqoPath, "temporary", "Path"), query.FuncIn("neqo-transport/src/rtt.rs", "prime_rtt", "RttEstimate"), query.FuncIn(neqoPath, "received_on", "Path")}

// neqoNewPath establishes what a new path's state is: fresh sender, primed RTT.
func neqoNewPath(x *query.Code) query.Verdict {
	v := query.Verdict{}
	d := x.Defs(neqoNewPathNeeds...)
	fp, tmp, prime, recv := d[0], d[1], d[2], d[3]
	sender, okS := x.AssignIn(tmp, "sender", "PacketSender::new")
	rtt, okR := x.FieldInit(tmp, "rtt")
	pc, okP := x.CallIn(fp, "prime_rtt")
	si, okI := x.CallIn(prime, "set_initial")
	v.Add(x.Evidence(fp.Pos, "definition", "Paths::find_path creates every new path"))
	if okS {
		v.Add(x.Evidence(sender.Pos, "assignment", "fresh PacketSender (congestion controller at its initial window)"))
	}
	if okR {
		v.Add(x.Evidence(rtt.Pos, "assignment", "rtt: "+rtt.RHS))
	}
	if okP {
		v.Add(x.Evidence(pc.Pos, "call", "RTT primed from the primary path ("+query.GuardText(pc.Guards)+")"))
	}
	if okI {
		v.Add(x.Evidence(si.Pos, "call", "prime_rtt -> "+si.Text))
	}
	v.Add(x.Evidence(recv.Pos, "definition", "Path::received_on: "+query.OneLine(query.TailExpr(recv))))
	if strings.Contains(query.TailExpr(recv), "self.remote == remote") {
		v.Note("No port-only exemption: a path matches only on the exact local and remote address (Path::received_on), so a port change is a new path.")
	}
	switch {
	case okS && okP && okI && strings.Contains(si.Text, "smoothed_rtt"):
		v.Answer = audit.ResetKeepsRTT
		v.Mechanism = "per-path state: Path::temporary builds a fresh PacketSender (congestion reset), but Paths::find_path primes the new RttEstimate with the old primary path's smoothed_rtt + rttvar (prime_rtt), not the initial RTT"
		v.Note("The primed value is used until the new path's first RTT sample re-initialises the estimator (first_sample_time is still None).")
	case okS:
		v.Answer = audit.Yes
		v.Mechanism = "per-path state: Path::temporary builds a fresh PacketSender and RttEstimate"
	default:
		v.Answer = audit.No
		v.Mechanism = "a new path does not get fresh congestion state"
	}
	return v
}

var neqoQ1 = &query.Rule{
	Name: "neqo/q1", Question: audit.Q1, Role: query.Both, Files: neqoFiles,
	Doc:   "Per role: a new Path gets a fresh PacketSender but its RttEstimate is primed from the primary path (prime_rtt); which roles reach find_path/migration.",
	Needs: neqoNewPathNeeds,
	Decide: func(x *query.Code) ([]audit.Finding, error) {
		base := neqoNewPath(x)
		mig, ok1 := x.Find(query.FuncIn(neqoConn, "migrate", "Connection"))
		hm, ok2 := x.Find(query.FuncIn(neqoConn, "handle_migration", "Connection"))
		if !ok1 || !ok2 {
			return x.Absence()
		}
		// Migrating role: Connection::migrate, client only.
		m := base
		m.Evidence = append([]audit.Evidence{}, base.Evidence...)
		m.Detail = append([]string{}, base.Detail...)
		m.Add(x.Evidence(mig.Pos, "definition", "Connection::migrate (application API)"))
		if c, ok := x.CondIn(mig, "self.role != Role::Client"); ok {
			m.Add(x.Evidence(c.Pos, "guard", c.Text+" -> Err(InvalidMigration): only a client migrates"))
		}
		if c, ok := x.CallIn(mig, "find_path"); ok {
			m.Add(x.Evidence(c.Pos, "call", "new path for the migration"))
		}
		// Observing role: handle_migration at the server.
		o := base
		o.Evidence = append([]audit.Evidence{}, base.Evidence...)
		o.Detail = append([]string{}, base.Detail...)
		o.Add(x.Evidence(hm.Pos, "definition", "Connection::handle_migration"))
		if c, ok := x.CondIn(hm, "self.role == Role::Client"); ok {
			o.Add(x.Evidence(c.Pos, "guard", c.Text+" -> return: only a server follows a peer's migration"))
		}
		rx := query.Filter(x.File(neqoConn).Calls("find_path"), func(c syntax.Call) bool { return c.Func != "migrate" })
		for _, c := range rx {
			o.Add(x.Evidence(c.Pos, "call", "path of a received datagram, in "+c.Func))
		}
		if len(rx) == 0 {
			// Before v0.11.0 (68e19fc0) the server finds a received
			// datagram's path with find_path_with_rebinding: a port-only
			// change matches the old path (no reset at all), a new address
			// gets Path::temporary without prime_rtt (initial RTT). The
			// find_path model does not fit the observer there.
			o.Answer = audit.Unknown
			if rb := x.File(neqoConn).Calls("find_path_with_rebinding"); len(rb) > 0 {
				for _, c := range rb {
					o.Add(x.Evidence(c.Pos, "call", "path of a received datagram, in "+c.Func+": matches the old path on a port-only change"))
				}
				o.Mechanism = "the server finds a received datagram's path with Paths::find_path_with_rebinding, not find_path: a port-only change keeps the old path and its state, a new address gets a fresh Path::temporary with the initial RTT (not primed); the answer depends on what changed"
			} else {
				o.Mechanism = "no find_path call outside Connection::migrate: how the server builds a received datagram's path is not recognised"
			}
		}
		if d := x.Opt(query.FuncIn("neqo-transport/src/connection/params.rs", "default", "ConnectionParameters")); d.Line > 0 {
			if a, ok := x.FieldInit(d, "disable_migration"); ok {
				o.Add(x.Evidence(a.Pos, "setting", "disable_migration default "+a.RHS))
			}
		}
		fm, fo := x.RoleFinding(audit.Q1, query.Migrating, m), x.RoleFinding(audit.Q1, query.Observing, o)
		out := x.PerRole(audit.Q1, fm, fo)
		// Hook: prime_rtt, the carry-over.
		out = append(out, x.Hook("Path::prime_rtt", "seeds a new path's RTT from the primary path", x.Set.Funcs("prime_rtt"),
			query.Filter(x.Calls("prime_rtt"), func(c syntax.Call) bool { return c.Func != "prime_rtt" })))
		return out, nil
	},
}

var neqoQ2 = &query.Rule{
	Name: "neqo/q2", Question: audit.Q2, Role: query.Both, Files: neqoFiles,
	Doc:   "Does Paths::path_response / Path::path_response touch the RTT estimator?",
	Needs: []query.Anchor{query.FuncIn(neqoPath, "path_response", "Paths"), query.FuncIn(neqoPath, "path_response", "Path")},
	Decide: func(x *query.Code) ([]audit.Finding, error) {
		n := x.Needed()
		ps, pp := n[0], n[1]
		v := query.Verdict{}
		v.Add(x.Evidence(ps.Pos, "handler", "Paths::path_response"), x.Evidence(pp.Pos, "handler", "Path::path_response"))
		for _, c := range x.CommentsIn(neqoPath, ps.Line, ps.EndLine, "RTT") {
			v.Add(x.Evidence(c.Pos, "comment", query.OneLine(c.Context)))
			v.Note("Upstream comment: %q.", query.OneLine(strings.TrimLeft(c.Context, "/ ")))
		}
		hit := append(x.Touches(ps, "rtt", "rtt_mut", "set_initial", "prime_rtt", "update"), x.Touches(pp, "rtt", "rtt_mut", "set_initial", "prime_rtt")...)
		if len(hit) > 0 {
			v.Answer, v.Mechanism = audit.Yes, "the PATH_RESPONSE handlers touch "+strings.Join(hit, ", ")
		} else {
			v.Answer, v.Mechanism = audit.No, "PATH_RESPONSE validates the path and may switch the primary path; the RTT estimator is not touched (a new path's RTT comes from prime_rtt or the configured initial RTT)"
		}
		return []audit.Finding{x.RoleFinding(audit.Q2, query.Both, v)}, nil
	},
}

var neqoQ3 = &query.Rule{
	Name: "neqo/q3", Question: audit.Q3, Role: query.Both, Files: neqoFiles,
	Doc:   "Where is the primary-path flag cleared (Loss::migrate call sites) and which accounting does it gate?",
	Needs: []query.Anchor{query.FuncIn(neqoRec, "migrate", "Loss|LossRecovery"), query.FuncIn(neqoRec, "on_ack_received", "Loss|LossRecovery"), query.FuncIn(neqoConn, "handle_migration", "Connection"), query.FuncIn(neqoCC, "on_packets_acked", "ClassicCongestionController|ClassicCongestionControl"), query.FuncIn(neqoCC, "on_packets_lost", "ClassicCongestionController|ClassicCongestionControl"), query.FuncIn(neqoCC, "on_packet_sent", "ClassicCongestionController|ClassicCongestionControl")},
	Decide: func(x *query.Code) ([]audit.Finding, error) {
		n := x.Needed()
		lm, oar, hm, acked, lost, sent := n[0], n[1], n[2], n[3], n[4], n[5]
		// Loss::migrate call sites (the only place the primary-path flag is cleared on migration).
		sites := query.Filter(x.File(neqoConn).Calls("migrate"), func(c syntax.Call) bool { return strings.Contains(c.Callee, "loss_recovery.migrate") })
		inFns := query.Funcs(sites)
		// only loss_recovery.migrate() clears the flag (self.paths.migrate does not)
		hmCalls := query.Filter(x.CallsIn(hm, "migrate"), func(c syntax.Call) bool { return strings.Contains(c.Callee, "loss_recovery.migrate") })
		// Aspects, when the flag is cleared.
		var guarded []query.Aspect
		if c, ok := x.CallIn(oar, "rtt_sample"); ok && strings.Contains(query.GuardText(c.Guards), "on_primary_path()") {
			guarded = append(guarded, query.Aspect{Name: "rtt", Answer: audit.Yes, Why: "RTT sampled only if the largest acked packet is on the primary path", Ev: []audit.Evidence{x.Evidence(c.Pos, "call", query.GuardText(c.Guards))}})
		} else {
			guarded = append(guarded, query.Aspect{Name: "rtt", Answer: audit.No, Why: "RTT sample not gated by the primary-path flag", Ev: []audit.Evidence{x.Evidence(oar.Pos, "definition", "")}})
		}
		aspect := func(name, why string, def syntax.Def, sub string) query.Aspect {
			if c, ok := x.CondIn(def, sub); ok {
				return query.Aspect{Name: name, Answer: audit.Yes, Why: why, Ev: []audit.Evidence{x.Evidence(c.Pos, "guard", c.Text)}}
			}
			return query.Aspect{Name: name, Answer: audit.No, Why: "no " + sub + " gate in " + def.Name, Ev: []audit.Evidence{x.Evidence(def.Pos, "definition", "")}}
		}
		guarded = append(guarded,
			aspect("growth", "acked packets not cc_outstanding (off the primary path) are skipped before the window grows", acked, "cc_outstanding()"),
			neqoLossAspect(x, lost),
			aspect("inflight", "only cc_in_flight packets are added to / removed from bytes in flight", sent, "cc_in_flight()"))
		for i := range guarded {
			guarded[i].Ev = append(guarded[i].Ev, x.Evidence(lm.Pos, "definition", "Loss::migrate clears the primary-path flag of every tracked packet"))
		}
		mf, maux := x.Q3(query.Migrating, fmt.Sprintf("per-packet primary-path flag cleared by Loss::migrate (%s in %s)", query.Plural(len(sites), "call site"), strings.Join(inFns, ", ")), guarded)
		mf.Evidence = append(mf.Evidence, x.CallEvidence(sites, "call", "")...)
		var obsAs []query.Aspect
		if len(hmCalls) > 0 {
			obsAs = guarded
		} else {
			why := "Connection::handle_migration never calls loss_recovery.migrate(): packets sent on the old path keep the primary-path flag"
			for _, a := range guarded {
				obsAs = append(obsAs, query.Aspect{Name: a.Name, Answer: audit.No, Why: why, Ev: append([]audit.Evidence{x.Evidence(hm.Pos, "definition", "handle_migration (server)")}, a.Ev...)})
			}
		}
		of, oaux := x.Q3(query.Observing, "the observer (server) switches the primary path in handle_migration without clearing the old packets' primary-path flag", obsAs)
		if c := x.CommentsIn(neqoCC, acked.Line, acked.EndLine, "rebinding"); len(c) > 0 {
			of.Evidence = append(of.Evidence, x.Evidence(c[0].Pos, "comment", query.OneLine(c[0].Context)))
		}
		for i := range oaux {
			oaux[i].Rule += "-observing"
		}
		out := x.PerRole(audit.Q3, mf, of)
		out = append(out, maux...)
		out = append(out, oaux...)
		out = append(out, x.Hook("Loss::migrate", "clears the primary-path flag of tracked packets", []syntax.Def{lm}, sites))
		out[len(out)-1].Question = audit.Q3
		return out, nil
	},
}

var neqoConstants = &query.Rule{
	Name: "neqo/constants", Question: audit.ConstInitialWindow, Role: query.Both, Files: neqoFiles,
	Doc:   "cwnd_initial(plpmtu), cwnd_min, Cubic beta (dividend/divisor), DEFAULT_INITIAL_RTT.",
	Needs: []query.Anchor{query.FreeFuncIn(neqoCC, "cwnd_initial"), query.FuncIn(neqoCC, "cwnd_min", "ClassicCongestionController|ClassicCongestionControl"), query.FuncIn("neqo-transport/src/pmtud.rs", "header_size", "Pmtud")},
	Decide: func(x *query.Code) ([]audit.Finding, error) {
		n := x.Needed()
		ci, cm, hs := n[0], n[1], n[2]
		table, ok4 := x.Const("MTU_SIZES_V4")
		params, ok5 := x.Find(query.FuncIn("neqo-transport/src/connection/params.rs", "default", "ConnectionParameters"))
		if !ok4 || !ok5 {
			if !ok4 {
				x.Missing("const MTU_SIZES_V4")
			}
			return x.Absence()
		}
		// S = PLPMTU = first entry of the IPv4 search table minus the IPv4+UDP header size.
		first := strings.TrimSpace(strings.SplitN(strings.Trim(strings.TrimPrefix(strings.TrimSpace(table.Value), "&"), "[] "), ",", 2)[0])
		arms := x.ArmsWith(hs, "IpAddr::V4")
		if len(arms) == 0 {
			x.Missing("IpAddr::V4 arm of Pmtud::header_size")
			return x.Absence()
		}
		armLine := strings.TrimSpace(x.File(hs.Path).Line(arms[0].Line))
		hdr := strings.TrimSuffix(strings.TrimSpace(armLine[strings.Index(armLine, "=>")+2:]), ",")
		r := x.Resolver(nil)
		s, err := r.Eval(first + " - (" + hdr + ")")
		if err != nil {
			return nil, err
		}
		sNote := fmt.Sprintf("S = PLPMTU = MTU_SIZES_V4[0] - header_size(V4) = %s - (%s) = %g (IPv6: 1280 - 48)", first, hdr, s)
		par := map[string]query.Param{"mtu": {Name: "S", Default: s}, "max_datagram_size": {Name: "S", Default: s}}
		cc, okCC := x.FieldInit(params, "congestion_control")
		rttF, okR := x.FieldInit(params, "initial_rtt")
		var out []audit.Finding
		f, err := x.Resolver(par).Constant(audit.ConstInitialWindow, query.TailExpr(ci), x.ExprPos(ci, query.TailExpr(ci)), "cwnd_initial(plpmtu)", sNote, false)
		if err != nil {
			return nil, err
		}
		f.Evidence = append(f.Evidence, x.Evidence(table.Pos, "definition", "MTU_SIZES_V4"), x.Evidence(arms[0], "definition", "IPv4 header size "+hdr))
		if okCC {
			f.Evidence = append(f.Evidence, x.Evidence(cc.Pos, "setting", "default congestion control "+cc.RHS))
		}
		out = append(out, f)
		f, err = x.Resolver(par).Constant(audit.ConstMinWindow, query.TailExpr(cm), x.ExprPos(cm, query.TailExpr(cm)), "cwnd_min", sNote, false)
		if err != nil {
			return nil, err
		}
		out = append(out, f)
		div, okD := x.Const("BETA_USIZE_DIVIDEND")
		_, okV := x.Const("BETA_USIZE_DIVISOR")
		if okD && okV {
			f, err = x.Resolver(nil).Constant(audit.ConstLossFactor, "BETA_USIZE_DIVIDEND / BETA_USIZE_DIVISOR", div.Pos, "Cubic BETA_USIZE_DIVIDEND / BETA_USIZE_DIVISOR", "cwnd * 70 / 100 on loss (ECN: BETA_USIZE_DIVIDEND_ECN)", false)
			if err != nil {
				return nil, err
			}
			out = append(out, f)
		} else {
			out = append(out, x.AbsentFor(audit.ConstLossFactor, "Cubic BETA_USIZE_DIVIDEND/DIVISOR"))
		}
		if okR {
			d, ok := x.Const(strings.TrimSpace(rttF.RHS))
			if ok {
				f, err = x.Resolver(nil).Constant(audit.ConstDefaultRTT, d.Value, d.Pos, "DEFAULT_INITIAL_RTT (µs)", "ConnectionParameters.initial_rtt default", false)
				if err != nil {
					return nil, err
				}
				f.Evidence = append(f.Evidence, x.Evidence(rttF.Pos, "setting", "initial_rtt: "+rttF.RHS))
				out = append(out, f)
			}
		}
		return out, nil
	},
}

// neqoLossAspect: is the packet that starts the congestion event chosen among
// cc_in_flight packets? An `if pkt.cc_in_flight()` around the bytes-in-flight
// update is not enough: until #3520 (8fe27535, 2026-04) on_congestion_event
// took the last lost packet whatever its primary-path flag.
func neqoLossAspect(x *query.Code, lost syntax.Def) query.Aspect {
	call, ok := x.CallIn(lost, "on_congestion_event")
	if !ok || len(call.Args) == 0 {
		return query.Aspect{Name: "loss", Answer: audit.Unknown, Why: "no on_congestion_event(packet, …) call in " + lost.Name, Ev: []audit.Evidence{x.Evidence(lost.Pos, "definition", "")}}
	}
	arg := strings.TrimPrefix(strings.TrimSpace(call.Args[0].Text), "&")
	for _, pat := range []string{"let Some(" + arg + ")", "let " + arg + " ="} {
		pos, found := x.LineWith(lost.Path, lost.Line, pat)
		if !found || pos.Line > call.Line {
			continue
		}
		b, _ := x.Src.ReadFile(lost.Path)
		lines := strings.Split(string(b), "\n")
		text := strings.Join(lines[pos.Line-1:min(pos.Line+1, len(lines))], " ")
		if strings.Contains(text, "cc_in_flight()") {
			return query.Aspect{Name: "loss", Answer: audit.Yes, Why: "the congestion event starts only from a lost cc_in_flight packet (" + arg + ")", Ev: []audit.Evidence{x.Evidence(pos, "assignment", query.OneLine(lines[pos.Line-1]))}}
		}
		return query.Aspect{Name: "loss", Answer: audit.No, Why: "on_congestion_event takes " + arg + " whether or not it is cc_in_flight: an old-path loss starts a congestion event on the new path", Ev: []audit.Evidence{x.Evidence(pos, "assignment", query.OneLine(lines[pos.Line-1])), x.Evidence(call.Pos, "call", call.Text)}}
	}
	return query.Aspect{Name: "loss", Answer: audit.Unknown, Why: "where " + arg + " (the congestion event's packet) comes from is not recognised", Ev: []audit.Evidence{x.Evidence(call.Pos, "call", call.Text)}}
}
