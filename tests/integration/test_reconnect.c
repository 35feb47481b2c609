/* libsluice's connection care against the real sluiced: the server is
 * killed and started again (same data directory, same port) between calls
 * and while a call waits, and the client reconnects and logs in again with
 * its password or token; the heartbeat of sl_client_tick keeps a group
 * member alive while a silent one is evicted (StaleClient) and recovers; a
 * group consumer carries on across a restart. Each test has its own server. */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
// clang-format off
#include <cmocka.h>
// clang-format on
#include <sluice/client.h>
#include <sluice/consumer.h>
#include <sluice/error.h>

#include "harness.h"

static th_server_t srv;

static const sl_client_options_t care = {
    .reconnect_attempts = 60,
    .reconnect_delay_ms = 20,
    .reconnect_delay_max_ms = 200,
    .transient_retries = 3,
};

static int start(void **state)
{
    (void)state;
    return th_start(&srv, NULL) ? 0 : -1;
}

static int stop(void **state)
{
    (void)state;
    th_stop(&srv, SIGKILL);
    th_cleanup(&srv);
    return 0;
}

static void pause_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Starts sluiced again on the data directory and the port it had; true
 * once it listens. */
static bool start_again(uint16_t port)
{
    char address[32];
    snprintf(address, sizeof(address), "127.0.0.1:%u", port);
    setenv("IGGY_TCP_ADDRESS", address, 1); /* overrides the file's port 0 */
    th_options_t o = {.data_dir = srv.data_dir};
    bool started = th_start(&srv, &o);
    unsetenv("IGGY_TCP_ADDRESS");
    return started;
}

/* Holds a port nobody listens on: bound, not listening, so a dial to it is
 * refused, and no server of a test running beside this one can take the
 * port meanwhile (one did: its WebSocket door accepted this test's dial,
 * and the "server gone" call failed with -8 instead of -9).
 * The port is the one of a sluiced just killed with SIGKILL, whose listening
 * socket outlives it for a moment (io_uring lets go of it from a kernel
 * worker: SL_LISTEN_RETRY_MS in loop.h, docs/architecture.md), longer on a
 * loaded machine; bind is refused with EADDRINUSE until then, so it is tried
 * again every 20 ms, up to 1500 times (30 s), as sluiced's own start-up does
 * for up to 2 s. (The test failed here, at bind, in 2 of 5 runs with two
 * loops of it side by side.) */
static int hold_port(uint16_t port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(fd >= 0);
    int on = 1;
    assert_int_equal(setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on)), 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int rc = bind(fd, (struct sockaddr *)&a, sizeof(a));
    for (int i = 0; rc != 0 && errno == EADDRINUSE && i < 1500; i++) {
        pause_ms(20);
        rc = bind(fd, (struct sockaddr *)&a, sizeof(a));
    }
    if (rc != 0)
        fail_msg("cannot hold port %u: %s", port, strerror(errno));
    return fd;
}

static void restart(void)
{
    uint16_t port = srv.port;
    assert_true(start_again(port));
    assert_int_equal(srv.port, port);
}

static sl_client_t *connect_as(const sl_client_options_t *o, const char *user, const char *pass)
{
    sl_client_t *c = NULL;
    assert_int_equal(sl_client_connect("127.0.0.1", srv.port, o, &c), 0);
    assert_int_equal(sl_client_login(c, user, pass, NULL), 0);
    return c;
}

static sl_session_info_t info_of(const sl_client_t *c)
{
    sl_session_info_t info;
    sl_client_session_info(c, &info);
    return info;
}

static bool has_stream(sl_client_t *c, const char *name)
{
    const sl_stream_t *list;
    uint32_t n;
    assert_int_equal(sl_client_get_streams(c, &list, &n), 0);
    for (uint32_t i = 0; i < n; i++)
        if (strcmp(list[i].name, name) == 0)
            return true;
    return false;
}

static void test_restart_between_calls(void **state)
{
    (void)state;
    sl_client_t *c = connect_as(&care, "iggy", "iggy");
    sl_client_t *plain = connect_as(NULL, "iggy", "iggy"); /* no care: the old behaviour */
    assert_int_equal(sl_client_create_stream(c, "before", NULL), 0);
    sl_session_info_t first = info_of(c);

    assert_true(th_stop(&srv, SIGKILL) >= 0);
    restart();

    /* A read and a command that changes state, on a new connection and a
     * new session; the stream made before the crash is still there. */
    assert_true(has_stream(c, "before"));
    assert_int_equal(sl_client_create_stream(c, "after", NULL), 0);
    sl_session_info_t now = info_of(c);
    assert_int_equal(now.reconnects, 1);
    assert_int_equal(now.relogins, 1);
    assert_true(now.logged_in);
    assert_false(now.client_id_lo == first.client_id_lo && now.client_id_hi == first.client_id_hi);
    sl_client_close(c);

    /* Without care the connection is simply gone. */
    const sl_stream_t *list;
    uint32_t n;
    int rc = sl_client_get_streams(plain, &list, &n);
    assert_true(rc == -SL_ERR_CONNECTION_CLOSED || rc == -SL_ERR_DISCONNECTED);
    assert_int_equal(sl_client_get_streams(plain, &list, &n), -SL_ERR_NOT_CONNECTED);
    sl_client_close(plain);
}

