package msquic

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/migaudit/migaudit/harnesses/upstream"
)

// pinCommit is the commit of data/implementations.json's msquic entry.
const pinCommit = "4db8b3987100034e9ded68df2c4d3526cbeeeaad"

// TestUninstrumentedKeyUnchanged: --instrument must not move the ordinary
// build's cache entry. The key below is the one the library build in the
// cache was recorded under before the instrumented recipe existed
// (build.json of ~/.cache/migaudit/build/msquic/4db8b3987100-46546021d367).
func TestUninstrumentedKeyUnchanged(t *testing.T) {
	const recorded = "46546021d367b88c370b011b85592fb2edd854e6cce1e698d8731e5e9b09c82a"
	r := LibraryRecipe(upstream.Options{})
	if got := upstream.Key(r, pinCommit, nil); got != recorded {
		t.Fatalf("the uninstrumented library's cache key is %s, was %s: a change to LibraryRecipe (impl, version, options or files) rebuilds every user's msquic", got, recorded)
	}
	if len(r.Files) != 0 || r.Impl != "msquic" {
		t.Fatalf("LibraryRecipe carries files %v / impl %q; the instrumentation belongs to InstrumentedLibraryRecipe only", r.Files, r.Impl)
	}
}

func TestInstrumentedKeyCoversPatch(t *testing.T) {
	plain := upstream.Key(LibraryRecipe(upstream.Options{}), pinCommit, nil)
	r := InstrumentedLibraryRecipe(upstream.Options{})
	k := upstream.Key(r, pinCommit, nil)
	if k == plain || r.Impl == "msquic" {
		t.Fatalf("instrumented build shares the uninstrumented key or cache directory (impl %q)", r.Impl)
	}
	if !bytes.Equal(r.Files[InstrumentPatchFile], instrumentPatch) {
		t.Fatalf("the recipe's %s is not the embedded patch", InstrumentPatchFile)
	}
	edited := append(append([]byte(nil), instrumentPatch...), '\n')
	r.Files = map[string][]byte{InstrumentPatchFile: edited}
	if upstream.Key(r, pinCommit, nil) == k {
		t.Fatal("editing the patch leaves the cache key unchanged")
	}
	if len(InstrumentPatchSHA256()) != 64 {
		t.Fatalf("InstrumentPatchSHA256 = %q", InstrumentPatchSHA256())
	}
}

// TestPatchIsOurs: every added line of the patch is ours (it names
// migaudit, or is part of a block that does), and it removes nothing.
func TestPatchIsOurs(t *testing.T) {
	var added, ours int
	for _, l := range strings.Split(string(instrumentPatch), "\n") {
		switch {
		case strings.HasPrefix(l, "+++") || strings.HasPrefix(l, "---"):
		case strings.HasPrefix(l, "-"):
			t.Errorf("the patch removes an upstream line: %q", l)
		case strings.HasPrefix(l, "+"):
			added++
			if strings.Contains(strings.ToLower(l), "migaudit") {
				ours++
			}
		}
	}
	if added == 0 || ours < 10 {
		t.Fatalf("%d added lines, %d naming migaudit", added, ours)
	}
}

// TestPatchAppliesAtPin applies the patch to the pinned tree exported from
// the mirror (skipped without $MIGAUDIT_MIRRORS).
func TestPatchAppliesAtPin(t *testing.T) {
	if _, err := exec.LookPath("patch"); err != nil {
		t.Skip("patch not installed (apt-get install patch)")
	}
	snap, err := upstream.Open(msquicSource(upstream.Options{}, ""))
	if err != nil {
		if upstream.IsNoSource(err) {
			t.Skipf("no msquic mirror: %v (set MIGAUDIT_MIRRORS)", err)
		}
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, f := range []string{"src/core/loss_detection.c", "src/core/path.c", "src/core/path.h", "src/core/cubic.c"} {
		b, err := snap.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, filepath.FromSlash(f))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command("patch", "-p1", "--forward", "--batch")
	cmd.Dir, cmd.Stdin = dir, bytes.NewReader(instrumentPatch)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("patch at %s: %v\n%s", snap.Commit(), err, out)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "src/core/loss_detection.c"))
	if !strings.Contains(string(b), `"RTT_GATE server=%d`) {
		t.Fatal("patched loss_detection.c has no RTT_GATE line")
	}
}
