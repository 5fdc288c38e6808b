//! migaudit's quinn client and server (harnesses/quinn).
//!
//! `quinn-harness server` serves one download of --body bytes on the first
//! bidirectional stream a client opens and writes the trace harnesses/quinn's
//! parser reads (parsers/quinn.go, format "quinn-cc-log"). quinn 0.9 has no
//! qlog, so the trace comes from two hooks on the code that runs:
//!
//!   - a congestion controller wrapping quinn's own (Cubic, NewReno or BBR,
//!     as --cc says), which delegates every call and writes one line when
//!     quinn builds a controller (one per new path: PathData::new), when it
//!     sends (on_sent), at the end of each ACK (on_end_acks: window, bytes in
//!     flight, largest acknowledged, the path's RttEstimator) and on a
//!     congestion event;
//!   - a 1 ms poll of Connection::remote_address() and Connection::stats()
//!     for the peer address the server's connection uses.
//!
//! `quinn-harness client` binds its endpoint to the path-A address, downloads
//! the body and at --migrate-at-ms moves with Endpoint::rebind to a socket
//! bound to the path-B address (or a new port on path A).
//!
//! Both print event lines on stdout: `EV <unix-ns> <name> key=value ...`.
//! The TLS secrets go to $SSLKEYLOGFILE (rustls KeyLogFile).

use std::fs::File;
use std::io::{BufReader, BufWriter, Write};
use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use quinn::congestion::{BbrConfig, Controller, ControllerFactory, CubicConfig, NewRenoConfig};
use quinn_proto::RttEstimator;

const ALPN: &[u8] = b"migaudit";

fn unix_ns() -> u128 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_nanos()
}

fn ev(line: String) {
    let out = std::io::stdout();
    let mut o = out.lock();
    let _ = writeln!(o, "EV {} {}", unix_ns(), line);
    let _ = o.flush();
}

fn die(msg: String) -> ! {
    eprintln!("quinn-harness: {}", msg);
    std::process::exit(1)
}

struct Args(Vec<String>);

impl Args {
    fn get(&self, name: &str) -> Option<String> {
        let flag = format!("--{}", name);
        self.0.windows(2).find(|w| w[0] == flag).map(|w| w[1].clone())
    }
    fn req(&self, name: &str) -> String {
        self.get(name).unwrap_or_else(|| die(format!("missing --{}", name)))
    }
    fn num(&self, name: &str) -> u64 {
        let v = self.req(name);
        v.parse().unwrap_or_else(|_| die(format!("--{} {:?} is not a number", name, v)))
    }
}

/// The trace: one line per record, times in µs from `start` (whose wall
/// clock the header records).
struct Trace {
    start: Instant,
    w: Mutex<BufWriter<File>>,
}

impl Trace {
    fn line(&self, now: Instant, body: std::fmt::Arguments) {
        let t = now.saturating_duration_since(self.start).as_micros();
        let mut w = self.w.lock().unwrap();
        let _ = writeln!(w, "{} {}", t, body);
    }
    fn flush(&self) {
        let _ = self.w.lock().unwrap().flush();
    }
}

/// Wraps quinn's congestion controller and logs what it is told.
struct Logged {
    inner: Box<dyn Controller>,
    id: u64,
    trace: Arc<Trace>,
    last_pn: Option<u64>,
    // Per ACK: the path's smoothed and minimum RTT and the newest send time
    // among the packets it acknowledged.
    srtt: Duration,
    min_rtt: Duration,
    newest_sent: Option<Instant>,
}

impl Controller for Logged {
    fn on_sent(&mut self, now: Instant, bytes: u64, last_packet_number: u64) {
        self.inner.on_sent(now, bytes, last_packet_number);
        // One call per transmit; a GSO batch carries the packets after the
        // previous call's last one.
        let first = match self.last_pn {
            Some(p) if last_packet_number > p && last_packet_number - p <= 64 => p + 1,
            _ => last_packet_number,
        };
        self.last_pn = Some(last_packet_number);
        self.trace.line(
            now,
            format_args!("sent cc={} pn={}-{} bytes={} cwnd={}", self.id, first, last_packet_number, bytes, self.inner.window()),
        );
    }

