package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/migaudit/migaudit/harnesses/probe"
)

func init() { register(newProbeCmd) }

type probeOptions struct {
	impl, target, sni, path, via, local string
	targetsFile, out, format, refuse    string
	reps, concurrency                   int
	insecure                            bool
	timeout                             time.Duration
}

func newProbeCmd() *cobra.Command {
	var o probeOptions
	cmd := &cobra.Command{
		Use:   "probe",
		Short: "Migrate a live connection (port, then IP) and see whether requests still succeed",
		Long: `probe answers QUICstep's question for a server: does a live QUIC connection
survive a port migration, and an IP migration? Using quic-go as the client it
(1) handshakes and GETs over HTTP/3, (2) moves to a new port on the same local
IP, validates the path, switches and GETs again on the same connection, (3)
moves to a second local address (--via) and GETs a third time. The class is
full, port-only, IP-only, none or "no QUIC", with the evidence line.

With --impl quic-go|ngtcp2 the server is started inside the two-path testbed
(root needed) and probed from the client namespace: path A is the original
path, path B's address is the IP migration. --refuse ip|all makes the quic-go
server drop migrated datagrams (a load balancer that does not follow the
connection), which must come out as port-only / none.`,
		Example: `  migaudit probe --impl quic-go
  migaudit probe --impl quic-go --refuse all
  migaudit probe --impl ngtcp2 --format json
  migaudit probe --target 192.0.2.10:443 --sni example.org --via 192.0.2.99
  migaudit probe --targets list.txt --out scan.jsonl --concurrency 8`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := interruptible(cmd.Context())
			defer stop()
			return runProbe(ctx, o, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.impl, "impl", "", "start this implementation's server in the testbed and probe it (quic-go, ngtcp2)")
	f.StringVar(&o.target, "target", "", "probe this server, HOST:PORT")
	f.StringVar(&o.targetsFile, "targets", "", "probe every HOST:PORT [SNI] line of this file")
	f.StringVar(&o.out, "out", "", "append one JSON line per target here (with --targets: resume from it)")
	f.StringVar(&o.sni, "sni", "", "TLS server name (default: the target's host)")
	f.StringVar(&o.path, "path", "/", "request path")
	f.StringVar(&o.via, "via", "", "second local address for the IP migration (with --target/--targets)")
	f.StringVar(&o.local, "local", "", "local address of the original path (default: chosen by routing)")
	f.StringVar(&o.refuse, "refuse", "none", "testbed quic-go server refuses migration: none, ip, all")
	f.StringVar(&o.format, "format", "table", "output: table or json")
	f.IntVar(&o.reps, "reps", 1, "probe the testbed server this many times")
	f.IntVar(&o.concurrency, "concurrency", 4, "parallel probes with --targets")
	f.BoolVar(&o.insecure, "insecure", false, "skip certificate verification (--target/--targets)")
	f.DurationVar(&o.timeout, "timeout", 5*time.Second, "bound on each handshake, path validation and GET")
	return cmd
}

func runProbe(ctx context.Context, o probeOptions, stdout, stderr io.Writer) error {
	modes := 0
	for _, s := range []string{o.impl, o.target, o.targetsFile} {
		if s != "" {
			modes++
		}
	}
	if modes != 1 {
		return errors.New("probe: give exactly one of --impl, --target or --targets")
	}
	if o.format != "table" && o.format != "json" {
		return fmt.Errorf("--format %q: want table or json", o.format)
	}
	refuse, err := probe.ParseRefuse(o.refuse)
	if err != nil {
		return err
	}
	var results []probe.Result
	switch {
	case o.impl != "":
		if o.reps < 1 {
			return fmt.Errorf("--reps %d: want at least 1", o.reps)
		}
		results, err = probe.TestbedRun(ctx, probe.TestbedOptions{Impl: o.impl, Refuse: refuse, Path: o.path, StepTimeout: o.timeout}, o.reps)
	case o.target != "":
		var r probe.Result
		r, err = probe.Run(ctx, probe.Options{Target: o.target, SNI: o.sni, Path: o.path, Local: o.local, Via: o.via, Insecure: o.insecure, StepTimeout: o.timeout})
		results = append(results, r)
	default:
		if o.out == "" {
			return errors.New("--targets needs --out FILE (one JSON line per target; a rerun resumes from it)")
		}
		var ts []probe.Options
		ts, err = probe.ReadTargets(o.targetsFile)
		if err != nil {
			return err
		}
		for i := range ts {
			ts[i].Path, ts[i].Via, ts[i].Local, ts[i].Insecure, ts[i].StepTimeout = o.path, o.via, o.local, o.insecure, o.timeout
		}
		results, err = probe.Scan(ctx, probe.ScanOptions{Targets: ts, Concurrency: o.concurrency, OutPath: o.out, Progress: stderr})
	}
	if err != nil && len(results) == 0 {
		return err
	}
	if o.out != "" && o.targetsFile == "" {
		f, ferr := os.OpenFile(o.out, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if ferr != nil {
			return ferr
		}
		enc := json.NewEncoder(f)
		for _, r := range results {
			enc.Encode(r)
		}
		if ferr := f.Close(); ferr != nil {
			return ferr
		}
	}
	if o.format == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if e := enc.Encode(results); e != nil {
			return e
		}
	} else if e := probe.WriteTable(stdout, results); e != nil {
		return e
	}
	return err
}
