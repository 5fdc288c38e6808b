package rules

import (
	"strings"

	"github.com/migaudit/migaudit/audit"
	"github.com/migaudit/migaudit/audit/query"
	"github.com/migaudit/migaudit/audit/syntax"
)

// xquic (alibaba/xquic, C). Per-path send controllers (path_send_ctl) exist
// for multipath; without it (the default) the endpoint advertises
// disable_active_migration and has no client migration API, and the server
// treats any new peer address on an active path as a NAT rebinding: after
// PATH_RESPONSE it copies the address into the same path, keeping its send
// controller (RTT and congestion state). xqc_send_ctl_reset exists but is
// called only on Retry.

const (
	xqConn    = "src/transport/xqc_conn.c"
	xqEngine  = "src/transport/xqc_engine.c"
	xqFrame   = "src/transport/xqc_frame.c"
	xqSendCtl = "src/transport/xqc_send_ctl.c"
	xqCubic   = "src/congestion_control/xqc_cubic.c"
)

var xqFiles = []string{xqConn, xqEngine, xqFrame, xqSendCtl, xqCubic, "src/transport/xqc_send_ctl.h",
	"src/transport/xqc_packet.h", "src/transport/xqc_multipath.c"}

func init() { query.Register("xquic", xqQ1, xqQ2, xqQ3, xqConstants) }

var xqMigratingNeeds = []query.Anchor{query.FuncIn(xqConn, "xqc_conn_init_trans_settings", "")}

func xqMigrating(x *query.Code) query.Verdict {
	v := query.Verdict{}
	its := x.Defs(xqMigratingNeeds...)[0]
	dam, okD := x.AssignIn(its, "disable_active_migration", "enable_multipath")
	if okD {
		v.Add(x.Evidence(dam.Pos, "assignment", dam.LHS+" = "+dam.RHS))
	}
	for _, a := range x.File(xqConn).Assigns("") {
		if a.Func == "" && strings.TrimPrefix(a.LHS, ".") == "enable_multipath" {
			v.Add(x.Evidence(a.Pos, "setting", "default enable_multipath = "+a.RHS))
			v.Note("Multipath is off by default (enable_multipath = %s), so every xquic endpoint advertises disable_active_migration.", a.RHS)
			break
		}
	}
	var api []syntax.Call
	for _, n := range []string{"xqc_conn_migrate", "xqc_conn_rebind", "xqc_conn_change_local_addr"} {
		api = append(api, x.Calls(n)...)
	}
	v.Count("client_migration_api_calls", len(api))
	if !okD {
		// before multipath (1.3 and earlier): always disabled
		if a, ok := x.AssignIn(its, "disable_active_migration"); ok && a.RHS == "1" && len(api) == 0 {
			v.Add(x.Evidence(a.Pos, "assignment", a.LHS+" = "+a.RHS))
			v.Answer = audit.NotSupported
			v.Mechanism = "active migration is disabled: xqc_conn_init_trans_settings always advertises disable_active_migration = 1, and there is no client API to move to a new local address"
			return v
		}
	}
	v.AnswerIf(okD && strings.Contains(dam.RHS, "? 0 : 1"), audit.NotSupported,
		"active migration is disabled unless multipath is negotiated: xqc_conn_init_trans_settings advertises disable_active_migration = enable_multipath ? 0 : 1, and there is no client API to move to a new local address",
		"disable_active_migration setting not recognised")
	return v
}

var xqObservingNeeds = []query.Anchor{query.FuncIn(xqEngine, "xqc_engine_packet_process", ""), query.FuncIn(xqFrame, "xqc_process_path_response_frame", "")}

