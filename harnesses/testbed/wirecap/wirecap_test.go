package wirecap

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
	"github.com/klauspost/compress/gzip"

	"github.com/migaudit/migaudit/harnesses/testbed/linkemu"
)

// udp4 is an IPv4/UDP datagram whose payload starts with first (0xc0: a
// long header, 0x40: a short one) and is size bytes long in all.
func udp4(first byte, size, seq int) []byte {
	b := make([]byte, size)
	b[0], b[9] = 0x45, 17
	binary.BigEndian.PutUint16(b[2:], uint16(size))
	b[28] = first
	for i := 29; i < size; i++ {
		b[i] = byte(seq + i)
	}
	return b
}

func sent(arr int64, b []byte) linkemu.Datagram {
	return linkemu.Datagram{Record: linkemu.Record{Arr: arr, Due: arr + 10, Sent: arr + 10, Size: uint32(len(b)), Cause: linkemu.Sent}, Data: b}
}

func dropped(arr int64, cause uint32, b []byte) linkemu.Datagram {
	return linkemu.Datagram{Record: linkemu.Record{Arr: arr, Size: uint32(len(b)), Cause: cause}, Data: b}
}

type readPacket struct {
	iface         int
	ts            int64
	capLen, len   int
	comment, data string
}

func readAll(t *testing.T, r io.Reader) (*pcapgo.NgReader, []readPacket) {
	t.Helper()
	ng, err := pcapgo.NewNgReader(r, pcapgo.NgReaderOptions{})
	if err != nil {
		t.Fatalf("read back: %v", err)
	}
	var out []readPacket
	for {
		data, ci, opts, err := ng.ReadPacketDataWithOptions()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("read back packet %d: %v", len(out), err)
		}
		out = append(out, readPacket{ci.InterfaceIndex, ci.Timestamp.UnixNano(), ci.CaptureLength, ci.Length, strings.Join(opts.Comments, "|"), string(data)})
	}
	return ng, out
}

