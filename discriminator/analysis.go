// Package discriminator classifies every congestion-window decrease around a
// migration as a reset, a loss backoff, a loss floor, a below-initial cascade
// or unexplained, and attributes the post-migration RTT to a path.
package discriminator

// CollapseKind classifies one window decrease.
type CollapseKind string

const (
	Reset        CollapseKind = "RESET"
	LossBackoff  CollapseKind = "LOSS_BACKOFF"
	LossFloor    CollapseKind = "LOSS_FLOOR"
	BelowInitial CollapseKind = "BELOW_INITIAL"
	// ModelBound: a controller that sets its window from a model (BBR)
	// bounded it, within the range its code allows (lossrule.go).
	ModelBound  CollapseKind = "MODEL_BOUND"
	Unexplained CollapseKind = "UNEXPLAINED"
)

// MigrationKind is what the trace shows happened to the peer's address.
type MigrationKind string

const (
	IPMigration MigrationKind = "ip"
	PortRebind  MigrationKind = "port-only"
	NoMigration MigrationKind = "none"
	// PathChange: a path-validation exchange shows the path changed, but the
	// trace logs no addresses, so IP migration and port-only rebinding
	// cannot be told apart from this trace.
	PathChange MigrationKind = "path-change"
	// GivenInstant: the timeline has no path events; the instant was
	// supplied by the user (--migration-at) and the kind is not known.
	GivenInstant MigrationKind = "given"
)

// Migration is the migration found in a trace.
type Migration struct {
	Kind MigrationKind `json:"kind"`
	// AtUS is the migration instant (µs from trace reference): the path
	// validation exchange or the first datagram from/to the new address.
	AtUS int64 `json:"at_us"`
	// Evidence says what the instant and kind were read from.
	Evidence string `json:"evidence"`
	OldAddr  string `json:"old_addr,omitempty"`
	NewAddr  string `json:"new_addr,omitempty"`
	// PathValidationRTTUS is PATH_CHALLENGE sent → PATH_RESPONSE received, when logged.
	PathValidationRTTUS int64 `json:"path_validation_rtt_us,omitempty"`
	// PathValidationAtUS is the first PATH_CHALLENGE/PATH_RESPONSE of the
	// exchange that belongs to this migration; the scope is anchored on it.
	PathValidationAtUS int64 `json:"path_validation_at_us,omitempty"`
	// Found is false when no migration was found (Kind "none").
	Found bool `json:"found"`
}

// Collapse is one classified window decrease.
type Collapse struct {
	Kind          CollapseKind `json:"kind"`
	AtUS          int64        `json:"at_us"`
	ValueBytes    int64        `json:"value_bytes"`
	PreviousBytes int64        `json:"previous_bytes"`
	PathID        string       `json:"path_id,omitempty"`
	// SincePreviousUS is the time since the previous classified decrease on
	// the same path (0 for the first): two close events stay two events.
	SincePreviousUS int64 `json:"since_previous_us,omitempty"`
	// Ambiguous is set when more than one explanation fits the numbers
	// (e.g. the initial window is also 0.7 x the previous value); an
	// ambiguous RESET does not count as a reset observed.
	Ambiguous bool `json:"ambiguous,omitempty"`
	// Explanation shows the arithmetic: "0.7 x 280414 = 196289.8 → 196289".
	Explanation string `json:"explanation"`
}

// ConstantValue is a discriminator constant evaluated with the run's settings.
type ConstantValue struct {
	// Name is initial_window, min_window, loss_factor or default_rtt_us.
	Name string `json:"name"`
	// Label says which variant (picoquic has two initial windows).
	Label      string  `json:"label,omitempty"`
	Expr       string  `json:"expr"`
	Value      float64 `json:"value"`
	Arithmetic string  `json:"arithmetic"`
	Provenance string  `json:"provenance"`
}

