//go:build !cgo

package linkemu

import (
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Backend names the implementation of the emulator loop.
const Backend = "go (raw system calls; without cgo the Go scheduler's preemption can delay packets by milliseconds on a loaded machine)"

// impl is the pure-Go loop's state. Without cgo this is the emulator; it
// is accurate on a quiet machine, but the runtime preempts any goroutine
// that runs for 10 ms (a thread blocked in a raw system call counts) and
// reschedules it through a normal-priority thread.
type impl struct {
	pkts, bytes, qdrops, ldrops  atomic.Uint64
	comp                         atomic.Int64
	lateSum, absLateSum, maxLate atomic.Int64
	slept, behind                atomic.Uint64
	cpu                          atomic.Int64
	spin                         atomic.Int64

	recmu sync.Mutex
	ring  []Record
	recN  uint64
	cap   []byte // capture ring; capW counts the bytes ever written to it
	capW  uint64
	capOn atomic.Bool
}

func (l *Link) init(Spec) {
	if RecordCap > 0 {
		l.ring = make([]Record, RecordCap)
		if n := captureRingSize(); n > 0 {
			l.cap = make([]byte, n)
		}
	}
}

func (l *Link) setCapture(on bool) bool {
	if l.cap == nil {
		return false
	}
	l.capOn.Store(on)
	return true
}

func (l *Link) datagrams(since uint64, buf []byte) Drained {
	l.recmu.Lock()
	defer l.recmu.Unlock()
	recs, next := l.recordsLocked(since)
	d := Drained{Next: next, LostRecords: lostBefore(since, next, len(recs))}
	d.Datagrams = attachBytes(recs, l.cap, func() uint64 { return l.capW }, &d.LostBytes, buf)
	return d
}
func (l *Link) pushSpec(Spec)           {}
func (l *Link) release()                {}
func (l *Link) setSpin(d time.Duration) { l.spin.Store(int64(d)) }

func (l *Link) record(r Record, data []byte) {
	if l.ring == nil {
		return
	}
	l.recmu.Lock()
	if l.cap != nil && l.capOn.Load() {
		size := uint64(len(l.cap))
		r.capOff, r.capLen = l.capW, uint32(len(data))
		n := copy(l.cap[l.capW&(size-1):], data)
		copy(l.cap, data[n:])
		l.capW += uint64(len(data))
	}
	l.ring[l.recN%uint64(len(l.ring))] = r
	l.recN++
	l.recmu.Unlock()
}

func (l *Link) records(since uint64) ([]Record, uint64) {
	l.recmu.Lock()
	defer l.recmu.Unlock()
	return l.recordsLocked(since)
}

func (l *Link) recordsLocked(since uint64) ([]Record, uint64) {
	n := l.recN
	if l.ring == nil || since >= n {
		return nil, n
	}
	c := uint64(len(l.ring))
	lo := since
	if n > c && lo < n-c {
		lo = n - c
	}
	out := make([]Record, 0, n-lo)
	for i := lo; i < n; i++ {
		out = append(out, l.ring[i%c])
	}
	return out, n
}

func (l *Link) counters() Counters {
	return Counters{Packets: l.pkts.Load(), Bytes: l.bytes.Load(),
		QueueDrops: l.qdrops.Load(), LossDrops: l.ldrops.Load()}
}

func (l *Link) timing() Timing {
	n := l.slept.Load()
	t := Timing{Compensation: time.Duration(l.comp.Load()), Slept: n, Behind: l.behind.Load(),
		MaxLate: time.Duration(l.maxLate.Load()), CPU: time.Duration(l.cpu.Load())}
	if n > 0 {
		t.MeanLate = time.Duration(l.lateSum.Load() / int64(n))
		t.MeanAbsLate = time.Duration(l.absLateSum.Load() / int64(n))
	}
	return t
}

type packet struct {
	buf *[maxPacket]byte
	n   int
	due int64 // Now() ns
	arr int64
	// heldUS: the hold's extra delay (Spec.Hold), µs; 0 in the FIFO.
	heldUS uint32
}

// The emulator thread makes its system calls raw, bypassing the Go
// runtime's syscall entry and exit: on the way out of a blocking call the
// runtime may have to reacquire a P under the scheduler lock, and on a
// loaded machine a descheduled normal-priority lock holder stalled the
// SCHED_FIFO thread for tens of milliseconds. The goroutine keeps its P
// for its whole life instead (GOMAXPROCS is raised to allow for that).

func rawPpoll(fds []unix.PollFd, timeout *unix.Timespec) (int, unix.Errno) {
	n, _, e := unix.RawSyscall6(unix.SYS_PPOLL, uintptr(unsafe.Pointer(&fds[0])), uintptr(len(fds)),
		uintptr(unsafe.Pointer(timeout)), 0, 0, 0)
	return int(n), e
}

func rawRead(fd int, b []byte) (int, unix.Errno) {
	n, _, e := unix.RawSyscall(unix.SYS_READ, uintptr(fd), uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
	return int(n), e
}

func rawWrite(fd int, b []byte) (int, unix.Errno) {
	n, _, e := unix.RawSyscall(unix.SYS_WRITE, uintptr(fd), uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
	return int(n), e
}

// bucket is the thread-local shaper state.
type bucket struct {
	spec        *Spec
	tokens      float64 // bytes
	lastRefill  int64
	lastRelease int64
}

// schedule decides a packet's fate at arrival time now: its delivery
// time, or false if the queue is full or it is lost.
func (l *Link) schedule(b *bucket, rng *rand.Rand, now int64, pkt []byte) (int64, bool) {
	size := len(pkt)
	if s := l.spec.Load(); s != b.spec {
		b.spec = s
		b.tokens = min(b.tokens, float64(s.Burst))
	}
	s := b.spec
	if s.Loss > 0 && rng.Float64() < s.Loss {
		l.ldrops.Add(1)
		l.record(Record{Arr: MonoNow(), Size: uint32(size), Cause: LossDrop}, pkt)
		return 0, false
	}
	release := now
	if s.Rate > 0 {
		nsPerByte := 8e9 / float64(s.Rate)
		wire := float64(size + s.Overhead)
		t0 := max(now, b.lastRelease)
		if s.Queue > 0 && float64(t0-now) > float64(s.Queue)*nsPerByte {
			l.qdrops.Add(1)
			l.record(Record{Arr: MonoNow(), Size: uint32(size), Cause: QueueDrop}, pkt)
			return 0, false
		}
		b.tokens = min(float64(s.Burst), b.tokens+float64(t0-b.lastRefill)/nsPerByte)
		b.lastRefill = t0
		release = t0
		if b.tokens < wire {
			release = t0 + int64((wire-b.tokens)*nsPerByte)
			b.tokens = 0
			b.lastRefill = release
		} else {
			b.tokens -= wire
		}
		b.lastRelease = release
	}
	return release + int64(s.Delay), true
}

func (l *Link) run() {
	defer close(l.done)
	// Never unlocked: the thread may run under SCHED_FIFO, so it must die
	// with this goroutine rather than return to Go's pool.
	runtime.LockOSThread()
	prioritise()
	_ = unix.Prctl(unix.PR_SET_TIMERSLACK, 1, 0, 0, 0)
	defer func() {
		l.cpu.Store(threadCPU())
		unix.Close(l.stopFD)
	}()

	var (
		b       = bucket{spec: l.spec.Load(), tokens: float64(l.spec.Load().Burst), lastRefill: Now()}
		rng     = rand.New(rand.NewPCG(l.spec.Load().seed(l.outFD), 0))
		q       = make([]packet, maxQueued) // ring
		head, n int
		free    []*[maxPacket]byte
		fds     = []unix.PollFd{{Fd: int32(l.inFD), Events: unix.POLLIN}, {Fd: int32(l.stopFD), Events: unix.POLLIN}}
		ts      unix.Timespec
		lastCPU int64
		// The hold line (Spec.Hold): beside the FIFO, in arrival order.
		hq       []packet
		lastArr  int64
		holdLeft int
	)
	// holdFirst: the hold line's first datagram is due before the FIFO's.
	holdFirst := func() bool { return len(hq) > 0 && (n == 0 || hq[0].due < q[head].due) }
	headDue := func() int64 {
		if holdFirst() {
			return hq[0].due
		}
		return q[head].due
	}
	getBuf := func() *[maxPacket]byte {
		if k := len(free); k > 0 {
			b := free[k-1]
			free = free[:k-1]
			return b
		}
		return new([maxPacket]byte)
	}
	for !l.stopped.Load() {
		comp := l.comp.Load()
		// Idle: wake every 100 ms anyway, so that a stop-the-world (the
		// holder has GC off, but a caller may not) never waits on us long.
		ts = unix.NsecToTimespec(int64(100 * time.Millisecond))
		timeout := &ts
		timed := false
		if n > 0 || len(hq) > 0 {
			wait := headDue() - comp - Now()
			if wait < batch {
				wait = 0
			}
			ts = unix.NsecToTimespec(wait)
			timeout, timed = &ts, wait > 0
		}
		if _, e := rawPpoll(fds, timeout); e != 0 {
			if e == unix.EINTR {
				continue // e.g. the runtime's preemption signal
			}
			return
		}
		if fds[1].Revents != 0 {
			return
		}
		// Read what has arrived, at most readBatch packets before the
		// writes get their turn (a burst must not delay due packets).
		if fds[0].Revents != 0 {
			for range readBatch {
				buf := getBuf()
				m, e := rawRead(l.inFD, buf[:])
				if e != 0 || m <= 0 {
					free = append(free, buf)
					if e == unix.EBADF {
						return
					}
					break // EAGAIN, or EIO while a device goes down
				}
				arr := Now()
				if s := l.spec.Load(); s.Hold > 0 && (lastArr == 0 || arr-lastArr >= int64(s.holdIdle())) {
					holdLeft = s.Hold
				}
				lastArr = arr
				due, ok := l.schedule(&b, rng, arr, buf[:m])
				if !ok {
					free = append(free, buf)
					continue
				}
				if holdLeft > 0 && len(hq) < maxHeld && m >= b.spec.HoldMinSize {
					holdLeft--
					x := b.spec.HoldExtra
					hq = append(hq, packet{buf: buf, n: m, due: due + int64(x), arr: arr, heldUS: uint32(x / time.Microsecond)})
					continue
				}
				if n == len(q) {
					l.qdrops.Add(1)
					free = append(free, buf)
					continue
				}
				q[(head+n)%len(q)] = packet{buf: buf, n: m, due: due, arr: Now()}
				n++
			}
		}
		// Write everything that is due. Learn from the wake-up only if the
		// timeout, not an arrival, ended it.
		now := Now()
		first := timed && fds[0].Revents == 0
		for (n > 0 || len(hq) > 0) && headDue()-comp-now <= batch {
			var p packet
			if holdFirst() {
				p, hq = hq[0], hq[1:]
			} else {
				p = q[head]
				q[head] = packet{}
				head = (head + 1) % len(q)
				n--
			}
			late := now - p.due
			if first {
				// This wake-up was for this packet: learn from it.
				step := min(max(late, -maxStep), maxStep)
				comp = min(max(comp+step/4, 0), maxComp)
				l.comp.Store(comp)
				l.lateSum.Add(late)
				l.absLateSum.Add(abs(late))
				l.slept.Add(1)
			}
			first = false
			if late > lateMark {
				l.behind.Add(1)
			}
			if late > l.maxLate.Load() {
				l.maxLate.Store(late)
			}
			if _, e := rawWrite(l.outFD, p.buf[:p.n]); e == 0 {
				l.pkts.Add(1)
				l.bytes.Add(uint64(p.n))
				l.record(Record{Arr: p.arr + monoOffset, Due: p.due + monoOffset, Sent: now + monoOffset, Size: uint32(p.n), Cause: Sent, HeldUS: p.heldUS}, p.buf[:p.n])
			} else {
				l.qdrops.Add(1)
				l.record(Record{Arr: p.arr + monoOffset, Due: p.due + monoOffset, Size: uint32(p.n), Cause: WriteDrop, HeldUS: p.heldUS}, p.buf[:p.n])
			}
			free = append(free, p.buf)
			now = Now()
		}
		if c := l.pkts.Load(); c-uint64(lastCPU) >= 1024 {
			lastCPU = int64(c)
			l.cpu.Store(threadCPU())
		}
	}
}

// threadCPU is the calling thread's CPU time (user + system), ns.
func threadCPU() int64 {
	var ru unix.Rusage
	if _, _, e := unix.RawSyscall(unix.SYS_GETRUSAGE, uintptr(unix.RUSAGE_THREAD), uintptr(unsafe.Pointer(&ru)), 0); e != 0 {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

func abs(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}
