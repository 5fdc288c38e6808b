// Package vethnet is a minimal two-path network for harness tests: two
// namespaces joined by two veth pairs, no rate or delay emulation, in
// 198.19.0.0/16 (inside the reserved 198.18.0.0/15, apart from the
// testbed's 198.18.0.0/16). It implements run.Net so a harness's processes
// can be exercised without the calibrated testbed; it is never used for a
// measurement.
package vethnet

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/migaudit/migaudit/harnesses/run"
)

// Net is an instance; create with Up, remove with Down.
type Net struct {
	cli, srv string
	mu       sync.Mutex
}

var (
	addrA  = netip.MustParseAddr("198.19.1.2")
	addrB  = netip.MustParseAddr("198.19.2.2")
	server = netip.MustParseAddr("198.19.0.1")
)

func sh(args ...string) error {
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// Up creates the namespaces (names carry tag and the pid so parallel test
// binaries do not collide).
func Up(tag string) (*Net, error) {
	if os.Geteuid() != 0 {
		return nil, fmt.Errorf("vethnet: needs root for network namespaces")
	}
	id := tag + strconv.Itoa(os.Getpid()%100000)
	n := &Net{cli: "mavt-" + id + "-c", srv: "mavt-" + id + "-s"}
	steps := [][]string{
		{"netns", "add", n.cli}, {"netns", "add", n.srv},
		{"-n", n.cli, "link", "add", "pa", "type", "veth", "peer", "name", "pa", "netns", n.srv},
		{"-n", n.cli, "link", "add", "pb", "type", "veth", "peer", "name", "pb", "netns", n.srv},
		{"-n", n.cli, "addr", "add", addrA.String() + "/24", "dev", "pa"},
		{"-n", n.cli, "addr", "add", addrB.String() + "/24", "dev", "pb"},
		{"-n", n.srv, "addr", "add", "198.19.1.1/24", "dev", "pa"},
		{"-n", n.srv, "addr", "add", "198.19.2.1/24", "dev", "pb"},
		{"-n", n.srv, "addr", "add", server.String() + "/32", "dev", "lo"},
		{"-n", n.cli, "link", "set", "lo", "up"}, {"-n", n.srv, "link", "set", "lo", "up"},
		{"-n", n.cli, "link", "set", "pa", "up"}, {"-n", n.cli, "link", "set", "pb", "up"},
		{"-n", n.srv, "link", "set", "pa", "up"}, {"-n", n.srv, "link", "set", "pb", "up"},
		{"-n", n.cli, "route", "add", server.String(), "via", "198.19.1.1", "dev", "pa", "src", addrA.String(), "table", "101"},
		{"-n", n.cli, "route", "add", server.String(), "via", "198.19.2.1", "dev", "pb", "src", addrB.String(), "table", "102"},
		{"-n", n.cli, "rule", "add", "from", addrA.String(), "lookup", "101", "pref", "100"},
		{"-n", n.cli, "rule", "add", "from", addrB.String(), "lookup", "102", "pref", "101"},
		{"-n", n.cli, "route", "add", server.String(), "via", "198.19.1.1", "dev", "pa", "src", addrA.String()},
	}
	for _, s := range steps {
		if err := sh(s...); err != nil {
			n.Down()
			return nil, err
		}
	}
	// tbf (no netem here) so a transfer lasts long enough to migrate in.
	for _, ns := range []string{n.cli, n.srv} {
		for _, dev := range []string{"pa", "pb"} {
			out, err := exec.Command("ip", "netns", "exec", ns, "tc", "qdisc", "add", "dev", dev, "root", "tbf",
				"rate", strconv.FormatInt(Rate, 10), "burst", "4000", "latency", "20ms").CombinedOutput()
			if err != nil {
				n.Down()
				return nil, fmt.Errorf("tc tbf on %s/%s: %v: %s", ns, dev, err, out)
			}
		}
	}
	time.Sleep(100 * time.Millisecond)
	return n, nil
}

// Down deletes both namespaces (idempotent).
func (n *Net) Down() {
	for _, ns := range []string{n.cli, n.srv} {
		if out, err := exec.Command("ip", "netns", "pids", ns).Output(); err == nil {
			for _, f := range strings.Fields(string(out)) {
				if pid, err := strconv.Atoi(f); err == nil {
					_ = exec.Command("kill", "-9", strconv.Itoa(pid)).Run()
				}
			}
		}
		_ = exec.Command("ip", "netns", "del", ns).Run()
	}
}

func (n *Net) ClientNS() string       { return n.cli }
func (n *Net) ServerNS() string       { return n.srv }
func (n *Net) ServerAddr() netip.Addr { return server }
func (n *Net) ClientAddr(p run.Path) netip.Addr {
	if p == run.PathB {
		return addrB
	}
	return addrA
}
func (n *Net) Command(ctx context.Context, ns, name string, args ...string) *exec.Cmd {
	return exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", ns, name}, args...)...)
}
func (n *Net) RouteVia(p run.Path) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if p == run.PathB {
		return sh("-n", n.cli, "route", "replace", server.String(), "via", "198.19.2.1", "dev", "pb", "src", addrB.String())
	}
	return sh("-n", n.cli, "route", "replace", server.String(), "via", "198.19.1.1", "dev", "pa", "src", addrA.String())
}
func (n *Net) PathRTT(p run.Path) time.Duration { return 0 }

// Rate is the tbf rate on every veth end, bit/s.
const Rate = 50_000_000

// PathRate is the tbf rate (no delay is emulated).
func (n *Net) PathRate(p run.Path) int64 { return Rate }

// Counters reads the client-side veth statistics.
func (n *Net) Counters() (map[run.Path]run.PathCounter, error) {
	out := map[run.Path]run.PathCounter{}
	for p, dev := range map[run.Path]string{run.PathA: "pa", run.PathB: "pb"} {
		read := func(f string) (int64, error) {
			b, err := exec.Command("ip", "netns", "exec", n.cli, "cat", "/sys/class/net/"+dev+"/statistics/"+f).Output()
			if err != nil {
				return 0, fmt.Errorf("read %s %s: %w", dev, f, err)
			}
			return strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		}
		var c run.PathCounter
		var err error
		if c.ToServerPackets, err = read("tx_packets"); err != nil {
			return nil, err
		}
		c.ToServerBytes, _ = read("tx_bytes")
		c.FromServerPackets, _ = read("rx_packets")
		c.FromServerBytes, _ = read("rx_bytes")
		out[p] = c
	}
	return out, nil
}
