/*
 * qlyharness: migaudit's quicly client and server, built together with the
 * upstream library (harnesses/quicly, harnesses/upstream).
 *
 * One download over one bidirectional stream. The server serves --body bytes
 * on the stream the client opens; the client reads them and, --migrate-at-ms
 * after the handshake, moves to another local address.
 *
 * quicly has no API for a client to change its local address: a client never
 * starts path validation and drops only packets whose source is not the
 * server's address (lib/quicly.c, quicly_receive). Its "migration" is the
 * application sending the connection's datagrams from another socket; the
 * server sees packets from a new address, opens a path, validates it with
 * PATH_CHALLENGE and promotes it (promote_path) once a non-probing packet
 * arrives on the validated path. So the client holds one socket per local
 * address it will use, each bound to an explicit address (path A, path B, a
 * second port on path A): the testbed's policy routing sends each socket's
 * datagrams out of its own path.
 *
 * Trace: quicly's own event log (ptls_log, JSON lines, the points listed in
 * log_points) on --log, with this harness's own lines in the same file:
 *   {"module":"qlyharness","type":"rtt","time_us":..,...}  after a datagram
 *     changed the connection's RTT estimate or window (quicly_get_stats);
 *   {"module":"qlyharness","type":"datagram_sent"|"datagram_received",...}
 *     when the peer or local address of a datagram differs from the last one.
 * Key log: picotls's log_event callback in the NSS key log format (--keylog).
 *
 * Both sides print one event per line on stdout for the Go harness:
 *   EV <unix-ns> <name> key=value ...
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
#include <sys/time.h>
#include <time.h>
#include <unistd.h>
#include <openssl/pem.h>
#include "picotls.h"
#include "picotls/openssl.h"
#include "quicly.h"
#include "quicly/defaults.h"
#include "quicly/streambuf.h"

#ifndef QLY_COMMIT
#define QLY_COMMIT "unknown"
#endif

#define MAX_SOCKS 3

static volatile sig_atomic_t stop_requested;
static void on_signal(int sig)
{
    (void)sig;
    stop_requested = 1;
}

static uint64_t unix_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void ev(const char *name, const char *fmt, ...)
{
    va_list ap;
    printf("EV %" PRIu64 " %s", unix_ns(), name);
    if (fmt != NULL && fmt[0] != 0) {
        printf(" ");
        va_start(ap, fmt);
        vprintf(fmt, ap);
        va_end(ap);
    }
    printf("\n");
    fflush(stdout);
}

static const char *addr_str(const struct sockaddr *a, char *buf, size_t len)
{
    char ip[INET6_ADDRSTRLEN] = "?";
    if (a == NULL || a->sa_family == AF_UNSPEC) {
        snprintf(buf, len, "none");
    } else if (a->sa_family == AF_INET) {
        const struct sockaddr_in *s = (const struct sockaddr_in *)a;
        inet_ntop(AF_INET, &s->sin_addr, ip, sizeof(ip));
        snprintf(buf, len, "%s:%u", ip, ntohs(s->sin_port));
    } else {
        const struct sockaddr_in6 *s = (const struct sockaddr_in6 *)a;
        inet_ntop(AF_INET6, &s->sin6_addr, ip, sizeof(ip));
        snprintf(buf, len, "[%s]:%u", ip, ntohs(s->sin6_port));
    }
    return buf;
}

static int same_addr(const struct sockaddr_in *a, const struct sockaddr_in *b)
{
    return a->sin_addr.s_addr == b->sin_addr.s_addr && a->sin_port == b->sin_port;
}

/* ---- trace: quicly's event log plus this harness's lines, one fd ---- */

static int log_fd = -1;

static void log_line(const char *fmt, ...)
{
    if (log_fd < 0)
        return;
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof(buf) - 1, fmt, ap);
    va_end(ap);
    if (n <= 0 || n >= (int)sizeof(buf) - 1)
        return;
    buf[n++] = '\n';
    ssize_t w;
    while ((w = write(log_fd, buf, n)) == -1 && errno == EINTR)
        ;
}

