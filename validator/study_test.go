package validator

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func statusOf(t *testing.T, v *Validator, raw []byte, id string) Result {
	t.Helper()
	for _, r := range v.Check(raw) {
		if r.ID == id {
			return r
		}
	}
	t.Fatalf("no check %s", id)
	return Result{}
}

// withFixCheck gives the fixture's picoquic a fix check whose two builds
// are its reference repetition and a copy of its trace one byte longer (no
// exact reset in either): a fix would not be visible, which is what the
// check must find. It returns the survey and an evidence directory holding
// both traces.
func withFixCheck(t *testing.T, raw []byte) ([]byte, string) {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	pq := implIndex(t, raw, "picoquic")
	im := doc["implementations"].([]any)[pq].(map[string]any)
	rep := im["live"].(map[string]any)["repetitions"].([]any)[0].(map[string]any)
	clone := func(id string) map[string]any {
		b, _ := json.Marshal(rep)
		var c map[string]any
		json.Unmarshal(b, &c)
		c["id"] = id
		return c
	}
	if rep["reset_observed"].(bool) {
		t.Fatal("fixture's picoquic repetition shows a reset; the test assumes none")
	}
	ev := t.TempDir()
	trace := rep["trace"].(string)
	b, err := os.ReadFile(filepath.Join("testdata", "reference", trace))
	if err != nil {
		t.Fatal(err)
	}
	b2 := append(append([]byte(nil), b...), '\n')
	for p, c := range map[string][]byte{trace: b, "traces/unpatched.qlog": b2} {
		os.MkdirAll(filepath.Dir(filepath.Join(ev, p)), 0o755)
		if err := os.WriteFile(filepath.Join(ev, p), c, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	u := clone("phase1-unpatched")
	u["trace"], u["trace_sha256"] = "traces/unpatched.qlog", hexSHA(b2)
	im["fix_check"] = map[string]any{"statement": "a fix would NOT be visible: the discriminator finds no exact reset in the study's patched build",
		"patched": clone("phase1-patched"), "unpatched": u, "visible": false}
	out, _ := json.Marshal(doc)
	return out, ev
}

func TestFixVisibleCheck(t *testing.T) {
	f := buildFixture(t)
	raw, ev := withFixCheck(t, f.raw)
	v := New(Options{Mirrors: f.mirrors, Evidence: ev, RepoRoot: f.root})
	pq := implIndex(t, raw, "picoquic")
	if r := statusOf(t, v, raw, "picoquic/fix-visible"); r.Status != Pass {
		t.Fatalf("consistent fix check: %s %s", r.Status, r.Found)
	}
	tests := []struct {
		name string
		raw  []byte
	}{
		{"visible claimed", setJSON(t, raw, true, "implementations", pq, "fix_check", "visible")},
		{"patched reset claimed", setJSON(t, raw, true, "implementations", pq, "fix_check", "patched", "reset_observed")},
		{"patched q1 YES", setJSON(t, raw, "YES", "implementations", pq, "fix_check", "patched", "q1")},
		{"unpatched window after", setJSON(t, raw, 1, "implementations", pq, "fix_check", "unpatched", "window_after_bytes")},
		{"statement says visible", setJSON(t, raw, "a fix would be visible", "implementations", pq, "fix_check", "statement")},
		{"trace sha256", setJSON(t, raw, strings.Repeat("0", 64), "implementations", pq, "fix_check", "unpatched", "trace_sha256")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if r := statusOf(t, v, tc.raw, "picoquic/fix-visible"); r.Status != Fail {
				t.Fatalf("%s %s", r.Status, r.Found)
			}
		})
	}
}

func TestEvidenceSumsCheck(t *testing.T) {
	f := buildFixture(t)
	v := f.validator()
	const p = "testdata/evidence/quic-go/rep1/server.sqlog.gz"
	sha, err := v.fileSHA(p)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		sums map[string]string
		want Status
	}{
		{"matching", map[string]string{p: sha}, Pass},
		{"edited file", map[string]string{p: strings.Repeat("0", 64)}, Fail},
		{"missing file", map[string]string{p: sha, "testdata/evidence/quic-go/rep9/gone.json": sha}, Fail},
		{"absolute path", map[string]string{"/etc/hostname": sha}, Fail},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			raw := setJSON(t, f.raw, tc.sums, "inputs", "evidence_sha256")
			if r := statusOf(t, v, raw, "evidence/sha256"); r.Status != tc.want {
				t.Fatalf("%s %s, want %s", r.Status, r.Found, tc.want)
			}
		})
	}
	// Without the record, no claim and no check.
	for _, r := range v.Check(f.raw) {
		if r.ID == "evidence/sha256" || r.ID == "study/pinned-files" {
			t.Errorf("%s checked a survey that claims nothing about it", r.ID)
		}
	}
}

// The committed survey's study claims, planted wrong, fail.
func TestPlantedStudyFaultsRealSurvey(t *testing.T) {
	v, raw := realWorld(t)
	if v.opts.Evidence != "" {
		t.Skip("no mirror of the study: its pinned files cannot be checked")
	}
	pq := implIndex(t, raw, "picoquic")
	tests := []struct {
		name, check string
		raw         []byte
	}{
		{"study commit", "study/pinned-files", setJSON(t, raw, strings.Repeat("1", 40), "inputs", "study", "commit")},
		{"fix not visible", "picoquic/fix-visible", setJSON(t, raw, false, "implementations", pq, "fix_check", "visible")},
		{"patched build without reset", "picoquic/fix-visible", setJSON(t, raw, false, "implementations", pq, "fix_check", "patched", "reset_observed")},
		{"unpatched build with reset", "picoquic/fix-visible", setJSON(t, raw, true, "implementations", pq, "fix_check", "unpatched", "reset_observed")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if r := statusOf(t, v, tc.raw, tc.check); r.Status != Fail {
				t.Fatalf("%s: %s %s", r.ID, r.Status, r.Found)
			}
		})
	}
	if r := statusOf(t, v, raw, "picoquic/fix-visible"); r.Status != Pass {
		t.Errorf("committed fix check: %s %s", r.Status, r.Found)
	}
	if r := statusOf(t, v, raw, "study/pinned-files"); r.Status != Pass {
		t.Errorf("committed study pin: %s %s", r.Status, r.Found)
	}
}

// Every number and answer of the committed fix check, perturbed alone, is
// noticed (the whole-survey mutation test covers it too, in 25 minutes on
// a loaded 2-core machine; this one takes seconds).
func TestMutationScoreFixCheckRealSurvey(t *testing.T) {
	v, raw := realWorld(t)
	if v.opts.Evidence != "" {
		t.Skip("no mirror of the study")
	}
	prefix := "/implementations/" + strconv.Itoa(implIndex(t, raw, "picoquic")) + "/fix_check/"
	var ms []mutant
	for _, m := range mutants(raw) {
		if strings.HasPrefix(m.where, prefix) {
			ms = append(ms, m)
		}
	}
	killed, survivors, total := scoreMutants(v, raw, ms)
	t.Logf("fix check mutation score %d/%d", killed, total)
	for _, s := range survivors {
		t.Errorf("surviving mutant: %s", s)
	}
	if total < 40 {
		t.Errorf("only %d mutants in the fix check", total)
	}
}
