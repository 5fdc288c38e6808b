package validator

// The validator's QUIC v1 decoder: just enough of RFC 9000/9001 to say,
// for every 1-RTT packet, which path it crossed and when, and what its
// ACK and PATH_CHALLENGE/PATH_RESPONSE frames say. Handshake packets are
// stepped over, never decrypted; the Initials are read only for the
// ClientHello's random (which secrets) and the ServerHello's suite.

import (
	"bytes"
	"crypto/subtle"
	"encoding/binary"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
)

// WireSighting is one crossing of a packet on the wire.
type WireSighting struct {
	Record int    // 1-based EPB ordinal (tshark's frame.number)
	Path   string // the capture interface: pathA, pathB
	WireNS int64  // unix ns the emulator wrote it out of the link (or dropped it)
	ArrNS  int64  // unix ns it entered the link; 0 when not said
	HeldNS int64  // the emulator's deliberate extra delay (held=), 0 when none
	Fate   string // sent, queue-drop, loss-drop, write-drop; "" when not said
	Opened bool   // whole and authenticated: its frames were read
}

// Delivered says the datagram left the link toward its receiver.
func (s WireSighting) Delivered() bool { return s.Fate == "sent" || s.Fate == "" }

// WireAck is one ACK frame as it crossed the wire.
type WireAck struct {
	WireSighting
	Carrier int64      // packet number of the packet that carried it
	Ranges  [][2]int64 // [smallest, largest], the largest range first
}

// Largest is the largest packet number the ACK acknowledges.
func (a WireAck) Largest() int64 { return a.Ranges[0][1] }

// Covers says the ACK acknowledges pn.
func (a WireAck) Covers(pn int64) bool {
	for _, r := range a.Ranges {
		if r[0] <= pn && pn <= r[1] {
			return true
		}
	}
	return false
}

// WireProbe is a PATH_CHALLENGE or PATH_RESPONSE frame.
type WireProbe struct {
	WireSighting
	S2C      bool
	Carrier  int64
	Response bool
	Data     [8]byte
}

// WireMap is the packet→path map of one capture's application data space.
type WireMap struct {
	Capture      string // file base names, for messages
	KeyLog       string
	Suite        string
	ClientRandom []byte
	Records      int
	FirstNS      int64 // the earliest record's wire time
	// Sent[0] is client→server, Sent[1] server→client: every sighting of
	// each packet number, in capture order (a packet may be seen twice).
	Sent [2]map[int64][]WireSighting
	// Acks[d] are the ACK frames sent in direction d.
	Acks   [2][]WireAck
	Probes []WireProbe
	// Unread[d] are records of opened packets whose frames could not all
	// be read (a frame type this reader does not know).
	Unread [2][]int
	// Cut[d] counts 1-RTT packets numbered but not opened (cut datagrams).
	Cut [2]int
	// Resets are records of stateless resets (a token of NEW_CONNECTION_ID
	// ending a datagram that does not open).
	Resets []int
	// resetTokens are the stateless reset tokens of NEW_CONNECTION_ID.
	resetTokens map[string]bool
}

// First is packet pn's first sighting in direction s2c (true) or c2s.
func (m *WireMap) First(s2c bool, pn int64) (WireSighting, bool) {
	ss := m.Sent[dirIndex(s2c)][pn]
	if len(ss) == 0 {
		return WireSighting{}, false
	}
	return ss[0], true
}

func dirIndex(s2c bool) int {
	if s2c {
		return 1
	}
	return 0
}

func dirName(s2c bool) string {
	if s2c {
		return "s2c"
	}
	return "c2s"
}

// ReadWire re-derives the packet→path map from a capture and its NSS key
// log. Without a key log (keylogPath "") the map is empty: 1-RTT packet
// numbers are header-protected.
func ReadWire(capturePath, keylogPath string) (*WireMap, error) {
	dgs, err := readCaptureFile(capturePath)
	if err != nil {
		return nil, err
	}
	var kl *nssKeyLog
	if keylogPath != "" {
		if kl, err = readKeyLogFile(keylogPath); err != nil {
			return nil, err
		}
	}
	return decodeWire(filepath.Base(capturePath), dgs, kl)
}

