package main

import (
	"context"
	"fmt"

	"github.com/migaudit/migaudit/audit"
	"github.com/migaudit/migaudit/data"
	liverun "github.com/migaudit/migaudit/harnesses/run"
)

// A live repetition of code other than the pin (ngtcp2 --commit, --system)
// is analysed with the constants the source audit reads at that commit.
func init() { liverun.ConstantsAt = constantsAt }

func constantsAt(impl, commit string) (*data.Constants, error) {
	im, err := data.Lookup(impl)
	if err != nil {
		return nil, err
	}
	rep, err := audit.Audit(context.Background(), im, "", commit)
	if rep == nil || len(rep.Findings) == 0 {
		return nil, fmt.Errorf("audit %s at %s: %w", impl, commit, err)
	}
	c, cerr := audit.ConstantsFrom(rep)
	if cerr != nil {
		return nil, cerr
	}
	return &c, nil
}
