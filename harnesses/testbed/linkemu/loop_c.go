//go:build cgo

package linkemu

/*
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#define LE_LD(x) __atomic_load_n(&(x), __ATOMIC_ACQUIRE)
#define LE_RLX(x) __atomic_load_n(&(x), __ATOMIC_RELAXED)
#define LE_ST(x, v) __atomic_store_n(&(x), (v), __ATOMIC_RELEASE)
#define LE_ADD(x, v) __atomic_add_fetch(&(x), (v), __ATOMIC_RELAXED)

// Shared with Go. The spec is published with a sequence lock (ver odd
// while Go writes it); the statistics are written here and read by Go,
// all with atomic operations.
// One packet's fate, for the fidelity record: when it arrived, when the
// schedule said it was due (0 for a drop), when it was written (0 for a
// drop), its size and what happened (LE_SENT, LE_QDROP, LE_LDROP, LE_WDROP),
// and, while capture is on, where its bytes are in the capture ring
// (cap_off counts bytes ever written there; cap_len 0: not captured).
typedef struct {
	int64_t arr, due, sent;
	uint32_t size, cause;
	uint64_t cap_off;
	uint32_t cap_len, held_us; // held_us: deliberate extra delay (the hold), µs
} le_rec;

enum { LE_SENT = 0, LE_QDROP = 1, LE_LDROP = 2, LE_WDROP = 3 };

typedef struct {
	uint64_t ver;
	int64_t rate, burst, queue, delay, overhead, loss_ppb, hold, hold_extra, hold_idle, hold_min;
	uint64_t pkts, bytes, qdrops, ldrops;
	int64_t comp, late_sum, abs_late_sum, max_late;
	uint64_t slept, behind;
	int64_t cpu;
	int64_t spin;   // busy-wait this long before each deadline (ns); 0 = sleep only
	le_rec *rec;    // ring of rec_cap records (NULL: not recorded)
	uint64_t rec_cap, rec_n; // rec_n: records written so far (the ring index is rec_n % rec_cap)
	// The capture ring: while cap_on, each recorded datagram's bytes are
	// copied here (cap_size, a power of two) before its record is
	// published; cap_w counts the bytes ever written.
	unsigned char *cap;
	uint64_t cap_size, cap_w;
	int64_t cap_on;
} le_shared;

// le_record publishes one record; buf (the datagram) is copied into the
// capture ring first while capture is on, so a reader that sees the record
// finds its bytes.
static void le_record(le_shared *s, int64_t arr, int64_t due, int64_t sent, uint32_t size, uint32_t cause, const unsigned char *buf, uint32_t held_us) {
	if (s->rec == NULL) return;
	uint64_t off = 0;
	uint32_t clen = 0;
	if (s->cap != NULL && LE_RLX(s->cap_on)) {
		off = LE_RLX(s->cap_w); // written by this thread only
		clen = size;
		uint64_t at = off & (s->cap_size - 1), first = s->cap_size - at;
		if (first > clen) first = clen;
		memcpy(s->cap + at, buf, first);
		if (first < clen) memcpy(s->cap, buf + first, clen - first);
		LE_ST(s->cap_w, off + clen);
	}
	uint64_t i = LE_RLX(s->rec_n);
	s->rec[i % s->rec_cap] = (le_rec){arr, due, sent, size, cause, off, clen, held_us};
	LE_ST(s->rec_n, i + 1);
}

typedef struct { int64_t rate, burst, queue, delay, overhead, loss_ppb, hold, hold_extra, hold_idle, hold_min; } le_spec;
typedef struct { unsigned char *buf; int n; int64_t due, arr; uint32_t held_us; } le_pkt;


enum {
	LE_MAXPKT = 2048,
	LE_CAP = 65536,
	LE_READ_BATCH = 16,
	LE_HOLD_CAP = 64, // the hold line: at most this many held datagrams at once
};
static const int64_t LE_MAXCOMP = 200000, LE_MAXSTEP = 20000, LE_BATCH = 10000, LE_LATEMARK = 50000;

static inline void le_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#endif
}

static int64_t le_now(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int64_t le_cpu(void) {
	struct rusage ru;
	if (getrusage(RUSAGE_THREAD, &ru) != 0) return 0;
	return ((int64_t)ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000000LL +
	       ((int64_t)ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000LL;
}

static uint64_t le_read_spec(le_shared *s, le_spec *sp) {
	for (;;) {
		uint64_t v1 = LE_LD(s->ver);
		if (v1 & 1) continue;
		sp->rate = LE_RLX(s->rate);
		sp->burst = LE_RLX(s->burst);
		sp->queue = LE_RLX(s->queue);
		sp->delay = LE_RLX(s->delay);
		sp->overhead = LE_RLX(s->overhead);
		sp->loss_ppb = LE_RLX(s->loss_ppb);
		sp->hold = LE_RLX(s->hold);
		sp->hold_extra = LE_RLX(s->hold_extra);
		sp->hold_idle = LE_RLX(s->hold_idle);
		sp->hold_min = LE_RLX(s->hold_min);
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (LE_LD(s->ver) == v1) return v1;
	}
}

// le_run is the emulator loop (see the package comment); it returns when
// stop_fd becomes readable.
static void le_run(le_shared *s, int in_fd, int out_fd, int stop_fd, uint64_t seed) {
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old); // nothing interrupts the loop
	prctl(PR_SET_TIMERSLACK, 1, 0, 0, 0);

	le_spec sp;
	uint64_t ver = le_read_spec(s, &sp);
	double tokens = (double)sp.burst;
	int64_t last_refill = le_now(), last_release = 0;
	le_pkt *q = calloc(LE_CAP, sizeof *q);
	// The hold line: datagrams given the spec's extra delay (the first
	// `hold` after the link was idle `hold_idle`), kept beside the FIFO so
	// the datagrams behind them leave on their own schedule.
	le_pkt *hq = calloc(LE_HOLD_CAP, sizeof *hq);
	unsigned char **freel = calloc(LE_CAP + LE_HOLD_CAP + LE_READ_BATCH + 1, sizeof *freel);
	size_t head = 0, n = 0, nfree = 0, hhead = 0, hn = 0;
	int64_t last_arr = 0, hold_left = 0;
	uint64_t rng = seed | 1, cpu_mark = 0;
	int64_t comp = 0, max_late = 0;
	struct pollfd fds[2] = {{in_fd, POLLIN, 0}, {stop_fd, POLLIN, 0}};
	if (q == NULL || hq == NULL || freel == NULL) goto out;

	for (;;) {
		struct timespec ts = {0, 100000000}; // idle: wake every 100 ms anyway
		int timed = 0;
		int64_t spin = LE_RLX(s->spin);
		if (n > 0 || hn > 0) {
			int64_t nd = n > 0 ? q[head].due : hq[hhead].due;
			if (hn > 0 && hq[hhead].due < nd) nd = hq[hhead].due;
			int64_t wait = nd - comp - spin - le_now();
			if (wait < LE_BATCH) wait = 0;
			ts.tv_sec = wait / 1000000000LL;
			ts.tv_nsec = wait % 1000000000LL;
			timed = wait > 0;
		}
		if (ppoll(fds, 2, &ts, NULL) < 0) {
			if (errno == EINTR) continue;
			break;
		}
		if (fds[1].revents) break;
		if (fds[0].revents) {
			for (int k = 0; k < LE_READ_BATCH; k++) {
				unsigned char *buf = nfree ? freel[--nfree] : malloc(LE_MAXPKT);
				if (buf == NULL) break;
				ssize_t m = read(in_fd, buf, LE_MAXPKT);
				if (m <= 0) {
					freel[nfree++] = buf;
					if (m < 0 && errno == EBADF) goto out;
					break; // EAGAIN, or EIO while a device goes down
				}
				if (LE_LD(s->ver) != ver) {
					ver = le_read_spec(s, &sp);
					if (tokens > (double)sp.burst) tokens = (double)sp.burst;
				}
				int64_t now = le_now();
				if (sp.hold > 0 && (last_arr == 0 || now - last_arr >= sp.hold_idle)) hold_left = sp.hold;
				last_arr = now;
				if (sp.loss_ppb > 0) {
					rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
					if ((int64_t)(rng % 1000000000ULL) < sp.loss_ppb) {
						LE_ADD(s->ldrops, 1);
						le_record(s, now, 0, 0, (uint32_t)m, LE_LDROP, buf, 0);
						freel[nfree++] = buf;
						continue;
					}
				}
				int64_t release = now;
				if (sp.rate > 0) {
					double nspb = 8e9 / (double)sp.rate, wire = (double)(m + sp.overhead);
					int64_t t0 = now > last_release ? now : last_release;
					if (sp.queue > 0 && (double)(t0 - now) > (double)sp.queue * nspb) {
						LE_ADD(s->qdrops, 1);
						le_record(s, now, 0, 0, (uint32_t)m, LE_QDROP, buf, 0);
						freel[nfree++] = buf;
						continue;
					}
					tokens += (double)(t0 - last_refill) / nspb;
					if (tokens > (double)sp.burst) tokens = (double)sp.burst;
					last_refill = t0;
					release = t0;
					if (tokens < wire) {
						release = t0 + (int64_t)((wire - tokens) * nspb);
						tokens = 0;
						last_refill = release;
					} else {
						tokens -= wire;
					}
					last_release = release;
				}
				if (hold_left > 0 && hn < LE_HOLD_CAP && m >= sp.hold_min) {
					hold_left--;
					hq[(hhead + hn) % LE_HOLD_CAP] = (le_pkt){buf, (int)m, release + sp.delay + sp.hold_extra, now, (uint32_t)(sp.hold_extra / 1000)};
					hn++;
					continue;
				}
				if (n == LE_CAP) {
					LE_ADD(s->qdrops, 1);
					le_record(s, now, 0, 0, (uint32_t)m, LE_QDROP, buf, 0);
					freel[nfree++] = buf;
					continue;
				}
				q[(head + n) % LE_CAP] = (le_pkt){buf, (int)m, release + sp.delay, now, 0};
				n++;
			}
		}
		// Write what is due; learn from the wake-up only if the timeout,
		// not an arrival, ended it.
		int64_t now = le_now();
		int first = timed && fds[0].revents == 0;
		// The head is whichever line's first datagram is due first.
#define LE_HOLD_FIRST (hn > 0 && (n == 0 || hq[hhead].due < q[head].due))
#define LE_HEAD_DUE (LE_HOLD_FIRST ? hq[hhead].due : q[head].due)
		if (spin > 0 && (n > 0 || hn > 0) && LE_HEAD_DUE > now && LE_HEAD_DUE - now <= spin + comp + LE_BATCH) {
			// Woken for the head packet: learn from how late the wake-up
			// was against its target (due - spin), then spin to the deadline.
			if (first) {
				int64_t wl = now - (LE_HEAD_DUE - spin);
				int64_t step = wl < -LE_MAXSTEP ? -LE_MAXSTEP : wl > LE_MAXSTEP ? LE_MAXSTEP : wl;
				comp += step / 4;
				if (comp < 0) comp = 0;
				if (comp > LE_MAXCOMP) comp = LE_MAXCOMP;
				LE_ST(s->comp, comp);
			}
			int64_t due = LE_HEAD_DUE;
			while ((now = le_now()) < due) le_relax();
		}
		while ((n > 0 || hn > 0) && LE_HEAD_DUE - (spin > 0 ? 0 : comp) - now <= LE_BATCH) {
			le_pkt p;
			if (LE_HOLD_FIRST) {
				p = hq[hhead];
				hhead = (hhead + 1) % LE_HOLD_CAP;
				hn--;
			} else {
				p = q[head];
				head = (head + 1) % LE_CAP;
				n--;
			}
			int64_t late = now - p.due;
			if (first && spin == 0) {
				int64_t step = late < -LE_MAXSTEP ? -LE_MAXSTEP : late > LE_MAXSTEP ? LE_MAXSTEP : late;
				comp += step / 4;
				if (comp < 0) comp = 0;
				if (comp > LE_MAXCOMP) comp = LE_MAXCOMP;
				LE_ST(s->comp, comp);
				LE_ADD(s->late_sum, late);
				LE_ADD(s->abs_late_sum, late < 0 ? -late : late);
				LE_ADD(s->slept, 1);
			}
			if (first && spin > 0) {
				LE_ADD(s->late_sum, late);
				LE_ADD(s->abs_late_sum, late < 0 ? -late : late);
				LE_ADD(s->slept, 1);
			}
			first = 0;
			if (late > LE_LATEMARK) LE_ADD(s->behind, 1);
			if (late > max_late) {
				max_late = late;
				LE_ST(s->max_late, max_late);
			}
			if (write(out_fd, p.buf, p.n) == p.n) {
				LE_ADD(s->pkts, 1);
				LE_ADD(s->bytes, (uint64_t)p.n);
				le_record(s, p.arr, p.due, now, (uint32_t)p.n, LE_SENT, p.buf, p.held_us);
			} else {
				LE_ADD(s->qdrops, 1);
				le_record(s, p.arr, p.due, 0, (uint32_t)p.n, LE_WDROP, p.buf, p.held_us);
			}
			freel[nfree++] = p.buf;
			now = le_now();
		}
		uint64_t pk = LE_RLX(s->pkts);
		if (pk - cpu_mark >= 1024) {
			cpu_mark = pk;
			LE_ST(s->cpu, le_cpu());
		}
	}
out:
	if (q != NULL) {
		for (; n > 0; n--, head = (head + 1) % LE_CAP) free(q[head].buf);
		free(q);
	}
	if (hq != NULL) {
		for (; hn > 0; hn--, hhead = (hhead + 1) % LE_HOLD_CAP) free(hq[hhead].buf);
		free(hq);
	}
	if (freel != NULL) {
		while (nfree > 0) free(freel[--nfree]);
		free(freel);
	}
	LE_ST(s->cpu, le_cpu());
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}
*/
import "C"

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Backend names the implementation of the emulator loop.
const Backend = "c (cgo): the loop never re-enters the Go runtime"

