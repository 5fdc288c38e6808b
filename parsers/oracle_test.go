package parsers

// The parsers as they were before the hand-written scanner (gjson and
// encoding/json), kept verbatim as the oracle the differential fuzz targets
// compare against (oracle_diff_test.go). Not used outside tests.

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

// oqlog maps oqlog events — whatever the dialect, once a record is reduced to
// (time, name, data) — onto the timeline model. Names are matched on the
// part after the last ':' so "recovery:metrics_updated" (ngtcp2, quic-go),
// "quic:recovery_metrics_updated" (quiche) and picoquic's category/event
// pairs land in the same place.
//
// Path events put the peer's address in From and the local one in To.
type oqlog struct {
	h    timeline.Handler
	meta timeline.Meta
	// rttScale converts an RTT value to µs (1000 for milliseconds).
	rttScale float64
	last     map[string]timeline.Sample
	ranges   []timeline.Range
	intern   map[string]string
	// lostFromCounters: losses come as counter deltas (quiche).
	lostFromCounters bool
	sawAddr          bool
	// noPathNote replaces the generic note when metrics had no path id.
	noPathNote string
	// rec and off locate the record being handled, for warnings.
	rec int
	off int64
}

func onewQlog(h timeline.Handler, format string) *oqlog {
	return &oqlog{
		h:        h,
		meta:     timeline.Meta{Format: format, Params: map[string]int64{}},
		rttScale: 1000,
		last:     map[string]timeline.Sample{},
		intern:   map[string]string{},
	}
}

// str returns a copy of s that outlives the record buffer, shared between
// equal values (addresses, packet types and path ids repeat endlessly).
func (q *oqlog) str(s string) string {
	if v, ok := q.intern[s]; ok {
		return v
	}
	v := strings.Clone(s)
	if len(q.intern) < 4096 {
		q.intern[v] = v
	}
	return v
}

func (q *oqlog) emitMeta() {
	m := q.meta
	m.Params = make(map[string]int64, len(q.meta.Params))
	for k, v := range q.meta.Params {
		m.Params[k] = v
	}
	m.Notes = append([]string(nil), q.meta.Notes...)
	q.h.Meta(m)
}

func (q *oqlog) finish() {
	q.meta.LogsAddresses = q.sawAddr
	if !q.meta.PathIDs {
		note := q.noPathNote
		if note == "" {
			note = "metrics carry no path id"
		}
		q.meta.Notes = append(q.meta.Notes, note)
	}
	q.emitMeta()
}

// pathID renders a oqlog path identifier (string or number).
func (q *oqlog) pathID(v gjson.Result) string {
	switch v.Type {
	case gjson.String:
		return q.str(v.Str)
	case gjson.Number:
		return q.str(v.Raw)
	}
	return ""
}

// event handles one oqlog event at time t (µs).
func (q *oqlog) event(t int64, name string, data gjson.Result, path string) error {
	if data.Exists() && !data.IsObject() {
		return fmt.Errorf("event %q: \"data\" is not an object", name)
	}
	switch base := baseName(name); base {
	case "metrics_updated", "recovery_metrics_updated":
		return q.metrics(t, name, data, path)
	case "packet_sent":
		return q.packet(t, timeline.PacketSent, data, path)
	case "packet_received":
		return q.packet(t, timeline.PacketReceived, data, path)
	case "datagram_sent", "datagrams_sent":
		return q.datagram(t, timeline.DatagramSent, data, path)
	case "datagram_received", "datagrams_received":
		return q.datagram(t, timeline.DatagramReceived, data, path)
	case "packet_lost":
		return q.lost(t, data, path)
	case "parameters_set":
		return q.params(t, data, path)
	case "congestion_state_updated":
		q.h.Event(timeline.Event{TimeUS: t, Kind: timeline.CongestionStateUpdated, PathID: path,
			PacketNumber: -1, Detail: q.str(data.Get("new").Str)})
	case "connection_started":
		q.h.Event(timeline.Event{TimeUS: t, Kind: timeline.PathEvent, PathID: path, PacketNumber: -1,
			From: q.addr(data.Get("remote")), To: q.addr(data.Get("local")), Detail: "connection_started"})
	case "mtu_updated":
		if v := data.Get("mtu"); v.Type == gjson.Number {
			q.meta.Params["mtu"] = v.Int()
			q.h.Event(timeline.Event{TimeUS: t, Kind: timeline.ParametersSet, PathID: path, PacketNumber: -1,
				Detail: "mtu=" + v.Raw})
		}
	default:
		if strings.Contains(base, "path") || strings.Contains(base, "migration") {
			if pid := q.pathID(data.Get("path_id")); pid != "" {
				path = pid
			}
			detail := q.str(name) // fixed here too: name may be a view of the record
			if data.Exists() {
				detail += " " + compact(data.Raw, 300)
			}
			q.h.Event(timeline.Event{TimeUS: t, Kind: timeline.PathEvent, PathID: path, PacketNumber: -1,
				Detail: detail})
		}
	}
	return nil
}

