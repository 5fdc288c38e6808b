package run

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Capabilities is what a harness can run: the runner checks a scenario and
// a --cc against it before the testbed comes up, and resolves the --cc into
// the implementation's own name for RepPlan.CC.
type Capabilities struct {
	// Scenarios maps each scenario to "" when it can be run, or to the
	// reason it cannot ("the example client changes its address once").
	// A scenario missing from the map cannot be run either.
	Scenarios map[Scenario]string
	// CCs are the congestion controllers the implementation can select,
	// in its own names; DefaultCC (one of them) is used when --cc is unset.
	CCs       []string
	DefaultCC string
	// CCAliases maps the runner's names to the implementation's own
	// ("reno" → "newreno").
	CCAliases map[string]string
	// CCWhy, when set, explains in a --cc error why the choice is what it
	// is (quic-go: "it has one controller, NewReno (...)").
	CCWhy string
}

// Supports returns "" when s can be run, else the reason it cannot.
func (c Capabilities) Supports(s Scenario) string {
	why, ok := c.Scenarios[s]
	if !ok {
		return "the harness does not implement it"
	}
	return why
}

// ResolveCC returns the implementation's name for cc ("" = DefaultCC), or
// an error naming what it can select.
func (c Capabilities) ResolveCC(cc string) (string, error) {
	if cc == "" {
		return c.DefaultCC, nil
	}
	if a, ok := c.CCAliases[cc]; ok {
		cc = a
	}
	if slices.Contains(c.CCs, cc) {
		return cc, nil
	}
	msg := fmt.Sprintf("can select congestion control %s, not %q", strings.Join(c.CCs, "|"), cc)
	if c.CCWhy != "" {
		msg += ": " + c.CCWhy
	}
	return "", fmt.Errorf("%s", msg)
}

// Move is one address change a scenario makes the client perform.
type Move string

const (
	// MoveMigrate: to the path-B address (the client starts path
	// validation).
	MoveMigrate Move = "migrate"
	// MoveRebindPort: a new port on the same path-A address.
	MoveRebindPort Move = "rebind-port"
	// MoveNATRebind: to the path-B address without the client validating.
	MoveNATRebind Move = "nat-rebind"
	// MoveReturn: back to the path-A address (migrate-back).
	MoveReturn Move = "return"
)

// Step is one address change: At after the handshake, the client moves to
// an address on path To.
type Step struct {
	At   time.Duration `json:"at"`
	To   Path          `json:"to"`
	Move Move          `json:"move"`
}

// RepPlan is everything the runner decided for one repetition, so that a
// harness starts at "start the server".
type RepPlan struct {
	// BodyBytes is the body the server sends: 90 % of what the slower path
	// carries in Transfer (20 Mbit/s when the network states no rate).
	BodyBytes int64 `json:"body_bytes"`
	// ClientTimeout (4×Transfer + 90 s) bounds the wait for the client;
	// ClientGiveUp, 30 s earlier, is the deadline passed to a client that
	// takes one, leaving it time to write its traces.
	ClientTimeout time.Duration `json:"client_timeout"`
	ClientGiveUp  time.Duration `json:"client_give_up"`
	// CC is the resolved congestion controller, in the implementation's
	// own name.
	CC string `json:"cc"`
	// Steps are the scenario's address changes, in order.
	Steps []Step `json:"steps"`
	// KeyLog is where an endpoint writes the TLS secrets (RepEnv.KeyLog).
	KeyLog string `json:"keylog,omitempty"`
}

// MigrateAt is when the first step happens.
func (p RepPlan) MigrateAt() time.Duration {
	if len(p.Steps) == 0 {
		return 0
	}
	return p.Steps[0].At
}

// BackAfter is, for migrate-back, the time between leaving path A and
// returning to it; 0 otherwise.
func (p RepPlan) BackAfter() time.Duration {
	if len(p.Steps) < 2 {
		return 0
	}
	return p.Steps[1].At - p.Steps[0].At
}

// defaultRate stands in for the path rate of a network that states none
// (a loopback test).
const defaultRate = 20_000_000

// PlanRep decides one repetition of env.Scenario on env.Net for a harness
// with capabilities c. Its errors are the user's: a scenario the harness
// cannot run, a --cc it cannot select, a migration time outside the
// transfer.
func PlanRep(c Capabilities, env RepEnv) (RepPlan, error) {
	var p RepPlan
	if why := c.Supports(env.Scenario); why != "" {
		return p, fmt.Errorf("cannot run scenario %q: %s", env.Scenario, why)
	}
	cc, err := c.ResolveCC(env.CC)
	if err != nil {
		return p, err
	}
	if env.MigrateAt <= 0 || env.Transfer <= env.MigrateAt {
		return p, fmt.Errorf("--migrate-at %s must be positive and before the end of --transfer %s", env.MigrateAt, env.Transfer)
	}
	rate := int64(0)
	if env.Net != nil {
		for _, q := range []Path{PathA, PathB} {
			if r := env.Net.PathRate(q); r > 0 && (rate == 0 || r < rate) {
				rate = r
			}
		}
	}
	if rate == 0 {
		rate = defaultRate
	}
	p.BodyBytes = int64(float64(rate) / 8 * env.Transfer.Seconds() * 0.9)
	p.ClientTimeout = 4*env.Transfer + 90*time.Second
	p.ClientGiveUp = p.ClientTimeout - 30*time.Second
	p.CC = cc
	p.KeyLog = env.KeyLog
	switch env.Scenario {
	case PortRebind:
		p.Steps = []Step{{env.MigrateAt, PathA, MoveRebindPort}}
	case NATRebind:
		p.Steps = []Step{{env.MigrateAt, PathB, MoveNATRebind}}
	case MigrateBack:
		back := env.BackAfter
		if back <= 0 {
			back = 5 * time.Second
		}
		p.Steps = []Step{{env.MigrateAt, PathB, MoveMigrate}, {env.MigrateAt + back, PathA, MoveReturn}}
	default:
		p.Steps = []Step{{env.MigrateAt, PathB, MoveMigrate}}
	}
	return p, nil
}
