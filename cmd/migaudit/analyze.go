package main

import (
	"fmt"
	"io"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/migaudit/migaudit/discriminator"
	"github.com/migaudit/migaudit/discriminator/render"
	"github.com/migaudit/migaudit/parsers"
)

func init() { register(newAnalyzeCmd) }

// analyzeOptions are analyze's flags: render's options plus what must be
// checked or converted before render runs.
type analyzeOptions struct {
	render.RunOptions
	params []string
	// progress is where the progress bar goes (nil: none); the command
	// sets it to stderr on a terminal.
	progress io.Writer
	// wire and keylog give one trace its wire evidence explicitly
	// (default: the capture and key log beside the trace, if any).
	wire, keylog string
}

func newAnalyzeCmd() *cobra.Command {
	var (
		o           analyzeOptions
		migrationAt time.Duration
	)
	cmd := &cobra.Command{
		Use:   "analyze [--impl NAME] TRACE [TRACE...]",
		Short: "Classify every congestion-window decrease around a migration and attribute the RTT",
		Long: `analyze reads traces (qlog of picoquic, ngtcp2, quic-go or quiche; msquic's trace log;
a timeline CSV; gzip is transparent), finds the migration in each (address change or
path-validation exchange), classifies every window decrease from 50 ms before path
validation to 2 s after as RESET, LOSS_BACKOFF, LOSS_FLOOR, BELOW_INITIAL, MODEL_BOUND (BBR) or UNEXPLAINED
using the implementation's constants from data/, attributes the post-migration RTT to
the old path, the new path or the default, and answers Q1 and Q3 for each trace.

Several traces are analyzed in parallel, one per CPU (--jobs), each in one pass in
memory bounded by time rather than by the trace's length; the output keeps the
order of the arguments, and a progress bar shows on a terminal. A pattern the
shell did not expand is expanded here, "**" matching any number of directories:
  migaudit analyze --format json 'runs/**/server*.gz'

A timeline CSV has no path events: give the migration instant with --migration-at,
otherwise the answer is "no migration found".`,
		Example: `  migaudit study extract --out study
  migaudit analyze --impl quic-go study/traces/quicgo_server.sqlog.gz
  migaudit analyze --impl msquic --migration-at 5.53s --format json study/timelines/msquic/rep1_server.csv
  migaudit analyze --impl ngtcp2 --param S=1452 --new-path-rtt 40ms --format markdown trace.sqlog`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Traces = args
			if cmd.Flags().Changed("migration-at") { // --migration-at 0s differs from none
				o.Analysis.MigrationAt = &migrationAt
			}
			if isTerminal(cmd.ErrOrStderr()) {
				o.progress = cmd.ErrOrStderr()
			}
			return runAnalyze(cmd.OutOrStdout(), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Analysis.Impl, "impl", "", "implementation that produced the traces (its constants come from data/); default: the one the trace names")
	f.StringVar(&o.Format, "format", "table", "output: "+strings.Join(render.Formats(), ", "))
	f.StringVar(&o.Parse.Format, "trace-format", "", "trace format (default: detected): "+strings.Join(parsers.Formats(), ", "))
	f.DurationVar(&migrationAt, "migration-at", 0, "migration instant for timelines without path events, from the trace's reference (e.g. 5.53s)")
	f.StringArrayVar(&o.params, "param", nil, "override a constant formula parameter, NAME=VALUE (e.g. S=1452); repeatable")
	f.DurationVar(&o.Analysis.Before, "before", discriminator.DefaultBefore, "scope start before path validation")
	f.DurationVar(&o.Analysis.After, "after", discriminator.DefaultAfter, "scope end after path validation")
	f.DurationVar(&o.Analysis.NewPathRTT, "new-path-rtt", 0, "new path's RTT when known (default: the path-validation round trip)")
	f.IntVar(&o.Workers, "jobs", 0, "traces analyzed in parallel, one per worker (default: one per CPU); the output order is the arguments' order")
	f.DurationVar(&o.Analysis.OldPathRTT, "old-path-rtt", 0, "old path's RTT when known (default: the last smoothed RTT before migration)")
	f.StringVar(&o.wire, "wire", "", "the repetition's capture (pcapng, gzip transparent) for one trace; default: "+discriminator.WireCaptureName+" beside the trace, when there is one")
	f.StringVar(&o.keylog, "keylog", "", "the TLS key log (NSS format) for --wire; default: "+discriminator.KeyLogName+" beside the capture, when there is one")
	return cmd
}

// runAnalyze is analyze's work once its flags are read.
func runAnalyze(stdout io.Writer, o analyzeOptions) error {
	if o.Parse.Format != "" && !slices.Contains(parsers.Formats(), o.Parse.Format) {
		return fmt.Errorf("--trace-format %q: use one of %s", o.Parse.Format, strings.Join(parsers.Formats(), ", "))
	}
	p, err := parseAnalyzeParams(o.params)
	if err != nil {
		return err
	}
	o.Analysis.Params = p
	if o.keylog != "" && o.wire == "" {
		return fmt.Errorf("--keylog %s: give the capture it decrypts with --wire", o.keylog)
	}
	if o.wire != "" {
		if len(o.Traces) != 1 {
			return fmt.Errorf("--wire %s: one capture belongs to one trace, got %d traces", o.wire, len(o.Traces))
		}
		keylog := o.keylog
		if keylog == "" {
			_, keylog = discriminator.WireBeside(o.wire)
		}
		w, err := discriminator.LoadWireEvidence(o.wire, keylog)
		if err != nil {
			return err
		}
		o.Analysis.Wire = w
	}
	o.Progress = o.progress
	// No memory profile is ever taken. The heap goal stays Go's default
	// (GOGC=100): analyze keeps little (a few seconds of a trace at most),
	// the binary's own mapped pages dominate its RSS, and a smaller goal
	// (25) cost twice to three times the collections, 9-12 % of the wall
	// time, for no measurable RSS (docs/analyze-performance.md).
	runtime.MemProfileRate = 0
	return render.Run(stdout, o.RunOptions)
}

func parseAnalyzeParams(in []string) (map[string]float64, error) {
	out := map[string]float64{}
	for _, kv := range in {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("--param %q: want NAME=VALUE, e.g. S=1452", kv)
		}
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return nil, fmt.Errorf("--param %q: %s is not a number", kv, v)
		}
		out[k] = f
	}
	return out, nil
}
