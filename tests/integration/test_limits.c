/* No client can pin sluiced's memory or its connection slots (issue 9),
 * against the real server: a connection that has not logged in may not
 * declare more than a login needs; after a login, frames being received
 * share message_bus.receive_memory_max; bare connections are closed after
 * tcp.login_timeout, a trickled frame after tcp.frame_timeout; clients that
 * poll and never read share message_bus.reply_memory_max and are closed
 * after tcp.reply_timeout. Memory is read from /proc/<pid>/status (VmRSS)
 * with the margins stated at each check; waits are for something the test
 * can see (a closed socket, a line in the server's log, a finished
 * thread), bounded only so that a hang becomes a failure. */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
// clang-format off
#include <cmocka.h>
// clang-format on
#include <sluice/client.h>
#include <sluice/error.h>

#include "base/limits.h"
#include "harness.h"
#include "raw.h"
#include "wire/cmd_messages.h"
#include "wire/cmd_users.h"
#include "wire/codec.h"
#include "wire/command.h"

#define MIB (1024u * 1024u)
/* Hang guard of every wait: generous for a loaded machine. */
#define WAIT_MS 60000

/* --- helpers ----------------------------------------------------------------------- */

/* sluiced's resident memory in KiB. */
static long rss_kib(pid_t pid)
{
    char path[64], line[256];
    snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    long kib = -1;
    for (int i = 0; i < 200 && fgets(line, sizeof(line), f); i++)
        if (sscanf(line, "VmRSS: %ld kB", &kib) == 1)
            break;
    fclose(f);
    assert_true(kib > 0);
    return kib;
}

