/* The metadata state machine's streams, topics and partitions: every
 * operation's success and documented error (commands.md 8-10), lowest-free
 * id reuse, name uniqueness, the CreateTopic/GetTopic bytes of commands.md
 * 13.2, and the permission matrix of a non-root user (permissions.md 2). */
#include "meta_testutil.h"

#include "base/limits.h"
#include "base/xxh3.h"
#include "wire/tlv.h"

static const char get_topic_hex[] = "00 00 00 00 00 40 1e 18 24 0a 06 00 02 00 00 00 "
                                    "ff ff ff ff ff ff ff ff 01 ff ff ff ff ff ff ff "
                                    "ff 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 "
                                    "00 06 65 76 65 6e 74 73 1e 00 00 00 02 0c 00 00 "
                                    "00 73 65 67 6d 65 6e 74 5f 73 69 7a 65 0c 08 00 "
                                    "00 00 00 00 00 08 00 00 00 00 f4 00 00 00 02 15 "
                                    "00 00 00 63 6f 6d 70 72 65 73 73 69 6f 6e 5f 61 "
                                    "6c 67 6f 72 69 74 68 6d 02 04 00 00 00 6e 6f 6e "
                                    "65 02 0d 00 00 00 65 6e 66 6f 72 63 65 5f 66 73 "
                                    "79 6e 63 03 01 00 00 00 00 02 0e 00 00 00 6d 61 "
                                    "78 5f 74 6f 70 69 63 5f 73 69 7a 65 0c 08 00 00 "
                                    "00 ff ff ff ff ff ff ff ff 02 0e 00 00 00 6d 65 "
                                    "73 73 61 67 65 5f 65 78 70 69 72 79 0c 08 00 00 "
                                    "00 ff ff ff ff ff ff ff ff 02 19 00 00 00 6d 65 "
                                    "73 73 61 67 65 73 5f 72 65 71 75 69 72 65 64 5f "
                                    "74 6f 5f 73 61 76 65 0b 04 00 00 00 00 04 00 00 "
                                    "02 14 00 00 00 70 72 65 61 6c 6c 6f 63 61 74 65 "
                                    "5f 73 65 67 6d 65 6e 74 73 03 01 00 00 00 00 02 "
                                    "21 00 00 00 73 69 7a 65 5f 6f 66 5f 6d 65 73 73 "
                                    "61 67 65 73 5f 72 65 71 75 69 72 65 64 5f 74 6f "
                                    "5f 73 61 76 65 0c 08 00 00 00 00 00 10 00 00 00 "
                                    "00 00 00 00 00 00 00 40 1e 18 24 0a 06 00 01 00 "
                                    "00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 "
                                    "00 00 00 00 00 00 00 00 00 00 01 00 00 00 00 40 "
                                    "1e 18 24 0a 06 00 01 00 00 00 00 00 00 00 00 00 "
                                    "00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 "
                                    "00 00 ";

#define S(name) sl_ident_name(name)
#define N(id)   sl_ident_number(id)
#define NONE    sl_span(NULL, 0)

static uint32_t create_stream(tm_t *t, uint32_t user, const char *name)
{
    return tm_code(t, SL_OP_CREATE_STREAM, user, tm_body_stream(t, name));
}

static uint32_t create_topic(tm_t *t, uint32_t user, sl_ident_t stream, const char *name,
                             uint32_t partitions)
{
    return tm_code(t, SL_OP_CREATE_TOPIC_WITH_ASSIGNMENTS, user,
                   tm_body_topic(t, stream, partitions, name, NONE));
}

static const sl_meta_topic_t *topic_of(tm_t *t, sl_ident_t stream, sl_ident_t topic)
{
    const sl_meta_stream_t *s = sl_meta_stream_find(t->m, &stream);
    return s ? sl_meta_topic_find(s, &topic) : NULL;
}

/* --- streams --------------------------------------------------------------------------- */

static void test_create_stream(void **state)
{
    (void)state;
    tm_t t;
    tm_init(&t);
    uint64_t created = t.timestamp;
    sl_span_t payload;
    sl_span_t reply = tm_apply(&t, SL_OP_CREATE_STREAM, 0, tm_body_stream(&t, "orders"));
    assert_int_equal(tm_result(reply, &payload), 0);

    sl_arena_t arena;
    sl_arena_init(&arena, 0, 0);
    sl_create_stream_reply_t got;
    assert_int_equal(sl_create_stream_reply_decode(payload, &arena, &got), 0);
    assert_int_equal(got.stream.header.id, 0);
    assert_int_equal(got.stream.header.created_at, created);
    assert_int_equal(got.stream.header.topics_count, 0);
    assert_int_equal(got.stream.header.size_bytes, 0);
    assert_int_equal(got.stream.header.messages_count, 0);
    assert_span_str(got.stream.header.name, "orders");
    assert_int_equal(got.stream.header.options.len, 0);
    sl_arena_free(&arena);

    const sl_meta_stream_t *s =
        sl_meta_stream_find(t.m, &(sl_ident_t){.kind = 2, .name = sl_span_str("orders")});
    assert_non_null(s);
    assert_ptr_equal(sl_meta_stream_by_id(t.m, 0), s);
    sl_meta_counts_t counts;
    sl_meta_counts(t.m, &counts);
    assert_int_equal(counts.streams, 1);

    /* The same name again: 1012, and nothing created. */
    assert_int_equal(create_stream(&t, 0, "orders"), SL_ERR_STREAM_NAME_ALREADY_EXISTS);
    /* Names are byte-exact: another case is another name. */
    assert_int_equal(create_stream(&t, 0, "Orders"), 0);
    sl_meta_counts(t.m, &counts);
    assert_int_equal(counts.streams, 2);
    tm_free(&t);
}

