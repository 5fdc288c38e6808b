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
	"strings"
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

// MonoNow is the emulator's clock (run.FidelityMeter).
func (n *Net) MonoNow() int64 { return testbed.MonoNow() }

// Fidelity is the emulator's record of [from, to] (run.FidelityMeter).
func (n *Net) Fidelity(from, to int64, tol time.Duration) (run.FidelityWindow, error) {
	return n.T.Fidelity(from, to, tol) // one type (harnesses/fidelity), no bridge
}

// StartCapture starts the emulator's wire capture (run.WireCapturer).
func (n *Net) StartCapture() error { return n.T.StartCapture() }

// WriteCapture writes the wire capture of [from, to] (run.WireCapturer).
func (n *Net) WriteCapture(file string, from, to int64, migrations []int64) (run.Capture, error) {
	r, err := n.T.WriteCapture(testbed.CaptureOptions{File: file, From: from, To: to, Migrations: migrations})
	if err != nil {
		return run.Capture{}, err
	}
	c := run.Capture{File: r.File, Bytes: r.Bytes, PcapngBytes: r.PcapngBytes, Packets: map[string]run.CaptureDir{},
		Overruns: r.Overruns, SnapPolicy: r.Policy, MonoToRealNS: r.MonoToRealNS, WholeWindows: r.WholeWindows}
	for k, d := range r.Dirs {
		c.Packets[k] = d
	}
	return c, nil
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
	return FactoryWith(FactoryOptions{Progress: progress, Scope: scope})
}

// FactoryOptions configure FactoryWith.
type FactoryOptions struct {
	Progress io.Writer // calibration lines; nil = quiet
	Scope    string    // CalibrateFull or CalibrateOperatingPoint
	// Strict makes every calibration gate a veto, as before issue 13:
	// any failed measurement (after retries under host stalls) stops the
	// run. Otherwise calibration is a warm-up and a sanity check that
	// stops the run only for a systematic testbed fault; each
	// repetition proves its own fidelity.
	Strict bool
	// Tuning of the emulator's holder; nil = testbed.DefaultTuning().
	Tuning *testbed.Tuning
}

// FactoryWith returns the NetFactory for `migaudit run`.
func FactoryWith(fo FactoryOptions) run.NetFactory {
	progress, scope := fo.Progress, fo.Scope
	return func(ctx context.Context, sc run.Scenario, skip bool) (run.Net, run.Calibration, func() error, error) {
		cfg := testbed.Standard()
		switch sc {
		case run.StepDown:
			cfg = testbed.StepDown()
		case run.PVDistinct:
			cfg = testbed.PVDistinct()
		case run.Lossy:
			cfg = testbed.Lossy()
		}
		cfg.Tuning = fo.Tuning
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
			// Still warm the emulator (and the paths' kernel state) up
			// before the first repetition.
			if err := testbed.WarmUp(ctx, tb, time.Second); err != nil {
				_ = down()
				return nil, cal, nil, fmt.Errorf("testbed warm-up: %w", err)
			}
			return n, cal, down, nil
		}
		mode := "warm-up and sanity check: fails only for a fault in every attempt; each repetition proves its own fidelity"
		if fo.Strict {
			mode = "strict: every gate is a veto"
		}
		if progress != nil {
			fmt.Fprintf(progress, "calibrating the testbed (quick gates; %s)…\n", mode)
		}
		opt := testbed.CalibrateOptions{Quick: true, Progress: progress, Strict: fo.Strict}
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
		cal.Note = strings.TrimPrefix(cal.Note+"; calibration mode: "+mode, "; ")
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
				if fo.Strict {
					return nil, cal, nil, fmt.Errorf("calibration gate failed, nothing measured (strict calibration; without --strict-calibration only a systematic fault stops the run): %w", cerr)
				}
				return nil, cal, nil, fmt.Errorf("testbed fault: a calibration gate failed in every attempt, nothing measured (this is not a host stall; see docs/testbed.md): %w", cerr)
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
