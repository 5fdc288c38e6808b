// Package lsquic is the live harness for lsquic, built from the user's
// upstream checkout (harnesses/upstream): BoringSSL from its own checkout
// (harnesses/boringssl, --dep boringssl=DIR[@COMMIT]), liblsquic at the
// chosen commit with its ls-qpack and ls-hpack submodules from their
// mirrors, and this project's own client and server (csrc/lsqharness.c)
// linked against them.
//
// lsquic has no API for a client to move a connection to another local
// address: its client migrates only to a server's preferred_address
// (try_to_begin_migration, src/liblsquic/lsquic_full_conn_ietf.c). It does
// handle a datagram arriving on another local address: the connection
// records a new path (ietf_full_conn_ci_record_addrs), validates it and
// switches to it (switch_path_to). So at MigrateAt the client sends every
// datagram from its socket bound to the path-B address and hands what
// arrives there to lsquic_engine_packet_in with that local address; the
// server sees the new peer address, validates it and moves. Both sides
// report what lsquic_conn_get_sockaddr says, and print
// lsquic_conn_get_info every 5 ms and lsquic's own log (parsers' lsquic-log
// format). The server writes the TLS secrets (BoringSSL's keylog callback
// on its SSL_CTX).
package lsquic

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
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
	// DefaultCC is lsquic's own default, es_cc_algo 0 = LSQUIC_DF_CC_ALGO 3
	// (adaptive: BBRv1 until the first RTT sample, then Cubic if the
	// smoothed RTT is at most es_cc_rtt_thresh = 1500 µs, else BBRv1;
	// include/lsquic.h and lsquic_send_ctl.c at the pinned commit).
	DefaultCC = "adaptive"
)

// Harness builds lsquic from source and runs lsqharness.
type Harness struct {
	opts  upstream.Options
	log   func(string)
	mu    sync.Mutex
	built *Built
}

// New returns the harness; log receives build progress lines.
func New(log func(string)) *Harness {
	if log == nil {
		log = func(string) {}
	}
	return &Harness{log: log}
}

func (h *Harness) Name() string { return "lsquic" }

