package parsers

// The parsers' readers as they were before the hand-written scanner (gjson
// and encoding/json), the oracle the differential fuzz targets compare
// against (oracle_diff_test.go). Events are mapped onto the timeline by the
// parsers' own mapper (qlog.go): FuzzJtape holds every value the mapper
// reads from the tape to gjson's, so the mapping is not kept twice.

import (
	"bytes"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/migaudit/migaudit/parsers/timeline"
	"github.com/tidwall/gjson"
)

// oparsePicoquic reads picoquic's single-document qlog with every event
// decoded by encoding/json, as before the event scanner.
func oparsePicoquic(in *input, h timeline.Handler) error { return parsePicoquicWith(in, h, true) }

// dataAndPath are a JSON-SEQ record's last "data" and "path" members, as
// the record loop's ForEach leaves them.
func dataAndPath(tape *jtape, rec []byte) (data, path jv) {
	tape.parse(rec)
	root := tape.root()
	data, path = root.missing(), root.missing()
	root.ForEach(func(k jkey, v jv) bool {
		switch k.Str {
		case "data":
			data = v
		case "path":
			path = v
		}
		return true
	})
	return data, path
}

// oparseJSONSeq drives a JSON-SEQ oqlog: a header record, then one event per
// record with "time" (ms unless the header says otherwise), "name" and
// "data".
func oparseJSONSeq(in *input, h timeline.Handler, f seqFormat) error {
	s := &seqReader{br: in.r}
	q := newQlog(h, f.format)
	var tape jtape
	q.lostFromCounters = f.lostFromCounters
	q.noPathNote = f.noPathNote
	q.meta.Notes = append(q.meta.Notes, f.notes...)
	timeScale := 1000.0 // oqlog default: milliseconds
	delta := false
	var refTime float64
	var prevTime float64
	headerSeen := false
	for {
		rec, n, off, err := s.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return in.readErr(err)
		}
		str := bstr(rec)
		if !gjson.Valid(str) {
			if truncatedJSON(rec) && s.restIsBlank() {
				q.h.Warn(warning(n, off, fmt.Sprintf("final record truncated (%d bytes, cut off mid-write); ignored, the %d records before it are used", len(rec), n-1)))
				break
			}
			return in.errorf(n, off, "invalid JSON")
		}
		root := gjson.Parse(str)
		if !root.IsObject() {
			return in.errorf(n, off, "record is not a JSON object")
		}
		var tRes, nameRes gjson.Result
		isHeader := false
		root.ForEach(func(k, v gjson.Result) bool {
			switch k.Str {
			case "time":
				tRes = v
			case "name":
				nameRes = v
			case "qlog_version", "qlog_format", "file_schema", "trace", "traces", "serialization_format":
				isHeader = true
			}
			return true
		})
		if isHeader && !nameRes.Exists() {
			if headerSeen {
				return in.errorf(n, off, "second qlog header record")
			}
			headerSeen = true
			if root.Get("traces").IsArray() {
				return in.errorf(n, off, "a single-document qlog (\"traces\"), not JSON-SEQ: use --format %s", FormatPicoquic)
			}
			tr := root.Get("trace")
			q.meta.Vantage = vantage(tr.Get("vantage_point.type").Str)
			q.meta.Implementation = implementationFrom(f.impl, tr.Get("vantage_point.name").Str, root.Get("title").Str, tr.Get("title").Str)
			switch tr.Get("configuration.time_units").Str {
			case "us":
				timeScale = 1
			case "ns":
				timeScale = 0.001
			}
			cf := tr.Get("common_fields")
			switch cf.Get("time_format").Str {
			case "delta":
				delta = true
			case "absolute":
				if rt := cf.Get("reference_time"); rt.Type == gjson.Number {
					refTime = rt.Float()
				}
			}
			q.emitMeta()
			continue
		}
		if !nameRes.Exists() {
			return in.errorf(n, off, `event without "name"`)
		}
		if nameRes.Type != gjson.String {
			return in.errorf(n, off, `"name" is not a string`)
		}
		if !tRes.Exists() {
			return in.errorf(n, off, `event %q without "time"`, nameRes.Str)
		}
		if tRes.Type != gjson.Number {
			return in.errorf(n, off, `event %q: "time" is not a number`, nameRes.Str)
		}
		t := tRes.Float()
		if delta {
			t += prevTime
			prevTime = t
		}
		t -= refTime
		// The record is mapped by the parsers' own mapper on the tape:
		// FuzzJtape holds the tape's values to gjson's, so what is compared
		// here is the record reading around it.
		data, path := dataAndPath(&tape, rec)
		q.rec, q.off = n, off
		if err := q.event(roundUS(t*timeScale), nameRes.Str, data, q.pathID(path)); err != nil {
			return in.errorf(n, off, "%v", err)
		}
	}
	q.finish()
	return nil
}

