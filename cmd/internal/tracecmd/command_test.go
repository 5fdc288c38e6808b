package tracecmd

import (
	"errors"
	"flag"
	"strings"
	"testing"
	"time"
)

func TestParseInterspersed(t *testing.T) {
	tests := []struct {
		args    []string
		pos     string
		impl    string
		jobs    int
		at      time.Duration
		atSet   bool
		params  string
		wantErr string
	}{
		{args: []string{"a.gz"}, pos: "a.gz"},
		{args: []string{"--impl", "msquic", "a.gz"}, pos: "a.gz", impl: "msquic"},
		{args: []string{"a.gz", "--impl", "msquic", "b.gz", "--jobs=2"}, pos: "a.gz b.gz", impl: "msquic", jobs: 2},
		{args: []string{"-impl=x", "a", "--", "--jobs", "3"}, pos: "a --jobs 3", impl: "x"},
		{args: []string{"a", "--", "b", "--jobs", "3"}, pos: "a b --jobs 3"},
		{args: []string{"--migration-at", "0s", "a"}, pos: "a", atSet: true},
		{args: []string{"a", "--migration-at", "5.53s"}, pos: "a", at: 5530 * time.Millisecond, atSet: true},
		{args: []string{"--param", "S=1452", "a", "--param", "MTU=1500,2"}, pos: "a", params: "[S=1452,MTU=1500,2]"},
		{args: []string{"a", "-"}, pos: "a -"},
		{args: []string{"a", "--jobs", "x"}, wantErr: `invalid value "x" for flag -jobs`},
		{args: []string{"a", "--migration-at", "soon"}, wantErr: `invalid value "soon" for flag -migration-at: parse error`},
		{args: []string{"a", "--nope"}, wantErr: "flag provided but not defined: -nope"},
		{args: []string{"a", "--impl"}, wantErr: "flag needs an argument: -impl"},
	}
	for _, tc := range tests {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.SetOutput(&strings.Builder{})
		impl := fs.String("impl", "", "")
		jobs := fs.Int("jobs", 0, "")
		at := &durationValue{}
		fs.Var(at, "migration-at", "")
		var params stringArrayValue
		fs.Var(&params, "param", "")
		pos, err := parseInterspersed(fs, tc.args)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%q: err = %v, want %q", tc.args, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tc.args, err)
			continue
		}
		if got := strings.Join(pos, " "); got != tc.pos || *impl != tc.impl || *jobs != tc.jobs || at.d != tc.at || at.set != tc.atSet {
			t.Errorf("%q: pos %q impl %q jobs %d at %v/%v; want %q %q %d %v/%v", tc.args, got, *impl, *jobs, at.d, at.set, tc.pos, tc.impl, tc.jobs, tc.at, tc.atSet)
		}
		if tc.params != "" && params.String() != tc.params {
			t.Errorf("%q: params %s, want %s", tc.args, params.String(), tc.params)
		}
	}
}

func TestExecuteHelpIsForTheCore(t *testing.T) {
	for _, h := range []string{"-h", "--help", "-help"} {
		if err := Analyze().Execute([]string{"a.gz", h}, &strings.Builder{}, &strings.Builder{}); !errors.Is(err, ErrHelp) {
			t.Errorf("%s: err = %v, want ErrHelp", h, err)
		}
	}
}
