package discriminator

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand"
	"path/filepath"
	"reflect"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/migaudit/migaudit/parsers"
	"github.com/migaudit/migaudit/parsers/timeline"
)

// streamTimeline feeds tl to a streamer as a parser would: samples and
// events merged in time order (events first at equal times when evFirst).
func streamTimeline(tl *timeline.Timeline, opt Options, evFirst bool) (Analysis, error) {
	st := newStreamer(tl.Source, opt)
	st.Meta(tl.Meta)
	i, j := 0, 0
	for i < len(tl.Samples) || j < len(tl.Events) {
		takeEvent := j < len(tl.Events) && (i == len(tl.Samples) || tl.Events[j].TimeUS < tl.Samples[i].TimeUS ||
			(evFirst && tl.Events[j].TimeUS == tl.Samples[i].TimeUS))
		if takeEvent {
			st.Event(tl.Events[j])
			j++
		} else {
			st.Sample(tl.Samples[i])
			i++
		}
	}
	for _, w := range tl.Warnings {
		st.Warn(w)
	}
	return st.finish()
}

func sameAnalysis(t *testing.T, what string, got, want Analysis) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		g, _ := json.MarshalIndent(got, "", " ")
		w, _ := json.MarshalIndent(want, "", " ")
		t.Fatalf("%s: one-pass analysis differs from the in-memory one\n got %s\nwant %s", what, g, w)
	}
}

// TestStreamReference: on every reference trace and timeline the one pass
// succeeds (no fallback) and equals the in-memory analysis.
func TestStreamReference(t *testing.T) {
	ref := referenceDir(t)
	at := func(s string) *time.Duration { d, _ := time.ParseDuration(s); return &d }
	cases := []struct {
		file string
		opt  Options
	}{
		{"traces/quicgo_server.sqlog.gz", Options{Impl: "quic-go"}},
		{"traces/quicgo_server.sqlog.gz", Options{Impl: "quic-go", Before: time.Second, After: 300 * time.Millisecond, NewPathRTT: 40 * time.Millisecond}},
		{"traces/ngtcp2_server.sqlog.gz", Options{Impl: "ngtcp2"}},
		{"traces/quiche_server.sqlog.gz", Options{Impl: "quiche"}},
		{"traces/picoquic_server.qlog.gz", Options{Impl: "picoquic"}},
		{"traces/picoquic_server.qlog.gz", Options{Impl: "picoquic", OldPathRTT: 20 * time.Millisecond}},
		{"traces/msquic_server.log.gz", Options{Impl: "msquic"}},
		{"timelines/msquic/rep1_server.csv.gz", Options{Impl: "msquic"}},
		{"timelines/msquic/rep1_server.csv.gz", Options{Impl: "msquic", MigrationAt: at("5.529097s")}},
		{"timelines/msquic/rep2_client.csv.gz", Options{Impl: "msquic", MigrationAt: at("5.52s")}},
		{"timelines/quicgo/rep1_server.csv.gz", Options{Impl: "quic-go", MigrationAt: at("5.035s"), NewPathRTT: 40 * time.Millisecond}},
		{"timelines/picoquic/rep1_server.csv", Options{Impl: "picoquic", MigrationAt: at("5s")}},
		{"timelines/picoquic/rep2_server.csv", Options{Impl: "picoquic", MigrationAt: at("5s")}},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%s %+v", c.file, c.opt), func(t *testing.T) {
			p := filepath.Join(ref, c.file)
			got, err := analyzeStream(p, parsers.Options{}, c.opt)
			if err != nil {
				t.Fatalf("one pass: %v", err)
			}
			want, err := analyzeInMemory(p, parsers.Options{}, c.opt)
			if err != nil {
				t.Fatal(err)
			}
			sameAnalysis(t, c.file, got, want)
		})
	}
}

