package audit

import (
	"fmt"
	"strings"

	"github.com/migaudit/migaudit/validator"
)

// The validator decides Q1–Q3 again from the same commit with its own
// reader (plain text over git blobs, nothing from this package). Where the
// two readings differ, the audit's answer carries the other one: a user
// never sees a confident answer the independent reading contradicts
// without being told.

// Reading is the independent reading of one question.
type Reading struct {
	Answer string   `json:"answer"`
	Facts  []string `json:"facts,omitempty"`
}

// independentReading runs the validator's decision for im at commit in the
// repository at dir; nil when it has none for im.
func independentReading(dir, impl, commit string) (map[Question]Reading, error) {
	if !hasDecider(impl) {
		return nil, nil
	}
	ds, err := validator.DecideRepo(dir, impl, commit)
	if err != nil {
		return nil, fmt.Errorf("independent reading of %s at %s: %w", impl, short(commit), err)
	}
	out := map[Question]Reading{}
	for q, d := range ds {
		out[Question(q)] = Reading{Answer: d.Answer, Facts: d.Facts}
	}
	return out, nil
}

func hasDecider(impl string) bool {
	for _, d := range validator.Decided() {
		if d == impl {
			return true
		}
	}
	return false
}

// answerFinding is the index of the finding that answers q for the
// compliance table: the combined (role both) one, else the only finding of
// q with a verdict and no role.
func answerFinding(fs []Finding, q Question) int {
	idx := -1
	for i, f := range fs {
		if f.Question != q || f.Constant != nil || f.Answer == "" {
			continue
		}
		if f.Role == "both" {
			return i
		}
		if idx < 0 && f.Role == "" {
			idx = i
		}
	}
	return idx
}

// markDisputes compares the audit's answers with the independent reading
// and records the disagreement on the answer; it returns how many
// confident answers the independent reading contradicts.
func markDisputes(fs []Finding, readings map[Question]Reading) int {
	n := 0
	for _, q := range []Question{Q1, Q2, Q3} {
		rd, ok := readings[q]
		i := answerFinding(fs, q)
		if !ok || i < 0 || Answer(rd.Answer) == fs[i].Answer {
			continue
		}
		facts := ""
		if len(rd.Facts) > 0 {
			facts = " (" + strings.Join(rd.Facts, "; ") + ")"
		}
		switch {
		case fs[i].Answer == Unknown:
			fs[i].Independent = "the independent reading says " + rd.Answer + facts
		case Answer(rd.Answer) == Unknown:
			fs[i].Independent = "the independent reading cannot decide" + facts
		default:
			fs[i].Disputed = "the independent reading says " + rd.Answer + facts
			n++
		}
	}
	return n
}

// Answer is the finding that answers q in the report (the combined one
// where roles differ), or nil.
func (r *Report) Answer(q Question) *Finding {
	if i := answerFinding(r.Findings, q); i >= 0 {
		return &r.Findings[i]
	}
	return nil
}
