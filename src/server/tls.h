/* TLS for the server's doors (TCP-TLS, WSS, and HTTPS later): a server
 * context built from PEM files or an ephemeral self-signed certificate
 * (tls.md 2-3), and per-connection sessions that run entirely in memory.
 *
 * A session does no socket I/O. Ciphertext from the socket goes in with
 * sl_tls_input; sl_tls_read drives the handshake and hands out plaintext;
 * sl_tls_write encrypts plaintext. Every byte OpenSSL wants to send
 * (handshake records, alerts, application data) is appended to the sl_buf_t
 * given at sl_tls_session_new, which the caller sends when it can. So the
 * event loop never blocks on a handshake, and nothing here knows of frames.
 *
 * Threads: a context may be shared by sessions of one thread; a session
 * belongs to one thread. */
#ifndef SL_SERVER_TLS_H
#define SL_SERVER_TLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/assert.h"
#include "base/bytes.h"

typedef struct sl_tls_ctx sl_tls_ctx_t;
typedef struct sl_tls_session sl_tls_session_t;

/* Where a server context's certificate comes from (tls.md 2, "Certificate
 * selection"). section names the settings in messages ("tcp.tls"). */
typedef struct sl_tls_settings {
    const char *section;
    bool self_signed;
    const char *cert_file;
    const char *key_file;
} sl_tls_settings_t;

/* How the certificate was chosen, for the log line and tests. */
typedef enum sl_tls_source {
    SL_TLS_SOURCE_FILES = 1,   /* self_signed = false: the PEM pair */
    SL_TLS_SOURCE_FILES_FOUND, /* self_signed = true, but cert_file exists: the PEM pair */
    SL_TLS_SOURCE_SELF_SIGNED, /* self_signed = true, no cert_file: generated in memory */
} sl_tls_source_t;

/* Builds a server context: TLS 1.2 and 1.3 with OpenSSL's default cipher
 * suites, no renegotiation, no session tickets or cache, no client
 * certificates. Returns 0, or -1 with a message naming the section and the
 * file in err (missing file, no certificate, no key, a key that does not
 * match). *source says which way the certificate was chosen. */
int sl_tls_ctx_create(const sl_tls_settings_t *s, sl_tls_ctx_t **out, sl_tls_source_t *source,
                      char *err, size_t err_len) SL_WUR;
void sl_tls_ctx_free(sl_tls_ctx_t *ctx);
/* The OpenSSL SSL_CTX inside (an HTTPS library can be handed it). */
void *sl_tls_ctx_ssl_ctx(sl_tls_ctx_t *ctx);

/* A server-side session whose output goes to out (borrowed: it must outlive
 * the session). 0 or -ENOMEM. */
int sl_tls_session_new(sl_tls_ctx_t *ctx, sl_buf_t *out, sl_tls_session_t **s) SL_WUR;
void sl_tls_session_free(sl_tls_session_t *s);
/* Ciphertext received: kept until sl_tls_read consumes it. 0 or -ENOMEM. */
int sl_tls_input(sl_tls_session_t *s, const uint8_t *data, size_t n) SL_WUR;
/* Up to n (> 0) bytes of plaintext into dst, driving the handshake first,
 * as many records as the input holds. Returns the count, 0 when more
 * ciphertext is needed, -ECONNRESET when
 * the peer closed the TLS session, -EPROTO when the bytes are not TLS or a
 * handshake fails (the reason is in sl_tls_last_error). */
int sl_tls_read(sl_tls_session_t *s, uint8_t *dst, size_t n) SL_WUR;
/* Encrypts n bytes into out. 0, or -EPROTO before the handshake is done or
 * when OpenSSL fails, -ENOMEM when out cannot grow. */
int sl_tls_write(sl_tls_session_t *s, const uint8_t *src, size_t n) SL_WUR;
/* Ciphertext bytes that must still arrive, at the least, before
 * stream_bytes more plaintext can be read (0 during the handshake or when
 * what is held may be enough): a lower bound a receive may wait for. */
size_t sl_tls_need(sl_tls_session_t *s, size_t stream_bytes);
/* True once the handshake has completed. */
bool sl_tls_established(const sl_tls_session_t *s);
/* The reason of the last -EPROTO, for the log ("wrong version number"). */
const char *sl_tls_last_error(const sl_tls_session_t *s);

/* The TCP-TLS door's transport (loop.h): sessions of the context given as
 * transport_ctx carry the plain-TCP byte stream. */
struct sl_conn_transport;
extern const struct sl_conn_transport sl_tls_transport;

#endif
