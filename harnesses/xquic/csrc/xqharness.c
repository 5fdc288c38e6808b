/* xqharness: migaudit's client and server for xquic (harnesses/xquic).
 *
 *   xqharness version
 *   xqharness server --addr IP --port P --cert F --key F --body N --cc ALGO
 *                    --timeout-ms N [--keylog F]
 *   xqharness client --addr IP --port P --local-a IP --local-b IP
 *                    --migrate-at-ms N --scenario S --cc ALGO --timeout-ms N
 *
 * The client opens one stream, sends a one-byte request with FIN and reads
 * the server's body to its FIN. xquic (at the commit this is built against)
 * has no API for a single-path client to move its connection to another
 * local address: new paths exist only with multipath (xqc_conn_create_path
 * needs enable_multipath negotiated by both ends), and a peer address
 * change without it is handled as a NAT rebinding of the path
 * (xqc_conn_on_recv_from_new_addr / rebinding_count in xqc_conn.c). So at
 * --migrate-at-ms the client really changes its IP address: every datagram
 * from then on leaves from its socket bound to the path-B address, and what
 * arrives there is handed to xqc_engine_packet_process with that local
 * address (with --scenario nat-rebind, with the path-A address).
 *
 * stdout carries this harness's own lines, "[xqc_ROLE] t_us=N VERB
 * unix_us=U key=value…" (t_us: µs since the process started), and xquic's
 * own log, "[xqc_ROLE] t_us=N LOG <xquic log line>":
 * Only the lines of xquic's log the parser reads are kept (log_keep).
 *   STATS   xqc_conn_get_stats / xqc_conn_get_lastest_rtt every 5 ms: srtt,
 *           min RTT, latest RTT, bytes in flight, send/lost counts, and
 *           xqc_conn_get_local_addr / xqc_conn_get_peer_addr;
 *   listening / start / connected / peer / local / migrate / progress /
 *   received / served / done / error.
 * The xquic-log parser (parsers/xquic.go) reads it.
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

#include <xquic/xqc_configure.h>
#include <xquic/xquic.h>
#include <xquic/xquic_typedef.h>

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
    printf("[xqc_%s] t_us=%" PRId64 " %s unix_us=%" PRId64, role, t_us(), verb,
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

/* The lines of xquic's debug log the xquic-log parser reads; the rest
 * (several lines per packet: timers, scheduler, encryption) is dropped
 * unless --log-all 1. */
static const char *const log_keep[] = {
    "update_cwnd_limited", "info_circle_record", "|<==|", "on_ack_received|conn:", "after update rtt",
    "mark lost", "REBINDING", "path_response", "path_challenge", "PATH_CHALLENGE", "[error]", "[warn]",
};
static int log_all;

static void log_line(xqc_log_level_t lvl, const void *buf, size_t size, void *ctx)
{
    const char *b = buf;
    size_t i;
    (void) lvl;
    (void) ctx;
    while (size > 0 && (b[size - 1] == '\n' || b[size - 1] == '\r' || b[size - 1] == '\0'))
        --size;
    if (!log_all) {
        for (i = 0; i < sizeof(log_keep) / sizeof(log_keep[0]); ++i)
            if (memmem(b, size, log_keep[i], strlen(log_keep[i])))
                break;
        if (i == sizeof(log_keep) / sizeof(log_keep[0]))
            return;
    }
    printf("[xqc_%s] t_us=%" PRId64 " LOG %.*s\n", role, t_us(), (int) size, b);
}

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

static struct sock socks[2];
static int nsocks;
static int moved, nat_rebind;

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

/* ---- state ---- */
static xqc_engine_t *engine;
static xqc_cid_t the_cid;
static int have_conn, conn_closed, hsk_done;
static xqc_stream_t *the_stream;
static int64_t body_size, sent_bytes, recv_bytes;
static int got_fin, request_seen, request_sent;
static int64_t wake_at = -1;
static char last_peer[64] = "none", last_local[64] = "none";
static FILE *keylog_fh;
static unsigned char send_chunk[64 * 1024];