func (q *oqlog) number(name, key string, v gjson.Result) (float64, error) {
	if v.Type != gjson.Number {
		return 0, fmt.Errorf("event %q: %q is not a number (%s)", name, key, excerpt([]byte(v.Raw)))
	}
	return v.Float(), nil
}

func (q *oqlog) integer(name, key string, v gjson.Result) (int64, error) {
	if v.Type != gjson.Number {
		return 0, fmt.Errorf("event %q: %q is not a number (%s)", name, key, excerpt([]byte(v.Raw)))
	}
	if i, err := strconv.ParseInt(v.Raw, 10, 64); err == nil {
		return i, nil
	}
	return roundUS(v.Float()), nil
}

func (q *oqlog) metrics(t int64, name string, data gjson.Result, path string) error {
	var r timeline.Sample
	var f timeline.Field
	var err error
	var lost int64
	data.ForEach(func(k, v gjson.Result) bool {
		var x float64
		switch k.Str {
		case "congestion_window", "cwnd":
			r.CwndBytes, err = q.integer(name, k.Str, v)
			f |= timeline.FieldCwnd
		case "bytes_in_flight":
			r.BytesInFlight, err = q.integer(name, k.Str, v)
			f |= timeline.FieldBytesInFlight
		case "smoothed_rtt":
			x, err = q.number(name, k.Str, v)
			r.SmoothedRTTUS = roundUS(x * q.rttScale)
			f |= timeline.FieldSmoothedRTT
		case "min_rtt":
			x, err = q.number(name, k.Str, v)
			r.MinRTTUS = roundUS(x * q.rttScale)
			f |= timeline.FieldMinRTT
		case "latest_rtt":
			x, err = q.number(name, k.Str, v)
			r.LatestRTTUS = roundUS(x * q.rttScale)
			f |= timeline.FieldLatestRTT
		case "rtt_variance", "rttvar":
			x, err = q.number(name, k.Str, v)
			r.RTTVarUS = roundUS(x * q.rttScale)
			f |= timeline.FieldRTTVar
		case "path_id":
			if pid := q.pathID(v); pid != "" {
				path = pid
			}
		case "cf_lost_packets":
			if q.lostFromCounters {
				lost = v.Get("delta").Int()
			}
		}
		return err == nil
	})
	if err != nil {
		return err
	}
	if path != "" {
		q.meta.PathIDs = true
	}
	if lost > 0 {
		n := lost
		if n > maxLostPerRecord {
			n = maxLostPerRecord
			q.h.Warn(warning(q.rec, q.off, fmt.Sprintf("cf_lost_packets.delta %d: only %d loss events emitted", lost, n)))
		}
		for i := int64(0); i < n; i++ {
			q.h.Event(timeline.Event{TimeUS: t, Kind: timeline.PacketLost, PathID: path, PacketNumber: -1,
				Detail: "counted from cf_lost_packets.delta (packet number not logged)"})
		}
	}
	if f == 0 {
		return nil
	}
	s := q.last[path]
	s.TimeUS, s.PathID, s.Fields = t, path, f
	if f.Has(timeline.FieldCwnd) {
		s.CwndBytes = r.CwndBytes
	}
	if f.Has(timeline.FieldBytesInFlight) {
		s.BytesInFlight = r.BytesInFlight
	}
	if f.Has(timeline.FieldSmoothedRTT) {
		s.SmoothedRTTUS = r.SmoothedRTTUS
	}
	if f.Has(timeline.FieldMinRTT) {
		s.MinRTTUS = r.MinRTTUS
	}
	if f.Has(timeline.FieldLatestRTT) {
		s.LatestRTTUS = r.LatestRTTUS
	}
	if f.Has(timeline.FieldRTTVar) {
		s.RTTVarUS = r.RTTVarUS
	}
	q.last[path] = s
	q.h.Sample(s)
	return nil
}

