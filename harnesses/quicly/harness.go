// Package quicly is the live harness for quicly (h2o/quicly), built from the
// user's upstream checkout (harnesses/upstream): quicly at the chosen commit
// with its picotls and klib submodules exported from their own repositories
// at the commits quicly's tree pins, and this project's own client and
// server (csrc/qlyharness.c) linked against them.
//
// quicly has no client-side migration API: a client never validates a path
// of its own and only checks that packets come from the server's address.
// The client "migrates" by sending the connection's datagrams from a socket
// bound to the path-B address; the server sees a new peer address, opens a
// path, validates it with PATH_CHALLENGE and promotes it (promote_path,
// which re-initialises the controller and the RTT estimator). The server
// writes quicly's event log (ptls_log, JSON lines) with the harness's own
// RTT and datagram lines, read by the quicly-log parser; so does the client.
// Both sides print what the stack says about addresses on stdout: the server
// its peer address (quicly_get_peername), the client the socket it sends
// from.
package quicly

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/klauspost/compress/gzip"
	"github.com/migaudit/migaudit/harnesses/picoquic"
	"github.com/migaudit/migaudit/harnesses/run"
	"github.com/migaudit/migaudit/harnesses/upstream"
	"github.com/migaudit/migaudit/parsers"
	"github.com/migaudit/migaudit/parsers/timeline"
)

const (
	// Port the server listens on inside the server namespace.
	Port = 4433
	// DefaultCC is quicly's default controller (quicly_spec_context.init_cc
	// = &quicly_cc_reno_init, lib/defaults.c).
	DefaultCC = "reno"
	// ServerTrace and ClientTrace are the event logs in a repetition's
	// directory (gzip-compressed once the processes exit).
	ServerTrace = "server.quicly.jsonl"
	ClientTrace = "client.quicly.jsonl"
)

// Harness builds quicly from source and runs qlyharness.
type Harness struct {
	opts      upstream.Options
	log       func(string)
	mu        sync.Mutex
	built     *Built
	constants string // where the discriminator's constants come from (ConstantsAt)
}

// New returns the harness; log receives build progress lines.
func New(log func(string)) *Harness {
	if log == nil {
		log = func(string) {}
	}
	return &Harness{log: log}
}

func (h *Harness) Name() string { return "quicly" }

