// Package survey is the model of data/survey_results.json and its file
// format: the stage between audit + runs (survey/build) and the
// presentation (survey/tables, survey/report), checked by validate; the
// single source of truth for every claim migaudit makes: per implementation
// the three answers (from source, from live runs, or both), the discriminator
// constants with their source positions, the live figures per repetition and
// the evidence files; and the cross-cutting findings computed from those
// entries. Tables and bug reports are generated from the file alone.
package survey

// Survey is the whole of data/survey_results.json.
type Survey struct {
	SchemaVersion int    `json:"schema_version"`
	GeneratedBy   string `json:"generated_by"`
	GeneratedAt   string `json:"generated_at"`
	// Inputs records where the survey was built from, so a reader knows
	// which claims rest on which sources.
	Inputs          Inputs           `json:"inputs"`
	Implementations []Implementation `json:"implementations"`
	CrossCutting    CrossCutting     `json:"cross_cutting"`
	// Disagreements lists every question where source and live differ; they
	// are reported, never resolved silently.
	Disagreements []Disagreement `json:"disagreements"`
	// Validation is what the last `migaudit validate` found.
	Validation *ValidationRecord `json:"validation,omitempty"`
}

// Inputs are the directories the survey read.
type Inputs struct {
	Mirrors  string   `json:"mirrors,omitempty"`
	Evidence string   `json:"evidence,omitempty"`
	Results  []string `json:"results,omitempty"`
	// Study is the study's repository and commit the reference evidence was
	// read from (see data/study.json).
	Study *SourcePin `json:"study,omitempty"`
	// EvidenceSHA256 is the sha256 of every committed evidence file the
	// survey was built from (data/evidence/…), so that an edit to any of
	// them changes the survey.
	EvidenceSHA256 map[string]string `json:"evidence_sha256,omitempty"`
}

// Implementation is one surveyed QUIC implementation.
type Implementation struct {
	Name        string `json:"name"`
	Language    string `json:"language"`
	Upstream    string `json:"upstream"`
	Commit      string `json:"commit"`
	LiveVersion string `json:"live_version,omitempty"`
	// SourceAudited is false when no source was available to the survey.
	SourceAudited bool     `json:"source_audited"`
	Answers       []Answer `json:"answers"`
	// Reachability is the migration reset hook and who calls it.
	Reachability *Reachability `json:"reachability,omitempty"`
	Constants    []Constant    `json:"constants"`
	Live         *Live         `json:"live,omitempty"`
	// LiveScenarios is the evidence of non-standard scenarios, read from
	// data/evidence/<impl>/<scenario>/rep* (the standard scenario stays
	// in Live): pv-distinct answers Q2 live.
	LiveScenarios []LiveScenario `json:"live_scenarios,omitempty"`
	// FixCheck says whether a fix would be visible to the live check.
	FixCheck *FixCheck `json:"fix_check,omitempty"`
	// LiveCode is which code the own live runs ran (from their manifests).
	LiveCode *LiveCode `json:"live_code,omitempty"`
	// LiveAudit is the source audit at LiveCode's commit when that is not
	// the pin: both audits are listed, the differences shown, and the live
	// answers compared with the audit of the same code.
	LiveAudit *LiveAudit `json:"live_audit,omitempty"`
	// LiveFindings explain live observations with instrumented evidence.
	LiveFindings []LiveFinding `json:"live_findings,omitempty"`
	// Notes are caveats that belong to this implementation.
	Notes []string `json:"notes,omitempty"`
}

// Established says how an answer was obtained.
const (
	BySource     = "source"
	ByLive       = "live"
	BySourceLive = "source+live"
)

// Agreement between the source and live answers.
const (
	Agree      = "agree"
	Consistent = "consistent" // live covers one role of a role-dependent source answer and matches it
	Disagree   = "disagree"
	SourceOnly = "source-only"
	LiveOnly   = "live-only"
	NoAnswer   = "none"
)

// Answer is one question answered for one implementation.
type Answer struct {
	Question         string `json:"question"`
	RequirementLevel string `json:"requirement_level"`
	Requirement      string `json:"requirement"`
	Answer           string `json:"answer"`
	Established      string `json:"established"`
	SourceAnswer     string `json:"source_answer,omitempty"`
	LiveAnswer       string `json:"live_answer,omitempty"`
	Agreement        string `json:"agreement"`
	Mechanism        string `json:"mechanism,omitempty"`
	Detail           string `json:"detail,omitempty"`
	// Roles holds per-role source answers when the answer depends on which
	// endpoint is asked (ASYMMETRIC).
	Roles    []RoleAnswer   `json:"roles,omitempty"`
	Counts   map[string]int `json:"counts,omitempty"`
	Evidence []Evidence     `json:"evidence"`
}

