/* Streams, topics, partitions and segments against the real sluiced
 * (commands.md 8-10): every command's success path and documented error
 * codes, via libsluice (raw frames only where the library cannot say it). */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
// clang-format off
#include <cmocka.h>
// clang-format on

#include <sluice/client.h>

#include "harness.h"
#include "wire/cmd_streams.h"
#include "wire/cmd_topics.h"
#include "wire/command.h"
#include "wire/header.h"
#include "wire/tlv.h"

#define MIB               (1024ull * 1024ull)
#define GIB               (1024ull * MIB)
#define SECOND_US         1000000ull
#define OK(expr)          assert_int_equal((expr), 0)
#define FAILS(expr, code) assert_int_equal((expr), -(code))

static th_server_t srv;
static sl_client_t *root;

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

static uint32_t create_stream(const char *name)
{
    const sl_stream_t *s = NULL;
    OK(sl_client_create_stream(root, name, &s));
    assert_non_null(s);
    assert_string_equal(s->name, name);
    return s->id;
}

static const sl_option_t *find_option(const sl_option_t *items, uint32_t count, const char *key)
{
    for (uint32_t i = 0; i < count; i++)
        if (strcmp(items[i].key, key) == 0)
            return &items[i];
    return NULL;
}

/* An option entry holding a little-endian number of kind (width bytes). */
static void assert_number_option(const sl_option_t *o, uint8_t kind, uint64_t value)
{
    assert_non_null(o);
    assert_int_equal(o->kind, kind);
    uint32_t width = sl_kind_width(kind);
    assert_int_equal(o->value_len, width);
    uint64_t got = 0;
    for (uint32_t i = 0; i < width && i < 8; i++)
        got |= (uint64_t)o->value[i] << (8 * i);
    assert_true(got == value);
}

static void assert_text_option(const sl_option_t *o, uint8_t kind, const char *text)
{
    assert_non_null(o);
    assert_int_equal(o->kind, kind);
    assert_int_equal(o->value_len, strlen(text));
    assert_memory_equal(o->value, text, strlen(text));
}

/* Keys of an option list are sorted (options.md 2). */
static void assert_sorted(const sl_option_t *items, uint32_t count)
{
    for (uint32_t i = 1; i < count; i++)
        assert_true(strcmp(items[i - 1].key, items[i].key) < 0);
}

/* --- streams --------------------------------------------------------------------- */

static void test_stream_create_get(void **state)
{
    (void)state;
    uint64_t before = now_us();
    const sl_stream_t *s = NULL;
    OK(sl_client_create_stream(root, "alpha", &s));
    uint32_t id = s->id;
    assert_true(s->created_at_us >= before - SECOND_US && s->created_at_us <= now_us());
    assert_int_equal(s->topics_count, 0);
    assert_int_equal(s->size_bytes, 0);
    assert_int_equal(s->messages_count, 0);
    uint64_t created = s->created_at_us;

    /* By number and by name: the same stream. */
    OK(sl_client_get_stream(root, sl_id_num(id), &s));
    assert_non_null(s);
    assert_int_equal(s->id, id);
    assert_string_equal(s->name, "alpha");
    assert_true(s->created_at_us == created);
    OK(sl_client_get_stream(root, sl_id_name("alpha"), &s));
    assert_non_null(s);
    assert_int_equal(s->id, id);

    /* Missing: an empty reply, not an error. */
    OK(sl_client_get_stream(root, sl_id_name("no-such-stream"), &s));
    assert_null(s);
    OK(sl_client_get_stream(root, sl_id_num(999999), &s));
    assert_null(s);

    FAILS(sl_client_create_stream(root, "alpha", NULL), SL_ERR_STREAM_NAME_ALREADY_EXISTS);
    /* Names compare byte-exactly: another case is another stream. */
    uint32_t upper = create_stream("ALPHA");
    assert_int_not_equal(upper, id);
}

static void test_stream_list(void **state)
{
    (void)state;
    uint32_t a = create_stream("list-a");
    uint32_t b = create_stream("list-b");
    const sl_stream_t *items;
    uint32_t n;
    OK(sl_client_get_streams(root, &items, &n));
    assert_true(n >= 2);
    bool seen_a = false, seen_b = false;
    for (uint32_t i = 0; i < n; i++) {
        if (i > 0)
            assert_true(items[i - 1].id < items[i].id); /* ascending ids */
        assert_null(items[i].topics);
        if (items[i].id == a) {
            assert_string_equal(items[i].name, "list-a");
            seen_a = true;
        }
        if (items[i].id == b) {
            assert_string_equal(items[i].name, "list-b");
            seen_b = true;
        }
    }
    assert_true(seen_a && seen_b);
}

static void test_stream_update(void **state)
{
    (void)state;
    uint32_t id = create_stream("upd-one");
    create_stream("upd-two");
    OK(sl_client_update_stream(root, sl_id_num(id), "upd-one")); /* same name: fine */
    OK(sl_client_update_stream(root, sl_id_name("upd-one"), "upd-renamed"));
    const sl_stream_t *s;
    OK(sl_client_get_stream(root, sl_id_name("upd-one"), &s));
    assert_null(s);
    OK(sl_client_get_stream(root, sl_id_name("upd-renamed"), &s));
    assert_non_null(s);
    assert_int_equal(s->id, id);
    /* The old name is free again. */
    uint32_t reuse = create_stream("upd-one");
    assert_int_not_equal(reuse, id);

    FAILS(sl_client_update_stream(root, sl_id_num(id), "upd-two"),
          SL_ERR_STREAM_NAME_ALREADY_EXISTS);
    FAILS(sl_client_update_stream(root, sl_id_num(999999), "whatever"), SL_ERR_STREAM_ID_NOT_FOUND);
    FAILS(sl_client_update_stream(root, sl_id_name("no-such"), "whatever"),
          SL_ERR_STREAM_ID_NOT_FOUND);
}

static void test_stream_delete_purge(void **state)
{
    (void)state;
    uint32_t id = create_stream("del-me");
    OK(sl_client_create_topic(root, sl_id_num(id), "inside", 2, NULL, NULL));
    OK(sl_client_purge_stream(root, sl_id_num(id)));
    OK(sl_client_purge_stream(root, sl_id_name("del-me")));
    /* Purging keeps topics and partitions. */
    const sl_stream_t *s;
    OK(sl_client_get_stream(root, sl_id_num(id), &s));
    assert_non_null(s);
    assert_int_equal(s->topics_count, 1);
    FAILS(sl_client_purge_stream(root, sl_id_num(999999)), SL_ERR_STREAM_ID_NOT_FOUND);
    FAILS(sl_client_purge_stream(root, sl_id_name("no-such")), SL_ERR_STREAM_ID_NOT_FOUND);

    OK(sl_client_delete_stream(root, sl_id_name("del-me")));
    OK(sl_client_get_stream(root, sl_id_num(id), &s));
    assert_null(s);
    const sl_topic_t *t;
    OK(sl_client_get_topic(root, sl_id_num(id), sl_id_name("inside"), &t));
    assert_null(t);
    FAILS(sl_client_delete_stream(root, sl_id_num(id)), SL_ERR_STREAM_ID_NOT_FOUND);
    FAILS(sl_client_delete_stream(root, sl_id_name("del-me")), SL_ERR_STREAM_ID_NOT_FOUND);
}

static void test_stream_lowest_free_id(void **state)
{
    (void)state;
    uint32_t a = create_stream("reuse-a");
    uint32_t b = create_stream("reuse-b");
    uint32_t c = create_stream("reuse-c");
    assert_true(a < b && b < c);
    OK(sl_client_delete_stream(root, sl_id_num(b)));
    /* b was the lowest free id after a, so the next stream takes it. */
    assert_int_equal(create_stream("reuse-d"), b);
    assert_int_equal(create_stream("reuse-e") > c, true);
}

