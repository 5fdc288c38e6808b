package validator

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/migaudit/migaudit/survey"
	"github.com/tidwall/gjson"
)

// repTrace loads a repetition's trace, or says why it cannot.
func (v *Validator) repTrace(im, rep gjson.Result) (*traceFacts, error) {
	p, err := v.resolve(im.Get("live.origin").String(), rep.Get("trace").String())
	if err != nil {
		return nil, err
	}
	return v.trace(p)
}

func liveErr(d *verdict, id string, err error) {
	if errors.Is(err, errNoSource) {
		d.unverifiable("%s: %v", id, err)
	} else {
		d.fail("%s: %v", id, err)
	}
}

// noLive handles entries without live evidence.
func noLive(d *verdict, im gjson.Result) bool {
	if !im.Get("live").Exists() || len(im.Get("live.repetitions").Array()) == 0 {
		d.unverifiable("no live evidence for %s", im.Get("name").String())
		return true
	}
	return false
}

// checkRepetitions: every repetition has its own trace on disk with the
// recorded hash, no two share one (the study once lost a repetition to an
// overwrite), own runs have a manifest, and the retained count is right.
func checkRepetitions(v *Validator, doc, im gjson.Result) (Status, string) {
	var d verdict
	if noLive(&d, im) {
		return d.result()
	}
	reps := im.Get("live.repetitions").Array()
	if n := int(im.Get("live.retained").Int()); n != len(reps) {
		d.fail("retained says %d, %d repetitions listed", n, len(reps))
	}
	origin := im.Get("live.origin").String()
	seen := map[string]string{}
	ok := 0
	for _, rep := range reps {
		id := rep.Get("id").String()
		sha := rep.Get("trace_sha256").String()
		if prev, dup := seen[sha]; dup {
			d.fail("%s and %s have the same trace (sha256 %s…): one overwrote the other", prev, id, sha[:min(12, len(sha))])
		}
		seen[sha] = id
		p, err := v.resolve(origin, rep.Get("trace").String())
		if err != nil {
			liveErr(&d, id, err)
			continue
		}
		got, err := v.fileSHA(p)
		if err != nil {
			if os.IsNotExist(err) && origin == survey.Reference {
				d.unverifiable("%s: %s absent", id, p)
			} else {
				d.fail("%s: %v", id, err)
			}
			continue
		}
		if got != sha {
			d.fail("%s: %s has sha256 %s…, survey says %s…", id, rep.Get("trace").String(), got[:12], sha[:min(12, len(sha))])
			continue
		}
		if origin == survey.OwnRuns {
			m := rep.Get("manifest").String()
			if m == "" {
				d.fail("%s: own run without a manifest", id)
				continue
			}
			if mp, _ := v.resolve(origin, m); !exists(mp) {
				d.fail("%s: manifest %s absent", id, m)
				continue
			}
		}
		ok++
	}
	d.note("%d/%d repetitions retained with distinct traces (%s)", ok, len(reps), origin)
	return d.result()
}

// fileSHA hashes a file once per validator.
func (v *Validator) fileSHA(p string) (string, error) {
	p = canonical(p)
	v.mu.Lock()
	if h, ok := v.shas[p]; ok {
		v.mu.Unlock()
		return h, nil
	}
	v.mu.Unlock()
	b, err := os.ReadFile(p)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	h := hex.EncodeToString(sum[:])
	v.mu.Lock()
	v.shas[p] = h
	v.mu.Unlock()
	return h, nil
}

func exists(p string) bool { _, err := os.Stat(p); return err == nil }

// addrChange finds the peer's address before and after the migration.
func addrChange(f *traceFacts) (old, new string, ok bool) {
	for _, e := range f.Events {
		if e.Kind != "peer_addr" {
			continue
		}
		if old == "" {
			old = e.Addr
			continue
		}
		if e.Addr != old {
			return old, e.Addr, true
		}
	}
	return old, "", false
}

func hostOf(a string) string {
	h, _, err := net.SplitHostPort(a)
	if err != nil {
		return a
	}
	return h
}

var localAddrLine = lazyRegexp(`Local address is now \[?([0-9a-fA-F.:]+?)\]?:(\d+)`)

// logMove reads the endpoints' own logs in the repetition directory for
// a peer-address change: JSON lines {"ev":"peer_address"|"switched",
// "from":..., "to":...} (this project's quic-go harness; the server's line is
// preferred: it is the observing endpoint's view).
func (v *Validator) logMove(im, rep gjson.Result) (from, to, src string, ok bool) {
	ref := rep.Get("manifest").String()
	if ref == "" {
		return "", "", "", false
	}
	p, err := v.resolve(im.Get("live.origin").String(), ref)
	if err != nil {
		return "", "", "", false
	}
	for _, name := range []string{"server.stderr", "server.stderr.gz", "server.stdout", "client.stderr", "client.stderr.gz", "client.stdout"} {
		b, err := readMaybeGz(filepath.Join(filepath.Dir(p), name))
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			i := strings.Index(line, "{")
			if i < 0 || !strings.Contains(line, `"ev"`) {
				continue
			}
			j := gjson.Parse(line[i:])
			ev := j.Get("ev").String()
			if (ev == "peer_address" || ev == "switched") && j.Get("from").String() != "" && j.Get("to").String() != "" {
				return j.Get("from").String(), j.Get("to").String(), name, true
			}
		}
	}
	return "", "", "", false
}

