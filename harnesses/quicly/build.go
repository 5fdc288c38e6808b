package quicly

import (
	"context"
	_ "embed"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/migaudit/migaudit/harnesses/upstream"
)

//go:embed csrc/qlyharness.c
var harnessC []byte

const (
	// Upstream is quicly's repository.
	Upstream = "https://github.com/h2o/quicly"
	// RecipeVersion changes when the build steps below change.
	RecipeVersion = "quicly-1"
	// Binary is the harness executable inside the harness build directory.
	Binary = "qlyharness"
	// OutLibrary is quicly's static library inside the library build.
	OutLibrary = "quicly/libquicly.a"
)

// Dep is one of quicly's submodules the build exports from its own
// repository at the commit quicly's tree points to (its gitlink).
type Dep struct {
	Name, Path, Upstream string
}

// Deps are the submodules the library and harness need: picotls (TLS, and
// the ptls_log event log) and klib (khash.h, used by lib/quicly.c).
// deps/picotest is test-only and not built.
var Deps = []Dep{
	{"picotls", "deps/picotls", "https://github.com/h2o/picotls"},
	{"klib", "deps/klib", "https://github.com/attractivechaos/klib"},
}

// DepNames lists the --dep names the harness takes.
func DepNames() []string {
	var out []string
	for _, d := range Deps {
		out = append(out, d.Name)
	}
	return out
}

// cmakeOptions configure quicly without USDT probes (the event log does not
// need them) and without the Fusion AES-GCM engine (the cli's only).
var cmakeOptions = []string{"-DCMAKE_BUILD_TYPE=Release", "-DWITH_DTRACE=OFF", "-DWITH_FUSION=OFF"}

var harnessCFlags = []string{"-O2", "-g", "-std=gnu11", "-Wall", "-Wno-unused-function"}

// picotlsFiles are the picotls sources quicly's own programs compile in
// (CMakeLists.txt PICOTLS_OPENSSL_FILES).
var picotlsFiles = []string{"lib/hpke.c", "lib/openssl.c", "lib/pembase64.c", "lib/picotls.c"}

// libOptions are the library recipe's options: cmake's, and each --dep
// given with an explicit commit (it changes what is built, so the key).
func libOptions(o upstream.Options) []string {
	out := append([]string{}, cmakeOptions...)
	for _, d := range Deps {
		if v, ok := o.Deps[d.Name]; ok {
			if _, rev, found := strings.Cut(v, "@"); found {
				out = append(out, "dep:"+d.Name+"@"+rev)
			}
		}
	}
	return out
}

func quiclySource(o upstream.Options, commit string) upstream.Source {
	return upstream.Source{Impl: "quicly", Upstream: Upstream, Dir: o.Source, Commit: commit}
}

// LibRecipe builds libquicly.a at o.Commit (default: the pinned commit) with
// its submodules exported from their own repositories at the commits
// quicly's tree pins (--dep NAME=DIR[@COMMIT] overrides the repository and,
// with @COMMIT, the commit).
func LibRecipe(o upstream.Options) upstream.Recipe {
	return upstream.Recipe{
		Impl: "quicly-lib", Version: RecipeVersion,
		Src:      quiclySource(o, o.Commit),
		Options:  libOptions(o),
		Tools:    []string{"cmake", "make", "cc", "perl"},
		Packages: []string{"libssl-dev"},
		Build:    func(ctx context.Context, w *upstream.Workspace) error { return buildLib(ctx, w, o) },
		Outputs:  []string{OutLibrary},
	}
}

