package rules

import (
	"strings"

	"github.com/migaudit/migaudit/audit"
	"github.com/migaudit/migaudit/audit/syntax"
)

// mvfst (facebook/mvfst, C++). Connection-wide congestion controller and
// lossState (RTT); QuicPathManager caches a path's controller and RTT when
// the connection leaves it. On migration the controller is replaced by a new
// one (or the cached one of a path revisited within 60 s) while the RTT is
// carried over unless the path's validation RTT sample is already known —
// and the PATH_RESPONSE round trip is later fed into the carried-over
// estimator. The server refuses migration by default (disableMigration).

const (
	mvSSM    = "quic/server/state/ServerStateMachine.cpp"
	mvPM     = "quic/state/QuicPathManager.cpp"
	mvClient = "quic/client/QuicClientTransportLite.cpp"
	mvClH    = "quic/client/QuicClientTransportLite.h"
	mvSFF    = "quic/state/SimpleFrameFunctions.cpp"
	mvAck    = "quic/state/AckHandlers.cpp"
	mvTS     = "quic/state/TransportSettings.h"
	mvConst  = "quic/QuicConstants.h"
	mvCubic  = "quic/congestion_control/QuicCubic.cpp"
)

var mvFiles = []string{mvSSM, mvPM, mvClient, mvSFF, mvAck, mvConst, mvCubic, "quic/congestion_control/CongestionControlFunctions.cpp", "quic/state/QuicStateFunctions.cpp", "quic/state/StateData.h",
	// the fallback-path switch also restores a cached path state
	"quic/server/QuicServerTransport.cpp"}

func init() {
	audit.Register("mvfst",
		n9Rule("mvfst/q1", "Server onConnectionMigration (NAT-rebinding heuristic, cache/restore, new controller, RTT kept or seeded) and client migrateConnection; disableMigration default.", audit.Q1, mvQ1),
		n9Rule("mvfst/q2", "Is the PATH_RESPONSE round trip (rttSample) used for the new path's RTT?", audit.Q2, mvQ2),
		n9Rule("mvfst/q3", "Are ACKs / losses of old-path packets attributed by OutstandingPacket pathId?", audit.Q3, mvQ3),
		n9Rule("mvfst/constants", "Cubic (default) initial window, minimum window, reduction factor; kDefaultInitialRtt.", audit.ConstInitialWindow, mvConstants),
	)
}

// mvRTTRestore: what maybeRestoreCongestionControlAndRttStateForCurrentPath does with RTT.
func mvRestore(x *n9, v *n9Verdict) bool {
	rs, _, ok := x.fnIn(mvPM, "maybeRestoreCongestionControlAndRttStateForCurrentPath", "QuicPathManager")
	if !ok {
		return false
	}
	v.add(x.ev(rs.Pos, "definition", "QuicPathManager::maybeRestoreCongestionControlAndRttStateForCurrentPath"))
	if c, ok := x.cond(rs, "kTimeToRetainLastCongestionAndRttState"); ok {
		v.add(x.ev(c.Pos, "guard", "cached CC and RTT of a revisited path restored: "+c.Text))
	}
	if a, ok := x.assignIn(rs, "srtt", "rttSample"); ok {
		v.add(x.ev(a.Pos, "assignment", a.LHS+" = "+a.RHS+" ("+n9GuardText(a.Guards)+")"))
	}
	for _, c := range x.commentsIn(mvPM, rs.Line, rs.EndLine, "leave the current state") {
		v.add(x.ev(c.Pos, "comment", n9OneLine(c.Context)))
	}
	return true
}

