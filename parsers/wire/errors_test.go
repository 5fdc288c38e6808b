package wire

import (
	"bytes"
	"errors"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
)

// Bad input gets one line naming the file and the record.
func TestReadErrors(t *testing.T) {
	plain := gunzipFixture(t)
	gz, err := os.ReadFile(fixture)
	if err != nil {
		t.Fatal(err)
	}
	good, err := os.ReadFile(keylog)
	if err != nil {
		t.Fatal(err)
	}
	otherKL := strings.ReplaceAll(string(good), " a", " b") // another client_random
	cases := []struct {
		name    string
		capture []byte
		keylog  string
		want    string
	}{
		{"truncated pcapng", plain[:len(plain)/2], string(good), "wire.pcapng: record "},
		{"truncated gzip", gz[:len(gz)/2], string(good), "truncated capture"},
		{"foreign file", []byte("hello, this is not a capture\n"), "", "wire.pcapng: not a pcapng capture"},
		{"empty file", nil, "", "wire.pcapng: not a pcapng capture"},
		{"key log of another connection", plain, otherKL, "keylog.txt: no secret for client_random afc547f9"},
		{"another connection in the capture", withForeignInitial(t, plain), string(good), "wire.pcapng: record 898: a client Initial from SCID"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var opt Options
			if c.keylog != "" {
				kl, err := ParseKeyLog("keylog.txt", strings.NewReader(c.keylog))
				if err != nil {
					t.Fatal(err)
				}
				opt.KeyLog = kl
			}
			_, err := Read("wire.pcapng", bytes.NewReader(c.capture), opt)
			if err == nil {
				t.Fatalf("no error, want %q", c.want)
			}
			t.Log(err)
			if !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("error %q, want one line containing %q", err, c.want)
			}
		})
	}
	if !strings.Contains(otherKL, "CLIENT_TRAFFIC_SECRET_0 b") {
		t.Fatalf("the other key log did not change the client_random: %q", otherKL)
	}
}

func TestKeyLogErrors(t *testing.T) {
	cr := strings.Repeat("ab", 32)
	cases := []struct{ name, in, want string }{
		{"two fields", "CLIENT_TRAFFIC_SECRET_0 " + cr + "\n", "keylog.txt: line 1: want LABEL CLIENT_RANDOM SECRET, got 2 fields"},
		{"short random", "# comment\nCLIENT_TRAFFIC_SECRET_0 abcd 00\n", "keylog.txt: line 2: client_random"},
		{"secret not hex", "CLIENT_TRAFFIC_SECRET_0 " + cr + " zz\n", "keylog.txt: line 1: secret is not hex"},
		{"contradiction", "X " + cr + " 00\nX " + cr + " 01\n", "keylog.txt: line 2: a second, different X"},
		{"empty", "\n# nothing\n", "keylog.txt: no secrets"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseKeyLog("keylog.txt", strings.NewReader(c.in))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want %q", err, c.want)
			}
		})
	}
	// Both endpoints may append the same secrets.
	line := "CLIENT_TRAFFIC_SECRET_0 " + cr + " 00ff\n"
	if _, err := ParseKeyLog("keylog.txt", strings.NewReader(line+line)); err != nil {
		t.Errorf("a repeated line: %v", err)
	}
}

// withForeignInitial appends to the capture a copy of its first record
// (the client's first Initial) from another client SCID.
func withForeignInitial(t *testing.T, plain []byte) []byte {
	t.Helper()
	r, err := pcapgo.NewNgReader(bytes.NewReader(plain), pcapgo.NgReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	w, err := pcapgo.NewNgWriterInterface(&out, pcapgo.NgInterface{Name: "pathA", LinkType: layers.LinkTypeRaw}, pcapgo.NgWriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.AddInterface(pcapgo.NgInterface{Name: "pathB", LinkType: layers.LinkTypeRaw}); err != nil {
		t.Fatal(err)
	}
	var first []byte
	var firstCI gopacket.CaptureInfo
	var firstOpts pcapgo.NgPacketOptions
	for {
		data, ci, opts, err := r.ReadPacketDataWithOptions()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if first == nil {
			first, firstCI, firstOpts = append([]byte(nil), data...), ci, opts
		}
		if err := w.WritePacketWithOptions(ci, data, opts); err != nil {
			t.Fatal(err)
		}
	}
	// IPv4 20 + UDP 8 + first byte, version, DCID length, 19-byte DCID,
	// SCID length: the SCID starts at 54.
	first[28+1+4+1+int(first[28+5])+1] ^= 0xff
	if err := w.WritePacketWithOptions(firstCI, first, firstOpts); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}
