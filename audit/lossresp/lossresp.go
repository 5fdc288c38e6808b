// Package lossresp reads, from the source of the version that runs live, what
// each congestion controller does to its window on a loss: the factor, the
// arithmetic that applies it (which decides the rounding), the floor, and what
// can add to the window before the reduction. Each result carries the
// path:line of the arithmetic at the commit read.
//
// A Spec names the file and the lines to find (anchors, then the arithmetic);
// the factor and the floor are read off those lines and the definitions they
// name, never typed in. data/constants/lossresponse/<impl>.json holds the
// results (TestLive -update rewrites them from $MIGAUDIT_MIRRORS).
package lossresp

import (
	"fmt"
	"math/big"
	"regexp"
	"strconv"
	"strings"

	"github.com/migaudit/migaudit/data"
)

// Source is a commit's tree (gitsrc.Snapshot satisfies it).
type Source interface {
	ReadFile(path string) ([]byte, error)
	Commit() string
}

// Def resolves a name the arithmetic uses: Pattern's first group is the
// value, searched in File.
type Def struct {
	File    string
	Pattern string
}

// Spec is one controller's loss response as the code spells it.
type Spec struct {
	Impl      string
	Upstream  string // owner/name URL, for gitsrc.Locate
	Ref       string // tag or commit of the version that runs live
	Algorithm string
	Default   bool
	File      string
	// Anchors are searched in order, each after the previous one's line
	// (the function, then the branch); Apply is the first line after the
	// last anchor matching the arithmetic. Its groups: factor name or
	// numerator, and (for "int-muldiv") the denominator.
	Anchors []string
	Apply   string
	// Arithmetic: "int-muldiv" (W * num / den), "int-div" (W / den),
	// "int-shift" (W >> k), "float64-trunc" ((W as f64 * factor) as usize),
	// "bbr-model" (Apply's groups name numerator and denominator of β,
	// both resolved by FactorDef; the window is bounded at Bound).
	Arithmetic string
	// Bound ("bbr-model"): the line, searched from the top of File, where
	// cwnd is set to min(cwnd, the model's cap).
	Bound string
	// FactorDef resolves a named factor (Apply's first group).
	FactorDef *Def
	// Floor: the first line matching it after the arithmetic's anchors
	// (group 1: packet count or the name of one, resolved by FloorDef), and
	// FloorExpr formats the count into a window formula ("%d*S").
	Floor     string
	FloorDef  *Def
	FloorExpr string
	// FloorAnywhere searches Floor from the top of File (quic-go applies
	// minCongestionWindow(), defined above the congestion event).
	FloorAnywhere bool
	FloorParams   map[string]float64
	Multiplies    string
	Growth        string
}

