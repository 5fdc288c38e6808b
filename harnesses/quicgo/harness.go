package quicgo

import (
	"context"
	"debug/buildinfo"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/migaudit/migaudit/audit/gitsrc"
	"github.com/migaudit/migaudit/data"
	"github.com/migaudit/migaudit/harnesses/run"
	"github.com/migaudit/migaudit/harnesses/upstream"
)

// Port the server listens on inside the server namespace.
const Port = 4433

// Harness runs quic-go's client and server: built against a quic-go
// checkout (--source/--commit, or the pin from $MIGAUDIT_MIRRORS) as the
// program of build.go, else as migaudit's own hidden subcommands with the
// quic-go module linked into migaudit.
type Harness struct {
	// Exe is the migaudit executable to re-execute; empty means
	// RepEnv.SelfExe, then os.Executable.
	Exe string

	log     func(string)
	mu      sync.Mutex
	opts    upstream.Options
	fromSrc bool // build against a checkout
	built   *upstream.Artifact
	version string
}

// New returns the quic-go harness.
func New() *Harness { return &Harness{log: func(string) {}} }

// ConfigureUpstream takes --source and --commit. With neither, the pin is
// built when a checkout of quic-go is found ($MIGAUDIT_MIRRORS, the user
// cache); with no checkout at all the module linked into migaudit runs.
func (h *Harness) ConfigureUpstream(o upstream.Options) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	_, err := NewRecipe(o)
	if err != nil {
		if upstream.IsNoSource(err) && o.Source == "" && o.Commit == "" && len(o.Deps) == 0 {
			v, _ := QuicGoVersion()
			h.log(fmt.Sprintf("quic-go: no checkout found; running the module linked into migaudit (%s)", v))
			h.fromSrc = false
			return nil
		}
		return err
	}
	h.opts, h.fromSrc, h.built = o, true, nil
	return nil
}

// ensure builds or reuses the harness program.
func (h *Harness) ensure(ctx context.Context) (*upstream.Artifact, string, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.built != nil {
		return h.built, h.version, nil
	}
	a, err := Ensure(ctx, h.opts, upstream.LineWriter(h.log))
	if err != nil {
		return nil, "", err
	}
	repo, err := gitsrc.Open(a.Source)
	if err != nil {
		return nil, "", err
	}
	h.built, h.version = a, Describe(repo, a.Commit)
	return a, h.version, nil
}

func (h *Harness) Name() string { return "quic-go" }

// Capabilities: all five scenarios (nat-rebind is emulated by a NAT-like
// PacketConn under quic-go: the client's socket changes, quic-go is not
// told); one congestion controller.
func (h *Harness) Capabilities() run.Capabilities {
	sc := map[run.Scenario]string{}
	for _, s := range run.AllScenarios {
		sc[s] = ""
	}
	return run.Capabilities{Scenarios: sc, CCs: []string{"reno"}, DefaultCC: "reno",
		CCWhy: "quic-go " + vOrUnknown() + " has one controller, NewReno (congestion.NewCubicSender(..., true /* use Reno */) in internal/ackhandler/sent_packet_handler.go, also on migration); use --cc reno or leave --cc unset"}
}

func (h *Harness) exe(env *run.RepEnv) (string, error) {
	if h.Exe != "" {
		return h.Exe, nil
	}
	if env != nil && env.SelfExe != "" {
		return env.SelfExe, nil
	}
	return os.Executable()
}

