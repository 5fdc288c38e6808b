package testbed

import (
	"strings"
	"testing"
	"time"
)

func TestParsePath(t *testing.T) {
	tests := []struct {
		in      string
		want    PathSpec
		wantErr string
	}{
		{in: "20mbit,20ms", want: PathSpec{Rate: 20_000_000, RTT: 20 * time.Millisecond}},
		{in: "20mbit,40ms,0.5%", want: PathSpec{Rate: 20_000_000, RTT: 40 * time.Millisecond, Loss: 0.005}},
		{in: "100mbit,10ms,burst=3200,queue=250000", want: PathSpec{Rate: 100_000_000, RTT: 10 * time.Millisecond, Burst: 3200, Queue: 250000}},
		{in: " 1.5mbit , 2.5ms , 0.01 ", want: PathSpec{Rate: 1_500_000, RTT: 2500 * time.Microsecond, Loss: 0.01}},
		{in: "unlimited,0s", want: PathSpec{}},
		{in: "2mbps,20ms", want: PathSpec{Rate: 16_000_000, RTT: 20 * time.Millisecond}}, // tc: mbps = megabytes/s
		{in: "20mbit", wantErr: "want RATE,RTT"},
		{in: "fast,20ms", wantErr: "field 1"},
		{in: "20mbit,soon", wantErr: "field 2"},
		{in: "20mbit,20ms,lots", wantErr: `field 3: unknown option "lots"`},
		{in: "20mbit,20ms,150%", wantErr: "loss 1.5 out of range"},
		{in: "20mbit,20ms,burst=100", wantErr: "burst 100 B must be at least 1600"},
		{in: "20mbit,-5ms", wantErr: "rtt -5ms out of range"},
		{in: "20mbit,40ms,hold=1x100ms", want: PathSpec{Rate: 20_000_000, RTT: 40 * time.Millisecond, Hold: 1, HoldExtra: 100 * time.Millisecond}},
		{in: "20mbit,40ms,hold=2x1.5ms", want: PathSpec{Rate: 20_000_000, RTT: 40 * time.Millisecond, Hold: 2, HoldExtra: 1500 * time.Microsecond}},
		{in: "20mbit,40ms,1%,seed=7170407", want: PathSpec{Rate: 20_000_000, RTT: 40 * time.Millisecond, Loss: 0.01, LossSeed: 7170407}},
		{in: "20mbit,40ms,seed=7", wantErr: "loss seed 7 without a loss rate"},
		{in: "20mbit,40ms,1%,seed=-1", wantErr: "field 4: seed:"},
		{in: "20mbit,40ms,hold=1", wantErr: "field 3: hold: want KxDURATION"},
		{in: "20mbit,40ms,hold=1xsoon", wantErr: "field 3: hold:"},
		{in: "20mbit,40ms,hold=99x10ms", wantErr: "hold 99 datagrams out of range"},
		{in: "20mbit,40ms,hold=1x0s", wantErr: "hold extra delay 0s out of range"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParsePath(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ParsePath(%q) error = %v, want one containing %q", tt.in, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Fatalf("ParsePath(%q) = %+v, want %+v", tt.in, got, tt.want)
			}
			// String round-trips through ParsePath.
			back, err := ParsePath(got.String())
			if err != nil || back != got {
				t.Fatalf("round trip %q -> %q -> %+v, %v", tt.in, got.String(), back, err)
			}
		})
	}
}

// TestLossyLinks: the lossy scenario gives path B's two directions the
// configured loss with distinct fixed seeds, path A none, and the manifest's
// spec string names rate and seed.
func TestLossyLinks(t *testing.T) {
	tests := []struct {
		name           string
		cfg            Config
		loss           float64
		upSeed, dnSeed uint64
		specB          string
	}{
		{"lossy", Lossy(), 0.01, LossySeed, LossySeed + 1, "20mbit,40ms,1%,seed=7170407"},
		{"standard", Standard(), 0, 0, 0, "20mbit,40ms"},
		{"pv-distinct", PVDistinct(), 0, 0, 0, "20mbit,40ms,hold=2x100ms"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			up, down := linkSpecs(tt.cfg.PathB)
			if up.Loss != tt.loss || down.Loss != tt.loss || up.Seed != tt.upSeed || down.Seed != tt.dnSeed {
				t.Errorf("path B up %g seed %d, down %g seed %d; want %g, seeds %d/%d", up.Loss, up.Seed, down.Loss, down.Seed, tt.loss, tt.upSeed, tt.dnSeed)
			}
			if a, _ := linkSpecs(tt.cfg.PathA); a.Loss != 0 {
				t.Errorf("path A loss %g, want none", a.Loss)
			}
			if c := tt.cfg.PathB.forCalibration(); c.Validate() != nil || c.Loss != 0 || c.Hold != 0 || c.Rate != tt.cfg.PathB.Rate {
				t.Errorf("path B as calibrated: %+v (%v), want the rate and RTT without loss or hold", c, c.Validate())
			}
			if got := tt.cfg.PathB.String(); got != tt.specB {
				t.Errorf("path B spec %q, want %q", got, tt.specB)
			}
		})
	}
}

func TestOperatingPoints(t *testing.T) {
	for _, tt := range []struct {
		name string
		cfg  Config
		a, b string
	}{
		{"standard", Standard(), "20mbit,20ms", "20mbit,40ms"},
		{"step-down", StepDown(), "20mbit,20ms", "20mbit,60ms"},
	} {
		if a, b := tt.cfg.PathA.String(), tt.cfg.PathB.String(); a != tt.a || b != tt.b {
			t.Errorf("%s = A %s B %s, want A %s B %s", tt.name, a, b, tt.a, tt.b)
		}
	}
	if q := DefaultQueue(20_000_000, 40*time.Millisecond); q != 100_000 {
		t.Errorf("DefaultQueue(20 Mbit/s, 40 ms) = %d, want one BDP, 100000", q)
	}
	if q := DefaultQueue(1_000_000, 10*time.Millisecond); q != 64<<10 {
		t.Errorf("DefaultQueue floor = %d, want 64 KiB", q)
	}
}

func TestValidName(t *testing.T) {
	for name, ok := range map[string]bool{"a": true, "trial-1": true, "0abc": true, "": false, "-x": false,
		"Upper": false, "has space": false, strings.Repeat("x", 25): false, "../etc": false} {
		if err := ValidName(name); (err == nil) != ok {
			t.Errorf("ValidName(%q) = %v, want ok=%v", name, err, ok)
		}
	}
}
