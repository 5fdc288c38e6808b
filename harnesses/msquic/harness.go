// Package msquic is the live harness for msquic, built from the user's
// msquic checkout (a clone or bare mirror; `migaudit run --impl msquic
// --source DIR [--commit C]`) together with this project's own client and
// server, c/migaudit_msquic.c, written against msquic's public API.
//
// The build (build.go) goes through harnesses/upstream: the commit's tree is
// exported from git object storage into the build cache, its quictls
// submodule from the quictls/openssl repository, and msquic is configured
// with quictls (its default TLS library; OpenSSL ≥ 3.5, the alternative, is
// not available here) and built as a shared library with no tests or tools.
//
// The client binds to the path-A address and, MigrateAt after the
// handshake, sets QUIC_PARAM_CONN_LOCAL_ADDRESS to the path-B address (port
// 0: a new socket). The testbed's source-address policy routes then carry
// the new socket's datagrams over path B. msquic's client rebinds Paths[0]
// in place and does not validate the new path itself; the server sees a new
// peer address, validates it and makes it the active path.
//
// Both ends poll QUIC_PARAM_CONN_STATISTICS_V2 (congestion window, smoothed
// and minimum RTT, RTT variance, path MTU) and QUIC_PARAM_CONN_NETWORK_
// STATISTICS (bytes in flight) every 5 ms, as the study did, and write the
// timeline CSV the parsers read (parsers/csv.go), with the local and peer
// address of Paths[0] on every row and a path id per address pair.
package msquic

import (
	"context"
	"encoding/csv"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/migaudit/migaudit/harnesses/run"
	"github.com/migaudit/migaudit/harnesses/upstream"
)

// InstrumentLogSuffix follows the role in the instrumented build's log
// files; the harness gzips them after the run (".gz" appended).
const InstrumentLogSuffix = ".instrument.log"

const (
	// Port the server listens on inside the server namespace.
	Port = 4433
	// PollInterval is how often both ends read the statistics.
	PollInterval = 5 * time.Millisecond
)

// Harness runs the msquic client and server built from an upstream checkout.
type Harness struct {
	// Log receives build progress (nil: discarded).
	Log io.Writer

	mu         sync.Mutex
	opts       upstream.Options
	instrument bool               // --instrument: InstrumentedLibraryRecipe
	lib        *upstream.Artifact // the library build (msquic + quictls)
	art        *upstream.Artifact // the harness build (executable + its copy of the library)
}

// New returns the msquic harness with the pinned commit and mirror
// resolution; ConfigureUpstream changes them.
func New() *Harness { return &Harness{Log: os.Stderr} }

func (h *Harness) Name() string { return "msquic" }

