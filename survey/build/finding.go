package build

// Live findings: a live observation explained with the evidence of an
// instrumented build. msquic's RTT estimator pinned at 333 ms after a
// migration (issue 30) is explained by the repetitions of `migaudit run
// --impl msquic --instrument` kept under data/evidence/msquic/instrumented/.

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/migaudit/migaudit/audit"
	"github.com/migaudit/migaudit/audit/gitsrc"
	"github.com/migaudit/migaudit/data"
	"github.com/migaudit/migaudit/parsers/msquiclog"
	"github.com/migaudit/migaudit/survey"
)

// InstrumentedDir is where an implementation's instrumented repetitions
// are kept, under data/evidence/<impl>/.
const InstrumentedDir = "instrumented"

// anchor is a source line the mechanism cites: the first line of path that
// contains needle at the pinned commit.
type anchor struct {
	Path, Needle, Kind, Note string
}

// msquicRTTAnchors are the mechanism of msquic's pinned RTT estimator, in
// the order the report tells it.
var msquicRTTAnchors = []anchor{
	{"src/core/path.c", "Path->ID = Connection->NextPathId++;", "path-id", "each new path gets the next ID: the handshake path is 0, the server's path to the client's new address 1"},
	{"src/core/path.c", "Connection->Paths[0] = *Path;", "set-active", "QuicPathSetActive copies the new path, ID and all, into Paths[0]"},
	{"src/core/sent_packet_metadata.h", "uint8_t PathId;", "field", "the path a sent packet is recorded under; nothing in src/ assigns it"},
	{"src/core/send.c", "QUIC_PACKET_BUILDER Builder = { 0 };", "zero-init", "the builder (and its metadata storage) starts zeroed, so every packet records PathId 0"},
	{"src/core/packet_builder.c", "Builder->Metadata->PacketNumber = Connection->Send.NextPacketNumber++;", "fix-site", "where each packet's metadata is filled in; the PathId is not"},
	{"src/core/loss_detection.c", "NewLargestAckDifferentPath = Path->ID != LargestAckedPacket->PathId;", "read", "the receiving path's ID (1 after the switch) against the recorded PathId (0)"},
	{"src/core/loss_detection.c", "if (NewLargestAckRetransmittable && !NewLargestAckDifferentPath) {", "gate", "QuicConnUpdateRtt runs only below this gate"},
	{"src/core/loss_detection.c", "const QUIC_PATH* Path = &Connection->Paths[0]; // TODO - Correct?", "consumer", "loss detection's time threshold reads Paths[0]'s smoothed RTT: the unfed 333 ms"},
}

// msquicProbeAnchors are the mechanism of the window's fall to the floor
// after the reset: the old path's probes, lost, cut the new path's window.
var msquicProbeAnchors = []anchor{
	{"src/core/connection.c", "Connection->Paths[0].SendChallenge = TRUE;", "challenge-old", "a packet from the client's new address makes the server challenge its still-active old path too"},
	{"src/core/path.c", "Connection->Paths[0] = *Path;", "set-active", "QuicPathSetActive moves that old path, its challenge still pending, out of Paths[0]; it stays in Paths[] being validated"},
	{"src/core/connection.c", "QUIC_PATH_VALIDATION_MIN_INITIAL_RTT_MULTIPLE *", "timeout", "its validation runs for at least 6 × the initial RTT (6 × 333 ms ≈ 2 s) before the path is abandoned"},
	{"src/core/loss_detection.c", "QuicCongestionControlOnDataLost(&Connection->CongestionControl, &LossEvent);", "loss-input", "the loss of any packet — whichever path it was sent on — goes to the connection's one congestion controller"},
	{"src/core/cubic.c", "LossEvent->LargestPacketNumberLost > Cubic->RecoverySentPacketNumber) {", "new-event", "a lost packet sent after the last congestion event starts a new one: each lost probe cuts the window by 0.7"},
}

// findingSpec is one live finding of an implementation: its mechanism and
// how its statement is made from the figures.
type findingSpec struct {
	anchors []anchor
	make    func([]survey.FindingFigures) survey.LiveFinding
}

// findingSpecs are each implementation's live findings, in report order.
var findingSpecs = map[string][]findingSpec{"msquic": {
	{msquicRTTAnchors, msquicRTTFinding},
	{msquicProbeAnchors, msquicProbeFinding},
}}

