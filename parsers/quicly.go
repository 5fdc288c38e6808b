package parsers

import (
	"fmt"
	"io"
	"strconv"

	"github.com/migaudit/migaudit/parsers/timeline"
	"github.com/tidwall/gjson"
)

// quiclyNoRTT is quicly's "no sample yet" minimum RTT (UINT32_MAX, set by
// quicly_rtt_init).
const quiclyNoRTT = 4294967295

// quiclyEpochs names quicly's packet_type (the epoch: get_epoch in
// lib/quicly.c) as the qlog packet spaces.
var quiclyEpochs = [...]string{"initial", "0rtt", "handshake", "application_data"}

// parseQuicly reads quicly's event log (picotls's ptls_log: one JSON object
// per line, "module":"quicly", "time" in ms since the Unix epoch) with the
// lines migaudit's quicly harness writes into the same file
// ("module":"qlyharness", "time_us" in µs):
//
//	{"module":"quicly","type":"packet_sent","tid":1,"time":1796404528765,"conn":94,"pn":3,"len":1280,"packet_type":3,"ack_only":false}
//	{"module":"quicly","type":"cc_ack_received",…,"largest_acked":14,"bytes_acked":15360,"cwnd":30080,"inflight":0}
//	{"module":"qlyharness","type":"rtt","time_us":1796404528765830,"min_rtt":3,"smoothed_rtt":3,"rttvar":1,"latest_rtt":3,"cwnd":14720}
//
// Times are µs from the first record's millisecond; the harness's lines are
// put on quicly's millisecond grid so the events stay in time order. The log has no RTT
// samples of its own: the harness's rtt lines (quicly_get_stats after each
// datagram that changed the estimator or the window, values in ms) become
// samples. An ACK frame is the ack_block_received lines before its
// cc_ack_received; it becomes one packets_acked event whose carrier is the
// last packet_received. Path events: new_path (the peer address in From),
// promote_path (the path switch), delete_path, and the harness's datagram
// lines (written when a datagram's addresses differ from the last one's).
func parseQuicly(in *input, h timeline.Handler) error {
	p := &quiclyParser{h: h, ref: -1, meta: timeline.Meta{Format: FormatQuicly, Implementation: "quicly", LogsAddresses: true}}
	s := &seqReader{br: in.r}
	for {
		line, n, off, err := s.nextLine()
		if err == io.EOF {
			break
		}
		if err != nil {
			return in.readErr(err)
		}
		if !gjson.ValidBytes(line) {
			if s.err == io.EOF && s.line == nil && truncatedJSON(line) {
				h.Warn(warning(n, off, fmt.Sprintf("final line truncated (%d bytes, cut off mid-write); ignored, the %d lines before it are used", len(line), n-1)))
				break
			}
			return in.errorf(n, off, "not a JSON object: %q", excerpt(line))
		}
		if err := p.record(line); err != nil {
			return in.errorf(n, off, "%v", err)
		}
	}
	if p.records == 0 {
		return fmt.Errorf("parse %s: no quicly event log records (\"module\":\"quicly\" or \"qlyharness\") found", in.name)
	}
	p.meta.Notes = append(p.meta.Notes,
		"times are whole milliseconds (quicly's event log); the harness's µs times are truncated to the millisecond",
		"RTT samples are the harness's quicly_get_stats readings after each datagram that changed the estimator or window (quicly's values are whole ms)",
		"an rtt line whose RTT values repeat the previous one's is a window change: only its cwnd is reported",
		"min RTT 4294967295 (quicly_rtt_init's no-sample value, also after promote_path) is reported as 0; a latest RTT of 0 (no sample yet) is left out",
		"no path ids: quicly keeps one congestion controller and RTT estimator per connection; path changes are path events",
		"datagram events appear only where a datagram's addresses differ from the previous one in the same direction")
	h.Meta(p.meta)
	return nil
}

type quiclyParser struct {
	h       timeline.Handler
	meta    timeline.Meta
	records int
	ref     int64 // µs of the first record's millisecond
	t       int64
	// carrier is the last packet received (it carries the ACK frame being
	// read); ranges the ACK blocks read since.
	carrier      int64
	carrierSpace string
	ranges       []timeline.Range
	// lastRTT is the last rtt line's min, smoothed, variance and latest.
	lastRTT [4]int64
	haveRTT bool
}

var quiclyKeys = []string{"module", "type", "time", "time_us"}

