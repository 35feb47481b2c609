/* Consumer groups and system reads against the real sluiced (commands.md 3,
 * 11, lifecycle.md 8): group CRUD, join/sync/leave, membership end, stats,
 * clients, cluster, options, snapshots, and the heartbeat verifier. */
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
#include <sys/time.h>
#include <time.h>
#include <unistd.h>
#include <zip.h>
// clang-format off
#include <cmocka.h>
// clang-format on

#include <sluice/client.h>

#include "harness.h"
#include "raw.h"
#include "wire/cmd_groups.h"
#include "wire/cmd_messages.h"
#include "wire/cmd_topics.h"
#include "wire/command.h"
#include "wire/header.h"

#ifndef ZIP_CM_ZSTD
#define ZIP_CM_ZSTD 93 /* the method number; older libzip headers lack the name */
#endif

#define SECOND_US         1000000ull
#define OK(expr)          assert_int_equal((expr), 0)
#define FAILS(expr, code) assert_int_equal((expr), -(code))

static th_server_t srv;
static sl_client_t *root;
/* The group fixture: stream "gs", topic "gt" with 4 partitions. */
static uint32_t gs, gt;

/* Servers with other settings, started by single tests; teardown removes
 * whatever a failing test left behind. */
static th_server_t others[4];
static size_t others_count;

static th_server_t *start_other(const char *extra_config)
{
    assert_true(others_count < SL_ARRAY_LEN(others));
    th_server_t *o = &others[others_count++];
    th_options_t opt = {.extra_config = extra_config};
    assert_true(th_start(o, &opt));
    return o;
}

static void stop_other(th_server_t *o)
{
    assert_int_equal(th_stop(o, SIGTERM), 0);
    th_cleanup(o);
    o->data_dir[0] = '\0';
}

static int setup(void **state)
{
    (void)state;
    if (!th_start(&srv, NULL))
        return -1;
    root = th_client(srv.port, "iggy", "iggy");
    if (!root)
        return -1;
    const sl_stream_t *s;
    const sl_topic_t *t;
    if (sl_client_create_stream(root, "gs", &s) != 0)
        return -1;
    gs = s->id;
    if (sl_client_create_topic(root, sl_id_num(gs), "gt", 4, NULL, &t) != 0)
        return -1;
    gt = t->id;
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    for (size_t i = 0; i < others_count; i++)
        if (others[i].data_dir[0])
            th_cleanup(&others[i]); /* kills a server a failed test left running */
    sl_client_close(root);
    assert_int_equal(th_stop(&srv, SIGTERM), 0);
    th_cleanup(&srv);
    return 0;
}