func xqObserving(x *query.Code) query.Verdict {
	v := query.Verdict{}
	d := x.Defs(xqObservingNeeds...)
	epp, prf := d[0], d[1]
	if c, ok := x.CondIn(epp, "XQC_ENGINE_SERVER", "xqc_is_same_addr_as_any_path"); ok {
		v.Add(x.Evidence(c.Pos, "guard", "server, any peer address not seen on a path: "+c.Text))
	} else if c, ok := x.CondIn(epp, "XQC_ENGINE_SERVER", "xqc_is_same_addr(peer_addr"); ok {
		v.Add(x.Evidence(c.Pos, "guard", "server, a peer address other than the connection's: "+query.OneLine(c.Text)))
	}
	for _, name := range []string{"xqc_conn_send_path_challenge", "xqc_conn_server_send_path_challenge"} {
		if c, ok := x.CallIn(epp, name); ok {
			v.Add(x.Evidence(c.Pos, "call", "PATH_CHALLENGE to the new address ("+query.OneLine(query.GuardText(c.Guards))+")"))
			break
		}
	}
	// With multipath (1.4+) the address is copied into the path; before,
	// into the connection, whose one conn_send_ctl holds RTT and congestion.
	state, into := "path_send_ctl", "the same path"
	cp, okC := x.CallIn(prf, "xqc_memcpy", "path->peer_addr", "rebinding_addr")
	if !okC {
		cp, okC = x.CallIn(prf, "xqc_memcpy", "conn->peer_addr", "rebinding_addr")
		state, into = "conn_send_ctl", "the connection's peer address"
	}
	if okC {
		v.Add(x.Evidence(cp.Pos, "call", "validated: the new address is copied into "+into+" ("+query.OneLine(query.GuardText(cp.Guards))+")"))
	}
	hit := x.Touches(prf, "xqc_send_ctl_reset", "xqc_send_ctl_create", "cong_ctl_init", "ctl_srtt", "xqc_cong_ctl_init")
	v.Count("resets_in_path_response", len(hit))
	if okC && len(hit) == 0 {
		v.Answer = audit.No
		v.Mechanism = "the server treats any new peer address (IP included) on an active path as NAT rebinding and, after PATH_RESPONSE, copies it into " + into + ": " + state + " (RTT and congestion state) is kept"
		v.Note("No IP-versus-port distinction: an IP change is handled exactly like a port-only rebinding.")
	} else {
		v.Answer = audit.Unknown
		v.Mechanism = "rebinding handling not recognised"
	}
	return v
}

var xqQ1 = &query.Rule{
	Name: "xquic/q1", Question: audit.Q1, Role: query.Both, Files: xqFiles,
	Doc:   "Client: disable_active_migration unless multipath, no API. Server: the NAT-rebinding path copies the new address into the same path (same path_send_ctl). xqc_send_ctl_reset call sites.",
	Needs: query.Join(xqMigratingNeeds, xqObservingNeeds),
	Decide: func(x *query.Code) ([]audit.Finding, error) {
		m := xqMigrating(x)
		o := xqObserving(x)
		rst, ok3 := x.Find(query.FuncIn(xqSendCtl, "xqc_send_ctl_reset", ""))
		if !ok3 {
			return x.Absence()
		}
		fm, fo := x.RoleFinding(audit.Q1, query.Migrating, m), x.RoleFinding(audit.Q1, query.Observing, o)
		out := x.PerRole(audit.Q1, fm, fo)
		calls := x.Calls("xqc_send_ctl_reset")
		h := x.Hook("xqc_send_ctl_reset", "resets srtt to initial_rtt, rttvar, min RTT and the send controller state", []syntax.Def{rst}, calls)
		var onMigration int
		for _, c := range calls {
			if strings.Contains(strings.ToLower(c.Func), "migrat") || strings.Contains(strings.ToLower(c.Func), "rebind") || strings.Contains(strings.ToLower(c.Func), "path") {
				onMigration++
			}
			for _, cm := range x.CommentsIn(c.Path, c.Line-4, c.Line, "Retry") {
				h.Evidence = append(h.Evidence, x.Evidence(cm.Pos, "comment", query.OneLine(cm.Context)))
			}
		}
		h.Counts["migration_call_sites"] = onMigration
		if onMigration == 0 {
			h.Mechanism += " (none on a migration or rebinding path)"
		}
		return append(out, h), nil
	},
}

