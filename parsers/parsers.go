// Package parsers turns a QUIC trace — a qlog in one of its dialects, msquic's
// stdout trace log, or a timeline CSV — into the one timeline model
// (parsers/timeline). Parsers know formats, not verdicts.
//
// Every parser streams: it hands samples and events to a timeline.Handler as
// it reads, so memory does not grow with the trace (Collector, used by
// ParseFile, is what keeps everything). Gzip input is detected by its magic
// bytes and decompressed transparently (klauspost/compress, on its own
// goroutine a few chunks ahead). The format is detected from content unless
// Options.Format names it.
//
// The qlog formats are read by a one-pass JSON scanner (jscan.go) that
// validates each record as gjson.Valid does and allocates nothing per record
// after warm-up; picoquic's document around its events, and anything
// malformed, goes through encoding/json as before. The gjson/encoding/json
// parsers this replaced are kept as the fuzz targets' oracle (oracle_test.go):
// timelines and errors must match them byte for byte.
//
// Units: times are µs from the trace's own reference; windows and byte counts
// are bytes; RTTs are µs. Each format's file says how it converts.
//
//	format         file          source units        path ids  addresses
//	picoquic-qlog  picoquic.go   time_units (µs)     no        datagram events
//	ngtcp2-qlog    ngtcp2.go     integer ms          no        no
//	quicgo-qlog    quicgo.go     float ms            no        connection start only
//	quiche-qlog    quiche.go     float ms            no        no
//	msquic-log     msquic.go     t_us (µs)           no        path lines
//	quicly-log     quicly.go     time ms / time_us   no        new_path, datagram lines
//	timeline-csv   csv.go        µs                  path_id   local/peer columns
//
// Malformed input is an error naming the file, record and byte offset
// (*PositionError); a final record cut off mid-write is a timeline.Warning
// and the records before it are used.
package parsers

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/klauspost/compress/gzip"
	"github.com/migaudit/migaudit/parsers/timeline"
	"github.com/tidwall/gjson"
)

// Format names, as accepted by Options.Format and returned by Detect.
const (
	FormatPicoquic = "picoquic-qlog"
	FormatNgtcp2   = "ngtcp2-qlog"
	FormatQuicGo   = "quicgo-qlog"
	FormatQuiche   = "quiche-qlog"
	FormatMsquic   = "msquic-log"
	FormatCSV      = "timeline-csv"
	FormatQuicly   = "quicly-log"
	FormatQuinn    = "quinn-cc-log"
	// FormatLsquic is harnesses/lsquic's lsqharness stdout: its own lines
	// and lsquic's log.
	FormatLsquic = "lsquic-log"
	// FormatXquic is harnesses/xquic's xqharness stdout: its own lines and
	// xquic's log.
	FormatXquic = "xquic-log"
)

// Options controls Parse.
type Options struct {
	// Format is one of Formats(); "" detects it from content.
	Format string
}

// Formats lists the formats Parse understands.
func Formats() []string {
	return []string{FormatPicoquic, FormatNgtcp2, FormatQuicGo, FormatQuiche, FormatMsquic, FormatQuicly, FormatLsquic, FormatXquic, FormatCSV, FormatQuinn}
}

type parseFunc func(in *input, h timeline.Handler) error

var parsersByFormat = map[string]parseFunc{
	FormatPicoquic: parsePicoquic,
	FormatNgtcp2:   parseNgtcp2,
	FormatQuicGo:   parseQuicGo,
	FormatQuiche:   parseQuiche,
	FormatMsquic:   parseMsquic,
	FormatQuicly:   parseQuicly,
	FormatLsquic:   parseLsquic,
	FormatXquic:    parseXquic,
	FormatCSV:      parseCSV,
	FormatQuinn:    parseQuinn,
}

// peekSize is how much decompressed content Detect sees.
const peekSize = 64 << 10

