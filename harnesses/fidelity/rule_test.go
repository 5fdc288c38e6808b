package fidelity

import (
	"strings"
	"testing"
	"time"

	"github.com/migaudit/migaudit/discriminator"
)

func TestJudge(t *testing.T) {
	r := DefaultRule(20*time.Millisecond, 40*time.Millisecond)
	const from, to = int64(1e12), int64(1e12 + 2e9)
	clean := func() Window {
		return Window{FromNS: from, ToNS: to, SentinelSamples: 1990, Dirs: map[string]Dir{
			"B/down": {Packets: 3000, LateOver: 3, LateMaxNS: 2e6},
			"B/up":   {Packets: 70, LateOver: 2, LateMaxNS: 3e6},
		}}
	}
	// refs are the standard paths' references (quic-go's 100 ms default).
	refs := discriminator.RTTAttribution{OldPathUS: 20_000, NewPathUS: 40_000, DefaultUS: 100_000}
	sample := func(v int64, w Window) ([]Window, []SampleCheck) {
		up, down, st := SampleInflation(w)
		c := CheckSample(v, up+down+st, refs.Classify)
		c.LateUpNS, c.LateDownNS, c.StallsNS = up, down, st
		return []Window{w}, []SampleCheck{c}
	}
	type in struct {
		win     Window
		cross   []CrossPath
		sWins   []Window
		samples []SampleCheck
	}
	tests := []struct {
		name    string
		mod     func(*in)
		wantSub string // "" = held
	}{
		{"clean", func(*in) {}, ""},
		{"stall at the limit", func(x *in) { x.win.Stalls = []Stall{{AtNS: from + 5e8, LateNS: r.MaxStallNS}} }, ""},
		{"stall over the limit", func(x *in) { x.win.Stalls = []Stall{{AtNS: from + 5e8, LateNS: 25e6}} },
			"host stall of 25.0 ms in the reset window, +0.500 s into the verdict window"},
		{"many stalls", func(x *in) {
			x.win.Stalls = []Stall{{AtNS: from + 1e8, LateNS: 12e6}, {AtNS: from + 2e8, LateNS: 40e6}}
		},
			"2 host stalls longer than 10.0 ms in the reset window, the worst 40.0 ms at +0.200 s"},
		{"long stall after the reset window", func(x *in) { x.win.Stalls = []Stall{{AtNS: from + 15e8, LateNS: 40e6}} }, ""},
		// The old rule's 1 % / 2 packets: recorded, no longer a veto.
		{"late share on one path is recorded, not judged", func(x *in) {
			d := x.win.Dirs["B/down"]
			d.LateOver, d.LateMaxNS = 60, 4e6
			x.win.Dirs["B/down"] = d
		}, ""},
		{"fast path late below the one-way difference", func(x *in) {
			x.cross = []CrossPath{{Dir: "A/up", Other: "B/up", FromNS: from, ToNS: from + 1e8, LateMaxNS: 9e6, LimitNS: r.ReorderLimit("A", 50, 1e8), Measured: true}}
		}, ""},
		{"fast path late beyond the one-way difference", func(x *in) {
			x.cross = []CrossPath{{Dir: "A/up", Other: "B/up", FromNS: from, ToNS: from + 1e8, LateMaxNS: 12e6, LimitNS: r.ReorderLimit("A", 50, 1e8), Measured: true}}
		}, "path A/up: a packet 12.00 ms late while path B/up carried traffic"},
		{"slow path late while the fast one carries sparse traffic", func(x *in) {
			x.cross = []CrossPath{{Dir: "B/down", Other: "A/down", FromNS: from, ToNS: from + 3e7, LateMaxNS: 1.5e6, LimitNS: r.ReorderLimit("B", 5, 3e7), Measured: true}}
		}, "path B/down: a packet 1.50 ms late while path A/down carried traffic"},
		{"slow path late while the fast one carries dense traffic", func(x *in) {
			x.cross = []CrossPath{{Dir: "B/down", Other: "A/down", FromNS: from, ToNS: from + 3e7, LateMaxNS: 8e6, LimitNS: r.ReorderLimit("B", 60, 3e7), Measured: true}}
		}, ""},
		{"write failure", func(x *in) {
			d := x.win.Dirs["B/up"]
			d.WriteDrops = 1
			x.win.Dirs["B/up"] = d
		}, "could not deliver"},
		{"no sentinel", func(x *in) { x.win.SentinelSamples = 0 }, "host stalls unknown"},
		// 40.5 ms less 1.3 + 1.4 + 2.6 ms is 35.2 ms: still the new path.
		{"lateness that cannot move the attribution", func(x *in) {
			x.sWins, x.samples = sample(40_500, Window{SentinelSamples: 60,
				Dirs: map[string]Dir{"A/up": {LateMaxNS: 1.3e6}, "A/down": {LateMaxNS: 1.4e6}}, Stalls: []Stall{{AtNS: 1, LateNS: 2.6e6}}})
		}, ""},
		// 35.0 ms is within 15 % of the 40 ms new path; 1.3 ms less is
		// not, and lies between the paths: converging.
		{"lateness that could move the attribution", func(x *in) {
			x.sWins, x.samples = sample(35_000, Window{SentinelSamples: 60, Dirs: map[string]Dir{"A/down": {LateMaxNS: 1.3e6}}})
		}, "RTT sample 1: 35.000 ms (new-path) could be as low as 33.700 ms"},
		// 23.5 ms is between the paths; 23.0 ms is within 15 % of 20 ms.
		{"a stall that could move the attribution", func(x *in) {
			x.sWins, x.samples = sample(23_500, Window{SentinelSamples: 60, Stalls: []Stall{{AtNS: 1, LateNS: 2.1e6}}})
		}, "RTT sample 1: 23.500 ms (converging) could be as low as 21.400 ms without the 2.10 ms the host may have added (packets 0.00 ms late up + 0.00 ms down, stalls 2.10 ms), and at 23.000 ms it reads old-path"},
		{"a stall that cannot move an old-path sample", func(x *in) {
			x.sWins, x.samples = sample(21_000, Window{SentinelSamples: 60, Stalls: []Stall{{AtNS: 1, LateNS: 3e6}}})
		}, ""},
		{"unmeasured sample window", func(x *in) {
			x.sWins, x.samples = sample(40_000, Window{Truncated: true})
		}, "RTT sample 1: the lateness around it was not measured"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			x := in{win: clean()}
			tc.mod(&x)
			for k, d := range x.win.Dirs {
				d.LateFraction = float64(d.LateOver) / float64(d.Packets)
				x.win.Dirs[k] = d
			}
			got := Judge(r, x.win, []Span{{FromNS: from, ToNS: from + 1e9}}, x.cross, x.sWins, x.samples)
			if tc.wantSub == "" {
				if len(got) != 0 {
					t.Fatalf("problems %q, want none", got)
				}
				return
			}
			if !strings.Contains(strings.Join(got, "; "), tc.wantSub) {
				t.Fatalf("problems %q lack %q", got, tc.wantSub)
			}
		})
	}
}