static uint64_t now_us(void)
{
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return (uint64_t)tv.tv_sec * SECOND_US + (uint64_t)tv.tv_usec;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static sl_client_t *member(void)
{
    sl_client_t *c = th_client(srv.port, "iggy", "iggy");
    assert_non_null(c);
    return c;
}

static uint32_t members_of(const char *group)
{
    const sl_consumer_group_t *g = NULL;
    OK(sl_client_get_consumer_group(root, sl_id_num(gs), sl_id_num(gt), sl_id_name(group), &g));
    assert_non_null(g);
    return g->members_count;
}

/* A copy of one member's assignment (results die with the next call). */
typedef struct assignment {
    bool member;
    uint64_t generation;
    uint32_t count;
    uint32_t partitions[64];
} assignment_t;

static assignment_t sync_group(sl_client_t *c, const char *group)
{
    const sl_assignment_t *a = NULL;
    OK(sl_client_sync_consumer_group(c, sl_id_num(gs), sl_id_num(gt), sl_id_name(group), &a));
    assignment_t out = {0};
    if (!a)
        return out;
    out.member = true;
    out.generation = a->generation;
    out.count = a->partitions_count;
    assert_true(out.count <= 64);
    memcpy(out.partitions, a->partitions, sizeof(uint32_t) * out.count);
    return out;
}

/* Every partition 0..n-1 is owned by exactly one of the assignments. */
static void assert_partitioned(const assignment_t *a, size_t members, uint32_t n)
{
    int owners[64] = {0};
    uint32_t total = 0;
    for (size_t m = 0; m < members; m++) {
        assert_true(a[m].member);
        for (uint32_t i = 0; i < a[m].count; i++) {
            assert_true(a[m].partitions[i] < n);
            owners[a[m].partitions[i]]++;
        }
        total += a[m].count;
    }
    assert_int_equal(total, n);
    for (uint32_t p = 0; p < n; p++)
        assert_int_equal(owners[p], 1);
}

/* --- consumer groups ------------------------------------------------------------------- */

static void test_group_crud(void **state)
{
    (void)state;
    const sl_consumer_group_t *g;
    OK(sl_client_create_consumer_group(root, sl_id_num(gs), sl_id_num(gt), "g-one", &g));
    assert_int_equal(g->id, 0);
    assert_int_equal(g->partitions_count, 4);
    assert_int_equal(g->members_count, 0);
    assert_string_equal(g->name, "g-one");
    OK(sl_client_create_consumer_group(root, sl_id_name("gs"), sl_id_name("gt"), "g-two", &g));
    assert_int_equal(g->id, 1);
    FAILS(sl_client_create_consumer_group(root, sl_id_num(gs), sl_id_num(gt), "g-one", NULL),
          SL_ERR_CONSUMER_GROUP_NAME_ALREADY_EXISTS);
    FAILS(sl_client_create_consumer_group(root, sl_id_num(gs), sl_id_num(99), "g", NULL),
          SL_ERR_TOPIC_ID_NOT_FOUND);
    FAILS(sl_client_create_consumer_group(root, sl_id_num(999999), sl_id_num(0), "g", NULL),
          SL_ERR_STREAM_ID_NOT_FOUND);

    OK(sl_client_get_consumer_group(root, sl_id_num(gs), sl_id_num(gt), sl_id_num(1), &g));
    assert_non_null(g);
    assert_string_equal(g->name, "g-two");
    OK(sl_client_get_consumer_group(root, sl_id_num(gs), sl_id_num(gt), sl_id_name("g-one"), &g));
    assert_non_null(g);
    assert_int_equal(g->id, 0);
    OK(sl_client_get_consumer_group(root, sl_id_num(gs), sl_id_num(gt), sl_id_name("none"), &g));
    assert_null(g); /* not found: empty */
    FAILS(sl_client_get_consumer_group(root, sl_id_num(gs), sl_id_num(99), sl_id_num(0), &g),
          SL_ERR_TOPIC_ID_NOT_FOUND);
    FAILS(sl_client_get_consumer_group(root, sl_id_num(999999), sl_id_num(0), sl_id_num(0), &g),
          SL_ERR_STREAM_ID_NOT_FOUND);

    const sl_consumer_group_t *items;
    uint32_t n;
    OK(sl_client_get_consumer_groups(root, sl_id_num(gs), sl_id_num(gt), &items, &n));
    assert_int_equal(n, 2);
    assert_null(items[0].members);
    FAILS(sl_client_get_consumer_groups(root, sl_id_num(gs), sl_id_num(99), &items, &n),
          SL_ERR_TOPIC_ID_NOT_FOUND);
    FAILS(sl_client_get_consumer_groups(root, sl_id_num(999999), sl_id_num(0), &items, &n),
          SL_ERR_STREAM_ID_NOT_FOUND);

    OK(sl_client_delete_consumer_group(root, sl_id_num(gs), sl_id_num(gt), sl_id_name("g-two")));
    FAILS(sl_client_delete_consumer_group(root, sl_id_num(gs), sl_id_num(gt), sl_id_name("g-two")),
          SL_ERR_CONSUMER_GROUP_ID_NOT_FOUND);
    FAILS(sl_client_delete_consumer_group(root, sl_id_num(gs), sl_id_num(99), sl_id_num(0)),
          SL_ERR_TOPIC_ID_NOT_FOUND);
    FAILS(sl_client_delete_consumer_group(root, sl_id_num(999999), sl_id_num(0), sl_id_num(0)),
          SL_ERR_STREAM_ID_NOT_FOUND);
    FAILS(sl_client_join_consumer_group(root, sl_id_num(gs), sl_id_num(gt), sl_id_num(1)),
          SL_ERR_CONSUMER_GROUP_ID_NOT_FOUND);
    FAILS(sl_client_join_consumer_group(root, sl_id_num(gs), sl_id_num(99), sl_id_num(0)),
          SL_ERR_TOPIC_ID_NOT_FOUND);
    FAILS(sl_client_join_consumer_group(root, sl_id_num(999999), sl_id_num(0), sl_id_num(0)),
          SL_ERR_STREAM_ID_NOT_FOUND);
    FAILS(sl_client_leave_consumer_group(root, sl_id_num(gs), sl_id_num(gt), sl_id_num(1)),
          SL_ERR_CONSUMER_GROUP_ID_NOT_FOUND);
    FAILS(sl_client_leave_consumer_group(root, sl_id_num(gs), sl_id_num(99), sl_id_num(0)),
          SL_ERR_TOPIC_ID_NOT_FOUND);
    FAILS(sl_client_leave_consumer_group(root, sl_id_num(999999), sl_id_num(0), sl_id_num(0)),
          SL_ERR_STREAM_ID_NOT_FOUND);
    /* Group ids are never reused. */
    OK(sl_client_create_consumer_group(root, sl_id_num(gs), sl_id_num(gt), "g-three", &g));
    assert_int_equal(g->id, 2);
    OK(sl_client_get_consumer_groups(root, sl_id_num(gs), sl_id_num(gt), &items, &n));
    assert_int_equal(n, 2);
}

static void test_join_sync_leave(void **state)
{
    (void)state;
    OK(sl_client_create_consumer_group(root, sl_id_num(gs), sl_id_num(gt), "workers", NULL));
    sl_client_t *m1 = member(), *m2 = member();
    assignment_t a[2];

    /* Not a member yet: sync is empty. */
    assert_false(sync_group(m1, "workers").member);
    OK(sl_client_join_consumer_group(m1, sl_id_num(gs), sl_id_num(gt), sl_id_name("workers")));
    a[0] = sync_group(m1, "workers");
    assert_partitioned(a, 1, 4);
    uint64_t g1 = a[0].generation;
    /* Joining again: a no-op, no rebalance. */
    OK(sl_client_join_consumer_group(m1, sl_id_num(gs), sl_id_num(gt), sl_id_name("workers")));
    assert_true(sync_group(m1, "workers").generation == g1);
    assert_int_equal(members_of("workers"), 1);

    OK(sl_client_join_consumer_group(m2, sl_id_num(gs), sl_id_num(gt), sl_id_name("workers")));
    a[0] = sync_group(m1, "workers");
    a[1] = sync_group(m2, "workers");
    assert_true(a[0].generation > g1);
    assert_true(a[1].generation == a[0].generation);
    assert_partitioned(a, 2, 4);
    assert_int_equal(a[0].count, 2);
    assert_int_equal(a[1].count, 2);
    uint64_t g2 = a[0].generation;

    /* GetConsumerGroup shows the same members and lists. */
    const sl_consumer_group_t *g;
    OK(sl_client_get_consumer_group(root, sl_id_num(gs), sl_id_num(gt), sl_id_name("workers"), &g));
    assert_int_equal(g->members_count, 2);
    assert_int_equal(g->members[0].partitions_count + g->members[1].partitions_count, 4);
    assert_true(g->members[0].id < g->members[1].id);

    /* GetMe lists the membership; root (not a member) syncs to nothing. */
    const sl_client_info_t *me;
    OK(sl_client_get_me(m1, &me));
    assert_int_equal(me->groups_count, 1);
    assert_int_equal(me->groups[0].stream_id, gs);
    assert_int_equal(me->groups[0].topic_id, gt);
    assert_int_equal(me->groups[0].group_id, g->id);
    assert_false(sync_group(root, "workers").member);

    /* New partitions rebalance the group. */
    OK(sl_client_create_partitions(root, sl_id_num(gs), sl_id_num(gt), 2));
    a[0] = sync_group(m1, "workers");
    a[1] = sync_group(m2, "workers");
    assert_true(a[0].generation > g2);
    assert_partitioned(a, 2, 6);
    OK(sl_client_delete_partitions(root, sl_id_num(gs), sl_id_num(gt), 2));
    a[0] = sync_group(m1, "workers");
    a[1] = sync_group(m2, "workers");
    assert_partitioned(a, 2, 4);
    uint64_t g3 = a[0].generation;

    /* Leave: the other member takes everything; leaving again is 5006. */
    OK(sl_client_leave_consumer_group(m2, sl_id_num(gs), sl_id_num(gt), sl_id_name("workers")));
    FAILS(sl_client_leave_consumer_group(m2, sl_id_num(gs), sl_id_num(gt), sl_id_name("workers")),
          SL_ERR_CONSUMER_GROUP_MEMBER_NOT_FOUND);
    assert_false(sync_group(m2, "workers").member);
    a[0] = sync_group(m1, "workers");
    assert_true(a[0].generation > g3);
    assert_partitioned(a, 1, 4);
    OK(sl_client_get_me(m2, &me));
    assert_int_equal(me->groups_count, 0);
    assert_int_equal(members_of("workers"), 1);
    sl_client_close(m1);
    sl_client_close(m2);
}

static void test_membership_ends_with_session(void **state)
{
    (void)state;
    OK(sl_client_create_consumer_group(root, sl_id_num(gs), sl_id_num(gt), "sessions", NULL));
    sl_client_t *stay = member(), *leaver = member(), *dropper = member();
    OK(sl_client_join_consumer_group(stay, sl_id_num(gs), sl_id_num(gt), sl_id_name("sessions")));
    OK(sl_client_join_consumer_group(leaver, sl_id_num(gs), sl_id_num(gt), sl_id_name("sessions")));
    assert_int_equal(members_of("sessions"), 2);
    uint64_t before = sync_group(stay, "sessions").generation;

    /* Logout releases the membership and rebalances. */
    OK(sl_client_logout(leaver));
    assert_int_equal(members_of("sessions"), 1);
    assignment_t a = sync_group(stay, "sessions");
    assert_true(a.generation > before);
    assert_partitioned(&a, 1, 4);

    /* So does a dropped connection (the server commits a logout). */
    OK(sl_client_join_consumer_group(dropper, sl_id_num(gs), sl_id_num(gt),
                                     sl_id_name("sessions")));
    assert_int_equal(members_of("sessions"), 2);
    sl_client_close(dropper);
    uint32_t n = 2;
    for (int i = 0; i < 250 && n != 1; i++) {
        sleep_ms(20);
        n = members_of("sessions");
    }
    assert_int_equal(n, 1);
    a = sync_group(stay, "sessions");
    assert_partitioned(&a, 1, 4);

    /* Deleting the group ends the last membership. */
    OK(sl_client_delete_consumer_group(root, sl_id_num(gs), sl_id_num(gt), sl_id_name("sessions")));
    assert_false(sync_group(stay, "sessions").member);
    const sl_client_info_t *me;
    OK(sl_client_get_me(stay, &me));
    assert_int_equal(me->groups_count, 0);
    FAILS(
        sl_client_leave_consumer_group(stay, sl_id_num(gs), sl_id_num(gt), sl_id_name("sessions")),
        SL_ERR_CONSUMER_GROUP_ID_NOT_FOUND);
    sl_client_close(stay);
    sl_client_close(leaver);
}

/* Deleting the topic or stream under a group ends its memberships: the
 * member's views forget it and its later logout has nothing to release. */
static void test_delete_parent_releases_members(void **state)
{
    (void)state;
    const sl_stream_t *s;
    OK(sl_client_create_stream(root, "doomed", &s));
    uint32_t sid = s->id;
    OK(sl_client_create_topic(root, sl_id_num(sid), "t1", 2, NULL, NULL));
    OK(sl_client_create_topic(root, sl_id_num(sid), "t2", 3, NULL, NULL));
    OK(sl_client_create_consumer_group(root, sl_id_num(sid), sl_id_name("t1"), "g1", NULL));
    OK(sl_client_create_consumer_group(root, sl_id_num(sid), sl_id_name("t2"), "g2", NULL));
    sl_client_t *m = member();
    OK(sl_client_join_consumer_group(m, sl_id_num(sid), sl_id_name("t1"), sl_id_name("g1")));
    OK(sl_client_join_consumer_group(m, sl_id_num(sid), sl_id_name("t2"), sl_id_name("g2")));
    OK(sl_client_join_consumer_group(m, sl_id_num(gs), sl_id_num(gt), sl_id_name("g-one")));
    const sl_client_info_t *me;
    OK(sl_client_get_me(m, &me));
    assert_int_equal(me->groups_count, 3);

    OK(sl_client_delete_topic(root, sl_id_num(sid), sl_id_name("t1")));
    OK(sl_client_get_me(m, &me));
    assert_int_equal(me->groups_count, 2);
    OK(sl_client_delete_stream(root, sl_id_num(sid)));
    OK(sl_client_get_me(m, &me));
    assert_int_equal(me->groups_count, 1);
    assert_int_equal(me->groups[0].stream_id, gs);
    OK(sl_client_logout(m));
    assert_int_equal(members_of("g-one"), 0);
    OK(sl_client_login(m, "iggy", "iggy", NULL));
    OK(sl_client_get_me(m, &me));
    assert_int_equal(me->groups_count, 0);
    sl_client_close(m);
}

/* GetMe and GetClient list one entry per group the session joined
 * (commands.md 20, 2.6), however many; GetClients carries the count. */
static void test_many_memberships_listed(void **state)
{
    (void)state;
    const sl_stream_t *s;
    OK(sl_client_create_stream(root, "many-groups", &s));
    uint32_t sid = s->id;
    OK(sl_client_create_topic(root, sl_id_num(sid), "t", 1, NULL, NULL));
    sl_client_t *m = member();
    enum { GROUPS = 80 };
    for (int i = 0; i < GROUPS; i++) {
        char name[16];
        snprintf(name, sizeof(name), "mg-%d", i);
        OK(sl_client_create_consumer_group(root, sl_id_num(sid), sl_id_num(0), name, NULL));
        OK(sl_client_join_consumer_group(m, sl_id_num(sid), sl_id_num(0), sl_id_name(name)));
    }
    /* Everything is read first and cleaned up before the checks, so a
     * failure here does not leak into the next tests. */
    const sl_client_info_t *me;
    OK(sl_client_get_me(m, &me));
    uint32_t id = me->client_id, me_count = me->groups_count;
    bool ascending = true;
    for (uint32_t i = 0; i < me_count; i++)
        ascending &= me->groups[i].stream_id == sid && me->groups[i].group_id == i;
    const sl_client_info_t *c;
    OK(sl_client_get_client(root, id, &c));
    uint32_t client_count = c->groups_count;
    const sl_client_info_t *items;
    uint32_t n, list_count = 0;
    OK(sl_client_get_clients(root, &items, &n));
    for (uint32_t i = 0; i < n; i++)
        if (items[i].client_id == id)
            list_count = items[i].groups_count;
    sl_client_close(m);
    OK(sl_client_delete_stream(root, sl_id_num(sid)));

    if (me_count != GROUPS || client_count != GROUPS || list_count != GROUPS)
        fail_msg("a member of %d groups: GetMe lists %u, GetClient %u, GetClients counts %u",
                 GROUPS, me_count, client_count, list_count);
    assert_true(ascending); /* (stream, topic, group) order */
}

/* --- system reads ------------------------------------------------------------------------ */

/* Totals GetStats must agree with, counted through the other reads. */
typedef struct totals {
    uint32_t streams, topics, partitions, groups;
} totals_t;

static totals_t count_everything(void)
{
    totals_t t = {0};
    const sl_stream_t *streams;
    uint32_t n;
    OK(sl_client_get_streams(root, &streams, &n));
    uint32_t ids[64];
    assert_true(n <= 64);
    for (uint32_t i = 0; i < n; i++)
        ids[i] = streams[i].id;
    t.streams = n;
    for (uint32_t i = 0; i < t.streams; i++) {
        const sl_topic_t *topics;
        uint32_t tn;
        OK(sl_client_get_topics(root, sl_id_num(ids[i]), &topics, &tn));
        uint32_t tids[64];
        assert_true(tn <= 64);
        for (uint32_t k = 0; k < tn; k++) {
            tids[k] = topics[k].id;
            t.partitions += topics[k].partitions_count;
        }
        t.topics += tn;
        for (uint32_t k = 0; k < tn; k++) {
            const sl_consumer_group_t *groups;
            uint32_t gn;
            OK(sl_client_get_consumer_groups(root, sl_id_num(ids[i]), sl_id_num(tids[k]), &groups,
                                             &gn));
            t.groups += gn;
        }
    }
    return t;
}

static void test_stats(void **state)
{
    (void)state;
    uint64_t t0 = now_us();
    const sl_stats_t *s;
    /* Connections the earlier tests closed may still be going away: wait
     * until root's is the only one. */
    OK(sl_client_get_stats(root, &s));
    for (int i = 0; i < 250 && s->clients_count != 1; i++) {
        sleep_ms(20);
        OK(sl_client_get_stats(root, &s));
    }
    assert_int_equal(s->clients_count, 1);
    uint32_t streams = s->streams_count, topics = s->topics_count;
    uint32_t partitions = s->partitions_count, groups = s->consumer_groups_count;
    uint32_t clients = s->clients_count;
    assert_int_equal(s->process_id, (uint32_t)srv.pid);
    assert_true(s->hostname[0] != '\0');
    assert_true(s->os_name[0] != '\0');
    assert_true(s->server_version[0] != '\0');
    assert_true(clients >= 1);
    assert_true(s->start_time_us <= t0 && s->start_time_us + 600 * SECOND_US >= t0);
    assert_true(s->run_time_us < 600 * SECOND_US);
    assert_true(s->threads_count >= 1);
    assert_true(s->total_memory > 0 && s->memory_usage > 0);
    assert_true(s->segments_count >= s->partitions_count);
    totals_t t = count_everything();
    assert_int_equal(streams, t.streams);
    assert_int_equal(topics, t.topics);
    assert_int_equal(partitions, t.partitions);
    assert_int_equal(groups, t.groups);

    /* What we create shows up in the counts. */
    const sl_stream_t *st;
    OK(sl_client_create_stream(root, "stats-stream", &st));
    uint32_t sid = st->id;
    OK(sl_client_create_topic(root, sl_id_num(sid), "stats-topic", 3, NULL, NULL));
    OK(sl_client_create_consumer_group(root, sl_id_num(sid), sl_id_name("stats-topic"), "sg",
                                       NULL));
    static raw_session_t probe; /* another connection, not logged in */
    raw_open(&probe, srv.port);
    assert_int_equal(
        raw_call(&probe, SL_OP_NON_REPLICATED, SL_CMD_PING, 1, 0, sl_span(NULL, 0), false).status,
        0);
    OK(sl_client_get_stats(root, &s));
    assert_int_equal(s->streams_count, streams + 1);
    assert_int_equal(s->topics_count, topics + 1);
    assert_int_equal(s->partitions_count, partitions + 3);
    assert_int_equal(s->consumer_groups_count, groups + 1);
    assert_int_equal(s->clients_count, clients + 1);
    raw_close(&probe);
    OK(sl_client_delete_stream(root, sl_id_num(sid)));
    OK(sl_client_get_stats(root, &s));
    assert_int_equal(s->streams_count, streams);
    assert_int_equal(s->consumer_groups_count, groups);
}

static void local_address(int fd, char *out, size_t len)
{
    struct sockaddr_in a;
    socklen_t alen = sizeof(a);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &alen), 0);
    snprintf(out, len, "127.0.0.1:%u", ntohs(a.sin_port));
}

