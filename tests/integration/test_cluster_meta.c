/* The metadata group with real processes: three sluiced in cluster mode on
 * loopback (docs/cluster.md). The cluster elects a primary; what is created
 * on it appears on both backups; a write to a backup is refused with 58; a
 * login on a backup works (forwarded to the primary); kill -9 of the
 * primary elects another and loses nothing acknowledged; the killed node,
 * restarted over its data directory, catches up; a primary cut off from both others cannot commit, and they elect a
 * new one.
 *
 * Every wait polls with a deadline of a count of polls (a minute or more on
 * a loaded machine); nothing asserts on how long anything took. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

// clang-format off
#include <cmocka.h>
// clang-format on

#include <sluice/client.h>
#include <sluice/error.h>

#include "harness.h"
#include "proxy.h"
#include "raw.h"
#include "wire/cmd_users.h"

#define NODES 3
/* Polls of 100 ms: 90 s before a wait fails (a view change takes the
 * heartbeat timeout, 5 s, and more on a loaded machine). */
#define POLLS_MAX 900

static const char secret[] = "5e2b7c9a1d3f4e6a8b0c2d4e6f8a1b3c";

typedef struct node {
    th_server_t srv;
    bool alive;
    uint16_t tcp, replica;
    char config[4096];
    char id[4];
    const char *args[4];
} node_t;

static void pause_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Node `self`'s file: where it dials each higher node is seen[j] (a proxy's
 * port, or the node's own replica port). */
static void node_config(node_t nodes[NODES], int self, const uint16_t seen[NODES])
{
    node_t *n = &nodes[self];
    size_t cap = sizeof(n->config);
    /* The reference's timing, given explicitly: the log says it was read. */
    size_t at = (size_t)snprintf(n->config, cap,
                                 "[cluster]\nenabled = true\nname = \"it-meta\"\n"
                                 "heartbeat_timeout = \"6 s\"\n"
                                 "commit_broadcast_interval = \"400 ms\"\n"
                                 "[cluster.auth]\nenabled = true\nshared_secret = \"%s\"\n",
                                 secret);
    for (int j = 0; j < NODES && at < cap; j++)
        at += (size_t)snprintf(n->config + at, cap - at,
                               "[[cluster.nodes]]\nname = \"node-%d\"\nip = \"127.0.0.1\"\n"
                               "replica_id = %d\nports = { tcp = %u, tcp_replica = %u }\n",
                               j, j, nodes[j].tcp, seen[j]);
    assert_true(at < cap);
}

static void node_run(node_t *n, int id, const char *data_dir)
{
    snprintf(n->id, sizeof(n->id), "%d", id);
    n->args[0] = "--replica-id";
    n->args[1] = n->id;
    /* A new cluster's first start formats; a restart recovers. */
    n->args[2] = data_dir ? NULL : "--format-cluster";
    n->args[3] = NULL;
    th_options_t o = {.extra_config = n->config, .args = n->args, .data_dir = data_dir};
    if (!th_start(&n->srv, &o))
        exit(77);
    assert_int_equal(n->srv.port, n->tcp);
    assert_non_null(strstr(th_log(&n->srv), "heartbeat timeout 6000 ms, commit every 400 ms"));
    n->alive = true;
}

static void nodes_start(node_t nodes[NODES], const uint16_t seen[NODES][NODES])
{
    for (int i = 0; i < NODES; i++)
        node_config(nodes, i, seen[i]);
    for (int i = 0; i < NODES; i++)
        node_run(&nodes[i], i, NULL);
}

static void nodes_stop(node_t nodes[NODES])
{
    for (int i = 0; i < NODES; i++) {
        if (nodes[i].alive)
            th_stop(&nodes[i].srv, SIGTERM);
        th_cleanup(&nodes[i].srv);
    }
}

/* A logged-in client of node n, or NULL while it cannot log in yet (no root
 * user applied there yet, no primary to forward the login to). Settlement
 * off (th_client_connect): the client stays on the node it dialled, whose
 * answers are the point. */
static sl_client_t *try_login(const node_t *n)
{
    sl_client_t *c = NULL;
    if (th_client_connect(n->tcp, &c) != 0)
        return NULL;
    if (sl_client_login(c, "iggy", "iggy", NULL) != 0) {
        sl_client_close(c);
        return NULL;
    }
    return c;
}

