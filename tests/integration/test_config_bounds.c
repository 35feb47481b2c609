/* Settings' bounds as the real sluiced applies them at start, one test per
 * setting (docs/configuration.md): a value outside a setting's range, given
 * in the file or in its IGGY_ variable, makes sluiced exit 2 before it
 * listens or creates its data directory, with a message that names the
 * setting, the value and the range; the values at either end of the range
 * start a server that serves. The table's generic check is unit-tested in
 * tests/unit/test_config.c; these name the settings that had no test of a
 * bad value of their own.
 *   - system.encryption.tail_cache_max: 0 B .. 64 GiB (0 turns the
 *     plaintext tail off);
 *   - data_maintenance.messages.interval: 100 ms .. 1 d. */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
// clang-format off
#include <cmocka.h>
// clang-format on

#include <sluice/client.h>

#include "harness.h"

#define OK(expr) assert_int_equal((expr), 0)

/* A key (base64 of 32 bytes): the tail exists only with encryption on. */
#define ENCRYPTED                                                                                  \
    "[system.encryption]\nenabled = true\nkey = "                                                  \
    "\"AQIDBAUGBwgJCgsMDQ4PEBESExQVFhcYGRobHB0eHyA=\"\n"
#define MAINTENANCE "[data_maintenance.messages]\n"

/* sluiced given config (appended to the harness's file) and env must exit 2
 * (a configuration error, never 77 which ctest counts as skipped) with why
 * in its output, without listening or creating its data directory. */
static void assert_refused(const char *config, const char *const *env, const char *why)
{
    th_server_t srv;
    th_options_t opt = {.extra_config = config, .env = env};
    int status = 0;
    bool started = th_try_start(&srv, &opt, &status);
    if (started)
        th_stop(&srv, SIGKILL);
    if (started || !WIFEXITED(status) || WEXITSTATUS(status) != 2)
        fail_msg("expected exit 2 for:\n%s\nstatus %d, log:\n%s", config, status, th_log(&srv));
    const char *log = th_log(&srv);
    if (!strstr(log, why))
        fail_msg("expected \"%s\" in the log:\n%s", why, log);
    assert_null(strstr(log, "listening on"));
    char data[320];
    struct stat st;
    snprintf(data, sizeof(data), "%s/data", srv.data_dir);
    assert_int_not_equal(lstat(data, &st), 0);
    th_cleanup(&srv);
}

/* sluiced given config and env starts, and a message sent to a new topic is
 * polled back. */
static void assert_serves(const char *config, const char *const *env)
{
    th_server_t srv;
    th_options_t opt = {.extra_config = config, .env = env};
    int status = 0;
    if (!th_try_start(&srv, &opt, &status)) {
        if (WIFEXITED(status) && WEXITSTATUS(status) == 77) {
            fprintf(stderr, "io_uring is unavailable here: skipped\n");
            exit(77);
        }
        fail_msg("sluiced refused:\n%s\nstatus %d, log:\n%s", config, status, th_log(&srv));
    }
    sl_client_t *c = th_client(srv.port, "iggy", "iggy");
    assert_non_null(c);
    OK(sl_client_create_stream(c, "s", NULL));
    OK(sl_client_create_topic(c, sl_id_name("s"), "t", 1, NULL, NULL));
    static const char payload[] = "at the edge";
    sl_send_message_t m = {.payload = payload, .payload_len = sizeof(payload) - 1};
    OK(sl_client_send_messages(c, sl_id_name("s"), sl_id_name("t"), sl_partitioning_partition(0),
                               &m, 1, NULL));
    sl_polled_messages_t out;
    OK(sl_client_poll_messages(c, sl_consumer_single(sl_id_num(1)), sl_id_name("s"),
                               sl_id_name("t"), 0, sl_poll_offset(0), 1, false, &out));
    assert_int_equal(out.count, 1);
    assert_int_equal(out.messages[0].payload_len, sizeof(payload) - 1);
    assert_memory_equal(out.messages[0].payload, payload, sizeof(payload) - 1);
    sl_client_close(c);
    assert_int_equal(th_stop(&srv, SIGTERM), 0);
    th_cleanup(&srv);
}

