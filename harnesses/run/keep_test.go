package run

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/migaudit/migaudit/harnesses/testbed/linkemu"
	"github.com/migaudit/migaudit/harnesses/testbed/wirecap"
	"github.com/tidwall/gjson"
)

// keepRun makes a run directory as the runner leaves it: rep1 and rep2
// valid (rep2 after a spoiled first attempt kept under spoiled/), each a
// committed ngtcp2 repetition's manifest and trace plus a capture of
// incompressible datagrams (20 s, 4,000 datagrams on path B, the
// migration at 5 s), and the run record the runner appends.
func keepRun(t *testing.T) string {
	t.Helper()
	src := filepath.Join("..", "..", "data", "evidence", "ngtcp2", "rep3")
	if _, err := os.Stat(filepath.Join(src, "manifest.json")); err != nil {
		t.Skipf("no committed evidence at %s: %v", src, err)
	}
	out := t.TempDir()
	const ms = int64(time.Millisecond)
	rng := rand.New(rand.NewSource(1))
	var down []linkemu.Datagram
	for i := range 4000 {
		b := make([]byte, 600)
		rng.Read(b)
		b[0], b[9], b[28] = 0x45, 17, 0x40
		binary.BigEndian.PutUint16(b[2:], 600)
		arr := int64(i) * 5 * ms
		down = append(down, linkemu.Datagram{Record: linkemu.Record{Arr: arr, Due: arr + 10, Sent: arr + 10, Size: 600, Cause: linkemu.Sent}, Data: b})
	}
	p := wirecap.DefaultPolicy()
	p.FirstWhole = 0
	gz, st, err := wirecap.WriteGzip(wirecap.Input{Links: []wirecap.Link{{Path: "B", Datagrams: down}}, Migrations: []int64{5000 * ms}}, p)
	if err != nil {
		t.Fatal(err)
	}
	h := RunRecordHeader{Record: runRecordV1, Implementation: "ngtcp2", Scenario: "standard", Wanted: 2, Start: "2026-12-04T17:00:00Z"}
	for _, a := range []struct {
		rep, attempt int
		dir          string
		status       Status
	}{{1, 1, "rep1", Valid}, {2, 1, "spoiled/rep2-try1", Spoiled}, {2, 2, "rep2", Valid}} {
		dir := filepath.Join(out, a.dir)
		if err := os.CopyFS(dir, os.DirFS(src)); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, WireFile), gz, 0o644); err != nil {
			t.Fatal(err)
		}
		raw, _ := os.ReadFile(filepath.Join(dir, "manifest.json"))
		var m Manifest
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatal(err)
		}
		m.Rep, m.Attempt, m.Status = a.rep, a.attempt, a.status
		m.Capture = &Capture{File: WireFile, SHA256: sha256Bytes(gz), Bytes: int64(len(gz)), PcapngBytes: st.PcapngBytes, WholeWindows: st.WholeWindows}
		m.Files = listFiles(dir)
		if err := WriteJSONAtomic(filepath.Join(dir, "manifest.json"), m); err != nil {
			t.Fatal(err)
		}
		at, err := attemptOf(out, a.rep, a.attempt, dir, a.status, m.Result.ServerTrace)
		if err != nil {
			t.Fatal(err)
		}
		if err := AppendRunAttempt(out, h, at); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(out, "summary.json"), []byte("{}\n"), 0o644)
	return out
}

