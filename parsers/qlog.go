package parsers

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/migaudit/migaudit/parsers/timeline"
	"github.com/tidwall/gjson"
)

// qlog maps qlog events — whatever the dialect, once a record is reduced to
// (time, name, data) — onto the timeline model. Names are matched on the
// part after the last ':' so "recovery:metrics_updated" (ngtcp2, quic-go),
// "quic:recovery_metrics_updated" (quiche) and picoquic's category/event
// pairs land in the same place.
//
// Path events put the peer's address in From and the local one in To.
type qlog struct {
	h    timeline.Handler
	meta timeline.Meta
	// rttScale converts an RTT value to µs (1000 for milliseconds).
	rttScale float64
	// last is the last sample per path: the current path's in cur (a
	// trace stays on one path for thousands of records), the others'
	// in the map.
	last    map[string]timeline.Sample
	cur     timeline.Sample
	curPath string
	curOK   bool
	ranges  []timeline.Range
	intern  map[string]string
	// lostFromCounters: losses come as counter deltas (quiche).
	lostFromCounters bool
	sawAddr          bool
	// noPathNote replaces the generic note when metrics had no path id.
	noPathNote string
	// rec and off locate the record being handled, for warnings.
	rec int
	off int64
}

func newQlog(h timeline.Handler, format string) *qlog {
	return &qlog{
		h:        h,
		meta:     timeline.Meta{Format: format, Params: map[string]int64{}},
		rttScale: 1000,
		last:     map[string]timeline.Sample{},
		intern:   map[string]string{},
	}
}

// str returns a copy of s that outlives the record buffer, shared between
// equal values (addresses, packet types and path ids repeat endlessly).
func (q *qlog) str(s string) string {
	if v, ok := q.intern[s]; ok {
		return v
	}
	v := strings.Clone(s)
	if len(q.intern) < 4096 {
		q.intern[v] = v
	}
	return v
}

func (q *qlog) emitMeta() {
	m := q.meta
	m.Params = make(map[string]int64, len(q.meta.Params))
	for k, v := range q.meta.Params {
		m.Params[k] = v
	}
	m.Notes = append([]string(nil), q.meta.Notes...)
	q.h.Meta(m)
}

func (q *qlog) finish() {
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

// pathID renders a qlog path identifier (string or number).
func (q *qlog) pathID(v jv) string {
	switch v.Type() {
	case gjson.String:
		return q.str(v.Str())
	case gjson.Number:
		return q.str(v.Raw())
	}
	return ""
}

func roundUS(v float64) int64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0
	}
	if v > math.MaxInt64/2 {
		return math.MaxInt64 / 2
	}
	if v < math.MinInt64/2 {
		return math.MinInt64 / 2
	}
	return int64(math.Round(v))
}

func baseName(name string) string {
	if i := strings.LastIndexByte(name, ':'); i >= 0 {
		return name[i+1:]
	}
	return name
}

// event handles one qlog event at time t (µs).
func (q *qlog) event(t int64, name string, data jv, path string) error {
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
			PacketNumber: -1, Detail: q.str(data.Get("new").Str())})
	case "connection_started":
		q.h.Event(timeline.Event{TimeUS: t, Kind: timeline.PathEvent, PathID: path, PacketNumber: -1,
			From: q.addr(data.Get("remote")), To: q.addr(data.Get("local")), Detail: "connection_started"})
	case "mtu_updated":
		if v := data.Get("mtu"); v.Type() == gjson.Number {
			q.meta.Params["mtu"] = v.Int()
			q.h.Event(timeline.Event{TimeUS: t, Kind: timeline.ParametersSet, PathID: path, PacketNumber: -1,
				Detail: "mtu=" + v.Raw()})
		}
	default:
		if strings.Contains(base, "path") || strings.Contains(base, "migration") {
			if pid := q.pathID(data.Get("path_id")); pid != "" {
				path = pid
			}
			detail := q.str(name) // name may be a view of the record
			if data.Exists() {
				detail += " " + compact(data.Raw(), 300)
			}
			q.h.Event(timeline.Event{TimeUS: t, Kind: timeline.PathEvent, PathID: path, PacketNumber: -1,
				Detail: detail})
		}
	}
	return nil
}

