package rules

import (
	"fmt"
	"strings"

	"github.com/migaudit/migaudit/audit"
	"github.com/migaudit/migaudit/audit/query"
	"github.com/migaudit/migaudit/audit/syntax"
)

// quiche: every Path owns its Recovery; a new path is born at the initial
// window. on_connection_migration is a hook nothing calls.

func init() {
	query.Register("quiche", quicheDeadHook, quichePerPath, quicheQ2, quicheQ3, quicheConstants)
}

var quicheFiles = []string{"quiche/src/**/*.rs", "src/**/*.rs"} // src/: layouts before the workspace split

var quicheDeadHook = &query.Rule{
	Name: "quiche/on-connection-migration", Question: audit.Q1, Role: "", Files: quicheFiles,
	Doc: "Counts implementations (with bodies), declarations and real call sites of on_connection_migration; " +
		"a declared, implemented, never-called hook is INERT.",
	Decide: func(x *query.Code) ([]audit.Finding, error) {
		const hook = "on_connection_migration"
		var impls, decls []syntax.Def
		for _, d := range query.LiveDefs(x.Set.Defs(hook)) {
			switch d.Kind {
			case syntax.DefFunction:
				impls = append(impls, d)
			case syntax.DefPrototype:
				decls = append(decls, d)
			}
		}
		if len(impls)+len(decls) == 0 {
			return []audit.Finding{x.Absent("fn " + hook)}, nil
		}
		calls := query.Live(x.Calls(hook))
		empty := 0
		f := x.Finding(audit.Inert, "")
		f.Role = "" // a hook finding; the combined Q1 answer is quiche/per-path-recovery
		for _, d := range decls {
			note := "trait declaration"
			for _, c := range x.FileOf(d.Pos).Comments("migrat") {
				if c.Line < d.Line && c.Line >= d.Line-3 {
					note += "; doc: " + strings.TrimSpace(strings.TrimPrefix(c.Context, "///"))
				}
			}
			f.Evidence = append(f.Evidence, x.Evidence(d.Pos, "declaration", note))
		}
		for _, d := range impls {
			if d.Empty {
				empty++
			}
			f.Evidence = append(f.Evidence, x.Evidence(d.Pos, "handler", fmt.Sprintf("impl for %s, empty=%v", d.Owner, d.Empty)))
		}
		f.Evidence = append(f.Evidence, x.CallEvidence(calls, "call", "")...)
		f.Counts["implementations"] = len(impls)
		f.Counts["empty_implementations"] = empty
		f.Counts["declarations"] = len(decls)
		f.Counts["call_sites"] = len(calls)
		if len(calls) == 0 {
			f.Mechanism = fmt.Sprintf("dead hook: %s (%d empty), 0 call sites", query.Plural(len(impls), "implementation"), empty)
		} else {
			f.Answer = audit.Unknown
			f.Mechanism = fmt.Sprintf("hook called from %s", query.Plural(len(calls), "site"))
		}
		return []audit.Finding{f}, nil
	},
}

var quichePerPath = &query.Rule{
	Name: "quiche/per-path-recovery", Question: audit.Q1, Role: query.Both, Files: quicheFiles,
	Doc: "Path::new initialises its own recovery with Recovery::new_with_config (the initial window); Path::new " +
		"is called for every new peer address; the hook called on a path switch (on_path_change) runs loss " +
		"detection on the old path and resets nothing.",
	Needs: []query.Anchor{query.Method("Path", "new")},
	Decide: func(x *query.Code) ([]audit.Finding, error) {
		pathNew := x.Needed()[0]
		pf := x.FileOf(pathNew.Pos)
		init := query.Filter(pf.Assigns("new"), func(a syntax.Assign) bool {
			return a.FuncOwner == "Path" && a.Target == "recovery" && strings.Contains(a.RHS, "Recovery::new")
		})
		creations := query.Filter(query.Live(x.Calls("new")), func(c syntax.Call) bool { return c.Callee == "path::Path::new" || c.Callee == "Path::new" })
		switches := query.Filter(query.Live(x.Calls("on_path_change")), func(c syntax.Call) bool { return strings.Contains(c.Callee, "recovery") })
		f := x.Answer(query.Both, audit.Yes)
		f.Evidence = append(f.Evidence, x.Evidence(pathNew.Pos, "definition", "Path::new"))
		for _, a := range init {
			f.Evidence = append(f.Evidence, x.Evidence(a.Pos, "assignment", "per-path recovery = "+a.RHS))
		}
		f.Evidence = append(f.Evidence, x.CallEvidence(creations, "call", "")...)
		for _, c := range switches {
			f.Evidence = append(f.Evidence, x.Evidence(c.Pos, "call", "on path switch: "+c.Callee+" (old path, loss detection) in "+c.Func))
		}
		f.Counts["recovery_inits_in_path_new"] = len(init)
		f.Counts["path_new_call_sites"] = len(creations)
		f.Counts["on_path_change_calls"] = len(switches)
		if len(init) > 0 && len(creations) > 0 {
			f.Mechanism = fmt.Sprintf("per-path state: Path::new builds a fresh Recovery (Path::new called at %s); nothing is reset, a new path is born at the initial window",
				query.Plural(len(creations), "site"))
		} else {
			f.Answer = audit.Unknown
			f.Mechanism = fmt.Sprintf("Recovery init in Path::new %d, Path::new call sites %d", len(init), len(creations))
		}
		return []audit.Finding{f}, nil
	},
}