static xqc_usec_t now_cb(void) { return (xqc_usec_t) mono_us(); }

static xqc_usec_t wall_cb(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (xqc_usec_t) ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void set_timer(xqc_usec_t wake_after, void *ctx)
{
    (void) ctx;
    wake_at = t_us() + (int64_t) wake_after;
}

static void keylog_cb(const xqc_cid_t *scid, const char *line, void *ctx)
{
    (void) scid;
    (void) ctx;
    if (keylog_fh) {
        fprintf(keylog_fh, "%s\n", line);
        fflush(keylog_fh);
    }
}

static ssize_t write_socket(const unsigned char *buf, size_t size, const struct sockaddr *peer, socklen_t plen, void *ctx)
{
    struct sock *s = &socks[0];
    ssize_t n;
    (void) ctx;
    if (nsocks > 1 && moved)
        s = &socks[1];
    n = sendto(s->fd, buf, size, 0, peer, plen);
    if (n < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK || errno == ENOBUFS)
            return XQC_SOCKET_EAGAIN;
        say("error", "what=sendto errno=%d", errno);
        return XQC_SOCKET_ERROR;
    }
    return n;
}

static ssize_t write_socket_ex(uint64_t path_id, const unsigned char *buf, size_t size, const struct sockaddr *peer,
                               socklen_t plen, void *ctx)
{
    (void) path_id;
    return write_socket(buf, size, peer, plen, ctx);
}

/* The client keeps no tokens, sessions or transport parameters (every
 * repetition is a fresh connection), but xquic calls these unconditionally. */
static void save_token(const unsigned char *token, uint32_t len, void *ctx)
{
    (void) token;
    (void) len;
    (void) ctx;
}

static void save_string(const char *data, size_t len, void *ctx)
{
    (void) data;
    (void) len;
    (void) ctx;
}

static int server_accept(xqc_engine_t *e, xqc_connection_t *conn, const xqc_cid_t *cid, void *ctx)
{
    (void) e;
    (void) ctx;
    the_cid = *cid;
    have_conn = 1;
    xqc_conn_set_transport_user_data(conn, NULL);
    say("conn", "");
    return 0;
}

static void update_cid(xqc_connection_t *conn, const xqc_cid_t *retire, const xqc_cid_t *new_cid, void *ctx)
{
    (void) conn;
    (void) retire;
    (void) ctx;
    the_cid = *new_cid;
}

static int conn_create(xqc_connection_t *conn, const xqc_cid_t *cid, void *ud, void *pd)
{
    (void) conn;
    (void) ud;
    (void) pd;
    the_cid = *cid;
    have_conn = 1;
    return 0;
}

static int conn_close(xqc_connection_t *conn, const xqc_cid_t *cid, void *ud, void *pd)
{
    (void) cid;
    (void) ud;
    (void) pd;
    say("closed", "errno=%d", (int) xqc_conn_get_errno(conn));
    conn_closed = 1;
    return 0;
}

static void addrs(xqc_connection_t *conn, char *l, char *p, size_t n)
{
    struct sockaddr_storage a;
    socklen_t len = 0;
    if (xqc_conn_get_local_addr(conn, (struct sockaddr *) &a, sizeof(a), &len) == 0)
        sa2str((struct sockaddr *) &a, l, n);
    else
        snprintf(l, n, "none");
    if (xqc_conn_get_peer_addr(conn, (struct sockaddr *) &a, sizeof(a), &len) == 0)
        sa2str((struct sockaddr *) &a, p, n);
    else
        snprintf(p, n, "none");
}

static xqc_connection_t *cur_conn;
static void client_request(xqc_stream_t *s);

static void hsk_finished(xqc_connection_t *conn, void *ud, void *pd)
{
    char l[64], p[64];
    (void) ud;
    (void) pd;
    cur_conn = conn;
    hsk_done = 1;
    addrs(conn, l, p, sizeof(l));
    say("connected", "local=%s remote=%s", l, p);
    if (strcmp(role, "client") == 0)
        client_request(the_stream);
}