static void test_stream_ids_lowest_free(void **state)
{
    (void)state;
    tm_t t;
    tm_init(&t);
    const char *names[] = {"a", "b", "c", "d"};
    for (int i = 0; i < 4; i++)
        assert_int_equal(create_stream(&t, 0, names[i]), 0);
    tm_ok_empty(&t, SL_OP_DELETE_STREAM, 0, tm_body_stream_ref(&t, N(1)));
    tm_ok_empty(&t, SL_OP_DELETE_STREAM, 0, tm_body_stream_ref(&t, S("c")));
    assert_null(sl_meta_stream_by_id(t.m, 1));
    assert_int_equal(create_stream(&t, 0, "e"), 0);
    assert_int_equal(create_stream(&t, 0, "f"), 0);
    assert_int_equal(create_stream(&t, 0, "g"), 0);
    assert_span_str(sl_meta_stream_by_id(t.m, 1)->name, "e");
    assert_span_str(sl_meta_stream_by_id(t.m, 2)->name, "f");
    assert_span_str(sl_meta_stream_by_id(t.m, 4)->name, "g");
    /* Iteration runs in id order. */
    uint32_t expected[] = {0, 1, 2, 3, 4}, n = 0;
    for (const sl_meta_stream_t *s = sl_meta_stream_next(t.m, NULL); s;
         s = sl_meta_stream_next(t.m, s))
        assert_int_equal(s->id, expected[n++]);
    assert_int_equal(n, 5);
    /* The deleted name is free again. */
    assert_int_equal(create_stream(&t, 0, "c"), 0);
    tm_free(&t);
}

static void test_too_many_streams(void **state)
{
    (void)state;
    tm_t t;
    tm_init(&t);
    sl_meta_set_limits(t.m, 3, SL_TOPICS_PER_STREAM_MAX, SL_PARTITION_IDS_MAX);
    assert_int_equal(create_stream(&t, 0, "a"), 0);
    assert_int_equal(create_stream(&t, 0, "b"), 0);
    assert_int_equal(create_stream(&t, 0, "c"), 0);
    assert_int_equal(create_stream(&t, 0, "d"), SL_ERR_TOO_MANY_STREAMS);
    tm_ok_empty(&t, SL_OP_DELETE_STREAM, 0, tm_body_stream_ref(&t, N(0)));
    assert_int_equal(create_stream(&t, 0, "d"), 0);
    assert_int_equal(sl_meta_stream_by_id(t.m, 0)->created_at, t.timestamp - 1);
    tm_free(&t);
}

static void test_update_stream(void **state)
{
    (void)state;
    tm_t t;
    tm_init(&t);
    assert_int_equal(create_stream(&t, 0, "a"), 0);
    assert_int_equal(create_stream(&t, 0, "b"), 0);
    /* Renaming to the current name is fine. */
    tm_ok_empty(&t, SL_OP_UPDATE_STREAM, 0, tm_body_update_stream(&t, N(0), "a"));
    assert_int_equal(tm_code(&t, SL_OP_UPDATE_STREAM, 0, tm_body_update_stream(&t, N(0), "b")),
                     SL_ERR_STREAM_NAME_ALREADY_EXISTS);
    assert_int_equal(tm_code(&t, SL_OP_UPDATE_STREAM, 0, tm_body_update_stream(&t, N(7), "z")),
                     SL_ERR_STREAM_ID_NOT_FOUND);
    assert_int_equal(tm_code(&t, SL_OP_UPDATE_STREAM, 0, tm_body_update_stream(&t, S("nope"), "z")),
                     SL_ERR_STREAM_ID_NOT_FOUND);
    tm_ok_empty(&t, SL_OP_UPDATE_STREAM, 0, tm_body_update_stream(&t, S("a"), "renamed"));
    assert_span_str(sl_meta_stream_by_id(t.m, 0)->name, "renamed");
    assert_null(sl_meta_stream_find(t.m, &(sl_ident_t){.kind = 2, .name = sl_span_str("a")}));
    /* The old name is free, the new one taken. */
    assert_int_equal(create_stream(&t, 0, "a"), 0);
    assert_int_equal(create_stream(&t, 0, "renamed"), SL_ERR_STREAM_NAME_ALREADY_EXISTS);
    tm_free(&t);
}

static void test_delete_and_purge_stream(void **state)
{
    (void)state;
    tm_t t;
    tm_init(&t);
    assert_int_equal(create_stream(&t, 0, "a"), 0);
    assert_int_equal(create_topic(&t, 0, N(0), "t1", 3), 0);
    assert_int_equal(create_topic(&t, 0, N(0), "t2", 2), 0);
    assert_int_equal(
        tm_code(&t, SL_OP_CREATE_CONSUMER_GROUP, 0, tm_body_group(&t, N(0), N(0), "g")), 0);
    sl_meta_counts_t c;
    sl_meta_counts(t.m, &c);
    assert_int_equal(c.topics, 2);
    assert_int_equal(c.partitions, 5);
    assert_int_equal(c.groups, 1);

    tm_ok_empty(&t, SL_OP_PURGE_STREAM, 0, tm_body_stream_ref(&t, N(0)));
    sl_meta_counts(t.m, &c);
    assert_int_equal(c.partitions, 5); /* purge keeps the metadata */
    assert_int_equal(tm_code(&t, SL_OP_PURGE_STREAM, 0, tm_body_stream_ref(&t, N(3))),
                     SL_ERR_STREAM_ID_NOT_FOUND);

    tm_ok_empty(&t, SL_OP_DELETE_STREAM, 0, tm_body_stream_ref(&t, S("a")));
    sl_meta_counts(t.m, &c);
    assert_int_equal(c.streams, 0);
    assert_int_equal(c.topics, 0);
    assert_int_equal(c.partitions, 0);
    assert_int_equal(c.groups, 0);
    assert_int_equal(tm_code(&t, SL_OP_DELETE_STREAM, 0, tm_body_stream_ref(&t, S("a"))),
                     SL_ERR_STREAM_ID_NOT_FOUND);
    tm_free(&t);
}

/* --- topics ------------------------------------------------------------------------------ */

