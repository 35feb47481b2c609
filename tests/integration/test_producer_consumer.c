/* The high-level producer and consumer of libsluice against the real
 * sluiced: batching by count, size and linger time, key partitioning that
 * lands where the server's own MessagesKey hashing does, a background
 * producer fed by several threads, delivery reports and errors, explicit
 * and automatic commits, and consumer groups whose members read every
 * message exactly once across a rebalance. */
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
// clang-format off
#include <cmocka.h>
// clang-format on
#include <sluice/client.h>
#include <sluice/consumer.h>
#include <sluice/error.h>
#include <sluice/producer.h>

#include "harness.h"

static th_server_t srv;

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

static void pause_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static sl_client_t *connect_root(void)
{
    sl_client_t *c = NULL;
    assert_int_equal(sl_client_connect("127.0.0.1", srv.port, NULL, &c), 0);
    assert_int_equal(sl_client_login(c, "iggy", "iggy", NULL), 0);
    return c;
}

static void make_topic(sl_client_t *c, const char *stream, const char *topic, uint32_t partitions)
{
    int rc = sl_client_create_stream(c, stream, NULL);
    assert_true(rc == 0 || rc == -SL_ERR_STREAM_NAME_ALREADY_EXISTS);
    assert_int_equal(sl_client_create_topic(c, sl_id_name(stream), topic, partitions, NULL, NULL),
                     0);
}

static uint64_t topic_messages(sl_client_t *c, const char *stream, const char *topic)
{
    const sl_topic_t *t;
    assert_int_equal(sl_client_get_topic(c, sl_id_name(stream), sl_id_name(topic), &t), 0);
    assert_non_null(t);
    return t->messages_count;
}

/* Delivery reports, tallied (the background thread calls in). */
typedef struct tally {
    pthread_mutex_t mu;
    uint32_t batches;
    uint32_t sent;
    uint32_t failed;
    int last_error;
    uint32_t partitions[8]; /* messages confirmed per partition */
} tally_t;

static void on_batch(void *ctx, const sl_producer_report_t *r)
{
    tally_t *t = ctx;
    pthread_mutex_lock(&t->mu);
    t->batches++;
    if (r->error == 0) {
        t->sent += r->count;
        if (r->confirmed && r->partition_id < 8)
            t->partitions[r->partition_id] += r->count;
    } else {
        t->failed += r->count;
        t->last_error = r->error;
    }
    pthread_mutex_unlock(&t->mu);
}

/* Queues "<prefix><i>". */
static int send_text(sl_producer_t *p, const char *prefix, unsigned i)
{
    char text[64];
    int len = snprintf(text, sizeof(text), "%s%u", prefix, i);
    return sl_producer_send_payload(p, text, (size_t)len);
}

/* The number after prefix in a payload (payloads are not NUL-terminated). */
static unsigned payload_index(const sl_polled_message_t *m, const char *prefix)
{
    char text[64];
    size_t plen = strlen(prefix);
    assert_true(m->payload_len > plen && m->payload_len < sizeof(text));
    memcpy(text, m->payload, m->payload_len);
    text[m->payload_len] = '\0';
    assert_memory_equal(text, prefix, plen);
    return (unsigned)strtoul(text + plen, NULL, 10);
}

/* Reads with cn until `want` messages "<prefix><index>" arrived (index <
 * cap), each index once; returns how many polls it took. */
static void drain(sl_message_consumer_t *cn, const char *prefix, uint8_t *seen, uint32_t cap,
                  uint32_t want)
{
    uint32_t got = 0;
    for (int round = 0; got < want && round < 300; round++) {
        sl_polled_messages_t batch;
        assert_int_equal(sl_consumer_poll(cn, 100, &batch), 0);
        assert_false(batch.resync_required);
        for (uint32_t i = 0; i < batch.count; i++) {
            unsigned index = payload_index(&batch.messages[i], prefix);
            assert_true(index < cap);
            assert_int_equal(seen[index], 0);
            seen[index] = 1;
            got++;
        }
    }
    assert_int_equal(got, want);
}

