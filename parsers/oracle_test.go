package parsers

// The parsers' scanners as they were before the hand-written one (gjson and
// encoding/json), kept as the oracle the differential fuzz targets compare
// against (oracle_diff_test.go). They feed the parsers' own qlog mapper
// through gv, so a difference is one of scanning or of reading a value
// (gjson's Str, Float, Int against jv's), never of mapping. Not used
// outside tests.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/migaudit/migaudit/parsers/timeline"
	"github.com/tidwall/gjson"
)

// gv is gjson's reading of a value, given to the parsers' own qlog mapper
// (qlog[gv]): the oracle scans records with gjson and encoding/json, the
// parsers with their hand-written tape (jv), and the mapping from a record
// to the timeline is the same code on both sides. Each method is gjson's
// own (Get is one level, first match, as jv's is); first and next walk a
// container's members in order.
type gv struct {
	r   gjson.Result
	key string
	sib *[]gv // the members of the parent container, for next
	idx int
}

func (v gv) Exists() bool     { return v.r.Exists() }
func (v gv) IsObject() bool   { return v.r.IsObject() }
func (v gv) IsArray() bool    { return v.r.IsArray() }
func (v gv) Type() gjson.Type { return v.r.Type }
func (v gv) Raw() string      { return v.r.Raw }
func (v gv) Str() string      { return v.r.Str }
func (v gv) Float() float64   { return v.r.Float() }
func (v gv) Int() int64       { return v.r.Int() }
func (v gv) String() string   { return v.r.String() }
func (v gv) Key() string      { return v.key }

func (v gv) Get(key string) gv {
	var out gv
	if v.r.IsObject() {
		v.r.ForEach(func(k, x gjson.Result) bool {
			if k.Str == key {
				out = gv{r: x, key: k.Str}
				return false
			}
			return true
		})
	}
	return out
}

func (v gv) first() gv {
	if !v.r.IsObject() && !v.r.IsArray() {
		return gv{}
	}
	var c []gv
	v.r.ForEach(func(k, x gjson.Result) bool {
		c = append(c, gv{r: x, key: k.Str})
		return true
	})
	if len(c) == 0 {
		return gv{}
	}
	for i := range c {
		c[i].sib, c[i].idx = &c, i
	}
	return c[0]
}

func (v gv) next(gv) gv {
	if v.sib == nil || v.idx+1 >= len(*v.sib) {
		return gv{}
	}
	return (*v.sib)[v.idx+1]
}

func (v gv) ForEach(fn func(k jkey, v gv) bool) {
	v.r.ForEach(func(k, x gjson.Result) bool { return fn(jkey{Str: k.Str, Num: k.Num}, gv{r: x, key: k.Str}) })
}

// oparsePicoquic reads picoquic's oqlog: oqlog draft-00, ONE JSON document
// {"qlog_version":"draft-00","traces":[{"vantage_point":…,"event_fields":
// ["relative_time","category","event","data"],"configuration":{"time_units":
// "us"},"events":[[0,"transport","datagram_received",{…}],…]}]}.
//
// The document is walked with encoding/json's token stream and each event
// is decoded on its own, so memory is bounded by the largest event, not the
// trace. Times and RTTs are in the trace's time_units (picoquic: µs; the
// draft-00 default is ms). picoquic logs addresses on datagram events
// (addr_from/addr_to), and writes events slightly out of time order (an
// event is stamped when its packet was processed); the order is kept as
// logged.
func oparsePicoquic(in *input, h timeline.Handler) error {
	p := &opicoquicParser{in: in, dec: json.NewDecoder(in.r), q: newQlog[gv](h, FormatPicoquic)}
	err := p.document()
	if err == nil {
		p.q.finish()
		return nil
	}
	var stop oerrTruncatedDoc
	if errors.As(err, &stop) {
		if p.events == 0 {
			return fmt.Errorf("parse %s: document ends at byte %d before any event", in.name, p.dec.InputOffset())
		}
		p.q.h.Warn(warning(p.events+1, stop.offset,
			fmt.Sprintf("document truncated at byte %d (cut off mid-write); the %d events before it are used", stop.offset, p.events)))
		p.q.finish()
		return nil
	}
	return err
}

type opicoquicParser struct {
	in     *input
	dec    *json.Decoder
	q      *qlog[gv]
	raw    json.RawMessage
	events int
	title  string
	start  int64 // offset of the value being decoded, for messages
}

// oerrTruncatedDoc is the document ending early: a warning, not an error.
type oerrTruncatedDoc struct{ offset int64 }

