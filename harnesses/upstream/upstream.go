package upstream

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/migaudit/migaudit/data/mirrors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/migaudit/migaudit/audit/gitsrc"
	"github.com/migaudit/migaudit/data"
	"github.com/migaudit/migaudit/data/atomicfile"
)

// CacheEnv overrides the build cache directory.
const CacheEnv = "MIGAUDIT_BUILD_CACHE"

// Source is one repository at one commit.
type Source struct {
	// Impl names the code for messages and data.Lookup ("picoquic", "picotls").
	Impl string
	// Upstream is the repository URL ("https://github.com/h2o/picotls").
	Upstream string
	// Dir is a clone or bare mirror given by the user; "" resolves like audit.
	Dir string
	// Commit is a hash, short hash, tag or branch; "" = Impl's pinned commit
	// in data/implementations.json.
	Commit string
	// Dep marks a dependency (error messages then name --dep, not --source);
	// Ensure sets it for Recipe.Deps.
	Dep bool
}

// Recipe says how to build one implementation.
type Recipe struct {
	Impl string
	// Version is the recipe's own revision (bump it when Build changes).
	Version  string
	Src      Source
	Deps     map[string]Source
	Options  []string
	Files    map[string][]byte
	Tools    []string
	Packages []string
	Build    func(ctx context.Context, w *Workspace) error
	Outputs  []string
	// SkipSrc are tree prefixes of Src that are not exported (test data
	// the build never reads and a mirror may hold incompletely, e.g.
	// BoringSSL's crypto/cipher/test/); part of the key when set.
	SkipSrc []string
}

// Workspace is where Build runs.
type Workspace struct {
	SrcDir     string
	BuildDir   string
	FilesDir   string
	DepDirs    map[string]string
	Submodules map[string]string
	Options    []string
	Jobs       int
	Log        io.Writer

	logPath string
	mu      sync.Mutex
	extra   map[string]string // commits exported by Export
}

// Artifact is a finished build (build.json in its directory).
type Artifact struct {
	Impl     string            `json:"impl"`
	Key      string            `json:"key"`
	Dir      string            `json:"dir"`
	BuildDir string            `json:"build_dir"`
	Source   string            `json:"source"` // repository the commit was read from
	Commit   string            `json:"commit"`
	Deps     map[string]string `json:"deps,omitempty"` // name → commit (and name → source dir under "name.source")
	Options  []string          `json:"options"`
	Recipe   string            `json:"recipe_version"`
	Files    map[string]string `json:"files,omitempty"` // project file → sha256
	SHA256   map[string]string `json:"sha256"`          // output → sha256
	Tools    map[string]string `json:"tools,omitempty"` // tool or package → version line
	Built    time.Time         `json:"built"`
	Duration string            `json:"duration"`
	Log      string            `json:"log"`
	// Reused is true when this Ensure found the build in the cache.
	Reused bool `json:"-"`
}

// Path returns the absolute path of an output.
func (a *Artifact) Path(output string) string { return filepath.Join(a.BuildDir, output) }

// CacheRoot is $MIGAUDIT_BUILD_CACHE, else <user cache>/migaudit/build.
func CacheRoot() (string, error) {
	if d := os.Getenv(CacheEnv); d != "" {
		return d, nil
	}
	c, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no build cache directory: set %s or HOME: %w", CacheEnv, err)
	}
	return filepath.Join(c, "migaudit", "build"), nil
}

// resolved is a Source opened at its commit.
type resolved struct {
	src    Source
	repo   *gitsrc.Repo
	snap   *gitsrc.Snapshot
	commit string
}

// Open finds src's repository and resolves its commit, without network.
func Open(src Source) (*gitsrc.Snapshot, error) {
	r, err := resolve(src)
	if err != nil {
		return nil, err
	}
	return r.snap, nil
}

