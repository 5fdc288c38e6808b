package rules

import (
	"fmt"
	"strings"

	"github.com/migaudit/migaudit/audit"
	"github.com/migaudit/migaudit/audit/query"
	"github.com/migaudit/migaudit/audit/syntax"
)

// tquic (Tencent/tquic, Rust). Per-path state (Path.recovery), built for
// multipath. Without multipath nothing ever switches the active path:
// Connection::migrate_path is a stub and a validated new path is activated
// only when multipath is on, so connection migration is not supported.
// PATH_RESPONSE does seed the new path's initial RTT (the only one of the
// fourteen that implements RFC 9002 §6.2.2), but that path never becomes
// active in single-path mode.

const (
	tquicConn = "src/connection/connection.rs"
	tquicPath = "src/connection/path.rs"
)

var tquicFiles = []string{tquicConn, tquicPath, "src/connection/rtt.rs", "src/lib.rs",
	"src/congestion_control/bbr.rs", "src/congestion_control/congestion_control.rs", "src/multipath_scheduler/*.rs",
	// The C API: quic_conn_migrate_path forwards to Connection::migrate_path.
	"src/ffi.rs"}

func init() { query.Register("tquic", tquicQ1, tquicQ2, tquicQ3, tquicConstants) }

var tquicActivationNeeds = []query.Anchor{query.FuncIn(tquicPath, "on_path_resp_received", "Path"), query.FuncIn(tquicConn, "select_send_path", "")}

// tquicActivation: paths are activated only with multipath.
func tquicActivation(x *query.Code) query.Verdict {
	v := query.Verdict{}
	d := x.Defs(tquicActivationNeeds...)
	resp, sel := d[0], d[1]
	pnew, ok3 := x.Lookup(query.FuncIn(tquicPath, "new", "PathMap"))
	sa, okA := x.CallIn(resp, "set_active", "multipath")
	if okA {
		v.Add(x.Evidence(sa.Pos, "call", "a validated path becomes active only if multipath: "+sa.Text))
	}
	actTrue := query.Filter(x.Calls("set_active"), func(c syntax.Call) bool { return len(c.Args) == 1 && c.Args[0].Text == "true" })
	v.Count("set_active_true_call_sites", len(actTrue))
	for _, c := range actTrue {
		v.Add(x.Evidence(c.Pos, "call", "set_active(true) in "+c.Func+" ("+c.Path+")"))
	}
	if c, ok := x.CallIn(sel, "get_active_path_id"); ok {
		v.Add(x.Evidence(c.Pos, "call", "select_send_path falls back to the active path"))
	}
	if ok3 {
		if a, ok := x.FieldInit(pnew, "is_multipath"); ok {
			v.Add(x.Evidence(a.Pos, "setting", "is_multipath: "+a.RHS))
			v.Note("Multipath is off by default (is_multipath: %s).", a.RHS)
		}
	}
	onlyMP := okA && len(actTrue) > 0
	for _, c := range actTrue {
		if !strings.Contains(c.Path, "multipath") {
			onlyMP = false
		}
	}
	v.AnswerIf(onlyMP, audit.NotSupported,
		"without multipath the active path never changes: a validated new path is set_active(multipath) = false and select_send_path keeps the original active path",
		"path activation outside multipath not recognised")
	return v
}

var tquicQ1 = &query.Rule{
	Name: "tquic/q1", Question: audit.Q1, Role: query.Both, Files: tquicFiles,
	Doc:   "Is migration possible at all: migrate_path body, set_active call sites, select_send_path fallback, multipath default.",
	Needs: query.Join([]query.Anchor{query.FuncIn(tquicConn, "migrate_path", ""), query.FuncIn(tquicConn, "get_or_create_path", "")}, tquicActivationNeeds),
	Decide: func(x *query.Code) ([]audit.Finding, error) {
		n := x.Needed()
		mp, gocp := n[0], n[1]
		act := tquicActivation(x)
		// Migrating role: migrate_path is a stub.
		m := query.Verdict{}
		m.Add(x.Evidence(mp.Pos, "definition", "Connection::migrate_path"))
		body := query.OneLine(query.Body(mp))
		todo := x.CommentsIn(tquicConn, mp.Line, mp.EndLine, "TODO")
		for _, c := range todo {
			m.Add(x.Evidence(c.Pos, "comment", query.OneLine(c.Context)))
		}
		m.Count("migrate_path_call_sites", len(x.Calls("migrate_path")))
		m.AnswerIf(strings.HasSuffix(body, "Err(Error::InternalError)") && len(x.AllCallsIn(mp)) <= 1, audit.NotSupported,
			fmt.Sprintf("Connection::migrate_path is a stub: %q", body),
			"migrate_path has a body: "+body)
		// Observing role: the server creates a path with fresh Recovery, but never activates it.
		o := act
		if c, ok := x.CallIn(gocp, "new", "path::Path::new"); ok {
			o.Add(x.Evidence(c.Pos, "call", "the server creates a Path (fresh Recovery) for a packet from a new address"))
		}
		if rn, ok := x.FieldInit(x.Opt(query.FuncIn(tquicPath, "new", "Path")), "recovery"); ok {
			o.Add(x.Evidence(rn.Pos, "assignment", "recovery: "+rn.RHS))
		}
		fm, fo := x.RoleFinding(audit.Q1, query.Migrating, m), x.RoleFinding(audit.Q1, query.Observing, o)
		what := "public migration API (also exported to C as quic_conn_migrate_path)"
		if fm.Answer == audit.NotSupported {
			what += " whose body is a TODO returning Err(InternalError)"
		}
		h := x.Hook("Connection::migrate_path", what, []syntax.Def{mp}, x.Calls("migrate_path"))
		return append(x.PerRole(audit.Q1, fm, fo), h), nil
	},
}

