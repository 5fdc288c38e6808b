package validator

import (
	"fmt"
	"regexp"
	"strings"
)

// Figures in the prose that no generic rule derives: each is re-counted
// here from the source at the pinned commit, by a reading of the code of
// its own (not the audit's), and the sentence fails when the count differs.
type proseCount struct {
	re    func() *regexp.Regexp // group 1: the stated number
	what  string
	count func(t *sourceTree) (int, error)
}

var proseCounts = map[string][]proseCount{
	// "1 ACK RTT sample site keyed by path (…)": the calls of
	// picoquic_update_path_rtt with an epoch (the ACK path); the
	// path-challenge and handshake calls pass epoch -1.
	"picoquic": {{lazyRegexp(`\b(\d+) ACK RTT sample sites?\b`), "ACK RTT sample sites", picoquicAckRTTSites}},
	// "(ngtcp2_conn_update_rtt, 1 unguarded call)": the calls in
	// lib/ngtcp2_rtb.c outside every block whose if-condition reads the
	// cc_pkt_num watermark.
	"ngtcp2": {{lazyRegexp(`\b(\d+) unguarded calls?\b`), "unguarded ngtcp2_conn_update_rtt calls", ngtcp2UnguardedRTT}},
	// "changes Paths[0] in place (6 changes)": in the
	// QUIC_PARAM_CONN_LOCAL_ADDRESS case of QuicConnParamSet, the
	// statements that write Paths[0]: an assignment to it, or its address
	// handed to a function (not to an upper-case trace or assert macro).
	"msquic": {{lazyRegexp(`Paths\[0\] in place \((\d+) changes?\)`), "in-place changes of Paths[0]", msquicInPlaceChanges}},
}

// callArgs returns the argument texts of the call whose name ends at
// lines[i][k] (the opening parenthesis at k), across lines.
func callArgs(lines []string, i, k int) []string {
	var args []string
	var cur strings.Builder
	depth := 0
	for j := i; j < len(lines) && j < i+40; j++ {
		l := lines[j]
		start := 0
		if j == i {
			start = k
		}
		for p := start; p < len(l); p++ {
			c := l[p]
			switch {
			case c == '(':
				depth++
				if depth == 1 {
					continue
				}
			case c == ')':
				depth--
				if depth == 0 {
					return append(args, strings.TrimSpace(cur.String()))
				}
			case c == ',' && depth == 1:
				args = append(args, strings.TrimSpace(cur.String()))
				cur.Reset()
				continue
			}
			cur.WriteByte(c)
		}
		cur.WriteByte(' ')
	}
	return args
}

func picoquicAckRTTSites(t *sourceTree) (int, error) {
	n := 0
	for _, p := range t.paths() {
		if !strings.HasPrefix(p, "picoquic/") || !strings.HasSuffix(p, ".c") {
			continue
		}
		lines, err := t.lines(p)
		if err != nil {
			return 0, err
		}
		for i, l := range lines {
			k := strings.Index(l, "picoquic_update_path_rtt(")
			if k < 0 || strings.HasPrefix(strings.TrimSpace(l), "void ") {
				continue // the definition
			}
			args := callArgs(lines, i, k+len("picoquic_update_path_rtt"))
			if len(args) >= 3 && !strings.HasPrefix(args[2], "-") {
				n++
			}
		}
	}
	return n, nil
}

func ngtcp2UnguardedRTT(t *sourceTree) (int, error) {
	const file = "lib/ngtcp2_rtb.c"
	lines, err := t.lines(file)
	if err != nil {
		return 0, err
	}
	var guarded [][2]int
	for i, l := range lines {
		if s := strings.TrimSpace(l); strings.HasPrefix(s, "if (") && strings.Contains(s, "cc_pkt_num") {
			if end := braceEnd(lines, i); end >= 0 {
				guarded = append(guarded, [2]int{i, end})
			}
		}
	}
	n := 0
	for i, l := range lines {
		if !strings.Contains(l, "ngtcp2_conn_update_rtt(") {
			continue
		}
		in := false
		for _, g := range guarded {
			if i > g[0] && i <= g[1] {
				in = true
			}
		}
		if !in {
			n++
		}
	}
	if n == 0 && !strings.Contains(strings.Join(lines, "\n"), "ngtcp2_conn_update_rtt(") {
		return 0, fmt.Errorf("ngtcp2_conn_update_rtt not called in %s at %s", file, short(t.commit))
	}
	return n, nil
}

var upperMacroCall = lazyRegexp(`\b[A-Z][A-Z0-9_]{3,}\(`)

func msquicInPlaceChanges(t *sourceTree) (int, error) {
	r := &reader{t: t}
	set := r.fn("src/core/connection.c", "^QuicConnParamSet(").span("case QUIC_PARAM_CONN_LOCAL_ADDRESS", "case QUIC_PARAM_CONN_")
	if !set.ok() {
		return 0, fmt.Errorf("QUIC_PARAM_CONN_LOCAL_ADDRESS case of QuicConnParamSet not found at %s", short(t.commit))
	}
	n := 0
	for _, l := range set.lines {
		s := strings.TrimSpace(l)
		switch {
		case strings.HasPrefix(s, "Connection->Paths[0]") && strings.Contains(s, " = "):
			n++ // assigned
		case upperMacroCall().MatchString(s):
			// a trace or assert macro reads it
		case strings.Contains(s, "= &Connection->Paths[0]"):
			// its address stored elsewhere, not written here
		case strings.HasPrefix(s, "&Connection->Paths[0]") || strings.Contains(s, "(&Connection->Paths[0]"):
			n++ // its address handed to a function, which writes it
		}
	}
	return n, nil
}
