/* The HTTP door: Iggy's REST API (docs/http.md) served by libmicrohttpd on
 * its own threads, one per HTTP connection, so a slow or hostile HTTP
 * client holds a thread of its own and never the event loop.
 *
 * Every command a route stands for goes to the loop the way a binary client
 * sends it: src/rest turns the route and its JSON into a request frame, the
 * frame goes over one of a fixed set of internal connections (socketpairs
 * whose loop ends the loop adopted, sl_loop_adopt), the loop's gate,
 * admission, apply and reads answer it exactly as for TCP, and src/rest
 * turns the reply back into JSON. The set of internal connections
 * (http.sessions) is the bounded queue between the two sides: a request
 * waits for a free one; the socket buffers carry the bytes. Nothing on the
 * HTTP threads touches partitions or metadata.
 *
 * Authentication is the HTTP side's (http_auth.c): it checks a bearer JWT
 * with its own key and binds an internal session to the token's user with
 * the internal BIND command (internal.h), which commits a Register as a
 * login does; a raw personal access token is resolved by the loop
 * (RESOLVE_PAT). */
#ifndef SL_SERVER_HTTP_H
#define SL_SERVER_HTTP_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/assert.h"
#include "base/bytes.h"
#include "rest/jwt.h"
#include "server/config.h"

struct sl_server;

/* --- internal connections (http_link.c) -------------------------------------------------- */

/* One internal connection: its HTTP-side socket and the session it holds.
 * A link is used by one HTTP thread at a time (busy). */
typedef struct sl_http_link {
    int fd;     /* -1 while dead (the loop side closed; replaced on the tick) */
    bool busy;  /* handed to a thread */
    bool bound; /* the loop side's session is bound to user_id */
    uint32_t user_id;
    uint64_t user_created_at;
    sl_u128_t client;
    uint64_t session;
    uint64_t request; /* next request number of a replicated operation */
    uint64_t used;    /* links.clock at the last release: least recently used first */
    sl_buf_t tx;
    sl_buf_t rx;
} sl_http_link_t;

typedef struct sl_http_links {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    uint32_t count;
    sl_http_link_t *items;
    uint64_t clock;
    uint32_t frame_max;
    bool closing;
} sl_http_links_t;

/* An answer from the loop. */
typedef struct sl_http_answer {
    uint32_t code;   /* 0, or the status / result code / eviction's error */
    uint8_t evicted; /* eviction reason when the loop evicted the session */
    uint8_t operation;
    sl_span_t payload; /* after the result section; borrows link->rx */
} sl_http_answer_t;

/* Makes count socketpairs and has the loop adopt their other ends (loop
 * thread, before or during run). 0 or -errno. */
int sl_http_links_open(sl_http_links_t *links, struct sl_server *srv, uint32_t count) SL_WUR;
void sl_http_links_close(sl_http_links_t *links);
/* Replaces dead links with new socketpairs (the loop's tick). */
void sl_http_links_heal(sl_http_links_t *links, struct sl_server *srv);

/* A free link, preferring one bound to (user_id, created_at), then an
 * unbound one, then the least recently used. Waits while all are busy;
 * NULL once closing or when every link is dead. */
sl_http_link_t *sl_http_links_acquire(sl_http_links_t *links, bool want_user, uint32_t user_id,
                                      uint64_t created_at);
void sl_http_links_release(sl_http_links_t *links, sl_http_link_t *link);

/* One request and its answer. 0, or -errno when the link broke (it is then
 * dead: closed and marked for replacement). */
int sl_http_link_call(sl_http_links_t *links, sl_http_link_t *link, uint8_t operation,
                      uint32_t code, sl_span_t body, sl_http_answer_t *out) SL_WUR;
/* Binds link's session to the user (Logout of another user first). 0, a
 * positive IggyError code (40 when the user is gone or inactive), or
 * -errno. */
int sl_http_link_bind(sl_http_links_t *links, sl_http_link_t *link, uint32_t user_id,
                      uint64_t created_at) SL_WUR;
