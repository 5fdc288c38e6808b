package wire

import (
	"bufio"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// KeyLog holds the TLS secrets of an NSS key log, by client_random.
type KeyLog struct {
	// Name is the file the secrets came from (for errors).
	Name    string
	secrets map[string]map[string][]byte // client_random hex → label → secret
}

// Secret labels QUIC needs (RFC 9001 §4; NSS key log format).
const (
	labelClientEarly     = "CLIENT_EARLY_TRAFFIC_SECRET"
	labelClientHandshake = "CLIENT_HANDSHAKE_TRAFFIC_SECRET"
	labelServerHandshake = "SERVER_HANDSHAKE_TRAFFIC_SECRET"
	labelClientTraffic0  = "CLIENT_TRAFFIC_SECRET_0"
	labelServerTraffic0  = "SERVER_TRAFFIC_SECRET_0"
)

// ReadKeyLogFile reads an NSS key log.
func ReadKeyLogFile(path string) (*KeyLog, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ParseKeyLog(filepath.Base(path), f)
}

// ParseKeyLog reads an NSS key log: "LABEL <client_random hex> <secret
// hex>" per line; comments (#) and blank lines are skipped, unknown labels
// kept. Endpoints may both append, so a repeated line is fine; a line that
// contradicts an earlier one is an error.
func ParseKeyLog(name string, r io.Reader) (*KeyLog, error) {
	kl := &KeyLog{Name: name, secrets: map[string]map[string][]byte{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 4096), 1<<16)
	line := 0
	for sc.Scan() {
		line++
		s := strings.TrimSpace(sc.Text())
		if s == "" || s[0] == '#' {
			continue
		}
		f := strings.Fields(s)
		if len(f) != 3 {
			return nil, fmt.Errorf("%s: line %d: want LABEL CLIENT_RANDOM SECRET, got %d fields", name, line, len(f))
		}
		cr, err := hex.DecodeString(f[1])
		if err != nil || len(cr) != 32 {
			return nil, fmt.Errorf("%s: line %d: client_random %q is not 32 bytes of hex", name, line, short(f[1]))
		}
		sec, err := hex.DecodeString(f[2])
		if err != nil || len(sec) == 0 {
			return nil, fmt.Errorf("%s: line %d: secret is not hex", name, line)
		}
		key := strings.ToLower(f[1])
		m := kl.secrets[key]
		if m == nil {
			m = map[string][]byte{}
			kl.secrets[key] = m
		}
		if old, ok := m[f[0]]; ok && string(old) != string(sec) {
			return nil, fmt.Errorf("%s: line %d: a second, different %s for client_random %s", name, line, f[0], short(key))
		}
		m[f[0]] = sec
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: line %d: %w", name, line+1, err)
	}
	if len(kl.secrets) == 0 {
		return nil, fmt.Errorf("%s: no secrets (empty key log)", name)
	}
	return kl, nil
}

// secret is the labelled secret of the connection with client_random cr.
func (kl *KeyLog) secret(cr []byte, label string) []byte {
	if kl == nil {
		return nil
	}
	return kl.secrets[hex.EncodeToString(cr)][label]
}

func (kl *KeyLog) has(cr []byte) bool {
	if kl == nil {
		return false
	}
	_, ok := kl.secrets[hex.EncodeToString(cr)]
	return ok
}

func short(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}