static void test_create_topic_golden(void **state)
{
    (void)state;
    tm_t t;
    tm_init(&t);
    assert_int_equal(create_stream(&t, 0, "s"), 0);

    uint8_t value[8];
    sl_store_u64(value, 128ull * 1024 * 1024);
    sl_buf_t options;
    sl_buf_init(&options, 0);
    assert_true(sl_tlv_put_pair(&options, "segment_size", SL_KIND_UINT64, sl_span(value, 8)));
    t.timestamp = TM_T0;
    sl_span_t reply = tm_apply(&t, SL_OP_CREATE_TOPIC_WITH_ASSIGNMENTS, 0,
                               tm_body_topic(&t, N(0), 2, "events", sl_buf_span(&options)));

    size_t len;
    uint8_t *want = tu_hex(get_topic_hex, &len);
    assert_int_equal(len, 418);
    /* The CreateTopic reply: count 0, then 13.2 with segments_count 0. */
    uint8_t *created = malloc(4 + len);
    memset(created, 0, 4);
    memcpy(created + 4, want, len);
    sl_store_u32(created + 4 + 338 + 12, 0);
    sl_store_u32(created + 4 + 378 + 12, 0);
    assert_bytes_equal(reply.ptr, reply.len, created, 4 + len);

    /* The GetTopic reply built from the read views, with the store's one
     * (unmaterialised) segment per partition, is 13.2 byte for byte. */
    const sl_meta_topic_t *topic = topic_of(&t, N(0), S("events"));
    assert_non_null(topic);
    assert_int_equal(topic->config.segment_size, 128ull * 1024 * 1024);
    assert_int_equal(topic->config.explicit_keys, SL_TOPIC_KEY_BIT(SL_TOPIC_KEY_SEGMENT_SIZE));
    sl_partition_info_t parts[2];
    sl_get_topic_reply_t get = {.found = true};
    sl_meta_topic_header(topic, &get.topic.header);
    for (uint32_t p = 0; p < 2; p++) {
        sl_meta_partition_info(topic, p, &parts[p]);
        parts[p].segments_count = 1;
    }
    get.topic.partitions = parts;
    sl_buf_t got;
    sl_buf_init(&got, 0);
    assert_int_equal(sl_get_topic_reply_encode(&got, &get), 0);
    assert_bytes_equal(got.data, got.len, want, len);

    sl_buf_free(&got);
    sl_buf_free(&options);
    free(created);
    free(want);
    tm_free(&t);
}

static void test_create_topic_errors(void **state)
{
    (void)state;
    tm_t t;
    tm_init(&t);
    assert_int_equal(create_topic(&t, 0, N(0), "x", 1), SL_ERR_STREAM_ID_NOT_FOUND);
    assert_int_equal(create_stream(&t, 0, "s"), 0);
    assert_int_equal(create_topic(&t, 0, S("s"), "x", 0), 0); /* 0 partitions is legal */
    assert_int_equal(create_topic(&t, 0, S("s"), "x", 1), SL_ERR_TOPIC_NAME_ALREADY_EXISTS);
    assert_int_equal(create_topic(&t, 0, S("nope"), "y", 1), SL_ERR_STREAM_ID_NOT_FOUND);
    /* Admission refuses these; at apply they are committed rejections. */
    assert_int_equal(create_topic(&t, 0, S("s"), "y", 1001), SL_ERR_TOO_MANY_PARTITIONS);
    sl_buf_t options;
    sl_buf_init(&options, 0);
    assert_true(sl_tlv_put_pair(&options, "bogus", SL_KIND_STRING, sl_span_str("v")));
    assert_int_equal(tm_code(&t, SL_OP_CREATE_TOPIC_WITH_ASSIGNMENTS, 0,
                             tm_body_topic(&t, S("s"), 1, "y", sl_buf_span(&options))),
                     SL_ERR_UNSUPPORTED_OPTION_KEY);
    sl_buf_free(&options);
    /* An undecodable body cannot be applied at all. */
    sl_meta_entry_t e = {
        .op = t.op, .timestamp = t.timestamp, .operation = 64, .body = sl_span("\x01\x04", 2)};
    sl_buf_reset(&t.reply);
    assert_int_equal(sl_meta_apply(t.m, &e, &t.reply), -SL_ERR_INVALID_COMMAND);
    assert_int_equal(t.reply.len, 0);
    tm_free(&t);
}

static void test_too_many_topics(void **state)
{
    (void)state;
    tm_t t;
    tm_init(&t);
    assert_int_equal(create_stream(&t, 0, "s"), 0);
    char name[16];
    for (uint32_t i = 0; i < SL_TOPICS_PER_STREAM_MAX; i++) {
        snprintf(name, sizeof(name), "t%u", i);
        assert_int_equal(create_topic(&t, 0, N(0), name, 0), 0);
    }
    assert_int_equal(create_topic(&t, 0, N(0), "one-more", 0), SL_ERR_TOO_MANY_TOPICS);
    /* Lowest free id: delete 17 and 5, the next topics get 5 then 17. */
    tm_ok_empty(&t, SL_OP_DELETE_TOPIC, 0, tm_body_topic_ref(&t, N(0), N(17)));
    tm_ok_empty(&t, SL_OP_DELETE_TOPIC, 0, tm_body_topic_ref(&t, N(0), S("t5")));
    assert_int_equal(create_topic(&t, 0, N(0), "new-a", 0), 0);
    assert_int_equal(create_topic(&t, 0, N(0), "new-b", 0), 0);
    assert_span_str(topic_of(&t, N(0), N(5))->name, "new-a");
    assert_span_str(topic_of(&t, N(0), N(17))->name, "new-b");
    assert_int_equal(create_topic(&t, 0, N(0), "new-c", 0), SL_ERR_TOO_MANY_TOPICS);
    tm_free(&t);
}

