package main

import (
	"time"

	"github.com/migaudit/migaudit/harnesses/quicgo"
	"github.com/spf13/cobra"
)

func init() { register(newHarnessCmd) }

// newHarnessCmd is the hidden entry point through which `migaudit run`
// re-executes itself (/proc/self/exe) inside the testbed's namespaces as an
// implementation's client or server. Not for direct use.
func newHarnessCmd() *cobra.Command {
	root := &cobra.Command{
		Use:    "__harness",
		Short:  "internal: run a harness process inside a namespace",
		Hidden: true,
	}
	qg := &cobra.Command{Use: "quic-go", Short: "quic-go harness processes"}
	root.AddCommand(qg)

	var so quicgo.ServerOptions
	srv := &cobra.Command{
		Use:   "server",
		Short: "serve one large body on a raw QUIC stream and write qlog",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := interruptible(cmd.Context())
			defer stop()
			return quicgo.RunServer(ctx, so, cmd.OutOrStdout())
		},
	}
	srv.Flags().StringVar(&so.Listen, "listen", "", "ip:port to listen on")
	srv.Flags().StringVar(&so.Qlog, "qlog", "", "qlog file to create")
	srv.Flags().Int64Var(&so.MaxBody, "max-body", 1<<30, "largest body a client may request")
	srv.Flags().StringVar(&so.KeyLog, "keylog", "", "append the TLS secrets to this file (NSS key log format)")
	srv.Flags().DurationVar(&so.Linger, "linger", 10*time.Second, "wait this long for the client to close after sending")
	_ = srv.MarkFlagRequired("listen")
	_ = srv.MarkFlagRequired("qlog")
	qg.AddCommand(srv)

	var co quicgo.ClientOptions
	cli := &cobra.Command{
		Use:   "client",
		Short: "download the body, migrating as the scenario says, and write qlog",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := interruptible(cmd.Context())
			defer stop()
			return quicgo.RunClient(ctx, co, cmd.OutOrStdout())
		},
	}
	f := cli.Flags()
	f.StringVar(&co.Server, "server", "", "server ip:port")
	f.StringVar(&co.LocalA, "local-a", "", "path-A address to start from")
	f.StringVar(&co.LocalB, "local-b", "", "path-B address to migrate to")
	f.StringVar(&co.Scenario, "scenario", "standard", "standard|step-down|port-rebind|nat-rebind|migrate-back|pv-distinct")
	f.Int64Var(&co.Size, "size", 0, "bytes to download")
	f.DurationVar(&co.MigrateAt, "migrate-at", 5*time.Second, "migrate this long after the handshake")
	f.DurationVar(&co.BackAfter, "back-after", 5*time.Second, "migrate-back: return to path A this long after leaving it")
	f.StringVar(&co.Qlog, "qlog", "", "qlog file to create")
	f.DurationVar(&co.Timeout, "timeout", 120*time.Second, "give up on the download after this long")
	for _, n := range []string{"server", "local-a", "local-b", "size", "qlog"} {
		_ = cli.MarkFlagRequired(n)
	}
	qg.AddCommand(cli)
	return root
}
