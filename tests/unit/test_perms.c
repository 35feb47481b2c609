/* wire/perms: the permissions.md 1 example (parse, unpack, encode byte for
 * byte), the root set, truncation, lenient flag reading, and every rule of
 * permissions.md 2.2 checked grant by grant from a table. */
#include "testutil.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "wire/perms.h"

static const char example_hex[] = "00 00 00 00 00 01 00 00 00 00 01 01 00 00 00 00"
                                  "01 00 00 01 00 01 02 00 00 00 00 01 00 00 00 00";

/* --- encoding -------------------------------------------------------------------- */

static void test_example(void **state)
{
    (void)state;
    size_t n;
    uint8_t *bytes = tu_hex(example_hex, &n);
    assert_int_equal(n, 32);
    sl_reader_t r = sl_reader(sl_span(bytes, n));
    sl_span_t raw;
    assert_true(sl_permissions_parse(&r, &raw));
    assert_true(sl_reader_done(&r));
    assert_ptr_equal(raw.ptr, bytes);
    assert_int_equal(raw.len, 32);

    sl_arena_t arena;
    sl_arena_init(&arena, 0, 0);
    sl_permissions_t p;
    assert_true(sl_permissions_unpack(raw, &arena, &p));
    assert_false(p.manage_servers || p.read_servers || p.manage_users || p.read_users ||
                 p.manage_streams || p.manage_topics || p.read_topics || p.poll_messages ||
                 p.send_messages);
    assert_true(p.read_streams);
    assert_int_equal(p.streams_count, 1);
    const sl_stream_perms_t *s = &p.streams[0];
    assert_int_equal(s->stream_id, 1);
    assert_false(s->manage_stream || s->manage_topics || s->read_topics || s->send_messages);
    assert_true(s->read_stream);
    assert_true(s->poll_messages);
    assert_int_equal(s->topics_count, 1);
    const sl_topic_perms_t *t = &s->topics[0];
    assert_int_equal(t->topic_id, 2);
    assert_false(t->manage_topic || t->poll_messages || t->send_messages);
    assert_true(t->read_topic);

    sl_buf_t b;
    sl_buf_init(&b, 0);
    assert_true(sl_permissions_encode(&b, &p));
    assert_bytes_equal(b.data, b.len, bytes, n);

    /* The same set built by hand encodes to the same bytes. */
    sl_topic_perms_t topic = {.topic_id = 2, .read_topic = true};
    sl_stream_perms_t stream = {.stream_id = 1,
                                .read_stream = true,
                                .poll_messages = true,
                                .topics_count = 1,
                                .topics = &topic};
    sl_permissions_t built = {.read_streams = true, .streams_count = 1, .streams = &stream};
    sl_buf_reset(&b);
    assert_true(sl_permissions_encode(&b, &built));
    assert_bytes_equal(b.data, b.len, bytes, n);

    sl_buf_free(&b);
    sl_arena_free(&arena);
    free(bytes);
}

static void test_root(void **state)
{
    (void)state;
    sl_permissions_t root = sl_permissions_root();
    sl_buf_t b;
    sl_buf_init(&b, 0);
    assert_true(sl_permissions_encode(&b, &root));
    size_t n;
    uint8_t *want = tu_hex("01 01 01 01 01 01 01 01 01 01 00", &n);
    assert_bytes_equal(b.data, b.len, want, n);
    sl_reader_t r = sl_reader(sl_buf_span(&b));
    sl_span_t raw;
    assert_true(sl_permissions_parse(&r, &raw));
    assert_int_equal(raw.len, 11);
    sl_arena_t arena;
    sl_arena_init(&arena, 0, 0);
    sl_permissions_t p;
    assert_true(sl_permissions_unpack(raw, &arena, &p));
    assert_true(p.manage_servers && p.read_servers && p.manage_users && p.read_users &&
                p.manage_streams && p.read_streams && p.manage_topics && p.read_topics &&
                p.poll_messages && p.send_messages);
    assert_int_equal(p.streams_count, 0);
    assert_null(p.streams);
    assert_null(arena.head); /* nothing to allocate */
    sl_arena_free(&arena);
    sl_buf_free(&b);
    free(want);
}

