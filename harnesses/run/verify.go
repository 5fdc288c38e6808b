package run

import (
	"fmt"
	"net"
	"strings"

	"github.com/migaudit/migaudit/discriminator"
)

// Verification says whether a repetition is what its scenario claims.
type Verification struct {
	Valid bool `json:"valid"`
	// Claimed is "ip" (the client's IP address changes) or "port-only".
	Claimed string `json:"claimed"`
	// Evidence lists what was checked and found; Problems what failed.
	Evidence []string `json:"evidence"`
	Problems []string `json:"problems,omitempty"`
}

// Minimum packets each direction of path B must carry for an IP migration
// to count as having moved the transfer there, and the most it may carry
// in a port-only rebinding.
const (
	minMovedPackets    = 50
	maxPortOnlyPackets = 5
)

// Verify checks a repetition: the client's own report of where it moved,
// and the server's side — its view of the peer address (ServerSaw), the
// addresses in its trace, and the testbed's per-path packet counters. An IP
// migration needs the client's report of the path-B address and at least
// one server-side confirmation with none contradicting; a port rebinding
// needs a new port on the path-A address and path B left idle.
func Verify(sc Scenario, netw Net, res RepResult, before, after map[Path]PathCounter, an *discriminator.Analysis) Verification {
	v := Verification{Claimed: "ip"}
	if !sc.IsIPMigration() {
		v.Claimed = "port-only"
	}
	hostA, hostB := netw.ClientAddr(PathA).String(), netw.ClientAddr(PathB).String()
	problem := func(f string, a ...any) { v.Problems = append(v.Problems, fmt.Sprintf(f, a...)) }
	ok := func(f string, a ...any) { v.Evidence = append(v.Evidence, fmt.Sprintf(f, a...)) }

	// Client side.
	var toB, toAafterB, toA []AddrChange
	for _, m := range res.Moves {
		switch host(m.To) {
		case hostB:
			toB = append(toB, m)
		case hostA:
			if len(toB) > 0 {
				toAafterB = append(toAafterB, m)
			} else {
				toA = append(toA, m)
			}
		}
	}
	switch {
	case len(res.Moves) == 0:
		problem("the client reported no change of address")
	case sc.IsIPMigration() && len(toB) == 0:
		problem("client moved to %s, not to the path-B address %s (a port-only change proves nothing)", res.Moves[0].To, hostB)
	case sc.IsIPMigration():
		ok("client: %s", toB[0].Evidence)
	case len(toB) > 0:
		problem("port-rebind: client moved to the path-B address (%s)", toB[0].To)
	case len(toA) > 0:
		m := toA[0]
		if m.From != "" && m.From == m.To {
			problem("port-rebind: client's address did not change (%s)", m.To)
		} else {
			ok("client: %s", m.Evidence)
		}
	}
	if sc == MigrateBack {
		if len(toAafterB) == 0 {
			problem("migrate-back: the client never returned to the path-A address %s", hostA)
		} else {
			ok("client returned: %s", toAafterB[0].Evidence)
		}
	}

	// Server side.
	confirmations := 0
	if len(res.ServerSaw) > 0 {
		var sawB, sawA bool
		for _, s := range res.ServerSaw {
			sawB = sawB || host(s.To) == hostB
			sawA = sawA || (host(s.To) == hostA && s.From != s.To)
		}
		switch {
		case sc.IsIPMigration() && sawB:
			confirmations++
			ok("server: %s", firstTo(res.ServerSaw, hostB).Evidence)
		case sc.IsIPMigration():
			problem("server saw the client's address change only to %s, never to %s", res.ServerSaw[len(res.ServerSaw)-1].To, hostB)
		case sawB:
			problem("port-rebind: server saw the client at the path-B address")
		case sawA:
			confirmations++
			ok("server: %s", firstTo(res.ServerSaw, hostA).Evidence)
		}
	}
	if an != nil && an.Migration.Found && an.Migration.NewAddr != "" {
		nh := host(an.Migration.NewAddr)
		switch {
		case sc.IsIPMigration() && nh == hostB:
			confirmations++
			ok("server trace: %s → %s (%s)", an.Migration.OldAddr, an.Migration.NewAddr, an.Migration.Evidence)
		case sc.IsIPMigration():
			problem("server trace shows the client moving to %s, not %s", an.Migration.NewAddr, hostB)
		case nh == hostB:
			problem("port-rebind: server trace shows the client at the path-B address %s", an.Migration.NewAddr)
		case nh == hostA:
			confirmations++
			ok("server trace: %s → %s", an.Migration.OldAddr, an.Migration.NewAddr)
		}
	}
	if before != nil && after != nil {
		dA, dB := delta(before[PathA], after[PathA]), delta(before[PathB], after[PathB])
		desc := fmt.Sprintf("path counters during the rep: A %d up / %d down, B %d up / %d down packets",
			dA.ToServerPackets, dA.FromServerPackets, dB.ToServerPackets, dB.FromServerPackets)
		switch {
		case sc.IsIPMigration() && dB.ToServerPackets >= minMovedPackets && dB.FromServerPackets >= minMovedPackets:
			confirmations++
			ok("%s", desc)
		case sc.IsIPMigration():
			problem("%s: path B carried too little (< %d each way) for the transfer to have moved there", desc, minMovedPackets)
		case dB.ToServerPackets <= maxPortOnlyPackets && dB.FromServerPackets <= maxPortOnlyPackets:
			confirmations++
			ok("%s: path B idle, the IP did not change", desc)
		default:
			problem("%s: port-rebind but path B carried traffic", desc)
		}
	}
	if confirmations == 0 {
		problem("no server-side evidence (server address view, trace addresses or path counters) of the client's move")
	}
	v.Valid = len(v.Problems) == 0
	return v
}

func firstTo(cs []AddrChange, h string) AddrChange {
	for _, c := range cs {
		if host(c.To) == h {
			return c
		}
	}
	return AddrChange{}
}

func delta(a, b PathCounter) PathCounter {
	return PathCounter{
		ToServerPackets: b.ToServerPackets - a.ToServerPackets, ToServerBytes: b.ToServerBytes - a.ToServerBytes,
		FromServerPackets: b.FromServerPackets - a.FromServerPackets, FromServerBytes: b.FromServerBytes - a.FromServerBytes,
	}
}

// host returns the IP of "ip:port", "[ip]:port" or a bare IP.
func host(addr string) string {
	if h, _, err := net.SplitHostPort(addr); err == nil {
		return h
	}
	return strings.Trim(addr, "[]")
}