/* --- foreground producer ------------------------------------------------------------------ */

static void test_foreground_batches_by_count(void **state)
{
    (void)state;
    sl_client_t *c = connect_root();
    make_topic(c, "fg", "count", 3);
    tally_t tally = {.mu = PTHREAD_MUTEX_INITIALIZER};
    sl_producer_options_t o = {
        .stream = sl_id_name("fg"),
        .topic = sl_id_name("count"),
        .batch_count = 10,
        .linger_ms = 60000, /* only the count matters here */
        .batch_done_ctx = &tally,
        .batch_done = on_batch,
    };
    sl_producer_t *p;
    assert_int_equal(sl_producer_open(c, &o, &p), 0);
    for (unsigned i = 0; i < 95; i++)
        assert_int_equal(send_text(p, "fg-", i), 0);
    /* Nine full batches went out as they filled; five wait. */
    assert_int_equal(tally.batches, 9);
    assert_int_equal(topic_messages(c, "fg", "count"), 90);
    sl_producer_stats_t stats;
    sl_producer_stats(p, &stats);
    assert_int_equal(stats.queued, 95);
    assert_int_equal(stats.sent, 90);
    assert_int_equal(stats.pending, 5);
    assert_int_equal(sl_producer_flush(p), 0);
    assert_int_equal(tally.batches, 10);
    assert_int_equal(topic_messages(c, "fg", "count"), 95);
    assert_int_equal(sl_producer_close(p), 0);
    /* Balanced: the server spread the batches over the partitions. */
    assert_true(tally.partitions[0] > 0 && tally.partitions[1] > 0 && tally.partitions[2] > 0);
    sl_client_close(c);
}

static void test_foreground_linger_and_size(void **state)
{
    (void)state;
    sl_client_t *c = connect_root();
    make_topic(c, "fg", "linger", 1);
    sl_producer_options_t o = {
        .stream = sl_id_name("fg"),
        .topic = sl_id_name("linger"),
        .partitioning = SL_PRODUCER_PARTITION,
        .partition_id = 0,
        .linger_ms = 50,
        .batch_bytes = 1000,
    };
    sl_producer_t *p;
    assert_int_equal(sl_producer_open(c, &o, &p), 0);
    assert_int_equal(send_text(p, "a-", 1), 0);
    assert_int_equal(sl_producer_tick(p), 0);
    assert_int_equal(topic_messages(c, "fg", "linger"), 0); /* still lingering */
    pause_ms(70);
    assert_int_equal(sl_producer_tick(p), 0);
    assert_int_equal(topic_messages(c, "fg", "linger"), 1);
    /* Size: 400-byte payloads, at most 1000 bytes a batch: a batch goes
     * when the next message would not fit, so two per batch. */
    char big[400];
    memset(big, 'x', sizeof(big));
    for (int i = 0; i < 5; i++)
        assert_int_equal(sl_producer_send_payload(p, big, sizeof(big)), 0);
    sl_producer_stats_t stats;
    sl_producer_stats(p, &stats);
    assert_int_equal(stats.sent, 1 + 4);
    assert_int_equal(stats.batches, 1 + 2);
    assert_int_equal(sl_producer_close(p), 0); /* flushes the fifth */
    assert_int_equal(topic_messages(c, "fg", "linger"), 6);
    sl_client_close(c);
}

/* --- key partitioning ---------------------------------------------------------------------- */

/* Where the server itself puts a MessagesKey batch. */
static uint32_t server_choice(sl_client_t *c, const char *key)
{
    sl_send_message_t m = {.payload = "probe", .payload_len = 5};
    sl_send_result_t r;
    assert_int_equal(sl_client_send_messages(c, sl_id_name("keys"), sl_id_name("t"),
                                             sl_partitioning_messages_key(key, strlen(key)), &m, 1,
                                             &r),
                     0);
    assert_true(r.confirmed);
    return r.partition_id;
}