    fn on_ack(&mut self, now: Instant, sent: Instant, bytes: u64, app_limited: bool, rtt: &RttEstimator) {
        self.inner.on_ack(now, sent, bytes, app_limited, rtt);
        self.srtt = rtt.get();
        self.min_rtt = rtt.min();
        if self.newest_sent.map_or(true, |s| sent > s) {
            self.newest_sent = Some(sent);
        }
    }

    fn on_end_acks(&mut self, now: Instant, in_flight: u64, app_limited: bool, largest: Option<u64>) {
        self.inner.on_end_acks(now, in_flight, app_limited, largest);
        let latest = self.newest_sent.take().map(|s| now.saturating_duration_since(s).as_micros());
        let largest = largest.map_or("-".to_string(), |p| p.to_string());
        let latest = latest.map_or("-".to_string(), |v| v.to_string());
        self.trace.line(
            now,
            format_args!(
                "ack cc={} largest={} cwnd={} in_flight={} srtt_us={} min_rtt_us={} newest_rtt_us={} app_limited={}",
                self.id,
                largest,
                self.inner.window(),
                in_flight,
                self.srtt.as_micros(),
                self.min_rtt.as_micros(),
                latest,
                app_limited as u8
            ),
        );
    }

    fn on_congestion_event(&mut self, now: Instant, sent: Instant, persistent: bool, lost_bytes: u64) {
        let before = self.inner.window();
        self.inner.on_congestion_event(now, sent, persistent, lost_bytes);
        self.trace.line(
            now,
            format_args!(
                "congestion cc={} cwnd={} before={} lost_bytes={} persistent={} sent_us={}",
                self.id,
                self.inner.window(),
                before,
                lost_bytes,
                persistent as u8,
                sent.saturating_duration_since(self.trace.start).as_micros()
            ),
        );
    }

    fn window(&self) -> u64 {
        self.inner.window()
    }

    fn clone_box(&self) -> Box<dyn Controller> {
        // PathData::from_previous (same IP, new port) copies the path's
        // controller: the copy keeps the id, it is the same path's state.
        Box::new(Logged {
            inner: self.inner.clone_box(),
            id: self.id,
            trace: self.trace.clone(),
            last_pn: self.last_pn,
            srtt: self.srtt,
            min_rtt: self.min_rtt,
            newest_sent: None,
        })
    }

    fn initial_window(&self) -> u64 {
        self.inner.initial_window()
    }

    fn into_any(self: Box<Self>) -> Box<dyn std::any::Any> {
        self
    }
}

struct LoggedFactory {
    inner: Box<dyn ControllerFactory + Send + Sync>,
    trace: Arc<Trace>,
    next: AtomicU64,
}

impl ControllerFactory for LoggedFactory {
    fn build(&self, now: Instant) -> Box<dyn Controller> {
        let id = self.next.fetch_add(1, Ordering::SeqCst) + 1;
        let inner = self.inner.build(now);
        self.trace.line(
            now,
            format_args!("built cc={} cwnd={} initial_window={}", id, inner.window(), inner.initial_window()),
        );
        Box::new(Logged { inner, id, trace: self.trace.clone(), last_pn: None, srtt: Duration::ZERO, min_rtt: Duration::ZERO, newest_sent: None })
    }
}

fn cc_factory(cc: &str) -> Box<dyn ControllerFactory + Send + Sync> {
    match cc {
        "cubic" => Box::new(Arc::new(CubicConfig::default())),
        "newreno" => Box::new(Arc::new(NewRenoConfig::default())),
        "bbr" => Box::new(Arc::new(BbrConfig::default())),
        _ => die(format!("--cc {:?}: quinn 0.9 has cubic, newreno and bbr", cc)),
    }
}

