package audit

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/tw"

	"github.com/migaudit/migaudit/audit/gitsrc"
	"github.com/migaudit/migaudit/data"
)

// HistoryOptions configure `migaudit audit history`.
type HistoryOptions struct {
	Impl   string
	Source string // as for audit: --source, else $MIGAUDIT_MIRRORS, else a cached clone
	// Since is the oldest release tag to include; later tags of the same
	// shape (v0.40.0 → every vN.N.N after it) follow in version order.
	Since string
	// Every audits every Nth first-parent commit from Since (default: the
	// pin's first-parent chain start is not walked; Since is required) to
	// HEAD instead of tags.
	Every   int
	Format  string // table (default) or json
	Workers int    // parallel audits (default: the number of CPUs)
}

// Rev is one commit audited by History.
type Rev struct {
	Name   string `json:"name"` // tag, or the short hash
	Commit string `json:"commit"`
}

// HistoryPoint is the audit at one revision, summarised.
type HistoryPoint struct {
	Rev
	Answers   map[Question]Answer `json:"answers"`
	Constants map[string]string   `json:"constants,omitempty"` // question [label] -> value
	Disputed  int                 `json:"disputed,omitempty"`
	findings  []Finding
}

// AnswerChange is a question whose answer differs between two audited
// revisions, narrowed to the first commit with the new answer when the older
// revision lies on the newer one's first-parent chain.
type AnswerChange struct {
	What     string `json:"what"` // "Q1", or "initial_window [label]"
	From     string `json:"from"`
	To       string `json:"to"`
	FromRev  string `json:"from_rev"`
	ToRev    string `json:"to_rev"`
	Commit   string `json:"commit"`            // first commit with the new value (or ToRev's commit)
	Bisected bool   `json:"bisected"`          // Commit was found by bisection
	Subject  string `json:"subject,omitempty"` // that commit's first message line
	// Evidence lines cited only after / only before the change.
	Added   []string `json:"evidence_added,omitempty"`
	Removed []string `json:"evidence_removed,omitempty"`
}

// HistoryReport is `audit history`'s result.
type HistoryReport struct {
	Impl    string         `json:"implementation"`
	Points  []HistoryPoint `json:"points"`
	Changes []AnswerChange `json:"changes"`
	Elapsed string         `json:"elapsed"`
}

// History is `migaudit audit history`.
func History(ctx context.Context, o HistoryOptions, w io.Writer) error {
	start := time.Now()
	if o.Impl == "" {
		return fmt.Errorf("audit history needs --impl")
	}
	im, err := data.Lookup(o.Impl)
	if err != nil {
		return err
	}
	repo, err := gitsrc.Locate(im.Upstream, o.Source)
	if err != nil {
		return fmt.Errorf("%s: %w", im.Name, err)
	}
	if err := CheckRepository(repo, im); err != nil {
		return err
	}
	revs, err := historyRevs(repo, o)
	if err != nil {
		return fmt.Errorf("%s: %w", im.Name, err)
	}
	open := func() (*gitsrc.Repo, error) { return gitsrc.Open(repo.Dir) }
	rep, err := HistoryOf(ctx, im, repo, revs, open, o.Workers)
	if err != nil {
		return err
	}
	rep.Elapsed = time.Since(start).Round(time.Millisecond).String()
	return printHistory(w, o.Format, rep)
}