// ConfigureUpstream takes --source, --commit and --dep quictls=DIR.
func (h *Harness) ConfigureUpstream(o upstream.Options) error {
	if err := upstream.CheckDeps("msquic", o.Deps, quictlsSource); err != nil {
		return err
	}
	// Find the repository and the commit now, before a testbed or a build.
	if _, err := upstream.Open(msquicSource(o, o.Commit)); err != nil {
		return err
	}
	if d := o.Deps[quictlsSource]; d != "" {
		if _, err := os.Stat(d); err != nil {
			return fmt.Errorf("--dep quictls=%s: %w", d, err)
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.opts, h.art, h.lib = o, nil, nil
	return nil
}

// SetInstrumented selects the instrumented library build (`migaudit run
// --instrument`, build.go's InstrumentedLibraryRecipe): each repetition then
// also writes server.instrument.log.gz and client.instrument.log.gz.
func (h *Harness) SetInstrumented(on bool) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.instrument, h.art, h.lib = on, nil, nil
	return nil
}

// Capabilities: the API's local-address change supports all but
// nat-rebind; msquic implements CUBIC and BBR.
func (h *Harness) Capabilities() run.Capabilities {
	return run.Capabilities{
		Scenarios: map[run.Scenario]string{run.Standard: "", run.StepDown: "", run.PortRebind: "", run.MigrateBack: "", run.PVDistinct: "", run.Lossy: "",
			run.NATRebind: "msquic's client has no separate NAT-rebinding mode: QUIC_PARAM_CONN_LOCAL_ADDRESS already rebinds Paths[0] in place without the client validating the new path (src/core/connection.c, QUIC_PARAM_CONN_LOCAL_ADDRESS), which is what the standard scenario runs"},
		CCs: []string{"cubic", "bbr"}, DefaultCC: "cubic",
		CCWhy: "msquic implements cubic and bbr (QUIC_CONGESTION_CONTROL_ALGORITHM)",
	}
}

// Check builds (or reuses the cached build of) msquic and the harness and
// returns both files with their sha256.
func (h *Harness) Check(ctx context.Context) (run.Binaries, error) {
	lib, a, err := h.ensure(ctx)
	if err != nil {
		return nil, err
	}
	ver := "msquic " + a.Commit
	src := fmt.Sprintf("built from %s at %s with %s (%s), options %s; build records %s and %s", lib.Source, lib.Commit, TLSLib, tlsCommit(lib),
		strings.Join(lib.Options, " "), filepath.Join(lib.Dir, "build.json"), filepath.Join(a.Dir, "build.json"))
	hb, err := run.FileBinary("harness", a.Path(OutHarness), ver, src)
	if err != nil {
		return nil, err
	}
	lb, err := run.FileBinary("library", a.Path(OutLibrary), ver, src)
	if err != nil {
		return nil, err
	}
	return run.Binaries{hb, lb}, nil
}

// ensure returns the library build and the harness build.
func (h *Harness) ensure(ctx context.Context) (lib, art *upstream.Artifact, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.art != nil {
		return h.lib, h.art, nil
	}
	recipe := LibraryRecipe(h.opts)
	if h.instrument {
		recipe = InstrumentedLibraryRecipe(h.opts)
	}
	lib, err = upstream.Ensure(ctx, recipe, h.Log)
	if err != nil {
		return nil, nil, err
	}
	a, err := upstream.Ensure(ctx, HarnessRecipe(h.opts, lib), h.Log)
	if err != nil {
		return nil, nil, err
	}
	if a.SHA256[OutHarness] == "" || a.SHA256[OutLibrary] != lib.SHA256[OutLibrary] {
		return nil, nil, fmt.Errorf("msquic harness build %s: no sha256 for %s, or its %s differs from the library build %s", a.Dir, OutHarness, OutLibrary, lib.Dir)
	}
	h.lib, h.art = lib, a
	return lib, a, nil
}

func tlsCommit(a *upstream.Artifact) string {
	for k, v := range a.Deps {
		if strings.HasSuffix(k, quictlsPath) {
			return quictlsPath + " " + v
		}
	}
	return quictlsPath + " (commit not recorded)"
}

// RunRep runs one download with the scenario's address changes.
func (h *Harness) RunRep(ctx context.Context, env run.RepEnv) (run.RepResult, error) {
	res := run.RepResult{Settings: map[string]string{}}
	cc := env.Plan.CC
	lib, a, err := h.ensure(ctx)
	if err != nil {
		return res, err
	}
	bin := a.Path(OutHarness)
	res.Version = a.Commit
	res.Settings["upstream_commit"] = a.Commit
	res.Settings["upstream_source"] = lib.Source
	res.Settings["tls_library"] = TLSLib + " (" + tlsCommit(lib) + ", linked statically into libmsquic)"
	res.Settings["build_options"] = strings.Join(lib.Options, " ")
	res.Settings["build_record"] = filepath.Join(lib.Dir, "build.json")
	res.Settings["harness_build_record"] = filepath.Join(a.Dir, "build.json")
	res.Settings["harness_sha256"] = a.SHA256[OutHarness]
	res.Settings["library_sha256"] = a.SHA256[OutLibrary]
	h.mu.Lock()
	instrumented := h.instrument
	h.mu.Unlock()
	res.Settings["instrumented"] = strconv.FormatBool(instrumented)
	if instrumented {
		res.Settings["instrument_patch_sha256"] = InstrumentPatchSHA256()
		res.Settings["instrument_patch"] = "harnesses/msquic/" + InstrumentPatchFile
	}
	withLog := func(cmd *exec.Cmd, role string) *exec.Cmd {
		if instrumented {
			cmd.Env = append(os.Environ(), InstrumentLogEnv+"="+filepath.Join(env.Dir, role+InstrumentLogSuffix))
		}
		return cmd
	}

	size := env.Plan.BodyBytes
	res.BodyBytes = size
	res.Settings["cc"] = cc
	if env.KeyLog != "" {
		res.KeyLogBy = "server" // QUIC_PARAM_CONN_TLS_SECRETS, written at CONNECTED
	}
	res.Settings["body_bytes"] = strconv.FormatInt(size, 10)
	res.Settings["poll_interval"] = PollInterval.String()

	keyPath, certPath, err := run.WriteSelfSigned(env.Dir)
	if err != nil {
		return res, err
	}
	srvIP := env.Net.ServerAddr().String()
	aIP, bIP := env.Net.ClientAddr(run.PathA).String(), env.Net.ClientAddr(run.PathB).String()
	pollUS := strconv.FormatInt(PollInterval.Microseconds(), 10)

	var mu sync.Mutex
	var parseErrs []string
	ready := make(chan struct{})
	var readyOnce sync.Once
	var serverPeer string
	srvArgs := []string{"server", "--listen", net.JoinHostPort(srvIP, strconv.Itoa(Port)), "--cert", certPath, "--key", keyPath,
		"--body", strconv.FormatInt(size, 10), "--timeline", filepath.Join(env.Dir, "server.csv"), "--cc", cc, "--poll-us", pollUS,
		"--keylog", env.KeyLog}
	srv, err := run.Start(run.ProcSpec{Role: "server", NS: env.Net.ServerNS(), Dir: env.Dir,
		Cmd: withLog(env.Net.Command(ctx, env.Net.ServerNS(), bin, srvArgs...), "server"),
		OnStdout: func(s string) {
			l, ok, err := ParseLine(s)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				parseErrs = append(parseErrs, "server: "+err.Error())
				return
			}
			if !ok {
				return
			}
			switch l.Key {
			case "READY":
				readyOnce.Do(func() { close(ready) })
			case "CONNECTED":
				serverPeer = l.Fields["peer"]
			case "SETTINGS":
				for _, k := range []string{"minimum_mtu", "maximum_mtu", "initial_rtt_ms", "initial_window_packets", "migration_enabled", "pacing"} {
					if v, ok := l.Fields[k]; ok {
						res.Settings["server_"+k] = v
					}
				}
			case "PEER_ADDRESS_CHANGED":
				res.ServerSaw = append(res.ServerSaw, run.AddrChange{At: l.At, From: serverPeer, To: l.Fields["to"],
					Evidence: "server QUIC_CONNECTION_EVENT_PEER_ADDRESS_CHANGED: " + l.Raw})
				serverPeer = l.Fields["to"]
			case "STATS":
				res.Notes = append(res.Notes, "server final statistics: "+strings.TrimSpace(strings.SplitN(l.Raw, " ", 4)[3]))
			case "ERROR", "SHUTDOWN":
				res.Notes = append(res.Notes, "server: "+l.Raw)
			}
		}})
	if err != nil {
		return res, err
	}
	defer srv.Kill()
	if err := srv.AwaitReady(ctx, ready, "msquic server", filepath.Join(env.Dir, "server.stderr"), 15*time.Second); err != nil {
		return res, err
	}

	moveTo := "b"
	if env.Scenario == run.PortRebind {
		moveTo = "a"
	}
	cliArgs := []string{"client", "--server", net.JoinHostPort(srvIP, strconv.Itoa(Port)), "--local-a", aIP, "--local-b", bIP,
		"--size", strconv.FormatInt(size, 10), "--timeline", filepath.Join(env.Dir, "client.csv"), "--cc", cc, "--poll-us", pollUS,
		"--move-at-ms", strconv.FormatInt(env.Plan.MigrateAt().Milliseconds(), 10), "--move-to", moveTo}
	if back := env.Plan.BackAfter(); back > 0 {
		cliArgs = append(cliArgs, "--back-after-ms", strconv.FormatInt(back.Milliseconds(), 10))
		res.Settings["back_after"] = back.String()
	}
	res.Settings["move_at"] = env.Plan.MigrateAt().String()
	res.Settings["move_to"] = map[string]string{"a": "path-A address, new port", "b": "path-B address, new port"}[moveTo]
	var received int64
	var clientLocal, libVersion string
	cli, err := run.Start(run.ProcSpec{Role: "client", NS: env.Net.ClientNS(), Dir: env.Dir,
		Cmd: withLog(env.Net.Command(ctx, env.Net.ClientNS(), bin, cliArgs...), "client"),
		OnStdout: func(s string) {
			l, ok, err := ParseLine(s)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				parseErrs = append(parseErrs, "client: "+err.Error())
				return
			}
			if !ok {
				return
			}
			switch l.Key {
			case "LIBRARY":
				libVersion = l.Fields["version"]
			case "CONNECTED":
				clientLocal = l.Fields["local"]
			case "MOVE":
				res.Moves = append(res.Moves, run.AddrChange{At: l.At, From: l.Fields["from"], To: l.Fields["to"],
					Evidence: fmt.Sprintf("client SetParam(QUIC_PARAM_CONN_LOCAL_ADDRESS) at t_us=%d (%s) from %s; local address is now %s",
						l.TUS, l.Fields["why"], l.Fields["from"], l.Fields["to"])})
				clientLocal = l.Fields["to"]
			case "PROGRESS":
				received = l.Int("received")
				if env.Progress != nil && received >= 0 {
					env.Progress(received, size)
				}
			case "DONE":
				received = l.Int("received")
			case "STATS":
				res.Notes = append(res.Notes, "client final statistics: "+strings.TrimSpace(strings.SplitN(l.Raw, " ", 4)[3]))
			case "ERROR", "SHUTDOWN", "LOCAL_ADDRESS_CHANGED":
				res.Notes = append(res.Notes, "client: "+l.Raw)
			}
		}})
	if err != nil {
		return res, err
	}
	defer cli.Kill()
	crec := cli.Wait(env.Plan.ClientTimeout)
	// The server exits by itself when its one connection has shut down.
	srec := srv.Wait(5 * time.Second)
	if srec.End.IsZero() || srec.Killed {
		srv.Kill()
		srec = srv.Wait(time.Second)
		srec.Killed = true
	}
	res.Processes = []run.Process{srec, crec}
	mu.Lock()
	res.ReceivedBytes = max(received, 0)
	if libVersion != "" {
		// QUIC_PARAM_GLOBAL_LIBRARY_VERSION as the running library reports it.
		res.Version = libVersion + " (" + a.Commit[:12] + ")"
	}
	res.Notes = append(res.Notes, parseErrs...)
	_ = clientLocal
	mu.Unlock()
	res.Completed = crec.ExitCode == 0 && res.ReceivedBytes == size

	for _, f := range []string{"server.csv", "client.csv"} {
		if _, err := os.Stat(filepath.Join(env.Dir, f)); err != nil {
			return res, fmt.Errorf("msquic harness wrote no %s: %w", f, err)
		}
	}
	res.ServerTrace, res.ClientTrace = "server.csv", "client.csv"
	if instrumented {
		for _, role := range []string{"server", "client"} {
			p := filepath.Join(env.Dir, role+InstrumentLogSuffix)
			if _, err := os.Stat(p); err != nil {
				res.Notes = append(res.Notes, fmt.Sprintf("instrumented build: the %s wrote no %s (%v)", role, filepath.Base(p), err))
				continue
			}
			if _, err := run.CompressFile(p); err != nil {
				return res, fmt.Errorf("compress %s: %w", p, err)
			}
		}
	}
	if p, err := mtuAfterMove(filepath.Join(env.Dir, "server.csv")); err == nil {
		res.Params = map[string]run.Param{"MTU": p}
	} else {
		res.Notes = append(res.Notes, "MTU parameter not read from the server timeline: "+err.Error())
	}
	if ctx.Err() != nil {
		return res, ctx.Err()
	}
	return res, nil
}