var quicheQ2 = &query.Rule{
	Name: "quiche/q2-initial-rtt", Question: audit.Q2, Role: query.Both, Files: quicheFiles,
	Doc: "What Path::on_response_received (PATH_RESPONSE) does: no RTT call or assignment; the new path's " +
		"Recovery starts from the configured initial_rtt.",
	Needs: []query.Anchor{query.Method("Path", "on_response_received")},
	Decide: func(x *query.Code) ([]audit.Finding, error) {
		h := x.Needed()[0]
		hf := x.FileOf(h.Pos)
		rttCalls := query.Filter(hf.CallsIn(h.Name), func(c syntax.Call) bool {
			return c.FuncOwner == "Path" && strings.Contains(strings.ToLower(c.Name), "rtt")
		})
		rttAssigns := query.Filter(hf.Assigns(h.Name), func(a syntax.Assign) bool {
			return a.FuncOwner == "Path" && strings.Contains(strings.ToLower(a.LHS), "rtt")
		})
		f := x.Answer(query.Both, audit.No)
		f.Evidence = append(f.Evidence, x.Evidence(h.Pos, "definition", "PATH_RESPONSE handler"))
		for _, d := range append(x.Set.Defs("DEFAULT_INITIAL_RTT"), x.Set.Defs("INITIAL_RTT")...) {
			if d.Kind == syntax.DefConst && !d.Test {
				f.Evidence = append(f.Evidence, x.Evidence(d.Pos, "constant", "seed of every new Recovery"))
			}
		}
		f.Counts["rtt_calls_in_handler"] = len(rttCalls)
		f.Counts["rtt_assignments_in_handler"] = len(rttAssigns)
		if len(rttCalls)+len(rttAssigns) == 0 {
			f.Mechanism = "path validation takes no RTT sample; the new path's Recovery starts from the configured initial_rtt"
		} else {
			f.Answer = audit.Unknown
			f.Mechanism = fmt.Sprintf("PATH_RESPONSE handler touches RTT (%d calls, %d assignments)", len(rttCalls), len(rttAssigns))
		}
		return []audit.Finding{f}, nil
	},
}

var quicheQ3 = &query.Rule{
	Name: "quiche/q3-per-path", Question: audit.Q3, Role: query.Both, Files: quicheFiles,
	Doc: "Which structs hold a Recovery field: only Path means every ACK feeds the estimator of the path its packet was sent on.",
	Decide: func(x *query.Code) ([]audit.Finding, error) {
		var owners []string
		f := x.Answer(query.Both, audit.Yes)
		for _, d := range query.LiveDefs(x.Set.Defs("recovery")) {
			if d.Kind != syntax.DefField {
				continue
			}
			line := x.FileOf(d.Pos).Line(d.Line)
			if !strings.Contains(line, "Recovery") {
				continue
			}
			owners = append(owners, d.Owner)
			f.Evidence = append(f.Evidence, x.Evidence(d.Pos, "field", "recovery state owned by "+d.Owner))
		}
		f.Counts["structs_owning_recovery"] = len(owners)
		if len(owners) == 1 && owners[0] == "Path" {
			f.Mechanism = "per-path state: Recovery (RTT and congestion) is a field of Path only, so old-path ACKs update the old path's estimators"
		} else {
			f.Answer = audit.Unknown
			f.Mechanism = "Recovery owned by: " + strings.Join(owners, ", ")
		}
		return []audit.Finding{f}, nil
	},
}