static void test_update_topic(void **state)
{
    (void)state;
    tm_t t;
    tm_init(&t);
    assert_int_equal(create_stream(&t, 0, "s"), 0);
    assert_int_equal(create_topic(&t, 0, N(0), "a", 1), 0);
    assert_int_equal(create_topic(&t, 0, N(0), "b", 1), 0);
    tm_ok_empty(&t, SL_OP_UPDATE_TOPIC, 0, tm_body_update_topic(&t, N(0), N(0), "a", NONE));
    assert_int_equal(
        tm_code(&t, SL_OP_UPDATE_TOPIC, 0, tm_body_update_topic(&t, N(0), N(0), "b", NONE)),
        SL_ERR_TOPIC_NAME_ALREADY_EXISTS);
    assert_int_equal(
        tm_code(&t, SL_OP_UPDATE_TOPIC, 0, tm_body_update_topic(&t, N(0), N(9), "z", NONE)),
        SL_ERR_TOPIC_ID_NOT_FOUND);
    assert_int_equal(
        tm_code(&t, SL_OP_UPDATE_TOPIC, 0, tm_body_update_topic(&t, N(4), N(0), "z", NONE)),
        SL_ERR_STREAM_ID_NOT_FOUND);

    /* Patch: gzip by its String name goes verbatim into the explicit block. */
    sl_buf_t options;
    sl_buf_init(&options, 0);
    assert_true(
        sl_tlv_put_pair(&options, "compression_algorithm", SL_KIND_STRING, sl_span_str("GZIP")));
    tm_ok_empty(&t, SL_OP_UPDATE_TOPIC, 0,
                tm_body_update_topic(&t, N(0), S("a"), "a2", sl_buf_span(&options)));
    const sl_meta_topic_t *topic = topic_of(&t, N(0), N(0));
    assert_span_str(topic->name, "a2");
    assert_int_equal(topic->config.compression_algorithm, SL_COMPRESSION_GZIP);
    assert_span_equal(topic->options, sl_buf_span(&options));
    sl_tlv_field_t v;
    assert_false(sl_options_find(topic->derived_options, "compression_algorithm", &v));
    assert_true(sl_options_find(topic->derived_options, "segment_size", &v));

    /* max_topic_size below the stored segment size: 1019 (admission's job,
     * committed defensively here). */
    sl_buf_reset(&options);
    uint8_t small[8];
    sl_store_u64(small, 4096);
    assert_true(sl_tlv_put_pair(&options, "max_topic_size", SL_KIND_UINT64, sl_span(small, 8)));
    assert_int_equal(tm_code(&t, SL_OP_UPDATE_TOPIC, 0,
                             tm_body_update_topic(&t, N(0), N(1), "b", sl_buf_span(&options))),
                     SL_ERR_INVALID_TOPIC_SIZE);
    sl_buf_free(&options);
    tm_free(&t);
}

static void test_delete_and_purge_topic(void **state)
{
    (void)state;
    tm_t t;
    tm_init(&t);
    assert_int_equal(create_stream(&t, 0, "s"), 0);
    assert_int_equal(create_topic(&t, 0, N(0), "a", 4), 0);
    tm_ok_empty(&t, SL_OP_PURGE_TOPIC, 0, tm_body_topic_ref(&t, N(0), N(0)));
    assert_int_equal(tm_code(&t, SL_OP_PURGE_TOPIC, 0, tm_body_topic_ref(&t, N(0), N(1))),
                     SL_ERR_TOPIC_ID_NOT_FOUND);
    assert_int_equal(tm_code(&t, SL_OP_PURGE_TOPIC, 0, tm_body_topic_ref(&t, N(1), N(0))),
                     SL_ERR_STREAM_ID_NOT_FOUND);
    assert_int_equal(tm_code(&t, SL_OP_DELETE_TOPIC, 0, tm_body_topic_ref(&t, N(1), N(0))),
                     SL_ERR_STREAM_ID_NOT_FOUND);
    assert_int_equal(tm_code(&t, SL_OP_DELETE_TOPIC, 0, tm_body_topic_ref(&t, N(0), S("b"))),
                     SL_ERR_TOPIC_ID_NOT_FOUND);
    tm_ok_empty(&t, SL_OP_DELETE_TOPIC, 0, tm_body_topic_ref(&t, N(0), S("a")));
    assert_null(topic_of(&t, N(0), N(0)));
    sl_meta_counts_t c;
    sl_meta_counts(t.m, &c);
    assert_int_equal(c.topics, 0);
    assert_int_equal(c.partitions, 0);
    /* The Node SDK's trailing u32 after the identifiers is ignored. */
    assert_int_equal(create_topic(&t, 0, N(0), "a", 1), 0);
    sl_span_t body = tm_body_topic_ref(&t, N(0), N(0));
    sl_put_u32(&t.body, 0);
    body = sl_buf_span(&t.body);
    tm_ok_empty(&t, SL_OP_DELETE_TOPIC, 0, body);
    tm_free(&t);
}

/* Each applied purge raises the purge generation of the topics it covers (PurgeStream: every
 * topic of the stream), a refused one raises nothing, and the generation survives a snapshot.
 * A version 1 image (no generation field) still decodes, with generation 0. */
