package linkemu

import (
	"bytes"
	"encoding/binary"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// datagram is packet seq's content: its number, then a pattern that
// differs per packet, so that a byte taken from another slot shows.
func datagram(seq, size int) []byte {
	b := make([]byte, size)
	for i := range b {
		b[i] = byte(seq*7 + i)
	}
	binary.BigEndian.PutUint32(b, uint32(seq))
	return b
}

func TestCapture(t *testing.T) {
	cases := []struct {
		name    string
		spec    Spec
		capture bool
		ring    int // CaptureRing for the link
		n, size int
		drain   bool // drain while sending (else once at the end)
		// want
		wholeAll  bool // every datagram's bytes, whole
		lostBytes bool // some overrun, counted
	}{
		{name: "delivered", spec: Spec{Delay: time.Millisecond}, capture: true, ring: 1 << 20, n: 300, size: 1200, drain: true, wholeAll: true},
		{name: "dropped too", spec: Spec{Loss: 0.3}, capture: true, ring: 1 << 20, n: 300, size: 700, drain: true, wholeAll: true},
		{name: "off", spec: Spec{}, capture: false, ring: 1 << 20, n: 50, size: 100},
		{name: "overrun counted", spec: Spec{}, capture: true, ring: 16 << 10, n: 200, size: 1000, lostBytes: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			defer func(r int) { CaptureRing = r }(CaptureRing)
			CaptureRing = c.ring
			h := newHarness(t, c.spec)
			if got := h.link.SetCapture(c.capture); got != true {
				t.Fatalf("SetCapture: no capture ring of %d B", c.ring)
			}
			_, since := h.link.Records(^uint64(0))
			var got []Datagram
			var lostRec, lostBytes uint64
			drain := func() {
				d := h.link.Datagrams(since)
				got = append(got, d.Datagrams...)
				since, lostRec, lostBytes = d.Next, lostRec+d.LostRecords, lostBytes+d.LostBytes
			}
			done := make(chan struct{})
			go func() {
				defer close(done)
				h.collect(c.n, time.Second)
			}()
			for i := range c.n {
				if _, err := writeAll(h.srcW, datagram(i, c.size)); err != nil {
					t.Fatal(err)
				}
				if c.drain && i%20 == 0 {
					drain()
				}
				if c.drain {
					time.Sleep(100 * time.Microsecond)
				}
			}
			<-done
			time.Sleep(20 * time.Millisecond)
			drain()
			cn := h.link.Counters()
			if want := int(cn.Packets + cn.LossDrops + cn.QueueDrops); len(got) != want {
				t.Fatalf("%d records, the counters say %d datagrams (%+v)", len(got), want, cn)
			}
			if lostRec != 0 {
				t.Errorf("%d records lost", lostRec)
			}
			if (lostBytes > 0) != c.lostBytes {
				t.Errorf("lost bytes of %d datagrams, want any: %v", lostBytes, c.lostBytes)
			}
			seen := map[int]bool{}
			withData := 0
			for _, d := range got {
				if d.Data == nil {
					continue
				}
				withData++
				seq := int(binary.BigEndian.Uint32(d.Data))
				if !bytes.Equal(d.Data, datagram(seq, c.size)) || int(d.Size) != len(d.Data) {
					t.Fatalf("datagram %d: captured bytes differ from what was sent (%d B, record says %d)", seq, len(d.Data), d.Size)
				}
				if seen[seq] {
					t.Fatalf("datagram %d captured twice", seq)
				}
				seen[seq] = true
			}
			switch {
			case !c.capture && withData > 0:
				t.Errorf("capture off, yet %d datagrams carry bytes", withData)
			case c.wholeAll && withData != len(got):
				t.Errorf("%d of %d records carry their bytes", withData, len(got))
			case c.lostBytes && withData+int(lostBytes) != len(got):
				t.Errorf("%d with bytes + %d counted lost != %d records", withData, lostBytes, len(got))
			}
		})
	}
}

// writeAll writes one datagram, waiting while the socket buffer is full.
func writeAll(fd int, b []byte) (int, error) {
	for {
		n, err := unix.Write(fd, b)
		if err != unix.EAGAIN {
			return n, err
		}
		time.Sleep(50 * time.Microsecond)
	}
}
