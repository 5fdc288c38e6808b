package probe

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"

	"github.com/migaudit/migaudit/harnesses/run"
)

// Refuse selects how a test server refuses migration. A real deployment
// refuses either by announcing disable_active_migration (quic-go, as a
// server, has no knob to send it) or, far more often (QUICstep §4.2), by a
// load balancer that does not route a migrated 4-tuple back to the same
// server. The test server models the latter by dropping datagrams.
type Refuse string

const (
	RefuseNone Refuse = ""     // accept migration
	RefuseIP   Refuse = "ip"   // drop datagrams from any IP but the first client's
	RefuseAll  Refuse = "all"  // drop datagrams from any 4-tuple but the first
	refuseFlag        = "none" // CLI spelling of RefuseNone
)

// ParseRefuse reads a --refuse value.
func ParseRefuse(s string) (Refuse, error) {
	switch s {
	case "", refuseFlag:
		return RefuseNone, nil
	case "ip":
		return RefuseIP, nil
	case "all":
		return RefuseAll, nil
	}
	return "", fmt.Errorf("--refuse %q: want none, ip or all", s)
}

// ServerOptions configure the probe's test server.
type ServerOptions struct {
	Listen string // ADDR:PORT
	Refuse Refuse
	// BodyBytes is the size of every GET response (default 16 KiB).
	BodyBytes int
	// ListenPacket opens the server socket (default net.ListenPacket); the
	// testbed mode opens it inside the server namespace.
	ListenPacket func(addr string) (net.PacketConn, error)
}

// filterConn drops datagrams from addresses the refusal mode rejects.
type filterConn struct {
	net.PacketConn
	mode  Refuse
	mu    sync.Mutex
	first *net.UDPAddr
}

func (f *filterConn) ReadFrom(b []byte) (int, net.Addr, error) {
	for {
		n, addr, err := f.PacketConn.ReadFrom(b)
		if err != nil || f.allow(addr, n > 0 && isInitial(b[0])) {
			return n, addr, err
		}
	}
}

// isInitial reports a QUIC v1 long-header Initial packet (RFC 9000 §17.2.2).
func isInitial(first byte) bool { return first&0x80 != 0 && first&0x30 == 0 }

// allow locks onto the 4-tuple of the first client Initial; stray packets of
// an earlier connection arriving first must not capture the lock.
func (f *filterConn) allow(a net.Addr, initial bool) bool {
	ua, ok := a.(*net.UDPAddr)
	if !ok || f.mode == RefuseNone {
		return true
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.first == nil {
		if initial {
			f.first = ua
		}
		return true
	}
	if f.mode == RefuseIP {
		return ua.IP.Equal(f.first.IP)
	}
	return ua.IP.Equal(f.first.IP) && ua.Port == f.first.Port
}

// Serve runs an HTTP/3 server until ctx is done. ready, if not nil, receives
// the bound address once listening.
func Serve(ctx context.Context, opt ServerOptions, ready chan<- net.Addr) error {
	if opt.BodyBytes == 0 {
		opt.BodyBytes = 16 << 10
	}
	cert, err := run.SelfSignedTLS()
	if err != nil {
		return err
	}
	listen := opt.ListenPacket
	if listen == nil {
		listen = func(a string) (net.PacketConn, error) { return net.ListenPacket("udp", a) }
	}
	uc, err := listen(opt.Listen)
	if err != nil {
		return fmt.Errorf("listen %s: %w", opt.Listen, err)
	}
	var pc net.PacketConn = uc
	if opt.Refuse != RefuseNone {
		pc = &filterConn{PacketConn: uc, mode: opt.Refuse}
	}
	body := make([]byte, opt.BodyBytes)
	for i := range body {
		body[i] = byte('a' + i%26)
	}
	srv := &http3.Server{
		TLSConfig:  http3.ConfigureTLSConfig(&tls.Config{Certificates: []tls.Certificate{cert}}),
		QUICConfig: &quic.Config{MaxIdleTimeout: 30 * time.Second},
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Length", strconv.Itoa(len(body)))
			w.Write(body)
		}),
	}
	if ready != nil {
		ready <- uc.LocalAddr()
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(pc) }()
	select {
	case <-ctx.Done():
		srv.Close()
		uc.Close()
		return nil
	case err := <-errc:
		uc.Close()
		return err
	}
}
