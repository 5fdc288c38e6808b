package run

import (
	"context"
	"encoding/json"
	"net/netip"
	"os/exec"
	"time"
)

// Harness runs one QUIC implementation across a migration. See the package
// documentation for the rules an implementation must follow.
type Harness interface {
	// Name is the implementation name as data.Lookup knows it ("quic-go").
	Name() string
	// Check verifies the executables (or native modules) the harness runs.
	Check(ctx context.Context) (Binaries, error)
	// Capabilities says which scenarios the harness can run (with the
	// reason for each it cannot) and which congestion controllers it can
	// select; the runner rejects what it cannot do before the testbed is
	// brought up.
	Capabilities() Capabilities
	// RunRep runs one repetition as env.Plan says. The returned error is
	// for failures to run at all (a process did not start, the transfer
	// never began); a run that completed but looks wrong is returned
	// without error and is caught by the runner's verification.
	RunRep(ctx context.Context, env RepEnv) (RepResult, error)
}

// Scenario names a migration experiment.
type Scenario string

const (
	// Standard: ~MigrateAt into the transfer the client moves from its
	// path-A address to its path-B address (path B slower: 40 ms vs 20 ms).
	Standard Scenario = "standard"
	// StepDown: as Standard, with path B at the step-down delay (60 ms).
	StepDown Scenario = "step-down"
	// PortRebind: the client moves to a new port on the SAME path-A address
	// (RFC 9000 §9.4 exempts this from the reset).
	PortRebind Scenario = "port-rebind"
	// NATRebind: the client's address changes to path B without the client
	// starting path validation; only the server's reaction is meaningful.
	NATRebind Scenario = "nat-rebind"
	// MigrateBack: A → B at MigrateAt, then B → A at MigrateAt + BackAfter.
	MigrateBack Scenario = "migrate-back"
	// PVDistinct: as Standard, but on path B the first datagram in each
	// direction after the path was idle (the path validation's) waits
	// 100 ms more, beside the FIFO (testbed.PVDistinct): the new path's
	// validation round trip (~140 ms for the server) is then at least
	// twice its data round trip (40 ms), so seeding the new path's RTT
	// from it (RFC 9002 §6.2.2, Q2) shows in the trace. The wire decides
	// per repetition whether the two differed (docs/testbed.md).
	PVDistinct Scenario = "pv-distinct"
	// Lossy: as Standard, with random loss on path B (testbed.Lossy: 1 %
	// of datagrams each way, from a fixed seed the manifest's path spec
	// records): loss responses after the migration, down to the floor,
	// are exercised and every collapse must be classified (issue 29).
	Lossy Scenario = "lossy"
)

// AllScenarios in the order the CLI lists them.
var AllScenarios = []Scenario{Standard, StepDown, PortRebind, NATRebind, MigrateBack, PVDistinct, Lossy}

// IsIPMigration reports whether s moves the client to another IP address.
func (s Scenario) IsIPMigration() bool { return s != PortRebind }

// Binary is one executable (or native module) a harness runs.
type Binary struct {
	Role    string `json:"role"` // "client", "server", "harness"
	Path    string `json:"path"`
	Size    int64  `json:"size"`
	SHA256  string `json:"sha256"`
	Version string `json:"version"`
	// VersionSource says where Version was read ("dpkg-query ngtcp2-client",
	// "debug.ReadBuildInfo").
	VersionSource string `json:"version_source"`
}

// Binaries are what Check verified.
type Binaries []Binary

// Path names one of the testbed's two client paths.
type Path string

const (
	PathA Path = "A"
	PathB Path = "B"
)

// Net is the part of the testbed a harness uses. The runner adapts
// harnesses/testbed to it; tests may provide their own.
type Net interface {
	ClientNS() string
	ServerNS() string
	// ClientAddr is the client's address on path p.
	ClientAddr(p Path) netip.Addr
	// ServerAddr never changes.
	ServerAddr() netip.Addr
	// Command returns a command that runs name inside namespace ns.
	Command(ctx context.Context, ns string, name string, args ...string) *exec.Cmd
	// RouteVia makes path p the client namespace's default route (what an
	// unbound socket or a routing-table lookup picks).
	RouteVia(p Path) error
	// PathRTT is the configured round-trip time of path p.
	PathRTT(p Path) time.Duration
	// PathRate is the configured rate of path p in bit/s.
	PathRate(p Path) int64
	// Counters returns the packets and bytes each path has carried so far
	// (both directions), read from the testbed's own links.
	Counters() (map[Path]PathCounter, error)
}

// EmulatorTimer is optionally implemented by a Net whose links are
// emulated in user space: the emulator's own timing record (cumulative),
// snapshotted before and after each repetition into the manifest so a
// repetition measured on an overloaded host can be recognised.
type EmulatorTimer interface {
	EmulatorTiming() (json.RawMessage, error)
}