/* The stream catalog has no keys: any option is status 4041, nothing is
 * applied (the library sends no stream options, so the body is raw). */
static void test_stream_option_key_refused(void **state)
{
    (void)state;
    sl_buf_t opts, body;
    sl_buf_init(&opts, 0);
    sl_buf_init(&body, 0);
    assert_true(sl_tlv_put_pair(&opts, "retention", SL_KIND_STRING, sl_span_str("1d")));
    sl_create_stream_request_t cq = {.name = sl_span_str("with-options"),
                                     .options = sl_buf_span(&opts)};
    OK(sl_create_stream_request_encode(&body, &cq));
    sl_raw_reply_t r;
    OK(sl_client_request_raw(root, SL_OP_CREATE_STREAM, 0, body.data, body.len, &r));
    assert_false(r.evicted);
    assert_int_equal(r.status, SL_ERR_UNSUPPORTED_OPTION_KEY);
    assert_int_equal(r.operation, SL_OP_CREATE_STREAM);
    assert_int_equal(r.body_len, 0);
    const sl_stream_t *s;
    OK(sl_client_get_stream(root, sl_id_name("with-options"), &s));
    assert_null(s);

    uint32_t id = create_stream("opt-update");
    sl_buf_reset(&body);
    sl_update_stream_request_t uq = {.stream_id = sl_ident_number(id),
                                     .name = sl_span_str("opt-update-2"),
                                     .options = sl_buf_span(&opts)};
    OK(sl_update_stream_request_encode(&body, &uq));
    OK(sl_client_request_raw(root, SL_OP_UPDATE_STREAM, 0, body.data, body.len, &r));
    assert_int_equal(r.status, SL_ERR_UNSUPPORTED_OPTION_KEY);
    OK(sl_client_get_stream(root, sl_id_num(id), &s));
    assert_string_equal(s->name, "opt-update"); /* not renamed */
    sl_buf_free(&opts);
    sl_buf_free(&body);
}

/* --- topics ---------------------------------------------------------------------- */

/* Explicit String forms are parsed and stored canonically; every other key
 * is derived with its default (options.md 4.4). */
static void check_events_topic(const sl_topic_t *t, bool created)
{
    assert_string_equal(t->name, "events");
    assert_int_equal(t->partitions_count, 3);
    assert_true(t->message_expiry_us == 7ull * 24 * 3600 * SECOND_US);
    assert_int_equal(t->compression, SL_TOPIC_COMPRESSION_GZIP);
    assert_true(t->max_topic_size == UINT64_MAX);
    assert_int_equal(t->size_bytes, 0);
    assert_int_equal(t->messages_count, 0);
    assert_int_equal(t->settings.set, SL_TOPIC_OPT_COMPRESSION | SL_TOPIC_OPT_MESSAGE_EXPIRY |
                                          SL_TOPIC_OPT_SEGMENT_SIZE);
    assert_true(t->settings.segment_size == 128 * MIB);
    assert_true(t->settings.size_of_messages_required_to_save == MIB);
    assert_int_equal(t->settings.messages_required_to_save, 1024);

    assert_int_equal(t->options_count, 3);
    assert_sorted(t->options, t->options_count);
    assert_text_option(find_option(t->options, 3, "compression_algorithm"), SL_KIND_STRING, "gzip");
    assert_number_option(find_option(t->options, 3, "message_expiry"), SL_KIND_UINT64,
                         7ull * 24 * 3600 * SECOND_US);
    assert_number_option(find_option(t->options, 3, "segment_size"), SL_KIND_UINT64, 128 * MIB);

    const sl_option_t *d = t->derived_options;
    uint32_t dn = t->derived_options_count;
    assert_int_equal(dn, 5);
    assert_sorted(d, dn);
    assert_number_option(find_option(d, dn, "enforce_fsync"), SL_KIND_BOOL, 0);
    assert_number_option(find_option(d, dn, "max_topic_size"), SL_KIND_UINT64, UINT64_MAX);
    assert_number_option(find_option(d, dn, "messages_required_to_save"), SL_KIND_UINT32, 1024);
    assert_number_option(find_option(d, dn, "preallocate_segments"), SL_KIND_BOOL, 0);
    assert_number_option(find_option(d, dn, "size_of_messages_required_to_save"), SL_KIND_UINT64,
                         MIB);

    assert_non_null(t->partitions);
    for (uint32_t p = 0; p < 3; p++) {
        assert_int_equal(t->partitions[p].id, p);
        /* CreateTopic reports 0 segments, Get* at least 1 (commands.md 2.3). */
        assert_int_equal(t->partitions[p].segments_count, created ? 0 : 1);
        assert_int_equal(t->partitions[p].current_offset, 0);
        assert_int_equal(t->partitions[p].messages_count, 0);
        assert_true(t->partitions[p].created_at_us == t->created_at_us);
    }
}

static void test_topic_create_with_options(void **state)
{
    (void)state;
    uint32_t sid = create_stream("topics-opt");
    static const char seg[] = "128 MiB", expiry[] = "7 days";
    sl_option_t extra[2] = {
        {"segment_size", SL_KIND_STRING, (const uint8_t *)seg, sizeof(seg) - 1},
        {"message_expiry", SL_KIND_STRING, (const uint8_t *)expiry, sizeof(expiry) - 1},
    };
    sl_topic_options_t o = {.set = SL_TOPIC_OPT_COMPRESSION,
                            .compression = SL_TOPIC_COMPRESSION_GZIP,
                            .extra_count = 2,
                            .extra = extra};
    const sl_topic_t *t;
    OK(sl_client_create_topic(root, sl_id_num(sid), "events", 3, &o, &t));
    assert_int_equal(t->id, 0);
    check_events_topic(t, true);
    uint64_t created = t->created_at_us;

    OK(sl_client_get_topic(root, sl_id_num(sid), sl_id_name("events"), &t));
    assert_non_null(t);
    check_events_topic(t, false);
    assert_true(t->created_at_us == created);
    OK(sl_client_get_topic(root, sl_id_name("topics-opt"), sl_id_num(0), &t));
    assert_non_null(t);
    assert_string_equal(t->name, "events");

    /* GetStream lists its topics, without partitions. */
    const sl_stream_t *s;
    OK(sl_client_get_stream(root, sl_id_num(sid), &s));
    assert_int_equal(s->topics_count, 1);
    assert_non_null(s->topics);
    assert_string_equal(s->topics[0].name, "events");
    assert_int_equal(s->topics[0].partitions_count, 3);
    assert_null(s->topics[0].partitions);
}

static void test_topic_defaults_derived(void **state)
{
    (void)state;
    uint32_t sid = create_stream("topics-default");
    const sl_topic_t *t;
    OK(sl_client_create_topic(root, sl_id_num(sid), "plain", 0, NULL,
                              &t)); /* 0 partitions: legal */
    assert_int_equal(t->partitions_count, 0);
    OK(sl_client_get_topic(root, sl_id_num(sid), sl_id_name("plain"), &t));
    assert_non_null(t);
    assert_int_equal(t->options_count, 0);
    assert_int_equal(t->settings.set, 0);
    assert_true(t->message_expiry_us == UINT64_MAX);
    assert_true(t->max_topic_size == UINT64_MAX);
    assert_int_equal(t->compression, SL_TOPIC_COMPRESSION_NONE);
    const sl_option_t *d = t->derived_options;
    uint32_t n = t->derived_options_count;
    assert_int_equal(n, 8);
    assert_sorted(d, n);
    assert_text_option(find_option(d, n, "compression_algorithm"), SL_KIND_STRING, "none");
    assert_number_option(find_option(d, n, "message_expiry"), SL_KIND_UINT64, UINT64_MAX);
    assert_number_option(find_option(d, n, "max_topic_size"), SL_KIND_UINT64, UINT64_MAX);
    assert_number_option(find_option(d, n, "segment_size"), SL_KIND_UINT64, GIB);
    assert_number_option(find_option(d, n, "enforce_fsync"), SL_KIND_BOOL, 0);
    assert_number_option(find_option(d, n, "messages_required_to_save"), SL_KIND_UINT32, 1024);
    assert_number_option(find_option(d, n, "size_of_messages_required_to_save"), SL_KIND_UINT64,
                         MIB);
    assert_number_option(find_option(d, n, "preallocate_segments"), SL_KIND_BOOL, 0);
    assert_true(t->settings.segment_size == GIB);
}

