package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/migaudit/migaudit/data"
	"github.com/migaudit/migaudit/harnesses/needs"
	liverun "github.com/migaudit/migaudit/harnesses/run"
	"github.com/migaudit/migaudit/harnesses/run/tbnet"
	"github.com/migaudit/migaudit/harnesses/testbed"
	"github.com/migaudit/migaudit/harnesses/upstream"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	// Live harnesses register themselves with harnesses/run.
	_ "github.com/migaudit/migaudit/harnesses/lsquic"
	_ "github.com/migaudit/migaudit/harnesses/msquic"
	_ "github.com/migaudit/migaudit/harnesses/ngtcp2"
	_ "github.com/migaudit/migaudit/harnesses/picoquic"
	_ "github.com/migaudit/migaudit/harnesses/quicgo"
	_ "github.com/migaudit/migaudit/harnesses/quinn"
	_ "github.com/migaudit/migaudit/harnesses/xquic"
)

func init() { register(newRunCmd) }

func newRunCmd() *cobra.Command {
	var (
		impl, scenario, cc, out string
		reps                    int
		skipCal, noProgress     bool
		strictCal, noMlock      bool
		capture                 bool
		instrument              bool
		retries                 int
		pinCPUs                 string
		spin                    time.Duration
		calScope                string
		transfer, migrateAt     time.Duration
		backAfter               time.Duration
		source, commit          string
		deps                    []string
		system                  bool
	)
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Run an implementation across a real IP migration in the two-path testbed (root)",
		Long: `run brings the two-path testbed up (path A 20 Mbit/s 20 ms, path B 20 Mbit/s 40 ms;
step-down: path B 60 ms), warms it up and sanity-checks it (only a fault seen in
every attempt stops the run; --strict-calibration makes every gate a veto), runs
the repetitions one after another, each in its own never-reused directory,
verifies that each one migrated as the scenario claims (the client's IP changed —
or, for port-rebind, did not), analyses the server's trace with the
discriminator, and tears everything down (also on Ctrl-C).

Every repetition proves its own fidelity: the emulator records each packet's
lateness against its schedule and a real-time sentinel records host stalls; a
repetition counts (VALID) only if the emulation held inside the window its
verdict depends on (docs/testbed.md). One the host spoiled is kept under
<out>/spoiled/ marked SPOILED and re-run, up to --retries times.

Scenarios: standard, step-down, port-rebind (same IP, new port), nat-rebind
(address changes without the client validating the path), migrate-back (A→B→A),
pv-distinct (as standard, but path B's first two PATH_CHALLENGE-sized datagrams each
way after it was idle, the path validation, wait 100 ms more: Q2 is decided live from
the wire), lossy (as standard, with 1 % random loss each way on path B from a fixed
seed the manifest records: loss responses after the migration, down to the floor).`,
		Example: `  sudo migaudit run --impl ngtcp2 --reps 5
  sudo migaudit run --impl ngtcp2 --commit v1.0.0 --reps 1
  sudo migaudit run --impl ngtcp2 --system --reps 5
  sudo migaudit run --impl quic-go --scenario migrate-back --reps 3 --out results/qg-back
  sudo migaudit run --impl ngtcp2 --scenario port-rebind --cc reno --transfer 15s`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			h, ok := liverun.Lookup(impl)
			if !ok {
				im, err := data.Lookup(impl)
				if err != nil {
					return err
				}
				why := im.Live
				if w, ok := needs.DefaultHost.Why(im.Name); ok {
					why = w // what this machine lacks for a live build, checked now
				}
				if why == "" {
					why = "no live harness"
				}
				return liverun.ErrNotRunnable(im.Name, why)
			}
			if system {
				sp, ok := h.(upstream.SystemPackager)
				if !ok {
					return fmt.Errorf("--system applies to harnesses that can run a distribution package instead of a build from a checkout (ngtcp2); %s has none", h.Name())
				}
				if err := sp.UseSystemPackage(); err != nil {
					return err
				}
			}
			if err := configureUpstream(h, source, commit, deps); err != nil {
				return err
			}
			if instrument {
				in, ok := h.(upstream.Instrumentable)
				if !ok {
					return fmt.Errorf("--instrument: %s has no instrumented build (msquic has: harnesses/msquic/patches/instrument.patch)", h.Name())
				}
				if err := in.SetInstrumented(true); err != nil {
					return err
				}
			}
			sc := liverun.Scenario(scenario)
			known := false
			for _, s := range liverun.AllScenarios {
				known = known || s == sc
			}
			if !known {
				var names []string
				for _, s := range liverun.AllScenarios {
					names = append(names, string(s))
				}
				return fmt.Errorf("unknown --scenario %q (known: %s)", scenario, strings.Join(names, ", "))
			}
			if calScope != tbnet.CalibrateFull && calScope != tbnet.CalibrateOperatingPoint {
				return fmt.Errorf("unknown --calibration %q (full or operating-point)", calScope)
			}
			if retries < 0 {
				return fmt.Errorf("--retries must be 0 or more, got %d", retries)
			}
			if os.Geteuid() != 0 {
				return fmt.Errorf("run needs root (network namespaces, TUN devices); rerun with sudo")
			}
			if out == "" {
				out = filepath.Join("results", fmt.Sprintf("%s-%s-%s", h.Name(), sc, time.Now().UTC().Format("20060102T150405Z")))
			}
			self, err := os.Executable()
			if err != nil {
				return fmt.Errorf("locate migaudit executable: %w", err)
			}
			ctx, stop := interruptible(cmd.Context())
			defer stop()
			tuning := testbed.DefaultTuning()
			tuning.PinCPUs, tuning.Spin, tuning.Mlock = pinCPUs, spin, !noMlock
			r := retries
			if r == 0 {
				r = -1 // Options: 0 is the default, negative none
			}
			return runLive(ctx, cmd, liverun.Options{Harness: h, Reps: reps, Scenario: sc, CC: cc, Out: out,
				SkipCalibration: skipCal, Transfer: transfer, MigrateAt: migrateAt, BackAfter: backAfter, Retries: r,
				SelfExe: self, NewNet: tbnet.FactoryWith(tbnet.FactoryOptions{Progress: cmd.ErrOrStderr(), Scope: calScope, Strict: strictCal, Tuning: &tuning}),
				Progress: !noProgress, Terminal: isTerminal(cmd.ErrOrStderr()), NoCapture: !capture})
		},
	}
	f := cmd.Flags()
	f.StringVar(&impl, "impl", "quic-go", "implementation with a live harness: quic-go, ngtcp2, quiche, msquic (built from --source), picoquic")
	f.IntVar(&reps, "reps", 5, "repetitions")
	f.StringVar(&scenario, "scenario", "standard", "standard|step-down|port-rebind|nat-rebind|migrate-back|pv-distinct|lossy")
	f.StringVar(&cc, "cc", "", "congestion control: cubic|reno|bbr (default: the implementation's own)")
	f.StringVar(&out, "out", "", "output directory (default results/<impl>-<scenario>-<timestamp>)")
	f.BoolVar(&skipCal, "skip-calibration", false, "run on an uncalibrated testbed (recorded in every manifest)")
	f.DurationVar(&transfer, "transfer", 20*time.Second, "intended download duration (sizes the body)")
	f.DurationVar(&migrateAt, "migrate-at", 5*time.Second, "migrate this long after the handshake")
	f.DurationVar(&backAfter, "back-after", 5*time.Second, "migrate-back: return to path A this long after leaving it")
	f.BoolVar(&noProgress, "no-progress", false, "no progress bar")
	f.StringVar(&source, "source", "", "harnesses built from source (picoquic, msquic, ngtcp2, quic-go): the implementation's clone or bare mirror (default: $MIGAUDIT_MIRRORS, then the user cache)")
	f.StringVar(&commit, "commit", "", "harnesses built from source: commit, tag or branch to build (default: the pinned commit in data/implementations.json)")
	f.StringArrayVar(&deps, "dep", nil, "harnesses built from source: a dependency's clone or bare mirror, name=DIR[@COMMIT] (e.g. picotls=/src/picotls, nghttp3=/src/nghttp3@v1.18.0); repeatable")
	f.BoolVar(&system, "system", false, "ngtcp2: run Debian's ngtcp2 0.12.1 packages (ngtcp2-client, ngtcp2-server) instead of a build from the checkout")
	f.BoolVar(&instrument, "instrument", false, "harnesses with an instrumented build (msquic): build with the project's instrumentation patch in its own cache entry; each repetition also writes <role>.instrument.log.gz")
	f.IntVar(&retries, "retries", liverun.DefaultRetries, "re-runs allowed per repetition the host spoiled (its emulation fidelity did not hold in the verdict's window)")
	f.BoolVar(&strictCal, "strict-calibration", false, "every calibration gate is a veto (jitter and spread included), as before fidelity was measured per repetition")
	f.StringVar(&pinCPUs, "pin-emulator", "", "pin the emulator's threads to these CPUs (e.g. 1) and the endpoints to the others (measured in docs/testbed.md)")
	f.DurationVar(&spin, "emulator-spin", 0, "busy-wait this long before each packet's deadline instead of sleeping (e.g. 50us)")
	f.BoolVar(&noMlock, "no-mlock", false, "do not lock the emulator's memory (mlockall)")
	f.BoolVar(&capture, "capture", true, "write the emulator's capture of every datagram, both paths, into each repetition (wire.pcapng.gz, docs/wire.md)")
	_ = f.MarkHidden("pin-emulator")
	_ = f.MarkHidden("emulator-spin")
	_ = f.MarkHidden("no-mlock")
	f.StringVar(&calScope, "calibration", tbnet.CalibrateOperatingPoint, "calibration scope: operating-point (the four gates at the run's own path RTTs and rates) or full (gates at 10/20/40 ms, 20/50/100 Mbit/s as well)")
	cmd.AddCommand(newRunReanalyzeCmd())
	cmd.AddCommand(newRunKeepCmd())
	return cmd
}

