/* Connection floods against the real sluiced (tcp.max_connections = 1001), with a separate
 * client pinging beside each flood (its latency is printed per phase; nothing is asserted on
 * time):
 *   - slow senders trickling a ping or a token login a byte at a time, each answered in the end;
 *   - 1000 connections open at once beside the probe, each answered; one more is refused
 *     cleanly (closed at accept, the others unharmed); closing one lets a new one in;
 *   - (soak) connections that declare a large frame and stall in its body;
 *   - clients that never read their replies: logged-in ones pipelining 1 MiB polls, others
 *     pipelining pings.
 * Resident memory of the server is read from /proc/<pid>/status before, during and after each
 * phase and printed per connection. With SLUICE_SOAK set (make soak) the phases are larger and
 * slower, and the figures are checked against the bounds below; some of those depend on the
 * connection-limit work (pre-login frame cap, timeouts, reply budget) and may fail until it
 * lands. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
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
#include "harness.h"
#include "raw.h"
#include "wire/cmd_messages.h"
#include "wire/cmd_users.h"
#include "wire/command.h"
#include "wire/header.h"

#define FLOOD       1000u
#define MAX_CONNS   "1001" /* the flood and the probe */
#define ANSWER_MS   30000  /* liveness bound on an answer (not a measurement) */
#define POLL_COUNT  1000u  /* messages per non-reader poll: about 1 MiB */
#define PAYLOAD_LEN 1000u
/* Soak bounds, in KiB of resident memory per connection of each kind, and after all closed. */
#define BOUND_IDLE_KIB    32u
#define BOUND_SLOW_KIB    32u
#define BOUND_STALLED_KIB 64u
#define BOUND_NOREAD_KIB  (2u * 1024u)
#define BOUND_AFTER_KIB   (8u * 1024u)

static th_server_t srv;
static char token[128];
static bool soak;
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

/* RSS once it stops falling, up to 5 s. */
static uint64_t settled_rss(void)
{
    uint64_t last = cu_rss_kib(srv.pid);
    for (int i = 0; i < 25; i++) {
        sleep_ms(200);
        uint64_t now = cu_rss_kib(srv.pid);
        if (now >= last && i >= 2)
            return now;
        last = now;
    }
    return last;
}

/* Prints a per-connection figure and, in soak mode, holds it against its bound. */
static void per_conn(const char *what, uint64_t base, uint64_t rss, uint32_t conns,
                     uint32_t bound_kib)
{
    double each = ((double)rss - (double)base) / conns;
    bool over = each > bound_kib;
    fprintf(stderr,
            "flood: %-38s RSS %" PRIu64 " KiB (%" PRIu64 " before), %.1f KiB per "
            "connection (bound %u)%s\n",
            what, rss, base, each, bound_kib, soak && over ? "  OVER" : "");
    if (soak && over)
        bound_failures++;
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
    per_conn("1000 open connections:", base, settled_rss(), FLOOD, BOUND_IDLE_KIB);

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
    per_conn("slow senders, mid-frame:", base, mid, conns, BOUND_SLOW_KIB);
    for (uint32_t i = 0; i < conns; i++)
        close(fds[i]);
    free(fds);
    free(frames);
    free(len);
}

/* Soak: pre-login connections that declare a 64 MiB frame, send 64 KiB of it and stall. */
static void phase_stalled(void)
{
    uint64_t base = settled_rss();
    atomic_store(&probe.phase, 3);
    uint32_t conns = FLOOD;
    int *fds = calloc(conns, sizeof(int));
    uint8_t *chunk = calloc(1, 65536);
    assert_true(fds && chunk);
    for (uint32_t i = 0; i < conns; i++) {
        fds[i] = th_connect(srv.port);
        uint8_t hdr[SL_HEADER_SIZE];
        sl_request_header_t h = {.size = 64u << 20,
                                 .client = raw_client_id(),
                                 .operation = SL_OP_NON_REPLICATED,
                                 .code = SL_CMD_PING};
        sl_request_header_encode(hdr, &h);
        set_nonblocking(fds[i]);
        /* The server may refuse it (a pre-login frame cap): then the send fails, fine. */
        (void)send(fds[i], hdr, sizeof(hdr), MSG_NOSIGNAL);
        (void)send(fds[i], chunk, 65536, MSG_NOSIGNAL);
    }
    uint64_t rss = settled_rss();
    uint64_t vm = 0;
    char path[64], line[256];
    snprintf(path, sizeof(path), "/proc/%d/status", (int)srv.pid);
    FILE *f = fopen(path, "r");
    while (f && fgets(line, sizeof(line), f))
        if (strncmp(line, "VmSize:", 7) == 0)
            vm = strtoull(line + 7, NULL, 10);
    if (f)
        fclose(f);
    uint32_t open = 0;
    for (uint32_t i = 0; i < conns; i++)
        open += !th_readable(fds[i], 0);
    fprintf(stderr,
            "flood: %u connections stalled in a declared 64 MiB pre-login frame: %u still "
            "open, server VmSize %" PRIu64 " MiB\n",
            conns, open, vm / 1024);
    per_conn("stalled 64 MiB frames (64 KiB sent):", base, rss, conns, BOUND_STALLED_KIB);
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

/* Clients that never read: logged-in ones pipelining big polls, others pipelining pings. */
static void phase_nonreaders(void)
{
    uint64_t base = settled_rss();
    atomic_store(&probe.phase, 4);
    uint32_t pollers = soak ? 200 : 20, pingers = soak ? 200 : 20, polls = 4;
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
    per_conn("unread pings:", base, after_pings, pingers, BOUND_NOREAD_KIB);
    for (uint32_t i = 0; i < pollers; i++) {
        raw_open(raw, srv.port);
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
    per_conn("unread 1 MiB polls:", after_pings, rss, pollers, BOUND_NOREAD_KIB);
    for (uint32_t i = 0; i < pollers + pingers; i++)
        close(fds[i]);
    free(fds);
    free(raw);
}

/* --- the run -------------------------------------------------------------------------------- */

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
    /* sluiced inherits the limit and the setting from this process. */
    raise_nofile(2 * FLOOD + 256);
    setenv("IGGY_TCP_MAX_CONNECTIONS", MAX_CONNS, 1);
    if (!th_start(&srv, NULL)) {
        fprintf(stderr, "io_uring unavailable: skipped\n");
        exit(77);
    }
    unsetenv("IGGY_TCP_MAX_CONNECTIONS");
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
    setup();
    probe.c = cu_connect(&srv);
    assert_int_equal(sl_client_ping(probe.c), 0);
    uint64_t idle = settled_rss();
    fprintf(stderr, "flood: sluiced RSS idle %" PRIu64 " KiB (%s run)\n", idle,
            soak ? "soak" : "short");
    assert_int_equal(pthread_create(&probe.thread, NULL, prober_main, &probe), 0);
    sleep_ms(200);
    phase_slow(); /* first: its connections meet no memory a bigger flood freed */
    phase_flood();
    if (soak)
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
    fprintf(stderr,
            "flood: sluiced RSS after every flood closed %" PRIu64 " KiB (%+" PRId64
            " KiB from idle, bound %u)%s\n",
            after, (int64_t)after - (int64_t)idle, BOUND_AFTER_KIB,
            soak && after > idle + BOUND_AFTER_KIB ? "  OVER" : "");
    if (soak && after > idle + BOUND_AFTER_KIB)
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
