package quinn

import (
	"bytes"
	"context"
	_ "embed"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"

	"github.com/migaudit/migaudit/harnesses/upstream"
)

//go:embed rust/Cargo.toml
var cargoToml []byte

//go:embed rust/src/main.rs
var mainRS []byte

const (
	// Upstream is quinn's repository.
	Upstream = "https://github.com/quinn-rs/quinn"
	// DebianTag is the quinn tag whose crates Debian packages: quinn 0.9.3
	// with quinn-proto 0.9.2 and quinn-udp 0.3.2 (tag 0.9.3's Cargo.toml
	// files). The build compares Debian's crate sources with this commit's
	// tree and records the result.
	DebianTag = "0.9.3"
	// RecipeVersion changes when the build steps below change.
	RecipeVersion = "quinn-2"
	// Binary is the harness executable inside the build directory (cargo's
	// target directory is there).
	Binary = "target/release/quinn-harness"
	// Lockfile is the Cargo.lock of the build: the crate versions linked.
	Lockfile = "Cargo.lock"
	// SourceCheck is the comparison of Debian's crate sources with the commit.
	SourceCheck = "debian-vs-commit.txt"
)

// DebianRegistry is where Debian's librust-*-dev packages put crate sources;
// cargo reads it as a directory source, offline.
var DebianRegistry = "/usr/share/cargo/registry"

// Packages are the Debian packages the build needs (their dependencies come
// with them); their versions are part of the cache key.
var Packages = []string{"librust-quinn-dev", "librust-rustls-dev", "librust-rustls-pemfile-dev", "librust-tokio-dev"}

// crates maps the quinn crates Debian ships to their directory in quinn's
// tree, for the source comparison.
var crates = map[string]string{"quinn": "quinn", "quinn-proto": "quinn-proto", "quinn-udp": "quinn-udp"}

// Recipe builds the harness (rust/) against Debian's crates. o.Source and
// o.Commit choose the quinn tree the crates are compared with (default: tag
// DebianTag in $MIGAUDIT_MIRRORS).
func Recipe(ctx context.Context, o upstream.Options) (upstream.Recipe, error) {
	versions, err := upstream.CheckTools(ctx, []string{"cargo", "rustc"}, Packages)
	if err != nil {
		return upstream.Recipe{}, fmt.Errorf("quinn harness: %w (Debian's quinn 0.9.3 and its dependencies as Rust source)", err)
	}
	commit := o.Commit
	if commit == "" {
		commit = DebianTag
	}
	opts := []string{"cargo:build --release --offline", "registry:" + DebianRegistry}
	for _, p := range Packages {
		opts = append(opts, "deb:"+p+"="+versions[p])
	}
	return upstream.Recipe{
		Impl: "quinn", Version: RecipeVersion,
		Src:      upstream.Source{Impl: "quinn", Upstream: Upstream, Dir: o.Source, Commit: commit},
		Options:  opts,
		Files:    map[string][]byte{"Cargo.toml": cargoToml, "src/main.rs": mainRS},
		Tools:    []string{"cargo", "rustc"},
		Packages: Packages,
		Build:    build,
		Outputs:  []string{Binary, Lockfile, SourceCheck},
	}, nil
}

// cargoConfig points crates-io at Debian's registry, offline.
func cargoConfig(registry string) string {
	return fmt.Sprintf("[source.crates-io]\nreplace-with = \"debian\"\n[source.debian]\ndirectory = %q\n[net]\noffline = true\n", registry)
}

