package ngtcp2

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/migaudit/migaudit/harnesses/run"
	"github.com/migaudit/migaudit/harnesses/run/vethnet"
)

// TestRunRepVeth runs one short repetition per scenario on the unshaped
// veth network (not a measurement): it checks that the harness starts both
// programs, that the route flip makes the client's new local address the
// path-B address (the port-only trap), and that port-rebind keeps path A.
func TestRunRepVeth(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root for network namespaces")
	}
	h := New()
	if _, err := h.Check(context.Background()); err != nil {
		t.Skipf("ngtcp2 binaries not usable: %v", err)
	}
	n, err := vethnet.Up("ng")
	if err != nil {
		t.Fatal(err)
	}
	defer n.Down()
	for _, sc := range []run.Scenario{run.Standard, run.PortRebind, run.NATRebind} {
		t.Run(string(sc), func(t *testing.T) {
			dir := t.TempDir()
			res, err := h.RunRep(context.Background(), run.RepEnv{Net: n, Scenario: sc, Transfer: 3 * time.Second, MigrateAt: 1 * time.Second, Dir: dir, Index: 1})
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
