package discriminator

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/migaudit/migaudit/parsers/timeline"
)

// builder makes synthetic timelines: a window series, RTT samples and
// path-validation events, in µs.
type builder struct{ tl timeline.Timeline }

func newBuilder() *builder { return &builder{tl: timeline.Timeline{Source: "synthetic"}} }

func (b *builder) cwnd(t, v int64) *builder { return b.cwndOn(t, "", v) }

func (b *builder) cwndOn(t int64, path string, v int64) *builder {
	b.tl.Samples = append(b.tl.Samples, timeline.Sample{TimeUS: t, PathID: path, Fields: timeline.FieldCwnd, CwndBytes: v})
	return b
}

// srtt adds a smoothed-RTT sample; latest is reported too when > 0.
func (b *builder) srtt(t, smoothed, latest int64) *builder {
	s := timeline.Sample{TimeUS: t, Fields: timeline.FieldSmoothedRTT, SmoothedRTTUS: smoothed}
	if latest > 0 {
		s.Fields |= timeline.FieldLatestRTT
		s.LatestRTTUS = latest
	}
	b.tl.Samples = append(b.tl.Samples, s)
	return b
}

func (b *builder) event(e timeline.Event) *builder {
	if e.PacketNumber == 0 && e.Kind != timeline.PacketSent {
		e.PacketNumber = -1
	}
	b.tl.Events = append(b.tl.Events, e)
	return b
}

// pathValidation: challenge received at t, response+challenge sent, response received rtt later.
func (b *builder) pathValidation(t, rtt int64) *builder {
	return b.event(timeline.Event{TimeUS: t, Kind: timeline.PathChallengeReceived, Data: "aa"}).
		event(timeline.Event{TimeUS: t + 40, Kind: timeline.PathResponseSent, Data: "aa"}).
		event(timeline.Event{TimeUS: t + 40, Kind: timeline.PathChallengeSent, Data: "bb"}).
		event(timeline.Event{TimeUS: t + 40 + rtt, Kind: timeline.PathResponseReceived, Data: "bb"})
}

func (b *builder) build() *timeline.Timeline {
	sortTL(&b.tl)
	return &b.tl
}

func sortTL(tl *timeline.Timeline) {
	tl.Samples = sortedSamples(tl.Samples)
	tl.Events = sortedEvents(tl.Events)
}

func mustConstants(t *testing.T, impl string) constantSet {
	t.Helper()
	cs, err := evalConstants(impl, nil)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

func kinds(cs []Collapse) string {
	var s []string
	for _, c := range cs {
		s = append(s, string(c.Kind))
	}
	return strings.Join(s, ",")
}

// TestClassify covers every collapse kind, the implementation's rounding
// and the ambiguous case, with values derived from the data constants.
func TestClassify(t *testing.T) {
	qg := mustConstants(t, "quic-go")
	pq := mustConstants(t, "picoquic")
	const peak = 280414
	tests := []struct {
		name       string
		cs         constantSet
		prev, v    int64
		want       CollapseKind
		ambiguous  bool
		wantInText string
	}{
		{"reset", qg, peak, qg.initial[0], Reset, false, "exact"},
		{"backoff with the code's truncation", qg, peak, int64(math.Floor(qg.factor * peak)), LossBackoff, false, "internal/congestion/cubic_sender.go:212 at v0.61.0"},
		{"rounding up is not the code's arithmetic", qg, 10981, int64(math.Round(qg.factor * 10981)), BelowInitial, false, "not ⌊7/10 × W⌋"},
		{"one below the truncation is not", qg, peak, int64(math.Floor(qg.factor*peak)) - 1, Unexplained, false, "not ⌊7/10 × W⌋"},
		{"floor", qg, 3000, qg.minWindow, LossFloor, false, "minimum window"},
		{"below initial", qg, 30000, qg.initial[0] / 2, BelowInitial, false, "loss cascade"},
		{"unexplained", qg, peak, 100000, Unexplained, false, "not an initial window"},
		{"second initial window counts", pq, 86904, pq.initial[1], Reset, false, "exact"},
		{"first initial window counts", pq, 86904, pq.initial[0], Reset, false, "exact"},
		{"picoquic floor", pq, 5000, pq.minWindow, LossFloor, false, ""},
		{"picoquic NewReno halves", pq, 241174, 120587, LossBackoff, false, "picoquic/newreno.c:54"},
		{"picoquic not a half", pq, 241174, 146592, Unexplained, false, "not ⌊1/2 × W⌋"},
		{"ambiguous reset", qg, int64(math.Ceil(float64(qg.initial[0]) / qg.factor)), qg.initial[0], Reset, true, "not evidence of a reset"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := classify(tt.v, tt.prev, tt.cs)
			if c.Kind != tt.want || c.Ambiguous != tt.ambiguous {
				t.Fatalf("classify(%d → %d) = %s ambiguous=%v (%s), want %s ambiguous=%v", tt.prev, tt.v, c.Kind, c.Ambiguous, c.Explanation, tt.want, tt.ambiguous)
			}
			if !strings.Contains(c.Explanation, tt.wantInText) {
				t.Errorf("explanation %q lacks %q", c.Explanation, tt.wantInText)
			}
		})
	}
}

