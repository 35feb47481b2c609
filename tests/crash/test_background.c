/* Work that left the loop thread (issue 10, docs/architecture.md "No request stalls the
 * loop"): the worker pool is held in the real sluiced (SLUICE_FAULT_FILE "hold workers"), so
 * what happens while a snapshot is being built or a deleted tree is being removed is seen in
 * order, not in time. A ping from another client is answered while a GetSnapshot waits for
 * the worker, and the snapshot is answered once the worker runs. A DeleteStream is answered
 * with the stream's directory already gone (moved into the trash); a kill -9 before the
 * trash is emptied loses nothing and brings nothing back: the restart empties the trash. */
#include <dirent.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
// clang-format off
#include <cmocka.h>
// clang-format on
#include <sluice/client.h>
#include <sluice/error.h>

#include "crash_util.h"
#include "harness.h"
#include "raw.h"
#include "wire/cmd_system.h"
#include "wire/command.h"

static th_server_t srv;
static char fault_file[512];

static void set_fault(const char *line)
{
    char tmp[600];
    snprintf(tmp, sizeof(tmp), "%s.new", fault_file);
    FILE *f = fopen(tmp, "w");
    assert_non_null(f);
    fprintf(f, "%s\n", line);
    assert_int_equal(fclose(f), 0);
    assert_int_equal(rename(tmp, fault_file), 0);
}

static void data_path(const char *rel, char *out, size_t cap)
{
    snprintf(out, cap, "%s/data/%s", srv.data_dir, rel);
}

static uint32_t entries(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    uint32_t n = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;)
        n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

static bool exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

/* Waits (bounded) for the trash to be emptied by the worker; what is asserted is that it
 * happens, not how soon. */