func build(ctx context.Context, w *upstream.Workspace) error {
	home := filepath.Join(w.BuildDir, "cargo-home")
	if err := os.MkdirAll(home, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(cargoConfig(DebianRegistry)), 0o644); err != nil {
		return err
	}
	target := filepath.Join(w.BuildDir, "target")
	if err := w.Run(ctx, w.FilesDir, "env", "CARGO_HOME="+home, "CARGO_TARGET_DIR="+target,
		"cargo", "build", "--release", "--offline", "--manifest-path", filepath.Join(w.FilesDir, "Cargo.toml")); err != nil {
		return fmt.Errorf("cargo build of harnesses/quinn/rust against %s: %w", DebianRegistry, err)
	}
	lock, err := os.ReadFile(filepath.Join(w.FilesDir, Lockfile))
	if err != nil {
		return fmt.Errorf("cargo wrote no %s: %w", Lockfile, err)
	}
	if err := os.WriteFile(filepath.Join(w.BuildDir, Lockfile), lock, 0o644); err != nil {
		return err
	}
	linked, err := LockedVersions(lock)
	if err != nil {
		return err
	}
	var report bytes.Buffer
	for _, c := range sortedNames(crates) {
		v, ok := linked[c]
		if !ok {
			return fmt.Errorf("%s does not link %s", Lockfile, c)
		}
		diff, err := CompareTrees(filepath.Join(DebianRegistry, c+"-"+v, "src"), filepath.Join(w.SrcDir, crates[c], "src"))
		if err != nil {
			return err
		}
		if len(diff) == 0 {
			fmt.Fprintf(&report, "%s %s: src/ identical to the commit's %s/src\n", c, v, crates[c])
		} else {
			fmt.Fprintf(&report, "%s %s: src/ differs from the commit's %s/src in %d files: %s\n", c, v, crates[c], len(diff), strings.Join(diff, ", "))
		}
	}
	return os.WriteFile(filepath.Join(w.BuildDir, SourceCheck), report.Bytes(), 0o644)
}

// LockedVersions reads a Cargo.lock's package versions (name → version; the
// Debian registry holds one version of each crate).
func LockedVersions(lock []byte) (map[string]string, error) {
	// Cargo writes each [[package]] as `name = "…"` then `version = "…"`.
	// The file's own `version = 3` stands before the first [[package]].
	out := map[string]string{}
	name, inPackage := "", false
	for i, line := range strings.Split(string(lock), "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), " = ")
		switch {
		case strings.HasPrefix(strings.TrimSpace(line), "["):
			name, inPackage = "", strings.TrimSpace(line) == "[[package]]"
		case !inPackage || !ok:
		case k == "name":
			name = strings.Trim(v, `"`)
		case k == "version" && name != "":
			out[name] = strings.Trim(v, `"`)
		case k == "version":
			return nil, fmt.Errorf("%s line %d: version before name", Lockfile, i+1)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s names no packages", Lockfile)
	}
	return out, nil
}

// CompareTrees lists the files (relative, slash-separated) that differ
// between two directories or exist in only one.
func CompareTrees(a, b string) ([]string, error) {
	read := func(root string) (map[string][]byte, error) {
		files := map[string][]byte{}
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			rel, _ := filepath.Rel(root, p)
			b, err := os.ReadFile(p)
			files[filepath.ToSlash(rel)] = b
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("compare sources: %w", err)
		}
		return files, nil
	}
	fa, err := read(a)
	if err != nil {
		return nil, err
	}
	fb, err := read(b)
	if err != nil {
		return nil, err
	}
	var diff []string
	for n, x := range fa {
		if y, ok := fb[n]; !ok || !bytes.Equal(x, y) {
			diff = append(diff, n)
		}
	}
	for n := range fb {
		if _, ok := fa[n]; !ok {
			diff = append(diff, n)
		}
	}
	sort.Strings(diff)
	return diff, nil
}

func sortedNames(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Ensure builds (or reuses) the harness for o.
func Ensure(ctx context.Context, o upstream.Options, log io.Writer) (*upstream.Artifact, error) {
	r, err := Recipe(ctx, o)
	if err != nil {
		return nil, err
	}
	return upstream.Ensure(ctx, r, log)
}

// version runs the binary's version subcommand.
func version(ctx context.Context, bin string) (string, error) {
	out, err := exec.CommandContext(ctx, bin, "version").Output()
	if err != nil {
		return "", fmt.Errorf("quinn harness %s version: %w", bin, err)
	}
	return strings.TrimSpace(string(out)), nil
}