// mtuAfterMove reads the server's SendPathMtu (path_mtu column) in the first
// sample on the client's new address: the datagram size msquic's
// CubicCongestionControlInitialize sizes the reset window from
// (src/core/cubic.c, 10 × (MTU − 20 − 8) on IPv4).
func mtuAfterMove(path string) (run.Param, error) {
	f, err := os.Open(path)
	if err != nil {
		return run.Param{}, err
	}
	defer f.Close()
	r := csv.NewReader(f)
	r.Comment = '#'
	r.FieldsPerRecord = -1
	header, err := r.Read()
	if err != nil {
		return run.Param{}, fmt.Errorf("%s: header: %w", path, err)
	}
	col := map[string]int{}
	for i, h := range header {
		col[h] = i
	}
	iPeer, ok1 := col["peer"]
	iMTU, ok2 := col["path_mtu"]
	iT, ok3 := col["time_us"]
	if !ok1 || !ok2 || !ok3 {
		return run.Param{}, fmt.Errorf("%s: header lacks peer, path_mtu or time_us", path)
	}
	first := ""
	for n := 2; ; n++ {
		rec, err := r.Read()
		if err == io.EOF {
			return run.Param{}, fmt.Errorf("%s: the peer address never changes", path)
		}
		if err != nil {
			return run.Param{}, fmt.Errorf("%s: %w", path, err)
		}
		if len(rec) <= max(iPeer, iMTU, iT) {
			continue
		}
		if first == "" {
			first = rec[iPeer]
			continue
		}
		if rec[iPeer] != first {
			v, err := strconv.ParseFloat(rec[iMTU], 64)
			if err != nil || v <= 0 {
				return run.Param{}, fmt.Errorf("%s: record %d: path_mtu %q", path, n, rec[iMTU])
			}
			return run.Param{Value: v, Source: fmt.Sprintf("server.csv path_mtu (QUIC_STATISTICS_V2.SendPathMtu) in the first sample on the new peer address %s, t=%s µs", rec[iPeer], rec[iT])}, nil
		}
	}
}

func init() { run.Register("msquic", func() run.Harness { return New() }) }