// maxRecord bounds one JSON-SEQ record, line or picoquic event, so that a
// trace without separators cannot make memory grow without limit.
const maxRecord = 64 << 20

// PositionError is a malformed-input error at a known place in a trace.
type PositionError struct {
	File   string
	Record int   // 1-based record (JSON-SEQ record, picoquic event, line)
	Offset int64 // byte offset of the record in the uncompressed stream
	Err    error
}

func (e *PositionError) Error() string {
	return fmt.Sprintf("parse %s: record %d at byte %d: %v", e.File, e.Record, e.Offset, e.Err)
}

func (e *PositionError) Unwrap() error { return e.Err }

// errTruncatedGzip marks a gzip stream that ends before its trailer.
var errTruncatedGzip = errors.New("truncated gzip stream")

// input is the decompressed trace with its name, for error messages.
type input struct {
	name string
	r    *bufio.Reader
	gz   bool
}

func (in *input) errorf(record int, offset int64, format string, args ...any) error {
	return &PositionError{File: in.name, Record: record, Offset: offset, Err: fmt.Errorf(format, args...)}
}

// readErr wraps a read failure (not a content problem) with the file name.
func (in *input) readErr(err error) error {
	if errors.Is(err, errTruncatedGzip) {
		return fmt.Errorf("parse %s: %w (file cut short?)", in.name, err)
	}
	return fmt.Errorf("parse %s: read: %w", in.name, err)
}

// gzipReader turns the io.ErrUnexpectedEOF of a cut-off gzip stream into
// errTruncatedGzip so that no parser mistakes it for a truncated record.
type gzipReader struct {
	z io.Reader
	n int64
}

func (g *gzipReader) Read(p []byte) (int, error) {
	n, err := g.z.Read(p)
	g.n += int64(n)
	if errors.Is(err, io.ErrUnexpectedEOF) {
		err = fmt.Errorf("%w after %d uncompressed bytes", errTruncatedGzip, g.n)
	} else if err != nil && err != io.EOF {
		err = fmt.Errorf("gzip: %w", err)
	}
	return n, err
}

// newGunzip opens a gzip stream (multistream, as gzip -dc reads it). It is
// klauspost/compress's inflater, about twice the standard library's speed
// on these traces (BenchmarkGunzip); a variable so the benchmark can compare.
var newGunzip = func(r io.Reader) (io.Reader, error) {
	z, err := gzip.NewReader(r)
	if err != nil {
		return nil, err
	}
	z.Multistream(true)
	return z, nil
}

// Parse reads one trace from r and streams it into h. name is used in error
// messages only. Gzip is decompressed transparently.
func Parse(name string, r io.Reader, opt Options, h timeline.Handler) error {
	small := smallFile(r)
	rawSize := 64 << 10
	if small {
		// Read 16 KiB at a time: each page of a buffer costs a page fault
		// the first time, which a short trace notices.
		rawSize = 16 << 10
	}
	raw := bufio.NewReaderSize(r, rawSize)
	var src io.Reader = raw
	gz := false
	if magic, _ := raw.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		z, err := newGunzip(raw)
		if err != nil {
			if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
				return fmt.Errorf("parse %s: %w: header cut short", name, errTruncatedGzip)
			}
			return fmt.Errorf("parse %s: gzip header: %w", name, err)
		}
		if small {
			// Decompressed as it is read: for a small file the goroutine,
			// its thread and its chunks cost more than the overlap saves.
			src = &gzipReader{z: z}
		} else {
			// Decompress on the other core while this one parses.
			ahead := newReadAhead(&gzipReader{z: z})
			defer ahead.Close()
			src = ahead
		}
		gz = true
	}
	in := &input{name: name, r: bufio.NewReaderSize(src, peekSize), gz: gz}
	peek, err := in.r.Peek(peekSize)
	if err != nil && err != io.EOF && !errors.Is(err, bufio.ErrBufferFull) {
		return in.readErr(err)
	}
	format := opt.Format
	if format == "" {
		format, err = Detect(peek)
		if err != nil {
			return fmt.Errorf("parse %s: %w", name, err)
		}
	}
	p, ok := parsersByFormat[format]
	if !ok {
		return fmt.Errorf("parse %s: unknown format %q (known: %s)", name, format, strings.Join(Formats(), ", "))
	}
	return p(in, h)
}

