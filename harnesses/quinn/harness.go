// Package quinn is the live harness for quinn, built from Debian's crates:
// librust-quinn-dev 0.9.3 (quinn-proto 0.9.2, quinn-udp 0.3.2) and its
// dependencies as Rust source under /usr/share/cargo/registry, which cargo
// reads offline as a directory source. This project's own client and server
// (rust/) are compiled against them into the build cache
// (harnesses/upstream); the quinn tree at tag 0.9.3 (the commit the audit
// reads) is exported beside them and compared with Debian's crate sources.
//
// The client binds its endpoint to the path-A address and migrates with
// Endpoint::rebind to a socket bound to its path-B address: quinn's client
// has no path validation of its own, the server sees the new address and
// validates it. The server's trace comes from a congestion controller that
// wraps quinn's own and logs every call (parsers, format quinn-cc-log), and
// from a 1 ms poll of the connection's peer address.
package quinn

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/migaudit/migaudit/harnesses/picoquic"
	"github.com/migaudit/migaudit/harnesses/run"
	"github.com/migaudit/migaudit/harnesses/upstream"
)

const (
	// Port the server listens on inside the server namespace.
	Port = 4433
	// DefaultCC is quinn's own default: TransportConfig::default builds
	// CubicConfig::default (quinn-proto/src/config.rs).
	DefaultCC = "cubic"
	// ServerTrace is the server's trace file in the repetition directory.
	ServerTrace = "quinn-server.log"
)

// Harness builds the quinn harness and runs it.
type Harness struct {
	opts  upstream.Options
	log   func(string)
	mu    sync.Mutex
	built *upstream.Artifact
}

// New returns the harness; log receives build progress lines.
func New(log func(string)) *Harness {
	if log == nil {
		log = func(string) {}
	}
	return &Harness{log: log}
}

func (h *Harness) Name() string { return "quinn" }

