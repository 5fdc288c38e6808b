package render

import (
	"fmt"
	"io"

	"github.com/migaudit/migaudit/discriminator"
	"github.com/migaudit/migaudit/parsers"
)

// RunOptions are `migaudit analyze`'s inputs.
type RunOptions struct {
	Traces   []string
	Format   string // output: table, json, csv, markdown
	Parse    parsers.Options
	Analysis discriminator.Options
}

// Run analyzes every trace and writes the analyses to w. The first trace
// that cannot be read or analyzed stops it with an error naming the file.
func Run(w io.Writer, o RunOptions) error {
	if len(o.Traces) == 0 {
		return fmt.Errorf("no trace given")
	}
	if err := checkFormat(o.Format); err != nil {
		return err
	}
	var as []discriminator.Analysis
	for _, p := range o.Traces {
		a, err := discriminator.AnalyzeFile(p, o.Parse, o.Analysis)
		if err != nil {
			return err
		}
		as = append(as, a)
	}
	return Write(w, o.Format, as)
}

func checkFormat(f string) error {
	for _, k := range append(Formats(), "", "md") {
		if f == k {
			return nil
		}
	}
	return Write(io.Discard, f, nil)
}
