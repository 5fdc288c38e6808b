package discriminator

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
	"github.com/klauspost/compress/gzip"
	"github.com/migaudit/migaudit/parsers"
	"github.com/migaudit/migaudit/parsers/timeline"
)

// The quic-go fixture of parsers/wire: a migration from pathA (20 ms) to
// pathB (40 ms) over a loopback relay, with the server's qlog, the relay's
// capture and the server's key log.
const wireFixture = "../parsers/wire/testdata/quicgo/"

func wireOpts(w *WireEvidence) Options {
	return Options{Impl: "quic-go", OldPathRTT: 20 * time.Millisecond, NewPathRTT: 40 * time.Millisecond, Wire: w}
}

func fixtureTimeline(t *testing.T) *timeline.Timeline {
	t.Helper()
	tl, err := parsers.ParseFile(wireFixture+"server.sqlog.gz", parsers.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return tl
}

func TestWireAttribution(t *testing.T) {
	cases := []struct {
		name string
		// capture edits the capture (nil: as recorded); keylog false reads
		// it without the key log; timeline edits the trace.
		capture  func(t *testing.T, path string) string
		nokeylog bool
		timeline func(tl *timeline.Timeline)
		want     string // Q3
		decides  bool
		path     string // the deciding packet's path
		reason   string
	}{
		{name: "as recorded", want: "YES", decides: true, path: "pathB", reason: "came from ACKs of packets that crossed the new path pathB"},
		{name: "a post-migration packet moved to the old path's capture", capture: moveDecidingToPathA, want: "NO", decides: true, path: "pathA", reason: "crossed the old path pathA"},
		{name: "capture ends soon after the migration", capture: cutAfterDeciding, want: "YES", decides: true, path: "pathB", reason: "later samples came from packets sent after the capture ends"},
		// A sender may answer the new address before the event that marks
		// the migration in its trace (xquic): the last packet before the
		// instant crossed the new path, the old path is still the one most
		// of the last packets crossed.
		{name: "a new-path packet logged just before the migration", timeline: newPathPacketBeforeMigration, want: "YES", decides: true, path: "pathB", reason: "came from ACKs of packets that crossed the new path pathB"},
		{name: "no key log", nokeylog: true, want: "YES", decides: false, reason: "Q3 rests on values"},
		{name: "trace logs no sent packets", timeline: dropPacketsSent, want: "YES", decides: false, reason: "the trace logs no packet the server sent before the migration"},
		{name: "estimator logs no sample after the reset", timeline: dropLatestAfterReset, want: "UNKNOWN", decides: true, reason: "the estimator logged no RTT sample"},
		// A sample no ACK's timing explains (a host stall between the ACK
		// and the log line) cannot be an old-path sample when no ACK of the
		// scope newly acknowledges, as its largest, an old-path packet.
		{name: "an unpaired sample, no old-path ACK near it", timeline: inflateAfterReset(10), want: "YES", decides: true, path: "pathB", reason: "none can be an old-path sample"},
		// The first sample after the reset follows by 2.3 ms the ACK of
		// packet 367, which crossed pathA (the trap): unexplained,
		// it may be that ACK's.
		{name: "an unpaired sample beside an ACK of an old-path packet", timeline: inflateAfterReset(1), want: "UNKNOWN", decides: true, reason: "newly acknowledges packet 367, which crossed the old path pathA: the sample at"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			capPath := wireFixture + WireCaptureName
			if c.capture != nil {
				capPath = c.capture(t, capPath)
			}
			kl := wireFixture + KeyLogName
			if c.nokeylog {
				kl = ""
			}
			w, err := LoadWireEvidence(capPath, kl)
			if err != nil {
				t.Fatal(err)
			}
			tl := fixtureTimeline(t)
			if c.timeline != nil {
				c.timeline(tl)
			}
			a, err := Analyze(tl, wireOpts(w))
			if err != nil {
				t.Fatal(err)
			}
			wr := a.RTT.Wire
			if wr == nil {
				t.Fatal("no wire attribution")
			}
			if a.Q3.Answer != c.want || wr.Decides != c.decides || !strings.Contains(a.Q3.Reason, c.reason) {
				t.Errorf("Q3 %s (wire decides %v): %s\nwant %s, decides %v, reason with %q", a.Q3.Answer, wr.Decides, a.Q3.Reason, c.want, c.decides, c.reason)
			}
			if c.path != "" && (wr.Deciding == nil || wr.Deciding.Path != c.path) {
				t.Errorf("deciding sample %+v, want its packet on %s", wr.Deciding, c.path)
			}
			if c.path != "" && !strings.Contains(a.RTT.Detail, "crossed "+c.path+" at ") {
				t.Errorf("detail does not name the deciding packet's path and wire time: %s", a.RTT.Detail)
			}
		})
	}
}

