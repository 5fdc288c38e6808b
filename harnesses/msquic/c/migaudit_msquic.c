/*
 * migaudit-msquic: the msquic client and server that `migaudit run --impl
 * msquic` runs in the testbed. Written for migaudit against msquic's public
 * API (msquic.h); built together with the library by harnesses/msquic.
 *
 *   migaudit-msquic server --listen IP:PORT --cert F --key F --body N
 *                          --timeline F.csv [--cc cubic|bbr] [--poll-us 5000]
 *   migaudit-msquic client --server IP:PORT --local-a IP [--local-b IP]
 *                          --size N --timeline F.csv [--cc cubic|bbr]
 *                          [--move-at-ms T] [--move-to a|b] [--back-after-ms T]
 *
 * The client binds to --local-a, downloads --size bytes on one
 * bidirectional stream and, --move-at-ms after the handshake, sets
 * QUIC_PARAM_CONN_LOCAL_ADDRESS to --move-to's address with port 0 (a new
 * socket, so a new port; "a" is a port-only rebinding). With
 * --back-after-ms it later moves back to --local-a (again a new port).
 *
 * Both sides poll QUIC_PARAM_CONN_STATISTICS_V2 (and, where the library has
 * it, QUIC_PARAM_CONN_NETWORK_STATISTICS for bytes in flight) every
 * --poll-us and write one CSV row per poll:
 *
 *   time_us,role,path_id,local,peer,active,cwnd,bytes_in_flight,
 *   smoothed_rtt,min_rtt,latest_rtt,rttvar,path_mtu,send_bytes,
 *   recv_bytes,lost_packets,congestion_events
 *
 * msquic's statistics carry no path id; path_id is this harness's label:
 * the index of the (local, peer) address pair in the order first seen, so
 * a return to an earlier pair gets its earlier id. latest_rtt is not in the
 * statistics and stays empty. time_us is CLOCK_MONOTONIC µs since the
 * process started, the same clock as the t_us of every stdout line, which
 * also carries unix_us (wall time).
 *
 * Lines on stdout (parsed by harnesses/msquic/proc.go), each "KEY k=v ...":
 *   READY, CONNECTED, SETTINGS, MOVE, LOCAL_ADDRESS_CHANGED,
 *   PEER_ADDRESS_CHANGED, PROGRESS, SHUTDOWN, DONE, ERROR
 */
#define _GNU_SOURCE
#define QUIC_API_ENABLE_PREVIEW_FEATURES 1
#include <msquic.h>

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_PATHS 16
#define SEND_CHUNK (64 * 1024)
#define SENDS_IN_FLIGHT 8
#define ALPN "migaudit"

static const QUIC_API_TABLE *Api;
static HQUIC Registration, Configuration, Listener;
static uint64_t ZeroMono;   /* CLOCK_MONOTONIC ns at start */
static pthread_mutex_t OutLock = PTHREAD_MUTEX_INITIALIZER;

/* Options. */
static int IsServer;
static const char *OptListen, *OptCert, *OptKey, *OptServer, *OptLocalA, *OptLocalB,
    *OptTimeline, *OptKeyLog, *OptCC = "cubic", *OptMoveTo = "b";
static uint64_t OptBody, OptSize, OptPollUs = 5000;
static int64_t OptMoveAtMs = -1, OptBackAfterMs = -1;

/* State. */
static _Atomic(HQUIC) Conn;
static atomic_int Connected, Finished;
static atomic_uint_fast64_t Received, Sent;
static atomic_uint_fast64_t ConnectedAtNs;

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
static uint64_t unix_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000ull + (uint64_t)ts.tv_nsec / 1000;
}
static uint64_t t_us(void) { return (now_ns() - ZeroMono) / 1000; }

/* say prints one line on stdout with the time prefix fields. */
static void say(const char *key, const char *fmt, ...) {
    va_list ap;
    pthread_mutex_lock(&OutLock);
    printf("%s t_us=%" PRIu64 " unix_us=%" PRIu64, key, t_us(), unix_us());
    if (fmt && *fmt) {
        putchar(' ');
        va_start(ap, fmt);
        vprintf(fmt, ap);
        va_end(ap);
    }
    putchar('\n');
    fflush(stdout);
    pthread_mutex_unlock(&OutLock);
}

static void addr_str(const QUIC_ADDR *a, char *out, size_t n) {
    char ip[INET6_ADDRSTRLEN] = "?";
    if (a->Ip.sa_family == QUIC_ADDRESS_FAMILY_INET) {
        inet_ntop(AF_INET, &a->Ipv4.sin_addr, ip, sizeof ip);
        snprintf(out, n, "%s:%u", ip, ntohs(a->Ipv4.sin_port));
    } else if (a->Ip.sa_family == QUIC_ADDRESS_FAMILY_INET6) {
        inet_ntop(AF_INET6, &a->Ipv6.sin6_addr, ip, sizeof ip);
        snprintf(out, n, "[%s]:%u", ip, ntohs(a->Ipv6.sin6_port));
    } else {
        snprintf(out, n, "-");
    }
}