func TestCheckSample(t *testing.T) {
	std := discriminator.RTTAttribution{OldPathUS: 20_000, NewPathUS: 40_000, DefaultUS: 100_000}
	// Under load path A's last estimate before the migration (44 ms) sits
	// next to path B's 40 ms: within 15 % of both, a value is unattributed.
	loaded := discriminator.RTTAttribution{OldPathUS: 20_000, OldPathMeasuredUS: 44_000, NewPathUS: 40_000, DefaultUS: 100_000}
	tests := []struct {
		name        string
		refs        discriminator.RTTAttribution
		v, infl     int64
		want        string
		decided     bool
		changesAtUS int64
	}{
		{"new path, margin", std, 40_465, 3e6, "new-path", true, 0},
		{"new path at the edge (40 / 1.15 = 34.78 ms)", std, 35_000, 1.3e6, "new-path", false, 34_782},
		{"old path, 3 ms cannot reach 17.4 ms", std, 21_000, 3e6, "old-path", true, 0},
		{"default is far from everything", std, 100_000, 10e6, "default", true, 0},
		{"converging, 1 ms from the old path (20 × 1.15 = 23 ms)", std, 23_500, 1e6, "converging", false, 23_000},
		{"no lateness", std, 35_000, 0, "new-path", true, 0},
		{"loaded old path: near both, unattributed however late", loaded, 42_500, 1e6, "none", true, 0},
		{"loaded old path: 1 ms of lateness brings it near both", loaded, 46_300, 1e6, "old-path", false, 46_000},
		{"inflation larger than the value", std, 3_000, 10e6, "none", true, 0},
	}
	for _, tc := range tests {
		c := CheckSample(tc.v, tc.infl, tc.refs.Classify)
		if c.Attribution != tc.want || c.Decided != tc.decided || c.ChangesAtUS != tc.changesAtUS {
			t.Errorf("%s: %+v, want %s decided %v changes at %d", tc.name, c, tc.want, tc.decided, tc.changesAtUS)
		}
	}
}

