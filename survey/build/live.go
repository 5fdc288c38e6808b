package build

// The live half of the survey: this project's own repetitions (manifest,
// analysis and trace in each directory under data/evidence) read into
// survey.Live.

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/migaudit/migaudit/data"
	"github.com/migaudit/migaudit/discriminator"
	"github.com/migaudit/migaudit/survey"
)

// runRep is one repetition directory of this project's own runs.
type runRep struct {
	Dir      string // relative to the repo root
	Manifest map[string]any
	Analysis *discriminator.Analysis
	Trace    string // relative to the repo root
	// Scenario is the manifest's, "" for the standard scenario.
	Scenario string
}

// collectRuns finds rep<N> directories with manifest.json and analysis.json
// under each results directory (default: data/evidence/*, and the
// non-standard scenarios' data/evidence/<impl>/<scenario>/rep*). A
// repetition of a non-standard scenario carries it in runRep.Scenario.
func collectRuns(o Options) (map[string][]runRep, map[string][]string, error) {
	dirs := o.Results
	if len(dirs) == 0 {
		ev := filepath.Join(o.RepoRoot, "data", "evidence")
		ents, _ := os.ReadDir(ev)
		for _, e := range ents {
			if e.IsDir() {
				dirs = append(dirs, filepath.Join(ev, e.Name()))
			}
		}
	}
	out := map[string][]runRep{}
	notes := map[string][]string{}
	for _, d := range dirs {
		reps, _ := filepath.Glob(filepath.Join(d, "rep*"))
		if len(o.Results) == 0 {
			sub, _ := filepath.Glob(filepath.Join(d, "*", "rep*"))
			for _, s := range sub {
				// <impl>/<scenario>/rep*: another scenario's runs; an
				// instrumented build's runs (InstrumentedDir) are read by
				// liveFindingsFor only, never counted as the live answer's.
				if sc := filepath.Base(filepath.Dir(s)); sc != "spoiled" && sc != InstrumentedDir && !strings.HasPrefix(sc, "rep") {
					reps = append(reps, s)
				}
			}
		}
		if st, err := os.Stat(filepath.Join(d, "manifest.json")); err == nil && !st.IsDir() {
			reps = append(reps, d)
		}
		sort.Strings(reps)
		for _, rd := range reps {
			mb, err := os.ReadFile(filepath.Join(rd, "manifest.json"))
			if err != nil {
				continue
			}
			var man map[string]any
			if err := json.Unmarshal(mb, &man); err != nil {
				return nil, nil, fmt.Errorf("%s: %w", filepath.Join(rd, "manifest.json"), err)
			}
			ab, err := os.ReadFile(filepath.Join(rd, "analysis.json"))
			if err != nil {
				return nil, nil, fmt.Errorf("%s: repetition without analysis.json (run migaudit analyze on it): %w", rd, err)
			}
			var an discriminator.Analysis
			if err := json.Unmarshal(ab, &an); err != nil {
				return nil, nil, fmt.Errorf("%s: %w", filepath.Join(rd, "analysis.json"), err)
			}
			impl := an.Implementation
			if s, ok := man["implementation"].(string); ok && s != "" {
				impl = s
			}
			pin, err := data.Lookup(impl)
			if err != nil {
				return nil, nil, fmt.Errorf("%s: %w", rd, err)
			}
			// The survey answers the study's standard migration in live;
			// other scenarios go to live_scenarios (pv-distinct answers Q2).
			sc, _ := man["scenario"].(string)
			if sc == "standard" {
				sc = ""
			}
			tr, err := findTrace(o.RepoRoot, rd, an.Trace, man)
			if err != nil {
				// A repetition whose trace was not kept cannot be re-derived:
				// it is reported, not counted.
				notes[pin.Name] = append(notes[pin.Name], fmt.Sprintf("%s: analysis and manifest kept but not the trace; not counted as a repetition", relTo(o.RepoRoot, rd)))
				continue
			}
			out[pin.Name] = append(out[pin.Name], runRep{Dir: relTo(o.RepoRoot, rd), Manifest: man, Analysis: &an, Trace: relTo(o.RepoRoot, tr), Scenario: sc})
		}
	}
	return out, notes, nil
}

