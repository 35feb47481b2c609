/* Metadata durability against the real sluiced: every Get* reply body is
 * byte-equal across SIGTERM, kill -9 and snapshot + journal replay; a torn
 * journal tail is cut at boot; corrupt superblocks refuse to boot. */
#include <fcntl.h>
#include <inttypes.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
// clang-format off
#include <cmocka.h>
// clang-format on

#include <sluice/client.h>

#include "harness.h"
#include "raw.h"
#include "wire/command.h"
#include "wire/header.h"

#define MIB               (1024ull * 1024ull)
#define SECOND_US         1000000ull
#define OK(expr)          assert_int_equal((expr), 0)
#define FAILS(expr, code) assert_int_equal((expr), -(code))

static th_server_t srv;
static sl_client_t *root;
static char root_token[128];
static uint32_t dave_id; /* a deleted user: its id is the lowest free one */

static int setup(void **state)
{
    (void)state;
    if (!th_start(&srv, NULL))
        return -1;
    root = th_client(srv.port, "iggy", "iggy");
    return root ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    sl_client_close(root);
    if (th_alive(&srv))
        th_stop(&srv, SIGTERM);
    th_cleanup(&srv);
    return 0;
}

/* --- capturing every read ---------------------------------------------------------------- */

enum { CAPTURE_MAX = 256 };

typedef struct capture_item {
    uint32_t code;
    uint8_t request[32];
    size_t request_len;
    uint8_t *reply;
    size_t reply_len;
} capture_item_t;

typedef struct capture {
    size_t count;
    capture_item_t items[CAPTURE_MAX];
} capture_t;

static void put_num_ident(capture_item_t *it, uint32_t id)
{
    uint8_t *p = it->request + it->request_len;
    p[0] = 1; /* numeric */
    p[1] = 4;
    sl_store_u32(p + 2, id);
    it->request_len += 6;
}

static capture_item_t *add(capture_t *c, uint32_t code)
{
    assert_true(c->count < CAPTURE_MAX);
    capture_item_t *it = &c->items[c->count++];
    *it = (capture_item_t){.code = code};
    return it;
}

/* Sends one read and returns a copy of its reply body. */
static void fetch(sl_client_t *client, capture_item_t *it)
{
    sl_raw_reply_t r;
    OK(sl_client_request_raw(client, SL_OP_NON_REPLICATED, it->code, it->request, it->request_len,
                             &r));
    assert_false(r.evicted);
    assert_int_equal(r.status, 0);
    it->reply_len = r.body_len;
    it->reply = malloc(r.body_len ? r.body_len : 1);
    assert_non_null(it->reply);
    memcpy(it->reply, r.body, r.body_len);
}

static void capture_free(capture_t *c)
{
    for (size_t i = 0; i < c->count; i++)
        free(c->items[i].reply);
    c->count = 0;
}

/* Every Get* of the state, as the client sees it: streams, topics, groups,
 * users, the caller's tokens. */
static void capture(sl_client_t *client, capture_t *c)
{
    c->count = 0;
    const sl_stream_t *streams;
    uint32_t n;
    OK(sl_client_get_streams(client, &streams, &n));
    uint32_t sids[32];
    assert_true(n <= 32);
    for (uint32_t i = 0; i < n; i++)
        sids[i] = streams[i].id;
    uint32_t streams_count = n;
    fetch(client, add(c, SL_CMD_GET_STREAMS));
    for (uint32_t i = 0; i < streams_count; i++) {
        capture_item_t *it = add(c, SL_CMD_GET_STREAM);
        put_num_ident(it, sids[i]);
        fetch(client, it);
        it = add(c, SL_CMD_GET_TOPICS);
        put_num_ident(it, sids[i]);
        fetch(client, it);
        const sl_topic_t *topics;
        OK(sl_client_get_topics(client, sl_id_num(sids[i]), &topics, &n));
        uint32_t tids[32], topics_count = n;
        assert_true(n <= 32);
        for (uint32_t k = 0; k < n; k++)
            tids[k] = topics[k].id;
        for (uint32_t k = 0; k < topics_count; k++) {
            it = add(c, SL_CMD_GET_TOPIC);
            put_num_ident(it, sids[i]);
            put_num_ident(it, tids[k]);
            fetch(client, it);
            it = add(c, SL_CMD_GET_CONSUMER_GROUPS);
            put_num_ident(it, sids[i]);
            put_num_ident(it, tids[k]);
            fetch(client, it);
            const sl_consumer_group_t *groups;
            OK(sl_client_get_consumer_groups(client, sl_id_num(sids[i]), sl_id_num(tids[k]),
                                             &groups, &n));
            uint32_t gids[32], groups_count = n;
            assert_true(n <= 32);
            for (uint32_t g = 0; g < n; g++)
                gids[g] = groups[g].id;
            for (uint32_t g = 0; g < groups_count; g++) {
                it = add(c, SL_CMD_GET_CONSUMER_GROUP);
                put_num_ident(it, sids[i]);
                put_num_ident(it, tids[k]);
                put_num_ident(it, gids[g]);
                fetch(client, it);
            }
        }
    }
    const sl_user_t *users;
    OK(sl_client_get_users(client, &users, &n));
    uint32_t uids[32], users_count = n;
    assert_true(n <= 32);
    for (uint32_t i = 0; i < n; i++)
        uids[i] = users[i].id;
    fetch(client, add(c, SL_CMD_GET_USERS));
    for (uint32_t i = 0; i < users_count; i++) {
        capture_item_t *it = add(c, SL_CMD_GET_USER);
        put_num_ident(it, uids[i]);
        fetch(client, it);
    }
    fetch(client, add(c, SL_CMD_GET_PERSONAL_ACCESS_TOKENS));
}

