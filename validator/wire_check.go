package validator

// Wire claims: "the RTT sample taken at t came from the ACK of packet N,
// sent on path X", re-derived from the repetition's capture and key log
// with the validator's own decoder (docs/validator-decisions.md, "Wire
// claims").

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/tidwall/gjson"
)

// WireClaim is the smallest claim the wire settles: the RTT sample taken
// at AtUnixNS (RTTUS long) came from the ACK of packet Packet, sent by
// Sender ("server", the default, or "client"), which crossed Path.
// AtUnixNS and RTTUS are optional (0).
type WireClaim struct {
	Packet   int64  `json:"packet"`
	Path     string `json:"path"`
	AtUnixNS int64  `json:"at_unix_ns,omitempty"`
	RTTUS    int64  `json:"rtt_us,omitempty"`
	Sender   string `json:"sender,omitempty"`
	// perPacket: the repetition's own trace shows the sender taking an RTT
	// sample for each packet an ACK newly acknowledges, not only for its
	// largest (xquic): set by the validator from the trace (perPacketSample),
	// never read from the survey.
	perPacket bool
}

// The files of a repetition's wire evidence (the capture contract).
const (
	WireCaptureFile = "wire.pcapng.gz"
	WireKeyLogFile  = "keylog.txt"
)

// Tolerances of the wire's timing against an endpoint's, set from the
// quic-go fixture (TestWireClaimsOfTheFixtureQlog logs the figures).
const (
	// A claim's time is in the capture's clock (unix ns); a sample may
	// seem to precede its ACK's arrival by this much (on the fixture it
	// follows it by 15 µs to 1.8 ms, median 46 µs). The time does not
	// pick the ACK: an endpoint that falls behind reads several ACKs
	// late, after later ones have arrived, so "the last ACK before the
	// sample" is not a rule (it refused 2 of the fixture's true claims).
	wireClockSlackNS = 500_000
	// A sample taken later than this after its ACK arrived is not that
	// ACK's: endpoints act on an ACK as they read it (host stalls
	// included, cf. the fidelity record's stall bound).
	wireSampleAfterAckMaxNS = 20_000_000
	// latest_rtt against ACK arrival minus the packet's entry into the
	// link: the endpoint's own send and receive paths and the relay's
	// scheduling add to one and not the other.
	wireRTTAbsTolNS = 2_500_000
	wireRTTRelTol   = 0.05
)

func init() {
	perImplChecks = append(perImplChecks, check{"wire", checkWireClaims, "live.repetitions.#.wire_claims"})
}

// wireMaps caches decoded captures by file identity: the mutation tests
// check many variants of one survey against the same evidence.
var wireMaps sync.Map // key string → wireMapEntry

type wireMapEntry struct {
	m   *WireMap
	err error
}

// errNoWire marks evidence that is absent (UNVERIFIABLE), not wrong.
var errNoWire = errors.New("no wire evidence")

// loadWire reads a repetition directory's capture and key log.
func loadWire(dir string) (*WireMap, error) { return loadWireBy(dir, fileDigest, &wireMaps) }

// wire is loadWire with the files' digests memoised by the validator (a
// capture is hashed once per validation, not once per claim) and the
// decoded captures kept by the validator, so that a validation can drop
// an implementation's once it is checked (dropWire).
func (v *Validator) wire(dir string) (*WireMap, error) { return loadWireBy(dir, v.fileSHA, v.wires) }

// dropWire forgets the decoded capture of a repetition directory.
func (v *Validator) dropWire(dir string) {
	if key, err := wireKey(dir, v.fileSHA); err == nil {
		v.wires.Delete(key)
	}
}

// checkWireClaim is CheckWireClaim through v.wire.
func (v *Validator) checkWireClaim(repDir string, c WireClaim) (Status, string) {
	return judgeLoaded(v.wire(repDir))(c)
}

