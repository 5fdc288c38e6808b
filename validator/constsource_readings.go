package validator

// The validator's own reading of each implementation's congestion
// constants: for every constant the survey states, which definitions at the
// pin give it (each found by a pattern on one file's text, its value
// evaluated with the symbols it names resolved in that file) and the
// formula that combines them. A parameter the source cannot give (a path
// MTU or send size negotiated at run time) is named with the reason, and its
// value taken from the entry being compared; a structural fact the formula
// rests on (that the window is computed from this symbol) is a pattern that
// must match. Written from the source by hand, like decide_<impl>.go, and
// sharing nothing with audit/.

// constReading reads one survey constant out of the source.
type constReading struct {
	constant string // initial_window, min_window, loss_factor, default_rtt (µs)
	// path is the survey entry's source.path this reading answers; "" is
	// an entry without one (a value observed at run time).
	path    string
	expr    string // over the symbols and run-time parameters
	symbols []symbolReading
	// runtime names the parameters the run sets, with why.
	runtime map[string]string
	// requires are patterns that must match: the formula rests on them.
	requires []symbolReading
}

// symbolReading finds a symbol's value text: group (default 1) of pattern
// in file.
type symbolReading struct {
	name, file, pattern string
	group               int
}

// readDefine reads `#define id value`.
func readDefine(name, file, id string) symbolReading {
	return symbolReading{name: name, file: file, pattern: `(?m)^[ \t]*#[ \t]*define[ \t]+` + id + `[ \t]+(.+)$`}
}

// readAssign reads a constant's initialiser: `[pub] [static|const|constexpr]
// [type] id [: type] = value` (C, C++, Go const blocks, Rust, Python).
func readAssign(name, file, id string) symbolReading {
	return symbolReading{name: name, file: file, pattern: `(?m)^[ \t]*(?:pub(?:\([a-z]+\))?[ \t]+)?(?:(?:static|const|constexpr|inline)[ \t]+)*(?:[\w:<>]+[ \t]+)*` + id + `[ \t]*(?::[ \t]*[^=\n]+?)?[ \t]*=[ \t]*([^;\n]+)`}
}

// readField reads a struct literal's `id: value,` (Rust Default impls).
func readField(name, file, id string) symbolReading {
	return symbolReading{name: name, file: file, pattern: `(?m)^[ \t]+` + id + `:[ \t]*([^,\n]+),`}
}

// readText reads group g of an arbitrary pattern.
func readText(name, file, pattern string, g int) symbolReading {
	return symbolReading{name: name, file: file, pattern: pattern, group: g}
}

// mustMatch is a pattern the formula rests on.
func mustMatch(file, pattern string) symbolReading {
	return symbolReading{file: file, pattern: pattern}
}

