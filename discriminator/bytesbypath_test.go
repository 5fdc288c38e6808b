package discriminator

import (
	"reflect"
	"testing"

	"github.com/migaudit/migaudit/parsers/timeline"
	"github.com/migaudit/migaudit/parsers/wire"
)

// Bytes acknowledged and declared lost after the migration, by the path
// each packet crossed on the wire: packets 1–3 on pathA, 4–6 on pathB, 7
// not in the capture; the migration at 100 µs.
func TestBytesByPath(t *testing.T) {
	c := &wire.Capture{Paths: []string{"pathA", "pathB"}}
	for pn := int64(1); pn <= 6; pn++ {
		path := "pathA"
		if pn >= 4 {
			path = "pathB"
		}
		c.Packets = append(c.Packets, wire.Packet{Record: int(pn), Path: path, Dir: wire.S2C, Type: wire.OneRTT, PN: pn, WireNS: pn})
	}
	w := &WireEvidence{ix: c.Index(), paths: c.Paths}
	sent := func(pn, at, size int64) timeline.Event {
		return timeline.Event{TimeUS: at, Kind: timeline.PacketSent, PacketNumber: pn, SizeBytes: size}
	}
	acked := func(at int64, lo, hi int64) timeline.Event {
		return timeline.Event{TimeUS: at, Kind: timeline.PacketsAcked, PacketNumber: -1, AckRanges: []timeline.Range{{First: lo, Last: hi}}}
	}
	events := []timeline.Event{
		sent(1, 10, 1000), sent(2, 20, 1000), sent(3, 30, 1000),
		acked(50, 1, 1), // before the migration: not counted
		sent(4, 110, 1200), sent(5, 120, 1200), sent(6, 130, 1200), sent(7, 140, 500),
		acked(150, 1, 2), // 2 newly (pathA), 1 again
		acked(160, 4, 5), // pathB
		{TimeUS: 170, Kind: timeline.PacketLost, PacketNumber: 3},
		{TimeUS: 175, Kind: timeline.PacketLost, PacketNumber: 6},
		acked(180, 7, 7), // not on the wire
		acked(900, 6, 6), // after the scope
	}
	got := bytesByPath(w, events, wire.S2C, 100, 500)
	want := []PathBytes{
		{Path: NotOnWire, AckedBytes: 500, AckedPackets: 1},
		{Path: "pathA", AckedBytes: 1000, AckedPackets: 1, LostBytes: 1000, LostPackets: 1},
		{Path: "pathB", AckedBytes: 2400, AckedPackets: 2, LostBytes: 1200, LostPackets: 1},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("bytesByPath =\n%+v\nwant\n%+v", got, want)
	}
	if got := bytesByPath(w, []timeline.Event{{TimeUS: 200, Kind: timeline.DatagramSent}}, wire.S2C, 100, 500); got != nil {
		t.Errorf("a trace without packet events: %+v, want none", got)
	}
}
