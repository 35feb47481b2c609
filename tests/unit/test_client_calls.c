/* Module test of libsluice's stream, topic, partition, segment and
 * consumer-group calls over a socketpair (the test writes the server's
 * frames; no sluiced is involved): what each call puts on the wire, and how
 * the replies of commands.md 13 come back as public structs. */
#include "test_client_fixtures.h"

static const uint64_t ts = 1700000000000000ull;

/* Queues a reply whose payload a wire encoder writes (framed: with a
 * count = 0 result section first). */
#define QUEUE_ENCODED(t, op, framed, encode, value)                                                \
    do {                                                                                           \
        sl_buf_t p_;                                                                               \
        sl_buf_init(&p_, 0);                                                                       \
        assert_int_equal(encode(&p_, (value)), 0);                                                 \
        tf_queue((t), (framed) ? tf_reply_ok((op), p_.data, p_.len)                                \
                               : tf_reply((op), 0, p_.data, p_.len));                              \
        sl_buf_free(&p_);                                                                          \
    } while (0)

/* Takes the next request and checks its operation and code. */
static tf_request_t expect(tf_conn_t *t, uint8_t operation, uint32_t code)
{
    tf_request_t q = tf_take(t);
    assert_int_equal(q.header.operation, operation);
    assert_int_equal(q.header.code, operation == SL_OP_NON_REPLICATED ? code : 0);
    return q;
}

static void assert_ident_num(const sl_ident_t *id, uint32_t n)
{
    assert_int_equal(id->kind, SL_IDENT_NUMERIC);
    assert_int_equal(id->number, n);
}

static void assert_ident_name(const sl_ident_t *id, const char *name)
{
    assert_int_equal(id->kind, SL_IDENT_STRING);
    assert_span_str(id->name, name);
}

static int setup(void **state)
{
    tf_conn_t *t = malloc(sizeof(*t));
    *t = tf_open(NULL);
    tf_login(t);
    *state = t;
    return 0;
}

static int teardown(void **state)
{
    tf_conn_t *t = *state;
    tf_close(t);
    free(t);
    return 0;
}

/* --- streams ----------------------------------------------------------------------- */

static void test_get_streams_golden(void **state)
{
    tf_conn_t *t = *state;
    tf_queue(t, tf_reply_hex(SL_OP_NON_REPLICATED, HEX_GET_STREAMS));
    const sl_stream_t *items;
    uint32_t count;
    assert_int_equal(sl_client_get_streams(t->client, &items, &count), 0);
    assert_int_equal(count, 1);
    assert_int_equal(items[0].id, 0);
    assert_int_equal(items[0].created_at_us, ts);
    assert_int_equal(items[0].topics_count, 1);
    assert_string_equal(items[0].name, "orders");
    assert_null(items[0].topics);
    tf_request_t q = expect(t, SL_OP_NON_REPLICATED, 201);
    assert_int_equal(q.body_len, 0);
    tf_request_free(&q);
}

static void test_get_stream_with_topics(void **state)
{
    tf_conn_t *t = *state;
    sl_topic_header_t topic = {.id = 4,
                               .partitions_count = 3,
                               .compression_algorithm = 2,
                               .message_expiry = 10,
                               .max_topic_size = UINT64_MAX,
                               .name = sl_span_str("clicks")};
    sl_get_stream_reply_t reply = {
        .found = true,
        .stream = {.header = {.id = 7,
                              .created_at = ts,
                              .topics_count = 1,
                              .size_bytes = 99,
                              .messages_count = 3,
                              .name = sl_span_str("web")},
                   .topics = &topic},
    };
    QUEUE_ENCODED(t, SL_OP_NON_REPLICATED, false, sl_get_stream_reply_encode, &reply);
    const sl_stream_t *s;
    assert_int_equal(sl_client_get_stream(t->client, sl_id_name("web"), &s), 0);
    assert_non_null(s);
    assert_int_equal(s->id, 7);
    assert_int_equal(s->size_bytes, 99);
    assert_int_equal(s->messages_count, 3);
    assert_string_equal(s->name, "web");
    assert_non_null(s->topics);
    assert_string_equal(s->topics[0].name, "clicks");
    assert_int_equal(s->topics[0].compression, SL_TOPIC_COMPRESSION_GZIP);
    assert_int_equal(s->topics[0].message_expiry_us, 10);
    assert_null(s->topics[0].partitions);
    tf_request_t q = expect(t, SL_OP_NON_REPLICATED, 200);
    sl_get_stream_request_t req;
    assert_int_equal(sl_get_stream_request_decode(tf_body(&q), &req), 0);
    assert_ident_name(&req.stream_id, "web");
    tf_request_free(&q);
}

