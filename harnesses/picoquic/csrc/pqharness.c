/*
 * pqharness: migaudit's picoquic client and server, built together with the
 * upstream library (harnesses/picoquic, harnesses/upstream).
 *
 * One download over one bidirectional stream. The server serves --body bytes
 * on the first stream the client opens and writes picoquic's qlog
 * (picoquic_set_qlog); the client reads them and migrates with picoquic's own
 * API, picoquic_probe_new_path: a non-multipath connection replaces its
 * default path with the probed one once it is validated (picoquic.h, "Path
 * management events and API").
 *
 * The harness runs its own socket loop instead of picoquic's packet loop so
 * that the client holds one socket per local address it will use, each bound
 * to an explicit address (path A, path B, a second port on path A): the
 * testbed's policy routing then sends each socket's datagrams out of its own
 * path, and a probe's source address is the socket it is sent from. The loop
 * uses only picoquic_incoming_packet_ex / picoquic_prepare_next_packet_ex /
 * picoquic_get_next_wake_delay, which every picoquic of the last years has.
 *
 * Both sides print one event per line on stdout for the Go harness:
 *   EV <unix-ns> <name> key=value ...
 * (ready, probe, local, peer, nat, progress, closed, done, error).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
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
#include <time.h>
#include <unistd.h>

#include "picoquic.h"
#include "picoquic_utils.h"
#include "autoqlog.h"

#define ALPN "hq-migaudit"
#define MAX_SOCKS 4

static volatile sig_atomic_t stop_requested;
static void on_signal(int sig) { (void)sig; stop_requested = 1; }

static uint64_t unix_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void ev(const char* name, const char* fmt, ...)
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

static const char* addr_str(const struct sockaddr* a, char* buf, size_t len)
{
    char ip[INET6_ADDRSTRLEN] = "?";
    if (a == NULL || a->sa_family == 0) {
        snprintf(buf, len, "none");
    } else if (a->sa_family == AF_INET) {
        const struct sockaddr_in* s = (const struct sockaddr_in*)a;
        inet_ntop(AF_INET, &s->sin_addr, ip, sizeof(ip));
        snprintf(buf, len, "%s:%u", ip, ntohs(s->sin_port));
    } else {
        const struct sockaddr_in6* s = (const struct sockaddr_in6*)a;
        inet_ntop(AF_INET6, &s->sin6_addr, ip, sizeof(ip));
        snprintf(buf, len, "[%s]:%u", ip, ntohs(s->sin6_port));
    }
    return buf;
}

static int same_addr(const struct sockaddr* a, const struct sockaddr* b)
{
    return a->sa_family == AF_INET && b->sa_family == AF_INET &&
        ((const struct sockaddr_in*)a)->sin_addr.s_addr == ((const struct sockaddr_in*)b)->sin_addr.s_addr &&
        ((const struct sockaddr_in*)a)->sin_port == ((const struct sockaddr_in*)b)->sin_port;
}

typedef struct {
    int fd;
    struct sockaddr_in local; /* bound address, port in network order */
    const char* label;
} sock_t;

static int open_sock(sock_t* s, const char* ip, int port, const char* label)
{
    socklen_t l = sizeof(s->local);
    int buf = 4 * 1024 * 1024;
    memset(s, 0, sizeof(*s));
    s->label = label;
    s->fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
    if (s->fd < 0) {
        return -1;
    }
    (void)setsockopt(s->fd, SOL_SOCKET, SO_RCVBUF, &buf, sizeof(buf));
    (void)setsockopt(s->fd, SOL_SOCKET, SO_SNDBUF, &buf, sizeof(buf));
    s->local.sin_family = AF_INET;
    s->local.sin_port = htons((uint16_t)port);
    if (inet_pton(AF_INET, ip, &s->local.sin_addr) != 1) {
        fprintf(stderr, "pqharness: %s: not an IPv4 address: %s\n", label, ip);
        return -1;
    }
    if (bind(s->fd, (struct sockaddr*)&s->local, sizeof(s->local)) != 0) {
        fprintf(stderr, "pqharness: bind %s %s:%d: %s\n", label, ip, port, strerror(errno));
        return -1;
    }
    return getsockname(s->fd, (struct sockaddr*)&s->local, &l);
}

/* ---- options ---- */

typedef struct {
    const char* mode;
    const char* addr;    /* server: listen address; client: server address */
    int port;
    const char* cert, * key, * qlog, * cc, * keylog;
    const char* local_a, * local_b, * scenario;
    uint64_t body;       /* server: bytes to serve */
    uint64_t migrate_at; /* client: µs after ready */
    uint64_t back_after; /* client: µs after the first migration */
    uint64_t timeout;    /* µs */
} opts_t;