func compact(raw string, max int) string {
	var b strings.Builder
	inStr := false
	for i := 0; i < len(raw) && b.Len() < max; i++ {
		c := raw[i]
		if c == '"' && (i == 0 || raw[i-1] != '\\') {
			inStr = !inStr
		}
		if !inStr && (c == ' ' || c == '\n' || c == '\r' || c == '\t') {
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

func (q *qlog) number(name, key string, v jv) (float64, error) {
	if v.Type() != gjson.Number {
		return 0, fmt.Errorf("event %q: %q is not a number (%s)", name, key, excerpt([]byte(v.Raw())))
	}
	return v.Float(), nil
}

func (q *qlog) integer(name, key string, v jv) (int64, error) {
	if v.Type() != gjson.Number {
		return 0, fmt.Errorf("event %q: %q is not a number (%s)", name, key, excerpt([]byte(v.Raw())))
	}
	if i, ok := smallInt(v.Raw(), 18); ok {
		return i, nil
	}
	if i, err := strconv.ParseInt(v.Raw(), 10, 64); err == nil {
		return i, nil
	}
	return roundUS(v.Float()), nil
}

// maxLostPerRecord bounds the events one loss counter delta produces, so a
// corrupt counter cannot turn a few bytes into millions of events.
const maxLostPerRecord = 1024

func (q *qlog) metrics(t int64, name string, data jv, path string) error {
	var r timeline.Sample
	var f timeline.Field
	var err error
	var lost int64
	// Members in order (a direct loop: ForEach gives nothing else to
	// the keys matched here).
	for v := data.first(); v.Exists() && err == nil; v = v.next(data) {
		var x float64
		k := v.Key()
		switch k {
		case "congestion_window", "cwnd":
			r.CwndBytes, err = q.integer(name, k, v)
			f |= timeline.FieldCwnd
		case "bytes_in_flight":
			r.BytesInFlight, err = q.integer(name, k, v)
			f |= timeline.FieldBytesInFlight
		case "smoothed_rtt":
			x, err = q.number(name, k, v)
			r.SmoothedRTTUS = roundUS(x * q.rttScale)
			f |= timeline.FieldSmoothedRTT
		case "min_rtt":
			x, err = q.number(name, k, v)
			r.MinRTTUS = roundUS(x * q.rttScale)
			f |= timeline.FieldMinRTT
		case "latest_rtt":
			x, err = q.number(name, k, v)
			r.LatestRTTUS = roundUS(x * q.rttScale)
			f |= timeline.FieldLatestRTT
		case "rtt_variance", "rttvar":
			x, err = q.number(name, k, v)
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
	}
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
	s := q.lastFor(path)
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
	q.setLast(path, s)
	q.h.Sample(s)
	return nil
}

func (q *qlog) lastFor(path string) timeline.Sample {
	if q.curOK && q.curPath == path {
		return q.cur
	}
	return q.last[path]
}

func (q *qlog) setLast(path string, s timeline.Sample) {
	if q.curOK && q.curPath != path {
		q.last[q.curPath] = q.cur
	}
	q.cur, q.curPath, q.curOK = s, path, true
}

// space interns the common packet types without allocating.
func (q *qlog) space(s string) string {
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

func (q *qlog) packet(t int64, kind timeline.EventKind, data jv, path string) error {
	ev := timeline.Event{TimeUS: t, Kind: kind, PathID: path, PacketNumber: -1}
	var frames jv
	var err error
	name := string(kind)
	for v := data.first(); v.Exists() && err == nil; v = v.next(data) {
		switch v.Key() {
		case "header":
			for hv := v.first(); hv.Exists() && err == nil; hv = hv.next(v) {
				switch hv.Key() {
				case "packet_number":
					ev.PacketNumber, err = q.integer(name, "packet_number", hv)
				case "packet_type":
					ev.PacketSpace = q.space(hv.Str())
				case "packet_size":
					ev.SizeBytes = hv.Int()
				}
			}
		case "packet_type":
			ev.PacketSpace = q.space(v.Str())
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
	}
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
	for fr := frames.first(); fr.Exists() && err == nil; fr = fr.next(frames) {
		err = q.frame(ev, kind, fr)
	}
	return err
}

func (q *qlog) frame(pkt timeline.Event, kind timeline.EventKind, fr jv) error {
	var ftype string
	var ranges, data jv
	for v := fr.first(); v.Exists(); v = v.next(fr) {
		switch v.Key() {
		case "frame_type":
			ftype = v.Str()
		case "acked_ranges":
			ranges = v
		case "data", "path_challenge", "path_response":
			data = v
		}
	}
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
		ranges.ForEach(func(_ jkey, r jv) bool {
			var rg timeline.Range
			n := 0
			if !r.IsArray() {
				err = fmt.Errorf("ack frame: range %s is not an array", excerpt([]byte(r.Raw())))
				return false
			}
			r.ForEach(func(_ jkey, x jv) bool {
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
		ev.Data = strings.Clone(data.Str())
	case "path_response":
		ev.Kind = timeline.PathResponseReceived
		if sent {
			ev.Kind = timeline.PathResponseSent
		}
		ev.Data = strings.Clone(data.Str())
	default:
		return nil
	}
	q.h.Event(ev)
	return nil
}

func (q *qlog) datagram(t int64, kind timeline.EventKind, data jv, path string) error {
	ev := timeline.Event{TimeUS: t, Kind: kind, PathID: path, PacketNumber: -1}
	data.ForEach(func(k jkey, v jv) bool {
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

// addr renders a qlog address object ({"ip_v4": "10.0.1.1", "port_v4": 4433},
// or the _v6 pair) as ip:port; a plain string is taken as is.
func (q *qlog) addr(v jv) string {
	if v.Type() == gjson.String {
		return q.str(v.Str())
	}
	if !v.IsObject() {
		return ""
	}
	var ip, port string
	v6 := false
	v.ForEach(func(k jkey, x jv) bool {
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
				port = x.Raw()
			}
		case "port_v6":
			if port == "" {
				port = x.Raw()
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

func (q *qlog) lost(t int64, data jv, path string) error {
	ev := timeline.Event{TimeUS: t, Kind: timeline.PacketLost, PathID: path, PacketNumber: -1}
	var err error
	data.ForEach(func(k jkey, v jv) bool {
		switch k.Str {
		case "header":
			if pn := v.Get("packet_number"); pn.Exists() {
				ev.PacketNumber, err = q.integer("packet_lost", "packet_number", pn)
			}
			if pt := v.Get("packet_type"); pt.Exists() {
				ev.PacketSpace = q.space(pt.Str())
			}
		case "packet_number":
			ev.PacketNumber, err = q.integer("packet_lost", "packet_number", v)
		case "packet_type":
			ev.PacketSpace = q.space(v.Str())
		case "trigger":
			ev.Detail = q.str(v.Str())
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
func (q *qlog) params(t int64, data jv, path string) error {
	owner := data.Get("owner").Str()
	if owner == "" {
		owner = data.Get("initiator").Str()
	}
	owner = q.str(owner)
	n := 0
	data.ForEach(func(k jkey, v jv) bool {
		if v.Type() != gjson.Number {
			return true
		}
		i, err := strconv.ParseInt(v.Raw(), 10, 64)
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

// vantage normalises a qlog vantage point type.
func vantage(s string) string {
	switch strings.ToLower(s) {
	case "server":
		return "server"
	case "client":
		return "client"
	}
	return ""
}

// implementationFrom returns impl when any of the trace's own labels
// names it, otherwise "" (the format alone does not prove the producer).
func implementationFrom(impl string, labels ...string) string {
	want := strings.ReplaceAll(strings.ToLower(impl), "-", "")
	for _, l := range labels {
		if strings.Contains(strings.ReplaceAll(strings.ToLower(l), "-", ""), want) {
			return impl
		}
	}
	return ""
}