// RTTAttribution says which network the post-migration RTT describes.
type RTTAttribution struct {
	// FirstAfterUS is the first smoothed RTT sample after migration, in µs.
	FirstAfterUS int64 `json:"first_after_us"`
	// Attribution: "new-path", "old-path", "default", "converging",
	// "mixed" (metrics without path id interleave two paths' estimators),
	// "unknown".
	Attribution string `json:"attribution"`
	// FirstAfterAtUS is when FirstAfterUS was logged (µs from trace reference).
	FirstAfterAtUS int64 `json:"first_after_at_us,omitempty"`
	// NewPathSource says where NewPathUS came from: "given", "path-validation".
	NewPathSource string `json:"new_path_source,omitempty"`
	// PinnedUS is how long the smoothed RTT stayed exactly at the default
	// after migration (to the end of the trace when Attribution is "default").
	PinnedUS      int64 `json:"pinned_us,omitempty"`
	PinnedSamples int   `json:"pinned_samples,omitempty"`
	// OldPathPacket is set when the first RTT sample after migration was
	// taken from an ACK of a packet sent before the migration (packet
	// numbers logged); OldPathPacketNumber names it.
	OldPathPacket       bool  `json:"old_path_packet,omitempty"`
	OldPathPacketNumber int64 `json:"old_path_packet_number,omitempty"`
	OldPathUS           int64 `json:"old_path_us,omitempty"`
	// OldPathMeasuredUS is the last smoothed RTT before the migration, set
	// when OldPathUS was given (the configured delay) and differs: under
	// load the old path's estimate includes queueing. Both count as "old".
	OldPathMeasuredUS int64 `json:"old_path_measured_us,omitempty"`
	NewPathUS         int64 `json:"new_path_us,omitempty"`
	DefaultUS         int64 `json:"default_us,omitempty"`
	// ConvergedAfterUS is how long after migration the estimate reached the
	// new path (0 when it never did or was there at once).
	ConvergedAfterUS int64  `json:"converged_after_us,omitempty"`
	Detail           string `json:"detail,omitempty"`
	// Wire is the packet evidence from the repetition's capture, when
	// there is one: it decides Q3 whenever it can name the packets.
	Wire *WireRTT `json:"wire,omitempty"`
}

// Verdict is a per-trace answer to Q1 or Q3.
type Verdict struct {
	Answer string `json:"answer"` // YES, NO, UNKNOWN
	Reason string `json:"reason"`
}

// Analysis is the stable JSON interface `migaudit analyze --format json`
// emits and the survey consumes.
type Analysis struct {
	Implementation string    `json:"implementation"`
	Trace          string    `json:"trace"`
	Format         string    `json:"format"`
	Vantage        string    `json:"vantage,omitempty"`
	PathIDs        bool      `json:"path_ids"`
	Migration      Migration `json:"migration"`
	// Scope is the interval whose decreases were classified.
	ScopeFromUS int64           `json:"scope_from_us"`
	ScopeToUS   int64           `json:"scope_to_us"`
	Constants   []ConstantValue `json:"constants"`
	Events      []Collapse      `json:"events"`
	// WindowBeforeBytes is the peak window before the collapse: from the
	// scope start to the first classified decrease at or after migration.
	WindowBeforeBytes int64 `json:"window_before_bytes"`
	// WindowAfterBytes is the reset value when a reset was observed, else
	// the minimum window inside the scope after migration.
	WindowAfterBytes int64          `json:"window_after_bytes"`
	ResetObserved    bool           `json:"reset_observed"`
	RTT              RTTAttribution `json:"rtt"`
	Q1               Verdict        `json:"q1"`
	Q3               Verdict        `json:"q3"`
	// Q2 is decided from the wire (the path validation's round trip)
	// and the estimator's first value after the reset; nil without wire
	// evidence. Only a repetition whose validation and data round trips
	// differ (Q2.Distinct, the pv-distinct scenario) can answer it.
	Q2       *Q2Live  `json:"q2,omitempty"`
	Warnings []string `json:"warnings,omitempty"`
}
