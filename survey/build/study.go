package build

// The study as a pinned source: its reference traces for implementations
// without runs here, its phase-1 patched and unpatched picoquic builds for
// the "would a fix be visible" check, and the deterministic inputs record
// (generated_at from the inputs' own dates, a hash of every evidence file).

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/migaudit/migaudit/audit/gitsrc"
	"github.com/migaudit/migaudit/data"
	"github.com/migaudit/migaudit/discriminator"
	"github.com/migaudit/migaudit/parsers"
	"github.com/migaudit/migaudit/survey"
	"github.com/migaudit/migaudit/survey/studysrc"
)

// study opens the study source named by the options (once per Run).
func study(o *Options) (*studysrc.Source, error) {
	if o.Study != nil {
		return o.Study, nil
	}
	s, err := studysrc.New(studysrc.Options{Mirrors: o.Mirrors, Source: o.StudySource, Evidence: o.Evidence, NoClone: true})
	if err != nil {
		return nil, err
	}
	o.Study = s
	return s, nil
}

// studyAvailable opens the study; a missing repository is a note (the
// survey is still built from what there is), never a silent gap.
func studyAvailable(o Options) (bool, string) {
	if o.Study == nil {
		return false, "no study source"
	}
	if err := o.Study.Open(); err != nil {
		return false, oneLine(err.Error())
	}
	return true, ""
}

// referenceLive analyses the study's reference trace for pin, read from the
// study's repository at the pinned commit.
func referenceLive(o Options, pin data.Implementation, w io.Writer) (*survey.Live, []string, error) {
	var notes []string
	if o.Study == nil {
		return nil, nil, nil
	}
	f, ok := o.Study.Pin.Role("reference-trace", pin.Name)
	if !ok {
		return nil, nil, nil
	}
	if ok, why := studyAvailable(o); !ok {
		logf(w, "%-9s live: study unavailable (%s)", pin.Name, why)
		return nil, append(notes, "no live runs here and the study's reference trace is unavailable: "+why), nil
	}
	path, f, err := o.Study.Path(f.Name)
	if err != nil {
		return nil, nil, err
	}
	an, err := discriminator.AnalyzeFile(path, parsers.Options{}, discriminator.Options{Impl: pin.Name})
	if err != nil {
		return nil, nil, fmt.Errorf("study %s: %w", f.Path, err)
	}
	rep := fromAnalysis(&an, "study", f.Path, f.SHA256)
	l := &survey.Live{Origin: survey.Reference, Repetitions: []survey.Repetition{rep}}
	finishLive(l)
	notes = append(notes, fmt.Sprintf("live part from the study's reference trace %s at %s (one repetition of the study's five; read from the study's repository, never copied into this one)", f.Path, o.Study.Pin.Commit[:12]))
	logf(w, "%-9s live: study trace %s", pin.Name, f.Path)
	return l, notes, nil
}

// fixCheck runs the discriminator on the study's patched and unpatched
// builds of pin, when the study has both.
func fixCheck(o Options, pin data.Implementation, w io.Writer) (*survey.FixCheck, []string, error) {
	if o.Study == nil {
		return nil, nil, nil
	}
	pf, ok1 := o.Study.Pin.Role("phase1-patched", pin.Name)
	uf, ok2 := o.Study.Pin.Role("phase1-unpatched", pin.Name)
	if !ok1 || !ok2 {
		return nil, nil, nil
	}
	if ok, why := studyAvailable(o); !ok {
		return nil, []string{"fix check not run: " + why}, nil
	}
	analyse := func(id string, f data.StudyFile) (survey.Repetition, error) {
		path, f, err := o.Study.Path(f.Name)
		if err != nil {
			return survey.Repetition{}, err
		}
		an, err := discriminator.AnalyzeFile(path, parsers.Options{}, discriminator.Options{Impl: pin.Name})
		if err != nil {
			return survey.Repetition{}, fmt.Errorf("study %s: %w", f.Path, err)
		}
		return fromAnalysis(&an, id, f.Path, f.SHA256), nil
	}
	p, err := analyse("phase1-patched", pf)
	if err != nil {
		return nil, nil, err
	}
	u, err := analyse("phase1-unpatched", uf)
	if err != nil {
		return nil, nil, err
	}
	fc := &survey.FixCheck{Patched: p, Unpatched: u, Visible: p.ResetObserved && !u.ResetObserved}
	if patch, ok := o.Study.Pin.Role("phase1-patch", pin.Name); ok {
		fc.Patch = patch.Path
	}
	fc.Statement = fixStatement(fc)
	logf(w, "%-9s fix check: %s", pin.Name, fc.Statement)
	return fc, nil, nil
}