// configuredRTT is the round trip the run configured for a path (manifest
// paths.<A|B>.rtt_us), or -1.
func (v *Validator) configuredRTT(im, rep gjson.Result, path string) int64 {
	m := rep.Get("manifest").String()
	if m == "" {
		return -1
	}
	p, err := v.resolve(im.Get("live.origin").String(), m)
	if err != nil {
		return -1
	}
	b, err := readMaybeGz(p)
	if err != nil {
		return -1
	}
	r := gjson.GetBytes(b, "paths."+path+".rtt_us")
	if !r.Exists() {
		return -1
	}
	return r.Int()
}

// counterKind reads the repetition manifest's per-path packet counters:
// traffic to the server on both paths means the client used both paths'
// addresses (an IP migration); none on path B means it never left A.
func (v *Validator) counterKind(im, rep gjson.Result) (kind, found string, ok bool) {
	m := rep.Get("manifest").String()
	if m == "" {
		return "", "", false
	}
	p, err := v.resolve(im.Get("live.origin").String(), m)
	if err != nil {
		return "", "", false
	}
	b, err := os.ReadFile(p)
	if err != nil || !gjson.ValidBytes(b) {
		return "", "", false
	}
	a, bb := gjson.GetBytes(b, "counters_after.A.to_server_packets"), gjson.GetBytes(b, "counters_after.B.to_server_packets")
	if !a.Exists() || !bb.Exists() {
		return "", "", false
	}
	// counters run across repetitions: this one's traffic is after − before
	da := a.Int() - gjson.GetBytes(b, "counters_before.A.to_server_packets").Int()
	db := bb.Int() - gjson.GetBytes(b, "counters_before.B.to_server_packets").Int()
	if da > 0 && db > 0 {
		return "ip", fmt.Sprintf("manifest counters: %d packets to the server on path A, %d on path B", da, db), true
	}
	return "not-ip", fmt.Sprintf("manifest counters: %d packets to the server on path A, %d on path B: no move to path B's address", da, db), true
}

// clientLogAddrs reads the migrating client's own log lines in the
// repetition directory ("Local address is now [addr]:port" from ngtcp2's
// client) when the server trace logs no addresses.
func (v *Validator) clientLogAddrs(im, rep gjson.Result) []string {
	ref := rep.Get("manifest").String()
	if ref == "" {
		ref = rep.Get("trace").String()
	}
	p, err := v.resolve(im.Get("live.origin").String(), ref)
	if err != nil {
		return nil
	}
	var out []string
	files, _ := filepath.Glob(filepath.Join(filepath.Dir(p), "*"))
	for _, f := range files {
		if !strings.Contains(f, "client") && !strings.HasSuffix(f, ".log") {
			continue
		}
		b, err := readMaybeGz(f)
		if err != nil {
			continue
		}
		for _, m := range localAddrLine().FindAllStringSubmatch(string(b), -1) {
			out = append(out, m[1])
		}
	}
	return out
}

// checkIPChange: each repetition claimed as an IP migration shows a new
// peer IP (not only a new port) in the evidence; port-only ones do not.
func checkIPChange(v *Validator, doc, im gjson.Result) (Status, string) {
	var d verdict
	if noLive(&d, im) {
		return d.result()
	}
	reps := im.Get("live.repetitions").Array()
	claimedIP := 0
	verified := 0
	for _, rep := range reps {
		id := rep.Get("id").String()
		kind := rep.Get("migration.kind").String()
		if kind == "ip" {
			claimedIP++
		}
		f, err := v.repTrace(im, rep)
		if err != nil {
			liveErr(&d, id, err)
			continue
		}
		if !f.HasAddrs {
			if from, to, src, ok := v.logMove(im, rep); ok {
				gotKind := "port-only"
				if hostOf(from) != hostOf(to) {
					gotKind = "ip"
				}
				if gotKind != kind {
					d.fail("%s: %s logs %s → %s (%s), survey says %s", id, src, from, to, gotKind, kind)
					continue
				}
				if c := rep.Get("migration.old_addr").String(); c != "" && hostOf(c) != hostOf(from) {
					d.fail("%s: old address %s in %s, survey says %s", id, from, src, c)
					continue
				}
				if c := rep.Get("migration.new_addr").String(); c != "" && hostOf(c) != hostOf(to) {
					d.fail("%s: new address %s in %s, survey says %s", id, to, src, c)
					continue
				}
				if gotKind == "ip" {
					verified++
				}
				d.note("%s: %s: %s → %s", id, src, from, to)
				continue
			}
			if kind, found, ok := v.counterKind(im, rep); ok {
				if (kind == "ip") != (rep.Get("migration.kind").String() == "ip") {
					d.fail("%s: %s, survey says %s", id, found, rep.Get("migration.kind").String())
					continue
				}
				addrs := v.clientLogAddrs(im, rep)
				if ca := rep.Get("migration.new_addr").String(); ca != "" && len(addrs) > 0 && hostOf(ca) != addrs[len(addrs)-1] {
					d.fail("%s: client log moved to %s, survey says %s", id, addrs[len(addrs)-1], ca)
					continue
				}
				if kind == "ip" {
					verified++
				}
				d.note("%s: %s", id, found)
				continue
			}
			addrs := v.clientLogAddrs(im, rep)
			if len(addrs) > 0 {
				nw := addrs[len(addrs)-1]
				if ca := rep.Get("migration.new_addr").String(); ca != "" && hostOf(ca) != nw {
					d.fail("%s: client log moved to %s, survey says %s", id, nw, ca)
					continue
				}
				if kind == "ip" && rep.Get("migration.old_addr").String() != "" && hostOf(rep.Get("migration.old_addr").String()) == nw {
					d.fail("%s: client log shows the same IP %s before and after", id, nw)
					continue
				}
				verified++
				d.note("%s: client log: local address now %s", id, nw)
				continue
			}
			// A repetition claimed only as a path change (never as an IP
			// migration) is what a trace without addresses can show: a
			// PATH_CHALLENGE answered by a PATH_RESPONSE.
			if kind == "path-change" {
				if at, ok := pathValidated(f); ok {
					verified++
					d.note("%s: %s logs no addresses; path validated at %d µs (claimed path-change, not ip)", id, f.Format, at)
				} else {
					d.fail("%s: claimed path-change, but %s holds no PATH_CHALLENGE answered by a PATH_RESPONSE", id, f.Format)
				}
				continue
			}
			d.unverifiable("%s: %s logs no addresses", id, f.Format)
			continue
		}
		old, nw, changed := addrChange(f)
		if !changed {
			if kind == "ip" {
				d.fail("%s: peer address never changes from %s, survey says IP migration", id, old)
			} else {
				verified++
			}
			continue
		}
		gotKind := "port-only"
		if hostOf(old) != hostOf(nw) {
			gotKind = "ip"
		}
		if gotKind != kind {
			d.fail("%s: %s → %s is %s, survey says %s", id, old, nw, gotKind, kind)
			continue
		}
		if c := rep.Get("migration.old_addr").String(); c != "" && c != old && hostOf(c) != hostOf(old) {
			d.fail("%s: old address %s, survey says %s", id, old, c)
			continue
		}
		if c := rep.Get("migration.new_addr").String(); c != "" && c != nw && hostOf(c) != hostOf(nw) {
			d.fail("%s: new address %s, survey says %s", id, nw, c)
			continue
		}
		if gotKind == "ip" {
			verified++
		}
		d.note("%s: %s → %s (%s)", id, old, nw, gotKind)
	}
	if n := int(im.Get("live.ip_changes").Int()); n != claimedIP {
		d.fail("ip_changes says %d, %d repetitions are marked ip", n, claimedIP)
	}
	d.note("%d/%d verified", verified, len(reps))
	return d.result()
}

