package report

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/migaudit/migaudit/parsers/msquiclog"
	"github.com/migaudit/migaudit/survey"
	"github.com/migaudit/migaudit/survey/tables"
)

// writeFindings renders each live finding as a section that can be filed
// upstream as it is: the requirement, the mechanism with permalinks at the
// pin, the instrumented evidence per repetition — recomputed here from the
// committed logs (parsers/msquiclog), not copied from the survey — the
// smallest reproduction and what a fix would change.
func writeFindings(w io.Writer, im *survey.Implementation, o Options) {
	p := func(format string, a ...any) { fmt.Fprintf(w, format, a...) }
	for _, lf := range im.LiveFindings {
		p("## Finding: %s\n\n", lf.ID)
		if len(lf.Questions) > 0 {
			p("Explains the live answer to %s.\n\n", strings.Join(lf.Questions, ", "))
		}
		p("%s.\n\n", capital(strings.TrimSuffix(lf.Statement, ".")))
		p("**Requirement.** %s.\n\n", strings.TrimSuffix(lf.Requirement, "."))
		if len(lf.Evidence) > 0 {
			p("**Mechanism** (source at [`%s`](%s/tree/%s)):\n\n", im.Commit[:12], im.Upstream, im.Commit)
			for i, e := range lf.Evidence {
				p("%d. [`%s:%d`](%s) — `%s`%s\n", i+1, e.Path, e.Line, e.Permalink, strings.TrimSpace(e.Excerpt), noteText(e.Note))
			}
			p("\n")
		}
		p("**Instrumented evidence.** Each repetition ran msquic built with this project's instrumentation patch (log lines only, at the RTT update gate, at path ID assignment and `QuicPathSetActive`, on sent packets and CUBIC loss events); the figures are recomputed from each repetition's server log.\n\n")
		p("| Rep | Path switch (server) | ACK frames / RTT updates before the switch | Eligible ACKs after | Gated \"different path\" | RTT updates after | Largest acked packet's PathId | ACK's path ID | First packet on the new path (PathId stamped) | Smoothed RTT at the end | Congestion events in 1 s after the switch |\n")
		p("|---|---|---|---|---|---|---|---|---|---|---|\n")
		for _, f := range lf.Figures {
			row, err := findingRow(o, f)
			if err != nil {
				p("| %s | log not read: %v (the survey records %d of %d gated, %d updates) | | | | | | | | | |\n", f.Repetition, err, f.DifferentPathAfter, f.EligibleAfter, f.UpdatesAfter)
				continue
			}
			p("%s\n", row)
		}
		p("\nLogs: %s.\n\n", logList(lf))
		p("**Reproduce** (the smallest run: one repetition of the instrumented build, as root):\n\n```sh\n%s\n```\n\n", lf.Reproduction)
		if lf.Fix != "" {
			p("**What a fix would change.** %s.\n\n", capital(strings.TrimSuffix(lf.Fix, ".")))
		}
	}
}

// findingRow reads one repetition's server log and renders its row.
func findingRow(o Options, f survey.FindingFigures) (string, error) {
	path := filepath.Join(o.RepoRoot, filepath.FromSlash(f.Log))
	if _, err := os.Stat(path); err != nil {
		return "", fmt.Errorf("%s absent", f.Log)
	}
	l, err := msquiclog.ReadFile(path)
	if err != nil {
		return "", err
	}
	s := msquiclog.Summarize(l, true)
	sw, ce := "none", "—"
	if s.Switch != nil {
		sw = fmt.Sprintf("path %d → %d at %s", s.Switch.PrevPathID, s.Switch.PathID, fmtUnix(s.Switch.UnixUS))
		c := msquiclog.CongestionAfter(l, true, s.Switch.UnixUS, 1_000_000, s.Switch.Remote)
		ce = fmt.Sprintf("%d, %d of them old-path losses (lowest %s)", c.Events, c.OffPath, tables.Bytes(c.Lowest))
	}
	first := "—"
	if x := s.FirstSentOnNew; x != nil {
		first = fmt.Sprintf("pn %d (PathId %d)", x.PN, x.StampedPathID)
	}
	return fmt.Sprintf("| %s | %s | %d / %d | %d | %d | %d | %s | %s | %s | %.2f ms | %s |", f.Repetition, sw, s.Before.Gates, s.Before.Updates,
		s.After.Eligible, s.After.DifferentPath, s.After.Updates, msquiclog.IDs(s.After.LargestPathIDs), msquiclog.IDs(s.After.AckPathIDs),
		first, float64(s.After.LastSRTTUS)/1000, ce), nil
}

func fmtUnix(us int64) string {
	return fmt.Sprintf("%d.%06d", us/1_000_000, us%1_000_000)
}

func logList(lf survey.LiveFinding) string {
	var out []string
	for _, f := range lf.Figures {
		out = append(out, "`"+f.Log+"`")
	}
	return strings.Join(out, ", ")
}
