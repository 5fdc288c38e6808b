package build

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/migaudit/migaudit/audit"
	"github.com/migaudit/migaudit/data"
	"github.com/migaudit/migaudit/discriminator"
	"github.com/migaudit/migaudit/survey"
)

func write(t *testing.T, p string, b []byte) {
	t.Helper()
	os.MkdirAll(filepath.Dir(p), 0o755)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func ev(path string, line int, excerpt, kind string) audit.Evidence {
	return audit.Evidence{Path: path, Line: line, Excerpt: excerpt, Kind: kind,
		Permalink: audit.Permalink("https://github.com/quic-go/quic-go", "2cfe6ee0b5ac905f7f7cecc0f2107d3b7bec2e93", path, line)}
}

// world lays out a repository root with one own-run repetition of quic-go
// whose analysis says q1, and a mirror directory.
func world(t *testing.T, q1 string) (root, mirrors string) {
	root, mirrors = t.TempDir(), t.TempDir()
	schema, err := os.ReadFile("../../data/survey.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(root, "data", "survey.schema.json"), schema)
	rep := filepath.Join(root, "data", "evidence", "quic-go", "rep1")
	write(t, filepath.Join(rep, "server.sqlog.gz"), []byte("trace bytes"))
	write(t, filepath.Join(rep, "manifest.json"), []byte(`{"implementation":"quic-go","version":"v0.61.0","scenario":"standard",
		"paths":{"A":{"rtt_us":20000},"B":{"rtt_us":40000}},"calibration":{"calibrated":true},"result":{"server_trace":"server.sqlog.gz"}}`))
	write(t, filepath.Join(rep, "server.stdout"), []byte(`2026/12/02 peer {"ev":"peer_address","from":"198.18.1.2:5000","to":"198.18.2.2:6000"}`+"\n"))
	an := discriminator.Analysis{Implementation: "quic-go", Trace: "results/x/rep1/server.sqlog.gz", Format: "quicgo-qlog", Vantage: "server",
		Migration:   discriminator.Migration{Kind: "path-change", AtUS: 5_000_000, Evidence: "path_challenge received"},
		ScopeFromUS: 4_950_000, ScopeToUS: 7_000_000, WindowBeforeBytes: 100000, WindowAfterBytes: 40960, ResetObserved: q1 == "YES",
		Events: []discriminator.Collapse{{Kind: "RESET", AtUS: 5_040_000, ValueBytes: 40960, PreviousBytes: 70000}},
		RTT:    discriminator.RTTAttribution{FirstAfterUS: 40500, Attribution: "new-path", NewPathUS: 40000},
		Q1:     discriminator.Verdict{Answer: q1}, Q3: discriminator.Verdict{Answer: "YES"}}
	b, _ := json.Marshal(an)
	write(t, filepath.Join(rep, "analysis.json"), b)
	os.MkdirAll(filepath.Join(mirrors, "quic-go+quic-go", "repo", "objects"), 0o755) // a bare repository's shape
	os.WriteFile(filepath.Join(mirrors, "quic-go+quic-go", "repo", "HEAD"), []byte("ref: refs/heads/master\n"), 0o644)
	return root, mirrors
}

func fakeAudit(_ context.Context, im data.Implementation, _ string) ([]audit.Finding, error) {
	if im.Name != "quic-go" {
		return nil, errors.New("no audit rules registered")
	}
	return []audit.Finding{
		{Impl: "quic-go", Question: audit.Q1, Role: "both", Answer: audit.Yes, Mechanism: "controller replaced",
			Evidence: []audit.Evidence{ev("connection.go", 915, "c.sentPacketHandler.MigratedPath(now, initialPacketSize)", "call"),
				ev("connection.go", 1295, "c.sentPacketHandler.MigratedPath(p.rcvTime, size)", "call"),
				ev("internal/ackhandler/sent_packet_handler.go", 1120, "func (h *sentPacketHandler) MigratedPath(now monotime.Time, s protocol.ByteCount) {", "definition"),
				ev("internal/ackhandler/interfaces.go", 38, "MigratedPath(now monotime.Time, initialMaxPacketSize protocol.ByteCount)", "mention")}},
		{Impl: "quic-go", Question: audit.Q2, Role: "both", Answer: audit.No, Mechanism: "fixed default"},
		{Impl: "quic-go", Question: audit.Q3, Role: "both", Answer: audit.Yes, Mechanism: "lost and removed"},
		{Impl: "quic-go", Question: audit.ConstInitialWindow, Constant: &audit.ConstantFinding{Expr: "32*S", Params: map[string]float64{"S": 1280}, Value: 40960, Arithmetic: "32*1280 = 40960"},
			Evidence: []audit.Evidence{ev("internal/congestion/cubic_sender.go", 20, "initialCongestionWindow = 32", "constant")}},
	}, nil
}

func TestBuildJoinsSourceAndLive(t *testing.T) {
	root, mirrors := world(t, "YES")
	out := filepath.Join(root, "data", "survey_results.json")
	noStudy(t)
	s, err := Run(context.Background(), Options{Out: out, RepoRoot: root, Mirrors: mirrors, Only: []string{"quic-go", "picoquic"}, Audit: fakeAudit, AllowPartial: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := survey.Read(out); err != nil {
		t.Fatalf("written survey does not re-read: %v", err)
	}
	qg := s.Find("quic-go")
	if a := qg.Answer("Q1"); a.Answer != "YES" || a.Established != survey.BySourceLive || a.Agreement != survey.Agree {
		t.Errorf("Q1 = %+v", a)
	}
	r := qg.Reachability
	if r == nil || r.CallSites != 2 || r.Handlers == nil || *r.Handlers != 1 || r.Dead {
		t.Fatalf("reachability = %+v", r)
	}
	rep := qg.Live.Repetitions[0]
	if qg.Live.Origin != survey.OwnRuns || rep.Migration.Kind != "ip" || rep.Migration.NewAddr != "198.18.2.2:6000" || rep.NewPathRTTUS != 40000 {
		t.Errorf("repetition = %+v", rep)
	}
	if rep.Trace != filepath.Join("data", "evidence", "quic-go", "rep1", "server.sqlog.gz") {
		t.Errorf("trace path %q is not repository-relative", rep.Trace)
	}
	if len(qg.Constants) != 1 || qg.Constants[0].Source == nil || qg.Constants[0].Source.Line != 20 {
		t.Errorf("constants = %+v", qg.Constants)
	}
	pq := s.Find("picoquic")
	if pq.SourceAudited || !strings.Contains(strings.Join(pq.Notes, " "), "no mirror") {
		t.Errorf("picoquic without a mirror: audited=%v notes=%v", pq.SourceAudited, pq.Notes)
	}
	if pq.Answer("Q1").Answer != "UNKNOWN" {
		t.Errorf("picoquic Q1 without any evidence = %s", pq.Answer("Q1").Answer)
	}
	if s.CrossCutting.F1.CallSites["quic-go"] != 2 {
		t.Errorf("F1 = %+v", s.CrossCutting.F1)
	}
}

func TestBuildReportsDisagreement(t *testing.T) {
	root, mirrors := world(t, "NO")
	s, err := Run(context.Background(), Options{RepoRoot: root, Mirrors: mirrors, Only: []string{"quic-go"}, Audit: fakeAudit}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Disagreements) != 1 || s.Disagreements[0].Question != "Q1" || s.Disagreements[0].Source != "YES" || s.Disagreements[0].Live != "NO" {
		t.Fatalf("disagreements = %+v", s.Disagreements)
	}
	if a := s.Find("quic-go").Answer("Q1"); a.Agreement != survey.Disagree || a.Answer != "YES" {
		t.Errorf("Q1 = %+v", a)
	}
}

func TestCombine(t *testing.T) {
	f := func(as ...audit.Answer) []audit.Finding {
		var out []audit.Finding
		for _, a := range as {
			out = append(out, audit.Finding{Answer: a})
		}
		return out
	}
	tests := []struct {
		in   []audit.Finding
		want string
	}{
		{f(audit.No, audit.No), "NO"},
		{f(audit.Yes, audit.Inert), "YES"}, // a dead hook does not undo per-path compliance
		{f(audit.No, audit.Split), "SPLIT"},
		{f(audit.Yes, audit.No), "UNKNOWN"},
		{f(audit.Unknown, audit.No), "NO"},
		{nil, ""},
	}
	for _, tc := range tests {
		if got := combine(tc.in); got != tc.want {
			t.Errorf("combine(%v) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

func TestReferenceTraceIsAnalysedNotCopied(t *testing.T) {
	ref := filepath.Join("..", "..", "..", "shared", "reference")
	if _, err := os.Stat(filepath.Join(ref, "traces", "msquic_server.log.gz")); err != nil {
		t.Skip("../shared/reference absent")
	}
	root, mirrors := world(t, "YES")
	s, err := Run(context.Background(), Options{RepoRoot: root, Mirrors: mirrors, Evidence: ref, Only: []string{"msquic"}, Audit: fakeAudit}, nil)
	if err != nil {
		t.Fatal(err)
	}
	l := s.Find("msquic").Live
	if l == nil || l.Origin != survey.Reference || l.Repetitions[0].Trace != "phase2-deliverables/evidence/06_sample_traces/msquic_server.log.gz" {
		t.Fatalf("live = %+v", l)
	}
	r := l.Repetitions[0]
	if !r.ResetObserved || r.WindowAfterBytes != 12200 || r.RTT.FirstAfterUS != 333000 || r.Migration.Kind != "ip" {
		t.Errorf("msquic reference repetition = reset %v after %d first RTT %d kind %s", r.ResetObserved, r.WindowAfterBytes, r.RTT.FirstAfterUS, r.Migration.Kind)
	}
}

func TestReferenceKeptBesideOwnRuns(t *testing.T) {
	ref := filepath.Join("..", "..", "..", "shared", "reference")
	if _, err := os.Stat(filepath.Join(ref, "traces", "quicgo_server.sqlog.gz")); err != nil {
		t.Skip("../shared/reference absent")
	}
	root, mirrors := world(t, "YES")
	out := filepath.Join(root, "data", "survey_results.json")
	s, err := Run(context.Background(), Options{Out: out, RepoRoot: root, Mirrors: mirrors, Evidence: ref, Only: []string{"quic-go"}, Audit: fakeAudit}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := survey.Read(out); err != nil {
		t.Fatalf("survey with a second source does not re-read against the schema: %v", err)
	}
	l := s.Find("quic-go").Live
	if l == nil || l.Origin != survey.OwnRuns || l.Retained != 1 {
		t.Fatalf("live = %+v, want the one own repetition first", l)
	}
	r := l.Reference
	if r == nil || r.Origin != survey.Reference || len(r.Repetitions) != 1 || r.Repetitions[0].Trace != "phase2-deliverables/evidence/06_sample_traces/quicgo_server.sqlog.gz" {
		t.Fatalf("reference beside own runs = %+v", r)
	}
	if r.Repetitions[0].Migration.Kind == "" || r.Repetitions[0].TraceSHA256 == "" {
		t.Errorf("reference repetition not analysed: %+v", r.Repetitions[0])
	}
	// Without the study there is no second source.
	noStudy(t)
	s, err = Run(context.Background(), Options{RepoRoot: root, Mirrors: mirrors, Only: []string{"quic-go"}, Audit: fakeAudit}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if s.Find("quic-go").Live.Reference != nil {
		t.Error("a reference without the study")
	}
}

// noStudy hides every mirror and cache clone of the study: picoquic and
// msquic then have no live part.
func noStudy(t *testing.T) {
	t.Setenv("MIGAUDIT_MIRRORS", "")
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
}

// addPVDistinct lays out pv-distinct repetitions of quic-go under
// data/evidence/quic-go/pv-distinct/rep<N>, one per Q2 answer.
func addPVDistinct(t *testing.T, root string, answers ...string) {
	for i, a := range answers {
		rep := filepath.Join(root, "data", "evidence", "quic-go", "pv-distinct", "rep"+string(rune('1'+i)))
		write(t, filepath.Join(rep, "server.sqlog.gz"), []byte("trace bytes "+a))
		write(t, filepath.Join(rep, "manifest.json"), []byte(`{"implementation":"quic-go","version":"v0.61.0","scenario":"pv-distinct",
		"paths":{"A":{"rtt_us":20000},"B":{"rtt_us":40000}},"result":{"server_trace":"server.sqlog.gz"}}`))
		an := discriminator.Analysis{Implementation: "quic-go", Trace: "server.sqlog.gz", Format: "quicgo-qlog", Vantage: "server",
			Migration: discriminator.Migration{Kind: "path-change", AtUS: 5_000_000, Evidence: "path_challenge received"}, ResetObserved: true,
			RTT: discriminator.RTTAttribution{FirstAfterUS: 41000, Attribution: "new-path"}, Events: []discriminator.Collapse{},
			Q1: discriminator.Verdict{Answer: "YES"}, Q3: discriminator.Verdict{Answer: "YES"},
			Q2: &discriminator.Q2Live{Answer: a, PVRTTUS: 131_000, DataRTTUS: 41_000, FirstRTTAfterUS: 100_000, Detail: "validation round trip 131.00 ms on the wire"}}
		b, _ := json.Marshal(an)
		write(t, filepath.Join(rep, "analysis.json"), b)
	}
}

// The pv-distinct repetitions land in live_scenarios, not in live, carry
// their q2, and decide Q2's live answer under the decided-repetition rule.
func TestBuildPVDistinctAnswersQ2(t *testing.T) {
	cases := []struct {
		name    string
		answers []string
		live    string
	}{
		{"all NO", []string{"NO", "NO"}, "NO"},
		{"one undecided", []string{"NO", "UNKNOWN"}, "NO"},
		{"they differ", []string{"NO", "YES"}, "UNKNOWN"},
		{"none decides", []string{"UNKNOWN"}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			root, mirrors := world(t, "YES")
			addPVDistinct(t, root, c.answers...)
			noStudy(t)
			out := filepath.Join(root, "data", "survey_results.json")
			s, err := Run(context.Background(), Options{Out: out, RepoRoot: root, Mirrors: mirrors, Only: []string{"quic-go"}, Audit: fakeAudit, AllowPartial: true}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := survey.Read(out); err != nil {
				t.Fatalf("written survey does not re-read against the schema: %v", err)
			}
			qg := s.Find("quic-go")
			if len(qg.Live.Repetitions) != 1 {
				t.Errorf("live has %d repetitions, want the 1 standard one", len(qg.Live.Repetitions))
			}
			pv := qg.Scenario(survey.PVDistinct)
			if pv == nil || len(pv.Repetitions) != len(c.answers) {
				t.Fatalf("live_scenarios = %+v", qg.LiveScenarios)
			}
			if q := pv.Repetitions[0].Q2; q == nil || q.Answer != c.answers[0] || q.PVRTTUS != 131_000 || q.DataRTTUS != 41_000 || q.FirstRTTAfterUS != 100_000 {
				t.Errorf("rep1 q2 = %+v", q)
			}
			a := qg.Answer("Q2")
			if a.LiveAnswer != c.live {
				t.Errorf("Q2 live answer %q, want %q (%+v)", a.LiveAnswer, c.live, a)
			}
			if c.live == "UNKNOWN" && !strings.Contains(a.Detail, "repetitions disagree: 1 YES, 1 NO") {
				t.Errorf("Q2 detail %q does not say the repetitions disagree", a.Detail)
			}
		})
	}
}

// An instrumented build's repetitions (data/evidence/<impl>/instrumented)
// are the live findings' evidence, never the live answer's: their scenario
// is the standard one, and counting them would mix two builds in one row.
func TestBuildKeepsInstrumentedRunsApart(t *testing.T) {
	root, mirrors := world(t, "YES")
	rep := filepath.Join(root, "data", "evidence", "quic-go", InstrumentedDir, "rep1")
	write(t, filepath.Join(rep, "server.sqlog.gz"), []byte("instrumented trace bytes"))
	write(t, filepath.Join(rep, "manifest.json"), []byte(`{"implementation":"quic-go","version":"v0.61.0","scenario":"standard",
		"paths":{"A":{"rtt_us":20000},"B":{"rtt_us":40000}},"result":{"server_trace":"server.sqlog.gz"}}`))
	an := discriminator.Analysis{Implementation: "quic-go", Trace: "server.sqlog.gz", Format: "quicgo-qlog", Vantage: "server",
		Migration: discriminator.Migration{Kind: "path-change", AtUS: 5_000_000, Evidence: "path_challenge received"},
		RTT:       discriminator.RTTAttribution{FirstAfterUS: 333000, Attribution: "default"}, Events: []discriminator.Collapse{},
		Q1: discriminator.Verdict{Answer: "NO"}, Q3: discriminator.Verdict{Answer: "UNKNOWN"}}
	b, _ := json.Marshal(an)
	write(t, filepath.Join(rep, "analysis.json"), b)
	noStudy(t)
	out := filepath.Join(root, "data", "survey_results.json")
	s, err := Run(context.Background(), Options{Out: out, RepoRoot: root, Mirrors: mirrors, Only: []string{"quic-go"}, Audit: fakeAudit, AllowPartial: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	qg := s.Find("quic-go")
	if len(qg.Live.Repetitions) != 1 || len(qg.LiveScenarios) != 0 {
		t.Errorf("live has %d repetitions and %d other scenarios, want the 1 standard repetition alone", len(qg.Live.Repetitions), len(qg.LiveScenarios))
	}
}
