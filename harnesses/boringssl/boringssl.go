// Package boringssl builds BoringSSL out of tree from a user's checkout (a
// clone or bare mirror of google/boringssl), cached by commit, for the
// harnesses whose implementation links it (lsquic, xquic). It is a
// dependency, named on the command line as --dep boringssl=DIR[@COMMIT].
package boringssl

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/migaudit/migaudit/harnesses/upstream"
)

const (
	// Upstream is BoringSSL's repository; its mirror is google+boringssl.
	Upstream = "https://github.com/google/boringssl"
	// DefaultCommit is the tag lsquic's README names ("git checkout
	// 0.20250807.0") and that xquic (which builds against BoringSSL's
	// master) also builds with, so one BoringSSL build serves both.
	DefaultCommit = "0.20250807.0"
	// RecipeVersion changes when the build steps below change.
	RecipeVersion = "boringssl-1"
)

// Options are the cmake options: static, position-independent libraries
// (xquic links them into a shared library), no tests.
var Options = []string{
	"-DCMAKE_BUILD_TYPE=Release", "-DBUILD_SHARED_LIBS=0", "-DCMAKE_POSITION_INDEPENDENT_CODE=ON", "-DBUILD_TESTING=OFF",
}

// Skip are test-data paths not exported: the build (BUILD_TESTING=OFF)
// never reads them, and the google/boringssl mirror lacks their blobs.
var Skip = []string{"crypto/cipher/test/nist_cavp/", "crypto/hpke/test-vectors.json", "ssl/test/runner/hpke/testdata/"}

// Outputs are the libraries, relative to the artifact's build directory.
var Outputs = []string{"libssl.a", "libcrypto.a"}

// Source returns the BoringSSL source for a --dep value "DIR[@COMMIT]" ("" =
// the mirror at DefaultCommit).
func Source(dep string) upstream.Source {
	dir, rev, _ := strings.Cut(dep, "@")
	if rev == "" {
		rev = DefaultCommit
	}
	return upstream.Source{Impl: "boringssl", Upstream: Upstream, Dir: dir, Commit: rev, Dep: true}
}

// Recipe builds libssl.a and libcrypto.a from src.
func Recipe(src upstream.Source) upstream.Recipe {
	return upstream.Recipe{
		Impl: "boringssl", Version: RecipeVersion, Src: src, Options: append([]string(nil), Options...),
		Tools: []string{"cmake", "make", "cc", "c++", "perl"},
		Build: func(ctx context.Context, w *upstream.Workspace) error {
			args := append([]string{"-S", w.SrcDir, "-B", w.BuildDir}, Options...)
			if err := w.Run(ctx, w.BuildDir, "cmake", args...); err != nil {
				return fmt.Errorf("configure boringssl: %w", err)
			}
			if err := w.Run(ctx, w.BuildDir, "cmake", "--build", w.BuildDir, fmt.Sprintf("-j%d", max(1, w.Jobs)), "--target", "ssl", "crypto"); err != nil {
				return fmt.Errorf("build boringssl: %w", err)
			}
			return nil
		},
		Outputs: append([]string(nil), Outputs...),
		SkipSrc: append([]string(nil), Skip...),
	}
}

// Built is a BoringSSL build: its headers and static libraries.
type Built struct {
	*upstream.Artifact
}

// Include is the header directory (in the exported source).
func (b Built) Include() string { return filepath.Join(b.Dir, "src", "include") }

// SSL and Crypto are the static libraries.
func (b Built) SSL() string    { return b.Path("libssl.a") }
func (b Built) Crypto() string { return b.Path("libcrypto.a") }

// Ensure builds (or reuses) BoringSSL for a --dep value.
func Ensure(ctx context.Context, dep string, log io.Writer) (Built, error) {
	src := Source(dep)
	a, err := upstream.Ensure(ctx, Recipe(src), log)
	if err != nil {
		if src.Dir != "" && errors.Is(err, fs.ErrNotExist) {
			return Built{}, fmt.Errorf("%w; --dep boringssl= wants a clone or bare mirror of %s (git clone --mirror %s DIR)", err, Upstream, Upstream)
		}
		return Built{}, err
	}
	return Built{a}, nil
}