static void test_purge_generation(void **state)
{
    (void)state;
    tm_t t;
    tm_init(&t);
    assert_int_equal(create_stream(&t, 0, "a"), 0);
    assert_int_equal(create_stream(&t, 0, "b"), 0);
    assert_int_equal(create_topic(&t, 0, N(0), "t1", 2), 0);
    assert_int_equal(create_topic(&t, 0, N(0), "t2", 1), 0);
    assert_int_equal(create_topic(&t, 0, N(1), "u1", 1), 0);
    assert_int_equal(topic_of(&t, N(0), N(0))->purge_generation, 0);
    tm_ok_empty(&t, SL_OP_PURGE_TOPIC, 0, tm_body_topic_ref(&t, N(0), N(1)));
    tm_ok_empty(&t, SL_OP_PURGE_STREAM, 0, tm_body_stream_ref(&t, N(0)));
    tm_ok_empty(&t, SL_OP_PURGE_TOPIC, 0, tm_body_topic_ref(&t, N(0), S("t2")));
    assert_int_equal(tm_code(&t, SL_OP_PURGE_TOPIC, 0, tm_body_topic_ref(&t, N(0), N(7))),
                     SL_ERR_TOPIC_ID_NOT_FOUND);
    assert_int_equal(topic_of(&t, N(0), N(0))->purge_generation, 1);
    assert_int_equal(topic_of(&t, N(0), N(1))->purge_generation, 3);
    assert_int_equal(topic_of(&t, N(1), N(0))->purge_generation, 0); /* another stream */

    sl_buf_t image = tm_encode(t.m);
    tm_t copy;
    tm_init_cap(&copy, SL_CLIENTS_TABLE_DEFAULT);
    assert_int_equal(sl_meta_decode(sl_buf_span(&image), copy.m), 0);
    assert_int_equal(topic_of(&copy, N(0), N(0))->purge_generation, 1);
    assert_int_equal(topic_of(&copy, N(0), N(1))->purge_generation, 3);
    tm_assert_same_state(copy.m, t.m);
    /* A new topic (even one reusing an id) starts at 0. */
    tm_ok_empty(&t, SL_OP_DELETE_TOPIC, 0, tm_body_topic_ref(&t, N(0), N(1)));
    assert_int_equal(create_topic(&t, 0, N(0), "t3", 1), 0);
    assert_int_equal(topic_of(&t, N(0), N(1))->purge_generation, 0);

    /* Version 1: the same image of stream b (generation 0) without the 8-byte field after the
     * topic's created_at. */
    tm_ok_empty(&t, SL_OP_DELETE_STREAM, 0, tm_body_stream_ref(&t, N(0)));
    sl_buf_t v2 = tm_encode(t.m);
    const sl_meta_topic_t *u1 = topic_of(&t, N(1), N(0));
    uint8_t key[8 + 8 + 3];
    sl_store_u64(key, u1->created_at);
    memset(key + 8, 0, 8);
    memcpy(key + 16, "\x02u1", 3);
    size_t at = 0;
    for (; at + sizeof(key) <= v2.len; at++)
        if (memcmp(v2.data + at, key, sizeof(key)) == 0)
            break;
    assert_true(at + sizeof(key) <= v2.len);
    sl_buf_t v1;
    sl_buf_init(&v1, 0);
    sl_put_bytes(&v1, v2.data, at + 8);
    sl_put_bytes(&v1, v2.data + at + 16, v2.len - 8 - (at + 16));
    sl_store_u16(v1.data + 4, 1);
    sl_put_u64(&v1, sl_xxh3_64(v1.data, v1.len));
    tm_t old;
    tm_init_cap(&old, SL_CLIENTS_TABLE_DEFAULT);
    assert_int_equal(sl_meta_decode(sl_buf_span(&v1), old.m), 0);
    assert_int_equal(topic_of(&old, N(1), N(0))->purge_generation, 0);
    tm_assert_same_state(old.m, t.m);
    /* A version from the future is refused. */
    sl_store_u16(v2.data + 4, 3);
    sl_store_u64(v2.data + v2.len - 8, sl_xxh3_64(v2.data, v2.len - 8));
    assert_int_equal(sl_meta_decode(sl_buf_span(&v2), old.m), -SL_ERR_STATE_FILE_CORRUPTED);
    tm_free(&old);
    sl_buf_free(&v1);
    sl_buf_free(&v2);
    sl_buf_free(&image);
    tm_free(&copy);
    tm_free(&t);
}

/* --- partitions ------------------------------------------------------------------------------ */

static void test_create_partitions(void **state)
{
    (void)state;
    tm_t t;
    tm_init(&t);
    assert_int_equal(create_stream(&t, 0, "s"), 0);
    assert_int_equal(create_topic(&t, 0, N(0), "a", 0), 0);
    assert_int_equal(tm_code(&t, SL_OP_CREATE_PARTITIONS_WITH_ASSIGNMENTS, 0,
                             tm_body_partitions(&t, N(1), N(0), 1)),
                     SL_ERR_STREAM_ID_NOT_FOUND);
    assert_int_equal(tm_code(&t, SL_OP_CREATE_PARTITIONS_WITH_ASSIGNMENTS, 0,
                             tm_body_partitions(&t, N(0), N(1), 1)),
                     SL_ERR_TOPIC_ID_NOT_FOUND);
    uint64_t first = t.timestamp;
    tm_ok_empty(&t, SL_OP_CREATE_PARTITIONS_WITH_ASSIGNMENTS, 0,
                tm_body_partitions(&t, N(0), N(0), 3));
    uint64_t second = t.timestamp;
    tm_ok_empty(&t, SL_OP_CREATE_PARTITIONS_WITH_ASSIGNMENTS, 0,
                tm_body_partitions(&t, N(0), N(0), 2));
    const sl_meta_topic_t *topic = topic_of(&t, N(0), N(0));
    assert_int_equal(topic->partitions_count, 5);
    for (uint32_t p = 0; p < 5; p++) {
        sl_partition_info_t info;
        sl_meta_partition_info(topic, p, &info);
        assert_int_equal(info.id, p);
        assert_int_equal(info.created_at, p < 3 ? first : second);
        assert_int_equal(info.segments_count, 0);
    }
    /* A count of 0 or above 1000 is refused at admission (2015). */
    assert_int_equal(tm_code(&t, SL_OP_CREATE_PARTITIONS_WITH_ASSIGNMENTS, 0,
                             tm_body_partitions(&t, N(0), N(0), 0)),
                     SL_ERR_TOO_MANY_PARTITIONS);
    tm_free(&t);
}

