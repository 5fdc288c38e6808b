package validator

import (
	"fmt"
	"strconv"
	"strings"
)

// sockTrace reads the stdout of the two-socket C harnesses (lsqharness,
// xqharness): "[<prefix>ROLE] t_us=N VERB k=v …" lines of the harness and
// "[<prefix>ROLE] t_us=N LOG <library log line>" lines, which logLine reads.
// t_us is µs since the harness process started.
type sockTrace struct {
	f       *traceFacts
	prefix  string
	addrs   bool // a line has named the connection's peer address
	logLine func(t int64, text string) error
}

func (s *sockTrace) read(data []byte) (*traceFacts, error) {
	n := 0
	err := lines(data, func(ln int, line string) error {
		if !strings.HasPrefix(line, s.prefix) {
			return nil
		}
		end := strings.IndexByte(line, ']')
		if end < 0 {
			return fmt.Errorf("line %d: harness line without closing ']'", ln)
		}
		role := line[len(s.prefix):end]
		rest := strings.TrimSpace(line[end+1:])
		ts, msg, _ := strings.Cut(rest, " ")
		if !strings.HasPrefix(ts, "t_us=") {
			return fmt.Errorf("line %d: harness line without t_us", ln)
		}
		t, err := strconv.ParseInt(ts[len("t_us="):], 10, 64)
		if err != nil || t < 0 {
			return fmt.Errorf("line %d: bad t_us %q", ln, ts)
		}
		n++
		if s.f.Vantage == "" && (role == "server" || role == "client") {
			s.f.Vantage = role
		}
		verb, args, _ := strings.Cut(strings.TrimSpace(msg), " ")
		if verb == "LOG" {
			if err := s.logLine(t, args); err != nil {
				return fmt.Errorf("line %d: %w", ln, err)
			}
			return nil
		}
		if err := s.verb(t, verb, kvFields(args)); err != nil {
			return fmt.Errorf("line %d: %w", ln, err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, fmt.Errorf("no harness lines (%sserver] t_us=…) found", s.prefix)
	}
	return s.f, nil
}

// verb reads a harness line: STATS (lsquic_conn_get_info or
// xqc_conn_get_stats polled every 5 ms) is a sample; connected, peer and
// the first STATS line naming the peer are peer addresses.
func (s *sockTrace) verb(t int64, verb string, kv map[string]string) error {
	switch verb {
	case "STATS":
		sm := newSample(t)
		for _, k := range []struct {
			key string
			to  *int64
		}{{"cwnd", &sm.Cwnd}, {"srtt_us", &sm.SRTT}, {"min_rtt_us", &sm.MinRTT}, {"latest_rtt_us", &sm.Latest}} {
			v, ok := kv[k.key]
			if !ok {
				continue
			}
			x, err := strconv.ParseInt(v, 10, 64)
			if err != nil || x < 0 {
				return fmt.Errorf("STATS %s=%q is not a non-negative integer", k.key, v)
			}
			*k.to = x
		}
		if peer := kv["peer"]; !s.addrs && peer != "" && peer != "none" {
			s.addrs = true
			s.f.Events = append(s.f.Events, pathEvent{T: t, Kind: "peer_addr", Addr: peer})
		}
		if sm.any() {
			s.f.Samples = append(s.f.Samples, sm)
		}
	case "connected":
		s.addrs = true
		if r := kv["remote"]; r != "" {
			s.f.Events = append(s.f.Events, pathEvent{T: t, Kind: "peer_addr", Addr: r})
		}
	case "peer":
		if to := kv["to"]; to != "" {
			s.f.Events = append(s.f.Events, pathEvent{T: t, Kind: "peer_addr", Addr: to})
		}
	}
	return nil
}

// readLsquicLog reads lsqharness's stdout. From lsquic's own log ("[LEVEL]
// [QUIC:CID] module: text"): short-header "TX packet #N" lines are sends,
// "RX ACK frame: [hi-lo]…" after a short-header "RX packet" the largest
// acknowledged, the PATH_CHALLENGE/PATH_RESPONSE lines path validation, and
// "switched paths" / "path validated: switching" the path switch, and
// sendctl's "packno N; rtt: R; delta: D; new srtt: S" (take_rtt_sample) a
// sample of the latest and smoothed RTT.
func readLsquicLog(data []byte) (*traceFacts, error) {
	s := &sockTrace{f: &traceFacts{Format: "lsquic-log", HasAddrs: true}, prefix: "[lsq_"}
	rxShort := false
	s.logLine = func(t int64, line string) error {
		_, text, ok := strings.Cut(line, "] ")
		if !ok {
			return nil
		}
		if strings.HasPrefix(text, "[QUIC:") {
			if _, after, ok := strings.Cut(text, "] "); ok {
				text = after
			}
		}
		module, text, ok := strings.Cut(text, ": ")
		if !ok {
			return nil
		}
		ev := func(kind string) { s.f.Events = append(s.f.Events, pathEvent{T: t, Kind: kind}) }
		switch {
		case module == "event" && strings.HasPrefix(text, "TX packet #"):
			pn, typ, err := lsquicPacket(text[len("TX packet #"):])
			if err != nil {
				return err
			}
			if typ == "SHORT" {
				s.f.sentAt(pn, t)
			}
		case module == "event" && strings.HasPrefix(text, "RX packet #"):
			_, typ, err := lsquicPacket(text[len("RX packet #"):])
			if err != nil {
				return err
			}
			rxShort = typ == "SHORT"
		case module == "event" && strings.HasPrefix(text, "RX ACK frame: "):
			largest, err := lsquicAckLargest(text[len("RX ACK frame: "):])
			if err != nil {
				return err
			}
			if rxShort {
				s.f.Acks = append(s.f.Acks, ack{T: t, Largest: largest})
			}
		case module == "event" && strings.HasPrefix(text, "generated PATH_CHALLENGE("):
			ev("challenge_sent")
		case module == "event" && strings.HasPrefix(text, "generated PATH_RESPONSE("):
			ev("response_sent")
		case module == "sendctl" && strings.HasPrefix(text, "packno "):
			sm, err := lsquicRTTSample(t, text)
			if err != nil {
				return err
			}
			s.f.Samples = append(s.f.Samples, sm)
		case strings.HasPrefix(text, "received path challenge "):
			ev("challenge_received")
		case strings.HasPrefix(text, "received path response: "):
			ev("response_received")
		case text == "switched paths" || strings.HasPrefix(text, "path validated: switching"):
			ev("path_active")
		}
		return nil
	}
	return s.read(data)
}

// lsquicPacket reads "N TYPE …" after "TX/RX packet #".
func lsquicPacket(s string) (int64, string, error) {
	num, rest, _ := strings.Cut(s, " ")
	num = strings.TrimSuffix(num, ",")
	pn, err := strconv.ParseInt(num, 10, 64)
	if err != nil || pn < 0 {
		return 0, "", fmt.Errorf("packet number %q is not a non-negative integer", num)
	}
	typ, _, _ := strings.Cut(rest, " ")
	return pn, strings.TrimSuffix(typ, ","), nil
}

// lsquicAckLargest reads "[high-low][high-low]…" and returns the largest
// high.
func lsquicAckLargest(s string) (int64, error) {
	largest := int64(-1)
	for strings.HasPrefix(s, "[") {
		end := strings.IndexByte(s, ']')
		if end < 0 {
			return 0, fmt.Errorf("ACK range %q without ']'", s)
		}
		hi, lo, ok := strings.Cut(s[1:end], "-")
		h, err1 := strconv.ParseInt(hi, 10, 64)
		l, err2 := strconv.ParseInt(lo, 10, 64)
		if !ok || err1 != nil || err2 != nil || l > h || l < 0 {
			return 0, fmt.Errorf("ACK range %q is not [high-low]", s[:end+1])
		}
		largest = max(largest, h)
		s = s[end+1:]
	}
	if largest < 0 {
		return 0, fmt.Errorf("ACK frame without ranges")
	}
	return largest, nil
}

// lsquicRTTSample reads "packno N; rtt: R; delta: D; new srtt: S" (µs).
func lsquicRTTSample(t int64, text string) (sample, error) {
	sm := newSample(t)
	seen := 0
	for _, f := range strings.Split(text, "; ") {
		var dst *int64
		var v string
		switch {
		case strings.HasPrefix(f, "rtt: "):
			dst, v = &sm.Latest, f[len("rtt: "):]
		case strings.HasPrefix(f, "new srtt: "):
			dst, v = &sm.SRTT, f[len("new srtt: "):]
		case strings.HasPrefix(f, "packno "):
			var pn int64
			dst, v = &pn, f[len("packno "):]
		default:
			continue
		}
		x, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil || x < 0 {
			return sm, fmt.Errorf("RTT sample %q: %q is not a non-negative integer", text, v)
		}
		*dst = x
		seen++
	}
	if seen != 3 {
		return sm, fmt.Errorf("RTT sample line without packno, rtt and new srtt: %q", text)
	}
	return sm, nil
}
