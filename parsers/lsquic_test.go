package parsers

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/migaudit/migaudit/parsers/timeline"
)

// TestLsquicRTTSample: take_rtt_sample's debug line (the harness keeps it)
// is a sample of the latest and the smoothed RTT; a malformed one is an
// error naming the line.
func TestLsquicRTTSample(t *testing.T) {
	tl, err := ParseFile("testdata/lsquic_small.log", Options{})
	if err != nil {
		t.Fatal(err)
	}
	var got *timeline.Sample
	for i, s := range tl.Samples {
		if s.Fields&timeline.FieldLatestRTT != 0 {
			got = &tl.Samples[i]
			break
		}
	}
	if got == nil || got.TimeUS != 71002 || got.LatestRTTUS != 21001 || got.SmoothedRTTUS != 20950 || got.Fields&timeline.FieldCwnd != 0 {
		t.Fatalf("first latest-RTT sample %+v, want 21001 µs (srtt 20950 µs) at 71002 µs, no window", got)
	}
	for _, c := range []struct{ line, want string }{
		{"sendctl: packno 6; rtt: 2x; delta: 25; new srtt: 20950", `rtt "2x" is not a non-negative integer`},
		{"sendctl: packno 6; delta: 25; new srtt: 20950", "without packno, rtt and new srtt"},
	} {
		p := filepath.Join(t.TempDir(), "bad.log")
		body := "[lsq_server] t_us=5 LOG [DEBUG] [QUIC:AB] " + c.line + "\n"
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := ParseFile(p, Options{Format: FormatLsquic})
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "record 1") {
			t.Errorf("%q: error %v, want one naming record 1 and %q", c.line, err, c.want)
		}
	}
}
