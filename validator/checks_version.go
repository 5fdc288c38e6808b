package validator

import (
	"bufio"
	"compress/gzip"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/tidwall/gjson"
)

// <impl>/live-version: the version an own run claims (the entry's
// live_version, each repetition's version, its manifest's) against what
// the run's own artefacts record independently of the manifest's
// version field:
//
//   - quic-go: the trace's qlog header code_version, and the module hash
//     (h1:…) the binary's build information recorded, which must be the
//     hash go.sum records for that version of github.com/quic-go/quic-go;
//   - quiche: server.meta.json's quiche_version and binding_version (the
//     harness wrote them from the loaded module), and the native module's
//     sha256 against the one harnesses/quiche/install.go pins;
//   - picoquic, msquic: the commit the binaries were built from, recorded
//     in full in their build record, must be the entry's pinned commit;
//   - ngtcp2: its qlog records no version; the Debian packages' versions
//     (dpkg-query) must be the claimed one (--system);
//   - ngtcp2 and quic-go built from the checkout (result.settings.build
//     from-checkout): as picoquic and msquic, the build record's commit,
//     and a git-describe version (v0.61.0-8-g2cfe6ee0b5ac) against the
//     mirror: the tag, the count of commits after it, the hash.
//
// A forger who rewrites the version everywhere a person would look still
// leaves these behind, unless they rewrite the traces and the module
// hashes too (a rewritten trace changes its sha256, which run-identity
// and the run record tie to the run).
func init() {
	perImplChecks = append(perImplChecks, check{name: "live-version", fn: checkLiveVersion, claim: "own-runs"})
}

var (
	h1Hash     = regexp.MustCompile(`h1:[A-Za-z0-9+/=]+`)
	fullCommit = regexp.MustCompile(`\b[0-9a-f]{40}\b`)
	nativeSHA  = regexp.MustCompile(`NativeSHA256\s*=\s*"([0-9a-f]{64})"`)
	describeRe = regexp.MustCompile(`^(.+)-(\d+)-g([0-9a-f]{7,40})$`)
)

func checkLiveVersion(v *Validator, doc, im gjson.Result) (Status, string) {
	var d verdict
	name := im.Get("name").String()
	lv := im.Get("live_version").String()
	commit := im.Get("commit").String()
	for _, rep := range im.Get("live.repetitions").Array() {
		rid := rep.Get("id").String()
		claimed := rep.Get("version").String()
		if lv != "" && !strings.Contains(claimed, lv) {
			d.fail("%s: version %q, the entry's live_version is %s", rid, claimed, lv)
		}
		mp, err := v.resolve("own-runs", rep.Get("manifest").String())
		if err != nil {
			d.fail("%s: manifest: %v", rid, err)
			continue
		}
		b, err := os.ReadFile(mp)
		if err != nil {
			d.unverifiable("%s: %v", rid, err)
			continue
		}
		if !gjson.ValidBytes(b) {
			d.fail("%s: %s is not JSON", rid, rep.Get("manifest").String())
			continue
		}
		man := gjson.ParseBytes(b)
		if mv := man.Get("version").String(); mv != claimed {
			d.fail("%s: version %q, its manifest says %q", rid, claimed, mv)
		}
		dir := filepath.Dir(mp)
		if man.Get("result.settings.build").String() == "from-checkout" && (name == "quic-go" || name == "ngtcp2") {
			// Built from the checkout (harnesses/upstream): its build
			// record names the commit, as for picoquic and msquic, and
			// the version is that commit's git describe.
			builtFrom(&d, rid, claimed, commit, man)
			v.describes(&d, rid, claimed, im.Get("upstream").String(), commit)
			continue
		}
		switch name {
		case "quic-go":
			v.quicGoVersion(&d, rid, claimed, rep, man)
		case "quiche":
			v.quicheVersion(&d, rid, claimed, dir, man)
		case "picoquic", "msquic", "quicly", "lsquic", "xquic":
			builtFrom(&d, rid, claimed, commit, man)
		case "quinn":
			v.quinnVersion(&d, rid, claimed, im.Get("upstream").String(), man)
		case "ngtcp2":
			if !man.Get("binaries").Exists() {
				d.unverifiable("%s: the run recorded no binaries (and the qlog records no version)", rid)
				continue
			}
			man.Get("binaries").ForEach(func(_, bin gjson.Result) bool {
				if bv := bin.Get("version").String(); bv != claimed && !strings.HasPrefix(bv, claimed+"+") && !strings.HasPrefix(bv, claimed+"-") {
					d.fail("%s: %s is Debian version %s, not %s", rid, bin.Get("path").String(), bv, claimed)
				}
				return true
			})
			d.note("%s: %s from the Debian packages (the qlog records no version)", rid, claimed)
		default:
			d.unverifiable("%s: no independent record of %s's version is known to the validator", rid, name)
		}
	}
	return d.result()
}