func buildLib(ctx context.Context, w *upstream.Workspace, o upstream.Options) error {
	for _, d := range Deps {
		commit, ok := w.Submodules[d.Path]
		dir, rev, _ := strings.Cut(o.Deps[d.Name], "@")
		if rev != "" {
			commit = rev
		} else if !ok {
			var have []string
			for p := range w.Submodules {
				have = append(have, p)
			}
			sort.Strings(have)
			return fmt.Errorf("this quicly commit has no %s submodule (it has: %s); pass --dep %s=DIR@COMMIT", d.Path, strings.Join(have, ", "), d.Name)
		}
		if _, err := w.Export(upstream.Source{Impl: d.Name, Upstream: d.Upstream, Dir: dir, Commit: commit, Dep: true}, filepath.Join(w.SrcDir, filepath.FromSlash(d.Path))); err != nil {
			return fmt.Errorf("export quicly's %s at %s: %w", d.Path, commit, err)
		}
	}
	// CMake checks the sources of every target when it generates, test.t's
	// deps/picotest/picotest.c among them; the submodule is test-only and
	// never compiled here: empty placeholders stand in.
	for _, n := range []string{"picotest.c", "picotest.h"} {
		p := filepath.Join(w.SrcDir, "deps", "picotest", n)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if _, err := os.Stat(p); os.IsNotExist(err) {
			if err := os.WriteFile(p, nil, 0o644); err != nil {
				return fmt.Errorf("placeholder %s: %w", p, err)
			}
		}
	}
	bd := filepath.Join(w.BuildDir, "quicly")
	args := append([]string{"-S", w.SrcDir, "-B", bd}, cmakeOptions...)
	if err := w.Run(ctx, w.BuildDir, "cmake", args...); err != nil {
		return fmt.Errorf("configure quicly: %w", err)
	}
	if err := w.Run(ctx, w.BuildDir, "cmake", "--build", bd, fmt.Sprintf("-j%d", max(1, w.Jobs)), "--target", "quicly"); err != nil {
		return fmt.Errorf("build quicly: %w", err)
	}
	return nil
}

// HarnessRecipe compiles csrc/qlyharness.c and picotls's sources against
// the library build lib (headers from the same exported trees).
func HarnessRecipe(o upstream.Options, lib *upstream.Artifact) upstream.Recipe {
	opts := []string{"library:" + lib.Key}
	for _, f := range harnessCFlags {
		opts = append(opts, "cc:"+f)
	}
	return upstream.Recipe{
		Impl: "quicly", Version: RecipeVersion,
		Src:      quiclySource(o, lib.Commit),
		Options:  opts,
		Files:    map[string][]byte{"qlyharness.c": harnessC},
		Tools:    []string{"cc"},
		Packages: []string{"libssl-dev"},
		Build: func(ctx context.Context, w *upstream.Workspace) error {
			src := filepath.Join(lib.Dir, "src")
			ptls := filepath.Join(src, "deps", "picotls")
			args := append([]string{}, harnessCFlags...)
			args = append(args, "-DQLY_COMMIT=\""+lib.Commit+"\"",
				"-I"+filepath.Join(src, "include"), "-I"+filepath.Join(ptls, "include"), "-I"+filepath.Join(src, "deps", "klib"),
				filepath.Join(w.FilesDir, "qlyharness.c"))
			for _, f := range picotlsFiles {
				args = append(args, filepath.Join(ptls, filepath.FromSlash(f)))
			}
			args = append(args, lib.Path(OutLibrary), "-lcrypto", "-lpthread", "-lm", "-ldl", "-o", filepath.Join(w.BuildDir, Binary))
			if err := w.Run(ctx, w.BuildDir, "cc", args...); err != nil {
				return fmt.Errorf("compile harnesses/quicly/csrc/qlyharness.c against quicly: %w", err)
			}
			return nil
		},
		Outputs: []string{Binary},
	}
}

// Built is the library and harness builds a run uses.
type Built struct {
	Lib, Harness *upstream.Artifact
}

// Ensure builds (or reuses) the library and the harness for o.
func Ensure(ctx context.Context, o upstream.Options, log io.Writer) (*Built, error) {
	// A --dep directory is read only when the library is built; a cached
	// build would otherwise hide one that does not exist.
	for _, d := range Deps {
		v, ok := o.Deps[d.Name]
		if !ok {
			continue
		}
		dir, _, _ := strings.Cut(v, "@")
		if _, err := os.Stat(dir); err != nil {
			return nil, fmt.Errorf("--dep %s=%s: %v; pass a clone or bare mirror of %s (git clone --mirror %s DIR)", d.Name, v, err, d.Upstream, d.Upstream)
		}
	}
	lib, err := upstream.Ensure(ctx, LibRecipe(o), log)
	if err != nil {
		return nil, err
	}
	h, err := upstream.Ensure(ctx, HarnessRecipe(o, lib), log)
	if err != nil {
		return nil, err
	}
	return &Built{Lib: lib, Harness: h}, nil
}
