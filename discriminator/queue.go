package discriminator

// sampleQueue is a first-in first-out queue of samples, kept in blocks of
// queueBlock that are reused once emptied. The streamer's pre-commit ring
// is one: what it holds is the last few seconds of samples, so its memory
// is that many samples rounded up to a block, not the up to four times as
// much that an array grown by doubling and slid along allocates over a
// trace. For a short trace, every page the process touches first costs a
// page fault; the ring used to cost about 45 of them on msquic's trace.
type sampleQueue struct {
	blocks [][]seqSample // blocks[0][head:] is the front; each has cap queueBlock
	head   int
	n      int
	spare  []seqSample // an emptied block, reused by the next push that needs one
}

// queueBlock samples fill a 4 KiB size class (88 bytes each).
const queueBlock = 4096 / 88

func (q *sampleQueue) len() int { return q.n }

func (q *sampleQueue) push(x seqSample) {
	if k := len(q.blocks); k == 0 || len(q.blocks[k-1]) == queueBlock {
		b := q.spare
		q.spare = nil
		if b == nil {
			b = make([]seqSample, 0, queueBlock)
		}
		q.blocks = append(q.blocks, b)
	}
	k := len(q.blocks) - 1
	q.blocks[k] = append(q.blocks[k], x)
	q.n++
}

// front is the oldest sample; the queue must not be empty.
func (q *sampleQueue) front() *seqSample { return &q.blocks[0][q.head] }

// back is the newest sample; the queue must not be empty.
func (q *sampleQueue) back() *seqSample {
	b := q.blocks[len(q.blocks)-1]
	return &b[len(b)-1]
}

// pop removes the front sample.
func (q *sampleQueue) pop() {
	q.head++
	q.n--
	if q.head == len(q.blocks[0]) && (q.head == queueBlock || q.n == 0) {
		b := q.blocks[0][:0]
		q.blocks[0] = nil
		q.blocks = q.blocks[1:]
		q.head = 0
		q.spare = b
		if len(q.blocks) == 0 {
			q.blocks = q.blocks[:0:0] // let the spine's array go when empty
		}
	}
}

// each calls fn with every sample, oldest first.
func (q *sampleQueue) each(fn func(seqSample)) {
	for i, b := range q.blocks {
		if i == 0 {
			b = b[q.head:]
		}
		for _, x := range b {
			fn(x)
		}
	}
}
