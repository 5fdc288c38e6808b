package build

import (
	"testing"

	"github.com/migaudit/migaudit/audit"
)

// TestAnswersFromRoles: with no role-less verdict, the per-role answers are
// combined by the audit's own rule (query.Combine): a role that does not
// migrate says nothing about the one that does.
func TestAnswersFromRoles(t *testing.T) {
	tests := []struct {
		name  string
		roles map[string]audit.Answer
		want  string
	}{
		{"one role complies, the other has nothing to do", map[string]audit.Answer{"migrating": audit.Yes, "observing": audit.NA}, "YES"},
		{"roles disagree, one complies", map[string]audit.Answer{"migrating": audit.Yes, "observing": audit.No}, "ASYMMETRIC"},
		{"roles disagree, none complies", map[string]audit.Answer{"client": audit.No, "server": audit.Split}, "ROLE_DEPENDENT"},
		{"roles agree", map[string]audit.Answer{"client": audit.No, "server": audit.No}, "NO"},
	}
	for _, tc := range tests {
		var fs []audit.Finding
		for role, a := range tc.roles {
			fs = append(fs, audit.Finding{Question: audit.Q1, Role: role, Answer: a})
		}
		for _, a := range answersFrom(fs) {
			if a.Question == string(audit.Q1) && a.SourceAnswer != tc.want {
				t.Errorf("%s: %v gives %s, want %s", tc.name, tc.roles, a.SourceAnswer, tc.want)
			}
		}
	}
}
