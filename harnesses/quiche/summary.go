package quiche

import (
	"bufio"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/migaudit/migaudit/harnesses/run"
)

// CSVHeader is the exact header of the timeline CSV harness.js writes.
const CSVHeader = "time_us,path_id,local,peer,active,cwnd,bytes_in_flight,smoothed_rtt,min_rtt,latest_rtt"

// Row is one timeline row: one path at one 5 ms sample.
type Row struct {
	TimeUS        int64
	PathID        int
	Local, Peer   string
	Active        bool
	Cwnd          int64
	SmoothedRTTUS int64
}

// Meta is what harness.js writes to <base>.meta.json (the fields Go reads).
type Meta struct {
	Role              string      `json:"role"`
	ReferenceUnixUS   int64       `json:"reference_unix_us"`
	BindingVersion    string      `json:"binding_version"`
	QuicheVersion     string      `json:"quiche_version"`
	Rows              int         `json:"rows"`
	Events            int         `json:"events"`
	FinalPathStats    []FinalPath `json:"final_path_stats"`
	Moves             []Move      `json:"moves"`
	BodyBytesReceived int64       `json:"body_bytes_received"`
	BodyComplete      bool        `json:"body_complete"`
}

// FinalPath is a path's last pathStats() record.
type FinalPath struct {
	PathID    int    `json:"path_id"`
	Local     string `json:"local"`
	Peer      string `json:"peer"`
	Active    bool   `json:"active"`
	Sent      int64  `json:"sent"`
	Lost      int64  `json:"lost"`
	RTTMS     int64  `json:"rtt_ms"`
	Cwnd      int64  `json:"cwnd"`
	SentBytes int64  `json:"sent_bytes"`
	RecvBytes int64  `json:"recv_bytes"`
	LostBytes int64  `json:"lost_bytes"`
	PMTU      int64  `json:"pmtu"`
}

// Move is a client-side address change the client harness made.
type Move struct {
	TimeUS   int64  `json:"time_us"`
	UnixUS   int64  `json:"unix_us"`
	From     string `json:"from"`
	To       string `json:"to"`
	Evidence string `json:"evidence"`
}

// Event is one line of <base>.events.jsonl.
type Event struct {
	TimeUS int64  `json:"time_us"`
	Event  string `json:"event"`
	What   string `json:"what,omitempty"`
	Local  string `json:"local,omitempty"`
	Peer   string `json:"peer,omitempty"`
}

// ReadMeta reads a meta file.
func ReadMeta(path string) (Meta, error) {
	var m Meta
	b, err := os.ReadFile(path)
	if err != nil {
		return m, err
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return m, fmt.Errorf("%s: %w", path, err)
	}
	return m, nil
}

// ReadEvents reads an events file.
func ReadEvents(path string) ([]Event, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []Event
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	var off int64
	for n := 1; sc.Scan(); n++ {
		line := sc.Bytes()
		var e Event
		if err := json.Unmarshal(line, &e); err != nil {
			return nil, fmt.Errorf("%s: line %d at byte %d: %w", path, n, off, err)
		}
		off += int64(len(line)) + 1
		out = append(out, e)
	}
	return out, sc.Err()
}

// ReadCSV reads a timeline CSV written by harness.js; when path does not
// exist but path+".gz" does (the runner compresses traces in place), it
// reads that.
func ReadCSV(path string) ([]Row, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		if g, gerr := os.Open(path + ".gz"); gerr == nil {
			f, err, path = g, nil, path+".gz"
		}
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var r io.Reader = f
	if strings.HasSuffix(path, ".gz") {
		zr, err := gzip.NewReader(f)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		defer zr.Close()
		r = zr
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	var rows []Row
	var off int64
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		at := off
		off += int64(len(line)) + 1
		if n == 1 {
			if line != CSVHeader {
				return nil, fmt.Errorf("%s: line 1: header %q, want %q", path, line, CSVHeader)
			}
			continue
		}
		c := strings.Split(line, ",")
		if len(c) != 10 {
			return nil, fmt.Errorf("%s: line %d at byte %d: %d columns, want 10", path, n, at, len(c))
		}
		var r Row
		var perr error
		num := func(s, name string) int64 {
			v, err := strconv.ParseInt(s, 10, 64)
			if err != nil && perr == nil {
				perr = fmt.Errorf("%s: line %d at byte %d: %s %q: %w", path, n, at, name, s, err)
			}
			return v
		}
		r.TimeUS = num(c[0], "time_us")
		r.PathID = int(num(c[1], "path_id"))
		r.Local, r.Peer = c[2], c[3]
		r.Active = c[4] == "1"
		r.Cwnd = num(c[5], "cwnd")
		r.SmoothedRTTUS = num(c[7], "smoothed_rtt")
		if perr != nil {
			return nil, perr
		}
		rows = append(rows, r)
	}
	return rows, sc.Err()
}

