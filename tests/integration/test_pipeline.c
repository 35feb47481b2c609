/* Pipelined sends and polls against the real sluiced: batches submitted
 * back to back land in order at the offsets their replies name; a refused
 * batch in the middle is reported for that batch and the batches around it
 * still get their own outcomes; a lost connection reports every request in
 * flight; chained polls and the pipelined consumer read every message once,
 * in order; the pipelined producer (foreground and background) stores its
 * batches in order. tests/integration/CMakeLists.txt runs it through the
 * TLS and WebSocket doors too (the requests pipelined through each). */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
// clang-format off
#include <cmocka.h>
// clang-format on
#include <sluice/client.h>
#include <sluice/consumer.h>
#include <sluice/error.h>
#include <sluice/producer.h>

#include "harness.h"
#include "proxy.h"

static th_server_t srv;

enum { PAYLOAD_MAX = 64 };

static sl_client_t *connect_root(uint16_t port)
{
    sl_client_t *c = NULL;
    assert_int_equal(th_client_connect(port, &c), 0);
    assert_int_equal(sl_client_login(c, "iggy", "iggy", NULL), 0);
    return c;
}

static int start(void **state)
{
    (void)state;
    return th_start(&srv, NULL) ? 0 : -1;
}

static int stop(void **state)
{
    (void)state;
    assert_int_equal(th_stop(&srv, SIGTERM), 0);
    th_cleanup(&srv);
    return 0;
}

static void make_topic(sl_client_t *c, const char *stream, const char *topic)
{
    assert_int_equal(sl_client_create_stream(c, stream, NULL), 0);
    assert_int_equal(sl_client_create_topic(c, sl_id_name(stream), topic, 1, NULL, NULL), 0);
}

/* n messages "<first + i>" with ids left to the client. */
typedef struct batch {
    char payloads[1000][PAYLOAD_MAX];
    sl_send_message_t m[1000];
    uint32_t n;
} batch_t;

static batch_t *numbered(uint32_t first, uint32_t n)
{
    batch_t *b = calloc(1, sizeof(*b));
    assert_non_null(b);
    assert_true(n <= 1000);
    b->n = n;
    for (uint32_t i = 0; i < n; i++) {
        int len = snprintf(b->payloads[i], PAYLOAD_MAX, "%u", first + i);
        b->m[i] = (sl_send_message_t){.payload = b->payloads[i], .payload_len = (size_t)len};
    }
    return b;
}

static uint64_t submit(sl_client_t *c, const char *stream, const char *topic, const batch_t *b)
{
    uint64_t ticket = 0;
    assert_int_equal(sl_client_send_messages_submit(c, sl_id_name(stream), sl_id_name(topic),
                                                    sl_partitioning_partition(0), b->m, b->n,
                                                    &ticket),
                     0);
    assert_true(ticket > 0);
    return ticket;
}

/* Polls partition 0 from offset 0 (lockstep) and checks that it holds
 * exactly the messages "0".."total-1" in order. */
static void expect_numbered(sl_client_t *c, const char *stream, const char *topic, uint32_t total)
{
    uint64_t offset = 0;
    for (int guard = 0; guard < 10000 && offset < total; guard++) {
        sl_polled_messages_t out;
        assert_int_equal(sl_client_poll_messages(c, sl_consumer_single(sl_id_num(1)),
                                                 sl_id_name(stream), sl_id_name(topic), 0,
                                                 sl_poll_offset(offset), 500, false, &out),
                         0);
        assert_true(out.count > 0);
        for (uint32_t i = 0; i < out.count; i++) {
            char want[PAYLOAD_MAX];
            int len = snprintf(want, sizeof(want), "%u", (unsigned)(offset + i));
            assert_int_equal(out.messages[i].offset, offset + i);
            assert_int_equal(out.messages[i].payload_len, (size_t)len);
            assert_memory_equal(out.messages[i].payload, want, (size_t)len);
        }
        offset += out.count;
    }
    assert_int_equal(offset, total);
    sl_polled_messages_t out;
    assert_int_equal(sl_client_poll_messages(c, sl_consumer_single(sl_id_num(1)),
                                             sl_id_name(stream), sl_id_name(topic), 0,
                                             sl_poll_offset(total), 10, false, &out),
                     0);
    assert_int_equal(out.count, 0);
}