func resolve(src Source) (*resolved, error) {
	rev := src.Commit
	if rev == "" {
		im, err := data.Lookup(src.Impl)
		if err != nil {
			return nil, fmt.Errorf("%s: no --commit and no pinned commit: %w", src.Impl, err)
		}
		rev = im.Commit
		if src.Upstream == "" {
			src.Upstream = im.Upstream
		}
	}
	repo, err := locate(src)
	if err != nil {
		return nil, err
	}
	snap, err := repo.At(rev)
	if err != nil {
		return nil, fmt.Errorf("%s: commit %q not in %s (fetch it there, or pass --commit with a commit it has): %w", src.Impl, rev, repo.Dir, err)
	}
	return &resolved{src: src, repo: repo, snap: snap, commit: snap.Commit()}, nil
}

// locate opens src.Dir, else a mirror under $MIGAUDIT_MIRRORS, else a clone
// already in the user cache; it never clones.
func locate(src Source) (*gitsrc.Repo, error) {
	if src.Dir != "" {
		if _, err := os.Stat(src.Dir); err != nil {
			return nil, fmt.Errorf("%s source %s: %w", src.Impl, src.Dir, err)
		}
		return gitsrc.Open(src.Dir)
	}
	d, err := mirrors.Find(mirrors.WithCache(mirrors.Resolve("")), src.Upstream)
	if err == nil {
		return gitsrc.Open(d)
	}
	owner, name := gitsrc.OwnerName(src.Upstream)
	hint := "--source DIR"
	if src.Dep {
		hint = "--dep " + src.Impl + "=DIR"
	}
	return nil, fmt.Errorf("no source for %s (%s): %w; pass a clone or bare mirror with %s, or fetch it: git clone --mirror %s $%s/%s+%s/repo",
		src.Impl, src.Upstream, err, hint, src.Upstream, gitsrc.MirrorsEnv, owner, name)
}

// Debian package that provides a tool, for the error message.
var toolPackage = map[string]string{
	"cmake": "cmake", "cc": "gcc", "gcc": "gcc", "c++": "g++", "g++": "g++", "make": "make",
	"ninja": "ninja-build", "pkg-config": "pkg-config", "perl": "perl", "clang": "clang",
	"clang-19": "clang-19", "clang++-19": "clang-19",
}

// CheckTools verifies the executables and Debian packages a recipe needs and
// returns their version lines.
func CheckTools(ctx context.Context, tools, packages []string) (map[string]string, error) {
	out := map[string]string{}
	var missing []string
	for _, t := range tools {
		p, err := exec.LookPath(t)
		if err != nil {
			pkg := toolPackage[t]
			if pkg == "" {
				pkg = t
			}
			missing = append(missing, pkg)
			continue
		}
		v, _ := exec.CommandContext(ctx, p, "--version").Output()
		line, _, _ := strings.Cut(strings.TrimSpace(string(v)), "\n")
		out[t] = strings.TrimSpace(line)
	}
	for _, pkg := range packages {
		b, err := exec.CommandContext(ctx, "dpkg-query", "-W", "-f=${Status}|${Version}", pkg).Output()
		st, ver, _ := strings.Cut(string(b), "|")
		if err != nil || !strings.Contains(st, " installed") {
			missing = append(missing, pkg)
			continue
		}
		out[pkg] = ver
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		missing = dedupe(missing)
		return out, fmt.Errorf("missing build tools: %s; install with `apt-get install %s`", strings.Join(missing, ", "), strings.Join(missing, " "))
	}
	return out, nil
}

func dedupe(s []string) []string {
	var out []string
	for i, x := range s {
		if i == 0 || x != s[i-1] {
			out = append(out, x)
		}
	}
	return out
}

