/* The metadata state machine's core: life cycle, Register/Logout and the
 * client table (framing.md 5-6.1: preflight for every row meta decides, the
 * 5-reply ring, rebinds, capacity eviction), entries apply refuses, and the
 * properties the journal relies on: two replays of one seeded random journal
 * give byte-identical replies and snapshots, snapshot encode -> decode ->
 * encode is the identity, and hostile snapshot bytes never crash. */
#include "meta_testutil.h"

#include "base/xxh3.h"

#define S(name) sl_ident_name(name)
#define N(id)   sl_ident_number(id)
#define NONE    sl_span(NULL, 0)

static const sl_u128_t zero128 = {0, 0};

/* --- life cycle ------------------------------------------------------------------------------ */

static void test_create_parameters(void **state)
{
    (void)state;
    sl_meta_t *m;
    sl_span_t v = sl_span_str(TM_VERSION);
    assert_int_equal(sl_meta_create(1, v, &m), -SL_ERR_INVALID_CONFIGURATION);
    assert_null(m);
    assert_int_equal(sl_meta_create(SL_CLIENTS_TABLE_MAX + 1, v, &m),
                     -SL_ERR_INVALID_CONFIGURATION);
    assert_int_equal(sl_meta_create(8, NONE, &m), -SL_ERR_INVALID_CONFIGURATION);
    char long_version[257];
    memset(long_version, '1', 256);
    long_version[256] = 0;
    assert_int_equal(sl_meta_create(8, sl_span_str(long_version), &m),
                     -SL_ERR_INVALID_CONFIGURATION);
    assert_int_equal(sl_meta_create(8, sl_span("\xff", 1), &m), -SL_ERR_INVALID_CONFIGURATION);
    assert_int_equal(sl_meta_create(SL_CLIENTS_TABLE_MIN, v, &m), 0);
    assert_int_equal(sl_meta_last_op(m), 0);
    sl_meta_counts_t c;
    sl_meta_counts(m, &c);
    assert_int_equal(c.streams + c.topics + c.partitions + c.groups + c.users + c.clients, 0);
    assert_null(sl_meta_stream_next(m, NULL));
    assert_null(sl_meta_user_next(m, NULL));
    sl_meta_destroy(m);
    sl_meta_destroy(NULL);
}

/* --- Register / Logout ----------------------------------------------------------------------- */

static void test_register_reply(void **state)
{
    (void)state;
    tm_t t;
    tm_init(&t);
    t.op = 5;
    sl_span_t reply =
        tm_apply_full(&t, SL_OP_REGISTER, tm_client(1), 0, zero128, 0, tm_body_register(&t, 0));
    size_t len;
    uint8_t *want = tu_hex("00 00 00 00 00 00 00 00 05 00 00 00 00 00 00 00 00 2c 00 00"
                           "0c 30 2e 39 2e 30 2d 65 64 67 65 2e 35",
                           &len);
    assert_bytes_equal(reply.ptr, reply.len, want, len);
    free(want);
    const sl_meta_client_t *cl = sl_meta_client_find(t.m, tm_client(1));
    assert_non_null(cl);
    assert_int_equal(cl->epoch, 5);
    assert_int_equal(cl->user_id, 0);
    assert_int_equal(cl->watermark, 0);
    assert_int_equal(cl->ring_count, 0);
    assert_null(sl_meta_client_latest(cl));

    /* Logout: empty body, entry gone. */
    reply = tm_apply_full(&t, SL_OP_LOGOUT, tm_client(1), 1, zero128, 0, NONE);
    assert_int_equal(reply.len, 0);
    assert_null(sl_meta_client_find(t.m, tm_client(1)));
    const sl_meta_reply_t *cached;
    assert_int_equal(sl_meta_preflight(t.m, tm_client(1), 5, 2, zero128, &cached),
                     SL_META_PREFLIGHT_NO_SESSION);
    tm_free(&t);
}

static sl_span_t create_stream_as(tm_t *t, sl_u128_t client, uint64_t request, sl_u128_t stamp,
                                  const char *name)
{
    return tm_apply_full(t, SL_OP_CREATE_STREAM, client, request, stamp, 0,
                         tm_body_stream(t, name));
}