static sl_client_t *login(const node_t *n)
{
    sl_client_t *c = th_client_when_ready((th_server_t *)&n->srv, n->tcp);
    assert_non_null(c);
    return c;
}

/* The index of the node n reports as Leader when it reports exactly one,
 * -1 otherwise; every node listed is checked against the roster. */
static int leader_seen_by(const node_t *n, const node_t nodes[NODES])
{
    sl_client_t *c = try_login(n);
    if (!c)
        return -1;
    const sl_cluster_t *cl = NULL;
    int leader = -1, leaders = 0;
    if (sl_client_get_cluster_metadata(c, &cl) == 0) {
        assert_int_equal(cl->nodes_count, NODES);
        assert_string_equal(cl->name, "it-meta");
        for (uint32_t i = 0; i < cl->nodes_count; i++) {
            assert_int_equal(cl->nodes[i].tcp_port, nodes[i].tcp);
            if (cl->nodes[i].role == 0) {
                leader = (int)i;
                leaders++;
            }
        }
    }
    sl_client_close(c);
    return leaders == 1 ? leader : -1;
}

/* Polls until every live node names the same single Leader, other than
 * `not` (-1: any); returns it. */
static int wait_leader(const node_t nodes[NODES], int not)
{
    for (int p = 0; p < POLLS_MAX; p++) {
        int agreed = -2;
        for (int i = 0; i < NODES && agreed != -1; i++) {
            if (!nodes[i].alive)
                continue;
            int l = leader_seen_by(&nodes[i], nodes);
            agreed = (agreed == -2 || agreed == l) ? l : -1;
        }
        if (agreed >= 0 && agreed != not && nodes[agreed].alive)
            return agreed;
        pause_ms(100);
    }
    fail_msg("the live nodes did not agree on one leader");
    return -1;
}

static bool has_stream(sl_client_t *c, const char *name)
{
    const sl_stream_t *st = NULL;
    return sl_client_get_stream(c, sl_id_name(name), &st) == 0 && st != NULL;
}

/* Polls node n until it shows stream `name` (and, when user is not NULL,
 * that user); returns the stream's id. */
static uint32_t wait_stream(const node_t *n, const char *name, const char *user)
{
    sl_client_t *c = login(n);
    for (int p = 0; p < POLLS_MAX; p++) {
        const sl_stream_t *st = NULL;
        const sl_user_t *u = NULL;
        if (sl_client_get_stream(c, sl_id_name(name), &st) == 0 && st &&
            (!user || sl_client_get_user(c, sl_id_name(user), &u) == 0)) {
            uint32_t id = st->id;
            sl_client_close(c);
            return id;
        }
        pause_ms(100);
    }
    fail_msg("stream %s did not appear on the node on port %u", name, n->tcp);
    return 0;
}

/* Every node opened the topic's partition when it applied CreateTopic (the
 * same effects on partitions as single-node mode), and its partition group
 * with it: a send on the leader lands (retried while the partition's
 * primary moves to the leader), and every node serves it. */
static void assert_partition_open(const node_t nodes[NODES], int leader, const char *stream,
                                  const char *topic)
{
    sl_client_options_t o = {.transient_retries = 200, .transient_delay_ms = 20,
                             .settle_on_leader = SL_CLIENT_SETTLE_OFF};
    th_client_options(&o);
    sl_client_t *c = NULL;
    assert_int_equal(sl_client_connect("127.0.0.1", nodes[leader].tcp, &o, &c), 0);
    assert_int_equal(sl_client_login(c, "iggy", "iggy", NULL), 0);
    sl_send_message_t m = {.payload = "hello", .payload_len = 5};
    sl_send_result_t r;
    assert_int_equal(sl_client_send_messages(c, sl_id_name(stream), sl_id_name(topic),
                                             sl_partitioning_partition(0), &m, 1, &r),
                     0);
    assert_true(r.confirmed);
    sl_client_close(c);
    for (int i = 0; i < NODES; i++) {
        c = login(&nodes[i]);
        sl_polled_messages_t out = {0};
        for (int p = 0; p < POLLS_MAX && out.count == 0; p++) {
            assert_int_equal(sl_client_poll_messages(c, sl_consumer_single(sl_id_num(1)),
                                                     sl_id_name(stream), sl_id_name(topic), 0,
                                                     sl_poll_offset(r.base_offset), 1, false,
                                                     &out),
                             0);
            if (out.count == 0)
                pause_ms(100);
        }
        assert_int_equal(out.count, 1);
        assert_memory_equal(out.messages[0].payload, "hello", 5);
        sl_client_close(c);
    }
}

