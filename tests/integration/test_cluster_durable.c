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

#include "cluster.h"
#include "harness.h"

#define NODES 3
/* Polls of 100 ms: 90 s before a wait fails. */
#define POLLS_MAX 900

typedef th_cluster_node_t node_t;

static void pause_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Every node lists the whole roster. */
static void check_metadata(const sl_cluster_t *m)
{
    assert_int_equal(m->nodes_count, NODES);
}

static void nodes_start(th_cluster_t *c)
{
    th_cluster_options_t o = {.nodes = NODES, .name = "it-durable", .on_metadata = check_metadata};
    th_cluster_start_or_skip(c, &o);
}

/* Polls node n until it shows stream `name` (and, when user is not NULL,
 * that user, and when topic is not NULL, that topic in it). */
static void wait_meta(const node_t *n, const char *name, const char *topic, const char *user)
{
    sl_client_t *c = th_cluster_client(n);
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
    sl_client_t *c = th_cluster_client(leader);
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
    th_cluster_t cluster;
    node_t *nodes = cluster.nodes;
    nodes_start(&cluster);
    int leader = th_cluster_agreed_leader(&cluster, -1);
    sl_client_t *c = th_cluster_client(&nodes[leader]);
    assert_int_equal(sl_client_create_stream(c, "a", NULL), 0);
    assert_int_equal(sl_client_create_topic(c, sl_id_name("a"), "t", 1, NULL, NULL), 0);
    assert_int_equal(sl_client_create_user(c, "alice", "secret-1", 1, NULL, NULL), 0);
    sl_client_close(c);
    for (int i = 0; i < NODES; i++)
        wait_meta(&nodes[i], "a", "t", "alice");

    /* (a) A backup killed; ops commit while it is down; it comes back over
     * its own directory, recovers its journal, and repairs the rest. */
    int backup = (leader + 1) % NODES;
    th_cluster_stop_node(&cluster, backup, SIGKILL);
    create_stream(&nodes[leader], "b");
    th_cluster_restart_or_skip(&cluster, backup);
    wait_meta(&nodes[backup], "b", NULL, NULL);
    wait_meta(&nodes[backup], "a", "t", "alice");
    assert_recovered_from_journal(&nodes[backup]);

    /* (c) The primary killed: another is elected; the old one, restarted,
     * follows the new view and gets what was committed without it. */
    int old = leader;
    th_cluster_stop_node(&cluster, old, SIGKILL);
    leader = th_cluster_agreed_leader(&cluster, old);
    create_stream(&nodes[leader], "c");
    th_cluster_restart_or_skip(&cluster, old);
    wait_meta(&nodes[old], "c", NULL, NULL);
    assert_int_equal(th_cluster_agreed_leader(&cluster, old), leader);
    assert_recovered_from_journal(&nodes[old]);

    /* (b) All three killed at once, none formatted on the way back: every
     * acknowledged create is on every node, and the cluster commits. */
    for (int i = 0; i < NODES; i++)
        th_cluster_stop_node(&cluster, i, SIGKILL);
    for (int i = 0; i < NODES; i++)
        th_cluster_restart_or_skip(&cluster, i);
    leader = th_cluster_agreed_leader(&cluster, -1);
    for (int i = 0; i < NODES; i++) {
        wait_meta(&nodes[i], "a", "t", "alice");
        wait_meta(&nodes[i], "b", NULL, NULL);
        wait_meta(&nodes[i], "c", NULL, NULL);
        assert_recovered_from_journal(&nodes[i]);
    }
    create_stream(&nodes[leader], "d");
    for (int i = 0; i < NODES; i++)
        wait_meta(&nodes[i], "d", NULL, NULL);
    th_cluster_stop(&cluster);
}

/* (d) A wiped node, started without --format-cluster, is a lost disk: it
 * catches up, and then it is a full member (with another node down, the
 * leader commits with it as the quorum's second). */
