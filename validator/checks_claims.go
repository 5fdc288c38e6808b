package validator

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/migaudit/migaudit/data"
	"github.com/migaudit/migaudit/survey"
	"github.com/tidwall/gjson"
)

// The checks of this file and of checks_runs.go and checks_prose.go are
// claims the survey makes about where it came from: which commit it read
// (the project's own pins), what backs each answer, which runs are distinct
// runs, whether the emulator was calibrated, and what its sentences say.
func init() {
	perImplChecks = append(perImplChecks,
		check{"pin", checkPin, ""},
		check{"evidence-backing", checkBacking, ""},
		check{"run-identity", checkRunIdentity, "live.repetitions"},
		check{"calibration", checkCalibration, "own-runs"},
		check{"live-summary", checkLiveSummary, "live"},
		check{"prose", checkProse, ""},
	)
	crossChecks = append(crossChecks,
		check{"F1/statement", checkF1Statement, ""},
		check{"F2/statement", checkF2Statement, ""},
		check{"F3/statement", checkF3Statement, ""},
	)
}

// pin is one entry of data/implementations.json as the validator reads it.
type pin struct{ Upstream, Commit, LiveVersion string }

// pins reads the project's pins: Options.Pins when set (a file in the
// format of data/implementations.json), else the copy embedded from data/.
func (v *Validator) pins() (map[string]pin, error) {
	v.pinOnce.Do(func() {
		out := map[string]pin{}
		if v.opts.Pins != "" {
			b, err := os.ReadFile(v.opts.Pins)
			if err != nil {
				v.pinErr = fmt.Errorf("pins: %w", err)
				return
			}
			if !gjson.ValidBytes(b) {
				v.pinErr = fmt.Errorf("pins: %s is not valid JSON", v.opts.Pins)
				return
			}
			gjson.GetBytes(b, "implementations").ForEach(func(_, p gjson.Result) bool {
				out[p.Get("name").String()] = pin{p.Get("upstream").String(), p.Get("commit").String(), p.Get("live_version").String()}
				return true
			})
		} else {
			ims, err := data.Implementations()
			if err != nil {
				v.pinErr = err
				return
			}
			for _, p := range ims {
				out[p.Name] = pin{p.Upstream, p.Commit, p.LiveVersion}
			}
		}
		v.pinned = out
	})
	return v.pinned, v.pinErr
}

func normURL(u string) string {
	return strings.TrimSuffix(strings.TrimSuffix(strings.TrimSpace(u), "/"), ".git")
}

// checkPin: the entry is one of the project's pinned implementations, at
// the pinned upstream and commit (and live version). The reference's
// upstream_commits.txt covers only the study's five and only with
// --evidence; data/implementations.json covers all fourteen, always.
func checkPin(v *Validator, doc, im gjson.Result) (Status, string) {
	var d verdict
	name := im.Get("name").String()
	ps, err := v.pins()
	if err != nil {
		d.fail("%v", err)
		return d.result()
	}
	p, ok := ps[name]
	if !ok {
		d.fail("%s is not pinned in data/implementations.json: an entry for an implementation the project never pinned", name)
		return d.result()
	}
	if got := im.Get("commit").String(); got != p.Commit {
		d.fail("commit %s, data/implementations.json pins %s at %s", short(got), name, short(p.Commit))
	}
	if got := normURL(im.Get("upstream").String()); got != normURL(p.Upstream) {
		d.fail("upstream %s, data/implementations.json pins %s", got, p.Upstream)
	}
	if lv := im.Get("live_version").String(); lv != "" && p.LiveVersion != "" && lv != p.LiveVersion {
		d.fail("live_version %s, data/implementations.json pins %s", lv, p.LiveVersion)
	}
	d.note("%s at %s as pinned", normURL(p.Upstream), short(p.Commit))
	return d.result()
}

