package data

import "testing"

// TestConstantsAt: the constants the audit wrote at the commit a live
// harness runs (quinn 0.9.3 from Debian) are used for that commit, the
// pin's for any other.
func TestConstantsAt(t *testing.T) {
	const at = "7d1b280f550ac3a494fe3c2d92a539cec6d0b3b8" // quinn tag 0.9.3
	for _, tc := range []struct {
		commit string
		iw     float64
		prov   string
	}{
		{at, 12320, "audit " + at},
		{"", 12000, "audit a1931ab8c37e09d915ad1dcb846624ccd72e04a9"},
		{"0000000000000000000000000000000000000000", 12000, "audit a1931ab8c37e09d915ad1dcb846624ccd72e04a9"},
	} {
		c, audited, err := ConstantsAt("quinn", tc.commit)
		if err != nil || !audited || len(c.InitialWindows) != 1 {
			t.Fatalf("ConstantsAt(quinn, %q) = %+v, %v, %v", tc.commit, c, audited, err)
		}
		v, _, err := c.InitialWindows[0].Eval(nil)
		if err != nil || v != tc.iw || c.InitialWindows[0].Provenance != tc.prov {
			t.Errorf("ConstantsAt(quinn, %q): initial window %v (%s), %v; want %v from %s", tc.commit, v, c.InitialWindows[0].Provenance, err, tc.iw, tc.prov)
		}
	}
	if _, _, err := ConstantsAt("nosuch", "abc"); err == nil {
		t.Error("unknown implementation: no error")
	}
}
