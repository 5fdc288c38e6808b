package discriminator

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/migaudit/migaudit/parsers"
)

// referenceDir is ../shared/reference relative to the repository root.
func referenceDir(t *testing.T) string { return referenceDirB(t) }

func referenceDirB(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Skip("repository root (go.mod) not found")
		}
		dir = parent
	}
	ref := filepath.Join(dir, "..", "shared", "reference")
	if _, err := os.Stat(ref); err != nil {
		t.Skipf("reference data absent (%s): the study's traces are not on this machine", ref)
	}
	return ref
}

func analyzeRef(t *testing.T, rel string, opt Options) Analysis {
	t.Helper()
	p := filepath.Join(referenceDir(t), rel)
	if _, err := os.Stat(p); err != nil {
		t.Skipf("reference file absent: %s", p)
	}
	a, err := AnalyzeFile(p, parsers.Options{}, opt)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// firstOf returns the first event of kind in the analysis.
func firstOf(a Analysis, kind CollapseKind) (Collapse, bool) {
	for _, e := range a.Events {
		if e.Kind == kind {
			return e, true
		}
	}
	return Collapse{}, false
}

// TestReferenceTraces checks that analyze computes the study's live figures
// from its published traces.
func TestReferenceTraces(t *testing.T) {
	t.Run("quic-go: 0.7x backoff then RESET, two events", func(t *testing.T) {
		a := analyzeRef(t, "traces/quicgo_server.sqlog.gz", Options{Impl: "quic-go"})
		if a.WindowBeforeBytes != 280414 {
			t.Errorf("window before = %d, want the 280,414 B peak", a.WindowBeforeBytes)
		}
		i := indexOf(a, Reset)
		if i < 1 {
			t.Fatalf("no RESET preceded by an event: %s", kinds(a.Events))
		}
		b, r := a.Events[i-1], a.Events[i]
		if b.Kind != LossBackoff || b.PreviousBytes != 280414 || b.ValueBytes != 196289 {
			t.Errorf("event before the reset = %+v, want LOSS_BACKOFF 280414 → 196289", b)
		}
		if r.ValueBytes != 40960 || r.PreviousBytes != 196289 || r.Ambiguous {
			t.Errorf("reset = %+v, want 196289 → 40960", r)
		}
		if gap := r.AtUS - b.AtUS; gap < 1900 || gap > 2000 {
			t.Errorf("backoff → reset gap = %d µs, want 1.96 ms", gap)
		}
		if !a.ResetObserved || a.Q1.Answer != "YES" {
			t.Errorf("reset observed %v, Q1 %+v", a.ResetObserved, a.Q1)
		}
		if a.RTT.Attribution != "new-path" || a.Q3.Answer != "YES" {
			t.Errorf("RTT %+v, Q3 %+v; want the new path (40.4–40.8 ms)", a.RTT, a.Q3)
		}
	})
	t.Run("ngtcp2: RESET to 12,000 from 532,322", func(t *testing.T) {
		a := analyzeRef(t, "traces/ngtcp2_server.sqlog.gz", Options{Impl: "ngtcp2"})
		r, ok := firstOf(a, Reset)
		if !ok || r.ValueBytes != 12000 || r.PreviousBytes != 532322 || !a.ResetObserved {
			t.Errorf("reset = %+v (observed %v), want 532322 → 12000; events %s", r, a.ResetObserved, kinds(a.Events))
		}
		if len(a.Warnings) == 0 || !strings.Contains(strings.Join(a.Warnings, " "), "truncated") {
			t.Errorf("the truncated final record should surface as a warning: %v", a.Warnings)
		}
	})
	t.Run("quiche: RESET to 12,000 from 654,900", func(t *testing.T) {
		a := analyzeRef(t, "traces/quiche_server.sqlog.gz", Options{Impl: "quiche"})
		r, ok := firstOf(a, Reset)
		if !ok || r.ValueBytes != 12000 || r.PreviousBytes != 654900 || !a.ResetObserved {
			t.Errorf("reset = %+v (observed %v), want 654900 → 12000", r, a.ResetObserved)
		}
		if a.PathIDs || a.RTT.Attribution != "mixed" {
			t.Errorf("quiche's metrics carry no path id; RTT = %+v", a.RTT)
		}
	})
	t.Run("picoquic: no reset, below the initial window to the 2,848 B floor", func(t *testing.T) {
		a := analyzeRef(t, "traces/picoquic_server.qlog.gz", Options{Impl: "picoquic"})
		if a.ResetObserved {
			t.Errorf("reset observed: %+v", a.Events)
		}
		f, ok := firstOf(a, LossFloor)
		if !ok || f.ValueBytes != 2848 {
			t.Errorf("floor event = %+v, want 2848; events %s", f, kinds(a.Events))
		}
		if a.Migration.Kind != IPMigration || a.Q1.Answer != "NO" {
			t.Errorf("migration %+v, Q1 %+v; want an IP migration (10.0.1.1 → 10.0.3.1) and NO", a.Migration, a.Q1)
		}
		if a.RTT.Attribution != "old-path" {
			t.Errorf("RTT = %+v, want the old path", a.RTT)
		}
	})
	t.Run("msquic log: RESET to 12,200, RTT pinned at 333 ms", func(t *testing.T) {
		a := analyzeRef(t, "traces/msquic_server.log.gz", Options{Impl: "msquic"})
		checkMsquic(t, a)
	})
}

func checkMsquic(t *testing.T, a Analysis) {
	t.Helper()
	r, ok := firstOf(a, Reset)
	if !ok || r.ValueBytes != 12200 || !a.ResetObserved {
		t.Errorf("reset = %+v (observed %v), want → 12200; events %s", r, a.ResetObserved, kinds(a.Events))
	}
	if r.PreviousBytes < 1481740 || r.PreviousBytes > 1484569 {
		t.Errorf("reset from %d, want 1,481,740–1,484,569 B", r.PreviousBytes)
	}
	if a.RTT.Attribution != "default" || a.RTT.FirstAfterUS != 333000 || a.RTT.PinnedUS < 19_000_000 {
		t.Errorf("RTT = %+v, want pinned at 333 ms for the rest of the run (~20 s)", a.RTT)
	}
}

// TestReferenceTimelines runs the per-repetition CSV timelines; they have no
// path events, so the instant is given, as a user would with --migration-at.
// The instants are read off the data (see the README's analyze section).
func TestReferenceTimelines(t *testing.T) {
	at := func(s string) *time.Duration {
		d, err := time.ParseDuration(s)
		if err != nil {
			t.Fatal(err)
		}
		return &d
	}
	t.Run("csv without --migration-at: no migration, no guess", func(t *testing.T) {
		a := analyzeRef(t, "timelines/msquic/rep1_server.csv.gz", Options{Impl: "msquic"})
		if a.Migration.Found || a.ResetObserved || len(a.Events) != 0 || a.Q1.Answer != "UNKNOWN" {
			t.Errorf("got %+v", a.Migration)
		}
	})
	for _, rep := range []struct{ file, at string }{{"rep1_server.csv.gz", "5.529097s"}, {"rep2_server.csv.gz", "5.52s"}} {
		t.Run("msquic "+rep.file, func(t *testing.T) {
			checkMsquic(t, analyzeRef(t, "timelines/msquic/"+rep.file, Options{Impl: "msquic", MigrationAt: at(rep.at)}))
		})
	}
	for _, rep := range []struct{ file, at string }{{"rep1_server.csv.gz", "5.035s"}, {"rep2_server.csv.gz", "5.03s"}} {
		t.Run("quic-go "+rep.file, func(t *testing.T) {
			a := analyzeRef(t, "timelines/quicgo/"+rep.file, Options{Impl: "quic-go", MigrationAt: at(rep.at), NewPathRTT: 40 * time.Millisecond})
			i := indexOf(a, Reset)
			if i < 1 || a.Events[i-1].Kind != LossBackoff || a.Events[i].ValueBytes != 40960 {
				t.Fatalf("want LOSS_BACKOFF then RESET to 40960, got %+v", a.Events)
			}
			b := a.Events[i-1]
			if b.PreviousBytes < 274025 || b.PreviousBytes > 280414 || b.ValueBytes < 191817 || b.ValueBytes > 196289 {
				t.Errorf("backoff %d → %d outside the study's 274,025–280,414 → 191,817–196,289", b.PreviousBytes, b.ValueBytes)
			}
			if gap := a.Events[i].AtUS - b.AtUS; gap < 440 || gap > 1960 {
				t.Errorf("gap %d µs outside 0.44–1.96 ms", gap)
			}
			if a.RTT.Attribution != "new-path" {
				t.Errorf("RTT %+v", a.RTT)
			}
		})
	}
	for _, rep := range []string{"rep1_server.csv", "rep2_server.csv"} {
		t.Run("picoquic "+rep, func(t *testing.T) {
			a := analyzeRef(t, "timelines/picoquic/"+rep, Options{Impl: "picoquic", MigrationAt: at("5s")})
			if a.ResetObserved {
				t.Errorf("reset observed: %+v", a.Events)
			}
			if a.WindowAfterBytes < 2848 || a.WindowAfterBytes > 8608 || a.WindowAfterBytes >= 14240 {
				t.Errorf("window after %d, want below the initial window, 2,848–8,608 B", a.WindowAfterBytes)
			}
			if a.WindowBeforeBytes < 86904 || a.WindowBeforeBytes > 89352 {
				t.Errorf("window before %d, want 86,904–89,352 B", a.WindowBeforeBytes)
			}
		})
	}
}

func indexOf(a Analysis, kind CollapseKind) int {
	for i, e := range a.Events {
		if e.Kind == kind && !e.Ambiguous {
			return i
		}
	}
	return -1
}

func TestAnalyzeFileErrors(t *testing.T) {
	p := filepath.Join(t.TempDir(), "broken.sqlog")
	if err := os.WriteFile(p, []byte("\x1e{\"qlog_version\":\"0.3\"}\n\x1e{not json at all\n\x1e{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := AnalyzeFile(p, parsers.Options{}, Options{Impl: "quic-go"})
	if err == nil || !strings.Contains(err.Error(), "broken.sqlog") {
		t.Errorf("err = %v, want one naming the file", err)
	}
	_, err = AnalyzeFile(filepath.Join(t.TempDir(), "absent"), parsers.Options{}, Options{Impl: "quic-go"})
	if err == nil {
		t.Error("absent file: no error")
	}
}
