package run

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var updateRunRecords = flag.Bool("update-run-records", false, "rewrite the reconstructed run records under data/evidence/*/")

// The committed evidence predates run records: each run's record is
// reconstructed from its summary.json and the files kept beside it, and
// committed beside them. This test rebuilds each and compares it with the
// committed one (-update-run-records writes them).
func TestReconstructedRunRecords(t *testing.T) {
	dirs, _ := filepath.Glob(filepath.Join("..", "..", "data", "evidence", "*", "summary.json"))
	if len(dirs) == 0 {
		t.Skip("no data/evidence/*/summary.json")
	}
	for _, s := range dirs {
		dir := filepath.Dir(s)
		t.Run(filepath.Base(dir), func(t *testing.T) {
			// A run recorded with a run record (kept with run keep) has
			// nothing to reconstruct.
			if b, err := os.ReadFile(filepath.Join(dir, RunRecordFile)); err == nil {
				if h, _, err := ReadRunRecord(b); err == nil && h.Reconstructed == "" {
					t.Skipf("%s was written by the run", filepath.Join(dir, RunRecordFile))
				}
			}
			got, err := ReconstructRunRecord(dir)
			if err != nil {
				t.Fatal(err)
			}
			p := filepath.Join(dir, RunRecordFile)
			if *updateRunRecords {
				if err := os.WriteFile(p, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(p)
			if err != nil {
				t.Fatalf("%v (go test ./harnesses/run -run ReconstructedRunRecords -update-run-records)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s differs from its reconstruction", p)
			}
			// Every valid attempt has its manifest and trace digested;
			// the header says the record is reconstructed.
			sc := bufio.NewScanner(bytes.NewReader(got))
			sc.Buffer(nil, 1<<20)
			sc.Scan()
			if !strings.Contains(sc.Text(), `"reconstructed"`) {
				t.Errorf("header %s does not say reconstructed", sc.Text())
			}
			valid := 0
			for sc.Scan() {
				var a RunAttempt
				if err := json.Unmarshal(sc.Bytes(), &a); err != nil {
					t.Fatal(err)
				}
				if a.Status == "valid" {
					valid++
					if a.ManifestSHA256 == "" || a.TraceSHA256 == "" {
						t.Errorf("valid attempt %s without digests: %+v", a.Dir, a)
					}
				}
			}
			if valid != 5 {
				t.Errorf("%d valid attempts, the evidence holds 5 repetitions", valid)
			}
		})
	}
}

// The runner's own record: appended per attempt, header once, never
// rewritten.
func TestAppendRunAttempt(t *testing.T) {
	out := t.TempDir()
	h := RunRecordHeader{Record: runRecordV1, Implementation: "quic-go", Wanted: 2}
	for i, st := range []Status{Spoiled, Valid, Failed} {
		dir := filepath.Join(out, "rep1")
		os.MkdirAll(dir, 0o755)
		os.WriteFile(filepath.Join(dir, "manifest.json"), []byte(`{"rep":1}`), 0o644)
		os.WriteFile(filepath.Join(dir, "server.sqlog.gz"), []byte("trace"), 0o644)
		a, err := attemptOf(out, 1, i+1, dir, st, filepath.Join(dir, "server.sqlog.gz"))
		if err != nil {
			t.Fatal(err)
		}
		if err := AppendRunAttempt(out, h, a); err != nil {
			t.Fatal(err)
		}
	}
	b, _ := os.ReadFile(filepath.Join(out, RunRecordFile))
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 4 || !strings.Contains(lines[0], runRecordV1) {
		t.Fatalf("record:\n%s", b)
	}
	for i, want := range []string{`"status":"spoiled"`, `"status":"valid"`, `"status":"failed"`} {
		if !strings.Contains(lines[i+1], want) || !strings.Contains(lines[i+1], `"trace":"server.sqlog.gz"`) || !strings.Contains(lines[i+1], `"dir":"rep1"`) {
			t.Errorf("line %d: %s, want %s", i+1, lines[i+1], want)
		}
	}
}
