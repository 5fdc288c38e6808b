package run

import (
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/migaudit/migaudit/data/atomicfile"
	"github.com/migaudit/migaudit/discriminator"
	"github.com/migaudit/migaudit/parsers"
	"github.com/migaudit/migaudit/parsers/timeline"
)

// Calibration is what the network factory reports about the emulator.
type Calibration struct {
	// Calibrated is false when calibration was skipped (--skip-calibration).
	Calibrated bool `json:"calibrated"`
	// Passed is true when every gate passed.
	Passed bool `json:"passed"`
	// Record is the testbed's own calibration record.
	Record json.RawMessage `json:"record,omitempty"`
	// Paths are the two paths' specifications as configured.
	Paths map[Path]string `json:"paths"`
	Note  string          `json:"note,omitempty"`
}

// NetFactory brings a network up for a scenario (step-down uses a slower
// path B) and returns it with its calibration and a teardown function.
// A failing calibration gate is an error naming the gate unless skip is
// set.
type NetFactory func(ctx context.Context, scenario Scenario, skipCalibration bool) (Net, Calibration, func() error, error)

// Options configure Run.
type Options struct {
	Harness         Harness
	Reps            int
	Scenario        Scenario
	CC              string
	Out             string // directory for this run; created, must not hold rep dirs
	SkipCalibration bool
	Transfer        time.Duration
	MigrateAt       time.Duration
	BackAfter       time.Duration
	SelfExe         string
	NewNet          NetFactory
	// Progress shows each repetition's download on Stderr: a bar redrawn in
	// place when Terminal is set, else one plain line per step (a log file,
	// a pipe or CI gets no redraws).
	Progress bool
	Terminal bool
	// Retries bounds the extra attempts per wanted repetition when one is
	// SPOILED (its emulation fidelity did not hold in the verdict's
	// window): 0 means DefaultRetries, a negative value none.
	Retries int
	// NoCapture turns off the wire capture (WireFile) every repetition
	// otherwise gets when the network can record it (--capture=false).
	NoCapture bool
}

// DefaultRetries is how many times a spoiled repetition is re-run.
const DefaultRetries = 2

// Summary is the whole run (written to summary.json in Out).
type Summary struct {
	Implementation string      `json:"implementation"`
	Version        string      `json:"version"`
	Scenario       Scenario    `json:"scenario"`
	CC             string      `json:"cc"`
	Out            string      `json:"out"`
	Calibration    Calibration `json:"calibration"`
	// Reps are the counted repetitions, one per wanted repetition (the
	// last attempt of each).
	Reps []RepSummary `json:"reps"`
	// Spoiled are the attempts re-run because the host spoiled them, kept
	// under Out/spoiled/ and never counted.
	Spoiled   []RepSummary  `json:"spoiled,omitempty"`
	Wanted    int           `json:"wanted"`
	Aggregate string        `json:"aggregate"`
	Start     time.Time     `json:"start"`
	Duration  time.Duration `json:"duration_ns"`
}

// RepSummary is one repetition's line in the summary.
type RepSummary struct {
	Rep          int                     `json:"rep"`
	Dir          string                  `json:"dir"`
	Status       Status                  `json:"status"`
	Attempt      int                     `json:"attempt"`
	Verification Verification            `json:"verification"`
	Completed    bool                    `json:"completed"`
	Error        string                  `json:"error,omitempty"`
	Analysis     *discriminator.Analysis `json:"analysis,omitempty"`
	// Return is the analysis of the B → A return in migrate-back.
	Return *discriminator.Analysis `json:"return_analysis,omitempty"`
	// Fidelity is the emulator's record of the repetition (nil when the
	// network does not measure it).
	Fidelity *Fidelity `json:"fidelity,omitempty"`
}

