package testbed

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Prefix starts every namespace name a testbed creates; stale detection and
// `down --all-stale` touch nothing else.
const Prefix = "migaudit-"

// netnsDir is where `ip netns` keeps its named namespaces.
const netnsDir = "/run/netns"

func clientNS(name string) string { return Prefix + name + "-cli" }
func serverNS(name string) string { return Prefix + name + "-srv" }

// Preflight reports, in one line, why a testbed cannot be built here.
func Preflight() error {
	if os.Geteuid() != 0 {
		return errors.New("testbed needs root (network namespaces, TUN devices, routing): run as root")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		return errors.New("testbed needs the ip command (iproute2): apt-get install iproute2")
	}
	if _, err := os.Stat("/proc/self/ns/net"); err != nil {
		return fmt.Errorf("kernel has no network namespaces (/proc/self/ns/net: %v)", err)
	}
	fd, err := unix.Open("/dev/net/tun", unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("TUN unavailable: open /dev/net/tun: %v (modprobe tun, or give the container /dev/net/tun)", err)
	}
	unix.Close(fd)
	return nil
}

// ip runs one iproute2 command and returns its error with stderr on one line.
func ip(args ...string) error {
	_, err := ipOut(args...)
	return err
}

func ipOut(args ...string) ([]byte, error) {
	cmd := exec.Command("ip", args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		msg := strings.TrimSpace(strings.ReplaceAll(stderr.String(), "\n", "; "))
		return out, fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, msg)
	}
	return out, nil
}

// nsExists reports whether a named namespace is mounted.
func nsExists(ns string) bool {
	_, err := os.Stat(netnsDir + "/" + ns)
	return err == nil
}

// InNS runs fn on an OS thread that has entered network namespace ns
// (a name under /run/netns). Sockets fn creates stay in ns for their whole
// life, whichever goroutine uses them afterwards.
func InNS(ns string, fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		// Only unlock if the thread is back in its own namespace; otherwise
		// the runtime discards the thread when this goroutine exits.
		orig, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			errc <- fmt.Errorf("enter %s: %w", ns, err)
			return
		}
		defer unix.Close(orig)
		target, err := unix.Open(netnsDir+"/"+ns, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("enter namespace %s: %w", ns, err)
			return
		}
		defer unix.Close(target)
		if err := unix.Setns(target, unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("enter namespace %s: setns: %w", ns, err)
			return
		}
		ferr := fn()
		if unix.Setns(orig, unix.CLONE_NEWNET) == nil {
			runtime.UnlockOSThread()
		}
		errc <- ferr
	}()
	return <-errc
}

// openTUN creates TUN device name (IFF_TUN|IFF_NO_PI) in namespace ns and
// returns its nonblocking descriptor. The device lives as long as the
// descriptor: a crashed holder leaves no device behind.
func openTUN(ns, name string) (int, error) {
	fd := -1
	err := InNS(ns, func() error {
		var err error
		fd, err = unix.Open("/dev/net/tun", unix.O_RDWR|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
		if err != nil {
			return fmt.Errorf("open /dev/net/tun: %w", err)
		}
		ifr, err := unix.NewIfreq(name)
		if err != nil {
			return err
		}
		ifr.SetUint16(unix.IFF_TUN | unix.IFF_NO_PI)
		if err := unix.IoctlIfreq(fd, unix.TUNSETIFF, ifr); err != nil {
			unix.Close(fd)
			fd = -1
			return fmt.Errorf("TUNSETIFF %s: %w", name, err)
		}
		return nil
	})
	if err != nil {
		return -1, fmt.Errorf("create TUN %s in %s: %w", name, ns, err)
	}
	return fd, nil
}

// nsPids lists the processes in namespace ns.
func nsPids(ns string) []int {
	out, err := exec.Command("ip", "netns", "pids", ns).Output()
	if err != nil {
		return nil
	}
	var pids []int
	for _, f := range strings.Fields(string(out)) {
		var p int
		if _, err := fmt.Sscan(f, &p); err == nil && p > 0 && p != os.Getpid() {
			pids = append(pids, p)
		}
	}
	return pids
}

// removeNS kills every process in ns (TERM, then KILL after grace) and
// deletes it. A missing namespace is not an error.
func removeNS(ns string, grace time.Duration) error {
	if !nsExists(ns) {
		return nil
	}
	pids := nsPids(ns)
	for _, p := range pids {
		_ = unix.Kill(p, unix.SIGTERM)
	}
	deadline := time.Now().Add(grace)
	for len(pids) > 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
		pids = nsPids(ns)
	}
	for _, p := range pids {
		_ = unix.Kill(p, unix.SIGKILL)
	}
	if err := ip("netns", "del", ns); err != nil && nsExists(ns) {
		return err
	}
	return nil
}

// command builds `ip netns exec ns name args...`.
func command(ctx context.Context, ns, name string, args ...string) *exec.Cmd {
	return exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", ns, name}, args...)...)
}
