package parsers

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"unsafe"

	"github.com/migaudit/migaudit/parsers/timeline"
	"github.com/tidwall/gjson"
)

// seqReader splits a JSON-SEQ stream (RFC 7464: 0x1E before each record)
// or a newline-delimited one into records. A record ends at a newline or at
// the next 0x1E, whichever comes first, so both producers' layouts and a mix
// of them work; a record pretty-printed over several lines does not (no
// qlog producer writes one).
//
// The returned slice aliases the reader's buffer and is valid until the next
// call: memory is bounded by the longest line, not by the trace.
type seqReader struct {
	br      *bufio.Reader
	off     int64  // bytes consumed from br
	line    []byte // rest of the current line not yet returned
	lineOff int64  // offset of line[0]
	long    []byte // accumulates a line longer than br's buffer
	n       int    // records returned
	err     error  // sticky read error
}

// next returns the next non-blank record, its 1-based number and the byte
// offset of its first byte. It returns io.EOF at the end of the stream.
func (s *seqReader) next() ([]byte, int, int64, error) {
	for {
		if len(s.line) == 0 {
			if s.err != nil {
				return nil, s.n, s.off, s.err
			}
			s.readLine()
			continue
		}
		// Cut at the next RS within the line.
		rec := s.line
		recOff := s.lineOff
		if i := bytes.IndexByte(rec, 0x1e); i >= 0 {
			rec = rec[:i]
			s.line = s.line[i+1:]
			s.lineOff += int64(i + 1)
		} else {
			s.line = nil
		}
		// Trim blanks, keeping the offset of the first content byte.
		lead := 0
		for lead < len(rec) && isSpace(rec[lead]) {
			lead++
		}
		rec = rec[lead:]
		for len(rec) > 0 && isSpace(rec[len(rec)-1]) {
			rec = rec[:len(rec)-1]
		}
		if len(rec) == 0 {
			continue
		}
		s.n++
		return rec, s.n, recOff + int64(lead), nil
	}
}

func (s *seqReader) readLine() {
	s.lineOff = s.off
	b, err := s.br.ReadSlice('\n')
	s.off += int64(len(b))
	if errors.Is(err, bufio.ErrBufferFull) {
		s.long = append(s.long[:0], b...)
		for errors.Is(err, bufio.ErrBufferFull) {
			if len(s.long) > maxRecord {
				s.err = fmt.Errorf("line at byte %d longer than %d bytes without a record separator", s.lineOff, maxRecord)
				s.line = nil
				return
			}
			b, err = s.br.ReadSlice('\n')
			s.off += int64(len(b))
			s.long = append(s.long, b...)
		}
		b = s.long
	}
	s.line = b
	if err != nil {
		s.err = err
		if err != io.EOF {
			// A failed read (cut-off gzip, I/O error) leaves a partial line
			// that is not evidence of anything: report the failure instead.
			s.line = nil
		}
	}
}

// restIsBlank reports whether nothing but whitespace and separators
// follows the current record. It reads ahead only until the first
// non-blank byte.
func (s *seqReader) restIsBlank() bool {
	for {
		for _, c := range s.line {
			if !isSpace(c) && c != 0x1e {
				return false
			}
		}
		s.line = nil
		if s.err != nil {
			return s.err == io.EOF
		}
		s.readLine()
	}
}

func isSpace(c byte) bool { return c == ' ' || c == '\n' || c == '\r' || c == '\t' }

