/* libsluice's leader settlement against the real sluiced. A single node
 * lists itself alone, so after every login (password, token, the re-login
 * of a reconnect) the client asks GetClusterMetadata and stays: no second
 * connection, the same session. Three sluiced in cluster mode: a client of
 * each node ends where that node's answer says (while nothing replicates,
 * each node lists itself alone and the client stays; once the metadata
 * group replicates, it moves to the leader). The failover cases (kill -9
 * of the primary, re-settling on 58) need a replicating cluster and come
 * with it. */
#include <setjmp.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
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
    /* The harness's options turn settlement off; these tests choose. */
    sl_client_settle_t settle = o->settle_on_leader;
    th_client_options(o);
    o->settle_on_leader = settle;
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

/* --- three nodes ---------------------------------------------------------------------- */

#define NODES 3
/* Polls of 20 ms for a cluster to name a leader: 60 s on a loaded machine. */
#define LEADER_POLLS_MAX 3000

typedef struct cluster {
    th_server_t srv[NODES];
    uint16_t tcp[NODES];
    char config[4096];
    char ids[NODES][4];
    const char *args[NODES][4];
} cluster_t;

static void cluster_start(cluster_t *k)
{
    size_t at = (size_t)snprintf(k->config, sizeof(k->config),
                                 "[cluster]\nenabled = true\nname = \"settle\"\n"
                                 "[cluster.auth]\nenabled = true\n"
                                 "shared_secret = \"settle-test-secret-settle-test-secret\"\n");
    for (int i = 0; i < NODES; i++) {
        k->tcp[i] = th_free_port();
        at += (size_t)snprintf(k->config + at, sizeof(k->config) - at,
                               "[[cluster.nodes]]\nname = \"node-%d\"\nip = \"127.0.0.1\"\n"
                               "replica_id = %d\nports = { tcp = %u, tcp_replica = %u }\n",
                               i, i, k->tcp[i], th_free_port());
        assert_true(at < sizeof(k->config));
    }
    for (int i = 0; i < NODES; i++) {
        snprintf(k->ids[i], sizeof(k->ids[i]), "%d", i);
        k->args[i][0] = "--replica-id";
        k->args[i][1] = k->ids[i];
        k->args[i][2] = "--format-cluster"; /* a new cluster's first start */
        k->args[i][3] = NULL;
        th_options_t o = {.extra_config = k->config, .args = k->args[i]};
        if (!th_start(&k->srv[i], &o))
            exit(77);
        assert_int_equal(k->srv[i].port, k->tcp[i]);
    }
}

static void cluster_stop(cluster_t *k)
{
    for (int i = 0; i < NODES; i++) {
        th_stop(&k->srv[i], SIGTERM);
        th_cleanup(&k->srv[i]);
    }
}

/* Logs c in as root; a cluster answers 58 until its group has committed
 * the root user (about one election after the start): retried, 60 s. */
static int login_root(sl_client_t *c)
{
    int rc = -SL_ERR_TRANSIENT_NOT_ACCEPTED;
    for (int i = 0; i < 600 && rc == -SL_ERR_TRANSIENT_NOT_ACCEPTED; i++) {
        rc = sl_client_login(c, "iggy", "iggy", NULL);
        if (rc == -SL_ERR_TRANSIENT_NOT_ACCEPTED) {
            struct timespec ts = {0, 100 * 1000000L};
            nanosleep(&ts, NULL);
        }
    }
    return rc;
}

/* What the node on port answers now, asked with settlement off: the nodes
 * listed, and in *leader the port of the first Leader that is Healthy when
 * two or more are listed (0: none). */
static uint32_t answer_of(uint16_t port, uint16_t *leader)
{
    sl_client_options_t o = {.settle_on_leader = SL_CLIENT_SETTLE_OFF};
    o.connect_timeout_ms = 5000;
    o.request_timeout_ms = 20000;
    sl_client_t *c = NULL;
    assert_int_equal(sl_client_connect("127.0.0.1", port, &o, &c), 0);
    assert_int_equal(login_root(c), 0);
    const sl_cluster_t *m;
    assert_int_equal(sl_client_get_cluster_metadata(c, &m), 0);
    uint32_t count = m->nodes_count;
    *leader = 0;
    for (uint32_t i = 0; count >= 2 && i < count && *leader == 0; i++)
        if (m->nodes[i].role == 0 && m->nodes[i].status == 0)
            *leader = m->nodes[i].tcp_port;
    sl_client_close(c);
    return count;
}

/* A client of any node of a replicating cluster ends on the leader: it
 * moved there when the node it dialled was a backup, and the proof it is
 * there is that a write succeeds (a backup answers writes with 58). */
