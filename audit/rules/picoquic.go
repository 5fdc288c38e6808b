package rules

import (
	"fmt"
	"sort"
	"strings"

	"github.com/migaudit/migaudit/audit"
	"github.com/migaudit/migaudit/audit/query"
	"github.com/migaudit/migaudit/audit/syntax"
	"github.com/migaudit/migaudit/data"
)

// picoquic: congestion state lives in the path object, migration attaches a
// new tuple to the same path, and the reset notification is never sent.

var picoFiles = []string{"picoquic/*.[ch]"}

const (
	picoNotifyEnum   = "picoquic_congestion_notification_t"
	picoResetValue   = "picoquic_congestion_notification_reset"
	picoAlgType      = "picoquic_congestion_algorithm_t"
	picoAlgStruct    = "st_picoquic_congestion_algorithm_t"
	picoNotifyField  = "alg_notify"
	picoPathResponse = "picoquic_decode_path_response_frame"
	picoUpdateRTT    = "picoquic_update_path_rtt"
)

func init() {
	query.Register("picoquic", picoResetDispatch, picoPathValidation, picoQ2, picoQ3, picoConstants)
}

// picoTuples is the anchor of the design since 2025-03 ("introduce tuple
// structure"): a migration attaches a tuple to the same path object. Before
// it, a new address got its own path object, promoted on validation.
var picoTuples = query.Type("picoquic_tuple_t").Hint("before 2025-03 picoquic creates a path object per address and promotes it on validation")

// picoPathObjects are the anchors of the design before tuples: a path object
// is created per address and promoted to path[0] once validated.
var picoPathObjects = []query.Anchor{query.FuncIn("picoquic/quicctx.c", "picoquic_promote_path_to_default", ""), query.FuncIn("picoquic/quicctx.c", "picoquic_create_path", "")}

// Q1 per design: with tuples the path keeps its congestion state and the
// reset notification is the only way back (never dispatched); before tuples
// the promotion runs alg_init on a fresh path.
var picoResetDispatch = query.Choose(picoResetTuples, picoPromotePath)

var picoPromotePath = &query.Rule{
	Name: "picoquic/reset-notification", Question: audit.Q1, Role: query.Both, Files: picoFiles, Design: "a path object per address, promoted on validation",
	Doc: "A packet from a new address creates a new path object (picoquic_create_path: its own RTT estimator and " +
		"window); once validated, picoquic_promote_path_to_default runs the algorithm's alg_init on it and swaps it into path[0].",
	Needs: picoPathObjects,
	Decide: func(x *query.Code) ([]audit.Finding, error) {
		n := x.Needed()
		promote, create := n[0], n[1]
		f := x.Answer(query.Both, audit.Yes)
		f.Rule = "picoquic/promote-path"
		f.Evidence = append(f.Evidence, x.Evidence(promote.Pos, "definition", ""))
		inits := x.CallsIn(promote, "alg_init")
		f.Evidence = append(f.Evidence, x.CallEvidence(inits, "call", "congestion state initialised for the promoted path")...)
		promotions := query.Live(x.Calls(promote.Name))
		f.Evidence = append(f.Evidence, x.CallEvidence(promotions, "call", "")...)
		var creates []syntax.Call
		for _, c := range x.Calls(create.Name) {
			if c.Func != "picoquic_create_cnx" && !strings.Contains(c.Func, "create_cnx") {
				creates = append(creates, c)
			}
		}
		f.Evidence = append(f.Evidence, x.CallEvidence(creates, "call", "new path object for a new address")...)
		f.Counts["alg_init_in_promotion"] = len(inits)
		f.Counts["promotion_sites"] = len(promotions)
		f.Counts["path_creations"] = len(creates)
		switch {
		case len(inits) > 0 && len(promotions) > 0 && len(creates) > 0:
			f.Mechanism = fmt.Sprintf("a new address gets a new path object (%s of %s: fresh RTT and window); validation promotes it through %s (%s), which runs alg_init on it",
				query.Plural(len(creates), "call site"), create.Name, promote.Name, query.Plural(len(promotions), "call site"))
		case len(promotions) == 0:
			f.Answer = audit.Inert
			f.Mechanism = promote.Name + " runs alg_init but is never called"
		default:
			f.Answer = audit.Unknown
			f.Mechanism = fmt.Sprintf("%s: %d alg_init calls, %d call sites; %s: %d call sites", promote.Name, len(inits), len(promotions), create.Name, len(creates))
		}
		return []audit.Finding{f}, nil
	},
}

