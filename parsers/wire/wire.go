// Package wire reads a repetition's wire evidence: the link emulator's
// pcapng of every datagram on both paths (wire.pcapng.gz) and the
// endpoints' TLS secrets (keylog.txt, NSS key log format), and yields every
// QUIC v1 packet with its path, direction, wire time and, where the
// datagram is whole and decrypts, its frames (RFC 9000, RFC 9001).
//
// The capture contract: interface 0 is pathA, 1 pathB,
// LINKTYPE_RAW; each Enhanced Packet Block's comment carries
// "dir=c2s|s2c arr=<unix ns> fate=sent|queue-drop|loss-drop|write-drop",
// and " held=<ns>" on a datagram the emulator held on purpose.
// Datagrams may be cut to a snap length that keeps the packet number
// recoverable (header protection sample included); frames are read only
// where the datagram is whole.
//
// The reader knows packets, not verdicts: which sample an ACK produced is
// the discriminator's business.
package wire

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/klauspost/compress/gzip"
)

// Direction of a datagram: client to server or server to client.
type Direction uint8

const (
	C2S Direction = iota
	S2C
)

func (d Direction) String() string {
	if d == S2C {
		return "s2c"
	}
	return "c2s"
}

// PacketType is the QUIC packet type (qlog's names).
type PacketType uint8

const (
	Initial PacketType = iota
	ZeroRTT
	Handshake
	Retry
	VersionNegotiation
	OneRTT
)

func (t PacketType) String() string {
	return [...]string{"initial", "0RTT", "handshake", "retry", "version_negotiation", "1RTT"}[t]
}

// Space is the packet-number space of a packet type.
func (t PacketType) space() int {
	switch t {
	case Initial:
		return 0
	case Handshake:
		return 1
	}
	return 2
}

// Packet is one QUIC packet of a captured datagram (several when
// coalesced).
type Packet struct {
	Record    int    // 1-based, like tshark's frame.number
	Path      string // the capture interface's name: pathA, pathB
	Dir       Direction
	WireNS    int64 // unix ns: when the emulator wrote it out of the link (or dropped it)
	ArrivalNS int64 // unix ns it entered the link; 0 when the comment does not say
	// HeldNS is the extra delay the emulator's hold gave the datagram on
	// purpose (the pv-distinct scenario, comment held=<ns>); 0 otherwise.
	HeldNS    int64
	Fate      string // sent, queue-drop, loss-drop, write-drop; "" when not said
	Type      PacketType
	Version   uint32
	DCID      []byte
	SCID      []byte // long headers only
	PN        int64  // full packet number; -1 when not recoverable
	KeyPhase  int8   // 1-RTT: 0 or 1; -1 otherwise or unknown
	Size      int    // bytes of this packet on the wire
	Whole     bool   // the datagram was captured whole
	Decrypted bool
	Frames    []Frame // only when Decrypted
	Note      string  // why the packet was not (fully) decoded, when it should have been
}

// Capture is what a wire capture yields.
type Capture struct {
	Name    string // the capture file's base name
	Comment string // the section header's comment
	Paths   []string
	Records int
	// Server is the server's address (ip:port), common to both paths.
	Server  string
	Packets []Packet
	// ClientRandom identifies the connection in the key log.
	ClientRandom []byte
	Suite        string
	// Notes say what could not be decoded and why (no key log, ...).
	Notes []string
}

// Options of Read.
type Options struct {
	// KeyLog decrypts Handshake and 1-RTT packets; nil reads without (the
	// Initials still decrypt: their keys come from the client's DCID).
	KeyLog *KeyLog
}

// ReadFiles reads a capture (gzip or plain pcapng) and, when keylogPath is
// not empty, its key log.
func ReadFiles(capturePath, keylogPath string) (*Capture, error) {
	var opt Options
	if keylogPath != "" {
		kl, err := ReadKeyLogFile(keylogPath)
		if err != nil {
			return nil, err
		}
		opt.KeyLog = kl
	}
	f, err := os.Open(capturePath)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	c, err := Read(filepath.Base(capturePath), f, opt)
	if err != nil {
		return nil, err
	}
	if keylogPath == "" {
		c.Notes = append([]string{"no key log: Handshake and 1-RTT packets are not decrypted, so their packet numbers (header-protected) and frames are unknown"}, c.Notes...)
	}
	return c, nil
}