// Key computes the cache key of a recipe whose sources resolved to commit
// and deps (name → commit).
func Key(r Recipe, commit string, deps map[string]string) string {
	h := sha256.New()
	fmt.Fprintf(h, "impl=%s\nrecipe=%s\ncommit=%s\n", r.Impl, r.Version, commit)
	for _, n := range sortedKeys(deps) {
		fmt.Fprintf(h, "dep %s=%s\n", n, deps[n])
	}
	for _, o := range r.Options {
		fmt.Fprintf(h, "option %s\n", o)
	}
	for _, n := range sortedKeys(r.Files) {
		s := sha256.Sum256(r.Files[n])
		fmt.Fprintf(h, "file %s %x\n", n, s)
	}
	for _, p := range r.SkipSrc {
		fmt.Fprintf(h, "skip %s\n", p)
	}
	return hex.EncodeToString(h.Sum(nil))
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Ensure returns the build of r, reusing the cached one when its recorded
// outputs still match their sha256, else building it from a fresh export.
// Progress lines go to log (may be nil).
func Ensure(ctx context.Context, r Recipe, log io.Writer) (*Artifact, error) {
	if log == nil {
		log = io.Discard
	}
	if r.Build == nil || len(r.Outputs) == 0 {
		return nil, fmt.Errorf("%s: recipe has no build function or no outputs", r.Impl)
	}
	if r.Src.Impl == "" {
		r.Src.Impl = r.Impl
	}
	main, err := resolve(r.Src)
	if err != nil {
		return nil, err
	}
	deps := map[string]*resolved{}
	depCommits := map[string]string{}
	for _, n := range sortedKeys(r.Deps) {
		s := r.Deps[n]
		if s.Impl == "" {
			s.Impl = n
		}
		s.Dep = true
		d, err := resolve(s)
		if err != nil {
			return nil, fmt.Errorf("%s dependency: %w", r.Impl, err)
		}
		deps[n], depCommits[n] = d, d.commit
	}
	key := Key(r, main.commit, depCommits)
	root, err := CacheRoot()
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(root, r.Impl, main.commit[:12]+"-"+key[:12])
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("build cache %s: %w", dir, err)
	}
	unlock, err := lock(filepath.Join(dir, "lock"))
	if err != nil {
		return nil, err
	}
	defer unlock()

	if a, why := cached(dir, key); a != nil {
		a.Reused = true
		fmt.Fprintf(log, "%s %s: reusing the build in %s (sha256 of %d outputs match build.json)\n", r.Impl, short(a.Commit), dir, len(a.SHA256))
		return a, nil
	} else if why != "" {
		fmt.Fprintf(log, "%s %s: rebuilding in %s: %s\n", r.Impl, short(main.commit), dir, why)
	}

	tools, err := CheckTools(ctx, r.Tools, r.Packages)
	if err != nil {
		return nil, fmt.Errorf("build %s: %w", r.Impl, err)
	}
	for _, sub := range []string{"src", "deps", "files", "build"} {
		if err := os.RemoveAll(filepath.Join(dir, sub)); err != nil {
			return nil, err
		}
	}
	_ = os.Remove(filepath.Join(dir, "build.json"))
	logPath := filepath.Join(dir, "build.log")
	lf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer lf.Close()
	start := time.Now()
	w := &Workspace{
		SrcDir: filepath.Join(dir, "src"), BuildDir: filepath.Join(dir, "build"), FilesDir: filepath.Join(dir, "files"),
		DepDirs: map[string]string{}, Options: append([]string(nil), r.Options...), Jobs: runtime.NumCPU(), Log: lf,
		logPath: logPath, extra: map[string]string{},
	}
	fmt.Fprintf(log, "%s %s: exporting %s from %s into %s\n", r.Impl, short(main.commit), main.src.Impl, main.repo.Dir, w.SrcDir)
	if len(r.SkipSrc) == 0 {
		w.Submodules, err = main.snap.Export(w.SrcDir)
	} else {
		var skipped int
		w.Submodules, skipped, err = main.snap.ExportSkipping(w.SrcDir, r.SkipSrc)
		w.extra["src.skipped"] = fmt.Sprintf("%d files under %s", skipped, strings.Join(r.SkipSrc, ", "))
		fmt.Fprintf(lf, "exported %s %s, skipping %d files under %s\n", main.src.Impl, main.commit, skipped, strings.Join(r.SkipSrc, ", "))
	}
	if err != nil {
		return nil, err
	}
	if err := os.Mkdir(filepath.Join(dir, "deps"), 0o755); err != nil {
		return nil, err
	}
	for _, n := range sortedKeys(deps) {
		d := filepath.Join(dir, "deps", n)
		fmt.Fprintf(log, "%s: exporting %s %s from %s\n", r.Impl, n, short(deps[n].commit), deps[n].repo.Dir)
		if _, err := deps[n].snap.Export(d); err != nil {
			return nil, err
		}
		w.DepDirs[n] = d
	}
	if err := os.Mkdir(w.FilesDir, 0o755); err != nil {
		return nil, err
	}
	files := map[string]string{}
	for _, n := range sortedKeys(r.Files) {
		p := filepath.Join(w.FilesDir, filepath.FromSlash(n))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return nil, err
		}
		if err := os.WriteFile(p, r.Files[n], 0o644); err != nil {
			return nil, err
		}
		s := sha256.Sum256(r.Files[n])
		files[n] = hex.EncodeToString(s[:])
	}
	if err := os.Mkdir(w.BuildDir, 0o755); err != nil {
		return nil, err
	}
	fmt.Fprintf(log, "%s %s: building (log: %s)\n", r.Impl, short(main.commit), logPath)
	if err := r.Build(ctx, w); err != nil {
		return nil, fmt.Errorf("build %s %s: %w", r.Impl, short(main.commit), err)
	}
	a := &Artifact{Impl: r.Impl, Key: key, Dir: dir, BuildDir: w.BuildDir, Source: main.repo.Dir, Commit: main.commit,
		Deps: map[string]string{}, Options: append([]string{}, r.Options...), Recipe: r.Version, Files: files,
		SHA256: map[string]string{}, Tools: tools, Built: time.Now().UTC(), Duration: time.Since(start).Round(time.Second).String(), Log: logPath}
	for n, d := range deps {
		a.Deps[n] = d.commit
		a.Deps[n+".source"] = d.repo.Dir
	}
	for p, c := range w.extra {
		a.Deps[p] = c
	}
	for _, o := range r.Outputs {
		sum, err := fileSHA256(a.Path(o))
		if err != nil {
			return nil, fmt.Errorf("build %s %s: expected output %s: %w (see %s)", r.Impl, short(main.commit), o, err, logPath)
		}
		a.SHA256[o] = sum
	}
	if err := atomicfile.WriteJSON(filepath.Join(dir, "build.json"), a); err != nil {
		return nil, fmt.Errorf("record build: %w", err)
	}
	fmt.Fprintf(log, "%s %s: built in %s\n", r.Impl, short(main.commit), a.Duration)
	return a, nil
}