func (e oerrTruncatedDoc) Error() string { return fmt.Sprintf("truncated at byte %d", e.offset) }

// fail classifies a decoder error at the current position.
func (p *opicoquicParser) fail(err error, what string) error {
	if p.start < p.dec.InputOffset() && what != "event" {
		p.start = p.dec.InputOffset()
	}
	if errors.Is(err, errTruncatedGzip) {
		return p.in.readErr(err)
	}
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return oerrTruncatedDoc{offset: p.start}
	}
	return p.in.errorf(p.events+1, p.start, "%s: %v", what, err)
}

// nextStart is the offset of the next value: the decoder's offset plus the
// separators it has not consumed yet.
func (p *opicoquicParser) nextStart() int64 {
	off := p.dec.InputOffset()
	var b [1]byte
	r := p.dec.Buffered()
	for {
		if n, _ := r.Read(b[:]); n == 0 {
			return off
		}
		switch b[0] {
		case ' ', '\t', '\r', '\n', ',', ':':
			off++
		default:
			return off
		}
	}
}

func (p *opicoquicParser) delim(want json.Delim, what string) error {
	tok, err := p.dec.Token()
	if err != nil {
		return p.fail(err, what)
	}
	if d, ok := tok.(json.Delim); !ok || d != want {
		return p.in.errorf(p.events+1, p.dec.InputOffset(), "%s: expected %q, found %v", what, want, tok)
	}
	return nil
}

func (p *opicoquicParser) key(what string) (string, error) {
	tok, err := p.dec.Token()
	if err != nil {
		return "", p.fail(err, what)
	}
	k, ok := tok.(string)
	if !ok {
		return "", p.in.errorf(p.events+1, p.dec.InputOffset(), "%s: expected a key, found %v", what, tok)
	}
	return k, nil
}

func (p *opicoquicParser) value(v any, what string) error {
	if err := p.dec.Decode(v); err != nil {
		var ute *json.UnmarshalTypeError
		if errors.As(err, &ute) {
			return p.in.errorf(p.events+1, p.dec.InputOffset(), "%s: %v", what, err)
		}
		return p.fail(err, what)
	}
	return nil
}

func (p *opicoquicParser) document() error {
	if err := p.delim('{', "qlog document"); err != nil {
		return err
	}
	sawTraces := false
	for p.dec.More() {
		k, err := p.key("qlog document")
		if err != nil {
			return err
		}
		switch k {
		case "traces":
			sawTraces = true
			if err := p.delim('[', `"traces"`); err != nil {
				return err
			}
			for p.dec.More() {
				if err := p.trace(); err != nil {
					return err
				}
			}
			if err := p.delim(']', `"traces"`); err != nil {
				return err
			}
		case "title":
			var s any
			if err := p.value(&s, `"title"`); err != nil {
				return err
			}
			p.title, _ = s.(string)
		default:
			if err := p.value(&p.raw, fmt.Sprintf("%q", k)); err != nil {
				return err
			}
		}
	}
	if err := p.delim('}', "qlog document"); err != nil {
		return err
	}
	if !sawTraces {
		return fmt.Errorf("parse %s: qlog document has no \"traces\"", p.in.name)
	}
	return nil
}

func (p *opicoquicParser) trace() error {
	if err := p.delim('{', "trace"); err != nil {
		return err
	}
	fields := []string{"relative_time", "category", "event", "data"}
	scale := 1000.0 // draft-00 default unit: ms
	var title string
	for p.dec.More() {
		k, err := p.key("trace")
		if err != nil {
			return err
		}
		switch k {
		case "vantage_point":
			var vp struct{ Name, Type string }
			if err := p.value(&vp, `"vantage_point"`); err != nil {
				return err
			}
			p.q.meta.Vantage = vantage(vp.Type)
			p.q.meta.Implementation = implementationFrom("picoquic", vp.Name, p.title, title)
		case "title":
			var s any
			if err := p.value(&s, `"title"`); err != nil {
				return err
			}
			title, _ = s.(string)
			if p.q.meta.Implementation == "" {
				p.q.meta.Implementation = implementationFrom("picoquic", title, p.title)
			}
		case "event_fields":
			if err := p.value(&fields, `"event_fields"`); err != nil {
				return err
			}
		case "configuration":
			var c struct {
				TimeUnits string `json:"time_units"`
			}
			if err := p.value(&c, `"configuration"`); err != nil {
				return err
			}
			switch c.TimeUnits {
			case "us":
				scale = 1
			case "ms", "":
				scale = 1000
			default:
				return p.in.errorf(p.events+1, p.dec.InputOffset(), "unknown time_units %q", c.TimeUnits)
			}
		case "events":
			p.q.rttScale = scale
			p.q.emitMeta()
			if err := p.eventList(fields, scale); err != nil {
				return err
			}
		default:
			if err := p.value(&p.raw, fmt.Sprintf("%q", k)); err != nil {
				return err
			}
		}
	}
	return p.delim('}', "trace")
}

