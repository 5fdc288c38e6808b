package ngtcp2

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/migaudit/migaudit/harnesses/run"
	"github.com/migaudit/migaudit/harnesses/run/vethnet"
)

// TestRunRepVeth runs one short repetition per scenario on the veth network
// (tbf only, no delay; not a measurement): it checks that the harness
// starts both programs, that the route flip makes the client's new local
// address the path-B address (the port-only trap), and that port-rebind
// keeps path A. (nat-rebind is left out: in a download the example client
// deadlocks until its 30 s idle timeout, see RunRep's notes.)
func TestRunRepVeth(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root for network namespaces")
	}
	h := NewSystem() // Debian 0.12.1: what CI has
	if _, err := h.Check(context.Background()); err != nil {
		t.Skipf("ngtcp2 binaries not usable: %v", err)
	}
	n, err := vethnet.Up("ng")
	if err != nil {
		t.Fatal(err)
	}
	defer n.Down()
	for _, sc := range []run.Scenario{run.Standard, run.PortRebind} {
		t.Run(string(sc), func(t *testing.T) {
			dir := t.TempDir()
			env := run.RepEnv{Net: n, Scenario: sc, Transfer: 3 * time.Second, MigrateAt: 1 * time.Second, Dir: dir, Index: 1}
			plan, err := run.PlanRep(h.Capabilities(), env)
			if err != nil {
				t.Fatal(err)
			}
			env.Plan = plan
			// The runner's part: every repetition starts on path A.
			if err := n.RouteVia(run.PathA); err != nil {
				t.Fatal(err)
			}
			res, err := h.RunRep(context.Background(), env)
			if err != nil {
				t.Fatalf("RunRep: %v (dir %s)", err, dir)
			}
			if !res.Completed {
				t.Fatalf("download incomplete: %+v", res)
			}
			if len(res.Moves) != 1 {
				t.Fatalf("client moves = %+v, want exactly one", res.Moves)
			}
			want := n.ClientAddr(run.PathB).String()
			if sc == run.PortRebind {
				want = n.ClientAddr(run.PathA).String()
			}
			if got := res.Moves[0].To; !hasHost(got, want) {
				t.Errorf("client moved to %s, want host %s", got, want)
			}
			if res.ServerTrace == "" || res.Params["S"].Value != MaxUDPPayload {
				t.Errorf("trace %q params %+v", res.ServerTrace, res.Params)
			}
		})
	}
}

func hasHost(addrport, host string) bool {
	return len(addrport) > len(host) && (addrport[:len(host)+1] == host+":" || addrport[:len(host)+2] == "["+host+"]")
}

func TestCheckMissingBinary(t *testing.T) {
	h := &Harness{System: true, Client: "/nonexistent/gtlsclient", Server: "/usr/sbin/gtlsserver"}
	_, err := h.Check(context.Background())
	if err == nil {
		t.Fatal("Check passed with a missing client binary")
	}
	if !strings.Contains(err.Error(), "apt-get install") {
		t.Errorf("error does not say what to install: %v", err)
	}
}

func TestCheckZeroByteBinary(t *testing.T) {
	if _, err := dpkgVersion(context.Background(), "ngtcp2-client"); err != nil {
		t.Skipf("ngtcp2-client not installed: %v", err)
	}
	dir := t.TempDir()
	empty := filepath.Join(dir, "gtlsclient")
	if err := os.WriteFile(empty, nil, 0o755); err != nil {
		t.Fatal(err)
	}
	_, err := (&Harness{System: true, Client: empty, Server: "/usr/sbin/gtlsserver"}).Check(context.Background())
	if err == nil || !strings.Contains(err.Error(), "zero bytes") {
		t.Fatalf("zero-byte client not refused: %v", err)
	}
}

