package ngtcp2

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/migaudit/migaudit/audit/gitsrc"
	"github.com/migaudit/migaudit/harnesses/upstream"
)

const (
	// Upstream is ngtcp2's repository.
	Upstream = "https://github.com/ngtcp2/ngtcp2"
	// Nghttp3Upstream is nghttp3's repository (the examples' HTTP/3 layer).
	Nghttp3Upstream = "https://github.com/ngtcp2/nghttp3"
	// SfparseUpstream and UrlparseUpstream are the submodules the build
	// needs: nghttp3's lib/sfparse (nghttp3 ≥ 1.1) and ngtcp2's
	// third-party/urlparse (ngtcp2 ≥ 1.17).
	SfparseUpstream  = "https://github.com/ngtcp2/sfparse"
	UrlparseUpstream = "https://github.com/ngtcp2/urlparse"
	// RecipeVersion is part of the build-cache key: bump it when Build changes.
	RecipeVersion = "ngtcp2-1"
	// OutClient and OutServer are the example programs, relative to the
	// build directory; the shared libraries beside them are outputs too.
	OutClient    = "ngtcp2/examples/gtlsclient"
	OutServer    = "ngtcp2/examples/gtlsserver"
	OutLib       = "ngtcp2/lib/libngtcp2.so"
	OutCrypto    = "ngtcp2/crypto/gnutls/libngtcp2_crypto_gnutls.so"
	OutNghttp3   = "nghttp3-prefix/lib/libnghttp3.a"
	sfparsePath  = "lib/sfparse"
	urlparsePath = "third-party/urlparse"
)

// Build options (part of the cache key). nghttp3 is built as a static
// library only and installed into the build directory; ngtcp2 with GnuTLS
// (Debian's 3.7.9) and libev, its OpenSSL backend off (Debian's OpenSSL 3.0
// has no QUIC API), shared libraries (the examples link them, with the
// build tree's rpath), no tests.
var (
	nghttp3Options = []string{"-DCMAKE_BUILD_TYPE=RelWithDebInfo", "-DENABLE_LIB_ONLY=ON", "-DENABLE_SHARED_LIB=OFF",
		"-DENABLE_STATIC_LIB=ON", "-DBUILD_TESTING=OFF", "-DCMAKE_INSTALL_LIBDIR=lib", "-DCMAKE_POSITION_INDEPENDENT_CODE=ON"}
	ngtcp2Options = []string{"-DCMAKE_BUILD_TYPE=RelWithDebInfo", "-DENABLE_GNUTLS=ON", "-DENABLE_OPENSSL=OFF",
		"-DENABLE_STATIC_LIB=OFF", "-DENABLE_SHARED_LIB=ON", "-DBUILD_TESTING=OFF"}
)

// cxx23Options build the examples of commits that ask for C++23
// (examples/CMakeLists.txt CXX_STANDARD 23, ngtcp2 ≥ 1.2x: <print>,
// std::println) with clang 19 and libc++ 19; Debian bookworm's g++ 12 has
// neither <print> nor <format>. Older commits use the default compiler.
// (CMAKE_CXX_FLAGS reach the C++ link line too; linker flags would reach
// the C compiler's checks, which reject -stdlib.)
var cxx23Options = []string{"-DCMAKE_CXX_COMPILER=clang++-19", "-DCMAKE_CXX_FLAGS=-stdlib=libc++"}

var reCXX23 = regexp.MustCompile(`CXX_STANDARD\s+23`)

// NeedsCXX23 reports whether ngtcp2's examples at a commit are C++23.
func NeedsCXX23(read func(path string) ([]byte, error)) bool {
	b, err := read("examples/CMakeLists.txt")
	return err == nil && reCXX23.Match(b)
}

func options(cxx23 bool) []string {
	var out []string
	for _, o := range nghttp3Options {
		out = append(out, "nghttp3:"+o)
	}
	for _, o := range ngtcp2Options {
		out = append(out, "ngtcp2:"+o)
	}
	if cxx23 {
		for _, o := range cxx23Options {
			out = append(out, "ngtcp2:"+o)
		}
	}
	return out
}

