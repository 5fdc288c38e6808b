package rules

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/migaudit/migaudit/audit"
	"github.com/migaudit/migaudit/audit/gitsrc"
	"github.com/migaudit/migaudit/audit/query"
	"github.com/migaudit/migaudit/data"
)

// The nine of issue 9 audited from local mirrors at their pins
// ($MIGAUDIT_MIRRORS). The expectations are what the source at each pin shows
// (see the rule files for the mechanisms); every cited position must open to
// the excerpt the finding quotes.

type n9Want struct {
	rule, role string
	q          audit.Question
	answer     audit.Answer
	counts     map[string]int
	evidence   []string // "path:line" that must be cited
	mech       []string // substrings of the mechanism or detail
}

var n9MirrorCases = []struct {
	impl   string
	wants  []n9Want
	consts map[audit.Question][]float64 // non-alternative values in order
}{
	{"quinn", []n9Want{
		{rule: "quinn/q1", role: query.Migrating, q: audit.Q1, answer: audit.No, evidence: []string{"quinn/src/connection.rs:1129"}},
		{rule: "quinn/q1", role: query.Observing, q: audit.Q1, answer: audit.Yes, counts: map[string]int{"port_only_exemption": 1, "migrate_call_sites": 1}, mech: []string{"IPv4 peers only"}},
		{rule: "quinn/q1", role: query.Both, q: audit.Q1, answer: audit.Asymmetric},
		{rule: "quinn/q1", q: audit.Q1, answer: audit.Inert, counts: map[string]int{"call_sites": 0, "implementations": 1}, mech: []string{"Connection::path_changed"}},
		{rule: "quinn/q2", role: query.Both, q: audit.Q2, answer: audit.No},
		{rule: "quinn/q3", role: query.Observing, q: audit.Q3, answer: audit.Split, counts: map[string]int{"aspects_excluded": 2}, evidence: []string{"quinn-proto/src/connection/paths.rs:183"}},
		{rule: "quinn/q3-rtt", q: audit.Q3, answer: audit.No, evidence: []string{"quinn-proto/src/connection/mod.rs:1521"}},
		{rule: "quinn/q3", role: query.Both, q: audit.Q3, answer: audit.RoleDependent},
	}, map[audit.Question][]float64{audit.ConstInitialWindow: {12000}, audit.ConstMinWindow: {2400}, audit.ConstLossFactor: {0.7}, audit.ConstDefaultRTT: {333000}}},
	{"neqo", []n9Want{
		{rule: "neqo/q1", role: query.Both, q: audit.Q1, answer: audit.ResetKeepsRTT, evidence: []string{"neqo-transport/src/path.rs:101", "neqo-transport/src/rtt.rs:82"}},
		{rule: "neqo/q2", role: query.Both, q: audit.Q2, answer: audit.No, mech: []string{"TODO(mt) consider recording an RTT measurement"}},
		{rule: "neqo/q3", role: query.Migrating, q: audit.Q3, answer: audit.Yes, counts: map[string]int{"aspects_excluded": 4}},
		{rule: "neqo/q3", role: query.Observing, q: audit.Q3, answer: audit.No, counts: map[string]int{"aspects_excluded": 0}},
		{rule: "neqo/q3", role: query.Both, q: audit.Q3, answer: audit.Asymmetric},
		{rule: "neqo/q3", q: audit.Q3, answer: "", counts: map[string]int{"call_sites": 2}, mech: []string{"Loss::migrate"}},
	}, map[audit.Question][]float64{audit.ConstInitialWindow: {12520}, audit.ConstMinWindow: {2504}, audit.ConstLossFactor: {0.7}, audit.ConstDefaultRTT: {100000}}},
	{"s2n-quic", []n9Want{
		{rule: "s2n-quic/q1", role: query.Observing, q: audit.Q1, answer: audit.Yes, counts: map[string]int{"port_only_exemption": 0, "handle_connection_migration_call_sites": 1}, mech: []string{"type=TODO"}},
		{rule: "s2n-quic/q1", role: query.Migrating, q: audit.Q1, answer: audit.No, counts: map[string]int{"client_migration_api_calls": 0}},
		{rule: "s2n-quic/q1", role: query.Both, q: audit.Q1, answer: audit.Asymmetric},
		{rule: "s2n-quic/q2", role: query.Both, q: audit.Q2, answer: audit.No},
		{rule: "s2n-quic/q3", role: query.Observing, q: audit.Q3, answer: audit.Yes, counts: map[string]int{"aspects_excluded": 4}, evidence: []string{"quic/s2n-quic-transport/src/recovery/manager.rs:588"}},
	}, map[audit.Question][]float64{audit.ConstInitialWindow: {12000}, audit.ConstMinWindow: {2400}, audit.ConstLossFactor: {0.7}, audit.ConstDefaultRTT: {333000}}},
	{"tquic", []n9Want{
		{rule: "tquic/q1", role: query.Migrating, q: audit.Q1, answer: audit.NotSupported, evidence: []string{"src/connection/connection.rs:3789"}},
		{rule: "tquic/q1", role: query.Observing, q: audit.Q1, answer: audit.NotSupported, counts: map[string]int{"set_active_true_call_sites": 1}},
		{rule: "tquic/q2", role: query.Both, q: audit.Q2, answer: audit.Inert, evidence: []string{"src/connection/path.rs:201"}},
		{rule: "tquic/q3", role: query.Both, q: audit.Q3, answer: audit.NA},
		{rule: "tquic/constants", q: audit.ConstLossFactor, answer: audit.NA},
	}, map[audit.Question][]float64{audit.ConstInitialWindow: {12000}, audit.ConstMinWindow: {2400}, audit.ConstDefaultRTT: {333000}}},
	{"lsquic", []n9Want{
		{rule: "lsquic/q1", role: query.Both, q: audit.Q1, answer: audit.Yes, counts: nil, evidence: []string{"src/liblsquic/lsquic_send_ctl.c:3972", "src/liblsquic/lsquic_full_conn_ietf.c:5046"}},
		{rule: "lsquic/q1", role: query.Observing, q: audit.Q1, answer: audit.Yes, counts: map[string]int{"port_only_exemption": 1, "switch_path_to_call_sites": 3}},
		{rule: "lsquic/q1", q: audit.Q1, answer: "", counts: map[string]int{"implementations": 3, "call_sites": 1}, mech: []string{"cci_reinit"}},
		{rule: "lsquic/q2", role: query.Both, q: audit.Q2, answer: audit.No},
		{rule: "lsquic/q3", role: query.Both, q: audit.Q3, answer: audit.No, counts: map[string]int{"aspects_excluded": 0}, evidence: []string{"src/liblsquic/lsquic_send_ctl.c:3950"}},
	}, map[audit.Question][]float64{audit.ConstInitialWindow: {46720, 46720}, audit.ConstMinWindow: {5840}, audit.ConstDefaultRTT: {333333}}},
	{"xquic", []n9Want{
		{rule: "xquic/q1", role: query.Migrating, q: audit.Q1, answer: audit.NotSupported, evidence: []string{"src/transport/xqc_conn.c:575"}},
		{rule: "xquic/q1", role: query.Observing, q: audit.Q1, answer: audit.No, evidence: []string{"src/transport/xqc_frame.c:1833"}},
		{rule: "xquic/q1", role: query.Both, q: audit.Q1, answer: audit.No},
		{rule: "xquic/q1", q: audit.Q1, answer: "", counts: map[string]int{"call_sites": 1, "migration_call_sites": 0}, mech: []string{"xqc_send_ctl_reset"}},
		{rule: "xquic/q2", role: query.Both, q: audit.Q2, answer: audit.No},
		{rule: "xquic/q3", role: query.Both, q: audit.Q3, answer: audit.No},
	}, map[audit.Question][]float64{audit.ConstInitialWindow: {14360}, audit.ConstMinWindow: {5744}, audit.ConstLossFactor: {718.0 / 1024}, audit.ConstDefaultRTT: {250000}}},
	{"mvfst", []n9Want{
		{rule: "mvfst/q1", role: query.Observing, q: audit.Q1, answer: audit.ResetKeepsRTT, counts: map[string]int{"disabled_by_default": 1, "nat_rebinding_ipv4_prefix_len": 24, "onConnectionMigration_call_sites": 1}},
		{rule: "mvfst/q1", role: query.Migrating, q: audit.Q1, answer: audit.ResetKeepsRTT, evidence: []string{"quic/client/QuicClientTransportLite.cpp:1973"}},
		{rule: "mvfst/q2", role: query.Both, q: audit.Q2, answer: audit.Yes, evidence: []string{"quic/state/SimpleFrameFunctions.cpp:200"}},
		{rule: "mvfst/q3", role: query.Both, q: audit.Q3, answer: audit.No, counts: map[string]int{"pathId_uses_in_ack_handlers": 0}},
	}, map[audit.Question][]float64{audit.ConstInitialWindow: {12320}, audit.ConstMinWindow: {2464}, audit.ConstLossFactor: {0.7}, audit.ConstDefaultRTT: {50000}}},
	{"aioquic", []n9Want{
		{rule: "aioquic/q1", role: query.Both, q: audit.Q1, answer: audit.No, counts: nil},
		{rule: "aioquic/q1", role: query.Observing, q: audit.Q1, answer: audit.No, counts: map[string]int{"recovery_resets_outside_init": 0, "QuicPacketRecovery_constructions": 1, "recovery_touched_on_promotion": 0}},
		{rule: "aioquic/q2", role: query.Both, q: audit.Q2, answer: audit.No, evidence: []string{"src/aioquic/quic/connection.py:2074"}},
		{rule: "aioquic/q3", role: query.Both, q: audit.Q3, answer: audit.No},
	}, map[audit.Question][]float64{audit.ConstInitialWindow: {12000}, audit.ConstMinWindow: {2400}, audit.ConstLossFactor: {0.5}, audit.ConstDefaultRTT: {100000}}},
	{"quicly", []n9Want{
		{rule: "quicly/q1", role: query.Observing, q: audit.Q1, answer: audit.ResetKeepsRTT, counts: map[string]int{"promote_path_call_sites": 1}, evidence: []string{"lib/quicly.c:2087", "lib/quicly.c:2077"}},
		{rule: "quicly/q1", role: query.Both, q: audit.Q1, answer: audit.RoleDependent},
		{rule: "quicly/q2", role: query.Both, q: audit.Q2, answer: audit.No, evidence: []string{"lib/quicly.c:2086"}},
		{rule: "quicly/q3", role: query.Observing, q: audit.Q3, answer: audit.Yes, counts: map[string]int{"aspects_excluded": 4}, evidence: []string{"lib/quicly.c:2096", "lib/quicly.c:4648", "lib/quicly.c:6280", "lib/quicly.c:6290"}},
	}, map[audit.Question][]float64{audit.ConstInitialWindow: {12800}, audit.ConstMinWindow: {2560}, audit.ConstLossFactor: {0.7}, audit.ConstDefaultRTT: {66000}}},
}