// ServerSaw turns the server's PeerMigrated events into address changes.
// The first peer is the one the server accepted the connection from.
func ServerSaw(evs []Event, refUnixUS int64) []run.AddrChange {
	var out []run.AddrChange
	peer := ""
	for _, e := range evs {
		switch {
		case e.Event == "harness" && e.What == "accepted":
			peer = e.Peer
		case e.Event == "PeerMigrated" && e.Peer != peer:
			out = append(out, run.AddrChange{
				At: unixUS(refUnixUS + e.TimeUS), From: peer, To: e.Peer,
				Evidence: fmt.Sprintf("quiche server PathEvent::PeerMigrated(%s, %s) at %d µs", e.Local, e.Peer, e.TimeUS),
			})
			peer = e.Peer
		}
	}
	return out
}

// PathFigures are one path's measured figures.
type PathFigures struct {
	PathID int    `json:"path_id"`
	Local  string `json:"local"`
	Peer   string `json:"peer"`
	Rows   int    `json:"rows"`
	// FirstUS / FirstCwnd / FirstRTTUS: the first sample of the path,
	// i.e. the state quiche created it with.
	FirstUS    int64 `json:"first_us"`
	FirstCwnd  int64 `json:"first_cwnd"`
	FirstRTTUS int64 `json:"first_rtt_us"`
	// ActiveFromUS is the first sample with active=1 (-1: never active).
	ActiveFromUS     int64 `json:"active_from_us"`
	CwndAtActivation int64 `json:"cwnd_at_activation"`
	PeakCwnd         int64 `json:"peak_cwnd"`
	LastCwnd         int64 `json:"last_cwnd"`
	LastRTTUS        int64 `json:"last_rtt_us"`
}

// MigrationFigures are the figures around one change of active path.
type MigrationFigures struct {
	AtUS     int64  `json:"at_us"`
	Evidence string `json:"evidence"`
	OldPath  int    `json:"old_path"`
	NewPath  int    `json:"new_path"`
	OldAddr  string `json:"old_addr"`
	NewAddr  string `json:"new_addr"`
	// IPChanged: the peer (server side) or local (client side) IP differs.
	IPChanged bool `json:"ip_changed"`
	// NewPathFresh: the new path was first seen at or after the probe that
	// led to this migration (false when an existing path object is reused).
	NewPathFresh bool `json:"new_path_fresh"`
	// Old path, last sample before the migration and peak before it.
	OldCwndBefore   int64 `json:"old_cwnd_before"`
	OldPeakBefore   int64 `json:"old_peak_cwnd_before"`
	OldRTTBeforeUS  int64 `json:"old_rtt_before_us"`
	NewCwndFirst    int64 `json:"new_cwnd_first"`
	NewCwndAtSwitch int64 `json:"new_cwnd_at_switch"`
	NewRTTAtSwitch  int64 `json:"new_rtt_at_switch_us"`
	// NewFirstMeasuredRTTUS is the new path's first smoothed RTT, after the
	// switch, that differs from the value the path was created with.
	NewFirstMeasuredRTTUS int64 `json:"new_first_measured_rtt_us"`
	// NewMinRTTAfterUS / NewMedianRTTAfterUS: over the new path's samples
	// in the 2 s after its first measured RTT.
	NewMinRTTAfterUS    int64 `json:"new_min_rtt_after_us"`
	NewMedianRTTAfterUS int64 `json:"new_median_rtt_after_us"`
	// NewMinRTTUS is the new path's lowest measured smoothed RTT from the
	// switch to the end (or the next migration); OldMinRTTBeforeUS the old
	// path's lowest smoothed RTT before the switch (its default excluded).
	// Smoothed RTTs include queueing, so the minimum is what identifies
	// the network a path runs over.
	NewMinRTTUS       int64 `json:"new_min_rtt_us"`
	OldMinRTTBeforeUS int64 `json:"old_min_rtt_before_us"`
	// Old path after the migration: its own values, still reported
	// separately (last sample within 2 s after the migration).
	OldCwndAfter  int64 `json:"old_cwnd_after"`
	OldRTTAfterUS int64 `json:"old_rtt_after_us"`
	// ValidationUS is how long validating the new path took as this side
	// saw it: probe → PathEvent::Validated (client), New → Validated
	// (server); 0 when no validation was logged. Compare it with
	// NewRTTAtSwitch: RFC 9002 §6.2.2 (Q2) allows seeding the new path's
	// RTT with it.
	ValidationUS int64 `json:"validation_us,omitempty"`
	// StartsAtInitial: NewCwndFirst equals the connection's own initial
	// window as measured on the first path's first sample.
	StartsAtInitial bool `json:"starts_at_initial"`
}