static uint64_t parse_u64(const char* name, const char* v)
{
    char* end = NULL;
    unsigned long long x;
    errno = 0;
    x = strtoull(v, &end, 10);
    if (errno != 0 || end == v || *end != 0) {
        fprintf(stderr, "pqharness: --%s: not a number: %s\n", name, v);
        exit(64);
    }
    return (uint64_t)x;
}

static void usage(void)
{
    fprintf(stderr,
        "usage: pqharness server --addr IP --port P --cert F --key F --qlog DIR --body BYTES [--cc NAME] [--timeout-ms N] [--keylog F]\n"
        "       pqharness client --addr SERVER-IP --port P --local-a IP --local-b IP --qlog DIR\n"
        "                        --scenario standard|step-down|port-rebind|nat-rebind|migrate-back\n"
        "                        --migrate-at-ms N [--back-after-ms N] [--cc NAME] [--timeout-ms N]\n"
        "       pqharness version\n");
    exit(64);
}

static void parse_opts(int argc, char** argv, opts_t* o)
{
    memset(o, 0, sizeof(*o));
    o->cc = "newreno";
    o->timeout = 120000000ull;
    o->back_after = 5000000ull;
    if (argc < 2) {
        usage();
    }
    o->mode = argv[1];
    for (int i = 2; i < argc; i++) {
        const char* k = argv[i];
        const char* v = (i + 1 < argc) ? argv[i + 1] : NULL;
        if (strncmp(k, "--", 2) != 0 || v == NULL) {
            fprintf(stderr, "pqharness: bad argument %s\n", k);
            usage();
        }
        k += 2;
        i++;
        if (strcmp(k, "addr") == 0) o->addr = v;
        else if (strcmp(k, "port") == 0) o->port = (int)parse_u64(k, v);
        else if (strcmp(k, "cert") == 0) o->cert = v;
        else if (strcmp(k, "key") == 0) o->key = v;
        else if (strcmp(k, "qlog") == 0) o->qlog = v;
        else if (strcmp(k, "keylog") == 0) o->keylog = v;
        else if (strcmp(k, "cc") == 0) o->cc = v;
        else if (strcmp(k, "body") == 0) o->body = parse_u64(k, v);
        else if (strcmp(k, "local-a") == 0) o->local_a = v;
        else if (strcmp(k, "local-b") == 0) o->local_b = v;
        else if (strcmp(k, "scenario") == 0) o->scenario = v;
        else if (strcmp(k, "migrate-at-ms") == 0) o->migrate_at = parse_u64(k, v) * 1000ull;
        else if (strcmp(k, "back-after-ms") == 0) o->back_after = parse_u64(k, v) * 1000ull;
        else if (strcmp(k, "timeout-ms") == 0) o->timeout = parse_u64(k, v) * 1000ull;
        else {
            fprintf(stderr, "pqharness: unknown option --%s\n", k);
            usage();
        }
    }
}

static int set_cc(picoquic_quic_t* quic, const char* name)
{
    picoquic_congestion_algorithm_t const* alg = picoquic_get_congestion_algorithm(name);
    if (alg == NULL) {
        fprintf(stderr, "pqharness: picoquic has no congestion control algorithm \"%s\"\n", name);
        return -1;
    }
    picoquic_set_default_congestion_algorithm(quic, alg);
    return 0;
}

/* ---- the shared socket loop ---- */

typedef struct {
    picoquic_quic_t* quic;
    sock_t socks[MAX_SOCKS];
    int nsocks;
    int default_sock;
    /* NAT simulation: datagrams picoquic sends from nat_from leave through
     * nat_sock, and what arrives there is presented as arriving at nat_from. */
    int nat_sock;
    struct sockaddr_in nat_from;
    uint64_t sent_packets, recv_packets;
} loop_t;

static int loop_receive(loop_t* l, int i, uint64_t now)
{
    uint8_t buf[PICOQUIC_MAX_PACKET_SIZE + 64];
    for (;;) {
        struct sockaddr_storage from;
        socklen_t fl = sizeof(from);
        ssize_t n = recvfrom(l->socks[i].fd, buf, sizeof(buf), 0, (struct sockaddr*)&from, &fl);
        if (n < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
                return 0;
            }
            fprintf(stderr, "pqharness: recvfrom %s: %s\n", l->socks[i].label, strerror(errno));
            return -1;
        }
        struct sockaddr_in to = l->socks[i].local;
        if (l->nat_sock == i) {
            to = l->nat_from;
        }
        picoquic_cnx_t* first = NULL;
        l->recv_packets++;
        (void)picoquic_incoming_packet_ex(l->quic, buf, (size_t)n, (struct sockaddr*)&from,
            (struct sockaddr*)&to, 0, 0, &first, now);
    }
}

