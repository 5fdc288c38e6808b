package wire

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

// FuzzRead: no input makes the reader panic or loop; whatever it yields
// is consistent.
func FuzzRead(f *testing.F) {
	plain := gunzipFixture(f)
	f.Add(plain[:min(len(plain), 8<<10)])
	f.Add(plain[:min(len(plain), 1<<10)])
	f.Add([]byte{})
	kl, err := ReadKeyLogFile(keylog)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, opt := range []Options{{}, {KeyLog: kl}} {
			c, err := Read("fuzz.pcapng", bytes.NewReader(b), opt)
			if err != nil {
				if strings.Contains(err.Error(), "\n") {
					t.Fatalf("multi-line error %q", err)
				}
				continue
			}
			for _, p := range c.Packets {
				if p.Record < 1 || p.Record > c.Records {
					t.Fatalf("record %d of %d", p.Record, c.Records)
				}
				if p.Frames != nil && !p.Decrypted {
					t.Fatalf("record %d: frames from a packet not decrypted", p.Record)
				}
			}
		}
	})
}

// FuzzFrames: the frame parser walks any plaintext without panicking and
// never yields an ACK range upside down.
func FuzzFrames(f *testing.F) {
	f.Add([]byte{0x02, 0x05, 0x01, 0x01, 0x01, 0x00, 0x01}) // ACK 5, 3 (gap 0, len 1... )
	f.Add([]byte{0x03, 0x40, 0x10, 0x00, 0x00, 0x02, 0x01, 0x02, 0x03})
	f.Add([]byte{0x1a, 1, 2, 3, 4, 5, 6, 7, 8, 0x00, 0x00})
	f.Add([]byte{0x18, 0x01, 0x00, 0x04, 1, 2, 3, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Add([]byte{0x0e, 0x04, 0x40, 0x80, 0x03, 'a', 'b', 'c'})
	f.Fuzz(func(t *testing.T, b []byte) {
		fs, _ := parseFrames(b, 3, func(uint64, []byte) {})
		for _, fr := range fs {
			for _, r := range fr.Ranges {
				if r.Smallest > r.Largest || r.Smallest < 0 {
					t.Fatalf("ACK range %d-%d", r.Smallest, r.Largest)
				}
			}
		}
	})
}

func FuzzKeyLog(f *testing.F) {
	b, err := os.ReadFile(keylog)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(string(b))
	f.Fuzz(func(t *testing.T, s string) {
		kl, err := ParseKeyLog("keylog.txt", strings.NewReader(s))
		if err != nil {
			if !strings.HasPrefix(err.Error(), "keylog.txt: ") {
				t.Fatalf("error does not name the file: %q", err)
			}
			return
		}
		if len(kl.secrets) == 0 {
			t.Fatal("a key log without secrets accepted")
		}
	})
}

// BenchmarkRead: the fixture with its key log (every datagram parsed,
// the whole ones decrypted).
func BenchmarkRead(b *testing.B) {
	raw, err := os.ReadFile(fixture)
	if err != nil {
		b.Fatal(err)
	}
	kl, err := ReadKeyLogFile(keylog)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		c, err := Read("wire.pcapng.gz", bytes.NewReader(raw), Options{KeyLog: kl})
		if err != nil {
			b.Fatal(err)
		}
		n += len(c.Packets)
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "packets/s")
}
