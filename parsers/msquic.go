package parsers

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/bits"
	"strconv"
	"strings"

	"github.com/migaudit/migaudit/parsers/timeline"
)

// msquicNoRTT is msquic's "no measurement yet" value for its RTT statistics
// (UINT32_MAX): it is reported as 0 with the field marked as reported, so
// that a reset to "no measurement" is not papered over by carrying the old
// path's value forward.
const msquicNoRTT = 4294967295

// parseMsquic reads the stdout trace log of msquic built with stdout
// tracing, as the study's harness ran it (msquic has no usable qlog on
// Linux). Two kinds of lines matter:
//
//	[mq_server] t_us=549261 STATS cwnd=12200 srtt_us=20942 min_rtt_us=20877 max_rtt_us=21401 rtt_var_us=7959 … send_mtu=1248
//	[conn][0x7e38e4012b10] New Remote IP: 10.0.3.1:51637 [ConnRemoteAddrAdded:…]
//
// The harness's own lines ([mq_server]/[mq_client]) carry t_us, µs since the
// harness started; STATS lines are the polled QUIC_PARAM_CONN_STATISTICS_V2
// (every 5 ms) and become samples (no bytes in flight, no latest RTT: the
// API has neither). msquic's own [conn] lines carry no time: they take the
// time of the preceding timestamped line. Address and path lines become path
// events (peer address in From, local in To); "Congestion event" lines
// become congestion events. Other lines are ignored.
func parseMsquic(in *input, h timeline.Handler) error { return parseMsquicWith(in, h, false) }

// parseMsquicWith is parseMsquic; mapOnly reads every line's fields through
// keyValues' map, as before the map-free STATS split (the test oracle).
func parseMsquicWith(in *input, h timeline.Handler, mapOnly bool) error {
	m := &msquicParser{h: h, meta: timeline.Meta{Format: FormatMsquic, Implementation: "msquic", Params: map[string]int64{}}, mapOnly: mapOnly}
	if err := eachLine(in, func(line []byte, _ int) error { return m.line(line) }); err != nil {
		return err
	}
	if m.lines == 0 {
		return fmt.Errorf("parse %s: no msquic trace lines ([mq_server]/[mq_client]/[conn]) found", in.name)
	}
	m.meta.Notes = append(m.meta.Notes,
		"STATS samples carry no path id; path switches appear as path events",
		"msquic's statistics have no bytes in flight and no latest RTT",
		"min RTT 4294967295 (msquic's no-measurement value) is reported as 0",
		"msquic's own [conn] lines carry no time; they take the time of the preceding t_us line")
	m.emitMeta()
	return nil
}

type msquicParser struct {
	h      timeline.Handler
	meta   timeline.Meta
	t      int64
	lines  int
	last   timeline.Sample
	mtu    int64
	intern map[string]string
	// mapOnly skips statsSplit (parseMsquicWith).
	mapOnly bool
}

func (m *msquicParser) emitMeta() {
	mm := m.meta
	mm.Params = make(map[string]int64, len(m.meta.Params))
	for k, v := range m.meta.Params {
		mm.Params[k] = v
	}
	mm.Notes = append([]string(nil), m.meta.Notes...)
	m.h.Meta(mm)
}

func (m *msquicParser) line(line []byte) error {
	switch {
	case bytes.HasPrefix(line, []byte("[mq_")):
		return m.harnessLine(line)
	case bytes.HasPrefix(line, []byte("[conn]")):
		m.lines++
		return m.connLine(string(line))
	}
	return nil
}

func (m *msquicParser) harnessLine(line []byte) error {
	end := bytes.IndexByte(line, ']')
	if end < 0 {
		return fmt.Errorf("harness line without closing ']'")
	}
	role := line[4:end]
	rest := bytes.TrimSpace(line[end+1:])
	if !bytes.HasPrefix(rest, []byte("t_us=")) {
		return nil // a harness line without a time is not evidence
	}
	m.lines++
	if m.meta.Vantage == "" {
		if v := vantage(string(role)); v != "" {
			m.meta.Vantage = v
			m.emitMeta()
		}
	}
	sp := bytes.IndexByte(rest, ' ')
	if sp < 0 {
		sp = len(rest)
	}
	t, ok := smallInt(bstr(rest[5:sp]), 18)
	if !ok {
		var err error
		if t, err = strconv.ParseInt(bstr(rest[5:sp]), 10, 64); err != nil {
			return fmt.Errorf("bad t_us %q", rest[5:sp])
		}
	}
	m.t = t
	msgB := bytes.TrimSpace(rest[sp:])
	if verb, args, _ := bytes.Cut(msgB, []byte(" ")); string(verb) == "STATS" && !m.mapOnly {
		// Nearly every line: its STATS values straight from the split,
		// without a map (keyValues' reading, when it can).
		var v msquicStatValues
		if statsSplit(args, &v) {
			return m.statsFrom(&v)
		}
	}
	msg := string(msgB)
	verb, args, _ := strings.Cut(msg, " ")
	return m.verb(verb, keyValues(args))
}

