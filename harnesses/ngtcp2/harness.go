// Package ngtcp2 is the live harness for ngtcp2: its own example programs
// gtlsserver and gtlsclient (GnuTLS), run inside the testbed's namespaces
// with qlog. By default they are built from the user's checkout at the
// pinned commit (or --commit), with nghttp3 (harnesses/upstream, build.go);
// --system runs Debian's ngtcp2 0.12.1 packages (ngtcp2-server,
// ngtcp2-client) instead.
//
// The example client migrates with --change-local-addr=<duration>, which
// opens a new socket bound to whichever local address the routing table
// picks for the server. Left alone that is path A again: a port-only change
// that RFC 9000 §9.4 exempts from the reset and that proves nothing. The
// harness therefore flips the client namespace's route to path B 250 ms
// before the timer fires and reads the client's own log line
// "Local address is now [<addr>]:<port>" to record where it went. Both the
// options and the log lines are the same in 0.12.1, v1.0.0 and v1.25.
package ngtcp2

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/migaudit/migaudit/harnesses/run"
	"github.com/migaudit/migaudit/harnesses/upstream"
)

const (
	// Port the server listens on inside the server namespace.
	Port = 4433
	// FlipLead is how long before the change-local-addr timer the route to
	// path B is installed.
	FlipLead = 250 * time.Millisecond
	// MaxUDPPayload is passed to gtlsserver as --max-udp-payload-size. It is
	// the value ngtcp2 0.12.1 uses by default (settings->max_tx_udp_payload_size
	// = 1500 - 48, lib/ngtcp2_conn.c ngtcp2_settings_default), given
	// explicitly so the constant formula's S is a setting of this run.
	MaxUDPPayload = 1452
	// SystemVersion is the Debian packages' ngtcp2 version --system runs.
	SystemVersion = "0.12.1"
	// InstallHint is what to run when the Debian binaries are missing.
	InstallHint = "apt-get install ngtcp2-client ngtcp2-server"
)

// Harness runs ngtcp2's example client and server: built from a checkout
// (the default) or Debian's (System).
type Harness struct {
	// System selects Debian's packages (Client and Server paths).
	System         bool
	Client, Server string // --system: /usr/bin/gtlsclient, /usr/sbin/gtlsserver

	log   func(string)
	mu    sync.Mutex
	opts  upstream.Options
	built *upstream.Artifact
	plan  *Plan
}

// New returns the harness that builds ngtcp2 from the checkout (mirror,
// --source) at the pin or --commit; log receives build progress lines.
func New() *Harness { return &Harness{log: func(string) {}} }

// NewSystem returns the harness that runs Debian's ngtcp2 0.12.1.
func NewSystem() *Harness {
	return &Harness{System: true, Client: "/usr/bin/gtlsclient", Server: "/usr/sbin/gtlsserver", log: func(string) {}}
}

// SetLog sends build progress lines to log.
func (h *Harness) SetLog(log func(string)) {
	if log != nil {
		h.log = log
	}
}

func (h *Harness) Name() string { return "ngtcp2" }

// UseSystemPackage switches to Debian's ngtcp2 0.12.1 (--system).
func (h *Harness) UseSystemPackage() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.System, h.Client, h.Server = true, "/usr/bin/gtlsclient", "/usr/sbin/gtlsserver"
	return nil
}

// ConfigureUpstream takes --source, --commit and --dep
// nghttp3|sfparse|urlparse=DIR[@COMMIT] and resolves them now, so a wrong
// one is reported before anything is built or brought up.
func (h *Harness) ConfigureUpstream(o upstream.Options) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.System {
		if o.Source != "" || o.Commit != "" || len(o.Deps) > 0 {
			return errors.New("--system runs Debian's ngtcp2 " + SystemVersion + " packages; --source, --commit and --dep choose a build from a checkout instead")
		}
		return nil
	}
	p, err := NewPlan(o)
	if err != nil {
		if upstream.IsNoSource(err) && o.Source == "" {
			return fmt.Errorf("%w (or run Debian's ngtcp2 %s with --system: %s)", err, SystemVersion, InstallHint)
		}
		return err
	}
	h.opts, h.plan, h.built = o, p, nil
	return nil
}

