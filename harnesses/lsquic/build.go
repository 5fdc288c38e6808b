package lsquic

import (
	"context"
	_ "embed"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/migaudit/migaudit/harnesses/boringssl"
	"github.com/migaudit/migaudit/harnesses/twosock"
	"github.com/migaudit/migaudit/harnesses/upstream"
)

//go:embed csrc/lsqharness.c
var harnessC []byte

const (
	// Upstream is lsquic's repository.
	Upstream = "https://github.com/litespeedtech/lsquic"
	// RecipeVersion changes when the build steps below change.
	RecipeVersion = "lsquic-2"
	// Binary is the harness executable inside the build directory.
	Binary = "lsqharness"
	// Library is lsquic's static library inside the library build.
	Library = "cmake/src/liblsquic/liblsquic.a"
)

// submodule is one of lsquic's two git submodules, exported from its own
// mirror at the commit lsquic's tree records.
type submodule struct {
	path, dep, upstream string
}

var submodules = []submodule{
	{"src/liblsquic/ls-qpack", "ls-qpack", "https://github.com/litespeedtech/ls-qpack"},
	{"src/lshpack", "ls-hpack", "https://github.com/litespeedtech/ls-hpack"},
}

// Deps are the --dep names the harness takes.
var Deps = []string{"boringssl", "ls-qpack", "ls-hpack"}

var (
	lsquicOptions = []string{
		"-DCMAKE_BUILD_TYPE=Release", "-DLSQUIC_BIN=OFF", "-DLSQUIC_TESTS=OFF", "-DLSQUIC_SHARED_LIB=OFF",
		"-DLSQUIC_LIBSSL=BORINGSSL",
	}
	harnessCFlags = []string{"-O2", "-g", "-std=gnu11"}
)

// LibRecipe builds liblsquic.a at o's commit against the BoringSSL build
// bssl, with ls-qpack and ls-hpack exported from their mirrors at the
// commits lsquic's tree records (or --dep NAME=DIR@COMMIT).
func LibRecipe(o upstream.Options, bssl boringssl.Built) (upstream.Recipe, error) {
	src := upstream.Source{Impl: "lsquic", Upstream: Upstream, Dir: o.Source, Commit: o.Commit}
	snap, err := upstream.Open(src)
	if err != nil {
		return upstream.Recipe{}, err
	}
	src.Commit = snap.Commit()
	opts := []string{"boringssl:" + bssl.Key}
	for _, s := range submodules {
		if d := o.Deps[s.dep]; d != "" {
			opts = append(opts, s.dep+":"+d)
		}
	}
	for _, op := range lsquicOptions {
		opts = append(opts, "lsquic:"+op)
	}
	return upstream.Recipe{
		Impl: "lsquic-lib", Version: RecipeVersion, Src: src, Options: opts,
		Tools:    []string{"cmake", "make", "cc", "perl"},
		Packages: []string{"zlib1g-dev"},
		Build: func(ctx context.Context, w *upstream.Workspace) error {
			var record []string
			for _, s := range submodules {
				r, err := exportSubmodule(w, s, o.Deps[s.dep])
				if err != nil {
					return err
				}
				record = append(record, r)
			}
			if err := os.WriteFile(filepath.Join(w.BuildDir, SubmodulesFile), []byte(strings.Join(record, "\n")+"\n"), 0o644); err != nil {
				return err
			}
			cm := filepath.Join(w.BuildDir, "cmake")
			args := append([]string{"-S", w.SrcDir, "-B", cm}, lsquicOptions...)
			args = append(args, "-DBORINGSSL_INCLUDE="+bssl.Include(), "-DBORINGSSL_LIB="+bssl.BuildDir)
			if err := w.Run(ctx, w.BuildDir, "cmake", args...); err != nil {
				return fmt.Errorf("configure lsquic: %w", err)
			}
			if err := w.Run(ctx, w.BuildDir, "cmake", "--build", cm, fmt.Sprintf("-j%d", max(1, w.Jobs)), "--target", "lsquic"); err != nil {
				return fmt.Errorf("build lsquic: %w", err)
			}
			return nil
		},
		Outputs: []string{Library, SubmodulesFile},
	}, nil
}

// SubmodulesFile records, in the library build, which commit of each
// submodule was built and why.
const SubmodulesFile = "submodules.txt"

