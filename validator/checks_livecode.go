package validator

import (
	"errors"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/tidwall/gjson"
)

// <impl>/live-code: which code the own runs ran, re-derived from every
// repetition's manifest (not from the survey): the build kind and commit
// the harness recorded (result.settings build, live_commit /
// upstream_commit), or, for a package or binding, the release its binaries'
// records name (dpkg-query: Debian's v<version>; debug.ReadBuildInfo: the
// module's tag; the quiche npm binding: quiche's <version>), resolved to
// its commit in the mirror with this package's own git reading; and the
// binaries (role, sha256, version) the manifests recorded. The survey's
// live_code must equal it, and when that commit is not the pin, live_audit
// must be present and be of that commit: the difference is shown, never
// folded.
func init() {
	perImplChecks = append(perImplChecks, check{name: "live-code", fn: checkLiveCode, claim: "own-runs"})
}

var (
	lcSemver = regexp.MustCompile(`^v?(\d+\.\d+\.\d+)`)
	lcQuiche = regexp.MustCompile(`quiche (\d+\.\d+\.\d+)`)
)

var errNoCodeRecord = errors.New("the manifest records no build and no package")

type lcDerived struct {
	build, commit, tag string
	bins               []string // "role sha256 version", sorted
}

func deriveLiveCode(man gjson.Result) (lcDerived, error) {
	var d lcDerived
	st := man.Get("result.settings")
	d.build = st.Get("build").String()
	d.commit = st.Get("live_commit").String()
	if d.commit == "" {
		d.commit = st.Get("upstream_commit").String()
	}
	var srcs strings.Builder
	man.Get("binaries").ForEach(func(_, b gjson.Result) bool {
		srcs.WriteString(b.Get("version_source").String() + "\n")
		if s := b.Get("sha256").String(); s != "" {
			d.bins = append(d.bins, b.Get("role").String()+" "+s+" "+b.Get("version").String())
		}
		return true
	})
	sort.Strings(d.bins)
	version := man.Get("version").String()
	src := srcs.String()
	if d.build == "" {
		switch {
		case d.commit != "":
			d.build = "from-checkout"
		case strings.Contains(src, "dpkg-query"):
			d.build = "debian-package"
		case strings.Contains(src, "debug.ReadBuildInfo"):
			d.build = "module-proxy"
		case strings.Contains(src+version, "@matrixai/"):
			d.build = "npm-binding"
		default:
			return d, errNoCodeRecord
		}
	}
	if d.commit != "" {
		return d, nil
	}
	re := lcSemver
	prefix := "v"
	if d.build == "npm-binding" {
		re, prefix = lcQuiche, ""
	}
	m := re.FindStringSubmatch(version)
	if m == nil {
		return d, fmt.Errorf("%s run of version %q names no release", d.build, version)
	}
	d.tag = prefix + m[1]
	return d, nil
}

func checkLiveCode(v *Validator, _ gjson.Result, im gjson.Result) (Status, string) {
	var d verdict
	lc := im.Get("live_code")
	var want *lcDerived
	unrecorded := 0
	for _, rep := range im.Get("live.repetitions").Array() {
		rid := rep.Get("id").String()
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
		got, err := deriveLiveCode(gjson.ParseBytes(b))
		if err != nil {
			if errors.Is(err, errNoCodeRecord) {
				unrecorded++
			}
			d.fail("%s: %v", rid, err)
			continue
		}
		if want == nil {
			want = &got
		} else if got.build != want.build || got.commit != want.commit || got.tag != want.tag || strings.Join(got.bins, ",") != strings.Join(want.bins, ",") {
			d.fail("%s ran other code than the first repetition (%s %s%s)", rid, got.build, got.commit, got.tag)
		}
	}
	reps := len(im.Get("live.repetitions").Array())
	if !lc.Exists() {
		if unrecorded == reps {
			// Runs made before manifests recorded binaries or builds: the
			// survey cannot say, and nothing can check it.
			var u verdict
			u.unverifiable("none of the %d manifests records a build or a package (runs before version records): which code ran cannot be re-derived", reps)
			return u.result()
		}
		d.fail("the survey does not say which code ran live (no live_code)")
		return d.result()
	}
	if want == nil {
		return d.result()
	}
	if want.commit == "" {
		c, err := v.resolveTag(im.Get("upstream").String(), want.tag)
		if err != nil {
			d.unverifiable("release %s: %v", want.tag, err)
		} else {
			want.commit = c
		}
	}
	if b := lc.Get("build").String(); b != want.build {
		d.fail("live_code.build %q, the manifests say %q", b, want.build)
	}
	if c := lc.Get("commit").String(); want.commit != "" && c != want.commit {
		d.fail("live_code.commit %q, the manifests give %s", c, want.commit)
	}
	if t := lc.Get("tag").String(); t != want.tag {
		d.fail("live_code.tag %q, the manifests name %q", t, want.tag)
	}
	var bins []string
	lc.Get("binaries").ForEach(func(_, b gjson.Result) bool {
		bins = append(bins, b.Get("role").String()+" "+b.Get("sha256").String()+" "+b.Get("version").String())
		return true
	})
	sort.Strings(bins)
	if strings.Join(bins, ",") != strings.Join(want.bins, ",") {
		d.fail("live_code.binaries %v, the manifests record %v", bins, want.bins)
	}
	pin := im.Get("commit").String()
	la := im.Get("live_audit")
	switch {
	case want.commit == "" || want.commit == pin:
		if la.Exists() {
			d.fail("live_audit present although the live code is the pin")
		}
	case !la.Exists():
		d.fail("the live code %s is not the pin %s and there is no live_audit", short12(want.commit), short12(pin))
	case la.Get("commit").String() != want.commit:
		d.fail("live_audit is of %s, the live code is %s", short12(la.Get("commit").String()), short12(want.commit))
	}
	d.note("%s %s%s with %d binaries, re-derived from %d manifests", want.build, short12(want.commit), map[bool]string{true: " (" + want.tag + ")", false: ""}[want.tag != ""], len(want.bins), len(im.Get("live.repetitions").Array()))
	return d.result()
}

// resolveTag finds a release tag's commit in the upstream's mirror.
func (v *Validator) resolveTag(upstream, tag string) (string, error) {
	dir, err := findMirror(v.opts.Mirrors, upstream)
	if err != nil {
		return "", err
	}
	r, err := openRepo(dir)
	if err != nil {
		return "", err
	}
	h, err := r.ResolveRevision(plumbing.Revision("refs/tags/" + tag))
	if err != nil {
		return "", fmt.Errorf("tag %s not in %s: %v", tag, dir, err)
	}
	if t, err := r.TagObject(*h); err == nil {
		c, err := t.Commit()
		if err != nil {
			return "", err
		}
		return c.Hash.String(), nil
	}
	return h.String(), nil
}
