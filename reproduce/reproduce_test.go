package reproduce

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/migaudit/migaudit/audit"
	"github.com/migaudit/migaudit/data"
	"github.com/migaudit/migaudit/discriminator"
	"github.com/migaudit/migaudit/survey/studysrc"
)

const studyUpstream = "https://github.com/sivaahari/quic-congestion-control"

func write(t *testing.T, p string, b []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// world is a checkout with one own-run repetition of quic-go, a mirror
// directory holding a small study repository built here with go-git, and
// the study's pin for it. CI has no mirrors: everything is made in the test.
type world struct {
	root, mirrors string
	pin           data.StudyPin
}

func newWorld(t *testing.T) *world {
	t.Helper()
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	t.Setenv("MIGAUDIT_MIRRORS", "")
	w := &world{root: t.TempDir(), mirrors: t.TempDir()}
	schema, err := os.ReadFile("../data/survey.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(w.root, "data", "survey.schema.json"), schema)
	write(t, filepath.Join(w.root, "data", "survey_results.json"), []byte("{}\n"))
	rep := filepath.Join(w.root, "data", "evidence", "quic-go", "rep1")
	write(t, filepath.Join(rep, "server.sqlog.gz"), []byte("trace bytes"))
	write(t, filepath.Join(rep, "manifest.json"), []byte(`{"implementation":"quic-go","version":"v0.61.0","scenario":"standard","end":"2026-12-02T16:45:55Z",
		"paths":{"A":{"rtt_us":20000},"B":{"rtt_us":40000}},"calibration":{"calibrated":true},"result":{"server_trace":"server.sqlog.gz"}}`))
	write(t, filepath.Join(rep, "server.stdout"), []byte(`peer {"ev":"peer_address","from":"198.18.1.2:5000","to":"198.18.2.2:6000"}`+"\n"))
	an := discriminator.Analysis{Implementation: "quic-go", Trace: "results/x/rep1/server.sqlog.gz", Format: "quicgo-qlog", Vantage: "server",
		Migration:   discriminator.Migration{Kind: "path-change", AtUS: 5_000_000, Evidence: "path_challenge received"},
		ScopeFromUS: 4_950_000, ScopeToUS: 7_000_000, WindowBeforeBytes: 100000, WindowAfterBytes: 40960, ResetObserved: true,
		Events: []discriminator.Collapse{{Kind: "RESET", AtUS: 5_040_000, ValueBytes: 40960, PreviousBytes: 70000}},
		RTT:    discriminator.RTTAttribution{FirstAfterUS: 40500, Attribution: "new-path", NewPathUS: 40000},
		Q1:     discriminator.Verdict{Answer: "YES"}, Q3: discriminator.Verdict{Answer: "YES"}}
	b, _ := json.Marshal(an)
	write(t, filepath.Join(rep, "analysis.json"), b)
	// A bare repository's shape, as the mirror finder (data/mirrors) wants.
	if err := os.MkdirAll(filepath.Join(w.mirrors, "quic-go+quic-go", "repo", "objects"), 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(w.mirrors, "quic-go+quic-go", "repo", "HEAD"), []byte("ref: refs/heads/master\n"))

	// The study: two files in a repository of its own.
	files := map[string]string{
		"phase2-deliverables/evidence/05_code/commit_hashes.txt":    "quic-go   2cfe6ee0b5ac905f7f7cecc0f2107d3b7bec2e93\n",
		"phase2-deliverables/evidence/03_live_measurements/q/1.csv": "time_us,cwnd\n0,40960\n",
	}
	dir := filepath.Join(w.mirrors, "sivaahari+quic-congestion-control", "repo")
	repo, err := git.PlainInit(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	wt, _ := repo.Worktree()
	w.pin = data.StudyPin{Name: "study", Upstream: studyUpstream}
	for p, c := range files {
		write(t, filepath.Join(dir, p), []byte(c))
		if _, err := wt.Add(p); err != nil {
			t.Fatal(err)
		}
		w.pin.Files = append(w.pin.Files, data.StudyFile{Name: filepath.Base(p), Path: p, SHA256: studysrc.SHA256([]byte(c)), Role: "timeline"})
	}
	sig := &object.Signature{Name: "study", Email: "s@example.invalid", When: time.Unix(1780000000, 0)}
	h, err := wt.Commit("study", &git.CommitOptions{Author: sig, Committer: sig})
	if err != nil {
		t.Fatal(err)
	}
	w.pin.Commit = h.String()
	return w
}

func fakeAudit(_ context.Context, im data.Implementation, _ string) ([]audit.Finding, error) {
	return []audit.Finding{
		{Impl: im.Name, Question: audit.Q1, Role: "both", Answer: audit.Yes, Mechanism: "controller replaced"},
		{Impl: im.Name, Question: audit.Q2, Role: "both", Answer: audit.No, Mechanism: "fixed default"},
		{Impl: im.Name, Question: audit.Q3, Role: "both", Answer: audit.Yes, Mechanism: "lost and removed"},
	}, nil
}

func (w *world) options() Options {
	return Options{RepoRoot: w.root, Mirrors: w.mirrors, Only: []string{"quic-go"}, Study: &w.pin, Audit: fakeAudit,
		Open: func(upstream, mirrors, commit string) (string, error) {
			if upstream == studyUpstream {
				return openSource(upstream, mirrors, commit)
			}
			// The implementation's pinned commit cannot be made here; its
			// audit is faked, so the mirror directory is all it needs.
			return filepath.Join(mirrors, "quic-go+quic-go", "repo"), nil
		}}
}

func (w *world) run(t *testing.T) Result {
	t.Helper()
	var out strings.Builder
	res, err := Run(context.Background(), w.options(), &out)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// commit makes the rebuilt survey the committed one, as the lead does after
// `migaudit survey` and `migaudit validate`.
func (w *world) commit(t *testing.T) []byte {
	t.Helper()
	res := w.run(t)
	write(t, filepath.Join(w.root, "data", "survey_results.json"), res.Rebuilt)
	return res.Rebuilt
}

func paths(ds []Diff) []string {
	var out []string
	for _, d := range ds {
		out = append(out, d.Path)
	}
	return out
}

func TestRebuildIsByteIdentical(t *testing.T) {
	w := newWorld(t)
	first := w.commit(t)
	res := w.run(t)
	if len(res.Diffs) != 0 {
		t.Fatalf("same inputs, %d differences:\n%s", len(res.Diffs), Summarise(res.Diffs, 20))
	}
	if string(res.Rebuilt) != string(first) {
		t.Fatal("same inputs, different bytes")
	}
	for _, want := range []string{`"generated_at": "2026-12-02T16:45:55Z"`, `"data/evidence/quic-go/rep1/manifest.json": "`, `"commit": "` + w.pin.Commit + `"`} {
		if !strings.Contains(string(first), want) {
			t.Errorf("rebuilt survey lacks %s", want)
		}
	}
	if strings.Contains(string(first), w.mirrors) || strings.Contains(string(first), os.TempDir()+"/migaudit-reproduce") {
		t.Error("the survey records a machine-specific path")
	}
}

// Editing any one committed evidence file makes the rebuild differ, and the
// difference names the file.
func TestPlantedEvidenceEditIsNamed(t *testing.T) {
	for _, name := range []string{"manifest.json", "analysis.json", "server.sqlog.gz", "server.stdout"} {
		t.Run(name, func(t *testing.T) {
			w := newWorld(t)
			w.commit(t)
			p := filepath.Join(w.root, "data", "evidence", "quic-go", "rep1", name)
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			write(t, p, append(b, ' '))
			res := w.run(t)
			if res.OK() {
				t.Fatal("an edited evidence file reproduced as identical")
			}
			want := `inputs.evidence_sha256["data/evidence/quic-go/rep1/` + name + `"]`
			found := false
			for _, d := range res.Diffs {
				found = found || d.Path == want
			}
			if !found {
				t.Errorf("differences %v do not name %s", paths(res.Diffs), want)
			}
		})
	}
}

// Editing any one field of the committed survey is named by its JSON path,
// with the committed and rebuilt values.
func TestPlantedSurveyEditIsNamed(t *testing.T) {
	w := newWorld(t)
	rebuilt := w.commit(t)
	cases := []struct{ path, old, new string }{
		{"implementations[quic-go].answers[0].answer", `"answer": "YES"`, `"answer": "NO"`},
		{"implementations[quic-go].live.repetitions[rep1].window_after_bytes", `"window_after_bytes": 40960`, `"window_after_bytes": 40961`},
		{"inputs.study.commit", `"commit": "` + w.pin.Commit + `"`, `"commit": "` + strings.Repeat("0", 40) + `"`},
		{"generated_at", `"generated_at": "2026-12-02T16:45:55Z"`, `"generated_at": "2026-12-02T16:45:56Z"`},
	}
	for _, c := range cases {
		t.Run(c.path, func(t *testing.T) {
			if !strings.Contains(string(rebuilt), c.old) {
				t.Fatalf("survey has no %s", c.old)
			}
			write(t, filepath.Join(w.root, "data", "survey_results.json"), []byte(strings.Replace(string(rebuilt), c.old, c.new, 1)))
			res := w.run(t)
			if res.OK() || len(res.Diffs) != 1 || res.Diffs[0].Path != c.path {
				t.Fatalf("differences %v, want exactly %s", paths(res.Diffs), c.path)
			}
			if d := res.Diffs[0]; !strings.Contains(c.new, d.Old) || !strings.Contains(c.old, d.New) {
				t.Errorf("%s: committed %s rebuilt %s", d.Path, d.Old, d.New)
			}
		})
	}
}

// Every leaf of a survey, changed alone, is found and named: the comparison
// has no blind spot.
func TestCompareNamesEveryLeaf(t *testing.T) {
	w := newWorld(t)
	rebuilt := w.commit(t)
	var doc any
	if err := json.Unmarshal(rebuilt, &doc); err != nil {
		t.Fatal(err)
	}
	n := 0
	var walk func(v any, set func(any))
	walk = func(v any, set func(any)) {
		switch c := v.(type) {
		case map[string]any:
			for k := range c {
				k := k
				walk(c[k], func(x any) { c[k] = x })
			}
		case []any:
			for i := range c {
				i := i
				walk(c[i], func(x any) { c[i] = x })
			}
		default:
			var repl any = "planted"
			if s, ok := c.(string); ok && s == "planted" {
				repl = "other"
			}
			set(repl)
			b, _ := json.Marshal(doc)
			set(c)
			ds, err := Compare(b, rebuilt)
			if err != nil {
				t.Fatal(err)
			}
			// One difference; two when the change renames a keyed element
			// (one element gone, one new).
			if len(ds) < 1 || len(ds) > 2 {
				t.Errorf("one planted change, %d differences: %v", len(ds), paths(ds))
			}
			n++
		}
	}
	walk(doc, func(any) {})
	if n < 50 {
		t.Errorf("only %d leaves", n)
	}
}

// A study file whose bytes are not the pinned ones stops the reproduction
// with the file's path.
func TestStudyFileMismatchIsNamed(t *testing.T) {
	w := newWorld(t)
	w.pin.Files[1].SHA256 = strings.Repeat("a", 64)
	_, err := Run(context.Background(), w.options(), &strings.Builder{})
	if err == nil || !strings.Contains(err.Error(), w.pin.Files[1].Path) || !strings.Contains(err.Error(), "sha256") {
		t.Fatalf("err = %v", err)
	}
}

// No mirror and no way to clone: one line naming the missing source.
func TestMissingSourceIsOneLine(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	t.Setenv("MIGAUDIT_MIRRORS", "")
	empty := t.TempDir()
	up := filepath.Join(t.TempDir(), "nowhere", "picoquic") // a local upstream: the clone fails at once, offline or not
	_, err := openSource(up, empty, strings.Repeat("0", 40))
	if err == nil {
		t.Fatal("opened a source that does not exist")
	}
	msg := err.Error()
	if strings.Contains(msg, "\n") || !strings.Contains(msg, up) || !strings.Contains(msg, empty) {
		t.Errorf("error %q: want one line naming %s and the mirror directory", msg, up)
	}
}
