package validator

import "testing"

// The source literals the constant readings meet, in the evaluator's
// syntax.
func TestLiteralText(t *testing.T) {
	tests := []struct{ in, want string }{
		{"0.7f;", "0.7"},
		{"50000us;", "50000"},
		{"14_720", "14720"},
		{"1_000_000,", "1000000"},
		{"718     /* 718/1024=0.7 */", "718"},
		{"Duration::from_millis(333), // per spec", "Duration::from_millis(333)"},
		{"0x1f", "0x1f"},
		{"kDefaultInitialRtt", "kDefaultInitialRtt"},
	}
	for _, tc := range tests {
		if got := literalText(tc.in); got != tc.want {
			t.Errorf("literalText(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