/* Replays every request of want and requires byte-equal reply bodies. */
static void assert_same(sl_client_t *client, const capture_t *want)
{
    for (size_t i = 0; i < want->count; i++) {
        capture_item_t now = want->items[i];
        now.reply = NULL;
        fetch(client, &now);
        if (now.reply_len != want->items[i].reply_len ||
            memcmp(now.reply, want->items[i].reply, now.reply_len) != 0)
            fail_msg("code %u (request %zu of %zu): the reply body changed across the restart "
                     "(%zu bytes before, %zu after)",
                     now.code, i, want->count, want->items[i].reply_len, now.reply_len);
        free(now.reply);
    }
    /* Nothing new appeared either: the same enumeration gives the same list. */
    capture_t *again = calloc(1, sizeof(*again));
    assert_non_null(again);
    capture(client, again);
    assert_int_equal(again->count, want->count);
    capture_free(again);
    free(again);
}

/* --- server life ----------------------------------------------------------------------------- */

static void restart_with(int sig, const char *extra_config)
{
    sl_client_close(root);
    root = NULL;
    int status = th_stop(&srv, sig);
    if (sig == SIGKILL)
        assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    else
        assert_int_equal(status, 0);
    th_options_t opt = {.data_dir = srv.data_dir, .extra_config = extra_config};
    assert_true(th_start(&srv, &opt));
    root = th_client(srv.port, "iggy", "iggy");
    assert_non_null(root);
}

static void restart(int sig)
{
    restart_with(sig, NULL);
}

static void meta_path(char *out, size_t len, const char *file)
{
    snprintf(out, len, "%s/data/metadata/%s", srv.data_dir, file);
}

static bool file_exists(const char *file)
{
    char path[512];
    meta_path(path, sizeof(path), file);
    struct stat st;
    return stat(path, &st) == 0;
}

/* --- the state ----------------------------------------------------------------------------------
 */

static const sl_topic_permission_t alice_topic = {
    .topic_id = 0, .read_topic = true, .poll_messages = true};
static const sl_stream_permission_t alice_stream = {.stream_id = 0,
                                                    .read_stream = true,
                                                    .manage_topics = true,
                                                    .topics_count = 1,
                                                    .topics = &alice_topic};
static const sl_permission_set_t alice_perms = {
    .read_streams = true, .poll_messages = true, .streams_count = 1, .streams = &alice_stream};

