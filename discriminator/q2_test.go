package discriminator

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/migaudit/migaudit/parsers/timeline"
	"github.com/migaudit/migaudit/parsers/wire"
)

// q2Wire builds the wire evidence of a migration to pathB: the server's
// PATH_CHALLENGE (held hold ms by the emulator), the client's
// PATH_RESPONSE pvMS after it, then 20 data packets on pathB each ACKed
// dataMS after it left. Times are ms from an arbitrary origin.
type q2Wire struct {
	pvMS, dataMS, holdMS float64
	noChallenge          bool
	noResponse           bool
	responsePath         string // "" = pathB
}

func (g q2Wire) evidence() *WireEvidence {
	const t0 = int64(1_700_000_000_000_000_000)
	ms := func(v float64) int64 { return t0 + int64(v*1e6) }
	w := &WireEvidence{Source: "synthetic", numbered: true}
	var pkts []wire.Packet
	data := [8]byte{1, 2, 3, 4, 5, 6, 7, 8}
	rec := 0
	add := func(p wire.Packet) {
		rec++
		p.Record, p.Type, p.Fate, p.Whole, p.Decrypted = rec, wire.OneRTT, "sent", true, true
		pkts = append(pkts, p)
	}
	if !g.noChallenge {
		add(wire.Packet{Path: "pathB", Dir: wire.S2C, PN: 50, ArrivalNS: ms(0), WireNS: ms(20 + g.holdMS), HeldNS: int64(g.holdMS * 1e6),
			Frames: []wire.Frame{{Type: wire.FramePathChallenge, Data: data}}})
	}
	if !g.noResponse {
		p := g.responsePath
		if p == "" {
			p = "pathB"
		}
		add(wire.Packet{Path: p, Dir: wire.C2S, PN: 30, ArrivalNS: ms(g.pvMS - 20), WireNS: ms(g.pvMS),
			Frames: []wire.Frame{{Type: wire.FramePathResponse, Data: data}}})
	}
	for i := range 20 {
		sent := g.pvMS + 1 + float64(i)
		add(wire.Packet{Path: "pathB", Dir: wire.S2C, PN: int64(100 + i), ArrivalNS: ms(sent), WireNS: ms(sent + g.dataMS/2)})
		add(wire.Packet{Path: "pathB", Dir: wire.C2S, PN: int64(40 + i), ArrivalNS: ms(sent + g.dataMS/2), WireNS: ms(sent + g.dataMS),
			Frames: []wire.Frame{{Type: wire.FrameAck, Ranges: []wire.AckRange{{Smallest: 100, Largest: int64(100 + i)}}}}})
	}
	for i := range pkts {
		w.pv.addPacket(&pkts[i])
	}
	return w
}

// q2Sample is a sample at ms after the reset reporting smoothed (and
// latest, when > 0) RTT in ms.
func q2Sample(atMS, smoothedMS, latestMS float64) timeline.Sample {
	s := timeline.Sample{TimeUS: 5_000_000 + int64(atMS*1000), SmoothedRTTUS: int64(smoothedMS * 1000), Fields: timeline.FieldSmoothedRTT}
	if latestMS > 0 {
		s.LatestRTTUS, s.Fields = int64(latestMS*1000), s.Fields|timeline.FieldLatestRTT
	}
	return s
}