// wireDecoder is the state of one pass over a capture.
type wireDecoder struct {
	m        *WireMap
	kl       *nssKeyLog
	initial  [2]*direction
	app      [2]*direction
	appGen   [2]int
	largest  [2]int64 // application space, per sender
	initLarg [2]int64
	odcid    []byte
	clientID []byte // client's SCID: the DCID of server→client short headers
	cidLen   [2]int // DCID length of short headers sent c2s, s2c
	haveCID  [2]bool
	retry    bool
	hello    [2][]byte // CRYPTO bytes of the Initial space from offset 0
	suite    *tlsSuite
	// pendingCut: per sender, the cut 1-RTT packets (number, record) read
	// since the last one that opened; they move with the next whole
	// packet's number when it resynchronises (resyncPN).
	pendingCut [2][][2]int64
}

func decodeWire(name string, dgs []datagram, kl *nssKeyLog) (*WireMap, error) {
	d := &wireDecoder{kl: kl, largest: [2]int64{-1, -1}, initLarg: [2]int64{-1, -1},
		m: &WireMap{Capture: name, Records: len(dgs),
			Sent: [2]map[int64][]WireSighting{{}, {}}, resetTokens: map[string]bool{}}}
	if kl != nil {
		d.m.KeyLog = kl.name
	}
	for i := range dgs {
		if i == 0 || dgs[i].wireNS < d.m.FirstNS {
			d.m.FirstNS = dgs[i].wireNS
		}
		if err := d.datagram(&dgs[i]); err != nil {
			return nil, fmt.Errorf("%s: record %d (%s %s): %w", name, dgs[i].record, dgs[i].path, dirName(dgs[i].s2c), err)
		}
	}
	switch {
	case d.odcid == nil:
		return nil, fmt.Errorf("%s: no client Initial in %d records: the capture does not hold its connection's handshake", name, len(dgs))
	case kl != nil && d.app[0] == nil:
		return nil, fmt.Errorf("%s: no ServerHello in %d records: the cipher suite, so the 1-RTT keys, cannot be known", name, len(dgs))
	}
	for s := range d.m.Acks {
		sort.SliceStable(d.m.Acks[s], func(i, j int) bool { return d.m.Acks[s][i].WireNS < d.m.Acks[s][j].WireNS })
	}
	return d.m, nil
}

func (d *wireDecoder) datagram(dg *datagram) error {
	b := dg.payload
	for len(b) > 0 {
		// Zero bytes after coalesced packets pad the datagram (quiche pads
		// its first flight so): no packet, nothing to open.
		if len(b) < len(dg.payload) && allZero(b) {
			return nil
		}
		if b[0]&0x80 == 0 {
			return d.shortHeader(dg, b)
		}
		n, err := d.longHeader(dg, b)
		if err != nil || n == 0 {
			return err
		}
		b = b[n:]
	}
	return nil
}

// longHeader reads one long-header packet and returns its length (0: the
// rest of the datagram is not packets this reader follows).
func (d *wireDecoder) longHeader(dg *datagram, b []byte) (int, error) {
	c := wireCursor{b: b}
	c.skip(1)
	version := c.u32()
	if c.err != nil {
		return 0, d.cutOK(dg, "long header")
	}
	if version != 1 {
		return 0, nil // version negotiation or another version: not QUIC v1
	}
	dcid := c.bytes(int(c.u8()))
	scid := c.bytes(int(c.u8()))
	typ := b[0] >> 4 & 3
	if typ == 3 { // Retry: the client's next Initial picks the keys anew
		d.retry = true
		return 0, c.err
	}
	if typ == 0 {
		c.bytes(int(c.varint()))
	}
	length := int(c.varint())
	pnOff := c.off
	if c.err != nil || length > len(b)-pnOff {
		return 0, d.cutOK(dg, "long-header packet")
	}
	end := pnOff + length
	s := dirIndex(dg.s2c)
	if typ != 0 {
		return end, nil // 0-RTT and Handshake: stepped over
	}
	if !dg.s2c {
		switch {
		case d.odcid == nil || d.retry:
			var err error
			if d.initial[0], d.initial[1], err = initialDirections(dcid); err != nil {
				return 0, err
			}
			d.odcid, d.clientID, d.retry = bytes.Clone(dcid), bytes.Clone(scid), false
			d.cidLen[1], d.haveCID[1] = len(scid), true
		case !bytes.Equal(scid, d.clientID):
			return 0, fmt.Errorf("client Initial of another connection (source CID %x, the capture's client is %x)", scid, d.clientID)
		}
	} else if !d.haveCID[0] {
		d.cidLen[0], d.haveCID[0] = len(scid), true
	}
	if d.initial[s] == nil {
		return end, nil
	}
	plain, _, err := d.unprotect(d.initial[s], 0, &d.initLarg[s], b[:end], pnOff, 0x0f)
	if err != nil {
		return 0, fmt.Errorf("Initial: %w", err)
	}
	if err := d.initialCrypto(s, plain); err != nil {
		return 0, fmt.Errorf("Initial: %w", err)
	}
	return end, d.appKeys()
}

