package rules

import (
	"fmt"
	"strings"

	"github.com/migaudit/migaudit/audit"
	"github.com/migaudit/migaudit/audit/query"
	"github.com/migaudit/migaudit/audit/syntax"
)

// msquic: congestion control is connection-wide, RTT per path. The observing
// endpoint resets in QuicPathSetActive; the client's own LOCAL_ADDRESS
// migration changes Paths[0] in place.

func init() {
	query.Register("msquic", msquicQ1, msquicQ3, msquicQ2, msquicConstants)
}

var msquicFiles = []string{"src/core/*.c", "src/core/*.h", "src/inc/quic_datapath.h"}

const msquicReset = "QuicCongestionControlReset"

var msquicQ1 = &query.Rule{
	Name: "msquic/congestion-reset", Question: audit.Q1, Role: query.Both, Files: msquicFiles,
	Doc: "Counts direct call sites of QuicCongestionControlReset (the wrapper's own dispatch through the function-pointer " +
		"field is not a call site), the guard on the one in QuicPathSetActive (port-only exemption), and what the " +
		"QUIC_PARAM_CONN_LOCAL_ADDRESS setter does: in-place Paths[0] changes, no reset, client only.",
	Decide: func(x *query.Code) ([]audit.Finding, error) {
		all := x.Calls(msquicReset)
		calls := query.Direct(all, msquicReset)
		if len(x.Set.Defs(msquicReset)) == 0 {
			return []audit.Finding{x.Absent(msquicReset)}, nil
		}
		f := x.Answer(query.Both, audit.Asymmetric)
		var onPathSwitch []syntax.Call
		for _, c := range calls {
			note := "in " + c.Func
			if c.Func == "QuicPathSetActive" {
				onPathSwitch = append(onPathSwitch, c)
				note += ", guarded by " + query.GuardText(c.Guards)
			}
			f.Evidence = append(f.Evidence, x.Evidence(c.Pos, "call", note))
		}
		// The port-only exemption: what the guard variable is computed from.
		portOnly := 0
		if len(onPathSwitch) > 0 {
			pf := x.FileOf(onPathSwitch[0].Pos)
			for _, a := range pf.Assigns("QuicPathSetActive") {
				if a.Target == "UdpPortChangeOnly" && strings.Contains(a.RHS, "QuicAddrCompareIp") {
					portOnly++
					f.Evidence = append(f.Evidence, x.Evidence(a.Pos, "guard", "UdpPortChangeOnly = same IP (port-only change skips the reset)"))
				}
			}
		}
		// The client's LOCAL_ADDRESS setter.
		const param = "QUIC_PARAM_CONN_LOCAL_ADDRESS"
		var setter string
		var inPlace, resets []string
		clientOnly := false
		for _, fl := range x.Set {
			for _, c := range fl.AllCalls() {
				if !query.UnderCase(c.Guards, param) {
					continue
				}
				// a call handed the address of a Paths[0] member writes it in place
				writes := false
				for _, a := range c.Args {
					if strings.HasPrefix(a.Text, "&") && strings.Contains(a.Text, "Paths[0]") {
						writes = true
					}
				}
				if writes && c.Name != strings.ToUpper(c.Name) && !strings.HasPrefix(c.Name, "QuicTrace") { // not a trace/assert macro
					if setter == "" {
						setter = c.Func
					}
					if c.Func == setter {
						inPlace = append(inPlace, c.Name)
						f.Evidence = append(f.Evidence, x.Evidence(c.Pos, "call", c.Name+" writes Paths[0] in place in "+c.Func))
					}
				}
				switch c.Name {
				case msquicReset, "QuicPathSetActive", "QuicConnRestart", "QuicCongestionControlInitialize":
					resets = append(resets, c.Name)
				}
			}
			if setter != "" {
				for _, a := range fl.Assigns(setter) {
					if query.UnderCase(a.Guards, param) && strings.Contains(a.LHS, "Paths[0]") {
						inPlace = append(inPlace, a.LHS)
						f.Evidence = append(f.Evidence, x.Evidence(a.Pos, "assignment", "in-place change of Paths[0]"))
					}
				}
				for _, e := range fl.Exits(setter) {
					if query.UnderCase(e.Guards, param) && strings.Contains(e.Cond, "QuicConnIsServer") {
						clientOnly = true
						f.Evidence = append(f.Evidence, x.Evidence(e.Pos, "guard", "rejected on the server: "+e.Cond))
					}
				}
				break
			}
		}
		f.Counts["call_sites"] = len(calls)
		f.Counts["dispatches_through_field"] = len(all) - len(calls)
		f.Counts["on_path_switch"] = len(onPathSwitch)
		f.Counts["port_only_exemptions"] = portOnly
		f.Counts["local_address_in_place_changes"] = len(inPlace)
		f.Counts["local_address_resets"] = len(resets)
		switch {
		case len(onPathSwitch) > 0 && setter != "" && len(resets) == 0 && len(inPlace) > 0:
			who := "the client"
			if !clientOnly {
				who = "the application"
			}
			f.Mechanism = fmt.Sprintf("observing endpoint resets (QuicPathSetActive, skipped on port-only changes); %s's own %s migration changes Paths[0] in place (%d changes) and never resets",
				who, param, len(inPlace))
		case len(onPathSwitch) > 0 && setter == "":
			f.Answer = audit.Yes
			f.Mechanism = "QuicPathSetActive resets; no LOCAL_ADDRESS setter found"
		default:
			f.Answer = audit.Unknown
			f.Mechanism = fmt.Sprintf("reset on path switch %d, LOCAL_ADDRESS setter %q with %d resets", len(onPathSwitch), setter, len(resets))
		}
		out := []audit.Finding{f}
		if f.Answer == audit.Asymmetric {
			obs := x.Finding(audit.Yes, "QuicPathSetActive resets the connection-wide controller when the peer's IP changes (port-only changes exempt)")
			obs.Role = "observing"
			obs.Evidence = x.CallEvidence(onPathSwitch, "call", "")
			mig := x.Finding(audit.No, "the client's "+param+" setter changes Paths[0] in place; no reset")
			mig.Role = "migrating"
			for _, e := range f.Evidence {
				if strings.Contains(e.Note, "in place") || strings.Contains(e.Note, "server") {
					mig.Evidence = append(mig.Evidence, e)
				}
			}
			out = append(out, obs, mig)
		}
		return out, nil
	},
}

