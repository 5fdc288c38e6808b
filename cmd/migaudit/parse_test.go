package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestParseCommand(t *testing.T) {
	tests := []struct {
		args []string
		code int
		out  string
	}{
		{[]string{"parse", "../../parsers/testdata/quicgo_small.sqlog"}, 0, "format quicgo-qlog"},
		{[]string{"parse", "--json", "../../parsers/testdata/msquic_small.log"}, 0, `"format":"msquic-log"`},
		{[]string{"parse", "--dump", "--format", "timeline-csv", "../../parsers/testdata/quiche_live.csv"}, 0, `{"sample":`},
		{[]string{"parse", "../../parsers/testdata/errors/unknown.txt"}, 1, ""},
		{[]string{"parse", "--format", "nope", "../../parsers/testdata/quicgo_small.sqlog"}, 1, ""},
		{[]string{"parse"}, 1, ""},
	}
	for _, tc := range tests {
		var out bytes.Buffer
		err := execute(tc.args, &out, &bytes.Buffer{})
		if (err != nil) != (tc.code != 0) {
			t.Errorf("%v: error %v, want exit %d", tc.args, err, tc.code)
		}
		if tc.out != "" && !strings.Contains(out.String(), tc.out) {
			t.Errorf("%v: output lacks %q:\n%s", tc.args, tc.out, out.String())
		}
	}
}
