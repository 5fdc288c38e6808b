// Package reproduce re-derives the committed survey from public sources
// alone: it opens every pinned source (the implementations at their
// commits and the study's repository), rebuilds the survey from the audits
// and the committed evidence into a temporary file, validates it with the
// independent validator, and compares it field by field with the
// committed data/survey_results.json.
//
// It is a stage of its own, above survey/ and validator/: the one package
// that uses both the builder and the independent validator, so that
// neither imports the other and nothing under survey/ points back up.
package reproduce

import (
	"context"
	"fmt"
	"github.com/migaudit/migaudit/data/mirrors"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/schollz/progressbar/v3"

	"github.com/migaudit/migaudit/audit"
	_ "github.com/migaudit/migaudit/audit/rules" // the rules the rebuild audits with, as the CLI registers them
	"github.com/migaudit/migaudit/data"
	"github.com/migaudit/migaudit/survey"
	"github.com/migaudit/migaudit/survey/build"
	"github.com/migaudit/migaudit/survey/studysrc"
	"github.com/migaudit/migaudit/validator"
)

// Options for one reproduction.
type Options struct {
	// RepoRoot is the checkout: data/survey_results.json, its schema and
	// data/evidence are read from it.
	RepoRoot string
	// Mirrors are directories of mirrors (list separator between them);
	// without one, each source is cloned into the user cache directory.
	Mirrors string
	// Progress receives the progress bars (nil: none).
	Progress io.Writer
	// Verbose prints every validator line, not only FAIL and UNVERIFIABLE.
	Verbose bool
	// Update writes the rebuilt, validated survey over the committed one.
	Update bool

	// For tests: the implementations to rebuild (default all pinned), the
	// study pin, the audit, and how a source is opened.
	Only  []string
	Study *data.StudyPin
	Audit func(ctx context.Context, im data.Implementation, source string) ([]audit.Finding, error)
	Open  func(upstream, mirrors, commit string) (string, error)
}

// Result of a reproduction.
type Result struct {
	Diffs      []Diff
	Validation validator.Summary
	// Checks are the validator's lines, one per check.
	Checks []string
	Survey *survey.Survey
	// Rebuilt is the rebuilt, validated file.
	Rebuilt []byte
}

// OK is true when the rebuilt survey is identical and nothing failed.
func (r Result) OK() bool { return len(r.Diffs) == 0 && r.Validation.Failed == 0 }

// ErrSource marks a pinned source that could not be opened: every
// command's mirrors.ErrNoSource.
var ErrSource = mirrors.ErrNoSource

// Run reproduces the survey and prints the outcome to w.
func Run(ctx context.Context, o Options, w io.Writer) (Result, error) {
	var res Result
	committedPath := filepath.Join(o.RepoRoot, "data", "survey_results.json")
	committed, err := os.ReadFile(committedPath)
	if err != nil {
		return res, fmt.Errorf("reproduce: committed survey: %w", err)
	}
	schema := filepath.Join(o.RepoRoot, "data", survey.SchemaFile)
	if _, err := os.Stat(schema); err != nil {
		return res, fmt.Errorf("reproduce: schema: %w", err)
	}
	if o.Open == nil {
		o.Open = openSource
	}

	// 1. Every pinned source, one progress bar each.
	impls, err := data.Implementations()
	if err != nil {
		return res, err
	}
	pin := o.Study
	if pin == nil {
		p, err := data.Study()
		if err != nil {
			return res, err
		}
		pin = &p
	}
	dirs := []string{}
	for _, im := range impls {
		if len(o.Only) > 0 && !contains(o.Only, im.Name) {
			continue
		}
		bar := newBar(o.Progress, 2, im.Name)
		dir, err := o.Open(im.Upstream, o.Mirrors, im.Commit)
		if err != nil {
			abandon(bar, o.Progress)
			return res, fmt.Errorf("reproduce: %s: %w", im.Name, err)
		}
		bar.Add(2)
		finish(bar)
		dirs = append(dirs, filepath.Dir(dir))
	}
	study, err := openStudy(o, pin)
	if err != nil {
		return res, err
	}
	mirrors := joinList(append([]string{o.Mirrors}, dirs...))
	fmt.Fprintf(w, "sources: %d implementations and the study at %s, each at its pinned commit\n", len(dirs), pin.Commit[:12])

	// 2. Rebuild into a temporary directory beside a copy of the schema.
	tmp, err := os.MkdirTemp("", "migaudit-reproduce-")
	if err != nil {
		return res, err
	}
	defer os.RemoveAll(tmp)
	out := filepath.Join(tmp, "survey_results.json")
	if err := copyFile(schema, filepath.Join(tmp, survey.SchemaFile)); err != nil {
		return res, err
	}
	n := len(impls)
	if len(o.Only) > 0 {
		n = len(o.Only)
	}
	bar := newBar(o.Progress, n, "survey")
	s, err := build.Run(ctx, build.Options{Out: out, RepoRoot: o.RepoRoot, Mirrors: mirrors, Only: o.Only, Audit: o.Audit, Study: study,
		Done: func(string) { bar.Add(1) }}, nil)
	if err != nil {
		abandon(bar, o.Progress)
		return res, fmt.Errorf("reproduce: rebuild: %w", err)
	}
	finish(bar)
	res.Survey = s

	// 3. The independent re-derivation, recorded in the rebuilt file as
	// `migaudit validate` records it in the committed one.
	var vlog strings.Builder
	sum, err := validator.Run(validator.Options{Path: out, RepoRoot: o.RepoRoot, Mirrors: mirrors, Record: true}, &vlog)
	if err != nil {
		return res, fmt.Errorf("reproduce: validate: %w", err)
	}
	res.Validation = sum
	res.Checks = strings.Split(strings.TrimSpace(vlog.String()), "\n")
	res.Checks = res.Checks[:max(0, len(res.Checks)-1)] // the summary line is res.Validation
	rebuilt, err := os.ReadFile(out)
	if err != nil {
		return res, err
	}
	if res.Survey, err = survey.Read(out); err != nil {
		return res, fmt.Errorf("reproduce: rebuilt survey: %w", err)
	}

	res.Rebuilt = rebuilt
	// 4. Field by field against the committed file.
	if res.Diffs, err = Compare(committed, rebuilt); err != nil {
		return res, fmt.Errorf("reproduce: %w", err)
	}
	if o.Update && res.Validation.Failed == 0 && len(res.Diffs) > 0 {
		if err := survey.WriteAtomic(committedPath, rebuilt); err != nil {
			return res, fmt.Errorf("reproduce: update %s: %w", committedPath, err)
		}
		fmt.Fprintf(w, "updated %s (%d fields changed)\n", committedPath, len(res.Diffs))
	}
	return res, nil
}