// historyRevs picks the revisions: tags of Since's shape from Since on, or
// every Nth first-parent commit from Since to HEAD.
func historyRevs(repo *gitsrc.Repo, o HistoryOptions) ([]Rev, error) {
	if o.Every > 0 {
		if o.Since == "" {
			return nil, fmt.Errorf("--every needs --since (the oldest commit to walk from)")
		}
		from, err := repo.Resolve(o.Since)
		if err != nil {
			return nil, err
		}
		head, err := repo.Resolve("HEAD")
		if err != nil {
			return nil, err
		}
		chain, ok, err := repo.FirstParents(from.String(), head.String(), 200000)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, fmt.Errorf("%s is not on HEAD's first-parent history", o.Since)
		}
		revs := []Rev{{Name: o.Since, Commit: from.String()}}
		for i := o.Every - 1; i < len(chain); i += o.Every {
			revs = append(revs, Rev{Name: short(chain[i]), Commit: chain[i]})
		}
		if last := chain[len(chain)-1]; revs[len(revs)-1].Commit != last && len(chain) > 0 {
			revs = append(revs, Rev{Name: short(last), Commit: last})
		}
		return revs, nil
	}
	tags, err := repo.Tags()
	if err != nil {
		return nil, err
	}
	shape := ""
	var since []int
	if o.Since != "" {
		found := false
		for _, t := range tags {
			if t.Name == o.Since {
				found = true
			}
		}
		if !found {
			return nil, fmt.Errorf("--since %s: no such tag", o.Since)
		}
		shape, since = tagShape(o.Since)
	} else {
		// The commonest shape among the tags (v%d.%d.%d for most).
		n := map[string]int{}
		for _, t := range tags {
			s, _ := tagShape(t.Name)
			n[s]++
		}
		for s, c := range n {
			if c > n[shape] || c == n[shape] && s < shape {
				shape = s
			}
		}
	}
	var revs []Rev
	var nums [][]int
	for _, t := range tags {
		s, v := tagShape(t.Name)
		if s != shape || since != nil && compareVersions(v, since) < 0 {
			continue
		}
		revs = append(revs, Rev{Name: t.Name, Commit: t.Commit})
		nums = append(nums, v)
	}
	idx := make([]int, len(revs))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return compareVersions(nums[idx[a]], nums[idx[b]]) < 0 })
	out := make([]Rev, len(revs))
	for i, j := range idx {
		out[i] = revs[j]
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no tags of the shape %q", shape)
	}
	return out, nil
}

var digits = regexp.MustCompile(`[0-9]+`)

// tagShape is a tag with its numbers replaced by %d, and the numbers.
func tagShape(tag string) (string, []int) {
	var v []int
	for _, d := range digits.FindAllString(tag, -1) {
		n, _ := strconv.Atoi(d)
		v = append(v, n)
	}
	return digits.ReplaceAllString(tag, "%d"), v
}

func compareVersions(a, b []int) int {
	for i := 0; i < len(a) && i < len(b); i++ {
		if a[i] != b[i] {
			return a[i] - b[i]
		}
	}
	return len(a) - len(b)
}

// HistoryOf audits im at every revision (in parallel, each worker with its
// own repository handle from open, since a go-git repository is not safe
// for concurrent reads) and finds where answers and constants changed.
func HistoryOf(ctx context.Context, im data.Implementation, repo *gitsrc.Repo, revs []Rev, open func() (*gitsrc.Repo, error), workers int) (*HistoryReport, error) {
	if workers <= 0 {
		workers = runtime.NumCPU()
	}
	points := make([]HistoryPoint, len(revs))
	errs := make([]error, len(revs))
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(workers, len(revs)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := open()
			for i := range next {
				if err != nil {
					errs[i] = err
					continue
				}
				points[i], errs[i] = auditPoint(ctx, im, r, revs[i])
			}
		}()
	}
	for i := range revs {
		next <- i
	}
	close(next)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			return nil, fmt.Errorf("%s at %s: %w", im.Name, revs[i].Name, err)
		}
	}
	rep := &HistoryReport{Impl: im.Name, Points: points}
	for i := 1; i < len(points); i++ {
		ch, err := changes(ctx, im, repo, points[i-1], points[i])
		if err != nil {
			return nil, err
		}
		rep.Changes = append(rep.Changes, ch...)
	}
	return rep, nil
}

func auditPoint(ctx context.Context, im data.Implementation, repo *gitsrc.Repo, rev Rev) (HistoryPoint, error) {
	snap, err := repo.At(rev.Commit)
	if err != nil {
		return HistoryPoint{}, err
	}
	fs, err := Run(ctx, im, snap)
	if err != nil && len(fs) == 0 {
		return HistoryPoint{}, err
	}
	p := HistoryPoint{Rev: rev, Answers: map[Question]Answer{}, Constants: map[string]string{}, findings: fs}
	for _, q := range []Question{Q1, Q2, Q3} {
		if i := answerFinding(fs, q); i >= 0 {
			p.Answers[q] = fs[i].Answer
		}
	}
	for _, f := range fs {
		if f.Constant != nil && !f.Constant.Alternative {
			p.Constants[constKey(f)] = f.Constant.Arithmetic
		}
	}
	return p, nil
}

