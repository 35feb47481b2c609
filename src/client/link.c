/* The transport of a client connection: the socket alone, TLS over it
 * (OpenSSL, verification on by default), and WebSocket over either
 * (ws.c). Every call is bounded by a deadline: a TLS socket is switched to
 * non-blocking mode and waits in poll(), as the plain path does.
 *
 * Verification follows tls.md 4.1: the chain against tls_ca_file (or the
 * system's roots), and the name tls_domain, else the host dialled, as a
 * DNS name or, for an address literal, an IP address. */
#include "client/client_internal.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static int copy_setting(char *dst, const char *src, int err)
{
    size_t n = src ? strlen(src) : 0;
    if (n >= SL_CLIENT_TLS_TEXT_MAX)
        return err;
    if (n)
        memcpy(dst, src, n);
    dst[n] = '\0';
    return 0;
}

int sl_client_link_init(sl_client_t *c, const sl_client_options_t *o)
{
    memset(&c->link, 0, sizeof(c->link));
    sl_buf_init(&c->link.tls_out, 0);
    if (o == NULL)
        return 0;
    c->link.transport = o->transport;
    c->link.tls = o->tls_enabled;
    c->link.tls_validate = o->tls_validate_certificate != SL_CLIENT_TLS_VALIDATE_OFF;
    int rc = copy_setting(c->link.tls_domain, o->tls_domain, -SL_ERR_INVALID_TLS_DOMAIN);
    if (rc == 0)
        rc =
            copy_setting(c->link.tls_ca_file, o->tls_ca_file, -SL_ERR_INVALID_TLS_CERTIFICATE_PATH);
    if (rc == 0 && o->transport != SL_CLIENT_TCP && o->transport != SL_CLIENT_WEBSOCKET)
        rc = -SL_ERR_INVALID_CONFIGURATION;
    return rc;
}

/* --- TLS ------------------------------------------------------------------------ */

static int tls_ctx_make(sl_client_link_t *l)
{
    if (l->tls_ctx != NULL)
        return 0;
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    if (ctx == NULL)
        return -SL_ERR_CANNOT_ESTABLISH_CONNECTION;
    int rc = 0;
    if (SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) != 1)
        rc = -SL_ERR_CANNOT_ESTABLISH_CONNECTION;
    /* Read ahead into a buffer of several records: a 1 MB reply otherwise
     * costs two read(2) calls per 16 KiB record (its header, its body). */
    SSL_CTX_set_read_ahead(ctx, 1);
    SSL_CTX_set_default_read_buffer_len(ctx, SL_CLIENT_TLS_READ_BUFFER);
    if (rc == 0 && l->tls_validate) {
        SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
        int loaded = l->tls_ca_file[0] ? SSL_CTX_load_verify_file(ctx, l->tls_ca_file)
                                       : SSL_CTX_set_default_verify_paths(ctx);
        if (loaded != 1)
            rc = -SL_ERR_INVALID_TLS_CERTIFICATE_PATH;
    } else if (rc == 0) {
        SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, NULL);
    }
    ERR_clear_error();
    if (rc != 0) {
        SSL_CTX_free(ctx);
        return rc;
    }
    l->tls_ctx = ctx;
    return 0;
}

/* The name to check: an address literal is checked as an IP SAN, anything
 * else as a DNS name, which is also sent as SNI. */
static int tls_name(SSL *ssl, const char *name, bool validate)
{
    struct in6_addr a6;
    struct in_addr a4;
    bool literal = inet_pton(AF_INET, name, &a4) == 1 || inet_pton(AF_INET6, name, &a6) == 1;
    if (!literal && name[0] && SSL_set_tlsext_host_name(ssl, name) != 1)
        return -SL_ERR_INVALID_TLS_DOMAIN;
    if (!validate)
        return 0;
    X509_VERIFY_PARAM *param = SSL_get0_param(ssl);
    int ok = literal ? X509_VERIFY_PARAM_set1_ip_asc(param, name) : SSL_set1_host(ssl, name);
    return ok == 1 ? 0 : -SL_ERR_INVALID_TLS_DOMAIN;
}

/* --- the output BIO: records collect in link.tls_out ------------------------------- */

/* Records go there rather than to the socket so that a request leaves in
 * a few large sends instead of one write(2) per 16 KiB record; a BIO of
 * our own, because a memory BIO clears every byte it grows into before
 * the record is copied over it. */
static int out_write(BIO *b, const char *data, int len)
{
    sl_buf_t *out = BIO_get_data(b);
    if (len <= 0)
        return 0;
    sl_put_bytes(out, data, (size_t)len);
    return sl_buf_ok(out) ? len : -1;
}

static long out_ctrl(BIO *b, int cmd, long num, void *ptr)
{
    (void)b, (void)num, (void)ptr;
    return cmd == BIO_CTRL_FLUSH ? 1 : 0; /* nothing buffered inside */
}

