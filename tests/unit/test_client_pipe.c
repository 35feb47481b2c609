/* Module tests of pipelined requests (src/client/pipe.c) over a socketpair:
 * the test plays the server, so replies can be out of step, evictions can
 * arrive with requests behind them, and what the client writes can be
 * checked exactly. How the real sluiced answers is tests/integration
 * (test_pipeline.c). */
#include "test_client_fixtures.h"

#include <time.h>

#include "wire/command.h"

/* A SendMessages reply without confirmation, echoing request number n. */
static sl_buf_t send_reply(uint64_t request)
{
    sl_buf_t b = tf_reply(SL_OP_SEND_MESSAGES, 0, "\0\0\0\0", 4);
    sl_store_u64(b.data + SL_REP_OFF_REQUEST, request);
    return b;
}

static uint64_t submit_one(tf_conn_t *t)
{
    sl_send_message_t m = {.payload = "x", .payload_len = 1};
    uint64_t ticket = 0;
    assert_int_equal(sl_client_send_messages_submit(t->client, sl_id_num(1), sl_id_num(1),
                                                    sl_partitioning_balanced(), &m, 1, &ticket),
                     0);
    return ticket;
}

/* The request number each submit wrote, in order. */
static uint64_t take_send_number(tf_conn_t *t)
{
    tf_request_t q = tf_take(t);
    assert_int_equal(q.header.operation, SL_OP_SEND_MESSAGES);
    uint64_t n = q.header.request;
    tf_request_free(&q);
    return n;
}

/* Replies echoing the right numbers are matched in order. */
static void test_replies_in_step(void **state)
{
    (void)state;
    tf_conn_t t = tf_open(NULL);
    tf_login(&t);
    uint64_t a = submit_one(&t), b = submit_one(&t);
    assert_int_equal(b, a + 1);
    uint64_t na = take_send_number(&t);
    /* The second send is held until the first one's reply is in. */
    uint8_t byte;
    assert_int_equal(recv(t.server, &byte, 1, MSG_DONTWAIT), -1);
    tf_queue(&t, send_reply(na));
    uint64_t ticket;
    sl_send_result_t r;
    assert_int_equal(sl_client_send_collect(t.client, &ticket, &r), 0);
    assert_int_equal(ticket, a);
    assert_false(r.confirmed);
    assert_int_equal(r.messages_count, 1);
    uint64_t nb = take_send_number(&t);
    assert_int_equal(nb, na + 1);
    tf_queue(&t, send_reply(nb));
    assert_int_equal(sl_client_send_collect(t.client, &ticket, &r), 0);
    assert_int_equal(ticket, b);
    tf_close(&t);
}

/* A reply echoing another request's number means the stream is out of
 * step: the connection closes and the request behind is cut. */
static void test_reply_out_of_step(void **state)
{
    (void)state;
    tf_conn_t t = tf_open(NULL);
    tf_login(&t);
    uint64_t a = submit_one(&t), b = submit_one(&t);
    uint64_t na = take_send_number(&t);
    tf_queue(&t, send_reply(na + 1)); /* the held second's number */
    uint64_t ticket;
    sl_send_result_t r;
    assert_int_equal(sl_client_send_collect(t.client, &ticket, &r), -SL_ERR_INVALID_COMMAND);
    assert_int_equal(ticket, a);
    assert_int_equal(sl_client_send_collect(t.client, &ticket, &r), -SL_ERR_DISCONNECTED);
    assert_int_equal(ticket, b);
    assert_int_equal(sl_client_ping(t.client), -SL_ERR_NOT_CONNECTED);
    /* The held send was never written. */
    uint8_t byte;
    assert_int_equal(recv(t.server, &byte, 1, MSG_DONTWAIT), 0);
    tf_close(&t);
}

/* An eviction ends the session; the server may drop what follows, so the
 * requests behind it are cut rather than waited for. */
static void test_eviction_cuts_the_rest(void **state)
{
    (void)state;
    tf_conn_t t = tf_open(NULL);
    tf_login(&t);
    uint64_t a = submit_one(&t), b = submit_one(&t);
    (void)take_send_number(&t);
    tf_queue(&t, tf_eviction(SL_EVICT_NO_SESSION, 0, 0));
    uint64_t ticket;
    sl_send_result_t r;
    int rc = sl_client_send_collect(t.client, &ticket, &r);
    assert_int_equal(ticket, a);
    assert_true(rc < 0 && rc != -SL_ERR_DISCONNECTED);
    assert_int_equal(sl_client_send_collect(t.client, &ticket, &r), -SL_ERR_DISCONNECTED);
    assert_int_equal(ticket, b);
    sl_session_info_t info;
    sl_client_session_info(t.client, &info);
    assert_false(info.logged_in);
    assert_false(info.connected);
    tf_close(&t);
}

/* A server refusal is that request's alone: the one behind is read. */
static void test_refusal_is_its_own(void **state)
{
    (void)state;
    tf_conn_t t = tf_open(NULL);
    tf_login(&t);
    uint64_t a = submit_one(&t), b = submit_one(&t);
    uint64_t na = take_send_number(&t);
    sl_buf_t refused = tf_reply(SL_OP_SEND_MESSAGES, 2003, NULL, 0);
    sl_store_u64(refused.data + SL_REP_OFF_REQUEST, na);
    tf_queue(&t, refused);
    uint64_t ticket;
    sl_send_result_t r;
    assert_int_equal(sl_client_send_collect(t.client, &ticket, &r), -2003);
    assert_int_equal(ticket, a);
    uint64_t nb = take_send_number(&t); /* written after the refusal came */
    tf_queue(&t, send_reply(nb));
    assert_int_equal(sl_client_send_collect(t.client, &ticket, &r), 0);
    assert_int_equal(ticket, b);
    assert_int_equal(sl_client_in_flight(t.client), 0);
    tf_close(&t);
}

/* While a request is in flight: no tick ping, no lockstep call, nothing
 * written; and the tick is quiet. */
static void test_busy_client_writes_nothing_else(void **state)
{
    (void)state;
    sl_client_options_t o = {.heartbeat_interval_ms = 1};
    tf_conn_t t = tf_open(&o);
    tf_login(&t);
    uint64_t a = submit_one(&t);
    uint64_t na = take_send_number(&t);
    struct timespec ms = {0, 2000000};
    nanosleep(&ms, NULL);
    assert_int_equal(sl_client_tick(t.client), 0);
    assert_int_equal(sl_client_ping(t.client), -SL_ERR_INVALID_COMMAND);
    sl_raw_reply_t raw;
    assert_int_equal(
        sl_client_request_raw(t.client, SL_OP_NON_REPLICATED, SL_CMD_PING, NULL, 0, &raw),
        -SL_ERR_INVALID_COMMAND);
    assert_int_equal(sl_client_reconnect(t.client), -SL_ERR_INVALID_COMMAND);
    /* Nothing was written after the send. */
    uint8_t byte;
    assert_int_equal(recv(t.server, &byte, 1, MSG_DONTWAIT), -1);
    assert_true(errno == EAGAIN || errno == EWOULDBLOCK);
    tf_queue(&t, send_reply(na));
    uint64_t ticket;
    sl_send_result_t r;
    assert_int_equal(sl_client_send_collect(t.client, &ticket, &r), 0);
    assert_int_equal(ticket, a);
    tf_close(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_replies_in_step),
        cmocka_unit_test(test_reply_out_of_step),
        cmocka_unit_test(test_eviction_cuts_the_rest),
        cmocka_unit_test(test_refusal_is_its_own),
        cmocka_unit_test(test_busy_client_writes_nothing_else),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