// ensure builds or reuses ngtcp2 for the configured options.
func (h *Harness) ensure(ctx context.Context) (*upstream.Artifact, *Plan, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.built != nil {
		return h.built, h.plan, nil
	}
	a, p, err := Ensure(ctx, h.opts, upstream.LineWriter(h.log))
	if err != nil {
		return nil, nil, err
	}
	h.built, h.plan = a, p
	return a, p, nil
}

// Capabilities: the example client changes its address once
// (--change-local-addr is a one-shot timer), so migrate-back cannot be run;
// the example programs' --cc choices.
func (h *Harness) Capabilities() run.Capabilities {
	return run.Capabilities{
		Scenarios: map[run.Scenario]string{run.Standard: "", run.StepDown: "", run.PortRebind: "", run.NATRebind: "", run.PVDistinct: "", run.Lossy: "",
			run.MigrateBack: "ngtcp2's example client changes its local address once (--change-local-addr arms a one-shot timer, examples/client.cc start_change_local_addr_timer, in 0.12.1 as in v1.25) and has no way to return to a previous address"},
		CCs: []string{"cubic", "reno", "bbr", "bbr2"}, DefaultCC: "cubic",
		CCWhy: "the choices of ngtcp2's gtlsserver/gtlsclient --cc",
	}
}

// Check verifies the executables: for a build, its cached outputs (built
// now if needed, sha256 against build.json); with --system, the Debian
// packages' versions against SystemVersion.
func (h *Harness) Check(ctx context.Context) (run.Binaries, error) {
	if h.System {
		return h.checkSystem(ctx)
	}
	a, _, err := h.ensure(ctx)
	if err != nil {
		return nil, err
	}
	ver, err := builtVersion(a)
	if err != nil {
		return nil, err
	}
	src := fmt.Sprintf("ngtcp2 %s (NGTCP2_VERSION, lib/includes/ngtcp2/version.h of the build), nghttp3 %s; build.json in %s", a.Commit, a.Deps["nghttp3"], a.Dir)
	var out run.Binaries
	for _, b := range []struct{ role, out string }{{"client", OutClient}, {"server", OutServer}, {"library", OutLib}, {"library", OutCrypto}, {"library", OutNghttp3}} {
		v := ver
		if b.out == OutNghttp3 {
			v = a.Deps["nghttp3"]
		}
		bin, err := run.FileBinary(b.role, a.Path(b.out), v, src)
		if err != nil && b.role == "library" {
			// Libraries are not executable; record them by hash alone.
			st, serr := os.Stat(a.Path(b.out))
			if serr != nil {
				return nil, serr
			}
			bin = run.Binary{Role: b.role, Path: a.Path(b.out), Size: st.Size(), SHA256: a.SHA256[b.out], Version: v, VersionSource: src}
			err = nil
		}
		if err != nil {
			return nil, err
		}
		if bin.SHA256 != a.SHA256[b.out] {
			return nil, fmt.Errorf("ngtcp2 %s %s has sha256 %s, build.json in %s records %s", b.role, bin.Path, bin.SHA256, a.Dir, a.SHA256[b.out])
		}
		out = append(out, bin)
	}
	return out, nil
}

var reVersionH = regexp.MustCompile(`#define NGTCP2_VERSION "([^"]+)"`)

// builtVersion is "<NGTCP2_VERSION>+<commit12>" of a build.
func builtVersion(a *upstream.Artifact) (string, error) {
	p := filepath.Join(a.BuildDir, "ngtcp2", "lib", "includes", "ngtcp2", "version.h")
	b, err := os.ReadFile(p)
	if err != nil {
		return "", fmt.Errorf("ngtcp2 build %s: %w", a.Dir, err)
	}
	m := reVersionH.FindSubmatch(b)
	if m == nil {
		return "", fmt.Errorf("%s defines no NGTCP2_VERSION", p)
	}
	return string(m[1]) + "+" + a.Commit[:12], nil
}

