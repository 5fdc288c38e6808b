package parsers

import (
	"encoding/binary"
	"math/bits"
	"strconv"
	"testing"
)

// firstLane is the lane of the lowest set high bit of m (8: none).
func firstLane(m uint64) int { return bits.TrailingZeros64(m) >> 3 }

// laneWords calls fn with every word made of one fill byte and, in one
// lane, any byte value: each fill, each lane, each of the 256 values.
func laneWords(fills []byte, fn func(w [8]byte, lane int)) {
	for _, f := range fills {
		for lane := 0; lane < 8; lane++ {
			for c := 0; c < 256; c++ {
				var w [8]byte
				for k := range w {
					w[k] = f
				}
				w[lane] = byte(c)
				fn(w, lane)
			}
		}
	}
}

// TestStrStops: for every byte value in every lane, behind every kind of
// byte before it, strStops finds the first byte strSpecial marks, exactly.
func TestStrStops(t *testing.T) {
	laneWords([]byte{'a', 0x80, 0xff, '!', '#', '[', ']', 0x7f}, func(w [8]byte, lane int) {
		// A later lane may hold anything: a special byte after the first
		// must not move the answer.
		if lane < 7 {
			w[7] = '"'
		}
		want := 8
		for k := range w {
			if strSpecial[w[k]] {
				want = k
				break
			}
		}
		if got := firstLane(strStops(binary.LittleEndian.Uint64(w[:]))); got != want {
			t.Fatalf("strStops(%q) first lane %d, want %d", w, got, want)
		}
	})
}

// TestNonDigits: the lanes nonDigits marks are exactly the non-digits.
func TestNonDigits(t *testing.T) {
	laneWords([]byte{'0', '9', 'x', 0x80 + '5'}, func(w [8]byte, _ int) {
		m := nonDigits(binary.LittleEndian.Uint64(w[:]))
		for k := range w {
			isDigit := w[k] >= '0' && w[k] <= '9'
			if marked := m>>(8*k+7)&1 == 1; marked == isDigit {
				t.Fatalf("nonDigits(%q): lane %d marked %v, digit %v", w, k, marked, isDigit)
			}
		}
	})
}

// FuzzSmallInt: whatever smallInt accepts, strconv.ParseInt reads the same.
func FuzzSmallInt(f *testing.F) {
	for _, s := range []string{"0", "-0", "-", "", "123456789012345678", "1234567890123456789", "-999999999999999999", "007", "1e3", "+1", "12a"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, max := range []int{15, 18} {
			got, ok := smallInt(s, max)
			if !ok {
				continue
			}
			want, err := strconv.ParseInt(s, 10, 64)
			if err != nil || got != want {
				t.Fatalf("smallInt(%q, %d) = %d, ParseInt %d, %v", s, max, got, want, err)
			}
		}
	})
}

// TestKVOddPlainEq: for every byte value in every lane, next to every kind
// of neighbour, kvOdd is non-zero exactly when a byte is below 0x20 or above
// 0x7f, and when it is zero plainEq marks exactly the spaces and '=' (the
// lanes split reads).
func TestKVOddPlainEq(t *testing.T) {
	laneWords([]byte{'a', ' ', '=', 0x80, 0xff, 0x00, 0x1f, 0x20 ^ 0x80, '=' ^ 0x80, '!', 0x7f, '\t'}, func(w [8]byte, _ int) {
		x := binary.LittleEndian.Uint64(w[:])
		odd := false
		for _, b := range w {
			odd = odd || b < 0x20 || b > 0x7f
		}
		if got := kvOdd(x) != 0; got != odd {
			t.Fatalf("kvOdd(%q) != 0 is %v, want %v", w, got, odd)
		}
		if odd {
			return
		}
		sp, eq := plainEq(x, ' '), plainEq(x, '=')
		if sp&^lanesHi != 0 || eq&^lanesHi != 0 {
			t.Fatalf("%q: a mask has bits outside the lanes' high bits", w)
		}
		for k := range w {
			lane := func(m uint64) bool { return m>>(8*k+7)&1 == 1 }
			if lane(sp) != (w[k] == ' ') || lane(eq) != (w[k] == '=') {
				t.Fatalf("plainEq(%q): lane %d: space %v, '=' %v", w, k, lane(sp), lane(eq))
			}
		}
	})
}
