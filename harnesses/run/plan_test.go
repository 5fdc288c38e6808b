package run

import (
	"context"
	"net/netip"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// rates is a Net that states only its path rates.
type rates struct{ a, b int64 }

func (rates) ClientNS() string                                             { return "" }
func (rates) ServerNS() string                                             { return "" }
func (rates) ClientAddr(Path) netip.Addr                                   { return netip.Addr{} }
func (rates) ServerAddr() netip.Addr                                       { return netip.Addr{} }
func (rates) Command(context.Context, string, string, ...string) *exec.Cmd { return nil }
func (rates) RouteVia(Path) error                                          { return nil }
func (rates) PathRTT(Path) time.Duration                                   { return 0 }
func (r rates) PathRate(p Path) int64 {
	if p == PathB {
		return r.b
	}
	return r.a
}
func (rates) Counters() (map[Path]PathCounter, error) { return nil, nil }

func TestPlanRep(t *testing.T) {
	caps := Capabilities{
		Scenarios: map[Scenario]string{Standard: "", StepDown: "", PortRebind: "", NATRebind: "", MigrateBack: "", "x": "it cannot"},
		CCs:       []string{"newreno", "cubic"}, DefaultCC: "newreno", CCAliases: map[string]string{"reno": "newreno"}, CCWhy: "two controllers",
	}
	noMB := caps
	noMB.Scenarios = map[Scenario]string{Standard: "", MigrateBack: "one-shot timer"}
	s := time.Second
	for _, tc := range []struct {
		name    string
		caps    Capabilities
		env     RepEnv
		body    int64
		cc      string
		steps   []Step
		timeout time.Duration
		err     string
	}{
		{"standard, slower path sizes the body", caps, RepEnv{Net: rates{20_000_000, 10_000_000}, Scenario: Standard, Transfer: 20 * s, MigrateAt: 5 * s},
			22_500_000, "newreno", []Step{{5 * s, PathB, MoveMigrate}}, 170 * s, ""},
		{"unstated rates: 20 Mbit/s", caps, RepEnv{Net: rates{}, Scenario: StepDown, Transfer: 10 * s, MigrateAt: 2 * s, CC: "cubic"},
			22_500_000, "cubic", []Step{{2 * s, PathB, MoveMigrate}}, 130 * s, ""},
		{"one rate stated", caps, RepEnv{Net: rates{0, 8_000_000}, Scenario: PortRebind, Transfer: 10 * s, MigrateAt: 2 * s, CC: "reno"},
			9_000_000, "newreno", []Step{{2 * s, PathA, MoveRebindPort}}, 130 * s, ""},
		{"nat-rebind", caps, RepEnv{Net: rates{20_000_000, 20_000_000}, Scenario: NATRebind, Transfer: 20 * s, MigrateAt: 5 * s},
			45_000_000, "newreno", []Step{{5 * s, PathB, MoveNATRebind}}, 170 * s, ""},
		{"migrate-back", caps, RepEnv{Net: rates{20_000_000, 20_000_000}, Scenario: MigrateBack, Transfer: 20 * s, MigrateAt: 5 * s, BackAfter: 3 * s},
			45_000_000, "newreno", []Step{{5 * s, PathB, MoveMigrate}, {8 * s, PathA, MoveReturn}}, 170 * s, ""},
		{"migrate-back, default back-after", caps, RepEnv{Net: rates{20_000_000, 20_000_000}, Scenario: MigrateBack, Transfer: 20 * s, MigrateAt: 5 * s},
			45_000_000, "newreno", []Step{{5 * s, PathB, MoveMigrate}, {10 * s, PathA, MoveReturn}}, 170 * s, ""},
		{"unsupported scenario says why", noMB, RepEnv{Scenario: MigrateBack, Transfer: 20 * s, MigrateAt: 5 * s}, 0, "", nil, 0, `cannot run scenario "migrate-back": one-shot timer`},
		{"unlisted scenario", noMB, RepEnv{Scenario: NATRebind, Transfer: 20 * s, MigrateAt: 5 * s}, 0, "", nil, 0, "the harness does not implement it"},
		{"bad cc names the choices", caps, RepEnv{Scenario: Standard, CC: "bbr", Transfer: 20 * s, MigrateAt: 5 * s}, 0, "", nil, 0, `can select congestion control newreno|cubic, not "bbr": two controllers`},
		{"migration after the transfer", caps, RepEnv{Scenario: Standard, Transfer: 5 * s, MigrateAt: 5 * s}, 0, "", nil, 0, "--migrate-at 5s must be positive and before the end of --transfer 5s"},
		{"no migration time", caps, RepEnv{Scenario: Standard, Transfer: 5 * s}, 0, "", nil, 0, "--migrate-at 0s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := PlanRep(tc.caps, tc.env)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want it to contain %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if p.BodyBytes != tc.body || p.CC != tc.cc || p.ClientTimeout != tc.timeout || p.ClientGiveUp != tc.timeout-30*s {
				t.Errorf("plan body %d cc %q timeout %s give-up %s; want %d %q %s %s", p.BodyBytes, p.CC, p.ClientTimeout, p.ClientGiveUp, tc.body, tc.cc, tc.timeout, tc.timeout-30*s)
			}
			if len(p.Steps) != len(tc.steps) {
				t.Fatalf("steps %v, want %v", p.Steps, tc.steps)
			}
			for i := range p.Steps {
				if p.Steps[i] != tc.steps[i] {
					t.Errorf("step %d = %v, want %v", i, p.Steps[i], tc.steps[i])
				}
			}
			if p.MigrateAt() != tc.steps[0].At {
				t.Errorf("MigrateAt %s", p.MigrateAt())
			}
			if len(tc.steps) == 2 && p.BackAfter() != tc.steps[1].At-tc.steps[0].At || len(tc.steps) == 1 && p.BackAfter() != 0 {
				t.Errorf("BackAfter %s", p.BackAfter())
			}
		})
	}
}

// TestRunRefusesBeforeTheTestbed: a --cc or scenario the harness cannot run
// is refused before the network factory is called.
func TestRunRefusesBeforeTheTestbed(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    Options
		err  string
	}{
		{"cc", Options{Scenario: Standard, CC: "bbr"}, `ngtcp2: can select congestion control cubic, not "bbr"`},
		{"scenario", Options{Scenario: MigrateBack}, `ngtcp2: cannot run scenario "migrate-back": one-shot timer`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := tc.o
			o.Harness, o.Reps, o.Out, o.Transfer, o.MigrateAt = stubHarness{}, 1, t.TempDir(), 6*time.Second, 2*time.Second
			o.NewNet = func(context.Context, Scenario, bool) (Net, Calibration, func() error, error) {
				t.Fatal("the testbed was brought up")
				return nil, Calibration{}, nil, nil
			}
			if _, err := Run(context.Background(), o, &strings.Builder{}, &strings.Builder{}); err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("err = %v, want %q", err, tc.err)
			}
		})
	}
}
