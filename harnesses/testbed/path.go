package testbed

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// DefaultBurst is the token-bucket depth the study calibrated (§6.4): 1,600 B
// lost 14.5 % at 100 Mbit/s, 3,200 B passed both throughput and dispersion.
const DefaultBurst = 3200

// PathSpec is one path's emulation, applied independently in each direction.
type PathSpec struct {
	Rate  int64         `json:"rate_bps"`        // bit/s of IP bytes; 0 = unlimited
	RTT   time.Duration `json:"rtt_ns"`          // round-trip propagation delay, half per direction
	Loss  float64       `json:"loss"`            // random loss per packet and direction, 0..1
	Burst int           `json:"burst,omitempty"` // token-bucket depth in bytes; 0 = DefaultBurst
	Queue int           `json:"queue,omitempty"` // drop-tail queue per direction in bytes; 0 = DefaultQueue
	// Hold delays the first Hold datagrams of at least HoldMinIPSize bytes
	// in each direction after the path was idle (linkemu.DefaultHoldIdle)
	// by HoldExtra more, beside
	// the FIFO (linkemu.Spec.Hold): on a path unused until a migration,
	// the path validation's datagrams. ParsePath syntax hold=KxDURATION.
	Hold      int           `json:"hold,omitempty"`
	HoldExtra time.Duration `json:"hold_extra_ns,omitempty"`
	// LossSeed seeds the loss draw (linkemu.Spec.Seed): the up direction
	// draws with LossSeed, the down direction with LossSeed+1, so a lossy
	// path loses the same datagrams for the same arrivals and the run's
	// manifest (this spec's String) names the draw. 0: from the clock.
	// ParsePath syntax seed=N.
	LossSeed uint64 `json:"loss_seed,omitempty"`
}

// HoldMinIPSize is the least IP packet the hold counts: a UDP datagram of
// 1200 B over IPv4, the size every datagram carrying a PATH_CHALLENGE is
// expanded to (RFC 9000 §8.2.1); ACK-only datagrams pass unheld.
const HoldMinIPSize = 1200 + 8 + 20

// DefaultQueue is the drop-tail queue used when PathSpec.Queue is 0: one
// bandwidth-delay product at the path's own RTT, at least 64 KiB, so a
// standard-loss-based sender can keep the link busy without the queue
// inflating the RTT by more than about one RTT.
func DefaultQueue(rate int64, rtt time.Duration) int {
	bdp := int(float64(rate) / 8 * rtt.Seconds())
	return max(bdp, 64<<10)
}

// EffectiveBurst returns the burst actually emulated.
func (p PathSpec) EffectiveBurst() int {
	if p.Burst > 0 {
		return p.Burst
	}
	return DefaultBurst
}

// EffectiveQueue returns the queue actually emulated.
func (p PathSpec) EffectiveQueue() int {
	if p.Queue > 0 {
		return p.Queue
	}
	return DefaultQueue(p.Rate, p.RTT)
}

// Validate reports the first out-of-range field.
func (p PathSpec) Validate() error {
	switch {
	case p.Rate < 0:
		return fmt.Errorf("rate %d bit/s is negative", p.Rate)
	case p.Rate > 0 && p.Rate < 8000:
		return fmt.Errorf("rate %d bit/s is below 8 kbit/s", p.Rate)
	case p.RTT < 0 || p.RTT > 10*time.Second:
		return fmt.Errorf("rtt %v out of range 0..10s", p.RTT)
	case p.Loss < 0 || p.Loss > 1 || math.IsNaN(p.Loss):
		return fmt.Errorf("loss %v out of range 0..1", p.Loss)
	case p.Burst < 0 || p.Burst > 0 && p.Burst < 1600:
		return fmt.Errorf("burst %d B must be at least 1600 (one full packet)", p.Burst)
	case p.Queue < 0 || p.Queue > 0 && p.Queue < 1600:
		return fmt.Errorf("queue %d B must be at least 1600 (one full packet)", p.Queue)
	case p.LossSeed != 0 && p.Loss == 0:
		return fmt.Errorf("loss seed %d without a loss rate", p.LossSeed)
	case p.Hold < 0 || p.Hold > maxHold:
		return fmt.Errorf("hold %d datagrams out of range 0..%d", p.Hold, maxHold)
	case p.Hold > 0 && (p.HoldExtra <= 0 || p.HoldExtra > 10*time.Second):
		return fmt.Errorf("hold extra delay %v out of range (0, 10s]", p.HoldExtra)
	}
	return nil
}

