package main

import (
	"github.com/spf13/cobra"

	"github.com/migaudit/migaudit/data/mirrors"
)

// addMirrorsFlag adds --mirrors to cmd. Once the command runs, *dst holds
// the mirror directories to use: the flag's value, else $MIGAUDIT_MIRRORS,
// resolved here once and handed down in the command's options.
func addMirrorsFlag(cmd *cobra.Command, dst *string, usage string) {
	cmd.Flags().StringVar(dst, "mirrors", "", usage+" (default $"+mirrors.Env+")")
	prev := cmd.PreRunE
	cmd.PreRunE = func(c *cobra.Command, args []string) error {
		*dst = mirrors.Resolve(*dst)
		if prev != nil {
			return prev(c, args)
		}
		return nil
	}
}