var picoResetTuples = &query.Rule{
	Name: "picoquic/reset-notification", Question: audit.Q1, Role: query.Both, Files: picoFiles, Design: "tuples inside one path object",
	Needs: []query.Anchor{picoTuples},
	Doc: "Counts the congestion algorithms (picoquic_congestion_algorithm_t initialisers) whose notify " +
		"callback handles picoquic_congestion_notification_reset, and every dispatch through the " +
		"alg_notify callback by notification value: a handled but never dispatched reset is a dead hook.",
	Decide: func(x *query.Code) ([]audit.Finding, error) {
		values := x.Enumerators(picoNotifyEnum)
		if len(values) == 0 {
			return []audit.Finding{x.Absent("enum " + picoNotifyEnum)}, nil
		}
		var resetDef *syntax.Def
		for i, v := range values {
			if v.Name == picoResetValue {
				resetDef = &values[i]
			}
		}
		if resetDef == nil {
			return []audit.Finding{x.Absent(picoResetValue)}, nil
		}
		// Dispatches: every call through the notify callback, by the
		// enumerators its notification argument names.
		disp := x.Dispatches(picoNotifyField, 2, values)
		dispatch, sites := disp.Count, disp.Sites

		// Algorithms: initialisers of picoquic_congestion_algorithm_t and their notify function.
		algs := x.Initialisers(picoAlgType, picoAlgStruct, picoNotifyField)
		direct := map[string]syntax.Mention{}
		for _, m := range x.Set.Mentions(picoResetValue) {
			if m.Kind == syntax.MentionCaseLabel {
				direct[m.Func] = m
			}
		}
		f := x.Answer(query.Both, audit.No)
		handlers, viaForward := 0, 0
		var notes []string
		for _, a := range algs {
			if m, ok := direct[a.Value]; ok {
				handlers++
				f.Evidence = append(f.Evidence, x.Evidence(m.Pos, "handler", a.Var+" via "+a.Value))
				continue
			}
			// One level of forwarding: the notify function passes its
			// notification on to a function that handles the reset.
			fwd := ""
			if c, ok := x.Forward(a.Value, "notification", func(n string) bool { _, ok := direct[n]; return ok }); ok {
				fwd = c.Name
				f.Evidence = append(f.Evidence, x.Evidence(c.Pos, "handler", fmt.Sprintf("%s via %s, forwarding to %s", a.Var, a.Value, fwd)))
			}
			if fwd != "" {
				handlers++
				viaForward++
				notes = append(notes, fmt.Sprintf("%s forwards to %s", a.Value, fwd))
			} else {
				notes = append(notes, a.Var+" does not handle it")
			}
		}
		var dispatched []string
		for _, v := range values {
			if dispatch[v.Name] > 0 {
				dispatched = append(dispatched, strings.TrimPrefix(v.Name, "picoquic_congestion_notification_"))
			}
		}
		f.Counts["notification_values"] = len(values)
		f.Counts["algorithms"] = len(algs)
		f.Counts["algorithms_handling_reset"] = handlers
		f.Counts["handled_by_forwarding"] = viaForward
		f.Counts["functions_with_reset_case"] = len(direct)
		f.Counts["dispatch_sites"] = len(sites)
		f.Counts["values_dispatched"] = len(dispatched)
		f.Counts["reset_dispatches"] = dispatch[picoResetValue]
		// the hook tally every Q1 finding with a hook carries (study F1)
		f.Counts["implementations"] = handlers
		f.Counts["call_sites"] = dispatch[picoResetValue]
		for _, v := range values {
			f.Counts["dispatched:"+strings.TrimPrefix(v.Name, "picoquic_congestion_notification_")] = dispatch[v.Name]
		}
		f.Evidence = append([]audit.Evidence{x.Evidence(resetDef.Pos, "definition", "enumerator of "+picoNotifyEnum)}, f.Evidence...)
		for i, c := range sites {
			var named []string
			for _, id := range disp.Named[i] {
				named = append(named, strings.TrimPrefix(id, "picoquic_congestion_notification_"))
			}
			f.Evidence = append(f.Evidence, x.Evidence(c.Pos, "dispatch", "notifies "+strings.Join(named, "|")+" in "+c.Func))
		}
		sort.Strings(notes)
		if dispatch[picoResetValue] == 0 {
			f.Mechanism = fmt.Sprintf("reset notification handled by %d of %d algorithms, dispatched by nothing: %d alg_notify sites dispatch %d of %d values, reset not among them",
				handlers, len(algs), len(sites), len(dispatched), len(values))
		} else {
			f.Answer = audit.Unknown
			f.Mechanism = fmt.Sprintf("reset notification dispatched %d times; whether on migration needs reading the sites", dispatch[picoResetValue])
		}
		f.Detail = "values dispatched: " + strings.Join(dispatched, ", ")
		if len(notes) > 0 {
			f.Detail += "; " + strings.Join(notes, "; ")
		}
		return []audit.Finding{f}, nil
	},
}

