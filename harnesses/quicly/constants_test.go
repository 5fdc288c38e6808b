package quicly

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/migaudit/migaudit/data"
)

func TestFormulasIgnoreWhereRead(t *testing.T) {
	c, _, err := data.ConstantsFor("quicly")
	if err != nil {
		t.Fatal(err)
	}
	moved, _, _ := data.ConstantsFor("quicly")
	moved.InitialWindows[0].Source.Line += 7
	moved.InitialWindows[0].Provenance = "audit 0000"
	changed, _, _ := data.ConstantsFor("quicly")
	changed.InitialWindows[0].Params["initcwnd_packets"] = 32
	for _, tc := range []struct {
		name string
		c    data.Constants
		same bool
	}{{"moved line, other provenance", moved, true}, {"other initcwnd default", changed, false}} {
		if got := formulas(c) == formulas(tc.c); got != tc.same {
			t.Errorf("%s: same = %v, want %v", tc.name, got, tc.same)
		}
	}
	if p := provenance(c); !strings.HasPrefix(p, "audit ") {
		t.Errorf("provenance %q", p)
	}
}

// TestConstantsAt audits quicly at the pin and at a commit two years older
// (2024-03-09) from the mirror.
func TestConstantsAt(t *testing.T) {
	if os.Getenv("MIGAUDIT_MIRRORS") == "" {
		t.Skip("MIGAUDIT_MIRRORS not set: no quicly mirror to audit (CI has none)")
	}
	im, err := data.Lookup("quicly")
	if err != nil {
		t.Fatal(err)
	}
	got, err := ConstantsAt(context.Background(), "", im.Commit)
	if err != nil || !strings.Contains(got, "the commit that runs") {
		t.Fatalf("at the pin: %q, %v", got, err)
	}
	// 2025-10-30: the same constants; 2024-03-09: the rules find no
	// initial window in that code, so there are none to judge it by.
	for _, tc := range []struct{ commit, want string }{
		{"e7376458", "finds the same formulas"},
		{"9275ad44", "no discriminator constants for this commit"},
	} {
		got, err := ConstantsAt(context.Background(), "", tc.commit)
		msg := got
		if err != nil {
			msg = err.Error()
		}
		if !strings.Contains(msg, tc.want) || strings.Contains(msg, "\n") {
			t.Errorf("at %s: %q, want %q on one line", tc.commit, msg, tc.want)
		}
	}
}