// Extract reads spec's loss response from src.
func Extract(spec Spec, src Source) (data.LossResponse, error) {
	where := fmt.Sprintf("%s %s at %s", spec.Impl, spec.Algorithm, spec.Ref)
	lines, err := readLines(src, spec.File)
	if err != nil {
		return data.LossResponse{}, fmt.Errorf("%s: %w", where, err)
	}
	at := 0
	for _, a := range spec.Anchors {
		i, _, err := find(lines, at, a)
		if err != nil {
			return data.LossResponse{}, fmt.Errorf("%s: anchor %q not found in %s after line %d: the code changed shape", where, a, spec.File, at)
		}
		at = i
	}
	ai, groups, err := find(lines, at, spec.Apply)
	if err != nil {
		return data.LossResponse{}, fmt.Errorf("%s: arithmetic %q not found in %s after line %d", where, spec.Apply, spec.File, at+1)
	}
	r := data.LossResponse{
		Algorithm: spec.Algorithm, Default: spec.Default, Ref: spec.Ref, Commit: src.Commit(),
		Arithmetic: spec.Arithmetic, Multiplies: spec.Multiplies, Growth: spec.Growth,
		Source:     data.Position{Path: spec.File, Line: ai + 1},
		Provenance: "audit " + src.Commit(),
	}
	factor := groups[1]
	r.FactorSource = r.Source
	if spec.FactorDef != nil {
		v, pos, err := resolve(src, *spec.FactorDef, factor)
		if err != nil {
			return data.LossResponse{}, fmt.Errorf("%s: factor %s: %w", where, factor, err)
		}
		r.FactorSource = pos
		r.FactorText = factor + " = " + v
		factor = v
	}
	switch spec.Arithmetic {
	case "int-muldiv":
		denText := groups[2]
		if _, err := strconv.ParseInt(denText, 10, 64); err != nil && spec.FactorDef != nil {
			// A named divisor (xquic's XQC_CUBIC_BETA_SCALE), defined
			// where the factor is.
			v, _, err := resolve(src, *spec.FactorDef, denText)
			if err != nil {
				return data.LossResponse{}, fmt.Errorf("%s: divisor %s: %w", where, denText, err)
			}
			groups[2] = denText + " = " + v
			denText = v
		}
		num, err1 := strconv.ParseInt(factor, 10, 64)
		den, err2 := strconv.ParseInt(denText, 10, 64)
		if err1 != nil || err2 != nil || den == 0 {
			return data.LossResponse{}, fmt.Errorf("%s: %q is not an integer fraction %s/%s", where, lines[ai], factor, groups[2])
		}
		r.FactorNum, r.FactorDen = num, den
		if r.FactorText == "" {
			r.FactorText = factor + "/" + groups[2]
		} else {
			r.FactorText += ", / " + groups[2]
		}
	case "int-div":
		den, err := strconv.ParseInt(factor, 10, 64)
		if err != nil || den == 0 {
			return data.LossResponse{}, fmt.Errorf("%s: %q: divisor %q is not an integer", where, lines[ai], factor)
		}
		r.FactorNum, r.FactorDen = 1, den
		if r.FactorText == "" {
			r.FactorText = "/ " + factor
		}
	case "int-shift":
		k, err := strconv.ParseInt(factor, 10, 64)
		if err != nil || k < 0 || k > 16 {
			return data.LossResponse{}, fmt.Errorf("%s: %q: shift %q is not a small integer", where, lines[ai], factor)
		}
		r.FactorNum, r.FactorDen = 1, 1<<k
	case "bbr-model":
		if spec.FactorDef == nil {
			return data.LossResponse{}, fmt.Errorf("%s: bbr-model needs FactorDef for %s and %s", where, groups[1], groups[2])
		}
		dv, dpos, err := resolve(src, *spec.FactorDef, groups[2])
		if err != nil {
			return data.LossResponse{}, fmt.Errorf("%s: factor %s: %w", where, groups[2], err)
		}
		num, err1 := strconv.ParseInt(factor, 10, 64)
		den, err2 := strconv.ParseInt(dv, 10, 64)
		if err1 != nil || err2 != nil || den == 0 {
			return data.LossResponse{}, fmt.Errorf("%s: %s = %q, %s = %q is not an integer fraction", where, groups[1], factor, groups[2], dv)
		}
		r.FactorNum, r.FactorDen = num, den
		r.FactorText += ", " + groups[2] + " = " + dv + fmt.Sprintf(" (%s:%d)", dpos.Path, dpos.Line)
		if spec.Bound == "" {
			return data.LossResponse{}, fmt.Errorf("%s: bbr-model needs the line that bounds cwnd", where)
		}
		bi, _, err := find(lines, 0, spec.Bound)
		if err != nil {
			return data.LossResponse{}, fmt.Errorf("%s: cwnd bound %q not found in %s", where, spec.Bound, spec.File)
		}
		r.BoundSource = &data.Position{Path: spec.File, Line: bi + 1}
	case "float64-trunc":
		rat, ok := new(big.Rat).SetString(factor)
		if !ok || rat.Sign() <= 0 || !rat.Num().IsInt64() || !rat.Denom().IsInt64() {
			return data.LossResponse{}, fmt.Errorf("%s: %q: factor %q is not a decimal", where, lines[ai], factor)
		}
		r.FactorNum, r.FactorDen = rat.Num().Int64(), rat.Denom().Int64()
	default:
		return data.LossResponse{}, fmt.Errorf("%s: unknown arithmetic %q", where, spec.Arithmetic)
	}
	if r.FactorNum >= r.FactorDen {
		return data.LossResponse{}, fmt.Errorf("%s: factor %d/%d is not a decrease", where, r.FactorNum, r.FactorDen)
	}
	if spec.Floor != "" {
		from := at
		if spec.FloorAnywhere {
			from = 0
		}
		fi, fg, err := find(lines, from, spec.Floor)
		if err != nil {
			return data.LossResponse{}, fmt.Errorf("%s: floor %q not found in %s after line %d", where, spec.Floor, spec.File, at+1)
		}
		count, pos := fg[1], data.Position{Path: spec.File, Line: fi + 1}
		if spec.FloorDef != nil {
			v, _, err := resolve(src, *spec.FloorDef, count)
			if err != nil {
				return data.LossResponse{}, fmt.Errorf("%s: floor %s: %w", where, count, err)
			}
			count = v
		}
		n, err := strconv.ParseInt(count, 10, 64)
		if err != nil {
			return data.LossResponse{}, fmt.Errorf("%s: floor count %q is not an integer", where, count)
		}
		r.FloorSource = pos
		r.Floor = &data.Formula{Expr: fmt.Sprintf(spec.FloorExpr, n), Params: spec.FloorParams, Source: &pos, Provenance: r.Provenance,
			Label: strings.TrimSpace(lines[fi])}
	}
	return r, nil
}

func readLines(src Source, path string) ([]string, error) {
	b, err := src.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return strings.Split(string(b), "\n"), nil
}

// find is the first line at or after from matching pattern, and its groups.
func find(lines []string, from int, pattern string) (int, []string, error) {
	re, err := regexp.Compile(pattern)
	if err != nil {
		return 0, nil, err
	}
	for i := from; i < len(lines); i++ {
		if m := re.FindStringSubmatch(lines[i]); m != nil {
			return i, m, nil
		}
	}
	return 0, nil, fmt.Errorf("no line matches %q", pattern)
}

// resolve finds name's definition: d.Pattern with %s replaced by the
// quoted name; group 1 is the value.
func resolve(src Source, d Def, name string) (string, data.Position, error) {
	lines, err := readLines(src, d.File)
	if err != nil {
		return "", data.Position{}, err
	}
	i, g, err := find(lines, 0, fmt.Sprintf(d.Pattern, regexp.QuoteMeta(name)))
	if err != nil {
		return "", data.Position{}, fmt.Errorf("no definition in %s: %w", d.File, err)
	}
	return g[1], data.Position{Path: d.File, Line: i + 1}, nil
}