// ConfigureUpstream takes --source, --commit and --dep
// boringssl|ls-qpack|ls-hpack=DIR[@COMMIT].
func (h *Harness) ConfigureUpstream(o upstream.Options) error {
	if err := upstream.CheckDeps("lsquic", o.Deps, Deps...); err != nil {
		return err
	}
	if _, err := upstream.Open(upstream.Source{Impl: "lsquic", Upstream: Upstream, Dir: o.Source, Commit: o.Commit}); err != nil {
		return err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.opts, h.built = o, nil
	return nil
}

// Capabilities: the client changes its IP address once.
func (h *Harness) Capabilities() run.Capabilities {
	return run.Capabilities{
		Scenarios: map[run.Scenario]string{
			run.Standard: "", run.StepDown: "", run.NATRebind: "",
			run.PortRebind:  "lsquic has no client API to change its local address (its client migrates only to a server's preferred_address); the harness moves the connection to the path-B socket, which changes the IP, not only the port",
			run.MigrateBack: "the harness moves the client once (to the path-B socket); a return to path A is not implemented",
		},
		DefaultCC: DefaultCC,
		CCs:       []string{"adaptive", "cubic", "bbr"},
		CCAliases: map[string]string{"bbr1": "bbr", "bbrv1": "bbr"},
		CCWhy:     "lsquic's es_cc_algo selects Cubic (1), BBRv1 (2) or adaptive (3, the default)",
	}
}

func (h *Harness) ensure(ctx context.Context) (*Built, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.built != nil {
		return h.built, nil
	}
	b, err := Ensure(ctx, h.opts, logWriter(h.log))
	if err != nil {
		return nil, err
	}
	h.built = b
	return b, nil
}

type logWriter func(string)

func (w logWriter) Write(p []byte) (int, error) {
	for _, l := range strings.Split(strings.TrimRight(string(p), "\n"), "\n") {
		w(l)
	}
	return len(p), nil
}

// Check builds (or finds in the cache, sha256-verified) BoringSSL, lsquic
// and the harness, and returns the harness binary and the libraries.
func (h *Harness) Check(ctx context.Context) (run.Binaries, error) {
	b, err := h.ensure(ctx)
	if err != nil {
		return nil, err
	}
	bin := b.Harness.Path(Binary)
	out, err := exec.CommandContext(ctx, bin, "version").Output()
	if err != nil {
		return nil, fmt.Errorf("lsquic harness %s version: %w", bin, err)
	}
	ver := strings.TrimSpace(string(out))
	if !strings.HasPrefix(ver, "lsquic ") {
		return nil, fmt.Errorf("lsquic harness %s version printed %q", bin, ver)
	}
	src := fmt.Sprintf("lsqharness version (LSQUIC_*_VERSION); lsquic %s, boringssl %s; build.json in %s", b.Lib.Commit, b.BoringSSL.Commit, b.Harness.Dir)
	hb, err := run.FileBinary("harness", bin, strings.TrimPrefix(ver, "lsquic ")+"+"+b.Lib.Commit[:12], src)
	if err != nil {
		return nil, err
	}
	bins := run.Binaries{hb}
	for _, l := range []struct {
		a   *upstream.Artifact
		out string
	}{{b.Lib, Library}, {b.BoringSSL.Artifact, "libssl.a"}, {b.BoringSSL.Artifact, "libcrypto.a"}} {
		st, err := os.Stat(l.a.Path(l.out))
		if err != nil {
			return nil, err
		}
		bins = append(bins, run.Binary{Role: "library", Path: l.a.Path(l.out), Size: st.Size(), SHA256: l.a.SHA256[l.out],
			Version: l.a.Commit, VersionSource: "build.json in " + l.a.Dir})
	}
	return bins, nil
}

func (b *Built) settings() map[string]string {
	s := map[string]string{
		"upstream_commit":   b.Lib.Commit,
		"upstream_source":   b.Lib.Source,
		"dep_boringssl":     b.BoringSSL.Commit,
		"dep_boringssl_src": b.BoringSSL.Source,
		"build_options":     strings.Join(b.Lib.Options, " "),
		"boringssl_options": strings.Join(b.BoringSSL.Options, " "),
		"harness_cflags":    strings.Join(b.Harness.Options, " "),
		"build_dir":         b.Lib.Dir,
		"boringssl_dir":     b.BoringSSL.Dir,
		"harness_build_dir": b.Harness.Dir,
		"harness_sha256":    b.Harness.SHA256[Binary],
		"build_recipe":      b.Lib.Recipe,
	}
	for k, v := range b.Lib.Deps {
		s["dep_"+k] = v
	}
	var tools []string
	for k, v := range b.Lib.Tools {
		tools = append(tools, k+"="+v)
	}
	sort.Strings(tools)
	s["build_tools"] = strings.Join(tools, "; ")
	return s
}

// line is one lsqharness stdout line: "[lsq_ROLE] t_us=N VERB unix_us=U k=v…".
type line struct {
	verb   string
	at     time.Time
	fields map[string]string
	raw    string
}

// parseLine returns ok false for lsquic's LOG lines and anything that is
// not a harness line with a wall-clock time.
func parseLine(s string) (line, bool, error) {
	if !strings.HasPrefix(s, "[lsq_") {
		return line{}, false, nil
	}
	f := strings.Fields(s)
	if len(f) < 3 || f[2] == "LOG" || f[2] == "STATS" {
		return line{}, false, nil
	}
	l := line{verb: f[2], fields: map[string]string{}, raw: s}
	for _, kv := range f[3:] {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			continue // free text (error messages) after the fields
		}
		l.fields[k] = v
	}
	u, err := strconv.ParseInt(l.fields["unix_us"], 10, 64)
	if err != nil {
		return line{}, true, fmt.Errorf("lsqharness line %q: unix_us %q is not a number", s, l.fields["unix_us"])
	}
	l.at = time.UnixMicro(u).UTC()
	return l, true, nil
}

func (l line) int(k string) int64 {
	v, err := strconv.ParseInt(l.fields[k], 10, 64)
	if err != nil {
		return -1
	}
	return v
}

