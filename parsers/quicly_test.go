package parsers

import (
	"testing"

	"github.com/migaudit/migaudit/parsers/timeline"
)

// TestQuiclyLog checks what the quicly-log parser makes of the hand-written
// trace, against the values written in it.
func TestQuiclyLog(t *testing.T) {
	tl, err := ParseFile("testdata/quicly_small.jsonl", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if tl.Meta.Format != FormatQuicly || tl.Meta.Vantage != "server" {
		t.Fatalf("meta %+v", tl.Meta)
	}
	// The reference is the first record's millisecond (…528751 ms).
	const ref = 1796404528751000
	var acks []timeline.Event
	var newPath, promote, challenge *timeline.Event
	for i, e := range tl.Events {
		switch {
		case e.Kind == timeline.PacketsAcked:
			acks = append(acks, e)
		case e.Kind == timeline.PathEvent && e.From == "10.0.2.2:42603":
			newPath = &tl.Events[i]
		case e.Kind == timeline.PathEvent && len(e.Detail) > 12 && e.Detail[:12] == "promote_path":
			promote = &tl.Events[i]
		case e.Kind == timeline.PathChallengeSent:
			challenge = &tl.Events[i]
		}
		if i > 0 && e.TimeUS < tl.Events[i-1].TimeUS {
			t.Errorf("event %d (%s at %d µs) before the previous one (%d µs)", i, e.Kind, e.TimeUS, tl.Events[i-1].TimeUS)
		}
	}
	tests := []struct {
		name string
		ok   bool
	}{
		{"two ACK frames", len(acks) == 2},
		{"handshake ACK carried by handshake packet 1, acking 1", len(acks) == 2 && acks[0].PacketNumber == 1 && acks[0].PacketSpace == "handshake" && len(acks[0].AckRanges) == 1 && acks[0].AckRanges[0] == timeline.Range{First: 1, Last: 1}},
		{"1-RTT ACK carried by packet 900 with blocks 3 and 5", len(acks) == 2 && acks[1].PacketNumber == 900 && acks[1].PacketSpace == "application_data" && len(acks[1].AckRanges) == 2 && acks[1].AckRanges[1] == timeline.Range{First: 5, Last: 5}},
		{"new_path 1 at 1796404533790 ms", newPath != nil && newPath.TimeUS == 1796404533790000-ref},
		{"promote_path at 1796404533831 ms", promote != nil && promote.TimeUS == 1796404533831000-ref},
		{"PATH_CHALLENGE data", challenge != nil && challenge.Data == "f7a1c3d2e4b5a697"},
	}
	for _, tc := range tests {
		if !tc.ok {
			t.Errorf("%s: not so", tc.name)
		}
	}
	// Samples: the harness's rtt lines in µs; quicly's no-sample minimum
	// (UINT32_MAX) as 0; the window after promote_path 12800.
	var rtt []timeline.Sample
	for _, s := range tl.Samples {
		if s.Fields.Has(timeline.FieldSmoothedRTT) {
			rtt = append(rtt, s)
		}
	}
	if len(rtt) != 3 {
		t.Fatalf("%d rtt samples, want 3", len(rtt))
	}
	if s := rtt[0]; s.SmoothedRTTUS != 66000 || s.RTTVarUS != 33000 || !s.Fields.Has(timeline.FieldMinRTT) || s.MinRTTUS != 0 || s.Fields.Has(timeline.FieldLatestRTT) {
		t.Errorf("first rtt sample %+v: want srtt 66 ms, var 33 ms, min 0 (no sample), no latest", s)
	}
	if s := rtt[1]; s.LatestRTTUS != 22000 || s.MinRTTUS != 22000 || s.TimeUS != 1796404528785000-ref {
		t.Errorf("second rtt sample %+v: want 22 ms at %d µs", s, 1796404528785000-ref)
	}
	if s := rtt[2]; s.CwndBytes != 12800 || s.MinRTTUS != 0 || s.Fields.Has(timeline.FieldLatestRTT) || s.SmoothedRTTUS != 22000 {
		t.Errorf("rtt sample after promote_path %+v: want cwnd 12800, the old path's 22 ms as the seed, no sample yet", s)
	}
	// The last rtt line repeats the RTT values: a window change only.
	last := tl.Samples[len(tl.Samples)-2]
	if last.CwndBytes != 14080 || last.Fields != timeline.FieldCwnd {
		t.Errorf("window-only rtt line became %+v, want cwnd 14080 and nothing else", last)
	}
}