// Run executes the repetitions one after another and prints the per-rep
// table and the aggregate to w.
func Run(ctx context.Context, o Options, w, stderr io.Writer) (*Summary, error) {
	h := o.Harness
	if h == nil {
		return nil, errors.New("run: no harness")
	}
	if o.Reps < 1 {
		return nil, fmt.Errorf("--reps must be at least 1, got %d", o.Reps)
	}
	if o.BackAfter == 0 {
		o.BackAfter = 5 * time.Second
	}
	// Everything the harness cannot do is refused here, before the testbed
	// comes up.
	if _, err := PlanRep(h.Capabilities(), RepEnv{Scenario: o.Scenario, CC: o.CC, Transfer: o.Transfer, MigrateAt: o.MigrateAt, BackAfter: o.BackAfter}); err != nil {
		return nil, fmt.Errorf("%s: %w", h.Name(), err)
	}
	bins, err := h.Check(ctx)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(o.Out, 0o755); err != nil {
		return nil, fmt.Errorf("create %s: %w", o.Out, err)
	}
	if o.Retries == 0 {
		o.Retries = DefaultRetries
	}
	o.Retries = max(o.Retries, 0)
	if m, _ := filepath.Glob(filepath.Join(o.Out, "rep*")); len(m) > 0 || exists(filepath.Join(o.Out, "spoiled")) {
		if len(m) == 0 {
			m = []string{filepath.Join(o.Out, "spoiled")}
		}
		return nil, fmt.Errorf("%s already holds repetitions (%s); repetitions are never overwritten: choose another --out", o.Out, filepath.Base(m[0]))
	}
	netw, cal, teardown, err := o.NewNet(ctx, o.Scenario, o.SkipCalibration)
	if err != nil {
		if cal.Record != nil { // keep the failed gate's figures with the run
			if werr := WriteJSONAtomic(filepath.Join(o.Out, "calibration.json"), cal); werr == nil {
				err = fmt.Errorf("%w (record in %s)", err, filepath.Join(o.Out, "calibration.json"))
			}
		}
		return nil, err
	}
	defer func() {
		if err := teardown(); err != nil {
			fmt.Fprintf(stderr, "migaudit: testbed teardown: %v\n", err)
		}
	}()
	if err := WriteJSONAtomic(filepath.Join(o.Out, "calibration.json"), cal); err != nil {
		return nil, err
	}
	sum := &Summary{Implementation: h.Name(), Scenario: o.Scenario, CC: o.CC, Out: o.Out, Calibration: cal, Start: time.Now().UTC(), Wanted: o.Reps}
	for i := 1; i <= o.Reps; i++ {
		for attempt := 1; ctx.Err() == nil; attempt++ {
			rs := runRep(ctx, o, h, bins, netw, cal, i, attempt, stderr)
			if rs.Analysis != nil && sum.Version == "" {
				sum.Version = versionOf(filepath.Join(rs.Dir, "manifest.json"))
			}
			if rs.Status == Spoiled && attempt <= o.Retries && ctx.Err() == nil {
				if err := setAside(o.Out, &rs); err != nil {
					fmt.Fprintf(stderr, "migaudit: %v\n", err)
				}
				recordAttempt(o.Out, sum, rs, stderr)
				sum.Spoiled = append(sum.Spoiled, rs)
				fmt.Fprintf(stderr, "rep %d/%d: re-running (attempt %d of at most %d) — %s\n", i, o.Reps, attempt+1, o.Retries+1, spoiledReason(rs))
				continue
			}
			recordAttempt(o.Out, sum, rs, stderr)
			sum.Reps = append(sum.Reps, rs)
			break
		}
		if ctx.Err() != nil {
			break
		}
	}
	sum.Duration = time.Since(sum.Start)
	sum.Aggregate = RunAggregate(o.Scenario, o.Reps, sum.Reps, sum.Spoiled)
	PrintTable(w, sum)
	if err := WriteJSONAtomic(filepath.Join(o.Out, "summary.json"), sum); err != nil {
		return sum, err
	}
	if ctx.Err() != nil {
		return sum, fmt.Errorf("interrupted after %d of %d repetitions (kept in %s): %w", len(sum.Reps), o.Reps, o.Out, ctx.Err())
	}
	return sum, nil
}

func versionOf(manifest string) string {
	var m Manifest
	b, err := os.ReadFile(manifest)
	if err == nil && json.Unmarshal(b, &m) == nil {
		return m.Version
	}
	return ""
}

