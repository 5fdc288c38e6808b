package quicly

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/migaudit/migaudit/audit"
	_ "github.com/migaudit/migaudit/audit/rules" // the rules ConstantsAt runs
	"github.com/migaudit/migaudit/data"
)

// ConstantsAt says where the discriminator's quicly constants come from for
// a run of commit: data/constants/quicly.json, written by the audit of the
// pinned commit. When commit is another one, the audit runs at commit too
// (audit.Audit, the code `migaudit audit --impl quicly --commit …` runs) and
// its constants must be the same formulas with the same defaults; a commit
// whose constants differ is refused, since the discriminator would judge it
// by the pin's.
func ConstantsAt(ctx context.Context, source, commit string) (string, error) {
	have, audited, err := data.ConstantsFor("quicly")
	if err != nil {
		return "", err
	}
	prov := provenance(have)
	if !audited || prov == "" {
		return "", fmt.Errorf("quicly: data/constants/quicly.json is missing or mixes provenances (%q); regenerate it with migaudit audit --impl quicly --write-constants", prov)
	}
	if strings.TrimPrefix(prov, "audit ") == commit {
		return "data/constants/quicly.json (" + prov + ", the commit that runs)", nil
	}
	im, err := data.Lookup("quicly")
	if err != nil {
		return "", err
	}
	rep, err := audit.Audit(ctx, im, source, commit)
	if err != nil {
		return "", fmt.Errorf("quicly: audit at %s for the discriminator's constants: %w", short(commit), err)
	}
	got, err := audit.ConstantsFrom(rep)
	if err != nil {
		return "", fmt.Errorf("quicly at %s: no discriminator constants for this commit: %w (the rules read the pin's code; migaudit audit --impl quicly --commit %s shows what they find)", short(commit), err, short(commit))
	}
	if a, b := formulas(have), formulas(got); a != b {
		return "", fmt.Errorf("quicly at %s: its audited constants (%s) differ from data/constants/quicly.json's (%s, %s): the discriminator would judge this commit by the pin's; audit it with migaudit audit --impl quicly --commit %s", short(commit), b, a, prov, short(commit))
	}
	return fmt.Sprintf("data/constants/quicly.json (%s); migaudit audit at %s finds the same formulas and defaults", prov, short(commit)), nil
}

// provenance is the one provenance every formula shares, or "".
func provenance(c data.Constants) string {
	var all []*data.Formula
	for i := range c.InitialWindows {
		all = append(all, &c.InitialWindows[i])
	}
	all = append(all, c.MinWindow, c.LossFactor, c.DefaultRTT)
	p := ""
	for _, f := range all {
		if f == nil {
			continue
		}
		if p != "" && f.Provenance != p {
			return ""
		}
		p = f.Provenance
	}
	return p
}

// formulas is the constants without where they were read (source lines and
// provenance move between commits), for comparison.
func formulas(c data.Constants) string {
	strip := func(f *data.Formula) *data.Formula {
		if f == nil {
			return nil
		}
		g := *f
		g.Source, g.Provenance = nil, ""
		return &g
	}
	var iw []*data.Formula
	for i := range c.InitialWindows {
		iw = append(iw, strip(&c.InitialWindows[i]))
	}
	b, _ := json.Marshal([]any{iw, strip(c.MinWindow), strip(c.LossFactor), strip(c.DefaultRTT)})
	return string(b)
}

func short(c string) string {
	if len(c) > 12 {
		return c[:12]
	}
	return c
}
