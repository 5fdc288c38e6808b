package discriminator

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/migaudit/migaudit/data"
	"github.com/migaudit/migaudit/parsers/timeline"
)

// Default scope around path validation (the study's: 50 ms before to 2 s after).
const (
	DefaultBefore = 50 * time.Millisecond
	DefaultAfter  = 2 * time.Second
)

// Options configure Analyze.
type Options struct {
	// Impl names the implementation; its constants come from
	// data.ConstantsFor. Empty: the implementation the trace names.
	Impl string
	// MigrationAt is the migration instant for timelines without path
	// events (CSV timelines: --migration-at 5s). Ignored, with a warning,
	// when the trace shows its own migration.
	MigrationAt *time.Duration
	// Before and After scope the classified interval around path
	// validation; zero means DefaultBefore / DefaultAfter.
	Before, After time.Duration
	// OldPathRTT, NewPathRTT are the paths' RTTs when known (e.g. from the
	// testbed configuration); 0 = unknown / measure from the trace.
	OldPathRTT, NewPathRTT time.Duration
	// Params override the constant formulas' parameters (e.g. {"S": 1452}).
	Params map[string]float64
	// Wire is the repetition's wire evidence (LoadWireEvidence); nil:
	// none given (AnalyzeFile then looks beside the trace, WireBeside).
	Wire *WireEvidence
	// Constants, when non-nil, are the implementation's constants audited
	// at the commit that ran (their provenance names it); nil: data's, read
	// at the pin (data.ConstantsFor).
	Constants *data.Constants
	// CC is the congestion controller that ran ("reno", "cubic", "bbr");
	// empty: the implementation's default. It selects the audited loss
	// response a window decrease is matched against.
	CC string
	// Commit is the commit whose code ran, when it is not the pin (quinn
	// 0.9.3 from Debian): the constants the audit wrote at it
	// (data.ConstantsAt) are used when there are some; "" = the pin's.
	Commit string
}

// Analyze classifies every window decrease around the migration in tl,
// attributes the post-migration RTT and answers Q1 and Q3 for this trace.
func Analyze(tl *timeline.Timeline, opt Options) (Analysis, error) {
	a, cs, err := begin(tl.Source, tl.Meta, tl.Warnings, opt)
	if err != nil {
		return Analysis{}, err
	}
	events := sortedEvents(tl.Events)
	var f migFinder
	for _, e := range events {
		f.add(e)
	}
	if !a.setMigration(f.result(len(events)), opt) {
		return a, nil
	}
	samples := sortedSamples(tl.Samples)
	in, startIdx := a.classifyScope(samples, f.pv, cs, tl.Meta.PathIDs, hasAnyFields(samples), opt)
	if opt.Wire != nil {
		a.RTT = attributeRTT(in, samples[startIdx:], noAcks{})
		a.applyWire(opt.Wire, in, samples[startIdx:], events, TraceReferenceUnixUS(tl.Source))
		a.Q2 = decideQ2(opt.Wire, in, a.Vantage, samples[startIdx:])
	} else {
		a.RTT = attributeRTT(in, samples[startIdx:], eventAcks(events))
	}
	a.answer(cs)
	return a, nil
}

// begin fills what the trace's metadata and the options decide: the
// implementation, its constants, the notes.
func begin(source string, meta timeline.Meta, warnings []timeline.Warning, opt Options) (Analysis, constantSet, error) {
	var notes []string
	if opt.Impl == "" {
		if meta.Implementation == "" {
			return Analysis{}, constantSet{}, fmt.Errorf("analyze %s: no implementation given (--impl) and the trace does not name one; its constants decide what a reset looks like", source)
		}
		opt.Impl = meta.Implementation
		notes = append(notes, fmt.Sprintf("implementation %q taken from the trace", opt.Impl))
	}
	params, used := mergeParams(opt.Impl, meta.Params, opt.Params)
	at := opt.Constants
	if at == nil && opt.Commit != "" {
		if c, found, err := data.ConstantsWrittenAt(opt.Impl, opt.Commit); err == nil && found {
			at = &c
		}
	}
	cs, err := evalConstantsFor(opt.Impl, opt.CC, params, at)
	if err != nil {
		return Analysis{}, constantSet{}, fmt.Errorf("analyze %s: %w", source, err)
	}
	if n := cs.modelAt(opt.Commit); n != "" {
		notes = append(notes, n)
	}
	a := Analysis{
		Implementation: canonicalImpl(opt.Impl),
		Trace:          source,
		Format:         meta.Format,
		Vantage:        meta.Vantage,
		PathIDs:        meta.PathIDs,
		Constants:      cs.reported,
		Warnings:       notes,
	}
	for _, w := range warnings {
		a.Warnings = append(a.Warnings, fmt.Sprintf("parser: record %d at byte %d: %s", w.Record, w.Offset, w.Message))
	}
	for _, n := range meta.Notes {
		a.Warnings = append(a.Warnings, "trace: "+n)
	}
	a.Warnings = append(a.Warnings, used...)
	if !cs.audited {
		a.Warnings = append(a.Warnings, fmt.Sprintf("constants for %s are the study's values (not yet audited from source)", a.Implementation))
	}
	return a, cs, nil
}