func fixStatement(fc *survey.FixCheck) string {
	p, u := fc.Patched, fc.Unpatched
	var reset *survey.Event
	for i := range p.Events {
		if p.Events[i].Kind == string(discriminator.Reset) {
			reset = &p.Events[i]
			break
		}
	}
	unp := fmt.Sprintf("the unpatched build shows no exact reset (%d window decreases in scope, none onto an initial window)", len(u.Events))
	if u.ResetObserved {
		unp = "but the unpatched build also shows an exact reset, so a reset here does not tell a fix from no fix"
	}
	switch {
	case fc.Visible && reset != nil:
		return fmt.Sprintf("a fix would be visible: the study's patched build resets the window to exactly %d B at %.1f ms (%.1f ms after the migration); %s",
			reset.ValueBytes, float64(reset.AtUS)/1000, float64(reset.AtUS-p.Migration.AtUS)/1000, unp)
	case fc.Visible:
		return "a fix would be visible: the study's patched build resets exactly; " + unp
	case !p.ResetObserved:
		return "a fix would NOT be visible: the discriminator finds no exact reset in the study's patched build"
	}
	return "a fix would NOT be visible: " + unp
}

// inputsTime is the newest date among the inputs: the pinned commits the
// survey read and the end of every repetition. The same inputs give the
// same generated_at, so the same file.
func inputsTime(o Options, impls []data.Implementation, runs map[string][]runRep) (time.Time, bool) {
	var newest time.Time
	seen := false
	see := func(t time.Time) {
		if !seen || t.After(newest) {
			newest, seen = t, true
		}
	}
	for _, pin := range impls {
		if len(o.Only) > 0 && !contains(o.Only, pin.Name) {
			continue
		}
		if dir := mirrorFor(o.Mirrors, pin.Upstream); dir != "" {
			if r, err := gitsrc.Open(dir); err == nil {
				if s, err := r.At(pin.Commit); err == nil {
					see(s.Time())
				}
			}
		}
		for _, r := range runs[pin.Name] {
			if s, ok := r.Manifest["end"].(string); ok {
				if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
					see(t)
				}
			}
		}
	}
	if o.Study != nil && o.Evidence == "" {
		if ok, _ := studyAvailable(o); ok {
			see(o.Study.Time())
		}
	}
	return newest.UTC().Truncate(time.Second), seen
}

// evidenceSums hashes every regular file under the results directories
// (default data/evidence), keyed by its path relative to the repository
// root, so that editing any committed evidence file changes the survey.
func evidenceSums(o Options) (map[string]string, error) {
	dirs := o.Results
	if len(dirs) == 0 {
		dirs = []string{filepath.Join(o.RepoRoot, "data", "evidence")}
	}
	out := map[string]string{}
	for _, d := range dirs {
		err := filepath.WalkDir(d, func(p string, e fs.DirEntry, err error) error {
			if err != nil {
				if os.IsNotExist(err) && p == d {
					return filepath.SkipDir
				}
				return err
			}
			if !e.Type().IsRegular() {
				return nil
			}
			sum, err := fileSHA(p)
			if err != nil {
				return err
			}
			out[filepath.ToSlash(relTo(o.RepoRoot, p))] = sum
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("hash evidence under %s: %w", d, err)
		}
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}
