package validator

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// A planted fault is a copy of the committed survey (and, where the fault
// is in the evidence, a copy of data/evidence) with one false claim in it,
// made consistently, as a careful author would: every copy of the claim
// is changed together. Each must FAIL on the check named after the claim.
type planted struct {
	name, check string
	// survey edits the survey document; files edits the evidence copy
	// (rooted at the shadow repository root) and may return survey edits
	// that go with it.
	survey func(t *testing.T, doc map[string]any)
	files  func(t *testing.T, root string, doc map[string]any)
}

// shadowRoot is a repository root whose data/evidence links every file of
// the real one: a fault replaces the files it touches, nothing else is
// copied, and the committed evidence is never written.
func shadowRoot(t *testing.T, real string) string {
	t.Helper()
	root := t.TempDir()
	src := filepath.Join(real, "data", "evidence")
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(real, p)
		dst := filepath.Join(root, rel)
		if d.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		return os.Symlink(p, dst)
	})
	if err != nil {
		t.Fatal(err)
	}
	// The files beside the evidence that checks read (go.sum for module
	// hashes, the quiche harness's pins, data/constants), linked likewise.
	rels := []string{"go.sum", "go.mod", filepath.Join("harnesses", "quiche", "install.go")}
	tables, _ := filepath.Glob(filepath.Join(real, "data", "constants", "*.json"))
	for _, p := range tables {
		rels = append(rels, filepath.Join("data", "constants", filepath.Base(p)))
	}
	for _, rel := range rels {
		if _, err := os.Stat(filepath.Join(real, rel)); err == nil {
			os.MkdirAll(filepath.Dir(filepath.Join(root, rel)), 0o755)
			if err := os.Symlink(filepath.Join(real, rel), filepath.Join(root, rel)); err != nil {
				t.Fatal(err)
			}
		}
	}
	return root
}

