package run

import (
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
)

// repProgress shows one repetition's download. On a terminal it is a bar
// redrawn in place; anywhere else (a file, a pipe, CI) redraws would fill
// the log, so it prints one plain line per step instead.
type repProgress interface {
	// Set reports bytes downloaded so far out of total; safe for
	// concurrent use, cheap.
	Set(done, total int64)
	// Finish ends the display (the bar is cleared; the lines say so only if
	// something was shown).
	Finish()
}

// newRepProgress returns the display Options ask for; label names the
// repetition ("quic-go standard rep 2/5").
func newRepProgress(o Options, w io.Writer, label string) repProgress {
	switch {
	case !o.Progress:
		return noProgress{}
	case o.Terminal:
		return &barProgress{w: w, label: label}
	default:
		return &lineProgress{w: w, label: label, step: 25}
	}
}

type noProgress struct{}

func (noProgress) Set(int64, int64) {}
func (noProgress) Finish()          {}

type barProgress struct {
	mu    sync.Mutex
	w     io.Writer
	label string
	bar   *progressbar.ProgressBar
}

func (b *barProgress) Set(done, total int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.bar == nil {
		b.bar = progressbar.NewOptions64(total,
			progressbar.OptionSetWriter(b.w),
			progressbar.OptionSetDescription(b.label),
			progressbar.OptionShowBytes(true),
			progressbar.OptionSetWidth(30),
			progressbar.OptionThrottle(200*time.Millisecond),
			progressbar.OptionClearOnFinish())
	}
	_ = b.bar.Set64(done)
}

func (b *barProgress) Finish() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.bar != nil {
		_ = b.bar.Finish()
	}
}

// lineProgress prints a line when the download starts and each time it
// crosses another step percent of the body.
type lineProgress struct {
	mu      sync.Mutex
	w       io.Writer
	label   string
	step    int64 // percent
	started bool
	shown   int64 // last percent printed
	done    int64
	total   int64
}

func (l *lineProgress) Set(done, total int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.done, l.total = done, total
	if !l.started {
		l.started = true
		fmt.Fprintf(l.w, "%s: downloading %d B\n", l.label, total)
	}
	if total <= 0 {
		return
	}
	pct := min(done*100/total, 100) / l.step * l.step
	if pct > l.shown {
		l.shown = pct
		fmt.Fprintf(l.w, "%s: %d%% (%d of %d B)\n", l.label, pct, done, total)
	}
}

func (l *lineProgress) Finish() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.started && l.shown < 100 {
		fmt.Fprintf(l.w, "%s: stopped at %d of %d B\n", l.label, l.done, l.total)
	}
}
