// Package linkemu emulates one direction of a network link in user space:
// a token bucket (rate, burst), a drop-tail queue, random loss and a fixed
// propagation delay, between two packet file descriptors (TUN devices, or
// SOCK_SEQPACKET socket pairs in tests).
//
// Each direction is one OS thread that never hands work to the Go
// scheduler: it sleeps in ppoll(2) on the input descriptor with a timeout
// equal to the time until the head packet is due (1 ns timer slack, so
// the kernel's hrtimer decides, not Go's millisecond-granular netpoll),
// reads whatever arrived, computes each packet's delivery time at once —
// the bucket is FIFO, so the schedule depends only on earlier packets —
// and writes every packet that is due. The thread measures how late each
// wake-up is and wakes that much earlier next time (a clipped running
// estimate), which turns the ~0.5 ms per direction a Go timer overshoots
// into microseconds without spinning. The thread runs under SCHED_FIFO
// when the kernel allows.
//
// With cgo (the default here) the loop is C (loop_c.go), with signals
// blocked, and never returns to the Go runtime until Stop: in Go, even
// with raw system calls, the runtime marks a goroutine that has run 10 ms
// (a thread blocked in a raw call counts) for preemption and then
// reschedules the locked goroutine through a normal-priority thread. On
// this machine the two loops measured alike (about 8 % of packets written
// more than 50 µs late at load 2.5 — the kernel's real-time wake-up
// latency under PREEMPT_NONE in a VM dominates), but the C loop has no
// such path at all. The pure-Go loop (loop_go.go) remains for
// CGO_ENABLED=0 builds; Backend says which is compiled in. An earlier
// design (a reader goroutine feeding a writer goroutine over a channel)
// stalled for 100-200 ms on a loaded machine through that path.
package linkemu

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// Spec is one direction's emulation.
type Spec struct {
	Rate  int64         // bit/s; 0 = unlimited (no bucket, no queue)
	Burst int           // bucket depth, bytes
	Queue int           // drop-tail backlog limit, bytes (0 = unlimited)
	Delay time.Duration // one-way propagation delay
	Loss  float64       // drop probability per packet
	// Seed seeds the loss draw (read at Start): with the same seed and the
	// same arrivals the same packets are lost, so a lossy run is
	// reproducible and its manifest can say which draw it had. 0 draws a
	// seed from the clock.
	Seed     uint64
	Overhead int // bytes added to each packet's length for the bucket
	// Hold gives the first Hold datagrams that arrive after the link was
	// idle for HoldIdle (0: DefaultHoldIdle) an extra delay HoldExtra,
	// beside the FIFO: they take their place in the token bucket, then
	// wait HoldExtra longer than the schedule says while the datagrams
	// behind them leave on time (they may overtake). Their Record's Due
	// includes HoldExtra, so the lateness accounting never counts the
	// deliberate delay, and HeldUS says it was applied. The pv-distinct
	// scenario uses it to make a migration's first datagrams (the path
	// validation) slower than the data that follows (docs/testbed.md).
	Hold      int
	HoldExtra time.Duration
	HoldIdle  time.Duration
	// HoldMinSize: only datagrams of at least this many bytes (as read,
	// the IP packet) count towards Hold; smaller ones pass. A datagram
	// carrying a PATH_CHALLENGE is expanded to 1200 B of UDP payload
	// (RFC 9000 §8.2.1), an ACK-only one is not.
	HoldMinSize int
}

// DefaultHoldIdle is the idle gap after which a link with Spec.Hold holds
// again: a path unused before a migration is idle for seconds, a path
// carrying a transfer never for this long.
const DefaultHoldIdle = time.Second

func (s Spec) holdIdle() time.Duration {
	if s.HoldIdle > 0 {
		return s.HoldIdle
	}
	return DefaultHoldIdle
}

// Counters are cumulative totals for one direction.
type Counters struct {
	Packets    uint64 `json:"packets"` // delivered (written out)
	Bytes      uint64 `json:"bytes"`
	QueueDrops uint64 `json:"queue_drops"`
	LossDrops  uint64 `json:"loss_drops"`
}

// Timing is the thread's self-measurement of its write times against the
// schedule.
type Timing struct {
	Compensation time.Duration `json:"compensation_ns"` // current early-wake offset
	MeanLate     time.Duration `json:"mean_late_ns"`    // mean of (write − due) over packets written after a sleep
	MeanAbsLate  time.Duration `json:"mean_abs_late_ns"`
	MaxLate      time.Duration `json:"max_late_ns"`
	Slept        uint64        `json:"slept"`  // packets written after a timed sleep
	Behind       uint64        `json:"behind"` // packets written more than 50 µs late
	CPU          time.Duration `json:"cpu_ns"` // thread CPU time (user+system)
}