/* Session rows and the first cached reply. */
static void test_preflight_session_rows(void **state)
{
    (void)state;
    tm_t t;
    tm_init(&t);
    sl_u128_t c = tm_client(7), x = {0xAAAA, 1}, y = {0xBBBB, 2};
    const sl_meta_reply_t *cached = (const sl_meta_reply_t *)&t;
    assert_int_equal(sl_meta_preflight(t.m, c, 1, 1, zero128, &cached),
                     SL_META_PREFLIGHT_NO_SESSION);
    assert_null(cached);
    uint64_t session = tm_register(&t, c, 0);
    assert_int_equal(sl_meta_preflight(t.m, c, session - 1, 1, zero128, &cached),
                     SL_META_PREFLIGHT_SESSION_TOO_LOW);
    assert_int_equal(sl_meta_preflight(t.m, c, session + 1, 1, zero128, &cached),
                     SL_META_PREFLIGHT_DROP);
    assert_int_equal(sl_meta_preflight(t.m, c, session, 1, x, &cached), SL_META_PREFLIGHT_NEW);

    uint64_t op = t.op, ts = t.timestamp;
    sl_span_t reply = create_stream_as(&t, c, 1, x, "s1");
    uint8_t first[128];
    size_t first_len = reply.len;
    memcpy(first, reply.ptr, reply.len);
    const sl_meta_client_t *cl = sl_meta_client_find(t.m, c);
    assert_int_equal(cl->watermark, 1);
    assert_true(sl_u128_eq(cl->watermark_checksum, x));
    assert_int_equal(cl->last_commit_op, op);

    /* The same request again: the cached reply and its header facts. */
    assert_int_equal(sl_meta_preflight(t.m, c, session, 1, x, &cached), SL_META_PREFLIGHT_CACHED);
    assert_bytes_equal(cached->body.ptr, cached->body.len, first, first_len);
    assert_int_equal(cached->op, op);
    assert_int_equal(cached->timestamp, ts);
    assert_int_equal(cached->operation, SL_OP_CREATE_STREAM);
    assert_int_equal(cached->request, 1);
    assert_int_equal(sl_meta_preflight(t.m, c, session, 1, zero128, &cached),
                     SL_META_PREFLIGHT_CACHED);
    /* The watermark's number reused with other bytes: dropped. */
    assert_int_equal(sl_meta_preflight(t.m, c, session, 1, y, &cached), SL_META_PREFLIGHT_DROP);
    assert_null(cached);
    assert_string_equal(sl_meta_preflight_name(SL_META_PREFLIGHT_PAT_REPLAY), "pat_replay");
    tm_free(&t);
}

/* The 5-reply ring, gaps, cached rejections and rebinds. */
static void test_preflight_ring_and_rebind(void **state)
{
    (void)state;
    tm_t t;
    tm_init(&t);
    sl_u128_t c = tm_client(7), y = {0xBBBB, 2};
    const sl_meta_reply_t *cached;
    uint64_t session = tm_register(&t, c, 0);
    const sl_meta_client_t *cl = sl_meta_client_find(t.m, c);
    const char *names[] = {"s1", "s2", "s3", "s4", "s5", "s6"};
    for (uint64_t r = 1; r <= 6; r++)
        create_stream_as(&t, c, r, (sl_u128_t){r, 0}, names[r - 1]);
    assert_int_equal(cl->ring_count, SL_REPLY_RING_CAPACITY);
    assert_int_equal(sl_meta_preflight(t.m, c, session, 1, (sl_u128_t){1, 0}, &cached),
                     SL_META_PREFLIGHT_ALREADY_APPLIED);
    assert_int_equal(sl_meta_preflight(t.m, c, session, 2, (sl_u128_t){2, 0}, &cached),
                     SL_META_PREFLIGHT_CACHED);
    assert_int_equal(cached->request, 2);
    /* Below the watermark, cached, stamps conflict: dropped. */
    assert_int_equal(sl_meta_preflight(t.m, c, session, 3, y, &cached), SL_META_PREFLIGHT_DROP);
    assert_int_equal(sl_meta_preflight(t.m, c, session, 7, y, &cached), SL_META_PREFLIGHT_NEW);

    /* Gaps are allowed; skipped numbers below the watermark count as applied. */
    create_stream_as(&t, c, 10, zero128, "s10");
    assert_int_equal(cl->watermark, 10);
    assert_int_equal(sl_meta_preflight(t.m, c, session, 8, zero128, &cached),
                     SL_META_PREFLIGHT_ALREADY_APPLIED);
    /* A rejection is cached like a success. */
    sl_span_t dup = create_stream_as(&t, c, 11, zero128, "s10");
    assert_int_equal(tm_result(dup, NULL), SL_ERR_STREAM_NAME_ALREADY_EXISTS);
    assert_int_equal(sl_meta_preflight(t.m, c, session, 11, zero128, &cached),
                     SL_META_PREFLIGHT_CACHED);
    assert_int_equal(cached->body.len, 12);

    /* Rebind by the same user: a new epoch fences the old one; the
     * watermark and the ring survive. */
    uint64_t rebound = tm_register(&t, c, 0);
    assert_true(rebound > session);
    assert_int_equal(cl->epoch, rebound);
    assert_int_equal(cl->watermark, 11);
    assert_int_equal(sl_meta_preflight(t.m, c, session, 12, zero128, &cached),
                     SL_META_PREFLIGHT_SESSION_TOO_LOW);
    assert_int_equal(sl_meta_preflight(t.m, c, rebound, 11, zero128, &cached),
                     SL_META_PREFLIGHT_CACHED);
    assert_int_equal(sl_meta_preflight(t.m, c, rebound, 12, zero128, &cached),
                     SL_META_PREFLIGHT_NEW);

    /* Another user may not take the id: refused before journaling, and a
     * Register that slipped through commits as a rejection. */
    assert_int_equal(tm_code(&t, SL_OP_CREATE_USER, 0, tm_body_user(&t, "alice", 1, NONE)), 0);
    assert_false(sl_meta_register_allowed(t.m, c, 1));
    assert_true(sl_meta_register_allowed(t.m, c, 0));
    assert_true(sl_meta_register_allowed(t.m, tm_client(99), 1));
    sl_span_t reply = tm_apply_full(&t, SL_OP_REGISTER, c, 0, zero128, 1, tm_body_register(&t, 1));
    assert_int_equal(tm_result(reply, NULL), SL_ERR_UNAUTHENTICATED);
    assert_int_equal(cl->epoch, rebound);
    assert_int_equal(cl->user_id, 0);
    tm_free(&t);
}

