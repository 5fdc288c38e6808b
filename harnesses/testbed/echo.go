package testbed

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// SO_TIMESTAMPING flags (linux/net_tstamp.h; not in x/sys).
const (
	tsTxSoftware = 1 << 1
	tsRxSoftware = 1 << 3
	tsSoftware   = 1 << 4
	tsOptID      = 1 << 7
	tsOptTSOnly  = 1 << 11
)

// listenUDP opens a Go UDP socket inside ns with SO_TIMESTAMPNS receive
// timestamps (kernel time of the emulator's write).
func listenUDP(t *Testbed, ns string, addr netip.AddrPort) (*net.UDPConn, error) {
	var c *net.UDPConn
	err := t.InNS(ns, func() error {
		var err error
		var la *net.UDPAddr
		if addr.IsValid() {
			la = net.UDPAddrFromAddrPort(addr)
		}
		c, err = net.ListenUDP("udp4", la)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("udp socket in %s at %v: %w", ns, addr, err)
	}
	_ = c.SetReadBuffer(4 << 20)
	if err := setsockopt(c, unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1); err != nil {
		c.Close()
		return nil, fmt.Errorf("udp socket in %s: timestamps: %w", ns, err)
	}
	return c, nil
}

func setsockopt(c syscallConn, level, opt, val int) error {
	rc, err := c.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Control(func(fd uintptr) { serr = unix.SetsockoptInt(int(fd), level, opt, val) }); err != nil {
		return err
	}
	return serr
}

type syscallConn interface {
	SyscallConn() (syscall.RawConn, error)
}

// rxStamp extracts the kernel receive time (CLOCK_REALTIME ns) from
// SO_TIMESTAMPNS or SO_TIMESTAMPING control data.
func rxStamp(oob []byte) (int64, bool) {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return 0, false
	}
	for _, m := range msgs {
		if m.Header.Level == unix.SOL_SOCKET && (m.Header.Type == unix.SO_TIMESTAMPNS || m.Header.Type == unix.SO_TIMESTAMPING) && len(m.Data) >= 16 {
			sec := int64(binary.NativeEndian.Uint64(m.Data[0:8]))
			nsec := int64(binary.NativeEndian.Uint64(m.Data[8:16]))
			if sec != 0 || nsec != 0 {
				return sec*1e9 + nsec, true
			}
		}
	}
	return 0, false
}

// drainTxStamps reads every pending transmit timestamp from u's error
// queue into into (OPT_ID counter → CLOCK_REALTIME ns).
func drainTxStamps(u *rawUDP, into map[uint32]int64) {
	func(fd int) {
		oob := make([]byte, 512)
		for {
			_, oobn, _, _, err := unix.Recvmsg(fd, nil, oob, unix.MSG_ERRQUEUE|unix.MSG_DONTWAIT)
			if err != nil {
				return
			}
			msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
			if err != nil {
				continue
			}
			var ts int64
			var id uint32
			var haveID bool
			for _, m := range msgs {
				switch {
				case m.Header.Level == unix.SOL_SOCKET && m.Header.Type == unix.SO_TIMESTAMPING && len(m.Data) >= 16:
					ts = int64(binary.NativeEndian.Uint64(m.Data[0:8]))*1e9 + int64(binary.NativeEndian.Uint64(m.Data[8:16]))
				case m.Header.Level == unix.SOL_IP && m.Header.Type == unix.IP_RECVERR && len(m.Data) >= 16:
					if m.Data[4] == unix.SO_EE_ORIGIN_TIMESTAMPING {
						id, haveID = binary.NativeEndian.Uint32(m.Data[12:16]), true
					}
				}
			}
			if haveID && ts != 0 {
				into[id] = ts
			}
		}
	}(u.fd)
}

// rawUDP is a blocking UDP socket used without Go's poller: with
// SO_TIMESTAMPING the transmit timestamps queue on the socket's error
// queue, epoll reports EPOLLERR, and Go's poller then fails every read
// ("not pollable") — a busy loop. Reads time out every 50 ms so that a
// closed socket's reader notices.
type rawUDP struct {
	fd     int
	closed atomic.Bool
}

