/* The frame pool inside the real sluiced: sends whose frames partitions
 * keep in their journals and give back once flushed (plain and
 * enforce_fsync topics), every message polled back intact although frame
 * buffers are reused, and the shutdown line showing reuse, the idle cap
 * held and no buffer left out (sluiced aborts on one). */
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

#define BATCHES      60
#define PER_BATCH    20
#define PAYLOAD_SIZE 2000

/* Payload of message i: its number, then a byte pattern derived from it. */
static void fill_payload(uint8_t *p, uint32_t i)
{
    memcpy(p, &i, sizeof(i));
    for (uint32_t k = sizeof(i); k < PAYLOAD_SIZE; k++)
        p[k] = (uint8_t)(i * 31u + k);
}

static void send_all(sl_client_t *c, const char *topic)
{
    uint8_t(*payloads)[PAYLOAD_SIZE] = calloc(PER_BATCH, PAYLOAD_SIZE);
    sl_send_message_t msgs[PER_BATCH];
    assert_non_null(payloads);
    for (uint32_t b = 0; b < BATCHES; b++) {
        for (uint32_t j = 0; j < PER_BATCH; j++) {
            uint32_t i = b * PER_BATCH + j;
            fill_payload(payloads[j], i);
            msgs[j] = (sl_send_message_t){
                .id = {i + 1, 0}, .payload = payloads[j], .payload_len = PAYLOAD_SIZE};
        }
        sl_send_result_t r;
        assert_int_equal(sl_client_send_messages(c, sl_id_name("p"), sl_id_name(topic),
                                                 sl_partitioning_partition(0), msgs, PER_BATCH, &r),
                         0);
        assert_int_equal(r.base_offset, (uint64_t)b * PER_BATCH);
    }
    free(payloads);
}

static void poll_all(sl_client_t *c, const char *topic)
{
    uint8_t want[PAYLOAD_SIZE];
    uint64_t next = 0;
    for (int guard = 0; guard < BATCHES * PER_BATCH && next < BATCHES * PER_BATCH; guard++) {
        sl_polled_messages_t out;
        assert_int_equal(sl_client_poll_messages(c, sl_consumer_single(sl_id_num(1)),
                                                 sl_id_name("p"), sl_id_name(topic), 0,
                                                 sl_poll_offset(next), 100, false, &out),
                         0);
        assert_true(out.count > 0);
        for (uint32_t m = 0; m < out.count; m++) {
            const sl_polled_message_t *msg = &out.messages[m];
            assert_int_equal(msg->offset, next);
            fill_payload(want, (uint32_t)next);
            assert_int_equal(msg->payload_len, PAYLOAD_SIZE);
            assert_memory_equal(msg->payload, want, PAYLOAD_SIZE);
            next++;
        }
    }
    assert_int_equal(next, BATCHES * PER_BATCH);
}

static void test_frames_reused_and_returned(void **state)
{
    (void)state;
    th_server_t srv;
    /* A cap of 1 MiB: sixteen 64 KiB buffers (a 40 KB frame's class). */
    th_options_t opt = {.extra_config = "[message_bus]\nframe_pool_idle_max = \"1 MiB\"\n"};
    if (!th_start(&srv, &opt))
        skip();
    sl_client_t *c = th_client(srv.port, "iggy", "iggy");
    assert_non_null(c);
    assert_int_equal(sl_client_create_stream(c, "p", NULL), 0);
    assert_int_equal(sl_client_create_topic(c, sl_id_name("p"), "plain", 1, NULL, NULL), 0);
    sl_topic_options_t fsync = {.set = SL_TOPIC_OPT_ENFORCE_FSYNC, .enforce_fsync = true};
    assert_int_equal(sl_client_create_topic(c, sl_id_name("p"), "fsync", 1, &fsync, NULL), 0);
    /* plain: the journal keeps frames until 1 MiB of them is flushed, then
     * gives them back at once; fsync: every frame goes back after its sync. */
    send_all(c, "plain");
    send_all(c, "fsync");
    poll_all(c, "plain");
    poll_all(c, "fsync");
    sl_client_close(c);
    assert_int_equal(th_stop(&srv, SIGTERM), 0);

    const char *line = strstr(th_log(&srv), "frame pool: ");
    assert_non_null(line);
    unsigned long long hits, misses, small, dropped;
    unsigned idle, out;
    double idle_mib, cap_mib;
    assert_int_equal(sscanf(line,
                            "frame pool: %llu hits, %llu misses, %llu small, %llu dropped at the "
                            "cap; %u buffers idle (%lf of %lf MiB), %u still out",
                            &hits, &misses, &small, &dropped, &idle, &idle_mib, &cap_mib, &out),
                     8);
    assert_int_equal(out, 0);
    assert_true(hits > 0);
    assert_true(dropped > 0); /* more than 1 MiB came back at once */
    assert_true(idle_mib <= cap_mib);
    assert_true(cap_mib > 0.99 && cap_mib < 1.01);
    assert_int_equal(hits + misses, 2 * BATCHES); /* every send frame was a class buffer */
    th_cleanup(&srv);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_frames_reused_and_returned),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
