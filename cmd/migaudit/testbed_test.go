package main

import (
	"bytes"
	"strings"
	"testing"
)

// Flag errors are reported before anything needs root.
func TestTestbedFlagErrors(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"testbed", "up", "--path-a", "20mbit"}, "--path-a: path \"20mbit\": want RATE,RTT"},
		{[]string{"testbed", "up", "--path-b", "20mbit,40ms", "--step-down"}, "--path-b and --step-down both set path B"},
		{[]string{"testbed", "calibrate", "--path-b", "20mbit,40ms,200%"}, "loss 2 out of range"},
		{[]string{"testbed", "down", "--all-stale", "--name", "x"}, "--all-stale and --name are exclusive"},
		{[]string{"testbed", "up", "extra"}, "unknown command \"extra\""},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			root := newRootCmd()
			var out bytes.Buffer
			root.SetOut(&out)
			root.SetErr(&out)
			root.SetArgs(tt.args)
			err := root.Execute()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("migaudit %v: error %v, want one containing %q", tt.args, err, tt.want)
			}
		})
	}
}