static void test_replicated_metadata_and_failover(void **state)
{
    (void)state;
    node_t nodes[NODES];
    memset(nodes, 0, sizeof(nodes));
    for (int i = 0; i < NODES; i++) {
        nodes[i].tcp = th_free_port();
        nodes[i].replica = th_free_port();
    }
    uint16_t seen[NODES][NODES];
    for (int i = 0; i < NODES; i++)
        for (int j = 0; j < NODES; j++)
            seen[i][j] = nodes[j].replica;
    nodes_start(nodes, seen);

    int leader = wait_leader(nodes, -1);
    sl_client_t *c = login(&nodes[leader]);
    const sl_stream_t *st = NULL;
    assert_int_equal(sl_client_create_stream(c, "orders", &st), 0);
    uint32_t stream_id = st->id;
    assert_int_equal(sl_client_create_topic(c, sl_id_name("orders"), "paid", 1, NULL, NULL), 0);
    assert_int_equal(sl_client_create_user(c, "alice", "secret-1", 1, NULL, NULL), 0);
    /* The raw token is in the reply: the node that admitted it adds it. */
    const char *raw = NULL;
    assert_int_equal(sl_client_create_token(c, "ci", 0, &raw), 0);
    assert_non_null(raw);
    char token[128];
    snprintf(token, sizeof(token), "%s", raw);
    assert_true(strlen(token) > 20);
    sl_client_close(c);

    /* Every node applies it, partition directory included. */
    for (int i = 0; i < NODES; i++)
        assert_int_equal(wait_stream(&nodes[i], "orders", "alice"), stream_id);
    assert_partition_open(nodes, leader, "orders", "paid");

    /* A backup refuses a write with 58 (the client goes to the leader). */
    int backup = (leader + 1) % NODES;
    c = login(&nodes[backup]);
    assert_int_equal(sl_client_create_stream(c, "refused", NULL), -SL_ERR_TRANSIENT_NOT_ACCEPTED);
    assert_false(has_stream(c, "refused"));
    sl_client_close(c);
    /* The new user logs in on a backup: credentials checked there, the
     * session committed by the primary. */
    sl_client_t *alice = NULL;
    sl_client_options_t o = {.connect_timeout_ms = 5000,
                             .request_timeout_ms = 20000,
                             .settle_on_leader = SL_CLIENT_SETTLE_OFF};
    th_client_options(&o);
    assert_int_equal(sl_client_connect("127.0.0.1", nodes[backup].tcp, &o, &alice), 0);
    assert_int_equal(sl_client_login(alice, "alice", "secret-1", NULL), 0);
    sl_client_close(alice);
    /* So does the token, checked against the digest the backup applied
     * (polled: the backup applies the token's op a heartbeat later). */
    sl_client_t *bot = NULL;
    bool in = false;
    for (int p = 0; p < POLLS_MAX && !in; p++) {
        assert_int_equal(sl_client_connect("127.0.0.1", nodes[backup].tcp, &o, &bot), 0);
        in = sl_client_login_token(bot, token, NULL) == 0;
        if (!in) {
            sl_client_close(bot);
            pause_ms(100);
        }
    }
    assert_true(in);
    assert_true(has_stream(bot, "orders"));
    sl_client_close(bot);

    /* kill -9 the primary: another is elected and nothing is lost. */
    th_stop(&nodes[leader].srv, SIGKILL);
    nodes[leader].alive = false;
    int second = wait_leader(nodes, leader);
    assert_int_not_equal(second, leader);
    c = login(&nodes[second]);
    assert_true(has_stream(c, "orders"));
    assert_int_equal(sl_client_create_stream(c, "after-failover", NULL), 0);
    sl_client_close(c);
    for (int i = 0; i < NODES; i++)
        if (nodes[i].alive)
            wait_stream(&nodes[i], "after-failover", "alice");

    /* The killed node comes back over its own data directory and catches
     * up from the others. */
    node_run(&nodes[leader], leader, nodes[leader].srv.data_dir);
    assert_int_equal(wait_stream(&nodes[leader], "orders", "alice"), stream_id);
    wait_stream(&nodes[leader], "after-failover", NULL);
    nodes_stop(nodes);
}

