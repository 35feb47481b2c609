/* The metadata group with real processes: three sluiced in cluster mode on
 * loopback (docs/cluster.md). The cluster elects a primary; what is created
 * on it appears on both backups; a write to a backup is refused with 58; a
 * login on a backup works (forwarded to the primary); kill -9 of the
 * primary elects another and loses nothing acknowledged; the killed node,
 * restarted over its data directory, catches up; a primary cut off from
 * both others cannot commit, and they elect a new one. The nodes, their
 * rosters and the cutting proxies are cluster.h's.
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
#include "cluster.h"
#include "raw.h"
#include "wire/cmd_users.h"

#define NODES 3
/* Polls of 100 ms: 90 s before a wait fails (a view change takes the
 * heartbeat timeout, 6 s here, and more on a loaded machine). */
#define POLLS_MAX 900

typedef th_cluster_node_t node_t;

/* The cluster whose metadata answers check_roster checks. */
static th_cluster_t *roster_of;

static void pause_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Every cluster metadata answer a leader poll reads: this cluster's name
 * and every node of the roster at its client port. */
static void check_roster(const sl_cluster_t *cl)
{
    assert_int_equal(cl->nodes_count, NODES);
    assert_string_equal(cl->name, "it-meta");
    for (uint32_t i = 0; i < cl->nodes_count; i++)
        assert_int_equal(cl->nodes[i].tcp_port, roster_of->nodes[i].tcp);
}

/* The reference's timing, given explicitly: each node's log says it was read. */
static void assert_timing_read(const node_t *n)
{
    assert_non_null(
        strstr(th_log((th_server_t *)&n->srv), "heartbeat timeout 6000 ms, commit every 400 ms"));
}

static th_cluster_options_t options(bool proxies)
{
    return (th_cluster_options_t){.nodes = NODES,
                                  .name = "it-meta",
                                  .timing = "heartbeat_timeout = \"6 s\"\n"
                                            "commit_broadcast_interval = \"400 ms\"\n",
                                  .proxies = proxies,
                                  .on_metadata = check_roster};
}

static void nodes_start(th_cluster_t *c, bool proxies)
{
    th_cluster_options_t o = options(proxies);
    roster_of = c;
    if (!th_cluster_start(c, &o))
        exit(77);
    for (int i = 0; i < NODES; i++)
        assert_timing_read(&c->nodes[i]);
}

/* Node i again over its own data directory. */
static void node_restart(th_cluster_t *c, int i)
{
    if (!th_cluster_restart(c, i))
        exit(77);
    assert_timing_read(&c->nodes[i]);
}

/* Polls until every live node not in skip names the same single Leader,
 * other than `except` (-1: any); returns it. */
static int wait_leader(th_cluster_t *c, unsigned skip, int except)
{
    for (int p = 0; p < POLLS_MAX; p++) {
        int leader = th_cluster_wait_leader(c, skip, 1);
        if (leader >= 0 && leader != except)
            return leader;
        if (leader >= 0)
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
    sl_client_t *c = th_cluster_client(n);
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
    sl_client_options_t o = {.transient_retries = 200,
                             .transient_delay_ms = 20,
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
        c = th_cluster_client(&nodes[i]);
        sl_polled_messages_t out = {0};
        for (int p = 0; p < POLLS_MAX && out.count == 0; p++) {
            assert_int_equal(sl_client_poll_messages(c, sl_consumer_single(sl_id_num(1)),
                                                     sl_id_name(stream), sl_id_name(topic), 0,
                                                     sl_poll_offset(r.base_offset), 1, false, &out),
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
    th_cluster_t cluster;
    node_t *nodes = cluster.nodes;
    nodes_start(&cluster, false);

    int leader = wait_leader(&cluster, 0u, -1);
    sl_client_t *c = th_cluster_client(&nodes[leader]);
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
    c = th_cluster_client(&nodes[backup]);
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
    th_cluster_stop_node(&cluster, leader, SIGKILL);
    int second = wait_leader(&cluster, 0u, leader);
    assert_int_not_equal(second, leader);
    c = th_cluster_client(&nodes[second]);
    assert_true(has_stream(c, "orders"));
    assert_int_equal(sl_client_create_stream(c, "after-failover", NULL), 0);
    sl_client_close(c);
    for (int i = 0; i < NODES; i++)
        if (nodes[i].alive)
            wait_stream(&nodes[i], "after-failover", "alice");

    /* The killed node comes back over its own data directory and catches
     * up from the others. */
    node_restart(&cluster, leader);
    assert_int_equal(wait_stream(&nodes[leader], "orders", "alice"), stream_id);
    wait_stream(&nodes[leader], "after-failover", NULL);
    th_cluster_stop(&cluster);
}

/* The primary cut off from both others (every link between replicas goes
 * through a proxy: node i dials each higher node j through a proxy of
 * cluster.h). */
static void test_partitioned_primary(void **state)
{
    (void)state;
    th_cluster_t cluster;
    node_t *nodes = cluster.nodes;
    nodes_start(&cluster, true);
    int leader = wait_leader(&cluster, 0u, -1);
    sl_client_t *c = th_cluster_client(&nodes[leader]);
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
    th_cluster_cut(&cluster, leader, TH_CUT_BOTH);
    /* Alone, it cannot commit: no success, whatever else it answers. */
    assert_int_not_equal(sl_client_create_stream(c, "lonely", NULL), 0);
    sl_client_close(c);
    /* The two others elect one of them (the cut node may still call itself
     * Leader: only the two are asked). */
    int second = wait_leader(&cluster, 1u << leader, leader);
    c = th_cluster_client(&nodes[second]);
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
    th_cluster_cut(&cluster, leader, TH_CUT_NONE);
    wait_stream(&nodes[leader], "after-cut", NULL);
    c = th_cluster_client(&nodes[leader]);
    assert_false(has_stream(c, "lonely"));
    sl_client_close(c);
    th_cluster_stop(&cluster);
}

/* Node 0's start is refused with `why` in its log (exit status 1). srv:
 * where it runs; on a restart (data_dir set) the server that used that
 * directory, as the harness wants. */
static void assert_refused(node_t *nodes, th_server_t *srv, const char *extra, const char *data_dir,
                           bool no_root, const char *why)
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
    th_cluster_t cluster;
    th_cluster_options_t co = options(false);
    th_cluster_configure(&cluster, &co); /* node 0's file; nothing started */
    node_t *nodes = cluster.nodes;

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