static void test_stream_writes(void **state)
{
    tf_conn_t *t = *state;
    sl_create_stream_reply_t created = {
        .stream.header = {.id = 2, .created_at = ts, .name = sl_span_str("orders")}};
    QUEUE_ENCODED(t, SL_OP_CREATE_STREAM, true, sl_create_stream_reply_encode, &created);
    const sl_stream_t *s;
    assert_int_equal(sl_client_create_stream(t->client, "orders", &s), 0);
    assert_int_equal(s->id, 2);
    assert_string_equal(s->name, "orders");
    tf_request_t q = expect(t, SL_OP_CREATE_STREAM, 0);
    sl_create_stream_request_t create;
    assert_int_equal(sl_create_stream_request_decode(tf_body(&q), &create), 0);
    assert_span_str(create.name, "orders");
    assert_int_equal(create.options.len, 0);
    tf_request_free(&q);

    tf_queue(t, tf_reply_ok(SL_OP_UPDATE_STREAM, NULL, 0));
    assert_int_equal(sl_client_update_stream(t->client, sl_id_num(2), "sales"), 0);
    q = expect(t, SL_OP_UPDATE_STREAM, 0);
    sl_update_stream_request_t update;
    assert_int_equal(sl_update_stream_request_decode(tf_body(&q), &update), 0);
    assert_ident_num(&update.stream_id, 2);
    assert_span_str(update.name, "sales");
    tf_request_free(&q);

    tf_queue(t, tf_reply_ok(SL_OP_PURGE_STREAM, NULL, 0));
    assert_int_equal(sl_client_purge_stream(t->client, sl_id_num(2)), 0);
    q = expect(t, SL_OP_PURGE_STREAM, 0);
    tf_request_free(&q);
    tf_queue(t, tf_reply_ok(SL_OP_DELETE_STREAM, NULL, 0));
    assert_int_equal(sl_client_delete_stream(t->client, sl_id_name("sales")), 0);
    q = expect(t, SL_OP_DELETE_STREAM, 0);
    sl_delete_stream_request_t del;
    assert_int_equal(sl_delete_stream_request_decode(tf_body(&q), &del), 0);
    assert_ident_name(&del.stream_id, "sales");
    tf_request_free(&q);
    /* A success payload where none belongs is a format error. */
    tf_queue(t, tf_reply_ok(SL_OP_DELETE_STREAM, "x", 1));
    assert_int_equal(sl_client_delete_stream(t->client, sl_id_num(1)), -SL_ERR_INVALID_FORMAT);
    q = expect(t, SL_OP_DELETE_STREAM, 0);
    tf_request_free(&q);
}

/* --- topics ------------------------------------------------------------------------ */

static void assert_events_topic(const sl_topic_t *topic, uint32_t segments)
{
    assert_int_equal(topic->id, 0);
    assert_int_equal(topic->created_at_us, ts);
    assert_string_equal(topic->name, "events");
    assert_int_equal(topic->partitions_count, 2);
    assert_true(topic->message_expiry_us == UINT64_MAX);
    assert_true(topic->max_topic_size == UINT64_MAX);
    assert_int_equal(topic->compression, SL_TOPIC_COMPRESSION_NONE);
    /* segment_size was chosen explicitly; the rest are the derived defaults */
    assert_int_equal(topic->settings.set, SL_TOPIC_OPT_SEGMENT_SIZE);
    assert_int_equal(topic->settings.segment_size, 128u << 20);
    assert_int_equal(topic->settings.messages_required_to_save, 1024);
    assert_int_equal(topic->settings.size_of_messages_required_to_save, 1u << 20);
    assert_false(topic->settings.enforce_fsync);
    assert_int_equal(topic->options_count, 1);
    assert_string_equal(topic->options[0].key, "segment_size");
    assert_int_equal(topic->options[0].kind, SL_KIND_UINT64);
    assert_int_equal(topic->options[0].value_len, 8);
    assert_int_equal(sl_load_u64(topic->options[0].value), 128u << 20);
    assert_int_equal(topic->derived_options_count, 7);
    assert_string_equal(topic->derived_options[0].key, "compression_algorithm");
    assert_string_equal((const char *)topic->derived_options[0].value, "none");
    assert_non_null(topic->partitions);
    for (uint32_t i = 0; i < 2; i++) {
        assert_int_equal(topic->partitions[i].id, i);
        assert_int_equal(topic->partitions[i].created_at_us, ts);
        assert_int_equal(topic->partitions[i].segments_count, segments);
        assert_int_equal(topic->partitions[i].current_offset, 0);
    }
}

