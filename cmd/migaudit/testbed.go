package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/migaudit/migaudit/harnesses/testbed"
)

func init() { register(newTestbedCmd) }

func newTestbedCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "testbed",
		Short: "Bring the two-path emulation testbed up or down, show it, calibrate it (root)",
		Long: `testbed manages the two-path network the live runs stand on: a client namespace
with one address per path (A 198.18.1.2, B 198.18.2.2), a server namespace with
one fixed address (198.18.0.1), each path emulated in user space (rate, delay,
loss; this kernel has no sch_netem) by a holder process.

  migaudit testbed up [--path-a 20mbit,20ms] [--path-b 20mbit,40ms | --step-down]
  migaudit testbed status
  migaudit testbed calibrate [--quick]
  migaudit testbed down [--name N | --all-stale]`,
	}
	cmd.AddCommand(newTestbedUpCmd(), newTestbedDownCmd(), newTestbedStatusCmd(), newTestbedCalibrateCmd())
	return cmd
}

// pathFlags adds --path-a/--path-b/--step-down and returns a builder.
func pathFlags(cmd *cobra.Command) func() (testbed.Config, error) {
	var a, b string
	var step bool
	f := cmd.Flags()
	f.StringVar(&a, "path-a", "", `path A as RATE,RTT[,LOSS%][,burst=B][,queue=B] (default "20mbit,20ms")`)
	f.StringVar(&b, "path-b", "", `path B likewise (default "20mbit,40ms")`)
	f.BoolVar(&step, "step-down", false, "the study's step-down pair: path B 20mbit,60ms")
	return func() (testbed.Config, error) {
		cfg := testbed.Standard()
		if step {
			cfg = testbed.StepDown()
		}
		if a != "" {
			p, err := testbed.ParsePath(a)
			if err != nil {
				return cfg, fmt.Errorf("--path-a: %w", err)
			}
			cfg.PathA = p
		}
		if b != "" {
			if step {
				return cfg, fmt.Errorf("--path-b and --step-down both set path B")
			}
			p, err := testbed.ParsePath(b)
			if err != nil {
				return cfg, fmt.Errorf("--path-b: %w", err)
			}
			cfg.PathB = p
		}
		return cfg, nil
	}
}

// interruptible is ctx, cancelled also by SIGINT or SIGTERM, so that
// whatever is half built is taken down before the command exits.
func interruptible(ctx context.Context) (context.Context, context.CancelFunc) {
	return signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
}

func newTestbedUpCmd() *cobra.Command {
	var opt testbed.UpOptions
	cmd := &cobra.Command{
		Use:   "up",
		Short: "Bring a testbed up, held by a detached process until `testbed down`",
		Example: `  migaudit testbed up
  migaudit testbed up --name trial1 --path-a 20mbit,20ms --path-b 20mbit,60ms,0.5%`,
		Args: cobra.NoArgs,
	}
	cfg := pathFlags(cmd)
	cmd.Flags().StringVar(&opt.Config.Name, "name", "", "instance name ([a-z0-9-], default generated)")
	cmd.Flags().BoolVar(&opt.JSON, "json", false, "print the instance record as JSON")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		c, err := cfg()
		if err != nil {
			return err
		}
		c.Name = opt.Config.Name
		opt.Config = c
		ctx, stop := interruptible(context.Background())
		defer stop()
		return testbed.RunUp(ctx, opt, cmd.OutOrStdout())
	}
	return cmd
}

func newTestbedDownCmd() *cobra.Command {
	var opt testbed.DownOptions
	cmd := &cobra.Command{
		Use:   "down",
		Short: "Take a testbed down (idempotent), or remove leftovers of crashed ones",
		Example: `  migaudit testbed down
  migaudit testbed down --name trial1
  migaudit testbed down --all-stale`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if opt.AllStale && opt.Name != "" {
				return fmt.Errorf("--all-stale and --name are exclusive")
			}
			if err := testbed.Preflight(); err != nil {
				return err
			}
			return testbed.RunDown(opt, cmd.OutOrStdout())
		},
	}
	cmd.Flags().StringVar(&opt.Name, "name", "", "instance to take down (default: the only one up)")
	cmd.Flags().BoolVar(&opt.AllStale, "all-stale", false, "remove every "+testbed.Prefix+"* namespace and state whose holder is gone")
	return cmd
}