// Time order pairs the first post-migration sample with the ACK logged
// just before it, whose largest packet crossed the old path and fed no
// sample (quic-go logs metrics_updated before the packet_received that
// carries the ACK, issue #31); the wire pairing finds the ACK after it,
// whose packet crossed the new path.
func TestWirePairingIsNotTimeOrder(t *testing.T) {
	w, err := LoadWireEvidence(wireFixture+WireCaptureName, wireFixture+KeyLogName)
	if err != nil {
		t.Fatal(err)
	}
	tl := fixtureTimeline(t)
	plain, err := Analyze(tl, wireOpts(nil))
	if err != nil {
		t.Fatal(err)
	}
	byWire, err := Analyze(fixtureTimeline(t), wireOpts(w))
	if err != nil {
		t.Fatal(err)
	}
	first := plain.RTT.FirstAfterAtUS
	pn, _, ok := eventAcks(sortedEvents(tl.Events)).ackedPacketBehind(first, int64(-1)<<62)
	if !ok {
		t.Fatal("the trace's time order names no ACK before the first sample")
	}
	d := byWire.RTT.Wire.Deciding
	if d == nil {
		t.Fatal("the wire pairs no sample")
	}
	if d.AtUS != first {
		t.Errorf("the wire's first sample is at %d µs, the value attribution's at %d µs", d.AtUS, first)
	}
	if d.Packet == pn {
		t.Fatalf("time order and the wire both name packet %d: the fixture does not show the misattribution", pn)
	}
	if d.AckAtUS <= d.AtUS {
		t.Errorf("the ACK behind the sample at %d µs was logged at %d µs, not after it as quic-go logs it", d.AtUS, d.AckAtUS)
	}
	s, ok := w.ix.Lookup(1, pn)
	if !ok || s.Path != byWire.RTT.Wire.OldPath {
		t.Errorf("time order's packet %d crossed %q (found %v), want the old path %s", pn, s.Path, ok, byWire.RTT.Wire.OldPath)
	}
	if !strings.Contains(plain.RTT.Detail, "that sample came from the ACK of packet") {
		t.Errorf("without the wire the detail should keep today's time-order evidence: %s", plain.RTT.Detail)
	}
	if strings.Contains(byWire.RTT.Detail, "that sample came from the ACK of packet") {
		t.Errorf("with the wire the time-order evidence must not appear: %s", byWire.RTT.Detail)
	}
	t.Logf("time order: packet %d (%s); wire: packet %d (%s), ACK %d µs after the sample", pn, s.Path, d.Packet, d.Path, d.AckAtUS-d.AtUS)
}

// AnalyzeFile finds the wire evidence beside the trace; without it the
// analysis is what it was.
func TestAnalyzeFileFindsWire(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"server.sqlog.gz", WireCaptureName, KeyLogName} {
		copyFile(t, wireFixture+n, filepath.Join(dir, n))
	}
	bare := t.TempDir()
	copyFile(t, wireFixture+"server.sqlog.gz", filepath.Join(bare, "server.sqlog.gz"))
	opt := wireOpts(nil)
	with, err := AnalyzeFile(filepath.Join(dir, "server.sqlog.gz"), parsers.Options{}, opt)
	if err != nil {
		t.Fatal(err)
	}
	without, err := AnalyzeFile(filepath.Join(bare, "server.sqlog.gz"), parsers.Options{}, opt)
	if err != nil {
		t.Fatal(err)
	}
	if with.RTT.Wire == nil || !with.RTT.Wire.Decides {
		t.Fatalf("wire evidence beside the trace not used: %+v", with.RTT.Wire)
	}
	if without.RTT.Wire != nil {
		t.Fatalf("wire attribution without a capture: %+v", without.RTT.Wire)
	}
	inMem, err := Analyze(fixtureTimeline(t), opt)
	if err != nil {
		t.Fatal(err)
	}
	inMem.Trace = without.Trace
	if inMem.RTT.Detail != without.RTT.Detail || inMem.Q3 != without.Q3 {
		t.Errorf("AnalyzeFile without wire differs from Analyze:\n%s\n%s", without.RTT.Detail, inMem.RTT.Detail)
	}
}

func TestIntervals(t *testing.T) {
	var s intervals
	for _, r := range [][2]int64{{5, 7}, {1, 2}, {10, 10}, {3, 4}, {9, 9}, {20, 30}, {8, 8}} {
		s.add(r[0], r[1])
	}
	want := intervals{{1, 10}, {20, 30}}
	if len(s) != len(want) || s[0] != want[0] || s[1] != want[1] {
		t.Fatalf("intervals %v, want %v", s, want)
	}
	for v, in := range map[int64]bool{0: false, 1: true, 10: true, 11: false, 25: true, 31: false} {
		if s.contains(v) != in {
			t.Errorf("contains(%d) = %v", v, !in)
		}
	}
}

