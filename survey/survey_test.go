package survey

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const schemaPath = "../data/survey.schema.json"

// loadFixture reads the hand-made survey input and derives everything
// derived, as the survey command does.
func loadFixture(t *testing.T) *Survey {
	t.Helper()
	b, err := os.ReadFile("testdata/fixture_input.json")
	if err != nil {
		t.Fatal(err)
	}
	var s Survey
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	Finalise(&s)
	return &s
}

func TestFinaliseComputesCrossCutting(t *testing.T) {
	s := loadFixture(t)
	cc := s.CrossCutting
	if got := strings.Join(cc.F1.Implementations, ","); got != "picoquic,quiche" {
		t.Errorf("F1 dead hooks = %q, want picoquic,quiche", got)
	}
	if cc.F1.CallSites["ngtcp2"] != 6 || cc.F1.CallSites["quic-go"] != 2 {
		t.Errorf("F1 call sites = %v", cc.F1.CallSites)
	}
	if cc.F2.Distinct != 5 || cc.F2.Of != 5 {
		t.Errorf("F2 = %d of %d, want 5 of 5", cc.F2.Distinct, cc.F2.Of)
	}
	if len(cc.F3.Users) != 0 || cc.F3.Of != 5 {
		t.Errorf("F3 = %v of %d", cc.F3.Users, cc.F3.Of)
	}
	// Changing an entry changes the finding: it is computed, not stored.
	s.Find("quiche").Reachability.CallSites = 1
	s.Find("quic-go").Answer("Q2").SourceAnswer = "YES"
	Finalise(s)
	if got := strings.Join(s.CrossCutting.F1.Implementations, ","); got != "picoquic" {
		t.Errorf("F1 after giving quiche a caller = %q", got)
	}
	if got := strings.Join(s.CrossCutting.F3.Users, ","); got != "quic-go" {
		t.Errorf("F3 after quic-go Q2 YES = %q", got)
	}
}

func TestReconcile(t *testing.T) {
	tests := []struct {
		name                  string
		q, src, live, vantage string
		roles                 []RoleAnswer
		answer, est, agree    string
		disagreement          bool
	}{
		{"both agree", "Q1", "YES", "YES", "server", nil, "YES", BySourceLive, Agree, false},
		{"source only", "Q1", "NO", "", "", nil, "NO", BySource, SourceOnly, false},
		{"live only", "Q3", "", "YES", "server", nil, "YES", ByLive, LiveOnly, false},
		{"neither", "Q2", "", "", "", nil, "UNKNOWN", BySource, NoAnswer, false},
		{"disagree kept and reported", "Q1", "YES", "NO", "server", nil, "YES", BySourceLive, Disagree, true},
		{"asymmetric observer matches", "Q1", "ASYMMETRIC", "YES", "server",
			[]RoleAnswer{{"observing", "YES", ""}, {"migrating", "NO", ""}}, "ASYMMETRIC", BySourceLive, Consistent, false},
		{"asymmetric wrong role", "Q1", "ASYMMETRIC", "YES", "client",
			[]RoleAnswer{{"observing", "YES", ""}, {"migrating", "NO", ""}}, "ASYMMETRIC", BySourceLive, Disagree, true},
		{"inert looks like no", "Q2", "INERT", "NO", "server", nil, "INERT", BySourceLive, Consistent, false},
		{"split rtt facet", "Q3", "SPLIT", "YES", "server", nil, "SPLIT", BySourceLive, Consistent, false},
		{"split, the other facet", "Q3", "SPLIT", "NO", "server", nil, "SPLIT", BySourceLive, Consistent, false},
		{"split is a Q3 category", "Q1", "SPLIT", "NO", "server", nil, "SPLIT", BySourceLive, Disagree, true},
		{"split by role vs no", "Q3", "SPLIT", "NO", "server", []RoleAnswer{{"observing", "YES", ""}}, "SPLIT", BySourceLive, Disagree, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := Answer{Question: tc.q, SourceAnswer: tc.src, LiveAnswer: tc.live, Roles: tc.roles}
			d := Reconcile("x", &a, tc.vantage)
			if a.Answer != tc.answer || a.Established != tc.est || a.Agreement != tc.agree {
				t.Errorf("got %s/%s/%s, want %s/%s/%s", a.Answer, a.Established, a.Agreement, tc.answer, tc.est, tc.agree)
			}
			if (d != nil) != tc.disagreement {
				t.Errorf("disagreement = %v, want %v", d, tc.disagreement)
			}
			if a.RequirementLevel != map[string]string{"Q1": "MUST", "Q2": "MAY", "Q3": "MUST"}[tc.q] {
				t.Errorf("requirement level %q", a.RequirementLevel)
			}
		})
	}
}

