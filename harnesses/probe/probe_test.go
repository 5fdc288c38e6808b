package probe

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// startServer runs a probe test server on loopback and returns its address.
func startServer(t *testing.T, refuse Refuse) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan net.Addr, 1)
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, ServerOptions{Listen: "127.0.0.1:0", Refuse: refuse}, ready) }()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	select {
	case a := <-ready:
		return a.String()
	case err := <-done:
		t.Fatalf("server: %v", err)
	case <-time.After(5 * time.Second):
		t.Fatal("server did not start")
	}
	return ""
}

// canBind127002 reports whether 127.0.0.2 is usable (it is on Linux loopback).
func canBind127002(t *testing.T) {
	c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.ParseIP("127.0.0.2")})
	if err != nil {
		t.Skipf("127.0.0.2 not bindable here (%v): the IP-migration step needs a second loopback address", err)
	}
	c.Close()
}

// TestProbeLoopback migrates real quic-go connections across ports and from
// 127.0.0.1 to 127.0.0.2 against servers that accept or refuse migration.
func TestProbeLoopback(t *testing.T) {
	canBind127002(t)
	tests := []struct {
		refuse Refuse
		want   Class
	}{
		{RefuseNone, Full},
		{RefuseIP, PortOnly},
		{RefuseAll, None},
	}
	for _, tt := range tests {
		t.Run(string(tt.want), func(t *testing.T) {
			addr := startServer(t, tt.refuse)
			res, err := Run(context.Background(), Options{
				Target: addr, SNI: "localhost", Local: "127.0.0.1", Via: "127.0.0.2",
				Insecure: true, StepTimeout: 2 * time.Second,
			})
			if err != nil {
				t.Fatal(err)
			}
			if res.Class != tt.want {
				t.Fatalf("class %q, want %q; evidence: %s", res.Class, tt.want, res.Evidence)
			}
			if !res.Handshake.OK || res.Handshake.Bytes != 16<<10 {
				t.Errorf("first GET: ok=%v bytes=%d", res.Handshake.OK, res.Handshake.Bytes)
			}
			if tt.want == Full {
				if !res.IP.PathValidated || res.IP.ValidationRTTUS <= 0 {
					t.Errorf("IP step: validated=%v rtt=%dµs", res.IP.PathValidated, res.IP.ValidationRTTUS)
				}
				if host, _, _ := net.SplitHostPort(res.IP.LocalAddr); host != "127.0.0.2" {
					t.Errorf("IP step left from %s, want 127.0.0.2", res.IP.LocalAddr)
				}
			}
		})
	}
}

func TestProbeNoQUIC(t *testing.T) {
	// A UDP socket that never answers: the handshake must time out → no QUIC.
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	res, err := Run(context.Background(), Options{Target: pc.LocalAddr().String(), Insecure: true, StepTimeout: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if res.Class != NoQUIC {
		t.Fatalf("class %q, want %q", res.Class, NoQUIC)
	}
}

func TestClassify(t *testing.T) {
	ok := Step{Attempted: true, OK: true}
	bad := Step{Attempted: true, Error: "timed out"}
	tests := []struct {
		r    Result
		want Class
	}{
		{Result{Handshake: bad}, NoQUIC},
		{Result{Handshake: ok, Port: ok, IP: ok}, Full},
		{Result{Handshake: ok, Port: ok, IP: bad}, PortOnly},
		{Result{Handshake: ok, Port: ok, IP: Step{}}, PortOnly},
		{Result{Handshake: ok, Port: bad, IP: ok}, IPOnly},
		{Result{Handshake: ok, Port: bad, IP: bad}, None},
		{Result{Handshake: ok, Port: bad, IP: bad, DisableActiveMigration: true}, None},
	}
	for i, tt := range tests {
		if got, ev := Classify(tt.r); got != tt.want || ev == "" {
			t.Errorf("%d: got %q (%q), want %q", i, got, ev, tt.want)
		}
	}
}

func TestRunRejectsBadOptions(t *testing.T) {
	for _, o := range []Options{{Target: "no-port"}, {Target: "127.0.0.1:443", Via: "not-an-ip"}} {
		if _, err := Run(context.Background(), o); err == nil {
			t.Errorf("%+v: no error", o)
		}
	}
}

func TestScanResumesAndSkipsDone(t *testing.T) {
	addr := startServer(t, RefuseNone)
	dead, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer dead.Close()
	out := filepath.Join(t.TempDir(), "scan.jsonl")
	// A previous, interrupted scan already finished the dead target and
	// tore its last line mid-write.
	prev := `{"target":"` + dead.LocalAddr().String() + `","class":"no QUIC"}` + "\n" + `{"target":"` + addr
	if err := os.WriteFile(out, []byte(prev), 0o644); err != nil {
		t.Fatal(err)
	}
	targets := []Options{
		{Target: dead.LocalAddr().String(), Insecure: true, StepTimeout: 300 * time.Millisecond},
		{Target: addr, SNI: "localhost", Local: "127.0.0.1", Insecure: true, StepTimeout: 2 * time.Second},
	}
	rs, err := Scan(context.Background(), ScanOptions{Targets: targets, Concurrency: 2, OutPath: out})
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 1 || rs[0].Target != addr {
		t.Fatalf("probed %d targets (%v); want only the unfinished %s", len(rs), rs, addr)
	}
	if rs[0].Class != PortOnly { // no --via: IP step not attempted
		t.Errorf("class %q, want port-only without --via", rs[0].Class)
	}
	done, err := Done(out)
	if err != nil {
		t.Fatal(err)
	}
	if !done[addr] || !done[dead.LocalAddr().String()] {
		t.Errorf("done after scan = %v", done)
	}
}

func TestReadTargets(t *testing.T) {
	p := filepath.Join(t.TempDir(), "t.txt")
	os.WriteFile(p, []byte("# list\n127.0.0.1:4433 localhost\n\n[::1]:443\n"), 0o644)
	ts, err := ReadTargets(p)
	if err != nil || len(ts) != 2 || ts[0].SNI != "localhost" || ts[1].Target != "[::1]:443" {
		t.Fatalf("ReadTargets = %+v, %v", ts, err)
	}
	os.WriteFile(p, []byte("example.org\n"), 0o644)
	if _, err := ReadTargets(p); err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Fatalf("bad line: err = %v", err)
	}
}
