package quicgo

import (
	"crypto/tls"

	"github.com/migaudit/migaudit/harnesses/run"
)

// selfSigned is the server's throwaway certificate (the harness program
// built against a checkout has its own, standalone/selfsigned.go.txt).
func selfSigned() (tls.Certificate, error) { return run.SelfSignedTLS() }
