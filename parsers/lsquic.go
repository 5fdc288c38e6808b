package parsers

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"

	"github.com/migaudit/migaudit/parsers/timeline"
)

// parseLsquic reads lsqharness's stdout. Every line is
//
//	[lsq_server] t_us=1234 VERB unix_us=… key=value …   (the harness's own)
//	[lsq_server] t_us=1234 LOG [DEBUG] [QUIC:CID] event: TX packet #5 SHORT (STREAM), size 1252, …, path: 0, flags: 9
//
// t_us is µs since the process started. STATS lines (lsquic_conn_get_info
// polled every 5 ms) become samples: cwnd, smoothed, minimum and variance
// of the RTT (lsquic reports no bytes in flight and no latest RTT there).
// connected/peer/local/migrate lines become path events (peer address in
// From, local in To). LOG lines are lsquic's own log: TX/RX packet lines
// become packet events (lsquic's path number in PathID), "RX ACK frame:
// [high-low]…" acked ranges, PATH_CHALLENGE/PATH_RESPONSE lines
// path-validation events, "switched paths" and "path validated: switching"
// path events, "lost … packet #N" packet losses, and the congestion
// controllers' loss, timeout, mode-change and adaptive-choice lines
// congestion events, and sendctl's "packno N; rtt: R; delta: D; new srtt: S"
// (take_rtt_sample, each RTT sample) samples of the latest and smoothed RTT.
// Other lines are skipped.
func parseLsquic(in *input, h timeline.Handler) error {
	p := &sockLines{prefix: "[lsq_", h: h, meta: timeline.Meta{Format: FormatLsquic, Implementation: "lsquic", Params: map[string]int64{}}}
	p.log = p.lsquicLog
	if err := p.read(in); err != nil {
		return err
	}
	p.meta.Notes = append(p.meta.Notes,
		"STATS samples (lsquic_conn_get_info every 5 ms) carry no path id: they describe the connection's current path",
		"lsquic_conn_get_info has no bytes in flight and no latest RTT; the latest RTT is sendctl's per-sample debug line (take_rtt_sample), where the harness logs it",
		"packet events carry lsquic's own path number (0, 1, …) as path id",
		"times are µs since the harness process started")
	h.Meta(p.meta)
	return nil
}

// sockLines reads the stdout protocol of harnesses/twosock's C harnesses
// (lsqharness, xqharness): "<prefix>ROLE] t_us=N VERB …" harness lines and
// "… LOG <library log line>" lines, which log reads.
type sockLines struct {
	prefix string
	h      timeline.Handler
	meta   timeline.Meta
	lines  int
	last   timeline.Sample
	log    func(t int64, text string) error
	// addrs is set once a path event has named the connection's addresses.
	addrs  bool
	rxSp   string // packet space of the last received packet (for its ACK frame)
	ranges []timeline.Range
}

// read reads every line of in.
func (p *sockLines) read(in *input) error {
	if err := eachLine(in, func(line []byte, _ int) error { return p.line(line) }); err != nil {
		return err
	}
	if p.lines == 0 {
		return fmt.Errorf("parse %s: no harness lines (%sserver] t_us=… or %sclient] t_us=…) found", in.name, p.prefix, p.prefix)
	}
	return nil
}

func (p *sockLines) line(line []byte) error {
	if !bytes.HasPrefix(line, []byte(p.prefix)) {
		return nil
	}
	end := bytes.IndexByte(line, ']')
	if end < 0 {
		return fmt.Errorf("harness line without closing ']'")
	}
	role := string(line[len(p.prefix):end])
	rest := bytes.TrimSpace(line[end+1:])
	if !bytes.HasPrefix(rest, []byte("t_us=")) {
		return fmt.Errorf("harness line without t_us")
	}
	sp := bytes.IndexByte(rest, ' ')
	if sp < 0 {
		sp = len(rest)
	}
	t, err := strconv.ParseInt(string(rest[5:sp]), 10, 64)
	if err != nil || t < 0 {
		return fmt.Errorf("bad t_us %q", rest[5:sp])
	}
	p.lines++
	if p.meta.Vantage == "" {
		if v := vantage(role); v != "" {
			p.meta.Vantage = v
		}
	}
	msg := strings.TrimSpace(string(rest[sp:]))
	verb, args, _ := strings.Cut(msg, " ")
	if verb == "LOG" {
		return p.log(t, args)
	}
	return p.verb(t, verb, keyValues(args))
}