// ConfigureUpstream takes --source, --commit and --dep picotls|klib=DIR[@COMMIT].
func (h *Harness) ConfigureUpstream(o upstream.Options) error {
	if err := upstream.CheckDeps("quicly", o.Deps, DepNames()...); err != nil {
		return err
	}
	if _, err := upstream.Open(quiclySource(o, o.Commit)); err != nil {
		return err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.opts, h.built = o, nil
	return nil
}

// Capabilities: all five scenarios (for quicly a NAT rebinding and a client
// migration are the same thing on the wire, see migrationAPI) and quicly's
// three controllers.
func (h *Harness) Capabilities() run.Capabilities {
	sc := map[run.Scenario]string{}
	for _, s := range run.AllScenarios {
		sc[s] = ""
	}
	return run.Capabilities{Scenarios: sc, DefaultCC: DefaultCC, CCs: []string{"reno", "cubic", "pico"}}
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
	if h.constants, err = ConstantsAt(ctx, h.opts.Source, b.Lib.Commit); err != nil {
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

// Check builds (or finds in the cache, sha256-verified) quicly and the
// harness and returns the harness binary and the library archive.
func (h *Harness) Check(ctx context.Context) (run.Binaries, error) {
	b, err := h.ensure(ctx)
	if err != nil {
		return nil, err
	}
	bin := b.Harness.Path(Binary)
	ver, err := version(ctx, bin)
	if err != nil {
		return nil, err
	}
	hb, err := run.FileBinary("harness", bin, ver, fmt.Sprintf("qlyharness version (the commit it was compiled from); picotls %s, klib %s; build.json in %s",
		b.Lib.Deps["src/deps/picotls"], b.Lib.Deps["src/deps/klib"], b.Harness.Dir))
	if err != nil {
		return nil, err
	}
	st, err := os.Stat(b.Lib.Path(OutLibrary))
	if err != nil {
		return nil, err
	}
	return run.Binaries{hb, {Role: "library", Path: b.Lib.Path(OutLibrary), Size: st.Size(), SHA256: b.Lib.SHA256[OutLibrary],
		Version: b.Lib.Commit, VersionSource: "build.json in " + b.Lib.Dir}}, nil
}

func version(ctx context.Context, bin string) (string, error) {
	out, err := exec.CommandContext(ctx, bin, "version").Output()
	if err != nil {
		return "", fmt.Errorf("quicly harness %s version: %w", bin, err)
	}
	v := strings.TrimSpace(string(out))
	if !strings.HasPrefix(v, "quicly ") {
		return "", fmt.Errorf("quicly harness %s version printed %q", bin, v)
	}
	return strings.TrimPrefix(v, "quicly "), nil
}

// settings records the build in every manifest.
func (b *Built) settings() map[string]string {
	s := map[string]string{
		"upstream_commit":   b.Lib.Commit,
		"upstream_source":   b.Lib.Source,
		"dep_picotls":       b.Lib.Deps["src/deps/picotls"],
		"dep_klib":          b.Lib.Deps["src/deps/klib"],
		"deps_from":         "quicly's submodule gitlinks (deps/picotls, deps/klib) unless --dep NAME=DIR@COMMIT",
		"build_options":     strings.Join(b.Lib.Options, " "),
		"harness_cflags":    strings.Join(b.Harness.Options, " "),
		"build_dir":         b.Lib.Dir,
		"harness_build_dir": b.Harness.Dir,
		"harness_sha256":    b.Harness.SHA256[Binary],
		"build_recipe":      b.Lib.Recipe,
	}
	var tools []string
	for k, v := range b.Lib.Tools {
		tools = append(tools, k+"="+v)
	}
	sort.Strings(tools)
	s["build_tools"] = strings.Join(tools, "; ")
	return s
}

func migrationAPI(sc run.Scenario) string {
	const none = "quicly has no client-side migration API: the client sends the connection's datagrams from "
	switch sc {
	case run.PortRebind:
		return none + "a second socket on the path-A address (new port); the server validates and promotes the new path"
	case run.MigrateBack:
		return none + "the path-B socket, then a second socket on the path-A address; the server validates and promotes each"
	case run.NATRebind:
		return none + "the path-B socket; on the wire this is the same as the standard scenario (quicly's client never validates a path itself)"
	}
	return none + "the path-B socket; the server validates the new path (PATH_CHALLENGE) and promotes it"
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
	res.Settings["constants"] = h.constants
	bin := b.Harness.Path(Binary)
	if v, err := version(ctx, bin); err == nil {
		res.Version = v
	}
	cc := env.Plan.CC
	size := env.Plan.BodyBytes
	res.BodyBytes = size
	res.Settings["cc"] = cc
	res.Settings["body_bytes"] = strconv.FormatInt(size, 10)
	res.Settings["migrate_at"] = env.Plan.MigrateAt().String()
	if env.Scenario == run.MigrateBack {
		res.Settings["back_after"] = env.Plan.BackAfter().String()
	}
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
			if err != nil {
				mu.Lock()
				parseErrs = append(parseErrs, role+": "+err.Error())
				mu.Unlock()
				return
			}
			handle(ev)
		}
	}
	var served int64 = -1
	if env.KeyLog != "" {
		res.KeyLogBy = "server" // picotls's log_event callback
	}
	srv, err := run.Start(run.ProcSpec{Role: "server", NS: env.Net.ServerNS(), Dir: env.Dir,
		Cmd: env.Net.Command(ctx, env.Net.ServerNS(), bin, "server", "--addr", srvIP, "--port", strconv.Itoa(Port),
			"--cert", certPath, "--key", keyPath, "--log", filepath.Join(env.Dir, ServerTrace), "--keylog", env.KeyLog,
			"--cc", cc, "--body", strconv.FormatInt(size, 10), "--timeout-ms", strconv.FormatInt(timeout.Milliseconds(), 10)),
		OnStdout: onEvent("server", func(ev picoquic.Event) {
			mu.Lock()
			defer mu.Unlock()
			switch ev.Name {
			case "listening":
				lOnce.Do(func() { close(listening) })
			case "peer":
				if ev.Fields["from"] != "none" {
					res.ServerSaw = append(res.ServerSaw, run.AddrChange{At: ev.At, From: ev.Fields["from"], To: ev.Fields["to"],
						Evidence: "qlyharness server: quicly_get_peername (paths[0]'s remote address) changed: " + ev.Line})
				}
			case "served":
				served = ev.Int("bytes")
			}
		})})
	if err != nil {
		return res, err
	}
	defer srv.Kill()
	if err := srv.AwaitReady(ctx, listening, "qlyharness server", filepath.Join(env.Dir, "server.stderr"), 10*time.Second); err != nil {
		return res, err
	}

	var received int64
	var fin bool
	cli, err := run.Start(run.ProcSpec{Role: "client", NS: env.Net.ClientNS(), Dir: env.Dir,
		Cmd: env.Net.Command(ctx, env.Net.ClientNS(), bin, "client", "--addr", srvIP, "--port", strconv.Itoa(Port),
			"--local-a", env.Net.ClientAddr(run.PathA).String(), "--local-b", env.Net.ClientAddr(run.PathB).String(),
			"--log", filepath.Join(env.Dir, ClientTrace), "--cc", cc, "--scenario", string(env.Scenario),
			"--migrate-at-ms", strconv.FormatInt(env.Plan.MigrateAt().Milliseconds(), 10),
			"--back-after-ms", strconv.FormatInt(max(env.Plan.BackAfter(), 5*time.Second).Milliseconds(), 10),
			"--timeout-ms", strconv.FormatInt(timeout.Milliseconds(), 10)),
		OnStdout: onEvent("client", func(ev picoquic.Event) {
			mu.Lock()
			defer mu.Unlock()
			switch ev.Name {
			case "start":
				res.Settings["client_sockets"] = fmt.Sprintf("A=%s B=%s A2=%s", ev.Fields["A"], ev.Fields["B"], ev.Fields["A2"])
			case "local":
				res.Moves = append(res.Moves, run.AddrChange{At: ev.At, From: ev.Fields["from"], To: ev.Fields["to"],
					Evidence: "qlyharness client: " + ev.Line + "; the client sends the connection's datagrams from the socket bound to " + ev.Fields["to"] + " (quicly has no local-address API)"})
			case "progress", "received", "done":
				if n := ev.Int("received"); n >= 0 {
					received = n
				}
				if n := ev.Int("bytes"); ev.Name == "received" && n >= 0 {
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
	// The server exits once its connection is freed (after the close's
	// draining period); give it time, then SIGINT.
	srec, note := srv.AwaitExit("server", 15*time.Second, syscall.SIGINT, 30*time.Second)
	if note != "" {
		res.Notes = append(res.Notes, note)
	}
	res.Processes = []run.Process{srec, crec}

	mu.Lock()
	res.ReceivedBytes = received
	res.Completed = crec.ExitCode == 0 && fin && received == size
	if served >= 0 {
		res.Notes = append(res.Notes, fmt.Sprintf("server: %d bytes of the body acknowledged when its connection was freed", served))
	}
	res.Notes = append(res.Notes, parseErrs...)
	mu.Unlock()

	st, err := gzipFile(filepath.Join(env.Dir, ServerTrace))
	if err != nil {
		return res, fmt.Errorf("server event log: %w", err)
	}
	res.ServerTrace = st
	if ct, err := gzipFile(filepath.Join(env.Dir, ClientTrace)); err == nil {
		res.ClientTrace = ct
	} else {
		res.Notes = append(res.Notes, "client event log: "+err.Error())
	}
	if sz, n, total, err := SendSize(filepath.Join(env.Dir, st)); err == nil {
		res.Params = map[string]run.Param{"S": {Value: float64(sz), Source: fmt.Sprintf("server event log: most frequent 1-RTT packet_sent len, %d of %d packets (quicly's egress.max_udp_payload_size, which promote_path's cc_init uses)", n, total)}}
	} else {
		res.Notes = append(res.Notes, "send size: "+err.Error())
	}
	if len(parseErrs) > 0 {
		return res, fmt.Errorf("qlyharness printed malformed event lines: %s", parseErrs[0])
	}
	if ctx.Err() != nil {
		return res, ctx.Err()
	}
	return res, nil
}

// gzipFile compresses p into p.gz, removes p and returns the new file's
// base name.
func gzipFile(p string) (string, error) {
	in, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer in.Close()
	tmp := p + ".gz.tmp"
	out, err := os.Create(tmp)
	if err != nil {
		return "", err
	}
	z := gzip.NewWriter(out)
	_, err = io.Copy(z, in)
	if cerr := z.Close(); err == nil {
		err = cerr
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, p+".gz")
	}
	if err != nil {
		os.Remove(tmp)
		return "", fmt.Errorf("compress %s: %w", p, err)
	}
	os.Remove(p)
	return filepath.Base(p) + ".gz", nil
}

// SendSize returns the most frequent length of the application-space
// packets the trace's endpoint sent, how many had it and how many there
// were.
func SendSize(trace string) (size, n, total int64, err error) {
	tl, err := parsers.ParseFile(trace, parsers.Options{Format: parsers.FormatQuicly})
	if err != nil {
		return 0, 0, 0, err
	}
	counts := map[int64]int64{}
	for _, e := range tl.Events {
		if e.Kind == timeline.PacketSent && e.PacketSpace == "application_data" && e.SizeBytes > 0 {
			counts[e.SizeBytes]++
			total++
		}
	}
	for s, c := range counts {
		if c > n || (c == n && s > size) {
			size, n = s, c
		}
	}
	if total == 0 {
		return 0, 0, 0, fmt.Errorf("%s: no 1-RTT packet_sent lengths", trace)
	}
	return size, n, total, nil
}

func init() {
	run.Register("quicly", func() run.Harness {
		return New(func(s string) { fmt.Fprintln(os.Stderr, "migaudit: "+s) })
	})
}
