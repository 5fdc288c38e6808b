// Package quiche runs quiche 0.18.0 live across a migration, through the
// Node-API binding npm ships as @matrixai/quic-linux-x64 2.0.9.
//
// The client and server are harness.js in this folder: they use quiche's own
// connection API from the binding (Config, Connection.connect/accept, recv,
// send, probePath, migrate, pathEventNext, pathStats) with node:dgram
// sockets bound to the testbed's addresses, so the harness — not a routing
// table — chooses the socket, and therefore the path, every datagram leaves
// from. Both ends poll pathStats() every 5 ms and write the timeline CSV
// (one row per path per sample, with the path's local and peer address) and
// every quiche path event as JSON lines. quiche keeps a Recovery per path, so
// these per-path statistics are the primary trace.
//
// The package implements run.Harness. Use New and hand the result to the
// runner (harnesses/run).
package quiche

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/migaudit/migaudit/data/atomicfile"
	"github.com/migaudit/migaudit/harnesses/run"
)

// MaxSendUDPPayload is the max_send_udp_payload_size the harness configures
// on both ends (quiche's default, stated explicitly so it is a setting the
// run records): quiche's Recovery sizes its initial window from it.
const MaxSendUDPPayload = 1200

// Options configures the harness.
type Options struct {
	// Dir is the harness folder (harness.js, package.json,
	// package-lock.json, node_modules). Empty: FindDir.
	Dir string
	// Node is the node executable. Empty: "node" on PATH.
	Node string
	// Log receives one-line notices (an npm install on first use).
	Log func(string)
}

// Harness is the quiche live harness.
type Harness struct {
	opt    Options
	mu     sync.Mutex
	dir    string
	node   string
	nodeV  string
	native run.Binary
}

// New returns the quiche harness.
func New(opt Options) *Harness { return &Harness{opt: opt} }

// Name is the implementation name data.Lookup knows.
func (h *Harness) Name() string { return "quiche" }

// Capabilities: all five scenarios; nat-rebind is emulated by the harness itself: the
// client's quiche is never told; its datagrams simply start leaving from the
// path-B socket and replies arriving there are handed to it as if addressed
// to path A, which is what a NAT rebinding looks like to the server.
func (h *Harness) Capabilities() run.Capabilities {
	sc := map[run.Scenario]string{}
	for _, s := range run.AllScenarios {
		sc[s] = ""
	}
	return run.Capabilities{Scenarios: sc, CCs: []string{"cubic", "reno", "bbr"}, DefaultCC: "cubic",
		CCWhy: "quiche " + QuicheVersion + "'s Config.setCcAlgorithmName accepts cubic, reno, bbr"}
}

// Check finds node (>= 20), installs the pinned binding on first use with
// `npm ci` and verifies its sha256.
func (h *Harness) Check(ctx context.Context) (run.Binaries, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	dir := h.opt.Dir
	if dir == "" {
		d, err := FindDir()
		if err != nil {
			return nil, err
		}
		dir = d
	}
	node := h.opt.Node
	if node == "" {
		node = "node"
	}
	np, err := exec.LookPath(node)
	if err != nil {
		return nil, fmt.Errorf("quiche harness: Node.js is not installed (%v); install Node.js %d+ and npm (apt-get install nodejs npm), then run: %s", err, MinNodeMajor, InstallCommand(dir))
	}
	if np, err = filepath.Abs(np); err != nil {
		return nil, err
	}
	v, err := NodeVersion(ctx, np)
	if err != nil {
		return nil, err
	}
	nb, err := run.FileBinary("node", np, v, "node --version")
	if err != nil {
		return nil, err
	}
	native, err := Install(ctx, dir, h.opt.Log)
	if err != nil {
		return nil, err
	}
	script := filepath.Join(dir, "harness.js")
	sum, err := run.SHA256File(script)
	if err != nil {
		return nil, fmt.Errorf("quiche harness: %w", err)
	}
	st, _ := os.Stat(script)
	h.dir, h.node, h.nodeV, h.native = dir, np, v, native
	return run.Binaries{
		native,
		nb,
		{Role: "harness script", Path: script, Size: st.Size(), SHA256: sum, Version: "migaudit harnesses/quiche/harness.js", VersionSource: "file in the harness folder"},
	}, nil
}

// clientLine is one JSON line the client prints on stdout.
type clientLine struct {
	Ready    bool   `json:"ready"`
	Progress *int64 `json:"progress"`
	Done     bool   `json:"done"`
	Complete bool   `json:"complete"`
}

// serverLine is the server's ready line.
type serverLine struct {
	Ready  bool   `json:"ready"`
	Listen string `json:"listen"`
}

