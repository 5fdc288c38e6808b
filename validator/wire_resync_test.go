package validator

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"os"
	"path/filepath"
	"sort"
	"testing"
)

// A trimmed capture skips packets: a 1- or 2-byte packet number after the
// gap expands near the last one seen; resyncPN finds the real number, the
// only one that authenticates the packet.
func TestResyncPN(t *testing.T) {
	block, err := aes.NewCipher(bytes.Repeat([]byte{7}, 16))
	if err != nil {
		t.Fatal(err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		t.Fatal(err)
	}
	k := packetKeys{aead: aead, iv: bytes.Repeat([]byte{3}, 12)}
	seal := func(pn uint64, hdr, plain []byte) []byte {
		nonce := bytes.Clone(k.iv)
		for i := range 8 {
			nonce[len(nonce)-1-i] ^= byte(pn >> (8 * i))
		}
		return aead.Seal(nil, nonce, plain, hdr)
	}
	hdr := []byte{0x40, 1, 2, 3, 4, 0x88}
	plain := []byte("STREAM frame bytes")
	for _, c := range []struct {
		name       string
		real       int64 // the packet's number
		expandedTo int64 // what the stale expansion gave
		pnLen      int
		want       int64
		wantResync bool
	}{
		{"1-byte number 23 windows on", 23*256 + 0x88, 0x88, 1, 23*256 + 0x88, true},
		{"2-byte number 3 windows on", 3*65536 + 0x1234, 0x1234, 2, 3*65536 + 0x1234, true},
		{"4-byte number: no window to search", 5000, 4000, 4, 4000, false},
		{"beyond the span", resyncSpan + 2*256 + 0x88, 0x88, 1, 0x88, false},
		{"behind: a gap only skips ahead", 0x88, 0x188, 1, 0x188, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			ct := seal(uint64(c.real), hdr, plain)
			got, pn, ok := resyncPN(k, c.expandedTo, c.pnLen, hdr, ct)
			if ok != c.wantResync || pn != c.want {
				t.Fatalf("resyncPN = %d, %v; want %d, %v", pn, ok, c.want, c.wantResync)
			}
			if ok && !bytes.Equal(got, plain) {
				t.Fatalf("plaintext %q", got)
			}
		})
	}
}

// The validator's own reader on the committed quinn evidence, whose
// trimmed capture skips thousands of 1-byte-numbered packets: after the
// gap the server's numbers run on without a jump (the cut packets read
// before the first whole one that resynchronised moved with it), and the
// window's packets are above the first datagrams'.
func TestResyncQuinnEvidence(t *testing.T) {
	dir := filepath.Join("..", "data", "evidence", "quinn", "rep1")
	if _, err := os.Stat(filepath.Join(dir, WireCaptureFile)); err != nil {
		t.Skipf("no quinn evidence here: %v", err)
	}
	m, err := ReadWire(filepath.Join(dir, WireCaptureFile), filepath.Join(dir, WireKeyLogFile))
	if err != nil {
		t.Fatal(err)
	}
	type seen struct {
		pn int64
		ns int64
	}
	var ss []seen
	for pn, sightings := range m.Sent[1] {
		for _, s := range sightings {
			ss = append(ss, seen{pn, s.WireNS})
		}
	}
	sort.Slice(ss, func(i, j int) bool { return ss[i].ns < ss[j].ns })
	gap := 1
	for i := 1; i < len(ss); i++ {
		if ss[i].ns-ss[i-1].ns > ss[gap].ns-ss[gap-1].ns {
			gap = i
		}
	}
	if len(ss) < 1000 || ss[gap].pn < 1000 {
		t.Fatalf("%d server packets; the first after the widest gap is %d, want one in the thousands", len(ss), ss[gap].pn)
	}
	for i := gap + 1; i < len(ss); i++ {
		if d := ss[i].pn - ss[i-1].pn; d > 1000 || d < -1000 {
			t.Fatalf("server packet %d follows packet %d after the capture's gap", ss[i].pn, ss[i-1].pn)
		}
	}
}