static void test_key_partitioning_matches_the_server(void **state)
{
    (void)state;
    sl_client_t *c = connect_root();
    make_topic(c, "keys", "t", 5);
    static const char *keys[] = {"alpha", "beta", "gamma", "delta", "epsilon", "zeta"};
    uint32_t expect[6];
    for (int k = 0; k < 6; k++)
        expect[k] = server_choice(c, keys[k]);

    tally_t tally = {.mu = PTHREAD_MUTEX_INITIALIZER};
    sl_producer_options_t o = {
        .stream = sl_id_name("keys"),
        .topic = sl_id_name("t"),
        .partitioning = SL_PRODUCER_KEY,
        .batch_done_ctx = &tally,
        .batch_done = on_batch,
    };
    sl_producer_t *p;
    assert_int_equal(sl_producer_open(c, &o, &p), 0);
    for (int round = 0; round < 4; round++)
        for (int k = 0; k < 6; k++) {
            sl_producer_message_t m = {.payload = keys[k],
                                       .payload_len = strlen(keys[k]),
                                       .key = keys[k],
                                       .key_len = strlen(keys[k])};
            assert_int_equal(sl_producer_send(p, &m), 0);
        }
    sl_producer_message_t nokey = {.payload = "x", .payload_len = 1};
    assert_int_equal(sl_producer_send(p, &nokey), -SL_ERR_INVALID_KEY_VALUE_LENGTH);
    assert_int_equal(sl_producer_close(p), 0);

    /* Every message of a key is in its key's partition, in order. */
    for (int k = 0; k < 6; k++) {
        sl_polled_messages_t got;
        assert_int_equal(sl_client_poll_messages(c, sl_consumer_single(sl_id_num(1)),
                                                 sl_id_name("keys"), sl_id_name("t"), expect[k],
                                                 sl_poll_first(), 1000, false, &got),
                         0);
        uint32_t mine = 0;
        for (uint32_t i = 0; i < got.count; i++)
            if (got.messages[i].payload_len == strlen(keys[k]) &&
                memcmp(got.messages[i].payload, keys[k], strlen(keys[k])) == 0)
                mine++;
        assert_int_equal(mine, 4);
    }
    assert_int_equal(tally.sent, 24);
    sl_client_close(c);
}

/* --- background producer ------------------------------------------------------------------ */

typedef struct feeder {
    sl_producer_t *p;
    unsigned first;
    unsigned count;
    int rc;
} feeder_t;

static void *feed(void *arg)
{
    feeder_t *f = arg;
    for (unsigned i = f->first; i < f->first + f->count && f->rc == 0; i++) {
        sl_header_t h = {sl_hv_str("n"), sl_hv_u64(i)};
        char text[32];
        int len = snprintf(text, sizeof(text), "bg-%u", i);
        sl_producer_message_t m = {
            .payload = text, .payload_len = (size_t)len, .headers = &h, .headers_count = 1};
        f->rc = sl_producer_send(f->p, &m);
    }
    return NULL;
}

static sl_producer_t *open_background(const char *topic, tally_t *tally, uint32_t batch_count)
{
    sl_credentials_t login = {.username = "iggy", .password = "iggy"};
    sl_client_options_t co = {.reconnect_attempts = 3, .transient_retries = 3};
    sl_producer_options_t o = {
        .stream = sl_id_name("bg"),
        .topic = sl_id_name(topic),
        .batch_count = batch_count,
        .linger_ms = 2,
        .batch_done_ctx = tally,
        .batch_done = on_batch,
    };
    sl_producer_t *p = NULL;
    assert_int_equal(sl_producer_open_background("127.0.0.1", srv.port, &co, &login, &o, &p), 0);
    return p;
}

