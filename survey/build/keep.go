package build

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/migaudit/migaudit/audit/gitsrc"
	"github.com/migaudit/migaudit/data"
	"github.com/migaudit/migaudit/survey"
)

// A survey never writes less than it read: a rebuild without a source it
// had before (no mirror, a failed audit, no study) would silently drop
// answers from the committed file. Both guards fail before the file is
// touched; --allow-partial (Options.AllowPartial) lets a partial survey be
// written on purpose.

// sourcesPresent fails, in one line naming every missing mirror, when an
// implementation to be surveyed has no source.
func sourcesPresent(o Options, impls []data.Implementation) error {
	if o.AllowPartial || o.Out == "" {
		return nil
	}
	dir := o.Mirrors
	if dir == "" {
		dir = os.Getenv(gitsrc.MirrorsEnv)
	}
	var missing []string
	if dir == "" {
		return fmt.Errorf("survey: no mirrors directory (pass --mirrors or set %s), %s left unchanged: every implementation's source is needed (--allow-partial writes a survey without the source audits)", gitsrc.MirrorsEnv, o.Out)
	}
	for _, pin := range impls {
		if len(o.Only) > 0 && !contains(o.Only, pin.Name) {
			continue
		}
		if mirrorFor(o.Mirrors, pin.Upstream) == "" {
			missing = append(missing, fmt.Sprintf("%s (%s)", pin.Name, strings.Join(gitsrc.Candidates(dir, pin.Upstream), " or ")))
		}
	}
	if len(missing) == 0 {
		return nil
	}
	return fmt.Errorf("survey: no mirror for %d of the implementations, %s left unchanged (pass --mirrors or set %s, or --allow-partial to write a survey without their source audits): missing %s",
		len(missing), o.Out, gitsrc.MirrorsEnv, strings.Join(missing, "; "))
}

// notLessThan compares the rebuild with the file it would replace and
// fails naming everything the rebuild lost.
func notLessThan(o Options, s *survey.Survey) error {
	if o.AllowPartial {
		return nil
	}
	old, err := survey.Read(o.Out)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		// An unreadable file is not replaced blindly either.
		return fmt.Errorf("survey: %s left unchanged: the file it would replace does not read (%v); pass --allow-partial to replace it", o.Out, err)
	}
	if lost := lostFrom(old, s); len(lost) > 0 {
		return fmt.Errorf("survey: %s left unchanged: the rebuild has less than it (%s); pass --allow-partial to write it anyway", o.Out, strings.Join(lost, "; "))
	}
	return nil
}

// lostFrom lists what old has that s does not: an implementation, its
// source audit, its live repetitions, its reference repetition. A survey
// of some implementations (--impl) over the full file loses the others.
func lostFrom(old, s *survey.Survey) []string {
	var lost []string
	for i := range old.Implementations {
		was := &old.Implementations[i]
		now := s.Find(was.Name)
		if now == nil {
			lost = append(lost, was.Name+" absent")
			continue
		}
		if was.SourceAudited && !now.SourceAudited {
			lost = append(lost, was.Name+" source audit")
		}
		if n, m := repCount(was.Live), repCount(now.Live); m < n {
			lost = append(lost, fmt.Sprintf("%s live repetitions %d → %d", was.Name, n, m))
		}
		if was.Live != nil && was.Live.Reference != nil && (now.Live == nil || now.Live.Reference == nil) {
			lost = append(lost, was.Name+" the study's reference repetition")
		}
	}
	return lost
}

func repCount(l *survey.Live) int {
	if l == nil {
		return 0
	}
	return len(l.Repetitions)
}

// runRecordFile is harnesses/run.RunRecordFile (not imported: the survey
// does not link the testbed).
const runRecordFile = "run-record.jsonl"

// runRecordOf names the run record beside the repetitions (the run's
// directory, which holds rep<N>/), with its digest; nil when the run kept
// none or the repetitions come from more than one run.
func runRecordOf(root string, reps []runRep) (*survey.RunRecordRef, error) {
	if len(reps) == 0 {
		return nil, nil
	}
	dir := filepath.Dir(reps[0].Dir)
	for _, r := range reps[1:] {
		if filepath.Dir(r.Dir) != dir {
			return nil, nil
		}
	}
	rel := filepath.Join(dir, runRecordFile)
	b, err := os.ReadFile(filepath.Join(root, rel))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("run record: %w", err)
	}
	var head struct{ Record, Reconstructed string }
	line, _, _ := strings.Cut(string(b), "\n")
	if err := json.Unmarshal([]byte(line), &head); err != nil || head.Record == "" {
		return nil, fmt.Errorf("run record %s: line 1 is not a run record header", rel)
	}
	sum := sha256.Sum256(b)
	return &survey.RunRecordRef{Path: filepath.ToSlash(rel), SHA256: hex.EncodeToString(sum[:]), Reconstructed: head.Reconstructed != ""}, nil
}
