package validator

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/tidwall/gjson"
)

// <impl>/run-record: the committed repetitions are the run, whole. The
// run appends every attempt to its record (run-record.jsonl: directory,
// status, sha256 of manifest and trace) as it ends; the survey names the
// record and its sha256. Every committed repetition must be a valid
// attempt of the record, under its own number, with the manifest and
// trace the record digested; every valid attempt must be committed;
// spoiled and failed attempts may be kept or not, but a kept one must be
// the file the record digested. So dropping a repetition, renumbering
// the rest or adding one fails — unless the record is rewritten too, and
// a record not written by the run must say so (reconstructed).
func init() {
	perImplChecks = append(perImplChecks, check{name: "run-record", fn: checkRunRecord, claim: "own-runs"})
}

type recordedAttempt struct {
	line               int
	rep, attempt       int
	dir, status        string
	manifestSHA, trace string
	traceSHA           string
	// keptLine is the record's last "kept" line for the attempt (0: none).
	keptLine int
}

func checkRunRecord(v *Validator, doc, im gjson.Result) (Status, string) {
	var d verdict
	reps := im.Get("live.repetitions").Array()
	ref := im.Get("live.run_record")
	if !ref.Exists() {
		d.fail("no run record: nothing ties the %d committed repetitions to the run that made them (the number wanted, the numbering, the spoiled attempts)", len(reps))
		return d.result()
	}
	rel := ref.Get("path").String()
	p, err := v.resolve("own-runs", rel)
	if err != nil {
		d.fail("run record: %v", err)
		return d.result()
	}
	b, err := os.ReadFile(p)
	if err != nil {
		d.unverifiable("run record: %v", err)
		return d.result()
	}
	if sum := shaHexOf(b); sum != ref.Get("sha256").String() {
		d.fail("run record %s has sha256 %s…, the survey says %s…", rel, short12(sum), short12(ref.Get("sha256").String()))
	}
	header, attempts, err := parseRunRecord(b)
	if err != nil {
		d.fail("run record %s: %v", rel, err)
		return d.result()
	}
	reconstructed := header.Get("reconstructed").String() != ""
	if reconstructed != ref.Get("reconstructed").Bool() {
		d.fail("run record %s reconstructed=%v, the survey says %v", rel, reconstructed, ref.Get("reconstructed").Bool())
	}
	if h := header.Get("implementation").String(); h != im.Get("name").String() {
		d.fail("run record %s is %s's run", rel, h)
	}
	runDir := filepath.Dir(p)
	byDir := map[string]*recordedAttempt{}
	validByRep := map[int]string{}
	for i := range attempts {
		a := &attempts[i]
		if byDir[a.dir] != nil {
			d.fail("run record line %d: %s recorded twice", a.line, a.dir)
		}
		byDir[a.dir] = a
		if a.status == "valid" {
			if other, dup := validByRep[a.rep]; dup {
				d.fail("run record line %d: two valid attempts of rep %d (%s, %s)", a.line, a.rep, other, a.dir)
			}
			validByRep[a.rep] = a.dir
		}
	}
	committed := map[string]bool{}
	for _, rep := range reps {
		rid := rep.Get("id").String()
		mp, err := v.resolve("own-runs", rep.Get("manifest").String())
		if err != nil {
			d.fail("%s: manifest: %v", rid, err)
			continue
		}
		dir, err := filepath.Rel(runDir, filepath.Dir(mp))
		if err != nil || strings.HasPrefix(dir, "..") {
			d.fail("%s: %s is not in the run's directory %s", rid, filepath.Dir(rep.Get("manifest").String()), filepath.Dir(rel))
			continue
		}
		dir = filepath.ToSlash(dir)
		committed[dir] = true
		a := byDir[dir]
		switch {
		case a == nil:
			d.fail("%s: %s is no attempt of the run record: a repetition the run did not make", rid, dir)
			continue
		case a.status != "valid":
			d.fail("%s: the run record has %s as %s, not valid", rid, dir, a.status)
		}
		if want := fmt.Sprintf("rep%d", a.rep); rid != want || filepath.Base(dir) != want {
			d.fail("%s: in %s, which the run record has as its rep %d (attempt %d): renumbered", rid, dir, a.rep, a.attempt)
		}
		// The manifest the run wrote into the attempt's directory names
		// the repetition and attempt it was.
		if mb, err := os.ReadFile(mp); err == nil {
			man := gjson.ParseBytes(mb)
			if r, at := int(man.Get("rep").Int()), int(man.Get("attempt").Int()); man.Get("rep").Exists() && man.Get("attempt").Exists() && (r != a.rep || at != a.attempt) {
				d.fail("%s: its manifest is rep %d attempt %d, the run record has %s as rep %d attempt %d", rid, r, at, dir, a.rep, a.attempt)
			}
		}
		if sha, err := v.fileSHA(mp); err != nil {
			d.unverifiable("%s: %v", rid, err)
		} else if sha != a.manifestSHA {
			d.fail("%s: manifest sha256 %s…, the run record (line %d) digested %s…", rid, short12(sha), max(a.line, a.keptLine), short12(a.manifestSHA))
		}
		tp, err := v.resolve("own-runs", rep.Get("trace").String())
		if err == nil {
			if t, _ := filepath.Rel(filepath.Dir(mp), tp); filepath.ToSlash(t) != a.trace {
				d.fail("%s: trace %s, the run record has %s", rid, filepath.ToSlash(t), orNoAnswer(a.trace))
			}
			if sha, err := v.fileSHA(tp); err == nil && sha != a.traceSHA {
				d.fail("%s: trace sha256 %s…, the run record (line %d) digested %s…", rid, short12(sha), a.line, short12(a.traceSHA))
			}
		}
	}
	kept, byDigest := 0, 0
	for i := range attempts {
		a := &attempts[i]
		if a.status == "valid" {
			if !committed[a.dir] {
				d.fail("the run's valid attempt %s (rep %d, attempt %d, run record line %d) is not among the committed repetitions: dropped", a.dir, a.rep, a.attempt, a.line)
			}
			continue
		}
		// A spoiled or failed attempt kept on disk must be the one the
		// run digested; one not kept stands by its digest alone.
		mp := filepath.Join(runDir, filepath.FromSlash(a.dir), "manifest.json")
		if _, err := os.Stat(mp); err != nil {
			byDigest++
			continue
		}
		kept++
		if sha, err := v.fileSHA(mp); err == nil && sha != a.manifestSHA {
			d.fail("%s attempt %s: manifest sha256 %s…, the run record digested %s…", a.status, a.dir, short12(sha), short12(a.manifestSHA))
		}
	}
	// Every attempt directory the run left is in the record.
	for _, pat := range []string{"rep*", filepath.Join("spoiled", "*")} {
		ms, _ := filepath.Glob(filepath.Join(runDir, pat))
		for _, m := range ms {
			if st, err := os.Stat(m); err != nil || !st.IsDir() {
				continue
			}
			r, _ := filepath.Rel(runDir, m)
			if byDir[filepath.ToSlash(r)] == nil {
				d.fail("attempt directory %s is not in the run record", filepath.ToSlash(r))
			}
		}
	}
	// The run's summary.json, when kept, lists the same attempts.
	if sb, err := os.ReadFile(filepath.Join(runDir, "summary.json")); err == nil && gjson.ValidBytes(sb) {
		sum := gjson.ParseBytes(sb)
		out := sum.Get("out").String()
		listed := 0
		for _, key := range []string{"reps", "spoiled"} {
			sum.Get(key).ForEach(func(_, r gjson.Result) bool {
				listed++
				dir, err := filepath.Rel(out, r.Get("dir").String())
				if err != nil {
					return true
				}
				a := byDir[filepath.ToSlash(dir)]
				switch {
				case a == nil:
					d.fail("summary.json's %s (rep %d attempt %d, %s) is not in the run record", filepath.ToSlash(dir), r.Get("rep").Int(), r.Get("attempt").Int(), r.Get("status").String())
				case int64(a.rep) != r.Get("rep").Int() || int64(a.attempt) != r.Get("attempt").Int() || a.status != recordStatusOf(r.Get("status").String()):
					d.fail("summary.json has %s as rep %d attempt %d %s, the run record as rep %d attempt %d %s", a.dir, r.Get("rep").Int(), r.Get("attempt").Int(), r.Get("status").String(), a.rep, a.attempt, a.status)
				}
				return true
			})
		}
		if listed != len(attempts) {
			d.fail("summary.json lists %d attempts, the run record %d", listed, len(attempts))
		}
	}
	wanted := int(header.Get("wanted").Int())
	how := "written by the run"
	if reconstructed {
		how = "reconstructed after the run: " + header.Get("reconstructed").String()
	}
	keptLines := 0
	for _, a := range attempts {
		if a.keptLine > 0 {
			keptLines++
		}
	}
	if keptLines > 0 {
		how += fmt.Sprintf("; %d attempts' manifests changed when kept as evidence (kept lines)", keptLines)
	}
	d.note("%d repetitions = the %d valid attempts of %d wanted; %d other attempts (%d kept, %d by digest only); record %s", len(reps), len(validByRep), wanted, len(attempts)-len(validByRep), kept, byDigest, how)
	return d.result()
}