fn key_log() -> Arc<dyn rustls::KeyLog> {
    Arc::new(rustls::KeyLogFile::new())
}

fn server(a: Args) {
    let addr: SocketAddr = SocketAddr::new(a.req("addr").parse().unwrap_or_else(|e| die(format!("--addr: {}", e))), a.num("port") as u16);
    let body = a.num("body");
    let cc = a.req("cc");
    let timeout = Duration::from_millis(a.num("timeout-ms"));
    let certs = rustls_pemfile::certs(&mut BufReader::new(File::open(a.req("cert")).unwrap_or_else(|e| die(format!("--cert: {}", e)))))
        .unwrap_or_else(|e| die(format!("--cert: {}", e)));
    let keys = rustls_pemfile::pkcs8_private_keys(&mut BufReader::new(File::open(a.req("key")).unwrap_or_else(|e| die(format!("--key: {}", e)))))
        .unwrap_or_else(|e| die(format!("--key: {}", e)));
    if certs.is_empty() || keys.is_empty() {
        die("--cert/--key: no certificate or PKCS#8 key in the PEM files".into());
    }
    let trace_path = a.req("trace");
    let start = Instant::now();
    let start_ns = unix_ns();
    let f = File::create(&trace_path).unwrap_or_else(|e| die(format!("--trace {}: {}", trace_path, e)));
    let trace = Arc::new(Trace { start, w: Mutex::new(BufWriter::with_capacity(1 << 16, f)) });
    {
        let mut w = trace.w.lock().unwrap();
        let _ = writeln!(w, "# quinn-cc-log 1 vantage=server implementation=quinn cc={} start_unix_ns={}", cc, start_ns);
    }

    let mut tls = rustls::ServerConfig::builder()
        .with_safe_default_cipher_suites()
        .with_safe_default_kx_groups()
        .with_protocol_versions(&[&rustls::version::TLS13])
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(certs.into_iter().map(rustls::Certificate).collect(), rustls::PrivateKey(keys[0].clone()))
        .unwrap_or_else(|e| die(format!("TLS: {}", e)));
    tls.max_early_data_size = u32::MAX;
    tls.alpn_protocols = vec![ALPN.to_vec()];
    tls.key_log = key_log();
    let mut transport = quinn::TransportConfig::default();
    transport.congestion_controller_factory(LoggedFactory { inner: cc_factory(&cc), trace: trace.clone(), next: AtomicU64::new(0) });
    transport.max_idle_timeout(Some(quinn::VarInt::from_u32(30_000).into()));
    let mut sc = quinn::ServerConfig::with_crypto(Arc::new(tls));
    sc.transport_config(Arc::new(transport));
    sc.migration(true);

    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let tr = trace.clone();
    rt.block_on(async move {
        let trace = tr;
        let ep = quinn::Endpoint::server(sc, addr).unwrap_or_else(|e| die(format!("bind {}: {}", addr, e)));
        ev(format!("listening addr={}", ep.local_addr().unwrap()));
        let conn = match tokio::time::timeout(timeout, ep.accept()).await {
            Ok(Some(c)) => c.await.unwrap_or_else(|e| die(format!("handshake: {}", e))),
            _ => die("no connection before --timeout-ms".into()),
        };
        let peer = conn.remote_address();
        ev(format!("peer from=none to={}", peer));
        trace.line(Instant::now(), format_args!("peer from=none to={}", peer));
        // The poller: the connection's peer address (and its statistics) every 1 ms.
        let pc = conn.clone();
        let pt = trace.clone();
        let poll = tokio::spawn(async move {
            let mut last = pc.remote_address();
            let mut tick = tokio::time::interval(Duration::from_millis(1));
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
            loop {
                tick.tick().await;
                if pc.close_reason().is_some() {
                    break;
                }
                let now = pc.remote_address();
                if now != last {
                    let s = pc.stats();
                    ev(format!("peer from={} to={}", last, now));
                    pt.line(
                        Instant::now(),
                        format_args!("peer from={} to={} cwnd={} rtt_us={} lost_packets={} congestion_events={}", last, now, s.path.cwnd, s.path.rtt.as_micros(), s.path.lost_packets, s.path.congestion_events),
                    );
                    last = now;
                }
            }
        });
        let served = async {
            let (mut send, recv) = conn.accept_bi().await.map_err(|e| format!("accept stream: {}", e))?;
            let _ = recv.read_to_end(1024).await;
            let chunk = vec![0x61u8; 64 * 1024];
            let mut left = body;
            while left > 0 {
                let n = left.min(chunk.len() as u64) as usize;
                send.write_all(&chunk[..n]).await.map_err(|e| format!("write: {}", e))?;
                left -= n as u64;
            }
            send.finish().await.map_err(|e| format!("finish: {}", e))?;
            Ok::<u64, String>(body)
        };
        match tokio::time::timeout(timeout, served).await {
            Ok(Ok(n)) => ev(format!("served bytes={}", n)),
            Ok(Err(e)) => ev(format!("error what=serve msg={}", e.replace(' ', "_"))),
            Err(_) => ev("error what=serve msg=timeout".into()),
        }
        // Wait for the client to close (it does once it has the whole body).
        let _ = tokio::time::timeout(Duration::from_secs(10), conn.closed()).await;
        let s = conn.stats();
        trace.line(
            Instant::now(),
            format_args!("stats cwnd={} rtt_us={} lost_packets={} lost_bytes={} congestion_events={} sent_packets={} udp_tx={} udp_rx={}", s.path.cwnd, s.path.rtt.as_micros(), s.path.lost_packets, s.path.lost_bytes, s.path.congestion_events, s.path.sent_packets, s.udp_tx.datagrams, s.udp_rx.datagrams),
        );
        poll.abort();
        ep.close(0u32.into(), b"done");
        ep.wait_idle().await;
    });
    trace.flush();
}