// smallGzip is the largest compressed file that is decompressed in the
// parsing goroutine rather than by a read-ahead goroutine. Measured as whole
// processes (docs/analyze-performance.md): msquic's 53 KB trace takes 11 %
// less wall time and 14 % less CPU time without the read-ahead (no thread to
// start, no 512 KiB of chunks to fault in); 150 and 360 KB prefixes of
// quic-go's trace take the same either way, and a 4.1 MB msquic-style log
// (213 KB compressed) the same wall time for 18 % less CPU time; ngtcp2's
// 810 KB trace takes 20 % more wall time without it.
const smallGzip = 256 << 10

// smallFile reports whether r is a regular file of at most smallGzip bytes.
func smallFile(r io.Reader) bool {
	f, ok := r.(interface{ Stat() (os.FileInfo, error) })
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode().IsRegular() && fi.Size() <= smallGzip
}

// ParseFile parses the trace at path into memory.
func ParseFile(path string, opt Options) (*timeline.Timeline, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("parse %s: %w", filepath.Base(path), err)
	}
	defer f.Close()
	var c timeline.Collector
	if err := Parse(filepath.Base(path), f, opt, &c); err != nil {
		return nil, err
	}
	c.T.Source = path
	return &c.T, nil
}

// Detect names the format of a trace from its first bytes (decompressed; a
// gzip-compressed peek is decompressed as far as it goes).
func Detect(peek []byte) (string, error) {
	if len(peek) >= 2 && peek[0] == 0x1f && peek[1] == 0x8b {
		if z, err := gzip.NewReader(bytes.NewReader(peek)); err == nil {
			buf, _ := io.ReadAll(io.LimitReader(z, peekSize))
			peek = buf
		}
	}
	p := bytes.TrimLeft(peek, " \t\r\n\x1e")
	if len(p) == 0 {
		return "", errors.New("empty trace: no content to detect a format from")
	}
	firstLine := p
	if i := bytes.IndexByte(p, '\n'); i >= 0 {
		firstLine = p[:i]
	}
	firstLine = bytes.TrimSpace(bytes.Trim(firstLine, "\x1e"))
	switch {
	case p[0] == '{':
		if validJSON(firstLine) {
			if gjson.GetBytes(firstLine, "traces").IsArray() {
				// A whole single-document qlog on one line.
				return FormatPicoquic, nil
			}
			return detectJSONSeq(firstLine, p)
		}
		if bytes.Contains(p, []byte(`"traces"`)) || bytes.Contains(p, []byte(`"event_fields"`)) {
			return FormatPicoquic, nil
		}
		return "", fmt.Errorf("unrecognised JSON trace: neither a JSON-SEQ qlog (first record is not one line of JSON) nor a draft-00 qlog document (no \"traces\"); pass --format")
	case p[0] == '[':
		if bytes.HasPrefix(p, []byte("[lsq_")) {
			return FormatLsquic, nil
		}
		if bytes.HasPrefix(p, []byte("[xqc_")) {
			return FormatXquic, nil
		}
		if bytes.Contains(p, []byte("] t_us=")) || bytes.Contains(p, []byte("[conn][0x")) || bytes.HasPrefix(p, []byte("[mq_")) {
			return FormatMsquic, nil
		}
		return "", fmt.Errorf("unrecognised trace starting with %q; pass --format", excerpt(firstLine))
	case bytes.HasPrefix(firstLine, []byte(quinnHeader)):
		return FormatQuinn, nil
	default:
		if isCSVHeader(firstLine) {
			return FormatCSV, nil
		}
		return "", fmt.Errorf("unrecognised trace format (starts with %q); known formats: %s", excerpt(firstLine), strings.Join(Formats(), ", "))
	}
}

