package parsers

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/migaudit/migaudit/parsers/timeline"
	"github.com/tidwall/gjson"
)

// parsePicoquic reads picoquic's qlog: qlog draft-00, ONE JSON document
// {"qlog_version":"draft-00","traces":[{"vantage_point":…,"event_fields":
// ["relative_time","category","event","data"],"configuration":{"time_units":
// "us"},"events":[[0,"transport","datagram_received",{…}],…]}]}.
//
// The document is walked with encoding/json's token stream and each event
// is decoded on its own, so memory is bounded by the largest event, not the
// trace. Times and RTTs are in the trace's time_units (picoquic: µs; the
// draft-00 default is ms). picoquic logs addresses on datagram events
// (addr_from/addr_to), and writes events slightly out of time order (an
// event is stamped when its packet was processed); the order is kept as
// logged.
func parsePicoquic(in *input, h timeline.Handler) error {
	return parsePicoquicWith(in, h, false)
}

// parsePicoquicWith is parsePicoquic; decoderOnly reads every event through
// encoding/json's decoder, as before the event scanner (the test oracle).
func parsePicoquicWith(in *input, h timeline.Handler, decoderOnly bool) error {
	p := &picoquicParser{in: in, dec: json.NewDecoder(in.r), q: newQlog(h, FormatPicoquic), decoderOnly: decoderOnly}
	err := p.document()
	if err == nil {
		p.q.finish()
		return nil
	}
	var stop errTruncatedDoc
	if errors.As(err, &stop) {
		if p.events == 0 {
			return fmt.Errorf("parse %s: document ends at byte %d before any event", in.name, p.offset())
		}
		p.q.h.Warn(warning(p.events+1, stop.offset,
			fmt.Sprintf("document truncated at byte %d (cut off mid-write); the %d events before it are used", stop.offset, p.events)))
		p.q.finish()
		return nil
	}
	return err
}

type picoquicParser struct {
	in     *input
	dec    *json.Decoder
	q      *qlog
	raw    json.RawMessage
	events int
	title  string
	start  int64 // offset of the value being decoded, for messages
	tape   jtape
	// base is the offset of dec's first byte in the document: the event
	// scanner hands the rest of the document to a new decoder.
	base int64
	name []byte
	// decoderOnly skips scanEvents (parsePicoquicWith).
	decoderOnly bool
}

// offset is the decoder's position in the document.
func (p *picoquicParser) offset() int64 { return p.base + p.dec.InputOffset() }

// errTruncatedDoc is the document ending early: a warning, not an error.
type errTruncatedDoc struct{ offset int64 }

func (e errTruncatedDoc) Error() string { return fmt.Sprintf("truncated at byte %d", e.offset) }

// fail classifies a decoder error at the current position.
func (p *picoquicParser) fail(err error, what string) error {
	if p.start < p.offset() && what != "event" {
		p.start = p.offset()
	}
	if errors.Is(err, errTruncatedGzip) {
		return p.in.readErr(err)
	}
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return errTruncatedDoc{offset: p.start}
	}
	return p.in.errorf(p.events+1, p.start, "%s: %v", what, err)
}

// nextStart is the offset of the next value: the decoder's offset plus the
// separators it has not consumed yet.
func (p *picoquicParser) nextStart() int64 {
	off := p.offset()
	var b [1]byte
	r := p.dec.Buffered()
	for {
		if n, _ := r.Read(b[:]); n == 0 {
			return off
		}
		switch b[0] {
		case ' ', '\t', '\r', '\n', ',', ':':
			off++
		default:
			return off
		}
	}
}

func (p *picoquicParser) delim(want json.Delim, what string) error {
	tok, err := p.dec.Token()
	if err != nil {
		return p.fail(err, what)
	}
	if d, ok := tok.(json.Delim); !ok || d != want {
		return p.in.errorf(p.events+1, p.offset(), "%s: expected %q, found %v", what, want, tok)
	}
	return nil
}

