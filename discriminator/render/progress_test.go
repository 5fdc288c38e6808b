package render

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/migaudit/migaudit/discriminator"
)

// TestProgress: with a progress writer and several traces, the bar counts
// the traces and is erased at the end, so that nothing of it is left on
// the line the output continues on; the analyses themselves go to stdout
// untouched.
func TestProgress(t *testing.T) {
	traces := writeTraces(t, t.TempDir(), 3)
	at := 5 * time.Second
	opt := discriminator.Options{Impl: "msquic", MigrationAt: &at}
	var out, plain, bar bytes.Buffer
	if err := Run(&plain, RunOptions{Traces: traces, Format: "json", Analysis: opt}); err != nil {
		t.Fatal(err)
	}
	if err := Run(&out, RunOptions{Traces: traces, Format: "json", Analysis: opt, Progress: &bar}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out.Bytes(), plain.Bytes()) {
		t.Errorf("the progress bar changed the output")
	}
	frames := strings.Split(bar.String(), "\r")
	for _, want := range []string{"analyze", "(1/3)", "(2/3)"} { // the last step erases the bar
		if !strings.Contains(bar.String(), want) {
			t.Errorf("progress lacks %q: %q", want, bar.String())
		}
	}
	if last := frames[len(frames)-1]; strings.TrimSpace(last) != "" {
		t.Errorf("progress bar not erased at the end: last frame %q", last)
	}
}
