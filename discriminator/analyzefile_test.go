package discriminator

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/migaudit/migaudit/parsers"
)

// TestAnalyzeFileNamesTheTraceOnce: an error says "analyze PATH:" once,
// whichever of the two readings (streamed, in memory) produced it.
func TestAnalyzeFileNamesTheTraceOnce(t *testing.T) {
	p := filepath.Join(t.TempDir(), "rep.csv")
	if err := os.WriteFile(p, []byte("time_us,cwnd,bytes_in_flight,smoothed_rtt,min_rtt,latest_rtt\n1,12000,,,,\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, analyze := range map[string]func(string, parsers.Options, Options) (Analysis, error){
		"AnalyzeFile": AnalyzeFile, "analyzeInMemory": analyzeInMemory,
	} {
		_, err := analyze(p, parsers.Options{}, Options{})
		if err == nil {
			t.Fatalf("%s: a trace that names no implementation, without --impl, was analyzed", name)
		}
		if n := strings.Count(err.Error(), p); n != 1 || !strings.HasPrefix(err.Error(), "analyze "+p+": no implementation given") {
			t.Errorf("%s: %q names the trace %d times", name, err, n)
		}
	}
}