// forCalibration is p as the calibration gates measure it: no random loss
// (nor its seed) and no pv-distinct hold — they measure the emulator, not
// the scenario.
func (p PathSpec) forCalibration() PathSpec {
	p.Loss, p.LossSeed, p.Hold, p.HoldExtra = 0, 0, 0, 0
	return p
}

// String renders p in ParsePath syntax.
func (p PathSpec) String() string {
	var b strings.Builder
	b.WriteString(formatRate(p.Rate))
	b.WriteByte(',')
	b.WriteString(formatDur(p.RTT))
	if p.Loss > 0 {
		b.WriteString("," + strconv.FormatFloat(p.Loss*100, 'g', -1, 64) + "%")
	}
	if p.Loss > 0 && p.LossSeed != 0 {
		fmt.Fprintf(&b, ",seed=%d", p.LossSeed)
	}
	if p.Burst > 0 {
		fmt.Fprintf(&b, ",burst=%d", p.Burst)
	}
	if p.Queue > 0 {
		fmt.Fprintf(&b, ",queue=%d", p.Queue)
	}
	if p.Hold > 0 {
		fmt.Fprintf(&b, ",hold=%dx%s", p.Hold, formatDur(p.HoldExtra))
	}
	return b.String()
}

func formatRate(r int64) string {
	switch {
	case r == 0:
		return "unlimited"
	case r%1_000_000_000 == 0:
		return fmt.Sprintf("%dgbit", r/1_000_000_000)
	case r%1_000_000 == 0:
		return fmt.Sprintf("%dmbit", r/1_000_000)
	case r%1000 == 0:
		return fmt.Sprintf("%dkbit", r/1000)
	}
	return fmt.Sprintf("%dbit", r)
}

func formatDur(d time.Duration) string {
	if d%time.Millisecond == 0 {
		return fmt.Sprintf("%dms", d/time.Millisecond)
	}
	return fmt.Sprintf("%gms", float64(d)/1e6)
}

var rateRE = regexp.MustCompile(`^([0-9]+(?:\.[0-9]+)?)(bit|kbit|mbit|gbit|bps|kbps|mbps|gbps)?$`)

// ParsePath parses "RATE,RTT[,LOSS%][,seed=N][,burst=BYTES][,queue=BYTES][,hold=KxDURATION]",
// e.g. "20mbit,20ms", "20mbit,40ms,0.5%", "20mbit,40ms,1%,seed=7", "100mbit,10ms,burst=3200",
// "20mbit,40ms,hold=1x100ms". RATE takes
// tc units (bit, kbit, mbit, gbit; kbps etc. are bytes/s as in tc) or
// "unlimited"; RTT is a Go duration; LOSS is a percentage or a fraction.
func ParsePath(s string) (PathSpec, error) {
	var p PathSpec
	parts := strings.Split(strings.TrimSpace(s), ",")
	if len(parts) < 2 {
		return p, fmt.Errorf("path %q: want RATE,RTT[,LOSS%%][,burst=B][,queue=B]", s)
	}
	r, err := parseRate(strings.TrimSpace(parts[0]))
	if err != nil {
		return p, fmt.Errorf("path %q: field 1: %w", s, err)
	}
	p.Rate = r
	d, err := time.ParseDuration(strings.TrimSpace(parts[1]))
	if err != nil {
		return p, fmt.Errorf("path %q: field 2: rtt: %w", s, err)
	}
	p.RTT = d
	for i, f := range parts[2:] {
		f = strings.TrimSpace(f)
		field := i + 3
		switch {
		case strings.HasPrefix(f, "hold="):
			k, d, ok := strings.Cut(f[5:], "x")
			n, err := strconv.Atoi(k)
			if !ok || err != nil {
				return p, fmt.Errorf("path %q: field %d: hold: want KxDURATION, e.g. hold=1x100ms", s, field)
			}
			x, err := time.ParseDuration(d)
			if err != nil {
				return p, fmt.Errorf("path %q: field %d: hold: %w", s, field, err)
			}
			p.Hold, p.HoldExtra = n, x
		case strings.HasPrefix(f, "seed="):
			n, err := strconv.ParseUint(f[5:], 10, 64)
			if err != nil {
				return p, fmt.Errorf("path %q: field %d: seed: %w", s, field, err)
			}
			p.LossSeed = n
		case strings.HasPrefix(f, "burst="), strings.HasPrefix(f, "queue="):
			n, err := strconv.Atoi(f[6:])
			if err != nil {
				return p, fmt.Errorf("path %q: field %d: %s: %w", s, field, f[:5], err)
			}
			if f[0] == 'b' {
				p.Burst = n
			} else {
				p.Queue = n
			}
		case strings.HasSuffix(f, "%"):
			v, err := strconv.ParseFloat(strings.TrimSuffix(f, "%"), 64)
			if err != nil {
				return p, fmt.Errorf("path %q: field %d: loss: %w", s, field, err)
			}
			p.Loss = v / 100
		default:
			v, err := strconv.ParseFloat(f, 64)
			if err != nil {
				return p, fmt.Errorf("path %q: field %d: unknown option %q", s, field, f)
			}
			p.Loss = v
		}
	}
	if err := p.Validate(); err != nil {
		return p, fmt.Errorf("path %q: %w", s, err)
	}
	return p, nil
}

