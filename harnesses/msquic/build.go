package msquic

import (
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/migaudit/migaudit/harnesses/upstream"
)

//go:embed c/migaudit_msquic.c
var harnessC []byte

// instrumentPatch is this project's instrumentation of msquic (our own log
// lines only; the rest is diff context): applied to the exported copy in the
// build cache for `migaudit run --impl msquic --instrument`, never to the
// user's checkout. It logs, to the file $MIGAUDIT_INSTRUMENT_LOG names, one
// RTT_GATE line per ACK frame that acknowledged packets (the receiving path's
// ID, the largest newly acknowledged packet's number and recorded PathId,
// NewLargestAckRetransmittable, NewLargestAckDifferentPath and whether
// QuicConnUpdateRtt ran), PATH_NEW and PATH_ACTIVE lines where path IDs are
// assigned and QuicPathSetActive swaps Paths[0], and a SENT line whenever the
// sending path or the PathId stamped on the sent packet's metadata changes.
// parsers/msquiclog reads the format.
//
//go:embed patches/instrument.patch
var instrumentPatch []byte

// InstrumentPatchFile is the patch's name in the build's files directory
// (and so in the cache key: upstream.Key hashes every recipe file).
const InstrumentPatchFile = "patches/instrument.patch"

// InstrumentLogEnv names the file the instrumented library appends to.
const InstrumentLogEnv = "MIGAUDIT_INSTRUMENT_LOG"

// InstrumentPatchSHA256 is the sha256 of the embedded instrumentation patch.
func InstrumentPatchSHA256() string {
	s := sha256.Sum256(instrumentPatch)
	return hex.EncodeToString(s[:])
}

// RecipeVersion is part of the build-cache key: bump it when Build changes.
const RecipeVersion = "msquic-1"

// TLS library choices. msquic's default QUIC_TLS_LIB is quictls, built from
// its submodules/quictls gitlink and linked statically into libmsquic. The
// other choice, QUIC_TLS_LIB=openssl, needs OpenSSL ≥ 3.5 (the first release
// with the QUIC TLS API): Debian bookworm's libssl-dev is 3.0 and the
// openssl/openssl submodule cannot be fetched here, so quictls is the only
// TLS library msquic can be built with on this machine.
const (
	TLSLib        = "quictls"
	quictlsPath   = "submodules/quictls"
	quictlsRepo   = "https://github.com/quictls/openssl"
	quictlsSource = "quictls"
)

// Options are the cmake options of the build (part of the cache key):
// Release, quictls, the shared library only — no tests, tools, perf or
// logging, and no git hash (the export has no .git).
var Options = []string{
	"-DCMAKE_BUILD_TYPE=Release",
	"-DQUIC_TLS_LIB=" + TLSLib,
	"-DQUIC_BUILD_SHARED=ON",
	"-DQUIC_BUILD_TEST=OFF",
	"-DQUIC_BUILD_TOOLS=OFF",
	"-DQUIC_BUILD_PERF=OFF",
	"-DQUIC_ENABLE_LOGGING=OFF",
	"-DQUIC_EMBED_GIT_HASH=OFF",
}

// Outputs, relative to their build directories. The library is built once
// per commit and options (LibraryRecipe, minutes: quictls and msquic); the
// harness is compiled against it in a second, cheap build (HarnessRecipe,
// seconds) keyed by the library's build and the harness source, so editing
// the harness never rebuilds the library. The harness build holds its own
// copy of the library beside the executable (rpath $ORIGIN/../lib).
const (
	OutHarness = "bin/migaudit-msquic"
	OutLibrary = "lib/libmsquic.so.2"
)

// LibraryRecipe is msquic at o.Commit (default: the pinned commit) from
// o.Source, with its quictls submodule exported from its own repository
// (--dep quictls=DIR, else the quictls/openssl mirror).
func LibraryRecipe(o upstream.Options) upstream.Recipe {
	return upstream.Recipe{
		Impl:    "msquic",
		Version: RecipeVersion,
		Src:     msquicSource(o, o.Commit),
		Options: Options,
		Tools:   []string{"cmake", "make", "cc", "perl"},
		Build: func(ctx context.Context, w *upstream.Workspace) error {
			return buildLibrary(ctx, w, o.Deps[quictlsSource])
		},
		Outputs: []string{OutLibrary},
	}
}

// InstrumentedLibraryRecipe is LibraryRecipe with patches/instrument.patch
// applied to the export before cmake runs. Its own cache directory
// (msquic-instrumented) and key (the patch is one of its Files) keep it apart
// from the uninstrumented build, whose recipe and key are unchanged.
func InstrumentedLibraryRecipe(o upstream.Options) upstream.Recipe {
	r := LibraryRecipe(o)
	r.Impl = "msquic-instrumented"
	r.Files = map[string][]byte{InstrumentPatchFile: instrumentPatch}
	r.Tools = append(r.Tools, "patch")
	r.Build = func(ctx context.Context, w *upstream.Workspace) error {
		if err := w.Run(ctx, w.SrcDir, "patch", "-p1", "--forward", "--batch", "-i", filepath.Join(w.FilesDir, filepath.FromSlash(InstrumentPatchFile))); err != nil {
			return fmt.Errorf("apply %s to the export (does --commit differ from the pin the patch was written for?): %w", InstrumentPatchFile, err)
		}
		return buildLibrary(ctx, w, o.Deps[quictlsSource])
	}
	return r
}

