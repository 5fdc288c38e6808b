package validator

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// q2Golden is the discriminator's q2 of the quic-go fixture (as recorded,
// or with the server's PATH_CHALLENGE entering the link 150 ms earlier),
// written once by `migaudit analyze` on the capture the test rewrites
// (testdata/q2/README.md): the claims the validator re-derives.
type q2Golden struct {
	MigrationAtUS int64           `json:"migration_at_us"`
	ResetAtUS     int64           `json:"reset_at_us"`
	Vantage       string          `json:"vantage"`
	Q2            json.RawMessage `json:"q2"`
}

func readQ2Golden(t *testing.T, name string) q2Golden {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "q2", name))
	if err != nil {
		t.Fatal(err)
	}
	var g q2Golden
	if err := json.Unmarshal(b, &g); err != nil {
		t.Fatal(err)
	}
	return g
}

// q2Survey is the least entry the "q2" check reads: one pv-distinct
// repetition in live_scenarios.
func q2Survey(g q2Golden, q2 string) gjson.Result {
	return gjson.Parse(fmt.Sprintf(`{"name":"quic-go","constants":[{"name":"default_rtt","value":100}],
		"live_scenarios":[{"scenario":"pv-distinct","live":{"origin":"own-runs","repetitions":[
		{"id":"rep1","trace":"rep1/server.sqlog.gz","vantage":%q,"migration":{"kind":"path-change","at_us":%d},
		 "events":[{"kind":"RESET","at_us":%d}],"q2":%s}]}}]}`, g.Vantage, g.MigrationAtUS, g.ResetAtUS, q2))
}

// shiftArr moves a record's arr= (its entry into the link) earlier.
func shiftArr(t *testing.T, r fixtureRecord, ns int64) fixtureRecord {
	t.Helper()
	fs := strings.Fields(r.opts.Comments[0])
	for i, kv := range fs {
		if v, ok := strings.CutPrefix(kv, "arr="); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			fs[i] = fmt.Sprintf("arr=%d", n-ns)
		}
	}
	r.opts.Comments = []string{strings.Join(fs, " ")}
	return r
}

// The q2 check re-derives the discriminator's claims from the rewritten
// fixture (PASS) and FAILs each planted fault: a figure changed, an
// answer the round trips cannot give, the PATH_RESPONSE moved to the
// other path's interface, a first estimate the trace does not have.
func TestQ2PlantedFaults(t *testing.T) {
	const challengeRecord, responseRecord = 451, 470
	asRec := readQ2Golden(t, "as-recorded.json")
	early := readQ2Golden(t, "challenge-150ms-earlier.json")
	ifaces, recs := readFixtureRecords(t)
	trace, err := os.ReadFile(filepath.Join(wireFixture, "server.sqlog.gz"))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		golden q2Golden
		early  bool // the challenge entered the link 150 ms earlier
		move   int  // record moved to the other path's interface (0: none)
		q2     func(raw json.RawMessage) string
		status Status
		want   string
	}{
		{name: "as recorded", golden: asRec, status: Pass, want: "rep1: q2 UNKNOWN, round trips 31.5/43.4 ms not 2× apart"},
		{name: "challenge earlier: distinct, first estimate is the first sample", golden: early, early: true, status: Pass,
			want: "q2 UNKNOWN (validation 181.5 ms, data 43.8 ms on the wire; first estimate 43.2 ms is its own first sample"},
		{name: "pv_rtt_us changed", golden: early, early: true, q2: func(r json.RawMessage) string { return string(setJSON(t, r, 141504, "pv_rtt_us")) },
			status: Fail, want: "q2 pv_rtt_us 141504 µs, the wire gives 181504 µs"},
		{name: "data_rtt_us changed", golden: asRec, q2: func(r json.RawMessage) string { return string(setJSON(t, r, 40000, "data_rtt_us")) },
			status: Fail, want: "q2 data_rtt_us 40000 µs, the wire gives 43400 µs"},
		{name: "NO where the round trips are not 2× apart", golden: asRec, q2: func(r json.RawMessage) string { return string(setJSON(t, r, "NO", "answer")) },
			status: Fail, want: "q2 NO, but the validation round trip 31.5 ms is not 2× the data round trip 43.4 ms"},
		{name: "NO where the initial RTT is not in the trace", golden: early, early: true, q2: func(r json.RawMessage) string { return string(setJSON(t, r, "NO", "answer")) },
			status: Fail, want: "q2 NO, but first estimate 43.2 ms is its own first sample"},
		{name: "first estimate the trace does not have", golden: early, early: true, q2: func(r json.RawMessage) string { return string(setJSON(t, r, 100000, "first_rtt_after_us")) },
			status: Fail, want: "q2 first estimate after the reset 100000 µs is not the trace's"},
		{name: "PATH_RESPONSE moved to the other path", golden: early, early: true, move: responseRecord, status: Fail,
			want: "q2 detail names the PATH_RESPONSE in packet 138 (record 470, pathA); the capture has it in packet 138 (record 470, pathB)"},
		{name: "PATH_CHALLENGE moved to the other path", golden: asRec, move: challengeRecord, status: Fail,
			want: "(record 451, pathB); the capture has c4c8d36102f8a264 in packet 366 (record 451, pathA)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			edited := append([]fixtureRecord(nil), recs...)
			if tc.early {
				edited[challengeRecord-1] = shiftArr(t, edited[challengeRecord-1], 150_000_000)
			}
			if tc.move > 0 {
				r := edited[tc.move-1]
				r.ci.InterfaceIndex = 1 - r.ci.InterfaceIndex
				edited[tc.move-1] = r
			}
			root := t.TempDir()
			dir := filepath.Join(root, "rep1")
			writeRepetition(t, dir, ifaces, edited, fixtureKeyLog(t))
			if err := os.WriteFile(filepath.Join(dir, "server.sqlog.gz"), trace, 0o644); err != nil {
				t.Fatal(err)
			}
			q2 := string(tc.golden.Q2)
			if tc.q2 != nil {
				q2 = tc.q2(tc.golden.Q2)
			}
			im := q2Survey(tc.golden, q2)
			if !(check{"q2", checkQ2, "q2"}).applies(im) {
				t.Fatal("the q2 check does not apply to an entry with a q2")
			}
			st, found := checkQ2(New(Options{RepoRoot: root}), gjson.Result{}, im)
			if st != tc.status || !strings.Contains(found, tc.want) {
				t.Errorf("checkQ2 = %s %q\nwant %s containing %q", st, found, tc.status, tc.want)
			}
		})
	}
}

