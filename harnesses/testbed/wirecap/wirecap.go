// Package wirecap writes the link emulator's own record of every datagram
// (linkemu.Datagram) as one pcapng file per repetition: interface 0 is path
// A, interface 1 path B, link type RAW (the IP packet as the TUN device
// carried it), one Enhanced Packet Block per datagram and link direction
// with its fate in a comment. docs/wire.md is the contract its readers
// (parsers/wire, the validator, Wireshark) rely on.
//
// The file format is gopacket's pcapgo.NgWriter; this package decides only
// what goes in: which datagrams are kept whole and which are cut to their
// headers (Policy), the timestamps (CLOCK_REALTIME, converted from the
// emulator's CLOCK_MONOTONIC by an offset the section header states) and
// the comments.
package wirecap

import (
	"bytes"
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
	"github.com/klauspost/compress/gzip"
	"golang.org/x/sys/unix"

	"github.com/migaudit/migaudit/harnesses/testbed/linkemu"
)

// Version is the first words of every file's section header comment.
const Version = "migaudit wire capture v1"

// Paths are the interfaces in file order: interface i is Paths[i].
var Paths = []string{"A", "B"}

// Link is one direction of one path as the emulator recorded it.
type Link struct {
	Path      string // "A" or "B"
	ToServer  bool   // client → server (dir=c2s); else s2c
	Datagrams []linkemu.Datagram
	// LostRecords / LostBytes are what the emulator's rings overran
	// (linkemu.Drained): datagrams with no record at all, and records
	// whose bytes were gone. Neither can be written; both are counted.
	LostRecords, LostBytes uint64
}

// Input is one capture.
type Input struct {
	Links []Link
	// From and To bound the capture (CLOCK_MONOTONIC ns): a datagram is
	// written when its timestamp (written out, or arrived for a drop) is
	// in [From, To]; 0 leaves that side open.
	From, To int64
	// Migrations are the instants (CLOCK_MONOTONIC ns) around which
	// every datagram is kept whole (Policy.Before, Policy.After).
	Migrations []int64
	// MonoToReal is added to a CLOCK_MONOTONIC instant to get
	// CLOCK_REALTIME (see MonoToReal()).
	MonoToReal int64
	// PathSpecs describe the paths for the interface descriptions
	// ("20mbit,20ms"); may be empty.
	PathSpecs map[string]string
}

// Policy says which datagrams are kept whole; every other one is cut to
// its IP and UDP headers plus HeaderBytes, which hold a QUIC short
// header's first byte, a 20-byte destination connection ID, 4 packet-
// number bytes and the 16-byte header-protection sample: a reader can
// always recover the packet number, and the frames where it is whole.
type Policy struct {
	// WholeUpTo: datagrams of at most this many bytes are kept whole
	// (ACK-only packets, PATH_RESPONSE-sized probes when unpadded).
	WholeUpTo int
	// HeaderBytes kept after the UDP header of a cut datagram.
	HeaderBytes int
	// FirstWhole: the first datagrams of each link direction are kept
	// whole: the handshake's 1-RTT packets (NEW_CONNECTION_ID,
	// HANDSHAKE_DONE) and quic-go's first key update, after 100 packets
	// (handshake.FirstKeyUpdateInterval): Wireshark follows a key update
	// only through a packet of the new key phase it can decrypt, and
	// decrypts nothing of the connection after it otherwise.
	FirstWhole int
	// Before and After bound the window around each migration instant in
	// which every datagram is kept whole (PATH_CHALLENGE, PATH_RESPONSE
	// and the first ACKs on the new path).
	Before, After time.Duration
}

// shortHeaderBytes is the first byte, a 20-byte DCID, 4 packet-number
// bytes and the 16-byte header-protection sample.
const shortHeaderBytes = 1 + 20 + 4 + 16

// DefaultPolicy is what the runner writes into every repetition
// (docs/wire.md has the measurements behind it).
func DefaultPolicy() Policy {
	return Policy{WholeUpTo: 256, HeaderBytes: shortHeaderBytes, FirstWhole: 160,
		Before: 100 * time.Millisecond, After: 400 * time.Millisecond}
}