/* parse_addr reads "ip" or "ip:port" (IPv4) or "[ip6]:port". */
static int parse_addr(const char *s, uint16_t defport, QUIC_ADDR *a) {
    char host[128];
    unsigned port = defport;
    memset(a, 0, sizeof *a);
    if (s[0] == '[') {
        const char *e = strchr(s, ']');
        if (!e || (size_t)(e - s - 1) >= sizeof host) return -1;
        memcpy(host, s + 1, (size_t)(e - s - 1));
        host[e - s - 1] = 0;
        if (e[1] == ':') port = (unsigned)atoi(e + 2);
        a->Ipv6.sin6_family = QUIC_ADDRESS_FAMILY_INET6;
        a->Ipv6.sin6_port = htons((uint16_t)port);
        return inet_pton(AF_INET6, host, &a->Ipv6.sin6_addr) == 1 ? 0 : -1;
    }
    snprintf(host, sizeof host, "%s", s);
    char *c = strrchr(host, ':');
    if (c && strchr(host, ':') == c) {
        *c = 0;
        port = (unsigned)atoi(c + 1);
    }
    if (strchr(host, ':')) {
        a->Ipv6.sin6_family = QUIC_ADDRESS_FAMILY_INET6;
        a->Ipv6.sin6_port = htons((uint16_t)port);
        return inet_pton(AF_INET6, host, &a->Ipv6.sin6_addr) == 1 ? 0 : -1;
    }
    a->Ipv4.sin_family = QUIC_ADDRESS_FAMILY_INET;
    a->Ipv4.sin_port = htons((uint16_t)port);
    return inet_pton(AF_INET, host, &a->Ipv4.sin_addr) == 1 ? 0 : -1;
}

/* ---- timeline poller ---------------------------------------------------- */

static char PathKeys[MAX_PATHS][160];
static int NPaths;

static int path_id(const char *local, const char *peer) {
    char key[160];
    snprintf(key, sizeof key, "%s|%s", local, peer);
    for (int i = 0; i < NPaths; i++)
        if (strcmp(PathKeys[i], key) == 0) return i;
    if (NPaths == MAX_PATHS) return MAX_PATHS - 1;
    snprintf(PathKeys[NPaths], sizeof PathKeys[NPaths], "%s", key);
    return NPaths++;
}

static void *poller(void *arg) {
    FILE *f = arg;
    uint64_t next = now_ns();
    while (!atomic_load(&Finished)) {
        next += OptPollUs * 1000;
        struct timespec ts = {(time_t)(next / 1000000000ull), (long)(next % 1000000000ull)};
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR) {
        }
        if (now_ns() > next + 50 * OptPollUs * 1000) next = now_ns(); /* after a host stall, do not burst */
        HQUIC c = atomic_load(&Conn);
        if (!c || !atomic_load(&Connected) || atomic_load(&Finished)) continue;
        uint64_t t = t_us();
        /* Each GetParam is a separate operation on the connection's worker:
         * the active path can change between them. The addresses are read
         * before and after the statistics and the sample is kept only when
         * both reads agree, so that a row never joins one path's statistics
         * to the other path's addresses (a torn sample at the switch gave
         * the old path's window and MTU under the new peer address). */
        QUIC_STATISTICS_V2 st;
        uint32_t len;
        QUIC_ADDR la, ra;
        char ls[80], rs[80], ls2[80], rs2[80];
        char inflight[24];
        int consistent = 0;
        for (int attempt = 0; attempt < 4 && !consistent; attempt++) {
            strcpy(ls, "-"); strcpy(rs, "-"); strcpy(ls2, "-"); strcpy(rs2, "-");
            inflight[0] = 0;
            len = sizeof la;
            if (QUIC_SUCCEEDED(Api->GetParam(c, QUIC_PARAM_CONN_LOCAL_ADDRESS, &len, &la))) addr_str(&la, ls, sizeof ls);
            len = sizeof ra;
            if (QUIC_SUCCEEDED(Api->GetParam(c, QUIC_PARAM_CONN_REMOTE_ADDRESS, &len, &ra))) addr_str(&ra, rs, sizeof rs);
            len = sizeof st;
            memset(&st, 0, sizeof st);
            if (QUIC_FAILED(Api->GetParam(c, QUIC_PARAM_CONN_STATISTICS_V2, &len, &st))) break;
#ifdef QUIC_PARAM_CONN_NETWORK_STATISTICS
            QUIC_NETWORK_STATISTICS ns;
            len = sizeof ns;
            memset(&ns, 0, sizeof ns);
            if (QUIC_SUCCEEDED(Api->GetParam(c, QUIC_PARAM_CONN_NETWORK_STATISTICS, &len, &ns)))
                snprintf(inflight, sizeof inflight, "%" PRIu32, ns.BytesInFlight);
#endif
            len = sizeof la;
            if (QUIC_SUCCEEDED(Api->GetParam(c, QUIC_PARAM_CONN_LOCAL_ADDRESS, &len, &la))) addr_str(&la, ls2, sizeof ls2);
            len = sizeof ra;
            if (QUIC_SUCCEEDED(Api->GetParam(c, QUIC_PARAM_CONN_REMOTE_ADDRESS, &len, &ra))) addr_str(&ra, rs2, sizeof rs2);
            consistent = strcmp(ls, ls2) == 0 && strcmp(rs, rs2) == 0;
        }
        if (!consistent) continue;
        char rttvar[16] = "";
        if (st.RttVariance) snprintf(rttvar, sizeof rttvar, "%" PRIu32, st.RttVariance);
        fprintf(f,
                "%" PRIu64 ",%s,%d,%s,%s,1,%" PRIu32 ",%s,%" PRIu32 ",%" PRIu32 ",,%s,%u,%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu32 "\n",
                t, IsServer ? "server" : "client", path_id(ls, rs), ls, rs, st.SendCongestionWindow, inflight, st.Rtt,
                st.MinRtt, rttvar, (unsigned)st.SendPathMtu, st.SendTotalBytes, st.RecvTotalBytes,
                st.SendSuspectedLostPackets - st.SendSpuriousLostPackets, st.SendCongestionCount);
    }
    fflush(f);
    return NULL;
}

