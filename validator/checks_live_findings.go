package validator

// live_findings: a live observation explained with an instrumented build's
// logs (msquic --instrument, data/evidence/msquic/instrumented/rep*). The
// figures are re-derived here from each repetition's server log with the
// validator's own reading of the format (it imports nothing of parsers/):
// a figure the log does not give, a repetition that is not an instrumented
// run, or a statement whose totals differ from the logs' fails.

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"
)

// instrumentMagic is the instrumented log's first line.
const instrumentMagic = "# migaudit-msquic-instrument 1"

// instrumentedFacts are the figures of one server log, as the validator
// derives them.
type instrumentedFacts struct {
	switchUS, newID, prevID         int64
	gatesBefore, updatesBefore      int
	eligible, different, updates    int
	ackIDs, largestIDs              map[string]int
	srtt                            int64
	firstSentPN, firstSentStamped   int64
	congestionEvents, oldPathEvents int
	lowestAtUS, oldSends, oldLastUS int64
	lowestWindow                    int64
}

// instrumented memoises readInstrumented by file (the mutation tests
// check many variants of one survey against the same logs).
func (v *Validator) instrumented(path string) (*instrumentedFacts, error) {
	return memo(&v.mu, v.instrumentedLogs, canonical(path), func() (*instrumentedFacts, error) { return readInstrumented(path) })
}

// keyValues are a line's "key=value" fields, looked up in order (a
// line has a handful: a scan costs less than a map per line).
type keyValues []string

// get is the value of the last field named k ("" when none), as a map
// filled in line order would hold.
func (kv keyValues) get(k string) string {
	for i := len(kv) - 1; i >= 0; i-- {
		if key, v, _ := strings.Cut(kv[i], "="); key == k {
			return v
		}
	}
	return ""
}

// readInstrumented reads a server's instrumented log (gzip or plain).
func readInstrumented(path string) (*instrumentedFacts, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if len(b) > 2 && b[0] == 0x1f && b[1] == 0x8b {
		z, err := gzip.NewReader(bytes.NewReader(b))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if b, err = io.ReadAll(z); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
	}
	type line struct {
		t    int64
		kind string
		kv   keyValues
	}
	var lines []line
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 4096), 1<<20)
	for n := 1; sc.Scan(); n++ {
		s := strings.TrimSpace(sc.Text())
		if n == 1 {
			if s != instrumentMagic {
				return nil, fmt.Errorf("%s:1: not an instrumented msquic log", path)
			}
			continue
		}
		if s == "" || s[0] == '#' {
			continue
		}
		f := strings.Fields(s)
		if len(f) < 3 || !strings.HasPrefix(f[0], "unix_us=") {
			return nil, fmt.Errorf("%s:%d: malformed line", path, n)
		}
		t, err := strconv.ParseInt(strings.TrimPrefix(f[0], "unix_us="), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: unix_us: %v", path, n, err)
		}
		lines = append(lines, line{t: t, kind: f[2], kv: f[3:]})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	num := func(l line, k string) int64 {
		v, err := strconv.ParseInt(l.kv.get(k), 10, 64)
		if err != nil {
			if u, uerr := strconv.ParseUint(l.kv.get(k), 10, 64); uerr == nil {
				return int64(min(u, 1<<63-1))
			}
			return -1 << 62
		}
		return v
	}
	fx := &instrumentedFacts{switchUS: -1, newID: -1, prevID: -1, firstSentPN: -1, firstSentStamped: -1,
		ackIDs: map[string]int{}, largestIDs: map[string]int{}}
	newRemote := ""
	for _, l := range lines {
		if l.kind == "PATH_ACTIVE" && l.kv.get("server") == "1" && num(l, "prev_path_id") >= 0 {
			fx.switchUS, fx.newID, fx.prevID, newRemote = l.t, num(l, "path_id"), num(l, "prev_path_id"), l.kv.get("remote")
			break
		}
	}
	// sentTo gives the peer address packet pn was sent to: the SENT lines
	// mark each change of it, in packet-number order.
	type mark struct {
		pn     int64
		remote string
	}
	var marks []mark
	for _, l := range lines {
		if l.kind == "SENT" && l.kv.get("server") == "1" {
			marks = append(marks, mark{num(l, "pn"), l.kv.get("remote")})
		}
	}
	sentTo := func(pn int64) string {
		i := sort.Search(len(marks), func(i int) bool { return marks[i].pn > pn })
		if i == 0 {
			return ""
		}
		return marks[i-1].remote
	}
	after := func(l line) bool { return fx.switchUS >= 0 && l.t >= fx.switchUS }
	for _, l := range lines {
		if l.kv.get("server") != "1" {
			continue
		}
		switch l.kind {
		case "RTT_GATE":
			if !after(l) {
				fx.gatesBefore++
				if l.kv.get("update") == "1" {
					fx.updatesBefore++
				}
				continue
			}
			fx.srtt = num(l, "srtt_us")
			if l.kv.get("update") == "1" {
				fx.updates++
			}
			if l.kv.get("new_largest") == "1" && l.kv.get("retransmittable") == "1" {
				fx.eligible++
				if l.kv.get("different_path") == "1" {
					fx.different++
				}
				fx.ackIDs[l.kv.get("ack_path_id")]++
				fx.largestIDs[l.kv.get("largest_path_id")]++
			}
		case "SENT":
			if after(l) && fx.firstSentPN < 0 && num(l, "send_path_id") == fx.newID {
				fx.firstSentPN, fx.firstSentStamped = num(l, "pn"), num(l, "stamped_path_id")
			}
			if after(l) && l.kv.get("remote") != newRemote {
				fx.oldSends++
				fx.oldLastUS = l.t - fx.switchUS
			}
		case "LOSS":
			if after(l) && l.t < fx.switchUS+1_000_000 && l.kv.get("congestion_event") == "1" {
				fx.congestionEvents++
				if to := sentTo(num(l, "largest_lost_pn")); to != "" && to != newRemote {
					fx.oldPathEvents++
				}
				if w := num(l, "cwnd_after"); fx.lowestWindow == 0 || w < fx.lowestWindow {
					fx.lowestWindow, fx.lowestAtUS = w, l.t-fx.switchUS
				}
			}
		}
	}
	return fx, nil
}