func (p *picoquicParser) key(what string) (string, error) {
	tok, err := p.dec.Token()
	if err != nil {
		return "", p.fail(err, what)
	}
	k, ok := tok.(string)
	if !ok {
		return "", p.in.errorf(p.events+1, p.offset(), "%s: expected a key, found %v", what, tok)
	}
	return k, nil
}

func (p *picoquicParser) value(v any, what string) error {
	if err := p.dec.Decode(v); err != nil {
		var ute *json.UnmarshalTypeError
		if errors.As(err, &ute) {
			return p.in.errorf(p.events+1, p.offset(), "%s: %v", what, err)
		}
		return p.fail(err, what)
	}
	return nil
}

func (p *picoquicParser) document() error {
	if err := p.delim('{', "qlog document"); err != nil {
		return err
	}
	sawTraces := false
	for p.dec.More() {
		k, err := p.key("qlog document")
		if err != nil {
			return err
		}
		switch k {
		case "traces":
			sawTraces = true
			if err := p.delim('[', `"traces"`); err != nil {
				return err
			}
			for p.dec.More() {
				if err := p.trace(); err != nil {
					return err
				}
			}
			if err := p.delim(']', `"traces"`); err != nil {
				return err
			}
		case "title":
			var s any
			if err := p.value(&s, `"title"`); err != nil {
				return err
			}
			p.title, _ = s.(string)
		default:
			if err := p.value(&p.raw, fmt.Sprintf("%q", k)); err != nil {
				return err
			}
		}
	}
	if err := p.delim('}', "qlog document"); err != nil {
		return err
	}
	if !sawTraces {
		return fmt.Errorf("parse %s: qlog document has no \"traces\"", p.in.name)
	}
	return nil
}

func (p *picoquicParser) trace() error {
	if err := p.delim('{', "trace"); err != nil {
		return err
	}
	fields := []string{"relative_time", "category", "event", "data"}
	scale := 1000.0 // draft-00 default unit: ms
	var title string
	for p.dec.More() {
		k, err := p.key("trace")
		if err != nil {
			return err
		}
		switch k {
		case "vantage_point":
			var vp struct{ Name, Type string }
			if err := p.value(&vp, `"vantage_point"`); err != nil {
				return err
			}
			p.q.meta.Vantage = vantage(vp.Type)
			p.q.meta.Implementation = implementationFrom("picoquic", vp.Name, p.title, title)
		case "title":
			var s any
			if err := p.value(&s, `"title"`); err != nil {
				return err
			}
			title, _ = s.(string)
			if p.q.meta.Implementation == "" {
				p.q.meta.Implementation = implementationFrom("picoquic", title, p.title)
			}
		case "event_fields":
			if err := p.value(&fields, `"event_fields"`); err != nil {
				return err
			}
		case "configuration":
			var c struct {
				TimeUnits string `json:"time_units"`
			}
			if err := p.value(&c, `"configuration"`); err != nil {
				return err
			}
			switch c.TimeUnits {
			case "us":
				scale = 1
			case "ms", "":
				scale = 1000
			default:
				return p.in.errorf(p.events+1, p.offset(), "unknown time_units %q", c.TimeUnits)
			}
		case "events":
			p.q.rttScale = scale
			p.q.emitMeta()
			if err := p.eventList(fields, scale); err != nil {
				return err
			}
		default:
			if err := p.value(&p.raw, fmt.Sprintf("%q", k)); err != nil {
				return err
			}
		}
	}
	return p.delim('}', "trace")
}

