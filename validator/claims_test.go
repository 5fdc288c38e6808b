package validator

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// fixturePins writes the fixture's pins (its test-made commits) in the
// format of data/implementations.json.
func fixturePins(t *testing.T, raw []byte) string {
	t.Helper()
	var s struct {
		Implementations []struct {
			Name     string `json:"name"`
			Upstream string `json:"upstream"`
			Commit   string `json:"commit"`
		} `json:"implementations"`
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(s)
	p := filepath.Join(t.TempDir(), "implementations.json")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}