// findTrace locates a repetition's server trace: the manifest's
// result.server_trace inside the repetition directory, the analysis' trace
// path, or a file of that name under the directory (evidence copied from
// results/ keeps its layout but not its absolute prefix).
func findTrace(root, rd, analysisTrace string, man map[string]any) (string, error) {
	var cands []string
	if res, ok := man["result"].(map[string]any); ok {
		if st, ok := res["server_trace"].(string); ok && st != "" {
			cands = append(cands, filepath.Join(rd, st))
		}
	}
	if analysisTrace != "" {
		cands = append(cands, filepath.Join(root, analysisTrace), analysisTrace, filepath.Join(rd, filepath.Base(analysisTrace)))
		base := filepath.Base(analysisTrace)
		_ = filepath.Walk(rd, func(p string, info os.FileInfo, err error) error {
			if err == nil && !info.IsDir() && info.Name() == base {
				cands = append(cands, p)
			}
			return nil
		})
	}
	absRD, _ := filepath.Abs(rd)
	for _, c := range cands {
		// Only a trace kept with the repetition counts: one elsewhere
		// (results/, not committed) would not be there on a fresh clone.
		ac, _ := filepath.Abs(c)
		if !strings.HasPrefix(ac, absRD+string(filepath.Separator)) {
			continue
		}
		if st, err := os.Stat(c); err == nil && !st.IsDir() {
			return c, nil
		}
	}
	return "", fmt.Errorf("%s: server trace not found (analysis.json names %q)", rd, analysisTrace)
}

func relTo(root, p string) string {
	if root == "" {
		root = "."
	}
	ar, err1 := filepath.Abs(root)
	ap, err2 := filepath.Abs(p)
	if err1 != nil || err2 != nil {
		return p
	}
	if r, err := filepath.Rel(ar, ap); err == nil {
		return r
	}
	return p
}

func fileSHA(p string) (string, error) {
	b, err := os.ReadFile(p)
	if err != nil {
		return "", err
	}
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:]), nil
}

// liveFor builds the live part: this project's runs when there are any,
// else the study's reference trace (referenceLive).
func liveFor(o Options, pin data.Implementation, cons []survey.Constant, reps []runRep, w io.Writer) (*survey.Live, []string, error) {
	var notes []string
	if len(reps) > 0 {
		l, err := ownLive(o, reps)
		if err != nil {
			return nil, nil, err
		}
		logf(w, "%-9s live: %d own repetitions", pin.Name, len(l.Repetitions))
		// The study's reference repetition stays beside the own runs as a
		// second source when the study is available.
		ref, _, err := referenceLive(o, pin, w)
		if err != nil {
			return nil, nil, err
		}
		if ref != nil {
			l.Reference = ref
			notes = append(notes, "the study's reference repetition "+ref.Repetitions[0].Trace+" is kept beside the own runs as a second source")
		}
		return l, notes, nil
	}
	l, refNotes, err := referenceLive(o, pin, w)
	_ = cons
	return l, append(notes, refNotes...), err
}

// scenariosFor builds live_scenarios from the repetitions of the
// non-standard scenarios, in name order.
func scenariosFor(o Options, pin data.Implementation, reps []runRep, w io.Writer) ([]survey.LiveScenario, error) {
	by := map[string][]runRep{}
	for _, r := range reps {
		by[r.Scenario] = append(by[r.Scenario], r)
	}
	names := make([]string, 0, len(by))
	for n := range by {
		names = append(names, n)
	}
	sort.Strings(names)
	var out []survey.LiveScenario
	for _, n := range names {
		l, err := ownLive(o, by[n])
		if err != nil {
			return nil, err
		}
		logf(w, "%-9s live %s: %d own repetitions", pin.Name, n, len(l.Repetitions))
		out = append(out, survey.LiveScenario{Scenario: n, Live: l})
	}
	return out, nil
}