static void test_topic_create_errors(void **state)
{
    (void)state;
    uint32_t sid = create_stream("topics-err");
    OK(sl_client_create_topic(root, sl_id_num(sid), "taken", 1, NULL, NULL));
    FAILS(sl_client_create_topic(root, sl_id_num(sid), "taken", 1, NULL, NULL),
          SL_ERR_TOPIC_NAME_ALREADY_EXISTS);
    FAILS(sl_client_create_topic(root, sl_id_num(999999), "x", 1, NULL, NULL),
          SL_ERR_STREAM_ID_NOT_FOUND);
    FAILS(sl_client_create_topic(root, sl_id_name("no-such"), "x", 1, NULL, NULL),
          SL_ERR_STREAM_ID_NOT_FOUND);
    FAILS(sl_client_create_topic(root, sl_id_num(sid), "many", 1001, NULL, NULL),
          SL_ERR_TOO_MANY_PARTITIONS);
    OK(sl_client_create_topic(root, sl_id_num(sid), "thousand", 1000, NULL, NULL));

    /* Unknown keys: 4041 (partitions_count is not an option either). */
    static const uint8_t one[4] = {1, 0, 0, 0};
    sl_option_t bogus = {"bogus_key", SL_KIND_STRING, (const uint8_t *)"1", 1};
    sl_topic_options_t o = {.extra_count = 1, .extra = &bogus};
    FAILS(sl_client_create_topic(root, sl_id_num(sid), "x", 1, &o, NULL),
          SL_ERR_UNSUPPORTED_OPTION_KEY);
    sl_option_t pc = {"partitions_count", SL_KIND_UINT32, one, 4};
    o.extra = &pc;
    FAILS(sl_client_create_topic(root, sl_id_num(sid), "x", 1, &o, NULL),
          SL_ERR_UNSUPPORTED_OPTION_KEY);

    /* Bad values: 4042. */
    sl_option_t zip = {"compression_algorithm", SL_KIND_STRING, (const uint8_t *)"zip", 3};
    o.extra = &zip;
    FAILS(sl_client_create_topic(root, sl_id_num(sid), "x", 1, &o, NULL),
          SL_ERR_INVALID_OPTION_VALUE);
    sl_option_t expiry32 = {"message_expiry", SL_KIND_UINT32, one, 4}; /* wrong kind */
    o.extra = &expiry32;
    FAILS(sl_client_create_topic(root, sl_id_num(sid), "x", 1, &o, NULL),
          SL_ERR_INVALID_OPTION_VALUE);
    o = (sl_topic_options_t){.set = SL_TOPIC_OPT_SEGMENT_SIZE, .segment_size = 1000};
    FAILS(sl_client_create_topic(root, sl_id_num(sid), "x", 1, &o, NULL),
          SL_ERR_INVALID_OPTION_VALUE);
    o = (sl_topic_options_t){.set = SL_TOPIC_OPT_SEGMENT_SIZE, .segment_size = 2 * GIB};
    FAILS(sl_client_create_topic(root, sl_id_num(sid), "x", 1, &o, NULL),
          SL_ERR_INVALID_OPTION_VALUE);
    o = (sl_topic_options_t){.set = SL_TOPIC_OPT_MESSAGES_REQUIRED_TO_SAVE};
    FAILS(sl_client_create_topic(root, sl_id_num(sid), "x", 1, &o, NULL),
          SL_ERR_INVALID_OPTION_VALUE);
    /* Preallocation cap: 65 x 1 GiB > 64 GiB. */
    o = (sl_topic_options_t){.set = SL_TOPIC_OPT_PREALLOCATE_SEGMENTS,
                             .preallocate_segments = true};
    FAILS(sl_client_create_topic(root, sl_id_num(sid), "x", 65, &o, NULL),
          SL_ERR_INVALID_OPTION_VALUE);
    /* Accepted at the cap, but reserve little real disk: the server does
     * fallocate segment_size per partition (64 x 1 GiB filled a disk). */
    o.set |= SL_TOPIC_OPT_SEGMENT_SIZE;
    o.segment_size = MIB;
    OK(sl_client_create_topic(root, sl_id_num(sid), "prealloc", 64, &o, NULL));
    /* CreatePartitions meets the same cap with the count it would reach (issue 10: it used
     * to take a topic past it). Nothing is allocated before a partition's first write. */
    o.segment_size = GIB;
    OK(sl_client_create_topic(root, sl_id_num(sid), "grows", 60, &o, NULL));
    FAILS(sl_client_create_partitions(root, sl_id_num(sid), sl_id_name("grows"), 5),
          SL_ERR_INVALID_OPTION_VALUE);
    const sl_topic_t *grown;
    OK(sl_client_get_topic(root, sl_id_num(sid), sl_id_name("grows"), &grown));
    assert_int_equal(grown->partitions_count, 60);
    OK(sl_client_create_partitions(root, sl_id_num(sid), sl_id_name("grows"), 4));
    FAILS(sl_client_create_partitions(root, sl_id_num(sid), sl_id_name("grows"), 1),
          SL_ERR_INVALID_OPTION_VALUE);

    /* max_topic_size below the (default 1 GiB) segment size: 1019. */
    o = (sl_topic_options_t){.set = SL_TOPIC_OPT_MAX_TOPIC_SIZE, .max_topic_size = MIB};
    FAILS(sl_client_create_topic(root, sl_id_num(sid), "x", 1, &o, NULL),
          SL_ERR_INVALID_TOPIC_SIZE);
    o.set |= SL_TOPIC_OPT_SEGMENT_SIZE;
    o.segment_size = MIB;
    o.max_topic_size = 2 * MIB;
    OK(sl_client_create_topic(root, sl_id_num(sid), "capped", 1, &o, NULL));

    /* Check order (options.md 4.2): 4042 before 2015 before 1019. */
    o = (sl_topic_options_t){.extra_count = 1, .extra = &zip};
    FAILS(sl_client_create_topic(root, sl_id_num(sid), "x", 1001, &o, NULL),
          SL_ERR_INVALID_OPTION_VALUE);
    o = (sl_topic_options_t){.set = SL_TOPIC_OPT_MAX_TOPIC_SIZE, .max_topic_size = MIB};
    FAILS(sl_client_create_topic(root, sl_id_num(sid), "x", 1001, &o, NULL),
          SL_ERR_TOO_MANY_PARTITIONS);

    /* None of the refused creates left a topic behind. */
    const sl_topic_t *t;
    OK(sl_client_get_topic(root, sl_id_num(sid), sl_id_name("x"), &t));
    assert_null(t);
    OK(sl_client_get_topic(root, sl_id_num(sid), sl_id_name("many"), &t));
    assert_null(t);
}