/* Batches pipelined back to back land in submit order; each reply names
 * the offset its batch starts at; the rules around the pipe hold. A send
 * submitted behind one on the wire is held until that one's reply is in,
 * so two sends are in flight at most. */
static void test_sends_land_in_order(void **state)
{
    (void)state;
    sl_client_t *c = connect_root(srv.port);
    make_topic(c, "po", "t");
    enum { BATCHES = 6 };
    uint32_t sizes[BATCHES] = {10, 300, 1, 57, 999, 2};
    uint64_t tickets[BATCHES];
    uint32_t first = 0;
    uint64_t offset = 0;
    sl_send_result_t r;
    for (uint32_t k = 0; k < BATCHES; k++) {
        batch_t *b = numbered(first, sizes[k]);
        tickets[k] = submit(c, "po", "t", b);
        free(b);
        first += sizes[k];
        assert_int_equal(sl_client_in_flight(c), k == 0 ? 1 : 2);
        if (k == 0)
            continue;
        if (k == 1) {
            /* A third is refused without sending, and so is a lockstep
             * call and a poll (the other kind). */
            batch_t *extra = numbered(first, 5);
            uint64_t none = 99;
            assert_int_equal(sl_client_send_messages_submit(c, sl_id_name("po"), sl_id_name("t"),
                                                            sl_partitioning_partition(0), extra->m,
                                                            extra->n, &none),
                             -SL_ERR_INVALID_COMMAND);
            assert_int_equal(none, 0);
            assert_int_equal(sl_client_send_messages(c, sl_id_name("po"), sl_id_name("t"),
                                                     sl_partitioning_partition(0), extra->m,
                                                     extra->n, &r),
                             -SL_ERR_INVALID_COMMAND);
            assert_int_equal(sl_client_ping(c), -SL_ERR_INVALID_COMMAND);
            assert_int_equal(sl_client_poll_submit(c, sl_consumer_single(sl_id_num(1)),
                                                   sl_id_name("po"), sl_id_name("t"), 0,
                                                   sl_poll_offset(0), 1, false, &none),
                             -SL_ERR_INVALID_COMMAND);
            sl_polled_messages_t polled;
            assert_int_equal(sl_client_poll_collect(c, false, &none, NULL, &polled),
                             -SL_ERR_INVALID_COMMAND);
            free(extra);
        }
        /* The batch before this one: its reply, its offset. */
        uint64_t ticket = 0;
        assert_int_equal(sl_client_send_collect(c, &ticket, &r), 0);
        assert_int_equal(ticket, tickets[k - 1]);
        assert_true(r.confirmed);
        assert_int_equal(r.partition_id, 0);
        assert_int_equal(r.base_offset, offset);
        assert_int_equal(r.messages_count, sizes[k - 1]);
        offset += sizes[k - 1];
    }
    uint64_t ticket = 0;
    assert_int_equal(sl_client_send_collect(c, &ticket, &r), 0);
    assert_int_equal(ticket, tickets[BATCHES - 1]);
    assert_int_equal(r.base_offset, offset);
    ticket = 7;
    assert_int_equal(sl_client_send_collect(c, &ticket, &r), -SL_ERR_INVALID_COMMAND);
    assert_int_equal(ticket, 0);
    assert_int_equal(sl_client_in_flight(c), 0);
    /* Lockstep calls work again. */
    assert_int_equal(sl_client_ping(c), 0);
    expect_numbered(c, "po", "t", first);
    assert_int_equal(sl_client_delete_stream(c, sl_id_name("po")), 0);
    sl_client_close(c);
}

/* Batch 2 of 3 goes to a topic that does not exist: its collect reports
 * the server's refusal, and batches 1 and 3 are stored and reported. */