func n9Match(f audit.Finding, w n9Want) bool {
	return f.Rule == w.rule && f.Question == w.q && f.Role == w.role
}

func TestNineMirrorAudits(t *testing.T) {
	needMirrors(t)
	for _, tc := range n9MirrorCases {
		t.Run(tc.impl, func(t *testing.T) {
			im, err := data.Lookup(tc.impl)
			if err != nil {
				t.Fatal(err)
			}
			rep, err := audit.Audit(context.Background(), im, "", "")
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range rep.Findings {
				if f.Answer == audit.Unknown {
					t.Errorf("%s %s: UNKNOWN: %s %s", f.Rule, f.Question, f.Mechanism, f.Detail)
				}
			}
			for _, w := range tc.wants {
				var hit []audit.Finding
				for _, f := range rep.Findings {
					if n9Match(f, w) && f.Answer == w.answer && (len(w.mech) == 0 || strings.Contains(f.Mechanism+f.Detail, w.mech[0]) || w.answer != "") {
						hit = append(hit, f)
					}
				}
				if len(hit) == 0 {
					var have []string
					for _, f := range rep.Findings {
						if f.Rule == w.rule && f.Question == w.q {
							have = append(have, fmt.Sprintf("role=%q %s", f.Role, f.Answer))
						}
					}
					t.Errorf("%s %s role %q: want %s, have %v", w.rule, w.q, w.role, w.answer, have)
					continue
				}
				f := hit[0]
				for k, v := range w.counts {
					if f.Counts[k] != v {
						t.Errorf("%s %s role %q: count %s = %d, want %d", w.rule, w.q, w.role, k, f.Counts[k], v)
					}
				}
				text := f.Mechanism + " " + f.Detail
				for _, e := range f.Evidence {
					text += " " + e.Note + " " + e.Excerpt
				}
				for _, m := range w.mech {
					if !strings.Contains(text, m) {
						t.Errorf("%s %s role %q: %q not in mechanism/detail/evidence", w.rule, w.q, w.role, m)
					}
				}
				for _, pl := range w.evidence {
					found := false
					for _, e := range f.Evidence {
						if fmt.Sprintf("%s:%d", e.Path, e.Line) == pl {
							found = true
						}
					}
					if !found {
						t.Errorf("%s %s role %q: %s not cited", w.rule, w.q, w.role, pl)
					}
				}
			}
			// Constants: computed values, in order, non-alternative only.
			got := map[audit.Question][]float64{}
			for _, f := range rep.Findings {
				if f.Constant != nil && !f.Constant.Alternative {
					got[f.Question] = append(got[f.Question], f.Constant.Value)
				}
			}
			for q, want := range tc.consts {
				if fmt.Sprint(got[q]) != fmt.Sprint(want) {
					t.Errorf("%s: %v, want %v", q, got[q], want)
				}
			}
			// Every cited position opens to the quoted line at the pinned commit.
			repo, err := gitsrc.Locate(im.Upstream, "")
			if err != nil {
				t.Fatal(err)
			}
			snap, err := repo.At(im.Commit)
			if err != nil {
				t.Fatal(err)
			}
			lines := map[string][]string{}
			for _, f := range rep.Findings {
				for _, e := range f.Evidence {
					ls, ok := lines[e.Path]
					if !ok {
						b, err := snap.ReadFile(e.Path)
						if err != nil {
							t.Errorf("%s: cited %s: %v", f.Rule, e.Path, err)
							continue
						}
						ls = strings.Split(string(b), "\n")
						lines[e.Path] = ls
					}
					if e.Line < 1 || e.Line > len(ls) {
						t.Errorf("%s: %s:%d out of range", f.Rule, e.Path, e.Line)
						continue
					}
					line := strings.TrimSpace(ls[e.Line-1])
					if e.Excerpt == "" || !strings.HasPrefix(line, strings.TrimSuffix(e.Excerpt, "...")) {
						t.Errorf("%s: %s:%d is %q, excerpt %q", f.Rule, e.Path, e.Line, line, e.Excerpt)
					}
					if want := audit.Permalink(im.Upstream, im.Commit, e.Path, e.Line); e.Permalink != want {
						t.Errorf("%s: permalink %s, want %s", f.Rule, e.Permalink, want)
					}
				}
			}
		})
	}
}

