package picoquic

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/migaudit/migaudit/harnesses/upstream"
)

//go:embed csrc/pqharness.c
var harnessC []byte

const (
	// Upstream is picoquic's repository.
	Upstream = "https://github.com/private-octopus/picoquic"
	// PicotlsUpstream is picotls's repository; its mirror is h2o+picotls.
	PicotlsUpstream = "https://github.com/h2o/picotls"
	// RecipeVersion changes when the build steps below change.
	RecipeVersion = "picoquic-1"
	// Binary is the harness executable inside the build directory.
	Binary = "pqharness"
)

// Build options, recorded in build.json and every manifest. Prefixes say
// which step takes them. Nothing is fetched: picoquic's own picotls
// download is off and CMake's FetchContent is disconnected.
var (
	picotlsOptions = []string{
		"-DCMAKE_BUILD_TYPE=Release", "-DWITH_FUSION=OFF", "-DWITH_DTRACE=OFF", "-DWITH_AEGIS=OFF", "-DWITH_MBEDTLS=OFF",
	}
	picoquicOptions = []string{
		"-DCMAKE_BUILD_TYPE=Release", "-DPICOQUIC_FETCH_PTLS=OFF", "-DFETCHCONTENT_FULLY_DISCONNECTED=ON",
		"-DWITH_OPENSSL=ON", "-DWITH_MBEDTLS=OFF", "-DPTLS_WITH_FUSION=OFF", "-DWITH_FUSION=OFF",
		"-DDISABLE_DEBUG_PRINTF=ON", "-Dpicoquic_BUILD_TESTS=OFF", "-DBUILD_DEMO=OFF", "-DBUILD_HTTP=OFF",
		"-DBUILD_PQBENCH=OFF", "-DBUILD_LOGREADER=OFF", "-DBUILD_PICO_SIM=OFF", "-DBUILD_LOGLIB=ON",
	}
	harnessCFlags = []string{"-O2", "-g", "-std=gnu11"}
)

// libOptions is the library recipe's option list.
func libOptions() []string {
	var out []string
	for _, o := range picotlsOptions {
		out = append(out, "picotls:"+o)
	}
	for _, o := range picoquicOptions {
		out = append(out, "picoquic:"+o)
	}
	return out
}

var (
	reCIPtls   = regexp.MustCompile(`(?m)^\s*COMMIT_ID=\s*"?([0-9a-f]{40})"?`)
	reCMakeTag = regexp.MustCompile(`(?s)FetchContent_Declare\(\s*picotls\s+GIT_REPOSITORY\s+\S+\s+GIT_TAG\s+"?([0-9a-f]{40})"?`)
	reDefTag   = regexp.MustCompile(`set\(PICOQUIC_FETCH_PTLS_DEFAULT_TAG "([0-9a-f]{40})"\)`)
)

// PicotlsCommit reads, from picoquic's own tree at its commit, the picotls
// commit that commit's CI builds against (ci/build_picotls.sh COMMIT_ID),
// else the one its CMake would fetch (the non-AEGIS default tag, or the
// GIT_TAG of the picotls FetchContent). It returns the commit and where it
// was read.
func PicotlsCommit(read func(path string) ([]byte, error)) (string, string, error) {
	if b, err := read("ci/build_picotls.sh"); err == nil {
		if m := reCIPtls.FindSubmatch(b); m != nil {
			return string(m[1]), "ci/build_picotls.sh COMMIT_ID", nil
		}
	}
	b, err := read("CMakeLists.txt")
	if err != nil {
		return "", "", fmt.Errorf("picoquic tree has neither ci/build_picotls.sh nor CMakeLists.txt naming a picotls commit: %w", err)
	}
	// With AEGIS the pinned CMake sets a different tag; the last
	// PICOQUIC_FETCH_PTLS_DEFAULT_TAG in the file is the else (non-AEGIS) branch.
	if ms := reDefTag.FindAllSubmatch(b, -1); len(ms) > 0 {
		return string(ms[len(ms)-1][1]), "CMakeLists.txt PICOQUIC_FETCH_PTLS_DEFAULT_TAG (without AEGIS)", nil
	}
	if m := reCMakeTag.FindSubmatch(b); m != nil {
		return string(m[1]), "CMakeLists.txt FetchContent picotls GIT_TAG", nil
	}
	return "", "", errors.New("picoquic's ci/build_picotls.sh and CMakeLists.txt name no picotls commit; pass one with --dep picotls=DIR@COMMIT")
}