static void test_create_topic_reply_64(void **state)
{
    tf_conn_t *t = *state;
    size_t len;
    uint8_t *details = tu_hex(HEX_GET_TOPIC, &len);
    details[PARTITION_SEGMENTS_OFF(0)] = 0;
    details[PARTITION_SEGMENTS_OFF(1)] = 0;
    tf_queue(t, tf_reply_ok(SL_OP_CREATE_TOPIC_WITH_ASSIGNMENTS, details, len));
    free(details);
    sl_topic_options_t options = {.set = SL_TOPIC_OPT_SEGMENT_SIZE, .segment_size = 128u << 20};
    const sl_topic_t *topic;
    assert_int_equal(sl_client_create_topic(t->client, sl_id_num(1), "events", 2, &options, &topic),
                     0);
    assert_events_topic(topic, 0);

    tf_request_t q = expect(t, SL_OP_CREATE_TOPIC, 0);
    sl_create_topic_request_t req;
    assert_int_equal(sl_create_topic_request_decode(tf_body(&q), &req), 0);
    assert_ident_num(&req.stream_id, 1);
    assert_int_equal(req.partitions_count, 2);
    assert_span_str(req.name, "events");
    assert_int_equal(req.config.explicit_keys, SL_TOPIC_OPT_SEGMENT_SIZE);
    assert_int_equal(req.config.segment_size, 128u << 20);
    tf_request_free(&q);
}

static void test_get_topic_and_topics(void **state)
{
    tf_conn_t *t = *state;
    tf_queue(t, tf_reply_hex(SL_OP_NON_REPLICATED, HEX_GET_TOPIC));
    const sl_topic_t *topic;
    assert_int_equal(sl_client_get_topic(t->client, sl_id_num(1), sl_id_name("events"), &topic), 0);
    assert_events_topic(topic, 1);
    tf_request_t q = expect(t, SL_OP_NON_REPLICATED, 300);
    sl_get_topic_request_t req;
    assert_int_equal(sl_get_topic_request_decode(tf_body(&q), &req), 0);
    assert_ident_num(&req.stream_id, 1);
    assert_ident_name(&req.topic_id, "events");
    tf_request_free(&q);

    /* GetTopics: [count] then bare TopicHeaders (no partitions). */
    size_t len;
    uint8_t *details = tu_hex(HEX_GET_TOPIC, &len);
    sl_buf_t body;
    sl_buf_init(&body, 0);
    sl_put_u32(&body, 1);
    sl_put_bytes(&body, details, GET_TOPIC_HEADER_LEN);
    tf_queue(t, tf_reply(SL_OP_NON_REPLICATED, 0, body.data, body.len));
    sl_buf_free(&body);
    free(details);
    const sl_topic_t *items;
    uint32_t count;
    assert_int_equal(sl_client_get_topics(t->client, sl_id_num(1), &items, &count), 0);
    assert_int_equal(count, 1);
    assert_string_equal(items[0].name, "events");
    assert_int_equal(items[0].partitions_count, 2);
    assert_null(items[0].partitions);
    q = expect(t, SL_OP_NON_REPLICATED, 301);
    tf_request_free(&q);
}

