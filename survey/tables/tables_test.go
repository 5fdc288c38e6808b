package tables

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/migaudit/migaudit/survey"
)

var update = flag.Bool("update", false, "rewrite golden files")

// loadFixture reads the survey package's hand-made input and derives
// everything derived, as the survey command does.
func loadFixture(t *testing.T) *survey.Survey {
	t.Helper()
	b, err := os.ReadFile("../testdata/fixture_input.json")
	if err != nil {
		t.Fatal(err)
	}
	var s survey.Survey
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	survey.Finalise(&s)
	return &s
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	p := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(p, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("%v (run go test -update)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from golden:\n--- got\n%s\n--- want\n%s", name, got, want)
	}
}

func TestTablesGolden(t *testing.T) {
	s := loadFixture(t)
	for _, format := range []string{"table", "markdown", "csv"} {
		t.Run(format, func(t *testing.T) {
			var buf bytes.Buffer
			if err := WriteTables(&buf, s, format, ""); err != nil {
				t.Fatal(err)
			}
			golden(t, "tables."+format+".golden", buf.Bytes())
		})
	}
}

func TestComplianceTableReproducesStudyAnswers(t *testing.T) {
	s := loadFixture(t)
	want := map[string][3]string{
		"picoquic": {"NO", "present but inert", "NO"},
		"quic-go":  {"YES", "NO", "YES"},
		"quiche":   {"YES", "NO", "YES"},
		"msquic":   {"ASYMMETRIC", "NO", "SPLIT"},
		"ngtcp2":   {"YES", "NO", "YES"},
	}
	for _, row := range ComplianceTable(s).Rows {
		w, ok := want[row[0]]
		if !ok {
			t.Fatalf("unexpected row %v", row)
		}
		if got := [3]string{row[3], row[4], row[5]}; got != w {
			t.Errorf("%s: got %v, want %v", row[0], got, w)
		}
	}
}

func TestThousands(t *testing.T) {
	for in, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", 14520: "14,520", 572685: "572,685", 1484569: "1,484,569", -40960: "-40,960"} {
		if got := Thousands(in); got != want {
			t.Errorf("Thousands(%d) = %q, want %q", in, got, want)
		}
	}
}
