package twosock

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sort"
	"strings"
	"sync"

	"github.com/migaudit/migaudit/harnesses/boringssl"
	"github.com/migaudit/migaudit/harnesses/run"
	"github.com/migaudit/migaudit/harnesses/upstream"
)

// Built is the BoringSSL, library and harness builds a run uses.
type Built struct {
	BoringSSL    boringssl.Built
	Lib, Harness *upstream.Artifact
}

// Lib describes one library built from its checkout against BoringSSL.
type Lib struct {
	// Impl is the name data.Lookup knows ("lsquic"); Upstream its repository.
	Impl, Upstream string
	// Deps are the --dep names it takes ("boringssl", …).
	Deps []string
	// Binary and Library are the harness executable and the library
	// archive, relative to their artifacts' build directories; Prefix is
	// the harness's stdout line prefix ("lsq").
	Binary, Library, Prefix string
	// VersionFrom says where the binary's version line comes from.
	VersionFrom string
	// Ensure builds (or reuses) BoringSSL, the library and the harness.
	Ensure func(ctx context.Context, o upstream.Options, log io.Writer) (*Built, error)
	// Caps, MigrationAPI and Settings are the library's own.
	Caps         run.Capabilities
	MigrationAPI func(run.Scenario) string
	Settings     func(b *Built, s map[string]string)
}

// Harness is a run.Harness (and upstream.Configurable) for a Lib.
type Harness struct {
	lib   Lib
	opts  upstream.Options
	log   func(string)
	mu    sync.Mutex
	built *Built
}

// New returns the harness for lib; log receives build progress lines.
func New(lib Lib, log func(string)) *Harness {
	if log == nil {
		log = func(string) {}
	}
	return &Harness{lib: lib, log: log}
}

func (h *Harness) Name() string { return h.lib.Impl }

// Capabilities are the library's.
func (h *Harness) Capabilities() run.Capabilities { return h.lib.Caps }

// ConfigureUpstream takes --source, --commit and --dep NAME=DIR[@COMMIT];
// a wrong source or commit is reported before anything is built.
func (h *Harness) ConfigureUpstream(o upstream.Options) error {
	if err := upstream.CheckDeps(h.lib.Impl, o.Deps, h.lib.Deps...); err != nil {
		return err
	}
	if _, err := upstream.Open(upstream.Source{Impl: h.lib.Impl, Upstream: h.lib.Upstream, Dir: o.Source, Commit: o.Commit}); err != nil {
		return err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.opts, h.built = o, nil
	return nil
}

func (h *Harness) ensure(ctx context.Context) (*Built, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.built != nil {
		return h.built, nil
	}
	b, err := h.lib.Ensure(ctx, h.opts, upstream.LineWriter(h.log))
	if err != nil {
		return nil, err
	}
	h.built = b
	return b, nil
}

// version runs "BIN version" and returns what follows "<impl> ", with the
// library commit appended.
func (h *Harness) version(ctx context.Context, b *Built) (string, error) {
	bin := b.Harness.Path(h.lib.Binary)
	out, err := exec.CommandContext(ctx, bin, "version").Output()
	if err != nil {
		return "", fmt.Errorf("%s harness %s version: %w", h.lib.Impl, bin, err)
	}
	ver := strings.TrimSpace(string(out))
	if !strings.HasPrefix(ver, h.lib.Impl+" ") {
		return "", fmt.Errorf("%s harness %s version printed %q", h.lib.Impl, bin, ver)
	}
	return strings.TrimPrefix(ver, h.lib.Impl+" ") + "+" + b.Lib.Commit[:12], nil
}

// Check builds (or finds in the cache, sha256-verified) BoringSSL, the
// library and the harness, and returns the harness binary and the
// libraries.
func (h *Harness) Check(ctx context.Context) (run.Binaries, error) {
	b, err := h.ensure(ctx)
	if err != nil {
		return nil, err
	}
	ver, err := h.version(ctx, b)
	if err != nil {
		return nil, err
	}
	src := fmt.Sprintf("%s version (%s); %s %s, boringssl %s; build.json in %s", h.lib.Binary, h.lib.VersionFrom, h.lib.Impl, b.Lib.Commit, b.BoringSSL.Commit, b.Harness.Dir)
	hb, err := run.FileBinary("harness", b.Harness.Path(h.lib.Binary), ver, src)
	if err != nil {
		return nil, err
	}
	bins := run.Binaries{hb}
	for _, l := range []struct {
		a   *upstream.Artifact
		out string
	}{{b.Lib, h.lib.Library}, {b.BoringSSL.Artifact, "libssl.a"}, {b.BoringSSL.Artifact, "libcrypto.a"}} {
		st, err := os.Stat(l.a.Path(l.out))
		if err != nil {
			return nil, err
		}
		bins = append(bins, run.Binary{Role: "library", Path: l.a.Path(l.out), Size: st.Size(), SHA256: l.a.SHA256[l.out],
			Version: l.a.Commit, VersionSource: "build.json in " + l.a.Dir})
	}
	return bins, nil
}

// settings records the builds in every manifest.
func (h *Harness) settings(b *Built) map[string]string {
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
		"harness_sha256":    b.Harness.SHA256[h.lib.Binary],
		"build_recipe":      b.Lib.Recipe,
		"build_duration":    b.Lib.Duration,
		"boringssl_build":   b.BoringSSL.Duration,
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
	if h.lib.Settings != nil {
		h.lib.Settings(b, s)
	}
	return s
}

// RunRep runs one download with a migration.
func (h *Harness) RunRep(ctx context.Context, env run.RepEnv) (run.RepResult, error) {
	b, err := h.ensure(ctx)
	if err != nil {
		return run.RepResult{}, err
	}
	ver, _ := h.version(ctx, b)
	return RunRep(ctx, env, Spec{Prefix: h.lib.Prefix, Name: h.lib.Binary, Bin: b.Harness.Path(h.lib.Binary), Version: ver,
		Settings: h.settings(b), MigrationAPI: h.lib.MigrationAPI})
}