static void test_refused_batch_in_the_middle(void **state)
{
    (void)state;
    sl_client_t *c = connect_root(srv.port);
    make_topic(c, "pe", "t");
    /* The lockstep answer for the same batch, to compare with. */
    batch_t *b = numbered(0, 20);
    sl_send_result_t r;
    int refusal = sl_client_send_messages(c, sl_id_name("pe"), sl_id_name("missing"),
                                          sl_partitioning_partition(0), b->m, b->n, &r);
    assert_true(refusal < 0);

    uint64_t t1 = submit(c, "pe", "t", b);
    uint64_t t2 = submit(c, "pe", "missing", b);
    uint64_t ticket;
    assert_int_equal(sl_client_send_collect(c, &ticket, &r), 0);
    assert_int_equal(ticket, t1);
    assert_int_equal(r.base_offset, 0);
    batch_t *b3 = numbered(20, 30);
    uint64_t t3 = submit(c, "pe", "t", b3);
    r = (sl_send_result_t){.base_offset = 12345};
    assert_int_equal(sl_client_send_collect(c, &ticket, &r), refusal);
    assert_int_equal(ticket, t2);
    assert_int_equal(r.base_offset, 12345); /* not written on an error */
    assert_int_equal(sl_client_send_collect(c, &ticket, &r), 0);
    assert_int_equal(ticket, t3);
    assert_int_equal(r.base_offset, 20);
    expect_numbered(c, "pe", "t", 50);
    free(b);
    free(b3);
    assert_int_equal(sl_client_delete_stream(c, sl_id_name("pe")), 0);
    sl_client_close(c);
}

/* The connection is lost with two sends in flight and no reply sent (the
 * server is stopped): both collects report it, in order, and the client
 * is free for other calls afterwards. */
static void test_lost_connection_reports_each(void **state)
{
    (void)state;
    th_proxy_t *proxy = th_proxy_start(srv.port);
    sl_client_t *c = connect_root(th_proxy_port(proxy));
    make_topic(c, "pl", "t");
    batch_t *b = numbered(0, 10);
    assert_int_equal(kill(srv.pid, SIGSTOP), 0);
    uint64_t t1 = submit(c, "pl", "t", b);
    uint64_t t2 = submit(c, "pl", "t", b);
    th_proxy_cut(proxy);
    assert_int_equal(kill(srv.pid, SIGCONT), 0);
    uint64_t ticket;
    sl_send_result_t r;
    int first = sl_client_send_collect(c, &ticket, &r);
    assert_int_equal(ticket, t1);
    assert_true(first == -SL_ERR_CONNECTION_CLOSED || first == -SL_ERR_DISCONNECTED);
    assert_int_equal(sl_client_send_collect(c, &ticket, &r), -SL_ERR_DISCONNECTED);
    assert_int_equal(ticket, t2);
    assert_int_equal(sl_client_in_flight(c), 0);
    /* Nothing more to collect; the connection is closed, as after a
     * lockstep call's transport error. */
    assert_int_equal(sl_client_send_collect(c, &ticket, &r), -SL_ERR_INVALID_COMMAND);
    assert_int_equal(sl_client_ping(c), -SL_ERR_NOT_CONNECTED);
    sl_client_close(c);
    th_proxy_stop(proxy);
    free(b);
    sl_client_t *d = connect_root(srv.port);
    assert_int_equal(sl_client_delete_stream(d, sl_id_name("pl")), 0);
    sl_client_close(d);
}

/* Sends in flight are submitted on a fresh connection after a lost one
 * when reconnects are on (care runs when the pipe is empty). */
static void test_submit_reconnects(void **state)
{
    (void)state;
    th_proxy_t *proxy = th_proxy_start(srv.port);
    sl_client_options_t o = {.reconnect_attempts = 5, .reconnect_delay_ms = 10};
    th_client_options(&o); /* the door under test */
    sl_client_t *c = NULL;
    assert_int_equal(sl_client_connect("127.0.0.1", th_proxy_port(proxy), &o, &c), 0);
    assert_int_equal(sl_client_login(c, "iggy", "iggy", NULL), 0);
    make_topic(c, "pr", "t");
    th_proxy_cut(proxy);
    th_proxy_restore(proxy);
    batch_t *b = numbered(0, 10);
    uint64_t t1 = submit(c, "pr", "t", b);
    uint64_t ticket;
    sl_send_result_t r;
    assert_int_equal(sl_client_send_collect(c, &ticket, &r), 0);
    assert_int_equal(ticket, t1);
    assert_int_equal(r.base_offset, 0);
    sl_session_info_t info;
    sl_client_session_info(c, &info);
    assert_true(info.reconnects >= 1);
    expect_numbered(c, "pr", "t", 10);
    assert_int_equal(sl_client_delete_stream(c, sl_id_name("pr")), 0);
    sl_client_close(c);
    th_proxy_stop(proxy);
    free(b);
}