// ownLive reads this project's repetitions into a Live.
func ownLive(o Options, reps []runRep) (*survey.Live, error) {
	{
		l := &survey.Live{Origin: survey.OwnRuns, Repetitions: []survey.Repetition{}}
		for i, r := range reps {
			tr := r.Trace
			sha, err := fileSHA(filepath.Join(o.RepoRoot, tr))
			if err != nil {
				return nil, fmt.Errorf("%s: trace: %w", r.Dir, err)
			}
			rep := fromAnalysis(r.Analysis, fmt.Sprintf("rep%d", i+1), tr, sha)
			if base := filepath.Base(r.Dir); strings.HasPrefix(base, "rep") {
				rep.ID = base
			}
			rep.Manifest = filepath.Join(r.Dir, "manifest.json")
			rep.Analysis = filepath.Join(r.Dir, "analysis.json")
			for _, c := range []string{"calibration.json", "calibration.record.json"} {
				if _, err := os.Stat(filepath.Join(o.RepoRoot, r.Dir, c)); err == nil {
					rep.Calibration = filepath.Join(r.Dir, c)
				}
			}
			enrichFromManifest(&rep, r.Manifest, filepath.Join(o.RepoRoot, r.Dir))
			if err := addWire(&rep, r, o.RepoRoot); err != nil {
				return nil, err
			}
			settleQ1(&rep)
			l.Repetitions = append(l.Repetitions, rep)
		}
		finishLive(l)
		rec, err := runRecordOf(o.RepoRoot, reps)
		if err != nil {
			return nil, err
		}
		l.RunRecord = rec
		return l, nil
	}
}

// logMove finds the endpoints' own record of the peer's address change:
// JSON lines {"ev":"peer_address"|"switched","from":...,"to":...} in the
// repetition's stderr/stdout files (the server's first: it observes).
func logMove(dir string) (from, to, src string, ok bool) {
	for _, name := range []string{"server.stderr", "server.stdout", "client.stderr", "client.stdout"} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			i := strings.Index(line, "{")
			if i < 0 {
				continue
			}
			var ev struct{ Ev, From, To string }
			if json.Unmarshal([]byte(line[i:]), &ev) != nil {
				continue
			}
			if (ev.Ev == "peer_address" || ev.Ev == "switched") && ev.From != "" && ev.To != "" {
				return ev.From, ev.To, name, true
			}
		}
	}
	return "", "", "", false
}

func hostOf(a string) string {
	if h, _, err := net.SplitHostPort(a); err == nil {
		return h
	}
	return a
}

// num reads a number at a path of keys in a decoded manifest.
func num(m map[string]any, keys ...string) (float64, bool) {
	var cur any = m
	for _, k := range keys {
		mm, ok := cur.(map[string]any)
		if !ok {
			return 0, false
		}
		cur = mm[k]
	}
	f, ok := cur.(float64)
	return f, ok
}