func constKey(f Finding) string {
	k := string(f.Question)
	if f.Constant != nil && f.Constant.Label != "" {
		k += " [" + f.Constant.Label + "]"
	}
	return k
}

// changes lists what differs between two consecutive points; an answer
// change is bisected along the first-parent chain when a lies on b's.
func changes(ctx context.Context, im data.Implementation, repo *gitsrc.Repo, a, b HistoryPoint) ([]AnswerChange, error) {
	var out []AnswerChange
	for _, q := range []Question{Q1, Q2, Q3} {
		if a.Answers[q] == b.Answers[q] {
			continue
		}
		c := AnswerChange{What: string(q), From: string(a.Answers[q]), To: string(b.Answers[q]), FromRev: a.Name, ToRev: b.Name, Commit: b.Commit}
		before, after := a.findings, b.findings
		// The older revision is often on a release branch, not on the newer
		// one's first-parent chain: walk back from the newer one instead,
		// doubling the step until the old answer shows, then bisect.
		at, fb, fa, found, err := bisect(ctx, im, repo, q, a.Answers[q], b.Commit)
		if err != nil {
			return nil, err
		}
		if found {
			c.Commit, c.Bisected = at, true
			if fb != nil {
				before = fb
			}
			after = fa
		}
		c.Subject = repo.Subject(c.Commit)
		c.Added, c.Removed = evidenceDiff(before, after, q)
		out = append(out, c)
	}
	keys := map[string]bool{}
	for k := range a.Constants {
		keys[k] = true
	}
	for k := range b.Constants {
		keys[k] = true
	}
	for _, k := range sortedKeys(keys) {
		if a.Constants[k] != b.Constants[k] {
			out = append(out, AnswerChange{What: k, From: orAbsent(a.Constants[k]), To: orAbsent(b.Constants[k]), FromRev: a.Name, ToRev: b.Name, Commit: b.Commit, Subject: repo.Subject(b.Commit)})
		}
	}
	return out, nil
}

func orAbsent(s string) string {
	if s == "" {
		return "(absent)"
	}
	return s
}

func sortedKeys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// maxBisect bounds the first-parent walk back from a revision.
const maxBisect = 8192

// bisect finds, on the first-parent chain ending at newer, the first commit
// whose answer to q is not from, running only q's rules: it steps back 1,
// 2, 4, ... commits until one answers from, then halves the interval. It
// returns that commit and the findings just before and at it; found is
// false when no commit within maxBisect answers from.
func bisect(ctx context.Context, im data.Implementation, repo *gitsrc.Repo, q Question, from Answer, newer string) (string, []Finding, []Finding, bool, error) {
	var rules []*Rule
	for _, r := range Rules(im.Name) {
		if r.Question == q {
			rules = append(rules, r)
		}
	}
	chain, err := repo.FirstParentChain(newer, maxBisect) // newest first
	if err != nil {
		return "", nil, nil, false, err
	}
	memo := map[int][]Finding{}
	at := func(i int) ([]Finding, error) {
		if fs, ok := memo[i]; ok {
			return fs, nil
		}
		snap, err := repo.At(chain[i])
		if err != nil {
			return nil, err
		}
		fs, err := runRules(ctx, im, snap, rules)
		if err != nil && len(fs) == 0 {
			return nil, err
		}
		memo[i] = fs
		return fs, nil
	}
	answer := func(i int) (Answer, error) {
		fs, err := at(i)
		if err != nil {
			return "", err
		}
		if j := answerFinding(fs, q); j >= 0 {
			return fs[j].Answer, nil
		}
		return "", nil
	}
	// new: an index whose answer is not from; old: one whose answer is.
	newIdx, oldIdx := 0, -1
	for step := 1; ; step *= 2 {
		i := newIdx + step
		if i >= len(chain) {
			i = len(chain) - 1
		}
		if i <= newIdx {
			return "", nil, nil, false, nil
		}
		a, err := answer(i)
		if err != nil {
			return "", nil, nil, false, err
		}
		if a == from {
			oldIdx = i
			break
		}
		newIdx = i
	}
	for oldIdx-newIdx > 1 {
		mid := (oldIdx + newIdx) / 2
		a, err := answer(mid)
		if err != nil {
			return "", nil, nil, false, err
		}
		if a == from {
			oldIdx = mid
		} else {
			newIdx = mid
		}
	}
	after, err := at(newIdx)
	if err != nil {
		return "", nil, nil, false, err
	}
	before, err := at(oldIdx)
	if err != nil {
		return "", nil, nil, false, err
	}
	return chain[newIdx], before, after, true, nil
}