// impl is the C loop's shared state. It is Go memory without Go pointers,
// passed to the C loop for the whole call.
type impl struct {
	sh   *C.le_shared
	spmu sync.Mutex // serialises writers of the sequence lock

	recmu sync.RWMutex // guards the rings' lifetime (freed by release)
	ring  []Record     // the C ring, viewed from Go; nil once released
	cap   []byte       // the C capture ring, viewed from Go; nil once released
}

func (l *Link) init(s Spec) {
	l.sh = new(C.le_shared)
	if RecordCap > 0 {
		if p := C.calloc(C.size_t(RecordCap), C.size_t(unsafe.Sizeof(C.le_rec{}))); p != nil {
			l.sh.rec = (*C.le_rec)(p)
			l.sh.rec_cap = C.uint64_t(RecordCap)
			l.ring = unsafe.Slice((*Record)(p), RecordCap)
		}
		if n := captureRingSize(); n > 0 {
			if p := C.malloc(C.size_t(n)); p != nil {
				l.sh.cap = (*C.uchar)(p)
				l.sh.cap_size = C.uint64_t(n)
				l.cap = unsafe.Slice((*byte)(p), n)
			}
		}
	}
	l.pushSpec(s)
}

func (l *Link) release() {
	l.recmu.Lock()
	defer l.recmu.Unlock()
	if l.sh.rec != nil {
		C.free(unsafe.Pointer(l.sh.rec))
		l.sh.rec, l.ring = nil, nil
	}
	if l.sh.cap != nil {
		C.free(unsafe.Pointer(l.sh.cap))
		l.sh.cap, l.cap = nil, nil
	}
}