static int out_create(BIO *b)
{
    BIO_set_init(b, 1);
    return 1;
}

static BIO *out_bio(sl_client_link_t *l)
{
    if (l->tls_out_method == NULL) {
        BIO_METHOD *m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "sluice tls out");
        if (m == NULL || !BIO_meth_set_write(m, out_write) || !BIO_meth_set_ctrl(m, out_ctrl) ||
            !BIO_meth_set_create(m, out_create)) {
            BIO_meth_free(m);
            return NULL;
        }
        l->tls_out_method = m;
    }
    BIO *b = BIO_new(l->tls_out_method);
    if (b != NULL)
        BIO_set_data(b, &l->tls_out);
    return b;
}

/* Sends the records written so far; a buffer grown past what calls keep
 * goes back. */
static int tls_flush(sl_client_t *c, uint64_t deadline_us)
{
    sl_buf_t *out = &c->link.tls_out;
    int rc = !sl_buf_ok(out) ? -SL_ERR_ERROR
             : out->len > 0  ? sl_client_send_all(c->fd, out->data, out->len, deadline_us)
                             : 0;
    sl_buf_reset(out);
    if (out->cap > SL_CLIENT_KEEP_BYTES)
        sl_buf_free(out);
    return rc;
}

static int tls_handshake(sl_client_t *c, int fd, const char *host, uint64_t deadline_us)
{
    sl_client_link_t *l = &c->link;
    int rc = tls_ctx_make(l);
    if (rc != 0)
        return rc;
    int flags = fcntl(fd, F_GETFL);
    if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) != 0)
        return -SL_ERR_CANNOT_ESTABLISH_CONNECTION;
    l->ssl = SSL_new(l->tls_ctx);
    sl_buf_reset(&l->tls_out);
    BIO *in = BIO_new_socket(fd, BIO_NOCLOSE), *out = out_bio(l);
    if (l->ssl == NULL || in == NULL || out == NULL) {
        BIO_free(in);
        BIO_free(out);
        return -SL_ERR_CANNOT_ESTABLISH_CONNECTION;
    }
    SSL_set_bio(l->ssl, in, out);
    rc = tls_name(l->ssl, l->tls_domain[0] ? l->tls_domain : host, l->tls_validate);
    if (rc != 0)
        return rc;
    /* Bounded: each pass waits in poll until the deadline, then gives up.
     * What a step wrote (a hello, a Finished, an alert) leaves first. */
    for (;;) {
        int r = SSL_connect(l->ssl);
        int e = r == 1 ? SSL_ERROR_NONE : SSL_get_error(l->ssl, r);
        if (tls_flush(c, deadline_us) != 0)
            break;
        if (r == 1)
            return 0;
        if (e != SSL_ERROR_WANT_READ)
            break;
        rc = sl_client_wait_ready(fd, POLLIN, deadline_us);
        if (rc != 0)
            break;
    }
    bool refused = l->tls_validate && SSL_get_verify_result(l->ssl) != X509_V_OK;
    ERR_clear_error();
    return refused ? -SL_ERR_INVALID_TLS_CERTIFICATE : -SL_ERR_CANNOT_ESTABLISH_CONNECTION;
}

/* One step of TLS I/O: >0 bytes moved, 0 with *events set when it must
 * wait, -1 at end of stream, -2 on an error. */
static ssize_t tls_step(SSL *ssl, int r, size_t moved, short *events)
{
    if (r == 1)
        return (ssize_t)moved;
    int e = SSL_get_error(ssl, r);
    ERR_clear_error();
    if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
        *events = e == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT;
        return 0;
    }
    /* A server closes without close_notify; both ends read as a close. */
    if (e == SSL_ERROR_ZERO_RETURN || (e == SSL_ERROR_SYSCALL && errno == 0))
        return -1;
    return -2;
}

/* --- the raw stream: socket or TLS (what WebSocket frames travel on) --------------- */

/* Records a read had to answer (a KeyUpdate) leave at once; they are a few
 * bytes, which an idle socket takes. */
static void tls_flush_answers(sl_client_t *c)
{
    if (c->link.tls_out.len > 0)
        (void)tls_flush(c, sl_client_deadline(c->request_timeout_ms));
}

ssize_t sl_client_raw_read(sl_client_t *c, uint8_t *p, size_t n, short *events)
{
    if (c->link.ssl != NULL) {
        size_t got = 0;
        errno = 0;
        int r = SSL_read_ex(c->link.ssl, p, n, &got);
        ssize_t rc = tls_step(c->link.ssl, r, got, events);
        tls_flush_answers(c);
        return rc;
    }
    ssize_t r = recv(c->fd, p, n, MSG_DONTWAIT);
    if (r > 0)
        return r;
    if (r == 0)
        return -1;
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
        *events = POLLIN;
        return 0;
    }
    return -2;
}