static void build_streams_and_topics(void)
{
    const sl_stream_t *s;
    OK(sl_client_create_stream(root, "d-orders", &s));
    assert_int_equal(s->id, 0);
    OK(sl_client_create_stream(root, "d-temp", NULL));
    OK(sl_client_create_stream(root, "d-users", NULL));
    OK(sl_client_create_stream(root, "d-empty", NULL));
    OK(sl_client_delete_stream(root, sl_id_name("d-temp"))); /* a hole at id 1 */
    OK(sl_client_update_stream(root, sl_id_name("d-users"), "d-people"));

    static const char seg[] = "128 MiB", week[] = "7 days";
    sl_option_t extra[2] = {
        {"segment_size", 2, (const uint8_t *)seg, sizeof(seg) - 1},
        {"message_expiry", 2, (const uint8_t *)week, sizeof(week) - 1},
    };
    sl_topic_options_t o = {.set = SL_TOPIC_OPT_COMPRESSION,
                            .compression = SL_TOPIC_COMPRESSION_GZIP,
                            .extra_count = 2,
                            .extra = extra};
    OK(sl_client_create_topic(root, sl_id_num(0), "events", 3, &o, NULL));
    OK(sl_client_create_topic(root, sl_id_num(0), "audit", 0, NULL, NULL));
    OK(sl_client_create_topic(root, sl_id_num(0), "tmp", 1, NULL, NULL));
    OK(sl_client_create_partitions(root, sl_id_num(0), sl_id_name("audit"), 5));
    OK(sl_client_delete_partitions(root, sl_id_num(0), sl_id_name("audit"), 2));
    OK(sl_client_delete_topic(root, sl_id_num(0), sl_id_name("tmp")));
    sl_option_t hour = {"message_expiry", 2, (const uint8_t *)"1h", 2};
    o = (sl_topic_options_t){.set = SL_TOPIC_OPT_MAX_TOPIC_SIZE,
                             .max_topic_size = 1024 * MIB,
                             .extra_count = 1,
                             .extra = &hour};
    OK(sl_client_update_topic(root, sl_id_num(0), sl_id_name("events"), "events-v2", &o));
    o = (sl_topic_options_t){.set = SL_TOPIC_OPT_ENFORCE_FSYNC | SL_TOPIC_OPT_SEGMENT_SIZE,
                             .enforce_fsync = true,
                             .segment_size = 16 * MIB};
    OK(sl_client_create_topic(root, sl_id_name("d-people"), "signups", 1, &o, NULL));

    OK(sl_client_create_consumer_group(root, sl_id_num(0), sl_id_num(0), "g-a", NULL));
    OK(sl_client_create_consumer_group(root, sl_id_num(0), sl_id_num(0), "g-b", NULL));
    OK(sl_client_create_consumer_group(root, sl_id_num(0), sl_id_num(0), "g-c", NULL));
    OK(sl_client_delete_consumer_group(root, sl_id_num(0), sl_id_num(0), sl_id_name("g-b")));
    OK(sl_client_create_consumer_group(root, sl_id_num(0), sl_id_name("audit"), "g-audit", NULL));
}

static void build_users_and_tokens(void)
{
    const sl_user_t *u;
    OK(sl_client_create_user(root, "alice", "alice-pass", SL_USER_STATUS_ACTIVE, &alice_perms,
                             NULL));
    OK(sl_client_create_user(root, "bob", "bob-pass", SL_USER_STATUS_INACTIVE, NULL, NULL));
    OK(sl_client_create_user(root, "carol", "carol-pass", SL_USER_STATUS_ACTIVE, NULL, NULL));
    OK(sl_client_create_user(root, "dave", "dave-pass", SL_USER_STATUS_ACTIVE, NULL, &u));
    dave_id = u->id;
    OK(sl_client_create_user(root, "zed", "zed-pass", SL_USER_STATUS_ACTIVE, NULL, NULL));
    OK(sl_client_delete_user(root, sl_id_num(dave_id)));
    OK(sl_client_update_user(root, sl_id_name("carol"), "carol-2", 0));
    OK(sl_client_update_permissions(root, sl_id_name("zed"), &alice_perms));
    OK(sl_client_change_password(root, sl_id_name("alice"), "alice-pass", "alice-pass-2"));

    const char *token;
    OK(sl_client_create_token(root, "root-ci", 0, &token));
    snprintf(root_token, sizeof(root_token), "%s", token);
    OK(sl_client_create_token(root, "root-hour", 3600 * SECOND_US, &token));
    OK(sl_client_create_token(root, "root-gone", 0, &token));
    OK(sl_client_delete_token(root, "root-gone"));
    sl_client_t *alice = th_client(srv.port, "alice", "alice-pass-2");
    assert_non_null(alice);
    OK(sl_client_create_token(alice, "alice-t", 0, &token));
    sl_client_close(alice);
}

/* Alice's own view (her tokens) next to root's. */
static void capture_alice(capture_t *c)
{
    sl_client_t *alice = th_client(srv.port, "alice", "alice-pass-2");
    assert_non_null(alice);
    c->count = 0;
    fetch(alice, add(c, SL_CMD_GET_PERSONAL_ACCESS_TOKENS));
    capture_item_t *it = add(c, SL_CMD_GET_USER);
    put_num_ident(it, 1);
    fetch(alice, it);
    sl_client_close(alice);
}