// Read reads a capture named name from r.
func Read(name string, r io.Reader, opt Options) (*Capture, error) {
	br := bufio.NewReaderSize(r, 1<<16)
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		z, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("%s: gzip: %w", name, err)
		}
		defer z.Close()
		r = z
	} else {
		r = br
	}
	ng, err := newNgReader(r)
	if err != nil {
		return nil, fmt.Errorf("%s: not a pcapng capture: %v", name, err)
	}
	d := newDecoder(name, opt.KeyLog)
	d.c.Name, d.c.Comment = name, ng.comment
	for rec := 1; ; rec++ {
		rc, err := ng.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			if errors.Is(err, io.ErrUnexpectedEOF) || strings.Contains(err.Error(), "unexpected EOF") {
				return nil, fmt.Errorf("%s: record %d: truncated capture (the file ends inside a block)", name, rec)
			}
			return nil, fmt.Errorf("%s: record %d: %w", name, rec, err)
		}
		if err := d.record(rec, rc, ng.ifaces[rc.iface]); err != nil {
			return nil, err
		}
	}
	return d.finish()
}

// link carries the per-record facts the packets share.
type link struct {
	rec       int
	path      string
	dir       Direction
	wireNS    int64
	arrNS     int64
	heldNS    int64
	fate      string
	whole     bool
	haveDir   bool
	src, dst  netip.AddrPort
	udpLength int
}

// parseComment reads the EPB comment's key=value pairs.
func parseComment(l *link, comments []string) error {
	for _, c := range comments {
		for _, kv := range strings.Fields(c) {
			k, v, ok := strings.Cut(kv, "=")
			if !ok {
				continue
			}
			switch k {
			case "dir":
				switch v {
				case "c2s":
					l.dir, l.haveDir = C2S, true
				case "s2c":
					l.dir, l.haveDir = S2C, true
				default:
					return fmt.Errorf("comment dir=%q: want c2s or s2c", v)
				}
			case "arr":
				n, err := strconv.ParseInt(v, 10, 64)
				if err != nil {
					return fmt.Errorf("comment arr=%q: %v", v, err)
				}
				l.arrNS = n
			case "fate":
				l.fate = v
			case "held":
				n, err := strconv.ParseInt(v, 10, 64)
				if err != nil {
					return fmt.Errorf("comment held=%q: %v", v, err)
				}
				l.heldNS = n
			}
		}
	}
	return nil
}

// udpPayload reads the raw IP packet's UDP payload (IPv4, or IPv6
// without extension headers). udpLen is the payload's length on the wire,
// which exceeds len(payload) when the record was cut.
func udpPayload(data []byte, lt uint16) (payload []byte, src, dst netip.AddrPort, udpLen int, err error) {
	if len(data) == 0 {
		return nil, src, dst, 0, errors.New("empty packet")
	}
	var udp []byte
	var sa, da netip.Addr
	switch v := data[0] >> 4; {
	case v == 4 && lt != linkTypeIPv6:
		ihl := int(data[0]&0x0f) * 4
		if ihl < 20 || len(data) < ihl+8 {
			return nil, src, dst, 0, errors.New("IPv4 header cut short")
		}
		if data[9] != 17 {
			return nil, src, dst, 0, fmt.Errorf("IPv4 protocol %d, not UDP", data[9])
		}
		if binary.BigEndian.Uint16(data[6:8])&0x3fff != 0 {
			return nil, src, dst, 0, errors.New("IPv4 fragment")
		}
		sa, da = netip.AddrFrom4([4]byte(data[12:16])), netip.AddrFrom4([4]byte(data[16:20]))
		udp = data[ihl:]
	case v == 6 && lt != linkTypeIPv4:
		if len(data) < 48 {
			return nil, src, dst, 0, errors.New("IPv6 header cut short")
		}
		if data[6] != 17 {
			return nil, src, dst, 0, fmt.Errorf("IPv6 next header %d, not UDP", data[6])
		}
		sa, da = netip.AddrFrom16([16]byte(data[8:24])), netip.AddrFrom16([16]byte(data[24:40]))
		udp = data[40:]
	default:
		return nil, src, dst, 0, fmt.Errorf("IP version %d", v)
	}
	l := int(binary.BigEndian.Uint16(udp[4:6]))
	if l < 8 {
		return nil, src, dst, 0, fmt.Errorf("UDP length %d", l)
	}
	payload = udp[8:]
	if len(payload) > l-8 {
		payload = payload[:l-8]
	}
	src = netip.AddrPortFrom(sa, binary.BigEndian.Uint16(udp[0:2]))
	dst = netip.AddrPortFrom(da, binary.BigEndian.Uint16(udp[2:4]))
	return payload, src, dst, l - 8, nil
}

