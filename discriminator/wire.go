package discriminator

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"

	"github.com/migaudit/migaudit/parsers/wire"
)

// Names of a repetition's wire evidence beside its traces (the wire
// contract of issue #31).
const (
	WireCaptureName = "wire.pcapng.gz"
	KeyLogName      = "keylog.txt"
)

// WireEvidence is a repetition's capture, read with its key log: which
// path every packet crossed, and the ACK delay each ACK frame carried.
type WireEvidence struct {
	// Source names the files, for the detail.
	Source string
	ix     *wire.Index
	paths  []string
	// ackDelay: packet number of a packet carrying an ACK frame, by
	// direction → the frame's ACK delay (µs).
	ackDelay [2]map[int64]int64
	// numbered is false when no 1-RTT packet number could be read (no
	// key log): the wire cannot name the packets.
	numbered bool
	// lastPN is, by direction, the largest 1-RTT packet number the capture
	// holds: a packet above it was sent after the capture ends (committed
	// evidence keeps a window around the migration, docs/wire.md).
	lastPN [2]int64
	notes  []string
	// pv: the path-validation frames, the packets' departures and the
	// ACKs, for Q2 (q2.go).
	pv wirePV
	// sent: by direction, packet number → where and when it entered the
	// link; acks: by direction, the ACK frames in capture order. The
	// wire-only pairing reads them (traces without packet events).
	sent [2]map[int64]wireSent
	acks [2][]wireAck
	// firstOn: by direction and path, the first 1-RTT packet's wire time.
	firstOn [2]map[string]int64
}

type wireSent struct {
	path          string
	arrNS, wireNS int64
	record        int
	delivered     bool
}

type wireAck struct {
	wireNS  int64
	carrier int64
	record  int
	path    string
	delayUS int64
	ranges  []wire.AckRange
}

// LoadWireEvidence reads a capture and its key log (keylogPath may be
// empty: the capture is then read without decryption and cannot name
// 1-RTT packets).
func LoadWireEvidence(capturePath, keylogPath string) (*WireEvidence, error) {
	c, err := wire.ReadFiles(capturePath, keylogPath)
	if err != nil {
		return nil, err
	}
	w := &WireEvidence{ix: c.Index(), paths: c.Paths, notes: c.Notes, ackDelay: [2]map[int64]int64{{}, {}},
		sent: [2]map[int64]wireSent{{}, {}}, firstOn: [2]map[string]int64{{}, {}}}
	w.Source = filepath.Base(capturePath)
	if keylogPath != "" {
		w.Source += " + " + filepath.Base(keylogPath)
	}
	for i := range c.Packets {
		p := &c.Packets[i]
		w.pv.addPacket(p)
		if p.Type == wire.OneRTT && p.PN >= 0 {
			w.numbered = true
			w.lastPN[p.Dir] = max(w.lastPN[p.Dir], p.PN)
			if _, seen := w.sent[p.Dir][p.PN]; !seen {
				w.sent[p.Dir][p.PN] = wireSent{path: p.Path, arrNS: p.ArrivalNS, wireNS: p.WireNS, record: p.Record, delivered: p.Fate == "" || p.Fate == "sent"}
			}
			if _, seen := w.firstOn[p.Dir][p.Path]; !seen {
				w.firstOn[p.Dir][p.Path] = p.WireNS
			}
		}
		for j := range p.Frames {
			f := &p.Frames[j]
			if (f.Type == wire.FrameAck || f.Type == wire.FrameAckECN) && p.Type == wire.OneRTT {
				w.ackDelay[p.Dir][p.PN] = f.AckDelayUS
				if p.Fate == "" || p.Fate == "sent" {
					w.acks[p.Dir] = append(w.acks[p.Dir], wireAck{wireNS: p.WireNS, carrier: p.PN, record: p.Record, path: p.Path, delayUS: f.AckDelayUS, ranges: f.Ranges})
				}
			}
		}
	}
	return w, nil
}