func (l *Link) setCapture(on bool) bool {
	if l.sh.cap == nil {
		return false
	}
	v := int64(0)
	if on {
		v = 1
	}
	atomic.StoreInt64(i64(&l.sh.cap_on), v)
	return true
}

// datagrams is records with the bytes each carried while capture was on.
func (l *Link) datagrams(since uint64, buf []byte) Drained {
	l.recmu.RLock()
	defer l.recmu.RUnlock()
	if l.ring == nil {
		return Drained{Next: since}
	}
	recs, next := l.recordsLocked(since)
	d := Drained{Next: next, LostRecords: lostBefore(since, next, len(recs))}
	d.Datagrams = attachBytes(recs, l.cap, func() uint64 { return atomic.LoadUint64(u64(&l.sh.cap_w)) }, &d.LostBytes, buf)
	return d
}

func (l *Link) setSpin(d time.Duration) { atomic.StoreInt64(i64(&l.sh.spin), int64(d)) }

// records copies the records with index ≥ since still in the ring.
func (l *Link) records(since uint64) ([]Record, uint64) {
	l.recmu.RLock()
	defer l.recmu.RUnlock()
	if l.ring == nil {
		return nil, since
	}
	return l.recordsLocked(since)
}

func (l *Link) recordsLocked(since uint64) ([]Record, uint64) {
	c := uint64(len(l.ring))
	n := atomic.LoadUint64(u64(&l.sh.rec_n))
	// Leave a margin: the loop may be overwriting the oldest slots now.
	lo := since
	if n > c && lo < n-c+1024 {
		lo = n - c + 1024
	}
	if lo >= n {
		return nil, n
	}
	out := make([]Record, 0, n-lo)
	for i := lo; i < n; i++ {
		out = append(out, l.ring[i%c])
	}
	return out, n
}