// evidenceDiff: the evidence of q's answer present only after / only
// before, compared by path and excerpt (line numbers move with any edit).
func evidenceDiff(before, after []Finding, q Question) (added, removed []string) {
	ev := func(fs []Finding) map[string]string {
		m := map[string]string{}
		if i := answerFinding(fs, q); i >= 0 {
			for _, e := range fs[i].Evidence {
				m[e.Path+"\x00"+e.Excerpt] = fmt.Sprintf("%s:%d %s", e.Path, e.Line, e.Excerpt)
			}
		}
		return m
	}
	b, a := ev(before), ev(after)
	for k, v := range a {
		if _, ok := b[k]; !ok {
			added = append(added, v)
		}
	}
	for k, v := range b {
		if _, ok := a[k]; !ok {
			removed = append(removed, v)
		}
	}
	sort.Strings(added)
	sort.Strings(removed)
	return added, removed
}

func printHistory(w io.Writer, format string, rep *HistoryReport) error {
	switch format {
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	case "", "table":
	default:
		return fmt.Errorf("unknown --format %q (table or json)", format)
	}
	fmt.Fprintf(w, "%s: %d revisions, %d changes, in %s\n", rep.Impl, len(rep.Points), len(rep.Changes), rep.Elapsed)
	keys := map[string]bool{}
	for _, p := range rep.Points {
		for k := range p.Constants {
			keys[k] = true
		}
	}
	consts := sortedKeys(keys)
	header := []string{"Revision", "Commit", "Q1", "Q2", "Q3"}
	for _, k := range consts {
		header = append(header, strings.SplitN(k, " ", 2)[0])
	}
	var rows [][]string
	for _, p := range rep.Points {
		row := []string{p.Name, short(p.Commit), string(p.Answers[Q1]), string(p.Answers[Q2]), string(p.Answers[Q3])}
		for _, k := range consts {
			v := p.Constants[k]
			if _, val, ok := strings.Cut(v, " = "); ok {
				v = val
			}
			row = append(row, v)
		}
		rows = append(rows, row)
	}
	base := make([]int, len(header))
	for i := range base {
		base[i] = 8
	}
	t := tablewriter.NewTable(w, tablewriter.WithHeaderAutoFormat(tw.Off), tablewriter.WithHeader(header),
		tablewriter.WithRowAutoWrap(tw.WrapNormal), tablewriter.WithWidths(tw.CellWidth{PerColumn: columnWidths(rows, base...)}))
	for _, r := range rows {
		if err := t.Append(r); err != nil {
			return err
		}
	}
	if err := t.Render(); err != nil {
		return err
	}
	for _, c := range rep.Changes {
		where := "at " + c.ToRev + " (" + short(c.Commit) + ")"
		if c.Bisected {
			where = "first at " + short(c.Commit) + " on " + c.ToRev + "'s first-parent history (after " + c.FromRev + ")"
		}
		fmt.Fprintf(w, "\n%s: %s -> %s, %s", c.What, c.From, c.To, where)
		if c.Subject != "" {
			fmt.Fprintf(w, " %q", c.Subject)
		}
		fmt.Fprintln(w)
		for _, e := range c.Removed {
			fmt.Fprintf(w, "  - %s\n", e)
		}
		for _, e := range c.Added {
			fmt.Fprintf(w, "  + %s\n", e)
		}
	}
	return nil
}