static void test_topic_writes(void **state)
{
    tf_conn_t *t = *state;
    sl_topic_options_t patch = {.set = SL_TOPIC_OPT_MESSAGE_EXPIRY | SL_TOPIC_OPT_COMPRESSION,
                                .message_expiry_us = 60000000,
                                .compression = SL_TOPIC_COMPRESSION_GZIP};
    tf_queue(t, tf_reply_ok(SL_OP_UPDATE_TOPIC, NULL, 0));
    assert_int_equal(
        sl_client_update_topic(t->client, sl_id_num(1), sl_id_num(0), "renamed", &patch), 0);
    tf_request_t q = expect(t, SL_OP_UPDATE_TOPIC, 0);
    sl_update_topic_request_t update;
    assert_int_equal(sl_update_topic_request_decode(tf_body(&q), &update), 0);
    assert_span_str(update.name, "renamed");
    assert_int_equal(update.patch.keys, SL_TOPIC_OPT_MESSAGE_EXPIRY | SL_TOPIC_OPT_COMPRESSION);
    assert_int_equal(update.patch.message_expiry, 60000000);
    assert_int_equal(update.patch.compression_algorithm, SL_COMPRESSION_GZIP);
    tf_request_free(&q);

    struct {
        uint8_t request_op, reply_op;
        int (*call)(sl_client_t *, sl_id_t, sl_id_t);
    } refs[] = {
        {SL_OP_DELETE_TOPIC, SL_OP_DELETE_TOPIC, sl_client_delete_topic},
        {SL_OP_PURGE_TOPIC, SL_OP_PURGE_TOPIC, sl_client_purge_topic},
    };
    for (size_t i = 0; i < SL_ARRAY_LEN(refs); i++) {
        tf_queue(t, tf_reply_ok(refs[i].reply_op, NULL, 0));
        assert_int_equal(refs[i].call(t->client, sl_id_name("s"), sl_id_num(3)), 0);
        q = expect(t, refs[i].request_op, 0);
        sl_topic_ref_t ref;
        assert_int_equal(sl_delete_topic_request_decode(tf_body(&q), &ref), 0);
        assert_ident_name(&ref.stream_id, "s");
        assert_ident_num(&ref.topic_id, 3);
        tf_request_free(&q);
    }
}

static void test_partitions_and_segments(void **state)
{
    tf_conn_t *t = *state;
    /* CreatePartitions commits as 65. */
    tf_queue(t, tf_reply_ok(SL_OP_CREATE_PARTITIONS_WITH_ASSIGNMENTS, NULL, 0));
    assert_int_equal(sl_client_create_partitions(t->client, sl_id_num(1), sl_id_num(2), 5), 0);
    tf_request_t q = expect(t, SL_OP_CREATE_PARTITIONS, 0);
    sl_create_partitions_request_t change;
    assert_int_equal(sl_create_partitions_request_decode(tf_body(&q), &change), 0);
    assert_int_equal(change.partitions_count, 5);
    tf_request_free(&q);

    tf_queue(t, tf_reply_result(SL_OP_DELETE_PARTITIONS, SL_ERR_INVALID_PARTITIONS_COUNT));
    assert_int_equal(sl_client_delete_partitions(t->client, sl_id_num(1), sl_id_num(2), 9),
                     -SL_ERR_INVALID_PARTITIONS_COUNT);
    q = expect(t, SL_OP_DELETE_PARTITIONS, 0);
    tf_request_free(&q);

    /* DeleteSegments commits as 68; a rejection rides that operation too. */
    tf_queue(t, tf_reply_result(SL_OP_TRUNCATE_PARTITION, SL_ERR_PARTITION_NOT_FOUND));
    assert_int_equal(sl_client_delete_segments(t->client, sl_id_num(1), sl_id_num(2), 7, 3),
                     -SL_ERR_PARTITION_NOT_FOUND);
    q = expect(t, SL_OP_DELETE_SEGMENTS, 0);
    sl_delete_segments_request_t segs;
    assert_int_equal(sl_delete_segments_request_decode(tf_body(&q), &segs), 0);
    assert_int_equal(segs.partition_id, 7);
    assert_int_equal(segs.segments_count, 3);
    tf_request_free(&q);
}

/* --- consumer groups ------------------------------------------------------------- */

