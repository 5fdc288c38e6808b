package parsers

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"

	"github.com/migaudit/migaudit/parsers/timeline"
)

// quinnHeader starts every trace harnesses/quinn's server writes.
const quinnHeader = "# quinn-cc-log "

// parseQuinn reads the trace of harnesses/quinn's server (quinn 0.9 has no
// qlog). The server wraps quinn's congestion controller and logs what quinn
// tells it, one line per call, times in µs from the server's start:
//
//	# quinn-cc-log 1 vantage=server implementation=quinn cc=cubic start_unix_ns=…
//	5321 built cc=1 cwnd=12000 initial_window=12000
//	5400 sent cc=1 pn=3-5 bytes=3600 cwnd=12000
//	25433 ack cc=1 largest=5 cwnd=15600 in_flight=2400 srtt_us=20133 min_rtt_us=20101 newest_rtt_us=20133 app_limited=0
//	30010 congestion cc=1 cwnd=8400 before=12000 lost_bytes=1200 persistent=0 sent_us=29000
//	5011230 peer from=198.18.1.2:51000 to=198.18.2.2:40000 cwnd=… rtt_us=…
//
// quinn builds one controller per new path (PathData::new on an IP change)
// and copies it for a same-IP rebinding (PathData::from_previous); the
// controller's number is the sample's path id. "built" and "ack" lines are
// samples (an ACK line's RTTs are the path's RttEstimator after the ACK;
// newest_rtt_us is now minus the send time of the newest packet it
// acknowledged, with the peer's ACK delay not subtracted); "sent" lines are
// packet_sent events for the packet numbers of one transmit, "ack" lines a
// packets_acked event for the largest acknowledged (the only number quinn's
// controller is given), "congestion" lines congestion events, "peer" lines
// the peer address the server's connection reports (polled every 1 ms).
func parseQuinn(in *input, h timeline.Handler) error {
	q := &quinnParser{h: h}
	if err := eachLine(in, q.line); err != nil {
		return err
	}
	if !q.header {
		return fmt.Errorf("parse %s: no %q header line: not a quinn-cc-log trace", in.name, strings.TrimSpace(quinnHeader))
	}
	return nil
}

type quinnParser struct {
	h      timeline.Handler
	header bool
	last   map[string]timeline.Sample // per path id: values carried forward
}