/* ---- streams ------------------------------------------------------------ */

static uint8_t Chunk[SEND_CHUNK];
static QUIC_BUFFER SendBufs[SENDS_IN_FLIGHT];
static uint64_t Queued; /* server: bytes handed to StreamSend */

static void queue_send(HQUIC stream, QUIC_BUFFER *b) {
    uint64_t left = OptBody - Queued;
    if (left == 0) return;
    uint32_t n = left < SEND_CHUNK ? (uint32_t)left : SEND_CHUNK;
    b->Buffer = Chunk;
    b->Length = n;
    Queued += n;
    QUIC_SEND_FLAGS fl = Queued == OptBody ? QUIC_SEND_FLAG_FIN : QUIC_SEND_FLAG_NONE;
    QUIC_STATUS s = Api->StreamSend(stream, b, 1, fl, b);
    if (QUIC_FAILED(s)) say("ERROR", "what=StreamSend status=0x%x", s);
}

static QUIC_STATUS QUIC_API server_stream_cb(HQUIC stream, void *ctx, QUIC_STREAM_EVENT *ev) {
    (void)ctx;
    switch (ev->Type) {
    case QUIC_STREAM_EVENT_RECEIVE:
        break;
    case QUIC_STREAM_EVENT_PEER_SEND_SHUTDOWN: /* request complete: serve the body */
        say("REQUEST", "body=%" PRIu64, OptBody);
        for (int i = 0; i < SENDS_IN_FLIGHT && Queued < OptBody; i++) queue_send(stream, &SendBufs[i]);
        break;
    case QUIC_STREAM_EVENT_SEND_COMPLETE: {
        QUIC_BUFFER *b = ev->SEND_COMPLETE.ClientContext;
        if (!ev->SEND_COMPLETE.Canceled) {
            atomic_fetch_add(&Sent, b->Length);
            queue_send(stream, b);
        }
        break;
    }
    case QUIC_STREAM_EVENT_PEER_SEND_ABORTED:
    case QUIC_STREAM_EVENT_PEER_RECEIVE_ABORTED:
        say("ERROR", "what=stream_aborted_by_peer");
        Api->StreamShutdown(stream, QUIC_STREAM_SHUTDOWN_FLAG_ABORT, 0);
        break;
    case QUIC_STREAM_EVENT_SHUTDOWN_COMPLETE:
        Api->StreamClose(stream);
        break;
    default:
        break;
    }
    return QUIC_STATUS_SUCCESS;
}

static uint64_t LastProgress;

static QUIC_STATUS QUIC_API client_stream_cb(HQUIC stream, void *ctx, QUIC_STREAM_EVENT *ev) {
    (void)ctx;
    switch (ev->Type) {
    case QUIC_STREAM_EVENT_RECEIVE: {
        uint64_t got = atomic_fetch_add(&Received, ev->RECEIVE.TotalBufferLength) + ev->RECEIVE.TotalBufferLength;
        if (got - LastProgress >= 256 * 1024 || got == OptSize) {
            LastProgress = got;
            say("PROGRESS", "received=%" PRIu64 " total=%" PRIu64, got, OptSize);
        }
        break;
    }
    case QUIC_STREAM_EVENT_PEER_SEND_SHUTDOWN:
        say("FIN", "received=%" PRIu64, atomic_load(&Received));
        Api->ConnectionShutdown(atomic_load(&Conn), QUIC_CONNECTION_SHUTDOWN_FLAG_NONE, 0);
        break;
    case QUIC_STREAM_EVENT_PEER_SEND_ABORTED:
        say("ERROR", "what=stream_aborted_by_peer code=%" PRIu64, (uint64_t)ev->PEER_SEND_ABORTED.ErrorCode);
        Api->ConnectionShutdown(atomic_load(&Conn), QUIC_CONNECTION_SHUTDOWN_FLAG_NONE, 1);
        break;
    case QUIC_STREAM_EVENT_SHUTDOWN_COMPLETE:
        Api->StreamClose(stream);
        break;
    default:
        break;
    }
    return QUIC_STATUS_SUCCESS;
}