/* True once GetClient stops finding the connection (within 5 s). */
static bool client_gone(uint32_t id)
{
    for (int i = 0; i < 250; i++) {
        const sl_client_info_t *c;
        OK(sl_client_get_client(root, id, &c));
        if (c == NULL)
            return true;
        sleep_ms(20);
    }
    return false;
}

static void test_clients(void **state)
{
    (void)state;
    const sl_client_info_t *me;
    OK(sl_client_get_me(root, &me));
    uint32_t root_id = me->client_id;
    assert_int_equal(me->user_id, 0);
    assert_int_equal(me->transport, 1);
    assert_true(strncmp(me->address, "127.0.0.1:", 10) == 0);
    char root_address[64];
    snprintf(root_address, sizeof(root_address), "%s", me->address);

    /* A connection that never logged in: user 0xFFFFFFFF. */
    static raw_session_t anon;
    raw_open(&anon, srv.port);
    assert_int_equal(
        raw_call(&anon, SL_OP_NON_REPLICATED, SL_CMD_PING, 1, 0, sl_span(NULL, 0), false).status,
        0);
    char anon_address[64];
    local_address(anon.fd, anon_address, sizeof(anon_address));
    /* A logged-in non-root user and a group member. */
    const sl_user_t *u;
    OK(sl_client_create_user(root, "watcher", "watcher-pass", SL_USER_STATUS_ACTIVE, NULL, &u));
    uint32_t watcher_id = u->id;
    sl_client_t *watcher = th_client(srv.port, "watcher", "watcher-pass");
    assert_non_null(watcher);
    OK(sl_client_create_consumer_group(root, sl_id_num(gs), sl_id_num(gt), "clients-g", NULL));
    sl_client_t *m = member();
    OK(sl_client_join_consumer_group(m, sl_id_num(gs), sl_id_num(gt), sl_id_name("clients-g")));
    OK(sl_client_get_me(m, &me));
    uint32_t member_id = me->client_id;

    const sl_client_info_t *items;
    uint32_t n;
    OK(sl_client_get_clients(root, &items, &n));
    assert_true(n >= 4);
    uint32_t anon_id = 0;
    bool seen_root = false, seen_anon = false, seen_watcher = false, seen_member = false;
    for (uint32_t i = 0; i < n; i++) {
        assert_int_equal(items[i].transport, 1);
        assert_null(items[i].groups);
        if (items[i].client_id == root_id) {
            seen_root = items[i].user_id == 0 && strcmp(items[i].address, root_address) == 0;
        } else if (strcmp(items[i].address, anon_address) == 0) {
            seen_anon = items[i].user_id == 0xFFFFFFFFu && items[i].groups_count == 0;
            anon_id = items[i].client_id;
        } else if (items[i].user_id == watcher_id) {
            seen_watcher = true;
        } else if (items[i].client_id == member_id) {
            seen_member = items[i].groups_count == 1;
        }
    }
    assert_true(seen_root && seen_anon && seen_watcher && seen_member);

    const sl_client_info_t *c;
    OK(sl_client_get_client(root, anon_id, &c));
    assert_non_null(c);
    assert_int_equal(c->user_id, 0xFFFFFFFFu);
    assert_string_equal(c->address, anon_address);
    OK(sl_client_get_client(root, member_id, &c));
    assert_non_null(c);
    assert_int_equal(c->groups_count, 1);
    assert_int_equal(c->groups[0].stream_id, gs);
    assert_int_equal(c->groups[0].topic_id, gt);
    OK(sl_client_get_client(root, 0x7FFFFFF0u, &c));
    assert_null(c);

    /* A closed connection leaves the list. */
    raw_close(&anon);
    assert_true(client_gone(anon_id));
    sl_client_close(m);
    sl_client_close(watcher);
}

