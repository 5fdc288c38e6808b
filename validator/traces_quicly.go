package validator

import (
	"fmt"
	"strings"

	"github.com/tidwall/gjson"
)

// quiclyNoSample is quicly's minimum RTT before any sample (UINT32_MAX).
const quiclyNoSample = 4294967295

// readQuiclyLog reads the quicly harness's trace: picotls's event log (one
// JSON object per line, "module":"quicly", "time" in ms since the Unix
// epoch) interleaved with the harness's own lines ("module":"qlyharness",
// "time_us"). Times are µs from the first timed record's millisecond, the
// harness's µs cut to the millisecond (quicly stamps its events with the
// millisecond its call began). Samples: the harness's "rtt" lines (whole ms;
// a line repeating the previous line's RTTs is a window change and gives
// only the window) and the window of cc_ack_received, pto and
// cc_congestion. Events: quicly's path_challenge/path_response lines,
// promote_path (path_active), and peer addresses from new_path's remote and
// the harness's datagram lines. Sent and Acks are the application packet
// space's (packet_type 3).
func readQuiclyLog(data []byte) (*traceFacts, error) {
	f := &traceFacts{Format: "quicly-log", HasAddrs: true}
	ref, t := int64(-1), int64(0)
	var lastRTT [4]int64
	haveRTT := false
	carrierApp := false
	records := 0
	err := lines(data, func(n int, line string) error {
		line = strings.TrimSpace(line)
		if line == "" {
			return nil
		}
		if !gjson.Valid(line) {
			return fmt.Errorf("line %d is not JSON", n)
		}
		r := gjson.GetMany(line, "module", "type", "time", "time_us")
		mod, typ := r[0].String(), r[1].String()
		if mod != "quicly" && mod != "qlyharness" {
			return nil
		}
		records++
		us := int64(-1)
		switch {
		case r[3].Exists():
			us = r[3].Int() / 1000 * 1000
		case r[2].Exists():
			us = r[2].Int() * 1000
		}
		if us >= 0 {
			if ref < 0 {
				ref = us
			}
			t = us - ref
		}
		num := func(k string) (int64, error) {
			v := gjson.Get(line, k)
			if v.Type != gjson.Number {
				return 0, fmt.Errorf("line %d: %s without a number %s", n, typ, k)
			}
			return v.Int(), nil
		}
		if mod == "qlyharness" {
			switch typ {
			case "rtt":
				var v [5]int64
				for i, k := range []string{"min_rtt", "smoothed_rtt", "rttvar", "latest_rtt", "cwnd"} {
					x, err := num(k)
					if err != nil {
						return err
					}
					v[i] = x
				}
				s := newSample(t)
				s.Cwnd = v[4]
				rtt := [4]int64{v[0], v[1], v[2], v[3]}
				if !haveRTT || rtt != lastRTT {
					lastRTT, haveRTT = rtt, true
					s.MinRTT = v[0] * 1000
					if v[0] == quiclyNoSample {
						s.MinRTT = 0
					}
					s.SRTT = v[1] * 1000
					if v[3] > 0 {
						s.Latest = v[3] * 1000
					}
				}
				f.Samples = append(f.Samples, s)
			case "datagram_sent", "datagram_received":
				if p := gjson.Get(line, "peer").String(); p != "" {
					f.Events = append(f.Events, pathEvent{T: t, Kind: "peer_addr", Addr: p})
				}
			}
			return nil
		}
		app := gjson.Get(line, "packet_type").Int() == 3
		switch typ {
		case "accept":
			if f.Vantage == "" {
				f.Vantage = "server"
			}
		case "connect":
			if f.Vantage == "" {
				f.Vantage = "client"
			}
		case "packet_sent":
			pn, err := num("pn")
			if err != nil {
				return err
			}
			if app {
				f.sentAt(pn, t)
			}
		case "packet_received":
			carrierApp = app
		case "cc_ack_received", "pto", "cc_congestion":
			cw, err := num("cwnd")
			if err != nil {
				return err
			}
			s := newSample(t)
			s.Cwnd = cw
			f.Samples = append(f.Samples, s)
			if typ == "cc_ack_received" && carrierApp {
				l, err := num("largest_acked")
				if err != nil {
					return err
				}
				f.Acks = append(f.Acks, ack{T: t, Largest: l})
			}
		case "new_path":
			if p := gjson.Get(line, "remote").String(); p != "" {
				f.Events = append(f.Events, pathEvent{T: t, Kind: "peer_addr", Addr: p})
			}
		case "promote_path":
			f.Events = append(f.Events, pathEvent{T: t, Kind: "path_active"})
		case "path_challenge_send":
			f.Events = append(f.Events, pathEvent{T: t, Kind: "challenge_sent"})
		case "path_challenge_receive":
			f.Events = append(f.Events, pathEvent{T: t, Kind: "challenge_received"})
		case "path_response_send":
			f.Events = append(f.Events, pathEvent{T: t, Kind: "response_sent"})
		case "path_response_receive":
			f.Events = append(f.Events, pathEvent{T: t, Kind: "response_received"})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if records == 0 {
		return nil, fmt.Errorf("no quicly event-log records (\"module\":\"quicly\" or \"qlyharness\")")
	}
	return f, nil
}
