/* The slow-disk fault of the test-only control file (server/test_faults.h): "slow <call> ...
 * delay=<ms>" makes the real sluiced's matching calls sleep that long and then succeed. A send
 * to an enforce_fsync topic waits for its fdatasync, so with "slow fdatasync .log delay=400" it
 * takes at least 400 ms and still succeeds, which it cannot without the delay; the messages are
 * all there afterwards. Only lower bounds are asserted (a loaded machine is only slower). A
 * "slow" line without a delay, or with one over a minute, is refused and arms nothing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
// clang-format off
#include <cmocka.h>
// clang-format on
#include <sluice/client.h>

#include "base/clock.h"
#include "crash_util.h"
#include "harness.h"

static th_server_t srv;
static char fault_file[512];

/* Each request frame re-reads the control file: a ping applies a line before what follows. */
static void apply(sl_client_t *c, const char *line)
{
    cu_set_fault(fault_file, line);
    assert_int_equal(sl_client_ping(c), 0);
}

static void test_slow_fdatasync_delays_durable_sends(void **state)
{
    (void)state;
    sl_client_t *c = cu_connect(&srv);
    assert_int_equal(sl_client_create_stream(c, "slow", NULL), 0);
    sl_topic_options_t opt = {.set = SL_TOPIC_OPT_ENFORCE_FSYNC, .enforce_fsync = true};
    assert_int_equal(sl_client_create_topic(c, sl_id_name("slow"), "t", 1, &opt, NULL), 0);
    apply(c, "slow fdatasync .log delay=400");
    assert_non_null(strstr(th_log(&srv), "test faults: armed 'slow fdatasync .log delay=400'"));
    for (uint64_t k = 0; k < 3; k++) {
        uint64_t t0 = sl_clock_monotonic_ns();
        cu_send_ok(c, sl_id_name("slow"), sl_id_name("t"), 0, 7, k * 4, 4, k * 4);
        assert_true(sl_clock_monotonic_ns() - t0 >= 400u * 1000000u);
    }
    apply(c, "");
    uint64_t numbers[16];
    assert_int_equal(cu_read_all(c, sl_id_name("slow"), sl_id_name("t"), 0, 7, numbers, 16), 12);
    for (uint64_t o = 0; o < 12; o++)
        assert_int_equal(numbers[o], o);
    sl_client_close(c);
}

static void test_bad_slow_lines_arm_nothing(void **state)
{
    (void)state;
    sl_client_t *c = cu_connect(&srv);
    apply(c, "slow syncs");
    assert_non_null(strstr(th_log(&srv), "test faults: cannot parse 'slow syncs'"));
    apply(c, "slow syncs delay=60001");
    assert_non_null(strstr(th_log(&srv), "test faults: cannot parse 'slow syncs delay=60001'"));
    apply(c, "slow syncs delay=x");
    assert_non_null(strstr(th_log(&srv), "test faults: cannot parse 'slow syncs delay=x'"));
    apply(c, "");
    sl_client_close(c);
}

static int setup(void **state)
{
    (void)state;
    return cu_start_with_faults(&srv, NULL, fault_file, sizeof(fault_file)) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    cu_stop_with_faults(&srv, fault_file);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_slow_fdatasync_delays_durable_sends),
        cmocka_unit_test(test_bad_slow_lines_arm_nothing),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
