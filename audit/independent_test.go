package audit

import (
	"strings"
	"testing"
)

func TestMarkDisputes(t *testing.T) {
	fs := func() []Finding {
		return []Finding{
			{Question: Q1, Role: "migrating", Answer: No},
			{Question: Q1, Role: "both", Answer: Yes},
			{Question: Q2, Answer: Unknown},
			{Question: Q3, Role: "both", Answer: Split},
			{Question: ConstInitialWindow, Constant: &ConstantFinding{Value: 1}},
		}
	}
	tests := []struct {
		name     string
		readings map[Question]Reading
		disputed int
		want     map[int]string // finding index -> "disputed:…" or "independent:…"
	}{
		{"agreement", map[Question]Reading{Q1: {Answer: "YES"}, Q3: {Answer: "SPLIT"}}, 0, nil},
		{"a confident answer contradicted", map[Question]Reading{Q1: {Answer: "NO", Facts: []string{"a.c:3 nothing dispatches"}}}, 1,
			map[int]string{1: "disputed:the independent reading says NO (a.c:3 nothing dispatches)"}},
		{"audit UNKNOWN, reading confident", map[Question]Reading{Q2: {Answer: "NO"}}, 0, map[int]string{2: "independent:the independent reading says NO"}},
		{"reading UNKNOWN", map[Question]Reading{Q3: {Answer: "UNKNOWN", Facts: []string{"not found: x"}}}, 0,
			map[int]string{3: "independent:the independent reading cannot decide (not found: x)"}},
		{"no reading", nil, 0, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := fs()
			if n := markDisputes(got, tt.readings); n != tt.disputed {
				t.Errorf("disputed = %d, want %d", n, tt.disputed)
			}
			for i, f := range got {
				mark := ""
				if f.Disputed != "" {
					mark = "disputed:" + f.Disputed
				} else if f.Independent != "" {
					mark = "independent:" + f.Independent
				}
				if mark != tt.want[i] {
					t.Errorf("finding %d (%s %s): %q, want %q", i, f.Question, f.Role, mark, tt.want[i])
				}
			}
		})
	}
}

func TestTableAndStrictOnDispute(t *testing.T) {
	var b strings.Builder
	r := &Report{Impl: "x", Commit: strings.Repeat("b", 40), Findings: []Finding{{Question: Q1, Role: "both", Answer: Yes, Disputed: "the independent reading says NO"}}, Disputed: 1}
	if err := Print(&b, "table", []*Report{r}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "DISPUTED: the independent reading says NO") {
		t.Errorf("table does not mark the dispute:\n%s", b.String())
	}
	if err := strictError([]*Report{r}); err == nil || !strings.Contains(err.Error(), "x at bbbbbbbbbbbb: 1") {
		t.Errorf("strict error = %v", err)
	}
	r.Disputed = 0
	if err := strictError([]*Report{r}); err != nil {
		t.Errorf("strict error without dispute: %v", err)
	}
}
