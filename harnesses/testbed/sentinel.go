package testbed

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// StallThreshold is how late a 1 ms SCHED_FIFO wake-up must be to count
// as a host stall: the machine, not the emulator, failed to run a
// real-time thread on time.
const StallThreshold = time.Millisecond

// sentinel is a SCHED_FIFO thread that sleeps 1 ms at a time and records
// every wake-up later than StallThreshold. It tells a gate that failed
// because the host could not schedule anyone (on this 2-vCPU machine a
// bare real-time thread saw p99.9 35 ms and max 210 ms wake-up latency at
// load 13) from one that failed because the emulator is wrong.
type sentinel struct {
	stop    atomic.Bool
	done    chan struct{}
	mu      sync.Mutex
	stalls  []hostStall
	samples int
	// sampleAt holds the start of every wake-up of the last minute or so
	// (pruned), so that a window's sample count is known.
	sampleAt []int64
	rt       bool
}

type hostStall struct {
	at   time.Time
	mono int64 // CLOCK_MONOTONIC ns at the start of the wake-up
	late time.Duration
}

// HostStalls summarises the sentinel over a window.
type HostStalls struct {
	Samples  int           `json:"samples"`  // 1 ms wake-ups observed
	Count    int           `json:"count"`    // later than StallThreshold
	Max      time.Duration `json:"max_ns"`   // worst lateness
	Realtime bool          `json:"realtime"` // sentinel ran under SCHED_FIFO
}

// startSentinel starts the sentinel thread. Its priority (20) is above the
// emulator's (10), so that the emulator's own work is never counted as a
// host stall. It is not pinned, like the emulator threads: pinned to each
// CPU, sentinels reported ten times more stalls (this kernel runs with
// PREEMPT_NONE, so a CPU busy in another task's kernel code holds a pinned
// thread off, while an unpinned one moves to the other CPU) and their own
// 2,000 wake-ups a second visibly disturbed the emulator.
func startSentinel() *sentinel { return startSentinelOn(nil) }

// startSentinelOn starts the sentinel, pinned to cpus when not nil.
func startSentinelOn(cpus *unix.CPUSet) *sentinel {
	s := &sentinel{done: make(chan struct{})}
	const n = 1
	var wg sync.WaitGroup
	var ready sync.WaitGroup
	rt := true
	for range n {
		wg.Add(1)
		ready.Add(1)
		go func() {
			defer wg.Done()
			runtime.LockOSThread() // never unlocked: the thread may be real-time
			ok := unix.SchedSetAttr(0, &unix.SchedAttr{Policy: unix.SCHED_FIFO, Priority: 20}, 0) == nil
			_ = unix.Prctl(unix.PR_SET_TIMERSLACK, 1, 0, 0, 0)
			if cpus != nil {
				_ = unix.SchedSetaffinity(0, cpus)
			}
			s.mu.Lock()
			rt = rt && ok
			s.mu.Unlock()
			ready.Done()
			for !s.stop.Load() {
				// Fresh each time: ppoll writes the time left back into it.
				ts := unix.NsecToTimespec(int64(time.Millisecond))
				t0 := time.Now()
				m0 := monoRaw()
				// Raw: no runtime involvement, as in the emulator.
				unix.RawSyscall6(unix.SYS_PPOLL, 0, 0, uintptr(unsafe.Pointer(&ts)), 0, 0, 0)
				late := time.Duration(monoRaw()-m0) - time.Millisecond
				s.mu.Lock()
				s.samples++
				s.sampleAt = append(s.sampleAt, m0)
				if late > StallThreshold {
					s.stalls = append(s.stalls, hostStall{t0, m0, late})
				}
				s.mu.Unlock()
			}
		}()
	}
	ready.Wait()
	s.rt = rt
	go func() { wg.Wait(); close(s.done) }()
	return s
}

func (s *sentinel) close() { s.stop.Store(true); <-s.done }

// window summarises stalls that began in [from, to].
func (s *sentinel) window(from, to time.Time) HostStalls {
	s.mu.Lock()
	defer s.mu.Unlock()
	h := HostStalls{Realtime: s.rt}
	for _, st := range s.stalls {
		if !st.at.Before(from) && !st.at.After(to) {
			h.Count++
			h.Max = max(h.Max, st.late)
		}
	}
	return h
}

// total summarises the whole calibration.
func (s *sentinel) total() HostStalls {
	s.mu.Lock()
	defer s.mu.Unlock()
	h := HostStalls{Samples: s.samples, Count: len(s.stalls), Realtime: s.rt}
	for _, st := range s.stalls {
		h.Max = max(h.Max, st.late)
	}
	return h
}

func monoRaw() int64 {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return ts.Nano()
}

// monoWindow returns the stalls that began in [from, to] (MonoNow ns) and
// the number of wake-ups in it.
func (s *sentinel) monoWindow(from, to int64) ([]Stall, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []Stall{}
	for _, st := range s.stalls {
		if st.mono >= from && st.mono <= to {
			out = append(out, Stall{AtNS: st.mono, LateNS: int64(st.late)})
		}
	}
	n := 0
	for _, at := range s.sampleAt {
		if at >= from && at <= to {
			n++
		}
	}
	// Keep five minutes of sample instants (300k wake-ups at most).
	if len(s.sampleAt) > 300_000 {
		s.sampleAt = append([]int64(nil), s.sampleAt[len(s.sampleAt)-200_000:]...)
	}
	return out, n
}