// space interns the common packet types without allocating.
func (q *oqlog) space(s string) string {
	switch s {
	case "1RTT":
		return "1RTT"
	case "initial":
		return "initial"
	case "handshake":
		return "handshake"
	case "0RTT":
		return "0RTT"
	case "":
		return ""
	}
	return q.str(s)
}

func (q *oqlog) packet(t int64, kind timeline.EventKind, data gjson.Result, path string) error {
	ev := timeline.Event{TimeUS: t, Kind: kind, PathID: path, PacketNumber: -1}
	var frames gjson.Result
	var err error
	name := string(kind)
	data.ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "header":
			v.ForEach(func(hk, hv gjson.Result) bool {
				switch hk.Str {
				case "packet_number":
					ev.PacketNumber, err = q.integer(name, "packet_number", hv)
				case "packet_type":
					ev.PacketSpace = q.space(hv.Str)
				case "packet_size":
					ev.SizeBytes = hv.Int()
				}
				return err == nil
			})
		case "packet_type":
			ev.PacketSpace = q.space(v.Str)
		case "raw":
			if ev.SizeBytes == 0 {
				ev.SizeBytes = v.Get("length").Int()
			}
		case "frames":
			frames = v
		case "path_id":
			if pid := q.pathID(v); pid != "" {
				ev.PathID = pid
			}
		case "addr_from", "src":
			ev.From = q.addr(v)
		case "addr_to", "dst":
			ev.To = q.addr(v)
		}
		return err == nil
	})
	if err != nil {
		return err
	}
	if ev.From != "" || ev.To != "" {
		q.sawAddr = true
	}
	q.h.Event(ev)
	if !frames.Exists() {
		return nil
	}
	if !frames.IsArray() {
		return fmt.Errorf("event %q: \"frames\" is not an array", name)
	}
	frames.ForEach(func(_, fr gjson.Result) bool {
		err = q.frame(ev, kind, fr)
		return err == nil
	})
	return err
}

func (q *oqlog) frame(pkt timeline.Event, kind timeline.EventKind, fr gjson.Result) error {
	var ftype string
	var ranges, data gjson.Result
	fr.ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "frame_type":
			ftype = v.Str
		case "acked_ranges":
			ranges = v
		case "data", "path_challenge", "path_response":
			data = v
		}
		return true
	})
	sent := kind == timeline.PacketSent
	ev := timeline.Event{TimeUS: pkt.TimeUS, PathID: pkt.PathID, From: pkt.From, To: pkt.To,
		PacketNumber: pkt.PacketNumber, PacketSpace: pkt.PacketSpace}
	switch ftype {
	case "ack":
		// An ACK in a sent packet acknowledges the peer's packets, which
		// says nothing about our own sender's state.
		if sent {
			return nil
		}
		q.ranges = q.ranges[:0]
		var err error
		ranges.ForEach(func(_, r gjson.Result) bool {
			var rg timeline.Range
			n := 0
			if !r.IsArray() {
				err = fmt.Errorf("ack frame: range %s is not an array", excerpt([]byte(r.Raw)))
				return false
			}
			r.ForEach(func(_, x gjson.Result) bool {
				var v int64
				v, err = q.integer("ack", "acked_ranges", x)
				if n == 0 {
					rg.First, rg.Last = v, v
				} else {
					rg.Last = v
				}
				n++
				return err == nil
			})
			if err == nil && n == 0 {
				err = fmt.Errorf("ack frame: empty range")
			}
			q.ranges = append(q.ranges, rg)
			return err == nil
		})
		if err != nil {
			return err
		}
		ev.Kind = timeline.PacketsAcked
		ev.AckRanges = q.ranges
	case "path_challenge":
		ev.Kind = timeline.PathChallengeReceived
		if sent {
			ev.Kind = timeline.PathChallengeSent
		}
		ev.Data = strings.Clone(data.Str)
	case "path_response":
		ev.Kind = timeline.PathResponseReceived
		if sent {
			ev.Kind = timeline.PathResponseSent
		}
		ev.Data = strings.Clone(data.Str)
	default:
		return nil
	}
	q.h.Event(ev)
	return nil
}