// instants are the candidate migration instants a trace supports.
func instants(f *traceFacts) []int64 {
	var out []int64
	firstOf := map[string]bool{}
	for _, e := range f.Events {
		if e.Kind == "peer_addr" {
			continue
		}
		if !firstOf[e.Kind] {
			firstOf[e.Kind] = true
			out = append(out, e.T)
		}
	}
	if old, _, ok := addrChange(f); ok {
		for _, e := range f.Events {
			if e.Kind == "peer_addr" && e.Addr != old {
				out = append(out, e.T)
				break
			}
		}
	}
	return out
}

func within(a, b, tol int64) bool { return a-b <= tol && b-a <= tol }

func anyNear(x int64, cands []int64, tol int64) bool {
	for _, c := range cands {
		if within(x, c, tol) {
			return true
		}
	}
	return false
}

// pathValidationRTTs are PATH_CHALLENGE sent → PATH_RESPONSE received
// round trips.
func pathValidationRTTs(f *traceFacts) []int64 {
	var out []int64
	var sent []int64
	for _, e := range f.Events {
		switch e.Kind {
		case "challenge_sent":
			sent = append(sent, e.T)
		case "response_received":
			for _, s := range sent {
				out = append(out, e.T-s)
			}
		}
	}
	return out
}

// checkMigrationInstant: the instant and the path-validation round trip
// come out of the trace's own path events.
func checkMigrationInstant(v *Validator, doc, im gjson.Result) (Status, string) {
	var d verdict
	if noLive(&d, im) {
		return d.result()
	}
	for _, rep := range im.Get("live.repetitions").Array() {
		id := rep.Get("id").String()
		f, err := v.repTrace(im, rep)
		if err != nil {
			liveErr(&d, id, err)
			continue
		}
		cands := instants(f)
		at := rep.Get("migration.at_us").Int()
		if len(cands) == 0 {
			d.unverifiable("%s: %s logs no path events; instant %d µs was given, not found", id, f.Format, at)
			continue
		}
		if !anyNear(at, cands, 1) {
			d.fail("%s: migration at %d µs matches no path event (%v)", id, at, cands)
			continue
		}
		if pv := rep.Get("migration.path_validation_rtt_us"); pv.Exists() && pv.Int() != 0 {
			if !anyNear(pv.Int(), pathValidationRTTs(f), 1) {
				d.fail("%s: path-validation RTT %d µs matches no challenge→response pair (%v)", id, pv.Int(), pathValidationRTTs(f))
				continue
			}
		}
		d.note("%s: at %d µs", id, at)
	}
	return d.result()
}

// windowFacts re-derives the window figures of one repetition.
type windowFacts struct {
	decreases [][3]int64 // t, value, previous
	hits      []int64    // times of exact initial-window samples in scope
	minAfter  int64
	cwnd      []sample
}