func openRawUDP(t *Testbed, ns string, bind netip.AddrPort, stamps bool) (*rawUDP, error) {
	u := &rawUDP{fd: -1}
	err := t.InNS(ns, func() error {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return err
		}
		u.fd = fd
		if bind.IsValid() {
			if err := unix.Bind(fd, &unix.SockaddrInet4{Addr: bind.Addr().As4(), Port: int(bind.Port())}); err != nil {
				return err
			}
		}
		return nil
	})
	if err == nil && stamps {
		err = unix.SetsockoptInt(u.fd, unix.SOL_SOCKET, unix.SO_TIMESTAMPING, tsTxSoftware|tsRxSoftware|tsSoftware|tsOptID|tsOptTSOnly)
	}
	if err == nil {
		tv := unix.NsecToTimeval(int64(50 * time.Millisecond))
		err = unix.SetsockoptTimeval(u.fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)
	}
	if err == nil {
		_ = unix.SetsockoptInt(u.fd, unix.SOL_SOCKET, unix.SO_RCVBUF, 4<<20)
	}
	if err != nil {
		if u.fd >= 0 {
			unix.Close(u.fd)
		}
		return nil, fmt.Errorf("udp socket in %s at %v: %w", ns, bind, err)
	}
	return u, nil
}

func (u *rawUDP) port() uint16 {
	sa, err := unix.Getsockname(u.fd)
	if err != nil {
		return 0
	}
	return uint16(sa.(*unix.SockaddrInet4).Port)
}

func (u *rawUDP) sendTo(b []byte, to netip.AddrPort) error {
	return unix.Sendto(u.fd, b, 0, &unix.SockaddrInet4{Addr: to.Addr().As4(), Port: int(to.Port())})
}

// recv blocks up to 50 ms; errRecvTimeout when nothing came, net.ErrClosed
// once closed.
func (u *rawUDP) recv(b, oob []byte) (n, oobn int, from netip.AddrPort, err error) {
	for {
		if u.closed.Load() {
			return 0, 0, from, net.ErrClosed
		}
		n, oobn, _, sa, err := unix.Recvmsg(u.fd, b, oob, 0)
		if err == unix.EINTR {
			continue
		}
		if err == unix.EAGAIN {
			return 0, 0, from, errRecvTimeout
		}
		if err != nil {
			return 0, 0, from, err
		}
		if s4, ok := sa.(*unix.SockaddrInet4); ok {
			from = netip.AddrPortFrom(netip.AddrFrom4(s4.Addr), uint16(s4.Port))
		}
		return n, oobn, from, nil
	}
}

var errRecvTimeout = errors.New("receive timeout")

// close stops readers within 50 ms and then releases the descriptor.
func (u *rawUDP) close(wait func()) {
	if u.closed.Swap(true) {
		return
	}
	if wait != nil {
		wait()
	}
	unix.Close(u.fd)
}

// Echo datagram layout (big endian): magic "mgau", session, seq, user
// send time (ns), the source address the server saw.
const (
	echoMagic  = 0x6d676175
	echoHeader = 28
)

// echoServer answers every echo datagram in the server namespace and
// records, per (session, seq), its kernel receive and transmit times so
// that a client can subtract the server's turnaround exactly.
type echoServer struct {
	conn *rawUDP
	port uint16
	wg   sync.WaitGroup

	mu    sync.Mutex
	sends []echoSend       // in send order: index = OPT_ID counter
	tx    map[uint32]int64 // OPT_ID → kernel transmit time
}

type echoSend struct {
	session, seq uint32
	rx           int64
}

func startEcho(t *Testbed) (*echoServer, error) {
	c, err := openRawUDP(t, t.ServerNS(), netip.AddrPortFrom(t.ServerAddr(), 0), true)
	if err != nil {
		return nil, err
	}
	e := &echoServer{conn: c, port: c.port(), tx: map[uint32]int64{}}
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		buf := make([]byte, 2048)
		oob := make([]byte, 256)
		for {
			n, oobn, from, err := c.recv(buf, oob)
			if errors.Is(err, net.ErrClosed) {
				return
			}
			if err != nil || n < echoHeader || binary.BigEndian.Uint32(buf[0:4]) != echoMagic {
				continue
			}
			rx, _ := rxStamp(oob[:oobn])
			a := from.Addr().As4()
			copy(buf[24:28], a[:])
			e.mu.Lock()
			if c.sendTo(buf[:n], from) == nil {
				e.sends = append(e.sends, echoSend{binary.BigEndian.Uint32(buf[4:8]), binary.BigEndian.Uint32(buf[8:12]), rx})
			}
			drainTxStamps(c, e.tx)
			e.mu.Unlock()
		}
	}()
	return e, nil
}

func (e *echoServer) close() { e.conn.close(e.wg.Wait) }

func (e *echoServer) addr(t *Testbed) netip.AddrPort {
	return netip.AddrPortFrom(t.ServerAddr(), e.port)
}

