package parsers

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"

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
	p := &picoquicParser{in: in, dec: json.NewDecoder(in.r), q: newQlog(h, FormatPicoquic)}
	err := p.document()
	if err == nil {
		p.q.finish()
		return nil
	}
	var stop errTruncatedDoc
	if errors.As(err, &stop) {
		if p.events == 0 {
			return fmt.Errorf("parse %s: document ends at byte %d before any event", in.name, p.dec.InputOffset())
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
}

// errTruncatedDoc is the document ending early: a warning, not an error.
type errTruncatedDoc struct{ offset int64 }

func (e errTruncatedDoc) Error() string { return fmt.Sprintf("truncated at byte %d", e.offset) }

// fail classifies a decoder error at the current position.
func (p *picoquicParser) fail(err error, what string) error {
	if p.start < p.dec.InputOffset() && what != "event" {
		p.start = p.dec.InputOffset()
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
	off := p.dec.InputOffset()
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
		return p.in.errorf(p.events+1, p.dec.InputOffset(), "%s: expected %q, found %v", what, want, tok)
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
		return "", p.in.errorf(p.events+1, p.dec.InputOffset(), "%s: expected a key, found %v", what, tok)
	}
	return k, nil
}

func (p *picoquicParser) value(v any, what string) error {
	if err := p.dec.Decode(v); err != nil {
		var ute *json.UnmarshalTypeError
		if errors.As(err, &ute) {
			return p.in.errorf(p.events+1, p.dec.InputOffset(), "%s: %v", what, err)
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
				return p.in.errorf(p.events+1, p.dec.InputOffset(), "unknown time_units %q", c.TimeUnits)
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
		return p.in.errorf(p.events+1, p.dec.InputOffset(), "event_fields %q name no time or event column", fields)
	}
	if err := p.delim('[', `"events"`); err != nil {
		return err
	}
	var name []byte
	for p.dec.More() {
		p.raw = p.raw[:0]
		p.start = p.nextStart()
		if err := p.dec.Decode(&p.raw); err != nil {
			return p.fail(err, "event")
		}
		p.events++
		off := p.dec.InputOffset() - int64(len(p.raw))
		if !p.tape.parse(p.raw) {
			return p.in.errorf(p.events, off, "invalid JSON")
		}
		ev := p.tape.root()
		t, cat, evn, data, path := ev.missing(), ev.missing(), ev.missing(), ev.missing(), ev.missing()
		switch {
		case ev.IsArray():
			k := 0
			for v := ev.first(); v.Exists(); v = v.next(ev) {
				switch k {
				case iTime:
					t = v
				case iCat:
					cat = v
				case iEvent:
					evn = v
				case iData:
					data = v
				case iPath:
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
		name = append(name[:0], cat.Str()...)
		if len(name) > 0 {
			name = append(name, ':')
		}
		name = append(name, evn.Str()...)
		p.q.rec, p.q.off = p.events, off
		if err := p.q.event(roundUS(t.Float()*scale), bstr(name), data, p.q.pathID(path)); err != nil {
			return p.in.errorf(p.events, off, "%v", err)
		}
	}
	return p.delim(']', `"events"`)
}

// warning builds a timeline.Warning.
func warning(record int, offset int64, msg string) timeline.Warning {
	return timeline.Warning{Record: record, Offset: offset, Message: msg}
}