func TestDecideQ2(t *testing.T) {
	distinct := q2Wire{pvMS: 140, dataMS: 40, holdMS: 100}
	in := rttInput{startUS: 5_000_000, startWhy: "the reset at 5000.000 ms", defaultUS: 100_000, measured: 21_000, anyFields: true}
	cases := []struct {
		name    string
		wire    *WireEvidence
		samples []timeline.Sample
		want    string
		pv      int64
		data    int64
		prior   int64
		detail  string
	}{
		{"seeded: the estimate before any sample is the validation round trip", distinct.evidence(),
			[]timeline.Sample{q2Sample(1, 140, 0)}, "YES", 140_000, 40_000, 140_000, "= the validation round trip"},
		{"not seeded: the estimate before any sample is the default", distinct.evidence(),
			[]timeline.Sample{q2Sample(1, 100, 0)}, "NO", 140_000, 40_000, 100_000, "= the default 100.00 ms"},
		{"not seeded: first estimate averages the default with the first sample", distinct.evidence(),
			[]timeline.Sample{q2Sample(30, 92.5, 40)}, "NO", 140_000, 40_000, 100_000, "so the estimator held 100.00 ms before it"},
		{"seeded: first estimate averages the validation round trip with the first sample", distinct.evidence(),
			[]timeline.Sample{q2Sample(30, 127.5, 40)}, "YES", 140_000, 40_000, 140_000, "so the estimator held 140.00 ms before it"},
		{"first estimate is the first sample: the initial RTT is not in the trace", distinct.evidence(),
			[]timeline.Sample{q2Sample(30, 40.5, 40.5)}, "UNKNOWN", 140_000, 40_000, 0, "the trace logs no estimate between the reset and that sample"},
		{"samples before the reset do not count", distinct.evidence(),
			[]timeline.Sample{q2Sample(-5, 140, 0), q2Sample(1, 100, 0)}, "NO", 140_000, 40_000, 100_000, "= the default"},
		{"estimator carried on from the old path: no reset", distinct.evidence(),
			[]timeline.Sample{q2Sample(1, 21, 0)}, "UNKNOWN", 140_000, 40_000, 21_000, "no reset of the estimator"},
		{"round trips not 2× apart: not valid for Q2", q2Wire{pvMS: 60, dataMS: 40}.evidence(),
			[]timeline.Sample{q2Sample(1, 100, 0)}, "UNKNOWN", 60_000, 40_000, 0, "not valid for Q2"},
		{"no estimator in the trace", distinct.evidence(), nil, "UNKNOWN", 140_000, 40_000, 0, "no estimator in the trace"},
		{"no PATH_CHALLENGE on the wire", q2Wire{pvMS: 140, dataMS: 40, noChallenge: true}.evidence(),
			[]timeline.Sample{q2Sample(1, 100, 0)}, "UNKNOWN", 0, 0, 0, "no PATH_CHALLENGE from the server"},
		{"challenge never answered", q2Wire{pvMS: 140, dataMS: 40, noResponse: true}.evidence(),
			[]timeline.Sample{q2Sample(1, 100, 0)}, "UNKNOWN", 0, 0, 0, "is answered by a PATH_RESPONSE"},
		{"response on the old path is still the round trip, and the detail says so", q2Wire{pvMS: 140, dataMS: 40, holdMS: 100, responsePath: "pathA"}.evidence(),
			[]timeline.Sample{q2Sample(1, 100, 0)}, "NO", 140_000, 40_000, 100_000, "(record 2, pathA)"},
		{"no wire evidence", nil, []timeline.Sample{q2Sample(1, 100, 0)}, "UNKNOWN", 0, 0, 0, "no wire evidence"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			q := decideQ2(c.wire, in, "server", c.samples)
			if q.Answer != c.want || q.PVRTTUS != c.pv || q.DataRTTUS != c.data || q.PriorUS != c.prior {
				t.Errorf("answer %s pv %d data %d prior %d, want %s %d %d %d\n%s", q.Answer, q.PVRTTUS, q.DataRTTUS, q.PriorUS, c.want, c.pv, c.data, c.prior, q.Detail)
			}
			if !strings.Contains(q.Detail, c.detail) {
				t.Errorf("detail %q\nwant it to contain %q", q.Detail, c.detail)
			}
			if c.want == "YES" && !strings.Contains(q.Detail, "PATH_CHALLENGE 0102030405060708 in packet 50 (capture record 1, pathB, held 100.00 ms by the emulator) → PATH_RESPONSE in packet 30 (record 2, pathB)") {
				t.Errorf("detail does not name the challenge: %q", q.Detail)
			}
		})
	}
}

// TestQ2OnRecordedCapture: the parsers/wire quic-go fixture (no hold)
// has a validation round trip close to its data round trip: not valid
// for Q2, and the detail names the exchange's capture records.
func TestQ2OnRecordedCapture(t *testing.T) {
	w, err := LoadWireEvidence(wireFixture+WireCaptureName, wireFixture+KeyLogName)
	if err != nil {
		t.Fatal(err)
	}
	a, err := Analyze(fixtureTimeline(t), wireOpts(w))
	if err != nil {
		t.Fatal(err)
	}
	if a.Q2 == nil {
		t.Fatal("no Q2 with wire evidence")
	}
	q := a.Q2
	if q.Answer != "UNKNOWN" || q.Distinct || q.Challenge == nil || q.Response == nil || q.PVRTTUS <= 0 || q.DataRTTUS <= 0 {
		t.Fatalf("Q2 %+v", q)
	}
	if !strings.Contains(q.Detail, "not valid for Q2") || !strings.Contains(q.Detail, "PATH_CHALLENGE "+q.Challenge.Data) {
		t.Errorf("detail %q", q.Detail)
	}
	if q.Challenge.Dir != "s2c" || q.Response.Dir != "c2s" || q.Challenge.Data != q.Response.Data {
		t.Errorf("exchange %+v → %+v", q.Challenge, q.Response)
	}
}

// WireBeside finds a repetition's capture beside its trace, or one level
// up when the trace sits in a subdirectory (ngtcp2's qlog-server/), and
// nothing further up.
func TestWireBeside(t *testing.T) {
	root := t.TempDir()
	rep := filepath.Join(root, "rep1")
	for _, f := range []string{WireCaptureName, KeyLogName, "server.sqlog.gz", "qlog-server/x.qlog", "a/b/deep.qlog"} {
		p := filepath.Join(rep, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct{ trace, capture string }{
		{"server.sqlog.gz", filepath.Join(rep, WireCaptureName)},
		{"qlog-server/x.qlog", filepath.Join(rep, WireCaptureName)},
		{"a/b/deep.qlog", ""},
	}
	for _, c := range cases {
		got, kl := WireBeside(filepath.Join(rep, c.trace))
		if got != c.capture || (got != "" && kl != filepath.Join(rep, KeyLogName)) {
			t.Errorf("WireBeside(%s) = %q, %q; want %q", c.trace, got, kl, c.capture)
		}
	}
}