// ngtcp2Args are the ngtcp2 cmake options among a recipe's options.
func ngtcp2Args(opts []string) []string {
	var out []string
	for _, o := range opts {
		if a, ok := strings.CutPrefix(o, "ngtcp2:"); ok {
			out = append(out, a)
		}
	}
	return out
}

var (
	reCMakeNghttp3 = regexp.MustCompile(`find_package\(\s*Libnghttp3\s+([0-9]+\.[0-9]+\.[0-9]+)`)
	reConfNghttp3  = regexp.MustCompile(`libnghttp3\s*>=\s*([0-9]+\.[0-9]+\.[0-9]+)`)
)

// Nghttp3Version reads, from ngtcp2's tree at its commit, the minimum
// libnghttp3 version the examples need: CMakeLists.txt's
// find_package(Libnghttp3 X), else (when that says 0.0.0 or nothing, as
// v1.0.0's does) configure.ac's `libnghttp3 >= X`. It returns the version
// and where it was read.
func Nghttp3Version(read func(path string) ([]byte, error)) (string, string, error) {
	if b, err := read("CMakeLists.txt"); err == nil {
		if m := reCMakeNghttp3.FindSubmatch(b); m != nil && string(m[1]) != "0.0.0" {
			return string(m[1]), "CMakeLists.txt find_package(Libnghttp3 " + string(m[1]) + ")", nil
		}
	}
	if b, err := read("configure.ac"); err == nil {
		if m := reConfNghttp3.FindSubmatch(b); m != nil {
			return string(m[1]), "configure.ac PKG_CHECK_MODULES libnghttp3 >= " + string(m[1]), nil
		}
	}
	return "", "", errors.New("ngtcp2's CMakeLists.txt and configure.ac state no minimum libnghttp3 version; pass one with --dep nghttp3=DIR@COMMIT")
}

// Plan is what a build of ngtcp2 is made of, resolved before building.
type Plan struct {
	Recipe upstream.Recipe
	// From says, per dependency, where its commit was chosen.
	From map[string]string
	// Warnings are substitutions the user should see (a submodule commit
	// its mirror lacks).
	Warnings []string
}