// givenMigration is the migration analysed: the trace's own, else the
// instant the user gave, with a note when the given one is overruled.
func givenMigration(m Migration, opt Options) (Migration, string) {
	if opt.MigrationAt == nil {
		return m, ""
	}
	at := opt.MigrationAt.Microseconds()
	if m.Found {
		return m, fmt.Sprintf("--migration-at %s ignored: the trace shows its own migration at %s", opt.MigrationAt, fmtMS(m.AtUS))
	}
	return Migration{Found: true, Kind: GivenInstant, AtUS: at, PathValidationAtUS: at,
		Evidence: fmt.Sprintf("--migration-at %s (given; the timeline has no path events, so the kind of migration is not known)", opt.MigrationAt)}, ""
}

// scopeOf is the classified interval around path validation.
func scopeOf(m Migration, opt Options) (from, to int64) {
	before, after := opt.Before, opt.After
	if before == 0 {
		before = DefaultBefore
	}
	if after == 0 {
		after = DefaultAfter
	}
	anchor := m.PathValidationAtUS
	if anchor == 0 {
		anchor = m.AtUS
	}
	return anchor - before.Microseconds(), anchor + after.Microseconds()
}

// setMigration records the migration (the trace's m, or the given one);
// false when there is none, and the analysis is then complete.
func (a *Analysis) setMigration(m Migration, opt Options) bool {
	m, note := givenMigration(m, opt)
	if note != "" {
		a.Warnings = append(a.Warnings, note)
	}
	a.Migration = m
	a.Events = []Collapse{} // never null in JSON
	if !m.Found {
		a.RTT = RTTAttribution{Attribution: "unknown", Detail: "no migration found"}
		a.Q1 = Verdict{"UNKNOWN", m.Evidence}
		a.Q3 = Verdict{"UNKNOWN", m.Evidence}
		return false
	}
	a.ScopeFromUS, a.ScopeToUS = scopeOf(m, opt)
	return true
}

// classifyScope classifies the decreases in the scope, finds the windows
// and says from which sample on the RTT is the new path's. samples must
// hold, in time order, every sample from the scope start (or the
// migration, if earlier) to the scope end, preceded by the last sample of
// each path that reported a window and the last that reported a smoothed
// RTT before that: all of a trace's samples are one such slice.
func (a *Analysis) classifyScope(samples []timeline.Sample, pv []timeline.Event, cs constantSet, pathIDs, anyFields bool, opt Options) (rttInput, int) {
	m := a.Migration
	cls := classifyDecreases(samples, a.ScopeFromUS, a.ScopeToUS, cs, anyFields)
	var reset *classified
	for i := range cls {
		a.Events = append(a.Events, cls[i].Collapse)
		if reset == nil && cls[i].Kind == Reset && !cls[i].Ambiguous {
			reset = &cls[i]
		}
	}
	if !pathIDs {
		markPathSwitches(a.Events)
	}
	a.ResetObserved = reset != nil
	a.WindowBeforeBytes, a.WindowAfterBytes = windows(samples, a.ScopeFromUS, m.AtUS, a.ScopeToUS, cls, reset, anyFields)

	// RTT: measure from the instant the implementation is on the new path:
	// its reset when one was observed, else the end of path validation,
	// else the migration instant.
	in := rttInput{pathIDs: pathIDs, mig: m, defaultUS: cs.defaultRTT, oldGivenUS: opt.OldPathRTT.Microseconds(), anyFields: anyFields}
	in.measured, in.oldPath = oldRTT(samples, m.AtUS, anyFields)
	var startIdx int
	switch {
	case reset != nil:
		startIdx, in.startUS = reset.index, reset.AtUS
		in.startWhy = fmt.Sprintf("the reset at %s", fmtMS(reset.AtUS))
	default:
		in.startUS = m.AtUS
		in.startWhy = fmt.Sprintf("the migration at %s", fmtMS(m.AtUS))
		if done, ok := pathValidationDone(pv, m); ok {
			in.startUS = done
			in.startWhy = fmt.Sprintf("path validation completed at %s", fmtMS(done))
		}
		startIdx = sort.Search(len(samples), func(i int) bool { return samples[i].TimeUS > in.startUS })
	}
	switch {
	case opt.NewPathRTT > 0:
		in.newPathUS, in.newPathSrc = opt.NewPathRTT.Microseconds(), "given"
	case m.PathValidationRTTUS > 0:
		in.newPathUS, in.newPathSrc = m.PathValidationRTTUS, "path-validation round trip"
	}
	return in, startIdx
}

