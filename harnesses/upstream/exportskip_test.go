package upstream

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
)

// A mirror that lacks a blob under a tree the build never reads (the
// quictls/openssl mirror lacks one test vector): Export stops at it,
// ExportSkipping leaves that tree out and records what it skipped.
func TestExportSkippingMissingBlob(t *testing.T) {
	t.Setenv(CacheEnv, t.TempDir())
	src, _ := newRepo(t, map[string]string{"main.txt": "main\n"})
	lost := "vector only the tests read\n"
	dep, _ := newRepo(t, map[string]string{"lib.txt": "lib\n", "test/keep.txt": "t\n", "test/recipes/evprand.txt": lost})
	h := plumbing.ComputeHash(plumbing.BlobObject, []byte(lost)).String()
	if err := os.Remove(filepath.Join(dep, ".git", "objects", h[:2], h[2:])); err != nil {
		t.Fatalf("remove the blob to simulate the incomplete mirror: %v", err)
	}
	r := func(skip []string) Recipe {
		return Recipe{
			Impl: "toy", Version: "1",
			Src:     Source{Impl: "toy", Upstream: "https://example.org/o/toy", Dir: src, Commit: "HEAD"},
			Options: []string{strings.Join(skip, ",")},
			Build: func(ctx context.Context, w *Workspace) error {
				dst := filepath.Join(w.SrcDir, "sub")
				var err error
				if skip == nil {
					_, err = w.Export(Source{Impl: "lib", Upstream: "https://example.org/o/lib", Dir: dep, Commit: "HEAD"}, dst)
				} else {
					_, err = w.ExportSkipping(Source{Impl: "lib", Upstream: "https://example.org/o/lib", Dir: dep, Commit: "HEAD"}, dst, skip)
				}
				if err != nil {
					return err
				}
				return w.Run(ctx, w.BuildDir, "sh", "-c", `cat "$0/lib.txt" > out.bin && test ! -e "$0/test"`, dst)
			},
			Outputs: []string{"out.bin"},
		}
	}
	if _, err := Ensure(context.Background(), r(nil), nil); err == nil || !strings.Contains(err.Error(), "evprand.txt") {
		t.Fatalf("Export of the incomplete tree: err = %v, want one naming the missing file", err)
	}
	a, err := Ensure(context.Background(), r([]string{"test/"}), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := a.Deps["src/sub.skipped"]; got != "2 files under test/" {
		t.Errorf("recorded skip %q, want \"2 files under test/\" (deps %v)", got, a.Deps)
	}
	if a.Deps["src/sub"] == "" {
		t.Errorf("the exported commit is not recorded: %v", a.Deps)
	}
}