// randomTimeline is a small random trace: windows and RTTs on one or two
// paths, a path validation, address changes, ACKs and sends, all in time
// order, with values drawn near the constants so every branch is reached.
func randomTimeline(r *rand.Rand, cs constantSet) *timeline.Timeline {
	tl := &timeline.Timeline{Source: "random", Meta: timeline.Meta{Format: "random"}}
	pick := func(xs ...int64) int64 { return xs[r.Intn(len(xs))] }
	paths := []string{""}
	if r.Intn(3) == 0 {
		paths = []string{"0", "1"}
		tl.Meta.PathIDs = true
	}
	n := 20 + r.Intn(400)
	t := int64(0)
	cw := int64(200000)
	step := pick(1000, 20000, 100000)
	addrs := []string{"10.0.1.1:4433", "10.0.3.1:4433", "10.0.1.1:5555"}
	peer := 0
	pn := int64(0)
	for i := 0; i < n; i++ {
		t += r.Int63n(step)
		path := paths[0]
		if len(paths) > 1 && (i > n/2 || r.Intn(4) == 0) {
			path = paths[1]
		}
		switch r.Intn(9) {
		case 0, 1, 2:
			switch r.Intn(5) {
			case 0:
				cw = cs.initial[0]
			case 1:
				cw = int64(float64(cw) * 0.7)
			case 2:
				cw = cs.minWindow
			default:
				cw += r.Int63n(30000) - 10000
			}
			tl.Samples = append(tl.Samples, timeline.Sample{TimeUS: t, PathID: path, Fields: timeline.FieldCwnd, CwndBytes: max(cw, 1)})
		case 3, 4:
			sm := pick(cs.defaultRTT, 20000, 40000, 40500, 23000, 30000, r.Int63n(100000)+1)
			s := timeline.Sample{TimeUS: t, PathID: path, Fields: timeline.FieldSmoothedRTT, SmoothedRTTUS: sm}
			if r.Intn(2) == 0 {
				s.Fields |= timeline.FieldLatestRTT | timeline.FieldCwnd
				s.LatestRTTUS, s.CwndBytes = pick(sm, sm+5000), cw
			}
			tl.Samples = append(tl.Samples, s)
		case 5:
			pn++
			tl.Events = append(tl.Events, timeline.Event{TimeUS: t, Kind: timeline.PacketSent, PacketNumber: pn})
		case 6:
			tl.Events = append(tl.Events, timeline.Event{TimeUS: t, Kind: timeline.PacketsAcked, PacketNumber: -1,
				AckRanges: []timeline.Range{{First: max(pn-3, 0), Last: pn - r.Int63n(2)}}})
		case 7:
			kinds := []timeline.EventKind{timeline.PathChallengeReceived, timeline.PathResponseSent, timeline.PathChallengeSent, timeline.PathResponseReceived}
			tl.Events = append(tl.Events, timeline.Event{TimeUS: t, Kind: kinds[r.Intn(4)], PacketNumber: -1, Data: pick2(r, "aa", "bb")})
		case 8:
			if r.Intn(3) == 0 {
				peer = r.Intn(len(addrs))
			}
			tl.Events = append(tl.Events, timeline.Event{TimeUS: t, Kind: timeline.DatagramReceived, From: addrs[peer], PacketNumber: -1})
		}
	}
	return tl
}

func pick2(r *rand.Rand, a, b string) string {
	if r.Intn(2) == 0 {
		return a
	}
	return b
}

// TestStreamRandom: on random traces the one pass either declines (and
// the in-memory analysis is used) or agrees with it exactly; most must
// stream.
func TestStreamRandom(t *testing.T) {
	for _, impl := range []string{"quic-go", "ngtcp2", "picoquic", "msquic"} {
		cs := mustConstants(t, impl)
		r := rand.New(rand.NewSource(int64(len(impl))))
		streamed, total := 0, 0
		for i := 0; i < 100; i++ {
			tl := randomTimeline(r, cs)
			opts := []Options{{Impl: impl}, {Impl: impl, Before: 300 * time.Millisecond, After: 500 * time.Millisecond, NewPathRTT: 40 * time.Millisecond}}
			if i%5 == 0 {
				d := time.Duration(r.Int63n(3_000_000)) * time.Microsecond
				opts = append(opts, Options{Impl: impl, MigrationAt: &d})
			}
			for _, opt := range opts {
				want, err := Analyze(tl, opt)
				if err != nil {
					t.Fatal(err)
				}
				got, err := streamTimeline(tl, opt, i%2 == 0)
				total++
				var ns errNotStreamable
				if errors.As(err, &ns) {
					continue
				}
				if err != nil {
					t.Fatal(err)
				}
				streamed++
				sameAnalysis(t, fmt.Sprintf("%s #%d %+v", impl, i, opt), got, want)
			}
		}
		t.Logf("%s: %d of %d random traces analyzed in one pass", impl, streamed, total)
		if streamed < total/2 {
			t.Errorf("%s: only %d of %d random traces analyzed in one pass", impl, streamed, total)
		}
	}
}