func (h *Harness) checkSystem(ctx context.Context) (run.Binaries, error) {
	want := SystemVersion
	var out run.Binaries
	for _, b := range []struct{ role, path, pkg string }{
		{"client", h.Client, "ngtcp2-client"},
		{"server", h.Server, "ngtcp2-server"},
	} {
		v, err := dpkgVersion(ctx, b.pkg)
		if err != nil {
			return nil, fmt.Errorf("ngtcp2 %s: %w; install with `%s`", b.role, err, InstallHint)
		}
		if !strings.HasPrefix(v, want+"+") && !strings.HasPrefix(v, want+"-") && v != want {
			return nil, fmt.Errorf("ngtcp2 %s: package %s is version %s, expected %s (--system); install with `%s`", b.role, b.pkg, v, want, InstallHint)
		}
		bin, err := run.FileBinary(b.role, b.path, v, "dpkg-query -W "+b.pkg)
		if err != nil {
			return nil, fmt.Errorf("ngtcp2: %w; reinstall with `apt-get install --reinstall %s`", err, b.pkg)
		}
		out = append(out, bin)
	}
	lib, err := dpkgVersion(ctx, "libngtcp2-9")
	if err == nil {
		out = append(out, run.Binary{Role: "library", Path: "libngtcp2-9", Version: lib, VersionSource: "dpkg-query -W libngtcp2-9"})
	}
	return out, nil
}

func dpkgVersion(ctx context.Context, pkg string) (string, error) {
	out, err := exec.CommandContext(ctx, "dpkg-query", "-W", "-f=${Status}|${Version}", pkg).Output()
	if err != nil {
		return "", fmt.Errorf("package %s is not installed", pkg)
	}
	parts := strings.SplitN(string(out), "|", 2)
	if len(parts) != 2 || !strings.Contains(parts[0], "installed") || strings.Contains(parts[0], "not-installed") {
		return "", fmt.Errorf("package %s is not installed (dpkg status %q)", pkg, parts[0])
	}
	return parts[1], nil
}

var (
	reLocal = regexp.MustCompile(`Local address is now (\S+)`)
	// reAssert is glibc's assert(3) message: "prog: file:line: func:
	// Assertion `expr' failed." (ngtcp2 keeps its assertions on in every
	// build type).
	reAssert = regexp.MustCompile("^(\\S+): (\\S+):(\\d+): ([^:]+): Assertion [`'](.*)' failed\\.$")
	reStream = regexp.MustCompile(` STREAM\(0x[0-9a-f]+\) id=0x0 fin=\d offset=(\d+) len=(\d+)`)
)

