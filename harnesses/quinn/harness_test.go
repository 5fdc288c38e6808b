package quinn

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/migaudit/migaudit/harnesses/run"
	"github.com/migaudit/migaudit/harnesses/upstream"
)

func TestLockedVersions(t *testing.T) {
	b, err := os.ReadFile("testdata/Cargo.lock")
	if err != nil {
		t.Fatal(err)
	}
	v, err := LockedVersions(b)
	if err != nil {
		t.Fatal(err)
	}
	if got := Version(v); got != "quinn 0.9.3 (quinn-proto 0.9.2, quinn-udp 0.3.2, rustls 0.20.8; Debian crates)" {
		t.Errorf("Version = %q", got)
	}
	for _, bad := range []string{"", "[[package]]\nversion = \"1\"\n"} {
		if _, err := LockedVersions([]byte(bad)); err == nil {
			t.Errorf("LockedVersions(%q): no error", bad)
		}
	}
}

func TestCompareTrees(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	write := func(root, name, body string) {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(a, "lib.rs", "x")
	write(b, "lib.rs", "x")
	write(a, "connection/pacing.rs", "#[cfg(not(target_arch = \"x86\"))]")
	write(b, "connection/pacing.rs", "")
	write(b, "only.rs", "")
	d, err := CompareTrees(a, b)
	if err != nil || strings.Join(d, " ") != "connection/pacing.rs only.rs" {
		t.Errorf("CompareTrees = %v, %v", d, err)
	}
	if _, err := CompareTrees(filepath.Join(a, "nope"), b); err == nil {
		t.Error("missing tree: no error")
	}
}

func TestSourcesMatch(t *testing.T) {
	same := "quinn 0.9.3: src/ identical to the commit's quinn/src\nquinn-proto 0.9.2: src/ differs from the commit's quinn-proto/src in 1 files: connection/pacing.rs\nquinn-udp 0.3.2: src/ identical to the commit's quinn-udp/src\n"
	if !SourcesMatch([]byte(same)) {
		t.Error("Debian's test-only patch counted as a difference")
	}
	for _, other := range []string{
		strings.Replace(same, "1 files: connection/pacing.rs", "2 files: connection/mod.rs, connection/pacing.rs", 1),
		"quinn 0.9.3: src/ identical to the commit's quinn/src\n",
	} {
		if SourcesMatch([]byte(other)) {
			t.Errorf("SourcesMatch(%q) = true", other)
		}
	}
}

func TestCapabilities(t *testing.T) {
	c := New(nil).Capabilities()
	for _, s := range run.AllScenarios {
		if why := c.Supports(s); why != "" {
			t.Errorf("%s: %s", s, why)
		}
	}
	if c.DefaultCC != "cubic" || c.CCAliases["reno"] != "newreno" {
		t.Errorf("capabilities %+v", c)
	}
}

// TestBuild builds the harness from Debian's crates into a temporary cache
// and runs its version subcommand; it needs the crates (apt-get install
// librust-quinn-dev librust-rustls-dev librust-rustls-pemfile-dev
// librust-tokio-dev) and quinn's mirror in $MIGAUDIT_MIRRORS, and takes
// minutes (cargo): run it under the heavy lock.
func TestBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: cargo build takes minutes")
	}
	if os.Getenv("MIGAUDIT_MIRRORS") == "" {
		t.Skip("MIGAUDIT_MIRRORS unset: no quinn mirror to compare Debian's crates with")
	}
	if _, err := os.Stat(filepath.Join(DebianRegistry, "quinn-0.9.3")); err != nil {
		t.Skip("Debian's quinn crates are not installed: apt-get install librust-quinn-dev librust-rustls-dev librust-rustls-pemfile-dev librust-tokio-dev")
	}
	if _, err := exec.LookPath("cargo"); err != nil {
		t.Skip("no cargo")
	}
	t.Setenv(upstream.CacheEnv, t.TempDir())
	a, err := Ensure(context.Background(), upstream.Options{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	v, err := version(context.Background(), a.Path(Binary))
	if err != nil || !strings.HasPrefix(v, "quinn-harness ") {
		t.Errorf("version %q, %v", v, err)
	}
	b, _ := os.ReadFile(a.Path(SourceCheck))
	if !SourcesMatch(b) {
		t.Errorf("Debian's quinn crates differ from tag %s:\n%s", DebianTag, b)
	}
}
