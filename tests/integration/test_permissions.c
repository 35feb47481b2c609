/* The permission matrix of permissions.md 2 against the real sluiced, table
 * driven: five non-root users run every stream, topic, group, user and
 * system command (status 41 / result 41, not-found before permission). */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
// clang-format off
#include <cmocka.h>
// clang-format on

#include <sluice/client.h>

#include "harness.h"
#include "wire/cmd_streams.h"
#include "wire/command.h"
#include "wire/header.h"

#define OK(expr) assert_int_equal((expr), 0)

/* Outcomes: 0 success with a body, EMPTY success with a not-found (empty)
 * reply or an empty list, otherwise the error code (status or result). */
enum { EMPTY = 1, MISSING = 999999 };

/* The users of the matrix, in column order. */
enum { U_NONE, U_READ_STREAMS, U_MANAGE_STREAM, U_READ_TOPIC, U_MANAGE_USERS, U_COUNT };

typedef struct actor {
    const char *name;
    sl_client_t *c;
    uint32_t id;
} actor_t;

static th_server_t srv;
static sl_client_t *root;
static actor_t actors[U_COUNT];
/* The fixture: stream S1 (topics T1 with 2 partitions, T2) and stream S2. */
static uint32_t s1, s2, t1, t2;

static int code(int rc)
{
    return rc < 0 ? -rc : rc;
}

/* --- the operations ---------------------------------------------------------------- */

typedef int (*op_fn)(const actor_t *a);

static int get_streams(const actor_t *a)
{
    const sl_stream_t *items;
    uint32_t n;
    int rc = sl_client_get_streams(a->c, &items, &n);
    return rc ? code(rc) : n ? 0 : EMPTY;
}

static int found(int rc, const void *out)
{
    return rc ? code(rc) : out ? 0 : EMPTY;
}

static int get_stream(const actor_t *a)
{
    const sl_stream_t *s = NULL;
    int rc = sl_client_get_stream(a->c, sl_id_num(s1), &s);
    return found(rc, s);
}

static int get_stream_missing(const actor_t *a)
{
    const sl_stream_t *s = NULL;
    int rc = sl_client_get_stream(a->c, sl_id_num(MISSING), &s);
    return found(rc, s);
}

static int create_stream(const actor_t *a)
{
    char name[64];
    snprintf(name, sizeof(name), "made-by-%s", a->name);
    return code(sl_client_create_stream(a->c, name, NULL));
}

static int update_stream(const actor_t *a)
{
    return code(sl_client_update_stream(a->c, sl_id_num(s1), "perm-s1"));
}

static int update_stream_missing(const actor_t *a)
{
    return code(sl_client_update_stream(a->c, sl_id_num(MISSING), "x-name"));
}

static int delete_stream(const actor_t *a)
{
    return code(sl_client_delete_stream(a->c, sl_id_num(s1)));
}

static int delete_stream_missing(const actor_t *a)
{
    return code(sl_client_delete_stream(a->c, sl_id_name("no-such-stream")));
}

static int purge_stream_missing(const actor_t *a)
{
    return code(sl_client_purge_stream(a->c, sl_id_num(MISSING)));
}

static int get_topics(const actor_t *a)
{
    const sl_topic_t *items;
    uint32_t n;
    int rc = sl_client_get_topics(a->c, sl_id_num(s1), &items, &n);
    return rc ? code(rc) : n ? 0 : EMPTY;
}

static int get_topics_missing(const actor_t *a)
{
    const sl_topic_t *items;
    uint32_t n = 7;
    int rc = sl_client_get_topics(a->c, sl_id_num(MISSING), &items, &n);
    return rc ? code(rc) : n ? 0 : EMPTY;
}

static int get_topic_t1(const actor_t *a)
{
    const sl_topic_t *t = NULL;
    int rc = sl_client_get_topic(a->c, sl_id_num(s1), sl_id_num(t1), &t);
    return found(rc, t);
}

static int get_topic_t2(const actor_t *a)
{
    const sl_topic_t *t = NULL;
    int rc = sl_client_get_topic(a->c, sl_id_num(s1), sl_id_num(t2), &t);
    return found(rc, t);
}