// openSource opens upstream at commit from a mirror, else a clone in the
// cache (cloned on first use), and returns the repository directory.
func openSource(upstream, list, commit string) (string, error) {
	r, err := studysrc.Locate(upstream, list, "")
	if err != nil {
		where := "no --mirrors and no $" + mirrors.Env
		if list != "" {
			where = "no mirror under " + list
		}
		return "", fmt.Errorf("%w: %s: %s, no clone in the cache, and cloning failed: %v", ErrSource, upstream, where, oneLine(err))
	}
	if _, err := r.At(commit); err != nil {
		return "", fmt.Errorf("%w: %s: pinned commit %s not in %s: %v", ErrSource, upstream, commit[:12], r.Dir, oneLine(err))
	}
	return r.Dir, nil
}

// openStudy opens the study's repository and checks every pinned file,
// one step of its progress bar each.
func openStudy(o Options, pin *data.StudyPin) (*studysrc.Source, error) {
	bar := newBar(o.Progress, 1+len(pin.Files), "study")
	dir, err := o.Open(pin.Upstream, o.Mirrors, pin.Commit)
	if err != nil {
		abandon(bar, o.Progress)
		return nil, fmt.Errorf("reproduce: study: %w", err)
	}
	bar.Add(1)
	s, err := studysrc.NewWith(*pin, studysrc.Options{Source: dir})
	if err != nil {
		return nil, err
	}
	for _, f := range pin.Files {
		if _, _, err := s.Read(f.Path); err != nil {
			abandon(bar, o.Progress)
			return nil, fmt.Errorf("reproduce: %w", err)
		}
		bar.Add(1)
	}
	finish(bar)
	return s, nil
}

func newBar(w io.Writer, n int, what string) *progressbar.ProgressBar {
	if w == nil {
		w = io.Discard
	}
	return progressbar.NewOptions(n, progressbar.OptionSetWriter(w), progressbar.OptionSetDescription(fmt.Sprintf("%-10s", what)),
		progressbar.OptionShowCount(), progressbar.OptionSetWidth(20), progressbar.OptionThrottle(0),
		progressbar.OptionOnCompletion(func() { fmt.Fprintln(w) }))
}

func finish(b *progressbar.ProgressBar) { b.Finish() }

// abandon stops a bar short of 100%, on its own line, so the error after
// it reads clearly.
func abandon(b *progressbar.ProgressBar, w io.Writer) {
	b.Exit()
	if w != nil {
		fmt.Fprintln(w)
	}
}

func copyFile(from, to string) error {
	b, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	return os.WriteFile(to, b, 0o644)
}

func joinList(xs []string) string {
	var keep []string
	seen := map[string]bool{}
	for _, x := range xs {
		for _, d := range filepath.SplitList(x) {
			if d != "" && !seen[d] {
				seen[d] = true
				keep = append(keep, d)
			}
		}
	}
	return strings.Join(keep, string(filepath.ListSeparator))
}

func contains(xs []string, x string) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

func oneLine(err error) string { return strings.ReplaceAll(strings.TrimSpace(err.Error()), "\n", "; ") }
