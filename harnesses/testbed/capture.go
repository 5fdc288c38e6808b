package testbed

import (
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"sync"
	"time"

	"github.com/migaudit/migaudit/data/atomicfile"
	"github.com/migaudit/migaudit/harnesses/testbed/linkemu"
	"github.com/migaudit/migaudit/harnesses/testbed/wirecap"
)

// Wire capture: the emulator copies every datagram it handles into a ring
// beside its record (linkemu.SetCapture); the holder drains the rings
// every drainEvery into memory and, when asked, writes what it holds as
// one gzip'ed pcapng (wirecap). Nothing is done on the packet path but a
// memcpy; tcpdump on the path devices, by contrast, raised path A's 20 ms
// RTT median to 22.47 ms (issue 31). docs/wire.md has the figures.

// drainEvery is how often the holder reads the capture rings: at 100
// Mbit/s a direction writes 1.25 MB in 100 ms, 15 % of its 8 MiB ring.
// (Every 20 ms, the calibration's echo RTTs on the first path measured
// showed 40 µs more mean deviation with capture on than off.)
const drainEvery = 100 * time.Millisecond

// CaptureOptions configure WriteCapture.
type CaptureOptions struct {
	// File is the gzip'ed pcapng to create (never replaced).
	File string `json:"file"`
	// From and To bound the capture (MonoNow ns; 0: open).
	From int64 `json:"from,omitempty"`
	To   int64 `json:"to,omitempty"`
	// Migrations are instants (MonoNow ns) around which every datagram
	// is kept whole, besides the first datagram path B carried to the
	// server in [From, To], which is always one.
	Migrations []int64 `json:"migrations,omitempty"`
	// Policy overrides wirecap.DefaultPolicy.
	Policy *wirecap.Policy `json:"policy,omitempty"`
}

// CaptureRecord describes a written capture.
type CaptureRecord struct {
	wirecap.Stats
	File  string `json:"file"`
	Bytes int64  `json:"bytes"` // of the gzip'ed file
}

// capture is an owned instance's capture in progress.
type capture struct {
	mu    sync.Mutex
	dirs  []*capturedDir
	stop  chan struct{}
	done  chan struct{}
	since int64 // MonoNow at StartCapture
}

type capturedDir struct {
	link     *linkemu.Link
	path     string
	toServer bool
	discard  bool // count what is drained, keep nothing (calibration)
	next     uint64
	got      []linkemu.Datagram
	lostRec  uint64
	lostData uint64
	packets  int
	bytes    int64
	scratch  []byte // discard: the buffer every drain reuses
}

func (c *capturedDir) drain() {
	var d linkemu.Drained
	if c.discard {
		if c.scratch == nil {
			c.scratch = make([]byte, linkemu.CaptureRing) // what one drain can read
		}
		d = c.link.DatagramsInto(c.next, c.scratch)
	} else {
		d = c.link.Datagrams(c.next)
	}
	for _, g := range d.Datagrams {
		if g.Data != nil {
			c.packets++
			c.bytes += int64(len(g.Data))
		}
	}
	if !c.discard {
		c.got = append(c.got, d.Datagrams...)
	}
	c.next, c.lostRec, c.lostData = d.Next, c.lostRec+d.LostRecords, c.lostData+d.LostBytes
}

// CaptureSummary counts what a capture drained, per path and direction
// ("A/c2s", …; see wirecap.DirKey).
type CaptureSummary struct {
	Dirs     map[string]CapturedDir `json:"dirs"`
	Overruns uint64                 `json:"overruns"`
}

// CapturedDir is one direction in CaptureSummary.
type CapturedDir struct {
	Packets  int    `json:"packets"`
	Bytes    int64  `json:"bytes"`
	Overruns uint64 `json:"overruns"`
}

func (c *capture) summary() CaptureSummary {
	s := CaptureSummary{Dirs: map[string]CapturedDir{}}
	if c == nil {
		return s
	}
	for _, d := range c.dirs {
		o := d.lostRec + d.lostData
		s.Dirs[wirecap.DirKey(d.path, d.toServer)] = CapturedDir{Packets: d.packets, Bytes: d.bytes, Overruns: o}
		s.Overruns += o
	}
	return s
}

// StartCapture starts recording every datagram on both paths, in both
// directions; a capture already running is discarded and restarted.
func (t *Testbed) StartCapture() error { return t.startCapture(false) }

// StartCaptureCounting starts a capture that copies every datagram as
// StartCapture does but keeps only counts (StopCapture returns them): the
// calibration's way to show that capturing does not move its figures
// without holding seconds of 100 Mbit/s traffic in memory.
func (t *Testbed) StartCaptureCounting() error { return t.startCapture(true) }

