/* lsqharness: migaudit's client and server for lsquic (harnesses/lsquic).
 *
 * One binary, three commands:
 *   lsqharness version
 *   lsqharness server --addr IP --port P --cert F --key F --body N --cc ALGO
 *                     --timeout-ms N [--keylog F]
 *   lsqharness client --addr IP --port P --local-a IP --local-b IP
 *                     --migrate-at-ms N --scenario S --cc ALGO --timeout-ms N
 *
 * The client opens one bidirectional stream, sends a one-byte request and
 * reads the server's body (N bytes) to its FIN. lsquic (at the commit this
 * harness is built against) has no API for a client to move a connection
 * to another local address: its client migrates only to a server's
 * preferred_address (try_to_begin_migration in lsquic_full_conn_ietf.c).
 * What it does support is a packet arriving on another local address: the
 * connection records a new path (ietf_full_conn_ci_record_addrs), validates
 * it (PATH_CHALLENGE) and switches to it (switch_path_to). So at
 * --migrate-at-ms the client really changes its address: every datagram
 * from then on leaves from the socket bound to the path-B address, and every
 * datagram received there is handed to lsquic_engine_packet_in with the
 * path-B address as its local address ("standard"). With --scenario
 * nat-rebind the received datagrams are handed in with the path-A address,
 * so lsquic does not learn of the change (NAT rebinding).
 *
 * stdout carries this harness's own lines, each "[lsq_ROLE] t_us=N VERB
 * unix_us=U key=value…", t_us being microseconds since the process started
 * and unix_us the wall clock (LOG lines carry t_us only):
 *   STATS   lsquic_conn_get_info every 5 ms: cwnd, srtt, min RTT, rttvar,
 *           pmtu, and lsquic_conn_get_sockaddr's local and peer address;
 *   LOG     one line of lsquic's own log (event, conn, sendctl modules …);
 *   listening / start / connected / peer / local / migrate / progress /
 *   done / served / error.
 * The lsquic-log parser (parsers/lsquic.go) reads it.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include <openssl/ssl.h>
#include <lsquic.h>

#define ALPN "migaudit"
#define STATS_US 5000

static const char *role = "harness";
static int64_t t0_us;
static volatile sig_atomic_t stop_sig;

static int64_t mono_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t) ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static int64_t t_us(void) { return mono_us() - t0_us; }

static void say(const char *verb, const char *fmt, ...)
{
    va_list ap;
    struct timespec wall;
    clock_gettime(CLOCK_REALTIME, &wall);
    printf("[lsq_%s] t_us=%" PRId64 " %s unix_us=%" PRId64, role, t_us(), verb,
           (int64_t) wall.tv_sec * 1000000 + wall.tv_nsec / 1000);
    if (fmt && *fmt) {
        putchar(' ');
        va_start(ap, fmt);
        vprintf(fmt, ap);
        va_end(ap);
    }
    putchar('\n');
    fflush(stdout);
}

/* keep_log: sendctl logs at debug level only to give each RTT sample
 * (take_rtt_sample: "packno N; rtt: R; delta: D; new srtt: S") and each lost
 * packet; its other debug lines (several per packet sent) and the per-packet
 * lines no reader uses are dropped here, so the trace stays small. */
static int keep_log(const char *buf, size_t len)
{
    static const char *const drop[] = {
        "event: created packet #", "event: generated STREAM frame:",
        "conn: not tickable", "conn: tickable: ",
    };
    const char *sc = memmem(buf, len, "sendctl: ", 9);
    if (sc && memmem(buf, len, "[DEBUG]", 7)) {
        size_t rest = len - (size_t) (sc + 9 - buf);
        return (rest >= 7 && 0 == memcmp(sc + 9, "packno ", 7))
            || (rest >= 5 && 0 == memcmp(sc + 9, "lost ", 5));
    }
    for (size_t i = 0; i < sizeof(drop) / sizeof(drop[0]); ++i)
        if (memmem(buf, len, drop[i], strlen(drop[i])))
            return 0;
    return 1;
}

static int log_buf(void *ctx, const char *buf, size_t len)
{
    (void) ctx;
    while (len > 0 && (buf[len - 1] == '\n' || buf[len - 1] == '\r'))
        --len;
    if (!keep_log(buf, len))
        return (int) len;
    printf("[lsq_%s] t_us=%" PRId64 " LOG %.*s\n", role, t_us(), (int) len, buf);
    return (int) len;
}

