package validator

// QUIC v1 packet protection (RFC 9001 §5) for the validator's wire
// reader: secrets from the client's first DCID or from an NSS key log,
// keys by HKDF-Expand-Label on the standard library's crypto/hkdf.

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/crypto/chacha20"
	"golang.org/x/crypto/chacha20poly1305"
)

// quicV1Salt is RFC 9001 §5.2's initial_salt.
var quicV1Salt = []byte{0x38, 0x76, 0x2c, 0xf7, 0xf5, 0x59, 0x34, 0xb3, 0x4d, 0x17,
	0x9a, 0xe6, 0xa4, 0xc8, 0x0c, 0xad, 0xcc, 0xbb, 0x7f, 0x0a}

// tlsSuite is a TLS 1.3 cipher suite as QUIC uses it.
type tlsSuite struct {
	id     uint16
	name   string
	hash   func() hash.Hash
	keyLen int
	chacha bool
}

var tlsSuites = map[uint16]tlsSuite{
	0x1301: {0x1301, "TLS_AES_128_GCM_SHA256", sha256.New, 16, false},
	0x1302: {0x1302, "TLS_AES_256_GCM_SHA384", sha512.New384, 32, false},
	0x1303: {0x1303, "TLS_CHACHA20_POLY1305_SHA256", sha256.New, 32, true},
}

// expandLabel is TLS 1.3's HKDF-Expand-Label with an empty context.
func expandLabel(h func() hash.Hash, secret []byte, label string, n int) []byte {
	full := "tls13 " + label
	info := make([]byte, 0, 4+len(full))
	info = binary.BigEndian.AppendUint16(info, uint16(n))
	info = append(info, byte(len(full)))
	info = append(info, full...)
	info = append(info, 0)
	out, err := hkdf.Expand(h, secret, string(info), n)
	if err != nil { // only for n beyond 255 hash lengths
		panic(fmt.Sprintf("HKDF-Expand-Label %q: %v", label, err))
	}
	return out
}

// packetKeys protect one direction at one key phase generation.
type packetKeys struct {
	aead cipher.AEAD
	iv   []byte
}

// direction holds one sender's keys: header protection is fixed, the
// packet keys change with each key update (RFC 9001 §6).
type direction struct {
	suite   tlsSuite
	hp      func(sample []byte) [5]byte
	secrets [][]byte // by generation
	keys    []packetKeys
}

func newDirection(s tlsSuite, secret []byte) (*direction, error) {
	d := &direction{suite: s, secrets: [][]byte{secret}}
	hpKey := expandLabel(s.hash, secret, "quic hp", s.keyLen)
	if s.chacha {
		d.hp = func(sample []byte) (m [5]byte) {
			c, err := chacha20.NewUnauthenticatedCipher(hpKey, sample[4:16])
			if err != nil {
				panic(err) // key and nonce lengths are fixed above
			}
			c.SetCounter(binary.LittleEndian.Uint32(sample))
			c.XORKeyStream(m[:], m[:])
			return m
		}
	} else {
		blk, err := aes.NewCipher(hpKey)
		if err != nil {
			return nil, fmt.Errorf("header protection key: %w", err)
		}
		d.hp = func(sample []byte) (m [5]byte) {
			var out [16]byte
			blk.Encrypt(out[:], sample[:16])
			copy(m[:], out[:5])
			return m
		}
	}
	if _, err := d.generation(0); err != nil {
		return nil, err
	}
	return d, nil
}

