package render

import (
	"bytes"
	"strings"
	"testing"
)

func TestProgressLine(t *testing.T) {
	var b bytes.Buffer
	p := newProgress(&b, 10)
	for range 3 {
		p.add()
	}
	frames := strings.Split(b.String(), "\r")[1:]
	if len(frames) != 4 {
		t.Fatalf("want 4 frames (start and 3 traces), got %q", frames)
	}
	if want := "analyze  3/10 [=========>                    ]"; frames[3] != want {
		t.Errorf("after 3 of 10: %q, want %q", frames[3], want)
	}
	for range 7 {
		p.add()
	}
	last := strings.Split(b.String(), "\r")
	if want := "analyze 10/10 [" + strings.Repeat("=", 30) + "]"; last[len(last)-1] != want {
		t.Errorf("at the end: %q, want %q", last[len(last)-1], want)
	}
	b.Reset()
	p.finish()
	if got := b.String(); got != "\r"+strings.Repeat(" ", len(last[len(last)-1]))+"\r" {
		t.Errorf("finish does not erase the line: %q", got)
	}
}