/* ---- connections -------------------------------------------------------- */

static void report_settings(HQUIC c) {
    QUIC_SETTINGS s;
    uint32_t len = sizeof s;
    memset(&s, 0, sizeof s);
    if (QUIC_FAILED(Api->GetParam(c, QUIC_PARAM_CONN_SETTINGS, &len, &s))) {
        say("SETTINGS", "error=GetParam");
        return;
    }
    say("SETTINGS", "cc=%u minimum_mtu=%u maximum_mtu=%u initial_rtt_ms=%u initial_window_packets=%u migration_enabled=%u pacing=%u",
        (unsigned)s.CongestionControlAlgorithm, (unsigned)s.MinimumMtu, (unsigned)s.MaximumMtu, (unsigned)s.InitialRttMs,
        (unsigned)s.InitialWindowPackets, (unsigned)s.MigrationEnabled, (unsigned)s.PacingEnabled);
}

static void report_final(HQUIC c) {
    QUIC_STATISTICS_V2 st;
    uint32_t len = sizeof st;
    memset(&st, 0, sizeof st);
    if (QUIC_FAILED(Api->GetParam(c, QUIC_PARAM_CONN_STATISTICS_V2, &len, &st))) return;
    say("STATS", "send_bytes=%" PRIu64 " send_stream_bytes=%" PRIu64 " recv_bytes=%" PRIu64 " recv_stream_bytes=%" PRIu64
        " lost=%" PRIu64 " spurious=%" PRIu64 " congestion_events=%" PRIu32 " persistent=%" PRIu32 " path_mtu=%u",
        st.SendTotalBytes, st.SendTotalStreamBytes, st.RecvTotalBytes, st.RecvTotalStreamBytes, st.SendSuspectedLostPackets,
        st.SendSpuriousLostPackets, st.SendCongestionCount, st.SendPersistentCongestionCount, (unsigned)st.SendPathMtu);
}

static void report_connected(HQUIC c) {
    QUIC_ADDR la, ra;
    char ls[80] = "-", rs[80] = "-";
    uint32_t len = sizeof la;
    if (QUIC_SUCCEEDED(Api->GetParam(c, QUIC_PARAM_CONN_LOCAL_ADDRESS, &len, &la))) addr_str(&la, ls, sizeof ls);
    len = sizeof ra;
    if (QUIC_SUCCEEDED(Api->GetParam(c, QUIC_PARAM_CONN_REMOTE_ADDRESS, &len, &ra))) addr_str(&ra, rs, sizeof rs);
    say("CONNECTED", "local=%s peer=%s", ls, rs);
}

/* ---- key log -------------------------------------------------------------- */

/* Secrets is filled by msquic (QUIC_PARAM_CONN_TLS_SECRETS, set on the
 * server's connection when the listener accepts it); write_keylog appends
 * it to --keylog in the NSS key log format once the handshake completes, so
 * the repetition's wire capture can be decrypted. */
static QUIC_TLS_SECRETS Secrets;

static void keylog_line(FILE *f, const char *label, const uint8_t *secret, unsigned n) {
    fprintf(f, "%s ", label);
    for (unsigned i = 0; i < sizeof Secrets.ClientRandom; i++) fprintf(f, "%02x", Secrets.ClientRandom[i]);
    fputc(' ', f);
    for (unsigned i = 0; i < n; i++) fprintf(f, "%02x", secret[i]);
    fputc('\n', f);
}