// TestClassifySeries covers the tolerances that read the series around a
// decrease: growth before the loss within the series' own fastest growth,
// and another controller's sample in a series that resumes.
func TestClassifySeries(t *testing.T) {
	ng := mustConstants(t, "ngtcp2")
	pq := mustConstants(t, "picoquic")
	// ngtcp2 rep3 at 7.03-7.04 s: ~137 B per ACK, 1 ms apart.
	ngHist := []cwndPoint{{7_033_000, 210069}, {7_035_000, 210345}, {7_036_000, 210483}, {7_037_000, 210623}, {7_039_000, 210899}}
	// picoquic rep1: ~193 B per 5.3 ms step.
	pqHist := []cwndPoint{{5_063_888, 95413}, {5_069_258, 95607}, {5_074_585, 95800}, {5_079_829, 95992}}
	resumes := timeline.Sample{TimeUS: 5_100_867, CwndBytes: 96184}
	tests := []struct {
		name       string
		cs         constantSet
		prev, v    int64
		sc         seriesContext
		want       CollapseKind
		wantInText string
	}{
		{"growth of one ACK before the loss", ng, 210899, 147724, seriesContext{hist: ngHist, sinceUS: 1000}, LossBackoff, "W = 211035 = 210899 + 136 B"},
		{"growth beyond the series' pace", ng, 210899, 150000, seriesContext{hist: ngHist, sinceUS: 1000}, Unexplained, "not ⌊7/10 × W⌋"},
		{"no series, no growth", ng, 210899, 147724, seriesContext{}, Unexplained, "not ⌊7/10 × W⌋"},
		{"another controller in a series that resumes", pq, 95992, 48424,
			seriesContext{from: 5_006_000, atUS: 5_095_326, sinceUS: 15_497, hist: pqHist, resumes: resumes, resumesAt: true}, LossBackoff, "not this series' own window"},
		{"the same values when the series stays down", pq, 95992, 48424,
			seriesContext{from: 5_006_000, atUS: 5_095_326, sinceUS: 15_497, hist: pqHist, resumes: timeline.Sample{TimeUS: 5_100_867, CwndBytes: 48600}, resumesAt: true}, Unexplained, "not ⌊1/2 × W⌋"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := classifyIn(tt.v, tt.prev, tt.cs, tt.sc)
			if c.Kind != tt.want {
				t.Fatalf("%d → %d = %s (%s), want %s", tt.prev, tt.v, c.Kind, c.Explanation, tt.want)
			}
			if !strings.Contains(c.Explanation, tt.wantInText) {
				t.Errorf("explanation %q lacks %q", c.Explanation, tt.wantInText)
			}
		})
	}
}

