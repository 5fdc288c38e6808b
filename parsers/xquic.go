package parsers

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/migaudit/migaudit/parsers/timeline"
)

// parseXquic reads harnesses/xquic's xqharness stdout: the harness lines of
// harnesses/twosock ("[xqc_server] t_us=N VERB unix_us=… k=v…"; STATS is
// xqc_conn_get_stats and xqc_conn_get_lastest_rtt polled every 5 ms:
// smoothed, minimum and latest RTT, bytes in flight) and xquic's own log,
// "[xqc_server] t_us=N LOG [debug] |scid:…|function|k:v|k:v|…". From the
// log: every line with a "cwnd:" field (xqc_send_ctl_update_cwnd_limited,
// the server's 100 ms circle record, BBR's per-ACK line) is a sample of the
// window, with "inflight:", "srtt:" and "latest_rtt:" when the line has
// them; "|<==|…|pkt_num:N|size:S|…|pkt_type:T|" a packet sent; "|mark
// lost|…|pkt_num:N|" a packet lost; "|REBINDING|…|send PATH_CHALLENGE|" a
// path challenge sent; "RECV path_response_data:" a path response
// received; "|after update rtt|…|srtt:|rttvar:|minrtt:|latest_rtt:" (the
// estimator after each RTT sample) a sample of the RTTs;
// "xqc_send_ctl_on_ack_received|conn:…|pkt_num:N|" a packet acknowledged; "validate NAT rebinding addr" a path event (xquic moves its one
// path to the new peer address).
func parseXquic(in *input, h timeline.Handler) error {
	p := &sockLines{prefix: "[xqc_", h: h, meta: timeline.Meta{Format: FormatXquic, Implementation: "xquic", Params: map[string]int64{}}}
	p.log = p.xquicLog
	if err := p.read(in); err != nil {
		return err
	}
	p.meta.Notes = append(p.meta.Notes,
		"samples carry no path id: xquic without multipath keeps one path (path 0) and moves it to a new peer address on NAT rebinding",
		"the window comes from xquic's debug log (cwnd: fields), the RTTs and bytes in flight also from xqc_conn_get_stats polled every 5 ms",
		"acknowledgements are xquic's per-packet on_ack_received lines (one packet each), not ACK frame ranges",
		"times are µs since the harness process started")
	h.Meta(p.meta)
	return nil
}

// xquicFields splits "|k:v|k:v|…" into its key:value fields (the last value
// of a repeated key wins) and its bare words.
func xquicFields(s string) (map[string]string, []string) {
	kv := map[string]string{}
	var words []string
	for _, f := range strings.Split(s, "|") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		if k, v, ok := strings.Cut(f, ":"); ok && !strings.ContainsAny(k, " ,") {
			kv[k] = v
			continue
		}
		words = append(words, f)
	}
	return kv, words
}

func (p *sockLines) xquicLog(t int64, s string) error {
	i := strings.IndexByte(s, '|')
	if i < 0 {
		return nil
	}
	text := s[i:]
	kv, _ := xquicFields(text)
	num := func(k string) (int64, bool, error) {
		v, ok := kv[k]
		if !ok {
			return 0, false, nil
		}
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil || n < 0 {
			return 0, false, fmt.Errorf("xquic log field %s:%q is not a non-negative integer", k, v)
		}
		return n, true, nil
	}
	switch {
	case strings.Contains(text, "|<==|"):
		n, ok, err := num("pkt_num")
		if err != nil || !ok {
			return err
		}
		ev := timeline.Event{TimeUS: t, Kind: timeline.PacketSent, PacketNumber: n, PacketSpace: xquicSpace(kv["pkt_type"])}
		if sz, ok, err := num("size"); err != nil {
			return err
		} else if ok {
			ev.SizeBytes = sz
		}
		p.h.Event(ev)
		return nil
	case strings.Contains(text, "|mark lost|"):
		n, ok, err := num("pkt_num")
		if err != nil || !ok {
			return err
		}
		p.h.Event(timeline.Event{TimeUS: t, Kind: timeline.PacketLost, PacketNumber: n})
		return nil
	case strings.Contains(text, "|REBINDING|") && strings.Contains(text, "|send PATH_CHALLENGE|"):
		p.h.Event(timeline.Event{TimeUS: t, Kind: timeline.PathChallengeSent, PacketNumber: -1, Detail: "NAT rebinding check of " + kv["addr"]})
		return nil
	case strings.Contains(text, "RECV path_response_data:"):
		p.h.Event(timeline.Event{TimeUS: t, Kind: timeline.PathResponseReceived, PacketNumber: -1})
		return nil
	case strings.Contains(text, "|after update rtt|"):
		sm := p.last
		sm.TimeUS, sm.Fields = t, 0
		for _, f := range []struct {
			key   string
			field timeline.Field
		}{{"srtt", timeline.FieldSmoothedRTT}, {"rttvar", timeline.FieldRTTVar}, {"minrtt", timeline.FieldMinRTT}, {"latest_rtt", timeline.FieldLatestRTT}} {
			v, ok, err := num(f.key)
			if err != nil {
				return err
			}
			if ok {
				sm.Set(f.field, v)
			}
		}
		if sm.Fields != 0 {
			p.sample(sm)
		}
		return nil
	case strings.Contains(text, "xqc_send_ctl_on_ack_received|conn:"):
		n, ok, err := num("pkt_num")
		if err != nil || !ok {
			return err
		}
		p.ranges = append(p.ranges[:0], timeline.Range{First: n, Last: n})
		p.h.Event(timeline.Event{TimeUS: t, Kind: timeline.PacketsAcked, PacketNumber: -1, PacketSpace: xquicSpace(kv["pkt_type"]), AckRanges: p.ranges})
		return nil
	case strings.Contains(text, "validate NAT rebinding addr") && strings.Contains(text, "|conn:"):
		p.h.Event(timeline.Event{TimeUS: t, Kind: timeline.PathEvent, PacketNumber: -1, Detail: "path switch: NAT rebinding validated, " + kv["conn"]})
		return nil
	}
	cwnd, ok, err := num("cwnd")
	if err != nil || !ok {
		return err
	}
	sm := p.last
	sm.TimeUS, sm.Fields = t, 0
	sm.Set(timeline.FieldCwnd, cwnd)
	for _, f := range []struct {
		key   string
		field timeline.Field
	}{{"inflight", timeline.FieldBytesInFlight}, {"srtt", timeline.FieldSmoothedRTT}, {"latest_rtt", timeline.FieldLatestRTT}} {
		v, ok, err := num(f.key)
		if err != nil {
			return err
		}
		if ok {
			sm.Set(f.field, v)
		}
	}
	p.sample(sm)
	return nil
}

// xquicSpace maps xqc_pkt_type_2_str names to the timeline's packet spaces.
func xquicSpace(s string) string {
	switch s {
	case "SHORT_HEADER":
		return "1RTT"
	case "INIT":
		return "initial"
	case "HSK":
		return "handshake"
	case "0RTT":
		return "0RTT"
	}
	return ""
}
