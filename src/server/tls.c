/* Server TLS contexts and in-memory sessions over OpenSSL 3 (server/tls.h).
 *
 * Each session reads ciphertext from a memory BIO and writes through a BIO
 * of its own kind that appends to the caller's buffer, so a socket never
 * appears here and the caller decides when bytes move. */
#include "server/tls.h"

#include <errno.h>
#include <limits.h>
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

struct sl_tls_ctx {
    SSL_CTX *ssl;
    BIO_METHOD *out_method; /* the BIO kind that appends to a session's sl_buf_t */
};

struct sl_tls_session {
    SSL *ssl;
    BIO *rbio; /* ciphertext received, not yet decrypted */
    char error[128];
};

/* --- the output BIO: appends to an sl_buf_t ------------------------------------ */

static int out_write(BIO *b, const char *data, int len)
{
    sl_buf_t *out = BIO_get_data(b);
    if (len <= 0)
        return 0;
    uint8_t *p = sl_buf_extend(out, (size_t)len);
    if (!p)
        return -1;
    memcpy(p, data, (size_t)len);
    return len;
}

static long out_ctrl(BIO *b, int cmd, long num, void *ptr)
{
    (void)b;
    (void)num;
    (void)ptr;
    /* Nothing is buffered inside: a flush has nothing to do. */
    return cmd == BIO_CTRL_FLUSH ? 1 : 0;
}

static int out_create(BIO *b)
{
    BIO_set_init(b, 1);
    return 1;
}

static BIO_METHOD *out_method_new(void)
{
    BIO_METHOD *m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "sluice out");
    if (!m)
        return NULL;
    if (!BIO_meth_set_write(m, out_write) || !BIO_meth_set_ctrl(m, out_ctrl) ||
        !BIO_meth_set_create(m, out_create)) {
        BIO_meth_free(m);
        return NULL;
    }
    return m;
}

/* --- certificates --------------------------------------------------------------- */

/* The first queued OpenSSL error as text ("" when none). */
static void openssl_reason(char *buf, size_t len)
{
    unsigned long e = ERR_peek_last_error();
    buf[0] = '\0';
    if (e)
        ERR_error_string_n(e, buf, len);
    ERR_clear_error();
}

static bool file_exists(const char *path)
{
    struct stat st;
    return path && path[0] && stat(path, &st) == 0;
}

/* An ephemeral certificate as tls.md 3 describes the reference's: ECDSA
 * P-256, SAN DNS:localhost, valid 1975 to 4096, self-issued, not a CA. It
 * lives in memory only; clients reach it with verification off. */
static X509 *self_signed_cert(EVP_PKEY *key)
{
    X509 *x = X509_new();
    uint8_t serial[16];
    BIGNUM *bn = NULL;
    X509V3_CTX v3;
    X509_EXTENSION *san = NULL;
    bool ok = x && RAND_bytes(serial, sizeof(serial)) == 1;
    serial[0] &= 0x7f; /* a positive serial number */
    ok = ok && (bn = BN_bin2bn(serial, sizeof(serial), NULL)) != NULL &&
         BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x)) != NULL && X509_set_version(x, 2) &&
         ASN1_TIME_set_string_X509(X509_getm_notBefore(x), "19750101000000Z") &&
         ASN1_TIME_set_string_X509(X509_getm_notAfter(x), "40960101000000Z");
    X509_NAME *name = ok ? X509_get_subject_name(x) : NULL;
    ok = ok &&
         X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                                    (const unsigned char *)"sluice self signed cert", -1, -1, 0) &&
         X509_set_issuer_name(x, name) && X509_set_pubkey(x, key);
    if (ok) {
        X509V3_set_ctx(&v3, x, x, NULL, NULL, 0);
        san = X509V3_EXT_conf_nid(NULL, &v3, NID_subject_alt_name, "DNS:localhost");
    }
    ok = ok && san && X509_add_ext(x, san, -1) && X509_sign(x, key, EVP_sha256()) > 0;
    X509_EXTENSION_free(san);
    BN_free(bn);
    if (!ok) {
        X509_free(x);
        return NULL;
    }
    return x;
}

static int use_self_signed(SSL_CTX *ssl, const char *section, char *err, size_t err_len)
{
    EVP_PKEY *key = EVP_EC_gen("P-256");
    X509 *cert = key ? self_signed_cert(key) : NULL;
    bool ok =
        cert && SSL_CTX_use_certificate(ssl, cert) == 1 && SSL_CTX_use_PrivateKey(ssl, key) == 1;
    X509_free(cert);
    EVP_PKEY_free(key);
    if (ok)
        return 0;
    char why[160];
    openssl_reason(why, sizeof(why));
    snprintf(err, err_len, "%s: cannot generate a self-signed certificate: %s", section, why);
    return -1;
}

