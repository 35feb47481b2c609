/* Consumer groups through a failover, with real processes: three sluiced in
 * cluster mode on loopback (docs/cluster.md, "Consumer groups through a
 * failover"). A topic of 6 partitions, a group of 3 members (libsluice's
 * join / sync / poll / store calls, each member a thread with a client of
 * its own that settles on the leader and reconnects), a producer whose
 * sends are answered after a quorum commit; the leader is killed with
 * SIGKILL while both run (the producer keeps some of its batches for the
 * new leader: on a very loaded machine, where the checks before the kill
 * take seconds, it may have used the others and wait, connected, when the
 * kill comes). The members reconnect, log in again (a new client id: the
 * old membership is gone with the old session), join again and carry on.
 * Proven:
 *   - every acknowledged message is delivered to some member, byte for
 *     byte at its offset;
 *   - no committed offset goes back: every node's stored group offset of
 *     a partition never decreases from one read to the next, and ends at
 *     the last offset, at least every offset whose store was acknowledged;
 *   - no message is delivered to two members at once. A delivery of offset
 *     o of partition p to member M lasts from M's poll request to the
 *     acknowledged commit of an offset >= o by M, or, when that commit
 *     fails or M finds p gone, to that moment. Two deliveries of the same
 *     (p, o) to different members whose spans overlap are "at once"; that
 *     is allowed only when the two members polled under different group
 *     generations (the rebalance redelivery window: the old owner had not
 *     committed when the group moved the partition, docs/cluster.md), and
 *     those are counted and printed. Every sync answer of every member is
 *     also checked: within one generation no partition has two owners.
 *
 * Every wait polls with a deadline of a count of polls (a minute or more on
 * a loaded machine); nothing asserts on how long anything took. */
#include <pthread.h>
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
#define PARTITIONS 6
#define MEMBERS    3
/* Polls of 100 ms: 90 s before a wait fails. */
#define POLLS_MAX 900
/* Offsets per partition the test may produce, and the batches (of 4
 * messages, round-robin over the partitions) the producer sends at most;
 * BATCHES_AFTER_KILL of them are kept for the new leader, which must take
 * 20 (80 messages), failures during the failover included, however long
 * the test's checks before the kill take on a loaded machine. Runs at
 * load 7-13 had 280 to 936 messages acknowledged before the kill. */
#define OFFSETS_MAX         512
#define BATCHES_MAX         (PARTITIONS * 80)
#define BATCHES_AFTER_KILL  (PARTITIONS * 10)
#define BATCHES_BEFORE_KILL (BATCHES_MAX - BATCHES_AFTER_KILL)
/* Deliveries of one offset kept (more are counted, not kept). */
#define COPIES_MAX 8
/* Generations whose assignments are kept. */
#define GENERATIONS_MAX 4096

static void pause_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static uint64_t now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* --- what the run saw ------------------------------------------------------------------ */

typedef struct delivery {
    int member;
    uint64_t generation;
    uint64_t from_us, to_us; /* to_us 0: still open */
} delivery_t;

typedef struct world {
    pthread_mutex_t lock;
    th_cluster_t *cluster;
    volatile int leader; /* where clients dial first */
    volatile bool stop_producing, stop_consuming;
    volatile bool killed; /* the first leader is gone: the producer may go on */
    /* The producer's acknowledged payloads, by partition and offset. */
    char *acked[PARTITIONS][OFFSETS_MAX];
    uint64_t acked_count;
    /* Deliveries, by partition and offset. */
    delivery_t got[PARTITIONS][OFFSETS_MAX][COPIES_MAX];
    uint32_t got_count[PARTITIONS][OFFSETS_MAX];
    /* The highest offset whose Quorum store was acknowledged (+1; 0: none). */
    uint64_t committed[PARTITIONS];
    uint64_t commits;
    /* Every sync answer: the owner of each partition in each generation
     * (member index + 1; 0: unknown). */
    uint8_t owner[GENERATIONS_MAX][PARTITIONS];
    uint64_t syncs, rejoins, lost_partitions, failed_commits;
    int last_error; /* the last failed call's result, and which call */
    const char *last_call;
    char failure[512]; /* the first broken rule a thread saw */
} world_t;

