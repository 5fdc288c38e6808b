package wire

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
)

// The pcapng reading here is the part of the format the wire contract
// uses (section header, interface description with if_name, if_tsresol
// and if_tsoffset, enhanced and simple packet blocks with opt_comment);
// every other block is skipped. It is written here rather than taken from
// gopacket's pcapgo because pcapgo imports gopacket/layers, which imports
// net: the analysis runs in migaudit's lean front, which must not link net
// (cmd/migaudit TestFrontStaysLean). The tests read every record with
// pcapgo too and require the same result (TestPcapngMatchesPcapgo).

const (
	blockSHB = 0x0A0D0D0A
	blockIDB = 0x00000001
	blockSPB = 0x00000003
	blockEPB = 0x00000006

	optEnd       = 0
	optComment   = 1
	optIfName    = 2
	optIfTsresol = 9
	optIfTsoff   = 14

	maxBlock = 1 << 26

	linkTypeRaw  = 101
	linkTypeIPv4 = 228
	linkTypeIPv6 = 229
)

type ngInterface struct {
	name     string
	linkType uint16
	snapLen  uint32
	// units per second of the timestamps, and the offset in seconds.
	units  uint64
	offset int64
}

// ngRecord is one packet record; data is valid until the next call to
// next.
type ngRecord struct {
	iface    int
	unixNS   int64
	capLen   int
	origLen  int
	data     []byte
	comments []string
}

type ngReader struct {
	r       *bufio.Reader
	order   binary.ByteOrder
	ifaces  []ngInterface
	comment string // the first section's comment
	buf     []byte
	hdr     [8]byte
	started bool
}

func newNgReader(r io.Reader) (*ngReader, error) {
	n := &ngReader{r: bufio.NewReaderSize(r, 1<<16)}
	var head [12]byte
	if _, err := io.ReadFull(n.r, head[:]); err != nil {
		return nil, errors.New("it ends before its section header")
	}
	if binary.LittleEndian.Uint32(head[:4]) != blockSHB {
		return nil, fmt.Errorf("it starts with %x, not a section header block", head[:4])
	}
	if err := n.section(head); err != nil {
		return nil, err
	}
	return n, nil
}

// section reads a section header whose first 12 bytes are head.
func (n *ngReader) section(head [12]byte) error {
	switch binary.LittleEndian.Uint32(head[8:12]) {
	case 0x1A2B3C4D:
		n.order = binary.LittleEndian
	case 0x4D3C2B1A:
		n.order = binary.BigEndian
	default:
		return fmt.Errorf("section header with byte-order magic %x", head[8:12])
	}
	length := n.order.Uint32(head[4:8])
	if length < 28 || length%4 != 0 || length > maxBlock {
		return fmt.Errorf("section header of length %d", length)
	}
	body, err := n.read(int(length) - 12)
	if err != nil {
		return err
	}
	if major := n.order.Uint16(body[0:2]); major != 1 {
		return fmt.Errorf("pcapng version %d", major)
	}
	n.ifaces = n.ifaces[:0]
	comments, _ := n.options(body[12:len(body)-4], func(code uint16, v []byte) {})
	if !n.started && len(comments) > 0 {
		n.comment = comments[0]
	}
	n.started = true
	return nil
}

func (n *ngReader) read(k int) ([]byte, error) {
	if cap(n.buf) < k {
		n.buf = make([]byte, k)
	}
	b := n.buf[:k]
	if _, err := io.ReadFull(n.r, b); err != nil {
		return nil, io.ErrUnexpectedEOF
	}
	return b, nil
}

// options walks an options list; comments are returned, the others
// passed to f.
func (n *ngReader) options(b []byte, f func(code uint16, v []byte)) ([]string, error) {
	var comments []string
	for len(b) >= 4 {
		code, l := n.order.Uint16(b[0:2]), int(n.order.Uint16(b[2:4]))
		if code == optEnd {
			break
		}
		padded := (l + 3) &^ 3
		if 4+padded > len(b) {
			return comments, fmt.Errorf("option %d of length %d runs past its block", code, l)
		}
		v := b[4 : 4+l]
		if code == optComment {
			comments = append(comments, string(v))
		} else {
			f(code, v)
		}
		b = b[4+padded:]
	}
	return comments, nil
}

