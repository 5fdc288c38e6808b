package probe

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/migaudit/migaudit/harnesses/run/runtest"
	"github.com/migaudit/migaudit/harnesses/testbed"
)

// TestProbeInTestbed is the end-to-end probe: real servers in the server
// namespace, the quic-go client migrating from path A to a new port and to
// path B's address across the emulated links.
func TestProbeInTestbed(t *testing.T) {
	runtest.Root(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	tb, err := testbed.Up(ctx, testbed.Standard())
	if err != nil {
		t.Fatalf("testbed up: %v", err)
	}
	defer tb.Down()
	tests := []struct {
		impl   string
		refuse Refuse
		want   Class
	}{
		{"quic-go", RefuseNone, Full},
		{"quic-go", RefuseAll, None},
		{"ngtcp2", RefuseNone, Full},
	}
	for _, tt := range tests {
		t.Run(tt.impl+"/refuse="+string(tt.refuse), func(t *testing.T) {
			if tt.impl == "ngtcp2" {
				if _, err := exec.LookPath("gtlsserver"); err != nil {
					t.Skip("gtlsserver absent: apt-get install ngtcp2-server")
				}
			}
			r, err := InTestbed(ctx, tb, TestbedOptions{Impl: tt.impl, Refuse: tt.refuse, StepTimeout: 2 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			if r.Class != tt.want {
				t.Fatalf("class %q, want %q: %s", r.Class, tt.want, r.Evidence)
			}
			if tt.want == Full {
				// Path B's emulated RTT is 40 ms and path A's 20 ms: a
				// validation faster than 39 ms did not cross path B. (Slower
				// happens: a lost PATH_CHALLENGE is retried.)
				if ms := float64(r.IP.ValidationRTTUS) / 1000; ms < 39 {
					t.Errorf("IP path validation took %.1f ms: faster than path B's 40 ms RTT", ms)
				}
				if ms := float64(r.Port.ValidationRTTUS) / 1000; ms < 19 {
					t.Errorf("port path validation took %.1f ms: faster than path A's 20 ms RTT", ms)
				}
				if !strings.HasPrefix(r.IP.LocalAddr, tb.ClientAddrB().String()+":") {
					t.Errorf("IP step from %s, want path B %s", r.IP.LocalAddr, tb.ClientAddrB())
				}
			}
		})
	}
}
