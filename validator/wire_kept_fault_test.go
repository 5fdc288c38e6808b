package validator

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// The planted fault of issue #31 on committed evidence: a repetition kept
// with `migaudit run keep` (quiche rep2, its capture trimmed), its deciding
// packet moved to the other path's interface and the capture's sha256
// updated in the survey entry. The claim the survey makes about it FAILs,
// naming the packet; the same rewrite without the move PASSes.
func TestWirePlantedPathMoveKeptEvidence(t *testing.T) {
	rep := filepath.Join("..", "data", "evidence", "quiche", "rep2")
	sb, err := os.ReadFile(filepath.Join("..", "data", "survey_results.json"))
	if err != nil {
		t.Skipf("no committed survey: %v", err)
	}
	var claim WireClaim
	for _, im := range gjson.GetBytes(sb, "implementations").Array() {
		if im.Get("name").String() != "quiche" {
			continue
		}
		for _, r := range im.Get("live.repetitions").Array() {
			if r.Get("id").String() == "rep2" && r.Get("wire_claims.0").Exists() {
				if err := json.Unmarshal([]byte(r.Get("wire_claims.0").Raw), &claim); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	if claim.Packet == 0 {
		t.Skip("the committed survey states no wire claim for quiche rep2")
	}
	gz, err := os.ReadFile(filepath.Join(rep, WireCaptureFile))
	if err != nil {
		t.Skipf("no kept capture: %v", err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	keylog, err := os.ReadFile(filepath.Join(rep, WireKeyLogFile))
	if err != nil {
		t.Fatal(err)
	}
	if st, found := CheckWireClaim(rep, claim); st != Pass {
		t.Fatalf("the committed claim does not hold: %s %s", st, found)
	}
	m, err := ReadWire(filepath.Join(rep, WireCaptureFile), filepath.Join(rep, WireKeyLogFile))
	if err != nil {
		t.Fatal(err)
	}
	sent, ok := m.First(true, claim.Packet)
	if !ok {
		t.Fatalf("packet %d not in the kept capture", claim.Packet)
	}
	ifaces, recs := readCaptureRecords(t, raw)
	other := map[string]int{"pathA": 1, "pathB": 0}[claim.Path]
	root := t.TempDir()
	for _, tc := range []struct {
		name   string
		move   bool
		status Status
		want   string
	}{
		{"rewritten as is", false, Pass, fmt.Sprintf("packet %d crossed %s (record %d", claim.Packet, claim.Path, sent.Record)},
		{"moved to the other path", true, Fail, fmt.Sprintf("packet %d crossed %s on the wire (record %d", claim.Packet, ifaces[other].Name, sent.Record)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			edited := append([]fixtureRecord(nil), recs...)
			if tc.move {
				edited[sent.Record-1].ci.InterfaceIndex = other
			}
			dir := filepath.Join(root, strings.ReplaceAll(tc.name, " ", "-"), "rep1")
			writeRepetition(t, dir, ifaces, edited, keylog)
			v := New(Options{RepoRoot: filepath.Dir(dir)})
			im := surveyWithClaims(t, sha256Hex(t, filepath.Join(dir, WireCaptureFile)), claim)
			st, found := checkWireClaims(v, gjson.Result{}, im)
			if st != tc.status || !strings.Contains(found, tc.want) {
				t.Errorf("checkWireClaims = %s %q, want %s containing %q", st, found, tc.status, tc.want)
			}
		})
	}
}