// answer answers Q1 and Q3 once the RTT is attributed.
func (a *Analysis) answer(cs constantSet) {
	a.Q1 = q1(*a, cs)
	a.Q3 = q3(*a)
}

// markPathSwitches explains, in a series without path ids, an unexplained
// drop that follows a reset from a value back at the pre-reset window: the
// previous value is the old path's own window still being logged, so the
// drop is a switch between two paths' series, not a window change. The
// kind stays UNEXPLAINED; only the explanation says what the numbers show.
func markPathSwitches(events []Collapse) {
	var reset *Collapse
	for i := range events {
		e := &events[i]
		if e.Kind == Reset && !e.Ambiguous && reset == nil {
			reset = e
			continue
		}
		if reset != nil && e.Kind == Unexplained && 10*e.PreviousBytes >= 9*reset.PreviousBytes {
			e.Explanation += fmt.Sprintf(" — metrics carry no path id and %d B is back at the pre-reset window (%d B): most likely the old path's series giving way to the new path's, not a window change",
				e.PreviousBytes, reset.PreviousBytes)
		}
	}
}

// pathValidationDone is the first PATH_RESPONSE received (else sent) at or
// after the path validation began.
func pathValidationDone(events []timeline.Event, m Migration) (int64, bool) {
	for _, kind := range []timeline.EventKind{timeline.PathResponseReceived, timeline.PathResponseSent} {
		for _, e := range events {
			if e.Kind == kind && e.TimeUS >= m.PathValidationAtUS && e.TimeUS-m.PathValidationAtUS <= pathValidationWindowUS {
				return e.TimeUS, true
			}
		}
	}
	return 0, false
}

// windows: before = the peak window from the scope start up to the
// collapse — the first classified decrease at or after the migration (the
// migration instant when there is none), including the value in effect at
// the scope start; after = the reset value when a reset was observed, else
// the lowest window after the migration inside the scope.
func windows(samples []timeline.Sample, from, at, to int64, cls []classified, reset *classified, anyFields bool) (before, after int64) {
	collapse := at
	for _, c := range cls {
		if c.AtUS >= at {
			collapse = c.AtUS
			break
		}
	}
	var cur int64
	for _, s := range samples {
		if !reportsCwnd(s, anyFields) {
			continue
		}
		if s.TimeUS > to {
			break
		}
		if s.TimeUS < from {
			cur = s.CwndBytes
			continue
		}
		if s.TimeUS < collapse || (s.TimeUS == collapse && collapse == at) {
			before = max(before, s.CwndBytes, cur)
		}
		if s.TimeUS > at && (after == 0 || s.CwndBytes < after) {
			after = s.CwndBytes
		}
	}
	if before == 0 {
		before = cur
	}
	if reset != nil {
		after = reset.ValueBytes
	}
	return before, after
}

func q1(a Analysis, cs constantSet) Verdict {
	m := a.Migration
	if m.Kind == PortRebind {
		return Verdict{"UNKNOWN", fmt.Sprintf("port-only rebinding (%s → %s): exempt from the RFC 9000 §9.4 reset, so it proves nothing", m.OldAddr, m.NewAddr)}
	}
	scope := fmt.Sprintf("%s–%s", fmtMS(a.ScopeFromUS), fmtMS(a.ScopeToUS))
	if a.ResetObserved {
		for _, e := range a.Events {
			if e.Kind == Reset && !e.Ambiguous {
				rel := "after"
				d := e.AtUS - m.PathValidationAtUS
				if d < 0 {
					rel, d = "before", -d
				}
				why := fmt.Sprintf("window reset to exactly its initial value %d B at %s (from %d B), %s %s %s",
					e.ValueBytes, fmtMS(e.AtUS), e.PreviousBytes, fmtDur(d), rel, anchorName(m))
				if a.RTT.PinnedSamples > 0 {
					why += fmt.Sprintf("; RTT estimator restarted at its default %s", fmtRTT(a.RTT.DefaultUS))
				}
				if m.Kind == PathChange || m.Kind == GivenInstant {
					why += "; the trace does not show whether the address or only the port changed"
				}
				return Verdict{"YES", why}
			}
		}
	}
	var lowest int64
	for _, e := range a.Events {
		if lowest == 0 || e.ValueBytes < lowest {
			lowest = e.ValueBytes
		}
	}
	why := fmt.Sprintf("no window sample took an initial value (%s B) exactly in %s", joinInts(cs.initial, " / "), scope)
	if lowest > 0 && lowest < minInt(cs.initial) {
		why += fmt.Sprintf("; the window fell below it to %d B — a loss cascade, not a reset", lowest)
	}
	for _, e := range a.Events {
		if e.Kind == Reset && e.Ambiguous {
			why += fmt.Sprintf("; %d B at %s hits an initial value but a loss backoff explains it too", e.ValueBytes, fmtMS(e.AtUS))
		}
	}
	if m.Kind != IPMigration {
		return Verdict{"UNKNOWN", why + "; the trace does not prove an IP change (a port-only rebinding is exempt)"}
	}
	return Verdict{"NO", why}
}