// Manifest is manifest.json in every repetition directory.
type Manifest struct {
	Implementation string   `json:"implementation"`
	Version        string   `json:"version"`
	Upstream       string   `json:"upstream_pinned_commit"`
	Binaries       Binaries `json:"binaries"`
	Scenario       Scenario `json:"scenario"`
	CC             string   `json:"cc"`
	Rep            int      `json:"rep"`
	// Attempt counts the tries of this repetition (1 = first); an attempt
	// the host spoiled is kept under spoiled/ and re-run.
	Attempt     int               `json:"attempt,omitempty"`
	Paths       map[Path]PathInfo `json:"paths"`
	Calibration Calibration       `json:"calibration"`
	Transfer    string            `json:"transfer"`
	// Plan is what the runner decided for the repetition (RepPlan).
	Plan      *RepPlan  `json:"plan,omitempty"`
	MigrateAt string    `json:"migrate_at"`
	BackAfter string    `json:"back_after,omitempty"`
	Start     time.Time `json:"start"`
	End       time.Time `json:"end"`
	Result    RepResult `json:"result"`
	// LoadBefore / LoadAfter are /proc/loadavg at the start and end: a
	// user-space emulator on an overloaded host delays packets.
	LoadBefore     string               `json:"loadavg_before,omitempty"`
	LoadAfter      string               `json:"loadavg_after,omitempty"`
	EmulatorBefore json.RawMessage      `json:"emulator_timing_before,omitempty"`
	EmulatorAfter  json.RawMessage      `json:"emulator_timing_after,omitempty"`
	CountersBefore map[Path]PathCounter `json:"counters_before,omitempty"`
	CountersAfter  map[Path]PathCounter `json:"counters_after,omitempty"`
	Files          []FileInfo           `json:"files"`
	Verification   Verification         `json:"verification"`
	// Fidelity is the emulator's own record of this repetition: per path
	// and direction, delay, lateness against its schedule, rate and drops,
	// and the host stalls, over the whole repetition and the verdict's
	// window, with the rule applied (see docs/testbed.md).
	Fidelity *Fidelity `json:"fidelity,omitempty"`
	// Capture is the record of WireFile, the emulator's capture of every
	// datagram (docs/wire.md).
	Capture *Capture `json:"capture,omitempty"`
	// KeyLog describes the TLS key log an endpoint wrote (keylog.txt).
	KeyLog *KeyLog `json:"keylog,omitempty"`
	Status Status  `json:"status"`
	// Interrupted is true when the run was cancelled during the repetition.
	Interrupted bool `json:"interrupted,omitempty"`
	// SpoiledReason says why a SPOILED repetition does not count.
	SpoiledReason string `json:"spoiled_reason,omitempty"`
	Error         string `json:"error,omitempty"`
	AnalysisError string `json:"analysis_error,omitempty"`
}

// PathInfo is a path's configured emulation.
type PathInfo struct {
	Spec  string `json:"spec"`
	RTTUS int64  `json:"rtt_us"`
	Rate  int64  `json:"rate_bps"`
}