// NewPlan resolves ngtcp2 at o.Commit (default: the pin) and its
// dependencies: nghttp3 (--dep nghttp3=DIR[@COMMIT], default the nghttp3
// release tag v<minimum> that ngtcp2's tree asks for), and the submodules
// third-party/urlparse of ngtcp2 and lib/sfparse of nghttp3 where those
// commits have them (--dep urlparse=…, --dep sfparse=…).
func NewPlan(o upstream.Options) (*Plan, error) {
	if err := upstream.CheckDeps("ngtcp2", o.Deps, "nghttp3", "sfparse", "urlparse"); err != nil {
		return nil, err
	}
	snap, err := upstream.Open(upstream.Source{Impl: "ngtcp2", Upstream: Upstream, Dir: o.Source, Commit: o.Commit})
	if err != nil {
		return nil, err
	}
	p := &Plan{From: map[string]string{}}
	deps := map[string]upstream.Source{}

	ndir, nrev, _ := strings.Cut(o.Deps["nghttp3"], "@")
	nsrc := upstream.Source{Impl: "nghttp3", Upstream: Nghttp3Upstream, Dir: ndir, Commit: nrev, Dep: true}
	p.From["nghttp3"] = "--dep nghttp3=DIR@COMMIT"
	if nrev == "" {
		v, where, err := Nghttp3Version(snap.ReadFile)
		if err != nil {
			return nil, err
		}
		nsrc.Commit = "v" + v
		p.From["nghttp3"] = fmt.Sprintf("release tag v%s, the minimum ngtcp2 %s states in %s", v, snap.Commit()[:12], where)
	}
	nsnap, err := upstream.Open(nsrc)
	if err != nil {
		if upstream.IsNoSource(err) {
			return nil, fmt.Errorf("ngtcp2's examples need nghttp3 %s and there is no nghttp3 checkout: clone it (git clone --mirror %s $%s/ngtcp2+nghttp3/repo) or pass --dep nghttp3=DIR[@COMMIT]", nsrc.Commit, Nghttp3Upstream, gitsrc.MirrorsEnv)
		}
		return nil, fmt.Errorf("nghttp3 for ngtcp2 %s: %w", snap.Commit()[:12], err)
	}
	nsrc.Commit = nsnap.Commit()
	deps["nghttp3"] = nsrc

	for _, sm := range []struct {
		name, path, upstream string
		in                   *gitsrc.Snapshot
		of                   string
	}{
		{"sfparse", sfparsePath, SfparseUpstream, nsnap, "nghttp3"},
		{"urlparse", urlparsePath, UrlparseUpstream, snap, "ngtcp2"},
	} {
		pinned, ok, err := sm.in.Gitlink(sm.path)
		if err != nil {
			return nil, err
		}
		dir, rev, _ := strings.Cut(o.Deps[sm.name], "@")
		if !ok {
			if o.Deps[sm.name] != "" {
				return nil, fmt.Errorf("--dep %s: %s %s has no %s submodule (its sources are vendored or absent)", sm.name, sm.of, sm.in.Commit()[:12], sm.path)
			}
			continue
		}
		src := upstream.Source{Impl: sm.name, Upstream: sm.upstream, Dir: dir, Commit: rev, Dep: true}
		p.From[sm.name] = "--dep " + sm.name + "=DIR@COMMIT"
		if rev == "" {
			src.Commit = pinned
			p.From[sm.name] = fmt.Sprintf("%s %s gitlink %s", sm.of, sm.in.Commit()[:12], sm.path)
		}
		s, err := upstream.Open(src)
		if err != nil && rev == "" && !upstream.IsNoSource(err) {
			// The submodule's mirror exists but lacks the pinned commit:
			// build its newest commit, and say so everywhere.
			head := src
			head.Commit = "HEAD"
			if hs, herr := upstream.Open(head); herr == nil {
				src.Commit = hs.Commit()
				w := fmt.Sprintf("%s %s pins %s at %s, which %s does not have; building %s's HEAD %s (%s) instead — pass --dep %s=DIR@%s with a clone that has it",
					sm.of, sm.in.Commit()[:12], sm.path, pinned[:12], hs.Dir(), sm.name, hs.Commit()[:12], hs.Time().UTC().Format("2006-01-02"), sm.name, pinned[:12])
				p.Warnings = append(p.Warnings, w)
				p.From[sm.name] = "SUBSTITUTED: " + w
				deps[sm.name] = src
				continue
			}
		}
		if err != nil {
			if upstream.IsNoSource(err) {
				owner, name := gitsrc.OwnerName(sm.upstream)
				return nil, fmt.Errorf("%s %s needs the %s submodule (%s at %s) and there is no checkout of it: git clone --mirror %s $%s/%s+%s/repo, or pass --dep %s=DIR[@COMMIT]",
					sm.of, sm.in.Commit()[:12], sm.path, sm.name, pinned[:12], sm.upstream, gitsrc.MirrorsEnv, owner, name, sm.name)
			}
			return nil, err
		}
		src.Commit = s.Commit()
		deps[sm.name] = src
	}

	cxx23 := NeedsCXX23(snap.ReadFile)
	tools := []string{"cmake", "make", "cc", "c++", "pkg-config"}
	pkgs := []string{"libgnutls28-dev", "libev-dev"}
	if cxx23 {
		tools = append(tools, "clang++-19")
		pkgs = append(pkgs, "libc++-19-dev", "libc++abi-19-dev")
	}
	opts := options(cxx23)
	p.Recipe = upstream.Recipe{
		Impl: "ngtcp2", Version: RecipeVersion,
		Src:      upstream.Source{Impl: "ngtcp2", Upstream: Upstream, Dir: o.Source, Commit: snap.Commit()},
		Deps:     deps,
		Options:  opts,
		Tools:    tools,
		Packages: pkgs,
		Build: func(ctx context.Context, w *upstream.Workspace) error {
			return build(ctx, w, ngtcp2Args(opts))
		},
		Outputs: []string{OutClient, OutServer, OutLib, OutCrypto, OutNghttp3},
	}
	return p, nil
}

