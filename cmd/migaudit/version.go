package main

import (
	"fmt"
	"runtime/debug"

	"github.com/spf13/cobra"
)

func init() { register(newVersionCmd) }

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print migaudit's version and the quic-go module it was built with",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			v := "(devel)"
			qg := "unknown"
			if bi, ok := debug.ReadBuildInfo(); ok {
				if bi.Main.Version != "" {
					v = bi.Main.Version
				}
				for _, d := range bi.Deps {
					if d.Path == "github.com/quic-go/quic-go" {
						qg = d.Version
					}
				}
			}
			fmt.Fprintf(cmd.OutOrStdout(), "migaudit %s (quic-go %s)\n", v, qg)
			return nil
		},
	}
}
