package survey

import (
	"reflect"
	"testing"
)

func TestOnceEach(t *testing.T) {
	tests := []struct {
		name string
		in   []string
		want []string
	}{
		{"three identical rule statements", []string{"reset on every switch", "reset on every switch", "reset on every switch", "hook: x"}, []string{"reset on every switch", "hook: x"}},
		{"per-role statements quoted whole by the combined one", []string{"keeps _loss", "promotes the path", "migrating endpoint: NO (keeps _loss); observing endpoint: NO (promotes the path)"}, []string{"migrating endpoint: NO (keeps _loss); observing endpoint: NO (promotes the path)"}},
		{"spacing does not make a sentence new", []string{"a  b c", "a b c"}, []string{"a b c"}},
		{"distinct statements kept in order", []string{"b", "a", ""}, []string{"b", "a"}},
		{"nothing", nil, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := OnceEach(tc.in); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("OnceEach(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestRepeatedSentences(t *testing.T) {
	if got := RepeatedSentences("Port-only exemption on purpose. The client migrates only to a preferred address. Port-only exemption on purpose."); len(got) != 1 || got[0] != "Port-only exemption on purpose" {
		t.Errorf("repeated sentence not found: %q", got)
	}
	if got := RepeatedSentences("rtt: gated by path id; growth: gated by path id"); len(got) != 0 {
		t.Errorf("different clauses reported as repeated: %q", got)
	}
}

// The committed survey states each mechanism and detail sentence once.
func TestCommittedSurveyStatesEachSentenceOnce(t *testing.T) {
	s, err := Read("../data/survey_results.json")
	if err != nil {
		t.Skipf("committed survey unreadable: %v", err)
	}
	n := 0
	for _, im := range s.Implementations {
		for _, a := range im.Answers {
			for field, text := range map[string]string{"mechanism": a.Mechanism, "detail": a.Detail} {
				n++
				for _, r := range RepeatedSentences(text) {
					t.Errorf("%s %s %s repeats %q", im.Name, a.Question, field, r)
				}
			}
		}
	}
	if n < 3 {
		t.Errorf("only %d texts read", n)
	}
}