// TestAnalyzeScenarios runs whole synthetic traces through Analyze.
func TestAnalyzeScenarios(t *testing.T) {
	qg := mustConstants(t, "quic-go")
	ng := mustConstants(t, "ngtcp2")
	pq := mustConstants(t, "picoquic")
	const pv = 5_027_923 // path challenge received
	const peak = 280414
	backoff := int64(math.Floor(qg.factor * peak))

	tests := []struct {
		name       string
		impl       string
		tl         *timeline.Timeline
		pathIDs    bool
		opt        Options
		wantKinds  string
		wantReset  bool
		wantBefore int64
		wantAfter  int64
		wantQ1     string
		wantRTT    string
		wantQ3     string
	}{
		{
			name: "two close events: backoff then reset 1.96 ms later",
			impl: "quic-go",
			tl: newBuilder().
				cwnd(1_000, qg.initial[0]). // connection start: never counts
				cwnd(4_000_000, 200000).cwnd(5_008_770, peak).
				srtt(5_000_000, 114_800, 114_900).
				pathValidation(pv, 40_700).
				cwnd(5_068_657, backoff).cwnd(5_070_616, qg.initial[0]).
				srtt(5_111_356, 40_679, 40_679).cwnd(5_111_356, 43520).
				build(),
			wantKinds: "LOSS_BACKOFF,RESET", wantReset: true, wantBefore: peak, wantAfter: qg.initial[0],
			wantQ1: "YES", wantRTT: "new-path", wantQ3: "YES",
		},
		{
			name: "reset only, RTT default then old-path sample from an old packet",
			impl: "ngtcp2",
			tl: newBuilder().
				cwnd(4_000_000, 532322).srtt(4_900_000, 216_000, 216_000).
				event(timeline.Event{TimeUS: 4_835_000, Kind: timeline.PacketSent, PacketNumber: 77}).
				event(timeline.Event{TimeUS: 5_060_000, Kind: timeline.PacketSent, PacketNumber: 90}).
				pathValidation(5_051_000, 40_000).
				cwnd(5_051_000, ng.initial[0]).srtt(5_051_000, 333_000, 0).
				event(timeline.Event{TimeUS: 5_052_000, Kind: timeline.PacketsAcked, AckRanges: []timeline.Range{{First: 70, Last: 77}}}).
				srtt(5_052_000, 217_000, 217_000).
				srtt(5_400_000, 43_000, 40_000).
				build(),
			wantKinds: "RESET", wantReset: true, wantBefore: 532322, wantAfter: ng.initial[0],
			wantQ1: "YES", wantRTT: "old-path", wantQ3: "NO",
		},
		{
			name: "loss cascade below the initial window to the floor: no reset",
			impl: "picoquic",
			tl: newBuilder().
				cwnd(1_000, pq.initial[0]).
				cwnd(4_000_000, 86904).srtt(4_900_000, 25_000, 25_000).
				event(timeline.Event{TimeUS: 1_000, Kind: timeline.DatagramReceived, From: "10.0.1.1:46741", To: "10.0.9.1:4433"}).
				event(timeline.Event{TimeUS: 5_000_000, Kind: timeline.DatagramReceived, From: "10.0.3.1:46741", To: "10.0.9.1:4433"}).
				event(timeline.Event{TimeUS: 5_000_100, Kind: timeline.PathChallengeSent, Data: "cc"}).
				event(timeline.Event{TimeUS: 5_040_100, Kind: timeline.PathResponseReceived, Data: "cc"}).
				cwnd(5_050_000, 60000).cwnd(5_080_000, 9000).cwnd(5_110_000, pq.minWindow).
				srtt(5_050_000, 27_000, 41_000).srtt(6_050_000, 40_300, 40_200).
				build(),
			wantKinds: "UNEXPLAINED,BELOW_INITIAL,LOSS_FLOOR", wantReset: false, wantBefore: 86904, wantAfter: pq.minWindow,
			wantQ1: "NO", wantRTT: "old-path", wantQ3: "NO",
		},
		{
			name: "reset outside the scope is not a reset observed",
			impl: "quic-go",
			tl: newBuilder().
				cwnd(1_000, qg.initial[0]).cwnd(4_000_000, peak).
				pathValidation(pv, 40_700).
				cwnd(pv+3_000_000, qg.initial[0]).
				build(),
			wantKinds: "", wantReset: false, wantBefore: peak, wantAfter: 0,
			wantQ1: "UNKNOWN", wantRTT: "unknown", wantQ3: "UNKNOWN",
		},
		{
			name: "port-only rebinding proves nothing",
			impl: "quic-go",
			tl: newBuilder().
				cwnd(4_000_000, peak).
				event(timeline.Event{TimeUS: 1_000, Kind: timeline.DatagramReceived, From: "10.0.1.1:1000"}).
				event(timeline.Event{TimeUS: 5_000_000, Kind: timeline.DatagramReceived, From: "10.0.1.1:2000"}).
				cwnd(5_010_000, qg.initial[0]).
				build(),
			wantKinds: "RESET", wantReset: true, wantBefore: peak, wantAfter: qg.initial[0],
			wantQ1: "UNKNOWN", wantRTT: "unknown", wantQ3: "UNKNOWN",
		},
		{
			name:      "CSV without events and without --migration-at: no migration, no guess",
			impl:      "msquic",
			tl:        newBuilder().cwnd(5_527_022, 1484569).cwnd(5_532_258, 12200).build(),
			wantKinds: "", wantReset: false,
			wantQ1: "UNKNOWN", wantRTT: "unknown", wantQ3: "UNKNOWN",
		},
		{
			name: "CSV with --migration-at: reset and RTT pinned at the default",
			impl: "msquic",
			tl: newBuilder().
				cwnd(5_521_806, 1484569).srtt(5_521_806, 588_727, 0).
				cwnd(5_532_258, 12200).srtt(5_532_258, 333_000, 0).
				cwnd(5_573_795, int64(0.7*12200)).srtt(5_573_795, 333_000, 0).
				srtt(25_000_000, 333_000, 0).
				build(),
			opt:       Options{MigrationAt: durationPtr(5530 * time.Millisecond), NewPathRTT: 40 * time.Millisecond},
			wantKinds: "RESET,LOSS_BACKOFF", wantReset: true, wantBefore: 1484569, wantAfter: 12200,
			wantQ1: "YES", wantRTT: "default", wantQ3: "UNKNOWN",
		},
		{
			name: "union of two paths without path id: mixed",
			impl: "quiche",
			tl: newBuilder().
				cwnd(4_000_000, 654900).srtt(5_022_000, 271_393, 271_520).
				event(timeline.Event{TimeUS: 5_022_456, Kind: timeline.PathChallengeReceived}).
				event(timeline.Event{TimeUS: 5_022_574, Kind: timeline.PathChallengeSent}).
				event(timeline.Event{TimeUS: 5_063_033, Kind: timeline.PathResponseReceived}).
				cwnd(5_022_456, 12000).srtt(5_022_456, 333_000, 0).
				srtt(5_022_494, 271_426, 271_671).cwnd(5_026_062, 656100).
				srtt(5_026_062, 271_411, 271_441).
				cwnd(5_103_827, 15600).srtt(5_103_827, 40_474, 40_588).
				build(),
			wantKinds: "RESET,UNEXPLAINED", wantReset: true, wantBefore: 654900, wantAfter: 12000,
			wantQ1: "YES", wantRTT: "mixed", wantQ3: "UNKNOWN",
		},
		{
			name: "path ids: a new path born at its initial window is a reset",
			impl: "quiche",
			tl: newBuilder().
				cwndOn(4_000_000, "0", 654900).
				pathValidation(5_022_456, 40_000).
				cwndOn(5_022_500, "1", 12000).cwndOn(5_023_000, "0", 656100).
				build(),
			pathIDs:   true,
			wantKinds: "RESET", wantReset: true, wantBefore: 654900, wantAfter: 12000,
			wantQ1: "YES", wantRTT: "unknown", wantQ3: "UNKNOWN",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.tl.Meta.PathIDs = tt.pathIDs
			opt := tt.opt
			opt.Impl = tt.impl
			a, err := Analyze(tt.tl, opt)
			if err != nil {
				t.Fatal(err)
			}
			if got := kinds(a.Events); got != tt.wantKinds {
				t.Errorf("events = %q, want %q\n%+v", got, tt.wantKinds, a.Events)
			}
			if a.ResetObserved != tt.wantReset {
				t.Errorf("reset observed = %v, want %v", a.ResetObserved, tt.wantReset)
			}
			if tt.wantBefore != 0 && a.WindowBeforeBytes != tt.wantBefore {
				t.Errorf("window before = %d, want %d", a.WindowBeforeBytes, tt.wantBefore)
			}
			if tt.wantAfter != 0 && a.WindowAfterBytes != tt.wantAfter {
				t.Errorf("window after = %d, want %d", a.WindowAfterBytes, tt.wantAfter)
			}
			if a.Q1.Answer != tt.wantQ1 {
				t.Errorf("Q1 = %s (%s), want %s", a.Q1.Answer, a.Q1.Reason, tt.wantQ1)
			}
			if a.RTT.Attribution != tt.wantRTT {
				t.Errorf("RTT = %s (%s), want %s", a.RTT.Attribution, a.RTT.Detail, tt.wantRTT)
			}
			if a.Q3.Answer != tt.wantQ3 {
				t.Errorf("Q3 = %s (%s), want %s", a.Q3.Answer, a.Q3.Reason, tt.wantQ3)
			}
		})
	}
}