func TestKeep(t *testing.T) {
	src := keepRun(t)
	gz, _ := os.ReadFile(filepath.Join(src, "rep1", WireFile))
	budget := len(gz) / 3
	dest := filepath.Join(t.TempDir(), "evidence", "ngtcp2")
	kept, err := Keep(src, dest, KeepOptions{Budget: budget})
	if err != nil {
		t.Fatal(err)
	}
	if len(kept) != 3 {
		t.Fatalf("kept %d attempts, want 3 (2 valid, 1 spoiled): %+v", len(kept), kept)
	}
	rec, _ := os.ReadFile(filepath.Join(dest, RunRecordFile))
	orig, _ := os.ReadFile(filepath.Join(src, RunRecordFile))
	if !bytes.HasPrefix(rec, orig) {
		t.Error("the kept run record does not start with the run's: rewritten, not appended to")
	}
	if n := strings.Count(string(rec[len(orig):]), `"kept"`); n != 3 {
		t.Errorf("%d kept lines appended, want 3:\n%s", n, rec[len(orig):])
	}
	_, attempts, err := ReadRunRecord(rec)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range attempts {
		dir := filepath.Join(dest, a.Dir)
		mraw, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
		if err != nil {
			t.Fatal(err)
		}
		if got := sha256Bytes(mraw); got != a.ManifestSHA256 {
			t.Errorf("%s: manifest %s, the run record (kept line included) has %s", a.Dir, got, a.ManifestSHA256)
		}
		cap, _ := os.ReadFile(filepath.Join(dir, WireFile))
		if len(cap) > budget || len(cap) == 0 {
			t.Errorf("%s: capture %d B, budget %d", a.Dir, len(cap), budget)
		}
		m := gjson.ParseBytes(mraw)
		if m.Get("capture.sha256").String() != sha256Bytes(cap) || m.Get("capture.bytes").Int() != int64(len(cap)) {
			t.Errorf("%s: capture entry %s does not describe the kept file", a.Dir, m.Get("capture").Raw)
		}
		if m.Get("capture.trimmed.original_sha256").String() != sha256Bytes(gz) || m.Get("capture.trimmed.original_bytes").Int() != int64(len(gz)) ||
			m.Get("capture.trimmed.budget_bytes").Int() != int64(budget) {
			t.Errorf("%s: capture.trimmed %s does not record the original", a.Dir, m.Get("capture.trimmed").Raw)
		}
		n, _, err := wirecap.Count(cap)
		if err != nil || int64(n) != m.Get("capture.trimmed.epbs_kept").Int() || n >= 4000 {
			t.Errorf("%s: kept capture has %d EPBs (%v), the manifest says %d", a.Dir, n, err, m.Get("capture.trimmed.epbs_kept").Int())
		}
		for _, f := range m.Get("files").Array() {
			b, err := os.ReadFile(filepath.Join(dir, f.Get("name").String()))
			if err != nil || sha256Bytes(b) != f.Get("sha256").String() {
				t.Errorf("%s: files entry %s does not match the kept file (%v)", a.Dir, f.Get("name"), err)
			}
		}
	}
	if entries, _ := filepath.Glob(filepath.Join(filepath.Dir(dest), ".*")); len(entries) != 0 {
		t.Errorf("temporary directories left behind: %v", entries)
	}
	// An existing DEST is refused without --replace and left as it was;
	// with it, replaced.
	if _, err := Keep(src, dest, KeepOptions{Budget: budget}); err == nil || !strings.Contains(err.Error(), "--replace") {
		t.Errorf("existing DEST: err = %v, want one naming --replace", err)
	}
	if after, _ := os.ReadFile(filepath.Join(dest, RunRecordFile)); !bytes.Equal(after, rec) {
		t.Error("a refused keep changed DEST")
	}
	if _, err := Keep(src, dest, KeepOptions{Budget: budget, Replace: true}); err != nil {
		t.Errorf("--replace: %v", err)
	}
}

func TestKeepRefuses(t *testing.T) {
	cases := []struct {
		name    string
		tamper  func(t *testing.T, run string)
		err     string // "" = kept, note must contain note
		note    string
		dirNote string
	}{
		{"not a run directory", func(t *testing.T, run string) { os.Remove(filepath.Join(run, RunRecordFile)) }, "is not a run directory", "", ""},
		{"truncated capture", func(t *testing.T, run string) {
			p := filepath.Join(run, "rep1", WireFile)
			b, _ := os.ReadFile(p)
			os.WriteFile(p, b[:len(b)/2], 0o644)
			// The manifest still names the whole file's digest: keep must
			// say the file changed rather than trim half a capture.
		}, "wire.pcapng.gz has sha256", "", ""},
		{"missing capture", func(t *testing.T, run string) { os.Remove(filepath.Join(run, "rep2", WireFile)) }, "", "kept without wire evidence", "rep2"},
		{"manifest changed after the run", func(t *testing.T, run string) {
			p := filepath.Join(run, "rep2", "manifest.json")
			b, _ := os.ReadFile(p)
			os.WriteFile(p, append(b, ' '), 0o644)
		}, "the attempt changed after the run", "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			run := keepRun(t)
			c.tamper(t, run)
			dest := filepath.Join(t.TempDir(), "ev")
			gz, _ := os.ReadFile(filepath.Join(run, "rep1", WireFile))
			kept, err := Keep(run, dest, KeepOptions{Budget: max(len(gz)/3, 100_000)})
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) || strings.Contains(err.Error(), "\n") {
					t.Fatalf("err = %v, want one line containing %q", err, c.err)
				}
				if _, err := os.Stat(dest); err == nil {
					t.Error("a refused keep left DEST")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, k := range kept {
				if k.Dir == c.dirNote && !strings.Contains(k.Note, c.note) {
					t.Errorf("%s: note %q, want %q", k.Dir, k.Note, c.note)
				}
			}
		})
	}
}