static int loop_send(loop_t* l, uint64_t now)
{
    uint8_t buf[PICOQUIC_MAX_PACKET_SIZE];
    for (int k = 0; k < 64; k++) {
        size_t len = 0, msg_size = 0;
        struct sockaddr_storage to, from;
        int if_index = 0;
        picoquic_connection_id_t log_cid;
        picoquic_cnx_t* last = NULL;
        memset(&to, 0, sizeof(to));
        memset(&from, 0, sizeof(from));
        int ret = picoquic_prepare_next_packet_ex(l->quic, now, buf, sizeof(buf), &len, &to, &from, &if_index,
            &log_cid, &last, &msg_size);
        if (ret != 0) {
            fprintf(stderr, "pqharness: prepare_next_packet: %d\n", ret);
            return -1;
        }
        if (len == 0) {
            return 0;
        }
        int s = l->default_sock;
        if (from.ss_family == AF_INET) {
            if (l->nat_sock >= 0 && same_addr((struct sockaddr*)&from, (struct sockaddr*)&l->nat_from)) {
                s = l->nat_sock;
            } else {
                for (int i = 0; i < l->nsocks; i++) {
                    if (same_addr((struct sockaddr*)&from, (struct sockaddr*)&l->socks[i].local)) {
                        s = i;
                    }
                }
            }
        }
        if (sendto(l->socks[s].fd, buf, len, 0, (struct sockaddr*)&to, sizeof(struct sockaddr_in)) < 0 &&
            errno != EAGAIN && errno != EWOULDBLOCK) {
            if (last != NULL) {
                picoquic_notify_destination_unreachable(last, now, (struct sockaddr*)&to, (struct sockaddr*)&from, if_index, errno);
            }
        } else {
            l->sent_packets++;
        }
    }
    return 0;
}

/* loop_wait waits for a datagram or the stack's next wake-up, at most max_us. */
static void loop_wait(loop_t* l, uint64_t now, int64_t max_us)
{
    struct pollfd pfd[MAX_SOCKS];
    int64_t d = picoquic_get_next_wake_delay(l->quic, now, max_us);
    struct timespec ts;
    for (int i = 0; i < l->nsocks; i++) {
        pfd[i].fd = l->socks[i].fd;
        pfd[i].events = POLLIN;
        pfd[i].revents = 0;
    }
    if (d < 0) {
        d = 0;
    }
    ts.tv_sec = d / 1000000;
    ts.tv_nsec = (d % 1000000) * 1000;
    (void)ppoll(pfd, (nfds_t)l->nsocks, &ts, NULL);
}

static int loop_step(loop_t* l, int64_t max_us)
{
    uint64_t now = picoquic_current_time();
    loop_wait(l, now, max_us);
    now = picoquic_current_time();
    for (int i = 0; i < l->nsocks; i++) {
        if (loop_receive(l, i, now) != 0) {
            return -1;
        }
    }
    return loop_send(l, picoquic_current_time());
}

/* ---- server ---- */

typedef struct {
    uint64_t body;
    uint64_t sent;
    int serving;
    int closed;
    uint64_t stream_id;
} server_ctx_t;

static int server_cb(picoquic_cnx_t* cnx, uint64_t stream_id, uint8_t* bytes, size_t length,
    picoquic_call_back_event_t event, void* callback_ctx, void* stream_ctx)
{
    server_ctx_t* s = (server_ctx_t*)callback_ctx;
    (void)stream_ctx;
    switch (event) {
    case picoquic_callback_stream_data:
    case picoquic_callback_stream_fin:
        if (!s->serving) {
            s->serving = 1;
            s->stream_id = stream_id;
            ev("request", "stream=%" PRIu64 " body=%" PRIu64, stream_id, s->body);
            return picoquic_mark_active_stream(cnx, stream_id, 1, NULL);
        }
        return 0;
    case picoquic_callback_prepare_to_send: {
        uint64_t left = s->body - s->sent;
        size_t n = (left < length) ? (size_t)left : length;
        int fin = (s->sent + n == s->body);
        uint8_t* p = picoquic_provide_stream_data_buffer(bytes, n, fin, !fin);
        if (p == NULL) {
            return -1;
        }
        memset(p, 'm', n);
        s->sent += n;
        if (fin) {
            ev("served", "bytes=%" PRIu64, s->sent);
        }
        return 0;
    }
    case picoquic_callback_close:
    case picoquic_callback_application_close:
    case picoquic_callback_stateless_reset:
        if (!s->closed) {
            s->closed = 1;
            ev("closed", "event=%d sent=%" PRIu64, (int)event, s->sent);
        }
        return 0;
    default:
        return 0;
    }
}

