package rules

import (
	"fmt"
	"strings"

	"github.com/migaudit/migaudit/audit"
	"github.com/migaudit/migaudit/audit/query"
	"github.com/migaudit/migaudit/audit/syntax"
)

// quic-go: MigratedPath replaces the congestion controller, resets RTT to a
// fixed default and declares every in-flight packet lost (slots set to nil).

func init() {
	query.Register("quic-go", quicgoMigratedPath, quicgoQ3, quicgoQ2, quicgoConstants)
}

var quicgoFiles = []string{"*.go", "internal/ackhandler/*.go", "internal/utils/*.go", "internal/congestion/*.go", "internal/protocol/*.go"}

// Q1 has two designs of the RTT reset inside MigratedPath: at the pin
// ResetForPathMigration stores DefaultInitialRTT into atomic fields; from
// v0.50 to v0.55 it zeroes plain fields and the getters fall back to the
// unexported defaultInitialRTT while no sample exists. Before v0.50 there is
// no MigratedPath at all.
var quicgoMigratedPath = query.Choose(
	quicgoQ1Design("ResetForPathMigration stores DefaultInitialRTT", query.Const("DefaultInitialRTT")),
	quicgoQ1Design("ResetForPathMigration zeroes the RTT fields", query.Const("defaultInitialRTT")),
)

func quicgoQ1Design(design string, rttConst query.Anchor) *query.Rule {
	return &query.Rule{
		Name: "quic-go/migrated-path", Question: audit.Q1, Role: query.Both, Files: quicgoFiles, Design: design,
		Doc: "Counts live call sites of sentPacketHandler.MigratedPath (tests and mocks excluded), the role of " +
			"each (an early exit for PerspectiveClient before the call makes it the server's reactive switch), and " +
			"what MigratedPath does: a new congestion controller, RTT reset to the default initial RTT.",
		Needs: []query.Anchor{query.Method("sentPacketHandler", "MigratedPath").Hint("quic-go before v0.50 has no path migration"),
			query.Method("RTTStats", "ResetForPathMigration"), rttConst},
		Decide: func(x *query.Code) ([]audit.Finding, error) {
			n := x.Needed()
			def, reset, rttDef := n[0], n[1], n[2]
			calls := x.Calls("MigratedPath")
			f := x.Answer(query.Both, audit.Yes)
			roles := map[string]int{}
			for _, c := range calls {
				role := "migrating"
				cf := x.FileOf(c.Pos)
				for _, e := range cf.Exits(c.Func) {
					if e.Line < c.Line && strings.Contains(e.Cond, "PerspectiveClient") && e.How == "return" {
						role = "observing (server, reactive)"
					}
				}
				roles[role]++
				f.Evidence = append(f.Evidence, x.Evidence(c.Pos, "call", role+", in "+c.Func))
			}
			f.Evidence = append(f.Evidence, x.Evidence(def.Pos, "definition", ""))
			df := x.FileOf(def.Pos)
			replaced := 0
			for _, a := range df.Assigns(def.Name) {
				if a.Target == "congestion" && strings.Contains(a.RHS, "NewCubicSender(") {
					replaced++
					f.Evidence = append(f.Evidence, x.Evidence(a.Pos, "assignment", "controller replaced"))
				}
			}
			rttReset := query.InFunc(df.Calls("ResetForPathMigration"), def.Name)
			f.Evidence = append(f.Evidence, x.CallEvidence(rttReset, "call", "")...)
			// What the RTT reset does to the estimator's fields: stores the
			// default (atomic fields) or zeroes them (plain fields).
			rf := x.FileOf(reset.Pos)
			var toDefault, zeroed []string
			for _, c := range rf.CallsIn(reset.Name) {
				field := strings.TrimSuffix(strings.TrimPrefix(c.Callee, "r."), ".Store")
				switch {
				case c.Name == "Store" && len(c.Args) == 1 && strings.Contains(c.Args[0].Text, rttDef.Name):
					toDefault = append(toDefault, field)
					f.Evidence = append(f.Evidence, x.Evidence(c.Pos, "assignment", ""))
				case c.Name == "Store" && len(c.Args) == 1 && c.Args[0].Text == "0" && strings.Contains(strings.ToLower(field), "rtt"):
					// v0.55: atomic fields, zeroed
					zeroed = append(zeroed, field)
					f.Evidence = append(f.Evidence, x.Evidence(c.Pos, "assignment", "zeroed"))
				}
			}
			for _, a := range rf.Assigns(reset.Name) {
				if a.RHS == "0" && strings.Contains(strings.ToLower(a.Target), "rtt") {
					zeroed = append(zeroed, a.Target)
					f.Evidence = append(f.Evidence, x.Evidence(a.Pos, "assignment", "zeroed"))
				}
			}
			// With the fields zeroed the default comes back through the
			// getters' "no sample yet" fallback.
			fallbacks := 0
			if len(zeroed) > 0 {
				for _, m := range rf.Mentions(rttDef.Name) {
					if m.Kind != syntax.MentionDefinition && m.Kind != syntax.MentionComment && m.Func != "" {
						fallbacks++
						f.Evidence = append(f.Evidence, x.Evidence(m.Pos, "reference", "fallback in "+m.Func))
					}
				}
			}
			f.Evidence = append(f.Evidence, x.Evidence(rttDef.Pos, "constant", ""))
			f.Counts["call_sites"] = len(calls)
			f.Counts["controller_replacements"] = replaced
			f.Counts["rtt_resets"] = len(rttReset)
			if len(toDefault) > 0 {
				f.Counts["rtt_fields_to_default"] = len(toDefault)
			}
			if len(zeroed) > 0 {
				f.Counts["rtt_fields_zeroed"] = len(zeroed)
				f.Counts["default_rtt_fallbacks"] = fallbacks
			}
			for _, k := range query.SortedKeys(roles) {
				f.Detail += fmt.Sprintf("%s: %d; ", k, roles[k])
			}
			rttText := ""
			switch {
			case len(toDefault) > 0:
				rttText = fmt.Sprintf("stores %s = %s into %s", rttDef.Name, rttDef.Value, strings.Join(toDefault, ", "))
			case len(zeroed) > 0 && fallbacks > 0:
				rttText = fmt.Sprintf("zeroes %s, so the estimator falls back to %s = %s until a sample arrives", strings.Join(zeroed, ", "), rttDef.Name, rttDef.Value)
			}
			switch {
			case len(calls) == 0:
				f.Answer = audit.No
				f.Mechanism = "MigratedPath defined but never called"
			case replaced > 0 && len(rttReset) > 0 && rttText != "":
				f.Mechanism = fmt.Sprintf("MigratedPath: %s, replaces the controller (new cubic sender in Reno mode) and resets RTT: ResetForPathMigration %s",
					query.Plural(len(calls), "live call site"), rttText)
			default:
				f.Answer = audit.Unknown
				f.Mechanism = fmt.Sprintf("MigratedPath called %d times; controller replaced %d, RTT reset called %d; ResetForPathMigration stores the default into %d fields and zeroes %d",
					len(calls), replaced, len(rttReset), len(toDefault), len(zeroed))
			}
			return []audit.Finding{f}, nil
		},
	}
}

