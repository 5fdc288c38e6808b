package render

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/migaudit/migaudit/discriminator"
	"github.com/migaudit/migaudit/parsers/timeline"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// analyses computes two analyses from synthetic timelines: a quic-go-like
// migration (backoff then reset) and a timeline without any migration.
func analyses(t *testing.T) []discriminator.Analysis {
	t.Helper()
	mig := &timeline.Timeline{
		Source: "synthetic-quicgo.sqlog",
		Meta:   timeline.Meta{Format: "quicgo-qlog", Vantage: "server"},
		Samples: []timeline.Sample{
			{TimeUS: 4_000_000, Fields: timeline.FieldCwnd | timeline.FieldSmoothedRTT, CwndBytes: 280414, SmoothedRTTUS: 114_800},
			{TimeUS: 5_068_657, Fields: timeline.FieldCwnd, CwndBytes: 196289},
			{TimeUS: 5_070_616, Fields: timeline.FieldCwnd, CwndBytes: 40960},
			{TimeUS: 5_111_356, Fields: timeline.FieldCwnd | timeline.FieldSmoothedRTT | timeline.FieldLatestRTT, CwndBytes: 43520, SmoothedRTTUS: 40_679, LatestRTTUS: 40_679},
		},
		Events: []timeline.Event{
			{TimeUS: 5_027_923, Kind: timeline.PathChallengeReceived, Data: "df82", PacketNumber: -1},
			{TimeUS: 5_027_960, Kind: timeline.PathChallengeSent, Data: "b6df", PacketNumber: -1},
			{TimeUS: 5_068_661, Kind: timeline.PathResponseReceived, Data: "b6df", PacketNumber: -1},
		},
	}
	none := &timeline.Timeline{Source: "synthetic.csv", Meta: timeline.Meta{Format: "timeline-csv"},
		Samples: []timeline.Sample{{TimeUS: 1, Fields: timeline.FieldCwnd, CwndBytes: 12200}}}
	var out []discriminator.Analysis
	for _, tl := range []*timeline.Timeline{mig, none} {
		a, err := discriminator.Analyze(tl, discriminator.Options{Impl: "quic-go"})
		if err != nil {
			t.Fatal(err)
		}
		// Constants' provenance changes when the audit lands; the golden
		// files test rendering, not the data.
		for i := range a.Constants {
			a.Constants[i].Provenance, a.Constants[i].Label = "provenance", ""
		}
		a.Warnings = nil
		out = append(out, a)
	}
	return out
}

func TestGolden(t *testing.T) {
	as := analyses(t)
	for _, format := range Formats() {
		t.Run(format, func(t *testing.T) {
			var buf bytes.Buffer
			if err := Write(&buf, format, as); err != nil {
				t.Fatal(err)
			}
			golden := filepath.Join("testdata", "analyze."+format+".golden")
			if *update {
				if err := os.WriteFile(golden, buf.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create)", err)
			}
			if !bytes.Equal(buf.Bytes(), want) {
				t.Errorf("%s output differs from %s (run go test ./discriminator/render -update after checking):\n%s", format, golden, buf.String())
			}
		})
	}
}

// TestJSONRoundTrip: the JSON form decodes back into the same analyses and
// carries the fields the survey reads.
func TestJSONRoundTrip(t *testing.T) {
	as := analyses(t)
	var buf bytes.Buffer
	if err := Write(&buf, "json", as); err != nil {
		t.Fatal(err)
	}
	var back []discriminator.Analysis
	if err := json.Unmarshal(buf.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if len(back) != 2 || back[0].Events[1].Kind != discriminator.Reset || !back[0].ResetObserved {
		t.Fatalf("round trip lost data: %+v", back)
	}
	var raw []map[string]any
	if err := json.Unmarshal(buf.Bytes(), &raw); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"implementation", "migration", "events", "window_before_bytes", "reset_observed", "rtt"} {
		if _, ok := raw[0][k]; !ok {
			t.Errorf("JSON lacks %q", k)
		}
	}
	mig := raw[0]["migration"].(map[string]any)
	for _, k := range []string{"kind", "at_us", "evidence"} {
		if _, ok := mig[k]; !ok {
			t.Errorf("migration lacks %q", k)
		}
	}
	ev := raw[0]["events"].([]any)[0].(map[string]any)
	for _, k := range []string{"kind", "at_us", "value_bytes", "previous_bytes"} {
		if _, ok := ev[k]; !ok {
			t.Errorf("event lacks %q", k)
		}
	}
	rtt := raw[0]["rtt"].(map[string]any)
	for _, k := range []string{"first_after_us", "attribution"} {
		if _, ok := rtt[k]; !ok {
			t.Errorf("rtt lacks %q", k)
		}
	}
}

func TestCSVShape(t *testing.T) {
	var buf bytes.Buffer
	if err := Write(&buf, "csv", analyses(t)); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&buf).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	// header + 2 events + 1 row for the trace without events
	if len(recs) != 4 {
		t.Fatalf("%d records, want 4", len(recs))
	}
	for i, r := range recs {
		if len(r) != len(CSVHeader) {
			t.Errorf("record %d has %d fields, want %d", i, len(r), len(CSVHeader))
		}
	}
}

func TestUnknownFormat(t *testing.T) {
	err := Write(&bytes.Buffer{}, "xml", nil)
	if err == nil || !strings.Contains(err.Error(), "table, json, csv, markdown") {
		t.Errorf("err = %v", err)
	}
}