static void write_keylog(void) {
    if (!Secrets.IsSet.ClientRandom) {
        say("ERROR", "what=keylog reason=msquic_filled_no_client_random");
        return;
    }
    FILE *f = fopen(OptKeyLog, "a");
    if (!f) {
        say("ERROR", "what=keylog reason=open file=%s errno=%d", OptKeyLog, errno);
        return;
    }
    unsigned n = Secrets.SecretLength;
    int lines = 0;
    if (Secrets.IsSet.ClientEarlyTrafficSecret) keylog_line(f, "CLIENT_EARLY_TRAFFIC_SECRET", Secrets.ClientEarlyTrafficSecret, n), lines++;
    if (Secrets.IsSet.ClientHandshakeTrafficSecret) keylog_line(f, "CLIENT_HANDSHAKE_TRAFFIC_SECRET", Secrets.ClientHandshakeTrafficSecret, n), lines++;
    if (Secrets.IsSet.ServerHandshakeTrafficSecret) keylog_line(f, "SERVER_HANDSHAKE_TRAFFIC_SECRET", Secrets.ServerHandshakeTrafficSecret, n), lines++;
    if (Secrets.IsSet.ClientTrafficSecret0) keylog_line(f, "CLIENT_TRAFFIC_SECRET_0", Secrets.ClientTrafficSecret0, n), lines++;
    if (Secrets.IsSet.ServerTrafficSecret0) keylog_line(f, "SERVER_TRAFFIC_SECRET_0", Secrets.ServerTrafficSecret0, n), lines++;
    if (fclose(f) != 0) say("ERROR", "what=keylog reason=close file=%s errno=%d", OptKeyLog, errno);
    say("KEYLOG", "lines=%d secret_len=%u file=%s", lines, n, OptKeyLog);
}

static QUIC_STATUS QUIC_API conn_cb(HQUIC c, void *ctx, QUIC_CONNECTION_EVENT *ev) {
    (void)ctx;
    char a[80];
    switch (ev->Type) {
    case QUIC_CONNECTION_EVENT_CONNECTED:
        atomic_store(&ConnectedAtNs, now_ns());
        atomic_store(&Connected, 1);
        report_connected(c);
        report_settings(c);
        if (IsServer && OptKeyLog && *OptKeyLog) write_keylog();
        if (!IsServer) {
            HQUIC stream = NULL;
            static QUIC_BUFFER req;
            static char reqbuf[32];
            if (QUIC_FAILED(Api->StreamOpen(c, QUIC_STREAM_OPEN_FLAG_NONE, client_stream_cb, NULL, &stream))) {
                say("ERROR", "what=StreamOpen");
                Api->ConnectionShutdown(c, QUIC_CONNECTION_SHUTDOWN_FLAG_NONE, 1);
                break;
            }
            snprintf(reqbuf, sizeof reqbuf, "%" PRIu64 "\n", OptSize);
            req.Buffer = (uint8_t *)reqbuf;
            req.Length = (uint32_t)strlen(reqbuf);
            if (QUIC_FAILED(Api->StreamStart(stream, QUIC_STREAM_START_FLAG_IMMEDIATE)) ||
                QUIC_FAILED(Api->StreamSend(stream, &req, 1, QUIC_SEND_FLAG_FIN, NULL))) {
                say("ERROR", "what=StreamStart");
                Api->ConnectionShutdown(c, QUIC_CONNECTION_SHUTDOWN_FLAG_NONE, 1);
            }
        }
        break;
    case QUIC_CONNECTION_EVENT_PEER_ADDRESS_CHANGED:
        addr_str(ev->PEER_ADDRESS_CHANGED.Address, a, sizeof a);
        say("PEER_ADDRESS_CHANGED", "to=%s", a);
        break;
    case QUIC_CONNECTION_EVENT_LOCAL_ADDRESS_CHANGED:
        addr_str(ev->LOCAL_ADDRESS_CHANGED.Address, a, sizeof a);
        say("LOCAL_ADDRESS_CHANGED", "to=%s", a);
        break;
    case QUIC_CONNECTION_EVENT_PEER_STREAM_STARTED:
        Api->SetCallbackHandler(ev->PEER_STREAM_STARTED.Stream, (void *)server_stream_cb, NULL);
        break;
    case QUIC_CONNECTION_EVENT_SHUTDOWN_INITIATED_BY_TRANSPORT:
        say("SHUTDOWN", "by=transport status=0x%x error=%" PRIu64, ev->SHUTDOWN_INITIATED_BY_TRANSPORT.Status,
            (uint64_t)ev->SHUTDOWN_INITIATED_BY_TRANSPORT.ErrorCode);
        break;
    case QUIC_CONNECTION_EVENT_SHUTDOWN_INITIATED_BY_PEER:
        say("SHUTDOWN", "by=peer error=%" PRIu64, (uint64_t)ev->SHUTDOWN_INITIATED_BY_PEER.ErrorCode);
        break;
    case QUIC_CONNECTION_EVENT_SHUTDOWN_COMPLETE:
        report_final(c);
        atomic_store(&Finished, 1); /* main closes the handle after the poller stops */
        break;
    default:
        break;
    }
    return QUIC_STATUS_SUCCESS;
}

