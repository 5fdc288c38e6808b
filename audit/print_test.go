package audit_test

import (
	"bytes"
	"regexp"
	"strings"
	"testing"

	"github.com/migaudit/migaudit/audit"
)

// The table wraps at spaces; a path:line longer than its column used to be
// cut (sent_packet_handler.go:1120 printed as :112).
func TestTableKeepsPositionsWhole(t *testing.T) {
	long := "internal/ackhandler/deeply/nested/directory/sent_packet_handler.go"
	tests := []struct {
		name string
		f    audit.Finding
		want []string
	}{
		{"long evidence path", audit.Finding{Rule: "x/r", Question: audit.Q1, Answer: audit.Yes, Mechanism: "m",
			Evidence: []audit.Evidence{{Path: long, Line: 1120, Kind: "call"}, {Path: "connection.go", Line: 915, Kind: "call"}}},
			[]string{long + ":1120", "connection.go:915"}},
		{"long word in the mechanism", audit.Finding{Rule: "x/r", Question: audit.Q3, Answer: audit.No,
			Mechanism: "gated by `(old_path!=NULL&&(!old_path->rtt_is_initialized||epoch>=0||path_x->first_tuple->challenge_verified))`"},
			[]string{"`(old_path!=NULL&&(!old_path->rtt_is_initialized||epoch>=0||path_x->first_tuple->challenge_verified))`"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			r := &audit.Report{Impl: "x", Commit: strings.Repeat("a", 40), Findings: []audit.Finding{tt.f}}
			if err := audit.Print(&buf, "table", []*audit.Report{r}); err != nil {
				t.Fatal(err)
			}
			for _, w := range tt.want {
				if !regexp.MustCompile(regexp.QuoteMeta(w) + `(\s|$)`).MatchString(buf.String()) {
					t.Errorf("table lacks %q whole:\n%s", w, buf.String())
				}
			}
		})
	}
}