static void test_partition_id_space_exhausted(void **state)
{
    (void)state;
    tm_t t;
    tm_init(&t);
    assert_int_equal(create_stream(&t, 0, "s"), 0);
    assert_int_equal(create_topic(&t, 0, N(0), "a", 1000), 0);
    for (uint32_t i = 1; i < SL_PARTITION_IDS_MAX / 1000; i++)
        tm_ok_empty(&t, SL_OP_CREATE_PARTITIONS_WITH_ASSIGNMENTS, 0,
                    tm_body_partitions(&t, N(0), N(0), 1000));
    assert_int_equal(topic_of(&t, N(0), N(0))->partitions_count, SL_PARTITION_IDS_MAX);
    assert_int_equal(tm_code(&t, SL_OP_CREATE_PARTITIONS_WITH_ASSIGNMENTS, 0,
                             tm_body_partitions(&t, N(0), N(0), 1)),
                     SL_ERR_PARTITION_ID_SPACE_EXHAUSTED);
    /* CreateTopic hits it through the (lowered) limit as well. */
    sl_meta_set_limits(t.m, SL_STREAMS_MAX, SL_TOPICS_PER_STREAM_MAX, 10);
    assert_int_equal(create_topic(&t, 0, N(0), "b", 11), SL_ERR_PARTITION_ID_SPACE_EXHAUSTED);
    assert_int_equal(create_topic(&t, 0, N(0), "b", 10), 0);
    tm_free(&t);
}

static void test_delete_partitions(void **state)
{
    (void)state;
    tm_t t;
    tm_init(&t);
    assert_int_equal(create_stream(&t, 0, "s"), 0);
    assert_int_equal(create_topic(&t, 0, N(0), "a", 5), 0);
    assert_int_equal(tm_code(&t, SL_OP_DELETE_PARTITIONS, 0, tm_body_partitions(&t, N(0), N(0), 6)),
                     SL_ERR_INVALID_PARTITIONS_COUNT);
    assert_int_equal(tm_code(&t, SL_OP_DELETE_PARTITIONS, 0, tm_body_partitions(&t, N(0), N(3), 1)),
                     SL_ERR_TOPIC_ID_NOT_FOUND);
    assert_int_equal(tm_code(&t, SL_OP_DELETE_PARTITIONS, 0, tm_body_partitions(&t, N(2), N(0), 1)),
                     SL_ERR_STREAM_ID_NOT_FOUND);
    tm_ok_empty(&t, SL_OP_DELETE_PARTITIONS, 0, tm_body_partitions(&t, N(0), N(0), 2));
    assert_int_equal(topic_of(&t, N(0), N(0))->partitions_count, 3);
    tm_ok_empty(&t, SL_OP_DELETE_PARTITIONS, 0, tm_body_partitions(&t, N(0), N(0), 3));
    assert_int_equal(topic_of(&t, N(0), N(0))->partitions_count, 0);
    /* Ids restart at 0 once the topic is empty. */
    tm_ok_empty(&t, SL_OP_CREATE_PARTITIONS_WITH_ASSIGNMENTS, 0,
                tm_body_partitions(&t, N(0), N(0), 1));
    sl_partition_info_t info;
    sl_meta_partition_info(topic_of(&t, N(0), N(0)), 0, &info);
    assert_int_equal(info.created_at, t.timestamp - 1);
    tm_free(&t);
}

static void test_truncate_partition(void **state)
{
    (void)state;
    tm_t t;
    tm_init(&t);
    assert_int_equal(tm_code(&t, SL_OP_TRUNCATE_PARTITION, 0, tm_body_segments(&t, N(0), N(0), 0)),
                     SL_ERR_STREAM_ID_NOT_FOUND);
    assert_int_equal(create_stream(&t, 0, "s"), 0);
    assert_int_equal(tm_code(&t, SL_OP_TRUNCATE_PARTITION, 0, tm_body_segments(&t, N(0), N(0), 0)),
                     SL_ERR_TOPIC_ID_NOT_FOUND);
    assert_int_equal(create_topic(&t, 0, N(0), "a", 2), 0);
    assert_int_equal(tm_code(&t, SL_OP_TRUNCATE_PARTITION, 0, tm_body_segments(&t, N(0), N(0), 2)),
                     SL_ERR_PARTITION_NOT_FOUND);
    sl_buf_t before = tm_encode(t.m);
    tm_ok_empty(&t, SL_OP_TRUNCATE_PARTITION, 0, tm_body_segments(&t, N(0), N(0), 1));
    /* A no-op for meta: only last_op moved. */
    sl_buf_t after = tm_encode(t.m);
    assert_int_equal(before.len, after.len);
    sl_buf_free(&before);
    sl_buf_free(&after);
    tm_free(&t);
}

/* --- permission matrix --------------------------------------------------------------------- */

enum probe {
    P_CREATE_STREAM,
    P_UPDATE_S0,
    P_PURGE_S0,
    P_DELETE_S0,
    P_UPDATE_S1,
    P_CREATE_TOPIC_S0,
    P_CREATE_TOPIC_S1,
    P_UPDATE_T0,
    P_PURGE_T0,
    P_DELETE_T0,
    P_UPDATE_T1,
    P_CREATE_PARTITIONS_T0,
    P_DELETE_PARTITIONS_T0,
    P_TRUNCATE_T0,
    P_CREATE_GROUP_T0,
    P_DELETE_GROUP_T0,
    P_JOIN_T0,
    P_LEAVE_T0,
    P_CREATE_GROUP_T1,
    P_CREATE_USER,
    P_UPDATE_USER,
    P_DELETE_USER,
    P_UPDATE_PERMISSIONS,
    P_COUNT,
};

/* Streams s0 (id 0) and s1 (id 1), each with topics t0 (id 0, 2 partitions)
 * and t1 (id 1); group g0 in s0/t0; user "victim". Whatever a probe
 * deleted comes back with the same ids (lowest free). */