static int get_topic_missing(const actor_t *a)
{
    const sl_topic_t *t = NULL;
    int rc = sl_client_get_topic(a->c, sl_id_num(s1), sl_id_num(MISSING), &t);
    return found(rc, t);
}

static int create_topic(const actor_t *a)
{
    return code(sl_client_create_topic(a->c, sl_id_num(s1), "new-topic", 1, NULL, NULL));
}

static int create_topic_missing(const actor_t *a)
{
    return code(sl_client_create_topic(a->c, sl_id_num(MISSING), "new-topic", 1, NULL, NULL));
}

static int update_topic(const actor_t *a)
{
    return code(sl_client_update_topic(a->c, sl_id_num(s1), sl_id_num(t1), "t1", NULL));
}

static int update_topic_missing(const actor_t *a)
{
    return code(sl_client_update_topic(a->c, sl_id_num(s1), sl_id_num(MISSING), "x", NULL));
}

static int delete_topic(const actor_t *a)
{
    return code(sl_client_delete_topic(a->c, sl_id_num(s1), sl_id_num(t2)));
}

static int delete_topic_missing(const actor_t *a)
{
    return code(sl_client_delete_topic(a->c, sl_id_num(s1), sl_id_name("no-such-topic")));
}

static int purge_topic_missing(const actor_t *a)
{
    return code(sl_client_purge_topic(a->c, sl_id_num(MISSING), sl_id_num(0)));
}

static int create_partitions(const actor_t *a)
{
    return code(sl_client_create_partitions(a->c, sl_id_num(s1), sl_id_num(t1), 1));
}

static int create_partitions_missing(const actor_t *a)
{
    return code(sl_client_create_partitions(a->c, sl_id_num(s1), sl_id_num(MISSING), 1));
}

static int delete_segments_missing(const actor_t *a)
{
    return code(sl_client_delete_segments(a->c, sl_id_num(s1), sl_id_num(t1), 77, 1));
}

static int create_group(const actor_t *a)
{
    char name[64];
    snprintf(name, sizeof(name), "grp-%s", a->name);
    return code(sl_client_create_consumer_group(a->c, sl_id_num(s1), sl_id_num(t1), name, NULL));
}

static int create_group_missing(const actor_t *a)
{
    return code(
        sl_client_create_consumer_group(a->c, sl_id_num(s1), sl_id_num(MISSING), "grp", NULL));
}

static int get_groups(const actor_t *a)
{
    const sl_consumer_group_t *items;
    uint32_t n;
    int rc = sl_client_get_consumer_groups(a->c, sl_id_num(s1), sl_id_num(t1), &items, &n);
    return rc ? code(rc) : n ? 0 : EMPTY;
}

static int get_group_missing_stream(const actor_t *a)
{
    const sl_consumer_group_t *g = NULL;
    int rc = sl_client_get_consumer_group(a->c, sl_id_num(MISSING), sl_id_num(0), sl_id_num(0), &g);
    return found(rc, g);
}

static int delete_group_missing(const actor_t *a)
{
    return code(sl_client_delete_consumer_group(a->c, sl_id_num(s1), sl_id_num(t1),
                                                sl_id_name("no-such-group")));
}

static int join_group_missing(const actor_t *a)
{
    return code(
        sl_client_join_consumer_group(a->c, sl_id_num(s1), sl_id_num(t1), sl_id_num(MISSING)));
}

static int get_users(const actor_t *a)
{
    const sl_user_t *items;
    uint32_t n;
    int rc = sl_client_get_users(a->c, &items, &n);
    return rc ? code(rc) : n ? 0 : EMPTY;
}

static int get_user_self(const actor_t *a)
{
    const sl_user_t *u = NULL;
    int rc = sl_client_get_user(a->c, sl_id_num(a->id), &u);
    if (rc == 0 && u)
        assert_string_equal(u->username, a->name);
    return found(rc, u);
}

static int get_user_other(const actor_t *a)
{
    const sl_user_t *u = NULL;
    int rc = sl_client_get_user(a->c, sl_id_num(0), &u);
    return found(rc, u);
}

