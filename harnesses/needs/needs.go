// Package needs says, for an implementation without a live harness, what
// its live build would need that this machine lacks: Rust crates absent
// from the Debian crate registry (/usr/share/cargo/registry) in the version
// series the pinned commit asks for, and C/C++ libraries absent from the
// system. `migaudit run --impl X` prints it as one line, so a user who has
// those pieces knows where to start.
//
// The requirements are read from each implementation's manifests at its
// pinned commit (Cargo.toml, CMakeLists.txt, pyproject.toml) and listed here with where
// they come from; what is missing is checked on this machine each time.
package needs

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
)

// Requirement is one piece a live build needs.
type Requirement struct {
	// Crate is a Rust crate name; Library a C/C++ library.
	Crate, Library string
	// Series is the lowest version the pin accepts ("0.23", "2.7"); cargo's
	// caret rule: same major (same minor for 0.x), not lower. Crates only.
	Series string
	// From is where the pin asks for it.
	From string
	// Debian says what Debian bookworm has instead ("0.20.8", "" = nothing).
	Debian string
	// Globs find an installed library (CMake config or headers); libraries only.
	Globs []string
	// Python is a Python distribution ("cryptography"); Series is then the
	// lowest version accepted (>=).
	Python string
}

// Host is where the checks look; tests substitute their own.
type Host struct {
	// Registry is cargo's directory source of Debian's crates.
	Registry string
	// Root prefixes the library globs ("/" on a real machine).
	Root string
	// Python is the interpreter whose packages count (Debian's).
	Python string
}

// DefaultHost is this machine.
var DefaultHost = Host{Registry: "/usr/share/cargo/registry", Root: "/", Python: "/usr/bin/python3"}

// table holds the requirements that decide whether a live build is possible:
// those Debian bookworm lacks in the version asked for (the others — bytes,
// tokio, libc, … — Debian has). Crates come from the pins' Cargo.toml
// files; mvfst's libraries from its CMakeLists.txt find_package calls.
var table = map[string]struct {
	what string // the build
	reqs []Requirement
	note string // appended to the line
}{
	"neqo": {"neqo-transport at the pin (NSS through the nss-rs crate)", []Requirement{
		{Crate: "nss-rs", Series: "0.14", From: "Cargo.toml workspace"},
		{Crate: "qlog", Series: "0.16", From: "Cargo.toml workspace"},
		{Crate: "thiserror", Series: "2", From: "Cargo.toml workspace", Debian: "1.0.38"},
		{Crate: "rustc-hash", Series: "2", From: "Cargo.toml workspace", Debian: "1.1.0"},
		{Crate: "indexmap", Series: "2", From: "neqo-transport/Cargo.toml", Debian: "1.9.2"},
		{Crate: "strum", Series: "0.27", From: "Cargo.toml workspace", Debian: "0.19.2"},
		{Crate: "enum-map", Series: "2.7", From: "Cargo.toml workspace", Debian: "2.4.1"},
		{Crate: "enumset", Series: "1", From: "Cargo.toml workspace"},
		{Crate: "static_assertions", Series: "1", From: "Cargo.toml workspace"},
	}, ""},
	"s2n-quic": {"s2n-quic at the pin with its rustls provider", []Requirement{
		{Crate: "rustls", Series: "0.23", From: "quic/s2n-quic-rustls/Cargo.toml", Debian: "0.20.8"},
		{Crate: "rustls-pki-types", Series: "1", From: "quic/s2n-quic-rustls/Cargo.toml"},
		{Crate: "rand", Series: "0.10", From: "quic/s2n-quic/Cargo.toml", Debian: "0.8.5"},
		{Crate: "zerocopy", Series: "0.8", From: "quic/s2n-quic-core/Cargo.toml", Debian: "0.6.1"},
		{Crate: "hex-literal", Series: "1", From: "quic/s2n-quic-core/Cargo.toml"},
		{Crate: "futures", Series: "0.3", From: "quic/s2n-quic/Cargo.toml", Debian: "0.3.21"},
	}, ""},
	"tquic": {"tquic at the pin (BoringSSL from its deps/boringssl submodule, built by cmake)", []Requirement{
		{Crate: "ring", Series: "0.17", From: "Cargo.toml", Debian: "0.16.20"},
		{Crate: "strum", Series: "0.24", From: "Cargo.toml", Debian: "0.19.2"},
		{Crate: "strum_macros", Series: "0.24", From: "Cargo.toml"},
		{Crate: "lru", Series: "0.12", From: "Cargo.toml", Debian: "0.7.8"},
		{Crate: "enumflags2", Series: "0.7", From: "Cargo.toml", Debian: "0.6.4"},
		{Crate: "priority-queue", Series: "1", From: "Cargo.toml"},
	}, ""},
	// aioquic: pyproject.toml's dependencies at the pin; tls.py imports
	// cryptography.hazmat.primitives.asymmetric.types (cryptography >= 40)
	// since 488f1ab (2024-01-23). pylsqpack serves HTTP/3 only.
	"aioquic": {"aioquic at the pin (its C extensions against python3-dev and OpenSSL)", []Requirement{
		{Python: "cryptography", Series: "42.0.0", From: "pyproject.toml; tls.py imports asymmetric.types, cryptography >= 40", Debian: "38.0.4"},
		{Python: "service-identity", Series: "24.1.0", From: "pyproject.toml", Debian: "18.1.0"},
		{Python: "pyopenssl", Series: "24", From: "pyproject.toml", Debian: "23.0.0"},
		{Python: "pylsqpack", Series: "0.3.3", From: "pyproject.toml (HTTP/3 only)"},
	}, "commit 5bbac3bfa691 (2024-01-15, the last before that import) runs QUIC on Debian bookworm's python3-cryptography 38, python3-openssl 23, python3-service-identity 18.1 and python3-certifi (C extensions built with python3-dev and libssl-dev), but has no harness yet"},
	"mvfst": {"mvfst at the pin (CMake)", []Requirement{
		{Library: "folly", From: "CMakeLists.txt find_package(folly REQUIRED)",
			Globs: []string{"usr/lib/*/cmake/folly/folly-config.cmake", "usr/local/lib/cmake/folly/folly-config.cmake", "usr/include/folly/Range.h", "usr/local/include/folly/Range.h"}},
		{Library: "fizz", From: "CMakeLists.txt find_package(Fizz REQUIRED)",
			Globs: []string{"usr/lib/*/cmake/fizz/fizz-config.cmake", "usr/local/lib/cmake/fizz/fizz-config.cmake", "usr/include/fizz/protocol/Types.h", "usr/local/include/fizz/protocol/Types.h"}},
	}, ""},
}

