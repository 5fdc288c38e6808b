package run

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/migaudit/migaudit/data"
	"github.com/migaudit/migaudit/discriminator"
)

// runRep runs repetition i (attempt attempt) in its own new directory:
// the harness runs it as planned, the runner compresses its traces,
// analyses the server's, measures fidelity, verifies the migration, judges
// it and writes the manifest.
func runRep(ctx context.Context, o Options, h Harness, bins Binaries, netw Net, cal Calibration, i, attempt int, stderr io.Writer) RepSummary {
	dir := filepath.Join(o.Out, fmt.Sprintf("rep%d", i))
	rs := RepSummary{Rep: i, Attempt: attempt, Dir: dir, Status: Failed}
	if err := os.Mkdir(dir, 0o755); err != nil { // O_EXCL: never reuse a directory
		rs.Error = fmt.Sprintf("create %s: %v", dir, err)
		return rs
	}
	man := newManifest(o, h.Name(), bins, netw, cal, i, attempt)
	// The runner owns the routing: every repetition starts, and ends, with
	// the client's default route on path A.
	if err := netw.RouteVia(PathA); err != nil {
		rs.Error = fmt.Sprintf("route the client via path A before the repetition: %v", err)
		return rs
	}
	host := watchHost(netw, &man)
	wire := startWireCapture(o, netw, stderr)

	res, err := runHarness(ctx, o, h, netw, dir, i, stderr, &man)
	host.after(&man)
	man.Capture = wire.finish(dir, res)
	if rerr := netw.RouteVia(PathA); rerr != nil {
		res.Notes = append(res.Notes, "restoring the client's route to path A failed: "+rerr.Error())
	}
	man.Result, man.Version = res, res.Version
	if err != nil {
		rs.Error = err.Error()
		man.Error = err.Error()
	}
	rs.Completed = res.Completed
	compressTraces(dir, &res, &man)

	an, ret := analyseRep(dir, h.Name(), o.Scenario, res, netw, &man)
	rs.Analysis, rs.Return = an, ret
	if host.meter != nil && ctx.Err() == nil {
		man.Fidelity = measureFidelity(host.meter, o.Scenario, netw, res, an, ret, host.monoStart, host.meter.MonoNow(), host.wallToMono)
		rs.Fidelity = man.Fidelity
	}
	man.Verification = Verify(o.Scenario, netw, res, man.CountersBefore, man.CountersAfter, an)
	rs.Verification = man.Verification
	man.Interrupted = err != nil && ctx.Err() != nil
	rs.Status, man.SpoiledReason = Judge(&man)
	man.Status = rs.Status
	kl := DescribeKeyLog(dir, res.KeyLogBy)
	man.KeyLog = &kl
	man.Files = listFiles(dir)
	if werr := WriteJSONAtomic(filepath.Join(dir, "manifest.json"), man); werr != nil && rs.Error == "" {
		rs.Error = werr.Error()
	}
	fmt.Fprintf(stderr, "rep %d/%d: %s%s\n", i, o.Reps, rs.Status, repLineSuffix(rs))
	return rs
}

// newManifest starts a repetition's manifest with what is known before it
// runs: the request, the build, the calibration and the paths.
func newManifest(o Options, impl string, bins Binaries, netw Net, cal Calibration, i, attempt int) Manifest {
	im, _ := data.Lookup(impl)
	man := Manifest{Implementation: impl, Upstream: im.Commit, Binaries: bins, Scenario: o.Scenario, CC: o.CC, Rep: i, Attempt: attempt,
		Calibration: cal, Transfer: o.Transfer.String(), MigrateAt: o.MigrateAt.String(), Start: time.Now().UTC(),
		Paths: map[Path]PathInfo{}}
	if o.Scenario == MigrateBack {
		man.BackAfter = o.BackAfter.String()
	}
	for _, p := range []Path{PathA, PathB} {
		man.Paths[p] = PathInfo{Spec: cal.Paths[p], RTTUS: netw.PathRTT(p).Microseconds(), Rate: netw.PathRate(p)}
	}
	return man
}