static int get_user_missing(const actor_t *a)
{
    const sl_user_t *u = NULL;
    int rc = sl_client_get_user(a->c, sl_id_name("no-such-user"), &u);
    return found(rc, u);
}

static int create_user(const actor_t *a)
{
    char name[64];
    snprintf(name, sizeof(name), "made-by-%s", a->name);
    return code(sl_client_create_user(a->c, name, "secret", SL_USER_STATUS_ACTIVE, NULL, NULL));
}

static int get_stats(const actor_t *a)
{
    const sl_stats_t *s = NULL;
    int rc = sl_client_get_stats(a->c, &s);
    return found(rc, s);
}

static int get_clients(const actor_t *a)
{
    const sl_client_info_t *items;
    uint32_t n;
    int rc = sl_client_get_clients(a->c, &items, &n);
    return rc ? code(rc) : n ? 0 : EMPTY;
}

static int get_client(const actor_t *a)
{
    const sl_client_info_t *me = NULL;
    OK(sl_client_get_me(a->c, &me));
    uint32_t id = me->client_id;
    const sl_client_info_t *other = NULL;
    int rc = sl_client_get_client(a->c, id, &other);
    return found(rc, other);
}

static int get_snapshot(const actor_t *a)
{
    static const uint8_t test_type = SL_SNAPSHOT_TYPE_TEST;
    const uint8_t *zip = NULL;
    size_t len = 0;
    int rc =
        sl_client_get_snapshot(a->c, SL_SNAPSHOT_COMPRESSION_STORED, &test_type, 1, &zip, &len);
    return found(rc, zip);
}

static int get_me(const actor_t *a)
{
    const sl_client_info_t *me = NULL;
    int rc = sl_client_get_me(a->c, &me);
    if (rc == 0)
        assert_int_equal(me->user_id, a->id);
    return found(rc, me);
}

static int get_cluster(const actor_t *a)
{
    const sl_cluster_t *cl = NULL;
    int rc = sl_client_get_cluster_metadata(a->c, &cl);
    return found(rc, cl);
}

static int describe_options(const actor_t *a)
{
    const sl_option_info_t *items;
    uint32_t n;
    int rc = sl_client_describe_options(a->c, SL_SCOPE_TOPIC, &items, &n);
    return rc ? code(rc) : n ? 0 : EMPTY;
}

static int get_tokens(const actor_t *a)
{
    const sl_token_t *items;
    uint32_t n;
    int rc = sl_client_get_tokens(a->c, &items, &n);
    return rc ? code(rc) : n ? 0 : EMPTY;
}

static int purge_stream(const actor_t *a)
{
    return code(sl_client_purge_stream(a->c, sl_id_num(s1)));
}

static int purge_topic(const actor_t *a)
{
    return code(sl_client_purge_topic(a->c, sl_id_num(s1), sl_id_num(t1)));
}

static int delete_partitions(const actor_t *a)
{
    return code(sl_client_delete_partitions(a->c, sl_id_num(s1), sl_id_num(t1), 1));
}

static int delete_segments(const actor_t *a)
{
    return code(sl_client_delete_segments(a->c, sl_id_num(s1), sl_id_num(t1), 0, 1));
}

static int get_group(const actor_t *a)
{
    const sl_consumer_group_t *g = NULL;
    int rc = sl_client_get_consumer_group(a->c, sl_id_num(s1), sl_id_num(t1),
                                          sl_id_name("fixture-g"), &g);
    return found(rc, g);
}

static int join_group(const actor_t *a)
{
    return code(
        sl_client_join_consumer_group(a->c, sl_id_num(s1), sl_id_num(t1), sl_id_name("fixture-g")));
}

static int sync_group(const actor_t *a)
{
    const sl_assignment_t *as = NULL;
    int rc = sl_client_sync_consumer_group(a->c, sl_id_num(s1), sl_id_num(t1),
                                           sl_id_name("fixture-g"), &as);
    return found(rc, as);
}

static int leave_group(const actor_t *a)
{
    return code(sl_client_leave_consumer_group(a->c, sl_id_num(s1), sl_id_num(t1),
                                               sl_id_name("fixture-g")));
}

