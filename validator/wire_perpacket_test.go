package validator

import (
	"strings"
	"testing"
)

// xquic takes an RTT sample for each packet an ACK newly acknowledges (its
// on_ack_received line per packet, then "after update rtt"): a claim whose
// packet is not the ACK frame's largest holds only where the trace shows
// that, and a trace with one line per ACK frame does not.
func TestPerPacketSample(t *testing.T) {
	perPacket := &traceFacts{
		Acks:    []ack{{T: 100, Largest: 7}, {T: 110, Largest: 8}, {T: 120, Largest: 9}},
		Samples: []sample{{T: 101, Latest: 50, SRTT: 50, Cwnd: -1, MinRTT: -1}, {T: 111, Latest: 51, SRTT: 50, Cwnd: -1, MinRTT: -1}},
	}
	perFrame := &traceFacts{
		Acks:    []ack{{T: 100, Largest: 9}},
		Samples: []sample{{T: 101, Latest: 50, SRTT: 50, Cwnd: -1, MinRTT: -1}},
	}
	windowOnly := &traceFacts{
		Acks:    []ack{{T: 100, Largest: 7}, {T: 110, Largest: 8}},
		Samples: []sample{{T: 101, Latest: -1, SRTT: -1, Cwnd: 9000, MinRTT: -1}},
	}
	for _, c := range []struct {
		name string
		f    *traceFacts
		pn   int64
		want bool
	}{
		{"its own ACK line, then a sample", perPacket, 8, true},
		{"its own ACK line, no sample before the next", perPacket, 9, false},
		{"one line per ACK frame: only the largest", perFrame, 8, false},
		{"a window sample is no RTT sample", windowOnly, 7, false},
	} {
		if got := samplesPerPacket(c.f, c.pn); got != c.want {
			t.Errorf("%s: samplesPerPacket(%d) = %v, want %v", c.name, c.pn, got, c.want)
		}
	}

	// judgeWireClaim: packet 8's first covering ACK has 9 as its largest.
	m := &WireMap{Capture: "x", Sent: [2]map[int64][]WireSighting{{}, {8: {{Record: 1, Path: "pathA", WireNS: 1000, ArrNS: 900, Fate: "sent"}}}}}
	m.Acks[0] = []WireAck{{WireSighting: WireSighting{Record: 2, Path: "pathA", WireNS: 5000, Fate: "sent"}, Carrier: 3, Ranges: [][2]int64{{7, 9}}}}
	for _, c := range []struct {
		perPacket bool
		want      Status
		why       string
	}{{false, Fail, "its RTT sample is of 9, not of 8"}, {true, Pass, "the trace samples each packet it newly acknowledges"}} {
		st, why := judgeWireClaim(m, WireClaim{Packet: 8, Path: "pathA", perPacket: c.perPacket})
		if st != c.want || !strings.Contains(why, c.why) {
			t.Errorf("perPacket %v: %s %s, want %s with %q", c.perPacket, st, why, c.want, c.why)
		}
	}
}
