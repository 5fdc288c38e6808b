package tables

import (
	"bytes"
	"flag"
	"testing"

	"github.com/migaudit/migaudit/survey/surveytest"
)

var update = flag.Bool("update", false, "rewrite golden files")

func TestTablesGolden(t *testing.T) {
	s := surveytest.Fixture(t)
	for _, format := range []string{"table", "markdown", "csv"} {
		t.Run(format, func(t *testing.T) {
			var buf bytes.Buffer
			if err := WriteTables(&buf, s, format, ""); err != nil {
				t.Fatal(err)
			}
			surveytest.Golden(t, "tables."+format+".golden", buf.Bytes(), *update)
		})
	}
}

func TestComplianceTableReproducesStudyAnswers(t *testing.T) {
	s := surveytest.Fixture(t)
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