static void test_cluster_metadata(void **state)
{
    (void)state;
    const sl_cluster_t *cl;
    OK(sl_client_get_cluster_metadata(root, &cl));
    assert_string_equal(cl->name, "single-node");
    assert_int_equal(cl->nodes_count, 1);
    const sl_node_info_t *node = &cl->nodes[0];
    assert_string_equal(node->name, "iggy-node");
    assert_string_equal(node->ip, "127.0.0.1");
    /* The ports served: ":0" reports the port the kernel chose. */
    assert_int_equal(node->tcp_port, srv.port);
    assert_int_equal(node->quic_port, 0);
    assert_int_not_equal(srv.http_port, 0);
    assert_int_equal(node->http_port, srv.http_port);
    /* WebSocket is on by default: the harness gives it an ephemeral port. */
    assert_int_not_equal(srv.ws_port, 0);
    assert_int_equal(node->websocket_port, srv.ws_port);
    assert_int_equal(node->role, 0);
    assert_int_equal(node->status, 0);
    /* It needs a login, nothing more. */
    static raw_session_t anon;
    raw_open(&anon, srv.port);
    raw_reply_t r = raw_call(&anon, SL_OP_NON_REPLICATED, SL_CMD_GET_CLUSTER_METADATA, 1, 0,
                             sl_span(NULL, 0), false);
    assert_int_equal(r.status, SL_ERR_UNAUTHENTICATED);
    raw_close(&anon);
}