// checkBacking: every answer rests on evidence of its own kind. A source
// answer needs source positions and an audited source; a live answer needs
// repetitions that count as migrations; an answer other than UNKNOWN needs
// one of the two. A row that carries answers and no evidence claims
// something nobody can check: that is a FAIL, not an UNVERIFIABLE.
func checkBacking(v *Validator, doc, im gjson.Result) (Status, string) {
	var d verdict
	audited := im.Get("source_audited").Bool()
	migrations := 0
	for _, rep := range im.Get("live.repetitions").Array() {
		if k := rep.Get("migration.kind").String(); k == "ip" || k == "path-change" {
			migrations++
		}
	}
	im.Get("answers").ForEach(func(_, a gjson.Result) bool {
		q := a.Get("question").String()
		src, lv, ans := a.Get("source_answer").String(), a.Get("live_answer").String(), a.Get("answer").String()
		nev := len(a.Get("evidence").Array())
		if src != "" && src != "UNKNOWN" {
			if nev == 0 {
				d.fail("%s source answer %s cites no source position", q, src)
			}
			if !audited {
				d.fail("%s source answer %s but source_audited is false", q, src)
			}
		}
		if lv != "" && migrations == 0 {
			d.fail("%s live answer %s without a repetition that counts as a migration", q, lv)
		}
		if ans != "" && ans != "UNKNOWN" && nev == 0 && migrations == 0 {
			d.fail("%s answer %s has no evidence at all (no source position, no live repetition)", q, ans)
		}
		d.note("%s: %d positions", q, nev)
		return true
	})
	if audited && len(im.Get("answers").Array()) > 0 {
		n := 0
		eachEvidence(im, func(string, gjson.Result) { n++ })
		if n == 0 {
			d.fail("source_audited is true but the entry cites no source position")
		}
	}
	d.note("%d repetitions counting as migrations", migrations)
	return d.result()
}

// calibrationRecord finds the run's calibration record beside the
// repetition: the survey's calibration path, else calibration.json in the
// repetition directory or in the run directory above it.
func (v *Validator) calibrationRecord(im, rep gjson.Result, manifestPath string) (string, []byte) {
	var cands []string
	if c := rep.Get("calibration").String(); c != "" {
		if p, err := v.resolve(im.Get("live.origin").String(), c); err == nil {
			cands = append(cands, p)
		}
	}
	dir := filepath.Dir(manifestPath)
	cands = append(cands, filepath.Join(dir, "calibration.json"), filepath.Join(filepath.Dir(dir), "calibration.json"))
	for _, c := range cands {
		if b, err := os.ReadFile(c); err == nil {
			return c, b
		}
	}
	return "", nil
}

// The testbed's gates, as its documentation states them (restated here:
// the validator imports nothing from the harnesses).
const (
	calTimingMedianTolPct = 2.0     // |median − configured| ≤ 2 %
	calTimingMADMaxNS     = 200_000 // mean absolute deviation ≤ 200 µs
	calThroughputMinFrac  = 0.97
	calThroughputMaxFrac  = 1.01
	calDispersionTolPct   = 2.0
)

