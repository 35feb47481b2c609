/* The metadata group on durable storage, with real processes: three sluiced
 * in cluster mode on loopback (docs/cluster.md, "What survives what").
 *   - a backup killed with SIGKILL and restarted over its data directory
 *     recovers from its own journal (not by state transfer) and gets the
 *     operations committed while it was down;
 *   - the primary killed and restarted rejoins as a backup of the new view;
 *   - all three killed at once and restarted: every acknowledged create is
 *     there, and the cluster commits again;
 *   - a node whose data directory is wiped, restarted without
 *     --format-cluster, starts as a lost disk, catches up, and then counts
 *     in a quorum;
 *   - a metadata request too large for a journal slot gets InvalidFormat;
 *   - a roster of one node is refused.
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

#define NODES 3
/* Polls of 100 ms: 90 s before a wait fails. */
#define POLLS_MAX 900

static const char secret[] = "0b7e3c5a9d1f2e4a6c8b0d2f4e6a8c1b";

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

static void node_config(node_t nodes[NODES], int self)
{
    node_t *n = &nodes[self];
    size_t cap = sizeof(n->config);
    size_t at = (size_t)snprintf(n->config, cap,
                                 "[cluster]\nenabled = true\nname = \"it-durable\"\n"
                                 "[cluster.auth]\nenabled = true\nshared_secret = \"%s\"\n",
                                 secret);
    for (int j = 0; j < NODES && at < cap; j++)
        at += (size_t)snprintf(n->config + at, cap - at,
                               "[[cluster.nodes]]\nname = \"node-%d\"\nip = \"127.0.0.1\"\n"
                               "replica_id = %d\nports = { tcp = %u, tcp_replica = %u }\n",
                               j, j, nodes[j].tcp, nodes[j].replica);
    assert_true(at < cap);
}

/* Starts node id over data_dir (NULL: a new one), with --format-cluster
 * when format is set. */
static void node_run(node_t *n, int id, const char *data_dir, bool format)
{
    snprintf(n->id, sizeof(n->id), "%d", id);
    n->args[0] = "--replica-id";
    n->args[1] = n->id;
    n->args[2] = format ? "--format-cluster" : NULL;
    n->args[3] = NULL;
    th_options_t o = {.extra_config = n->config, .args = n->args, .data_dir = data_dir};
    if (!th_start(&n->srv, &o))
        exit(77);
    assert_int_equal(n->srv.port, n->tcp);
    n->alive = true;
}

static void nodes_start(node_t nodes[NODES])
{
    memset(nodes, 0, sizeof(node_t) * NODES);
    for (int i = 0; i < NODES; i++) {
        nodes[i].tcp = th_free_port();
        nodes[i].replica = th_free_port();
    }
    for (int i = 0; i < NODES; i++)
        node_config(nodes, i);
    for (int i = 0; i < NODES; i++)
        node_run(&nodes[i], i, NULL, true);
}

