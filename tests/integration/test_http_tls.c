/* HTTPS ([http.tls], http.md 9) against the real sluiced with test-time
 * certificates (certs.h) and libcurl: the API answers over TLS verified
 * against the test CA (ping, login, a command route, /metrics); plain HTTP
 * on the HTTPS port, an unknown CA and another name are refused; and a
 * missing file, a key that is not the leaf's or an empty path stop the
 * start with a message naming http.tls. */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
// clang-format off
#include <cmocka.h>
// clang-format on

#include "certs.h"
#include "harness.h"
#include "http_client.h"

static char dir[256];
static th_certs_t certs;
static th_server_t srv;

static void https_config(char *extra, size_t len, const char *cert, const char *key)
{
    snprintf(extra, len, "[http.tls]\nenabled = true\ncert_file = \"%s\"\nkey_file = \"%s\"\n",
             cert, key);
}

static int setup(void **state)
{
    (void)state;
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof(dir), "%s/sluice-https-XXXXXX", tmp ? tmp : "/tmp");
    assert_non_null(mkdtemp(dir));
    assert_true(th_certs_make(dir, &certs));
    char extra[1400];
    https_config(extra, sizeof(extra), certs.leaf, certs.leaf_key);
    th_options_t o = {.extra_config = extra};
    if (!th_start(&srv, &o))
        return -1;
    assert_int_not_equal(srv.http_port, 0);
    assert_non_null(strstr(th_log(&srv), " (HTTPS)"));
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    assert_int_equal(th_stop(&srv, SIGTERM), 0);
    th_cleanup(&srv);
    char cmd[300];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
    return 0;
}

static void https_client(th_http_t *h, const char *ca, const char *host)
{
    th_http_init(h, srv.http_port);
    h->ca_file = ca;
    h->host = host;
}

static void test_api_over_https(void **state)
{
    (void)state;
    th_http_t h;
    https_client(&h, certs.ca, "localhost");
    assert_int_equal(th_http_get(&h, "/ping"), 200);
    assert_string_equal(h.last.body, "pong");
    assert_true(th_http_login(&h, "iggy", "iggy"));
    assert_int_equal(th_http_post(&h, "/streams", "{\"name\":\"over-https\"}"), 200);
    assert_int_equal(th_http_get(&h, "/streams/over-https"), 200);
    assert_string_equal(th_json_str(h.last.json, "name"), "over-https");
    assert_int_equal(th_http_get(&h, "/metrics"), 200);
    assert_non_null(strstr(h.last.body, "process_resident_memory_bytes"));
    th_http_free(&h);
}

static void test_refused(void **state)
{
    (void)state;
    th_http_t h;
    /* Plain HTTP on the HTTPS port: no HTTP answer comes back. */
    th_http_init(&h, srv.http_port);
    assert_int_equal(th_http_get(&h, "/ping"), -1);
    th_http_free(&h);
    /* A CA that signed nothing here, and a name the leaf does not carry. */
    https_client(&h, certs.other_ca, "localhost");
    assert_int_equal(th_http_get(&h, "/ping"), -1);
    th_http_free(&h);
    https_client(&h, certs.ca, "not-localhost");
    assert_int_equal(th_http_get(&h, "/ping"), -1);
    th_http_free(&h);
    /* The door still serves. */
    https_client(&h, certs.ca, "localhost");
    assert_int_equal(th_http_get(&h, "/ping"), 200);
    th_http_free(&h);
}

/* Starts with the extra config and expects an exit with code and a line. */
static void start_fails(const char *extra, int code, const char *line)
{
    th_options_t o = {.extra_config = extra};
    th_server_t bad;
    int status = 0;
    assert_false(th_try_start(&bad, &o, &status));
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), code);
    if (!strstr(th_log(&bad), line))
        fail_msg("expected '%s' in:\n%s", line, th_log(&bad));
    th_cleanup(&bad);
}

static void test_bad_files_stop_the_start(void **state)
{
    (void)state;
    char extra[1400], none[400];
    snprintf(none, sizeof(none), "%s/none.pem", dir);
    https_config(extra, sizeof(extra), none, certs.leaf_key);
    start_fails(extra, 1, "http.tls: cannot load the certificate chain");
    https_config(extra, sizeof(extra), certs.leaf, certs.wrong_key);
    start_fails(extra, 1, "does not match the certificate");
    https_config(extra, sizeof(extra), "", certs.leaf_key);
    start_fails(extra, 2, "http.tls.cert_file and http.tls.key_file must both be set");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_api_over_https),
        cmocka_unit_test(test_refused),
        cmocka_unit_test(test_bad_files_stop_the_start),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