static void test_topic_list_get_missing(void **state)
{
    (void)state;
    uint32_t sid = create_stream("topics-list");
    OK(sl_client_create_topic(root, sl_id_num(sid), "t-a", 1, NULL, NULL));
    OK(sl_client_create_topic(root, sl_id_num(sid), "t-b", 2, NULL, NULL));
    const sl_topic_t *items;
    uint32_t n = 99;
    OK(sl_client_get_topics(root, sl_id_num(sid), &items, &n));
    assert_int_equal(n, 2);
    assert_int_equal(items[0].id, 0);
    assert_string_equal(items[0].name, "t-a");
    assert_int_equal(items[1].id, 1);
    assert_int_equal(items[1].partitions_count, 2);
    assert_null(items[1].partitions);
    /* A missing stream is an empty list, not an error. */
    n = 99;
    OK(sl_client_get_topics(root, sl_id_num(999999), &items, &n));
    assert_int_equal(n, 0);
    n = 99;
    OK(sl_client_get_topics(root, sl_id_name("no-such"), &items, &n));
    assert_int_equal(n, 0);

    const sl_topic_t *t = NULL;
    OK(sl_client_get_topic(root, sl_id_num(sid), sl_id_num(77), &t));
    assert_null(t);
    OK(sl_client_get_topic(root, sl_id_num(999999), sl_id_num(0), &t));
    assert_null(t);

    /* Topic ids: the lowest free one in the stream. */
    OK(sl_client_delete_topic(root, sl_id_num(sid), sl_id_name("t-a")));
    OK(sl_client_create_topic(root, sl_id_num(sid), "t-c", 1, NULL, &t));
    assert_int_equal(t->id, 0);
}

static void test_topic_delete_purge(void **state)
{
    (void)state;
    uint32_t sid = create_stream("topics-del");
    OK(sl_client_create_topic(root, sl_id_num(sid), "gone", 2, NULL, NULL));
    OK(sl_client_purge_topic(root, sl_id_num(sid), sl_id_name("gone")));
    FAILS(sl_client_purge_topic(root, sl_id_num(sid), sl_id_name("nope")),
          SL_ERR_TOPIC_ID_NOT_FOUND);
    FAILS(sl_client_purge_topic(root, sl_id_num(999999), sl_id_num(0)), SL_ERR_STREAM_ID_NOT_FOUND);
    OK(sl_client_delete_topic(root, sl_id_num(sid), sl_id_num(0)));
    const sl_topic_t *t;
    OK(sl_client_get_topic(root, sl_id_num(sid), sl_id_num(0), &t));
    assert_null(t);
    FAILS(sl_client_delete_topic(root, sl_id_num(sid), sl_id_num(0)), SL_ERR_TOPIC_ID_NOT_FOUND);
    FAILS(sl_client_delete_topic(root, sl_id_num(sid), sl_id_name("gone")),
          SL_ERR_TOPIC_ID_NOT_FOUND);
    FAILS(sl_client_delete_topic(root, sl_id_num(999999), sl_id_num(0)),
          SL_ERR_STREAM_ID_NOT_FOUND);
    const sl_stream_t *s;
    OK(sl_client_get_stream(root, sl_id_num(sid), &s));
    assert_int_equal(s->topics_count, 0);
}

/* UpdateTopic patches: keys not sent keep their value, sent keys become
 * explicit and are stored as sent (options.md 4.4). */
static void test_topic_update_patch(void **state)
{
    (void)state;
    uint32_t sid = create_stream("topics-upd");
    sl_topic_options_t o = {.set = SL_TOPIC_OPT_SEGMENT_SIZE | SL_TOPIC_OPT_COMPRESSION,
                            .segment_size = 128 * MIB,
                            .compression = SL_TOPIC_COMPRESSION_GZIP};
    OK(sl_client_create_topic(root, sl_id_num(sid), "patched", 1, &o, NULL));
    OK(sl_client_create_topic(root, sl_id_num(sid), "other", 1, NULL, NULL));

    o = (sl_topic_options_t){.set = SL_TOPIC_OPT_MAX_TOPIC_SIZE, .max_topic_size = 256 * MIB};
    OK(sl_client_update_topic(root, sl_id_num(sid), sl_id_name("patched"), "patched", &o));
    const sl_topic_t *t;
    OK(sl_client_get_topic(root, sl_id_num(sid), sl_id_name("patched"), &t));
    assert_true(t->max_topic_size == 256 * MIB);
    assert_int_equal(t->compression, SL_TOPIC_COMPRESSION_GZIP); /* kept */
    assert_true(t->message_expiry_us == UINT64_MAX);             /* kept */
    assert_int_equal(t->options_count, 3);
    assert_number_option(find_option(t->options, 3, "max_topic_size"), SL_KIND_UINT64, 256 * MIB);
    assert_int_equal(t->derived_options_count, 5);
    assert_null(find_option(t->derived_options, 5, "max_topic_size"));

    /* A String value is stored verbatim; the fixed field is parsed. */
    sl_option_t hour = {"message_expiry", SL_KIND_STRING, (const uint8_t *)"1h", 2};
    o = (sl_topic_options_t){.extra_count = 1, .extra = &hour};
    OK(sl_client_update_topic(root, sl_id_num(sid), sl_id_name("patched"), "patched-2", &o));
    OK(sl_client_get_topic(root, sl_id_num(sid), sl_id_name("patched-2"), &t));
    assert_non_null(t);
    assert_true(t->message_expiry_us == 3600 * SECOND_US);
    assert_true(t->max_topic_size == 256 * MIB);
    assert_int_equal(t->options_count, 4);
    assert_text_option(find_option(t->options, 4, "message_expiry"), SL_KIND_STRING, "1h");
    assert_int_equal(t->derived_options_count, 4);
    OK(sl_client_get_topic(root, sl_id_num(sid), sl_id_name("patched"), &t));
    assert_null(t);
    uint32_t tid = 0;
    OK(sl_client_get_topic(root, sl_id_num(sid), sl_id_name("patched-2"), &t));
    tid = t->id;

    /* Errors: 1019 against the stored segment size, 4041 for create-only
     * keys, 4042 for bad values, 2013 for another topic's name, 2010 / 1009. */
    o = (sl_topic_options_t){.set = SL_TOPIC_OPT_MAX_TOPIC_SIZE, .max_topic_size = 64 * MIB};
    FAILS(sl_client_update_topic(root, sl_id_num(sid), sl_id_num(tid), "patched-2", &o),
          SL_ERR_INVALID_TOPIC_SIZE);
    o = (sl_topic_options_t){.set = SL_TOPIC_OPT_SEGMENT_SIZE, .segment_size = 64 * MIB};
    FAILS(sl_client_update_topic(root, sl_id_num(sid), sl_id_num(tid), "patched-2", &o),
          SL_ERR_UNSUPPORTED_OPTION_KEY);
    o = (sl_topic_options_t){.set = SL_TOPIC_OPT_ENFORCE_FSYNC, .enforce_fsync = true};
    FAILS(sl_client_update_topic(root, sl_id_num(sid), sl_id_num(tid), "patched-2", &o),
          SL_ERR_UNSUPPORTED_OPTION_KEY);
    sl_option_t zip = {"compression_algorithm", SL_KIND_STRING, (const uint8_t *)"zip", 3};
    o = (sl_topic_options_t){.extra_count = 1, .extra = &zip};
    FAILS(sl_client_update_topic(root, sl_id_num(sid), sl_id_num(tid), "patched-2", &o),
          SL_ERR_INVALID_OPTION_VALUE);
    FAILS(sl_client_update_topic(root, sl_id_num(sid), sl_id_num(tid), "other", NULL),
          SL_ERR_TOPIC_NAME_ALREADY_EXISTS);
    FAILS(sl_client_update_topic(root, sl_id_num(sid), sl_id_num(99), "x", NULL),
          SL_ERR_TOPIC_ID_NOT_FOUND);
    FAILS(sl_client_update_topic(root, sl_id_num(999999), sl_id_num(0), "x", NULL),
          SL_ERR_STREAM_ID_NOT_FOUND);
    /* Nothing of the refused updates stuck. */
    OK(sl_client_get_topic(root, sl_id_num(sid), sl_id_num(tid), &t));
    assert_string_equal(t->name, "patched-2");
    assert_int_equal(t->compression, SL_TOPIC_COMPRESSION_GZIP);
    assert_true(t->max_topic_size == 256 * MIB);
    assert_true(t->settings.segment_size == 128 * MIB);
    assert_false(t->settings.enforce_fsync);

    /* max_topic_size 0 (server default) is stored as sent but leaves the
     * effective value alone. */
    o = (sl_topic_options_t){.set = SL_TOPIC_OPT_MAX_TOPIC_SIZE, .max_topic_size = 0};
    OK(sl_client_update_topic(root, sl_id_num(sid), sl_id_num(tid), "patched-2", &o));
    OK(sl_client_get_topic(root, sl_id_num(sid), sl_id_num(tid), &t));
    assert_true(t->max_topic_size == 256 * MIB);
    assert_number_option(find_option(t->options, t->options_count, "max_topic_size"),
                         SL_KIND_UINT64, 0);
}

