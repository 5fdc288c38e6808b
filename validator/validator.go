// Package validator re-derives every claim in data/survey_results.json from
// primary sources — git objects at the pinned commit and the raw traces —
// and reports PASS, FAIL or UNVERIFIABLE per claim with the figure it found.
//
// Independence is the point: this package imports nothing from audit/,
// parsers/ or discriminator/. It has its own git reading, its own symbol
// counting, its own trace readers and its own expression evaluator, so a
// bug shared with the analysis pipeline cannot produce a false agreement.
// The survey file is read as raw JSON (gjson), not through the survey model.
package validator

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"sort"
	"strings"
	"sync"

	"github.com/migaudit/migaudit/survey"
	"github.com/tidwall/gjson"
)

// Status of one check.
type Status string

const (
	Pass         Status = "PASS"
	Fail         Status = "FAIL"
	Unverifiable Status = "UNVERIFIABLE"
)

// Result is one check's outcome with the figure found.
type Result struct {
	ID     string
	Status Status
	Found  string
}

// Summary counts results.
type Summary struct {
	Passed, Failed, Unverifiable int
}

func (s Summary) String() string {
	return fmt.Sprintf("%d passed, %d failed, %d unverifiable", s.Passed, s.Failed, s.Unverifiable)
}

// Options for a validation run.
type Options struct {
	// Path is data/survey_results.json.
	Path string
	// RepoRoot resolves own-run evidence paths (data/evidence/...).
	RepoRoot string
	// Mirrors holds <owner>+<name>/repo bare clones.
	Mirrors string
	// Evidence overrides the study's repository (data/study.json) with a
	// directory of its files (traces/…); by default they are read from the
	// study's mirror at the pinned commit.
	Evidence string
	// Record writes the counts into the survey file.
	Record bool
	// Pins is a pins file in the format of data/implementations.json; ""
	// means the project's own, embedded from data/.
	Pins string
}

// Validator holds the primary-source caches so that many survey variants
// (the mutation test) can be checked against one reading of the sources.
type Validator struct {
	opts    Options
	sources *sourceCache

	mu     sync.Mutex
	sites  map[string]memoEntry[[]site]
	traces map[string]memoEntry[*traceFacts]
	shas   map[string]string
	runs   map[string]memoEntry[*runID]
	reads  map[string]memoEntry[*traceRead]
	// studyPaths are the study's files, each read out of its repository once.
	studyPaths map[string]memoEntry[string]
	counts     map[string]memoEntry[int]
	// wires are the decoded captures, by content (wireKey).
	wires *sync.Map
	// instrumentedLogs are msquic's instrumented logs read, by file;
	// studyDigests the study's pinned files' sha256, by repository path.
	instrumentedLogs map[string]memoEntry[*instrumentedFacts]
	studyDigests     map[string]memoEntry[string]

	// evict drops each implementation's trace facts once it is checked
	// (Run; the mutation tests keep them for the many survey variants).
	evict bool
	// reuse memoises the result of every check that reads its entry alone
	// (not in readsWholeSurvey) by the entry's content: the mutation tests
	// check thousands of variants of one survey, each changing one entry.
	reuse   bool
	results map[string]memoEntry[Result]

	pinOnce sync.Once
	pinned  map[string]pin
	pinErr  error
}

// New returns a validator over the given sources.
func New(opts Options) *Validator {
	return &Validator{opts: opts, sources: newSourceCache(opts.Mirrors),
		sites: map[string]memoEntry[[]site]{}, traces: map[string]memoEntry[*traceFacts]{}, shas: map[string]string{},
		runs: map[string]memoEntry[*runID]{}, counts: map[string]memoEntry[int]{}, reads: map[string]memoEntry[*traceRead]{}, studyPaths: map[string]memoEntry[string]{},
		wires: &sync.Map{}, results: map[string]memoEntry[Result]{},
		instrumentedLogs: map[string]memoEntry[*instrumentedFacts]{}, studyDigests: map[string]memoEntry[string]{}}
}