// The msquic parser before the map-free key=value scan.

func oparseMsquic(in *input, h timeline.Handler) error {
	m := &omsquicParser{h: h, meta: timeline.Meta{Format: FormatMsquic, Implementation: "msquic", Params: map[string]int64{}}}
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

type omsquicParser struct {
	h      timeline.Handler
	meta   timeline.Meta
	t      int64
	lines  int
	last   timeline.Sample
	mtu    int64
	intern map[string]string
}

func (m *omsquicParser) emitMeta() {
	mm := m.meta
	mm.Params = make(map[string]int64, len(m.meta.Params))
	for k, v := range m.meta.Params {
		mm.Params[k] = v
	}
	mm.Notes = append([]string(nil), m.meta.Notes...)
	m.h.Meta(mm)
}

func (m *omsquicParser) line(line []byte) error {
	switch {
	case bytes.HasPrefix(line, []byte("[mq_")):
		return m.harnessLine(line)
	case bytes.HasPrefix(line, []byte("[conn]")):
		m.lines++
		return m.connLine(string(line))
	}
	return nil
}

func (m *omsquicParser) harnessLine(line []byte) error {
	end := bytes.IndexByte(line, ']')
	if end < 0 {
		return fmt.Errorf("harness line without closing ']'")
	}
	role := string(line[4:end])
	rest := bytes.TrimSpace(line[end+1:])
	if !bytes.HasPrefix(rest, []byte("t_us=")) {
		return nil // a harness line without a time is not evidence
	}
	m.lines++
	if m.meta.Vantage == "" {
		if v := vantage(role); v != "" {
			m.meta.Vantage = v
			m.emitMeta()
		}
	}
	sp := bytes.IndexByte(rest, ' ')
	if sp < 0 {
		sp = len(rest)
	}
	t, err := strconv.ParseInt(string(rest[5:sp]), 10, 64)
	if err != nil {
		return fmt.Errorf("bad t_us %q", rest[5:sp])
	}
	m.t = t
	msg := string(bytes.TrimSpace(rest[sp:]))
	verb, args, _ := strings.Cut(msg, " ")
	kv := okeyValues(args)
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

func okeyValues(s string) map[string]string {
	kv := map[string]string{}
	for _, f := range strings.Fields(s) {
		if k, v, ok := strings.Cut(f, "="); ok {
			kv[k] = v
		}
	}
	return kv
}

func (m *omsquicParser) stats(kv map[string]string) error {
	s := m.last
	s.TimeUS = m.t
	s.Fields = 0
	get := func(key string, field timeline.Field, dst *int64, rtt bool) error {
		v, ok := kv[key]
		if !ok {
			return nil
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return fmt.Errorf("STATS %s=%q is not an integer", key, v)
		}
		if rtt && n == msquicNoRTT {
			n = 0
		}
		*dst = n
		s.Fields |= field
		return nil
	}
	for _, g := range []struct {
		key   string
		field timeline.Field
		dst   *int64
		rtt   bool
	}{
		{"cwnd", timeline.FieldCwnd, &s.CwndBytes, false},
		{"bytes_in_flight", timeline.FieldBytesInFlight, &s.BytesInFlight, false},
		{"srtt_us", timeline.FieldSmoothedRTT, &s.SmoothedRTTUS, true},
		{"min_rtt_us", timeline.FieldMinRTT, &s.MinRTTUS, true},
		{"latest_rtt_us", timeline.FieldLatestRTT, &s.LatestRTTUS, true},
		{"rtt_var_us", timeline.FieldRTTVar, &s.RTTVarUS, false},
	} {
		if err := get(g.key, g.field, g.dst, g.rtt); err != nil {
			return err
		}
	}
	if v, ok := kv["send_mtu"]; ok {
		mtu, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return fmt.Errorf("STATS send_mtu=%q is not an integer", v)
		}
		if mtu != m.mtu {
			m.mtu = mtu
			m.meta.Params["send_mtu"] = mtu
			m.h.Event(timeline.Event{TimeUS: m.t, Kind: timeline.ParametersSet, PacketNumber: -1,
				Detail: "send_mtu=" + v})
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
func (m *omsquicParser) connLine(line string) error {
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
