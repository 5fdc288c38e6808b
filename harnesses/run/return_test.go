package run

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A timeline CSV names a path's addresses only in its first row (path_seen):
// the return B → A of migrate-back must still be found after the cut.
func TestMigrateBackReturnFromPathTimeline(t *testing.T) {
	var b strings.Builder
	b.WriteString("time_us,path_id,local,peer,active,cwnd,smoothed_rtt,min_rtt\n")
	paths := []struct {
		id, peer string
		from, to int64
		rtt      int
	}{{"0", "198.18.1.2:5000", 0, 5_000_000, 20000}, {"1", "198.18.2.2:6000", 5_000_000, 10_000_000, 40000}, {"2", "198.18.1.2:7000", 10_000_000, 15_000_000, 20000}}
	for _, p := range paths {
		for t := p.from; t < p.to; t += 5000 {
			cwnd := min(12200+(t-p.from)/50, 100000) // 10 × (1248 − 28) at each path's start, then growth
			fmt.Fprintf(&b, "%d,%s,198.18.0.1:4433,%s,1,%d,%d,%d\n", t, p.id, p.peer, cwnd, p.rtt, p.rtt)
		}
	}
	f := filepath.Join(t.TempDir(), "server.csv")
	if err := os.WriteFile(f, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	res := RepResult{Params: map[string]Param{"MTU": {Value: 1248, Source: "test"}}}
	a, ret, err := analyse(f, "msquic", MigrateBack, res, fakeNet{})
	if err != nil {
		t.Fatal(err)
	}
	if !a.Migration.Found || a.Migration.AtUS != 5_000_000 || !a.ResetObserved {
		t.Fatalf("first migration: %+v reset %v", a.Migration, a.ResetObserved)
	}
	if ret == nil {
		t.Fatal("no return analysis")
	}
	if !ret.Migration.Found || ret.Migration.AtUS != 10_000_000 || ret.Migration.OldAddr != "198.18.2.2:6000" || ret.Migration.NewAddr != "198.18.1.2:7000" {
		t.Fatalf("return: %+v", ret.Migration)
	}
	if !ret.ResetObserved || ret.WindowAfterBytes != 12200 {
		t.Errorf("return: reset %v after %d B", ret.ResetObserved, ret.WindowAfterBytes)
	}
}
