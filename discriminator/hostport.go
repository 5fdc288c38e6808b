package discriminator

import "errors"

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
	i := lastColon(hostport)
	if i < 0 {
		return "", "", errHostPort // missing port
	}
	if hostport[0] == '[' {
		end := indexByte(hostport, ']')
		switch {
		case end < 0:
			return "", "", errHostPort // missing ']'
		case end+1 == len(hostport):
			return "", "", errHostPort // "[host]" without a port
		case end+1 != i:
			if hostport[end+1] == ':' {
				return "", "", errHostPort // too many colons
			}
			return "", "", errHostPort // missing port
		}
		host = hostport[1:end]
		if indexByte(hostport[1:], '[') >= 0 || indexByte(hostport[end+1:], ']') >= 0 {
			return "", "", errHostPort // unexpected bracket
		}
	} else {
		host = hostport[:i]
		if indexByte(host, ':') >= 0 {
			return "", "", errHostPort // too many colons
		}
		if indexByte(hostport, '[') >= 0 || indexByte(hostport, ']') >= 0 {
			return "", "", errHostPort // unexpected bracket
		}
	}
	return host, hostport[i+1:], nil
}

// joinHostPort is net.JoinHostPort: a host with a colon is bracketed.
func joinHostPort(host, port string) string {
	if indexByte(host, ':') >= 0 {
		return "[" + host + "]:" + port
	}
	return host + ":" + port
}

func lastColon(s string) int {
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == ':' {
			return i
		}
	}
	return -1
}

func indexByte(s string, c byte) int {
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			return i
		}
	}
	return -1
}
