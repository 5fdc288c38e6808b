package report

import (
	"bytes"
	"encoding/xml"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/migaudit/migaudit/survey"
	"github.com/migaudit/migaudit/survey/surveytest"
)

var update = flag.Bool("update", false, "rewrite golden files")

func TestReportCitesTheAuditedLines(t *testing.T) {
	s := surveytest.Fixture(t)
	for _, name := range []string{"picoquic", "quic-go", "msquic"} {
		t.Run(name, func(t *testing.T) {
			im := s.Find(name)
			var buf bytes.Buffer
			if _, err := Write(&buf, s, im, Options{}); err != nil {
				t.Fatal(err)
			}
			md := buf.String()
			for _, q := range survey.Questions {
				if !strings.Contains(md, survey.RequirementText(q)[strings.Index(survey.RequirementText(q), ":")+2:]) {
					t.Errorf("%s requirement text not quoted", q)
				}
			}
			// every position the survey cites appears as a permalink
			for _, a := range im.Answers {
				for _, e := range a.Evidence {
					if !strings.Contains(md, "("+e.Permalink+")") {
						t.Errorf("permalink %s missing", e.Permalink)
					}
				}
			}
			if r := im.Reachability; r != nil {
				for _, c := range r.Calls {
					if !strings.Contains(md, "("+c.Permalink+")") {
						t.Errorf("call permalink %s missing", c.Permalink)
					}
				}
			}
			for _, r := range im.Live.Repetitions {
				if !strings.Contains(md, "| "+r.ID+" |") {
					t.Errorf("repetition %s missing", r.ID)
				}
			}
			if !strings.Contains(md, "## Caveats") || !strings.Contains(md, "## Reproduce") {
				t.Error("caveats or reproduction missing")
			}
			surveytest.Golden(t, name+".md.golden", buf.Bytes(), *update)
		})
	}
}

func TestUnknownImplementationIsAnError(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "survey_results.json")
	b, _ := os.ReadFile("../../data/survey.schema.json")
	os.WriteFile(filepath.Join(dir, survey.SchemaFile), b, 0o644)
	if err := survey.Write(p, surveytest.Fixture(t)); err != nil {
		t.Fatal(err)
	}
	err := Run(Options{Path: p, Impl: "nosuch"}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "nosuch is not in") {
		t.Fatalf("err = %v", err)
	}
	out := filepath.Join(dir, "r", "quic-go.md")
	if err := Run(Options{Path: p, Impl: "quic-go", Out: out}, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(out); err != nil || !bytes.Contains(b, []byte("# quic-go")) {
		t.Fatalf("report not written: %v", err)
	}
}

func TestSVGMarksEveryEvent(t *testing.T) {
	p := Plot{Title: "t <&>", FromUS: -1_000_000, ToUS: 2_500_000, ScopeFr: -50_000, ScopeTo: 2_000_000,
		Points: []Point{{-900_000, 280414, 22000}, {40_735, 196289, -1}, {42_695, 40960, -1}, {45_000, -1, 40600}, {2_000_000, 90000, 40500}},
		Marks:  []Mark{{0, "migration (ip)", -1, "MIGRATION"}, {40_735, "LOSS_BACKOFF 196,289 B", 196289, "LOSS_BACKOFF"}, {42_695, "RESET 40,960 B", 40960, "RESET"}}}
	var b bytes.Buffer
	if err := WriteSVG(&b, p); err != nil {
		t.Fatal(err)
	}
	dec := xml.NewDecoder(bytes.NewReader(b.Bytes()))
	lines, circles, polylines := 0, 0, 0
	for {
		tok, err := dec.Token()
		if err != nil {
			break
		}
		if se, ok := tok.(xml.StartElement); ok {
			switch se.Name.Local {
			case "line":
				lines++
			case "circle":
				circles++
			case "polyline":
				polylines++
			}
		}
	}
	if circles != 2 || polylines != 2 {
		t.Errorf("circles=%d polylines=%d, want 2 event dots and 2 series", circles, polylines)
	}
	if !strings.Contains(b.String(), "t &lt;&amp;&gt;") {
		t.Error("title not escaped")
	}
	surveytest.Golden(t, "plot.svg.golden", b.Bytes(), *update)
}