// cached returns the recorded build in dir when it is complete and every
// output still has its recorded sha256; else nil and why (or "" when there
// is no build yet).
func cached(dir, key string) (*Artifact, string) {
	b, err := os.ReadFile(filepath.Join(dir, "build.json"))
	if err != nil {
		return nil, ""
	}
	var a Artifact
	if err := json.Unmarshal(b, &a); err != nil {
		return nil, fmt.Sprintf("build.json unreadable (%v)", err)
	}
	if a.Key != key {
		return nil, "build.json records another key"
	}
	if len(a.SHA256) == 0 {
		return nil, "build.json records no outputs"
	}
	a.Dir = dir
	a.BuildDir = filepath.Join(dir, "build")
	for o, want := range a.SHA256 {
		got, err := fileSHA256(a.Path(o))
		if err != nil {
			return nil, fmt.Sprintf("output %s: %v", o, err)
		}
		if got != want {
			return nil, fmt.Sprintf("output %s has sha256 %s, build.json records %s", o, short(got), short(want))
		}
	}
	return &a, ""
}

func fileSHA256(p string) (string, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return "", err
	}
	if !st.Mode().IsRegular() || st.Size() == 0 {
		return "", fmt.Errorf("%s is empty or not a regular file", p)
	}
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func lock(path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return func() { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN); f.Close() }, nil
}

func short(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}

// Run runs a build command in dir with its output appended to the build log;
// a failure returns the command and the log's last lines.
func (w *Workspace) Run(ctx context.Context, dir, name string, args ...string) error {
	w.mu.Lock()
	fmt.Fprintf(w.Log, "\n$ (cd %s && %s %s)\n", dir, name, strings.Join(args, " "))
	w.mu.Unlock()
	var tail tailBuffer
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	out := io.MultiWriter(w.Log, &tail)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("%s %s: %w; last output: %s (full log %s)", filepath.Base(name), firstArg(args), err, tail.last(), w.logPath)
	}
	return nil
}

func firstArg(a []string) string {
	if len(a) == 0 {
		return ""
	}
	return a[0]
}

