package build

// Which code the own live runs ran (live_code), and the source audit at
// that code when it is not the pin (live_audit).

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/migaudit/migaudit/audit/gitsrc"
	"github.com/migaudit/migaudit/data"
	"github.com/migaudit/migaudit/survey"
)

var (
	reFullCommit = regexp.MustCompile(`^[0-9a-f]{40}$`)
	reQuicheVer  = regexp.MustCompile(`quiche (\d+\.\d+\.\d+)`)
	reSemver     = regexp.MustCompile(`^v?(\d+\.\d+\.\d+)`)
)

// repCode is what one manifest says ran.
type repCode struct {
	build, commit, tag string
	bins               []survey.LiveBinary
}

// codeOfManifest reads a repetition manifest: the harness's own record of
// the build (settings build, live_commit / upstream_commit) when it has
// one, else what the binaries' version sources say (dpkg-query: a Debian
// package of release v<version>; debug.ReadBuildInfo: the module from the
// proxy at its version tag; the quiche npm binding: quiche's <version>
// tag).
func codeOfManifest(man map[string]any) (repCode, error) {
	var c repCode
	settings := map[string]string{}
	if r, ok := man["result"].(map[string]any); ok {
		if s, ok := r["settings"].(map[string]any); ok {
			for k, v := range s {
				if str, ok := v.(string); ok {
					settings[k] = str
				}
			}
		}
	}
	var sources []string
	bl, _ := man["binaries"].([]any)
	for _, b := range bl {
		m, _ := b.(map[string]any)
		role, _ := m["role"].(string)
		sum, _ := m["sha256"].(string)
		ver, _ := m["version"].(string)
		src, _ := m["version_source"].(string)
		sources = append(sources, src)
		if sum == "" {
			continue // a record by package version only (Debian's libngtcp2-9)
		}
		c.bins = append(c.bins, survey.LiveBinary{Role: role, SHA256: sum, Version: ver})
	}
	sort.Slice(c.bins, func(i, j int) bool {
		if c.bins[i].Role != c.bins[j].Role {
			return c.bins[i].Role < c.bins[j].Role
		}
		return c.bins[i].SHA256 < c.bins[j].SHA256
	})
	all := strings.Join(sources, "\n")
	version, _ := man["version"].(string)
	c.build = settings["build"]
	c.commit = settings["live_commit"]
	if c.commit == "" {
		c.commit = settings["upstream_commit"]
	}
	switch {
	case c.build != "":
	case c.commit != "":
		c.build = survey.BuildFromCheckout
	case strings.Contains(all, "dpkg-query"):
		c.build = survey.BuildDebian
	case strings.Contains(all, "debug.ReadBuildInfo"):
		c.build = survey.BuildModuleProxy
	case strings.Contains(all, "@matrixai/") || strings.Contains(version, "@matrixai/"):
		c.build = survey.BuildNPM
	default:
		return c, fmt.Errorf("manifest records neither a build nor a package the survey knows (binaries' version sources: %s)", strings.ReplaceAll(all, "\n", "; "))
	}
	if c.commit != "" {
		if !reFullCommit.MatchString(c.commit) {
			return c, fmt.Errorf("manifest's live commit %q is not a full commit", c.commit)
		}
		return c, nil
	}
	switch c.build {
	case survey.BuildDebian, survey.BuildModuleProxy:
		if m := reSemver.FindStringSubmatch(version); m != nil {
			c.tag = "v" + m[1]
		}
	case survey.BuildNPM:
		if m := reQuicheVer.FindStringSubmatch(version); m != nil {
			c.tag = m[1]
		}
	}
	if c.tag == "" {
		return c, fmt.Errorf("%s run of version %q names no release tag", c.build, version)
	}
	return c, nil
}