func u64(p *C.uint64_t) *uint64 { return (*uint64)(unsafe.Pointer(p)) }
func i64(p *C.int64_t) *int64   { return (*int64)(unsafe.Pointer(p)) }

// pushSpec publishes s to the loop under the sequence lock.
func (l *Link) pushSpec(s Spec) {
	l.spmu.Lock()
	defer l.spmu.Unlock()
	sh := l.sh
	v := atomic.LoadUint64(u64(&sh.ver))
	atomic.StoreUint64(u64(&sh.ver), v+1)
	atomic.StoreInt64(i64(&sh.rate), s.Rate)
	atomic.StoreInt64(i64(&sh.burst), int64(s.Burst))
	atomic.StoreInt64(i64(&sh.queue), int64(s.Queue))
	atomic.StoreInt64(i64(&sh.delay), int64(s.Delay))
	atomic.StoreInt64(i64(&sh.overhead), int64(s.Overhead))
	atomic.StoreInt64(i64(&sh.loss_ppb), int64(s.Loss*1e9))
	atomic.StoreInt64(i64(&sh.hold), int64(s.Hold))
	atomic.StoreInt64(i64(&sh.hold_extra), int64(s.HoldExtra))
	atomic.StoreInt64(i64(&sh.hold_idle), int64(s.holdIdle()))
	atomic.StoreInt64(i64(&sh.hold_min), int64(s.HoldMinSize))
	atomic.StoreUint64(u64(&sh.ver), v+2)
}

