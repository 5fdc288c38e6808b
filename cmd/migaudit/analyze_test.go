package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// analyzeCLI runs `migaudit analyze args…` and returns stdout and the
// error.
func analyzeCLI(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	err := execute(append([]string{"analyze"}, args...), &out, &bytes.Buffer{})
	return out.String(), err
}

func TestAnalyzeCommand(t *testing.T) {
	dir := t.TempDir()
	csvPath := filepath.Join(dir, "rep.csv")
	csv := "time_us,cwnd,bytes_in_flight,smoothed_rtt,min_rtt,latest_rtt\n" +
		"4000000,1484569,,588727,20224,\n" +
		"5532258,12200,,333000,,\n" +
		"5573795,8540,,333000,,\n" +
		"9000000,8540,,333000,,\n"
	if err := os.WriteFile(csvPath, []byte(csv), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		args    []string
		wantErr string
		wantOut string
	}{
		{"json with --migration-at", []string{"--impl", "msquic", "--migration-at", "5.53s", "--format", "json", csvPath}, "", `"kind": "RESET"`},
		{"table", []string{"--impl", "msquic", "--migration-at", "5.53s", csvPath}, "", "LOSS_BACKOFF"},
		{"markdown", []string{"--impl", "msquic", "--migration-at", "5.53s", "--format", "markdown", csvPath}, "", "| RESET"},
		{"csv", []string{"--impl", "msquic", "--migration-at", "5.53s", "--format", "csv", csvPath}, "", "trace,implementation"},
		{"no --migration-at: no migration found", []string{"--impl", "msquic", csvPath}, "", "no migration found"},
		{"--param overrides a formula setting", []string{"--impl", "msquic", "--param", "MTU=1500", "--migration-at", "5.53s", "--format", "json", csvPath}, "", `"arithmetic": "10*(1500-20-8) = 14720"`},
		{"no --impl and the trace names none", []string{csvPath}, "--impl", ""},
		{"bad --param", []string{"--impl", "msquic", "--param", "S", csvPath}, "NAME=VALUE", ""},
		{"unknown output format", []string{"--impl", "msquic", "--format", "xml", csvPath}, "unknown output format", ""},
		{"unknown trace format", []string{"--impl", "msquic", "--trace-format", "pcap", csvPath}, "--trace-format", ""},
		{"unknown implementation", []string{"--impl", "nosuch", csvPath}, "unknown implementation", ""},
		{"absent file", []string{"--impl", "msquic", filepath.Join(dir, "absent.csv")}, "absent.csv", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := analyzeCLI(t, tt.args...)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(out, tt.wantOut) {
				t.Errorf("output lacks %q:\n%s", tt.wantOut, out)
			}
		})
	}
}

func TestAnalyzeJSONIsArrayPerTrace(t *testing.T) {
	dir := t.TempDir()
	var paths []string
	for _, n := range []string{"a.csv", "b.csv"} {
		p := filepath.Join(dir, n)
		if err := os.WriteFile(p, []byte("time_us,cwnd,bytes_in_flight,smoothed_rtt,min_rtt,latest_rtt\n1,12000,,,,\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	out, err := analyzeCLI(t, append([]string{"--impl", "ngtcp2", "--format", "json"}, paths...)...)
	if err != nil {
		t.Fatal(err)
	}
	var got []map[string]any
	if err := json.Unmarshal([]byte(out), &got); err != nil || len(got) != 2 {
		t.Fatalf("want a JSON array of 2 analyses, got %d (%v)", len(got), err)
	}
}

func TestAnalyzeAbsentFile(t *testing.T) {
	_, err := analyzeCLI(t, "--impl", "quic-go", filepath.Join(t.TempDir(), "none.sqlog"))
	if err == nil || !strings.Contains(err.Error(), "none.sqlog") {
		t.Errorf("analyze of an absent file: err = %v, want one naming the file", err)
	}
}