// exportSubmodule exports s into the lsquic tree: from --dep DIR[@COMMIT]
// when given, else from its mirror at the gitlink commit lsquic records.
// When the mirror lacks that commit (the GitHub snapshots of ls-qpack and
// ls-hpack hold only their default branch, and lsquic pins commits beyond
// it), the mirror's HEAD is built instead and the substitution is recorded
// in SubmodulesFile (and so in every manifest). It returns that record.
func exportSubmodule(w *upstream.Workspace, s submodule, dep string) (string, error) {
	dir, rev, _ := strings.Cut(dep, "@")
	gitlink, ok := w.Submodules[s.path]
	if rev != "" {
		c, err := w.Export(upstream.Source{Impl: s.dep, Upstream: s.upstream, Dir: dir, Commit: rev, Dep: true}, filepath.Join(w.SrcDir, filepath.FromSlash(s.path)))
		if err != nil {
			return "", fmt.Errorf("lsquic submodule %s: --dep %s=%s: %w", s.path, s.dep, dep, err)
		}
		return fmt.Sprintf("%s %s (--dep %s; lsquic's gitlink %s)", s.path, c, s.dep, gitlink), nil
	}
	if !ok {
		return "", fmt.Errorf("this lsquic commit has no %s submodule; pass --dep %s=DIR@COMMIT", s.path, s.dep)
	}
	dst := filepath.Join(w.SrcDir, filepath.FromSlash(s.path))
	src := upstream.Source{Impl: s.dep, Upstream: s.upstream, Dir: dir, Commit: gitlink, Dep: true}
	c, err := w.Export(src, dst)
	if err == nil {
		return fmt.Sprintf("%s %s (lsquic's gitlink)", s.path, c), nil
	}
	if upstream.IsNoSource(err) {
		return "", err
	}
	src.Commit = "HEAD"
	c, err2 := w.Export(src, dst)
	stub := ""
	if err2 != nil {
		// The mirrors lack the blob of huff-tables.h (the one large file of
		// ls-qpack and ls-hpack, never changed since 2019). Export the rest
		// and stand in for it (HuffStub): the harness uses no HTTP, so
		// neither HPACK nor QPACK Huffman coding runs.
		if err := os.RemoveAll(dst); err != nil {
			return "", err
		}
		var err3 error
		if c, err3 = w.ExportSkipping(src, dst, []string{"huff-tables.h"}); err3 != nil {
			return "", fmt.Errorf("lsquic submodule %s at %s: %w; its mirror's HEAD: %v; pass --dep %s=DIR@COMMIT with a checkout that has a commit lsquic builds with", s.path, short(gitlink), err, err2, s.dep)
		}
		if err := os.WriteFile(filepath.Join(dst, "huff-tables.h"), []byte(HuffStub), 0o644); err != nil {
			return "", err
		}
		stub = "; huff-tables.h: its blob is missing from the mirror, replaced by migaudit's HuffStub (empty Huffman tables: HPACK/QPACK Huffman coding unusable, the harness uses no HTTP)"
	}
	note := fmt.Sprintf("%s %s (the mirror's HEAD: lsquic's gitlink %s is not in the %s mirror; pass --dep %s=DIR@%s with a clone that has it%s)", s.path, c, gitlink, s.dep, s.dep, short(gitlink), stub)
	fmt.Fprintln(w.Log, "note: "+note)
	return note, nil
}

// HuffStub stands in for ls-qpack's and ls-hpack's huff-tables.h when a
// mirror lacks its blob: the types lsqpack.c and lshpack.c use, zeroed
// tables, and the small-table code paths (the 64 KB tables are left out).
// Huffman-coded header fields cannot be decoded with it; the lsquic
// harness opens no HTTP/3 or gQUIC streams, so none are.
const HuffStub = `/* migaudit substitute for huff-tables.h (its blob is missing from the mirror): empty tables. */
#include <stdint.h>
#undef LS_QPACK_USE_LARGE_TABLES
#define LS_QPACK_USE_LARGE_TABLES 0
#undef LS_HPACK_USE_LARGE_TABLES
#define LS_HPACK_USE_LARGE_TABLES 0
struct encode_el { uint32_t code; int bits; };
struct decode_el { uint8_t state; uint8_t flags; uint8_t sym; };
static const struct encode_el encode_table[257];
static const struct decode_el decode_tables[256][16];
`

func short(s string) string {
	if len(s) > 12 {
		return s[:12]
	}
	return s
}

// HarnessRecipe compiles csrc/lsqharness.c against the library build lib
// and BoringSSL.
func HarnessRecipe(o upstream.Options, lib *upstream.Artifact, bssl boringssl.Built) upstream.Recipe {
	opts := []string{"library:" + lib.Key, "boringssl:" + bssl.Key}
	for _, f := range harnessCFlags {
		opts = append(opts, "cc:"+f)
	}
	return upstream.Recipe{
		Impl: "lsquic", Version: RecipeVersion,
		Src:      upstream.Source{Impl: "lsquic", Upstream: Upstream, Dir: o.Source, Commit: lib.Commit},
		Options:  opts,
		Files:    map[string][]byte{"lsqharness.c": harnessC},
		Tools:    []string{"cc"},
		Packages: []string{"zlib1g-dev"},
		Build: func(ctx context.Context, w *upstream.Workspace) error {
			cc := append([]string{}, harnessCFlags...)
			cc = append(cc, "-I"+filepath.Join(w.SrcDir, "include"), "-I"+bssl.Include(),
				filepath.Join(w.FilesDir, "lsqharness.c"),
				lib.Path(Library), bssl.SSL(), bssl.Crypto(),
				"-lz", "-lstdc++", "-lpthread", "-lm",
				"-o", filepath.Join(w.BuildDir, Binary))
			if err := w.Run(ctx, w.BuildDir, "cc", cc...); err != nil {
				return fmt.Errorf("compile harnesses/lsquic/csrc/lsqharness.c against lsquic: %w", err)
			}
			return nil
		},
		Outputs: []string{Binary},
	}
}

// Built is the BoringSSL, library and harness builds a run uses.
type Built = twosock.Built

// Ensure builds (or reuses) BoringSSL, lsquic and the harness for o.
func Ensure(ctx context.Context, o upstream.Options, log io.Writer) (*Built, error) {
	if err := upstream.CheckDeps("lsquic", o.Deps, Deps...); err != nil {
		return nil, err
	}
	bssl, err := boringssl.Ensure(ctx, o.Deps["boringssl"], log)
	if err != nil {
		return nil, err
	}
	lr, err := LibRecipe(o, bssl)
	if err != nil {
		return nil, err
	}
	lib, err := upstream.Ensure(ctx, lr, log)
	if err != nil {
		return nil, err
	}
	h, err := upstream.Ensure(ctx, HarnessRecipe(o, lib, bssl), log)
	if err != nil {
		return nil, err
	}
	return &Built{BoringSSL: bssl, Lib: lib, Harness: h}, nil
}