// turnarounds returns the server's kernel-measured turnaround for every
// echo of session.
func (e *echoServer) turnarounds(session uint32) map[uint32]int64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	drainTxStamps(e.conn, e.tx)
	out := map[uint32]int64{}
	for k, s := range e.sends {
		if tx, ok := e.tx[uint32(k)]; ok && s.session == session && s.rx != 0 {
			out[s.seq] = tx - s.rx
		}
	}
	return out
}

// echoClient is a client socket opened with stamps and the number of
// datagrams sent on it (the kernel's OPT_ID counter).
type echoClient struct {
	*rawUDP
	sent uint32
}

func newEchoClient(t *Testbed, bind netip.Addr) (*echoClient, error) {
	var ap netip.AddrPort
	if bind.IsValid() {
		ap = netip.AddrPortFrom(bind, 0)
	}
	c, err := openRawUDP(t, t.ClientNS(), ap, true)
	if err != nil {
		return nil, err
	}
	return &echoClient{rawUDP: c}, nil
}

// Close releases the socket (no reader is running between echoes calls).
func (c *echoClient) Close() { c.rawUDP.close(nil) }

var echoSession struct {
	sync.Mutex
	n uint32
}

// echoes sends n echo requests from c (opened with stamps), one every gap,
// and returns for each answered one the round trip the emulator imposed —
// client kernel receive minus client kernel transmit minus the server's
// kernel turnaround: no user-space scheduling in it — and the round trip
// user space saw, plus the source address the server reported.
func echoes(ctx context.Context, e *echoServer, t *Testbed, c *echoClient, n int, gap time.Duration) (rtts, raw []time.Duration, src netip.Addr, err error) {
	echoSession.Lock()
	echoSession.n++
	session := echoSession.n
	echoSession.Unlock()
	// The OPT_ID counter counts this socket's sends since it was opened.
	first := c.sent
	type sample struct {
		rx, user int64
		ok       bool
	}
	got := make([]sample, n)
	var srcSeen netip.Addr
	done := make(chan struct{})
	var stop atomic.Bool
	go func() {
		defer close(done)
		buf := make([]byte, 2048)
		oob := make([]byte, 256)
		for {
			m, oobn, _, err := c.recv(buf, oob)
			if errors.Is(err, net.ErrClosed) || (errors.Is(err, errRecvTimeout) && stop.Load()) {
				return
			}
			if err != nil {
				continue
			}
			now := time.Now().UnixNano()
			if m < echoHeader || binary.BigEndian.Uint32(buf[0:4]) != echoMagic || binary.BigEndian.Uint32(buf[4:8]) != session {
				continue
			}
			seq := int(binary.BigEndian.Uint32(buf[8:12]))
			if seq >= n {
				continue
			}
			srcSeen = netip.AddrFrom4([4]byte(buf[24:28]))
			rx, ok := rxStamp(oob[:oobn])
			got[seq] = sample{rx: rx, user: now - int64(binary.BigEndian.Uint64(buf[12:20])), ok: ok}
		}
	}()
	buf := make([]byte, 64)
	binary.BigEndian.PutUint32(buf[0:4], echoMagic)
	binary.BigEndian.PutUint32(buf[4:8], session)
	next := time.Now()
	sent := 0
	for i := 0; i < n && ctx.Err() == nil; i++ {
		time.Sleep(time.Until(next))
		next = next.Add(gap)
		binary.BigEndian.PutUint32(buf[8:12], uint32(i))
		binary.BigEndian.PutUint64(buf[12:20], uint64(time.Now().UnixNano()))
		if err := c.sendTo(buf, e.addr(t)); err != nil {
			stop.Store(true)
			<-done
			return nil, nil, src, fmt.Errorf("echo send: %w", err)
		}
		sent++
		c.sent++
	}
	// Stragglers: a generous bound over any calibrated RTT.
	time.Sleep(300 * time.Millisecond)
	stop.Store(true)
	<-done
	tx := map[uint32]int64{}
	drainTxStamps(c.rawUDP, tx)
	turn := e.turnarounds(session)
	for i := 0; i < sent; i++ {
		s := got[i]
		txi, okTx := tx[first+uint32(i)]
		ti, okTurn := turn[uint32(i)]
		if !s.ok || !okTx || !okTurn {
			continue
		}
		rtts = append(rtts, time.Duration(s.rx-txi-ti))
		raw = append(raw, time.Duration(s.user))
	}
	return rtts, raw, srcSeen, ctx.Err()
}
