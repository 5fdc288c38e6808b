package discriminator

import (
	"fmt"
	"net"
	"net/netip"
	"sort"
	"strings"

	"github.com/migaudit/migaudit/parsers/timeline"
)

// pathValidationWindowUS is how far from an address change a
// PATH_CHALLENGE/PATH_RESPONSE may stand and still belong to it: path
// validation starts within one round trip of the first datagram on the new
// path, and no testbed round trip comes near a second.
const pathValidationWindowUS = 1_000_000

// DetectMigration finds the migration in a trace from the trace alone: the
// first datagram from (or to) a new address, and the path-validation
// exchange. It never guesses: a timeline without address or path-validation
// events yields Kind NoMigration.
func DetectMigration(tl *timeline.Timeline) Migration {
	var f migFinder
	for _, e := range sortedEvents(tl.Events) {
		f.add(e)
	}
	return f.result(len(tl.Events))
}

// migFinder is DetectMigration fed one event at a time, in time order, so
// that a stream is searched without being kept: it holds the first address
// change, the path-validation events and the first path-switch event.
type migFinder struct {
	peer, local string
	change      addrChange
	hasChange   bool
	pv          []timeline.Event
	pathSwitch  timeline.Event
	hasSwitch   bool
	norm        map[string]string // normalAddr memo: addresses repeat
}

func (f *migFinder) normal(a string) string {
	if a == "" {
		return ""
	}
	if v, ok := f.norm[a]; ok {
		return v
	}
	v := normalAddr(a)
	if f.norm == nil {
		f.norm = map[string]string{}
	}
	if len(f.norm) < 1024 {
		f.norm[a] = v
	}
	return v
}

func (f *migFinder) add(e timeline.Event) {
	switch e.Kind {
	case timeline.PathChallengeSent, timeline.PathChallengeReceived, timeline.PathResponseSent, timeline.PathResponseReceived:
		e.AckRanges = nil
		f.pv = append(f.pv, e)
	case timeline.PathEvent:
		if !f.hasSwitch && isPathSwitch(e.Detail) {
			f.pathSwitch, f.hasSwitch = e, true
		}
	}
	if !f.hasChange {
		f.change, f.hasChange = f.addressChange(e)
	}
}

// addressChange tracks the peer address (received From, sent To) and the
// local address (received To, sent From) and reports the first change of
// either. A server sees the peer move; a client sees itself move.
func (f *migFinder) addressChange(e timeline.Event) (addrChange, bool) {
	var p, l string
	switch e.Kind {
	case timeline.DatagramReceived, timeline.PacketReceived, timeline.PathChallengeReceived, timeline.PathResponseReceived:
		p, l = e.From, e.To
	case timeline.DatagramSent, timeline.PacketSent, timeline.PathChallengeSent, timeline.PathResponseSent:
		p, l = e.To, e.From
	case timeline.PathEvent:
		// Path events name the peer's address in From (msquic's
		// "New Remote IP"), the local one in To.
		p, l = e.From, e.To
	default:
		return addrChange{}, false
	}
	p, l = f.normal(p), f.normal(l)
	if p != "" {
		if f.peer == "" {
			f.peer = p
		} else if p != f.peer {
			dir := "first datagram from new peer address"
			if e.Kind == timeline.DatagramSent || e.Kind == timeline.PacketSent || e.Kind == timeline.PathChallengeSent || e.Kind == timeline.PathResponseSent {
				dir = "first datagram to new peer address"
			}
			if e.Kind == timeline.PathEvent {
				dir = "new peer address"
			}
			return addrChange{atUS: e.TimeUS, old: f.peer, new: p, what: dir, source: string(e.Kind) + detailSuffix(e)}, true
		}
	}
	if l != "" {
		if f.local == "" {
			f.local = l
		} else if l != f.local {
			return addrChange{atUS: e.TimeUS, old: f.local, new: l, what: "first datagram on new local address", source: string(e.Kind) + detailSuffix(e)}, true
		}
	}
	return addrChange{}, false
}