static QUIC_STATUS QUIC_API listener_cb(HQUIC l, void *ctx, QUIC_LISTENER_EVENT *ev) {
    (void)l;
    (void)ctx;
    if (ev->Type != QUIC_LISTENER_EVENT_NEW_CONNECTION) return QUIC_STATUS_SUCCESS;
    HQUIC expected = NULL;
    if (!atomic_compare_exchange_strong(&Conn, &expected, ev->NEW_CONNECTION.Connection))
        return QUIC_STATUS_CONNECTION_REFUSED; /* one connection per process */
    Api->SetCallbackHandler(ev->NEW_CONNECTION.Connection, (void *)conn_cb, NULL);
    if (OptKeyLog && *OptKeyLog) {
        QUIC_STATUS st = Api->SetParam(ev->NEW_CONNECTION.Connection, QUIC_PARAM_CONN_TLS_SECRETS, sizeof Secrets, &Secrets);
        if (QUIC_FAILED(st)) say("ERROR", "what=SetParam(QUIC_PARAM_CONN_TLS_SECRETS) status=0x%x", st);
    }
    return Api->ConnectionSetConfiguration(ev->NEW_CONNECTION.Connection, Configuration);
}

/* ---- setup -------------------------------------------------------------- */

static int open_configuration(void) {
    QUIC_SETTINGS s;
    memset(&s, 0, sizeof s);
    s.IdleTimeoutMs = 30000;
    s.IsSet.IdleTimeoutMs = 1;
    if (strcmp(OptCC, "bbr") == 0)
        s.CongestionControlAlgorithm = QUIC_CONGESTION_CONTROL_ALGORITHM_BBR;
    else
        s.CongestionControlAlgorithm = QUIC_CONGESTION_CONTROL_ALGORITHM_CUBIC;
    s.IsSet.CongestionControlAlgorithm = 1;
    if (IsServer) {
        s.PeerBidiStreamCount = 1;
        s.IsSet.PeerBidiStreamCount = 1;
    } else {
        /* A receive window far above the paths' bandwidth-delay product so
         * that flow control never binds the download. */
        s.StreamRecvWindowDefault = 16 * 1024 * 1024;
        s.IsSet.StreamRecvWindowDefault = 1;
        s.ConnFlowControlWindow = 64 * 1024 * 1024;
        s.IsSet.ConnFlowControlWindow = 1;
    }
    QUIC_BUFFER alpn = {sizeof(ALPN) - 1, (uint8_t *)ALPN};
    QUIC_STATUS st = Api->ConfigurationOpen(Registration, &alpn, 1, &s, sizeof s, NULL, &Configuration);
    if (QUIC_FAILED(st)) {
        fprintf(stderr, "migaudit-msquic: ConfigurationOpen failed: 0x%x\n", st);
        return -1;
    }
    QUIC_CREDENTIAL_CONFIG cred;
    QUIC_CERTIFICATE_FILE cf;
    memset(&cred, 0, sizeof cred);
    if (IsServer) {
        cf.CertificateFile = OptCert;
        cf.PrivateKeyFile = OptKey;
        cred.Type = QUIC_CREDENTIAL_TYPE_CERTIFICATE_FILE;
        cred.CertificateFile = &cf;
        cred.Flags = QUIC_CREDENTIAL_FLAG_NONE;
    } else {
        cred.Type = QUIC_CREDENTIAL_TYPE_NONE;
        cred.Flags = QUIC_CREDENTIAL_FLAG_CLIENT | QUIC_CREDENTIAL_FLAG_NO_CERTIFICATE_VALIDATION;
    }
    st = Api->ConfigurationLoadCredential(Configuration, &cred);
    if (QUIC_FAILED(st)) {
        fprintf(stderr, "migaudit-msquic: ConfigurationLoadCredential failed: 0x%x\n", st);
        return -1;
    }
    return 0;
}

static void usage(void) {
    fprintf(stderr,
            "usage: migaudit-msquic server --listen IP:PORT --cert F --key F --body N --timeline F [--cc cubic|bbr] [--poll-us N] [--keylog F]\n"
            "       migaudit-msquic client --server IP:PORT --local-a IP [--local-b IP] --size N --timeline F [--cc cubic|bbr]\n"
            "                              [--move-at-ms T --move-to a|b] [--back-after-ms T] [--poll-us N]\n");
    exit(2);
}