static int use_files(SSL_CTX *ssl, const sl_tls_settings_t *s, char *err, size_t err_len)
{
    char why[160];
    if (!s->cert_file || !s->cert_file[0] || !s->key_file || !s->key_file[0]) {
        snprintf(err, err_len, "%s: cert_file and key_file must both be set", s->section);
        return -1;
    }
    if (SSL_CTX_use_certificate_chain_file(ssl, s->cert_file) != 1) {
        openssl_reason(why, sizeof(why));
        snprintf(err, err_len, "%s: cannot load the certificate chain %s: %s", s->section,
                 s->cert_file, why);
        return -1;
    }
    if (SSL_CTX_use_PrivateKey_file(ssl, s->key_file, SSL_FILETYPE_PEM) != 1) {
        bool mismatch = ERR_GET_REASON(ERR_peek_last_error()) == X509_R_KEY_VALUES_MISMATCH;
        openssl_reason(why, sizeof(why));
        if (mismatch) {
            snprintf(err, err_len, "%s: the key %s does not match the certificate %s", s->section,
                     s->key_file, s->cert_file);
            return -1;
        }
        snprintf(err, err_len, "%s: cannot load the private key %s: %s", s->section, s->key_file,
                 why);
        return -1;
    }
    if (SSL_CTX_check_private_key(ssl) != 1) {
        openssl_reason(why, sizeof(why));
        snprintf(err, err_len, "%s: the key %s does not match the certificate %s: %s", s->section,
                 s->key_file, s->cert_file, why);
        return -1;
    }
    return 0;
}

/* --- contexts ------------------------------------------------------------------- */

/* Protocol choices (docs/security.md, "TLS"): 1.2 and 1.3 as the reference;
 * OpenSSL's default suites (AEAD only in 1.3, ECDHE with AES-GCM or
 * ChaCha20 first in 1.2); no renegotiation, tickets or cache, because no
 * client resumes and each would only hold memory per connection; buffers
 * released while idle, since most connections idle between requests. */
static SSL_CTX *server_ctx_new(void)
{
    SSL_CTX *ssl = SSL_CTX_new(TLS_server_method());
    if (!ssl)
        return NULL;
    if (SSL_CTX_set_min_proto_version(ssl, TLS1_2_VERSION) != 1) {
        SSL_CTX_free(ssl);
        return NULL;
    }
    /* AES-128-GCM first: as strong as a 128-bit security level needs and
     * about a third cheaper per byte than AES-256-GCM, which OpenSSL would
     * pick first; ChaCha20 for clients without AES instructions. */
    if (SSL_CTX_set_ciphersuites(ssl, "TLS_AES_128_GCM_SHA256:TLS_CHACHA20_POLY1305_SHA256:"
                                      "TLS_AES_256_GCM_SHA384") != 1) {
        SSL_CTX_free(ssl);
        return NULL;
    }
    SSL_CTX_set_options(ssl, SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION |
                                 SSL_OP_CIPHER_SERVER_PREFERENCE | SSL_OP_NO_TICKET);
    SSL_CTX_set_num_tickets(ssl, 0);
    SSL_CTX_set_session_cache_mode(ssl, SSL_SESS_CACHE_OFF);
    SSL_CTX_set_mode(ssl, SSL_MODE_RELEASE_BUFFERS);
    SSL_CTX_set_verify(ssl, SSL_VERIFY_NONE, NULL);
    return ssl;
}

int sl_tls_ctx_create(const sl_tls_settings_t *s, sl_tls_ctx_t **out, sl_tls_source_t *source,
                      char *err, size_t err_len)
{
    *out = NULL;
    sl_tls_ctx_t *ctx = calloc(1, sizeof(*ctx));
    if (ctx)
        ctx->ssl = server_ctx_new();
    if (ctx && ctx->ssl)
        ctx->out_method = out_method_new();
    if (!ctx || !ctx->ssl || !ctx->out_method) {
        snprintf(err, err_len, "%s: cannot create a TLS context", s->section);
        sl_tls_ctx_free(ctx);
        return -1;
    }
    /* tls.md 2: generate only when allowed and no certificate file is there. */
    int rc;
    if (!s->self_signed) {
        *source = SL_TLS_SOURCE_FILES;
        rc = use_files(ctx->ssl, s, err, err_len);
    } else if (file_exists(s->cert_file)) {
        *source = SL_TLS_SOURCE_FILES_FOUND;
        rc = use_files(ctx->ssl, s, err, err_len);
    } else {
        *source = SL_TLS_SOURCE_SELF_SIGNED;
        rc = use_self_signed(ctx->ssl, s->section, err, err_len);
    }
    if (rc != 0) {
        sl_tls_ctx_free(ctx);
        return -1;
    }
    *out = ctx;
    return 0;
}

void sl_tls_ctx_free(sl_tls_ctx_t *ctx)
{
    if (!ctx)
        return;
    SSL_CTX_free(ctx->ssl);
    BIO_meth_free(ctx->out_method);
    free(ctx);
}

