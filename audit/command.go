package audit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/tw"

	"github.com/migaudit/migaudit/audit/gitsrc"
	"github.com/migaudit/migaudit/data"
	"github.com/migaudit/migaudit/data/atomicfile"
)

// Options configure `migaudit audit`.
type Options struct {
	Impl   string // implementation name; empty with All
	All    bool   // every implementation that has rules
	Source string // --source: clone or bare mirror (else $MIGAUDIT_MIRRORS, else user cache clone)
	Commit string // --commit: rev to audit instead of the pin
	Format string // "table" (default) or "json"
	// Strict fails the command when the independent reading contradicts a
	// confident answer (DISPUTED).
	Strict bool
	// WriteConstants writes data/constants/<name>.json into ConstantsDir.
	WriteConstants bool
	ConstantsDir   string // default "data/constants"
}

// Report is the audit of one implementation at one commit.
type Report struct {
	Impl     string    `json:"implementation"`
	Upstream string    `json:"upstream"`
	Commit   string    `json:"commit"`
	Pinned   bool      `json:"pinned"` // Commit is the pin in data/implementations.json
	Findings []Finding `json:"findings"`
	// Disputed counts the confident answers the validator's independent
	// reading of the same commit contradicts.
	Disputed int    `json:"disputed"`
	Elapsed  string `json:"elapsed"`
	Error    string `json:"error,omitempty"`
}

// Audit runs the rules for one implementation at rev ("" = the pin).
func Audit(ctx context.Context, im data.Implementation, source, rev string) (*Report, error) {
	start := time.Now()
	repo, err := gitsrc.Locate(im.Upstream, source)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", im.Name, err)
	}
	if err := CheckRepository(repo, im); err != nil {
		return nil, err
	}
	if rev == "" {
		rev = im.Commit
	}
	snap, err := repo.At(rev)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", im.Name, err)
	}
	fs, err := Run(ctx, im, snap)
	readings, rerr := independentReading(repo.Dir, im.Name, snap.Commit())
	err = errors.Join(err, rerr)
	rep := &Report{Impl: im.Name, Upstream: im.Upstream, Commit: snap.Commit(), Pinned: snap.Commit() == im.Commit, Findings: fs,
		Disputed: markDisputes(fs, readings), Elapsed: time.Since(start).Round(time.Millisecond).String()}
	if err != nil {
		rep.Error = err.Error()
	}
	return rep, err
}

// Command is `migaudit audit`.
func Command(ctx context.Context, o Options, w io.Writer) error {
	var impls []data.Implementation
	if o.All {
		if o.Commit != "" || o.Source != "" {
			return fmt.Errorf("--all audits every implementation at its pin: --commit and --source need --impl")
		}
		all, err := data.Implementations()
		if err != nil {
			return err
		}
		for _, im := range all {
			if len(Rules(im.Name)) > 0 {
				impls = append(impls, im)
			}
		}
	} else {
		if o.Impl == "" {
			return fmt.Errorf("name an implementation with --impl (or use --all)")
		}
		im, err := data.Lookup(o.Impl)
		if err != nil {
			return err
		}
		impls = append(impls, im)
	}
	reports := make([]*Report, len(impls))
	errs := make([]error, len(impls))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 2)
	for i, im := range impls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			reports[i], errs[i] = Audit(ctx, im, o.Source, o.Commit)
		}()
	}
	wg.Wait()
	var firstErr error
	var done []*Report
	for i, r := range reports {
		if r != nil {
			done = append(done, r)
		}
		if errs[i] != nil && firstErr == nil {
			firstErr = errs[i]
		}
	}
	if err := Print(w, o.Format, done); err != nil {
		return err
	}
	if o.Strict && firstErr == nil {
		firstErr = strictError(done)
	}
	if o.WriteConstants {
		dir := o.ConstantsDir
		if dir == "" {
			dir = filepath.Join("data", "constants")
		}
		for _, r := range done {
			c, err := ConstantsFrom(r)
			if err != nil {
				return err
			}
			// Another commit's constants (the code a live harness runs, such
			// as quinn 0.9.3 from Debian) go to at/<name>@<commit>.json, read
			// by data.ConstantsAt; the pin's file is left alone.
			name, into := r.Impl, dir
			if !r.Pinned {
				name, into = r.Impl+"@"+r.Commit, filepath.Join(dir, "at")
			}
			p, err := WriteConstants(into, name, c)
			if err != nil {
				return err
			}
			if o.Format != "json" {
				fmt.Fprintf(w, "wrote %s\n", p)
			}
		}
	}
	return firstErr
}

// strictError is --strict's verdict: an error when the independent reading
// contradicts any confident answer.
func strictError(reports []*Report) error {
	var disputed []string
	for _, r := range reports {
		if r.Disputed > 0 {
			disputed = append(disputed, fmt.Sprintf("%s at %s: %d", r.Impl, short(r.Commit), r.Disputed))
		}
	}
	if len(disputed) == 0 {
		return nil
	}
	return fmt.Errorf("--strict: the independent reading contradicts answers (DISPUTED) of %s", strings.Join(disputed, ", "))
}