// RunRep runs one download with a migration.
func (h *Harness) RunRep(ctx context.Context, env run.RepEnv) (run.RepResult, error) {
	res := run.RepResult{Settings: map[string]string{}}
	cc, size, migrateAt := env.Plan.CC, env.Plan.BodyBytes, env.Plan.MigrateAt()
	if migrateAt <= FlipLead {
		return res, fmt.Errorf("migrate-at %s must exceed the %s route-flip lead", migrateAt, FlipLead)
	}
	bins, err := h.Check(ctx)
	if err != nil {
		return res, err
	}
	client, server := h.Client, h.Server
	for _, b := range bins {
		switch b.Role {
		case "server":
			server = b.Path
			res.Version = b.Version
			if h.System {
				res.Version = strings.SplitN(b.Version, "+", 2)[0]
			}
		case "client":
			client = b.Path
		}
	}
	sLine := "ngtcp2 " + SystemVersion + " recomputes the window from settings.max_tx_udp_payload_size at reset, lib/ngtcp2_conn.c conn_reset_conn_stat_cc"
	if h.System {
		res.Settings["build"] = "debian-package"
		// The packages are the v0.12.1 release: its tag, when a checkout
		// has it, is the code that ran (the constants are read there).
		if snap, err := upstream.Open(upstream.Source{Impl: "ngtcp2", Upstream: Upstream, Commit: "v" + SystemVersion}); err == nil {
			res.Settings[run.LiveCommitSetting] = snap.Commit()
		} else {
			res.Notes = append(res.Notes, "no ngtcp2 checkout with tag v"+SystemVersion+": the analysis uses the pin's constants ("+err.Error()+")")
		}
	} else {
		a, p, err := h.ensure(ctx)
		if err != nil {
			return res, err
		}
		for k, v := range settings(a, p) {
			res.Settings[k] = v
		}
		sLine = "ngtcp2 " + res.Version + ", built from " + a.Source
	}
	res.BodyBytes = size
	res.Settings["cc"] = cc
	res.Settings["max_udp_payload_size"] = strconv.Itoa(MaxUDPPayload)
	res.Settings["body_bytes"] = strconv.FormatInt(size, 10)
	res.Settings["change_local_addr"] = migrateAt.String()
	res.Settings["route_flip_lead"] = FlipLead.String()
	res.Params = map[string]run.Param{"S": {Value: MaxUDPPayload, Source: fmt.Sprintf("gtlsserver --max-udp-payload-size=%d (this run's setting; %s)", MaxUDPPayload, sLine)}}

	keyPath, certPath, err := run.WriteSelfSigned(env.Dir)
	if err != nil {
		return res, err
	}
	htdocs := filepath.Join(env.Dir, "htdocs")
	dl := filepath.Join(env.Dir, "download")
	for _, d := range []string{htdocs, dl, filepath.Join(env.Dir, "qlog-server"), filepath.Join(env.Dir, "qlog-client")} {
		if err := os.Mkdir(d, 0o755); err != nil {
			return res, err
		}
	}
	srvIP := env.Net.ServerAddr().String()
	res.Settings["route_at_start"] = "A" // the runner's doing

	srvArgs := []string{"-q", "--qlog-dir=" + filepath.Join(env.Dir, "qlog-server"), "--cc=" + cc,
		"--max-udp-payload-size=" + strconv.Itoa(MaxUDPPayload),
		"--max-dyn-length=" + strconv.FormatInt(size, 10),
		"-d", htdocs, "--timeout=30s",
		srvIP, strconv.Itoa(Port), keyPath, certPath}
	srvCmd := env.Net.Command(ctx, env.Net.ServerNS(), server, srvArgs...)
	if env.KeyLog != "" {
		// GnuTLS (not the example program) writes the NSS key log named by
		// SSLKEYLOGFILE.
		srvCmd.Env = append(os.Environ(), "SSLKEYLOGFILE="+env.KeyLog)
		res.KeyLogBy = "server"
	}
	srv, err := run.Start(run.ProcSpec{Role: "server", NS: env.Net.ServerNS(), Dir: env.Dir, Cmd: srvCmd})
	if err != nil {
		return res, err
	}
	defer srv.Kill()
	// gtlsserver -q prints nothing when ready; wait until its socket exists.
	if err := waitUDPListen(ctx, env, srvIP, Port, srv); err != nil {
		return res, err
	}

	var mu sync.Mutex
	var handshake time.Time
	handshook := make(chan struct{})
	var hsOnce sync.Once
	var lastOff int64
	var ignored int    // packets the client dropped as arriving on a path it no longer uses
	var aborted string // the client's upstream assertion, if it hit one
	cliArgs := []string{"--qlog-dir=" + filepath.Join(env.Dir, "qlog-client"), "--cc=" + cc,
		"--change-local-addr=" + strconv.FormatInt(migrateAt.Milliseconds(), 10) + "ms",
		"--no-quic-dump", "--no-http-dump", "--exit-on-all-streams-close",
		"--download=" + dl, "--timeout=30s"}
	if env.Scenario == run.NATRebind {
		cliArgs = append(cliArgs, "--nat-rebinding")
	}
	uri := fmt.Sprintf("https://%s/%d", net.JoinHostPort(srvIP, strconv.Itoa(Port)), size)
	cliArgs = append(cliArgs, srvIP, strconv.Itoa(Port), uri)
	cli, err := run.Start(run.ProcSpec{Role: "client", NS: env.Net.ClientNS(), Dir: env.Dir, GzipStderr: true, SaveStderr: SaveClientLine,
		Cmd: env.Net.Command(ctx, env.Net.ClientNS(), client, cliArgs...),
		OnStderr: func(line string) {
			if a, ok := UpstreamAssertion(line, res.Version); ok {
				mu.Lock()
				if aborted == "" {
					aborted = a
				}
				mu.Unlock()
				return
			}
			if strings.HasPrefix(line, "Negotiated cipher suite") {
				hsOnce.Do(func() {
					mu.Lock()
					handshake = time.Now()
					mu.Unlock()
					close(handshook)
				})
				return
			}
			if m := reLocal.FindStringSubmatch(line); m != nil {
				mu.Lock()
				res.Moves = append(res.Moves, run.AddrChange{At: time.Now(), To: m[1], Evidence: "gtlsclient: " + line})
				mu.Unlock()
				return
			}
			if strings.HasSuffix(line, "con ignore packet from unknown path") {
				mu.Lock()
				ignored++
				mu.Unlock()
				return
			}
			if strings.Contains(line, "STREAM(") {
				if m := reStream.FindStringSubmatch(line); m != nil {
					off, _ := strconv.ParseInt(m[1], 10, 64)
					n, _ := strconv.ParseInt(m[2], 10, 64)
					mu.Lock()
					if off+n > lastOff {
						lastOff = off + n
						if env.Progress != nil {
							env.Progress(min(lastOff, size), size)
						}
					}
					mu.Unlock()
				}
			}
		}})
	if err != nil {
		return res, err
	}
	defer cli.Kill()

	// Flip the client's main-table route to path B FlipLead before the
	// change-local-addr timer (armed at handshake completion) fires.
	flipErr := make(chan error, 1)
	go func() {
		select {
		case <-handshook:
		case <-cli.Done():
			flipErr <- errors.New("client exited before completing the handshake")
			return
		case <-ctx.Done():
			flipErr <- ctx.Err()
			return
		}
		if env.Scenario == run.PortRebind {
			flipErr <- nil // route stays on A: the new socket gets path A's address, a new port
			return
		}
		mu.Lock()
		at := handshake.Add(migrateAt - FlipLead)
		mu.Unlock()
		select {
		case <-time.After(time.Until(at)):
		case <-ctx.Done():
			flipErr <- ctx.Err()
			return
		}
		err := env.Net.RouteVia(run.PathB)
		mu.Lock()
		res.Notes = append(res.Notes, fmt.Sprintf("client route flipped to path B at %s (%s after the handshake line, %s before the change-local-addr timer)", time.Now().UTC().Format(time.RFC3339Nano), time.Since(handshake).Round(time.Millisecond), FlipLead))
		mu.Unlock()
		flipErr <- err
	}()

	crec := cli.Wait(env.Plan.ClientTimeout)
	ferr := <-flipErr
	// gtlsserver serves forever: give it a second to finish the closed
	// connection, then SIGINT (its handler ends the event loop and the qlog
	// is closed cleanly; SIGTERM would cut the last record).
	select {
	case <-srv.Done():
	case <-time.After(time.Second):
	}
	srv.Stop(syscall.SIGINT, 5*time.Second)
	srec := srv.Wait(time.Second)
	res.Processes = []run.Process{srec, crec}
	// The server kill is the harness's doing, not a failure.
	res.Processes[0].Killed = true

	if n := crec.StderrLinesDropped; n > 0 {
		res.Notes = append(res.Notes, fmt.Sprintf("client.stderr.gz keeps gtlsclient's log without its %d per-packet debug lines (frm, pkt, con, Sent/Received packet, timers): the qlog and the wire capture hold every packet", n))
	}
	if ignored > 0 {
		res.Notes = append(res.Notes, fmt.Sprintf("client logged %d × \"con ignore packet from unknown path\": after the change it drops what still arrives at its old address", ignored))
		if env.Scenario == run.NATRebind {
			res.Notes = append(res.Notes, "nat-rebind in a download: ngtcp2's example client (--nat-rebinding) switches its local address without sending anything; as a pure receiver it only sends in response to packets it accepts, and it now ignores every packet arriving at the old address, so unless an ACK is still pending nothing leaves the new address and the server never sees the rebinding")
		}
	}
	got := int64(-1)
	dlFile := filepath.Join(dl, strconv.FormatInt(size, 10))
	if st, err := os.Stat(dlFile); err == nil {
		got = st.Size()
		_ = os.Remove(dlFile) // tens of MB of generated bytes; only the size matters
		_ = os.Remove(dl)
		res.Notes = append(res.Notes, fmt.Sprintf("downloaded body %d bytes (file removed after measuring)", got))
	}
	res.ReceivedBytes = max(got, 0)
	res.Completed = crec.ExitCode == 0 && got == size

	mu.Lock()
	if aborted == "" {
		aborted, _ = assertionIn(filepath.Join(env.Dir, "server.stderr"), res.Version)
	}
	mu.Unlock()
	if aborted != "" && ctx.Err() == nil {
		// Whatever else the repetition shows, it ended in upstream code's
		// abort: say that, in one line, before any generic failure.
		st, ct, _ := findQlogs(env.Dir)
		res.ServerTrace, res.ClientTrace = st, ct
		return res, errors.New(aborted)
	}
	st, ct, err := findQlogs(env.Dir)
	if err != nil {
		return res, err
	}
	res.ServerTrace, res.ClientTrace = st, ct
	if ferr != nil && ctx.Err() == nil {
		return res, fmt.Errorf("route flip: %w", ferr)
	}
	if ctx.Err() != nil {
		return res, ctx.Err()
	}
	return res, nil
}