static const struct lsquic_logger_if logger_if = { log_buf };

static const char *sa2str(const struct sockaddr *sa, char *buf, size_t n)
{
    const struct sockaddr_in *in = (const struct sockaddr_in *) sa;
    char ip[INET_ADDRSTRLEN];
    if (!sa || sa->sa_family != AF_INET) {
        snprintf(buf, n, "none");
        return buf;
    }
    inet_ntop(AF_INET, &in->sin_addr, ip, sizeof(ip));
    snprintf(buf, n, "%s:%u", ip, ntohs(in->sin_port));
    return buf;
}

struct sock {
    int fd;
    struct sockaddr_in local;
};

/* Sockets: [0] path A (the server's only one), [1] path B. */
static struct sock socks[2];
static int nsocks;
/* Client: after the move, datagrams go out of socks[1] and are handed in
 * with deliver_as as their local address. */
static int moved;
static int nat_rebind;

static int open_sock(struct sock *s, const char *ip, int port)
{
    socklen_t len = sizeof(s->local);
    int one = 1, buf = 4 << 20;
    s->fd = socket(AF_INET, SOCK_DGRAM, 0);
    if (s->fd < 0)
        return -1;
    memset(&s->local, 0, sizeof(s->local));
    s->local.sin_family = AF_INET;
    s->local.sin_port = htons(port);
    if (inet_pton(AF_INET, ip, &s->local.sin_addr) != 1) {
        errno = EINVAL;
        return -1;
    }
    setsockopt(s->fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    setsockopt(s->fd, SOL_SOCKET, SO_RCVBUF, &buf, sizeof(buf));
    setsockopt(s->fd, SOL_SOCKET, SO_SNDBUF, &buf, sizeof(buf));
    if (bind(s->fd, (struct sockaddr *) &s->local, sizeof(s->local)) != 0)
        return -1;
    if (getsockname(s->fd, (struct sockaddr *) &s->local, &len) != 0)
        return -1;
    fcntl(s->fd, F_SETFL, fcntl(s->fd, F_GETFL) | O_NONBLOCK);
    return 0;
}

static int same_addr(const struct sockaddr *a, const struct sockaddr_in *b)
{
    const struct sockaddr_in *x = (const struct sockaddr_in *) a;
    return a && a->sa_family == AF_INET && x->sin_addr.s_addr == b->sin_addr.s_addr && x->sin_port == b->sin_port;
}

static int packets_out(void *ctx, const struct lsquic_out_spec *specs, unsigned n)
{
    unsigned i;
    (void) ctx;
    for (i = 0; i < n; ++i) {
        struct sock *s = &socks[0];
        struct msghdr m;
        if (nsocks > 1 && (moved || same_addr(specs[i].local_sa, &socks[1].local)))
            s = &socks[1];
        memset(&m, 0, sizeof(m));
        m.msg_name = (void *) specs[i].dest_sa;
        m.msg_namelen = sizeof(struct sockaddr_in);
        m.msg_iov = specs[i].iov;
        m.msg_iovlen = specs[i].iovlen;
        if (sendmsg(s->fd, &m, 0) < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK || errno == ENOBUFS) {
                errno = EAGAIN;
                break;
            }
            say("error", "what=sendmsg errno=%d msg=\"%s\"", errno, strerror(errno));
            break;
        }
    }
    return i > 0 ? (int) i : -1;
}

/* ---- connection state ---- */
static lsquic_engine_t *engine;
static lsquic_conn_t *the_conn;
static int conn_closed;
static int64_t body_size;
static int64_t sent_bytes, recv_bytes;
static int got_fin;
static char last_peer[64] = "none", last_local[64] = "none";
static FILE *keylog_fh;
static SSL_CTX *server_ctx;
static unsigned char send_chunk[64 * 1024];

static lsquic_conn_ctx_t *on_new_conn(void *ctx, lsquic_conn_t *c)
{
    (void) ctx;
    the_conn = c;
    say("conn", "");
    if (strcmp(role, "client") == 0)
        lsquic_conn_make_stream(c);
    return NULL;
}