func (l *Link) counters() Counters {
	sh := l.sh
	return Counters{
		Packets:    atomic.LoadUint64(u64(&sh.pkts)),
		Bytes:      atomic.LoadUint64(u64(&sh.bytes)),
		QueueDrops: atomic.LoadUint64(u64(&sh.qdrops)),
		LossDrops:  atomic.LoadUint64(u64(&sh.ldrops)),
	}
}

func (l *Link) timing() Timing {
	sh := l.sh
	n := atomic.LoadUint64(u64(&sh.slept))
	t := Timing{
		Compensation: time.Duration(atomic.LoadInt64(i64(&sh.comp))),
		Slept:        n,
		Behind:       atomic.LoadUint64(u64(&sh.behind)),
		MaxLate:      time.Duration(atomic.LoadInt64(i64(&sh.max_late))),
		CPU:          time.Duration(atomic.LoadInt64(i64(&sh.cpu))),
	}
	if n > 0 {
		t.MeanLate = time.Duration(atomic.LoadInt64(i64(&sh.late_sum)) / int64(n))
		t.MeanAbsLate = time.Duration(atomic.LoadInt64(i64(&sh.abs_late_sum)) / int64(n))
	}
	return t
}

func (l *Link) run() {
	defer close(l.done)
	// Never unlocked: the thread runs under SCHED_FIFO, so it must die
	// with this goroutine rather than return to Go's pool.
	runtime.LockOSThread()
	prioritise()
	C.le_run(l.sh, C.int(l.inFD), C.int(l.outFD), C.int(l.stopFD), C.uint64_t(l.spec.Load().seed(l.outFD)))
	unix.Close(l.stopFD)
}
