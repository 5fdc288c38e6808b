package discriminator

import (
	"strings"
	"testing"

	"github.com/migaudit/migaudit/data"
)

// TestConstantsAtCommit: constants audited at the commit that ran replace
// the pin's, and the analysis reports their provenance.
func TestConstantsAtCommit(t *testing.T) {
	at := &data.Constants{InitialWindows: []data.Formula{{Expr: "10*S", Params: map[string]float64{"S": 1000}, Provenance: "audit 0123456789abcdef0123456789abcdef01234567"}}}
	for _, tc := range []struct {
		name     string
		at       *data.Constants
		want     int64
		wantProv string
	}{
		{"pin (data)", nil, 14520, "audit d7fb3ed0"},
		{"commit that ran", at, 14520, "audit 0123456789ab"},
		{"commit that ran, its own S", &data.Constants{InitialWindows: []data.Formula{{Expr: "10*S", Params: map[string]float64{"S": 1000}, Provenance: "audit 0123456789abcdef"}}}, 10000, "audit 0123456789ab"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			params := map[string]float64{"S": 1452}
			if tc.want == 10000 {
				params = nil
			}
			cs, err := evalConstantsFor("ngtcp2", "", params, tc.at)
			if err != nil {
				t.Fatal(err)
			}
			if len(cs.initial) != 1 || cs.initial[0] != tc.want {
				t.Fatalf("initial windows %v, want [%d]", cs.initial, tc.want)
			}
			if !strings.HasPrefix(cs.reported[0].Provenance, tc.wantProv) {
				t.Errorf("provenance %q, want prefix %q", cs.reported[0].Provenance, tc.wantProv)
			}
		})
	}
}
