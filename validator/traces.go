package validator

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"unsafe"

	"github.com/tidwall/gjson"
)

// sample is one reading of the congestion state; absent fields are -1.
type sample struct {
	Path   string // path id where the format has one
	T      int64  // µs from the trace's reference
	Cwnd   int64
	SRTT   int64 // µs
	Latest int64
	MinRTT int64
}

// pathEvent is a path-validation frame or a peer-address observation.
type pathEvent struct {
	T    int64
	Kind string // challenge_sent, challenge_received, response_sent, response_received, peer_addr, path_active
	Addr string // ip:port for peer_addr
}

// traceFacts is what the validator's own readers find in a trace.
type traceFacts struct {
	Format  string
	SHA256  string
	Vantage string
	Samples []sample
	Events  []pathEvent
	// HasAddrs is true when the format logs peer addresses at all.
	HasAddrs bool
	// PathIDs is true when samples carry a path id (per-path timelines).
	PathIDs bool
	// Sent maps packet numbers to send times; Acks are received ACKs with
	// the largest packet number each acknowledged (JSON-SEQ qlog).
	Sent map[int64]int64
	Acks []ack
}

type ack struct {
	T       int64
	Largest int64
}

// readTrace opens a (possibly gzipped) trace and dispatches on content.
func readTrace(path string) (*traceFacts, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	data, err := decompress(raw)
	if err != nil && !errors.Is(err, errTruncated) {
		return nil, fmt.Errorf("%s: gzip: %w", path, err)
	}
	return traceFrom(path, raw, data)
}