static bool trash_emptied(void)
{
    char trash[400];
    data_path("trash", trash, sizeof(trash));
    for (int i = 0; i < 600; i++) {
        if (entries(trash) == 0)
            return true;
        struct timespec ts = {0, 50 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    return false;
}

/* A GetSnapshot waits for the worker; the loop keeps answering everyone else. */
static void test_snapshot_off_the_loop(void **state)
{
    (void)state;
    raw_session_t *r = malloc(sizeof(*r));
    assert_non_null(r);
    raw_open(r, srv.port);
    raw_reply_t rep = raw_login(r, "iggy", "iggy");
    assert_int_equal(rep.status, 0);
    assert_int_equal(rep.result, 0);
    sl_client_t *other = cu_connect(&srv);

    set_fault("hold workers");
    assert_int_equal(sl_client_ping(other), 0); /* the hold is read before this request */
    sl_buf_t body;
    sl_buf_init(&body, 0);
    uint8_t types[] = {SL_SNAPSHOT_TEST, SL_SNAPSHOT_SERVER_CONFIG};
    sl_get_snapshot_request_t q = {.compression = SL_SNAPSHOT_DEFLATED,
                                   .types = sl_span(types, sizeof(types))};
    assert_int_equal(sl_get_snapshot_request_encode(&body, &q), 0);
    assert_true(raw_send(r, SL_OP_NON_REPLICATED, SL_CMD_GET_SNAPSHOT, r->request, r->session,
                         sl_buf_span(&body), false));
    /* The snapshot is queued behind the hold: every ping is answered meanwhile, and the
     * snapshot's connection has nothing to read. */
    for (int i = 0; i < 20; i++)
        assert_int_equal(sl_client_ping(other), 0);
    assert_false(th_readable(r->fd, 200));

    set_fault("");
    assert_int_equal(sl_client_ping(other), 0); /* releases the workers */
    rep = raw_receive(r, 30000);
    assert_false(rep.closed);
    assert_int_equal(rep.status, 0);
    assert_true(rep.payload.len > 4);
    assert_memory_equal(rep.payload.ptr, "PK", 2);
    sl_buf_free(&body);
    sl_client_close(other);
    raw_close(r);
    free(r);
}

/* A connection that closes while its snapshot is being built: the result is dropped. */
static void test_snapshot_client_gone(void **state)
{
    (void)state;
    raw_session_t *r = malloc(sizeof(*r));
    assert_non_null(r);
    raw_open(r, srv.port);
    assert_int_equal(raw_login(r, "iggy", "iggy").status, 0);
    sl_client_t *other = cu_connect(&srv);
    set_fault("hold workers");
    assert_int_equal(sl_client_ping(other), 0);
    sl_buf_t body;
    sl_buf_init(&body, 0);
    uint8_t types[] = {SL_SNAPSHOT_TEST};
    sl_get_snapshot_request_t q = {.compression = SL_SNAPSHOT_STORED,
                                   .types = sl_span(types, sizeof(types))};
    assert_int_equal(sl_get_snapshot_request_encode(&body, &q), 0);
    assert_true(raw_send(r, SL_OP_NON_REPLICATED, SL_CMD_GET_SNAPSHOT, r->request, r->session,
                         sl_buf_span(&body), false));
    assert_int_equal(sl_client_ping(other), 0);
    raw_close(r);
    assert_int_equal(sl_client_ping(other), 0);
    set_fault("");
    for (int i = 0; i < 5; i++)
        assert_int_equal(sl_client_ping(other), 0);
    sl_buf_free(&body);
    sl_client_close(other);
    free(r);
}

/* A DeleteStream of many partitions with data: answered once the tree is out of streams/
 * (one rename, made durable), removed by the worker; killed before that, the restart
 * removes it, and the stream stays deleted. */
static void test_delete_stream_killed_before_removal(void **state)
{
    (void)state;
    sl_client_t *c = cu_connect(&srv);
    const sl_stream_t *st;
    assert_int_equal(sl_client_create_stream(c, "doomed", &st), 0);
    uint32_t sid = st->id;
    sl_topic_options_t opt = {.set = SL_TOPIC_OPT_ENFORCE_FSYNC, .enforce_fsync = true};
    assert_int_equal(sl_client_create_topic(c, sl_id_name("doomed"), "t", 200, &opt, NULL), 0);
    for (uint32_t p = 0; p < 200; p += 20)
        cu_send_ok(c, sl_id_name("doomed"), sl_id_name("t"), p, 0xD0, 0, 3, 0);
    char stream[400], trash[400];
    snprintf(stream, sizeof(stream), "%s/data/streams/%u", srv.data_dir, sid);
    data_path("trash", trash, sizeof(trash));
    assert_true(exists(stream));

    set_fault("hold workers");
    assert_int_equal(sl_client_delete_stream(c, sl_id_name("doomed")), 0);
    assert_false(exists(stream)); /* gone from streams/ before the reply */
    assert_int_equal(entries(trash), 1); /* waiting for the held worker */
    assert_int_equal(sl_client_ping(c), 0);
    sl_client_close(c);

    int status = th_stop(&srv, SIGKILL);
    assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    set_fault("");
    th_options_t o = {.data_dir = srv.data_dir};
    assert_true(th_start(&srv, &o));
    assert_non_null(strstr(th_log(&srv), "trees left by deletes before this boot"));
    assert_true(trash_emptied());
    assert_false(exists(stream));
    c = cu_connect(&srv);
    const sl_stream_t *again = NULL;
    assert_int_equal(sl_client_get_stream(c, sl_id_name("doomed"), &again), 0);
    assert_null(again); /* not found: an empty reply */
    /* A new stream of that name starts empty. */
    assert_int_equal(sl_client_create_stream(c, "doomed", &again), 0);
    assert_int_equal(sl_client_create_topic(c, sl_id_name("doomed"), "t", 1, NULL, NULL), 0);
    static uint64_t numbers[16];
    assert_int_equal(
        cu_read_all(c, sl_id_name("doomed"), sl_id_name("t"), 0, 0xD0, numbers, 16), 0);
    sl_client_close(c);
}

static int setup(void **state)
{
    (void)state;
    const char *tmp = getenv("TMPDIR");
    snprintf(fault_file, sizeof(fault_file), "%s/sluice-faults-XXXXXX", tmp ? tmp : "/tmp");
    int fd = mkstemp(fault_file);
    if (fd < 0)
        return -1;
    close(fd);
    /* Inherited by sluiced; this test process is the only one that sets it. */
    setenv("SLUICE_FAULT_FILE", fault_file, 1);
    if (!th_start(&srv, NULL)) {
        unlink(fault_file);
        exit(77);
    }
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    set_fault("");
    cu_stop_clean(&srv);
    th_cleanup(&srv);
    unlink(fault_file);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_snapshot_off_the_loop),
        cmocka_unit_test(test_snapshot_client_gone),
        cmocka_unit_test(test_delete_stream_killed_before_removal),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
