package wire

import (
	"fmt"
	"strconv"
	"strings"
)

// Frame types of RFC 9000 §19 (and RFC 9221's DATAGRAM).
const (
	FramePadding            = 0x00
	FramePing               = 0x01
	FrameAck                = 0x02
	FrameAckECN             = 0x03
	FrameResetStream        = 0x04
	FrameStopSending        = 0x05
	FrameCrypto             = 0x06
	FrameNewToken           = 0x07
	FrameStream             = 0x08 // 0x08–0x0f
	FrameMaxData            = 0x10
	FrameMaxStreamData      = 0x11
	FrameMaxStreams         = 0x12 // and 0x13
	FrameDataBlocked        = 0x14
	FrameStreamDataBlocked  = 0x15
	FrameStreamsBlocked     = 0x16 // and 0x17
	FrameNewConnectionID    = 0x18
	FrameRetireConnectionID = 0x19
	FramePathChallenge      = 0x1a
	FramePathResponse       = 0x1b
	FrameConnectionClose    = 0x1c // and 0x1d
	FrameHandshakeDone      = 0x1e
	FrameDatagram           = 0x30 // and 0x31
)

// AckRange is an inclusive range of acknowledged packet numbers.
type AckRange struct{ Smallest, Largest int64 }

// Frame is one decoded frame. Only the fields of its type are set; the
// others are zero.
type Frame struct {
	Type uint64
	// ACK: ranges from the largest down; AckDelayRaw as encoded, AckDelayUS
	// scaled by the sender's ack_delay_exponent. ECN counts for 0x03.
	Ranges      []AckRange
	AckDelayRaw uint64
	AckDelayUS  int64
	ECN         *[3]uint64 // ECT(0), ECT(1), ECN-CE
	// PATH_CHALLENGE / PATH_RESPONSE.
	Data [8]byte
	// NEW_CONNECTION_ID / RETIRE_CONNECTION_ID.
	Seq, RetirePriorTo uint64
	ConnID             []byte
	// STREAM / CRYPTO / RESET_STREAM / STOP_SENDING / MAX_STREAM_DATA ...
	StreamID uint64
	Offset   uint64
	Length   uint64
	Fin      bool
	// CONNECTION_CLOSE.
	ErrorCode uint64
	// PADDING: how many bytes.
	Count int
}

// LargestAcked is an ACK frame's largest acknowledged packet number.
func (f *Frame) LargestAcked() int64 {
	if len(f.Ranges) == 0 {
		return -1
	}
	return f.Ranges[0].Largest
}

// Name is the frame type as RFC 9000 names it.
func (f *Frame) Name() string {
	t := f.Type
	switch {
	case t == FramePadding:
		return "PADDING"
	case t == FramePing:
		return "PING"
	case t == FrameAck:
		return "ACK"
	case t == FrameAckECN:
		return "ACK_ECN"
	case t == FrameResetStream:
		return "RESET_STREAM"
	case t == FrameStopSending:
		return "STOP_SENDING"
	case t == FrameCrypto:
		return "CRYPTO"
	case t == FrameNewToken:
		return "NEW_TOKEN"
	case t >= 0x08 && t <= 0x0f:
		return "STREAM"
	case t == FrameMaxData:
		return "MAX_DATA"
	case t == FrameMaxStreamData:
		return "MAX_STREAM_DATA"
	case t == 0x12 || t == 0x13:
		return "MAX_STREAMS"
	case t == FrameDataBlocked:
		return "DATA_BLOCKED"
	case t == FrameStreamDataBlocked:
		return "STREAM_DATA_BLOCKED"
	case t == 0x16 || t == 0x17:
		return "STREAMS_BLOCKED"
	case t == FrameNewConnectionID:
		return "NEW_CONNECTION_ID"
	case t == FrameRetireConnectionID:
		return "RETIRE_CONNECTION_ID"
	case t == FramePathChallenge:
		return "PATH_CHALLENGE"
	case t == FramePathResponse:
		return "PATH_RESPONSE"
	case t == 0x1c || t == 0x1d:
		return "CONNECTION_CLOSE"
	case t == FrameHandshakeDone:
		return "HANDSHAKE_DONE"
	case t == 0x30 || t == 0x31:
		return "DATAGRAM"
	}
	return fmt.Sprintf("0x%x", t)
}

// String is a one-line summary (the golden files' form).
func (f *Frame) String() string {
	var b strings.Builder
	b.WriteString(f.Name())
	switch {
	case f.Type == FrameAck || f.Type == FrameAckECN:
		b.WriteString("[")
		for i, r := range f.Ranges {
			if i > 0 {
				b.WriteString(",")
			}
			if r.Smallest == r.Largest {
				b.WriteString(strconv.FormatInt(r.Largest, 10))
			} else {
				fmt.Fprintf(&b, "%d-%d", r.Smallest, r.Largest)
			}
		}
		fmt.Fprintf(&b, " delay=%dus", f.AckDelayUS)
		if f.ECN != nil {
			fmt.Fprintf(&b, " ecn=%d/%d/%d", f.ECN[0], f.ECN[1], f.ECN[2])
		}
		b.WriteString("]")
	case f.Type == FramePathChallenge || f.Type == FramePathResponse:
		fmt.Fprintf(&b, "[%x]", f.Data)
	case f.Type == FrameNewConnectionID:
		fmt.Fprintf(&b, "[seq=%d retire<%d cid=%x]", f.Seq, f.RetirePriorTo, f.ConnID)
	case f.Type == FrameRetireConnectionID:
		fmt.Fprintf(&b, "[seq=%d]", f.Seq)
	case f.Type == FramePadding:
		fmt.Fprintf(&b, "[%d]", f.Count)
	case f.Type == FrameCrypto:
		fmt.Fprintf(&b, "[%d+%d]", f.Offset, f.Length)
	case f.Type >= 0x08 && f.Type <= 0x0f:
		fmt.Fprintf(&b, "[id=%d %d+%d", f.StreamID, f.Offset, f.Length)
		if f.Fin {
			b.WriteString(" fin")
		}
		b.WriteString("]")
	case f.Type == 0x1c || f.Type == 0x1d:
		fmt.Fprintf(&b, "[%d]", f.ErrorCode)
	}
	return b.String()
}