// Check verifies that the migaudit executable that will run the client and
// server was built against the quic-go version pinned for live runs.
func (h *Harness) Check(ctx context.Context) (run.Binaries, error) {
	if h.fromSrc {
		a, v, err := h.ensure(ctx)
		if err != nil {
			return nil, err
		}
		b, err := run.FileBinary("client+server", a.Path(OutHarness), v,
			fmt.Sprintf("quic-go %s built from %s (go.mod replace); build.json in %s", a.Commit, a.Source, a.Dir))
		if err != nil {
			return nil, err
		}
		if b.SHA256 != a.SHA256[OutHarness] {
			return nil, fmt.Errorf("quic-go harness %s has sha256 %s, build.json in %s records %s", b.Path, b.SHA256, a.Dir, a.SHA256[OutHarness])
		}
		return run.Binaries{b}, nil
	}
	exe, err := h.exe(nil)
	if err != nil {
		return nil, fmt.Errorf("quic-go harness: locate migaudit executable: %w", err)
	}
	im, err := data.Lookup("quic-go")
	if err != nil {
		return nil, err
	}
	// Read the version from the executable that will run, not from this
	// process (a test binary, or an older build, may differ).
	v, sum, err := exeQuicGoVersion(exe)
	if err != nil {
		return nil, fmt.Errorf("quic-go harness: %s: %w; rebuild with `go build -o DIR/ ./cmd/...`", exe, err)
	}
	if im.LiveVersion != "" && v != im.LiveVersion {
		return nil, fmt.Errorf("quic-go harness: migaudit was built with quic-go %s, expected %s (data/implementations.json live_version); `GOFLAGS=-mod=mod go get github.com/quic-go/quic-go@%s` and rebuild", v, im.LiveVersion, im.LiveVersion)
	}
	b, err := run.FileBinary("client+server", exe, v, "debug.ReadBuildInfo github.com/quic-go/quic-go "+sum)
	if err != nil {
		return nil, err
	}
	return run.Binaries{b}, nil
}