static void test_background_from_many_threads(void **state)
{
    (void)state;
    sl_client_t *c = connect_root();
    make_topic(c, "bg", "t", 4);
    tally_t tally = {.mu = PTHREAD_MUTEX_INITIALIZER};
    sl_producer_t *p = open_background("t", &tally, 50);
    enum { THREADS = 4, EACH = 500 };
    feeder_t feeders[THREADS];
    pthread_t threads[THREADS];
    for (unsigned i = 0; i < THREADS; i++) {
        feeders[i] = (feeder_t){p, i * EACH, EACH, 0};
        assert_int_equal(pthread_create(&threads[i], NULL, feed, &feeders[i]), 0);
    }
    for (unsigned i = 0; i < THREADS; i++) {
        pthread_join(threads[i], NULL);
        assert_int_equal(feeders[i].rc, 0);
    }
    assert_int_equal(sl_producer_flush(p), 0);
    /* After a flush everything queued before it is stored. */
    assert_int_equal(topic_messages(c, "bg", "t"), THREADS * EACH);
    sl_producer_stats_t stats;
    sl_producer_stats(p, &stats);
    assert_int_equal(stats.sent, THREADS * EACH);
    assert_int_equal(stats.pending, 0);
    assert_int_equal(sl_producer_close(p), 0);
    assert_int_equal(tally.sent, THREADS * EACH);
    assert_int_equal(tally.failed, 0);
    assert_true(tally.batches >= THREADS * EACH / 50);

    /* Exactly once each, headers intact: a consumer over all partitions. */
    sl_consumer_options_t co = {
        .stream = sl_id_name("bg"),
        .topic = sl_id_name("t"),
        .consumer_id = sl_id_name("checker"),
        .partition = SL_PARTITION_NONE,
        .batch_count = 300,
    };
    sl_message_consumer_t *cn;
    assert_int_equal(sl_consumer_open(c, &co, &cn), 0);
    uint8_t *seen = calloc(THREADS * EACH, 1);
    drain(cn, "bg-", seen, THREADS * EACH, THREADS * EACH);
    free(seen);
    sl_consumer_close(cn);
    sl_client_close(c);
}

static void test_background_errors(void **state)
{
    (void)state;
    sl_client_t *c = connect_root();
    make_topic(c, "bg", "doomed", 1);
    tally_t tally = {.mu = PTHREAD_MUTEX_INITIALIZER};
    sl_credentials_t login = {.username = "iggy", .password = "iggy"};
    sl_producer_options_t bad = {.stream = sl_id_name("bg"), .topic = sl_id_name("missing")};
    sl_producer_t *p = NULL;
    assert_int_equal(sl_producer_open_background("127.0.0.1", srv.port, NULL, &login, &bad, &p),
                     -SL_ERR_TOPIC_NAME_NOT_FOUND);
    assert_null(p);
    sl_credentials_t wrong = {.username = "iggy", .password = "nope"};
    assert_int_equal(sl_producer_open_background("127.0.0.1", srv.port, NULL, &wrong, &bad, &p),
                     -SL_ERR_INVALID_CREDENTIALS);

    p = open_background("doomed", &tally, 10);
    for (unsigned i = 0; i < 5; i++)
        assert_int_equal(send_text(p, "ok-", i), 0);
    assert_int_equal(sl_producer_flush(p), 0);
    /* The topic goes away under the producer: batches fail and say so. */
    assert_int_equal(sl_client_delete_topic(c, sl_id_name("bg"), sl_id_name("doomed")), 0);
    for (unsigned i = 0; i < 5; i++)
        assert_int_equal(send_text(p, "lost-", i), 0);
    assert_int_equal(sl_producer_flush(p), -SL_ERR_RESOURCE_NOT_FOUND);
    assert_int_equal(sl_producer_flush(p), 0); /* the error was reported once */
    sl_producer_stats_t stats;
    sl_producer_stats(p, &stats);
    assert_int_equal(stats.sent, 5);
    assert_int_equal(stats.failed, 5);
    assert_int_equal(tally.last_error, -SL_ERR_RESOURCE_NOT_FOUND);
    assert_int_equal(sl_producer_close(p), 0);
    sl_client_close(c);
}

/* --- consumers ------------------------------------------------------------------------------ */

