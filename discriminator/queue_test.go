package discriminator

import (
	"math/rand"
	"testing"

	"github.com/migaudit/migaudit/parsers/timeline"
)

// TestSampleQueue: pushes and pops in random runs keep the queue equal to a
// plain slice model (front, back, length, order), and its blocks bounded by
// what it holds.
func TestSampleQueue(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	var q sampleQueue
	var model []seqSample
	seq := int64(0)
	for step := 0; step < 20000; step++ {
		if r.Intn(100) < 52 || len(model) == 0 {
			for k := r.Intn(3 * queueBlock); k >= 0; k-- {
				seq++
				x := seqSample{timeline.Sample{TimeUS: seq * 10}, seq}
				q.push(x)
				model = append(model, x)
			}
		} else {
			for k := r.Intn(3 * queueBlock); k >= 0 && len(model) > 0; k-- {
				if got := *q.front(); got != model[0] {
					t.Fatalf("step %d: front %+v, want %+v", step, got, model[0])
				}
				q.pop()
				model = model[1:]
			}
		}
		if q.len() != len(model) {
			t.Fatalf("step %d: len %d, want %d", step, q.len(), len(model))
		}
		if len(model) > 0 {
			if *q.front() != model[0] || *q.back() != model[len(model)-1] {
				t.Fatalf("step %d: front/back %+v %+v, want %+v %+v", step, *q.front(), *q.back(), model[0], model[len(model)-1])
			}
		}
		if max := len(model)/queueBlock + 2; len(q.blocks) > max {
			t.Fatalf("step %d: %d blocks for %d samples", step, len(q.blocks), len(model))
		}
		if step%97 == 0 {
			i := 0
			q.each(func(x seqSample) {
				if x != model[i] {
					t.Fatalf("step %d: each #%d %+v, want %+v", step, i, x, model[i])
				}
				i++
			})
			if i != len(model) {
				t.Fatalf("step %d: each gave %d, want %d", step, i, len(model))
			}
		}
	}
}