static int delete_group(const actor_t *a)
{
    return code(sl_client_delete_consumer_group(a->c, sl_id_num(s1), sl_id_num(t1),
                                                sl_id_name("fixture-g")));
}

static int update_user_victim(const actor_t *a)
{
    return code(sl_client_update_user(a->c, sl_id_name("victim"), "victim", SL_USER_STATUS_ACTIVE));
}

static int update_permissions_victim(const actor_t *a)
{
    return code(sl_client_update_permissions(a->c, sl_id_name("victim"), NULL));
}

static int change_password_victim(const actor_t *a)
{
    return code(
        sl_client_change_password(a->c, sl_id_name("victim"), "victim-pass", "victim-pass"));
}

static int change_password_self(const actor_t *a)
{
    return code(sl_client_change_password(a->c, sl_id_num(a->id), "secret", "secret"));
}

static int delete_user_missing(const actor_t *a)
{
    return code(sl_client_delete_user(a->c, sl_id_name("no-such-user")));
}

static int create_token(const actor_t *a)
{
    const char *token = NULL;
    int rc = sl_client_create_token(a->c, "matrix", 0, &token);
    if (rc == 0)
        rc = sl_client_delete_token(a->c, "matrix");
    return code(rc);
}

/* --- the table ------------------------------------------------------------------------ */

typedef struct row {
    const char *what;
    op_fn fn;
    int expect[U_COUNT]; /* none, read_streams, S1 manage_stream, T1 read_topic, manage_users */
} row_t;

#define ALL(x)                                                                                     \
    {                                                                                              \
        x, x, x, x, x                                                                              \
    }

/* Rows that leave the fixture's shape alone; check_effects runs after them. */
static const row_t rows[] = {
    {"GetStreams", get_streams, {41, 0, 41, 41, 41}},
    {"GetStream S1", get_stream, {41, 0, 0, 41, 41}},
    {"GetStream missing", get_stream_missing, ALL(EMPTY)},
    {"CreateStream", create_stream, ALL(41)},
    {"UpdateStream S1", update_stream, {41, 41, 0, 41, 41}},
    {"UpdateStream missing", update_stream_missing, ALL(1009)},
    {"PurgeStream S1", purge_stream, {41, 41, 0, 41, 41}},
    {"DeleteStream missing", delete_stream_missing, ALL(1009)},
    {"PurgeStream missing", purge_stream_missing, ALL(1009)},
    {"GetTopics S1", get_topics, {41, 0, 0, 41, 41}},
    {"GetTopics missing", get_topics_missing, ALL(EMPTY)},
    {"GetTopic T1", get_topic_t1, {41, 0, 0, 0, 41}},
    {"GetTopic T2", get_topic_t2, {41, 0, 0, 41, 41}},
    {"GetTopic missing", get_topic_missing, ALL(EMPTY)},
    {"CreateTopic S1", create_topic, {41, 41, 0, 41, 41}},
    {"CreateTopic missing stream", create_topic_missing, ALL(1009)},
    {"UpdateTopic T1", update_topic, {41, 41, 0, 41, 41}},
    {"UpdateTopic missing", update_topic_missing, ALL(2010)},
    {"PurgeTopic T1", purge_topic, {41, 41, 0, 41, 41}},
    {"DeleteTopic missing", delete_topic_missing, ALL(2010)},
    {"PurgeTopic missing stream", purge_topic_missing, ALL(1009)},
    {"CreatePartitions T1", create_partitions, {41, 41, 0, 41, 41}},
    {"CreatePartitions missing", create_partitions_missing, ALL(2010)},
    {"DeleteSegments T1", delete_segments, {41, 41, 0, 41, 41}},
    {"DeleteSegments missing partition", delete_segments_missing, ALL(3007)},
    {"CreateConsumerGroup T1", create_group, {41, 0, 0, 0, 41}},
    {"CreateConsumerGroup missing topic", create_group_missing, ALL(2010)},
    {"GetConsumerGroups T1", get_groups, {41, 0, 0, 0, 41}},
    {"GetConsumerGroup T1", get_group, {41, 0, 0, 0, 41}},
    {"GetConsumerGroup missing stream", get_group_missing_stream, ALL(1009)},
    {"JoinConsumerGroup", join_group, {41, 0, 0, 0, 41}},
    /* Sync has no rule: it answers about the caller's own membership. */
    {"SyncConsumerGroup", sync_group, {EMPTY, 0, 0, 0, EMPTY}},
    {"LeaveConsumerGroup", leave_group, {41, 0, 0, 0, 41}},
    /* The group resolves after the permission check (permissions.md 2.4). */
    {"DeleteConsumerGroup missing group", delete_group_missing, {41, 5000, 5000, 5000, 41}},
    {"JoinConsumerGroup missing group", join_group_missing, {41, 5000, 5000, 5000, 41}},
    {"GetUsers", get_users, {41, 41, 41, 41, 0}},
    {"GetUser self", get_user_self, ALL(0)},
    {"GetUser other", get_user_other, {41, 41, 41, 41, 0}},
    {"GetUser missing", get_user_missing, {41, 41, 41, 41, EMPTY}},
    {"CreateUser", create_user, {41, 41, 41, 41, 0}},
    {"UpdateUser other", update_user_victim, {41, 41, 41, 41, 0}},
    {"UpdatePermissions other", update_permissions_victim, {41, 41, 41, 41, 0}},
    {"ChangePassword other", change_password_victim, {41, 41, 41, 41, 0}},
    {"ChangePassword self", change_password_self, ALL(0)},
    {"DeleteUser missing", delete_user_missing, {41, 41, 41, 41, 20}},
    {"Create+DeletePersonalAccessToken", create_token, ALL(0)},
    {"GetPersonalAccessTokens", get_tokens, ALL(EMPTY)},
    {"GetStats", get_stats, ALL(41)},
    {"GetClients", get_clients, ALL(41)},
    {"GetClient", get_client, ALL(41)},
    {"GetSnapshot", get_snapshot, ALL(41)},
    {"GetMe", get_me, ALL(0)},
    {"GetClusterMetadata", get_cluster, ALL(0)},
    {"DescribeOptions", describe_options, ALL(0)},
};