func lookupCommit(name string) string {
	im, err := data.Lookup(name)
	if err != nil {
		return ""
	}
	return im.Commit
}

// Print renders reports as a table or JSON.
func Print(w io.Writer, format string, reports []*Report) error {
	switch format {
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		if len(reports) == 1 {
			return enc.Encode(reports[0])
		}
		return enc.Encode(reports)
	case "", "table":
		for i, r := range reports {
			if i > 0 {
				fmt.Fprintln(w)
			}
			if err := printTable(w, r); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("unknown --format %q (table or json)", format)
}

func printTable(w io.Writer, r *Report) error {
	pin := "pinned"
	if !r.Pinned {
		pin = "NOT the pin"
	}
	fmt.Fprintf(w, "%s  %s @ %s (%s)  %d findings in %s\n", r.Impl, r.Upstream, r.Commit, pin, len(r.Findings), r.Elapsed)
	var rows [][]string
	for _, f := range r.Findings {
		mech := f.Mechanism
		if f.Constant != nil {
			mech = f.Constant.Arithmetic
			if f.Constant.Label != "" {
				mech += " (" + f.Constant.Label + ")"
			}
		}
		if f.Detail != "" && f.Answer == Unknown {
			mech += "; " + f.Detail
		}
		if f.Disputed != "" {
			mech += "\nDISPUTED: " + f.Disputed
		} else if f.Independent != "" {
			mech += "\n(" + f.Independent + ")"
		}
		var ev []string
		for i, e := range f.Evidence {
			if i == 4 {
				ev = append(ev, fmt.Sprintf("(+%d more)", len(f.Evidence)-4))
				break
			}
			ev = append(ev, fmt.Sprintf("%s:%d %s", e.Path, e.Line, e.Kind))
		}
		answer := string(f.Answer)
		if f.Disputed != "" {
			answer += "\nDISPUTED"
		}
		if f.Constant != nil {
			switch {
			case f.Constant.Alternative:
				answer = "(context)"
			case f.Constant.Provenance != "":
				answer = "CARRIED"
			default:
				answer = "value"
			}
		}
		q := string(f.Question)
		if f.Role != "" && f.Role != "both" {
			q += " " + f.Role
		}
		rows = append(rows, []string{q, answer, strings.TrimPrefix(f.Rule, r.Impl+"/"), mech, countsString(f.Counts), strings.Join(ev, "\n")})
	}
	t := tablewriter.NewTable(w,
		tablewriter.WithHeaderAutoFormat(tw.Off), // before WithHeader, which formats at once
		tablewriter.WithHeader([]string{"Q", "Answer", "Rule", "Mechanism / value", "Counts", "Evidence"}),
		tablewriter.WithRowAutoWrap(tw.WrapNormal),
		tablewriter.WithWidths(tw.CellWidth{PerColumn: columnWidths(rows, 16, 12, 26, 64, 36, 48)}),
	)
	for _, row := range rows {
		if err := t.Append(row); err != nil {
			return err
		}
	}
	return t.Render()
}

// columnWidths widens each column to its longest word: the table wraps at
// spaces and would cut a word longer than the column (a path:line losing
// its last digit).
func columnWidths(rows [][]string, base ...int) tw.Mapper[int, int] {
	m := tw.NewMapper[int, int]()
	for i, b := range base {
		for _, row := range rows {
			for _, word := range strings.Fields(row[i]) {
				b = max(b, utf8.RuneCountInString(word)+2) // the cell pads a space each side
			}
		}
		m.Set(i, b)
	}
	return m
}

func countsString(c map[string]int) string {
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, k+"="+strconv.Itoa(c[k]))
	}
	return strings.Join(parts, " ")
}

// ConstantsFrom turns a report's constant findings into data.Constants with
// source positions and provenance "audit <commit>".
func ConstantsFrom(r *Report) (data.Constants, error) {
	var c data.Constants
	prov := "audit " + r.Commit
	for _, f := range r.Findings {
		if f.Constant == nil || f.Constant.Alternative {
			continue
		}
		fm := data.Formula{Expr: f.Constant.Expr, Params: f.Constant.Params, Label: f.Constant.Label, Provenance: prov}
		if f.Constant.Provenance != "" {
			fm.Provenance = f.Constant.Provenance
		}
		if len(f.Evidence) > 0 {
			fm.Source = &data.Position{Path: f.Evidence[0].Path, Line: f.Evidence[0].Line}
		}
		switch f.Question {
		case ConstInitialWindow:
			c.InitialWindows = append(c.InitialWindows, fm)
		case ConstMinWindow:
			c.MinWindow = &fm
		case ConstLossFactor:
			c.LossFactor = &fm
		case ConstDefaultRTT:
			c.DefaultRTT = &fm
		}
	}
	if len(c.InitialWindows) == 0 {
		return c, fmt.Errorf("%s at %s: the audit found no initial window; refusing to write constants", r.Impl, short(r.Commit))
	}
	return c, nil
}

