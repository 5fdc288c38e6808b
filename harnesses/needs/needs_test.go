package needs

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCompatible(t *testing.T) {
	for _, tc := range []struct {
		v, want string
		ok      bool
	}{
		{"0.23.5", "0.23", true}, {"0.20.8", "0.23", false}, {"0.24.0", "0.23", false},
		{"2.4.1", "2.7", false}, {"2.7.0", "2.7", true}, {"2.9.1", "2.7", true}, {"3.0.0", "2.7", false},
		{"1.0.38", "2", false}, {"2.0.12", "2", true}, {"0.16.20", "0.17", false},
	} {
		if got := compatible(tc.v, tc.want); got != tc.ok {
			t.Errorf("compatible(%s, ^%s) = %v", tc.v, tc.want, got)
		}
	}
}

// TestWhy checks the line against a fake host: crates present in the right
// series drop out, present in the wrong series stay, libraries are found by
// their globs.
func TestWhy(t *testing.T) {
	reg, root := t.TempDir(), t.TempDir()
	for _, d := range []string{"rustls-0.20.8", "rand-0.10.1", "zerocopy-0.8.2", "hex-literal-1.1.0", "futures-0.3.21", "rustls-pki-types-1.9.0"} {
		if err := os.Mkdir(filepath.Join(reg, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	h := Host{Registry: reg, Root: root}
	line, ok := h.Why("s2n-quic")
	if !ok || strings.Count(line, "\n") != 0 {
		t.Fatalf("Why(s2n-quic) = %q, %v", line, ok)
	}
	if !strings.Contains(line, "rustls 0.23 (quic/s2n-quic-rustls/Cargo.toml; Debian has 0.20.8)") || strings.Contains(line, "rand ") || strings.Contains(line, "futures") {
		t.Errorf("s2n-quic line: %s", line)
	}
	if got := len(h.Missing("s2n-quic")); got != 1 {
		t.Errorf("s2n-quic missing %d, want 1 (rustls 0.23)", got)
	}

	line, ok = h.Why("mvfst")
	if !ok || !strings.Contains(line, "folly (CMakeLists.txt find_package(folly REQUIRED); not in Debian)") || !strings.Contains(line, "fizz") {
		t.Errorf("mvfst: %q %v", line, ok)
	}
	inc := filepath.Join(root, "usr/local/include/folly")
	if err := os.MkdirAll(inc, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(inc, "Range.h"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if line, _ = h.Why("mvfst"); strings.Contains(line, "folly") || !strings.Contains(line, "fizz") {
		t.Errorf("mvfst with folly installed: %q", line)
	}
	if _, ok := h.Why("quinn"); ok || Known("quinn") {
		t.Error("quinn has a harness: no entry")
	}
	for _, impl := range []string{"neqo", "tquic"} {
		if line, ok := h.Why(impl); !ok || !strings.Contains(line, "Rust crates not in "+reg) {
			t.Errorf("%s: %q %v", impl, line, ok)
		}
	}
}

// TestWhyPython: the interpreter is asked for each distribution's version;
// one new enough drops out of the line.
func TestWhyPython(t *testing.T) {
	py := filepath.Join(t.TempDir(), "python3")
	// A stand-in interpreter: the distribution name is its last argument.
	script := "#!/bin/sh\nfor a; do d=$a; done\ncase $d in cryptography) echo 38.0.4;; pyopenssl) echo 24.0.0;; *) exit 1;; esac\n"
	if err := os.WriteFile(py, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	h := Host{Registry: t.TempDir(), Root: t.TempDir(), Python: py}
	line, ok := h.Why("aioquic")
	if !ok || !strings.Contains(line, "cryptography>=42.0.0 (pyproject.toml; tls.py imports asymmetric.types, cryptography >= 40; 38.0.4 here, Debian has 38.0.4)") ||
		!strings.Contains(line, "pylsqpack>=0.3.3 (pyproject.toml (HTTP/3 only); absent here, not in Debian)") || strings.Contains(line, "pyopenssl") {
		t.Errorf("aioquic: %q %v", line, ok)
	}
	if older("24.0.0", "24") || !older("23.0.0", "24") || older("42.0.5", "42.0.0") {
		t.Error("older")
	}
}
