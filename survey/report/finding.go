package report

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/migaudit/migaudit/parsers/msquiclog"
	"github.com/migaudit/migaudit/parsers/wire"
	"github.com/migaudit/migaudit/survey"
	"github.com/migaudit/migaudit/survey/tables"
)

// writeFindings renders each live finding as a section that can be filed
// upstream as it is: the requirement, the mechanism with permalinks at the
// pin, the instrumented evidence per repetition — recomputed here from the
// committed logs (parsers/msquiclog) and, where the repetition keeps its
// capture, cross-checked with the wire (parsers/wire), not copied from the
// survey — the smallest reproduction and what a fix would change.
func writeFindings(w io.Writer, im *survey.Implementation, o Options) {
	p := func(format string, a ...any) { fmt.Fprintf(w, format, a...) }
	for _, lf := range im.LiveFindings {
		probe := strings.Contains(lf.ID, "probe")
		p("## Finding: %s\n\n", lf.ID)
		if len(lf.Questions) > 0 {
			p("Explains the live answer to %s.\n\n", strings.Join(lf.Questions, ", "))
		}
		p("%s.\n\n", strings.TrimSuffix(lf.Statement, "."))
		p("**Requirement.** %s.\n\n", strings.TrimSuffix(lf.Requirement, "."))
		if len(lf.Evidence) > 0 {
			p("**Mechanism** (source at [`%s`](%s/tree/%s)):\n\n", im.Commit[:12], im.Upstream, im.Commit)
			for i, e := range lf.Evidence {
				p("%d. [`%s:%d`](%s) — `%s`%s\n", i+1, e.Path, e.Line, e.Permalink, strings.TrimSpace(e.Excerpt), noteText(e.Note))
			}
			p("\n")
		}
		p("**Instrumented evidence.** Each repetition ran msquic built with this project's instrumentation patch (log lines only, at the RTT update gate, at path ID assignment and `QuicPathSetActive`, on sent packets and CUBIC loss events); the figures are recomputed from each repetition's server log, and the wire columns from its capture (`wire.pcapng.gz` with `keylog.txt`) where it is kept.\n\n")
		if probe {
			p("| Rep | Path switch (server) | Congestion events in 1 s after the switch | Of them started by a loss of a packet sent to the old address | Lowest window, reached after | Runs of packets sent to the old address after the switch (last after) | Wire: server packets on the old path after the switch |\n")
			p("|---|---|---|---|---|---|---|\n")
		} else {
			p("| Rep | Path switch (server) | ACK frames / RTT updates before the switch | Eligible ACKs after | Gated \"different path\" | RTT updates after | Largest acked packet's recorded PathId | ACK's path ID | First packet on the new path (PathId stamped) | Smoothed RTT at the end | Wire: path the largest acked packets crossed |\n")
			p("|---|---|---|---|---|---|---|---|---|---|---|\n")
		}
		for _, f := range lf.Figures {
			row, err := findingRow(o, f, probe)
			if err != nil {
				p("| %s | log not read: %v (the survey records %d of %d gated, %d updates) |\n", f.Repetition, err, f.DifferentPathAfter, f.EligibleAfter, f.UpdatesAfter)
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

// findingRow reads one repetition's server log (and capture, when kept)
// and renders its row.
func findingRow(o Options, f survey.FindingFigures, probe bool) (string, error) {
	path := filepath.Join(o.RepoRoot, filepath.FromSlash(f.Log))
	if _, err := os.Stat(path); err != nil {
		return "", fmt.Errorf("%s absent", f.Log)
	}
	l, err := msquiclog.ReadFile(path)
	if err != nil {
		return "", err
	}
	s := msquiclog.Summarize(l, true)
	if s.Switch == nil {
		return fmt.Sprintf("| %s | none |", f.Repetition), nil
	}
	sw := fmt.Sprintf("path %d → %d at %s", s.Switch.PrevPathID, s.Switch.PathID, fmtUnix(s.Switch.UnixUS))
	wx := wireCheck(filepath.Dir(path), l, s)
	if probe {
		c := msquiclog.CongestionAfter(l, true, s.Switch.UnixUS, 1_000_000, s.Switch.Remote)
		runs, last := msquiclog.OffPathSends(l, true, s.Switch.UnixUS, s.Switch.Remote)
		low := "—"
		if c.Events > 0 {
			low = fmt.Sprintf("%s after %.0f ms", tables.Bytes(c.Lowest), float64(c.LowestAtUS-s.Switch.UnixUS)/1000)
		}
		lastS := "—"
		if runs > 0 {
			lastS = fmt.Sprintf("%.2f s", float64(last-s.Switch.UnixUS)/1e6)
		}
		return fmt.Sprintf("| %s | %s | %d | %d | %s | %d (%s) | %s |", f.Repetition, sw, c.Events, c.OffPath, low, runs, lastS, wx.oldPath), nil
	}
	first := "—"
	if x := s.FirstSentOnNew; x != nil {
		first = fmt.Sprintf("pn %d (PathId %d)", x.PN, x.StampedPathID)
	}
	return fmt.Sprintf("| %s | %s | %d / %d | %d | %d | %d | %s | %s | %s | %.2f ms | %s |", f.Repetition, sw, s.Before.Gates, s.Before.Updates,
		s.After.Eligible, s.After.DifferentPath, s.After.Updates, msquiclog.IDs(s.After.LargestPathIDs), msquiclog.IDs(s.After.AckPathIDs),
		first, float64(s.After.LastSRTTUS)/1000, wx.acked), nil
}

// wireFacts are the capture's view of the switch.
type wireFacts struct{ acked, oldPath string }

// wireCheck reads the repetition's capture: which path each eligible ACK's
// largest acknowledged packet crossed, and what the server sent on the old
// path after the switch. A capture that is absent, or trimmed before the
// switch, says so.
func wireCheck(dir string, l *msquiclog.Log, s msquiclog.Summary) wireFacts {
	capPath, keyPath := filepath.Join(dir, "wire.pcapng.gz"), filepath.Join(dir, "keylog.txt")
	if _, err := os.Stat(capPath); err != nil {
		return wireFacts{"no capture kept", "no capture kept"}
	}
	c, err := wire.ReadFiles(capPath, keyPath)
	if err != nil {
		msg := "capture not read: " + strings.ReplaceAll(err.Error(), "|", "/")
		return wireFacts{msg, msg}
	}
	sw := s.Switch.UnixUS * 1000
	pathOf := map[int64]string{}
	var oldPath, challenges int
	var first, last, end int64
	for _, p := range c.Packets {
		end = max(end, p.WireNS)
		if p.Dir != wire.S2C || p.PN < 0 {
			continue
		}
		pathOf[p.PN] = p.Path
	}
	newPath := ""
	if s.FirstSentOnNew != nil {
		newPath = pathOf[s.FirstSentOnNew.PN]
	}
	for _, p := range c.Packets {
		sent := p.ArrivalNS // when the server's datagram entered the link
		if sent == 0 {
			sent = p.WireNS
		}
		if p.Dir != wire.S2C || sent < sw || newPath == "" || p.Path == newPath {
			continue
		}
		oldPath++
		if first == 0 {
			first = sent
		}
		last = sent
		for _, f := range p.Frames {
			if f.Name() == "PATH_CHALLENGE" {
				challenges++
			}
		}
	}
	if end < sw {
		return wireFacts{"capture ends before the switch", "capture ends before the switch"}
	}
	seen := map[string]int{}
	for _, g := range l.Gates {
		if g.Server && g.UnixUS >= s.Switch.UnixUS && g.NewLargest && g.Retransmittable {
			if p, ok := pathOf[g.LargestPN]; ok {
				seen[p]++
			} else {
				seen["not in the capture"]++
			}
		}
	}
	var parts []string
	for _, k := range []string{"pathA", "pathB", "not in the capture"} {
		if seen[k] > 0 {
			parts = append(parts, fmt.Sprintf("%s ×%d", k, seen[k]))
		}
	}
	old := fmt.Sprintf("%d sent (%d carrying PATH_CHALLENGE) over %.2f s", oldPath, challenges, float64(last-first)/1e9)
	if newPath == "" {
		old = "the new path's first packet is not in the capture"
	}
	return wireFacts{strings.Join(parts, ", "), old}
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
