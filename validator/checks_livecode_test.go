package validator

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// TestLiveCodePlanted: live_code re-derived from two from-checkout
// manifests passes as written, and each planted fault fails.
func TestLiveCodePlanted(t *testing.T) {
	root := t.TempDir()
	pin := strings.Repeat("d7", 20)
	other := strings.Repeat("ab", 20)
	writeRep := func(run, rep, commit string) {
		dir := filepath.Join(root, "data", "evidence", run, rep)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		man := map[string]any{"version": "1.25.90+" + commit[:12],
			"binaries": []any{
				map[string]any{"role": "server", "sha256": "5e", "version": "1.25.90+" + commit[:12], "version_source": "build.json"},
				map[string]any{"role": "client", "sha256": "c1", "version": "1.25.90+" + commit[:12], "version_source": "build.json"},
			},
			"result": map[string]any{"settings": map[string]any{"build": "from-checkout", "live_commit": commit}}}
		b, _ := json.Marshal(man)
		if err := os.WriteFile(filepath.Join(dir, "manifest.json"), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, r := range []string{"rep1", "rep2"} {
		writeRep("pin", r, pin)
		writeRep("other", r, other)
		dir := filepath.Join(root, "data", "evidence", "old", r)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "manifest.json"), []byte(`{"version":"0.12.1"}`), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	im := func(run, commit string, edit func(m map[string]any)) gjson.Result {
		m := map[string]any{"name": "ngtcp2", "upstream": "https://github.com/ngtcp2/ngtcp2", "commit": pin,
			"live": map[string]any{"origin": "own-runs", "repetitions": []any{
				map[string]any{"id": "rep1", "manifest": "data/evidence/" + run + "/rep1/manifest.json"},
				map[string]any{"id": "rep2", "manifest": "data/evidence/" + run + "/rep2/manifest.json"},
			}},
			"live_code": map[string]any{"commit": commit, "upstream": "https://github.com/ngtcp2/ngtcp2", "build": "from-checkout",
				"binaries": []any{
					map[string]any{"role": "client", "sha256": "c1", "version": "1.25.90+" + commit[:12]},
					map[string]any{"role": "server", "sha256": "5e", "version": "1.25.90+" + commit[:12]},
				}}}
		if commit != pin {
			m["live_audit"] = map[string]any{"commit": commit, "answers": []any{}, "differences": []any{}}
		}
		if edit != nil {
			edit(m)
		}
		b, _ := json.Marshal(m)
		return gjson.ParseBytes(b)
	}
	lc := func(m map[string]any) map[string]any { return m["live_code"].(map[string]any) }
	v := New(Options{RepoRoot: root})
	for _, tc := range []struct {
		name string
		im   gjson.Result
		want Status
		msg  string
	}{
		{"the pin, as written", im("pin", pin, nil), Pass, "from-checkout"},
		{"another commit with its live_audit", im("other", other, nil), Pass, "from-checkout"},
		{"no live_code", im("pin", pin, func(m map[string]any) { delete(m, "live_code") }), Fail, "no live_code"},
		{"no live_code, runs before version records", im("old", pin, func(m map[string]any) { delete(m, "live_code") }), Unverifiable, "runs before version records"},
		{"live_code, runs before version records", im("old", pin, nil), Fail, "records no build and no package"},
		{"a binary's sha256 changed", im("pin", pin, func(m map[string]any) {
			lc(m)["binaries"].([]any)[0].(map[string]any)["sha256"] = "ff"
		}), Fail, "live_code.binaries"},
		{"build said debian-package", im("pin", pin, func(m map[string]any) { lc(m)["build"] = "debian-package" }), Fail, "live_code.build"},
		{"commit said to be the pin", im("other", other, func(m map[string]any) { lc(m)["commit"] = pin }), Fail, "live_code.commit"},
		{"not the pin, live_audit dropped", im("other", other, func(m map[string]any) { delete(m, "live_audit") }), Fail, "no live_audit"},
		{"live_audit of the pin", im("other", other, func(m map[string]any) {
			m["live_audit"].(map[string]any)["commit"] = pin
		}), Fail, "live_audit is of"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, msg := checkLiveCode(v, gjson.Result{}, tc.im)
			if st != tc.want || !strings.Contains(msg, tc.msg) {
				t.Fatalf("%s: %s, want %s containing %q", st, msg, tc.want, tc.msg)
			}
		})
	}
}
