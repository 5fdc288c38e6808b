package quicgo

import "crypto/tls"

func serverTLS(cert tls.Certificate) *tls.Config {
	return &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{ALPN}, MinVersion: tls.VersionTLS13}
}

func clientTLS() *tls.Config {
	// The certificate is a throwaway generated for this run inside a
	// namespace the run created; there is nothing to authenticate.
	return &tls.Config{InsecureSkipVerify: true, NextProtos: []string{ALPN}, MinVersion: tls.VersionTLS13} //nolint:gosec
}