// WireBeside finds the wire evidence beside a trace: the capture's path
// ("" when there is none) and the key log's ("" when there is none). A
// trace in a subdirectory of its repetition (ngtcp2's and picoquic's
// qlog-server/) finds the repetition's capture one level up.
func WireBeside(tracePath string) (capturePath, keylogPath string) {
	dir := filepath.Dir(tracePath)
	for range 2 {
		c := filepath.Join(dir, WireCaptureName)
		if _, err := os.Stat(c); err == nil {
			k := filepath.Join(dir, KeyLogName)
			if _, err := os.Stat(k); err != nil {
				k = ""
			}
			return c, k
		}
		dir = filepath.Dir(dir)
	}
	return "", ""
}

// WireRTT is the packet evidence behind the post-migration RTT samples:
// each sample paired with the ACK that produced it, that ACK's largest
// newly acknowledged packet, and the path the packet crossed on the wire.
type WireRTT struct {
	Source  string `json:"source"`
	OldPath string `json:"old_path,omitempty"`
	NewPath string `json:"new_path,omitempty"`
	// Samples counts the post-migration RTT samples considered; Paired
	// those an ACK explains; OldPathSamples those whose packet crossed the
	// old path.
	Samples        int `json:"samples"`
	Paired         int `json:"paired"`
	OldPathSamples int `json:"old_path_samples"`
	// AfterCapture counts the samples whose packet was sent after the
	// capture ends (a capture trimmed to a window): not judged.
	AfterCapture int `json:"after_capture,omitempty"`
	// Deciding is the sample the answer rests on: the first from an
	// old-path packet, else the first sample.
	Deciding *WireSample `json:"deciding,omitempty"`
	// First is the first post-migration sample paired with its packet.
	First *WireSample `json:"first,omitempty"`
	// Bytes is the sender's congestion accounting from the migration to
	// the end of the scope by the path each packet crossed on the wire:
	// bytes newly acknowledged and declared lost (where the trace logs
	// losses). Empty when the trace logs no per-packet events.
	Bytes []PathBytes `json:"bytes_by_path,omitempty"`
	// Decides is false when the wire cannot name the packets (no key log,
	// no pre-migration packet on the wire): Q3 then rests on values.
	Decides bool   `json:"decides"`
	Answer  string `json:"answer"`
	Reason  string `json:"reason"`
}

// WireSample is one RTT sample and the packet behind it.
type WireSample struct {
	AtUS       int64  `json:"at_us"`
	LatestUS   int64  `json:"latest_rtt_us"`
	AckAtUS    int64  `json:"ack_at_us"`
	AckPacket  int64  `json:"ack_packet"` // the packet that carried the ACK
	AckDelayUS int64  `json:"ack_delay_us"`
	Packet     int64  `json:"packet"` // largest newly acknowledged
	SentAtUS   int64  `json:"sent_at_us"`
	Path       string `json:"path"`
	WireNS     int64  `json:"wire_ns"`
	Record     int    `json:"record"`
	// ErrUS is how far (ACK time − send time − ACK delay) is from the
	// sample: what the pairing minimised.
	ErrUS int64 `json:"err_us"`
	// RepeatedAck: the ACK behind the sample acknowledged its largest
	// packet again (an earlier ACK had), so the round trip is not the
	// one the first ACK of the packet gives.
	RepeatedAck bool `json:"repeated_ack,omitempty"`
}

// TraceReferenceUnixUS is a timeline CSV's time 0 on the wall clock, from
// its sibling <stem>.meta.json (reference_unix_us, which quiche's harness
// writes); 0 when the trace states none.
func TraceReferenceUnixUS(tracePath string) int64 {
	base := filepath.Base(tracePath)
	stem, _, ok := strings.Cut(base, ".csv")
	if !ok {
		return 0
	}
	b, err := os.ReadFile(filepath.Join(filepath.Dir(tracePath), stem+".meta.json"))
	if err != nil {
		return 0
	}
	var m struct {
		Ref int64 `json:"reference_unix_us"`
	}
	if json.Unmarshal(b, &m) != nil {
		return 0
	}
	return m.Ref
}

func exists(p string) bool { _, err := os.Stat(p); return err == nil }
