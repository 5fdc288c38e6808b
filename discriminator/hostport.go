package discriminator

import (
	"errors"
	"strings"
)

// The discriminator reads addresses with net/netip and these two, not with
// package net: net links the C resolver (cgo), and the executable that
// analyzes traces is kept free of it so that it starts in a fraction of the
// time (docs/analyze-performance.md). They read what net.SplitHostPort and
// net.JoinHostPort read; TestHostPortMatchesNet compares them.

var errHostPort = errors.New("not host:port")

// splitHostPort splits "host:port", "[host]:port" or "[host%zone]:port"
// into host and port, as net.SplitHostPort does: the host of a bracketed
// form may hold colons, an unbracketed one may not, the port may be empty.
func splitHostPort(hostport string) (host, port string, err error) {
	i := strings.LastIndexByte(hostport, ':')
	if i < 0 {
		return "", "", errHostPort // missing port
	}
	if hostport[0] == '[' {
		end := strings.IndexByte(hostport, ']')
		switch {
		case end < 0:
			return "", "", errHostPort // missing ']'
		case end+1 == len(hostport):
			return "", "", errHostPort // "[host]" without a port
		case end+1 != i:
			return "", "", errHostPort // too many colons, or no port after ']'
		}
		host = hostport[1:end]
		if strings.Contains(hostport[1:], "[") || strings.Contains(hostport[end+1:], "]") {
			return "", "", errHostPort // unexpected bracket
		}
	} else {
		host = hostport[:i]
		if strings.Contains(host, ":") {
			return "", "", errHostPort // too many colons
		}
		if strings.ContainsAny(hostport, "[]") {
			return "", "", errHostPort // unexpected bracket
		}
	}
	return host, hostport[i+1:], nil
}

// joinHostPort is net.JoinHostPort: a host with a colon is bracketed.
func joinHostPort(host, port string) string {
	if strings.Contains(host, ":") {
		return "[" + host + "]:" + port
	}
	return host + ":" + port
}
