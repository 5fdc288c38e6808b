package wire

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/binary"
	"fmt"
	"hash"

	"golang.org/x/crypto/chacha20"
	"golang.org/x/crypto/chacha20poly1305"
	"golang.org/x/crypto/hkdf"
)

// TLS 1.3 cipher suites QUIC v1 uses (RFC 9001 §5.3).
const (
	suiteAES128GCM        uint16 = 0x1301
	suiteAES256GCM        uint16 = 0x1302
	suiteChaCha20Poly1305 uint16 = 0x1303
)

// initialSaltV1 is RFC 9001 §5.2's salt for QUIC version 1.
var initialSaltV1 = []byte{0x38, 0x76, 0x2c, 0xf7, 0xf5, 0x59, 0x34, 0xb3, 0x4d, 0x17, 0x9a, 0xe6, 0xa4, 0xc8, 0x0c, 0xad, 0xcc, 0xbb, 0x7f, 0x0a}

func suiteName(s uint16) string {
	switch s {
	case suiteAES128GCM:
		return "TLS_AES_128_GCM_SHA256"
	case suiteAES256GCM:
		return "TLS_AES_256_GCM_SHA384"
	case suiteChaCha20Poly1305:
		return "TLS_CHACHA20_POLY1305_SHA256"
	}
	return fmt.Sprintf("0x%04x", s)
}

func suiteHash(s uint16) func() hash.Hash {
	if s == suiteAES256GCM {
		return sha512.New384
	}
	return sha256.New
}

func suiteKeyLen(s uint16) int {
	if s == suiteAES128GCM {
		return 16
	}
	return 32
}

// expandLabel is TLS 1.3's HKDF-Expand-Label (RFC 8446 §7.1) with an
// empty context.
func expandLabel(h func() hash.Hash, secret []byte, label string, n int) []byte {
	info := make([]byte, 0, 4+6+len(label))
	info = binary.BigEndian.AppendUint16(info, uint16(n))
	info = append(info, byte(6+len(label)))
	info = append(info, "tls13 "...)
	info = append(info, label...)
	info = append(info, 0)
	out := make([]byte, n)
	if _, err := hkdf.Expand(h, secret, info).Read(out); err != nil {
		panic(err) // only for n > 255*hash size
	}
	return out
}

// keys protect one direction of one packet-number space at one key phase.
type keys struct {
	aead cipher.AEAD
	iv   []byte
	hp   headerProtector
	// secret and suite derive the next key phase (quic ku).
	secret []byte
	suite  uint16
	nonce  [12]byte
}

type headerProtector interface {
	mask(sample []byte) [5]byte
}

type aesHP struct{ b cipher.Block }

func (a aesHP) mask(sample []byte) (m [5]byte) {
	var out [16]byte
	a.b.Encrypt(out[:], sample[:16])
	copy(m[:], out[:5])
	return m
}

type chachaHP struct{ key []byte }

func (c chachaHP) mask(sample []byte) (m [5]byte) {
	s, err := chacha20.NewUnauthenticatedCipher(c.key, sample[4:16])
	if err != nil {
		return m
	}
	s.SetCounter(binary.LittleEndian.Uint32(sample[:4]))
	s.XORKeyStream(m[:], m[:])
	return m
}

// newKeys derives packet protection from a traffic secret (RFC 9001 §5.1).
// hp, when non-nil, is kept: a key update does not change it (§6.1).
func newKeys(suite uint16, secret []byte, hp headerProtector) (*keys, error) {
	h := suiteHash(suite)
	n := suiteKeyLen(suite)
	key := expandLabel(h, secret, "quic key", n)
	k := &keys{iv: expandLabel(h, secret, "quic iv", 12), secret: secret, suite: suite}
	var err error
	switch suite {
	case suiteAES128GCM, suiteAES256GCM:
		var b cipher.Block
		if b, err = aes.NewCipher(key); err == nil {
			k.aead, err = cipher.NewGCM(b)
		}
		if err == nil && hp == nil {
			var hb cipher.Block
			if hb, err = aes.NewCipher(expandLabel(h, secret, "quic hp", n)); err == nil {
				hp = aesHP{hb}
			}
		}
	case suiteChaCha20Poly1305:
		k.aead, err = chacha20poly1305.New(key)
		if hp == nil {
			hp = chachaHP{expandLabel(h, secret, "quic hp", n)}
		}
	default:
		return nil, fmt.Errorf("cipher suite %s is not one QUIC v1 uses", suiteName(suite))
	}
	if err != nil {
		return nil, fmt.Errorf("%s keys: %w", suiteName(suite), err)
	}
	k.hp = hp
	return k, nil
}

// next is the following key phase's keys (RFC 9001 §6.1).
func (k *keys) next() (*keys, error) {
	h := suiteHash(k.suite)
	return newKeys(k.suite, expandLabel(h, k.secret, "quic ku", h().Size()), k.hp)
}

// initialKeys derives the Initial keys of both directions from the
// client's first Destination Connection ID (RFC 9001 §5.2).
func initialKeys(dcid []byte) (client, server *keys, err error) {
	initial := hkdf.Extract(sha256.New, dcid, initialSaltV1)
	if client, err = newKeys(suiteAES128GCM, expandLabel(sha256.New, initial, "client in", 32), nil); err != nil {
		return nil, nil, err
	}
	server, err = newKeys(suiteAES128GCM, expandLabel(sha256.New, initial, "server in", 32), nil)
	return client, server, err
}
