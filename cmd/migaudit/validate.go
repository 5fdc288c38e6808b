package main

import (
	"fmt"
	"path/filepath"

	"github.com/migaudit/migaudit/validator"
	"github.com/spf13/cobra"
)

func init() { register(newValidateCmd) }

func newValidateCmd() *cobra.Command {
	o := validator.Options{}
	allowUnverifiable := false
	cmd := &cobra.Command{
		Use:   "validate",
		Short: "Re-derive every claim in survey_results.json from git objects and raw traces",
		Long: `validate re-derives every claim in the survey file from primary sources — git
objects at the pinned commit (--mirrors) and the raw traces (data/evidence for this
project's runs; the study's traces out of its repository at the commit
data/study.json pins, or --evidence DIR) — with its own git
reading, symbol counting and trace readers (it shares no code with audit/,
parsers/ or discriminator/). It prints PASS, FAIL or UNVERIFIABLE per claim with
the figure it found, then "N passed, N failed, N unverifiable", and exits 1 on any
FAIL. It judges the file without changing it; --record writes the counts into its
validation block (atomically). A claim whose source is absent is
UNVERIFIABLE, never PASS, and also exits 1 unless --allow-unverifiable is given.
Pins are compared with data/implementations.json (embedded; --pins for another file).`,
		Example: `  migaudit validate --mirrors ~/mirrors
  migaudit validate --mirrors ~/mirrors --record   # after a rebuild of the survey`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.RepoRoot == "" {
				o.RepoRoot = filepath.Dir(filepath.Dir(o.Path))
			}
			sum, err := validator.Run(o, cmd.OutOrStdout())
			if err != nil {
				return err
			}
			if o.Record {
				fmt.Fprintf(cmd.OutOrStdout(), "recorded in %s: %s\n", o.Path, sum)
			}
			if sum.Failed > 0 {
				return &ExitError{Code: 1, Err: fmt.Errorf("validate: %s", sum)}
			}
			if sum.Unverifiable > 0 && !allowUnverifiable {
				return &ExitError{Code: 1, Err: fmt.Errorf("validate: %s: an unverifiable claim is not a verified one (give the missing sources, or --allow-unverifiable to accept)", sum)}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&o.Path, "file", "data/survey_results.json", "survey results to validate")
	addMirrorsFlag(cmd, &o.Mirrors, "directories of upstream mirrors <owner>+<name>/repo")
	cmd.Flags().StringVar(&o.Evidence, "evidence", "", "a directory of the study's files (migaudit study extract) instead of its repository")
	cmd.Flags().StringVar(&o.RepoRoot, "repo", "", "repository root for data/evidence paths (default: two levels above --file)")
	cmd.Flags().BoolVar(&o.Record, "record", false, "write the counts into the file's validation block")
	cmd.Flags().BoolVar(&allowUnverifiable, "allow-unverifiable", false, "exit 0 when claims are UNVERIFIABLE but none FAIL")
	cmd.Flags().StringVar(&o.Pins, "pins", "", "pins file to compare commits with (default: data/implementations.json, embedded)")
	return cmd
}
