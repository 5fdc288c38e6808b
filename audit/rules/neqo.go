package rules

import (
	"fmt"
	"strings"

	"github.com/migaudit/migaudit/audit"
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

func init() {
	audit.Register("neqo",
		n9Rule("neqo/q1", "Per role: a new Path gets a fresh PacketSender but its RttEstimate is primed from the primary path (prime_rtt); which roles reach find_path/migration.", audit.Q1, neqoQ1),
		n9Rule("neqo/q2", "Does Paths::path_response / Path::path_response touch the RTT estimator?", audit.Q2, neqoQ2),
		n9Rule("neqo/q3", "Where is the primary-path flag cleared (Loss::migrate call sites) and which accounting does it gate?", audit.Q3, neqoQ3),
		n9Rule("neqo/constants", "cwnd_initial(plpmtu), cwnd_min, Cubic beta (dividend/divisor), DEFAULT_INITIAL_RTT.", audit.ConstInitialWindow, neqoConstants),
	)
}

// neqoNewPath establishes what a new path's state is: fresh sender, primed RTT.
func neqoNewPath(x *n9) (n9Verdict, bool) {
	v := n9Verdict{}
	fp, _, ok1 := x.fnIn(neqoPath, "find_path", "Paths")
	tmp, _, ok2 := x.fnIn(neqoPath, "temporary", "Path")
	prime, _, ok3 := x.fnIn("neqo-transport/src/rtt.rs", "prime_rtt", "RttEstimate")
	recv, _, ok4 := x.fnIn(neqoPath, "received_on", "Path")
	if !ok1 || !ok2 || !ok3 || !ok4 {
		return v, false
	}
	sender, okS := x.assignIn(tmp, "sender", "PacketSender::new")
	rtt, okR := x.fieldInit(tmp, "rtt")
	pc, okP := x.callIn(fp, "prime_rtt")
	si, okI := x.callIn(prime, "set_initial")
	v.add(x.ev(fp.Pos, "definition", "Paths::find_path creates every new path"))
	if okS {
		v.add(x.ev(sender.Pos, "assignment", "fresh PacketSender (congestion controller at its initial window)"))
	}
	if okR {
		v.add(x.ev(rtt.Pos, "assignment", "rtt: "+rtt.RHS))
	}
	if okP {
		v.add(x.ev(pc.Pos, "call", "RTT primed from the primary path ("+n9GuardText(pc.Guards)+")"))
	}
	if okI {
		v.add(x.ev(si.Pos, "call", "prime_rtt -> "+si.Text))
	}
	v.add(x.ev(recv.Pos, "definition", "Path::received_on: "+n9OneLine(n9TailExpr(recv))))
	if strings.Contains(n9TailExpr(recv), "self.remote == remote") {
		v.note("No port-only exemption: a path matches only on the exact local and remote address (Path::received_on), so a port change is a new path.")
	}
	switch {
	case okS && okP && okI && strings.Contains(si.Text, "smoothed_rtt"):
		v.Answer = audit.ResetKeepsRTT
		v.Mechanism = "per-path state: Path::temporary builds a fresh PacketSender (congestion reset), but Paths::find_path primes the new RttEstimate with the old primary path's smoothed_rtt + rttvar (prime_rtt), not the initial RTT"
		v.note("The primed value is used until the new path's first RTT sample re-initialises the estimator (first_sample_time is still None).")
	case okS:
		v.Answer = audit.Yes
		v.Mechanism = "per-path state: Path::temporary builds a fresh PacketSender and RttEstimate"
	default:
		v.Answer = audit.No
		v.Mechanism = "a new path does not get fresh congestion state"
	}
	return v, true
}

func neqoQ1(p *audit.Pass) ([]audit.Finding, error) {
	x, err := n9Open(p, neqoFiles...)
	if err != nil {
		return nil, err
	}
	base, ok := neqoNewPath(x)
	mig, _, ok1 := x.fnIn(neqoConn, "migrate", "Connection")
	hm, _, ok2 := x.fnIn(neqoConn, "handle_migration", "Connection")
	if !ok || !ok1 || !ok2 {
		return x.absent(audit.Q1), nil
	}
	// Migrating role: Connection::migrate, client only.
	m := base
	m.Evidence = append([]audit.Evidence{}, base.Evidence...)
	m.Detail = append([]string{}, base.Detail...)
	m.add(x.ev(mig.Pos, "definition", "Connection::migrate (application API)"))
	if c, ok := x.cond(mig, "self.role != Role::Client"); ok {
		m.add(x.ev(c.Pos, "guard", c.Text+" -> Err(InvalidMigration): only a client migrates"))
	}
	if c, ok := x.callIn(mig, "find_path"); ok {
		m.add(x.ev(c.Pos, "call", "new path for the migration"))
	}
	// Observing role: handle_migration at the server.
	o := base
	o.Evidence = append([]audit.Evidence{}, base.Evidence...)
	o.Detail = append([]string{}, base.Detail...)
	o.add(x.ev(hm.Pos, "definition", "Connection::handle_migration"))
	if c, ok := x.cond(hm, "self.role == Role::Client"); ok {
		o.add(x.ev(c.Pos, "guard", c.Text+" -> return: only a server follows a peer's migration"))
	}
	rx := n9Filter(x.file(neqoConn).Calls("find_path"), func(c syntax.Call) bool { return c.Func != "migrate" })
	for _, c := range rx {
		o.add(x.ev(c.Pos, "call", "path of a received datagram, in "+c.Func))
	}
	if d := x.optFn("neqo-transport/src/connection/params.rs", "default", "ConnectionParameters"); d.Line > 0 {
		if a, ok := x.fieldInit(d, "disable_migration"); ok {
			o.add(x.ev(a.Pos, "setting", "disable_migration default "+a.RHS))
		}
	}
	fm, fo := x.finding(audit.Q1, n9Migrating, m), x.finding(audit.Q1, n9Observing, o)
	out := []audit.Finding{fm, fo, x.combined(audit.Q1, fm, fo)}
	// Hook: prime_rtt, the carry-over.
	out = append(out, x.hook("Path::prime_rtt", "seeds a new path's RTT from the primary path", x.set.Funcs("prime_rtt"),
		n9Filter(x.calls("prime_rtt"), func(c syntax.Call) bool { return c.Func != "prime_rtt" })))
	return out, nil
}

func neqoQ2(p *audit.Pass) ([]audit.Finding, error) {
	x, err := n9Open(p, neqoFiles...)
	if err != nil {
		return nil, err
	}
	ps, _, ok1 := x.fnIn(neqoPath, "path_response", "Paths")
	pp, _, ok2 := x.fnIn(neqoPath, "path_response", "Path")
	if !ok1 || !ok2 {
		return x.absent(audit.Q2), nil
	}
	v := n9Verdict{}
	v.add(x.ev(ps.Pos, "handler", "Paths::path_response"), x.ev(pp.Pos, "handler", "Path::path_response"))
	for _, c := range x.commentsIn(neqoPath, ps.Line, ps.EndLine, "RTT") {
		v.add(x.ev(c.Pos, "comment", n9OneLine(c.Context)))
		v.note("Upstream comment: %q.", n9OneLine(strings.TrimLeft(c.Context, "/ ")))
	}
	hit := append(x.touches(ps, "rtt", "rtt_mut", "set_initial", "prime_rtt", "update"), x.touches(pp, "rtt", "rtt_mut", "set_initial", "prime_rtt")...)
	if len(hit) > 0 {
		v.Answer, v.Mechanism = audit.Yes, "the PATH_RESPONSE handlers touch "+strings.Join(hit, ", ")
	} else {
		v.Answer, v.Mechanism = audit.No, "PATH_RESPONSE validates the path and may switch the primary path; the RTT estimator is not touched (a new path's RTT comes from prime_rtt or the configured initial RTT)"
	}
	return []audit.Finding{x.finding(audit.Q2, n9Both, v)}, nil
}

func neqoQ3(p *audit.Pass) ([]audit.Finding, error) {
	x, err := n9Open(p, neqoFiles...)
	if err != nil {
		return nil, err
	}
	lm, _, ok1 := x.fnIn(neqoRec, "migrate", "Loss")
	oar, _, ok2 := x.fnIn(neqoRec, "on_ack_received", "Loss")
	hm, _, ok3 := x.fnIn(neqoConn, "handle_migration", "Connection")
	acked, _, ok4 := x.fnIn(neqoCC, "on_packets_acked", "ClassicCongestionController")
	lost, _, ok5 := x.fnIn(neqoCC, "on_packets_lost", "ClassicCongestionController")
	sent, _, ok6 := x.fnIn(neqoCC, "on_packet_sent", "ClassicCongestionController")
	if !ok1 || !ok2 || !ok3 || !ok4 || !ok5 || !ok6 {
		return x.absent(audit.Q3), nil
	}
	// Loss::migrate call sites (the only place the primary-path flag is cleared on migration).
	sites := n9Filter(x.file(neqoConn).Calls("migrate"), func(c syntax.Call) bool { return strings.Contains(c.Callee, "loss_recovery.migrate") })
	inFns := n9Funcs(sites)
	hmCalls := x.callsIn(hm, "migrate")
	// Aspects, when the flag is cleared.
	var guarded []n9Aspect
	if c, ok := x.callIn(oar, "rtt_sample"); ok && strings.Contains(n9GuardText(c.Guards), "on_primary_path()") {
		guarded = append(guarded, n9Aspect{"rtt", audit.Yes, "RTT sampled only if the largest acked packet is on the primary path", []audit.Evidence{x.ev(c.Pos, "call", n9GuardText(c.Guards))}})
	} else {
		guarded = append(guarded, n9Aspect{"rtt", audit.No, "RTT sample not gated by the primary-path flag", []audit.Evidence{x.ev(oar.Pos, "definition", "")}})
	}
	aspect := func(name, why string, def syntax.Def, sub string) n9Aspect {
		if c, ok := x.cond(def, sub); ok {
			return n9Aspect{name, audit.Yes, why, []audit.Evidence{x.ev(c.Pos, "guard", c.Text)}}
		}
		return n9Aspect{name, audit.No, "no " + sub + " gate in " + def.Name, []audit.Evidence{x.ev(def.Pos, "definition", "")}}
	}
	guarded = append(guarded,
		aspect("growth", "acked packets not cc_outstanding (off the primary path) are skipped before the window grows", acked, "cc_outstanding()"),
		aspect("loss", "lost packets not cc_in_flight are ignored by the congestion controller", lost, "cc_in_flight()"),
		aspect("inflight", "only cc_in_flight packets are added to / removed from bytes in flight", sent, "cc_in_flight()"))
	for i := range guarded {
		guarded[i].Ev = append(guarded[i].Ev, x.ev(lm.Pos, "definition", "Loss::migrate clears the primary-path flag of every tracked packet"))
	}
	mf, maux := x.q3(n9Migrating, fmt.Sprintf("per-packet primary-path flag cleared by Loss::migrate (%s in %s)", n9Plural(len(sites), "call site"), strings.Join(inFns, ", ")), guarded)
	mf.Evidence = append(mf.Evidence, x.evCalls(sites, "call", "")...)
	var obsAs []n9Aspect
	if len(hmCalls) > 0 {
		obsAs = guarded
	} else {
		why := "Connection::handle_migration never calls loss_recovery.migrate(): packets sent on the old path keep the primary-path flag"
		for _, a := range guarded {
			obsAs = append(obsAs, n9Aspect{a.Name, audit.No, why, append([]audit.Evidence{x.ev(hm.Pos, "definition", "handle_migration (server)")}, a.Ev...)})
		}
	}
	of, oaux := x.q3(n9Observing, "the observer (server) switches the primary path in handle_migration without clearing the old packets' primary-path flag", obsAs)
	if c := x.commentsIn(neqoCC, acked.Line, acked.EndLine, "rebinding"); len(c) > 0 {
		of.Evidence = append(of.Evidence, x.ev(c[0].Pos, "comment", n9OneLine(c[0].Context)))
	}
	for i := range oaux {
		oaux[i].Rule += "-observing"
	}
	out := []audit.Finding{mf, of, x.combined(audit.Q3, mf, of)}
	out = append(out, maux...)
	out = append(out, oaux...)
	out = append(out, x.hook("Loss::migrate", "clears the primary-path flag of tracked packets", []syntax.Def{lm}, sites))
	out[len(out)-1].Question = audit.Q3
	return out, nil
}

func neqoConstants(p *audit.Pass) ([]audit.Finding, error) {
	x, err := n9Open(p, neqoFiles...)
	if err != nil {
		return nil, err
	}
	ci, ok1 := x.fnFree(neqoCC, "cwnd_initial")
	cm, _, ok2 := x.fnIn(neqoCC, "cwnd_min", "ClassicCongestionController")
	hs, _, ok3 := x.fnIn("neqo-transport/src/pmtud.rs", "header_size", "Pmtud")
	table, ok4 := x.def("MTU_SIZES_V4")
	params, _, ok5 := x.fnIn("neqo-transport/src/connection/params.rs", "default", "ConnectionParameters")
	if !ok1 || !ok2 || !ok3 || !ok4 || !ok5 {
		if !ok4 {
			x.missing = append(x.missing, "const MTU_SIZES_V4")
		}
		return x.absent(audit.ConstInitialWindow), nil
	}
	// S = PLPMTU = first entry of the IPv4 search table minus the IPv4+UDP header size.
	first := strings.TrimSpace(strings.SplitN(strings.Trim(strings.TrimPrefix(strings.TrimSpace(table.Value), "&"), "[] "), ",", 2)[0])
	arms := x.armsWith(hs, "IpAddr::V4")
	if len(arms) == 0 {
		x.missing = append(x.missing, "IpAddr::V4 arm of Pmtud::header_size")
		return x.absent(audit.ConstInitialWindow), nil
	}
	armLine := strings.TrimSpace(x.file(hs.Path).Line(arms[0].Line))
	hdr := strings.TrimSuffix(strings.TrimSpace(armLine[strings.Index(armLine, "=>")+2:]), ",")
	r := x.resolver(nil)
	s, err := r.eval(first + " - (" + hdr + ")")
	if err != nil {
		return nil, err
	}
	sNote := fmt.Sprintf("S = PLPMTU = MTU_SIZES_V4[0] - header_size(V4) = %s - (%s) = %g (IPv6: 1280 - 48)", first, hdr, s)
	par := map[string]n9Param{"mtu": {"S", s}, "max_datagram_size": {"S", s}}
	cc, okCC := x.fieldInit(params, "congestion_control")
	rttF, okR := x.fieldInit(params, "initial_rtt")
	var out []audit.Finding
	f, err := x.resolver(par).constant(audit.ConstInitialWindow, n9TailExpr(ci), x.exprPos(ci, n9TailExpr(ci)), "cwnd_initial(plpmtu)", sNote, false)
	if err != nil {
		return nil, err
	}
	f.Evidence = append(f.Evidence, x.ev(table.Pos, "definition", "MTU_SIZES_V4"), x.ev(arms[0], "definition", "IPv4 header size "+hdr))
	if okCC {
		f.Evidence = append(f.Evidence, x.ev(cc.Pos, "setting", "default congestion control "+cc.RHS))
	}
	out = append(out, f)
	f, err = x.resolver(par).constant(audit.ConstMinWindow, n9TailExpr(cm), x.exprPos(cm, n9TailExpr(cm)), "cwnd_min", sNote, false)
	if err != nil {
		return nil, err
	}
	out = append(out, f)
	div, okD := x.def("BETA_USIZE_DIVIDEND")
	_, okV := x.def("BETA_USIZE_DIVISOR")
	if okD && okV {
		f, err = x.resolver(nil).constant(audit.ConstLossFactor, "BETA_USIZE_DIVIDEND / BETA_USIZE_DIVISOR", div.Pos, "Cubic BETA_USIZE_DIVIDEND / BETA_USIZE_DIVISOR", "cwnd * 70 / 100 on loss (ECN: BETA_USIZE_DIVIDEND_ECN)", false)
		if err != nil {
			return nil, err
		}
		out = append(out, f)
	} else {
		x.missing = append(x.missing, "Cubic BETA_USIZE_DIVIDEND/DIVISOR")
		out = append(out, x.absent(audit.ConstLossFactor)...)
	}
	if okR {
		d, ok := x.def(strings.TrimSpace(rttF.RHS))
		if ok {
			f, err = x.resolver(nil).constant(audit.ConstDefaultRTT, d.Value, d.Pos, "DEFAULT_INITIAL_RTT (µs)", "ConnectionParameters.initial_rtt default", false)
			if err != nil {
				return nil, err
			}
			f.Evidence = append(f.Evidence, x.ev(rttF.Pos, "setting", "initial_rtt: "+rttF.RHS))
			out = append(out, f)
		}
	}
	return out, nil
}
