package render

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/migaudit/migaudit/discriminator"
)

func writeTrace(t *testing.T, path string, cwnd int) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	csv := "time_us,cwnd,smoothed_rtt\n1000,500000,40000\n5000000,12200,40000\n6000000," + string(rune('0'+cwnd%10)) + "4000,40000\n"
	if err := os.WriteFile(path, []byte(csv), 0o644); err != nil {
		t.Fatal(err)
	}
}

// writeTraces writes n small timeline CSVs into dir and returns their paths.
func writeTraces(t *testing.T, dir string, n int) []string {
	t.Helper()
	var traces []string
	for i := range n {
		p := filepath.Join(dir, "t"+string(rune('a'+i))+".csv")
		writeTrace(t, p, i)
		traces = append(traces, p)
	}
	return traces
}

// TestRunOrder: whatever the number of workers, the analyses come out in
// the order of the arguments, and the error is the first trace's (by
// argument order) that fails.
func TestRunOrder(t *testing.T) {
	dir := t.TempDir()
	traces := writeTraces(t, dir, 7)
	at := 5 * time.Second
	opt := discriminator.Options{Impl: "msquic", MigrationAt: &at}
	var want []byte
	for _, workers := range []int{1, 2, 4} {
		var out bytes.Buffer
		if err := Run(&out, RunOptions{Traces: traces, Format: "json", Analysis: opt, Workers: workers}); err != nil {
			t.Fatal(err)
		}
		var as []discriminator.Analysis
		if err := json.Unmarshal(out.Bytes(), &as); err != nil {
			t.Fatal(err)
		}
		for i, a := range as {
			if a.Trace != traces[i] {
				t.Fatalf("%d workers: analysis %d is of %s, want %s", workers, i, a.Trace, traces[i])
			}
		}
		if want == nil {
			want = out.Bytes()
		} else if !bytes.Equal(out.Bytes(), want) {
			t.Errorf("%d workers: output differs from one worker's", workers)
		}
	}
	bad := append([]string(nil), traces...)
	bad[2] = filepath.Join(dir, "absent.csv")
	if err := os.WriteFile(filepath.Join(dir, "garbage.csv"), []byte("time_us,cwnd\nx,1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	bad[5] = filepath.Join(dir, "garbage.csv")
	for _, workers := range []int{1, 2, 4} {
		err := Run(&bytes.Buffer{}, RunOptions{Traces: bad, Format: "json", Analysis: opt, Workers: workers})
		if err == nil || !strings.Contains(err.Error(), "absent.csv") {
			t.Errorf("%d workers: err = %v, want the first failing trace (absent.csv)", workers, err)
		}
	}
}

// TestGlob: a pattern the shell left alone is expanded, ** spanning
// directories, in sorted order; a pattern matching nothing is an error.
func TestGlob(t *testing.T) {
	dir := t.TempDir()
	for i, rel := range []string{"server.csv", "a/server1.csv", "a/b/server2.csv", "a/b/client.csv", "c/server3.txt"} {
		writeTrace(t, filepath.Join(dir, rel), i)
	}
	got, err := expandTraces([]string{filepath.Join(dir, "**", "server*.csv")})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{filepath.Join(dir, "a/b/server2.csv"), filepath.Join(dir, "a/server1.csv"), filepath.Join(dir, "server.csv")}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("got %v, want %v", got, want)
	}
	if _, err := expandTraces([]string{filepath.Join(dir, "**", "none*.gz")}); err == nil || !strings.Contains(err.Error(), "matches no file") {
		t.Errorf("err = %v, want one saying the pattern matches no file", err)
	}
	plain := filepath.Join(dir, "absent.csv")
	if got, err := expandTraces([]string{plain}); err != nil || len(got) != 1 || got[0] != plain {
		t.Errorf("a plain path must pass through (and fail later, naming it): %v %v", got, err)
	}
}
