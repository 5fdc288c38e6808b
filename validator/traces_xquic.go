package validator

import (
	"fmt"
	"strconv"
	"strings"
)

// readXquicLog reads xqharness's stdout: the harness lines (STATS is
// xqc_conn_get_stats with xqc_conn_get_lastest_rtt: smoothed, minimum and
// latest RTT, no window) and xquic's own log, "|k:v|k:v|…" fields. Read, in
// this order: "|<==|" a packet sent (short-header ones kept), "|mark lost|"
// nothing here, "|REBINDING|…|send PATH_CHALLENGE|" a challenge sent, "RECV
// path_response_data:" a response received, "|after update rtt|" the
// estimator after a sample, "xqc_send_ctl_on_ack_received|conn:" one packet
// acknowledged, "validate NAT rebinding addr" the path switch (xquic moves
// its one path to the new address), and any other line with "cwnd:" a
// sample of the window (with "srtt:" and "latest_rtt:" where it has them).
// xquic logs times and RTTs in µs.
func readXquicLog(data []byte) (*traceFacts, error) {
	s := &sockTrace{f: &traceFacts{Format: "xquic-log", HasAddrs: true}, prefix: "[xqc_"}
	s.logLine = func(t int64, line string) error {
		i := strings.IndexByte(line, '|')
		if i < 0 {
			return nil
		}
		text := line[i:]
		kv := xquicKV(text)
		num := func(k string) (int64, bool, error) {
			v, ok := kv[k]
			if !ok {
				return 0, false, nil
			}
			x, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil || x < 0 {
				return 0, false, fmt.Errorf("xquic field %s:%q is not a non-negative integer", k, v)
			}
			return x, true, nil
		}
		ev := func(kind string) { s.f.Events = append(s.f.Events, pathEvent{T: t, Kind: kind}) }
		switch {
		case strings.Contains(text, "|<==|"):
			pn, ok, err := num("pkt_num")
			if err != nil || !ok {
				return err
			}
			if kv["pkt_type"] == "SHORT_HEADER" {
				s.f.sentAt(pn, t)
			}
			return nil
		case strings.Contains(text, "|mark lost|"):
			return nil
		case strings.Contains(text, "|REBINDING|") && strings.Contains(text, "|send PATH_CHALLENGE|"):
			ev("challenge_sent")
			return nil
		case strings.Contains(text, "RECV path_response_data:"):
			ev("response_received")
			return nil
		case strings.Contains(text, "|after update rtt|"):
			sm := newSample(t)
			for _, k := range []struct {
				key string
				to  *int64
			}{{"srtt", &sm.SRTT}, {"minrtt", &sm.MinRTT}, {"latest_rtt", &sm.Latest}} {
				v, ok, err := num(k.key)
				if err != nil {
					return err
				}
				if ok {
					*k.to = v
				}
			}
			if sm.any() {
				s.f.Samples = append(s.f.Samples, sm)
			}
			return nil
		case strings.Contains(text, "xqc_send_ctl_on_ack_received|conn:"):
			pn, ok, err := num("pkt_num")
			if err != nil || !ok {
				return err
			}
			if pt := kv["pkt_type"]; pt == "" || pt == "SHORT_HEADER" {
				s.f.Acks = append(s.f.Acks, ack{T: t, Largest: pn})
			}
			return nil
		case strings.Contains(text, "validate NAT rebinding addr") && strings.Contains(text, "|conn:"):
			ev("path_active")
			return nil
		}
		cw, ok, err := num("cwnd")
		if err != nil || !ok {
			return err
		}
		sm := newSample(t)
		sm.Cwnd = cw
		for _, k := range []struct {
			key string
			to  *int64
		}{{"srtt", &sm.SRTT}, {"latest_rtt", &sm.Latest}} {
			v, ok, err := num(k.key)
			if err != nil {
				return err
			}
			if ok {
				*k.to = v
			}
		}
		s.f.Samples = append(s.f.Samples, sm)
		return nil
	}
	return s.read(data)
}

// xquicKV splits "|k:v|k:v|…" into its key:value fields (the last value of
// a repeated key wins; a field whose key has a space or comma is a phrase,
// not a field).
func xquicKV(s string) map[string]string {
	kv := map[string]string{}
	for _, f := range strings.Split(s, "|") {
		f = strings.TrimSpace(f)
		if k, v, ok := strings.Cut(f, ":"); ok && k != "" && !strings.ContainsAny(k, " ,") {
			kv[k] = v
		}
	}
	return kv
}
