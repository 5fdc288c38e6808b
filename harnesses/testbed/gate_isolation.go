package testbed

import (
	"context"
	"fmt"
	"net/netip"
	"time"
)

// Gate 4, isolation: per-path counters show that traffic bound to a path
// stays on it and unbound traffic follows the route.

// --- gate 4: path isolation ---

func gateIsolation(ctx context.Context, t *Testbed, e *echoServer, c *Calibration, opt CalibrateOptions) ([]string, error) {
	const n = 20
	orig, err := t.Route()
	if err != nil {
		return nil, err
	}
	defer func() { _ = t.RouteVia(orig) }()
	type check struct {
		name, expect, route string
		bind                netip.Addr // invalid = unbound
	}
	checks := []check{
		{"bound to path A address", "A", "A", t.ClientAddrA()},
		{"bound to path B address", "B", "A", t.ClientAddrB()},
		{"unbound, main table via A", "A", "A", netip.Addr{}},
		{"bound to path A after route flip to B", "A", "B", t.ClientAddrA()},
		{"unbound after route flip to B", "B", "B", netip.Addr{}},
	}
	var fails []string
	for _, ck := range checks {
		for attempt := 1; ; attempt++ {
			if err := t.RouteVia(ck.route); err != nil {
				return nil, err
			}
			conn, err := newEchoClient(t, ck.bind)
			if err != nil {
				return nil, err
			}
			before, err := t.Counters()
			if err != nil {
				conn.Close()
				return nil, err
			}
			rtts, _, src, err := echoes(ctx, e, t, conn, n, time.Millisecond)
			conn.Close()
			if err != nil {
				return nil, err
			}
			after, err := t.Counters()
			if err != nil {
				return nil, err
			}
			r := IsolationResult{Check: ck.name, Expect: ck.expect, N: n, Carried: map[string][2]uint64{}}
			if src.IsValid() {
				r.Source = src.String()
			}
			for _, p := range Paths {
				r.Carried[p] = [2]uint64{after[p].Up.Packets - before[p].Up.Packets, after[p].Down.Packets - before[p].Down.Packets}
			}
			other := "B"
			if ck.expect == "B" {
				other = "A"
			}
			wantSrc, _ := t.ClientAddr(ck.expect)
			r.Pass = len(rtts) == n && r.Carried[ck.expect] == [2]uint64{n, n} && r.Carried[other] == [2]uint64{0, 0} &&
				r.Source == wantSrc.String()
			// Sanity mode: an echo lost or late under load is retried; a
			// packet on the wrong path or a wrong source address is a fault
			// however often it is tried.
			misrouted := r.Carried[other] != [2]uint64{0, 0} || (r.Source != "" && r.Source != wantSrc.String())
			if !r.Pass && !opt.Strict && !misrouted && attempt < opt.Attempts && ctx.Err() == nil {
				continue
			}
			if !r.Pass {
				r.Detail = fmt.Sprintf("want %d up/%d down on %s, 0 on %s, source %s; got A %v B %v, source %q, %d/%d answered",
					n, n, ck.expect, other, wantSrc, r.Carried["A"], r.Carried["B"], r.Source, len(rtts), n)
				fails = append(fails, ck.name+": "+r.Detail)
			}
			c.Isolation = append(c.Isolation, r)
			fmt.Fprintf(opt.Progress, "isolation  %-38s A up/down %v B up/down %v source %s %s\n",
				ck.name, r.Carried["A"], r.Carried["B"], r.Source, passWord(r.Pass))
			break
		}
	}
	return fails, nil
}
