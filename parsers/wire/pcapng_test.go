package wire

import (
	"bytes"
	"errors"
	"io"
	"reflect"
	"strconv"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
)

// The IP/UDP reading (udpPayload) agrees with gopacket's layers on every
// record of the fixture.
func TestUDPPayloadMatchesGopacket(t *testing.T) {
	ours, err := newNgReader(bytes.NewReader(gunzipFixture(t)))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for {
		rc, err := ours.next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("record %d: %v", n+1, err)
		}
		n++
		pl, src, dst, _, err := udpPayload(rc.data, ours.ifaces[rc.iface].linkType)
		if err != nil {
			t.Fatalf("record %d: %v", n, err)
		}
		pkt := gopacket.NewPacket(rc.data, layers.LayerTypeIPv4, gopacket.Default)
		udp, _ := pkt.Layer(layers.LayerTypeUDP).(*layers.UDP)
		ip, _ := pkt.Layer(layers.LayerTypeIPv4).(*layers.IPv4)
		if udp == nil || ip == nil {
			t.Fatalf("record %d: gopacket finds no IPv4/UDP", n)
		}
		if want := ip.SrcIP.String() + ":" + strconv.Itoa(int(udp.SrcPort)); src.String() != want {
			t.Fatalf("record %d: source %s, gopacket %s", n, src, want)
		}
		if want := ip.DstIP.String() + ":" + strconv.Itoa(int(udp.DstPort)); dst.String() != want {
			t.Fatalf("record %d: destination %s, gopacket %s", n, dst, want)
		}
		if !bytes.Equal(pl, udp.Payload) {
			t.Fatalf("record %d: UDP payload differs from gopacket's (%d vs %d bytes)", n, len(pl), len(udp.Payload))
		}
	}
	if n == 0 {
		t.Fatal("no records")
	}
}

// A capture at µs resolution (if_tsresol 6) reads with the same records,
// interfaces and comments, its times the ns capture's cut to µs.
func TestMicrosecondCapture(t *testing.T) {
	plain := gunzipFixture(t)
	ns, err := newNgReader(bytes.NewReader(plain))
	if err != nil {
		t.Fatal(err)
	}
	us, err := newNgReader(bytes.NewReader(rewriteMicro(t, plain)))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for {
		a, aerr := ns.next()
		b, berr := us.next()
		if errors.Is(aerr, io.EOF) || errors.Is(berr, io.EOF) {
			if !errors.Is(aerr, io.EOF) || !errors.Is(berr, io.EOF) {
				t.Fatalf("record %d: ns %v, µs %v", n+1, aerr, berr)
			}
			break
		}
		if aerr != nil || berr != nil {
			t.Fatalf("record %d: ns %v, µs %v", n+1, aerr, berr)
		}
		n++
		if b.unixNS != a.unixNS/1000*1000 || a.iface != b.iface || ns.ifaces[a.iface] != us.ifaces[b.iface] ||
			!bytes.Equal(a.data, b.data) || !reflect.DeepEqual(a.comments, b.comments) {
			t.Fatalf("record %d: µs capture gives iface %d ts %d %q, ns capture iface %d ts %d %q", n, b.iface, b.unixNS, b.comments, a.iface, a.unixNS, a.comments)
		}
	}
	if n == 0 {
		t.Fatal("no records")
	}
}

// pcapng block types and option codes rewriteMicro edits.
const (
	blockIDB     = 0x00000001
	blockEPB     = 0x00000006
	optEnd       = 0
	optIfTsresol = 9
)

// rewriteMicro writes the capture again with if_tsresol 6 by hand: pcapgo
// writes only nanoseconds. Each EPB's timestamp is divided by 1000.
func rewriteMicro(t *testing.T, plain []byte) []byte {
	t.Helper()
	b := append([]byte(nil), plain...)
	le := func(o int) uint32 { return uint32(b[o]) | uint32(b[o+1])<<8 | uint32(b[o+2])<<16 | uint32(b[o+3])<<24 }
	put := func(o int, v uint32) { b[o], b[o+1], b[o+2], b[o+3] = byte(v), byte(v>>8), byte(v>>16), byte(v>>24) }
	for o := 0; o+12 <= len(b); {
		typ, l := le(o), int(le(o+4))
		switch typ {
		case blockIDB:
			for p := o + 16; p+4 <= o+l-4; {
				code, ol := int(b[p])|int(b[p+1])<<8, int(b[p+2])|int(b[p+3])<<8
				if code == optEnd {
					break
				}
				if code == optIfTsresol {
					b[p+4] = 6
				}
				p += 4 + (ol+3)&^3
			}
		case blockEPB:
			ts := uint64(le(o+12))<<32 | uint64(le(o+16))
			ts /= 1000
			put(o+12, uint32(ts>>32))
			put(o+16, uint32(ts))
		}
		o += l
	}
	return b
}