// liveFindingsFor builds pin's live findings from its instrumented
// repetitions (none: nil). A repetition whose log cannot be read is an
// error naming the file.
func liveFindingsFor(o Options, pin data.Implementation, w io.Writer) ([]survey.LiveFinding, []string, error) {
	specs, ok := findingSpecs[pin.Name]
	if !ok {
		return nil, nil, nil
	}
	base := filepath.Join(o.RepoRoot, "data", "evidence", pin.Name, InstrumentedDir)
	reps, _ := filepath.Glob(filepath.Join(base, "rep*"))
	sort.Slice(reps, func(i, j int) bool { return repNumber(reps[i]) < repNumber(reps[j]) })
	var figs []survey.FindingFigures
	var ids, notes []string
	for _, rd := range reps {
		f, skip, err := instrumentedFigures(o.RepoRoot, pin.Name, rd)
		if err != nil {
			return nil, nil, err
		}
		if skip != "" {
			notes = append(notes, "live finding: "+InstrumentedDir+"/"+filepath.Base(rd)+" not used: "+skip)
			continue
		}
		figs = append(figs, *f)
		ids = append(ids, f.Repetition)
	}
	if len(figs) == 0 {
		return nil, nil, nil
	}
	var out []survey.LiveFinding
	for _, sp := range specs {
		lf := sp.make(figs)
		ev, err := anchorEvidence(o, pin, sp.anchors)
		if err != nil {
			notes = append(notes, "live finding "+lf.ID+": source positions not cited: "+oneLine(err.Error()))
		}
		lf.Evidence, lf.Repetitions, lf.Figures = ev, ids, figs
		logf(w, "%-9s live finding %s: %d instrumented repetition(s)", pin.Name, lf.ID, len(figs))
		out = append(out, lf)
	}
	return out, notes, nil
}

func repNumber(dir string) int {
	n, _ := strconv.Atoi(strings.TrimPrefix(filepath.Base(dir), "rep"))
	return n
}

// instrumentedFigures reads one instrumented repetition directory; skip says
// why it is not used (no manifest, not an instrumented build, not VALID).
func instrumentedFigures(root, impl, rd string) (f *survey.FindingFigures, skip string, err error) {
	mb, err := os.ReadFile(filepath.Join(rd, "manifest.json"))
	if err != nil {
		return nil, "no manifest.json", nil
	}
	var man struct {
		Status string `json:"status"`
		Result struct {
			Settings map[string]string `json:"settings"`
		} `json:"result"`
	}
	if err := json.Unmarshal(mb, &man); err != nil {
		return nil, "", fmt.Errorf("%s: %w", filepath.Join(rd, "manifest.json"), err)
	}
	if man.Result.Settings["instrumented"] != "true" {
		return nil, "its manifest records no instrumented build", nil
	}
	if man.Status != "VALID" {
		return nil, "status " + man.Status + " (the migration did not happen as the scenario claims, or the host spoiled it)", nil
	}
	var logPath string
	for _, n := range []string{"server.instrument.log.gz", "server.instrument.log"} {
		if _, err := os.Stat(filepath.Join(rd, n)); err == nil {
			logPath = filepath.Join(rd, n)
			break
		}
	}
	if logPath == "" {
		return nil, "", fmt.Errorf("%s: an instrumented repetition without server.instrument.log.gz (re-run with migaudit run --impl %s --instrument)", rd, impl)
	}
	l, err := msquiclog.ReadFile(logPath)
	if err != nil {
		return nil, "", err
	}
	fig := Figures(msquiclog.Summarize(l, true), l)
	fig.Repetition = InstrumentedDir + "/" + filepath.Base(rd)
	fig.Log = filepath.ToSlash(relTo(root, logPath))
	fig.PatchSHA256 = man.Result.Settings["instrument_patch_sha256"]
	return &fig, "", nil
}

