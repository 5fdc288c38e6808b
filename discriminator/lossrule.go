package discriminator

import (
	"fmt"
	"strings"

	"github.com/migaudit/migaudit/data"
)

// lossRule is one controller's loss response as the audit read it from the
// source that runs (data/constants/lossresponse): window = factor × W in
// the code's arithmetic, W the window at the loss event.
type lossRule struct {
	algorithm  string
	num, den   int64
	arithmetic string
	cite       string // "lib/ngtcp2_cc.c:482 at v0.12.1"
	isDefault  bool
	// model: the controller sets cwnd from a model (BBR, "bbr-model"), not
	// by a product: floor is its minimum window with the run's params,
	// boundCite the line that bounds cwnd, floorCite the floor's.
	model                     bool
	floor                     int64
	floorText                 string
	boundCite, floorCite, ref string
	commit                    string
}

// modelAt drops a model rule read at another commit than the one that ran
// (a model's code changes between versions: ngtcp2 0.12.1's BBR is not the
// pin's BBRv3) and says so; commit "" (a trace analysed by hand) keeps it.
func (cs *constantSet) modelAt(commit string) string {
	r := cs.loss
	if r == nil || !r.model || commit == "" || strings.HasPrefix(r.commit, commit) || strings.HasPrefix(commit, r.commit) {
		return ""
	}
	cs.loss = nil
	return fmt.Sprintf("%s's window rule was read at %s, not at %s, the commit that ran: its decreases are not classified by it", r.algorithm, r.ref, commit)
}

// lossRuleFor is controller cc's rule ("" = the default controller's), if
// audited; a model-bound controller's (BBR) floor is evaluated with params.
func lossRuleFor(impl, cc string, params map[string]float64) (*lossRule, error) {
	rs, ok, err := data.LossResponsesFor(impl)
	if err != nil || !ok {
		return nil, err
	}
	r, ok := rs.DefaultLossResponse()
	if cc != "" {
		r, ok = rs.ResponseOf(cc)
		if !ok {
			if m, isModel := rs.ModelOf(cc); isModel {
				return modelRule(m, params)
			}
		}
	}
	if !ok {
		return nil, nil
	}
	lr := &lossRule{algorithm: r.Algorithm, num: r.FactorNum, den: r.FactorDen, arithmetic: r.Arithmetic,
		cite: fmt.Sprintf("%s:%d at %s", r.Source.Path, r.Source.Line, r.Ref), isDefault: r.Default}
	return lr, nil
}

// modelRule is a model-bound controller's rule: its floor evaluated with
// the run's params; the bound's and the floor's lines cited.
func modelRule(m data.LossResponse, params map[string]float64) (*lossRule, error) {
	if m.Floor == nil || m.BoundSource == nil {
		return nil, fmt.Errorf("%s model at %s: no floor or no cwnd bound recorded", m.Algorithm, m.Ref)
	}
	v, arith, err := m.Floor.Eval(params)
	if err != nil {
		return nil, fmt.Errorf("%s floor: %w", m.Algorithm, err)
	}
	ref := m.Ref
	if len(ref) == 40 {
		ref = ref[:12]
	}
	return &lossRule{algorithm: m.Algorithm, num: m.FactorNum, den: m.FactorDen, arithmetic: m.Arithmetic, model: true,
		cite:      fmt.Sprintf("%s:%d at %s", m.Source.Path, m.Source.Line, ref),
		boundCite: fmt.Sprintf("%s:%d", m.BoundSource.Path, m.BoundSource.Line),
		floorCite: fmt.Sprintf("%s:%d", m.FloorSource.Path, m.FloorSource.Line),
		floor:     int64(v), floorText: arith, ref: ref, commit: m.Commit}, nil
}

