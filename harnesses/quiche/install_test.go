package quiche

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeInstall lays out dir like `npm ci` would, with native as the module's
// content and lock as package-lock.json.
func fakeInstall(t *testing.T, lock string, native []byte, version string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "package-lock.json"), []byte(lock), 0o644); err != nil {
		t.Fatal(err)
	}
	if native != nil {
		p := NativePath(dir)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, native, 0o644); err != nil {
			t.Fatal(err)
		}
		pj := `{"name":"` + Package + `","version":"` + version + `"}`
		if err := os.WriteFile(filepath.Join(filepath.Dir(p), "package.json"), []byte(pj), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestCommittedLockPinsBinding(t *testing.T) {
	if err := checkLock("."); err != nil {
		t.Fatal(err)
	}
	b, err := embedded.ReadFile("package.json")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"`+Package+`": "`+PackageVersion+`"`) {
		t.Errorf("package.json does not pin %s to exactly %s:\n%s", Package, PackageVersion, b)
	}
}

func TestInstallChecks(t *testing.T) {
	good, err := os.ReadFile("package-lock.json")
	if err != nil {
		t.Fatal(err)
	}
	wrongIntegrity := strings.Replace(string(good), PackageIntegrity, "sha512-AAAA", 1)
	cases := []struct {
		name    string
		lock    string
		native  []byte
		version string
		want    string
	}{
		{"lock with another integrity", wrongIntegrity, []byte("x"), PackageVersion, "expected " + PackageVersion},
		{"lock without the package", `{"packages":{}}`, []byte("x"), PackageVersion, "does not pin"},
		{"zero-byte module", string(good), []byte{}, PackageVersion, "zero bytes"},
		{"module with another sha256", string(good), []byte("not quiche"), PackageVersion, "expected " + NativeSHA256},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := fakeInstall(t, c.lock, c.native, c.version)
			err := checkLock(dir)
			if err == nil {
				_, err = VerifyNative(dir)
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one containing %q", err, c.want)
			}
			if strings.Contains(c.want, "expected "+NativeSHA256) && !strings.Contains(err.Error(), InstallCommand(dir)) {
				t.Errorf("error does not say what to run: %v", err)
			}
		})
	}
}

func TestMissingModuleSaysWhatToRun(t *testing.T) {
	good, err := os.ReadFile("package-lock.json")
	if err != nil {
		t.Fatal(err)
	}
	dir := fakeInstall(t, string(good), nil, "")
	_, err = VerifyNative(dir)
	if err == nil || !strings.Contains(err.Error(), "npm ci") {
		t.Fatalf("error %v, want the npm ci line", err)
	}
}

func TestMaterialise(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "h")
	if err := materialise(dir); err != nil {
		t.Fatal(err)
	}
	for _, n := range embeddedNames {
		want, _ := embedded.ReadFile(n)
		got, err := os.ReadFile(filepath.Join(dir, n))
		if err != nil || string(got) != string(want) {
			t.Errorf("%s not materialised (%v)", n, err)
		}
	}
	if err := checkLock(dir); err != nil {
		t.Error(err)
	}
}