// cargoVersion matches a Cargo.toml's package version line.
var cargoVersion = regexp.MustCompile(`^version = "([^"]+)"`)

// quinnVersion: Debian's quinn crates ran (the binary's record, from the
// build's Cargo.lock, is the claim); the live commit the manifest names
// must be that version in quinn's own tree (quinn/Cargo.toml), read from
// the upstream here.
func (v *Validator) quinnVersion(d *verdict, rid, claimed, upstream string, man gjson.Result) {
	man.Get("binaries").ForEach(func(_, bin gjson.Result) bool {
		if bv := bin.Get("version").String(); bv != claimed {
			d.fail("%s: %s records %q, not %q", rid, bin.Get("path").String(), bv, claimed)
		}
		return true
	})
	lc := man.Get("result.settings.live_commit").String()
	if !fullCommit.MatchString(lc) {
		d.fail("%s: the manifest names no live commit (%q)", rid, lc)
		return
	}
	t, err := v.sources.get(upstream, lc)
	if err != nil {
		d.unverifiable("%s: live commit %s not read: %v", rid, short12(lc), err)
		return
	}
	lines, err := t.lines("quinn/Cargo.toml")
	if err != nil {
		d.fail("%s: quinn/Cargo.toml at %s: %v", rid, short12(lc), err)
		return
	}
	ver := ""
	for _, l := range lines {
		if m := cargoVersion.FindStringSubmatch(l); m != nil {
			ver = m[1]
			break
		}
	}
	if ver == "" || !strings.HasPrefix(claimed, "quinn "+ver+" ") {
		d.fail("%s: version %q, but quinn/Cargo.toml at the live commit %s says %q", rid, claimed, short12(lc), ver)
		return
	}
	d.note("%s: quinn %s, the live commit %s's quinn/Cargo.toml", rid, ver, short12(lc))
}

func (v *Validator) quicGoVersion(d *verdict, rid, claimed string, rep, man gjson.Result) {
	p, err := v.resolve("own-runs", rep.Get("trace").String())
	if err != nil {
		d.fail("%s: trace: %v", rid, err)
		return
	}
	header, err := firstLine(p)
	if err != nil {
		d.unverifiable("%s: %v", rid, err)
		return
	}
	cv := gjson.Get(header, "code_version").String()
	switch {
	case cv == "":
		d.unverifiable("%s: the trace records no code_version", rid)
	case cv != claimed:
		d.fail("%s: the trace's code_version is %q, the run claims %s", rid, cv, claimed)
	}
	// The module hash the binary's build information recorded, against
	// go.sum's line for the claimed version.
	sum, err := os.ReadFile(filepath.Join(v.opts.RepoRoot, "go.sum"))
	if err != nil {
		d.unverifiable("%s: go.sum: %v", rid, err)
		return
	}
	want := ""
	for _, line := range strings.Split(string(sum), "\n") {
		if f := strings.Fields(line); len(f) == 3 && f[0] == "github.com/quic-go/quic-go" && f[1] == claimed {
			want = f[2]
		}
	}
	found := false
	man.Get("binaries").ForEach(func(_, bin gjson.Result) bool {
		h := h1Hash.FindString(bin.Get("version_source").String())
		if h == "" {
			return true
		}
		found = true
		switch {
		case want == "":
			d.fail("%s: go.sum records no github.com/quic-go/quic-go %s; the binary was built from the module with %s", rid, claimed, h)
		case h != want:
			d.fail("%s: the binary's module hash %s is not go.sum's %s for quic-go %s", rid, h, want, claimed)
		}
		return true
	})
	if !found {
		d.unverifiable("%s: no binary of the run records a module hash", rid)
	}
	d.note("%s: code_version %s, module %s", rid, cv, want)
}

func (v *Validator) quicheVersion(d *verdict, rid, claimed, dir string, man gjson.Result) {
	b, err := os.ReadFile(filepath.Join(dir, "server.meta.json"))
	if err != nil {
		d.unverifiable("%s: %v", rid, err)
		return
	}
	meta := gjson.ParseBytes(b)
	qv, bv := meta.Get("quiche_version").String(), meta.Get("binding_version").String()
	if !strings.Contains(claimed, "quiche "+qv+" ") || !strings.Contains(claimed, "@"+bv+")") {
		d.fail("%s: server.meta.json records quiche %s in binding %s, the run claims %q", rid, qv, bv, claimed)
	}
	pinned := ""
	if src, err := os.ReadFile(filepath.Join(v.opts.RepoRoot, "harnesses", "quiche", "install.go")); err == nil {
		if m := nativeSHA.FindSubmatch(src); m != nil {
			pinned = string(m[1])
		}
	}
	man.Get("binaries").ForEach(func(_, bin gjson.Result) bool {
		if strings.HasSuffix(bin.Get("path").String(), "node.napi.node") {
			if pinned == "" {
				d.unverifiable("%s: harnesses/quiche/install.go pins no native module sha256 here", rid)
			} else if got := bin.Get("sha256").String(); got != pinned {
				d.fail("%s: the native module's sha256 %s… is not the pinned %s…", rid, short12(got), short12(pinned))
			}
		}
		return true
	})
	d.note("%s: quiche %s in binding %s", rid, qv, bv)
}

