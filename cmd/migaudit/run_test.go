package main

import (
	"bytes"
	"strings"
	"testing"

	liverun "github.com/migaudit/migaudit/harnesses/run"
)

// TestRunRefusals: implementations that cannot run here, bad sources and
// bad flags,
// fail at once with a message saying why — before any root check or
// testbed.
func TestRunRefusals(t *testing.T) {
	t.Setenv("MIGAUDIT_MIRRORS", t.TempDir()) // no mirrors: a build-from-source harness has no source
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--impl", "picoquic", "--source", "/nonexistent/picoquic"}, "picoquic source /nonexistent/picoquic: stat /nonexistent/picoquic: no such file or directory"},
		{[]string{"--impl", "picoquic", "--dep", "openssl=/x"}, "--dep openssl: picoquic's dependencies are picotls"},
		{[]string{"--impl", "picoquic", "--dep", "picotls"}, "want name=DIR"},
		{[]string{"--impl", "quic-go", "--source", "/x"}, "quic-go source /x: stat /x: no such file or directory"},
		{[]string{"--impl", "quic-go", "--commit", "v0.54.0"}, "no source for quic-go (https://github.com/quic-go/quic-go)"},
		{[]string{"--impl", "quic-go", "--system"}, "--system applies to harnesses that can run a distribution package"},
		{[]string{"--impl", "ngtcp2"}, "or run Debian's ngtcp2 0.12.1 with --system"},
		{[]string{"--impl", "ngtcp2", "--dep", "picotls=/x"}, "--dep picotls: ngtcp2's dependencies are nghttp3, sfparse, urlparse"},
		{[]string{"--impl", "ngtcp2", "--system", "--commit", "v1.0.0"}, "--system runs Debian's ngtcp2 0.12.1 packages"},
		{[]string{"--impl", "msquic", "--source", "/nonexistent/msquic"}, "msquic source /nonexistent/msquic: stat /nonexistent/msquic: no such file or directory"},
		{[]string{"--impl", "msquic", "--dep", "picotls=/x"}, "--dep picotls: msquic's dependencies are quictls"},
		{[]string{"--impl", "msquic"}, "no source for msquic (https://github.com/microsoft/msquic)"},
		{[]string{"--impl", "nosuch"}, "unknown implementation"},
		// Without a harness: what the live build needs that this machine lacks (one line).
		{[]string{"--impl", "s2n-quic"}, "s2n-quic cannot be run live here — a live build of s2n-quic at the pin with its rustls provider needs Rust crates not in /usr/share/cargo/registry: rustls 0.23"},
		{[]string{"--impl", "tquic"}, "ring 0.17 (Cargo.toml; Debian has 0.16.20)"},
		{[]string{"--impl", "neqo"}, "nss-rs 0.14 (Cargo.toml workspace; not in Debian)"},
		{[]string{"--impl", "aioquic"}, "pylsqpack>=0.3.3 (pyproject.toml (HTTP/3 only); absent here, not in Debian)"},
		{[]string{"--impl", "mvfst"}, "libraries not installed: folly (CMakeLists.txt find_package(folly REQUIRED); not in Debian)"},
		{[]string{"--impl", "quic-go", "--scenario", "sideways"}, "unknown --scenario"},
		{[]string{"--impl", "quic-go", "--retries", "-1"}, "--retries must be 0 or more"},
		{[]string{"--impl", "quic-go", "--instrument"}, "--instrument: quic-go has no instrumented build (msquic has"},
	}
	for _, tc := range tests {
		cmd := newRunCmd()
		var out bytes.Buffer
		cmd.SetOut(&out)
		cmd.SetErr(&out)
		cmd.SetArgs(tc.args)
		err := cmd.Execute()
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%v: err = %v, want %q", tc.args, err, tc.want)
		}
	}
}

// TestVerdictError: a repetition ended by an error (the upstream program's
// own assertion) is named in the run's last line, not only counted.
func TestVerdictError(t *testing.T) {
	const abort = "gtlsclient aborted on an assertion in ngtcp2 1.0.0+b76981d22d2a's own code, lib/ngtcp2_conn.c:5852 in conn_recv_path_response (`pv->dcid.seq != conn->dcid.current.seq` failed): an upstream bug in the code that ran, not the testbed's fault"
	o := liverun.Options{Out: "/tmp/out"}
	tests := []struct {
		name string
		reps []liverun.RepSummary
		want string // "" = no error
	}{
		{"all valid", []liverun.RepSummary{{Rep: 1, Status: liverun.Valid}}, ""},
		{"invalid, no error", []liverun.RepSummary{{Rep: 1, Status: liverun.Invalid}},
			"1 of 1 repetitions not VALID (kept in /tmp/out, excluded from the verdict)"},
		{"ended by an upstream assertion", []liverun.RepSummary{{Rep: 1, Status: liverun.Valid}, {Rep: 2, Status: liverun.Invalid, Error: abort}},
			"1 of 2 repetitions not VALID (kept in /tmp/out, excluded from the verdict): rep 2: " + abort},
	}
	for _, tc := range tests {
		err := verdictError(&liverun.Summary{Reps: tc.reps}, o)
		if tc.want == "" {
			if err != nil {
				t.Errorf("%s: %v", tc.name, err)
			}
			continue
		}
		if err == nil || err.Error() != tc.want {
			t.Errorf("%s: %v\nwant %s", tc.name, err, tc.want)
		}
	}
}