func mvObserving(x *n9) (n9Verdict, bool) {
	v := n9Verdict{}
	ocm, _, ok1 := x.fnIn(mvSSM, "onConnectionMigration", "")
	nat, _, ok2 := x.fnIn(mvSSM, "maybeNATRebinding", "")
	if !ok1 || !ok2 {
		return v, false
	}
	v.add(x.ev(ocm.Pos, "definition", "onConnectionMigration"))
	sites := n9Filter(x.file(mvSSM).Calls("onConnectionMigration"), func(c syntax.Call) bool { return c.Func != "onConnectionMigration" })
	v.count("onConnectionMigration_call_sites", len(sites))
	v.add(x.evCalls(sites, "call", "")...)
	cache, okC := x.callIn(ocm, "cacheCurrentCongestionAndRttState")
	newCC, okN := x.assignIn(ocm, "congestionController", "makeCongestionController")
	restore, okR := x.callIn(ocm, "maybeRestoreCongestionControlAndRttStateForCurrentPath")
	if okC {
		v.add(x.ev(cache.Pos, "call", "old path's controller and RTT moved into its cache ("+n9GuardText(cache.Guards)+")"))
	}
	if okN {
		v.add(x.ev(newCC.Pos, "assignment", "new controller unless a cached one was restored ("+n9GuardText(newCC.Guards)+")"))
	}
	if okR {
		v.add(x.ev(restore.Pos, "call", ""))
	}
	okRS := mvRestore(x, &v)
	// NAT-rebinding heuristic: port change, or IPv4 within the same /24.
	if c, ok := x.cond(nat, "newIPAddr == oldIPAddr"); ok {
		v.add(x.ev(c.Pos, "guard", "same IP: "+c.Text+" -> NAT rebinding, state kept"))
	}
	if pos, ok := x.lineWith(mvSSM, nat.Line, "inSubnet(oldIPAddr, 24)"); ok && pos.Line <= nat.EndLine {
		v.add(x.ev(pos, "guard", "IPv4 addresses in the same /24 are also treated as NAT rebinding"))
		v.note("Port-only exemption widened: maybeNATRebinding also keeps congestion and RTT state when an IPv4 peer moves within the same /24 (newIPAddr.inSubnet(oldIPAddr, 24)).")
		v.count("nat_rebinding_ipv4_prefix_len", 24)
	}
	if val, pos, ok := x.braceDefault(mvTS, "disableMigration"); ok {
		v.add(x.ev(pos, "setting", "disableMigration{"+val+"}"))
		if val == "true" {
			v.note("Disabled by default: TransportSettings.disableMigration{true} makes the server drop (or close on) packets from a new peer address.")
			v.count("disabled_by_default", 1)
		}
	}
	if c, ok := x.lineWith(mvSSM, 1, "conn.transportSettings.disableMigration;"); ok {
		v.add(x.ev(c, "guard", "migrationDenied when disableMigration"))
	}
	if okC && okN && okR && okRS {
		v.Answer = audit.ResetKeepsRTT
		v.Mechanism = "onConnectionMigration caches the old controller and RTT, installs a new controller, and keeps the connection-wide RTT estimate unless the new path's validation RTT sample is already known (then srtt = lrtt = mrtt = sample)"
	} else {
		v.Answer = audit.Unknown
		v.Mechanism = "onConnectionMigration shape not recognised"
	}
	return v, true
}

func mvMigrating(x *n9) (n9Verdict, bool) {
	v := n9Verdict{}
	mc, _, ok1 := x.fnIn(mvClient, "migrateConnection", "QuicClientTransportLite")
	ns, _, ok2 := x.fnIn(mvClient, "onNetworkSwitch", "QuicClientTransportLite")
	if !ok1 || !ok2 {
		return v, false
	}
	v.add(x.ev(mc.Pos, "definition", "QuicClientTransportLite::migrateConnection"))
	if pos, ok := x.lineWith(mvClH, 1, "bool resetCongestionControllerAndRtt = "); ok {
		v.add(x.ev(pos, "setting", "default argument"))
	}
	probe, okP := x.callIn(ns, "startPathProbe")
	mig, okM := x.callIn(ns, "migrateConnection")
	if okP && okM {
		v.add(x.ev(probe.Pos, "call", "onNetworkSwitch starts a path probe"), x.ev(mig.Pos, "call", "and migrates at once, before the probe's PATH_RESPONSE: "+mig.Text))
	}
	v.count("migrateConnection_call_sites", len(x.calls("migrateConnection")))
	newCC, okN := x.assignIn(mc, "congestionController", "makeCongestionController")
	seed, okS := x.assignIn(mc, "srtt", "rttSample")
	if okN {
		v.add(x.ev(newCC.Pos, "assignment", "new controller ("+n9GuardText(newCC.Guards)+")"))
	}
	if okS {
		v.add(x.ev(seed.Pos, "assignment", "srtt = probe RTT only "+n9GuardText(seed.Guards)))
	}
	for _, c := range x.commentsIn(mvClient, mc.Line, mc.EndLine, "RTT as-is") {
		v.add(x.ev(c.Pos, "comment", n9OneLine(c.Context)))
	}
	if c, ok := x.cond(x.optFn(mvClient, "startPathProbe", "QuicClientTransportLite"), "peerSupportsActiveConnectionMigration"); ok {
		v.add(x.ev(c.Pos, "guard", "requires a peer that allows active migration: "+c.Text))
	}
	if okN && okS && okM {
		v.Answer = audit.ResetKeepsRTT
		v.Mechanism = "migrateConnection installs a new controller but keeps the RTT estimate unless the probe's RTT sample exists — and onNetworkSwitch migrates immediately after starting the probe, before any sample"
	} else {
		v.Answer = audit.Unknown
		v.Mechanism = "migrateConnection shape not recognised"
	}
	return v, true
}

