package parsers

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/migaudit/migaudit/parsers/timeline"
)

// Summary is what a trace yields, counted while streaming (nothing is kept
// but the counts).
type Summary struct {
	Source    string                     `json:"source"`
	Meta      timeline.Meta              `json:"meta"`
	Samples   int                        `json:"samples"`
	Reported  map[string]int             `json:"reported"` // samples reporting each field
	Events    map[timeline.EventKind]int `json:"events"`
	Warnings  []timeline.Warning         `json:"warnings,omitempty"`
	FirstUS   int64                      `json:"first_us"`
	LastUS    int64                      `json:"last_us"`
	MaxCwnd   int64                      `json:"max_cwnd_bytes"`
	MaxCwndAt int64                      `json:"max_cwnd_at_us"`
	PathIDs   []string                   `json:"path_ids,omitempty"`
	Addresses []string                   `json:"addresses,omitempty"`

	paths map[string]bool
	addrs map[string]bool
	any   bool
}

var fieldNames = []struct {
	f    timeline.Field
	name string
}{
	{timeline.FieldCwnd, "cwnd"},
	{timeline.FieldBytesInFlight, "bytes_in_flight"},
	{timeline.FieldSmoothedRTT, "smoothed_rtt"},
	{timeline.FieldMinRTT, "min_rtt"},
	{timeline.FieldLatestRTT, "latest_rtt"},
	{timeline.FieldRTTVar, "rttvar"},
}

func newSummary(source string) *Summary {
	return &Summary{Source: source, Reported: map[string]int{}, Events: map[timeline.EventKind]int{},
		paths: map[string]bool{}, addrs: map[string]bool{}}
}

// summarizer is the timeline.Handler that fills a Summary.
type summarizer struct{ s *Summary }

func (h summarizer) Meta(m timeline.Meta)     { h.s.Meta = m }
func (h summarizer) Warn(w timeline.Warning)  { h.s.Warnings = append(h.s.Warnings, w) }
func (h summarizer) Sample(x timeline.Sample) { h.s.sample(x) }
func (h summarizer) Event(e timeline.Event)   { h.s.event(e) }

func (s *Summary) time(t int64) {
	if !s.any || t < s.FirstUS {
		s.FirstUS = t
	}
	if !s.any || t > s.LastUS {
		s.LastUS = t
	}
	s.any = true
}

func (s *Summary) sample(x timeline.Sample) {
	s.Samples++
	s.time(x.TimeUS)
	for _, f := range fieldNames {
		if x.Fields.Has(f.f) {
			s.Reported[f.name]++
		}
	}
	if x.Fields.Has(timeline.FieldCwnd) && x.CwndBytes > s.MaxCwnd {
		s.MaxCwnd, s.MaxCwndAt = x.CwndBytes, x.TimeUS
	}
	s.path(x.PathID)
}

func (s *Summary) path(p string) {
	if p != "" && !s.paths[p] {
		s.paths[p] = true
		s.PathIDs = append(s.PathIDs, p)
	}
}

func (s *Summary) event(e timeline.Event) {
	s.Events[e.Kind]++
	s.time(e.TimeUS)
	s.path(e.PathID)
	for _, a := range []string{e.From, e.To} {
		if a != "" && !s.addrs[a] && len(s.addrs) < 64 {
			s.addrs[a] = true
			s.Addresses = append(s.Addresses, a)
		}
	}
}

// Summarize parses the trace at path and counts what it yields.
func Summarize(path string, opt Options) (*Summary, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("parse %s: %w", filepath.Base(path), err)
	}
	defer f.Close()
	s := newSummary(path)
	if err := Parse(filepath.Base(path), f, opt, summarizer{s}); err != nil {
		return nil, err
	}
	sort.Strings(s.Addresses)
	return s, nil
}

// DumpOptions controls Dump.
type DumpOptions struct {
	Format string // as Options.Format
	JSON   bool   // the summary as one JSON object per trace
	All    bool   // every meta/sample/event/warning as a JSON line
}

// Dump writes, for each trace, a summary (text or JSON) or, with All, the
// whole stream as JSON lines: {"meta":…}, {"sample":…}, {"event":…},
// {"warning":…}.
func Dump(w io.Writer, paths []string, opt DumpOptions) error {
	for _, p := range paths {
		if opt.All {
			f, err := os.Open(p)
			if err != nil {
				return fmt.Errorf("parse %s: %w", filepath.Base(p), err)
			}
			d := &jsonLines{enc: json.NewEncoder(w)}
			err = Parse(filepath.Base(p), f, Options{Format: opt.Format}, d)
			f.Close()
			if err == nil {
				err = d.err
			}
			if err != nil {
				return err
			}
			continue
		}
		s, err := Summarize(p, Options{Format: opt.Format})
		if err != nil {
			return err
		}
		if opt.JSON {
			if err := json.NewEncoder(w).Encode(s); err != nil {
				return err
			}
			continue
		}
		if err := s.writeText(w); err != nil {
			return err
		}
	}
	return nil
}

func (s *Summary) writeText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n", s.Source)
	fmt.Fprintf(&b, "  format %s, implementation %q, vantage %q, path ids %v, addresses logged %v\n",
		s.Meta.Format, s.Meta.Implementation, s.Meta.Vantage, s.Meta.PathIDs, s.Meta.LogsAddresses)
	fmt.Fprintf(&b, "  time %d µs .. %d µs\n", s.FirstUS, s.LastUS)
	fmt.Fprintf(&b, "  samples %d", s.Samples)
	for _, f := range fieldNames {
		if n := s.Reported[f.name]; n > 0 {
			fmt.Fprintf(&b, ", %s %d", f.name, n)
		}
	}
	fmt.Fprintf(&b, "\n  max cwnd %d B at %d µs\n", s.MaxCwnd, s.MaxCwndAt)
	kinds := make([]string, 0, len(s.Events))
	for k := range s.Events {
		kinds = append(kinds, string(k))
	}
	sort.Strings(kinds)
	for _, k := range kinds {
		fmt.Fprintf(&b, "  event %s %d\n", k, s.Events[timeline.EventKind(k)])
	}
	if len(s.PathIDs) > 0 {
		fmt.Fprintf(&b, "  path ids %s\n", strings.Join(s.PathIDs, " "))
	}
	if len(s.Addresses) > 0 {
		fmt.Fprintf(&b, "  addresses %s\n", strings.Join(s.Addresses, " "))
	}
	keys := make([]string, 0, len(s.Meta.Params))
	for k := range s.Meta.Params {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(&b, "  param %s=%d\n", k, s.Meta.Params[k])
	}
	for _, n := range s.Meta.Notes {
		fmt.Fprintf(&b, "  note: %s\n", n)
	}
	for _, x := range s.Warnings {
		fmt.Fprintf(&b, "  warning: record %d at byte %d: %s\n", x.Record, x.Offset, x.Message)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

type jsonLines struct {
	enc *json.Encoder
	err error
}

func (d *jsonLines) put(k string, v any) {
	if d.err == nil {
		d.err = d.enc.Encode(map[string]any{k: v})
	}
}
func (d *jsonLines) Meta(m timeline.Meta)     { d.put("meta", m) }
func (d *jsonLines) Sample(s timeline.Sample) { d.put("sample", s) }
func (d *jsonLines) Event(e timeline.Event)   { d.put("event", e) }
func (d *jsonLines) Warn(w timeline.Warning)  { d.put("warning", w) }