// WriteConstants writes dir/<name>.json atomically.
func WriteConstants(dir, name string, c data.Constants) (string, error) {
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return "", err
	}
	b = append(b, '\n')
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	p := filepath.Join(dir, name+".json")
	if err := atomicfile.Write(p, b); err != nil {
		return "", err
	}
	return p, nil
}

// DiffOptions configure `migaudit audit diff`.
type DiffOptions struct {
	Impl, Source, From, To, Format string
}

// Change is one finding that differs between two commits.
type Change struct {
	Key  string   `json:"key"`
	From *Finding `json:"from,omitempty"`
	To   *Finding `json:"to,omitempty"`
	What string   `json:"what"`
}

// Diff is `migaudit audit diff`: which findings changed between two commits.
func Diff(ctx context.Context, o DiffOptions, w io.Writer) error {
	if o.Impl == "" || o.From == "" || o.To == "" {
		return fmt.Errorf("audit diff needs --impl, --from and --to")
	}
	im, err := data.Lookup(o.Impl)
	if err != nil {
		return err
	}
	a, errA := Audit(ctx, im, o.Source, o.From)
	if a == nil {
		return errA
	}
	b, errB := Audit(ctx, im, o.Source, o.To)
	if b == nil {
		return errB
	}
	changes := DiffReports(a, b)
	if o.Format == "json" {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		if err := enc.Encode(struct {
			Impl    string   `json:"implementation"`
			From    string   `json:"from"`
			To      string   `json:"to"`
			Changes []Change `json:"changes"`
		}{im.Name, a.Commit, b.Commit, changes}); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(w, "%s: %s (%s) -> %s (%s): %d of %d findings changed\n", im.Name, o.From, short(a.Commit), o.To, short(b.Commit), len(changes), max(len(a.Findings), len(b.Findings)))
		t := tablewriter.NewTable(w, tablewriter.WithHeaderAutoFormat(tw.Off),
			tablewriter.WithHeader([]string{"Finding", "Changed", "At " + short(o.From), "At " + short(o.To)}),
			tablewriter.WithRowAutoWrap(tw.WrapNormal),
			tablewriter.WithWidths(tw.CellWidth{PerColumn: tw.NewMapper[int, int]().Set(0, 40).Set(1, 20).Set(2, 50).Set(3, 50)}))
		for _, c := range changes {
			if err := t.Append([]string{c.Key, c.What, summary(c.From), summary(c.To)}); err != nil {
				return err
			}
		}
		if err := t.Render(); err != nil {
			return err
		}
	}
	if errA != nil {
		return errA
	}
	return errB
}

func findingKey(f Finding) string {
	k := string(f.Question) + " " + f.Rule
	if f.Role != "" {
		k += " (" + f.Role + ")"
	}
	if f.Constant != nil && f.Constant.Label != "" {
		k += " [" + f.Constant.Label + "]"
	}
	return k
}

func summary(f *Finding) string {
	if f == nil {
		return "(absent)"
	}
	s := string(f.Answer)
	if f.Constant != nil {
		s = f.Constant.Arithmetic
	}
	if c := countsString(f.Counts); c != "" {
		s += " " + c
	}
	if f.Answer == Unknown && f.Detail != "" {
		s += "; " + f.Detail
	}
	return s
}

// DiffReports compares findings by question, rule and constant label:
// answer, mechanism, counts, constant expression/value. Positions alone
// moving is not a change.
func DiffReports(a, b *Report) []Change {
	idx := func(r *Report) (map[string]*Finding, []string) {
		m := map[string]*Finding{}
		var order []string
		for i := range r.Findings {
			k := findingKey(r.Findings[i])
			for n := 2; m[k] != nil; n++ {
				k = findingKey(r.Findings[i]) + fmt.Sprintf(" #%d", n)
			}
			m[k] = &r.Findings[i]
			order = append(order, k)
		}
		return m, order
	}
	ma, oa := idx(a)
	mb, ob := idx(b)
	var out []Change
	seen := map[string]bool{}
	for _, k := range append(oa, ob...) {
		if seen[k] {
			continue
		}
		seen[k] = true
		fa, fb := ma[k], mb[k]
		var what []string
		switch {
		case fa == nil:
			what = append(what, "added")
		case fb == nil:
			what = append(what, "removed")
		default:
			if fa.Answer != fb.Answer {
				what = append(what, "answer")
			}
			if fa.Mechanism != fb.Mechanism {
				what = append(what, "mechanism")
			}
			if countsString(fa.Counts) != countsString(fb.Counts) {
				what = append(what, "counts")
			}
			if (fa.Constant == nil) != (fb.Constant == nil) || fa.Constant != nil && (fa.Constant.Expr != fb.Constant.Expr || fa.Constant.Value != fb.Constant.Value) {
				what = append(what, "constant")
			}
		}
		if len(what) > 0 {
			out = append(out, Change{Key: k, From: fa, To: fb, What: strings.Join(what, ", ")})
		}
	}
	return out
}