func TestWrite(t *testing.T) {
	const ms = int64(time.Millisecond)
	const off = 1_700_000_000 * int64(time.Second)
	p := Policy{WholeUpTo: 256, HeaderBytes: 41, FirstWhole: 1, Before: 10 * time.Millisecond, After: 20 * time.Millisecond}
	long := udp4(0xc0, 1200, 1)
	cases := []struct {
		name string
		in   Input
		// want, in file order: interface, timestamp (monotonic), bytes kept, comment
		want []readPacket
	}{
		{
			name: "snap policy",
			in: Input{MonoToReal: off, Migrations: []int64{500 * ms}, Links: []Link{
				{Path: "A", ToServer: false, Datagrams: []linkemu.Datagram{
					sent(100*ms, long),                // long header: whole
					sent(200*ms, udp4(0x40, 1200, 2)), // short, large: cut to 28+41
					sent(495*ms, udp4(0x40, 1200, 3)), // in the window (ts 495 ms + 10 ns): whole
					sent(600*ms, udp4(0x40, 256, 4)),  // small: whole
					sent(700*ms, udp4(0x40, 1200, 5)), // after the window: cut
				}},
				{Path: "B", ToServer: true, Datagrams: []linkemu.Datagram{
					sent(480*ms, udp4(0x40, 1200, 6)), // first of its direction: whole
					sent(510*ms, udp4(0x40, 1200, 7)), // in the window
					dropped(800*ms, linkemu.QueueDrop, udp4(0x40, 1200, 8)),
				}},
			}},
			want: []readPacket{
				{iface: 0, ts: 100*ms + 10, capLen: 1200, comment: fmt.Sprintf("dir=s2c arr=%d fate=sent", off+100*ms)},
				{iface: 0, ts: 200*ms + 10, capLen: 69, comment: fmt.Sprintf("dir=s2c arr=%d fate=sent", off+200*ms)},
				{iface: 1, ts: 480*ms + 10, capLen: 1200, comment: fmt.Sprintf("dir=c2s arr=%d fate=sent", off+480*ms)},
				{iface: 0, ts: 495*ms + 10, capLen: 1200, comment: fmt.Sprintf("dir=s2c arr=%d fate=sent", off+495*ms)},
				{iface: 1, ts: 510*ms + 10, capLen: 1200, comment: fmt.Sprintf("dir=c2s arr=%d fate=sent", off+510*ms)},
				{iface: 0, ts: 600*ms + 10, capLen: 256, comment: fmt.Sprintf("dir=s2c arr=%d fate=sent", off+600*ms)},
				{iface: 0, ts: 700*ms + 10, capLen: 69, comment: fmt.Sprintf("dir=s2c arr=%d fate=sent", off+700*ms)},
				{iface: 1, ts: 800 * ms, capLen: 69, comment: fmt.Sprintf("dir=c2s arr=%d fate=queue-drop", off+800*ms)},
			},
		},
		{
			// A drop goes before the first datagram of its direction that
			// entered the link after it (the sender's order), not at its
			// arrival among packets that were queued before it.
			name: "drops in the sender's order",
			in: Input{Links: []Link{
				{Path: "A", ToServer: false, Datagrams: []linkemu.Datagram{
					{Record: linkemu.Record{Arr: 100 * ms, Due: 130 * ms, Sent: 130 * ms, Size: 100}, Data: udp4(0x40, 100, 1)},
					{Record: linkemu.Record{Arr: 110 * ms, Due: 140 * ms, Sent: 140 * ms, Size: 100}, Data: udp4(0x40, 100, 2)},
					dropped(115*ms, linkemu.QueueDrop, udp4(0x40, 100, 3)),
					{Record: linkemu.Record{Arr: 120 * ms, Due: 150 * ms, Sent: 150 * ms, Size: 100}, Data: udp4(0x40, 100, 4)},
					dropped(160*ms, linkemu.QueueDrop, udp4(0x40, 100, 5)), // after the last: stays last
				}},
				{Path: "A", ToServer: true, Datagrams: []linkemu.Datagram{sent(135*ms, udp4(0x40, 100, 6))}},
			}},
			want: []readPacket{
				{iface: 0, ts: 130 * ms, capLen: 100, comment: fmt.Sprintf("dir=s2c arr=%d fate=sent", 100*ms)},
				{iface: 0, ts: 135*ms + 10, capLen: 100, comment: fmt.Sprintf("dir=c2s arr=%d fate=sent", 135*ms)},
				{iface: 0, ts: 140 * ms, capLen: 100, comment: fmt.Sprintf("dir=s2c arr=%d fate=sent", 110*ms)},
				{iface: 0, ts: 115 * ms, capLen: 100, comment: fmt.Sprintf("dir=s2c arr=%d fate=queue-drop", 115*ms)},
				{iface: 0, ts: 150 * ms, capLen: 100, comment: fmt.Sprintf("dir=s2c arr=%d fate=sent", 120*ms)},
				{iface: 0, ts: 160 * ms, capLen: 100, comment: fmt.Sprintf("dir=s2c arr=%d fate=queue-drop", 160*ms)},
			},
		},
		{
			name: "bounds and lost bytes",
			in: Input{From: 150 * ms, To: 300 * ms, Links: []Link{
				{Path: "A", ToServer: true, LostBytes: 2, Datagrams: []linkemu.Datagram{
					sent(100*ms, udp4(0x40, 100, 1)), // before From
					sent(200*ms, udp4(0x40, 100, 2)),
					{Record: linkemu.Record{Arr: 210 * ms, Sent: 220 * ms, Size: 1200}}, // bytes overwritten: not written
					dropped(250*ms, linkemu.LossDrop, udp4(0x40, 100, 3)),
					sent(400*ms, udp4(0x40, 100, 4)), // after To
				}},
			}},
			want: []readPacket{
				{iface: 0, ts: 200*ms + 10, capLen: 100, comment: fmt.Sprintf("dir=c2s arr=%d fate=sent", 200*ms)},
				{iface: 0, ts: 250 * ms, capLen: 100, comment: fmt.Sprintf("dir=c2s arr=%d fate=loss-drop", 250*ms)},
			},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			gz, st, err := WriteGzip(c.in, p)
			if err != nil {
				t.Fatal(err)
			}
			zr, err := gzip.NewReader(bytes.NewReader(gz))
			if err != nil {
				t.Fatal(err)
			}
			ng, got := readAll(t, zr)
			if n := ng.NInterfaces(); n != 2 {
				t.Fatalf("%d interfaces, want 2", n)
			}
			for i, name := range []string{"pathA", "pathB"} {
				intf, _ := ng.Interface(i)
				if intf.Name != name || intf.LinkType != layers.LinkTypeRaw || intf.TimestampResolution != 9 {
					t.Errorf("interface %d: %q link type %d resolution %d, want %q RAW (101) 9", i, intf.Name, intf.LinkType, intf.TimestampResolution, name)
				}
			}
			if sc := ng.SectionInfo().Comment; !strings.HasPrefix(sc, Version) || !strings.Contains(sc, fmt.Sprint(c.in.MonoToReal)) {
				t.Errorf("section comment %q: want the version and the clock offset", sc)
			}
			if len(got) != len(c.want) {
				t.Fatalf("%d packets, want %d: %+v", len(got), len(c.want), got)
			}
			for i, w := range c.want {
				g := got[i]
				if g.iface != w.iface || g.ts != w.ts+c.in.MonoToReal || g.capLen != w.capLen || g.comment != w.comment {
					t.Errorf("packet %d: iface %d ts %d kept %d %q; want iface %d ts %d kept %d %q", i, g.iface, g.ts, g.capLen, g.comment,
						w.iface, w.ts+c.in.MonoToReal, w.capLen, w.comment)
				}
				if g.len < g.capLen || g.len != int(binary.BigEndian.Uint16([]byte(g.data[2:4]))) {
					t.Errorf("packet %d: length %d, captured %d, IP total length %d", i, g.len, g.capLen, binary.BigEndian.Uint16([]byte(g.data[2:4])))
				}
			}
			total := 0
			for _, d := range st.Dirs {
				total += d.Packets
				if d.Whole+d.Cut != d.Packets {
					t.Errorf("stats %+v: whole + cut != packets", d)
				}
			}
			if total != len(got) || st.Packets != len(got) {
				t.Errorf("stats count %d (%d), file has %d", total, st.Packets, len(got))
			}
			var lost uint64
			for _, l := range c.in.Links {
				lost += l.LostBytes + l.LostRecords
			}
			if st.Overruns != lost {
				t.Errorf("overruns %d, want %d", st.Overruns, lost)
			}
		})
	}
}

func TestWriteRejectsUnknownPath(t *testing.T) {
	_, err := Write(io.Discard, Input{Links: []Link{{Path: "C"}}}, DefaultPolicy())
	if err == nil || !strings.Contains(err.Error(), `path "C"`) {
		t.Fatalf("err = %v, want one naming path C", err)
	}
}

func TestFirstArrival(t *testing.T) {
	links := []Link{
		{Path: "B", ToServer: false, Datagrams: []linkemu.Datagram{sent(5, nil)}},
		{Path: "B", ToServer: true, Datagrams: []linkemu.Datagram{sent(30, nil), sent(20, nil)}},
		{Path: "A", ToServer: true, Datagrams: []linkemu.Datagram{sent(1, nil)}},
	}
	for _, c := range []struct {
		from, to int64
		want     int64
		ok       bool
	}{{0, 0, 20, true}, {25, 0, 30, true}, {0, 10, 0, false}} {
		got, ok := FirstArrival(links, "B", c.from, c.to)
		if got != c.want || ok != c.ok {
			t.Errorf("FirstArrival(B, %d, %d) = %d, %v; want %d, %v", c.from, c.to, got, ok, c.want, c.ok)
		}
	}
}
