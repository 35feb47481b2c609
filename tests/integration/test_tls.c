/* TLS on the TCP port against the real sluiced, with certificates made at
 * test time (certs.h): the certificate choice at start (files, self-signed,
 * a missing file refused), what the client refuses (a wrong name, an
 * expired leaf, an unknown CA, an address where the leaf names a host), and
 * hostile handshakes (garbage, plaintext frames, a stalled handshake, a half
 * handshake then a disconnect): each closes its connection, never the
 * server, and never holds up the others. A large poll checks replies
 * encoded in several chunks. */
#include <errno.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <setjmp.h>
#include <signal.h>
#include <sys/wait.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
// clang-format off
#include <cmocka.h>
// clang-format on

#include <sluice/client.h>

#include "certs.h"
#include "harness.h"

#define OK(expr) assert_int_equal((expr), 0)

static char dir[256];
static th_certs_t certs;

static void start_with(th_server_t *srv, const char *cert, const char *key, bool self_signed)
{
    char extra[1400];
    snprintf(extra, sizeof(extra),
             "[tcp.tls]\nenabled = true\nself_signed = %s\ncert_file = \"%s\"\nkey_file = \"%s\"\n"
             "[message_bus]\nhandshake_grace = \"1 s\"\n",
             self_signed ? "true" : "false", cert, key);
    th_options_t o = {.extra_config = extra};
    if (!th_start(srv, &o)) {
        fprintf(stderr, "io_uring is unavailable here: skipped\n");
        exit(77);
    }
}

static int tls_connect(uint16_t port, const char *host, const char *domain, const char *ca,
                       bool validate, sl_client_t **c)
{
    sl_client_options_t o = {.connect_timeout_ms = 5000,
                             .request_timeout_ms = 10000,
                             .tls_enabled = true,
                             .tls_domain = domain,
                             .tls_ca_file = ca,
                             .tls_validate_certificate =
                                 validate ? SL_CLIENT_TLS_VALIDATE_ON : SL_CLIENT_TLS_VALIDATE_OFF};
    return sl_client_connect(host, port, &o, c);
}

/* A verified client logs in and pings: the server still serves. */
static void serves(const th_server_t *srv)
{
    sl_client_t *c = NULL;
    OK(tls_connect(srv->port, "localhost", NULL, certs.ca, true, &c));
    OK(sl_client_login(c, "iggy", "iggy", NULL));
    OK(sl_client_ping(c));
    sl_client_close(c);
}

/* --- certificates ------------------------------------------------------------------------ */

static void test_files_verified_and_refused(void **state)
{
    (void)state;
    th_server_t srv;
    start_with(&srv, certs.leaf, certs.leaf_key, false);
    assert_non_null(strstr(th_log(&srv), "tcp.tls: serving the certificate"));
    serves(&srv);
    sl_client_t *c = NULL;
    /* By address: the leaf names localhost only (tls.md 4.1). */
    assert_int_equal(tls_connect(srv.port, "127.0.0.1", NULL, certs.ca, true, &c),
                     -SL_ERR_INVALID_TLS_CERTIFICATE);
    /* The right name given apart from the address. */
    OK(tls_connect(srv.port, "127.0.0.1", "localhost", certs.ca, true, &c));
    sl_client_close(c);
    /* Another name, another CA. */
    assert_int_equal(tls_connect(srv.port, "127.0.0.1", "other.example", certs.ca, true, &c),
                     -SL_ERR_INVALID_TLS_CERTIFICATE);
    assert_int_equal(tls_connect(srv.port, "localhost", NULL, certs.other_ca, true, &c),
                     -SL_ERR_INVALID_TLS_CERTIFICATE);
    assert_int_equal(tls_connect(srv.port, "localhost", NULL, "/nonexistent/ca.pem", true, &c),
                     -SL_ERR_INVALID_TLS_CERTIFICATE_PATH);
    /* A plain client on the TLS port: refused, nothing served. */
    sl_client_options_t plain = {.connect_timeout_ms = 5000, .request_timeout_ms = 5000};
    OK(sl_client_connect("127.0.0.1", srv.port, &plain, &c));
    assert_int_not_equal(sl_client_login(c, "iggy", "iggy", NULL), 0);
    sl_client_close(c);
    serves(&srv);
    th_stop(&srv, SIGTERM);
    th_cleanup(&srv);
}

