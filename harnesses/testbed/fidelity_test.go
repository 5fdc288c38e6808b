package testbed

import (
	"context"
	"testing"
	"time"

	"github.com/migaudit/migaudit/harnesses/testbed/linkemu"
)

func TestSummariseRecords(t *testing.T) {
	const ms = int64(time.Millisecond)
	sent := func(arr, delay, late int64) linkemu.Record {
		return linkemu.Record{Arr: arr, Due: arr + delay, Sent: arr + delay + late, Size: 1250, Cause: linkemu.Sent}
	}
	var recs []linkemu.Record
	for i := int64(0); i < 100; i++ {
		late := int64(20_000) // 20 µs
		if i == 50 {
			late = 3 * ms
		}
		recs = append(recs, sent(1000*ms+i*ms/2, 10*ms, late))
	}
	recs = append(recs,
		linkemu.Record{Arr: 1010 * ms, Size: 1250, Cause: linkemu.QueueDrop},
		linkemu.Record{Arr: 1011 * ms, Size: 1250, Cause: linkemu.LossDrop},
		linkemu.Record{Arr: 5000 * ms, Size: 1250, Cause: linkemu.LossDrop}, // outside
		sent(9000*ms, 10*ms, 0), // outside
	)
	d, _ := summariseRecords(recs, 1000*ms, 2000*ms, ms)
	want := DirFidelity{Packets: 100, Bytes: 125000, LateOver: 1, QueueDrops: 1, LossDrops: 1,
		DelayMedianNS: 10*ms + 20_000, LateMedianNS: 20_000, LateP99NS: 20_000, LateMaxNS: 3 * ms}
	if d.Packets != want.Packets || d.Bytes != want.Bytes || d.LateOver != want.LateOver || d.QueueDrops != 1 || d.LossDrops != 1 ||
		d.DelayMedianNS != want.DelayMedianNS || d.LateMedianNS != want.LateMedianNS || d.LateP99NS != want.LateP99NS || d.LateMaxNS != want.LateMaxNS {
		t.Fatalf("got %+v\nwant %+v", d, want)
	}
	if d.LateMaxAtNS != 1000*ms+25*ms+10*ms+3*ms || d.EarliestLateNS != d.LateMaxAtNS {
		t.Errorf("worst packet at %d, first late at %d", d.LateMaxAtNS, d.EarliestLateNS)
	}
	// 99 gaps of 0.5 ms carry 100 × 1250 B (the first packet's bytes
	// included): 125000 × 8 / 49.5 ms, give or take the late packet.
	if d.RateBps < 19e6 || d.RateBps > 21e6 {
		t.Errorf("rate %.0f bit/s", d.RateBps)
	}
	if d.LateFraction != 0.01 {
		t.Errorf("late fraction %v", d.LateFraction)
	}
}

// TestSummariseDirsOrder: each direction's order is taken against the
// other path's same direction, over its packets written in the window,
// against the other's whole record.
func TestSummariseDirsOrder(t *testing.T) {
	const ms = int64(time.Millisecond)
	rec := func(due, late float64) linkemu.Record {
		d := int64(due * float64(ms))
		return linkemu.Record{Arr: d - 10*ms, Due: d, Sent: d + int64(late*float64(ms)), Size: 1250, Cause: linkemu.Sent}
	}
	recs := map[string][]linkemu.Record{
		// A/down every 0.5 ms from 100 to 110 ms, on time.
		"A/down": nil,
		// B/down: due at 102 ms, written 2 ms late (after A's 102.5,
		// 103, 103.5 ms: 3 pairs); due at 150 ms, 2 ms late, nothing of
		// A near it.
		"B/down": {rec(102, 2), rec(150, 2)},
		// B/up late among A/down's times: another direction, no pair.
		"B/up": {rec(105, 3)},
		"A/up": {rec(300, 0)},
	}
	for i := 0; i <= 20; i++ {
		recs["A/down"] = append(recs["A/down"], rec(100+0.5*float64(i), 0))
	}
	dirs, _ := summariseDirs(recs, 101*ms, 200*ms, ms)
	for _, tc := range []struct {
		dir, other string
		pairs      int
	}{{"B/down", "A/down", 3}, {"A/down", "B/down", 3}, {"B/up", "A/up", 0}, {"A/up", "B/up", 0}} {
		o := dirs[tc.dir].Order
		if tc.dir == "A/up" {
			if o != nil {
				t.Errorf("A/up wrote nothing in the window, yet has an order record %+v", o)
			}
			continue
		}
		if o == nil || o.Other != tc.other || o.ChangedPairs != tc.pairs {
			t.Errorf("%s: order %+v, want %d pairs against %s", tc.dir, o, tc.pairs, tc.other)
		}
	}
	if o := dirs["B/down"].Order; o.LateMaxNS != 2*ms || o.Packets != 1 {
		t.Errorf("B/down: %+v, want 1 packet 2 ms late", o)
	}
}

// TestFidelityLive: the emulator's record of a warm-up counts exactly the
// echoes it carried and measures each path's one-way delay.
func TestFidelityLive(t *testing.T) {
	needRoot(t)
	cfg := Standard()
	cfg.Name = "t-fid-" + newName()
	tb, err := Up(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := tb.Down(); err != nil {
			t.Error(err)
		}
		waitClean(t, cfg.Name, 3*time.Second)
	}()
	from := MonoNow()
	if err := WarmUp(context.Background(), tb, 400*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	f, err := tb.Fidelity(from, MonoNow(), time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	n := max(int(400*time.Millisecond/(2*time.Millisecond))/len(Paths), 10)
	for _, p := range []struct {
		path string
		rtt  time.Duration
	}{{"A", cfg.PathA.RTT}, {"B", cfg.PathB.RTT}} {
		for _, dir := range []string{"up", "down"} {
			d := f.Dirs[p.path+"/"+dir]
			if d.Packets != n {
				t.Errorf("%s/%s: %d packets, the warm-up sent %d", p.path, dir, d.Packets, n)
			}
			// One-way delay is half the RTT; the emulator's own error is
			// what the median may add (its wake-up compensation may also
			// write up to the compensation + 10 µs early, at most 210 µs).
			if got, want := time.Duration(d.DelayMedianNS), p.rtt/2; got < want-210*time.Microsecond || got > want+time.Millisecond {
				t.Errorf("%s/%s: median one-way delay %v, want %v (−210 µs..+1 ms)", p.path, dir, got, want)
			}
		}
	}
	if f.SentinelSamples == 0 {
		t.Error("the holder's sentinel did not run")
	}
	t.Logf("fidelity: %+v", f)
}
