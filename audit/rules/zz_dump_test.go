package rules

import (
	"context"
	"os"
	"testing"

	"github.com/migaudit/migaudit/audit"
	"github.com/migaudit/migaudit/audit/gitsrc"
	"github.com/migaudit/migaudit/data"
)

func TestZZDump(t *testing.T) {
	dir := os.Getenv("DUMP")
	if dir == "" {
		t.Skip()
	}
	for _, c := range fixtureCases(t) {
		if c.dir != dir && c.impl != dir {
			continue
		}
		im, _ := data.Lookup(c.impl)
		files, _ := readTree(c.dir)
		snap, _ := gitsrc.MemCommit(files)
		fs, _ := audit.Run(context.Background(), im, snap)
		for _, f := range fs {
			t.Logf("%s %s | %s | %s", c.name, fixtureLine(f), f.Mechanism, f.Detail)
		}
	}
}