func (q *oqlog) datagram(t int64, kind timeline.EventKind, data gjson.Result, path string) error {
	ev := timeline.Event{TimeUS: t, Kind: kind, PathID: path, PacketNumber: -1}
	data.ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "byte_length":
			ev.SizeBytes = v.Int()
		case "raw":
			if v.IsObject() {
				ev.SizeBytes = v.Get("length").Int()
			}
		case "addr_from", "src":
			ev.From = q.addr(v)
		case "addr_to", "dst":
			ev.To = q.addr(v)
		case "path_id":
			if pid := q.pathID(v); pid != "" {
				ev.PathID = pid
			}
		}
		return true
	})
	if ev.From != "" || ev.To != "" {
		q.sawAddr = true
	}
	q.h.Event(ev)
	return nil
}

// addr renders a oqlog address object ({"ip_v4": "10.0.1.1", "port_v4": 4433},
// or the _v6 pair) as ip:port; a plain string is taken as is.
func (q *oqlog) addr(v gjson.Result) string {
	if v.Type == gjson.String {
		return q.str(v.Str)
	}
	if !v.IsObject() {
		return ""
	}
	var ip, port string
	v6 := false
	v.ForEach(func(k, x gjson.Result) bool {
		switch k.Str {
		case "ip_v4", "ip":
			if ip == "" {
				ip = x.String()
			}
		case "ip_v6":
			if ip == "" {
				ip, v6 = x.String(), true
			}
		case "port_v4", "port":
			if port == "" {
				port = x.Raw
			}
		case "port_v6":
			if port == "" {
				port = x.Raw
			}
		}
		return true
	})
	if ip == "" {
		return ""
	}
	var key string
	switch {
	case port == "":
		key = ip
	case v6 || strings.Contains(ip, ":"):
		key = "[" + ip + "]:" + port
	default:
		key = ip + ":" + port
	}
	return q.str(key)
}

func (q *oqlog) lost(t int64, data gjson.Result, path string) error {
	ev := timeline.Event{TimeUS: t, Kind: timeline.PacketLost, PathID: path, PacketNumber: -1}
	var err error
	data.ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "header":
			if pn := v.Get("packet_number"); pn.Exists() {
				ev.PacketNumber, err = q.integer("packet_lost", "packet_number", pn)
			}
			if pt := v.Get("packet_type"); pt.Exists() {
				ev.PacketSpace = q.space(pt.Str)
			}
		case "packet_number":
			ev.PacketNumber, err = q.integer("packet_lost", "packet_number", v)
		case "packet_type":
			ev.PacketSpace = q.space(v.Str)
		case "trigger":
			ev.Detail = q.str(v.Str)
		case "path_id":
			if pid := q.pathID(v); pid != "" {
				ev.PathID = pid
			}
		}
		return err == nil
	})
	if err != nil {
		return err
	}
	q.h.Event(ev)
	return nil
}

// params records numeric transport parameters as "local.NAME" and
// "remote.NAME" (by the event's owner/initiator) and, for the peer's
// (remote) ones or when no owner is given, also as plain "NAME": the peer's
// limits are what bound this endpoint's sending.
func (q *oqlog) params(t int64, data gjson.Result, path string) error {
	owner := data.Get("owner").Str
	if owner == "" {
		owner = data.Get("initiator").Str
	}
	owner = q.str(owner)
	n := 0
	data.ForEach(func(k, v gjson.Result) bool {
		if v.Type != gjson.Number {
			return true
		}
		i, err := strconv.ParseInt(v.Raw, 10, 64)
		if err != nil {
			// Out-of-range or fractional: not a parameter we can use.
			return true
		}
		key := q.str(k.Str)
		if owner != "" {
			q.meta.Params[owner+"."+key] = i
		}
		if owner == "" || owner == "remote" {
			q.meta.Params[key] = i
		}
		n++
		return true
	})
	detail := "owner=" + owner
	if owner == "" {
		detail = "owner not logged"
	}
	q.h.Event(timeline.Event{TimeUS: t, Kind: timeline.ParametersSet, PathID: path, PacketNumber: -1,
		Detail: fmt.Sprintf("%s, %d numeric parameters", detail, n)})
	q.emitMeta()
	return nil
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
	p := &opicoquicParser{in: in, dec: json.NewDecoder(in.r), q: onewQlog(h, FormatPicoquic)}
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
	q      *oqlog
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
		if err := p.q.event(roundUS(t.Float()*scale), bstr(name), data, p.q.pathID(path)); err != nil {
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
	q := onewQlog(h, f.format)
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
		if err := q.event(roundUS(t*timeScale), nameRes.Str, dataRes, q.pathID(pathRes)); err != nil {
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
