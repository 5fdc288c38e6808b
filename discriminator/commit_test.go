package discriminator

import (
	"testing"

	"github.com/migaudit/migaudit/parsers/timeline"
)

// TestConstantsOfTheCodeThatRan: quinn 0.9.3 (Debian's, run live) starts a
// new path's controller at 12,320 B (10 × 1232), the pin at 12,000 B. With
// Options.Commit the window is judged by the constants the audit wrote at
// that commit and the new path's start is a reset; with the pin's it is not.
func TestConstantsOfTheCodeThatRan(t *testing.T) {
	cw := func(us int64, path string, v int64) timeline.Sample {
		s := timeline.Sample{TimeUS: us, PathID: path}
		s.Set(timeline.FieldCwnd, v)
		return s
	}
	tl := &timeline.Timeline{Source: "quinn.log",
		Meta:    timeline.Meta{Format: "quinn-cc-log", Implementation: "quinn", Vantage: "server", PathIDs: true, LogsAddresses: true},
		Samples: []timeline.Sample{cw(1_000_000, "cc1", 90_000), cw(4_900_000, "cc1", 95_000), cw(5_010_000, "cc2", 12_320), cw(5_100_000, "cc2", 14_000)},
		Events: []timeline.Event{
			{TimeUS: 100_000, Kind: timeline.PathEvent, From: "198.18.1.2:5000", PacketNumber: -1, Detail: "connected"},
			{TimeUS: 5_000_000, Kind: timeline.PathEvent, From: "198.18.2.2:6000", PacketNumber: -1, Detail: "peer_address_changed"},
		}}
	for _, tc := range []struct {
		commit string
		reset  bool
	}{{"7d1b280f550ac3a494fe3c2d92a539cec6d0b3b8", true}, {"", false}} {
		a, err := Analyze(tl, Options{Impl: "quinn", Commit: tc.commit})
		if err != nil {
			t.Fatal(err)
		}
		if !a.Migration.Found || a.ResetObserved != tc.reset {
			t.Errorf("commit %q: migration found %v, reset %v, want %v (events %+v)", tc.commit, a.Migration.Found, a.ResetObserved, tc.reset, a.Events)
		}
	}
}