func mvQ1(p *audit.Pass) ([]audit.Finding, error) {
	x, err := n9OpenCpp(p, mvFiles...)
	if err != nil {
		return nil, err
	}
	o, ok1 := mvObserving(x)
	m, ok2 := mvMigrating(x)
	if !ok1 || !ok2 {
		return x.absent(audit.Q1), nil
	}
	fm, fo := x.finding(audit.Q1, n9Migrating, m), x.finding(audit.Q1, n9Observing, o)
	out := []audit.Finding{fm, fo, x.combined(audit.Q1, fm, fo)}
	for _, h := range []struct{ name, file, owner, what string }{
		{"cacheCurrentCongestionAndRttState", mvPM, "QuicPathManager", "moves the controller and RTT into the old path's cache"},
		{"maybeRestoreCongestionControlAndRttStateForCurrentPath", mvPM, "QuicPathManager", "restores a revisited path's cached state, else seeds RTT from the validation sample if known"},
	} {
		d := x.optFn(h.file, h.name, h.owner)
		var defs []syntax.Def
		if d.Line > 0 {
			defs = append(defs, d)
		}
		out = append(out, x.hook(h.owner+"::"+h.name, h.what, defs, n9Filter(x.calls(h.name), func(c syntax.Call) bool { return c.Func != h.name })))
	}
	return out, nil
}

func mvQ2(p *audit.Pass) ([]audit.Finding, error) {
	x, err := n9OpenCpp(p, mvFiles...)
	if err != nil {
		return nil, err
	}
	upr, _, ok1 := x.fnIn(mvSFF, "updateSimpleFrameOnPacketReceived", "")
	opr, _, ok2 := x.fnIn(mvPM, "onPathResponseReceived", "QuicPathManager")
	if !ok1 || !ok2 {
		return x.absent(audit.Q2), nil
	}
	v := n9Verdict{}
	meas, okM := x.assignIn(opr, "rttSample", "pathValidationTime")
	use, okU := x.callIn(upr, "updateRtt", "rttSample")
	if okM {
		v.add(x.ev(meas.Pos, "assignment", "rttSample = "+meas.RHS+" (PATH_CHALLENGE send to PATH_RESPONSE)"))
	}
	if okU {
		v.add(x.ev(use.Pos, "call", use.Text+" ("+n9GuardText(use.Guards)+")"))
	}
	var seeds []audit.Evidence
	for _, d := range []syntax.Def{x.optFn(mvPM, "maybeRestoreCongestionControlAndRttStateForCurrentPath", "QuicPathManager"), x.optFn(mvClient, "migrateConnection", "QuicClientTransportLite")} {
		if a, ok := x.assignIn(d, "srtt", "rttSample"); ok {
			seeds = append(seeds, x.ev(a.Pos, "assignment", "seeds srtt from the validation sample when it is known at the switch"))
		}
	}
	v.add(seeds...)
	if okM && okU {
		v.Answer = audit.Yes
		v.Mechanism = "the PATH_CHALLENGE→PATH_RESPONSE delay (rttSample) is fed to updateRtt when the current path is validated, and seeds srtt/lrtt/mrtt if known when switching"
		v.note("It is fed as an RTT sample into the carried-over estimator (srtt = 7/8 old + 1/8 sample, mrtt = min(old, sample)), which RFC 9002 §6.2.2 advises against (\"SHOULD NOT be considered an RTT sample\").")
	} else {
		v.Answer = audit.No
		v.Mechanism = "the validation round trip is not used for RTT"
	}
	return []audit.Finding{x.finding(audit.Q2, n9Both, v)}, nil
}

