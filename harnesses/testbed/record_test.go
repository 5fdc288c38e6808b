package testbed

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A calibration record makes its directory (results/ by default) and never
// replaces an existing record.
func TestWriteNewRecord(t *testing.T) {
	p := filepath.Join(t.TempDir(), ResultsDir, "calibration-x.json")
	if err := writeNew(p, []byte("{}\n")); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(p); err != nil || string(b) != "{}\n" {
		t.Fatalf("record: %q, %v", b, err)
	}
	if err := writeNew(p, []byte("[]\n")); err == nil || !strings.Contains(err.Error(), "never overwritten") {
		t.Errorf("second write: err = %v, want a refusal", err)
	}
}