// recordPasses re-derives a calibration record's verdict from its figures:
// every timing, throughput and dispersion measurement against the gates,
// every isolation check, each gate's verdict from its measurements, and the
// record's pass from the gates. It returns what it found wrong.
//
// A record in "sanity" mode (the default since each repetition measures
// its own fidelity) judges only systematic faults: the timing median, not
// its jitter, and throughput faulty only when every transfer is below the
// floor or every one above the ceiling. A "strict" record, or one without a
// mode (recorded before the modes existed), is judged on every tolerance.
func recordPasses(rec gjson.Result) (pass bool, problems []string) {
	sanity := rec.Get("mode").String() == "sanity"
	gatePass := map[string]bool{"timing": true, "throughput": true, "dispersion": true, "isolation": true}
	measured := map[string]int{}
	rec.Get("timing").ForEach(func(_, r gjson.Result) bool {
		measured["timing"]++
		cfg, med := r.Get("configured_ns").Float(), r.Get("median_ns").Float()
		errPct := 100.0
		if cfg > 0 {
			errPct = 100 * (med - cfg) / cfg
		}
		if e := r.Get("median_err_pct"); e.Exists() && absf(e.Float()-errPct) > 0.01 {
			problems = append(problems, fmt.Sprintf("timing %s %.0f ms: median_err_pct %.3f, the median %.0f ns gives %.3f", r.Get("path").String(), cfg/1e6, e.Float(), med, errPct))
		}
		ok := r.Get("n").Int() > 0 && absf(errPct) <= calTimingMedianTolPct && (sanity || r.Get("mean_abs_dev_ns").Int() <= calTimingMADMaxNS)
		if r.Get("pass").Bool() != ok {
			problems = append(problems, fmt.Sprintf("timing %s %.0f ms says pass=%v; median error %.2f %%, mean abs dev %d ns give %v", r.Get("path").String(), cfg/1e6, r.Get("pass").Bool(), errPct, r.Get("mean_abs_dev_ns").Int(), ok))
		}
		gatePass["timing"] = gatePass["timing"] && ok
		return true
	})
	rec.Get("throughput").ForEach(func(_, r gjson.Result) bool {
		measured["throughput"]++
		c := r.Get("ceiling_bps").Float()
		ok := c > 0 && r.Get("min_bps").Float() >= calThroughputMinFrac*c && r.Get("max_bps").Float() <= calThroughputMaxFrac*c
		if sanity {
			ok = c > 0 && r.Get("max_bps").Float() >= calThroughputMinFrac*c && r.Get("min_bps").Float() <= calThroughputMaxFrac*c
		}
		if r.Get("pass").Bool() && !ok {
			problems = append(problems, fmt.Sprintf("throughput %s says pass; goodput %.0f–%.0f bit/s against a ceiling of %.0f is outside [%.2f, %.2f]", r.Get("path").String(), r.Get("min_bps").Float(), r.Get("max_bps").Float(), c, calThroughputMinFrac, calThroughputMaxFrac))
		}
		gatePass["throughput"] = gatePass["throughput"] && ok && r.Get("pass").Bool()
		return true
	})
	rec.Get("dispersion").ForEach(func(_, r gjson.Result) bool {
		measured["dispersion"]++
		ok := absf(r.Get("err_pct").Float()) <= calDispersionTolPct && r.Get("trains").Int() > 0
		if r.Get("pass").Bool() && !ok {
			problems = append(problems, fmt.Sprintf("dispersion %s says pass with an error of %.2f %%", r.Get("path").String(), r.Get("err_pct").Float()))
		}
		gatePass["dispersion"] = gatePass["dispersion"] && ok && r.Get("pass").Bool()
		return true
	})
	rec.Get("isolation").ForEach(func(_, r gjson.Result) bool {
		measured["isolation"]++
		n, exp := r.Get("n").Int(), r.Get("expect").String()
		other := "B"
		if exp == "B" {
			other = "A"
		}
		c := r.Get("carried")
		ok := n > 0 && c.Get(exp+".0").Int() == n && c.Get(exp+".1").Int() == n && c.Get(other+".0").Int() == 0 && c.Get(other+".1").Int() == 0
		if r.Get("pass").Bool() && !ok {
			problems = append(problems, fmt.Sprintf("isolation %q says pass; path %s carried %s, path %s %s for %d echoes", r.Get("check").String(), exp, c.Get(exp).Raw, other, c.Get(other).Raw, n))
		}
		gatePass["isolation"] = gatePass["isolation"] && ok && r.Get("pass").Bool()
		return true
	})
	all := true
	rec.Get("gates").ForEach(func(k, g gjson.Result) bool {
		name := k.String()
		if g.Get("skipped").Bool() {
			return true
		}
		want := gatePass[name] && len(g.Get("failures").Array()) == 0
		if measured[name] == 0 && g.Get("pass").Bool() {
			problems = append(problems, fmt.Sprintf("gate %s passes without a measurement", name))
			want = false
		}
		if g.Get("pass").Bool() != want {
			problems = append(problems, fmt.Sprintf("gate %s says pass=%v, its measurements give %v", name, g.Get("pass").Bool(), want))
		}
		all = all && want
		return true
	})
	if !rec.Get("gates").Exists() {
		problems = append(problems, "the record has no gate verdicts")
		all = false
	}
	if rec.Get("pass").Bool() != all {
		problems = append(problems, fmt.Sprintf("record says pass=%v, its gates give %v", rec.Get("pass").Bool(), all))
	}
	return all && rec.Get("pass").Bool(), problems
}

