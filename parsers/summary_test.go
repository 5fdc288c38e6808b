package parsers

import (
	"bufio"
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/migaudit/migaudit/parsers/timeline"
)

// TestDump checks the three outputs of `migaudit parse` against a parse of
// the same file through the Collector.
func TestDump(t *testing.T) {
	const file = "testdata/quicgo_small.sqlog"
	tl, err := ParseFile(file, Options{})
	if err != nil {
		t.Fatal(err)
	}

	var js bytes.Buffer
	if err := Dump(&js, []string{file}, DumpOptions{JSON: true}); err != nil {
		t.Fatal(err)
	}
	var s Summary
	if err := json.Unmarshal(js.Bytes(), &s); err != nil {
		t.Fatal(err)
	}
	if s.Samples != len(tl.Samples) || s.Events[timeline.PacketsAcked] != countKind(tl, timeline.PacketsAcked) ||
		s.MaxCwnd != 196289 || s.FirstUS != 996 || s.LastUS != 5072000 || s.Meta.Format != FormatQuicGo {
		t.Errorf("summary %+v", s)
	}

	var text bytes.Buffer
	if err := Dump(&text, []string{file}, DumpOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"format quicgo-qlog", "samples 4, cwnd 3", "max cwnd 196289 B at 5068500 µs", "event path_challenge_sent 1"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text summary lacks %q:\n%s", want, text.String())
		}
	}

	var lines bytes.Buffer
	if err := Dump(&lines, []string{file}, DumpOptions{All: true}); err != nil {
		t.Fatal(err)
	}
	counts := map[string]int{}
	sc := bufio.NewScanner(&lines)
	for sc.Scan() {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil || len(m) != 1 {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		for k := range m {
			counts[k]++
		}
	}
	if counts["sample"] != len(tl.Samples) || counts["event"] != len(tl.Events) || counts["meta"] == 0 {
		t.Errorf("dump lines %v; timeline has %d samples, %d events", counts, len(tl.Samples), len(tl.Events))
	}

	if err := Dump(&text, []string{"testdata/errors/unknown.txt"}, DumpOptions{}); err == nil || !strings.HasPrefix(err.Error(), "parse unknown.txt:") {
		t.Errorf("bad input error %v", err)
	}
}