func build(ctx context.Context, w *upstream.Workspace, ngtcp2Opts []string) error {
	jobs := fmt.Sprintf("-j%d", max(1, w.Jobs))
	nghttp3 := w.DepDirs["nghttp3"]
	// Submodules go where their parents' builds read them.
	for _, sm := range []struct{ name, into string }{
		{"sfparse", filepath.Join(nghttp3, sfparsePath)},
		{"urlparse", filepath.Join(w.SrcDir, urlparsePath)},
	} {
		d, ok := w.DepDirs[sm.name]
		if !ok {
			continue
		}
		if err := os.MkdirAll(sm.into, 0o755); err != nil {
			return err
		}
		if err := w.Run(ctx, w.BuildDir, "cp", "-a", d+"/.", sm.into+"/"); err != nil {
			return fmt.Errorf("place %s: %w", sm.name, err)
		}
	}
	nb, prefix := filepath.Join(w.BuildDir, "nghttp3"), filepath.Join(w.BuildDir, "nghttp3-prefix")
	args := append([]string{"-S", nghttp3, "-B", nb, "-DCMAKE_INSTALL_PREFIX=" + prefix}, nghttp3Options...)
	if err := w.Run(ctx, w.BuildDir, "cmake", args...); err != nil {
		return fmt.Errorf("configure nghttp3: %w", err)
	}
	if err := w.Run(ctx, w.BuildDir, "cmake", "--build", nb, jobs); err != nil {
		return fmt.Errorf("build nghttp3: %w", err)
	}
	if err := w.Run(ctx, w.BuildDir, "cmake", "--install", nb); err != nil {
		return fmt.Errorf("install nghttp3 into %s: %w", prefix, err)
	}
	tb := filepath.Join(w.BuildDir, "ngtcp2")
	args = append([]string{"-S", w.SrcDir, "-B", tb}, ngtcp2Opts...)
	args = append(args, "-DLIBNGHTTP3_INCLUDE_DIR="+filepath.Join(prefix, "include"), "-DLIBNGHTTP3_LIBRARY="+filepath.Join(w.BuildDir, OutNghttp3))
	if err := w.Run(ctx, w.BuildDir, "cmake", args...); err != nil {
		return fmt.Errorf("configure ngtcp2: %w", err)
	}
	if err := w.Run(ctx, w.BuildDir, "cmake", "--build", tb, jobs, "--target", "gtlsclient", "gtlsserver"); err != nil {
		return fmt.Errorf("build ngtcp2 gtlsclient/gtlsserver: %w", err)
	}
	return nil
}

// Ensure builds (or reuses) ngtcp2 for o; warnings go to log.
func Ensure(ctx context.Context, o upstream.Options, log io.Writer) (*upstream.Artifact, *Plan, error) {
	p, err := NewPlan(o)
	if err != nil {
		return nil, nil, err
	}
	if log != nil {
		for _, w := range p.Warnings {
			fmt.Fprintln(log, "WARNING: "+w)
		}
	}
	a, err := upstream.Ensure(ctx, p.Recipe, log)
	if err != nil {
		return nil, p, err
	}
	return a, p, nil
}

// settings records the build in every manifest.
func settings(a *upstream.Artifact, p *Plan) map[string]string {
	s := map[string]string{
		"build":           "from-checkout",
		"upstream_commit": a.Commit,
		"live_commit":     a.Commit,
		"upstream_source": a.Source,
		"build_options":   strings.Join(a.Options, " "),
		"build_dir":       a.Dir,
		"build_recipe":    a.Recipe,
		"build_duration":  a.Duration,
	}
	for _, n := range []string{"nghttp3", "sfparse", "urlparse"} {
		if c, ok := a.Deps[n]; ok {
			s["dep_"+n] = c
			s["dep_"+n+"_src"] = a.Deps[n+".source"]
			s["dep_"+n+"_from"] = p.From[n]
		}
	}
	s["build_tools"] = a.ToolsLine()
	return s
}