// RunRep runs one download with a migration.
func (h *Harness) RunRep(ctx context.Context, env run.RepEnv) (run.RepResult, error) {
	res := run.RepResult{Settings: map[string]string{}}
	var exe string
	var pre, srvExtra []string
	if h.fromSrc {
		a, v, err := h.ensure(ctx)
		if err != nil {
			return res, err
		}
		exe, res.Version = a.Path(OutHarness), v
		for k, val := range buildSettings(a, v) {
			res.Settings[k] = val
		}
		keyPath, certPath, err := run.WriteSelfSigned(env.Dir)
		if err != nil {
			return res, err
		}
		srvExtra = []string{"--cert", certPath, "--key", keyPath}
	} else {
		var err error
		exe, err = h.exe(&env)
		if err != nil {
			return res, err
		}
		v, _, err := exeQuicGoVersion(exe)
		if err != nil {
			return res, fmt.Errorf("quic-go harness: %s: %w", exe, err)
		}
		res.Version = v
		res.Settings["build"] = "module-proxy"
		pre = []string{"__harness", "quic-go"}
	}
	res.Settings["cc"] = "reno (quic-go's only controller)"
	res.Settings["initial_packet_size"] = strconv.Itoa(InitialPacketSize)
	res.Params = map[string]run.Param{"S": {Value: InitialPacketSize, Source: "quic.Config.InitialPacketSize = 1280 set by the harness on both ends; quic-go's reset (connection.go MigratedPath) uses it as the max datagram size"}}
	size := env.Plan.BodyBytes
	res.BodyBytes = size
	res.Settings["body_bytes"] = strconv.FormatInt(size, 10)

	srvAddr := net.JoinHostPort(env.Net.ServerAddr().String(), strconv.Itoa(Port))
	var mu sync.Mutex
	listening := make(chan struct{})
	var once sync.Once
	srvArgs := append(append([]string{}, pre...), "server",
		"--listen", srvAddr, "--qlog", filepath.Join(env.Dir, "server.sqlog"),
		"--linger", "10s", "--keylog", env.KeyLog)
	srvCmd := env.Net.Command(ctx, env.Net.ServerNS(), exe, append(srvArgs, srvExtra...)...)
	if env.KeyLog != "" {
		res.KeyLogBy = "server"
	}
	srv, err := run.Start(run.ProcSpec{Role: "server", NS: env.Net.ServerNS(), Cmd: srvCmd, Dir: env.Dir,
		OnStdout: func(line string) {
			var ev Event
			if json.Unmarshal([]byte(line), &ev) != nil {
				return
			}
			switch ev.Ev {
			case "listening":
				once.Do(func() { close(listening) })
			case "peer_address":
				mu.Lock()
				res.ServerSaw = append(res.ServerSaw, run.AddrChange{At: parseT(ev.T), From: ev.From, To: ev.To, Evidence: "server Conn.RemoteAddr() changed: " + line})
				mu.Unlock()
			}
		}})
	if err != nil {
		return res, err
	}
	defer srv.Kill()
	select {
	case <-listening:
	case <-srv.Done():
		res.Processes = append(res.Processes, srv.Record())
		return res, fmt.Errorf("quic-go server exited before listening (exit %d); see %s", srv.Record().ExitCode, filepath.Join(env.Dir, "server.stderr"))
	case <-time.After(10 * time.Second):
		return res, errors.New("quic-go server did not report listening within 10 s")
	case <-ctx.Done():
		return res, ctx.Err()
	}

	var doneBytes int64
	cliCmd := env.Net.Command(ctx, env.Net.ClientNS(), exe, append(append([]string{}, pre...), "client",
		"--server", srvAddr,
		"--local-a", env.Net.ClientAddr(run.PathA).String(),
		"--local-b", env.Net.ClientAddr(run.PathB).String(),
		"--scenario", string(env.Scenario),
		"--size", strconv.FormatInt(size, 10),
		"--migrate-at", env.Plan.MigrateAt().String(),
		"--back-after", env.Plan.BackAfter().String(),
		"--qlog", filepath.Join(env.Dir, "client.sqlog"),
		"--timeout", env.Plan.ClientGiveUp.String())...)
	cli, err := run.Start(run.ProcSpec{Role: "client", NS: env.Net.ClientNS(), Cmd: cliCmd, Dir: env.Dir,
		OnStdout: func(line string) {
			var ev Event
			if json.Unmarshal([]byte(line), &ev) != nil {
				return
			}
			mu.Lock()
			defer mu.Unlock()
			switch ev.Ev {
			case "progress":
				if env.Progress != nil {
					env.Progress(ev.Bytes, ev.Total)
				}
				res.ReceivedBytes = ev.Bytes
			case "switched", "rebound":
				res.Moves = append(res.Moves, run.AddrChange{At: parseT(ev.T), From: ev.From, To: ev.To, Evidence: line})
			case "path_validated":
				res.Notes = append(res.Notes, fmt.Sprintf("client measured the path-validation round trip to %s as %.3f ms (Path.Probe)", ev.To, ev.RTTMS))
			case "done":
				doneBytes = ev.Bytes
			}
		}})
	if err != nil {
		return res, err
	}
	defer cli.Kill()
	crec := cli.Wait(env.Plan.ClientTimeout)
	srec := srv.Wait(20 * time.Second)
	res.Processes = []run.Process{srec, crec}
	res.ServerTrace, res.ClientTrace = "server.sqlog", "client.sqlog"
	mu.Lock()
	res.Completed = crec.ExitCode == 0 && doneBytes == size
	mu.Unlock()
	if ctx.Err() != nil {
		return res, ctx.Err()
	}
	return res, nil
}

func exeQuicGoVersion(exe string) (version, sum string, err error) {
	bi, err := buildinfo.ReadFile(exe)
	if err != nil {
		return "", "", fmt.Errorf("read Go build info: %w", err)
	}
	for _, d := range bi.Deps {
		if d.Path == "github.com/quic-go/quic-go" {
			if d.Replace != nil {
				return d.Replace.Version + " (replaced)", d.Replace.Sum, nil
			}
			return d.Version, d.Sum, nil
		}
	}
	return "", "", errors.New("built without github.com/quic-go/quic-go")
}

func parseT(s string) time.Time {
	t, _ := time.Parse(time.RFC3339Nano, s)
	return t
}

func vOrUnknown() string {
	if v, _ := QuicGoVersion(); v != "" {
		return v
	}
	return "(unknown version)"
}

func init() {
	run.Register("quic-go", func() run.Harness {
		h := New()
		h.log = func(s string) { fmt.Fprintln(os.Stderr, "migaudit: "+s) }
		return h
	})
}