// Run validates the survey file, prints one line per check and the summary
// line, and records the counts in the file when opts.Record is set.
func Run(opts Options, w io.Writer) (Summary, error) {
	raw, err := os.ReadFile(opts.Path)
	if err != nil {
		return Summary{}, fmt.Errorf("validate: %w", err)
	}
	if !gjson.ValidBytes(raw) {
		return Summary{}, fmt.Errorf("validate: %s is not valid JSON", opts.Path)
	}
	v := New(opts)
	// One validation of one survey: a trace's facts are dropped once its
	// implementation is checked, and the heap is kept near what is live.
	v.evict = true
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(memoryLimit))
	results := v.Check(raw)
	sum := Print(w, results)
	if opts.Record {
		s, err := survey.Read(opts.Path)
		if err != nil {
			return sum, fmt.Errorf("record counts: %w", err)
		}
		// The validation is of the survey's inputs: it carries their date, so
		// that validating the same survey twice gives the same file.
		s.Validation = &survey.ValidationRecord{At: s.GeneratedAt,
			Passed: sum.Passed, Failed: sum.Failed, Unverifiable: sum.Unverifiable}
		if err := survey.Write(opts.Path, s); err != nil {
			return sum, fmt.Errorf("record counts: %w", err)
		}
	}
	return sum, nil
}

// Print writes the results and the summary line.
func Print(w io.Writer, results []Result) Summary {
	var s Summary
	width := 0
	for _, r := range results {
		width = max(width, len(r.ID))
	}
	for _, r := range results {
		fmt.Fprintf(w, "%-12s %-*s  %s\n", r.Status, width, r.ID, r.Found)
		switch r.Status {
		case Pass:
			s.Passed++
		case Fail:
			s.Failed++
		default:
			s.Unverifiable++
		}
	}
	fmt.Fprintln(w, s.String())
	return s
}

// Tally counts results without printing.
func Tally(results []Result) Summary {
	var s Summary
	for _, r := range results {
		switch r.Status {
		case Pass:
			s.Passed++
		case Fail:
			s.Failed++
		default:
			s.Unverifiable++
		}
	}
	return s
}

// Check runs every check against raw survey JSON. Implementations are
// checked in parallel (each reads its own repository and traces; the
// caches are shared under a lock), their results kept in survey order.
func (v *Validator) Check(raw []byte) []Result {
	doc := gjson.ParseBytes(raw)
	impls := doc.Get("implementations").Array()
	per := make([][]Result, len(impls))
	later := make([][]pendingCheck, len(impls))
	work := make(chan int)
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(impls)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				per[i], later[i] = v.checkImpl(doc, impls[i])
			}
		}()
	}
	// The implementations with the most traces first, so that the
	// workers finish together.
	order := make([]int, len(impls))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool {
		return len(impls[order[a]].Get("live.repetitions").Array()) > len(impls[order[b]].Get("live.repetitions").Array())
	})
	for _, i := range order {
		work <- i
	}
	close(work)
	wg.Wait()
	// The checks across implementations, once every implementation's own
	// checks have read (and dropped) its traces: what they compare, the
	// traces' identities, is kept.
	var pending []*pendingCheck
	for i := range later {
		for j := range later[i] {
			pending = append(pending, &later[i][j])
		}
	}
	next := make(chan *pendingCheck)
	for range min(runtime.GOMAXPROCS(0), max(len(pending), 1)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for p := range next {
				p.result.Status, p.result.Found = p.c.fn(v, doc, p.im)
			}
		}()
	}
	for _, p := range pending {
		next <- p
	}
	close(next)
	wg.Wait()
	for i := range later {
		for _, p := range later[i] {
			per[i][p.at] = p.result
		}
	}
	var out []Result
	for _, rs := range per {
		out = append(out, rs...)
	}
	for _, c := range crossChecks {
		if !c.applies(doc) {
			continue
		}
		st, found := c.fn(v, doc, doc)
		out = append(out, Result{ID: c.name, Status: st, Found: found})
	}
	return out
}