func mvQ3(p *audit.Pass) ([]audit.Finding, error) {
	x, err := n9OpenCpp(p, mvFiles...)
	if err != nil {
		return nil, err
	}
	ack, _, ok1 := x.fnIn(mvAck, "updateRttForLargestAckedPacket", "")
	if !ok1 {
		x.missing = x.missing[:len(x.missing)-1]
		ack = syntax.Def{}
		for _, c := range x.file(mvAck).Calls("updateRtt") {
			if d, ok := x.file(mvAck).FuncAt(c.Line); ok {
				ack = d
				break
			}
		}
		if ack.Line == 0 {
			x.missing = append(x.missing, "updateRtt call in AckHandlers.cpp")
			return x.absent(audit.Q3), nil
		}
	}
	af := x.file(mvAck)
	pathUses := 0
	for _, m := range af.Mentions("pathId") {
		if m.Kind != syntax.MentionComment && m.Kind != syntax.MentionString {
			pathUses++
		}
	}
	var as []n9Aspect
	if c, ok := x.callIn(ack, "updateRtt"); ok {
		as = append(as, n9Aspect{"rtt", audit.No, "updateRtt from any newly acked packet; AckHandlers.cpp never reads the packet's pathId", []audit.Evidence{x.ev(c.Pos, "call", n9GuardText(c.Guards))}})
	}
	why := "AckHandlers.cpp reads no pathId: acks and losses of old-path packets reach the new controller"
	var ev []audit.Evidence
	if pos, ok := x.lineWith("quic/state/OutstandingPacket.h", 1, "PathIdType pathId{"); ok {
		ev = append(ev, x.ev(pos, "definition", "OutstandingPacket metadata records pathId"))
	}
	if pos, ok := x.lineWith("quic/loss/QuicLossFunctions.cpp", 1, "pkt.metadata.pathId"); ok {
		ev = append(ev, x.ev(pos, "reference", "its only reader: simple-frame loss handling (path challenges), not congestion control"))
	}
	as = append(as, n9Aspect{"growth", audit.No, why, ev}, n9Aspect{"loss", audit.No, why, ev}, n9Aspect{"inflight", audit.No, "inflight bytes are connection-wide (lossState.inflightBytes), not per path", ev})
	f, aux := x.q3(n9Both, "no path attribution: OutstandingPacket.metadata.pathId is recorded but ACK and loss processing ignore it", as)
	f.Counts["pathId_uses_in_ack_handlers"] = pathUses
	return append([]audit.Finding{f}, aux...), nil
}