/* The primary cut off from both others (every link between replicas goes
 * through a proxy: node i dials each higher node j through proxy[i][j]). */
static void test_partitioned_primary(void **state)
{
    (void)state;
    node_t nodes[NODES];
    memset(nodes, 0, sizeof(nodes));
    for (int i = 0; i < NODES; i++) {
        nodes[i].tcp = th_free_port();
        nodes[i].replica = th_free_port();
    }
    th_proxy_t *proxy[NODES][NODES] = {{NULL}};
    uint16_t seen[NODES][NODES];
    for (int i = 0; i < NODES; i++) {
        for (int j = 0; j < NODES; j++) {
            seen[i][j] = nodes[j].replica;
            if (i < j) {
                proxy[i][j] = th_proxy_start(nodes[j].replica);
                seen[i][j] = th_proxy_port(proxy[i][j]);
            }
        }
    }
    nodes_start(nodes, seen);
    int leader = wait_leader(nodes, -1);
    sl_client_t *c = login(&nodes[leader]);
    assert_int_equal(sl_client_create_stream(c, "before-cut", NULL), 0);
    sl_client_close(c);
    for (int i = 0; i < NODES; i++)
        wait_stream(&nodes[i], "before-cut", NULL);

    /* A raw session on the primary, logged in before the cut (below). */
    raw_session_t a, b;
    raw_open(&a, nodes[leader].tcp);
    raw_reply_t ra = raw_login(&a, "iggy", "iggy");
    assert_false(ra.evicted || ra.closed);
    assert_int_equal(ra.result, 0);
    /* A client on the primary, logged in before the cut; its request may
     * wait for the whole timeout. */
    sl_client_options_t o = {.connect_timeout_ms = 5000, .request_timeout_ms = 3000};
    th_client_options(&o);
    assert_int_equal(sl_client_connect("127.0.0.1", nodes[leader].tcp, &o, &c), 0);
    assert_int_equal(sl_client_login(c, "iggy", "iggy", NULL), 0);
    for (int i = 0; i < NODES; i++)
        for (int j = i + 1; j < NODES; j++)
            if (i == leader || j == leader)
                th_proxy_cut(proxy[i][j]);
    /* Alone, it cannot commit: no success, whatever else it answers. */
    assert_int_not_equal(sl_client_create_stream(c, "lonely", NULL), 0);
    sl_client_close(c);
    /* The two others elect one of them (the cut node may still call itself
     * Leader: only the two are asked). */
    nodes[leader].alive = false;
    int second = wait_leader(nodes, leader);
    c = login(&nodes[second]);
    assert_false(has_stream(c, "lonely"));
    assert_int_equal(sl_client_create_stream(c, "after-cut", NULL), 0);
    sl_client_close(c);

    /* Two connections of one client id on the cut-off primary: B's login
     * waits in the pipeline (no quorum) when A closes, and A's Logout on
     * disconnect is refused at once (57: a prepare of the client is in
     * flight). That answer is A's: B must not get it as its login's
     * (regression: the session waiting with the client id got it). */
    raw_open(&b, nodes[leader].tcp);
    b.client = a.client;
    sl_buf_t login_body;
    sl_buf_init(&login_body, 0);
    sl_login_register_request_t q = {
        .version = {SL_PROTOCOL_VERSION, sl_span_str("sluice-tests"), sl_span_str("0.1.0")},
        .login = {sl_span_str("iggy"), sl_span_str("iggy"), sl_span(NULL, 0)},
    };
    assert_int_equal(sl_login_register_request_encode(&login_body, &q), 0);
    assert_true(raw_send(&b, SL_OP_REGISTER, 0, 0, 0, sl_buf_span(&login_body), true));
    sl_buf_free(&login_body);
    pause_ms(1000); /* B's password check and submission (if later, the test proves less) */
    raw_close(&a);
    raw_reply_t rb = raw_receive(&b, 3000);
    assert_true(rb.closed || rb.evicted || rb.header.operation == SL_OP_REGISTER);
    raw_close(&b);

    /* Healed, the old primary follows the new view: the op it could not
     * commit is gone, what the others committed arrives. */
    for (int i = 0; i < NODES; i++)
        for (int j = i + 1; j < NODES; j++)
            if (proxy[i][j])
                th_proxy_restore(proxy[i][j]);
    nodes[leader].alive = true;
    wait_stream(&nodes[leader], "after-cut", NULL);
    c = login(&nodes[leader]);
    assert_false(has_stream(c, "lonely"));
    sl_client_close(c);
    nodes_stop(nodes);
    for (int i = 0; i < NODES; i++)
        for (int j = 0; j < NODES; j++)
            if (proxy[i][j])
                th_proxy_stop(proxy[i][j]);
}