func (d *decoder) record(rec int, rc ngRecord, iface ngInterface) error {
	d.c.Records = rec
	if iface.name == "" {
		return fmt.Errorf("%s: record %d: interface %d has no name (if_name); the contract names them pathA and pathB", d.name, rec, rc.iface)
	}
	switch iface.linkType {
	case linkTypeRaw, linkTypeIPv4, linkTypeIPv6:
	default:
		return fmt.Errorf("%s: record %d: link type %d on interface %s, want LINKTYPE_RAW (101)", d.name, rec, iface.linkType, iface.name)
	}
	d.addPath(iface.name)
	l := link{rec: rec, path: iface.name, wireNS: rc.unixNS, whole: rc.capLen >= rc.origLen}
	if err := parseComment(&l, rc.comments); err != nil {
		return fmt.Errorf("%s: record %d: %w", d.name, rec, err)
	}
	payload, src, dst, udpLen, err := udpPayload(rc.data, iface.linkType)
	if err != nil {
		d.skipped++
		d.firstSkip(rec, err)
		return nil
	}
	l.src, l.dst, l.udpLength = src, dst, udpLen
	if !l.haveDir {
		// The server is the address common to both paths; the first
		// datagram of a connection is the client's.
		if !d.server.IsValid() {
			d.server = dst
		}
		l.dir = C2S
		if src == d.server {
			l.dir = S2C
		}
	}
	if udpLen > len(payload) {
		l.whole = false
	}
	if d.c.Server == "" {
		d.c.Server = l.dst.String()
		if l.dir == S2C {
			d.c.Server = l.src.String()
		}
	}
	return d.datagram(&l, payload)
}

func (d *decoder) firstSkip(rec int, err error) {
	if d.skipNote == "" {
		d.skipNote = fmt.Sprintf("record %d: %v", rec, err)
	}
}

func (d *decoder) addPath(name string) {
	for _, p := range d.c.Paths {
		if p == name {
			return
		}
	}
	d.c.Paths = append(d.c.Paths, name)
}

func (d *decoder) finish() (*Capture, error) {
	c := &d.c
	if c.Records == 0 {
		return nil, fmt.Errorf("%s: no packets", d.name)
	}
	if d.skipped > 0 {
		c.Notes = append(c.Notes, fmt.Sprintf("%d records are not UDP datagrams and were skipped (first: %s)", d.skipped, d.skipNote))
	}
	if len(c.Packets) == 0 {
		return nil, fmt.Errorf("%s: no QUIC packets in %d records", d.name, c.Records)
	}
	if c.ClientRandom == nil {
		c.Notes = append(c.Notes, "no ClientHello in the capture: the connection's secrets cannot be found in a key log")
	}
	if d.kl != nil && c.ClientRandom != nil && d.app[C2S] == nil {
		c.Notes = append(c.Notes, fmt.Sprintf("%s has no 1-RTT secrets for client_random %s", d.kl.Name, hex.EncodeToString(c.ClientRandom)))
	}
	if n := d.undecodable; n > 0 {
		c.Notes = append(c.Notes, fmt.Sprintf("%d packets could not be decoded (first: %s)", n, d.undecodableNote))
	}
	return c, nil
}

// equalCID reports whether b starts with cid.
func hasPrefix(b, cid []byte) bool { return len(cid) > 0 && bytes.HasPrefix(b, cid) }

// String is a one-line summary of the packet: record, path, direction,
// wire time, type, packet number, key phase and frames (STREAM frames
// counted, not listed).
func (p *Packet) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d %s %s %d %s", p.Record, p.Path, p.Dir, p.WireNS, p.Type)
	if p.PN >= 0 {
		fmt.Fprintf(&b, " pn=%d", p.PN)
	} else {
		b.WriteString(" pn=?")
	}
	if p.KeyPhase >= 0 {
		fmt.Fprintf(&b, " kp=%d", p.KeyPhase)
	}
	fmt.Fprintf(&b, " size=%d", p.Size)
	if p.Fate != "" && p.Fate != "sent" {
		b.WriteString(" fate=" + p.Fate)
	}
	if !p.Whole {
		b.WriteString(" cut")
	}
	streams := 0
	for i := range p.Frames {
		f := &p.Frames[i]
		if f.Type >= 0x08 && f.Type <= 0x0f {
			streams++
			continue
		}
		b.WriteString(" ")
		b.WriteString(f.String())
	}
	if streams > 0 {
		fmt.Fprintf(&b, " STREAM×%d", streams)
	}
	if p.Note != "" {
		fmt.Fprintf(&b, " (%s)", p.Note)
	}
	return b.String()
}