// FileInfo is one file of the repetition with its digest.
type FileInfo struct {
	Name   string `json:"name"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
}

func spoiledReason(rs RepSummary) string {
	if rs.Fidelity == nil {
		return "spoiled"
	}
	return strings.Join(rs.Fidelity.Problems, "; ")
}

// setAside moves a spoiled attempt's directory to Out/spoiled/rep<N>-try<K>
// (never overwritten), so that the re-run gets a fresh rep<N> and nothing
// that globs rep* (the survey) ever counts it; the analysis' trace path is
// rewritten to the new place.
func setAside(out string, rs *RepSummary) error {
	sp := filepath.Join(out, "spoiled")
	if err := os.MkdirAll(sp, 0o755); err != nil {
		return fmt.Errorf("keep spoiled repetition: %w", err)
	}
	to := filepath.Join(sp, fmt.Sprintf("rep%d-try%d", rs.Rep, rs.Attempt))
	if _, err := os.Stat(to); err == nil {
		return fmt.Errorf("keep spoiled repetition: %s already exists", to)
	}
	if err := os.Rename(rs.Dir, to); err != nil {
		return fmt.Errorf("keep spoiled repetition: %w", err)
	}
	from := rs.Dir
	rs.Dir = to
	for _, a := range []struct {
		name string
		an   *discriminator.Analysis
	}{{"analysis.json", rs.Analysis}, {"analysis-return.json", rs.Return}} {
		if a.an == nil {
			continue
		}
		if rel, err := filepath.Rel(from, a.an.Trace); err == nil && !strings.HasPrefix(rel, "..") {
			a.an.Trace = filepath.Join(to, rel)
			if err := WriteJSONAtomic(filepath.Join(to, a.name), a.an); err != nil {
				return err
			}
		}
	}
	return nil
}

func repLineSuffix(rs RepSummary) string {
	var parts []string
	if rs.Error != "" {
		parts = append(parts, rs.Error)
	}
	if rs.Status == Spoiled {
		parts = append(parts, "fidelity "+spoiledReason(rs))
	}
	if !rs.Verification.Valid && len(rs.Verification.Problems) > 0 {
		parts = append(parts, strings.Join(rs.Verification.Problems, "; "))
	}
	if len(parts) == 0 {
		return ""
	}
	return " — " + strings.Join(parts, "; ")
}

// analyse parses the server trace and runs the discriminator with the
// run's parameters and the configured path RTTs. For migrate-back it also
// analyses the return, by cutting the timeline after the first migration.
func analyse(trace, impl string, sc Scenario, res RepResult, netw pathRTTs) (discriminator.Analysis, *discriminator.Analysis, error) {
	tl, err := parsers.ParseFile(trace, parsers.Options{})
	if err != nil {
		return discriminator.Analysis{}, nil, err
	}
	params := map[string]float64{}
	for k, p := range res.Params {
		params[k] = p.Value
	}
	oldRTT, newRTT := netw.PathRTT(PathA), netw.PathRTT(PathB)
	if sc == PortRebind {
		// Same network before and after: there is no "old path" to tell
		// apart, only the path's own RTT versus the estimator's default.
		oldRTT, newRTT = 0, netw.PathRTT(PathA)
	}
	atCommit, constWarn := liveConstants(impl, res)
	opt := discriminator.Options{Impl: impl, Params: params, OldPathRTT: oldRTT, NewPathRTT: newRTT, CC: res.Settings["cc"], Constants: atCommit, Commit: res.Settings[LiveCommitSetting]}
	// The repetition's own capture and key log, when it has them, decide
	// Q3 through the packet (docs/wire-reader.md); an unreadable capture
	// leaves Q3 to values and says why.
	var wireErr error
	if c, k := discriminator.WireBeside(trace); c != "" {
		opt.Wire, wireErr = discriminator.LoadWireEvidence(c, k)
	}
	a, err := discriminator.Analyze(tl, opt)
	if err != nil {
		return a, nil, err
	}
	if wireErr != nil {
		a.Warnings = append(a.Warnings, "wire evidence not used: "+wireErr.Error())
	}
	if constWarn != "" {
		a.Warnings = append(a.Warnings, constWarn)
	}
	if sc != MigrateBack || !a.Migration.Found {
		return a, nil, nil
	}
	// The return B → A: the same trace from 1 s after the first migration.
	cut := a.Migration.AtUS + 1_000_000
	rest := *tl
	rest.Samples, rest.Events = nil, nil
	var last *int
	for i, s := range tl.Samples {
		if s.TimeUS >= cut {
			rest.Samples = append(rest.Samples, s)
		} else {
			j := i
			last = &j
		}
	}
	if last != nil { // carry the state in effect at the cut
		s := tl.Samples[*last]
		s.TimeUS = cut
		rest.Samples = append([]timeline.Sample{s}, rest.Samples...)
	}
	// Carry the last path event before the cut too: a timeline that names a
	// path's addresses only when the path first appears (the CSV's
	// path_seen) would otherwise leave the return with no address to
	// return from.
	var lastPath *timeline.Event
	for i, e := range tl.Events {
		if e.TimeUS < cut && e.Kind == timeline.PathEvent && (e.From != "" || e.To != "") {
			lastPath = &tl.Events[i]
		}
	}
	if lastPath != nil {
		e := *lastPath
		e.TimeUS = cut
		e.Detail = strings.TrimSpace(e.Detail + " (in effect at the cut)")
		rest.Events = append(rest.Events, e)
	}
	for _, e := range tl.Events {
		if e.TimeUS >= cut {
			rest.Events = append(rest.Events, e)
		}
	}
	rest.Source = tl.Source + " (after " + fmt.Sprint(cut/1000) + " ms: the return to path A)"
	r, err := discriminator.Analyze(&rest, discriminator.Options{Impl: impl, Params: params, OldPathRTT: newRTT, NewPathRTT: oldRTT, CC: res.Settings["cc"], Constants: atCommit, Commit: res.Settings[LiveCommitSetting]})
	if err != nil {
		return a, nil, nil
	}
	return a, &r, nil
}

// CompressFile gzips path into path+".gz" and removes path (a ".gz" path
// is returned as it is); for a harness's own extra files.
func CompressFile(path string) (string, error) { return gzipFile(path) }

func gzipFile(path string) (string, error) {
	if strings.HasSuffix(path, ".gz") {
		return path, nil
	}
	in, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer in.Close()
	out := path + ".gz"
	f, err := os.OpenFile(out, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return "", err
	}
	zw, _ := gzip.NewWriterLevel(f, gzip.BestSpeed)
	if _, err := io.Copy(zw, in); err != nil {
		f.Close()
		os.Remove(out)
		return "", err
	}
	if err := zw.Close(); err != nil {
		f.Close()
		os.Remove(out)
		return "", err
	}
	if err := f.Close(); err != nil {
		os.Remove(out)
		return "", err
	}
	return out, os.Remove(path)
}

func listFiles(dir string) []FileInfo {
	var out []FileInfo
	_ = filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() || info.Name() == "manifest.json" {
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		sum, _ := SHA256File(p)
		out = append(out, FileInfo{Name: rel, Size: info.Size(), SHA256: sum})
		return nil
	})
	return out
}

// WriteJSONAtomic writes v as indented JSON to path through a temporary
// file and a rename.
func WriteJSONAtomic(path string, v any) error { return atomicfile.WriteJSON(path, v) }

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

func exists(p string) bool { _, err := os.Stat(p); return err == nil }
