// Package run is the generic repetition runner behind `migaudit run`, and the
// contract every live harness implements.
//
// A harness (harnesses/quicgo, ngtcp2, quiche, picoquic, msquic) knows how
// to start one implementation's client and server in the testbed's network
// namespaces and make the client migrate; it knows nothing about repetitions,
// directories, calibration, verification or verdicts. The runner knows
// nothing about any implementation: it brings the testbed up, creates one
// never-reused directory per repetition, calls RunRep, verifies from the
// server's trace that the migration was what the scenario claims, parses the
// traces with parsers/, runs the discriminator and writes the manifest and
// analysis. When the network is a FidelityMeter (the testbed is), it also
// writes the emulator's fidelity record and counts the repetition only if
// the emulation held inside the verdict's window (JudgeFidelity); a
// repetition the host spoiled is moved to spoiled/ and re-run
// (Options.Retries).
//
// The interface is deliberately narrow and stable:
//
//	type Harness interface {
//	    Name() string
//	    Check(ctx context.Context) (Binaries, error)
//	    Capabilities() Capabilities
//	    RunRep(ctx context.Context, env RepEnv) (RepResult, error)
//	}
//
// What the runner does, so that no harness does it:
//
//   - It refuses, before the testbed comes up, a scenario the harness's
//     Capabilities does not support (naming the reason it gives) and a --cc
//     it cannot select (naming the ones it can).
//   - It plans each repetition (PlanRep → RepEnv.Plan): the body size
//     (90 % of what the slower path carries in --transfer), the client
//     timeout (4×transfer + 90 s) and the deadline to hand a client 30 s
//     before it, the resolved congestion controller in the implementation's
//     own name, the scenario's address changes as Steps (when, to which
//     path, what kind of move) and the key-log path.
//   - It owns the routing: the client's default route is on path A when
//     RunRep is called and is put back there afterwards. A harness whose
//     client follows the routing table to migrate (ngtcp2) flips it to path
//     B itself, at the time its client needs it.
//   - It compresses the traces, parses them with parsers/, verifies the
//     migration, measures the emulation's fidelity, describes the key log
//     and judges the repetition (Judge).
//
// A new harness's RunRep therefore starts at "start the server".
//
// Rules for a harness:
//
//   - Check verifies every executable it will run: present, non-empty,
//     version string as expected, and returns its sha256. Its error says
//     exactly what to install (`apt-get install ngtcp2-client ngtcp2-server`).
//   - RunRep runs env.Plan: it serves Plan.BodyBytes, selects Plan.CC,
//     performs Plan.Steps and waits at most Plan.ClientTimeout for the
//     client. It writes everything into env.Dir (which exists, is empty and
//     belongs to this repetition alone) and nowhere else. It starts
//     processes only through env.Net.Command so they run inside the
//     namespaces, saves each process's stdout/stderr as files in env.Dir,
//     and kills whatever it started before returning (also when ctx is
//     cancelled).
//   - An endpoint (the server, where possible) writes the connection's TLS
//     secrets in the NSS key log format to env.KeyLog (= Plan.KeyLog), and
//     RepResult.KeyLogBy names it; the runner records the file in the
//     manifest's "keylog" entry so the wire capture can be decrypted.
//   - It reports what it observed (RepResult), never a verdict: the runner
//     verifies and analyses.
//   - Formula parameters for the discriminator constants (RepResult.Params,
//     e.g. {"S": 1452} for ngtcp2's initial window) come from the settings
//     the harness actually ran with or from the trace, each with a source
//     string saying which; never typed in as the expected answer.
package run