/* Fills partition 0 of stream/t with total numbered messages in batches. */
static void fill(sl_client_t *c, const char *stream, uint32_t total, uint32_t per_batch)
{
    for (uint32_t first = 0; first < total; first += per_batch) {
        uint32_t n = total - first < per_batch ? total - first : per_batch;
        batch_t *b = numbered(first, n);
        sl_send_result_t r;
        assert_int_equal(sl_client_send_messages(c, sl_id_name(stream), sl_id_name("t"),
                                                 sl_partitioning_partition(0), b->m, b->n, &r),
                         0);
        free(b);
    }
}

/* Chained polls: each collect puts the next poll in flight before it
 * verifies; every message comes once, in order, and the chain ends at the
 * end of the partition. */
static void test_chained_polls_read_everything_once(void **state)
{
    (void)state;
    sl_client_t *c = connect_root(srv.port);
    make_topic(c, "pp", "t");
    const uint32_t total = 2345;
    fill(c, "pp", total, 400);
    uint64_t ticket = 0, chained = 0, expected = 0;
    assert_int_equal(sl_client_poll_submit(c, sl_consumer_single(sl_id_num(1)), sl_id_name("pp"),
                                           sl_id_name("t"), 0, sl_poll_offset(0), 300, false,
                                           &ticket),
                     0);
    uint64_t want_ticket = ticket;
    for (int guard = 0; guard < 100; guard++) {
        sl_polled_messages_t out;
        uint64_t got_ticket;
        assert_int_equal(sl_client_poll_collect(c, true, &got_ticket, &chained, &out), 0);
        assert_int_equal(got_ticket, want_ticket);
        for (uint32_t i = 0; i < out.count; i++) {
            char want[PAYLOAD_MAX];
            int len = snprintf(want, sizeof(want), "%u", (unsigned)expected);
            assert_int_equal(out.messages[i].offset, expected);
            assert_memory_equal(out.messages[i].payload, want, (size_t)len);
            expected++;
        }
        if (out.count == 0) {
            assert_int_equal(chained, 0); /* nothing returned: no next poll */
            break;
        }
        assert_true(chained > want_ticket);
        assert_int_equal(sl_client_in_flight(c), 1);
        /* A lockstep call is refused while the chained poll is in flight,
         * and the messages just returned stay readable across a submit. */
        assert_int_equal(sl_client_ping(c), -SL_ERR_INVALID_COMMAND);
        want_ticket = chained;
    }
    assert_int_equal(expected, total);
    assert_int_equal(sl_client_in_flight(c), 0);
    assert_int_equal(sl_client_delete_stream(c, sl_id_name("pp")), 0);
    sl_client_close(c);
}

/* The pipelined consumer, in both commit modes, reads every message once
 * in order, including messages that arrive while it reads; commit and
 * close work with a poll in flight, and the stored offset is the last
 * message returned. */