// Recipes returns the two build recipes for o: the library (picotls and
// picoquic at the commit, with the picotls commit picoquic's tree asks for)
// and, given the library's artifact, the harness linked against it. The
// split keeps a change to pqharness.c from rebuilding the library.
// picotlsFrom says where the picotls commit was read.
func LibRecipe(o upstream.Options) (r upstream.Recipe, picotlsFrom string, err error) {
	src := upstream.Source{Impl: "picoquic", Upstream: Upstream, Dir: o.Source, Commit: o.Commit}
	snap, err := upstream.Open(src)
	if err != nil {
		return upstream.Recipe{}, "", err
	}
	dep := upstream.Source{Impl: "picotls", Upstream: PicotlsUpstream}
	dir, rev, _ := strings.Cut(o.Deps["picotls"], "@")
	dep.Dir = dir
	from := "--dep picotls=DIR@COMMIT"
	if rev != "" {
		dep.Commit = rev
	} else {
		c, where, err := PicotlsCommit(snap.ReadFile)
		if err != nil {
			return upstream.Recipe{}, "", err
		}
		dep.Commit, from = c, fmt.Sprintf("picoquic %s %s", snap.Commit()[:12], where)
	}
	return upstream.Recipe{
		Impl: "picoquic-lib", Version: RecipeVersion,
		Src:      upstream.Source{Impl: "picoquic", Upstream: Upstream, Dir: o.Source, Commit: snap.Commit()},
		Deps:     map[string]upstream.Source{"picotls": dep},
		Options:  libOptions(),
		Tools:    []string{"cmake", "make", "cc", "c++"},
		Packages: []string{"libssl-dev"},
		Build:    buildLib,
		Outputs:  []string{"picoquic/libpicoquic-core.a", "picoquic/libpicoquic-log.a", "picotls/libpicotls-core.a", "picotls/libpicotls-openssl.a", "picotls/libpicotls-minicrypto.a"},
	}, from, nil
}

// HarnessRecipe compiles csrc/pqharness.c against the library build lib.
func HarnessRecipe(o upstream.Options, lib *upstream.Artifact) upstream.Recipe {
	opts := []string{"library:" + lib.Key}
	for _, f := range harnessCFlags {
		opts = append(opts, "cc:"+f)
	}
	return upstream.Recipe{
		Impl: "picoquic", Version: RecipeVersion,
		Src:      upstream.Source{Impl: "picoquic", Upstream: Upstream, Dir: o.Source, Commit: lib.Commit},
		Options:  opts,
		Files:    map[string][]byte{"pqharness.c": harnessC},
		Tools:    []string{"cc"},
		Packages: []string{"libssl-dev"},
		Build: func(ctx context.Context, w *upstream.Workspace) error {
			ptlsInc := filepath.Join(lib.Dir, "deps", "picotls", "include")
			cc := append([]string{}, harnessCFlags...)
			cc = append(cc,
				"-I"+filepath.Join(w.SrcDir, "picoquic"), "-I"+filepath.Join(w.SrcDir, "loglib"), "-I"+ptlsInc,
				filepath.Join(w.FilesDir, "pqharness.c"),
				lib.Path("picoquic/libpicoquic-log.a"), lib.Path("picoquic/libpicoquic-core.a"),
				lib.Path("picotls/libpicotls-openssl.a"), lib.Path("picotls/libpicotls-minicrypto.a"),
				lib.Path("picotls/libpicotls-core.a"),
				"-lssl", "-lcrypto", "-lpthread", "-lm", "-ldl",
				"-o", filepath.Join(w.BuildDir, Binary))
			if err := w.Run(ctx, w.BuildDir, "cc", cc...); err != nil {
				return fmt.Errorf("compile harnesses/picoquic/csrc/pqharness.c against picoquic: %w", err)
			}
			return nil
		},
		Outputs: []string{Binary},
	}
}

