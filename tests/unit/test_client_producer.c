/* Module tests of the producer (src/client/producer.c) over a socketpair:
 * the test plays the server, so what is checked is how messages become
 * SendMessages requests (partitioning, batch cuts at the frame limit),
 * option and message validation, reports, and the background queue's
 * backpressure. The real server's side is tests/integration. */
#include "client/producer.c"

#include "test_client_fixtures.h"

#include <time.h>

#include "wire/command.h"

static sl_buf_t send_ok(void)
{
    return tf_reply(SL_OP_SEND_MESSAGES, 0, "\0\0\0\0", 4); /* no confirmation */
}

/* A logged-in client whose next reply is GetTopic (2 partitions). */
static tf_conn_t open_with_topic(const sl_client_options_t *o)
{
    tf_conn_t t = tf_open(o);
    tf_login(&t);
    tf_queue(&t, tf_reply_hex(SL_OP_NON_REPLICATED, HEX_GET_TOPIC));
    return t;
}

static void take_get_topic(tf_conn_t *t)
{
    tf_request_t q = tf_take(t);
    assert_int_equal(q.header.code, SL_CMD_GET_TOPIC);
    tf_request_free(&q);
}

/* What a SendMessages request said (copied out of its freed body). */
typedef struct sent {
    uint8_t kind; /* partitioning */
    uint32_t partition_id;
    uint32_t messages_count;
    char stream[256]; /* the stream's name, "" for a numeric id */
} sent_t;

/* The next request must be a SendMessages. */
static sent_t take_send(tf_conn_t *t, size_t *frame_len)
{
    tf_request_t q = tf_take(t);
    assert_int_equal(q.header.operation, SL_OP_SEND_MESSAGES);
    sl_send_messages_request_t req;
    assert_int_equal(sl_send_messages_metadata_decode(tf_body(&q), &req), 0);
    sent_t out = {.kind = req.partitioning.kind,
                  .partition_id = req.partitioning.partition_id,
                  .messages_count = req.messages_count};
    if (req.stream_id.kind == SL_IDENT_STRING)
        memcpy(out.stream, req.stream_id.name.ptr, req.stream_id.name.len);
    if (frame_len != NULL)
        *frame_len = SL_HEADER_SIZE + q.body_len;
    tf_request_free(&q);
    return out;
}

typedef struct reports {
    int count;
    int errors;
    int last_error;
    uint32_t messages;
} reports_t;

static void on_batch(void *ctx, const sl_producer_report_t *r)
{
    reports_t *s = ctx;
    s->count++;
    s->messages += r->count;
    if (r->error != 0) {
        s->errors++;
        s->last_error = r->error;
    }
}

static void test_options_are_checked(void **state)
{
    (void)state;
    tf_conn_t t = tf_open(NULL);
    tf_login(&t);
    sl_producer_t *p = (sl_producer_t *)1;
    sl_producer_options_t none = {0};
    assert_int_equal(sl_producer_open(t.client, &none, &p), -SL_ERR_INVALID_COMMAND);
    assert_null(p);
    sl_producer_options_t custom = {
        .stream = sl_id_num(0), .topic = sl_id_num(0), .partitioning = SL_PRODUCER_CUSTOM};
    assert_int_equal(sl_producer_open(t.client, &custom, &p), -SL_ERR_INVALID_COMMAND);
    sl_producer_options_t unknown = {
        .stream = sl_id_num(0), .topic = sl_id_num(0), .partitioning = 9};
    assert_int_equal(sl_producer_open(t.client, &unknown, &p), -SL_ERR_INVALID_COMMAND);
    assert_true(tf_nothing_sent(&t));
    /* A topic the server does not know (an empty GetTopic reply). */
    tf_queue(&t, tf_reply(SL_OP_NON_REPLICATED, 0, NULL, 0));
    sl_producer_options_t o = {.stream = sl_id_num(0), .topic = sl_id_num(7)};
    assert_int_equal(sl_producer_open(t.client, &o, &p), -SL_ERR_TOPIC_ID_NOT_FOUND);
    take_get_topic(&t);
    tf_close(&t);
}

