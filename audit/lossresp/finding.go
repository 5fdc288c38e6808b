package lossresp

import (
	"fmt"
	"strings"

	"github.com/migaudit/migaudit/audit"
	"github.com/migaudit/migaudit/data"
)

// Finding is r as a positioned audit finding (Question loss_factor): the
// arithmetic's line, the factor's definition and the floor, each with its
// excerpt at the commit read, the way every audit rule reports.
func Finding(s Spec, r data.LossResponse, src Source) (audit.Finding, error) {
	ev := func(p data.Position, kind, note string) (audit.Evidence, error) {
		lines, err := readLines(src, p.Path)
		if err != nil {
			return audit.Evidence{}, err
		}
		if p.Line < 1 || p.Line > len(lines) {
			return audit.Evidence{}, fmt.Errorf("%s:%d is outside the file (%d lines)", p.Path, p.Line, len(lines))
		}
		return audit.Evidence{Repo: s.Upstream, Commit: r.Commit, Path: p.Path, Line: p.Line, Excerpt: strings.TrimSpace(lines[p.Line-1]),
			Permalink: fmt.Sprintf("%s/blob/%s/%s#L%d", s.Upstream, r.Commit, p.Path, p.Line), Kind: kind, Note: note}, nil
	}
	f := audit.Finding{Impl: s.Impl, Rule: s.Impl + "/loss-response-" + r.Algorithm, Question: audit.ConstLossFactor,
		Detail: fmt.Sprintf("%s at %s: window = %d/%d × %s (%s); %s", r.Algorithm, r.Ref, r.FactorNum, r.FactorDen, r.Multiplies, r.Arithmetic, r.Growth),
		Constant: &audit.ConstantFinding{Expr: fmt.Sprintf("%d/%d", r.FactorNum, r.FactorDen), Value: float64(r.FactorNum) / float64(r.FactorDen),
			Arithmetic: r.Arithmetic, Label: r.Algorithm + " " + r.FactorText}}
	positions := []struct {
		p          data.Position
		kind, note string
	}{{r.Source, "assignment", "the reduction"}}
	if r.FactorSource != r.Source && r.FactorSource.Path != "" {
		positions = append(positions, struct {
			p          data.Position
			kind, note string
		}{r.FactorSource, "constant", "the factor"})
	}
	if r.BoundSource != nil {
		positions = append(positions, struct {
			p          data.Position
			kind, note string
		}{*r.BoundSource, "assignment", "cwnd bounded by the model"})
	}
	if r.Floor != nil {
		positions = append(positions, struct {
			p          data.Position
			kind, note string
		}{r.FloorSource, "guard", "the floor " + r.Floor.Expr})
	}
	for _, p := range positions {
		e, err := ev(p.p, p.kind, p.note)
		if err != nil {
			return audit.Finding{}, fmt.Errorf("%s %s: %w", s.Impl, r.Algorithm, err)
		}
		f.Evidence = append(f.Evidence, e)
	}
	return f, nil
}
