package tables

import (
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/migaudit/migaudit/survey"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/renderer"
	"github.com/olekukonko/tablewriter/tw"
)

// Table is one reviewer table.
type Table struct {
	Name   string
	Title  string
	Header []string
	Rows   [][]string
}

// Tables builds every reviewer table from the survey alone.
func Tables(s *survey.Survey) []Table {
	return []Table{ComplianceTable(s), WindowTable(s), RTTTable(s), ConstantsTable(s)}
}

// DisplayAnswer renders an answer as the study's tables do.
func DisplayAnswer(a *survey.Answer) string {
	if a == nil {
		return "—"
	}
	v := a.Answer
	if v == "INERT" {
		v = "present but inert"
	}
	if a.Agreement == survey.Disagree {
		v += " (live: " + a.LiveAnswer + ")"
	}
	return v
}

func shortCommit(c string) string {
	if len(c) > 8 {
		return c[:8]
	}
	return c
}

// ComplianceTable: implementation, language, commit, Q1, Q2, Q3, repetitions.
func ComplianceTable(s *survey.Survey) Table {
	t := Table{Name: "compliance", Title: "Compliance",
		Header: []string{"Implementation", "Language", "Commit", "Q1 (MUST)", "Q2 (MAY)", "Q3 (MUST)", "Live reps"}}
	for i := range s.Implementations {
		im := &s.Implementations[i]
		t.Rows = append(t.Rows, []string{im.Name, im.Language, shortCommit(im.Commit),
			DisplayAnswer(im.Answer("Q1")), DisplayAnswer(im.Answer("Q2")), DisplayAnswer(im.Answer("Q3")), repsCell(im)})
	}
	return t
}

// repsCell is the number of live repetitions and, when they ran other
// code than the commit in the row, which ("5 (live: 0.18.0 28ef289f)"): the
// answers in the row are the audit's at Commit, the live half is of that
// code (the entry's live_audit compares the two).
func repsCell(im *survey.Implementation) string {
	l := im.Live
	if l == nil || len(l.Repetitions) == 0 {
		return "0"
	}
	n := strconv.Itoa(l.Retained)
	if l.Origin == survey.Reference {
		n += " (reference)"
	}
	if lc := im.LiveCode; lc != nil && lc.Commit != "" && lc.Commit != im.Commit {
		n += " (live: " + strings.TrimSpace(lc.Tag+" "+shortCommit(lc.Commit)) + ")"
	}
	return n
}

// ipReps are the repetitions verified as IP migrations.
func ipReps(l *survey.Live) []survey.Repetition {
	if l == nil {
		return nil
	}
	var out []survey.Repetition
	for _, r := range l.Repetitions {
		if survey.CountsAsMigration(r.Migration.Kind) {
			out = append(out, r)
		}
	}
	return out
}

// Bytes formats n with thousands separators and a unit: 40,960 B.
func Bytes(n int64) string { return Thousands(n) + " B" }

// Thousands formats n with comma separators: 14520 → "14,520".
func Thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// ByteRange is the range of vs in bytes, one value when all are equal:
// "40,960–57,344 B", "40,960 B" ("—" for none).
func ByteRange(vs []int64) string {
	if len(vs) == 0 {
		return "—"
	}
	lo, hi := vs[0], vs[0]
	for _, v := range vs {
		lo, hi = min(lo, v), max(hi, v)
	}
	if lo == hi {
		return Bytes(lo)
	}
	return Thousands(lo) + "–" + Thousands(hi) + " B"
}

// Millis formats µs as milliseconds with one decimal (two below 100 ms is
// noise): 40.4 ms.
func Millis(us int64) string { return strconv.FormatFloat(float64(us)/1000, 'f', 1, 64) + " ms" }

func msRange(vs []int64) string {
	if len(vs) == 0 {
		return "—"
	}
	lo, hi := vs[0], vs[0]
	for _, v := range vs {
		lo, hi = min(lo, v), max(hi, v)
	}
	if lo == hi {
		return Millis(lo)
	}
	return strings.TrimSuffix(Millis(lo), " ms") + "–" + Millis(hi)
}