static void assert_default(const sl_option_info_t *o, const char *key, uint8_t kind,
                           const void *value, uint32_t len)
{
    assert_string_equal(o->key, key);
    assert_int_equal(o->kind, kind);
    assert_int_equal(o->default_len, len);
    assert_memory_equal(o->default_value, value, len);
    assert_true(o->description[0] != '\0');
}

static void test_describe_options(void **state)
{
    (void)state;
    const sl_option_info_t *items;
    uint32_t n;
    OK(sl_client_describe_options(root, SL_SCOPE_TOPIC, &items, &n));
    assert_int_equal(n, 8);
    static const uint8_t max64[8] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
    static const uint8_t gib[8] = {0, 0, 0, 0x40, 0, 0, 0, 0};
    static const uint8_t zero = 0;
    static const uint8_t k1024[4] = {0, 4, 0, 0};
    static const uint8_t mib[8] = {0, 0, 0x10, 0, 0, 0, 0, 0};
    assert_default(&items[0], "compression_algorithm", 2, "none", 4);
    assert_default(&items[1], "message_expiry", 12, max64, 8);
    assert_default(&items[2], "max_topic_size", 12, max64, 8);
    assert_default(&items[3], "segment_size", 12, gib, 8);
    assert_default(&items[4], "enforce_fsync", 3, &zero, 1);
    assert_default(&items[5], "messages_required_to_save", 11, k1024, 4);
    assert_default(&items[6], "size_of_messages_required_to_save", 12, mib, 8);
    assert_default(&items[7], "preallocate_segments", 3, &zero, 1);
    n = 99;
    OK(sl_client_describe_options(root, SL_SCOPE_STREAM, &items, &n));
    assert_int_equal(n, 0);
    n = 99;
    OK(sl_client_describe_options(root, SL_SCOPE_USER, &items, &n));
    assert_int_equal(n, 0);
    FAILS(sl_client_describe_options(root, 0, &items, &n), SL_ERR_INVALID_COMMAND);
    FAILS(sl_client_describe_options(root, 4, &items, &n), SL_ERR_INVALID_COMMAND);
}

/* Opens a returned archive and checks its entry names (in order) and that
 * every entry was written with method. */