static void node_kill(node_t *n)
{
    th_stop(&n->srv, SIGKILL);
    n->alive = false;
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
 * -1 otherwise. */
static int leader_seen_by(const node_t *n)
{
    sl_client_t *c = try_login(n);
    if (!c)
        return -1;
    const sl_cluster_t *cl = NULL;
    int leader = -1, leaders = 0;
    if (sl_client_get_cluster_metadata(c, &cl) == 0) {
        assert_int_equal(cl->nodes_count, NODES);
        for (uint32_t i = 0; i < cl->nodes_count; i++) {
            if (cl->nodes[i].role == 0) {
                leader = (int)i;
                leaders++;
            }
        }
    }
    sl_client_close(c);
    return leaders == 1 ? leader : -1;
}

/* Polls until every live node names the same single live Leader, other
 * than `not` (-1: any); returns it. */
static int wait_leader(const node_t nodes[NODES], int not)
{
    for (int p = 0; p < POLLS_MAX; p++) {
        int agreed = -2;
        for (int i = 0; i < NODES && agreed != -1; i++) {
            if (!nodes[i].alive)
                continue;
            int l = leader_seen_by(&nodes[i]);
            agreed = (agreed == -2 || agreed == l) ? l : -1;
        }
        if (agreed >= 0 && agreed != not && nodes[agreed].alive)
            return agreed;
        pause_ms(100);
    }
    fail_msg("the live nodes did not agree on one leader");
    return -1;
}

/* Polls node n until it shows stream `name` (and, when user is not NULL,
 * that user, and when topic is not NULL, that topic in it). */
static void wait_meta(const node_t *n, const char *name, const char *topic, const char *user)
{
    sl_client_t *c = login(n);
    for (int p = 0; p < POLLS_MAX; p++) {
        const sl_stream_t *st = NULL;
        const sl_topic_t *t = NULL;
        const sl_user_t *u = NULL;
        if (sl_client_get_stream(c, sl_id_name(name), &st) == 0 && st &&
            (!topic || sl_client_get_topic(c, sl_id_name(name), sl_id_name(topic), &t) == 0) &&
            (!user || sl_client_get_user(c, sl_id_name(user), &u) == 0)) {
            sl_client_close(c);
            return;
        }
        pause_ms(100);
    }
    fprintf(stderr, "log of node on port %u:\n%s\n", n->tcp, th_log((th_server_t *)&n->srv));
    fail_msg("stream %s did not appear on the node on port %u", name, n->tcp);
}

/* Creates stream `name` on the leader; true once it was acknowledged. */
static void create_stream(const node_t *leader, const char *name)
{
    sl_client_t *c = login(leader);
    assert_int_equal(sl_client_create_stream(c, name, NULL), 0);
    sl_client_close(c);
}

static void assert_logged(th_server_t *srv, const char *what, bool expected)
{
    const char *log = th_log(srv);
    if ((strstr(log, what) != NULL) != expected)
        fail_msg("\"%s\" %s the log:\n%s", what, expected ? "not in" : "in", log);
}

/* A node restarted over its own data directory recovered from it: it
 * says so, and no state transfer replaced what it had. */
static void assert_recovered_from_journal(node_t *n)
{
    assert_logged(&n->srv, "recovers from its journal and state record", true);
    assert_logged(&n->srv, "(state transfer)", false);
    assert_logged(&n->srv, "starting as a lost disk", false);
}

static void test_restarts_keep_what_was_acknowledged(void **state)
{
    (void)state;
    node_t nodes[NODES];
    nodes_start(nodes);
    int leader = wait_leader(nodes, -1);
    sl_client_t *c = login(&nodes[leader]);
    assert_int_equal(sl_client_create_stream(c, "a", NULL), 0);
    assert_int_equal(sl_client_create_topic(c, sl_id_name("a"), "t", 1, NULL, NULL), 0);
    assert_int_equal(sl_client_create_user(c, "alice", "secret-1", 1, NULL, NULL), 0);
    sl_client_close(c);
    for (int i = 0; i < NODES; i++)
        wait_meta(&nodes[i], "a", "t", "alice");

    /* (a) A backup killed; ops commit while it is down; it comes back over
     * its own directory, recovers its journal, and repairs the rest. */
    int backup = (leader + 1) % NODES;
    node_kill(&nodes[backup]);
    create_stream(&nodes[leader], "b");
    node_run(&nodes[backup], backup, nodes[backup].srv.data_dir, false);
    wait_meta(&nodes[backup], "b", NULL, NULL);
    wait_meta(&nodes[backup], "a", "t", "alice");
    assert_recovered_from_journal(&nodes[backup]);

    /* (c) The primary killed: another is elected; the old one, restarted,
     * follows the new view and gets what was committed without it. */
    int old = leader;
    node_kill(&nodes[old]);
    leader = wait_leader(nodes, old);
    create_stream(&nodes[leader], "c");
    node_run(&nodes[old], old, nodes[old].srv.data_dir, false);
    wait_meta(&nodes[old], "c", NULL, NULL);
    assert_int_equal(wait_leader(nodes, old), leader);
    assert_recovered_from_journal(&nodes[old]);

    /* (b) All three killed at once, none formatted on the way back: every
     * acknowledged create is on every node, and the cluster commits. */
    for (int i = 0; i < NODES; i++)
        node_kill(&nodes[i]);
    for (int i = 0; i < NODES; i++)
        node_run(&nodes[i], i, nodes[i].srv.data_dir, false);
    leader = wait_leader(nodes, -1);
    for (int i = 0; i < NODES; i++) {
        wait_meta(&nodes[i], "a", "t", "alice");
        wait_meta(&nodes[i], "b", NULL, NULL);
        wait_meta(&nodes[i], "c", NULL, NULL);
        assert_recovered_from_journal(&nodes[i]);
    }
    create_stream(&nodes[leader], "d");
    for (int i = 0; i < NODES; i++)
        wait_meta(&nodes[i], "d", NULL, NULL);
    nodes_stop(nodes);
}

/* (d) A wiped node, started without --format-cluster, is a lost disk: it
 * catches up, and then it is a full member (with another node down, the
 * leader commits with it as the quorum's second). */
static void test_wiped_node_rejoins(void **state)
{
    (void)state;
    node_t nodes[NODES];
    nodes_start(nodes);
    int leader = wait_leader(nodes, -1);
    sl_client_t *c = login(&nodes[leader]);
    assert_int_equal(sl_client_create_stream(c, "w1", NULL), 0);
    assert_int_equal(sl_client_create_user(c, "bob", "secret-2", 1, NULL, NULL), 0);
    sl_client_close(c);
    for (int i = 0; i < NODES; i++)
        wait_meta(&nodes[i], "w1", NULL, "bob");

    int wiped = (leader + 1) % NODES, other = (leader + 2) % NODES;
    node_kill(&nodes[wiped]);
    th_cleanup(&nodes[wiped].srv);
    create_stream(&nodes[leader], "w2");
    node_run(&nodes[wiped], wiped, NULL, false);
    assert_logged(&nodes[wiped].srv, "starting as a lost disk", true);
    wait_meta(&nodes[wiped], "w1", NULL, "bob");
    wait_meta(&nodes[wiped], "w2", NULL, NULL);

    node_kill(&nodes[other]);
    create_stream(&nodes[leader], "w3");
    wait_meta(&nodes[wiped], "w3", NULL, NULL);
    nodes_stop(nodes);
}

/* A wiped node so far behind that the others' journals no longer hold the
 * ops it lacks (more ops than the 1024-slot ring while it was down) catches
 * up by state transfer: the checkpoint's snapshot and client table, then
 * the journal above it. */
static void test_wiped_node_state_transfer(void **state)
{
    (void)state;
    node_t nodes[NODES];
    nodes_start(nodes);
    int leader = wait_leader(nodes, -1);
    /* The primary's chain successor (prepares go primary -> leader + 1 ->
     * leader + 2): with it down the chain reaches nobody, and the primary
     * must send straight to leader + 2 once a resend shows the break
     * (regression, issue 12: each op waited a resend, 1100 took minutes). */
    int wiped = (leader + 1) % NODES;
    node_kill(&nodes[wiped]);
    th_cleanup(&nodes[wiped].srv);
    enum { OPS = 1100 }; /* past the journal ring's 1024 slots */
    sl_client_t *c = login(&nodes[leader]);
    char name[32];
    for (int i = 0; i < OPS; i++) {
        snprintf(name, sizeof(name), "st-%d", i);
        assert_int_equal(sl_client_create_stream(c, name, NULL), 0);
    }
    assert_int_equal(sl_client_create_user(c, "carol", "secret-5", 1, NULL, NULL), 0);
    sl_client_close(c);
    node_run(&nodes[wiped], wiped, NULL, false);
    assert_logged(&nodes[wiped].srv, "starting as a lost disk", true);
    wait_meta(&nodes[wiped], "st-0", NULL, "carol");
    snprintf(name, sizeof(name), "st-%d", OPS - 1);
    wait_meta(&nodes[wiped], name, NULL, NULL);
    assert_logged(&nodes[wiped].srv, "(state transfer)", true);
    /* A full member again: with the third node down, the quorum needs it. */
    int other = (leader + 2) % NODES;
    node_kill(&nodes[other]);
    create_stream(&nodes[leader], "after-transfer");
    wait_meta(&nodes[wiped], "after-transfer", NULL, NULL);
    nodes_stop(nodes);
}

/* A metadata request whose body would not fit a journal slot (a user with a
 * permission set past 1 MiB) gets 4 InvalidFormat, and the group goes on. */
static void test_oversize_request_refused(void **state)
{
    (void)state;
    node_t nodes[NODES];
    nodes_start(nodes);
    int leader = wait_leader(nodes, -1);
    enum { TOPICS = 200000 }; /* about 10 bytes each on the wire */
    sl_topic_permission_t *topics = calloc(TOPICS, sizeof(*topics));
    assert_non_null(topics);
    for (uint32_t i = 0; i < TOPICS; i++)
        topics[i] = (sl_topic_permission_t){.topic_id = i + 1, .read_topic = true};
    sl_stream_permission_t stream = {.stream_id = 1, .topics_count = TOPICS, .topics = topics};
    sl_permission_set_t set = {.streams_count = 1, .streams = &stream};
    sl_client_t *c = login(&nodes[leader]);
    assert_int_equal(sl_client_create_user(c, "huge", "secret-3", 1, &set, NULL),
                     -SL_ERR_INVALID_FORMAT);
    /* A quarter of it fits, and commits. */
    stream.topics_count = TOPICS / 4;
    assert_int_equal(sl_client_create_user(c, "large", "secret-4", 1, &set, NULL), 0);
    sl_client_close(c);
    free(topics);
    create_stream(&nodes[leader], "after-huge");
    for (int i = 0; i < NODES; i++)
        wait_meta(&nodes[i], "after-huge", NULL, "large");
    assert_logged(&nodes[leader].srv, "a metadata request of", true);
    nodes_stop(nodes);
}

/* A roster of one node is refused, and says why: the core would not commit
 * a lone replica's journaled tail after a restart. */
static void test_one_node_roster_refused(void **state)
{
    (void)state;
    char config[1024];
    snprintf(config, sizeof(config),
             "[cluster]\nenabled = true\nname = \"it-one\"\n"
             "[cluster.auth]\nenabled = true\nshared_secret = \"%s\"\n"
             "[[cluster.nodes]]\nname = \"node-0\"\nip = \"127.0.0.1\"\n"
             "replica_id = 0\nports = { tcp = %u, tcp_replica = %u }\n",
             secret, th_free_port(), th_free_port());
    const char *args[] = {"--replica-id", "0", "--format-cluster", NULL};
    th_options_t o = {.extra_config = config, .args = args};
    th_server_t srv;
    int status = 0;
    /* The client port may be bound before the cluster opens: SIGTERM then,
     * which a refused start does not change (exit 1 either way). */
    if (th_try_start(&srv, &o, &status))
        status = th_stop(&srv, SIGTERM);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 1);
    assert_logged(&srv, "cluster mode needs a roster of at least 2 nodes", true);
    th_cleanup(&srv);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_restarts_keep_what_was_acknowledged),
        cmocka_unit_test(test_wiped_node_rejoins),
        cmocka_unit_test(test_wiped_node_state_transfer),
        cmocka_unit_test(test_oversize_request_refused),
        cmocka_unit_test(test_one_node_roster_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