var tquicQ2 = &query.Rule{
	Name: "tquic/q2", Question: audit.Q2, Role: query.Both, Files: tquicFiles,
	Doc:   "PATH_RESPONSE seeds the new path's initial RTT (try_set_init_rtt); does that path ever become active?",
	Needs: query.Join([]query.Anchor{query.FuncIn(tquicPath, "on_path_resp_received", "Path")}, tquicActivationNeeds),
	Decide: func(x *query.Code) ([]audit.Finding, error) {
		resp := x.Needed()[0]
		act := tquicActivation(x)
		v := query.Verdict{}
		seed, okS := x.CallIn(resp, "try_set_init_rtt")
		meas, okM := x.AssignIn(resp, "initial_rtt", "duration_since")
		if okM {
			v.Add(x.Evidence(meas.Pos, "assignment", "initial_rtt = "+meas.RHS+" (PATH_CHALLENGE to PATH_RESPONSE)"))
		}
		if okS {
			v.Add(x.Evidence(seed.Pos, "call", seed.Text))
		}
		if d := x.Opt(query.FuncIn("src/connection/rtt.rs", "try_set_init_rtt", "RttEstimator")); d.Line > 0 {
			v.Add(x.Evidence(d.Pos, "definition", "sets the initial RTT only before the first RTT sample"))
		}
		v.Add(act.Evidence...)
		switch {
		case okS && okM && act.Answer == audit.NotSupported:
			v.Answer = audit.Inert
			v.Mechanism = "PATH_RESPONSE seeds the validated path's RTT from the challenge round trip (try_set_init_rtt), but without multipath that path never becomes the active path, so the seed never governs a migrated connection"
			v.Note("With multipath enabled the seed takes effect for each new path; that is path addition, not migration.")
		case okS && okM:
			v.Answer = audit.Yes
			v.Mechanism = "PATH_RESPONSE seeds the new path's initial RTT from the challenge round trip (try_set_init_rtt)"
		case act.Answer == audit.NotSupported:
			v.Answer = audit.NotSupported
			v.Mechanism = "PATH_RESPONSE takes no RTT from the challenge round trip, and without multipath a validated path never becomes the active path: there is no migration whose RTT it could seed"
		default:
			v.Answer = audit.No
			v.Mechanism = "PATH_RESPONSE does not seed the RTT"
		}
		return []audit.Finding{x.RoleFinding(audit.Q2, query.Both, v)}, nil
	},
}

var tquicQ3 = &query.Rule{
	Name: "tquic/q3", Question: audit.Q3, Role: query.Both, Files: tquicFiles,
	Doc:   "Old-path exclusion is moot when the path never changes.",
	Needs: tquicActivationNeeds,
	Decide: func(x *query.Code) ([]audit.Finding, error) {
		act := tquicActivation(x)
		v := act
		if act.Answer == audit.NotSupported {
			v.Answer = audit.NA
			v.Mechanism = "no migration happens (the active path never changes without multipath), so there is no new path whose estimates old-path packets could contaminate"
			if c, ok := x.CallIn(x.Opt(query.FuncIn(tquicConn, "recv_frame", "")), "on_ack_received"); ok {
				v.Add(x.Evidence(c.Pos, "call", "ACKs are processed by the Recovery of the path the ACK arrived on, over the shared packet number space"))
				v.Note("Note: in single-path mode an ACK is fed to the Recovery of the path it arrived on (%s), not of the path the packets were sent on.", c.Text)
			}
		}
		return []audit.Finding{x.RoleFinding(audit.Q3, query.Both, v)}, nil
	},
}