var picoPathValidation = &query.Rule{
	Name: "picoquic/path-validation", Question: audit.Q1, Role: "", Files: picoFiles,
	Doc: "Lists what the PATH_RESPONSE handler calls and assigns: RTT and MTU updates, no congestion " +
		"control; and where the window is re-initialised to PICOQUIC_CWIN_INITIAL (setup and new-path creation only).",
	Needs: []query.Anchor{query.Func(picoPathResponse), picoTuples},
	Decide: func(x *query.Code) ([]audit.Finding, error) {
		fn := x.Needed()[0]
		file := x.FileOf(fn.Pos)
		calls := file.CallsIn(fn.Name)
		assigns := file.Assigns(fn.Name)
		var rtt, cc []syntax.Call
		var ccAssign []syntax.Assign
		for _, c := range calls {
			n := strings.ToLower(c.Name)
			switch {
			case c.Name == picoNotifyField || strings.Contains(n, "congestion") || strings.Contains(n, "cwin") || strings.HasPrefix(n, "picoquic_cc_"):
				cc = append(cc, c)
			case strings.Contains(n, "rtt"):
				rtt = append(rtt, c)
			}
		}
		for _, a := range assigns {
			t := strings.ToLower(a.Target)
			if strings.Contains(t, "cwin") || strings.Contains(t, "congestion") || strings.Contains(t, "ssthresh") {
				ccAssign = append(ccAssign, a)
			}
		}
		// Where is the window set to the initial value at all?
		reinit := query.Filter(x.Assigns(""), func(a syntax.Assign) bool {
			return a.Target == "cwin" && strings.Contains(a.RHS, "PICOQUIC_CWIN_INITIAL")
		})
		f := x.Finding(audit.No, "")
		f.Role = "" // supporting the combined answer of picoquic/reset-notification
		f.Counts["calls_in_handler"] = len(calls)
		f.Counts["rtt_calls"] = len(rtt)
		f.Counts["cc_calls"] = len(cc)
		f.Counts["cc_assignments"] = len(ccAssign)
		f.Counts["cwin_initial_assignments"] = len(reinit)
		f.Evidence = append(f.Evidence, x.Evidence(fn.Pos, "definition", "PATH_RESPONSE handler"))
		f.Evidence = append(f.Evidence, x.CallEvidence(rtt, "call", "")...)
		f.Evidence = append(f.Evidence, x.CallEvidence(cc, "call", "")...)
		var where []string
		seen := map[string]bool{}
		for _, a := range reinit {
			f.Evidence = append(f.Evidence, x.Evidence(a.Pos, "assignment", "cwin re-initialised in "+a.Func))
			if !seen[a.Func] {
				seen[a.Func] = true
				where = append(where, a.Func)
			}
		}
		var names []string
		for _, c := range calls {
			names = append(names, c.Name)
		}
		if len(cc) == 0 && len(ccAssign) == 0 {
			f.Mechanism = fmt.Sprintf("path validation updates RTT (%d call) but never touches congestion control; cwin = PICOQUIC_CWIN_INITIAL only in %s",
				len(rtt), strings.Join(where, ", "))
		} else {
			f.Answer = audit.Unknown
			f.Mechanism = fmt.Sprintf("PATH_RESPONSE handler touches congestion control (%d calls, %d assignments)", len(cc), len(ccAssign))
		}
		f.Detail = "handler calls: " + strings.Join(names, ", ")
		return []audit.Finding{f}, nil
	},
}

