package build

import (
	"bytes"
	"compress/gzip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/migaudit/migaudit/data"
	"github.com/migaudit/migaudit/data/mirrors"
)

// writeInstrumentedRep writes data/evidence/msquic/instrumented/repN with the
// small instrumented log of parsers/msquiclog's tests.
func writeInstrumentedRep(t *testing.T, root string, n int, instrumented string) {
	t.Helper()
	dir := filepath.Join(root, "data", "evidence", "msquic", InstrumentedDir, "rep"+string(rune('0'+n)))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile("../../parsers/msquiclog/testdata/server_small.log")
	if err != nil {
		t.Fatal(err)
	}
	var z bytes.Buffer
	zw := gzip.NewWriter(&z)
	zw.Write(b)
	zw.Close()
	if err := os.WriteFile(filepath.Join(dir, "server.instrument.log.gz"), z.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	status := "VALID"
	if n == 4 {
		status = "INVALID"
	}
	man := `{"status": "` + status + `", "result": {"settings": {"instrumented": "` + instrumented + `", "instrument_patch_sha256": "ab"}}}`
	if err := os.WriteFile(filepath.Join(dir, "manifest.json"), []byte(man), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestLiveFindingsFor(t *testing.T) {
	pin, err := data.Lookup("msquic")
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	o := Options{RepoRoot: root, Mirrors: filepath.Join(root, "no-mirrors")}
	if lf, _, err := liveFindingsFor(o, pin, nil); err != nil || lf != nil {
		t.Fatalf("no instrumented evidence: %v, %v; want nothing", lf, err)
	}
	writeInstrumentedRep(t, root, 1, "true")
	writeInstrumentedRep(t, root, 2, "true")
	writeInstrumentedRep(t, root, 3, "false") // an ordinary run kept there by mistake: not counted
	writeInstrumentedRep(t, root, 4, "true")  // INVALID: not counted
	lf, notes, err := liveFindingsFor(o, pin, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(lf) != 2 || lf[1].ID != "msquic-old-path-probe-losses-cut-new-path-window" {
		t.Fatalf("%d findings", len(lf))
	}
	for _, want := range []string{"in 2 of 2 instrumented repetitions", "2 of 4 congestion events were started by the loss of a packet sent to the old address",
		"(2 runs of packets went there after the switch, the last 0.05 s after it)", "5978 B after 210 ms, 5978 B after 210 ms"} {
		if !strings.Contains(lf[1].Statement, want) {
			t.Errorf("probe statement lacks %q: %s", want, lf[1].Statement)
		}
	}
	f := lf[0]
	if strings.Join(f.Repetitions, ",") != "instrumented/rep1,instrumented/rep2" || len(f.Figures) != 2 {
		t.Fatalf("repetitions %v, %d figures", f.Repetitions, len(f.Figures))
	}
	g := f.Figures[0]
	if g.NewPathID != 1 || g.PrevPathID != 0 || g.EligibleAfter != 3 || g.DifferentPathAfter != 3 || g.UpdatesAfter != 0 ||
		g.LargestPathIDsAfter["0"] != 3 || g.AckPathIDsAfter["1"] != 3 || g.FirstSentOnNewStampedPathID != 0 || g.SRTTAfterUS != 333000 ||
		g.CongestionEventsAfter != 2 || g.LowestWindowAfter != 5978 || g.OldPathCongestionEventsAfter != 1 ||
		g.LowestWindowAfterUS != 210000 || g.OldPathSendsAfter != 1 || g.OldPathLastSendAfterUS != 50000 || g.PatchSHA256 != "ab" ||
		g.Log != "data/evidence/msquic/instrumented/rep1/server.instrument.log.gz" {
		t.Errorf("figures %+v", g)
	}
	for _, want := range []string{"in 2 of 2 instrumented repetitions", "6 of 6 ACK frames", "and 0 updated the estimator", "(in 2 of 2:", "333.00 ms"} {
		if !strings.Contains(f.Statement, want) {
			t.Errorf("statement lacks %q: %s", want, f.Statement)
		}
	}
	if len(f.Evidence) != 0 || len(notes) != 4 || !strings.Contains(notes[0], "rep3 not used: its manifest records no instrumented build") ||
		!strings.Contains(notes[1], "rep4 not used: status INVALID") || !strings.Contains(notes[2], "no mirror") {
		t.Errorf("without a mirror: evidence %v, notes %v", f.Evidence, notes)
	}

	// A repetition whose log is missing is an error naming it.
	os.Remove(filepath.Join(root, "data", "evidence", "msquic", InstrumentedDir, "rep2", "server.instrument.log.gz"))
	if _, _, err := liveFindingsFor(o, pin, nil); err == nil || !strings.Contains(err.Error(), "rep2: an instrumented repetition without server.instrument.log.gz") {
		t.Errorf("missing log: err = %v", err)
	}
}

// TestFindingAnchorsAtPin: every anchor of the mechanism is found at the
// pinned commit, at the lines the issue cites (skipped without a mirror).
func TestFindingAnchorsAtPin(t *testing.T) {
	pin, err := data.Lookup("msquic")
	if err != nil {
		t.Fatal(err)
	}
	list := mirrors.Resolve("")
	if mirrorFor(list, pin.Upstream) == "" {
		t.Skip("no msquic mirror (set MIGAUDIT_MIRRORS)")
	}
	if _, err := anchorEvidence(Options{Mirrors: list}, pin, msquicProbeAnchors); err != nil {
		t.Fatal(err)
	}
	ev, err := anchorEvidence(Options{Mirrors: list}, pin, msquicRTTAnchors)
	if err != nil {
		t.Fatal(err)
	}
	if len(ev) != len(msquicRTTAnchors) {
		t.Fatalf("%d of %d anchors", len(ev), len(msquicRTTAnchors))
	}
	at := map[string]int{}
	for _, e := range ev {
		at[e.Kind] = e.Line
		if !strings.HasPrefix(e.Permalink, pin.Upstream+"/blob/"+pin.Commit+"/"+e.Path+"#L") {
			t.Errorf("permalink %s", e.Permalink)
		}
	}
	for kind, line := range map[string]int{"read": 1439, "gate": 1502, "consumer": 956, "field": 152, "path-id": 29, "fix-site": 417} {
		if at[kind] != line {
			t.Errorf("%s anchor at line %d, the issue cites %d", kind, at[kind], line)
		}
	}
}
