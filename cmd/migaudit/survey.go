package main

import (
	"fmt"
	"path/filepath"

	"github.com/migaudit/migaudit/survey/build"
	"github.com/spf13/cobra"
)

func init() { register(newSurveyCmd) }

func newSurveyCmd() *cobra.Command {
	o := build.Options{}
	cmd := &cobra.Command{
		Use:   "survey",
		Short: "Build data/survey_results.json from the source audits and the live analyses",
		Long: `survey audits every pinned implementation at its commit (from --mirrors), reads
the analysis.json of every repetition of this project's runs (--results, default
data/evidence/*), analyses the study's reference traces for implementations
without runs here (read from the study's repository at the commit data/study.json
pins, found like an implementation's mirror; --evidence DIR overrides it), runs the
"would a fix be visible" check on the study's patched and unpatched picoquic
builds, reconciles source and live
answers, computes the cross-cutting findings, checks the result against
data/survey.schema.json and writes it atomically.`,
		Example: `  migaudit survey --mirrors ~/mirrors
  migaudit survey --results results/quic-go-20261202T160000Z --out /tmp/s.json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.RepoRoot == "" {
				o.RepoRoot = filepath.Dir(filepath.Dir(o.Out))
			}
			s, err := build.Run(cmd.Context(), o, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "wrote %s: %d implementations, %d disagreements; %s\n", o.Out, len(s.Implementations), len(s.Disagreements), s.CrossCutting.F1.Statement)
			return nil
		},
	}
	cmd.Flags().StringVar(&o.Out, "out", "data/survey_results.json", "results file (the schema data/survey.schema.json must sit beside it)")
	addMirrorsFlag(cmd, &o.Mirrors, "directories of upstream mirrors <owner>+<name>/repo")
	cmd.Flags().StringVar(&o.Evidence, "evidence", "", "a directory of the study's files (migaudit study extract) instead of its repository")
	cmd.Flags().StringVar(&o.StudySource, "study-source", "", "a clone or bare mirror of the study's repository")
	cmd.Flags().StringSliceVar(&o.Results, "results", nil, "run or evidence directories holding rep<N>/ (default data/evidence/*)")
	cmd.Flags().StringSliceVar(&o.Only, "impl", nil, "survey only these implementations")
	cmd.Flags().BoolVar(&o.AllowPartial, "allow-partial", false, "write the survey even when it has less than the file it replaces (a missing mirror, a failed audit)")
	cmd.Flags().StringVar(&o.RepoRoot, "repo", "", "repository root that evidence paths are relative to (default: two levels above --out)")
	return cmd
}