var msquicQ3 = &query.Rule{
	Name: "msquic/q3-split", Question: audit.Q3, Role: query.Both, Files: msquicFiles,
	Doc: "RTT updates are gated on NewLargestAckDifferentPath; ACK byte accounting takes &Connection->Paths[0] " +
		"(flagged `TODO - Correct?` upstream) and QUIC_ACK_EVENT has no path field.",
	Decide: func(x *query.Code) ([]audit.Finding, error) {
		lf := x.File("src/core/loss_detection.c")
		if lf == nil {
			return []audit.Finding{x.Absent("src/core/loss_detection.c")}, nil
		}
		f := x.Answer(query.Both, audit.Split)
		var gate []syntax.Assign
		for _, a := range lf.Assigns("") {
			if a.Target == "NewLargestAckDifferentPath" && strings.Contains(a.RHS, "PathId") {
				gate = append(gate, a)
				f.Evidence = append(f.Evidence, x.Evidence(a.Pos, "assignment", a.LHS+" = "+a.RHS))
			}
		}
		var gatedRTT []syntax.Call
		for _, c := range lf.Calls("QuicConnUpdateRtt") {
			if strings.Contains(query.GuardText(c.Guards), "!NewLargestAckDifferentPath") {
				gatedRTT = append(gatedRTT, c)
				f.Evidence = append(f.Evidence, x.Evidence(c.Pos, "call", "RTT update guarded by "+query.GuardText(c.Guards)))
			}
		}
		var hard []syntax.Assign
		for _, a := range lf.Assigns("") {
			if strings.ReplaceAll(a.RHS, " ", "") == "&Connection->Paths[0]" && strings.Contains(lf.Line(a.Line), "TODO - Correct?") {
				hard = append(hard, a)
				f.Evidence = append(f.Evidence, x.Evidence(a.Pos, "assignment", "ACK accounting hard-codes Paths[0] in "+a.Func))
			}
		}
		var ackFields []string
		pathField := 0
		for _, fl := range x.Set {
			for _, d := range fl.AllDefs() {
				if d.Kind == syntax.DefField && d.Owner == "QUIC_ACK_EVENT" {
					ackFields = append(ackFields, d.Name)
					if strings.Contains(strings.ToLower(d.Name), "path") {
						pathField++
					}
				}
			}
			for _, d := range fl.Defs("QUIC_ACK_EVENT") {
				if d.Kind == syntax.DefStruct {
					f.Evidence = append(f.Evidence, x.Evidence(d.Pos, "definition", "QUIC_ACK_EVENT fields: "+strings.Join(ackFields, ", ")))
				}
			}
		}
		f.Counts["rtt_path_gates"] = len(gate)
		f.Counts["gated_rtt_updates"] = len(gatedRTT)
		f.Counts["paths0_hardcoded"] = len(hard)
		f.Counts["ack_event_fields"] = len(ackFields)
		f.Counts["ack_event_path_fields"] = pathField
		switch {
		case len(gatedRTT) > 0 && len(hard) > 0 && pathField == 0:
			var fns []string
			for _, a := range hard {
				fns = append(fns, a.Func)
			}
			f.Mechanism = fmt.Sprintf("RTT excluded by path ID (NewLargestAckDifferentPath gate); ACK byte accounting hard-codes Paths[0] at %s (%s, `TODO - Correct?`), QUIC_ACK_EVENT has no path field",
				query.Plural(len(hard), "site"), strings.Join(fns, ", "))
		case len(gatedRTT) > 0 && len(hard) == 0:
			f.Answer = audit.Yes
			f.Mechanism = "RTT gated by path; no hard-coded Paths[0] in ACK accounting"
		default:
			f.Answer = audit.Unknown
			f.Mechanism = fmt.Sprintf("gated RTT updates %d, Paths[0] hard-codes %d, ACK event path fields %d", len(gatedRTT), len(hard), pathField)
		}
		return []audit.Finding{f}, nil
	},
}