/* Other value forms of options.md 4.3/4.4: server-default sentinels are
 * resolved like absent keys at create, and kept raw (fixed field unchanged)
 * at update; alternative kinds are re-encoded canonically. */
static void test_topic_option_forms(void **state)
{
    (void)state;
    uint32_t sid = create_stream("topics-forms");
    static const uint8_t gzip_code = 2;
    sl_option_t extra[3] = {
        {"compression_algorithm", SL_KIND_UINT8, &gzip_code, 1},
        {"enforce_fsync", SL_KIND_STRING, (const uint8_t *)"true", 4},
        {"max_topic_size", SL_KIND_STRING, (const uint8_t *)"unlimited", 9},
    };
    sl_topic_options_t o = {.set = SL_TOPIC_OPT_MESSAGE_EXPIRY | SL_TOPIC_OPT_SEGMENT_SIZE,
                            .message_expiry_us = 0, /* server default: not explicit */
                            .segment_size = 0,
                            .extra_count = 3,
                            .extra = extra};
    const sl_topic_t *t;
    OK(sl_client_create_topic(root, sl_id_num(sid), "forms", 1, &o, &t));
    OK(sl_client_get_topic(root, sl_id_num(sid), sl_id_name("forms"), &t));
    assert_int_equal(t->compression, SL_TOPIC_COMPRESSION_GZIP);
    assert_true(t->max_topic_size == UINT64_MAX);
    assert_true(t->message_expiry_us == UINT64_MAX);
    assert_int_equal(t->options_count, 3);
    assert_text_option(find_option(t->options, 3, "compression_algorithm"), SL_KIND_STRING, "gzip");
    assert_number_option(find_option(t->options, 3, "enforce_fsync"), SL_KIND_BOOL, 1);
    assert_number_option(find_option(t->options, 3, "max_topic_size"), SL_KIND_UINT64, UINT64_MAX);
    assert_int_equal(t->derived_options_count, 5);
    assert_number_option(find_option(t->derived_options, 5, "message_expiry"), SL_KIND_UINT64,
                         UINT64_MAX);
    assert_number_option(find_option(t->derived_options, 5, "segment_size"), SL_KIND_UINT64, GIB);

    /* Update with max_topic_size 0: stored raw, the fixed field stays. */
    o = (sl_topic_options_t){.set = SL_TOPIC_OPT_MAX_TOPIC_SIZE, .max_topic_size = 0};
    OK(sl_client_update_topic(root, sl_id_num(sid), sl_id_name("forms"), "forms", &o));
    OK(sl_client_get_topic(root, sl_id_num(sid), sl_id_name("forms"), &t));
    assert_true(t->max_topic_size == UINT64_MAX);
    assert_number_option(find_option(t->options, t->options_count, "max_topic_size"),
                         SL_KIND_UINT64, 0);

    /* A structurally broken options block is undecodable: status 3. */
    sl_buf_t body;
    sl_buf_init(&body, 0);
    static const uint8_t broken[] = {2, 5, 0, 0, 0, 'a', 'b'}; /* key runs past the end */
    sl_put_u8(&body, SL_IDENT_NUMERIC);
    sl_put_u8(&body, 4);
    sl_put_u32(&body, sid);
    sl_put_u32(&body, 1); /* partitions_count */
    sl_put_u8(&body, 6);
    sl_put_span(&body, sl_span_str("broken"));
    sl_put_span(&body, sl_span(broken, sizeof(broken)));
    sl_raw_reply_t r;
    OK(sl_client_request_raw(root, SL_OP_CREATE_TOPIC, 0, body.data, body.len, &r));
    assert_int_equal(r.status, SL_ERR_INVALID_COMMAND);
    assert_int_equal(r.operation, SL_OP_CREATE_TOPIC);

    /* DeleteTopic with the Node SDK's trailing u32: accepted, ignored. */
    sl_buf_reset(&body);
    sl_delete_topic_request_t d = {.stream_id = sl_ident_number(sid),
                                   .topic_id = sl_ident_name("forms")};
    OK(sl_delete_topic_request_encode(&body, &d));
    sl_put_u32(&body, 0);
    OK(sl_client_request_raw(root, SL_OP_DELETE_TOPIC, 0, body.data, body.len, &r));
    assert_int_equal(r.status, 0);
    assert_int_equal(r.error, 0);
    OK(sl_client_get_topic(root, sl_id_num(sid), sl_id_name("forms"), &t));
    assert_null(t);
    sl_buf_free(&body);
}

/* String value forms of options.md 4.3, one CreateTopic each: accepted
 * values and the effective number they resolve to, refused ones (4042). */
typedef struct option_case {
    const char *key;
    const char *text;
    int status;         /* 0 or the refusal */
    uint64_t value;     /* the effective value when accepted */
    bool explicit_kept; /* false: a server-default sentinel, resolved as absent */
} option_case_t;

static uint64_t effective(const sl_topic_t *t, const char *key)
{
    if (strcmp(key, "segment_size") == 0)
        return t->settings.segment_size;
    if (strcmp(key, "message_expiry") == 0)
        return t->message_expiry_us;
    if (strcmp(key, "max_topic_size") == 0)
        return t->max_topic_size;
    if (strcmp(key, "messages_required_to_save") == 0)
        return t->settings.messages_required_to_save;
    if (strcmp(key, "size_of_messages_required_to_save") == 0)
        return t->settings.size_of_messages_required_to_save;
    if (strcmp(key, "enforce_fsync") == 0)
        return t->settings.enforce_fsync;
    if (strcmp(key, "preallocate_segments") == 0)
        return t->settings.preallocate_segments;
    return t->compression;
}

