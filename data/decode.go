package data

import (
	"encoding/json"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/tidwall/gjson"
)

// The embedded pins and constants are decoded once per process, but once
// costs encoding/json's reflection on first use, which on a short trace is
// a noticeable part of analyze's run. These decoders read the same
// documents with gjson, which needs no reflection, and accept only what
// they read exactly as encoding/json does: valid JSON, objects whose keys
// are exactly the fields' names (each once), strings without escapes,
// numbers strconv reads as json does, no nulls. Anything else, they report
// !ok and the caller decodes with encoding/json, so results and errors are
// encoding/json's either way (FuzzDecodeConstants holds them to it).

// decodeFile is json.Unmarshal(b, &f), read by gjson when it can be.
func decodeFile(b []byte, f *file) error {
	if gjson.ValidBytes(b) {
		if fs, ok := strictFile(gjson.ParseBytes(b)); ok {
			*f = fs
			return nil
		}
	}
	return json.Unmarshal(b, f)
}

// decodeConstants is json.Unmarshal(b, &c), read by gjson when it can be.
func decodeConstants(b []byte, c *Constants) error {
	if gjson.ValidBytes(b) {
		if cs, ok := strictConstants(gjson.ParseBytes(b)); ok {
			*c = cs
			return nil
		}
	}
	return json.Unmarshal(b, c)
}

// members calls fn for each member of object v, with the index of its key
// in keys; ok is false when v is not an object, a key is not exactly one of
// keys, a key repeats, or fn says so.
func members(v gjson.Result, keys []string, fn func(k int, v gjson.Result) bool) bool {
	if !v.IsObject() {
		return false
	}
	ok := true
	var seen uint64
	v.ForEach(func(key, val gjson.Result) bool {
		k := -1
		if r := key.Raw; len(r) >= 2 {
			for i, name := range keys {
				if r[1:len(r)-1] == name && r[0] == '"' && r[len(r)-1] == '"' {
					k = i
					break
				}
			}
		}
		if k < 0 || seen&(1<<k) != 0 || !fn(k, val) {
			ok = false
			return false
		}
		seen |= 1 << k
		return true
	})
	return ok
}

// plainString is a JSON string without escapes, valid UTF-8: its text is
// the bytes between the quotes, as encoding/json reads it.
func plainString(v gjson.Result) (string, bool) {
	r := v.Raw
	if v.Type != gjson.String || len(r) < 2 || strings.IndexByte(r, '\\') >= 0 || !utf8.ValidString(r) {
		return "", false
	}
	return r[1 : len(r)-1], true
}

func setString(dst *string, v gjson.Result) bool {
	s, ok := plainString(v)
	*dst = s
	return ok
}

var fileKeys = []string{"implementations"}

func strictFile(v gjson.Result) (file, bool) {
	var f file
	ok := members(v, fileKeys, func(_ int, v gjson.Result) bool {
		if !v.IsArray() {
			return false
		}
		f.Implementations = []Implementation{}
		ok := true
		v.ForEach(func(_, e gjson.Result) bool {
			im, eok := strictImplementation(e)
			f.Implementations = append(f.Implementations, im)
			ok = eok
			return eok
		})
		return ok
	})
	return f, ok
}

var implementationKeys = []string{"name", "language", "upstream", "commit", "live_version", "live", "constants"}

func strictImplementation(v gjson.Result) (Implementation, bool) {
	var im Implementation
	ok := members(v, implementationKeys, func(k int, v gjson.Result) bool {
		switch k {
		case 0:
			return setString(&im.Name, v)
		case 1:
			return setString(&im.Language, v)
		case 2:
			return setString(&im.Upstream, v)
		case 3:
			return setString(&im.Commit, v)
		case 4:
			return setString(&im.LiveVersion, v)
		case 5:
			return setString(&im.Live, v)
		}
		c, ok := strictConstants(v)
		im.Constants = c
		return ok
	})
	return im, ok
}

var constantsKeys = []string{"initial_windows", "min_window", "loss_factor", "default_rtt_us"}

func strictConstants(v gjson.Result) (Constants, bool) {
	var c Constants
	ok := members(v, constantsKeys, func(k int, v gjson.Result) bool {
		if k == 0 {
			if !v.IsArray() {
				return false
			}
			c.InitialWindows = []Formula{}
			ok := true
			v.ForEach(func(_, e gjson.Result) bool {
				f, fok := strictFormula(e)
				c.InitialWindows = append(c.InitialWindows, f)
				ok = fok
				return fok
			})
			return ok
		}
		f, ok := strictFormula(v)
		switch k {
		case 1:
			c.MinWindow = &f
		case 2:
			c.LossFactor = &f
		default:
			c.DefaultRTT = &f
		}
		return ok
	})
	return c, ok
}

var formulaKeys = []string{"expr", "params", "label", "source", "provenance"}

func strictFormula(v gjson.Result) (Formula, bool) {
	var f Formula
	ok := members(v, formulaKeys, func(k int, v gjson.Result) bool {
		switch k {
		case 0:
			return setString(&f.Expr, v)
		case 1:
			if !v.IsObject() {
				return false
			}
			f.Params = map[string]float64{}
			ok := true
			v.ForEach(func(key, val gjson.Result) bool {
				name, kok := plainString(key)
				x, err := strconv.ParseFloat(val.Raw, 64)
				if ok = kok && val.Type == gjson.Number && err == nil; ok {
					f.Params[name] = x
				}
				return ok
			})
			return ok
		case 2:
			return setString(&f.Label, v)
		case 3:
			var p Position
			f.Source = &p
			return members(v, positionKeys, func(k int, v gjson.Result) bool {
				if k == 0 {
					return setString(&p.Path, v)
				}
				n, err := strconv.ParseInt(v.Raw, 10, 64)
				p.Line = int(n)
				return v.Type == gjson.Number && err == nil
			})
		}
		return setString(&f.Provenance, v)
	})
	return f, ok
}

var positionKeys = []string{"path", "line"}
