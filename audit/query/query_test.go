package query

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/migaudit/migaudit/audit"
	"github.com/migaudit/migaudit/audit/gitsrc"
	"github.com/migaudit/migaudit/audit/syntax"
	"github.com/migaudit/migaudit/data"
)

// TestTranslate: source expressions of the nine become data.Formula
// expressions that evaluate to the right number.
func TestTranslate(t *testing.T) {
	consts := map[string]string{"BASE": "1200", "CWND_INITIAL_PKTS": "10", "TCP_MSS": "1460", "MSS": "(1420 + 16)", "V4": "1252", "V6": "1232"}
	resolve := func(name string) (string, error) {
		switch name {
		case "mtu", "max_datagram_size", "current_mtu":
			return "S", nil
		}
		if v, ok := consts[name]; ok {
			return Translate(v, nil)
		}
		return "", os.ErrNotExist
	}
	tests := []struct {
		src  string
		want string
		val  float64
	}{
		{"14720.clamp(2 * BASE, 10 * BASE)", "min(max(14720, 2*1200), 10*1200)", 12000},                                               // quinn
		{"const_min(CWND_INITIAL_PKTS * mtu, const_max(2 * mtu, 14_720))", "min(10*S, max(2*S, 14720))", 12000},                       // neqo
		{"min(\n 10 * max_datagram_size as u32,\n max(14720, 2 * max_datagram_size as u32),\n)", "min(10*S, max(14720, 2*S))", 12000}, // s2n-quic, trailing comma
		{"conf.initial_congestion_window.saturating_mul(max_datagram_size)", "", 0},                                                   // unknown setting -> error
		{"self.max_datagram_size() * 2", "S*2", 2400},                                                                                 // getter
		{"2.0 * self.max_datagram_size as f32", "2.0*S", 2400},                                                                        // cast
		{"(uint64_t)max_packets * max_datagram_size", "", 0},                                                                          // unknown ident
		{"cubic->cu_cwnd * 0 + 32 * TCP_MSS", "", 0},                                                                                  // cu_cwnd unknown
		{"32 * TCP_MSS", "32*1460", 46720},                                                                                            // lsquic
		{"(10 * MSS)", "(10*(1420+16))", 14360},                                                                                       // xquic nested macro
		{"Duration::from_millis(333)", "333*1000", 333000},                                                                            // Rust Duration -> µs
		{"50000us", "(50000)", 50000},                                                                                                 // C++ chrono literal
		{"(V4 < V6 ? V4 : V6)", "(min(1252, 1232))", 1232},                                                                            // mvfst constexpr min
		{"10_u64", "10", 10},            // Rust suffix
		{"0.7f", "0.7", 0.7},            // C float suffix
		{"250000ull", "250000", 250000}, // C integer suffix
	}
	for _, tt := range tests {
		got, err := Translate(tt.src, resolve)
		if tt.want == "" {
			if err == nil {
				t.Errorf("%q: translated to %q, want an error", tt.src, got)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tt.src, err)
			continue
		}
		if got != tt.want {
			t.Errorf("%q: got %q, want %q", tt.src, got, tt.want)
		}
		v, _, err := data.Formula{Expr: got, Params: map[string]float64{"S": 1200}}.Eval(nil)
		if err != nil || v != tt.val {
			t.Errorf("%q -> %q = %v (%v), want %v", tt.src, got, v, err, tt.val)
		}
	}
}

func TestCombine(t *testing.T) {
	tests := []struct{ mig, obs, want audit.Answer }{
		{audit.Yes, audit.Yes, audit.Yes},
		{audit.No, audit.Yes, audit.Asymmetric},
		{audit.Yes, audit.ResetKeepsRTT, audit.Asymmetric},
		{audit.No, audit.ResetKeepsRTT, audit.RoleDependent},
		{audit.No, audit.Split, audit.RoleDependent},
		{audit.NotSupported, audit.No, audit.No},
		{audit.NA, audit.No, audit.No},
		{audit.NotSupported, audit.NotSupported, audit.NotSupported},
		{audit.Yes, audit.NA, audit.Yes},
		{audit.NA, audit.NotSupported, audit.NotSupported},
		{audit.Unknown, audit.Yes, audit.Unknown},
		{audit.No, audit.Unknown, audit.Unknown},
		{audit.Unknown, audit.Unknown, audit.Unknown},
		{audit.Unknown, audit.NA, audit.Unknown},
	}
	for _, tt := range tests {
		if got := Combine(tt.mig, tt.obs); got != tt.want {
			t.Errorf("combine(%s, %s) = %s, want %s", tt.mig, tt.obs, got, tt.want)
		}
	}
	// More than two roles (client, server, migrating, observing): the same
	// rule over the set.
	sets := []struct {
		roles []audit.Answer
		want  audit.Answer
	}{
		{[]audit.Answer{audit.Yes, audit.No, audit.No}, audit.Asymmetric},
		{[]audit.Answer{audit.No, audit.No, audit.Yes}, audit.Asymmetric},
		{[]audit.Answer{audit.No, audit.Split, audit.NA}, audit.RoleDependent},
		{[]audit.Answer{audit.Yes, audit.NA, audit.Yes, audit.NotSupported}, audit.Yes},
		{[]audit.Answer{audit.No}, audit.No},
		{nil, ""},
	}
	for _, tt := range sets {
		if got := Combine(tt.roles...); got != tt.want {
			t.Errorf("combine%v = %s, want %s", tt.roles, got, tt.want)
		}
	}
}

