package parsers

import (
	"bytes"
	"strings"
	"testing"
)

// kvSeeds are harness argument strings: the reference trace's shapes, and
// every blank, control byte and non-ASCII byte at a word boundary and
// inside one.
var kvSeeds = []string{
	"",
	"cwnd=12200 srtt_us=20942 min_rtt_us=20877 max_rtt_us=21401 rtt_var_us=7959 cc_events=0 persistent_cc_events=0 send_total_bytes=14922 send_stream_bytes=10739 send_mtu=1248",
	"local=10.0.9.1:4433 remote=10.0.1.1:50108",
	"new_remote=10.0.3.1:51637",
	"stream_bytes_queued=41943040",
	"  cwnd=1   cwnd=2  ",
	"a==b =c d= e f=g=h",
	"cwnd=1\tsrtt_us=2",
	"cwnd=1\u00a0srtt_us=2",
	"cwnd=1\u2003srtt_us=2 x",
	"cwnd=1\u0085srtt_us=2",
	"cwnd=1\x00srtt_us=2",
	"cwnd=12\x7f srtt_us=2",
	"cwnd=1\vsrtt_us=2\fmin=3\rx=4\ny=5",
	"k=v\xff k2=v2",
	"abcdefg=1234567 abcdefgh=12345678 =",
	"1234567=",
}

// checkKV: wherever statsSplit takes a line, every STATS key's value is
// keyValues' (the last value of the key); it refuses only a line with a
// blank other than a space, a control byte or a byte >= 0x80.
func checkKV(t *testing.T, s string) {
	t.Helper()
	var sv msquicStatValues
	if !statsSplit([]byte(s), &sv) {
		if plain := strings.IndexFunc(s, func(r rune) bool { return r != ' ' && (r < 0x21 || r > 0x7f) }) < 0; plain {
			t.Fatalf("%q: statsSplit refused a line of plain ASCII and spaces", s)
		}
		return
	}
	want := keyValues(s)
	for i := range sv.val {
		key := "send_mtu"
		if i < msquicSendMTU {
			key = msquicStats[i].key
		}
		wv, wok := want[key]
		if sv.val[i] != wv || sv.has[i] != wok {
			t.Fatalf("%q: statsSplit %s = %q %v, keyValues %q %v", s, key, sv.val[i], sv.has[i], wv, wok)
		}
	}
}

func TestStatsSplit(t *testing.T) {
	for _, s := range kvSeeds {
		checkKV(t, s)
	}
	// Every byte value at every offset of the first two words and the tail.
	base := "cwnd=12200 srtt_us=20942 min_rtt_us=7 x"
	for i := 0; i < len(base); i++ {
		for c := 0; c < 256; c++ {
			b := []byte(base)
			b[i] = byte(c)
			checkKV(t, string(b))
		}
	}
}

// FuzzKVList: the word-at-a-time split against keyValues (strings.Fields
// and strings.Cut).
func FuzzKVList(f *testing.F) {
	for _, s := range kvSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) { checkKV(t, s) })
}

// TestMsquicStatKey holds msquicStatKey to the msquicStats table.
func TestMsquicStatKey(t *testing.T) {
	for i, g := range msquicStats {
		if got := msquicStatKey(g.key); got != i {
			t.Errorf("msquicStatKey(%q) = %d, want %d", g.key, got, i)
		}
	}
	if got := msquicStatKey("send_mtu"); got != msquicSendMTU {
		t.Errorf("msquicStatKey(send_mtu) = %d, want %d", got, msquicSendMTU)
	}
	for _, k := range []string{"", "max_rtt_us", "cc_events", "cwn", "cwnd ", "send_total_bytes", "remote"} {
		if got := msquicStatKey(k); got != -1 {
			t.Errorf("msquicStatKey(%q) = %d, want -1", k, got)
		}
	}
}

// BenchmarkKVList reads the STATS values of the reference msquic trace's
// STATS lines (about 4,800) as harnessLine does: split straight into the
// values.
func BenchmarkKVList(b *testing.B) {
	raw := gunzipFile(b, shared(b, "traces", "msquic_server.log.gz"))
	var args [][]byte
	n := 0
	for _, line := range bytes.Split(raw, []byte("\n")) {
		if _, rest, ok := bytes.Cut(line, []byte(" STATS ")); ok {
			args = append(args, rest)
			n += len(rest)
		}
	}
	b.SetBytes(int64(n))
	b.ReportAllocs()
	b.ResetTimer()
	var v msquicStatValues
	for i := 0; i < b.N; i++ {
		for _, a := range args {
			if !statsSplit(a, &v) {
				b.Fatalf("%q: not split", a)
			}
		}
	}
}
