// Package tbnet adapts harnesses/testbed to run.Net and provides the
// run.NetFactory `migaudit run` uses: bring the two-path testbed up for a
// scenario (step-down: path B at the step-down delay), calibrate it, tear
// it down.
package tbnet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os/exec"
	"time"

	"github.com/migaudit/migaudit/harnesses/run"
	"github.com/migaudit/migaudit/harnesses/testbed"
)

// Net wraps a running testbed.
type Net struct {
	T     *testbed.Testbed
	specs map[run.Path]testbed.PathSpec
}

// Wrap adapts t.
func Wrap(t *testbed.Testbed) (*Net, error) {
	n := &Net{T: t, specs: map[run.Path]testbed.PathSpec{}}
	for _, p := range []run.Path{run.PathA, run.PathB} {
		s, err := t.Path(string(p))
		if err != nil {
			return nil, fmt.Errorf("testbed path %s: %w", p, err)
		}
		n.specs[p] = s
	}
	return n, nil
}

func (n *Net) ClientNS() string       { return n.T.ClientNS() }
func (n *Net) ServerNS() string       { return n.T.ServerNS() }
func (n *Net) ServerAddr() netip.Addr { return n.T.ServerAddr() }
func (n *Net) ClientAddr(p run.Path) netip.Addr {
	if p == run.PathB {
		return n.T.ClientAddrB()
	}
	return n.T.ClientAddrA()
}
func (n *Net) Command(ctx context.Context, ns, name string, args ...string) *exec.Cmd {
	return n.T.Command(ctx, ns, name, args...)
}
func (n *Net) RouteVia(p run.Path) error        { return n.T.RouteVia(string(p)) }
func (n *Net) PathRTT(p run.Path) time.Duration { return n.specs[p].RTT }
func (n *Net) PathRate(p run.Path) int64        { return n.specs[p].Rate }
func (n *Net) Counters() (map[run.Path]run.PathCounter, error) {
	c, err := n.T.Counters()
	if err != nil {
		return nil, err
	}
	out := map[run.Path]run.PathCounter{}
	for k, v := range c {
		out[run.Path(k)] = run.PathCounter{
			ToServerPackets: int64(v.Up.Packets), ToServerBytes: int64(v.Up.Bytes),
			FromServerPackets: int64(v.Down.Packets), FromServerBytes: int64(v.Down.Bytes),
			ToServerDrops:   int64(v.Up.QueueDrops + v.Up.LossDrops),
			FromServerDrops: int64(v.Down.QueueDrops + v.Down.LossDrops),
		}
	}
	return out, nil
}

// EmulatorTiming is the link emulator's cumulative self-measurement per
// path and direction.
func (n *Net) EmulatorTiming() (json.RawMessage, error) {
	m, err := n.T.EmulatorTiming()
	if err != nil {
		return nil, err
	}
	return json.Marshal(m)
}

// Scope of the calibration a run performs.
const (
	// CalibrateFull runs the testbed's quick gates at their standard
	// points (RTT 10/20/40 ms, 20/50/100 Mbit/s).
	CalibrateFull = "full"
	// CalibrateOperatingPoint runs the same gates only at the run's own
	// path RTTs and rates (e.g. 20 and 40 ms, 20 Mbit/s).
	CalibrateOperatingPoint = "operating-point"
)

// Factory returns the NetFactory for `migaudit run` with full calibration.
func Factory(progress io.Writer) run.NetFactory { return FactoryScope(progress, CalibrateFull) }

// FactoryScope returns the NetFactory for `migaudit run`. Calibration uses
// the testbed's quick gates at the given scope; progress lines go to
// progress (may be nil).
func FactoryScope(progress io.Writer, scope string) run.NetFactory {
	return func(ctx context.Context, sc run.Scenario, skip bool) (run.Net, run.Calibration, func() error, error) {
		cfg := testbed.Standard()
		if sc == run.StepDown {
			cfg = testbed.StepDown()
		}
		cal := run.Calibration{Paths: map[run.Path]string{run.PathA: cfg.PathA.String(), run.PathB: cfg.PathB.String()}}
		tb, err := testbed.Up(ctx, cfg)
		if err != nil {
			return nil, cal, nil, fmt.Errorf("testbed up: %w", err)
		}
		down := func() error { return tb.Down() }
		n, err := Wrap(tb)
		if err != nil {
			_ = down()
			return nil, cal, nil, err
		}
		if skip {
			cal.Note = "calibration skipped (--skip-calibration): results are from an uncalibrated emulator"
			return n, cal, down, nil
		}
		if progress != nil {
			fmt.Fprintln(progress, "calibrating the testbed (quick gates)…")
		}
		opt := testbed.CalibrateOptions{Quick: true, Progress: progress}
		if scope == CalibrateOperatingPoint {
			seenR, seenT := map[int64]bool{}, map[time.Duration]bool{}
			for _, p := range []testbed.PathSpec{cfg.PathA, cfg.PathB} {
				if !seenR[p.Rate] {
					opt.Rates, seenR[p.Rate] = append(opt.Rates, p.Rate), true
				}
				if !seenT[p.RTT] {
					opt.RTTs, seenT[p.RTT] = append(opt.RTTs, p.RTT), true
				}
			}
			cal.Note = fmt.Sprintf("calibrated at the operating point only: RTTs %v, rates %v bit/s", opt.RTTs, opt.Rates)
		}
		rec, cerr := testbed.Calibrate(ctx, tb, opt)
		cal.Calibrated = true
		if rec != nil {
			cal.Record, _ = json.Marshal(rec)
			cal.Passed = rec.Pass
		}
		if cerr != nil {
			_ = down()
			var ge *testbed.GateError
			if errors.As(cerr, &ge) {
				return nil, cal, nil, fmt.Errorf("calibration gate failed, nothing measured (use --skip-calibration to run uncalibrated): %w", cerr)
			}
			return nil, cal, nil, fmt.Errorf("calibration gate failed to complete, nothing measured (use --skip-calibration to run uncalibrated): %w", cerr)
		}
		// Calibrate restores each path's spec; re-read it for the run.
		if n, err = Wrap(tb); err != nil {
			_ = down()
			return nil, cal, nil, err
		}
		return n, cal, down, nil
	}
}