// reDebugPerPacket matches the example client's per-packet and per-frame
// debug lines (frm, pkt, con; the loss-detection timer; the socket's
// Sent/Received packet lines and the event loop's timers): 99 % of its
// log, 2.7–4.5 MB gzip'ed per repetition at the pin, and nothing in them
// that the qlog and the wire capture do not hold.
var reDebugPerPacket = regexp.MustCompile(`^(?:I\d+ 0x[0-9a-f]+ (?:frm|pkt|con) |I\d+ 0x[0-9a-f]+ ldc loss_detection_timer=|Sent packet: |Received packet: |Set timer=|Timer has already expired|\s*$)`)

// SaveClientLine says whether client.stderr keeps a line of gtlsclient's
// log: everything but its per-packet debug lines (the harness still reads
// those as they come, for progress and the count of packets it ignored).
func SaveClientLine(line string) bool { return !reDebugPerPacket.MatchString(line) }

// UpstreamAssertion reads a line of gtlsclient's or gtlsserver's stderr:
// when it is an assertion of ngtcp2's own code that aborted the program,
// the one-line account of it (the source path from lib/ or examples/ on,
// with its line, function and expression), naming the code that ran.
func UpstreamAssertion(line, version string) (string, bool) {
	m := reAssert.FindStringSubmatch(strings.TrimSpace(line))
	if m == nil {
		return "", false
	}
	prog, file := filepath.Base(m[1]), m[2]
	for _, top := range []string{"/lib/", "/examples/", "/crypto/", "/third-party/"} {
		if i := strings.LastIndex(file, top); i >= 0 {
			file = file[i+1:]
			break
		}
	}
	code := "ngtcp2"
	if version != "" {
		code += " " + version
	}
	return fmt.Sprintf("%s aborted on an assertion in %s's own code, %s:%s in %s (`%s` failed): an upstream bug in the code that ran, not the testbed's fault",
		prog, code, file, m[3], m[4], m[5]), true
}

