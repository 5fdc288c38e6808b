package wire

// Sighting is where and when a packet crossed the wire.
type Sighting struct {
	Record int
	Path   string
	WireNS int64
	Fate   string
}

// Index maps (direction, application-space packet number) to the packet's
// first sighting: the compact view consumers join a trace's packet numbers
// with. Initial and Handshake packets, whose numbers restart in their own
// spaces, are not in it.
type Index struct {
	m [2]map[int64]Sighting
}

// Index builds the capture's index of 0-RTT and 1-RTT packets whose number
// is known.
func (c *Capture) Index() *Index {
	ix := &Index{m: [2]map[int64]Sighting{{}, {}}}
	for i := range c.Packets {
		p := &c.Packets[i]
		if p.PN < 0 || (p.Type != OneRTT && p.Type != ZeroRTT) {
			continue
		}
		if _, ok := ix.m[p.Dir][p.PN]; !ok {
			ix.m[p.Dir][p.PN] = Sighting{Record: p.Record, Path: p.Path, WireNS: p.WireNS, Fate: p.Fate}
		}
	}
	return ix
}

// Lookup is where packet pn sent in direction dir crossed the wire.
func (ix *Index) Lookup(dir Direction, pn int64) (Sighting, bool) {
	s, ok := ix.m[dir][pn]
	return s, ok
}

// Len is how many packets the index holds in direction dir.
func (ix *Index) Len(dir Direction) int { return len(ix.m[dir]) }
