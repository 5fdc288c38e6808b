package picoquic_test

import (
	"testing"
	"time"

	"github.com/migaudit/migaudit/harnesses/picoquic"
	"github.com/migaudit/migaudit/harnesses/run/runtest"
)

// TestLiveStandard builds the pinned picoquic from the mirrors and runs one
// short, uncalibrated standard repetition on the real testbed: it must be
// verified as an IP migration from both sides, complete, and record the
// build (commit, picotls commit, options, sha256) in its manifest.
func TestLiveStandard(t *testing.T) {
	runtest.Live(t)
	runtest.Mirrors(t, "picoquic/picotls mirrors")
	h := picoquic.New(func(s string) { t.Log(s) })
	runtest.Configure(t, h)
	r, m := runtest.Standard(t, h, 8*time.Second, 3*time.Second, 15*time.Minute)
	if len(r.Verification.Evidence) < 3 {
		t.Errorf("want client, server and trace/counter confirmations, got %q", r.Verification.Evidence)
	}
	runtest.BuildRecord(t, m, "picotls")
	if m.Result.Params["S"].Value <= 0 {
		t.Errorf("no send size parameter: %+v", m.Result.Params)
	}
}
