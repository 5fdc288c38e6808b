package fidelity

import (
	"cmp"
	"slices"
	"sort"
)

// Delivery is one delivered packet as the emulator recorded it: when its
// schedule said to write it out (DueNS: arrival + the path's delay +
// queueing behind the token bucket) and when it was written (SentNS).
type Delivery struct {
	DueNS, SentNS int64
}

// Order is a direction's delivery order against the other path's packets
// in the same direction: the pairs (one packet of each) that the emulator
// wrote out in the opposite order to their schedule. Only such a pair is a
// reordering the host made: with none, the receiver saw every packet of
// both paths in exactly the order a perfect emulator would have given it,
// so no packet could look lost (or not lost) because of the host, however
// late it was; what lateness then still does is shift timing (the RTT
// samples, the ACK clock, RFC 9002's time threshold), bounded elsewhere.
type Order struct {
	Other string `json:"other"`
	// OtherPackets is how many of the other direction's packets the
	// comparison saw (its whole record).
	OtherPackets int `json:"other_packets"`
	// ChangedPairs counts the pairs written against their schedule;
	// Packets counts this direction's packets in at least one of them.
	ChangedPairs int `json:"changed_pairs"`
	Packets      int `json:"packets"`
	// LateMaxNS is the worst lateness of this direction's packets in a
	// changed pair (0 when there is none), written at LateMaxAtNS;
	// FirstAtNS is the first such packet's write time.
	LateMaxNS   int64 `json:"late_max_ns"`
	LateMaxAtNS int64 `json:"late_max_at_ns,omitempty"`
	FirstAtNS   int64 `json:"first_at_ns,omitempty"`
}

// CrossOrder compares, for every packet of own, its written order with its
// scheduled order against every packet of other: a pair is changed when
// one is due strictly before the other but was written strictly after it
// (ties in either are no order). It is exact, not an estimate from
// densities: for a packet p only the other path's packets due between
// p's due time and its write time (widened by the other's worst lateness
// and worst earliness) can form such a pair, and each of those is
// compared.
func CrossOrder(own, other []Delivery, otherName string) Order {
	o := Order{Other: otherName, OtherPackets: len(other)}
	if len(own) == 0 || len(other) == 0 {
		return o
	}
	byDue := slices.Clone(other)
	slices.SortFunc(byDue, func(a, b Delivery) int { return cmp.Compare(a.DueNS, b.DueNS) })
	var late, early int64 // the other's worst lateness and earliness
	for _, q := range byDue {
		late, early = max(late, q.SentNS-q.DueNS), max(early, q.DueNS-q.SentNS)
	}
	for _, p := range own {
		// A changed pair needs q due in (p.Due, p.Sent + early) (p
		// written after q, due before it) or in (p.Sent − late, p.Due)
		// (p written before q, due after it).
		lo, hi := min(p.DueNS, p.SentNS-late), max(p.DueNS, p.SentNS+early)
		i := sort.Search(len(byDue), func(i int) bool { return byDue[i].DueNS >= lo })
		n := 0
		for ; i < len(byDue) && byDue[i].DueNS <= hi; i++ {
			q := byDue[i]
			if (p.DueNS < q.DueNS && p.SentNS > q.SentNS) || (p.DueNS > q.DueNS && p.SentNS < q.SentNS) {
				n++
			}
		}
		if n == 0 {
			continue
		}
		o.ChangedPairs += n
		o.Packets++
		if l := p.SentNS - p.DueNS; o.Packets == 1 || l > o.LateMaxNS {
			o.LateMaxNS, o.LateMaxAtNS = l, p.SentNS
		}
		if o.FirstAtNS == 0 || p.SentNS < o.FirstAtNS {
			o.FirstAtNS = p.SentNS
		}
	}
	return o
}