/* Rows that delete parts of the fixture, last. */
static const row_t final_rows[] = {
    {"DeletePartitions T1", delete_partitions, {41, 41, 0, 41, 41}},
    {"DeleteConsumerGroup T1", delete_group, {41, 0, 0, 0, 41}},
    {"DeleteTopic T2", delete_topic, {41, 41, 0, 41, 41}},
    {"DeleteStream S1", delete_stream, {41, 41, 0, 41, 41}},
};

static int expected(const char *what, int user)
{
    for (size_t i = 0; i < SL_ARRAY_LEN(rows); i++)
        if (strcmp(rows[i].what, what) == 0)
            return rows[i].expect[user];
    for (size_t i = 0; i < SL_ARRAY_LEN(final_rows); i++)
        if (strcmp(final_rows[i].what, what) == 0)
            return final_rows[i].expect[user];
    fail_msg("no row %s", what);
    return -1;
}

/* --- fixture ----------------------------------------------------------------------------- */

/* Rebuilds S1 (T1 with 2 partitions, T2) and S2 (U1) from nothing; with the
 * lowest free ids they get the same ids every time, which the grants name. */
static void rebuild_fixture(void)
{
    const sl_stream_t *items;
    uint32_t n;
    OK(sl_client_get_streams(root, &items, &n));
    uint32_t ids[64];
    assert_true(n <= SL_ARRAY_LEN(ids));
    for (uint32_t i = 0; i < n; i++)
        ids[i] = items[i].id;
    for (uint32_t i = 0; i < n; i++)
        OK(sl_client_delete_stream(root, sl_id_num(ids[i])));
    const sl_stream_t *s;
    const sl_topic_t *t;
    OK(sl_client_create_stream(root, "perm-s1", &s));
    s1 = s->id;
    OK(sl_client_create_stream(root, "perm-s2", &s));
    s2 = s->id;
    OK(sl_client_create_topic(root, sl_id_num(s1), "t1", 2, NULL, &t));
    t1 = t->id;
    OK(sl_client_create_topic(root, sl_id_num(s1), "t2", 1, NULL, &t));
    t2 = t->id;
    OK(sl_client_create_topic(root, sl_id_num(s2), "u1", 1, NULL, NULL));
    OK(sl_client_create_consumer_group(root, sl_id_num(s1), sl_id_num(t1), "fixture-g", NULL));
    assert_int_equal(s1, 0);
    assert_int_equal(s2, 1);
    assert_int_equal(t1, 0);
    assert_int_equal(t2, 1);
}

