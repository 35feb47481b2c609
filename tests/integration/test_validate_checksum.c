/* system.partition.validate_checksum against the real sluiced: a payload byte
 * changed on disk (the stored checksums left as they were) stops a poll at
 * the damaged batch with the setting on (the default), and is served as it
 * is on disk with the setting off, where libsluice's own check of the polled
 * frames finds it (docs/configuration.md). Before the fix the setting was
 * read and never reached the partitions. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <ftw.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
// clang-format off
#include <cmocka.h>
// clang-format on

#include <sluice/client.h>
#include <sluice/error.h>

#include "harness.h"

#define OK(expr) assert_int_equal((expr), 0)

#define OFF_CONFIG "[system.partition]\nvalidate_checksum = false\n"
#define PAYLOAD    "validate-checksum-payload-%u"

/* sluiced with the extra settings, over data_dir when it is set (a restart). */
static void start(th_server_t *srv, const char *config, const char *data_dir)
{
    char dir[256] = "";
    if (data_dir)
        snprintf(dir, sizeof(dir), "%s", data_dir);
    th_options_t opt = {.extra_config = config, .data_dir = data_dir ? dir : NULL};
    if (!th_start(srv, &opt))
        exit(77); /* io_uring unavailable here */
}

static char found_log[512];

static int visit(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)ftw;
    size_t len = strlen(path);
    if (type == FTW_F && st->st_size > 0 && len > 4 && strcmp(path + len - 4, ".log") == 0 &&
        strstr(path, "/partitions/") && !strstr(path, "sluiced.log"))
        snprintf(found_log, sizeof(found_log), "%s", path);
    return 0;
}

/* Flips one byte inside the first message's payload in the partition's .log. */
static void flip_payload_byte(const th_server_t *srv)
{
    found_log[0] = '\0';
    assert_int_equal(nftw(srv->data_dir, visit, 16, FTW_PHYS), 0);
    assert_true(found_log[0] != '\0');
    int fd = open(found_log, O_RDWR);
    assert_true(fd >= 0);
    static uint8_t buf[1 << 16];
    ssize_t n = pread(fd, buf, sizeof(buf), 0);
    assert_true(n > 0);
    char first[64];
    snprintf(first, sizeof(first), PAYLOAD, 0u);
    uint8_t *at = memmem(buf, (size_t)n, first, strlen(first));
    assert_non_null(at);
    at[0] ^= 0x20; /* 'v' -> 'V' */
    assert_int_equal(pwrite(fd, at, 1, at - buf), 1);
    close(fd);
}

static void test_setting_decides_what_a_damaged_batch_gives(void **state)
{
    (void)state;
    th_server_t srv;
    start(&srv, NULL, NULL);
    sl_client_t *c = th_client(srv.port, "iggy", "iggy");
    assert_non_null(c);
    OK(sl_client_create_stream(c, "s", NULL));
    /* enforce_fsync: each send is its own flush and index entry, so the boot's walk of the
     * tail starts at the second batch and leaves the damaged first one to the polls. */
    sl_topic_options_t o = {.set = SL_TOPIC_OPT_ENFORCE_FSYNC, .enforce_fsync = true};
    OK(sl_client_create_topic(c, sl_id_name("s"), "t", 1, &o, NULL));
    char payload[2][64];
    sl_send_message_t m[2];
    for (uint32_t i = 0; i < 2; i++) {
        snprintf(payload[i], sizeof(payload[i]), PAYLOAD, i);
        m[i] = (sl_send_message_t){
            .id = {i + 1, 0}, .payload = payload[i], .payload_len = strlen(payload[i])};
    }
    for (uint32_t i = 0; i < 2; i++)
        OK(sl_client_send_messages(c, sl_id_name("s"), sl_id_name("t"),
                                   sl_partitioning_partition(0), &m[i], 1, NULL));
    sl_client_close(c);
    assert_int_equal(th_stop(&srv, SIGTERM), 0);
    flip_payload_byte(&srv);

    for (int run = 0; run < 2; run++) {
        bool off = run == 1;
        start(&srv, off ? OFF_CONFIG : NULL, srv.data_dir);
        c = th_client(srv.port, "iggy", "iggy");
        assert_non_null(c);
        sl_polled_messages_t out;
        int rc = sl_client_poll_messages(c, sl_consumer_single(sl_id_num(1)), sl_id_name("s"),
                                         sl_id_name("t"), 0, sl_poll_offset(0), 2, false, &out);
        if (!off) {
            /* Verified: the walk stops before the damaged batch; the next one is intact. */
            OK(rc);
            assert_int_equal(out.count, 0);
        } else {
            /* Not verified: the server sends the bytes on disk, damage included, and it is
             * libsluice's own check of each polled frame that finds it. */
            assert_int_equal(rc, -SL_ERR_INVALID_MESSAGE_CHECKSUM);
        }
        OK(sl_client_poll_messages(c, sl_consumer_single(sl_id_num(1)), sl_id_name("s"),
                                   sl_id_name("t"), 0, sl_poll_offset(1), 1, false, &out));
        assert_int_equal(out.count, 1);
        assert_memory_equal(out.messages[0].payload, payload[1], strlen(payload[1]));
        sl_client_close(c);
        assert_int_equal(th_stop(&srv, SIGTERM), 0);
    }
    th_cleanup(&srv);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_setting_decides_what_a_damaged_batch_gives),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
