package testbed

import (
	"context"
	"fmt"
	"math"
	"slices"
	"time"
)

// Gate 1, timing: UDP echoes at each RTT, judged by their median and mean
// absolute deviation (kernel timestamps).

// --- gate 1: timing fidelity ---

func gateTiming(ctx context.Context, t *Testbed, e *echoServer, sen *sentinel, c *Calibration, opt CalibrateOptions) ([]string, error) {
	var fails []string
	for _, p := range opt.Paths {
		base := c.Paths[p]
		a, _ := t.ClientAddr(p)
		conn, err := newEchoClient(t, a)
		if err != nil {
			return nil, err
		}
		for _, rtt := range opt.RTTs {
			s := base
			s = s.forCalibration()
			s.RTT = rtt
			if err := t.SetPath(p, s); err != nil {
				conn.Close()
				return nil, err
			}
			var r TimingResult
			var retried []string
			for attempt := 1; ; attempt++ {
				// Warm up the compensation before measuring.
				if _, _, _, err := echoes(ctx, e, t, conn, 30, 2*time.Millisecond); err != nil {
					conn.Close()
					return nil, err
				}
				from := time.Now()
				late0 := emulatorBehind(t, p)
				rtts, raw, _, err := echoes(ctx, e, t, conn, opt.Echoes, 3*time.Millisecond)
				if err != nil {
					conn.Close()
					return nil, err
				}
				r = summariseTiming(p, rtt, rtts, raw)
				r.Lost = opt.Echoes - r.N
				r.HostStalls = sen.window(from, time.Now())
				r.EmulatorLate = emulatorBehind(t, p) - late0
				r.Pass = r.N >= opt.Echoes*9/10 && math.Abs(r.MedianErrPct) <= TimingMedianTol*100
				if opt.Strict {
					r.Pass = r.Pass && r.MeanAbsDev <= TimingMADMax
				}
				if r.Pass || (opt.Strict && r.HostStalls.Count == 0) || attempt >= opt.Attempts {
					break
				}
				retried = append(retried, fmt.Sprintf("attempt %d: median %.3f ms, mean abs dev %d µs, max %.3f ms; host stalled %d× (max %.1f ms)",
					attempt, ms(r.Median), r.MeanAbsDev.Microseconds(), ms(r.Max), r.HostStalls.Count, ms(r.HostStalls.Max)))
			}
			r.Retried = retried
			c.Timing = append(c.Timing, r)
			fmt.Fprintf(opt.Progress, "timing     path %s rtt %-5v median %.3f ms (%+.2f%%) mean abs dev %d µs p99 %.3f ms n=%d host stalls %d emulator late %d %s\n",
				p, rtt, ms(r.Median), r.MedianErrPct, r.MeanAbsDev.Microseconds(), ms(r.P99), r.N, r.HostStalls.Count, r.EmulatorLate, passWord(r.Pass))
			if !r.Pass {
				if opt.Strict {
					fails = append(fails, fmt.Sprintf("path %s rtt %v: median %.3f ms (%+.2f%%, limit ±%.0f%%), mean abs dev %d µs (limit %d), %d/%d answered%s",
						p, rtt, ms(r.Median), r.MedianErrPct, TimingMedianTol*100, r.MeanAbsDev.Microseconds(), TimingMADMax.Microseconds(), r.N, opt.Echoes, stallNote(r.HostStalls, len(retried)+1)))
				} else {
					fails = append(fails, fmt.Sprintf("path %s rtt %v: median %.3f ms (%+.2f%%, limit ±%.0f%%), %d/%d answered, in each of %d attempts: the emulated delay is systematically wrong",
						p, rtt, ms(r.Median), r.MedianErrPct, TimingMedianTol*100, r.N, opt.Echoes, len(retried)+1))
				}
			}
		}
		conn.Close()
		if err := t.SetPath(p, base); err != nil {
			return nil, err
		}
	}
	return fails, nil
}

// stallNote explains a failure the host contributed to.
func stallNote(h HostStalls, attempts int) string {
	if h.Count == 0 {
		return ""
	}
	return fmt.Sprintf(" — the host stalled a real-time thread %d× (max %.1f ms) during the measurement, after %d attempt(s): the machine is overloaded, retry when it is quieter", h.Count, ms(h.Max), attempts)
}

func summariseTiming(path string, cfg time.Duration, rtts, raw []time.Duration) TimingResult {
	r := TimingResult{Path: path, Configured: cfg, N: len(rtts)}
	if len(rtts) == 0 {
		r.MedianErrPct = -100
		return r
	}
	s := slices.Clone(rtts)
	slices.Sort(s)
	r.Min, r.Max = s[0], s[len(s)-1]
	r.Median = quantile(s, 0.5)
	r.P99 = quantile(s, 0.99)
	var sum float64
	for _, v := range s {
		sum += float64(v)
	}
	mean := sum / float64(len(s))
	r.Mean = time.Duration(mean)
	var dev float64
	for _, v := range s {
		dev += math.Abs(float64(v) - mean)
	}
	r.MeanAbsDev = time.Duration(dev / float64(len(s)))
	r.MedianErrPct = 100 * (float64(r.Median) - float64(cfg)) / float64(cfg)
	rs := slices.Clone(raw)
	slices.Sort(rs)
	r.RawMedian = quantile(rs, 0.5)
	return r
}
