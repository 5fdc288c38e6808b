// Package picoquic is the live harness for picoquic, built from the user's
// upstream checkout (harnesses/upstream): picotls and picoquic at the chosen
// commit, and this project's own client and server (csrc/pqharness.c)
// linked against them.
//
// The client migrates with picoquic's own API: picoquic_probe_new_path from
// a socket bound to the path-B address; without multipath, picoquic makes the
// validated path the default one. The server writes picoquic's qlog
// (picoquic_set_qlog: a binary log converted to qlog draft-00 when the
// connection is freed), which the picoquic-qlog parser reads. Both sides
// report on stdout what the stack says about addresses: the client its
// default path's local address (picoquic_get_local_addr), the server its
// peer address (picoquic_get_peer_addr).
package picoquic

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
	"github.com/migaudit/migaudit/parsers"
	"github.com/migaudit/migaudit/parsers/timeline"
)

const (
	// Port the server listens on inside the server namespace.
	Port = 4433
	// DefaultCC is picoquic's own default (PICOQUIC_DEFAULT_CONGESTION_ALGORITHM
	// = picoquic_newreno_algorithm, picoquic/picoquic.h at the pinned commit).
	DefaultCC = "newreno"
)

// Harness builds picoquic from source and runs pqharness.
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

func (h *Harness) Name() string { return "picoquic" }