static capture_t before, alice_before;

/* --- tests -------------------------------------------------------------------------------------
 */

static void test_rich_state_survives_sigterm(void **state)
{
    (void)state;
    build_streams_and_topics();
    build_users_and_tokens();
    capture(root, &before);
    assert_true(before.count > 15);
    capture_alice(&alice_before);

    restart(SIGTERM);
    assert_same(root, &before);
    capture_t alice_now;
    capture_alice(&alice_now);
    assert_int_equal(alice_now.count, alice_before.count);
    for (size_t i = 0; i < alice_now.count; i++) {
        assert_int_equal(alice_now.items[i].reply_len, alice_before.items[i].reply_len);
        assert_memory_equal(alice_now.items[i].reply, alice_before.items[i].reply,
                            alice_now.items[i].reply_len);
    }
    capture_free(&alice_now);

    /* Hashes survived too: the token and the changed password log in. */
    sl_client_t *c;
    OK(sl_client_connect("127.0.0.1", srv.port, NULL, &c));
    sl_identity_t me;
    OK(sl_client_login_token(c, root_token, &me));
    assert_int_equal(me.user_id, 0);
    OK(sl_client_logout(c));
    FAILS(sl_client_login(c, "alice", "alice-pass", NULL), SL_ERR_INVALID_CREDENTIALS);
    OK(sl_client_login(c, "alice", "alice-pass-2", &me));
    assert_int_equal(me.user_id, 1);
    sl_client_close(c);
}

static void test_survives_kill9(void **state)
{
    (void)state;
    /* The allocators continue where they were: lowest free ids, group ids
     * never reused. */
    const sl_stream_t *s;
    OK(sl_client_create_stream(root, "d-after", &s));
    assert_int_equal(s->id, 1);
    const sl_consumer_group_t *g;
    OK(sl_client_create_consumer_group(root, sl_id_num(0), sl_id_num(0), "g-d", &g));
    assert_int_equal(g->id, 3);
    const sl_user_t *u;
    OK(sl_client_create_user(root, "erin", "erin-pass", SL_USER_STATUS_ACTIVE, NULL, &u));
    assert_int_equal(u->id, dave_id);
    OK(sl_client_purge_stream(root, sl_id_num(0)));
    capture_free(&before);
    capture(root, &before);

    /* kill -9 straight after the last acknowledged write. */
    OK(sl_client_update_stream(root, sl_id_name("d-after"), "d-after-kill"));
    capture_free(&before);
    capture(root, &before);
    restart(SIGKILL);
    assert_same(root, &before);
    OK(sl_client_get_stream(root, sl_id_name("d-after-kill"), &s));
    assert_non_null(s);
}

static sl_span_t stream_body(sl_buf_t *b, const char *name)
{
    sl_buf_reset(b);
    sl_put_u8(b, (uint8_t)strlen(name));
    sl_put_span(b, sl_span_str(name));
    return sl_buf_span(b);
}

/* The client table is metadata too: after kill -9 a client that logs in
 * again under its client id (a rebind keeps the watermark) and retries its
 * last request gets the committed reply again, not a second apply
 * (framing.md 6.1: the latest reply of each entry survives a restart). */
static void test_dedup_survives_kill9(void **state)
{
    (void)state;
    static raw_session_t r; /* 1 MiB frame buffer */
    raw_open(&r, srv.port);
    assert_int_equal(raw_login(&r, "iggy", "iggy").result, 0);
    sl_buf_t one, two;
    sl_buf_init(&one, 0);
    sl_buf_init(&two, 0);
    assert_int_equal(raw_meta(&r, SL_OP_CREATE_STREAM, stream_body(&one, "dedup-1")).result, 0);
    raw_reply_t rep = raw_meta(&r, SL_OP_CREATE_STREAM, stream_body(&two, "dedup-2"));
    assert_int_equal(rep.result, 0);
    static uint8_t saved[4096];
    size_t saved_len = (size_t)r.frame_len;
    assert_true(saved_len <= sizeof(saved));
    memcpy(saved, r.frame, saved_len);

    restart(SIGKILL); /* the raw connection dies with the server: no logout */
    raw_close(&r);
    sl_u128_t client = r.client;
    raw_open(&r, srv.port);
    r.client = client;
    assert_int_equal(raw_login(&r, "iggy", "iggy").result, 0);
    rep = raw_call(&r, SL_OP_CREATE_STREAM, 0, 2, r.session, sl_buf_span(&two), true);
    assert_false(rep.evicted);
    assert_int_equal(rep.status, 0);
    assert_int_equal(rep.result, 0);
    assert_int_equal((size_t)r.frame_len, saved_len);
    assert_memory_equal(r.frame, saved, saved_len);
    /* The older one: cached or "already applied", never applied again. */
    rep = raw_call(&r, SL_OP_CREATE_STREAM, 0, 1, r.session, sl_buf_span(&one), true);
    assert_false(rep.evicted);
    assert_true(rep.result == 0 || rep.result == SL_ERR_REQUEST_ALREADY_APPLIED);
    /* The numbering goes on above the watermark. */
    r.request = 2;
    assert_int_equal(raw_meta(&r, SL_OP_CREATE_STREAM, stream_body(&one, "dedup-3")).result, 0);
    const sl_stream_t *items;
    uint32_t n, seen = 0;
    OK(sl_client_get_streams(root, &items, &n));
    for (uint32_t i = 0; i < n; i++)
        seen += strncmp(items[i].name, "dedup-", 6) == 0;
    assert_int_equal(seen, 3);
    raw_close(&r);
    sl_buf_free(&one);
    sl_buf_free(&two);
}