static int run_server(opts_t* o)
{
    server_ctx_t sctx;
    loop_t l;
    char a1[64], a2[64];
    struct sockaddr_storage last_peer;
    int seen = 0;
    uint64_t start = picoquic_current_time();

    if (o->addr == NULL || o->port == 0 || o->cert == NULL || o->key == NULL || o->qlog == NULL || o->body == 0) {
        usage();
    }
    memset(&sctx, 0, sizeof(sctx));
    memset(&l, 0, sizeof(l));
    memset(&last_peer, 0, sizeof(last_peer));
    sctx.body = o->body;
    l.nat_sock = -1;
    if (open_sock(&l.socks[0], o->addr, o->port, "server") != 0) {
        return 2;
    }
    l.nsocks = 1;
    l.quic = picoquic_create(8, o->cert, o->key, NULL, ALPN, server_cb, &sctx, NULL, NULL, NULL,
        picoquic_current_time(), NULL, NULL, NULL, 0);
    if (l.quic == NULL) {
        fprintf(stderr, "pqharness: picoquic_create failed (certificate %s, key %s)\n", o->cert, o->key);
        return 2;
    }
    if (set_cc(l.quic, o->cc) != 0 || picoquic_set_qlog(l.quic, o->qlog) != 0) {
        fprintf(stderr, "pqharness: cannot set congestion control %s or qlog directory %s\n", o->cc, o->qlog);
        return 2;
    }
    if (o->keylog != NULL && o->keylog[0] != 0) {
        /* TLS secrets in the NSS key log format (appended, flushed per line),
         * for decrypting the repetition's wire capture. */
        picoquic_set_key_log_file(l.quic, o->keylog);
    }
    ev("listening", "addr=%s cc=%s qlog=%s version=%s", addr_str((struct sockaddr*)&l.socks[0].local, a1, sizeof(a1)), o->cc, o->qlog, PICOQUIC_VERSION);
    while (!stop_requested) {
        if (loop_step(&l, 50000) != 0) {
            break;
        }
        picoquic_cnx_t* cnx = picoquic_get_first_cnx(l.quic);
        if (cnx == NULL) {
            if (seen) {
                ev("done", "sent=%" PRIu64 " packets_sent=%" PRIu64 " packets_received=%" PRIu64, sctx.sent, l.sent_packets, l.recv_packets);
                break;
            }
        } else {
            struct sockaddr* peer = NULL;
            picoquic_get_peer_addr(cnx, &peer);
            if (!seen) {
                seen = 1;
            }
            if (peer != NULL && peer->sa_family == AF_INET && !same_addr(peer, (struct sockaddr*)&last_peer)) {
                ev("peer", "from=%s to=%s", addr_str((struct sockaddr*)&last_peer, a1, sizeof(a1)), addr_str(peer, a2, sizeof(a2)));
                memcpy(&last_peer, peer, sizeof(struct sockaddr_in));
            }
        }
        if (picoquic_current_time() - start > o->timeout) {
            ev("error", "what=timeout");
            break;
        }
    }
    if (stop_requested) {
        ev("stopped", "signal=1 sent=%" PRIu64, sctx.sent);
    }
    picoquic_free(l.quic); /* closes the connection's log: the qlog is written here */
    close(l.socks[0].fd);
    return (sctx.sent == sctx.body && seen) ? 0 : 1;
}

/* ---- client ---- */

typedef struct {
    int ready;
    uint64_t ready_time;
    uint64_t received;
    int fin;
    int closed;
} client_ctx_t;

