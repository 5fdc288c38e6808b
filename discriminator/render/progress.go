package render

import (
	"fmt"
	"io"
	"strings"
)

// progress is analyze's progress line on a terminal: "analyze  3/10
// [=====>    ]", redrawn in place as traces finish and erased at the end,
// so that what is printed after it starts on a clean line.
//
// It is written here rather than taken from a progress-bar library:
// the one the live runner uses imports net/http, and net links the C
// resolver, which costs every analyze process 1.5 ms of dynamic loading
// before it reads a byte (docs/analyze-performance.md).
type progress struct {
	w     io.Writer
	total int
	done  int
	width int // of the last line drawn, to erase it
}

const progressBar = 30

func newProgress(w io.Writer, total int) *progress {
	p := &progress{w: w, total: total}
	p.draw()
	return p
}

// add counts one more finished trace and redraws the line.
func (p *progress) add() {
	p.done++
	p.draw()
}

func (p *progress) draw() {
	filled := progressBar * p.done / max(p.total, 1)
	bar := strings.Repeat("=", filled)
	if filled < progressBar {
		bar += ">" + strings.Repeat(" ", progressBar-filled-1)
	}
	line := fmt.Sprintf("analyze %*d/%d [%s]", len(fmt.Sprint(p.total)), p.done, p.total, bar)
	fmt.Fprintf(p.w, "\r%s", line)
	p.width = len(line)
}

// finish erases the line.
func (p *progress) finish() {
	fmt.Fprintf(p.w, "\r%s\r", strings.Repeat(" ", p.width))
}
