package parsers

import (
	"encoding/binary"
	"math/bits"
	"strconv"

	"github.com/tidwall/gjson"
)

// jtape is a one-pass JSON scanner: it validates a record exactly as
// gjson.Valid does (same grammar, same whitespace, no UTF-8 check) and, in
// the same pass, records every value's span in a flat pre-order tape, so the
// qlog mapping reads fields without scanning the record again. The tape and
// its stack are reused from record to record: after warm-up a record costs
// no allocation (strings with escapes, rare in traces, are unescaped by
// gjson on demand).
type jtape struct {
	b     []byte
	nodes []jnode
	stack []int32
}

// jnode is one value. Spans are byte offsets into the record.
type jnode struct {
	vs, ve int32 // value, quotes included for strings
	ks, ke int32 // key without quotes (object members); ks < 0 otherwise
	skip   int32 // index of the first node after this value's subtree
	kind   byte  // '{' '[' '"' '0' 't' 'f' 'n'
	esc    bool  // the string value holds an escape
	kesc   bool  // the key holds an escape
}

// strSpecial marks the bytes that end a plain run inside a string.
var strSpecial = func() (t [256]bool) {
	for c := 0; c < ' '; c++ {
		t[c] = true
	}
	t['"'], t['\\'] = true, true
	return t
}()

func jspace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// parse scans b; it reports false where gjson.Valid would.
func (t *jtape) parse(b []byte) bool {
	_, ok := t.run(b, false)
	return ok
}

// parsePrefix scans the one value at the start of b (b[0] opens it) and
// returns where it ends; what follows is not looked at. false: b holds no
// valid value there, or not all of it.
func (t *jtape) parsePrefix(b []byte) (int, bool) { return t.run(b, true) }

func (t *jtape) run(b []byte, prefix bool) (int, bool) {
	t.b = b
	t.nodes = t.nodes[:0]
	t.stack = t.stack[:0]
	n := len(b)
	i := 0
	ks, ke, kesc := int32(-1), int32(-1), false
	// obj: the innermost open container is an object (kept here rather
	// than read back from the tape at every separator).
	obj := false
	for {
		// A value starts at i (after blanks).
		for i < n && jspace(b[i]) {
			i++
		}
		if i >= n {
			return i, false
		}
		idx := int32(len(t.nodes))
		if len(t.nodes) == cap(t.nodes) {
			t.nodes = append(t.nodes, jnode{})
		}
		t.nodes = t.nodes[:idx+1]
		nd := &t.nodes[idx]
		*nd = jnode{vs: int32(i), ks: ks, ke: ke, kesc: kesc}
		switch c := b[i]; c {
		case '{', '[':
			nd.kind = c
			obj = c == '{'
			t.stack = append(t.stack, idx)
			i++
			for i < n && jspace(b[i]) {
				i++
			}
			if i >= n {
				return i, false
			}
			if c == '{' {
				if b[i] == '}' {
					i++
					obj = t.close(idx, i)
					goto after
				}
				if b[i] != '"' {
					return i, false
				}
				var ok bool
				if i, ks, ke, kesc, ok = t.key(i); !ok {
					return i, false
				}
				continue
			}
			if b[i] == ']' {
				i++
				obj = t.close(idx, i)
				goto after
			}
			ks, ke, kesc = -1, -1, false
			continue
		case '"':
			nd.kind = '"'
			j, esc, ok := scanString(b, i+1)
			if !ok {
				return i, false
			}
			nd.esc = esc
			i = j
		case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
			nd.kind = '0'
			j, ok := scanNumber(b, i)
			if !ok {
				return i, false
			}
			i = j
		case 't':
			if i+4 > n || b[i+1] != 'r' || b[i+2] != 'u' || b[i+3] != 'e' {
				return i, false
			}
			nd.kind = 't'
			i += 4
		case 'f':
			if i+5 > n || b[i+1] != 'a' || b[i+2] != 'l' || b[i+3] != 's' || b[i+4] != 'e' {
				return i, false
			}
			nd.kind = 'f'
			i += 5
		case 'n':
			if i+4 > n || b[i+1] != 'u' || b[i+2] != 'l' || b[i+3] != 'l' {
				return i, false
			}
			nd.kind = 'n'
			i += 4
		default:
			return i, false
		}
		nd.ve = int32(i)
		nd.skip = idx + 1
	after:
		// A value ended at i: a separator, a close, or the end.
		for {
			if prefix && len(t.stack) == 0 {
				t.b = b[:i]
				return i, true
			}
			for i < n && jspace(b[i]) {
				i++
			}
			if len(t.stack) == 0 {
				if prefix {
					t.b = b[:i]
					return i, true
				}
				return i, i == n
			}
			if i >= n {
				return i, false
			}
			c := b[i]
			if c == ',' {
				i++
				if obj {
					for i < n && jspace(b[i]) {
						i++
					}
					if i >= n || b[i] != '"' {
						return i, false
					}
					var ok bool
					if i, ks, ke, kesc, ok = t.key(i); !ok {
						return i, false
					}
				} else {
					ks, ke, kesc = -1, -1, false
				}
				break
			}
			if (obj && c == '}') || (!obj && c == ']') {
				i++
				obj = t.close(t.stack[len(t.stack)-1], i)
				continue
			}
			return i, false
		}
	}
}