static void server_send(xqc_stream_t *s)
{
    while (sent_bytes < body_size) {
        size_t want = sizeof(send_chunk);
        int fin;
        ssize_t n;
        if ((int64_t) want > body_size - sent_bytes)
            want = (size_t) (body_size - sent_bytes);
        fin = sent_bytes + (int64_t) want == body_size;
        n = xqc_stream_send(s, send_chunk, want, fin);
        if (n < 0)
            return; /* -XQC_EAGAIN: stream_write_notify resumes */
        sent_bytes += n;
        if (sent_bytes >= body_size)
            say("served", "bytes=%" PRId64, sent_bytes);
        if ((size_t) n < want)
            return;
    }
}

static int stream_read(xqc_stream_t *s, void *ud)
{
    unsigned char buf[64 * 1024];
    uint8_t fin = 0;
    ssize_t n;
    (void) ud;
    for (;;) {
        n = xqc_stream_recv(s, buf, sizeof(buf), &fin);
        if (n == -XQC_EAGAIN)
            break;
        if (n < 0) {
            say("error", "what=stream_recv ret=%zd", n);
            return 0;
        }
        if (strcmp(role, "client") == 0)
            recv_bytes += n;
        if (fin || n == 0)
            break;
    }
    if (strcmp(role, "server") == 0) {
        if (fin && !request_seen) {
            request_seen = 1;
            the_stream = s;
            server_send(s);
        }
        return 0;
    }
    if (fin && !got_fin) {
        got_fin = 1;
        say("received", "bytes=%" PRId64 " fin=1", recv_bytes);
        xqc_conn_close(engine, &the_cid);
    }
    return 0;
}

/* client_request sends the one-byte request with FIN once xquic takes it
 * (before the handshake xqc_stream_send returns -XQC_EAGAIN: no 0-RTT). */
static void client_request(xqc_stream_t *s)
{
    ssize_t n;
    if (request_sent || !s)
        return;
    n = xqc_stream_send(s, (unsigned char *) "G", 1, 1);
    if (n == 1)
        request_sent = 1;
    else if (n != -XQC_EAGAIN)
        say("error", "what=stream_send ret=%zd", n);
}

static int stream_write(xqc_stream_t *s, void *ud)
{
    (void) ud;
    if (strcmp(role, "server") == 0 && request_seen)
        server_send(s);
    else if (strcmp(role, "client") == 0)
        client_request(s);
    return 0;
}

static int stream_create(xqc_stream_t *s, void *ud)
{
    (void) s;
    (void) ud;
    return 0;
}

static int stream_close(xqc_stream_t *s, void *ud)
{
    (void) s;
    (void) ud;
    return 0;
}

/* ---- main loop ---- */

static void stats(void)
{
    xqc_conn_stats_t st;
    char l[64], p[64];
    if (!have_conn || conn_closed || !cur_conn)
        return;
    addrs(cur_conn, l, p, sizeof(l));
    if (strcmp(p, last_peer) != 0) {
        if (strcmp(last_peer, "none") != 0)
            say("peer", "from=%s to=%s", last_peer, p);
        snprintf(last_peer, sizeof(last_peer), "%s", p);
    }
    if (strcmp(l, last_local) != 0) {
        if (strcmp(last_local, "none") != 0)
            say("local", "from=%s to=%s", last_local, l);
        snprintf(last_local, sizeof(last_local), "%s", l);
    }
    st = xqc_conn_get_stats(engine, &the_cid);
    say("STATS", "srtt_us=%" PRIu64 " min_rtt_us=%" PRIu64 " latest_rtt_us=%" PRIu64 " bytes_in_flight=%" PRIu64
                 " send=%u lost=%u recv=%u local=%s peer=%s",
        (uint64_t) st.srtt, (uint64_t) st.min_rtt, (uint64_t) xqc_conn_get_lastest_rtt(engine, &the_cid),
        (uint64_t) st.inflight_bytes, st.send_count, st.lost_count, st.recv_count, l, p);
}

