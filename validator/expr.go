package validator

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
)

// evalExpr evaluates a constant's expression (numbers, names bound in
// params, + - * /, parentheses, min, max, floor). It is the validator's own
// small evaluator, written separately from data.Formula.Eval.
func evalExpr(expr string, params map[string]float64) (float64, error) {
	p := &exprParser{s: expr, params: params}
	v, err := p.sum()
	if err != nil {
		return 0, err
	}
	p.space()
	if p.i != len(p.s) {
		return 0, fmt.Errorf("unexpected %q at %d in %q", p.s[p.i:], p.i, expr)
	}
	return v, nil
}

type exprParser struct {
	s      string
	i      int
	params map[string]float64
}

func (p *exprParser) space() {
	for p.i < len(p.s) && p.s[p.i] == ' ' {
		p.i++
	}
}

func (p *exprParser) sum() (float64, error) {
	v, err := p.product()
	if err != nil {
		return 0, err
	}
	for {
		p.space()
		if p.i >= len(p.s) || (p.s[p.i] != '+' && p.s[p.i] != '-') {
			return v, nil
		}
		op := p.s[p.i]
		p.i++
		w, err := p.product()
		if err != nil {
			return 0, err
		}
		if op == '+' {
			v += w
		} else {
			v -= w
		}
	}
}

func (p *exprParser) product() (float64, error) {
	v, err := p.unary()
	if err != nil {
		return 0, err
	}
	for {
		p.space()
		if p.i >= len(p.s) || (p.s[p.i] != '*' && p.s[p.i] != '/') {
			return v, nil
		}
		op := p.s[p.i]
		p.i++
		w, err := p.unary()
		if err != nil {
			return 0, err
		}
		if op == '*' {
			v *= w
		} else {
			if w == 0 {
				return 0, fmt.Errorf("division by zero")
			}
			v /= w
		}
	}
}

func (p *exprParser) unary() (float64, error) {
	p.space()
	if p.i < len(p.s) && p.s[p.i] == '-' {
		p.i++
		v, err := p.unary()
		return -v, err
	}
	return p.atom()
}

func (p *exprParser) atom() (float64, error) {
	p.space()
	if p.i >= len(p.s) {
		return 0, fmt.Errorf("unexpected end of %q", p.s)
	}
	c := rune(p.s[p.i])
	switch {
	case c == '(':
		p.i++
		v, err := p.sum()
		if err != nil {
			return 0, err
		}
		p.space()
		if p.i >= len(p.s) || p.s[p.i] != ')' {
			return 0, fmt.Errorf("missing ) in %q", p.s)
		}
		p.i++
		return v, nil
	case unicode.IsDigit(c) || c == '.':
		j := p.i
		for j < len(p.s) && (unicode.IsDigit(rune(p.s[j])) || p.s[j] == '.' || p.s[j] == 'e') {
			j++
		}
		v, err := strconv.ParseFloat(p.s[p.i:j], 64)
		p.i = j
		return v, err
	case unicode.IsLetter(c) || c == '_':
		j := p.i
		for j < len(p.s) && (unicode.IsLetter(rune(p.s[j])) || unicode.IsDigit(rune(p.s[j])) || p.s[j] == '_') {
			j++
		}
		name := p.s[p.i:j]
		p.i = j
		p.space()
		if p.i < len(p.s) && p.s[p.i] == '(' {
			p.i++
			var args []float64
			for {
				v, err := p.sum()
				if err != nil {
					return 0, err
				}
				args = append(args, v)
				p.space()
				if p.i < len(p.s) && p.s[p.i] == ',' {
					p.i++
					continue
				}
				if p.i < len(p.s) && p.s[p.i] == ')' {
					p.i++
					break
				}
				return 0, fmt.Errorf("bad call %s in %q", name, p.s)
			}
			switch strings.ToLower(name) {
			case "min", "max":
				r := args[0]
				for _, a := range args[1:] {
					if (name == "min") == (a < r) {
						r = a
					}
				}
				return r, nil
			case "floor":
				return float64(int64(args[0])), nil
			}
			return 0, fmt.Errorf("unknown function %s", name)
		}
		v, ok := p.params[name]
		if !ok {
			return 0, fmt.Errorf("no value for %s", name)
		}
		return v, nil
	}
	return 0, fmt.Errorf("unexpected %q in %q", string(c), p.s)
}