// RoleAnswer is the answer for one endpoint role.
type RoleAnswer struct {
	Role   string `json:"role"`
	Answer string `json:"answer"`
	Detail string `json:"detail,omitempty"`
}

// Evidence is a position in upstream source at the pinned commit.
type Evidence struct {
	Path      string `json:"path"`
	Line      int    `json:"line"`
	Excerpt   string `json:"excerpt"`
	Permalink string `json:"permalink"`
	Kind      string `json:"kind,omitempty"`
	Note      string `json:"note,omitempty"`
}

// Reachability is the implementation's migration reset hook: how many
// handlers implement it and how many places call (or dispatch) it.
type Reachability struct {
	Symbol string `json:"symbol"`
	// Form is "function" (called by name) or "notification" (an enum value
	// passed to a dispatcher and handled by case labels).
	Form string `json:"form"`
	// Handlers is the number of implementations the audit cites (nil when
	// it cites none: then no count is claimed).
	Handlers  *int       `json:"handlers,omitempty"`
	CallSites int        `json:"call_sites"`
	Calls     []Evidence `json:"calls"`
	// HandlerSites are the handler positions (case labels or implementations).
	HandlerSites []Evidence `json:"handler_sites"`
	Dead         bool       `json:"dead"`
}

// Constant is a discriminator constant read out of source.
type Constant struct {
	Name       string             `json:"name"`
	Label      string             `json:"label,omitempty"`
	Expr       string             `json:"expr"`
	Params     map[string]float64 `json:"params,omitempty"`
	Value      float64            `json:"value"`
	Arithmetic string             `json:"arithmetic"`
	Provenance string             `json:"provenance"`
	Source     *Evidence          `json:"source,omitempty"`
}

// Live origins.
const (
	OwnRuns   = "own-runs"  // this project's runs, evidence committed under data/evidence
	Reference = "reference" // the study's traces, read from its pinned repository (data/study.json), never copied in
)

// Live is what the running program showed.
type Live struct {
	Origin      string       `json:"origin"`
	Repetitions []Repetition `json:"repetitions"`
	// Retained is the number of repetitions with their own evidence.
	Retained int `json:"retained"`
	// IPChanges is the number of repetitions verified as a genuine IP change.
	IPChanges int    `json:"ip_changes"`
	Summary   string `json:"summary"`
	// Reference is the study's reference repetition kept beside own runs
	// as a second source (origin "reference"; only with --evidence).
	Reference *Live `json:"reference,omitempty"`
	// RunRecord is the run's append-only record of every attempt, which
	// the repetitions must match (own runs).
	RunRecord *RunRecordRef `json:"run_record,omitempty"`
}

// RunRecordRef names a run record and its digest.
type RunRecordRef struct {
	Path   string `json:"path"` // relative to the repository root
	SHA256 string `json:"sha256"`
	// Reconstructed says the record was rebuilt after the run (from its
	// summary.json), not written by it.
	Reconstructed bool `json:"reconstructed,omitempty"`
}

// LiveScenario is one non-standard scenario's live evidence.
type LiveScenario struct {
	Scenario string `json:"scenario"`
	Live     *Live  `json:"live"`
}

// PVDistinct is the scenario whose repetitions answer Q2 live.
const PVDistinct = "pv-distinct"

// Scenario is the live evidence of the named non-standard scenario, nil
// when there is none.
func (im *Implementation) Scenario(name string) *Live {
	for _, s := range im.LiveScenarios {
		if s.Scenario == name {
			return s.Live
		}
	}
	return nil
}

// RepQ2 is one repetition's live Q2: the validation round trip and the
// new path's data round trip on the wire, the estimator's first value
// after the reset, and the answer they give (discriminator.Q2Live).
type RepQ2 struct {
	Answer          string `json:"answer"`
	PVRTTUS         int64  `json:"pv_rtt_us,omitempty"`
	DataRTTUS       int64  `json:"data_rtt_us,omitempty"`
	FirstRTTAfterUS int64  `json:"first_rtt_after_us,omitempty"`
	Detail          string `json:"detail"`
}

