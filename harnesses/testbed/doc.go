// Package testbed builds the two-path network the live half of migaudit
// stands on, emulates each path's rate, delay and loss without sch_netem,
// and proves the emulation accurate before anything is measured on it.
//
// # Topology
//
// One instance is two network namespaces, named with the recognisable prefix
// Prefix and the instance name:
//
//	migaudit-<name>-cli   client: pathA 198.18.1.2/32, pathB 198.18.2.2/32
//	migaudit-<name>-srv   server: 198.18.0.1/32 on lo (never changes)
//
// Each namespace has one TUN device per path ("pathA", "pathB"). Their
// file descriptors are held by a holder process (see Lifetime) running the
// user-space link emulator, package linkemu: one SCHED_FIFO thread per
// path and direction reads every packet a namespace sends on a path,
// passes it through that path's token bucket (rate, burst), drop-tail
// queue and random loss, holds it for half the path's RTT on a
// compensated high-resolution schedule (ppoll with 1 ns timer slack, in a
// C loop that never re-enters the Go runtime), and writes it into the other
// namespace's TUN device of the same path. Nothing is connected to the
// host network: the root namespace gets no interface and no route.
//
// Client routing: policy rules send a socket bound to ClientAddrA out by
// path A and one bound to ClientAddrB out by path B (tables 101/102); the
// main table holds a fallback route to the server prefix (198.18.0.0/24) so
// an unbound socket never gets ENETUNREACH. RouteVia flips that main-table
// route (and its preferred source) between the paths: ngtcp2's client asks
// the routing table which local address to use.
//
// # API (stable; other harnesses build on it)
//
//	type PathSpec struct {
//	    Rate  int64         // bit/s of IP bytes (+Overhead per packet); 0 = unlimited
//	    RTT   time.Duration // round-trip propagation delay, half per direction
//	    Loss  float64       // random loss per packet and direction, 0..1
//	    Burst int           // token-bucket depth in bytes; 0 = DefaultBurst (3200)
//	    Queue int           // drop-tail queue per direction in bytes; 0 = DefaultQueue(rate, rtt)
//	    LossSeed uint64     // seed of the loss draw (up: seed, down: seed+1); 0 = from the clock
//	}
//	func ParsePath(s string) (PathSpec, error)  // "20mbit,20ms[,0.5%][,seed=7][,burst=3200][,queue=150000]"
//	func (PathSpec) String() string             // the same syntax, round-trips through ParsePath
//
//	type Config struct {
//	    Name         string // instance name, [a-z0-9-]{1,24}; "" = generated
//	    PathA, PathB PathSpec
//	}
//	func Standard() Config // A 20mbit,20ms  B 20mbit,40ms (the study's operating point)
//	func StepDown() Config // A 20mbit,20ms  B 20mbit,60ms
//
//	func Up(ctx context.Context, cfg Config) (*Testbed, error)         // holder tied to this process, until Down
//	func UpDetached(ctx context.Context, cfg Config) (*Testbed, error) // holder outlives us (`testbed up`)
//	func Attach(name string) (*Testbed, error) // instance held by `migaudit testbed up` ("" = the only one)
//	func (*Testbed) Down() error               // idempotent; kills processes left in the namespaces
//	func (*Testbed) Name() string
//	func (*Testbed) ClientNS() string; func (*Testbed) ServerNS() string
//	func (*Testbed) ClientAddrA() netip.Addr; ClientAddrB() netip.Addr; ServerAddr() netip.Addr
//	func (*Testbed) ClientAddr(path string) (netip.Addr, error) // "A" | "B"
//	func (*Testbed) Command(ctx context.Context, ns, name string, args ...string) *exec.Cmd // ip netns exec ns name args...
//	func (*Testbed) InNS(ns string, fn func() error) error // run fn on an OS thread inside ns (create Go sockets there)
//	func (*Testbed) RouteVia(path string) error           // "A" | "B": the client's main-table route
//	func (*Testbed) Route() (string, error)               // which path the main table uses now
//	func (*Testbed) Path(path string) (PathSpec, error)   // current emulation of a path
//	func (*Testbed) SetPath(path string, s PathSpec) error // change a path live (queued packets keep their schedule)
//	func (*Testbed) Counters() (map[string]PathCounters, error) // keys "A", "B"
//	func (*Testbed) EmulatorTiming() (map[string]linkemu.Timing, error) // per "A/up" etc.: lateness vs schedule, CPU
//	func (*Testbed) Holder() (HolderInfo, error)          // holder pid, scheduling class, tuning obtained
//	func (*Testbed) Fidelity(from, to int64, tol time.Duration) (Fidelity, error) // the emulator's per-packet record over a window
//	func MonoNow() int64                                   // the clock of Fidelity windows (CLOCK_MONOTONIC ns)
//	func WarmUp(ctx context.Context, t *Testbed, d time.Duration) error
//
//	type Tuning struct{ PinCPUs string; Mlock bool; Spin time.Duration } // Config.Tuning; nil = DefaultTuning() (mlockall)
//
//	type PathCounters struct{ Up, Down DirCounters } // Up = client→server
//	type DirCounters struct{ Packets, Bytes, QueueDrops, LossDrops uint64 }
//
//	func Calibrate(ctx context.Context, t *Testbed, opt CalibrateOptions) (*Calibration, error)
//
// Calibrate runs the four gates on each path (restoring the path's spec
// afterwards) and returns a JSON-serialisable record with every measured
// figure; when a gate fails the record is still returned together with a
// *GateError (errors.Join of one per gate) naming the gate, the path and
// the numbers:
//
//  1. timing: UDP echo at RTT 10/20/40 ms — median within ±2 %, mean
//     absolute deviation ≤ 200 µs. RTT = client kernel receive − client
//     kernel transmit − server kernel turnaround (SO_TIMESTAMPING), i.e.
//     exactly what the emulator imposed;
//  2. throughput: TCP bulk transfer at 20/50/100 Mbit/s — goodput
//     (tcpi_bytes_received between warm-up and end) ≥ 97 % and ≤ 101 % of
//     rate × MSS/MTU, min/max spread over repeats ≤ 3 %;
//  3. dispersion: trains of K=16 UDP packets of 1242 B, the leading
//     ⌊burst/1242⌋ discarded, rate from the least-squares slope of kernel
//     receive timestamps — median within ±2 % at 20/50/100 Mbit/s;
//  4. isolation: per-path counters — bound to A uses A only, bound to B uses
//     B only, unbound follows the main table, and after RouteVia("B") it
//     moves to B with source ClientAddrB.
//
// A SCHED_FIFO sentinel thread records host stalls (1 ms wake-ups more
// than 1 ms late) during every measurement. With CalibrateOptions.Strict
// every tolerance is a veto and a measurement that failed while the host
// stalled is repeated (Attempts, default 3). Without it (what `migaudit
// run` uses) calibration is a sanity check: any failed measurement is
// repeated, and a gate fails only on a systematic fault seen in every
// attempt (median delay or rate off, misrouting); jitter is recorded, not
// judged. Every discarded attempt is kept in the record; thresholds are
// never widened.
//
// # Fidelity
//
// The emulator records every packet (arrival, scheduled time, write time,
// or the cause of its drop; linkemu.Record, a ring per direction) and the
// holder runs a second sentinel whose stalls carry CLOCK_MONOTONIC
// instants. Fidelity summarises any window of both — per direction the
// one-way delay, the lateness against the schedule, the share later than
// a tolerance, the achieved rate and drops by cause, and the stalls — and
// is what harnesses/run writes into every repetition's manifest.
//
// # Lifetime and cleanup
//
// Up re-executes the current binary as the holder (this package's init
// turns the process into the holder when MIGAUDIT_TESTBED_HOLDER is set;
// so it works from migaudit and from test binaries alike). Keeping the
// emulator out of the caller's process keeps the caller's garbage
// collector out of its timing. The holder runs with GC off (memory limit
// 256 MiB) and in its own process group (a terminal's ^C goes to the
// caller); it holds a pipe from the caller and tears the instance down
// when that pipe closes — so the caller's death by any means (SIGINT,
// SIGTERM, SIGKILL, an unrecovered panic in any goroutine) removes every
// namespace, TUN device and process the instance created. The holder in
// turn starts a reaper (sh, own process group) that does the same if the
// holder itself is killed. Up installs no signal handlers: a caller may
// catch SIGINT itself and then call Down.
//
// UpDetached (used by `migaudit testbed up`) starts the holder in its own
// session; it holds the instance until Down (over its control socket),
// SIGINT, SIGTERM or SIGHUP. Its record, log and control socket are in
// StateDir/<name>/. Instances whose holder is gone are listed by Stale and
// removed by RemoveStale (only Prefix namespaces and StateDir entries).
package testbed