// Summary is the per-path account of one side of a repetition.
type Summary struct {
	Role string `json:"role"`
	// InitialWindow and InitialRTTUS are the first path's first sample: the
	// values quiche creates a path with, measured rather than assumed.
	InitialWindow int64              `json:"initial_window"`
	InitialRTTUS  int64              `json:"initial_rtt_us"`
	Paths         []PathFigures      `json:"paths"`
	Migrations    []MigrationFigures `json:"migrations"`
}

// Summarize computes the per-path figures of role ("server" or "client")
// from dir/<role>.csv and dir/<role>.events.jsonl.
func Summarize(dir, role string) (Summary, error) {
	s := Summary{Role: role}
	rows, err := ReadCSV(filepath.Join(dir, role+".csv"))
	if err != nil {
		return s, err
	}
	evs, err := ReadEvents(filepath.Join(dir, role+".events.jsonl"))
	if err != nil {
		return s, err
	}
	if len(rows) == 0 {
		return s, fmt.Errorf("%s: no samples", filepath.Join(dir, role+".csv"))
	}
	byPath := map[int][]Row{}
	var ids []int
	for _, r := range rows {
		if _, ok := byPath[r.PathID]; !ok {
			ids = append(ids, r.PathID)
		}
		byPath[r.PathID] = append(byPath[r.PathID], r)
	}
	sort.Ints(ids)
	key := map[string]int{}
	for _, id := range ids {
		rs := byPath[id]
		p := PathFigures{PathID: id, Local: rs[0].Local, Peer: rs[0].Peer, Rows: len(rs),
			FirstUS: rs[0].TimeUS, FirstCwnd: rs[0].Cwnd, FirstRTTUS: rs[0].SmoothedRTTUS, ActiveFromUS: -1}
		for _, r := range rs {
			if r.Active && p.ActiveFromUS < 0 {
				p.ActiveFromUS, p.CwndAtActivation = r.TimeUS, r.Cwnd
			}
			if r.Active && r.Cwnd > p.PeakCwnd {
				p.PeakCwnd = r.Cwnd
			}
		}
		p.LastCwnd, p.LastRTTUS = rs[len(rs)-1].Cwnd, rs[len(rs)-1].SmoothedRTTUS
		s.Paths = append(s.Paths, p)
		key[p.Local+"|"+p.Peer] = id
	}
	first := byPath[ids[0]]
	s.InitialWindow, s.InitialRTTUS = first[0].Cwnd, first[0].SmoothedRTTUS

	// Changes of active path, as the events name them.
	type change struct {
		at        int64
		old, new  string
		evidence  string
		probeAtUS int64
	}
	var changes []change
	var lastProbe int64 = -1
	switch role {
	case "server":
		cur := ""
		local := ""
		for _, e := range evs {
			switch {
			case e.Event == "harness" && e.What == "accepted":
				cur, local = e.Peer, e.Local
			case e.Event == "New":
				lastProbe = e.TimeUS
			case e.Event == "PeerMigrated" && e.Peer != cur:
				// (A PeerMigrated back to the address the server already
				// counted as current follows a FailedValidation of an
				// address it had switched to unvalidated; the active-flag
				// fallback below records both switches.)
				changes = append(changes, change{at: e.TimeUS, old: local + "|" + cur, new: e.Local + "|" + e.Peer,
					evidence: fmt.Sprintf("PathEvent::PeerMigrated(%s, %s)", e.Local, e.Peer), probeAtUS: lastProbe})
				cur, local = e.Peer, e.Local
				lastProbe = -1
			}
		}
		if len(changes) == 0 {
			// No PeerMigrated: quiche emits it only once the new address is
			// validated. The active flag in pathStats still shows a switch.
			for _, sw := range ActiveSwitches(rows) {
				changes = append(changes, change{at: sw.AtUS, old: sw.Old, new: sw.New,
					evidence:  "pathStats: active path now " + strings.Replace(sw.New, "|", " ↔ ", 1) + " (no PathEvent::PeerMigrated: validation of the new address had not completed)",
					probeAtUS: lastNewBefore(evs, sw.AtUS)})
			}
		}
	default:
		cur := ""
		for _, e := range evs {
			switch {
			case e.Event == "harness" && e.What == "connect":
				cur = e.Local + "|" + e.Peer
			case e.Event == "harness" && e.What == "probe":
				lastProbe = e.TimeUS
			case e.Event == "harness" && e.What == "migrate":
				changes = append(changes, change{at: e.TimeUS, old: cur, new: e.Local + "|" + e.Peer,
					evidence: fmt.Sprintf("conn.migrate(%s, %s)", e.Local, e.Peer), probeAtUS: lastProbe})
				cur = e.Local + "|" + e.Peer
				lastProbe = -1
			}
		}
	}
	for ci, c := range changes {
		until := int64(1) << 62
		if ci+1 < len(changes) {
			until = changes[ci+1].at
		}
		oid, ok1 := key[c.old]
		nid, ok2 := key[c.new]
		if !ok1 || !ok2 {
			return s, fmt.Errorf("%s: migration at %d µs from %s to %s: path missing from the timeline", role, c.at, c.old, c.new)
		}
		m := MigrationFigures{AtUS: c.at, Evidence: c.evidence, OldPath: oid, NewPath: nid}
		m.OldAddr, m.NewAddr = movingAddr(c.old, role), movingAddr(c.new, role)
		m.IPChanged = ipOf(m.OldAddr) != ipOf(m.NewAddr)
		olds, news := byPath[oid], byPath[nid]
		m.NewPathFresh = c.probeAtUS >= 0 && news[0].TimeUS >= c.probeAtUS
		for _, r := range olds {
			if r.TimeUS > c.at {
				break
			}
			if r.Active && r.SmoothedRTTUS != olds[0].SmoothedRTTUS && (m.OldMinRTTBeforeUS == 0 || r.SmoothedRTTUS < m.OldMinRTTBeforeUS) {
				m.OldMinRTTBeforeUS = r.SmoothedRTTUS
			}
			m.OldCwndBefore, m.OldRTTBeforeUS = r.Cwnd, r.SmoothedRTTUS
			if r.Cwnd > m.OldPeakBefore {
				m.OldPeakBefore = r.Cwnd
			}
		}
		for _, r := range olds {
			if r.TimeUS > c.at && r.TimeUS <= c.at+2_000_000 {
				m.OldCwndAfter, m.OldRTTAfterUS = r.Cwnd, r.SmoothedRTTUS
			}
		}
		m.NewCwndFirst = news[0].Cwnd
		created := news[0].SmoothedRTTUS
		var measuredAt int64 = -1
		var after []int64
		for _, r := range news {
			if r.TimeUS < c.at {
				continue
			}
			if m.NewCwndAtSwitch == 0 {
				m.NewCwndAtSwitch, m.NewRTTAtSwitch = r.Cwnd, r.SmoothedRTTUS
			}
			if measuredAt < 0 && r.SmoothedRTTUS != created {
				measuredAt = r.TimeUS
				m.NewFirstMeasuredRTTUS = r.SmoothedRTTUS
			}
			if measuredAt >= 0 && r.TimeUS <= measuredAt+2_000_000 {
				after = append(after, r.SmoothedRTTUS)
			}
			if measuredAt >= 0 && r.Active && r.TimeUS < until && (m.NewMinRTTUS == 0 || r.SmoothedRTTUS < m.NewMinRTTUS) {
				m.NewMinRTTUS = r.SmoothedRTTUS
			}
		}
		if len(after) > 0 {
			sort.Slice(after, func(i, j int) bool { return after[i] < after[j] })
			m.NewMinRTTAfterUS, m.NewMedianRTTAfterUS = after[0], after[len(after)/2]
		}
		m.StartsAtInitial = m.NewCwndFirst == s.InitialWindow
		m.ValidationUS = validation(evs, role, m.NewAddr, c.at)
		s.Migrations = append(s.Migrations, m)
	}
	return s, nil
}