/* Logs in with a password (LoginRegister, Argon2id on the hash pool): the
 * session is bound to that user. 0 with *user_id / *created_at, a positive
 * IggyError code, or -errno. */
int sl_http_link_login(sl_http_links_t *links, sl_http_link_t *link, sl_span_t username,
                       sl_span_t password, uint32_t *user_id, uint64_t *created_at) SL_WUR;

/* --- authentication (http_auth.c) -------------------------------------------------------- */

/* Logged-out tokens kept at once (their jti until they expire); a logout
 * past it is answered 503. */
#define SL_HTTP_REVOKED_MAX 65536u

typedef struct sl_http_revoked sl_http_revoked_t;

typedef struct sl_http_auth {
    sl_jwt_params_t params;
    uint8_t key[512];
    size_t key_len;
    uint64_t expiry_s;
    uint64_t not_before_s;
    char revoked_path[SL_CONFIG_PATH_CAPACITY + 32];
    pthread_mutex_t mu; /* the revocation set and its file */
    sl_http_revoked_t *revoked;
} sl_http_auth_t;

/* Loads or creates the signing key (<data>/http_jwt_key, 0600, when no
 * secret is configured) and the revocation list (<data>/http_revoked). */
int sl_http_auth_open(sl_http_auth_t *a, const sl_config_t *cfg, char *err, size_t err_len) SL_WUR;
void sl_http_auth_close(sl_http_auth_t *a);
/* Issues a token for the user; *expiry_s gets its exp. 0 or -1. */
int sl_http_auth_issue(sl_http_auth_t *a, uint32_t user_id, uint64_t created_at, sl_buf_t *out,
                       uint64_t *expiry_s) SL_WUR;
/* Verifies a token (signature, claims, not logged out). 0 or -1. */
int sl_http_auth_verify(sl_http_auth_t *a, sl_span_t token, sl_jwt_claims_t *out) SL_WUR;
/* Logs a token out until it expires (durably). 0, or -1 when the set is
 * full or the file cannot be written. */
int sl_http_auth_revoke(sl_http_auth_t *a, const sl_jwt_claims_t *c) SL_WUR;

/* --- the door (http.c) ----------------------------------------------------------------------- */

typedef struct sl_http sl_http_t;

/* HTTPS (http.tls): the PEM texts handed to libmicrohttpd, which keeps
 * pointing at them while it serves (NUL-terminated, owned here). */
typedef struct sl_http_tls {
    sl_buf_t cert;
    sl_buf_t key;
} sl_http_tls_t;

/* Checks the certificate chain and key the way the other doors do (a
 * message naming http.tls and the file when one does not load or the key
 * does not match the leaf), then reads both files into t. Before anything
 * is bound. 0 or -SL_ERR_INVALID_CONFIGURATION. */
int sl_http_tls_load(const sl_config_t *cfg, sl_http_tls_t *t, char *err, size_t err_len) SL_WUR;
/* Wipes the key and frees both; after sl_http_stop. */
void sl_http_tls_free(sl_http_tls_t *t);

/* Binds the listener (before the data directory is touched, like TCP's). */
int sl_http_bind(const sl_config_t *cfg, int *fd, uint16_t *port, char *err, size_t err_len) SL_WUR;
/* Opens the links, the keys, and starts serving on listen_fd (taken), over
 * HTTPS when tls is not NULL (it must outlive the door). After the loop
 * exists, before it runs. */
int sl_http_start(struct sl_server *srv, int listen_fd, const sl_http_tls_t *tls, sl_http_t **out,
                  char *err, size_t err_len) SL_WUR;
/* Stops serving and joins the threads (the loop must have stopped first,
 * so requests waiting for it are answered 503). */
void sl_http_stop(sl_http_t *h);
/* The loop's tick: replaces dead internal connections. */
void sl_http_tick(sl_http_t *h, struct sl_server *srv);

#endif