static void assert_archive(const uint8_t *bytes, size_t len, const char *const *names, size_t count,
                           int method)
{
    zip_error_t ze;
    zip_error_init(&ze);
    zip_source_t *src = zip_source_buffer_create(bytes, len, 0, &ze);
    assert_non_null(src);
    zip_t *za = zip_open_from_source(src, ZIP_RDONLY | ZIP_CHECKCONS, &ze);
    if (!za)
        fail_msg("the snapshot is not a ZIP archive: %s", zip_error_strerror(&ze));
    assert_int_equal(zip_get_num_entries(za, 0), (zip_int64_t)count);
    for (size_t i = 0; i < count; i++) {
        zip_stat_t st;
        assert_int_equal(zip_stat_index(za, i, 0, &st), 0);
        assert_string_equal(st.name, names[i]);
        assert_int_equal(st.comp_method, method);
        /* Every entry reads back whole (CRCs checked by libzip). */
        zip_file_t *f = zip_fopen_index(za, i, 0);
        assert_non_null(f);
        char buf[4096];
        zip_int64_t got, total = 0;
        while ((got = zip_fread(f, buf, sizeof(buf))) > 0)
            total += got;
        assert_true(got == 0);
        assert_true((zip_uint64_t)total == st.size);
        zip_fclose(f);
    }
    zip_discard(za); /* frees the source too */
    zip_error_fini(&ze);
}

static void test_snapshot(void **state)
{
    (void)state;
    static const char *const all_names[] = {"filesystem_overview.txt", "process_list.txt",
                                            "resource_usage.txt", "server_logs.txt",
                                            "server_config.txt"};
    static const char *const test_names[] = {"test.txt"};
    static const uint8_t all = SL_SNAPSHOT_TYPE_ALL, test = SL_SNAPSHOT_TYPE_TEST;
    const uint8_t *zip;
    size_t len;
    OK(sl_client_get_snapshot(root, SL_SNAPSHOT_COMPRESSION_STORED, &all, 1, &zip, &len));
    assert_archive(zip, len, all_names, 5, ZIP_CM_STORE);
    OK(sl_client_get_snapshot(root, SL_SNAPSHOT_COMPRESSION_DEFLATED, &all, 1, &zip, &len));
    assert_archive(zip, len, all_names, 5, ZIP_CM_DEFLATE);
    OK(sl_client_get_snapshot(root, SL_SNAPSHOT_COMPRESSION_STORED, &test, 1, &zip, &len));
    assert_archive(zip, len, test_names, 1, ZIP_CM_STORE);
    OK(sl_client_get_snapshot(root, SL_SNAPSHOT_COMPRESSION_DEFLATED, &test, 1, &zip, &len));
    assert_archive(zip, len, test_names, 1, ZIP_CM_DEFLATE);

    /* Zstd: served when this libzip can write it, else a clear refusal
     * (FeatureUnavailable, and the log names the method). */
    int rc = sl_client_get_snapshot(root, SL_SNAPSHOT_COMPRESSION_ZSTD, &test, 1, &zip, &len);
    if (zip_compression_method_supported(ZIP_CM_ZSTD, 1)) {
        OK(rc);
        assert_archive(zip, len, test_names, 1, ZIP_CM_ZSTD);
    } else {
        assert_int_equal(rc, -SL_ERR_FEATURE_UNAVAILABLE);
        assert_non_null(strstr(th_log(&srv), "Zstd"));
    }

    /* Refused bodies: status 3 (the library will not encode them). */
    static const uint8_t bad[][4] = {
        {1, 2, SL_SNAPSHOT_TYPE_ALL, SL_SNAPSHOT_TYPE_TEST}, /* All with another type */
        {1, 1, 7, 0},                                        /* unknown type */
        {7, 1, SL_SNAPSHOT_TYPE_TEST, 0},                    /* unknown compression */
        {0, 1, SL_SNAPSHOT_TYPE_TEST, 0},                    /* compression 0 */
    };
    static const size_t bad_len[] = {4, 3, 3, 3};
    for (size_t i = 0; i < SL_ARRAY_LEN(bad); i++) {
        sl_raw_reply_t r;
        OK(sl_client_request_raw(root, SL_OP_NON_REPLICATED, SL_CMD_GET_SNAPSHOT, bad[i],
                                 bad_len[i], &r));
        assert_int_equal(r.status, SL_ERR_INVALID_COMMAND);
        assert_int_equal(r.body_len, 0);
    }
    static const uint8_t truncated[3] = {1, 2, SL_SNAPSHOT_TYPE_TEST};
    sl_raw_reply_t r;
    OK(sl_client_request_raw(root, SL_OP_NON_REPLICATED, SL_CMD_GET_SNAPSHOT, truncated, 3, &r));
    assert_int_equal(r.status, SL_ERR_INVALID_COMMAND);
}

/* --- heartbeat ---------------------------------------------------------------------------- */

/* The silent non-member and the never-logged-in connection: nothing was
 * sent to them, and they still work (the first still logged in). */
static void assert_left_alone(raw_session_t *silent, raw_session_t *anon)
{
    assert_false(th_readable(silent->fd, 0));
    assert_false(th_readable(anon->fd, 0));
    raw_reply_t rep = raw_read(silent, SL_CMD_GET_ME, sl_span(NULL, 0));
    assert_false(rep.evicted);
    assert_int_equal(rep.status, 0);
    assert_int_equal(sl_load_u32(rep.payload.ptr + 4), 0); /* user id: still logged in */
    rep = raw_call(anon, SL_OP_NON_REPLICATED, SL_CMD_PING, 1, 0, sl_span(NULL, 0), false);
    assert_int_equal(rep.status, 0);
}

/* With a 1 s interval, a logged-in group member silent for more than 1.2 s
 * gets Eviction 13 and loses its membership; a silent logged-in
 * non-member and a never-logged-in connection are left alone. */
