package main

import (
	"github.com/spf13/cobra"

	"github.com/migaudit/migaudit/audit"
	_ "github.com/migaudit/migaudit/audit/rules" // registers the per-implementation rules
)

func init() { register(newAuditCmd) }

func newAuditCmd() *cobra.Command {
	var o audit.Options
	cmd := &cobra.Command{
		Use:   "audit --impl NAME [--source DIR] [--commit REV] [--format table|json] [--write-constants]",
		Short: "Answer Q1/Q2/Q3 and read the discriminator constants from source at a pinned commit",
		Long: `audit reads an implementation's source straight out of git object storage at
its pinned commit (or --commit REV: a hash, short hash or tag) and runs its rules:
structural queries over parsed source (go/ast; tree-sitter for C, C++, Rust,
Python). Every finding carries upstream permalinks.

The repository comes from --source DIR (a clone or bare mirror), else from
$MIGAUDIT_MIRRORS (<dir>/<owner>+<name>/repo, <dir>/<name>, <dir>/<name>.git),
else a clone in the user cache directory (needs network on first use).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return audit.Command(cmd.Context(), o, cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Impl, "impl", "", "implementation name (see data/implementations.json)")
	f.BoolVar(&o.All, "all", false, "audit every implementation that has rules, at its pin")
	f.StringVar(&o.Source, "source", "", "clone or bare mirror to read (default: $MIGAUDIT_MIRRORS or a cached clone)")
	f.StringVar(&o.Commit, "commit", "", "commit, short hash or tag to audit instead of the pin")
	f.StringVar(&o.Format, "format", "table", "output format: table or json")
	f.BoolVar(&o.Strict, "strict", false, "exit non-zero when the validator's independent reading contradicts an answer (DISPUTED)")
	f.BoolVar(&o.WriteConstants, "write-constants", false, "write data/constants/<name>.json from the constant findings (another --commit: data/constants/at/<name>@<commit>.json, used for live runs of that code)")
	f.StringVar(&o.ConstantsDir, "constants-dir", "data/constants", "where --write-constants writes")
	cmd.AddCommand(newAuditDiffCmd(), newAuditHistoryCmd())
	return cmd
}

func newAuditDiffCmd() *cobra.Command {
	var o audit.DiffOptions
	cmd := &cobra.Command{
		Use:   "diff --impl NAME --from REV --to REV",
		Short: "Show which audit findings changed between two commits",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return audit.Diff(cmd.Context(), o, cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Impl, "impl", "", "implementation name")
	f.StringVar(&o.Source, "source", "", "clone or bare mirror to read")
	f.StringVar(&o.From, "from", "", "older commit or tag")
	f.StringVar(&o.To, "to", "", "newer commit or tag")
	f.StringVar(&o.Format, "format", "table", "output format: table or json")
	return cmd
}

func newAuditHistoryCmd() *cobra.Command {
	var o audit.HistoryOptions
	cmd := &cobra.Command{
		Use:   "history --impl NAME [--since TAG] [--every N]",
		Short: "Answers and constants across release tags, and the commit where each answer changed",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return audit.History(cmd.Context(), o, cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Impl, "impl", "", "implementation name")
	f.StringVar(&o.Source, "source", "", "clone or bare mirror to read")
	f.StringVar(&o.Since, "since", "", "oldest tag (later tags of its shape follow in version order)")
	f.IntVar(&o.Every, "every", 0, "audit every Nth first-parent commit from --since to HEAD instead of tags")
	f.IntVar(&o.Workers, "workers", 0, "parallel audits (default: number of CPUs)")
	f.StringVar(&o.Format, "format", "table", "output format: table or json")
	return cmd
}
