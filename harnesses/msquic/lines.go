package msquic

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/migaudit/migaudit/harnesses/run"
)

// Line is one line the C harness (c/migaudit_msquic.c) prints on stdout:
//
//	KEY t_us=<µs since start> unix_us=<wall clock µs> k=v ...
type Line struct {
	Key string
	TUS int64
	At  time.Time
	run.Fields
	Raw string
}

// ParseLine reads one stdout line. Lines that do not start with an upper-case
// key followed by t_us= and unix_us= are not harness lines (ok false).
func ParseLine(s string) (Line, bool, error) {
	s = strings.TrimSpace(s)
	parts := strings.Fields(s)
	if len(parts) < 3 || strings.ToUpper(parts[0]) != parts[0] || !strings.HasPrefix(parts[1], "t_us=") {
		return Line{}, false, nil
	}
	l := Line{Key: parts[0], Fields: map[string]string{}, Raw: s}
	for _, p := range parts[1:] {
		k, v, ok := strings.Cut(p, "=")
		if !ok {
			return Line{}, true, fmt.Errorf("%s line: field %q is not key=value", l.Key, p)
		}
		l.Fields[k] = v
	}
	t, err := strconv.ParseInt(l.Fields["t_us"], 10, 64)
	if err != nil {
		return Line{}, true, fmt.Errorf("%s line: t_us %q: %w", l.Key, l.Fields["t_us"], err)
	}
	u, err := strconv.ParseInt(l.Fields["unix_us"], 10, 64)
	if err != nil {
		return Line{}, true, fmt.Errorf("%s line: unix_us %q: %w", l.Key, l.Fields["unix_us"], err)
	}
	l.TUS, l.At = t, time.UnixMicro(u).UTC()
	return l, true, nil
}