func deriveWindow(f *traceFacts, from, at, to int64, initial []int64) windowFacts {
	var w windowFacts
	w.minAfter = -1
	// Per path: a decrease is against the same path's previous value; a
	// path's first sample is against the last value of the path that was in
	// use (a new path born at its initial window is the reset a per-path
	// implementation performs).
	prev := map[string]int64{}
	last := int64(-1)
	for _, s := range f.Samples {
		if s.Cwnd < 0 {
			continue
		}
		w.cwnd = append(w.cwnd, s)
		p, seen := prev[s.Path]
		if !seen {
			p = last
		}
		if s.T >= from && s.T <= to {
			if p >= 0 && s.Cwnd < p {
				w.decreases = append(w.decreases, [3]int64{s.T, s.Cwnd, p})
			}
			for _, iv := range initial {
				if s.Cwnd == iv && (seen || s.T >= at) {
					w.hits = append(w.hits, s.T)
				}
			}
			if s.T >= at && (w.minAfter < 0 || s.Cwnd < w.minAfter) {
				w.minAfter = s.Cwnd
			}
		}
		prev[s.Path] = s.Cwnd
		last = s.Cwnd
	}
	return w
}

// constantsOf gathers the values a repetition is judged against: the run's
// own evaluation where present, else the source constants.
func constantsOf(im, rep gjson.Result) (initial []int64, minWin int64, factor float64) {
	minWin, factor = -1, 0
	collect := func(list gjson.Result) (ini []int64, mw int64, lf float64) {
		mw = -1
		list.ForEach(func(_, c gjson.Result) bool {
			switch c.Get("name").String() {
			case "initial_window":
				ini = append(ini, int64(math.Round(c.Get("value").Float())))
			case "min_window":
				mw = int64(math.Round(c.Get("value").Float()))
			case "loss_factor":
				lf = c.Get("value").Float()
			}
			return true
		})
		return
	}
	initial, minWin, factor = collect(im.Get("constants"))
	ri, rm, rf := collect(rep.Get("constants"))
	if len(ri) > 0 {
		initial = ri
	}
	if rm >= 0 {
		minWin = rm
	}
	if rf > 0 {
		factor = rf
	}
	return
}

func classify(value, prev int64, initial []int64, minWin int64, factor float64) string {
	for _, iv := range initial {
		if value == iv {
			return "RESET"
		}
	}
	if minWin > 0 && value == minWin {
		return "LOSS_FLOOR"
	}
	if factor > 0 && isBackoffOf(value, prev, factor) {
		return "LOSS_BACKOFF"
	}
	lowest := int64(math.MaxInt64)
	for _, iv := range initial {
		lowest = min(lowest, iv)
	}
	if value < lowest {
		return "BELOW_INITIAL"
	}
	return "UNEXPLAINED"
}

// checkWindow: scope anchored at the migration (never the whole trace);
// every decrease in scope listed and classified as the validator's own
// classifier does; reset observed iff an exact initial-window hit in scope;
// window before and after as the trace shows.
func checkWindow(v *Validator, doc, im gjson.Result) (Status, string) {
	var d verdict
	if noLive(&d, im) {
		return d.result()
	}
	for _, rep := range im.Get("live.repetitions").Array() {
		id := rep.Get("id").String()
		from, to, at := rep.Get("scope_from_us").Int(), rep.Get("scope_to_us").Int(), rep.Get("migration.at_us").Int()
		if !(from <= at && at <= to) || at-from > 200_000 || to-at > 5_000_000 || to-at < 500_000 {
			d.fail("%s: scope [%d, %d] µs is not anchored at the migration (%d µs): a whole-trace scope proves nothing", id, from, to, at)
			continue
		}
		f, err := v.repTrace(im, rep)
		if err != nil {
			liveErr(&d, id, err)
			continue
		}
		if len(f.Samples) > 0 && from <= f.Samples[0].T {
			d.fail("%s: scope starts at the trace's first sample: the initial window always appears there", id)
			continue
		}
		// The study's scope: 50 ms before path validation to 2 s after.
		if inst := instants(f); len(inst) > 0 && !(anyNear(from+50_000, inst, 1) && anyNear(to-2_000_000, inst, 1)) {
			d.fail("%s: scope [%d, %d] µs is not 50 ms before to 2 s after a path-validation instant of the trace (%v)", id, from, to, inst)
			continue
		}
		initial, minWin, factor := constantsOf(im, rep)
		w := deriveWindow(f, from, at, to, initial)
		claimed := rep.Get("events").Array()
		if len(claimed) != len(w.decreases) {
			d.fail("%s: %d window decreases in scope, survey lists %d", id, len(w.decreases), len(claimed))
			continue
		}
		bad := false
		for i, ev := range claimed {
			g := w.decreases[i]
			kind := classify(g[1], g[2], initial, minWin, factor)
			if kind != "RESET" && ev.Get("kind").String() == "LOSS_BACKOFF" && backoffClaim.MatchString(ev.Get("explanation").String()) && backoffFault(im.Get("name").String(), repCC(v, im, rep), ev, f, from) == "" {
				kind = "LOSS_BACKOFF" // its arithmetic re-derived in checks_collapse.go
			}
			if !within(ev.Get("at_us").Int(), g[0], 1) || ev.Get("value_bytes").Int() != g[1] || ev.Get("previous_bytes").Int() != g[2] || ev.Get("kind").String() != kind {
				d.fail("%s: event %d is %s at %d µs %d→%d B, survey says %s at %d µs %d→%d B", id, i, kind, g[0], g[2], g[1],
					ev.Get("kind").String(), ev.Get("at_us").Int(), ev.Get("previous_bytes").Int(), ev.Get("value_bytes").Int())
				bad = true
				break
			}
		}
		if bad {
			continue
		}
		reset := len(w.hits) > 0
		if rep.Get("reset_observed").Bool() != reset {
			d.fail("%s: %d exact initial-window hits %v in scope, survey says reset_observed=%v", id, len(w.hits), initial, rep.Get("reset_observed").Bool())
			continue
		}
		after := w.minAfter
		if reset {
			after = -1
			for _, e := range w.decreases {
				if classify(e[1], e[2], initial, minWin, factor) == "RESET" {
					after = e[1]
					break
				}
			}
			if after < 0 {
				after = initial[0]
			}
		}
		if got := rep.Get("window_after_bytes").Int(); got != after {
			d.fail("%s: window after %d B, survey says %d B", id, after, got)
			continue
		}
		before := rep.Get("window_before_bytes").Int()
		cands := beforeCandidates(w, from, at, to)
		if !containsInt(cands, before) {
			d.fail("%s: window before %d B is none of the trace's pre-collapse peaks %v", id, before, cands)
			continue
		}
		d.note("%s: %d decreases, %d exact hits, %d→%d B", id, len(w.decreases), len(w.hits), before, after)
	}
	return d.result()
}

