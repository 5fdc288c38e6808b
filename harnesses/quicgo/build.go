package quicgo

import (
	"context"
	_ "embed"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/migaudit/migaudit/audit/gitsrc"
	"github.com/migaudit/migaudit/harnesses/upstream"
)

// The harness program's sources, embedded so that a `go install`ed migaudit
// with no source tree can build it against any quic-go checkout: the
// client and server code of this package as it is compiled into migaudit,
// and, from standalone/, a main with the standard flag package, the
// certificate loader and the qlog tracer for quic-go before qlogwriter.
var (
	//go:embed proc.go
	srcProc []byte
	//go:embed client.go
	srcClient []byte
	//go:embed tls.go
	srcTLS []byte
	//go:embed qlog.go
	srcQlog []byte
	//go:embed standalone/main.go.txt
	srcMain []byte
	//go:embed standalone/selfsigned.go.txt
	srcSelfSigned []byte
	//go:embed standalone/qlog_legacy.go.txt
	srcQlogLegacy []byte
)

const (
	// Upstream is quic-go's repository.
	Upstream = "https://github.com/quic-go/quic-go"
	// RecipeVersion is part of the build-cache key: bump it when Build changes.
	RecipeVersion = "quic-go-1"
	// OutHarness is the harness program inside the build directory.
	OutHarness = "quicgo-harness"
	// harnessModule is the generated module's path.
	harnessModule = "migaudit.local/quicgoharness"
)

var reModule = regexp.MustCompile(`(?m)^module\s+(\S+)`)

// CheckModule says whether a tree's go.mod is quic-go's; the error is one
// line naming what was found.
func CheckModule(read func(string) ([]byte, error), commit, dir string) error {
	b, err := read("go.mod")
	if err != nil {
		return fmt.Errorf("quic-go checkout %s at %s is not a Go module (no go.mod): pass --source with a clone or mirror of %s", dir, short(commit), Upstream)
	}
	m := reModule.FindSubmatch(b)
	if m == nil || string(m[1]) != "github.com/quic-go/quic-go" {
		got := "no module line"
		if m != nil {
			got = "module " + string(m[1])
		}
		return fmt.Errorf("checkout %s at %s is not quic-go (its go.mod says %s, want module github.com/quic-go/quic-go): pass --source with a clone or mirror of %s", dir, short(commit), got, Upstream)
	}
	return nil
}

// NewRecipe resolves quic-go at o.Commit (default: the pin) and returns the
// recipe that builds the harness program against it.
func NewRecipe(o upstream.Options) (upstream.Recipe, error) {
	if err := upstream.CheckDeps("quic-go", o.Deps); err != nil {
		return upstream.Recipe{}, err
	}
	src := upstream.Source{Impl: "quic-go", Upstream: Upstream, Dir: o.Source, Commit: o.Commit}
	snap, err := upstream.Open(src)
	if err != nil {
		return upstream.Recipe{}, err
	}
	if err := CheckModule(snap.ReadFile, snap.Commit(), snap.Dir()); err != nil {
		return upstream.Recipe{}, err
	}
	qlogSrc, qlogKind := srcQlog, "qlogwriter"
	if _, err := snap.ReadFile("qlogwriter/writer.go"); err != nil {
		if fs, _ := snap.Files("qlogwriter/*.go"); len(fs) == 0 {
			qlogSrc, qlogKind = srcQlogLegacy, "qlog+logging (before qlogwriter)"
		}
	}
	src.Commit = snap.Commit()
	modVer := ModuleVersion(Describe(snap.Repo(), snap.Commit()), snap.Time(), snap.Commit())
	return upstream.Recipe{
		Impl: "quic-go", Version: RecipeVersion, Src: src,
		Options: []string{"go build -trimpath", "qlog=" + qlogKind, "module-version=" + modVer},
		Files: map[string][]byte{
			"main.go": srcMain, "harness/proc.go": srcProc, "harness/client.go": srcClient, "harness/tls.go": srcTLS,
			"harness/qlog.go": qlogSrc, "harness/selfsigned.go": srcSelfSigned,
		},
		Tools: []string{"go"},
		Build: func(ctx context.Context, w *upstream.Workspace) error {
			return buildHarness(ctx, w, modVer)
		},
		Outputs: []string{OutHarness},
	}, nil
}

