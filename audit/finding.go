// Package audit answers the three migration questions from an
// implementation's source at a pinned commit. Rules are values in the
// golang.org/x/tools/go/analysis style; every Finding carries positions.
package audit

// Question is what a finding answers.
type Question string

const (
	// Q1: RFC 9000 §9.4 ¶2, MUST reset congestion controller and RTT estimator.
	Q1 Question = "Q1"
	// Q2: RFC 9002 §6.2.2, MAY seed the new path's RTT from path validation.
	Q2 Question = "Q2"
	// Q3: RFC 9000 §9.4 ¶1, old-path packets MUST NOT feed the new path's estimates.
	Q3 Question = "Q3"
	// Discriminator constants.
	ConstInitialWindow Question = "initial_window"
	ConstMinWindow     Question = "min_window"
	ConstLossFactor    Question = "loss_factor"
	ConstDefaultRTT    Question = "default_rtt"
)

// RequirementLevel is the RFC keyword for a question ("" for constants).
func (q Question) RequirementLevel() string {
	switch q {
	case Q1, Q3:
		return "MUST"
	case Q2:
		return "MAY"
	}
	return ""
}

// Answer is the verdict vocabulary. Extensions (issue 9) are defined here and
// in data/survey.schema.json, once, with their meaning.
type Answer string

const (
	Yes        Answer = "YES"
	No         Answer = "NO"
	Inert      Answer = "INERT"      // code present but never takes effect
	Asymmetric Answer = "ASYMMETRIC" // compliant at one endpoint role, not the other
	Split      Answer = "SPLIT"      // obeyed for RTT, not for congestion input (or the reverse)
	Unknown    Answer = "UNKNOWN"    // source cannot decide; Detail says why
	NA         Answer = "N/A"
)

// Answer categories added for the nine implementations of issue 9 (append only).
const (
	// ResetKeepsRTT: on migration the congestion controller is reset to its
	// initial window, but the RTT estimator is not reset to the initial RTT: the
	// old path's RTT is carried over, kept, or used to seed the new path's
	// estimator (Detail says which).
	ResetKeepsRTT Answer = "RESET_KEEPS_RTT"
	// NotSupported: the implementation cannot migrate in this role (the API is a
	// stub, the path never switches, or migration is refused by default), so
	// nothing is reset because nothing moves; Detail names the gate.
	NotSupported Answer = "NOT_SUPPORTED"
	// RoleDependent: the answer differs between the migrating and the observing
	// endpoint and neither role is fully compliant (ASYMMETRIC is the case where
	// one role is); the per-role findings give each answer.
	RoleDependent Answer = "ROLE_DEPENDENT"
)

// Evidence is one position in upstream source backing a finding.
type Evidence struct {
	Repo      string `json:"repo"` // upstream URL
	Commit    string `json:"commit"`
	Path      string `json:"path"`
	Line      int    `json:"line"`
	Excerpt   string `json:"excerpt"`
	Permalink string `json:"permalink"` // <repo>/blob/<commit>/<path>#L<line>
	// Role of this position in the argument: "definition", "call",
	// "handler", "mention", "guard", "assignment", "constant", ...
	Kind string `json:"kind,omitempty"`
	Note string `json:"note,omitempty"`
}

// Finding is one answer to one question, with the evidence that decides it.
type Finding struct {
	Impl     string   `json:"implementation"`
	Rule     string   `json:"rule"`
	Question Question `json:"question"`
	// Role: "both", "migrating" (the endpoint that moves) or "observing".
	Role      string `json:"role,omitempty"`
	Answer    Answer `json:"answer,omitempty"`
	Mechanism string `json:"mechanism,omitempty"`
	Detail    string `json:"detail,omitempty"`
	// Counts are the structural tallies the answer rests on, e.g.
	// {"call_sites": 6, "handlers": 7}.
	Counts map[string]int `json:"counts,omitempty"`
	// Disputed is set when the validator's independent reading of the same
	// commit gives another confident answer: "the independent reading says
	// NO (facts)". Independent notes a reading that differs without
	// contradicting (one side UNKNOWN).
	Disputed    string `json:"disputed,omitempty"`
	Independent string `json:"independent,omitempty"`
	// Constant is set for Const* questions.
	Constant *ConstantFinding `json:"constant,omitempty"`
	Evidence []Evidence       `json:"evidence"`
}

// ConstantFinding is a discriminator constant read out of source.
type ConstantFinding struct {
	Expr       string             `json:"expr"`
	Params     map[string]float64 `json:"params,omitempty"`
	Value      float64            `json:"value"`
	Arithmetic string             `json:"arithmetic"`
	Label      string             `json:"label,omitempty"`
	// Provenance overrides "audit <commit>" when the value could not be
	// read from source and is carried from elsewhere (the finding says why).
	Provenance string `json:"provenance,omitempty"`
	// Alternative marks a value reported for context (e.g. another
	// algorithm's floor) that --write-constants does not write.
	Alternative bool `json:"alternative,omitempty"`
}
