/* libsluice's leader settlement against the real sluiced. A single node
 * lists itself alone, so after every login (password, token, the re-login
 * of a reconnect) the client asks GetClusterMetadata and stays: no second
 * connection, the same session. The three-node cases (moving to the
 * primary, re-settling on 58) need a replicating cluster and come with it. */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
// clang-format off
#include <cmocka.h>
// clang-format on
#include <sluice/client.h>
#include <sluice/error.h>

#include "harness.h"

static th_server_t srv;
static sl_client_t *observer; /* counts the server's connections */

static int start(void **state)
{
    (void)state;
    if (!th_start(&srv, NULL))
        return -1;
    observer = th_client(srv.port, "iggy", "iggy");
    return observer != NULL ? 0 : -1;
}

static int stop(void **state)
{
    (void)state;
    sl_client_close(observer);
    th_stop(&srv, SIGKILL);
    th_cleanup(&srv);
    return 0;
}

static uint32_t clients_on_server(void)
{
    const sl_client_info_t *items;
    uint32_t count = 0;
    assert_int_equal(sl_client_get_clients(observer, &items, &count), 0);
    return count;
}

/* Waits (bounded) until the server counts want connections: a closed
 * connection leaves its list a moment after the close. */
static uint32_t clients_settled_at(uint32_t want)
{
    uint32_t n = clients_on_server();
    for (int i = 0; i < 1000 && n != want; i++) { /* 10 s on a loaded machine */
        struct timespec ts = {0, 10 * 1000000L};
        nanosleep(&ts, NULL);
        n = clients_on_server();
    }
    return n;
}

static sl_client_t *connect_with(sl_client_options_t *o)
{
    o->connect_timeout_ms = 5000;
    o->request_timeout_ms = 20000;
    th_client_options(o);
    sl_client_t *c = NULL;
    assert_int_equal(sl_client_connect("127.0.0.1", srv.port, o, &c), 0);
    return c;
}

static void assert_stayed(sl_client_t *c, const sl_identity_t *id)
{
    sl_session_info_t info;
    sl_client_session_info(c, &info);
    assert_true(info.connected);
    assert_true(info.logged_in);
    /* The answer was read (one node listed) and nothing moved. */
    assert_int_equal(info.cluster_nodes, 1);
    assert_int_equal(info.leader_moves, 0);
    assert_int_equal(info.reconnects, 0);
    if (id != NULL)
        assert_int_equal(info.session, id->session);
    assert_int_equal(sl_client_ping(c), 0);
}

static void test_password_login_stays(void **state)
{
    (void)state;
    uint32_t before = clients_settled_at(1);
    assert_int_equal(before, 1);
    sl_client_options_t o = {0}; /* settlement is on by default */
    sl_client_t *c = connect_with(&o);
    sl_identity_t id;
    assert_int_equal(sl_client_login(c, "iggy", "iggy", &id), 0);
    assert_string_not_equal(id.server_version, "");
    assert_stayed(c, &id);
    /* One more connection, the client's own: none was dialled beside it. */
    assert_int_equal(clients_on_server(), before + 1);
    const sl_client_info_t *me;
    assert_int_equal(sl_client_get_me(c, &me), 0);
    assert_int_equal(me->user_id, id.user_id);
    sl_client_close(c);
    assert_int_equal(clients_settled_at(before), before);
}

static void test_token_login_stays(void **state)
{
    (void)state;
    const char *token;
    assert_int_equal(sl_client_create_token(observer, "settle", 0, &token), 0);
    char copy[256];
    snprintf(copy, sizeof(copy), "%s", token);
    uint32_t before = clients_settled_at(1);
    sl_client_options_t o = {.settle_on_leader = SL_CLIENT_SETTLE_ON};
    sl_client_t *c = connect_with(&o);
    sl_identity_t id;
    assert_int_equal(sl_client_login_token(c, copy, &id), 0);
    assert_stayed(c, &id);
    assert_int_equal(clients_on_server(), before + 1);
    sl_client_close(c);
    assert_int_equal(sl_client_delete_token(observer, "settle"), 0);
}

static void test_relogin_settles_and_stays(void **state)
{
    (void)state;
    uint32_t before = clients_settled_at(1);
    sl_client_options_t o = {.reconnect_attempts = 5, .reconnect_delay_ms = 20};
    sl_client_t *c = connect_with(&o);
    assert_int_equal(sl_client_login(c, "iggy", "iggy", NULL), 0);
    assert_int_equal(sl_client_reconnect(c), 0);
    sl_session_info_t info;
    sl_client_session_info(c, &info);
    assert_int_equal(info.reconnects, 1);
    assert_int_equal(info.relogins, 1);
    assert_int_equal(info.cluster_nodes, 1);
    assert_int_equal(info.leader_moves, 0);
    assert_int_equal(sl_client_ping(c), 0);
    /* The old connection is gone and no other was made. */
    assert_int_equal(clients_settled_at(before + 1), before + 1);
    sl_client_close(c);
}

static void test_settlement_off_asks_nothing(void **state)
{
    (void)state;
    sl_client_options_t o = {.settle_on_leader = SL_CLIENT_SETTLE_OFF};
    sl_client_t *c = connect_with(&o);
    assert_int_equal(sl_client_login(c, "iggy", "iggy", NULL), 0);
    sl_session_info_t info;
    sl_client_session_info(c, &info);
    assert_true(info.logged_in);
    assert_int_equal(info.cluster_nodes, 0); /* no GetClusterMetadata went out */
    assert_int_equal(info.leader_moves, 0);
    sl_client_close(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_password_login_stays),
        cmocka_unit_test(test_token_login_stays),
        cmocka_unit_test(test_relogin_settles_and_stays),
        cmocka_unit_test(test_settlement_off_asks_nothing),
    };
    int rc = cmocka_run_group_tests(tests, start, stop);
    return rc;
}
