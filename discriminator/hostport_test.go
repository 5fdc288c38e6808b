package discriminator

import (
	"net"
	"testing"
)

// netNormalAddr is normalAddr as it was written with package net.
func netNormalAddr(addr string) string {
	if addr == "" {
		return ""
	}
	h, port, err := net.SplitHostPort(addr)
	if err != nil {
		h, port = addr, ""
	}
	if ip := net.ParseIP(h); ip != nil {
		if v4 := ip.To4(); v4 != nil {
			ip = v4
		}
		h = ip.String()
	}
	if port == "" {
		return h
	}
	return net.JoinHostPort(h, port)
}

var hostPortSeeds = []string{
	"", "10.0.1.1:50108", "10.0.9.1:4433", "[::ffff:10.0.1.1]:443", "[::1]:443", "[fe80::1%eth0]:443",
	"::ffff:10.0.1.1", "10.0.1.1", "[2001:db8::1]", "[2001:db8::1]:", "host:80", "a:b:c", "[a]b:1",
	"[::1]]:1", "[[::1]:1", "]:1", ":", ":80", "[]:80", "[::1", "::1:80", "2001:0db8:0000::0001",
	"[2001:0db8:0000::0001]:9", "010.0.0.1:1", "1.2.3.4:99999", "[1.2.3.4]:5", "x[y]:1", "[x]:1]",
}

func TestHostPortMatchesNet(t *testing.T) {
	for _, a := range hostPortSeeds {
		checkHostPort(t, a)
	}
}

func FuzzHostPort(f *testing.F) {
	for _, a := range hostPortSeeds {
		f.Add(a)
	}
	f.Fuzz(checkHostPort)
}

func checkHostPort(t *testing.T, a string) {
	t.Helper()
	h1, p1, err1 := net.SplitHostPort(a)
	h2, p2, err2 := splitHostPort(a)
	if (err1 != nil) != (err2 != nil) || h1 != h2 || p1 != p2 {
		t.Errorf("split %q: net %q %q %v, ours %q %q %v", a, h1, p1, err1, h2, p2, err2)
	}
	if got, want := normalAddr(a), netNormalAddr(a); got != want {
		t.Errorf("normalAddr(%q) = %q, with package net %q", a, got, want)
	}
	if got, want := joinHostPort(h1, p1), net.JoinHostPort(h1, p1); got != want {
		t.Errorf("join %q %q = %q, net %q", h1, p1, got, want)
	}
}