var xqQ2 = &query.Rule{
	Name: "xquic/q2", Question: audit.Q2, Role: query.Both, Files: xqFiles,
	Doc: "Does xqc_process_path_response_frame touch the RTT estimator?",
	// xqc_path_validate (multipath.c) arrived with multipath; before, the
	// handler only validates the rebinding address.
	Needs: []query.Anchor{query.FuncIn(xqFrame, "xqc_process_path_response_frame", "")},
	Decide: func(x *query.Code) ([]audit.Finding, error) {
		prf := x.Needed()[0]
		v := query.Verdict{}
		v.Add(x.Evidence(prf.Pos, "handler", "xqc_process_path_response_frame"))
		hit := x.Touches(prf, "ctl_srtt", "ctl_latest_rtt", "ctl_minrtt", "xqc_send_ctl_update_rtt")
		mech := "PATH_RESPONSE validates the rebinding address and copies it into the connection; the RTT estimator is untouched"
		if pv, ok := x.Lookup(query.FuncIn("src/transport/xqc_multipath.c", "xqc_path_validate", "")); ok {
			v.Add(x.Evidence(pv.Pos, "definition", "xqc_path_validate"))
			hit = append(hit, x.Touches(pv, "ctl_srtt", "ctl_latest_rtt", "xqc_send_ctl_update_rtt")...)
			mech = "PATH_RESPONSE activates the path (xqc_path_validate) and, for a rebinding, copies the address; the RTT estimator is untouched"
		}
		if len(hit) > 0 {
			v.Answer, v.Mechanism = audit.Yes, "PATH_RESPONSE handling touches "+strings.Join(hit, ", ")
		} else {
			v.Answer, v.Mechanism = audit.No, mech
		}
		return []audit.Finding{x.RoleFinding(audit.Q2, query.Both, v)}, nil
	},
}

var xqQ3 = &query.Rule{
	Name: "xquic/q3", Question: audit.Q3, Role: query.Both, Files: xqFiles,
	Doc:   "After the in-place address change, is there anything separating old-path packets?",
	Needs: query.Join(xqMigratingNeeds, xqObservingNeeds),
	Decide: func(x *query.Code) ([]audit.Finding, error) {
		m := xqMigrating(x)
		o := xqObserving(x)
		switch {
		case o.Answer == audit.No && strings.Contains(o.Mechanism, "conn_send_ctl"):
			o.Mechanism = "the rebinding keeps the connection's one conn_send_ctl, so packets sent to the old address are acknowledged into the same RTT and congestion state"
		case o.Answer == audit.No:
			o.Mechanism = "the rebinding keeps the same path and path_send_ctl, so packets sent to the old address are acknowledged into the same RTT and congestion state"
		}
		if m.Answer == audit.NotSupported {
			m.Answer = audit.NA
			m.Mechanism = "the client does not migrate (disable_active_migration without multipath)"
		}
		fm, fo := x.RoleFinding(audit.Q3, query.Migrating, m), x.RoleFinding(audit.Q3, query.Observing, o)
		return x.PerRole(audit.Q3, fm, fo), nil
	},
}

