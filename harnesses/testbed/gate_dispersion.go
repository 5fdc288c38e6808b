package testbed

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"net"
	"net/netip"
	"slices"
	"time"

	"golang.org/x/net/ipv4"
)

// Gate 3, dispersion: trains of probes, judged by the rate their spacing
// shows after the burst.

// --- gate 3: probe-train dispersion ---

func gateDispersion(ctx context.Context, t *Testbed, c *Calibration, opt CalibrateOptions) ([]string, error) {
	var fails []string
	srv, err := listenUDP(t, t.ServerNS(), netip.AddrPortFrom(t.ServerAddr(), 0))
	if err != nil {
		return nil, err
	}
	defer srv.Close()
	dst := netip.AddrPortFrom(t.ServerAddr(), uint16(srv.LocalAddr().(*net.UDPAddr).Port))
	for _, p := range opt.Paths {
		base := c.Paths[p]
		a, _ := t.ClientAddr(p)
		cli, err := listenUDP(t, t.ClientNS(), netip.AddrPortFrom(a, 0))
		if err != nil {
			return nil, err
		}
		for _, rate := range opt.Rates {
			s := base
			s = s.forCalibration()
			s.Rate = rate
			if err := t.SetPath(p, s); err != nil {
				cli.Close()
				return nil, err
			}
			discard := s.EffectiveBurst() / ProbeBytes
			var r DispersionResult
			for attempt := 1; ; attempt++ {
				r = DispersionResult{Path: p, Rate: rate, K: opt.TrainLen, Discard: discard, PacketBytes: ProbeBytes, Attempts: attempt}
				for i := 0; i < opt.Trains && ctx.Err() == nil; i++ {
					est, err := probeTrain(cli, srv, dst, uint32(i), opt.TrainLen, discard)
					if err != nil {
						cli.Close()
						return nil, fmt.Errorf("path %s rate %d train %d: %w", p, rate, i, err)
					}
					if est > 0 {
						r.Estimates = append(r.Estimates, est)
					}
					// Let the bucket refill so every train starts alike.
					time.Sleep(10*time.Millisecond + time.Duration(float64(s.EffectiveBurst())*8/float64(rate)*1e9))
				}
				r.Trains = len(r.Estimates)
				if r.Trains > 0 {
					e := slices.Clone(r.Estimates)
					slices.Sort(e)
					r.Median = quantile(e, 0.5)
					r.ErrPct = 100 * (r.Median - float64(rate)) / float64(rate)
					r.IQRPct = 100 * (quantile(e, 0.75) - quantile(e, 0.25)) / r.Median
				} else {
					r.ErrPct = -100
				}
				r.Pass = r.Trains >= opt.Trains/2 && math.Abs(r.ErrPct) <= DispersionTol*100
				if r.Pass || opt.Strict || attempt >= opt.Attempts || ctx.Err() != nil {
					break
				}
			}
			c.Dispersion = append(c.Dispersion, r)
			fmt.Fprintf(opt.Progress, "dispersion path %s rate %3d Mbit/s K=%d discard %d estimate %.2f Mbit/s (%+.2f%%, IQR %.2f%%) trains %d %s\n",
				p, rate/1e6, r.K, r.Discard, r.Median/1e6, r.ErrPct, r.IQRPct, r.Trains, passWord(r.Pass))
			if !r.Pass {
				fails = append(fails, fmt.Sprintf("path %s %d Mbit/s: estimate %.2f Mbit/s (%+.2f%%, limit ±%.0f%%) from %d/%d trains of K=%d",
					p, rate/1e6, r.Median/1e6, r.ErrPct, DispersionTol*100, r.Trains, opt.Trains, r.K))
			}
		}
		cli.Close()
		if err := t.SetPath(p, base); err != nil {
			return nil, err
		}
	}
	return fails, nil
}

// probeTrain sends k back-to-back probes (one sendmmsg) and estimates the
// bottleneck from the least-squares slope of the server's kernel receive
// timestamps over the probes after the first discard.
func probeTrain(cli, srv *net.UDPConn, dst netip.AddrPort, id uint32, k, discard int) (float64, error) {
	payload := ProbeBytes - 28
	msgs := make([]ipv4.Message, k)
	for i := range msgs {
		b := make([]byte, payload)
		binary.BigEndian.PutUint32(b[0:4], 0x70726f62) // "prob"
		binary.BigEndian.PutUint32(b[4:8], id)
		binary.BigEndian.PutUint32(b[8:12], uint32(i))
		msgs[i] = ipv4.Message{Buffers: [][]byte{b}, Addr: net.UDPAddrFromAddrPort(dst)}
	}
	pc := ipv4.NewPacketConn(cli)
	for sent := 0; sent < k; {
		n, err := pc.WriteBatch(msgs[sent:], 0)
		if err != nil {
			return 0, fmt.Errorf("send probes: %w", err)
		}
		sent += n
	}
	stamps := make([]int64, k)
	seen := 0
	buf := make([]byte, 2048)
	oob := make([]byte, 128)
	_ = srv.SetReadDeadline(time.Now().Add(time.Second))
	for seen < k {
		n, oobn, _, _, err := srv.ReadMsgUDPAddrPort(buf, oob)
		if err != nil {
			break // timeout: estimate from what arrived
		}
		if n != payload || binary.BigEndian.Uint32(buf[0:4]) != 0x70726f62 || binary.BigEndian.Uint32(buf[4:8]) != id {
			continue
		}
		i := int(binary.BigEndian.Uint32(buf[8:12]))
		rx, ok := rxStamp(oob[:oobn])
		if i < 0 || i >= k || !ok {
			continue
		}
		stamps[i] = rx
		seen++
	}
	_ = srv.SetReadDeadline(time.Time{})
	if seen < k {
		return 0, nil // a lost probe spoils the train; it is not counted
	}
	// Least squares of time against packet index over [discard, k).
	var xs, ys []float64
	for i := discard; i < k; i++ {
		xs = append(xs, float64(i))
		ys = append(ys, float64(stamps[i]-stamps[discard]))
	}
	slope := lsSlope(xs, ys)
	if slope <= 0 {
		return 0, nil
	}
	return float64(ProbeBytes) * 8 / (slope / 1e9), nil
}

func lsSlope(xs, ys []float64) float64 {
	n := float64(len(xs))
	var sx, sy, sxx, sxy float64
	for i := range xs {
		sx += xs[i]
		sy += ys[i]
		sxx += xs[i] * xs[i]
		sxy += xs[i] * ys[i]
	}
	den := n*sxx - sx*sx
	if den == 0 {
		return 0
	}
	return (n*sxy - sx*sy) / den
}