var tquicConstants = &query.Rule{
	Name: "tquic/constants", Question: audit.ConstInitialWindow, Role: query.Both, Files: tquicFiles,
	Doc:   "BBR (the default) initial and minimum window from RecoveryConfig defaults; BBR has no loss factor; INITIAL_RTT.",
	Needs: []query.Anchor{query.FuncIn("src/lib.rs", "default", "RecoveryConfig"), query.FuncIn("src/congestion_control/bbr.rs", "from", "BbrConfig"), query.FuncIn("src/congestion_control/bbr.rs", "on_congestion_event", "Bbr")},
	Decide: func(x *query.Code) ([]audit.Finding, error) {
		n := x.Needed()
		rc, from, oce := n[0], n[1], n[2]
		alg, okA := x.FieldInit(rc, "congestion_control_algorithm")
		icw, okI := x.FieldInit(rc, "initial_congestion_window")
		mcw, okM := x.FieldInit(rc, "min_congestion_window")
		mds, okD := x.FieldInit(rc, "max_datagram_size")
		rtt, okR := x.FieldInit(rc, "initial_rtt")
		iw, okIW := x.AssignIn(from, "initial_cwnd", "initial_congestion_window")
		mw, okMW := x.AssignIn(from, "min_cwnd", "min_congestion_window")
		if !okA || !okI || !okM || !okD || !okR || !okIW || !okMW {
			x.Missing("RecoveryConfig default fields / BbrConfig::from")
			return x.Absence()
		}
		r := x.Resolver(nil)
		s, err := r.Eval(mds.RHS)
		if err != nil {
			return nil, err
		}
		ni, err := x.Resolver(nil).Eval(icw.RHS)
		if err != nil {
			return nil, err
		}
		nm, err := x.Resolver(nil).Eval(mcw.RHS)
		if err != nil {
			return nil, err
		}
		par := map[string]query.Param{"max_datagram_size": {Name: "S", Default: s}, "initial_congestion_window": {Name: "initcwnd_packets", Default: ni}, "min_congestion_window": {Name: "mincwnd_packets", Default: nm}}
		settings := []audit.Evidence{x.Evidence(alg.Pos, "setting", "default "+alg.RHS), x.Evidence(icw.Pos, "setting", "initial_congestion_window: "+icw.RHS),
			x.Evidence(mds.Pos, "setting", "max_datagram_size: "+mds.RHS)}
		var out []audit.Finding
		f, err := x.Resolver(par).Constant(audit.ConstInitialWindow, iw.RHS, iw.Pos, "BbrConfig::from initial_cwnd", "RecoveryConfig::default with "+alg.RHS, false)
		if err != nil {
			return nil, err
		}
		f.Evidence = query.Dedupe(append(f.Evidence, settings...))
		out = append(out, f)
		f, err = x.Resolver(par).Constant(audit.ConstMinWindow, mw.RHS, mw.Pos, "BbrConfig::from min_cwnd", "floor after persistent congestion", false)
		if err != nil {
			return nil, err
		}
		f.Evidence = query.Dedupe(append(f.Evidence, x.Evidence(mcw.Pos, "setting", "min_congestion_window: "+mcw.RHS), x.Evidence(mds.Pos, "setting", "max_datagram_size: "+mds.RHS)))
		out = append(out, f)
		// BBR: no multiplicative decrease on loss.
		lf := x.Finding(audit.NA, "default BBR has no multiplicative loss factor: a congestion event enters recovery (packet conservation); persistent congestion sets cwnd to min_cwnd")
		lf.Question = audit.ConstLossFactor
		lf.Evidence = append(lf.Evidence, x.Evidence(oce.Pos, "definition", "Bbr::on_congestion_event"))
		if a, ok := x.AssignIn(oce, "cwnd", "min_cwnd"); ok {
			lf.Evidence = append(lf.Evidence, x.Evidence(a.Pos, "assignment", a.LHS+" = "+a.RHS))
		}
		if c, ok := x.CallIn(oce, "enter_recovery"); ok {
			lf.Evidence = append(lf.Evidence, x.Evidence(c.Pos, "call", c.Text))
		}
		out = append(out, lf)
		f, err = x.Resolver(nil).Constant(audit.ConstDefaultRTT, rtt.RHS, rtt.Pos, "RecoveryConfig initial_rtt (µs)", "INITIAL_RTT", false)
		if err != nil {
			return nil, err
		}
		return append(out, f), nil
	},
}