// statsSplit reads a STATS line's key=value fields eight bytes at a time
// and fills sv with the values of the msquicStatKeys, a later field
// overwriting an earlier one of the same key: keyValues' reading, without
// its map. It returns false, having read nothing reliable, at the first
// blank other than a space, control byte or byte >= 0x80 (one word says
// whether there is one, kvOdd, and where its spaces and '=' are,
// plainEq); such a line is left to keyValues, which reads every blank as
// strings.Fields does.
func statsSplit(s []byte, sv *msquicStatValues) bool {
	start, eq, i := 0, -1, 0
	for ; i+8 <= len(s); i += 8 {
		w := binary.LittleEndian.Uint64(s[i:])
		if kvOdd(w) != 0 {
			return false
		}
		sp, eqs := plainEq(w, ' '), plainEq(w, '=')
		for ; sp != 0; sp &= sp - 1 {
			upTo := sp ^ (sp - 1) // the lanes up to this space
			if e := eqs & upTo; eq < 0 && e != 0 {
				eq = i + bits.TrailingZeros64(e)>>3
			}
			eqs &^= upTo
			j := i + bits.TrailingZeros64(sp)>>3
			if eq >= 0 {
				sv.set(s, start, eq, j)
			}
			start, eq = j+1, -1
		}
		if eq < 0 && eqs != 0 {
			eq = i + bits.TrailingZeros64(eqs)>>3
		}
	}
	for ; i < len(s); i++ {
		switch c := s[i]; {
		case c == '=':
			if eq < 0 {
				eq = i
			}
		case c == ' ':
			if eq >= 0 {
				sv.set(s, start, eq, i)
			}
			start, eq = i+1, -1
		case c < 0x21 || c >= 0x80:
			return false
		}
	}
	if eq >= 0 {
		sv.set(s, start, eq, len(s))
	}
	return true
}

// set records the field s[ks:ve], whose first '=' is at eq, if its key is
// one of the msquicStatKeys.
func (v *msquicStatValues) set(s []byte, ks, eq, ve int) {
	if k := msquicStatKey(bstr(s[ks:eq])); k >= 0 {
		v.val[k], v.has[k] = bstr(s[eq+1:ve]), true
	}
}

// kvOdd is not zero when a byte of x is below 0x20 (a control byte: a
// blank other than a space, or not a blank at all) or above 0x7f: a word
// split does not take. Zero means every byte is in 0x20-0x7f.
func kvOdd(x uint64) uint64 {
	// x+0x60 in a lane below 0x80 has its high bit set exactly when the
	// lane is >= 0x20, and carries into no other lane. A lane >= 0x80 may
	// carry, but its own high bit makes the result non-zero anyway.
	return (x | ^(x + lanes1*0x60)) & lanesHi
}

// plainEq has the high bit set in exactly the lanes of x that are c, for
// c and every byte of x in 0x00-0x7f (kvOdd(x) == 0): y+0x7f, y below 0x80,
// carries into no other lane and has its high bit set exactly when y != 0.
func plainEq(x uint64, c byte) uint64 {
	return ^(x ^ lanes1*uint64(c) + lanes1*0x7f) & lanesHi
}

// kvMap is a harness line's key=value fields, each key's last value.
type kvMap map[string]string

// verb handles a harness line's message.
func (m *msquicParser) verb(verb string, kv kvMap) error {
	t := m.t
	switch verb {
	case "STATS":
		return m.stats(kv)
	case "CONNECTED":
		m.h.Event(timeline.Event{TimeUS: t, Kind: timeline.PathEvent, PacketNumber: -1,
			From: kv["remote"], To: kv["local"], Detail: "connected"})
	case "SERVER_PEER_ADDR_CHANGED", "PEER_ADDR_CHANGED", "CLIENT_PEER_ADDR_CHANGED":
		m.meta.LogsAddresses = true
		m.h.Event(timeline.Event{TimeUS: t, Kind: timeline.PathEvent, PacketNumber: -1,
			From: kv["new_remote"], Detail: strings.ToLower(verb)})
	}
	return nil
}

func keyValues(s string) kvMap {
	kv := kvMap{}
	for _, f := range strings.Fields(s) {
		if k, v, ok := strings.Cut(f, "="); ok {
			kv[k] = v
		}
	}
	return kv
}