// WindowTable: before, after, own initial window, reset observed.
func WindowTable(s *survey.Survey) Table {
	t := Table{Name: "window", Title: "Congestion window across migration",
		Header: []string{"Implementation", "Window before", "Window after", "Own initial window", "Reset observed", "Reps"}}
	for i := range s.Implementations {
		im := &s.Implementations[i]
		reps := ipReps(im.Live)
		var before, after []int64
		resets := 0
		for _, r := range reps {
			before = append(before, r.WindowBeforeBytes)
			after = append(after, r.WindowAfterBytes)
			if r.ResetObserved {
				resets++
			}
		}
		afterCell := ByteRange(after)
		reset := "—"
		if len(reps) > 0 {
			if resets == 0 {
				reset = "No"
				afterCell += " (minimum)"
			} else {
				reset = fmt.Sprintf("Yes, %d/%d", resets, len(reps))
			}
		}
		var inits []string
		// The run's own evaluation (e.g. ngtcp2 with S = 1452) is what a
		// reset assigns in that run; the source's default otherwise.
		seenLive := map[string]bool{}
		for _, r := range reps {
			for _, c := range r.Constants {
				if c.Name == "initial_window" && !seenLive[c.Arithmetic] {
					seenLive[c.Arithmetic] = true
					inits = append(inits, Bytes(int64(math.Round(c.Value)))+" ("+c.Arithmetic+")")
				}
			}
		}
		fromRuns := len(inits) > 0
		for _, c := range im.Constants {
			if fromRuns {
				break
			}
			if c.Name == "initial_window" {
				v := Bytes(int64(math.Round(c.Value)))
				if c.Label != "" {
					v += " " + shortLabel(c.Label)
				}
				inits = append(inits, v)
			}
		}
		initCell := strings.Join(inits, " / ")
		if initCell == "" {
			initCell = "—"
		}
		t.Rows = append(t.Rows, []string{im.Name, ByteRange(before), afterCell, initCell, reset, strconv.Itoa(len(reps))})
	}
	return t
}

// shortLabel keeps a constant's label to its first words.
func shortLabel(l string) string {
	if i := strings.IndexAny(l, "(:"); i > 0 {
		l = l[:i]
	}
	return "(" + strings.TrimSpace(l) + ")"
}

// RTTTable: first post-migration RTT, true RTT of the new path, what it reflects.
func RTTTable(s *survey.Survey) Table {
	t := Table{Name: "rtt", Title: "RTT after migration",
		Header: []string{"Implementation", "First post-migration RTT", "True RTT of new path", "What it reflects"}}
	for i := range s.Implementations {
		im := &s.Implementations[i]
		reps := ipReps(im.Live)
		var first, truth []int64
		attr := map[string]int{}
		for _, r := range reps {
			if r.RTT.FirstAfterUS > 0 {
				first = append(first, r.RTT.FirstAfterUS)
			}
			if nr := newPathRTT(r); nr > 0 {
				truth = append(truth, nr)
			}
			attr[r.RTT.Attribution]++
		}
		t.Rows = append(t.Rows, []string{im.Name, msRange(first), msRange(truth), attributionCell(attr, len(reps))})
	}
	return t
}

func newPathRTT(r survey.Repetition) int64 {
	if r.NewPathRTTUS > 0 {
		return r.NewPathRTTUS
	}
	return r.RTT.NewPathUS
}

var attributionText = map[string]string{
	"new-path":   "the new path",
	"old-path":   "the old path",
	"default":    "neither: stuck at its default",
	"converging": "the old path, converging",
	"mixed":      "both paths, interleaved",
	"unknown":    "undetermined",
}

func attributionCell(attr map[string]int, n int) string {
	if n == 0 {
		return "—"
	}
	keys := make([]string, 0, len(attr))
	for k := range attr {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		txt := attributionText[k]
		if txt == "" {
			txt = k
		}
		parts = append(parts, fmt.Sprintf("%s (%d/%d)", txt, attr[k], n))
	}
	return strings.Join(parts, "; ")
}