// beforeCandidates: the peak from the scope start (or the trace start) to
// the migration or to the first decrease at or after it, and the last
// value before the migration.
func beforeCandidates(w windowFacts, from, at, to int64) []int64 {
	firstDec := to
	for _, e := range w.decreases {
		if e[0] >= at {
			firstDec = e[0]
			break
		}
	}
	var out []int64
	for _, start := range []int64{math.MinInt64, from} {
		for _, end := range []int64{at, firstDec} {
			peak := int64(-1)
			for _, s := range w.cwnd {
				if s.T >= start && s.T < end {
					peak = max(peak, s.Cwnd)
				}
			}
			if peak >= 0 {
				out = append(out, peak)
			}
		}
	}
	for i := len(w.cwnd) - 1; i >= 0; i-- {
		if w.cwnd[i].T < at {
			out = append(out, w.cwnd[i].Cwnd)
			break
		}
	}
	// A per-path trace logs the old path's window at the migration instant
	// beside the new path's first one: that old-path value is still the
	// window before the collapse.
	old := map[string]bool{}
	peak := int64(-1)
	for _, s := range w.cwnd {
		if s.T < at {
			old[s.Path] = true
		}
		if s.T >= from && s.T <= at && old[s.Path] {
			peak = max(peak, s.Cwnd)
		}
	}
	if peak >= 0 {
		out = append(out, peak)
	}
	return out
}

// isBackoffOf: value is factor × prev as an implementation computes it in
// integers — truncated, floored, rounded or rounded up — give or take 1 B (the logged
// previous window can lag the one the backoff multiplied by a few bytes of
// congestion-avoidance growth; docs/analyze.md states the same tolerance).
func isBackoffOf(value, prev int64, factor float64) bool {
	p := factor * float64(prev)
	for _, r := range []float64{math.Trunc(p), math.Floor(p), math.Round(p), math.Ceil(p)} {
		if math.Abs(float64(value)-r) <= 1 {
			return true
		}
	}
	return false
}

func containsInt(xs []int64, x int64) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

// rttAround returns the first smoothed-RTT samples after the migration
// (candidates: at or after it; after path validation completes) and the
// RTT just before.
func rttFacts(f *traceFacts, at, def int64) (firsts []int64, lastBefore int64) {
	lastBefore = -1
	var respT int64 = -1
	for _, e := range f.Events {
		if e.Kind == "response_received" && e.T >= at {
			respT = e.T
			break
		}
	}
	got := map[string]bool{}
	known := map[string]bool{}
	newPath := ""
	for _, s := range f.Samples {
		if s.SRTT < 0 {
			continue
		}
		if s.T < at {
			lastBefore = s.SRTT
			known[s.Path] = true
			continue
		}
		if f.PathIDs && !known[s.Path] && newPath == "" {
			newPath = s.Path
		}
		if def > 0 && within(s.SRTT, def, 1000) {
			got["reset"] = true
		} else if got["reset"] && !got["afterreset"] {
			// the first measurement after the estimator was reset
			got["afterreset"] = true
			firsts = append(firsts, s.SRTT)
		}
		// The first value that is a measurement, not the default an
		// estimator starts (or sits) at: overall and on the new path.
		if def > 0 && !within(s.SRTT, def, 1000) {
			if !got["measured"] {
				got["measured"] = true
				firsts = append(firsts, s.SRTT)
			}
			if newPath != "" && s.Path == newPath && !got["newpath"] {
				got["newpath"] = true
				firsts = append(firsts, s.SRTT)
			}
		}
		// A smoothed RTT equal to its own latest sample is an estimator's
		// first sample (RFC 9002 §5.3: smoothed_rtt = latest_rtt): an
		// estimator restarted without logging its default (quic-go).
		if s.Latest > 0 && within(s.SRTT, s.Latest, 1) && !got["fresh"] {
			got["fresh"] = true
			firsts = append(firsts, s.SRTT)
		}
		if !got["at"] {
			got["at"] = true
			firsts = append(firsts, s.SRTT)
		}
		if s.T > at && !got["after"] {
			got["after"] = true
			firsts = append(firsts, s.SRTT)
		}
		if respT >= 0 && s.T >= respT && !got["resp"] {
			got["resp"] = true
			firsts = append(firsts, s.SRTT)
		}
	}
	return
}

