package main

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/klauspost/compress/gzip"
	"github.com/migaudit/migaudit/harnesses/quicgo"
	"github.com/migaudit/migaudit/harnesses/run"
	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/qlogwriter"
)

// Options of one recording.
type Options struct {
	Dir            string
	Size           int64
	MigrateAt      time.Duration
	DelayA, DelayB time.Duration // round trip
	RateBPS        int64
	MaxQueue       time.Duration
}

const alpn = "migaudit-dl"

// Loopback addresses: the relay's front stands for the server (the address
// both paths share); each client socket has its own path address.
var (
	frontIP   = net.IPv4(127, 0, 0, 1)
	clientIPA = net.IPv4(127, 0, 0, 2)
	clientIPB = net.IPv4(127, 0, 0, 3)
)

// Generate runs one download with a migration and writes the material.
func Generate(ctx context.Context, o Options) (string, error) {
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		return "", err
	}
	cert, err := run.SelfSignedTLS()
	if err != nil {
		return "", err
	}
	keylog, err := os.Create(filepath.Join(o.Dir, "keylog.txt"))
	if err != nil {
		return "", err
	}
	defer keylog.Close()
	tracer, traceClosed, err := qlogFile(filepath.Join(o.Dir, "server.sqlog.gz"))
	if err != nil {
		return "", err
	}

	// The server.
	srvUDP, err := net.ListenUDP("udp", &net.UDPAddr{IP: frontIP})
	if err != nil {
		return "", err
	}
	srvTr := &quic.Transport{Conn: srvUDP}
	defer srvTr.Close()
	ln, err := srvTr.Listen(&tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{alpn}, MinVersion: tls.VersionTLS13, KeyLogWriter: keylog},
		&quic.Config{InitialPacketSize: 1280, MaxIdleTimeout: 10 * time.Second, Tracer: tracer})
	if err != nil {
		return "", err
	}
	srvErr := make(chan error, 1)
	go func() { srvErr <- serve(ctx, ln, traceClosed) }()

	// The relay.
	plannedMig := time.Now().Add(o.MigrateAt) // refined once the handshake is done
	capPath := filepath.Join(o.Dir, "wire.pcapng.gz")
	cw, err := newCapture(capPath, o)
	if err != nil {
		return "", err
	}
	rl, err := newRelay(srvUDP.LocalAddr().(*net.UDPAddr), o, cw)
	if err != nil {
		return "", err
	}
	go rl.run(ctx)

	// The client.
	cliA, err := net.ListenUDP("udp", &net.UDPAddr{IP: clientIPA})
	if err != nil {
		return "", err
	}
	cliTr := &quic.Transport{Conn: cliA}
	defer cliTr.Close()
	conn, err := cliTr.Dial(ctx, rl.front.LocalAddr(), &tls.Config{InsecureSkipVerify: true, NextProtos: []string{alpn}, MinVersion: tls.VersionTLS13}, //nolint:gosec // loopback test material
		&quic.Config{InitialPacketSize: 1280, MaxIdleTimeout: 10 * time.Second})
	if err != nil {
		return "", fmt.Errorf("dial: %w", err)
	}
	hs := time.Now()
	plannedMig = hs.Add(o.MigrateAt)
	cw.setWindow(plannedMig.Add(-windowBefore), plannedMig.Add(windowAfter))
	str, err := conn.OpenStreamSync(ctx)
	if err != nil {
		return "", err
	}
	var hdr [8]byte
	binary.BigEndian.PutUint64(hdr[:], uint64(o.Size))
	if _, err := str.Write(hdr[:]); err != nil {
		return "", err
	}
	_ = str.Close()
	migErr := make(chan error, 1)
	go func() {
		select {
		case <-time.After(time.Until(plannedMig)):
		case <-ctx.Done():
			migErr <- ctx.Err()
			return
		}
		migErr <- migrate(ctx, conn)
	}()
	got, rerr := io.Copy(io.Discard, str)
	if rerr != nil {
		return "", fmt.Errorf("download: %d bytes: %w", got, rerr)
	}
	if got != o.Size {
		return "", fmt.Errorf("download: got %d of %d bytes", got, o.Size)
	}
	if err := <-migErr; err != nil {
		return "", fmt.Errorf("migration: %w", err)
	}
	_ = conn.CloseWithError(0, "done")
	if err := <-srvErr; err != nil {
		return "", fmt.Errorf("server: %w", err)
	}
	time.Sleep(100 * time.Millisecond) // the close crosses the relay
	rl.stop()
	n, err := cw.close()
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%d bytes in %s; migration %s after the handshake; %d datagrams captured", got, time.Since(hs).Round(time.Millisecond), o.MigrateAt, n), nil
}

func migrate(ctx context.Context, conn *quic.Conn) error {
	udp, err := net.ListenUDP("udp", &net.UDPAddr{IP: clientIPB})
	if err != nil {
		return err
	}
	p, err := conn.AddPath(&quic.Transport{Conn: udp})
	if err != nil {
		return err
	}
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := p.Probe(pctx); err != nil {
		return err
	}
	return p.Switch()
}

func serve(ctx context.Context, ln *quic.Listener, traceClosed <-chan struct{}) error {
	conn, err := ln.Accept(ctx)
	if err != nil {
		return err
	}
	str, err := conn.AcceptStream(ctx)
	if err != nil {
		return err
	}
	var hdr [8]byte
	if _, err := io.ReadFull(str, hdr[:]); err != nil {
		return err
	}
	n := int64(binary.BigEndian.Uint64(hdr[:]))
	buf := make([]byte, 64<<10)
	for i := range buf {
		buf[i] = byte(i * 7)
	}
	for sent := int64(0); sent < n; {
		w, err := str.Write(buf[:min(int64(len(buf)), n-sent)])
		sent += int64(w)
		if err != nil {
			return err
		}
	}
	if err := str.Close(); err != nil {
		return err
	}
	select {
	case <-conn.Context().Done():
	case <-time.After(5 * time.Second):
		_ = conn.CloseWithError(0, "linger expired")
	}
	select {
	case <-traceClosed:
		return nil
	case <-time.After(5 * time.Second):
		return errors.New("qlog not closed within 5 s")
	}
}

// qlogFile is harnesses/quicgo's tracer, writing gzip.
func qlogFile(path string) (func(context.Context, bool, quic.ConnectionID) qlogwriter.Trace, <-chan struct{}, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, nil, err
	}
	tracer, closed := quicgo.QlogTracer(&gzipFile{Writer: gzip.NewWriter(f), f: f})
	return tracer, closed, nil
}

// gzipFile closes the gzip stream, then the file under it.
type gzipFile struct {
	*gzip.Writer
	f *os.File
}

func (g *gzipFile) Close() error {
	err := g.Writer.Close()
	if cerr := g.f.Close(); err == nil {
		err = cerr
	}
	return err
}
