package lsquic

import (
	"testing"
	"time"

	"github.com/migaudit/migaudit/harnesses/run"
)

func TestParseLine(t *testing.T) {
	for _, c := range []struct {
		in      string
		ok, err bool
		verb    string
		field   string
		value   string
	}{
		{in: "[lsq_server] t_us=5 peer unix_us=1764867600000000 from=10.0.1.2:4 to=10.0.3.2:4", ok: true, verb: "peer", field: "to", value: "10.0.3.2:4"},
		{in: "[lsq_client] t_us=5 error unix_us=1 what=sendmsg errno=1 msg=\"Operation not permitted\"", ok: true, verb: "error", field: "what", value: "sendmsg"},
		{in: "[lsq_server] t_us=5 LOG [DEBUG] [QUIC:AB] event: TX packet #1", ok: false},
		{in: "[lsq_server] t_us=5 STATS unix_us=1 cwnd=1", ok: false},
		{in: "some library noise", ok: false},
		{in: "[lsq_server] t_us=5 peer from=a to=b", ok: true, err: true},
	} {
		l, ok, err := parseLine(c.in)
		if ok != c.ok || (err != nil) != c.err {
			t.Errorf("parseLine(%q) = ok %v err %v, want ok %v err %v", c.in, ok, err, c.ok, c.err)
			continue
		}
		if !ok || err != nil {
			continue
		}
		if l.verb != c.verb || l.fields[c.field] != c.value {
			t.Errorf("parseLine(%q) = %s %v, want %s %s=%s", c.in, l.verb, l.fields, c.verb, c.field, c.value)
		}
	}
	l, _, _ := parseLine("[lsq_server] t_us=5 peer unix_us=1764867600000001 from=a to=b")
	if want := time.UnixMicro(1764867600000001).UTC(); !l.at.Equal(want) {
		t.Errorf("at %v, want %v", l.at, want)
	}
}

func TestCapabilities(t *testing.T) {
	c := New(nil).Capabilities()
	for _, ok := range []string{"standard", "step-down", "nat-rebind"} {
		if why := c.Supports(runScenario(ok)); why != "" {
			t.Errorf("%s: %s", ok, why)
		}
	}
	for _, no := range []string{"port-rebind", "migrate-back"} {
		if c.Supports(runScenario(no)) == "" {
			t.Errorf("%s should say why it cannot run", no)
		}
	}
	if cc, err := c.ResolveCC(""); err != nil || cc != "adaptive" {
		t.Errorf("default cc %q %v", cc, err)
	}
	if _, err := c.ResolveCC("newreno"); err == nil {
		t.Error("newreno accepted; lsquic has no NewReno")
	}
}

func runScenario(s string) run.Scenario { return run.Scenario(s) }