var quicgoQ3 = &query.Rule{
	Name: "quic-go/q3-removal", Question: audit.Q3, Role: query.Both, Files: quicgoFiles,
	Doc: "MigratedPath declares every in-flight packet lost; DeclareLost sets the history slot to nil and the " +
		"packet iterator skips nil slots, so a late ACK from the old path matches nothing.",
	Needs: []query.Anchor{query.Func("MigratedPath")},
	Decide: func(x *query.Code) ([]audit.Finding, error) {
		mp := x.Needed()[0]
		declared := query.InFunc(x.Calls("DeclareLost"), mp.Name)
		f := x.Answer(query.Both, audit.Yes)
		f.Evidence = append(f.Evidence, x.CallEvidence(declared, "call", "")...)
		var nils []syntax.Assign
		for _, d := range x.Set.Funcs("DeclareLost") {
			for _, a := range x.FileOf(d.Pos).Assigns(d.Name) {
				if a.RHS == "nil" {
					nils = append(nils, a)
					f.Evidence = append(f.Evidence, x.Evidence(a.Pos, "assignment", "slot removed in "+d.Name))
				}
			}
		}
		var skips []syntax.Exit
		for _, d := range x.Set.Funcs("Packets") {
			if strings.TrimPrefix(d.Owner, "*") != "sentPacketHistory" {
				continue
			}
			for _, e := range x.FileOf(d.Pos).Exits(d.Name) {
				if strings.Contains(e.Cond, "== nil") {
					skips = append(skips, e)
					f.Evidence = append(f.Evidence, x.Evidence(e.Pos, "guard", "iterator skips removed slots: "+e.Cond))
				}
			}
		}
		f.Counts["declare_lost_calls"] = len(declared)
		f.Counts["nil_assignments"] = len(nils)
		f.Counts["nil_skips_in_iterator"] = len(skips)
		if len(declared) > 0 && len(nils) > 0 && len(skips) > 0 {
			f.Mechanism = "removal: on migration every in-flight packet is declared lost, its slot set to nil, and the ACK iterator skips nil slots"
		} else {
			f.Answer = audit.Unknown
			f.Mechanism = fmt.Sprintf("DeclareLost calls %d, nil assignments %d, iterator nil skips %d", len(declared), len(nils), len(skips))
		}
		return []audit.Finding{f}, nil
	},
}