// Figures turns a server summary into the survey's figures.
func Figures(s msquiclog.Summary, l *msquiclog.Log) survey.FindingFigures {
	f := survey.FindingFigures{NewPathID: -1, PrevPathID: -1, FirstSentOnNewPN: -1, FirstSentOnNewStampedPathID: -1,
		GatesBefore: s.Before.Gates, UpdatesBefore: s.Before.Updates,
		EligibleAfter: s.After.Eligible, DifferentPathAfter: s.After.DifferentPath, UpdatesAfter: s.After.Updates,
		AckPathIDsAfter: idMap(s.After.AckPathIDs), LargestPathIDsAfter: idMap(s.After.LargestPathIDs), SRTTAfterUS: s.After.LastSRTTUS}
	if s.Switch != nil {
		f.SwitchUnixUS, f.NewPathID, f.PrevPathID = s.Switch.UnixUS, s.Switch.PathID, s.Switch.PrevPathID
		c := msquiclog.CongestionAfter(l, true, s.Switch.UnixUS, 1_000_000, s.Switch.Remote)
		f.CongestionEventsAfter, f.LowestWindowAfter, f.OldPathCongestionEventsAfter = c.Events, c.Lowest, c.OffPath
		if c.Events > 0 {
			f.LowestWindowAfterUS = c.LowestAtUS - s.Switch.UnixUS
		}
		var last int64
		f.OldPathSendsAfter, last = msquiclog.OffPathSends(l, true, s.Switch.UnixUS, s.Switch.Remote)
		if f.OldPathSendsAfter > 0 {
			f.OldPathLastSendAfterUS = last - s.Switch.UnixUS
		}
	}
	if s.FirstSentOnNew != nil {
		f.FirstSentOnNewPN, f.FirstSentOnNewStampedPathID = s.FirstSentOnNew.PN, s.FirstSentOnNew.StampedPathID
	}
	return f
}

func idMap(m map[int64]int) map[string]int {
	out := map[string]int{}
	for k, v := range m {
		out[strconv.FormatInt(k, 10)] = v
	}
	return out
}

// anchorEvidence finds each anchor's line in the pinned source.
func anchorEvidence(o Options, pin data.Implementation, anchors []anchor) ([]survey.Evidence, error) {
	src := mirrorFor(o.Mirrors, pin.Upstream)
	if src == "" {
		return []survey.Evidence{}, fmt.Errorf("no mirror of %s (pass --mirrors or set MIGAUDIT_MIRRORS)", pin.Upstream)
	}
	repo, err := gitsrc.Open(src)
	if err != nil {
		return []survey.Evidence{}, err
	}
	snap, err := repo.At(pin.Commit)
	if err != nil {
		return []survey.Evidence{}, err
	}
	out := []survey.Evidence{}
	for _, a := range anchors {
		b, err := snap.ReadFile(a.Path)
		if err != nil {
			return out, fmt.Errorf("%s at %s: %w", a.Path, pin.Commit[:12], err)
		}
		line := 0
		var text string
		for i, l := range strings.Split(string(b), "\n") {
			if strings.Contains(l, a.Needle) {
				line, text = i+1, strings.TrimSpace(l)
				break
			}
		}
		if line == 0 {
			return out, fmt.Errorf("%s at %s: no line holds %q", a.Path, pin.Commit[:12], a.Needle)
		}
		out = append(out, survey.Evidence{Path: a.Path, Line: line, Excerpt: text, Permalink: audit.Permalink(pin.Upstream, pin.Commit, a.Path, line), Kind: a.Kind, Note: a.Note})
	}
	return out, nil
}

