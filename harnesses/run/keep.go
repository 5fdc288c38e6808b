package run

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/migaudit/migaudit/data/atomicfile"
	"github.com/migaudit/migaudit/harnesses/testbed/wirecap"
	"github.com/tidwall/gjson"
)

// Keeping a run turns its output directory into committed evidence
// (`migaudit run keep RUN DEST`, docs/run.md): every valid repetition and
// every spoiled attempt the run left, with summary.json, calibration.json
// and the run record, each capture trimmed to the evidence budget
// (wirecap.TrimToFit: the handshake and a window around the migration
// whole, docs/wire.md), the trim recorded in the manifest's capture entry,
// the analysis re-derived from the trimmed capture, every digest that
// names a changed file brought up to date, and one "kept" line per changed
// attempt appended to the run record (never rewritten) carrying the
// manifest digest from what the run recorded to what is committed.

// CaptureTrim is the manifest's record (capture.trimmed) of a capture
// trimmed for committed evidence: the budget, the window and handshake
// kept, and the original file's size and digest. The capture entry's
// file, sha256, bytes and pcapng_bytes then describe the trimmed file;
// its packets and overruns stay those of the capture the run wrote.
type CaptureTrim struct {
	BudgetBytes int `json:"budget_bytes"`
	// FromUnixNS, ToUnixNS: the window kept (EPB timestamps).
	FromUnixNS int64 `json:"from_unix_ns"`
	ToUnixNS   int64 `json:"to_unix_ns"`
	// FirstPerDirection: the first EPBs of each interface and direction
	// kept wherever they fall (the handshake).
	FirstPerDirection   int    `json:"first_per_direction"`
	EPBsKept            int    `json:"epbs_kept"`
	EPBsRead            int    `json:"epbs_read"`
	OriginalBytes       int64  `json:"original_bytes"`
	OriginalPcapngBytes int64  `json:"original_pcapng_bytes"`
	OriginalSHA256      string `json:"original_sha256"`
}

// RunKept is a run record's "kept" line: the attempt's files changed when
// the run was kept as evidence, from the digests the record held to these.
type RunKept struct {
	Kept              string `json:"kept"` // the attempt's directory
	At                string `json:"at"`
	ManifestSHA256Was string `json:"manifest_sha256_was"`
	ManifestSHA256    string `json:"manifest_sha256"`
	CaptureSHA256Was  string `json:"capture_sha256_was,omitempty"`
	CaptureSHA256     string `json:"capture_sha256,omitempty"`
	Note              string `json:"note"`
}

// KeepOptions: Replace allows an existing DEST to be replaced; Budget is
// the most capture bytes kept per attempt (0: wirecap.EvidenceBudget).
type KeepOptions struct {
	Replace bool
	Budget  int
}

// KeptAttempt says what keeping did to one attempt.
type KeptAttempt struct {
	Dir    string
	Status string
	// Note: what happened to the capture, in one phrase.
	Note string
	// Q3Was, Q3: the analysis's Q3 before and after the re-derivation
	// from the trimmed capture (valid attempts).
	Q3Was, Q3 string
}

