// Package quicgo is the live harness for quic-go: a server that serves one
// large body on a raw QUIC stream and a client that downloads it and, during
// the download, migrates with quic-go's own API (Conn.AddPath, Path.Probe,
// Path.Switch). Both run as migaudit's hidden subcommand
// `migaudit __harness quic-go server|client` inside the testbed's namespaces
// and write qlog through quic-go's qlogwriter.
//
// Both print one JSON object per line on stdout (Event); the harness reads
// them for progress, for the client's own account of its address changes and
// for the server's view of the client's address (Conn.RemoteAddr, polled).
package quicgo

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime/debug"
	"sync"
	"time"

	"github.com/quic-go/quic-go"
)

// ALPN is the application protocol of the harness's raw-stream download.
const ALPN = "migaudit-dl"

// InitialPacketSize is set explicitly on both ends so the constant formula's
// S comes from the run's own configuration (it equals quic-go's default,
// protocol.InitialPacketSize).
const InitialPacketSize = 1280

// Event is one stdout line of the harness processes.
type Event struct {
	Ev    string  `json:"ev"`
	T     string  `json:"t"` // RFC 3339 with ns
	From  string  `json:"from,omitempty"`
	To    string  `json:"to,omitempty"`
	Bytes int64   `json:"bytes,omitempty"`
	Total int64   `json:"total,omitempty"`
	RTTMS float64 `json:"rtt_ms,omitempty"`
	Msg   string  `json:"msg,omitempty"`
}

type emitter struct {
	mu sync.Mutex
	w  io.Writer
}

func (e *emitter) emit(ev Event) {
	ev.T = time.Now().UTC().Format(time.RFC3339Nano)
	b, _ := json.Marshal(ev)
	e.mu.Lock()
	defer e.mu.Unlock()
	_, _ = e.w.Write(append(b, '\n'))
}

// QuicGoVersion is the quic-go module version compiled into this binary.
func QuicGoVersion() (version, sum string) {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "", ""
	}
	for _, d := range bi.Deps {
		if d.Path == "github.com/quic-go/quic-go" {
			if d.Replace != nil {
				return d.Replace.Version + " (replaced)", d.Replace.Sum
			}
			return d.Version, d.Sum
		}
	}
	return "", ""
}

// ServerOptions configure RunServer.
type ServerOptions struct {
	Listen string // ip:port
	Qlog   string // file to create
	// MaxBody caps what a client may request.
	MaxBody int64
	// Linger is how long to wait for the client to close after the body is
	// sent before closing from this side.
	Linger time.Duration
	// KeyLog, when set, is a file the TLS secrets are appended to in the
	// NSS key log format (tls.Config.KeyLogWriter), for decrypting the
	// repetition's wire capture.
	KeyLog string
}

// RunServer accepts one connection, serves the body the client asks for on
// its first stream (an 8-byte big-endian length), reports every change of
// the connection's remote address, and returns when the connection is gone
// and its qlog is written.
func RunServer(ctx context.Context, o ServerOptions, stdout io.Writer) error {
	em := &emitter{w: stdout}
	cert, err := selfSigned()
	if err != nil {
		return err
	}
	tracer, traceClosed, err := qlogFile(o.Qlog)
	if err != nil {
		return fmt.Errorf("qlog: %w", err)
	}
	udp, err := listenUDP(o.Listen)
	if err != nil {
		return err
	}
	tr := &quic.Transport{Conn: udp}
	defer tr.Close()
	tlsConf := serverTLS(cert)
	if o.KeyLog != "" {
		kl, err := os.OpenFile(o.KeyLog, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
		if err != nil {
			return fmt.Errorf("key log: %w", err)
		}
		defer kl.Close()
		tlsConf.KeyLogWriter = kl
	}
	ln, err := tr.Listen(tlsConf, &quic.Config{
		InitialPacketSize: InitialPacketSize,
		MaxIdleTimeout:    30 * time.Second,
		Tracer:            tracer,
	})
	if err != nil {
		return fmt.Errorf("listen %s: %w", o.Listen, err)
	}
	v, _ := QuicGoVersion()
	em.emit(Event{Ev: "listening", To: udp.LocalAddr().String(), Msg: "quic-go " + v})
	conn, err := ln.Accept(ctx)
	if err != nil {
		return fmt.Errorf("accept: %w", err)
	}
	em.emit(Event{Ev: "accepted", From: conn.RemoteAddr().String(), To: conn.LocalAddr().String()})

	// The server's own view of the client's address.
	watchDone := make(chan struct{})
	go func() {
		defer close(watchDone)
		last := conn.RemoteAddr().String()
		tk := time.NewTicker(2 * time.Millisecond)
		defer tk.Stop()
		for {
			select {
			case <-conn.Context().Done():
				return
			case <-tk.C:
				if cur := conn.RemoteAddr().String(); cur != last {
					em.emit(Event{Ev: "peer_address", From: last, To: cur})
					last = cur
				}
			}
		}
	}()

	str, err := conn.AcceptStream(ctx)
	if err != nil {
		return fmt.Errorf("accept stream: %w", err)
	}
	var hdr [8]byte
	if _, err := io.ReadFull(str, hdr[:]); err != nil {
		return fmt.Errorf("read request: %w", err)
	}
	n := int64(binary.BigEndian.Uint64(hdr[:]))
	if n <= 0 || (o.MaxBody > 0 && n > o.MaxBody) {
		str.CancelWrite(1)
		return fmt.Errorf("client asked for %d bytes (max %d)", n, o.MaxBody)
	}
	em.emit(Event{Ev: "request", Total: n})
	buf := make([]byte, 64<<10)
	for i := range buf {
		buf[i] = byte(i * 7)
	}
	var sent int64
	for sent < n {
		chunk := int64(len(buf))
		if n-sent < chunk {
			chunk = n - sent
		}
		w, err := str.Write(buf[:chunk])
		sent += int64(w)
		if err != nil {
			return fmt.Errorf("write body at %d of %d bytes: %w", sent, n, err)
		}
	}
	if err := str.Close(); err != nil {
		return fmt.Errorf("close stream: %w", err)
	}
	em.emit(Event{Ev: "served", Bytes: sent, Total: n})
	linger := o.Linger
	if linger == 0 {
		linger = 10 * time.Second
	}
	select {
	case <-conn.Context().Done():
	case <-time.After(linger):
		_ = conn.CloseWithError(0, "server linger expired")
	case <-ctx.Done():
		_ = conn.CloseWithError(0, "server interrupted")
	}
	<-watchDone
	select {
	case <-traceClosed:
	case <-time.After(5 * time.Second):
		return errors.New("qlog trace was not closed within 5 s of the connection ending")
	}
	em.emit(Event{Ev: "closed"})
	return nil
}

func listenUDP(addr string) (*net.UDPConn, error) {
	ua, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		return nil, fmt.Errorf("address %q: %w", addr, err)
	}
	c, err := net.ListenUDP("udp", ua)
	if err != nil {
		return nil, fmt.Errorf("bind %s: %w", addr, err)
	}
	return c, nil
}