// next returns the next packet record; io.EOF at the end.
func (n *ngReader) next() (ngRecord, error) {
	for {
		if _, err := io.ReadFull(n.r, n.hdr[:]); err != nil {
			if err == io.EOF {
				return ngRecord{}, io.EOF
			}
			return ngRecord{}, io.ErrUnexpectedEOF
		}
		typ := n.order.Uint32(n.hdr[0:4])
		if typ == blockSHB {
			var head [12]byte
			copy(head[:], n.hdr[:])
			if _, err := io.ReadFull(n.r, head[8:12]); err != nil {
				return ngRecord{}, io.ErrUnexpectedEOF
			}
			if err := n.section(head); err != nil {
				return ngRecord{}, err
			}
			continue
		}
		length := n.order.Uint32(n.hdr[4:8])
		if length < 12 || length%4 != 0 || length > maxBlock {
			return ngRecord{}, fmt.Errorf("block of type 0x%x with length %d", typ, length)
		}
		body, err := n.read(int(length) - 8)
		if err != nil {
			return ngRecord{}, err
		}
		body = body[:len(body)-4] // trailing length
		switch typ {
		case blockIDB:
			if err := n.idb(body); err != nil {
				return ngRecord{}, err
			}
		case blockEPB:
			return n.epb(body)
		case blockSPB:
			if len(n.ifaces) == 0 || len(body) < 4 {
				return ngRecord{}, errors.New("simple packet block without an interface")
			}
			orig := int(n.order.Uint32(body[0:4]))
			capLen := min(orig, len(body)-4)
			if s := int(n.ifaces[0].snapLen); s > 0 && capLen > s {
				capLen = s
			}
			return ngRecord{iface: 0, origLen: orig, capLen: capLen, data: body[4 : 4+capLen]}, nil
		}
	}
}

func (n *ngReader) idb(body []byte) error {
	if len(body) < 8 {
		return errors.New("interface description block too short")
	}
	in := ngInterface{linkType: n.order.Uint16(body[0:2]), snapLen: n.order.Uint32(body[4:8]), units: 1_000_000}
	var bad error
	_, err := n.options(body[8:], func(code uint16, v []byte) {
		switch code {
		case optIfName:
			in.name = string(v)
		case optIfTsresol:
			if len(v) < 1 {
				return
			}
			r := v[0]
			var units float64
			if r&0x80 == 0 {
				units = math.Pow(10, float64(r))
			} else {
				units = math.Pow(2, float64(r&0x7f))
			}
			if units < 1 || units > 1e18 {
				bad = fmt.Errorf("interface if_tsresol %d", r)
				return
			}
			in.units = uint64(units)
		case optIfTsoff:
			if len(v) == 8 {
				in.offset = int64(n.order.Uint64(v))
			}
		}
	})
	if err == nil {
		err = bad
	}
	if err != nil {
		return err
	}
	n.ifaces = append(n.ifaces, in)
	return nil
}

func (n *ngReader) epb(body []byte) (ngRecord, error) {
	if len(body) < 20 {
		return ngRecord{}, errors.New("enhanced packet block too short")
	}
	id := int(n.order.Uint32(body[0:4]))
	if id >= len(n.ifaces) {
		return ngRecord{}, fmt.Errorf("packet on interface %d, but the section describes %d", id, len(n.ifaces))
	}
	in := n.ifaces[id]
	ts := uint64(n.order.Uint32(body[4:8]))<<32 | uint64(n.order.Uint32(body[8:12]))
	capLen := int(n.order.Uint32(body[12:16]))
	orig := int(n.order.Uint32(body[16:20]))
	padded := (capLen + 3) &^ 3
	if capLen < 0 || 20+padded > len(body) {
		return ngRecord{}, fmt.Errorf("captured length %d runs past its block", capLen)
	}
	sec := ts / in.units
	frac := ts % in.units
	ns := (int64(sec)+in.offset)*1e9 + int64(float64(frac)*1e9/float64(in.units))
	comments, err := n.options(body[20+padded:], func(uint16, []byte) {})
	if err != nil {
		return ngRecord{}, err
	}
	return ngRecord{iface: id, unixNS: ns, capLen: capLen, origLen: orig, data: body[20 : 20+capLen], comments: comments}, nil
}