static void parse_args(int argc, char **argv) {
    if (argc < 2) usage();
    if (strcmp(argv[1], "server") == 0)
        IsServer = 1;
    else if (strcmp(argv[1], "client") != 0)
        usage();
    for (int i = 2; i < argc; i++) {
        const char *k = argv[i];
        if (i + 1 >= argc) {
            fprintf(stderr, "migaudit-msquic: %s needs a value\n", k);
            exit(2);
        }
        const char *v = argv[++i];
        if (!strcmp(k, "--listen")) OptListen = v;
        else if (!strcmp(k, "--cert")) OptCert = v;
        else if (!strcmp(k, "--key")) OptKey = v;
        else if (!strcmp(k, "--body")) OptBody = strtoull(v, NULL, 10);
        else if (!strcmp(k, "--server")) OptServer = v;
        else if (!strcmp(k, "--local-a")) OptLocalA = v;
        else if (!strcmp(k, "--local-b")) OptLocalB = v;
        else if (!strcmp(k, "--size")) OptSize = strtoull(v, NULL, 10);
        else if (!strcmp(k, "--timeline")) OptTimeline = v;
        else if (!strcmp(k, "--keylog")) OptKeyLog = v;
        else if (!strcmp(k, "--cc")) OptCC = v;
        else if (!strcmp(k, "--poll-us")) OptPollUs = strtoull(v, NULL, 10);
        else if (!strcmp(k, "--move-at-ms")) OptMoveAtMs = strtoll(v, NULL, 10);
        else if (!strcmp(k, "--move-to")) OptMoveTo = v;
        else if (!strcmp(k, "--back-after-ms")) OptBackAfterMs = strtoll(v, NULL, 10);
        else {
            fprintf(stderr, "migaudit-msquic: unknown option %s\n", k);
            exit(2);
        }
    }
    if (strcmp(OptCC, "cubic") && strcmp(OptCC, "bbr")) {
        fprintf(stderr, "migaudit-msquic: --cc %s: msquic offers cubic and bbr\n", OptCC);
        exit(2);
    }
    if (!OptTimeline || OptPollUs == 0) usage();
    if (IsServer && (!OptListen || !OptCert || !OptKey || !OptBody)) usage();
    if (!IsServer && (!OptServer || !OptLocalA || !OptSize)) usage();
    if (!IsServer && OptMoveAtMs >= 0 && strcmp(OptMoveTo, "a") && (strcmp(OptMoveTo, "b") || !OptLocalB)) {
        fprintf(stderr, "migaudit-msquic: --move-to must be a, or b with --local-b\n");
        exit(2);
    }
}

/* move sets the client's local address to ip with port 0 (a new socket). */
static void move_to(HQUIC c, const char *ip, const char *why) {
    QUIC_ADDR old, na;
    char os[80] = "-", ns[80] = "-";
    uint32_t len = sizeof old;
    if (QUIC_SUCCEEDED(Api->GetParam(c, QUIC_PARAM_CONN_LOCAL_ADDRESS, &len, &old))) addr_str(&old, os, sizeof os);
    if (parse_addr(ip, 0, &na) != 0) {
        say("ERROR", "what=move bad_address=%s", ip);
        return;
    }
    QUIC_STATUS st = Api->SetParam(c, QUIC_PARAM_CONN_LOCAL_ADDRESS, sizeof na, &na);
    if (QUIC_FAILED(st)) {
        say("ERROR", "what=SetParam(QUIC_PARAM_CONN_LOCAL_ADDRESS) status=0x%x to=%s", st, ip);
        return;
    }
    len = sizeof na;
    if (QUIC_SUCCEEDED(Api->GetParam(c, QUIC_PARAM_CONN_LOCAL_ADDRESS, &len, &na))) addr_str(&na, ns, sizeof ns);
    say("MOVE", "why=%s from=%s to=%s api=QUIC_PARAM_CONN_LOCAL_ADDRESS", why, os, ns);
}

static void sleep_until_ns(uint64_t t) {
    while (!atomic_load(&Finished) && now_ns() < t) {
        uint64_t d = t - now_ns();
        if (d > 10000000) d = 10000000;
        struct timespec ts = {0, (long)d};
        nanosleep(&ts, NULL);
    }
}

static void *mover(void *arg) {
    (void)arg;
    while (!atomic_load(&Connected) && !atomic_load(&Finished)) usleep(1000);
    if (atomic_load(&Finished)) return NULL;
    uint64_t t0 = atomic_load(&ConnectedAtNs);
    sleep_until_ns(t0 + (uint64_t)OptMoveAtMs * 1000000ull);
    if (atomic_load(&Finished)) return NULL;
    move_to(atomic_load(&Conn), strcmp(OptMoveTo, "b") == 0 ? OptLocalB : OptLocalA,
            strcmp(OptMoveTo, "b") == 0 ? "migrate" : "rebind");
    if (OptBackAfterMs < 0) return NULL;
    sleep_until_ns(t0 + (uint64_t)(OptMoveAtMs + OptBackAfterMs) * 1000000ull);
    if (atomic_load(&Finished)) return NULL;
    move_to(atomic_load(&Conn), OptLocalA, "back");
    return NULL;
}

