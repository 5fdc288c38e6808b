// Package linkemu emulates one direction of a network link in user space:
// a token bucket (rate, burst), a drop-tail queue, random loss and a fixed
// propagation delay, between two packet file descriptors (TUN devices, or
// SOCK_SEQPACKET socket pairs in tests).
//
// Every packet's delivery time is computed when it is read — the bucket is
// FIFO, so the schedule only depends on earlier packets — and a dedicated
// OS thread writes it out at that time with clock_nanosleep(TIMER_ABSTIME)
// and a 1 ns timer slack. The thread's wake-up lateness is measured on
// every sleep and subtracted from the next target (an exponentially
// weighted estimate), which is what turns the ~0.5 ms per direction a Go
// timer overshoots (netpoll sleeps have millisecond granularity) into a
// few microseconds, without spinning.
package linkemu

import (
	"errors"
	"math/rand/v2"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// Spec is one direction's emulation.
type Spec struct {
	Rate     int64         // bit/s; 0 = unlimited (no bucket, no queue)
	Burst    int           // bucket depth, bytes
	Queue    int           // drop-tail backlog limit, bytes (0 = unlimited)
	Delay    time.Duration // one-way propagation delay
	Loss     float64       // drop probability per packet
	Overhead int           // bytes added to each packet's length for the bucket
}

// Counters are cumulative totals for one direction.
type Counters struct {
	Packets    uint64 `json:"packets"` // delivered (written out)
	Bytes      uint64 `json:"bytes"`
	QueueDrops uint64 `json:"queue_drops"`
	LossDrops  uint64 `json:"loss_drops"`
}

// Timing is the writer's self-measurement.
type Timing struct {
	Compensation time.Duration `json:"compensation_ns"` // current early-wake offset
	MeanLate     time.Duration `json:"mean_late_ns"`    // mean of (write time − due) over slept packets
	MeanAbsLate  time.Duration `json:"mean_abs_late_ns"`
	Slept        uint64        `json:"slept"`  // packets written after a sleep
	Behind       uint64        `json:"behind"` // packets already due when dequeued
}

const (
	maxPacket = 2048  // TUN MTU is 1500
	maxQueued = 32768 // packets in the delay line per direction
	maxComp   = int64(400 * time.Microsecond)
)

type packet struct {
	buf *[maxPacket]byte
	n   int
	due int64 // CLOCK_MONOTONIC ns
}

var pool = sync.Pool{New: func() any { return new([maxPacket]byte) }}

// Link is one running direction.
type Link struct {
	in    *os.File
	outFD int

	mu          sync.Mutex
	spec        Spec
	tokens      float64 // bytes
	lastRefill  int64
	lastRelease int64
	rng         *rand.Rand

	q       chan packet
	stopped atomic.Bool
	done    sync.WaitGroup

	pkts, bytes, qdrops, ldrops atomic.Uint64
	comp                        atomic.Int64
	lateSum, absLateSum         atomic.Int64
	slept, behind               atomic.Uint64
}

// Now is the emulator's clock, CLOCK_MONOTONIC in nanoseconds.
func Now() int64 {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return ts.Nano()
}

// Start moves packets read from in (a nonblocking, pollable packet fd,
// e.g. a TUN device or a SOCK_SEQPACKET socket) to the packet fd outFD
// according to spec until Stop. Link owns neither descriptor.
func Start(in *os.File, outFD int, spec Spec) *Link {
	l := &Link{
		in:    in,
		outFD: outFD,
		spec:  spec,
		q:     make(chan packet, maxQueued),
		rng:   rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), uint64(outFD))),
	}
	l.tokens = float64(spec.Burst)
	l.lastRefill = Now()
	l.done.Add(2)
	go l.read()
	go l.write()
	return l
}

// SetSpec changes the emulation; packets already scheduled keep their time.
func (l *Link) SetSpec(s Spec) {
	l.mu.Lock()
	l.spec = s
	l.tokens = min(l.tokens, float64(s.Burst))
	l.mu.Unlock()
}

// Spec returns the current emulation.
func (l *Link) Spec() Spec {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.spec
}

// Counters returns the cumulative totals.
func (l *Link) Counters() Counters {
	return Counters{Packets: l.pkts.Load(), Bytes: l.bytes.Load(),
		QueueDrops: l.qdrops.Load(), LossDrops: l.ldrops.Load()}
}