// sockStats are the STATS keys the harnesses print (each prints some).
var sockStats = []struct {
	key   string
	field timeline.Field
}{
	{"cwnd", timeline.FieldCwnd}, {"bytes_in_flight", timeline.FieldBytesInFlight},
	{"srtt_us", timeline.FieldSmoothedRTT}, {"min_rtt_us", timeline.FieldMinRTT},
	{"latest_rtt_us", timeline.FieldLatestRTT}, {"rttvar_us", timeline.FieldRTTVar},
}

func (p *sockLines) verb(t int64, verb string, kv kvMap) error {
	switch verb {
	case "STATS":
		s := p.last
		s.TimeUS, s.Fields = t, 0
		for _, f := range sockStats {
			v, ok := kv[f.key]
			if !ok {
				continue
			}
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 0 {
				return fmt.Errorf("STATS %s=%q is not a non-negative integer", f.key, v)
			}
			s.Set(f.field, n)
		}
		if s.Fields == 0 {
			return fmt.Errorf("STATS line without any of cwnd, bytes_in_flight, srtt_us, min_rtt_us, latest_rtt_us, rttvar_us")
		}
		if peer := kv["peer"]; !p.addrs && peer != "" && peer != "none" {
			// The first STATS line that names the peer: the address a
			// later peer change starts from (lsquic's server has no
			// handshake callback that would print it).
			p.addrs = true
			p.meta.LogsAddresses = true
			p.h.Event(timeline.Event{TimeUS: t, Kind: timeline.PathEvent, PacketNumber: -1, From: peer, To: kv["local"], Detail: "connection addresses (first STATS line)"})
		}
		if m, err := strconv.ParseInt(kv["pmtu"], 10, 64); err == nil && m > 0 {
			p.meta.Params["pmtu"] = m
		}
		p.sample(s)
	case "connected":
		p.meta.LogsAddresses, p.addrs = true, true
		p.h.Event(timeline.Event{TimeUS: t, Kind: timeline.PathEvent, PacketNumber: -1, From: kv["remote"], To: kv["local"], Detail: "connected"})
	case "peer":
		p.meta.LogsAddresses = true
		p.h.Event(timeline.Event{TimeUS: t, Kind: timeline.PathEvent, PacketNumber: -1, From: kv["to"],
			Detail: "peer address changed (" + p.meta.Implementation + "'s connection) from " + kv["from"]})
	case "local":
		p.meta.LogsAddresses = true
		p.h.Event(timeline.Event{TimeUS: t, Kind: timeline.PathEvent, PacketNumber: -1, To: kv["to"],
			Detail: "local address changed (" + p.meta.Implementation + "'s connection) from " + kv["from"]})
	case "migrate":
		p.h.Event(timeline.Event{TimeUS: t, Kind: timeline.PathEvent, PacketNumber: -1,
			Detail: "client sends from " + kv["to"] + " instead of " + kv["from"]})
	}
	return nil
}

// sample emits s and keeps it as the values later samples carry forward.
func (p *sockLines) sample(s timeline.Sample) {
	p.last = s
	p.h.Sample(s)
}