// anchorName names the instant the scope is anchored on.
func anchorName(m Migration) string {
	switch {
	case m.Kind == GivenInstant:
		return "the given migration instant"
	case strings.Contains(m.Evidence, "no path-validation frame") || !strings.Contains(m.Evidence, "path validation"):
		return "the migration"
	}
	return "path validation began"
}

func q3(a Analysis) Verdict {
	v := q3Values(a)
	if w := a.RTT.Wire; w != nil {
		if w.Decides {
			return Verdict{w.Answer, fmt.Sprintf("%s (by value alone: %s)", w.Reason, v.Answer)}
		}
		v.Reason += "; Q3 rests on values: " + w.Reason
	}
	return v
}

// q3Values answers Q3 from the RTT values and the trace's own packet
// evidence.
func q3Values(a Analysis) Verdict {
	r := a.RTT
	switch r.Attribution {
	case "new-path":
		why := fmt.Sprintf("first RTT sample after migration (%s) matches the new path (%s), not the old (%s)", fmtRTT(r.FirstAfterUS), fmtRTT(r.NewPathUS), fmtRTT(r.OldPathUS))
		if r.OldPathPacket {
			return Verdict{"NO", why + fmt.Sprintf(", yet it came from the ACK of packet %d sent before the migration", r.OldPathPacketNumber)}
		}
		return Verdict{"YES", why + "; no old-path contribution visible"}
	case "old-path":
		why := fmt.Sprintf("first RTT sample after migration (%s at %s) matches the old path (%s), not the new (%s)",
			fmtRTT(r.FirstAfterUS), fmtMS(r.FirstAfterAtUS), fmtRTT(r.OldPathUS), fmtRTT(r.NewPathUS))
		if r.OldPathPacket {
			why += fmt.Sprintf("; it came from the ACK of packet %d, sent before the migration", r.OldPathPacketNumber)
		}
		if !a.ResetObserved {
			why += "; with no reset, the old path's estimate simply carried over"
		}
		return Verdict{"NO", why}
	case "default":
		return Verdict{"UNKNOWN", fmt.Sprintf("the RTT estimator took no sample after migration (pinned at %s for %s): whether old-path packets would feed it cannot be seen", fmtRTT(r.DefaultUS), fmtDur(r.PinnedUS))}
	case "mixed":
		return Verdict{"UNKNOWN", "metrics carry no path id and interleave the old and new paths' estimators; per-path evidence is needed"}
	case "converging":
		why := fmt.Sprintf("first RTT sample after migration (%s) lies between the old (%s) and new (%s) paths", fmtRTT(r.FirstAfterUS), fmtRTT(r.OldPathUS), fmtRTT(r.NewPathUS))
		if r.OldPathPacket {
			return Verdict{"NO", why + fmt.Sprintf("; it came from the ACK of packet %d, sent before the migration", r.OldPathPacketNumber)}
		}
		return Verdict{"UNKNOWN", why}
	}
	if r.OldPathPacket && r.FirstAfterUS > 0 {
		return Verdict{"NO", fmt.Sprintf("the first RTT sample after migration (%s) came from the ACK of packet %d, sent before the migration, whatever its value says", fmtRTT(r.FirstAfterUS), r.OldPathPacketNumber)}
	}
	return Verdict{"UNKNOWN", "RTT after migration cannot be attributed: " + r.Detail}
}

func sortedSamples(in []timeline.Sample) []timeline.Sample {
	if sort.SliceIsSorted(in, func(i, j int) bool { return in[i].TimeUS < in[j].TimeUS }) {
		return in
	}
	out := append([]timeline.Sample(nil), in...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].TimeUS < out[j].TimeUS })
	return out
}
