package picoquic

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/migaudit/migaudit/harnesses/run"
)

// Event is one line pqharness prints on stdout:
//
//	EV <unix-ns> <name> key=value ...
type Event struct {
	At   time.Time
	Name string
	run.Fields
	Line string
}

// ParseEvent parses one stdout line; ok is false for lines that are not
// events (nothing else is printed, but a library may write to stdout).
func ParseEvent(line string) (ev Event, ok bool, err error) {
	if !strings.HasPrefix(line, "EV ") {
		return Event{}, false, nil
	}
	f := strings.Fields(line)
	if len(f) < 3 {
		return Event{}, true, fmt.Errorf("event line %q: want EV <unix-ns> <name> [key=value ...]", line)
	}
	ns, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil || ns <= 0 {
		return Event{}, true, fmt.Errorf("event line %q: time %q is not unix nanoseconds", line, f[1])
	}
	ev = Event{At: time.Unix(0, ns), Name: f[2], Fields: map[string]string{}, Line: line}
	for _, kv := range f[3:] {
		k, v, found := strings.Cut(kv, "=")
		if !found || k == "" {
			return Event{}, true, fmt.Errorf("event line %q: field %q is not key=value", line, kv)
		}
		ev.Fields[k] = v
	}
	return ev, true, nil
}