// configureUpstream hands --source/--commit/--dep to a harness built from
// an upstream checkout; other harnesses reject them.
func configureUpstream(h liverun.Harness, source, commit string, deps []string) error {
	c, ok := h.(upstream.Configurable)
	if !ok {
		if source != "" || commit != "" || len(deps) > 0 {
			return fmt.Errorf("--source, --commit and --dep apply to harnesses built from an upstream checkout (picoquic, msquic, ngtcp2, quic-go); %s runs installed binaries", h.Name())
		}
		return nil
	}
	dm, err := upstream.ParseDeps(deps)
	if err != nil {
		return err
	}
	return c.ConfigureUpstream(upstream.Options{Source: source, Commit: commit, Deps: dm})
}

func runLive(ctx context.Context, cmd *cobra.Command, o liverun.Options) error {
	sum, err := liverun.Run(ctx, o, cmd.OutOrStdout(), cmd.ErrOrStderr())
	if err != nil {
		return err
	}
	return verdictError(sum, o)
}

// verdictError is the run's exit: nil when every repetition is VALID, else
// one line saying why not.
func verdictError(sum *liverun.Summary, o liverun.Options) error {
	bad, spoiled := 0, 0
	var stalls, errs []string
	for _, r := range sum.Reps {
		if r.Status != liverun.Valid {
			bad++
			if r.Error != "" {
				errs = append(errs, fmt.Sprintf("rep %d: %s", r.Rep, r.Error))
			}
		}
		if r.Status == liverun.Spoiled {
			spoiled++
			if r.Fidelity != nil {
				stalls = append(stalls, fmt.Sprintf("rep %d: %s", r.Rep, strings.Join(r.Fidelity.Problems, "; ")))
			}
		}
	}
	if spoiled > 0 {
		return &ExitError{Code: 3, Err: fmt.Errorf("%d of %d repetitions valid: %d still SPOILED by the host after %d re-run(s) each (%s). "+
			"The machine could not run the emulator on time inside the verdict's window (load %s). Fix: stop the CPU-heavy work beside it "+
			"(or run on a quieter machine), or allow more re-runs with --retries; every attempt is kept in %s",
			sum.Wanted-bad, sum.Wanted, spoiled, max(o.Retries, 0), strings.Join(stalls, " | "), loadNow(), o.Out)}
	}
	if bad > 0 {
		why := ""
		if len(errs) > 0 {
			// What ended them (e.g. the upstream program's own assertion),
			// before the generic count.
			why = ": " + strings.Join(errs, " | ")
		}
		return &ExitError{Code: 3, Err: fmt.Errorf("%d of %d repetitions not VALID (kept in %s, excluded from the verdict)%s", bad, len(sum.Reps), o.Out, why)}
	}
	return nil
}

