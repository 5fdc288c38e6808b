package quicgo

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/quic-go/quic-go"
)

// ClientOptions configure RunClient.
type ClientOptions struct {
	Server string // ip:port
	// LocalA is the path-A address the connection starts from; LocalB the
	// path-B address it migrates to.
	LocalA, LocalB string
	Scenario       string // standard|step-down|port-rebind|nat-rebind|migrate-back|pv-distinct
	Size           int64
	MigrateAt      time.Duration // after the handshake
	BackAfter      time.Duration // migrate-back: B → A this long after A → B
	Qlog           string
	ProgressEvery  time.Duration
	Timeout        time.Duration // whole download
	// ReadRate, when positive, limits how fast the client reads (bytes/s);
	// flow control then slows the server. For loopback tests only.
	ReadRate int64
}

// RunClient dials the server from LocalA, asks for Size bytes, migrates as
// the scenario says, reads the whole body and closes.
func RunClient(ctx context.Context, o ClientOptions, stdout io.Writer) error {
	em := &emitter{w: stdout}
	if o.Timeout == 0 {
		o.Timeout = 120 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	tracer, traceClosed, err := qlogFile(o.Qlog)
	if err != nil {
		return fmt.Errorf("qlog: %w", err)
	}
	udpA, err := listenUDP(net.JoinHostPort(o.LocalA, "0"))
	if err != nil {
		return err
	}
	var pc net.PacketConn = udpA
	var rebind *rebindConn
	if o.Scenario == "nat-rebind" {
		// A NAT in front of the client: quic-go keeps writing to the same
		// net.PacketConn, which starts leaving from a path-B socket. The
		// client never learns its address changed and starts no path
		// validation; only the server can react.
		udpB, err := listenUDP(net.JoinHostPort(o.LocalB, "0"))
		if err != nil {
			return err
		}
		rebind = newRebindConn(udpA, udpB)
		pc = rebind
	}
	tr := &quic.Transport{Conn: pc}
	defer tr.Close()
	srv, err := net.ResolveUDPAddr("udp", o.Server)
	if err != nil {
		return fmt.Errorf("server address %q: %w", o.Server, err)
	}
	conn, err := tr.Dial(ctx, srv, clientTLS(), &quic.Config{
		InitialPacketSize: InitialPacketSize,
		MaxIdleTimeout:    30 * time.Second,
		Tracer:            tracer,
	})
	if err != nil {
		return fmt.Errorf("dial %s from %s: %w", o.Server, udpA.LocalAddr(), err)
	}
	handshake := time.Now()
	em.emit(Event{Ev: "connected", From: conn.LocalAddr().String(), To: conn.RemoteAddr().String()})
	str, err := conn.OpenStreamSync(ctx)
	if err != nil {
		return fmt.Errorf("open stream: %w", err)
	}
	var hdr [8]byte
	binary.BigEndian.PutUint64(hdr[:], uint64(o.Size))
	if _, err := str.Write(hdr[:]); err != nil {
		return fmt.Errorf("send request: %w", err)
	}
	_ = str.Close()

	var got atomic.Int64
	migErr := make(chan error, 1)
	go func() { migErr <- migrate(ctx, conn, o, handshake, em, rebind, &got) }()

	readErr := make(chan error, 1)
	go func() {
		buf := make([]byte, 256<<10)
		if o.ReadRate > 0 {
			buf = buf[:min(int64(len(buf)), max(o.ReadRate/100, 1))]
		}
		t0 := time.Now()
		for {
			n, err := str.Read(buf)
			total := got.Add(int64(n))
			if o.ReadRate > 0 {
				if ahead := time.Duration(float64(total)/float64(o.ReadRate)*float64(time.Second)) - time.Since(t0); ahead > 0 {
					time.Sleep(ahead)
				}
			}
			if errors.Is(err, io.EOF) {
				readErr <- nil
				return
			}
			if err != nil {
				readErr <- err
				return
			}
		}
	}()
	every := o.ProgressEvery
	if every == 0 {
		every = 250 * time.Millisecond
	}
	tk := time.NewTicker(every)
	defer tk.Stop()
	var rerr error
loop:
	for {
		select {
		case rerr = <-readErr:
			break loop
		case <-tk.C:
			em.emit(Event{Ev: "progress", Bytes: got.Load(), Total: o.Size})
		}
	}
	em.emit(Event{Ev: "progress", Bytes: got.Load(), Total: o.Size})
	var merr error
	select {
	case merr = <-migErr:
	default:
		merr = fmt.Errorf("download finished after %s, before the migration scheduled at %s completed", time.Since(handshake).Round(time.Millisecond), o.MigrateAt)
		cancel()
	}
	_ = conn.CloseWithError(0, "done")
	select {
	case <-traceClosed:
	case <-time.After(5 * time.Second):
		return errors.New("client qlog was not closed within 5 s")
	}
	if rerr != nil {
		return fmt.Errorf("download: %d of %d bytes: %w", got.Load(), o.Size, rerr)
	}
	if got.Load() != o.Size {
		return fmt.Errorf("download: got %d of %d bytes", got.Load(), o.Size)
	}
	em.emit(Event{Ev: "done", Bytes: got.Load(), Total: o.Size})
	return merr
}

// migrate performs the scenario's address changes at their times.
func migrate(ctx context.Context, conn *quic.Conn, o ClientOptions, start time.Time, em *emitter, rebind *rebindConn, got *atomic.Int64) error {
	wait := func(at time.Duration) error {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Until(start.Add(at))):
			return nil
		}
	}
	if err := wait(o.MigrateAt); err != nil {
		return err
	}
	switch o.Scenario {
	case "nat-rebind":
		from, to := rebind.Rebind()
		em.emit(Event{Ev: "rebound", From: from, To: to, Bytes: got.Load(), Msg: "NAT rebinding: socket behind quic-go's PacketConn switched; quic-go was not told"})
		return nil
	case "port-rebind":
		return switchTo(ctx, conn, o.LocalA, em, got)
	case "migrate-back":
		if err := switchTo(ctx, conn, o.LocalB, em, got); err != nil {
			return err
		}
		if err := wait(o.MigrateAt + o.BackAfter); err != nil {
			return err
		}
		return switchTo(ctx, conn, o.LocalA, em, got)
	default: // standard, step-down, pv-distinct
		return switchTo(ctx, conn, o.LocalB, em, got)
	}
}

