package rules

import (
	"fmt"
	"strings"

	"github.com/migaudit/migaudit/audit"
	"github.com/migaudit/migaudit/audit/syntax"
)

// quic-go: MigratedPath replaces the congestion controller, resets RTT to a
// fixed default and declares every in-flight packet lost (slots set to nil).

func init() {
	audit.Register("quic-go", quicgoMigratedPath, quicgoQ3, quicgoQ2, quicgoConstants)
}

func quicgoFiles(p *audit.Pass) (audit.Set, error) {
	set, err := files(p, "*.go", "internal/ackhandler/*.go", "internal/utils/*.go", "internal/congestion/*.go", "internal/protocol/*.go")
	if err != nil {
		return nil, err
	}
	return withoutTests(set), nil
}

var quicgoMigratedPath = &audit.Rule{
	Name:     "quic-go/migrated-path",
	Question: audit.Q1,
	Doc: "Counts live call sites of sentPacketHandler.MigratedPath (tests and mocks excluded), the role of " +
		"each (an early exit for PerspectiveClient before the call makes it the server's reactive switch), and " +
		"what MigratedPath does: a new congestion controller, RTT reset to DefaultInitialRTT.",
	Run: func(p *audit.Pass) ([]audit.Finding, error) {
		set, err := quicgoFiles(p)
		if err != nil {
			return nil, err
		}
		var def syntax.Def
		found := false
		for _, d := range set.Funcs("MigratedPath") {
			if strings.TrimPrefix(d.Owner, "*") == "sentPacketHandler" {
				def, found = d, true
			}
		}
		if !found {
			return []audit.Finding{p.Absent("(*sentPacketHandler).MigratedPath")}, nil
		}
		calls := set.Calls("MigratedPath")
		f := p.Finding(audit.Yes, "")
		f.Role = "both"
		roles := map[string]int{}
		for _, c := range calls {
			role := "migrating"
			cf := fileOf(set, c.Pos)
			for _, e := range cf.Exits(c.Func) {
				if e.Line < c.Line && strings.Contains(e.Cond, "PerspectiveClient") && e.How == "return" {
					role = "observing (server, reactive)"
				}
			}
			roles[role]++
			f.Evidence = append(f.Evidence, p.Evidence(c.Pos, "call", role+", in "+c.Func))
		}
		f.Evidence = append(f.Evidence, p.Evidence(def.Pos, "definition", ""))
		df := fileOf(set, def.Pos)
		replaced := 0
		for _, a := range df.Assigns(def.Name) {
			if a.Target == "congestion" && strings.Contains(a.RHS, "NewCubicSender(") {
				replaced++
				f.Evidence = append(f.Evidence, p.Evidence(a.Pos, "assignment", "controller replaced"))
			}
		}
		rttReset := inFunc(df.Calls("ResetForPathMigration"), def.Name)
		f.Evidence = append(f.Evidence, callEvidence(p, rttReset, "call")...)
		// What the RTT reset stores.
		var toDefault []string
		for _, rd := range set.Funcs("ResetForPathMigration") {
			rf := fileOf(set, rd.Pos)
			for _, c := range rf.CallsIn(rd.Name) {
				if c.Name == "Store" && len(c.Args) == 1 && strings.Contains(c.Args[0].Text, "DefaultInitialRTT") {
					toDefault = append(toDefault, strings.TrimSuffix(strings.TrimPrefix(c.Callee, "r."), ".Store"))
					f.Evidence = append(f.Evidence, p.Evidence(c.Pos, "assignment", ""))
				}
			}
		}
		rtt := ""
		for _, d := range set.Defs("DefaultInitialRTT") {
			if d.Kind == syntax.DefConst {
				rtt = d.Value
				f.Evidence = append(f.Evidence, p.Evidence(d.Pos, "constant", ""))
			}
		}
		f.Counts["call_sites"] = len(calls)
		f.Counts["controller_replacements"] = replaced
		f.Counts["rtt_resets"] = len(rttReset)
		f.Counts["rtt_fields_to_default"] = len(toDefault)
		for _, k := range sortedKeys(roles) {
			f.Detail += fmt.Sprintf("%s: %d; ", k, roles[k])
		}
		switch {
		case len(calls) > 0 && replaced > 0 && len(rttReset) > 0:
			f.Mechanism = fmt.Sprintf("MigratedPath: %s, replaces the controller (new cubic sender in Reno mode) and resets RTT (%s) to DefaultInitialRTT = %s",
				plural(len(calls), "live call site"), strings.Join(toDefault, ", "), rtt)
		case len(calls) == 0:
			f.Answer = audit.No
			f.Mechanism = "MigratedPath defined but never called"
		default:
			f.Answer = audit.Unknown
			f.Mechanism = fmt.Sprintf("MigratedPath called %d times; controller replaced %d, RTT reset %d", len(calls), replaced, len(rttReset))
		}
		return []audit.Finding{f}, nil
	},
}