// Repetition is one live run (or one reference trace / timeline).
type Repetition struct {
	ID string `json:"id"`
	// Files are paths to the evidence, relative to the repository root for
	// own runs and to the study's repository (inputs.study) for reference
	// evidence.
	Trace       string `json:"trace"`
	TraceSHA256 string `json:"trace_sha256"`
	Format      string `json:"format"`
	Manifest    string `json:"manifest,omitempty"`
	Calibration string `json:"calibration,omitempty"`
	Analysis    string `json:"analysis,omitempty"`
	Vantage     string `json:"vantage,omitempty"`
	Version     string `json:"version,omitempty"`
	// NewPathRTTUS is the configured round trip of the path migrated to.
	NewPathRTTUS      int64     `json:"new_path_rtt_us,omitempty"`
	Migration         Migration `json:"migration"`
	ScopeFromUS       int64     `json:"scope_from_us"`
	ScopeToUS         int64     `json:"scope_to_us"`
	WindowBeforeBytes int64     `json:"window_before_bytes"`
	WindowAfterBytes  int64     `json:"window_after_bytes"`
	ResetObserved     bool      `json:"reset_observed"`
	Events            []Event   `json:"events"`
	RTT               RTT       `json:"rtt"`
	Q1                string    `json:"q1"`
	Q3                string    `json:"q3"`
	Q2                *RepQ2    `json:"q2,omitempty"`
	// Q3Basis is what Q3 rests on: "wire" (the packets behind the RTT
	// samples) or "values" (the RTT values against the paths').
	Q3Basis string `json:"q3_basis,omitempty"`
	// Wire is the repetition's capture and key log (docs/wire.md).
	Wire *RepWire `json:"wire,omitempty"`
	// WireSHA256 is the capture's sha256, for the wire claims.
	WireSHA256 string `json:"wire_sha256,omitempty"`
	// WireClaims are the deciding samples: the first after the
	// migration and the first from an old-path packet, if any.
	WireClaims []WireClaim `json:"wire_claims,omitempty"`
	Warnings   []string    `json:"warnings,omitempty"`
	Constants  []LiveCons  `json:"constants,omitempty"`
}

// RepWire is a repetition's wire evidence: files relative to the
// repository root, whether the capture was trimmed for committing, and
// the bytes acknowledged and declared lost after the migration by path.
type RepWire struct {
	Capture       string      `json:"capture"`
	CaptureSHA256 string      `json:"capture_sha256"`
	KeyLog        string      `json:"keylog,omitempty"`
	KeyLogSHA256  string      `json:"keylog_sha256,omitempty"`
	Trimmed       bool        `json:"trimmed"`
	BytesByPath   []PathBytes `json:"bytes_by_path,omitempty"`
}

// PathBytes is the sender's congestion accounting on one path after the
// migration, by the path each packet crossed on the wire.
type PathBytes struct {
	Path         string `json:"path"`
	AckedBytes   int64  `json:"acked_bytes"`
	AckedPackets int    `json:"acked_packets"`
	LostBytes    int64  `json:"lost_bytes,omitempty"`
	LostPackets  int    `json:"lost_packets,omitempty"`
}

// WireClaim: the RTT sample taken at AtUnixNS (RTTUS long) came from the
// ACK of packet Packet, sent by Sender, which crossed Path (the validator
// re-derives it from the capture).
type WireClaim struct {
	Packet   int64  `json:"packet"`
	Path     string `json:"path"`
	AtUnixNS int64  `json:"at_unix_ns,omitempty"`
	RTTUS    int64  `json:"rtt_us,omitempty"`
	Sender   string `json:"sender,omitempty"`
}

// LiveCons is a constant evaluated with the run's own settings.
type LiveCons struct {
	Name       string  `json:"name"`
	Value      float64 `json:"value"`
	Arithmetic string  `json:"arithmetic"`
}

// Migration is the migration found in the trace.
type Migration struct {
	Kind                string `json:"kind"`
	AtUS                int64  `json:"at_us"`
	Evidence            string `json:"evidence"`
	OldAddr             string `json:"old_addr,omitempty"`
	NewAddr             string `json:"new_addr,omitempty"`
	PathValidationRTTUS int64  `json:"path_validation_rtt_us,omitempty"`
}

