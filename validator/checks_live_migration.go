package validator

// Migration evidence: the IP change and its instant, from the trace, the
// endpoints' logs and the run's counters.

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"

	"github.com/tidwall/gjson"
)

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