// traceFrom reads a trace's facts from its file content raw, decompressed
// as data.
func traceFrom(path string, raw, data []byte) (*traceFacts, error) {
	var f *traceFacts
	var err error
	sum := sha256.Sum256(raw)
	head := bytes.TrimLeft(data[:min(len(data), 4096)], " \t\r\n\x1e")
	switch {
	case liveFormatReader(head) != nil:
		f, err = liveFormatReader(head)(data)
	case bytes.Contains(head, []byte(`"qlog_version": "draft-00"`)) || bytes.Contains(head, []byte(`"event_fields"`)):
		f, err = readPositionalQlog(data)
	case len(head) > 0 && head[0] == '{':
		f, err = readJSONSeq(data)
	case bytes.HasPrefix(head, []byte("[")):
		f, err = readMsquicLog(data)
	default:
		f, err = readCSV(data)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	f.SHA256 = hex.EncodeToString(sum[:])
	return f, nil
}

// view is b as a string without a copy, for reading with gjson: b is not
// changed while the view is in use, and a value kept from it must be
// copied (strings.Clone, or a string built anew).
func view(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

func msToUS(ms float64) int64 { return int64(math.Round(ms * 1000)) }

// readJSONSeq reads JSON-SEQ qlog (quic-go, ngtcp2, quiche): times and RTTs
// in milliseconds. A truncated final record is skipped.
func readJSONSeq(data []byte) (*traceFacts, error) {
	f := &traceFacts{Format: "qlog-json-seq"}
	rec := 0
	for len(data) > 0 {
		var line []byte
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			line, data = data, nil
		}
		line = bytes.Trim(line, "\x1e \t\r")
		if len(line) == 0 {
			continue
		}
		rec++
		if !gjson.ValidBytes(line) {
			if len(data) == 0 {
				break // truncated final record
			}
			return nil, fmt.Errorf("record %d is not JSON", rec)
		}
		if rec == 1 {
			f.Vantage = strings.Clone(gjson.GetBytes(line, "trace.vantage_point.type").String())
			continue
		}
		// One pass over a view of the record's fields (no value below is
		// kept beyond it); the first of a repeated key counts, as with Get.
		var r [3]gjson.Result
		gjson.Parse(view(line)).ForEach(func(k, x gjson.Result) bool {
			j := -1
			switch k.Str {
			case "time":
				j = 0
			case "name":
				j = 1
			case "data":
				j = 2
			}
			if j >= 0 && !r[j].Exists() {
				r[j] = x
			}
			return true
		})
		t := msToUS(r[0].Float())
		name := r[1].String()
		d := r[2]
		switch {
		case strings.HasSuffix(name, "metrics_updated"):
			s := sample{T: t, Cwnd: -1, SRTT: -1, Latest: -1, MinRTT: -1}
			// One pass over the fields, no map per record (the last of a
			// repeated key wins, as it would in a map).
			d.ForEach(func(k, v gjson.Result) bool {
				if !d.IsObject() {
					return false
				}
				switch k.Str {
				case "congestion_window":
					s.Cwnd = v.Int()
				case "smoothed_rtt":
					s.SRTT = msToUS(v.Float())
				case "latest_rtt":
					s.Latest = msToUS(v.Float())
				case "min_rtt":
					s.MinRTT = msToUS(v.Float())
				}
				return true
			})
			if s.Cwnd >= 0 || s.SRTT >= 0 || s.Latest >= 0 {
				f.Samples = append(f.Samples, s)
			}
		case strings.HasSuffix(name, "packet_sent"), strings.HasSuffix(name, "packet_received"):
			dir := "sent"
			if strings.HasSuffix(name, "received") {
				dir = "received"
			}
			f.packet(t, dir, d)
		}
	}
	return f, nil
}

// packet records what a packet_sent or packet_received event holds (the
// same fields in JSON-SEQ qlog and picoquic's positional draft-00): the
// first send instant of each packet number, the largest packet number each
// received ACK covers, and path-validation frames.
func (f *traceFacts) packet(t int64, dir string, d gjson.Result) {
	if dir == "sent" {
		if pn := d.Get("header.packet_number"); pn.Exists() {
			if f.Sent == nil {
				f.Sent = map[int64]int64{}
			}
			if _, dup := f.Sent[pn.Int()]; !dup {
				f.Sent[pn.Int()] = t
			}
		}
	}
	d.Get("frames").ForEach(func(_, fr gjson.Result) bool {
		switch fr.Get("frame_type").String() {
		case "ack":
			if dir == "received" {
				largest := int64(-1)
				fr.Get("acked_ranges").ForEach(func(_, rg gjson.Result) bool {
					switch {
					case rg.IsArray():
						rg.ForEach(func(_, x gjson.Result) bool {
							largest = max(largest, x.Int())
							return true
						})
					case rg.Type != gjson.Null:
						largest = max(largest, rg.Int())
					}
					return true
				})
				if largest >= 0 {
					f.Acks = append(f.Acks, ack{T: t, Largest: largest})
				}
			}
		case "path_challenge":
			f.Events = append(f.Events, pathEvent{T: t, Kind: "challenge_" + dir})
		case "path_response":
			f.Events = append(f.Events, pathEvent{T: t, Kind: "response_" + dir})
		}
		return true
	})
}

// readPositionalQlog reads picoquic's draft-00 document: positional events
// [relative_time, category, event, data], microseconds.
func readPositionalQlog(data []byte) (*traceFacts, error) {
	if !gjson.ValidBytes(data) {
		return nil, fmt.Errorf("draft-00 qlog is not a valid JSON document")
	}
	f := &traceFacts{Format: "qlog-draft-00", HasAddrs: true}
	// A view, not a copy (GetBytes would copy traces.0, nearly the whole
	// document): every string kept in the facts below is a new one.
	tr := gjson.Get(view(data), "traces.0")
	// A clone: the value is a substring of the whole document's copy,
	// which it would otherwise keep alive as long as the facts.
	f.Vantage = strings.Clone(tr.Get("vantage_point.type").String())
	tr.Get("events").ForEach(func(_, ev gjson.Result) bool {
		// The first four fields without a slice per event.
		if !ev.IsArray() {
			return true
		}
		var a [4]gjson.Result
		n := 0
		ev.ForEach(func(_, x gjson.Result) bool {
			a[n] = x
			n++
			return n < len(a)
		})
		if n < 4 {
			return true
		}
		t := a[0].Int()
		name, d := a[2].String(), a[3]
		switch name {
		case "metrics_updated":
			s := sample{T: t, Cwnd: -1, SRTT: -1, Latest: -1, MinRTT: -1}
			if v := d.Get("cwnd"); v.Exists() {
				s.Cwnd = v.Int()
			}
			if v := d.Get("smoothed_rtt"); v.Exists() {
				s.SRTT = v.Int()
			}
			if v := d.Get("latest_rtt"); v.Exists() {
				s.Latest = v.Int()
			}
			if v := d.Get("min_rtt"); v.Exists() {
				s.MinRTT = v.Int()
			}
			f.Samples = append(f.Samples, s)
		case "datagram_received":
			if from := d.Get("addr_from"); from.Exists() {
				ip := from.Get("ip_v4").String()
				port := from.Get("port_v4").String()
				if ip == "" {
					ip, port = from.Get("ip_v6").String(), from.Get("port_v6").String()
				}
				f.Events = append(f.Events, pathEvent{T: t, Kind: "peer_addr", Addr: ip + ":" + port})
			}
		case "packet_received", "packet_sent":
			dir := "sent"
			if name == "packet_received" {
				dir = "received"
			}
			f.packet(t, dir, d)
		}
		return true
	})
	return f, nil
}

var (
	msquicStats  = lazyRegexp(`t_us=(\d+) STATS cwnd=(\d+) srtt_us=(\d+) min_rtt_us=(\d+)`)
	msquicTime   = lazyRegexp(`t_us=(\d+)`)
	msquicRemote = lazyRegexp(`New Remote IP: ([0-9a-fA-F.:\[\]]+)`)
)

// readMsquicLog reads msquic's stdout trace: STATS lines polled every 5 ms
// and connection log lines without a timestamp of their own (they are
// placed at the last timestamp seen before them).
func readMsquicLog(data []byte) (*traceFacts, error) {
	f := &traceFacts{Format: "msquic-log", HasAddrs: true}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var last int64
	for sc.Scan() {
		line := sc.Text()
		if strings.Contains(line, "[mq_server]") {
			f.Vantage = "server"
		} else if strings.Contains(line, "[mq_client]") && f.Vantage == "" {
			f.Vantage = "client"
		}
		if m := msquicStats().FindStringSubmatch(line); m != nil {
			t, _ := strconv.ParseInt(m[1], 10, 64)
			cw, _ := strconv.ParseInt(m[2], 10, 64)
			srtt, _ := strconv.ParseInt(m[3], 10, 64)
			mr, _ := strconv.ParseInt(m[4], 10, 64)
			last = t
			f.Samples = append(f.Samples, sample{T: t, Cwnd: cw, SRTT: srtt, Latest: -1, MinRTT: mr})
			continue
		}
		if m := msquicTime().FindStringSubmatch(line); m != nil {
			last, _ = strconv.ParseInt(m[1], 10, 64)
		}
		if m := msquicRemote().FindStringSubmatch(line); m != nil {
			f.Events = append(f.Events, pathEvent{T: last, Kind: "peer_addr", Addr: m[1]})
		}
		if strings.Contains(line, "Set active") {
			f.Events = append(f.Events, pathEvent{T: last, Kind: "path_active"})
		}
	}
	return f, sc.Err()
}

// readCSV reads a timeline CSV (time_us,cwnd,bytes_in_flight,smoothed_rtt,
// min_rtt,latest_rtt, possibly with leading label columns). A per-path
// timeline (quiche's harness: path_id, local, peer columns, one row per path
// per poll) yields per-path samples and the first appearance of each peer
// address; a plain one logs no path events.
func readCSV(data []byte) (*traceFacts, error) {
	f := &traceFacts{Format: "timeline-csv"}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	col := map[string]int{}
	n := 0
	seenPeer := map[string]bool{}
	for sc.Scan() {
		n++
		fields := strings.Split(strings.TrimSpace(sc.Text()), ",")
		if n == 1 {
			for i, h := range fields {
				col[strings.TrimSpace(h)] = i
			}
			if _, ok := col["time_us"]; !ok {
				return nil, fmt.Errorf("line 1: not a timeline CSV (no time_us column)")
			}
			_, f.PathIDs = col["path_id"]
			_, f.HasAddrs = col["peer"]
			continue
		}
		field := func(name string) string {
			i, ok := col[name]
			if !ok || i >= len(fields) {
				return ""
			}
			return fields[i]
		}
		get := func(name string) int64 {
			v, err := strconv.ParseFloat(field(name), 64)
			if err != nil {
				return -1
			}
			return int64(math.Round(v))
		}
		if r := field("role"); r != "" && f.Vantage == "" {
			f.Vantage = r
		}
		s := sample{Path: field("path_id"), T: get("time_us"), Cwnd: get("cwnd"), SRTT: get("smoothed_rtt"), Latest: get("latest_rtt"), MinRTT: get("min_rtt")}
		if peer := field("peer"); peer != "" && !seenPeer[peer] {
			seenPeer[peer] = true
			f.Events = append(f.Events, pathEvent{T: s.T, Kind: "peer_addr", Addr: peer})
		}
		f.Samples = append(f.Samples, s)
	}
	return f, sc.Err()
}