static void make_actor(int idx, const char *name, const sl_permission_set_t *perms)
{
    const sl_user_t *u;
    OK(sl_client_create_user(root, name, "secret", SL_USER_STATUS_ACTIVE, perms, &u));
    actors[idx] = (actor_t){name, th_client(srv.port, name, "secret"), u->id};
    assert_non_null(actors[idx].c);
}

static int setup(void **state)
{
    (void)state;
    if (!th_start(&srv, NULL))
        return -1;
    root = th_client(srv.port, "iggy", "iggy");
    if (!root)
        return -1;
    rebuild_fixture();
    static const sl_permission_set_t read_streams = {.read_streams = true};
    static const sl_stream_permission_t s1_manage = {.stream_id = 0, .manage_stream = true};
    static const sl_permission_set_t manage_stream = {.streams_count = 1, .streams = &s1_manage};
    static const sl_topic_permission_t t1_read = {.topic_id = 0, .read_topic = true};
    static const sl_stream_permission_t s1_topic = {
        .stream_id = 0, .topics_count = 1, .topics = &t1_read};
    static const sl_permission_set_t read_topic = {.streams_count = 1, .streams = &s1_topic};
    static const sl_permission_set_t manage_users = {.manage_users = true};
    if (sl_client_create_user(root, "victim", "victim-pass", SL_USER_STATUS_ACTIVE, NULL, NULL))
        return -1;
    make_actor(U_NONE, "no-perms", NULL);
    make_actor(U_READ_STREAMS, "reader", &read_streams);
    make_actor(U_MANAGE_STREAM, "stream-admin", &manage_stream);
    make_actor(U_READ_TOPIC, "topic-reader", &read_topic);
    make_actor(U_MANAGE_USERS, "user-admin", &manage_users);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    for (int i = 0; i < U_COUNT; i++)
        sl_client_close(actors[i].c);
    sl_client_close(root);
    assert_int_equal(th_stop(&srv, SIGTERM), 0);
    th_cleanup(&srv);
    return 0;
}

/* --- tests -------------------------------------------------------------------------------- */

/* What root sees after one user's non-destructive rows: refused operations
 * changed nothing, allowed ones took effect. */
static void check_effects(int user)
{
    const sl_topic_t *items;
    uint32_t n;
    OK(sl_client_get_topics(root, sl_id_num(s1), &items, &n));
    assert_int_equal(n, expected("CreateTopic S1", user) == 0 ? 3 : 2);
    const sl_topic_t *t;
    OK(sl_client_get_topic(root, sl_id_num(s1), sl_id_num(t1), &t));
    assert_int_equal(t->partitions_count, expected("CreatePartitions T1", user) == 0 ? 3 : 2);
    const sl_consumer_group_t *groups;
    OK(sl_client_get_consumer_groups(root, sl_id_num(s1), sl_id_num(t1), &groups, &n));
    assert_int_equal(n, expected("CreateConsumerGroup T1", user) == 0 ? 2 : 1);
    /* Joined and left again: no member stays behind. */
    const sl_consumer_group_t *g;
    OK(sl_client_get_consumer_group(root, sl_id_num(s1), sl_id_num(t1), sl_id_name("fixture-g"),
                                    &g));
    assert_int_equal(g->members_count, 0);
    const sl_stream_t *s;
    char name[64];
    snprintf(name, sizeof(name), "made-by-%s", actors[user].name);
    OK(sl_client_get_stream(root, sl_id_name(name), &s));
    assert_null(s);
    const sl_user_t *u;
    OK(sl_client_get_user(root, sl_id_name(name), &u));
    assert_true((u != NULL) == (expected("CreateUser", user) == 0));
}

