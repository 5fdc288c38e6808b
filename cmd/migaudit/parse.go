package main

import (
	"strings"

	"github.com/spf13/cobra"

	"github.com/migaudit/migaudit/parsers"
)

func init() { register(newParseCmd) }

func newParseCmd() *cobra.Command {
	var opt parsers.DumpOptions
	cmd := &cobra.Command{
		Use:   "parse TRACE [TRACE…]",
		Short: "Parse traces into the timeline model and summarise (or dump) what they yield",
		Long: `parse reads each trace (qlog, msquic stdout log or timeline CSV; gzip is
transparent; the format is detected from content unless --format names it) and
prints what it yields: sample counts, event kinds, path ids, addresses, transport
parameters, notes and warnings. --json prints the same summary as JSON; --dump
prints every meta/sample/event/warning as one JSON line, for debugging.

Formats: ` + strings.Join(parsers.Formats(), ", "),
		Example: `  migaudit study extract --out study
  migaudit parse study/traces/ngtcp2_server.sqlog.gz
  migaudit parse --json study/traces/*.gz
  migaudit parse --dump --format timeline-csv run1.csv | grep '"sample"'`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return parsers.Dump(cmd.OutOrStdout(), args, opt)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opt.Format, "format", "", "trace format (default: detect from content): "+strings.Join(parsers.Formats(), ", "))
	f.BoolVar(&opt.JSON, "json", false, "print the summary as JSON")
	f.BoolVar(&opt.All, "dump", false, "print every sample, event and warning as a JSON line")
	return cmd
}