// generation returns the packet keys after g key updates.
func (d *direction) generation(g int) (packetKeys, error) {
	for len(d.secrets) <= g {
		last := d.secrets[len(d.secrets)-1]
		d.secrets = append(d.secrets, expandLabel(d.suite.hash, last, "quic ku", len(last)))
	}
	for len(d.keys) <= g {
		sec := d.secrets[len(d.keys)]
		key := expandLabel(d.suite.hash, sec, "quic key", d.suite.keyLen)
		var (
			a   cipher.AEAD
			err error
		)
		if d.suite.chacha {
			a, err = chacha20poly1305.New(key)
		} else {
			var blk cipher.Block
			if blk, err = aes.NewCipher(key); err == nil {
				a, err = cipher.NewGCM(blk)
			}
		}
		if err != nil {
			return packetKeys{}, fmt.Errorf("packet key: %w", err)
		}
		d.keys = append(d.keys, packetKeys{a, expandLabel(d.suite.hash, sec, "quic iv", 12)})
	}
	return d.keys[g], nil
}

// open decrypts a packet whose header (up to and including the packet
// number) is hdr and whose protected payload follows.
func (k packetKeys) open(pn uint64, hdr, payload []byte) ([]byte, error) {
	nonce := bytes.Clone(k.iv)
	for i := range 8 {
		nonce[len(nonce)-1-i] ^= byte(pn >> (8 * i))
	}
	return k.aead.Open(nil, nonce, payload, hdr)
}

// initialDirections derives the Initial keys of both endpoints from the
// client's first Destination Connection ID (RFC 9001 §5.2).
func initialDirections(dcid []byte) (client, server *direction, err error) {
	s := tlsSuites[0x1301]
	prk, err := hkdf.Extract(sha256.New, dcid, quicV1Salt)
	if err != nil {
		return nil, nil, err
	}
	if client, err = newDirection(s, expandLabel(s.hash, prk, "client in", 32)); err != nil {
		return nil, nil, err
	}
	server, err = newDirection(s, expandLabel(s.hash, prk, "server in", 32))
	return client, server, err
}

// nssKeyLog is an NSS key log: label → client_random (hex) → secret.
type nssKeyLog struct {
	name    string
	secrets map[string]map[string][]byte
}

func readKeyLogFile(path string) (*nssKeyLog, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return parseKeyLog(filepath.Base(path), b)
}

// keyLogLine is an NSS key log line: label, client_random, secret.
var keyLogLine = lazyRegexp(`^(\S+)\s+([0-9A-Fa-f]{64})\s+((?:[0-9A-Fa-f]{2})+)$`)

func parseKeyLog(name string, b []byte) (*nssKeyLog, error) {
	kl := &nssKeyLog{name: name, secrets: map[string]map[string][]byte{}}
	for i, raw := range strings.Split(string(b), "\n") {
		text := strings.TrimSpace(raw)
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		g := keyLogLine().FindStringSubmatch(text)
		if g == nil {
			return nil, fmt.Errorf("%s: line %d: not LABEL <64 hex digits of client_random> <secret in hex>: %.40q", name, i+1, text)
		}
		label, cr := g[1], strings.ToLower(g[2])
		sec, _ := hex.DecodeString(g[3]) // the pattern admits only hex pairs
		if kl.secrets[label] == nil {
			kl.secrets[label] = map[string][]byte{}
		}
		if old, seen := kl.secrets[label][cr]; seen && !bytes.Equal(old, sec) {
			return nil, fmt.Errorf("%s: line %d: a second, different %s for client_random %s", name, i+1, label, cr)
		}
		kl.secrets[label][cr] = sec
	}
	return kl, nil
}

// secret is the secret labelled label for a connection, or an error
// naming what the key log holds instead.
func (kl *nssKeyLog) secret(label string, clientRandom []byte) ([]byte, error) {
	cr := hex.EncodeToString(clientRandom)
	if s, ok := kl.secrets[label][cr]; ok {
		return s, nil
	}
	n := 0
	for _, m := range kl.secrets {
		n += len(m)
	}
	if n == 0 {
		return nil, fmt.Errorf("%s: no secrets at all", kl.name)
	}
	return nil, fmt.Errorf("%s: no %s for client_random %s (its %d secrets are of other connections or labels)", kl.name, label, cr, n)
}