var xqConstants = &query.Rule{
	Name: "xquic/constants", Question: audit.ConstInitialWindow, Role: query.Both, Files: xqFiles,
	Doc:   "Cubic (the default) XQC_CUBIC_INIT_WIN, XQC_CUBIC_MIN_WIN, XQC_CUBIC_BETA/SCALE, XQC_kInitialRtt_us.",
	Needs: []query.Anchor{query.FuncIn(xqCubic, "xqc_cubic_init", ""), query.FuncIn(xqCubic, "xqc_cubic_on_lost", ""), query.FuncIn(xqSendCtl, "xqc_send_ctl_create", ""), query.FuncIn(xqConn, "xqc_conn_create", "")},
	Decide: func(x *query.Code) ([]audit.Finding, error) {
		n := x.Needed()
		ci, cl, sc, cc := n[0], n[1], n[2], n[3]
		var common []audit.Evidence
		if a, ok := x.AssignIn(sc, "ctl_cong_callback", "xqc_cubic_cb"); ok {
			common = append(common, x.Evidence(a.Pos, "setting", "default controller when the application sets none: "+a.RHS))
		}
		mech := "Cubic"
		if d, ok := x.Const("XQC_CUBIC_MSS"); ok {
			mech = "Cubic with XQC_CUBIC_MSS = " + d.Value
		}
		var out []audit.Finding
		// Each value is read from the first place that holds it: since 1.5
		// xqc_cubic_init stores init_cwnd and min_cwnd; before, the initial
		// window is the cwnd set there and the floor is xqc_max(cwnd,
		// XQC_CUBIC_MIN_WIN) in xqc_cubic_on_lost. An assignment under
		// cc_params.customize_on is the application's override, not the default.
		type place struct {
			def                syntax.Def
			target, sub, strip string
		}
		for _, s := range []struct {
			q      audit.Question
			label  string
			places []place
		}{
			{audit.ConstInitialWindow, "XQC_CUBIC_INIT_WIN", []place{{ci, "init_cwnd", "XQC_CUBIC_INIT_WIN", ""}, {ci, "cwnd", "XQC_CUBIC_INIT_WIN", ""}}},
			{audit.ConstMinWindow, "XQC_CUBIC_MIN_WIN (floor after a loss)", []place{{ci, "min_cwnd", "XQC_CUBIC_MIN_WIN", ""}, {cl, "cwnd", "xqc_max(cubic->cwnd, XQC_CUBIC_MIN_WIN)", "xqc_max(cubic->cwnd,"}}},
			{audit.ConstLossFactor, "XQC_CUBIC_BETA / XQC_CUBIC_BETA_SCALE", []place{{cl, "cwnd", "XQC_CUBIC_BETA", "cubic->cwnd *"}}},
		} {
			var a syntax.Assign
			var at place
			for _, pl := range s.places {
				for _, c := range x.AssignsIn(pl.def) {
					if c.Target == pl.target && strings.Contains(c.RHS, pl.sub) && !strings.Contains(query.GuardText(c.Guards), "customize_on") {
						a, at = c, pl
						break
					}
				}
				if a.Line > 0 {
					break
				}
			}
			if a.Line == 0 {
				x.Missing("a default assignment of " + s.label + " in xqc_cubic_init or xqc_cubic_on_lost")
				continue
			}
			rhs := strings.TrimSpace(strings.TrimPrefix(a.RHS, at.strip))
			if at.strip == "xqc_max(cubic->cwnd," {
				rhs = strings.TrimSpace(strings.TrimSuffix(rhs, ")"))
			}
			f, err := x.Resolver(nil).Constant(s.q, rhs, a.Pos, s.label, mech, false)
			if err != nil {
				x.Missing(s.label + " as a number (" + err.Error() + ")")
				continue
			}
			f.Evidence = query.Dedupe(append(f.Evidence, common...))
			out = append(out, f)
		}
		if a, ok := x.AssignIn(cc, "initial_rtt", "XQC_kInitialRtt_us"); ok {
			f, err := x.Resolver(nil).Constant(audit.ConstDefaultRTT, a.RHS, a.Pos, "XQC_kInitialRtt_us (when initial_rtt is 0)", query.GuardText(a.Guards), false)
			if err != nil {
				return nil, err
			}
			out = append(out, f)
		} else if a, ok := x.AssignIn(sc, "ctl_srtt", "XQC_kInitialRtt"); ok {
			// before 1.7: the send controller starts at XQC_kInitialRtt ms
			f, err := x.Resolver(nil).Constant(audit.ConstDefaultRTT, a.RHS, a.Pos, "XQC_kInitialRtt * 1000 (µs)", "xqc_send_ctl_create: ctl_srtt", false)
			if err != nil {
				return nil, err
			}
			out = append(out, f)
		} else {
			x.Missing("initial_rtt default in xqc_conn_create or ctl_srtt in xqc_send_ctl_create")
		}
		return out, nil
	},
}