// afterAll names the per-implementation checks that compare against every
// other implementation's traces: they run once every implementation's own
// checks are done, so that no implementation's checks read (and hold)
// another's traces.
var afterAll = map[string]bool{"run-identity": true}

// readsWholeSurvey names the per-implementation checks that read more of
// the survey than their entry (the disagreements, every repetition of every
// implementation, the study's inputs).
var readsWholeSurvey = map[string]bool{"answers": true, "run-identity": true, "fix-visible": true}

// pendingCheck is a check of afterAll left for later, and its slot.
type pendingCheck struct {
	at     int
	c      check
	im     gjson.Result
	result Result
}

// checkImpl runs the checks of one implementation entry; those in afterAll
// are returned for later, their slots held in the results.
func (v *Validator) checkImpl(doc, im gjson.Result) ([]Result, []pendingCheck) {
	var out []Result
	var later []pendingCheck
	run := func(id string, c check, im gjson.Result) {
		if afterAll[c.name] {
			later = append(later, pendingCheck{at: len(out), c: c, im: im, result: Result{ID: id}})
			out = append(out, Result{ID: id})
			return
		}
		if v.reuse && !readsWholeSurvey[c.name] {
			sum := sha256.Sum256([]byte(im.Raw))
			r, _ := memo(&v.mu, v.results, id+"\x00"+string(sum[:]), func() (Result, error) {
				st, found := c.fn(v, doc, im)
				return Result{ID: id, Status: st, Found: found}, nil
			})
			out = append(out, r)
			return
		}
		st, found := c.fn(v, doc, im)
		out = append(out, Result{ID: id, Status: st, Found: found})
	}
	name := im.Get("name").String()
	for _, c := range perImplChecks {
		if !c.applies(im) {
			continue // nothing claimed, nothing to check
		}
		run(name+"/"+c.name, c, im)
	}
	for _, c := range specificChecks[name] {
		st, found := c.fn(v, doc, im)
		out = append(out, Result{ID: name + "/" + c.name, Status: st, Found: found})
	}
	// The study's reference repetition kept beside own runs (a second
	// source) makes the same live claims: the same checks re-derive them.
	if ref, ok := withReferenceLive(im); ok {
		for _, c := range perImplChecks {
			if !(strings.HasPrefix(c.claim, "live.") || c.name == "constants") || !c.applies(ref) {
				continue
			}
			run(name+"/reference/"+c.name, c, ref)
		}
		for _, c := range append([]check{{"q1", checkRepQ1, ""}}, specificChecks[name]...) {
			st, found := c.fn(v, doc, ref)
			out = append(out, Result{ID: name + "/reference/" + c.name, Status: st, Found: found})
		}
	}
	if v.evict {
		v.dropTraces(im)
		// Its source too (a later cross-check that needs it reopens it;
		// the counts they use are memoised).
		v.sources.drop(im.Get("upstream").String(), im.Get("commit").String())
	}
	return out, later
}

// memoryLimit is the soft heap limit a validation runs under.
const memoryLimit = 140 << 20