static void test_capacity_eviction(void **state)
{
    (void)state;
    tm_t t;
    tm_init_cap(&t, SL_CLIENTS_TABLE_MIN);
    assert_int_equal(
        sl_meta_bootstrap_root(t.m, sl_span_str("iggy"), sl_span_str("$h"), TM_ROOT_CREATED_AT), 0);
    t.op = sl_meta_last_op(t.m) + 1;
    assert_int_equal(tm_code(&t, SL_OP_CREATE_STREAM, 0, tm_body_stream(&t, "s")), 0);
    assert_int_equal(
        tm_code(&t, SL_OP_CREATE_TOPIC_WITH_ASSIGNMENTS, 0, tm_body_topic(&t, N(0), 4, "t", NONE)),
        0);
    assert_int_equal(
        tm_code(&t, SL_OP_CREATE_CONSUMER_GROUP, 0, tm_body_group(&t, N(0), N(0), "g")), 0);
    sl_u128_t a = tm_client(1), b = tm_client(2), c = tm_client(3);
    uint64_t sa = tm_register(&t, a, 0);
    uint64_t sb = tm_register(&t, b, 0);
    /* b joins (its latest commit is now newer than a's Register)... */
    tm_apply_full(&t, SL_OP_JOIN_CONSUMER_GROUP, b, 1, zero128, 0,
                  tm_body_group_ref(&t, N(0), N(0), N(0)));
    /* ...then a commits something, so b holds the oldest latest commit. */
    create_stream_as(&t, a, 1, zero128, "a1");
    create_stream_as(&t, a, 2, zero128, "a2");
    tm_apply_full(&t, SL_OP_PURGE_STREAM, a, 3, zero128, 0, tm_body_stream_ref(&t, N(0)));
    const sl_meta_reply_t *cached;
    assert_int_equal(sl_meta_preflight(t.m, b, sb, 2, zero128, &cached), SL_META_PREFLIGHT_NEW);
    tm_register(&t, c, 0);
    assert_int_equal(sl_meta_preflight(t.m, b, sb, 2, zero128, &cached),
                     SL_META_PREFLIGHT_NO_SESSION);
    assert_int_equal(sl_meta_preflight(t.m, a, sa, 4, zero128, &cached), SL_META_PREFLIGHT_NEW);
    assert_non_null(sl_meta_client_find(t.m, c));
    sl_meta_counts_t counts;
    sl_meta_counts(t.m, &counts);
    assert_int_equal(counts.clients, 2);
    /* b's membership went with its entry; the group rebalanced. */
    sl_ident_t s0 = N(0), t0 = N(0), g0 = N(0);
    const sl_meta_group_t *g =
        sl_meta_group_find(sl_meta_topic_find(sl_meta_stream_find(t.m, &s0), &t0), &g0);
    assert_int_equal(g->members_count, 0);
    assert_int_equal(g->generation, 2);
    /* Now a (last commit: its purge) is older than c (its Register). */
    tm_register(&t, b, 0);
    assert_null(sl_meta_client_find(t.m, a));
    assert_non_null(sl_meta_client_find(t.m, c));
    tm_free(&t);
}

/* --- entries apply refuses ---------------------------------------------------------------------
 */

static void test_apply_refuses(void **state)
{
    (void)state;
    tm_t t;
    tm_init(&t);
    sl_u128_t c = tm_client(1);
    uint64_t session = tm_register(&t, c, 0);
    sl_buf_t before = tm_encode(t.m);
    sl_buf_t reply;
    sl_buf_init(&reply, 0);
    sl_meta_entry_t e = {.op = sl_meta_last_op(t.m),
                         .timestamp = t.timestamp,
                         .operation = SL_OP_CREATE_STREAM,
                         .client = c,
                         .request = 1,
                         .body = tm_body_stream(&t, "x")};
    assert_int_equal(sl_meta_apply(t.m, &e, &reply), -SL_ERR_INVALID_COMMAND); /* op not new */
    e.op = sl_meta_last_op(t.m) + 1;
    const uint8_t foreign[] = {0, 2, 4, 66, 67, 69, 127, 138, 150, 160, 161, 162, 255};
    for (size_t i = 0; i < sizeof(foreign); i++) {
        e.operation = foreign[i];
        assert_int_equal(sl_meta_apply(t.m, &e, &reply), -SL_ERR_INVALID_COMMAND);
    }
    /* Undecodable bodies for every operation meta owns. */
    const uint8_t owned[] = {1,   64,  65,  68,  128, 129, 130, 131, 133, 134, 135, 137,
                             139, 140, 141, 142, 143, 144, 145, 146, 147, 148, 149};
    const uint8_t junk[] = {0x09};
    e.body = sl_span(junk, sizeof(junk));
    for (size_t i = 0; i < sizeof(owned); i++) {
        e.operation = owned[i];
        assert_int_equal(sl_meta_apply(t.m, &e, &reply), -SL_ERR_INVALID_COMMAND);
    }
    /* A Register from client 0 cannot bind anything. */
    e.operation = SL_OP_REGISTER;
    e.client = zero128;
    e.body = tm_body_register(&t, 0);
    assert_int_equal(sl_meta_apply(t.m, &e, &reply), -SL_ERR_INVALID_COMMAND);
    assert_int_equal(reply.len, 0);
    sl_buf_t after = tm_encode(t.m);
    assert_bytes_equal(after.data, after.len, before.data, before.len);
    const sl_meta_reply_t *cached;
    assert_int_equal(sl_meta_preflight(t.m, c, session, 1, zero128, &cached),
                     SL_META_PREFLIGHT_NEW);
    sl_buf_free(&before);
    sl_buf_free(&after);
    sl_buf_free(&reply);
    tm_free(&t);
}

