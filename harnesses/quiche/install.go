package quiche

import (
	"bytes"
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/migaudit/migaudit/data/atomicfile"
	"github.com/migaudit/migaudit/harnesses/run"
)

// The pinned native binding. The lockfile pins the npm tarball by its
// sha512 integrity; NativeSHA256 pins the one file that matters inside it,
// checked before every run.
const (
	// Package is the npm package that ships quiche 0.18.0 as a Node-API module.
	Package = "@matrixai/quic-linux-x64"
	// PackageVersion is the exact version package-lock.json pins.
	PackageVersion = "2.0.9"
	// PackageIntegrity is the registry's sha512 of the 2.0.9 tarball
	// (`npm view @matrixai/quic-linux-x64@2.0.9 dist.integrity`).
	PackageIntegrity = "sha512-2m2mBp2c+qdlh3mBbHT7iHqLGPksFJGxxKWcJRJXiHUnyeh9M5gMXia2bWc7VXty0n6eGZak4txD8CPaeINDRQ=="
	// NativeFile is the module inside the package.
	NativeFile = "node.napi.node"
	// NativeSHA256 is the sha256 of node.napi.node from the 2.0.9 tarball.
	NativeSHA256 = "05dc4adc80f820d0afea2ff17221f37781e5468e245c46f92722584fd20515a8"
	// QuicheVersion is the quiche release the module was built from (its
	// embedded panic paths read .../quiche-0.18.0/src/...).
	QuicheVersion = "0.18.0"
	// MinNodeMajor is the oldest Node.js the harness is run with.
	MinNodeMajor = 20
)

// InstallCommand is what a user (or CI) runs to install the pinned binding.
func InstallCommand(dir string) string {
	return fmt.Sprintf("cd %s && npm ci --no-audit --no-fund", dir)
}

//go:embed harness.js package.json package-lock.json
var embedded embed.FS

var embeddedNames = []string{"harness.js", "package.json", "package-lock.json"}

// moduleLine identifies this repository's go.mod.
const moduleLine = "module github.com/migaudit/migaudit"

// FindDir returns the harness folder: the repository's harnesses/quiche when
// the working directory is inside a checkout (so `npm ci` runs where the
// lockfile is committed), else a per-user cache directory holding the copies
// embedded in this binary.
func FindDir() (string, error) {
	if wd, err := os.Getwd(); err == nil {
		for d := wd; ; d = filepath.Dir(d) {
			b, err := os.ReadFile(filepath.Join(d, "go.mod"))
			if err == nil && bytes.Contains(b, []byte(moduleLine+"\n")) {
				hd := filepath.Join(d, "harnesses", "quiche")
				if _, err := os.Stat(filepath.Join(hd, "package-lock.json")); err == nil {
					return hd, nil
				}
				break
			}
			if filepath.Dir(d) == d {
				break
			}
		}
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("quiche harness: no repository checkout above the working directory and no user cache directory: %w", err)
	}
	h := sha256.New()
	for _, n := range embeddedNames {
		b, _ := embedded.ReadFile(n)
		h.Write(b)
	}
	dir := filepath.Join(cache, "migaudit", "quiche-harness-"+hex.EncodeToString(h.Sum(nil))[:12])
	if err := materialise(dir); err != nil {
		return "", err
	}
	return dir, nil
}

// materialise writes the embedded harness files into dir (atomically, only
// when missing or different).
func materialise(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("quiche harness: %w", err)
	}
	for _, n := range embeddedNames {
		want, _ := embedded.ReadFile(n)
		p := filepath.Join(dir, n)
		if have, err := os.ReadFile(p); err == nil && bytes.Equal(have, want) {
			continue
		}
		if err := atomicfile.Write(p, want); err != nil {
			return fmt.Errorf("quiche harness: %w", err)
		}
	}
	return nil
}

// NativePath is where npm ci puts the binding inside dir.
func NativePath(dir string) string {
	return filepath.Join(dir, "node_modules", filepath.FromSlash(Package), NativeFile)
}

var nodeVersionRE = regexp.MustCompile(`^v(\d+)\.(\d+)\.(\d+)`)

// NodeVersion runs `node --version` and checks the major version.
func NodeVersion(ctx context.Context, node string) (string, error) {
	out, err := exec.CommandContext(ctx, node, "--version").Output()
	if err != nil {
		return "", fmt.Errorf("quiche harness: %s --version: %w", node, err)
	}
	v := strings.TrimSpace(string(out))
	m := nodeVersionRE.FindStringSubmatch(v)
	if m == nil {
		return "", fmt.Errorf("quiche harness: %s --version printed %q, not a Node.js version", node, v)
	}
	if major, _ := strconv.Atoi(m[1]); major < MinNodeMajor {
		return "", fmt.Errorf("quiche harness: Node.js %s is too old; the binding needs Node.js >= %d (Node-API 8)", v, MinNodeMajor)
	}
	return v, nil
}