static void test_truncation_and_trailing(void **state)
{
    (void)state;
    const char *const sets[] = {example_hex, "01 01 01 01 01 01 01 01 01 01 00"};
    for (size_t k = 0; k < SL_ARRAY_LEN(sets); k++) {
        size_t n;
        uint8_t *full = tu_hex(sets[k], &n);
        for (size_t len = 0; len < n; len++) {
            uint8_t *cut = malloc(len ? len : 1);
            assert_non_null(cut);
            memcpy(cut, full, len);
            sl_reader_t r = sl_reader(sl_span(cut, len));
            sl_span_t raw;
            if (sl_permissions_parse(&r, &raw))
                fail_msg("set %zu: prefix of %zu bytes accepted", k, len);
            sl_arena_t arena;
            sl_arena_init(&arena, 0, 0);
            sl_permissions_t p;
            assert_false(sl_permissions_unpack(sl_span(cut, len), &arena, &p));
            sl_arena_free(&arena);
            free(cut);
        }
        /* Trailing bytes: parse stops at the end of the set; unpack of a
         * span with extra bytes is refused. */
        uint8_t *longer = malloc(n + 3);
        assert_non_null(longer);
        memcpy(longer, full, n);
        memset(longer + n, 0x01, 3);
        sl_reader_t r = sl_reader(sl_span(longer, n + 3));
        sl_span_t raw;
        assert_true(sl_permissions_parse(&r, &raw));
        assert_int_equal(raw.len, n);
        assert_int_equal(sl_reader_left(&r), 3);
        sl_arena_t arena;
        sl_arena_init(&arena, 0, 0);
        sl_permissions_t p;
        assert_false(sl_permissions_unpack(sl_span(longer, n + 3), &arena, &p));
        sl_arena_free(&arena);
        free(longer);
        free(full);
    }
}

static void test_lenient_flags(void **state)
{
    (void)state;
    /* The example with every 1 replaced by other non-zero values: the ids
     * stay, flags and continuation bytes of 2, 0x80, 0xff read as true. */
    size_t n;
    uint8_t *bytes = tu_hex("00 00 00 00 00 02 00 00 00 00 80 01 00 00 00 00"
                            "ff 00 00 07 00 40 02 00 00 00 00 fe 00 00 00 00",
                            &n);
    sl_reader_t r = sl_reader(sl_span(bytes, n));
    sl_span_t raw;
    assert_true(sl_permissions_parse(&r, &raw));
    assert_int_equal(raw.len, 32);
    sl_arena_t arena;
    sl_arena_init(&arena, 0, 0);
    sl_permissions_t p;
    assert_true(sl_permissions_unpack(raw, &arena, &p));
    assert_true(p.read_streams);
    assert_int_equal(p.streams_count, 1);
    assert_true(p.streams[0].read_stream);
    assert_true(p.streams[0].poll_messages);
    assert_int_equal(p.streams[0].topics_count, 1);
    assert_true(p.streams[0].topics[0].read_topic);
    /* Writers normalise to 0/1: the re-encoding is the example itself. */
    sl_buf_t b;
    sl_buf_init(&b, 0);
    assert_true(sl_permissions_encode(&b, &p));
    size_t en;
    uint8_t *example = tu_hex(example_hex, &en);
    assert_bytes_equal(b.data, b.len, example, en);

    /* A non-zero has_next_stream continues: the next grant must follow. */
    bytes[31] = 0x02;
    r = sl_reader(sl_span(bytes, n));
    assert_false(sl_permissions_parse(&r, &raw));
    bytes[31] = 0x00;
    bytes[30] = 0x03; /* has_next_topic */
    r = sl_reader(sl_span(bytes, n));
    assert_false(sl_permissions_parse(&r, &raw));

    free(example);
    sl_buf_free(&b);
    sl_arena_free(&arena);
    free(bytes);
}

