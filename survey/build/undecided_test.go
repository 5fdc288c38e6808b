package build

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/migaudit/migaudit/discriminator"
	"github.com/migaudit/migaudit/survey"
	"github.com/migaudit/migaudit/validator"
)

// The survey and the validator apply one rule to undecided repetitions
// (docs/validator-decisions.md): checked on repetitions whose trace shows
// no IP change (quic-go's and ngtcp2's qlogs log no addresses after the
// handshake), with and without the run's own record of the move.
func TestUndecidedRepetitionsOneRule(t *testing.T) {
	cases := []struct {
		name   string
		reset  bool
		stdout string // the run's record of the peer's move, if any
		want   string // the repetition's Q1
	}{
		{"no reset, the run saw the IP change", false, `{"ev":"peer_address","from":"198.18.1.2:5000","to":"198.18.2.2:6000"}`, "NO"},
		{"no reset, only the port changed", false, `{"ev":"peer_address","from":"198.18.1.2:5000","to":"198.18.1.2:6000"}`, "UNKNOWN"},
		{"no reset, no record of the move", false, "", "UNKNOWN"},
		{"reset, the run saw the IP change", true, `{"ev":"peer_address","from":"198.18.1.2:5000","to":"198.18.2.2:6000"}`, "YES"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rep := survey.Repetition{Migration: survey.Migration{Kind: "path-change"}, ResetObserved: tc.reset,
				Q1: map[bool]string{true: "YES", false: "UNKNOWN"}[tc.reset]} // as the discriminator leaves it
			dir := t.TempDir()
			os.WriteFile(filepath.Join(dir, "server.stdout"), []byte(tc.stdout+"\n"), 0o644)
			enrichFromManifest(&rep, map[string]any{}, dir)
			settleQ1(&rep)
			if rep.Q1 != tc.want {
				t.Errorf("builder: q1 %s (kind %s), want %s", rep.Q1, rep.Migration.Kind, tc.want)
			}
			if v := validator.RepetitionQ1(rep.Migration.Kind, tc.reset); v != rep.Q1 {
				t.Errorf("validator's rule gives %s, the builder %s (kind %s)", v, rep.Q1, rep.Migration.Kind)
			}
		})
	}
}

// Five repetitions, one of which did not reset while its trace showed no
// IP change: the live answer both give, end to end through Run.
func TestUndecidedLiveAnswerAgrees(t *testing.T) {
	root, mirrors := world(t, "YES")
	noStudy(t)
	// rep2: no reset, the trace logs no addresses, the run logs an IP move.
	rep := filepath.Join(root, "data", "evidence", "quic-go", "rep2")
	for _, f := range []string{"server.sqlog.gz", "manifest.json", "server.stdout"} {
		b, _ := os.ReadFile(filepath.Join(root, "data", "evidence", "quic-go", "rep1", f))
		write(t, filepath.Join(rep, f), b)
	}
	an := discriminator.Analysis{Implementation: "quic-go", Format: "quicgo-qlog", Vantage: "server",
		Migration:   discriminator.Migration{Kind: "path-change", AtUS: 5_000_000, Evidence: "path_challenge received"},
		ScopeFromUS: 4_950_000, ScopeToUS: 7_000_000, WindowBeforeBytes: 100000, WindowAfterBytes: 90000,
		RTT: discriminator.RTTAttribution{Attribution: "unknown"},
		Q1:  discriminator.Verdict{Answer: "UNKNOWN"}, Q3: discriminator.Verdict{Answer: "UNKNOWN"}}
	b, _ := json.Marshal(an)
	write(t, filepath.Join(rep, "analysis.json"), b)
	s, err := Run(context.Background(), Options{RepoRoot: root, Mirrors: mirrors, Only: []string{"quic-go"}, Audit: fakeAudit}, nil)
	if err != nil {
		t.Fatal(err)
	}
	l := s.Find("quic-go").Live
	var q1s []string
	for _, r := range l.Repetitions {
		q1s = append(q1s, validator.RepetitionQ1(r.Migration.Kind, r.ResetObserved))
	}
	want, msg := validator.LiveAnswer(q1s)
	got := s.Find("quic-go").Answer("Q1").LiveAnswer
	if got != want || want != "UNKNOWN" {
		t.Errorf("survey live Q1 %q, the validator's rule %q (%s); want UNKNOWN (1 YES, 1 NO)", got, want, msg)
	}
}
