package build

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/migaudit/migaudit/audit"
	_ "github.com/migaudit/migaudit/audit/rules"
	"github.com/migaudit/migaudit/data"
	"github.com/migaudit/migaudit/validator"
)

// otherCommits are, per implementation, one real upstream commit besides
// the pin, 4–12 months older (a release tag where the project tags), at
// which the audit's rules and the validator's decision rules must agree too.
var otherCommits = map[string]string{
	"picoquic": "73231489b616e61bef3733cc6b5953c2b91d5348", // master, 2025-10-30 (no release tags)
	"quic-go":  "5b2d2129f8315da41e01eff0a847ab38a34e83a8", // v0.57.0, 2025-11-21
	"quiche":   "f5ab8433f7286958bc0009d2b70cf545b0562641", // 0.25.0, 2026-02-11
	"msquic":   "ac83e946bba303901dd34ff3d1d772e4c4061f1e", // v2.5.6, 2025-11-19
	"ngtcp2":   "fefb3f16d56e1ee306b7067cab1630e14878e6fa", // v1.18.0, 2025-11-23
	"aioquic":  "89712a4b4e86870b7f1ab635248393079ae7f2d1", // main, 2025-01-29 (1.2.0 is 15 months older)
	"lsquic":   "3a42550479471a3b00209588b3ffc238469752b6", // v4.4.0, 2025-12-01
	"mvfst":    "a363bbe83f78710e88d0c119ead1c710b37c977f", // v2025.12.01.00
	"neqo":     "b3338f904e2b9cdd59fbb2ade6b36d1a2ced4eba", // v0.21.0, 2025-12-16
	"quicly":   "e5af5a91b4d53528e725e686cd6e3e18aec94e92", // master, 2025-06-16 (no tags)
	"quinn":    "b2b930a0662b18b2e351264a21e175478bb3c3f1", // quinn-proto-0.11.13, 2025-08-27
	"s2n-quic": "8a3119dc57a088e0ac2ed00ec3457ef76dcde4f6", // v1.70.0, 2025-12-11
	"tquic":    "4dcec0f2fcd6fd4a49366e2c759a169e4e81c48e", // v1.0.0, 2024-08-01
	"xquic":    "79a8a2b2f870ac94b4e8460246af6243f10653fa", // v1.9.1, 2025-11-21
}

// auditAnswers is what the survey would record as the source answer (and
// per-role answers) for each question at commit.
func auditAnswers(t *testing.T, mirrors string, im data.Implementation, commit string) map[string]string {
	t.Helper()
	rep, err := audit.Audit(context.Background(), im, mirrorFor(mirrors, im.Upstream), commit)
	if err != nil && rep == nil {
		t.Fatalf("audit %s at %s: %v", im.Name, commit, err)
	}
	out := map[string]string{}
	for _, a := range answersFrom(rep.Findings) {
		var roles []string
		for _, r := range a.Roles {
			roles = append(roles, r.Role+" "+r.Answer)
		}
		sort.Strings(roles)
		out[a.Question] = a.SourceAnswer
		if len(roles) > 0 {
			out[a.Question] += " [" + strings.Join(roles, ", ") + "]"
		}
	}
	return out
}

// knownDisagreements lists, per "<impl>@<commit prefix> <Qn>", where the
// audit's rules and the validator's decision rules differ, and why. The test
// fails on a disagreement missing here and on an entry that no longer
// disagrees, so the list is always the current one.
var knownDisagreements = map[string]string{
	// Empty: the audit's rules and the validator's agree on all 84 answers
	// (14 pins and one older commit each). The older commits' entries went
	// when the rules learned those designs (mvfst's migrateConnection and
	// rttSample, neqo's classic_cc lookups, picoquic's path_x argument,
	// quicly before do_receive).
}

// TestAuditAndValidatorAgree runs the audit (answersFrom over audit.Audit,
// exactly what the survey records) and the validator's independent decision
// rules on every implementation at its pin and at one older commit, and
// compares the source answer and the per-role answers.
func TestAuditAndValidatorAgree(t *testing.T) {
	mirrors := os.Getenv("MIGAUDIT_MIRRORS")
	if mirrors == "" {
		t.Skip("MIGAUDIT_MIRRORS not set: the agreement test reads the fourteen upstream mirrors")
	}
	impls, err := data.Implementations()
	if err != nil {
		t.Fatal(err)
	}
	var table []string
	seen := map[string]bool{}
	agree, total := 0, 0
	for _, im := range impls {
		other, ok := otherCommits[im.Name]
		if !ok {
			t.Errorf("%s: no other commit chosen", im.Name)
			continue
		}
		for _, c := range []string{im.Commit, other} {
			if _, err := os.Stat(mirrorFor(mirrors, im.Upstream)); err != nil {
				t.Skipf("no mirror for %s under %s", im.Name, mirrors)
			}
			au := auditAnswers(t, mirrors, im, c)
			dec, err := validator.Decide(mirrors, im.Name, im.Upstream, c)
			if err != nil {
				t.Fatalf("validator decision %s at %s: %v", im.Name, c, err)
			}
			for _, q := range []string{"Q1", "Q2", "Q3"} {
				total++
				va := decisionText(dec[q])
				key := fmt.Sprintf("%s@%s %s", im.Name, c[:8], q)
				mark := "agree"
				if va == au[q] {
					agree++
				} else {
					mark = "DISAGREE"
					seen[key] = true
					if why, ok := knownDisagreements[key]; ok {
						mark += " (listed: " + why + ")"
					} else {
						t.Errorf("%s: audit %q, validator %q — not listed in knownDisagreements", key, au[q], va)
					}
				}
				table = append(table, fmt.Sprintf("%-26s audit %-50s validator %-50s %s", key, au[q], va, mark))
			}
		}
	}
	for key := range knownDisagreements {
		if !seen[key] {
			t.Errorf("%s is listed as a disagreement but the rules agree now: remove it", key)
		}
	}
	t.Logf("audit vs validator decision rules, %d of %d answers agree:\n%s", agree, total, strings.Join(table, "\n"))
}

func decisionText(d validator.Decision) string {
	s := d.Answer
	if len(d.Roles) > 0 {
		var roles []string
		for r, a := range d.Roles {
			roles = append(roles, r+" "+a)
		}
		sort.Strings(roles)
		s += " [" + strings.Join(roles, ", ") + "]"
	}
	return s
}
