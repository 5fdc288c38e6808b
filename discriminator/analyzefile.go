package discriminator

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/migaudit/migaudit/parsers"
)

// AnalyzeFile parses the trace at path (any format parsers knows; gzip is
// transparent) and analyzes it in one pass, in memory bounded by time, not
// by the trace's length (streamer). A trace the one pass cannot vouch for
// (out of time order, a migration that changes late, ...) is parsed again
// and analyzed in memory; the result is the same either way.
func AnalyzeFile(path string, popt parsers.Options, opt Options) (Analysis, error) {
	if opt.Wire == nil {
		if c, k := WireBeside(path); c != "" {
			w, err := LoadWireEvidence(c, k)
			if err != nil {
				return Analysis{}, fmt.Errorf("analyze %s: wire evidence: %w", path, err)
			}
			opt.Wire = w
		}
	}
	if opt.Wire != nil {
		// The pairing reads every ACK and send of the scope: in memory.
		return analyzeInMemory(path, popt, opt)
	}
	a, err := analyzeStream(path, popt, opt)
	var ns errNotStreamable
	if !errors.As(err, &ns) {
		return a, err
	}
	return analyzeInMemory(path, popt, opt)
}

func analyzeStream(path string, popt parsers.Options, opt Options) (Analysis, error) {
	f, err := os.Open(path)
	if err != nil {
		return Analysis{}, fmt.Errorf("parse %s: %w", filepath.Base(path), err)
	}
	defer f.Close()
	st := newStreamer(path, opt)
	if err := parsers.Parse(filepath.Base(path), f, popt, st); err != nil {
		return Analysis{}, err
	}
	a, err := st.finish()
	var ns errNotStreamable
	if err != nil && !errors.As(err, &ns) {
		return Analysis{}, namePath(path, err)
	}
	return a, err
}

// analyzeInMemory parses the whole timeline, then analyzes it.
func analyzeInMemory(path string, popt parsers.Options, opt Options) (Analysis, error) {
	tl, err := parsers.ParseFile(path, popt)
	if err != nil {
		return Analysis{}, err
	}
	if tl.Source == "" {
		tl.Source = path
	}
	a, err := Analyze(tl, opt)
	if err != nil {
		return Analysis{}, namePath(path, err)
	}
	return a, nil
}

// namePath puts "analyze PATH: " before err, unless the analysis already
// named the trace by that path (its source), so that the line says it once.
func namePath(path string, err error) error {
	if strings.HasPrefix(err.Error(), "analyze "+path+": ") {
		return err
	}
	return fmt.Errorf("analyze %s: %w", path, err)
}