func TestCrossPathSpan(t *testing.T) {
	r := DefaultRule(20*time.Millisecond, 40*time.Millisecond)
	const from, to = int64(1e12), int64(1e12 + 2e9)
	win := Window{FromNS: from, ToNS: to, Dirs: map[string]Dir{
		"A/up":   {Packets: 30, FirstSentNS: from + 1e6, LastSentNS: from + 60e6, LateMaxNS: 2e6},
		"B/up":   {Packets: 900, FirstSentNS: from + 50e6, LastSentNS: to - 1e6, LateMaxNS: 3e6},
		"A/down": {Packets: 100, FirstSentNS: from + 1e6, LastSentNS: from + 70e6, LateMaxNS: 1e6},
	}}
	tests := []struct {
		dir      string
		ok       bool
		from, to int64
	}{
		// A/up may be overtaken from B/up's first write to its last + 2 ms.
		{"A/up", true, from + 50e6, to},
		// B/up from the window's start to A/up's last write + 3 ms + 10 ms.
		{"B/up", true, from + 1e6, from + 60e6 + 3e6 + 10e6},
		// Nothing went down path B.
		{"A/down", false, 0, 0},
	}
	for _, tc := range tests {
		_, f, tt, ok := CrossPathSpan(r, win, tc.dir)
		if ok != tc.ok || (ok && (f != tc.from || tt != tc.to)) {
			t.Errorf("%s: %v %d–%d, want %v %d–%d", tc.dir, ok, f-from, tt-from, tc.ok, tc.from-from, tc.to-from)
		}
	}
}

func TestReorderLimit(t *testing.T) {
	r := DefaultRule(20*time.Millisecond, 40*time.Millisecond)
	tests := []struct {
		name  string
		path  string
		other int
		span  int64
		want  int64
	}{
		{"faster path: the one-way difference", "A", 1000, 1e8, 10e6},
		{"slower path, faster one sparse (2 packets: never 3 overtakers)", "B", 2, 1e8, 10e6},
		{"slower path, faster one dense (30 in 100 ms = 3 per 10 ms)", "B", 30, 1e8, 10e6},
		{"slower path, faster one in between", "B", 29, 1e8, 1e6},
		{"slower path, density unknown", "B", 500, 0, 1e6},
	}
	for _, tc := range tests {
		if got := r.ReorderLimit(tc.path, tc.other, tc.span); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
	// Step-down paths (20 and 60 ms): the time threshold leaves
	// 9/8 × 20 ms − 20 ms = 2.5 ms on the slower path.
	sd := DefaultRule(20*time.Millisecond, 60*time.Millisecond)
	if got := sd.ReorderLimit("B", 1000, 1e8); got != 2.5e6 {
		t.Errorf("step-down slower path: %d, want 2.5 ms", got)
	}
	if got := sd.ReorderLimit("A", 1000, 1e8); got != 10e6 {
		t.Errorf("step-down faster path: %d, want 10 ms", got)
	}
}

func TestSampleInflation(t *testing.T) {
	w := Window{
		Stalls: []Stall{{AtNS: 100e6, LateNS: 3e6}},
		Dirs: map[string]Dir{
			// Due at 100.5 ms, written at 103 ms: inside the stall.
			"A/up": {LateMaxNS: 2.5e6, LateMaxAtNS: 103e6},
			// Due at 110 ms, written at 111.3 ms: after it.
			"A/down": {LateMaxNS: 1.3e6, LateMaxAtNS: 111.3e6},
			"B/up":   {LateMaxNS: -5000},
		},
	}
	up, down, st := SampleInflation(w)
	if up != 0 || down != 1.3e6 || st != 3e6 {
		t.Fatalf("up %d down %d stalls %d, want 0 (the stall), 1.3 ms, 3 ms", up, down, st)
	}
}

func TestStallsOverlapping(t *testing.T) {
	all := []Stall{{AtNS: 100, LateNS: 5}, {AtNS: 90, LateNS: 20}, {AtNS: 50, LateNS: 10}, {AtNS: 200, LateNS: 1}, {AtNS: 100, LateNS: 5}}
	got := StallsOverlapping(all, 100, 150)
	// 90+20 reaches into the window; 50+10 ends before it; 200 starts after.
	if len(got) != 2 || got[0].AtNS != 90 || got[1].AtNS != 100 {
		t.Fatalf("got %+v, want the stalls at 90 and 100", got)
	}
}