// checkLiveFindings re-derives every live finding's figures.
func checkLiveFindings(v *Validator, doc, im gjson.Result) (Status, string) {
	var d verdict
	name := im.Get("name").String()
	for _, lf := range im.Get("live_findings").Array() {
		id := lf.Get("id").String()
		reps := map[string]bool{}
		for _, r := range lf.Get("repetitions").Array() {
			reps[r.String()] = true
		}
		figs := lf.Get("figures").Array()
		if len(figs) != len(reps) {
			d.fail("%s: %d repetitions listed, figures for %d", id, len(reps), len(figs))
		}
		var eligible, different, updates, events, oldEvents int
		for _, f := range figs {
			rep := f.Get("repetition").String()
			if !reps[rep] {
				d.fail("%s: figures for %s, which is not among the finding's repetitions", id, rep)
			}
			dir := filepath.Join(v.opts.RepoRoot, "data", "evidence", name, filepath.FromSlash(rep))
			if err := instrumentedManifest(dir, f.Get("patch_sha256").String()); err != nil {
				d.fail("%s %s: %v", id, rep, err)
				continue
			}
			logRel := f.Get("log").String()
			if !strings.HasPrefix(filepath.ToSlash(logRel), filepath.ToSlash(filepath.Join("data", "evidence", name, rep))+"/") {
				d.fail("%s %s: log %s is not in the repetition's directory", id, rep, logRel)
				continue
			}
			fx, err := v.instrumented(filepath.Join(v.opts.RepoRoot, filepath.FromSlash(logRel)))
			if err != nil {
				if os.IsNotExist(err) {
					d.unverifiable("%s %s: %v", id, rep, err)
				} else {
					d.fail("%s %s: %v", id, rep, err)
				}
				continue
			}
			eligible, different, updates = eligible+fx.eligible, different+fx.different, updates+fx.updates
			events, oldEvents = events+fx.congestionEvents, oldEvents+fx.oldPathEvents
			bad := compareFigures(f, fx)
			if len(bad) > 0 {
				d.fail("%s %s: the log gives %s", id, rep, strings.Join(bad, "; "))
				continue
			}
			d.note("%s: switch to path %d, %d/%d eligible ACKs gated as different path, %d updates, srtt %d µs", rep, fx.newID, fx.different, fx.eligible, fx.updates, fx.srtt)
		}
		var claims []string
		switch id {
		case "msquic-rtt-never-fed-after-path-switch":
			claims = []string{fmt.Sprintf("%d of %d ACK frames", different, eligible), fmt.Sprintf("and %d updated the estimator", updates)}
		case "msquic-old-path-probe-losses-cut-new-path-window":
			claims = []string{fmt.Sprintf("%d of %d congestion events", oldEvents, events)}
		default:
			d.fail("%s: no re-derivation of this finding's statement is known to the validator", id)
		}
		for _, c := range claims {
			if st := lf.Get("statement").String(); !strings.Contains(st, c) {
				d.fail("%s: the logs give %q; the statement does not say so", id, c)
			}
		}
	}
	return d.result()
}