var quicgoQ2 = &query.Rule{
	Name: "quic-go/q2-initial-rtt", Question: audit.Q2, Role: query.Both, Files: quicgoFiles,
	Doc: "ResetForPathMigration takes no argument and stores DefaultInitialRTT; the path manager's initialRTT " +
		"is read only to space PATH_CHALLENGE probes.",
	Needs: []query.Anchor{query.Func("ResetForPathMigration")},
	Decide: func(x *query.Code) ([]audit.Finding, error) {
		rd := x.Needed()[0]
		f := x.Answer(query.Both, audit.No)
		f.Evidence = append(f.Evidence, x.Evidence(rd.Pos, "definition", fmt.Sprintf("%d parameters", len(rd.Params))))
		var uses []syntax.Mention
		for _, m := range x.Set.Mentions("initialRTT") {
			if m.Kind == syntax.MentionReference || m.Kind == syntax.MentionAssigned || m.Kind == syntax.MentionArgument {
				if !strings.HasPrefix(m.Path, "path_manager") {
					continue
				}
				uses = append(uses, m)
				f.Evidence = append(f.Evidence, x.Evidence(m.Pos, "mention", string(m.Kind)+" in "+m.Func))
			}
		}
		probeOnly := true
		for _, m := range uses {
			// read only by the probe scheduler; stored by the constructor
			if !strings.Contains(strings.ToLower(m.Func), "probe") && !strings.HasPrefix(m.Func, "New") && !strings.HasPrefix(m.Func, "new") {
				probeOnly = false
			}
		}
		f.Counts["reset_params"] = len(rd.Params)
		f.Counts["initial_rtt_uses"] = len(uses)
		if len(rd.Params) == 0 && probeOnly {
			f.Mechanism = "RTT reset takes no sample (ResetForPathMigration has no parameter), so the new path starts from the default initial RTT; the path's initialRTT only spaces probes"
		} else {
			f.Answer = audit.Unknown
			f.Mechanism = fmt.Sprintf("ResetForPathMigration has %d parameters; initialRTT uses %d (probe-only %v)", len(rd.Params), len(uses), probeOnly)
		}
		return []audit.Finding{f}, nil
	},
}

var quicgoConstants = &query.Rule{
	Name: "quic-go/constants", Question: audit.ConstInitialWindow, Role: "", Files: quicgoFiles,
	Doc: "initialCongestionWindow × the initial packet size, minCongestionWindowPackets, renoBeta, DefaultInitialRTT.",
	Decide: func(x *query.Code) ([]audit.Finding, error) {
		constVal := func(name string) (string, syntax.Def, bool) {
			for _, d := range x.Set.Defs(name) {
				if d.Kind == syntax.DefConst && d.Value != "" {
					return d.Value, d, true
				}
			}
			return "", syntax.Def{}, false
		}
		var out query.Findings
		// S: protocol.InitialPacketSize since v0.45; before, the congestion
		// package's initialMaxDatagramSize converts InitialPacketSizeIPv4.
		sName := "InitialPacketSize"
		sVal, sDef, sOK := constVal(sName)
		if !sOK {
			if v, _, ok := constVal("initialMaxDatagramSize"); ok {
				for _, n := range []string{"InitialPacketSizeIPv4", "InitialPacketSize"} {
					if strings.Contains(v, "."+n+")") || strings.Contains(v, "."+n) {
						if sVal, sDef, sOK = constVal(n); sOK {
							sName = n
							break
						}
					}
				}
			}
		}
		S, numOK := query.Numeric(sVal)
		sOK = sOK && numOK
		if icw, d, ok := constVal("initialCongestionWindow"); ok && sOK {
			n, _ := query.Numeric(icw)
			f, err := x.Constant(audit.ConstInitialWindow, fmt.Sprintf("%s*S", query.FmtNum(n)), map[string]float64{"S": S}, "initialCongestionWindow x initial packet size",
				"initialCongestionWindow = "+icw+" packets of the initial packet size (protocol."+sName+" = "+sVal+")", d.Pos, x.Evidence(sDef.Pos, "constant", "S default"))
			if err != nil {
				return nil, err
			}
			out.Append(f)
		} else {
			out.Append(x.Absent("const initialCongestionWindow / InitialPacketSize"))
		}
		if mw, d, ok := constVal("minCongestionWindowPackets"); ok && sOK {
			n, _ := query.Numeric(mw)
			out.Add(x.Constant(audit.ConstMinWindow, fmt.Sprintf("%s*S", query.FmtNum(n)), map[string]float64{"S": S}, "minCongestionWindowPackets x max datagram size", "minCongestionWindowPackets = "+mw+" packets of protocol."+sName+" = "+sVal, d.Pos, x.Evidence(sDef.Pos, "constant", "S default")))
		}
		if b, d, ok := constVal("renoBeta"); ok {
			mech := "renoBeta = " + b
			if len(x.Set.Funcs("MigratedPath")) > 0 {
				mech += " (MigratedPath builds the sender in Reno mode)"
			}
			out.Add(x.Constant(audit.ConstLossFactor, b, nil, "renoBeta", mech, d.Pos))
		}
		for _, name := range []string{"DefaultInitialRTT", "defaultInitialRTT"} {
			if r, d, ok := constVal(name); ok {
				expr := goDurationMicros(r)
				out.Add(x.Constant(audit.ConstDefaultRTT, expr, nil, "DefaultInitialRTT (µs)", name+" = "+r, d.Pos))
				break
			}
		}
		return out.Result()
	},
}

// goDurationMicros rewrites a Go duration expression in microseconds.
func goDurationMicros(s string) string {
	r := strings.NewReplacer("time.Microsecond", "1", "time.Millisecond", "1000", "time.Second", "1000000")
	return strings.ReplaceAll(r.Replace(s), " ", "")
}