static void test_heartbeat_evicts_silent_member(void **state)
{
    (void)state;
    th_server_t *hb = start_other("[heartbeat]\ninterval = \"1 s\"\n");
    sl_client_t *admin = th_client(hb->port, "iggy", "iggy");
    assert_non_null(admin);
    const sl_stream_t *s;
    OK(sl_client_create_stream(admin, "hb", &s));
    uint32_t sid = s->id;
    OK(sl_client_create_topic(admin, sl_id_num(sid), "hb-topic", 2, NULL, NULL));
    OK(sl_client_create_consumer_group(admin, sl_id_num(sid), sl_id_num(0), "hb-group", NULL));

    static raw_session_t silent, anon, mem, busy; /* 1 MiB frame buffers each */
    raw_open(&silent, hb->port);
    assert_int_equal(raw_login(&silent, "iggy", "iggy").result, 0);
    raw_open(&anon, hb->port);
    raw_open(&mem, hb->port);
    assert_int_equal(raw_login(&mem, "iggy", "iggy").result, 0);
    raw_open(&busy, hb->port);
    assert_int_equal(raw_login(&busy, "iggy", "iggy").result, 0);
    sl_buf_t body;
    sl_buf_init(&body, 0);
    sl_join_consumer_group_request_t q = {sl_ident_number(sid), sl_ident_number(0),
                                          sl_ident_name("hb-group")};
    OK(sl_join_consumer_group_request_encode(&body, &q));
    /* Another member pings every 250 ms from its join on: any request
     * keeps it alive. The first member says nothing after its join. */
    raw_reply_t rep = raw_meta(&busy, SL_OP_JOIN_CONSUMER_GROUP, sl_buf_span(&body));
    assert_int_equal(rep.result, 0);
    uint64_t t0 = now_us();
    rep = raw_meta(&mem, SL_OP_JOIN_CONSUMER_GROUP, sl_buf_span(&body));
    assert_int_equal(rep.status, 0);
    assert_int_equal(rep.result, 0);
    const sl_consumer_group_t *g;
    OK(sl_client_get_consumer_group(admin, sl_id_num(sid), sl_id_num(0), sl_id_name("hb-group"),
                                    &g));
    assert_int_equal(g->members_count, 2);
    while (!th_readable(mem.fd, 250) && now_us() - t0 < 15 * SECOND_US)
        assert_int_equal(raw_read(&busy, SL_CMD_PING, sl_span(NULL, 0)).status, 0);
    int n = th_read_frame(mem.fd, mem.frame, sizeof(mem.frame), 1000);
    assert_int_equal(n, 256);
    assert_int_equal(mem.frame[SL_HDR_OFF_COMMAND], SL_COMMAND_EVICTION);
    assert_int_equal(mem.frame[SL_EVI_OFF_REASON], SL_EVICT_STALE_CLIENT);
    assert_true(sl_u128_eq(sl_load_u128(mem.frame + SL_EVI_OFF_CLIENT), mem.client));
    assert_true(now_us() - t0 >= SECOND_US); /* not before 1.2 s of silence */
    assert_true(th_wait_closed(mem.fd, 5000));
    raw_close(&mem);

    OK(sl_client_get_consumer_group(admin, sl_id_num(sid), sl_id_num(0), sl_id_name("hb-group"),
                                    &g));
    assert_int_equal(g->members_count, 1);
    /* The pinging member was not evicted and now owns both partitions. */
    assert_false(th_readable(busy.fd, 0));
    sl_buf_t sync;
    sl_buf_init(&sync, 0);
    OK(sl_sync_consumer_group_request_encode(&sync, &q));
    rep = raw_read(&busy, SL_CMD_SYNC_CONSUMER_GROUP, sl_buf_span(&sync));
    assert_int_equal(rep.status, 0);
    assert_int_equal(rep.payload.len, 8 + 4 + 2 * 4);
    assert_int_equal(sl_load_u32(rep.payload.ptr + 8), 2);
    sl_buf_free(&sync);
    raw_close(&busy);

    assert_left_alone(&silent, &anon);
    sl_buf_free(&body);
    raw_close(&silent);
    raw_close(&anon);
    sl_client_close(admin);
    stop_other(hb);
}

/* Reads one frame of any size and keeps only its header; 0 or -1. */
static int skip_frame(int fd, uint8_t hdr[256], int timeout_ms)
{
    static uint8_t sink[1 << 16];
    size_t want = 256, got = 0;
    uint8_t *into = hdr;
    for (int part = 0; part < 2; part++) {
        while (got < want) {
            if (!th_readable(fd, timeout_ms))
                return -1;
            size_t room = part == 0 ? want - got : sizeof(sink);
            if (part == 1 && room > want - got)
                room = want - got;
            ssize_t k = recv(fd, part == 0 ? into + got : sink, room, 0);
            if (k <= 0)
                return -1;
            got += (size_t)k;
        }
        want = sl_load_u32(hdr + 48) - 256; /* the body */
        got = 0;
    }
    return 0;
}

/* A group member that asked for a large reply and then reads nothing is
 * silent as well: the verifier drops its membership, and lifecycle.md 8
 * says it receives Eviction 13. The eviction must still reach it after the
 * reply it was sent (a frame in flight cannot be interrupted). */
