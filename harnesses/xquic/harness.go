// Package xquic is the live harness for xquic, built from the user's
// upstream checkout (harnesses/upstream): BoringSSL from its own checkout
// (harnesses/boringssl, --dep boringssl=DIR[@COMMIT]; the same build as
// lsquic's), libxquic-static at the chosen commit, and this project's own
// client and server (csrc/xqharness.c) linked against them.
//
// xquic has no API for a single-path client to move its connection to
// another local address: additional paths exist only with multipath
// (xqc_conn_create_path), which the peer must negotiate, and a new peer
// address on a connection without it is handled as a NAT rebinding of its
// one path. So, as with lsquic (harnesses/twosock), at MigrateAt the client
// sends every datagram from its socket bound to the path-B address and
// hands what arrives there to xqc_engine_packet_process with that local
// address; the server sees the new peer address. Both sides report what
// xqc_conn_get_peer_addr/xqc_conn_get_local_addr say, print
// xqc_conn_get_stats every 5 ms and xquic's own log (parsers' xquic-log
// format). The server writes the TLS secrets (the engine's keylog_cb).
package xquic

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
	// DefaultCC is xquic's own default: a connection whose settings name no
	// controller gets xqc_cubic_cb (xqc_send_ctl_create,
	// src/transport/xqc_send_ctl.c at the pinned commit).
	DefaultCC = "cubic"
)

// Harness builds xquic from source and runs xqharness.
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

func (h *Harness) Name() string { return "xquic" }

// ConfigureUpstream takes --source, --commit and --dep boringssl=DIR[@COMMIT].
func (h *Harness) ConfigureUpstream(o upstream.Options) error {
	if err := upstream.CheckDeps("xquic", o.Deps, Deps...); err != nil {
		return err
	}
	if _, err := upstream.Open(upstream.Source{Impl: "xquic", Upstream: Upstream, Dir: o.Source, Commit: o.Commit}); err != nil {
		return err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.opts, h.built = o, nil
	return nil
}

// Capabilities: the client changes its IP address once.
func (h *Harness) Capabilities() run.Capabilities {
	return twosock.Capabilities("xquic (without multipath a client has one path, and a new peer address is a NAT rebinding of it)",
		[]string{"cubic", "bbr"}, DefaultCC, map[string]string{"bbr1": "bbr", "bbrv1": "bbr"},
		"the harness links xquic's default build, which has xqc_cubic_cb and xqc_bbr_cb (Reno, BBRv2 and Copa need XQC_ENABLE_* build options)")
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

// Check builds (or finds in the cache, sha256-verified) BoringSSL, xquic
// and the harness, and returns the harness binary and the libraries.
func (h *Harness) Check(ctx context.Context) (run.Binaries, error) {
	b, err := h.ensure(ctx)
	if err != nil {
		return nil, err
	}
	bin := b.Harness.Path(Binary)
	out, err := exec.CommandContext(ctx, bin, "version").Output()
	if err != nil {
		return nil, fmt.Errorf("xquic harness %s version: %w", bin, err)
	}
	ver := strings.TrimSpace(string(out))
	if !strings.HasPrefix(ver, "xquic ") {
		return nil, fmt.Errorf("xquic harness %s version printed %q", bin, ver)
	}
	src := fmt.Sprintf("xqharness version (xqc_configure.h); xquic %s, boringssl %s; build.json in %s", b.Lib.Commit, b.BoringSSL.Commit, b.Harness.Dir)
	hb, err := run.FileBinary("harness", bin, strings.TrimPrefix(ver, "xquic ")+"+"+b.Lib.Commit[:12], src)
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

// RunRep runs one download with a migration (harnesses/twosock).
func (h *Harness) RunRep(ctx context.Context, env run.RepEnv) (run.RepResult, error) {
	b, err := h.ensure(ctx)
	if err != nil {
		return run.RepResult{}, err
	}
	bin := b.Harness.Path(Binary)
	ver := ""
	if out, err := exec.CommandContext(ctx, bin, "version").Output(); err == nil {
		ver = strings.TrimPrefix(strings.TrimSpace(string(out)), "xquic ") + "+" + b.Lib.Commit[:12]
	}
	return twosock.RunRep(ctx, env, twosock.Spec{Prefix: "xqc", Name: "xqharness", Bin: bin, Version: ver,
		Settings: b.settings(), MigrationAPI: migrationAPI})
}

func migrationAPI(sc run.Scenario) string {
	if sc == run.NATRebind {
		return "none told to xquic: the client's datagrams leave from the path-B socket, and what arrives there is handed to xqc_engine_packet_process with the path-A address (NAT rebinding)"
	}
	return "no single-path client migration API in xquic: the client's datagrams leave from the path-B socket, and what arrives there is handed to xqc_engine_packet_process with the path-B local address"
}

func init() {
	run.Register("xquic", func() run.Harness {
		return New(func(s string) { fmt.Fprintln(os.Stderr, "migaudit: "+s) })
	})
}