func absf(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

// checkCalibration: what the survey and the run's manifest say about the
// emulator's calibration is what the calibration record says. A
// repetition presented without the "uncalibrated" warning claims a
// calibrated emulator: the manifest must say calibrated and passed, its
// embedded record must pass by its own figures at the run's operating
// point and before the run, and the record kept beside the run must agree.
func checkCalibration(v *Validator, doc, im gjson.Result) (Status, string) {
	var d verdict
	for _, rep := range im.Get("live.repetitions").Array() {
		id := rep.Get("id").String()
		ref := rep.Get("manifest").String()
		if ref == "" {
			d.fail("%s: own run without a manifest: nothing says how the emulator was calibrated", id)
			continue
		}
		mp, err := v.resolve(survey.OwnRuns, ref)
		if err != nil {
			d.fail("%s: %v", id, err)
			continue
		}
		b, err := os.ReadFile(mp)
		if err != nil || !gjson.ValidBytes(b) {
			d.fail("%s: manifest %s unreadable", id, ref)
			continue
		}
		man := gjson.ParseBytes(b)
		cal := man.Get("calibration")
		warned := false
		for _, w := range rep.Get("warnings").Array() {
			if strings.Contains(strings.ToLower(w.String()), "uncalibrated") {
				warned = true
			}
		}
		if !cal.Exists() {
			d.fail("%s: manifest has no calibration block", id)
			continue
		}
		calibrated, passed := cal.Get("calibrated").Bool(), cal.Get("passed").Bool()
		if !calibrated {
			if !warned {
				d.fail("%s: manifest says calibrated: false, the survey presents the repetition without the uncalibrated warning", id)
			} else {
				d.note("%s: uncalibrated, and said so", id)
			}
			continue
		}
		if warned {
			d.fail("%s: survey warns of an uncalibrated emulator, the manifest says calibrated: true", id)
			continue
		}
		bad := false
		rec := cal.Get("record")
		if !rec.Exists() {
			d.fail("%s: manifest says calibrated: true but keeps no calibration record", id)
			continue
		}
		ok, problems := recordPasses(rec)
		for _, p := range problems {
			d.fail("%s: calibration record: %s", id, p)
			bad = true
		}
		if !passed || !ok {
			d.fail("%s: manifest says calibrated: true (passed=%v), the calibration record does not pass", id, passed)
			bad = true
		}
		// Calibrated at the run's own operating point, before the run.
		for _, p := range []string{"A", "B"} {
			run, cfg := man.Get("paths."+p+".rtt_us"), rec.Get("paths."+p+".rtt_ns")
			if run.Exists() && cfg.Exists() && run.Int()*1000 != cfg.Int() {
				d.fail("%s: path %s ran at %d µs RTT, the calibration record calibrated %d µs", id, p, run.Int(), cfg.Int()/1000)
				bad = true
			}
			rr, cr := man.Get("paths."+p+".rate_bps"), rec.Get("paths."+p+".rate_bps")
			if rr.Exists() && cr.Exists() && rr.Int() != cr.Int() {
				d.fail("%s: path %s ran at %d bit/s, the calibration record calibrated %d bit/s", id, p, rr.Int(), cr.Int())
				bad = true
			}
		}
		if fin, start := rec.Get("finished").Time(), man.Get("start").Time(); !fin.IsZero() && !start.IsZero() && fin.After(start) {
			d.fail("%s: calibration finished at %s, after the run started (%s)", id, rec.Get("finished").String(), man.Get("start").String())
			bad = true
		}
		// The record kept beside the run says the same.
		if path, kb := v.calibrationRecord(im, rep, mp); path != "" {
			rel := relOrBase(v.opts.RepoRoot, path)
			if !gjson.ValidBytes(kb) {
				d.fail("%s: %s is not valid JSON", id, rel)
				continue
			}
			kept := gjson.ParseBytes(kb)
			krec := kept.Get("record")
			if !krec.Exists() && kept.Get("timing").Exists() {
				krec = kept // a bare testbed record
			}
			for _, f := range []string{"calibrated", "passed"} {
				if x := kept.Get(f); x.Exists() && !x.Bool() {
					d.fail("%s: %s says %s: false, the manifest says calibrated: true", id, rel, f)
					bad = true
				}
			}
			if krec.Exists() {
				if !krec.Get("pass").Bool() {
					d.fail("%s: %s records a calibration that did not pass", id, rel)
					bad = true
				}
				if krec.Get("instance").String() != rec.Get("instance").String() || krec.Get("started").String() != rec.Get("started").String() {
					d.fail("%s: %s is calibration %s of %s, the manifest's is %s of %s", id, rel, krec.Get("instance").String(), krec.Get("started").String(), rec.Get("instance").String(), rec.Get("started").String())
					bad = true
				}
				_, kp := recordPasses(krec)
				for _, p := range kp {
					d.fail("%s: %s: %s", id, rel, p)
					bad = true
				}
			}
		}
		if !bad {
			d.note("%s: calibrated (%s, %d timing figures re-checked)", id, rec.Get("instance").String(), len(rec.Get("timing").Array()))
		}
	}
	return d.result()
}

func relOrBase(root, p string) string {
	if r, err := filepath.Rel(root, p); err == nil && !strings.HasPrefix(r, "..") {
		return r
	}
	return filepath.Base(p)
}
