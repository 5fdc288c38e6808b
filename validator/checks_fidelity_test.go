package validator

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// fidelityWorld is the fixture's quic-go entry alone, with its first
// repetition's manifest replaced by one the test plants.
func fidelityWorld(t *testing.T, manifest []byte) (*Validator, gjson.Result) {
	t.Helper()
	f := buildFixture(t)
	root := t.TempDir()
	qg := gjson.GetBytes(f.raw, `implementations.#(name=="quic-go")`)
	for _, rep := range qg.Get("live.repetitions").Array() {
		m := rep.Get("manifest").String()
		b, err := os.ReadFile(m)
		if err != nil {
			t.Fatal(err)
		}
		if rep.Get("id").String() == "rep1" && manifest != nil {
			b = manifest
		}
		if err := os.MkdirAll(filepath.Join(root, filepath.Dir(m)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, m), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return New(Options{RepoRoot: root}), qg
}

func TestFidelityCheck(t *testing.T) {
	base, err := os.ReadFile(filepath.Join("testdata", "evidence", "quic-go", "rep1", "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	const anchor = 1_000_000_000_000 // the fixture's emulator instant of path validation
	set := func(path string, v any) []byte {
		t.Helper()
		var keys []any
		for _, k := range strings.Split(path, ".") {
			keys = append(keys, k)
		}
		return setJSON(t, base, v, keys...)
	}
	addStall := func(at, late int64) []byte {
		t.Helper()
		stalls := gjson.GetBytes(base, "fidelity.repetition.stalls").Value().([]any)
		stalls = append(stalls, map[string]any{"at_ns": at, "late_ns": late})
		return setJSON(t, base, stalls, "fidelity", "repetition", "stalls")
	}
	// with applies several edits to the recorded manifest.
	with := func(edits ...func([]byte) []byte) []byte {
		b := base
		for _, e := range edits {
			b = e(b)
		}
		return b
	}
	put := func(v any, keys ...any) func([]byte) []byte {
		return func(b []byte) []byte { return setJSON(t, b, v, keys...) }
	}
	paths := put(map[string]any{"A": map[string]any{"rtt_us": 20000}, "B": map[string]any{"rtt_us": 40000}}, "paths")
	// sampleWin plants the window around the first RTT sample (40.6 ms in
	// the survey, new path 40 ms, old path 22.1 ms) with these worst
	// lateness figures and stalls.
	sampleWin := func(upNS, downNS int64, stalls ...int64) func([]byte) []byte {
		var st []any
		for i, l := range stalls {
			st = append(st, map[string]any{"at_ns": anchor + 90_000_000 + int64(i), "late_ns": l})
		}
		return put([]any{map[string]any{"from_ns": anchor + 80_000_000, "to_ns": anchor + 130_000_000, "sentinel_samples": 50, "stalls": st,
			"dirs": map[string]any{"A/up": map[string]any{"packets": 3, "late_max_ns": upNS}, "A/down": map[string]any{"packets": 3, "late_max_ns": downNS}}}},
			"fidelity", "rtt_sample_windows")
	}
	// crossUp plants both paths' client→server traffic: path A until
	// 60 ms after path validation, path B from it on.
	crossUp := func(aLate, bLate, bEarliest int64) func([]byte) []byte {
		return func(b []byte) []byte {
			b = setJSON(t, b, map[string]any{"packets": 40, "first_sent_ns": anchor - 40_000_000, "last_sent_ns": anchor + 60_000_000,
				"late_max_ns": aLate, "late_over_tolerance": 1, "earliest_late_ns": anchor + 50_000_000}, "fidelity", "window", "dirs", "A/up")
			return setJSON(t, b, map[string]any{"packets": 900, "first_sent_ns": anchor, "last_sent_ns": anchor + 1_900_000_000,
				"late_max_ns": bLate, "late_over_tolerance": 1, "earliest_late_ns": bEarliest}, "fidelity", "window", "dirs", "B/up")
		}
	}
	tests := []struct {
		name     string
		manifest []byte
		wantFail string // "" = PASS
	}{
		{"as recorded", nil, ""},
		// The reset follows path validation by about one RTT: a 25 ms
		// stall 30 ms after it is inside the reset window.
		{"stall inside the reset window", addStall(anchor+30_000_000, 25_000_000), "host stall of 25.0 ms in the reset window"},
		{"the same stall long before the migration", addStall(anchor-4_000_000_000, 25_000_000), ""},
		{"a short stall inside the window", addStall(anchor+30_000_000, 4_000_000), ""},
		// The fixture's first decrease after the migration is at 5.041 s
		// (41 ms after validation; the reset follows 2 ms later): the
		// reset window ends two 40 ms RTTs after it; a long stall 1.5 s on
		// is judged by the packets' lateness, not as a stall.
		{"a long stall late in the scope", addStall(anchor+1_500_000_000, 25_000_000), ""},
		// The first rule's 1 % / 2 packets is recorded, no longer a veto:
		// the recorded evidence holds 3 % late on the only path carrying
		// that direction, which nothing can overtake.
		{"3% of packets late on one path", set("fidelity.window.dirs.B/down.late_over_tolerance", 93), ""},
		// Cross-path: path A's packets may be 10 ms late (the one-way
		// difference) before path B's could overtake them; path B's only
		// the 1 ms tolerance while path A still carries traffic.
		{"fast path 9 ms late while the slow one carries traffic", with(paths, crossUp(9_000_000, 500_000, 0)), ""},
		{"fast path 12 ms late while the slow one carries traffic", with(paths, crossUp(12_000_000, 500_000, 0)),
			"path A/up: a packet 12.00 ms late (the whole window's worst) while path B/up carried traffic"},
		{"slow path 3 ms late while the fast one carries traffic", with(paths, crossUp(500_000, 3_000_000, anchor+20_000_000)),
			"path B/up: a packet 3.00 ms late (the whole window's worst) while path A/up carried traffic"},
		{"slow path 3 ms late only after the fast one stopped", with(paths, crossUp(500_000, 3_000_000, anchor+900_000_000)), ""},
		// Path A wrote 60 packets in the 130 ms span: more than 3 per
		// 10 ms, so path B's packets were overtaken by 3 already; only the
		// time threshold is left (22.5 − 10 ms, capped at 10 ms).
		{"slow path 3 ms late, the fast path dense there", with(paths, crossUp(500_000, 3_000_000, anchor+20_000_000),
			put([]any{map[string]any{"dir": "B/up", "other": "A/up", "from_ns": anchor - 40_000_000, "to_ns": anchor + 90_000_000, "late_max_ns": 3_000_000, "other_packets": 60, "measured": true}}, "fidelity", "cross_paths")), ""},
		{"slow path 3 ms late, the fast path neither sparse nor dense there", with(paths, crossUp(500_000, 3_000_000, anchor+20_000_000),
			put([]any{map[string]any{"dir": "B/up", "other": "A/up", "from_ns": anchor - 40_000_000, "to_ns": anchor + 90_000_000, "late_max_ns": 3_000_000, "other_packets": 20, "measured": true}}, "fidelity", "cross_paths")),
			"path B/up: a packet 3.00 ms late (measured over that span) while path A/up carried traffic (+0.010–+0.123 s into the verdict window, 20 packets there)"},
		// The same span with the emulator's order record (rule 3): no
		// packet over the 1 ms estimate was written out of its scheduled
		// order against path A's, so none could have been overtaken.
		{"slow path 3 ms late in that span, its order kept", with(paths, crossUp(500_000, 3_000_000, anchor+20_000_000),
			put([]any{map[string]any{"dir": "B/up", "other": "A/up", "from_ns": anchor - 40_000_000, "to_ns": anchor + 90_000_000, "late_max_ns": 3_000_000, "other_packets": 20, "measured": true,
				"order_checked": true, "order_changed_pairs": 1, "order_packets": 1, "order_late_max_ns": 200_000}}, "fidelity", "cross_paths")), ""},
		{"slow path 3 ms late in that span, and reordered", with(paths, crossUp(500_000, 3_000_000, anchor+20_000_000),
			put([]any{map[string]any{"dir": "B/up", "other": "A/up", "from_ns": anchor - 40_000_000, "to_ns": anchor + 90_000_000, "late_max_ns": 3_000_000, "other_packets": 20, "measured": true,
				"order_checked": true, "order_changed_pairs": 4, "order_packets": 1, "order_late_max_ns": 3_000_000}}, "fidelity", "cross_paths")),
			"path B/up: a packet 3.00 ms late while path A/up carried traffic, written out of its scheduled order against path A/up's packets (4 pairs"},
		{"slow path 11 ms late in that span, its order kept", with(paths, crossUp(500_000, 11_000_000, anchor+20_000_000),
			put([]any{map[string]any{"dir": "B/up", "other": "A/up", "from_ns": anchor - 40_000_000, "to_ns": anchor + 90_000_000, "late_max_ns": 11_000_000, "other_packets": 20, "measured": true,
				"order_checked": true}}, "fidelity", "cross_paths")),
			"its order kept: past the time threshold or the ACK clock's limit (10.00 ms)"},
		// The sample's up packet, 2.5 ms late, was due and written inside
		// the 2.6 ms stall: the stall, counted once (2.6 + 4 ms down =
		// 6.6 ms: 40.6 → 34 ms, still within 20 % of 40 ms; counted twice
		// it would reach 31.5 ms).
		{"a late packet inside a stall counts once", with(sampleWin(2_500_000, 4_000_000, 2_600_000), func(b []byte) []byte {
			return setJSON(t, b, int64(anchor+92_500_000), "fidelity", "rtt_sample_windows", 0, "dirs", "A/up", "late_max_at_ns")
		}), ""},
		{"a late packet outside the stall counts too", with(sampleWin(2_500_000, 4_000_000, 2_600_000), func(b []byte) []byte {
			return setJSON(t, b, int64(anchor+120_000_000), "fidelity", "rtt_sample_windows", 0, "dirs", "A/up", "late_max_at_ns")
		}), "the host may have added 9.10 ms (packets 2.50 ms late up + 4.00 ms down, stalls 2.60 ms)"},
		{"slow path late, its span measured within the tolerance", with(paths, crossUp(500_000, 3_000_000, anchor+20_000_000),
			put([]any{map[string]any{"dir": "B/up", "other": "A/up", "from_ns": anchor - 40_000_000, "to_ns": anchor + 90_000_000, "late_max_ns": 400_000, "measured": true}}, "fidelity", "cross_paths")), ""},
		// RTT sample: 40.6 ms reads new path (within 20 % of 40 ms) down
		// to 32 ms; below, it is nearer neither path: converging.
		{"a late packet and a stall that cannot move the RTT sample", with(sampleWin(1_300_000, 1_400_000, 2_600_000)), ""},
		{"lateness that could move the RTT sample's attribution", with(sampleWin(5_000_000, 4_000_000)),
			"RTT sample 1: 40.600 ms reads new-path, but 31.999 ms reads converging"},
		{"a stall that could move the RTT sample's attribution", with(sampleWin(0, 0, 9_000_000)),
			"and the host may have added 9.00 ms (packets 0.00 ms late up + 0.00 ms down, stalls 9.00 ms)"},
		// 9 ms from anchor + 75 ms: in the reset window but within its
		// 10 ms limit, and running 4 ms into the sample's window.
		{"a stall that began before the sample window and ran into it", with(sampleWin(0, 0), func(b []byte) []byte {
			stalls := gjson.GetBytes(b, "fidelity.repetition.stalls").Value().([]any)
			return setJSON(t, b, append(stalls, map[string]any{"at_ns": anchor + 75_000_000, "late_ns": 9_000_000}), "fidelity", "repetition", "stalls")
		}), "stalls 9.00 ms"},
		{"unmeasured sample window", with(put([]any{map[string]any{"from_ns": anchor, "to_ns": anchor + 1, "truncated": true}}, "fidelity", "rtt_sample_windows")),
			"RTT sample 1: the lateness around it was not measured"},
		{"rule named otherwise", set("fidelity.rule.name", "lenient/1"), `rule "lenient/1" is not`},
		{"cross-path limit loosened", with(paths, put(50_000_000, "fidelity", "rule", "fast_path_reorder_ns")), "fast_path_reorder_ns is 5e+07, looser"},
		{"rule loosened by the manifest", set("fidelity.rule.max_stall_ns", 50_000_000), "looser"},
		{"window ends before the scope", set("fidelity.window.to_ns", anchor+500_000_000), "does not cover"},
		{"anchor moved", set("fidelity.anchor.trace_us", 4_000_000), "anchor at trace"},
		{"sentinel not running", set("fidelity.window.sentinel_samples", 3), "host stalls unknown"},
		{"spoiled repetition counted", set("status", "SPOILED"), `status "SPOILED"`},
		{"no fidelity record", []byte(`{"status":"VALID"}`), "no fidelity record"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v, qg := fidelityWorld(t, tc.manifest)
			st, found := checkFidelity(v, gjson.Result{}, qg)
			if tc.wantFail == "" {
				if st != Pass {
					t.Fatalf("%s: %s", st, found)
				}
				return
			}
			if st != Fail || !strings.Contains(found, tc.wantFail) {
				t.Fatalf("%s %q, want FAIL naming %q", st, found, tc.wantFail)
			}
			t.Logf("caught: %s", found)
		})
	}
}

func TestSampleHolds(t *testing.T) {
	tests := []struct {
		name                   string
		val, old, newPath, def int64
		infl                   int64 // ns
		held                   bool
		x                      int64
		a                      string
	}{
		{"new path with margin", 40_600, 22_100, 40_000, 100_000, 3_000_000, true, 0, ""},
		{"new path, lateness reaching below its 20 % band", 40_600, 22_100, 40_000, 100_000, 9_000_000, false, 31_999, "converging"},
		{"old path, a 2.6 ms stall", 21_000, 20_000, 40_000, 100_000, 2_600_000, true, 0, ""},
		{"converging, lateness reaching nearer the old path", 31_000, 22_000, 40_000, 100_000, 1_500_000, false, 30_999, "old-path"},
		// msquic's estimator pinned at its 333 ms default: no sample, and
		// 1 ms below it is no longer "the default".
		{"pinned at the default", 333_000, 29_000, 40_000, 333_000, 1_400_000, true, 0, ""},
		{"no new path: undecided throughout", 35_000, 22_000, 0, 100_000, 5_000_000, true, 0, ""},
		{"no lateness", 32_000, 22_100, 40_000, 100_000, 0, true, 0, ""},
	}
	for _, tc := range tests {
		_, x, a, held := sampleHolds(tc.val, []int64{tc.old}, tc.newPath, tc.def, tc.infl)
		if held != tc.held || x != tc.x || a != tc.a {
			t.Errorf("%s: held %v at %d (%s), want %v at %d (%s)", tc.name, held, x, a, tc.held, tc.x, tc.a)
		}
	}
}
