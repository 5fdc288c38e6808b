package run

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

func TestRepProgressLines(t *testing.T) {
	const label = "quic-go standard rep 1/5"
	for _, tc := range []struct {
		name string
		sets [][2]int64
		want []string
	}{
		{"whole download", [][2]int64{{0, 1000}, {100, 1000}, {250, 1000}, {260, 1000}, {740, 1000}, {1000, 1000}},
			[]string{label + ": downloading 1000 B", label + ": 25% (250 of 1000 B)", label + ": 50% (740 of 1000 B)", label + ": 100% (1000 of 1000 B)"}},
		{"jump past several steps prints one line", [][2]int64{{900, 1000}},
			[]string{label + ": downloading 1000 B", label + ": 75% (900 of 1000 B)", label + ": stopped at 900 of 1000 B"}},
		{"stopped early", [][2]int64{{10, 1000}, {300, 1000}},
			[]string{label + ": downloading 1000 B", label + ": 25% (300 of 1000 B)", label + ": stopped at 300 of 1000 B"}},
		{"unknown size", [][2]int64{{10, 0}, {20, 0}},
			[]string{label + ": downloading 0 B", label + ": stopped at 20 of 0 B"}},
		{"nothing downloaded", nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			p := newRepProgress(Options{Progress: true}, &buf, label)
			for _, s := range tc.sets {
				p.Set(s[0], s[1])
			}
			p.Finish()
			out := buf.String()
			if strings.ContainsRune(out, '\r') {
				t.Errorf("plain progress wrote a carriage return: %q", out)
			}
			var got []string
			if out != "" {
				got = strings.Split(strings.TrimSuffix(out, "\n"), "\n")
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("lines:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

func TestRepProgressStyle(t *testing.T) {
	for _, tc := range []struct {
		name      string
		o         Options
		wantEmpty bool
		wantCR    bool
	}{
		{"off", Options{}, true, false},
		{"log file", Options{Progress: true}, false, false},
		{"terminal", Options{Progress: true, Terminal: true}, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			p := newRepProgress(tc.o, &buf, "x")
			p.Set(0, 1<<20)
			time.Sleep(250 * time.Millisecond) // past the bar's 200 ms redraw throttle
			p.Set(1<<19, 1<<20)
			p.Finish()
			if (buf.Len() == 0) != tc.wantEmpty || strings.ContainsRune(buf.String(), '\r') != tc.wantCR {
				t.Errorf("output %q: want empty=%v, carriage return=%v", buf.String(), tc.wantEmpty, tc.wantCR)
			}
		})
	}
}