// BenchmarkAnalyzeFile measures AnalyzeFile (parse + one-pass analysis)
// on each reference trace; MB/s is of uncompressed trace.
//
//	go test -run '^$' -bench BenchmarkAnalyzeFile -benchmem ./discriminator
func BenchmarkAnalyzeFile(b *testing.B) {
	ref := referenceDirB(b)
	for _, c := range []struct{ file, impl string }{
		{"quicgo_server.sqlog.gz", "quic-go"}, {"ngtcp2_server.sqlog.gz", "ngtcp2"}, {"quiche_server.sqlog.gz", "quiche"},
		{"picoquic_server.qlog.gz", "picoquic"}, {"msquic_server.log.gz", "msquic"},
	} {
		b.Run(c.impl, func(b *testing.B) {
			p := filepath.Join(ref, "traces", c.file)
			b.ReportAllocs()
			cpu0 := cpuTime()
			for i := 0; i < b.N; i++ {
				if _, err := analyzeStream(p, parsers.Options{}, Options{Impl: c.impl}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric((cpuTime()-cpu0).Seconds()*1000/float64(b.N), "cpu-ms/op")
		})
	}
}

// cpuTime is the process's user+system CPU time: on a shared machine it
// says more about the code than wall-clock time does.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestStreamMemoryFlat: the one pass holds as much for a long trace as
// for a short one of the same rate (a migration at 5 s, then traffic).
func TestStreamMemoryFlat(t *testing.T) {
	peak := func(seconds int64) (uint64, Analysis) {
		st := newStreamer("synthetic", Options{Impl: "quic-go"})
		st.Meta(timeline.Meta{Format: "synthetic"})
		var top uint64
		pn := int64(0)
		for tu := int64(0); tu < seconds*1_000_000; tu += 300 {
			if tu == 5_000_100 {
				st.Event(timeline.Event{TimeUS: tu, Kind: timeline.PathChallengeReceived, PacketNumber: -1, Data: "aa"})
			}
			pn++
			st.Event(timeline.Event{TimeUS: tu, Kind: timeline.PacketSent, PacketNumber: pn})
			st.Event(timeline.Event{TimeUS: tu, Kind: timeline.PacketsAcked, PacketNumber: -1, AckRanges: []timeline.Range{{First: pn - 2, Last: pn - 1}}})
			cw := int64(40960 + (tu/300)%200000)
			if tu == 5_000_400 {
				cw = 40960
			}
			st.Sample(timeline.Sample{TimeUS: tu, Fields: timeline.FieldCwnd | timeline.FieldSmoothedRTT, CwndBytes: cw, SmoothedRTTUS: 40000 + tu%7})
			if pn%(1<<12) == 0 {
				top = max(top, retained(st))
			}
		}
		a, err := st.finish()
		if err != nil {
			t.Fatal(err)
		}
		return top, a
	}
	short, a := peak(60)
	long, b := peak(600)
	if !a.ResetObserved || !b.ResetObserved {
		t.Fatalf("the synthetic migration was not analyzed: %+v", a.Migration)
	}
	t.Logf("most kept: 60 s %.2f MiB, 600 s %.2f MiB", float64(short)/(1<<20), float64(long)/(1<<20))
	if short == 0 || long > short+short/10 {
		t.Errorf("what the one pass keeps grows with the trace: %.2f MiB for 60 s, %.2f MiB for 600 s", float64(short)/(1<<20), float64(long)/(1<<20))
	}
}

// retained is the memory the streamer's growing slices hold (capacity, as
// the heap sees it); the rest of its state is a fixed handful of values.
func retained(st *streamer) uint64 {
	return uint64(len(st.ring.blocks)+1)*queueBlock*uint64(unsafe.Sizeof(seqSample{})) + uint64(cap(st.ring.blocks))*24 +
		uint64(cap(st.scope))*uint64(unsafe.Sizeof(timeline.Sample{})) +
		uint64(cap(st.acks.acks))*uint64(unsafe.Sizeof(ackRec{})) +
		uint64(cap(st.acks.sends))*uint64(unsafe.Sizeof(sendRec{})) +
		uint64(cap(st.finder.pv))*uint64(unsafe.Sizeof(timeline.Event{})) +
		uint64(len(st.warnings))*uint64(unsafe.Sizeof(timeline.Warning{}))
}