// parseRunRecord reads the header line and the attempts.
func parseRunRecord(b []byte) (gjson.Result, []recordedAttempt, error) {
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20)
	var header gjson.Result
	var out []recordedAttempt
	n := 0
	for sc.Scan() {
		n++
		line := sc.Bytes()
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		if !gjson.ValidBytes(line) {
			return header, nil, fmt.Errorf("line %d is not JSON", n)
		}
		r := gjson.ParseBytes(line)
		if n == 1 {
			if r.Get("record").String() != "migaudit run record v1" {
				return header, nil, fmt.Errorf("line 1 is not a run record header")
			}
			header = gjson.Parse(string(line))
			continue
		}
		// A "kept" line (migaudit run keep): the attempt's manifest changed
		// when the run was kept as evidence (its capture trimmed), from the
		// digest the record held to a new one. The chain must be unbroken:
		// a kept line starts from the digest the record holds then.
		if k := r.Get("kept"); k.Exists() {
			i := -1
			for j := range out {
				if out[j].dir == k.String() {
					i = j
				}
			}
			switch {
			case i < 0:
				return header, nil, fmt.Errorf("line %d: kept %s, which no earlier line records", n, k.String())
			case r.Get("manifest_sha256_was").String() != out[i].manifestSHA:
				return header, nil, fmt.Errorf("line %d: kept %s from manifest %s…, the record had %s…", n, k.String(), short12(r.Get("manifest_sha256_was").String()), short12(out[i].manifestSHA))
			case r.Get("manifest_sha256").String() == "":
				return header, nil, fmt.Errorf("line %d: kept %s without the new manifest digest", n, k.String())
			}
			out[i].manifestSHA = r.Get("manifest_sha256").String()
			out[i].keptLine = n
			continue
		}
		a := recordedAttempt{line: n, rep: int(r.Get("rep").Int()), attempt: int(r.Get("attempt").Int()), dir: r.Get("dir").String(),
			status: r.Get("status").String(), manifestSHA: r.Get("manifest_sha256").String(), trace: r.Get("trace").String(), traceSHA: r.Get("trace_sha256").String()}
		switch a.status {
		case "valid", "spoiled", "failed":
		default:
			return header, nil, fmt.Errorf("line %d: status %q", n, a.status)
		}
		if a.dir == "" || a.rep < 1 {
			return header, nil, fmt.Errorf("line %d: no directory or repetition number", n)
		}
		out = append(out, a)
	}
	if n == 0 {
		return header, nil, fmt.Errorf("empty")
	}
	return header, out, sc.Err()
}

func shaHexOf(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func recordStatusOf(s string) string {
	switch s {
	case "VALID":
		return "valid"
	case "SPOILED":
		return "spoiled"
	}
	return "failed"
}