// ConfigureUpstream takes --source, --commit and --dep picotls=DIR[@COMMIT].
func (h *Harness) ConfigureUpstream(o upstream.Options) error {
	if err := upstream.CheckDeps("picoquic", o.Deps, "picotls"); err != nil {
		return err
	}
	// Resolve the source and commit now: a wrong --source or --commit is
	// reported before anything is built or brought up.
	if _, err := upstream.Open(upstream.Source{Impl: "picoquic", Upstream: Upstream, Dir: o.Source, Commit: o.Commit}); err != nil {
		return err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.opts, h.built = o, nil
	return nil
}

// Capabilities: all five scenarios; the runner's congestion control names
// and picoquic's own.
func (h *Harness) Capabilities() run.Capabilities {
	sc := map[run.Scenario]string{}
	for _, s := range run.AllScenarios {
		sc[s] = ""
	}
	return run.Capabilities{Scenarios: sc, DefaultCC: DefaultCC,
		CCs:       []string{"newreno", "cubic", "dcubic", "fast", "bbr", "bbr1", "prague", "c4"},
		CCAliases: map[string]string{"reno": "newreno"}}
}

// ensure builds or reuses the library and harness.
func (h *Harness) ensure(ctx context.Context) (*Built, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.built != nil {
		return h.built, nil
	}
	b, err := Ensure(ctx, h.opts, upstream.LineWriter(h.log))
	if err != nil {
		return nil, err
	}
	h.built = b
	return b, nil
}

// Check builds (or finds in the cache, sha256-verified) picoquic and the
// harness and returns the harness binary and the library archives.
func (h *Harness) Check(ctx context.Context) (run.Binaries, error) {
	b, err := h.ensure(ctx)
	if err != nil {
		return nil, err
	}
	bin := b.Harness.Path(Binary)
	out, err := exec.CommandContext(ctx, bin, "version").Output()
	if err != nil {
		return nil, fmt.Errorf("picoquic harness %s version: %w", bin, err)
	}
	ver := strings.TrimSpace(string(out))
	if !strings.HasPrefix(ver, "picoquic ") {
		return nil, fmt.Errorf("picoquic harness %s version printed %q", bin, ver)
	}
	src := fmt.Sprintf("pqharness version (PICOQUIC_VERSION); picoquic %s, picotls %s; build.json in %s", b.Lib.Commit, b.Lib.Deps["picotls"], b.Harness.Dir)
	hb, err := run.FileBinary("harness", bin, strings.TrimPrefix(ver, "picoquic ")+"+"+b.Lib.Commit[:12], src)
	if err != nil {
		return nil, err
	}
	bins := run.Binaries{hb}
	for _, o := range []string{"picoquic/libpicoquic-core.a", "picoquic/libpicoquic-log.a", "picotls/libpicotls-core.a", "picotls/libpicotls-openssl.a"} {
		sum, ok := b.Lib.SHA256[o]
		if !ok {
			continue
		}
		st, err := os.Stat(b.Lib.Path(o))
		if err != nil {
			return nil, err
		}
		commit := b.Lib.Commit
		if strings.HasPrefix(o, "picotls/") {
			commit = b.Lib.Deps["picotls"]
		}
		bins = append(bins, run.Binary{Role: "library", Path: b.Lib.Path(o), Size: st.Size(), SHA256: sum, Version: commit,
			VersionSource: "build.json in " + b.Lib.Dir})
	}
	return bins, nil
}

// settings records the build in every manifest.
func (b *Built) settings() map[string]string {
	s := map[string]string{
		"upstream_commit":   b.Lib.Commit,
		"upstream_source":   b.Lib.Source,
		"dep_picotls":       b.Lib.Deps["picotls"],
		"dep_picotls_src":   b.Lib.Deps["picotls.source"],
		"dep_picotls_from":  b.PicotlsFrom,
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

// RunRep runs one download with a migration.
func (h *Harness) RunRep(ctx context.Context, env run.RepEnv) (run.RepResult, error) {
	res := run.RepResult{Settings: map[string]string{}}
	cc := env.Plan.CC
	b, err := h.ensure(ctx)
	if err != nil {
		return res, err
	}
	for k, v := range b.settings() {
		res.Settings[k] = v
	}
	bin := b.Harness.Path(Binary)
	if ver, err := exec.CommandContext(ctx, bin, "version").Output(); err == nil {
		res.Version = strings.TrimPrefix(strings.TrimSpace(string(ver)), "picoquic ") + "+" + b.Lib.Commit[:12]
	}
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
	qs, qc := filepath.Join(env.Dir, "qlog-server"), filepath.Join(env.Dir, "qlog-client")
	for _, d := range []string{qs, qc} {
		if err := os.Mkdir(d, 0o755); err != nil {
			return res, err
		}
	}
	srvIP := env.Net.ServerAddr().String()
	timeout := env.Plan.ClientGiveUp

	var mu sync.Mutex
	var parseErrs []string
	listening := make(chan struct{})
	var lOnce sync.Once
	onEvent := func(role string, handle func(Event)) func(string) {
		return func(line string) {
			ev, ok, err := ParseEvent(line)
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
		res.KeyLogBy = "server" // picoquic_set_key_log_file
	}
	srv, err := run.Start(run.ProcSpec{Role: "server", NS: env.Net.ServerNS(), Dir: env.Dir,
		Cmd: env.Net.Command(ctx, env.Net.ServerNS(), bin, "server", "--addr", srvIP, "--port", strconv.Itoa(Port),
			"--cert", certPath, "--key", keyPath, "--qlog", qs, "--cc", cc, "--body", strconv.FormatInt(size, 10),
			"--timeout-ms", strconv.FormatInt(timeout.Milliseconds(), 10), "--keylog", env.KeyLog),
		OnStdout: onEvent("server", func(ev Event) {
			mu.Lock()
			defer mu.Unlock()
			switch ev.Name {
			case "listening":
				lOnce.Do(func() { close(listening) })
			case "peer":
				if ev.Fields["from"] != "none" {
					res.ServerSaw = append(res.ServerSaw, run.AddrChange{At: ev.At, From: ev.Fields["from"], To: ev.Fields["to"],
						Evidence: "pqharness server: picoquic_get_peer_addr changed: " + ev.Line})
				}
			case "served":
				served = ev.Int("bytes")
			}
		})})
	if err != nil {
		return res, err
	}
	defer srv.Kill()
	if err := srv.AwaitReady(ctx, listening, "pqharness server", filepath.Join(env.Dir, "server.stderr"), 10*time.Second); err != nil {
		return res, err
	}

	dl := run.Download{Size: size, Progress: env.Progress}
	var pendingProbe string
	cli, err := run.Start(run.ProcSpec{Role: "client", NS: env.Net.ClientNS(), Dir: env.Dir,
		Cmd: env.Net.Command(ctx, env.Net.ClientNS(), bin, "client", "--addr", srvIP, "--port", strconv.Itoa(Port),
			"--local-a", env.Net.ClientAddr(run.PathA).String(), "--local-b", env.Net.ClientAddr(run.PathB).String(),
			"--qlog", qc, "--cc", cc, "--scenario", string(env.Scenario),
			"--migrate-at-ms", strconv.FormatInt(env.Plan.MigrateAt().Milliseconds(), 10),
			"--back-after-ms", strconv.FormatInt(max(env.Plan.BackAfter(), 5*time.Second).Milliseconds(), 10),
			"--timeout-ms", strconv.FormatInt(timeout.Milliseconds(), 10)),
		OnStdout: onEvent("client", func(ev Event) {
			mu.Lock()
			defer mu.Unlock()
			switch ev.Name {
			case "start":
				res.Settings["client_sockets"] = fmt.Sprintf("A=%s B=%s A2=%s", ev.Fields["A"], ev.Fields["B"], ev.Fields["A2"])
			case "probe":
				pendingProbe = ev.Line
				res.Notes = append(res.Notes, "client: "+ev.Line)
			case "local":
				if ev.Fields["from"] != "none" {
					evd := "pqharness client: "
					if pendingProbe != "" {
						evd += pendingProbe + "; "
					}
					evd += ev.Line + "; picoquic_get_local_addr (the default path's local address) is now " + ev.Fields["to"]
					res.Moves = append(res.Moves, run.AddrChange{At: ev.At, From: ev.Fields["from"], To: ev.Fields["to"], Evidence: evd})
				}
			case "nat":
				res.Moves = append(res.Moves, run.AddrChange{At: ev.At, From: ev.Fields["from"], To: ev.Fields["to"],
					Evidence: "pqharness client: " + ev.Line + "; the harness sends the connection's datagrams from the path-B socket without telling picoquic (NAT rebinding): the source address is now " + ev.Fields["to"]})
			case "progress", "received", "done":
				dl.Line(ev.Name, ev.Int)
			case "error":
				res.Notes = append(res.Notes, "client: "+ev.Line)
			}
		})})
	if err != nil {
		return res, err
	}
	defer cli.Kill()
	crec := cli.Wait(env.Plan.ClientTimeout)
	// The server exits by itself once the closed connection is freed (its
	// qlog is written then); give it time, then SIGINT (it frees the
	// connection and writes the qlog before exiting).
	srec, note := srv.AwaitExit("server", 15*time.Second, syscall.SIGINT, 60*time.Second)
	if note != "" {
		res.Notes = append(res.Notes, note)
	}
	res.Processes = []run.Process{srec, crec}

	mu.Lock()
	dl.Record(&res, crec, served)
	res.Notes = append(res.Notes, parseErrs...)
	mu.Unlock()

	st, err := findQlog(env.Dir, "qlog-server")
	if err != nil {
		return res, err
	}
	res.ServerTrace = st
	if sz, n, total, err := SendSize(filepath.Join(env.Dir, st)); err == nil {
		res.Params = map[string]run.Param{"S": {Value: float64(sz), Source: fmt.Sprintf("server qlog: most frequent datagram_sent size, %d of %d datagrams (picoquic's send size after PMTU discovery)", n, total)}}
	} else {
		res.Notes = append(res.Notes, "send size: "+err.Error())
	}
	if ct, err := findQlog(env.Dir, "qlog-client"); err == nil {
		res.ClientTrace = ct
	} else {
		res.Notes = append(res.Notes, "client qlog: "+err.Error())
	}
	if len(parseErrs) > 0 {
		return res, fmt.Errorf("pqharness printed malformed event lines: %s", parseErrs[0])
	}
	if ctx.Err() != nil {
		return res, ctx.Err()
	}
	return res, nil
}

// SendSize returns the most frequent datagram size the server sent, how
// many datagrams had it and how many were sent.
func SendSize(trace string) (size, n, total int64, err error) {
	tl, err := parsers.ParseFile(trace, parsers.Options{})
	if err != nil {
		return 0, 0, 0, err
	}
	counts := map[int64]int64{}
	for _, e := range tl.Events {
		if e.Kind == timeline.DatagramSent && e.SizeBytes > 0 {
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
		return 0, 0, 0, fmt.Errorf("%s: no datagram_sent sizes", trace)
	}
	return size, n, total, nil
}

func migrationAPI(sc run.Scenario) string {
	switch sc {
	case run.PortRebind:
		return "picoquic_probe_new_path from a second socket on the path-A address (new port)"
	case run.NATRebind:
		return "none: the harness sends the connection's datagrams from the path-B socket without telling picoquic"
	case run.MigrateBack:
		return "picoquic_probe_new_path from the path-B socket, then from a second socket on the path-A address"
	}
	return "picoquic_probe_new_path from a socket bound to the path-B address"
}

// findQlog returns the one qlog picoquic wrote in dir/sub.
func findQlog(dir, sub string) (string, error) {
	m, _ := filepath.Glob(filepath.Join(dir, sub, "*.qlog"))
	if len(m) != 1 {
		all, _ := filepath.Glob(filepath.Join(dir, sub, "*"))
		return "", fmt.Errorf("%s: expected exactly one .qlog, found %d (directory holds %d files; a binary log left unconverted means the process was killed before freeing its connection)", filepath.Join(dir, sub), len(m), len(all))
	}
	rel, _ := filepath.Rel(dir, m[0])
	return rel, nil
}

func init() {
	run.Register("picoquic", func() run.Harness {
		return New(func(s string) { fmt.Fprintln(os.Stderr, "migaudit: "+s) })
	})
}