func (p *picoquicParser) eventList(fields []string, scale float64) error {
	idx := map[string]int{}
	for i, f := range fields {
		idx[f] = i
	}
	at := func(name string, alt string) int {
		if i, ok := idx[name]; ok {
			return i
		}
		if i, ok := idx[alt]; ok {
			return i
		}
		return -1
	}
	iTime, iCat, iEvent, iData := at("relative_time", "time"), at("category", ""), at("event", "name"), at("data", "")
	iPath := at("path_id", "path")
	if iTime < 0 || iEvent < 0 {
		return p.in.errorf(p.events+1, p.offset(), "event_fields %q name no time or event column", fields)
	}
	if err := p.delim('[', `"events"`); err != nil {
		return err
	}
	cols := eventCols{iTime, iCat, iEvent, iData, iPath}
	if !p.decoderOnly {
		if err := p.scanEvents(cols, scale); err != nil {
			return err
		}
	}
	// What the scanner left (the end of the list, or an event it would not
	// vouch for) is read as before, so errors read the same.
	for p.dec.More() {
		p.raw = p.raw[:0]
		p.start = p.nextStart()
		if err := p.dec.Decode(&p.raw); err != nil {
			return p.fail(err, "event")
		}
		p.events++
		off := p.offset() - int64(len(p.raw))
		if err := p.event(p.raw, off, cols, scale); err != nil {
			return err
		}
	}
	return p.delim(']', `"events"`)
}

// eventCols are the positions of an array event's fields.
type eventCols struct{ time, cat, event, data, path int }

// event maps one event (its JSON text raw, at offset off) onto the timeline.
func (p *picoquicParser) event(raw []byte, off int64, c eventCols, scale float64) error {
	if !p.tape.parse(raw) {
		return p.in.errorf(p.events, off, "invalid JSON")
	}
	return p.eventOnTape(off, c, scale)
}

// eventOnTape maps the event on the tape.
func (p *picoquicParser) eventOnTape(off int64, c eventCols, scale float64) error {
	ev := p.tape.root()
	t, cat, evn, data, path := ev.missing(), ev.missing(), ev.missing(), ev.missing(), ev.missing()
	switch {
	case ev.IsArray():
		k := 0
		for v := ev.first(); v.Exists(); v = v.next(ev) {
			switch k {
			case c.time:
				t = v
			case c.cat:
				cat = v
			case c.event:
				evn = v
			case c.data:
				data = v
			case c.path:
				path = v
			}
			k++
		}
	case ev.IsObject():
		// Named-field events (later qlog drafts in a single document).
		t, evn, data, path = ev.Get("time"), ev.Get("name"), ev.Get("data"), ev.Get("path")
		cat = ev.Get("category")
	default:
		return p.in.errorf(p.events, off, "event is neither an array nor an object")
	}
	if t.Type() != gjson.Number {
		return p.in.errorf(p.events, off, "event time is missing or not a number")
	}
	if evn.Type() != gjson.String {
		return p.in.errorf(p.events, off, "event name is missing or not a string")
	}
	name := append(p.name[:0], cat.Str()...)
	if len(name) > 0 {
		name = append(name, ':')
	}
	name = append(name, evn.Str()...)
	p.name = name
	p.q.rec, p.q.off = p.events, off
	if err := p.q.event(roundUS(t.Float()*scale), bstr(name), data, p.q.pathID(path)); err != nil {
		return p.in.errorf(p.events, off, "%v", err)
	}
	return nil
}

