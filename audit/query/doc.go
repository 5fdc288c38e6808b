// Package query is the one way to write an audit rule: a rule is a value
// that declares the facts it reads (files, the definitions it rests on) and
// gives a short decision over them, in the spirit of
// golang.org/x/tools/go/analysis. The engine part is done once, here: read
// and parse the files at the audited commit (test files dropped), resolve
// the anchors, and report "<anchor> absent at <commit>" when one is missing,
// so a decision never starts with a prelude.
//
// # A worked rule
//
// Every implementation is one file in audit/rules registering its rules
// from init. This one answers Q1 per endpoint role and reports a hook:
//
//	var exampleQ1 = &query.Rule{
//		Name: "example/q1", Question: audit.Q1, Role: query.Both,
//		Doc:   "Does a path switch build fresh congestion state, and does the client's rebind reset it?",
//		Files: []string{"src/**/*.rs"},
//		Needs: []query.Anchor{query.Method("Connection", "migrate"), query.Method("Connection", "rebind")},
//		Decide: func(x *query.Code) ([]audit.Finding, error) {
//			n := x.Needed() // the Needs, in order: absent ones never get here
//			migrate, rebind := n[0], n[1]
//			var obs, mig query.Verdict
//			// Observing endpoint: migrate() must build a fresh PathData.
//			if c, ok := x.CallIn(migrate, "new", "PathData::new"); ok {
//				obs.Answer, obs.Mechanism = audit.Yes, "fresh PathData for the new remote"
//				obs.Add(x.Evidence(c.Pos, "call", query.GuardText(c.Guards)))
//			} else {
//				obs.Answer, obs.Mechanism = audit.No, "migrate() keeps the PathData"
//				obs.Add(x.Evidence(migrate.Pos, "definition", ""))
//			}
//			// Migrating endpoint: what does rebind() touch?
//			if hit := x.Touches(rebind, "rtt", "congestion"); len(hit) > 0 {
//				mig.Answer, mig.Mechanism = audit.Yes, "rebind resets "+strings.Join(hit, ", ")
//			} else {
//				mig.Answer, mig.Mechanism = audit.No, "rebind keeps RTT and congestion state"
//			}
//			mig.Count("rebind_call_sites", len(x.Calls("rebind")))
//			out := x.PerRole(audit.Q1, x.RoleFinding(audit.Q1, query.Migrating, mig),
//				x.RoleFinding(audit.Q1, query.Observing, obs))
//			hook := x.Hook("Connection::path_changed", "public reset API",
//				x.Set.Funcs("path_changed"), x.Calls("path_changed"))
//			return append(out, hook), nil
//		},
//	}
//
//	func init() { query.Register("example", exampleQ1) }
//
// TestWorkedExample runs exactly this rule on a small repository.
//
// # What a decision reads (*Code)
//
//	anchors     Func, Method, FuncIn, FreeFuncIn, Const, Type, Field, Enumerator (.Hint(why) for the absence; an owner
//	            "Old|New" accepts a renamed type); Choose(rules...) picks the first design (Rule.Design) whose Needs exist;
//	            x.Needed(), x.Defs(list...), x.Def, x.Find (record absence), x.Lookup,
//	            x.Opt (do not); a role reader shared by rules declares var <reader>Needs, the rules Join it into their Needs
//	calls       x.Calls(name), x.CallsIn(def, name), x.CallIn(def, name, substrings...), x.AllCallsIn(def);
//	            Call.Guards (innermost first), query.GuardText, GuardedBy, UnderCase, InFunc, Direct, Live, Filter
//	assignments x.Assigns(fn), x.AssignsIn(def), x.AssignIn(def, target, substrings...), x.FieldInit(def, field)
//	conditions  x.Conds(def), x.CondIn(def, substrings...) (early-return guards too), query.IfsNaming(file, sub), x.ArmsWith(def, pattern)
//	C structure x.Enumerators(enum), x.Dispatches(field, arg, values), x.Forward(fn, param, handles), x.Initialisers(type, struct, field)
//	text        x.CommentsIn, x.StringsIn, x.LineWith, x.BraceDefault, x.ExprPos, x.Touches
//	constants   x.Const(name), x.ExpandMacro(name) (C), x.Resolver(params).Constant/Eval (C, C++, Rust, Python to a data.Formula)
//	findings    x.Finding, x.Answer(role, answer), Verdict (AnswerIf) + x.RoleFinding, x.PerRole (Combine), x.Q3 / x.Q3PerRole
//	            over four Aspects, x.Hook, x.Constant, Findings (collects constants, first error sticks), x.Absent / x.AbsentFor
//
// Anything beyond the declared Needs that a decision finds missing (a Find
// that fails, x.Missing) is reported by the engine after the decision's
// findings; x.Absence() ends a decision there.
package query