// close ends the container at idx, whose last byte is at end-1, and
// reports whether the container now innermost is an object.
func (t *jtape) close(idx int32, end int) bool {
	nd := &t.nodes[idx]
	nd.ve = int32(end)
	nd.skip = int32(len(t.nodes))
	t.stack = t.stack[:len(t.stack)-1]
	if k := len(t.stack); k > 0 {
		return t.nodes[t.stack[k-1]].kind == '{'
	}
	return false
}

// key scans `"key" :` at i (b[i] == '"') and returns the offset after the colon.
func (t *jtape) key(i int) (int, int32, int32, bool, bool) {
	b := t.b
	j, esc, ok := scanString(b, i+1)
	if !ok {
		return j, 0, 0, false, false
	}
	ks, ke := int32(i+1), int32(j-1)
	if j < len(b) && b[j] == ':' { // the usual case: no blank before ':'
		return j + 1, ks, ke, esc, true
	}
	for j < len(b) && jspace(b[j]) {
		j++
	}
	if j >= len(b) || b[j] != ':' {
		return j, 0, 0, false, false
	}
	return j + 1, ks, ke, esc, true
}

// scanString scans a string body from i (after the opening quote) and
// returns the offset after the closing quote and whether it held an escape.
func scanString(b []byte, i int) (int, bool, bool) {
	esc := false
	n := len(b)
	for {
		// Eight bytes at a time while they last, then byte by byte.
		for i+8 <= n {
			if m := strStops(binary.LittleEndian.Uint64(b[i:])); m != 0 {
				i += bits.TrailingZeros64(m) >> 3
				goto stop
			}
			i += 8
		}
		for i < n && !strSpecial[b[i]] {
			i++
		}
	stop:
		if i >= n {
			return i, esc, false
		}
		switch b[i] {
		case '"':
			return i + 1, esc, true
		case '\\':
			esc = true
			i++
			if i >= n {
				return i, esc, false
			}
			switch b[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i++
			case 'u':
				for k := 0; k < 4; k++ {
					i++
					if i >= n || !ishex(b[i]) {
						return i, esc, false
					}
				}
				i++
			default:
				return i, esc, false
			}
		default: // a control character
			return i, esc, false
		}
	}
}

const (
	lanes1  = 0x0101010101010101
	lanesHi = 0x8080808080808080
)

// strStops has the high bit set in the lane of the first byte of x (little
// endian) that is '"', '\\' or a control character, the bytes strSpecial
// marks; lanes above the first such byte may be set too (a borrow), lanes
// below it never are, so the lowest set bit is exact. Zero: none of the
// eight is special.
func strStops(x uint64) uint64 {
	q := x ^ (lanes1 * '"')
	s := x ^ (lanes1 * '\\')
	return ((q-lanes1)&^q | (s-lanes1)&^s | (x-lanes1*0x20)&^x) & lanesHi
}

func ishex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

