package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestBuiltByGoRun(t *testing.T) {
	tests := []struct {
		path string
		want bool
	}{
		{"/tmp/go-build1234/b001/exe/migaudit", true},
		{"/var/tmp/x/go-build99/b042/exe/migaudit", true},
		{"/usr/local/bin/migaudit", false},
		{"/home/u/go/bin/migaudit", false},
		{"/tmp/exe/migaudit", false},
		{"/tmp/go-build1/b001/migaudit", false},
		{"/root/.cache/go-build/19/19cd18d1f3c3312eb0dfb6e8eaea9993eca7b0af899973d7e88ee2646516a97b-d/migaudit", true},
		{"/root/.cache/go-build/20/19cd18d1f3c3312eb0dfb6e8eaea9993eca7b0af899973d7e88ee2646516a97b-d/migaudit", false},
		{"/root/.cache/go-build/19/19cd18d1f3c3312eb0dfb6e8eaea9993eca7b0af899973d7e88ee2646516a97-d/migaudit", false},
		{"/opt/19/19cd18d1f3c3312eb0dfb6e8eaea9993eca7b0af899973d7e88ee2646516a97b/migaudit", false},
	}
	for _, tc := range tests {
		if got := builtByGoRun(tc.path); got != tc.want {
			t.Errorf("builtByGoRun(%q) = %v, want %v", tc.path, got, tc.want)
		}
	}
}

func TestCoreCommand(t *testing.T) {
	dir := t.TempDir()
	withCore := filepath.Join(dir, "bin")
	noCore := filepath.Join(dir, "lonely")
	goRun := filepath.Join(dir, "go-build7", "b001", "exe")
	for _, d := range []string{withCore, noCore, goRun} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	core := filepath.Join(withCore, coreName)
	if err := os.WriteFile(core, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	notExec := filepath.Join(noCore, "not-exec")
	if err := os.WriteFile(notExec, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		t.Skip("no user cache directory")
	}
	built := filepath.Join(cache, "migaudit", "go-run", coreName)
	goOK := func(string) (string, error) { return "/usr/bin/go", nil }
	goMissing := func(string) (string, error) { return "", errors.New(`exec: "go": executable file not found in $PATH`) }
	args := []string{"run", "--impl", "ngtcp2"}
	tests := []struct {
		name     string
		self     string
		env      string
		lookPath func(string) (string, error)
		wantPath string
		wantArgv []string
		wantGo   bool // a go build writes wantPath first
		wantErr  string
	}{
		{"beside", filepath.Join(withCore, "migaudit"), "", goOK, core, append([]string{core}, args...), false, ""},
		{"MIGAUDIT_CORE wins", filepath.Join(noCore, "migaudit"), core, goOK, core, append([]string{core}, args...), false, ""},
		{"MIGAUDIT_CORE not executable", filepath.Join(withCore, "migaudit"), notExec, goOK, "", nil, false, "MIGAUDIT_CORE=" + notExec + ": not an executable file"},
		{"MIGAUDIT_CORE absent", filepath.Join(withCore, "migaudit"), filepath.Join(dir, "nothing"), goOK, "", nil, false, "no such file"},
		{"go run", filepath.Join(goRun, "migaudit"), "", goOK, built, append([]string{built}, args...), true, ""},
		{"go run without go", filepath.Join(goRun, "migaudit"), "", goMissing, "", nil, false, "go command is not on PATH"},
		{"alone", filepath.Join(noCore, "migaudit"), "", goOK, "", nil, false, `"run" is run by migaudit-core, which is not beside this executable (` + filepath.Join(noCore, coreName) + ": no such file): build both into one directory with go build -o DIR/ ./cmd/..."},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := coreCommand(tc.self, args, tc.env, tc.lookPath)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if r.path != tc.wantPath || strings.Join(r.argv, " ") != strings.Join(tc.wantArgv, " ") {
				t.Errorf("got %s %q, want %s %q", r.path, r.argv, tc.wantPath, tc.wantArgv)
			}
			if tc.wantGo != (r.pkg != "") || r.pkg != "" && (r.goTool != "/usr/bin/go" || r.pkg != corePkg) {
				t.Errorf("build %s with %q, want a go build: %v", r.pkg, r.goTool, tc.wantGo)
			}
		})
	}
}

// TestFrontStaysLean keeps what makes the front start fast: no cgo (so the
// executable is statically linked), and none of the libraries whose own
// initialisation is what the core pays for at start-up.
func TestFrontStaysLean(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go command not on PATH: cannot list the front's dependencies")
	}
	out, err := exec.Command(goTool, "list", "-deps", "-f", "{{.ImportPath}} {{if .CgoFiles}}cgo{{end}}", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	banned := []string{"net", "net/http", "os/user", "runtime/cgo", // exactly these: net/netip is pure Go
		"github.com/spf13/cobra", "github.com/spf13/pflag",
		"github.com/santhosh-tekuri/jsonschema", "github.com/go-git/go-git", "github.com/tree-sitter",
		"github.com/quic-go/quic-go", "github.com/schollz/progressbar"}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		pkg, cgo, _ := strings.Cut(line, " ")
		if cgo == "cgo" {
			t.Errorf("the front links %s, which has cgo files", pkg)
		}
		for _, b := range banned {
			if pkg == b || strings.HasPrefix(b, "github.com/") && strings.HasPrefix(pkg, b+"/") {
				t.Errorf("the front links %s", pkg)
			}
		}
	}
}