// result is the migration the events so far show; nEvents is how many
// there were (for the evidence when none is found).
func (f *migFinder) result(nEvents int) Migration {
	change, pv := f.change, f.pv
	if f.hasChange {
		m := Migration{
			Found:   true,
			AtUS:    change.atUS,
			OldAddr: change.old,
			NewAddr: change.new,
		}
		if sameIP(change.old, change.new) {
			m.Kind = PortRebind
		} else {
			m.Kind = IPMigration
		}
		ev := fmt.Sprintf("%s %s at %s (was %s; %s)", change.what, change.new, fmtMS(change.atUS), change.old, change.source)
		var near []timeline.Event
		for _, e := range pv {
			if abs64(e.TimeUS-change.atUS) <= pathValidationWindowUS {
				near = append(near, e)
			}
		}
		if len(near) > 0 {
			m.PathValidationAtUS = near[0].TimeUS
			if near[0].TimeUS < m.AtUS {
				m.AtUS = near[0].TimeUS
			}
			m.PathValidationRTTUS = pathValidationRTT(near)
			ev += fmt.Sprintf("; path validation %s at %s", near[0].Kind, fmtMS(near[0].TimeUS))
		} else {
			m.PathValidationAtUS = change.atUS
			ev += "; no path-validation frame logged near it"
		}
		m.Evidence = ev
		return m
	}

	if len(pv) > 0 {
		first := pv[0]
		var near []timeline.Event
		for _, e := range pv {
			if e.TimeUS-first.TimeUS <= pathValidationWindowUS {
				near = append(near, e)
			}
		}
		m := Migration{
			Found:               true,
			Kind:                PathChange,
			AtUS:                first.TimeUS,
			PathValidationAtUS:  first.TimeUS,
			PathValidationRTTUS: pathValidationRTT(near),
		}
		m.Evidence = fmt.Sprintf("path validation: %s at %s (%d path-validation frames within 1 s); the trace logs no addresses after the handshake, so IP migration and port-only rebinding cannot be told apart",
			first.Kind, fmtMS(first.TimeUS), len(near))
		return m
	}

	if f.hasSwitch {
		e := f.pathSwitch
		return Migration{
			Found:              true,
			Kind:               PathChange,
			AtUS:               e.TimeUS,
			PathValidationAtUS: e.TimeUS,
			Evidence:           fmt.Sprintf("implementation path event %q at %s; no addresses or path-validation frames logged", e.Detail, fmtMS(e.TimeUS)),
		}
	}

	return Migration{Kind: NoMigration, Evidence: noMigrationEvidence(nEvents)}
}

func noMigrationEvidence(nEvents int) string {
	if nEvents == 0 {
		return "no migration found: the timeline has no path or datagram events (give the instant with --migration-at)"
	}
	return fmt.Sprintf("no migration found: %d events, none from a new address and no PATH_CHALLENGE/PATH_RESPONSE", nEvents)
}

// isPathSwitch recognises implementations' own path-switch events.
func isPathSwitch(detail string) bool {
	d := strings.ToLower(detail)
	for _, k := range []string{"peermigrated", "peer_migrated", "set active", "migrat", "path switch"} {
		if strings.Contains(d, k) {
			return true
		}
	}
	return false
}

type addrChange struct {
	atUS     int64
	old, new string
	what     string // "first datagram from new peer address"
	source   string // which event carried it
}

func detailSuffix(e timeline.Event) string {
	if e.Detail == "" {
		return ""
	}
	return " " + e.Detail
}

// pathValidationRTT is the first PATH_CHALLENGE sent → its PATH_RESPONSE
// received: matched by data where logged, else the first response after the
// first challenge.
func pathValidationRTT(pv []timeline.Event) int64 {
	for i, c := range pv {
		if c.Kind != timeline.PathChallengeSent {
			continue
		}
		for _, r := range pv[i+1:] {
			if r.Kind != timeline.PathResponseReceived {
				continue
			}
			if c.Data != "" && r.Data != "" && c.Data != r.Data {
				continue
			}
			return r.TimeUS - c.TimeUS
		}
	}
	return 0
}

func sortedEvents(in []timeline.Event) []timeline.Event {
	if sort.SliceIsSorted(in, func(i, j int) bool { return in[i].TimeUS < in[j].TimeUS }) {
		return in
	}
	out := append([]timeline.Event(nil), in...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].TimeUS < out[j].TimeUS })
	return out
}

// normalAddr writes an address one way, so that a trace that spells the
// same address two ways (an IPv4-mapped IPv6 address) is not a migration.
func normalAddr(addr string) string {
	if addr == "" {
		return ""
	}
	h, port, err := net.SplitHostPort(addr)
	if err != nil {
		h, port = addr, ""
	}
	if ip, err := netip.ParseAddr(h); err == nil && ip.Zone() == "" {
		h = ip.Unmap().String()
	}
	if port == "" {
		return h
	}
	return net.JoinHostPort(h, port)
}

func hostOf(addr string) string {
	if h, _, err := net.SplitHostPort(addr); err == nil {
		return h
	}
	return addr
}

func sameIP(a, b string) bool { return hostOf(a) == hostOf(b) }

func abs64(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}

// fmtMS prints µs as milliseconds with three decimals: "5027.923 ms".
func fmtMS(us int64) string {
	return fmt.Sprintf("%.3f ms", float64(us)/1000)
}
