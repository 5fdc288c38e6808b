package wirecap

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/pcapgo"
	"github.com/klauspost/compress/gzip"
)

// EvidenceBudget is the most wire evidence committed per repetition.
const EvidenceBudget = 2_000_000

// Keep says what Trim keeps of a capture.
type Keep struct {
	// From and To (unix ns, EPB timestamps) bound the window kept.
	From, To int64
	// First keeps the first datagrams of each interface and direction
	// (the handshake, which Wireshark needs to find the connection and
	// its keys), wherever they fall.
	First int
}

// Trim copies the gzip'ed capture src to dst (gzip'ed), keeping only the
// EPBs k names, with the section header saying what was left out: the
// committed evidence of a repetition whose whole capture is larger than
// EvidenceBudget. Interfaces, comments and the EPBs kept are unchanged.
// It returns how many EPBs it kept and read.
func Trim(src io.Reader, dst io.Writer, k Keep) (kept, read int, err error) {
	zr, err := gzip.NewReader(src)
	if err != nil {
		return 0, 0, fmt.Errorf("wirecap: trim: %w", err)
	}
	r, err := pcapgo.NewNgReader(zr, pcapgo.NgReaderOptions{})
	if err != nil {
		return 0, 0, fmt.Errorf("wirecap: trim: %w", err)
	}
	sec := r.SectionInfo()
	if !strings.HasPrefix(sec.Comment, Version) {
		return 0, 0, fmt.Errorf("wirecap: trim: section header %q is not a %s", sec.Comment, Version)
	}
	type pkt struct {
		data    []byte
		ci      gopacket.CaptureInfo
		comment []string
	}
	var pkts []pkt
	first := map[string]int{}
	for {
		data, ci, opts, err := r.ReadPacketDataWithOptions()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return 0, read, fmt.Errorf("wirecap: trim: EPB %d: %w", read+1, err)
		}
		read++
		key := fmt.Sprint(ci.InterfaceIndex, dirOf(opts.Comments))
		first[key]++
		ts := ci.Timestamp.UnixNano()
		if first[key] > k.First && (ts < k.From || ts > k.To) {
			continue
		}
		pkts = append(pkts, pkt{data: bytes.Clone(data), ci: ci, comment: opts.Comments})
	}
	sec.Comment += fmt.Sprintf("; trimmed for committed evidence: kept %d of %d EPBs, those from %d to %d unix ns and the first %d of each interface and direction",
		len(pkts), read, k.From, k.To, k.First)
	zw, _ := gzip.NewWriterLevel(dst, gzip.BestCompression)
	var w *pcapgo.NgWriter
	for i := range r.NInterfaces() {
		intf, _ := r.Interface(i)
		intf.Statistics = pcapgo.NgInterfaceStatistics{}
		if i == 0 {
			w, err = pcapgo.NewNgWriterInterface(zw, intf, pcapgo.NgWriterOptions{SectionInfo: sec})
		} else {
			_, err = w.AddInterface(intf)
		}
		if err != nil {
			return 0, read, fmt.Errorf("wirecap: trim: interface %d: %w", i, err)
		}
	}
	if w == nil {
		return 0, read, errors.New("wirecap: trim: the capture has no interface")
	}
	for _, p := range pkts {
		if err := w.WritePacketWithOptions(p.ci, p.data, pcapgo.NgPacketOptions{Comments: p.comment}); err != nil {
			return 0, read, fmt.Errorf("wirecap: trim: %w", err)
		}
	}
	if err := w.Flush(); err != nil {
		return 0, read, fmt.Errorf("wirecap: trim: %w", err)
	}
	return len(pkts), read, zw.Close()
}

// dirOf is the dir= value of an EPB's comments.
func dirOf(comments []string) string {
	for _, c := range comments {
		for _, kv := range strings.Fields(c) {
			if v, ok := strings.CutPrefix(kv, "dir="); ok {
				return v
			}
		}
	}
	return ""
}

// EvidenceWindow is the widest window TrimToFit tries around a capture's
// whole windows (Stats.WholeWindows): from 1 s before the first to 2 s
// after the last, the discriminator's scope around the migration.
func EvidenceWindow(whole [][2]int64) (from, to int64, ok bool) {
	return evidenceWindow(whole, 1)
}

func evidenceWindow(whole [][2]int64, scale float64) (from, to int64, ok bool) {
	if len(whole) == 0 {
		return 0, 0, false
	}
	from, to = whole[0][0], whole[0][1]
	for _, w := range whole[1:] {
		from, to = min(from, w[0]), max(to, w[1])
	}
	return from - int64(scale*float64(time.Second)), to + int64(scale*2*float64(time.Second)), true
}

// TrimToFit trims the gzip'ed capture gz for committed evidence: the
// handshake (the first 160 datagrams of each interface and direction) and
// the widest window around the whole windows, from EvidenceWindow down to
// a quarter of it, whose file is at most budget bytes. It returns the file
// and the window kept; an error when even the narrowest is too large.
func TrimToFit(gz []byte, whole [][2]int64, budget int) ([]byte, Keep, error) {
	var last int
	for _, scale := range []float64{1, 0.75, 0.5, 0.25} {
		from, to, ok := evidenceWindow(whole, scale)
		if !ok {
			return nil, Keep{}, errors.New("wirecap: trim: the capture records no migration window")
		}
		k := Keep{From: from, To: to, First: DefaultPolicy().FirstWhole}
		var out bytes.Buffer
		if _, _, err := Trim(bytes.NewReader(gz), &out, k); err != nil {
			return nil, k, err
		}
		if out.Len() <= budget {
			return out.Bytes(), k, nil
		}
		last = out.Len()
	}
	return nil, Keep{}, fmt.Errorf("wirecap: trim: %d B even with a quarter of the evidence window, over the %d B budget", last, budget)
}

// Count reads the gzip'ed capture gz through to its end: how many EPBs
// it holds and its size uncompressed. A truncated or corrupt file is an
// error naming the EPB where reading stopped.
func Count(gz []byte) (epbs int, pcapngBytes int64, err error) {
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		return 0, 0, fmt.Errorf("wirecap: %w", err)
	}
	cw := &countingReader{r: zr}
	r, err := pcapgo.NewNgReader(cw, pcapgo.NgReaderOptions{})
	if err != nil {
		return 0, 0, fmt.Errorf("wirecap: %w", err)
	}
	for {
		_, _, err := r.ZeroCopyReadPacketData()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return epbs, cw.n, fmt.Errorf("wirecap: EPB %d: %w", epbs+1, err)
		}
		epbs++
	}
	// The gzip trailer (size and CRC) is checked only once it is read.
	if _, err := io.Copy(io.Discard, cw); err != nil {
		return epbs, cw.n, fmt.Errorf("wirecap: after EPB %d: %w", epbs, err)
	}
	return epbs, cw.n, nil
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(b []byte) (int, error) {
	n, err := c.r.Read(b)
	c.n += int64(n)
	return n, err
}