static void consume_all(sl_client_t *c, const char *stream, uint8_t commit, uint32_t total)
{
    sl_consumer_options_t o = {.stream = sl_id_name(stream),
                               .topic = sl_id_name("t"),
                               .consumer_id = sl_id_name("reader"),
                               .partition = 0,
                               .commit = commit,
                               .batch_count = 128,
                               .idle_ms = 5,
                               .pipeline = true};
    sl_message_consumer_t *cn = NULL;
    assert_int_equal(sl_consumer_open(c, &o, &cn), 0);
    uint64_t expected = 0;
    for (int guard = 0; guard < 1000 && expected < total; guard++) {
        sl_polled_messages_t out;
        assert_int_equal(sl_consumer_poll(cn, 1000, &out), 0);
        /* Messages returned: the next poll is already on its way. */
        if (out.count > 0)
            assert_int_equal(sl_client_in_flight(c), 1);
        for (uint32_t i = 0; i < out.count; i++) {
            char want[PAYLOAD_MAX];
            int len = snprintf(want, sizeof(want), "%u", (unsigned)expected);
            assert_int_equal(out.messages[i].offset, expected);
            assert_int_equal(out.messages[i].payload_len, (size_t)len);
            assert_memory_equal(out.messages[i].payload, want, (size_t)len);
            expected++;
        }
        if (expected == 512 && commit == SL_CONSUMER_COMMIT_EXPLICIT)
            assert_int_equal(sl_consumer_commit(cn), 0);
    }
    assert_int_equal(expected, total);
    assert_int_equal(sl_consumer_commit(cn), 0);
    sl_consumer_close(cn);
    /* The client is free again, and the stored offset is the last message
     * returned: the dropped poll in flight did not move it. */
    sl_consumer_offset_t off;
    assert_int_equal(sl_client_get_consumer_offset(c, sl_consumer_single(sl_id_name("reader")),
                                                   sl_id_name(stream), sl_id_name("t"), 0, &off),
                     0);
    assert_true(off.found);
    assert_int_equal(off.stored_offset, total - 1);
}

static void test_pipelined_consumer(void **state)
{
    (void)state;
    sl_client_t *c = connect_root(srv.port);
    make_topic(c, "pc", "t");
    fill(c, "pc", 1500, 250);
    consume_all(c, "pc", SL_CONSUMER_COMMIT_AUTO, 1500);
    assert_int_equal(sl_client_delete_consumer_offset(c, sl_consumer_single(sl_id_name("reader")),
                                                      sl_id_name("pc"), sl_id_name("t"), 0,
                                                      SL_ACK_LEVEL_QUORUM),
                     0);
    consume_all(c, "pc", SL_CONSUMER_COMMIT_EXPLICIT, 1500);
    assert_int_equal(sl_client_delete_stream(c, sl_id_name("pc")), 0);
    sl_client_close(c);
}

/* Auto-commit: the server stores the offset of the poll in flight when it
 * serves it; closing the consumer with that poll unread stores the last
 * offset returned again, so the next reader does not skip the batch. */
static void test_dropped_poll_gives_its_batch_back(void **state)
{
    (void)state;
    sl_client_t *c = connect_root(srv.port);
    make_topic(c, "pd", "t");
    fill(c, "pd", 1000, 250);
    sl_consumer_options_t o = {.stream = sl_id_name("pd"),
                               .topic = sl_id_name("t"),
                               .consumer_id = sl_id_name("reader"),
                               .partition = 0,
                               .batch_count = 100,
                               .pipeline = true};
    sl_message_consumer_t *cn = NULL;
    assert_int_equal(sl_consumer_open(c, &o, &cn), 0);
    sl_polled_messages_t out;
    assert_int_equal(sl_consumer_poll(cn, 1000, &out), 0);
    assert_int_equal(out.count, 100);
    assert_int_equal(out.messages[99].offset, 99);
    assert_int_equal(sl_client_in_flight(c), 1); /* messages 100..199, auto-committed */
    sl_consumer_close(cn);
    sl_consumer_offset_t off;
    assert_int_equal(sl_client_get_consumer_offset(c, sl_consumer_single(sl_id_name("reader")),
                                                   sl_id_name("pd"), sl_id_name("t"), 0, &off),
                     0);
    assert_true(off.found);
    assert_int_equal(off.stored_offset, 99);
    /* A new reader continues at 100. */
    assert_int_equal(sl_consumer_open(c, &o, &cn), 0);
    assert_int_equal(sl_consumer_poll(cn, 1000, &out), 0);
    assert_true(out.count > 0);
    assert_int_equal(out.messages[0].offset, 100);
    sl_consumer_close(cn);
    assert_int_equal(sl_client_delete_stream(c, sl_id_name("pd")), 0);
    sl_client_close(c);
}