const (
	maxPacket = 2048  // TUN MTU is 1500
	maxQueued = 65536 // packets in the delay line per direction
	// Compensation is an estimate of the wake-up latency: bounded, and
	// corrected by at most 20 µs per sample so that one preempted wake-up
	// cannot make the following packets early.
	maxComp  = int64(200 * time.Microsecond)
	maxStep  = int64(20 * time.Microsecond)
	batch    = int64(10 * time.Microsecond) // write together what is due this close
	lateMark = int64(50 * time.Microsecond)
	// readBatch bounds the packets read per wake-up; ppoll returns at once
	// while more are waiting.
	readBatch = 16
	// maxHeld bounds the hold line (Spec.Hold), as LE_HOLD_CAP in C.
	maxHeld = 64
)

// Link is one running direction.
type Link struct {
	inFD, outFD int
	stopFD      int // eventfd: readable once Stop is called
	spec        atomic.Pointer[Spec]

	stopped atomic.Bool
	done    chan struct{}

	impl // the loop's state: loop_c.go (cgo) or loop_go.go
}

var epoch = time.Now()

// Now is the emulator's clock: monotonic nanoseconds (Go's vDSO clock, no
// system call).
func Now() int64 { return int64(time.Since(epoch)) }

// Start moves packets read from the nonblocking packet descriptor inFD
// (a TUN device, or a SOCK_SEQPACKET socket in tests) to outFD according
// to spec until Stop. Link owns neither descriptor.
func Start(inFD, outFD int, spec Spec) (*Link, error) {
	efd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		return nil, fmt.Errorf("linkemu: eventfd: %w", err)
	}
	l := &Link{inFD: inFD, outFD: outFD, stopFD: efd, done: make(chan struct{})}
	l.spec.Store(&spec)
	l.init(spec)
	go l.run()
	return l, nil
}

// SetSpec changes the emulation; packets already scheduled keep their time.
func (l *Link) SetSpec(s Spec) { l.spec.Store(&s); l.pushSpec(s) }

// Spec returns the current emulation.
func (l *Link) Spec() Spec { return *l.spec.Load() }

// Counters returns the cumulative totals.
func (l *Link) Counters() Counters { return l.counters() }

// Timing returns the thread's self-measurement.
func (l *Link) Timing() Timing { return l.timing() }

// seed is the loss draw's seed: s.Seed, or one from the clock and the
// output descriptor.
func (s Spec) seed(outFD int) uint64 {
	if s.Seed != 0 {
		return s.Seed
	}
	return uint64(time.Now().UnixNano()) ^ uint64(outFD)<<32
}

// Stop ends the thread and waits for it; queued packets are dropped.
// After Stop returns the link no longer touches either descriptor.
func (l *Link) Stop() {
	if !l.stopped.Swap(true) {
		var one [8]byte
		one[0] = 1 // eventfd counter increment (little endian)
		_, _ = unix.Write(l.stopFD, one[:])
		<-l.done
		l.release()
		return
	}
	<-l.done
}

// PinCPUs, when not nil, pins every emulator thread started afterwards to
// these CPUs.
var PinCPUs *unix.CPUSet

// Realtime, when true (the default), runs the emulator's threads under
// SCHED_FIFO so that other work on a shared machine does not delay
// packets; if the kernel refuses, they run at nice -10 instead, and
// Scheduling reports what was obtained.
var Realtime = true

var sched struct {
	sync.Mutex
	got string
}

// Scheduling reports the scheduling class the emulator threads obtained.
func Scheduling() string {
	sched.Lock()
	defer sched.Unlock()
	return sched.got
}

// prioritise raises the calling (locked) thread's priority.
func prioritise() {
	got := "normal"
	if PinCPUs != nil {
		_ = unix.SchedSetaffinity(0, PinCPUs)
	}
	if Realtime {
		tid := unix.Gettid()
		if err := unix.SchedSetAttr(tid, &unix.SchedAttr{Policy: unix.SCHED_FIFO, Priority: 10}, 0); err == nil {
			got = "SCHED_FIFO 10"
		} else if err := unix.Setpriority(unix.PRIO_PROCESS, tid, -10); err == nil {
			got = "nice -10"
		}
	}
	sched.Lock()
	sched.got = got
	sched.Unlock()
}

// Record is one packet's fate in one direction, for the fidelity record:
// when it arrived (Arr), when the schedule said it was due (Due) and when
// it was written out (Sent), on the CLOCK_MONOTONIC clock in ns (see
// MonoNow); Due and Sent are 0 for a packet dropped on arrival.
type Record struct {
	Arr, Due, Sent int64
	Size           uint32
	Cause          uint32 // Sent, QueueDrop, LossDrop, WriteDrop
	// Where the datagram's bytes are in the capture ring while capture is
	// on (capOff counts bytes ever written there; capLen 0: not captured).
	capOff uint64
	capLen uint32
	// HeldUS is the extra delay (µs) the link's hold gave this datagram on
	// purpose (Spec.Hold), included in Due; 0 for every other datagram.
	HeldUS uint32
}