static int64_t now_us(void)
{
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return (int64_t)tv.tv_sec * 1000000 + tv.tv_usec;
}

/* The points of quicly's event log the parser reads (ptls_log_add_fd takes
 * them as p1\0p2\0\0). Stream data and packet dumps are not logged. */
static const char log_points[] = "quicly:accept\0quicly:connect\0quicly:free\0"
                                 "quicly:packet_sent\0quicly:packet_received\0quicly:packet_acked\0quicly:packet_lost\0"
                                 "quicly:ack_block_received\0quicly:cc_ack_received\0quicly:cc_congestion\0quicly:pto\0"
                                 "quicly:new_path\0quicly:delete_path\0quicly:promote_path\0quicly:elicit_path_migration\0"
                                 "quicly:path_challenge_send\0quicly:path_challenge_receive\0"
                                 "quicly:path_response_send\0quicly:path_response_receive\0"
                                 "quicly:transport_close_send\0quicly:transport_close_receive\0"
                                 "quicly:application_close_send\0quicly:application_close_receive\0"
                                 "quicly:handshake_done_send\0quicly:handshake_done_receive\0\0";

static int open_log(const char *path)
{
    if ((log_fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0644)) == -1) {
        fprintf(stderr, "qlyharness: open %s: %s\n", path, strerror(errno));
        return -1;
    }
    int lfd = dup(log_fd); /* ptls_log closes its fd on a write error */
    if (ptls_log_add_fd(lfd, 1., log_points, NULL, NULL, 0) != 0) {
        fprintf(stderr, "qlyharness: ptls_log_add_fd failed (picotls built without PTLS_HAVE_LOG?)\n");
        return -1;
    }
    return 0;
}

/* rtt logs the connection's estimator and window when they changed. */
static quicly_rtt_t last_rtt;
static uint32_t last_cwnd;
static void log_rtt(quicly_conn_t *conn)
{
    quicly_stats_t st;
    if (conn == NULL || quicly_get_stats(conn, &st) != 0)
        return;
    if (memcmp(&st.rtt, &last_rtt, sizeof(last_rtt)) == 0 && st.cc.cwnd == last_cwnd)
        return;
    last_rtt = st.rtt;
    last_cwnd = st.cc.cwnd;
    log_line("{\"module\":\"qlyharness\",\"type\":\"rtt\",\"time_us\":%" PRId64 ",\"min_rtt\":%" PRIu32 ",\"smoothed_rtt\":%" PRIu32
             ",\"rttvar\":%" PRIu32 ",\"latest_rtt\":%" PRIu32 ",\"cwnd\":%" PRIu32 "}",
             now_us(), st.rtt.minimum, st.rtt.smoothed, st.rtt.variance, st.rtt.latest, st.cc.cwnd);
}

/* log_datagram logs a datagram when its addresses differ from the last one
 * in the same direction. */
static struct sockaddr_in last_dir_peer[2], last_dir_local[2];
static void log_datagram(int sent, const struct sockaddr_in *peer, const struct sockaddr_in *local, size_t len)
{
    if (same_addr(&last_dir_peer[sent], peer) && same_addr(&last_dir_local[sent], local))
        return;
    last_dir_peer[sent] = *peer;
    last_dir_local[sent] = *local;
    char p[64], l[64];
    addr_str((const struct sockaddr *)peer, p, sizeof(p));
    addr_str((const struct sockaddr *)local, l, sizeof(l));
    log_line("{\"module\":\"qlyharness\",\"type\":\"%s\",\"time_us\":%" PRId64 ",\"peer\":\"%s\",\"local\":\"%s\",\"len\":%zu}",
             sent ? "datagram_sent" : "datagram_received", now_us(), p, l, len);
}

/* ---- key log (NSS format) through picotls's log_event callback ---- */