func (p *quiclyParser) record(line []byte) error {
	head := gjson.GetManyBytes(line, quiclyKeys...)
	mod, typ := head[0].String(), head[1].String()
	if mod != "quicly" && mod != "qlyharness" {
		return nil
	}
	p.records++
	var us int64
	switch {
	case head[3].Exists():
		v, err := intField(head[3], "time_us")
		if err != nil {
			return err
		}
		// On quicly's millisecond grid: quicly stamps its events with the
		// millisecond its receive or send call began (stash.now), so a
		// harness line's exact µs would sort after events of the same ms.
		us = v / 1000 * 1000
	case head[2].Exists():
		v, err := intField(head[2], "time")
		if err != nil {
			return err
		}
		us = v * 1000
	default:
		us = -1
	}
	if us >= 0 {
		if p.ref < 0 {
			p.ref = us / 1000 * 1000
		}
		p.t = us - p.ref
	}
	get := func(k string) (int64, error) { return intField(gjson.GetBytes(line, k), typ+"."+k) }
	// ints reads integer fields, stopping at the first missing or malformed one.
	ints := func(keys ...string) ([]int64, error) {
		out := make([]int64, len(keys))
		for i, k := range keys {
			v, err := get(k)
			if err != nil {
				return nil, err
			}
			out[i] = v
		}
		return out, nil
	}
	if mod == "qlyharness" {
		return p.harness(typ, line, get)
	}
	switch typ {
	case "accept":
		p.vantage("server")
	case "connect":
		p.vantage("client")
	case "packet_sent":
		v, err := ints("pn", "len")
		if err != nil {
			return err
		}
		sp, err := p.space(line, typ)
		if err != nil {
			return err
		}
		e := timeline.Event{TimeUS: p.t, Kind: timeline.PacketSent, PacketNumber: v[0], PacketSpace: sp, SizeBytes: v[1]}
		if gjson.GetBytes(line, "ack_only").Bool() {
			e.Detail = "ack_only"
		}
		p.h.Event(e)
	case "packet_received":
		pn, err := get("pn")
		if err != nil {
			return err
		}
		sp, err := p.space(line, typ)
		if err != nil {
			return err
		}
		p.carrier, p.carrierSpace, p.ranges = pn, sp, p.ranges[:0]
		p.h.Event(timeline.Event{TimeUS: p.t, Kind: timeline.PacketReceived, PacketNumber: pn, PacketSpace: sp})
	case "ack_block_received":
		v, err := ints("ack_block_begin", "ack_block_end")
		if err != nil {
			return err
		}
		p.ranges = append(p.ranges, timeline.Range{First: v[0], Last: v[1]})
	case "cc_ack_received":
		v, err := ints("cwnd", "inflight", "largest_acked")
		if err != nil {
			return err
		}
		ranges := p.ranges
		if len(ranges) == 0 {
			ranges = []timeline.Range{{First: v[2], Last: v[2]}}
		}
		p.h.Event(timeline.Event{TimeUS: p.t, Kind: timeline.PacketsAcked, PacketNumber: p.carrier, PacketSpace: p.carrierSpace, AckRanges: ranges,
			Detail: "largest_acked=" + strconv.FormatInt(v[2], 10)})
		p.ranges = p.ranges[:0]
		p.window(v[0], v[1])
	case "pto":
		v, err := ints("cwnd", "inflight")
		if err != nil {
			return err
		}
		p.window(v[0], v[1])
	case "cc_congestion":
		v, err := ints("cwnd", "flight", "max_lost_pn")
		if err != nil {
			return err
		}
		p.window(v[0], v[1])
		p.h.Event(timeline.Event{TimeUS: p.t, Kind: timeline.CongestionEvent, PacketNumber: v[2] - 1,
			Detail: fmt.Sprintf("cc_congestion: loss up to packet %d, cwnd %d", v[2]-1, v[0])})
	case "packet_lost":
		pn, err := get("pn")
		if err != nil {
			return err
		}
		sp, err := p.space(line, typ)
		if err != nil {
			return err
		}
		p.h.Event(timeline.Event{TimeUS: p.t, Kind: timeline.PacketLost, PacketNumber: pn, PacketSpace: sp})
	case "new_path", "promote_path", "delete_path", "elicit_path_migration":
		idx, err := get("path_index")
		if err != nil {
			return err
		}
		e := timeline.Event{TimeUS: p.t, Kind: timeline.PathEvent, PacketNumber: -1}
		switch typ {
		case "new_path":
			e.From = gjson.GetBytes(line, "remote").String()
			e.Detail = fmt.Sprintf("new_path index=%d remote=%s", idx, e.From)
		case "promote_path":
			e.Detail = fmt.Sprintf("promote_path index=%d (path switch: the validated path becomes paths[0])", idx)
		case "delete_path":
			e.Detail = fmt.Sprintf("delete_path index=%d", idx)
		default:
			// Not a switch: a non-probing packet arrived on a path that
			// may still be unvalidated (the detail avoids the words the
			// discriminator reads as a switch).
			e.Detail = fmt.Sprintf("non-probing packet on path index=%d (quicly elicit_path_mig.)", idx)
		}
		p.h.Event(e)
	case "path_challenge_send", "path_challenge_receive", "path_response_send", "path_response_receive":
		kind := map[string]timeline.EventKind{"path_challenge_send": timeline.PathChallengeSent, "path_challenge_receive": timeline.PathChallengeReceived,
			"path_response_send": timeline.PathResponseSent, "path_response_receive": timeline.PathResponseReceived}[typ]
		p.h.Event(timeline.Event{TimeUS: p.t, Kind: kind, PacketNumber: -1, Data: gjson.GetBytes(line, "data").String()})
	}
	return nil
}