var constReadings = map[string][]constReading{
	"picoquic": {
		{constant: "initial_window", path: "picoquic/picoquic_internal.h", expr: "w",
			symbols: []symbolReading{readDefine("w", "picoquic/picoquic_internal.h", "PICOQUIC_CWIN_INITIAL")}},
		{constant: "initial_window", path: "", expr: "n*S",
			symbols: []symbolReading{readText("n", "picoquic/picoquic_internal.h", `#define PICOQUIC_CWIN_INITIAL \((\d+) \* PICOQUIC_MAX_PACKET_SIZE\)`, 1)},
			runtime: map[string]string{"S": "the send size the connection negotiates at run time"}},
		{constant: "min_window", path: "picoquic/bbr.c", expr: "n*S",
			symbols: []symbolReading{readText("n", "picoquic/bbr.c", `path_x->cwin = (\d+) \* path_x->send_mtu;`, 1)},
			runtime: map[string]string{"S": "path_x->send_mtu, the path's send size at run time"}},
		{constant: "default_rtt", path: "picoquic/picoquic_internal.h", expr: "r",
			symbols: []symbolReading{readDefine("r", "picoquic/picoquic_internal.h", "PICOQUIC_INITIAL_RTT")}},
	},
	"quic-go": {
		{constant: "initial_window", path: "internal/congestion/cubic_sender.go", expr: "n*S",
			symbols:  []symbolReading{readAssign("n", "internal/congestion/cubic_sender.go", "initialCongestionWindow"), readAssign("S", "internal/protocol/params.go", "InitialPacketSize")},
			requires: []symbolReading{mustMatch("internal/congestion/cubic_sender.go", `initialMaxDatagramSize\s*=\s*protocol\.ByteCount\(protocol\.InitialPacketSize\)`), mustMatch("internal/congestion/cubic_sender.go", `initialCongestionWindow\*initialMaxDatagramSize`)}},
		{constant: "min_window", path: "internal/congestion/cubic_sender.go", expr: "n*S",
			symbols:  []symbolReading{readAssign("n", "internal/congestion/cubic_sender.go", "minCongestionWindowPackets"), readAssign("S", "internal/protocol/params.go", "InitialPacketSize")},
			requires: []symbolReading{mustMatch("internal/congestion/cubic_sender.go", `initialMaxDatagramSize\s*=\s*protocol\.ByteCount\(protocol\.InitialPacketSize\)`)}},
		{constant: "loss_factor", path: "internal/congestion/cubic_sender.go", expr: "b",
			symbols: []symbolReading{readAssign("b", "internal/congestion/cubic_sender.go", "renoBeta")}},
		{constant: "default_rtt", path: "internal/utils/rtt_stats.go", expr: "r",
			symbols: []symbolReading{readAssign("r", "internal/utils/rtt_stats.go", "DefaultInitialRTT")}},
	},
	"quiche": {
		{constant: "initial_window", path: "quiche/src/recovery/congestion/mod.rs", expr: "n*S",
			symbols:  []symbolReading{readAssign("n", "quiche/src/lib.rs", "DEFAULT_INITIAL_CONGESTION_WINDOW_PACKETS"), readAssign("S", "quiche/src/lib.rs", "MAX_SEND_UDP_PAYLOAD_SIZE")},
			requires: []symbolReading{mustMatch("quiche/src/lib.rs", `max_send_udp_payload_size: MAX_SEND_UDP_PAYLOAD_SIZE,`), mustMatch("quiche/src/recovery/congestion/mod.rs", `recovery_config\.max_send_udp_payload_size \*\s*recovery_config\.initial_congestion_window_packets`)}},
		{constant: "min_window", path: "quiche/src/recovery/mod.rs", expr: "n*S",
			symbols: []symbolReading{readAssign("n", "quiche/src/recovery/mod.rs", "MINIMUM_WINDOW_PACKETS"), readAssign("S", "quiche/src/lib.rs", "MAX_SEND_UDP_PAYLOAD_SIZE")}},
		{constant: "loss_factor", path: "quiche/src/recovery/congestion/cubic.rs", expr: "b",
			symbols: []symbolReading{readAssign("b", "quiche/src/recovery/congestion/cubic.rs", "BETA_CUBIC")}},
		{constant: "default_rtt", path: "quiche/src/lib.rs", expr: "r",
			symbols: []symbolReading{readAssign("r", "quiche/src/lib.rs", "DEFAULT_INITIAL_RTT")}},
	},
	"msquic": {
		{constant: "initial_window", path: "src/core/cubic.c", expr: "n*(MTU-ip-udp)",
			symbols:  []symbolReading{readDefine("n", "src/core/quicdef.h", "QUIC_INITIAL_WINDOW_PACKETS"), readDefine("ip", "src/inc/quic_datapath.h", "CXPLAT_MIN_IPV4_HEADER_SIZE"), readDefine("udp", "src/inc/quic_datapath.h", "CXPLAT_UDP_HEADER_SIZE")},
			runtime:  map[string]string{"MTU": "the path MTU at run time"},
			requires: []symbolReading{mustMatch("src/inc/quic_datapath.h", `Mtu - CXPLAT_MIN_IPV4_HEADER_SIZE - CXPLAT_UDP_HEADER_SIZE`), mustMatch("src/core/cubic.c", `DatagramPayloadLength \* Cubic->InitialWindowPackets`)}},
		{constant: "min_window", path: "src/core/quicdef.h", expr: "n*(MTU-ip-udp)",
			symbols: []symbolReading{readDefine("n", "src/core/quicdef.h", "QUIC_PERSISTENT_CONGESTION_WINDOW_PACKETS"), readDefine("ip", "src/inc/quic_datapath.h", "CXPLAT_MIN_IPV4_HEADER_SIZE"), readDefine("udp", "src/inc/quic_datapath.h", "CXPLAT_UDP_HEADER_SIZE")},
			runtime: map[string]string{"MTU": "the path MTU at run time"}},
		{constant: "loss_factor", path: "src/core/cubic.c", expr: "b/10",
			symbols: []symbolReading{readDefine("b", "src/core/cubic.c", "TEN_TIMES_BETA_CUBIC")}},
		{constant: "default_rtt", path: "src/core/quicdef.h", expr: "r*1000",
			symbols:  []symbolReading{readDefine("r", "src/core/quicdef.h", "QUIC_INITIAL_RTT")},
			requires: []symbolReading{mustMatch("src/core/quicdef.h", `#define QUIC_INITIAL_RTT\s+\d+ // millisec`)}},
	},
	"ngtcp2": {
		{constant: "initial_window", path: "lib/ngtcp2_cc.c", expr: "min(hn*S, max(ln*S, lim))",
			symbols: []symbolReading{
				readText("ln", "lib/ngtcp2_cc.c", `ngtcp2_max\((\d+) \* max_udp_payload_size, (\d+)\);`, 1),
				readText("lim", "lib/ngtcp2_cc.c", `ngtcp2_max\((\d+) \* max_udp_payload_size, (\d+)\);`, 2),
				readText("hn", "lib/ngtcp2_cc.c", `ngtcp2_min\((\d+) \* max_udp_payload_size, n\);`, 1),
				readDefine("S", "lib/includes/ngtcp2/ngtcp2.h", "NGTCP2_MAX_UDP_PAYLOAD_SIZE")},
			requires: []symbolReading{mustMatch("lib/ngtcp2_cid.c", `dcid->max_udp_payload_size = NGTCP2_MAX_UDP_PAYLOAD_SIZE;`)}},
		{constant: "loss_factor", path: "lib/ngtcp2_cc.c", expr: "a/b",
			symbols: []symbolReading{readText("a", "lib/ngtcp2_cc.c", `cstat->ssthresh = cstat->cwnd \* (\d+) / (\d+);`, 1), readText("b", "lib/ngtcp2_cc.c", `cstat->ssthresh = cstat->cwnd \* (\d+) / (\d+);`, 2)}},
		{constant: "min_window", path: "lib/ngtcp2_cc.c", expr: "n*S",
			symbols: []symbolReading{readText("n", "lib/ngtcp2_cc.c", `ngtcp2_max\(cstat->ssthresh, (\d+) \* cstat->max_tx_udp_payload_size\)`, 1), readDefine("S", "lib/includes/ngtcp2/ngtcp2.h", "NGTCP2_MAX_UDP_PAYLOAD_SIZE")}},
		// NGTCP2_MILLISECONDS is in nanoseconds.
		{constant: "default_rtt", path: "lib/includes/ngtcp2/ngtcp2.h", expr: "r/1000",
			symbols: []symbolReading{readDefine("r", "lib/includes/ngtcp2/ngtcp2.h", "NGTCP2_DEFAULT_INITIAL_RTT")}},
	},
	"aioquic": {
		{constant: "initial_window", path: "src/aioquic/quic/congestion/base.py", expr: "n*S",
			symbols:  []symbolReading{readAssign("n", "src/aioquic/quic/congestion/base.py", "K_INITIAL_WINDOW"), readAssign("S", "src/aioquic/quic/configuration.py", "SMALLEST_MAX_DATAGRAM_SIZE")},
			requires: []symbolReading{mustMatch("src/aioquic/quic/configuration.py", `max_datagram_size: int = SMALLEST_MAX_DATAGRAM_SIZE`)}},
		{constant: "min_window", path: "src/aioquic/quic/congestion/reno.py", expr: "n*S",
			symbols:  []symbolReading{readAssign("n", "src/aioquic/quic/congestion/base.py", "K_MINIMUM_WINDOW"), readAssign("S", "src/aioquic/quic/configuration.py", "SMALLEST_MAX_DATAGRAM_SIZE")},
			requires: []symbolReading{mustMatch("src/aioquic/quic/congestion/reno.py", `K_MINIMUM_WINDOW \* self\._max_datagram_size`)}},
		{constant: "loss_factor", path: "src/aioquic/quic/congestion/reno.py", expr: "b",
			symbols: []symbolReading{readAssign("b", "src/aioquic/quic/congestion/reno.py", "K_LOSS_REDUCTION_FACTOR")}},
		// In seconds.
		{constant: "default_rtt", path: "src/aioquic/quic/configuration.py", expr: "r*1000000",
			symbols: []symbolReading{readAssign("r", "src/aioquic/quic/configuration.py", "initial_rtt")}},
	},
	"lsquic": {
		{constant: "initial_window", path: "src/liblsquic/lsquic_bbr.c", expr: "n*mss",
			symbols:  []symbolReading{readDefine("n", "src/liblsquic/lsquic_bbr.c", "kInitialCongestionWindow"), readDefine("mss", "src/liblsquic/lsquic_bbr.c", "kDefaultTCPMSS")},
			requires: []symbolReading{mustMatch("src/liblsquic/lsquic_bbr.c", `bbr->bbr_cwnd = kInitialCongestionWindow \* kDefaultTCPMSS;`)}},
		{constant: "initial_window", path: "src/liblsquic/lsquic_cubic.c", expr: "n*mss",
			symbols: []symbolReading{readText("n", "src/liblsquic/lsquic_cubic.c", `cubic->cu_cwnd\s*= (\d+) \* TCP_MSS;`, 1), readDefine("mss", "src/liblsquic/lsquic_cubic.h", "TCP_MSS")}},
		{constant: "min_window", path: "src/liblsquic/lsquic_bbr.c", expr: "w",
			symbols: []symbolReading{readDefine("w", "src/liblsquic/lsquic_bbr.c", "kDefaultMinimumCongestionWindow")}},
		{constant: "default_rtt", path: "src/liblsquic/lsquic_send_ctl.c", expr: "r",
			symbols:  []symbolReading{readDefine("r", "src/liblsquic/lsquic_send_ctl.c", "INITIAL_RTT")},
			requires: []symbolReading{mustMatch("src/liblsquic/lsquic_send_ctl.c", `#define INITIAL_RTT\s+\d+\s+/\* Microseconds \*/`)}},
	},
	"mvfst": {
		{constant: "initial_window", path: "quic/congestion_control/QuicCubic.cpp", expr: "min(mx*min(v4, v6), max(b, n*min(v4, v6)))",
			symbols: []symbolReading{
				readAssign("n", "quic/QuicConstants.h", "kInitCwndInMss"), readAssign("mx", "quic/QuicConstants.h", "kDefaultMaxCwndInMss"),
				readAssign("v4", "quic/QuicConstants.h", "kDefaultV4UDPSendPacketLen"), readAssign("v6", "quic/QuicConstants.h", "kDefaultV6UDPSendPacketLen"),
				readText("b", "quic/congestion_control/QuicCubic.h", `uint64_t initCwndBytes = (\d+)`, 1)},
			requires: []symbolReading{
				mustMatch("quic/state/TransportSettings.h", `initCwndInMss\{kInitCwndInMss\}`), mustMatch("quic/state/TransportSettings.h", `maxCwndInMss\{kDefaultMaxCwndInMss\}`),
				mustMatch("quic/state/StateData.h", `udpSendPacketLen\{kDefaultUDPSendPacketLen\}`),
				mustMatch("quic/QuicConstants.h", `kDefaultUDPSendPacketLen =\s*\(kDefaultV4UDPSendPacketLen < kDefaultV6UDPSendPacketLen\s*\? kDefaultV4UDPSendPacketLen\s*: kDefaultV6UDPSendPacketLen\)`)}},
		{constant: "min_window", path: "quic/congestion_control/QuicCubic.cpp", expr: "n*min(v4, v6)",
			symbols: []symbolReading{readAssign("n", "quic/QuicConstants.h", "kMinCwndInMss"), readAssign("v4", "quic/QuicConstants.h", "kDefaultV4UDPSendPacketLen"), readAssign("v6", "quic/QuicConstants.h", "kDefaultV6UDPSendPacketLen")},
			requires: []symbolReading{mustMatch("quic/state/TransportSettings.h", `minCwndInMss\{kMinCwndInMss\}`),
				mustMatch("quic/QuicConstants.h", `kDefaultUDPSendPacketLen =\s*\(kDefaultV4UDPSendPacketLen < kDefaultV6UDPSendPacketLen\s*\? kDefaultV4UDPSendPacketLen\s*: kDefaultV6UDPSendPacketLen\)`)}},
		{constant: "loss_factor", path: "quic/QuicConstants.h", expr: "b",
			symbols: []symbolReading{readAssign("b", "quic/QuicConstants.h", "kDefaultCubicReductionFactor")}},
		{constant: "default_rtt", path: "quic/state/TransportSettings.h", expr: "r",
			symbols:  []symbolReading{readAssign("r", "quic/QuicConstants.h", "kDefaultInitialRtt")},
			requires: []symbolReading{mustMatch("quic/state/TransportSettings.h", `std::chrono::microseconds initialRtt\{kDefaultInitialRtt\}`)}},
	},
	"neqo": {
		// The path's datagram size is the first MTU of the IPv4 search
		// table less the IPv4 and UDP headers (the testbed is IPv4).
		{constant: "initial_window", path: "neqo-transport/src/cc/classic_cc.rs", expr: "min(n*(m-h), max(ln*(m-h), lim))",
			symbols: []symbolReading{
				readAssign("n", "neqo-transport/src/cc/classic_cc.rs", "CWND_INITIAL_PKTS"),
				readText("ln", "neqo-transport/src/cc/classic_cc.rs", `const_min\(CWND_INITIAL_PKTS \* mtu, const_max\((\d+) \* mtu, ([\d_]+)\)\)`, 1),
				readText("lim", "neqo-transport/src/cc/classic_cc.rs", `const_min\(CWND_INITIAL_PKTS \* mtu, const_max\((\d+) \* mtu, ([\d_]+)\)\)`, 2),
				readText("m", "neqo-transport/src/pmtud.rs", `MTU_SIZES_V4: &\[usize\] = &\[\s*([\d_]+),`, 1),
				readText("h", "neqo-transport/src/pmtud.rs", `IpAddr::V4\(_\) => ([\d +]+),`, 1)}},
		{constant: "min_window", path: "neqo-transport/src/cc/classic_cc.rs", expr: "(m-h)*n",
			symbols: []symbolReading{
				readText("n", "neqo-transport/src/cc/classic_cc.rs", `fn cwnd_min\(&self\) -> usize \{\s*self\.max_datagram_size\(\) \* (\d+)`, 1),
				readText("m", "neqo-transport/src/pmtud.rs", `MTU_SIZES_V4: &\[usize\] = &\[\s*([\d_]+),`, 1),
				readText("h", "neqo-transport/src/pmtud.rs", `IpAddr::V4\(_\) => ([\d +]+),`, 1)}},
		{constant: "loss_factor", path: "neqo-transport/src/cc/cubic.rs", expr: "a/b",
			symbols: []symbolReading{readAssign("a", "neqo-transport/src/cc/cubic.rs", "BETA_USIZE_DIVIDEND"), readAssign("b", "neqo-transport/src/cc/cubic.rs", "BETA_USIZE_DIVISOR")}},
		{constant: "default_rtt", path: "neqo-transport/src/rtt.rs", expr: "r",
			symbols: []symbolReading{readAssign("r", "neqo-transport/src/rtt.rs", "DEFAULT_INITIAL_RTT")}},
	},
	"quicly": {
		{constant: "initial_window", path: "lib/cc-reno.c", expr: "max(n, mn)*min(S, mtu)",
			symbols: []symbolReading{
				readDefine("n", "lib/defaults.c", "DEFAULT_INITCWND_PACKETS"), readDefine("mn", "include/quicly/cc.h", "QUICLY_MIN_CWND"),
				readDefine("S", "lib/defaults.c", "DEFAULT_INITIAL_EGRESS_MAX_UDP_PAYLOAD_SIZE"),
				readText("mtu", "lib/cc-reno.c", `static const uint32_t mtu_max = (\d+);`, 1)},
			requires: []symbolReading{mustMatch("lib/defaults.c", `\.initcwnd_packets = DEFAULT_INITCWND_PACKETS`), mustMatch("lib/defaults.c", `\.initial_egress_max_udp_payload_size = DEFAULT_INITIAL_EGRESS_MAX_UDP_PAYLOAD_SIZE`)}},
		{constant: "min_window", path: "lib/cc-reno.c", expr: "mn*S",
			symbols: []symbolReading{readDefine("mn", "include/quicly/cc.h", "QUICLY_MIN_CWND"), readDefine("S", "lib/defaults.c", "DEFAULT_INITIAL_EGRESS_MAX_UDP_PAYLOAD_SIZE")}},
		{constant: "loss_factor", path: "lib/cc-reno.c", expr: "b",
			symbols: []symbolReading{readDefine("b", "include/quicly/cc.h", "QUICLY_RENO_BETA")}},
		// In milliseconds.
		{constant: "default_rtt", path: "include/quicly/constants.h", expr: "r*1000",
			symbols: []symbolReading{readDefine("r", "include/quicly/constants.h", "QUICLY_DEFAULT_INITIAL_RTT")}},
	},
	"quinn": {
		{constant: "initial_window", path: "quinn-proto/src/congestion/cubic.rs", expr: "min(max(lim, lo*B), hi*B)",
			symbols: []symbolReading{
				readText("lim", "quinn-proto/src/congestion/cubic.rs", `initial_window: ([\d_]+)\.clamp\((\d+) \* BASE_DATAGRAM_SIZE, (\d+) \* BASE_DATAGRAM_SIZE\)`, 1),
				readText("lo", "quinn-proto/src/congestion/cubic.rs", `initial_window: ([\d_]+)\.clamp\((\d+) \* BASE_DATAGRAM_SIZE, (\d+) \* BASE_DATAGRAM_SIZE\)`, 2),
				readText("hi", "quinn-proto/src/congestion/cubic.rs", `initial_window: ([\d_]+)\.clamp\((\d+) \* BASE_DATAGRAM_SIZE, (\d+) \* BASE_DATAGRAM_SIZE\)`, 3),
				readAssign("B", "quinn-proto/src/congestion.rs", "BASE_DATAGRAM_SIZE")}},
		{constant: "min_window", path: "quinn-proto/src/congestion/cubic.rs", expr: "n*S",
			symbols:  []symbolReading{readText("n", "quinn-proto/src/congestion/cubic.rs", `fn minimum_window\(&self\) -> u64 \{\s*(\d+) \* self\.current_mtu`, 1), readAssign("S", "quinn-proto/src/lib.rs", "INITIAL_MTU")},
			requires: []symbolReading{mustMatch("quinn-proto/src/config/transport.rs", `initial_mtu: INITIAL_MTU,`)}},
		{constant: "loss_factor", path: "quinn-proto/src/congestion/cubic.rs", expr: "b",
			symbols: []symbolReading{readAssign("b", "quinn-proto/src/congestion/cubic.rs", "BETA_CUBIC")}},
		{constant: "default_rtt", path: "quinn-proto/src/config/transport.rs", expr: "r",
			symbols: []symbolReading{readField("r", "quinn-proto/src/config/transport.rs", "initial_rtt")}},
	},
	"s2n-quic": {
		{constant: "initial_window", path: "quic/s2n-quic-core/src/recovery/cubic.rs", expr: "min(hn*S, max(lim, ln*S))",
			symbols: []symbolReading{
				readText("lim", "quic/s2n-quic-core/src/recovery/cubic.rs", `const INITIAL_WINDOW_LIMIT: u32 = (\d+);`, 1),
				readText("hn", "quic/s2n-quic-core/src/recovery/cubic.rs", `(\d+) \* max_datagram_size as u32,\s*max\(INITIAL_WINDOW_LIMIT, (\d+) \* max_datagram_size as u32\)`, 1),
				readText("ln", "quic/s2n-quic-core/src/recovery/cubic.rs", `(\d+) \* max_datagram_size as u32,\s*max\(INITIAL_WINDOW_LIMIT, (\d+) \* max_datagram_size as u32\)`, 2),
				readAssign("S", "quic/s2n-quic-core/src/path/mtu.rs", "MINIMUM_MAX_DATAGRAM_SIZE")}},
		{constant: "min_window", path: "quic/s2n-quic-core/src/recovery/cubic.rs", expr: "n*S",
			symbols: []symbolReading{readText("n", "quic/s2n-quic-core/src/recovery/cubic.rs", `fn minimum_window\(&self\) -> f32 \{\s*([\d.]+) \* self\.max_datagram_size`, 1), readAssign("S", "quic/s2n-quic-core/src/path/mtu.rs", "MINIMUM_MAX_DATAGRAM_SIZE")}},
		{constant: "loss_factor", path: "quic/s2n-quic-core/src/recovery/cubic.rs", expr: "b",
			symbols: []symbolReading{readAssign("b", "quic/s2n-quic-core/src/recovery/cubic.rs", "BETA_CUBIC")}},
		{constant: "default_rtt", path: "quic/s2n-quic-core/src/recovery/rtt_estimator.rs", expr: "r",
			symbols: []symbolReading{readAssign("r", "quic/s2n-quic-core/src/recovery/rtt_estimator.rs", "DEFAULT_INITIAL_RTT")}},
	},
	"tquic": {
		{constant: "initial_window", path: "src/congestion_control/bbr.rs", expr: "n*S",
			symbols:  []symbolReading{readField("n", "src/lib.rs", "initial_congestion_window"), readField("S", "src/lib.rs", "max_datagram_size")},
			requires: []symbolReading{mustMatch("src/congestion_control/bbr.rs", `\.initial_congestion_window\s*\.saturating_mul\(max_datagram_size\)`)}},
		{constant: "min_window", path: "src/congestion_control/bbr.rs", expr: "n*S",
			symbols:  []symbolReading{readField("n", "src/lib.rs", "min_congestion_window"), readField("S", "src/lib.rs", "max_datagram_size")},
			requires: []symbolReading{mustMatch("src/congestion_control/bbr.rs", `conf\.min_congestion_window\.saturating_mul\(max_datagram_size\)`)}},
		{constant: "default_rtt", path: "src/lib.rs", expr: "r",
			symbols: []symbolReading{readText("r", "src/lib.rs", `\n[ \t]+initial_rtt: ([A-Z_]+),`, 1)}},
	},
	"xquic": {
		{constant: "initial_window", path: "src/congestion_control/xqc_cubic.c", expr: "n*mss",
			symbols:  []symbolReading{readText("n", "src/congestion_control/xqc_cubic.c", `#define XQC_CUBIC_INIT_WIN\s+\((\d+) \* XQC_CUBIC_MSS\)`, 1), readDefine("mss", "src/transport/xqc_packet.h", "XQC_MSS")},
			requires: []symbolReading{mustMatch("src/congestion_control/xqc_cubic.c", `#define XQC_CUBIC_MSS\s+XQC_MSS\b`)}},
		{constant: "min_window", path: "src/congestion_control/xqc_cubic.c", expr: "n*mss",
			symbols:  []symbolReading{readText("n", "src/congestion_control/xqc_cubic.c", `#define XQC_CUBIC_MIN_WIN\s+\((\d+) \* XQC_CUBIC_MSS\)`, 1), readDefine("mss", "src/transport/xqc_packet.h", "XQC_MSS")},
			requires: []symbolReading{mustMatch("src/congestion_control/xqc_cubic.c", `#define XQC_CUBIC_MSS\s+XQC_MSS\b`)}},
		{constant: "loss_factor", path: "src/congestion_control/xqc_cubic.c", expr: "b/s",
			symbols: []symbolReading{readDefine("b", "src/congestion_control/xqc_cubic.c", "XQC_CUBIC_BETA"), readDefine("s", "src/congestion_control/xqc_cubic.c", "XQC_CUBIC_BETA_SCALE")}},
		{constant: "default_rtt", path: "src/transport/xqc_conn.c", expr: "r",
			symbols: []symbolReading{readDefine("r", "src/transport/xqc_send_ctl.h", "XQC_kInitialRtt_us")}},
	},
}