static void test_wiped_node_rejoins(void **state)
{
    (void)state;
    th_cluster_t cluster;
    node_t *nodes = cluster.nodes;
    nodes_start(&cluster);
    int leader = th_cluster_agreed_leader(&cluster, -1);
    sl_client_t *c = th_cluster_client(&nodes[leader]);
    assert_int_equal(sl_client_create_stream(c, "w1", NULL), 0);
    assert_int_equal(sl_client_create_user(c, "bob", "secret-2", 1, NULL, NULL), 0);
    sl_client_close(c);
    for (int i = 0; i < NODES; i++)
        wait_meta(&nodes[i], "w1", NULL, "bob");

    int wiped = (leader + 1) % NODES, other = (leader + 2) % NODES;
    th_cluster_stop_node(&cluster, wiped, SIGKILL);
    th_cleanup(&nodes[wiped].srv);
    create_stream(&nodes[leader], "w2");
    th_cluster_start_wiped_or_skip(&cluster, wiped);
    assert_logged(&nodes[wiped].srv, "starting as a lost disk", true);
    wait_meta(&nodes[wiped], "w1", NULL, "bob");
    wait_meta(&nodes[wiped], "w2", NULL, NULL);

    th_cluster_stop_node(&cluster, other, SIGKILL);
    create_stream(&nodes[leader], "w3");
    wait_meta(&nodes[wiped], "w3", NULL, NULL);
    th_cluster_stop(&cluster);
}

/* A wiped node so far behind that the others' journals no longer hold the
 * ops it lacks (more ops than the 1024-slot ring while it was down) catches
 * up by state transfer: the checkpoint's snapshot and client table, then
 * the journal above it. */
static void test_wiped_node_state_transfer(void **state)
{
    (void)state;
    th_cluster_t cluster;
    node_t *nodes = cluster.nodes;
    nodes_start(&cluster);
    int leader = th_cluster_agreed_leader(&cluster, -1);
    /* The primary's chain successor (prepares go primary -> leader + 1 ->
     * leader + 2): with it down the chain reaches nobody, and the primary
     * must send straight to leader + 2 once a resend shows the break
     * (regression, issue 12: each op waited a resend, 1100 took minutes). */
    int wiped = (leader + 1) % NODES;
    th_cluster_stop_node(&cluster, wiped, SIGKILL);
    th_cleanup(&nodes[wiped].srv);
    enum { OPS = 1100 }; /* past the journal ring's 1024 slots */
    sl_client_t *c = th_cluster_client(&nodes[leader]);
    char name[32];
    for (int i = 0; i < OPS; i++) {
        snprintf(name, sizeof(name), "st-%d", i);
        assert_int_equal(sl_client_create_stream(c, name, NULL), 0);
    }
    assert_int_equal(sl_client_create_user(c, "carol", "secret-5", 1, NULL, NULL), 0);
    sl_client_close(c);
    th_cluster_start_wiped_or_skip(&cluster, wiped);
    assert_logged(&nodes[wiped].srv, "starting as a lost disk", true);
    wait_meta(&nodes[wiped], "st-0", NULL, "carol");
    snprintf(name, sizeof(name), "st-%d", OPS - 1);
    wait_meta(&nodes[wiped], name, NULL, NULL);
    assert_logged(&nodes[wiped].srv, "(state transfer)", true);
    /* A full member again: with the third node down, the quorum needs it. */
    int other = (leader + 2) % NODES;
    th_cluster_stop_node(&cluster, other, SIGKILL);
    create_stream(&nodes[leader], "after-transfer");
    wait_meta(&nodes[wiped], "after-transfer", NULL, NULL);
    th_cluster_stop(&cluster);
}

/* A metadata request whose body would not fit a journal slot (a user with a
 * permission set past 1 MiB) gets 4 InvalidFormat, and the group goes on. */
static void test_oversize_request_refused(void **state)
{
    (void)state;
    th_cluster_t cluster;
    node_t *nodes = cluster.nodes;
    nodes_start(&cluster);
    int leader = th_cluster_agreed_leader(&cluster, -1);
    enum { TOPICS = 200000 }; /* about 10 bytes each on the wire */
    sl_topic_permission_t *topics = calloc(TOPICS, sizeof(*topics));
    assert_non_null(topics);
    for (uint32_t i = 0; i < TOPICS; i++)
        topics[i] = (sl_topic_permission_t){.topic_id = i + 1, .read_topic = true};
    sl_stream_permission_t stream = {.stream_id = 1, .topics_count = TOPICS, .topics = topics};
    sl_permission_set_t set = {.streams_count = 1, .streams = &stream};
    sl_client_t *c = th_cluster_client(&nodes[leader]);
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
    th_cluster_stop(&cluster);
}

/* A roster of one node is refused, and says why: the core would not commit
 * a lone replica's journaled tail after a restart. */
static void test_one_node_roster_refused(void **state)
{
    static const char secret[] = "0b7e3c5a9d1f2e4a6c8b0d2f4e6a8c1b";
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
