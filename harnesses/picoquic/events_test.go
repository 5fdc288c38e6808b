package picoquic

import (
	"strings"
	"testing"
	"time"
)

func TestParseEvent(t *testing.T) {
	cases := []struct {
		line   string
		ok     bool
		err    string
		name   string
		fields map[string]string
		at     int64
	}{
		{line: "EV 1700000000123456789 local from=198.18.1.2:40000 to=198.18.2.2:40001", ok: true, name: "local",
			fields: map[string]string{"from": "198.18.1.2:40000", "to": "198.18.2.2:40001"}, at: 1700000000123456789},
		{line: "EV 1700000000000000001 ready", ok: true, name: "ready", fields: map[string]string{}, at: 1700000000000000001},
		{line: "something the library printed", ok: false},
		{line: "EV 12x ready", ok: true, err: "not unix nanoseconds"},
		{line: "EV 1700000000000000001", ok: true, err: "want EV <unix-ns> <name>"},
		{line: "EV 1700000000000000001 peer to", ok: true, err: `field "to" is not key=value`},
	}
	for _, c := range cases {
		ev, ok, err := ParseEvent(c.line)
		if ok != c.ok {
			t.Errorf("%q: ok = %v, want %v", c.line, ok, c.ok)
			continue
		}
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q: err = %v, want %q", c.line, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", c.line, err)
			continue
		}
		if !ok {
			continue
		}
		if ev.Name != c.name || !ev.At.Equal(time.Unix(0, c.at)) || len(ev.Fields) != len(c.fields) {
			t.Errorf("%q: got %+v", c.line, ev)
		}
		for k, v := range c.fields {
			if ev.Fields[k] != v {
				t.Errorf("%q: field %s = %q, want %q", c.line, k, ev.Fields[k], v)
			}
		}
	}
	ev, _, _ := ParseEvent("EV 1700000000000000001 progress received=4096 fin=x")
	if ev.Int("received") != 4096 || ev.Int("fin") != -1 || ev.Int("absent") != -1 {
		t.Errorf("Int: %d %d %d", ev.Int("received"), ev.Int("fin"), ev.Int("absent"))
	}
}
