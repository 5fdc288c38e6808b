package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"syscall"
)

const (
	coreName = "migaudit-core"
	corePkg  = "github.com/migaudit/migaudit/cmd/migaudit-core"
)

// execCore replaces this process with migaudit-core running args, found in
// this order:
//
//  1. $MIGAUDIT_CORE, when set (a path to the executable);
//  2. migaudit-core beside this executable (symbolic links resolved), as
//     `go build -o DIR/ ./cmd/...` and `go install ./cmd/...` leave it;
//  3. when this executable is one `go run` built (it lives in the build
//     cache or a go-build directory), the core built by `go build` from
//     the same module into the user cache directory: the checkout in the
//     working directory for a development build, or the same module
//     version for `go run …/cmd/migaudit@VERSION`. (Not `go run` of the
//     core: that would print its own "exit status N" line and turn every
//     failing status into 1.)
//
// It never looks the core up on $PATH: a core from another build could
// answer with other rules. It returns only when the core cannot be run.
func execCore(args []string) error {
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("locate this executable to find %s beside it: %w", coreName, err)
	}
	if p, err := filepath.EvalSymlinks(self); err == nil {
		self = p
	}
	r, err := coreCommand(self, args, os.Getenv("MIGAUDIT_CORE"), exec.LookPath)
	if err != nil {
		return err
	}
	if r.pkg != "" {
		if err := r.build(); err != nil {
			return err
		}
	}
	if err := syscall.Exec(r.path, r.argv, os.Environ()); err != nil {
		return fmt.Errorf("run %s: %w", r.path, err)
	}
	return nil
}

// coreRun is how execCore runs the core: the executable and its argv, and,
// when pkg is set, the package goTool must build into path first.
type coreRun struct {
	path        string
	argv        []string
	goTool, pkg string
}

// coreCommand decides what execCore runs. self is this executable's path,
// env the value of $MIGAUDIT_CORE.
func coreCommand(self string, args []string, env string, lookPath func(string) (string, error)) (coreRun, error) {
	run := func(path string) coreRun { return coreRun{path: path, argv: append([]string{path}, args...)} }
	if env != "" {
		if err := isExecutable(env); err != nil {
			return coreRun{}, fmt.Errorf("MIGAUDIT_CORE=%s: %w", env, err)
		}
		return run(env), nil
	}
	beside := filepath.Join(filepath.Dir(self), coreName)
	besideErr := isExecutable(beside)
	if besideErr == nil {
		return run(beside), nil
	}
	if builtByGoRun(self) {
		goTool, err := lookPath("go")
		if err != nil {
			return coreRun{}, fmt.Errorf("%s was built by `go run` but the go command is not on PATH to build %s: %w", self, coreName, err)
		}
		cache, err := os.UserCacheDir()
		if err != nil {
			return coreRun{}, fmt.Errorf("%s was built by `go run`: a directory to build %s into: %w", self, coreName, err)
		}
		pkg := corePkg
		if v := mainVersion(); v != "" && v != "(devel)" {
			pkg += "@" + v
		}
		r := run(filepath.Join(cache, "migaudit", "go-run", coreName))
		r.goTool, r.pkg = goTool, pkg
		return r, nil
	}
	what := "this command"
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		what = fmt.Sprintf("%q", args[0])
	}
	return coreRun{}, fmt.Errorf("%s is run by %s, which is not beside this executable (%s: %v): build both into one directory with go build -o DIR/ ./cmd/... (or go install ./cmd/...), or set MIGAUDIT_CORE to its path",
		what, coreName, beside, besideErr)
}

// build runs `go build` of r.pkg to write r.path: into a file of its own
// first, then renamed over r.path, so that two migaudit processes started
// by go run at once never execute a half-written core.
func (r coreRun) build() error {
	if err := os.MkdirAll(filepath.Dir(r.path), 0o755); err != nil {
		return fmt.Errorf("build %s: %w", coreName, err)
	}
	tmp := fmt.Sprintf("%s.%d.tmp", r.path, os.Getpid())
	defer os.Remove(tmp)
	cmd := exec.Command(r.goTool, "build", "-o", tmp, r.pkg)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("build %s: go build %s: %w", coreName, r.pkg, err)
	}
	if err := os.Rename(tmp, r.path); err != nil {
		return fmt.Errorf("build %s: %w", coreName, err)
	}
	return nil
}

// isExecutable reports why path is not a regular file someone may execute.
func isExecutable(path string) error {
	st, err := os.Stat(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return errors.New("no such file")
		}
		return err
	}
	if !st.Mode().IsRegular() || st.Mode().Perm()&0o111 == 0 {
		return fmt.Errorf("not an executable file (mode %v)", st.Mode())
	}
	return nil
}

// builtByGoRun reports whether path is where `go run` puts the executable
// it builds: in the build cache, GOCACHE/XX/<64 hex digits>-d/NAME (Go 1.24
// on), or in a temporary directory, go-buildNNN/bNNN/exe/NAME.
func builtByGoRun(path string) bool {
	dir := filepath.Dir(path)
	if h, ok := strings.CutSuffix(filepath.Base(dir), "-d"); ok && len(h) == 64 && isHex(h) {
		up := filepath.Base(filepath.Dir(dir))
		return len(up) == 2 && isHex(up) && up == h[:2]
	}
	if filepath.Base(dir) != "exe" {
		return false
	}
	for d := filepath.Dir(dir); d != filepath.Dir(d); d = filepath.Dir(d) {
		if strings.HasPrefix(filepath.Base(d), "go-build") {
			return true
		}
	}
	return false
}

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// mainVersion is this executable's module version: "(devel)" for a build
// from a checkout, "v1.2.3" for `go run …@v1.2.3`.
func mainVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		return bi.Main.Version
	}
	return ""
}