// scanEvents reads the events list after its '[' without encoding/json's
// decoder, which is what bounded picoquic's parse speed: it finds each
// event's end by bracket depth, validates and maps it with the tape, and
// stops at the list's ']' or at anything unusual (a scalar element, an
// event the tape rejects, a missing comma, the end of input, an event over
// maxRecord). It then hands the rest of the document, from the element or
// separator where it stopped, to a new decoder in the state the old loop
// would have been in there, so the end of the list and every malformed
// case are read, and reported, exactly as before.
func (p *picoquicParser) scanEvents(c eventCols, scale float64) error {
	src := io.MultiReader(p.dec.Buffered(), p.in.r)
	abs := p.offset() // document offset of buf[0]
	buf := make([]byte, 0, 64<<10)
	pos := 0
	var readErr error
	// fill reads more input; false at the end of input or on error.
	fill := func() bool {
		if readErr != nil {
			return false
		}
		if pos > 0 && pos >= len(buf)/2 {
			n := copy(buf, buf[pos:])
			buf, abs, pos = buf[:n], abs+int64(pos), 0
		}
		if len(buf) == cap(buf) {
			if cap(buf) >= maxRecord {
				return false
			}
			buf = append(buf, make([]byte, cap(buf))...)[:len(buf)]
		}
		n, err := src.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err != nil {
			readErr = err
		}
		return n > 0 || err == nil
	}
	// handOver gives the decoder the document from buf[at] on, after a
	// prefix that puts it in the state the old loop had there: inside the
	// events list of a trace in the traces list of the document, at the
	// first element ("["), at a later one, its comma consumed ("[0,"), or
	// at a separator ("[0").
	// The document offset it starts at may precede buf when only blanks
	// were dropped since: they are given back as spaces.
	handOver := func(from int64, prefix string) {
		const nest = `{"t":[{"e":`
		at, blanks := int(from-abs), ""
		if at < 0 {
			at, blanks = 0, strings.Repeat(" ", int(abs-from))
		}
		// One piece, so the decoder buffers what follows the prefix as the
		// old one had (nextStart reads the decoder's buffer).
		head := append([]byte(nest+prefix+blanks), buf[at:]...)
		rest := io.MultiReader(bytes.NewReader(head), errReader{src, readErr})
		p.dec = json.NewDecoder(rest)
		p.base = from - int64(len(nest)+len(prefix))
		for range 6 { // { "t" [ { "e" [
			_, _ = p.dec.Token()
		}
		if prefix != "[" {
			var zero json.RawMessage
			_ = p.dec.Decode(&zero)
		}
	}
	// elemPrefix is the decoder state before an element: the list's start,
	// or a consumed comma (the decoder must see it again: "[0,").
	elemPrefix := "["
	skipBlanks := func() {
		for {
			for pos < len(buf) && isSpace(buf[pos]) {
				pos++
			}
			if pos < len(buf) || !fill() {
				return
			}
		}
	}
	for {
		ws := abs + int64(pos) // before the blanks: the decoder stops there at the end of input
		skipBlanks()
		if pos >= len(buf) || (buf[pos] != '[' && buf[pos] != '{') {
			handOver(ws, elemPrefix)
			return nil
		}
		// The element: the tape finds its end as it validates it. When it
		// fails, either the element is incomplete in buf (read more and
		// try again) or it is malformed (hand it over).
		var end int
		for {
			n, ok := p.tape.parsePrefix(buf[pos:])
			if ok {
				end = pos + n
				break
			}
			if complete(buf[pos:]) || !fill() {
				handOver(ws, elemPrefix)
				return nil
			}
		}
		p.events++
		if err := p.eventOnTape(abs+int64(pos), c, scale); err != nil {
			return err
		}
		pos = end
		// The separator: a comma, else (the list's end, or not) handed over.
		ws = abs + int64(pos)
		skipBlanks()
		if pos < len(buf) && buf[pos] == ',' {
			pos++
			elemPrefix = "[0,"
			continue
		}
		handOver(ws, "[0")
		return nil
	}
}

// complete reports whether b holds a whole bracketed value from b[0]
// (by depth outside strings, without validating it).
func complete(b []byte) bool {
	depth, inStr := 0, false
	for i := 0; i < len(b); i++ {
		ch := b[i]
		if inStr {
			if ch == '\\' {
				i++
			} else if ch == '"' {
				inStr = false
			}
			continue
		}
		switch ch {
		case '"':
			inStr = true
		case '[', '{':
			depth++
		case ']', '}':
			depth--
			if depth == 0 {
				return true
			}
		}
	}
	return false
}

// errReader returns what is left of r, then err (the read error the
// scanner met, which the decoder must meet too).
type errReader struct {
	r   io.Reader
	err error
}

func (e errReader) Read(b []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	return e.r.Read(b)
}

// warning builds a timeline.Warning.
func warning(record int, offset int64, msg string) timeline.Warning {
	return timeline.Warning{Record: record, Offset: offset, Message: msg}
}
