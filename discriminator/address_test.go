package discriminator

import "testing"

// TestNormalAddr: one address spelled two ways is one address (an
// IPv4-mapped IPv6 address is its IPv4 address), and what is not host:port
// is kept as it is.
func TestNormalAddr(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", ""},
		{"10.0.1.1:50108", "10.0.1.1:50108"},
		{"[::ffff:10.0.1.1]:443", "10.0.1.1:443"},
		{"::ffff:10.0.1.1", "10.0.1.1"},
		{"[::1]:443", "[::1]:443"},
		{"[2001:0db8:0000::0001]:9", "[2001:db8::1]:9"},
		{"[fe80::1%eth0]:443", "[fe80::1%eth0]:443"},
		{"10.0.1.1", "10.0.1.1"},
		{"host:80", "host:80"},
		{"a:b:c", "a:b:c"},
	}
	for _, tc := range tests {
		if got := normalAddr(tc.in); got != tc.want {
			t.Errorf("normalAddr(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	same := []struct {
		a, b string
		want bool
	}{
		{"10.0.1.1:1", "10.0.1.1:2", true},
		{"10.0.1.1:1", "10.0.9.1:1", false},
		{"[::1]:1", "[::1]:2", true},
		{"10.0.1.1", "10.0.1.1:2", true}, // without a port, the address is its host
		{"host:80", "host:81", true},
	}
	for _, tc := range same {
		if got := sameIP(tc.a, tc.b); got != tc.want {
			t.Errorf("sameIP(%q, %q) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}
