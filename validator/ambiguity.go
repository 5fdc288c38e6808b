package validator

import (
	"encoding/json"
	"fmt"
	"path/filepath"

	"github.com/tidwall/gjson"
)

// decisiveAttribution: an attribution that names where the first
// post-migration RTT sample came from ("unknown", "default" and "mixed"
// name none).
func decisiveAttribution(attr string) bool {
	switch attr {
	case "new-path", "old-path", "converging":
		return true
	}
	return false
}

// undecidedAttribution says whether the repetition's own evidence decides
// an attribution the validator's reading of the RTT values leaves
// undecided, and if not, why not. Evidence that decides:
//
//   - the trace shows the ACK behind the first post-migration sample and
//     the packet it acknowledged: sent before the migration, the sample is
//     the old path's ("old-path", or any value label beside q3 NO, which
//     rests on the packet); sent after it, in a repetition whose
//     window was reset in scope (the validator's own reading, so the
//     estimator restarted and holds nothing of the old path), the sample is
//     the new path's ("new-path", or "converging" on the way to it);
//   - the repetition names wire evidence (rtt.wire_evidence: a capture of
//     the repetition, read by the validator's own wire reader, issue #31),
//     which says which path's packet the sample acknowledged. Until that
//     reader exists a named capture decides nothing: the claim fails as
//     undecided, never passes.
func (v *Validator) undecidedAttribution(im, rep gjson.Result, f *traceFacts, at, def int64, attr string) (string, bool) {
	if w := rep.Get("rtt.wire_evidence"); w.Exists() {
		got, err := v.wireAttribution(im, rep, w.String())
		if err != nil {
			return fmt.Sprintf("its wire evidence %s does not decide it (%v)", w.String(), err), false
		}
		switch {
		case got == "old-path" && (attr == "old-path" || rep.Get("q3").String() == "NO"):
			return "", true
		case got == "new-path" && (attr == "new-path" || attr == "converging") && rep.Get("q3").String() != "NO":
			return "", true
		case got == "new-path" && (attr == "new-path" || attr == "converging"):
			// The first sample is the new path's, and a later one, of a
			// packet that crossed the old path, makes q3 NO: every claim
			// re-read from the wire (wireQ3) must say so.
			if ans, _, ok, err := v.wireQ3(im, rep); ok && err == nil && ans == "NO" {
				return "", true
			}
		}
		return fmt.Sprintf("its wire evidence %s reads %s", w.String(), got), false
	}
	pn, sentAt, found := firstSampleAck(f, at, rep.Get("rtt.first_after_us").Int(), def)
	switch {
	case !found:
		return "no evidence in the repetition decides it (the trace does not show the ACK behind the sample; no wire evidence)", false
	case sentAt < at:
		// The packet decides Q3 (NO) whatever the value reads like: the
		// attribution then only names the value, the decision rests on
		// the packet.
		if attr == "old-path" || rep.Get("q3").String() == "NO" {
			return "", true
		}
		return fmt.Sprintf("the sample acknowledges packet %d, sent at %d µs before the migration: the old path's", pn, sentAt), false
	}
	initial, _, _ := constantsOf(im, rep)
	reset := len(deriveWindow(f, rep.Get("scope_from_us").Int(), at, rep.Get("scope_to_us").Int(), initial).hits) > 0
	if !reset {
		return fmt.Sprintf("the sample acknowledges packet %d, sent after the migration, but without a reset in scope the smoothed value still carries the old path's estimator", pn), false
	}
	if attr == "new-path" || attr == "converging" {
		return "", true
	}
	return fmt.Sprintf("the sample acknowledges packet %d, sent after the migration and after a reset: the new path's", pn), false
}

// wireAttribution reads, with the validator's own wire reader, the path
// of the packet behind the first post-migration RTT sample: the
// repetition's first wire claim, re-derived from the named capture (it
// must pass), against the path that carried the sender's last packet in
// the capture (the path migrated to). It returns "new-path" or
// "old-path".
func (v *Validator) wireAttribution(im, rep gjson.Result, capture string) (string, error) {
	p, err := v.resolve(im.Get("live.origin").String(), capture)
	if err != nil {
		return "", err
	}
	if filepath.Base(p) != WireCaptureFile {
		return "", fmt.Errorf("%s is not a repetition's %s", capture, WireCaptureFile)
	}
	claims := rep.Get("wire_claims").Array()
	if len(claims) == 0 {
		return "", fmt.Errorf("the repetition states no wire claim for its first sample")
	}
	var c WireClaim
	if err := json.Unmarshal([]byte(claims[0].Raw), &c); err != nil {
		return "", fmt.Errorf("wire_claims[0]: %w", err)
	}
	c.perPacket = v.perPacketSample(im, rep, c.Packet)
	if st, why := v.checkWireClaim(filepath.Dir(p), c); st != Pass {
		return "", fmt.Errorf("its first wire claim does not hold: %s", why)
	}
	m, err := v.wire(filepath.Dir(p))
	if err != nil {
		return "", err
	}
	dir := 1
	if c.Sender == "client" {
		dir = 0
	}
	newPath := lastPath(m, dir)
	if newPath == "" {
		return "", fmt.Errorf("no packet of the sender in %s", m.Capture)
	}
	if c.Path == newPath {
		return "new-path", nil
	}
	return "old-path", nil
}

// wireQ3 is the repetition's Q3 as the validator's own wire reader reads
// its wire claims (rtt.wire_evidence and wire_claims, issue #31): every
// claim must hold; NO when one names a packet that crossed another path
// than the one migrated to (the path of the sender's last packet in the
// capture), else YES. ok is false when the repetition states no wire
// evidence; err says why stated evidence does not decide.
func (v *Validator) wireQ3(im, rep gjson.Result) (answer, why string, ok bool, err error) {
	capture := rep.Get("rtt.wire_evidence").String()
	claims := rep.Get("wire_claims").Array()
	if capture == "" || len(claims) == 0 {
		return "", "", false, nil
	}
	if _, err := v.wireAttribution(im, rep, capture); err != nil {
		return "", "", true, err
	}
	p, _ := v.resolve(im.Get("live.origin").String(), capture)
	m, err := v.wire(filepath.Dir(p))
	if err != nil {
		return "", "", true, err
	}
	for i, cl := range claims {
		var c WireClaim
		if err := json.Unmarshal([]byte(cl.Raw), &c); err != nil {
			return "", "", true, fmt.Errorf("wire_claims[%d]: %w", i, err)
		}
		c.perPacket = v.perPacketSample(im, rep, c.Packet)
		if st, found := v.checkWireClaim(filepath.Dir(p), c); st != Pass {
			return "", "", true, fmt.Errorf("wire_claims[%d] does not hold: %s", i, found)
		}
		dir := 1
		if c.Sender == "client" {
			dir = 0
		}
		if np := lastPath(m, dir); c.Path != np {
			return "NO", fmt.Sprintf("the wire: the sample from packet %d, which crossed %s, not the path migrated to (%s)", c.Packet, c.Path, np), true, nil
		}
	}
	return "YES", fmt.Sprintf("the wire: the deciding samples' packets (%d) crossed the path migrated to", len(claims)), true, nil
}

// lastPath is the path of the highest-numbered packet sent in direction
// dir: the path migrated to.
func lastPath(m *WireMap, dir int) string {
	path, last := "", int64(-1)
	for pn, ss := range m.Sent[dir] {
		if pn > last && len(ss) > 0 {
			path, last = ss[0].Path, pn
		}
	}
	return path
}
