package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/migaudit/migaudit/reproduce"
	"github.com/migaudit/migaudit/survey/tables"
	"github.com/spf13/cobra"
)

func init() { register(newReproduceCmd) }

func newReproduceCmd() *cobra.Command {
	o := reproduce.Options{}
	cmd := &cobra.Command{
		Use:   "reproduce",
		Short: "Rebuild the survey from public sources alone, compare it with the committed one, validate it, print the tables",
		Long: `reproduce re-derives every table from public sources alone. It opens every
pinned source — the fourteen implementations at their commits (data/implementations.json)
and the study's repository at its commit (data/study.json, every file checked
against its sha256) — from a mirror under --mirrors, or a clone in the user cache
directory made on first use (network). It rebuilds the survey from the audits and
the committed evidence (data/evidence) into a temporary file, runs the independent
validator on it, compares it field by field with the committed
data/survey_results.json (each difference printed as a JSON path with the committed
and rebuilt values), and prints the tables.

The build is deterministic: the same inputs give a byte-identical file
(generated_at is the newest input's date; every evidence file's sha256 is an
input). Exit status 0 only when the rebuilt survey is identical and no check
fails; 1 otherwise. --update writes the rebuilt survey over the committed one
(after a change to the evidence or the pins; only when no check fails).`,
		Example: `  migaudit reproduce
  migaudit reproduce --mirrors ~/mirrors`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			start := time.Now()
			if o.RepoRoot == "" {
				o.RepoRoot = "."
			}
			o.Progress = cmd.ErrOrStderr()
			w := cmd.OutOrStdout()
			res, err := reproduce.Run(cmd.Context(), o, w)
			if err != nil {
				return err
			}
			fmt.Fprintln(w)
			if err := tables.WriteTables(w, res.Survey, "table", ""); err != nil {
				return err
			}
			for _, im := range res.Survey.Implementations {
				if im.FixCheck != nil {
					fmt.Fprintf(w, "\nWould a fix be visible? %s: %s\n", im.Name, im.FixCheck.Statement)
				}
			}
			fmt.Fprintln(w)
			for _, l := range res.Checks {
				if o.Verbose || !strings.HasPrefix(l, "PASS") {
					fmt.Fprintln(w, l)
				}
			}
			if len(res.Diffs) == 0 {
				fmt.Fprintf(w, "survey identical: data/survey_results.json rebuilt byte for byte (%d implementations, %d evidence files) in %s\n",
					len(res.Survey.Implementations), len(res.Survey.Inputs.EvidenceSHA256), time.Since(start).Round(time.Second))
			} else {
				fmt.Fprintf(w, "survey differs: %d fields of data/survey_results.json differ from the rebuild:\n%s", len(res.Diffs), reproduce.Summarise(res.Diffs, 40))
			}
			fmt.Fprintln(w, res.Validation.String())
			if !res.OK() {
				return &ExitError{Code: 1, Err: fmt.Errorf("reproduce: %d fields differ, %s", len(res.Diffs), res.Validation)}
			}
			return nil
		},
	}
	addMirrorsFlag(cmd, &o.Mirrors, "directories of upstream mirrors <owner>+<name>/repo; without one, sources are cloned into the user cache directory")
	cmd.Flags().StringVar(&o.RepoRoot, "repo", "", "repository root holding data/ (default: the current directory)")
	cmd.Flags().BoolVarP(&o.Verbose, "verbose", "v", false, "print every validator check, not only FAIL and UNVERIFIABLE")
	cmd.Flags().BoolVar(&o.Update, "update", false, "write the rebuilt survey over data/survey_results.json when no check fails")
	return cmd
}
