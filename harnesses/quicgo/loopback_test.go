package quicgo

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/migaudit/migaudit/discriminator"
	"github.com/migaudit/migaudit/parsers"
)

// syncBuf is a goroutine-safe bytes.Buffer.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) { s.mu.Lock(); defer s.mu.Unlock(); return s.b.Write(p) }
func (s *syncBuf) events() []Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Event
	sc := bufio.NewScanner(bytes.NewReader(s.b.Bytes()))
	for sc.Scan() {
		var e Event
		if json.Unmarshal(sc.Bytes(), &e) == nil {
			out = append(out, e)
		}
	}
	return out
}

func freePort(t *testing.T) int {
	c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	return c.LocalAddr().(*net.UDPAddr).Port
}

// TestLoopbackScenarios runs server and client in-process on loopback
// (path A 127.0.0.1, path B 127.0.0.2; no root needed) and checks, per
// scenario, where the server saw the client go and that the server's qlog
// shows quic-go's reset to its initial window (32 × 1280 = 40,960 B,
// computed by the discriminator from the formula) after the move.
func TestLoopbackScenarios(t *testing.T) {
	if c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 2)}); err != nil {
		t.Skipf("127.0.0.2 not bindable: %v", err)
	} else {
		c.Close()
	}
	tests := []struct {
		scenario  string
		wantHosts []string // the server's successive views of the client's host
	}{
		{"standard", []string{"127.0.0.2"}},
		{"port-rebind", []string{"127.0.0.1"}},
		{"nat-rebind", []string{"127.0.0.2"}},
		{"migrate-back", []string{"127.0.0.2", "127.0.0.1"}},
	}
	for _, tc := range tests {
		t.Run(tc.scenario, func(t *testing.T) {
			dir := t.TempDir()
			addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			var srvOut, cliOut syncBuf
			srvErr := make(chan error, 1)
			go func() {
				srvErr <- RunServer(ctx, ServerOptions{Listen: addr, Qlog: filepath.Join(dir, "server.sqlog"), MaxBody: 1 << 30, Linger: 5 * time.Second}, &srvOut)
			}()
			time.Sleep(200 * time.Millisecond)
			err := RunClient(ctx, ClientOptions{Server: addr, LocalA: "127.0.0.1", LocalB: "127.0.0.2", Scenario: tc.scenario,
				Size: 12 << 20, MigrateAt: 500 * time.Millisecond, BackAfter: 600 * time.Millisecond,
				Qlog: filepath.Join(dir, "client.sqlog"), ReadRate: 6 << 20}, &cliOut)
			if err != nil {
				t.Fatalf("client: %v", err)
			}
			if err := <-srvErr; err != nil {
				t.Fatalf("server: %v", err)
			}
			var hosts []string
			for _, e := range srvOut.events() {
				if e.Ev == "peer_address" {
					h, _, _ := net.SplitHostPort(e.To)
					hosts = append(hosts, h)
				}
			}
			if strings.Join(hosts, ",") != strings.Join(tc.wantHosts, ",") {
				t.Fatalf("server saw the client move to %v, want %v", hosts, tc.wantHosts)
			}
			tl, err := parsers.ParseFile(filepath.Join(dir, "server.sqlog"), parsers.Options{})
			if err != nil {
				t.Fatal(err)
			}
			a, err := discriminator.Analyze(tl, discriminator.Options{Impl: "quic-go", Params: map[string]float64{"S": InitialPacketSize}})
			if err != nil {
				t.Fatal(err)
			}
			want := int64(-1)
			for _, c := range a.Constants {
				if strings.HasPrefix(c.Name, "initial_window") {
					want = int64(c.Value)
				}
			}
			if !a.ResetObserved || a.WindowAfterBytes != want {
				t.Errorf("reset observed %v at %d B, want the initial window %d B (events %+v)", a.ResetObserved, a.WindowAfterBytes, want, a.Events)
			}
		})
	}
}

// TestCheckRefusesForeignExecutable: Check reads the quic-go version from
// the executable that will run; a binary without it is refused.
func TestCheckRefusesForeignExecutable(t *testing.T) {
	_, err := (&Harness{Exe: "/bin/true"}).Check(context.Background())
	if err == nil || !strings.Contains(err.Error(), "rebuild") {
		t.Fatalf("err = %v", err)
	}
	if _, err := New().Capabilities().ResolveCC("bbr"); err == nil || !strings.Contains(err.Error(), "NewReno") {
		t.Fatalf("ResolveCC(bbr) = %v", err)
	}
	if cc, err := New().Capabilities().ResolveCC(""); err != nil || cc != "reno" {
		t.Fatalf("ResolveCC(\"\") = %q, %v", cc, err)
	}
}
