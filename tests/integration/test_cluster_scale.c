/* Many partitions on a cluster, with real processes: three sluiced in
 * cluster mode on loopback (docs/cluster.md, "Many partitions"). A topic
 * of 300 partitions is 300 partition groups on every node, each of whose
 * primaries sends a Commit to both backups every commit_broadcast_interval
 * (100 ms here: 6000 heartbeat frames a second leave the leader, besides
 * the prepares). Proven:
 *   - the topic is created (the time it took is printed, not asserted);
 *   - a round-robin of sends over every partition, each answered after a
 *     quorum commit, is on every node, byte for byte at its offset;
 *   - what the replica plane drops is counted: each node's log at its stop
 *     says how many frames each queue dropped (server/replica_plane.c).
 *     Inbound (the plane's thread to the loop, 1024 frames) none is
 *     dropped, whatever the load: a node that applies the 300 CreateTopic
 *     partition groups holds its loop busy for seconds, and its plane
 *     stops reading its links until the loop has drained some
 *     (backpressure; the times it held are printed). Outbound (the loop's
 *     frames to the plane's thread, 1024, and each link's queue in the
 *     bus, 256) a full queue drops by design, as a link that is down does,
 *     and consensus resends: a peer whose loop is held that long leaves
 *     its link's queue full once the sockets are, and a loop that comes
 *     back from such a hold sends every group's overdue frames in one turn
 *     while the plane's thread may get no core on a loaded machine (both
 *     seen at load 7-13). Those drops are printed, not asserted; that
 *     every acknowledged message is on every node is (above). Frames sent
 *     before a link was up and frames for a group a node has not created
 *     yet are dropped by design too (docs/cluster.md, "Many partitions").
 *
 * Every wait polls with a deadline of a count of polls; nothing asserts on
 * how long anything took. */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

// clang-format off
#include <cmocka.h>
// clang-format on

#include <sluice/client.h>
#include <sluice/error.h>

#include "cluster.h"
#include "harness.h"

#define NODES      3
#define PARTITIONS 300
#define ROUNDS     2
/* Polls of 100 ms: 90 s before a wait fails. */
#define POLLS_MAX 900

static void pause_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static double seconds_since(const struct timespec *t0)
{
    struct timespec t1;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    return (double)(t1.tv_sec - t0->tv_sec) + (double)(t1.tv_nsec - t0->tv_nsec) / 1e9;
}

/* A producer on the leader: 57/58 replayed while the partition groups'
 * primaries move to the leader after the topic's creation, settling again
 * first when the leader itself moved (a 300-partition CreateTopic can hold
 * a loop past the heartbeat timeout). */
static sl_client_t *producer(const th_cluster_node_t *leader)
{
    sl_client_options_t o = {.transient_retries = 200, .transient_delay_ms = 20};
    th_client_options(&o);
    o.settle_on_leader = SL_CLIENT_SETTLE_ON;
    sl_client_t *c = NULL;
    assert_int_equal(sl_client_connect("127.0.0.1", leader->tcp, &o, &c), 0);
    assert_int_equal(sl_client_login(c, "iggy", "iggy", NULL), 0);
    return c;
}

/* Waits until node n shows the topic with every partition. */
static void wait_partitions(th_cluster_node_t *n)
{
    sl_client_t *c = th_client_when_ready(&n->srv, n->tcp);
    assert_non_null(c);
    for (int p = 0; p < POLLS_MAX; p++) {
        const sl_topic_t *t = NULL;
        if (sl_client_get_topic(c, sl_id_name("s"), sl_id_name("many"), &t) == 0 && t &&
            t->partitions_count == PARTITIONS) {
            sl_client_close(c);
            return;
        }
        pause_ms(100);
    }
    fail_msg("the node on port %u never showed %d partitions", n->tcp, PARTITIONS);
}

/* Partition p of node n holds the ROUNDS messages sent to it, at offsets
 * 0.., with their payloads (polled: a backup applies a heartbeat later). */
static void assert_holds(th_cluster_node_t *n, sl_client_t *c, uint32_t p)
{
    sl_polled_messages_t out = {0};
    for (int q = 0; q < POLLS_MAX; q++) {
        assert_int_equal(sl_client_poll_messages(c, sl_consumer_single(sl_id_num(1)),
                                                 sl_id_name("s"), sl_id_name("many"), p,
                                                 sl_poll_offset(0), ROUNDS + 1, false, &out),
                         0);
        if (out.count >= ROUNDS)
            break;
        pause_ms(100);
    }
    if (out.count != ROUNDS)
        fail_msg("partition %u on the node on port %u holds %u messages, expected %d", p, n->tcp,
                 out.count, ROUNDS);
    for (uint32_t i = 0; i < out.count; i++) {
        char want[32];
        snprintf(want, sizeof(want), "p%u-r%u", p, i);
        assert_int_equal(out.messages[i].offset, i);
        assert_int_equal(out.messages[i].payload_len, strlen(want));
        assert_memory_equal(out.messages[i].payload, want, strlen(want));
    }
}