// lsquicLog reads one line of lsquic's own log ("[LEVEL] [QUIC:CID] module: text").
func (p *sockLines) lsquicLog(t int64, s string) error {
	_, text, ok := strings.Cut(s, "] ")
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
	switch {
	case module == "event" && strings.HasPrefix(text, "TX packet #"):
		return p.packet(t, timeline.PacketSent, text[len("TX packet #"):], "size ")
	case module == "event" && strings.HasPrefix(text, "RX packet #"):
		return p.packet(t, timeline.PacketReceived, text[len("RX packet #"):], "size: ")
	case module == "event" && strings.HasPrefix(text, "RX ACK frame: "):
		return p.ack(t, text[len("RX ACK frame: "):])
	case strings.HasPrefix(text, "generated PATH_CHALLENGE(") && module == "event":
		p.h.Event(timeline.Event{TimeUS: t, Kind: timeline.PathChallengeSent, PacketNumber: -1, Data: between(text, "(", ")")})
	case strings.HasPrefix(text, "generated PATH_RESPONSE(") && module == "event":
		p.h.Event(timeline.Event{TimeUS: t, Kind: timeline.PathResponseSent, PacketNumber: -1, Data: between(text, "(", ")")})
	case strings.HasPrefix(text, "received path challenge "):
		f := strings.Fields(text)
		if len(f) < 4 {
			return fmt.Errorf("path challenge line without its data: %q", text)
		}
		p.h.Event(timeline.Event{TimeUS: t, Kind: timeline.PathChallengeReceived, PacketNumber: -1, Data: f[3],
			PathID: strings.TrimPrefix(f[len(f)-1], "#")})
	case strings.HasPrefix(text, "received path response: "):
		p.h.Event(timeline.Event{TimeUS: t, Kind: timeline.PathResponseReceived, PacketNumber: -1, Data: strings.TrimPrefix(text, "received path response: ")})
	case text == "switched paths" || strings.HasPrefix(text, "path validated: switching"):
		p.h.Event(timeline.Event{TimeUS: t, Kind: timeline.PathEvent, PacketNumber: -1, Detail: "path switch: " + text})
	case module == "sendctl" && strings.HasPrefix(text, "packno "):
		return p.lsquicRTT(t, text)
	case strings.HasPrefix(text, "lost retransmittable packet #") || strings.HasPrefix(text, "lost unretransmittable packet #"):
		_, num, _ := strings.Cut(text, "#")
		n, err := strconv.ParseInt(strings.TrimSpace(num), 10, 64)
		if err != nil {
			return fmt.Errorf("lost packet number %q: %v", num, err)
		}
		p.h.Event(timeline.Event{TimeUS: t, Kind: timeline.PacketLost, PacketNumber: n})
	case (module == "cubic" && (strings.HasPrefix(text, "loss detected") || strings.HasPrefix(text, "timeout"))) ||
		(module == "sendctl" && strings.HasPrefix(text, "srtt is ")):
		p.h.Event(timeline.Event{TimeUS: t, Kind: timeline.CongestionEvent, PacketNumber: -1, Detail: module + ": " + text})
	case module == "bbr" && strings.HasPrefix(text, "mode change "):
		p.h.Event(timeline.Event{TimeUS: t, Kind: timeline.CongestionStateUpdated, PacketNumber: -1, Detail: "bbr " + text})
	}
	return nil
}

// lsquicRTT reads take_rtt_sample's debug line, "packno N; rtt: R; delta:
// D; new srtt: S" (µs): the sample R, from the ACK of packet N (its largest
// acknowledged), and the smoothed RTT after it.
func (p *sockLines) lsquicRTT(t int64, text string) error {
	var pn, rtt, srtt int64 = -1, -1, -1
	for _, f := range strings.Split(text, "; ") {
		k, v, ok := strings.Cut(f, " ")
		if !ok {
			continue
		}
		k, v = strings.TrimSuffix(k, ":"), strings.TrimSpace(v)
		if k == "new" {
			k, v, _ = strings.Cut(v, " ")
			k, v = "new "+strings.TrimSuffix(k, ":"), strings.TrimSpace(v)
		}
		var dst *int64
		switch k {
		case "packno":
			dst = &pn
		case "rtt":
			dst = &rtt
		case "new srtt":
			dst = &srtt
		default:
			continue
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return fmt.Errorf("RTT sample line: %s %q is not a non-negative integer", k, v)
		}
		*dst = n
	}
	if pn < 0 || rtt < 0 || srtt < 0 {
		return fmt.Errorf("RTT sample line without packno, rtt and new srtt: %q", text)
	}
	s := p.last
	s.TimeUS, s.Fields = t, 0
	s.Set(timeline.FieldLatestRTT, rtt)
	s.Set(timeline.FieldSmoothedRTT, srtt)
	p.sample(s)
	return nil
}

