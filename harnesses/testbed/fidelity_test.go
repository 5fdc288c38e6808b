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