static void fixture(tm_t *t)
{
    const char *streams[] = {"s0", "s1"}, *topics[] = {"t0", "t1"};
    for (int s = 0; s < 2; s++) {
        if (!sl_meta_stream_find(t->m, &(sl_ident_t){.kind = 2, .name = sl_span_str(streams[s])}))
            assert_int_equal(create_stream(t, 0, streams[s]), 0);
        for (int k = 0; k < 2; k++) {
            sl_ident_t sid = S(streams[s]), tid = S(topics[k]);
            if (!topic_of(t, sid, tid))
                assert_int_equal(create_topic(t, 0, sid, topics[k], 2), 0);
            const sl_meta_topic_t *topic = topic_of(t, sid, tid);
            assert_int_equal(topic->id, (uint32_t)k);
            if (topic->partitions_count < 2)
                tm_ok_empty(t, SL_OP_CREATE_PARTITIONS_WITH_ASSIGNMENTS, 0,
                            tm_body_partitions(t, sid, tid, 2 - topic->partitions_count));
        }
    }
    assert_int_equal(
        sl_meta_stream_find(t->m, &(sl_ident_t){.kind = 2, .name = sl_span_str("s0")})->id, 0);
    const sl_meta_topic_t *t0 = topic_of(t, S("s0"), S("t0"));
    if (!sl_meta_group_find(t0, &(sl_ident_t){.kind = 2, .name = sl_span_str("g0")}))
        assert_int_equal(
            tm_code(t, SL_OP_CREATE_CONSUMER_GROUP, 0, tm_body_group(t, S("s0"), S("t0"), "g0")),
            0);
    if (!sl_meta_user_find(t->m, &(sl_ident_t){.kind = 2, .name = sl_span_str("victim")}))
        assert_int_equal(tm_code(t, SL_OP_CREATE_USER, 0, tm_body_user(t, "victim", 1, NONE)), 0);
}

static sl_span_t probe_body(tm_t *t, enum probe p, uint8_t *op)
{
    static unsigned serial;
    char name[32];
    snprintf(name, sizeof(name), "probe-%u", serial++);
    sl_update_user_request_t uu = {.user_id = S("victim")};
    sl_update_permissions_request_t up = {.user_id = S("victim")};
    switch (p) {
    case P_CREATE_STREAM:
        return *op = SL_OP_CREATE_STREAM, tm_body_stream(t, name);
    case P_UPDATE_S0:
        return *op = SL_OP_UPDATE_STREAM, tm_body_update_stream(t, S("s0"), "s0");
    case P_PURGE_S0:
        return *op = SL_OP_PURGE_STREAM, tm_body_stream_ref(t, S("s0"));
    case P_DELETE_S0:
        return *op = SL_OP_DELETE_STREAM, tm_body_stream_ref(t, S("s0"));
    case P_UPDATE_S1:
        return *op = SL_OP_UPDATE_STREAM, tm_body_update_stream(t, S("s1"), "s1");
    case P_CREATE_TOPIC_S0:
        return *op = SL_OP_CREATE_TOPIC_WITH_ASSIGNMENTS, tm_body_topic(t, S("s0"), 1, name, NONE);
    case P_CREATE_TOPIC_S1:
        return *op = SL_OP_CREATE_TOPIC_WITH_ASSIGNMENTS, tm_body_topic(t, S("s1"), 1, name, NONE);
    case P_UPDATE_T0:
        return *op = SL_OP_UPDATE_TOPIC, tm_body_update_topic(t, S("s0"), S("t0"), "t0", NONE);
    case P_PURGE_T0:
        return *op = SL_OP_PURGE_TOPIC, tm_body_topic_ref(t, S("s0"), S("t0"));
    case P_DELETE_T0:
        return *op = SL_OP_DELETE_TOPIC, tm_body_topic_ref(t, S("s0"), S("t0"));
    case P_UPDATE_T1:
        return *op = SL_OP_UPDATE_TOPIC, tm_body_update_topic(t, S("s0"), S("t1"), "t1", NONE);
    case P_CREATE_PARTITIONS_T0:
        return *op = SL_OP_CREATE_PARTITIONS_WITH_ASSIGNMENTS,
               tm_body_partitions(t, S("s0"), S("t0"), 1);
    case P_DELETE_PARTITIONS_T0:
        return *op = SL_OP_DELETE_PARTITIONS, tm_body_partitions(t, S("s0"), S("t0"), 1);
    case P_TRUNCATE_T0:
        return *op = SL_OP_TRUNCATE_PARTITION, tm_body_segments(t, S("s0"), S("t0"), 0);
    case P_CREATE_GROUP_T0:
        return *op = SL_OP_CREATE_CONSUMER_GROUP, tm_body_group(t, S("s0"), S("t0"), name);
    case P_DELETE_GROUP_T0:
        return *op = SL_OP_DELETE_CONSUMER_GROUP, tm_body_group_ref(t, S("s0"), S("t0"), S("g0"));
    case P_JOIN_T0:
        return *op = SL_OP_JOIN_CONSUMER_GROUP, tm_body_group_ref(t, S("s0"), S("t0"), S("g0"));
    case P_LEAVE_T0:
        return *op = SL_OP_LEAVE_CONSUMER_GROUP, tm_body_group_ref(t, S("s0"), S("t0"), S("g0"));
    case P_CREATE_GROUP_T1:
        return *op = SL_OP_CREATE_CONSUMER_GROUP, tm_body_group(t, S("s0"), S("t1"), name);
    case P_CREATE_USER:
        return *op = SL_OP_CREATE_USER, tm_body_user(t, name, 1, NONE);
    case P_UPDATE_USER:
        sl_buf_reset(&t->body);
        assert_int_equal(sl_update_user_request_encode(&t->body, &uu), 0);
        return *op = SL_OP_UPDATE_USER, sl_buf_span(&t->body);
    case P_DELETE_USER:
        return *op = SL_OP_DELETE_USER, tm_body_user_ref(t, S("victim"));
    case P_UPDATE_PERMISSIONS:
        sl_buf_reset(&t->body);
        assert_int_equal(sl_update_permissions_request_encode(&t->body, &up), 0);
        return *op = SL_OP_UPDATE_PERMISSIONS, sl_buf_span(&t->body);
    case P_COUNT:
        break;
    }
    fail();
    return NONE;
}

typedef struct matrix_row {
    const char *name;
    sl_permissions_t perms;
    const char *allowed; /* one character per probe: 1 allowed, 0 denied (41) */
} matrix_row_t;

