package main

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const wireFixture = "../../parsers/wire/testdata/quicgo/"

func TestAnalyzeWireFlags(t *testing.T) {
	// The trace alone in a directory: no capture beside it.
	b, err := os.ReadFile(wireFixture + "server.sqlog.gz")
	if err != nil {
		t.Fatal(err)
	}
	trace := filepath.Join(t.TempDir(), "server.sqlog.gz")
	if err := os.WriteFile(trace, b, 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name    string
		args    []string
		want    string // in the output
		wantErr string
	}{
		{"explicit capture, key log beside it", []string{"--impl", "quic-go", "--format", "json", "--wire", wireFixture + "wire.pcapng.gz", trace}, `"decides": true`, ""},
		{"no capture", []string{"--impl", "quic-go", "--format", "json", trace}, `"q3"`, ""},
		{"key log alone", []string{"--impl", "quic-go", "--keylog", wireFixture + "keylog.txt", trace}, "", "--keylog " + wireFixture + "keylog.txt: give the capture it decrypts with --wire"},
		{"one capture, two traces", []string{"--impl", "quic-go", "--wire", wireFixture + "wire.pcapng.gz", trace, trace}, "", "one capture belongs to one trace, got 2 traces"},
		{"not a capture", []string{"--impl", "quic-go", "--wire", trace, trace}, "", "server.sqlog.gz: not a pcapng capture"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var out bytes.Buffer
			err := execute(append([]string{"analyze"}, c.args...), &out, &bytes.Buffer{})
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("error %v, want %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(out.String(), c.want) {
				t.Errorf("output lacks %q", c.want)
			}
			if hasWire := strings.Contains(out.String(), `"wire"`); hasWire != slices.Contains(c.args, "--wire") {
				t.Errorf("wire attribution in the output: %v, want it only with --wire", hasWire)
			}
		})
	}
}