func mvConstants(p *audit.Pass) ([]audit.Finding, error) {
	x, err := n9OpenCpp(p, mvFiles...)
	if err != nil {
		return nil, err
	}
	cub, _, ok1 := x.fnIn(mvCubic, "Cubic", "Cubic")
	loss, _, ok2 := x.fnIn(mvCubic, "cubicReduction", "Cubic")
	if !ok1 || !ok2 {
		return x.absent(audit.ConstInitialWindow), nil
	}
	cc, ccPos, okCC := x.braceDefault(mvTS, "defaultCongestionController")
	if !okCC {
		if pos, ok := x.lineWith(mvTS, 1, "CongestionControlType::Cubic};"); ok {
			cc, ccPos, okCC = "CongestionControlType::Cubic", pos, true
		}
	}
	icw, icwPos, ok3 := x.braceDefault(mvTS, "initCwndInMss")
	mcw, mcwPos, ok4 := x.braceDefault(mvTS, "minCwndInMss")
	mxc, _, ok5 := x.braceDefault(mvTS, "maxCwndInMss")
	rtt, rttPos, ok6 := x.braceDefault(mvTS, "initialRtt")
	pl, plPos, ok7 := x.braceDefault("quic/state/StateData.h", "udpSendPacketLen")
	if !ok3 || !ok4 || !ok5 || !ok6 || !ok7 {
		return x.absent(audit.ConstInitialWindow), nil
	}
	initArg := 0.0
	argPos, okArg := x.lineWith("quic/congestion_control/QuicCubic.h", 1, "uint64_t initCwndBytes = ")
	if okArg {
		b, _ := p.Src.ReadFile("quic/congestion_control/QuicCubic.h")
		l := strings.Split(string(b), "\n")[argPos.Line-1]
		v := strings.TrimSuffix(strings.TrimSpace(l[strings.Index(l, "=")+1:]), ",")
		if initArg, err = x.resolver(nil).eval(v); err != nil {
			return nil, err
		}
	}
	r := x.resolver(nil)
	s, err := r.eval(pl)
	if err != nil {
		return nil, err
	}
	ni, _ := x.resolver(nil).eval(icw)
	nm, _ := x.resolver(nil).eval(mcw)
	nx, _ := x.resolver(nil).eval(mxc)
	par := map[string]n9Param{"udpSendPacketLen": {"S", s}, "initCwndInMss": {"initcwnd_packets", ni}, "minCwndInMss": {"mincwnd_packets", nm},
		"maxCwndInMss": {"maxcwnd_packets", nx}, "initCwndBytes": {"init_cwnd_bytes_arg", initArg}}
	settings := []audit.Evidence{x.ev(icwPos, "setting", "initCwndInMss{"+icw+"}"), x.ev(plPos, "setting", "udpSendPacketLen{"+pl+"}")}
	for _, d := range r.defs {
		settings = append(settings, x.ev(d.Pos, "definition", d.Name))
	}
	if okCC {
		settings = append(settings, x.ev(ccPos, "setting", "default controller "+cc))
	}
	if okArg {
		settings = append(settings, x.ev(argPos, "setting", "the factories call Cubic(conn): initCwndBytes keeps this default"))
	}
	a, ok := x.assignIn(cub, "cwndBytes_", "initCwndInMss")
	if !ok {
		x.missing = append(x.missing, "cwndBytes_ in Cubic::Cubic")
		return x.absent(audit.ConstInitialWindow), nil
	}
	var out []audit.Finding
	f, err := x.resolver(par).constant(audit.ConstInitialWindow, a.RHS, a.Pos, "Cubic::Cubic cwndBytes_", "S = conn.udpSendPacketLen default (min of the v4 and v6 defaults)", false)
	if err != nil {
		return nil, err
	}
	f.Evidence = n9Dedupe(append(f.Evidence, settings...))
	out = append(out, f)
	b, ok := x.assignIn(loss, "cwndBytes_", "reductionFactor")
	if !ok {
		x.missing = append(x.missing, "cwndBytes_ in Cubic::cubicReduction")
		return append(out, x.absent(audit.ConstMinWindow)...), nil
	}
	// boundedCwnd(cwnd * reductionFactor, packetLen, maxCwndInMss, minCwndInMss) = max(min(cwnd, max*len), min*len)
	f, err = x.resolver(par).constant(audit.ConstMinWindow, "minCwndInMss * udpSendPacketLen", b.Pos, "boundedCwnd floor minCwndInMss * udpSendPacketLen", "the floor boundedCwnd applies after a loss", false)
	if err != nil {
		return nil, err
	}
	f.Evidence = append(f.Evidence, x.ev(mcwPos, "setting", "minCwndInMss{"+mcw+"}"))
	if d := x.optFn("quic/congestion_control/CongestionControlFunctions.cpp", "boundedCwnd", ""); d.Line > 0 {
		f.Evidence = append(f.Evidence, x.ev(d.Pos, "definition", "boundedCwnd"))
	}
	out = append(out, f)
	if d, ok := x.def("kDefaultCubicReductionFactor"); ok {
		f, err = x.resolver(nil).constant(audit.ConstLossFactor, d.Value, d.Pos, "kDefaultCubicReductionFactor", "cwndBytes_ * steadyState_.reductionFactor on loss", false)
		if err != nil {
			return nil, err
		}
		f.Evidence = append(f.Evidence, x.ev(b.Pos, "assignment", b.LHS+" = "+n9OneLine(b.RHS)))
		out = append(out, f)
	}
	f, err = x.resolver(nil).constant(audit.ConstDefaultRTT, rtt, rttPos, "TransportSettings initialRtt (µs)", "kDefaultInitialRtt", false)
	if err != nil {
		return nil, err
	}
	return append(out, f), nil
}
