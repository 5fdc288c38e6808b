// Package lsquic is the live harness for lsquic, built from the user's
// upstream checkout (harnesses/upstream): BoringSSL from its own checkout
// (harnesses/boringssl, --dep boringssl=DIR[@COMMIT]), liblsquic at the
// chosen commit with its ls-qpack and ls-hpack submodules from their
// mirrors, and this project's own client and server (csrc/lsqharness.c)
// linked against them.
//
// lsquic has no API for a client to move a connection to another local
// address: its client migrates only to a server's preferred_address
// (try_to_begin_migration, src/liblsquic/lsquic_full_conn_ietf.c). It does
// handle a datagram arriving on another local address: the connection
// records a new path (ietf_full_conn_ci_record_addrs), validates it and
// switches to it (switch_path_to). So at MigrateAt the client sends every
// datagram from its socket bound to the path-B address and hands what
// arrives there to lsquic_engine_packet_in with that local address; the
// server sees the new peer address, validates it and moves
// (harnesses/twosock). Both sides report what lsquic_conn_get_sockaddr
// says, and print lsquic_conn_get_info every 5 ms and lsquic's own log
// (parsers' lsquic-log format). The server writes the TLS secrets
// (BoringSSL's keylog callback on its SSL_CTX).
package lsquic

import (
	"fmt"
	"os"
	"strings"

	"github.com/migaudit/migaudit/harnesses/run"
	"github.com/migaudit/migaudit/harnesses/twosock"
)

// DefaultCC is lsquic's own default, es_cc_algo 0 = LSQUIC_DF_CC_ALGO 3
// (adaptive: BBRv1 until the first RTT sample, then Cubic if the smoothed
// RTT is at most es_cc_rtt_thresh = 1500 µs, else BBRv1; include/lsquic.h
// and lsquic_send_ctl.c at the pinned commit).
const DefaultCC = "adaptive"

// Lib describes lsquic to harnesses/twosock.
var Lib = twosock.Lib{
	Impl: "lsquic", Upstream: Upstream, Deps: Deps, Binary: Binary, Library: Library, Prefix: "lsq",
	VersionFrom: "LSQUIC_MAJOR/MINOR/PATCH_VERSION", Ensure: Ensure,
	Caps: twosock.Capabilities("lsquic (its client migrates only to a server's preferred_address)",
		[]string{"adaptive", "cubic", "bbr"}, DefaultCC, map[string]string{"bbr1": "bbr", "bbrv1": "bbr"},
		"lsquic's es_cc_algo selects Cubic (1), BBRv1 (2) or adaptive (3, the default)"),
	MigrationAPI: migrationAPI,
	Settings: func(b *twosock.Built, s map[string]string) {
		if rec, err := os.ReadFile(b.Lib.Path(SubmodulesFile)); err == nil {
			s["submodules"] = strings.ReplaceAll(strings.TrimSpace(string(rec)), "\n", "; ")
		}
	},
}

// New returns the harness; log receives build progress lines.
func New(log func(string)) *twosock.Harness { return twosock.New(Lib, log) }

func migrationAPI(sc run.Scenario) string {
	if sc == run.NATRebind {
		return "none told to lsquic: the client's datagrams leave from the path-B socket, and what arrives there is handed to lsquic_engine_packet_in with the path-A address (NAT rebinding)"
	}
	return "no client migration API in lsquic: the client's datagrams leave from the path-B socket, and what arrives there is handed to lsquic_engine_packet_in with the path-B local address (lsquic records, validates and switches to the new path)"
}

func init() {
	run.Register("lsquic", func() run.Harness {
		return New(func(s string) { fmt.Fprintln(os.Stderr, "migaudit: "+s) })
	})
}