static void run_matrix_row(const matrix_row_t *row)
{
    tm_t t;
    tm_init(&t);
    fixture(&t);
    sl_buf_t perms;
    sl_buf_init(&perms, 0);
    bool has = row->perms.manage_servers || row->perms.read_servers || row->perms.manage_users ||
               row->perms.read_users || row->perms.manage_streams || row->perms.read_streams ||
               row->perms.manage_topics || row->perms.read_topics || row->perms.poll_messages ||
               row->perms.send_messages || row->perms.streams_count > 0;
    sl_span_t raw = has ? tm_perms(&perms, &row->perms) : NONE;
    assert_int_equal(tm_code(&t, SL_OP_CREATE_USER, 0, tm_body_user(&t, "actor", 1, raw)), 0);
    uint32_t actor =
        sl_meta_user_find(t.m, &(sl_ident_t){.kind = 2, .name = sl_span_str("actor")})->id;
    sl_u128_t client = tm_client(actor);
    tm_register(&t, client, actor);
    assert_int_equal(strlen(row->allowed), P_COUNT);
    for (int p = 0; p < P_COUNT; p++) {
        uint8_t op;
        sl_span_t body = probe_body(&t, (enum probe)p, &op);
        sl_span_t reply =
            tm_apply_full(&t, op, client, (uint64_t)p + 1, (sl_u128_t){0, 0}, actor, body);
        uint32_t code = tm_result(reply, NULL);
        bool allowed = code != SL_ERR_UNAUTHORIZED;
        if (allowed != (row->allowed[p] == '1'))
            fail_msg("%s: probe %d answered %u", row->name, p, code);
        fixture(&t);
    }
    sl_buf_free(&perms);
    tm_free(&t);
}

static void test_permission_matrix(void **state)
{
    (void)state;
    sl_stream_perms_t s0_manage = {.stream_id = 0, .manage_stream = true};
    sl_stream_perms_t s0_topics = {.stream_id = 0, .manage_topics = true};
    sl_topic_perms_t t0_manage = {.topic_id = 0, .manage_topic = true};
    sl_topic_perms_t t0_read = {.topic_id = 0, .read_topic = true};
    sl_stream_perms_t s0_t0_manage = {.stream_id = 0, .topics_count = 1, .topics = &t0_manage};
    sl_stream_perms_t s0_t0_read = {.stream_id = 0, .topics_count = 1, .topics = &t0_read};
    sl_stream_perms_t s1_read = {.stream_id = 1, .read_stream = true};
    /* Probe order: create_stream, update/purge/delete s0, update s1,
     * create topic s0/s1, update/purge/delete t0, update t1, create/delete
     * partitions, truncate, create/delete/join/leave group on t0, create
     * group on t1, create/update/delete user, update permissions. */
    const matrix_row_t rows[] = {
        {"none", {0}, "00000000000000000000000"},
        {"global manage_streams", {.manage_streams = true}, "11111111111111111110000"},
        {"global manage_topics", {.manage_topics = true}, "00000111111111111110000"},
        {"global read_topics", {.read_topics = true}, "00000000000000111110000"},
        {"global read_streams", {.read_streams = true}, "00000000000000111110000"},
        {"global poll+send",
         {.poll_messages = true, .send_messages = true},
         "00000000000000000000000"},
        {"global manage_users", {.manage_users = true}, "00000000000000000001111"},
        {"global read_users",
         {.read_users = true, .manage_servers = true},
         "00000000000000000000000"},
        {"s0 manage_stream",
         {.streams_count = 1, .streams = &s0_manage},
         "01110101111111111110000"},
        {"s0 manage_topics",
         {.streams_count = 1, .streams = &s0_topics},
         "00000101111111111110000"},
        {"s1 read_stream", {.streams_count = 1, .streams = &s1_read}, "00000000000000000000000"},
        {"s0/t0 manage_topic",
         {.streams_count = 1, .streams = &s0_t0_manage},
         "00000001110111111100000"},
        {"s0/t0 read_topic",
         {.streams_count = 1, .streams = &s0_t0_read},
         "00000000000000111100000"},
    };
    for (size_t i = 0; i < SL_ARRAY_LEN(rows); i++)
        run_matrix_row(&rows[i]);
}

/* Root (user 0) passes every gate without stored permissions being read,
 * and a deleted acting user passes none. */
static void test_root_and_missing_actor(void **state)
{
    (void)state;
    tm_t t;
    tm_init(&t);
    assert_true(sl_meta_allow(t.m, 0, SL_PERM_MANAGE_TOPIC, 5, 5));
    assert_false(sl_meta_allow(t.m, 42, SL_PERM_GET_STREAMS, 0, 0));
    assert_null(sl_meta_user_permissions(t.m, 42));
    assert_int_equal(create_stream(&t, 42, "x"), SL_ERR_UNAUTHORIZED);
    assert_int_equal(create_stream(&t, 0, "x"), 0);
    /* Not found comes before the permission check for scoped rules. */
    assert_int_equal(tm_code(&t, SL_OP_DELETE_STREAM, 42, tm_body_stream_ref(&t, N(9))),
                     SL_ERR_STREAM_ID_NOT_FOUND);
    assert_int_equal(tm_code(&t, SL_OP_DELETE_STREAM, 42, tm_body_stream_ref(&t, N(0))),
                     SL_ERR_UNAUTHORIZED);
    tm_free(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_create_stream),
        cmocka_unit_test(test_stream_ids_lowest_free),
        cmocka_unit_test(test_too_many_streams),
        cmocka_unit_test(test_update_stream),
        cmocka_unit_test(test_delete_and_purge_stream),
        cmocka_unit_test(test_create_topic_golden),
        cmocka_unit_test(test_create_topic_errors),
        cmocka_unit_test(test_too_many_topics),
        cmocka_unit_test(test_update_topic),
        cmocka_unit_test(test_delete_and_purge_topic),
        cmocka_unit_test(test_purge_generation),
        cmocka_unit_test(test_create_partitions),
        cmocka_unit_test(test_partition_id_space_exhausted),
        cmocka_unit_test(test_delete_partitions),
        cmocka_unit_test(test_truncate_partition),
        cmocka_unit_test(test_permission_matrix),
        cmocka_unit_test(test_root_and_missing_actor),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