static FILE *keylog_fp;
static void keylog_cb(ptls_log_event_t *self, ptls_t *tls, const char *type, const char *fmt, ...)
{
    (void)self;
    char randomhex[PTLS_HELLO_RANDOM_SIZE * 2 + 1];
    va_list args;
    ptls_hexdump(randomhex, ptls_get_client_random(tls).base, PTLS_HELLO_RANDOM_SIZE);
    fprintf(keylog_fp, "%s %s ", type, randomhex);
    va_start(args, fmt);
    vfprintf(keylog_fp, fmt, args);
    va_end(args);
    fprintf(keylog_fp, "\n");
    fflush(keylog_fp);
}
static ptls_log_event_t keylog_event = {keylog_cb};

/* ---- the download ---- */

static quicly_context_t ctx;
static quicly_cid_plaintext_t next_cid;
static int is_server;
static uint64_t body_size, served, received;
static int fin_received;

static quicly_error_t flatten_body(quicly_sendbuf_vec_t *vec, void *dst, size_t off, size_t len)
{
    (void)vec;
    uint8_t *d = dst;
    for (size_t i = 0; i < len; ++i)
        d[i] = (uint8_t)('a' + (off + i) % 26);
    return 0;
}
static const quicly_streambuf_sendvec_callbacks_t body_callbacks = {flatten_body, NULL};

static void on_send_shift(quicly_stream_t *stream, size_t delta)
{
    served += delta;
    quicly_streambuf_egress_shift(stream, delta);
}

static void on_stop_sending(quicly_stream_t *stream, quicly_error_t err)
{
    ev("error", "what=stop_sending code=%" PRIu64, QUICLY_ERROR_GET_ERROR_CODE(err));
    quicly_close(stream->conn, QUICLY_ERROR_FROM_APPLICATION_ERROR_CODE(0), "");
}

static void on_receive_reset(quicly_stream_t *stream, quicly_error_t err)
{
    ev("error", "what=reset_stream code=%" PRIu64, QUICLY_ERROR_GET_ERROR_CODE(err));
    quicly_close(stream->conn, QUICLY_ERROR_FROM_APPLICATION_ERROR_CODE(0), "");
}

static int body_started;
static void on_receive(quicly_stream_t *stream, size_t off, const void *src, size_t len)
{
    if (quicly_streambuf_ingress_receive(stream, off, src, len) != 0)
        return;
    ptls_iovec_t input = quicly_streambuf_ingress_get(stream);
    if (is_server) {
        /* the request is one line; its FIN starts the body */
        if (!body_started && quicly_recvstate_transfer_complete(&stream->recvstate)) {
            body_started = 1;
            quicly_sendbuf_vec_t vec = {&body_callbacks, (size_t)body_size, NULL};
            quicly_streambuf_egress_write_vec(stream, &vec);
            quicly_streambuf_egress_shutdown(stream);
            ev("request", "stream=%" PRId64 " body=%" PRIu64, stream->stream_id, body_size);
        }
    } else {
        received += input.len;
        if (quicly_recvstate_transfer_complete(&stream->recvstate)) {
            fin_received = 1;
            ev("received", "bytes=%" PRIu64, received);
            quicly_close(stream->conn, 0, "");
        }
    }
    quicly_streambuf_ingress_shift(stream, input.len);
}

static quicly_error_t on_stream_open(quicly_stream_open_t *self, quicly_stream_t *stream)
{
    (void)self;
    static const quicly_stream_callbacks_t cbs = {quicly_streambuf_destroy, on_send_shift, quicly_streambuf_egress_emit,
                                                  on_stop_sending, on_receive, on_receive_reset};
    quicly_error_t ret;
    if ((ret = quicly_streambuf_create(stream, sizeof(quicly_streambuf_t))) != 0)
        return ret;
    stream->callbacks = &cbs;
    return 0;
}

/* ---- sockets ---- */

