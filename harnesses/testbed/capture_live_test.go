package testbed_test

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/quic-go/quic-go"

	"github.com/migaudit/migaudit/harnesses/run"
	"github.com/migaudit/migaudit/harnesses/run/runtest"
	"github.com/migaudit/migaudit/harnesses/testbed"
)

// TestCaptureQUIC runs a real QUIC download through the emulator, the
// client migrating from path A to path B halfway, with the wire capture
// on and TLS secrets logged; Wireshark's own dissector must then read the
// file: as many packets per interface as the capture record counts, and
// the path validation's PATH_CHALLENGE and PATH_RESPONSE frames decrypted.
func TestCaptureQUIC(t *testing.T) {
	runtest.Live(t)
	tshark, err := exec.LookPath("tshark")
	if err != nil {
		t.Skip("tshark is not installed (apt-get install tshark): the capture is checked against Wireshark's dissector")
	}
	if err := testbed.Preflight(); err != nil {
		t.Skipf("needs a root testbed: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	tb, err := testbed.Up(ctx, testbed.Standard())
	if err != nil {
		t.Fatal(err)
	}
	defer tb.Down()
	dir := t.TempDir()
	keylog, err := os.Create(filepath.Join(dir, "keylog.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer keylog.Close()

	from := testbed.MonoNow()
	if err := tb.StartCapture(); err != nil {
		t.Fatal(err)
	}
	const body = 600 << 10
	if err := quicDownload(ctx, tb, keylog, body); err != nil {
		t.Fatal(err)
	}
	wire := filepath.Join(dir, run.WireFile)
	rec, err := tb.WriteCapture(testbed.CaptureOptions{File: wire, From: from, To: testbed.MonoNow()})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("capture: %d packets, %d B gzip'ed (%d B pcapng), overruns %d, per direction %+v", rec.Packets, rec.Bytes, rec.PcapngBytes, rec.Overruns, rec.Dirs)
	if rec.Overruns != 0 {
		t.Errorf("%d datagrams overran the capture", rec.Overruns)
	}
	for _, k := range []string{"A/c2s", "A/s2c", "B/c2s", "B/s2c"} {
		if rec.Dirs[k].Packets == 0 {
			t.Errorf("no packets on %s", k)
		}
	}

	// Per interface, as Wireshark counts them.
	args := []string{"-r", wire, "-o", "tls.keylog_file:" + keylog.Name(), "-d", fmt.Sprintf("udp.port==%d,quic", quicPort)}
	out, err := exec.CommandContext(ctx, tshark, append(args, "-T", "fields", "-e", "frame.interface_id")...).Output()
	if err != nil {
		t.Fatalf("tshark: %v", err)
	}
	perIface := map[string]int{}
	for _, l := range strings.Fields(string(out)) {
		perIface[l]++
	}
	for i, p := range []string{"A", "B"} {
		want := rec.Dirs[p+"/c2s"].Packets + rec.Dirs[p+"/s2c"].Packets
		if got := perIface[fmt.Sprint(i)]; got != want {
			t.Errorf("tshark reads %d packets on interface %d (path%s), the capture record counts %d", got, i, p, want)
		}
	}
	// Path validation, decrypted with the key log, on path B.
	for _, f := range []struct {
		name, filter string
	}{{"PATH_CHALLENGE", "quic.frame_type==0x1a"}, {"PATH_RESPONSE", "quic.frame_type==0x1b"}} {
		out, err := exec.CommandContext(ctx, tshark, append(args, "-Y", f.filter, "-T", "fields", "-E", "separator=,",
			"-e", "frame.interface_id", "-e", "ip.src", "-e", "ip.dst")...).Output()
		if err != nil {
			t.Fatalf("tshark -Y %s: %v", f.filter, err)
		}
		t.Logf("%s: interface/source/destination %s", f.name, strings.Fields(string(out)))
		if !strings.Contains(string(out), "1,") {
			t.Errorf("tshark decrypted no %s on path B (interface/source/destination of those it found: %q)", f.name, strings.Fields(string(out)))
		}
	}
}

const quicPort = 4433

// quicDownload serves size bytes from the server namespace to a client on
// path A, which moves to path B (quic-go's AddPath, Probe, Switch) once a
// third has arrived. The client logs its TLS secrets to keylog.
func quicDownload(ctx context.Context, tb *testbed.Testbed, keylog io.Writer, size int) error {
	cert, err := run.SelfSignedTLS()
	if err != nil {
		return err
	}
	var srvUDP, cliA, cliB *net.UDPConn
	if err := tb.InNS(tb.ServerNS(), func() (err error) {
		srvUDP, err = net.ListenUDP("udp", &net.UDPAddr{IP: tb.ServerAddr().AsSlice(), Port: quicPort})
		return err
	}); err != nil {
		return fmt.Errorf("server socket: %w", err)
	}
	if err := tb.InNS(tb.ClientNS(), func() (err error) {
		if cliA, err = net.ListenUDP("udp", &net.UDPAddr{IP: tb.ClientAddrA().AsSlice()}); err != nil {
			return err
		}
		cliB, err = net.ListenUDP("udp", &net.UDPAddr{IP: tb.ClientAddrB().AsSlice()})
		return err
	}); err != nil {
		return fmt.Errorf("client sockets: %w", err)
	}
	srvTr, cliTr, cliTrB := &quic.Transport{Conn: srvUDP}, &quic.Transport{Conn: cliA}, &quic.Transport{Conn: cliB}
	defer srvTr.Close()
	defer cliTr.Close()
	defer cliTrB.Close()
	ln, err := srvTr.Listen(&tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"h3cap"}, MinVersion: tls.VersionTLS13}, nil)
	if err != nil {
		return err
	}
	srvErr := make(chan error, 1)
	go func() {
		srvErr <- func() error {
			c, err := ln.Accept(ctx)
			if err != nil {
				return err
			}
			s, err := c.AcceptStream(ctx)
			if err != nil {
				return err
			}
			var hdr [8]byte
			if _, err := io.ReadFull(s, hdr[:]); err != nil {
				return err
			}
			if _, err := s.Write(make([]byte, binary.BigEndian.Uint64(hdr[:]))); err != nil {
				return err
			}
			return s.Close()
		}()
	}()
	conn, err := cliTr.Dial(ctx, &net.UDPAddr{IP: tb.ServerAddr().AsSlice(), Port: quicPort},
		&tls.Config{InsecureSkipVerify: true, NextProtos: []string{"h3cap"}, MinVersion: tls.VersionTLS13, KeyLogWriter: keylog}, nil) //nolint:gosec // a throwaway certificate inside the test's namespaces
	if err != nil {
		return fmt.Errorf("dial: %w", err)
	}
	defer conn.CloseWithError(0, "done")
	s, err := conn.OpenStreamSync(ctx)
	if err != nil {
		return err
	}
	var hdr [8]byte
	binary.BigEndian.PutUint64(hdr[:], uint64(size))
	if _, err := s.Write(hdr[:]); err != nil {
		return err
	}
	if _, err := io.ReadFull(s, make([]byte, size/3)); err != nil {
		return fmt.Errorf("download before the migration: %w", err)
	}
	p, err := conn.AddPath(cliTrB)
	if err != nil {
		return fmt.Errorf("AddPath: %w", err)
	}
	if err := p.Probe(ctx); err != nil {
		return fmt.Errorf("probe path B: %w", err)
	}
	if err := p.Switch(); err != nil {
		return fmt.Errorf("switch to path B: %w", err)
	}
	n, err := io.Copy(io.Discard, s)
	if err != nil || n != int64(size-size/3) {
		return fmt.Errorf("download after the migration: %d of %d bytes: %v", n, size-size/3, err)
	}
	return <-srvErr
}