func detectJSONSeq(first, p []byte) (string, error) {
	has := func(b []byte, s string) bool { return bytes.Contains(b, []byte(s)) }
	switch {
	case has(first, `{"module":"quicly"`) || has(first, `{"module":"qlyharness"`):
		return FormatQuicly, nil
	case has(first, `"ngtcp2"`):
		return FormatNgtcp2, nil
	case has(first, "quic-go"):
		return FormatQuicGo, nil
	case has(p, `"name":"quic:`) || has(p, `"name": "quic:`) || has(first, "quiche"):
		return FormatQuiche, nil
	case has(first, "urn:ietf:params:qlog:events:quic"):
		// quic-12 schema with category-prefixed ("transport:") names.
		return FormatQuicGo, nil
	case has(first, `"qlog_version":"0.3"`) || has(first, `"qlog_version": "0.3"`):
		return FormatNgtcp2, nil
	}
	return "", fmt.Errorf("JSON-SEQ qlog from an unrecognised producer (first record %q); pass --format", excerpt(first))
}

func isCSVHeader(line []byte) bool {
	for _, c := range bytes.Split(line, []byte(",")) {
		if strings.EqualFold(strings.TrimSpace(string(c)), "time_us") {
			return true
		}
	}
	return false
}

func excerpt(b []byte) string {
	if len(b) > 60 {
		return string(b[:60]) + "…"
	}
	return string(b)
}

// readAhead reads its source in a goroutine, a few chunks ahead of the
// consumer, so decompression and parsing overlap. Close stops it.
type readAhead struct {
	chunks chan []byte
	free   chan []byte
	done   chan struct{}
	cur    []byte
	buf    []byte // chunk being consumed, to recycle
	err    error
	errc   chan error
}

const (
	readAheadChunk = 128 << 10
	readAheadDepth = 3
)

func newReadAhead(r io.Reader) *readAhead {
	a := &readAhead{
		chunks: make(chan []byte, readAheadDepth),
		free:   make(chan []byte, readAheadDepth+1),
		done:   make(chan struct{}),
	}
	for i := 0; i < readAheadDepth+1; i++ {
		a.free <- make([]byte, readAheadChunk)
	}
	errc := make(chan error, 1)
	go func() {
		defer close(a.chunks)
		for {
			var b []byte
			select {
			case b = <-a.free:
			case <-a.done:
				errc <- errReadAheadClosed
				return
			}
			n, err := io.ReadFull(r, b)
			if n > 0 {
				select {
				case a.chunks <- b[:n]:
				case <-a.done:
					errc <- errReadAheadClosed
					return
				}
			}
			if err == io.ErrUnexpectedEOF {
				err = io.EOF // a short final chunk: io.ReadFull's view, not the stream's
			}
			if err != nil {
				errc <- err
				return
			}
		}
	}()
	a.errc = errc
	return a
}

func (a *readAhead) Read(p []byte) (int, error) {
	for len(a.cur) == 0 {
		if a.err != nil {
			return 0, a.err
		}
		if a.buf != nil {
			a.free <- a.buf[:cap(a.buf)]
			a.buf = nil
		}
		b, ok := <-a.chunks
		if !ok {
			a.err = <-a.errc
			return 0, a.err
		}
		a.cur, a.buf = b, b
	}
	n := copy(p, a.cur)
	a.cur = a.cur[n:]
	return n, nil
}

// errReadAheadClosed is what a read-ahead reader returns once closed (to a
// reader still running then: a JSON-SEQ splitter being stopped).
var errReadAheadClosed = errors.New("read-ahead closed")

// Close stops the goroutine; reads afterwards fail.
func (a *readAhead) Close() {
	select {
	case <-a.done:
	default:
		close(a.done)
	}
}
