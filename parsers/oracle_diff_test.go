package parsers

import (
	"bufio"
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"strconv"
	"testing"

	"github.com/migaudit/migaudit/parsers/timeline"
	"github.com/tidwall/gjson"
)

// oracles are the previous gjson/encoding/json parsers (oracle_test.go),
// by format: the hand-written scanner must give the same timeline and the
// same error, byte for byte, on any input.
var oracles = map[string]parseFunc{
	FormatPicoquic: oparsePicoquic,
	FormatMsquic:   oparseMsquic,
	FormatNgtcp2: func(in *input, h timeline.Handler) error {
		return oparseJSONSeq(in, h, seqFormat{format: FormatNgtcp2, impl: "ngtcp2",
			notes: []string{"times and RTTs are logged in whole milliseconds (ngtcp2 truncates); µs values are ms × 1000"}})
	},
	FormatQuicGo: func(in *input, h timeline.Handler) error {
		return oparseJSONSeq(in, h, seqFormat{format: FormatQuicGo, impl: "quic-go",
			notes: []string{"times and RTTs are float milliseconds, converted to µs"}})
	},
	FormatQuiche: func(in *input, h timeline.Handler) error {
		return oparseJSONSeq(in, h, seqFormat{format: FormatQuiche, impl: "quiche",
			notes:            []string{"times and RTTs are float milliseconds, converted to µs", "PATH_CHALLENGE/PATH_RESPONSE data is not logged"},
			lostFromCounters: true, noPathNote: "metrics carry no path id; the timeline is a union over paths"})
	},
}

// parseOracle parses plain (not gzip) b with the oracle of format.
func parseOracle(name string, b []byte, format string, h timeline.Handler) error {
	in := &input{name: name, r: bufio.NewReaderSize(bytes.NewReader(b), 256<<10)}
	return oracles[format](in, h)
}

// checkOracle parses b with the current parser and the oracle of format
// and fails on any difference.
func checkOracle(t *testing.T, b []byte, format string) {
	t.Helper()
	if _, ok := oracles[format]; !ok {
		return
	}
	if len(b) >= 2 && b[0] == 0x1f && b[1] == 0x8b {
		// Parse inflates what starts with gzip's magic; the oracles read
		// the bytes as they are. They are references for the format
		// readers, not for decompression (TestSmallGzipFile and the
		// truncated-gzip error tests hold that).
		return
	}
	var got, want timeline.Collector
	gerr := Parse("fuzz.trace", bytes.NewReader(b), Options{Format: format}, &got)
	werr := parseOracle("fuzz.trace", b, format, &want)
	if (gerr == nil) != (werr == nil) || (gerr != nil && gerr.Error() != werr.Error()) {
		t.Fatalf("%s: error %v, oracle %v", format, gerr, werr)
	}
	if !reflect.DeepEqual(got.T, want.T) {
		g, _ := json.Marshal(got.T)
		w, _ := json.Marshal(want.T)
		t.Fatalf("%s: timeline differs from the oracle's\n got %.2000s\nwant %.2000s", format, g, w)
	}
}

// FuzzJtape checks the scanner against gjson: the same records are valid,
// and every value's text, type, number, string and key (walked from the
// tape, by ForEach and by first/next, and looked up by Get) is what gjson
// finds at the same place. These are all the mapper reads, which is why the
// oracle maps with the mapper itself.
func FuzzJtape(f *testing.F) {
	for _, s := range []string{`{"a":1}`, `[1,2,{"b":[true,false,null]}]`, `{"k\u0041":"v\n","x":-0.5e+3}`, `"s"`, ` 1 `, `{"a":}`, `[1,]`, `01`, `{"a":1}x`, `[[[]]]`} {
		f.Add([]byte(s))
	}
	var tape jtape
	f.Fuzz(func(t *testing.T, b []byte) {
		ok := tape.parse(b)
		if ok != gjson.ValidBytes(b) {
			t.Fatalf("parse %q = %v, gjson.Valid %v", b, ok, !ok)
		}
		if !ok {
			return
		}
		var walk func(v jv, g gjson.Result)
		walk = func(v jv, g gjson.Result) {
			if v.Raw() != g.Raw || v.Type() != g.Type || v.Str() != g.Str || v.Int() != g.Int() || v.String() != g.String() {
				t.Fatalf("%q: value %q/%v/%q, gjson %q/%v/%q", b, v.Raw(), v.Type(), v.Str(), g.Raw, g.Type, g.Str)
			}
			if f := v.Float(); f != g.Float() && !(f != f && g.Float() != g.Float()) {
				t.Fatalf("%q: float %v, gjson %v", b, f, g.Float())
			}
			var kids []jv
			var keys []jkey
			v.ForEach(func(k jkey, c jv) bool { kids, keys = append(kids, c), append(keys, k); return true })
			n := 0
			g.ForEach(func(k, c gjson.Result) bool {
				if n >= len(kids) {
					t.Fatalf("%q: gjson iterates more members than the tape", b)
				}
				if keys[n].Str != k.Str || keys[n].Num != k.Num {
					t.Fatalf("%q: key %+v, gjson %q/%v", b, keys[n], k.Str, k.Num)
				}
				if g.IsObject() || g.IsArray() {
					walk(kids[n], c)
				}
				n++
				return true
			})
			if n != len(kids) {
				t.Fatalf("%q: %d members, gjson %d", b, len(kids), n)
			}
			// The mapper also walks members with first/next and reads Key:
			// the same members, and for an object's, the same keys.
			if g.IsObject() || g.IsArray() {
				n = 0
				for c := v.first(); c.Exists(); c = c.next(v) {
					if n >= len(kids) || c.Raw() != kids[n].Raw() || c.Key() != keys[n].Str {
						t.Fatalf("%q: member %d by first/next %q (key %q) differs from ForEach's", b, n, c.Raw(), c.Key())
					}
					n++
				}
				if n != len(kids) {
					t.Fatalf("%q: first/next walks %d members, ForEach %d", b, n, len(kids))
				}
			}
			if g.IsObject() {
				g.ForEach(func(k, _ gjson.Result) bool {
					if gk := gjson.Get(g.Raw, gjson.Escape(k.Str)); gk.Raw != v.Get(k.Str).Raw() {
						t.Fatalf("%q: Get(%q) = %q, gjson %q", b, k.Str, v.Get(k.Str).Raw(), gk.Raw)
					}
					return true
				})
			}
		}
		walk(tape.root(), gjson.Parse(tape.root().Raw()))
	})
}

// FuzzParseFloat: the fast path gives ParseFloat's value, bit for bit.
func FuzzParseFloat(f *testing.F) {
	for _, s := range []string{"0", "-0", "40.712", "0.0371", "123456789012345", "1234567890123456", "9007199254740993", "1.5e3", "1e-7", "-12.000001", "0.1234567890123456789012", "."} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, _ := strconv.ParseFloat(s, 64)
		if got := parseFloat(s); math.Float64bits(got) != math.Float64bits(want) && !(got != got && want != want) {
			t.Fatalf("parseFloat(%q) = %v, ParseFloat %v", s, got, want)
		}
	})
}