/* --- a seeded random journal
 * ---------------------------------------------------------------------- */

typedef struct gen {
    uint64_t rng;
    uint64_t op;
    uint64_t timestamp;
    uint64_t requests[5];
    sl_buf_t body;
    sl_buf_t scratch;
} gen_t;

static uint64_t gen_next(gen_t *g)
{
    g->rng ^= g->rng << 13;
    g->rng ^= g->rng >> 7;
    g->rng ^= g->rng << 17;
    return g->rng;
}

static uint32_t gen_below(gen_t *g, uint32_t n)
{
    return (uint32_t)(gen_next(g) % n);
}

static sl_ident_t gen_ident(gen_t *g, const char *const *names, uint32_t count)
{
    uint32_t pick = gen_below(g, count + 2);
    return pick < count ? S(names[pick]) : N(pick - count);
}

static const char *const stream_names[] = {"orders", "events", "audit"};
static const char *const topic_names[] = {"t0", "t1", "t2"};
static const char *const group_names[] = {"g0", "g1"};
static const char *const user_names[] = {"alice", "bob", "carol"};
static const char *const token_names[] = {"ci", "cd", "dev"};

static sl_span_t gen_perms(gen_t *g)
{
    sl_topic_perms_t topic = {.topic_id = gen_below(g, 3), .manage_topic = gen_below(g, 2)};
    sl_stream_perms_t streams[2] = {
        {.stream_id = gen_below(g, 3), .read_stream = true, .topics_count = 1, .topics = &topic},
        {.stream_id = gen_below(g, 3), .manage_topics = gen_below(g, 2)},
    };
    sl_permissions_t p = {.read_streams = gen_below(g, 2),
                          .manage_users = gen_below(g, 4) == 0,
                          .streams_count = gen_below(g, 3),
                          .streams = streams};
    sl_buf_reset(&g->scratch);
    assert_true(sl_permissions_encode(&g->scratch, &p));
    return sl_buf_span(&g->scratch);
}

/* Group operations (kind 8: create, else join/leave/delete). */
static uint8_t gen_group_body(gen_t *g, uint32_t kind, sl_ident_t s, sl_ident_t t, sl_buf_t *b)
{
    sl_ident_t grp = gen_ident(g, group_names, 2);
    if (gen_below(g, 2)) {
        /* Group traffic concentrates on one group so that joins meet leaves. */
        s = S("orders");
        t = S("t0");
        grp = S("g0");
    }
    if (kind == 8) {
        sl_span_t name = grp.kind == SL_IDENT_STRING ? grp.name : sl_span_str(group_names[0]);
        sl_create_consumer_group_request_t q = {s, t, name};
        assert_int_equal(sl_create_consumer_group_request_encode(b, &q), 0);
        return SL_OP_CREATE_CONSUMER_GROUP;
    }
    sl_group_target_t target = {s, t, grp};
    assert_int_equal(sl_join_consumer_group_request_encode(b, &target), 0);
    return (
        const uint8_t[]){SL_OP_JOIN_CONSUMER_GROUP,  SL_OP_JOIN_CONSUMER_GROUP,
                         SL_OP_JOIN_CONSUMER_GROUP,  SL_OP_LEAVE_CONSUMER_GROUP,
                         SL_OP_LEAVE_CONSUMER_GROUP, SL_OP_DELETE_CONSUMER_GROUP}[gen_below(g, 6)];
}

