package probe

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"

	"github.com/olekukonko/tablewriter"
	"github.com/schollz/progressbar/v3"
)

// ReadTargets reads a targets file: one HOST:PORT per line, optionally
// followed by whitespace and an SNI name; blank lines and # comments skipped.
func ReadTargets(path string) ([]Options, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("targets: %w", err)
	}
	defer f.Close()
	var out []Options
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		s := strings.TrimSpace(sc.Text())
		if s == "" || strings.HasPrefix(s, "#") {
			continue
		}
		fields := strings.Fields(s)
		o := Options{Target: fields[0]}
		if len(fields) > 1 {
			o.SNI = fields[1]
		}
		if !strings.Contains(o.Target, ":") {
			return nil, fmt.Errorf("targets %s: line %d: %q is not HOST:PORT", path, line, fields[0])
		}
		out = append(out, o)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("targets %s: %w", path, err)
	}
	return out, nil
}

// Done reads an existing JSON-lines output and returns the targets already
// probed, so an interrupted scan resumes where it stopped. A torn last line
// (the scan was killed mid-write) is ignored and will be probed again.
func Done(path string) (map[string]bool, error) {
	done := map[string]bool{}
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return done, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var r Result
		if json.Unmarshal(sc.Bytes(), &r) == nil && r.Target != "" {
			done[r.Target] = true
		}
	}
	return done, sc.Err()
}

// ScanOptions configure a multi-target scan.
type ScanOptions struct {
	Targets     []Options
	Concurrency int
	// Out receives one JSON line per finished target (appended, flushed
	// per line). Already-present targets are skipped.
	OutPath  string
	Progress io.Writer // progress bar destination; nil for none
}

// Scan probes targets with bounded concurrency, appending each result to
// OutPath as it completes.
func Scan(ctx context.Context, so ScanOptions) ([]Result, error) {
	if so.Concurrency < 1 {
		so.Concurrency = 4
	}
	done, err := Done(so.OutPath)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", so.OutPath, err)
	}
	var todo []Options
	for _, t := range so.Targets {
		if !done[t.Target] {
			todo = append(todo, t)
		}
	}
	out, err := os.OpenFile(so.OutPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", so.OutPath, err)
	}
	defer out.Close()
	if err := endLine(out); err != nil {
		return nil, fmt.Errorf("append to %s: %w", so.OutPath, err)
	}
	var bar *progressbar.ProgressBar
	if so.Progress != nil {
		bar = progressbar.NewOptions(len(todo), progressbar.OptionSetWriter(so.Progress),
			progressbar.OptionSetDescription(fmt.Sprintf("probing (%d already done)", len(so.Targets)-len(todo))),
			progressbar.OptionShowCount())
	}
	var (
		mu      sync.Mutex
		results []Result
		firstEr error
		wg      sync.WaitGroup
		sem     = make(chan struct{}, so.Concurrency)
	)
	for _, t := range todo {
		if ctx.Err() != nil {
			break
		}
		wg.Add(1)
		sem <- struct{}{}
		go func(t Options) {
			defer wg.Done()
			defer func() { <-sem }()
			r, err := Run(ctx, t)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				if firstEr == nil {
					firstEr = fmt.Errorf("target %s: %w", t.Target, err)
				}
				return
			}
			line, _ := json.Marshal(r)
			if _, err := out.Write(append(line, '\n')); err != nil && firstEr == nil {
				firstEr = fmt.Errorf("write %s: %w", so.OutPath, err)
			}
			results = append(results, r)
			if bar != nil {
				bar.Add(1)
			}
		}(t)
	}
	wg.Wait()
	if bar != nil {
		bar.Finish()
		fmt.Fprintln(so.Progress)
	}
	return results, firstEr
}

// WriteTable renders results as a terminal table.
func WriteTable(w io.Writer, rs []Result) error {
	t := tablewriter.NewWriter(w)
	t.Header([]string{"Target", "Class", "Port migration", "IP migration", "Evidence"})
	for _, r := range rs {
		t.Append([]string{r.Target, string(r.Class), okWord(r.Port), okWord(r.IP), r.Evidence})
	}
	return t.Render()
}

func okWord(s Step) string {
	switch {
	case !s.Attempted:
		return "not attempted"
	case s.OK:
		return "works"
	case s.PathValidated:
		return "validated, GET failed"
	}
	return "fails"
}

// endLine terminates a torn last line (a scan killed mid-write) so the next
// record starts on its own line.
func endLine(f *os.File) error {
	st, err := f.Stat()
	if err != nil || st.Size() == 0 {
		return err
	}
	b := make([]byte, 1)
	r, err := os.Open(f.Name())
	if err != nil {
		return err
	}
	defer r.Close()
	if _, err := r.ReadAt(b, st.Size()-1); err != nil {
		return err
	}
	if b[0] != '\n' {
		_, err = f.Write([]byte{'\n'})
	}
	return err
}
