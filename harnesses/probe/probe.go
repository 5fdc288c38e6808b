// Package probe answers, for one server, the QUICstep question: does a live
// connection survive a port migration, and an IP migration? It migrates a
// real quic-go connection and checks that an HTTP/3 request still succeeds on
// it — announcing QUIC says nothing about migration, so nothing short of
// that is evidence.
package probe

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"
)

// Class is the migration-support classification (QUICstep §4.2).
type Class string

const (
	Full     Class = "full"      // port and IP migration both work
	PortOnly Class = "port-only" // port migration works, IP migration does not
	IPOnly   Class = "IP-only"   // IP migration works, port migration does not
	None     Class = "none"      // QUIC works, neither migration does
	NoQUIC   Class = "no QUIC"   // no QUIC handshake / first request failed
)

// Options configure one probe.
type Options struct {
	// Target is the server, HOST:PORT.
	Target string
	// SNI is the TLS server name (default: Target's host).
	SNI string
	// Path is the request path for every GET (default "/").
	Path string
	// Local is the local address of the original path ("" = chosen by the
	// routing table).
	Local string
	// Via is a second local address for the IP migration. Without it the
	// IP step is not attempted and the class can be at best port-only.
	Via string
	// Insecure skips certificate verification (testbed servers use
	// throwaway self-signed certificates).
	Insecure bool
	// StepTimeout bounds each handshake, path validation and GET.
	StepTimeout time.Duration
	// ListenUDP opens the client's sockets (default net.ListenUDP); the
	// testbed mode opens them inside the client namespace.
	ListenUDP func(laddr *net.UDPAddr) (*net.UDPConn, error) `json:"-"`
}

// Step is what one phase of the probe observed.
type Step struct {
	Name      string `json:"name"`
	Attempted bool   `json:"attempted"`
	// LocalAddr is the local address the step's request left from.
	LocalAddr string `json:"local_addr,omitempty"`
	// PathValidated is true when the new path's PATH_CHALLENGE was answered.
	PathValidated   bool  `json:"path_validated"`
	ValidationRTTUS int64 `json:"validation_rtt_us,omitempty"`
	// FreshConnection is true when the step had to open a new connection
	// because the previous step left the old one dead.
	FreshConnection bool   `json:"fresh_connection,omitempty"`
	Status          int    `json:"status,omitempty"`
	Bytes           int64  `json:"bytes"`
	OK              bool   `json:"ok"`
	Error           string `json:"error,omitempty"`
}

// Result is the outcome for one target.
type Result struct {
	Target string `json:"target"`
	SNI    string `json:"sni"`
	// DisableActiveMigration is true when the server's transport parameters
	// forbid active migration.
	DisableActiveMigration bool      `json:"disable_active_migration"`
	Handshake              Step      `json:"handshake"`
	Port                   Step      `json:"port_migration"`
	IP                     Step      `json:"ip_migration"`
	Class                  Class     `json:"class"`
	Evidence               string    `json:"evidence"`
	StartedAt              time.Time `json:"started_at"`
	DurationMS             int64     `json:"duration_ms"`
}

// ErrMigrationDisabled is what quic-go reports for a server that sent
// disable_active_migration.
const migrationDisabledText = "server disabled connection migration"