static int udp_socket(const char *ip, int port, struct sockaddr_in *bound)
{
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    if (fd < 0)
        return -1;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
    if (inet_pton(AF_INET, ip, &a.sin_addr) != 1) {
        fprintf(stderr, "qlyharness: bad IPv4 address %s\n", ip);
        close(fd);
        return -1;
    }
    int on = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));
    int bufsz = 4 << 20;
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &bufsz, sizeof(bufsz));
    setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &bufsz, sizeof(bufsz));
    if (bind(fd, (struct sockaddr *)&a, sizeof(a)) != 0) {
        fprintf(stderr, "qlyharness: bind %s:%d: %s\n", ip, port, strerror(errno));
        close(fd);
        return -1;
    }
    socklen_t sl = sizeof(*bound);
    getsockname(fd, (struct sockaddr *)bound, &sl);
    fcntl(fd, F_SETFL, O_NONBLOCK);
    return fd;
}

struct sock {
    int fd;
    struct sockaddr_in local;
};

static void send_packets(quicly_conn_t *conn, struct sock *s, int *freed)
{
    quicly_address_t dest, src;
    struct iovec dgrams[16];
    uint8_t buf[16 * 1500];
    for (;;) {
        size_t num = PTLS_ELEMENTSOF(dgrams);
        quicly_error_t ret = quicly_send(conn, &dest, &src, dgrams, &num, buf, sizeof(buf));
        if (ret == QUICLY_ERROR_FREE_CONNECTION) {
            *freed = 1;
            return;
        }
        if (ret != 0) {
            ev("error", "what=quicly_send code=%" PRId64, (int64_t)ret);
            *freed = 1;
            return;
        }
        for (size_t i = 0; i < num; ++i) {
            struct msghdr mh = {.msg_name = &dest.sa, .msg_namelen = quicly_get_socklen(&dest.sa), .msg_iov = &dgrams[i], .msg_iovlen = 1};
            ssize_t r;
            while ((r = sendmsg(s->fd, &mh, 0)) == -1 && errno == EINTR)
                ;
            log_datagram(1, &dest.sin, &s->local, dgrams[i].iov_len);
        }
        if (num < PTLS_ELEMENTSOF(dgrams))
            return;
    }
}

/* receive_all reads every pending datagram of fd into conn (or accepts it). */
static void receive_all(quicly_conn_t **conn, struct sock *s)
{
    for (;;) {
        uint8_t buf[2048];
        struct sockaddr_in sa;
        struct iovec vec = {.iov_base = buf, .iov_len = sizeof(buf)};
        struct msghdr mh = {.msg_name = &sa, .msg_namelen = sizeof(sa), .msg_iov = &vec, .msg_iovlen = 1};
        ssize_t n = recvmsg(s->fd, &mh, 0);
        if (n <= 0)
            return;
        log_datagram(0, &sa, &s->local, (size_t)n);
        size_t off = 0;
        while (off < (size_t)n) {
            quicly_decoded_packet_t pkt;
            if (quicly_decode_packet(&ctx, &pkt, buf, n, &off) == SIZE_MAX)
                break;
            if (*conn != NULL) {
                if (quicly_is_destination(*conn, NULL, (struct sockaddr *)&sa, &pkt))
                    quicly_receive(*conn, NULL, (struct sockaddr *)&sa, &pkt);
            } else if (is_server) {
                if (quicly_accept(conn, &ctx, NULL, (struct sockaddr *)&sa, &pkt, NULL, &next_cid, NULL, NULL) == 0 && *conn != NULL) {
                    char a[64];
                    ev("accept", "peer=%s", addr_str((struct sockaddr *)&sa, a, sizeof(a)));
                }
            }
        }
        log_rtt(*conn);
    }
}

static int64_t wait_ms(quicly_conn_t *conn, int64_t cap)
{
    int64_t t = conn != NULL ? quicly_get_first_timeout(conn) - ctx.now->cb(ctx.now) : cap;
    if (t < 0)
        t = 0;
    return t < cap ? t : cap;
}