// TestLogPatterns: the lines the harness reads from gtlsclient 0.12.1's
// stderr (copied from a run's client.stderr.gz).
func TestLogPatterns(t *testing.T) {
	tests := []struct {
		line       string
		wantLocal  string
		wantStream string // "offset+len" for stream 0
	}{
		{"Local address is now [198.18.2.2]:57076", "[198.18.2.2]:57076", ""},
		{"Local address is now 198.18.2.2:57076", "198.18.2.2:57076", ""},
		{"I00000412 0x2c5d5b783061e20d9861e9b39d45dd375b frm rx 231 1RTT STREAM(0x0e) id=0x0 fin=0 offset=301234 len=1380 uni=0", "", "301234+1380"},
		{"I00000053 0x2c5d5b783061e20d9861e9b39d45dd375b frm rx 0 1RTT STREAM(0x0a) id=0x3 fin=0 offset=0 len=18 uni=1", "", ""},
		{"I00000053 0x2c5d5b783061e20d9861e9b39d45dd375b frm rx 0 1RTT STREAM(0x0a) id=0x30 fin=0 offset=0 len=18 uni=1", "", ""},
		{"Changing local address", "", ""},
	}
	for _, tc := range tests {
		var local, stream string
		if m := reLocal.FindStringSubmatch(tc.line); m != nil {
			local = m[1]
		}
		if m := reStream.FindStringSubmatch(tc.line); m != nil {
			stream = m[1] + "+" + m[2]
		}
		if local != tc.wantLocal || stream != tc.wantStream {
			t.Errorf("%q: local %q stream %q, want %q %q", tc.line, local, stream, tc.wantLocal, tc.wantStream)
		}
	}
}

// TestUpstreamAssertion: v1.0.0's gtlsclient aborting on its own
// assertion (testdata: the last lines of a repetition's client.stderr) is
// named in one line; ordinary log lines are not assertions.
func TestUpstreamAssertion(t *testing.T) {
	const want = "gtlsclient aborted on an assertion in ngtcp2 1.0.0+b76981d22d2a's own code, lib/ngtcp2_conn.c:5852 in conn_recv_path_response (`pv->dcid.seq != conn->dcid.current.seq` failed): an upstream bug in the code that ran, not the testbed's fault"
	got, ok := assertionIn(filepath.Join("testdata", "v1.0.0-client.stderr"), "1.0.0+b76981d22d2a")
	if !ok || got != want {
		t.Fatalf("got %q (%v)\nwant %q", got, ok, want)
	}
	for _, l := range []string{
		"I00005132 0x52501e0e69ce70fbb7e17a86b37f3dfea4 ptv path has been validated",
		"gtlsserver: Assertion failed",
		"",
	} {
		if a, ok := UpstreamAssertion(l, ""); ok {
			t.Errorf("%q read as an assertion: %q", l, a)
		}
	}
	if _, ok := assertionIn(filepath.Join("testdata", "no-such.stderr"), ""); ok {
		t.Error("a missing file read as an assertion")
	}
}

// TestSaveClientLine: client.stderr keeps what the evidence reads (the
// handshake, the local address change, path validation, the RTT lines, an
// assertion) and drops the per-packet debug lines.
func TestSaveClientLine(t *testing.T) {
	for _, tc := range []struct {
		line string
		keep bool
	}{
		{"Negotiated cipher suite is AES-128-GCM", true},
		{"Local address is now 198.18.2.2:51521", true},
		{"I00005132 0x52501e0e69ce70fbb7e17a86b37f3dfea4 ptv path has been validated", true},
		{"I00000022 0xf72114832e50873b21bcb356165b657415 ldc latest_rtt=21 min_rtt=21 smoothed_rtt=21 rttvar=10 ack_delay=0", true},
		{"I00000022 0xf72114832e50873b21bcb356165b657415 cca 1200 bytes acked, slow start cwnd=13200", true},
		{"gtlsclient: /src/lib/ngtcp2_conn.c:5852: conn_recv_path_response: Assertion `x' failed.", true},
		{"I00005132 0x52501e0e69ce70fbb7e17a86b37f3dfea4 frm rx 1764636617 1RTT PATH_RESPONSE(0x1b) data=0xbdeca7b1f6633299", false},
		{"I00005132 0x52501e0e69ce70fbb7e17a86b37f3dfea4 pkt rx pkn=1764636617 dcid=0xea91 type=1RTT k=0", false},
		{"I00005132 0x52501e0e69ce70fbb7e17a86b37f3dfea4 con recv packet len=1452", false},
		{"I00000890 0xf72114832e50873b21bcb356165b657415 ldc loss_detection_timer=1796 timeout=24", false},
		{"Sent packet: local=[198.18.1.2]:52598 remote=[198.18.0.1]:4433 ecn=0x2 1200 bytes", false},
		{"Received packet: local=[198.18.1.2]:52598 remote=[198.18.0.1]:4433 ecn=0x2 1452 bytes", false},
		{"Set timer=0.998499356s", false},
		{"Timer has already expired: 0.000404273s", false},
		{"", false},
	} {
		if got := SaveClientLine(tc.line); got != tc.keep {
			t.Errorf("%q: kept %v, want %v", tc.line, got, tc.keep)
		}
	}
}