// Known reports whether the package has requirements for impl.
func Known(impl string) bool {
	_, ok := table[impl]
	return ok
}

var versionDir = regexp.MustCompile(`^\d+\.\d+\.\d+`)

// hasCrate reports whether the registry holds name in series.
func (h Host) hasCrate(name, series string) bool {
	ents, err := os.ReadDir(h.Registry)
	if err != nil {
		return false
	}
	for _, e := range ents {
		v, ok := strings.CutPrefix(e.Name(), name+"-")
		if !ok || !versionDir.MatchString(v) {
			continue
		}
		if compatible(v, series) {
			return true
		}
	}
	return false
}

// numbers reads "1.2.3" (missing parts 0, a part's non-digit tail ignored).
func numbers(s string) [3]int {
	var out [3]int
	for i, f := range strings.SplitN(s, ".", 3) {
		for _, c := range f {
			if c < '0' || c > '9' {
				break
			}
			out[i] = out[i]*10 + int(c-'0')
		}
	}
	return out
}

// compatible applies cargo's caret requirement ^want to version v.
func compatible(v, want string) bool {
	a, b := numbers(v), numbers(want)
	if a[0] != b[0] || b[0] == 0 && a[1] != b[1] {
		return false
	}
	for i := range 3 {
		if a[i] != b[i] {
			return a[i] > b[i]
		}
	}
	return true
}

// pythonVersion is the installed version of a distribution ("" = none).
func (h Host) pythonVersion(dist string) string {
	out, err := exec.Command(h.Python, "-c", "import sys, importlib.metadata as m; print(m.version(sys.argv[1]))", dist).Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

// hasPython reports whether dist is installed at min or later.
func (h Host) hasPython(dist, min string) bool {
	v := h.pythonVersion(dist)
	return v != "" && !older(v, min)
}

// older reports whether version v is below min (numeric, dot-separated).
func older(v, min string) bool {
	a, b := numbers(v), numbers(min)
	for i := range 3 {
		if a[i] != b[i] {
			return a[i] < b[i]
		}
	}
	return false
}

func (h Host) hasLibrary(globs []string) bool {
	for _, g := range globs {
		if m, _ := filepath.Glob(filepath.Join(h.Root, g)); len(m) > 0 {
			return true
		}
	}
	return false
}

// Missing lists impl's requirements this host lacks.
func (h Host) Missing(impl string) []Requirement {
	var out []Requirement
	for _, r := range table[impl].reqs {
		if r.Crate != "" && !h.hasCrate(r.Crate, r.Series) || r.Library != "" && !h.hasLibrary(r.Globs) ||
			r.Python != "" && !h.hasPython(r.Python, r.Series) {
			out = append(out, r)
		}
	}
	return out
}

// Why is the one line `run` prints for impl: what its live build needs
// that this host lacks, and where to start. ok is false when impl has no
// entry here, or when nothing is missing (a harness could then be written).
func (h Host) Why(impl string) (string, bool) {
	e, known := table[impl]
	if !known {
		return "", false
	}
	miss := h.Missing(impl)
	if len(miss) == 0 {
		return "", false
	}
	var crates, libs, py []string
	for _, r := range miss {
		if r.Python != "" {
			d := "not in Debian"
			if r.Debian != "" {
				d = "Debian has " + r.Debian
			}
			have := "absent"
			if v := h.pythonVersion(r.Python); v != "" {
				have = v
			}
			py = append(py, fmt.Sprintf("%s>=%s (%s; %s here, %s)", r.Python, r.Series, r.From, have, d))
			continue
		}
		if r.Crate != "" {
			d := "not in Debian"
			if r.Debian != "" {
				d = "Debian has " + r.Debian
			}
			crates = append(crates, fmt.Sprintf("%s %s (%s; %s)", r.Crate, r.Series, r.From, d))
		} else {
			libs = append(libs, fmt.Sprintf("%s (%s; not in Debian)", r.Library, r.From))
		}
	}
	var parts []string
	if len(crates) > 0 {
		parts = append(parts, fmt.Sprintf("Rust crates not in %s: %s — vendor them (cargo vendor on a networked machine) into a directory source", h.Registry, strings.Join(crates, ", ")))
	}
	if len(py) > 0 {
		parts = append(parts, fmt.Sprintf("Python packages for %s: %s", h.Python, strings.Join(py, ", ")))
	}
	if len(libs) > 0 {
		parts = append(parts, fmt.Sprintf("libraries not installed: %s — build and install them (getdeps.py in mvfst's tree)", strings.Join(libs, ", ")))
	}
	line := fmt.Sprintf("a live build of %s needs %s", e.what, strings.Join(parts, "; "))
	if e.note != "" {
		line += "; " + e.note
	}
	return line, true
}