func fileDigest(p string) (string, error) {
	b, err := os.ReadFile(p)
	if err != nil {
		return "", err
	}
	return shaHexOf(b), nil
}

// wireKey identifies a repetition's capture and key log by content: the
// planted-fault tests copy the evidence into many shadow trees, and
// decoding a capture costs far more than hashing it.
func wireKey(dir string, digest func(string) (string, error)) (string, error) {
	capPath, klPath := filepath.Join(dir, WireCaptureFile), filepath.Join(dir, WireKeyLogFile)
	ci, err := os.Stat(capPath)
	if err != nil {
		return "", fmt.Errorf("%w: no capture %s", errNoWire, capPath)
	}
	ki, err := os.Stat(klPath)
	if err != nil {
		return "", fmt.Errorf("%w: no key log %s, so the 1-RTT packet numbers stay header-protected", errNoWire, klPath)
	}
	key := fmt.Sprintf("%d|%d", ci.Size(), ki.Size())
	for _, p := range []string{capPath, klPath} {
		h, err := digest(p)
		if err != nil {
			return "", err
		}
		key += "|" + h
	}
	return key, nil
}

func loadWireBy(dir string, digest func(string) (string, error), cache *sync.Map) (*WireMap, error) {
	key, err := wireKey(dir, digest)
	if err != nil {
		return nil, err
	}
	if e, ok := cache.Load(key); ok {
		return e.(wireMapEntry).m, e.(wireMapEntry).err
	}
	m, err := ReadWire(filepath.Join(dir, WireCaptureFile), filepath.Join(dir, WireKeyLogFile))
	cache.Store(key, wireMapEntry{m, err})
	return m, err
}

// wireDir is the repetition directory holding a trace's wire evidence:
// the trace's own, or the one above it for a trace kept in a
// subdirectory of its repetition (ngtcp2's, picoquic's qlog-server/).
func wireDir(trace string) string {
	dir := filepath.Dir(trace)
	if _, err := os.Stat(filepath.Join(dir, WireCaptureFile)); err != nil {
		if up := filepath.Dir(dir); up != dir {
			if _, err := os.Stat(filepath.Join(up, WireCaptureFile)); err == nil {
				return up
			}
		}
	}
	return dir
}

// CheckWireClaim re-derives a claim from the wire evidence in repDir
// (wire.pcapng.gz and keylog.txt).
func CheckWireClaim(repDir string, c WireClaim) (Status, string) {
	return judgeLoaded(loadWire(repDir))(c)
}

func judgeLoaded(m *WireMap, err error) func(WireClaim) (Status, string) {
	return func(c WireClaim) (Status, string) {
		if errors.Is(err, errNoWire) {
			return Unverifiable, err.Error()
		}
		if err != nil {
			return Fail, err.Error()
		}
		return judgeWireClaim(m, c)
	}
}