// Run probes one target. It returns an error only for invalid options; every
// network outcome is recorded in the Result.
func Run(ctx context.Context, opt Options) (Result, error) {
	if opt.Path == "" {
		opt.Path = "/"
	}
	if opt.StepTimeout == 0 {
		opt.StepTimeout = 5 * time.Second
	}
	host, _, err := net.SplitHostPort(opt.Target)
	if err != nil {
		return Result{}, fmt.Errorf("target %q: want HOST:PORT: %w", opt.Target, err)
	}
	if opt.SNI == "" {
		opt.SNI = host
	}
	raddr, err := net.ResolveUDPAddr("udp", opt.Target)
	if err != nil {
		return Result{}, fmt.Errorf("target %q: %w", opt.Target, err)
	}
	if opt.Via != "" {
		if _, err := netip.ParseAddr(opt.Via); err != nil {
			return Result{}, fmt.Errorf("--via %q: not an IP address", opt.Via)
		}
	}
	p := &prober{opt: opt, raddr: raddr}
	res := Result{Target: opt.Target, SNI: opt.SNI, StartedAt: time.Now().UTC()}
	defer func() { p.closeAll() }()

	res.Handshake = p.handshake(ctx)
	if res.Handshake.OK {
		res.Port = p.migrate(ctx, "port migration", "")
		if opt.Via != "" {
			res.IP = p.migrate(ctx, "IP migration", opt.Via)
		} else {
			res.IP = Step{Name: "IP migration", Error: "not attempted: no second local address (--via)"}
		}
	}
	res.DisableActiveMigration = p.disabled
	res.Class, res.Evidence = Classify(res)
	res.DurationMS = time.Since(res.StartedAt).Milliseconds()
	return res, nil
}

// Classify derives the class and its one-line evidence from the steps.
func Classify(r Result) (Class, string) {
	if !r.Handshake.OK {
		return NoQUIC, fmt.Sprintf("handshake/first GET failed: %s", r.Handshake.Error)
	}
	portOK, ipOK := r.Port.OK, r.IP.OK
	ev := fmt.Sprintf("port: %s; IP: %s", stepEvidence(r.Port), stepEvidence(r.IP))
	if r.DisableActiveMigration {
		ev = "server sent disable_active_migration; " + ev
	}
	switch {
	case portOK && ipOK:
		return Full, ev
	case portOK && !r.IP.Attempted:
		return PortOnly, ev + " (IP migration not attempted: give --via)"
	case portOK:
		return PortOnly, ev
	case ipOK:
		return IPOnly, ev
	}
	return None, ev
}

func stepEvidence(s Step) string {
	if !s.Attempted {
		if s.Error != "" {
			return s.Error
		}
		return "not attempted"
	}
	var b strings.Builder
	if s.PathValidated {
		fmt.Fprintf(&b, "path validated in %.1f ms", float64(s.ValidationRTTUS)/1000)
	} else {
		b.WriteString("path not validated")
	}
	if s.Status != 0 {
		fmt.Fprintf(&b, ", GET %d (%d B) from %s", s.Status, s.Bytes, s.LocalAddr)
	}
	if s.Error != "" {
		fmt.Fprintf(&b, ", error: %s", s.Error)
	}
	return b.String()
}

type prober struct {
	opt     Options
	raddr   *net.UDPAddr
	conn    *quic.Conn
	h3      *http3.ClientConn
	localIP net.IP
	// cur is the transport the connection currently sends from; quic-go's
	// Conn.LocalAddr keeps reporting the original socket after a switch.
	cur      *quic.Transport
	trs      []*quic.Transport
	disabled bool
}

func (p *prober) tlsConf() *tls.Config {
	return &tls.Config{
		ServerName:         p.opt.SNI,
		NextProtos:         []string{http3.NextProtoH3},
		InsecureSkipVerify: p.opt.Insecure,
	}
}

func (p *prober) listen(ip string) (*quic.Transport, error) {
	laddr := &net.UDPAddr{}
	if ip != "" {
		laddr.IP = net.ParseIP(ip)
		if laddr.IP == nil {
			return nil, fmt.Errorf("local address %q is not an IP", ip)
		}
	}
	listen := p.opt.ListenUDP
	if listen == nil {
		listen = func(a *net.UDPAddr) (*net.UDPConn, error) { return net.ListenUDP("udp", a) }
	}
	uc, err := listen(laddr)
	if err != nil {
		return nil, fmt.Errorf("bind %s: %w", laddr, err)
	}
	tr := &quic.Transport{Conn: uc}
	p.trs = append(p.trs, tr)
	return tr, nil
}

func (p *prober) closeAll() {
	if p.conn != nil {
		p.conn.CloseWithError(0, "probe done")
	}
	for _, tr := range p.trs {
		tr.Close()
	}
}

