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
	"github.com/gopacket/gopacket/pcapgo"
)

// The hand-written pcapng and IP/UDP reading (kept off gopacket so the
// lean front links no net) reads every record of the fixture, and of the
// same capture rewritten at µs resolution, as
// gopacket's pcapgo and layers do.
func TestPcapngMatchesPcapgo(t *testing.T) {
	plain := gunzipFixture(t)
	cases := []struct {
		name string
		file []byte
	}{
		{"fixture (ns, written by pcapgo)", plain},
		{"rewritten at µs resolution", rewriteMicro(t, plain)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ours, err := newNgReader(bytes.NewReader(c.file))
			if err != nil {
				t.Fatal(err)
			}
			lib, err := pcapgo.NewNgReader(bytes.NewReader(c.file), pcapgo.NgReaderOptions{WantMixedLinkType: true})
			if err != nil {
				t.Fatal(err)
			}
			if ours.comment != lib.SectionInfo().Comment {
				t.Errorf("section comment %q, pcapgo %q", ours.comment, lib.SectionInfo().Comment)
			}
			n := 0
			for {
				data, ci, opts, lerr := lib.ReadPacketDataWithOptions()
				rc, oerr := ours.next()
				if errors.Is(lerr, io.EOF) || errors.Is(oerr, io.EOF) {
					if !errors.Is(lerr, io.EOF) || !errors.Is(oerr, io.EOF) {
						t.Fatalf("record %d: pcapgo %v, ours %v", n+1, lerr, oerr)
					}
					break
				}
				if lerr != nil || oerr != nil {
					t.Fatalf("record %d: pcapgo %v, ours %v", n+1, lerr, oerr)
				}
				n++
				iface, _ := lib.Interface(ci.InterfaceIndex)
				if rc.iface != ci.InterfaceIndex || ours.ifaces[rc.iface].name != iface.Name || rc.unixNS != ci.Timestamp.UnixNano() ||
					rc.capLen != ci.CaptureLength || rc.origLen != ci.Length || !bytes.Equal(rc.data, data) || !reflect.DeepEqual(rc.comments, opts.Comments) {
					t.Fatalf("record %d: ours iface %d %q ts %d len %d/%d %q; pcapgo iface %d %q ts %d len %d/%d %q", n,
						rc.iface, ours.ifaces[rc.iface].name, rc.unixNS, rc.capLen, rc.origLen, rc.comments,
						ci.InterfaceIndex, iface.Name, ci.Timestamp.UnixNano(), ci.CaptureLength, ci.Length, opts.Comments)
				}
				pl, src, dst, _, err := udpPayload(data, uint16(iface.LinkType))
				if err != nil {
					t.Fatalf("record %d: %v", n, err)
				}
				pkt := gopacket.NewPacket(data, layers.LayerTypeIPv4, gopacket.Default)
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
		})
	}
}

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
