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
	"sort"
	"strings"
	"sync"

	"github.com/migaudit/migaudit/harnesses/run"
	"github.com/migaudit/migaudit/harnesses/twosock"
	"github.com/migaudit/migaudit/harnesses/upstream"
)

const (
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
	return twosock.Capabilities("lsquic (its client migrates only to a server's preferred_address)",
		[]string{"adaptive", "cubic", "bbr"}, DefaultCC, map[string]string{"bbr1": "bbr", "bbrv1": "bbr"},
		"lsquic's es_cc_algo selects Cubic (1), BBRv1 (2) or adaptive (3, the default)")
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
	if rec, err := os.ReadFile(b.Lib.Path(SubmodulesFile)); err == nil {
		s["submodules"] = strings.ReplaceAll(strings.TrimSpace(string(rec)), "\n", "; ")
	}
	var tools []string
	for k, v := range b.Lib.Tools {
		tools = append(tools, k+"="+v)
	}
	sort.Strings(tools)
	s["build_tools"] = strings.Join(tools, "; ")
	return s
}

// RunRep runs one download with a migration (harnesses/twosock).
func (h *Harness) RunRep(ctx context.Context, env run.RepEnv) (run.RepResult, error) {
	b, err := h.ensure(ctx)
	if err != nil {
		return run.RepResult{}, err
	}
	bin := b.Harness.Path(Binary)
	ver := ""
	if out, err := exec.CommandContext(ctx, bin, "version").Output(); err == nil {
		ver = strings.TrimPrefix(strings.TrimSpace(string(out)), "lsquic ") + "+" + b.Lib.Commit[:12]
	}
	return twosock.RunRep(ctx, env, twosock.Spec{Prefix: "lsq", Name: "lsqharness", Bin: bin, Version: ver,
		Settings: b.settings(), MigrationAPI: migrationAPI})
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