static void test_tail_cache_max_out_of_range_refused(void **state)
{
    (void)state;
    assert_refused(ENCRYPTED "tail_cache_max = \"65 GiB\"\n", NULL,
                   "system.encryption.tail_cache_max: 65 GiB is outside the allowed range "
                   "0 B .. 64 GiB");
    /* One byte past the end. */
    assert_refused(ENCRYPTED "tail_cache_max = 68719476737\n", NULL,
                   "system.encryption.tail_cache_max: 68719476737 B is outside the allowed range "
                   "0 B .. 64 GiB");
    assert_refused(ENCRYPTED "tail_cache_max = -1\n", NULL,
                   "system.encryption.tail_cache_max: must not be negative");
    assert_refused(ENCRYPTED "tail_cache_max = \"lots\"\n", NULL,
                   "system.encryption.tail_cache_max: expected a whole number");
    /* Past 64 bits. */
    assert_refused(ENCRYPTED "tail_cache_max = \"16777216 TiB\"\n", NULL,
                   "system.encryption.tail_cache_max: size too large");
    /* Encryption off: the value is still checked, not ignored. */
    assert_refused("[system.encryption]\ntail_cache_max = \"1 TiB\"\n", NULL,
                   "system.encryption.tail_cache_max: 1 TiB is outside the allowed range");
    const char *const env[] = {"IGGY_SYSTEM_ENCRYPTION_TAIL_CACHE_MAX=65GiB", NULL};
    assert_refused(ENCRYPTED, env,
                   "IGGY_SYSTEM_ENCRYPTION_TAIL_CACHE_MAX=\"65GiB\" "
                   "(system.encryption.tail_cache_max): 65 GiB is outside the allowed range "
                   "0 B .. 64 GiB");
    const char *const empty[] = {"IGGY_SYSTEM_ENCRYPTION_TAIL_CACHE_MAX=", NULL};
    assert_refused(ENCRYPTED, empty, "(system.encryption.tail_cache_max): empty size");
}

static void test_tail_cache_max_edges_serve(void **state)
{
    (void)state;
    assert_serves(ENCRYPTED "tail_cache_max = 0\n", NULL);
    assert_serves(ENCRYPTED "tail_cache_max = \"64 GiB\"\n", NULL);
    const char *const env[] = {"IGGY_SYSTEM_ENCRYPTION_TAIL_CACHE_MAX=68719476736", NULL};
    assert_serves(ENCRYPTED, env);
}

static void test_maintenance_interval_out_of_range_refused(void **state)
{
    (void)state;
    assert_refused(MAINTENANCE "interval = \"99 ms\"\n", NULL,
                   "data_maintenance.messages.interval: 99 ms is outside the allowed range "
                   "100 ms .. 1 d");
    /* A microsecond either side of the range. */
    assert_refused(MAINTENANCE "interval = \"99999 us\"\n", NULL,
                   "data_maintenance.messages.interval: 99 ms 999 us is outside the allowed "
                   "range 100 ms .. 1 d");
    assert_refused(MAINTENANCE "interval = \"1 d 1 us\"\n", NULL,
                   "data_maintenance.messages.interval: 1 d 1 us is outside the allowed range "
                   "100 ms .. 1 d");
    assert_refused(MAINTENANCE "interval = \"0 s\"\n", NULL,
                   "data_maintenance.messages.interval: 0 s is outside the allowed range");
    assert_refused(MAINTENANCE "interval = \"1 w\"\n", NULL,
                   "data_maintenance.messages.interval: 7 d is outside the allowed range");
    assert_refused(MAINTENANCE "interval = \"-1 s\"\n", NULL,
                   "data_maintenance.messages.interval: expected a number");
    assert_refused(MAINTENANCE "interval = 60\n", NULL,
                   "data_maintenance.messages.interval: expected a duration string such as "
                   "\"30 s\", got an integer");
    const char *const env[] = {"IGGY_DATA_MAINTENANCE_MESSAGES_INTERVAL=50 ms", NULL};
    assert_refused(NULL, env,
                   "IGGY_DATA_MAINTENANCE_MESSAGES_INTERVAL=\"50 ms\" "
                   "(data_maintenance.messages.interval): 50 ms is outside the allowed range "
                   "100 ms .. 1 d");
    const char *const soon[] = {"IGGY_DATA_MAINTENANCE_MESSAGES_INTERVAL=soon", NULL};
    assert_refused(NULL, soon, "(data_maintenance.messages.interval): expected a number");
}

static void test_maintenance_interval_edges_serve(void **state)
{
    (void)state;
    assert_serves(MAINTENANCE "interval = \"100 ms\"\n", NULL);
    assert_serves(MAINTENANCE "interval = \"1 d\"\n", NULL);
    const char *const env[] = {"IGGY_DATA_MAINTENANCE_MESSAGES_INTERVAL=24 h", NULL};
    assert_serves(NULL, env);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tail_cache_max_out_of_range_refused),
        cmocka_unit_test(test_tail_cache_max_edges_serve),
        cmocka_unit_test(test_maintenance_interval_out_of_range_refused),
        cmocka_unit_test(test_maintenance_interval_edges_serve),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