typedef struct reports {
    uint32_t count, messages, errors;
    uint64_t next_offset;
    bool in_order;
} reports_t;

static void on_batch(void *ctx, const sl_producer_report_t *r)
{
    reports_t *s = ctx;
    s->count++;
    s->messages += r->count;
    if (r->error != 0) {
        s->errors++;
        return;
    }
    if (!r->confirmed || r->base_offset != s->next_offset)
        s->in_order = false;
    s->next_offset = r->base_offset + r->count;
}

/* The pipelined producer, foreground and background: every batch stored
 * in order, reported in order with the offsets it got. */
static void produce(sl_producer_t *p, uint32_t total)
{
    for (uint32_t i = 0; i < total; i++) {
        char payload[PAYLOAD_MAX];
        int len = snprintf(payload, sizeof(payload), "%u", i);
        assert_int_equal(sl_producer_send_payload(p, payload, (size_t)len), 0);
    }
}

static void test_pipelined_producer(void **state)
{
    (void)state;
    sl_client_t *c = connect_root(srv.port);
    make_topic(c, "pf", "t");
    reports_t fg = {.in_order = true};
    sl_producer_options_t o = {.stream = sl_id_name("pf"),
                               .topic = sl_id_name("t"),
                               .partitioning = SL_PRODUCER_PARTITION,
                               .partition_id = 0,
                               .batch_count = 97,
                               .linger_ms = 1000,
                               .batch_done = on_batch,
                               .batch_done_ctx = &fg,
                               .pipeline = true};
    sl_producer_t *p = NULL;
    assert_int_equal(sl_producer_open(c, &o, &p), 0);
    produce(p, 3000);
    /* The last full batch (messages 2813..2909) is still in flight. */
    assert_int_equal(sl_client_in_flight(c), 1);
    assert_int_equal(sl_client_ping(c), -SL_ERR_INVALID_COMMAND);
    assert_int_equal(sl_producer_flush(p), 0);
    /* After the flush nothing is in flight: the client serves other calls. */
    assert_int_equal(sl_client_in_flight(c), 0);
    assert_int_equal(sl_client_ping(c), 0);
    assert_int_equal(sl_producer_close(p), 0);
    assert_true(fg.in_order);
    assert_int_equal(fg.errors, 0);
    assert_int_equal(fg.messages, 3000);
    assert_int_equal(fg.count, (3000 + 96) / 97);
    expect_numbered(c, "pf", "t", 3000);

    make_topic(c, "pb", "t");
    reports_t bg = {.in_order = true};
    o.stream = sl_id_name("pb");
    o.batch_done_ctx = &bg;
    o.linger_ms = 2;
    sl_credentials_t cred = {.username = "iggy", .password = "iggy"};
    sl_client_options_t co = {0};
    th_client_options(&co);
    assert_int_equal(sl_producer_open_background("127.0.0.1", srv.port, &co, &cred, &o, &p), 0);
    produce(p, 5000);
    assert_int_equal(sl_producer_flush(p), 0);
    assert_int_equal(sl_producer_close(p), 0);
    assert_true(bg.in_order);
    assert_int_equal(bg.errors, 0);
    assert_int_equal(bg.messages, 5000);
    expect_numbered(c, "pb", "t", 5000);
    assert_int_equal(sl_client_delete_stream(c, sl_id_name("pf")), 0);
    assert_int_equal(sl_client_delete_stream(c, sl_id_name("pb")), 0);
    sl_client_close(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sends_land_in_order),
        cmocka_unit_test(test_refused_batch_in_the_middle),
        cmocka_unit_test(test_lost_connection_reports_each),
        cmocka_unit_test(test_submit_reconnects),
        cmocka_unit_test(test_chained_polls_read_everything_once),
        cmocka_unit_test(test_pipelined_consumer),
        cmocka_unit_test(test_dropped_poll_gives_its_batch_back),
        cmocka_unit_test(test_pipelined_producer),
    };
    return cmocka_run_group_tests(tests, start, stop);
}
