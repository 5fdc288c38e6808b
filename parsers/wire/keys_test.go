package wire

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"testing"
)

func unhex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// RFC 9001 Appendix A.1: the client's Initial keys for DCID 8394c8f03e515708.
func TestInitialKeysRFC9001(t *testing.T) {
	c, s, err := initialKeys(unhex(t, "8394c8f03e515708"))
	if err != nil {
		t.Fatal(err)
	}
	if got := hex.EncodeToString(c.iv); got != "fa044b2f42a3fd3b46fb255c" {
		t.Errorf("client iv %s", got)
	}
	if got := hex.EncodeToString(s.iv); got != "0ac1493ca1905853b0bba03e" {
		t.Errorf("server iv %s", got)
	}
	sample := unhex(t, "d1b1c98dd7689fb8ec11d242b123dc9b")
	if m := c.hp.mask(sample); hex.EncodeToString(m[:]) != "437b9aec36" {
		t.Errorf("client header-protection mask %x, want 437b9aec36 (A.2)", m)
	}
}

// RFC 9001 Appendix A.5: a ChaCha20-Poly1305 short-header packet, and the
// key update's next secret.
func TestChaCha20RFC9001(t *testing.T) {
	secret := unhex(t, "9ac312a7f877468ebe69422748ad00a15443f18203a07d6060f688f30f21632b")
	k, err := newKeys(suiteChaCha20Poly1305, secret, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := hex.EncodeToString(k.iv); got != "e0459b3474bdd0e44a41c144" {
		t.Errorf("iv %s", got)
	}
	if ku := expandLabel(sha256.New, secret, "quic ku", 32); hex.EncodeToString(ku) != "1223504755036d556342ee9361d253421a826c9ecdf3c7148684b36b714881f9" {
		t.Errorf("quic ku %x", ku)
	}
	pkt := unhex(t, "4cfe4189655e5cd55c41f69080575d7999c25a5bfb")
	// Through the reader's own path: header protection, packet number,
	// AEAD, frames.
	d := newDecoder("a5.pcapng", nil)
	d.app[S2C] = &phases{gens: []*keys{k}}
	d.knowCID(S2C, nil) // zero-length CIDs, as in A.5
	d.largest[S2C][2] = 654360560
	p := Packet{PN: -1, KeyPhase: -1}
	l := &link{rec: 1, dir: S2C, whole: true}
	d.short(l, &p, pkt, len(pkt))
	if p.PN != 654360564 || !p.Decrypted || p.Note != "" {
		t.Fatalf("packet %d decrypted %v note %q, want 654360564 decrypted", p.PN, p.Decrypted, p.Note)
	}
	if len(p.Frames) != 1 || p.Frames[0].Type != FramePing {
		t.Errorf("frames %v, want one PING", p.Frames)
	}
	if !bytes.Equal(pkt[:4], unhex(t, "4200bff4")) {
		t.Errorf("unprotected header %x, want 4200bff4", pkt[:4])
	}
}

// RFC 9000 Appendix A.3's example.
func TestDecodePN(t *testing.T) {
	cases := []struct {
		largest int64
		trunc   uint64
		bits    uint
		want    int64
	}{
		{0xa82f30ea, 0x9b32, 16, 0xa82f9b32},
		{-1, 0, 8, 0},
		{254, 0x00, 8, 256},
		{300, 0x2b, 8, 299},
	}
	for _, c := range cases {
		if got := decodePN(c.largest, c.trunc, c.bits); got != c.want {
			t.Errorf("decodePN(%d, %#x, %d) = %d, want %d", c.largest, c.trunc, c.bits, got, c.want)
		}
	}
}
