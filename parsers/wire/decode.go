package wire

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"net/netip"
)

// decoder holds one connection's state across the capture.
type decoder struct {
	// mask0 is the last header-protection mask's first byte.
	mask0  byte
	name   string
	kl     *KeyLog
	c      Capture
	server netip.AddrPort // inferred server address, for records without dir=

	initDCID   []byte
	clientSCID []byte
	retried    bool
	init       [2]*keys // by direction
	hs         [2]*keys
	early      *keys
	app        [2]*phases
	suite      uint16
	crypto     [2][2]cryptoStream // [dir][Initial, Handshake]
	ackExp     [2]uint64
	haveTP     [2]bool
	largest    [2][3]int64 // [dir][space]
	// pendingCut: per direction, the indices in c.Packets of the cut 1-RTT
	// packets since the last one that opened: their numbers are shifted
	// with the next whole packet's when it resynchronises (resyncPN).
	pendingCut      [2][]int
	cids            [2][][]byte // known DCIDs by direction of the packets carrying them
	plain           []byte
	skipped         int
	skipNote        string
	undecodable     int
	undecodableNote string
}

func newDecoder(name string, kl *KeyLog) *decoder {
	d := &decoder{name: name, kl: kl, ackExp: [2]uint64{3, 3}}
	for i := range d.largest {
		for j := range d.largest[i] {
			d.largest[i][j] = -1
		}
	}
	return d
}

// phases are the 1-RTT keys of one direction by key phase generation.
type phases struct {
	gens []*keys
	cur  int
}

func (p *phases) gen(i int) (*keys, error) {
	for len(p.gens) <= i {
		k, err := p.gens[len(p.gens)-1].next()
		if err != nil {
			return nil, err
		}
		p.gens = append(p.gens, k)
	}
	return p.gens[i], nil
}

// knowCID records a connection ID packets in direction dir carry; an
// empty one (an endpoint that chose zero-length IDs) counts too.
func (d *decoder) knowCID(dir Direction, cid []byte) {
	for _, c := range d.cids[dir] {
		if bytes.Equal(c, cid) {
			return
		}
	}
	d.cids[dir] = append(d.cids[dir], append([]byte(nil), cid...))
}

func (d *decoder) fail(rec int, format string, args ...any) {
	d.undecodable++
	if d.undecodableNote == "" {
		d.undecodableNote = fmt.Sprintf("record %d: ", rec) + fmt.Sprintf(format, args...)
	}
}

// datagram walks the (possibly coalesced) QUIC packets of one UDP payload;
// b holds the captured bytes, l.udpLength the datagram's real length.
func (d *decoder) datagram(l *link, b []byte) error {
	off := 0
	for off < len(b) {
		p := Packet{Record: l.rec, Path: l.path, Dir: l.dir, WireNS: l.wireNS, ArrivalNS: l.arrNS, HeldNS: l.heldNS, Fate: l.fate, PN: -1, KeyPhase: -1, Whole: l.whole}
		rest := b[off:]
		var n int
		var err error
		if rest[0]&0x80 != 0 {
			n, err = d.long(l, &p, rest, l.udpLength-off)
		} else {
			n = d.short(l, &p, rest, l.udpLength-off)
		}
		if err != nil {
			return err
		}
		d.c.Packets = append(d.c.Packets, p)
		if n <= 0 {
			break
		}
		off += n
	}
	return nil
}

