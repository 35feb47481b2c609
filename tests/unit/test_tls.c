/* Server TLS sessions in memory (server/tls.h) against an OpenSSL client
 * over memory BIOs: the handshake, a body of many records read in few
 * calls, and sl_tls_need, which the loop waits on with MSG_WAITALL and so
 * must never ask for more ciphertext than the client still has to send. */
#include "testutil.h"

#include <errno.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <stdlib.h>
#include <string.h>

#include "server/tls.h"

typedef struct pair {
    sl_tls_ctx_t *ctx;
    sl_tls_session_t *server;
    sl_buf_t server_out; /* what the server wrote, for the client */
    SSL_CTX *client_ctx;
    SSL *client;
    BIO *client_in, *client_out;
} pair_t;

/* Moves the server's output to the client. */
static void to_client(pair_t *p)
{
    if (p->server_out.len > 0)
        assert_int_equal(BIO_write(p->client_in, p->server_out.data, (int)p->server_out.len),
                         (int)p->server_out.len);
    sl_buf_reset(&p->server_out);
}

/* Moves up to max bytes of the client's output to the server. */
static size_t to_server(pair_t *p, size_t max)
{
    char *data = NULL;
    long len = BIO_get_mem_data(p->client_out, &data);
    size_t n = (size_t)len < max ? (size_t)len : max;
    if (n == 0)
        return 0;
    assert_int_equal(sl_tls_input(p->server, (const uint8_t *)data, n), 0);
    char sink[65536];
    for (size_t left = n; left > 0;) {
        int r = BIO_read(p->client_out, sink, left < sizeof(sink) ? (int)left : (int)sizeof(sink));
        assert_true(r > 0);
        left -= (size_t)r;
    }
    return n;
}

static void pair_open(pair_t *p)
{
    memset(p, 0, sizeof(*p));
    sl_tls_settings_t s = {"test.tls", true, "/nonexistent/cert.pem", "/nonexistent/key.pem"};
    sl_tls_source_t source;
    char err[256];
    assert_int_equal(sl_tls_ctx_create(&s, &p->ctx, &source, err, sizeof(err)), 0);
    assert_int_equal(source, SL_TLS_SOURCE_SELF_SIGNED);
    sl_buf_init(&p->server_out, 0);
    assert_int_equal(sl_tls_session_new(p->ctx, &p->server_out, &p->server), 0);
    p->client_ctx = SSL_CTX_new(TLS_client_method());
    assert_non_null(p->client_ctx);
    SSL_CTX_set_verify(p->client_ctx, SSL_VERIFY_NONE, NULL);
    p->client = SSL_new(p->client_ctx);
    p->client_in = BIO_new(BIO_s_mem());
    p->client_out = BIO_new(BIO_s_mem());
    BIO_set_mem_eof_return(p->client_in, -1);
    SSL_set_bio(p->client, p->client_in, p->client_out);
    SSL_set_connect_state(p->client);
    uint8_t none[1];
    /* A few flights each way finish a TLS 1.3 handshake. */
    for (int i = 0; i < 8 && !(SSL_is_init_finished(p->client) && sl_tls_established(p->server));
         i++) {
        (void)SSL_do_handshake(p->client);
        to_server(p, SIZE_MAX);
        assert_true(sl_tls_read(p->server, none, 1) >= 0);
        to_client(p);
    }
    assert_true(SSL_is_init_finished(p->client));
    assert_true(sl_tls_established(p->server));
    ERR_clear_error();
}

static void pair_close(pair_t *p)
{
    SSL_free(p->client); /* frees both BIOs */
    SSL_CTX_free(p->client_ctx);
    sl_tls_session_free(p->server);
    sl_tls_ctx_free(p->ctx);
    sl_buf_free(&p->server_out);
}

static void test_body_in_records_and_need(void **state)
{
    (void)state;
    pair_t p;
    pair_open(&p);
    enum { BODY = 1 << 20 };
    uint8_t *body = malloc(BODY), *got = malloc(BODY);
    assert_non_null(body);
    assert_non_null(got);
    for (size_t i = 0; i < BODY; i++)
        body[i] = (uint8_t)(i * 31 + 7);
    /* Written in uneven pieces: records of many sizes. */
    for (size_t at = 0, step = 1000; at < BODY; at += step, step = step * 3 % 40000 + 17) {
        size_t n = BODY - at < step ? BODY - at : step;
        size_t put = 0;
        assert_int_equal(SSL_write_ex(p.client, body + at, n, &put), 1);
        assert_int_equal(put, n);
    }
    size_t cipher_left = (size_t)BIO_ctrl_pending(p.client_out);
    assert_true(cipher_left > BODY);
    size_t have = 0;
    for (size_t piece = 777; have < BODY; piece = piece * 7 % 300000 + 1) {
        /* What is held now may yield at most what it is: the rest of the
         * body needs at least sl_tls_need more, and the client has that. */
        size_t need = sl_tls_need(p.server, BODY - have);
        assert_true(need <= cipher_left);
        cipher_left -= to_server(&p, piece);
        int r = sl_tls_read(p.server, got + have, BODY - have);
        assert_true(r >= 0);
        have += (size_t)r;
    }
    assert_int_equal(cipher_left, 0);
    assert_memory_equal(got, body, BODY);
    assert_int_equal(sl_tls_need(p.server, 100), 0);
    /* All input at once: one read takes every record of it. */
    size_t put = 0;
    assert_int_equal(SSL_write_ex(p.client, body, BODY, &put), 1);
    to_server(&p, SIZE_MAX);
    assert_int_equal(sl_tls_read(p.server, got, BODY), BODY);
    assert_memory_equal(got, body, BODY);
    /* The peer's close_notify after data: the data first, then the end. */
    assert_int_equal(SSL_write_ex(p.client, body, 10, &put), 1);
    (void)SSL_shutdown(p.client);
    to_server(&p, SIZE_MAX);
    assert_int_equal(sl_tls_read(p.server, got, BODY), 10);
    assert_int_equal(sl_tls_read(p.server, got, BODY), -ECONNRESET);
    free(body);
    free(got);
    pair_close(&p);
}

static void test_need_before_handshake_and_garbage(void **state)
{
    (void)state;
    pair_t p;
    memset(&p, 0, sizeof(p));
    sl_tls_settings_t s = {"test.tls", true, "/nonexistent/cert.pem", "/nonexistent/key.pem"};
    sl_tls_source_t source;
    char err[256];
    assert_int_equal(sl_tls_ctx_create(&s, &p.ctx, &source, err, sizeof(err)), 0);
    sl_buf_init(&p.server_out, 0);
    assert_int_equal(sl_tls_session_new(p.ctx, &p.server_out, &p.server), 0);
    /* No estimate during the handshake: its records carry no stream bytes. */
    assert_int_equal(sl_tls_need(p.server, 1u << 20), 0);
    uint8_t junk[300];
    memset(junk, 'G', sizeof(junk));
    assert_int_equal(sl_tls_input(p.server, junk, sizeof(junk)), 0);
    uint8_t b[16];
    assert_int_equal(sl_tls_read(p.server, b, sizeof(b)), -EPROTO);
    assert_true(strlen(sl_tls_last_error(p.server)) > 0);
    sl_tls_session_free(p.server);
    sl_tls_ctx_free(p.ctx);
    sl_buf_free(&p.server_out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_body_in_records_and_need),
        cmocka_unit_test(test_need_before_handshake_and_garbage),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
