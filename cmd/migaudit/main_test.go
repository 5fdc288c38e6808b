package main

import (
	"testing"
)

func TestUnknownCommandFailsWithOneLine(t *testing.T) {
	if code := run([]string{"no-such-command"}); code == 0 {
		t.Fatalf("unknown command exited 0")
	}
}

func TestVersionRuns(t *testing.T) {
	if code := run([]string{"version"}); code != 0 {
		t.Fatalf("version exited %d", code)
	}
}