// instrumentedManifest: the repetition is VALID and its manifest says it
// ran the instrumented build, with the patch the figures name.
func instrumentedManifest(dir, patch string) error {
	b, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err != nil {
		return fmt.Errorf("no manifest: %w", err)
	}
	var m struct {
		Status string `json:"status"`
		Result struct {
			Settings map[string]string `json:"settings"`
		} `json:"result"`
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return fmt.Errorf("manifest: %w", err)
	}
	if m.Status != "VALID" {
		return fmt.Errorf("the repetition is %s, not VALID", m.Status)
	}
	if m.Result.Settings["instrumented"] != "true" {
		return fmt.Errorf("the manifest does not record an instrumented build (result.settings.instrumented = %q)", m.Result.Settings["instrumented"])
	}
	if got := m.Result.Settings["instrument_patch_sha256"]; patch != "" && got != patch {
		return fmt.Errorf("the manifest's patch sha256 %s is not the figures' %s", got, patch)
	}
	return nil
}

func compareFigures(f gjson.Result, fx *instrumentedFacts) []string {
	var bad []string
	ints := []struct {
		key  string
		want int64
	}{
		{"switch_unix_us", fx.switchUS}, {"new_path_id", fx.newID}, {"prev_path_id", fx.prevID},
		{"gates_before", int64(fx.gatesBefore)}, {"updates_before", int64(fx.updatesBefore)},
		{"eligible_after", int64(fx.eligible)}, {"different_path_after", int64(fx.different)}, {"updates_after", int64(fx.updates)},
		{"srtt_after_us", fx.srtt}, {"first_sent_on_new_pn", fx.firstSentPN}, {"first_sent_on_new_stamped_path_id", fx.firstSentStamped},
		{"congestion_events_after", int64(fx.congestionEvents)}, {"lowest_window_after", fx.lowestWindow},
		{"old_path_congestion_events_after", int64(fx.oldPathEvents)}, {"lowest_window_after_us", fx.lowestAtUS},
		{"old_path_sends_after", fx.oldSends}, {"old_path_last_send_after_us", fx.oldLastUS},
	}
	if fx.switchUS < 0 {
		ints[0].want = 0 // no switch: the survey's zero value
	}
	for _, c := range ints {
		if got := f.Get(c.key).Int(); got != c.want {
			bad = append(bad, fmt.Sprintf("%s %d, the survey %d", c.key, c.want, got))
		}
	}
	for _, m := range []struct {
		key  string
		want map[string]int
	}{{"ack_path_ids_after", fx.ackIDs}, {"largest_path_ids_after", fx.largestIDs}} {
		got := map[string]int{}
		f.Get(m.key).ForEach(func(k, v gjson.Result) bool { got[k.String()] = int(v.Int()); return true })
		if fmt.Sprint(got) != fmt.Sprint(m.want) {
			bad = append(bad, fmt.Sprintf("%s %v, the survey %v", m.key, m.want, got))
		}
	}
	return bad
}