/* Parses "checkpoint op C, R entries replayed" from the boot log. */
static void boot_counts(uint64_t *checkpoint_op, uint64_t *replayed)
{
    const char *log = th_log(&srv);
    const char *p = strstr(log, "checkpoint op ");
    assert_non_null(p);
    assert_int_equal(sscanf(p, "checkpoint op %" SCNu64 ", %" SCNu64 " entries replayed",
                            checkpoint_op, replayed),
                     2);
}

static sl_span_t group_body(sl_buf_t *b, const char *stream, const char *topic, const char *group)
{
    sl_buf_reset(b);
    const char *names[3] = {stream, topic, group};
    for (int i = 0; i < 3; i++) {
        sl_put_u8(b, 2); /* string identifier */
        sl_put_u8(b, (uint8_t)strlen(names[i]));
        sl_put_span(b, sl_span_str(names[i]));
    }
    return sl_buf_span(b);
}

static void test_checkpoint_snapshot_and_replay(void **state)
{
    (void)state;
    /* With checkpoints every 5 ops, a dozen commits after the login leave a
     * snapshot and a few journal entries above it. A group member joins
     * early, so its membership (and client-table entry) is in the snapshot. */
    restart_with(SIGTERM, "[metadata]\ncheckpoint_interval = 5\n");
    static raw_session_t m; /* 1 MiB frame buffer */
    sl_buf_t body;
    sl_buf_init(&body, 0);
    for (int i = 0; i < 4; i++) {
        char name[32];
        snprintf(name, sizeof(name), "ckpt-%d", i);
        OK(sl_client_create_stream(root, name, NULL));
        OK(sl_client_create_topic(root, sl_id_name(name), "t", 2, NULL, NULL));
        OK(sl_client_create_consumer_group(root, sl_id_name(name), sl_id_name("t"), "g", NULL));
        if (i == 0) {
            raw_open(&m, srv.port);
            assert_int_equal(raw_login(&m, "iggy", "iggy").result, 0);
            raw_reply_t rep =
                raw_meta(&m, SL_OP_JOIN_CONSUMER_GROUP, group_body(&body, "ckpt-0", "t", "g"));
            assert_int_equal(rep.result, 0);
        }
    }
    assert_true(file_exists("superblock.a"));
    assert_true(file_exists("superblock.b"));
    assert_true(file_exists("snapshot.bin"));
    assert_true(file_exists("journal.wal"));
    capture_free(&before);
    capture(root, &before);
    const sl_consumer_group_t *g;
    OK(sl_client_get_consumer_group(root, sl_id_name("ckpt-0"), sl_id_name("t"), sl_id_name("g"),
                                    &g));
    assert_int_equal(g->members_count, 1);

    restart(SIGKILL); /* the member's connection dies without a logout */
    raw_close(&m);
    uint64_t checkpoint_op = 0, replayed = 0;
    boot_counts(&checkpoint_op, &replayed);
    assert_true(checkpoint_op > 0);
    assert_true(replayed > 0);
    assert_same(root, &before);

    /* And once more through a clean stop. */
    restart(SIGTERM);
    boot_counts(&checkpoint_op, &replayed);
    assert_true(checkpoint_op > 0);
    assert_same(root, &before);

    /* The member comes back under its client id: still a member, and it can
     * leave. */
    sl_u128_t client = m.client;
    raw_open(&m, srv.port);
    m.client = client;
    assert_int_equal(raw_login(&m, "iggy", "iggy").result, 0);
    raw_reply_t rep = raw_read(&m, SL_CMD_GET_ME, sl_span(NULL, 0));
    assert_int_equal(rep.status, 0);
    assert_true(rep.payload.len >= 4);
    assert_int_equal(sl_load_u32(rep.payload.ptr + rep.payload.len - 16), 1); /* groups */
    m.request = 100; /* above anything it used before */
    rep = raw_meta(&m, SL_OP_LEAVE_CONSUMER_GROUP, group_body(&body, "ckpt-0", "t", "g"));
    assert_int_equal(rep.status, 0);
    assert_int_equal(rep.result, 0);
    OK(sl_client_get_consumer_group(root, sl_id_name("ckpt-0"), sl_id_name("t"), sl_id_name("g"),
                                    &g));
    assert_int_equal(g->members_count, 0);
    raw_close(&m);
    sl_buf_free(&body);
}

