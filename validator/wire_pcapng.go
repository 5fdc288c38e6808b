package validator

// The validator's own reading of a repetition's wire capture. It is
// written apart from parsers/wire on purpose (a walker over pcapng blocks
// with encoding/binary, no gopacket; the IP and UDP headers read by hand),
// so that a misreading shared by both cannot pass unseen.

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// datagram is one Enhanced Packet Block's UDP payload with what the
// emulator said about it.
type datagram struct {
	record  int // 1-based EPB ordinal, tshark's frame.number
	path    string
	s2c     bool
	wireNS  int64 // EPB timestamp: the emulator wrote it out (or dropped it)
	arrNS   int64 // arr=: it entered the link
	heldNS  int64 // held=: the emulator delayed it on purpose (pv-distinct)
	fate    string
	payload []byte // the captured part of the UDP payload
	whole   bool   // nothing cut
}

type pcapInterface struct {
	name     string
	linkType uint16
	// tsUnitsPerSec and tsOffset turn an EPB timestamp into unix ns.
	unitsPerSec uint64
	offsetSec   int64
}

const (
	blockSHB       = 0x0A0D0D0A
	blockIDB       = 0x00000001
	blockEPB       = 0x00000006
	linkTypeRaw    = 101
	linkTypeRawAlt = 12 // DLT_RAW as some writers spell it
	linkTypeIPv4   = 228
	linkTypeIPv6   = 229
)

// readCaptureFile reads a (gzipped or plain) pcapng. A truncated file is
// read up to the damage, which is then reported with the record it hit.
func readCaptureFile(path string) ([]datagram, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return parseCapture(filepath.Base(path), raw)
}

func parseCapture(name string, raw []byte) ([]datagram, error) {
	data := raw
	var gzErr error
	if len(raw) >= 2 && raw[0] == 0x1f && raw[1] == 0x8b {
		zr, err := gzip.NewReader(bytes.NewReader(raw))
		if err != nil {
			return nil, fmt.Errorf("%s: gzip header: %w", name, err)
		}
		data, gzErr = io.ReadAll(zr)
		if gzErr != nil && !errors.Is(gzErr, io.ErrUnexpectedEOF) {
			return nil, fmt.Errorf("%s: gzip after %d bytes: %w", name, len(data), gzErr)
		}
	}
	dgs, err := walkBlocks(name, data)
	if err != nil {
		if gzErr != nil {
			return nil, fmt.Errorf("%w (the gzip stream ends early: %v)", err, gzErr)
		}
		return nil, err
	}
	if gzErr != nil {
		return nil, fmt.Errorf("%s: truncated after record %d (byte %d of the pcapng): %w", name, len(dgs), len(data), gzErr)
	}
	return dgs, nil
}

// walkBlocks reads pcapng blocks: section headers (either byte order),
// interface descriptions and enhanced packets; other blocks are skipped.
func walkBlocks(name string, data []byte) ([]datagram, error) {
	var (
		order  binary.ByteOrder = binary.LittleEndian
		ifaces []pcapInterface
		out    []datagram
		epbs   int
	)
	for off := 0; off < len(data); {
		where := func() string {
			return fmt.Sprintf("%s: record %d (block at byte %d)", name, epbs+1, off)
		}
		if len(data)-off < 12 {
			return nil, fmt.Errorf("%s: truncated: %d bytes left, a block needs 12", where(), len(data)-off)
		}
		if off == 0 && binary.LittleEndian.Uint32(data) != blockSHB {
			return nil, fmt.Errorf("%s: not a pcapng (no section header block)", where())
		}
		if binary.LittleEndian.Uint32(data[off:]) == blockSHB {
			switch binary.LittleEndian.Uint32(data[off+8:]) {
			case 0x1A2B3C4D:
				order = binary.LittleEndian
			case 0x4D3C2B1A:
				order = binary.BigEndian
			default:
				return nil, fmt.Errorf("%s: section header without byte-order magic", where())
			}
			ifaces = nil // interface ids restart with each section
		}
		typ, size := order.Uint32(data[off:]), int(order.Uint32(data[off+4:]))
		if size < 12 || size%4 != 0 {
			return nil, fmt.Errorf("%s: block length %d", where(), size)
		}
		if size > len(data)-off {
			return nil, fmt.Errorf("%s: truncated: block of %d bytes, %d left", where(), size, len(data)-off)
		}
		if trailer := int(order.Uint32(data[off+size-4:])); trailer != size {
			return nil, fmt.Errorf("%s: block length %d at its start, %d at its end", where(), size, trailer)
		}
		body := data[off+8 : off+size-4]
		switch typ {
		case blockIDB:
			ifc, err := readIDB(order, body)
			if err != nil {
				return nil, fmt.Errorf("%s: interface %d: %w", where(), len(ifaces), err)
			}
			ifaces = append(ifaces, ifc)
		case blockEPB:
			at := where() // this record's number, before counting it
			epbs++
			dg, err := readEPB(order, body, ifaces)
			if errors.Is(err, errNotUDP) {
				break
			}
			if err != nil {
				return nil, fmt.Errorf("%s: %w", at, err)
			}
			dg.record = epbs
			out = append(out, dg)
		}
		off += size
	}
	return out, nil
}