// RunRep runs one download across the scenario's migration.
func (h *Harness) RunRep(ctx context.Context, env run.RepEnv) (run.RepResult, error) {
	res := run.RepResult{Settings: map[string]string{}}
	h.mu.Lock()
	ready := h.dir != ""
	h.mu.Unlock()
	if !ready {
		if _, err := h.Check(ctx); err != nil {
			return res, err
		}
	}
	// Re-verify the module right before running it.
	if _, err := VerifyNative(h.dir); err != nil {
		return res, err
	}
	cc := env.Plan.CC
	res.Version = "quiche " + QuicheVersion + " (" + Package + "@" + PackageVersion + ")"
	res.Settings["cc"] = cc
	res.Settings["max_send_udp_payload_size"] = strconv.Itoa(MaxSendUDPPayload)
	res.Settings["node"] = h.nodeV
	res.Settings["pacing"] = "off (Config.enablePacing(false)): the binding gives SendInfo.at to JavaScript as an opaque value, so the harness cannot hold a datagram until its release time, and quiche stamps time_sent with that release time — with pacing on, every RTT sample would be too small"
	res.Settings["timeline_sample_interval"] = "5ms"
	res.Settings["rtt_resolution"] = "1ms (the binding reports PathStats.rtt as Duration::as_millis)"
	res.Params = map[string]run.Param{"S": {Value: MaxSendUDPPayload,
		Source: fmt.Sprintf("Config.setMaxSendUdpPayloadSize(%d) set by the harness on both ends; quiche's Recovery takes max_datagram_size from it (cross-checked against pathStats pmtu after the run)", MaxSendUDPPayload)}}

	size := env.Plan.BodyBytes
	res.BodyBytes = size
	res.Settings["body_bytes"] = strconv.FormatInt(size, 10)

	localA := env.Net.ClientAddr(run.PathA)
	localB := env.Net.ClientAddr(run.PathB)
	mode := "migrate"
	switch env.Scenario {
	case run.PortRebind:
		localB = localA
	case run.NATRebind:
		mode = "nat-rebind"
	}
	back := env.Plan.BackAfter()
	res.Settings["client_mode"] = mode

	keyPEM, certPEM, err := run.SelfSigned("migaudit.invalid")
	if err != nil {
		return res, fmt.Errorf("quiche harness: %w", err)
	}
	pemEnv := append(os.Environ(),
		"MIGAUDIT_QUICHE_KEY_PEM="+string(keyPEM),
		"MIGAUDIT_QUICHE_CERT_PEM="+string(certPEM))
	script := filepath.Join(h.dir, "harness.js")

	var mu sync.Mutex
	listenCh := make(chan string, 1)
	srvCmd := env.Net.Command(ctx, env.Net.ServerNS(), h.node, script, "server",
		"--listen", hostPort(env.Net.ServerAddr(), 0),
		"--out", filepath.Join(env.Dir, "server"),
		"--cc", cc,
		"--max-send-udp-payload", strconv.Itoa(MaxSendUDPPayload),
		"--body-bytes", strconv.FormatInt(size, 10),
		"--deadline-ms", strconv.FormatInt(env.Plan.ClientTimeout.Milliseconds(), 10),
		"--keylog", env.KeyLog)
	if env.KeyLog != "" {
		res.KeyLogBy = "server"
	}
	srvCmd.Dir = h.dir
	srvCmd.Env = pemEnv
	srv, err := run.Start(run.ProcSpec{Role: "server", NS: env.Net.ServerNS(), Cmd: srvCmd, Dir: env.Dir,
		OnStdout: func(line string) {
			var l serverLine
			if json.Unmarshal([]byte(line), &l) == nil && l.Ready {
				select {
				case listenCh <- l.Listen:
				default:
				}
			}
		}})
	if err != nil {
		return res, err
	}
	defer srv.Kill()
	var listen string
	select {
	case listen = <-listenCh:
	case <-srv.Done():
		res.Processes = append(res.Processes, srv.Record())
		return res, fmt.Errorf("quiche server exited before listening (exit %d); see %s", srv.Record().ExitCode, filepath.Join(env.Dir, "server.stderr"))
	case <-time.After(15 * time.Second):
		return res, errors.New("quiche server did not report listening within 15 s")
	case <-ctx.Done():
		return res, ctx.Err()
	}

	var complete bool
	args := []string{script, "client",
		"--server", listen,
		"--local-a", hostPort(localA, 0),
		"--local-b", hostPort(localB, 0),
		"--mode", mode,
		"--out", filepath.Join(env.Dir, "client"),
		"--cc", cc,
		"--max-send-udp-payload", strconv.Itoa(MaxSendUDPPayload),
		"--migrate-at-ms", strconv.FormatInt(env.Plan.MigrateAt().Milliseconds(), 10),
		"--duration-ms", strconv.FormatInt(env.Plan.ClientGiveUp.Milliseconds(), 10)}
	if back > 0 {
		args = append(args, "--back-after-ms", strconv.FormatInt(back.Milliseconds(), 10))
	}
	cliCmd := env.Net.Command(ctx, env.Net.ClientNS(), h.node, args...)
	cliCmd.Dir = h.dir
	cli, err := run.Start(run.ProcSpec{Role: "client", NS: env.Net.ClientNS(), Cmd: cliCmd, Dir: env.Dir,
		OnStdout: func(line string) {
			var l clientLine
			if json.Unmarshal([]byte(line), &l) != nil {
				return
			}
			mu.Lock()
			defer mu.Unlock()
			if l.Progress != nil {
				res.ReceivedBytes = *l.Progress
				if env.Progress != nil {
					env.Progress(*l.Progress, size)
				}
			}
			if l.Done {
				complete = l.Complete
			}
		}})
	if err != nil {
		return res, err
	}
	defer cli.Kill()
	crec := cli.Wait(env.Plan.ClientTimeout)
	srec := srv.Wait(30 * time.Second)
	res.Processes = []run.Process{srec, crec}
	res.ServerTrace, res.ClientTrace = "server.csv", "client.csv"
	mu.Lock()
	res.Completed = complete && crec.ExitCode == 0
	mu.Unlock()
	if ctx.Err() != nil {
		return res, ctx.Err()
	}

	// What each side reported about the client's address.
	cm, cerr := ReadMeta(filepath.Join(env.Dir, "client.meta.json"))
	if cerr == nil {
		for _, m := range cm.Moves {
			res.Moves = append(res.Moves, run.AddrChange{At: unixUS(m.UnixUS), From: m.From, To: m.To, Evidence: m.Evidence})
		}
		if cm.BodyBytesReceived > res.ReceivedBytes {
			res.ReceivedBytes = cm.BodyBytesReceived
		}
	} else {
		res.Notes = append(res.Notes, "client meta: "+cerr.Error())
	}
	sm, serr := ReadMeta(filepath.Join(env.Dir, "server.meta.json"))
	if serr != nil {
		res.Notes = append(res.Notes, "server meta: "+serr.Error())
		return res, nil
	}
	evs, eerr := ReadEvents(filepath.Join(env.Dir, "server.events.jsonl"))
	if eerr != nil {
		res.Notes = append(res.Notes, eerr.Error())
		return res, nil
	}
	for _, e := range evs {
		if e.Event == "FailedValidation" {
			res.Notes = append(res.Notes, fmt.Sprintf("server: PathEvent::FailedValidation(%s, %s) at %d µs — quiche gave up validating the client's new address", e.Local, e.Peer, e.TimeUS))
		}
	}
	res.ServerSaw = ServerSaw(evs, sm.ReferenceUnixUS)
	if len(res.ServerSaw) == 0 {
		// quiche emits PeerMigrated only after validating the new address;
		// the server's own pathStats still show which path it made active.
		if rows, err := ReadCSV(filepath.Join(env.Dir, "server.csv")); err == nil {
			for _, sw := range ActiveSwitches(rows) {
				_, from, _ := strings.Cut(sw.Old, "|")
				_, to, _ := strings.Cut(sw.New, "|")
				res.ServerSaw = append(res.ServerSaw, run.AddrChange{At: unixUS(sm.ReferenceUnixUS + sw.AtUS), From: from, To: to,
					Evidence: fmt.Sprintf("quiche server pathStats: active path's peer now %s at %d µs (no PathEvent::PeerMigrated: the new address was not validated)", to, sw.AtUS)})
			}
			if len(res.ServerSaw) > 0 {
				res.Notes = append(res.Notes, "server: no PathEvent::PeerMigrated — quiche switched its active path to the new address without completing its validation")
			}
		}
	}
	for _, p := range sm.FinalPathStats {
		if p.PMTU != MaxSendUDPPayload {
			res.Notes = append(res.Notes, fmt.Sprintf("server path %s→%s reported pmtu %d, not the configured %d: check Params[S]", p.Local, p.Peer, p.PMTU, MaxSendUDPPayload))
		}
	}
	// The per-path figures this harness exists to measure.
	sum, err := Summarize(env.Dir, "server")
	if err != nil {
		res.Notes = append(res.Notes, "per-path summary: "+err.Error())
		return res, nil
	}
	paths := map[string]Summary{"server": sum}
	res.Notes = append(res.Notes, sum.Lines()...)
	if csum, err := Summarize(env.Dir, "client"); err == nil {
		paths["client"] = csum
		res.Notes = append(res.Notes, csum.Lines()...)
	} else {
		res.Notes = append(res.Notes, "client per-path summary: "+err.Error())
	}
	if err := writeJSONAtomic(filepath.Join(env.Dir, "quiche-paths.json"), paths); err != nil {
		return res, err
	}
	return res, nil
}

func hostPort(a netip.Addr, port int) string {
	return net.JoinHostPort(a.String(), strconv.Itoa(port))
}

func unixUS(us int64) time.Time { return time.UnixMicro(us) }

func writeJSONAtomic(path string, v any) error { return atomicfile.WriteJSON(path, v) }