// builtFrom checks binaries built from a checkout: their build record
// names the full commit, which must be the pinned one, and the version
// string carries its prefix.
func builtFrom(d *verdict, rid, claimed, commit string, man gjson.Result) {
	commits := map[string]bool{}
	man.Get("binaries").ForEach(func(_, bin gjson.Result) bool {
		for _, c := range fullCommit.FindAllString(bin.Get("version").String()+" "+bin.Get("version_source").String(), -1) {
			commits[c] = true
		}
		return true
	})
	if !commits[commit] {
		d.fail("%s: no binary's build record names the pinned commit %s (found %s)", rid, short12(commit), strings.Join(sortedKeys(commits), ", "))
		return
	}
	if !strings.Contains(claimed, commit[:12]) {
		d.fail("%s: version %q does not carry the commit it was built from, %s", rid, claimed, commit[:12])
	}
	d.note("%s: built from %s", rid, commit[:12])
}

// describes: a version in git describe's form (<tag>-<n>-g<hash>) must be
// the pinned commit's: the tag in the mirror, the commit n commits after
// it (commits the pin reaches that the tag does not), the hash its prefix.
// Changing the tag alone leaves the hash, which every other check reads,
// as it was.
func (v *Validator) describes(d *verdict, rid, claimed, upstream, commit string) {
	m := describeRe.FindStringSubmatch(claimed)
	if m == nil {
		return
	}
	tag, hash := m[1], m[3]
	if !strings.HasPrefix(commit, hash) {
		d.fail("%s: version %q names commit %s, the pin is %s", rid, claimed, hash, short12(commit))
		return
	}
	n, err := memo(&v.mu, v.counts, "describe#"+upstream+"#"+tag+"#"+commit, func() (int, error) {
		dir, err := findMirror(v.opts.Mirrors, upstream)
		if err != nil {
			return 0, err
		}
		return commitsAfterTag(dir, tag, commit)
	})
	switch {
	case err != nil:
		sourceErr(d, fmt.Errorf("%s: version %q: %w", rid, claimed, err))
	case strconv.Itoa(n) != m[2]:
		d.fail("%s: version %q, but the pinned commit %s is %d commits after %s", rid, claimed, short12(commit), n, tag)
	default:
		d.note("%s: %s is %d commits after %s", rid, short12(commit), n, tag)
	}
}

// commitsAfterTag counts the commits commit reaches that tag does not, as
// git describe does.
func commitsAfterTag(dir, tag, commit string) (int, error) {
	repo, err := openRepo(dir)
	if err != nil {
		return 0, fmt.Errorf("%w: open %s: %v", errNoSource, dir, err)
	}
	ref, err := repo.Tag(tag)
	if err != nil {
		return 0, fmt.Errorf("no tag %s in %s", tag, dir)
	}
	base := ref.Hash()
	if to, err := repo.TagObject(base); err == nil {
		base = to.Target
	}
	reach := func(from plumbing.Hash, stop map[plumbing.Hash]bool) (map[plumbing.Hash]bool, error) {
		seen := map[plumbing.Hash]bool{}
		todo := []plumbing.Hash{from}
		for len(todo) > 0 {
			h := todo[len(todo)-1]
			todo = todo[:len(todo)-1]
			if seen[h] || stop[h] {
				continue
			}
			seen[h] = true
			c, err := repo.CommitObject(h)
			if err != nil {
				return nil, fmt.Errorf("commit %s in %s: %v", h, dir, err)
			}
			todo = append(todo, c.ParentHashes...)
		}
		return seen, nil
	}
	ofTag, err := reach(base, nil)
	if err != nil {
		return 0, err
	}
	after, err := reach(plumbing.NewHash(commit), ofTag)
	if err != nil {
		return 0, err
	}
	return len(after), nil
}

// firstLine reads a (possibly gzipped) file's first line.
func firstLine(p string) (string, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	r := bufio.NewReader(f)
	var br *bufio.Reader = r
	if head, _ := r.Peek(2); len(head) == 2 && head[0] == 0x1f && head[1] == 0x8b {
		zr, err := gzip.NewReader(r)
		if err != nil {
			return "", fmt.Errorf("%s: %w", p, err)
		}
		defer zr.Close()
		br = bufio.NewReader(zr)
	}
	line, err := br.ReadString('\n')
	if err != nil && line == "" {
		return "", fmt.Errorf("%s: %w", p, err)
	}
	return line, nil
}