static void test_key_and_custom_partitioning(void **state)
{
    (void)state;
    tf_conn_t t = open_with_topic(NULL);
    sl_producer_options_t o = {.stream = sl_id_name("orders"),
                               .topic = sl_id_name("events"),
                               .partitioning = SL_PRODUCER_KEY,
                               .batch_count = 1};
    sl_producer_t *p;
    assert_int_equal(sl_producer_open(t.client, &o, &p), 0);
    take_get_topic(&t);
    static const char *keys[] = {"a", "b", "c", "customer-42", "customer-43", "zz"};
    for (size_t i = 0; i < SL_ARRAY_LEN(keys); i++) {
        tf_queue(&t, send_ok());
        sl_producer_message_t m = {
            .payload = "x", .payload_len = 1, .key = keys[i], .key_len = strlen(keys[i])};
        assert_int_equal(sl_producer_send(p, &m), 0);
        sent_t req = take_send(&t, NULL);
        /* Hashed here exactly as the server hashes a MessagesKey. */
        assert_int_equal(req.kind, SL_SEND_PARTITION_ID);
        assert_int_equal(req.partition_id, sl_partitioning_key_index(sl_span_str(keys[i]), 2));
        assert_string_equal(req.stream, "orders");
        assert_int_equal(req.messages_count, 1);
    }
    char long_key[256];
    memset(long_key, 'k', sizeof(long_key));
    sl_producer_message_t m = {.payload = "x", .payload_len = 1, .key = long_key, .key_len = 256};
    assert_int_equal(sl_producer_send(p, &m), -SL_ERR_INVALID_KEY_VALUE_LENGTH);
    assert_int_equal(sl_producer_close(p), 0);
    assert_true(tf_nothing_sent(&t));
    tf_close(&t);
}

static uint32_t first_digit(void *ctx, const void *key, size_t key_len, const void *payload,
                            size_t payload_len, uint32_t partitions_count)
{
    (void)key;
    (void)key_len;
    (void)payload_len;
    *(uint32_t *)ctx = partitions_count;
    return (uint32_t)(((const char *)payload)[0] - '0');
}

static void test_custom_partitioner(void **state)
{
    (void)state;
    tf_conn_t t = open_with_topic(NULL);
    uint32_t seen_count = 0;
    sl_producer_options_t o = {.stream = sl_id_num(0),
                               .topic = sl_id_num(0),
                               .partitioning = SL_PRODUCER_CUSTOM,
                               .partitioner = first_digit,
                               .partitioner_ctx = &seen_count};
    sl_producer_t *p;
    assert_int_equal(sl_producer_open(t.client, &o, &p), 0);
    take_get_topic(&t);
    assert_int_equal(sl_producer_send_payload(p, "5", 1), -SL_ERR_PARTITION_NOT_FOUND);
    assert_int_equal(seen_count, 2);
    assert_int_equal(sl_producer_send_payload(p, "1a", 2), 0);
    assert_int_equal(sl_producer_send_payload(p, "0b", 2), 0);
    assert_int_equal(sl_producer_send_payload(p, "1c", 2), 0);
    /* One batch per partition at the flush, in partition order. */
    tf_queue(&t, send_ok());
    tf_queue(&t, send_ok());
    assert_int_equal(sl_producer_flush(p), 0);
    sent_t a = take_send(&t, NULL);
    sent_t b = take_send(&t, NULL);
    assert_int_equal(a.partition_id, 0);
    assert_int_equal(a.messages_count, 1);
    assert_int_equal(b.partition_id, 1);
    assert_int_equal(b.messages_count, 2);
    assert_int_equal(sl_producer_close(p), 0);
    tf_close(&t);
}

static void test_batches_are_cut_at_the_frame_limit(void **state)
{
    (void)state;
    sl_client_options_t co = {.frame_max = 4096};
    tf_conn_t t = open_with_topic(&co);
    reports_t reports = {0};
    sl_producer_options_t o = {.stream = sl_id_num(0),
                               .topic = sl_id_num(0),
                               .partitioning = SL_PRODUCER_PARTITION,
                               .partition_id = 1,
                               .batch_done_ctx = &reports,
                               .batch_done = on_batch};
    sl_producer_t *p;
    assert_int_equal(sl_producer_open(t.client, &o, &p), 0);
    take_get_topic(&t);
    char payload[2100];
    memset(payload, 'p', sizeof(payload));
    /* A message that could never fit one request is refused at once. */
    assert_int_equal(sl_producer_send_payload(p, payload, sizeof(payload)),
                     -SL_ERR_COMMAND_LENGTH_ERROR);
    for (int i = 0; i < 7; i++)
        assert_int_equal(sl_producer_send_payload(p, payload, 900), 0);
    for (int i = 0; i < 7; i++)
        tf_queue(&t, send_ok());
    assert_int_equal(sl_producer_flush(p), 0);
    uint32_t total = 0;
    int requests = 0;
    while (total < 7) {
        size_t frame_len;
        sent_t req = take_send(&t, &frame_len);
        assert_true(frame_len <= 4096);
        assert_int_equal(req.kind, SL_SEND_PARTITION_ID);
        assert_int_equal(req.partition_id, 1);
        total += req.messages_count;
        requests++;
    }
    assert_int_equal(total, 7);
    assert_true(requests >= 3);
    assert_int_equal(reports.count, requests);
    assert_int_equal(reports.errors, 0);
    assert_int_equal(sl_producer_close(p), 0);
    tf_close(&t);
}