// cutOK accepts a header running past the captured bytes only when the
// datagram was cut.
func (d *wireDecoder) cutOK(dg *datagram, what string) error {
	if dg.whole {
		return fmt.Errorf("%s overruns its datagram", what)
	}
	return nil
}

// unprotect removes header protection and, given the whole packet,
// decrypts it with key generation gen. It returns the plaintext and the
// full packet number.
func (d *wireDecoder) unprotect(dir *direction, gen int, largest *int64, pkt []byte, pnOff int, firstMask byte) ([]byte, int64, error) {
	return d.unprotectResync(dir, gen, largest, pkt, pnOff, firstMask, false)
}

// unprotectResync is unprotect that, with resync, also tries the packet
// numbers a gap in the capture may have skipped (resyncPN).
func (d *wireDecoder) unprotectResync(dir *direction, gen int, largest *int64, pkt []byte, pnOff int, firstMask byte, resync bool) ([]byte, int64, error) {
	if pnOff+20 > len(pkt) {
		return nil, -1, fmt.Errorf("packet of %d bytes has no header protection sample", len(pkt))
	}
	hdr := bytes.Clone(pkt[:pnOff+4])
	pnLen, trunc := unmaskHeader(dir.hp(pkt[pnOff+4:pnOff+20]), hdr, pnOff, firstMask)
	pn := expandPN(*largest, trunc, pnLen)
	k, err := dir.generation(gen)
	if err != nil {
		return nil, pn, err
	}
	plain, err := k.open(uint64(pn), hdr[:pnOff+pnLen], pkt[pnOff+pnLen:])
	if err != nil {
		var ok bool
		if !resync {
			return nil, pn, fmt.Errorf("packet %d does not authenticate", pn)
		}
		if plain, pn, ok = resyncPN(k, pn, pnLen, hdr[:pnOff+pnLen], pkt[pnOff+pnLen:]); !ok {
			return nil, pn, fmt.Errorf("packet %d does not authenticate", pn)
		}
	}
	*largest = max(*largest, pn)
	return plain, pn, nil
}

// shiftPending renumbers the cut packets read since the last packet that
// opened by delta: they were numbered from the same stale base as the
// packet that just resynchronised.
func (d *wireDecoder) shiftPending(s int, delta int64) {
	if delta == 0 {
		return
	}
	for _, c := range d.pendingCut[s] {
		pn, rec := c[0], int(c[1])
		ss := d.m.Sent[s][pn]
		for i := range ss {
			if ss[i].Record == rec {
				d.m.Sent[s][pn+delta] = append(d.m.Sent[s][pn+delta], ss[i])
				ss = append(ss[:i], ss[i+1:]...)
				break
			}
		}
		if len(ss) == 0 {
			delete(d.m.Sent[s], pn)
		} else {
			d.m.Sent[s][pn] = ss
		}
	}
}

// resyncSpan is how many packet numbers a gap in a capture may skip and
// still be bridged by resyncPN.
const resyncSpan = 1 << 20

// resyncPN finds a packet's number after a gap in the capture. A trimmed
// capture keeps each direction's first datagrams and a window around the
// migration (docs/wire.md): across the gap a 1- or 2-byte packet number
// expands near the last number seen, a multiple of its window below the
// real one. Only the real number authenticates the packet (it is the AEAD
// nonce), so the windows ahead are tried, up to resyncSpan numbers.
func resyncPN(k packetKeys, pn int64, pnLen int, hdr, payload []byte) ([]byte, int64, bool) {
	if pnLen > 2 || pn < 0 {
		return nil, pn, false
	}
	win := int64(1) << (8 * pnLen)
	for cand := pn + win; cand-pn <= resyncSpan; cand += win {
		if plain, err := k.open(uint64(cand), hdr, payload); err == nil {
			return plain, cand, true
		}
	}
	return nil, pn, false
}

