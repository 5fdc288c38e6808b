package lossresp

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/migaudit/migaudit/audit/gitsrc"
	"github.com/migaudit/migaudit/data"
)

var update = flag.Bool("update", false, "rewrite data/constants/lossresponse/*.json from the mirrors")

// TestLive extracts every Spec from the upstream source at the version that
// runs (mirrors in $MIGAUDIT_MIRRORS) and compares with the committed data;
// -update rewrites the data.
func TestLive(t *testing.T) {
	if os.Getenv(gitsrc.MirrorsEnv) == "" {
		t.Skip("no $MIGAUDIT_MIRRORS: the upstream sources are not here (TestExtract covers the rules offline)")
	}
	byImpl, models := map[string][]data.LossResponse{}, map[string][]data.LossResponse{}
	var order []string
	for _, s := range Specs {
		repo, err := gitsrc.Locate(s.Upstream, "")
		if err != nil {
			t.Fatalf("%s: %v", s.Impl, err)
		}
		snap, err := repo.At(s.Ref)
		if err != nil {
			t.Fatalf("%s at %s: %v", s.Impl, s.Ref, err)
		}
		r, err := Extract(s, snap)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := byImpl[s.Impl]; !ok {
			order = append(order, s.Impl)
		}
		if r.Arithmetic == "bbr-model" {
			models[s.Impl] = append(models[s.Impl], r)
		} else {
			byImpl[s.Impl] = append(byImpl[s.Impl], r)
		}
		f, err := Finding(s, r, snap)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %s — %s", f.Rule, f.Evidence[0].Permalink, f.Evidence[0].Excerpt)
	}
	sort.Strings(order)
	for _, impl := range order {
		b, err := json.MarshalIndent(data.LossResponses{Implementation: impl, Responses: byImpl[impl], Models: models[impl]}, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		b = append(b, '\n')
		path := filepath.Join("..", "..", "data", "constants", "lossresponse", impl+".json")
		if *update {
			if err := os.WriteFile(path, b, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		have, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (run with -update)", err)
		}
		if !bytes.Equal(have, b) {
			t.Errorf("%s differs from the source read now (go test ./audit/lossresp -update):\n%s", path, b)
		}
	}
}

// TestExtract runs the rules over small trees: each branch of Extract.
func TestExtract(t *testing.T) {
	ngtcp2 := func(body string) map[string]string {
		return map[string]string{
			"lib/ngtcp2_cc.h": "#define NGTCP2_LOSS_REDUCTION_FACTOR_BITS 1\n",
			"lib/ngtcp2_cc.c": body,
		}
	}
	cubic, reno := Specs[3], Specs[4]
	if cubic.Impl != "ngtcp2" || cubic.Algorithm != "cubic" || reno.Algorithm != "reno" {
		t.Fatalf("Specs order changed: %s %s, %s", cubic.Impl, cubic.Algorithm, reno.Algorithm)
	}
	const cubicBody = "void other(void) {\n  cstat->ssthresh = cstat->cwnd * 1 / 2;\n}\n" +
		"void ngtcp2_cc_cubic_cc_congestion_event(ngtcp2_cc *ccx,\n" +
		"  min_cwnd = 2 * cstat->max_tx_udp_payload_size;\n" +
		"  cstat->ssthresh = cstat->cwnd * 7 / 10;\n"
	type extractCase struct {
		name     string
		spec     Spec
		files    map[string]string
		num, den int64
		line     int
		floor    string
		err      string
	}
	tests := []extractCase{
		{name: "cubic after its anchor, not the earlier line", spec: cubic, files: ngtcp2(cubicBody), num: 7, den: 10, line: 6, floor: "2*S"},
		{name: "reno shift resolved through the header", spec: reno, files: ngtcp2("void ngtcp2_cc_reno_cc_congestion_event(x) {\n  cstat->cwnd >>= NGTCP2_LOSS_REDUCTION_FACTOR_BITS;\n  min_cwnd = 2 * cstat->max_tx_udp_payload_size;\n"),
			num: 1, den: 2, line: 2, floor: "2*S"},
		{name: "anchor renamed", spec: cubic, files: ngtcp2(strings.ReplaceAll(cubicBody, "cubic_cc_congestion_event", "cubic_congestion_event")), err: "anchor"},
		{name: "arithmetic changed", spec: cubic, files: ngtcp2(strings.ReplaceAll(cubicBody, "cwnd * 7 / 10", "cwnd * beta")), err: "arithmetic"},
		{name: "not a decrease", spec: cubic, files: ngtcp2(strings.ReplaceAll(cubicBody, "7 / 10", "12 / 10")), err: "not a decrease"},
		{name: "factor definition missing", spec: reno, files: map[string]string{"lib/ngtcp2_cc.h": "\n", "lib/ngtcp2_cc.c": "void ngtcp2_cc_reno_cc_congestion_event(x) {\n  cstat->cwnd >>= NGTCP2_LOSS_REDUCTION_FACTOR_BITS;\n"}, err: "no definition"},
		{name: "quiche f64 factor", spec: Specs[1], files: map[string]string{
			"quiche/src/recovery/cubic.rs": "const BETA_CUBIC: f64 = 0.7;\nfn congestion_event(\n    r.ssthresh = (r.congestion_window as f64 * BETA_CUBIC) as usize;\n            r.max_datagram_size * recovery::MINIMUM_WINDOW_PACKETS,\n",
			"quiche/src/recovery/mod.rs":   "const MINIMUM_WINDOW_PACKETS: usize = 2;\n"},
			num: 7, den: 10, line: 3, floor: "2*S"},
	}
	var xquic Spec
	for _, sp := range Specs {
		if sp.Impl == "xquic" {
			xquic = sp
		}
	}
	const xquicBody = "#define XQC_CUBIC_BETA              718\n#define XQC_CUBIC_BETA_SCALE        1024\n#define XQC_CUBIC_MIN_WIN           (4 * XQC_CUBIC_MSS)\n" +
		"xqc_cubic_on_lost(void *cong_ctl, xqc_usec_t lost_sent_time)\n{\n    /* Multiplicative Decrease */\n    cubic->cwnd = cubic->cwnd * XQC_CUBIC_BETA / XQC_CUBIC_BETA_SCALE;\n"
	tests = append(tests,
		extractCase{name: "xquic named divisor resolved", spec: xquic, files: map[string]string{"src/congestion_control/xqc_cubic.c": xquicBody}, num: 718, den: 1024, line: 7, floor: "4*S"},
		extractCase{name: "xquic divisor undefined", spec: xquic, files: map[string]string{"src/congestion_control/xqc_cubic.c": strings.Replace(xquicBody, "#define XQC_CUBIC_BETA_SCALE        1024\n", "", 1)}, err: "divisor XQC_CUBIC_BETA_SCALE"})
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, snap, ok := extractCommitted(t, tc.spec, tc.files, tc.err)
			if !ok {
				return
			}
			if r.FactorNum != tc.num || r.FactorDen != tc.den || r.Source.Line != tc.line || r.Commit != snap.Commit() {
				t.Errorf("got %d/%d at line %d (commit %s), want %d/%d at line %d", r.FactorNum, r.FactorDen, r.Source.Line, r.Commit, tc.num, tc.den, tc.line)
			}
			if r.Floor == nil || r.Floor.Expr != tc.floor {
				t.Errorf("floor %+v, want %s", r.Floor, tc.floor)
			}
			f, err := Finding(tc.spec, r, snap)
			if err != nil {
				t.Fatal(err)
			}
			if len(f.Evidence) == 0 || f.Evidence[0].Line != tc.line || !strings.Contains(f.Evidence[0].Excerpt, "cwnd") && !strings.Contains(f.Evidence[0].Excerpt, "congestion_window") {
				t.Errorf("finding evidence %+v does not show the arithmetic at line %d", f.Evidence, tc.line)
			}
		})
	}
}

