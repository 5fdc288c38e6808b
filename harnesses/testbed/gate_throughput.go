package testbed

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/netip"
	"slices"
	"time"

	"golang.org/x/sys/unix"
)

// Gate 2, throughput: TCP transfers at each rate, judged by goodput
// against rate × MSS/MTU and its spread.

// --- gate 2: sustained throughput ---

func gateThroughput(ctx context.Context, t *Testbed, sen *sentinel, c *Calibration, opt CalibrateOptions) ([]string, error) {
	var fails []string
	for _, p := range opt.Paths {
		base := c.Paths[p]
		for _, rate := range opt.Rates {
			s := base
			s = s.forCalibration()
			s.Rate = rate
			if err := t.SetPath(p, s); err != nil {
				return nil, err
			}
			r := ThroughputResult{Path: p, Rate: rate}
			var stalls HostStalls
			cpu0, wall0 := procCPU(c.Host.Holder.PID), time.Now()
			for i := 0; i < opt.Repeats; i++ {
				for attempt := 1; ; attempt++ {
					from := time.Now()
					g, mss, mtu, err := tcpTransfer(ctx, t, p, opt.Transfer)
					if err != nil {
						return nil, fmt.Errorf("path %s rate %d: transfer %d: %w", p, rate, i+1, err)
					}
					r.MSS, r.MTU = mss, mtu
					h := sen.window(from, time.Now())
					ceiling := float64(rate) * float64(mss) / float64(mtu)
					ok := g >= ThroughputMinFrac*ceiling
					if !opt.Strict {
						ok = ok && g <= ThroughputMaxFrac*ceiling
					}
					if ok || (opt.Strict && h.Count == 0) || attempt >= opt.Attempts {
						r.Goodput = append(r.Goodput, g)
						if h.Count > stalls.Count {
							stalls = h
						}
						break
					}
					r.Retried = append(r.Retried, fmt.Sprintf("transfer %d attempt %d: %.2f Mbit/s (ceiling %.2f); host stalled %d× (max %.1f ms)",
						i+1, attempt, g/1e6, ceiling/1e6, h.Count, ms(h.Max)))
				}
			}
			if cpu1 := procCPU(c.Host.Holder.PID); cpu1 >= cpu0 && cpu0 >= 0 {
				r.EmulatorCPU = (cpu1 - cpu0).Seconds() / time.Since(wall0).Seconds()
			}
			r.Ceiling = float64(rate) * float64(r.MSS) / float64(r.MTU)
			r.Min, r.Max = slices.Min(r.Goodput), slices.Max(r.Goodput)
			var sum float64
			for _, g := range r.Goodput {
				sum += g
			}
			mean := sum / float64(len(r.Goodput))
			r.ErrPct = 100 * (r.Min - r.Ceiling) / r.Ceiling
			r.SpreadPct = 100 * (r.Max - r.Min) / mean
			if opt.Strict {
				r.Pass = r.Min >= ThroughputMinFrac*r.Ceiling && r.Max <= ThroughputMaxFrac*r.Ceiling &&
					r.SpreadPct <= ThroughputSpread*100
			} else {
				// A fault is systematic: every transfer (each after its
				// retries) below the floor — the shaper too slow — or
				// every one above the ceiling — the shaper leaking.
				r.Pass = r.Max >= ThroughputMinFrac*r.Ceiling && r.Min <= ThroughputMaxFrac*r.Ceiling
			}
			if r.Max > ThroughputMaxFrac*r.Ceiling {
				r.Note = fmt.Sprintf("goodput above the ceiling (max %.2f vs %.2f Mbit/s): a token bucket cannot deliver more than rate × time + burst (%d B ≈ %.2f%% here), so the excess is the measurement's: the receive counter read late against its timestamp",
					r.Max/1e6, r.Ceiling/1e6, c.Paths[p].EffectiveBurst(), 100*float64(c.Paths[p].EffectiveBurst())*8/(r.Ceiling*(opt.Transfer-200*time.Millisecond-min(opt.Transfer/3, 1500*time.Millisecond)).Seconds()))
			}
			c.Throughput = append(c.Throughput, r)
			fmt.Fprintf(opt.Progress, "throughput path %s rate %3d Mbit/s ceiling %.2f min %.2f max %.2f Mbit/s (%+.2f%%, spread %.2f%%) emulator CPU %.1f%% %s\n",
				p, rate/1e6, r.Ceiling/1e6, r.Min/1e6, r.Max/1e6, r.ErrPct, r.SpreadPct, 100*r.EmulatorCPU, passWord(r.Pass))
			if !r.Pass {
				why := stallNote(stalls, opt.Attempts)
				if r.Min >= ThroughputMinFrac*r.Ceiling {
					// Nothing slow: the host is not to blame for a goodput
					// above the ceiling or a spread among fast transfers.
					why = ""
					if r.Note != "" {
						why = " — " + r.Note
					}
				}
				if !opt.Strict {
					why = " in every attempt: the shaper's rate is systematically wrong"
				}
				fails = append(fails, fmt.Sprintf("path %s %d Mbit/s: goodput %.2f..%.2f Mbit/s vs ceiling %.2f (%+.2f%%, limit −%.0f%%..+%.0f%%), spread %.2f%% (limit %.0f%%)",
					p, rate/1e6, r.Min/1e6, r.Max/1e6, r.Ceiling/1e6, r.ErrPct, (1-ThroughputMinFrac)*100, (ThroughputMaxFrac-1)*100, r.SpreadPct, ThroughputSpread*100)+why)
			}
		}
		if err := t.SetPath(p, base); err != nil {
			return nil, err
		}
	}
	return fails, nil
}