// String is the policy as the section header and the manifest state it.
func (p Policy) String() string {
	return fmt.Sprintf("whole: long header, <= %d B, first %d per link direction, %s before to %s after each migration; "+
		"else cut to IP+UDP headers + %d B (short header with a 20-byte DCID, 4 packet-number bytes, 16-byte sample)",
		p.WholeUpTo, p.FirstWhole, p.Before, p.After, p.HeaderBytes)
}

// DirStats count one link direction's datagrams in the file.
type DirStats struct {
	Packets    int `json:"packets"`
	Whole      int `json:"whole"`
	Cut        int `json:"cut"`
	QueueDrops int `json:"queue_drops,omitempty"`
	LossDrops  int `json:"loss_drops,omitempty"`
	WriteDrops int `json:"write_drops,omitempty"`
	// Held: datagrams the emulator's hold delayed on purpose (comment
	// held=<ns>; the pv-distinct scenario).
	Held int `json:"held,omitempty"`
	// Overruns: datagrams the emulator handled whose record or bytes
	// were overwritten before they were read; not in the file.
	Overruns uint64 `json:"overruns"`
}

// Stats describe a written capture.
type Stats struct {
	// Dirs are keyed "A/c2s", "A/s2c", "B/c2s", "B/s2c".
	Dirs     map[string]DirStats `json:"dirs"`
	Packets  int                 `json:"packets"`
	Overruns uint64              `json:"overruns"`
	// PcapngBytes is the size of the uncompressed pcapng.
	PcapngBytes int64 `json:"pcapng_bytes"`
	// WholeWindows are the windows (CLOCK_REALTIME ns) in which every
	// datagram was kept whole.
	WholeWindows [][2]int64 `json:"whole_windows_unix_ns,omitempty"`
	Policy       string     `json:"snap_policy"`
	MonoToRealNS int64      `json:"mono_to_real_ns"`
}

// DirKey names a link direction in Stats and comments' dir= values.
func DirKey(path string, toServer bool) string {
	if toServer {
		return path + "/c2s"
	}
	return path + "/s2c"
}

type entry struct {
	ts    int64 // CLOCK_MONOTONIC: written out, or arrived for a drop
	order int64 // where it goes in the file (see order)
	drop  bool
	iface int
	link  *Link
	d     *linkemu.Datagram
	nth   int // index in its link direction's arrival order
}