// HarnessRecipe compiles c/migaudit_msquic.c against lib (a LibraryRecipe
// artifact) with the headers of the same commit.
func HarnessRecipe(o upstream.Options, lib *upstream.Artifact) upstream.Recipe {
	libPath := lib.Path(OutLibrary)
	return upstream.Recipe{
		Impl:    "msquic-harness",
		Version: RecipeVersion,
		Src:     msquicSource(o, lib.Commit),
		Options: []string{"library_build=" + lib.Dir, "library_sha256=" + lib.SHA256[OutLibrary], "cc -O2 -std=gnu11"},
		Files:   map[string][]byte{"migaudit_msquic.c": harnessC},
		Tools:   []string{"cc"},
		Build: func(ctx context.Context, w *upstream.Workspace) error {
			return buildHarness(ctx, w, libPath)
		},
		Outputs: []string{OutHarness, OutLibrary},
	}
}

func msquicSource(o upstream.Options, commit string) upstream.Source {
	return upstream.Source{Impl: "msquic", Upstream: "https://github.com/microsoft/msquic", Dir: o.Source, Commit: commit}
}

func buildLibrary(ctx context.Context, w *upstream.Workspace, quictlsDir string) error {
	commit, ok := w.Submodules[quictlsPath]
	if !ok {
		var have []string
		for p := range w.Submodules {
			have = append(have, p)
		}
		sort.Strings(have)
		return fmt.Errorf("this msquic commit has no %s submodule (it has: %s): the recipe builds the QUIC_TLS_LIB=quictls layout of msquic v2.5 and later; v2.4 and earlier select quictls 1.1/3.1 through QUIC_TLS=openssl|openssl3 (submodules/openssl, submodules/openssl3), which it does not build — pass --commit v2.5.0 or later", quictlsPath, strings.Join(have, ", "))
	}
	// quictls's test/ tree is not built (msquic configures it with
	// no-tests) and is skipped: the quictls mirror lacks one of its blobs.
	dst := filepath.Join(w.SrcDir, filepath.FromSlash(quictlsPath))
	if _, err := w.ExportSkipping(upstream.Source{Impl: quictlsSource, Upstream: quictlsRepo, Dir: quictlsDir, Commit: commit}, dst, []string{"test/"}); err != nil {
		return fmt.Errorf("export %s at %s: %w", quictlsPath, commit, err)
	}
	jobs := strconv.Itoa(max(w.Jobs, 1))
	cm := filepath.Join(w.BuildDir, "cmake")
	args := append([]string{"-S", w.SrcDir, "-B", cm}, w.Options...)
	if err := w.Run(ctx, w.BuildDir, "cmake", args...); err != nil {
		return err
	}
	if err := w.Run(ctx, w.BuildDir, "cmake", "--build", cm, "--target", "msquic", "--parallel", jobs); err != nil {
		return err
	}
	lib, err := findLibrary(cm)
	if err != nil {
		return err
	}
	return copyFile(lib, filepath.Join(w.BuildDir, OutLibrary))
}

func buildHarness(ctx context.Context, w *upstream.Workspace, libPath string) error {
	if err := copyFile(libPath, filepath.Join(w.BuildDir, OutLibrary)); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(w.BuildDir, "bin"), 0o755); err != nil {
		return err
	}
	return w.Run(ctx, w.BuildDir, "cc", "-O2", "-g", "-Wall", "-Wno-unused-parameter", "-std=gnu11",
		"-I", filepath.Join(w.SrcDir, "src", "inc"),
		"-o", filepath.Join(w.BuildDir, OutHarness), filepath.Join(w.FilesDir, "migaudit_msquic.c"),
		filepath.Join(w.BuildDir, OutLibrary), "-Wl,-rpath,$ORIGIN/../lib", "-lpthread")
}

// copyFile copies src (following a symbolic link) to dst, creating dst's
// directory.
func copyFile(src, dst string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	return os.WriteFile(dst, b, 0o755)
}

// findLibrary finds the built libmsquic.so.2 (bin/Release/ in the build
// trees of the commits tried; searched rather than assumed).
func findLibrary(buildDir string) (string, error) {
	var found string
	_ = filepath.Walk(buildDir, func(p string, info os.FileInfo, err error) error {
		if err != nil || found != "" {
			return nil
		}
		if info.Name() == "libmsquic.so.2" && (info.Mode().IsRegular() || info.Mode()&os.ModeSymlink != 0) {
			found = p
		}
		return nil
	})
	if found == "" {
		return "", fmt.Errorf("the build produced no libmsquic.so.2 under %s", buildDir)
	}
	return found, nil
}