static void test_consumer_groups(void **state)
{
    tf_conn_t *t = *state;
    uint32_t owned[] = {1, 3};
    sl_group_member_t member = {.id = 9, .partitions_count = 2, .partitions = owned};
    sl_get_consumer_group_reply_t reply = {
        .found = true,
        .group = {.header = {.id = 1,
                             .partitions_count = 4,
                             .members_count = 1,
                             .name = sl_span_str("workers")},
                  .members = &member},
    };
    QUEUE_ENCODED(t, SL_OP_NON_REPLICATED, false, sl_get_consumer_group_reply_encode, &reply);
    const sl_consumer_group_t *g;
    assert_int_equal(sl_client_get_consumer_group(t->client, sl_id_num(0), sl_id_num(0),
                                                  sl_id_name("workers"), &g),
                     0);
    assert_string_equal(g->name, "workers");
    assert_int_equal(g->members_count, 1);
    assert_int_equal(g->members[0].id, 9);
    assert_int_equal(g->members[0].partitions_count, 2);
    assert_int_equal(g->members[0].partitions[1], 3);
    tf_request_t q = expect(t, SL_OP_NON_REPLICATED, 600);
    sl_group_target_t target;
    assert_int_equal(sl_get_consumer_group_request_decode(tf_body(&q), &target), 0);
    assert_ident_name(&target.group, "workers");
    tf_request_free(&q);

    sl_group_header_t headers[2] = {{.id = 0, .name = sl_span_str("a")},
                                    {.id = 1, .members_count = 2, .name = sl_span_str("b")}};
    sl_get_consumer_groups_reply_t list = {.count = 2, .items = headers};
    QUEUE_ENCODED(t, SL_OP_NON_REPLICATED, false, sl_get_consumer_groups_reply_encode, &list);
    const sl_consumer_group_t *items;
    uint32_t count;
    assert_int_equal(
        sl_client_get_consumer_groups(t->client, sl_id_num(0), sl_id_num(0), &items, &count), 0);
    assert_int_equal(count, 2);
    assert_string_equal(items[1].name, "b");
    assert_int_equal(items[1].members_count, 2);
    assert_null(items[1].members);
    q = expect(t, SL_OP_NON_REPLICATED, 601);
    tf_request_free(&q);

    /* commands.md 13.4 */
    tf_queue(t, tf_reply_hex(SL_OP_CREATE_CONSUMER_GROUP, HEX_CREATE_GROUP_BODY));
    assert_int_equal(
        sl_client_create_consumer_group(t->client, sl_id_num(0), sl_id_num(0), "workers", &g), 0);
    assert_int_equal(g->id, 0);
    assert_int_equal(g->partitions_count, 2);
    assert_int_equal(g->members_count, 0);
    assert_string_equal(g->name, "workers");
    q = expect(t, SL_OP_CREATE_CONSUMER_GROUP, 0);
    tf_request_free(&q);
}

static void test_group_membership(void **state)
{
    tf_conn_t *t = *state;
    struct {
        uint8_t op;
        int (*call)(sl_client_t *, sl_id_t, sl_id_t, sl_id_t);
    } writes[] = {
        {SL_OP_JOIN_CONSUMER_GROUP, sl_client_join_consumer_group},
        {SL_OP_LEAVE_CONSUMER_GROUP, sl_client_leave_consumer_group},
        {SL_OP_DELETE_CONSUMER_GROUP, sl_client_delete_consumer_group},
    };
    for (size_t i = 0; i < SL_ARRAY_LEN(writes); i++) {
        tf_queue(t, tf_reply_ok(writes[i].op, NULL, 0));
        assert_int_equal(writes[i].call(t->client, sl_id_num(1), sl_id_num(2), sl_id_num(3)), 0);
        tf_request_t q = expect(t, writes[i].op, 0);
        sl_group_target_t target;
        assert_int_equal(sl_join_consumer_group_request_decode(tf_body(&q), &target), 0);
        assert_ident_num(&target.stream, 1);
        assert_ident_num(&target.topic, 2);
        assert_ident_num(&target.group, 3);
        tf_request_free(&q);
    }
    tf_queue(t, tf_reply_result(SL_OP_LEAVE_CONSUMER_GROUP, 5006));
    assert_int_equal(
        sl_client_leave_consumer_group(t->client, sl_id_num(1), sl_id_num(2), sl_id_num(3)),
        -SL_ERR_CONSUMER_GROUP_MEMBER_NOT_FOUND);
    tf_request_t q = expect(t, SL_OP_LEAVE_CONSUMER_GROUP, 0);
    tf_request_free(&q);

    /* commands.md 13.6 */
    tf_queue(t, tf_reply_hex(SL_OP_NON_REPLICATED, HEX_SYNC));
    const sl_assignment_t *a;
    assert_int_equal(
        sl_client_sync_consumer_group(t->client, sl_id_num(1), sl_id_num(2), sl_id_num(3), &a), 0);
    assert_int_equal(a->generation, 3);
    assert_int_equal(a->partitions_count, 2);
    assert_int_equal(a->partitions[0], 0);
    assert_int_equal(a->partitions[1], 2);
    q = expect(t, SL_OP_NON_REPLICATED, 606);
    tf_request_free(&q);
}

/* --- not found, bad arguments ----------------------------------------------------- */