// msquicRTTFinding states the finding from the figures: what holds in how
// many repetitions, computed, never assumed.
func msquicRTTFinding(figs []survey.FindingFigures) survey.LiveFinding {
	n := len(figs)
	var switched, starved, stamped0, eligible, different, updates int
	srtts := map[int64]bool{}
	for _, f := range figs {
		if f.NewPathID < 0 {
			continue
		}
		switched++
		eligible += f.EligibleAfter
		different += f.DifferentPathAfter
		updates += f.UpdatesAfter
		if f.UpdatesAfter == 0 && f.EligibleAfter > 0 && f.DifferentPathAfter == f.EligibleAfter {
			starved++
		}
		if len(f.LargestPathIDsAfter) == 1 && f.LargestPathIDsAfter["0"] > 0 && f.FirstSentOnNewStampedPathID == 0 {
			stamped0++
		}
		srtts[f.SRTTAfterUS] = true
	}
	var ss []string
	for v := range srtts {
		ss = append(ss, fmt.Sprintf("%.2f ms", float64(v)/1000))
	}
	sort.Strings(ss)
	st := fmt.Sprintf("The msquic server never feeds its RTT estimator after it makes the client's new path active: in %d of %d instrumented repetitions "+
		"QuicPathSetActive switched Paths[0] to a path with a new ID, and after it %d of %d ACK frames whose largest newly acknowledged packet was ack-eliciting "+
		"were gated as NewLargestAckDifferentPath and %d updated the estimator (QuicConnUpdateRtt), because every packet's metadata records PathId 0 "+
		"(in %d of %d: the largest acknowledged packets and the first packet sent on the new path carry 0) while the ACKs arrive on the new path; "+
		"the smoothed RTT stays at its initial value (%s at the end)",
		switched, n, different, eligible, updates, stamped0, n, strings.Join(ss, ", "))
	if starved != switched || switched != n {
		st += fmt.Sprintf("; the estimator was starved this way in %d of %d repetitions", starved, n)
	}
	return survey.LiveFinding{
		ID:        "msquic-rtt-never-fed-after-path-switch",
		Questions: []string{"Q3"},
		Statement: st,
		Requirement: "RFC 9002 §5.1: an endpoint generates an RTT sample on receiving an ACK frame whose largest newly acknowledged packet is ack-eliciting; " +
			"§5.3 and §6: smoothed_rtt and rttvar, updated from those samples, drive the loss time threshold and the PTO. " +
			"RFC 9000 §9.4: after the congestion controller and RTT estimator are reset for a new path, the new path's estimates are to come from that path; " +
			"an estimator that is never fed again leaves PTO, pacing and loss detection on the 333 ms default for the rest of the connection, " +
			"and leaves Q3 (old-path packets kept out of the new path's estimate) unobservable live",
		Reproduction: "sudo migaudit run --impl msquic --instrument --reps 1  # then: zcat <out>/rep1/server.instrument.log.gz | grep RTT_GATE",
		Fix: "Stamp the sending path on each packet's metadata, e.g. `Builder->Metadata->PathId = Builder->Path->ID;` where QuicPacketBuilderPrepare " +
			"fills in the packet number (src/core/packet_builder.c). ACKs of packets sent on the active path then pass the gate and feed the new path's " +
			"estimator; ACKs of packets sent on the old path stay gated, as RFC 9000 §9.4 wants",
	}
}

// msquicProbeFinding states why the server's window falls to the floor
// within about half a second of the reset, from the figures.
func msquicProbeFinding(figs []survey.FindingFigures) survey.LiveFinding {
	n := len(figs)
	var switched, events, offPath, floor, probes int
	var lows []string
	var maxProbeUS, maxFloorUS int64
	for _, f := range figs {
		if f.NewPathID < 0 {
			continue
		}
		switched++
		events += f.CongestionEventsAfter
		offPath += f.OldPathCongestionEventsAfter
		probes += f.OldPathSendsAfter
		maxProbeUS = max(maxProbeUS, f.OldPathLastSendAfterUS)
		if f.CongestionEventsAfter > 0 {
			lows = append(lows, fmt.Sprintf("%d B after %.0f ms", f.LowestWindowAfter, float64(f.LowestWindowAfterUS)/1000))
			maxFloorUS = max(maxFloorUS, f.LowestWindowAfterUS)
			floor++
		}
	}
	st := fmt.Sprintf("The msquic server cuts the reset window of the client's new path for the losses of packets it keeps sending to the client's abandoned address: "+
		"in %d of %d instrumented repetitions, in the first second after QuicPathSetActive, %d of %d congestion events were started by the loss of a packet sent to the old address "+
		"(%d runs of packets went there after the switch, the last %.2f s after it), each cutting the new path's window by 0.7; the window reached %s",
		switched, n, offPath, events, probes, float64(maxProbeUS)/1e6, strings.Join(lows, ", "))
	return survey.LiveFinding{
		ID:        "msquic-old-path-probe-losses-cut-new-path-window",
		Questions: []string{"Q3"},
		Statement: st,
		Requirement: "RFC 9000 §9.4: packets sent on the old path after a migration must not feed the new path's congestion controller or RTT estimator " +
			"(the congestion side of Q3); RFC 9002 §7.3.2: a congestion event is entered on the loss of a packet sent after the start of the current recovery period, " +
			"for packets that belong to this controller's path",
		Reproduction: "sudo migaudit run --impl msquic --instrument --reps 1  # then: zcat <out>/rep1/server.instrument.log.gz | grep -E 'PATH_ACTIVE|SENT|LOSS'",
		Fix: "Keep the old path's probes out of the active path's congestion controller: do not pass losses of packets sent on a path other than Paths[0] to " +
			"QuicCongestionControlOnDataLost (the packets' PathId, once stamped, says which path), or stop challenging the old path once the peer has moved " +
			"to a new one. With either, the window after the reset grows from 12,200 B instead of being cut to the 2,440 B floor",
	}
}