// Keep copies the run directory src into dest as committed evidence (see
// above). dest is written through a temporary directory beside it and a
// rename; an existing dest is refused unless o.Replace.
func Keep(src, dest string, o KeepOptions) ([]KeptAttempt, error) {
	if o.Budget == 0 {
		o.Budget = wirecap.EvidenceBudget
	}
	recPath := filepath.Join(src, RunRecordFile)
	rb, err := os.ReadFile(recPath)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("keep: %s is not a run directory: no %s (the output of migaudit run --out DIR)", src, RunRecordFile)
		}
		return nil, fmt.Errorf("keep: %w", err)
	}
	_, attempts, err := ReadRunRecord(rb)
	if err != nil {
		return nil, fmt.Errorf("keep: %s: %w", recPath, err)
	}
	if _, err := os.Stat(dest); err == nil && !o.Replace {
		return nil, fmt.Errorf("keep: %s exists (--replace replaces it)", dest)
	}
	// Every attempt on disk must be the one the record digested: keeping
	// a changed directory would commit what the run did not make.
	var keep []RunAttempt
	for _, a := range attempts {
		mp := filepath.Join(src, filepath.FromSlash(a.Dir), "manifest.json")
		sum, err := sha256File(mp)
		switch {
		case errors.Is(err, fs.ErrNotExist) && a.Status == "valid":
			return nil, fmt.Errorf("keep: %s: the run record's valid attempt %s has no manifest.json", src, a.Dir)
		case errors.Is(err, fs.ErrNotExist):
			continue // spoiled or failed, not left on disk: stands by its digest
		case err != nil:
			return nil, fmt.Errorf("keep: %w", err)
		case sum != a.ManifestSHA256:
			return nil, fmt.Errorf("keep: %s has sha256 %s, the run record (%s) digested %s: the attempt changed after the run", mp, sum[:12], RunRecordFile, short(a.ManifestSHA256))
		}
		if a.Status == "valid" || a.Status == "spoiled" {
			keep = append(keep, a)
		}
	}
	parent := filepath.Dir(filepath.Clean(dest))
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return nil, fmt.Errorf("keep: %w", err)
	}
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(dest)+".keep*")
	if err != nil {
		return nil, fmt.Errorf("keep: %w", err)
	}
	done := false
	defer func() {
		if !done {
			os.RemoveAll(tmp)
		}
	}()
	for _, name := range []string{RunRecordFile, "summary.json", "calibration.json"} {
		b, err := os.ReadFile(filepath.Join(src, name))
		if errors.Is(err, fs.ErrNotExist) && name != RunRecordFile {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("keep: %w", err)
		}
		if err := os.WriteFile(filepath.Join(tmp, name), b, 0o644); err != nil {
			return nil, fmt.Errorf("keep: %w", err)
		}
	}
	var out []KeptAttempt
	for _, a := range keep {
		to := filepath.Join(tmp, filepath.FromSlash(a.Dir))
		if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
			return nil, fmt.Errorf("keep: %w", err)
		}
		if err := os.CopyFS(to, os.DirFS(filepath.Join(src, filepath.FromSlash(a.Dir)))); err != nil {
			return nil, fmt.Errorf("keep: copy %s: %w", a.Dir, err)
		}
		k, line, err := keepAttempt(to, a, o.Budget)
		if err != nil {
			return nil, fmt.Errorf("keep: %s: %w", filepath.Join(src, filepath.FromSlash(a.Dir)), err)
		}
		out = append(out, k)
		if line != nil {
			if err := appendRecordLine(filepath.Join(tmp, RunRecordFile), line); err != nil {
				return nil, fmt.Errorf("keep: %w", err)
			}
		}
	}
	if o.Replace {
		if _, err := os.Stat(dest); err == nil {
			old := tmp + ".old"
			if err := os.Rename(dest, old); err != nil {
				return nil, fmt.Errorf("keep: %w", err)
			}
			if err := os.Rename(tmp, dest); err != nil {
				os.Rename(old, dest)
				return nil, fmt.Errorf("keep: %w", err)
			}
			done = true
			return out, os.RemoveAll(old)
		}
	}
	if err := os.Rename(tmp, dest); err != nil {
		return nil, fmt.Errorf("keep: %w", err)
	}
	done = true
	return out, nil
}

// keepAttempt trims the capture in the copied attempt directory dir,
// records the trim in its manifest, re-derives a valid attempt's analysis
// and returns the record's kept line (nil when nothing changed).
func keepAttempt(dir string, a RunAttempt, budget int) (KeptAttempt, *RunKept, error) {
	k := KeptAttempt{Dir: a.Dir, Status: a.Status}
	mp := filepath.Join(dir, "manifest.json")
	raw, err := os.ReadFile(mp)
	if err != nil {
		return k, nil, err
	}
	if !gjson.ValidBytes(raw) {
		return k, nil, fmt.Errorf("manifest.json is not JSON")
	}
	k.Q3Was = q3Of(filepath.Join(dir, "analysis.json"))
	capRes := gjson.GetBytes(raw, "capture")
	line := &RunKept{Kept: a.Dir, ManifestSHA256Was: a.ManifestSHA256}
	var c Capture
	if capRes.Exists() {
		if err := json.Unmarshal([]byte(capRes.Raw), &c); err != nil {
			return k, nil, fmt.Errorf("manifest.json capture: %w", err)
		}
	}
	switch {
	case !capRes.Exists() || c.File == "":
		k.Note = "kept without wire evidence: the manifest records no capture"
		if c.Error != "" {
			k.Note += " (" + c.Error + ")"
		}
	default:
		cp := filepath.Join(dir, c.File)
		gz, err := os.ReadFile(cp)
		if errors.Is(err, fs.ErrNotExist) {
			k.Note = fmt.Sprintf("kept without wire evidence: the manifest names %s, which the run directory lacks", c.File)
			break
		}
		if err != nil {
			return k, nil, err
		}
		if sum := sha256Bytes(gz); c.SHA256 != "" && sum != c.SHA256 {
			return k, nil, fmt.Errorf("%s has sha256 %s, the manifest says %s", c.File, sum[:12], short(c.SHA256))
		}
		epbs, raw0, err := wirecap.Count(gz)
		if err != nil {
			return k, nil, fmt.Errorf("%s: truncated or corrupt capture (%v): keep the run without it by deleting the file, or re-run", c.File, err)
		}
		if len(gz) <= budget {
			k.Note = fmt.Sprintf("capture kept whole (%d B, %d EPBs, within the %d B budget)", len(gz), epbs, budget)
			break
		}
		trimmed, keep, err := wirecap.TrimToFit(gz, c.WholeWindows, budget)
		if err != nil {
			return k, nil, fmt.Errorf("%s: %w", c.File, err)
		}
		kept, pcapng, err := wirecap.Count(trimmed)
		if err != nil {
			return k, nil, fmt.Errorf("%s: the trimmed capture does not read back: %w", c.File, err)
		}
		if err := atomicfile.Write(cp, trimmed); err != nil {
			return k, nil, err
		}
		line.CaptureSHA256Was = sha256Bytes(gz)
		c.Trimmed = &CaptureTrim{BudgetBytes: budget, FromUnixNS: keep.From, ToUnixNS: keep.To, FirstPerDirection: keep.First,
			EPBsKept: kept, EPBsRead: epbs, OriginalBytes: int64(len(gz)), OriginalPcapngBytes: raw0, OriginalSHA256: line.CaptureSHA256Was}
		c.SHA256, c.Bytes, c.PcapngBytes = sha256Bytes(trimmed), int64(len(trimmed)), pcapng
		line.CaptureSHA256 = c.SHA256
		span := time.Duration(keep.To - keep.From)
		k.Note = fmt.Sprintf("capture trimmed %d → %d B (%d of %d EPBs: a %s window around the migration and the first %d of each direction)",
			len(gz), len(trimmed), kept, epbs, span.Round(time.Millisecond), keep.First)
		if raw, err = spliceJSON(raw, "capture", c); err != nil {
			return k, nil, err
		}
		if raw, err = spliceJSON(raw, "files", listFiles(dir)); err != nil {
			return k, nil, err
		}
		if err := atomicfile.Write(mp, raw); err != nil {
			return k, nil, err
		}
	}
	// The analysis follows the capture committed: a valid attempt's is
	// re-derived from it (and must still decide Q3 as it did).
	if a.Status == "valid" {
		if _, err := Reanalyse(dir); err != nil {
			return k, nil, err
		}
	}
	k.Q3 = q3Of(filepath.Join(dir, "analysis.json"))
	sum, err := sha256File(mp)
	if err != nil {
		return k, nil, err
	}
	if sum == a.ManifestSHA256 {
		return k, nil, nil
	}
	line.ManifestSHA256 = sum
	line.Note = k.Note
	if k.Q3Was != k.Q3 {
		line.Note += fmt.Sprintf("; Q3 re-derived from the kept capture: %s (the run's: %s)", k.Q3, k.Q3Was)
	}
	line.At = time.Now().UTC().Format(time.RFC3339Nano)
	return k, line, nil
}