func (t *Testbed) startCapture(discard bool) error {
	if t.ctl != "" {
		return t.call(request{Op: "capture-start", Discard: discard}, nil)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.down {
		return fmt.Errorf("testbed %q is down", t.name)
	}
	t.stopCaptureLocked()
	c := &capture{stop: make(chan struct{}), done: make(chan struct{}), since: MonoNow()}
	for _, p := range Paths {
		for i, l := range t.links[p] {
			if !l.SetCapture(true) {
				t.stopCaptureLocked()
				return fmt.Errorf("testbed %q: path %s has no capture ring (linkemu.CaptureRing %d, RecordCap %d)", t.name, p, linkemu.CaptureRing, linkemu.RecordCap)
			}
			_, next := l.Records(^uint64(0))
			c.dirs = append(c.dirs, &capturedDir{link: l, path: p, toServer: i == 0, next: next, discard: discard})
		}
	}
	t.capture = c
	go func() {
		defer close(c.done)
		tick := time.NewTicker(drainEvery)
		defer tick.Stop()
		for {
			select {
			case <-c.stop:
				return
			case <-tick.C:
			}
			c.mu.Lock()
			for _, d := range c.dirs {
				d.drain()
			}
			c.mu.Unlock()
		}
	}()
	return nil
}

// stopCaptureLocked ends the capture in progress, if any, after a last
// drain, and returns it; t.mu is held.
func (t *Testbed) stopCaptureLocked() *capture {
	c := t.capture
	if c == nil {
		return nil
	}
	t.capture = nil
	close(c.stop)
	<-c.done
	for _, d := range c.dirs {
		d.link.SetCapture(false)
	}
	c.mu.Lock()
	for _, d := range c.dirs {
		d.drain()
	}
	c.mu.Unlock()
	return c
}

// StopCapture ends the capture in progress, if any, discards what it
// holds and returns its counts.
func (t *Testbed) StopCapture() (CaptureSummary, error) {
	if t.ctl != "" {
		var s CaptureSummary
		err := t.call(request{Op: "capture-stop"}, &s)
		return s, err
	}
	t.mu.Lock()
	s := t.stopCaptureLocked().summary()
	t.mu.Unlock()
	runtime.GC() // what it held is garbage now (see WriteCapture)
	return s, nil
}

// WriteCapture ends the capture in progress and writes it to o.File as a
// gzip'ed pcapng (docs/wire.md). On an attached instance the holder
// writes the file, so o.File is made absolute first.
func (t *Testbed) WriteCapture(o CaptureOptions) (CaptureRecord, error) {
	if o.File == "" {
		return CaptureRecord{}, errors.New("testbed: write capture: no file named")
	}
	abs, err := filepath.Abs(o.File)
	if err != nil {
		return CaptureRecord{}, fmt.Errorf("testbed: write capture %s: %w", o.File, err)
	}
	o.File = abs
	if t.ctl != "" {
		var r CaptureRecord
		err := t.call(request{Op: "capture-write", Capture: &o}, &r)
		return r, err
	}
	t.mu.Lock()
	c := t.stopCaptureLocked()
	specs := map[string]string{}
	for p, s := range t.specs {
		specs[p] = s.String()
	}
	t.mu.Unlock()
	if c == nil {
		return CaptureRecord{}, fmt.Errorf("testbed %q: write capture %s: no capture is running (StartCapture first)", t.name, o.File)
	}
	in := wirecap.Input{From: o.From, To: o.To, Migrations: o.Migrations, MonoToReal: wirecap.MonoToReal(), PathSpecs: specs}
	for _, d := range c.dirs {
		in.Links = append(in.Links, wirecap.Link{Path: d.path, ToServer: d.toServer, Datagrams: d.got, LostRecords: d.lostRec, LostBytes: d.lostData})
	}
	if m, ok := wirecap.FirstArrival(in.Links, "B", o.From, o.To); ok {
		in.Migrations = append(in.Migrations, m)
	}
	p := wirecap.DefaultPolicy()
	if o.Policy != nil {
		p = *o.Policy
	}
	gz, st, err := wirecap.WriteGzip(in, p)
	// The capture is garbage from here: collect it now, between
	// repetitions, not when the holder's memory limit forces a collection
	// in the middle of one (the holder runs with GC off).
	c, in.Links = nil, nil
	defer runtime.GC()
	if err != nil {
		return CaptureRecord{}, fmt.Errorf("testbed %q: write capture %s: %w", t.name, o.File, err)
	}
	if err := atomicfile.Create(o.File, gz); err != nil {
		return CaptureRecord{}, fmt.Errorf("testbed %q: write capture: %w", t.name, err)
	}
	return CaptureRecord{Stats: st, File: o.File, Bytes: int64(len(gz))}, nil
}
