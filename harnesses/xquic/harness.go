// Package xquic is the live harness for xquic, built from the user's
// upstream checkout (harnesses/upstream): BoringSSL from its own checkout
// (harnesses/boringssl, --dep boringssl=DIR[@COMMIT]; the same build as
// lsquic's), libxquic-static at the chosen commit, and this project's own
// client and server (csrc/xqharness.c) linked against them.
//
// xquic has no API for a single-path client to move its connection to
// another local address: additional paths exist only with multipath
// (xqc_conn_create_path), which the peer must negotiate, and a new peer
// address on a connection without it is handled as a NAT rebinding of its
// one path. So, as with lsquic (harnesses/twosock), at MigrateAt the client
// sends every datagram from its socket bound to the path-B address and
// hands what arrives there to xqc_engine_packet_process with that local
// address; the server sees the new peer address. Both sides report what
// xqc_conn_get_peer_addr/xqc_conn_get_local_addr say, print
// xqc_conn_get_stats every 5 ms and xquic's own log (parsers' xquic-log
// format). The server writes the TLS secrets (the engine's keylog_cb).
package xquic

import (
	"fmt"
	"os"

	"github.com/migaudit/migaudit/harnesses/run"
	"github.com/migaudit/migaudit/harnesses/twosock"
)

// DefaultCC is xquic's own default: a connection whose settings name no
// controller gets xqc_cubic_cb (xqc_send_ctl_create,
// src/transport/xqc_send_ctl.c at the pinned commit).
const DefaultCC = "cubic"

// Lib describes xquic to harnesses/twosock.
var Lib = twosock.Lib{
	Impl: "xquic", Upstream: Upstream, Deps: Deps, Binary: Binary, Library: Library, Prefix: "xqc",
	VersionFrom: "xqc_configure.h xquic_VERSION_MAJOR/MINOR", Ensure: Ensure,
	Caps: twosock.Capabilities("xquic (without multipath a client has one path, and a new peer address is a NAT rebinding of it)",
		[]string{"cubic", "bbr"}, DefaultCC, map[string]string{"bbr1": "bbr", "bbrv1": "bbr"},
		"the harness links xquic's default build, which has xqc_cubic_cb and xqc_bbr_cb (Reno, BBRv2 and Copa need XQC_ENABLE_* build options)"),
	MigrationAPI: migrationAPI,
}

// New returns the harness; log receives build progress lines.
func New(log func(string)) *twosock.Harness { return twosock.New(Lib, log) }

func migrationAPI(sc run.Scenario) string {
	if sc == run.NATRebind {
		return "none told to xquic: the client's datagrams leave from the path-B socket, and what arrives there is handed to xqc_engine_packet_process with the path-A address (NAT rebinding)"
	}
	return "no single-path client migration API in xquic: the client's datagrams leave from the path-B socket, and what arrives there is handed to xqc_engine_packet_process with the path-B local address"
}

func init() {
	run.Register("xquic", func() run.Harness {
		return New(func(s string) { fmt.Fprintln(os.Stderr, "migaudit: "+s) })
	})
}