// Record causes.
const (
	Sent      = 0 // delivered
	QueueDrop = 1 // drop-tail queue full
	LossDrop  = 2 // configured random loss
	WriteDrop = 3 // the output device refused it
)

// RecordCap is how many records each direction keeps (a ring): 2^18 is
// about two and a half minutes of a 20 Mbit/s path's data packets.
// Set it before Start; 0 records nothing.
var RecordCap = 1 << 18

// MonoNow is CLOCK_MONOTONIC in ns: the clock of Record, shared by every
// process on the machine.
func MonoNow() int64 {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return ts.Nano()
}

// monoOffset converts the pure-Go loop's Now() to MonoNow.
var monoOffset = MonoNow() - Now()

// Records returns the records with sequence number ≥ since still held
// (older ones were overwritten) and the sequence number to ask from next.
func (l *Link) Records(since uint64) ([]Record, uint64) { return l.records(since) }

// CaptureRing is the size in bytes of each direction's capture ring (a
// power of two), allocated at Start beside the record ring; 0 disables
// capture. 8 MiB holds 0.67 s of a 100 Mbit/s direction, far more than
// the holder's drainer leaves between its reads (docs/wire.md).
var CaptureRing = 8 << 20

func captureRingSize() int {
	n := CaptureRing
	if n <= 0 || n&(n-1) != 0 || n < 4*maxPacket {
		return 0
	}
	return n
}

// Datagram is one record with the datagram it describes, as the link read
// it from its input (an IP packet on a TUN device), whole.
type Datagram struct {
	Record
	// Data is nil when capture was off, or when the loop overwrote the
	// bytes before they were read (counted in Drained.LostBytes).
	Data []byte
}

// Drained is what one Datagrams call read.
type Drained struct {
	Datagrams []Datagram
	Next      uint64 // the sequence number to ask from next
	// LostRecords counts records overwritten in the record ring before
	// they were read; LostBytes counts datagrams whose bytes were
	// overwritten in the capture ring (their records are kept, Data nil).
	LostRecords, LostBytes uint64
}

// SetCapture starts (or stops) copying each datagram's bytes into the
// capture ring as it is recorded; it is off at Start. It reports false
// when the link has no capture ring (CaptureRing or RecordCap is 0).
func (l *Link) SetCapture(on bool) bool { return l.setCapture(on) }

// Datagrams returns the records with sequence number ≥ since, each with
// its bytes when they were captured, and what was lost since then. Call
// it often enough that the rings are not overrun (every 20 ms is far
// inside both at 100 Mbit/s); anything overrun is counted, never dropped
// silently.
func (l *Link) Datagrams(since uint64) Drained { return l.datagrams(since, nil) }

// DatagramsInto is Datagrams with the bytes copied into buf when it is
// large enough (the Data slices then alias buf): a caller that only counts
// reuses one buffer instead of leaving garbage behind.
func (l *Link) DatagramsInto(since uint64, buf []byte) Drained { return l.datagrams(since, buf) }

// lostBefore is how many records between since and next were not returned.
func lostBefore(since, next uint64, got int) uint64 {
	if next > since && next-since > uint64(got) {
		return next - since - uint64(got)
	}
	return 0
}

// attachBytes copies each record's captured bytes out of ring (capW reads
// the count of bytes ever written there) into one allocation. A datagram
// whose bytes the loop may have overwritten while they were copied (the
// writer got within a packet of them) gets no Data and counts in lost.
func attachBytes(recs []Record, ring []byte, capW func() uint64, lost *uint64, buf []byte) []Datagram {
	out := make([]Datagram, len(recs))
	total := 0
	for _, r := range recs {
		total += int(r.capLen)
	}
	if cap(buf) < total {
		buf = make([]byte, total)
	}
	size := uint64(len(ring))
	for i, r := range recs {
		out[i].Record = r
		if r.capLen == 0 || size == 0 {
			continue
		}
		d := buf[:r.capLen:r.capLen]
		buf = buf[r.capLen:]
		at := r.capOff & (size - 1)
		n := copy(d, ring[at:])
		copy(d[n:], ring)
		out[i].Data = d
	}
	w := capW()
	for i := range out {
		if out[i].Data != nil && w-out[i].capOff+maxPacket > size {
			out[i].Data = nil
			*lost++
		}
	}
	return out
}

// SetSpin makes the thread sleep until d before each deadline and
// busy-wait the rest (0: sleep only, the default).
func (l *Link) SetSpin(d time.Duration) { l.setSpin(d) }
