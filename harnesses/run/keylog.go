package run

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// KeyLogFile is the name of the repetition's key log inside RepEnv.Dir.
const KeyLogFile = "keylog.txt"

// KeyLog is the manifest's record of a repetition's TLS key log.
type KeyLog struct {
	// File is the key log's name inside the repetition directory; empty
	// when none was written.
	File   string `json:"file,omitempty"`
	SHA256 string `json:"sha256,omitempty"`
	// Lines counts the secret lines (comments and blank lines excluded).
	Lines int `json:"lines"`
	// By is the endpoint that wrote it: "server", "client" or "both", as the
	// harness reported (RepResult.KeyLogBy).
	By string `json:"written_by,omitempty"`
	// Connections counts the distinct client randoms.
	Connections int `json:"connections,omitempty"`
	// Labels counts the lines per label.
	Labels map[string]int `json:"labels,omitempty"`
	// OneRTT is true when some connection has both 1-RTT secrets
	// (CLIENT_TRAFFIC_SECRET_0 and SERVER_TRAFFIC_SECRET_0).
	OneRTT bool `json:"one_rtt"`
	// Note says why there is no usable key log (the harness cannot write
	// one, or the file is malformed); the repetition still counts, but what
	// would be read from its wire rests on the traces alone.
	Note string `json:"note,omitempty"`
}

// KeySecret is one line of an NSS key log.
type KeySecret struct {
	Label        string
	ClientRandom []byte
	Secret       []byte
	Line         int
}

// nssLabels are the labels of the NSS key log format
// (https://firefox-source-docs.mozilla.org/security/nss/legacy/key_log_format/)
// that a TLS 1.3 or 1.2 endpoint writes; CLIENT_TRAFFIC_SECRET_<n> and
// SERVER_TRAFFIC_SECRET_<n> of later key updates are accepted too.
var nssLabels = map[string]bool{
	"CLIENT_RANDOM":                   true, // TLS 1.2 master secret
	"CLIENT_EARLY_TRAFFIC_SECRET":     true,
	"CLIENT_HANDSHAKE_TRAFFIC_SECRET": true,
	"SERVER_HANDSHAKE_TRAFFIC_SECRET": true,
	"EARLY_EXPORTER_SECRET":           true,
	"EXPORTER_SECRET":                 true,
}

func knownLabel(l string) bool {
	if nssLabels[l] {
		return true
	}
	for _, p := range []string{"CLIENT_TRAFFIC_SECRET_", "SERVER_TRAFFIC_SECRET_"} {
		if n, ok := strings.CutPrefix(l, p); ok && n != "" && strings.Trim(n, "0123456789") == "" {
			return true
		}
	}
	return false
}

// ReadKeyLog reads an NSS key log. A malformed line is an error naming
// name:line and what is wrong; comments (#) and blank lines are skipped.
func ReadKeyLog(r io.Reader, name string) ([]KeySecret, error) {
	var out []KeySecret
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 || line[0] == '#' {
			continue
		}
		f := strings.Fields(string(line))
		if len(f) != 3 {
			return out, fmt.Errorf("%s:%d: want \"LABEL <client_random hex> <secret hex>\", got %d fields", name, n, len(f))
		}
		if !knownLabel(f[0]) {
			return out, fmt.Errorf("%s:%d: unknown label %q", name, n, f[0])
		}
		cr, err := hex.DecodeString(f[1])
		if err != nil || len(cr) != 32 {
			return out, fmt.Errorf("%s:%d: client random must be 32 bytes of hex (64 digits), got %q", name, n, f[1])
		}
		sec, err := hex.DecodeString(f[2])
		if err != nil || len(sec) == 0 {
			return out, fmt.Errorf("%s:%d: secret is not hex: %q", name, n, f[2])
		}
		out = append(out, KeySecret{Label: f[0], ClientRandom: cr, Secret: sec, Line: n})
	}
	if err := sc.Err(); err != nil {
		return out, fmt.Errorf("%s: %w", name, err)
	}
	return out, nil
}

// DescribeKeyLog reads dir/KeyLogFile and returns its manifest entry; by is
// the endpoint the harness says wrote it. A missing, empty or malformed
// key log gives an entry whose Note says so.
func DescribeKeyLog(dir, by string) KeyLog {
	p := filepath.Join(dir, KeyLogFile)
	f, err := os.Open(p)
	if errors.Is(err, os.ErrNotExist) {
		if by == "" {
			return KeyLog{Note: "the harness writes no key log: the wire capture cannot be decrypted"}
		}
		return KeyLog{By: by, Note: fmt.Sprintf("the %s was to write %s but did not", by, KeyLogFile)}
	}
	if err != nil {
		return KeyLog{By: by, Note: err.Error()}
	}
	defer f.Close()
	kl := KeyLog{File: KeyLogFile, By: by}
	kl.SHA256, _ = SHA256File(p)
	secrets, err := ReadKeyLog(f, KeyLogFile)
	if err != nil {
		kl.Note = err.Error()
	}
	kl.Lines = len(secrets)
	kl.Labels = map[string]int{}
	have := map[string]map[string]bool{}
	for _, s := range secrets {
		kl.Labels[s.Label]++
		cr := hex.EncodeToString(s.ClientRandom)
		if have[cr] == nil {
			have[cr] = map[string]bool{}
		}
		have[cr][s.Label] = true
	}
	kl.Connections = len(have)
	for _, l := range have {
		if l["CLIENT_TRAFFIC_SECRET_0"] && l["SERVER_TRAFFIC_SECRET_0"] {
			kl.OneRTT = true
		}
	}
	if kl.Note == "" && !kl.OneRTT {
		var got []string
		for l := range kl.Labels {
			got = append(got, l)
		}
		sort.Strings(got)
		kl.Note = fmt.Sprintf("%s has no connection with both 1-RTT secrets (has: %s)", KeyLogFile, strings.Join(got, ", "))
	}
	return kl
}
