package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestRunRefusals: implementations that cannot run here, and bad flags,
// fail at once with a message saying why — before any root check or
// testbed.
func TestRunRefusals(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--impl", "picoquic"}, "picoquic cannot be run live here"},
		{[]string{"--impl", "msquic"}, "msquic cannot be run live here"},
		{[]string{"--impl", "nosuch"}, "unknown implementation"},
		{[]string{"--impl", "quic-go", "--scenario", "sideways"}, "unknown --scenario"},
		{[]string{"--impl", "quic-go", "--retries", "-1"}, "--retries must be 0 or more"},
	}
	for _, tc := range tests {
		cmd := newRunCmd()
		var out bytes.Buffer
		cmd.SetOut(&out)
		cmd.SetErr(&out)
		cmd.SetArgs(tc.args)
		err := cmd.Execute()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: err = %v, want %q", tc.args, err, tc.want)
		}
	}
}
