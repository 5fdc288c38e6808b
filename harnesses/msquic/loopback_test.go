package msquic

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/migaudit/migaudit/discriminator"
	"github.com/migaudit/migaudit/harnesses/run"
	"github.com/migaudit/migaudit/harnesses/upstream"
	"github.com/migaudit/migaudit/parsers"
)

// loopback is a run.Net without namespaces: path A 127.0.0.1, path B
// 127.0.0.2, the server 127.0.0.1, unshaped. It proves the harness's
// mechanics (the API move, both sides' view of it, the server's reset to
// the formula's window), not RTT attribution: both "paths" are loopback.
type loopback struct{}

func (loopback) ClientNS() string { return "" }
func (loopback) ServerNS() string { return "" }
func (loopback) ClientAddr(p run.Path) netip.Addr {
	if p == run.PathB {
		return netip.MustParseAddr("127.0.0.2")
	}
	return netip.MustParseAddr("127.0.0.1")
}
func (loopback) ServerAddr() netip.Addr { return netip.MustParseAddr("127.0.0.1") }
func (loopback) Command(ctx context.Context, _ string, name string, args ...string) *exec.Cmd {
	return exec.CommandContext(ctx, name, args...)
}
func (loopback) RouteVia(run.Path) error        { return nil }
func (loopback) PathRTT(run.Path) time.Duration { return 0 }
func (loopback) PathRate(run.Path) int64        { return 0 }
func (loopback) Counters() (map[run.Path]run.PathCounter, error) {
	return nil, errors.New("loopback has no per-path counters")
}

// builtHarness builds (or reuses) msquic at the pinned commit from the
// mirror, or skips: CI has no mirrors.
func builtHarness(t *testing.T) *Harness {
	t.Helper()
	m := os.Getenv("MIGAUDIT_MIRRORS")
	if m == "" {
		t.Skip("MIGAUDIT_MIRRORS not set: no msquic source to build (CI has no mirrors)")
	}
	src := filepath.Join(m, "microsoft+msquic", "repo")
	if _, err := os.Stat(src); err != nil {
		t.Skipf("no msquic mirror at %s", src)
	}
	if testing.Short() {
		t.Skip("-short: building msquic takes minutes on a cold cache")
	}
	h := New()
	h.Log = testWriter{t}
	if err := h.ConfigureUpstream(upstream.Options{Source: src}); err != nil {
		t.Fatal(err)
	}
	bins, err := h.Check(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range bins {
		if len(b.SHA256) != 64 || b.Size == 0 {
			t.Fatalf("binary %+v without sha256 or size", b)
		}
	}
	return h
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) { w.t.Log(string(p)); return len(p), nil }

func TestLoopbackScenarios(t *testing.T) {
	h := builtHarness(t)
	cases := []struct {
		sc        run.Scenario
		toHost    string
		wantKind  discriminator.MigrationKind
		wantReset bool
	}{
		// The server resets on an IP change (QuicPathSetActive) …
		{run.Standard, "127.0.0.2", discriminator.IPMigration, true},
		// … and deliberately not on a port-only change (src/core/path.c).
		{run.PortRebind, "127.0.0.1", discriminator.PortRebind, false},
	}
	for _, c := range cases {
		t.Run(string(c.sc), func(t *testing.T) {
			dir := t.TempDir()
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			// 20 Mbit/s assumed for sizing: 30 s → 67.5 MB, a few seconds
			// on loopback; the move comes 150 ms after the handshake.
			res, err := h.RunRep(ctx, run.RepEnv{Net: loopback{}, Scenario: c.sc, CC: "cubic", Transfer: 30 * time.Second,
				MigrateAt: 150 * time.Millisecond, Dir: dir, Index: 1})
			if err != nil {
				t.Fatal(err)
			}
			if !res.Completed {
				t.Fatalf("download incomplete: %d of %d bytes; notes %v", res.ReceivedBytes, res.BodyBytes, res.Notes)
			}
			if len(res.Moves) != 1 || hostOf(res.Moves[0].To) != c.toHost || res.Moves[0].From == res.Moves[0].To {
				t.Fatalf("client moves %+v, want one to a new port on %s", res.Moves, c.toHost)
			}
			if len(res.ServerSaw) == 0 || res.ServerSaw[0].To != res.Moves[0].To {
				t.Fatalf("server saw %+v, want the client's new address %s", res.ServerSaw, res.Moves[0].To)
			}
			mtu, ok := res.Params["MTU"]
			if !ok {
				t.Fatalf("no MTU parameter; notes %v", res.Notes)
			}
			an, err := discriminator.AnalyzeFile(filepath.Join(dir, res.ServerTrace), parsers.Options{},
				discriminator.Options{Impl: "msquic", Params: map[string]float64{"MTU": mtu.Value}})
			if err != nil {
				t.Fatal(err)
			}
			if an.Migration.Kind != c.wantKind {
				t.Fatalf("server trace: migration %s (%s), want %s", an.Migration.Kind, an.Migration.Evidence, c.wantKind)
			}
			if an.ResetObserved != c.wantReset {
				t.Errorf("server reset observed = %v, want %v: window %d → %d (%s)", an.ResetObserved, c.wantReset,
					an.WindowBeforeBytes, an.WindowAfterBytes, an.Q1.Reason)
			}
			if c.wantReset && an.WindowAfterBytes != 10*(int64(mtu.Value)-20-8) {
				t.Errorf("reset to %d B, want 10 × (%v − 28) from the formula", an.WindowAfterBytes, mtu.Value)
			}
		})
	}
}

func hostOf(a string) string {
	if h, _, err := net.SplitHostPort(a); err == nil {
		return h
	}
	return a
}
