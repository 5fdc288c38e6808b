package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"sync"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
	"github.com/klauspost/compress/gzip"
)

// The window around the planned migration in which datagrams are whole.
const (
	windowBefore = 20 * time.Millisecond
	windowAfter  = 150 * time.Millisecond
)

const (
	pathA = 0
	pathB = 1
)

// relay stands between the client and the server: the client talks to
// front from its path-A or path-B address; each path reaches the server
// through its own upstream socket.
type relay struct {
	front  *net.UDPConn
	up     [2]*net.UDPConn
	server *net.UDPAddr
	links  [2][2]*link // [path][c2s=0, s2c=1]

	mu     sync.Mutex
	client [2]*net.UDPAddr
	wg     sync.WaitGroup
	done   chan struct{}
}

func newRelay(server *net.UDPAddr, o Options, cw *capture) (*relay, error) {
	r := &relay{server: server, done: make(chan struct{})}
	var err error
	if r.front, err = net.ListenUDP("udp", &net.UDPAddr{IP: frontIP}); err != nil {
		return nil, err
	}
	for p, ip := range []net.IP{net.IPv4(127, 0, 0, 4), net.IPv4(127, 0, 0, 5)} {
		if r.up[p], err = net.ListenUDP("udp", &net.UDPAddr{IP: ip}); err != nil {
			return nil, err
		}
	}
	for p, rtt := range []time.Duration{o.DelayA, o.DelayB} {
		for d := range 2 {
			r.links[p][d] = &link{path: p, dir: d, oneWay: rtt / 2, rate: o.RateBPS, maxQueue: o.MaxQueue, out: make(chan item, 1<<14), done: r.done, cap: cw}
		}
	}
	r.links[pathA][0].send = func(b []byte, _ *net.UDPAddr) { _, _ = r.up[pathA].WriteToUDP(b, server) }
	r.links[pathB][0].send = func(b []byte, _ *net.UDPAddr) { _, _ = r.up[pathB].WriteToUDP(b, server) }
	for p := range 2 {
		r.links[p][1].send = func(b []byte, to *net.UDPAddr) { _, _ = r.front.WriteToUDP(b, to) }
	}
	return r, nil
}

func (r *relay) run(ctx context.Context) {
	for p := range 2 {
		for d := range 2 {
			r.wg.Add(1)
			go func() { defer r.wg.Done(); r.links[p][d].deliver() }()
		}
	}
	frontAddr := r.front.LocalAddr().(*net.UDPAddr)
	go func() {
		buf := make([]byte, 2048)
		for {
			n, from, err := r.front.ReadFromUDP(buf)
			if err != nil {
				return
			}
			p := pathA
			if from.IP.Equal(clientIPB) {
				p = pathB
			}
			r.mu.Lock()
			r.client[p] = from
			r.mu.Unlock()
			r.links[p][0].enqueue(append([]byte(nil), buf[:n]...), from, frontAddr)
		}
	}()
	for p := range 2 {
		go func() {
			buf := make([]byte, 2048)
			for {
				n, _, err := r.up[p].ReadFromUDP(buf)
				if err != nil {
					return
				}
				r.mu.Lock()
				to := r.client[p]
				r.mu.Unlock()
				if to == nil {
					continue
				}
				r.links[p][1].enqueue(append([]byte(nil), buf[:n]...), frontAddr, to)
			}
		}()
	}
}

func (r *relay) stop() {
	r.front.Close()
	for _, u := range r.up {
		u.Close()
	}
	close(r.done)
	r.wg.Wait()
}

type item struct {
	b        []byte
	src, dst *net.UDPAddr
	arr, out time.Time
}

// link is one direction of one path: a rate limiter with a bounded queue
// followed by a fixed delay. One goroutine enqueues, one delivers.
type link struct {
	path, dir int
	oneWay    time.Duration
	rate      int64
	maxQueue  time.Duration
	busyUntil time.Time
	out       chan item
	done      <-chan struct{}
	send      func([]byte, *net.UDPAddr)
	cap       *capture
}

func (l *link) enqueue(b []byte, src, dst *net.UDPAddr) {
	now := time.Now()
	if l.busyUntil.Before(now) {
		l.busyUntil = now
	}
	if l.busyUntil.Sub(now) > l.maxQueue {
		l.cap.write(l.path, l.dir, b, src, dst, now, now, "queue-drop")
		return
	}
	l.busyUntil = l.busyUntil.Add(time.Duration(int64(len(b)+28) * 8 * int64(time.Second) / l.rate))
	l.out <- item{b: b, src: src, dst: dst, arr: now, out: l.busyUntil.Add(l.oneWay)}
}

