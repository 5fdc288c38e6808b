package run

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const (
	cr1 = "8b2e1be4199dabdeaab430c169e3b1a0c8d2f1e5a7b6c4d3e2f1a0b9c8d7e6f5"
	cr2 = "0000000000000000000000000000000000000000000000000000000000000001"
	s32 = "a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f90"
)

func TestReadKeyLog(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		lines    int
		err      string
	}{
		{"tls13 server", "CLIENT_HANDSHAKE_TRAFFIC_SECRET " + cr1 + " " + s32 + "\nSERVER_HANDSHAKE_TRAFFIC_SECRET " + cr1 + " " + s32 + "\nCLIENT_TRAFFIC_SECRET_0 " + cr1 + " " + s32 + "\nSERVER_TRAFFIC_SECRET_0 " + cr1 + " " + s32 + "\n", 4, ""},
		{"comments, blank lines, CRLF", "# written by GnuTLS\r\n\r\nEXPORTER_SECRET " + cr1 + " " + s32 + "\r\n", 1, ""},
		{"key update label", "CLIENT_TRAFFIC_SECRET_12 " + cr1 + " " + s32, 1, ""},
		{"two fields", "CLIENT_TRAFFIC_SECRET_0 " + cr1, 0, "k.txt:1: want"},
		{"unknown label", "# c\nSERVER_TRAFFIC_SECRET_X " + cr1 + " " + s32, 0, `k.txt:2: unknown label "SERVER_TRAFFIC_SECRET_X"`},
		{"short client random", "CLIENT_RANDOM abcd " + s32, 0, "k.txt:1: client random must be 32 bytes"},
		{"secret not hex", "EXPORTER_SECRET " + cr1 + " zz", 0, "k.txt:1: secret is not hex"},
		{"odd secret", "EXPORTER_SECRET " + cr1 + " abc", 0, "k.txt:1: secret is not hex"},
		{"second line bad", "EXPORTER_SECRET " + cr1 + " " + s32 + "\nEXPORTER_SECRET " + cr1, 1, "k.txt:2:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ReadKeyLog(strings.NewReader(tc.in), "k.txt")
			if tc.err == "" && err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if tc.err != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.err)) {
				t.Fatalf("error = %v, want prefix %q", err, tc.err)
			}
			if len(got) != tc.lines {
				t.Fatalf("%d secrets, want %d", len(got), tc.lines)
			}
		})
	}
}

func TestDescribeKeyLog(t *testing.T) {
	line := func(label, cr string) string { return label + " " + cr + " " + s32 + "\n" }
	for _, tc := range []struct {
		name    string
		content *string // nil: no file
		by      string
		oneRTT  bool
		conns   int
		note    string
	}{
		{"no harness support", nil, "", false, 0, "the harness writes no key log"},
		{"writer failed", nil, "server", false, 0, "the server was to write keylog.txt but did not"},
		{"complete", ptr(line("CLIENT_TRAFFIC_SECRET_0", cr1) + line("SERVER_TRAFFIC_SECRET_0", cr1)), "server", true, 1, ""},
		{"1-RTT split across connections", ptr(line("CLIENT_TRAFFIC_SECRET_0", cr1) + line("SERVER_TRAFFIC_SECRET_0", cr2)), "both", false, 2, "no connection with both 1-RTT secrets (has: CLIENT_TRAFFIC_SECRET_0, SERVER_TRAFFIC_SECRET_0)"},
		{"handshake only", ptr(line("CLIENT_HANDSHAKE_TRAFFIC_SECRET", cr1)), "client", false, 1, "no connection with both 1-RTT secrets"},
		{"malformed", ptr(line("CLIENT_TRAFFIC_SECRET_0", cr1) + "garbage\n"), "server", false, 1, "keylog.txt:2: want"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if tc.content != nil {
				if err := os.WriteFile(filepath.Join(dir, KeyLogFile), []byte(*tc.content), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			kl := DescribeKeyLog(dir, tc.by)
			if kl.OneRTT != tc.oneRTT || kl.Connections != tc.conns || kl.By != tc.by {
				t.Errorf("got one_rtt=%v connections=%d by=%q, want %v %d %q", kl.OneRTT, kl.Connections, kl.By, tc.oneRTT, tc.conns, tc.by)
			}
			if !strings.Contains(kl.Note, tc.note) || (tc.note == "") != (kl.Note == "") {
				t.Errorf("note %q, want it to contain %q", kl.Note, tc.note)
			}
			if (tc.content != nil) != (kl.SHA256 != "") {
				t.Errorf("sha256 %q with file present=%v", kl.SHA256, tc.content != nil)
			}
		})
	}
}

func ptr(s string) *string { return &s }

// FuzzReadKeyLog: any input either reads or fails naming its line; every
// secret read has a 32-byte client random and a non-empty secret.
func FuzzReadKeyLog(f *testing.F) {
	f.Add("CLIENT_TRAFFIC_SECRET_0 " + cr1 + " " + s32 + "\n")
	f.Add("# c\n\nEXPORTER_SECRET " + cr1 + " ab\r\n")
	f.Add("CLIENT_RANDOM " + cr1 + "\n")
	f.Fuzz(func(t *testing.T, in string) {
		got, err := ReadKeyLog(strings.NewReader(in), "k.txt")
		if err != nil && !strings.HasPrefix(err.Error(), "k.txt") {
			t.Fatalf("error does not name the file: %v", err)
		}
		for _, s := range got {
			if len(s.ClientRandom) != 32 || len(s.Secret) == 0 || !knownLabel(s.Label) || s.Line < 1 {
				t.Fatalf("bad secret %+v", s)
			}
		}
	})
}