static void test_topic_option_strings(void **state)
{
    (void)state;
    static const option_case_t cases[] = {
        {"segment_size", "128 MiB", 0, 128 * MIB, true},
        {"segment_size", "128MiB", 0, 128 * MIB, true},
        {"segment_size", "1GB", 0, 1000000000ull, true},
        {"segment_size", "1 GiB", 0, GIB, true},
        {"segment_size", "1.5 MiB", 0, 3 * MIB / 2, true},
        {"segment_size", "2097152", 0, 2 * MIB, true},
        {"segment_size", "unlimited", 0, GIB, false}, /* 0 bytes: server default */
        {"segment_size", "8Mb", SL_ERR_INVALID_OPTION_VALUE, 0, false},      /* bits: 1e6 bytes */
        {"segment_size", "1000 KiB", SL_ERR_INVALID_OPTION_VALUE, 0, false}, /* < 1 MiB */
        {"segment_size", "2 GiB", SL_ERR_INVALID_OPTION_VALUE, 0, false},
        {"segment_size", "lots", SL_ERR_INVALID_OPTION_VALUE, 0, false},
        {"message_expiry", "7 days", 0, 7ull * 86400 * SECOND_US, true},
        {"message_expiry", "1h 30m", 0, 5400 * SECOND_US, true},
        {"message_expiry", "10s", 0, 10 * SECOND_US, true},
        {"message_expiry", "500ms", 0, 500000, true},
        {"message_expiry", "2w", 0, 14ull * 86400 * SECOND_US, true},
        {"message_expiry", "never_expire", 0, UINT64_MAX, true},
        {"message_expiry", "unlimited", 0, UINT64_MAX, true},
        {"message_expiry", "server_default", 0, UINT64_MAX, false},
        {"message_expiry", "4294967296s", SL_ERR_INVALID_OPTION_VALUE, 0, false},
        {"message_expiry", "soon", SL_ERR_INVALID_OPTION_VALUE, 0, false},
        {"max_topic_size", "unlimited", 0, UINT64_MAX, true},
        {"max_topic_size", "5 GiB", 0, 5 * GIB, true},
        {"max_topic_size", "server_default", 0, UINT64_MAX, false},
        {"max_topic_size", "0", 0, UINT64_MAX, false},
        {"max_topic_size", "1 MiB", SL_ERR_INVALID_TOPIC_SIZE, 0, false}, /* < 1 GiB segment */
        {"messages_required_to_save", "16777216", 0, 16777216, true},
        {"messages_required_to_save", "1", 0, 1, true},
        {"messages_required_to_save", "16777217", SL_ERR_INVALID_OPTION_VALUE, 0, false},
        {"messages_required_to_save", "0", SL_ERR_INVALID_OPTION_VALUE, 0, false},
        {"size_of_messages_required_to_save", "1 GiB", 0, GIB, true},
        {"size_of_messages_required_to_save", "0", 0, MIB, false},
        {"size_of_messages_required_to_save", "1073741825", SL_ERR_INVALID_OPTION_VALUE, 0, false},
        {"enforce_fsync", "true", 0, 1, true},
        {"enforce_fsync", "false", 0, 0, true},
        {"enforce_fsync", "True", SL_ERR_INVALID_OPTION_VALUE, 0, false},
        /* "true" is covered with small segments in test_topic_create_errors:
         * here it would reserve a 1 GiB segment on disk. */
        {"preallocate_segments", "yes", SL_ERR_INVALID_OPTION_VALUE, 0, false},
        {"compression_algorithm", "GZIP", 0, SL_TOPIC_COMPRESSION_GZIP, true},
        {"compression_algorithm", "None", 0, SL_TOPIC_COMPRESSION_NONE, true},
        {"compression_algorithm", "lz4", SL_ERR_INVALID_OPTION_VALUE, 0, false},
    };
    uint32_t sid = create_stream("topics-strings");
    for (size_t i = 0; i < SL_ARRAY_LEN(cases); i++) {
        const option_case_t *k = &cases[i];
        char name[32];
        snprintf(name, sizeof(name), "str-%zu", i);
        sl_option_t opt = {k->key, SL_KIND_STRING, (const uint8_t *)k->text,
                           (uint32_t)strlen(k->text)};
        sl_topic_options_t o = {.extra_count = 1, .extra = &opt};
        int rc = sl_client_create_topic(root, sl_id_num(sid), name, 1, &o, NULL);
        if (rc != -k->status)
            fail_msg("%s = \"%s\": expected %d, got %d", k->key, k->text, -k->status, rc);
        if (rc != 0)
            continue;
        const sl_topic_t *t;
        OK(sl_client_get_topic(root, sl_id_num(sid), sl_id_name(name), &t));
        if (effective(t, k->key) != k->value)
            fail_msg("%s = \"%s\": effective %llu, expected %llu", k->key, k->text,
                     (unsigned long long)effective(t, k->key), (unsigned long long)k->value);
        bool is_explicit = find_option(t->options, t->options_count, k->key) != NULL;
        if (is_explicit != k->explicit_kept)
            fail_msg("%s = \"%s\": explicit %d, expected %d", k->key, k->text, is_explicit,
                     k->explicit_kept);
        assert_int_equal(t->options_count + t->derived_options_count, 8);
    }
}

/* Bodies that do not decode: reads answer status 3 (SyncConsumerGroup and
 * GetClient an empty success), and every metadata body is decoded before
 * anything commits, the ones the reference forwards unchecked included
 * (commands.md 12): status 3, nothing applied. */
static void test_undecodable_bodies(void **state)
{
    (void)state;
    static const uint8_t junk[2] = {9, 9}; /* identifier kind 9 */
    static const uint32_t read_codes[] = {SL_CMD_GET_STREAM,          SL_CMD_GET_TOPIC,
                                          SL_CMD_GET_TOPICS,          SL_CMD_GET_CONSUMER_GROUP,
                                          SL_CMD_GET_CONSUMER_GROUPS, SL_CMD_GET_USER,
                                          SL_CMD_DESCRIBE_OPTIONS};
    sl_raw_reply_t r;
    for (size_t i = 0; i < SL_ARRAY_LEN(read_codes); i++) {
        OK(sl_client_request_raw(root, SL_OP_NON_REPLICATED, read_codes[i], junk,
                                 read_codes[i] == SL_CMD_DESCRIBE_OPTIONS ? 0 : 2, &r));
        if (r.status != SL_ERR_INVALID_COMMAND)
            fail_msg("read code %u: status %u, expected 3", read_codes[i], r.status);
        assert_int_equal(r.body_len, 0);
    }
    OK(sl_client_request_raw(root, SL_OP_NON_REPLICATED, SL_CMD_SYNC_CONSUMER_GROUP, junk, 2, &r));
    assert_int_equal(r.status, 0);
    assert_int_equal(r.body_len, 0);
    OK(sl_client_request_raw(root, SL_OP_NON_REPLICATED, SL_CMD_GET_CLIENT, junk, 2, &r));
    assert_int_equal(r.status, 0);
    assert_int_equal(r.body_len, 0);
    /* DescribeOptions ignores trailing bytes after the scope. */
    static const uint8_t scope[2] = {1, 99};
    OK(sl_client_request_raw(root, SL_OP_NON_REPLICATED, SL_CMD_DESCRIBE_OPTIONS, scope, 2, &r));
    assert_int_equal(r.status, 0);
    assert_int_equal(sl_load_u32(r.body), 8);

    const sl_stream_t *items;
    uint32_t before, after;
    OK(sl_client_get_streams(root, &items, &before));
    static const uint8_t ops[] = {
        SL_OP_CREATE_STREAM,
        SL_OP_UPDATE_STREAM,
        SL_OP_DELETE_STREAM,
        SL_OP_PURGE_STREAM,
        SL_OP_CREATE_TOPIC,
        SL_OP_UPDATE_TOPIC,
        SL_OP_DELETE_TOPIC,
        SL_OP_PURGE_TOPIC,
        SL_OP_CREATE_PARTITIONS,
        SL_OP_DELETE_PARTITIONS,
        SL_OP_DELETE_SEGMENTS,
        SL_OP_CREATE_CONSUMER_GROUP,
        SL_OP_DELETE_CONSUMER_GROUP,
        SL_OP_JOIN_CONSUMER_GROUP,
        SL_OP_LEAVE_CONSUMER_GROUP,
        SL_OP_CREATE_USER,
        SL_OP_UPDATE_USER,
        SL_OP_DELETE_USER,
        SL_OP_CHANGE_PASSWORD,
        SL_OP_UPDATE_PERMISSIONS,
        SL_OP_CREATE_PERSONAL_ACCESS_TOKEN,
        SL_OP_DELETE_PERSONAL_ACCESS_TOKEN,
    };
    for (size_t i = 0; i < SL_ARRAY_LEN(ops); i++) {
        OK(sl_client_request_raw(root, ops[i], 0, junk, 2, &r));
        if (r.evicted || r.status != SL_ERR_INVALID_COMMAND)
            fail_msg("operation %u: evicted %d status %u, expected status 3", ops[i], r.evicted,
                     r.status);
        assert_int_equal(r.operation, ops[i]);
        assert_int_equal(r.body_len, 0);
    }
    OK(sl_client_get_streams(root, &items, &after));
    assert_int_equal(after, before);
}