// parseFrames decodes a packet's plaintext payload. crypto receives the
// CRYPTO frames' data. ackExp scales ACK delays.
func parseFrames(p []byte, ackExp uint64, crypto func(off uint64, data []byte)) ([]Frame, error) {
	var out []Frame
	r := fr{b: p}
	for len(r.b) > 0 {
		start := len(p) - len(r.b)
		t := r.v()
		if r.bad {
			return out, fmt.Errorf("frame at byte %d: truncated type", start)
		}
		f := Frame{Type: t}
		switch {
		case t == FramePadding:
			n := 1
			for len(r.b) > 0 && r.b[0] == 0 {
				r.b = r.b[1:]
				n++
			}
			f.Count = n
		case t == FramePing, t == FrameHandshakeDone:
		case t == FrameAck || t == FrameAckECN:
			largest := r.v()
			f.AckDelayRaw = r.v()
			f.AckDelayUS = int64(f.AckDelayRaw << ackExp)
			count := r.v()
			first := r.v()
			if r.bad || first > largest || count > uint64(len(r.b)) {
				r.bad = true
				break
			}
			hi := int64(largest)
			lo := hi - int64(first)
			f.Ranges = make([]AckRange, 0, 1+count)
			f.Ranges = append(f.Ranges, AckRange{lo, hi})
			for range count {
				gap, l := r.v(), r.v()
				hi = lo - int64(gap) - 2
				lo = hi - int64(l)
				if r.bad || lo < 0 {
					r.bad = true
					break
				}
				f.Ranges = append(f.Ranges, AckRange{lo, hi})
			}
			if t == FrameAckECN {
				f.ECN = &[3]uint64{r.v(), r.v(), r.v()}
			}
		case t == FrameResetStream:
			f.StreamID, f.ErrorCode, f.Length = r.v(), r.v(), r.v()
		case t == FrameStopSending:
			f.StreamID, f.ErrorCode = r.v(), r.v()
		case t == FrameCrypto:
			f.Offset, f.Length = r.v(), r.v()
			data := r.bytes(f.Length)
			if !r.bad && crypto != nil {
				crypto(f.Offset, data)
			}
		case t == FrameNewToken:
			r.bytes(r.v())
		case t >= 0x08 && t <= 0x0f:
			f.StreamID = r.v()
			if t&0x04 != 0 {
				f.Offset = r.v()
			}
			if t&0x02 != 0 {
				f.Length = r.v()
			} else {
				f.Length = uint64(len(r.b))
			}
			f.Fin = t&0x01 != 0
			r.bytes(f.Length)
		case t == FrameMaxData, t == 0x12, t == 0x13, t == FrameDataBlocked, t == 0x16, t == 0x17:
			f.Offset = r.v()
		case t == FrameMaxStreamData, t == FrameStreamDataBlocked:
			f.StreamID, f.Offset = r.v(), r.v()
		case t == FrameNewConnectionID:
			f.Seq, f.RetirePriorTo = r.v(), r.v()
			n := r.bytes(1)
			if n != nil {
				f.ConnID = append([]byte(nil), r.bytes(uint64(n[0]))...)
			}
			r.bytes(16)
		case t == FrameRetireConnectionID:
			f.Seq = r.v()
		case t == FramePathChallenge || t == FramePathResponse:
			copy(f.Data[:], r.bytes(8))
		case t == 0x1c || t == 0x1d:
			f.ErrorCode = r.v()
			if t == 0x1c {
				r.v()
			}
			r.bytes(r.v())
		case t == 0x30:
			f.Length = uint64(len(r.b))
			r.bytes(f.Length)
		case t == 0x31:
			f.Length = r.v()
			r.bytes(f.Length)
		default:
			return out, fmt.Errorf("frame at byte %d: unknown type 0x%x", start, t)
		}
		if r.bad {
			return out, fmt.Errorf("frame %s at byte %d: truncated or malformed", f.Name(), start)
		}
		out = append(out, f)
	}
	return out, nil
}

// fr reads frame fields; bad sticks once a read runs past the end.
type fr struct {
	b   []byte
	bad bool
}

func (r *fr) v() uint64 {
	v, n := varint(r.b)
	if n == 0 {
		r.bad = true
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *fr) bytes(n uint64) []byte {
	if r.bad || n > uint64(len(r.b)) {
		r.bad = true
		return nil
	}
	v := r.b[:n]
	r.b = r.b[n:]
	return v
}