// TestDelegation builds both executables as a user does and runs them.
func TestDelegation(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds both executables")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go command not on PATH: cannot build the executables")
	}
	bin := t.TempDir()
	build := exec.Command(goTool, "build", "-o", bin+"/", "./cmd/migaudit", "./cmd/migaudit-core")
	build.Dir = "../.."
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	front := filepath.Join(bin, "migaudit")
	lonely := filepath.Join(t.TempDir(), "migaudit")
	if b, err := os.ReadFile(front); err != nil || os.WriteFile(lonely, b, 0o755) != nil {
		t.Fatal("copy the front alone", err)
	}
	script := filepath.Join(t.TempDir(), "exit7")
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho \"core got: $*\"\nexit 7\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	trace := "../../parsers/testdata/msquic_small.log"
	tests := []struct {
		name      string
		exe       string
		env       string
		args      []string
		code      int
		stdout    string // contained
		stderr    string // contained in its only line
		stderrNil bool
	}{
		{"version from the core", front, "", []string{"version"}, 0, "migaudit (devel) (quic-go v", "", true},
		{"help lists every command", front, "", []string{"--help"}, 0, "validate", "", true},
		{"analyze help comes from the core", front, "", []string{"analyze", "--help"}, 0, "--migration-at duration", "", true},
		{"parse in the front", front, "", []string{"parse", trace, "--json"}, 0, `"format":"msquic-log"`, "", true},
		{"analyze in the front, flags after the trace", front, "", []string{"analyze", trace, "--impl", "msquic", "--format", "csv"}, 0, "trace,implementation", "", true},
		{"analyze without a trace", front, "", []string{"analyze"}, 1, "", "migaudit: requires at least 1 arg(s), only received 0", false},
		{"analyze with an unknown flag", front, "", []string{"analyze", "--nope", trace}, 1, "", "migaudit: analyze: flag provided but not defined: -nope", false},
		{"unknown command", front, "", []string{"no-such-command"}, 1, "", `migaudit: unknown command "no-such-command" for "migaudit"`, false},
		{"the front alone", lonely, "", []string{"version"}, 1, "", `migaudit: "version" is run by migaudit-core, which is not beside this executable`, false},
		{"the front alone still analyzes", lonely, "", []string{"parse", trace}, 0, "format msquic-log", "", true},
		{"exit status and arguments pass through", lonely, script, []string{"validate", "--x", "a b"}, 7, "core got: validate --x a b", "", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(tc.exe, tc.args...)
			cmd.Env = append(os.Environ(), "MIGAUDIT_CORE="+tc.env)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			code := exitCode(t, cmd.Run())
			if code != tc.code {
				t.Errorf("exit %d, want %d; stderr %q", code, tc.code, stderr.String())
			}
			if !strings.Contains(stdout.String(), tc.stdout) {
				t.Errorf("stdout lacks %q:\n%s", tc.stdout, stdout.String())
			}
			if tc.stderrNil {
				if stderr.Len() != 0 {
					t.Errorf("stderr: %q", stderr.String())
				}
				return
			}
			if strings.Count(stderr.String(), "\n") != 1 || !strings.Contains(stderr.String(), tc.stderr) {
				t.Errorf("stderr %q, want one line containing %q", stderr.String(), tc.stderr)
			}
		})
	}
}

// TestGoRunDelegates: `go run ./cmd/migaudit CMD`, as the README's main job
// is written, reaches the core through `go run` of the same checkout.
func TestGoRunDelegates(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds both executables")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go command not on PATH")
	}
	// The core goes into a user cache of the test's own; the build cache
	// stays the usual one (it lives in the user cache by default).
	gocache, err := exec.Command(goTool, "env", "GOCACHE").Output()
	if err != nil {
		t.Fatalf("go env GOCACHE: %v", err)
	}
	cache := t.TempDir()
	for _, tc := range []struct {
		args []string
		out  string
		code int
	}{
		{[]string{"version"}, "migaudit (devel) (quic-go v", 0},
		// One line from the core and one from the outer go run: the core's
		// own status (1) is go run's, with no second "exit status" line.
		{[]string{"no-such-command"}, "migaudit: unknown command \"no-such-command\" for \"migaudit\"\nexit status 1\n", 1},
	} {
		cmd := exec.Command(goTool, append([]string{"run", "./cmd/migaudit"}, tc.args...)...)
		cmd.Dir = "../.."
		cmd.Env = append(os.Environ(), "MIGAUDIT_CORE=", "XDG_CACHE_HOME="+cache, "GOCACHE="+strings.TrimSpace(string(gocache)))
		out, err := cmd.CombinedOutput()
		code := exitCode(t, err)
		if code != tc.code || !strings.HasPrefix(string(out), tc.out) || tc.code != 0 && string(out) != tc.out {
			t.Errorf("go run ./cmd/migaudit %v: exit %d, output %q; want %d, %q", tc.args, code, out, tc.code, tc.out)
		}
	}
	if _, err := os.Stat(filepath.Join(cache, "migaudit", "go-run", coreName)); err != nil {
		t.Errorf("the core was not built into the user cache: %v", err)
	}
}

// exitCode is the status of a finished command; an error that is not an
// exit status (the command could not start) fails the test.
func exitCode(t *testing.T, err error) int {
	t.Helper()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err != nil {
		t.Fatal(err)
	}
	return 0
}
