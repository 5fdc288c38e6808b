package parsers

import (
	"bytes"
	"strings"
	"testing"

	"github.com/migaudit/migaudit/parsers/timeline"
)

// TestPathEventNameOutlivesRecord: a path event without data keeps its
// name as Detail after the reader's buffer has moved on (it once kept a
// view of the buffer, overwritten by later records).
func TestPathEventNameOutlivesRecord(t *testing.T) {
	var b strings.Builder
	b.WriteString("\x1e{\"qlog_version\":\"0.3\",\"title\":\"quic-go\",\"trace\":{}}\n")
	b.WriteString("\x1e{\"time\":1,\"name\":\"transport:path_assigned\"}\n")
	for i := 0; i < 4000; i++ {
		b.WriteString("\x1e{\"time\":2,\"name\":\"recovery:metrics_updated\",\"data\":{\"congestion_window\":40960,\"bytes_in_flight\":1}}\n")
	}
	var c timeline.Collector
	if err := Parse("t.sqlog", bytes.NewReader([]byte(b.String())), Options{Format: FormatQuicGo}, &c); err != nil {
		t.Fatal(err)
	}
	if len(c.T.Events) == 0 || c.T.Events[0].Detail != "transport:path_assigned" {
		t.Fatalf("first event %+v, want the path event named transport:path_assigned", c.T.Events)
	}
}