// The structural tricks the rules rely on, in a small git repository
// built with go-git: early-return guards found from the syntax tree, a match
// arm chosen over an or-pattern that lists the same variant, a dead hook whose
// name appears only in a comment, a string and a test file, a C function the
// grammar cannot delimit, Python module constants, a C++ member default.
var trapFiles = map[string]string{
	"src/paths.rs": `impl PathData {
    pub(super) fn remove_in_flight(&mut self, packet: &SentPacket) -> bool {
        if packet.path_generation != self.generation {
            return false;
        }
        self.in_flight.remove(packet);
        true
    }
    // path_changed() would reset everything; see docs
    pub fn path_changed(&mut self) { self.rtt = RttEstimator::new(INITIAL); }
}
fn dispatch(frame: Frame) {
    let s = "path_changed";
    match frame {
        Frame::Padding | Frame::PathResponse(_) => {}
        Frame::PathResponse(token) => {
            self.validated = true;
        }
        _ => {}
    }
}
`,
	"src/tests/calls.rs": `fn t() { conn.path_changed(); }
`,
	"lib/ctl.c": `#define INIT 32
int
broken_fn (struct ctl *ctl)
{
    int x = 0;
#if __GNUC__
    do {
#endif
    x = helper(ctl);
#if __GNUC__
    } while (0);
#endif
    return x;
}
`,
	"py/base.py": `K_INITIAL_WINDOW = 10
SMALLEST = 1200


class Config:
    max_datagram_size: int = SMALLEST
`,
	"cpp/Settings.h": `struct TransportSettings {
  // (Server only) Whether to allow the client to migrate
  bool disableMigration{true};
};
`,
}

func trapRepo(t *testing.T) (*gitsrc.Snapshot, string) {
	t.Helper()
	snap, err := gitsrc.CommitFiles(t.TempDir(), trapFiles)
	if err != nil {
		t.Fatal(err)
	}
	return snap, snap.Commit()
}

func TestStructuralTraps(t *testing.T) {
	snap, commit := trapRepo(t)
	im := data.Implementation{Name: "n9-trap-test", Upstream: "https://example.invalid/o/traps", Commit: commit}
	var got = map[string]bool{}
	var counts = map[string]int{}
	Register(im.Name, &Rule{Name: "n9-trap-test/all", Question: audit.Q1, Files: []string{"src/**/*.rs", "lib/*.c", "py/*.py"},
		Needs: []Anchor{FuncIn("src/paths.rs", "remove_in_flight", "PathData")},
		Decide: func(x *Code) ([]audit.Finding, error) {
			// Test files are dropped, so the only "call" of path_changed (in src/tests) does not count.
			for _, f := range x.Set {
				if strings.Contains(f.Path, "tests/") {
					t.Errorf("test file %s kept", f.Path)
				}
			}
			rif := x.Def(FuncIn("src/paths.rs", "remove_in_flight", "PathData"))
			c, ok := x.CondIn(rif, "path_generation", "generation")
			got["early-return guard"] = ok && c.Line == 3
			h := x.Hook("path_changed", "", x.Set.Funcs("path_changed"), x.Calls("path_changed"))
			counts["hook_calls"] = h.Counts["call_sites"]
			got["dead hook is INERT"] = h.Answer == audit.Inert && h.Counts["implementations"] == 1
			disp := x.Opt(FuncIn("src/paths.rs", "dispatch", ""))
			arms := x.ArmsWith(disp, "Frame::PathResponse")
			got["or-pattern arm skipped"] = len(arms) == 1 && arms[0].Line == 16
			if len(arms) == 1 {
				arm := syntax.Def{Pos: arms[0]}
				as := x.AssignsIn(arm)
				got["arm assignments"] = len(as) == 1 && as[0].Target == "validated"
			}
			bf, ok := CFuncByText(x.File("lib/ctl.c"), "broken_fn")
			got["C function by text"] = ok && bf.Line == 3 && bf.EndLine == 14
			d, ok := x.Find(FuncIn("lib/ctl.c", "broken_fn", ""))
			got["C call inside"] = ok && len(x.CallsIn(d, "helper")) == 1
			iw, ok := x.Const("K_INITIAL_WINDOW")
			got["python module const"] = ok && iw.Value == "10"
			v, err := x.Resolver(map[string]Param{"max_datagram_size": {"S", 1200}}).Eval("K_INITIAL_WINDOW * max_datagram_size")
			got["python formula"] = err == nil && v == 12000
			val, pos, ok := x.BraceDefault("cpp/Settings.h", "disableMigration")
			got["C++ member default"] = ok && val == "true" && pos.Line == 3
			return nil, nil
		}})
	if _, err := audit.Run(context.Background(), im, snap); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"early-return guard", "dead hook is INERT", "or-pattern arm skipped", "arm assignments", "C function by text", "C call inside", "python module const", "python formula", "C++ member default"} {
		if !got[k] {
			t.Errorf("%s: not established", k)
		}
	}
	if counts["hook_calls"] != 0 {
		t.Errorf("path_changed: %d call sites counted, want 0 (comment, string and test-file mentions are not calls)", counts["hook_calls"])
	}
}