// Q2 per design: with tuples the challenge round trip reaches a path that
// already has a sample (INERT); before, it reaches the new path object,
// which has none.
var picoQ2 = query.Choose(picoQ2Tuples, picoQ2PathObjects)

var picoQ2PathObjects = &query.Rule{
	Name: "picoquic/q2-challenge-rtt", Question: audit.Q2, Role: query.Both, Files: picoFiles, Design: "a path object per address, promoted on validation",
	Doc: "The PATH_RESPONSE handler's RTT update and its gate (smoothed_rtt == PICOQUIC_INITIAL_RTT at the call, or " +
		"!rtt_is_initialized in picoquic_update_path_rtt with epoch -1): it seeds a path that has no sample, and the " +
		"path being validated is a new path object (picoquic_create_path), which has none.",
	Needs: append([]query.Anchor{query.Func(picoPathResponse), query.Func(picoUpdateRTT)}, picoPathObjects...),
	Decide: func(x *query.Code) ([]audit.Finding, error) {
		n := x.Needed()
		handler, upd, create := n[0], n[1], n[3]
		calls, none := picoChallengeRTT(x, handler)
		if none != nil {
			return none, nil
		}
		call := calls[0]
		f := x.Answer(query.Both, audit.Yes)
		f.Counts["challenge_rtt_calls"] = len(calls)
		f.Evidence = append(f.Evidence, x.Evidence(call.Pos, "call", "RTT from the challenge round trip"))
		gate := ""
		for _, g := range call.Guards {
			if gate == "" && (strings.Contains(g.Cond, "PICOQUIC_INITIAL_RTT") || strings.Contains(g.Cond, "rtt_is_initialized")) {
				gate = "while the path has no sample (`" + query.OneLine(g.Cond) + "`)"
				f.Evidence = append(f.Evidence, x.Evidence(g.Pos, "guard", g.Cond))
			}
		}
		if gate != "" {
		} else if ep := query.ArgFor(call, upd, "epoch"); strings.HasPrefix(strings.TrimSpace(ep), "-") {
			if g := picoInitGuard(x, upd); g != nil {
				gate = fmt.Sprintf("while the path has no sample (epoch %s, guard `%s`)", ep, g.Cond)
				f.Evidence = append(f.Evidence, x.Evidence(g.Pos, "guard", g.Cond))
			}
		}
		if gate == "" {
			gate = "as an RTT sample"
		}
		f.Evidence = append(f.Evidence, x.Evidence(create.Pos, "definition", "a new address's path object starts with no RTT sample"))
		f.Mechanism = "a new address gets its own path object (" + create.Name + ", no RTT sample); the PATH_RESPONSE handler seeds that path's RTT from the challenge round trip " + gate
		return []audit.Finding{f}, nil
	},
}