func loadNow() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

func newRunReanalyzeCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "reanalyze REPDIR [REPDIR...]",
		Short: "Re-derive recorded repetitions' analyses with this build's discriminator",
		Long: `reanalyze re-runs the discriminator on each repetition directory's kept server
trace, with the parameters and path RTTs its manifest recorded, rewrites
analysis.json (and analysis-return.json) atomically when the result differs, and
updates the manifest's file digests. Nothing else is touched: the measurement,
its fidelity record and its status stay as recorded. Use it after a
discriminator fix, then rebuild the survey (migaudit survey).`,
		Example: `  migaudit run reanalyze data/evidence/*/rep*`,
		Args:    cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, dirs []string) error {
			out := cmd.OutOrStdout()
			n := 0
			for _, d := range dirs {
				changed, err := liverun.Reanalyse(d)
				if err != nil {
					return err
				}
				state := "unchanged"
				if changed {
					state = "re-derived"
					n++
				}
				fmt.Fprintf(out, "%s: %s\n", d, state)
			}
			fmt.Fprintf(out, "%d of %d repetitions re-derived\n", n, len(dirs))
			return nil
		},
	}
}

func newRunKeepCmd() *cobra.Command {
	var replace bool
	cmd := &cobra.Command{
		Use:   "keep RUN_OUT DEST",
		Short: "Turn a run's output directory into committed evidence (captures trimmed to 2 MB)",
		Long: `keep copies a run's output directory (migaudit run --out RUN_OUT) to DEST as
evidence to commit: every valid repetition and spoiled attempt the run record
lists, summary.json, calibration.json and run-record.jsonl. Each capture larger
than 2 MB is trimmed (the handshake and a window around the migration kept,
docs/wire.md), the trim recorded in the manifest's capture entry (capture.trimmed:
budget, window, original size and sha256), each valid repetition's analysis
re-derived from the kept capture, the manifest's digests brought up to date, and
one "kept" line per changed attempt appended to the run record (never rewritten).
DEST is written through a temporary directory and a rename; an existing DEST is
refused unless --replace. A repetition without its capture is kept without wire
evidence, and said so.`,
		Example: `  migaudit run keep /work/runs/quiche-standard data/evidence/quiche --replace
  migaudit run keep results/picoquic-pv-distinct-20261204T1700Z data/evidence/picoquic/pv-distinct`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			kept, err := liverun.Keep(args[0], args[1], liverun.KeepOptions{Replace: replace})
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			for _, k := range kept {
				q3 := ""
				if k.Q3 != "" && k.Status == "valid" {
					q3 = "; Q3 " + k.Q3
					if k.Q3Was != k.Q3 {
						q3 += " (the run's analysis: " + k.Q3Was + ")"
					}
				}
				fmt.Fprintf(out, "%s (%s): %s%s\n", k.Dir, k.Status, k.Note, q3)
			}
			fmt.Fprintf(out, "kept %d attempts of %s in %s\n", len(kept), args[0], args[1])
			return nil
		},
	}
	cmd.Flags().BoolVar(&replace, "replace", false, "replace an existing DEST")
	return cmd
}

// isTerminal reports whether w is a terminal: progress bars redraw in place
// there; a file, pipe or CI log gets plain lines instead.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