// enrichFromManifest adds what the run recorded beside the trace: the
// version, the configured new-path RTT, whether the emulator was
// calibrated, and — where the trace logs no addresses — the per-path packet
// counters and the client's own "Local address is now" line, which tell an
// IP migration (traffic on both paths, each with its own address) from a
// port-only rebinding.
func enrichFromManifest(rep *survey.Repetition, man map[string]any, dir string) {
	if v, ok := man["version"].(string); ok {
		rep.Version = v
	}
	if b, ok := num(man, "paths", "B", "rtt_us"); ok {
		rep.NewPathRTTUS = int64(b)
	}
	if cal, ok := man["calibration"].(map[string]any); ok {
		if c, _ := cal["calibrated"].(bool); !c {
			rep.Warnings = append(rep.Warnings, "run on an uncalibrated emulator (--skip-calibration)")
		}
	}
	if rep.Migration.Kind != "path-change" {
		return
	}
	if from, to, src, ok := logMove(dir); ok {
		rep.Migration.OldAddr, rep.Migration.NewAddr = from, to
		if hostOf(from) != hostOf(to) {
			rep.Migration.Kind = "ip"
		} else {
			rep.Migration.Kind = "port-only"
		}
		rep.Migration.Evidence += fmt.Sprintf("; %s logs the peer moving %s → %s", src, from, to)
		return
	}
	// The testbed's counters run across repetitions: this repetition's
	// traffic is after − before.
	a, okA := num(man, "counters_after", "A", "to_server_packets")
	b, okB := num(man, "counters_after", "B", "to_server_packets")
	if !okA || !okB {
		return
	}
	a0, _ := num(man, "counters_before", "A", "to_server_packets")
	b0, _ := num(man, "counters_before", "B", "to_server_packets")
	a, b = a-a0, b-b0
	if a > 0 && b > 0 {
		rep.Migration.Kind = "ip"
		rep.Migration.Evidence += fmt.Sprintf("; per-path packet counters in the manifest: %d packets to the server on path A, %d on path B (each path has its own client address)", int64(a), int64(b))
		if res, ok := man["result"].(map[string]any); ok {
			if moves, ok := res["client_moves"].([]any); ok && len(moves) > 0 {
				if mv, ok := moves[len(moves)-1].(map[string]any); ok {
					if to, ok := mv["to"].(string); ok {
						rep.Migration.NewAddr = strings.Trim(strings.Replace(to, "]:", ":", 1), "[")
					}
				}
			}
		}
	} else if b == 0 {
		rep.Migration.Kind = "port-only"
		rep.Migration.Evidence += fmt.Sprintf("; per-path packet counters in the manifest: no packets on path B (%d on A): the client never left path A's address", int64(a))
	}
}

func fromAnalysis(a *discriminator.Analysis, id, trace, sha string) survey.Repetition {
	r := survey.Repetition{ID: id, Trace: trace, TraceSHA256: sha, Format: a.Format, Vantage: a.Vantage,
		Migration: survey.Migration{Kind: string(a.Migration.Kind), AtUS: a.Migration.AtUS, Evidence: a.Migration.Evidence,
			OldAddr: a.Migration.OldAddr, NewAddr: a.Migration.NewAddr, PathValidationRTTUS: a.Migration.PathValidationRTTUS},
		ScopeFromUS: a.ScopeFromUS, ScopeToUS: a.ScopeToUS, WindowBeforeBytes: a.WindowBeforeBytes, WindowAfterBytes: a.WindowAfterBytes,
		ResetObserved: a.ResetObserved, Events: []survey.Event{},
		RTT: survey.RTT{FirstAfterUS: a.RTT.FirstAfterUS, Attribution: a.RTT.Attribution, OldPathUS: a.RTT.OldPathUS, NewPathUS: a.RTT.NewPathUS,
			DefaultUS: a.RTT.DefaultUS, ConvergedAfterUS: a.RTT.ConvergedAfterUS, Detail: a.RTT.Detail},
		Q1: a.Q1.Answer, Q3: a.Q3.Answer, Warnings: a.Warnings}
	if q := a.Q2; q != nil {
		r.Q2 = &survey.RepQ2{Answer: q.Answer, PVRTTUS: q.PVRTTUS, DataRTTUS: q.DataRTTUS, FirstRTTAfterUS: q.FirstRTTAfterUS, Detail: q.Detail}
	}
	if r.Migration.Kind == "" {
		r.Migration.Kind = "none"
	}
	for _, e := range a.Events {
		r.Events = append(r.Events, survey.Event{Kind: string(e.Kind), AtUS: e.AtUS, ValueBytes: e.ValueBytes, PreviousBytes: e.PreviousBytes, Explanation: e.Explanation})
	}
	for _, c := range a.Constants {
		name := c.Name
		r.Constants = append(r.Constants, survey.LiveCons{Name: name, Value: c.Value, Arithmetic: c.Arithmetic})
	}
	if r.RTT.NewPathUS > 0 {
		r.NewPathRTTUS = r.RTT.NewPathUS
	}
	_ = math.Abs
	return r
}