/* Stream, topic and partition operations; kinds 8 and 9 go to groups. */
static uint8_t gen_stream_body(gen_t *g, uint32_t kind, sl_buf_t *b)
{
    sl_ident_t s = gen_ident(g, stream_names, 3), t = gen_ident(g, topic_names, 3);
    sl_span_t sname = sl_span_str(stream_names[gen_below(g, 3)]);
    sl_span_t tname = sl_span_str(topic_names[gen_below(g, 3)]);
    sl_partitions_change_t pc = {s, t, 1 + gen_below(g, 3)};
    switch (kind) {
    case 0: {
        sl_create_stream_request_t q = {.name = sname};
        assert_int_equal(sl_create_stream_request_encode(b, &q), 0);
        return SL_OP_CREATE_STREAM;
    }
    case 1: {
        sl_update_stream_request_t q = {.stream_id = s, .name = sname};
        assert_int_equal(sl_update_stream_request_encode(b, &q), 0);
        return SL_OP_UPDATE_STREAM;
    }
    case 2:
        assert_int_equal(sl_delete_stream_request_encode(b, &(sl_stream_ref_t){s}), 0);
        return gen_below(g, 4) == 0 ? SL_OP_DELETE_STREAM : SL_OP_PURGE_STREAM;
    case 3: {
        uint8_t v[8];
        sl_store_u64(v, (uint64_t)(1 + gen_below(g, 4)) * 1024 * 1024);
        sl_buf_reset(&g->scratch);
        if (gen_below(g, 2))
            assert_true(
                sl_tlv_put_pair(&g->scratch, "segment_size", SL_KIND_UINT64, sl_span(v, 8)));
        sl_create_topic_request_t q = {.stream_id = s,
                                       .partitions_count = gen_below(g, 5),
                                       .name = tname,
                                       .options = sl_buf_span(&g->scratch)};
        assert_int_equal(sl_create_topic_request_encode(b, &q), 0);
        return SL_OP_CREATE_TOPIC_WITH_ASSIGNMENTS;
    }
    case 4: {
        sl_buf_reset(&g->scratch);
        if (gen_below(g, 2))
            assert_true(sl_tlv_put_pair(&g->scratch, "compression_algorithm", SL_KIND_STRING,
                                        sl_span_str("gzip")));
        sl_update_topic_request_t q = {
            .stream_id = s, .topic_id = t, .name = tname, .options = sl_buf_span(&g->scratch)};
        assert_int_equal(sl_update_topic_request_encode(b, &q), 0);
        return SL_OP_UPDATE_TOPIC;
    }
    case 5:
        assert_int_equal(sl_delete_topic_request_encode(b, &(sl_topic_ref_t){s, t}), 0);
        return gen_below(g, 3) == 0 ? SL_OP_DELETE_TOPIC : SL_OP_PURGE_TOPIC;
    case 6:
        assert_int_equal(sl_create_partitions_request_encode(b, &pc), 0);
        return gen_below(g, 2) ? SL_OP_CREATE_PARTITIONS_WITH_ASSIGNMENTS : SL_OP_DELETE_PARTITIONS;
    case 7: {
        sl_delete_segments_request_t q = {s, t, gen_below(g, 4), 1};
        assert_int_equal(sl_delete_segments_request_encode(b, &q), 0);
        return SL_OP_TRUNCATE_PARTITION;
    }
    default:
        return gen_group_body(g, kind, s, t, b);
    }
}

/* User and token operations. */
static uint8_t gen_user_body(gen_t *g, uint32_t kind, sl_buf_t *b)
{
    sl_ident_t u = gen_ident(g, user_names, 3);
    sl_span_t uname = sl_span_str(user_names[gen_below(g, 3)]);
    sl_span_t token = sl_span_str(token_names[gen_below(g, 3)]);
    switch (kind) {
    case 0: {
        sl_span_t perms = gen_below(g, 2) ? gen_perms(g) : NONE;
        sl_create_user_request_t q = {.username = uname,
                                      .status = (uint8_t)(1 + gen_below(g, 3)),
                                      .has_permissions = perms.len > 0,
                                      .permissions = perms};
        assert_int_equal(sl_meta_admit_create_user_encode(b, &q, sl_span_str("$argon2id$x")), 0);
        return SL_OP_CREATE_USER;
    }
    case 1: {
        sl_update_user_request_t q = {.user_id = u,
                                      .has_username = gen_below(g, 2),
                                      .username = uname,
                                      .has_status = true,
                                      .status = (uint8_t)gen_below(g, 4)};
        assert_int_equal(sl_update_user_request_encode(b, &q), 0);
        return SL_OP_UPDATE_USER;
    }
    case 2:
        assert_int_equal(sl_delete_user_request_encode(b, &(sl_delete_user_request_t){u}), 0);
        return SL_OP_DELETE_USER;
    case 3: {
        sl_span_t perms = gen_below(g, 3) ? gen_perms(g) : NONE;
        sl_update_permissions_request_t q = {u, perms.len > 0, perms};
        assert_int_equal(sl_update_permissions_request_encode(b, &q), 0);
        return SL_OP_UPDATE_PERMISSIONS;
    }
    case 4: {
        sl_meta_admit_change_password_t q = {u, gen_below(g, 4) != 0, sl_span_str("$new")};
        assert_int_equal(sl_meta_admit_change_password_encode(b, &q), 0);
        return SL_OP_CHANGE_PASSWORD;
    }
    case 5: {
        char digest[65];
        for (int i = 0; i < 64; i++)
            digest[i] = "0123456789abcdef"[gen_below(g, 16)];
        digest[64] = 0;
        uint64_t expiry[] = {0, UINT64_MAX, 1000000, UINT64_MAX - 5};
        sl_meta_admit_create_pat_t q = {token, expiry[gen_below(g, 4)], sl_span_str(digest)};
        assert_int_equal(sl_meta_admit_create_pat_encode(b, &q), 0);
        return SL_OP_CREATE_PERSONAL_ACCESS_TOKEN;
    }
    default:
        assert_int_equal(sl_delete_personal_access_token_request_encode(
                             b, &(sl_delete_personal_access_token_request_t){token}),
                         0);
        return SL_OP_DELETE_PERSONAL_ACCESS_TOKEN;
    }
}

