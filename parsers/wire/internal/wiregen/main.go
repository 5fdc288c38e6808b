// Command wiregen records test material for parsers/wire: a real quic-go
// download over loopback through an in-process two-path UDP relay, with a
// migration from path A to path B mid-transfer. It writes, into -out:
//
//	wire.pcapng.gz  the relay's record of every datagram, in the wire
//	                contract's format (issue #31, parsers/wire)
//	keylog.txt      the server's TLS secrets (NSS key log)
//	server.sqlog.gz quic-go's qlog of the server
//
// Loopback only: the client binds 127.0.0.2 (path A) and 127.0.0.3 (path
// B) and talks to the relay's front at 127.0.0.1; the relay forwards each
// path through its own upstream socket, so the server sees the client's
// address change.
//
//	go run ./parsers/wire/internal/wiregen -out parsers/wire/testdata/quicgo
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"
)

func main() {
	var o Options
	flag.StringVar(&o.Dir, "out", "", "directory to write into (created)")
	flag.Int64Var(&o.Size, "size", 600_000, "bytes to download")
	flag.DurationVar(&o.MigrateAt, "migrate-at", 250*time.Millisecond, "migration, after the handshake")
	flag.DurationVar(&o.DelayA, "delay-a", 20*time.Millisecond, "path A round-trip delay")
	flag.DurationVar(&o.DelayB, "delay-b", 40*time.Millisecond, "path B round-trip delay")
	flag.Int64Var(&o.RateBPS, "rate", 12_000_000, "each path's rate, bit/s, each direction")
	flag.DurationVar(&o.MaxQueue, "max-queue", 60*time.Millisecond, "queue beyond which a datagram is dropped")
	flag.Parse()
	if o.Dir == "" {
		fmt.Fprintln(os.Stderr, "wiregen: -out is required")
		os.Exit(2)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	sum, err := Generate(ctx, o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "wiregen:", err)
		os.Exit(1)
	}
	fmt.Println(sum)
}