// buildHarness writes the generated go.mod (quic-go replaced by the
// exported checkout), resolves quic-go's own requirements (the module
// proxy, or the module cache) and builds the program.
func buildHarness(ctx context.Context, w *upstream.Workspace, modVer string) error {
	goVer := "1.23"
	if b, err := os.ReadFile(filepath.Join(w.SrcDir, "go.mod")); err == nil {
		if m := regexp.MustCompile(`(?m)^go\s+(\S+)`).FindSubmatch(b); m != nil {
			goVer = string(m[1])
		}
	}
	mod := fmt.Sprintf("module %s\n\ngo %s\n\nrequire github.com/quic-go/quic-go %s\n\nreplace github.com/quic-go/quic-go => %s\n", harnessModule, goVer, modVer, w.SrcDir)
	if err := os.WriteFile(filepath.Join(w.FilesDir, "go.mod"), []byte(mod), 0o644); err != nil {
		return err
	}
	if err := w.Run(ctx, w.FilesDir, "go", "mod", "tidy"); err != nil {
		return fmt.Errorf("resolve quic-go's requirements (go mod tidy; needs the module proxy or a module cache holding them): %w", err)
	}
	if err := w.Run(ctx, w.FilesDir, "go", "build", "-trimpath", "-o", filepath.Join(w.BuildDir, OutHarness), "."); err != nil {
		return fmt.Errorf("build the quic-go harness against the checkout: %w", err)
	}
	return nil
}

// Describe names a commit after the newest tag on its first-parent chain,
// like git describe --first-parent: "v0.61.0-8-g2cfe6ee0b5ac" (or
// "v0.61.0" on the tag); the short hash when no tag is within 5000 commits.
func Describe(repo *gitsrc.Repo, commit string) string {
	tags, err := repo.Tags()
	if err != nil {
		return short(commit)
	}
	byCommit := map[string]string{}
	for _, t := range tags {
		if strings.HasPrefix(t.Name, "v") {
			byCommit[t.Commit] = t.Name
		}
	}
	chain, err := repo.FirstParentChain(commit, 5000)
	if err != nil {
		return short(commit)
	}
	for i, c := range chain {
		if name, ok := byCommit[c]; ok {
			if i == 0 {
				return name
			}
			return fmt.Sprintf("%s-%d-g%s", name, i, short(commit))
		}
	}
	return short(commit)
}

var reDescribe = regexp.MustCompile(`^v(\d+)\.(\d+)\.(\d+)-\d+-g[0-9a-f]+$`)

// ModuleVersion is the version the generated go.mod requires quic-go at,
// so that the binary's build information and quic-go's qlog code_version
// name the commit: the tag itself on a tag, else Go's pseudo-version after
// the nearest tag (v0.61.1-0.20260807083352-2cfe6ee0b5ac), else one after
// v0.0.0.
func ModuleVersion(describe string, when time.Time, commit string) string {
	if strings.HasPrefix(describe, "v") && !strings.Contains(describe, "-g") {
		return describe
	}
	stamp := when.UTC().Format("20060102150405")
	if m := reDescribe.FindStringSubmatch(describe); m != nil {
		patch, _ := strconv.Atoi(m[3])
		return fmt.Sprintf("v%s.%s.%d-0.%s-%s", m[1], m[2], patch+1, stamp, short(commit))
	}
	return fmt.Sprintf("v0.0.0-%s-%s", stamp, short(commit))
}

func short(c string) string {
	if len(c) > 12 {
		return c[:12]
	}
	return c
}

// Ensure builds (or reuses) the harness program for o.
func Ensure(ctx context.Context, o upstream.Options, log io.Writer) (*upstream.Artifact, error) {
	r, err := NewRecipe(o)
	if err != nil {
		return nil, err
	}
	return upstream.Ensure(ctx, r, log)
}

func buildSettings(a *upstream.Artifact, version string) map[string]string {
	s := map[string]string{
		"build":           "from-checkout",
		"upstream_commit": a.Commit,
		"live_commit":     a.Commit,
		"upstream_source": a.Source,
		"quic_go_version": version,
		"build_options":   strings.Join(a.Options, " "),
		"build_dir":       a.Dir,
		"build_recipe":    a.Recipe,
		"build_duration":  a.Duration,
	}
	s["build_tools"] = a.ToolsLine()
	return s
}