static void test_wrong_name_and_expired_refused(void **state)
{
    (void)state;
    const char *pairs[][2] = {{certs.wrong, certs.wrong_key}, {certs.expired, certs.expired_key}};
    for (int i = 0; i < 2; i++) {
        th_server_t srv;
        start_with(&srv, pairs[i][0], pairs[i][1], false);
        sl_client_t *c = NULL;
        assert_int_equal(tls_connect(srv.port, "localhost", NULL, certs.ca, true, &c),
                         -SL_ERR_INVALID_TLS_CERTIFICATE);
        /* Verification off (development) takes it. */
        OK(tls_connect(srv.port, "localhost", NULL, NULL, false, &c));
        OK(sl_client_login(c, "iggy", "iggy", NULL));
        sl_client_close(c);
        th_stop(&srv, SIGTERM);
        th_cleanup(&srv);
    }
}

static void test_self_signed(void **state)
{
    (void)state;
    char missing[320];
    snprintf(missing, sizeof(missing), "%s/no-such-cert.pem", dir);
    th_server_t srv;
    start_with(&srv, missing, missing, true);
    assert_non_null(strstr(th_log(&srv), "serving an ephemeral self-signed certificate"));
    sl_client_t *c = NULL;
    assert_int_equal(tls_connect(srv.port, "localhost", NULL, certs.ca, true, &c),
                     -SL_ERR_INVALID_TLS_CERTIFICATE);
    OK(tls_connect(srv.port, "localhost", NULL, NULL, false, &c));
    OK(sl_client_login(c, "iggy", "iggy", NULL));
    sl_client_close(c);
    th_stop(&srv, SIGTERM);
    th_cleanup(&srv);

    /* self_signed with the file present: the file is served. */
    start_with(&srv, certs.leaf, certs.leaf_key, true);
    assert_non_null(strstr(th_log(&srv), "(self_signed is on, but the file exists)"));
    serves(&srv);
    th_stop(&srv, SIGTERM);
    th_cleanup(&srv);
}

static void test_missing_files_stop_the_start(void **state)
{
    (void)state;
    char extra[1200];
    snprintf(extra, sizeof(extra),
             "[tcp.tls]\nenabled = true\nself_signed = false\ncert_file = \"%s/none.pem\"\n"
             "key_file = \"%s\"\n",
             dir, certs.leaf_key);
    th_options_t o = {.extra_config = extra};
    th_server_t srv;
    int status = 0;
    assert_false(th_try_start(&srv, &o, &status));
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 1);
    assert_non_null(strstr(th_log(&srv), "tcp.tls: cannot load the certificate chain"));
    /* A key that is not the leaf's. */
    snprintf(extra, sizeof(extra),
             "[tcp.tls]\nenabled = true\nself_signed = false\ncert_file = \"%s\"\n"
             "key_file = \"%s\"\n",
             certs.leaf, certs.wrong_key);
    th_cleanup(&srv);
    o.extra_config = extra;
    assert_false(th_try_start(&srv, &o, &status));
    assert_non_null(strstr(th_log(&srv), "does not match the certificate"));
    th_cleanup(&srv);
}

/* --- hostile handshakes ------------------------------------------------------------------- */

/* The first bytes of a real ClientHello, from an OpenSSL client over
 * memory BIOs. */
static size_t client_hello(uint8_t *out, size_t cap)
{
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    SSL *ssl = SSL_new(ctx);
    BIO *rb = BIO_new(BIO_s_mem()), *wb = BIO_new(BIO_s_mem());
    SSL_set_bio(ssl, rb, wb);
    SSL_set_connect_state(ssl);
    assert_int_equal(SSL_do_handshake(ssl), -1); /* wants the ServerHello */
    int n = BIO_read(wb, out, (int)cap);
    assert_true(n > 100);
    SSL_free(ssl);
    SSL_CTX_free(ctx);
    ERR_clear_error();
    return (size_t)n;
}

