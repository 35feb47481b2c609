/* Connection floods against the real sluiced (tcp.max_connections = 1001), with a separate
 * client pinging beside each flood (its latency is printed per phase; nothing is asserted on
 * time):
 *   - slow senders trickling a ping or a token login a byte at a time, each answered in the end;
 *   - 1000 connections open at once beside the probe, each answered; one more is refused
 *     cleanly (closed at accept, the others unharmed); closing one lets a new one in;
 *   - pre-login connections that declare an 8 MiB frame (each closed at its header: the 4 KiB
 *     pre-login cap), then ones that declare a 4 KiB frame and stall in its body (kept);
 *   - clients that never read their replies: logged-in ones pipelining 1 MiB polls, others
 *     pipelining pings; tcp.reply_timeout closes every one of them.
 * Resident memory of the server is read from /proc/<pid>/status before, during and after each
 * phase and held against the bounds docs/configuration.md ("Memory") states for the settings
 * this test gives the server (below): per connection, the reply budget, and after every flood
 * closed, the rest level plus what stays by design. The bounds are checked in every run but
 * under a sanitizer (whose allocator keeps what it frees); with SLUICE_SOAK set (make soak) the
 * phases are larger and slower. */
#define _GNU_SOURCE /* POLLRDHUP */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
// clang-format off
#include <cmocka.h>
// clang-format on
#include <sluice/client.h>
#include <sluice/error.h>

#include "crash_util.h"
#include "base/limits.h"
#include "harness.h"
#include "raw.h"
#include "server/loop.h"
#include "server/server.h"
#include "wire/cmd_messages.h"
#include "wire/cmd_users.h"
#include "wire/command.h"
#include "wire/header.h"

#define FLOOD       1000u
#define MAX_CONNS   "1001" /* the flood and the probe */
#define ANSWER_MS   30000  /* liveness bound on an answer (not a measurement) */
#define CLOSE_MS    60000  /* liveness bound on a close by a timeout (not a measurement) */
#define POLL_COUNT  1000u  /* messages per non-reader poll: about 1 MiB */
#define PAYLOAD_LEN 1000u

/* The server's settings. The timeouts a slow sender meets are long, so that every trickled
 * frame is answered however loaded the machine is; the one for unread replies is short, so
 * that the non-readers are closed within the run. The budgets are small, so that the bounds
 * below bind: 200 connections polling 1 MiB unread would hold 200 MiB without the reply
 * budget. */
#define REPLY_MEMORY_MIB    32u
#define FRAME_MAX           (8u << 20) /* message_bus.max_message_size */
#define FRAME_POOL_IDLE_MIB 4u
static const char *const settings[][2] = {
    {"IGGY_TCP_MAX_CONNECTIONS", MAX_CONNS},
    {"IGGY_TCP_LOGIN_TIMEOUT", "10 min"},
    {"IGGY_TCP_FRAME_TIMEOUT", "10 min"},
    {"IGGY_TCP_REPLY_TIMEOUT", "2 s"},
    {"IGGY_MESSAGE_BUS_MAX_MESSAGE_SIZE", "8 MiB"},
    {"IGGY_MESSAGE_BUS_RECEIVE_MEMORY_MAX", "32 MiB"},
    {"IGGY_MESSAGE_BUS_REPLY_MEMORY_MAX", "32 MiB"},
    {"IGGY_MESSAGE_BUS_FRAME_POOL_IDLE_MAX", "4 MiB"},
};

/* Bounds, in KiB of resident memory (docs/configuration.md, "Memory"). Per connection, logged
 * in or not: its state (2), one small request frame (16), the spill of pipelined bytes (16), the
 * reply buffer (16) and the request scratch (16). */