void *sl_tls_ctx_ssl_ctx(sl_tls_ctx_t *ctx)
{
    return ctx->ssl;
}

/* --- sessions ------------------------------------------------------------------- */

int sl_tls_session_new(sl_tls_ctx_t *ctx, sl_buf_t *out, sl_tls_session_t **s_out)
{
    *s_out = NULL;
    sl_tls_session_t *s = calloc(1, sizeof(*s));
    BIO *wbio = NULL;
    if (!s)
        return -ENOMEM;
    s->ssl = SSL_new(ctx->ssl);
    s->rbio = BIO_new(BIO_s_mem());
    wbio = BIO_new(ctx->out_method);
    if (!s->ssl || !s->rbio || !wbio) {
        SSL_free(s->ssl);
        BIO_free(s->rbio);
        BIO_free(wbio);
        free(s);
        return -ENOMEM;
    }
    /* An empty read BIO means "wait for more", not end of stream. */
    BIO_set_mem_eof_return(s->rbio, -1);
    BIO_set_data(wbio, out);
    BIO_up_ref(s->rbio); /* SSL_set_bio takes one reference; we keep ours */
    SSL_set_bio(s->ssl, s->rbio, wbio);
    SSL_set_accept_state(s->ssl);
    *s_out = s;
    return 0;
}

void sl_tls_session_free(sl_tls_session_t *s)
{
    if (!s)
        return;
    SSL_free(s->ssl); /* frees both BIOs' SSL references */
    BIO_free(s->rbio);
    free(s);
}

int sl_tls_input(sl_tls_session_t *s, const uint8_t *data, size_t n)
{
    while (n > 0) {
        int chunk = n > INT_MAX ? INT_MAX : (int)n;
        int w = BIO_write(s->rbio, data, chunk);
        if (w <= 0)
            return -ENOMEM;
        data += w;
        n -= (size_t)w;
    }
    return 0;
}

static int session_fail(sl_tls_session_t *s, int ssl_error)
{
    char why[120];
    openssl_reason(why, sizeof(why));
    if (!why[0])
        snprintf(why, sizeof(why), "SSL error %d", ssl_error);
    snprintf(s->error, sizeof(s->error), "%s", why);
    return -EPROTO;
}

int sl_tls_read(sl_tls_session_t *s, uint8_t *dst, size_t n)
{
    sl_assert(n > 0);
    size_t limit = n > INT_MAX ? INT_MAX : n;
    size_t got = 0;
    /* Record after record until dst is full or the input runs out: one
     * call decrypts all that a large receive brought. Each pass consumes
     * buffered input, so the loop ends with it. */
    while (got < limit) {
        int r = SSL_read(s->ssl, dst + got, (int)(limit - got));
        if (r > 0) {
            got += (size_t)r;
            continue;
        }
        int e = SSL_get_error(s->ssl, r);
        if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
            /* WANT_WRITE: the output BIO never refuses; kept for safety. */
            ERR_clear_error();
            break;
        }
        if (got > 0)
            break; /* what came before the end or the error is handed on first */
        return e == SSL_ERROR_ZERO_RETURN ? -ECONNRESET : session_fail(s, e);
    }
    return (int)got;
}

/* The largest TLS record on the wire: header, 2^14 bytes, and what TLS 1.2
 * and 1.3 may add (RFC 8446 5.2). */
#define SL_TLS_RECORD_WIRE_MAX (5u + 16384u + 256u)

size_t sl_tls_need(sl_tls_session_t *s, size_t stream_bytes)
{
    if (!SSL_is_init_finished(s->ssl))
        return 0;
    /* Every plaintext byte costs at least one ciphertext byte. Held now:
     * decrypted bytes (SSL_pending), ciphertext in the input BIO, and at
     * most one record OpenSSL has begun to read. */
    size_t held = (size_t)SSL_pending(s->ssl) + BIO_ctrl_pending(s->rbio) + SL_TLS_RECORD_WIRE_MAX;
    return stream_bytes > held ? stream_bytes - held : 0;
}

int sl_tls_write(sl_tls_session_t *s, const uint8_t *src, size_t n)
{
    if (!SSL_is_init_finished(s->ssl))
        return -EPROTO;
    while (n > 0) {
        int chunk = n > INT_MAX ? INT_MAX : (int)n;
        size_t written = 0;
        if (SSL_write_ex(s->ssl, src, (size_t)chunk, &written) != 1 || written == 0)
            return session_fail(s, SSL_get_error(s->ssl, 0));
        src += written;
        n -= written;
    }
    return 0;
}

bool sl_tls_established(const sl_tls_session_t *s)
{
    return SSL_is_init_finished(s->ssl);
}

const char *sl_tls_last_error(const sl_tls_session_t *s)
{
    return s->error[0] ? s->error : "unknown";
}
