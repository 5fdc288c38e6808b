package wire

import "encoding/binary"

// cryptoStream reassembles the CRYPTO frames of one direction and space as
// far as they are contiguous from offset 0; what the reader needs (the
// ClientHello's random, the ServerHello's suite, transport parameters)
// lies in the first few kilobytes.
type cryptoStream struct {
	data    []byte
	pending map[uint64][]byte
}

const maxCryptoStream = 64 << 10

func (c *cryptoStream) add(off uint64, b []byte) {
	if off > maxCryptoStream || len(b) == 0 {
		return
	}
	end := off + uint64(len(b))
	if end <= uint64(len(c.data)) {
		return
	}
	if off > uint64(len(c.data)) {
		if c.pending == nil {
			c.pending = map[uint64][]byte{}
		}
		c.pending[off] = append([]byte(nil), b...)
		return
	}
	c.data = append(c.data, b[uint64(len(c.data))-off:]...)
	for progressed := true; progressed; {
		progressed = false
		for o, p := range c.pending {
			e := o + uint64(len(p))
			if o <= uint64(len(c.data)) {
				if e > uint64(len(c.data)) {
					c.data = append(c.data, p[uint64(len(c.data))-o:]...)
				}
				delete(c.pending, o)
				progressed = true
			}
		}
	}
}

// message returns the first handshake message of type typ whose body is
// complete in the stream.
func (c *cryptoStream) message(typ byte) ([]byte, bool) {
	b := c.data
	for len(b) >= 4 {
		n := int(b[1])<<16 | int(b[2])<<8 | int(b[3])
		if len(b) < 4+n {
			return nil, false
		}
		if b[0] == typ {
			return b[4 : 4+n], true
		}
		b = b[4+n:]
	}
	return nil, false
}

// clientRandom is the random of a ClientHello at the stream's start, as
// soon as its first 38 bytes are there.
func (c *cryptoStream) clientRandom() ([]byte, bool) {
	if len(c.data) < 38 || c.data[0] != 1 {
		return nil, false
	}
	return append([]byte(nil), c.data[6:38]...), true
}

type reader struct {
	b   []byte
	bad bool
}

func (r *reader) bytes(n int) []byte {
	if r.bad || n < 0 || len(r.b) < n {
		r.bad = true
		return nil
	}
	v := r.b[:n]
	r.b = r.b[n:]
	return v
}

func (r *reader) u8() int {
	b := r.bytes(1)
	if b == nil {
		return 0
	}
	return int(b[0])
}

func (r *reader) u16() int {
	b := r.bytes(2)
	if b == nil {
		return 0
	}
	return int(binary.BigEndian.Uint16(b))
}

// serverHelloSuite is the cipher suite a ServerHello body chose.
func serverHelloSuite(body []byte) (uint16, bool) {
	r := reader{b: body}
	r.bytes(2 + 32)
	r.bytes(r.u8())
	s := r.u16()
	return uint16(s), !r.bad
}

// transportParams finds the quic_transport_parameters extension (0x39) in
// a ClientHello (hello true) or EncryptedExtensions body.
func transportParams(body []byte, hello bool) ([]byte, bool) {
	r := reader{b: body}
	if hello {
		r.bytes(2 + 32)
		r.bytes(r.u8())
		r.bytes(r.u16())
		r.bytes(r.u8())
	}
	ext := reader{b: r.bytes(r.u16())}
	if r.bad {
		return nil, false
	}
	for len(ext.b) > 0 && !ext.bad {
		typ := ext.u16()
		data := ext.bytes(ext.u16())
		if typ == 0x39 && !ext.bad {
			return data, true
		}
	}
	return nil, false
}

// ackDelayExponent reads ack_delay_exponent (0x0a) from transport
// parameters; 3 when absent (RFC 9000 §18.2).
func ackDelayExponent(tp []byte) uint64 {
	for len(tp) > 0 {
		id, n := varint(tp)
		if n == 0 {
			break
		}
		tp = tp[n:]
		l, m := varint(tp)
		if m == 0 || uint64(len(tp)-m) < l {
			break
		}
		v := tp[m : m+int(l)]
		tp = tp[m+int(l):]
		if id == 0x0a {
			if e, k := varint(v); k > 0 && e <= 20 {
				return e
			}
		}
	}
	return 3
}

// varint decodes a QUIC variable-length integer; n is 0 when b is short.
func varint(b []byte) (v uint64, n int) {
	if len(b) == 0 {
		return 0, 0
	}
	n = 1 << (b[0] >> 6)
	if len(b) < n {
		return 0, 0
	}
	v = uint64(b[0] & 0x3f)
	for i := 1; i < n; i++ {
		v = v<<8 | uint64(b[i])
	}
	return v, n
}
