/* `make install` as a user meets it: install_check.sh runs the staged-install
 * recipe of docs/client.md as written there (`cmake --install` into a
 * temporary DESTDIR, install_hello.c compiled with the staged pkg-config file,
 * headers and library), runs the program against the sluiced started here,
 * runs the staged sluice, sluiced and sluice-bench, and checks the headers,
 * the exports and the static library. */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
// clang-format off
#include <cmocka.h>
// clang-format on

#include "harness.h"

static const char *env(const char *name)
{
    const char *value = getenv(name);
    if (value == NULL) {
        fprintf(stderr, "test_install: %s is not set (run through ctest)\n", name);
        exit(77);
    }
    return value;
}

static void test_installed_library(void **state)
{
    (void)state;
    th_server_t srv;
    if (!th_start(&srv, NULL))
        exit(77);
    char cmd[4096];
    snprintf(cmd, sizeof(cmd), "sh '%s' '%s' %u '%s' '%s' '%s'", env("SLUICE_INSTALL_SCRIPT"),
             env("SLUICE_BUILD_DIR"), srv.port, env("SLUICE_INSTALL_HELLO"), env("SLUICE_CC"),
             env("SLUICE_TEST_CFLAGS"));
    int status = system(cmd);
    th_stop(&srv, SIGTERM);
    th_cleanup(&srv);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_installed_library),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
