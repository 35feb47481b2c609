/* Module tests of the consumer (src/client/consumer.c) over a socketpair:
 * the test plays the server and checks the requests the consumer makes as
 * a group member meets the re-sync sentinel and finds itself no longer a
 * member (sync, join, sync, poll the new assignment), how positions move
 * from the Next strategy to offsets, and what an explicit commit stores. */
#include "test_client_fixtures.h"

#include <sluice/consumer.h>

#include "wire/command.h"

/* A PollMessages reply with no messages for a partition (or the sentinel). */
static sl_buf_t poll_empty(uint32_t partition_id)
{
    uint8_t body[16] = {0};
    sl_store_u32(body, partition_id);
    return tf_reply(SL_OP_NON_REPLICATED, 0, body, sizeof(body));
}

/* Vector e (one message, offset 11, "world") as a reply for partition_id. */
static sl_buf_t poll_vector_e(uint32_t partition_id)
{
    size_t len;
    uint8_t *body = tu_vector("e_poll_reply_body_sliced.hex", &len);
    sl_store_u32(body, partition_id);
    sl_buf_t b = tf_reply(SL_OP_NON_REPLICATED, 0, body, len);
    free(body);
    return b;
}

static sl_buf_t sync_reply(const char *hex)
{
    return tf_reply_hex(SL_OP_NON_REPLICATED, hex);
}

static sl_buf_t join_ok(void)
{
    return tf_reply_ok(SL_OP_JOIN_CONSUMER_GROUP, NULL, 0);
}

static void expect_op(tf_conn_t *t, uint8_t operation, uint32_t code)
{
    tf_request_t q = tf_take(t);
    assert_int_equal(q.header.operation, operation);
    if (operation == SL_OP_NON_REPLICATED)
        assert_int_equal(q.header.code, code);
    tf_request_free(&q);
}

/* The next request must be a group poll of partition with strategy kind. */
static void expect_poll(tf_conn_t *t, uint32_t partition, uint8_t kind, uint64_t value,
                        bool auto_commit)
{
    tf_request_t q = tf_take(t);
    assert_int_equal(q.header.code, SL_CMD_POLL_MESSAGES);
    sl_poll_messages_request_t req;
    assert_int_equal(sl_poll_messages_request_decode(tf_body(&q), &req), 0);
    assert_int_equal(req.consumer.kind, SL_CONSUMER_GROUP);
    assert_span_str(req.consumer.id.name, "workers");
    assert_true(req.partition.present);
    assert_int_equal(req.partition.id, partition);
    assert_int_equal(req.strategy.kind, kind);
    assert_int_equal(req.strategy.value, value);
    assert_int_equal(req.auto_commit, auto_commit);
    tf_request_free(&q);
}

