package parsers

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/migaudit/migaudit/parsers/timeline"
)

// parseCSV reads a timeline CSV: a header row naming columns, then one row
// per sample. Columns are found by header name, case-insensitively, and
// unknown columns (the study's "arm", "rep" labels, ...) are ignored:
//
//	time_us                  required; µs, integer or float (rounded)
//	cwnd                     bytes
//	bytes_in_flight          bytes
//	smoothed_rtt, min_rtt, latest_rtt, rttvar   µs (an "_us" suffix is accepted)
//	path_id                  the sample's path (the quiche live harness)
//	local, peer, active      the path's addresses and whether it is the active one
//	role                     "client" or "server": the vantage point
//
// An empty cell means "not reported". The study's timelines
// (../shared/reference/timelines) are all in µs: their time_us runs to
// ~2.5e7 for a ~25 s run and their RTTs read 20000–40000 on 20/40 ms paths.
// msquic's "no measurement" RTT 4294967295 is reported as 0, as in its log.
//
// With path_id and peer/local columns the parser also emits path events: one
// "path_seen" when a path id first appears, one "path_active" whenever the
// row marked active belongs to a different path than before.
func parseCSV(in *input, h timeline.Handler) error {
	r := csv.NewReader(&lineLimit{r: in.r, max: maxRecord})
	r.ReuseRecord = true
	r.TrimLeadingSpace = true
	r.Comment = '#'
	header, err := r.Read()
	if err == io.EOF {
		return fmt.Errorf("parse %s: empty CSV: no header row", in.name)
	}
	if err != nil {
		return csvErr(in, err, 0)
	}
	col := map[string]int{}
	for i, name := range header {
		name = strings.ToLower(strings.TrimSpace(name))
		name = strings.TrimSuffix(name, "_us")
		if name == "time" {
			name = "time_us"
		}
		switch name {
		case "cwnd_bytes", "congestion_window":
			name = "cwnd"
		case "srtt", "smoothed_rtt":
			name = "smoothed_rtt"
		case "rtt_var", "rtt_variance":
			name = "rttvar"
		case "path":
			name = "path_id"
		case "vantage":
			name = "role"
		}
		if _, dup := col[name]; !dup {
			col[name] = i
		}
	}
	iTime, ok := col["time_us"]
	if !ok {
		return fmt.Errorf("parse %s: CSV header has no time_us column (header: %s)", in.name, excerpt([]byte(strings.Join(header, ","))))
	}
	metrics := []struct {
		name  string
		field timeline.Field
		rtt   bool
	}{
		{"cwnd", timeline.FieldCwnd, false},
		{"bytes_in_flight", timeline.FieldBytesInFlight, false},
		{"smoothed_rtt", timeline.FieldSmoothedRTT, true},
		{"min_rtt", timeline.FieldMinRTT, true},
		{"latest_rtt", timeline.FieldLatestRTT, true},
		{"rttvar", timeline.FieldRTTVar, false},
	}
	type metricCol struct {
		idx   int
		name  string
		field timeline.Field
		rtt   bool
	}
	var mcols []metricCol
	for _, m := range metrics {
		if i, ok := col[m.name]; ok {
			mcols = append(mcols, metricCol{i, m.name, m.field, m.rtt})
		}
	}
	if len(mcols) == 0 {
		return fmt.Errorf("parse %s: CSV header has no metric column (need at least one of cwnd, bytes_in_flight, smoothed_rtt, min_rtt, latest_rtt, rttvar)", in.name)
	}
	cell := func(rec []string, name string) string {
		if i, ok := col[name]; ok && i < len(rec) {
			return strings.TrimSpace(rec[i])
		}
		return ""
	}
	meta := timeline.Meta{Format: FormatCSV,
		Notes: []string{"time_us and RTT columns are read as µs"}}
	last := map[string]timeline.Sample{}
	seen := map[string]bool{}
	active := ""
	h.Meta(meta)
	rowOff := r.InputOffset()
	rows := 0
	for {
		rec, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			var pe *csv.ParseError
			if errors.As(err, &pe) && errors.Is(pe.Err, csv.ErrFieldCount) {
				_, next := r.Read()
				if next == io.EOF {
					h.Warn(warning(pe.Line, rowOff, fmt.Sprintf("final row truncated (%d of %d columns); ignored", len(rec), len(header))))
					break
				}
				if errors.Is(next, errTruncatedGzip) {
					return in.readErr(next)
				}
			}
			return csvErr(in, err, rowOff)
		}
		line, _ := r.FieldPos(0)
		rows++
		off := rowOff
		rowOff = r.InputOffset()
		tv, err := strconv.ParseFloat(strings.TrimSpace(rec[iTime]), 64)
		if err != nil {
			return in.errorf(line, off, "time_us %q is not a number", rec[iTime])
		}
		t := roundUS(tv)
		if meta.Vantage == "" {
			if v := vantage(cell(rec, "role")); v != "" {
				meta.Vantage = v
				h.Meta(meta)
			}
		}
		path := cell(rec, "path_id")
		if path != "" {
			meta.PathIDs = true
			peer, local := cell(rec, "peer"), cell(rec, "local")
			if peer != "" {
				meta.LogsAddresses = true
			}
			if !seen[path] {
				seen[path] = true
				h.Event(timeline.Event{TimeUS: t, Kind: timeline.PathEvent, PathID: path, PacketNumber: -1,
					From: peer, To: local, Detail: "path_seen"})
			}
			if a := strings.ToLower(cell(rec, "active")); (a == "1" || a == "true" || a == "yes") && path != active {
				active = path
				h.Event(timeline.Event{TimeUS: t, Kind: timeline.PathEvent, PathID: path, PacketNumber: -1,
					From: peer, To: local, Detail: "path_active"})
			}
		}
		s := last[path]
		s.TimeUS, s.PathID, s.Fields = t, path, 0
		for _, m := range mcols {
			c := strings.TrimSpace(rec[m.idx])
			if c == "" {
				continue
			}
			v, err := strconv.ParseFloat(c, 64)
			if err != nil {
				return in.errorf(line, off, "column %s: %q is not a number", m.name, c)
			}
			n := roundUS(v)
			if m.rtt && n == msquicNoRTT {
				n = 0
			}
			s.Set(m.field, n)
		}
		if s.Fields == 0 {
			continue
		}
		last[path] = s
		h.Sample(s)
	}
	if rows == 0 {
		return fmt.Errorf("parse %s: CSV has a header but no rows", in.name)
	}
	if !meta.PathIDs {
		meta.Notes = append(meta.Notes, "metrics carry no path id")
	}
	h.Meta(meta)
	return nil
}

func csvErr(in *input, err error, off int64) error {
	if errors.Is(err, errTruncatedGzip) {
		return in.readErr(err)
	}
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		if pe.Err != nil && (errors.Is(pe.Err, errTruncatedGzip)) {
			return in.readErr(pe.Err)
		}
		return in.errorf(pe.Line, off, "%v", pe.Err)
	}
	return in.readErr(err)
}

// lineLimit fails a read once a line exceeds max bytes: encoding/csv holds a
// whole row in memory, and a row must not be allowed to be the whole file.
type lineLimit struct {
	r   io.Reader
	max int
	cur int
}

func (l *lineLimit) Read(p []byte) (int, error) {
	n, err := l.r.Read(p)
	b := p[:n]
	first := bytes.IndexByte(b, '\n')
	if first < 0 {
		l.cur += n
	} else {
		// Lines wholly inside b are shorter than b; only the one continued
		// from earlier reads can be long.
		if l.cur+first > l.max {
			return 0, fmt.Errorf("CSV line longer than %d bytes", l.max)
		}
		l.cur = n - 1 - bytes.LastIndexByte(b, '\n')
	}
	if l.cur > l.max {
		return 0, fmt.Errorf("CSV line longer than %d bytes", l.max)
	}
	return n, err
}