// TestExtractBBR: ngtcp2's BBR is read as a model: β from its two
// definitions, the line that bounds cwnd, min_pipe_cwnd as the floor.
func TestExtractBBR(t *testing.T) {
	var bbr Spec
	for _, s := range Specs {
		if s.Impl == "ngtcp2" && s.Algorithm == "bbr" {
			bbr = s
		}
	}
	const body = "#define NGTCP2_BBR_BETA_NUMER 7\n#define NGTCP2_BBR_BETA_DENOM 10\n" + // 1-2
		"static void bbr_loss_lower_bounds(ngtcp2_cc_bbr *bbr) {\n" + // 3
		"  bbr->inflight_shortterm = ngtcp2_max(\n" + // 4
		"    bbr->inflight_latest,\n" + // 5
		"    bbr->inflight_shortterm * NGTCP2_BBR_BETA_NUMER / NGTCP2_BBR_BETA_DENOM);\n" + // 6
		"}\nstatic uint64_t min_pipe_cwnd(size_t max_udp_payload_size) {\n  return max_udp_payload_size * 4;\n}\n" + // 7-10
		"static void bbr_bound_cwnd_for_model(const ngtcp2_cc_bbr *bbr,\n  cstat->cwnd = ngtcp2_min(cstat->cwnd, cap);\n" // 11-12
	tests := []struct {
		name                  string
		body                  string
		num, den              int64
		line, bound           int
		floor, err, factorTxt string
	}{
		{name: "bbrv3 at the pin's shape", body: body, num: 7, den: 10, line: 6, bound: 12, floor: "4*S", factorTxt: "NGTCP2_BBR_BETA_DENOM = 10"},
		{name: "beta 8/10", body: strings.Replace(body, "NUMER 7", "NUMER 8", 1), num: 8, den: 10, line: 6, bound: 12, floor: "4*S", factorTxt: "NGTCP2_BBR_BETA_NUMER = 8"},
		{name: "denominator undefined", body: strings.Replace(body, "#define NGTCP2_BBR_BETA_DENOM 10\n", "\n", 1), err: "NGTCP2_BBR_BETA_DENOM"},
		{name: "cwnd not bounded by the model", body: strings.Replace(body, "ngtcp2_min(cstat->cwnd, cap)", "cap", 1), err: "cwnd bound"},
		{name: "min_pipe_cwnd changed shape", body: strings.Replace(body, "max_udp_payload_size * 4", "4 * max_udp_payload_size", 1), err: "floor"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, snap, ok := extractCommitted(t, bbr, map[string]string{"lib/ngtcp2_bbr.c": tc.body}, tc.err)
			if !ok {
				return
			}
			if r.FactorNum != tc.num || r.FactorDen != tc.den || r.Source.Line != tc.line || r.BoundSource == nil || r.BoundSource.Line != tc.bound {
				t.Errorf("got %d/%d at line %d, bound %+v; want %d/%d at %d, bound at %d", r.FactorNum, r.FactorDen, r.Source.Line, r.BoundSource, tc.num, tc.den, tc.line, tc.bound)
			}
			if r.Floor == nil || r.Floor.Expr != tc.floor || !strings.Contains(r.FactorText, tc.factorTxt) {
				t.Errorf("floor %+v, factor %q; want %s and %q", r.Floor, r.FactorText, tc.floor, tc.factorTxt)
			}
			f, err := Finding(bbr, r, snap)
			if err != nil {
				t.Fatal(err)
			}
			var sawBound bool
			for _, e := range f.Evidence {
				sawBound = sawBound || (e.Line == tc.bound && strings.Contains(e.Excerpt, "ngtcp2_min(cstat->cwnd, cap)"))
			}
			if !sawBound {
				t.Errorf("finding evidence %+v does not show the cwnd bound at line %d", f.Evidence, tc.bound)
			}
		})
	}
}

// extractCommitted commits files into a fresh repository and extracts spec
// there. With wantErr set, the extraction must fail with an error containing
// it, and ok is false; otherwise it must succeed.
func extractCommitted(t *testing.T, spec Spec, files map[string]string, wantErr string) (r data.LossResponse, snap *gitsrc.Snapshot, ok bool) {
	t.Helper()
	snap, err := gitsrc.CommitFiles(t.TempDir(), files)
	if err != nil {
		t.Fatal(err)
	}
	r, err = Extract(spec, snap)
	if wantErr != "" {
		if err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Fatalf("error %v, want one containing %q", err, wantErr)
		}
		return r, snap, false
	}
	if err != nil {
		t.Fatal(err)
	}
	return r, snap, true
}