// packet reads "N TYPE (frames), size S…, path: P…" after "TX/RX packet #".
func (p *sockLines) packet(t int64, kind timeline.EventKind, s, sizeKey string) error {
	numS, rest, _ := strings.Cut(s, " ")
	numS = strings.TrimSuffix(numS, ",")
	n, err := strconv.ParseInt(numS, 10, 64)
	if err != nil || n < 0 {
		return fmt.Errorf("packet number %q is not a non-negative integer", numS)
	}
	ev := timeline.Event{TimeUS: t, Kind: kind, PacketNumber: n}
	if typ, _, ok := strings.Cut(rest, " "); ok {
		ev.PacketSpace = lsquicSpace(strings.TrimSuffix(typ, ","))
	}
	if i := strings.Index(rest, sizeKey); i >= 0 {
		v := rest[i+len(sizeKey):]
		if j := strings.IndexAny(v, ",; "); j >= 0 {
			v = v[:j]
		}
		if sz, err := strconv.ParseInt(v, 10, 64); err == nil {
			ev.SizeBytes = sz
		}
	}
	if i := strings.Index(rest, "path: "); i >= 0 {
		v := rest[i+len("path: "):]
		if j := strings.IndexAny(v, ",; "); j >= 0 {
			v = v[:j]
		}
		ev.PathID = v
	}
	if kind == timeline.PacketReceived {
		p.rxSp = ev.PacketSpace
	}
	p.h.Event(ev)
	return nil
}

// ack reads "[high-low][high-low]…" (lsquic_acki2str).
func (p *sockLines) ack(t int64, s string) error {
	p.ranges = p.ranges[:0]
	for strings.HasPrefix(s, "[") {
		end := strings.IndexByte(s, ']')
		if end < 0 {
			return fmt.Errorf("ACK range %q without ']'", s)
		}
		hi, lo, ok := strings.Cut(s[1:end], "-")
		h, err1 := strconv.ParseInt(hi, 10, 64)
		l, err2 := strconv.ParseInt(lo, 10, 64)
		if !ok || err1 != nil || err2 != nil || l > h || l < 0 {
			return fmt.Errorf("ACK range %q is not [high-low]", s[:end+1])
		}
		p.ranges = append(p.ranges, timeline.Range{First: l, Last: h})
		s = s[end+1:]
	}
	if len(p.ranges) == 0 {
		return fmt.Errorf("ACK frame without ranges")
	}
	p.h.Event(timeline.Event{TimeUS: t, Kind: timeline.PacketsAcked, PacketNumber: -1, PacketSpace: p.rxSp, AckRanges: p.ranges})
	return nil
}

// lsquicSpace maps lsquic_hety2str names to the timeline's packet spaces.
func lsquicSpace(s string) string {
	switch s {
	case "SHORT":
		return "1RTT"
	case "INIT":
		return "initial"
	case "HSK":
		return "handshake"
	case "0-RTT":
		return "0RTT"
	}
	return ""
}

// between returns the text of s between the first open and the next close.
func between(s, open, close string) string {
	_, after, ok := strings.Cut(s, open)
	if !ok {
		return ""
	}
	v, _, _ := strings.Cut(after, close)
	return v
}
