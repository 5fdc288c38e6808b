package rules

import (
	"fmt"
	"strings"

	"github.com/migaudit/migaudit/audit"
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

func init() {
	audit.Register("tquic",
		n9Rule("tquic/q1", "Is migration possible at all: migrate_path body, set_active call sites, select_send_path fallback, multipath default.", audit.Q1, tquicQ1),
		n9Rule("tquic/q2", "PATH_RESPONSE seeds the new path's initial RTT (try_set_init_rtt); does that path ever become active?", audit.Q2, tquicQ2),
		n9Rule("tquic/q3", "Old-path exclusion is moot when the path never changes.", audit.Q3, tquicQ3),
		n9Rule("tquic/constants", "BBR (the default) initial and minimum window from RecoveryConfig defaults; BBR has no loss factor; INITIAL_RTT.", audit.ConstInitialWindow, tquicConstants),
	)
}

// tquicActivation: paths are activated only with multipath.
func tquicActivation(x *n9) (n9Verdict, bool) {
	v := n9Verdict{}
	resp, _, ok1 := x.fnIn(tquicPath, "on_path_resp_received", "Path")
	sel, _, ok2 := x.fnIn(tquicConn, "select_send_path", "")
	pnew, _, ok3 := x.fnIn(tquicPath, "new", "PathMap")
	if !ok1 || !ok2 {
		return v, false
	}
	sa, okA := x.callIn(resp, "set_active", "multipath")
	if okA {
		v.add(x.ev(sa.Pos, "call", "a validated path becomes active only if multipath: "+sa.Text))
	}
	var actTrue []syntax.Call
	for _, c := range x.calls("set_active") {
		if len(c.Args) == 1 && c.Args[0].Text == "true" {
			actTrue = append(actTrue, c)
		}
	}
	v.count("set_active_true_call_sites", len(actTrue))
	for _, c := range actTrue {
		v.add(x.ev(c.Pos, "call", "set_active(true) in "+c.Func+" ("+c.Path+")"))
	}
	if c, ok := x.callIn(sel, "get_active_path_id"); ok {
		v.add(x.ev(c.Pos, "call", "select_send_path falls back to the active path"))
	}
	if ok3 {
		if a, ok := x.fieldInit(pnew, "is_multipath"); ok {
			v.add(x.ev(a.Pos, "setting", "is_multipath: "+a.RHS))
			v.note("Multipath is off by default (is_multipath: %s).", a.RHS)
		}
	} else {
		x.missing = x.missing[:len(x.missing)-1]
	}
	onlyMP := okA && len(actTrue) > 0
	for _, c := range actTrue {
		if !strings.Contains(c.Path, "multipath") {
			onlyMP = false
		}
	}
	if onlyMP {
		v.Answer = audit.NotSupported
		v.Mechanism = "without multipath the active path never changes: a validated new path is set_active(multipath) = false and select_send_path keeps the original active path"
	} else {
		v.Answer = audit.Unknown
		v.Mechanism = "path activation outside multipath not recognised"
	}
	return v, true
}

func tquicQ1(p *audit.Pass) ([]audit.Finding, error) {
	x, err := n9Open(p, tquicFiles...)
	if err != nil {
		return nil, err
	}
	mp, _, ok1 := x.fnIn(tquicConn, "migrate_path", "")
	gocp, _, ok2 := x.fnIn(tquicConn, "get_or_create_path", "")
	act, ok3 := tquicActivation(x)
	if !ok1 || !ok2 || !ok3 {
		return x.absent(audit.Q1), nil
	}
	// Migrating role: migrate_path is a stub.
	m := n9Verdict{}
	m.add(x.ev(mp.Pos, "definition", "Connection::migrate_path"))
	body := n9OneLine(n9Body(mp))
	todo := x.commentsIn(tquicConn, mp.Line, mp.EndLine, "TODO")
	for _, c := range todo {
		m.add(x.ev(c.Pos, "comment", n9OneLine(c.Context)))
	}
	m.count("migrate_path_call_sites", len(x.calls("migrate_path")))
	if strings.HasSuffix(body, "Err(Error::InternalError)") && len(x.allCallsIn(mp)) <= 1 {
		m.Answer = audit.NotSupported
		m.Mechanism = fmt.Sprintf("Connection::migrate_path is a stub: %q", body)
	} else {
		m.Answer = audit.Unknown
		m.Mechanism = "migrate_path has a body: " + body
	}
	// Observing role: the server creates a path with fresh Recovery, but never activates it.
	o := act
	if c, ok := x.callIn(gocp, "new", "path::Path::new"); ok {
		o.add(x.ev(c.Pos, "call", "the server creates a Path (fresh Recovery) for a packet from a new address"))
	}
	if rn, ok := x.fieldInit(x.optFn(tquicPath, "new", "Path"), "recovery"); ok {
		o.add(x.ev(rn.Pos, "assignment", "recovery: "+rn.RHS))
	}
	fm, fo := x.finding(audit.Q1, n9Migrating, m), x.finding(audit.Q1, n9Observing, o)
	h := x.hook("Connection::migrate_path", "public migration API (also exported to C as quic_conn_migrate_path) whose body is a TODO returning Err(InternalError)", []syntax.Def{mp}, x.calls("migrate_path"))
	return []audit.Finding{fm, fo, x.combined(audit.Q1, fm, fo), h}, nil
}

func tquicQ2(p *audit.Pass) ([]audit.Finding, error) {
	x, err := n9Open(p, tquicFiles...)
	if err != nil {
		return nil, err
	}
	resp, _, ok1 := x.fnIn(tquicPath, "on_path_resp_received", "Path")
	act, ok2 := tquicActivation(x)
	if !ok1 || !ok2 {
		return x.absent(audit.Q2), nil
	}
	v := n9Verdict{}
	seed, okS := x.callIn(resp, "try_set_init_rtt")
	meas, okM := x.assignIn(resp, "initial_rtt", "duration_since")
	if okM {
		v.add(x.ev(meas.Pos, "assignment", "initial_rtt = "+meas.RHS+" (PATH_CHALLENGE to PATH_RESPONSE)"))
	}
	if okS {
		v.add(x.ev(seed.Pos, "call", seed.Text))
	}
	if d := x.optFn("src/connection/rtt.rs", "try_set_init_rtt", "RttEstimator"); d.Line > 0 {
		v.add(x.ev(d.Pos, "definition", "sets the initial RTT only before the first RTT sample"))
	}
	v.add(act.Evidence...)
	switch {
	case okS && okM && act.Answer == audit.NotSupported:
		v.Answer = audit.Inert
		v.Mechanism = "PATH_RESPONSE seeds the validated path's RTT from the challenge round trip (try_set_init_rtt), but without multipath that path never becomes the active path, so the seed never governs a migrated connection"
		v.note("With multipath enabled the seed takes effect for each new path; that is path addition, not migration.")
	case okS && okM:
		v.Answer = audit.Yes
		v.Mechanism = "PATH_RESPONSE seeds the new path's initial RTT from the challenge round trip (try_set_init_rtt)"
	default:
		v.Answer = audit.No
		v.Mechanism = "PATH_RESPONSE does not seed the RTT"
	}
	return []audit.Finding{x.finding(audit.Q2, n9Both, v)}, nil
}

func tquicQ3(p *audit.Pass) ([]audit.Finding, error) {
	x, err := n9Open(p, tquicFiles...)
	if err != nil {
		return nil, err
	}
	act, ok := tquicActivation(x)
	if !ok {
		return x.absent(audit.Q3), nil
	}
	v := act
	if act.Answer == audit.NotSupported {
		v.Answer = audit.NA
		v.Mechanism = "no migration happens (the active path never changes without multipath), so there is no new path whose estimates old-path packets could contaminate"
		if c, ok := x.callIn(x.optFn(tquicConn, "recv_frame", ""), "on_ack_received"); ok {
			v.add(x.ev(c.Pos, "call", "ACKs are processed by the Recovery of the path the ACK arrived on, over the shared packet number space"))
			v.note("Note: in single-path mode an ACK is fed to the Recovery of the path it arrived on (%s), not of the path the packets were sent on.", c.Text)
		}
	}
	return []audit.Finding{x.finding(audit.Q3, n9Both, v)}, nil
}

func tquicConstants(p *audit.Pass) ([]audit.Finding, error) {
	x, err := n9Open(p, tquicFiles...)
	if err != nil {
		return nil, err
	}
	rc, _, ok1 := x.fnIn("src/lib.rs", "default", "RecoveryConfig")
	from, _, ok2 := x.fnIn("src/congestion_control/bbr.rs", "from", "BbrConfig")
	oce, _, ok3 := x.fnIn("src/congestion_control/bbr.rs", "on_congestion_event", "Bbr")
	if !ok1 || !ok2 || !ok3 {
		return x.absent(audit.ConstInitialWindow), nil
	}
	alg, okA := x.fieldInit(rc, "congestion_control_algorithm")
	icw, okI := x.fieldInit(rc, "initial_congestion_window")
	mcw, okM := x.fieldInit(rc, "min_congestion_window")
	mds, okD := x.fieldInit(rc, "max_datagram_size")
	rtt, okR := x.fieldInit(rc, "initial_rtt")
	iw, okIW := x.assignIn(from, "initial_cwnd", "initial_congestion_window")
	mw, okMW := x.assignIn(from, "min_cwnd", "min_congestion_window")
	if !okA || !okI || !okM || !okD || !okR || !okIW || !okMW {
		x.missing = append(x.missing, "RecoveryConfig default fields / BbrConfig::from")
		return x.absent(audit.ConstInitialWindow), nil
	}
	r := x.resolver(nil)
	s, err := r.eval(mds.RHS)
	if err != nil {
		return nil, err
	}
	ni, err := x.resolver(nil).eval(icw.RHS)
	if err != nil {
		return nil, err
	}
	nm, err := x.resolver(nil).eval(mcw.RHS)
	if err != nil {
		return nil, err
	}
	par := map[string]n9Param{"max_datagram_size": {"S", s}, "initial_congestion_window": {"initcwnd_packets", ni}, "min_congestion_window": {"mincwnd_packets", nm}}
	settings := []audit.Evidence{x.ev(alg.Pos, "setting", "default "+alg.RHS), x.ev(icw.Pos, "setting", "initial_congestion_window: "+icw.RHS),
		x.ev(mds.Pos, "setting", "max_datagram_size: "+mds.RHS)}
	var out []audit.Finding
	f, err := x.resolver(par).constant(audit.ConstInitialWindow, iw.RHS, iw.Pos, "BbrConfig::from initial_cwnd", "RecoveryConfig::default with "+alg.RHS, false)
	if err != nil {
		return nil, err
	}
	f.Evidence = n9Dedupe(append(f.Evidence, settings...))
	out = append(out, f)
	f, err = x.resolver(par).constant(audit.ConstMinWindow, mw.RHS, mw.Pos, "BbrConfig::from min_cwnd", "floor after persistent congestion", false)
	if err != nil {
		return nil, err
	}
	f.Evidence = n9Dedupe(append(f.Evidence, x.ev(mcw.Pos, "setting", "min_congestion_window: "+mcw.RHS), x.ev(mds.Pos, "setting", "max_datagram_size: "+mds.RHS)))
	out = append(out, f)
	// BBR: no multiplicative decrease on loss.
	lf := x.p.Finding(audit.NA, "default BBR has no multiplicative loss factor: a congestion event enters recovery (packet conservation); persistent congestion sets cwnd to min_cwnd")
	lf.Question = audit.ConstLossFactor
	lf.Evidence = append(lf.Evidence, x.ev(oce.Pos, "definition", "Bbr::on_congestion_event"))
	if a, ok := x.assignIn(oce, "cwnd", "min_cwnd"); ok {
		lf.Evidence = append(lf.Evidence, x.ev(a.Pos, "assignment", a.LHS+" = "+a.RHS))
	}
	if c, ok := x.callIn(oce, "enter_recovery"); ok {
		lf.Evidence = append(lf.Evidence, x.ev(c.Pos, "call", c.Text))
	}
	out = append(out, lf)
	f, err = x.resolver(nil).constant(audit.ConstDefaultRTT, rtt.RHS, rtt.Pos, "RecoveryConfig initial_rtt (µs)", "INITIAL_RTT", false)
	if err != nil {
		return nil, err
	}
	return append(out, f), nil
}
