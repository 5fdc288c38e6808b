package discriminator

import "testing"

// closestName on values of this project's committed evidence (µs).
func TestClosestName(t *testing.T) {
	ref := RTTAttribution{OldPathUS: 20_000, NewPathUS: 40_000, DefaultUS: 333_000}
	cases := []struct {
		name     string
		v        int64
		measured int64
		want     string
	}{
		{"new path", 40_592, 100_088, "new-path"},
		{"old path as configured", 21_000, 0, "old-path"},
		{"old path as measured (queued)", 108_000, 109_000, "old-path"},
		{"default", 333_100, 0, "default"},
		{"near the default and a queued old path", 300_000, 310_000, "none"},
		// quic-go rep1 and quiche rep1: the old path queued to about the
		// new path's RTT; within 15 % of both, the value cannot tell.
		{"within tolerance of new and measured old", 40_465, 43_961, "none"},
		{"within tolerance of new and measured old (quiche)", 43_000, 49_000, "none"},
		{"between old and new", 31_000, 0, "converging"},
		{"above both, nearest in ratio", 56_765, 35_003, "new-path"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := ref
			r.OldPathMeasuredUS = c.measured
			if got := closestName(c.v, r); got != c.want {
				t.Errorf("closestName(%d, measured old %d) = %q, want %q", c.v, c.measured, got, c.want)
			}
		})
	}
}

// An RTT sample taken from the ACK of a packet sent before the migration is
// Q3 evidence whatever its value reads (ngtcp2 rep3: 31 ms, between the
// paths, from packet 5532 sent 8 ms before the migration).
func TestQ3OldPathPacketDecides(t *testing.T) {
	base := RTTAttribution{FirstAfterUS: 31_000, OldPathUS: 20_000, NewPathUS: 40_000, DefaultUS: 333_000}
	cases := []struct {
		attr      string
		oldPacket bool
		want      string
	}{
		{"converging", false, "UNKNOWN"},
		{"converging", true, "NO"},
		{"unknown", false, "UNKNOWN"},
		{"unknown", true, "NO"},
		{"new-path", true, "NO"},
		{"new-path", false, "YES"},
		{"default", true, "UNKNOWN"},
	}
	for _, c := range cases {
		r := base
		r.Attribution, r.OldPathPacket, r.OldPathPacketNumber = c.attr, c.oldPacket, 5532
		if got := q3(Analysis{RTT: r, ResetObserved: true}); got.Answer != c.want {
			t.Errorf("q3(%s, old-path packet %v) = %s (%s), want %s", c.attr, c.oldPacket, got.Answer, got.Reason, c.want)
		}
	}
}
