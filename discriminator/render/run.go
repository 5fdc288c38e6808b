package render

import (
	"fmt"
	"github.com/schollz/progressbar/v3"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"

	"github.com/migaudit/migaudit/discriminator"
	"github.com/migaudit/migaudit/parsers"
)

// RunOptions are `migaudit analyze`'s inputs.
type RunOptions struct {
	Traces   []string
	Format   string // output: table, json, csv, markdown
	Parse    parsers.Options
	Analysis discriminator.Options
	// Workers analyze traces in parallel, one trace each; 0 means one per
	// CPU. The output order is the order of Traces whatever the workers do.
	Workers int
	// Progress receives a progress bar when more than one trace is
	// analyzed; nil for none.
	Progress io.Writer
}

// Run analyzes every trace and writes the analyses to w, in the order the
// traces were given. The first trace (in that order) that cannot be read or
// analyzed stops it with an error naming the file. An argument that does not
// name a file but is a glob pattern is expanded, "**" matching any number of
// directories (so DIR/**/server*.gz works without the shell's globstar).
func Run(w io.Writer, o RunOptions) error {
	if len(o.Traces) == 0 {
		return fmt.Errorf("no trace given")
	}
	if err := checkFormat(o.Format); err != nil {
		return err
	}
	traces, err := expandTraces(o.Traces)
	if err != nil {
		return err
	}
	as, err := analyzeAll(traces, o)
	if err != nil {
		return err
	}
	return Write(w, o.Format, as)
}

// analyzeAll runs AnalyzeFile over traces with o.Workers workers. Results
// and errors land by index, so order and the error returned (the first by
// index) do not depend on scheduling; once a trace has failed, later ones
// are skipped.
func analyzeAll(traces []string, o RunOptions) ([]discriminator.Analysis, error) {
	workers := o.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	workers = min(workers, len(traces))
	var bar *progressbar.ProgressBar
	if o.Progress != nil && len(traces) > 1 {
		bar = progressbar.NewOptions(len(traces),
			progressbar.OptionSetWriter(o.Progress),
			progressbar.OptionSetDescription("analyze"),
			progressbar.OptionShowCount(),
			progressbar.OptionSetWidth(30),
			progressbar.OptionThrottle(0),
			progressbar.OptionClearOnFinish())
	}
	as := make([]discriminator.Analysis, len(traces))
	errs := make([]error, len(traces))
	var (
		mu       sync.Mutex
		next     int
		failedAt = len(traces)
		wg       sync.WaitGroup
	)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				i := next
				next++
				stop := i >= failedAt
				mu.Unlock()
				if i >= len(traces) || stop {
					return
				}
				a, err := discriminator.AnalyzeFile(traces[i], o.Parse, o.Analysis)
				mu.Lock()
				as[i], errs[i] = a, err
				if err != nil {
					failedAt = min(failedAt, i)
				}
				if bar != nil {
					_ = bar.Add(1) // a bar that cannot draw must not fail the analysis
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if bar != nil {
		_ = bar.Finish()
	}
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return as, nil
}

// expandTraces returns the traces: each argument that exists as given, else
// the sorted matches of it as a glob pattern.
func expandTraces(args []string) ([]string, error) {
	var out []string
	for _, a := range args {
		if _, err := os.Stat(a); err == nil || !strings.ContainsAny(a, "*?[") {
			out = append(out, a) // a missing plain path fails in AnalyzeFile, naming it
			continue
		}
		m, err := glob(a)
		if err != nil {
			return nil, fmt.Errorf("trace pattern %q: %w", a, err)
		}
		if len(m) == 0 {
			return nil, fmt.Errorf("trace pattern %q matches no file", a)
		}
		out = append(out, m...)
	}
	return out, nil
}

// glob is filepath.Glob where a "**" path element matches any number of
// directories (zero included).
func glob(pattern string) ([]string, error) {
	pattern = filepath.Clean(pattern)
	parts := strings.Split(pattern, string(filepath.Separator))
	k := -1
	for i, p := range parts {
		if p == "**" {
			k = i
			break
		}
	}
	if k < 0 {
		return filepath.Glob(pattern)
	}
	root := strings.Join(parts[:k], string(filepath.Separator))
	if root == "" && strings.HasPrefix(pattern, string(filepath.Separator)) {
		root = string(filepath.Separator)
	} else if root == "" {
		root = "."
	}
	if strings.ContainsAny(root, "*?[") {
		return nil, fmt.Errorf("a pattern before ** is not supported")
	}
	rest := parts[k+1:]
	if len(rest) == 0 {
		return nil, fmt.Errorf("** must be followed by a file pattern")
	}
	var out []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		comps := strings.Split(rel, string(filepath.Separator))
		if len(comps) < len(rest) {
			return nil
		}
		tail := strings.Join(comps[len(comps)-len(rest):], string(filepath.Separator))
		ok, err := filepath.Match(strings.Join(rest, string(filepath.Separator)), tail)
		if err != nil {
			return err
		}
		if ok {
			out = append(out, p)
		}
		return nil
	})
	sort.Strings(out)
	return out, err
}

func checkFormat(f string) error {
	for _, k := range append(Formats(), "", "md") {
		if f == k {
			return nil
		}
	}
	return Write(io.Discard, f, nil)
}