var picoQ2Tuples = &query.Rule{
	Name: "picoquic/q2-challenge-rtt", Question: audit.Q2, Role: query.Both, Files: picoFiles, Design: "tuples inside one path object",
	Doc: "Finds the PATH_RESPONSE handler's RTT update, its epoch argument, and the guard in " +
		"picoquic_update_path_rtt: with epoch < 0 the update runs only when !rtt_is_initialized, which is " +
		"never cleared on a path that already has a sample (INERT).",
	Needs: []query.Anchor{query.Func(picoPathResponse), query.Func(picoUpdateRTT), picoTuples},
	Decide: func(x *query.Code) ([]audit.Finding, error) {
		n := x.Needed()
		handler, upd := n[0], n[1]
		calls, none := picoChallengeRTT(x, handler)
		if none != nil {
			return none, nil
		}
		call := calls[0]
		epochArg := query.ArgFor(call, upd, "epoch")
		// The guard on the update's body that names rtt_is_initialized.
		guard := picoInitGuard(x, upd)
		var setTo1, setTo0 []syntax.Assign
		for _, a := range x.Assigns("") {
			if a.Target == "rtt_is_initialized" {
				if strings.TrimSpace(a.RHS) == "0" {
					setTo0 = append(setTo0, a)
				} else {
					setTo1 = append(setTo1, a)
				}
			}
		}
		f := x.Answer(query.Both, audit.Inert)
		f.Counts["challenge_rtt_calls"] = len(calls)
		f.Counts["rtt_is_initialized_set"] = len(setTo1)
		f.Counts["rtt_is_initialized_cleared"] = len(setTo0)
		f.Evidence = append(f.Evidence, x.Evidence(call.Pos, "call", "RTT sample from the challenge, epoch "+epochArg))
		if guard != nil {
			f.Evidence = append(f.Evidence, x.Evidence(guard.Pos, "guard", guard.Cond))
		}
		for _, a := range setTo1 {
			f.Evidence = append(f.Evidence, x.Evidence(a.Pos, "assignment", a.LHS+" = "+a.RHS+" in "+a.Func))
		}
		for _, a := range setTo0 {
			f.Evidence = append(f.Evidence, x.Evidence(a.Pos, "assignment", a.LHS+" = 0 in "+a.Func))
		}
		negEpoch := strings.HasPrefix(strings.TrimSpace(epochArg), "-")
		switch {
		case guard != nil && negEpoch && strings.Contains(guard.Cond, "!") && strings.Contains(guard.Cond, "epoch >= 0") && len(setTo0) == 0:
			f.Mechanism = fmt.Sprintf("challenge RTT passed with epoch %s, so the guard `%s` reduces to !rtt_is_initialized: false on a path that already has a sample, and nothing clears it (%d sets, 0 clears)",
				epochArg, guard.Cond, len(setTo1))
		case guard == nil:
			f.Answer = audit.Yes
			f.Mechanism = "challenge RTT sample applied without an rtt_is_initialized gate"
		default:
			f.Answer = audit.Unknown
			f.Mechanism = fmt.Sprintf("challenge RTT gated by `%s` with epoch %s; %d clears of rtt_is_initialized", guard.Cond, epochArg, len(setTo0))
		}
		return []audit.Finding{f}, nil
	},
}

// Q3 per design: tuples share one path object's estimators; path objects
// per address keep their own.
var picoQ3 = query.Choose(picoQ3Tuples, picoQ3PathObjects)

