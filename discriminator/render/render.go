// Package render writes discriminator analyses as a terminal table,
// Markdown, CSV or JSON. JSON is the stable interface (the fields of
// discriminator.Analysis); the others are for people.
package render

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/renderer"
	"github.com/olekukonko/tablewriter/tw"

	"github.com/migaudit/migaudit/discriminator"
	"github.com/migaudit/migaudit/survey/tables"
)

// Formats lists the output formats Write accepts.
func Formats() []string { return []string{"table", "json", "csv", "markdown"} }

// Write renders analyses in format.
func Write(w io.Writer, format string, as []discriminator.Analysis) error {
	switch format {
	case "json":
		return writeJSON(w, as)
	case "csv":
		return writeCSV(w, as)
	case "table", "":
		return writeTables(w, as, false)
	case "markdown", "md":
		return writeTables(w, as, true)
	}
	return fmt.Errorf("unknown output format %q (use one of %s)", format, strings.Join(Formats(), ", "))
}

func writeJSON(w io.Writer, as []discriminator.Analysis) error {
	if as == nil {
		as = []discriminator.Analysis{}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(as)
}

// CSVHeader is the column order of the CSV form: one row per classified
// event, trace-level columns repeated; a trace without events has one row
// with the event columns empty.
var CSVHeader = []string{
	"trace", "implementation", "format", "vantage", "migration_kind", "migration_at_us", "path_validation_rtt_us",
	"scope_from_us", "scope_to_us", "window_before_bytes", "window_after_bytes", "reset_observed",
	"event_kind", "event_at_us", "value_bytes", "previous_bytes", "since_previous_us", "path_id", "ambiguous", "explanation",
	"rtt_attribution", "rtt_first_after_us", "rtt_old_path_us", "rtt_new_path_us", "rtt_default_us", "rtt_converged_after_us",
	"q1", "q3",
}

func writeCSV(w io.Writer, as []discriminator.Analysis) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(CSVHeader); err != nil {
		return err
	}
	i64 := func(v int64) string { return strconv.FormatInt(v, 10) }
	for _, a := range as {
		head := []string{a.Trace, a.Implementation, a.Format, a.Vantage, string(a.Migration.Kind), i64(a.Migration.AtUS), i64(a.Migration.PathValidationRTTUS),
			i64(a.ScopeFromUS), i64(a.ScopeToUS), i64(a.WindowBeforeBytes), i64(a.WindowAfterBytes), strconv.FormatBool(a.ResetObserved)}
		tail := []string{a.RTT.Attribution, i64(a.RTT.FirstAfterUS), i64(a.RTT.OldPathUS), i64(a.RTT.NewPathUS), i64(a.RTT.DefaultUS), i64(a.RTT.ConvergedAfterUS),
			a.Q1.Answer, a.Q3.Answer}
		events := a.Events
		if len(events) == 0 {
			events = []discriminator.Collapse{{}}
		}
		for _, e := range events {
			mid := []string{string(e.Kind), "", "", "", "", e.PathID, "", e.Explanation}
			if e.Kind != "" {
				mid = []string{string(e.Kind), i64(e.AtUS), i64(e.ValueBytes), i64(e.PreviousBytes), i64(e.SincePreviousUS), e.PathID, strconv.FormatBool(e.Ambiguous), e.Explanation}
			}
			row := append(append(append([]string{}, head...), mid...), tail...)
			if err := cw.Write(row); err != nil {
				return err
			}
		}
	}
	cw.Flush()
	return cw.Error()
}

func writeTables(w io.Writer, as []discriminator.Analysis, markdown bool) error {
	for i, a := range as {
		if i > 0 {
			fmt.Fprintln(w)
		}
		if markdown {
			fmt.Fprintf(w, "### %s — %s\n\n", a.Implementation, a.Trace)
		} else {
			fmt.Fprintf(w, "%s — %s\n", a.Implementation, a.Trace)
		}
		if err := table(w, markdown, []string{"Item", "Value"}, summaryRows(a), nil); err != nil {
			return err
		}
		fmt.Fprintln(w)
		if !a.Migration.Found {
			continue
		}
		if len(a.Events) == 0 {
			fmt.Fprintf(w, "No window decrease in the scope %s.\n", scope(a))
			continue
		}
		if markdown {
			fmt.Fprintf(w, "Window decreases in the scope %s:\n\n", scope(a))
		} else {
			fmt.Fprintf(w, "Window decreases in the scope %s:\n", scope(a))
		}
		if err := table(w, markdown, []string{"#", "At (ms)", "Since prev (ms)", "Kind", "Value (B)", "Previous (B)", "Path", "Explanation"}, eventRows(a), tw.NewMapper[int, int]().Set(7, 60)); err != nil {
			return err
		}
	}
	return nil
}