#define BOUND_CONN_KIB 66u
/* Connections that never read: the reply budget for them all, plus each one's own share. */
#define BOUND_NOREAD_KIB(conns) (REPLY_MEMORY_MIB * 1024u + (conns)*BOUND_CONN_KIB)
/* After every connection closed, above the level with the probe alone (the receive ring
 * warmed up first): the frame buffers the pool keeps idle, the free heap the server hands back
 * only once it grew by SL_HEAP_TRIM_STEP (4 MiB), and tables that keep their high-water size
 * (the session array, the metadata's client table: about 0.5 MiB after these floods). */
#define BOUND_TABLES_KIB 2048u
#define BOUND_AFTER_KIB  (FRAME_POOL_IDLE_MIB * 1024u + SL_HEAP_TRIM_STEP / 1024u + BOUND_TABLES_KIB)

/* A sanitizer's allocator keeps what the server frees (quarantine), and pads what it holds. */
#if defined(__SANITIZE_ADDRESS__)
#define SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SANITIZED 1
#endif
#endif
#ifndef SANITIZED
#define SANITIZED 0
#endif

static th_server_t srv;
static char token[128];
static bool soak;
static bool check_bounds; /* not under a sanitizer */
static uint32_t bound_failures;

static void sleep_ms(uint32_t ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        continue;
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* RSS once it has not fallen for 1.6 s (longer than the server's 1 s tick, which trims the
 * heap), up to 10 s. */
static uint64_t settled_rss(void)
{
    uint64_t low = cu_rss_kib(srv.pid);
    uint32_t steady = 0;
    for (int i = 0; i < 50 && steady < 8; i++) {
        sleep_ms(200);
        uint64_t now = cu_rss_kib(srv.pid);
        steady = now < low ? 0 : steady + 1;
        low = now < low ? now : low;
    }
    return cu_rss_kib(srv.pid);
}

/* Prints a per-connection figure and holds it against its bound. */
static void per_conn(const char *what, uint64_t base, uint64_t rss, uint32_t conns,
                     uint32_t bound_kib)
{
    double each = ((double)rss - (double)base) / conns;
    bool over = check_bounds && each > bound_kib;
    fprintf(stderr,
            "flood: %-38s RSS %" PRIu64 " KiB (%" PRIu64 " before), %.1f KiB per "
            "connection (bound %u)%s\n",
            what, rss, base, each, bound_kib, over ? "  OVER" : "");
    if (over)
        bound_failures++;
}

/* Prints a figure for a group of connections and holds the whole against its bound. */
static void all_conns(const char *what, uint64_t base, uint64_t rss, uint32_t conns,
                      uint64_t bound_kib)
{
    double grew = (double)rss - (double)base;
    bool over = check_bounds && grew > (double)bound_kib;
    fprintf(stderr,
            "flood: %-38s RSS %" PRIu64 " KiB (%" PRIu64 " before), +%.0f KiB for %u "
            "connections, %.1f KiB each (bound %" PRIu64 " KiB in all)%s\n",
            what, rss, base, grew, conns, grew / conns, bound_kib, over ? "  OVER" : "");
    if (over)
        bound_failures++;
}

/* True when the server closed fd (FIN or reset) within timeout_ms; nothing is read, so what
 * the server sent stays unread. */
static bool closed_by_server(int fd, int timeout_ms)
{
    struct pollfd pfd = {.fd = fd, .events = POLLRDHUP};
    return poll(&pfd, 1, timeout_ms) > 0 && (pfd.revents & (POLLRDHUP | POLLHUP | POLLERR));
}

/* --- the probe beside the floods ---------------------------------------------------------- */

#define PHASES  5
#define LAT_MAX 200000u
static const char *const phase_names[PHASES] = {"idle", "1000 connections", "slow senders",
                                                "stalled frames", "non-readers"};

typedef struct prober {
    pthread_t thread;
    sl_client_t *c;
    atomic_int phase;
    atomic_bool stop;
    double *lat[PHASES];
    uint32_t n[PHASES];
    bool failed;
    char error[128];
} prober_t;

static prober_t probe;

static void *prober_main(void *arg)
{
    prober_t *p = arg;
    while (!atomic_load(&p->stop)) { /* ends when the test says so */
        int ph = atomic_load(&p->phase);
        double t0 = now_ms();
        int rc = sl_client_ping(p->c);
        if (rc != 0) {
            snprintf(p->error, sizeof(p->error), "ping in phase %s: %d (%s)", phase_names[ph], rc,
                     sl_strerror(rc));
            p->failed = true;
            return NULL;
        }
        if (p->n[ph] < LAT_MAX)
            p->lat[ph][p->n[ph]++] = now_ms() - t0;
        sleep_ms(1);
    }
    return NULL;
}

static int dbl_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void print_latency(void)
{
    for (int ph = 0; ph < PHASES; ph++) {
        uint32_t n = probe.n[ph];
        if (n == 0)
            continue;
        qsort(probe.lat[ph], n, sizeof(double), dbl_cmp);
        fprintf(stderr,
                "flood: probe ping during %-17s %6u pings, p50 %.3f ms, p99 %.3f ms, "
                "max %.3f ms\n",
                phase_names[ph], n, probe.lat[ph][n / 2], probe.lat[ph][(uint32_t)(n * 0.99)],
                probe.lat[ph][n - 1]);
    }
}

/* --- frames ------------------------------------------------------------------------------- */

static void ping_frame(uint8_t out[SL_HEADER_SIZE])
{
    sl_request_header_t h = {.size = SL_HEADER_SIZE,
                             .client = raw_client_id(),
                             .operation = SL_OP_NON_REPLICATED,
                             .code = SL_CMD_PING};
    sl_request_header_encode(out, &h);
}

/* A token login frame; returns its size. */
static uint32_t login_frame(uint8_t *out, size_t cap)
{
    sl_buf_t b;
    sl_buf_init(&b, 0);
    sl_login_register_with_pat_request_t q = {
        .version = {SL_PROTOCOL_VERSION, sl_span_str("sluice-tests"), sl_span_str("0.1.0")},
        .login = {sl_span_str(token), sl_span(NULL, 0)},
    };
    assert_int_equal(sl_login_register_with_pat_request_encode(&b, &q), 0);
    uint32_t size = (uint32_t)(SL_HEADER_SIZE + b.len);
    assert_true(size <= cap);
    sl_request_header_t h = {.size = size,
                             .client = raw_client_id(),
                             .operation = SL_OP_REGISTER,
                             .request_checksum = sl_request_checksum(sl_buf_span(&b))};
    sl_request_header_encode(out, &h);
    memcpy(out + SL_HEADER_SIZE, b.data, b.len);
    sl_buf_free(&b);
    return size;
}

/* Reads one reply frame and checks it answers well: status 0, and for a login result 0. */
static bool answered(int fd, bool login)
{
    uint8_t buf[4096];
    int n = th_read_frame(fd, buf, sizeof(buf), ANSWER_MS);
    if (n < (int)SL_HEADER_SIZE || buf[SL_HDR_OFF_COMMAND] != SL_COMMAND_REPLY)
        return false;
    if (sl_load_u32(buf + SL_REP_OFF_STATUS) != 0)
        return false;
    return !login || (n >= (int)SL_HEADER_SIZE + 4 && sl_load_u32(buf + SL_HEADER_SIZE) == 0);
}

static void set_nonblocking(int fd)
{
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
}

/* --- phases ------------------------------------------------------------------------------- */

/* 1000 connections, each answered; one more refused; a freed slot reused. */
static void phase_flood(void)
{
    uint64_t base = settled_rss();
    atomic_store(&probe.phase, 1);
    int fds[FLOOD];
    uint8_t ping[SL_HEADER_SIZE];
    double t0 = now_ms();
    for (uint32_t i = 0; i < FLOOD; i++) {
        fds[i] = th_connect(srv.port);
        ping_frame(ping);
        assert_true(th_send_all(fds[i], ping, sizeof(ping)));
    }
    for (uint32_t i = 0; i < FLOOD; i++)
        if (!answered(fds[i], false))
            fail_msg("flood connection %u: its ping was not answered\n%s", i, th_log(&srv));
    double opened = now_ms() - t0;
    per_conn("1000 open connections:", base, settled_rss(), FLOOD, BOUND_CONN_KIB);

    /* The configured maximum is reached (the probe is the 1001st): one more is closed at
     * accept, and nothing else happens to the others. */
    int extra = th_connect(srv.port);
    ping_frame(ping);
    (void)th_send_all(extra, ping, sizeof(ping));
    if (!th_wait_closed(extra, ANSWER_MS))
        fail_msg("connection 1002 was not refused");
    close(extra);
    for (uint32_t i = 0; i < FLOOD; i += 97) {
        ping_frame(ping);
        assert_true(th_send_all(fds[i], ping, sizeof(ping)));
        if (!answered(fds[i], false))
            fail_msg("flood connection %u: not answered after the refusal", i);
    }
    /* A closed connection frees its slot (once the server has seen the close). */
    close(fds[0]);
    bool in = false;
    for (int attempt = 0; attempt < 200 && !in; attempt++) {
        int fd = th_connect(srv.port);
        ping_frame(ping);
        in = th_send_all(fd, ping, sizeof(ping)) && answered(fd, false);
        fds[0] = fd;
        if (!in) {
            close(fd);
            sleep_ms(50);
        }
    }
    if (!in)
        fail_msg("no new connection was let in after one of the 1000 closed");
    for (uint32_t i = 0; i < FLOOD; i++)
        close(fds[i]);
    fprintf(stderr,
            "flood: 1000 connections opened and answered in %.0f ms; connection 1002 "
            "refused; a freed slot taken again\n",
            opened);
}

/* Connections sending a ping or a login one byte at a time, round-robin. */
static void phase_slow(void)
{
    uint64_t base = settled_rss();
    atomic_store(&probe.phase, 2);
    uint32_t conns = soak ? FLOOD : 100, delay = soak ? 20 : 2;
    int *fds = calloc(conns, sizeof(int));
    uint8_t(*frames)[512] = calloc(conns, 512);
    uint32_t *len = calloc(conns, sizeof(uint32_t));
    assert_true(fds && frames && len);
    uint32_t longest = 0;
    for (uint32_t i = 0; i < conns; i++) {
        fds[i] = th_connect(srv.port);
        if (i % 2) {
            len[i] = login_frame(frames[i], sizeof(frames[i]));
        } else {
            ping_frame(frames[i]);
            len[i] = SL_HEADER_SIZE;
        }
        longest = len[i] > longest ? len[i] : longest;
    }
    double t0 = now_ms();
    uint64_t mid = 0;
    for (uint32_t at = 0; at < longest; at++) {
        for (uint32_t i = 0; i < conns; i++)
            if (at < len[i])
                assert_true(th_send_all(fds[i], &frames[i][at], 1));
        if (at == longest / 2)
            mid = cu_rss_kib(srv.pid);
        sleep_ms(delay);
    }
    for (uint32_t i = 0; i < conns; i++)
        if (!answered(fds[i], i % 2))
            fail_msg("slow sender %u (%s): not answered", i, i % 2 ? "login" : "ping");
    fprintf(stderr,
            "flood: %u slow senders (one byte per connection every %u ms, %.1f s) all "
            "answered\n",
            conns, delay, (now_ms() - t0) / 1000.0);
    per_conn("slow senders, mid-frame:", base, mid, conns, BOUND_CONN_KIB);
    for (uint32_t i = 0; i < conns; i++)
        close(fds[i]);
    free(fds);
    free(frames);
    free(len);
}

/* Pre-login connections each sending a header that declares size, then part of the body
 * (non-blocking: the server may have closed the connection already). */
static void open_declaring(int *fds, uint32_t conns, uint32_t size, const uint8_t *body,
                           size_t sent)
{
    for (uint32_t i = 0; i < conns; i++) {
        fds[i] = th_connect(srv.port);
        uint8_t hdr[SL_HEADER_SIZE];
        sl_request_header_t h = {.size = size,
                                 .client = raw_client_id(),
                                 .operation = SL_OP_NON_REPLICATED,
                                 .code = SL_CMD_PING};
        sl_request_header_encode(hdr, &h);
        set_nonblocking(fds[i]);
        (void)send(fds[i], hdr, sizeof(hdr), MSG_NOSIGNAL);
        (void)send(fds[i], body, sent, MSG_NOSIGNAL);
    }
}

/* How many of fds the server closed within CLOSE_MS of now, all together. */
static uint32_t count_closed(const int *fds, uint32_t conns)
{
    double deadline = now_ms() + CLOSE_MS;
    uint32_t closed = 0;
    for (uint32_t i = 0; i < conns; i++) {
        double left = deadline - now_ms();
        closed += closed_by_server(fds[i], left > 0 ? (int)left : 0);
    }
    return closed;
}

static uint64_t vm_size_kib(void)
{
    uint64_t vm = 0;
    char path[64], line[256];
    snprintf(path, sizeof(path), "/proc/%d/status", (int)srv.pid);
    FILE *f = fopen(path, "r");
    while (f && fgets(line, sizeof(line), f))
        if (strncmp(line, "VmSize:", 7) == 0)
            vm = strtoull(line + 7, NULL, 10);
    if (f)
        fclose(f);
    return vm;
}

/* Pre-login connections that declare a frame and stall in its body. A declaration above the
 * pre-login cap (SL_UNAUTH_FRAME_MAX, 4 KiB) closes the connection at its header, before
 * anything is reserved (before the cap, each got a buffer of the declared size and kept it);
 * one within the cap is kept, until tcp.login_timeout, at what any connection costs. */
static void phase_stalled(void)
{
    uint32_t conns = soak ? FLOOD : 100;
    int *fds = calloc(conns, sizeof(int));
    uint8_t *chunk = calloc(1, 65536);
    assert_true(fds && chunk);
    uint64_t base = settled_rss();
    atomic_store(&probe.phase, 3);
    /* The largest frame the server takes (max_message_size, below): only the pre-login cap
     * refuses it. */
    open_declaring(fds, conns, FRAME_MAX, chunk, 65536);
    uint32_t closed = count_closed(fds, conns);
    uint64_t rss = settled_rss();
    fprintf(stderr,
            "flood: %u pre-login connections declared an 8 MiB frame: %u closed by the server, "
            "server VmSize %" PRIu64 " MiB\n",
            conns, closed, vm_size_kib() / 1024);
    if (closed != conns)
        fail_msg("%u of %u connections that declared an 8 MiB frame before a login are still "
                 "open",
                 conns - closed, conns);
    per_conn("8 MiB declared (64 KiB sent, closed):", base, rss, conns, BOUND_CONN_KIB);
    for (uint32_t i = 0; i < conns; i++)
        close(fds[i]);

    base = settled_rss();
    open_declaring(fds, conns, SL_UNAUTH_FRAME_MAX, chunk, SL_UNAUTH_FRAME_MAX / 2);
    rss = settled_rss();
    uint32_t open = 0;
    for (uint32_t i = 0; i < conns; i++)
        open += !th_readable(fds[i], 0);
    fprintf(stderr,
            "flood: %u pre-login connections stalled in a declared %u-byte frame: %u still "
            "open\n",
            conns, SL_UNAUTH_FRAME_MAX, open);
    assert_int_equal(open, conns);
    per_conn("4 KiB declared (2 KiB sent, stalled):", base, rss, conns, BOUND_CONN_KIB);
    for (uint32_t i = 0; i < conns; i++)
        close(fds[i]);
    free(fds);
    free(chunk);
}

/* Writes as much of buf as the socket takes now; returns how many bytes went. */
static size_t push(int fd, const uint8_t *buf, size_t len)
{
    size_t sent = 0;
    while (sent < len) {
        ssize_t n = send(fd, buf + sent, len - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n <= 0)
            break;
        sent += (size_t)n;
    }
    return sent;
}

/* A non-reader's receive buffer, fixed (SO_RCVBUF turns off the kernel's growing of it, which
 * goes up to net.ipv4.tcp_rmem's maximum: 32 MiB on some machines, room for every reply). */
#define NONREADER_RCVBUF (64u * 1024u)

/* A loopback connection whose receive buffer is NONREADER_RCVBUF, set before the handshake. */
static int connect_small_rcvbuf(uint16_t port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    int size = (int)NONREADER_RCVBUF;
    assert_int_equal(setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof(size)), 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    return fd;
}

/* How many unread 1 MiB polls a non-reader pipelines so that their replies cannot all go into
 * the kernel: more than the server's send buffer at its largest (net.ipv4.tcp_wmem's maximum)
 * and the client's fixed receive buffer (which the kernel doubles) hold together. Otherwise the
 * server has written every reply, waits for a next request, and rightly times nothing. */
static uint32_t polls_past_kernel(void)
{
    unsigned long lo = 0, def = 0, max = 4ul << 20;
    FILE *f = fopen("/proc/sys/net/ipv4/tcp_wmem", "r");
    if (f) {
        if (fscanf(f, "%lu %lu %lu", &lo, &def, &max) != 3)
            max = 4ul << 20;
        fclose(f);
    }
    uint64_t kernel = (uint64_t)max + 2u * NONREADER_RCVBUF;
    return (uint32_t)(kernel / (POLL_COUNT * PAYLOAD_LEN)) + 2u;
}

/* Clients that never read: logged-in ones pipelining big polls, others pipelining pings. */
static void phase_nonreaders(void)
{
    uint64_t base = settled_rss();
    atomic_store(&probe.phase, 4);
    uint32_t pollers = soak ? 200 : 20, pingers = soak ? 200 : 20, polls = polls_past_kernel();
    raw_session_t *raw = malloc(sizeof(*raw));
    int *fds = calloc(pollers + pingers, sizeof(int));
    assert_true(raw && fds);
    uint8_t frame[1024];
    uint8_t pings[64 * SL_HEADER_SIZE];
    for (uint32_t k = 0; k < 64; k++)
        ping_frame(pings + k * SL_HEADER_SIZE);
    uint64_t pushed = 0;
    for (uint32_t i = 0; i < pingers; i++) {
        fds[pollers + i] = th_connect(srv.port);
        for (int k = 0; k < 64; k++) { /* until the socket is full, at most 64 x 64 pings */
            size_t n = push(fds[pollers + i], pings, sizeof(pings));
            pushed += n;
            if (n < sizeof(pings))
                break;
        }
    }
    uint64_t after_pings = settled_rss();
    per_conn("unread pings:", base, after_pings, pingers, BOUND_CONN_KIB);
    for (uint32_t i = 0; i < pollers; i++) {
        memset(raw, 0, sizeof(*raw));
        raw->fd = connect_small_rcvbuf(srv.port);
        raw->client = raw_client_id();
        raw_reply_t rep = raw_login_token(raw, token);
        assert_false(rep.closed || rep.evicted || rep.result != 0);
        sl_poll_messages_request_t q = {.consumer = {SL_CONSUMER_SINGLE, sl_ident_number(1)},
                                        .stream_id = sl_ident_number(0),
                                        .topic_id = sl_ident_number(0),
                                        .partition = {true, 0},
                                        .strategy = {SL_STRATEGY_OFFSET, 0},
                                        .count = POLL_COUNT};
        sl_buf_t b;
        sl_buf_init(&b, 0);
        assert_int_equal(sl_poll_messages_request_encode(&b, &q), 0);
        sl_request_header_t h = {.size = (uint32_t)(SL_HEADER_SIZE + b.len),
                                 .client = raw->client,
                                 .operation = SL_OP_NON_REPLICATED,
                                 .session = raw->session,
                                 .code = SL_CMD_POLL_MESSAGES};
        sl_request_header_encode(frame, &h);
        memcpy(frame + SL_HEADER_SIZE, b.data, b.len);
        for (uint32_t k = 0; k < polls; k++)
            assert_true(th_send_all(raw->fd, frame, h.size));
        sl_buf_free(&b);
        fds[i] = raw->fd; /* kept open, never read */
    }
    uint64_t rss = settled_rss();
    fprintf(stderr,
            "flood: %u logged-in connections with %u unread 1 MiB polls each, %u with "
            "%.1f MiB of unread pings in all\n",
            pollers, polls, pingers, (double)pushed / 1048576.0);
    all_conns("unread 1 MiB polls:", after_pings, rss, pollers, BOUND_NOREAD_KIB(pollers));
    /* The pingers' replies all went into the kernel's socket buffers (its memory, not the
     * server's), so the server waits for their next request and nothing of theirs is timed;
     * they go first. The pollers' replies cannot fit (polls_past_kernel): tcp.reply_timeout
     * must close each of them, which the server's client count shows (their FIN waits behind the unread bytes,
     * so the sockets here cannot tell). */
    for (uint32_t i = pollers; i < pollers + pingers; i++)
        close(fds[i]);
    sl_client_t *counter = cu_connect(&srv);
    double t0 = now_ms();
    uint32_t clients = UINT32_MAX;
    while (now_ms() - t0 < CLOSE_MS) { /* a liveness bound, not a measurement */
        const sl_stats_t *st = NULL;
        assert_int_equal(sl_client_get_stats(counter, &st), 0);
        clients = st->clients_count;
        if (clients <= 2) /* the probe and this one */
            break;
        sleep_ms(100);
    }
    fprintf(stderr,
            "flood: the %u pollers closed by tcp.reply_timeout (2 s) within %.1f s; %u clients "
            "left\n",
            pollers, (now_ms() - t0) / 1000.0, clients);
    if (clients > 2)
        fail_msg("%u connections that never read their replies are still open", clients - 2);
    sl_client_close(counter);
    for (uint32_t i = 0; i < pollers; i++)
        close(fds[i]);
    free(fds);
    free(raw);
}

/* --- the run -------------------------------------------------------------------------------- */

/* Sends pings through every buffer of the loop's receive ring (each receive takes the next
 * buffer, round the ring), so that the idle level holds the whole ring, resident once traffic
 * has cycled through it, and the floods' figures do not. */
static void warm_receive_ring(void)
{
    int fd = th_connect(srv.port);
    uint8_t pings[64 * SL_HEADER_SIZE], reply[1024];
    for (uint32_t k = 0; k < 64; k++)
        ping_frame(pings + k * SL_HEADER_SIZE);
    for (uint32_t round = 0; round < 2 * SL_LOOP_BUF_COUNT_DEFAULT; round++) {
        assert_true(th_send_all(fd, pings, sizeof(pings)));
        for (uint32_t k = 0; k < 64; k++)
            assert_true(th_read_frame(fd, reply, sizeof(reply), ANSWER_MS) >= (int)SL_HEADER_SIZE);
    }
    close(fd);
}

static void raise_nofile(rlim_t need)
{
    struct rlimit rl;
    assert_int_equal(getrlimit(RLIMIT_NOFILE, &rl), 0);
    if (rl.rlim_cur < need) {
        rl.rlim_cur = rl.rlim_max < need ? rl.rlim_max : need;
        assert_int_equal(setrlimit(RLIMIT_NOFILE, &rl), 0);
    }
    if (rl.rlim_cur < need) {
        fprintf(stderr, "RLIMIT_NOFILE hard limit %llu < %llu: skipped\n",
                (unsigned long long)rl.rlim_max, (unsigned long long)need);
        exit(77);
    }
}

static void setup(void)
{
    /* sluiced inherits the limit and the settings from this process. */
    raise_nofile(2 * FLOOD + 256);
    for (size_t i = 0; i < sizeof(settings) / sizeof(settings[0]); i++)
        setenv(settings[i][0], settings[i][1], 1);
    if (!th_start(&srv, NULL)) {
        fprintf(stderr, "io_uring unavailable: skipped\n");
        exit(77);
    }
    for (size_t i = 0; i < sizeof(settings) / sizeof(settings[0]); i++)
        unsetenv(settings[i][0]);
    sl_client_t *c = cu_connect(&srv);
    assert_int_equal(sl_client_create_stream(c, "flood", NULL), 0);
    assert_int_equal(sl_client_create_topic(c, sl_id_name("flood"), "t", 1, NULL, NULL), 0);
    uint8_t payload[PAYLOAD_LEN];
    memset(payload, 'x', sizeof(payload));
    sl_send_message_t m[100];
    for (int i = 0; i < 100; i++)
        m[i] = (sl_send_message_t){.payload = payload, .payload_len = sizeof(payload)};
    sl_send_result_t r;
    for (uint32_t b = 0; b < 2 * POLL_COUNT / 100; b++)
        assert_int_equal(sl_client_send_messages(c, sl_id_name("flood"), sl_id_name("t"),
                                                 sl_partitioning_partition(0), m, 100, &r),
                         0);
    const char *t = NULL;
    assert_int_equal(sl_client_create_token(c, "flood", 0, &t), 0);
    assert_true(strlen(t) < sizeof(token));
    strcpy(token, t);
    sl_client_close(c);
    for (int ph = 0; ph < PHASES; ph++) {
        probe.lat[ph] = malloc(LAT_MAX * sizeof(double));
        assert_non_null(probe.lat[ph]);
    }
}

static void test_conn_flood(void **state)
{
    (void)state;
    soak = getenv("SLUICE_SOAK") != NULL;
    check_bounds = !SANITIZED;
    setup();
    probe.c = cu_connect(&srv);
    assert_int_equal(sl_client_ping(probe.c), 0);
    warm_receive_ring();
    uint64_t idle = settled_rss();
    fprintf(stderr, "flood: sluiced RSS idle %" PRIu64 " KiB (%s run)\n", idle,
            soak ? "soak" : "short");
    assert_int_equal(pthread_create(&probe.thread, NULL, prober_main, &probe), 0);
    sleep_ms(200);
    phase_slow(); /* first: its connections meet no memory a bigger flood freed */
    phase_flood();
    phase_stalled();
    phase_nonreaders();
    atomic_store(&probe.stop, true);
    assert_int_equal(pthread_join(probe.thread, NULL), 0);
    if (probe.failed)
        fail_msg("the probe beside the floods: %s", probe.error);
    assert_true(th_alive(&srv));
    assert_int_equal(sl_client_ping(probe.c), 0);
    uint64_t after = settled_rss();
    print_latency();
    bool over = check_bounds && after > idle + BOUND_AFTER_KIB;
    fprintf(stderr,
            "flood: sluiced RSS after every flood closed %" PRIu64 " KiB (%+" PRId64
            " KiB from idle, bound %u)%s\n",
            after, (int64_t)after - (int64_t)idle, BOUND_AFTER_KIB, over ? "  OVER" : "");
    if (over)
        bound_failures++;
    sl_client_close(probe.c);
    cu_stop_clean(&srv);
    th_cleanup(&srv);
    for (int ph = 0; ph < PHASES; ph++)
        free(probe.lat[ph]);
    if (bound_failures)
        fail_msg("%u memory figures over their bounds (see above)", bound_failures);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_conn_flood),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