var picoQ3PathObjects = &query.Rule{
	Name: "picoquic/q3-attribution", Question: audit.Q3, Role: query.Both, Files: picoFiles, Design: "a path object per address, promoted on validation",
	Doc: "Each address has its own path object (RTT estimator and congestion state); ACK RTT samples and " +
		"acknowledgement notifications go to the path the acknowledged packet was sent on (acked_path), losses to its send_path.",
	Needs: append([]query.Anchor{query.Func(picoPathResponse), query.Func(picoUpdateRTT)}, picoPathObjects...),
	Decide: func(x *query.Code) ([]audit.Finding, error) {
		n := x.Needed()
		handler, upd, create := n[0], n[1], n[3]
		var keyed, hints, other []syntax.Call
		for _, c := range x.Calls(picoUpdateRTT) {
			ep := query.ArgFor(c, upd, "epoch")
			g := query.GuardText(c.Guards)
			switch {
			case len(c.Args) > 1 && strings.Contains(c.Args[1].Text, "acked_path"):
				keyed = append(keyed, c)
			case c.Func == handler.Name || strings.HasPrefix(strings.TrimSpace(ep), "-") || strings.Contains(g, "PICOQUIC_INITIAL_RTT") || strings.Contains(g, "cnx_state < picoquic_state_ready"):
				hints = append(hints, c) // challenge and handshake hints, not ACK samples
			default:
				other = append(other, c)
			}
		}
		ackNotify := query.Filter(x.Calls(picoNotifyField), func(c syntax.Call) bool { return len(c.Args) > 1 && strings.Contains(c.Args[1].Text, "acked_path") })
		lossNotify := query.Filter(x.Calls(picoNotifyField), func(c syntax.Call) bool { return len(c.Args) > 1 && strings.Contains(c.Args[1].Text, "send_path") })
		f := x.Answer(query.Both, audit.Yes)
		f.Counts["ack_rtt_samples_by_acked_path"] = len(keyed)
		f.Counts["ack_notifications_by_acked_path"] = len(ackNotify)
		f.Counts["loss_notifications_by_send_path"] = len(lossNotify)
		f.Counts["unclassified_rtt_updates"] = len(other)
		f.Evidence = append(f.Evidence, x.Evidence(create.Pos, "definition", "a path object (own RTT estimator and congestion state) per address"))
		f.Evidence = append(f.Evidence, x.CallEvidence(keyed, "call", "RTT sample for the path the acked packet was sent on")...)
		f.Evidence = append(f.Evidence, x.CallEvidence(ackNotify, "call", "acknowledgement notified to the sending path")...)
		f.Evidence = append(f.Evidence, x.CallEvidence(lossNotify, "call", "loss notified to the sending path")...)
		if len(keyed) == 0 || len(ackNotify) == 0 || len(other) > 0 {
			f.Answer = audit.Unknown
			f.Mechanism = fmt.Sprintf("RTT samples keyed by acked_path %d, other RTT updates %d, acknowledgements notified by acked_path %d", len(keyed), len(other), len(ackNotify))
			return []audit.Finding{f}, nil
		}
		f.Mechanism = fmt.Sprintf("a new address gets a new path object, and ACK processing feeds the path each acknowledged packet was sent on (%s, %s by acked_path", query.Plural(len(keyed), "RTT sample site"), query.Plural(len(ackNotify), "acknowledgement notification"))
		if len(lossNotify) > 0 {
			f.Mechanism += ", " + query.Plural(len(lossNotify), "loss notification") + " by send_path"
		}
		f.Mechanism += "): old-path packets feed the old path object, not the new one"
		return []audit.Finding{f}, nil
	},
}