// TestNineConstantsCommitted: data/constants/<name>.json and the constants in
// data/implementations.json say what the source says (regenerate with
// `migaudit audit --impl NAME --write-constants` and copy into the pin).
func TestNineConstantsCommitted(t *testing.T) {
	needMirrors(t)
	impls, err := data.Implementations()
	if err != nil {
		t.Fatal(err)
	}
	pins := map[string]data.Implementation{}
	for _, im := range impls {
		pins[im.Name] = im
	}
	for _, tc := range n9MirrorCases {
		im := pins[tc.impl]
		rep, err := audit.Audit(context.Background(), im, "", "")
		if err != nil {
			t.Fatal(err)
		}
		got, err := audit.ConstantsFrom(rep)
		if err != nil {
			t.Fatal(err)
		}
		stored, audited, err := data.ConstantsFor(tc.impl)
		if err != nil {
			t.Fatal(err)
		}
		gb, _ := json.Marshal(got)
		sb, _ := json.Marshal(stored)
		pb, _ := json.Marshal(im.Constants)
		if !audited || string(gb) != string(sb) {
			t.Errorf("%s: data/constants/%s.json is stale or missing:\n got %s\nfile %s", tc.impl, tc.impl, gb, sb)
		}
		if string(gb) != string(pb) {
			t.Errorf("%s: constants in data/implementations.json differ from the audit:\n got %s\npin  %s", tc.impl, gb, pb)
		}
	}
}