// dropTraces forgets the facts of im's traces (their identities stay:
// other implementations' run-identity checks compare them).
func (v *Validator) dropTraces(im gjson.Result) {
	var paths []string
	for _, l := range []gjson.Result{im.Get("live"), im.Get("live.reference")} {
		origin := l.Get("origin").String()
		for _, rep := range l.Get("repetitions").Array() {
			if p, err := v.resolve(origin, rep.Get("trace").String()); err == nil {
				paths = append(paths, canonical(p))
				v.dropWire(wireDir(p))
			}
		}
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	for _, p := range paths {
		delete(v.traces, p)
		if e, ok := v.reads[p]; ok && e.done() && e.err == nil {
			v.reads[p] = memoEntry[*traceRead]{val: &traceRead{id: e.val.id}}
		}
	}
}

// withReferenceLive returns the entry with its live part replaced by
// live.reference, when there is one.
func withReferenceLive(im gjson.Result) (gjson.Result, bool) {
	ref := im.Get("live.reference")
	if !ref.Exists() || !ref.IsObject() {
		return gjson.Result{}, false
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(im.Raw), &m); err != nil {
		return gjson.Result{}, false
	}
	m["live"] = json.RawMessage(ref.Raw)
	b, err := json.Marshal(m)
	if err != nil {
		return gjson.Result{}, false
	}
	return gjson.ParseBytes(b), true
}

type check struct {
	name string
	fn   func(v *Validator, doc, im gjson.Result) (Status, string)
	// claim names what the entry must contain for the check to apply
	// ("" = always): an entry without live evidence makes no live claim.
	claim string
}

func (c check) applies(im gjson.Result) bool {
	switch c.claim {
	case "":
		return true
	case "own-runs":
		return im.Get("live.origin").String() == survey.OwnRuns && len(im.Get("live.repetitions").Array()) > 0
	case "evidence":
		n := 0
		eachEvidence(im, func(string, gjson.Result) { n++ })
		return n > 0
	case "q2":
		n := 0
		q2Reps(im, func(string, string, gjson.Result) { n++ })
		return n > 0
	}
	r := im.Get(c.claim)
	return r.Exists() && !(r.IsArray() && len(r.Array()) == 0)
}

// verdict accumulates sub-findings: any failure fails the check, any
// missing source makes it unverifiable, otherwise it passes.
type verdict struct {
	fails   []string
	unver   []string
	found   []string
	touched bool
}

func (d *verdict) fail(format string, a ...any) { d.fails = append(d.fails, fmt.Sprintf(format, a...)) }
func (d *verdict) unverifiable(format string, a ...any) {
	d.unver = append(d.unver, fmt.Sprintf(format, a...))
}
func (d *verdict) note(format string, a ...any) {
	d.touched = true
	d.found = append(d.found, fmt.Sprintf(format, a...))
}

func (d *verdict) result() (Status, string) {
	switch {
	case len(d.fails) > 0:
		return Fail, strings.Join(d.fails, "; ")
	case len(d.unver) > 0:
		msg := strings.Join(d.unver, "; ")
		if len(d.found) > 0 {
			msg += " (checked: " + strings.Join(d.found, "; ") + ")"
		}
		return Unverifiable, msg
	case !d.touched:
		return Unverifiable, "nothing to check"
	}
	return Pass, strings.Join(d.found, "; ")
}

// tree opens the implementation's pinned commit.
func (v *Validator) tree(im gjson.Result) (*sourceTree, error) {
	return v.sources.get(im.Get("upstream").String(), im.Get("commit").String())
}

// memoEntry is a cached result, error included: a source or trace that
// failed once fails the same way for every check. An entry with wait set
// is being computed: readers wait for it, so that two checks running in
// parallel never read the same trace twice.
type memoEntry[T any] struct {
	val  T
	err  error
	wait chan struct{}
}

// done reports whether e holds a computed result.
func (e memoEntry[T]) done() bool { return e.wait == nil }

// memo returns m[key], computing it with fn outside the lock on a miss;
// a second caller for the same key waits for the first.
func memo[T any](mu *sync.Mutex, m map[string]memoEntry[T], key string, fn func() (T, error)) (T, error) {
	for {
		mu.Lock()
		e, ok := m[key]
		if ok && e.done() {
			mu.Unlock()
			return e.val, e.err
		}
		if ok {
			mu.Unlock()
			<-e.wait
			continue
		}
		w := make(chan struct{})
		m[key] = memoEntry[T]{wait: w}
		mu.Unlock()
		val, err := fn()
		mu.Lock()
		m[key] = memoEntry[T]{val: val, err: err}
		mu.Unlock()
		close(w)
		return val, err
	}
}

// symbolSites memoises findSites.
func (v *Validator) symbolSites(t *sourceTree, symbol, form string) ([]site, error) {
	key := t.repoDir + "@" + t.commit + "#" + symbol + "#" + form
	return memo(&v.mu, v.sites, key, func() ([]site, error) { return findSites(t, symbol, form) })
}

// tracePath resolves a repetition's trace: own runs against the repository
// root, reference evidence against --evidence.
func (v *Validator) resolve(origin, rel string) (string, error) {
	if rel == "" {
		return "", fmt.Errorf("no file named")
	}
	if filepath.IsAbs(rel) {
		return "", fmt.Errorf("%s: evidence paths must be relative", rel)
	}
	if origin == survey.Reference {
		return v.studyPath(rel)
	}
	return filepath.Join(v.opts.RepoRoot, rel), nil
}

func (v *Validator) trace(path string) (*traceFacts, error) {
	return memo(&v.mu, v.traces, canonical(path), func() (*traceFacts, error) {
		r, err := v.readOnce(path)
		if err != nil {
			return nil, err
		}
		return r.facts, nil
	})
}

// traceRead is everything the validator takes from one trace file, read
// and decompressed once: its facts and its identity.
type traceRead struct {
	facts *traceFacts
	id    *runID
}

// readOnce reads a trace file once for both the trace facts and the run
// identity; the decompressed content is not kept.
func (v *Validator) readOnce(path string) (*traceRead, error) {
	v.mu.Lock()
	if e, ok := v.reads[canonical(path)]; ok && e.done() && e.err == nil && e.val.facts == nil {
		delete(v.reads, canonical(path)) // dropped (dropTraces): read again
	}
	v.mu.Unlock()
	return memo(&v.mu, v.reads, canonical(path), func() (*traceRead, error) {
		raw, err := os.ReadFile(path)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%w: %s absent", errNoSource, path)
		}
		if err != nil {
			return nil, err
		}
		release := decoding.acquire(decompressedSize(raw))
		defer release()
		data, err := decompress(raw)
		if err != nil && !errors.Is(err, errTruncated) {
			return nil, fmt.Errorf("%s: gzip: %w", path, err)
		}
		facts, err := traceFrom(path, raw, data)
		if err != nil {
			return nil, err
		}
		return &traceRead{facts: facts, id: runIDFrom(path, data)}, nil
	})
}

