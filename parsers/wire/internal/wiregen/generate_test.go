package main

import (
	"context"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/migaudit/migaudit/parsers"
	"github.com/migaudit/migaudit/parsers/timeline"
	"github.com/migaudit/migaudit/parsers/wire"
)

// A short recording over loopback reads back: both paths, the handshake's
// secrets match, every packet numbered.
func TestGenerateReadsBack(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs a quic-go download over a loopback relay (about 1 s)")
	}
	for _, ip := range []net.IP{clientIPA, clientIPB, net.IPv4(127, 0, 0, 4), net.IPv4(127, 0, 0, 5)} {
		u, err := net.ListenUDP("udp", &net.UDPAddr{IP: ip})
		if err != nil {
			t.Skipf("cannot bind %s (loopback beyond 127.0.0.1 is Linux's): %v", ip, err)
		}
		u.Close()
	}
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	o := Options{Dir: dir, Size: 300_000, MigrateAt: 150 * time.Millisecond, DelayA: 10 * time.Millisecond, DelayB: 20 * time.Millisecond,
		RateBPS: 20_000_000, MaxQueue: 50 * time.Millisecond}
	if _, err := Generate(ctx, o); err != nil {
		t.Fatal(err)
	}
	c, err := wire.ReadFiles(filepath.Join(dir, "wire.pcapng.gz"), filepath.Join(dir, "keylog.txt"))
	if err != nil {
		t.Fatal(err)
	}
	perPath := map[string]int{}
	for _, p := range c.Packets {
		perPath[p.Path]++
		if p.PN < 0 {
			t.Errorf("record %d: %s packet without a number: %s", p.Record, p.Type, p.Note)
		}
	}
	if perPath["pathA"] == 0 || perPath["pathB"] == 0 || len(c.Notes) > 0 {
		t.Errorf("packets per path %v, notes %q", perPath, c.Notes)
	}
	// The server's qlog (quicgo.QlogTracer through gzip) is whole: it
	// parses and logs the packets the capture numbers.
	tl, err := parsers.ParseFile(filepath.Join(dir, "server.sqlog.gz"), parsers.Options{})
	if err != nil {
		t.Fatal(err)
	}
	sent := 0
	for _, e := range tl.Events {
		if e.Kind == timeline.PacketSent {
			sent++
		}
	}
	if sent == 0 || len(tl.Samples) == 0 {
		t.Errorf("server qlog: %d packets sent, %d metric samples", sent, len(tl.Samples))
	}
}
