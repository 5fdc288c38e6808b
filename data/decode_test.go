package data

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"reflect"
	"testing"

	"github.com/tidwall/gjson"
)

// embeddedConstants are the embedded data/constants/*.json documents.
func embeddedConstants(t testing.TB) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	err := fs.WalkDir(constantsFS, "constants", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || len(p) < 5 || p[len(p)-5:] != ".json" {
			return err
		}
		b, err := constantsFS.ReadFile(p)
		out[p] = b
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) == 0 {
		t.Fatal("no embedded constants")
	}
	return out
}

// TestStrictDecodersReadEmbedded: the committed pins and every audited
// constants file are read by the gjson decoders (not left to the
// encoding/json fallback), to exactly what encoding/json reads.
func TestStrictDecodersReadEmbedded(t *testing.T) {
	var want file
	if err := json.Unmarshal(implementationsJSON, &want); err != nil {
		t.Fatal(err)
	}
	got, ok := strictFile(gjson.ParseBytes(implementationsJSON))
	if !ok {
		t.Fatal("data/implementations.json is left to encoding/json: keep it to the fields Implementation has, without escapes or nulls, or extend strictImplementation")
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("implementations.json: gjson reads\n%+v\nencoding/json\n%+v", got, want)
	}
	for p, b := range embeddedConstants(t) {
		var want Constants
		if err := json.Unmarshal(b, &want); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		got, ok := strictConstants(gjson.ParseBytes(b))
		if !ok {
			t.Errorf("%s is left to encoding/json: keep it to the fields Constants has, without escapes or nulls", p)
			continue
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: gjson reads\n%+v\nencoding/json\n%+v", p, got, want)
		}
	}
}

// checkDecode: decodeConstants and decodeFile give encoding/json's result
// and error for b.
func checkDecode(t *testing.T, b []byte) {
	var want, got Constants
	werr := json.Unmarshal(b, &want)
	gerr := decodeConstants(b, &got)
	if fmt.Sprint(werr) != fmt.Sprint(gerr) || werr == nil && !reflect.DeepEqual(got, want) {
		t.Fatalf("decodeConstants(%q) = %+v, %v; encoding/json %+v, %v", b, got, gerr, want, werr)
	}
	var wantF, gotF file
	werr = json.Unmarshal(b, &wantF)
	gerr = decodeFile(b, &gotF)
	if fmt.Sprint(werr) != fmt.Sprint(gerr) || werr == nil && !reflect.DeepEqual(gotF, wantF) {
		t.Fatalf("decodeFile(%q) = %+v, %v; encoding/json %+v, %v", b, gotF, gerr, wantF, werr)
	}
}

var decodeSeeds = []string{
	`{}`, `[]`, `null`, `{"initial_windows":[]}`, `{"initial_windows":null}`,
	`{"initial_windows":[{"expr":"10*S","params":{"S":1200},"label":"l","source":{"path":"a.c","line":7},"provenance":"p"}]}`,
	`{"initial_windows":[{"expr":"10*S","params":{}}],"min_window":{"expr":"2"},"loss_factor":{"expr":"0.5"},"default_rtt_us":{"expr":"333000"}}`,
	`{"initial_windows":[{"Expr":"1"}]}`, `{"initial_windows":[{"expr":"1","expr":"2"}]}`,
	`{"initial_windows":[{"expr":"a\u00e9"}]}`, `{"initial_windows":[{"expr":"é"}]}`,
	`{"initial_windows":[{"params":{"S":1e400}}]}`, `{"initial_windows":[{"params":{"S":"1"}}]}`,
	`{"initial_windows":[{"source":{"line":1.0}}]}`, `{"initial_windows":[{"source":{"line":-0}}]}`,
	`{"initial_windows":[{"source":{"line":99999999999999999999}}]}`, `{"min_window":null}`,
	`{"unknown":1}`, `{"implementations":[{"name":"x","constants":{"initial_windows":[{"expr":"1"}]}}]}`,
	`{"implementations":[]}`, `{"implementations":[{"name":"x","name":"y"}]}`, `{"implementations":{}}`,
	"{\"initial_windows\":[{\"expr\":\"\xff\"}]}", `{"initial_windows":[{"expr":"1"}]} x`, `{"initial_windows":[{"params":{"S":01}}]}`,
}

func TestDecodeLikeEncodingJSON(t *testing.T) {
	for _, s := range decodeSeeds {
		checkDecode(t, []byte(s))
	}
	checkDecode(t, implementationsJSON)
	for _, b := range embeddedConstants(t) {
		checkDecode(t, b)
	}
}

// FuzzDecodeConstants: whatever the gjson decoders accept, encoding/json
// reads the same; whatever they refuse, encoding/json decides.
func FuzzDecodeConstants(f *testing.F) {
	for _, s := range decodeSeeds {
		f.Add([]byte(s))
	}
	for _, b := range embeddedConstants(f) {
		f.Add(b)
	}
	f.Fuzz(checkDecode)
}