static void send_numbered(sl_client_t *c, const char *stream, const char *topic, const char *prefix,
                          unsigned first, unsigned n)
{
    /* Batches of 10: Balanced spreads them over the partitions. */
    sl_producer_options_t o = {
        .stream = sl_id_name(stream), .topic = sl_id_name(topic), .batch_count = 10};
    sl_producer_t *p;
    assert_int_equal(sl_producer_open(c, &o, &p), 0);
    for (unsigned i = first; i < first + n; i++)
        assert_int_equal(send_text(p, prefix, i), 0);
    assert_int_equal(sl_producer_close(p), 0);
}

static void test_explicit_and_auto_commit(void **state)
{
    (void)state;
    sl_client_t *c = connect_root();
    make_topic(c, "cons", "t", 3);
    send_numbered(c, "cons", "t", "c-", 0, 90);
    sl_consumer_options_t o = {
        .stream = sl_id_name("cons"),
        .topic = sl_id_name("t"),
        .consumer_id = sl_id_name("explicit"),
        .partition = SL_PARTITION_NONE,
        .commit = SL_CONSUMER_COMMIT_EXPLICIT,
        .batch_count = 7,
    };
    sl_message_consumer_t *cn;
    assert_int_equal(sl_consumer_open(c, &o, &cn), 0);
    uint8_t seen[90] = {0};
    drain(cn, "c-", seen, 90, 90);
    /* Nothing stored yet: a new consumer of that name starts over... */
    sl_message_consumer_t *again;
    assert_int_equal(sl_consumer_open(c, &o, &again), 0);
    uint8_t seen2[90] = {0};
    drain(again, "c-", seen2, 90, 90);
    sl_consumer_close(again);
    /* ...until the first one commits; then there is nothing left. */
    assert_int_equal(sl_consumer_commit(cn), 0);
    sl_consumer_close(cn);
    assert_int_equal(sl_consumer_open(c, &o, &cn), 0);
    sl_polled_messages_t batch;
    assert_int_equal(sl_consumer_poll(cn, 200, &batch), 0);
    assert_int_equal(batch.count, 0);
    sl_consumer_close(cn);

    /* Auto-commit: the server stores as it serves; one partition only. */
    o.consumer_id = sl_id_name("auto");
    o.commit = SL_CONSUMER_COMMIT_AUTO;
    o.partition = 1;
    assert_int_equal(sl_consumer_open(c, &o, &cn), 0);
    assert_int_equal(sl_consumer_poll(cn, 1000, &batch), 0);
    assert_int_equal(batch.partition_id, 1);
    assert_int_equal(batch.count, 7);
    uint64_t last = batch.messages[6].offset;
    sl_consumer_offset_t stored;
    assert_int_equal(sl_client_get_consumer_offset(c, sl_consumer_single(sl_id_name("auto")),
                                                   sl_id_name("cons"), sl_id_name("t"), 1, &stored),
                     0);
    assert_true(stored.found);
    assert_int_equal(stored.stored_offset, last);
    assert_int_equal(sl_consumer_commit(cn), 0); /* nothing to do */
    sl_consumer_close(cn);
    sl_client_close(c);
}

/* Polls once with each member in turn until `want` messages were seen. */
static uint32_t drain_members(sl_message_consumer_t **members, int count, uint8_t *seen,
                              uint32_t cap, uint32_t want, uint32_t *per_member)
{
    uint32_t got = 0;
    for (int round = 0; got < want && round < 400; round++) {
        int k = round % count;
        sl_polled_messages_t batch;
        assert_int_equal(sl_consumer_poll(members[k], 20, &batch), 0);
        for (uint32_t i = 0; i < batch.count; i++) {
            unsigned index = payload_index(&batch.messages[i], "g-");
            assert_true(index < cap);
            assert_int_equal(seen[index], 0); /* exactly once */
            seen[index] = 1;
            got++;
            per_member[k]++;
        }
    }
    return got;
}