// decoding bounds the decompressed trace content held at once: the
// workers check implementations in parallel, but two of the largest
// traces decoded side by side are most of a validation's peak memory.
var decoding = &budget{left: decodeBudget}

// decodeBudget is the decompressed bytes in flight across workers; a
// trace larger than it is decoded alone.
const decodeBudget = 40 << 20

// budget is a counting semaphore over bytes.
type budget struct {
	mu   sync.Mutex
	cond *sync.Cond
	left int
}

// acquire waits until n bytes fit (or nothing else is held) and returns
// their release.
func (b *budget) acquire(n int) func() {
	b.mu.Lock()
	if b.cond == nil {
		b.cond = sync.NewCond(&b.mu)
	}
	n = min(n, decodeBudget)
	for b.left < n {
		b.cond.Wait()
	}
	b.left -= n
	b.mu.Unlock()
	return func() {
		b.mu.Lock()
		b.left += n
		b.cond.Broadcast()
		b.mu.Unlock()
	}
}

// decompressedSize is what a gzip file's trailer records (the size modulo
// 2^32), or the length of other content.
func decompressedSize(raw []byte) int {
	if len(raw) >= 18 && raw[0] == 0x1f && raw[1] == 0x8b {
		return int(binary.LittleEndian.Uint32(raw[len(raw)-4:]))
	}
	return len(raw)
}

// sortedKeys is for stable messages.
func sortedKeys[M ~map[string]V, V any](m M) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// canonical is a file's cache key: the same file reached through a link
// (a planted-fault copy of the evidence links what it leaves alone) is
// read once.
func canonical(p string) string {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return p
}