// checkRTT: the first post-migration RTT is the trace's, and its
// attribution follows from comparing it with the old path, the new path
// and the default.
func checkRTT(v *Validator, doc, im gjson.Result) (Status, string) {
	var d verdict
	if noLive(&d, im) {
		return d.result()
	}
	var defRTT int64 = -1
	im.Get("constants").ForEach(func(_, c gjson.Result) bool {
		if c.Get("name").String() == "default_rtt" {
			defRTT = int64(math.Round(c.Get("value").Float()))
		}
		return true
	})
	for _, rep := range im.Get("live.repetitions").Array() {
		id := rep.Get("id").String()
		f, err := v.repTrace(im, rep)
		if err != nil {
			liveErr(&d, id, err)
			continue
		}
		at := rep.Get("migration.at_us").Int()
		firsts, lastBefore := rttFacts(f, at, defRTT)
		first := rep.Get("rtt.first_after_us").Int()
		if !anyNear(first, firsts, 1) {
			d.fail("%s: first post-migration RTT %d µs is not the trace's (%v)", id, first, firsts)
			continue
		}
		attr := rep.Get("rtt.attribution").String()
		if du := rep.Get("rtt.default_us"); du.Exists() && du.Int() != 0 && defRTT >= 0 && du.Int() != defRTT {
			d.fail("%s: default_us %d, the default_rtt constant is %d", id, du.Int(), defRTT)
			continue
		}
		cfgA, cfgB := v.configuredRTT(im, rep, "A"), v.configuredRTT(im, rep, "B")
		if op := rep.Get("rtt.old_path_us"); op.Exists() && op.Int() != 0 {
			// A run's manifest gives the configured RTT, and then that is
			// the claim; without one, the trace's last pre-migration value.
			if cfgA > 0 && op.Int() != cfgA {
				d.fail("%s: old-path RTT %d µs, the manifest configures path A at %d µs", id, op.Int(), cfgA)
				continue
			}
			if cfgA <= 0 && lastBefore > 0 && !within(op.Int(), lastBefore, 1) {
				d.fail("%s: old-path RTT %d µs is not what the trace reads before migrating (%d µs)", id, op.Int(), lastBefore)
				continue
			}
		}
		newPath := rep.Get("new_path_rtt_us").Int()
		if newPath == 0 {
			newPath = rep.Get("rtt.new_path_us").Int()
		}
		pvs := pathValidationRTTs(f)
		badNew := false
		for _, field := range []string{"new_path_rtt_us", "rtt.new_path_us"} {
			nv := rep.Get(field).Int()
			if nv <= 0 || nv == cfgB {
				continue
			}
			switch {
			case len(pvs) > 0 && !roughly(nv, pvs[0], 0.25):
				d.fail("%s: %s %d µs is neither the configured path B RTT (%d µs) nor near the path-validation round trip (%d µs)", id, field, nv, cfgB, pvs[0])
				badNew = true
			case len(pvs) == 0 && cfgB > 0:
				d.fail("%s: %s %d µs, the manifest configures path B at %d µs and the trace logs no path validation", id, field, nv, cfgB)
				badNew = true
			}
		}
		if badNew {
			continue
		}
		want := attributionOf(first, []int64{lastBefore, cfgA}, newPath, defRTT)
		if attr == "mixed" {
			if n := interleavings(f, at, lastBefore, newPath, defRTT); n < 2 {
				d.fail("%s: survey says mixed, but the RTT samples after migration switch between old (%d µs), new (%d µs) and default values %d times: not two estimators interleaved", id, lastBefore, newPath, n)
				continue
			}
			want = "mixed"
		}
		if want != "" && want != attr && !(want == "old-path" && attr == "converging") && !(want == "converging" && attr == "old-path") {
			d.fail("%s: first RTT %d µs (old %d, new %d, default %d) reads as %s, survey says %s", id, first, lastBefore, newPath, defRTT, want, attr)
			continue
		}
		if ca := rep.Get("rtt.converged_after_us").Int(); ca > 0 {
			if !convergedAt(f, at+ca, newPath, rep.Get("rtt.new_path_us").Int()) {
				d.fail("%s: converged_after_us %d: no smoothed-RTT sample at +%d µs is near the new path", id, ca, ca)
				continue
			}
			// …and it is the first: from the first post-migration sample on,
			// none earlier is already within 10% of the new path (the
			// survey's "within 10% of the new path from").
			if t, ok := earlierNear(f, at, first, at+ca-1000, 0.10, newPath, rep.Get("rtt.new_path_us").Int()); ok {
				d.fail("%s: converged_after_us %d, but the smoothed RTT is already within 10%% of the new path at +%d µs", id, ca, t-at)
				continue
			}
		}
		q3 := rep.Get("q3").String()
		w := q3Of(attr)
		if attr == "converging" && q3 == "UNKNOWN" {
			// Between the paths and not from an old-path packet's ACK
			// (checked below): not evidence either way.
			w = "UNKNOWN"
		}
		if attr == "unknown" || attr == "default" {
			// Near two references or none, or no sample at all: the value
			// says nothing of which path fed the estimator; only an
			// old-path packet's ACK (below) decides.
			w = "UNKNOWN"
		}
		why := "RTT attributed to " + attr
		if attr == "mixed" {
			// Two estimators interleaved without path ids (checked above):
			// which path an old packet's ACK fed cannot be told.
			w = "UNKNOWN"
		} else if pn, sentAt, ok := ackedBefore(f, at, rep.Get("rtt.first_after_us").Int(), defRTT); ok {
			// The sample came from acknowledging a packet sent on the old
			// path, before the migration: old-path input to the new path's
			// estimator, whatever value it happens to have.
			w, why = "NO", fmt.Sprintf("the first RTT sample after migration acknowledges packet %d, sent at %d µs before the migration", pn, sentAt)
		}
		if w != "" && w != q3 {
			d.fail("%s: %s means q3 %s, survey says %s", id, why, w, q3)
			continue
		}
		d.note("%s: first %s ms (%s)", id, fms(first), attr)
	}
	return d.result()
}