// long decodes one long-header packet; size is how many bytes it and what
// follows it in the datagram had on the wire.
func (d *decoder) long(l *link, p *Packet, b []byte, size int) (int, error) {
	r := fr{b: b[1:]}
	ver := r.bytes(4)
	if r.bad {
		p.Note = "long header cut before its version"
		d.fail(l.rec, "%s", p.Note)
		return 0, nil
	}
	p.Version = binary.BigEndian.Uint32(ver)
	dl := r.bytes(1)
	var dcid, scid []byte
	if dl != nil {
		dcid = r.bytes(uint64(dl[0]))
	}
	if sl := r.bytes(1); sl != nil {
		scid = r.bytes(uint64(sl[0]))
	}
	if r.bad {
		p.Note = "long header cut inside its connection IDs"
		d.fail(l.rec, "%s", p.Note)
		return 0, nil
	}
	p.DCID, p.SCID = append([]byte(nil), dcid...), append([]byte(nil), scid...)
	if p.Version == 0 {
		p.Type, p.Size = VersionNegotiation, size
		return 0, nil
	}
	p.Type = PacketType((b[0] >> 4) & 3)
	if p.Version != 1 {
		p.Note = fmt.Sprintf("QUIC version 0x%08x: only version 1 is decoded", p.Version)
		p.Size = size
		d.fail(l.rec, "%s", p.Note)
		return 0, nil
	}
	// The other side addresses packets to the CID this one chose.
	d.knowCID(1-l.dir, scid)
	if p.Type == Retry {
		p.Size = size
		d.retried, d.initDCID = true, nil
		return 0, nil
	}
	if p.Type == Initial {
		if l.dir == C2S {
			if err := d.clientInitial(l, dcid, scid); err != nil {
				return 0, err
			}
		}
		r.bytes(r.v()) // token
	}
	length := r.v()
	if r.bad {
		p.Note = "long header cut before its Length"
		d.fail(l.rec, "%s", p.Note)
		return 0, nil
	}
	pnOff := len(b) - len(r.b)
	end := pnOff + int(length)
	if length > uint64(size) || end > size {
		p.Note = fmt.Sprintf("Length %d runs past the datagram", length)
		d.fail(l.rec, "%s", p.Note)
		return 0, nil
	}
	p.Size = end
	var k *keys
	switch p.Type {
	case Initial:
		k = d.init[l.dir]
	case Handshake:
		k = d.hs[l.dir]
	case ZeroRTT:
		if l.dir == C2S {
			k = d.early
		}
	}
	if k == nil {
		if d.kl != nil || p.Type == Initial {
			p.Note = fmt.Sprintf("no %s keys for %s", p.Type, l.dir)
		}
		return end, nil
	}
	space := p.Type.space()
	if !d.unprotect(l, p, b, pnOff, end, 0x0f, k.hp, space) {
		return end, nil
	}
	if end > len(b) {
		return end, nil
	}
	pnLen := int(b[0]&0x03) + 1
	plain, err := d.open(k, p.PN, b[:pnOff+pnLen], b[pnOff+pnLen:end])
	if err != nil {
		p.Note = fmt.Sprintf("%s packet %d does not decrypt: %v", p.Type, p.PN, err)
		d.fail(l.rec, "%s", p.Note)
		return end, nil
	}
	d.largest[l.dir][space] = max(d.largest[l.dir][space], p.PN)
	d.frames(l, p, plain, space)
	return end, d.progress(l)
}

// clientInitial derives the Initial keys from the client's first DCID and
// notices a second connection: a client Initial from another Source
// Connection ID (the DCID may change: to a CID the server chose, even one
// from a NEW_CONNECTION_ID frame).
func (d *decoder) clientInitial(l *link, dcid, scid []byte) error {
	if d.clientSCID == nil || d.retried {
		d.clientSCID = append([]byte{}, scid...)
	} else if !bytes.Equal(scid, d.clientSCID) {
		return fmt.Errorf("%s: record %d: a client Initial from SCID %x, not the connection's client SCID %x: the capture holds another connection", d.name, l.rec, scid, d.clientSCID)
	}
	if d.initDCID != nil {
		return nil
	}
	d.initDCID, d.retried = append([]byte(nil), dcid...), false
	c, s, err := initialKeys(dcid)
	if err != nil {
		return fmt.Errorf("%s: record %d: initial keys: %w", d.name, l.rec, err)
	}
	d.init = [2]*keys{c, s}
	return nil
}

// unprotect removes header protection (RFC 9001 §5.4) in place and
// decodes the packet number; false when the sample is not captured.
func (d *decoder) unprotect(l *link, p *Packet, b []byte, pnOff, end int, firstMask byte, hp headerProtector, space int) bool {
	if pnOff+4+16 > len(b) || pnOff+4+16 > end {
		p.Note = "header-protection sample not captured"
		d.fail(l.rec, "%s", p.Note)
		return false
	}
	m := hp.mask(b[pnOff+4 : pnOff+4+16])
	d.mask0 = m[0]
	b[0] ^= m[0] & firstMask
	pnLen := int(b[0]&0x03) + 1
	var trunc uint64
	for i := range pnLen {
		b[pnOff+i] ^= m[1+i]
		trunc = trunc<<8 | uint64(b[pnOff+i])
	}
	p.PN = decodePN(d.largest[l.dir][space], trunc, uint(pnLen*8))
	return true
}