func TestTwoCloseEventsGap(t *testing.T) {
	qg := mustConstants(t, "quic-go")
	tl := newBuilder().cwnd(4_000_000, 280414).pathValidation(5_000_000, 40_000).
		cwnd(5_068_657, int64(math.Floor(qg.factor*280414))).cwnd(5_070_616, qg.initial[0]).build()
	a, err := Analyze(tl, Options{Impl: "quic-go"})
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Events) != 2 {
		t.Fatalf("want two events, got %+v", a.Events)
	}
	if a.Events[1].SincePreviousUS != 1959 || a.Events[1].PreviousBytes != a.Events[0].ValueBytes {
		t.Errorf("second event %+v: want 1959 µs after the first, from its value", a.Events[1])
	}
}

func TestDetectMigration(t *testing.T) {
	tests := []struct {
		name     string
		events   []timeline.Event
		kind     MigrationKind
		at       int64
		pvRTT    int64
		evidence string
	}{
		{"ip change from received datagrams", []timeline.Event{
			{TimeUS: 10, Kind: timeline.DatagramReceived, From: "10.0.1.1:46741"},
			{TimeUS: 5_000_000, Kind: timeline.DatagramReceived, From: "10.0.3.1:46741"},
			{TimeUS: 5_000_050, Kind: timeline.PathChallengeSent, Data: "x"},
			{TimeUS: 5_040_050, Kind: timeline.PathResponseReceived, Data: "x"},
		}, IPMigration, 5_000_000, 40_000, "new peer address 10.0.3.1:46741"},
		{"client vantage: local address changes", []timeline.Event{
			{TimeUS: 10, Kind: timeline.DatagramSent, From: "10.0.1.1:5000", To: "10.0.9.1:4433"},
			{TimeUS: 5_000_000, Kind: timeline.DatagramSent, From: "10.0.3.1:5000", To: "10.0.9.1:4433"},
		}, IPMigration, 5_000_000, 0, "new local address"},
		{"port only", []timeline.Event{
			{TimeUS: 10, Kind: timeline.DatagramReceived, From: "[2001:db8::1]:1"},
			{TimeUS: 20, Kind: timeline.DatagramReceived, From: "[2001:db8::1]:2"},
		}, PortRebind, 20, 0, ""},
		{"path validation only, data matched", []timeline.Event{
			{TimeUS: 100, Kind: timeline.PathChallengeSent, Data: "a"},
			{TimeUS: 110, Kind: timeline.PathChallengeSent, Data: "b"},
			{TimeUS: 150, Kind: timeline.PathResponseReceived, Data: "b"},
			{TimeUS: 160, Kind: timeline.PathResponseReceived, Data: "a"},
		}, PathChange, 100, 60, "no addresses"},
		{"path validation only, no data", []timeline.Event{
			{TimeUS: 100, Kind: timeline.PathChallengeReceived},
			{TimeUS: 110, Kind: timeline.PathChallengeSent},
			{TimeUS: 150, Kind: timeline.PathResponseReceived},
		}, PathChange, 100, 40, "path validation"},
		{"same address spelt two ways is no migration", []timeline.Event{
			{TimeUS: 10, Kind: timeline.DatagramReceived, From: "[::ffff:10.0.1.1]:443"},
			{TimeUS: 20, Kind: timeline.DatagramReceived, From: "10.0.1.1:443"},
		}, NoMigration, 0, 0, "no migration found"},
		{"nothing", []timeline.Event{{TimeUS: 1, Kind: timeline.PacketLost}}, NoMigration, 0, 0, "no migration found"},
		{"no events", nil, NoMigration, 0, 0, "--migration-at"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := DetectMigration(&timeline.Timeline{Events: tt.events})
			if m.Kind != tt.kind || m.AtUS != tt.at || m.PathValidationRTTUS != tt.pvRTT {
				t.Fatalf("got %+v, want kind %s at %d pv rtt %d", m, tt.kind, tt.at, tt.pvRTT)
			}
			if m.Found != (tt.kind != NoMigration) {
				t.Errorf("found = %v", m.Found)
			}
			if !strings.Contains(m.Evidence, tt.evidence) {
				t.Errorf("evidence %q lacks %q", m.Evidence, tt.evidence)
			}
		})
	}
}