int main(int argc, char **argv) {
    ZeroMono = now_ns();
    parse_args(argc, argv);
    memset(Chunk, 'm', sizeof Chunk);
    FILE *tl = fopen(OptTimeline, "wx");
    if (!tl) {
        fprintf(stderr, "migaudit-msquic: create %s: %s\n", OptTimeline, strerror(errno));
        return 1;
    }
    fprintf(tl, "time_us,role,path_id,local,peer,active,cwnd,bytes_in_flight,smoothed_rtt,min_rtt,latest_rtt,rttvar,path_mtu,send_bytes,recv_bytes,lost_packets,congestion_events\n");

    QUIC_STATUS st = MsQuicOpen2(&Api);
    if (QUIC_FAILED(st)) {
        fprintf(stderr, "migaudit-msquic: MsQuicOpen2 failed: 0x%x\n", st);
        return 1;
    }
    uint32_t ver[4] = {0};
    uint32_t len = sizeof ver;
    Api->GetParam(NULL, QUIC_PARAM_GLOBAL_LIBRARY_VERSION, &len, ver);
    char hash[64] = "";
    len = sizeof hash;
    if (QUIC_FAILED(Api->GetParam(NULL, QUIC_PARAM_GLOBAL_LIBRARY_GIT_HASH, &len, hash))) hash[0] = 0;
    say("LIBRARY", "version=%u.%u.%u.%u git_hash=%s", ver[0], ver[1], ver[2], ver[3], hash[0] ? hash : "-");

    QUIC_REGISTRATION_CONFIG rc = {"migaudit", QUIC_EXECUTION_PROFILE_LOW_LATENCY};
    if (QUIC_FAILED(st = Api->RegistrationOpen(&rc, &Registration))) {
        fprintf(stderr, "migaudit-msquic: RegistrationOpen failed: 0x%x\n", st);
        return 1;
    }
    if (open_configuration() != 0) return 1;

    pthread_t pt, mt;
    int have_mover = 0;
    if (IsServer) {
        QUIC_ADDR la;
        if (parse_addr(OptListen, 4433, &la) != 0) {
            fprintf(stderr, "migaudit-msquic: --listen %s is not IP:PORT\n", OptListen);
            return 2;
        }
        QUIC_BUFFER alpn = {sizeof(ALPN) - 1, (uint8_t *)ALPN};
        if (QUIC_FAILED(st = Api->ListenerOpen(Registration, listener_cb, NULL, &Listener)) ||
            QUIC_FAILED(st = Api->ListenerStart(Listener, &alpn, 1, &la))) {
            fprintf(stderr, "migaudit-msquic: listen on %s failed: 0x%x\n", OptListen, st);
            return 1;
        }
        say("READY", "listen=%s", OptListen);
    } else {
        QUIC_ADDR sa, la;
        if (parse_addr(OptServer, 4433, &sa) != 0 || sa.Ip.sa_family != QUIC_ADDRESS_FAMILY_INET) {
            fprintf(stderr, "migaudit-msquic: --server %s is not IPv4:PORT\n", OptServer);
            return 2;
        }
        if (parse_addr(OptLocalA, 0, &la) != 0) {
            fprintf(stderr, "migaudit-msquic: --local-a %s is not an IP address\n", OptLocalA);
            return 2;
        }
        char ip[INET_ADDRSTRLEN];
        inet_ntop(AF_INET, &sa.Ipv4.sin_addr, ip, sizeof ip);
        HQUIC c = NULL;
        if (QUIC_FAILED(st = Api->ConnectionOpen(Registration, conn_cb, NULL, &c))) {
            fprintf(stderr, "migaudit-msquic: ConnectionOpen failed: 0x%x\n", st);
            return 1;
        }
        atomic_store(&Conn, c);
        if (QUIC_FAILED(st = Api->SetParam(c, QUIC_PARAM_CONN_LOCAL_ADDRESS, sizeof la, &la))) {
            fprintf(stderr, "migaudit-msquic: bind to --local-a %s failed: 0x%x\n", OptLocalA, st);
            return 1;
        }
        if (QUIC_FAILED(st = Api->ConnectionStart(c, Configuration, QUIC_ADDRESS_FAMILY_INET, ip, ntohs(sa.Ipv4.sin_port)))) {
            fprintf(stderr, "migaudit-msquic: ConnectionStart to %s failed: 0x%x\n", OptServer, st);
            return 1;
        }
        if (OptMoveAtMs >= 0) {
            pthread_create(&mt, NULL, mover, NULL);
            have_mover = 1;
        }
    }
    pthread_create(&pt, NULL, poller, tl);
    while (!atomic_load(&Finished)) usleep(2000);
    pthread_join(pt, NULL);
    if (have_mover) pthread_join(mt, NULL);
    fclose(tl);
    HQUIC c = atomic_load(&Conn);
    uint64_t got = atomic_load(&Received);
    if (IsServer)
        say("DONE", "sent=%" PRIu64 " body=%" PRIu64, atomic_load(&Sent), OptBody);
    else
        say("DONE", "received=%" PRIu64 " size=%" PRIu64, got, OptSize);
    if (c) Api->ConnectionClose(c);
    if (Listener) Api->ListenerClose(Listener);
    Api->ConfigurationClose(Configuration);
    Api->RegistrationClose(Registration);
    MsQuicClose(Api);
    return IsServer ? 0 : (got == OptSize ? 0 : 1);
}