// bstr views b as a string without copying. The string must not outlive
// b's contents; anything kept is copied (strings.Clone) or interned.
func bstr(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

func validJSON(b []byte) bool { return gjson.Valid(bstr(b)) }

// truncatedJSON reports whether b is a proper prefix of a JSON value, as a
// record cut off mid-write is.
func truncatedJSON(b []byte) bool {
	var v json.RawMessage
	err := json.NewDecoder(bytes.NewReader(b)).Decode(&v)
	return errors.Is(err, io.ErrUnexpectedEOF)
}

// seqFormat is what distinguishes one JSON-SEQ qlog dialect from another.
type seqFormat struct {
	format string
	// impl is the implementation the dialect belongs to, used only when
	// the trace names it (vantage_point.name, title).
	impl string
	// notes are always true of the dialect.
	notes []string
	// lostFromCounters: packet losses come only as counter deltas
	// (quiche's cf_lost_packets), not packet_lost events.
	lostFromCounters bool
	// noPathNote is added when no metrics record carried a path id.
	noPathNote string
}

// parseJSONSeq drives a JSON-SEQ qlog: a header record, then one event per
// record with "time" (ms unless the header says otherwise), "name" and
// "data".
func parseJSONSeq(in *input, h timeline.Handler, f seqFormat) error {
	s := &seqReader{br: in.r}
	q := newQlog(h, f.format)
	q.lostFromCounters = f.lostFromCounters
	q.noPathNote = f.noPathNote
	q.meta.Notes = append(q.meta.Notes, f.notes...)
	timeScale := 1000.0 // qlog default: milliseconds
	delta := false
	var refTime float64
	var prevTime float64
	headerSeen := false
	// Records are cut, validated and put on tapes a stage ahead, on the
	// other core (seqpipe.go).
	split := newSeqSplitter(s)
	defer split.stop()
	recs := seqRecords{p: split}
	for {
		it := recs.next()
		if it.err == io.EOF {
			break
		}
		if it.err != nil {
			return in.readErr(it.err)
		}
		n, off := it.n, it.off
		if !it.ok {
			if it.truncatedTail {
				q.h.Warn(warning(n, off, fmt.Sprintf("final record truncated (%d bytes, cut off mid-write); ignored, the %d records before it are used", it.re-it.rs, n-1)))
				break
			}
			return in.errorf(n, off, "invalid JSON")
		}
		root := recs.tape.root()
		if !root.IsObject() {
			return in.errorf(n, off, "record is not a JSON object")
		}
		tRes, nameRes, dataRes, pathRes := root.missing(), root.missing(), root.missing(), root.missing()
		isHeader := false
		for c := root.first(); c.Exists(); c = c.next(root) {
			switch c.Key() {
			case "time":
				tRes = c
			case "name":
				nameRes = c
			case "data":
				dataRes = c
			case "path":
				pathRes = c
			case "qlog_version", "qlog_format", "file_schema", "trace", "traces", "serialization_format":
				isHeader = true
			}
		}
		if isHeader && !nameRes.Exists() {
			if headerSeen {
				return in.errorf(n, off, "second qlog header record")
			}
			headerSeen = true
			if root.Get("traces").IsArray() {
				return in.errorf(n, off, "a single-document qlog (\"traces\"), not JSON-SEQ: use --format %s", FormatPicoquic)
			}
			tr := root.Get("trace")
			q.meta.Vantage = vantage(tr.Path("vantage_point", "type").Str())
			q.meta.Implementation = implementationFrom(f.impl, tr.Path("vantage_point", "name").Str(), root.Get("title").Str(), tr.Get("title").Str())
			switch tr.Path("configuration", "time_units").Str() {
			case "us":
				timeScale = 1
			case "ns":
				timeScale = 0.001
			}
			cf := tr.Get("common_fields")
			switch cf.Get("time_format").Str() {
			case "delta":
				delta = true
			case "absolute":
				if rt := cf.Get("reference_time"); rt.Type() == gjson.Number {
					refTime = rt.Float()
				}
			}
			q.emitMeta()
			continue
		}
		if !nameRes.Exists() {
			return in.errorf(n, off, `event without "name"`)
		}
		if nameRes.Type() != gjson.String {
			return in.errorf(n, off, `"name" is not a string`)
		}
		if !tRes.Exists() {
			return in.errorf(n, off, `event %q without "time"`, nameRes.Str())
		}
		if tRes.Type() != gjson.Number {
			return in.errorf(n, off, `event %q: "time" is not a number`, nameRes.Str())
		}
		t := tRes.Float()
		if delta {
			t += prevTime
			prevTime = t
		}
		t -= refTime
		q.rec, q.off = n, off
		if err := q.event(roundUS(t*timeScale), nameRes.Str(), dataRes, q.pathID(pathRes)); err != nil {
			return in.errorf(n, off, "%v", err)
		}
	}
	q.finish()
	return nil
}
