package main

import (
	"path/filepath"

	"github.com/migaudit/migaudit/survey/report"
	"github.com/spf13/cobra"
)

func init() { register(newReportCmd) }

func newReportCmd() *cobra.Command {
	o := report.Options{}
	cmd := &cobra.Command{
		Use:   "report",
		Short: "Write Markdown bug-report evidence for one implementation (with SVG timeline plots)",
		Long: `report writes, from survey_results.json, the evidence an upstream maintainer can
act on: each requirement quoted with its RFC section, what the code does with
permalinks to the exact lines at the pinned commit, what the live runs showed
(figures per repetition and an SVG timeline of window and RTT around the
migration with each classified event marked), the reproduction commands and the
caveats. With --out the plots are written beside the Markdown file.`,
		Example: `  migaudit report --impl picoquic --out reports/picoquic.md`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.RepoRoot == "" {
				o.RepoRoot = filepath.Dir(filepath.Dir(o.Path))
			}
			return report.Run(o, cmd.OutOrStdout())
		},
	}
	cmd.Flags().StringVar(&o.Path, "file", "data/survey_results.json", "survey results")
	cmd.Flags().StringVar(&o.Impl, "impl", "", "implementation to report on")
	cmd.Flags().StringVar(&o.Out, "out", "", "Markdown file to write (plots beside it); default stdout without plots")
	cmd.Flags().StringVar(&o.Evidence, "evidence", "", "a directory of the study's files (migaudit study extract) instead of its repository")
	addMirrorsFlag(cmd, &o.Mirrors, "directories of mirrors <owner>+<name>/repo holding the study's repository, searched before the cache clone")
	cmd.Flags().StringVar(&o.StudySource, "study-source", "", "a clone or bare mirror of the study's repository")
	cmd.Flags().StringVar(&o.RepoRoot, "repo", "", "repository root for data/evidence paths (default: two levels above --file)")
	cmd.MarkFlagRequired("impl")
	return cmd
}