static int client_cb(picoquic_cnx_t* cnx, uint64_t stream_id, uint8_t* bytes, size_t length,
    picoquic_call_back_event_t event, void* callback_ctx, void* stream_ctx)
{
    client_ctx_t* c = (client_ctx_t*)callback_ctx;
    (void)bytes;
    (void)stream_ctx;
    (void)cnx;
    switch (event) {
    case picoquic_callback_stream_data:
    case picoquic_callback_stream_fin:
        if (stream_id == 0) {
            c->received += length;
            if (event == picoquic_callback_stream_fin) {
                c->fin = 1;
            }
        }
        return 0;
    case picoquic_callback_ready:
        if (!c->ready) {
            c->ready = 1;
            c->ready_time = picoquic_current_time();
        }
        return 0;
    case picoquic_callback_close:
    case picoquic_callback_application_close:
    case picoquic_callback_stateless_reset:
        c->closed = 1;
        ev("closed", "event=%d received=%" PRIu64, (int)event, c->received);
        return 0;
    default:
        return 0;
    }
}

static int probe(loop_t* l, picoquic_cnx_t* cnx, struct sockaddr_in* server, int sock, const char* why)
{
    char a1[64];
    int ret = picoquic_probe_new_path(cnx, (struct sockaddr*)server, (struct sockaddr*)&l->socks[sock].local,
        picoquic_current_time());
    ev("probe", "to=%s socket=%s why=%s rc=%d", addr_str((struct sockaddr*)&l->socks[sock].local, a1, sizeof(a1)),
        l->socks[sock].label, why, ret);
    return ret;
}