// hostWatch records what the network and the host did around the
// repetition: link counters, load, the emulator's timing and its clock.
type hostWatch struct {
	netw       Net
	timer      EmulatorTimer
	meter      FidelityMeter
	monoStart  int64
	wallToMono int64
}

func watchHost(netw Net, man *Manifest) *hostWatch {
	w := &hostWatch{netw: netw}
	man.CountersBefore, _ = netw.Counters()
	man.LoadBefore = loadavg()
	if et, ok := netw.(EmulatorTimer); ok {
		w.timer = et
		man.EmulatorBefore, _ = et.EmulatorTiming()
	}
	if fm, ok := netw.(FidelityMeter); ok {
		w.meter = fm
		w.monoStart = fm.MonoNow()
		w.wallToMono = w.monoStart - time.Now().UnixNano()
	}
	return w
}

func (w *hostWatch) after(man *Manifest) {
	man.End = time.Now().UTC()
	man.CountersAfter, _ = w.netw.Counters()
	man.LoadAfter = loadavg()
	if w.timer != nil {
		man.EmulatorAfter, _ = w.timer.EmulatorTiming()
	}
}

// runHarness plans the repetition and has the harness run it, showing its
// progress.
func runHarness(ctx context.Context, o Options, h Harness, netw Net, dir string, i int, stderr io.Writer, man *Manifest) (RepResult, error) {
	prog := newRepProgress(o, stderr, fmt.Sprintf("%s %s rep %d/%d", h.Name(), o.Scenario, i, o.Reps))
	defer prog.Finish()
	keyLog, _ := filepath.Abs(filepath.Join(dir, KeyLogFile))
	env := RepEnv{Net: netw, Scenario: o.Scenario, CC: o.CC, Transfer: o.Transfer, MigrateAt: o.MigrateAt,
		BackAfter: o.BackAfter, Dir: dir, Index: i, SelfExe: o.SelfExe, KeyLog: keyLog, Progress: prog.Set}
	plan, err := PlanRep(h.Capabilities(), env)
	if err != nil {
		return RepResult{}, err
	}
	env.Plan = plan
	man.Plan = &plan
	return h.RunRep(ctx, env)
}

// compressTraces gzips the traces in place (the parsers read gzip
// transparently) and renames them in res and the manifest.
func compressTraces(dir string, res *RepResult, man *Manifest) {
	for _, t := range []*string{&res.ServerTrace, &res.ClientTrace} {
		if *t == "" {
			continue
		}
		if gz, err := gzipFile(filepath.Join(dir, *t)); err == nil {
			*t, _ = filepath.Rel(dir, gz)
		} else {
			man.Error = strings.TrimSpace(man.Error + "; compress trace: " + err.Error())
		}
	}
	man.Result.ServerTrace, man.Result.ClientTrace = res.ServerTrace, res.ClientTrace
}

// analyseRep analyses the server's trace (in a download the server is the
// sender) and writes analysis.json (and analysis-return.json); a failure is
// recorded in the manifest.
func analyseRep(dir, impl string, sc Scenario, res RepResult, netw Net, man *Manifest) (an, ret *discriminator.Analysis) {
	if res.ServerTrace == "" {
		return nil, nil
	}
	a, ret, err := analyse(filepath.Join(dir, res.ServerTrace), impl, sc, res, netw)
	if err != nil {
		man.AnalysisError = err.Error()
		return nil, nil
	}
	if werr := WriteJSONAtomic(filepath.Join(dir, "analysis.json"), a); werr != nil {
		man.AnalysisError = werr.Error()
	}
	if ret != nil {
		_ = WriteJSONAtomic(filepath.Join(dir, "analysis-return.json"), ret)
	}
	return &a, ret
}