static void run_rows(const actor_t *a, int user, const row_t *table, size_t count)
{
    for (size_t i = 0; i < count; i++) {
        int got = table[i].fn(a);
        if (got != table[i].expect[user])
            fail_msg("user %s, %s: expected %d, got %d", a->name, table[i].what,
                     table[i].expect[user], got);
    }
}

static void run_matrix(int user)
{
    rebuild_fixture();
    const actor_t *a = &actors[user];
    run_rows(a, user, rows, SL_ARRAY_LEN(rows));
    check_effects(user);
    run_rows(a, user, final_rows, SL_ARRAY_LEN(final_rows));
    /* The deletes: applied exactly when allowed. */
    const sl_topic_t *t;
    OK(sl_client_get_topic(root, sl_id_num(s1), sl_id_num(t2), &t));
    assert_true((t == NULL) == (expected("DeleteTopic T2", user) == 0));
    const sl_stream_t *s;
    OK(sl_client_get_stream(root, sl_id_num(s1), &s));
    assert_true((s == NULL) == (expected("DeleteStream S1", user) == 0));
}

static void test_no_permissions(void **state)
{
    (void)state;
    run_matrix(U_NONE);
}

static void test_global_read_streams(void **state)
{
    (void)state;
    run_matrix(U_READ_STREAMS);
}

static void test_stream_manage_stream(void **state)
{
    (void)state;
    run_matrix(U_MANAGE_STREAM);
}

static void test_topic_read_topic(void **state)
{
    (void)state;
    run_matrix(U_READ_TOPIC);
}

static void test_global_manage_users(void **state)
{
    (void)state;
    run_matrix(U_MANAGE_USERS);
}

/* The two refusal channels (commands.md 1.6): a read gets status 41 with an
 * empty body and the request's operation; a metadata operation commits the
 * refusal as result 41. */
static void test_refusal_channels(void **state)
{
    (void)state;
    rebuild_fixture();
    sl_client_t *c = actors[U_NONE].c;
    sl_raw_reply_t r;
    OK(sl_client_request_raw(c, SL_OP_NON_REPLICATED, SL_CMD_GET_STREAMS, NULL, 0, &r));
    assert_false(r.evicted);
    assert_int_equal(r.status, SL_ERR_UNAUTHORIZED);
    assert_int_equal(r.operation, SL_OP_NON_REPLICATED);
    assert_int_equal(r.body_len, 0);

    sl_buf_t body;
    sl_buf_init(&body, 0);
    sl_create_stream_request_t q = {.name = sl_span_str("denied")};
    OK(sl_create_stream_request_encode(&body, &q));
    OK(sl_client_request_raw(c, SL_OP_CREATE_STREAM, 0, body.data, body.len, &r));
    assert_int_equal(r.status, 0);
    assert_int_equal(r.operation, SL_OP_CREATE_STREAM);
    static const uint8_t refused[12] = {1, 0, 0, 0, 0, 0, 0, 0, 41, 0, 0, 0};
    assert_int_equal(r.body_len, sizeof(refused));
    assert_memory_equal(r.body, refused, sizeof(refused));
    assert_true(r.op > 0 && r.commit == r.op); /* committed */
    sl_buf_free(&body);
}

/* A permission change applies to the next request of an existing session. */
static void test_grant_and_revoke(void **state)
{
    (void)state;
    rebuild_fixture();
    const actor_t *a = &actors[U_NONE];
    assert_int_equal(get_streams(a), 41);
    static const sl_permission_set_t read_streams = {.read_streams = true};
    OK(sl_client_update_permissions(root, sl_id_num(a->id), &read_streams));
    assert_int_equal(get_streams(a), 0);
    assert_int_equal(get_topic_t2(a), 0);
    OK(sl_client_update_permissions(root, sl_id_num(a->id), NULL));
    assert_int_equal(get_streams(a), 41);
    assert_int_equal(get_topic_t2(a), 41);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_no_permissions),       cmocka_unit_test(test_global_read_streams),
        cmocka_unit_test(test_stream_manage_stream), cmocka_unit_test(test_topic_read_topic),
        cmocka_unit_test(test_global_manage_users),  cmocka_unit_test(test_refusal_channels),
        cmocka_unit_test(test_grant_and_revoke),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
