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
	}
	if c, ok := x.CallIn(epp, "xqc_conn_send_path_challenge"); ok {
		v.Add(x.Evidence(c.Pos, "call", "PATH_CHALLENGE to the new address on the same path ("+query.GuardText(c.Guards)+")"))
	}
	cp, okC := x.CallIn(prf, "xqc_memcpy", "path->peer_addr", "rebinding_addr")
	if okC {
		v.Add(x.Evidence(cp.Pos, "call", "validated: the new address is copied into the existing path ("+query.GuardText(cp.Guards)+")"))
	}
	hit := x.Touches(prf, "xqc_send_ctl_reset", "xqc_send_ctl_create", "cong_ctl_init", "ctl_srtt", "xqc_cong_ctl_init")
	v.Count("resets_in_path_response", len(hit))
	if okC && len(hit) == 0 {
		v.Answer = audit.No
		v.Mechanism = "the server treats any new peer address (IP included) on an active path as NAT rebinding and, after PATH_RESPONSE, copies it into the same path: path_send_ctl (RTT and congestion state) is kept"
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
	Doc:   "Does xqc_process_path_response_frame touch the RTT estimator?",
	Needs: []query.Anchor{query.FuncIn(xqFrame, "xqc_process_path_response_frame", ""), query.FuncIn("src/transport/xqc_multipath.c", "xqc_path_validate", "")},
	Decide: func(x *query.Code) ([]audit.Finding, error) {
		n := x.Needed()
		prf, pv := n[0], n[1]
		v := query.Verdict{}
		v.Add(x.Evidence(prf.Pos, "handler", "xqc_process_path_response_frame"), x.Evidence(pv.Pos, "definition", "xqc_path_validate"))
		if hit := append(x.Touches(prf, "ctl_srtt", "ctl_latest_rtt", "ctl_minrtt", "xqc_send_ctl_update_rtt"), x.Touches(pv, "ctl_srtt", "ctl_latest_rtt", "xqc_send_ctl_update_rtt")...); len(hit) > 0 {
			v.Answer, v.Mechanism = audit.Yes, "PATH_RESPONSE handling touches "+strings.Join(hit, ", ")
		} else {
			v.Answer, v.Mechanism = audit.No, "PATH_RESPONSE activates the path (xqc_path_validate) and, for a rebinding, copies the address; the RTT estimator is untouched"
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
		if o.Answer == audit.No {
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
		var out []audit.Finding
		for _, s := range []struct {
			q           audit.Question
			def         syntax.Def
			target, sub string
			label       string
			strip       string
		}{
			{audit.ConstInitialWindow, ci, "init_cwnd", "XQC_CUBIC_INIT_WIN", "XQC_CUBIC_INIT_WIN", ""},
			{audit.ConstMinWindow, ci, "min_cwnd", "XQC_CUBIC_MIN_WIN", "XQC_CUBIC_MIN_WIN (floor after a loss)", ""},
			{audit.ConstLossFactor, cl, "cwnd", "XQC_CUBIC_BETA", "XQC_CUBIC_BETA / XQC_CUBIC_BETA_SCALE", "cubic->cwnd *"},
		} {
			a, ok := x.AssignIn(s.def, s.target, s.sub)
			if !ok {
				x.Missing("assignment " + s.target + " in " + s.def.Name)
				continue
			}
			rhs := strings.TrimSpace(strings.TrimPrefix(a.RHS, s.strip))
			f, err := x.Resolver(nil).Constant(s.q, rhs, a.Pos, s.label, "Cubic with XQC_CUBIC_MSS = XQC_MSS", false)
			if err != nil {
				return nil, err
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
		} else {
			x.Missing("initial_rtt default in xqc_conn_create")
		}
		return out, nil
	},
}