var picoQ3Tuples = &query.Rule{
	Name: "picoquic/q3-attribution", Question: audit.Q3, Role: query.Both, Files: picoFiles, Design: "tuples inside one path object",
	Doc: "Migration promotes a tuple inside the same path object; ACK-derived RTT samples and " +
		"congestion notifications are keyed by path, so nothing separates old-tuple packets from new.",
	Needs: []query.Anchor{query.Func(picoPathResponse), query.Func(picoUpdateRTT), picoTuples},
	Decide: func(x *query.Code) ([]audit.Finding, error) {
		handler, upd := x.Needed()[0], x.Needed()[1]
		hf := x.FileOf(handler.Pos)
		promote := query.Filter(hf.Assigns(handler.Name), func(a syntax.Assign) bool { return a.Target == "first_tuple" })
		created := query.InFunc(x.Calls("picoquic_create_path"), handler.Name)
		// ACK-derived RTT samples (epoch >= 0; epoch -1 marks the handshake and
		// challenge hints), and whether any is filtered by tuple.
		var samples, tupleGuarded []syntax.Call
		for _, c := range x.Calls(picoUpdateRTT) {
			if c.Func == handler.Name || strings.HasPrefix(strings.TrimSpace(query.ArgFor(c, upd, "epoch")), "-") {
				continue
			}
			samples = append(samples, c)
			if strings.Contains(query.GuardText(c.Guards), "tuple") {
				tupleGuarded = append(tupleGuarded, c)
			}
		}
		f := x.Answer(query.Both, audit.No)
		f.Counts["tuple_promotions"] = len(promote)
		f.Counts["paths_created_on_validation"] = len(created)
		f.Counts["ack_rtt_sample_sites"] = len(samples)
		f.Counts["tuple_filtered_samples"] = len(tupleGuarded)
		for _, a := range promote {
			f.Evidence = append(f.Evidence, x.Evidence(a.Pos, "assignment", "new tuple promoted within the same path"))
		}
		f.Evidence = append(f.Evidence, x.CallEvidence(samples, "call", "")...)
		if len(promote) > 0 && len(created) == 0 && len(tupleGuarded) == 0 {
			var keys []string
			for _, c := range samples {
				if len(c.Args) > 1 {
					keys = append(keys, c.Args[1].Text)
				}
			}
			f.Mechanism = fmt.Sprintf("migration reuses the path object (tuple promoted, no new path); %s keyed by path (%s), none filtered by tuple",
				query.Plural(len(samples), "ACK RTT sample site"), strings.Join(keys, ", "))
		} else {
			f.Answer = audit.Unknown
			f.Mechanism = fmt.Sprintf("tuple promotions %d, paths created %d, tuple-filtered samples %d", len(promote), len(created), len(tupleGuarded))
		}
		return []audit.Finding{f}, nil
	},
}