// replaceFile swaps a linked evidence file for new content.
func replaceFile(t *testing.T, root, rel string, content []byte) {
	t.Helper()
	p := filepath.Join(root, rel)
	_ = os.Remove(p)
	if err := os.WriteFile(p, content, 0o644); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func gunzip(t *testing.T, b []byte) []byte {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	out, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// regzip compresses content again at another level: a new file hash for
// the same content.
func regzip(t *testing.T, content []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
	zw.Write(content)
	zw.Close()
	return buf.Bytes()
}

func sha(b []byte) []byte    { s := sha256.Sum256(b); return s[:] }
func shaHex(b []byte) string { return hex.EncodeToString(sha(b)) }

// impl returns the implementation object named name.
func impl(t *testing.T, doc map[string]any, name string) map[string]any {
	t.Helper()
	for _, x := range doc["implementations"].([]any) {
		if m := x.(map[string]any); m["name"] == name {
			return m
		}
	}
	t.Fatalf("no %s in the survey", name)
	return nil
}

func reps(t *testing.T, doc map[string]any, name string) []any {
	t.Helper()
	return impl(t, doc, name)["live"].(map[string]any)["repetitions"].([]any)
}

func answer(t *testing.T, doc map[string]any, name, q string) map[string]any {
	t.Helper()
	for _, a := range impl(t, doc, name)["answers"].([]any) {
		if m := a.(map[string]any); m["question"] == q {
			return m
		}
	}
	t.Fatalf("%s has no %s", name, q)
	return nil
}

// replaceAll edits every string of the document containing old (the
// claim and all its copies), failing when none does.
func replaceAll(t *testing.T, doc map[string]any, old, new string) {
	t.Helper()
	n := 0
	var walk func(v any) any
	walk = func(v any) any {
		switch c := v.(type) {
		case map[string]any:
			for k, x := range c {
				c[k] = walk(x)
			}
		case []any:
			for i, x := range c {
				c[i] = walk(x)
			}
		case string:
			if strings.Contains(c, old) {
				n++
				return strings.ReplaceAll(c, old, new)
			}
		}
		return v
	}
	walk(doc)
	if n == 0 {
		t.Fatalf("%q appears nowhere in the survey", old)
	}
}

// forgeRep makes repetition `to` of name a copy of repetition `from`'s
// claims, keeping its own id, files and hash: the survey then agrees with
// the copied trace everywhere.
func forgeRep(t *testing.T, doc map[string]any, name string, from, to int, sha string) {
	t.Helper()
	rs := reps(t, doc, name)
	src, dst := rs[from].(map[string]any), rs[to].(map[string]any)
	cp := map[string]any{}
	b, _ := json.Marshal(src)
	json.Unmarshal(b, &cp)
	for _, k := range []string{"id", "trace", "manifest", "analysis", "calibration"} {
		if v, ok := dst[k]; ok {
			cp[k] = v
		}
	}
	cp["trace_sha256"] = sha
	rs[to] = cp
}

// editJSON rewrites one evidence JSON file through fn.
func editJSON(t *testing.T, root, rel string, fn func(m map[string]any)) {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(readFile(t, filepath.Join(root, rel)), &m); err != nil {
		t.Fatal(err)
	}
	fn(m)
	b, _ := json.MarshalIndent(m, "", "  ")
	replaceFile(t, root, rel, b)
}

func obj(m map[string]any, keys ...string) map[string]any {
	for _, k := range keys {
		m = m[k].(map[string]any)
	}
	return m
}

// parentCommit is another real commit of the upstream: the pin's parent.
func parentCommit(t *testing.T, mirrors, dir, commit string) string {
	t.Helper()
	out, err := exec.Command("git", "-C", filepath.Join(mirrors, dir, "repo"), "rev-parse", commit+"~1").Output()
	if err != nil {
		t.Skipf("git rev-parse %s~1 in %s: %v", commit, dir, err)
	}
	return strings.TrimSpace(string(out))
}

// movePin moves an entry to another real commit consistently: the commit
// and every permalink.
func movePin(t *testing.T, mirrors string, doc map[string]any, name, dir string) {
	t.Helper()
	old := impl(t, doc, name)["commit"].(string)
	replaceAll(t, doc, old, parentCommit(t, mirrors, dir, old))
}

// runPlanted checks each fault on its own copy of the survey and, when it
// touches files, its own shadow root; it returns the faults whose named
// check did not FAIL.
func runPlanted(t *testing.T, faults []planted, strict bool) (caught int, missed []string) {
	t.Helper()
	base, raw := realWorld(t)
	root := repoRoot(t)
	for _, f := range faults {
		var doc map[string]any
		if err := json.Unmarshal(raw, &doc); err != nil {
			t.Fatal(err)
		}
		v := base
		if f.files != nil {
			shadow := shadowRoot(t, root)
			f.files(t, shadow, doc)
			v = New(Options{Mirrors: base.opts.Mirrors, Evidence: base.opts.Evidence, RepoRoot: shadow})
			// The sources and every file the fault leaves alone are read
			// once: the caches are keyed by the file a link resolves to.
			v.sources, v.sites, v.counts = base.sources, base.sites, base.counts
			v.traces, v.runs, v.shas, v.reads, v.wires = base.traces, base.runs, base.shas, base.reads, base.wires
		}
		if f.survey != nil {
			f.survey(t, doc)
		}
		b, _ := json.Marshal(doc)
		got, found := checkOne(v, b, f.check)
		switch {
		case !found:
			missed = append(missed, f.name+": no check "+f.check)
		case got.Status != Fail:
			missed = append(missed, f.name+": "+f.check+" "+string(got.Status)+" "+got.Found)
		default:
			caught++
			t.Logf("caught %-55s %s: %s", f.name, f.check, truncate(got.Found, 200))
		}
	}
	if strict {
		for _, m := range missed {
			t.Errorf("missed: %s", m)
		}
	}
	return caught, missed
}

// checkOne runs the one check with the given ID, as Check would.
func checkOne(v *Validator, raw []byte, id string) (Result, bool) {
	doc := gjson.ParseBytes(raw)
	for _, c := range crossChecks {
		if c.name == id {
			st, found := c.fn(v, doc, doc)
			return Result{id, st, found}, true
		}
	}
	for _, im := range doc.Get("implementations").Array() {
		name := im.Get("name").String()
		if !strings.HasPrefix(id, name+"/") {
			continue
		}
		for _, c := range append(append([]check{}, perImplChecks...), specificChecks[name]...) {
			if name+"/"+c.name == id && (c.claim == "" || c.applies(im)) {
				st, found := c.fn(v, doc, im)
				return Result{id, st, found}, true
			}
		}
	}
	return Result{}, false
}
