package lossresp

// The versions that run live (each repetition's manifest.json names them):
// picoquic and msquic are built from their pins; ngtcp2 runs as Debian's
// 0.12.1, quiche as 0.18.0 (npm), quic-go as v0.61.0.
const (
	picoquicRef = "0dc8ba8b2be30246720934d3f43a144b372e1a90"
	msquicRef   = "4db8b3987100034e9ded68df2c4d3526cbeeeaad"
	ngtcp2Ref   = "v0.12.1"
	// ngtcp2PinRef is the pin the ngtcp2 harness builds by default
	// (data/implementations.json); its BBR is read there.
	ngtcp2PinRef = "d7fb3ed0407e1333e4ecbd011fcfd9c16499d5e0"
	quicheRef    = "0.18.0"
	quicgoRef    = "v0.61.0"
	// quicly is built from its pin (harnesses/quicly).
	quiclyRef = "b11d3634282371bcd643cf69d48b7b4b983fa1ba"
	// xquic is built from its pin (harnesses/xquic).
	xquicRef = "d67938db705c39b1f160ed1596ab4392f75e7e3c"
	// quinn runs as Debian's crates, tag 0.9.3 (harnesses/quinn).
	quinnRef = "0.9.3"
)

// What can add to the window between its last logged value and the
// reduction: the acknowledgements processed before loss detection.
const (
	growthAckFirst = "acknowledgements in the same ACK frame are processed (the window grows) before loss detection reduces it"
	growthSampled  = "the window is sampled, not logged per change: it grows from the last sample until the ACK that detects the loss"
)