// liveCodeOf derives live_code from the repetitions' manifests; a release
// tag is resolved to its commit in the mirror. Repetitions that ran
// different code, or a manifest that does not say, give no live_code and a
// note saying why.
func liveCodeOf(o Options, pin data.Implementation, reps []runRep) (*survey.LiveCode, []string, error) {
	if len(reps) == 0 {
		return nil, nil, nil
	}
	var first repCode
	for i, r := range reps {
		c, err := codeOfManifest(r.Manifest)
		if err != nil {
			return nil, []string{fmt.Sprintf("which code ran live is not recorded: %s: %v", r.Dir, err)}, nil
		}
		if i == 0 {
			first = c
			continue
		}
		if c.build != first.build || c.commit != first.commit || c.tag != first.tag || fmt.Sprint(c.bins) != fmt.Sprint(first.bins) {
			return nil, []string{fmt.Sprintf("the repetitions ran different code: %s (%s %s%s) and %s (%s %s%s); no single live_code", r.Dir, c.build, c.commit, c.tag, reps[0].Dir, first.build, first.commit, first.tag)}, nil
		}
	}
	lc := &survey.LiveCode{Commit: first.commit, Tag: first.tag, Upstream: pin.Upstream, Build: first.build, Binaries: first.bins}
	if lc.Binaries == nil {
		lc.Binaries = []survey.LiveBinary{}
	}
	var notes []string
	if lc.Commit == "" {
		src := mirrorFor(o.Mirrors, pin.Upstream)
		if src == "" {
			notes = append(notes, fmt.Sprintf("live code is release %s (%s); no mirror to resolve its commit", lc.Tag, lc.Build))
			return lc, notes, nil
		}
		repo, err := gitsrc.Open(src)
		if err != nil {
			return nil, nil, err
		}
		h, err := repo.Resolve(lc.Tag)
		if err != nil {
			notes = append(notes, fmt.Sprintf("live code is release %s (%s), which the mirror %s does not have: %v", lc.Tag, lc.Build, src, err))
			return lc, notes, nil
		}
		lc.Commit = h.String()
	}
	return lc, notes, nil
}

// liveAuditOf audits the live commit when it is not the pin and lists
// every question the two audits answer differently.
func liveAuditOf(ctx context.Context, o Options, pin data.Implementation, lc *survey.LiveCode, pinAnswers []survey.Answer) (*survey.LiveAudit, []string) {
	if lc == nil || lc.Commit == "" || lc.Commit == pin.Commit {
		return nil, nil
	}
	src := mirrorFor(o.Mirrors, pin.Upstream)
	if src == "" {
		return nil, []string{fmt.Sprintf("live code %s is not the pin and was not audited: no mirror", lc.Commit[:12])}
	}
	fs, err := o.AuditAt(ctx, pin, src, lc.Commit)
	if len(fs) == 0 {
		return nil, []string{fmt.Sprintf("audit at the live commit %s failed: %v", lc.Commit[:12], err)}
	}
	la := &survey.LiveAudit{Commit: lc.Commit, Answers: answersFrom(fs), Differences: []survey.AuditDifference{}}
	pinBy := map[string]string{}
	for _, a := range pinAnswers {
		pinBy[a.Question] = a.SourceAnswer
	}
	for _, a := range la.Answers {
		if p := pinBy[a.Question]; p != a.SourceAnswer {
			la.Differences = append(la.Differences, survey.AuditDifference{Question: a.Question, Pin: p, Live: a.SourceAnswer})
		}
	}
	note := fmt.Sprintf("live runs are of %s (%s, %s), not the pin %s: the audit at that commit is listed under live_audit", lc.Commit[:12], lc.Tag, lc.Build, pin.Commit[:12])
	if lc.Tag == "" {
		note = fmt.Sprintf("live runs are of %s (%s), not the pin %s: the audit at that commit is listed under live_audit", lc.Commit[:12], lc.Build, pin.Commit[:12])
	}
	if len(la.Differences) == 0 {
		note += "; it answers every question as the pin's does"
	} else {
		var ds []string
		for _, d := range la.Differences {
			ds = append(ds, fmt.Sprintf("%s %s at the pin, %s live", d.Question, d.Pin, d.Live))
		}
		note += "; they differ: " + strings.Join(ds, ", ")
	}
	return la, []string{note}
}