// spliceJSON replaces the top-level field key of the indented object raw
// with v, leaving every other byte as it was (fields another build wrote
// included).
func spliceJSON(raw []byte, key string, v any) ([]byte, error) {
	f := gjson.GetBytes(raw, key)
	if !f.Exists() || f.Index <= 0 {
		return nil, fmt.Errorf("manifest.json has no %q to bring up to date", key)
	}
	b, err := json.MarshalIndent(v, "  ", "  ")
	if err != nil {
		return nil, err
	}
	return append(append(append([]byte{}, raw[:f.Index]...), b...), raw[f.Index+len(f.Raw):]...), nil
}

func q3Of(analysis string) string {
	b, err := os.ReadFile(analysis)
	if err != nil {
		return ""
	}
	return gjson.GetBytes(b, "q3.answer").String()
}

func appendRecordLine(p string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := f.Write(append(b, '\n')); err != nil {
		return err
	}
	return f.Sync()
}

// ReadRunRecord reads a run record: its header and attempts, each with
// the digests its last "kept" line gave it (a kept line must start from
// the digest the record held: the chain from the run to the committed
// files is unbroken).
func ReadRunRecord(b []byte) (RunRecordHeader, []RunAttempt, error) {
	var h RunRecordHeader
	var out []RunAttempt
	byDir := map[string]int{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20)
	n := 0
	for sc.Scan() {
		n++
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		if n == 1 {
			if err := json.Unmarshal(line, &h); err != nil || h.Record != runRecordV1 {
				return h, nil, fmt.Errorf("line 1 is not a run record header")
			}
			continue
		}
		if gjson.GetBytes(line, "kept").Exists() {
			var k RunKept
			if err := json.Unmarshal(line, &k); err != nil {
				return h, nil, fmt.Errorf("line %d: %w", n, err)
			}
			i, ok := byDir[k.Kept]
			switch {
			case !ok:
				return h, nil, fmt.Errorf("line %d: kept %s, which no earlier line records", n, k.Kept)
			case out[i].ManifestSHA256 != k.ManifestSHA256Was:
				return h, nil, fmt.Errorf("line %d: kept %s from manifest %s, the record had %s", n, k.Kept, short(k.ManifestSHA256Was), short(out[i].ManifestSHA256))
			}
			out[i].ManifestSHA256 = k.ManifestSHA256
			continue
		}
		var a RunAttempt
		if err := json.Unmarshal(line, &a); err != nil {
			return h, nil, fmt.Errorf("line %d: %w", n, err)
		}
		if a.Dir == "" || a.Rep < 1 {
			return h, nil, fmt.Errorf("line %d: no directory or repetition number", n)
		}
		byDir[a.Dir] = len(out)
		out = append(out, a)
	}
	if n == 0 {
		return h, nil, errors.New("empty")
	}
	return h, out, sc.Err()
}

func short(s string) string {
	if len(s) > 12 {
		return s[:12] + "…"
	}
	if s == "" {
		return "(none)"
	}
	return s
}
