/* Start-up of the real sluiced: the listener is bound before the data
 * directory is touched, one process owns a data directory at a time (a
 * second server is refused without writing anything, a SIGKILLed owner
 * leaves no stale lock), the root user's created_at is the time it was
 * made, and the log tells a fresh metadata directory from a recovered one. */
#define _GNU_SOURCE /* nftw and its FTW_* flags */
#include <arpa/inet.h>
#include <ftw.h>
#include <errno.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
// clang-format off
#include <cmocka.h>
// clang-format on

#include <sluice/client.h>

#include "harness.h"

#define OK(expr) assert_int_equal((expr), 0)

/* Starts sluiced or ends the program as skipped (no io_uring here). */
static void start(th_server_t *srv, const th_options_t *opt)
{
    if (!th_start(srv, opt)) {
        fprintf(stderr, "io_uring is unavailable here: skipped\n");
        exit(77);
    }
}

/* A sluiced that must refuse to start: its exit status is 1 (never 77,
 * which ctest would count as skipped) and it never listened. */
static void assert_refused(th_server_t *srv, const th_options_t *opt)
{
    int status = 0;
    assert_false(th_try_start(srv, opt, &status));
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 1);
    assert_null(strstr(th_log(srv), "listening on"));
}

static bool exists(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0;
}

/* --- the listener comes first ------------------------------------------------------------ */

/* A listening socket on 127.0.0.1 and an ephemeral port; returns the fd. */
static int take_port(uint16_t *port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    OK(bind(fd, (struct sockaddr *)&a, sizeof(a)));
    OK(listen(fd, 1));
    socklen_t len = sizeof(a);
    OK(getsockname(fd, (struct sockaddr *)&a, &len));
    *port = ntohs(a.sin_port);
    return fd;
}

/* Port taken: exit 1 naming the address and the cause, and the data
 * directory was never created (so no root user either). */
static void test_port_taken_touches_nothing(void **state)
{
    (void)state;
    uint16_t port;
    int taken = take_port(&port);
    char address[64];
    snprintf(address, sizeof(address), "IGGY_TCP_ADDRESS=127.0.0.1:%u", port);
    const char *env[] = {address, NULL};
    th_server_t srv;
    th_options_t opt = {.env = env};
    assert_refused(&srv, &opt);
    char want[128];
    snprintf(want, sizeof(want), "cannot listen on 127.0.0.1:%u: Address already in use", port);
    const char *log = th_log(&srv);
    if (!strstr(log, want))
        fail_msg("expected \"%s\" in the log:\n%s", want, log);
    assert_null(strstr(log, "io_uring"));
    char data[320];
    snprintf(data, sizeof(data), "%s/data", srv.data_dir);
    assert_false(exists(data));
    close(taken);
    th_cleanup(&srv);
}

/* A SIGKILLed server restarted at once on its own port: its listening
 * socket outlives the process for some milliseconds (io_uring lets go of
 * it from a kernel worker), and the new server waits for it instead of
 * failing. Five rounds, each with a logged-in client connected. */
static void test_restart_at_once_on_the_same_port(void **state)
{
    (void)state;
    th_server_t srv;
    start(&srv, NULL);
    uint16_t port = srv.port;
    char address[64];
    snprintf(address, sizeof(address), "IGGY_TCP_ADDRESS=127.0.0.1:%u", port);
    const char *env[] = {address, NULL};
    for (int round = 0; round < 5; round++) {
        sl_client_t *c = th_client(srv.port, "iggy", "iggy");
        assert_non_null(c);
        assert_int_equal(th_stop(&srv, SIGKILL), SIGKILL);
        th_options_t again = {.data_dir = srv.data_dir, .env = env};
        int status = 0;
        if (!th_try_start(&srv, &again, &status))
            fail_msg("round %d: the restart exited (status %d):\n%s", round, status, th_log(&srv));
        assert_int_equal(srv.port, port);
        sl_client_close(c);
    }
    assert_int_equal(th_stop(&srv, SIGTERM), 0);
    th_cleanup(&srv);
}

/* --- one server per data directory ------------------------------------------------------ */

/* What the data directory holds, one line per entry: path, kind, size and
 * mtime to the nanosecond, sorted. Two equal listings mean nothing was
 * created, removed, resized or written in between. */
enum { TREE_MAX = 4096 };
static char *tree_lines[TREE_MAX];
static size_t tree_count;