var picoConstants = &query.Rule{
	Name: "picoquic/constants", Question: audit.ConstInitialWindow, Role: "", Files: picoFiles,
	Doc: "PICOQUIC_CWIN_INITIAL and PICOQUIC_CWIN_MINIMUM expanded from their macros; BBR's 2 × send_mtu floor; " +
		"PICOQUIC_INITIAL_RTT; the loss factors the algorithms apply.",
	Decide: func(x *query.Code) ([]audit.Finding, error) {
		var out query.Findings
		if expr, def, ok := x.ExpandMacro("PICOQUIC_CWIN_INITIAL"); ok {
			out.Add(x.Constant(audit.ConstInitialWindow, expr, nil, "by the constant (PICOQUIC_CWIN_INITIAL)", "PICOQUIC_CWIN_INITIAL = "+def.Value, def.Pos))
		} else {
			out.Append(x.Absent("macro PICOQUIC_CWIN_INITIAL"))
		}
		// An effective window of 10 × the negotiated send size: look for it.
		effective := query.Filter(x.Assigns(""), func(a syntax.Assign) bool {
			return a.Target == "cwin" && strings.Contains(a.RHS, "send_mtu") && (strings.Contains(a.RHS, "10") || strings.Contains(a.RHS, "PICOQUIC_CWIN_INITIAL"))
		})
		if len(effective) > 0 {
			a := effective[0]
			out.Add(x.Constant(audit.ConstInitialWindow, "10*S", map[string]float64{"S": 1424}, "effective (10 x send size)", "cwin = "+a.RHS+" in "+a.Func, a.Pos))
		} else if prov := picoProvisional(x, "effective"); prov != nil {
			// Not in source: carry the study's observed value, marked as such.
			f := x.Finding(audit.Unknown, "no cwin = 10 × send_mtu assignment in source; the study's effective window is carried, not audited")
			f.Question = audit.ConstInitialWindow
			v, arith, err := prov.Eval(nil)
			if err != nil {
				return nil, err
			}
			f.Constant = &audit.ConstantFinding{Expr: prov.Expr, Params: prov.Params, Value: v, Arithmetic: arith, Label: prov.Label,
				Provenance: "study §6.2, observed; no source expression at " + x.Commit[:12]}
			out.Append(f)
		}
		// Floors: BBR's 2 × send_mtu (what a BBR loss cascade bottoms out at) and the macro.
		bbrFloor := query.Filter(x.Assigns(""), func(a syntax.Assign) bool {
			return a.Target == "cwin" && strings.ReplaceAll(a.RHS, " ", "") == "2*path_x->send_mtu"
		})
		if len(bbrFloor) > 0 {
			a := bbrFloor[0]
			out.Add(x.Constant(audit.ConstMinWindow, "2*S", map[string]float64{"S": 1424}, "2 x send_mtu ("+a.Func+")", fmt.Sprintf("cwin = %s in %s (%s)", a.RHS, a.Func, query.Plural(len(bbrFloor), "site")), a.Pos))
		}
		if expr, def, ok := x.ExpandMacro("PICOQUIC_CWIN_MINIMUM"); ok {
			if f := out.Add(x.Constant(audit.ConstMinWindow, expr, nil, "PICOQUIC_CWIN_MINIMUM", "PICOQUIC_CWIN_MINIMUM = "+def.Value+" (newreno, cubic, fastcc floors)", def.Pos)); f != nil {
				f.Constant.Alternative = len(bbrFloor) > 0
			}
		}
		if expr, def, ok := x.ExpandMacro("PICOQUIC_INITIAL_RTT"); ok {
			out.Add(x.Constant(audit.ConstDefaultRTT, expr, nil, "PICOQUIC_INITIAL_RTT (µs)", "PICOQUIC_INITIAL_RTT = "+def.Value, def.Pos))
		}
		// Loss factor: newreno halves ssthresh; reported for context only
		// (the study's row has none: BBR applies no multiplicative decrease).
		for _, a := range x.Assigns("picoquic_newreno_sim_notify") {
			if a.Target == "ssthresh" && strings.HasSuffix(strings.ReplaceAll(a.RHS, " ", ""), "cwin/2") {
				if c := out.Add(x.Constant(audit.ConstLossFactor, "0.5", nil, "newreno ssthresh = cwin / 2", "newreno only; BBR has no multiplicative decrease", a.Pos)); c != nil {
					c.Constant.Alternative = true
				}
				break
			}
		}
		return out.Result()
	},
}

// picoChallengeRTT: the PATH_RESPONSE handler's calls of the RTT update, or
// the NO finding when it makes none.
func picoChallengeRTT(x *query.Code, handler syntax.Def) ([]syntax.Call, []audit.Finding) {
	calls := query.InFunc(x.Calls(picoUpdateRTT), handler.Name)
	if len(calls) > 0 {
		return calls, nil
	}
	f := x.Finding(audit.No, "PATH_RESPONSE handler takes no RTT sample")
	f.Evidence = append(f.Evidence, x.Evidence(handler.Pos, "definition", ""))
	return nil, []audit.Finding{f}
}

// picoInitGuard is the if-guard in the RTT update that names
// rtt_is_initialized (the innermost one of the first assignment it guards).
func picoInitGuard(x *query.Code, upd syntax.Def) *syntax.Guard {
	for _, a := range x.FileOf(upd.Pos).Assigns(upd.Name) {
		for i := len(a.Guards) - 1; i >= 0; i-- {
			if strings.Contains(a.Guards[i].Cond, "rtt_is_initialized") && a.Guards[i].Kind == "if" {
				g := a.Guards[i]
				return &g
			}
		}
	}
	return nil
}

// picoProvisional is the implementation's provisional (study) initial-window
// formula whose label contains label, or nil.
func picoProvisional(x *query.Code, label string) *data.Formula {
	for i, f := range x.Impl.Constants.InitialWindows {
		if strings.Contains(f.Label, label) {
			return &x.Impl.Constants.InitialWindows[i]
		}
	}
	return nil
}