// movingAddr picks the client's address out of a "local|peer" path key.
func movingAddr(k, role string) string {
	l, p, _ := strings.Cut(k, "|")
	if role == "server" {
		return p
	}
	return l
}

func ipOf(hp string) string {
	if ap, err := netip.ParseAddrPort(hp); err == nil {
		return ap.Addr().String()
	}
	return hp
}

// Lines renders the summary as one-line notes for a manifest.
func (s Summary) Lines() []string {
	var out []string
	out = append(out, fmt.Sprintf("%s: quiche created its first path with cwnd %d B and smoothed RTT %.3f ms (measured from pathStats)", s.Role, s.InitialWindow, float64(s.InitialRTTUS)/1000))
	for i, m := range s.Migrations {
		kind := "port-only change"
		if m.IPChanged {
			kind = "IP change"
		}
		var start string
		if m.NewPathFresh {
			start = fmt.Sprintf("onto a new path object created at cwnd %d B (= measured initial window %d B: %v), %d B at the switch",
				m.NewCwndFirst, s.InitialWindow, m.StartsAtInitial, m.NewCwndAtSwitch)
		} else {
			start = fmt.Sprintf("back onto a path object quiche already had, carrying cwnd %d B into the switch (its initial window would be %d B)",
				m.NewCwndAtSwitch, s.InitialWindow)
		}
		if m.ValidationUS > 0 {
			start += fmt.Sprintf("; path validation took %.1f ms and the new path's smoothed RTT at the switch was %.0f ms", float64(m.ValidationUS)/1000, float64(m.NewRTTAtSwitch)/1000)
		}
		out = append(out, fmt.Sprintf("%s migration %d at %.3f s (%s, %s): %s → %s %s; old path cwnd %d B (peak %d B), smoothed RTT %.0f ms before; old path min smoothed RTT %.0f ms; new path first measured RTT %.0f ms (median %.0f ms over the next 2 s, min %.0f ms while active); old path afterwards cwnd %d B, RTT %.0f ms, reported separately",
			s.Role, i+1, float64(m.AtUS)/1e6, m.Evidence, kind, m.OldAddr, m.NewAddr, start,
			m.OldCwndBefore, m.OldPeakBefore, float64(m.OldRTTBeforeUS)/1000, float64(m.OldMinRTTBeforeUS)/1000,
			float64(m.NewFirstMeasuredRTTUS)/1000, float64(m.NewMedianRTTAfterUS)/1000, float64(m.NewMinRTTUS)/1000,
			m.OldCwndAfter, float64(m.OldRTTAfterUS)/1000))
	}
	return out
}