static int tree_visit(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)type;
    (void)ftw;
    assert_true(tree_count < TREE_MAX);
    char line[1024];
    snprintf(line, sizeof(line), "%s %o %lld %lld.%09ld", path, (unsigned)st->st_mode,
             (long long)st->st_size, (long long)st->st_mtim.tv_sec, st->st_mtim.tv_nsec);
    tree_lines[tree_count] = strdup(line);
    assert_non_null(tree_lines[tree_count]);
    tree_count++;
    return 0;
}

static int compare_lines(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The listing as one string; the caller frees it. */
static char *tree_listing(const char *root)
{
    tree_count = 0;
    OK(nftw(root, tree_visit, 16, FTW_PHYS));
    qsort(tree_lines, tree_count, sizeof(tree_lines[0]), compare_lines);
    size_t len = 1;
    for (size_t i = 0; i < tree_count; i++)
        len += strlen(tree_lines[i]) + 1;
    char *out = calloc(1, len);
    assert_non_null(out);
    for (size_t i = 0; i < tree_count; i++) {
        strcat(out, tree_lines[i]);
        strcat(out, "\n");
        free(tree_lines[i]);
    }
    return out;
}

/* Sends messages "m-<first>".. "m-<first + count - 1>" to partition 0 of
 * s/t, one acknowledged batch each. */
static void send_some(sl_client_t *c, uint32_t first, uint32_t count)
{
    for (uint32_t i = first; i < first + count; i++) {
        char payload[32];
        int len = snprintf(payload, sizeof(payload), "m-%u", i);
        sl_send_message_t m = {.id = {i + 1, 0}, .payload = payload, .payload_len = (size_t)len};
        sl_send_result_t r;
        OK(sl_client_send_messages(c, sl_id_name("s"), sl_id_name("t"),
                                   sl_partitioning_partition(0), &m, 1, &r));
        assert_true(r.confirmed);
    }
}

static void assert_messages(sl_client_t *c, uint32_t count)
{
    sl_polled_messages_t out;
    OK(sl_client_poll_messages(c, sl_consumer_single(sl_id_num(1)), sl_id_name("s"),
                               sl_id_name("t"), 0, sl_poll_offset(0), count + 10, false, &out));
    assert_int_equal(out.count, count);
    for (uint32_t i = 0; i < count; i++) {
        char want[32];
        snprintf(want, sizeof(want), "m-%u", i);
        assert_int_equal(out.messages[i].payload_len, strlen(want));
        assert_memory_equal(out.messages[i].payload, want, strlen(want));
    }
}

/* A second sluiced on the data directory of a running one, on another port:
 * refused with the holder's pid and exit 1, and the directory tree is
 * exactly as it was. The first keeps serving; once it is SIGKILLed the
 * directory starts again (no stale lock) with every acknowledged message. */
static void test_second_server_on_a_data_dir_is_refused(void **state)
{
    (void)state;
    th_server_t first;
    start(&first, NULL);
    sl_client_t *c = th_client(first.port, "iggy", "iggy");
    assert_non_null(c);
    OK(sl_client_create_stream(c, "s", NULL));
    sl_topic_options_t fsync = {.set = SL_TOPIC_OPT_ENFORCE_FSYNC, .enforce_fsync = true};
    OK(sl_client_create_topic(c, sl_id_name("s"), "t", 1, &fsync, NULL));
    send_some(c, 0, 10);

    char data[320], path_env[340];
    snprintf(data, sizeof(data), "%s/data", first.data_dir);
    snprintf(path_env, sizeof(path_env), "IGGY_SYSTEM_PATH=%s", data);
    char *before = tree_listing(data);
    const char *env[] = {path_env, NULL};
    th_server_t second;
    th_options_t opt = {.env = env};
    assert_refused(&second, &opt);
    char want[400];
    snprintf(want, sizeof(want), "data directory %s is in use by another sluiced (pid %ld", data,
             (long)first.pid);
    const char *log = th_log(&second);
    if (!strstr(log, want))
        fail_msg("expected \"%s\" in the log:\n%s", want, log);
    char *after = tree_listing(data);
    assert_string_equal(before, after);
    free(before);
    free(after);
    th_cleanup(&second);

    /* The owner never noticed. */
    assert_messages(c, 10);
    send_some(c, 10, 5);
    sl_client_close(c);
    assert_int_equal(th_stop(&first, SIGKILL), SIGKILL);
    th_options_t again = {.data_dir = first.data_dir};
    start(&first, &again);
    c = th_client(first.port, "iggy", "iggy");
    assert_non_null(c);
    assert_messages(c, 15);
    sl_client_close(c);
    assert_int_equal(th_stop(&first, SIGTERM), 0);
    th_cleanup(&first);
}

/* --- the root user's created_at ---------------------------------------------------------- */

static uint64_t now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* The root user's created_at as GetUser and GetUsers report it (equal). */
static uint64_t root_created_at(const th_server_t *srv)
{
    sl_client_t *c = th_client(srv->port, "iggy", "iggy");
    assert_non_null(c);
    const sl_user_t *u;
    OK(sl_client_get_user(c, sl_id_num(0), &u));
    assert_non_null(u);
    uint64_t created = u->created_at_us;
    const sl_user_t *items;
    uint32_t n;
    OK(sl_client_get_users(c, &items, &n));
    bool seen = false;
    for (uint32_t i = 0; i < n; i++) {
        if (items[i].id == 0) {
            assert_int_equal(items[i].created_at_us, created);
            seen = true;
        }
    }
    assert_true(seen);
    /* Enough metadata operations for a checkpoint (interval 4): the
     * snapshot carries the root user too. */
    for (int i = 0; i < 4; i++) {
        char name[32];
        snprintf(name, sizeof(name), "s-%llu-%d", (unsigned long long)now_us(), i);
        OK(sl_client_create_stream(c, name, NULL));
    }
    sl_client_close(c);
    return created;
}

/* The root user is created at first start, and says so: its created_at lies
 * between the test's clock before the start and after it, and stays the
 * same after a SIGTERM restart (journal replay), a SIGKILL restart and a
 * restart from a snapshot. */
static void test_root_created_at_is_its_creation_time(void **state)
{
    (void)state;
    th_server_t srv;
    th_options_t opt = {.extra_config = "[metadata]\ncheckpoint_interval = 4\n"};
    uint64_t before = now_us();
    start(&srv, &opt);
    uint64_t after = now_us();
    uint64_t created = root_created_at(&srv);
    if (created < before || created > after)
        fail_msg("root created_at %llu is not between %llu and %llu", (unsigned long long)created,
                 (unsigned long long)before, (unsigned long long)after);
    static const int stops[] = {SIGTERM, SIGKILL, SIGTERM};
    for (size_t i = 0; i < sizeof(stops) / sizeof(stops[0]); i++) {
        th_stop(&srv, stops[i]);
        th_options_t again = {.data_dir = srv.data_dir};
        start(&srv, &again);
        assert_int_equal(root_created_at(&srv), created);
    }
    assert_int_equal(th_stop(&srv, SIGTERM), 0);
    th_cleanup(&srv);
}

/* --- what the log says about the metadata ------------------------------------------------ */

/* "fresh" only when the data directory had no metadata; a restart before
 * any checkpoint (every op still in the journal) is "recovered". */
static void test_log_tells_fresh_from_recovered(void **state)
{
    (void)state;
    th_server_t srv;
    start(&srv, NULL);
    const char *log = th_log(&srv);
    assert_non_null(strstr(log, "metadata: fresh, checkpoint op 0, 0 entries replayed"));
    assert_null(strstr(log, "metadata: recovered"));
    sl_client_t *c = th_client(srv.port, "iggy", "iggy");
    assert_non_null(c);
    OK(sl_client_create_stream(c, "one", NULL));
    sl_client_close(c);
    assert_int_equal(th_stop(&srv, SIGTERM), 0);

    th_options_t again = {.data_dir = srv.data_dir};
    start(&srv, &again);
    log = th_log(&srv);
    /* root, a login, a stream, a logout: at least four journaled entries. */
    const char *line = strstr(log, "metadata: recovered, checkpoint op 0, ");
    if (!line)
        fail_msg("no \"metadata: recovered\" line in:\n%s", log);
    assert_true(atoi(line + strlen("metadata: recovered, checkpoint op 0, ")) >= 4);
    assert_null(strstr(log, "metadata: fresh"));
    assert_int_equal(th_stop(&srv, SIGTERM), 0);
    th_cleanup(&srv);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_port_taken_touches_nothing),
        cmocka_unit_test(test_restart_at_once_on_the_same_port),
        cmocka_unit_test(test_second_server_on_a_data_dir_is_refused),
        cmocka_unit_test(test_root_created_at_is_its_creation_time),
        cmocka_unit_test(test_log_tells_fresh_from_recovered),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
