package twosock_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/migaudit/migaudit/harnesses/lsquic"
	"github.com/migaudit/migaudit/harnesses/run/runtest"
	"github.com/migaudit/migaudit/harnesses/twosock"
	"github.com/migaudit/migaudit/harnesses/xquic"
)

// TestLiveStandard builds the pinned lsquic and xquic (with BoringSSL) from
// the mirrors and runs one short, uncalibrated standard repetition of each
// on the real testbed: it must be verified as an IP migration from both
// sides, complete, record the build (commit, BoringSSL commit, options,
// sha256) in its manifest, and leave a key log written by the server.
func TestLiveStandard(t *testing.T) {
	runtest.Live(t)
	runtest.Mirrors(t, "lsquic/xquic/boringssl mirrors")
	for _, newH := range []func(func(string)) *twosock.Harness{lsquic.New, xquic.New} {
		h := newH(func(s string) { t.Log(s) })
		t.Run(h.Name(), func(t *testing.T) { liveStandard(t, h) })
	}
}

func liveStandard(t *testing.T, h *twosock.Harness) {
	runtest.Configure(t, h)
	r, m := runtest.Standard(t, h, 8*time.Second, 3*time.Second, 15*time.Minute)
	if len(r.Verification.Evidence) < 3 {
		t.Errorf("want client, server and trace/counter confirmations, got %q", r.Verification.Evidence)
	}
	runtest.BuildRecord(t, m, "boringssl")
	if m.Result.KeyLogBy != "server" {
		t.Errorf("key log by %q, want server", m.Result.KeyLogBy)
	}
	if st, err := os.Stat(filepath.Join(r.Dir, "keylog.txt")); err != nil || st.Size() == 0 {
		t.Errorf("no key log written: %v", err)
	}
}
