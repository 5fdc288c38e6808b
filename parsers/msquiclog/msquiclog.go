// Package msquiclog reads the log written by msquic built with this
// project's instrumentation patch (harnesses/msquic/patches/instrument.patch,
// `migaudit run --impl msquic --instrument`): <role>.instrument.log(.gz) in
// each repetition directory.
//
// The file starts with the line "# migaudit-msquic-instrument 1"; every
// other line is
//
//	unix_us=<CLOCK_REALTIME µs> mono_us=<CLOCK_MONOTONIC µs> <KIND> key=value ...
//
// with KIND one of
//
//	PATH_NEW     server path_id index            QuicPathInitialize assigned an ID
//	PATH_ACTIVE  server path_id prev_path_id local remote port_change_only srtt_us
//	                                              QuicPathSetActive made path_id Paths[0]
//	                                              (prev_path_id -1: Paths[0] itself)
//	SENT         server pn send_path_id stamped_path_id local remote
//	                                              the first packet after the sending
//	                                              path, the PathId stamped in its metadata
//	                                              or the remote address changed
//	RTT_GATE     server rx_pn ack_path_id ack_path_active remote level new_largest
//	             largest_pn largest_path_id retransmittable different_path update
//	             min_rtt_us ack_delay_us srtt_us
//	                                              one ACK frame that acknowledged packets,
//	                                              at the gate of QuicConnUpdateRtt
//	                                              (loss_detection.c:1502 at the pin)
//	LOSS         server largest_lost_pn largest_sent_pn recovery_pn_before had_event
//	             persistent lost_bytes cwnd_before cwnd_after congestion_event
//	                                              CUBIC's OnDataLost: one loss event, and
//	                                              whether it was a new congestion event
//
// Values contain no spaces (addresses are "ip:port"). Unknown kinds and
// unknown keys are kept, so a later patch may add fields.
package msquiclog

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// Magic is the first line of every log.
const Magic = "# migaudit-msquic-instrument 1"

// Event kinds.
const (
	PathNew    = "PATH_NEW"
	PathActive = "PATH_ACTIVE"
	Sent       = "SENT"
	RTTGate    = "RTT_GATE"
	Loss       = "LOSS"
)

// Event is one line.
type Event struct {
	Line   int
	UnixUS int64
	MonoUS int64
	Kind   string
	Fields map[string]string
}

// Int returns field k as an integer.
func (e Event) Int(k string) (int64, error) {
	v, ok := e.Fields[k]
	if !ok {
		return 0, fmt.Errorf("%s has no %s", e.Kind, k)
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		// msquic's "no measurement" values are UINT64_MAX.
		u, uerr := strconv.ParseUint(v, 10, 64)
		if uerr != nil {
			return 0, fmt.Errorf("%s %s=%q is not an integer", e.Kind, k, v)
		}
		n = int64(min(u, 1<<63-1))
	}
	return n, nil
}

// Gate is an RTT_GATE line.
type Gate struct {
	Line            int
	UnixUS, MonoUS  int64
	Server          bool
	RxPN            int64
	AckPathID       int64 // the path the ACK arrived on (its Path->ID)
	AckPathActive   bool
	Remote          string
	NewLargest      bool
	LargestPN       int64
	LargestPathID   int64 // the PathId recorded in the largest newly acked packet's metadata (-1: none)
	Retransmittable bool  // NewLargestAckRetransmittable
	DifferentPath   bool  // NewLargestAckDifferentPath
	Update          bool  // QuicConnUpdateRtt ran
	MinRTTUS        int64
	AckDelayUS      int64
	SRTTUS          int64 // the receiving path's smoothed RTT after the gate
}

// Active is a PATH_ACTIVE line.
type Active struct {
	Line           int
	UnixUS, MonoUS int64
	Server         bool
	PathID         int64
	PrevPathID     int64 // -1: Paths[0] itself was made active
	Local, Remote  string
	PortChangeOnly bool
	SRTTUS         int64
}

// SentChange is a SENT line.
type SentChange struct {
	Line           int
	UnixUS, MonoUS int64
	Server         bool
	PN             int64
	SendPathID     int64 // Path->ID of the path the packet was sent on
	StampedPathID  int64 // QUIC_SENT_PACKET_METADATA.PathId
	Local, Remote  string
}

// LossEvent is a LOSS line.
type LossEvent struct {
	Line             int
	UnixUS, MonoUS   int64
	Server           bool
	LargestLostPN    int64
	LargestSentPN    int64
	RecoveryPNBefore int64 // CUBIC's RecoverySentPacketNumber before the event
	HadEvent         bool  // HasHadCongestionEvent before the event
	Persistent       bool
	LostBytes        int64
	CwndBefore       int64
	CwndAfter        int64
	CongestionEvent  bool // a new congestion event (the window was cut)
}

// Log is one parsed file.
type Log struct {
	Name   string
	Events []Event
	Gates  []Gate
	Active []Active
	Sent   []SentChange
	Losses []LossEvent
}

// ReadFile reads a log, gzip-compressed or not.
func ReadFile(path string) (*Log, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return Read(path, f)
}