func TestParamsOverrideConstants(t *testing.T) {
	a, err := Analyze(newBuilder().build(), Options{Impl: "ngtcp2", Params: map[string]float64{"S": 1452}})
	if err != nil {
		t.Fatal(err)
	}
	// min(10*1452, max(2*1452, 14720)) = 14520
	if a.Constants[0].Value != 14520 || !strings.Contains(a.Constants[0].Arithmetic, "1452") {
		t.Errorf("initial window with S=1452: %+v", a.Constants[0])
	}
}

func TestAnalyzeErrors(t *testing.T) {
	if _, err := Analyze(newBuilder().build(), Options{}); err == nil || !strings.Contains(err.Error(), "--impl") {
		t.Errorf("no impl: err = %v", err)
	}
	tl := newBuilder().build()
	tl.Meta.Implementation = "ngtcp2"
	if a, err := Analyze(tl, Options{}); err != nil || a.Implementation != "ngtcp2" || !strings.Contains(strings.Join(a.Warnings, " "), "taken from the trace") {
		t.Errorf("impl from the trace: %v %+v", err, a)
	}
	if _, err := Analyze(newBuilder().build(), Options{Impl: "nosuch"}); err == nil || !strings.Contains(err.Error(), "unknown implementation") {
		t.Errorf("unknown impl: err = %v", err)
	}
}