static void test_multi_round_trip(void **state)
{
    (void)state;
    sl_topic_perms_t t1[] = {{.topic_id = 0, .manage_topic = true},
                             {.topic_id = 7, .send_messages = true, .poll_messages = true},
                             {.topic_id = 4095, .read_topic = true}};
    sl_stream_perms_t s[] = {
        {.stream_id = 3, .manage_topics = true, .topics_count = 3, .topics = t1},
        {.stream_id = 9, .send_messages = true}, /* empty topic list: has_topics 0 */
        {.stream_id = 0xfffff, .read_topics = true, .topics_count = 1, .topics = &t1[2]},
    };
    sl_permissions_t in = {
        .manage_users = true, .send_messages = true, .streams_count = 3, .streams = s};
    sl_buf_t b;
    sl_buf_init(&b, 0);
    assert_true(sl_permissions_encode(&b, &in));
    /* 11 + 3 x 12 + 4 topics x 9 */
    assert_int_equal(b.len, 11 + 36 + 36);
    sl_reader_t r = sl_reader(sl_buf_span(&b));
    sl_span_t raw;
    assert_true(sl_permissions_parse(&r, &raw));
    assert_int_equal(raw.len, b.len);
    sl_arena_t arena;
    sl_arena_init(&arena, 0, 0);
    sl_permissions_t out;
    assert_true(sl_permissions_unpack(raw, &arena, &out));
    assert_true(out.manage_users && out.send_messages);
    assert_false(out.read_users);
    assert_int_equal(out.streams_count, 3);
    for (uint32_t i = 0; i < 3; i++) {
        assert_int_equal(out.streams[i].stream_id, s[i].stream_id);
        assert_int_equal(out.streams[i].manage_topics, s[i].manage_topics);
        assert_int_equal(out.streams[i].send_messages, s[i].send_messages);
        assert_int_equal(out.streams[i].read_topics, s[i].read_topics);
        assert_int_equal(out.streams[i].topics_count, s[i].topics_count);
        for (uint32_t k = 0; k < s[i].topics_count; k++) {
            const sl_topic_perms_t *g = &out.streams[i].topics[k], *w = &s[i].topics[k];
            assert_int_equal(g->topic_id, w->topic_id);
            assert_int_equal(g->manage_topic, w->manage_topic);
            assert_int_equal(g->read_topic, w->read_topic);
            assert_int_equal(g->poll_messages, w->poll_messages);
            assert_int_equal(g->send_messages, w->send_messages);
        }
    }
    assert_null(out.streams[1].topics);
    sl_buf_t again;
    sl_buf_init(&again, 0);
    assert_true(sl_permissions_encode(&again, &out));
    assert_bytes_equal(again.data, again.len, b.data, b.len);
    sl_buf_free(&again);
    sl_buf_free(&b);
    sl_arena_free(&arena);
}

/* --- rules (permissions.md 2.2) ------------------------------------------------------ */

enum { LEVEL_G, LEVEL_S, LEVEL_T };

/* One flag the rules can read, as "G.x", "S.x" or "T.x". */
static const struct {
    const char *name;
    int level;
    size_t offset;
} grants[] = {
    {"G.manage_servers", LEVEL_G, offsetof(sl_permissions_t, manage_servers)},
    {"G.read_servers", LEVEL_G, offsetof(sl_permissions_t, read_servers)},
    {"G.manage_users", LEVEL_G, offsetof(sl_permissions_t, manage_users)},
    {"G.read_users", LEVEL_G, offsetof(sl_permissions_t, read_users)},
    {"G.manage_streams", LEVEL_G, offsetof(sl_permissions_t, manage_streams)},
    {"G.read_streams", LEVEL_G, offsetof(sl_permissions_t, read_streams)},
    {"G.manage_topics", LEVEL_G, offsetof(sl_permissions_t, manage_topics)},
    {"G.read_topics", LEVEL_G, offsetof(sl_permissions_t, read_topics)},
    {"G.poll_messages", LEVEL_G, offsetof(sl_permissions_t, poll_messages)},
    {"G.send_messages", LEVEL_G, offsetof(sl_permissions_t, send_messages)},
    {"S.manage_stream", LEVEL_S, offsetof(sl_stream_perms_t, manage_stream)},
    {"S.read_stream", LEVEL_S, offsetof(sl_stream_perms_t, read_stream)},
    {"S.manage_topics", LEVEL_S, offsetof(sl_stream_perms_t, manage_topics)},
    {"S.read_topics", LEVEL_S, offsetof(sl_stream_perms_t, read_topics)},
    {"S.poll_messages", LEVEL_S, offsetof(sl_stream_perms_t, poll_messages)},
    {"S.send_messages", LEVEL_S, offsetof(sl_stream_perms_t, send_messages)},
    {"T.manage_topic", LEVEL_T, offsetof(sl_topic_perms_t, manage_topic)},
    {"T.read_topic", LEVEL_T, offsetof(sl_topic_perms_t, read_topic)},
    {"T.poll_messages", LEVEL_T, offsetof(sl_topic_perms_t, poll_messages)},
    {"T.send_messages", LEVEL_T, offsetof(sl_topic_perms_t, send_messages)},
};