// pcapOptions calls fn for each option of a block's options area.
func pcapOptions(order binary.ByteOrder, b []byte, fn func(code uint16, val []byte)) error {
	for len(b) >= 4 {
		code, n := order.Uint16(b), int(order.Uint16(b[2:]))
		if code == 0 { // opt_endofopt
			return nil
		}
		padded := (n + 3) &^ 3
		if 4+padded > len(b) {
			return fmt.Errorf("option %d of %d bytes overruns its block", code, n)
		}
		fn(code, b[4:4+n])
		b = b[4+padded:]
	}
	return nil
}

func readIDB(order binary.ByteOrder, b []byte) (pcapInterface, error) {
	if len(b) < 8 {
		return pcapInterface{}, fmt.Errorf("interface block of %d bytes", len(b))
	}
	ifc := pcapInterface{linkType: order.Uint16(b), unitsPerSec: 1_000_000}
	var bad error
	err := pcapOptions(order, b[8:], func(code uint16, val []byte) {
		switch code {
		case 2: // if_name
			ifc.name = string(val)
		case 9: // if_tsresol
			if len(val) < 1 {
				bad = fmt.Errorf("empty if_tsresol")
				return
			}
			exp, base := uint64(val[0]&0x7f), uint64(10)
			if val[0]&0x80 != 0 {
				base = 2
			}
			ifc.unitsPerSec = 1
			for range exp {
				ifc.unitsPerSec *= base
				if ifc.unitsPerSec > 1e18 {
					bad = fmt.Errorf("if_tsresol %#x finer than 1e-18 s", val[0])
					return
				}
			}
		case 14: // if_tsoffset
			if len(val) == 8 {
				ifc.offsetSec = int64(order.Uint64(val))
			}
		}
	})
	if err == nil {
		err = bad
	}
	return ifc, err
}

func readEPB(order binary.ByteOrder, b []byte, ifaces []pcapInterface) (datagram, error) {
	if len(b) < 20 {
		return datagram{}, fmt.Errorf("enhanced packet block of %d bytes", len(b))
	}
	id := order.Uint32(b)
	if int(id) >= len(ifaces) {
		return datagram{}, fmt.Errorf("interface %d not described (%d interfaces)", id, len(ifaces))
	}
	ifc := ifaces[id]
	ts := uint64(order.Uint32(b[4:]))<<32 | uint64(order.Uint32(b[8:]))
	capLen, origLen := int(order.Uint32(b[12:])), int(order.Uint32(b[16:]))
	if capLen > len(b)-20 {
		return datagram{}, fmt.Errorf("captured length %d overruns the block (%d bytes)", capLen, len(b)-20)
	}
	pkt := b[20 : 20+capLen]
	var comment string
	if err := pcapOptions(order, b[20+((capLen+3)&^3):], func(code uint16, val []byte) {
		if code == 1 && comment == "" { // opt_comment
			comment = string(val)
		}
	}); err != nil {
		return datagram{}, err
	}
	// Whole seconds and the remainder apart: ts*1e9 overflows for fine
	// resolutions.
	sec, frac := ts/ifc.unitsPerSec, ts%ifc.unitsPerSec
	hi, lo := bits.Mul64(frac, 1_000_000_000)
	ns, _ := bits.Div64(hi, lo, ifc.unitsPerSec)
	dg := datagram{path: ifc.name, wireNS: (int64(sec)+ifc.offsetSec)*1_000_000_000 + int64(ns)}
	if err := dg.readComment(comment); err != nil {
		return datagram{}, err
	}
	payload, udpLen, err := udpPayload(ifc.linkType, pkt)
	if err != nil {
		return datagram{}, err
	}
	dg.payload = payload
	dg.whole = capLen == origLen && len(payload) == udpLen
	return dg, nil
}