func (p *quiclyParser) harness(typ string, line []byte, get func(string) (int64, error)) error {
	switch typ {
	case "rtt":
		var v [5]int64
		for i, k := range []string{"min_rtt", "smoothed_rtt", "rttvar", "latest_rtt", "cwnd"} {
			x, err := get(k)
			if err != nil {
				return err
			}
			v[i] = x
		}
		var s timeline.Sample
		s.TimeUS = p.t
		s.Set(timeline.FieldCwnd, v[4])
		// The harness writes a line when the estimator or the window
		// changed: a line whose RTT values repeat the previous line's is a
		// window change, not an RTT sample (quicly's whole-ms values can
		// also repeat on a real sample; that one is then not reported).
		rtt := [4]int64{v[0], v[1], v[2], v[3]}
		if p.haveRTT && rtt == p.lastRTT {
			p.h.Sample(s)
			return nil
		}
		p.lastRTT, p.haveRTT = rtt, true
		if v[0] == quiclyNoRTT {
			v[0] = 0 // no sample since quicly_rtt_init: reported, as 0 (msquic's parser does the same)
		}
		s.Set(timeline.FieldMinRTT, v[0]*1000)
		s.Set(timeline.FieldSmoothedRTT, v[1]*1000)
		s.Set(timeline.FieldRTTVar, v[2]*1000)
		if v[3] > 0 {
			s.Set(timeline.FieldLatestRTT, v[3]*1000)
		}
		p.h.Sample(s)
	case "datagram_sent", "datagram_received":
		size, err := get("len")
		if err != nil {
			return err
		}
		peer, local := gjson.GetBytes(line, "peer").String(), gjson.GetBytes(line, "local").String()
		e := timeline.Event{TimeUS: p.t, Kind: timeline.DatagramSent, From: local, To: peer, SizeBytes: size, PacketNumber: -1}
		if typ == "datagram_received" {
			e.Kind, e.From, e.To = timeline.DatagramReceived, peer, local
		}
		p.h.Event(e)
	}
	return nil
}

// window reports the connection's window and bytes in flight.
func (p *quiclyParser) window(cwnd, inflight int64) {
	var s timeline.Sample
	s.TimeUS = p.t
	s.Set(timeline.FieldCwnd, cwnd)
	s.Set(timeline.FieldBytesInFlight, inflight)
	p.h.Sample(s)
}

func (p *quiclyParser) vantage(v string) {
	if p.meta.Vantage == "" {
		p.meta.Vantage = v
	}
}

func (p *quiclyParser) space(line []byte, typ string) (string, error) {
	t, err := intField(gjson.GetBytes(line, "packet_type"), typ+".packet_type")
	if err != nil {
		return "", err
	}
	if t < 0 || int(t) >= len(quiclyEpochs) {
		return "", fmt.Errorf("%s.packet_type %d is not an epoch (0-3)", typ, t)
	}
	return quiclyEpochs[t], nil
}

// intField returns an integer JSON value, or an error naming the field.
func intField(r gjson.Result, name string) (int64, error) {
	if !r.Exists() {
		return 0, fmt.Errorf("missing %s", name)
	}
	if r.Type != gjson.Number {
		return 0, fmt.Errorf("%s is %s, not a number", name, r.Raw)
	}
	v, err := strconv.ParseInt(r.Raw, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s %s is not an integer", name, r.Raw)
	}
	return v, nil
}