// Read parses a log from r (gzip is detected); name is for messages.
func Read(name string, r io.Reader) (*Log, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	if peek, _ := br.Peek(2); bytes.Equal(peek, []byte{0x1f, 0x8b}) {
		z, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("%s: gzip: %w", name, err)
		}
		defer z.Close()
		br = bufio.NewReaderSize(z, 64<<10)
	}
	sc := bufio.NewScanner(br)
	sc.Buffer(make([]byte, 4096), 1<<20)
	l := &Log{Name: name}
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if n == 1 {
			if line != Magic {
				return nil, fmt.Errorf("%s:1: not a migaudit msquic instrumentation log (want %q; written by `migaudit run --impl msquic --instrument`)", name, Magic)
			}
			continue
		}
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		e, err := parseLine(n, line)
		if err != nil {
			return nil, fmt.Errorf("%s:%w", name, err)
		}
		if err := l.add(e); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", name, n, err)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: after line %d: %w", name, n, err)
	}
	if n == 0 {
		return nil, fmt.Errorf("%s: empty file (want the line %q first)", name, Magic)
	}
	return l, nil
}

func parseLine(n int, line string) (Event, error) {
	e := Event{Line: n, Fields: map[string]string{}}
	toks := strings.Fields(line)
	if len(toks) < 3 {
		return e, fmt.Errorf("%d: want unix_us=… mono_us=… KIND …, got %q", n, line)
	}
	for i, want := range []string{"unix_us", "mono_us"} {
		k, v, ok := strings.Cut(toks[i], "=")
		if !ok || k != want {
			return e, fmt.Errorf("%d: field %d is %q, want %s=…", n, i+1, toks[i], want)
		}
		t, err := strconv.ParseInt(v, 10, 64)
		if err != nil || t < 0 {
			return e, fmt.Errorf("%d: %s=%q is not a time in µs", n, want, v)
		}
		if i == 0 {
			e.UnixUS = t
		} else {
			e.MonoUS = t
		}
	}
	e.Kind = toks[2]
	if strings.Contains(e.Kind, "=") {
		return e, fmt.Errorf("%d: no event kind after the timestamps (got %q)", n, e.Kind)
	}
	for _, t := range toks[3:] {
		k, v, ok := strings.Cut(t, "=")
		if !ok || k == "" {
			return e, fmt.Errorf("%d: %s: %q is not key=value", n, e.Kind, t)
		}
		e.Fields[k] = v
	}
	return e, nil
}

// fields reads the named integer fields of e in order.
func fields(e Event, keys ...string) ([]int64, error) {
	out := make([]int64, len(keys))
	for i, k := range keys {
		v, err := e.Int(k)
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

func (l *Log) add(e Event) error {
	l.Events = append(l.Events, e)
	switch e.Kind {
	case RTTGate:
		v, err := fields(e, "server", "rx_pn", "ack_path_id", "ack_path_active", "new_largest", "largest_pn", "largest_path_id",
			"retransmittable", "different_path", "update", "min_rtt_us", "ack_delay_us", "srtt_us")
		if err != nil {
			return err
		}
		l.Gates = append(l.Gates, Gate{Line: e.Line, UnixUS: e.UnixUS, MonoUS: e.MonoUS, Server: v[0] != 0, RxPN: v[1], AckPathID: v[2],
			AckPathActive: v[3] != 0, Remote: e.Fields["remote"], NewLargest: v[4] != 0, LargestPN: v[5], LargestPathID: v[6],
			Retransmittable: v[7] != 0, DifferentPath: v[8] != 0, Update: v[9] != 0, MinRTTUS: v[10], AckDelayUS: v[11], SRTTUS: v[12]})
	case PathActive:
		v, err := fields(e, "server", "path_id", "prev_path_id", "port_change_only", "srtt_us")
		if err != nil {
			return err
		}
		l.Active = append(l.Active, Active{Line: e.Line, UnixUS: e.UnixUS, MonoUS: e.MonoUS, Server: v[0] != 0, PathID: v[1], PrevPathID: v[2],
			Local: e.Fields["local"], Remote: e.Fields["remote"], PortChangeOnly: v[3] != 0, SRTTUS: v[4]})
	case Sent:
		v, err := fields(e, "server", "pn", "send_path_id", "stamped_path_id")
		if err != nil {
			return err
		}
		l.Sent = append(l.Sent, SentChange{Line: e.Line, UnixUS: e.UnixUS, MonoUS: e.MonoUS, Server: v[0] != 0, PN: v[1], SendPathID: v[2],
			StampedPathID: v[3], Local: e.Fields["local"], Remote: e.Fields["remote"]})
	case Loss:
		v, err := fields(e, "server", "largest_lost_pn", "largest_sent_pn", "recovery_pn_before", "had_event", "persistent",
			"lost_bytes", "cwnd_before", "cwnd_after", "congestion_event")
		if err != nil {
			return err
		}
		l.Losses = append(l.Losses, LossEvent{Line: e.Line, UnixUS: e.UnixUS, MonoUS: e.MonoUS, Server: v[0] != 0, LargestLostPN: v[1],
			LargestSentPN: v[2], RecoveryPNBefore: v[3], HadEvent: v[4] != 0, Persistent: v[5] != 0, LostBytes: v[6],
			CwndBefore: v[7], CwndAfter: v[8], CongestionEvent: v[9] != 0})
	case PathNew:
		if _, err := fields(e, "server", "path_id", "index"); err != nil {
			return err
		}
	}
	return nil
}