var msquicQ2 = &query.Rule{
	Name: "msquic/q2-initial-rtt", Question: audit.Q2, Role: query.Both, Files: msquicFiles,
	Doc: "What the PATH_RESPONSE frame case and QuicPathSetValid call: no RTT update; a new path's RTT comes from " +
		"Settings.InitialRttMs in QuicPathInitialize.",
	Decide: func(x *query.Code) ([]audit.Finding, error) {
		var inCase []syntax.Call
		for _, fl := range x.Set {
			for _, c := range fl.AllCalls() {
				if query.UnderCase(c.Guards, "QUIC_FRAME_PATH_RESPONSE") {
					inCase = append(inCase, c)
				}
			}
		}
		if len(inCase) == 0 {
			return []audit.Finding{x.Absent("case QUIC_FRAME_PATH_RESPONSE")}, nil
		}
		f := x.Answer(query.Both, audit.No)
		rtt := 0
		var names []string
		check := func(cs []syntax.Call) {
			for _, c := range cs {
				names = append(names, c.Name)
				if strings.Contains(strings.ToLower(c.Name), "rtt") {
					rtt++
					f.Evidence = append(f.Evidence, x.Evidence(c.Pos, "call", "RTT call on validation"))
				}
			}
		}
		check(inCase)
		for _, d := range x.Set.Funcs("QuicPathSetValid") {
			f.Evidence = append(f.Evidence, x.Evidence(d.Pos, "definition", "called for a validated PATH_RESPONSE"))
			check(x.FileOf(d.Pos).CallsIn(d.Name))
			for _, a := range x.FileOf(d.Pos).Assigns(d.Name) {
				if strings.Contains(strings.ToLower(a.LHS), "rtt") {
					rtt++
				}
			}
		}
		for _, d := range x.Set.Funcs("QuicPathInitialize") {
			for _, a := range x.FileOf(d.Pos).Assigns(d.Name) {
				if a.Target == "SmoothedRtt" {
					f.Evidence = append(f.Evidence, x.Evidence(a.Pos, "assignment", "new path seeded: "+a.LHS+" = "+a.RHS))
				}
			}
		}
		f.Counts["calls_on_validation"] = len(names)
		f.Counts["rtt_touches"] = rtt
		if rtt == 0 {
			f.Mechanism = "PATH_RESPONSE validates the path without an RTT sample; new paths start from Settings.InitialRttMs"
		} else {
			f.Answer = audit.Unknown
			f.Mechanism = fmt.Sprintf("%d RTT touches on path validation", rtt)
		}
		f.Detail = "calls: " + strings.Join(names, ", ")
		return []audit.Finding{f}, nil
	},
}