static void test_failed_batches_are_reported(void **state)
{
    (void)state;
    tf_conn_t t = open_with_topic(NULL);
    reports_t reports = {0};
    sl_producer_options_t o = {.stream = sl_id_num(0),
                               .topic = sl_id_num(0),
                               .batch_count = 2,
                               .batch_done_ctx = &reports,
                               .batch_done = on_batch};
    sl_producer_t *p;
    assert_int_equal(sl_producer_open(t.client, &o, &p), 0);
    take_get_topic(&t);
    tf_queue(&t, tf_reply(SL_OP_SEND_MESSAGES, SL_ERR_RESOURCE_NOT_FOUND, NULL, 0));
    assert_int_equal(sl_producer_send_payload(p, "a", 1), 0);
    /* The second message completes the batch, which is sent and refused. */
    assert_int_equal(sl_producer_send_payload(p, "b", 1), -SL_ERR_RESOURCE_NOT_FOUND);
    sent_t req = take_send(&t, NULL);
    assert_int_equal(req.messages_count, 2);
    assert_int_equal(req.kind, SL_SEND_BALANCED);
    assert_int_equal(reports.errors, 1);
    assert_int_equal(reports.last_error, -SL_ERR_RESOURCE_NOT_FOUND);
    sl_producer_stats_t stats;
    sl_producer_stats(p, &stats);
    assert_int_equal(stats.failed, 2);
    assert_int_equal(stats.pending, 0);
    /* The flush reports the error of the batches since the last flush. */
    assert_int_equal(sl_producer_flush(p), -SL_ERR_RESOURCE_NOT_FOUND);
    assert_int_equal(sl_producer_flush(p), 0);
    assert_int_equal(sl_producer_close(p), 0);
    tf_close(&t);
}

/* Reports in the order they came (pipelined: errors must keep their batch). */
typedef struct ordered {
    int n;
    int error[8];
    uint32_t count[8];
} ordered_t;

static void on_batch_ordered(void *ctx, const sl_producer_report_t *r)
{
    ordered_t *o = ctx;
    assert_true(o->n < 8);
    o->error[o->n] = r->error;
    o->count[o->n] = r->count;
    o->n++;
}

/* A SendMessages reply echoing request number n (the pipe checks it). */
static sl_buf_t send_reply_to(uint64_t request, uint32_t status)
{
    sl_buf_t b = status ? tf_reply(SL_OP_SEND_MESSAGES, status, NULL, 0) : send_ok();
    sl_store_u64(b.data + SL_REP_OFF_REQUEST, request);
    return b;
}

/* Pipelined foreground: the second batch is built while the first is on
 * the wire; the first one's refusal is returned by the call that collects
 * it and reported for it, the second is written once that reply is read and
 * reported after it; the flush collects the last one. */