var quicheConstants = &query.Rule{
	Name: "quiche/constants", Question: audit.ConstInitialWindow, Role: "", Files: quicheFiles,
	Doc: "Congestion::from_config's initial window (max_send_udp_payload_size × initial_congestion_window_packets) with the " +
		"defaults, MINIMUM_WINDOW_PACKETS, the default algorithm's loss factor (CUBIC: BETA_CUBIC), DEFAULT_INITIAL_RTT.",
	Decide: func(x *query.Code) ([]audit.Finding, error) {
		constOf := func(name string) (float64, syntax.Def, bool) {
			for _, d := range query.LiveDefs(x.Set.Defs(name)) {
				if d.Kind == syntax.DefConst {
					v, ok := query.Numeric(d.Value)
					return v, d, ok
				}
			}
			return 0, syntax.Def{}, false
		}
		var out query.Findings
		S, sDef, sOK := constOf("MAX_SEND_UDP_PAYLOAD_SIZE")
		N, nDef, nOK := constOf("DEFAULT_INITIAL_CONGESTION_WINDOW_PACKETS")
		// the packets count: configurable since 0.18 (the defaults'
		// DEFAULT_INITIAL_CONGESTION_WINDOW_PACKETS), the constant
		// INITIAL_WINDOW_PACKETS in Recovery::new_with_config before.
		packets := "initial_congestion_window_packets"
		if !nOK {
			N, nDef, nOK = constOf("INITIAL_WINDOW_PACKETS")
			packets = "INITIAL_WINDOW_PACKETS"
		}
		var initA *syntax.Assign
		for _, fl := range x.Set {
			for _, a := range fl.Assigns("") { // Congestion::from_config (0.24+), Recovery::new_with_config (0.15-0.23)
				if !a.Test && a.Target == "initial_congestion_window" && strings.Contains(a.RHS, packets) {
					aa := a
					initA = &aa
				}
			}
		}
		if initA != nil && sOK && nOK {
			f, err := x.Constant(audit.ConstInitialWindow, query.FmtNum(N)+"*S", map[string]float64{"S": S}, packets+" x max_send_udp_payload_size",
				"initial_congestion_window = "+initA.RHS, initA.Pos, x.Evidence(nDef.Pos, "constant", "packets default"), x.Evidence(sDef.Pos, "constant", "S default"))
			if err != nil {
				return nil, err
			}
			out.Append(f)
		} else {
			out.Append(x.Absent("Congestion::from_config initial window / its defaults"))
		}
		if m, d, ok := constOf("MINIMUM_WINDOW_PACKETS"); ok && sOK {
			out.Add(x.Constant(audit.ConstMinWindow, query.FmtNum(m)+"*S", map[string]float64{"S": S}, "MINIMUM_WINDOW_PACKETS x max datagram size", "MINIMUM_WINDOW_PACKETS = "+d.Value, d.Pos))
		}
		// The default algorithm decides the loss factor.
		algo := ""
		for _, a := range x.Assigns("") {
			if a.Target == "cc_algorithm" && a.Op == "field" && strings.Contains(a.RHS, "CongestionControlAlgorithm::") && !a.Test {
				algo = lastWord(a.RHS)
			}
		}
		if b, d, ok := constOf("BETA_CUBIC"); ok {
			if f := out.Add(x.Constant(audit.ConstLossFactor, query.FmtNum(b), nil, "BETA_CUBIC", "default algorithm "+algo+": BETA_CUBIC = "+d.Value, d.Pos)); f != nil {
				f.Constant.Alternative = !strings.EqualFold(algo, "cubic")
			}
		}
		if b, d, ok := constOf("LOSS_REDUCTION_FACTOR"); ok {
			if f := out.Add(x.Constant(audit.ConstLossFactor, query.FmtNum(b), nil, "LOSS_REDUCTION_FACTOR (Reno)", "Reno: LOSS_REDUCTION_FACTOR = "+d.Value, d.Pos)); f != nil {
				f.Constant.Alternative = !strings.EqualFold(algo, "reno")
			}
		}
		for _, d := range append(query.LiveDefs(x.Set.Defs("DEFAULT_INITIAL_RTT")), query.LiveDefs(x.Set.Defs("INITIAL_RTT"))...) {
			if d.Kind == syntax.DefConst && strings.Contains(d.Value, "Duration::") {
				expr := rustDurationMicros(d.Value)
				out.Add(x.Constant(audit.ConstDefaultRTT, expr, nil, d.Name+" (µs)", d.Name+" = "+d.Value, d.Pos))
				break
			}
		}
		return out.Result()
	},
}

func lastWord(s string) string {
	s = strings.TrimRight(s, ", ")
	if i := strings.LastIndexAny(s, ":. "); i >= 0 {
		return s[i+1:]
	}
	return s
}

// rustDurationMicros turns Duration::from_millis(333) into 333*1000.
func rustDurationMicros(s string) string {
	s = strings.ReplaceAll(s, " ", "")
	for pre, mul := range map[string]string{"Duration::from_millis(": "*1000", "Duration::from_micros(": "", "Duration::from_secs(": "*1000000"} {
		if strings.HasPrefix(s, pre) && strings.HasSuffix(s, ")") {
			return strings.TrimSuffix(strings.TrimPrefix(s, pre), ")") + mul
		}
	}
	return s
}
