// Package twosock runs one repetition of a C client and server built
// against a QUIC library that has no client migration API (lsquic, xquic):
// the client holds a socket on the path-A address and one on the path-B
// address, and at MigrateAt sends every datagram from the path-B socket and
// hands what arrives there to the library with that local address (with
// the path-A address for nat-rebind). The harness binaries share one stdout
// protocol,
//
//	[<prefix>_<role>] t_us=<µs since start> <VERB> unix_us=<wall µs> key=value …
//	[<prefix>_<role>] t_us=<µs since start> STATS|LOG …   (for the trace parser)
//
// with the verbs listening, start, connected, migrate, peer, local,
// progress, received, served, done and error, and the commands
//
//	BIN server --addr IP --port P --cert F --key F --cc CC --body N --timeout-ms N --keylog F
//	BIN client --addr IP --port P --local-a IP --local-b IP --cc CC --scenario S --migrate-at-ms N --timeout-ms N
//
// The server writes the key log; both stdouts (gzip) are the traces.
package twosock

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/migaudit/migaudit/harnesses/run"
)

// Port the server listens on inside the server namespace.
const Port = 4433

// Spec is what differs between the libraries.
type Spec struct {
	// Prefix of the stdout lines ("lsq", "xqc") and Name of the binary in
	// messages ("lsqharness").
	Prefix, Name string
	Bin          string
	// Version is what RepResult.Version records.
	Version  string
	Settings map[string]string
	// MigrationAPI describes, per scenario, how the client moves.
	MigrationAPI func(run.Scenario) string
}

// Capabilities: the client changes its IP address once; what cannot run
// says why (lib names the library's missing API).
func Capabilities(lib string, ccs []string, def string, aliases map[string]string, why string) run.Capabilities {
	return run.Capabilities{
		Scenarios: map[run.Scenario]string{
			run.Standard: "", run.StepDown: "", run.NATRebind: "", run.Lossy: "",
			run.PortRebind:  lib + " has no client API to change its local address; the harness moves the connection to the path-B socket, which changes the IP, not only the port",
			run.MigrateBack: "the harness moves the client once (to the path-B socket); a return to path A is not implemented",
		},
		DefaultCC: def, CCs: ccs, CCAliases: aliases, CCWhy: why,
	}
}

// Line is one harness line.
type Line struct {
	Verb string
	At   time.Time
	run.Fields
	Raw string
}

// ParseLine returns ok false for STATS and LOG lines and for anything
// that is not a "[<prefix>_" line.
func ParseLine(prefix, s string) (Line, bool, error) {
	if !strings.HasPrefix(s, "["+prefix+"_") {
		return Line{}, false, nil
	}
	f := strings.Fields(s)
	if len(f) < 3 || f[2] == "LOG" || f[2] == "STATS" {
		return Line{}, false, nil
	}
	l := Line{Verb: f[2], Fields: map[string]string{}, Raw: s}
	for _, kv := range f[3:] {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			continue // free text after the fields
		}
		l.Fields[k] = v
	}
	u, err := strconv.ParseInt(l.Fields["unix_us"], 10, 64)
	if err != nil {
		return Line{}, true, fmt.Errorf("harness line %q: unix_us %q is not a number", s, l.Fields["unix_us"])
	}
	l.At = time.UnixMicro(u).UTC()
	return l, true, nil
}