static uint8_t gen_fixture_body(uint64_t step, sl_buf_t *b)
{
    if (step == 0) {
        sl_create_stream_request_t q = {.name = sl_span_str("orders")};
        assert_int_equal(sl_create_stream_request_encode(b, &q), 0);
        return SL_OP_CREATE_STREAM;
    }
    if (step == 1) {
        sl_create_topic_request_t q = {
            .stream_id = S("orders"), .partitions_count = 3, .name = sl_span_str("t0")};
        assert_int_equal(sl_create_topic_request_encode(b, &q), 0);
        return SL_OP_CREATE_TOPIC_WITH_ASSIGNMENTS;
    }
    sl_create_consumer_group_request_t q = {S("orders"), S("t0"), sl_span_str("g0")};
    assert_int_equal(sl_create_consumer_group_request_encode(b, &q), 0);
    return SL_OP_CREATE_CONSUMER_GROUP;
}

/* The next journal entry; its body lives in g->body until the next call. */
static sl_meta_entry_t gen_entry(gen_t *g)
{
    uint32_t who = gen_below(g, 5);
    g->timestamp += 1 + gen_below(g, 1000);
    sl_meta_entry_t e = {.op = g->op++, .timestamp = g->timestamp, .client = tm_client(who + 1)};
    e.user_id = gen_below(g, 4);
    sl_buf_reset(&g->body);
    uint32_t roll = gen_below(g, 100);
    if (roll < 6) {
        sl_meta_admit_register_t q = {e.user_id % 2,
                                      {SL_PROTOCOL_VERSION, sl_span_str("sdk"), sl_span_str("1")}};
        assert_int_equal(sl_meta_admit_register_encode(&g->body, &q), 0);
        e.operation = SL_OP_REGISTER;
        e.body = sl_buf_span(&g->body);
        return e;
    }
    if (roll < 9) {
        e.operation = SL_OP_LOGOUT;
        e.request = gen_below(g, 8) == 0 ? UINT64_MAX : ++g->requests[who];
        return e;
    }
    e.request = ++g->requests[who];
    e.request_checksum = (sl_u128_t){gen_below(g, 3), 0};
    if (g->op % 40 < 3) {
        /* Now and then root rebuilds orders/t0/g0, where group traffic goes. */
        e.user_id = 0;
        e.operation = gen_fixture_body(g->op % 40, &g->body);
        e.body = sl_buf_span(&g->body);
        return e;
    }
    if (gen_below(g, 5) < 3)
        e.user_id = 0; /* mostly root, so that operations get past the gates */
    e.operation = roll < 70 ? gen_stream_body(g, gen_below(g, 10), &g->body)
                            : gen_user_body(g, gen_below(g, 7), &g->body);
    e.body = sl_buf_span(&g->body);
    return e;
}

static void apply_both(sl_meta_t *a, sl_meta_t *b, const sl_meta_entry_t *e, sl_buf_t *ra,
                       sl_buf_t *rb)
{
    sl_buf_reset(ra);
    sl_buf_reset(rb);
    assert_int_equal(sl_meta_apply(a, e, ra), 0);
    assert_int_equal(sl_meta_apply(b, e, rb), 0);
    assert_bytes_equal(ra->data, ra->len, rb->data, rb->len);
}

/* Two replays of one journal agree byte for byte at every step, and a copy
 * restored from a snapshot midway continues in lockstep. */
static void test_deterministic_replay(void **state)
{
    (void)state;
    tm_t a, b, c;
    tm_init(&a);
    tm_init(&b);
    tm_init(&c);
    gen_t g = {.rng = 0xD1B54A32D192ED03ull, .op = a.op, .timestamp = TM_T0};
    sl_buf_init(&g.body, 0);
    sl_buf_init(&g.scratch, 0);
    sl_buf_t rc;
    sl_buf_init(&rc, 0);
    bool restored = false;
    uint32_t successes = 0;
    for (int i = 0; i < 6000; i++) {
        sl_meta_entry_t e = gen_entry(&g);
        apply_both(a.m, b.m, &e, &a.reply, &b.reply);
        uint32_t result;
        sl_span_t payload;
        if (a.reply.len >= 4 && sl_result_split(sl_buf_span(&a.reply), &result, &payload) == 0 &&
            result == 0)
            successes++;
        if (restored) {
            sl_buf_reset(&rc);
            assert_int_equal(sl_meta_apply(c.m, &e, &rc), 0);
            assert_bytes_equal(rc.data, rc.len, a.reply.data, a.reply.len);
        }
        if (i % 500 == 499) {
            sl_buf_t image = tm_encode(a.m);
            tm_assert_same_state(a.m, b.m);
            if (!restored) {
                assert_int_equal(sl_meta_decode(sl_buf_span(&image), c.m), 0);
                restored = true;
            }
            sl_buf_t again = tm_encode(c.m);
            assert_bytes_equal(again.data, again.len, image.data, image.len);
            sl_buf_free(&again);
            sl_buf_free(&image);
        }
    }
    /* The journal exercised real work, not only rejections. */
    assert_true(successes > 1200);
    sl_meta_counts_t counts;
    sl_meta_counts(a.m, &counts);
    assert_true(counts.streams > 0 && counts.users > 1 && counts.clients > 0);
    sl_buf_free(&rc);
    sl_buf_free(&g.body);
    sl_buf_free(&g.scratch);
    tm_free(&a);
    tm_free(&b);
    tm_free(&c);
}