func (q *quinnParser) line(line []byte, n int) error {
	if bytes.HasPrefix(line, []byte("#")) {
		if !bytes.HasPrefix(line, []byte(quinnHeader)) {
			return nil // a comment
		}
		if q.header {
			return fmt.Errorf("second header line")
		}
		q.header = true
		kv := keyValues(string(line[len(quinnHeader):]))
		meta := timeline.Meta{Format: FormatQuinn, Implementation: kv["implementation"], Vantage: vantage(kv["vantage"]),
			PathIDs: true, LogsAddresses: true, Params: map[string]int64{},
			Notes: []string{
				"path ids are quinn's congestion controllers: one per new path (PathData::new), copied for a same-IP rebinding (PathData::from_previous)",
				"packets_acked carries only the largest acknowledged packet (all quinn's controller is told)",
				"latest RTT is now minus the send time of the newest packet an ACK acknowledged, without the peer's ACK delay",
				"peer addresses are polled from the server's connection every 1 ms",
			}}
		if cc := kv["cc"]; cc != "" {
			meta.Notes = append(meta.Notes, "congestion controller "+cc)
		}
		q.h.Meta(meta)
		return nil
	}
	if !q.header {
		return fmt.Errorf("record before the %q header line", strings.TrimSpace(quinnHeader))
	}
	ts, rest, _ := strings.Cut(string(line), " ")
	t, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || t < 0 {
		return fmt.Errorf("time %q is not a count of microseconds", excerpt([]byte(ts)))
	}
	verb, args, _ := strings.Cut(rest, " ")
	kv := keyValues(args)
	num := func(k string) (int64, error) {
		v, ok := kv[k]
		if !ok {
			return 0, fmt.Errorf("%s line without %s=", verb, k)
		}
		x, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%s %s=%q is not an integer", verb, k, excerpt([]byte(v)))
		}
		return x, nil
	}
	switch verb {
	case "built":
		cw, err := num("cwnd")
		if err != nil {
			return err
		}
		path := "cc" + kv["cc"]
		iw, err := num("initial_window")
		if err != nil {
			return err
		}
		q.h.Event(timeline.Event{TimeUS: t, Kind: timeline.PathEvent, PathID: path, PacketNumber: -1,
			Detail: fmt.Sprintf("congestion controller built (initial_window=%d)", iw)})
		q.sample(path, timeline.Sample{TimeUS: t}, []quinnField{{timeline.FieldCwnd, cw}})
	case "sent":
		first, last, err := pnRange(kv["pn"])
		if err != nil {
			return err
		}
		size, err := num("bytes")
		if err != nil {
			return err
		}
		for pn := first; pn <= last; pn++ {
			e := timeline.Event{TimeUS: t, Kind: timeline.PacketSent, PathID: "cc" + kv["cc"], PacketNumber: pn}
			if pn == last {
				e.SizeBytes = size // the transmit's bytes, on its last packet
			}
			q.h.Event(e)
		}
	case "ack":
		var fs []quinnField
		for _, f := range []struct {
			k    string
			f    timeline.Field
			zero bool // 0 means "not measured yet"
		}{{"cwnd", timeline.FieldCwnd, false}, {"in_flight", timeline.FieldBytesInFlight, false},
			{"srtt_us", timeline.FieldSmoothedRTT, true}, {"min_rtt_us", timeline.FieldMinRTT, true}, {"newest_rtt_us", timeline.FieldLatestRTT, true}} {
			if kv[f.k] == "-" {
				continue
			}
			v, err := num(f.k)
			if err != nil {
				return err
			}
			if f.zero && v == 0 {
				continue
			}
			fs = append(fs, quinnField{f.f, v})
		}
		path := "cc" + kv["cc"]
		if l := kv["largest"]; l != "-" {
			pn, err := num("largest")
			if err != nil {
				return err
			}
			q.h.Event(timeline.Event{TimeUS: t, Kind: timeline.PacketsAcked, PathID: path, PacketNumber: -1,
				AckRanges: []timeline.Range{{First: pn, Last: pn}}})
		}
		q.sample(path, timeline.Sample{TimeUS: t}, fs)
	case "congestion":
		cw, err := num("cwnd")
		if err != nil {
			return err
		}
		path := "cc" + kv["cc"]
		q.h.Event(timeline.Event{TimeUS: t, Kind: timeline.CongestionEvent, PathID: path, PacketNumber: -1,
			Detail: strings.TrimSpace(args)})
		q.sample(path, timeline.Sample{TimeUS: t}, []quinnField{{timeline.FieldCwnd, cw}})
	case "peer":
		to := kv["to"]
		if to == "" {
			return fmt.Errorf("peer line without to=")
		}
		d := "peer_address_changed from " + kv["from"]
		if kv["from"] == "none" {
			d = "connected"
		}
		q.h.Event(timeline.Event{TimeUS: t, Kind: timeline.PathEvent, From: to, PacketNumber: -1, Detail: d})
	case "stats":
		// The connection's final statistics: a record, not a sample.
	default:
		return fmt.Errorf("unknown record %q", excerpt([]byte(verb)))
	}
	return nil
}

type quinnField struct {
	f timeline.Field
	v int64
}

// sample emits s on path with fs reported and the path's other values
// carried forward.
func (q *quinnParser) sample(path string, s timeline.Sample, fs []quinnField) {
	if len(fs) == 0 {
		return
	}
	if q.last == nil {
		q.last = map[string]timeline.Sample{}
	}
	prev := q.last[path]
	t := s.TimeUS
	s = prev
	s.TimeUS, s.PathID, s.Fields = t, path, 0
	for _, f := range fs {
		s.Set(f.f, f.v)
	}
	q.last[path] = s
	q.h.Sample(s)
}

// pnRange reads "first-last" (or one number).
func pnRange(v string) (first, last int64, err error) {
	a, b, ok := strings.Cut(v, "-")
	if !ok {
		b = a
	}
	first, err1 := strconv.ParseInt(a, 10, 64)
	last, err2 := strconv.ParseInt(b, 10, 64)
	if err1 != nil || err2 != nil || first < 0 || last < first || last-first > 64 {
		return 0, 0, fmt.Errorf("sent pn=%q is not a packet number range first-last (at most 64 packets)", excerpt([]byte(v)))
	}
	return first, last, nil
}