var quicgoQ3 = &audit.Rule{
	Name:     "quic-go/q3-removal",
	Question: audit.Q3,
	Doc: "MigratedPath declares every in-flight packet lost; DeclareLost sets the history slot to nil and the " +
		"packet iterator skips nil slots, so a late ACK from the old path matches nothing.",
	Run: func(p *audit.Pass) ([]audit.Finding, error) {
		set, err := quicgoFiles(p)
		if err != nil {
			return nil, err
		}
		mp, ok := funcDef(set, "MigratedPath")
		if !ok {
			return []audit.Finding{p.Absent("MigratedPath")}, nil
		}
		declared := inFunc(set.Calls("DeclareLost"), mp.Name)
		f := p.Finding(audit.Yes, "")
		f.Role = "both"
		f.Evidence = append(f.Evidence, callEvidence(p, declared, "call")...)
		var nils []syntax.Assign
		for _, d := range set.Funcs("DeclareLost") {
			for _, a := range fileOf(set, d.Pos).Assigns(d.Name) {
				if a.RHS == "nil" {
					nils = append(nils, a)
					f.Evidence = append(f.Evidence, p.Evidence(a.Pos, "assignment", "slot removed in "+d.Name))
				}
			}
		}
		var skips []syntax.Exit
		for _, d := range set.Funcs("Packets") {
			if strings.TrimPrefix(d.Owner, "*") != "sentPacketHistory" {
				continue
			}
			for _, e := range fileOf(set, d.Pos).Exits(d.Name) {
				if strings.Contains(e.Cond, "== nil") {
					skips = append(skips, e)
					f.Evidence = append(f.Evidence, p.Evidence(e.Pos, "guard", "iterator skips removed slots: "+e.Cond))
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

var quicgoQ2 = &audit.Rule{
	Name:     "quic-go/q2-initial-rtt",
	Question: audit.Q2,
	Doc: "ResetForPathMigration takes no argument and stores DefaultInitialRTT; the path manager's initialRTT " +
		"is read only to space PATH_CHALLENGE probes.",
	Run: func(p *audit.Pass) ([]audit.Finding, error) {
		set, err := quicgoFiles(p)
		if err != nil {
			return nil, err
		}
		rd, ok := funcDef(set, "ResetForPathMigration")
		if !ok {
			return []audit.Finding{p.Absent("ResetForPathMigration")}, nil
		}
		f := p.Finding(audit.No, "")
		f.Role = "both"
		f.Evidence = append(f.Evidence, p.Evidence(rd.Pos, "definition", fmt.Sprintf("%d parameters", len(rd.Params))))
		var uses []syntax.Mention
		for _, m := range set.Mentions("initialRTT") {
			if m.Kind == syntax.MentionReference || m.Kind == syntax.MentionAssigned || m.Kind == syntax.MentionArgument {
				if !strings.HasPrefix(m.Path, "path_manager") {
					continue
				}
				uses = append(uses, m)
				f.Evidence = append(f.Evidence, p.Evidence(m.Pos, "mention", string(m.Kind)+" in "+m.Func))
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
			f.Mechanism = "RTT reset always seeds DefaultInitialRTT (ResetForPathMigration takes no sample); the path's initialRTT only spaces probes"
		} else {
			f.Answer = audit.Unknown
			f.Mechanism = fmt.Sprintf("ResetForPathMigration has %d parameters; initialRTT uses %d (probe-only %v)", len(rd.Params), len(uses), probeOnly)
		}
		return []audit.Finding{f}, nil
	},
}

var quicgoConstants = &audit.Rule{
	Name:     "quic-go/constants",
	Question: audit.ConstInitialWindow,
	Doc:      "initialCongestionWindow × the initial packet size, minCongestionWindowPackets, renoBeta, DefaultInitialRTT.",
	Run: func(p *audit.Pass) ([]audit.Finding, error) {
		set, err := quicgoFiles(p)
		if err != nil {
			return nil, err
		}
		constVal := func(name string) (string, syntax.Def, bool) {
			for _, d := range set.Defs(name) {
				if d.Kind == syntax.DefConst && d.Value != "" {
					return d.Value, d, true
				}
			}
			return "", syntax.Def{}, false
		}
		var out []audit.Finding
		sVal, sDef, sOK := constVal("InitialPacketSize")
		S, _ := numeric(sVal)
		if icw, d, ok := constVal("initialCongestionWindow"); ok && sOK {
			n, _ := numeric(icw)
			f, err := p.Constant(audit.ConstInitialWindow, fmt.Sprintf("%s*S", fmtNum(n)), map[string]float64{"S": S}, "initialCongestionWindow x initial packet size",
				"initialCongestionWindow = "+icw+" packets of the initial packet size (protocol.InitialPacketSize = "+sVal+")", d.Pos, p.Evidence(sDef.Pos, "constant", "S default"))
			if err != nil {
				return nil, err
			}
			out = append(out, f)
		} else {
			out = append(out, p.Absent("const initialCongestionWindow / InitialPacketSize"))
		}
		if mw, d, ok := constVal("minCongestionWindowPackets"); ok {
			n, _ := numeric(mw)
			f, err := p.Constant(audit.ConstMinWindow, fmt.Sprintf("%s*S", fmtNum(n)), map[string]float64{"S": S}, "minCongestionWindowPackets x max datagram size", "minCongestionWindowPackets = "+mw, d.Pos)
			if err != nil {
				return nil, err
			}
			out = append(out, f)
		}
		if b, d, ok := constVal("renoBeta"); ok {
			f, err := p.Constant(audit.ConstLossFactor, b, nil, "renoBeta", "renoBeta = "+b+" (MigratedPath builds the sender in Reno mode)", d.Pos)
			if err != nil {
				return nil, err
			}
			out = append(out, f)
		}
		if r, d, ok := constVal("DefaultInitialRTT"); ok {
			expr := goDurationMicros(r)
			f, err := p.Constant(audit.ConstDefaultRTT, expr, nil, "DefaultInitialRTT (µs)", "DefaultInitialRTT = "+r, d.Pos)
			if err != nil {
				return nil, err
			}
			out = append(out, f)
		}
		return out, nil
	},
}

// goDurationMicros rewrites a Go duration expression in microseconds.
func goDurationMicros(s string) string {
	r := strings.NewReplacer("time.Microsecond", "1", "time.Millisecond", "1000", "time.Second", "1000000")
	return strings.ReplaceAll(r.Replace(s), " ", "")
}

func fmtNum(v float64) string {
	return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%f", v), "0"), ".")
}
