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

	"github.com/migaudit/migaudit/data"
	"github.com/migaudit/migaudit/harnesses/run"
)

// Port the server listens on inside the server namespace.
const Port = 4433

// Harness runs quic-go's client and server as migaudit's own hidden
// subcommands.
type Harness struct {
	// Exe is the migaudit executable to re-execute; empty means
	// RepEnv.SelfExe, then os.Executable.
	Exe string
}

// New returns the quic-go harness.
func New() *Harness { return &Harness{} }

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
	exe, err := h.exe(&env)
	if err != nil {
		return res, err
	}
	v, _, err := exeQuicGoVersion(exe)
	if err != nil {
		return res, fmt.Errorf("quic-go harness: %s: %w", exe, err)
	}
	res.Version = v
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
	srvCmd := env.Net.Command(ctx, env.Net.ServerNS(), exe, "__harness", "quic-go", "server",
		"--listen", srvAddr, "--qlog", filepath.Join(env.Dir, "server.sqlog"),
		"--linger", "10s", "--keylog", env.KeyLog)
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
	cliCmd := env.Net.Command(ctx, env.Net.ClientNS(), exe, "__harness", "quic-go", "client",
		"--server", srvAddr,
		"--local-a", env.Net.ClientAddr(run.PathA).String(),
		"--local-b", env.Net.ClientAddr(run.PathB).String(),
		"--scenario", string(env.Scenario),
		"--size", strconv.FormatInt(size, 10),
		"--migrate-at", env.Plan.MigrateAt().String(),
		"--back-after", env.Plan.BackAfter().String(),
		"--qlog", filepath.Join(env.Dir, "client.sqlog"),
		"--timeout", env.Plan.ClientGiveUp.String())
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

func init() { run.Register("quic-go", func() run.Harness { return New() }) }