/* Node 0's start is refused with `why` in its log (exit status 1). srv:
 * where it runs; on a restart (data_dir set) the server that used that
 * directory, as the harness wants. */
static void assert_refused(node_t nodes[NODES], th_server_t *srv, const char *extra,
                           const char *data_dir, bool no_root, const char *why)
{
    node_t *n = &nodes[0];
    char config[8192];
    snprintf(config, sizeof(config), "%s%s", n->config, extra);
    snprintf(n->id, sizeof(n->id), "0");
    n->args[0] = "--replica-id";
    n->args[1] = n->id;
    n->args[2] = NULL;
    th_options_t o = {.extra_config = config,
                      .args = n->args,
                      .data_dir = data_dir,
                      .no_root_credentials = no_root};
    int status = 0;
    /* The client port is bound before the data directory is looked at, so
     * the harness may see it listen: then SIGTERM, which a refused start
     * does not change (it exits 1 either way; a started node would exit 0). */
    if (th_try_start(srv, &o, &status))
        status = th_stop(srv, SIGTERM);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 1);
    if (!strstr(th_log(srv), why))
        fail_msg("\"%s\" not in the log:\n%s", why, th_log(srv));
}

/* What cluster mode refuses to start with (docs/cluster.md): a data
 * directory with single-node metadata, at-rest encryption, and root
 * credentials left to a generated password. */
static void test_refusals(void **state)
{
    (void)state;
    node_t nodes[NODES];
    memset(nodes, 0, sizeof(nodes));
    uint16_t seen[NODES];
    for (int i = 0; i < NODES; i++) {
        nodes[i].tcp = th_free_port();
        seen[i] = nodes[i].replica = th_free_port();
    }
    node_config(nodes, 0, seen);

    /* A single-node server's data directory. */
    th_server_t single;
    th_options_t so = {0};
    if (!th_start(&single, &so))
        exit(77);
    sl_client_t *c = th_client(single.port, "iggy", "iggy");
    assert_non_null(c);
    assert_int_equal(sl_client_create_stream(c, "kept", NULL), 0);
    sl_client_close(c);
    th_stop(&single, SIGTERM);
    assert_refused(nodes, &single, "", single.data_dir, false,
                   "holds the metadata of a single-node server");
    /* ... which is left as it was: single-node mode still serves it. */
    so.data_dir = single.data_dir;
    so.extra_config = "\n"; /* the file again, without [cluster] */
    assert_true(th_start(&single, &so));
    c = th_client(single.port, "iggy", "iggy");
    assert_non_null(c);
    assert_true(has_stream(c, "kept"));
    sl_client_close(c);
    th_stop(&single, SIGTERM);
    th_cleanup(&single);

    assert_refused(nodes, &nodes[0].srv,
                   "[system.encryption]\nenabled = true\n"
                   "key = \"AQIDBAUGBwgJCgsMDQ4PEBESExQVFhcYGRobHB0eHyA=\"\n",
                   NULL, false, "cluster mode with system.encryption.enabled is not supported");
    th_cleanup(&nodes[0].srv);
    assert_refused(nodes, &nodes[0].srv, "", NULL, true,
                   "cluster mode needs the root credentials given");
    th_cleanup(&nodes[0].srv);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_replicated_metadata_and_failover),
        cmocka_unit_test(test_partitioned_primary),
        cmocka_unit_test(test_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