// resyncSpan is how many packet numbers a gap in a capture may skip and
// still be bridged.
const resyncSpan = 1 << 20

// decodePN is RFC 9000 Appendix A.3.
func decodePN(largest int64, truncated uint64, bits uint) int64 {
	expected := largest + 1
	win := int64(1) << bits
	hwin := win / 2
	candidate := (expected &^ (win - 1)) | int64(truncated)
	switch {
	case candidate <= expected-hwin && candidate < (1<<62)-win:
		return candidate + win
	case candidate > expected+hwin && candidate >= win:
		return candidate - win
	}
	return candidate
}

func (d *decoder) open(k *keys, pn int64, hdr, ct []byte) ([]byte, error) {
	copy(k.nonce[:], k.iv)
	for i := range 8 {
		k.nonce[11-i] ^= byte(uint64(pn) >> (8 * i))
	}
	out, err := k.aead.Open(d.plain[:0], k.nonce[:], ct, hdr)
	if err == nil {
		d.plain = out
	}
	return out, err
}

// short decodes a 1-RTT packet, which runs to the datagram's end.
func (d *decoder) short(l *link, p *Packet, b []byte, size int) int {
	p.Type, p.Size = OneRTT, size
	cid := d.dcidOf(l.dir, b[1:])
	if cid < 0 {
		p.Note = "short header: destination connection ID length not learned (no long header or NEW_CONNECTION_ID names it)"
		d.fail(l.rec, "%s", p.Note)
		return 0
	}
	p.DCID = append([]byte(nil), b[1:min(len(b), 1+cid)]...)
	a := d.app[l.dir]
	if a == nil {
		if d.kl != nil {
			p.Note = "no 1-RTT keys"
		}
		return 0
	}
	pnOff := 1 + cid
	if !d.unprotect(l, p, b, pnOff, size, 0x1f, a.gens[0].hp, 2) {
		return 0
	}
	p.KeyPhase = int8(b[0]>>2) & 1
	if size > len(b) { // cut: the packet number is all there is
		d.largest[l.dir][2] = max(d.largest[l.dir][2], p.PN)
		d.pendingCut[l.dir] = append(d.pendingCut[l.dir], len(d.c.Packets)) // p is appended next
		return 0
	}
	pnLen := int(b[0]&0x03) + 1
	hdr, ct := b[:pnOff+pnLen], b[pnOff+pnLen:size]
	// The current generation, else the next (a key update), else the
	// previous (a packet reordered across an update). AEAD Open writes
	// into d.plain, so ct survives a failed attempt.
	var plain []byte
	var err error
	cands := []int{a.cur, a.cur + 1, a.cur - 1}
	tryOpen := func() {
		for _, g := range cands {
			if g < 0 || g%2 != int(p.KeyPhase) {
				continue
			}
			k, kerr := a.gen(g)
			if kerr != nil {
				err = kerr
				break
			}
			if plain, err = d.open(k, p.PN, hdr, ct); err == nil {
				a.cur = max(a.cur, g)
				break
			}
		}
	}
	tryOpen()
	if err != nil && d.kl != nil {
		// The loss bits (draft-ferrieuxhamchaoui-quic-lossbits, which
		// picoquic negotiates): the two reserved bits carry the Q and L
		// bits and header protection leaves them alone (mask 0x07).
		hdr[0] ^= d.mask0 & 0x18
		if tryOpen(); err != nil {
			hdr[0] ^= d.mask0 & 0x18
		}
	}
	if err != nil && d.kl != nil && pnLen <= 2 {
		// A trimmed capture keeps each direction's first datagrams and a
		// window around the migration (docs/wire.md): across the gap a
		// 1- or 2-byte packet number expands near the last one seen, a
		// multiple of its window below the real one. Only the real number
		// authenticates the packet (it is the AEAD nonce): the windows
		// ahead are tried, and the cut packets read since the last packet
		// that opened, numbered from the same stale base, move with it.
		orig, win := p.PN, int64(1)<<(8*pnLen)
		for cand := orig + win; cand-orig <= resyncSpan && err != nil; cand += win {
			p.PN = cand
			tryOpen()
		}
		if err != nil {
			p.PN = orig
		} else {
			delta := p.PN - orig
			for _, i := range d.pendingCut[l.dir] {
				d.c.Packets[i].PN += delta
			}
			p.Note = fmt.Sprintf("packet number resynchronised after a gap in the capture: +%d (and %d cut packets before it)", delta, len(d.pendingCut[l.dir]))
		}
	}
	if err != nil || plain == nil {
		p.Note = fmt.Sprintf("1-RTT packet %d (key phase %d) does not decrypt: %v", p.PN, p.KeyPhase, err)
		d.fail(l.rec, "%s", p.Note)
		return 0
	}
	d.pendingCut[l.dir] = d.pendingCut[l.dir][:0]
	d.largest[l.dir][2] = max(d.largest[l.dir][2], p.PN)
	d.frames(l, p, plain, 2)
	return 0
}

