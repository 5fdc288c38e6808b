package fidelity

import (
	"strings"
	"testing"
	"time"
)

func TestCrossOrder(t *testing.T) {
	const ms = int64(time.Millisecond)
	// d is a packet due at due ms, written late ms after it.
	d := func(due, late float64) Delivery {
		return Delivery{DueNS: int64(due * float64(ms)), SentNS: int64((due + late) * float64(ms))}
	}
	// Path A/down (the other path) writes a packet every 0.6 ms from 100
	// to 106 ms, on time.
	var dense []Delivery
	for i := 0; i <= 10; i++ {
		dense = append(dense, d(100+0.6*float64(i), 0.01))
	}
	// Two packets of A/down, 1 s apart: a sparse faster path.
	sparse := []Delivery{d(100, 0), d(1100, 0)}
	tests := []struct {
		name               string
		own, other         []Delivery
		pairs, packets     int
		lateMaxMS, firstMS float64
	}{
		// 2.5 ms late at 500 ms: nothing of the other path was due or
		// written near it, so nothing could overtake it.
		{"late far from the other path's packets", []Delivery{d(500, 2.5), d(501, 0)}, sparse, 0, 0, 0, 0},
		// Due at 101 ms, written at 103.5 ms: A's packets due at 101.2,
		// 101.8 … 103.0 ms were written before it (4 pairs).
		{"late among the other path's packets", []Delivery{d(101, 2.5)}, dense, 4, 1, 2.5, 103.5},
		// On time among them: the order kept.
		{"on time among the other path's packets", []Delivery{d(101, 0.02), d(101.3, 0.05)}, dense, 0, 0, 0, 0},
		// The other path's packet is the late one: due at 200.5 ms,
		// written at 202.5 ms, after ours due at 201 ms (written on time):
		// a pair out of order, counted on our side too.
		{"overtaking the other path's late packet", []Delivery{d(201, 0)}, []Delivery{d(200.5, 2)}, 1, 1, 0, 201},
		// Ties are no order: due together, written together.
		{"ties", []Delivery{d(300, 0)}, []Delivery{d(300, 0)}, 0, 0, 0, 0},
		{"nothing on the other path", []Delivery{d(300, 5)}, nil, 0, 0, 0, 0},
	}
	for _, tc := range tests {
		o := CrossOrder(tc.own, tc.other, "A/down")
		if o.ChangedPairs != tc.pairs || o.Packets != tc.packets || o.LateMaxNS != int64(tc.lateMaxMS*float64(ms)) || o.FirstAtNS != int64(tc.firstMS*float64(ms)) {
			t.Errorf("%s: %+v, want %d pairs, %d packets, worst %.2f ms, first at %.1f ms", tc.name, o, tc.pairs, tc.packets, tc.lateMaxMS, tc.firstMS)
		}
		if o.OtherPackets != len(tc.other) || o.Other != "A/down" {
			t.Errorf("%s: other %q %d", tc.name, o.Other, o.OtherPackets)
		}
	}
}

// TestCrossOrderExhaustive: the windowed search finds exactly the pairs an
// all-pairs comparison finds, over packets late and early by up to 3 ms.
func TestCrossOrderExhaustive(t *testing.T) {
	var own, other []Delivery
	for i := int64(0); i < 400; i++ {
		// Deterministic spread of lateness in [−0.2, 3] ms.
		late := (i*7919%3200 - 200) * 1000
		if i%2 == 0 {
			own = append(own, Delivery{DueNS: i * 310_000, SentNS: i*310_000 + late})
		} else {
			other = append(other, Delivery{DueNS: i * 290_000, SentNS: i*290_000 + late/3})
		}
	}
	want := 0
	for _, p := range own {
		for _, q := range other {
			if (p.DueNS < q.DueNS && p.SentNS > q.SentNS) || (p.DueNS > q.DueNS && p.SentNS < q.SentNS) {
				want++
			}
		}
	}
	if want == 0 {
		t.Fatal("the test's packets have no pair out of order")
	}
	if got := CrossOrder(own, other, "A/up").ChangedPairs; got != want {
		t.Fatalf("%d pairs out of order, all pairs compared give %d", got, want)
	}
}

func TestCrossProblem(t *testing.T) {
	r := DefaultRule(20*time.Millisecond, 40*time.Millisecond)
	const from = int64(1e12)
	// ngtcp2 at the pin: path A/down carries 133 packets over the 1.14 s
	// span (the queue draining after the migration, then a probe a second
	// later), so the density estimate gives path B/down the 1 ms limit.
	base := CrossPath{Dir: "B/down", Other: "A/down", FromNS: from, ToNS: from + 1.14e9, Packets: 1672, OtherPackets: 133, Measured: true,
		LimitNS: r.ReorderLimit("B", 133, 1.14e9)}
	if base.LimitNS != 1e6 {
		t.Fatalf("limit %d, want the 1 ms estimate", base.LimitNS)
	}
	ordered := func(c CrossPath) CrossPath {
		c.OrderChecked, c.OrderLimitNS = true, r.OrderedLimit("B")
		return c
	}
	tests := []struct {
		name    string
		c       CrossPath
		wantSub string
	}{
		{"within the estimate", func() CrossPath { c := base; c.LateMaxNS = 0.8e6; return c }(), ""},
		{"over the estimate, no order record", func() CrossPath { c := base; c.LateMaxNS = 2.1e6; return c }(),
			"path B/down: a packet 2.10 ms late while path A/down carried traffic"},
		{"over the estimate, the order kept", func() CrossPath { c := ordered(base); c.LateMaxNS = 2.1e6; return c }(), ""},
		// The pairs out of order involve only packets within the limit.
		{"over the estimate, only packets within it reordered", func() CrossPath {
			c := ordered(base)
			c.LateMaxNS, c.OrderChangedPairs, c.OrderPackets, c.OrderLateMaxNS = 2.1e6, 1, 1, 0.3e6
			return c
		}(), ""},
		{"over the estimate and reordered", func() CrossPath {
			c := ordered(base)
			c.LateMaxNS, c.OrderChangedPairs, c.OrderPackets, c.OrderLateMaxNS = 2.7e6, 4, 1, 2.7e6
			return c
		}(), "the emulator wrote 1 of this path's packets out of their scheduled order against path A/down's (4 pairs)"},
		// The order kept, but 11 ms is past the time threshold's 10 ms.
		{"order kept, past the time threshold", func() CrossPath { c := ordered(base); c.LateMaxNS = 11e6; return c }(),
			"past RFC 9002's time threshold or the ACK clock's limit (10.00 ms)"},
	}
	for _, tc := range tests {
		got := CrossProblem(tc.c, from)
		if tc.wantSub == "" && got != "" || !strings.Contains(got, tc.wantSub) {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.wantSub)
		}
	}
}