static void append_garbage(const char *file, size_t n)
{
    char path[512];
    meta_path(path, sizeof(path), file);
    int fd = open(path, O_WRONLY | O_APPEND);
    assert_true(fd >= 0);
    uint8_t junk[64];
    for (size_t i = 0; i < sizeof(junk); i++)
        junk[i] = (uint8_t)(0xA5 ^ (i * 37));
    assert_true(n <= sizeof(junk));
    assert_int_equal(write(fd, junk, n), (ssize_t)n);
    close(fd);
}

static void test_torn_journal_tail(void **state)
{
    (void)state;
    OK(sl_client_create_stream(root, "before-tear", NULL));
    capture_free(&before);
    capture(root, &before);
    sl_client_close(root);
    root = NULL;
    assert_int_equal(th_stop(&srv, SIGTERM), 0);
    append_garbage("journal.wal", 37);

    th_options_t opt = {.data_dir = srv.data_dir};
    assert_true(th_start(&srv, &opt));
    assert_non_null(strstr(th_log(&srv), "torn journal tail"));
    root = th_client(srv.port, "iggy", "iggy");
    assert_non_null(root);
    assert_same(root, &before);

    /* The journal still takes appends after the cut. */
    OK(sl_client_create_stream(root, "after-tear", NULL));
    restart(SIGKILL);
    const sl_stream_t *s;
    OK(sl_client_get_stream(root, sl_id_name("after-tear"), &s));
    assert_non_null(s);
    OK(sl_client_get_stream(root, sl_id_name("before-tear"), &s));
    assert_non_null(s);
}

static void flip_byte(const char *file)
{
    char path[512];
    meta_path(path, sizeof(path), file);
    int fd = open(path, O_RDWR);
    assert_true(fd >= 0);
    struct stat st;
    assert_int_equal(fstat(fd, &st), 0);
    assert_true(st.st_size > 64);
    off_t at = st.st_size / 2;
    uint8_t b;
    assert_int_equal(pread(fd, &b, 1, at), 1);
    b ^= 0x5A;
    assert_int_equal(pwrite(fd, &b, 1, at), 1);
    close(fd);
}

static void test_corrupt_superblocks_refuse_to_boot(void **state)
{
    (void)state;
    sl_client_close(root);
    root = NULL;
    assert_int_equal(th_stop(&srv, SIGTERM), 0);
    assert_true(file_exists("superblock.a") && file_exists("superblock.b"));
    flip_byte("superblock.a");
    flip_byte("superblock.b");
    th_options_t opt = {.data_dir = srv.data_dir};
    int status = 0;
    assert_false(th_try_start(&srv, &opt, &status));
    assert_true(WIFEXITED(status));
    assert_int_not_equal(WEXITSTATUS(status), 0);
    assert_int_not_equal(WEXITSTATUS(status), 77);
    const char *log = th_log(&srv);
    assert_non_null(strstr(log, "superblock"));
    assert_non_null(strstr(log, "refusing to boot"));
    assert_null(strstr(log, "listening on"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rich_state_survives_sigterm),
        cmocka_unit_test(test_survives_kill9),
        cmocka_unit_test(test_dedup_survives_kill9),
        cmocka_unit_test(test_checkpoint_snapshot_and_replay),
        cmocka_unit_test(test_torn_journal_tail),
        cmocka_unit_test(test_corrupt_superblocks_refuse_to_boot),
    };
    int rc = cmocka_run_group_tests(tests, setup, teardown);
    capture_free(&before);
    capture_free(&alice_before);
    return rc;
}