// Timing returns the writer's self-measurement.
func (l *Link) Timing() Timing {
	n := l.slept.Load()
	t := Timing{Compensation: time.Duration(l.comp.Load()), Slept: n, Behind: l.behind.Load()}
	if n > 0 {
		t.MeanLate = time.Duration(l.lateSum.Load() / int64(n))
		t.MeanAbsLate = time.Duration(l.absLateSum.Load() / int64(n))
	}
	return t
}

// Stop ends both goroutines and waits for them; queued packets are dropped.
// After Stop returns the link no longer touches either descriptor.
func (l *Link) Stop() {
	if l.stopped.Swap(true) {
		l.done.Wait()
		return
	}
	_ = l.in.SetReadDeadline(time.Unix(1, 0))
	l.done.Wait()
}

// schedule decides a packet's fate at arrival time now: its delivery time,
// or false if the queue is full or it is lost.
func (l *Link) schedule(now int64, size int) (int64, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.spec
	if s.Loss > 0 && l.rng.Float64() < s.Loss {
		l.ldrops.Add(1)
		return 0, false
	}
	release := now
	if s.Rate > 0 {
		nsPerByte := 8e9 / float64(s.Rate)
		wire := float64(size + s.Overhead)
		t0 := max(now, l.lastRelease)
		if s.Queue > 0 && float64(t0-now) > float64(s.Queue)*nsPerByte {
			l.qdrops.Add(1)
			return 0, false
		}
		l.tokens = min(float64(s.Burst), l.tokens+float64(t0-l.lastRefill)/nsPerByte)
		l.lastRefill = t0
		release = t0
		if l.tokens < wire {
			release = t0 + int64((wire-l.tokens)*nsPerByte)
			l.tokens = 0
			l.lastRefill = release
		} else {
			l.tokens -= wire
		}
		l.lastRelease = release
	}
	return release + int64(s.Delay), true
}

func (l *Link) read() {
	defer l.done.Done()
	defer close(l.q)
	for {
		buf := pool.Get().(*[maxPacket]byte)
		n, err := l.in.Read(buf[:])
		if err != nil {
			pool.Put(buf)
			if l.stopped.Load() || errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, os.ErrClosed) {
				return
			}
			continue // transient (e.g. EIO while the device goes down); keep going
		}
		due, ok := l.schedule(Now(), n)
		if !ok {
			pool.Put(buf)
			continue
		}
		select {
		case l.q <- packet{buf: buf, n: n, due: due}:
		default:
			l.qdrops.Add(1)
			pool.Put(buf)
		}
	}
}

func (l *Link) write() {
	defer l.done.Done()
	// A dedicated thread: its timer slack is ours to set, and a sleep in
	// clock_nanosleep is not subject to the Go scheduler's timer batching.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	_ = unix.Prctl(unix.PR_SET_TIMERSLACK, 1, 0, 0, 0)
	defer func() { _ = unix.Prctl(unix.PR_SET_TIMERSLACK, 50_000, 0, 0, 0) }()

	const batch = int64(15 * time.Microsecond) // write together what is due this close
	for p := range l.q {
		if l.stopped.Load() {
			pool.Put(p.buf)
			continue
		}
		comp := l.comp.Load()
		now := Now()
		if target := p.due - comp; target-now > batch {
			ts := unix.NsecToTimespec(target)
			for {
				err := unix.ClockNanosleep(unix.CLOCK_MONOTONIC, unix.TIMER_ABSTIME, &ts, nil)
				if err != unix.EINTR {
					break
				}
			}
			now = Now()
			late := now - p.due
			// Correct the compensation by an eighth of the residual error:
			// converges in a few dozen packets, ignores single outliers.
			comp = min(max(comp+late/8, 0), maxComp)
			l.comp.Store(comp)
			l.lateSum.Add(late)
			l.absLateSum.Add(abs(late))
			l.slept.Add(1)
		} else if now > p.due {
			l.behind.Add(1)
		}
		if _, err := unix.Write(l.outFD, p.buf[:p.n]); err == nil {
			l.pkts.Add(1)
			l.bytes.Add(uint64(p.n))
		} else {
			l.qdrops.Add(1)
		}
		pool.Put(p.buf)
	}
}

func abs(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}