static int usage(void)
{
    fprintf(stderr, "usage: qlyharness version\n"
                    "       qlyharness server --addr IP --port N --cert F --key F --log F --keylog F --cc reno|cubic|pico --body N "
                    "--timeout-ms N\n"
                    "       qlyharness client --addr IP --port N --local-a IP --local-b IP --log F --cc C --scenario S "
                    "--migrate-at-ms N --back-after-ms N --timeout-ms N\n");
    return 2;
}

static const char *opt(int argc, char **argv, const char *name, const char *def)
{
    for (int i = 2; i + 1 < argc; i += 2)
        if (strcmp(argv[i], name) == 0)
            return argv[i + 1];
    return def;
}

static int setup_cc(const char *name)
{
    for (quicly_cc_type_t **cc = quicly_cc_all_types; *cc != NULL; ++cc) {
        if (strcmp((*cc)->name, name) == 0) {
            ctx.init_cc = (*cc)->cc_init;
            return 0;
        }
    }
    fprintf(stderr, "qlyharness: unknown congestion controller %s (quicly has:", name);
    for (quicly_cc_type_t **cc = quicly_cc_all_types; *cc != NULL; ++cc)
        fprintf(stderr, " %s", (*cc)->name);
    fprintf(stderr, ")\n");
    return -1;
}

