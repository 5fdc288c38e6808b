package query_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/migaudit/migaudit/audit"
	"github.com/migaudit/migaudit/audit/gitsrc"
	"github.com/migaudit/migaudit/audit/query"
	"github.com/migaudit/migaudit/data"
)

// The package doc's worked rule, verbatim (TestWorkedExampleIsTheDoc checks).

var exampleQ1 = &query.Rule{
	Name: "example/q1", Question: audit.Q1, Role: query.Both,
	Doc:   "Does a path switch build fresh congestion state, and does the client's rebind reset it?",
	Files: []string{"src/**/*.rs"},
	Needs: []query.Anchor{query.Method("Connection", "migrate"), query.Method("Connection", "rebind")},
	Decide: func(x *query.Code) ([]audit.Finding, error) {
		n := x.Needed() // the Needs, in order: absent ones never get here
		migrate, rebind := n[0], n[1]
		var obs, mig query.Verdict
		// Observing endpoint: migrate() must build a fresh PathData.
		if c, ok := x.CallIn(migrate, "new", "PathData::new"); ok {
			obs.Answer, obs.Mechanism = audit.Yes, "fresh PathData for the new remote"
			obs.Add(x.Evidence(c.Pos, "call", query.GuardText(c.Guards)))
		} else {
			obs.Answer, obs.Mechanism = audit.No, "migrate() keeps the PathData"
			obs.Add(x.Evidence(migrate.Pos, "definition", ""))
		}
		// Migrating endpoint: what does rebind() touch?
		if hit := x.Touches(rebind, "rtt", "congestion"); len(hit) > 0 {
			mig.Answer, mig.Mechanism = audit.Yes, "rebind resets "+strings.Join(hit, ", ")
		} else {
			mig.Answer, mig.Mechanism = audit.No, "rebind keeps RTT and congestion state"
		}
		mig.Count("rebind_call_sites", len(x.Calls("rebind")))
		out := x.PerRole(audit.Q1, x.RoleFinding(audit.Q1, query.Migrating, mig),
			x.RoleFinding(audit.Q1, query.Observing, obs))
		hook := x.Hook("Connection::path_changed", "public reset API",
			x.Set.Funcs("path_changed"), x.Calls("path_changed"))
		return append(out, hook), nil
	},
}

func init() { query.Register("example", exampleQ1) }

const exampleConn = `impl Connection {
    fn migrate(&mut self, remote: SocketAddr) {
        if remote.ip() != self.path.remote.ip() {
            self.path = PathData::new(remote, self.config.initial_rtt);
        }
    }
    fn rebind(&mut self) {
        self.events.push(Event::Rebind);
    }
    // path_changed() resets everything: nobody calls it
    pub fn path_changed(&mut self) { self.path.rtt = RttEstimator::new(INITIAL); }
}
fn poll(c: &mut Connection) { c.rebind(); }
`

func TestWorkedExample(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		want  []string // rule role answer [counts], per finding
	}{
		{"compliant observer, keeping client", map[string]string{"src/conn.rs": exampleConn, "src/tests/t.rs": "fn t(c: &mut Connection) { c.path_changed(); }\n"},
			[]string{"migrating NO rebind_call_sites=1", "observing YES", "both ASYMMETRIC", "INERT call_sites=0 implementations=1"}},
		{"rebind absent", map[string]string{"src/conn.rs": strings.Replace(exampleConn, "fn rebind(", "fn rebound(", 1)},
			[]string{"both UNKNOWN function Connection::rebind absent at"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			snap, err := gitsrc.CommitFiles(t.TempDir(), tt.files)
			if err != nil {
				t.Fatal(err)
			}
			fs, err := audit.Run(context.Background(), data.Implementation{Name: "example", Upstream: "https://example.invalid/o/example"}, snap)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, f := range fs {
				s := strings.TrimSpace(f.Role + " " + string(f.Answer))
				for _, k := range query.SortedKeys(f.Counts) {
					s += fmt.Sprintf(" %s=%d", k, f.Counts[k])
				}
				if f.Answer == audit.Unknown {
					s += " " + strings.TrimSuffix(f.Detail, " "+snap.Commit()[:12])
				}
				got = append(got, s)
			}
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("findings:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

// TestWorkedExampleIsTheDoc: the rule in the package doc is the one tested above.
func TestWorkedExampleIsTheDoc(t *testing.T) {
	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	var block []string
	in := false
	for _, l := range strings.Split(string(doc), "\n") {
		if strings.HasPrefix(l, "//\tvar exampleQ1") {
			in = true
		}
		if in {
			block = append(block, strings.TrimPrefix(strings.TrimPrefix(l, "//"), "\t"))
		}
		if in && strings.HasPrefix(l, "//\tfunc init()") {
			break
		}
	}
	if len(block) < 10 || len(block) >= 60 {
		t.Fatalf("worked rule in doc.go: %d lines, want a complete rule under 60", len(block))
	}
	if !strings.Contains(string(src), strings.Join(block, "\n")) {
		t.Errorf("the worked rule in doc.go differs from exampleQ1 in example_test.go")
	}
}