static void world_fail(world_t *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void world_fail(world_t *w, const char *fmt, ...)
{
    /* Threads cannot fail a cmocka test: the first report wins, the main
     * thread fails with it. Called with the lock held. */
    if (w->failure[0])
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(w->failure, sizeof(w->failure), fmt, ap);
    va_end(ap);
}

/* A client of the node the test names leader now: it settles on the leader
 * at each login, reconnects to another node of the roster when its node
 * dies, and replays 57/58 while a group changes views. NULL when no login
 * works now. */
static sl_client_t *client_of(world_t *w, int node)
{
    sl_client_options_t o = {.connect_timeout_ms = 2000,
                             .request_timeout_ms = 10000,
                             .reconnect_attempts = 20,
                             .reconnect_delay_ms = 100,
                             .reconnect_delay_max_ms = 1000,
                             .transient_retries = 100,
                             .transient_delay_ms = 20};
    sl_client_t *c = NULL;
    if (sl_client_connect("127.0.0.1", w->cluster->nodes[node].tcp, &o, &c) != 0)
        return NULL;
    if (sl_client_login(c, "iggy", "iggy", NULL) != 0) {
        sl_client_close(c);
        return NULL;
    }
    return c;
}

/* --- the producer ---------------------------------------------------------------------- */

static void *produce(void *arg)
{
    world_t *w = arg;
    sl_client_t *c = NULL;
    for (int seq = 0; !w->stop_producing && seq < BATCHES_MAX;) {
        if (!w->killed && seq >= BATCHES_BEFORE_KILL) {
            pause_ms(20); /* the rest of the budget is for the new leader */
            continue;
        }
        if (!c && !(c = client_of(w, w->leader))) {
            pause_ms(100);
            continue;
        }
        uint32_t p = (uint32_t)(seq % PARTITIONS);
        char payloads[4][48];
        sl_send_message_t m[4];
        memset(m, 0, sizeof(m));
        for (int i = 0; i < 4; i++) {
            snprintf(payloads[i], sizeof(payloads[i]), "m-%d-%d", seq, i);
            m[i].payload = payloads[i];
            m[i].payload_len = strlen(payloads[i]);
        }
        seq++; /* a failed batch is not sent again: new payloads */
        sl_send_result_t r;
        int rc = sl_client_send_messages(c, sl_id_name("s"), sl_id_name("t"),
                                         sl_partitioning_partition(p), m, 4, &r);
        if (rc != 0) {
            sl_client_close(c);
            c = NULL;
            continue;
        }
        pthread_mutex_lock(&w->lock);
        for (uint64_t i = 0; i < 4; i++) {
            uint64_t at = r.base_offset + i;
            if (!r.confirmed || r.partition_id != p || at >= OFFSETS_MAX || w->acked[p][at])
                world_fail(w, "send to %u answered partition %u offset %llu (confirmed %d)", p,
                           r.partition_id, (unsigned long long)at, r.confirmed);
            else
                w->acked[p][at] = strdup(payloads[i]);
        }
        w->acked_count += 4;
        pthread_mutex_unlock(&w->lock);
        pause_ms(20);
    }
    if (c)
        sl_client_close(c);
    return NULL;
}

/* --- the members ----------------------------------------------------------------------- */

typedef struct member {
    world_t *w;
    int id;
    pthread_t thread;
    /* For the report of a failed run. */
    sl_session_info_t info;
    uint64_t generation, resyncs, empty_polls;
    uint32_t partitions[PARTITIONS], partitions_count;
} member_t;

/* Ends every open delivery of member m in partition p (up to offset
 * `through`, or all when through is UINT64_MAX) at the moment `at`. */
static void deliveries_end(world_t *w, int m, uint32_t p, uint64_t through, uint64_t at)
{
    for (uint64_t o = 0; o < OFFSETS_MAX && o <= through; o++)
        for (uint32_t k = 0; k < w->got_count[p][o] && k < COPIES_MAX; k++) {
            delivery_t *d = &w->got[p][o][k];
            if (d->member == m && d->to_us == 0)
                d->to_us = at;
        }
}

/* Notes a sync answer: generation and partitions, checked against every
 * other member's answer for that generation. */
static void note_assignment(world_t *w, int m, const sl_assignment_t *a, uint32_t *mine,
                            uint32_t *count)
{
    pthread_mutex_lock(&w->lock);
    w->syncs++;
    *count = 0;
    for (uint32_t i = 0; i < a->partitions_count && *count < PARTITIONS; i++) {
        uint32_t p = a->partitions[i];
        if (p >= PARTITIONS) {
            world_fail(w, "member %d was assigned partition %u", m, p);
            continue;
        }
        mine[(*count)++] = p;
        if (a->generation < GENERATIONS_MAX) {
            uint8_t *o = &w->owner[a->generation][p];
            if (*o && *o != m + 1)
                world_fail(w, "generation %llu: partition %u owned by members %d and %d",
                           (unsigned long long)a->generation, p, *o - 1, m);
            *o = (uint8_t)(m + 1);
        }
    }
    pthread_mutex_unlock(&w->lock);
}

/* One round over an assigned partition: poll from the group's stored
 * offset, note the deliveries, commit with Quorum. False when the member
 * should sync again (the partition moved, a call failed); *polled counts
 * the messages. */
static bool consume_partition(world_t *w, sl_client_t *c, member_t *mb, uint64_t generation,
                              uint32_t p, uint32_t *polled)
{
    int m = mb->id;
    sl_id_t s = sl_id_name("s"), t = sl_id_name("t"), g = sl_id_name("g");
    sl_consumer_offset_t off;
    int rc = sl_client_get_consumer_offset(c, sl_consumer_in_group(g), s, t, p, &off);
    if (rc != 0) {
        w->last_error = rc;
        w->last_call = "get offset";
        return false;
    }
    uint64_t next = off.found ? off.stored_offset + 1 : 0;
    uint64_t from = now_us();
    sl_polled_messages_t out;
    rc = sl_client_poll_messages(c, sl_consumer_in_group(g), s, t, p, sl_poll_offset(next), 10,
                                 false, &out);
    if (rc != 0) {
        w->last_error = rc;
        w->last_call = "poll";
    }
    mb->resyncs += rc == 0 && out.resync_required;
    mb->empty_polls += rc == 0 && !out.resync_required && out.count == 0;
    if (rc != 0 || out.resync_required) {
        pthread_mutex_lock(&w->lock);
        w->lost_partitions += out.resync_required;
        deliveries_end(w, m, p, UINT64_MAX, now_us());
        pthread_mutex_unlock(&w->lock);
        return false;
    }
    if (out.count == 0)
        return true;
    *polled += out.count;
    pthread_mutex_lock(&w->lock);
    for (uint32_t i = 0; i < out.count; i++) {
        const sl_polled_message_t *msg = &out.messages[i];
        uint64_t o = msg->offset;
        if (o >= OFFSETS_MAX) {
            world_fail(w, "partition %u: offset %llu polled", p, (unsigned long long)o);
            continue;
        }
        const char *want = w->acked[p][o];
        if (want &&
            (msg->payload_len != strlen(want) || memcmp(msg->payload, want, msg->payload_len) != 0))
            world_fail(w, "partition %u offset %llu: \"%.*s\", acknowledged as \"%s\"", p,
                       (unsigned long long)o, (int)msg->payload_len, (const char *)msg->payload,
                       want);
        uint32_t k = w->got_count[p][o]++;
        if (k < COPIES_MAX)
            w->got[p][o][k] = (delivery_t){.member = m, .generation = generation, .from_us = from};
    }
    uint64_t last = out.messages[out.count - 1].offset;
    pthread_mutex_unlock(&w->lock);
    rc = sl_client_store_consumer_offset(c, sl_consumer_in_group(g), s, t, p, last,
                                         SL_ACK_LEVEL_QUORUM);
    pthread_mutex_lock(&w->lock);
    deliveries_end(w, m, p, last, now_us());
    if (rc == 0) {
        w->commits++;
        if (last + 1 > w->committed[p])
            w->committed[p] = last + 1;
    } else {
        w->failed_commits++;
        w->last_error = rc;
        w->last_call = "commit";
    }
    pthread_mutex_unlock(&w->lock);
    return rc == 0;
}

static void *consume(void *arg)
{
    member_t *mb = arg;
    world_t *w = mb->w;
    sl_id_t s = sl_id_name("s"), t = sl_id_name("t"), g = sl_id_name("g");
    sl_client_t *c = NULL;
    bool joined = false;
    while (!w->stop_consuming) {
        if (!c && !(c = client_of(w, (w->leader + mb->id) % NODES))) {
            pause_ms(100);
            continue;
        }
        if (!joined) {
            int rc = sl_client_join_consumer_group(c, s, t, g);
            /* 5000-range "already a member" cannot happen: each join is
             * under the session it was made in. */
            if (rc != 0) {
                sl_client_close(c);
                c = NULL;
                pause_ms(100);
                continue;
            }
            joined = true;
        }
        const sl_assignment_t *a = NULL;
        if (sl_client_sync_consumer_group(c, s, t, g, &a) != 0) {
            sl_client_close(c); /* the next round dials the leader of the moment */
            c = NULL;
            joined = false;
            continue;
        }
        if (!a) {
            /* Not a member: the client logged in again (a reconnect after
             * the failover) under a new client id. */
            pthread_mutex_lock(&w->lock);
            w->rejoins++;
            for (uint32_t p = 0; p < PARTITIONS; p++)
                deliveries_end(w, mb->id, p, UINT64_MAX, now_us());
            pthread_mutex_unlock(&w->lock);
            joined = false;
            continue;
        }
        uint64_t generation = a->generation;
        uint32_t mine[PARTITIONS], count = 0;
        note_assignment(w, mb->id, a, mine, &count);
        pthread_mutex_lock(&w->lock);
        for (uint32_t p = 0; p < PARTITIONS; p++) {
            bool kept = false;
            for (uint32_t i = 0; i < count; i++)
                kept = kept || mine[i] == p;
            if (!kept)
                deliveries_end(w, mb->id, p, UINT64_MAX, now_us());
        }
        pthread_mutex_unlock(&w->lock);
        bool fine = true;
        uint32_t polled = 0;
        for (uint32_t i = 0; i < count && fine && !w->stop_consuming; i++)
            fine = consume_partition(w, c, mb, generation, mine[i], &polled);
        sl_client_session_info(c, &mb->info);
        mb->generation = generation;
        mb->partitions_count = count;
        memcpy(mb->partitions, mine, count * sizeof(mine[0]));
        if (polled == 0)
            pause_ms(50);
    }
    if (c) {
        /* Leaving is best effort: the test is over. */
        if (joined && sl_client_leave_consumer_group(c, s, t, g) != 0)
            joined = false;
        sl_client_close(c);
    }
    return NULL;
}

/* --- checks ------------------------------------------------------------------------------ */

/* Every acknowledged offset of every partition delivered at least once. */
static bool all_delivered(world_t *w, uint32_t *missing_p, uint64_t *missing_o)
{
    pthread_mutex_lock(&w->lock);
    bool all = true;
    for (uint32_t p = 0; p < PARTITIONS && all; p++)
        for (uint64_t o = 0; o < OFFSETS_MAX && all; o++)
            if (w->acked[p][o] && w->got_count[p][o] == 0) {
                all = false;
                *missing_p = p;
                *missing_o = o;
            }
    pthread_mutex_unlock(&w->lock);
    return all;
}

/* The group's stored offset of partition p as node n has applied it;
 * UINT64_MAX when none is stored there (or the read failed). */
static uint64_t stored_on(th_cluster_t *c, int n, uint32_t p)
{
    sl_client_t *cl = th_cluster_login(c, n);
    if (!cl)
        return UINT64_MAX;
    sl_consumer_offset_t off;
    uint64_t v = UINT64_MAX;
    if (sl_client_get_consumer_offset(cl, sl_consumer_in_group(sl_id_name("g")), sl_id_name("s"),
                                      sl_id_name("t"), p, &off) == 0 &&
        off.found)
        v = off.stored_offset;
    sl_client_close(cl);
    return v;
}

/* Reads every live node's stored offsets; each must be at least what that
 * node showed before (never back). */
static void offsets_never_back(th_cluster_t *c, uint64_t seen[NODES][PARTITIONS])
{
    for (int n = 0; n < NODES; n++) {
        if (!c->nodes[n].alive)
            continue;
        for (uint32_t p = 0; p < PARTITIONS; p++) {
            uint64_t v = stored_on(c, n, p);
            if (v == UINT64_MAX)
                continue; /* none stored there yet, or no login now */
            if (seen[n][p] != UINT64_MAX && v < seen[n][p])
                fail_msg("node %d: the group's offset of partition %u went back from %llu to %llu",
                         n, p, (unsigned long long)seen[n][p], (unsigned long long)v);
            seen[n][p] = v;
        }
    }
}

typedef struct threads {
    pthread_t producer;
    bool producing;
    member_t members[MEMBERS];
    int consuming;
} threads_t;

static void stop_producer(world_t *w, threads_t *t)
{
    w->stop_producing = true;
    if (t->producing)
        pthread_join(t->producer, NULL);
    t->producing = false;
}

static void stop_members(world_t *w, threads_t *t)
{
    w->stop_consuming = true;
    for (int i = 0; i < t->consuming; i++)
        pthread_join(t->members[i].thread, NULL);
    t->consuming = 0;
}

/* Fails the test (threads stopped first) when a thread saw a broken rule;
 * prints the progress once a second (every 10th call). */
static void check_threads(world_t *w, threads_t *t, int tick)
{
    if (tick % 10 == 0)
        printf("# %llu acknowledged, %llu commits (%llu failed), %llu syncs, %llu rejoins; last "
               "error %d (%s)\n",
               (unsigned long long)w->acked_count, (unsigned long long)w->commits,
               (unsigned long long)w->failed_commits, (unsigned long long)w->syncs,
               (unsigned long long)w->rejoins, w->last_error, w->last_call ? w->last_call : "-");
    if (!w->failure[0])
        return;
    stop_producer(w, t);
    stop_members(w, t);
    fail_msg("%s", w->failure);
}

static void test_groups_through_failover(void **state)
{
    (void)state;
    th_cluster_t cluster;
    /* heartbeat.interval 3 s: a member silent 3.6 s is stale, and the new
     * primary releases the members of the dead node's sessions that long
     * after it takes over. */
    th_cluster_options_t co = {.nodes = NODES,
                               .name = "it-groups",
                               .timing = "heartbeat_timeout = \"2 s\"\n"
                                         "commit_broadcast_interval = \"100 ms\"\n",
                               .extra = "[heartbeat]\nenabled = true\ninterval = \"3 s\"\n"};
    if (!th_cluster_start(&cluster, &co))
        exit(77);
    world_t *w = calloc(1, sizeof(*w));
    assert_non_null(w);
    pthread_mutex_init(&w->lock, NULL);
    w->cluster = &cluster;
    int leader = th_cluster_wait_leader_other(&cluster, -1, POLLS_MAX);
    assert_true(leader >= 0);
    w->leader = leader;
    sl_client_t *admin =
        th_client_when_ready(&cluster.nodes[leader].srv, cluster.nodes[leader].tcp);
    assert_non_null(admin);
    assert_int_equal(sl_client_create_stream(admin, "s", NULL), 0);
    assert_int_equal(sl_client_create_topic(admin, sl_id_name("s"), "t", PARTITIONS, NULL, NULL),
                     0);
    assert_int_equal(
        sl_client_create_consumer_group(admin, sl_id_name("s"), sl_id_name("t"), "g", NULL), 0);
    sl_client_close(admin);

    uint64_t seen[NODES][PARTITIONS];
    memset(seen, 0xff, sizeof(seen));
    threads_t th = {0};
    assert_int_equal(pthread_create(&th.producer, NULL, produce, w), 0);
    th.producing = true;
    for (int i = 0; i < MEMBERS; i++) {
        th.members[i] = (member_t){.w = w, .id = i};
        assert_int_equal(pthread_create(&th.members[i].thread, NULL, consume, &th.members[i]), 0);
        th.consuming++;
    }
    /* Mid-stream: messages acknowledged and offsets committed. */
    for (int p = 0; p < POLLS_MAX && (w->acked_count < 120 || w->commits < 12); p++) {
        pause_ms(100);
        check_threads(w, &th, p);
    }
    assert_true(w->acked_count >= 120 && w->commits >= 12);
    offsets_never_back(&cluster, seen);
    pthread_mutex_lock(&w->lock);
    uint64_t before_kill[PARTITIONS];
    memcpy(before_kill, w->committed, sizeof(before_kill));
    uint64_t acked_at_kill = w->acked_count;
    pthread_mutex_unlock(&w->lock);
    printf("# before the kill: %llu messages acknowledged, %llu commits\n",
           (unsigned long long)acked_at_kill, (unsigned long long)w->commits);

    th_cluster_stop_node(&cluster, leader, SIGKILL);
    w->killed = true;
    int old = leader;
    leader = th_cluster_wait_leader_other(&cluster, old, POLLS_MAX);
    assert_true(leader >= 0);
    w->leader = leader;
    /* The new leader takes writes, then the producer stops. */
    for (int p = 0; p < POLLS_MAX && w->acked_count < acked_at_kill + 80; p++) {
        pause_ms(100);
        check_threads(w, &th, p);
        if (p % 10 == 0)
            offsets_never_back(&cluster, seen);
    }
    stop_producer(w, &th);
    assert_true(w->acked_count >= acked_at_kill + 80);

    /* Every acknowledged message reaches a member. */
    uint32_t mp = 0;
    uint64_t mo = 0;
    bool all = false;
    for (int p = 0; p < POLLS_MAX && !(all = all_delivered(w, &mp, &mo)); p++) {
        pause_ms(100);
        check_threads(w, &th, p);
        if (p % 10 == 0)
            offsets_never_back(&cluster, seen);
    }
    /* ... and is committed: each partition's offset reaches its end. */
    bool done = false;
    for (int p = 0; all && p < POLLS_MAX && !done; p++) {
        pthread_mutex_lock(&w->lock);
        done = true;
        for (uint32_t k = 0; k < PARTITIONS; k++) {
            uint64_t end = 0;
            for (uint64_t o = 0; o < OFFSETS_MAX; o++)
                end = w->acked[k][o] ? o + 1 : end;
            done = done && w->committed[k] >= end;
        }
        pthread_mutex_unlock(&w->lock);
        if (!done)
            pause_ms(100);
    }
    stop_members(w, &th);
    if (w->failure[0])
        fail_msg("%s", w->failure);
    if (!all) {
        const sl_consumer_group_t *g = NULL;
        sl_client_t *c = th_cluster_login(&cluster, leader);
        if (c &&
            sl_client_get_consumer_group(c, sl_id_name("s"), sl_id_name("t"), sl_id_name("g"),
                                         &g) == 0 &&
            g)
            for (uint32_t i = 0; i < g->members_count; i++)
                printf("# member %u of %u on the leader: %u partitions, the first %d\n",
                       g->members[i].id, g->members_count, g->members[i].partitions_count,
                       g->members[i].partitions_count ? (int)g->members[i].partitions[0] : -1);
        if (c)
            sl_client_close(c);
        for (int n = 0; n < NODES; n++) {
            if (!cluster.nodes[n].alive)
                continue;
            sl_client_t *k = th_cluster_login(&cluster, n);
            sl_consumer_offset_t off = {0};
            if (k && sl_client_get_consumer_offset(k, sl_consumer_in_group(sl_id_name("g")),
                                                   sl_id_name("s"), sl_id_name("t"), mp, &off) == 0)
                printf("# node %d: partition %u at %llu, the group's offset %llu (found %d)\n", n,
                       mp, (unsigned long long)off.current_offset,
                       (unsigned long long)off.stored_offset, off.found);
            if (k)
                sl_client_close(k);
            const char *log = th_log(&cluster.nodes[n].srv);
            const char *x = strstr(log, "state transfer");
            if (x)
                printf("# node %d log: %.200s\n", n, x > log + 100 ? x - 100 : log);
        }
        for (int i = 0; i < MEMBERS; i++) {
            const member_t *mb = &th.members[i];
            printf("# member thread %d: client %llx, generation %llu, %u partitions (first %d), "
                   "%llu resyncs, %llu empty polls, %llu reconnects, %llu relogins, %llu moves\n",
                   i, (unsigned long long)mb->info.client_id_lo, (unsigned long long)mb->generation,
                   mb->partitions_count, mb->partitions_count ? (int)mb->partitions[0] : -1,
                   (unsigned long long)mb->resyncs, (unsigned long long)mb->empty_polls,
                   (unsigned long long)mb->info.reconnects, (unsigned long long)mb->info.relogins,
                   (unsigned long long)mb->info.leader_moves);
        }
        fail_msg("partition %u offset %llu was acknowledged and never delivered", mp,
                 (unsigned long long)mo);
    }
    assert_true(done);

    /* The stored offsets on every live node: never back, and at least every
     * acknowledged commit (polled: a backup applies a heartbeat later). */
    for (int n = 0; n < NODES; n++) {
        if (!cluster.nodes[n].alive)
            continue;
        for (uint32_t p = 0; p < PARTITIONS; p++) {
            uint64_t v = UINT64_MAX;
            for (int q = 0; q < POLLS_MAX; q++) {
                v = stored_on(&cluster, n, p);
                if (v != UINT64_MAX && v + 1 >= w->committed[p])
                    break;
                pause_ms(100);
            }
            if (v == UINT64_MAX || v + 1 < w->committed[p] || v + 1 < before_kill[p])
                fail_msg("node %d partition %u: stored %llu, committed through %llu", n, p,
                         (unsigned long long)v, (unsigned long long)w->committed[p]);
        }
    }
    offsets_never_back(&cluster, seen);

    /* No message to two members at once (the header's definition). */
    uint64_t redelivered = 0, window = 0;
    for (uint32_t p = 0; p < PARTITIONS; p++)
        for (uint64_t o = 0; o < OFFSETS_MAX; o++) {
            uint32_t n = w->got_count[p][o] < COPIES_MAX ? w->got_count[p][o] : COPIES_MAX;
            for (uint32_t i = 0; i < n; i++)
                for (uint32_t j = i + 1; j < n; j++) {
                    const delivery_t *a = &w->got[p][o][i], *b = &w->got[p][o][j];
                    if (a->member == b->member)
                        continue;
                    redelivered++;
                    uint64_t a_to = a->to_us ? a->to_us : UINT64_MAX;
                    uint64_t b_to = b->to_us ? b->to_us : UINT64_MAX;
                    if (!(a->from_us < b_to && b->from_us < a_to))
                        continue;
                    if (a->generation == b->generation)
                        fail_msg("partition %u offset %llu: members %d and %d at once, both in "
                                 "generation %llu",
                                 p, (unsigned long long)o, a->member, b->member,
                                 (unsigned long long)a->generation);
                    window++;
                }
        }
    printf("# %llu acknowledged, %llu commits (%llu failed), %llu syncs, %llu rejoins, %llu "
           "partitions lost to a rebalance; %llu deliveries to a second member, %llu of them "
           "overlapping across a rebalance\n",
           (unsigned long long)w->acked_count, (unsigned long long)w->commits,
           (unsigned long long)w->failed_commits, (unsigned long long)w->syncs,
           (unsigned long long)w->rejoins, (unsigned long long)w->lost_partitions,
           (unsigned long long)redelivered, (unsigned long long)window);
    th_cluster_stop(&cluster);
    for (uint32_t p = 0; p < PARTITIONS; p++)
        for (uint64_t o = 0; o < OFFSETS_MAX; o++)
            free(w->acked[p][o]);
    pthread_mutex_destroy(&w->lock);
    free(w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_groups_through_failover),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