int main(int argc, char **argv)
{
    if (argc >= 2 && strcmp(argv[1], "version") == 0) {
        printf("quicly %s\n", QLY_COMMIT);
        return 0;
    }
    if (argc < 2 || (argc % 2) != 0)
        return usage();
    is_server = strcmp(argv[1], "server") == 0;
    if (!is_server && strcmp(argv[1], "client") != 0)
        return usage();
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    signal(SIGPIPE, SIG_IGN);

    static ptls_context_t tlsctx = {.random_bytes = ptls_openssl_random_bytes,
                                    .get_time = &ptls_get_time,
                                    .key_exchanges = ptls_openssl_key_exchanges,
                                    .cipher_suites = ptls_openssl_cipher_suites};
    static quicly_stream_open_t stream_open = {on_stream_open};
    static ptls_openssl_sign_certificate_t sign_certificate;
    ctx = quicly_spec_context;
    ctx.tls = &tlsctx;
    quicly_amend_ptls_context(ctx.tls);
    ctx.stream_open = &stream_open;
    ctx.transport_params.max_stream_data.bidi_local = 16 << 20;
    ctx.transport_params.max_stream_data.bidi_remote = 16 << 20;
    ctx.transport_params.max_data = 64 << 20;
    ctx.transport_params.max_idle_timeout = 30000;

    const char *cc = opt(argc, argv, "--cc", "reno");
    if (setup_cc(cc) != 0)
        return 2;
    const char *logp = opt(argc, argv, "--log", NULL);
    if (logp != NULL && open_log(logp) != 0)
        return 1;
    const char *kl = opt(argc, argv, "--keylog", "");
    if (kl[0] != 0) {
        if ((keylog_fp = fopen(kl, "a")) == NULL) {
            fprintf(stderr, "qlyharness: open %s: %s\n", kl, strerror(errno));
            return 1;
        }
        tlsctx.log_event = &keylog_event;
    }
    const char *srv_ip = opt(argc, argv, "--addr", NULL);
    int port = atoi(opt(argc, argv, "--port", "4433"));
    int64_t timeout_ms = atoll(opt(argc, argv, "--timeout-ms", "60000"));
    if (srv_ip == NULL)
        return usage();
    int64_t deadline = ctx.now->cb(ctx.now) + timeout_ms;
    quicly_conn_t *conn = NULL;
    int freed = 0;

    if (is_server) {
        const char *cert = opt(argc, argv, "--cert", NULL), *key = opt(argc, argv, "--key", NULL);
        body_size = strtoull(opt(argc, argv, "--body", "0"), NULL, 10);
        if (cert == NULL || key == NULL)
            return usage();
        if (ptls_load_certificates(&tlsctx, cert) != 0) {
            fprintf(stderr, "qlyharness: cannot load certificate %s\n", cert);
            return 1;
        }
        FILE *fp = fopen(key, "r");
        EVP_PKEY *pkey = fp != NULL ? PEM_read_PrivateKey(fp, NULL, NULL, NULL) : NULL;
        if (fp != NULL)
            fclose(fp);
        if (pkey == NULL) {
            fprintf(stderr, "qlyharness: cannot load private key %s\n", key);
            return 1;
        }
        ptls_openssl_init_sign_certificate(&sign_certificate, pkey);
        EVP_PKEY_free(pkey);
        tlsctx.sign_certificate = &sign_certificate.super;
        /* Without a CID encryptor, quicly_is_destination matches a short-header
         * packet to its connection by the peer's address only, so a packet
         * from a migrated client matches nothing: the server needs one, as
         * quicly's cli server sets (random key, src/cli.c). */
        static char cid_key[17];
        tlsctx.random_bytes(cid_key, sizeof(cid_key) - 1);
        for (size_t i = 0; i < sizeof(cid_key) - 1; ++i)
            cid_key[i] = 'a' + (uint8_t)cid_key[i] % 26;
        ctx.cid_encryptor = quicly_new_default_cid_encryptor(&ptls_openssl_quiclb, &ptls_openssl_aes128ecb, &ptls_openssl_sha256,
                                                             ptls_iovec_init(cid_key, sizeof(cid_key) - 1));

        struct sock s;
        if ((s.fd = udp_socket(srv_ip, port, &s.local)) < 0)
            return 1;
        char a[64], b[64];
        ev("listening", "addr=%s cc=%s body=%" PRIu64, addr_str((struct sockaddr *)&s.local, a, sizeof(a)), cc, body_size);
        struct sockaddr_in peer = {0};
        while (!stop_requested && !freed && ctx.now->cb(ctx.now) < deadline) {
            struct pollfd pfd = {.fd = s.fd, .events = POLLIN};
            poll(&pfd, 1, (int)wait_ms(conn, 100));
            receive_all(&conn, &s);
            if (conn == NULL)
                continue;
            struct sockaddr_in *pn = (struct sockaddr_in *)quicly_get_peername(conn);
            if (pn->sin_family == AF_INET && !same_addr(pn, &peer)) {
                ev("peer", "from=%s to=%s", peer.sin_family == 0 ? "none" : addr_str((struct sockaddr *)&peer, a, sizeof(a)),
                   addr_str((struct sockaddr *)pn, b, sizeof(b)));
                peer = *pn;
            }
            send_packets(conn, &s, &freed);
        }
        if (conn != NULL && !freed) {
            quicly_close(conn, 0, "");
            quicly_free(conn);
        }
        quicly_stats_t st;
        (void)st;
        ev("served", "bytes=%" PRIu64, served);
        return 0;
    }

    /* client */
    const char *la = opt(argc, argv, "--local-a", NULL), *lb = opt(argc, argv, "--local-b", NULL);
    const char *scenario = opt(argc, argv, "--scenario", "standard");
    int64_t migrate_at = atoll(opt(argc, argv, "--migrate-at-ms", "5000"));
    int64_t back_after = atoll(opt(argc, argv, "--back-after-ms", "5000"));
    if (la == NULL || lb == NULL)
        return usage();
    struct sock socks[MAX_SOCKS];
    if ((socks[0].fd = udp_socket(la, 0, &socks[0].local)) < 0 || (socks[1].fd = udp_socket(lb, 0, &socks[1].local)) < 0 ||
        (socks[2].fd = udp_socket(la, 0, &socks[2].local)) < 0)
        return 1;
    char a[64], b[64], c[64];
    ev("start", "A=%s B=%s A2=%s", addr_str((struct sockaddr *)&socks[0].local, a, sizeof(a)),
       addr_str((struct sockaddr *)&socks[1].local, b, sizeof(b)), addr_str((struct sockaddr *)&socks[2].local, c, sizeof(c)));
    /* moves[i]: the socket the client sends from after the i-th move */
    int moves[2] = {-1, -1};
    if (strcmp(scenario, "standard") == 0 || strcmp(scenario, "step-down") == 0 || strcmp(scenario, "nat-rebind") == 0) {
        moves[0] = 1;
    } else if (strcmp(scenario, "port-rebind") == 0) {
        moves[0] = 2;
    } else if (strcmp(scenario, "migrate-back") == 0) {
        moves[0] = 1;
        moves[1] = 2;
    } else {
        fprintf(stderr, "qlyharness: unknown scenario %s\n", scenario);
        return 2;
    }
    struct sockaddr_in srv = {.sin_family = AF_INET, .sin_port = htons(port)};
    inet_pton(AF_INET, srv_ip, &srv.sin_addr);
    quicly_error_t ret;
    if ((ret = quicly_connect(&conn, &ctx, "localhost", (struct sockaddr *)&srv, NULL, &next_cid, ptls_iovec_init(NULL, 0), NULL,
                              NULL, NULL)) != 0) {
        ev("error", "what=quicly_connect code=%" PRId64, (int64_t)ret);
        return 1;
    }
    quicly_stream_t *stream;
    if ((ret = quicly_open_stream(conn, &stream, 0)) != 0) {
        ev("error", "what=quicly_open_stream code=%" PRId64, (int64_t)ret);
        return 1;
    }
    static const char req[] = "GET /body\r\n";
    quicly_streambuf_egress_write(stream, req, sizeof(req) - 1);
    quicly_streambuf_egress_shutdown(stream);

    int cur = 0, nmoves = 0;
    int64_t handshake_at = -1, next_move = -1, last_progress = 0;
    while (!stop_requested && !freed) {
        int64_t now = ctx.now->cb(ctx.now);
        if (now >= deadline) {
            ev("error", "what=timeout received=%" PRIu64, received);
            break;
        }
        if (handshake_at < 0 && quicly_connection_is_ready(conn) && ptls_handshake_is_complete(quicly_get_tls(conn))) {
            handshake_at = now;
            next_move = now + migrate_at;
            ev("ready", "at_ms=%" PRId64, now);
        }
        if (next_move >= 0 && now >= next_move && nmoves < 2 && moves[nmoves] >= 0) {
            int to = moves[nmoves];
            ev("local", "from=%s to=%s api=application-rebind", addr_str((struct sockaddr *)&socks[cur].local, a, sizeof(a)),
               addr_str((struct sockaddr *)&socks[to].local, b, sizeof(b)));
            cur = to;
            ++nmoves;
            next_move = nmoves < 2 && moves[nmoves] >= 0 ? now + back_after : -1;
        }
        if (now - last_progress >= 500) {
            last_progress = now;
            ev("progress", "received=%" PRIu64, received);
        }
        struct pollfd pfd[MAX_SOCKS];
        for (int i = 0; i < MAX_SOCKS; ++i)
            pfd[i] = (struct pollfd){.fd = socks[i].fd, .events = POLLIN};
        int64_t w = wait_ms(conn, 100);
        if (next_move >= 0 && next_move - now < w)
            w = next_move - now > 0 ? next_move - now : 0;
        poll(pfd, MAX_SOCKS, (int)w);
        for (int i = 0; i < MAX_SOCKS; ++i)
            receive_all(&conn, &socks[i]);
        send_packets(conn, &socks[cur], &freed);
    }
    if (!freed)
        quicly_free(conn);
    ev("done", "received=%" PRIu64 " fin=%d", received, fin_received);
    return fin_received ? 0 : 1;
}
