package run

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/migaudit/migaudit/data/atomicfile"
	"github.com/migaudit/migaudit/discriminator"
	"github.com/tidwall/gjson"
)

// pathRTTs is what the discriminator needs of a Net: the configured RTTs.
type pathRTTs interface {
	PathRTT(p Path) time.Duration
}

// recordedPaths gives the RTTs a repetition's manifest recorded.
type recordedPaths map[Path]PathInfo

func (r recordedPaths) PathRTT(p Path) time.Duration {
	return time.Duration(r[p].RTTUS) * time.Microsecond
}

// Reanalyse re-derives a recorded repetition's analysis.json (and
// analysis-return.json for a migrate-back) from its kept server trace with
// this build's discriminator and the parameters and path RTTs its manifest
// recorded, and brings the manifest's file digests up to date. Nothing
// else in the manifest changes, byte for byte. It reports whether any file
// changed.
func Reanalyse(dir string) (bool, error) {
	mp := filepath.Join(dir, "manifest.json")
	raw, err := os.ReadFile(mp)
	if err != nil {
		return false, fmt.Errorf("reanalyse %s: %w", dir, err)
	}
	var man Manifest
	if err := json.Unmarshal(raw, &man); err != nil {
		return false, fmt.Errorf("reanalyse %s: %w", mp, err)
	}
	files := gjson.GetBytes(raw, "files")
	if !files.IsArray() || files.Index <= 0 {
		return false, fmt.Errorf("reanalyse %s: no \"files\" list to bring up to date", mp)
	}
	if st, _ := Judge(&man); man.Status != "" && st != man.Status {
		return false, fmt.Errorf("reanalyse %s: recorded status %s does not follow from the record (its verification, fidelity and error give %s)", mp, man.Status, st)
	}
	if man.Result.ServerTrace == "" {
		return false, fmt.Errorf("reanalyse %s: manifest names no server trace", mp)
	}
	trace := filepath.Join(dir, man.Result.ServerTrace)
	if _, err := os.Stat(trace); err != nil {
		return false, fmt.Errorf("reanalyse %s: server trace: %w", dir, err)
	}
	a, ret, err := analyse(trace, man.Implementation, man.Scenario, man.Result, recordedPaths(man.Paths))
	if err != nil {
		return false, fmt.Errorf("reanalyse %s: %w", trace, err)
	}
	// The recorded analysis names the trace where the run wrote it; keep
	// that name, it is part of the record.
	changed := false
	for _, f := range []struct {
		name string
		an   *discriminator.Analysis
	}{{"analysis.json", &a}, {"analysis-return.json", ret}} {
		if f.an == nil {
			continue
		}
		p := filepath.Join(dir, f.name)
		old, err := os.ReadFile(p)
		if err == nil {
			var prev discriminator.Analysis
			if json.Unmarshal(old, &prev) == nil && prev.Trace != "" {
				f.an.Trace = prev.Trace
			}
		}
		// As atomicfile.WriteJSON writes it, encoded once.
		b, err := json.MarshalIndent(f.an, "", "  ")
		if err != nil {
			return false, fmt.Errorf("reanalyse %s: %w", p, err)
		}
		if b = append(b, '\n'); bytes.Equal(b, old) {
			continue
		}
		if err := atomicfile.Write(p, b); err != nil {
			return false, fmt.Errorf("reanalyse %s: %w", p, err)
		}
		changed = true
	}
	if !changed {
		return false, nil
	}
	// Only the file list changes: it is spliced into the manifest as
	// recorded, so every other byte (including fields an older or newer
	// build wrote) stays as it was.
	list, err := json.MarshalIndent(listFiles(dir), "  ", "  ")
	if err != nil {
		return true, fmt.Errorf("reanalyse %s: %w", mp, err)
	}
	out := append(append(append([]byte{}, raw[:files.Index]...), list...), raw[files.Index+len(files.Raw):]...)
	if err := atomicfile.Write(mp, out); err != nil {
		return true, fmt.Errorf("reanalyse %s: %w", mp, err)
	}
	return true, nil
}
