package quinn_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/migaudit/migaudit/harnesses/quinn"
	"github.com/migaudit/migaudit/harnesses/run"
	"github.com/migaudit/migaudit/harnesses/run/runtest"
	"github.com/migaudit/migaudit/harnesses/upstream"
)

// TestLiveStandard builds the harness against Debian's quinn crates and runs
// one short, uncalibrated standard repetition on the real testbed: verified
// as an IP migration, complete, judged with the constants of the code that
// ran (tag 0.9.3), a reset at quinn 0.9's 12,320 B initial window seen.
// Run it under the heavy lock.
func TestLiveStandard(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: network namespaces and TUN devices")
	}
	if testing.Short() {
		t.Skip("-short: skips the live run")
	}
	if os.Getenv("MIGAUDIT_MIRRORS") == "" {
		t.Skip("MIGAUDIT_MIRRORS not set: no quinn mirror to compare Debian's crates with (CI has none)")
	}
	if _, err := os.Stat(filepath.Join(quinn.DebianRegistry, "quinn-0.9.3")); err != nil {
		t.Skip("Debian's quinn crates are not installed (apt-get install librust-quinn-dev …)")
	}
	h := quinn.New(func(s string) { t.Log(s) })
	if err := h.ConfigureUpstream(upstream.Options{}); err != nil {
		if upstream.IsNoSource(err) {
			t.Skip(err)
		}
		t.Fatal(err)
	}
	r, m := runtest.Standard(t, h, 8*time.Second, 3*time.Second, 20*time.Minute)
	if c := m.Result.Settings[run.LiveCommitSetting]; c != "7d1b280f550ac3a494fe3c2d92a539cec6d0b3b8" {
		t.Errorf("live commit %q, want tag 0.9.3's (settings %v)", c, m.Result.Settings)
	}
	var a struct {
		ResetObserved bool `json:"reset_observed"`
		Constants     []struct {
			Name  string  `json:"name"`
			Value float64 `json:"value"`
		} `json:"constants"`
	}
	b, err := os.ReadFile(filepath.Join(r.Dir, "analysis.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &a); err != nil {
		t.Fatal(err)
	}
	if len(a.Constants) == 0 || a.Constants[0].Name != "initial_window" || a.Constants[0].Value != 12320 || !a.ResetObserved {
		t.Errorf("analysis: reset %v, constants %+v", a.ResetObserved, a.Constants)
	}
}
