package discriminator

import (
	"fmt"
	"sort"
	"strings"

	"github.com/migaudit/migaudit/data"
)

// constantSet is the implementation's discriminator constants evaluated with
// the run's parameters. Values are bytes (windows), a ratio (factor) and µs
// (default RTT).
type constantSet struct {
	initial    []int64
	minWindow  int64 // 0 = unknown
	factor     float64
	hasFactor  bool
	defaultRTT int64 // 0 = unknown
	audited    bool
	reported   []ConstantValue
	// loss is the default controller's audited loss response; nil when
	// none was audited (then factor alone decides, ±1 B).
	loss *lossRule
	cc   string // the controller asked for; "" = the default
}

// traceParams maps a trace's Meta.Params names onto formula parameters, per
// implementation, where the trace logs exactly the quantity the formula
// means. None of the reference formats does today, so it is empty: quic-go's
// max_udp_payload_size (1452) and mtu (1441) are not its congestion datagram
// size (1280); picoquic's max_packet_size (1440) is the peer's limit, not the
// negotiated send size (1424); msquic's send_mtu (1248) is S plus the IPv4
// and UDP headers, a derivation rather than the quantity. A parser that logs
// the exact size adds its name here; --param S=… covers the rest.
var traceParams = map[string]map[string]string{}

// evalConstants reads the implementation's constants from data/ and
// evaluates every formula with params (which override the formulas'
// defaults).
func evalConstants(impl string, params map[string]float64) (constantSet, error) {
	return evalConstantsIn(impl, params, nil)
}

// evalConstantsIn is evalConstants with the constants given (audited at the
// commit that ran) instead of data's, the pin's, when at is non-nil.
func evalConstantsIn(impl string, params map[string]float64, at *data.Constants) (constantSet, error) {
	c, audited, err := data.ConstantsFor(impl)
	if err != nil {
		return constantSet{}, err
	}
	if at != nil {
		c, audited = *at, true
	}
	cs := constantSet{audited: audited}
	eval := func(name string, f data.Formula) (float64, error) {
		v, arith, err := f.Eval(params)
		if err != nil {
			return 0, fmt.Errorf("%s constant %s: %w", impl, name, err)
		}
		prov := f.Provenance
		if f.Source != nil {
			prov = fmt.Sprintf("%s (%s:%d)", prov, f.Source.Path, f.Source.Line)
		}
		cs.reported = append(cs.reported, ConstantValue{Name: name, Label: f.Label, Expr: f.Expr, Value: v, Arithmetic: arith, Provenance: prov})
		return v, nil
	}
	for _, f := range c.InitialWindows {
		v, err := eval("initial_window", f)
		if err != nil {
			return constantSet{}, err
		}
		cs.initial = append(cs.initial, int64(v))
	}
	if len(cs.initial) == 0 {
		return constantSet{}, fmt.Errorf("%s: data has no initial window; a reset cannot be recognised", impl)
	}
	if c.MinWindow != nil {
		v, err := eval("min_window", *c.MinWindow)
		if err != nil {
			return constantSet{}, err
		}
		cs.minWindow = int64(v)
	}
	if c.LossFactor != nil {
		v, err := eval("loss_factor", *c.LossFactor)
		if err != nil {
			return constantSet{}, err
		}
		cs.factor, cs.hasFactor = v, true
	}
	if c.DefaultRTT != nil {
		v, err := eval("default_rtt_us", *c.DefaultRTT)
		if err != nil {
			return constantSet{}, err
		}
		cs.defaultRTT = int64(v)
	}
	return evalLoss(cs, impl, "", params)
}

// evalConstantsFor is evalConstants for a run of the controller cc ("" =
// the implementation's default).
// cc may be a harness's own description ("reno (quic-go's only
// controller)"): its first word names the controller.
func evalConstantsFor(impl, cc string, params map[string]float64, at *data.Constants) (constantSet, error) {
	if f := strings.Fields(strings.ToLower(cc)); len(f) > 0 {
		cc = f[0]
	}
	cs, err := evalConstantsIn(impl, params, at)
	if err != nil || cc == "" {
		return cs, err
	}
	return evalLoss(cs, impl, cc, params)
}

// evalLoss selects the loss response of controller cc ("" = the default).
// A controller without an audited response gets none, and the constants'
// loss factor, which is the default controller's, no longer applies
// either; nor does it to a model-bound one (BBR sets its window from its
// model: classifyModel).
func evalLoss(cs constantSet, impl, cc string, params map[string]float64) (constantSet, error) {
	r, err := lossRuleFor(impl, cc, params)
	if err != nil {
		return constantSet{}, fmt.Errorf("%s: %w", impl, err)
	}
	cs.loss, cs.cc = r, cc
	if (r == nil || r.model) && cc != "" {
		cs.factor, cs.hasFactor = 0, false
	}
	return cs, nil
}

// mergeParams combines the trace's mapped params with the user's overrides
// (user wins) and says which trace params were used.
func mergeParams(impl string, trace map[string]int64, user map[string]float64) (map[string]float64, []string) {
	out := map[string]float64{}
	var used []string
	if m, ok := traceParams[canonicalImpl(impl)]; ok {
		names := make([]string, 0, len(trace))
		for k := range trace {
			names = append(names, k)
		}
		sort.Strings(names)
		for _, k := range names {
			if p, ok := m[k]; ok {
				out[p] = float64(trace[k])
				used = append(used, fmt.Sprintf("%s=%d from the trace (%s)", p, trace[k], k))
			}
		}
	}
	for k, v := range user {
		out[k] = v
	}
	return out, used
}

// canonicalImpl is the pins' spelling of name (data.CanonicalName reads the
// names once per process), or name in lower case when it is not pinned.
func canonicalImpl(name string) string {
	if n, err := data.CanonicalName(name); err == nil {
		return n
	}
	return strings.ToLower(name)
}