func TestLiveAnswersIgnorePortOnly(t *testing.T) {
	l := &Live{Repetitions: []Repetition{
		{Migration: Migration{Kind: "ip"}, Q1: "YES", Q3: "YES", RTT: RTT{Attribution: "default"}},
		{Migration: Migration{Kind: "port-only"}, Q1: "NO", Q3: "NO", RTT: RTT{Attribution: "old-path"}},
	}}
	q1, q2, q3, _ := LiveAnswers(l)
	if q1 != "YES" || q3 != "YES" || q2 != "NO" {
		t.Errorf("got %s %s %s", q1, q2, q3)
	}
	l.Repetitions = append(l.Repetitions, Repetition{Migration: Migration{Kind: "ip"}, Q1: "NO", Q3: "YES", RTT: RTT{Attribution: "new-path"}})
	q1, q2, _, d := LiveAnswers(l)
	if q1 != "UNKNOWN" || q2 != "" || !strings.Contains(d, "1 YES, 1 NO") {
		t.Errorf("mixed: got %s %q %q", q1, q2, d)
	}
}

func TestWriteValidatesAndIsAtomic(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "survey_results.json")
	s := loadFixture(t)
	if err := WriteWith(out, schemaPath, s); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(out)
	if _, err := ReadWith(out, schemaPath); err != nil {
		t.Fatalf("re-read: %v", err)
	}
	bad := []struct {
		name   string
		mutate func(*Survey)
		want   string
	}{
		{"unknown answer", func(s *Survey) { s.Implementations[0].Answers[0].Answer = "MAYBE" }, "/implementations/0/answers/0/answer"},
		{"short commit", func(s *Survey) { s.Implementations[1].Commit = "2cfe6ee0" }, "/implementations/1/commit"},
		{"Q2 as MUST", func(s *Survey) { s.Implementations[1].Answers[1].RequirementLevel = "MUST" }, "requirement_level"},
		{"bad permalink", func(s *Survey) { s.Implementations[1].Reachability.Calls[0].Permalink = "connection.go:915" }, "permalink"},
		{"negative window", func(s *Survey) { s.Implementations[1].Live.Repetitions[0].WindowAfterBytes = -1 }, "at /implementations/1/live/repetitions/0/window_after_bytes: "},
		{"no date-time", func(s *Survey) { s.GeneratedAt = "2026-13-01T00:00:00Z" }, `at /generated_at: "2026-13-01T00:00:00Z" is not a valid date-time`},
		{"empty generator", func(s *Survey) { s.GeneratedBy = "" }, "at /generated_by: "},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			s := loadFixture(t)
			tc.mutate(s)
			err := WriteWith(out, schemaPath, s)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want mention of %s", err, tc.want)
			}
			after, _ := os.ReadFile(out)
			if !bytes.Equal(before, after) {
				t.Fatal("a rejected survey changed the file on disk")
			}
			left, _ := filepath.Glob(filepath.Join(dir, ".*tmp*"))
			if len(left) != 0 {
				t.Fatalf("temporary files left behind: %v", left)
			}
		})
	}
}