// RunRep runs one download with a migration.
func RunRep(ctx context.Context, env run.RepEnv, sp Spec) (run.RepResult, error) {
	res := run.RepResult{Settings: map[string]string{}, Version: sp.Version}
	for k, v := range sp.Settings {
		res.Settings[k] = v
	}
	cc := env.Plan.CC
	size := env.Plan.BodyBytes
	res.BodyBytes = size
	res.Settings["cc"] = cc
	res.Settings["body_bytes"] = strconv.FormatInt(size, 10)
	res.Settings["migrate_at"] = env.Plan.MigrateAt().String()
	res.Settings["migration_api"] = sp.MigrationAPI(env.Scenario)

	keyPath, certPath, err := run.WriteSelfSigned(env.Dir)
	if err != nil {
		return res, err
	}
	srvIP := env.Net.ServerAddr().String()
	timeout := env.Plan.ClientGiveUp

	var mu sync.Mutex
	var lineErrs []string
	listening := make(chan struct{})
	var lOnce sync.Once
	onLine := func(role string, handle func(Line)) func(string) {
		return func(s string) {
			l, ok, err := ParseLine(sp.Prefix, s)
			if !ok {
				return
			}
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				lineErrs = append(lineErrs, role+": "+err.Error())
				return
			}
			handle(l)
		}
	}
	var served int64 = -1
	if env.KeyLog != "" {
		res.KeyLogBy = "server"
	}
	srv, err := run.Start(run.ProcSpec{Role: "server", NS: env.Net.ServerNS(), Dir: env.Dir, GzipStdout: true,
		Cmd: env.Net.Command(ctx, env.Net.ServerNS(), sp.Bin, "server", "--addr", srvIP, "--port", strconv.Itoa(Port),
			"--cert", certPath, "--key", keyPath, "--cc", cc, "--body", strconv.FormatInt(size, 10),
			"--timeout-ms", strconv.FormatInt(timeout.Milliseconds(), 10), "--keylog", env.KeyLog),
		OnStdout: onLine("server", func(l Line) {
			switch l.Verb {
			case "listening":
				lOnce.Do(func() { close(listening) })
			case "peer":
				res.ServerSaw = append(res.ServerSaw, run.AddrChange{At: l.At, From: l.Fields["from"], To: l.Fields["to"],
					Evidence: sp.Name + " server: the connection's peer address changed: " + l.Raw})
			case "served":
				served = l.Int("bytes")
			case "error":
				res.Notes = append(res.Notes, "server: "+l.Raw)
			}
		})})
	if err != nil {
		return res, err
	}
	defer srv.Kill()
	if err := srv.AwaitReady(ctx, listening, sp.Name+" server", filepath.Join(env.Dir, "server.stderr"), 10*time.Second); err != nil {
		return res, err
	}

	dl := run.Download{Size: size, Progress: env.Progress}
	var migrated string
	cli, err := run.Start(run.ProcSpec{Role: "client", NS: env.Net.ClientNS(), Dir: env.Dir, GzipStdout: true,
		Cmd: env.Net.Command(ctx, env.Net.ClientNS(), sp.Bin, "client", "--addr", srvIP, "--port", strconv.Itoa(Port),
			"--local-a", env.Net.ClientAddr(run.PathA).String(), "--local-b", env.Net.ClientAddr(run.PathB).String(),
			"--cc", cc, "--scenario", string(env.Scenario),
			"--migrate-at-ms", strconv.FormatInt(env.Plan.MigrateAt().Milliseconds(), 10),
			"--timeout-ms", strconv.FormatInt(timeout.Milliseconds(), 10)),
		OnStdout: onLine("client", func(l Line) {
			switch l.Verb {
			case "start":
				res.Settings["client_sockets"] = fmt.Sprintf("A=%s B=%s", l.Fields["A"], l.Fields["B"])
			case "migrate":
				migrated = l.Raw
				res.Moves = append(res.Moves, run.AddrChange{At: l.At, From: l.Fields["from"], To: l.Fields["to"],
					Evidence: sp.Name + " client: " + l.Raw + "; from now on every datagram leaves from the socket bound to " + l.Fields["to"] + " and what arrives there is handed to the library"})
			case "local":
				evd := sp.Name + " client: " + l.Raw + "; the library's current path now has local address " + l.Fields["to"]
				if migrated != "" {
					evd += " (after " + migrated + ")"
				}
				res.Notes = append(res.Notes, evd)
			case "progress", "received", "done":
				dl.Line(l.Verb, l.Int)
			case "error":
				res.Notes = append(res.Notes, "client: "+l.Raw)
			}
		})})
	if err != nil {
		return res, err
	}
	defer cli.Kill()
	crec := cli.Wait(env.Plan.ClientTimeout)
	// The server exits when its connection closes (the client closes it
	// after the FIN).
	srec, note := srv.AwaitExit("server", 15*time.Second, syscall.SIGINT, 10*time.Second)
	if note != "" {
		res.Notes = append(res.Notes, note)
	}
	res.Processes = []run.Process{srec, crec}

	mu.Lock()
	dl.Record(&res, crec, served)
	res.Notes = append(res.Notes, lineErrs...)
	mu.Unlock()
	res.ServerTrace, res.ClientTrace = srec.Stdout, crec.Stdout
	if len(lineErrs) > 0 {
		return res, fmt.Errorf("%s printed malformed lines: %s", sp.Name, lineErrs[0])
	}
	if ctx.Err() != nil {
		return res, ctx.Err()
	}
	return res, nil
}