func (l *link) deliver() {
	for {
		var it item
		select {
		case it = <-l.out:
		case <-l.done:
			return
		}
		if d := time.Until(it.out); d > 0 {
			time.Sleep(d)
		}
		out := time.Now()
		l.send(it.b, it.dst)
		l.cap.write(l.path, l.dir, it.b, it.src, it.dst, it.arr, out, "sent")
	}
}

// capture writes the contract's pcapng: interface 0 pathA, 1 pathB, raw
// IPv4, one EPB per datagram with dir/arr/fate in its comment.
type capture struct {
	mu       sync.Mutex
	f        *os.File
	z        *gzip.Writer
	w        *pcapgo.NgWriter
	n        int
	from, to time.Time // whole datagrams in this window
	snap     int
	err      error
	closed   bool
}

func newCapture(path string, o Options) (*capture, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	c := &capture{f: f, z: gzip.NewWriter(f), snap: 80}
	c.from = time.Now().Add(o.MigrateAt - windowBefore)
	c.to = c.from.Add(windowBefore + windowAfter)
	comment := fmt.Sprintf("migaudit wire capture v1; generator parsers/wire/internal/wiregen (loopback relay, path A %s, path B %s round trip, %d bit/s, queue %s); whole: long-header datagrams, datagrams <= 256 bytes, and every datagram from %s before to %s after the planned migration; others cut to %d bytes",
		o.DelayA, o.DelayB, o.RateBPS, o.MaxQueue, windowBefore, windowAfter, c.snap)
	c.w, err = pcapgo.NewNgWriterInterface(c.z, pcapgo.NgInterface{Name: "pathA", LinkType: layers.LinkTypeRaw, TimestampResolution: 9},
		pcapgo.NgWriterOptions{SectionInfo: pcapgo.NgSectionInfo{Application: "migaudit wiregen", Comment: comment}})
	if err != nil {
		return nil, err
	}
	if _, err := c.w.AddInterface(pcapgo.NgInterface{Name: "pathB", LinkType: layers.LinkTypeRaw, TimestampResolution: 9}); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *capture) setWindow(from, to time.Time) {
	c.mu.Lock()
	c.from, c.to = from, to
	c.mu.Unlock()
}

func (c *capture) write(path, dir int, payload []byte, src, dst *net.UDPAddr, arr, out time.Time, fate string) {
	ip := &layers.IPv4{Version: 4, IHL: 5, TTL: 64, Protocol: layers.IPProtocolUDP, SrcIP: src.IP.To4(), DstIP: dst.IP.To4()}
	udp := &layers.UDP{SrcPort: layers.UDPPort(src.Port), DstPort: layers.UDPPort(dst.Port)}
	_ = udp.SetNetworkLayerForChecksum(ip)
	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}, ip, udp, gopacket.Payload(payload)); err != nil {
		c.fail(err)
		return
	}
	pkt := buf.Bytes()
	d := "c2s"
	if dir == 1 {
		d = "s2c"
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	whole := len(payload) > 0 && payload[0]&0x80 != 0 || len(pkt) <= 256 || (!out.Before(c.from) && out.Before(c.to))
	kept := pkt
	if !whole && len(pkt) > c.snap {
		kept = pkt[:c.snap]
	}
	ci := gopacket.CaptureInfo{Timestamp: out, CaptureLength: len(kept), Length: len(pkt), InterfaceIndex: path}
	opts := pcapgo.NgPacketOptions{Comments: []string{fmt.Sprintf("dir=%s arr=%d fate=%s", d, arr.UnixNano(), fate)}}
	if err := c.w.WritePacketWithOptions(ci, kept, opts); err != nil && c.err == nil {
		c.err = err
	}
	c.n++
}

func (c *capture) fail(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err == nil {
		c.err = err
	}
}

func (c *capture) close() (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	err := c.err
	if ferr := c.w.Flush(); err == nil {
		err = ferr
	}
	if zerr := c.z.Close(); err == nil {
		err = zerr
	}
	if cerr := c.f.Close(); err == nil {
		err = cerr
	}
	return c.n, err
}