// scanNumber follows gjson's validnumber from the first byte of a number.
func scanNumber(b []byte, i int) (int, bool) {
	n := len(b)
	if b[i] == '-' {
		i++
		if i == n || b[i] < '0' || b[i] > '9' {
			return i, false
		}
	}
	if b[i] == '0' {
		i++
	} else {
		i = skipDigits(b, i)
	}
	if i == n {
		return i, true
	}
	if b[i] == '.' {
		i++
		if i == n || b[i] < '0' || b[i] > '9' {
			return i, false
		}
		i = skipDigits(b, i)
	}
	if i == n {
		return i, true
	}
	if b[i] == 'e' || b[i] == 'E' {
		i++
		if i < n && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i == n || b[i] < '0' || b[i] > '9' {
			return i, false
		}
		for i < n && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	}
	return i, true
}

// skipDigits returns the offset of the first byte at or after i that is
// not a decimal digit (len(b) if none), eight bytes at a time while they
// last.
func skipDigits(b []byte, i int) int {
	n := len(b)
	for i+8 <= n {
		if m := nonDigits(binary.LittleEndian.Uint64(b[i:])); m != 0 {
			return i + bits.TrailingZeros64(m)>>3
		}
		i += 8
	}
	for i < n && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	return i
}

// nonDigits has the high bit set in exactly the lanes of x that are not
// '0'-'9' (each lane computed on its own: no carry crosses lanes).
func nonDigits(x uint64) uint64 {
	low := x & (lanes1 * 0x7f)
	ge3A := low + lanes1*(0x80-0x3a) // high bit: low 7 bits >= ':'
	ge30 := low + lanes1*(0x80-0x30) // high bit: low 7 bits >= '0'
	return (x | ge3A | ^ge30) & lanesHi
}

// jv is a value on a tape; the zero jv, or i < 0, is a value that does not
// exist.
type jv struct {
	t *jtape
	i int32
}

func (t *jtape) root() jv { return jv{t, 0} }

func (v jv) Exists() bool   { return v.t != nil && v.i >= 0 }
func (v jv) kind() byte     { return v.t.nodes[v.i].kind }
func (v jv) IsObject() bool { return v.Exists() && v.kind() == '{' }
func (v jv) IsArray() bool  { return v.Exists() && v.kind() == '[' }

// Raw is the value's text, a view of the record.
func (v jv) Raw() string {
	if !v.Exists() {
		return ""
	}
	nd := &v.t.nodes[v.i]
	return bstr(v.t.b[nd.vs:nd.ve])
}

// Type is the value's gjson type.
func (v jv) Type() gjson.Type {
	if !v.Exists() {
		return gjson.Null
	}
	switch v.kind() {
	case '"':
		return gjson.String
	case '0':
		return gjson.Number
	case 't':
		return gjson.True
	case 'f':
		return gjson.False
	case 'n':
		return gjson.Null
	}
	return gjson.JSON
}

// Str is the string value, unescaped ("" for other types), as gjson's Str.
func (v jv) Str() string {
	if !v.Exists() {
		return ""
	}
	nd := &v.t.nodes[v.i]
	if nd.kind != '"' {
		return ""
	}
	if nd.esc {
		return gjson.Parse(bstr(v.t.b[nd.vs:nd.ve])).Str
	}
	return bstr(v.t.b[nd.vs+1 : nd.ve-1])
}

// result is the value as the gjson.Result gjson would have produced, for
// its conversions (Int, Float, String); objects and arrays carry Raw only.
func (v jv) result() gjson.Result {
	r := gjson.Result{Type: v.Type(), Raw: v.Raw()}
	switch r.Type {
	case gjson.String:
		r.Str = v.Str()
	case gjson.Number:
		r.Num = parseFloat(r.Raw)
	}
	return r
}

func (v jv) Float() float64 {
	if v.Exists() && v.kind() == '0' {
		return parseFloat(v.Raw())
	}
	return v.result().Float()
}

// pow10 are the powers of ten a float64 holds exactly.
var pow10 = [...]float64{1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
	1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22}