func buildLib(ctx context.Context, w *upstream.Workspace) error {
	ptls := w.DepDirs["picotls"]
	ptlsBuild := filepath.Join(w.BuildDir, "picotls")
	pqBuild := filepath.Join(w.BuildDir, "picoquic")
	jobs := fmt.Sprintf("-j%d", max(1, w.Jobs))

	// picotls's CMakeLists lists test programs whose sources live in the
	// deps/picotest submodule; CMake checks every target's sources when it
	// generates, although only the three libraries below are built. The
	// submodule is test-only and not mirrored: empty placeholders stand in.
	if err := placeholder(filepath.Join(ptls, "deps", "picotest"), "picotest.c", "picotest.h"); err != nil {
		return err
	}
	args := append([]string{"-S", ptls, "-B", ptlsBuild}, picotlsOptions...)
	if err := w.Run(ctx, w.BuildDir, "cmake", args...); err != nil {
		return fmt.Errorf("configure picotls: %w", err)
	}
	if err := w.Run(ctx, w.BuildDir, "cmake", "--build", ptlsBuild, jobs, "--target", "picotls-core", "picotls-openssl", "picotls-minicrypto"); err != nil {
		return fmt.Errorf("build picotls: %w", err)
	}
	args = append([]string{"-S", w.SrcDir, "-B", pqBuild}, picoquicOptions...)
	args = append(args,
		"-DPTLS_INCLUDE_DIR="+filepath.Join(ptls, "include"),
		"-DPTLS_CORE_LIBRARY="+filepath.Join(ptlsBuild, "libpicotls-core.a"),
		"-DPTLS_OPENSSL_LIBRARY="+filepath.Join(ptlsBuild, "libpicotls-openssl.a"),
		"-DPTLS_MINICRYPTO_LIBRARY="+filepath.Join(ptlsBuild, "libpicotls-minicrypto.a"),
		"-DPTLS_FUSION_LIBRARY=PTLS_FUSION_LIBRARY-NOTFOUND")
	if err := w.Run(ctx, w.BuildDir, "cmake", args...); err != nil {
		return fmt.Errorf("configure picoquic: %w", err)
	}
	if err := w.Run(ctx, w.BuildDir, "cmake", "--build", pqBuild, jobs, "--target", "picoquic-core", "picoquic-log"); err != nil {
		return fmt.Errorf("build picoquic: %w", err)
	}
	return nil
}

// placeholder creates empty files in dir unless they exist.
func placeholder(dir string, names ...string) error {
	for _, n := range names {
		p := filepath.Join(dir, n)
		if err := createIfMissing(p); err != nil {
			return fmt.Errorf("placeholder %s: %w", p, err)
		}
	}
	return nil
}

func createIfMissing(p string) error {
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, os.ErrExist) {
		return nil
	}
	if err != nil {
		return err
	}
	return f.Close()
}

// Built is the library and harness builds a run uses.
type Built struct {
	Lib, Harness *upstream.Artifact
	// PicotlsFrom says where the picotls commit was read.
	PicotlsFrom string
}

// Ensure builds (or reuses) the library and the harness for o.
func Ensure(ctx context.Context, o upstream.Options, log io.Writer) (*Built, error) {
	lr, from, err := LibRecipe(o)
	if err != nil {
		return nil, err
	}
	lib, err := upstream.Ensure(ctx, lr, log)
	if err != nil {
		return nil, err
	}
	h, err := upstream.Ensure(ctx, HarnessRecipe(o, lib), log)
	if err != nil {
		return nil, err
	}
	return &Built{Lib: lib, Harness: h, PicotlsFrom: from}, nil
}
