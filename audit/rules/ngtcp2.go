package rules

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/migaudit/migaudit/audit"
	"github.com/migaudit/migaudit/audit/query"
	"github.com/migaudit/migaudit/audit/syntax"
)

// ngtcp2: connection-wide state reset wholesale on any path change at both
// ends; old-path packets excluded by a packet-number watermark.

func init() {
	query.Register("ngtcp2", ngtcp2Reset, ngtcp2Q3, ngtcp2Q2, ngtcp2Constants)
}

const (
	ngtcp2ResetFn = "conn_reset_congestion_state"
	ngtcp2StatCC  = "conn_reset_conn_stat_cc"
)

var ngtcp2Files = []string{"lib/*.c", "lib/*.h", "lib/includes/ngtcp2/ngtcp2.h"}

// ngtcp2Role reads the endpoint from the asserts of the enclosing function.
func ngtcp2Role(f *syntax.File, fn string) string {
	for _, c := range f.CallsIn(fn) {
		if c.Name != "assert" || len(c.Args) == 0 || len(c.Guards) > 0 {
			continue
		}
		switch strings.ReplaceAll(c.Args[0].Text, " ", "") {
		case "!conn->server":
			return "client"
		case "conn->server":
			return "server"
		}
	}
	return "either"
}

func ngtcp2Kind(fn string) string {
	switch {
	case strings.Contains(fn, "migration") || strings.Contains(fn, "new_path") || strings.Contains(fn, "path_response"):
		return "migration"
	case strings.Contains(fn, "validation_failed"):
		return "fallback"
	}
	return "other"
}

var ngtcp2Reset = &query.Rule{
	Name: "ngtcp2/reset-congestion-state", Question: audit.Q1, Role: query.Both, Files: ngtcp2Files,
	Doc: "Counts call sites of conn_reset_congestion_state, classifies each by its enclosing function (migration, " +
		"fallback after failed validation, other) and endpoint (asserts on conn->server), and lists what " +
		"conn_reset_conn_stat_cc assigns (RTT estimator and window).",
	Needs: []query.Anchor{query.Func(ngtcp2ResetFn)},
	Decide: func(x *query.Code) ([]audit.Finding, error) {
		calls := x.Calls(ngtcp2ResetFn)
		f := x.Finding(audit.Yes, "")
		kinds := map[string]int{}
		roles := map[string]bool{}
		for _, c := range calls {
			k := ngtcp2Kind(c.Func)
			role := ngtcp2Role(x.FileOf(c.Pos), c.Func)
			kinds[k]++
			if k == "migration" {
				roles[role] = true
			}
			f.Evidence = append(f.Evidence, x.Evidence(c.Pos, "call", fmt.Sprintf("%s, %s, in %s", k, role, c.Func)))
		}
		// What the reset assigns.
		var assigned []string
		rttvarHalf := false
		cwndInit := false
		if d, ok := x.Lookup(query.Func(ngtcp2StatCC)); ok {
			for _, a := range x.FileOf(d.Pos).Assigns(d.Name) {
				assigned = append(assigned, a.Target)
				switch a.Target {
				case "latest_rtt", "min_rtt", "smoothed_rtt", "rttvar", "cwnd", "bytes_in_flight", "first_rtt_sample_ts":
					f.Evidence = append(f.Evidence, x.Evidence(a.Pos, "assignment", a.LHS+" = "+a.RHS))
				}
				if a.Target == "rttvar" && strings.Contains(strings.ReplaceAll(a.RHS, " ", ""), "initial_rtt/2") {
					rttvarHalf = true
				}
				if a.Target == "cwnd" && strings.Contains(a.RHS, "compute_initcwnd") {
					cwndInit = true
				}
			}
		}
		has := func(t string) bool {
			for _, a := range assigned {
				if a == t {
					return true
				}
			}
			return false
		}
		rttFields := 0
		for _, t := range []string{"latest_rtt", "min_rtt", "smoothed_rtt", "rttvar"} {
			if has(t) {
				rttFields++
			}
		}
		f.Counts["call_sites"] = len(calls)
		f.Counts["migration_call_sites"] = kinds["migration"]
		f.Counts["fallback_call_sites"] = kinds["fallback"]
		f.Counts["other_call_sites"] = kinds["other"]
		f.Counts["rtt_fields_reset"] = rttFields
		f.Counts["fields_assigned"] = len(assigned)
		var rs []string
		for r := range roles {
			rs = append(rs, r)
		}
		f.Role = "both"
		if !(roles["client"] && (roles["server"] || roles["either"])) {
			f.Role = strings.Join(query.SortedKeys(roles), "+")
		}
		switch {
		case kinds["migration"] > 0 && rttFields == 4 && cwndInit:
			f.Mechanism = fmt.Sprintf("%s (%d migration-related, endpoints: %s); resets latest/min/smoothed RTT and rttvar (= initial/2: %v) and recomputes cwnd with ngtcp2_cc_compute_initcwnd",
				query.Plural(len(calls), "call site"), kinds["migration"], strings.Join(query.SortedKeys(roles), ", "), rttvarHalf)
		case len(calls) == 0:
			f.Answer = audit.No
			f.Mechanism = "reset function never called"
		default:
			f.Answer = audit.Unknown
			f.Mechanism = fmt.Sprintf("%d call sites, %d migration-related, %d RTT fields reset, cwnd recomputed %v", len(calls), kinds["migration"], rttFields, cwndInit)
		}
		return []audit.Finding{f}, nil
	},
}