/* The table of permissions.md 2.2, copied as text: "allowed if any of". */
static const struct {
    sl_perm_rule_t rule;
    const char *name;
    const char *any_of;
} rules[] = {
    {SL_PERM_SERVER_INFO, "server_info", "G.manage_servers G.read_servers"},
    {SL_PERM_READ_USERS, "read_users", "G.manage_users G.read_users"},
    {SL_PERM_MANAGE_USERS, "manage_users", "G.manage_users"},
    {SL_PERM_CREATE_STREAM, "create_stream", "G.manage_streams"},
    {SL_PERM_GET_STREAMS, "get_streams", "G.manage_streams G.read_streams"},
    {SL_PERM_GET_STREAM, "get_stream",
     "G.manage_streams G.read_streams S.manage_stream S.read_stream"},
    {SL_PERM_MANAGE_STREAM, "manage_stream", "G.manage_streams S.manage_stream"},
    {SL_PERM_GET_TOPICS, "get_topics",
     "G.read_streams G.manage_streams G.manage_topics G.read_topics S.manage_stream "
     "S.read_stream S.manage_topics S.read_topics"},
    {SL_PERM_GET_TOPIC, "get_topic",
     "G.read_streams G.manage_streams G.manage_topics G.read_topics S.manage_stream "
     "S.read_stream S.manage_topics S.read_topics T.manage_topic T.read_topic"},
    {SL_PERM_CREATE_TOPIC, "create_topic",
     "G.manage_streams G.manage_topics S.manage_stream S.manage_topics"},
    {SL_PERM_MANAGE_TOPIC, "manage_topic",
     "G.manage_streams G.manage_topics S.manage_stream S.manage_topics T.manage_topic"},
    {SL_PERM_POLL_MESSAGES, "poll_messages",
     "G.poll_messages G.read_topics G.manage_topics G.read_streams G.manage_streams "
     "S.poll_messages S.manage_stream S.read_stream S.manage_topics S.read_topics "
     "T.manage_topic T.read_topic T.poll_messages"},
    {SL_PERM_SEND_MESSAGES, "send_messages",
     "G.send_messages G.manage_streams G.manage_topics S.send_messages S.manage_stream "
     "S.manage_topics T.manage_topic T.send_messages"},
};