// RunRep runs one download with a migration.
func (h *Harness) RunRep(ctx context.Context, env run.RepEnv) (run.RepResult, error) {
	res := run.RepResult{Settings: map[string]string{}}
	b, err := h.ensure(ctx)
	if err != nil {
		return res, err
	}
	for k, v := range b.settings() {
		res.Settings[k] = v
	}
	bin := b.Harness.Path(Binary)
	if ver, err := exec.CommandContext(ctx, bin, "version").Output(); err == nil {
		res.Version = strings.TrimPrefix(strings.TrimSpace(string(ver)), "lsquic ") + "+" + b.Lib.Commit[:12]
	}
	cc := env.Plan.CC
	size := env.Plan.BodyBytes
	res.BodyBytes = size
	res.Settings["cc"] = cc
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
	var lineErrs []string
	listening := make(chan struct{})
	var lOnce sync.Once
	onLine := func(role string, handle func(line)) func(string) {
		return func(s string) {
			l, ok, err := parseLine(s)
			if !ok {
				return
			}
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				lineErrs = append(lineErrs, role+": "+err.Error())
				return
			}
			handle(l)
		}
	}
	var served int64 = -1
	if env.KeyLog != "" {
		res.KeyLogBy = "server" // SSL_CTX_set_keylog_callback on the server's SSL_CTX
	}
	srv, err := run.Start(run.ProcSpec{Role: "server", NS: env.Net.ServerNS(), Dir: env.Dir, GzipStdout: true,
		Cmd: env.Net.Command(ctx, env.Net.ServerNS(), bin, "server", "--addr", srvIP, "--port", strconv.Itoa(Port),
			"--cert", certPath, "--key", keyPath, "--cc", cc, "--body", strconv.FormatInt(size, 10),
			"--timeout-ms", strconv.FormatInt(timeout.Milliseconds(), 10), "--keylog", env.KeyLog),
		OnStdout: onLine("server", func(l line) {
			switch l.verb {
			case "listening":
				lOnce.Do(func() { close(listening) })
			case "peer":
				res.ServerSaw = append(res.ServerSaw, run.AddrChange{At: l.at, From: l.fields["from"], To: l.fields["to"],
					Evidence: "lsqharness server: lsquic_conn_get_sockaddr's peer address changed: " + l.raw})
			case "served":
				served = l.int("bytes")
			case "error":
				res.Notes = append(res.Notes, "server: "+l.raw)
			}
		})})
	if err != nil {
		return res, err
	}
	defer srv.Kill()
	if err := srv.AwaitReady(ctx, listening, "lsqharness server", filepath.Join(env.Dir, "server.stderr"), 10*time.Second); err != nil {
		return res, err
	}

	var received int64
	var fin bool
	var migrated string
	cli, err := run.Start(run.ProcSpec{Role: "client", NS: env.Net.ClientNS(), Dir: env.Dir, GzipStdout: true,
		Cmd: env.Net.Command(ctx, env.Net.ClientNS(), bin, "client", "--addr", srvIP, "--port", strconv.Itoa(Port),
			"--local-a", env.Net.ClientAddr(run.PathA).String(), "--local-b", env.Net.ClientAddr(run.PathB).String(),
			"--cc", cc, "--scenario", string(env.Scenario),
			"--migrate-at-ms", strconv.FormatInt(env.Plan.MigrateAt().Milliseconds(), 10),
			"--timeout-ms", strconv.FormatInt(timeout.Milliseconds(), 10)),
		OnStdout: onLine("client", func(l line) {
			switch l.verb {
			case "start":
				res.Settings["client_sockets"] = fmt.Sprintf("A=%s B=%s", l.fields["A"], l.fields["B"])
			case "migrate":
				migrated = l.raw
				res.Moves = append(res.Moves, run.AddrChange{At: l.at, From: l.fields["from"], To: l.fields["to"],
					Evidence: "lsqharness client: " + l.raw + "; from now on every datagram leaves from the socket bound to " + l.fields["to"] + " and what arrives there is handed to lsquic_engine_packet_in"})
			case "local":
				evd := "lsqharness client: " + l.raw + "; lsquic_conn_get_sockaddr (the connection's current path) now has local address " + l.fields["to"]
				if migrated != "" {
					evd += " (after " + migrated + ")"
				}
				res.Notes = append(res.Notes, evd)
			case "progress", "received", "done":
				if n := l.int("received"); n >= 0 {
					received = n
				}
				if n := l.int("bytes"); l.verb == "received" && n >= 0 {
					received = n
				}
				if l.verb == "done" {
					fin = l.int("fin") == 1
				}
				if env.Progress != nil {
					env.Progress(min(received, size), size)
				}
			case "error":
				res.Notes = append(res.Notes, "client: "+l.raw)
			}
		})})
	if err != nil {
		return res, err
	}
	defer cli.Kill()
	crec := cli.Wait(env.Plan.ClientTimeout)
	// The server exits when its connection is closed (the client closes it
	// after the FIN); give it time to see the CONNECTION_CLOSE.
	select {
	case <-srv.Done():
	case <-time.After(15 * time.Second):
		res.Notes = append(res.Notes, "server still running 15 s after the client exited: stopped with SIGINT")
		srv.Stop(syscall.SIGINT, 10*time.Second)
	}
	srec := srv.Wait(time.Second)
	res.Processes = []run.Process{srec, crec}

	mu.Lock()
	res.ReceivedBytes = received
	res.Completed = crec.ExitCode == 0 && fin && received == size
	if served >= 0 {
		res.Notes = append(res.Notes, fmt.Sprintf("server served %d bytes", served))
	}
	res.Notes = append(res.Notes, lineErrs...)
	mu.Unlock()
	res.ServerTrace, res.ClientTrace = srec.Stdout, crec.Stdout
	if len(lineErrs) > 0 {
		return res, fmt.Errorf("lsqharness printed malformed lines: %s", lineErrs[0])
	}
	if ctx.Err() != nil {
		return res, ctx.Err()
	}
	return res, nil
}

func migrationAPI(sc run.Scenario) string {
	if sc == run.NATRebind {
		return "none told to lsquic: the client's datagrams leave from the path-B socket, and what arrives there is handed to lsquic_engine_packet_in with the path-A address (NAT rebinding)"
	}
	return "no client migration API in lsquic: the client's datagrams leave from the path-B socket, and what arrives there is handed to lsquic_engine_packet_in with the path-B local address (lsquic records, validates and switches to the new path)"
}

func init() {
	run.Register("lsquic", func() run.Harness {
		return New(func(s string) { fmt.Fprintln(os.Stderr, "migaudit: "+s) })
	})
}