// ConfigureUpstream takes --source and --commit: the quinn tree Debian's
// crate sources are compared with (default: tag 0.9.3 of the mirror).
// The code that runs is always Debian's crates.
func (h *Harness) ConfigureUpstream(o upstream.Options) error {
	if err := upstream.CheckDeps("quinn", o.Deps); err != nil {
		return err
	}
	c := o.Commit
	if c == "" {
		c = DebianTag
	}
	if _, err := upstream.Open(upstream.Source{Impl: "quinn", Upstream: Upstream, Dir: o.Source, Commit: c}); err != nil {
		return err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.opts, h.built = o, nil
	return nil
}

// Capabilities: every scenario. quinn's client has no path validation of
// its own, so nat-rebind (the server sees a new address the client did not
// validate) runs like standard.
func (h *Harness) Capabilities() run.Capabilities {
	sc := map[run.Scenario]string{}
	for _, s := range run.AllScenarios {
		sc[s] = ""
	}
	return run.Capabilities{Scenarios: sc, DefaultCC: DefaultCC, CCs: []string{"cubic", "newreno", "bbr"},
		CCAliases: map[string]string{"reno": "newreno"}}
}

func (h *Harness) ensure(ctx context.Context) (*upstream.Artifact, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.built != nil {
		return h.built, nil
	}
	a, err := Ensure(ctx, h.opts, logWriter(h.log))
	if err != nil {
		return nil, err
	}
	h.built = a
	return a, nil
}

type logWriter func(string)

func (w logWriter) Write(p []byte) (int, error) {
	for _, l := range strings.Split(strings.TrimRight(string(p), "\n"), "\n") {
		w(l)
	}
	return len(p), nil
}

// linked reads the build's Cargo.lock: the quinn crate versions it links.
func linked(a *upstream.Artifact) (map[string]string, error) {
	b, err := os.ReadFile(a.Path(Lockfile))
	if err != nil {
		return nil, err
	}
	return LockedVersions(b)
}

// Version is what ran: Debian's crate versions, from the build's Cargo.lock.
func Version(v map[string]string) string {
	return fmt.Sprintf("quinn %s (quinn-proto %s, quinn-udp %s, rustls %s; Debian crates)", v["quinn"], v["quinn-proto"], v["quinn-udp"], v["rustls"])
}

// Check builds (or finds in the cache, sha256-verified) the harness.
func (h *Harness) Check(ctx context.Context) (run.Binaries, error) {
	a, err := h.ensure(ctx)
	if err != nil {
		return nil, err
	}
	bin := a.Path(Binary)
	if _, err := version(ctx, bin); err != nil {
		return nil, err
	}
	v, err := linked(a)
	if err != nil {
		return nil, err
	}
	hb, err := run.FileBinary("harness", bin, Version(v), "Cargo.lock of the build in "+a.Dir+"; crates from "+DebianRegistry)
	if err != nil {
		return nil, err
	}
	return run.Binaries{hb}, nil
}

func settings(a *upstream.Artifact) map[string]string {
	s := map[string]string{
		"compared_commit": a.Commit,
		"compared_source": a.Source,
		"build_options":   strings.Join(a.Options, " "),
		"build_dir":       a.Dir,
		"harness_sha256":  a.SHA256[Binary],
		"build_recipe":    a.Recipe,
		"crate_registry":  DebianRegistry,
	}
	if b, err := os.ReadFile(a.Path(SourceCheck)); err == nil {
		s["debian_vs_commit"] = strings.TrimSpace(string(b))
		if SourcesMatch(b) {
			// The code that ran is this commit's: the analysis uses the
			// constants the audit wrote at it.
			s[run.LiveCommitSetting] = a.Commit
		}
	}
	var tools []string
	for k, v := range a.Tools {
		tools = append(tools, k+"="+v)
	}
	sort.Strings(tools)
	s["build_tools"] = strings.Join(tools, "; ")
	return s
}

// SourcesMatch reports whether the build's source comparison found every
// quinn crate's src/ identical to the commit's, or differing only in test
// code (Debian's patch adds a #[cfg] to one test in pacing.rs).
func SourcesMatch(report []byte) bool {
	lines := strings.Split(strings.TrimSpace(string(report)), "\n")
	if len(lines) != len(crates) {
		return false
	}
	for _, l := range lines {
		if !strings.Contains(l, ": src/ identical") && !strings.HasSuffix(l, "files: connection/pacing.rs") {
			return false
		}
	}
	return true
}

func migrationAPI(sc run.Scenario) string {
	switch sc {
	case run.PortRebind:
		return "Endpoint::rebind to a new socket on the path-A address (new port)"
	case run.MigrateBack:
		return "Endpoint::rebind to a socket on the path-B address, then to a new socket on the path-A address"
	case run.NATRebind:
		return "Endpoint::rebind to a socket on the path-B address (quinn's client never validates a path: to the server this is a NAT rebinding)"
	}
	return "Endpoint::rebind to a socket bound to the path-B address"
}

// RunRep runs one download with a migration.
func (h *Harness) RunRep(ctx context.Context, env run.RepEnv) (run.RepResult, error) {
	res := run.RepResult{Settings: map[string]string{}}
	a, err := h.ensure(ctx)
	if err != nil {
		return res, err
	}
	for k, v := range settings(a) {
		res.Settings[k] = v
	}
	if v, err := linked(a); err == nil {
		res.Version = Version(v)
	}
	bin := a.Path(Binary)
	size := env.Plan.BodyBytes
	res.BodyBytes = size
	res.Settings["cc"] = env.Plan.CC
	res.Settings["body_bytes"] = strconv.FormatInt(size, 10)
	res.Settings["migrate_at"] = env.Plan.MigrateAt().String()
	res.Settings["migration_api"] = migrationAPI(env.Scenario)

	keyPath, certPath, err := run.WriteSelfSigned(env.Dir)
	if err != nil {
		return res, err
	}
	srvIP := env.Net.ServerAddr().String()
	timeout := env.Plan.ClientGiveUp

	var mu sync.Mutex
	var parseErrs []string
	listening := make(chan struct{})
	var lOnce sync.Once
	onEvent := func(role string, handle func(picoquic.Event)) func(string) {
		return func(line string) {
			ev, ok, err := picoquic.ParseEvent(line)
			if !ok {
				return
			}
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				parseErrs = append(parseErrs, role+": "+err.Error())
				return
			}
			handle(ev)
		}
	}
	var served int64 = -1
	scmd := env.Net.Command(ctx, env.Net.ServerNS(), bin, "server", "--addr", srvIP, "--port", strconv.Itoa(Port),
		"--cert", certPath, "--key", keyPath, "--cc", env.Plan.CC, "--body", strconv.FormatInt(size, 10),
		"--trace", filepath.Join(env.Dir, ServerTrace), "--timeout-ms", strconv.FormatInt(timeout.Milliseconds(), 10))
	if env.KeyLog != "" {
		scmd.Env = append(os.Environ(), "SSLKEYLOGFILE="+env.KeyLog) // rustls KeyLogFile
		res.KeyLogBy = "server"
	}
	srv, err := run.Start(run.ProcSpec{Role: "server", NS: env.Net.ServerNS(), Dir: env.Dir, Cmd: scmd,
		OnStdout: onEvent("server", func(ev picoquic.Event) {
			switch ev.Name {
			case "listening":
				lOnce.Do(func() { close(listening) })
			case "peer":
				if ev.Fields["from"] != "none" {
					res.ServerSaw = append(res.ServerSaw, run.AddrChange{At: ev.At, From: ev.Fields["from"], To: ev.Fields["to"],
						Evidence: "quinn-harness server: Connection::remote_address() changed: " + ev.Line})
				}
			case "served":
				served = ev.Int("bytes")
			case "error":
				res.Notes = append(res.Notes, "server: "+ev.Line)
			}
		})})
	if err != nil {
		return res, err
	}
	defer srv.Kill()
	if err := srv.AwaitReady(ctx, listening, "quinn-harness server", filepath.Join(env.Dir, "server.stderr"), 10*time.Second); err != nil {
		return res, err
	}

	var received int64
	var fin bool
	cli, err := run.Start(run.ProcSpec{Role: "client", NS: env.Net.ClientNS(), Dir: env.Dir,
		Cmd: env.Net.Command(ctx, env.Net.ClientNS(), bin, "client", "--addr", srvIP, "--port", strconv.Itoa(Port),
			"--local-a", env.Net.ClientAddr(run.PathA).String(), "--local-b", env.Net.ClientAddr(run.PathB).String(),
			"--scenario", string(env.Scenario),
			"--migrate-at-ms", strconv.FormatInt(env.Plan.MigrateAt().Milliseconds(), 10),
			"--back-after-ms", strconv.FormatInt(max(env.Plan.BackAfter(), 5*time.Second).Milliseconds(), 10),
			"--timeout-ms", strconv.FormatInt(timeout.Milliseconds(), 10)),
		OnStdout: onEvent("client", func(ev picoquic.Event) {
			switch ev.Name {
			case "start":
				res.Settings["client_first_socket"] = ev.Fields["local"]
			case "local":
				res.Moves = append(res.Moves, run.AddrChange{At: ev.At, From: ev.Fields["from"], To: ev.Fields["to"],
					Evidence: "quinn-harness client: " + ev.Line + "; Endpoint::local_addr() after Endpoint::rebind is " + ev.Fields["to"]})
			case "progress", "done":
				if n := ev.Int("received"); n >= 0 {
					received = n
				}
				if ev.Name == "done" {
					fin = ev.Int("fin") == 1
				}
				if env.Progress != nil {
					env.Progress(min(received, size), size)
				}
			case "error":
				res.Notes = append(res.Notes, "client: "+ev.Line)
			}
		})})
	if err != nil {
		return res, err
	}
	defer cli.Kill()
	crec := cli.Wait(env.Plan.ClientTimeout)
	// The server waits up to 10 s for the client's close, then flushes its
	// trace and exits.
	srec, note := srv.AwaitExit("server", 20*time.Second, syscall.SIGTERM, 10*time.Second)
	if note != "" {
		res.Notes = append(res.Notes, note)
	}
	res.Processes = []run.Process{srec, crec}

	mu.Lock()
	res.ReceivedBytes = received
	res.Completed = crec.ExitCode == 0 && fin && received == size
	if served >= 0 {
		res.Notes = append(res.Notes, fmt.Sprintf("server served %d bytes", served))
	}
	res.Notes = append(res.Notes, parseErrs...)
	mu.Unlock()
	if _, err := os.Stat(filepath.Join(env.Dir, ServerTrace)); err != nil {
		return res, fmt.Errorf("quinn-harness server wrote no trace: %w (see %s)", err, filepath.Join(env.Dir, "server.stderr"))
	}
	res.ServerTrace = ServerTrace
	if len(parseErrs) > 0 {
		return res, fmt.Errorf("quinn-harness printed malformed event lines: %s", parseErrs[0])
	}
	if ctx.Err() != nil {
		return res, ctx.Err()
	}
	return res, nil
}

func init() {
	run.Register("quinn", func() run.Harness {
		return New(func(s string) { fmt.Fprintln(os.Stderr, "migaudit: "+s) })
	})
}