// Export writes another repository's tree (for example a submodule's pinned
// commit from its own mirror) into dst and records its commit in the
// artifact's Deps under dst's path relative to the workspace.
func (w *Workspace) Export(src Source, dst string) (string, error) { return w.export(src, dst, nil) }

// tailBuffer keeps the last few lines written to it.
type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > 8192 {
		t.buf = t.buf[len(t.buf)-8192:]
	}
	t.mu.Unlock()
	return len(p), nil
}

// last returns the last three error lines of the output kept (a compiler's
// "error:", CMake's "CMake Error"), else its last three lines: make's own
// closing lines ("*** [...] Error 2") only say that something failed.
func (t *tailBuffer) last() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	lines := strings.Split(strings.TrimSpace(string(t.buf)), "\n")
	pick := func(want func(string) bool) []string {
		var keep []string
		for i := len(lines) - 1; i >= 0 && len(keep) < 3; i-- {
			if l := strings.TrimSpace(lines[i]); l != "" && want(l) {
				keep = append([]string{l}, keep...)
			}
		}
		return keep
	}
	keep := pick(func(l string) bool {
		return strings.Contains(l, "error:") || strings.Contains(l, "CMake Error") || strings.Contains(l, "undefined reference")
	})
	if len(keep) == 0 {
		keep = pick(func(string) bool { return true })
	}
	return strings.Join(keep, " | ")
}

// Options are the command line's choices for a harness built from source.
type Options struct {
	Source string            // --source: clone or bare mirror of the implementation
	Commit string            // --commit: "" = pinned
	Deps   map[string]string // --dep name=DIR
}

// Configurable is implemented by harnesses built from an upstream checkout;
// `migaudit run` calls ConfigureUpstream before Check.
type Configurable interface {
	ConfigureUpstream(o Options) error
}

// SystemPackager is implemented by harnesses that can run a distribution's
// package instead of a build from a checkout; `migaudit run --system` calls
// UseSystemPackage before ConfigureUpstream.
type SystemPackager interface {
	UseSystemPackage() error
}

// Instrumentable is implemented by harnesses with an instrumented build
// (`migaudit run --instrument`): a patch of this project's own applied to
// the exported copy in the build cache, with its own cache key.
type Instrumentable interface {
	SetInstrumented(on bool) error
}

// ParseDeps parses --dep flags "name=DIR".
func ParseDeps(flags []string) (map[string]string, error) {
	out := map[string]string{}
	for _, f := range flags {
		n, d, ok := strings.Cut(f, "=")
		n, d = strings.TrimSpace(n), strings.TrimSpace(d)
		if !ok || n == "" || d == "" {
			return nil, fmt.Errorf("--dep %q: want name=DIR (e.g. --dep picotls=/src/picotls)", f)
		}
		if _, dup := out[n]; dup {
			return nil, fmt.Errorf("--dep %s given twice", n)
		}
		out[n] = d
	}
	return out, nil
}

// CheckDeps rejects --dep names a harness does not use.
func CheckDeps(impl string, deps map[string]string, known ...string) error {
	for n := range deps {
		found := false
		for _, k := range known {
			found = found || k == n
		}
		if !found {
			if len(known) == 0 {
				return fmt.Errorf("--dep %s: %s has no dependencies built from source", n, impl)
			}
			return fmt.Errorf("--dep %s: %s's dependencies are %s", n, impl, strings.Join(known, ", "))
		}
	}
	return nil
}

// IsNoSource reports whether err says a repository could not be found (the
// condition under which tests skip).
func IsNoSource(err error) bool { return errors.Is(err, mirrors.ErrNoSource) }

// LineWriter is an io.Writer that hands each line written to it to a
// function (a harness's build-progress log).
type LineWriter func(string)

func (w LineWriter) Write(p []byte) (int, error) {
	for _, l := range strings.Split(strings.TrimRight(string(p), "\n"), "\n") {
		w(l)
	}
	return len(p), nil
}

// ToolsLine is the build's tools and packages as "name=version; …",
// sorted, for a manifest.
func (a *Artifact) ToolsLine() string {
	var tools []string
	for k, v := range a.Tools {
		tools = append(tools, k+"="+v)
	}
	sort.Strings(tools)
	return strings.Join(tools, "; ")
}