// connect opens a connection from the original local address and performs
// one GET on it.
func (p *prober) connect(ctx context.Context) Step {
	st := Step{Name: "handshake", Attempted: true}
	if p.conn != nil {
		p.conn.CloseWithError(0, "replaced")
		p.conn, p.h3 = nil, nil
	}
	tr, err := p.listen(p.opt.Local)
	if err != nil {
		st.Error = err.Error()
		return st
	}
	dctx, cancel := context.WithTimeout(ctx, p.opt.StepTimeout)
	defer cancel()
	conn, err := tr.Dial(dctx, p.raddr, p.tlsConf(), &quic.Config{MaxIdleTimeout: 3 * p.opt.StepTimeout})
	if err != nil {
		st.Error = "handshake: " + err.Error()
		return st
	}
	p.conn, p.cur = conn, tr
	p.localIP = conn.LocalAddr().(*net.UDPAddr).IP
	p.h3 = (&http3.Transport{}).NewClientConn(conn)
	p.get(ctx, &st)
	return st
}

func (p *prober) handshake(ctx context.Context) Step { return p.connect(ctx) }

// migrate moves the connection to a new socket: same IP, new port when ip is
// "", otherwise a socket on ip. Then it GETs on the same connection.
func (p *prober) migrate(ctx context.Context, name, ip string) Step {
	st := Step{Name: name, Attempted: true}
	if p.conn == nil || p.conn.Context().Err() != nil {
		fresh := p.connect(ctx)
		if !fresh.OK {
			st.Error = "could not reopen a connection for this step: " + fresh.Error
			return st
		}
		st.FreshConnection = true
	}
	bindIP := ip
	if bindIP == "" {
		bindIP = p.localIP.String()
	}
	tr, err := p.listen(bindIP)
	if err != nil {
		st.Error = err.Error()
		return st
	}
	path, err := p.conn.AddPath(tr)
	if err != nil {
		if strings.Contains(err.Error(), migrationDisabledText) {
			p.disabled = true
		}
		st.Error = "add path: " + err.Error()
		return st
	}
	pctx, cancel := context.WithTimeout(ctx, p.opt.StepTimeout)
	start := time.Now()
	err = path.Probe(pctx)
	cancel()
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			st.Error = fmt.Sprintf("path validation: no PATH_RESPONSE within %s", p.opt.StepTimeout)
		} else {
			st.Error = "path validation: " + err.Error()
		}
		path.Close()
		return st
	}
	st.PathValidated = true
	st.ValidationRTTUS = time.Since(start).Microseconds()
	if err := path.Switch(); err != nil {
		st.Error = "switch: " + err.Error()
		return st
	}
	p.cur = tr
	p.get(ctx, &st)
	return st
}

func (p *prober) get(ctx context.Context, st *Step) {
	gctx, cancel := context.WithTimeout(ctx, p.opt.StepTimeout)
	defer cancel()
	url := "https://" + p.opt.SNI + p.opt.Path
	if _, port, err := net.SplitHostPort(p.opt.Target); err == nil && port != "443" {
		url = "https://" + net.JoinHostPort(p.opt.SNI, port) + p.opt.Path
	}
	req, err := http.NewRequestWithContext(gctx, http.MethodGet, url, nil)
	if err != nil {
		st.Error = err.Error()
		return
	}
	st.LocalAddr = p.cur.Conn.LocalAddr().String()
	resp, err := p.h3.RoundTrip(req)
	if err != nil {
		st.Error = "GET: " + describe(err)
		return
	}
	defer resp.Body.Close()
	n, err := io.Copy(io.Discard, resp.Body)
	st.Status, st.Bytes = resp.StatusCode, n
	if err != nil {
		st.Error = "GET body: " + describe(err)
		return
	}
	st.OK = resp.StatusCode >= 200 && resp.StatusCode < 400
	if !st.OK {
		st.Error = fmt.Sprintf("GET status %d", resp.StatusCode)
	}
}

func describe(err error) string {
	var ie *quic.IdleTimeoutError
	if errors.As(err, &ie) {
		return "connection idle timeout (the server stopped answering on this path)"
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return "timed out (the server stopped answering on this path)"
	}
	return err.Error()
}