// A capture truncated by the run itself (its digest in the manifest is of
// the truncated file) is refused with the EPB where reading stopped.
func TestKeepTruncatedCapture(t *testing.T) {
	run := keepRun(t)
	dir := filepath.Join(run, "rep1")
	p := filepath.Join(dir, WireFile)
	b, _ := os.ReadFile(p)
	b = b[:len(b)/2]
	os.WriteFile(p, b, 0o644)
	raw, _ := os.ReadFile(filepath.Join(dir, "manifest.json"))
	var m Manifest
	json.Unmarshal(raw, &m)
	m.Capture.SHA256 = sha256Bytes(b)
	m.Files = listFiles(dir)
	WriteJSONAtomic(filepath.Join(dir, "manifest.json"), m)
	// The run record digested the manifest as the run wrote it.
	rec, _ := os.ReadFile(filepath.Join(run, RunRecordFile))
	mb, _ := os.ReadFile(filepath.Join(dir, "manifest.json"))
	_, attempts, _ := ReadRunRecord(rec)
	rec = bytes.Replace(rec, []byte(attempts[0].ManifestSHA256), []byte(sha256Bytes(mb)), 1)
	os.WriteFile(filepath.Join(run, RunRecordFile), rec, 0o644)
	_, err := Keep(run, filepath.Join(t.TempDir(), "ev"), KeepOptions{Budget: 100_000})
	if err == nil || !strings.Contains(err.Error(), "truncated or corrupt capture") || !strings.Contains(err.Error(), "EPB") {
		t.Fatalf("err = %v, want a truncated capture named with its EPB", err)
	}
}

func TestReadRunRecordKeptChain(t *testing.T) {
	h := `{"record":"migaudit run record v1","implementation":"x","scenario":"standard","wanted":1,"start":""}`
	a := `{"rep":1,"attempt":1,"dir":"rep1","status":"valid","run_status":"VALID","manifest_sha256":"aaa"}`
	cases := []struct {
		name, rec, want, err string
	}{
		{"kept once", h + "\n" + a + "\n" + `{"kept":"rep1","manifest_sha256_was":"aaa","manifest_sha256":"bbb"}`, "bbb", ""},
		{"kept twice", h + "\n" + a + "\n" + `{"kept":"rep1","manifest_sha256_was":"aaa","manifest_sha256":"bbb"}` + "\n" + `{"kept":"rep1","manifest_sha256_was":"bbb","manifest_sha256":"ccc"}`, "ccc", ""},
		{"broken chain", h + "\n" + a + "\n" + `{"kept":"rep1","manifest_sha256_was":"zzz","manifest_sha256":"bbb"}`, "", "line 3: kept rep1 from manifest zzz"},
		{"kept before recorded", h + "\n" + `{"kept":"rep1","manifest_sha256_was":"aaa","manifest_sha256":"bbb"}` + "\n" + a, "", "no earlier line"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, at, err := ReadRunRecord([]byte(c.rec))
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err = %v, want %q", err, c.err)
				}
				return
			}
			if err != nil || len(at) != 1 || at[0].ManifestSHA256 != c.want {
				t.Fatalf("%+v, %v; want manifest %s", at, err, c.want)
			}
		})
	}
}