// ConstantsTable: the discriminator constants with their arithmetic.
func ConstantsTable(s *survey.Survey) Table {
	t := Table{Name: "constants", Title: "Discriminator constants",
		Header: []string{"Implementation", "Initial window", "Loss floor", "Loss factor", "Default RTT", "Provenance"}}
	for i := range s.Implementations {
		im := &s.Implementations[i]
		cells := map[string][]string{}
		prov := map[string]bool{}
		for _, c := range im.Constants {
			txt := c.Arithmetic
			if i := strings.LastIndex(txt, " = "); i >= 0 && strings.TrimSpace(txt[:i]) == strings.TrimSpace(txt[i+3:]) {
				txt = txt[i+3:] // a plain number: "0.7 = 0.7" says nothing twice
			}
			if txt == "" {
				txt = c.Expr
			}
			if c.Name == "default_rtt" {
				txt += fmt.Sprintf(" µs (%s)", Millis(int64(math.Round(c.Value))))
			}
			if c.Source != nil {
				txt += fmt.Sprintf(" [%s:%d]", c.Source.Path, c.Source.Line)
			}
			cells[c.Name] = append(cells[c.Name], txt)
			prov[c.Provenance] = true
		}
		get := func(n string) string {
			if v := cells[n]; len(v) > 0 {
				return strings.Join(v, " / ")
			}
			return "—"
		}
		var ps []string
		for p := range prov {
			ps = append(ps, p)
		}
		sort.Strings(ps)
		t.Rows = append(t.Rows, []string{im.Name, get("initial_window"), get("min_window"), get("loss_factor"), get("default_rtt"), strings.Join(ps, "; ")})
	}
	return t
}

// Render writes t as "table" (terminal), "markdown" or "csv".
func Render(w io.Writer, t Table, format string) error {
	switch format {
	case "csv":
		cw := csv.NewWriter(w)
		if err := cw.Write(t.Header); err != nil {
			return err
		}
		if err := cw.WriteAll(t.Rows); err != nil {
			return err
		}
		cw.Flush()
		return cw.Error()
	case "markdown", "table", "":
		opts := []tablewriter.Option{tablewriter.WithHeaderAutoFormat(tw.Off), tablewriter.WithRowAutoWrap(tw.WrapNone), tablewriter.WithHeaderAutoWrap(tw.WrapNone)}
		if format == "markdown" {
			opts = append(opts, tablewriter.WithRenderer(renderer.NewMarkdown()))
		}
		tbl := tablewriter.NewTable(w, opts...)
		tbl.Header(anyRow(t.Header)...)
		for _, r := range t.Rows {
			if err := tbl.Append(anyRow(r)...); err != nil {
				return err
			}
		}
		return tbl.Render()
	}
	return fmt.Errorf("unknown format %q (want table, markdown or csv)", format)
}

func anyRow(r []string) []any {
	out := make([]any, len(r))
	for i, v := range r {
		out[i] = v
	}
	return out
}

// TablesOptions selects what `migaudit tables` prints.
type TablesOptions struct {
	Path   string // survey_results.json
	Format string // table, markdown, csv
	Only   string // one table name, or "" for all
}

// RunTables prints the reviewer tables from the survey file alone.
func RunTables(opts TablesOptions, w io.Writer) error {
	s, err := survey.Read(opts.Path)
	if err != nil {
		return err
	}
	return WriteTables(w, s, opts.Format, opts.Only)
}

// WriteTables renders the selected tables of s.
func WriteTables(w io.Writer, s *survey.Survey, format, only string) error {
	found := false
	for i, t := range Tables(s) {
		if only != "" && t.Name != only {
			continue
		}
		found = true
		if format != "csv" {
			if i > 0 && only == "" {
				fmt.Fprintln(w)
			}
			if format == "markdown" {
				fmt.Fprintf(w, "### %s\n\n", t.Title)
			} else {
				fmt.Fprintf(w, "%s\n", t.Title)
			}
		} else if only == "" {
			fmt.Fprintf(w, "# %s\n", t.Name)
		}
		if err := Render(w, t, format); err != nil {
			return fmt.Errorf("table %s: %w", t.Name, err)
		}
	}
	if !found {
		return fmt.Errorf("unknown table %q (want compliance, window, rtt or constants)", only)
	}
	return nil
}