// switchTo opens a path from a new socket bound to local (port chosen by
// the kernel), probes it and switches to it.
func switchTo(ctx context.Context, conn *quic.Conn, local string, em *emitter, got *atomic.Int64) error {
	udp, err := listenUDP(net.JoinHostPort(local, "0"))
	if err != nil {
		return err
	}
	tr := &quic.Transport{Conn: udp}
	from := conn.LocalAddr().String()
	p, err := conn.AddPath(tr)
	if err != nil {
		return fmt.Errorf("AddPath from %s: %w", udp.LocalAddr(), err)
	}
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	t0 := time.Now()
	if err := p.Probe(pctx); err != nil {
		return fmt.Errorf("probe path from %s: %w", udp.LocalAddr(), err)
	}
	rtt := time.Since(t0)
	em.emit(Event{Ev: "path_validated", From: from, To: udp.LocalAddr().String(), RTTMS: float64(rtt.Microseconds()) / 1000})
	if err := p.Switch(); err != nil {
		return fmt.Errorf("switch to path from %s: %w", udp.LocalAddr(), err)
	}
	em.emit(Event{Ev: "switched", From: from, To: udp.LocalAddr().String(), Bytes: got.Load(), Msg: fmt.Sprintf("Path.Switch to socket %s", udp.LocalAddr())})
	return nil
}

// rebindConn is a net.PacketConn that, after Rebind, sends from a second
// socket: what a NAT's new mapping looks like from the server.
type rebindConn struct {
	a, b    *net.UDPConn
	useB    atomic.Bool
	in      chan pkt
	closeMu sync.Once
	closed  chan struct{}

	dlMu     sync.Mutex
	deadline chan struct{}
	expired  bool
}

type pkt struct {
	b    []byte
	addr net.Addr
	err  error
}

func newRebindConn(a, b *net.UDPConn) *rebindConn {
	c := &rebindConn{a: a, b: b, in: make(chan pkt, 1024), closed: make(chan struct{}), deadline: make(chan struct{})}
	go c.read(a)
	go c.read(b)
	return c
}

func (c *rebindConn) read(u *net.UDPConn) {
	for {
		buf := make([]byte, 2048)
		n, addr, err := u.ReadFrom(buf)
		select {
		case c.in <- pkt{b: buf[:n], addr: addr, err: err}:
		case <-c.closed:
			return
		}
		if err != nil {
			return
		}
	}
}

func (c *rebindConn) Rebind() (from, to string) {
	c.useB.Store(true)
	return c.a.LocalAddr().String(), c.b.LocalAddr().String()
}

func (c *rebindConn) ReadFrom(p []byte) (int, net.Addr, error) {
	c.dlMu.Lock()
	dl := c.deadline
	c.dlMu.Unlock()
	select {
	case k := <-c.in:
		n := copy(p, k.b)
		return n, k.addr, k.err
	case <-c.closed:
		return 0, nil, net.ErrClosed
	case <-dl:
		return 0, nil, os.ErrDeadlineExceeded
	}
}

// SetReadDeadline supports what quic-go uses it for: a deadline in the past
// unblocks a pending ReadFrom (Transport.Close on a connection it did not
// create). Future deadlines are not needed and are ignored.
func (c *rebindConn) SetReadDeadline(t time.Time) error {
	c.dlMu.Lock()
	defer c.dlMu.Unlock()
	if t.IsZero() || t.After(time.Now()) {
		if c.expired {
			c.deadline, c.expired = make(chan struct{}), false
		}
		return nil
	}
	if !c.expired {
		close(c.deadline)
		c.expired = true
	}
	return nil
}

func (c *rebindConn) WriteTo(p []byte, addr net.Addr) (int, error) {
	if c.useB.Load() {
		return c.b.WriteTo(p, addr)
	}
	return c.a.WriteTo(p, addr)
}

func (c *rebindConn) Close() error {
	c.closeMu.Do(func() { close(c.closed) })
	c.a.Close()
	return c.b.Close()
}

// LocalAddr is the path-A address: what the client believes its address is.
func (c *rebindConn) LocalAddr() net.Addr                { return c.a.LocalAddr() }
func (c *rebindConn) SetDeadline(t time.Time) error      { return nil }
func (c *rebindConn) SetWriteDeadline(t time.Time) error { return nil }
