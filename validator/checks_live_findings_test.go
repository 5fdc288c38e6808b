package validator

import (
	"bytes"
	"compress/gzip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// The fixture log (testdata/instrumented/server.instrument.log, the same
// small log parsers/msquiclog tests) and the figures it gives: a switch from
// path 0 to path 1, three eligible ACKs after it, all gated as "different
// path", no update, two congestion events within the second.
const findingFixture = `{"name": "msquic", "live_findings": [{
  "id": "msquic-rtt-never-fed-after-path-switch",
  "statement": "… after it 3 of 3 ACK frames … were gated as NewLargestAckDifferentPath and 0 updated the estimator …",
  "requirement": "RFC 9002 §5.1", "evidence": [], "reproduction": "sudo migaudit run --impl msquic --instrument --reps 1",
  "repetitions": ["instrumented/rep1"],
  "figures": [{"repetition": "instrumented/rep1", "log": "data/evidence/msquic/instrumented/rep1/server.instrument.log.gz",
    "patch_sha256": "` + fixturePatch + `",
    "switch_unix_us": 1796300005090000, "new_path_id": 1, "prev_path_id": 0, "gates_before": 3, "updates_before": 2,
    "eligible_after": 3, "different_path_after": 3, "updates_after": 0,
    "ack_path_ids_after": {"1": 3}, "largest_path_ids_after": {"0": 3}, "srtt_after_us": 333000,
    "first_sent_on_new_pn": 5001, "first_sent_on_new_stamped_path_id": 0, "congestion_events_after": 2, "lowest_window_after": 5978,
    "old_path_congestion_events_after": 1, "lowest_window_after_us": 210000, "old_path_sends_after": 1, "old_path_last_send_after_us": 50000}]
}]}`

const fixturePatch = "1111111111111111111111111111111111111111111111111111111111111111"

// findingRepo writes a repository root holding the fixture repetition; log
// edits the log's text first.
func findingRepo(t *testing.T, instrumented string, log func(string) string) string {
	t.Helper()
	root := t.TempDir()
	dir := filepath.Join(root, "data", "evidence", "msquic", "instrumented", "rep1")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join("testdata", "instrumented", "server.instrument.log"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	if log != nil {
		text = log(text)
	}
	var z bytes.Buffer
	zw := gzip.NewWriter(&z)
	zw.Write([]byte(text))
	zw.Close()
	if err := os.WriteFile(filepath.Join(dir, "server.instrument.log.gz"), z.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	status := "VALID"
	if instrumented == "invalid" {
		status, instrumented = "INVALID", "true"
	}
	man := `{"status": "` + status + `", "result": {"settings": {"instrumented": "` + instrumented + `", "instrument_patch_sha256": "` + fixturePatch + `"}}}`
	if err := os.WriteFile(filepath.Join(dir, "manifest.json"), []byte(man), 0o644); err != nil {
		t.Fatal(err)
	}
	return root
}

func TestLiveFindingsPlantedFaults(t *testing.T) {
	set := func(v any, path ...any) func(string) string {
		return func(s string) string { return string(setJSON(t, []byte(s), v, path...)) }
	}
	cases := []struct {
		name         string
		survey       func(string) string
		log          func(string) string
		instrumented string
		want         Status
		says         string
	}{
		{name: "as derived", want: Pass},
		{name: "an update claimed away", log: func(s string) string {
			return strings.Replace(s, "largest_pn=5010 largest_path_id=0 retransmittable=1 different_path=1 update=0", "largest_pn=5010 largest_path_id=1 retransmittable=1 different_path=0 update=1", 1)
		}, want: Fail, says: "updates_after 1, the survey 0"},
		{name: "figure edited", survey: set(2, "live_findings", 0, "figures", 0, "different_path_after"), want: Fail, says: "different_path_after 3, the survey 2"},
		{name: "path ids edited", survey: set(map[string]int{"1": 3}, "live_findings", 0, "figures", 0, "largest_path_ids_after"), want: Fail, says: "largest_path_ids_after"},
		{name: "old-path losses edited", survey: set(2, "live_findings", 0, "figures", 0, "old_path_congestion_events_after"), want: Fail, says: "old_path_congestion_events_after 1, the survey 2"},
		{name: "a probe re-addressed", log: func(s string) string {
			return strings.Replace(s, "pn=0 send_path_id=0 stamped_path_id=0 local=198.18.0.1:4433 remote=198.18.1.2:40001", "pn=0 send_path_id=0 stamped_path_id=0 local=198.18.0.1:4433 remote=198.18.2.2:41615", 1)
		}, want: Fail, says: "old_path_congestion_events_after 0, the survey 1"},
		{name: "floor edited", survey: set(2440, "live_findings", 0, "figures", 0, "lowest_window_after"), want: Fail, says: "lowest_window_after 5978"},
		{name: "statement totals", survey: set("2 of 3 ACK frames and 0 updated the estimator", "live_findings", 0, "statement"), want: Fail, says: "statement does not say so"},
		{name: "probe finding as derived", survey: func(s string) string {
			s = set("msquic-old-path-probe-losses-cut-new-path-window", "live_findings", 0, "id")(s)
			return set("… 1 of 2 congestion events were started by the loss of a packet sent to the old address …", "live_findings", 0, "statement")(s)
		}, want: Pass},
		{name: "probe finding overstated", survey: func(s string) string {
			s = set("msquic-old-path-probe-losses-cut-new-path-window", "live_findings", 0, "id")(s)
			return set("… 2 of 2 congestion events were started by the loss of a packet sent to the old address …", "live_findings", 0, "statement")(s)
		}, want: Fail, says: `the logs give "1 of 2 congestion events"`},
		{name: "unknown finding", survey: set("msquic-something-else", "live_findings", 0, "id"), want: Fail, says: "no re-derivation"},
		{name: "probe count edited", survey: set(0, "live_findings", 0, "figures", 0, "old_path_sends_after"), want: Fail, says: "old_path_sends_after 1, the survey 0"},
		{name: "not a valid repetition", instrumented: "invalid", want: Fail, says: "is INVALID, not VALID"},
		{name: "not instrumented", instrumented: "false", want: Fail, says: "does not record an instrumented build"},
		{name: "unlisted repetition", survey: set([]string{"instrumented/rep2"}, "live_findings", 0, "repetitions"), want: Fail, says: "not among the finding's repetitions"},
		{name: "log outside its repetition", survey: set("data/evidence/msquic/rep1/server.instrument.log.gz", "live_findings", 0, "figures", 0, "log"), want: Fail, says: "not in the repetition's directory"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			inst := c.instrumented
			if inst == "" {
				inst = "true"
			}
			root := findingRepo(t, inst, c.log)
			doc := findingFixture
			if c.survey != nil {
				doc = c.survey(doc)
			}
			v := New(Options{RepoRoot: root})
			im := gjson.Parse(doc)
			st, found := checkLiveFindings(v, im, im)
			if st != c.want || (c.says != "" && !strings.Contains(found, c.says)) {
				t.Fatalf("status %v (%s), want %v naming %q", st, found, c.want, c.says)
			}
		})
	}
}
