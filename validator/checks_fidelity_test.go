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
		{"3% of packets late", set("fidelity.window.dirs.B/down.late_over_tolerance", 93), "93 of 3100 packets"},
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
