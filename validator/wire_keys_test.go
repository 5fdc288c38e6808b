package validator

import (
	"bytes"
	"encoding/hex"
	"testing"
)

// hexOf decodes a test vector written in hex; a typo fails the test.
func hexOf(t *testing.T, s string) []byte {
	t.Helper()
	if b, err := hex.DecodeString(s); err == nil {
		return b
	}
	t.Fatalf("test vector %q is not hex", s)
	return nil
}

// RFC 9001 Appendix A: the Initial keys of A.1 and the ChaCha20-Poly1305
// short header packet of A.5, the one suite the quic-go fixture does not
// exercise.
func TestWireKeysRFC9001Vectors(t *testing.T) {
	client, server, err := initialDirections(hexOf(t, "8394c8f03e515708"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		dir     *direction
		key, iv string
		sample  string
		mask    string
	}{
		// A.1's keys; the masks are A.2's and A.3's header protection.
		{"client in", client, "1f369613dd76d5467730efcbe3b1a22d", "fa044b2f42a3fd3b46fb255c", "d1b1c98dd7689fb8ec11d242b123dc9b", "437b9aec36"},
		{"server in", server, "cf3a5331653c364c88f0f379b6067e37", "0ac1493ca1905853b0bba03e", "2cd0991cd25b0aac406a5816b6394100", "2ec0d8356a"},
	} {
		k, err := tc.dir.generation(0)
		if err != nil {
			t.Fatal(err)
		}
		if got := hex.EncodeToString(k.iv); got != tc.iv {
			t.Errorf("%s: iv %s, want %s", tc.name, got, tc.iv)
		}
		// The key sits inside the AEAD; its derivation is checked here.
		want := expandLabel(tc.dir.suite.hash, tc.dir.secrets[0], "quic key", 16)
		if got := hex.EncodeToString(want); got != tc.key {
			t.Errorf("%s: key %s, want %s", tc.name, got, tc.key)
		}
		m := tc.dir.hp(hexOf(t, tc.sample))
		if got := hex.EncodeToString(m[:]); got != tc.mask {
			t.Errorf("%s: header protection mask %s, want %s", tc.name, got, tc.mask)
		}
	}

	// A.5: ChaCha20-Poly1305, packet number 654360564, payload 01.
	chacha, err := newDirection(tlsSuites[0x1303], hexOf(t, "9ac312a7f877468ebe69422748ad00a15443f18203a07d6060f688f30f21632b"))
	if err != nil {
		t.Fatal(err)
	}
	if m := chacha.hp(hexOf(t, "5e5cd55c41f69080575d7999c25a5bfb")); hex.EncodeToString(m[:]) != "aefefe7d03" {
		t.Errorf("ChaCha20 mask %x, want aefefe7d03", m)
	}
	if ku := expandLabel(chacha.suite.hash, chacha.secrets[0], "quic ku", 32); hex.EncodeToString(ku) != "1223504755036d556342ee9361d253421a826c9ecdf3c7148684b36b714881f9" {
		t.Errorf("ChaCha20 key update secret %x", ku)
	}
	largest := int64(654360563)
	var d wireDecoder
	plain, pn, err := d.unprotect(chacha, 0, &largest, hexOf(t, "4cfe4189655e5cd55c41f69080575d7999c25a5bfb"), 1, 0x1f)
	if err != nil {
		t.Fatal(err)
	}
	if pn != 654360564 || !bytes.Equal(plain, []byte{0x01}) || largest != pn {
		t.Errorf("A.5 packet: pn %d payload %x largest %d, want 654360564 01", pn, plain, largest)
	}
}

// RFC 9000 A.3's example, then the property that defines the encoding:
// any packet number within half a window of the next expected one comes
// back from its truncation, for every length and around every wrap.
func TestWireExpandPN(t *testing.T) {
	if got := expandPN(0xa82f30ea, 0x9b32, 2); got != 0xa82f9b32 {
		t.Errorf("RFC 9000 A.3: %#x, want 0xa82f9b32", got)
	}
	for n := 1; n <= 4; n++ {
		win := int64(1) << (8 * n)
		for _, largest := range []int64{-1, 0, win/2 - 1, win - 2, win - 1, win, 3*win + 7, 1 << 40} {
			for _, delta := range []int64{1, 2, win/2 - 1, -win/2 + 1, -1, 0} {
				pn := largest + 1 + delta
				if pn < 0 {
					continue
				}
				if got := expandPN(largest, uint64(pn&(win-1)), n); got != pn {
					t.Errorf("%d-byte number %d after largest %d came back as %d", n, pn, largest, got)
				}
			}
		}
	}
}