static int run_client(opts_t* o)
{
    client_ctx_t cctx;
    loop_t l;
    struct sockaddr_in server;
    struct sockaddr_storage last_local;
    char a1[64], a2[64];
    uint64_t start = picoquic_current_time(), last_progress = 0;
    int step = 0; /* migrations done */
    int nsteps, target[2];
    const char* why[2];
    uint64_t next_try = 0;
    int tries = 0;

    if (o->addr == NULL || o->port == 0 || o->local_a == NULL || o->local_b == NULL || o->scenario == NULL ||
        o->migrate_at == 0) {
        usage();
    }
    memset(&cctx, 0, sizeof(cctx));
    memset(&l, 0, sizeof(l));
    memset(&last_local, 0, sizeof(last_local));
    l.nat_sock = -1;
    if (open_sock(&l.socks[0], o->local_a, 0, "A") != 0 || open_sock(&l.socks[1], o->local_b, 0, "B") != 0 ||
        open_sock(&l.socks[2], o->local_a, 0, "A2") != 0) {
        return 2;
    }
    l.nsocks = 3;
    l.default_sock = 0;
    if (strcmp(o->scenario, "standard") == 0 || strcmp(o->scenario, "step-down") == 0) {
        nsteps = 1; target[0] = 1; why[0] = "migrate";
    } else if (strcmp(o->scenario, "port-rebind") == 0) {
        nsteps = 1; target[0] = 2; why[0] = "port-rebind";
    } else if (strcmp(o->scenario, "migrate-back") == 0) {
        nsteps = 2; target[0] = 1; why[0] = "migrate"; target[1] = 2; why[1] = "migrate-back";
    } else if (strcmp(o->scenario, "nat-rebind") == 0) {
        nsteps = 1; target[0] = 1; why[0] = "nat";
    } else {
        fprintf(stderr, "pqharness: unknown scenario %s\n", o->scenario);
        return 64;
    }
    memset(&server, 0, sizeof(server));
    server.sin_family = AF_INET;
    server.sin_port = htons((uint16_t)o->port);
    if (inet_pton(AF_INET, o->addr, &server.sin_addr) != 1) {
        fprintf(stderr, "pqharness: not an IPv4 address: %s\n", o->addr);
        return 64;
    }
    l.quic = picoquic_create(1, NULL, NULL, NULL, ALPN, NULL, NULL, NULL, NULL, NULL, picoquic_current_time(),
        NULL, NULL, NULL, 0);
    if (l.quic == NULL) {
        fprintf(stderr, "pqharness: picoquic_create failed\n");
        return 2;
    }
    picoquic_set_null_verifier(l.quic);
    if (set_cc(l.quic, o->cc) != 0) {
        return 2;
    }
    if (o->qlog != NULL && picoquic_set_qlog(l.quic, o->qlog) != 0) {
        fprintf(stderr, "pqharness: cannot set qlog directory %s\n", o->qlog);
        return 2;
    }
    picoquic_cnx_t* cnx = picoquic_create_cnx(l.quic, picoquic_null_connection_id, picoquic_null_connection_id,
        (struct sockaddr*)&server, picoquic_current_time(), 0, "migaudit.test", ALPN, 1);
    if (cnx == NULL) {
        fprintf(stderr, "pqharness: picoquic_create_cnx failed\n");
        return 2;
    }
    picoquic_set_callback(cnx, client_cb, &cctx);
    if (picoquic_start_client_cnx(cnx) != 0) {
        fprintf(stderr, "pqharness: picoquic_start_client_cnx failed\n");
        return 2;
    }
    {
        char b[64], c[64], d[64];
        ev("start", "server=%s A=%s B=%s A2=%s scenario=%s cc=%s version=%s", addr_str((struct sockaddr*)&server, d, sizeof(d)),
            addr_str((struct sockaddr*)&l.socks[0].local, a1, sizeof(a1)), addr_str((struct sockaddr*)&l.socks[1].local, b, sizeof(b)),
            addr_str((struct sockaddr*)&l.socks[2].local, c, sizeof(c)), o->scenario, o->cc, PICOQUIC_VERSION);
    }
    int requested = 0;
    while (!stop_requested) {
        if (loop_step(&l, 5000) != 0) {
            break;
        }
        uint64_t now = picoquic_current_time();
        picoquic_state_enum st = picoquic_get_cnx_state(cnx);
        if (cctx.ready && !requested) {
            requested = 1;
            ev("ready", "after_us=%" PRIu64, cctx.ready_time - start);
            if (picoquic_add_to_stream(cnx, 0, (const uint8_t*)"GET /\r\n", 7, 1) != 0) {
                ev("error", "what=request");
                break;
            }
        }
        /* The stack's own view of its default path's local address. */
        {
            struct sockaddr* la = NULL;
            picoquic_get_local_addr(cnx, &la);
            if (la != NULL && la->sa_family == AF_INET && !same_addr(la, (struct sockaddr*)&last_local)) {
                ev("local", "from=%s to=%s", addr_str((struct sockaddr*)&last_local, a1, sizeof(a1)), addr_str(la, a2, sizeof(a2)));
                memcpy(&last_local, la, sizeof(struct sockaddr_in));
            }
        }
        if (cctx.ready && step < nsteps && !cctx.fin) {
            uint64_t due = cctx.ready_time + o->migrate_at + (step == 1 ? o->back_after : 0);
            if (now >= due && now >= next_try) {
                if (strcmp(why[step], "nat") == 0) {
                    /* The client's address changes under it: picoquic is not told. */
                    l.nat_sock = target[step];
                    memcpy(&l.nat_from, &last_local, sizeof(l.nat_from));
                    ev("nat", "from=%s to=%s", addr_str((struct sockaddr*)&last_local, a1, sizeof(a1)),
                        addr_str((struct sockaddr*)&l.socks[target[step]].local, a2, sizeof(a2)));
                    step++;
                } else if (probe(&l, cnx, &server, target[step], why[step]) == 0) {
                    step++;
                    tries = 0;
                } else if (++tries > 50) {
                    ev("error", "what=probe_failed tries=%d", tries);
                    step = nsteps;
                } else {
                    next_try = now + 100000; /* e.g. no spare connection ID yet */
                }
            }
        }
        if (now - last_progress >= 250000) {
            last_progress = now;
            ev("progress", "received=%" PRIu64, cctx.received);
        }
        if (cctx.fin && st < picoquic_state_disconnecting) {
            ev("received", "bytes=%" PRIu64, cctx.received);
            picoquic_close(cnx, 0);
        }
        if (st == picoquic_state_disconnected) {
            break;
        }
        if (now - start > o->timeout) {
            ev("error", "what=timeout received=%" PRIu64, cctx.received);
            break;
        }
    }
    ev("done", "received=%" PRIu64 " fin=%d packets_sent=%" PRIu64 " packets_received=%" PRIu64, cctx.received, cctx.fin,
        l.sent_packets, l.recv_packets);
    picoquic_free(l.quic);
    for (int i = 0; i < l.nsocks; i++) {
        close(l.socks[i].fd);
    }
    return cctx.fin ? 0 : 1;
}

int main(int argc, char** argv)
{
    opts_t o;
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    if (argc == 2 && strcmp(argv[1], "version") == 0) {
        printf("picoquic %s\n", PICOQUIC_VERSION);
        return 0;
    }
    parse_opts(argc, argv, &o);
    picoquic_register_all_congestion_control_algorithms();
    if (strcmp(o.mode, "server") == 0) {
        return run_server(&o);
    }
    if (strcmp(o.mode, "client") == 0) {
        return run_client(&o);
    }
    usage();
    return 64;
}