// judgeWireClaim: packet N (of the sender) crossed the stated path and
// was delivered; an ACK covering it reached the sender, and the first
// such ACK (the only one that can newly acknowledge N) has N as its
// largest, which is what makes its RTT sample N's (RFC 9002 §5.1); the
// stated time and value fit that ACK.
func judgeWireClaim(m *WireMap, c WireClaim) (Status, string) {
	var d verdict
	out, back, sender, peer := 1, 0, "server", "client"
	switch c.Sender {
	case "", "server":
	case "client":
		out, back, sender, peer = 0, 1, "client", "server"
	default:
		d.fail("sender %q: want server or client", c.Sender)
		return d.result()
	}
	id := fmt.Sprintf("packet %d", c.Packet)
	if sender == "client" {
		id = "client packet " + fmt.Sprint(c.Packet)
	}
	ss := m.Sent[out][c.Packet]
	if len(ss) == 0 {
		d.fail("no %s→%s packet %d in %s (%d decoded that way)", sender, peer, c.Packet, m.Capture, len(m.Sent[out]))
		return d.result()
	}
	p := ss[0]
	for _, o := range ss[1:] {
		if o.Path != p.Path {
			d.fail("%s crossed %s (record %d) and again %s (record %d)", id, p.Path, p.Record, o.Path, o.Record)
		}
	}
	if p.Path != c.Path {
		d.fail("%s crossed %s on the wire (record %d, %s), not %s", id, p.Path, p.Record, m.at(p.WireNS), c.Path)
	} else {
		d.note("%s crossed %s (record %d, %s)", id, p.Path, p.Record, m.at(p.WireNS))
	}
	if !p.Delivered() {
		d.fail("%s was dropped on %s (fate=%s, record %d): nothing could acknowledge it", id, p.Path, p.Fate, p.Record)
		return d.result()
	}
	ack, ok := m.firstAckOf(back, c.Packet)
	if !ok {
		if n := len(m.Unread[back]) + m.Cut[back]; n > 0 {
			d.unverifiable("no ACK read covers %s, but %d %s→%s packets were not fully read", id, n, peer, sender)
		} else {
			d.fail("no ACK covering %s reached the %s", id, sender)
		}
		return d.result()
	}
	what := fmt.Sprintf("the first ACK covering it (in %s packet %d, record %d, %s, arrived %s)", peer, ack.Carrier, ack.Record, ack.Path, m.at(ack.WireNS))
	if n := m.unreadBetween(back, p.ArrNS, ack.WireNS); n > 0 {
		d.unverifiable("%d %s→%s packets before %s were not fully read: an earlier ACK may hide there", n, peer, sender, what)
	}
	if ack.Largest() != c.Packet && c.perPacket {
		d.note("%s acknowledges up to %d, and the trace samples each packet it newly acknowledges: %d's ACK line is followed by its sample", what, ack.Largest(), c.Packet)
	} else if ack.Largest() != c.Packet {
		d.fail("%s acknowledges up to %d: its RTT sample is of %d, not of %d", what, ack.Largest(), ack.Largest(), c.Packet)
	} else {
		d.note("%s has it as largest", what)
	}
	if c.AtUnixNS != 0 {
		switch lag := c.AtUnixNS - ack.WireNS; {
		case lag < -wireClockSlackNS:
			d.fail("the sample at %s precedes that ACK's arrival by %.3f ms", m.at(c.AtUnixNS), float64(-lag)/1e6)
		case lag > wireSampleAfterAckMaxNS:
			d.fail("the sample at %s is %.3f ms after that ACK arrived: not its sample", m.at(c.AtUnixNS), float64(lag)/1e6)
		default:
			d.note("sample %.3f ms after the ACK", float64(lag)/1e6)
		}
	}
	if c.RTTUS != 0 {
		if p.ArrNS == 0 {
			d.unverifiable("the capture does not say when %s entered the link (no arr=)", id)
		} else {
			wire := ack.WireNS - p.ArrNS
			diff := wire - c.RTTUS*1000
			tol := max(wireRTTAbsTolNS, int64(wireRTTRelTol*float64(wire)))
			if diff > tol || diff < -tol {
				d.fail("RTT %.3f ms claimed, the wire gives %.3f ms (ACK arrival − %s entering the link)", float64(c.RTTUS)/1e3, float64(wire)/1e6, id)
			} else {
				d.note("RTT %.3f ms, wire %.3f ms", float64(c.RTTUS)/1e3, float64(wire)/1e6)
			}
		}
	}
	return d.result()
}

// firstAckOf is the first delivered ACK sent in direction dir (0
// client→server, 1 server→client) covering pn.
func (m *WireMap) firstAckOf(dir int, pn int64) (WireAck, bool) {
	for _, a := range m.Acks[dir] { // sorted by arrival
		if a.Delivered() && a.Covers(pn) {
			return a, true
		}
	}
	return WireAck{}, false
}

