package data

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"sync"
)

// LossResponse is what one congestion controller does to its window on a
// loss, as the source that runs reads (audit/lossresp writes these files):
// window = max(Rounding(Factor × Multiplies), Floor).
type LossResponse struct {
	// Algorithm is the controller ("newreno", "cubic", "reno").
	Algorithm string `json:"algorithm"`
	// Default is true for the controller the live harness runs when no
	// --cc is given.
	Default bool `json:"default,omitempty"`
	// Ref is the tag or commit the live program is built from
	// ("v0.12.1", "0.18.0", a pin); Commit is its full hash.
	Ref    string `json:"ref"`
	Commit string `json:"commit"`
	// FactorNum/FactorDen is the multiplicative decrease as the code writes
	// it (7/10, 1/2, the f64 0.7 as 7/10 with Arithmetic "float64").
	FactorNum int64 `json:"factor_num"`
	FactorDen int64 `json:"factor_den"`
	// FactorText is the factor's spelling in the source ("BETA_CUBIC = 0.7").
	FactorText string `json:"factor_text"`
	// Arithmetic says how the product is computed, which decides rounding:
	// "int-muldiv" (W*num/den in unsigned integers: floor),
	// "int-shift" / "int-div" (W >> k, W / den: floor),
	// "float64-trunc" ((W as f64 * factor) as usize: IEEE product, then truncation),
	// "bbr-model" (BBR: no product on cwnd; the factor β scales the model's
	// inflight bounds on a loss round, and cwnd = min(cwnd, the model's
	// cap) at BoundSource, never below Floor).
	Arithmetic string `json:"arithmetic"`
	// Multiplies names the quantity W the factor multiplies ("cwnd at the
	// loss event").
	Multiplies string `json:"multiplies"`
	// Floor is the lower bound applied after the product (max(…, Floor)),
	// a formula over the run's settings; nil when none.
	Floor *Formula `json:"floor,omitempty"`
	// Growth says what can add to W between the last logged window and the
	// loss (acknowledgements processed before loss detection).
	Growth string `json:"growth"`
	// Source is the line of the arithmetic; FactorSource where the factor
	// is defined; FloorSource where the floor is applied.
	Source       Position `json:"source"`
	FactorSource Position `json:"factor_source"`
	FloorSource  Position `json:"floor_source"`
	// BoundSource ("bbr-model" only) is where cwnd is bounded by the
	// model: cwnd = min(cwnd, cap).
	BoundSource *Position `json:"bound_source,omitempty"`
	// Provenance: "audit <commit>".
	Provenance string `json:"provenance"`
}

// LossResponses are one implementation's audited loss responses.
type LossResponses struct {
	Implementation string         `json:"implementation"`
	Responses      []LossResponse `json:"responses"`
	// Models are the controllers whose window follows a model rather than
	// a factor on the window ("bbr-model"): kept apart so that nothing
	// re-deriving a product (a LOSS_BACKOFF) takes one for a factor rule.
	Models []LossResponse `json:"models,omitempty"`
}

var lossResponses sync.Map // canonical name → *lossEntry

type lossEntry struct {
	once sync.Once
	r    LossResponses
	err  error
}

// LossResponsesFor returns the audited loss responses of an implementation
// (data/constants/lossresponse/<name>.json); ok is false when none were
// audited. The result is the caller's own.
func LossResponsesFor(name string) (LossResponses, bool, error) {
	canon, err := CanonicalName(name)
	if err != nil {
		return LossResponses{}, false, err
	}
	v, _ := lossResponses.LoadOrStore(canon, &lossEntry{})
	e := v.(*lossEntry)
	e.once.Do(func() {
		b, err := constantsFS.ReadFile("constants/lossresponse/" + canon + ".json")
		if errors.Is(err, fs.ErrNotExist) {
			return
		}
		if err == nil {
			err = json.Unmarshal(b, &e.r)
		}
		if err != nil {
			e.err = fmt.Errorf("data/constants/lossresponse/%s.json: %w", canon, err)
		}
	})
	if e.err != nil || len(e.r.Responses) == 0 {
		return LossResponses{}, false, e.err
	}
	out := e.r
	out.Responses = append([]LossResponse(nil), e.r.Responses...)
	for i := range out.Responses {
		out.Responses[i].Floor = out.Responses[i].Floor.clonePtr()
	}
	out.Models = append([]LossResponse(nil), e.r.Models...)
	for i := range out.Models {
		out.Models[i].Floor = out.Models[i].Floor.clonePtr()
		if b := out.Models[i].BoundSource; b != nil {
			c := *b
			out.Models[i].BoundSource = &c
		}
	}
	return out, true, nil
}

// ModelOf is controller cc's model-bound response ("bbr-model"), if audited.
func (l LossResponses) ModelOf(cc string) (LossResponse, bool) {
	cc = strings.ToLower(cc)
	for _, r := range l.Models {
		if r.Algorithm == cc {
			return r, true
		}
	}
	return LossResponse{}, false
}

// DefaultLossResponse is the response of the controller the harness runs
// by default, if audited.
func (l LossResponses) DefaultLossResponse() (LossResponse, bool) {
	for _, r := range l.Responses {
		if r.Default {
			return r, true
		}
	}
	return LossResponse{}, false
}

// ResponseOf is controller cc's response: its algorithm name, or "reno" for
// a NewReno ("newreno") response.
func (l LossResponses) ResponseOf(cc string) (LossResponse, bool) {
	cc = strings.ToLower(cc)
	for _, r := range l.Responses {
		if r.Algorithm == cc || (cc == "reno" && r.Algorithm == "newreno") || (cc == "newreno" && r.Algorithm == "reno") {
			return r, true
		}
	}
	return LossResponse{}, false
}
