package main

import (
	"github.com/migaudit/migaudit/survey/tables"
	"github.com/spf13/cobra"
)

func init() { register(newTablesCmd) }

func newTablesCmd() *cobra.Command {
	o := tables.TablesOptions{}
	cmd := &cobra.Command{
		Use:   "tables",
		Short: "Print the reviewer tables (compliance, window, RTT, constants) from survey_results.json",
		Example: `  migaudit tables --format markdown
  migaudit tables --table compliance --format csv`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return tables.RunTables(o, cmd.OutOrStdout())
		},
	}
	cmd.Flags().StringVar(&o.Path, "file", "data/survey_results.json", "survey results")
	cmd.Flags().StringVar(&o.Format, "format", "table", "table, markdown or csv")
	cmd.Flags().StringVar(&o.Only, "table", "", "one table: compliance, window, rtt or constants (default all)")
	return cmd
}