func newTestbedStatusCmd() *cobra.Command {
	var opt testbed.StatusOptions
	cmd := &cobra.Command{
		Use:     "status",
		Short:   "List testbeds that are up (paths, route, counters) and leftovers of crashed ones",
		Example: `  migaudit testbed status --json`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return testbed.RunStatus(opt, cmd.OutOrStdout())
		},
	}
	cmd.Flags().BoolVar(&opt.JSON, "json", false, "JSON output")
	return cmd
}

func newTestbedCalibrateCmd() *cobra.Command {
	var opt testbed.CalibrateCmdOptions
	var skip []string
	cmd := &cobra.Command{
		Use:   "calibrate",
		Short: "Run the four calibration gates (timing, throughput, dispersion, isolation) and write the record",
		Long: `calibrate proves the emulator accurate before anything is measured on it, per path:
  1 timing      UDP echo at RTT 10/20/40 ms: median within ±2 %, mean absolute deviation ≤ 200 µs
  2 throughput  TCP at 20/50/100 Mbit/s: goodput within −3 % of rate × MSS/MTU, tight spread
  3 dispersion  trains of K=16 probes, leading ones the bucket passes unshaped discarded: ±2 %
  4 isolation   per-path counters: bound-to-A uses A only, B likewise, unbound follows the route flip
It uses the testbed that is up (--name, or the only one) or brings one up for itself.
The record (JSON, every figure) goes to --out or results/calibration-<name>-<UTC>.json
(its path printed at the end); a failing
gate exits 2 naming the gate and the numbers. Every tolerance is a veto here (strict);
--sanity judges only systematic faults, as migaudit run does before its repetitions.`,
		Example: `  migaudit testbed calibrate --quick
  migaudit testbed calibrate --name trial1 --out cal.json`,
		Args: cobra.NoArgs,
	}
	cfg := pathFlags(cmd)
	f := cmd.Flags()
	f.StringVar(&opt.Name, "name", "", "testbed to calibrate (default: the only one up, else a fresh one)")
	f.StringVar(&opt.Out, "out", "", "calibration record file (never overwritten)")
	f.BoolVar(&opt.Calibrate.Quick, "quick", false, "fewer samples and shorter transfers (about a minute)")
	f.BoolVar(&opt.Calibrate.Capture, "capture", false, "run the gates with the wire capture on (copied, counted, discarded) to show what it costs")
	f.StringSliceVar(&opt.Calibrate.Paths, "path", nil, "calibrate only these paths (A, B)")
	f.StringSliceVar(&skip, "skip", nil, "skip gates (timing, throughput, dispersion, isolation); recorded as skipped")
	f.DurationVar(&opt.Calibrate.Transfer, "transfer", 0, "length of each throughput transfer (default 6s, quick 3s)")
	var sanity bool
	f.BoolVar(&sanity, "sanity", false, "fail only for a fault seen in every attempt (median delay or rate off, misrouting), not for jitter")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		c, err := cfg()
		if err != nil {
			return err
		}
		opt.Config = c
		opt.Calibrate.SkipGates = skip
		opt.Calibrate.Strict = !sanity
		if err := testbed.Preflight(); err != nil {
			return err
		}
		ctx, stop := interruptible(context.Background())
		defer stop()
		start := time.Now()
		err = testbed.RunCalibrate(ctx, opt, cmd.OutOrStdout())
		if err != nil {
			if ctx.Err() != nil {
				return fmt.Errorf("calibrate interrupted after %v: %w", time.Since(start).Round(time.Second), err)
			}
			return &ExitError{Code: 2, Err: err}
		}
		return nil
	}
	return cmd
}
