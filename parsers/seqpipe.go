package parsers

import "io"

// A JSON-SEQ trace is read in two stages on two goroutines: the splitter
// cuts records (seqReader), validates each and builds its tape (jtape), as
// parseJSONSeq did record by record; the mapper (parseJSONSeq) maps the
// records in order. Validation and tape building are a function of the
// record alone, so moving them ahead changes nothing but which core does
// them: the mapper sees the same records, numbers, offsets, tapes and read
// errors in the same order, and stops the splitter at the first record it
// cannot use exactly where it used to stop. Only the timing differs: a
// record reaches the mapper with its batch (128 KiB, or the end of the
// input), so a trace read from a pipe still being written is handled in
// steps of a batch.

// seqItem is one record as the splitter saw it.
type seqItem struct {
	n   int   // record number (seqReader)
	off int64 // byte offset of its first byte
	// err ends the stream here: io.EOF or a read error, as seqReader.next
	// returned it.
	err error
	// ok: the record is valid JSON; its text is buf[rs:re] and its tape
	// nodes[ns:ne] of the batch.
	ok             bool
	rs, re, ns, ne int
	// truncatedTail (when !ok): the record is a proper prefix of a JSON
	// value and only blanks follow it, a final record cut off mid-write.
	truncatedTail bool
}

// seqBatch is consecutive records with their text and tapes. Nodes are
// built in place at the end of nodes, so a batch is sent when its nodes
// would outgrow their array.
type seqBatch struct {
	buf   []byte
	nodes []jnode
	items []seqItem
}

const (
	seqBatchBytes = 128 << 10 // record text per batch (a longer record gets a batch of its own)
	seqBatchNodes = 12 << 10  // tape nodes per batch, about as many as 128 KiB of qlog holds (one per 11-15 bytes)
	seqBatches    = 3         // batches in flight or free: memory is bounded by these
)

// seqSplitter runs the first stage.
type seqSplitter struct {
	s    *seqReader
	out  chan *seqBatch
	free chan *seqBatch
	done chan struct{} // closed by the mapper when it stops
}

func newSeqSplitter(s *seqReader) *seqSplitter {
	p := &seqSplitter{
		s:    s,
		out:  make(chan *seqBatch, seqBatches),
		free: make(chan *seqBatch, seqBatches),
		done: make(chan struct{}),
	}
	for i := 0; i < seqBatches; i++ {
		p.free <- &seqBatch{buf: make([]byte, 0, seqBatchBytes), nodes: make([]jnode, 0, seqBatchNodes)}
	}
	go p.run()
	return p
}

// stop ends the splitter early. It does not wait: the splitter may be in
// a read that returns only when the input does (a pipe held open), and the
// mapper's error must not wait for that. The splitter touches nothing but
// the input and its own batches, and returns at its next hand-off (or when
// the read fails: the read-ahead reader fails once closed, a closed file
// fails).
func (p *seqSplitter) stop() {
	close(p.done)
}

func (p *seqSplitter) get() *seqBatch {
	select {
	case b := <-p.free:
		b.buf, b.nodes, b.items = b.buf[:0], b.nodes[:0], b.items[:0]
		return b
	case <-p.done:
		return nil
	}
}

func (p *seqSplitter) send(b *seqBatch) bool {
	select {
	case p.out <- b:
		return true
	case <-p.done:
		return false
	}
}

func (p *seqSplitter) run() {
	defer close(p.out)
	b := p.get()
	if b == nil {
		return
	}
	var tape jtape
	for {
		rec, n, off, err := p.s.next()
		if err != nil {
			b.items = append(b.items, seqItem{n: n, off: off, err: err})
			p.send(b)
			return
		}
		// The record's text and tape go at the ends of the batch's
		// arrays; a batch that is full, or would be, is sent first.
		if len(b.items) > 0 && len(b.buf)+len(rec) > cap(b.buf) {
			if !p.send(b) {
				return
			}
			if b = p.get(); b == nil {
				return
			}
		}
		rs := len(b.buf)
		b.buf = append(b.buf, rec...) // grows only for a record larger than the batch
		text := b.buf[rs:]
		ns := len(b.nodes)
		tape.nodes = b.nodes[ns:ns]
		ok := tape.parse(text)
		if cap(tape.nodes) != cap(b.nodes)-ns {
			// The tape outgrew the batch's node array and moved: it
			// is valid where it is, so the batch takes it over.
			if len(b.items) > 0 {
				// Send what came before this record, and start a batch
				// holding the record (its text copied again) and its tape.
				moved := tape.nodes
				b.buf = b.buf[:rs]
				if !p.send(b) {
					return
				}
				if b = p.get(); b == nil {
					return
				}
				b.buf = append(b.buf, text...)
				rs, ns = 0, 0
				if cap(b.nodes) < len(moved) {
					b.nodes = moved[:0]
				}
				b.nodes = append(b.nodes[:0], moved...)
			} else {
				b.nodes = tape.nodes[:0]
				b.nodes = b.nodes[:len(tape.nodes)]
			}
		} else {
			b.nodes = b.nodes[:ns+len(tape.nodes)]
		}
		it := seqItem{n: n, off: off, ok: ok, rs: rs, re: len(b.buf), ns: ns, ne: len(b.nodes)}
		if !ok {
			// The mapper stops at an invalid record either way: work
			// out here which of its two ways, then stop reading.
			it.truncatedTail = truncatedJSON(b.buf[rs:]) && p.s.restIsBlank()
			b.items = append(b.items, it)
			p.send(b)
			return
		}
		b.items = append(b.items, it)
	}
}

// seqRecords hands the mapper one record at a time.
type seqRecords struct {
	p    *seqSplitter
	b    *seqBatch
	i    int
	tape jtape
}

// next returns the next item; for a valid record, tape holds it. It must
// not be called after an item with err set or !ok.
func (r *seqRecords) next() seqItem {
	for r.b == nil || r.i >= len(r.b.items) {
		if r.b != nil {
			r.p.free <- r.b
		}
		b, ok := <-r.p.out
		if !ok {
			// Unreachable: the splitter's last item always carries err or !ok.
			return seqItem{err: io.ErrUnexpectedEOF}
		}
		r.b, r.i = b, 0
	}
	it := r.b.items[r.i]
	r.i++
	r.tape.b = r.b.buf[it.rs:it.re]
	r.tape.nodes = r.b.nodes[it.ns:it.ne]
	return it
}