var msquicConstants = &query.Rule{
	Name: "msquic/constants", Question: audit.ConstInitialWindow, Role: "", Files: msquicFiles,
	Doc: "CUBIC's window = DatagramPayloadLength × InitialWindowPackets (QUIC_INITIAL_WINDOW_PACKETS), the datagram payload " +
		"from the default minimum MTU minus IPv4 and UDP headers; QUIC_PERSISTENT_CONGESTION_WINDOW_PACKETS; TEN_TIMES_BETA_CUBIC / 10; QUIC_INITIAL_RTT.",
	Decide: func(x *query.Code) ([]audit.Finding, error) {
		var out query.Findings
		mtu, mtuDef, ok1 := x.ExpandMacro("QUIC_DPLPMTUD_DEFAULT_MIN_MTU")
		ip4, _, ok2 := x.ExpandMacro("CXPLAT_MIN_IPV4_HEADER_SIZE")
		udp, _, ok3 := x.ExpandMacro("CXPLAT_UDP_HEADER_SIZE")
		var params map[string]float64
		payload := ""
		if ok1 && ok2 && ok3 {
			fm, err := x.Constant(audit.ConstInitialWindow, mtu, nil, "", "", mtuDef.Pos)
			if err != nil {
				return nil, err
			}
			// The window is a function of the path MTU (the trace's send_mtu):
			// payload = MTU - IPv4 header - UDP header (MaxUdpPayloadSizeForFamily).
			params = map[string]float64{"MTU": fm.Constant.Value}
			payload = fmt.Sprintf("(MTU-%s-%s)", ip4, udp)
		}
		var initA *syntax.Assign
		for _, a := range x.Assigns("") {
			if a.Target == "CongestionWindow" && strings.Contains(a.RHS, "DatagramPayloadLength") && strings.Contains(a.RHS, "InitialWindowPackets") && strings.HasPrefix(a.LHS, "Cubic->") {
				aa := a
				initA = &aa
				break
			}
		}
		n, nDef, okN := x.ExpandMacro("QUIC_INITIAL_WINDOW_PACKETS")
		if initA != nil && okN && payload != "" {
			f, err := x.Constant(audit.ConstInitialWindow, n+"*"+payload, params, "InitialWindowPackets x DatagramPayloadLength (IPv4; MTU = path MTU, default MinimumMtu QUIC_DPLPMTUD_DEFAULT_MIN_MTU)",
				fmt.Sprintf("%s = %s; DatagramPayloadLength = MTU - IPv4 - UDP; default MTU %s = %s", initA.LHS, initA.RHS, mtuDef.Name, mtu), initA.Pos,
				x.Evidence(nDef.Pos, "constant", "packets default"), x.Evidence(mtuDef.Pos, "constant", "default minimum MTU"))
			if err != nil {
				return nil, err
			}
			out.Append(f)
			// MinimumMtu may be configured down to QUIC_DPLPMTUD_MIN_MTU (the
			// settings clamp); a path at that floor resets to this value.
			if floor, floorDef, ok := x.ExpandMacro("QUIC_DPLPMTUD_MIN_MTU"); ok {
				fm, err := x.Constant(audit.ConstInitialWindow, floor, nil, "", "", floorDef.Pos)
				if err != nil {
					return nil, err
				}
				f, err := x.Constant(audit.ConstInitialWindow, n+"*"+payload, map[string]float64{"MTU": fm.Constant.Value}, "InitialWindowPackets x DatagramPayloadLength (IPv4; MTU = QUIC_DPLPMTUD_MIN_MTU, the settings fallback and floor for MinimumMtu)",
					fmt.Sprintf("same assignment with MTU = %s = %s (MinimumMtu when unset while MaximumMtu is set, and its clamp)", floorDef.Name, floor), initA.Pos, x.Evidence(floorDef.Pos, "constant", "MinimumMtu floor"))
				if err != nil {
					return nil, err
				}
				out.Append(f)
			}
		} else {
			out.Append(x.Absent("CUBIC initial window or its defaults"))
		}
		if m, d, ok := x.ExpandMacro("QUIC_PERSISTENT_CONGESTION_WINDOW_PACKETS"); ok && payload != "" {
			out.Add(x.Constant(audit.ConstMinWindow, m+"*"+payload, params, "QUIC_PERSISTENT_CONGESTION_WINDOW_PACKETS x DatagramPayloadLength", "QUIC_PERSISTENT_CONGESTION_WINDOW_PACKETS = "+d.Value, d.Pos))
		}
		if b, d, ok := x.ExpandMacro("TEN_TIMES_BETA_CUBIC"); ok {
			out.Add(x.Constant(audit.ConstLossFactor, b+"/10", nil, "TEN_TIMES_BETA_CUBIC / 10", "TEN_TIMES_BETA_CUBIC = "+d.Value, d.Pos))
		}
		if r, d, ok := x.ExpandMacro("QUIC_INITIAL_RTT"); ok {
			out.Add(x.Constant(audit.ConstDefaultRTT, r+"*1000", nil, "QUIC_INITIAL_RTT (ms) in µs", "QUIC_INITIAL_RTT = "+d.Value+" ms", d.Pos))
		}
		return out.Result()
	},
}
