/* The HTTP door's internal connections to the loop (http.h): socketpairs
 * whose loop ends are adopted connections with internal sessions, a pool
 * that hands them to HTTP threads one at a time (the bounded hand-off), and
 * the request/reply exchange over them with the numbering rules of
 * framing.md 3 and the reply decode order of framing.md 7.2. */
#include <errno.h>
#include <sluice/error.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "auth/secret.h"
#include "base/log.h"
#include "server/http.h"
#include "server/internal.h"
#include "server/server.h"
#include "wire/codec.h"
#include "wire/cmd_users.h"
#include "wire/header.h"

/* How long a thread waits for the loop's answer, and for a free link.
 * Beyond the loop's own reply and frame timeouts: a link that waits this
 * long is given up (closed) rather than left to answer a later request. */
#define SL_HTTP_ANSWER_TIMEOUT_S  60
#define SL_HTTP_ACQUIRE_TIMEOUT_S 30

static sl_u128_t fresh_client(void)
{
    uint8_t b[16] = {0};
    if (sl_random_bytes(b, sizeof(b)) != 0)
        b[0] = 1;
    sl_u128_t c = sl_load_u128(b);
    if (sl_u128_is_zero(c))
        c.lo = 1;
    return c;
}

/* One socketpair; the loop adopts its second end as an internal session. */
static int link_connect(sl_http_link_t *l, struct sl_server *srv)
{
    int fds[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0)
        return -errno;
    struct timeval tv = {SL_HTTP_ANSWER_TIMEOUT_S, 0};
    setsockopt(fds[0], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    setsockopt(fds[0], SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    sl_conn_t *conn = sl_loop_adopt(srv->loop, fds[1], "internal:http");
    sl_session_t *s = conn ? sl_conn_user(conn) : NULL;
    if (!s) {
        close(fds[0]);
        return -ECONNREFUSED;
    }
    s->internal = true;
    srv->internal_count++;
    l->fd = fds[0];
    l->bound = false;
    l->client = fresh_client();
    l->session = 0;
    l->request = 1;
    return 0;
}

int sl_http_links_open(sl_http_links_t *links, struct sl_server *srv, uint32_t count)
{
    memset(links, 0, sizeof(*links));
    pthread_mutex_init(&links->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&links->cv, &ca);
    pthread_condattr_destroy(&ca);
    links->frame_max = srv->frame_max;
    links->items = calloc(count, sizeof(*links->items));
    if (!links->items)
        return -ENOMEM;
    links->count = count;
    for (uint32_t i = 0; i < count; i++) {
        sl_http_link_t *l = &links->items[i];
        l->fd = -1;
        sl_buf_init(&l->tx, srv->frame_max);
        sl_buf_init(&l->rx, srv->frame_max);
        int rc = link_connect(l, srv);
        if (rc != 0)
            return rc;
    }
    return 0;
}

void sl_http_links_close(sl_http_links_t *links)
{
    pthread_mutex_lock(&links->mu);
    links->closing = true;
    pthread_cond_broadcast(&links->cv);
    pthread_mutex_unlock(&links->mu);
    for (uint32_t i = 0; i < links->count; i++) {
        sl_http_link_t *l = &links->items[i];
        if (l->fd >= 0)
            close(l->fd);
        sl_buf_free(&l->tx);
        sl_buf_free(&l->rx);
    }
    free(links->items);
    pthread_cond_destroy(&links->cv);
    pthread_mutex_destroy(&links->mu);
    memset(links, 0, sizeof(*links));
}

void sl_http_links_heal(sl_http_links_t *links, struct sl_server *srv)
{
    pthread_mutex_lock(&links->mu);
    for (uint32_t i = 0; i < links->count && !links->closing; i++) {
        sl_http_link_t *l = &links->items[i];
        if (l->fd >= 0 || l->busy)
            continue;
        int rc = link_connect(l, srv);
        if (rc != 0) {
            sl_log_warn("http: cannot replace an internal connection: %s", strerror(-rc));
            break;
        }
        sl_log_info("http: replaced a broken internal connection");
        pthread_cond_broadcast(&links->cv);
    }
    pthread_mutex_unlock(&links->mu);
}

/* --- the pool ----------------------------------------------------------------------------- */

static sl_http_link_t *pick(sl_http_links_t *links, bool want_user, uint32_t user_id,
                            uint64_t created_at, bool *any_alive)
{
    sl_http_link_t *same = NULL, *unbound = NULL, *oldest = NULL;
    *any_alive = false;
    for (uint32_t i = 0; i < links->count; i++) {
        sl_http_link_t *l = &links->items[i];
        if (l->fd < 0)
            continue;
        *any_alive = true;
        if (l->busy)
            continue;
        if (want_user && l->bound && l->user_id == user_id && l->user_created_at == created_at)
            same = same ? same : l;
        else if (!l->bound)
            unbound = unbound ? unbound : l;
        else if (!oldest || l->used < oldest->used)
            oldest = l;
    }
    return same ? same : unbound ? unbound : oldest;
}

sl_http_link_t *sl_http_links_acquire(sl_http_links_t *links, bool want_user, uint32_t user_id,
                                      uint64_t created_at)
{
    struct timespec deadline;
    clock_gettime(CLOCK_MONOTONIC, &deadline);
    deadline.tv_sec += SL_HTTP_ACQUIRE_TIMEOUT_S;
    pthread_mutex_lock(&links->mu);
    sl_http_link_t *l = NULL;
    /* Bounded by the deadline: each wait ends at a release, a heal or it. */
    while (!links->closing) {
        bool any_alive;
        l = pick(links, want_user, user_id, created_at, &any_alive);
        if (l || pthread_cond_timedwait(&links->cv, &links->mu, &deadline) == ETIMEDOUT)
            break;
    }
    if (l)
        l->busy = true;
    pthread_mutex_unlock(&links->mu);
    return l;
}

void sl_http_links_release(sl_http_links_t *links, sl_http_link_t *link)
{
    pthread_mutex_lock(&links->mu);
    link->busy = false;
    link->used = ++links->clock;
    pthread_cond_signal(&links->cv);
    pthread_mutex_unlock(&links->mu);
}

/* --- the exchange ----------------------------------------------------------------------------- */

static int link_broken(sl_http_links_t *links, sl_http_link_t *l, int err)
{
    pthread_mutex_lock(&links->mu);
    if (l->fd >= 0)
        close(l->fd);
    l->fd = -1;
    l->bound = false;
    pthread_mutex_unlock(&links->mu);
    sl_log_warn("http: internal connection broke: %s", strerror(err));
    return -err;
}

static int send_all(int fd, struct iovec *iov, int iovcnt)
{
    for (int guard = 0; iovcnt > 0 && guard < 1 << 20; guard++) {
        struct msghdr msg = {.msg_iov = iov, .msg_iovlen = (size_t)iovcnt};
        ssize_t n = sendmsg(fd, &msg, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return n < 0 ? (errno == EAGAIN ? ETIMEDOUT : errno) : EPIPE;
        while (iovcnt > 0 && (size_t)n >= iov->iov_len) {
            n -= (ssize_t)iov->iov_len;
            iov++;
            iovcnt--;
        }
        if (iovcnt > 0) {
            iov->iov_base = (uint8_t *)iov->iov_base + n;
            iov->iov_len -= (size_t)n;
        }
    }
    return 0;
}

static int recv_all(int fd, uint8_t *p, size_t n)
{
    size_t got = 0;
    while (got < n) {
        ssize_t r = recv(fd, p + got, n - got, 0);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return r < 0 ? (errno == EAGAIN ? ETIMEDOUT : errno) : ECONNRESET;
        got += (size_t)r;
    }
    return 0;
}

static void header_fill(const sl_http_link_t *l, uint8_t operation, uint32_t code, sl_span_t body,
                        uint8_t hdr[SL_HEADER_SIZE])
{
    sl_request_header_t h = {
        .size = (uint32_t)(SL_HEADER_SIZE + body.len),
        .client = l->client,
        .request_checksum = sl_request_checksum(body),
        .operation = operation,
        .code = operation == SL_OP_NON_REPLICATED ? code : 0,
    };
    if (operation != SL_OP_REGISTER) {
        h.session = l->session;
        h.request = l->request;
    }
    sl_request_header_encode(hdr, &h);
}

/* The decode order of framing.md 7.2 for the replies our server sends. */
static int answer_read(sl_http_link_t *l, sl_http_answer_t *out)
{
    *out = (sl_http_answer_t){0};
    const uint8_t *hdr = l->rx.data;
    sl_span_t body = sl_span(hdr + SL_HEADER_SIZE, l->rx.len - SL_HEADER_SIZE);
    if (sl_header_command(hdr) == SL_COMMAND_EVICTION) {
        sl_eviction_header_t e;
        if (sl_eviction_header_decode(hdr, &e) != 0)
            return EPROTO;
        out->evicted = e.reason;
        out->code = (uint32_t)sl_eviction_error(&e);
        return 0;
    }
    out->operation = hdr[SL_REP_OFF_OPERATION];
    out->code = sl_load_u32(hdr + SL_REP_OFF_STATUS);
    if (out->code != 0)
        return 0;
    bool framed = sl_op_result_framed(out->operation) || out->operation == SL_OP_REGISTER;
    if (!framed || body.len == 0) {
        out->payload = body;
        return 0;
    }
    return sl_result_split(body, &out->code, &out->payload) == 0 ? 0 : EPROTO;
}

int sl_http_link_call(sl_http_links_t *links, sl_http_link_t *l, uint8_t operation, uint32_t code,
                      sl_span_t body, sl_http_answer_t *out)
{
    sl_assert(l->busy);
    if (l->fd < 0)
        return -ECONNRESET;
    uint8_t hdr[SL_HEADER_SIZE];
    header_fill(l, operation, code, body, hdr);
    if (operation != SL_OP_REGISTER && operation != SL_OP_NON_REPLICATED)
        l->request++;
    struct iovec iov[2] = {{hdr, SL_HEADER_SIZE}, {(void *)body.ptr, body.len}};
    int err = send_all(l->fd, iov, body.len ? 2 : 1);
    sl_buf_reset(&l->rx);
    uint8_t *rh = sl_buf_extend(&l->rx, SL_HEADER_SIZE);
    if (!err)
        err = rh ? recv_all(l->fd, rh, SL_HEADER_SIZE) : ENOMEM;
    uint32_t size = err ? 0 : sl_header_size(l->rx.data);
    if (!err && (size < SL_HEADER_SIZE || size > links->frame_max))
        err = EPROTO;
    uint8_t *rest = err ? NULL : sl_buf_extend(&l->rx, size - SL_HEADER_SIZE);
    if (!err && !rest)
        err = ENOMEM;
    if (!err)
        err = recv_all(l->fd, rest, size - SL_HEADER_SIZE);
    if (!err)
        err = answer_read(l, out);
    return err ? link_broken(links, l, err) : 0;
}

/* --- sessions ------------------------------------------------------------------------------- */

/* The bound session ends (Logout). */
static int link_unbind(sl_http_links_t *links, sl_http_link_t *l)
{
    if (!l->bound)
        return 0;
    sl_http_answer_t a;
    int rc = sl_http_link_call(links, l, SL_OP_LOGOUT, 0, sl_span(NULL, 0), &a);
    l->bound = false;
    l->session = 0;
    l->request = 1;
    l->client = fresh_client();
    return rc;
}

static int take_login(sl_http_link_t *l, const sl_http_answer_t *a)
{
    sl_login_register_reply_t r;
    sl_arena_t arena;
    sl_arena_init(&arena, 1024, 1u << 16);
    int rc = sl_login_register_reply_decode(a->payload, &arena, &r);
    sl_arena_free(&arena);
    if (rc != 0 || r.session == 0)
        return SL_ERR_INVALID_FORMAT;
    l->bound = true;
    l->session = r.session;
    l->user_id = r.user_id;
    l->request = 1;
    return 0;
}

int sl_http_link_bind(sl_http_links_t *links, sl_http_link_t *l, uint32_t user_id,
                      uint64_t created_at)
{
    if (l->bound && l->user_id == user_id && l->user_created_at == created_at)
        return 0;
    int rc = link_unbind(links, l);
    if (rc < 0)
        return rc;
    uint8_t body[SL_INTERNAL_IDENTITY_SIZE];
    sl_store_u32(body, user_id);
    sl_store_u64(body + 4, created_at);
    sl_http_answer_t a;
    rc = sl_http_link_call(links, l, SL_OP_NON_REPLICATED, SL_INTERNAL_BIND,
                           sl_span(body, sizeof(body)), &a);
    if (rc != 0)
        return rc;
    if (a.code != 0)
        return (int)a.code;
    rc = take_login(l, &a);
    if (rc == 0)
        l->user_created_at = created_at;
    return rc;
}

int sl_http_link_login(sl_http_links_t *links, sl_http_link_t *l, sl_span_t username,
                       sl_span_t password, uint32_t *user_id, uint64_t *created_at)
{
    int rc = link_unbind(links, l);
    if (rc < 0)
        return rc;
    sl_login_register_request_t q = {
        .version = {.protocol_version = SL_PROTOCOL_VERSION,
                    .sdk_name = sl_span_str("sluice-http"),
                    .sdk_version = sl_span_str(SL_SERVER_VERSION)},
        .login = {.username = username, .password = password},
    };
    sl_buf_reset(&l->tx);
    if (username.len == 0 || username.len > 255 || password.len > 255 ||
        sl_login_register_request_encode(&l->tx, &q) != 0)
        return SL_ERR_INVALID_CREDENTIALS;
    sl_http_answer_t a;
    rc = sl_http_link_call(links, l, SL_OP_REGISTER, 0, sl_buf_span(&l->tx), &a);
    if (rc != 0)
        return rc;
    if (a.code != 0)
        return (int)a.code;
    if ((rc = take_login(l, &a)) != 0)
        return rc;
    /* The user's incarnation goes into the token (jwt.h). */
    rc =
        sl_http_link_call(links, l, SL_OP_NON_REPLICATED, SL_INTERNAL_WHOAMI, sl_span(NULL, 0), &a);
    if (rc != 0)
        return rc;
    if (a.code != 0 || a.payload.len != SL_INTERNAL_IDENTITY_SIZE)
        return a.code ? (int)a.code : SL_ERR_INVALID_FORMAT;
    *user_id = sl_load_u32(a.payload.ptr);
    *created_at = sl_load_u64(a.payload.ptr + 4);
    l->user_created_at = *created_at;
    return 0;
}