// Specs are the loss responses audited: each live implementation's default
// controller and the --cc alternatives whose reduction is one product.
// BBR sets its window from its model, not by a factor on loss: ngtcp2's
// (BBRv3 at the pin) is stated as "bbr-model" (β on the inflight bounds,
// the line that bounds cwnd, min_pipe_cwnd as the floor); picoquic's,
// quiche's and msquic's BBR are not read yet; picoquic's CUBIC computes in
// doubles over W_max/send_mtu (cubic.c) and is not extracted yet.
var Specs = []Spec{
	{
		Impl: "picoquic", Upstream: "https://github.com/private-octopus/picoquic", Ref: picoquicRef,
		Algorithm: "newreno", Default: true, File: "picoquic/newreno.c",
		Anchors:    []string{`picoquic_newreno_sim_enter_recovery\(`},
		Apply:      `->ssthresh = \w+->cwin / (\d+);`,
		Arithmetic: "int-div",
		Floor:      `->ssthresh < (PICOQUIC_CWIN_MINIMUM)\)`,
		FloorDef:   &Def{File: "picoquic/picoquic_internal.h", Pattern: `#define %s \((\d+) \* PICOQUIC_MAX_PACKET_SIZE\)`},
		FloorExpr:  "%d*1536", Multiplies: "cwin (the simulated NewReno window) at the loss event; cwin = ssthresh follows",
		Growth: growthAckFirst,
	},
	{
		Impl: "quiche", Upstream: "https://github.com/cloudflare/quiche", Ref: quicheRef,
		Algorithm: "cubic", Default: true, File: "quiche/src/recovery/cubic.rs",
		Anchors:    []string{`^fn congestion_event\(`},
		Apply:      `r\.ssthresh = \(r\.congestion_window as f64 \* (\w+)\) as usize;`,
		Arithmetic: "float64-trunc",
		FactorDef:  &Def{File: "quiche/src/recovery/cubic.rs", Pattern: `const %s: f64 = ([0-9.]+);`},
		Floor:      `r\.max_datagram_size \* recovery::(\w+),`,
		FloorDef:   &Def{File: "quiche/src/recovery/mod.rs", Pattern: `const %s: usize = (\d+);`},
		FloorExpr:  "%d*S", FloorParams: map[string]float64{"S": 1200},
		Multiplies: "congestion_window at the loss event; congestion_window = ssthresh follows",
		Growth:     growthSampled,
	},
	{
		Impl: "quiche", Upstream: "https://github.com/cloudflare/quiche", Ref: quicheRef,
		Algorithm: "reno", File: "quiche/src/recovery/reno.rs",
		Anchors:    []string{`^fn congestion_event\(`, `r\.congestion_window = \(r\.congestion_window as f64 \*$`},
		Apply:      `^\s*recovery::(LOSS_REDUCTION_FACTOR)\)$`,
		Arithmetic: "float64-trunc",
		FactorDef:  &Def{File: "quiche/src/recovery/mod.rs", Pattern: `const %s: f64 = ([0-9.]+);`},
		Floor:      `r\.max_datagram_size \* recovery::(\w+),`,
		FloorDef:   &Def{File: "quiche/src/recovery/mod.rs", Pattern: `const %s: usize = (\d+);`},
		FloorExpr:  "%d*S", FloorParams: map[string]float64{"S": 1200},
		Multiplies: "congestion_window at the loss event", Growth: growthSampled,
	},
	{
		Impl: "ngtcp2", Upstream: "https://github.com/ngtcp2/ngtcp2", Ref: ngtcp2Ref,
		Algorithm: "cubic", Default: true, File: "lib/ngtcp2_cc.c",
		Anchors:    []string{`^void ngtcp2_cc_cubic_cc_congestion_event\(`},
		Apply:      `cstat->ssthresh = cstat->cwnd \* (\d+) / (\d+);`,
		Arithmetic: "int-muldiv",
		Floor:      `min_cwnd = (\d+) \* cstat->max_tx_udp_payload_size;`,
		FloorExpr:  "%d*S", FloorParams: map[string]float64{"S": 1200},
		Multiplies: "cstat->cwnd at the loss event; cwnd = ssthresh follows",
		Growth:     growthAckFirst,
	},
	{
		Impl: "ngtcp2", Upstream: "https://github.com/ngtcp2/ngtcp2", Ref: ngtcp2Ref,
		Algorithm: "reno", File: "lib/ngtcp2_cc.c",
		Anchors:    []string{`^void ngtcp2_cc_reno_cc_congestion_event\(`},
		Apply:      `cstat->cwnd >>= (\w+);`,
		Arithmetic: "int-shift",
		FactorDef:  &Def{File: "lib/ngtcp2_cc.h", Pattern: `#define %s (\d+)`},
		Floor:      `min_cwnd = (\d+) \* cstat->max_tx_udp_payload_size;`,
		FloorExpr:  "%d*S", FloorParams: map[string]float64{"S": 1200},
		Multiplies: "cstat->cwnd at the loss event", Growth: growthAckFirst,
	},
	{
		// BBRv3 (lib/ngtcp2_bbr.c): on a loss round bbr_loss_lower_bounds
		// sets inflight_shortterm = max(inflight_latest, inflight_shortterm
		// × β) (and bbr_handle_inflight_too_high inflight_longterm =
		// max(tx_in_flight, target × β)); every ACK bbr_set_cwnd bounds
		// cwnd by max_inflight (BDP × cwnd_gain + extra_acked), PROBE_RTT's
		// BDP/2, and bbr_bound_cwnd_for_model's cap (inflight_longterm or
		// the headroom, then inflight_shortterm), never below
		// min_pipe_cwnd = 4 × S. No packet conservation at this version.
		Impl: "ngtcp2", Upstream: "https://github.com/ngtcp2/ngtcp2", Ref: ngtcp2PinRef,
		Algorithm: "bbr", File: "lib/ngtcp2_bbr.c",
		Anchors:    []string{`^static void bbr_loss_lower_bounds\(ngtcp2_cc_bbr \*bbr\) \{`},
		Apply:      `bbr->inflight_shortterm \* (NGTCP2_BBR_BETA_NUMER) / (NGTCP2_BBR_BETA_DENOM)\);`,
		Arithmetic: "bbr-model",
		FactorDef:  &Def{File: "lib/ngtcp2_bbr.c", Pattern: `^#define %s (\d+)$`},
		Bound:      `^\s*cstat->cwnd = ngtcp2_min\(cstat->cwnd, cap\);`,
		Floor:      `^\s*return max_udp_payload_size \* (\d+);`,
		FloorExpr:  "%d*S", FloorParams: map[string]float64{"S": 1200},
		Multiplies: "the model's inflight bounds (inflight_shortterm, inflight_longterm) on a loss round, not cwnd: cwnd = min(cwnd, the model's cap) on every ACK, at least min_pipe_cwnd",
		Growth:     "cwnd grows by the bytes each ACK delivers up to the model's max_inflight; the model's bounds are not in the trace",
	},
	{
		Impl: "msquic", Upstream: "https://github.com/microsoft/msquic", Ref: msquicRef,
		Algorithm: "cubic", Default: true, File: "src/core/cubic.c",
		Anchors:    []string{`^CubicCongestionControlOnCongestionEvent\(`, `IsPersistentCongestion && !Cubic->IsInPersistentCongestion`, `^    \} else \{`},
		Apply:      `Cubic->CongestionWindow \* (\w+) / (\d+)\);`,
		Arithmetic: "int-muldiv",
		FactorDef:  &Def{File: "src/core/cubic.c", Pattern: `#define %s (\d+)`},
		Floor:      `DatagramPayloadLength \* (\w+),`,
		FloorDef:   &Def{File: "src/core/quicdef.h", Pattern: `#define %s\s+(\d+)`},
		FloorExpr:  "%d*(MTU-20-8)", FloorParams: map[string]float64{"MTU": 1288},
		Multiplies: "CongestionWindow at the loss event", Growth: growthAckFirst,
	},
	{
		Impl: "quic-go", Upstream: "https://github.com/quic-go/quic-go", Ref: quicgoRef,
		Algorithm: "reno", Default: true, File: "internal/congestion/cubic_sender.go",
		Anchors:    []string{`^func \(c \*cubicSender\) OnCongestionEvent\(`, `if c\.reno \{`},
		Apply:      `c\.congestionWindow = protocol\.ByteCount\(float64\(c\.congestionWindow\) \* (\w+)\)`,
		Arithmetic: "float64-trunc",
		FactorDef:  &Def{File: "internal/congestion/cubic_sender.go", Pattern: `^\s*%s\s+= ([0-9.]+)`},
		Floor:      `return c\.maxDatagramSize \* (\w+)$`, FloorAnywhere: true,
		FloorDef:  &Def{File: "internal/congestion/cubic_sender.go", Pattern: `^\s*%s\s+= (\d+)`},
		FloorExpr: "%d*S", FloorParams: map[string]float64{"S": 1280},
		Multiplies: "congestionWindow at the loss event", Growth: growthAckFirst,
	},
	{
		// The same line halves the window on the first loss out of slow
		// start (ssthresh still UINT32_MAX): that branch is not this
		// product, and its collapse stays unexplained.
		Impl: "quicly", Upstream: "https://github.com/h2o/quicly", Ref: quiclyRef,
		Algorithm: "reno", Default: true, File: "lib/cc-reno.c",
		Anchors:    []string{`^void quicly_cc_reno_on_lost\(`},
		Apply:      `cc->cwnd \*= cc->ssthresh == UINT32_MAX \? 0\.5 : (\w+);`,
		Arithmetic: "float64-trunc",
		FactorDef:  &Def{File: "include/quicly/cc.h", Pattern: `^#define %s ([0-9.]+)`},
		Floor:      `cc->cwnd < (\w+) \* max_udp_payload_size\)`,
		FloorDef:   &Def{File: "include/quicly/cc.h", Pattern: `^#define %s (\d+)`},
		FloorExpr:  "%d*S", FloorParams: map[string]float64{"S": 1280},
		Multiplies: "cwnd at a loss after the first (cwnd *= QUICLY_RENO_BETA; cwnd is a uint32_t, the double product truncated); ssthresh = cwnd follows",
		Growth:     growthAckFirst,
	},
	{
		Impl: "xquic", Upstream: "https://github.com/alibaba/xquic", Ref: xquicRef,
		Algorithm: "cubic", Default: true, File: "src/congestion_control/xqc_cubic.c",
		Anchors:    []string{`^xqc_cubic_on_lost\(`, `Multiplicative Decrease`},
		Apply:      `cubic->cwnd = cubic->cwnd \* (\w+) / (\w+);`,
		Arithmetic: "int-muldiv",
		FactorDef:  &Def{File: "src/congestion_control/xqc_cubic.c", Pattern: `^#define %s\s+(\d+)`},
		Floor:      `^#define XQC_CUBIC_MIN_WIN\s+\((\d+) \* XQC_CUBIC_MSS\)`, FloorAnywhere: true,
		FloorExpr: "%d*S", FloorParams: map[string]float64{"S": 1436},
		Multiplies: "cwnd at the loss event (then at least min_cwnd); ssthresh = cwnd follows",
		Growth:     growthAckFirst,
	},
	{
		// w_max is the window at the loss, or (1+β)/2 of it under fast
		// convergence (a window below the last w_max): that branch is
		// not this product.
		Impl: "quinn", Upstream: "https://github.com/quinn-rs/quinn", Ref: quinnRef,
		Algorithm: "cubic", Default: true, File: "quinn-proto/src/congestion/cubic.rs",
		Anchors:    []string{`fn on_congestion_event\(`},
		Apply:      `\(self\.cubic_state\.w_max \* (\w+)\) as u64,`,
		Arithmetic: "float64-trunc",
		FactorDef:  &Def{File: "quinn-proto/src/congestion/cubic.rs", Pattern: `^const %s: f64 = ([0-9.]+);`},
		Floor:      `minimum_window: (\d+) \* MAX_DATAGRAM_SIZE,`, FloorAnywhere: true,
		FloorExpr: "%d*S", FloorParams: map[string]float64{"S": 1232},
		Multiplies: "w_max, the window at the loss event unless fast convergence lowered it; window = ssthresh (at least minimum_window) follows",
		Growth:     growthAckFirst,
	},
}
