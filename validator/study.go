package validator

// The study as a pinned source (data/study.json): its files are read out of
// git objects at the pinned commit with the validator's own git reading,
// checked against their pinned sha256, and handed to the trace readers as
// files in the cache. --evidence DIR overrides the repository.

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/migaudit/migaudit/data"
	"github.com/migaudit/migaudit/data/atomicfile"
	"github.com/tidwall/gjson"
)

func init() {
	perImplChecks = append(perImplChecks, check{"fix-visible", checkFixVisible, "fix_check"})
	crossChecks = append(crossChecks,
		check{"study/pinned-files", checkStudyPin, "inputs.study"},
		check{"evidence/sha256", checkEvidenceSums, "inputs.evidence_sha256"})
}

func hexSHA(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// studyBlob reads a pinned study file (by name or repository path): from
// --evidence when given, else from the study's repository at the pin.
func (v *Validator) studyBlob(nameOrPath string) ([]byte, data.StudyFile, error) {
	pin, err := data.Study()
	if err != nil {
		return nil, data.StudyFile{}, err
	}
	var t *sourceTree
	if v.opts.Evidence == "" {
		// No repository, no claim either way: UNVERIFIABLE.
		if t, err = v.sources.get(pin.Upstream, pin.Commit); err != nil {
			return nil, data.StudyFile{}, err
		}
	}
	f, ok := pin.File(nameOrPath)
	if !ok {
		return nil, f, fmt.Errorf("%s is not a pinned study file (data/study.json)", nameOrPath)
	}
	if v.opts.Evidence != "" {
		for _, rel := range []string{f.Name, f.Path, f.Name + ".gz"} {
			b, err := os.ReadFile(filepath.Join(v.opts.Evidence, filepath.FromSlash(rel)))
			if err != nil {
				continue
			}
			if strings.HasSuffix(rel, ".gz") && !strings.HasSuffix(f.Path, ".gz") {
				zr, err := gzip.NewReader(bytes.NewReader(b))
				if err != nil {
					return nil, f, fmt.Errorf("%s: %v", rel, err)
				}
				if b, err = io.ReadAll(zr); err != nil {
					return nil, f, fmt.Errorf("%s: %v", rel, err)
				}
			}
			return b, f, nil
		}
		return nil, f, fmt.Errorf("%w: %s absent from %s", errNoSource, f.Name, v.opts.Evidence)
	}
	b, err := t.blob(f.Path)
	return b, f, err
}

// studyPath resolves reference evidence: the file the study's repository
// holds at the pin, written into the cache so the trace readers can open it.
func (v *Validator) studyPath(rel string) (string, error) {
	// Once per file: each call would read the blob and the cached copy.
	return memo(&v.mu, v.studyPaths, rel, func() (string, error) { return v.studyPathOnce(rel) })
}

func (v *Validator) studyPathOnce(rel string) (string, error) {
	if v.opts.Evidence != "" {
		if _, f, err := v.studyBlob(rel); err == nil {
			for _, r := range []string{f.Name, f.Path} {
				if p := filepath.Join(v.opts.Evidence, filepath.FromSlash(r)); exists(p) {
					return p, nil
				}
			}
		}
		return filepath.Join(v.opts.Evidence, rel), nil
	}
	b, f, err := v.studyBlob(rel)
	if err != nil {
		return "", err
	}
	// Its digest too, so that the pin check does not read it again.
	v.mu.Lock()
	if _, ok := v.studyDigests[f.Path]; !ok {
		v.studyDigests[f.Path] = memoEntry[string]{val: hexSHA(b)}
	}
	v.mu.Unlock()
	pin, _ := data.Study()
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	p := filepath.Join(base, "migaudit", "validate-study", pin.Commit, filepath.FromSlash(f.Path))
	if old, err := os.ReadFile(p); err == nil && bytes.Equal(old, b) {
		return p, nil
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return "", err
	}
	if err := atomicfile.Write(p, b); err != nil {
		return "", err
	}
	return p, nil
}

// studyDigest is the sha256 of a pinned study file, read once.
func (v *Validator) studyDigest(path string) (string, error) {
	return memo(&v.mu, v.studyDigests, path, func() (string, error) {
		b, _, err := v.studyBlob(path)
		if err != nil {
			return "", err
		}
		return hexSHA(b), nil
	})
}

// blob returns the raw bytes of path at the tree's commit.
func (t *sourceTree) blob(path string) ([]byte, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	f, err := t.tree.File(path)
	if err != nil {
		return nil, fmt.Errorf("%s not in tree at %s", path, t.commit[:8])
	}
	r, err := f.Reader()
	if err != nil {
		return nil, fmt.Errorf("read %s at %s: %v", path, t.commit[:8], err)
	}
	defer r.Close()
	return io.ReadAll(r)
}

// checkStudyPin: the survey names the study's pinned repository and commit,
// the commit is in the mirror, and every pinned file there has its pinned
// sha256 (the traces, timelines and phase-1 builds the survey rests on).
func checkStudyPin(v *Validator, doc, _ gjson.Result) (Status, string) {
	var d verdict
	pin, err := data.Study()
	if err != nil {
		d.fail("%v", err)
		return d.result()
	}
	if up, c := doc.Get("inputs.study.upstream").String(), doc.Get("inputs.study.commit").String(); up != pin.Upstream || c != pin.Commit {
		d.fail("survey reads the study at %s@%s, data/study.json pins %s@%s", up, short(c), pin.Upstream, short(pin.Commit))
		return d.result()
	}
	ok := 0
	for _, f := range pin.Files {
		got, err := v.studyDigest(f.Path)
		if err != nil {
			sourceErr(&d, err)
			continue
		}
		if got != f.SHA256 {
			d.fail("%s at %s has sha256 %s…, data/study.json pins %s…", f.Path, short(pin.Commit), got[:12], f.SHA256[:12])
			continue
		}
		ok++
	}
	d.note("%d/%d pinned study files match their sha256 at %s", ok, len(pin.Files), short(pin.Commit))
	return d.result()
}

// checkEvidenceSums: every evidence file the survey lists has the listed
// sha256, and no committed evidence file is missing from the list.
func checkEvidenceSums(v *Validator, doc, _ gjson.Result) (Status, string) {
	var d verdict
	listed := doc.Get("inputs.evidence_sha256").Map()
	ok := 0
	dirs := map[string]bool{}
	for _, p := range sortedKeys(listed) {
		want := listed[p].String()
		if filepath.IsAbs(p) || strings.Contains(p, "..") {
			d.fail("%s: evidence paths must be relative to the repository", p)
			continue
		}
		got, err := v.fileSHA(filepath.Join(v.opts.RepoRoot, filepath.FromSlash(p)))
		if err != nil {
			d.fail("%s: %v", p, err)
			continue
		}
		if got != want {
			d.fail("%s has sha256 %s…, survey says %s…", p, got[:12], want[:min(12, len(want))])
			continue
		}
		if parts := strings.SplitN(p, "/", 4); len(parts) == 4 && parts[0] == "data" && parts[1] == "evidence" {
			dirs[parts[2]] = true
		}
		ok++
	}
	// Completeness: every file under the listed implementations' evidence
	// directories is listed (a file added after the survey is an input it
	// never saw).
	for dir := range dirs {
		root := filepath.Join(v.opts.RepoRoot, "data", "evidence", dir)
		_ = filepath.Walk(root, func(p string, info os.FileInfo, err error) error {
			if err != nil || !info.Mode().IsRegular() {
				return nil
			}
			rel, _ := filepath.Rel(v.opts.RepoRoot, p)
			if _, ok := listed[filepath.ToSlash(rel)]; !ok {
				d.fail("%s is not among the survey's inputs", filepath.ToSlash(rel))
			}
			return nil
		})
	}
	d.note("%d/%d evidence files match", ok, len(listed))
	return d.result()
}

// checkFixVisible: the patched and unpatched builds' traces are
// re-derived exactly as live repetitions are (migration instant, IP
// change, window events, RTT), and "visible" holds iff the validator's own
// reading finds an exact initial-window hit in the patched build's scope
// and none in the unpatched one's.
func checkFixVisible(v *Validator, doc, im gjson.Result) (Status, string) {
	var d verdict
	fc := im.Get("fix_check")
	p, u := fc.Get("patched"), fc.Get("unpatched")
	ip := 0
	for _, r := range []gjson.Result{p, u} {
		if r.Get("migration.kind").String() == "ip" {
			ip++
		}
	}
	// The two builds as the live part of a synthetic entry, so that every
	// per-repetition check applies to them unchanged.
	synth := fmt.Sprintf(`{"name":%q,"constants":%s,"live":{"origin":"reference","retained":2,"ip_changes":%d,"repetitions":[%s,%s]}}`,
		im.Get("name").String(), orEmpty(im.Get("constants").Raw, "[]"), ip, orEmpty(p.Raw, "{}"), orEmpty(u.Raw, "{}"))
	sim := gjson.Parse(synth)
	for _, c := range []struct {
		name string
		fn   func(*Validator, gjson.Result, gjson.Result) (Status, string)
	}{{"repetitions", checkRepetitions}, {"ip-change", checkIPChange}, {"migration-instant", checkMigrationInstant}, {"window", checkWindow}, {"rtt", checkRTT}} {
		switch st, found := c.fn(v, doc, sim); st {
		case Fail:
			d.fail("%s: %s", c.name, found)
		case Unverifiable:
			d.unverifiable("%s: %s", c.name, found)
		}
	}
	for _, r := range []gjson.Result{p, u} {
		id := r.Get("id").String()
		r.Get("constants").ForEach(func(_, c gjson.Result) bool {
			if !arithmeticHolds(c.Get("arithmetic").String(), c.Get("value").Float()) {
				d.fail("%s %s: arithmetic %q does not give %s", id, c.Get("name").String(), c.Get("arithmetic").String(), fnum(c.Get("value").Float()))
			}
			return true
		})
		if ca := r.Get("rtt.converged_after_us").Int(); ca > 0 {
			if why, ok := v.firstConverged(sim, r, ca); !ok {
				d.fail("%s: converged_after_us %d: %s", id, ca, why)
			}
		}
		want := "NO"
		if r.Get("reset_observed").Bool() {
			want = "YES"
		}
		if got := r.Get("q1").String(); got != want {
			d.fail("%s: q1 %s but reset_observed=%v", r.Get("id").String(), got, r.Get("reset_observed").Bool())
		}
	}
	if len(d.fails) > 0 || len(d.unver) > 0 {
		return d.result()
	}
	// reset_observed was re-derived by the window check above.
	visible := p.Get("reset_observed").Bool() && !u.Get("reset_observed").Bool()
	if fc.Get("visible").Bool() != visible {
		d.fail("patched reset=%v, unpatched reset=%v: visible is %v, survey says %v", p.Get("reset_observed").Bool(), u.Get("reset_observed").Bool(), visible, fc.Get("visible").Bool())
		return d.result()
	}
	st := fc.Get("statement").String()
	if visible != (strings.Contains(st, "would be visible") && !strings.Contains(st, "NOT")) {
		d.fail("statement %q does not say what visible=%v says", st, visible)
		return d.result()
	}
	d.note("patched build: exact reset %v; unpatched: %v; a fix would be visible: %v", p.Get("reset_observed").Bool(), u.Get("reset_observed").Bool(), visible)
	return d.result()
}

func orEmpty(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// firstConverged: the smoothed RTT is within 10% of the new path's round
// trip at migration+ca, and at no sample between the migration and then.
func (v *Validator) firstConverged(im, rep gjson.Result, ca int64) (string, bool) {
	f, err := v.repTrace(im, rep)
	if err != nil {
		return err.Error(), false
	}
	at := rep.Get("migration.at_us").Int()
	np := rep.Get("rtt.new_path_us").Int()
	if np <= 0 {
		return "no new-path round trip to converge on", false
	}
	hit := false
	for _, s := range f.Samples {
		if s.SRTT < 0 || s.T <= at {
			continue
		}
		near := roughly(s.SRTT, np, 0.10)
		switch {
		case s.T < at+ca-1000 && near:
			return fmt.Sprintf("the smoothed RTT is already within 10%% of the new path (%d µs) at +%d µs", np, s.T-at), false
		case within(s.T, at+ca, 1000) && near:
			hit = true
		}
	}
	if !hit {
		return fmt.Sprintf("no smoothed-RTT sample at +%d µs within 10%% of the new path (%d µs)", ca, np), false
	}
	return "", true
}