/* The number after `what` in the log's last line holding it. */
static unsigned long long logged_count(const char *log, const char *what)
{
    const char *at = NULL;
    for (const char *p = strstr(log, what); p; p = strstr(p + 1, what))
        at = p;
    if (!at)
        fail_msg("\"%s\" not in the log:\n%s", what, log);
    return strtoull(at + strlen(what), NULL, 10);
}

static void test_many_partitions(void **state)
{
    (void)state;
    th_cluster_t cluster;
    th_cluster_options_t co = {.nodes = NODES,
                               .name = "it-scale",
                               .timing = "heartbeat_timeout = \"2 s\"\n"
                                         "commit_broadcast_interval = \"100 ms\"\n"};
    if (!th_cluster_start(&cluster, &co))
        exit(77);
    int leader = th_cluster_wait_leader_other(&cluster, -1, POLLS_MAX);
    assert_true(leader >= 0);
    th_cluster_node_t *lead = &cluster.nodes[leader];
    sl_client_t *c = th_client_when_ready(&lead->srv, lead->tcp);
    assert_non_null(c);
    assert_int_equal(sl_client_create_stream(c, "s", NULL), 0);
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    assert_int_equal(sl_client_create_topic(c, sl_id_name("s"), "many", PARTITIONS, NULL, NULL), 0);
    double created = seconds_since(&t0);
    sl_client_close(c);
    for (int i = 0; i < NODES; i++)
        wait_partitions(&cluster.nodes[i]);
    double everywhere = seconds_since(&t0);

    /* Round-robin: partition 0, 1, ... 299, then again. */
    c = producer(lead);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (uint32_t r = 0; r < ROUNDS; r++)
        for (uint32_t p = 0; p < PARTITIONS; p++) {
            char payload[32];
            snprintf(payload, sizeof(payload), "p%u-r%u", p, r);
            sl_send_message_t m = {.payload = payload, .payload_len = strlen(payload)};
            sl_send_result_t res;
            assert_int_equal(sl_client_send_messages(c, sl_id_name("s"), sl_id_name("many"),
                                                     sl_partitioning_partition(p), &m, 1, &res),
                             0);
            assert_true(res.confirmed);
            assert_int_equal(res.partition_id, p);
            assert_int_equal(res.base_offset, r);
        }
    double sent = seconds_since(&t0);
    sl_client_close(c);
    printf("# %d partitions: CreateTopic answered in %.2f s, on every node in %.2f s; %d sends "
           "(Quorum) in %.2f s\n",
           PARTITIONS, created, everywhere, PARTITIONS * ROUNDS, sent);

    for (int i = 0; i < NODES; i++) {
        th_cluster_node_t *n = &cluster.nodes[i];
        sl_client_t *r = th_client_when_ready(&n->srv, n->tcp);
        assert_non_null(r);
        for (uint32_t p = 0; p < PARTITIONS; p++)
            assert_holds(n, r, p);
        sl_client_close(r);
    }
    /* A few seconds of every group's heartbeats alone. */
    pause_ms(3000);

    /* Stopped, each node logs what its plane dropped. */
    for (int i = 0; i < NODES; i++)
        th_cluster_stop_node(&cluster, i, SIGTERM);
    unsigned long long inbound = 0, outbound = 0;
    for (int i = 0; i < NODES; i++) {
        const char *log = th_log(&cluster.nodes[i].srv);
        unsigned long long in = logged_count(log, "replica plane: ");
        unsigned long long out = logged_count(log, " frames in, ");
        unsigned long long loop_full = logged_count(log, "; dropped: ");
        unsigned long long plane_full = logged_count(log, " with the loop's queue full, ");
        unsigned long long link_full = logged_count(log, " with the plane's queue full, ");
        unsigned long long no_link = logged_count(log, " with a link's queue full, ");
        unsigned long long merged = logged_count(log, " with no link up; ");
        unsigned long long held =
            logged_count(log, " merged into one queued for the loop; reading held ");
        unsigned long long unknown = logged_count(log, "cluster: ");
        printf("# node %d: %llu frames in, %llu out; dropped %llu (loop queue full), %llu (plane "
               "queue full), %llu (link queue full), %llu (no link), %llu (group not here); "
               "%llu merged into a queued one, reading held %llu times\n",
               i, in, out, loop_full, plane_full, link_full, no_link, unknown, merged, held);
        inbound += loop_full;
        outbound += plane_full + link_full;
    }
    printf("# %llu inbound frames dropped in all, %llu outbound for a full queue; every "
           "acknowledged message is on every node\n",
           inbound, outbound);
    /* Every node's counts are printed first: a failure shows them all. */
    assert_int_equal(inbound, 0);
    th_cluster_stop(&cluster);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_many_partitions),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