struct AcceptAny;

impl rustls::client::ServerCertVerifier for AcceptAny {
    fn verify_server_cert(
        &self,
        _end_entity: &rustls::Certificate,
        _intermediates: &[rustls::Certificate],
        _server_name: &rustls::ServerName,
        _scts: &mut dyn Iterator<Item = &[u8]>,
        _ocsp: &[u8],
        _now: SystemTime,
    ) -> Result<rustls::client::ServerCertVerified, rustls::Error> {
        // The server's certificate is a throwaway the harness made.
        Ok(rustls::client::ServerCertVerified::assertion())
    }
}

fn bind(ip: IpAddr) -> UdpSocket {
    UdpSocket::bind(SocketAddr::new(ip, 0)).unwrap_or_else(|e| die(format!("bind {}: {}", ip, e)))
}

fn client(a: Args) {
    let srv: SocketAddr = SocketAddr::new(a.req("addr").parse().unwrap_or_else(|e| die(format!("--addr: {}", e))), a.num("port") as u16);
    let ip_a: IpAddr = a.req("local-a").parse().unwrap_or_else(|e| die(format!("--local-a: {}", e)));
    let ip_b: IpAddr = a.req("local-b").parse().unwrap_or_else(|e| die(format!("--local-b: {}", e)));
    let scenario = a.req("scenario");
    let migrate_at = Duration::from_millis(a.num("migrate-at-ms"));
    let back_after = Duration::from_millis(a.num("back-after-ms"));
    let timeout = Duration::from_millis(a.num("timeout-ms"));
    // Where the client moves, in order (standard, step-down, nat-rebind: path
    // B; port-rebind: a new port on path A; migrate-back: B, then a new A port).
    let moves: Vec<(Duration, IpAddr)> = match scenario.as_str() {
        "standard" | "step-down" | "nat-rebind" => vec![(migrate_at, ip_b)],
        "port-rebind" => vec![(migrate_at, ip_a)],
        "migrate-back" => vec![(migrate_at, ip_b), (migrate_at + back_after, ip_a)],
        s => die(format!("--scenario {:?} unknown", s)),
    };

    let mut tls = rustls::ClientConfig::builder()
        .with_safe_default_cipher_suites()
        .with_safe_default_kx_groups()
        .with_protocol_versions(&[&rustls::version::TLS13])
        .unwrap()
        .with_custom_certificate_verifier(Arc::new(AcceptAny))
        .with_no_client_auth();
    tls.alpn_protocols = vec![ALPN.to_vec()];
    tls.key_log = key_log();
    let mut transport = quinn::TransportConfig::default();
    transport.max_idle_timeout(Some(quinn::VarInt::from_u32(30_000).into()));
    let mut cc = quinn::ClientConfig::new(Arc::new(tls));
    cc.transport_config(Arc::new(transport));

    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let code = rt.block_on(async move {
        let sock = bind(ip_a);
        let first = sock.local_addr().unwrap();
        let ep = quinn::Endpoint::new(quinn::EndpointConfig::default(), None, sock, quinn::TokioRuntime)
            .unwrap_or_else(|e| die(format!("endpoint: {}", e)));
        ev(format!("start local={}", first));
        let conn = match ep.connect_with(cc, srv, "localhost") {
            Ok(c) => match tokio::time::timeout(Duration::from_secs(10), c).await {
                Ok(Ok(c)) => c,
                Ok(Err(e)) => die(format!("handshake: {}", e)),
                Err(_) => die("handshake: timeout".into()),
            },
            Err(e) => die(format!("connect: {}", e)),
        };
        let hs = Instant::now();
        ev(format!("connected local={} remote={}", ep.local_addr().unwrap(), conn.remote_address()));
        let mover_ep = ep.clone();
        let mover = tokio::spawn(async move {
            for (at, ip) in moves {
                tokio::time::sleep_until(tokio::time::Instant::from_std(hs + at)).await;
                let from = mover_ep.local_addr().unwrap();
                let s = bind(ip);
                let to = s.local_addr().unwrap();
                match mover_ep.rebind(s) {
                    Ok(()) => ev(format!("local from={} to={} api=Endpoint::rebind", from, mover_ep.local_addr().unwrap_or(to))),
                    Err(e) => ev(format!("error what=rebind msg={}", e.to_string().replace(' ', "_"))),
                }
            }
        });
        let got = async {
            let (mut send, mut recv) = conn.open_bi().await.map_err(|e| format!("open stream: {}", e))?;
            send.write_all(b"GET\n").await.map_err(|e| format!("request: {}", e))?;
            send.finish().await.map_err(|e| format!("request: {}", e))?;
            let mut buf = vec![0u8; 64 * 1024];
            let mut total: u64 = 0;
            let mut next_report: u64 = 0;
            loop {
                match recv.read(&mut buf).await {
                    Ok(Some(n)) => {
                        total += n as u64;
                        if total >= next_report {
                            ev(format!("progress received={}", total));
                            next_report = total + (1 << 20);
                        }
                    }
                    Ok(None) => return Ok::<u64, String>(total),
                    Err(e) => return Err(format!("read after {} bytes: {}", total, e)),
                }
            }
        };
        let code = match tokio::time::timeout(timeout, got).await {
            Ok(Ok(n)) => {
                ev(format!("done received={} fin=1", n));
                0
            }
            Ok(Err(e)) => {
                ev(format!("error what=download msg={}", e.replace(' ', "_")));
                1
            }
            Err(_) => {
                ev("error what=download msg=timeout".into());
                1
            }
        };
        mover.abort();
        conn.close(0u32.into(), b"done");
        ep.wait_idle().await;
        code
    });
    std::process::exit(code);
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("version") => println!("quinn-harness {}", env!("CARGO_PKG_VERSION")),
        Some("server") => server(Args(args[1..].to_vec())),
        Some("client") => client(Args(args[1..].to_vec())),
        _ => die("usage: quinn-harness version|server|client [--flag value ...]".into()),
    }
}