/* The call runs on a thread while the main thread restarts the server:
 * sluiced is started with PR_SET_PDEATHSIG, which fires when the thread
 * that forked it ends, so the server must come from a thread that lives on. */
typedef struct waiting_call {
    sl_client_t *client;
    int rc;
} waiting_call_t;

static void *ping_while_down(void *arg)
{
    waiting_call_t *w = arg;
    w->rc = sl_client_ping(w->client);
    return NULL;
}

static void test_call_waits_for_the_server(void **state)
{
    (void)state;
    sl_client_t *c = connect_as(&care, "iggy", "iggy");
    uint16_t port = srv.port;
    assert_true(th_stop(&srv, SIGKILL) >= 0);
    /* While it is down the port is held (hold_port): a server of a test
     * running beside this one could otherwise take it, accept the call's
     * dial and then go away (CI saw -8, Disconnected, here). */
    int down = hold_port(port);
    /* The server comes back while the call is dialling with backoff. */
    waiting_call_t w = {.client = c, .rc = 1};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, ping_while_down, &w), 0);
    pause_ms(400);
    close(down);
    bool started = start_again(port);
    pthread_join(t, NULL);
    assert_true(started);
    assert_int_equal(w.rc, 0);
    assert_int_equal(srv.port, port);
    assert_int_equal(info_of(c).reconnects, 1);
    assert_true(info_of(c).logged_in);
    const sl_client_info_t *me;
    assert_int_equal(sl_client_get_me(c, &me), 0);
    assert_int_equal(me->user_id, 0);

    /* Bounded: with the server gone for good, the call gives up. */
    assert_true(th_stop(&srv, SIGKILL) >= 0);
    sl_client_options_t few = {.reconnect_attempts = 3, .reconnect_delay_ms = 10};
    sl_client_t *d = NULL;
    restart();
    d = connect_as(&few, "iggy", "iggy");
    assert_true(th_stop(&srv, SIGKILL) >= 0);
    int held = hold_port(port);
    assert_int_equal(sl_client_ping(d), -SL_ERR_CANNOT_ESTABLISH_CONNECTION);
    assert_false(info_of(d).connected);
    close(held);
    restart();
    assert_int_equal(sl_client_ping(d), 0); /* the next call dials again */
    sl_client_close(d);
    sl_client_close(c);
}

static void test_token_relogin(void **state)
{
    (void)state;
    sl_client_t *root = connect_as(NULL, "iggy", "iggy");
    const char *raw;
    assert_int_equal(sl_client_create_token(root, "reconnect", 0, &raw), 0);
    char token[128];
    snprintf(token, sizeof(token), "%s", raw);
    sl_client_close(root);

    sl_client_t *c = NULL;
    assert_int_equal(sl_client_connect("127.0.0.1", srv.port, &care, &c), 0);
    assert_int_equal(sl_client_login_token(c, token, NULL), 0);
    assert_true(th_stop(&srv, SIGKILL) >= 0);
    restart();
    const sl_client_info_t *me;
    assert_int_equal(sl_client_get_me(c, &me), 0);
    assert_int_equal(me->user_id, 0);
    assert_int_equal(info_of(c).relogins, 1);
    sl_client_close(c);
}

/* lifecycle.md 8 with heartbeat.interval = 1 s: silent members are evicted
 * after 1.2 s; a member whose application ticks is not. */
static void test_heartbeat_keeps_a_member(void **state)
{
    (void)state;
    th_stop(&srv, SIGKILL);
    th_cleanup(&srv);
    th_options_t o = {.extra_config = "[heartbeat]\nenabled = true\ninterval = \"1 s\""};
    assert_true(th_start(&srv, &o));
    sl_client_t *root = connect_as(NULL, "iggy", "iggy");
    assert_int_equal(sl_client_create_stream(root, "hb", NULL), 0);
    assert_int_equal(sl_client_create_topic(root, sl_id_name("hb"), "t", 2, NULL, NULL), 0);
    assert_int_equal(
        sl_client_create_consumer_group(root, sl_id_name("hb"), sl_id_name("t"), "g", NULL), 0);
    sl_client_options_t beating = care;
    beating.heartbeat_interval_ms = 200;
    sl_client_t *alive = connect_as(&beating, "iggy", "iggy");
    sl_client_t *silent = connect_as(&care, "iggy", "iggy");
    assert_int_equal(
        sl_client_join_consumer_group(alive, sl_id_name("hb"), sl_id_name("t"), sl_id_name("g")),
        0);
    assert_int_equal(
        sl_client_join_consumer_group(silent, sl_id_name("hb"), sl_id_name("t"), sl_id_name("g")),
        0);
    for (int i = 0; i < 35; i++) { /* 3.5 s */
        assert_int_equal(sl_client_tick(alive), 0);
        pause_ms(100);
    }
    const sl_consumer_group_t *g;
    assert_int_equal(
        sl_client_get_consumer_group(root, sl_id_name("hb"), sl_id_name("t"), sl_id_name("g"), &g),
        0);
    assert_non_null(g);
    assert_int_equal(g->members_count, 1);
    assert_int_equal(g->members[0].partitions_count, 2); /* all of them, to the live one */

    /* The silent one finds the pushed eviction and the closed connection
     * on its next call, and carries on under a new session, memberless. */
    const sl_client_info_t *me;
    assert_int_equal(sl_client_get_me(silent, &me), 0);
    assert_int_equal(me->groups_count, 0);
    assert_int_equal(info_of(silent).reconnects, 1);
    assert_int_equal(sl_client_get_me(alive, &me), 0);
    assert_int_equal(me->groups_count, 1);
    assert_int_equal(info_of(alive).reconnects, 0);
    assert_true(strstr(th_log(&srv), "reason 13") != NULL);
    sl_client_close(alive);
    sl_client_close(silent);
    sl_client_close(root);
}