// Write writes in as pcapng to w.
//
// Datagrams go in the order the emulator wrote them out; a dropped one,
// never written, goes just before the first datagram of its direction
// that entered the link after it, so that each direction reads in the
// sender's order. Placed at its arrival instant instead, a drop lands
// among packets sent up to a queue's delay earlier, and Wireshark, meeting
// a packet of quic-go's next key phase before the last ones of the old,
// decrypted nothing of the connection after its first key update.
func Write(w io.Writer, in Input, p Policy) (Stats, error) {
	st := Stats{Dirs: map[string]DirStats{}, Policy: p.String(), MonoToRealNS: in.MonoToReal}
	var es []entry
	for li := range in.Links {
		l := &in.Links[li]
		iface := slices.Index(Paths, l.Path)
		if iface < 0 {
			return st, fmt.Errorf("wirecap: link %d: path %q is not A or B", li, l.Path)
		}
		k := DirKey(l.Path, l.ToServer)
		ds := st.Dirs[k]
		ds.Overruns += l.LostRecords + l.LostBytes
		st.Dirs[k] = ds
		st.Overruns += l.LostRecords + l.LostBytes
		var dir []entry
		for di := range l.Datagrams {
			d := &l.Datagrams[di]
			e := entry{ts: d.Sent, iface: iface, link: l, d: d, drop: d.Cause != linkemu.Sent}
			if e.drop {
				e.ts = d.Arr
			}
			if d.Data == nil || in.From != 0 && e.ts < in.From || in.To != 0 && e.ts > in.To {
				continue
			}
			dir = append(dir, e)
		}
		es = append(es, order(dir)...)
	}
	slices.SortStableFunc(es, func(a, b entry) int {
		if c := cmp.Compare(a.order, b.order); c != 0 {
			return c
		}
		return cmp.Compare(rank(a), rank(b)) // a drop before the datagram it precedes
	})

	var windows [][2]int64
	for _, m := range in.Migrations {
		windows = append(windows, [2]int64{m - int64(p.Before), m + int64(p.After)})
		st.WholeWindows = append(st.WholeWindows, [2]int64{m - int64(p.Before) + in.MonoToReal, m + int64(p.After) + in.MonoToReal})
	}
	cw := &countingWriter{w: w}
	ng, err := pcapgo.NewNgWriterInterface(cw, iface("A", in.PathSpecs), pcapgo.NgWriterOptions{SectionInfo: pcapgo.NgSectionInfo{
		Application: "migaudit (harnesses/testbed/wirecap, gopacket pcapgo)",
		OS:          "linux",
		Comment:     sectionComment(in, p, st.Overruns),
	}})
	if err != nil {
		return st, fmt.Errorf("wirecap: pcapng header: %w", err)
	}
	if _, err := ng.AddInterface(iface("B", in.PathSpecs)); err != nil {
		return st, fmt.Errorf("wirecap: pcapng interface B: %w", err)
	}
	var comment strings.Builder
	for _, e := range es {
		d := e.d
		keep := len(d.Data)
		if !whole(d.Data, e.ts, e.nth, windows, p) {
			keep = min(keep, cutLength(d.Data, p))
		}
		k := DirKey(e.link.Path, e.link.ToServer)
		ds := st.Dirs[k]
		ds.Packets++
		if keep == len(d.Data) {
			ds.Whole++
		} else {
			ds.Cut++
		}
		fate := "sent"
		switch d.Cause {
		case linkemu.QueueDrop:
			fate, ds.QueueDrops = "queue-drop", ds.QueueDrops+1
		case linkemu.LossDrop:
			fate, ds.LossDrops = "loss-drop", ds.LossDrops+1
		case linkemu.WriteDrop:
			fate, ds.WriteDrops = "write-drop", ds.WriteDrops+1
		}
		st.Dirs[k] = ds
		st.Packets++
		dir := "s2c"
		if e.link.ToServer {
			dir = "c2s"
		}
		comment.Reset()
		fmt.Fprintf(&comment, "dir=%s arr=%d fate=%s", dir, d.Arr+in.MonoToReal, fate)
		if d.HeldUS > 0 {
			fmt.Fprintf(&comment, " held=%d", int64(d.HeldUS)*1000)
			ds.Held++
			st.Dirs[k] = ds
		}
		ci := gopacket.CaptureInfo{Timestamp: time.Unix(0, e.ts+in.MonoToReal), CaptureLength: keep, Length: len(d.Data), InterfaceIndex: e.iface}
		if err := ng.WritePacketWithOptions(ci, d.Data[:keep], pcapgo.NgPacketOptions{Comments: []string{comment.String()}}); err != nil {
			return st, fmt.Errorf("wirecap: packet %d: %w", st.Packets, err)
		}
	}
	if err := ng.Flush(); err != nil {
		return st, fmt.Errorf("wirecap: %w", err)
	}
	st.PcapngBytes = cw.n
	return st, nil
}

// WriteGzip writes in as gzip'ed pcapng and returns the file's bytes.
func WriteGzip(in Input, p Policy) ([]byte, Stats, error) {
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	st, err := Write(zw, in, p)
	if err != nil {
		return nil, st, err
	}
	if err := zw.Close(); err != nil {
		return nil, st, fmt.Errorf("wirecap: gzip: %w", err)
	}
	return buf.Bytes(), st, nil
}

func iface(path string, specs map[string]string) pcapgo.NgInterface {
	desc := "migaudit testbed path " + path
	if s := specs[path]; s != "" {
		desc += " (" + s + ")"
	}
	return pcapgo.NgInterface{Name: "path" + path, Description: desc, OS: "linux",
		LinkType: layers.LinkTypeRaw, TimestampResolution: 9}
}