static void on_conn_closed(lsquic_conn_t *c)
{
    (void) c;
    say("closed", "");
    the_conn = NULL;
    conn_closed = 1;
}

static void on_hsk_done(lsquic_conn_t *c, enum lsquic_hsk_status s)
{
    const struct sockaddr *l, *p;
    char a[64], b[64];
    lsquic_conn_get_sockaddr(c, &l, &p);
    say("connected", "status=%d local=%s remote=%s", (int) s, sa2str(l, a, sizeof(a)), sa2str(p, b, sizeof(b)));
}

static lsquic_stream_ctx_t *on_new_stream(void *ctx, lsquic_stream_t *s)
{
    (void) ctx;
    if (!s)
        return NULL;
    if (strcmp(role, "client") == 0)
        lsquic_stream_wantwrite(s, 1);
    else
        lsquic_stream_wantread(s, 1);
    return NULL;
}

static void on_read(lsquic_stream_t *s, lsquic_stream_ctx_t *h)
{
    unsigned char buf[64 * 1024];
    ssize_t n;
    (void) h;
    if (strcmp(role, "server") == 0) {
        n = lsquic_stream_read(s, buf, sizeof(buf));
        if (n > 0)
            return;
        lsquic_stream_wantread(s, 0);
        lsquic_stream_wantwrite(s, 1);
        return;
    }
    while ((n = lsquic_stream_read(s, buf, sizeof(buf))) > 0)
        recv_bytes += n;
    if (n == 0) {
        got_fin = 1;
        lsquic_stream_wantread(s, 0);
        say("received", "bytes=%" PRId64 " fin=1", recv_bytes);
        lsquic_conn_close(lsquic_stream_conn(s));
    } else if (errno != EWOULDBLOCK && errno != EAGAIN) {
        say("error", "what=stream_read errno=%d", errno);
        lsquic_stream_close(s);
    }
}

static void on_write(lsquic_stream_t *s, lsquic_stream_ctx_t *h)
{
    (void) h;
    if (strcmp(role, "client") == 0) {
        if (lsquic_stream_write(s, "G", 1) == 1) {
            lsquic_stream_shutdown(s, 1);
            lsquic_stream_wantwrite(s, 0);
            lsquic_stream_wantread(s, 1);
        }
        return;
    }
    while (sent_bytes < body_size) {
        size_t want = sizeof(send_chunk);
        ssize_t n;
        if ((int64_t) want > body_size - sent_bytes)
            want = (size_t) (body_size - sent_bytes);
        n = lsquic_stream_write(s, send_chunk, want);
        if (n <= 0)
            break;
        sent_bytes += n;
    }
    if (sent_bytes >= body_size) {
        lsquic_stream_wantwrite(s, 0);
        lsquic_stream_shutdown(s, 1);
        say("served", "bytes=%" PRId64, sent_bytes);
    }
}

static void on_close(lsquic_stream_t *s, lsquic_stream_ctx_t *h)
{
    (void) s;
    (void) h;
}

static const struct lsquic_stream_if stream_if = {
    .on_new_conn = on_new_conn,
    .on_conn_closed = on_conn_closed,
    .on_new_stream = on_new_stream,
    .on_read = on_read,
    .on_write = on_write,
    .on_close = on_close,
    .on_hsk_done = on_hsk_done,
};

static void keylog_line(const SSL *ssl, const char *line)
{
    (void) ssl;
    if (keylog_fh) {
        fprintf(keylog_fh, "%s\n", line);
        fflush(keylog_fh);
    }
}

static int select_alpn(SSL *ssl, const unsigned char **out, unsigned char *outlen, const unsigned char *in,
                       unsigned int inlen, void *arg)
{
    static const unsigned char ours[] = "\x08" ALPN;
    (void) ssl;
    (void) arg;
    if (SSL_select_next_proto((unsigned char **) out, outlen, in, inlen, ours, sizeof(ours) - 1) ==
        OPENSSL_NPN_NEGOTIATED)
        return SSL_TLSEXT_ERR_OK;
    return SSL_TLSEXT_ERR_ALERT_FATAL;
}

static SSL_CTX *get_ssl_ctx(void *peer_ctx, const struct sockaddr *local)
{
    (void) peer_ctx;
    (void) local;
    return server_ctx;
}

