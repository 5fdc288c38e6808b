package validator

import (
	"slices"
	"testing"
)

// The live re-derivation's rules on the values the committed evidence
// holds (ms: µs / 1000): each row is a repetition of data/evidence or a
// boundary next to one.
func TestAttributionOf(t *testing.T) {
	const def = 100_000
	cases := []struct {
		name    string
		first   int64
		olds    []int64
		newPath int64
		want    string
	}{
		{"default", 100_400, []int64{20_000}, 40_000, "default"},
		{"new path within 20%", 40_592, []int64{20_000, 100_088}, 40_000, "new-path"},
		{"between, nearer the old", 24_000, []int64{20_000}, 40_000, "old-path"},
		{"between, nearer the new: converging", 31_000, []int64{20_000, 79_000}, 40_000, "converging"},
		// quic-go rep3: a fresh estimator's first sample above both paths
		// is no value moving between them.
		{"above both, nearer the new in ratio", 56_765, []int64{20_000}, 40_000, "new-path"},
		{"above both, nearer a queued old path", 108_000, []int64{20_000, 109_000}, 40_000, "old-path"},
		{"beyond both by more than a factor of two", 108_000, []int64{20_000}, 40_000, ""},
		// quiche rep1: the old path measured about the new path's RTT.
		{"old path queued to the new one's RTT", 43_000, []int64{20_000, 49_000}, 40_000, ""},
		{"no new path known", 43_000, []int64{20_000}, 0, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := attributionOf(c.first, c.olds, c.newPath, def); got != c.want {
				t.Errorf("attributionOf(%d, %v, %d) = %q, want %q", c.first, c.olds, c.newPath, got, c.want)
			}
		})
	}
}

func TestIsBackoffOf(t *testing.T) {
	cases := []struct {
		value, prev int64
		factor      float64
		want        bool
	}{
		{254708, 363867, 0.7, true},  // ngtcp2 rep2: 254706.9 rounded, +1 B
		{254706, 363867, 0.7, true},  // truncated
		{254709, 363867, 0.7, false}, // 2.1 B above the product
		{254710, 363867, 0.7, false},
		{254704, 363867, 0.7, false},
		{181934, 363867, 0.5, true},
		{254708, 363867, 0.5, false},
	}
	for _, c := range cases {
		if got := isBackoffOf(c.value, c.prev, c.factor); got != c.want {
			t.Errorf("isBackoffOf(%d, %d, %.1f) = %v, want %v", c.value, c.prev, c.factor, got, c.want)
		}
	}
}

// quiche rep5: the old path's window logged at the migration instant,
// beside the new path's first sample, is a window before the collapse.
func TestBeforeCandidatesOldPathAtMigration(t *testing.T) {
	const at = 5_555_534
	w := windowFacts{cwnd: []sample{
		{Path: "0", T: 5_524_120, Cwnd: 369_300},
		{Path: "0", T: 5_539_013, Cwnd: 369_300},
		{Path: "0", T: at, Cwnd: 370_500},
		{Path: "1", T: at, Cwnd: 12_000},
		{Path: "0", T: 5_570_812, Cwnd: 370_500},
		{Path: "1", T: 5_570_812, Cwnd: 12_000},
	}}
	w.decreases = [][3]int64{{at, 12_000, 370_500}}
	got := beforeCandidates(w, at-50_000, at, at+2_000_000)
	if !slices.Contains(got, 370_500) {
		t.Errorf("candidates %v lack the old path's 370500 B at the migration instant", got)
	}
	// A path born at the migration instant is not an old path: a higher
	// value there must not become a candidate.
	w.cwnd = append(w.cwnd, sample{Path: "2", T: at, Cwnd: 999_999})
	if got := beforeCandidates(w, at-50_000, at, at+2_000_000); slices.Contains(got, 999_999) {
		t.Errorf("candidates %v take a new path's window for the one before", got)
	}
}

// quic-go logs its window only when it changes: quic-go rep4 at the pin
// held 115205 B from before the scope began (4996.522 ms) until the loss at
// 5046.503 ms, 19 µs before the migration; that carried-in value is the
// window before the collapse, though no sample in scope shows it.
func TestBeforeCandidatesCarriedIntoScope(t *testing.T) {
	const at, from = 5_046_522, 4_996_522
	w := windowFacts{cwnd: []sample{
		{T: 187_195, Cwnd: 143_360},
		{T: 4_990_000, Cwnd: 115_205},
		{T: 5_046_503, Cwnd: 80_643},
		{T: 5_088_152, Cwnd: 40_960},
	}}
	w.decreases = [][3]int64{{5_046_503, 80_643, 115_205}, {5_088_152, 40_960, 80_643}}
	got := beforeCandidates(w, from, at, at+2_000_000)
	if !slices.Contains(got, 115_205) {
		t.Errorf("candidates %v lack the 115205 B carried into the scope", got)
	}
}

// quic-go restarts its estimator without logging the default: the first
// sample whose smoothed RTT equals its latest RTT is the fresh estimator's.
func TestRTTFactsFreshEstimator(t *testing.T) {
	const at = 5_098_096
	f := &traceFacts{Samples: []sample{
		{T: 5_095_253, SRTT: 100_088, Latest: 71_047, Cwnd: -1},
		{T: 5_115_933, SRTT: 90_147, Latest: 20_565, Cwnd: -1},
		{T: 5_139_698, SRTT: 38_582, Latest: 30_494, Cwnd: -1},
		{T: 5_180_445, SRTT: 40_592, Latest: 40_592, Cwnd: -1},
		{T: 5_180_869, SRTT: 40_656, Latest: 41_115, Cwnd: -1},
	}}
	firsts, before := rttFacts(f, at, 100_000)
	if before != 100_088 {
		t.Errorf("last before = %d, want 100088", before)
	}
	if !slices.Contains(firsts, 40_592) {
		t.Errorf("candidates %v lack the fresh estimator's first sample 40592", firsts)
	}
	// Without the restart (smoothed never equal to latest) it is no candidate.
	f.Samples[3].Latest = 40_100
	if firsts, _ := rttFacts(f, at, 100_000); slices.Contains(firsts, 40_592) {
		t.Errorf("candidates %v take 40592 without an estimator restart", firsts)
	}
}