// addWire adds the repetition's wire evidence (docs/wire.md) and what the
// discriminator's wire analysis made of it: the files and their digests,
// whether the capture was trimmed for committing, the bytes acknowledged
// and lost after the migration by path, the deciding samples as wire
// claims (the first after the migration, and the first from an old-path
// packet if any), and what Q3 rests on.
func addWire(rep *survey.Repetition, r runRep, root string) error {
	rep.Q3Basis = "values"
	dir := filepath.Join(root, r.Dir)
	capPath := filepath.Join(dir, discriminator.WireCaptureName)
	if _, err := os.Stat(capPath); err != nil {
		return nil
	}
	sha, err := fileSHA(capPath)
	if err != nil {
		return fmt.Errorf("%s: %w", r.Dir, err)
	}
	w := &survey.RepWire{Capture: filepath.Join(r.Dir, discriminator.WireCaptureName), CaptureSHA256: sha}
	if c, ok := r.Manifest["capture"].(map[string]any); ok {
		_, w.Trimmed = c["trimmed"].(map[string]any)
	}
	if ks, err := fileSHA(filepath.Join(dir, discriminator.KeyLogName)); err == nil {
		w.KeyLog, w.KeyLogSHA256 = filepath.Join(r.Dir, discriminator.KeyLogName), ks
	}
	rep.Wire = w
	wr := r.Analysis.RTT.Wire
	if wr == nil {
		return nil
	}
	for _, b := range wr.Bytes {
		w.BytesByPath = append(w.BytesByPath, survey.PathBytes{Path: b.Path, AckedBytes: b.AckedBytes, AckedPackets: b.AckedPackets, LostBytes: b.LostBytes, LostPackets: b.LostPackets})
	}
	if !wr.Decides {
		return nil
	}
	rep.Q3Basis = "wire"
	rep.RTT.WireEvidence = w.Capture
	sender := r.Analysis.Vantage
	if sender == "" {
		sender = "server"
	}
	for _, ws := range []*discriminator.WireSample{wr.First, wr.Deciding} {
		if ws == nil || (len(rep.WireClaims) > 0 && rep.WireClaims[0].Packet == ws.Packet) {
			continue
		}
		// rtt_us: the packet's round trip as the sender saw it (ACK
		// received − packet sent), which the wire measures as the ACK's
		// arrival − the packet's entry into the link.
		c := survey.WireClaim{Packet: ws.Packet, Path: ws.Path, RTTUS: ws.AckAtUS - ws.SentAtUS, Sender: sender}
		if ws.RepeatedAck {
			// The round trip is a later ACK's, not the first one the
			// claim is checked against.
			c.RTTUS = 0
		}
		rep.WireClaims = append(rep.WireClaims, c)
	}
	if len(rep.WireClaims) > 0 {
		rep.WireSHA256 = sha
	}
	return nil
}

// settleQ1 applies the rule on undecided repetitions
// (docs/validator-decisions.md) once the run's record has verified the IP
// change the trace could not show: a repetition that did not reset is then
// NO, not undecided. Only a repetition whose IP change stays unproven
// (a possible port-only rebinding, exempt) is left undecided.
func settleQ1(rep *survey.Repetition) {
	if rep.Q1 == "UNKNOWN" && !rep.ResetObserved && rep.Migration.Kind == "ip" {
		rep.Q1 = "NO"
	}
}

func finishLive(l *survey.Live) {
	l.Retained = len(l.Repetitions)
	resets := 0
	for _, r := range l.Repetitions {
		if r.Migration.Kind == "ip" {
			l.IPChanges++
			if r.ResetObserved {
				resets++
			}
		}
	}
	l.Summary = fmt.Sprintf("%d repetitions, %d verified IP migrations, reset observed in %d/%d", l.Retained, l.IPChanges, resets, l.IPChanges)
}