// readComment reads the contract's "dir=… arr=… fate=…".
func (dg *datagram) readComment(c string) error {
	kv := map[string]string{}
	for _, f := range strings.Fields(c) {
		if k, v, ok := strings.Cut(f, "="); ok {
			kv[k] = v
		}
	}
	if a, ok := kv["arr"]; ok {
		n, err := strconv.ParseInt(a, 10, 64)
		if err != nil {
			return fmt.Errorf("comment %q: arr: %w", c, err)
		}
		dg.arrNS = n
	}
	dg.fate = kv["fate"]
	if h, ok := kv["held"]; ok {
		n, err := strconv.ParseInt(h, 10, 64)
		if err != nil || n < 0 {
			return fmt.Errorf("comment %q: held: want a number of ns", c)
		}
		dg.heldNS = n
	}
	if d := kv["dir"]; d != "c2s" && d != "s2c" {
		return fmt.Errorf("comment %q: no dir=c2s|s2c", c)
	}
	dg.s2c = kv["dir"] == "s2c"
	return nil
}

// udpPayload strips the IP and UDP headers of a raw IP packet; udpLen is
// the payload's length as the UDP header states it.
// errNotUDP marks a record that is an IP packet but no UDP datagram (an
// ICMP error the endpoints' kernels sent across a path, e.g. port
// unreachable after the connection closed): the TUN device carried it, so
// the capture holds it; it is skipped, as parsers/wire skips it.
var errNotUDP = errors.New("not UDP")

func udpPayload(linkType uint16, p []byte) (payload []byte, udpLen int, err error) {
	switch linkType {
	case linkTypeRaw, linkTypeRawAlt, linkTypeIPv4, linkTypeIPv6:
	default:
		return nil, 0, fmt.Errorf("link type %d, want LINKTYPE_RAW (101)", linkType)
	}
	if len(p) < 1 {
		return nil, 0, fmt.Errorf("empty packet")
	}
	var hdr int
	switch p[0] >> 4 {
	case 4:
		if len(p) < 20 {
			return nil, 0, fmt.Errorf("IPv4 header cut at %d bytes", len(p))
		}
		hdr = int(p[0]&0x0f) * 4
		if p[9] != 17 {
			return nil, 0, fmt.Errorf("IPv4 protocol %d: %w", p[9], errNotUDP)
		}
		if binary.BigEndian.Uint16(p[6:])&0x3fff != 0 {
			return nil, 0, fmt.Errorf("IPv4 fragment")
		}
	case 6:
		if len(p) < 40 {
			return nil, 0, fmt.Errorf("IPv6 header cut at %d bytes", len(p))
		}
		hdr = 40
		if p[6] != 17 {
			return nil, 0, fmt.Errorf("IPv6 next header %d (extension headers are not read): %w", p[6], errNotUDP)
		}
	default:
		return nil, 0, fmt.Errorf("IP version %d", p[0]>>4)
	}
	if len(p) < hdr+8 {
		return nil, 0, fmt.Errorf("UDP header cut (%d bytes captured)", len(p))
	}
	udpLen = int(binary.BigEndian.Uint16(p[hdr+4:])) - 8
	if udpLen < 0 {
		return nil, 0, fmt.Errorf("UDP length %d", udpLen+8)
	}
	payload = p[hdr+8:]
	if len(payload) > udpLen {
		payload = payload[:udpLen]
	}
	return payload, udpLen, nil
}