/* Sends "<tag>-<i>" for i in [first, first + n) with Balanced partitioning. */
static void send_tagged(sl_client_t *c, const char *tag, uint32_t first, uint32_t n)
{
    for (uint32_t i = first; i < first + n; i++) {
        char text[32];
        int len = snprintf(text, sizeof(text), "%s-%u", tag, i);
        sl_send_message_t m = {.payload = text, .payload_len = (size_t)len};
        assert_int_equal(sl_client_send_messages(c, sl_id_name("cg"), sl_id_name("t"),
                                                 sl_partitioning_balanced(), &m, 1, NULL),
                         0);
    }
}

/* Reads until `want` messages arrived, marking each index seen once. */
static void read_into(sl_message_consumer_t *cn, uint8_t *seen, uint32_t want)
{
    uint32_t got = 0;
    for (int round = 0; got < want && round < 200; round++) {
        sl_polled_messages_t batch;
        assert_int_equal(sl_consumer_poll(cn, 100, &batch), 0);
        for (uint32_t i = 0; i < batch.count; i++) {
            /* Payloads are not NUL-terminated. */
            char text[32];
            const sl_polled_message_t *m = &batch.messages[i];
            assert_true(m->payload_len < sizeof(text));
            memcpy(text, m->payload, m->payload_len);
            text[m->payload_len] = '\0';
            unsigned index;
            assert_int_equal(sscanf(text, "m-%u", &index), 1);
            assert_true(index < 100);
            assert_int_equal(seen[index], 0);
            seen[index] = 1;
            got++;
        }
    }
    assert_int_equal(got, want);
}

static void test_group_consumer_survives_a_restart(void **state)
{
    (void)state;
    sl_client_t *root = connect_as(NULL, "iggy", "iggy");
    assert_int_equal(sl_client_create_stream(root, "cg", NULL), 0);
    assert_int_equal(sl_client_create_topic(root, sl_id_name("cg"), "t", 3, NULL, NULL), 0);
    send_tagged(root, "m", 0, 60);
    sl_client_close(root);

    sl_client_t *c = connect_as(&care, "iggy", "iggy");
    sl_consumer_options_t o = {
        .stream = sl_id_name("cg"),
        .topic = sl_id_name("t"),
        .kind = SL_CONSUMER_KIND_GROUP,
        .consumer_id = sl_id_name("workers"),
        .create_group = true,
        .commit = SL_CONSUMER_COMMIT_AUTO,
    };
    sl_message_consumer_t *cn;
    assert_int_equal(sl_consumer_open(c, &o, &cn), 0);
    uint8_t seen[100] = {0};
    read_into(cn, seen, 60);

    /* A clean stop this time: messages the server had not yet flushed
     * would die with a SIGKILL, and this test is about the consumer. */
    assert_int_equal(th_stop(&srv, SIGTERM), 0);
    restart();
    root = connect_as(NULL, "iggy", "iggy");
    send_tagged(root, "m", 60, 40);
    sl_client_close(root);
    /* Reconnected, logged in again, re-joined, and continued from the
     * group's committed offsets: the other 40, none twice. */
    read_into(cn, seen, 40);
    assert_int_equal(info_of(c).reconnects, 1);
    const uint32_t *parts;
    uint32_t count;
    sl_consumer_partitions(cn, &parts, &count);
    assert_int_equal(count, 3);
    sl_consumer_close(cn);
    sl_client_close(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_restart_between_calls, start, stop),
        cmocka_unit_test_setup_teardown(test_call_waits_for_the_server, start, stop),
        cmocka_unit_test_setup_teardown(test_token_relogin, start, stop),
        cmocka_unit_test_setup_teardown(test_heartbeat_keeps_a_member, start, stop),
        cmocka_unit_test_setup_teardown(test_group_consumer_survives_a_restart, start, stop),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