// Event is one classified window decrease.
type Event struct {
	Kind          string `json:"kind"`
	AtUS          int64  `json:"at_us"`
	ValueBytes    int64  `json:"value_bytes"`
	PreviousBytes int64  `json:"previous_bytes"`
	Explanation   string `json:"explanation,omitempty"`
}

// RTT says which network the first post-migration RTT describes.
type RTT struct {
	FirstAfterUS     int64  `json:"first_after_us"`
	Attribution      string `json:"attribution"`
	OldPathUS        int64  `json:"old_path_us,omitempty"`
	NewPathUS        int64  `json:"new_path_us,omitempty"`
	DefaultUS        int64  `json:"default_us,omitempty"`
	ConvergedAfterUS int64  `json:"converged_after_us,omitempty"`
	Detail           string `json:"detail,omitempty"`
	// WireEvidence names a capture of the repetition (relative to the
	// repository root) whose packets decide which path the first sample
	// came from where its value cannot (issue #31's wire reader); the
	// validator checks it when present.
	WireEvidence string `json:"wire_evidence,omitempty"`
}

// CrossCutting findings, computed from the implementation entries.
type CrossCutting struct {
	F1 DeadHooks     `json:"F1"`
	F2 Mechanisms    `json:"F2"`
	F3 UnusedInitRTT `json:"F3"`
}

// DeadHooks is F1: implementations whose migration reset hook nothing calls.
type DeadHooks struct {
	Statement       string         `json:"statement"`
	Implementations []string       `json:"implementations"`
	CallSites       map[string]int `json:"call_sites"`
}

// Mechanisms is F2: how many distinct mechanisms decide Q1/Q3.
type Mechanisms struct {
	Statement  string            `json:"statement"`
	Distinct   int               `json:"distinct"`
	Of         int               `json:"of"`
	Mechanisms map[string]string `json:"mechanisms"`
}

// UnusedInitRTT is F3: who uses the path-validation RTT as the initial RTT.
type UnusedInitRTT struct {
	Statement string   `json:"statement"`
	Users     []string `json:"users"`
	Of        int      `json:"of"`
}

// Disagreement is a question on which source and live differ.
type Disagreement struct {
	Implementation string `json:"implementation"`
	Question       string `json:"question"`
	Source         string `json:"source"`
	Live           string `json:"live"`
	Detail         string `json:"detail"`
}

// ValidationRecord is what `migaudit validate` last found.
type ValidationRecord struct {
	At           string `json:"at"`
	Passed       int    `json:"passed"`
	Failed       int    `json:"failed"`
	Unverifiable int    `json:"unverifiable"`
}

// Find returns the implementation named name, or nil.
func (s *Survey) Find(name string) *Implementation {
	for i := range s.Implementations {
		if s.Implementations[i].Name == name {
			return &s.Implementations[i]
		}
	}
	return nil
}

// Answer returns the answer to question q, or nil.
func (im *Implementation) Answer(q string) *Answer {
	for i := range im.Answers {
		if im.Answers[i].Question == q {
			return &im.Answers[i]
		}
	}
	return nil
}

// Build kinds of LiveCode.
const (
	BuildFromCheckout = "from-checkout"
	BuildDebian       = "debian-package"
	BuildNPM          = "npm-binding"
	BuildModuleProxy  = "module-proxy"
)

// LiveCode is the code the live repetitions ran.
type LiveCode struct {
	// Commit is the full commit that ran ("" when a release tag could not
	// be resolved: no mirror); Tag the release it was read from, if any.
	Commit   string       `json:"commit,omitempty"`
	Tag      string       `json:"tag,omitempty"`
	Upstream string       `json:"upstream"`
	Build    string       `json:"build"`
	Binaries []LiveBinary `json:"binaries"`
}

// LiveBinary is one executable, library or module a repetition ran.
type LiveBinary struct {
	Role    string `json:"role"`
	SHA256  string `json:"sha256"`
	Version string `json:"version"`
}

// LiveAudit is the source audit at the live commit.
type LiveAudit struct {
	Commit      string            `json:"commit"`
	Answers     []Answer          `json:"answers"`
	Differences []AuditDifference `json:"differences"`
}

// AuditDifference is a question the pin and the live commit answer
// differently.
type AuditDifference struct {
	Question string `json:"question"`
	Pin      string `json:"pin"`
	Live     string `json:"live"`
}