static void test_group_resync_rejoin_and_commit(void **state)
{
    (void)state;
    tf_conn_t t = tf_open(NULL);
    tf_login(&t);
    tf_queue(&t, join_ok());
    tf_queue(&t, sync_reply(HEX_SYNC)); /* generation 3: partitions 0 and 2 */
    sl_consumer_options_t o = {
        .stream = sl_id_name("s"),
        .topic = sl_id_name("t"),
        .kind = SL_CONSUMER_KIND_GROUP,
        .consumer_id = sl_id_name("workers"),
        .commit = SL_CONSUMER_COMMIT_EXPLICIT,
        .resync_interval_ms = 60000, /* only the sentinel makes it sync here */
    };
    sl_message_consumer_t *cn;
    assert_int_equal(sl_consumer_open(t.client, &o, &cn), 0);
    expect_op(&t, SL_OP_JOIN_CONSUMER_GROUP, 0);
    expect_op(&t, SL_OP_NON_REPLICATED, SL_CMD_SYNC_CONSUMER_GROUP);
    const uint32_t *parts;
    uint32_t n;
    sl_consumer_partitions(cn, &parts, &n);
    assert_int_equal(n, 2);
    assert_int_equal(parts[0], 0);
    assert_int_equal(parts[1], 2);

    /* Partition 0 moved away (sentinel); the sync says "not a member"
     * (the session was replaced), so the consumer joins again, syncs, and
     * polls its new partition at once. */
    tf_queue(&t, poll_empty(SL_POLL_RESYNC_PARTITION));
    tf_queue(&t, tf_reply(SL_OP_NON_REPLICATED, 0, NULL, 0));
    tf_queue(&t, join_ok());
    tf_queue(&t, sync_reply("04 00 00 00 00 00 00 00 01 00 00 00 02 00 00 00"));
    tf_queue(&t, poll_vector_e(2));
    sl_polled_messages_t out;
    assert_int_equal(sl_consumer_poll(cn, 0, &out), 0);
    assert_false(out.resync_required);
    assert_int_equal(out.partition_id, 2);
    assert_int_equal(out.count, 1);
    assert_int_equal(out.messages[0].offset, 11);
    expect_poll(&t, 0, SL_POLL_NEXT, 0, false);
    expect_op(&t, SL_OP_NON_REPLICATED, SL_CMD_SYNC_CONSUMER_GROUP);
    expect_op(&t, SL_OP_JOIN_CONSUMER_GROUP, 0);
    expect_op(&t, SL_OP_NON_REPLICATED, SL_CMD_SYNC_CONSUMER_GROUP);
    expect_poll(&t, 2, SL_POLL_NEXT, 0, false);
    sl_consumer_partitions(cn, &parts, &n);
    assert_int_equal(n, 1);
    assert_int_equal(parts[0], 2);

    /* From now on the position is the offset after the last message. */
    tf_queue(&t, poll_empty(2));
    assert_int_equal(sl_consumer_poll(cn, 0, &out), 0);
    assert_int_equal(out.count, 0);
    expect_poll(&t, 2, SL_POLL_OFFSET, 12, false);

    /* Commit stores the last returned offset, once. */
    tf_queue(&t, tf_reply_ok(SL_OP_STORE_CONSUMER_OFFSET, NULL, 0));
    assert_int_equal(sl_consumer_commit(cn), 0);
    tf_request_t q = tf_take(&t);
    assert_int_equal(q.header.operation, SL_OP_STORE_CONSUMER_OFFSET);
    sl_store_consumer_offset_request_t store;
    assert_int_equal(sl_store_consumer_offset_request_decode(tf_body(&q), &store), 0);
    assert_int_equal(store.consumer.kind, SL_CONSUMER_GROUP);
    assert_int_equal(store.partition.id, 2);
    assert_int_equal(store.offset, 11);
    tf_request_free(&q);
    assert_int_equal(sl_consumer_commit(cn), 0);
    assert_true(tf_nothing_sent(&t));

    /* Close leaves the group. */
    tf_queue(&t, tf_reply_ok(SL_OP_LEAVE_CONSUMER_GROUP, NULL, 0));
    sl_consumer_close(cn);
    expect_op(&t, SL_OP_LEAVE_CONSUMER_GROUP, 0);
    tf_close(&t);
}

static void test_options_are_checked(void **state)
{
    (void)state;
    tf_conn_t t = tf_open(NULL);
    tf_login(&t);
    sl_message_consumer_t *cn = NULL;
    sl_consumer_options_t o = {.stream = sl_id_num(0), .topic = sl_id_num(0)};
    assert_int_equal(sl_consumer_open(t.client, &o, &cn), -SL_ERR_INVALID_COMMAND); /* no id */
    o.consumer_id = sl_id_num(1);
    o.commit = 7;
    assert_int_equal(sl_consumer_open(t.client, &o, &cn), -SL_ERR_INVALID_COMMAND);
    o.commit = 0;
    o.kind = SL_CONSUMER_KIND_GROUP;
    o.create_group = true; /* a group is created by name only */
    assert_int_equal(sl_consumer_open(t.client, &o, &cn), -SL_ERR_INVALID_COMMAND);
    assert_true(tf_nothing_sent(&t));
    assert_null(cn);

    /* A single consumer of one partition asks nothing at open, polls with
     * auto-commit by default. */
    sl_consumer_options_t one = {
        .stream = sl_id_num(0), .topic = sl_id_num(0), .consumer_id = sl_id_num(1), .partition = 3};
    assert_int_equal(sl_consumer_open(t.client, &one, &cn), 0);
    assert_true(tf_nothing_sent(&t));
    tf_queue(&t, poll_empty(3));
    sl_polled_messages_t out;
    assert_int_equal(sl_consumer_poll(cn, 0, &out), 0);
    tf_request_t q = tf_take(&t);
    sl_poll_messages_request_t req;
    assert_int_equal(sl_poll_messages_request_decode(tf_body(&q), &req), 0);
    assert_int_equal(req.consumer.kind, SL_CONSUMER_SINGLE);
    assert_int_equal(req.partition.id, 3);
    assert_true(req.auto_commit);
    assert_int_equal(req.count, 100);
    tf_request_free(&q);
    sl_consumer_close(cn);
    assert_true(tf_nothing_sent(&t));
    tf_close(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_group_resync_rejoin_and_commit),
        cmocka_unit_test(test_options_are_checked),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
