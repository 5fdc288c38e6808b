package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/migaudit/migaudit/data"
	"github.com/migaudit/migaudit/data/atomicfile"
	"github.com/migaudit/migaudit/survey/studysrc"
	"github.com/spf13/cobra"
)

func init() { register(newStudyCmd) }

func newStudyCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "study",
		Short: "The study's evidence as a pinned source: list or extract its traces and timelines",
		Long: `The study this tool turns into software publishes its traces and timelines in its
repository. data/study.json pins that repository at one commit and lists each file
read from it with its sha256. study files lists them; study extract writes them
(checked against their sha256) into a directory laid out as traces/…, timelines/…,
which --evidence accepts and migaudit parse/analyze read.`,
	}
	cmd.AddCommand(newStudyFilesCmd(), newStudyExtractCmd())
	return cmd
}

func newStudyFilesCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "files",
		Short: "List the study's pinned files (name, role, path in its repository, sha256)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			pin, err := data.Study()
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "%s at %s\n", pin.Upstream, pin.Commit)
			for _, f := range pin.Files {
				fmt.Fprintf(w, "%-42s %-17s %s  %s\n", f.Name, f.Role, f.SHA256[:12], f.Path)
			}
			return nil
		},
	}
}

func newStudyExtractCmd() *cobra.Command {
	var o studysrc.Options
	out := "study"
	cmd := &cobra.Command{
		Use:   "extract [NAME|PATH...]",
		Short: "Write the study's pinned files (all, or the named ones) into a directory, checked against their sha256",
		Example: `  migaudit study extract --out study
  migaudit study extract --out study traces/quicgo_server.sqlog.gz
  migaudit analyze --impl quic-go study/traces/quicgo_server.sqlog.gz`,
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := studysrc.New(o)
			if err != nil {
				return err
			}
			if len(args) == 0 {
				for _, f := range s.Pin.Files {
					args = append(args, f.Name)
				}
			}
			for _, a := range args {
				b, f, err := s.Read(a)
				if err != nil {
					return err
				}
				dst := filepath.Join(out, filepath.FromSlash(f.Name))
				if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
					return err
				}
				if err := atomicfile.Write(dst, b); err != nil {
					return fmt.Errorf("write %s: %w", dst, err)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%s  %s\n", f.SHA256[:12], dst)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&out, "out", out, "directory to write into (traces/…, timelines/…, phase1/…)")
	addMirrorsFlag(cmd, &o.Mirrors, "directories of mirrors <owner>+<name>/repo, searched before a clone in the user cache directory")
	cmd.Flags().StringVar(&o.Source, "source", "", "a clone or bare mirror of the study's repository")
	return cmd
}
