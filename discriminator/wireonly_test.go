package discriminator

import (
	"strings"
	"testing"

	"github.com/migaudit/migaudit/parsers/timeline"
	"github.com/migaudit/migaudit/parsers/wire"
)

// The wire-only pairing (a trace with per-path polled RTTs and no packet
// events, quiche's): the new path's first reported sample is put on the
// wire's clock by the trace's reference instant and matched with the ACKs
// received between the poll before it and its own.
func TestAttributeWireOnly(t *testing.T) {
	const ref = int64(1_000_000_000_000) // unix µs of the trace's time 0
	ms := func(v float64) int64 { return int64(v * 1000) }
	// wall: trace µs → unix ns.
	wall := func(us int64) int64 { return (ref + us) * 1000 }
	type ack struct {
		atMS    float64
		largest int64
	}
	type pkt struct {
		pn     int64
		path   string
		sentMS float64
	}
	// Server packets: 100 on pathA sent at 4,980 ms; 200 on pathB at
	// 5,050 ms; 201 on pathB at 5,060 ms. The client's first packet on
	// pathB reaches the server at 5,000 ms. Polls: the new path reads its
	// default at 5,090 ms and its first sample at 5,100 ms.
	pkts := []pkt{{100, "pathA", 4980}, {101, "pathA", 5054}, {200, "pathB", 5050}, {201, "pathB", 5060}}
	cases := []struct {
		name   string
		acks   []ack
		sample float64
		answer string
		packet int64
		why    string
	}{
		{"first ACK in the window is the new path's and gives the sample", []ack{{5092, 200}}, 42, "YES", 200, "crossed the new path pathB, and its round trip is the sample"},
		{"an old-path packet acknowledged first gives it, the new path's would not", []ack{{5091, 100}, {5095, 200}}, 111, "NO", 100, "crossed the old path pathA"},
		{"the old path's would not give it, the new path's does", []ack{{5091, 100}, {5095, 200}}, 45, "YES", 200, "the old path's packet 100 acknowledged first would give 111.00 ms"},
		{"both give it", []ack{{5091, 101}, {5097, 201}}, 37, "UNKNOWN", 0, "both give the sample"},
		{"only a repeated ACK of a new-path packet gives it", []ack{{5070, 201}, {5098, 201}}, 38, "YES", 201, "acknowledged again"},
		{"nothing gives it", []ack{{5092, 200}}, 80, "UNKNOWN", 0, "no ACK among"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := &WireEvidence{Source: "test", paths: []string{"pathA", "pathB"}, numbered: true,
				sent: [2]map[int64]wireSent{{}, {}}, firstOn: [2]map[string]int64{{"pathA": wall(ms(100)), "pathB": wall(ms(5000))}, {"pathA": wall(ms(100)), "pathB": wall(ms(5040))}}}
			for _, p := range pkts {
				w.sent[wire.S2C][p.pn] = wireSent{path: p.path, arrNS: wall(ms(p.sentMS)), wireNS: wall(ms(p.sentMS)) + 1, record: int(p.pn), delivered: true}
			}
			for i, a := range c.acks {
				w.acks[wire.C2S] = append(w.acks[wire.C2S], wireAck{wireNS: wall(ms(a.atMS)), carrier: int64(900 + i), path: "pathB", ranges: []wire.AckRange{{Smallest: 1, Largest: a.largest}}})
			}
			samples := []timeline.Sample{
				{TimeUS: ms(5080), PathID: "0", SmoothedRTTUS: ms(30)},
				{TimeUS: ms(5090), PathID: "1", SmoothedRTTUS: ms(333)},
				{TimeUS: ms(5100), PathID: "1", SmoothedRTTUS: ms(c.sample)},
			}
			in := rttInput{pathIDs: true, mig: Migration{AtUS: ms(5005)}, startUS: ms(5005), startWhy: "the migration", defaultUS: ms(333), oldPath: "0"}
			r := &WireRTT{Source: w.Source, Answer: "UNKNOWN"}
			attributeWireOnly(w, r, in, samples, wire.S2C, wire.C2S, ref)
			if r.Answer != c.answer || !strings.Contains(r.Reason, c.why) {
				t.Fatalf("answer %s (%s), want %s with %q", r.Answer, r.Reason, c.answer, c.why)
			}
			if c.packet != 0 && (r.Deciding == nil || r.Deciding.Packet != c.packet || !r.Decides) {
				t.Errorf("deciding %+v, want packet %d", r.Deciding, c.packet)
			}
			if c.packet == 0 && r.Decides {
				t.Errorf("decides with %+v", r.Deciding)
			}
		})
	}
}
