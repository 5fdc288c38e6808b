package parsers

// The parsers' readers as they were before the hand-written scanner (gjson
// and encoding/json), the oracle the differential fuzz targets compare
// against (oracle_diff_test.go). Events are mapped onto the timeline by the
// parsers' own mapper (qlog.go): FuzzJtape holds every value the mapper
// reads from the tape to gjson's, so the mapping is not kept twice.

import (
	"fmt"
	"io"

	"github.com/migaudit/migaudit/parsers/timeline"
	"github.com/tidwall/gjson"
)

// oparsePicoquic reads picoquic's single-document qlog with every event
// decoded by encoding/json, as before the event scanner.
func oparsePicoquic(in *input, h timeline.Handler) error { return parsePicoquicWith(in, h, true) }

// dataAndPath are a JSON-SEQ record's last "data" and "path" members, as
// the record loop's ForEach leaves them.
func dataAndPath(tape *jtape, rec []byte) (data, path jv) {
	tape.parse(rec)
	root := tape.root()
	data, path = root.missing(), root.missing()
	root.ForEach(func(k jkey, v jv) bool {
		switch k.Str {
		case "data":
			data = v
		case "path":
			path = v
		}
		return true
	})
	return data, path
}

// oparseJSONSeq drives a JSON-SEQ oqlog: a header record, then one event per
// record with "time" (ms unless the header says otherwise), "name" and
// "data".
func oparseJSONSeq(in *input, h timeline.Handler, f seqFormat) error {
	s := &seqReader{br: in.r}
	q := newQlog(h, f.format)
	var tape jtape
	q.lostFromCounters = f.lostFromCounters
	q.noPathNote = f.noPathNote
	q.meta.Notes = append(q.meta.Notes, f.notes...)
	timeScale := 1000.0 // oqlog default: milliseconds
	delta := false
	var refTime float64
	var prevTime float64
	headerSeen := false
	for {
		rec, n, off, err := s.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return in.readErr(err)
		}
		str := bstr(rec)
		if !gjson.Valid(str) {
			if truncatedJSON(rec) && s.restIsBlank() {
				q.h.Warn(warning(n, off, fmt.Sprintf("final record truncated (%d bytes, cut off mid-write); ignored, the %d records before it are used", len(rec), n-1)))
				break
			}
			return in.errorf(n, off, "invalid JSON")
		}
		root := gjson.Parse(str)
		if !root.IsObject() {
			return in.errorf(n, off, "record is not a JSON object")
		}
		var tRes, nameRes gjson.Result
		isHeader := false
		root.ForEach(func(k, v gjson.Result) bool {
			switch k.Str {
			case "time":
				tRes = v
			case "name":
				nameRes = v
			case "qlog_version", "qlog_format", "file_schema", "trace", "traces", "serialization_format":
				isHeader = true
			}
			return true
		})
		if isHeader && !nameRes.Exists() {
			if headerSeen {
				return in.errorf(n, off, "second qlog header record")
			}
			headerSeen = true
			if root.Get("traces").IsArray() {
				return in.errorf(n, off, "a single-document qlog (\"traces\"), not JSON-SEQ: use --format %s", FormatPicoquic)
			}
			tr := root.Get("trace")
			q.meta.Vantage = vantage(tr.Get("vantage_point.type").Str)
			q.meta.Implementation = implementationFrom(f.impl, tr.Get("vantage_point.name").Str, root.Get("title").Str, tr.Get("title").Str)
			switch tr.Get("configuration.time_units").Str {
			case "us":
				timeScale = 1
			case "ns":
				timeScale = 0.001
			}
			cf := tr.Get("common_fields")
			switch cf.Get("time_format").Str {
			case "delta":
				delta = true
			case "absolute":
				if rt := cf.Get("reference_time"); rt.Type == gjson.Number {
					refTime = rt.Float()
				}
			}
			q.emitMeta()
			continue
		}
		if !nameRes.Exists() {
			return in.errorf(n, off, `event without "name"`)
		}
		if nameRes.Type != gjson.String {
			return in.errorf(n, off, `"name" is not a string`)
		}
		if !tRes.Exists() {
			return in.errorf(n, off, `event %q without "time"`, nameRes.Str)
		}
		if tRes.Type != gjson.Number {
			return in.errorf(n, off, `event %q: "time" is not a number`, nameRes.Str)
		}
		t := tRes.Float()
		if delta {
			t += prevTime
			prevTime = t
		}
		t -= refTime
		// The record is mapped by the parsers' own mapper on the tape:
		// FuzzJtape holds the tape's values to gjson's, so what is compared
		// here is the record reading around it.
		data, path := dataAndPath(&tape, rec)
		q.rec, q.off = n, off
		if err := q.event(roundUS(t*timeScale), nameRes.Str, data, q.pathID(path)); err != nil {
			return in.errorf(n, off, "%v", err)
		}
	}
	q.finish()
	return nil
}

// oparseMsquic reads msquic's log with every line's fields in keyValues'
// map, as before the map-free STATS split.
func oparseMsquic(in *input, h timeline.Handler) error { return parseMsquicWith(in, h, true) }
