package msquiclog

import (
	"fmt"
	"sort"
)

// Summary is what one endpoint's log says about its RTT estimator across
// the first change of its active path.
type Summary struct {
	Server bool
	// Switch is the first PATH_ACTIVE that replaced Paths[0] by another
	// path (PrevPathID ≥ 0); nil when the active path never changed.
	Switch *Active
	// Before / After count the RTT_GATE lines (ACK frames that acknowledged
	// packets) before and from the switch (all of them when Switch is nil).
	Before, After GateCounts
	// FirstSentOnNew is the first SENT line on the new active path after the
	// switch: its packet number and the PathId stamped in its metadata.
	FirstSentOnNew *SentChange
	// LastUpdateUS is the CLOCK_REALTIME of the last gate that ran
	// QuicConnUpdateRtt (0: none).
	LastUpdateUS int64
	// EndUS is the time of the last line.
	EndUS int64
}

// GateCounts are counts over a set of RTT_GATE lines.
type GateCounts struct {
	Gates int // ACK frames that acknowledged packets
	// Eligible: a new largest acknowledged packet that is ack-eliciting
	// (NewLargestAckRetransmittable), the RTT sample RFC 9002 §5.1 takes.
	Eligible int
	// DifferentPath: of Eligible, how many had NewLargestAckDifferentPath.
	DifferentPath int
	// Updates: QuicConnUpdateRtt ran.
	Updates int
	// AckPathIDs / LargestPathIDs: the receiving path's ID and the largest
	// newly acknowledged packet's recorded PathId, over Eligible gates.
	AckPathIDs     map[int64]int
	LargestPathIDs map[int64]int
	// FirstUS / LastUS bound the gates; LastSRTTUS is the smoothed RTT the
	// last gate left; LargestPNs the range of largest acknowledged packet
	// numbers over Eligible gates.
	FirstUS, LastUS            int64
	LastSRTTUS                 int64
	MinLargestPN, MaxLargestPN int64
}

func (c *GateCounts) add(g Gate) {
	if c.Gates == 0 {
		c.FirstUS = g.UnixUS
		c.AckPathIDs, c.LargestPathIDs = map[int64]int{}, map[int64]int{}
		c.MinLargestPN = -1
	}
	c.Gates++
	c.LastUS, c.LastSRTTUS = g.UnixUS, g.SRTTUS
	if g.Update {
		c.Updates++
	}
	if !g.NewLargest || !g.Retransmittable {
		return
	}
	c.Eligible++
	if g.DifferentPath {
		c.DifferentPath++
	}
	c.AckPathIDs[g.AckPathID]++
	c.LargestPathIDs[g.LargestPathID]++
	if c.MinLargestPN < 0 || g.LargestPN < c.MinLargestPN {
		c.MinLargestPN = g.LargestPN
	}
	c.MaxLargestPN = max(c.MaxLargestPN, g.LargestPN)
}

// Summarize reads the log's events of one role (server true or false).
func Summarize(l *Log, server bool) Summary {
	s := Summary{Server: server}
	for i := range l.Active {
		a := l.Active[i]
		if a.Server == server && a.PrevPathID >= 0 {
			s.Switch = &a
			break
		}
	}
	for _, g := range l.Gates {
		if g.Server != server {
			continue
		}
		if s.Switch != nil && g.UnixUS >= s.Switch.UnixUS {
			s.After.add(g)
		} else {
			s.Before.add(g)
		}
		if g.Update {
			s.LastUpdateUS = g.UnixUS
		}
	}
	if s.Switch != nil {
		for i := range l.Sent {
			x := l.Sent[i]
			if x.Server == server && x.UnixUS >= s.Switch.UnixUS && x.SendPathID == s.Switch.PathID {
				s.FirstSentOnNew = &x
				break
			}
		}
	}
	if n := len(l.Events); n > 0 {
		s.EndUS = l.Events[n-1].UnixUS
	}
	return s
}

// IDs renders a path-ID histogram as "0 ×812, 1 ×3" in ID order.
func IDs(m map[int64]int) string {
	if len(m) == 0 {
		return "none"
	}
	ids := make([]int64, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	out := ""
	for i, id := range ids {
		if i > 0 {
			out += ", "
		}
		out += fmt.Sprintf("%d ×%d", id, m[id])
	}
	return out
}

// Congestion is what CUBIC's loss events did in a span of time.
type Congestion struct {
	// Events are new congestion events (the window was cut); Lowest is the
	// smallest window they left (0: none).
	Events int
	Lowest int64
	// LowestAtUS is when an event first left the Lowest window.
	LowestAtUS int64
	// OffPath counts the events whose largest lost packet was sent to
	// another peer address than remote (the new active path's): losses of
	// packets sent on the old path cutting the new path's window.
	OffPath int
	// Persistent counts events msquic declared persistent congestion.
	Persistent int
}

// CongestionAfter summarises the role's loss events in [fromUS,
// fromUS+spanUS); remote is the peer address of the path the window belongs
// to ("" counts no OffPath).
func CongestionAfter(l *Log, server bool, fromUS, spanUS int64, remote string) Congestion {
	var c Congestion
	for _, x := range l.Losses {
		if x.Server != server || !x.CongestionEvent || x.UnixUS < fromUS || x.UnixUS >= fromUS+spanUS {
			continue
		}
		c.Events++
		if c.Lowest == 0 || x.CwndAfter < c.Lowest {
			c.Lowest, c.LowestAtUS = x.CwndAfter, x.UnixUS
		}
		if x.Persistent {
			c.Persistent++
		}
		if s := l.SentAs(server, x.LargestLostPN); remote != "" && s != nil && s.Remote != remote {
			c.OffPath++
		}
	}
	return c
}

// SentAs returns the SENT line in force for packet number pn: the last one
// of the role at or before pn (SENT lines mark where the sending path, the
// stamped PathId or the peer address changed; msquic numbers the packets of
// every space from one counter, so they are in packet-number order). nil
// when pn precedes every SENT line.
func (l *Log) SentAs(server bool, pn int64) *SentChange {
	var out *SentChange
	for i := range l.Sent {
		x := &l.Sent[i]
		if x.Server != server {
			continue
		}
		if x.PN > pn {
			break
		}
		out = x
	}
	return out
}

// OffPathSends counts the runs of packets the role sent to another peer
// address than remote from fromUS on (each SENT line starts a run: after
// the server's switch these are its probes of the client's abandoned
// address) and the time of the last one (0: none).
func OffPathSends(l *Log, server bool, fromUS int64, remote string) (runs int, lastUS int64) {
	for _, x := range l.Sent {
		if x.Server == server && x.UnixUS >= fromUS && x.Remote != remote {
			runs++
			lastUS = x.UnixUS
		}
	}
	return runs, lastUS
}