static SSL_CTX *lookup_cert(void *ctx, const struct sockaddr *local, const char *sni)
{
    (void) ctx;
    (void) local;
    (void) sni;
    return server_ctx;
}

/* ---- main loop ---- */

static void stats(void)
{
    struct lsquic_conn_info ci;
    const struct sockaddr *l, *p;
    char a[64], b[64];
    if (!the_conn)
        return;
    lsquic_conn_get_sockaddr(the_conn, &l, &p);
    sa2str(l, a, sizeof(a));
    sa2str(p, b, sizeof(b));
    if (strcmp(b, last_peer) != 0) {
        if (strcmp(last_peer, "none") != 0)
            say("peer", "from=%s to=%s", last_peer, b);
        snprintf(last_peer, sizeof(last_peer), "%s", b);
    }
    if (strcmp(a, last_local) != 0) {
        if (strcmp(last_local, "none") != 0)
            say("local", "from=%s to=%s", last_local, a);
        snprintf(last_local, sizeof(last_local), "%s", a);
    }
    if (lsquic_conn_get_info(the_conn, &ci) != 0)
        return;
    say("STATS", "cwnd=%" PRIu32 " srtt_us=%" PRIu32 " min_rtt_us=%" PRIu32 " rttvar_us=%" PRIu32 " pmtu=%" PRIu32
                 " local=%s peer=%s",
        ci.lci_cwnd, ci.lci_rtt, ci.lci_rtt_min, ci.lci_rttvar, ci.lci_pmtu, a, b);
}

static void read_socks(void)
{
    unsigned char buf[4096];
    int i;
    for (i = 0; i < nsocks; ++i) {
        for (;;) {
            struct sockaddr_in peer;
            socklen_t plen = sizeof(peer);
            const struct sockaddr *local;
            ssize_t n = recvfrom(socks[i].fd, buf, sizeof(buf), 0, (struct sockaddr *) &peer, &plen);
            if (n < 0)
                break;
            local = (const struct sockaddr *) &socks[i].local;
            if (i == 1 && nat_rebind)
                local = (const struct sockaddr *) &socks[0].local;
            lsquic_engine_packet_in(engine, buf, (size_t) n, local, (struct sockaddr *) &peer, &socks[i], 0);
        }
    }
}

static int loop(int64_t deadline_us, int64_t migrate_at_us, int64_t *hsk_at)
{
    int64_t next_stats = 0, last_progress = 0;
    struct pollfd pf[2];
    int i;
    for (i = 0; i < nsocks; ++i) {
        pf[i].fd = socks[i].fd;
        pf[i].events = POLLIN;
    }
    while (!stop_sig) {
        int diff = 0, wait_us = 100000;
        int64_t now = t_us();
        struct timespec ts;
        if (now > deadline_us) {
            say("error", "what=timeout t_ms=%" PRId64, now / 1000);
            return 2;
        }
        lsquic_engine_process_conns(engine);
        if (conn_closed)
            return 0;
        now = t_us();
        if (hsk_at && *hsk_at < 0 && the_conn && lsquic_conn_status(the_conn, NULL, 0) == LSCONN_ST_CONNECTED)
            *hsk_at = now;
        if (hsk_at && *hsk_at >= 0 && !moved && migrate_at_us >= 0 && now >= *hsk_at + migrate_at_us) {
            char a[64], b[64];
            moved = 1;
            say("migrate", "from=%s to=%s nat_rebind=%d", sa2str((struct sockaddr *) &socks[0].local, a, sizeof(a)),
                sa2str((struct sockaddr *) &socks[1].local, b, sizeof(b)), nat_rebind);
        }
        if (now >= next_stats) {
            stats();
            next_stats = now + STATS_US;
        }
        if (hsk_at && now - last_progress >= 200000) {
            say("progress", "received=%" PRId64, recv_bytes);
            last_progress = now;
        }
        if (lsquic_engine_earliest_adv_tick(engine, &diff))
            wait_us = diff < 0 ? 0 : diff;
        if (wait_us > next_stats - now)
            wait_us = (int) (next_stats - now);
        if (wait_us < 0)
            wait_us = 0;
        ts.tv_sec = wait_us / 1000000;
        ts.tv_nsec = (long) (wait_us % 1000000) * 1000;
        if (ppoll(pf, (nfds_t) nsocks, &ts, NULL) > 0)
            read_socks();
    }
    say("error", "what=signal");
    return 3;
}