// unmaskHeader removes header protection from hdr (the packet's first
// pnOff+4 bytes, changed in place) and returns the packet number's length
// and its truncated value.
func unmaskHeader(mask [5]byte, hdr []byte, pnOff int, firstMask byte) (int, uint64) {
	hdr[0] ^= mask[0] & firstMask
	n := int(hdr[0]&3) + 1
	field := hdr[pnOff : pnOff+n]
	subtle.XORBytes(field, field, mask[1:1+n])
	var wide [8]byte
	copy(wide[8-n:], field)
	return n, binary.BigEndian.Uint64(wide[:])
}

// expandPN is RFC 9000 §A.3: the packet number nearest the next expected.
func expandPN(largest int64, trunc uint64, n int) int64 {
	win := int64(1) << (8 * n)
	expected := largest + 1
	cand := expected&^(win-1) | int64(trunc)
	switch {
	case cand <= expected-win/2 && cand < 1<<62-win:
		return cand + win
	case cand > expected+win/2 && cand >= win:
		return cand - win
	}
	return cand
}

// shortHeader reads a 1-RTT packet: the rest of the datagram.
func (d *wireDecoder) shortHeader(dg *datagram, pkt []byte) error {
	s := dirIndex(dg.s2c)
	dir := d.app[s]
	if dir == nil || !d.haveCID[s] {
		return nil // no key log, or no handshake seen yet
	}
	pnOff := 1 + d.cidLen[s]
	sighting := WireSighting{Record: dg.record, Path: dg.path, WireNS: dg.wireNS, ArrNS: dg.arrNS, HeldNS: dg.heldNS, Fate: dg.fate}
	if pnOff+20 > len(pkt) {
		if dg.whole {
			return fmt.Errorf("1-RTT packet of %d bytes is shorter than its header protection sample", len(pkt))
		}
		return fmt.Errorf("1-RTT packet cut at %d bytes, before its header protection sample ends (the contract keeps it)", len(pkt))
	}
	if !dg.whole {
		pnLen, trunc := unmaskHeader(dir.hp(pkt[pnOff+4:pnOff+20]), bytes.Clone(pkt[:pnOff+4]), pnOff, 0x1f)
		pn := expandPN(d.largest[s], trunc, pnLen)
		d.largest[s] = max(d.largest[s], pn)
		d.m.Sent[s][pn] = append(d.m.Sent[s][pn], sighting)
		d.m.Cut[s]++
		d.pendingCut[s] = append(d.pendingCut[s], [2]int64{pn, int64(dg.record)})
		return nil
	}
	// The key phase bit is under header protection: try the generations
	// it allows, nearest the current one first (RFC 9001 §6).
	mask := dir.hp(pkt[pnOff+4 : pnOff+20])
	phase := int((pkt[0] ^ mask[0]&0x1f) >> 2 & 1)
	cur := d.appGen[s]
	var tries []int
	if cur%2 == phase {
		tries = []int{cur, cur + 2, cur - 2}
	} else {
		tries = []int{cur + 1, cur - 1, cur + 3}
	}
	var lastErr error
	// The second pass bridges a gap in a trimmed capture (resyncPN): only
	// for a packet no nearby number opens.
	for i := range 2 * len(tries) {
		g, resync := tries[i%len(tries)], i >= len(tries)
		if g < 0 {
			continue
		}
		largest := d.largest[s]
		plain, pn, err := d.unprotectResync(dir, g, &largest, pkt, pnOff, 0x1f, resync)
		if err != nil {
			// The loss bits (draft-ferrieuxhamchaoui-quic-lossbits,
			// which picoquic negotiates): the two reserved bits carry the
			// Q and L bits outside header protection (mask 0x07).
			plain, pn, err = d.unprotectResync(dir, g, &largest, pkt, pnOff, 0x07, resync)
		}
		if err != nil {
			if lastErr == nil {
				lastErr = err
			}
			continue
		}
		if resync {
			pl, tr := unmaskHeader(dir.hp(pkt[pnOff+4:pnOff+20]), bytes.Clone(pkt[:pnOff+4]), pnOff, 0x1f)
			d.shiftPending(s, pn-expandPN(d.largest[s], tr, pl))
		}
		d.pendingCut[s] = d.pendingCut[s][:0]
		d.largest[s] = largest
		d.appGen[s] = max(cur, g)
		sighting.Opened = true
		d.m.Sent[s][pn] = append(d.m.Sent[s][pn], sighting)
		if err := d.appFrames(dg, pn, plain); err != nil {
			return fmt.Errorf("1-RTT packet %d: %w", pn, err)
		}
		return nil
	}
	if len(pkt) >= 21 && d.m.resetTokens[string(pkt[len(pkt)-16:])] {
		d.m.Resets = append(d.m.Resets, dg.record) // RFC 9000 §10.3: not a packet
		return nil
	}
	return fmt.Errorf("whole 1-RTT packet does not open with %s's secrets for client_random %x at key phase %d: %v",
		d.kl.name, d.m.ClientRandom, phase, lastErr)
}

