package rules

import (
	"fmt"
	"strings"

	"github.com/migaudit/migaudit/audit"
	"github.com/migaudit/migaudit/audit/query"
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

func init() { query.Register("mvfst", mvQ1, mvQ2, mvQ3, mvConstants) }

// mvRestore: what maybeRestoreCongestionControlAndRttStateForCurrentPath
// does with RTT. zeroed: without a validation sample it sets srtt = 0us (no
// sample: the PTO falls back to the initial RTT), as before 451a8a54
// (2025-12, "Leave the rtt state intact if we don't have a better one").
func mvRestore(x *query.Code, v *query.Verdict) (found, zeroed bool) {
	rs, ok := x.Find(query.FuncIn(mvPM, "maybeRestoreCongestionControlAndRttStateForCurrentPath", "QuicPathManager"))
	if !ok {
		return false, false
	}
	if a, ok := x.AssignIn(rs, "srtt", "0us"); ok {
		v.Add(x.Evidence(a.Pos, "assignment", a.LHS+" = "+a.RHS+" when no validation sample is known ("+query.GuardText(a.Guards)+")"))
		zeroed = true
	}
	v.Add(x.Evidence(rs.Pos, "definition", "QuicPathManager::maybeRestoreCongestionControlAndRttStateForCurrentPath"))
	if c, ok := x.CondIn(rs, "kTimeToRetainLastCongestionAndRttState"); ok {
		v.Add(x.Evidence(c.Pos, "guard", "cached CC and RTT of a revisited path restored: "+c.Text))
	}
	if a, ok := x.AssignIn(rs, "srtt", "rttSample"); ok {
		v.Add(x.Evidence(a.Pos, "assignment", a.LHS+" = "+a.RHS+" ("+query.GuardText(a.Guards)+")"))
	}
	for _, c := range x.CommentsIn(mvPM, rs.Line, rs.EndLine, "leave the current state") {
		v.Add(x.Evidence(c.Pos, "comment", query.OneLine(c.Context)))
	}
	return true, zeroed
}

var mvObservingNeeds = []query.Anchor{query.FuncIn(mvSSM, "onConnectionMigration", ""), query.FuncIn(mvSSM, "maybeNATRebinding", "")}

func mvObserving(x *query.Code) query.Verdict {
	v := query.Verdict{}
	d := x.Defs(mvObservingNeeds...)
	ocm, nat := d[0], d[1]
	v.Add(x.Evidence(ocm.Pos, "definition", "onConnectionMigration"))
	sites := query.Filter(x.File(mvSSM).Calls("onConnectionMigration"), func(c syntax.Call) bool { return c.Func != "onConnectionMigration" })
	v.Count("onConnectionMigration_call_sites", len(sites))
	v.Add(x.CallEvidence(sites, "call", "")...)
	cache, okC := x.CallIn(ocm, "cacheCurrentCongestionAndRttState")
	newCC, okN := x.AssignIn(ocm, "congestionController", "makeCongestionController")
	restore, okR := x.CallIn(ocm, "maybeRestoreCongestionControlAndRttStateForCurrentPath")
	if okC {
		v.Add(x.Evidence(cache.Pos, "call", "old path's controller and RTT moved into its cache ("+query.GuardText(cache.Guards)+")"))
	}
	if okN {
		v.Add(x.Evidence(newCC.Pos, "assignment", "new controller unless a cached one was restored ("+query.GuardText(newCC.Guards)+")"))
	}
	if okR {
		v.Add(x.Evidence(restore.Pos, "call", ""))
	}
	okRS, zeroed := mvRestore(x, &v)
	mvServerContext(x, &v, nat)
	if okC && okN && okR && okRS && zeroed {
		v.Answer = audit.Yes
		v.Mechanism = "onConnectionMigration caches the old controller and RTT, installs a new controller, and re-initialises the RTT: srtt = lrtt = mrtt = the new path's validation sample if known, else srtt = 0us (no sample: the PTO uses the initial RTT)"
		return v
	}
	v.AnswerIf(okC && okN && okR && okRS, audit.ResetKeepsRTT,
		"onConnectionMigration caches the old controller and RTT, installs a new controller, and keeps the connection-wide RTT estimate unless the new path's validation RTT sample is already known (then srtt = lrtt = mrtt = sample)",
		"onConnectionMigration shape not recognised")
	return v
}

// mvServerContext: the server's NAT-rebinding exemption (maybeNATRebinding)
// and the disableMigration default, common to both designs.
func mvServerContext(x *query.Code, v *query.Verdict, nat syntax.Def) {
	// NAT-rebinding heuristic: port change, or IPv4 within the same /24.
	if c, ok := x.CondIn(nat, "newIPAddr == oldIPAddr"); ok {
		v.Add(x.Evidence(c.Pos, "guard", "same IP: "+c.Text+" -> NAT rebinding, state kept"))
	}
	if pos, ok := x.LineWith(mvSSM, nat.Line, "inSubnet(oldIPAddr, 24)"); ok && pos.Line <= nat.EndLine {
		v.Add(x.Evidence(pos, "guard", "IPv4 addresses in the same /24 are also treated as NAT rebinding"))
		v.Note("Port-only exemption widened: maybeNATRebinding also keeps congestion and RTT state when an IPv4 peer moves within the same /24 (newIPAddr.inSubnet(oldIPAddr, 24)).")
		v.Count("nat_rebinding_ipv4_prefix_len", 24)
	}
	if val, pos, ok := x.BraceDefault(mvTS, "disableMigration"); ok {
		v.Add(x.Evidence(pos, "setting", "disableMigration{"+val+"}"))
		if val == "true" {
			v.Note("Disabled by default: TransportSettings.disableMigration{true} makes the server drop (or close on) packets from a new peer address.")
			v.Count("disabled_by_default", 1)
		}
	}
	if c, ok := x.LineWith(mvSSM, 1, "conn.transportSettings.disableMigration;"); ok {
		v.Add(x.Evidence(c, "guard", "migrationDenied when disableMigration"))
	}
}

var mvMigratingNeeds = []query.Anchor{query.FuncIn(mvClient, "migrateConnection", "QuicClientTransportLite"), query.FuncIn(mvClient, "onNetworkSwitch", "QuicClientTransportLite")}

func mvMigrating(x *query.Code) query.Verdict {
	v := query.Verdict{}
	d := x.Defs(mvMigratingNeeds...)
	mc, ns := d[0], d[1]
	v.Add(x.Evidence(mc.Pos, "definition", "QuicClientTransportLite::migrateConnection"))
	if pos, ok := x.LineWith(mvClH, 1, "bool resetCongestionControllerAndRtt = "); ok {
		v.Add(x.Evidence(pos, "setting", "default argument"))
	}
	probe, okP := x.CallIn(ns, "startPathProbe")
	mig, okM := x.CallIn(ns, "migrateConnection")
	if okP && okM {
		v.Add(x.Evidence(probe.Pos, "call", "onNetworkSwitch starts a path probe"), x.Evidence(mig.Pos, "call", "and migrates at once, before the probe's PATH_RESPONSE: "+mig.Text))
	}
	v.Count("migrateConnection_call_sites", len(x.Calls("migrateConnection")))
	newCC, okN := x.AssignIn(mc, "congestionController", "makeCongestionController")
	seed, okS := x.AssignIn(mc, "srtt", "rttSample")
	if okN {
		v.Add(x.Evidence(newCC.Pos, "assignment", "new controller ("+query.GuardText(newCC.Guards)+")"))
	}
	if okS {
		v.Add(x.Evidence(seed.Pos, "assignment", "srtt = probe RTT only "+query.GuardText(seed.Guards)))
	}
	for _, c := range x.CommentsIn(mvClient, mc.Line, mc.EndLine, "RTT as-is") {
		v.Add(x.Evidence(c.Pos, "comment", query.OneLine(c.Context)))
	}
	if c, ok := x.CondIn(x.Opt(query.FuncIn(mvClient, "startPathProbe", "QuicClientTransportLite")), "peerSupportsActiveConnectionMigration"); ok {
		v.Add(x.Evidence(c.Pos, "guard", "requires a peer that allows active migration: "+c.Text))
	}
	// Before 6a72f745 (2026-04, "Reset congestion control and RTT on
	// client-side migration") migrateConnection only switched the path.
	sw, okW := x.CallIn(mc, "switchCurrentPath")
	if okM && okW && !okN && !okS && !mvTouchesState(x, mc) && !mvTouchesState(x, x.Opt(query.FuncIn(mvPM, "switchCurrentPath", "QuicPathManager"))) {
		v.Add(x.Evidence(sw.Pos, "call", "the path and socket are switched: "+sw.Text))
		v.Answer = audit.No
		v.Mechanism = "migrateConnection switches the current path and socket (switchCurrentPath); neither it nor switchCurrentPath touches the congestion controller or lossState, so both carry over to the new path"
		return v
	}
	v.AnswerIf(okN && okS && okM, audit.ResetKeepsRTT,
		"migrateConnection installs a new controller but keeps the RTT estimate unless the probe's RTT sample exists — and onNetworkSwitch migrates immediately after starting the probe, before any sample",
		"migrateConnection shape not recognised")
	return v
}

// mvTouchesState: def assigns the congestion controller or an RTT field.
func mvTouchesState(x *query.Code, def syntax.Def) bool {
	if def.Line == 0 {
		return false
	}
	for _, a := range x.AssignsIn(def) {
		switch a.Target {
		case "congestionController", "srtt", "lrtt", "rttvar", "mrtt":
			return true
		}
	}
	return false
}

// Q1 per design: since QuicPathManager (8fdea03e, 2025-09) and the client's
// migrateConnection (93910807, 2025-10) a path manager caches and restores
// per-path state; before it the server swapped connection-wide state in
// ServerStateMachine.cpp and the client could only replace its socket.
var mvQ1 = query.Choose(mvQ1Paths, mvQ1Swap)

var mvQ1Paths = &query.Rule{
	Name: "mvfst/q1", Question: audit.Q1, Role: query.Both, Files: mvFiles, Lang: syntax.Cpp,
	Design: "QuicPathManager caches and restores per-path state; the client migrates with migrateConnection",
	Doc:    "Server onConnectionMigration (NAT-rebinding heuristic, cache/restore, new controller, RTT kept or seeded) and client migrateConnection; disableMigration default.",
	Needs:  query.Join(mvObservingNeeds, mvMigratingNeeds),
	Decide: func(x *query.Code) ([]audit.Finding, error) {
		o := mvObserving(x)
		m := mvMigrating(x)
		fm, fo := x.RoleFinding(audit.Q1, query.Migrating, m), x.RoleFinding(audit.Q1, query.Observing, o)
		out := x.PerRole(audit.Q1, fm, fo)
		for _, h := range []struct{ name, file, owner, what string }{
			{"cacheCurrentCongestionAndRttState", mvPM, "QuicPathManager", "moves the controller and RTT into the old path's cache"},
			{"maybeRestoreCongestionControlAndRttStateForCurrentPath", mvPM, "QuicPathManager", "restores a revisited path's cached state, else seeds RTT from the validation sample if known"},
		} {
			d := x.Opt(query.FuncIn(h.file, h.name, h.owner))
			var defs []syntax.Def
			if d.Line > 0 {
				defs = append(defs, d)
			}
			out = append(out, x.Hook(h.owner+"::"+h.name, h.what, defs, query.Filter(x.Calls(h.name), func(c syntax.Call) bool { return c.Func != h.name })))
		}
		return out, nil
	},
}

const mvOldClient = "quic/client/QuicClientTransport.cpp"

var mvQ1Swap = &query.Rule{
	Name: "mvfst/q1", Question: audit.Q1, Role: query.Both, Files: append([]string{mvOldClient}, mvFiles...), Lang: syntax.Cpp,
	Design: "before QuicPathManager: the server swaps connection-wide state (resetCongestionAndRttState)",
	Doc: "Server onConnectionMigration → recoverOrResetCongestionAndRttState → resetCongestionAndRttState (new controller, " +
		"srtt = 0us) unless NAT rebinding; the client's onNetworkSwitch only replaces the UDP socket.",
	Needs: []query.Anchor{query.FuncIn(mvSSM, "onConnectionMigration", ""), query.FuncIn(mvSSM, "resetCongestionAndRttState", ""), query.FuncIn(mvSSM, "maybeNATRebinding", "")},
	Decide: func(x *query.Code) ([]audit.Finding, error) {
		n := x.Needed()
		ocm, reset, nat := n[0], n[1], n[2]
		o := query.Verdict{}
		o.Add(x.Evidence(ocm.Pos, "definition", "onConnectionMigration"))
		sites := query.Filter(x.File(mvSSM).Calls("onConnectionMigration"), func(c syntax.Call) bool { return c.Func != "onConnectionMigration" })
		o.Count("onConnectionMigration_call_sites", len(sites))
		o.Add(x.CallEvidence(sites, "call", "")...)
		ror := x.CallsIn(ocm, "recoverOrResetCongestionAndRttState")
		o.Add(x.CallEvidence(ror, "call", "unless NAT rebinding")...)
		via, okV := x.CallIn(x.Opt(query.FuncIn(mvSSM, "recoverOrResetCongestionAndRttState", "")), "resetCongestionAndRttState")
		if okV {
			o.Add(x.Evidence(via.Pos, "call", "when no recent state of that address is cached"))
		}
		o.Add(x.Evidence(reset.Pos, "definition", "resetCongestionAndRttState"))
		newCC, okN := x.AssignIn(reset, "congestionController", "makeCongestionController")
		zero, okZ := x.AssignIn(reset, "srtt", "0us")
		if okN {
			o.Add(x.Evidence(newCC.Pos, "assignment", "new controller"))
		}
		if okZ {
			o.Add(x.Evidence(zero.Pos, "assignment", zero.LHS+" = "+zero.RHS+" (no sample: the PTO uses the initial RTT)"))
		}
		mvServerContext(x, &o, nat)
		o.AnswerIf(len(ror) > 0 && okV && okN && okZ, audit.Yes,
			"onConnectionMigration (a new address, not NAT rebinding) calls recoverOrResetCongestionAndRttState, which restores the state cached for a recently left address or else runs resetCongestionAndRttState: a new controller and srtt = lrtt = rttvar = 0us",
			"onConnectionMigration → resetCongestionAndRttState shape not recognised")
		// The client before migrateConnection: onNetworkSwitch swaps the socket.
		m := query.Verdict{}
		ns, ok := x.Lookup(query.FuncIn(mvOldClient, "onNetworkSwitch", "QuicClientTransport"))
		if !ok {
			ns, ok = x.Lookup(query.FuncIn(mvClient, "onNetworkSwitch", "QuicClientTransportLite"))
		}
		swap, okS := x.AssignIn(ns, "socket_", "newSock")
		if ok {
			m.Add(x.Evidence(ns.Pos, "definition", ns.Name))
		}
		if okS {
			m.Add(x.Evidence(swap.Pos, "assignment", "socket_ = "+swap.RHS))
		}
		m.AnswerIf(ok && okS && !mvTouchesState(x, ns), audit.No,
			"the client's onNetworkSwitch replaces the UDP socket and nothing else: the congestion controller and RTT estimate carry over",
			"client onNetworkSwitch (QuicClientTransport.cpp or QuicClientTransportLite.cpp) not found or not a plain socket swap")
		fm, fo := x.RoleFinding(audit.Q1, query.Migrating, m), x.RoleFinding(audit.Q1, query.Observing, o)
		return x.PerRole(audit.Q1, fm, fo), nil
	},
}

// Q2 per design: QuicPathManager measures rttSample per path; before it the
// PATH_RESPONSE case measured from conn.pathChallengeStartTime itself.
var mvQ2 = query.Choose(mvQ2Paths, mvQ2Conn)

var mvQ2Paths = &query.Rule{
	Name: "mvfst/q2", Question: audit.Q2, Role: query.Both, Files: mvFiles, Lang: syntax.Cpp,
	Design: "QuicPathManager::onPathResponseReceived measures the path's rttSample",
	Doc:    "Is the PATH_RESPONSE round trip (rttSample) used for the new path's RTT?",
	Needs:  []query.Anchor{query.FuncIn(mvSFF, "updateSimpleFrameOnPacketReceived", ""), query.FuncIn(mvPM, "onPathResponseReceived", "QuicPathManager")},
	Decide: func(x *query.Code) ([]audit.Finding, error) {
		n := x.Needed()
		upr, opr := n[0], n[1]
		v := query.Verdict{}
		// Measured against pathValidationTime (since f99529db, 2026-05) or
		// Clock::now() (before): either way a duration_cast from the challenge's send time.
		meas, okM := x.AssignIn(opr, "rttSample", "duration_cast")
		use, okU := x.CallIn(upr, "updateRtt", "rttSample")
		if okM {
			v.Add(x.Evidence(meas.Pos, "assignment", "rttSample = "+query.OneLine(meas.RHS)+" (PATH_CHALLENGE send to PATH_RESPONSE)"))
		}
		if okU {
			v.Add(x.Evidence(use.Pos, "call", use.Text+" ("+query.GuardText(use.Guards)+")"))
		}
		var seeds []audit.Evidence
		for _, d := range []syntax.Def{x.Opt(query.FuncIn(mvPM, "maybeRestoreCongestionControlAndRttStateForCurrentPath", "QuicPathManager")), x.Opt(query.FuncIn(mvClient, "migrateConnection", "QuicClientTransportLite"))} {
			if a, ok := x.AssignIn(d, "srtt", "rttSample"); ok {
				seeds = append(seeds, x.Evidence(a.Pos, "assignment", "seeds srtt from the validation sample when it is known at the switch"))
			}
		}
		v.Add(seeds...)
		switch {
		case okM && okU:
			v.Answer = audit.Yes
			v.Mechanism = "the PATH_CHALLENGE→PATH_RESPONSE delay (rttSample) is fed to updateRtt when the current path is validated"
			if len(seeds) > 0 {
				v.Mechanism += ", and seeds srtt/lrtt/mrtt if known when switching"
			}
			v.Note("It is fed as an RTT sample into the carried-over estimator (srtt = 7/8 old + 1/8 sample, mrtt = min(old, sample)), which RFC 9002 §6.2.2 advises against (\"SHOULD NOT be considered an RTT sample\").")
		case okM || okU || len(seeds) > 0:
			v.Answer = audit.Unknown
			v.Mechanism = fmt.Sprintf("the validation round trip's use not recognised: measurement found %v, updateRtt with it %v, %d seeds at a switch", okM, okU, len(seeds))
		default:
			v.Answer = audit.No
			v.Mechanism = "the validation round trip is not used for RTT"
		}
		return []audit.Finding{x.RoleFinding(audit.Q2, query.Both, v)}, nil
	},
}

var mvQ2Conn = &query.Rule{
	Name: "mvfst/q2", Question: audit.Q2, Role: query.Both, Files: mvFiles, Lang: syntax.Cpp,
	Design: "before QuicPathManager: the PATH_RESPONSE case measures from conn.pathChallengeStartTime",
	Doc:    "The PATH_RESPONSE case of updateSimpleFrameOnPacketReceived: sampleRtt = now - pathChallengeStartTime fed to updateRtt.",
	Needs:  []query.Anchor{query.FuncIn(mvSFF, "updateSimpleFrameOnPacketReceived", "")},
	Decide: func(x *query.Code) ([]audit.Finding, error) {
		upr := x.Needed()[0]
		v := query.Verdict{}
		var meas syntax.Assign
		okM := false
		for _, a := range x.AssignsIn(upr) {
			if strings.Contains(a.RHS, "pathChallengeStartTime") {
				meas, okM = a, true
				break
			}
		}
		var use syntax.Call
		okU := false
		if okM {
			v.Add(x.Evidence(meas.Pos, "assignment", meas.Target+" = "+query.OneLine(meas.RHS)+" (PATH_CHALLENGE send to PATH_RESPONSE)"))
			use, okU = x.CallIn(upr, "updateRtt", meas.Target)
		}
		if okU {
			v.Add(x.Evidence(use.Pos, "call", use.Text))
		}
		switch {
		case okM && okU:
			v.Answer = audit.Yes
			v.Mechanism = "the PATH_RESPONSE case measures the challenge round trip (" + meas.Target + ") and feeds it to updateRtt: after a reset (srtt = 0us) it is the path's first RTT sample"
		case okM:
			v.Answer = audit.Unknown
			v.Mechanism = "the challenge round trip is measured (" + meas.Target + ") but its use is not recognised"
		default:
			v.Answer = audit.No
			v.Mechanism = "the PATH_RESPONSE case measures no round trip (no use of pathChallengeStartTime)"
		}
		return []audit.Finding{x.RoleFinding(audit.Q2, query.Both, v)}, nil
	},
}

var mvQ3 = &query.Rule{
	Name: "mvfst/q3", Question: audit.Q3, Role: query.Both, Files: mvFiles, Lang: syntax.Cpp,
	Doc: "Are ACKs / losses of old-path packets attributed by OutstandingPacket pathId?",
	Decide: func(x *query.Code) ([]audit.Finding, error) {
		if x.File(mvAck) == nil {
			x.Missing("file " + mvAck)
			return x.Absence()
		}
		ack, ok := x.Lookup(query.FuncIn(mvAck, "updateRttForLargestAckedPacket", ""))
		if !ok {
			for _, c := range x.File(mvAck).Calls("updateRtt") {
				if d, ok := x.File(mvAck).FuncAt(c.Line); ok {
					ack = d
					break
				}
			}
			if ack.Line == 0 {
				x.Missing("updateRtt call in AckHandlers.cpp")
				return x.Absence()
			}
		}
		af := x.File(mvAck)
		pathUses := 0
		for _, m := range af.Mentions("pathId") {
			if m.Kind != syntax.MentionComment && m.Kind != syntax.MentionString {
				pathUses++
			}
		}
		rttWhy := "updateRtt from any newly acked packet; AckHandlers.cpp never reads the packet's pathId"
		if _, ok := x.LineWith("quic/state/OutstandingPacket.h", 1, "PathIdType pathId{"); !ok {
			rttWhy = "updateRtt from any newly acked packet; a sent packet records no path"
		}
		var as []query.Aspect
		if c, ok := x.CallIn(ack, "updateRtt"); ok {
			as = append(as, query.Aspect{Name: "rtt", Answer: audit.No, Why: rttWhy, Ev: []audit.Evidence{x.Evidence(c.Pos, "call", query.GuardText(c.Guards))}})
		}
		why := "AckHandlers.cpp reads no pathId: acks and losses of old-path packets reach the new controller"
		mech := "no path attribution: OutstandingPacket.metadata.pathId is recorded but ACK and loss processing ignore it"
		var ev []audit.Evidence
		if pos, ok := x.LineWith("quic/state/OutstandingPacket.h", 1, "PathIdType pathId{"); ok {
			ev = append(ev, x.Evidence(pos, "definition", "OutstandingPacket metadata records pathId"))
		} else {
			// Before QuicPathManager a sent packet records no path at all.
			why = "a sent packet records no path (OutstandingPacket has no pathId): acks and losses of old-path packets reach the new controller"
			mech = "no path attribution: sent packets record no path, and ACK and loss processing are connection-wide"
		}
		if pos, ok := x.LineWith("quic/loss/QuicLossFunctions.cpp", 1, "pkt.metadata.pathId"); ok {
			ev = append(ev, x.Evidence(pos, "reference", "its only reader: simple-frame loss handling (path challenges), not congestion control"))
		}
		as = append(as, query.Aspect{Name: "growth", Answer: audit.No, Why: why, Ev: ev}, query.Aspect{Name: "loss", Answer: audit.No, Why: why, Ev: ev}, query.Aspect{Name: "inflight", Answer: audit.No, Why: "inflight bytes are connection-wide (lossState.inflightBytes), not per path", Ev: ev})
		f, aux := x.Q3(query.Both, mech, as)
		f.Counts["pathId_uses_in_ack_handlers"] = pathUses
		return append([]audit.Finding{f}, aux...), nil
	},
}

var mvConstants = &query.Rule{
	Name: "mvfst/constants", Question: audit.ConstInitialWindow, Role: query.Both, Files: mvFiles, Lang: syntax.Cpp,
	Doc:   "Cubic (default) initial window, minimum window, reduction factor; kDefaultInitialRtt.",
	Needs: []query.Anchor{query.FuncIn(mvCubic, "Cubic", "Cubic"), query.FuncIn(mvCubic, "cubicReduction", "Cubic")},
	Decide: func(x *query.Code) ([]audit.Finding, error) {
		n := x.Needed()
		cub, loss := n[0], n[1]
		cc, ccPos, okCC := x.BraceDefault(mvTS, "defaultCongestionController")
		if !okCC {
			if pos, ok := x.LineWith(mvTS, 1, "CongestionControlType::Cubic};"); ok {
				cc, ccPos, okCC = "CongestionControlType::Cubic", pos, true
			}
		}
		icw, icwPos, ok3 := x.BraceDefault(mvTS, "initCwndInMss")
		mcw, mcwPos, ok4 := x.BraceDefault(mvTS, "minCwndInMss")
		mxc, _, ok5 := x.BraceDefault(mvTS, "maxCwndInMss")
		rtt, rttPos, ok6 := x.BraceDefault(mvTS, "initialRtt")
		pl, plPos, ok7 := x.BraceDefault("quic/state/StateData.h", "udpSendPacketLen")
		if !ok3 || !ok4 || !ok5 || !ok6 || !ok7 {
			return x.Absence()
		}
		initArg := 0.0
		argPos, okArg := x.LineWith("quic/congestion_control/QuicCubic.h", 1, "uint64_t initCwndBytes = ")
		if okArg {
			b, _ := x.Src.ReadFile("quic/congestion_control/QuicCubic.h")
			l := strings.Split(string(b), "\n")[argPos.Line-1]
			v := strings.TrimSuffix(strings.TrimSpace(l[strings.Index(l, "=")+1:]), ",")
			var err error
			if initArg, err = x.Resolver(nil).Eval(v); err != nil {
				return nil, err
			}
		}
		r := x.Resolver(nil)
		s, err := r.Eval(pl)
		if err != nil {
			return nil, err
		}
		ni, _ := x.Resolver(nil).Eval(icw)
		nm, _ := x.Resolver(nil).Eval(mcw)
		nx, _ := x.Resolver(nil).Eval(mxc)
		par := map[string]query.Param{"udpSendPacketLen": {Name: "S", Default: s}, "initCwndInMss": {Name: "initcwnd_packets", Default: ni}, "minCwndInMss": {Name: "mincwnd_packets", Default: nm},
			"maxCwndInMss": {Name: "maxcwnd_packets", Default: nx}, "initCwndBytes": {Name: "init_cwnd_bytes_arg", Default: initArg}}
		settings := []audit.Evidence{x.Evidence(icwPos, "setting", "initCwndInMss{"+icw+"}"), x.Evidence(plPos, "setting", "udpSendPacketLen{"+pl+"}")}
		for _, d := range r.Defs() {
			settings = append(settings, x.Evidence(d.Pos, "definition", d.Name))
		}
		if okCC {
			settings = append(settings, x.Evidence(ccPos, "setting", "default controller "+cc))
		}
		if okArg {
			settings = append(settings, x.Evidence(argPos, "setting", "the factories call Cubic(conn): initCwndBytes keeps this default"))
		}
		a, ok := x.AssignIn(cub, "cwndBytes_", "initCwndInMss")
		if !ok {
			x.Missing("cwndBytes_ in Cubic::Cubic")
			return x.Absence()
		}
		var out []audit.Finding
		f, err := x.Resolver(par).Constant(audit.ConstInitialWindow, a.RHS, a.Pos, "Cubic::Cubic cwndBytes_", "S = conn.udpSendPacketLen default (min of the v4 and v6 defaults)", false)
		if err != nil {
			return nil, err
		}
		f.Evidence = query.Dedupe(append(f.Evidence, settings...))
		out = append(out, f)
		b, ok := x.AssignIn(loss, "cwndBytes_", "reductionFactor")
		if !ok {
			return append(out, x.AbsentFor(audit.ConstMinWindow, "cwndBytes_ in Cubic::cubicReduction")), nil
		}
		// boundedCwnd(cwnd * reductionFactor, packetLen, maxCwndInMss, minCwndInMss) = max(min(cwnd, max*len), min*len)
		f, err = x.Resolver(par).Constant(audit.ConstMinWindow, "minCwndInMss * udpSendPacketLen", b.Pos, "boundedCwnd floor minCwndInMss * udpSendPacketLen", "the floor boundedCwnd applies after a loss", false)
		if err != nil {
			return nil, err
		}
		f.Evidence = append(f.Evidence, x.Evidence(mcwPos, "setting", "minCwndInMss{"+mcw+"}"))
		if d := x.Opt(query.FuncIn("quic/congestion_control/CongestionControlFunctions.cpp", "boundedCwnd", "")); d.Line > 0 {
			f.Evidence = append(f.Evidence, x.Evidence(d.Pos, "definition", "boundedCwnd"))
		}
		out = append(out, f)
		if d, ok := x.Const("kDefaultCubicReductionFactor"); ok {
			f, err = x.Resolver(nil).Constant(audit.ConstLossFactor, d.Value, d.Pos, "kDefaultCubicReductionFactor", "cwndBytes_ * steadyState_.reductionFactor on loss", false)
			if err != nil {
				return nil, err
			}
			f.Evidence = append(f.Evidence, x.Evidence(b.Pos, "assignment", b.LHS+" = "+query.OneLine(b.RHS)))
			out = append(out, f)
		}
		f, err = x.Resolver(nil).Constant(audit.ConstDefaultRTT, rtt, rttPos, "TransportSettings initialRtt (µs)", "kDefaultInitialRtt", false)
		if err != nil {
			return nil, err
		}
		return append(out, f), nil
	},
}