static unsigned count_in_log(th_server_t *srv, const char *needle)
{
    unsigned n = 0;
    for (const char *p = strstr(th_log(srv), needle); p; p = strstr(p + 1, needle))
        n++;
    return n;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Waits until the log holds at least want copies of needle. */
static void wait_log(th_server_t *srv, const char *needle, unsigned want)
{
    for (int i = 0; i < WAIT_MS / 10 && count_in_log(srv, needle) < want; i++)
        sleep_ms(10);
    assert_true(count_in_log(srv, needle) >= want);
}

/* A request header declaring size bytes in all (body not sent). */
static void send_header(int fd, const raw_session_t *r, uint8_t operation, uint32_t code,
                        uint32_t size)
{
    sl_request_header_t h = {
        .size = size,
        .client = r ? r->client : (sl_u128_t){7, 0},
        .request = r ? r->request : 0,
        .operation = operation,
        .session = r ? r->session : 0,
        .code = code,
    };
    uint8_t hdr[SL_HEADER_SIZE];
    sl_request_header_encode(hdr, &h);
    assert_true(th_send_all(fd, hdr, sizeof(hdr)));
}

/* th_start with [tcp] settings, which go through the environment: the
 * harness's file already has a [tcp] table. names and values pair up. */
static bool start_with_tcp(th_server_t *srv, const th_options_t *opt, const char *const *names,
                           const char *const *values, int n)
{
    for (int i = 0; i < n; i++)
        setenv(names[i], values[i], 1);
    bool ok = th_start(srv, opt);
    for (int i = 0; i < n; i++)
        unsetenv(names[i]);
    return ok;
}

static raw_session_t *session_login(uint16_t port)
{
    raw_session_t *r = malloc(sizeof(*r));
    assert_non_null(r);
    raw_open(r, port);
    raw_reply_t rep = raw_login(r, "iggy", "iggy");
    assert_false(rep.evicted || rep.closed);
    assert_int_equal(rep.result, 0);
    return r;
}

static void session_free(raw_session_t *r)
{
    raw_close(r);
    free(r);
}

/* --- before login ------------------------------------------------------------------- */

/* Twenty connections that have not logged in declare 64 MiB frames and
 * start sending the bodies: each is closed at its header and the server's
 * memory stays near idle (without the cap each reserved 64 MiB and took in
 * what arrived). The largest legal login still fits under the cap. */
static void test_unauthenticated_declarations_refused(void **state)
{
    (void)state;
    th_server_t srv;
    /* Nothing but the cap may close them here. */
    const char *names[] = {"IGGY_TCP_LOGIN_TIMEOUT", "IGGY_TCP_FRAME_TIMEOUT"};
    const char *values[] = {"1 h", "1 h"};
    if (!start_with_tcp(&srv, NULL, names, values, 2))
        skip();
    long idle = rss_kib(srv.pid);
    enum { CONNS = 20 };
    int fds[CONNS];
    uint8_t *junk = calloc(1, 4 * MIB);
    assert_non_null(junk);
    for (int i = 0; i < CONNS; i++) {
        fds[i] = th_connect(srv.port);
        send_header(fds[i], NULL, SL_OP_REGISTER, 0, 64 * MIB);
    }
    for (int i = 0; i < CONNS; i++)
        (void)send(fds[i], junk, 4 * MIB, MSG_DONTWAIT | MSG_NOSIGNAL);
    for (int i = 0; i < CONNS; i++) {
        assert_true(th_wait_closed(fds[i], WAIT_MS));
        close(fds[i]);
    }
    free(junk);
    wait_log(&srv, "-byte frame, above the 4096 bytes", CONNS);
    assert_int_equal(count_in_log(&srv, "-byte frame, above the 4096 bytes"), CONNS);
    long grown = rss_kib(srv.pid) - idle;
    fprintf(stderr, "test_limits: RSS %ld KiB idle, %+ld KiB after %d refused declarations\n", idle,
            grown, CONNS);
    assert_true(grown < 16 * 1024); /* 16 MiB of slack for allocator noise */

    /* 255-byte names everywhere: 1288 bytes, under the cap; answered with
     * Eviction 9 (the username is longer than 50), not closed. */
    char name[256];
    memset(name, 'n', 255);
    name[255] = '\0';
    sl_buf_t b;
    sl_buf_init(&b, 0);
    sl_login_register_request_t q = {
        .version = {SL_PROTOCOL_VERSION, sl_span_str(name), sl_span_str(name)},
        .login = {sl_span_str(name), sl_span_str(name), sl_span(NULL, 0)},
    };
    assert_int_equal(sl_login_register_request_encode(&b, &q), 0);
    assert_int_equal(SL_HEADER_SIZE + b.len, SL_HEADER_SIZE + SL_LOGIN_BODY_MAX);
    raw_session_t *r = malloc(sizeof(*r));
    assert_non_null(r);
    raw_open(r, srv.port);
    raw_reply_t rep = raw_call(r, SL_OP_REGISTER, 0, 0, 0, sl_buf_span(&b), true);
    sl_buf_free(&b);
    assert_true(rep.evicted);
    assert_int_equal(rep.reason, SL_EVICT_INVALID_CREDENTIALS);
    session_free(r);

    sl_client_t *c = th_client(srv.port, "iggy", "iggy");
    assert_non_null(c);
    assert_int_equal(sl_client_ping(c), 0);
    sl_client_close(c);
    assert_int_equal(th_stop(&srv, SIGTERM), 0);
    th_cleanup(&srv);
}

/* --- after login: the receive budget ------------------------------------------------ */

#define UPLOADERS   20
#define UPLOAD_BODY (60u * MIB)

typedef struct uploader {
    uint16_t port;
    raw_session_t *r;
    atomic_bool done; /* the whole UPLOAD_BODY was sent */
    atomic_bool ready;
    atomic_uint *finished;
} uploader_t;

/* Logs in, declares a 64 MiB frame and sends 60 MiB of its body, never
 * the rest: a frame that stays open. Blocks while the server reads
 * nothing from it; the test shuts the socket down to end it. */
static void *uploader_main(void *arg)
{
    uploader_t *u = arg;
    static const uint8_t zeros[MIB];
    sl_request_header_t h = {.size = 64 * MIB,
                             .client = u->r->client,
                             .operation = SL_OP_NON_REPLICATED,
                             .session = u->r->session,
                             .code = SL_CMD_PING};
    uint8_t hdr[SL_HEADER_SIZE];
    sl_request_header_encode(hdr, &h);
    bool ok = th_send_all(u->r->fd, hdr, sizeof(hdr));
    for (uint32_t sent = 0; ok && sent < UPLOAD_BODY; sent += MIB)
        ok = th_send_all(u->r->fd, zeros, MIB);
    if (ok) {
        u->done = true;
        (*u->finished)++;
    }
    return NULL;
}

/* Twenty logged-in clients each declare a 64 MiB frame and push 60 MiB of
 * it. With receive_memory_max = 128 MiB two frames are admitted and the
 * other eighteen wait with nothing read from them: once two uploads have
 * gone through, the server holds about 128 MiB more than before (without
 * the budget all twenty were read in parallel: over 1 GiB). A ping, one
 * receive buffer in size, is answered meanwhile. */
static void test_receive_budget_after_login(void **state)
{
    (void)state;
    th_server_t srv;
    /* No frame may time out while the test looks (the two admitted ones
     * never complete). */
    th_options_t opt = {.extra_config = "[message_bus]\nreceive_memory_max = \"128 MiB\"\n"};
    const char *names[] = {"IGGY_TCP_FRAME_TIMEOUT"}, *values[] = {"1 h"};
    if (!start_with_tcp(&srv, &opt, names, values, 1))
        skip();
    uploader_t up[UPLOADERS];
    pthread_t th[UPLOADERS];
    atomic_uint finished = 0;
    for (int i = 0; i < UPLOADERS; i++)
        up[i] = (uploader_t){.port = srv.port, .r = session_login(srv.port), .finished = &finished};
    long idle = rss_kib(srv.pid);
    for (int i = 0; i < UPLOADERS; i++)
        assert_int_equal(pthread_create(&th[i], NULL, uploader_main, &up[i]), 0);
    for (int i = 0; i < WAIT_MS / 10 && finished < 2; i++)
        sleep_ms(10);
    assert_true(finished >= 2);
    long grown = rss_kib(srv.pid) - idle;
    fprintf(stderr, "test_limits: RSS %ld KiB idle, %+ld KiB with %u of %d uploads through\n", idle,
            grown, (unsigned)finished, UPLOADERS);
    /* Two 64 MiB frames, plus 48 MiB for everything else. */
    assert_true(grown < (128 + 48) * 1024);

    sl_client_t *c = th_client(srv.port, "iggy", "iggy");
    assert_non_null(c);
    assert_int_equal(sl_client_ping(c), 0);
    sl_client_close(c);
    assert_true(finished <= 2); /* nobody else got in */

    for (int i = 0; i < UPLOADERS; i++)
        shutdown(up[i].r->fd, SHUT_RDWR);
    for (int i = 0; i < UPLOADERS; i++) {
        assert_int_equal(pthread_join(th[i], NULL), 0);
        session_free(up[i].r);
    }
    assert_int_equal(th_stop(&srv, SIGTERM), 0);
    th_cleanup(&srv);
}

/* --- slots: the login and frame timeouts --------------------------------------------- */

/* max_connections = 50, every slot held by a bare connect (or one that
 * logged out): login_timeout (1 s) closes them and a real client logs in
 * (without the timeout it is turned away for ever). One that stays logged
 * in is not closed. */
static void test_login_timeout_frees_slots(void **state)
{
    (void)state;
    th_server_t srv;
    const char *names[] = {"IGGY_TCP_MAX_CONNECTIONS", "IGGY_TCP_LOGIN_TIMEOUT"};
    const char *values[] = {"50", "1 s"};
    if (!start_with_tcp(&srv, NULL, names, values, 2))
        skip();
    sl_client_t *stays = th_client(srv.port, "iggy", "iggy");
    assert_non_null(stays);
    raw_session_t *leaves = session_login(srv.port);
    raw_reply_t rep = raw_meta(leaves, SL_OP_LOGOUT, sl_span(NULL, 0));
    assert_false(rep.evicted || rep.closed);
    assert_int_equal(rep.status, 0);

    enum { BARE = 48 }; /* with the two above: every slot */
    int fds[BARE];
    for (int i = 0; i < BARE; i++)
        fds[i] = th_connect(srv.port);
    for (int i = 0; i < BARE; i++) {
        assert_true(th_wait_closed(fds[i], WAIT_MS));
        close(fds[i]);
    }
    assert_true(th_wait_closed(leaves->fd, WAIT_MS));
    assert_int_equal(count_in_log(&srv, "closed: no login within 1 s"), BARE + 1);
    session_free(leaves);

    sl_client_t *c = th_client(srv.port, "iggy", "iggy");
    assert_non_null(c);
    assert_int_equal(sl_client_ping(c), 0);
    assert_int_equal(sl_client_ping(stays), 0); /* idle, logged in: kept */
    sl_client_close(c);
    sl_client_close(stays);
    assert_int_equal(th_stop(&srv, SIGTERM), 0);
    th_cleanup(&srv);
}

/* A logged-in client sends a Ping frame one byte per 100 ms: it is closed
 * once frame_timeout (1 s) has passed since the first byte, long before the
 * 25.6 s the frame would take, while another client keeps working. */
static void test_frame_timeout_closes_trickler(void **state)
{
    (void)state;
    th_server_t srv;
    const char *names[] = {"IGGY_TCP_FRAME_TIMEOUT"}, *values[] = {"1 s"};
    if (!start_with_tcp(&srv, NULL, names, values, 1))
        skip();
    raw_session_t *slow = session_login(srv.port);
    sl_client_t *c = th_client(srv.port, "iggy", "iggy");
    assert_non_null(c);
    sl_request_header_t h = {.size = SL_HEADER_SIZE,
                             .client = slow->client,
                             .operation = SL_OP_NON_REPLICATED,
                             .session = slow->session,
                             .code = SL_CMD_PING};
    uint8_t frame[SL_HEADER_SIZE];
    sl_request_header_encode(frame, &h);
    bool closed = false;
    uint32_t sent = 0;
    for (; sent < SL_HEADER_SIZE && !closed; sent++) {
        if (!th_send_all(slow->fd, frame + sent, 1) || th_readable(slow->fd, 100))
            closed = th_wait_closed(slow->fd, WAIT_MS);
        assert_int_equal(sl_client_ping(c), 0);
    }
    assert_true(closed);
    assert_true(sent < SL_HEADER_SIZE);
    assert_int_equal(count_in_log(&srv, "a frame was still incomplete 1000 ms after"), 1);
    session_free(slow);
    assert_int_equal(sl_client_ping(c), 0);
    sl_client_close(c);
    assert_int_equal(th_stop(&srv, SIGTERM), 0);
    th_cleanup(&srv);
}

/* --- replies nobody reads: the reply budget ------------------------------------------- */

/* One 16 MiB record: a poll reply carries at most SL_POLL_REPLY_SLICE (2 MiB) of records
 * unless its first record alone is larger, and these polls must be 16 MiB each. */
#define BIG_BATCHES    1
#define BIG_PER_BATCH  256
#define BIG_PAYLOAD    (64u * 1024u)
#define SMALL_MESSAGES 10
#define SMALL_PAYLOAD  100

/* Stream "r": topic "big" holds 16 MiB (16 batches of 16 x 64 KiB), topic
 * "small" ten 100-byte messages. */
static void make_data(uint16_t port)
{
    sl_client_t *c = th_client(port, "iggy", "iggy");
    assert_non_null(c);
    assert_int_equal(sl_client_create_stream(c, "r", NULL), 0);
    assert_int_equal(sl_client_create_topic(c, sl_id_name("r"), "big", 1, NULL, NULL), 0);
    assert_int_equal(sl_client_create_topic(c, sl_id_name("r"), "small", 1, NULL, NULL), 0);
    uint8_t *payload = calloc(1, BIG_PAYLOAD);
    assert_non_null(payload);
    sl_send_message_t msgs[BIG_PER_BATCH];
    for (uint32_t b = 0; b < BIG_BATCHES; b++) {
        for (uint32_t j = 0; j < BIG_PER_BATCH; j++)
            msgs[j] = (sl_send_message_t){.payload = payload, .payload_len = BIG_PAYLOAD};
        sl_send_result_t res;
        assert_int_equal(sl_client_send_messages(c, sl_id_name("r"), sl_id_name("big"),
                                                 sl_partitioning_partition(0), msgs, BIG_PER_BATCH,
                                                 &res),
                         0);
    }
    for (uint32_t j = 0; j < SMALL_MESSAGES; j++)
        msgs[j] = (sl_send_message_t){.payload = payload, .payload_len = SMALL_PAYLOAD};
    sl_send_result_t res;
    assert_int_equal(sl_client_send_messages(c, sl_id_name("r"), sl_id_name("small"),
                                             sl_partitioning_partition(0), msgs, SMALL_MESSAGES,
                                             &res),
                     0);
    free(payload);
    sl_client_close(c);
}

/* Sends a PollMessages for every message of topic "big" and reads nothing. */
static void send_big_poll(raw_session_t *r)
{
    sl_buf_t b;
    sl_buf_init(&b, 0);
    sl_poll_messages_request_t q = {
        .consumer = {SL_CONSUMER_SINGLE, sl_ident_number(1)},
        .stream_id = sl_ident_name("r"),
        .topic_id = sl_ident_name("big"),
        .partition = {true, 0},
        .strategy = {SL_STRATEGY_OFFSET, 0},
        .count = BIG_BATCHES * BIG_PER_BATCH,
    };
    assert_int_equal(sl_poll_messages_request_encode(&b, &q), 0);
    sl_request_header_t h = {
        .size = (uint32_t)(SL_HEADER_SIZE + b.len),
        .client = r->client,
        .request = r->request,
        .operation = SL_OP_NON_REPLICATED,
        .session = r->session,
        .code = SL_CMD_POLL_MESSAGES,
    };
    uint8_t hdr[SL_HEADER_SIZE];
    sl_request_header_encode(hdr, &h);
    assert_true(th_send_all(r->fd, hdr, sizeof(hdr)));
    assert_true(th_send_all(r->fd, b.data, b.len));
    sl_buf_free(&b);
}

static uint32_t poll_count(sl_client_t *c, const char *topic, uint32_t count)
{
    sl_polled_messages_t out;
    assert_int_equal(sl_client_poll_messages(c, sl_consumer_single(sl_id_num(2)), sl_id_name("r"),
                                             sl_id_name(topic), 0, sl_poll_offset(0), count, false,
                                             &out),
                     0);
    return out.count;
}

#define LAZY 50

/* Fifty logged-in clients poll all 16 MiB of "big" and never read. With
 * reply_memory_max = 64 MiB the server builds the replies that fit (two:
 * each buffer is counted at its capacity, 32 MiB) and parks the rest; its
 * memory grows by about the budget, not by 50 x 16 MiB (800 MiB without
 * it). Another client's ping and its poll of small messages are answered
 * meanwhile. */
static void test_unread_polls_bounded(void **state)
{
    (void)state;
    th_server_t srv;
    th_options_t opt = {.extra_config = "[message_bus]\nreply_memory_max = \"64 MiB\"\n"
                                        "[system.logging]\nlevel = \"debug\"\n"};
    if (!th_start(&srv, &opt))
        skip();
    make_data(srv.port);
    raw_session_t *lazy[LAZY];
    for (int i = 0; i < LAZY; i++)
        lazy[i] = session_login(srv.port);
    long idle = rss_kib(srv.pid);
    for (int i = 0; i < LAZY; i++)
        send_big_poll(lazy[i]);
    /* Every poll is either answered (bytes arrive) or parked (logged). */
    unsigned served = 0, parked = 0;
    for (int t = 0; t < WAIT_MS / 10 && served + parked < LAZY; t++) {
        sleep_ms(10);
        served = 0;
        for (int i = 0; i < LAZY; i++)
            served += th_readable(lazy[i]->fd, 0);
        parked = count_in_log(&srv, "poll parked");
    }
    assert_int_equal(served + parked, LAZY);
    long grown = rss_kib(srv.pid) - idle;
    fprintf(stderr,
            "test_limits: RSS %ld KiB idle, %+ld KiB with %u polls answered and %u parked, "
            "nothing read\n",
            idle, grown, served, parked);
    /* The 64 MiB budget, plus 32 MiB for everything else. */
    assert_true(grown < (64 + 32) * 1024);
    assert_true(served >= 1 && parked >= 1);

    sl_client_t *c = th_client(srv.port, "iggy", "iggy");
    assert_non_null(c);
    assert_int_equal(sl_client_ping(c), 0);
    assert_int_equal(poll_count(c, "small", SMALL_MESSAGES), SMALL_MESSAGES);
    sl_client_close(c);
    for (int i = 0; i < LAZY; i++)
        session_free(lazy[i]);
    assert_int_equal(th_stop(&srv, SIGTERM), 0);
    th_cleanup(&srv);
}

/* reply_timeout = 1 s: ten clients poll 16 MiB each and never read. Those
 * answered are closed once their reply has waited 1 s, which lets the
 * parked ones in turn: all ten end up answered and closed. Then a reader
 * polls everything and gets it. */
static void test_reply_timeout_releases_budget(void **state)
{
    (void)state;
    th_server_t srv;
    th_options_t opt = {.extra_config = "[message_bus]\nreply_memory_max = \"64 MiB\"\n"};
    const char *names[] = {"IGGY_TCP_REPLY_TIMEOUT"}, *values[] = {"1 s"};
    if (!start_with_tcp(&srv, &opt, names, values, 1))
        skip();
    make_data(srv.port);
    enum { FEW = 10 };
    raw_session_t *lazy[FEW];
    for (int i = 0; i < FEW; i++)
        lazy[i] = session_login(srv.port);
    for (int i = 0; i < FEW; i++)
        send_big_poll(lazy[i]);
    /* Reading a reply here would complete it: wait for the server's word
     * first, then check each socket is closed. */
    wait_log(&srv, "closed: its reply was not read within 1000 ms", FEW);
    for (int i = 0; i < FEW; i++)
        assert_true(th_wait_closed(lazy[i]->fd, WAIT_MS));
    assert_int_equal(count_in_log(&srv, "closed: its reply was not read within 1000 ms"), FEW);
    for (int i = 0; i < FEW; i++)
        session_free(lazy[i]);

    sl_client_options_t o = {.request_timeout_ms = WAIT_MS};
    sl_client_t *c = NULL;
    assert_int_equal(sl_client_connect("127.0.0.1", srv.port, &o, &c), 0);
    assert_int_equal(sl_client_login(c, "iggy", "iggy", NULL), 0);
    assert_int_equal(poll_count(c, "big", BIG_BATCHES * BIG_PER_BATCH),
                     BIG_BATCHES * BIG_PER_BATCH);
    sl_client_close(c);
    assert_int_equal(th_stop(&srv, SIGTERM), 0);
    th_cleanup(&srv);
}

/* A budget smaller than the largest frame could never admit it: sluiced
 * refuses to start and says why. */
static void test_budgets_below_max_message_size_refused(void **state)
{
    (void)state;
    th_server_t srv;
    const char *budgets[] = {"[message_bus]\nreceive_memory_max = \"32 MiB\"\n",
                             "[message_bus]\nreply_memory_max = \"32 MiB\"\n"};
    for (int i = 0; i < 2; i++) {
        th_options_t opt = {.extra_config = budgets[i]};
        int status = 0;
        bool started = th_try_start(&srv, &opt, &status);
        if (started)
            th_stop(&srv, SIGKILL);
        assert_false(started);
        assert_non_null(strstr(th_log(&srv), "must be at least message_bus.max_message_size"));
        th_cleanup(&srv);
    }
}

int main(void)
{
    /* These tests count the server's log lines of closed connections (one
     * per connection, dozens at once): every line must be written, so the
     * per-site limit of the log is off for every sluiced started here. */
    setenv("IGGY_SYSTEM_LOGGING_REPEAT_BURST", "0", 1);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_unauthenticated_declarations_refused),
        cmocka_unit_test(test_receive_budget_after_login),
        cmocka_unit_test(test_login_timeout_frees_slots),
        cmocka_unit_test(test_frame_timeout_closes_trickler),
        cmocka_unit_test(test_unread_polls_bounded),
        cmocka_unit_test(test_reply_timeout_releases_budget),
        cmocka_unit_test(test_budgets_below_max_message_size_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