func (p *opicoquicParser) eventList(fields []string, scale float64) error {
	idx := map[string]int{}
	for i, f := range fields {
		idx[f] = i
	}
	at := func(name string, alt string) int {
		if i, ok := idx[name]; ok {
			return i
		}
		if i, ok := idx[alt]; ok {
			return i
		}
		return -1
	}
	iTime, iCat, iEvent, iData := at("relative_time", "time"), at("category", ""), at("event", "name"), at("data", "")
	iPath := at("path_id", "path")
	if iTime < 0 || iEvent < 0 {
		return p.in.errorf(p.events+1, p.dec.InputOffset(), "event_fields %q name no time or event column", fields)
	}
	if err := p.delim('[', `"events"`); err != nil {
		return err
	}
	var name []byte
	for p.dec.More() {
		p.raw = p.raw[:0]
		p.start = p.nextStart()
		if err := p.dec.Decode(&p.raw); err != nil {
			return p.fail(err, "event")
		}
		p.events++
		off := p.dec.InputOffset() - int64(len(p.raw))
		ev := gjson.Parse(bstr(p.raw))
		var t, cat, evn, data, path gjson.Result
		switch {
		case ev.IsArray():
			ev.ForEach(func(k, v gjson.Result) bool {
				switch int(k.Num) {
				case iTime:
					t = v
				case iCat:
					cat = v
				case iEvent:
					evn = v
				case iData:
					data = v
				case iPath:
					path = v
				}
				return true
			})
		case ev.IsObject():
			// Named-field events (later oqlog drafts in a single document).
			t, evn, data, path = ev.Get("time"), ev.Get("name"), ev.Get("data"), ev.Get("path")
			cat = ev.Get("category")
		default:
			return p.in.errorf(p.events, off, "event is neither an array nor an object")
		}
		if t.Type != gjson.Number {
			return p.in.errorf(p.events, off, "event time is missing or not a number")
		}
		if evn.Type != gjson.String {
			return p.in.errorf(p.events, off, "event name is missing or not a string")
		}
		name = append(name[:0], cat.Str...)
		if len(name) > 0 {
			name = append(name, ':')
		}
		name = append(name, evn.Str...)
		p.q.rec, p.q.off = p.events, off
		if err := p.q.event(roundUS(t.Float()*scale), bstr(name), gv{r: data}, p.q.pathID(gv{r: path})); err != nil {
			return p.in.errorf(p.events, off, "%v", err)
		}
	}
	return p.delim(']', `"events"`)
}

// oparseJSONSeq drives a JSON-SEQ oqlog: a header record, then one event per
// record with "time" (ms unless the header says otherwise), "name" and
// "data".
func oparseJSONSeq(in *input, h timeline.Handler, f seqFormat) error {
	s := &seqReader{br: in.r}
	q := newQlog[gv](h, f.format)
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
		var tRes, nameRes, dataRes, pathRes gjson.Result
		isHeader := false
		root.ForEach(func(k, v gjson.Result) bool {
			switch k.Str {
			case "time":
				tRes = v
			case "name":
				nameRes = v
			case "data":
				dataRes = v
			case "path":
				pathRes = v
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
		q.rec, q.off = n, off
		if err := q.event(roundUS(t*timeScale), nameRes.Str, gv{r: dataRes}, q.pathID(gv{r: pathRes})); err != nil {
			return in.errorf(n, off, "%v", err)
		}
	}
	q.finish()
	return nil
}

// The msquic parser before the map-free key=value scan.

func oparseMsquic(in *input, h timeline.Handler) error {
	m := &omsquicParser{h: h, meta: timeline.Meta{Format: FormatMsquic, Implementation: "msquic", Params: map[string]int64{}}}
	s := &seqReader{br: in.r}
	for {
		line, n, off, err := s.nextLine()
		if err == io.EOF {
			break
		}
		if err != nil {
			return in.readErr(err)
		}
		if err := m.line(line); err != nil {
			return in.errorf(n, off, "%v", err)
		}
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