// initialCrypto gathers the Initial space's CRYPTO bytes from offset 0.
func (d *wireDecoder) initialCrypto(s int, plain []byte) error {
	return walkFrames(plain, func(typ uint64, c *wireCursor) error {
		if typ != 0x06 {
			return nil
		}
		off, n := c.varint(), c.varint()
		data := c.bytes(int(n))
		if c.err == nil && off <= uint64(len(d.hello[s])) && off+n > uint64(len(d.hello[s])) && off < 4096 {
			d.hello[s] = append(d.hello[s], data[uint64(len(d.hello[s]))-off:]...)
		}
		return nil
	}, func(uint64) {})
}

// appKeys sets up the 1-RTT keys once the ClientHello's random and the
// ServerHello's suite are known.
func (d *wireDecoder) appKeys() error {
	if ch := d.hello[0]; d.m.ClientRandom == nil && len(ch) >= 38 {
		if ch[0] != 1 {
			return fmt.Errorf("the client's first CRYPTO bytes are TLS message %d, not a ClientHello", ch[0])
		}
		d.m.ClientRandom = bytes.Clone(ch[6:38])
	}
	if sh := d.hello[1]; d.suite == nil && len(sh) >= 39 && len(sh) >= 41+int(sh[38]) {
		if sh[0] != 2 {
			return fmt.Errorf("the server's first CRYPTO bytes are TLS message %d, not a ServerHello", sh[0])
		}
		id := binary.BigEndian.Uint16(sh[39+int(sh[38]):])
		st, ok := tlsSuites[id]
		if !ok {
			return fmt.Errorf("ServerHello chose cipher suite %#04x, not one of QUIC's", id)
		}
		d.suite, d.m.Suite = &st, st.name
	}
	if d.kl == nil || d.app[0] != nil || d.m.ClientRandom == nil || d.suite == nil {
		return nil
	}
	for s, label := range []string{"CLIENT_TRAFFIC_SECRET_0", "SERVER_TRAFFIC_SECRET_0"} {
		sec, err := d.kl.secret(label, d.m.ClientRandom)
		if err != nil {
			return fmt.Errorf("the capture's connection: %w", err)
		}
		if d.app[s], err = newDirection(*d.suite, sec); err != nil {
			return err
		}
	}
	return nil
}

// appFrames records an opened 1-RTT packet's ACK and path probe frames.
func (d *wireDecoder) appFrames(dg *datagram, pn int64, plain []byte) error {
	s := dirIndex(dg.s2c)
	seen := WireSighting{Record: dg.record, Path: dg.path, WireNS: dg.wireNS, ArrNS: dg.arrNS, HeldNS: dg.heldNS, Fate: dg.fate, Opened: true}
	return walkFrames(plain, func(typ uint64, c *wireCursor) error {
		switch typ {
		case 0x02, 0x03:
			ranges, err := readAckRanges(typ, c)
			if err != nil {
				return err
			}
			d.m.Acks[s] = append(d.m.Acks[s], WireAck{WireSighting: seen, Carrier: pn, Ranges: ranges})
		case 0x1a, 0x1b:
			p := WireProbe{WireSighting: seen, S2C: dg.s2c, Carrier: pn, Response: typ == 0x1b}
			copy(p.Data[:], c.bytes(8))
			d.m.Probes = append(d.m.Probes, p)
		case 0x18: // NEW_CONNECTION_ID: its token marks the peer's stateless resets
			c.varints(2)
			c.bytes(int(c.u8()))
			if tok := c.bytes(16); tok != nil {
				d.m.resetTokens[string(tok)] = true
			}
		}
		return nil
	}, func(uint64) { d.m.Unread[s] = append(d.m.Unread[s], dg.record) })
}