// PathCounter is what one path's link has carried.
type PathCounter struct {
	// ToServer / FromServer count datagrams client→server and server→client.
	ToServerPackets   int64 `json:"to_server_packets"`
	ToServerBytes     int64 `json:"to_server_bytes"`
	FromServerPackets int64 `json:"from_server_packets"`
	FromServerBytes   int64 `json:"from_server_bytes"`
	// Drops are packets the link emulator dropped (queue overflow or
	// configured random loss), when the network reports them.
	ToServerDrops   int64 `json:"to_server_drops,omitempty"`
	FromServerDrops int64 `json:"from_server_drops,omitempty"`
}

// RepEnv is everything one repetition needs. Scenario, CC, Transfer,
// MigrateAt and BackAfter are the user's request; Plan is what the runner
// made of it, and what a harness runs.
type RepEnv struct {
	Net      Net
	Scenario Scenario
	// CC is the --cc as given ("" = the implementation's default); the
	// resolved name is Plan.CC.
	CC string
	// Transfer is the intended duration of the download (Plan.BodyBytes is
	// sized from it).
	Transfer time.Duration
	// MigrateAt is when, after the handshake, the client migrates.
	MigrateAt time.Duration
	// BackAfter is, for migrate-back, how long after the first migration
	// the client returns to path A.
	BackAfter time.Duration
	// Plan is the runner's plan for this repetition (PlanRep).
	Plan RepPlan
	// Dir is this repetition's own directory: exists, empty, never reused.
	Dir string
	// Index is the repetition number, from 1.
	Index int
	// SelfExe is the migaudit executable, for harnesses whose client and
	// server are migaudit's own hidden subcommands.
	SelfExe string
	// KeyLog is the absolute path (Dir/keylog.txt) where at least one
	// endpoint writes the connection's TLS secrets in the NSS key log format
	// (server preferred; both may append), so the wire capture can be
	// decrypted. The harness says which endpoint did in RepResult.KeyLogBy.
	KeyLog string
	// Progress, when non-nil, is called with bytes downloaded so far and the
	// body size; it must be cheap.
	Progress func(done, total int64)
}

// Process is one process a harness ran.
type Process struct {
	Role     string    `json:"role"` // "server", "client"
	Argv     []string  `json:"argv"`
	NS       string    `json:"netns"`
	Stdout   string    `json:"stdout,omitempty"` // file name inside Dir
	Stderr   string    `json:"stderr,omitempty"`
	Start    time.Time `json:"start"`
	End      time.Time `json:"end"`
	ExitCode int       `json:"exit_code"`
	// Killed is true when the harness stopped it (a server after the
	// download, or everything on cancellation).
	Killed bool `json:"killed,omitempty"`
	// StderrLinesDropped counts the stderr lines the harness chose not to
	// save (ProcSpec.SaveStderr: per-packet debug lines that the trace and
	// the capture hold anyway).
	StderrLinesDropped int `json:"stderr_lines_dropped,omitempty"`
}

// Param is one discriminator formula parameter with where it came from.
type Param struct {
	Value  float64 `json:"value"`
	Source string  `json:"source"`
}

// AddrChange is a change of the client's address as one side reported it:
// the client's own log line or the socket the harness bound (client side),
// or the peer address the server's connection reports (server side).
type AddrChange struct {
	At       time.Time `json:"at"`
	From     string    `json:"from,omitempty"` // "ip:port"
	To       string    `json:"to"`
	Evidence string    `json:"evidence"` // the log line or API call
}

// RepResult is what a harness observed in one repetition.
type RepResult struct {
	Processes []Process `json:"processes"`
	// ServerTrace and ClientTrace are file names inside Dir (may be .gz).
	ServerTrace string `json:"server_trace"`
	ClientTrace string `json:"client_trace,omitempty"`
	// Params for the implementation's constant formulas ({"S": ...}).
	Params map[string]Param `json:"params,omitempty"`
	// Settings are the run's implementation settings, for the manifest
	// ("cc": "cubic", "max_udp_payload_size": "1452", ...).
	Settings map[string]string `json:"settings,omitempty"`
	// Moves are the client's own reports of changing address, in order.
	Moves []AddrChange `json:"client_moves,omitempty"`
	// ServerSaw are the changes of the client's address as the server
	// observed them (when the harness can observe it), in order.
	ServerSaw []AddrChange `json:"server_saw,omitempty"`
	// BodyBytes / ReceivedBytes: size served and bytes the client received.
	BodyBytes     int64 `json:"body_bytes"`
	ReceivedBytes int64 `json:"received_bytes"`
	// Completed is true when the client received the whole body.
	Completed bool `json:"completed"`
	// KeyLogBy names the endpoint that was told to write RepEnv.KeyLog
	// ("server", "client", "both"); empty when none can.
	KeyLogBy string `json:"keylog_by,omitempty"`
	// Version is the implementation version actually run.
	Version string   `json:"version"`
	Notes   []string `json:"notes,omitempty"`
}