int sl_client_raw_send(sl_client_t *c, const uint8_t *p, size_t n, uint64_t deadline_us)
{
    if (c->link.ssl == NULL)
        return sl_client_send_all(c->fd, p, n, deadline_us);
    /* Encrypted a chunk at a time into the output BIO, each chunk sent in
     * large writes: memory stays near one chunk, and the server decrypts
     * one chunk while the next is encrypted here. */
    for (size_t done = 0; done < n;) {
        size_t take = n - done < SL_CLIENT_TLS_WRITE_CHUNK ? n - done : SL_CLIENT_TLS_WRITE_CHUNK;
        size_t put = 0;
        if (SSL_write_ex(c->link.ssl, p + done, take, &put) != 1 || put != take) {
            ERR_clear_error();
            return -SL_ERR_DISCONNECTED;
        }
        done += take;
        int rc = tls_flush(c, deadline_us);
        if (rc != 0)
            return rc;
    }
    return 0;
}

int sl_client_raw_recv(sl_client_t *c, uint8_t *p, size_t n, uint64_t deadline_us, size_t *got)
{
    if (c->link.ssl == NULL)
        return sl_client_recv_exact(c->fd, p, n, deadline_us, got);
    size_t done = 0;
    int rc = 0;
    while (done < n && rc == 0) {
        short events = 0;
        ssize_t r = sl_client_raw_read(c, p + done, n - done, &events);
        if (r > 0)
            done += (size_t)r;
        else if (r == 0)
            rc = sl_client_wait_ready(c->fd, events, deadline_us);
        else
            rc = r == -1 ? -SL_ERR_CONNECTION_CLOSED : -SL_ERR_DISCONNECTED;
    }
    *got = done;
    return rc;
}

/* --- the link ----------------------------------------------------------------------- */

int sl_client_link_open(sl_client_t *c, int fd, const char *host, uint16_t port)
{
    uint64_t deadline_us = sl_client_deadline(c->connect_timeout_ms);
    c->fd = fd;
    int rc = 0;
    if (c->link.tls)
        rc = tls_handshake(c, fd, host, deadline_us);
    if (rc == 0 && c->link.transport == SL_CLIENT_WEBSOCKET)
        rc = sl_client_ws_open(c, c->link.tls_domain[0] ? c->link.tls_domain : host, port,
                               deadline_us);
    if (rc != 0)
        sl_client_link_close(c);
    return rc;
}

int sl_client_link_send(sl_client_t *c, const uint8_t *p, size_t n, uint64_t deadline_us)
{
    if (c->link.ws != NULL)
        return sl_client_ws_send(c, p, n, deadline_us);
    return sl_client_raw_send(c, p, n, deadline_us);
}

int sl_client_link_recv(sl_client_t *c, uint8_t *p, size_t n, uint64_t deadline_us, size_t *got)
{
    if (c->link.ws != NULL)
        return sl_client_ws_recv(c, p, n, deadline_us, got);
    return sl_client_raw_recv(c, p, n, deadline_us, got);
}

int sl_client_link_peek(sl_client_t *c, uint8_t *p, size_t n)
{
    if (c->link.ws != NULL)
        return sl_client_ws_peek(c, p, n);
    if (c->link.ssl != NULL) {
        size_t got = 0;
        short events = 0;
        errno = 0;
        int k = SSL_peek_ex(c->link.ssl, p, n, &got);
        ssize_t r = tls_step(c->link.ssl, k, got, &events);
        tls_flush_answers(c);
        return r < 0 ? -1 : (int)r;
    }
    ssize_t got = recv(c->fd, p, n, MSG_PEEK | MSG_DONTWAIT);
    if (got == 0)
        return -1;
    if (got < 0)
        return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? 0 : -1;
    return (int)got;
}

ssize_t sl_client_link_read_some(sl_client_t *c, uint8_t *p, size_t n, short *events)
{
    ssize_t r = c->link.ws != NULL ? sl_client_ws_read_some(c, p, n, events)
                                   : sl_client_raw_read(c, p, n, events);
    return r < 0 ? -1 : r;
}

void sl_client_link_close(sl_client_t *c)
{
    sl_client_ws_free(c->link.ws);
    c->link.ws = NULL;
    /* No close_notify: the server ends the session when the socket closes,
     * and a close must not wait for a peer that stopped reading. */
    SSL_free(c->link.ssl);
    c->link.ssl = NULL;
    if (c->fd >= 0)
        close(c->fd);
    c->fd = -1;
}

void sl_client_link_free(sl_client_t *c)
{
    SSL_CTX_free(c->link.tls_ctx);
    BIO_meth_free(c->link.tls_out_method);
    c->link.tls_out_method = NULL;
    sl_buf_free(&c->link.tls_out);
    c->link.tls_ctx = NULL;
}