func fms(us int64) string { return fmt.Sprintf("%.1f", float64(us)/1000) }

func roughly(a, b int64, tol float64) bool {
	return math.Abs(float64(a-b)) <= tol*math.Max(float64(b), 1)
}

// attributionOf names what a first post-migration RTT value matches: the
// default; the new path (within 20 %); between the new path and an old-path
// reference (the configured RTT or the one measured before migrating), the
// old path when nearer it, else "converging"; beyond every reference
// (queueing only adds to a path's RTT, so a value outside them is no
// smoothed value moving between them), the nearest in ratio within a
// factor of two. "" = undecided.
func attributionOf(first int64, olds []int64, newPath, def int64) string {
	if def > 0 && within(first, def, 1000) {
		return "default"
	}
	if newPath <= 0 {
		return ""
	}
	var refs []int64
	for _, o := range olds {
		if o <= 0 {
			continue
		}
		if roughly(o, newPath, 0.25) {
			// The old path measured about what the new one is configured
			// at (queueing on path A under load): a value cannot tell
			// them apart.
			return ""
		}
		refs = append(refs, o)
	}
	if roughly(first, newPath, 0.2) {
		return "new-path"
	}
	if len(refs) == 0 {
		return "converging"
	}
	for _, old := range refs {
		if first > min(old, newPath) && first < max(old, newPath) {
			if math.Abs(float64(first-old)) < math.Abs(float64(first-newPath)) {
				return "old-path"
			}
			return "converging"
		}
	}
	best, bestD := "", math.Log(2)
	for _, ref := range append([]int64{newPath}, refs...) {
		if d := math.Abs(math.Log(float64(first) / float64(ref))); d <= bestD {
			best, bestD = "old-path", d
			if ref == newPath {
				best = "new-path"
			}
		}
	}
	return best
}

// interleavings counts switches between old-path, new-path and default
// smoothed-RTT values in the second after migration. A trace that logs two
// paths' estimators without a path id (quiche) interleaves them: a fresh
// estimator appears and the old one keeps logging after it.
func interleavings(f *traceFacts, at, old, newPath, def int64) int {
	if old <= 0 || newPath <= 0 {
		return 0
	}
	last, n := "", 0
	for _, s := range f.Samples {
		if s.T < at || s.T > at+1_000_000 || s.SRTT < 0 {
			continue
		}
		cur := ""
		switch {
		case def > 0 && within(s.SRTT, def, 1000):
			cur = "default"
		case roughly(s.SRTT, old, 0.15):
			cur = "old"
		case roughly(s.SRTT, newPath, 0.15):
			cur = "new"
		default:
			continue
		}
		if last != "" && cur != last {
			n++
		}
		last = cur
	}
	return n
}

// earlierNear finds a smoothed-RTT sample before before, from the first
// post-migration sample on (the last sample of value first between at and
// before: the trace may hold the same value earlier, before the path was
// validated), within tol of one of the new-path RTTs.
func earlierNear(f *traceFacts, at, first, before int64, tol float64, newPaths ...int64) (int64, bool) {
	t0 := int64(-1)
	for _, s := range f.Samples {
		if s.T >= at && s.T <= before+1000 && s.SRTT >= 0 && within(s.SRTT, first, 1) {
			t0 = s.T
		}
	}
	if t0 < 0 {
		return 0, false
	}
	for _, s := range f.Samples {
		if s.T < t0 || s.SRTT < 0 {
			continue
		}
		if s.T >= before {
			continue // events are logged slightly out of time order
		}
		for _, np := range newPaths {
			if np > 0 && roughly(s.SRTT, np, tol) {
				return s.T, true
			}
		}
	}
	return 0, false
}

// convergedAt: a smoothed-RTT sample at t (±1 ms) within 25% of the new
// path's RTT.
func convergedAt(f *traceFacts, t int64, newPaths ...int64) bool {
	for _, s := range f.Samples {
		if s.SRTT < 0 || !within(s.T, t, 1000) {
			continue
		}
		for _, np := range newPaths {
			if np > 0 && roughly(s.SRTT, np, 0.25) {
				return true
			}
		}
	}
	return false
}

// ackedBefore finds the ACK that produced the first post-migration RTT
// sample of value first (the first such sample at or after the migration
// that is not the default) and reports whether the packet it acknowledged
// (its largest) was sent before the migration.
func ackedBefore(f *traceFacts, at, first, def int64) (pn, sentAt int64, ok bool) {
	if len(f.Acks) == 0 || f.Sent == nil {
		return 0, 0, false
	}
	sampleT := int64(-1)
	for _, s := range f.Samples {
		if s.T < at || s.SRTT < 0 || (def > 0 && within(s.SRTT, def, 1000)) {
			continue
		}
		if within(s.SRTT, first, 1) {
			sampleT = s.T
			break
		}
	}
	if sampleT < 0 {
		return 0, 0, false
	}
	var last *ack
	for i := range f.Acks {
		if f.Acks[i].T > sampleT {
			break
		}
		last = &f.Acks[i]
	}
	if last == nil || last.T < at {
		return 0, 0, false
	}
	st, known := f.Sent[last.Largest]
	if !known || st >= at {
		return 0, 0, false
	}
	return last.Largest, st, true
}