var ngtcp2Q3 = &query.Rule{
	Name: "ngtcp2/q3-watermark", Question: audit.Q3, Role: query.Both, Files: ngtcp2Files,
	Doc: "ngtcp2_rtb_reset_cc_state sets cc_pkt_num to the next packet number (called from the reset); the if-guards " +
		"in ngtcp2_rtb.c comparing a packet number with cc_pkt_num keep pre-migration packets out of congestion accounting. " +
		"The rule also asks whether the RTT sample (ngtcp2_conn_update_rtt) sits behind the same watermark: if not, Q3 is SPLIT.",
	Decide: func(x *query.Code) ([]audit.Finding, error) {
		rtb := x.File("lib/ngtcp2_rtb.c")
		if rtb == nil || len(x.Set.Defs("cc_pkt_num")) == 0 {
			return []audit.Finding{x.Absent("cc_pkt_num watermark (lib/ngtcp2_rtb.c)")}, nil
		}
		f := x.Answer(query.Both, audit.Yes)
		for _, d := range x.Set.Defs("cc_pkt_num") {
			if d.Kind == syntax.DefField {
				note := "field"
				for _, c := range x.FileOf(d.Pos).Comments("cc_pkt_num") {
					if c.Line < d.Line && c.Line >= d.Line-4 {
						note = strings.Join(strings.Fields(strings.Trim(c.Context, "/* ")), " ")
					}
				}
				f.Evidence = append(f.Evidence, x.Evidence(d.Pos, "definition", note))
			}
		}
		setters := query.InFunc(x.Calls("ngtcp2_rtb_reset_cc_state"), ngtcp2ResetFn)
		for _, c := range setters {
			arg := ""
			if len(c.Args) > 1 {
				arg = c.Args[1].Text
			}
			f.Evidence = append(f.Evidence, x.Evidence(c.Pos, "call", "watermark = "+arg))
		}
		guards := query.IfsNaming(rtb, "cc_pkt_num")
		asserts := 0
		for _, c := range rtb.Calls("assert") {
			if len(c.Args) > 0 && strings.Contains(c.Args[0].Text, "cc_pkt_num") {
				asserts++
			}
		}
		for _, g := range guards {
			fn, _ := rtb.FuncAt(g.Line)
			f.Evidence = append(f.Evidence, x.Evidence(g.Pos, "guard", g.Cond+" in "+fn.Name))
		}
		f.Counts["watermark_resets"] = len(setters)
		f.Counts["guards"] = len(guards)
		f.Counts["asserts"] = asserts
		// The RTT half of Q3: is the RTT sample taken from an acknowledged
		// packet also kept behind the watermark? A guard must enclose the
		// call to ngtcp2_conn_update_rtt itself.
		updates := rtb.Calls("ngtcp2_conn_update_rtt")
		rttGuarded := query.Filter(updates, func(c syntax.Call) bool { return query.GuardedBy(c.Guards, "cc_pkt_num") })
		rttUnguarded := query.Filter(updates, func(c syntax.Call) bool { return !query.GuardedBy(c.Guards, "cc_pkt_num") })
		for _, c := range rttUnguarded {
			conds := make([]string, 0, len(c.Guards))
			for _, g := range c.Guards {
				conds = append(conds, g.Cond)
			}
			f.Evidence = append(f.Evidence, x.Evidence(c.Pos, "call",
				"RTT sample from the largest acknowledged packet in "+c.Func+", guarded only by "+strings.Join(conds, " && ")+": no cc_pkt_num watermark"))
		}
		for _, c := range rttGuarded {
			f.Evidence = append(f.Evidence, x.Evidence(c.Pos, "call", "RTT sample behind the cc_pkt_num watermark"))
		}
		f.Counts["rtt_updates_guarded"] = len(rttGuarded)
		f.Counts["rtt_updates_unguarded"] = len(rttUnguarded)
		switch {
		case len(setters) > 0 && len(guards) > 0 && len(rttUnguarded) > 0:
			f.Answer = audit.Split
			f.Mechanism = fmt.Sprintf("packet-number watermark for congestion only: the reset sets cc_pkt_num to the next packet number and %s in ngtcp2_rtb.c exclude older packets from congestion accounting, "+
				"but the RTT sample (ngtcp2_conn_update_rtt, %s) is taken from the largest acknowledged packet without the watermark, so an ACK of an old-path packet seeds the just-reset RTT estimator",
				query.Plural(len(guards), "guard"), query.Plural(len(rttUnguarded), "unguarded call"))
		case len(setters) > 0 && len(guards) > 0:
			f.Mechanism = fmt.Sprintf("packet-number watermark: the reset sets cc_pkt_num to the next packet number; %s in ngtcp2_rtb.c exclude older packets from congestion accounting and RTT sampling",
				query.Plural(len(guards), "guard"))
		default:
			f.Answer = audit.Unknown
			f.Mechanism = fmt.Sprintf("watermark resets %d, guards %d", len(setters), len(guards))
		}
		return []audit.Finding{f}, nil
	},
}