static void test_hostile_handshakes(void **state)
{
    (void)state;
    th_server_t srv;
    start_with(&srv, certs.leaf, certs.leaf_key, false);
    uint8_t hello[2048];
    size_t hello_len = client_hello(hello, sizeof(hello));

    /* Garbage: closed. */
    int fd = th_connect(srv.port);
    uint8_t junk[300];
    for (size_t i = 0; i < sizeof(junk); i++)
        junk[i] = (uint8_t)(i * 131u + 7u);
    assert_true(th_send_all(fd, junk, sizeof(junk)));
    assert_true(th_wait_closed(fd, 10000));
    close(fd);

    /* A plaintext Iggy frame (a ping header): closed, no reply frame. */
    fd = th_connect(srv.port);
    uint8_t ping[256] = {0};
    uint32_t size = 256;
    memcpy(ping + 48, &size, 4);
    ping[60] = 2; /* Request */
    assert_true(th_send_all(fd, ping, sizeof(ping)));
    uint8_t back[512];
    assert_true(th_read_frame(fd, back, sizeof(back), 5000) <= 0);
    close(fd);

    /* Stalled: nothing, or half a ClientHello; both closed by the grace
     * (1 s), while a verified client is served meanwhile. */
    int silent = th_connect(srv.port);
    int half = th_connect(srv.port);
    assert_true(th_send_all(half, hello, hello_len / 2));
    serves(&srv);
    assert_true(th_wait_closed(silent, 15000));
    assert_true(th_wait_closed(half, 15000));
    close(silent);
    close(half);
    assert_non_null(strstr(th_log(&srv), "no tls handshake within 1000 ms"));

    /* Half a handshake, then gone. */
    fd = th_connect(srv.port);
    assert_true(th_send_all(fd, hello, hello_len - 10));
    close(fd);

    assert_true(th_alive(&srv));
    serves(&srv);
    th_stop(&srv, SIGTERM);
    th_cleanup(&srv);
}

/* --- a reply in several chunks ------------------------------------------------------------ */

static void test_large_poll_and_clients(void **state)
{
    (void)state;
    th_server_t srv;
    start_with(&srv, certs.leaf, certs.leaf_key, false);
    sl_client_t *c = NULL;
    OK(tls_connect(srv.port, "localhost", NULL, certs.ca, true, &c));
    OK(sl_client_login(c, "iggy", "iggy", NULL));
    OK(sl_client_create_stream(c, "tls", NULL));
    OK(sl_client_create_topic(c, sl_id_name("tls"), "t", 1, NULL, NULL));
    /* 3 x 400 KB: the poll reply (about 1.2 MB) crosses several 256 KiB chunks. */
    static uint8_t payload[3][400000];
    sl_send_message_t m[3];
    for (int i = 0; i < 3; i++) {
        for (size_t j = 0; j < sizeof(payload[i]); j++)
            payload[i][j] = (uint8_t)(j * 7u + (unsigned)i);
        m[i] = (sl_send_message_t){.payload = payload[i], .payload_len = sizeof(payload[i])};
    }
    OK(sl_client_send_messages(c, sl_id_name("tls"), sl_id_name("t"), sl_partitioning_partition(0),
                               m, 3, NULL));
    sl_polled_messages_t got;
    OK(sl_client_poll_messages(c, sl_consumer_single(sl_id_num(1)), sl_id_name("tls"),
                               sl_id_name("t"), 0, sl_poll_first(), 10, false, &got));
    assert_int_equal(got.count, 3);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(got.messages[i].payload_len, sizeof(payload[i]));
        assert_memory_equal(got.messages[i].payload, payload[i], sizeof(payload[i]));
    }
    /* A TLS connection is listed as TCP (defaults.md 1). */
    const sl_client_info_t *items;
    uint32_t n;
    OK(sl_client_get_clients(c, &items, &n));
    assert_int_equal(n, 1);
    assert_int_equal(items[0].transport, 1);
    sl_client_close(c);
    th_stop(&srv, SIGTERM);
    th_cleanup(&srv);
}

int main(void)
{
    if (th_mode() != TH_TCP)
        return 0; /* this program sets up its own doors */
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof(dir), "%s/sluice-tls-XXXXXX", tmp ? tmp : "/tmp");
    if (!mkdtemp(dir) || !th_certs_make(dir, &certs)) {
        fprintf(stderr, "cannot make test certificates\n");
        return 1;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_files_verified_and_refused),
        cmocka_unit_test(test_wrong_name_and_expired_refused),
        cmocka_unit_test(test_self_signed),
        cmocka_unit_test(test_missing_files_stop_the_start),
        cmocka_unit_test(test_hostile_handshakes),
        cmocka_unit_test(test_large_poll_and_clients),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    char cmd[300];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", dir);
    return rc;
}
