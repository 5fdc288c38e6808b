package validator

import (
	"strings"
	"testing"

	"github.com/migaudit/migaudit/survey"
)

func TestRequirementDiffers(t *testing.T) {
	cases := []struct {
		name, q, text string
		fail          string // "" = passes; else a word of the message
	}{
		{"the survey's own Q1", "Q1", survey.RequirementText("Q1"), ""},
		{"the survey's own Q2", "Q2", survey.RequirementText("Q2"), ""},
		{"the survey's own Q3", "Q3", survey.RequirementText("Q3"), ""},
		{"§9.4 → §9.3", "Q1", strings.Replace(survey.RequirementText("Q1"), "§9.4", "§9.3", 1), "cites RFC 9000 §9.3 ¶2"},
		{"paragraphs swapped", "Q3", strings.Replace(survey.RequirementText("Q3"), "¶1", "¶2", 1), "cites RFC 9000 §9.4 ¶2"},
		{"RFC 9002 → 9000", "Q2", strings.Replace(survey.RequirementText("Q2"), "RFC 9002", "RFC 9000", 1), "cites RFC 9000 §6.2.2"},
		{"MUST NOT → SHOULD NOT", "Q3", strings.Replace(survey.RequirementText("Q3"), "MUST NOT", "SHOULD NOT", 1), "not in RFC 9000 §9.4 ¶1"},
		{"a word dropped", "Q1", strings.Replace(survey.RequirementText("Q1"), " immediately", "", 1), "not in RFC 9000"},
		{"quotes reordered", "Q1", `RFC 9000 §9.4 ¶2: "to initial values" for "an endpoint MUST immediately reset"`, "not in RFC 9000"},
		{"no citation", "Q1", `an endpoint "MUST immediately reset the congestion controller"`, "does not cite"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := requirementDiffers(tc.q, tc.text)
			switch {
			case tc.fail == "" && got != "":
				t.Errorf("%q fails: %s", tc.text, got)
			case tc.fail != "" && !strings.Contains(got, tc.fail):
				t.Errorf("%q: %q, want a failure saying %q", tc.text, got, tc.fail)
			}
		})
	}
}