var ngtcp2Q2 = &query.Rule{
	Name: "ngtcp2/q2-initial-rtt", Question: audit.Q2, Role: query.Both, Files: ngtcp2Files,
	Doc:   "conn_recv_path_response validates and promotes the path without touching the RTT estimator; the reset seeds smoothed_rtt from settings.initial_rtt.",
	Needs: []query.Anchor{query.Func("conn_recv_path_response")},
	Decide: func(x *query.Code) ([]audit.Finding, error) {
		h := x.Needed()[0]
		hf := x.FileOf(h.Pos)
		rtt := 0
		for _, c := range hf.CallsIn(h.Name) {
			if strings.Contains(strings.ToLower(c.Name), "rtt") {
				rtt++
			}
		}
		for _, a := range hf.Assigns(h.Name) {
			if strings.Contains(a.LHS, "rtt") {
				rtt++
			}
		}
		f := x.Answer(query.Both, audit.No)
		f.Evidence = append(f.Evidence, x.Evidence(h.Pos, "definition", "PATH_RESPONSE handler"))
		if d, ok := x.Lookup(query.Func(ngtcp2StatCC)); ok {
			for _, a := range x.FileOf(d.Pos).Assigns(d.Name) {
				if a.Target == "smoothed_rtt" {
					f.Evidence = append(f.Evidence, x.Evidence(a.Pos, "assignment", "seed: "+a.RHS))
				}
			}
		}
		f.Counts["rtt_touches_in_handler"] = rtt
		if rtt == 0 {
			f.Mechanism = "path validation takes no RTT sample; the reset seeds smoothed_rtt from settings.initial_rtt"
		} else {
			f.Answer = audit.Unknown
			f.Mechanism = fmt.Sprintf("%d RTT touches in conn_recv_path_response", rtt)
		}
		return []audit.Finding{f}, nil
	},
}

