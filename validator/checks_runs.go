package validator

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math/bits"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/tidwall/gjson"
)

// runID is what makes a trace one run and no other: its decompressed
// content, the connection IDs the endpoints chose at random, the wall-clock
// time it started, and the ephemeral client ports it saw. A file hash says
// nothing here: the same trace gzipped again has a new one.
type runID struct {
	Digest    string          // sha256 of the decompressed content
	CIDs      map[string]bool // connection IDs (hex) named anywhere in the trace
	Wall      time.Time       // wall-clock start, where the trace or its meta file records one
	WallFrom  string
	Endpoints []string // sorted ip:port endpoints the trace logs (timeline CSV, draft-00 qlog)
	Rows      int      // data rows of a timeline CSV
	// NameCID is the connection ID a trace's file name carries (ngtcp2
	// names its qlog after one); NameInContent says whether the content
	// names it too.
	NameCID       string
	NameInContent bool
	// Meta is the sibling <stem>.meta.json of a timeline CSV: its row
	// count and the endpoints of its final path statistics.
	MetaRows      int
	MetaEndpoints []string
}

var (
	cidField  = lazyRegexp(`"(?:group_id|ODCID|odcid|[a-z_]*connection_id|scid|dcid|description)"\s*:\s*"([0-9a-fA-F]{8,})"`)
	wallField = lazyRegexp(`"wall_clock_time"\s*:\s*"([^"]+)"`)
	endpoint  = lazyRegexp(`\b(\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}:\d{1,5})\b`)
	hexStem   = lazyRegexp(`^[0-9a-f]{16,}$`)
	draftAddr = lazyRegexp(`"addr_from"\s*:\s*\{\s*"ip_v4"\s*:\s*"([0-9.]+)"\s*,\s*"port_v4"\s*:\s*(\d+)`)
)

func (v *Validator) runIdentity(path string) (*runID, error) {
	return memo(&v.mu, v.runs, canonical(path), func() (*runID, error) {
		if _, err := os.Stat(path); err != nil {
			return nil, fmt.Errorf("%w: %s absent", errNoSource, path)
		}
		// A trace this validator has read already gives its identity
		// (its facts may have been dropped since, its identity stays);
		// otherwise the trace is read once for both, so that its own
		// implementation's checks do not decompress it again.
		v.mu.Lock()
		e, ok := v.reads[canonical(path)]
		v.mu.Unlock()
		if ok && e.done() && e.err == nil {
			return e.val.id, nil
		}
		r, err := v.readOnce(path)
		if err != nil {
			// Not a trace the facts readers know: its identity alone.
			return readRunID(path)
		}
		return r.id, nil
	})
}

// connectionIDs finds the values of the connection-ID fields cidField
// names ("group_id", "ODCID", "odcid", "*connection_id", "scid", "dcid",
// "description" with a value of 8 or more hex digits), by a byte search
// for each field name's end and a hand-written match there: the pattern,
// starting with a bare quote, costs a regexp engine a try at every quote
// of a JSON trace.
func connectionIDs(data []byte) []string {
	var out []string
	for _, key := range [][]byte{[]byte(`id"`), []byte(`ID"`), []byte(`description"`)} {
		for off := 0; ; {
			i := bytes.Index(data[off:], key)
			if i < 0 {
				break
			}
			end := off + i + len(key) // just past the closing quote
			off = end
			lo := max(0, end-len(key)-40)
			q := bytes.LastIndexByte(data[lo:end-1], '"')
			if q < 0 {
				continue
			}
			if !cidName(data[lo+q+1 : end-1]) {
				continue
			}
			if v, ok := hexValue(data[end:min(len(data), end+200)]); ok {
				out = append(out, strings.ToLower(string(v)))
			}
		}
	}
	return out
}

func cidName(n []byte) bool {
	switch string(n) {
	case "group_id", "ODCID", "odcid", "scid", "dcid", "description":
		return true
	}
	if !bytes.HasSuffix(n, []byte("connection_id")) {
		return false
	}
	for _, c := range n {
		if !(c == '_' || c >= 'a' && c <= 'z') {
			return false
		}
	}
	return true
}

