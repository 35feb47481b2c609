/* Group commit against the real sluiced: eight producers on their own
 * connections send at once to one partition of an enforce_fsync topic, so
 * several sends share a loop turn and one fdatasync. Every batch is
 * acknowledged at its own offsets (no overlap, no gap), each producer's
 * batches keep their order, a poller running alongside only ever sees whole
 * acknowledged batches, and after kill -9 every acknowledged message is there
 * byte for byte. */
#include <pthread.h>
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
#include <sluice/error.h>

#include "harness.h"

enum {
    PRODUCERS = 8,
    BATCHES = 40,  /* per producer */
    PER_BATCH = 5, /* messages per batch */
    TOTAL = PRODUCERS * BATCHES * PER_BATCH,
    PAYLOAD = 64,
};

static th_server_t srv;

typedef struct producer {
    int index;
    sl_client_t *client;
    int failed; /* the first error, or 0 */
    uint64_t base[BATCHES];
    struct poller *poller; /* to stop it when everyone is done */
} producer_t;

typedef struct poller {
    sl_client_t *client;
    volatile int stop;
    int failed;
    uint64_t polls;
} poller_t;

/* The payload of message m of batch b of producer p: readable, distinct. */
static void payload_of(int p, int b, int m, char *out)
{
    memset(out, 'a' + p, PAYLOAD);
    snprintf(out, PAYLOAD, "producer %d batch %03d message %d ", p, b, m);
}

static bool decode_payload(const uint8_t *bytes, size_t len, int *p, int *b, int *m)
{
    char text[PAYLOAD + 1];
    if (len != PAYLOAD)
        return false;
    memcpy(text, bytes, PAYLOAD);
    text[PAYLOAD] = '\0';
    return sscanf(text, "producer %d batch %d message %d", p, b, m) == 3;
}

static void *produce(void *arg)
{
    producer_t *pr = arg;
    char payloads[PER_BATCH][PAYLOAD];
    sl_send_message_t msgs[PER_BATCH];
    for (int b = 0; b < BATCHES && pr->failed == 0; b++) {
        for (int m = 0; m < PER_BATCH; m++) {
            payload_of(pr->index, b, m, payloads[m]);
            msgs[m] = (sl_send_message_t){.payload = payloads[m], .payload_len = PAYLOAD};
        }
        sl_send_result_t r;
        int rc = sl_client_send_messages(pr->client, sl_id_name("gc"), sl_id_name("fsync"),
                                         sl_partitioning_partition(0), msgs, PER_BATCH, &r);
        if (rc != 0 || !r.confirmed)
            pr->failed = rc != 0 ? rc : -1;
        else
            pr->base[b] = r.base_offset;
    }
    return NULL;
}

/* Polls from offset 0 while the producers run: whatever it sees must be
 * whole batches of PER_BATCH messages (the partition never shows a part of
 * a group commit, nor a batch before its commit ends). */
static void *watch(void *arg)
{
    poller_t *po = arg;
    while (!po->stop && po->failed == 0) {
        sl_polled_messages_t out;
        int rc =
            sl_client_poll_messages(po->client, sl_consumer_single(sl_id_num(9)), sl_id_name("gc"),
                                    sl_id_name("fsync"), 0, sl_poll_offset(0), TOTAL, false, &out);
        if (rc != 0) {
            po->failed = rc;
            break;
        }
        if (out.count % PER_BATCH != 0)
            po->failed = -1000 - (int)out.count;
        po->polls++;
    }
    return NULL;
}

/* Every message once, in offset order from 0, each producer's batches at
 * the offsets it was told, its messages in order inside each batch. */
static void check_all(sl_client_t *c, const producer_t *prods)
{
    static bool seen[PRODUCERS][BATCHES][PER_BATCH];
    memset(seen, 0, sizeof(seen));
    uint64_t next = 0;
    while (next < TOTAL) {
        sl_polled_messages_t out;
        assert_int_equal(sl_client_poll_messages(c, sl_consumer_single(sl_id_num(1)),
                                                 sl_id_name("gc"), sl_id_name("fsync"), 0,
                                                 sl_poll_offset(next), 1000, false, &out),
                         0);
        assert_true(out.count > 0);
        for (uint32_t i = 0; i < out.count; i++) {
            const sl_polled_message_t *msg = &out.messages[i];
            assert_int_equal(msg->offset, next);
            int p, b, m;
            assert_true(decode_payload(msg->payload, msg->payload_len, &p, &b, &m));
            assert_true(p >= 0 && p < PRODUCERS && b >= 0 && b < BATCHES && m >= 0 &&
                        m < PER_BATCH);
            assert_false(seen[p][b][m]);
            seen[p][b][m] = true;
            assert_int_equal(msg->offset, prods[p].base[b] + (uint64_t)m);
            char want[PAYLOAD];
            payload_of(p, b, m, want);
            assert_memory_equal(msg->payload, want, PAYLOAD);
            next++;
        }
        assert_int_equal(out.current_offset, TOTAL - 1);
    }
}

static void test_concurrent_fsync_producers(void **state)
{
    (void)state;
    if (!th_start(&srv, NULL))
        skip();
    sl_client_t *admin = th_client(srv.port, "iggy", "iggy");
    assert_non_null(admin);
    assert_int_equal(sl_client_create_stream(admin, "gc", NULL), 0);
    sl_topic_options_t opt = {.set = SL_TOPIC_OPT_ENFORCE_FSYNC, .enforce_fsync = true};
    assert_int_equal(sl_client_create_topic(admin, sl_id_name("gc"), "fsync", 1, &opt, NULL), 0);

    static producer_t prods[PRODUCERS];
    poller_t po = {.client = th_client(srv.port, "iggy", "iggy")};
    assert_non_null(po.client);
    for (int i = 0; i < PRODUCERS; i++) {
        prods[i] = (producer_t){.index = i, .client = th_client(srv.port, "iggy", "iggy")};
        assert_non_null(prods[i].client);
    }
    pthread_t threads[PRODUCERS], watcher;
    assert_int_equal(pthread_create(&watcher, NULL, watch, &po), 0);
    for (int i = 0; i < PRODUCERS; i++)
        assert_int_equal(pthread_create(&threads[i], NULL, produce, &prods[i]), 0);
    for (int i = 0; i < PRODUCERS; i++)
        assert_int_equal(pthread_join(threads[i], NULL), 0);
    po.stop = 1;
    assert_int_equal(pthread_join(watcher, NULL), 0);
    for (int i = 0; i < PRODUCERS; i++) {
        assert_int_equal(prods[i].failed, 0);
        for (int b = 1; b < BATCHES; b++) /* a producer's batches in its order */
            assert_true(prods[i].base[b] > prods[i].base[b - 1]);
        sl_client_close(prods[i].client);
    }
    assert_int_equal(po.failed, 0);
    assert_true(po.polls > 0);
    sl_client_close(po.client);
    check_all(admin, prods);
    sl_client_close(admin);

    /* Acknowledged with enforce_fsync: all of it survives kill -9. */
    assert_true(th_stop(&srv, SIGKILL) >= 0);
    th_options_t again = {.data_dir = srv.data_dir};
    assert_true(th_start(&srv, &again));
    admin = th_client(srv.port, "iggy", "iggy");
    assert_non_null(admin);
    check_all(admin, prods);
    sl_client_close(admin);
    th_stop(&srv, SIGTERM);
    th_cleanup(&srv);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_concurrent_fsync_producers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