// Switch is a change of the active path seen in the timeline.
type Switch struct {
	AtUS     int64
	Old, New string // "local|peer"
}

// ActiveSwitches lists every change of the row marked active.
func ActiveSwitches(rows []Row) []Switch {
	var out []Switch
	cur := ""
	for _, r := range rows {
		if !r.Active {
			continue
		}
		k := r.Local + "|" + r.Peer
		if cur != "" && k != cur {
			out = append(out, Switch{AtUS: r.TimeUS, Old: cur, New: k})
		}
		cur = k
	}
	return out
}

// lastNewBefore is the time of the last PathEvent::New at or before at, -1 if none.
func lastNewBefore(evs []Event, at int64) int64 {
	t := int64(-1)
	for _, e := range evs {
		if e.Event == "New" && e.TimeUS <= at {
			t = e.TimeUS
		}
	}
	return t
}

// validation returns probe/New → Validated for the path to addr, the last
// such pair before at (µs), or 0.
func validation(evs []Event, role, addr string, at int64) int64 {
	start, d := int64(-1), int64(0)
	for _, e := range evs {
		if e.TimeUS > at {
			break
		}
		moving := e.Peer
		if role != "server" {
			moving = e.Local
		}
		if moving != addr {
			continue
		}
		switch {
		case role == "server" && e.Event == "New", role != "server" && e.Event == "harness" && e.What == "probe":
			start = e.TimeUS
		case e.Event == "Validated" && start >= 0:
			d = e.TimeUS - start
		}
	}
	return d
}