/* The id-space limits: topic ids 0..4095 per stream (2021) and partition
 * ids below 1000000 (3013). Thousands of commits: the slowest test here. */
static void test_id_space_limits(void **state)
{
    (void)state;
    uint32_t sid = create_stream("limits");
    for (uint32_t i = 0; i < 4096; i++) {
        char name[16];
        snprintf(name, sizeof(name), "t%u", i);
        int rc = sl_client_create_topic(root, sl_id_num(sid), name, 0, NULL, NULL);
        if (rc != 0)
            fail_msg("topic %u: %d", i, rc);
    }
    FAILS(sl_client_create_topic(root, sl_id_num(sid), "one-more", 0, NULL, NULL),
          SL_ERR_TOO_MANY_TOPICS);
    const sl_topic_t *t;
    OK(sl_client_delete_topic(root, sl_id_num(sid), sl_id_num(17)));
    OK(sl_client_create_topic(root, sl_id_num(sid), "one-more", 1000, NULL, &t));
    assert_int_equal(t->id, 17);

    /* The partition id space (1000000, result 3013) is exercised in
     * tests/unit/test_meta_streams.c: here every partition is a directory
     * on disk, and a million of them is no test for a shared CI machine. */
    OK(sl_client_delete_stream(root, sl_id_num(sid)));
}

/* --- golden replies (commands.md 13) --------------------------------------------------- */

static size_t unhex(const char *hex, uint8_t *out, size_t cap)
{
    size_t n = 0;
    for (const char *p = hex; *p;) {
        if (*p == ' ' || *p == '\n') {
            p++;
            continue;
        }
        unsigned v;
        assert_int_equal(sscanf(p, "%2x", &v), 1);
        assert_true(n < cap);
        out[n++] = (uint8_t)v;
        p += 2;
    }
    return n;
}

static sl_raw_reply_t raw_read_body(uint32_t code, const sl_buf_t *body)
{
    sl_raw_reply_t r;
    OK(sl_client_request_raw(root, SL_OP_NON_REPLICATED, code, body->data, body->len, &r));
    assert_int_equal(r.status, 0);
    return r;
}

/* 13.2: topic `events`, 2 partitions, explicit segment_size 128 MiB. The
 * created_at fields are the server's; everything else is byte-exact. */
static const char golden_topic[] = "00 00 00 00 00 40 1e 18 24 0a 06 00 02 00 00 00 ff ff ff ff ff "
                                   "ff ff ff 01 ff ff ff ff ff ff ff"
                                   "ff 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 06 65 76 65 "
                                   "6e 74 73 1e 00 00 00 02 0c 00 00"
                                   "00 73 65 67 6d 65 6e 74 5f 73 69 7a 65 0c 08 00 00 00 00 00 00 "
                                   "08 00 00 00 00 f4 00 00 00 02 15"
                                   "00 00 00 63 6f 6d 70 72 65 73 73 69 6f 6e 5f 61 6c 67 6f 72 69 "
                                   "74 68 6d 02 04 00 00 00 6e 6f 6e"
                                   "65 02 0d 00 00 00 65 6e 66 6f 72 63 65 5f 66 73 79 6e 63 03 01 "
                                   "00 00 00 00 02 0e 00 00 00 6d 61"
                                   "78 5f 74 6f 70 69 63 5f 73 69 7a 65 0c 08 00 00 00 ff ff ff ff "
                                   "ff ff ff ff 02 0e 00 00 00 6d 65"
                                   "73 73 61 67 65 5f 65 78 70 69 72 79 0c 08 00 00 00 ff ff ff ff "
                                   "ff ff ff ff 02 19 00 00 00 6d 65"
                                   "73 73 61 67 65 73 5f 72 65 71 75 69 72 65 64 5f 74 6f 5f 73 61 "
                                   "76 65 0b 04 00 00 00 00 04 00 00"
                                   "02 14 00 00 00 70 72 65 61 6c 6c 6f 63 61 74 65 5f 73 65 67 6d "
                                   "65 6e 74 73 03 01 00 00 00 00 02"
                                   "21 00 00 00 73 69 7a 65 5f 6f 66 5f 6d 65 73 73 61 67 65 73 5f "
                                   "72 65 71 75 69 72 65 64 5f 74 6f"
                                   "5f 73 61 76 65 0c 08 00 00 00 00 00 10 00 00 00 00 00 00 00 00 "
                                   "00 00 40 1e 18 24 0a 06 00 01 00"
                                   "00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 "
                                   "00 00 00 00 00 01 00 00 00 00 40"
                                   "1e 18 24 0a 06 00 01 00 00 00 00 00 00 00 00 00 00 00 00 00 00 "
                                   "00 00 00 00 00 00 00 00 00 00 00"
                                   "00 00";

static void test_golden_replies(void **state)
{
    (void)state;
    uint32_t sid = create_stream("golden");
    sl_topic_options_t o = {.set = SL_TOPIC_OPT_SEGMENT_SIZE, .segment_size = 128 * MIB};
    OK(sl_client_create_topic(root, sl_id_num(sid), "events", 2, &o, NULL));
    uint8_t want[512];
    size_t n = unhex(golden_topic, want, sizeof(want));
    assert_int_equal(n, 418);

    sl_buf_t body;
    sl_buf_init(&body, 0);
    sl_get_topic_request_t q = {.stream_id = sl_ident_number(sid), .topic_id = sl_ident_number(0)};
    OK(sl_get_topic_request_encode(&body, &q));
    sl_raw_reply_t r = raw_read_body(SL_CMD_GET_TOPIC, &body);
    assert_int_equal(r.body_len, n);
    uint8_t got[512];
    memcpy(got, r.body, n);
    uint64_t created = sl_load_u64(got + 4);
    assert_true(created > 0);
    /* The partitions share the topic's commit time. */
    assert_true(sl_load_u64(got + 338 + 4) == created);
    assert_true(sl_load_u64(got + 378 + 4) == created);
    memcpy(want + 4, got + 4, 8);
    memcpy(want + 338 + 4, got + 4, 8);
    memcpy(want + 378 + 4, got + 4, 8);
    assert_memory_equal(got, want, n);

    /* 13.4: CreateConsumerGroup `workers` on that topic, 24 bytes. */
    sl_buf_reset(&body);
    sl_put_u8(&body, 1);
    sl_put_u8(&body, 4);
    sl_put_u32(&body, sid);
    sl_put_u8(&body, 1);
    sl_put_u8(&body, 4);
    sl_put_u32(&body, 0);
    sl_put_u8(&body, 7);
    sl_put_span(&body, sl_span_str("workers"));
    OK(sl_client_request_raw(root, SL_OP_CREATE_CONSUMER_GROUP, 0, body.data, body.len, &r));
    n = unhex("00 00 00 00 00 00 00 00 02 00 00 00 00 00 00 00 07 77 6f 72 6b 65 72 73", want,
              sizeof(want));
    assert_int_equal(r.operation, SL_OP_CREATE_CONSUMER_GROUP);
    assert_int_equal(r.body_len, n);
    assert_memory_equal(r.body, want, n);

    /* 13.5: CreateStream with a taken name, result 1012 in 12 bytes. */
    sl_buf_reset(&body);
    sl_put_u8(&body, 6);
    sl_put_span(&body, sl_span_str("golden"));
    OK(sl_client_request_raw(root, SL_OP_CREATE_STREAM, 0, body.data, body.len, &r));
    n = unhex("01 00 00 00 00 00 00 00 f4 03 00 00", want, sizeof(want));
    assert_int_equal(r.frame_len, 268);
    assert_int_equal(r.operation, SL_OP_CREATE_STREAM);
    assert_int_equal(r.status, 0);
    assert_memory_equal(r.body, want, n);

    /* 13.4: a payload-less success is `00 00 00 00`, size 260. */
    sl_buf_reset(&body);
    sl_put_u8(&body, 1);
    sl_put_u8(&body, 4);
    sl_put_u32(&body, sid);
    OK(sl_client_request_raw(root, SL_OP_DELETE_STREAM, 0, body.data, body.len, &r));
    assert_int_equal(r.frame_len, 260);
    assert_int_equal(r.operation, SL_OP_DELETE_STREAM);
    assert_int_equal(sl_load_u32(r.body), 0);

    /* 13.6: GetUser for root, 38 bytes. Bytes 4..11 are its created_at, the
     * time of the first start, not a fixed value. */
    sl_buf_reset(&body);
    sl_put_u8(&body, 1);
    sl_put_u8(&body, 4);
    sl_put_u32(&body, 0);
    r = raw_read_body(SL_CMD_GET_USER, &body);
    n = unhex("00 00 00 00 01 00 00 00 00 00 00 00 01 04 69 67 67 79 00 00 00 00 01 0b 00 00 00 01"
              "01 01 01 01 01 01 01 01 01 00",
              want, sizeof(want));
    assert_int_equal(r.body_len, n);
    assert_true(sl_load_u64(r.body + 4) > 1);
    memcpy(want + 4, r.body + 4, 8);
    assert_memory_equal(r.body, want, n);
    sl_buf_free(&body);
}