static void test_not_found_reads_give_null(void **state)
{
    tf_conn_t *t = *state;
    sl_id_t n = sl_id_num(0);
    /* Each read gets an empty body and must answer 0 with *out NULL. */
    const sl_stream_t *stream = (const sl_stream_t *)&stream;
    const sl_topic_t *topic = (const sl_topic_t *)&topic;
    const sl_user_t *user = (const sl_user_t *)&user;
    const sl_client_info_t *client = (const sl_client_info_t *)&client;
    const sl_consumer_group_t *group = (const sl_consumer_group_t *)&group;
    const sl_assignment_t *assignment = (const sl_assignment_t *)&assignment;
    for (int i = 0; i < 6; i++)
        tf_queue(t, tf_reply(SL_OP_NON_REPLICATED, 0, NULL, 0));
    assert_int_equal(sl_client_get_stream(t->client, n, &stream), 0);
    assert_int_equal(sl_client_get_topic(t->client, n, n, &topic), 0);
    assert_int_equal(sl_client_get_user(t->client, n, &user), 0);
    assert_int_equal(sl_client_get_client(t->client, 3, &client), 0);
    assert_int_equal(sl_client_get_consumer_group(t->client, n, n, n, &group), 0);
    assert_int_equal(sl_client_sync_consumer_group(t->client, n, n, n, &assignment), 0);
    assert_null(stream);
    assert_null(topic);
    assert_null(user);
    assert_null(client);
    assert_null(group);
    assert_null(assignment);
    uint32_t codes[] = {200, 300, 31, 21, 600, 606};
    for (int i = 0; i < 6; i++) {
        tf_request_t q = expect(t, SL_OP_NON_REPLICATED, codes[i]);
        tf_request_free(&q);
    }
    /* A missing stream under a group read is an explicit error. */
    tf_queue(t, tf_reply(SL_OP_NON_REPLICATED, SL_ERR_STREAM_ID_NOT_FOUND, NULL, 0));
    const sl_consumer_group_t *g = (const sl_consumer_group_t *)&g;
    assert_int_equal(sl_client_get_consumer_group(t->client, n, n, n, &g),
                     -SL_ERR_STREAM_ID_NOT_FOUND);
    assert_ptr_equal(g, &g); /* untouched on error */
    tf_request_t q = tf_take(t);
    tf_request_free(&q);
}

static void test_bad_arguments_send_nothing(void **state)
{
    tf_conn_t *t = *state;
    sl_id_t bad_kind = {.kind = 7};
    sl_id_t no_name = {.kind = SL_ID_NAME};
    char long_name[300];
    memset(long_name, 'n', sizeof(long_name) - 1);
    long_name[sizeof(long_name) - 1] = '\0';
    const sl_stream_t *s;
    assert_int_equal(sl_client_get_stream(t->client, sl_id_name(""), &s), -SL_ERR_INVALID_COMMAND);
    assert_int_equal(sl_client_get_stream(t->client, bad_kind, &s), -SL_ERR_INVALID_COMMAND);
    assert_int_equal(sl_client_delete_stream(t->client, no_name), -SL_ERR_INVALID_COMMAND);
    assert_int_equal(sl_client_create_stream(t->client, NULL, NULL), -SL_ERR_INVALID_COMMAND);
    assert_int_equal(sl_client_create_stream(t->client, long_name, NULL), -SL_ERR_INVALID_COMMAND);
    sl_option_t dup = {.key = "segment_size",
                       .kind = SL_KIND_UINT64,
                       .value = (const uint8_t *)"\0\0\0\1\0\0\0\0",
                       .value_len = 8};
    sl_topic_options_t options = {
        .set = SL_TOPIC_OPT_SEGMENT_SIZE, .segment_size = 1 << 24, .extra_count = 1, .extra = &dup};
    assert_int_equal(sl_client_create_topic(t->client, sl_id_num(0), "t", 1, &options, NULL),
                     -SL_ERR_INVALID_COMMAND);
    assert_true(tf_nothing_sent(t));
    sl_session_info_t info;
    sl_client_session_info(t->client, &info);
    assert_int_equal(info.request, 1); /* nothing numbered either */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_get_streams_golden, setup, teardown),
        cmocka_unit_test_setup_teardown(test_get_stream_with_topics, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stream_writes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_create_topic_reply_64, setup, teardown),
        cmocka_unit_test_setup_teardown(test_get_topic_and_topics, setup, teardown),
        cmocka_unit_test_setup_teardown(test_topic_writes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_partitions_and_segments, setup, teardown),
        cmocka_unit_test_setup_teardown(test_consumer_groups, setup, teardown),
        cmocka_unit_test_setup_teardown(test_group_membership, setup, teardown),
        cmocka_unit_test_setup_teardown(test_not_found_reads_give_null, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_arguments_send_nothing, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