// parseFloat is strconv.ParseFloat(s, 64) (errors ignored, as gjson does)
// with a fast path for what traces hold, plain decimals such as 40.712: a
// mantissa below 2^53 and at most 22 decimals is m / 10^k in one correctly
// rounded division, the value ParseFloat returns too (its own exact path).
func parseFloat(s string) float64 {
	i, neg := 0, false
	if i < len(s) && s[i] == '-' {
		neg, i = true, 1
	}
	var m uint64
	digits, frac, dot := 0, 0, false
	for ; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= '0' && c <= '9':
			m = m*10 + uint64(c-'0')
			digits++
			if dot {
				frac++
			}
		case c == '.' && !dot:
			dot = true
		default:
			f, _ := strconv.ParseFloat(s, 64)
			return f
		}
	}
	if digits == 0 || digits > 15 || frac > 22 || m >= 1<<53 {
		f, _ := strconv.ParseFloat(s, 64)
		return f
	}
	f := float64(m) / pow10[frac]
	if neg {
		f = -f
	}
	return f
}

// Int is gjson's Int. A plain integer of at most 15 digits is exact as a
// float64, so gjson returns its value: read directly.
func (v jv) Int() int64 {
	if v.Exists() && v.kind() == '0' {
		if i, ok := smallInt(v.Raw(), 15); ok {
			return i
		}
	}
	return v.result().Int()
}

// smallInt reads s when it is an optional '-' and 1 to max (<= 18) decimal
// digits, nothing else: then strconv.ParseInt(s, 10, 64) gives the same.
func smallInt(s string, max int) (int64, bool) {
	i, neg := 0, false
	if len(s) > 0 && s[0] == '-' {
		i, neg = 1, true
	}
	if len(s)-i < 1 || len(s)-i > max {
		return 0, false
	}
	var m int64
	for ; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		m = m*10 + int64(c-'0')
	}
	if neg {
		m = -m
	}
	return m, true
}
func (v jv) String() string { return v.result().String() }
func (v jv) missing() jv    { return jv{v.t, -1} }
func (v jv) keyIs(s string) bool {
	nd := &v.t.nodes[v.i]
	if nd.ks < 0 {
		return false
	}
	if nd.kesc {
		return v.Key() == s
	}
	return bstr(v.t.b[nd.ks:nd.ke]) == s
}

// Key is the member's key, unescaped ("" for array elements).
func (v jv) Key() string {
	nd := &v.t.nodes[v.i]
	if nd.ks < 0 {
		return ""
	}
	k := bstr(v.t.b[nd.ks:nd.ke])
	if nd.kesc {
		return gjson.Parse(bstr(v.t.b[nd.ks-1 : nd.ke+1])).Str
	}
	return k
}

// first is the first member or element of a container (missing if none or
// not a container).
func (v jv) first() jv {
	if !v.Exists() {
		return v
	}
	nd := &v.t.nodes[v.i]
	if (nd.kind != '{' && nd.kind != '[') || nd.skip == v.i+1 {
		return v.missing()
	}
	return jv{v.t, v.i + 1}
}

// next is the sibling after v inside parent p.
func (v jv) next(p jv) jv {
	s := v.t.nodes[v.i].skip
	if s >= v.t.nodes[p.i].skip {
		return v.missing()
	}
	return jv{v.t, s}
}

// Get returns the first member named key (one level; gjson's first match).
func (v jv) Get(key string) jv {
	if !v.IsObject() {
		return v.missing()
	}
	for c := v.first(); c.Exists(); c = c.next(v) {
		if c.keyIs(key) {
			return c
		}
	}
	return v.missing()
}

// Path follows keys as gjson's dotted path does.
func (v jv) Path(keys ...string) jv {
	for _, k := range keys {
		v = v.Get(k)
	}
	return v
}

// jkey is what ForEach passes as the key: the member's key (Str) or the
// element's index (Num), as gjson's ForEach does.
type jkey struct {
	Str string
	Num float64
}

// ForEach follows gjson's ForEach: nothing for a missing value, the value
// itself once (with an empty key) for a scalar, else each member or element.
func (v jv) ForEach(fn func(k jkey, v jv) bool) {
	if !v.Exists() {
		return
	}
	switch v.kind() {
	case '{':
		for c := v.first(); c.Exists(); c = c.next(v) {
			if !fn(jkey{Str: c.Key()}, c) {
				return
			}
		}
	case '[':
		n := 0
		for c := v.first(); c.Exists(); c = c.next(v) {
			if !fn(jkey{Num: float64(n)}, c) {
				return
			}
			n++
		}
	default:
		fn(jkey{}, v)
	}
}
