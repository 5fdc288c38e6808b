package wirecap

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"

	"github.com/migaudit/migaudit/harnesses/testbed/linkemu"
)

func TestTrim(t *testing.T) {
	const ms = int64(time.Millisecond)
	// 100 datagrams a direction on path A, one every 10 ms from 0 to 990 ms.
	var up, down []linkemu.Datagram
	for i := range 100 {
		up = append(up, sent(int64(i)*10*ms, udp4(0x40, 60, i)))
		down = append(down, sent(int64(i)*10*ms+5*ms, udp4(0x40, 1200, i)))
	}
	in := Input{Links: []Link{{Path: "A", ToServer: true, Datagrams: up}, {Path: "A", Datagrams: down}}}
	gz, _, err := WriteGzip(in, DefaultPolicy())
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		k    Keep
		want int // EPBs kept
	}{
		{"window only", Keep{From: 200 * ms, To: 299*ms + 10}, 20},
		{"window and the first 3 per direction", Keep{From: 200 * ms, To: 299*ms + 10, First: 3}, 26},
		{"first overlapping the window", Keep{From: 0, To: 15 * ms, First: 1}, 3}, // up at 0 and 10 ms, down at 5 ms
		{"everything", Keep{From: 0, To: 1 << 62}, 200},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var out bytes.Buffer
			kept, read, err := Trim(bytes.NewReader(gz), &out, c.k)
			if err != nil {
				t.Fatal(err)
			}
			if read != 200 || kept != c.want {
				t.Fatalf("kept %d of %d, want %d of 200", kept, read, c.want)
			}
			zr, err := gzip.NewReader(&out)
			if err != nil {
				t.Fatal(err)
			}
			ng, got := readAll(t, zr)
			if len(got) != c.want {
				t.Errorf("the trimmed file holds %d EPBs, Trim said %d", len(got), c.want)
			}
			if sc := ng.SectionInfo().Comment; !strings.HasPrefix(sc, Version) || !strings.Contains(sc, "trimmed for committed evidence") {
				t.Errorf("section comment %q does not say it was trimmed", sc)
			}
			for i, p := range got {
				if p.ts < c.k.From || p.ts > c.k.To {
					if c.k.First == 0 {
						t.Errorf("EPB %d at %d is outside [%d, %d]", i, p.ts, c.k.From, c.k.To)
					}
				}
				if !strings.HasPrefix(p.comment, "dir=") {
					t.Errorf("EPB %d lost its comment: %q", i, p.comment)
				}
			}
		})
	}
}

func TestTrimRejects(t *testing.T) {
	for _, c := range []struct {
		name, in, want string
	}{
		{"not gzip", "plain text", "trim: gzip"},
		{"not a capture", gzipped("not pcapng at all, just bytes"), "trim"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := Trim(strings.NewReader(c.in), &bytes.Buffer{}, Keep{})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want one containing %q", err, c.want)
			}
		})
	}
}

func gzipped(s string) string {
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	_, _ = zw.Write([]byte(s))
	_ = zw.Close()
	return b.String()
}

func TestTrimToFit(t *testing.T) {
	const ms = int64(time.Millisecond)
	// 1,000 datagrams of 1,200 B, one every 5 ms (0 to 5 s), migration at 2.5 s.
	var down []linkemu.Datagram
	for i := range 1000 {
		down = append(down, sent(int64(i)*5*ms, udp4(0x40, 1200, i)))
	}
	in := Input{Links: []Link{{Path: "B", Datagrams: down}}, Migrations: []int64{2500 * ms}}
	p := DefaultPolicy()
	p.FirstWhole = 0
	gz, st, err := WriteGzip(in, p)
	if err != nil {
		t.Fatal(err)
	}
	full, _, _ := TrimToFit(gz, st.WholeWindows, len(gz))
	if full == nil {
		t.Fatal("a budget as large as the file kept nothing")
	}
	for _, budget := range []int{len(full) - 1, len(full) / 2} {
		out, k, err := TrimToFit(gz, st.WholeWindows, budget)
		if err != nil {
			if budget == len(full)-1 { // three quarters of the window fit
				t.Errorf("budget %d: %v", budget, err)
			}
			continue
		}
		if len(out) > budget {
			t.Errorf("budget %d: %d B", budget, len(out))
		}
		if wf, wt, _ := EvidenceWindow(st.WholeWindows); k.From <= wf && k.To >= wt {
			t.Errorf("budget %d: kept the widest window [%d, %d] although it did not fit", budget, k.From, k.To)
		}
	}
	if _, _, err := TrimToFit(gz, st.WholeWindows, 100); err == nil || !strings.Contains(err.Error(), "budget") {
		t.Errorf("a 100 B budget: err = %v, want one naming the budget", err)
	}
	if _, _, err := TrimToFit(gz, nil, len(gz)); err == nil {
		t.Error("no migration window: no error")
	}
}