// checkLock verifies that dir's package-lock.json pins the binding by the
// exact version and integrity this code expects.
func checkLock(dir string) error {
	p := filepath.Join(dir, "package-lock.json")
	b, err := os.ReadFile(p)
	if err != nil {
		return fmt.Errorf("quiche harness: %w", err)
	}
	var lock struct {
		Packages map[string]struct {
			Version   string `json:"version"`
			Integrity string `json:"integrity"`
		} `json:"packages"`
	}
	if err := json.Unmarshal(b, &lock); err != nil {
		return fmt.Errorf("quiche harness: %s: %w", p, err)
	}
	e, ok := lock.Packages["node_modules/"+Package]
	if !ok {
		return fmt.Errorf("quiche harness: %s does not pin %s", p, Package)
	}
	if e.Version != PackageVersion || e.Integrity != PackageIntegrity {
		return fmt.Errorf("quiche harness: %s pins %s %s (%s), expected %s (%s)", p, Package, e.Version, e.Integrity, PackageVersion, PackageIntegrity)
	}
	return nil
}

// Install makes sure the pinned binding is present in dir, running
// `npm ci` when it is not, and returns the verified native module. It never
// runs npm when the module is already there and matches its pin.
func Install(ctx context.Context, dir string, log func(string)) (run.Binary, error) {
	if err := checkLock(dir); err != nil {
		return run.Binary{}, err
	}
	native := NativePath(dir)
	if _, err := os.Stat(native); errors.Is(err, os.ErrNotExist) {
		npm, lerr := exec.LookPath("npm")
		if lerr != nil {
			return run.Binary{}, fmt.Errorf("quiche harness: %s is not installed and npm is not on PATH; install Node.js %d+ with npm (apt-get install nodejs npm), then run: %s", native, MinNodeMajor, InstallCommand(dir))
		}
		if log != nil {
			log("installing the pinned quiche binding: " + InstallCommand(dir))
		}
		cmd := exec.CommandContext(ctx, npm, "ci", "--no-audit", "--no-fund")
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err != nil {
			return run.Binary{}, fmt.Errorf("quiche harness: `%s` failed: %v: %s", InstallCommand(dir), err, lastLine(out))
		}
	}
	return VerifyNative(dir)
}

// VerifyNative checks the installed binding against its pins.
func VerifyNative(dir string) (run.Binary, error) {
	native := NativePath(dir)
	st, err := os.Stat(native)
	if err != nil {
		return run.Binary{}, fmt.Errorf("quiche harness: %w; run: %s", err, InstallCommand(dir))
	}
	if st.Size() == 0 {
		return run.Binary{}, fmt.Errorf("quiche harness: %s is zero bytes long (an interrupted install); remove %s and run: %s", native, filepath.Join(dir, "node_modules"), InstallCommand(dir))
	}
	sum, err := run.SHA256File(native)
	if err != nil {
		return run.Binary{}, err
	}
	if sum != NativeSHA256 {
		return run.Binary{}, fmt.Errorf("quiche harness: %s has sha256 %s, expected %s (%s@%s); remove %s and run: %s", native, sum, NativeSHA256, Package, PackageVersion, filepath.Join(dir, "node_modules"), InstallCommand(dir))
	}
	pj, err := os.ReadFile(filepath.Join(filepath.Dir(native), "package.json"))
	if err != nil {
		return run.Binary{}, fmt.Errorf("quiche harness: %w", err)
	}
	var meta struct {
		Version string `json:"version"`
	}
	if err := json.Unmarshal(pj, &meta); err != nil || meta.Version != PackageVersion {
		return run.Binary{}, fmt.Errorf("quiche harness: installed %s is version %q, expected %s; run: %s", Package, meta.Version, PackageVersion, InstallCommand(dir))
	}
	return run.Binary{
		Role: "client+server (native module)", Path: native, Size: st.Size(), SHA256: sum,
		Version:       "quiche " + QuicheVersion + " via " + Package + "@" + PackageVersion,
		VersionSource: "package.json version + sha256 pinned in harnesses/quiche/install.go; quiche version from the module's embedded source paths (quiche-0.18.0/src)",
	}, nil
}

func lastLine(b []byte) string {
	s := strings.TrimSpace(string(b))
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	return s
}