// walkFrames calls fn for each frame with the cursor after its type; fn
// reads what it needs and walkFrames steps over the rest. A frame type it
// does not know ends the walk (unknown is told).
func walkFrames(b []byte, fn func(typ uint64, c *wireCursor) error, unknown func(uint64)) error {
	c := &wireCursor{b: b}
	for c.off < len(b) {
		typ := c.varint()
		start := c.off
		if err := fn(typ, c); err != nil {
			return err
		}
		if c.off == start { // fn read nothing: step over the frame here
			switch {
			case typ == 0x00 || typ == 0x01 || typ == 0x1e: // PADDING, PING, HANDSHAKE_DONE
			case typ == 0x02 || typ == 0x03:
				if _, err := readAckRanges(typ, c); err != nil {
					return err
				}
			case typ == 0x04: // RESET_STREAM
				c.varints(3)
			case typ == 0x05 || typ == 0x11 || typ == 0x15: // STOP_SENDING, MAX_STREAM_DATA, STREAM_DATA_BLOCKED
				c.varints(2)
			case typ == 0x06: // CRYPTO
				c.varint()
				c.bytes(int(c.varint()))
			case typ == 0x07: // NEW_TOKEN
				c.bytes(int(c.varint()))
			case typ >= 0x08 && typ <= 0x0f: // STREAM
				c.varint()
				if typ&0x04 != 0 {
					c.varint()
				}
				if typ&0x02 != 0 {
					c.bytes(int(c.varint()))
				} else {
					c.off = len(b)
				}
			case typ >= 0x10 && typ <= 0x17 || typ == 0x19: // MAX_*, *_BLOCKED, RETIRE_CONNECTION_ID
				c.varint()
			case typ == 0x18: // NEW_CONNECTION_ID
				c.varints(2)
				c.bytes(int(c.u8()) + 16)
			case typ == 0x1a || typ == 0x1b:
				c.bytes(8)
			case typ == 0x1c || typ == 0x1d: // CONNECTION_CLOSE
				c.varints(int(0x1e - typ))
				c.bytes(int(c.varint()))
			case typ == 0x30: // DATAGRAM to the end
				c.off = len(b)
			case typ == 0x31:
				c.bytes(int(c.varint()))
			default:
				unknown(typ)
				return nil
			}
		}
		if c.err != nil {
			return fmt.Errorf("frame type %#x at byte %d: %w", typ, start, c.err)
		}
	}
	return nil
}

// readAckRanges reads an ACK frame after its type: its ranges as
// [smallest, largest], the largest first.
func readAckRanges(typ uint64, c *wireCursor) ([][2]int64, error) {
	hi := int64(c.varint())
	c.varint() // ACK Delay
	count := c.varint()
	lo := hi - int64(c.varint())
	var out [][2]int64
	for i := uint64(0); ; i++ {
		if lo < 0 || hi < lo || c.err != nil || i > uint64(len(c.b)) {
			return nil, fmt.Errorf("ACK frame: malformed ranges")
		}
		out = append(out, [2]int64{lo, hi})
		if i == count {
			break
		}
		hi = lo - int64(c.varint()) - 2
		lo = hi - int64(c.varint())
	}
	if typ == 0x03 {
		c.varints(3)
	}
	return out, c.err
}

var errShort = errors.New("runs past the packet")

// wireCursor reads QUIC's integers; the first overrun sticks in err.
type wireCursor struct {
	b   []byte
	off int
	err error
}

func (c *wireCursor) bytes(n int) []byte {
	if c.err != nil || n < 0 || n > len(c.b)-c.off {
		c.err = errShort
		return nil
	}
	c.off += n
	return c.b[c.off-n : c.off]
}

func (c *wireCursor) skip(n int) { c.bytes(n) }

func (c *wireCursor) u8() byte {
	if b := c.bytes(1); b != nil {
		return b[0]
	}
	return 0
}

func (c *wireCursor) u32() uint32 {
	if b := c.bytes(4); b != nil {
		return binary.BigEndian.Uint32(b)
	}
	return 0
}

// varint is RFC 9000 §16's variable-length integer.
func (c *wireCursor) varint() uint64 {
	if c.err != nil || c.off >= len(c.b) {
		c.err = errShort
		return 0
	}
	n := 1 << (c.b[c.off] >> 6)
	b := c.bytes(n)
	if b == nil {
		return 0
	}
	v := uint64(b[0] & 0x3f)
	for _, x := range b[1:] {
		v = v<<8 | uint64(x)
	}
	return v
}

func (c *wireCursor) varints(n int) {
	for range n {
		c.varint()
	}
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}