static void on_signal(int s) { stop_sig = s; }

static const char *arg(int argc, char **argv, const char *name, const char *def)
{
    int i;
    for (i = 2; i + 1 < argc; i += 2)
        if (strcmp(argv[i], name) == 0)
            return argv[i + 1];
    return def;
}

static unsigned cc_algo(const char *cc)
{
    if (strcmp(cc, "cubic") == 0)
        return 1;
    if (strcmp(cc, "bbr") == 0)
        return 2;
    if (strcmp(cc, "adaptive") == 0)
        return 3;
    return 0;
}

int main(int argc, char **argv)
{
    struct lsquic_engine_settings settings;
    struct lsquic_engine_api api;
    char err[256];
    const char *cc, *addr;
    int port, server, rc;
    int64_t timeout_us;
    struct sockaddr_in peer;

    t0_us = mono_us();
    if (argc < 2) {
        fprintf(stderr, "usage: lsqharness version|server|client [--flag value]...\n");
        return 64;
    }
    if (strcmp(argv[1], "version") == 0) {
        printf("lsquic %d.%d.%d\n", LSQUIC_MAJOR_VERSION, LSQUIC_MINOR_VERSION, LSQUIC_PATCH_VERSION);
        return 0;
    }
    server = strcmp(argv[1], "server") == 0;
    if (!server && strcmp(argv[1], "client") != 0) {
        fprintf(stderr, "lsqharness: unknown command %s\n", argv[1]);
        return 64;
    }
    role = server ? "server" : "client";
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    addr = arg(argc, argv, "--addr", "127.0.0.1");
    port = atoi(arg(argc, argv, "--port", "4433"));
    cc = arg(argc, argv, "--cc", "adaptive");
    timeout_us = atoll(arg(argc, argv, "--timeout-ms", "120000")) * 1000;
    if (cc_algo(cc) == 0) {
        fprintf(stderr, "lsqharness: --cc %s: want cubic, bbr or adaptive\n", cc);
        return 64;
    }

    if (0 != lsquic_global_init(server ? LSQUIC_GLOBAL_SERVER : LSQUIC_GLOBAL_CLIENT)) {
        fprintf(stderr, "lsqharness: lsquic_global_init failed\n");
        return 1;
    }
    lsquic_logger_init(&logger_if, NULL, LLTS_NONE);
    lsquic_set_log_level("info");
    if (0 != lsquic_logger_lopt(arg(argc, argv, "--log", "event=debug,conn=debug,cubic=info,bbr=info,sendctl=debug"))) {
        fprintf(stderr, "lsqharness: bad --log module list\n");
        return 64;
    }

    lsquic_engine_init_settings(&settings, server ? LSENG_SERVER : 0);
    settings.es_cc_algo = cc_algo(cc);
    settings.es_versions = 1 << LSQVER_I001;
    settings.es_idle_timeout = 30;
    settings.es_allow_migration = 1;
    settings.es_init_max_data = 16 << 20;
    settings.es_init_max_stream_data_bidi_local = 16 << 20;
    settings.es_init_max_stream_data_bidi_remote = 16 << 20;
    if (0 != lsquic_engine_check_settings(&settings, server ? LSENG_SERVER : 0, err, sizeof(err))) {
        fprintf(stderr, "lsqharness: settings: %s\n", err);
        return 1;
    }
    memset(&api, 0, sizeof(api));
    api.ea_settings = &settings;
    api.ea_stream_if = &stream_if;
    api.ea_packets_out = packets_out;
    api.ea_alpn = ALPN;

    if (server) {
        const char *cert = arg(argc, argv, "--cert", NULL), *key = arg(argc, argv, "--key", NULL);
        const char *kl = arg(argc, argv, "--keylog", "");
        body_size = atoll(arg(argc, argv, "--body", "1000000"));
        memset(send_chunk, 'x', sizeof(send_chunk));
        if (!cert || !key) {
            fprintf(stderr, "lsqharness server: --cert and --key are required\n");
            return 64;
        }
        server_ctx = SSL_CTX_new(TLS_method());
        SSL_CTX_set_min_proto_version(server_ctx, TLS1_3_VERSION);
        SSL_CTX_set_max_proto_version(server_ctx, TLS1_3_VERSION);
        SSL_CTX_set_alpn_select_cb(server_ctx, select_alpn, NULL);
        if (1 != SSL_CTX_use_certificate_chain_file(server_ctx, cert) ||
            1 != SSL_CTX_use_PrivateKey_file(server_ctx, key, SSL_FILETYPE_PEM)) {
            fprintf(stderr, "lsqharness server: cannot load %s / %s\n", cert, key);
            return 1;
        }
        if (*kl) {
            keylog_fh = fopen(kl, "a");
            if (!keylog_fh) {
                fprintf(stderr, "lsqharness server: --keylog %s: %s\n", kl, strerror(errno));
                return 1;
            }
            SSL_CTX_set_keylog_callback(server_ctx, keylog_line);
        }
        api.ea_get_ssl_ctx = get_ssl_ctx;
        api.ea_lookup_cert = lookup_cert;
        if (open_sock(&socks[0], addr, port) != 0) {
            fprintf(stderr, "lsqharness server: bind %s:%d: %s\n", addr, port, strerror(errno));
            return 1;
        }
        nsocks = 1;
        engine = lsquic_engine_new(LSENG_SERVER, &api);
        if (!engine) {
            fprintf(stderr, "lsqharness server: lsquic_engine_new failed\n");
            return 1;
        }
        say("listening", "addr=%s:%d cc=%s", addr, port, cc);
        rc = loop(timeout_us, -1, NULL);
        say("done", "served=%" PRId64 " rc=%d", sent_bytes, rc);
    } else {
        const char *la = arg(argc, argv, "--local-a", NULL), *lb = arg(argc, argv, "--local-b", NULL);
        const char *sc = arg(argc, argv, "--scenario", "standard");
        int64_t migrate_at = atoll(arg(argc, argv, "--migrate-at-ms", "-1")) * 1000, hsk = -1;
        char a[64], b[64];
        if (!la || !lb) {
            fprintf(stderr, "lsqharness client: --local-a and --local-b are required\n");
            return 64;
        }
        nat_rebind = strcmp(sc, "nat-rebind") == 0;
        if (strcmp(sc, "standard") != 0 && strcmp(sc, "step-down") != 0 && !nat_rebind) {
            fprintf(stderr, "lsqharness client: --scenario %s: want standard, step-down or nat-rebind\n", sc);
            return 64;
        }
        if (open_sock(&socks[0], la, 0) != 0 || open_sock(&socks[1], lb, 0) != 0) {
            fprintf(stderr, "lsqharness client: bind %s / %s: %s\n", la, lb, strerror(errno));
            return 1;
        }
        nsocks = 2;
        memset(&peer, 0, sizeof(peer));
        peer.sin_family = AF_INET;
        peer.sin_port = htons(port);
        inet_pton(AF_INET, addr, &peer.sin_addr);
        engine = lsquic_engine_new(0, &api);
        if (!engine) {
            fprintf(stderr, "lsqharness client: lsquic_engine_new failed\n");
            return 1;
        }
        say("start", "A=%s B=%s scenario=%s cc=%s", sa2str((struct sockaddr *) &socks[0].local, a, sizeof(a)),
            sa2str((struct sockaddr *) &socks[1].local, b, sizeof(b)), sc, cc);
        if (!lsquic_engine_connect(engine, LSQVER_I001, (struct sockaddr *) &socks[0].local, (struct sockaddr *) &peer,
                                   &socks[0], NULL, "localhost", 0, NULL, 0, NULL, 0)) {
            fprintf(stderr, "lsqharness client: lsquic_engine_connect failed\n");
            return 1;
        }
        rc = loop(timeout_us, migrate_at, &hsk);
        say("done", "received=%" PRId64 " fin=%d rc=%d", recv_bytes, got_fin, rc);
        if (rc == 0 && !got_fin)
            rc = 4;
    }
    lsquic_engine_destroy(engine);
    lsquic_global_cleanup();
    if (keylog_fh)
        fclose(keylog_fh);
    return rc;
}