// tcpTransfer sends from the client (bound to the path's address) to the
// server for d and returns the goodput the server's kernel received
// (tcpi_bytes_received) between the end of a warm-up and 200 ms before
// the sender stops — slow start and the drain at the end excluded, and
// independent of when the receiving goroutine gets to read — with the
// sender's MSS and path MTU.
func tcpTransfer(ctx context.Context, t *Testbed, path string, d time.Duration) (goodput float64, mss, mtu int, err error) {
	var ln *net.TCPListener
	if err := t.InNS(t.ServerNS(), func() error {
		var err error
		ln, err = net.ListenTCP("tcp4", net.TCPAddrFromAddrPort(netip.AddrPortFrom(t.ServerAddr(), 0)))
		return err
	}); err != nil {
		return 0, 0, 0, err
	}
	defer ln.Close()
	warm := min(d/3, 1500*time.Millisecond)
	type result struct {
		rate float64
		err  error
	}
	rc := make(chan result, 1)
	go func() {
		_ = ln.SetDeadline(time.Now().Add(5 * time.Second))
		conn, err := ln.AcceptTCP()
		if err != nil {
			rc <- result{err: err}
			return
		}
		defer conn.Close()
		start := time.Now()
		marks := make(chan mark, 2)
		go func() {
			for _, at := range []time.Duration{warm, d - 200*time.Millisecond} {
				time.Sleep(time.Until(start.Add(at)))
				marks <- bracketedMark(conn)
			}
		}()
		_, _ = io.Copy(io.Discard, conn)
		m1, m2 := <-marks, <-marks
		if m2.bytes <= m1.bytes {
			rc <- result{err: fmt.Errorf("no data received between %v and %v", warm, d-200*time.Millisecond)}
			return
		}
		rc <- result{rate: float64(m2.bytes-m1.bytes) * 8 / m2.at.Sub(m1.at).Seconds()}
	}()
	a, _ := t.ClientAddr(path)
	var conn *net.TCPConn
	if err := t.InNS(t.ClientNS(), func() error {
		dl := net.Dialer{LocalAddr: net.TCPAddrFromAddrPort(netip.AddrPortFrom(a, 0)), Timeout: 5 * time.Second}
		c, err := dl.DialContext(ctx, "tcp4", ln.Addr().String())
		if err != nil {
			return err
		}
		conn = c.(*net.TCPConn)
		return nil
	}); err != nil {
		return 0, 0, 0, fmt.Errorf("dial: %w", err)
	}
	buf := make([]byte, 256<<10)
	end := time.Now().Add(d)
	_ = conn.SetWriteDeadline(end)
	for time.Now().Before(end) && ctx.Err() == nil {
		if _, err := conn.Write(buf); err != nil {
			break
		}
	}
	mss, mtu = tcpMSS(conn)
	_ = conn.SetLinger(0) // the queue need not drain: the measurement is over
	conn.Close()
	r := <-rc
	if r.err != nil {
		return 0, mss, mtu, r.err
	}
	return r.rate, mss, mtu, ctx.Err()
}

type mark struct {
	at    time.Time
	bytes uint64
}

// bracketedMark reads the receive counter between two clock readings and
// stamps it with their midpoint, retrying when they are more than 200 µs
// apart: a goroutine descheduled between reading the clock and the
// counter (on a loaded host, for tens of ms) made the goodput of a 3 s
// transfer come out up to 2 % above the shaper's ceiling.
func bracketedMark(c *net.TCPConn) mark {
	var m mark
	for range 5 {
		t0 := time.Now()
		b := tcpBytesReceived(c)
		t1 := time.Now()
		m = mark{t0.Add(t1.Sub(t0) / 2), b}
		if t1.Sub(t0) <= 200*time.Microsecond {
			break
		}
	}
	return m
}

func tcpBytesReceived(c *net.TCPConn) uint64 {
	var n uint64
	if rc, err := c.SyscallConn(); err == nil {
		_ = rc.Control(func(fd uintptr) {
			if ti, err := unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO); err == nil {
				n = ti.Bytes_received
			}
		})
	}
	return n
}

func tcpMSS(c *net.TCPConn) (mss, mtu int) {
	mss, mtu = 1448, 1500
	rc, err := c.SyscallConn()
	if err != nil {
		return
	}
	_ = rc.Control(func(fd uintptr) {
		if ti, err := unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO); err == nil {
			mss, mtu = int(ti.Snd_mss), int(ti.Pmtu)
		}
	})
	return
}