/* Members of one group, plain or pipelined (consumer.h, pipeline). */
static void group_members(const char *stream, bool pipeline)
{
    sl_client_t *root = connect_root();
    make_topic(root, stream, "t", 4);
    sl_client_t *clients[3];
    sl_message_consumer_t *members[3];
    sl_consumer_options_t o = {
        .stream = sl_id_name(stream),
        .topic = sl_id_name("t"),
        .kind = SL_CONSUMER_KIND_GROUP,
        .consumer_id = sl_id_name("workers"),
        .create_group = true,
        .batch_count = 10,
        .resync_interval_ms = 100,
        .pipeline = pipeline,
    };
    for (int i = 0; i < 2; i++) {
        clients[i] = connect_root();
        assert_int_equal(sl_consumer_open(clients[i], &o, &members[i]), 0);
    }
    send_numbered(root, stream, "t", "g-", 0, 200);
    uint8_t seen[400] = {0};
    uint32_t per[3] = {0};
    /* Part of the stream with two members... */
    uint32_t got = drain_members(members, 2, seen, 400, 100, per);
    assert_true(got >= 100);
    /* ...then a third joins: the group rebalances, the others meet the
     * sentinel or the timer and re-sync, and nothing is read twice. */
    clients[2] = connect_root();
    assert_int_equal(sl_consumer_open(clients[2], &o, &members[2]), 0);
    send_numbered(root, stream, "t", "g-", 200, 200);
    got += drain_members(members, 3, seen, 400, 400 - got, per);
    assert_int_equal(got, 400);
    assert_true(per[0] > 0 && per[1] > 0 && per[2] > 0);
    for (int i = 0; i < 3; i++)
        assert_int_equal(sl_client_in_flight(clients[i]), 0); /* members poll lockstep */
    const uint32_t *parts;
    uint32_t total = 0, n;
    for (int i = 0; i < 3; i++) {
        sl_consumer_partitions(members[i], &parts, &n);
        total += n;
    }
    assert_int_equal(total, 4); /* disjoint assignments covering the topic */
    /* Close leaves the group. */
    for (int i = 0; i < 3; i++) {
        sl_consumer_close(members[i]);
        sl_client_close(clients[i]);
    }
    const sl_consumer_group_t *g;
    assert_int_equal(sl_client_get_consumer_group(root, sl_id_name(stream), sl_id_name("t"),
                                                  sl_id_name("workers"), &g),
                     0);
    assert_int_equal(g->members_count, 0);

    /* A missing group is an error unless create_group is set. */
    sl_message_consumer_t *cn = NULL;
    o.consumer_id = sl_id_name("nobody");
    o.create_group = false;
    int rc = sl_consumer_open(root, &o, &cn);
    /* sluiced names the missing group by id (5000), as the reference does. */
    assert_true(rc == -SL_ERR_CONSUMER_GROUP_ID_NOT_FOUND ||
                rc == -SL_ERR_CONSUMER_GROUP_NAME_NOT_FOUND);
    assert_null(cn);
    sl_client_close(root);
}

static void test_group_members_share_and_rebalance(void **state)
{
    (void)state;
    group_members("grp", false);
}

/* The same with pipeline set: group members ignore it (consumer.h; with a
 * poll in flight, a rebalance made members skip batches or fail their
 * polls with -20 in 6 of 8 runs), so every message is still read exactly
 * once. */
static void test_pipelined_group_members(void **state)
{
    (void)state;
    group_members("grp-pipe", true);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_foreground_batches_by_count),
        cmocka_unit_test(test_foreground_linger_and_size),
        cmocka_unit_test(test_key_partitioning_matches_the_server),
        cmocka_unit_test(test_background_from_many_threads),
        cmocka_unit_test(test_background_errors),
        cmocka_unit_test(test_explicit_and_auto_commit),
        cmocka_unit_test(test_group_members_share_and_rebalance),
        cmocka_unit_test(test_pipelined_group_members),
    };
    return cmocka_run_group_tests(tests, start, stop);
}