// msquicStats are the STATS keys a sample reads, in order; msquicStatKeys
// adds send_mtu.
var msquicStats = [...]struct {
	key   string
	field timeline.Field
	rtt   bool // msquicNoRTT means "no measurement"
}{
	{"cwnd", timeline.FieldCwnd, false},
	{"bytes_in_flight", timeline.FieldBytesInFlight, false},
	{"srtt_us", timeline.FieldSmoothedRTT, true},
	{"min_rtt_us", timeline.FieldMinRTT, true},
	{"latest_rtt_us", timeline.FieldLatestRTT, true},
	{"rtt_var_us", timeline.FieldRTTVar, false},
}

const msquicSendMTU = len(msquicStats) // send_mtu's index in msquicStatValues

// msquicStatKey is k's index in msquicStats, msquicSendMTU for "send_mtu",
// -1 for any other key (TestMsquicStatKey holds it to the table).
func msquicStatKey(k string) int {
	switch k {
	case "cwnd":
		return 0
	case "bytes_in_flight":
		return 1
	case "srtt_us":
		return 2
	case "min_rtt_us":
		return 3
	case "latest_rtt_us":
		return 4
	case "rtt_var_us":
		return 5
	case "send_mtu":
		return msquicSendMTU
	}
	return -1
}

// msquicStatValues are a STATS line's values of the keys a sample reads.
type msquicStatValues struct {
	val [msquicSendMTU + 1]string
	has [msquicSendMTU + 1]bool
}

func (m *msquicParser) stats(kv kvMap) error {
	var v msquicStatValues
	for i := range v.val {
		key := "send_mtu"
		if i < msquicSendMTU {
			key = msquicStats[i].key
		}
		v.val[i], v.has[i] = kv[key]
	}
	return m.statsFrom(&v)
}

// statsFrom turns a STATS line's values into a sample (and a send_mtu
// change into a parameters event). The values are views of the line.
func (m *msquicParser) statsFrom(v *msquicStatValues) error {
	s := m.last
	s.TimeUS = m.t
	s.Fields = 0
	for i, g := range msquicStats {
		if !v.has[i] {
			continue
		}
		n, ok := smallInt(v.val[i], 18)
		if !ok {
			var err error
			if n, err = strconv.ParseInt(v.val[i], 10, 64); err != nil {
				return fmt.Errorf("STATS %s=%q is not an integer", g.key, v.val[i])
			}
		}
		if g.rtt && n == msquicNoRTT {
			n = 0
		}
		s.Set(g.field, n)
	}
	if v.has[msquicSendMTU] {
		mv := v.val[msquicSendMTU]
		mtu, ok := smallInt(mv, 18)
		if !ok {
			var err error
			if mtu, err = strconv.ParseInt(mv, 10, 64); err != nil {
				return fmt.Errorf("STATS send_mtu=%q is not an integer", mv)
			}
		}
		if mtu != m.mtu {
			m.mtu = mtu
			m.meta.Params["send_mtu"] = mtu
			m.h.Event(timeline.Event{TimeUS: m.t, Kind: timeline.ParametersSet, PacketNumber: -1,
				Detail: "send_mtu=" + mv})
		}
	}
	if s.Fields == 0 {
		return nil
	}
	m.last = s
	m.h.Sample(s)
	return nil
}

// connLine handles msquic's own trace lines: "[conn][0x…] MESSAGE [Event:file:line]".
func (m *msquicParser) connLine(line string) error {
	msg := line[len("[conn]"):]
	if strings.HasPrefix(msg, "[") {
		if i := strings.IndexByte(msg, ']'); i >= 0 {
			msg = msg[i+1:]
		}
	}
	if i := strings.LastIndex(msg, " ["); i >= 0 && strings.HasSuffix(msg, "]") {
		msg = msg[:i]
	}
	msg = strings.TrimSpace(msg)
	ev := timeline.Event{TimeUS: m.t, PacketNumber: -1, Kind: timeline.PathEvent}
	switch {
	case strings.HasPrefix(msg, "New Remote IP: "):
		ev.From = strings.TrimSpace(strings.TrimPrefix(msg, "New Remote IP: "))
		ev.Detail = "new_remote_ip"
		m.meta.LogsAddresses = true
	case strings.HasPrefix(msg, "New Local IP: "):
		ev.To = strings.TrimSpace(strings.TrimPrefix(msg, "New Local IP: "))
		ev.Detail = "new_local_ip"
	case strings.HasPrefix(msg, "Congestion event"):
		ev.Kind = timeline.CongestionEvent
		ev.Detail = msg
	case strings.HasPrefix(msg, "Path["):
		i := strings.IndexByte(msg, ']')
		if i < 0 {
			return fmt.Errorf("path line without closing ']': %q", excerpt([]byte(msg)))
		}
		ev.PathID = msg[len("Path["):i]
		ev.Detail = strings.TrimSpace(msg[i+1:])
	default:
		return nil
	}
	m.h.Event(ev)
	return nil
}