/* --- partitions and segments --------------------------------------------------------- */

static void assert_partition_ids(uint32_t sid, const char *topic, uint32_t count)
{
    const sl_topic_t *t;
    OK(sl_client_get_topic(root, sl_id_num(sid), sl_id_name(topic), &t));
    assert_non_null(t);
    assert_int_equal(t->partitions_count, count);
    for (uint32_t p = 0; p < count; p++)
        assert_int_equal(t->partitions[p].id, p);
}

static void test_partitions(void **state)
{
    (void)state;
    uint32_t sid = create_stream("parts");
    OK(sl_client_create_topic(root, sl_id_num(sid), "p", 2, NULL, NULL));
    OK(sl_client_create_partitions(root, sl_id_num(sid), sl_id_name("p"), 3));
    assert_partition_ids(sid, "p", 5); /* ids continue: 2, 3, 4 */
    OK(sl_client_delete_partitions(root, sl_id_num(sid), sl_id_name("p"), 2));
    assert_partition_ids(sid, "p", 3); /* the highest two went */
    OK(sl_client_create_partitions(root, sl_id_num(sid), sl_id_name("p"), 1));
    assert_partition_ids(sid, "p", 4);

    FAILS(sl_client_create_partitions(root, sl_id_num(sid), sl_id_name("p"), 0),
          SL_ERR_TOO_MANY_PARTITIONS);
    FAILS(sl_client_create_partitions(root, sl_id_num(sid), sl_id_name("p"), 1001),
          SL_ERR_TOO_MANY_PARTITIONS);
    FAILS(sl_client_delete_partitions(root, sl_id_num(sid), sl_id_name("p"), 0),
          SL_ERR_TOO_MANY_PARTITIONS);
    FAILS(sl_client_delete_partitions(root, sl_id_num(sid), sl_id_name("p"), 1001),
          SL_ERR_TOO_MANY_PARTITIONS);
    FAILS(sl_client_delete_partitions(root, sl_id_num(sid), sl_id_name("p"), 5),
          SL_ERR_INVALID_PARTITIONS_COUNT);
    assert_partition_ids(sid, "p", 4);
    FAILS(sl_client_create_partitions(root, sl_id_num(sid), sl_id_name("q"), 1),
          SL_ERR_TOPIC_ID_NOT_FOUND);
    FAILS(sl_client_delete_partitions(root, sl_id_num(sid), sl_id_name("q"), 1),
          SL_ERR_TOPIC_ID_NOT_FOUND);
    FAILS(sl_client_create_partitions(root, sl_id_num(999999), sl_id_num(0), 1),
          SL_ERR_STREAM_ID_NOT_FOUND);
    FAILS(sl_client_delete_partitions(root, sl_id_num(999999), sl_id_num(0), 1),
          SL_ERR_STREAM_ID_NOT_FOUND);
    /* Deleting every partition is allowed. */
    OK(sl_client_delete_partitions(root, sl_id_num(sid), sl_id_name("p"), 4));
    assert_partition_ids(sid, "p", 0);
}

static void test_delete_segments(void **state)
{
    (void)state;
    uint32_t sid = create_stream("segments");
    OK(sl_client_create_topic(root, sl_id_num(sid), "s", 2, NULL, NULL));
    /* Nothing sealed yet: a committed no-op. */
    OK(sl_client_delete_segments(root, sl_id_num(sid), sl_id_name("s"), 0, 1));
    OK(sl_client_delete_segments(root, sl_id_num(sid), sl_id_name("s"), 1, 100));
    FAILS(sl_client_delete_segments(root, sl_id_num(sid), sl_id_name("s"), 2, 1),
          SL_ERR_PARTITION_NOT_FOUND);
    FAILS(sl_client_delete_segments(root, sl_id_num(sid), sl_id_name("t"), 0, 1),
          SL_ERR_TOPIC_ID_NOT_FOUND);
    FAILS(sl_client_delete_segments(root, sl_id_num(999999), sl_id_num(0), 0, 1),
          SL_ERR_STREAM_ID_NOT_FOUND);

    /* The committed reply carries operation 68 (TruncatePartition), framed. */
    sl_buf_t body;
    sl_buf_init(&body, 0);
    sl_delete_segments_request_t q = {.stream_id = sl_ident_number(sid),
                                      .topic_id = sl_ident_name("s"),
                                      .partition_id = 0,
                                      .segments_count = 1};
    OK(sl_delete_segments_request_encode(&body, &q));
    sl_raw_reply_t r;
    OK(sl_client_request_raw(root, SL_OP_DELETE_SEGMENTS, 0, body.data, body.len, &r));
    assert_int_equal(r.operation, SL_OP_TRUNCATE_PARTITION);
    assert_int_equal(r.status, 0);
    assert_int_equal(r.body_len, 4);
    assert_int_equal(r.error, 0);
    q.partition_id = 7;
    sl_buf_reset(&body);
    OK(sl_delete_segments_request_encode(&body, &q));
    OK(sl_client_request_raw(root, SL_OP_DELETE_SEGMENTS, 0, body.data, body.len, &r));
    assert_int_equal(r.operation, SL_OP_TRUNCATE_PARTITION);
    assert_int_equal(r.status, 0);
    assert_int_equal(r.body_len, 12);
    assert_int_equal(r.error, -SL_ERR_PARTITION_NOT_FOUND);
    sl_buf_free(&body);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stream_create_get),
        cmocka_unit_test(test_stream_list),
        cmocka_unit_test(test_stream_update),
        cmocka_unit_test(test_stream_delete_purge),
        cmocka_unit_test(test_stream_lowest_free_id),
        cmocka_unit_test(test_stream_option_key_refused),
        cmocka_unit_test(test_topic_create_with_options),
        cmocka_unit_test(test_topic_defaults_derived),
        cmocka_unit_test(test_topic_create_errors),
        cmocka_unit_test(test_topic_list_get_missing),
        cmocka_unit_test(test_topic_delete_purge),
        cmocka_unit_test(test_topic_update_patch),
        cmocka_unit_test(test_topic_option_forms),
        cmocka_unit_test(test_topic_option_strings),
        cmocka_unit_test(test_undecodable_bodies),
        cmocka_unit_test(test_golden_replies),
        cmocka_unit_test(test_id_space_limits),
        cmocka_unit_test(test_partitions),
        cmocka_unit_test(test_delete_segments),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