static void read_socks(void)
{
    unsigned char buf[4096];
    int i;
    for (i = 0; i < nsocks; ++i) {
        for (;;) {
            struct sockaddr_in peer;
            socklen_t plen = sizeof(peer);
            const struct sockaddr_in *local = &socks[i].local;
            ssize_t n = recvfrom(socks[i].fd, buf, sizeof(buf), 0, (struct sockaddr *) &peer, &plen);
            if (n < 0)
                break;
            if (i == 1 && nat_rebind)
                local = &socks[0].local;
            xqc_engine_packet_process(engine, buf, (size_t) n, (const struct sockaddr *) local, sizeof(*local),
                                      (struct sockaddr *) &peer, plen, (xqc_usec_t) mono_us(), NULL);
        }
    }
    xqc_engine_finish_recv(engine);
}

static int loop(int64_t deadline_us, int64_t migrate_at_us, int client)
{
    int64_t next_stats = 0, last_progress = 0, hsk_at = -1;
    struct pollfd pf[2];
    int i;
    for (i = 0; i < nsocks; ++i) {
        pf[i].fd = socks[i].fd;
        pf[i].events = POLLIN;
    }
    while (!stop_sig) {
        int64_t now = t_us(), wait_us;
        struct timespec ts;
        if (now > deadline_us) {
            say("error", "what=timeout t_ms=%" PRId64, now / 1000);
            return 2;
        }
        if (wake_at >= 0 && now >= wake_at) {
            wake_at = -1;
            xqc_engine_main_logic(engine);
        }
        if (conn_closed)
            return 0;
        now = t_us();
        if (client && hsk_done && hsk_at < 0)
            hsk_at = now;
        if (client && hsk_at >= 0 && !moved && migrate_at_us >= 0 && now >= hsk_at + migrate_at_us) {
            char a[64], b[64];
            moved = 1;
            say("migrate", "from=%s to=%s nat_rebind=%d", sa2str((struct sockaddr *) &socks[0].local, a, sizeof(a)),
                sa2str((struct sockaddr *) &socks[1].local, b, sizeof(b)), nat_rebind);
            xqc_conn_continue_send(engine, &the_cid);
        }
        if (now >= next_stats) {
            stats();
            next_stats = now + STATS_US;
        }
        if (client && now - last_progress >= 200000) {
            say("progress", "received=%" PRId64, recv_bytes);
            last_progress = now;
        }
        wait_us = next_stats - now;
        if (wake_at >= 0 && wake_at - now < wait_us)
            wait_us = wake_at - now;
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

static int cc_of(const char *cc, xqc_cong_ctrl_callback_t *out)
{
    if (strcmp(cc, "cubic") == 0) {
        *out = xqc_cubic_cb;
        return 0;
    }
    if (strcmp(cc, "bbr") == 0) {
        *out = xqc_bbr_cb;
        return 0;
    }
#ifdef XQC_ENABLE_RENO
    if (strcmp(cc, "reno") == 0) {
        *out = xqc_reno_cb;
        return 0;
    }
#endif
    return -1;
}

int main(int argc, char **argv)
{
    xqc_config_t config;
    xqc_engine_ssl_config_t ssl;
    xqc_conn_settings_t cs;
    xqc_engine_callback_t ecb;
    xqc_transport_callbacks_t tcb;
    xqc_app_proto_callbacks_t ap;
    const char *cc, *addr, *level;
    int port, server, rc;
    int64_t timeout_us;

    t0_us = mono_us();
    if (argc < 2) {
        fprintf(stderr, "usage: xqharness version|server|client [--flag value]...\n");
        return 64;
    }
    if (strcmp(argv[1], "version") == 0) {
        printf("xquic %d.%d\n", xquic_VERSION_MAJOR, xquic_VERSION_MINOR);
        return 0;
    }
    server = strcmp(argv[1], "server") == 0;
    if (!server && strcmp(argv[1], "client") != 0) {
        fprintf(stderr, "xqharness: unknown command %s\n", argv[1]);
        return 64;
    }
    role = server ? "server" : "client";
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    addr = arg(argc, argv, "--addr", "127.0.0.1");
    port = atoi(arg(argc, argv, "--port", "4433"));
    cc = arg(argc, argv, "--cc", "cubic");
    level = arg(argc, argv, "--log", "debug");
    log_all = atoi(arg(argc, argv, "--log-all", "0"));
    timeout_us = atoll(arg(argc, argv, "--timeout-ms", "120000")) * 1000;

    memset(&cs, 0, sizeof(cs));
    if (cc_of(cc, &cs.cong_ctrl_callback) != 0) {
        fprintf(stderr, "xqharness: --cc %s: want cubic, bbr or reno\n", cc);
        return 64;
    }
    cs.proto_version = XQC_VERSION_V1;
    cs.init_idle_time_out = 30000;
    cs.idle_time_out = 30000;
    cs.spurious_loss_detect_on = 0;

    if (xqc_engine_get_default_config(&config, server ? XQC_ENGINE_SERVER : XQC_ENGINE_CLIENT) < 0) {
        fprintf(stderr, "xqharness: xqc_engine_get_default_config failed\n");
        return 1;
    }
    config.cfg_log_level = strcmp(level, "debug") == 0 ? XQC_LOG_DEBUG
                           : strcmp(level, "info") == 0 ? XQC_LOG_INFO
                                                        : XQC_LOG_STATS;
    config.cfg_log_timestamp = 0;
    config.cfg_log_level_name = 1;

    memset(&ssl, 0, sizeof(ssl));
    ssl.ciphers = XQC_TLS_CIPHERS;
    ssl.groups = XQC_TLS_GROUPS;
    memset(&ecb, 0, sizeof(ecb));
    ecb.set_event_timer = set_timer;
    ecb.log_callbacks.xqc_log_write_err = log_line;
    ecb.log_callbacks.xqc_log_write_stat = log_line;
    ecb.monotonic_ts = now_cb;
    ecb.realtime_ts = wall_cb;
    memset(&tcb, 0, sizeof(tcb));
    tcb.write_socket = write_socket;
    tcb.write_socket_ex = write_socket_ex;
    tcb.conn_update_cid_notify = update_cid;
    tcb.save_token = save_token;
    tcb.save_session_cb = save_string;
    tcb.save_tp_cb = save_string;
    memset(&ap, 0, sizeof(ap));
    ap.conn_cbs.conn_create_notify = conn_create;
    ap.conn_cbs.conn_close_notify = conn_close;
    ap.conn_cbs.conn_handshake_finished = hsk_finished;
    ap.stream_cbs.stream_read_notify = stream_read;
    ap.stream_cbs.stream_write_notify = stream_write;
    ap.stream_cbs.stream_create_notify = stream_create;
    ap.stream_cbs.stream_close_notify = stream_close;

    if (server) {
        const char *kl = arg(argc, argv, "--keylog", "");
        ssl.cert_file = (char *) arg(argc, argv, "--cert", "");
        ssl.private_key_file = (char *) arg(argc, argv, "--key", "");
        body_size = atoll(arg(argc, argv, "--body", "1000000"));
        memset(send_chunk, 'x', sizeof(send_chunk));
        if (!*ssl.cert_file || !*ssl.private_key_file) {
            fprintf(stderr, "xqharness server: --cert and --key are required\n");
            return 64;
        }
        if (*kl) {
            keylog_fh = fopen(kl, "a");
            if (!keylog_fh) {
                fprintf(stderr, "xqharness server: --keylog %s: %s\n", kl, strerror(errno));
                return 1;
            }
            ecb.keylog_cb = keylog_cb;
        }
        tcb.server_accept = server_accept;
        if (open_sock(&socks[0], addr, port) != 0) {
            fprintf(stderr, "xqharness server: bind %s:%d: %s\n", addr, port, strerror(errno));
            return 1;
        }
        nsocks = 1;
        engine = xqc_engine_create(XQC_ENGINE_SERVER, &config, &ssl, &ecb, &tcb, NULL);
        if (!engine) {
            fprintf(stderr, "xqharness server: xqc_engine_create failed (certificate %s, key %s?)\n", ssl.cert_file,
                    ssl.private_key_file);
            return 1;
        }
        xqc_server_set_conn_settings(engine, &cs);
        if (xqc_engine_register_alpn(engine, ALPN, strlen(ALPN), &ap, NULL) != 0) {
            fprintf(stderr, "xqharness server: xqc_engine_register_alpn failed\n");
            return 1;
        }
        /* The server learns of its connection in server_accept; its
         * xqc_connection_t arrives with the handshake. */
        say("listening", "addr=%s:%d cc=%s", addr, port, cc);
        rc = loop(timeout_us, -1, 0);
        say("done", "served=%" PRId64 " rc=%d", sent_bytes, rc);
    } else {
        const char *la = arg(argc, argv, "--local-a", NULL), *lb = arg(argc, argv, "--local-b", NULL);
        const char *sc = arg(argc, argv, "--scenario", "standard");
        int64_t migrate_at = atoll(arg(argc, argv, "--migrate-at-ms", "-1")) * 1000;
        xqc_conn_ssl_config_t cssl;
        struct sockaddr_in peer;
        const xqc_cid_t *cid;
        char a[64], b[64];
        if (!la || !lb) {
            fprintf(stderr, "xqharness client: --local-a and --local-b are required\n");
            return 64;
        }
        nat_rebind = strcmp(sc, "nat-rebind") == 0;
        if (strcmp(sc, "standard") != 0 && strcmp(sc, "step-down") != 0 && !nat_rebind) {
            fprintf(stderr, "xqharness client: --scenario %s: want standard, step-down or nat-rebind\n", sc);
            return 64;
        }
        if (open_sock(&socks[0], la, 0) != 0 || open_sock(&socks[1], lb, 0) != 0) {
            fprintf(stderr, "xqharness client: bind %s / %s: %s\n", la, lb, strerror(errno));
            return 1;
        }
        nsocks = 2;
        engine = xqc_engine_create(XQC_ENGINE_CLIENT, &config, &ssl, &ecb, &tcb, NULL);
        if (!engine) {
            fprintf(stderr, "xqharness client: xqc_engine_create failed\n");
            return 1;
        }
        if (xqc_engine_register_alpn(engine, ALPN, strlen(ALPN), &ap, NULL) != 0) {
            fprintf(stderr, "xqharness client: xqc_engine_register_alpn failed\n");
            return 1;
        }
        memset(&peer, 0, sizeof(peer));
        peer.sin_family = AF_INET;
        peer.sin_port = htons(port);
        inet_pton(AF_INET, addr, &peer.sin_addr);
        memset(&cssl, 0, sizeof(cssl));
        cssl.cert_verify_flag = 0;
        say("start", "A=%s B=%s scenario=%s cc=%s", sa2str((struct sockaddr *) &socks[0].local, a, sizeof(a)),
            sa2str((struct sockaddr *) &socks[1].local, b, sizeof(b)), sc, cc);
        cid = xqc_connect(engine, &cs, NULL, 0, "localhost", 0, &cssl, (struct sockaddr *) &peer, sizeof(peer), ALPN,
                          NULL);
        if (!cid) {
            fprintf(stderr, "xqharness client: xqc_connect failed\n");
            return 1;
        }
        the_cid = *cid;
        have_conn = 1;
        the_stream = xqc_stream_create(engine, cid, NULL, NULL);
        if (!the_stream) {
            fprintf(stderr, "xqharness client: xqc_stream_create failed\n");
            return 1;
        }
        client_request(the_stream);
        rc = loop(timeout_us, migrate_at, 1);
        say("done", "received=%" PRId64 " fin=%d rc=%d", recv_bytes, got_fin, rc);
        if (rc == 0 && !got_fin)
            rc = 4;
    }
    xqc_engine_destroy(engine);
    if (keylog_fh)
        fclose(keylog_fh);
    return rc;
}
