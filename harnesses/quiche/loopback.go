package quiche

import (
	"context"
	"errors"
	"net/netip"
	"os/exec"
	"time"

	"github.com/migaudit/migaudit/harnesses/run"
)

// Loopback is a run.Net without namespaces: the client's path A is
// 127.0.0.1, its path B 127.0.0.2 and the server 127.0.0.1, unshaped. It
// needs no privileges, so tests can run the harness end to end anywhere;
// with no delay difference between the paths it proves the mechanics (an IP
// change, per-path state), not the RTT attribution.
type Loopback struct{}

var _ run.Net = Loopback{}

func (Loopback) ClientNS() string { return "" }
func (Loopback) ServerNS() string { return "" }

func (Loopback) ClientAddr(p run.Path) netip.Addr {
	if p == run.PathB {
		return netip.MustParseAddr("127.0.0.2")
	}
	return netip.MustParseAddr("127.0.0.1")
}

func (Loopback) ServerAddr() netip.Addr { return netip.MustParseAddr("127.0.0.1") }

func (Loopback) Command(ctx context.Context, ns string, name string, args ...string) *exec.Cmd {
	return exec.CommandContext(ctx, name, args...)
}

func (Loopback) RouteVia(run.Path) error        { return nil }
func (Loopback) PathRTT(run.Path) time.Duration { return 0 }
func (Loopback) PathRate(run.Path) int64        { return 0 }
func (Loopback) Counters() (map[run.Path]run.PathCounter, error) {
	return nil, errors.New("loopback has no per-path counters")
}
