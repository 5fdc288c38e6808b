// Package run is the generic repetition runner behind `migaudit run`, and the
// contract every live harness implements.
//
// A harness (harnesses/quicgo, harnesses/ngtcp2, harnesses/quiche) knows how
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
//	    Scenarios() []Scenario
//	    RunRep(ctx context.Context, env RepEnv) (RepResult, error)
//	}
//
// Rules for a harness:
//
//   - Check verifies every executable it will run: present, non-empty,
//     version string as expected, and returns its sha256. Its error says
//     exactly what to install (`apt-get install ngtcp2-client ngtcp2-server`).
//   - RunRep writes everything into env.Dir (which exists, is empty and
//     belongs to this repetition alone) and nowhere else. It starts processes
//     only through env.Net.Command so they run inside the namespaces, saves
//     each process's stdout/stderr as files in env.Dir, and kills whatever it
//     started before returning (also when ctx is cancelled).
//   - It reports what it observed (RepResult), never a verdict: the runner
//     verifies and analyses.
//   - Formula parameters for the discriminator constants (RepResult.Params,
//     e.g. {"S": 1452} for ngtcp2's initial window) come from the settings
//     the harness actually ran with or from the trace, each with a source
//     string saying which; never typed in as the expected answer.
package run
