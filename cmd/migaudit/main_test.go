package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestUnknownCommandFailsWithOneLine(t *testing.T) {
	if code := run([]string{"no-such-command"}, &bytes.Buffer{}, &bytes.Buffer{}); code == 0 {
		t.Fatalf("unknown command exited 0")
	}
}

func TestVersionRuns(t *testing.T) {
	if code := run([]string{"version"}, &bytes.Buffer{}, &bytes.Buffer{}); code != 0 {
		t.Fatalf("version exited %d", code)
	}
}

// TestTraceCommandsThroughCobra: the trace commands read their flags as
// every other command does (pflag): flags after the trace, "--flag=value",
// a repeated flag, and a duration flag that must be known to be given.
func TestTraceCommandsThroughCobra(t *testing.T) {
	csv := filepath.Join(t.TempDir(), "rep.csv")
	if err := os.WriteFile(csv, []byte("time_us,cwnd,bytes_in_flight,smoothed_rtt,min_rtt,latest_rtt\n"+
		"4000000,1484569,,588727,20224,\n5532258,12200,,333000,,\n5573795,8540,,333000,,\n9000000,8540,,333000,,\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"analyze", csv, "--impl", "msquic", "--migration-at", "5.53s", "--format", "json"}, `"kind": "RESET"`},
		{[]string{"analyze", "--impl=msquic", "--param", "MTU=1500", "--param", "X=1", csv, "--migration-at=5.53s", "--format", "json"}, `"arithmetic": "10*(1500-20-8) = 14720"`},
		{[]string{"analyze", "--impl", "msquic", csv}, "no migration found"},
		{[]string{"parse", "--json", csv}, `"format":"timeline-csv"`},
	}
	for _, tc := range tests {
		root := newRootCmd()
		var out bytes.Buffer
		root.SetOut(&out)
		root.SetErr(&bytes.Buffer{})
		root.SetArgs(tc.args)
		if err := root.Execute(); err != nil {
			t.Errorf("%v: %v", tc.args, err)
			continue
		}
		if !strings.Contains(out.String(), tc.want) {
			t.Errorf("%v: output lacks %q:\n%s", tc.args, tc.want, out.String())
		}
	}
}
