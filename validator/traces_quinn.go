package validator

import (
	"fmt"
	"strconv"
	"strings"
)

// readQuinnCCLog reads the quinn harness's server trace: a "# quinn-cc-log 1
// vantage=… …" header, then "<µs> <verb> k=v …" lines of what quinn tells
// its congestion controller. quinn builds one controller per new path, so
// the controller number (cc=N) is the sample's path id. "built",
// "congestion" and "ack" lines are samples (an ack line's srtt_us,
// min_rtt_us and newest_rtt_us are the path's estimator after the ACK; 0 or
// "-" is no value), "sent" lines the packet numbers of one transmit, an ack
// line's largest= the largest acknowledged, "peer" lines the peer address
// the server's connection reports.
func readQuinnCCLog(data []byte) (*traceFacts, error) {
	f := &traceFacts{Format: "quinn-cc-log", HasAddrs: true, PathIDs: true}
	header := false
	err := lines(data, func(n int, line string) error {
		if strings.HasPrefix(line, "#") {
			if rest, ok := strings.CutPrefix(line, "# quinn-cc-log "); ok {
				if header {
					return fmt.Errorf("line %d: second header line", n)
				}
				header = true
				f.Vantage = kvFields(rest)["vantage"]
			}
			return nil
		}
		if strings.TrimSpace(line) == "" {
			return nil
		}
		if !header {
			return fmt.Errorf("line %d: record before the quinn-cc-log header", n)
		}
		ts, rest, _ := strings.Cut(line, " ")
		t, err := strconv.ParseInt(ts, 10, 64)
		if err != nil || t < 0 {
			return fmt.Errorf("line %d: time %q is not a count of µs", n, ts)
		}
		verb, args, _ := strings.Cut(rest, " ")
		kv := kvFields(args)
		// num reads k; "-" (no value) is -1.
		num := func(k string) (int64, error) {
			v, ok := kv[k]
			if !ok {
				return 0, fmt.Errorf("line %d: %s without %s=", n, verb, k)
			}
			if v == "-" {
				return -1, nil
			}
			x, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return 0, fmt.Errorf("line %d: %s %s=%q is not an integer", n, verb, k, v)
			}
			return x, nil
		}
		path := "cc" + kv["cc"]
		switch verb {
		case "built", "congestion":
			cw, err := num("cwnd")
			if err != nil {
				return err
			}
			s := newSample(t)
			s.Path, s.Cwnd = path, cw
			f.Samples = append(f.Samples, s)
		case "ack":
			s := newSample(t)
			s.Path = path
			for _, k := range []struct {
				key  string
				to   *int64
				zero bool // 0 is "not measured yet"
			}{{"cwnd", &s.Cwnd, false}, {"srtt_us", &s.SRTT, true}, {"min_rtt_us", &s.MinRTT, true}, {"newest_rtt_us", &s.Latest, true}} {
				v, err := num(k.key)
				if err != nil {
					return err
				}
				if v < 0 || (k.zero && v == 0) {
					continue
				}
				*k.to = v
			}
			if l, err := num("largest"); err != nil {
				return err
			} else if l >= 0 {
				f.Acks = append(f.Acks, ack{T: t, Largest: l})
			}
			if s.any() {
				f.Samples = append(f.Samples, s)
			}
		case "sent":
			a, b, ok := strings.Cut(kv["pn"], "-")
			if !ok {
				b = a
			}
			first, err1 := strconv.ParseInt(a, 10, 64)
			last, err2 := strconv.ParseInt(b, 10, 64)
			if err1 != nil || err2 != nil || first < 0 || last < first || last-first > 64 {
				return fmt.Errorf("line %d: sent pn=%q is not a range first-last", n, kv["pn"])
			}
			for pn := first; pn <= last; pn++ {
				f.sentAt(pn, t)
			}
		case "peer":
			to := kv["to"]
			if to == "" {
				return fmt.Errorf("line %d: peer line without to=", n)
			}
			f.Events = append(f.Events, pathEvent{T: t, Kind: "peer_addr", Addr: to})
		case "stats":
		default:
			return fmt.Errorf("line %d: unknown record %q", n, verb)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if !header {
		return nil, fmt.Errorf("no \"# quinn-cc-log\" header line")
	}
	return f, nil
}