// hexValue matches `\s*:\s*"([0-9a-fA-F]{8,})"` at the start of b.
func hexValue(b []byte) ([]byte, bool) {
	b = bytes.TrimLeft(b, " \t\r\n")
	if len(b) == 0 || b[0] != ':' {
		return nil, false
	}
	b = bytes.TrimLeft(b[1:], " \t\r\n")
	if len(b) == 0 || b[0] != '"' {
		return nil, false
	}
	n := 1
	for n < len(b) && (b[n] >= '0' && b[n] <= '9' || b[n] >= 'a' && b[n] <= 'f' || b[n] >= 'A' && b[n] <= 'F') {
		n++
	}
	if n-1 < 8 || n >= len(b) || b[n] != '"' {
		return nil, false
	}
	return b[1:n], true
}

func readRunID(path string) (*runID, error) {
	data, err := readMaybeGz(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return runIDFrom(path, data), nil
}

// runIDFrom reads a trace's identity from its decompressed content.
func runIDFrom(path string, data []byte) *runID {
	sum := sha256.Sum256(data)
	id := &runID{Digest: hex.EncodeToString(sum[:]), CIDs: map[string]bool{}}
	for _, c := range connectionIDs(data) {
		id.CIDs[c] = true
	}
	if m := wallField().FindSubmatch(data[:min(len(data), 8192)]); m != nil {
		if t, err := time.Parse(time.RFC3339Nano, string(m[1])); err == nil {
			id.Wall, id.WallFrom = t, "the trace's wall_clock_time"
		}
	}
	base := filepath.Base(path)
	stem, _, _ := strings.Cut(base, ".")
	if hexStem().MatchString(strings.ToLower(stem)) {
		id.NameCID = strings.ToLower(stem)
		id.NameInContent = bytes.Contains(data, []byte(id.NameCID)) || bytes.Contains(data, bytes.ToUpper([]byte(id.NameCID)))
	}
	eps := map[string]bool{}
	head := bytes.TrimLeft(data[:min(len(data), 4096)], " \t\r\n\x1e")
	switch {
	case bytes.Contains(head, []byte(`"qlog_version": "draft-00"`)) || bytes.Contains(head, []byte(`"event_fields"`)):
		// picoquic's draft-00 qlog prints sin_port as stored, in network
		// byte order (loglib/qlog.c, no ntohs): on a little-endian
		// machine the real port 40854 reads 38559. Both readings are kept,
		// so the check holds whether or not a version fixes it.
		for _, m := range draftAddr().FindAllSubmatch(data, -1) {
			eps[string(m[1])+":"+string(m[2])] = true
			if p, err := strconv.ParseUint(string(m[2]), 10, 16); err == nil {
				eps[string(m[1])+":"+strconv.FormatUint(uint64(bits.ReverseBytes16(uint16(p))), 10)] = true
			}
		}
	case len(head) > 0 && head[0] != '{' && head[0] != '[':
		rows, csvEps := csvEndpoints(data)
		id.Rows = rows
		for _, e := range csvEps {
			eps[e] = true
		}
		if strings.Contains(base, ".csv") {
			readMeta(filepath.Join(filepath.Dir(path), strings.SplitN(base, ".csv", 2)[0]+".meta.json"), id)
		}
	}
	id.Endpoints = sortedKeys(eps)
	return id
}

// csvEndpoints counts a timeline CSV's data rows and collects its local
// and peer columns.
func csvEndpoints(data []byte) (int, []string) {
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	col := map[string]int{}
	rows := 0
	eps := map[string]bool{}
	for n := 0; sc.Scan(); n++ {
		fields := strings.Split(strings.TrimSpace(sc.Text()), ",")
		if n == 0 {
			for i, h := range fields {
				col[strings.TrimSpace(h)] = i
			}
			continue
		}
		if len(fields) == 1 && fields[0] == "" {
			continue
		}
		rows++
		for _, c := range []string{"local", "peer"} {
			if i, ok := col[c]; ok && i < len(fields) && fields[i] != "" {
				eps[fields[i]] = true
			}
		}
	}
	return rows, sortedKeys(eps)
}

func readMeta(p string, id *runID) {
	b, err := os.ReadFile(p)
	if err != nil || !gjson.ValidBytes(b) {
		return
	}
	m := gjson.ParseBytes(b)
	if us := m.Get("reference_unix_us").Int(); us > 0 && id.Wall.IsZero() {
		id.Wall, id.WallFrom = time.UnixMicro(us).UTC(), filepath.Base(p)+" reference_unix_us"
	}
	id.MetaRows = int(m.Get("rows").Int())
	eps := map[string]bool{}
	m.Get("final_path_stats").ForEach(func(_, s gjson.Result) bool {
		for _, k := range []string{"local", "peer"} {
			if e := s.Get(k).String(); e != "" {
				eps[e] = true
			}
		}
		return true
	})
	id.MetaEndpoints = sortedKeys(eps)
}

// repRef is one repetition anywhere in the survey.
type repRef struct {
	impl, rep, origin, trace string
}

func allReps(doc gjson.Result) []repRef {
	var out []repRef
	for _, im := range doc.Get("implementations").Array() {
		for _, rep := range im.Get("live.repetitions").Array() {
			out = append(out, repRef{im.Get("name").String(), rep.Get("id").String(), im.Get("live.origin").String(), rep.Get("trace").String()})
		}
	}
	return out
}

// checkRunIdentity: each repetition's trace is its own run. Within the
// repetition: the manifest recorded this very file (its sha256 at run
// time), the trace started during the run, it names the connection ID its
// file is named after, and it agrees with its own meta file and with the
// addresses the run verified. Against every other repetition of the survey
// (any implementation): no shared decompressed content, connection ID,
// wall-clock start or set of endpoints.
func checkRunIdentity(v *Validator, doc, im gjson.Result) (Status, string) {
	var d verdict
	name := im.Get("name").String()
	origin := im.Get("live.origin").String()
	ids := map[repRef]*runID{}
	for _, r := range allReps(doc) {
		p, err := v.resolve(r.origin, r.trace)
		if err != nil {
			continue
		}
		if id, err := v.runIdentity(p); err == nil {
			ids[r] = id
		}
	}
	ok := 0
	for _, rep := range im.Get("live.repetitions").Array() {
		rid := rep.Get("id").String()
		me := repRef{name, rid, origin, rep.Get("trace").String()}
		p, err := v.resolve(origin, me.trace)
		if err != nil {
			liveErr(&d, rid, err)
			continue
		}
		id, err := v.runIdentity(p)
		if err != nil {
			if errors.Is(err, errNoSource) {
				d.unverifiable("%s: %v", rid, err)
			} else {
				d.fail("%s: %v", rid, err)
			}
			continue
		}
		n0 := len(d.fails)
		if id.NameCID != "" && !id.NameInContent {
			d.fail("%s: %s is named after connection ID %s, which the trace never mentions: another run's trace under this run's name", rid, filepath.Base(p), id.NameCID)
		}
		if id.MetaRows > 0 && id.Rows != id.MetaRows {
			d.fail("%s: the timeline has %d rows, its meta file recorded %d", rid, id.Rows, id.MetaRows)
		}
		if missing := notIn(id.MetaEndpoints, id.Endpoints); len(id.Endpoints) > 0 && len(missing) > 0 {
			d.fail("%s: the meta file's paths %v never appear in the timeline (%v)", rid, missing, id.Endpoints)
		}
		if origin == "own-runs" {
			v.checkAgainstManifest(&d, im, rep, p, id)
		}
		for r, other := range ids {
			if r == me || (r.origin == me.origin && r.trace == me.trace) {
				continue
			}
			who := r.impl + "/" + r.rep
			switch {
			case other.Digest == id.Digest:
				d.fail("%s: the trace's content is %s's (decompressed sha256 %s…): a copy, not a run", rid, who, id.Digest[:12])
			case shared(id.CIDs, other.CIDs) != "":
				d.fail("%s: connection ID %s also appears in %s's trace: the same connection", rid, shared(id.CIDs, other.CIDs), who)
			case !id.Wall.IsZero() && id.Wall.Equal(other.Wall):
				d.fail("%s: the trace starts at %s, exactly as %s's", rid, id.Wall.Format(time.RFC3339Nano), who)
			case len(id.Endpoints) >= 2 && strings.Join(id.Endpoints, ",") == strings.Join(other.Endpoints, ","):
				d.fail("%s: the trace sees the same endpoints as %s's (%s): the same connection", rid, who, strings.Join(id.Endpoints, ", "))
			}
		}
		if len(d.fails) == n0 {
			ok++
		}
	}
	d.note("%d/%d traces are runs of their own (content, connection IDs, start time, endpoints)", ok, len(im.Get("live.repetitions").Array()))
	return d.result()
}

// checkAgainstManifest ties an own run's trace to its manifest: the file
// the run recorded (sha256), the run's interval, and the addresses the run
// verified.
func (v *Validator) checkAgainstManifest(d *verdict, im, rep gjson.Result, tracePath string, id *runID) {
	rid := rep.Get("id").String()
	ref := rep.Get("manifest").String()
	if ref == "" {
		return // checkRepetitions fails an own run without a manifest
	}
	mp, err := v.resolve("own-runs", ref)
	if err != nil {
		return
	}
	b, err := os.ReadFile(mp)
	if err != nil || !gjson.ValidBytes(b) {
		return
	}
	man := gjson.ParseBytes(b)
	rel, err := filepath.Rel(filepath.Dir(mp), tracePath)
	if err != nil || strings.HasPrefix(rel, "..") {
		d.fail("%s: trace %s lies outside its run's directory %s", rid, rep.Get("trace").String(), filepath.Dir(ref))
		return
	}
	rel = filepath.ToSlash(rel)
	if files := man.Get("files"); files.Exists() {
		found := false
		files.ForEach(func(_, f gjson.Result) bool {
			if f.Get("name").String() != rel {
				return true
			}
			found = true
			if sha, err := v.fileSHA(tracePath); err == nil && f.Get("sha256").String() != "" && sha != f.Get("sha256").String() {
				d.fail("%s: the run recorded %s with sha256 %s…, the file there now has %s…", rid, rel, short12(f.Get("sha256").String()), short12(sha))
			}
			return false
		})
		if !found {
			d.fail("%s: the run's manifest lists no %s: the trace is not a file this run wrote", rid, rel)
		}
	}
	start, end := man.Get("start").Time(), man.Get("end").Time()
	if !id.Wall.IsZero() && !start.IsZero() && !end.IsZero() {
		if id.Wall.Before(start.Add(-2*time.Second)) || id.Wall.After(end) {
			d.fail("%s: %s is %s, outside the run (%s to %s)", rid, id.WallFrom, id.Wall.Format(time.RFC3339Nano), man.Get("start").String(), man.Get("end").String())
		}
	}
	if len(id.Endpoints) > 0 {
		var verified []string
		man.Get("verification.evidence").ForEach(func(_, e gjson.Result) bool {
			for _, m := range endpoint().FindAllStringSubmatch(e.String(), -1) {
				verified = append(verified, m[1])
			}
			return true
		})
		if missing := notIn(verified, id.Endpoints); len(missing) > 0 {
			d.fail("%s: the run verified endpoints %v that the trace never sees (it sees %v)", rid, missing, id.Endpoints)
		}
	}
}

func short12(s string) string { return s[:min(12, len(s))] }

func notIn(xs, set []string) []string {
	in := map[string]bool{}
	for _, s := range set {
		in[s] = true
	}
	var out []string
	for _, x := range xs {
		if !in[x] {
			out = append(out, x)
		}
	}
	sort.Strings(out)
	return out
}

func shared(a, b map[string]bool) string {
	var hits []string
	for k := range a {
		if b[k] {
			hits = append(hits, k)
		}
	}
	if len(hits) == 0 {
		return ""
	}
	sort.Strings(hits)
	return hits[0]
}