// q3Of is the per-trace Q3 verdict an RTT attribution supports.
func q3Of(attr string) string {
	switch attr {
	case "new-path":
		return "YES"
	case "old-path", "converging":
		return "NO"
	}
	return ""
}

// checkBelowInitial (picoquic): the study's hardest case — a window that
// falls below the initial value is a loss cascade, not a reset. In every IP
// repetition no sample in scope takes an initial window exactly, and a
// repetition whose window falls below the initial value is not recorded as
// a reset. How far the window falls depends on the loss around the
// migration (the study saw it below the initial value in 5/5 of its runs;
// this project's picoquic runs record their own count), so the count and
// the floor hits are reported, not required.
func checkBelowInitial(v *Validator, doc, im gjson.Result) (Status, string) {
	var d verdict
	if noLive(&d, im) {
		return d.result()
	}
	floorHits, below, n := 0, 0, 0
	for _, rep := range im.Get("live.repetitions").Array() {
		if k := rep.Get("migration.kind").String(); k != "ip" && k != "path-change" {
			continue
		}
		id := rep.Get("id").String()
		f, err := v.repTrace(im, rep)
		if err != nil {
			liveErr(&d, id, err)
			continue
		}
		initial, minWin, _ := constantsOf(im, rep)
		from, at, to := rep.Get("scope_from_us").Int(), rep.Get("migration.at_us").Int(), rep.Get("scope_to_us").Int()
		w := deriveWindow(f, from, at, to, initial)
		lowest := int64(math.MaxInt64)
		for _, iv := range initial {
			lowest = min(lowest, iv)
		}
		n++
		if len(w.hits) > 0 {
			d.fail("%s: the window takes an initial value %v exactly at %v µs: that is a reset", id, initial, w.hits)
			continue
		}
		if w.minAfter >= 0 && w.minAfter < lowest {
			below++
			if rep.Get("reset_observed").Bool() {
				d.fail("%s: the window falls to %d B, below the initial window %d B without taking it: a loss cascade, but the survey records a reset", id, w.minAfter, lowest)
				continue
			}
			if w.minAfter == minWin {
				floorHits++
			}
			d.note("%s: 0 exact hits of %v, minimum %d B (below the initial window)", id, initial, w.minAfter)
			continue
		}
		d.note("%s: 0 exact hits of %v, minimum %d B (stays above the initial window)", id, initial, w.minAfter)
	}
	d.note("below the initial window in %d/%d, floor %s reached in %d/%d", below, n, "min_window", floorHits, n)
	return d.result()
}

// checkPinnedRTT (msquic): after migration every smoothed-RTT sample of the
// server equals the 333 ms default, and the constant is 333 ms.
func checkPinnedRTT(v *Validator, doc, im gjson.Result) (Status, string) {
	var d verdict
	if noLive(&d, im) {
		return d.result()
	}
	var def int64 = -1
	im.Get("constants").ForEach(func(_, c gjson.Result) bool {
		if c.Get("name").String() == "default_rtt" {
			def = int64(math.Round(c.Get("value").Float()))
		}
		return true
	})
	if def != 333000 {
		d.fail("default_rtt constant is %d µs, not 333000", def)
	}
	for _, rep := range im.Get("live.repetitions").Array() {
		id := rep.Get("id").String()
		f, err := v.repTrace(im, rep)
		if err != nil {
			liveErr(&d, id, err)
			continue
		}
		at := rep.Get("migration.at_us").Int()
		var n, off int
		var first, last int64 = -1, -1
		for _, s := range f.Samples {
			if s.T <= at || s.SRTT < 0 {
				continue
			}
			n++
			if first < 0 {
				first = s.T
			}
			last = s.T
			if s.SRTT != def {
				off++
			}
		}
		if n == 0 {
			d.fail("%s: no RTT samples after migration", id)
			continue
		}
		if off > 0 {
			d.fail("%s: %d of %d samples after migration differ from %d µs", id, off, n, def)
			continue
		}
		if rep.Get("rtt.attribution").String() != "default" || rep.Get("rtt.first_after_us").Int() != def {
			d.fail("%s: survey says %s at %d µs for a pinned estimator", id, rep.Get("rtt.attribution").String(), rep.Get("rtt.first_after_us").Int())
			continue
		}
		d.note("%s: %d/%d samples at %d µs over %.1f s", id, n, n, def, float64(last-first)/1e6)
	}
	return d.result()
}

func sortedInts(m map[string]int) string {
	var parts []string
	for _, k := range sortedKeys(m) {
		parts = append(parts, fmt.Sprintf("%s=%d", k, m[k]))
	}
	sort.Strings(parts)
	return strings.Join(parts, " ")
}

// pathValidated finds the first PATH_RESPONSE (sent or received) that
// follows a PATH_CHALLENGE in f, and its instant.
func pathValidated(f *traceFacts) (int64, bool) {
	challenged := false
	for _, e := range f.Events {
		switch {
		case strings.HasPrefix(e.Kind, "challenge_"):
			challenged = true
		case challenged && strings.HasPrefix(e.Kind, "response_"):
			return e.T, true
		}
	}
	return 0, false
}