static void test_heartbeat_evicts_member_behind_large_reply(void **state)
{
    (void)state;
    th_server_t *hb = start_other("[heartbeat]\ninterval = \"1 s\"\n");
    sl_client_t *admin = th_client(hb->port, "iggy", "iggy");
    assert_non_null(admin);
    OK(sl_client_create_stream(admin, "big", NULL));
    OK(sl_client_create_topic(admin, sl_id_name("big"), "wide", 1, NULL, NULL));
    /* 16 MB of messages in one batch: a poll of it is a reply that does not
     * fit the socket buffers of a receiver that does not read. One record,
     * since a poll reply carries at most SL_POLL_REPLY_SLICE of records
     * unless its first record alone is larger. (A wide GetTopic would need
     * 300000 partitions.) */
    static uint8_t payload[1000];
    static sl_send_message_t batch[16000];
    for (int i = 0; i < 16000; i++)
        batch[i] = (sl_send_message_t){.payload = payload, .payload_len = sizeof(payload)};
    OK(sl_client_send_messages(admin, sl_id_name("big"), sl_id_name("wide"),
                               sl_partitioning_partition(0), batch, 16000, NULL));
    OK(sl_client_create_consumer_group(admin, sl_id_name("big"), sl_id_name("wide"), "g", NULL));

    static raw_session_t mem; /* 1 MiB frame buffer */
    raw_open(&mem, hb->port);
    assert_int_equal(raw_login(&mem, "iggy", "iggy").result, 0);
    sl_buf_t body;
    sl_buf_init(&body, 0);
    sl_join_consumer_group_request_t q = {sl_ident_name("big"), sl_ident_name("wide"),
                                          sl_ident_name("g")};
    OK(sl_join_consumer_group_request_encode(&body, &q));
    assert_int_equal(raw_meta(&mem, SL_OP_JOIN_CONSUMER_GROUP, sl_buf_span(&body)).result, 0);

    /* A poll of everything, then read nothing for a while: 16 MB do not fit
     * the socket buffers, so the reply is still being written when the
     * verifier finds the member stale. */
    sl_buf_t get;
    sl_buf_init(&get, 0);
    sl_poll_messages_request_t pq = {
        .consumer = {SL_CONSUMER_SINGLE, sl_ident_number(1)},
        .stream_id = sl_ident_name("big"),
        .topic_id = sl_ident_name("wide"),
        .partition = {true, 0},
        .strategy = {SL_STRATEGY_OFFSET, 0},
        .count = 100000,
    };
    OK(sl_poll_messages_request_encode(&get, &pq));
    sl_request_header_t h = {.size = (uint32_t)(256 + get.len),
                             .client = mem.client,
                             .request = mem.request,
                             .operation = SL_OP_NON_REPLICATED,
                             .session = mem.session,
                             .code = SL_CMD_POLL_MESSAGES};
    uint8_t hdr[256];
    sl_request_header_encode(hdr, &h);
    assert_true(th_send_all(mem.fd, hdr, 256) && th_send_all(mem.fd, get.data, get.len));
    sl_buf_free(&get);
    const sl_consumer_group_t *g;
    uint32_t members = 1;
    for (int i = 0; i < 100 && members != 0; i++) { /* the verifier acts within ~2.2 s */
        sleep_ms(100);
        OK(sl_client_get_consumer_group(admin, sl_id_name("big"), sl_id_name("wide"),
                                        sl_id_name("g"), &g));
        members = g->members_count;
    }
    assert_int_equal(members, 0);

    /* Now read: the poll reply, then the eviction. */
    uint8_t frame[256];
    assert_int_equal(skip_frame(mem.fd, frame, 5000), 0);
    assert_int_equal(frame[SL_HDR_OFF_COMMAND], 8); /* the Reply */
    assert_true(sl_load_u32(frame + 48) > 256 + 16u * 1000u * 1000u);
    int n = th_read_frame(mem.fd, mem.frame, sizeof(mem.frame), 3000);
    bool evicted = n == 256 && mem.frame[SL_HDR_OFF_COMMAND] == SL_COMMAND_EVICTION;
    uint8_t reason = evicted ? mem.frame[SL_EVI_OFF_REASON] : 0;
    bool open = !th_wait_closed(mem.fd, 0);
    bool logged = strstr(th_log(hb), "stale, evicted (reason 13)") != NULL;
    raw_reply_t next = {0};
    if (!evicted)
        next = raw_meta(&mem, SL_OP_LEAVE_CONSUMER_GROUP, sl_buf_span(&body));
    sl_buf_free(&body);
    raw_close(&mem);
    sl_client_close(admin);
    stop_other(hb);
    if (!evicted)
        fail_msg("no Eviction 13 after the reply (read returned %d, connection open: %d); the "
                 "server logged the eviction: %d; the next metadata request got eviction %d "
                 "reason %u",
                 n, open, logged, next.evicted, next.reason);
    assert_int_equal(reason, SL_EVICT_STALE_CLIENT);
}

/* A full client table (2 slots here) gives up the entry whose latest commit
 * is oldest when a new client registers (framing.md 6.1): that client's
 * next metadata request is Eviction 1, and its group memberships go with
 * the entry. */
static void test_client_table_eviction_drops_membership(void **state)
{
    (void)state;
    th_server_t *small = start_other("[metadata]\nclients_table_max = 2\n");
    sl_client_t *admin = th_client(small->port, "iggy", "iggy");
    assert_non_null(admin);
    OK(sl_client_create_stream(admin, "ct", NULL));
    OK(sl_client_create_topic(admin, sl_id_name("ct"), "t", 2, NULL, NULL));
    OK(sl_client_create_consumer_group(admin, sl_id_name("ct"), sl_id_name("t"), "g", NULL));
    sl_client_t *m = th_client(small->port, "iggy", "iggy");
    assert_non_null(m);
    OK(sl_client_join_consumer_group(m, sl_id_name("ct"), sl_id_name("t"), sl_id_name("g")));
    /* The admin commits again, so the member's entry is now the oldest. */
    OK(sl_client_create_stream(admin, "ct-2", NULL));
    sl_client_t *third = th_client(small->port, "iggy", "iggy");
    assert_non_null(third);

    const sl_consumer_group_t *g;
    OK(sl_client_get_consumer_group(admin, sl_id_name("ct"), sl_id_name("t"), sl_id_name("g"), &g));
    assert_int_equal(g->members_count, 0);
    assert_int_equal(
        sl_client_leave_consumer_group(m, sl_id_name("ct"), sl_id_name("t"), sl_id_name("g")),
        -SL_ERR_UNAUTHENTICATED); /* Eviction 1 as the library maps it */
    /* Logged in again, it can join again. */
    OK(sl_client_login(m, "iggy", "iggy", NULL));
    OK(sl_client_join_consumer_group(m, sl_id_name("ct"), sl_id_name("t"), sl_id_name("g")));
    const sl_assignment_t *as;
    OK(sl_client_sync_consumer_group(m, sl_id_name("ct"), sl_id_name("t"), sl_id_name("g"), &as));
    assert_non_null(as);
    assert_int_equal(as->partitions_count, 2);
    sl_client_close(third);
    sl_client_close(m);
    sl_client_close(admin);
    stop_other(small);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_group_crud),
        cmocka_unit_test(test_join_sync_leave),
        cmocka_unit_test(test_membership_ends_with_session),
        cmocka_unit_test(test_delete_parent_releases_members),
        cmocka_unit_test(test_many_memberships_listed),
        cmocka_unit_test(test_stats),
        cmocka_unit_test(test_clients),
        cmocka_unit_test(test_cluster_metadata),
        cmocka_unit_test(test_describe_options),
        cmocka_unit_test(test_snapshot),
        cmocka_unit_test(test_heartbeat_evicts_silent_member),
        cmocka_unit_test(test_heartbeat_evicts_member_behind_large_reply),
        cmocka_unit_test(test_client_table_eviction_drops_membership),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