static void test_pipelined_errors_keep_their_batch(void **state)
{
    (void)state;
    tf_conn_t t = open_with_topic(NULL);
    ordered_t seen = {0};
    sl_producer_options_t o = {.stream = sl_id_num(0),
                               .topic = sl_id_num(0),
                               .batch_count = 2,
                               .batch_done_ctx = &seen,
                               .batch_done = on_batch_ordered,
                               .pipeline = true};
    sl_producer_t *p;
    assert_int_equal(sl_producer_open(t.client, &o, &p), 0);
    take_get_topic(&t);
    assert_int_equal(sl_producer_send_payload(p, "a", 1), 0);
    assert_int_equal(sl_producer_send_payload(p, "b", 1), 0); /* batch 1 written, in flight */
    assert_int_equal(seen.n, 0);
    tf_request_t first = tf_take(&t);
    uint64_t n1 = first.header.request;
    tf_request_free(&first);
    tf_queue(&t, send_reply_to(n1, SL_ERR_RESOURCE_NOT_FOUND));
    assert_int_equal(sl_producer_send_payload(p, "c", 1), 0);
    /* Batch 2 is full: built and held, then batch 1 is collected. */
    assert_int_equal(sl_producer_send_payload(p, "d", 1), -SL_ERR_RESOURCE_NOT_FOUND);
    assert_int_equal(seen.n, 1);
    assert_int_equal(seen.error[0], -SL_ERR_RESOURCE_NOT_FOUND);
    sent_t second = take_send(&t, NULL); /* written after batch 1's reply */
    assert_int_equal(second.messages_count, 2);
    tf_queue(&t, send_reply_to(n1 + 1, 0));
    assert_int_equal(sl_producer_flush(p), -SL_ERR_RESOURCE_NOT_FOUND);
    assert_int_equal(seen.n, 2);
    assert_int_equal(seen.error[1], 0);
    assert_int_equal(seen.count[1], 2);
    sl_producer_stats_t stats;
    sl_producer_stats(p, &stats);
    assert_int_equal(stats.failed, 2);
    assert_int_equal(stats.sent, 2);
    assert_int_equal(stats.pending, 0);
    assert_int_equal(sl_client_in_flight(t.client), 0);
    assert_int_equal(sl_producer_close(p), 0);
    tf_close(&t);
}

static void pause_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Background, with the producer's thread on a socketpair client: while the
 * first batch waits for its reply the queue is full, and a send gives up
 * after send_timeout_ms; once the reply comes there is room again. */
static void test_background_backpressure(void **state)
{
    (void)state;
    sl_client_options_t co = {.request_timeout_ms = 10000};
    tf_conn_t t = open_with_topic(&co);
    reports_t reports = {0};
    sl_producer_options_t o = {.stream = sl_id_num(0),
                               .topic = sl_id_num(0),
                               .linger_ms = 1,
                               .queue_bytes_max = 200,
                               .send_timeout_ms = 30,
                               .batch_done_ctx = &reports,
                               .batch_done = on_batch};
    sl_producer_t *p;
    assert_int_equal(producer_new(t.client, &o, &p), 0);
    take_get_topic(&t);
    assert_int_equal(start_thread(p), 0);
    char payload[100];
    memset(payload, 'q', sizeof(payload));
    assert_int_equal(sl_producer_send_payload(p, payload, sizeof(payload)), 0);
    pause_ms(20); /* the thread takes it and waits for the reply */
    assert_int_equal(sl_producer_send_payload(p, payload, sizeof(payload)),
                     -SL_ERR_BACKGROUND_SEND_BUFFER_FULL);
    tf_queue(&t, send_ok());
    int rc = -SL_ERR_BACKGROUND_SEND_BUFFER_FULL;
    for (int i = 0; i < 200 && rc == -SL_ERR_BACKGROUND_SEND_BUFFER_FULL; i++)
        rc = sl_producer_send_payload(p, payload, sizeof(payload));
    assert_int_equal(rc, 0);
    tf_queue(&t, send_ok());
    assert_int_equal(sl_producer_flush(p), 0);
    sl_producer_stats_t stats;
    sl_producer_stats(p, &stats);
    assert_int_equal(stats.queued, 2);
    assert_int_equal(stats.sent, 2);
    assert_int_equal(stats.batches, 2);
    assert_int_equal(sl_producer_close(p), 0);
    sent_t a = take_send(&t, NULL);
    sent_t b = take_send(&t, NULL);
    assert_int_equal(a.messages_count + b.messages_count, 2);
    assert_int_equal(reports.messages, 2);
    tf_close(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_options_are_checked),
        cmocka_unit_test(test_key_and_custom_partitioning),
        cmocka_unit_test(test_custom_partitioner),
        cmocka_unit_test(test_batches_are_cut_at_the_frame_limit),
        cmocka_unit_test(test_failed_batches_are_reported),
        cmocka_unit_test(test_pipelined_errors_keep_their_batch),
        cmocka_unit_test(test_background_backpressure),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
