package run

import (
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/migaudit/migaudit/harnesses/testbed/wirecap"
)

// WireFile is the capture every repetition directory holds (docs/wire.md).
const WireFile = "wire.pcapng.gz"

// WireCapturer is optionally implemented by a Net whose emulator records
// every datagram it carries (harnesses/testbed): the runner starts it
// before each repetition and has it write WireFile after.
type WireCapturer interface {
	// MonoNow is the capturer's clock (CLOCK_MONOTONIC, ns).
	MonoNow() int64
	StartCapture() error
	// WriteCapture ends the capture and writes [from, to] to file, every
	// datagram whole around each instant in migrations (and around the
	// first datagram on path B, which the capturer finds itself).
	WriteCapture(file string, from, to int64, migrations []int64) (Capture, error)
}

// Capture is the manifest's record of WireFile.
type Capture struct {
	File   string `json:"file"`
	SHA256 string `json:"sha256,omitempty"`
	Bytes  int64  `json:"bytes"`
	// PcapngBytes is the size uncompressed.
	PcapngBytes int64 `json:"pcapng_bytes"`
	// Packets per path and direction ("A/c2s", "A/s2c", "B/c2s",
	// "B/s2c"): EPBs in the file, how many whole and cut, and drops.
	Packets map[string]CaptureDir `json:"packets"`
	// Overruns counts datagrams the emulator carried but the capture
	// lost (its rings were overwritten before the holder read them);
	// the file lacks them.
	Overruns   uint64 `json:"overruns"`
	SnapPolicy string `json:"snap_policy"`
	// MonoToRealNS is CLOCK_REALTIME − CLOCK_MONOTONIC as the file's
	// timestamps were converted.
	MonoToRealNS int64 `json:"mono_to_real_ns"`
	// WholeWindows are the windows (unix ns) in which every datagram is
	// kept whole.
	WholeWindows [][2]int64 `json:"whole_windows_unix_ns,omitempty"`
	// Trimmed, in committed evidence, records the trim `migaudit run
	// keep` made (File, SHA256, Bytes and PcapngBytes then describe the
	// trimmed file; Packets and Overruns the capture the run wrote).
	Trimmed *CaptureTrim `json:"trimmed,omitempty"`
	// Error says why there is no capture (the repetition still counts;
	// its live answers then rest on the traces alone).
	Error string `json:"error,omitempty"`
}

// CaptureDir is one path direction in Capture: EPBs, whole and cut,
// drops by cause, overruns.
type CaptureDir = wirecap.DirStats

// repCapture is one repetition's capture in progress (nil: none).
type repCapture struct {
	wc         WireCapturer
	from       int64
	wallToMono int64
	err        error
	stderr     io.Writer
}

// startWireCapture starts capturing for one repetition when the network
// can and the run wants it; nil otherwise.
func startWireCapture(o Options, netw Net, stderr io.Writer) *repCapture {
	wc, ok := netw.(WireCapturer)
	if !ok || o.NoCapture {
		return nil
	}
	c := &repCapture{wc: wc, stderr: stderr}
	c.from = wc.MonoNow()
	c.wallToMono = c.from - time.Now().UnixNano()
	c.err = wc.StartCapture()
	return c
}

// finish writes WireFile into dir and returns the manifest's record;
// the client's own reports of moving widen what is kept whole.
func (c *repCapture) finish(dir string, res RepResult) *Capture {
	if c == nil {
		return nil
	}
	if c.err != nil {
		return &Capture{File: WireFile, Error: "capture not started: " + c.err.Error()}
	}
	var moves []int64
	for _, m := range res.Moves {
		moves = append(moves, m.At.UnixNano()+c.wallToMono)
	}
	out, err := c.wc.WriteCapture(filepath.Join(dir, WireFile), c.from, c.wc.MonoNow(), moves)
	if err != nil {
		fmt.Fprintf(c.stderr, "migaudit: wire capture: %v\n", err)
		return &Capture{File: WireFile, Error: err.Error()}
	}
	out.File = WireFile
	if sum, err := SHA256File(filepath.Join(dir, WireFile)); err == nil {
		out.SHA256 = sum
	}
	return &out
}