func durationPtr(d time.Duration) *time.Duration { return &d }

// TestAttributeRTT covers the RTT classes on CSV-like timelines (instant
// given, new-path RTT given).
func TestAttributeRTT(t *testing.T) {
	const at = 5_000_000
	tests := []struct {
		name      string
		srtt      [][2]int64 // time, smoothed (µs)
		want      string
		converged bool
	}{
		{"polled repeats then new path", [][2]int64{{4_990_000, 112_000}, {5_005_000, 112_000}, {5_010_000, 112_000}, {5_050_000, 40_400}}, "new-path", false},
		{"between the paths, converging", [][2]int64{{4_990_000, 20_000}, {5_050_000, 30_000}, {5_400_000, 39_000}}, "converging", true},
		{"old path, later converges", [][2]int64{{4_990_000, 25_000}, {5_050_000, 26_000}, {6_000_000, 40_300}}, "old-path", true},
		{"nearest outside tolerance: old path", [][2]int64{{4_990_000, 27_000}, {5_050_000, 20_200}}, "old-path", false},
		{"never changes", [][2]int64{{4_990_000, 27_000}, {5_050_000, 27_000}, {9_000_000, 27_000}}, "old-path", false},
		{"stuck at the default", [][2]int64{{4_990_000, 27_000}, {5_050_000, 333_000}, {25_000_000, 333_000}}, "default", false},
		{"nothing after", [][2]int64{{4_990_000, 27_000}}, "unknown", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := newBuilder()
			for _, s := range tt.srtt {
				b.srtt(s[0], s[1], 0)
			}
			a, err := Analyze(b.build(), Options{Impl: "msquic", MigrationAt: durationPtr(at * time.Microsecond), NewPathRTT: 40 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			if a.RTT.Attribution != tt.want || (a.RTT.ConvergedAfterUS > 0) != tt.converged {
				t.Errorf("got %s converged %d (%s), want %s converged %v", a.RTT.Attribution, a.RTT.ConvergedAfterUS, a.RTT.Detail, tt.want, tt.converged)
			}
		})
	}
}

func TestMergeParams(t *testing.T) {
	saved := traceParams
	defer func() { traceParams = saved }()
	traceParams = map[string]map[string]string{"ngtcp2": {"tx_udp_payload": "S"}}
	got, used := mergeParams("ngtcp2", map[string]int64{"tx_udp_payload": 1452, "other": 1}, nil)
	if got["S"] != 1452 || len(got) != 1 || len(used) != 1 || !strings.Contains(used[0], "tx_udp_payload") {
		t.Errorf("trace mapping: %v %v", got, used)
	}
	got, _ = mergeParams("ngtcp2", map[string]int64{"tx_udp_payload": 1452}, map[string]float64{"S": 1200})
	if got["S"] != 1200 {
		t.Errorf("user override must win: %v", got)
	}
	got, _ = mergeParams("quic-go", map[string]int64{"tx_udp_payload": 1452}, nil)
	if len(got) != 0 {
		t.Errorf("mapping is per implementation: %v", got)
	}
}

// FuzzAnalyze: no timeline, however odd, makes Analyze panic.
func FuzzAnalyze(f *testing.F) {
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, int64(5_000_000))
	f.Add([]byte{255, 0, 255, 0, 7, 7, 7, 7}, int64(0))
	f.Fuzz(func(t *testing.T, b []byte, at int64) {
		tl := &timeline.Timeline{}
		kindsList := []timeline.EventKind{timeline.DatagramReceived, timeline.DatagramSent, timeline.PathChallengeSent,
			timeline.PathChallengeReceived, timeline.PathResponseSent, timeline.PathResponseReceived, timeline.PacketSent,
			timeline.PacketsAcked, timeline.PathEvent}
		for i := 0; i+3 < len(b); i += 4 {
			ts := int64(b[i]) * 50_000
			v := int64(b[i+1]) * 1000
			switch b[i+2] % 3 {
			case 0:
				tl.Samples = append(tl.Samples, timeline.Sample{TimeUS: ts, PathID: string(rune('0' + b[i+3]%2)), Fields: timeline.Field(b[i+3]), CwndBytes: v, SmoothedRTTUS: v, LatestRTTUS: v / 2})
			case 1:
				tl.Events = append(tl.Events, timeline.Event{TimeUS: ts, Kind: kindsList[int(b[i+3])%len(kindsList)],
					From: "10.0." + string(rune('0'+b[i+1]%3)) + ".1:443", PacketNumber: int64(b[i+1]), AckRanges: []timeline.Range{{First: 0, Last: int64(b[i+3])}}})
			default:
				tl.Meta.PathIDs = b[i+3]%2 == 0
			}
		}
		d := time.Duration(at) * time.Microsecond
		for _, opt := range []Options{{Impl: "quic-go"}, {Impl: "picoquic", MigrationAt: &d}, {Impl: "quiche", NewPathRTT: 40 * time.Millisecond, OldPathRTT: time.Millisecond}} {
			if _, err := Analyze(tl, opt); err != nil {
				t.Fatal(err)
			}
		}
	})
}

// TestGivenOldPathRTT: a configured old-path delay (20 ms) does not hide
// the measured, queue-inflated old-path estimate (216 ms): both are "old".
func TestGivenOldPathRTT(t *testing.T) {
	tl := newBuilder().srtt(4_990_000, 216_000, 216_000).srtt(5_052_000, 217_000, 217_000).build()
	a, err := Analyze(tl, Options{Impl: "ngtcp2", MigrationAt: durationPtr(5 * time.Second), OldPathRTT: 20 * time.Millisecond, NewPathRTT: 40 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if a.RTT.Attribution != "old-path" || a.RTT.OldPathUS != 20_000 || a.RTT.OldPathMeasuredUS != 216_000 {
		t.Errorf("got %+v", a.RTT)
	}
}