// unreadBetween counts delivered packets sent in direction dir arriving
// in (from, to) whose frames were not read.
func (m *WireMap) unreadBetween(dir int, from, to int64) int {
	unread := map[int]bool{}
	for _, r := range m.Unread[dir] {
		unread[r] = true
	}
	n := 0
	for _, ss := range m.Sent[dir] {
		for _, s := range ss {
			if s.Delivered() && s.WireNS > from && s.WireNS < to && (!s.Opened || unread[s.Record]) {
				n++
			}
		}
	}
	return n
}

// at formats a wire time relative to the capture's first record.
func (m *WireMap) at(ns int64) string {
	return fmt.Sprintf("+%.3f ms", float64(ns-m.FirstNS)/1e6)
}

// checkWireClaims re-derives every repetition's wire_claims from the wire
// evidence beside its trace; wire_sha256, when given, must be the
// capture's.
func checkWireClaims(v *Validator, doc, im gjson.Result) (Status, string) {
	var d verdict
	origin := im.Get("live.origin").String()
	for _, rep := range im.Get("live.repetitions").Array() {
		claims := rep.Get("wire_claims").Array()
		if len(claims) == 0 {
			continue
		}
		rid := rep.Get("id").String()
		trace, err := v.resolve(origin, rep.Get("trace").String())
		if err != nil {
			d.fail("%s: %v", rid, err)
			continue
		}
		dir := wireDir(trace)
		if c := rep.Get("wire.capture").String(); c != "" {
			// The repetition's capture, which may sit above its trace
			// (picoquic's qlog-server/).
			p, err := v.resolve(origin, c)
			if err != nil {
				d.fail("%s: wire.capture: %v", rid, err)
				continue
			}
			dir = filepath.Dir(p)
		}
		if want := rep.Get("wire_sha256").String(); want != "" {
			got, err := v.fileSHA(filepath.Join(dir, WireCaptureFile))
			switch {
			case err != nil:
				d.unverifiable("%s: %v", rid, err)
			case got != want:
				d.fail("%s: %s has sha256 %s, the survey says %s", rid, WireCaptureFile, got, want)
			}
		}
		for i, cl := range claims {
			var c WireClaim
			if err := json.Unmarshal([]byte(cl.Raw), &c); err != nil {
				d.fail("%s: wire_claims[%d]: %v", rid, i, err)
				continue
			}
			c.perPacket = v.perPacketSample(im, rep, c.Packet)
			st, found := v.checkWireClaim(dir, c)
			msg := fmt.Sprintf("%s: %s", rid, found)
			switch st {
			case Fail:
				d.fail("%s", msg)
			case Unverifiable:
				d.unverifiable("%s", msg)
			default:
				d.note("%s", strings.TrimSpace(msg))
			}
		}
	}
	return d.result()
}

// perPacketSample: the repetition's trace logs an acknowledgement of packet
// pn by itself (one line per packet newly acknowledged, as xquic's
// on_ack_received) and an RTT sample right after it, before the next
// acknowledgement: the sender samples per packet, so pn's sample need not
// come from an ACK whose largest is pn.
func (v *Validator) perPacketSample(im, rep gjson.Result, pn int64) bool {
	f, err := v.repTrace(im, rep)
	if err != nil {
		return false
	}
	return samplesPerPacket(f, pn)
}

// samplesPerPacket: f acknowledges pn by itself and logs an RTT sample
// after that line and before the next acknowledgement.
func samplesPerPacket(f *traceFacts, pn int64) bool {
	for i, a := range f.Acks {
		if a.Largest != pn {
			continue
		}
		next := int64(math.MaxInt64)
		if i+1 < len(f.Acks) {
			next = f.Acks[i+1].T
		}
		for _, s := range f.Samples {
			if s.T >= a.T && s.T <= next && s.Latest >= 0 {
				return true
			}
			if s.T > next {
				break
			}
		}
		return false
	}
	return false
}
