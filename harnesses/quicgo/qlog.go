package quicgo

import (
	"bufio"
	"context"
	"io"
	"os"
	"sync"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/qlogwriter"
)

// qlogFile opens path exclusively and returns a Config.Tracer writing to it,
// plus a channel closed when quic-go has closed the trace (all events
// written).
func qlogFile(path string) (func(context.Context, bool, quic.ConnectionID) qlogwriter.Trace, <-chan struct{}, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, nil, err
	}
	tracer, closed := QlogTracer(f)
	return tracer, closed, nil
}

// QlogTracer returns a Config.Tracer that writes the first connection's
// qlog (JSON-SEQ, the quic-12 event schema) to w through a 1 MiB buffer,
// plus a channel closed once quic-go has closed the trace and w with it.
// A second connection in the same process gets no trace.
func QlogTracer(w io.WriteCloser) (func(context.Context, bool, quic.ConnectionID) qlogwriter.Trace, <-chan struct{}) {
	closed := make(chan struct{})
	var once sync.Once
	used := false
	var mu sync.Mutex
	tracer := func(_ context.Context, isClient bool, connID quic.ConnectionID) qlogwriter.Trace {
		mu.Lock()
		defer mu.Unlock()
		if used { // one connection per process; a second one gets no trace
			return nil
		}
		used = true
		bw := &bufCloser{w: bufio.NewWriterSize(w, 1<<20), c: w, done: func() { once.Do(func() { close(closed) }) }}
		fs := qlogwriter.NewConnectionFileSeq(bw, isClient, connID, []string{"urn:ietf:params:qlog:events:quic-12"})
		go fs.Run()
		return fs
	}
	return tracer, closed
}

type bufCloser struct {
	w    *bufio.Writer
	c    io.Closer
	done func()
}

func (b *bufCloser) Write(p []byte) (int, error) { return b.w.Write(p) }
func (b *bufCloser) Close() error {
	err := b.w.Flush()
	if cerr := b.c.Close(); err == nil {
		err = cerr
	}
	b.done()
	return err
}
