package run

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// RunRecordFile is the run record's name in a run's output directory.
const RunRecordFile = "run-record.jsonl"

// The run record keeps a run whole: one JSON line per attempt, appended
// as the attempt ends (valid, spoiled or failed), with the digests of its
// manifest and trace, after a header line naming the run. Nothing is ever
// rewritten in it, so the set of repetitions a survey commits can be
// checked against everything the run made: none dropped, renumbered or
// added (the validator's <impl>/run-record check).

// RunRecordHeader is the record's first line.
type RunRecordHeader struct {
	Record         string `json:"record"` // "migaudit run record v1"
	Implementation string `json:"implementation"`
	Scenario       string `json:"scenario"`
	Wanted         int    `json:"wanted"`
	Start          string `json:"start"`
	// Reconstructed, when set, says the record was not written by the run
	// but rebuilt afterwards from what it left, and from what.
	Reconstructed string `json:"reconstructed,omitempty"`
}

// RunAttempt is one attempt's line.
type RunAttempt struct {
	Rep     int    `json:"rep"`
	Attempt int    `json:"attempt"`
	Dir     string `json:"dir"`    // relative to the run directory
	Status  string `json:"status"` // valid, spoiled, failed
	// RunStatus is the runner's own status (VALID, SPOILED, INVALID, FAILED).
	RunStatus      string `json:"run_status"`
	ManifestSHA256 string `json:"manifest_sha256"`
	Trace          string `json:"trace,omitempty"` // relative to Dir
	TraceSHA256    string `json:"trace_sha256,omitempty"`
	At             string `json:"at,omitempty"`
}

const runRecordV1 = "migaudit run record v1"

func recordStatus(s Status) string {
	switch s {
	case Valid:
		return "valid"
	case Spoiled:
		return "spoiled"
	}
	return "failed"
}

// recordAttempt appends rs to out's run record (creating it with its
// header); a failure to record is reported, never silent.
func recordAttempt(out string, sum *Summary, rs RepSummary, stderr io.Writer) {
	trace := ""
	if rs.Analysis != nil {
		trace = rs.Analysis.Trace
	}
	a, err := attemptOf(out, rs.Rep, rs.Attempt, rs.Dir, rs.Status, trace)
	if err == nil {
		a.At = time.Now().UTC().Format(time.RFC3339Nano)
		err = AppendRunAttempt(out, RunRecordHeader{Record: runRecordV1, Implementation: sum.Implementation,
			Scenario: string(sum.Scenario), Wanted: sum.Wanted, Start: sum.Start.Format(time.RFC3339Nano)}, a)
	}
	if err != nil {
		fmt.Fprintf(stderr, "migaudit: run record: %v\n", err)
	}
}

// attemptOf digests an attempt's manifest and trace. trace may be
// absolute or relative to dir, or "" when the attempt left none.
func attemptOf(out string, rep, attempt int, dir string, status Status, trace string) (RunAttempt, error) {
	rel, err := filepath.Rel(out, dir)
	if err != nil {
		return RunAttempt{}, err
	}
	a := RunAttempt{Rep: rep, Attempt: attempt, Dir: filepath.ToSlash(rel), Status: recordStatus(status), RunStatus: string(status)}
	if a.ManifestSHA256, err = sha256File(filepath.Join(dir, "manifest.json")); err != nil && !os.IsNotExist(err) {
		return a, err
	}
	if trace != "" {
		if filepath.IsAbs(trace) {
			if trace, err = filepath.Rel(dir, trace); err != nil {
				return a, err
			}
		}
		if s, err := sha256File(filepath.Join(dir, trace)); err == nil {
			a.Trace, a.TraceSHA256 = filepath.ToSlash(trace), s
		}
	}
	return a, nil
}

// AppendRunAttempt appends one attempt to out's run record, writing the
// header first when the record is new. Each line is one write, synced.
func AppendRunAttempt(out string, h RunRecordHeader, a RunAttempt) error {
	p := filepath.Join(out, RunRecordFile)
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	if st.Size() == 0 {
		if err := enc.Encode(h); err != nil {
			return err
		}
	}
	if err := enc.Encode(a); err != nil {
		return err
	}
	if _, err := f.Write(buf.Bytes()); err != nil {
		return fmt.Errorf("append %s: %w", p, err)
	}
	return f.Sync()
}

// ReconstructRunRecord rebuilds the run record of a run made before runs
// wrote one, from its summary.json (every counted and spoiled attempt,
// with its directory and status) and the manifests and traces it kept
// under dir. The header says it is reconstructed.
func ReconstructRunRecord(dir string) ([]byte, error) {
	b, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil {
		return nil, fmt.Errorf("reconstruct run record: %w", err)
	}
	var sum struct {
		Implementation string `json:"implementation"`
		Scenario       string `json:"scenario"`
		Out            string `json:"out"`
		Wanted         int    `json:"wanted"`
		Start          string `json:"start"`
		Reps, Spoiled  []struct {
			Rep, Attempt int
			Dir, Status  string
			Analysis     *struct{ Trace string } `json:"analysis"`
		}
	}
	if err := json.Unmarshal(b, &sum); err != nil {
		return nil, fmt.Errorf("reconstruct run record: %s: %w", filepath.Join(dir, "summary.json"), err)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.Encode(RunRecordHeader{Record: runRecordV1, Implementation: sum.Implementation, Scenario: sum.Scenario, Wanted: sum.Wanted, Start: sum.Start,
		Reconstructed: "from summary.json and the manifests and traces kept beside it, after the run (the run predates run records); the digests are of the committed files"})
	all := append(sum.Reps, sum.Spoiled...)
	sort.SliceStable(all, func(i, j int) bool {
		if all[i].Rep != all[j].Rep {
			return all[i].Rep < all[j].Rep
		}
		return all[i].Attempt < all[j].Attempt
	})
	for _, r := range all {
		rel, err := filepath.Rel(sum.Out, r.Dir)
		if err != nil || strings.HasPrefix(rel, "..") {
			return nil, fmt.Errorf("reconstruct run record: rep %d attempt %d: %s is not under the run's directory %s", r.Rep, r.Attempt, r.Dir, sum.Out)
		}
		trace := ""
		if r.Analysis != nil && r.Analysis.Trace != "" {
			if t, err := filepath.Rel(r.Dir, r.Analysis.Trace); err == nil && !strings.HasPrefix(t, "..") {
				trace = t
			}
		}
		a, err := attemptOf(dir, r.Rep, r.Attempt, filepath.Join(dir, rel), Status(r.Status), trace)
		if err != nil {
			return nil, fmt.Errorf("reconstruct run record: %w", err)
		}
		if err := enc.Encode(a); err != nil {
			return nil, err
		}
	}
	return buf.Bytes(), nil
}

func sha256File(p string) (string, error) {
	b, err := os.ReadFile(p)
	if err != nil {
		return "", err
	}
	return sha256Bytes(b), nil
}

func sha256Bytes(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}