// dropPacketsSent leaves the trace without packet_sent events, as
// msquic's polled statistics are.
// newPathPacketBeforeMigration moves the send of a packet that crossed the
// new path (sent 200 ms after the migration) to 1 µs before the migration.
func newPathPacketBeforeMigration(tl *timeline.Timeline) {
	at := DetectMigration(tl).AtUS
	for i, e := range tl.Events {
		if e.Kind == timeline.PacketSent && appSpace(e.PacketSpace) && e.TimeUS > at+200_000 {
			tl.Events[i].TimeUS = at - 1
			break
		}
	}
	sort.SliceStable(tl.Events, func(i, j int) bool { return tl.Events[i].TimeUS < tl.Events[j].TimeUS })
}

func dropPacketsSent(tl *timeline.Timeline) {
	kept := tl.Events[:0]
	for _, e := range tl.Events {
		if e.Kind != timeline.PacketSent {
			kept = append(kept, e)
		}
	}
	tl.Events = kept
}

func dropLatestAfterReset(tl *timeline.Timeline) {
	// The reset is at 336.693 ms in the fixture's trace: from the path
	// validation on, no sample reports an RTT.
	for i := range tl.Samples {
		if tl.Samples[i].TimeUS > 301_000 {
			tl.Samples[i].Fields &^= timeline.FieldLatestRTT | timeline.FieldSmoothedRTT | timeline.FieldMinRTT | timeline.FieldRTTVar
			tl.Samples[i].LatestRTTUS, tl.Samples[i].SmoothedRTTUS = 0, 0
		}
	}
}

// inflateAfterReset triples the n-th RTT sample logged after the reset
// (336.693 ms in the fixture's trace), so no ACK's timing explains it.
func inflateAfterReset(n int) func(*timeline.Timeline) {
	return func(tl *timeline.Timeline) {
		for i := range tl.Samples {
			s := &tl.Samples[i]
			if s.TimeUS >= 336_693 && s.Fields.Has(timeline.FieldLatestRTT) && s.LatestRTTUS > 0 {
				if n--; n == 0 {
					s.LatestRTTUS *= 3
					return
				}
			}
		}
	}
}

// moveDecidingToPathA rewrites the capture with the record of the first
// post-migration sample's packet on interface 0 (pathA): the validator's
// planted fault.
func moveDecidingToPathA(t *testing.T, path string) string {
	t.Helper()
	rec := decidingRecord(t, path)
	return rewriteCapture(t, path, func(n int, ci *gopacket.CaptureInfo) bool {
		if n == rec {
			ci.InterfaceIndex = 0
		}
		return true
	})
}

// cutAfterDeciding ends the capture 200 records after the deciding
// packet's, as committed evidence trimmed to a window around the
// migration does.
func cutAfterDeciding(t *testing.T, path string) string {
	t.Helper()
	rec := decidingRecord(t, path)
	return rewriteCapture(t, path, func(n int, _ *gopacket.CaptureInfo) bool { return n <= rec+200 })
}

// decidingRecord is the capture record of the deciding sample's packet in
// the fixture as recorded.
func decidingRecord(t *testing.T, path string) int {
	t.Helper()
	w, err := LoadWireEvidence(path, wireFixture+KeyLogName)
	if err != nil {
		t.Fatal(err)
	}
	a, err := Analyze(fixtureTimeline(t), wireOpts(w))
	if err != nil {
		t.Fatal(err)
	}
	return a.RTT.Wire.Deciding.Record
}

// rewriteCapture copies the capture at path record by record (numbered
// from 1), letting edit change a record's capture info or drop it (false).
func rewriteCapture(t *testing.T, path string, edit func(n int, ci *gopacket.CaptureInfo) bool) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	r, err := pcapgo.NewNgReader(z, pcapgo.NgReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	out, err := pcapgo.NewNgWriterInterface(&buf, pcapgo.NgInterface{Name: "pathA", LinkType: layers.LinkTypeRaw}, pcapgo.NgWriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := out.AddInterface(pcapgo.NgInterface{Name: "pathB", LinkType: layers.LinkTypeRaw}); err != nil {
		t.Fatal(err)
	}
	for n := 1; ; n++ {
		data, ci, opts, err := r.ReadPacketDataWithOptions()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if !edit(n, &ci) {
			continue
		}
		if err := out.WritePacketWithOptions(ci, data, opts); err != nil {
			t.Fatal(err)
		}
	}
	if err := out.Flush(); err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(t.TempDir(), "wire.pcapng")
	if err := os.WriteFile(dst, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return dst
}

func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, 0o644); err != nil {
		t.Fatal(err)
	}
}
