package discriminator

import (
	"fmt"

	"github.com/migaudit/migaudit/parsers"
)

// AnalyzeFile parses the trace at path (any format parsers knows; gzip is
// transparent) and analyzes it.
func AnalyzeFile(path string, popt parsers.Options, opt Options) (Analysis, error) {
	tl, err := parsers.ParseFile(path, popt)
	if err != nil {
		return Analysis{}, err
	}
	if tl.Source == "" {
		tl.Source = path
	}
	a, err := Analyze(tl, opt)
	if err != nil {
		return Analysis{}, fmt.Errorf("analyze %s: %w", path, err)
	}
	return a, nil
}