func sectionComment(in Input, p Policy, overruns uint64) string {
	return fmt.Sprintf("%s; snap policy: %s; clock: timestamps and arr= are CLOCK_REALTIME = CLOCK_MONOTONIC + %d ns; "+
		"timestamp = when the emulator wrote the datagram out of the link (arrival for a drop); overruns: %d",
		Version, p, in.MonoToReal, overruns)
}

// rank sorts a drop before a written datagram of the same place.
func rank(e entry) int {
	if e.drop {
		return 0
	}
	return 1
}

// order puts one direction's datagrams in arrival order and gives each
// its place in the file: its write instant, or for a drop the write
// instant of the next datagram that arrived after it and was written (its
// own arrival, or the last place, when none was).
func order(dir []entry) []entry {
	slices.SortStableFunc(dir, func(a, b entry) int { return cmp.Compare(a.d.Arr, b.d.Arr) })
	next := int64(-1)
	for i := len(dir) - 1; i >= 0; i-- {
		dir[i].nth = i
		switch {
		case !dir[i].drop:
			dir[i].order, next = dir[i].ts, dir[i].ts
		case next >= 0:
			dir[i].order = next
		default:
			dir[i].order = dir[i].ts
		}
	}
	last := int64(0)
	for i := range dir { // a drop after the last written datagram stays after it
		dir[i].order = max(dir[i].order, last)
		last = dir[i].order
	}
	return dir
}

// whole reports whether datagram b (written at ts, the nth of its link
// direction) is kept whole.
func whole(b []byte, ts int64, nth int, windows [][2]int64, p Policy) bool {
	if len(b) <= p.WholeUpTo || nth < p.FirstWhole {
		return true
	}
	for _, w := range windows {
		if ts >= w[0] && ts <= w[1] {
			return true
		}
	}
	off, ok := udpPayload(b)
	return !ok || off < len(b) && b[off]&0x80 != 0 // long header, or not UDP: whole
}

// cutLength is how much of a datagram that is not kept whole is written.
func cutLength(b []byte, p Policy) int {
	off, ok := udpPayload(b)
	if !ok {
		return len(b)
	}
	return off + p.HeaderBytes
}

// udpPayload is the offset of the UDP payload in an IPv4 or IPv6 packet,
// false when b is not UDP (IPv6 extension headers are not followed).
func udpPayload(b []byte) (int, bool) {
	if len(b) < 1 {
		return 0, false
	}
	switch b[0] >> 4 {
	case 4:
		ihl := int(b[0]&0x0f) * 4
		if len(b) < 20 || ihl < 20 || b[9] != 17 {
			return 0, false
		}
		return ihl + 8, true
	case 6:
		if len(b) < 40 || b[6] != 17 {
			return 0, false
		}
		return 48, true
	}
	return 0, false
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(b []byte) (int, error) {
	n, err := c.w.Write(b)
	c.n += int64(n)
	return n, err
}

// FirstArrival is the arrival instant of the first datagram recorded on
// path's client → server direction (a migration's first packet on its new
// path), false if there is none in [from, to] (0: open).
func FirstArrival(links []Link, path string, from, to int64) (int64, bool) {
	var first int64
	found := false
	for _, l := range links {
		if l.Path != path || !l.ToServer {
			continue
		}
		for _, d := range l.Datagrams {
			if (from == 0 || d.Arr >= from) && (to == 0 || d.Arr <= to) && (!found || d.Arr < first) {
				first, found = d.Arr, true
			}
		}
	}
	return first, found
}

// MonoToReal measures CLOCK_REALTIME − CLOCK_MONOTONIC now: the smallest
// bracket of five readings (monotonic, realtime, monotonic) decides.
func MonoToReal() int64 {
	best, off := int64(-1), int64(0)
	for range 5 {
		var a, r, b unix.Timespec
		_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &a)
		_ = unix.ClockGettime(unix.CLOCK_REALTIME, &r)
		_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &b)
		if gap := b.Nano() - a.Nano(); best < 0 || gap < best {
			best, off = gap, r.Nano()-(a.Nano()+gap/2)
		}
	}
	return off
}
