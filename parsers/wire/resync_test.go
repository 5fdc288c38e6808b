package wire

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A kept capture is trimmed (the first datagrams of each direction, then a
// window around the migration): quinn's 1-byte packet numbers after the
// gap expand near the last number before it, and only resynchronising on
// the first whole packet that authenticates reads them right, the cut
// packets before it included. Read on the committed quinn evidence.
func TestResyncAfterTrimGap(t *testing.T) {
	dir := filepath.Join("..", "..", "data", "evidence", "quinn", "rep1")
	if _, err := os.Stat(filepath.Join(dir, "wire.pcapng.gz")); err != nil {
		t.Skipf("no quinn evidence here: %v", err)
	}
	c, err := ReadFiles(filepath.Join(dir, "wire.pcapng.gz"), filepath.Join(dir, "keylog.txt"))
	if err != nil {
		t.Fatal(err)
	}
	resynced, failed := 0, 0
	last := [2]int64{-1, -1}
	backwards := 0
	for _, p := range c.Packets {
		if p.Type != OneRTT {
			continue
		}
		switch {
		case strings.HasPrefix(p.Note, "packet number resynchronised"):
			resynced++
		case strings.Contains(p.Note, "does not decrypt"):
			failed++
		}
		// Each sender's numbers only grow, up to reordering on two paths.
		if p.PN >= 0 && last[p.Dir] >= 0 && p.PN < last[p.Dir]-1000 {
			backwards++
		}
		if p.PN > last[p.Dir] {
			last[p.Dir] = p.PN
		}
	}
	// After the trim gap (the widest silence in a direction) the numbers
	// run on without a jump: the cut packets read before the
	// resynchronising one moved with it.
	for dir := range 2 {
		var ps []Packet
		for _, p := range c.Packets {
			if p.Type == OneRTT && int(p.Dir) == dir && p.PN >= 0 {
				ps = append(ps, p)
			}
		}
		gap := 0
		for i := 1; i < len(ps); i++ {
			if ps[i].WireNS-ps[i-1].WireNS > ps[gap].WireNS-ps[max(gap-1, 0)].WireNS {
				gap = i
			}
		}
		for i := gap + 1; i < len(ps); i++ {
			if d := ps[i].PN - ps[i-1].PN; d > 1000 || d < -1000 {
				t.Errorf("direction %d: packet %d follows packet %d after the capture's gap", dir, ps[i].PN, ps[i-1].PN)
				break
			}
		}
	}
	if resynced == 0 || failed != 0 || backwards != 0 {
		t.Errorf("%d packets resynchronised (want some), %d whole 1-RTT packets fail to decrypt, %d numbers more than 1000 below the sender's largest (want none)", resynced, failed, backwards)
	}
}
