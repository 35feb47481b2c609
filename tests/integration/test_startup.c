/* Start-up of the real sluiced: the listener is bound before the data
 * directory is touched, one process owns a data directory at a time (a
 * second server is refused without writing anything, a SIGKILLed owner
 * leaves no stale lock), the root user's created_at is the time it was
 * made, and the log tells a fresh metadata directory from a recovered one. */
#include <arpa/inet.h>
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
#include <unistd.h>
// clang-format off
#include <cmocka.h>
// clang-format on

#include <sluice/client.h>

#include "harness.h"

#define OK(expr) assert_int_equal((expr), 0)

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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_port_taken_touches_nothing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