// dcidOf is the length of the short header's DCID: a known CID it starts
// with, else the length of those known.
func (d *decoder) dcidOf(dir Direction, b []byte) int {
	best := -1
	for _, c := range d.cids[dir] {
		if hasPrefix(b, c) && len(c) > best {
			best = len(c)
		}
	}
	if best >= 0 {
		return best
	}
	if n := len(d.cids[dir]); n > 0 {
		return len(d.cids[dir][n-1])
	}
	return -1
}

func (d *decoder) frames(l *link, p *Packet, plain []byte, space int) {
	var crypto func(uint64, []byte)
	if space < 2 {
		cs := &d.crypto[l.dir][space]
		crypto = cs.add
	}
	fs, err := parseFrames(plain, d.ackExp[l.dir], crypto)
	p.Decrypted, p.Frames = true, fs
	if err != nil {
		p.Note = err.Error()
		d.fail(l.rec, "%s packet %d: %v", p.Type, p.PN, err)
	}
	for i := range fs {
		if fs[i].Type == FrameNewConnectionID {
			d.knowCID(1-l.dir, fs[i].ConnID)
		}
	}
}

// progress derives what the handshake so far allows: the client random,
// the suite, the Handshake and 1-RTT keys, the ACK delay exponents.
func (d *decoder) progress(l *link) error {
	if d.c.ClientRandom == nil {
		if cr, ok := d.crypto[C2S][0].clientRandom(); ok {
			d.c.ClientRandom = cr
			if d.kl != nil && !d.kl.has(cr) {
				return fmt.Errorf("%s: no secret for client_random %s (the connection in %s, record %d): the key log is another connection's", d.kl.Name, hex.EncodeToString(cr), d.name, l.rec)
			}
		}
	}
	if d.suite == 0 {
		if sh, ok := d.crypto[S2C][0].message(2); ok {
			if s, ok := serverHelloSuite(sh); ok {
				d.suite = s
				d.c.Suite = suiteName(s)
			}
		}
	}
	if !d.haveTP[C2S] {
		if ch, ok := d.crypto[C2S][0].message(1); ok {
			d.haveTP[C2S] = true
			if tp, ok := transportParams(ch, true); ok {
				d.ackExp[C2S] = ackDelayExponent(tp)
			}
		}
	}
	if !d.haveTP[S2C] {
		if ee, ok := d.crypto[S2C][1].message(8); ok {
			d.haveTP[S2C] = true
			if tp, ok := transportParams(ee, false); ok {
				d.ackExp[S2C] = ackDelayExponent(tp)
			}
		}
	}
	if d.kl == nil || d.c.ClientRandom == nil || d.suite == 0 {
		return nil
	}
	cr := d.c.ClientRandom
	mk := func(label string) (*keys, error) {
		s := d.kl.secret(cr, label)
		if s == nil {
			return nil, nil
		}
		k, err := newKeys(d.suite, s, nil)
		if err != nil {
			return nil, fmt.Errorf("%s: %s for client_random %s: %w", d.kl.Name, label, hex.EncodeToString(cr), err)
		}
		return k, nil
	}
	var err error
	if d.hs[C2S] == nil {
		if d.hs[C2S], err = mk(labelClientHandshake); err != nil {
			return err
		}
		if d.hs[S2C], err = mk(labelServerHandshake); err != nil {
			return err
		}
		if d.early, err = mk(labelClientEarly); err != nil {
			return err
		}
	}
	if d.app[C2S] == nil {
		for dir, label := range []string{labelClientTraffic0, labelServerTraffic0} {
			k, err := mk(label)
			if err != nil {
				return err
			}
			if k != nil {
				d.app[dir] = &phases{gens: []*keys{k}}
			}
		}
	}
	return nil
}