// q2Decide's rule on small figures: the value itself, or what the
// estimator held before the sample it carries.
func TestQ2Decide(t *testing.T) {
	cases := []struct {
		name         string
		srtt, latest int64
		want         string
	}{
		{"default, no sample", 100_000, 0, "NO"},
		{"validation round trip, no sample", 139_000, 0, "YES"},
		{"default averaged with a sample", 92_500, 40_000, "NO"},
		{"validation round trip averaged with a sample", 127_500, 40_000, "YES"},
		{"the first sample itself", 40_000, 40_000, "UNKNOWN"},
		{"the old path's estimate", 21_000, 0, "UNKNOWN"},
		{"neither", 300_000, 0, "NO"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, why := q2Decide(sample{SRTT: c.srtt, Latest: c.latest}, 140_000, 40_000, 100_000, 21_000)
			if got != c.want {
				t.Errorf("q2Decide = %s (%s), want %s", got, why, c.want)
			}
		})
	}
}

// A capture holds every IP packet the TUN devices carried, ICMP errors
// included (port unreachable after a run's connection closed, seen in a
// live pv-distinct capture): such a record is skipped, numbering kept, as
// parsers/wire skips it; a UDP record that is malformed still fails.
func TestWireSkipsICMP(t *testing.T) {
	ifaces, recs := readFixtureRecords(t)
	icmp := make([]byte, 28)
	icmp[0], icmp[9] = 0x45, 1 // IPv4, protocol ICMP
	icmp[3] = 28
	extra := recs[len(recs)-1]
	extra.data, extra.ci.CaptureLength, extra.ci.Length = icmp, len(icmp), len(icmp)
	edited := append(append([]fixtureRecord(nil), recs[:10]...), extra)
	edited = append(edited, recs[10:]...)
	dir := filepath.Join(t.TempDir(), "rep1")
	writeRepetition(t, dir, ifaces, edited, fixtureKeyLog(t))
	m, err := ReadWire(filepath.Join(dir, WireCaptureFile), filepath.Join(dir, WireKeyLogFile))
	if err != nil {
		t.Fatalf("an ICMP record: %v", err)
	}
	orig := readFixtureWire(t)
	if len(m.Sent[1]) != len(orig.Sent[1]) || len(m.Probes) != len(orig.Probes) {
		t.Errorf("with the ICMP record: %d server packets, %d probes; without: %d, %d", len(m.Sent[1]), len(m.Probes), len(orig.Sent[1]), len(orig.Probes))
	}
	if p := m.Probes[0]; p.Record != orig.Probes[0].Record+1 {
		t.Errorf("first probe at record %d, want %d (the skipped record keeps its number)", p.Record, orig.Probes[0].Record+1)
	}
	udp := append([]byte(nil), icmp...)
	udp[9] = 17 // UDP, but its header is cut
	extra.data = udp
	edited[10] = extra
	writeRepetition(t, dir, ifaces, edited, fixtureKeyLog(t))
	if _, err := ReadWire(filepath.Join(dir, WireCaptureFile), filepath.Join(dir, WireKeyLogFile)); err == nil || !strings.Contains(err.Error(), "record 11 ") {
		t.Errorf("a cut UDP record: %v, want an error naming record 11", err)
	}
}
