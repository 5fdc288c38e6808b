package discriminator

import (
	"sort"

	"github.com/migaudit/migaudit/parsers/timeline"
	"github.com/migaudit/migaudit/parsers/wire"
)

// PathBytes is the sender's accounting on one path after the migration.
type PathBytes struct {
	// Path is the capture interface the packets crossed, or "not on the
	// wire" for packets the capture does not hold (sent after a trimmed
	// capture ends, or lost before the link).
	Path         string `json:"path"`
	AckedBytes   int64  `json:"acked_bytes"`
	AckedPackets int    `json:"acked_packets"`
	LostBytes    int64  `json:"lost_bytes,omitempty"`
	LostPackets  int    `json:"lost_packets,omitempty"`
}

// NotOnWire labels packets the capture does not hold in PathBytes.
const NotOnWire = "not on the wire"

// bytesByPath sums, from the migration to the end of the scope, the sizes
// (as the trace logged them when sent) of the sender's packets newly
// acknowledged and declared lost, by the path each crossed on the wire.
func bytesByPath(w *WireEvidence, events []timeline.Event, sendDir wire.Direction, from, to int64) []PathBytes {
	size := map[int64]int64{}
	var acked intervals
	by := map[string]*PathBytes{}
	var order []string
	get := func(pn int64) *PathBytes {
		path := NotOnWire
		if s, ok := w.ix.Lookup(sendDir, pn); ok {
			path = s.Path
		}
		if by[path] == nil {
			by[path] = &PathBytes{Path: path}
			order = append(order, path)
		}
		return by[path]
	}
	seen := false
	for _, e := range events {
		if !appSpace(e.PacketSpace) || e.TimeUS > to {
			continue
		}
		switch e.Kind {
		case timeline.PacketSent:
			size[e.PacketNumber] = e.SizeBytes
		case timeline.PacketsAcked:
			for _, rg := range e.AckRanges {
				lo, hi := min(rg.First, rg.Last), max(rg.First, rg.Last)
				if e.TimeUS >= from {
					for pn := lo; pn <= hi && hi-lo < 1<<20; pn++ {
						if _, sent := size[pn]; !sent || acked.contains(pn) {
							continue
						}
						b := get(pn)
						b.AckedBytes += size[pn]
						b.AckedPackets++
						seen = true
					}
				}
				acked.add(lo, hi)
			}
		case timeline.PacketLost:
			if e.TimeUS < from || e.PacketNumber < 0 {
				continue
			}
			b := get(e.PacketNumber)
			b.LostBytes += size[e.PacketNumber]
			b.LostPackets++
			seen = true
		}
	}
	if !seen {
		return nil
	}
	sort.Strings(order)
	out := make([]PathBytes, 0, len(order))
	for _, p := range order {
		out = append(out, *by[p])
	}
	return out
}