// classifyModel explains a decrease of a model-bound controller (BBR).
// Its rules and tolerances:
//   - RESET: v is the initial window exactly (the connection's reset puts
//     cwnd back at initcwnd; the model restarts from there);
//   - LOSS_FLOOR: v is the floor (min_pipe_cwnd) exactly;
//   - MODEL_BOUND: v in (floor, prev): cwnd = min(cwnd, cap) with the cap
//     from the model, which the trace does not carry (inflight_shortterm
//     and inflight_longterm, cut to β × their value on a loss round; BDP ×
//     cwnd_gain; PROBE_RTT's BDP/2), and never below the floor: the
//     tolerance is that whole range and no more;
//   - UNEXPLAINED: below the floor, which no BBR window is.
func classifyModel(v, prev int64, cs constantSet) Collapse {
	r := cs.loss
	c := Collapse{ValueBytes: v, PreviousBytes: prev}
	switch {
	case containsInt(cs.initial, v):
		c.Kind = Reset
		c.Explanation = fmt.Sprintf("%d → %d = initial window %s (exact); %s cwnd is otherwise bounded by its model (%s at %s)", prev, v, joinInts(cs.initial, " / "), r.algorithm, r.boundCite, r.ref)
	case v == r.floor:
		c.Kind = LossFloor
		c.Explanation = fmt.Sprintf("%d → %d = min_pipe_cwnd %s (%s's floor, exact; %s at %s)", prev, v, r.floorText, r.algorithm, r.floorCite, r.ref)
	case v > r.floor:
		c.Kind = ModelBound
		c.Explanation = fmt.Sprintf("%d → %d: %s sets cwnd = min(cwnd, cap) from its model (%s at %s), never below min_pipe_cwnd %d (%s); the cap (inflight bounds cut to β = %d/%d on a loss round, %s; BDP × cwnd_gain; PROBE_RTT's BDP/2) is not in the trace, so the rule allows (%d, %d) and no more — not a reset: not the initial window %s",
			prev, v, r.which(), r.boundCite, r.ref, r.floor, r.floorCite, r.num, r.den, r.cite, r.floor, prev, joinInts(cs.initial, " / "))
	default:
		c.Kind = Unexplained
		c.Explanation = fmt.Sprintf("%d → %d: below %s's min_pipe_cwnd %s (%s at %s), a window its model never sets; not an initial window (%s)",
			prev, v, r.algorithm, r.floorText, r.floorCite, r.ref, joinInts(cs.initial, " / "))
	}
	return c
}

// product is the code's own arithmetic on a window w, before the floor.
// The floor rejects nothing: it depends on the path's datagram size, which
// changes at a migration (msquic's new path falls to 2,505 B, below the
// 2,944 B floor its first path's MTU implies); LOSS_FLOOR reads the
// minimum window instead.
func (r *lossRule) product(w int64) int64 {
	if r.arithmetic == "float64-trunc" {
		return int64(float64(w) * (float64(r.num) / float64(r.den)))
	}
	return w * r.num / r.den
}

// which names the controller: "cubic, the default controller" or "reno".
func (r *lossRule) which() string {
	if r.isDefault {
		return r.algorithm + ", the default controller"
	}
	return r.algorithm + ", selected with --cc"
}

func (r *lossRule) formula() string {
	if r.model {
		return fmt.Sprintf("cwnd = min(cwnd, model cap) ≥ %d (%s)", r.floor, r.arithmetic)
	}
	return fmt.Sprintf("⌊%d/%d × W⌋ (%s)", r.num, r.den, r.arithmetic)
}

// windowsAt are the windows w in [lo, hi] with product(w) == v, as a range
// (the product is monotone in w); ok is false when there is none.
func (r *lossRule) windowsAt(v, lo, hi int64) (first, last int64, ok bool) {
	if lo > hi {
		return 0, 0, false
	}
	// The smallest w with product(w) >= v, by bisection, then walk.
	a, b := lo, hi+1
	for a < b {
		m := a + (b-a)/2
		if r.product(m) >= v {
			b = m
		} else {
			a = m + 1
		}
	}
	if a > hi || r.product(a) != v {
		return 0, 0, false
	}
	first, last = a, a
	for last < hi && r.product(last+1) == v {
		last++
	}
	return first, last, true
}

// growthBound is how far a series' window can have grown between its last
// logged value and the loss: its fastest growth over the preceding samples
// (since its last decrease, at most growthLookbackUS back), over the time
// elapsed, and never less than its largest single step.
type growthBound struct {
	bytes      int64
	rateBPerMS float64
	overUS     int64
	maxStep    int64
}

const growthLookbackUS = 1_000_000

type cwndPoint struct{ t, v int64 }

func boundGrowth(hist []cwndPoint, overUS int64) growthBound {
	var g growthBound
	g.overUS = max(overUS, 1000) // the traces' clocks step in 1 ms at worst
	for i := 1; i < len(hist); i++ {
		d := hist[i].v - hist[i-1].v
		if d <= 0 {
			continue
		}
		g.maxStep = max(g.maxStep, d)
		if dt := hist[i].t - hist[i-1].t; dt >= 1000 {
			g.rateBPerMS = max(g.rateBPerMS, float64(d)*1000/float64(dt))
		}
	}
	g.bytes = max(g.maxStep, int64(g.rateBPerMS*float64(g.overUS)/1000))
	return g
}

func (g growthBound) String() string {
	return fmt.Sprintf("≤ %d B: the series' fastest growth, %.0f B/ms, over %s (largest step %d B)", g.bytes, g.rateBPerMS, fmtMS(g.overUS), g.maxStep)
}