// table renders one table; widths pins column widths (terminal form only)
// so that the explanation column is not squeezed.
func table(w io.Writer, markdown bool, header []string, rows [][]string, widths tw.Mapper[int, int]) error {
	opts := []tablewriter.Option{
		tablewriter.WithHeaderAutoFormat(tw.Off),
		tablewriter.WithRowAutoWrap(tw.WrapNormal),
		tablewriter.WithRowAlignment(tw.AlignLeft),
		tablewriter.WithHeaderAlignment(tw.AlignLeft),
	}
	if markdown {
		// Markdown cells must stay on one line.
		opts = append(opts, tablewriter.WithRenderer(renderer.NewMarkdown()), tablewriter.WithRowAutoWrap(tw.WrapNone))
	} else if widths != nil {
		opts = append(opts, tablewriter.WithColumnWidths(widths))
	} else {
		opts = append(opts, tablewriter.WithMaxWidth(160))
	}
	t := tablewriter.NewTable(w, opts...)
	t.Header(toAny(header)...)
	for _, r := range rows {
		if markdown {
			for i := range r {
				r[i] = strings.ReplaceAll(r[i], "|", `\|`)
			}
		}
		if err := t.Append(r); err != nil {
			return err
		}
	}
	return t.Render()
}

func toAny(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

func summaryRows(a discriminator.Analysis) [][]string {
	m := a.Migration
	rows := [][]string{
		{"Format", formatLine(a)},
		{"Migration", migration(m)},
		{"Evidence", m.Evidence},
	}
	if !m.Found {
		rows = append(rows, []string{"Q1", verdict(a.Q1)}, []string{"Q3", verdict(a.Q3)})
		return append(rows, warnings(a)...)
	}
	for _, c := range a.Constants {
		v := fmt.Sprintf("%s   [%s]", c.Arithmetic, c.Provenance)
		if c.Label != "" {
			v = c.Label + ": " + v
		}
		rows = append(rows, []string{"Constant " + c.Name, v})
	}
	rows = append(rows,
		[]string{"Window before", tables.Bytes(a.WindowBeforeBytes)},
		[]string{"Window after", tables.Bytes(a.WindowAfterBytes)},
		[]string{"Reset observed", yesNo(a.ResetObserved) + " (exact hit on an initial window inside " + scope(a) + ")"},
		[]string{"RTT after migration", rtt(a.RTT)},
		[]string{"RTT detail", a.RTT.Detail},
		[]string{"Q1 (RFC 9000 §9.4 reset)", verdict(a.Q1)},
		[]string{"Q3 (old path excluded)", verdict(a.Q3)},
	)
	if a.Q2 != nil {
		rows = append(rows, []string{"Q2 (RFC 9002 §6.2.2 seed)", a.Q2.Answer + " — " + a.Q2.Detail})
	}
	return append(rows, warnings(a)...)
}

func eventRows(a discriminator.Analysis) [][]string {
	var rows [][]string
	for i, e := range a.Events {
		since := ""
		if e.SincePreviousUS > 0 {
			since = ms(e.SincePreviousUS)
		}
		kind := string(e.Kind)
		if e.Ambiguous {
			kind += " (ambiguous)"
		}
		rows = append(rows, []string{strconv.Itoa(i + 1), ms(e.AtUS), since, kind, tables.Bytes(e.ValueBytes), tables.Bytes(e.PreviousBytes), e.PathID, e.Explanation})
	}
	return rows
}

func warnings(a discriminator.Analysis) [][]string {
	var rows [][]string
	for _, w := range a.Warnings {
		rows = append(rows, []string{"Note", w})
	}
	return rows
}

func migration(m discriminator.Migration) string {
	if !m.Found {
		return "none found"
	}
	s := fmt.Sprintf("%s at %s ms", m.Kind, ms(m.AtUS))
	if m.OldAddr != "" {
		s += fmt.Sprintf(" (%s → %s)", m.OldAddr, m.NewAddr)
	}
	if m.PathValidationRTTUS > 0 {
		s += fmt.Sprintf("; path validation round trip %s ms", ms(m.PathValidationRTTUS))
	}
	return s
}

func rtt(r discriminator.RTTAttribution) string {
	if r.FirstAfterUS == 0 {
		return r.Attribution
	}
	s := fmt.Sprintf("%s: first %s ms", r.Attribution, ms(r.FirstAfterUS))
	if r.ConvergedAfterUS > 0 {
		s += fmt.Sprintf(", on the new path %s ms after migration", ms(r.ConvergedAfterUS))
	}
	if r.PinnedUS > 0 && r.Attribution == "default" {
		s += fmt.Sprintf(", pinned for %s ms", ms(r.PinnedUS))
	}
	return s
}

func scope(a discriminator.Analysis) string {
	return fmt.Sprintf("%s–%s ms", ms(a.ScopeFromUS), ms(a.ScopeToUS))
}

func verdict(v discriminator.Verdict) string { return v.Answer + " — " + v.Reason }

func formatLine(a discriminator.Analysis) string {
	s := a.Format
	if a.Vantage != "" {
		s += " (" + a.Vantage + ")"
	}
	if a.PathIDs {
		return s + ", metrics per path"
	}
	return s + ", metrics carry no path id"
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// ms prints µs as ms with three decimals.
func ms(us int64) string { return strconv.FormatFloat(float64(us)/1000, 'f', 3, 64) }
