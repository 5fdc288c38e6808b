package twosock

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
		{in: "[xqc_server] t_us=5 peer unix_us=1 from=a to=b", ok: false},
		{in: "[lsq_server] t_us=5 peer from=a to=b", ok: true, err: true},
	} {
		l, ok, err := ParseLine("lsq", c.in)
		if ok != c.ok || (err != nil) != c.err {
			t.Errorf("ParseLine(lsq, %q) = ok %v err %v, want ok %v err %v", c.in, ok, err, c.ok, c.err)
			continue
		}
		if !ok || err != nil {
			continue
		}
		if l.Verb != c.verb || l.Fields[c.field] != c.value {
			t.Errorf("ParseLine(lsq, %q) = %s %v, want %s %s=%s", c.in, l.Verb, l.Fields, c.verb, c.field, c.value)
		}
	}
	l, _, _ := ParseLine("lsq", "[lsq_server] t_us=5 peer unix_us=1764867600000001 from=a to=b")
	if want := time.UnixMicro(1764867600000001).UTC(); !l.At.Equal(want) {
		t.Errorf("at %v, want %v", l.At, want)
	}
}

func TestCapabilities(t *testing.T) {
	c := Capabilities("lib", []string{"cubic", "bbr"}, "cubic", nil, "")
	for _, ok := range []run.Scenario{run.Standard, run.StepDown, run.NATRebind} {
		if why := c.Supports(ok); why != "" {
			t.Errorf("%s: %s", ok, why)
		}
	}
	for _, no := range []run.Scenario{run.PortRebind, run.MigrateBack} {
		if c.Supports(no) == "" {
			t.Errorf("%s should say why it cannot run", no)
		}
	}
	if _, err := c.ResolveCC("newreno"); err == nil {
		t.Error("newreno accepted")
	}
}