func parseRate(s string) (int64, error) {
	if s == "unlimited" || s == "0" {
		return 0, nil
	}
	m := rateRE.FindStringSubmatch(strings.ToLower(s))
	if m == nil {
		return 0, fmt.Errorf("rate %q: want e.g. 20mbit", s)
	}
	v, _ := strconv.ParseFloat(m[1], 64)
	mult := map[string]float64{"": 1, "bit": 1, "kbit": 1e3, "mbit": 1e6, "gbit": 1e9,
		"bps": 8, "kbps": 8e3, "mbps": 8e6, "gbps": 8e9}[m[2]]
	return int64(math.Round(v * mult)), nil
}

// Config describes one testbed instance.
type Config struct {
	// Name is the instance name, [a-z0-9-]{1,24}; "" generates one.
	Name  string   `json:"name"`
	PathA PathSpec `json:"path_a"`
	PathB PathSpec `json:"path_b"`
	// Tuning of the holder; nil = DefaultTuning().
	Tuning *Tuning `json:"tuning,omitempty"`
}

func (c Config) tuning() Tuning {
	if c.Tuning == nil {
		return DefaultTuning()
	}
	return *c.Tuning
}

// Standard is the study's operating point: A 20 Mbit/s 20 ms, B 20 Mbit/s 40 ms.
func Standard() Config {
	return Config{
		PathA: PathSpec{Rate: 20_000_000, RTT: 20 * time.Millisecond},
		PathB: PathSpec{Rate: 20_000_000, RTT: 40 * time.Millisecond},
	}
}

// maxHold bounds PathSpec.Hold (the emulator's hold line holds 64).
const maxHold = 16

// PVDistinct is Standard with path B's path validation slower than its
// data: the first two PATH_CHALLENGE-sized datagrams in each direction
// after B was idle (the client's PATH_CHALLENGEs, the server's
// PATH_RESPONSE and its own PATH_CHALLENGEs: ngtcp2 sends two at once)
// wait 100 ms more, beside the FIFO. The server's validation round trip
// is then about 130–140 ms against 40 ms for data, the client's about
// 240 ms (docs/testbed.md, "pv-distinct").
func PVDistinct() Config {
	c := Standard()
	c.PathB.Hold, c.PathB.HoldExtra = 2, 100*time.Millisecond
	return c
}

// LossyRate and LossySeed are the lossy scenario's path-B loss: 1 % of
// datagrams each way, drawn from a fixed seed (recorded in the manifest's
// path spec, "…,1%,seed=N").
const (
	LossyRate = 0.01
	LossySeed = 0x6d6967 // "mig"
)

// Lossy is Standard with random loss on path B, the path the client
// migrates to: 1 % of datagrams each way, seeded (docs/testbed.md,
// "lossy"). Loss cascades down to the floor after the migration are
// exercised, and the random drops are counted apart (loss_drops) from the
// emulator's lateness, so they never spoil a repetition's fidelity.
func Lossy() Config {
	c := Standard()
	c.PathB.Loss, c.PathB.LossSeed = LossyRate, LossySeed
	return c
}

// StepDown is the study's Phase 1 pair: B 20 Mbit/s 60 ms.
func StepDown() Config {
	c := Standard()
	c.PathB.RTT = 60 * time.Millisecond
	return c
}

var nameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,23}$`)

// ValidName reports whether name can be an instance name.
func ValidName(name string) error {
	if !nameRE.MatchString(name) {
		return fmt.Errorf("instance name %q: want 1-24 of [a-z0-9-], starting with a letter or digit", name)
	}
	return nil
}