/* --- snapshots
 * ------------------------------------------------------------------------------------ */

/* A small state touching every part of the image. */
static void rich_state(tm_t *t)
{
    tm_init(t);
    gen_t g = {.rng = 42, .op = t->op, .timestamp = TM_T0};
    sl_buf_init(&g.body, 0);
    sl_buf_init(&g.scratch, 0);
    for (int i = 0; i < 400; i++) {
        sl_meta_entry_t e = gen_entry(&g);
        sl_buf_reset(&t->reply);
        assert_int_equal(sl_meta_apply(t->m, &e, &t->reply), 0);
    }
    t->op = g.op;
    t->timestamp = g.timestamp + 1;
    sl_buf_free(&g.body);
    sl_buf_free(&g.scratch);
}

static void test_snapshot_round_trip(void **state)
{
    (void)state;
    tm_t t, copy;
    rich_state(&t);
    sl_meta_counts_t counts;
    sl_meta_counts(t.m, &counts);
    assert_true(counts.streams > 0 && counts.topics > 0 && counts.users > 1 && counts.clients > 0);
    sl_buf_t image = tm_encode(t.m);
    tm_init_cap(&copy, SL_CLIENTS_TABLE_DEFAULT);
    assert_int_equal(sl_meta_decode(sl_buf_span(&image), copy.m), 0);
    sl_buf_t again = tm_encode(copy.m);
    assert_bytes_equal(again.data, again.len, image.data, image.len);
    assert_int_equal(sl_meta_last_op(copy.m), sl_meta_last_op(t.m));

    /* Only each entry's newest reply survives: older requests read as applied. */
    uint32_t checked = 0;
    for (uint64_t n = 1; n <= 5; n++) {
        const sl_meta_client_t *orig = sl_meta_client_find(t.m, tm_client(n));
        const sl_meta_client_t *back = sl_meta_client_find(copy.m, tm_client(n));
        assert_true((orig == NULL) == (back == NULL));
        if (!orig)
            continue;
        assert_int_equal(back->epoch, orig->epoch);
        assert_int_equal(back->watermark, orig->watermark);
        assert_int_equal(back->memberships, orig->memberships);
        assert_int_equal(back->ring_count, orig->ring_count ? 1 : 0);
        const sl_meta_reply_t *latest = sl_meta_client_latest(orig), *cached;
        if (!latest)
            continue;
        assert_int_equal(sl_meta_preflight(copy.m, tm_client(n), back->epoch, latest->request,
                                           latest->request_checksum, &cached),
                         latest->token_created ? SL_META_PREFLIGHT_PAT_REPLAY
                                               : SL_META_PREFLIGHT_CACHED);
        if (cached) {
            assert_span_equal(cached->body, latest->body);
            assert_int_equal(cached->op, latest->op);
        }
        for (uint32_t k = 0; k < orig->ring_count; k++) {
            const sl_meta_reply_t *older = &orig->ring[k];
            if (older == latest || older->request >= latest->request)
                continue;
            assert_int_equal(sl_meta_preflight(copy.m, tm_client(n), back->epoch, older->request,
                                               zero128, &cached),
                             SL_META_PREFLIGHT_ALREADY_APPLIED);
        }
        checked++;
    }
    assert_true(checked > 0);
    /* The empty state round-trips too, and decoding replaces everything. */
    tm_t empty;
    tm_init_cap(&empty, SL_CLIENTS_TABLE_DEFAULT);
    sl_buf_t blank = tm_encode(empty.m);
    assert_int_equal(sl_meta_decode(sl_buf_span(&blank), copy.m), 0);
    tm_assert_same_state(copy.m, empty.m);
    assert_null(sl_meta_user_by_id(copy.m, 0));

    /* More clients than the table holds: refused. */
    tm_t small;
    tm_init_cap(&small, SL_CLIENTS_TABLE_MIN);
    if (counts.clients > SL_CLIENTS_TABLE_MIN)
        assert_int_equal(sl_meta_decode(sl_buf_span(&image), small.m),
                         -SL_ERR_STATE_FILE_CORRUPTED);
    tm_free(&small);
    sl_buf_free(&blank);
    tm_free(&empty);
    sl_buf_free(&again);
    sl_buf_free(&image);
    tm_free(&copy);
    tm_free(&t);
}

static void reseal(uint8_t *p, size_t len)
{
    sl_store_u64(p + len - 8, sl_xxh3_64(p, len - 8));
}

/* A user id of UINT32_MAX (the name index's free-slot marker) is refused,
 * not asserted on (found by fuzz_meta_snapshot). */