var ngtcp2Constants = &query.Rule{
	Name: "ngtcp2/constants", Question: audit.ConstInitialWindow, Role: "", Files: ngtcp2Files,
	Doc: "ngtcp2_cc_compute_initcwnd's body turned into a formula of the payload size S, S's default as the reset " +
		"computes it, the CUBIC ssthresh factor and the 2 × S floor, NGTCP2_DEFAULT_INITIAL_RTT.",
	Needs: []query.Anchor{query.Func("ngtcp2_cc_compute_initcwnd")},
	Decide: func(x *query.Code) ([]audit.Finding, error) {
		fn := x.Needed()[0]
		var out query.Findings
		expr, err := initcwndFormula(x.FileOf(fn.Pos), fn)
		if err != nil {
			f := x.Absent("a formula in ngtcp2_cc_compute_initcwnd")
			f.Detail += ": " + err.Error()
			return []audit.Finding{f}, nil
		}
		// S as the reset computes it.
		S, sNote, sPos := 0.0, "", fn.Pos
		if d, ok := x.Lookup(query.Func(ngtcp2StatCC)); ok {
			for _, a := range x.FileOf(d.Pos).Assigns(d.Name) {
				if a.Target != "cwnd" {
					continue
				}
				switch {
				case strings.Contains(a.RHS, "settings.max_tx_udp_payload_size"):
					for _, s := range x.Assigns("") {
						if s.LHS == "settings->max_tx_udp_payload_size" {
							if v, err := x.Constant(audit.ConstInitialWindow, strings.ReplaceAll(s.RHS, " ", ""), nil, "", "", s.Pos); err == nil {
								S, sNote, sPos = v.Constant.Value, "settings default max_tx_udp_payload_size = "+s.RHS, s.Pos
							}
						}
					}
				default:
					// per-path: dcid.current.max_udp_payload_size, initialised from NGTCP2_MAX_UDP_PAYLOAD_SIZE
					for _, s := range x.Assigns("") {
						if s.LHS == "dcid->max_udp_payload_size" && strings.HasPrefix(s.RHS, "NGTCP2_") {
							if v, _, ok := x.ExpandMacro(s.RHS); ok {
								if n, ok := query.Numeric(v); ok {
									S, sNote, sPos = n, "path's max_udp_payload_size before PMTUD = "+s.RHS+" = "+v, s.Pos
								}
							}
						}
					}
				}
				f, err := x.Constant(audit.ConstInitialWindow, expr, map[string]float64{"S": S}, "ngtcp2_cc_compute_initcwnd(max_tx_udp_payload_size)",
					"cwnd = "+a.RHS+"; S: "+sNote, fn.Pos, x.Evidence(a.Pos, "assignment", "reset recomputes the window"), x.Evidence(sPos, "constant", "S default"))
				if err != nil {
					return nil, err
				}
				out.Append(f)
				break
			}
		}
		if S == 0 {
			out.Append(x.Absent("the payload size the reset uses"))
			return out.Result()
		}
		// CUBIC (the default cc_algo) loss response: ssthresh = cwnd * 7 / 10,
		// floored at 2 * S in the same function.
		cubic := regexp.MustCompile(`^cstat->cwnd\*(\d+)/(\d+)$`)
		lossFn := ""
		for _, a := range x.Assigns("") {
			if lossFn != "" || a.LHS != "cstat->ssthresh" {
				continue
			}
			if m := cubic.FindStringSubmatch(strings.ReplaceAll(a.RHS, " ", "")); m != nil {
				out.Add(x.Constant(audit.ConstLossFactor, m[1]+"/"+m[2], nil, "CUBIC ssthresh = cwnd * "+m[1]+" / "+m[2], "in "+a.Func+" (default cc_algo CUBIC)", a.Pos))
				lossFn = a.Func
			}
		}
		floorDone := false
		for _, a := range x.Assigns(lossFn) {
			r := strings.ReplaceAll(a.RHS, " ", "")
			if !floorDone && (a.LHS == "cstat->ssthresh" || a.LHS == "min_cwnd") && strings.Contains(r, "2*cstat->max_tx_udp_payload_size") {
				out.Add(x.Constant(audit.ConstMinWindow, "2*S", map[string]float64{"S": S}, "2 x max_tx_udp_payload_size", a.LHS+" = "+a.RHS+" in "+a.Func, a.Pos))
				floorDone = true
			}
		}
		if r, d, ok := x.ExpandMacro("NGTCP2_DEFAULT_INITIAL_RTT"); ok {
			// ngtcp2 durations are nanoseconds
			out.Add(x.Constant(audit.ConstDefaultRTT, "("+r+")/1000", nil, "NGTCP2_DEFAULT_INITIAL_RTT (ns) in µs", "NGTCP2_DEFAULT_INITIAL_RTT = "+d.Value, d.Pos))
		}
		return out.Result()
	},
}

// initcwndFormula rewrites ngtcp2_cc_compute_initcwnd's body as an expression
// of its parameter S: locals substituted, ngtcp2_min/max as min/max.
func initcwndFormula(f *syntax.File, fn syntax.Def) (string, error) {
	if len(fn.Params) != 1 {
		return "", fmt.Errorf("expected one parameter, have %d", len(fn.Params))
	}
	param := fn.Params[0]
	locals := map[string]string{}
	for _, a := range f.Assigns(fn.Name) {
		rhs := a.RHS
		for k, v := range locals {
			rhs = replaceIdent(rhs, k, v)
		}
		locals[a.Target] = rhs
	}
	// the returned expression is the last top-level min/max call
	var ret string
	for _, c := range f.CallsIn(fn.Name) {
		if (c.Name == "ngtcp2_min" || c.Name == "ngtcp2_min_size" || c.Name == "ngtcp2_min_uint64") && strings.Contains(fn.Body, "return "+c.Text) {
			ret = c.Text
		}
	}
	if ret == "" {
		return "", fmt.Errorf("no `return ngtcp2_min(...)` in %s", fn.Name)
	}
	for k, v := range locals {
		ret = replaceIdent(ret, k, v)
	}
	ret = regexp.MustCompile(`ngtcp2_(min|max)(_[a-z0-9]+)?\(`).ReplaceAllString(ret, "$1(")
	ret = replaceIdent(ret, param, "S")
	return strings.ReplaceAll(ret, " ", ""), nil
}

// replaceIdent replaces whole-identifier occurrences of name in s.
func replaceIdent(s, name, with string) string {
	re := regexp.MustCompile(`\b` + regexp.QuoteMeta(name) + `\b`)
	return re.ReplaceAllLiteralString(s, with)
}