static void test_client_of_each_node_ends_on_the_leader(void **state)
{
    (void)state;
    cluster_t *k = calloc(1, sizeof(*k));
    assert_non_null(k);
    cluster_start(k);
    /* Node 0 names a leader once the group has elected one. */
    uint16_t leader = 0;
    uint32_t count = answer_of(k->tcp[0], &leader);
    for (int i = 0; i < LEADER_POLLS_MAX && leader == 0; i++) {
        struct timespec ts = {0, 20 * 1000000L};
        nanosleep(&ts, NULL);
        count = answer_of(k->tcp[0], &leader);
    }
    assert_int_equal(count, NODES);
    assert_true(leader != 0);
    for (int i = 0; i < NODES; i++) {
        sl_client_options_t o = {0};
        sl_client_t *c = NULL;
        o.connect_timeout_ms = 5000;
        o.request_timeout_ms = 20000;
        assert_int_equal(sl_client_connect("127.0.0.1", k->tcp[i], &o, &c), 0);
        assert_int_equal(login_root(c), 0);
        sl_session_info_t info;
        sl_client_session_info(c, &info);
        assert_true(info.logged_in);
        assert_int_equal(info.cluster_nodes, NODES);
        assert_int_equal(info.leader_moves, leader != k->tcp[i] ? 1 : 0);
        char name[32];
        snprintf(name, sizeof(name), "settled-%d", i);
        assert_int_equal(sl_client_create_stream(c, name, NULL), 0);
        sl_client_close(c);
    }
    cluster_stop(k);
    free(k);
}

/* A client with reconnects on follows the leader through its death: it
 * settled on the leader, the leader is killed, the next write reconnects to
 * another node of the last cluster answer, settles on the new leader once
 * one is elected, and commits there (a backup would answer it 58). */
static void test_client_follows_the_leader_through_failover(void **state)
{
    (void)state;
    cluster_t *k = calloc(1, sizeof(*k));
    assert_non_null(k);
    cluster_start(k);
    uint16_t leader = 0;
    answer_of(k->tcp[0], &leader);
    for (int i = 0; i < LEADER_POLLS_MAX && leader == 0; i++) {
        struct timespec ts = {0, 20 * 1000000L};
        nanosleep(&ts, NULL);
        answer_of(k->tcp[0], &leader);
    }
    assert_true(leader != 0);
    int dead = 0, dial = 0;
    for (int i = 0; i < NODES; i++)
        if (k->tcp[i] == leader)
            dead = i;
    dial = (dead + 1) % NODES;
    sl_client_options_t o = {.connect_timeout_ms = 5000,
                             .request_timeout_ms = 20000,
                             .reconnect_attempts = 10,
                             .reconnect_delay_ms = 100,
                             .reconnect_delay_max_ms = 1000,
                             .transient_retries = 10};
    sl_client_t *c = NULL;
    assert_int_equal(sl_client_connect("127.0.0.1", k->tcp[dial], &o, &c), 0);
    assert_int_equal(login_root(c), 0);
    sl_session_info_t info;
    sl_client_session_info(c, &info);
    assert_int_equal(info.leader_moves, 1);
    assert_int_equal(sl_client_create_stream(c, "before", NULL), 0);

    th_stop(&k->srv[dead], SIGKILL);
    /* The survivors elect a new leader after cluster.heartbeat_timeout (5 s)
     * and a view change: a call may fail while no node takes writes, so
     * the write is retried, up to 120 s on a loaded machine. */
    int rc = -1;
    for (int i = 0; i < 120 && rc != 0; i++) {
        rc = sl_client_create_stream(c, "after", NULL);
        if (rc == -SL_ERR_STREAM_NAME_ALREADY_EXISTS)
            rc = 0; /* an earlier try committed and its reply was lost */
        if (rc != 0)
            sleep(1);
    }
    assert_int_equal(rc, 0);
    sl_client_session_info(c, &info);
    assert_true(info.leader_moves >= 1);
    assert_true(info.reconnects >= 1);
    /* Both streams are on the survivors. */
    for (int i = 0; i < NODES; i++) {
        if (i == dead)
            continue;
        sl_client_t *r = th_client(k->tcp[i], "iggy", "iggy");
        assert_non_null(r);
        const sl_stream_t *items = NULL;
        uint32_t count = 0;
        int found = 0;
        for (int tries = 0; tries < 600 && found < 2; tries++) {
            assert_int_equal(sl_client_get_streams(r, &items, &count), 0);
            found = 0;
            for (uint32_t j = 0; j < count; j++)
                found += strcmp(items[j].name, "before") == 0 || strcmp(items[j].name, "after") == 0;
            if (found < 2) {
                struct timespec ts = {0, 100 * 1000000L};
                nanosleep(&ts, NULL);
            }
        }
        assert_int_equal(found, 2);
        sl_client_close(r);
    }
    sl_client_close(c);
    for (int i = 0; i < NODES; i++) {
        if (i != dead)
            th_stop(&k->srv[i], SIGTERM);
        th_cleanup(&k->srv[i]);
    }
    free(k);
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
    const struct CMUnitTest cluster_tests[] = {
        cmocka_unit_test(test_client_of_each_node_ends_on_the_leader),
        cmocka_unit_test(test_client_follows_the_leader_through_failover),
    };
    return rc + cmocka_run_group_tests(cluster_tests, NULL, NULL);
}