static void test_snapshot_user_id_max(void **state)
{
    (void)state;
    tm_t target;
    tm_init(&target);
    sl_buf_t b;
    sl_buf_init(&b, 0);
    sl_put_u32(&b, 0x534D4C53u); /* "SLMS" */
    sl_put_u16(&b, 1);
    sl_put_u16(&b, 0);
    sl_put_u64(&b, 1);
    sl_put_u32(&b, 1); /* one user */
    sl_put_u32(&b, UINT32_MAX);
    sl_put_u64(&b, 1);
    sl_put_u8(&b, 1);
    sl_put_u8(&b, 4);
    sl_put_bytes(&b, "iggy", 4);
    sl_put_u8(&b, 1);
    sl_put_u8(&b, 'h');
    sl_put_u8(&b, 0); /* no permissions */
    sl_put_u32(&b, 0); /* no tokens */
    sl_put_u32(&b, 0); /* no clients */
    sl_put_u32(&b, 0); /* no streams */
    sl_put_u64(&b, sl_xxh3_64(b.data, b.len));
    assert_int_equal(sl_meta_decode(sl_buf_span(&b), target.m), -SL_ERR_STATE_FILE_CORRUPTED);
    /* The same image with id 0 decodes, so the refusal is about the id. */
    sl_store_u32(b.data + 20, 0);
    sl_store_u64(b.data + b.len - 8, sl_xxh3_64(b.data, b.len - 8));
    assert_int_equal(sl_meta_decode(sl_buf_span(&b), target.m), 0);
    sl_buf_free(&b);
    tm_free(&target);
}

static void test_snapshot_hostile(void **state)
{
    (void)state;
    tm_t t, target;
    rich_state(&t);
    sl_buf_t image = tm_encode(t.m);
    tm_init(&target);
    sl_buf_t before = tm_encode(target.m);

    /* Truncation at every length: refused, target untouched. Resealing the
     * checksum gets the parser itself to see each cut. */
    for (size_t n = 0; n < image.len; n++) {
        uint8_t *cut = malloc(n ? n : 1);
        memcpy(cut, image.data, n);
        assert_int_equal(sl_meta_decode(sl_span(cut, n), target.m), -SL_ERR_STATE_FILE_CORRUPTED);
        if (n >= 16 + 8) {
            reseal(cut, n);
            assert_int_equal(sl_meta_decode(sl_span(cut, n), target.m),
                             -SL_ERR_STATE_FILE_CORRUPTED);
        }
        free(cut);
    }
    sl_buf_t after = tm_encode(target.m);
    assert_bytes_equal(after.data, after.len, before.data, before.len);
    sl_buf_free(&after);

    /* Random corruption: the checksum refuses it; resealed, the parser must
     * either refuse it or produce a state that encodes canonically. */
    uint64_t seed = 0x2545F4914F6CDD1Dull;
    uint8_t *bytes = malloc(image.len);
    for (int round = 0; round < 3000; round++) {
        memcpy(bytes, image.data, image.len);
        int flips = 1 + (int)(seed % 4);
        for (int f = 0; f < flips; f++) {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            bytes[(seed >> 8) % (image.len - 8)] ^= (uint8_t)(1u << (seed % 8));
        }
        assert_int_equal(sl_meta_decode(sl_span(bytes, image.len), target.m),
                         -SL_ERR_STATE_FILE_CORRUPTED);
        reseal(bytes, image.len);
        tm_t fresh;
        tm_init_cap(&fresh, SL_CLIENTS_TABLE_DEFAULT);
        if (sl_meta_decode(sl_span(bytes, image.len), fresh.m) == 0) {
            sl_buf_t re = tm_encode(fresh.m);
            tm_t second;
            tm_init_cap(&second, SL_CLIENTS_TABLE_DEFAULT);
            assert_int_equal(sl_meta_decode(sl_buf_span(&re), second.m), 0);
            tm_assert_same_state(fresh.m, second.m);
            tm_free(&second);
            sl_buf_free(&re);
        }
        tm_free(&fresh);
    }
    free(bytes);

    /* Huge counts with nothing behind them fail before allocating. */
    uint8_t huge[16 + 4 + 8];
    memcpy(huge, image.data, 16);
    sl_store_u32(huge + 16, UINT32_MAX);
    reseal(huge, sizeof(huge));
    assert_int_equal(sl_meta_decode(sl_span(huge, sizeof(huge)), target.m),
                     -SL_ERR_STATE_FILE_CORRUPTED);
    sl_buf_free(&before);
    sl_buf_free(&image);
    tm_free(&target);
    tm_free(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_create_parameters),
        cmocka_unit_test(test_register_reply),
        cmocka_unit_test(test_preflight_session_rows),
        cmocka_unit_test(test_preflight_ring_and_rebind),
        cmocka_unit_test(test_capacity_eviction),
        cmocka_unit_test(test_apply_refuses),
        cmocka_unit_test(test_deterministic_replay),
        cmocka_unit_test(test_snapshot_round_trip),
        cmocka_unit_test(test_snapshot_hostile),
        cmocka_unit_test(test_snapshot_user_id_max),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