// assertionIn is the first upstream assertion in a saved stderr file.
func assertionIn(path, version string) (string, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", false
	}
	for _, l := range strings.Split(string(b), "\n") {
		if a, ok := UpstreamAssertion(l, version); ok {
			return a, true
		}
	}
	return "", false
}

// findQlogs returns the single qlog each side wrote (named by connection id).
func findQlogs(dir string) (server, client string, err error) {
	pick := func(sub string) (string, error) {
		m, _ := filepath.Glob(filepath.Join(dir, sub, "*.sqlog"))
		if len(m) == 0 {
			m, _ = filepath.Glob(filepath.Join(dir, sub, "*"))
		}
		if len(m) != 1 {
			return "", fmt.Errorf("%s: expected exactly one qlog, found %d", filepath.Join(dir, sub), len(m))
		}
		rel, _ := filepath.Rel(dir, m[0])
		return rel, nil
	}
	if server, err = pick("qlog-server"); err != nil {
		return
	}
	client, err = pick("qlog-client")
	return
}

// waitUDPListen waits until something in the server namespace is bound to
// ip:port (read from /proc/net/udp inside the namespace).
func waitUDPListen(ctx context.Context, env run.RepEnv, ip string, port int, srv *run.Proc) error {
	deadline := time.Now().Add(10 * time.Second)
	hexPort := fmt.Sprintf(":%04X", port)
	for time.Now().Before(deadline) {
		out, _ := env.Net.Command(ctx, env.Net.ServerNS(), "cat", "/proc/net/udp").Output()
		if strings.Contains(string(out), hexPort) {
			return nil
		}
		select {
		case <-srv.Done():
			return fmt.Errorf("gtlsserver exited (code %d) before listening; see %s", srv.Record().ExitCode, filepath.Join(env.Dir, "server.stderr"))
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	return fmt.Errorf("gtlsserver not listening on %s:%d after 10 s", ip, port)
}

func init() {
	run.Register("ngtcp2", func() run.Harness {
		h := New()
		h.SetLog(func(s string) { fmt.Fprintln(os.Stderr, "migaudit: "+s) })
		return h
	})
}