static bool listed(const char *any_of, const char *grant)
{
    size_t n = strlen(grant);
    for (const char *p = strstr(any_of, grant); p; p = strstr(p + 1, grant))
        if ((p == any_of || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\0'))
            return true;
    return false;
}

/* A set holding exactly one grant: stream 5, topic 9 for S and T levels.
 * Other streams and topics are present with every flag off, so the rules
 * must look up the addressed ids rather than take the first entry. */
typedef struct {
    sl_permissions_t p;
    sl_stream_perms_t streams[2];
    sl_topic_perms_t topics[2];
} one_grant_t;

static void one_grant(one_grant_t *g, size_t i)
{
    memset(g, 0, sizeof(*g));
    g->topics[0].topic_id = 8;
    g->topics[1].topic_id = 9;
    g->streams[0].stream_id = 4;
    g->streams[1].stream_id = 5;
    g->streams[1].topics_count = 2;
    g->streams[1].topics = g->topics;
    g->p.streams_count = 2;
    g->p.streams = g->streams;
    uint8_t *base = grants[i].level == LEVEL_G   ? (uint8_t *)&g->p
                    : grants[i].level == LEVEL_S ? (uint8_t *)&g->streams[1]
                                                 : (uint8_t *)&g->topics[1];
    *(bool *)(base + grants[i].offset) = true;
}

static void test_rules_table(void **state)
{
    (void)state;
    for (size_t r = 0; r < SL_ARRAY_LEN(rules); r++) {
        for (size_t i = 0; i < SL_ARRAY_LEN(grants); i++) {
            one_grant_t g;
            one_grant(&g, i);
            bool want = listed(rules[r].any_of, grants[i].name);
            bool got = sl_permissions_allow(&g.p, rules[r].rule, 5, 9);
            if (got != want)
                fail_msg("rule %s with only %s: got %d, want %d", rules[r].name, grants[i].name,
                         got, want);
            /* Stream and topic grants apply to their own ids only. */
            if (grants[i].level != LEVEL_G) {
                if (sl_permissions_allow(&g.p, rules[r].rule, 4, 9) ||
                    sl_permissions_allow(&g.p, rules[r].rule, 6, 9))
                    fail_msg("rule %s: %s of stream 5 applied elsewhere", rules[r].name,
                             grants[i].name);
            }
            if (grants[i].level == LEVEL_T) {
                if (sl_permissions_allow(&g.p, rules[r].rule, 5, 8) ||
                    sl_permissions_allow(&g.p, rules[r].rule, 5, 10))
                    fail_msg("rule %s: %s of topic 9 applied elsewhere", rules[r].name,
                             grants[i].name);
            }
        }
        /* No grant denies everything; root allows everything. */
        sl_permissions_t none = {0};
        assert_false(sl_permissions_allow(&none, rules[r].rule, 5, 9));
        sl_permissions_t root = sl_permissions_root();
        assert_true(sl_permissions_allow(&root, rules[r].rule, 5, 9));
        assert_true(sl_permissions_allow(&root, rules[r].rule, 0xffffffffu, 0));
    }
}

/* "send_messages is not implied by read_* at any level", while global
 * read_topics / manage_topics grant poll on every stream. */
static void test_send_not_implied_by_read(void **state)
{
    (void)state;
    const char *const reads[] = {"G.read_streams", "G.read_topics", "S.read_stream",
                                 "S.read_topics", "T.read_topic"};
    for (size_t k = 0; k < SL_ARRAY_LEN(reads); k++) {
        size_t i = 0;
        while (strcmp(grants[i].name, reads[k]) != 0)
            i++;
        one_grant_t g;
        one_grant(&g, i);
        assert_false(sl_permissions_allow(&g.p, SL_PERM_SEND_MESSAGES, 5, 9));
        assert_true(sl_permissions_allow(&g.p, SL_PERM_POLL_MESSAGES, 5, 9));
    }
    sl_permissions_t global = {.read_topics = true};
    assert_true(sl_permissions_allow(&global, SL_PERM_POLL_MESSAGES, 123, 456));
    global = (sl_permissions_t){.manage_topics = true};
    assert_true(sl_permissions_allow(&global, SL_PERM_POLL_MESSAGES, 123, 456));
    assert_true(sl_permissions_allow(&global, SL_PERM_SEND_MESSAGES, 123, 456));
}

/* Duplicate grants for one stream: the last one wins, like the reference's map. */
static void test_duplicate_grants(void **state)
{
    (void)state;
    sl_stream_perms_t s[] = {{.stream_id = 5, .send_messages = true},
                             {.stream_id = 5, .read_stream = true}};
    sl_permissions_t p = {.streams_count = 2, .streams = s};
    assert_false(sl_permissions_allow(&p, SL_PERM_SEND_MESSAGES, 5, 0));
    assert_true(sl_permissions_allow(&p, SL_PERM_GET_STREAM, 5, 0));
    sl_topic_perms_t t[] = {{.topic_id = 1, .read_topic = true}, {.topic_id = 1}};
    sl_stream_perms_t one = {.stream_id = 2, .topics_count = 2, .topics = t};
    p = (sl_permissions_t){.streams_count = 1, .streams = &one};
    assert_false(sl_permissions_allow(&p, SL_PERM_GET_TOPIC, 2, 1));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_example),
        cmocka_unit_test(test_root),
        cmocka_unit_test(test_truncation_and_trailing),
        cmocka_unit_test(test_lenient_flags),
        cmocka_unit_test(test_multi_round_trip),
        cmocka_unit_test(test_rules_table),
        cmocka_unit_test(test_send_not_implied_by_read),
        cmocka_unit_test(test_duplicate_grants),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
