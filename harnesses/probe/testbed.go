package probe

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/migaudit/migaudit/harnesses/run"
	"github.com/migaudit/migaudit/harnesses/testbed"
)

// Servers the probe can start inside the testbed.
var testbedServers = []string{"quic-go", "ngtcp2"}

// TestbedOptions configure a probe of a server started in the testbed.
type TestbedOptions struct {
	// Impl is the server implementation: "quic-go" or "ngtcp2".
	Impl string
	// Refuse makes the server refuse migration (quic-go only).
	Refuse Refuse
	// Path is the request path.
	Path string
	// LogDir receives the server's stdout/stderr (ngtcp2); "" = a temp dir.
	LogDir      string
	StepTimeout time.Duration
}

const testbedPort = 4433

// InTestbed starts opt.Impl's server in tb's server namespace and probes it
// from the client namespace: the original path is path A, the IP migration
// moves to path B's address, the port migration stays on path A's address.
func InTestbed(ctx context.Context, tb *testbed.Testbed, opt TestbedOptions) (Result, error) {
	if opt.StepTimeout == 0 {
		opt.StepTimeout = 5 * time.Second
	}
	sctx, stop := context.WithCancel(ctx)
	defer stop()
	addr := net.JoinHostPort(tb.ServerAddr().String(), strconv.Itoa(testbedPort))
	var wait func() error
	switch opt.Impl {
	case "quic-go", "quicgo":
		ready := make(chan net.Addr, 1)
		errc := make(chan error, 1)
		so := ServerOptions{Listen: addr, Refuse: opt.Refuse, ListenPacket: func(a string) (net.PacketConn, error) {
			var pc net.PacketConn
			err := tb.InNS(tb.ServerNS(), func() (err error) {
				pc, err = net.ListenPacket("udp", a)
				return err
			})
			return pc, err
		}}
		go func() { errc <- Serve(sctx, so, ready) }()
		select {
		case <-ready:
		case err := <-errc:
			return Result{}, fmt.Errorf("quic-go server in %s: %w", tb.ServerNS(), err)
		}
		wait = func() error { stop(); return <-errc }
	case "ngtcp2":
		if opt.Refuse != RefuseNone {
			return Result{}, errors.New("ngtcp2's example server (gtlsserver) has no option to refuse migration; use --impl quic-go --refuse ip|all for a refusing server")
		}
		cleanup, err := startNgtcp2(sctx, tb, opt.LogDir)
		if err != nil {
			return Result{}, err
		}
		defer cleanup()
		wait = func() error { stop(); return nil }
	default:
		return Result{}, fmt.Errorf("--impl %q: the probe can start %s in the testbed", opt.Impl, strings.Join(testbedServers, " or "))
	}
	res, err := Run(ctx, Options{
		Target: addr, SNI: "localhost", Path: opt.Path,
		Local: tb.ClientAddrA().String(), Via: tb.ClientAddrB().String(),
		Insecure: true, StepTimeout: opt.StepTimeout,
		ListenUDP: func(a *net.UDPAddr) (*net.UDPConn, error) {
			var c *net.UDPConn
			err := tb.InNS(tb.ClientNS(), func() (err error) {
				c, err = net.ListenUDP("udp", a)
				return err
			})
			return c, err
		},
	})
	if werr := wait(); err == nil && werr != nil {
		err = werr
	}
	return res, err
}

// startNgtcp2 runs Debian's gtlsserver (ngtcp2 0.12.1) serving a 16 KiB
// index.html over HTTP/3 in the server namespace.
func startNgtcp2(ctx context.Context, tb *testbed.Testbed, logDir string) (func(), error) {
	bin, err := exec.LookPath("gtlsserver")
	if err != nil {
		return nil, errors.New("gtlsserver not found: install it with `apt-get install ngtcp2-server`")
	}
	if st, err := os.Stat(bin); err != nil || st.Size() == 0 {
		return nil, fmt.Errorf("%s is empty or unreadable: reinstall with `apt-get install --reinstall ngtcp2-server`", bin)
	}
	dir, err := os.MkdirTemp("", "migaudit-probe-ngtcp2-")
	if err != nil {
		return nil, err
	}
	cleanup := func() { os.RemoveAll(dir) }
	htdocs := filepath.Join(dir, "htdocs")
	if err := os.Mkdir(htdocs, 0o755); err != nil {
		cleanup()
		return nil, err
	}
	body := make([]byte, 16<<10)
	for i := range body {
		body[i] = byte('a' + i%26)
	}
	if err := os.WriteFile(filepath.Join(htdocs, "index.html"), body, 0o644); err != nil {
		cleanup()
		return nil, err
	}
	key, cert, err := run.WriteSelfSigned(dir)
	if err != nil {
		cleanup()
		return nil, err
	}
	if logDir == "" {
		logDir = dir
	}
	out, err := os.Create(filepath.Join(logDir, "gtlsserver.log"))
	if err != nil {
		cleanup()
		return nil, err
	}
	cmd := tb.Command(ctx, tb.ServerNS(), bin, "-q", "-d", htdocs,
		tb.ServerAddr().String(), strconv.Itoa(testbedPort), key, cert)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		out.Close()
		cleanup()
		return nil, fmt.Errorf("start gtlsserver in %s: %w", tb.ServerNS(), err)
	}
	// gtlsserver prints nothing with -q; give it a moment to bind, then
	// make sure it did not exit.
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	select {
	case <-exited:
		out.Close()
		b, _ := os.ReadFile(out.Name())
		cleanup()
		return nil, fmt.Errorf("gtlsserver exited at start: %s", strings.TrimSpace(string(b)))
	case <-time.After(300 * time.Millisecond):
	}
	return func() {
		if cmd.Process != nil {
			cmd.Process.Kill()
		}
		<-exited
		out.Close()
		cleanup()
	}, nil
}

// TestbedRun brings a standard testbed up, probes opt.Impl's server reps
// times and tears the testbed down (also on error).
func TestbedRun(ctx context.Context, opt TestbedOptions, reps int) (results []Result, err error) {
	if os.Geteuid() != 0 {
		return nil, errors.New("probing in the testbed needs root (network namespaces): run as root, or probe a server with --target")
	}
	tb, err := testbed.Up(ctx, testbed.Standard())
	if err != nil {
		return nil, fmt.Errorf("testbed up: %w", err)
	}
	defer func() {
		if derr := tb.Down(); derr != nil && err == nil {
			err = fmt.Errorf("testbed down: %w", derr)
		}
	}()
	for i := 0; i < reps; i++ {
		r, err := InTestbed(ctx, tb, opt)
		if err != nil {
			return results, err
		}
		r.Target = fmt.Sprintf("%s in testbed %s (%s)", opt.Impl, tb.Name(), r.Target)
		results = append(results, r)
	}
	return results, nil
}
