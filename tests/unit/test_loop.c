/* The event loop over loopback: a loop thread runs a test handler that
 * answers each frame with a Reply echoing its body, and blocking clients
 * check framing, lockstep delivery, bad sizes, disconnects, stop, the
 * connection cap and fairness, the per-connection frame limit, the frame
 * budget and the two timeouts. Exits 77 when io_uring is unavailable. */
#include "testutil.h"

#include <errno.h>
#include <liburing.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "server/conn.h"
#include "server/loop.h"
#include "wire/header.h"

/* --- the test handler ----------------------------------------------------- */

/* What the handler does with a frame, chosen by the client through the
 * request header's timestamp field (the loop never looks at it). */
enum {
    ACT_ECHO = 0,
    ACT_DROP = 1,        /* sl_conn_done, no reply */
    ACT_REPLY_CLOSE = 2, /* echo, then close */
    ACT_TAKE = 3,        /* take the frame buffer over, echo from it */
    ACT_CLOSE = 4,       /* sl_conn_close, no reply */
    ACT_HOLD = 5,        /* never answered (stop's grace period) */
    ACT_RAISE = 6,       /* raise the frame limit to the loop's max_frame, then echo */
};

/* Answer in on_frame, on the next tick, or at the end of the turn. */
enum { MODE_NOW, MODE_DEFER, MODE_TURN_END };

#define MAX_DEFERRED 128
#define MAX_IDS      4096

typedef struct tconn {
    uint8_t hdr[SL_HEADER_SIZE]; /* the reply header being written */
    const uint8_t *frame;        /* delivered and not answered yet */
    uint32_t size;
    uint8_t *taken; /* ACT_TAKE: ours to give back to the loop's frame pool */
    bool outstanding;
    uint64_t turn;
    uint32_t in_turn;
} tconn_t;

typedef struct tctx {
    int mode;
    const char *peer_prefix; /* what every peer text starts with */
    atomic_uint opens, closes, frames, sent, ticks, violations, bad_peer, turn_ends;
    uint32_t max_in_turn; /* loop thread; read after join */
    sl_conn_t *deferred[MAX_DEFERRED];
    uint32_t ndeferred;
    uint32_t ids[MAX_IDS];
    uint32_t nids;
    uint32_t open_limit; /* frame limit set on open; 0 leaves the loop's */
    /* Delivery order by request number, and loop stats the tick copies for
     * the test's thread (sl_loop_stats is for the loop thread). */
    uint64_t order[MAX_IDS];
    atomic_uint norder;
    atomic_ullong budget_used;
    atomic_uint budget_waiting, budget_waits, over_limit, frame_timeouts, reply_timeouts;
} tctx_t;

static void h_open(void *ctxp, sl_conn_t *conn)
{
    tctx_t *ctx = ctxp;
    tconn_t *tc = calloc(1, sizeof(*tc));
    if (!tc)
        abort(); /* no cmocka assertion off the test's thread */
    sl_conn_set_user(conn, tc);
    const char *want = ctx->peer_prefix ? ctx->peer_prefix : "127.0.0.1:";
    if (strncmp(sl_conn_peer(conn), want, strlen(want)) != 0 || sl_conn_id(conn) == 0)
        ctx->bad_peer++;
    if (ctx->nids < MAX_IDS)
        ctx->ids[ctx->nids++] = sl_conn_id(conn);
    if (ctx->open_limit)
        sl_conn_set_frame_limit(conn, ctx->open_limit);
    ctx->opens++;
}

/* Runs on the loop thread, where a cmocka assertion cannot unwind: every
 * surprise is counted in violations and checked after the join. */
static void h_answer(tctx_t *ctx, sl_conn_t *conn)
{
    tconn_t *tc = sl_conn_user(conn);
    const uint8_t *f = tc->frame;
    uint8_t act = f[SL_REQ_OFF_TIMESTAMP];
    if (act == ACT_DROP || act == ACT_CLOSE) {
        tc->outstanding = false;
        tc->frame = NULL;
        if (act == ACT_DROP)
            sl_conn_done(conn);
        else
            sl_conn_close(conn);
        return;
    }
    if (act == ACT_HOLD)
        return;
    if (act == ACT_RAISE)
        sl_conn_set_frame_limit(conn, UINT32_MAX); /* clamped to max_frame */
    if (act == ACT_TAKE) {
        tc->taken = sl_conn_take_frame(conn);
        if (tc->taken != f || sl_conn_take_frame(conn) != NULL)
            ctx->violations++;
    }
    sl_reply_header_t h = {.size = tc->size,
                           .request = sl_load_u64(f + SL_REQ_OFF_REQUEST),
                           .operation = f[SL_REQ_OFF_OPERATION],
                           .client = {1, 0}};
    sl_reply_header_encode(tc->hdr, &h);
    /* The body goes back in 1..7 runs (past the 4 kept inline), with an
     * empty run in front, all pointing into the request frame. */
    struct iovec iov[9] = {{tc->hdr, SL_HEADER_SIZE}, {tc->hdr, 0}};
    uint32_t body = tc->size - SL_HEADER_SIZE, runs = 1 + tc->size % 7, off = 0;
    int n = 2;
    for (uint32_t i = 0; i < runs; i++, n++) {
        uint32_t len = i + 1 == runs ? body - off : body / runs;
        iov[n] = (struct iovec){(void *)(uintptr_t)(f + SL_HEADER_SIZE + off), len};
        off += len;
    }
    tc->frame = NULL;
    if (sl_conn_reply(conn, iov, 0) != -EINVAL || sl_conn_reply(conn, NULL, 1) != -EINVAL)
        ctx->violations++;
    int err =
        act == ACT_REPLY_CLOSE ? sl_conn_reply_close(conn, iov, n) : sl_conn_reply(conn, iov, n);
    if (err != 0 && !(err == -ECONNRESET && sl_conn_closing(conn)))
        ctx->violations++;
    /* Lockstep: a second answer to the same frame is refused. */
    if (err == 0 && sl_conn_reply(conn, iov, n) != -EINVAL)
        ctx->violations++;
}

static void h_frame(void *ctxp, sl_conn_t *conn, const uint8_t *frame, uint32_t size)
{
    tctx_t *ctx = ctxp;
    tconn_t *tc = sl_conn_user(conn);
    unsigned at = ctx->norder;
    if (at < MAX_IDS) {
        ctx->order[at] = sl_load_u64(frame + SL_REQ_OFF_REQUEST);
        ctx->norder = at + 1;
    }
    ctx->frames++;
    if (tc->outstanding)
        ctx->violations++; /* delivered before the previous one was answered */
    tc->outstanding = true;
    uint64_t turn = sl_loop_turn(sl_conn_loop(conn));
    tc->in_turn = tc->turn == turn ? tc->in_turn + 1 : 1;
    tc->turn = turn;
    if (tc->in_turn > ctx->max_in_turn)
        ctx->max_in_turn = tc->in_turn;
    if (size != sl_header_size(frame))
        ctx->violations++;
    tc->frame = frame;
    tc->size = size;
    if ((ctx->mode == MODE_DEFER || ctx->mode == MODE_TURN_END) && ctx->ndeferred < MAX_DEFERRED) {
        ctx->deferred[ctx->ndeferred++] = conn;
        return;
    }
    h_answer(ctx, conn);
}

static void h_sent(void *ctxp, sl_conn_t *conn)
{
    tctx_t *ctx = ctxp;
    tconn_t *tc = sl_conn_user(conn);
    tc->outstanding = false;
    sl_frame_pool_put(sl_loop_frame_pool(sl_conn_loop(conn)), tc->taken);
    tc->taken = NULL;
    ctx->sent++;
}

static void h_close(void *ctxp, sl_conn_t *conn)
{
    tctx_t *ctx = ctxp;
    tconn_t *tc = sl_conn_user(conn);
    for (uint32_t i = 0; i < ctx->ndeferred; i++) {
        if (ctx->deferred[i] == conn)
            ctx->deferred[i] = ctx->deferred[--ctx->ndeferred];
    }
    sl_frame_pool_put(sl_loop_frame_pool(sl_conn_loop(conn)), tc->taken);
    free(tc);
    ctx->closes++;
}

static void answer_deferred(tctx_t *ctx)
{
    uint32_t n = ctx->ndeferred;
    ctx->ndeferred = 0;
    for (uint32_t i = 0; i < n; i++)
        h_answer(ctx, ctx->deferred[i]);
}

static void h_tick(void *ctxp, sl_loop_t *loop)
{
    tctx_t *ctx = ctxp;
    sl_loop_stats_t st;
    sl_loop_stats(loop, &st);
    ctx->budget_used = st.budget_used;
    ctx->budget_waiting = st.budget_waiting;
    ctx->budget_waits = (unsigned)st.budget_waits;
    ctx->over_limit = (unsigned)st.over_limit;
    ctx->frame_timeouts = (unsigned)st.frame_timeouts;
    ctx->reply_timeouts = (unsigned)st.reply_timeouts;
    ctx->ticks++;
    if (ctx->mode == MODE_DEFER)
        answer_deferred(ctx);
}

/* Every frame of the turn has been delivered: nothing may be left that a
 * connection still has to deliver this turn (each gets its budget). */
static void h_turn_end(void *ctxp, sl_loop_t *loop)
{
    tctx_t *ctx = ctxp;
    (void)loop;
    ctx->turn_ends++;
    if (ctx->mode == MODE_TURN_END)
        answer_deferred(ctx);
}

/* --- the server fixture --------------------------------------------------- */

typedef struct server {
    sl_loop_t *loop;
    pthread_t thread;
    tctx_t ctx;
    int run_ret;
    uint16_t port;
    sl_loop_stats_t stats;
    sl_frame_pool_stats_t pool;
} server_t;

static void *server_main(void *arg)
{
    server_t *s = arg;
    s->run_ret = sl_loop_run(s->loop);
    return NULL;
}

static void server_config(sl_loop_config_t *cfg, server_t *s)
{
    sl_loop_config_init(cfg);
    cfg->cb = (sl_loop_callbacks_t){h_open, h_frame, h_sent, h_close, h_tick, h_turn_end};
    cfg->ctx = &s->ctx;
}

static void server_start_cfg(server_t *s, const sl_loop_config_t *cfg, int mode)
{
    s->ctx.mode = mode;
    int err = sl_loop_create(cfg, &s->loop);
    if (err)
        fprintf(stderr, "sl_loop_create: %s\n", sl_loop_diagnose(err));
    assert_int_equal(err, 0);
    s->port = sl_loop_port(s->loop);
    assert_int_not_equal(s->port, 0);
    assert_int_equal(pthread_create(&s->thread, NULL, server_main, s), 0);
}

static server_t *server_start(int mode)
{
    server_t *s = calloc(1, sizeof(*s));
    assert_non_null(s);
    sl_loop_config_t cfg;
    server_config(&cfg, s);
    cfg.tick_ms = 10; /* deferred answers come on ticks */
    server_start_cfg(s, &cfg, mode);
    return s;
}

/* Stops, joins and checks that every opened connection was closed. */
static void server_stop(server_t *s)
{
    sl_loop_stop(s->loop);
    assert_int_equal(pthread_join(s->thread, NULL), 0);
    assert_int_equal(s->run_ret, 0);
    sl_loop_stats(s->loop, &s->stats);
    assert_int_equal(s->stats.conns, 0);
    assert_int_equal(s->ctx.opens, s->ctx.closes);
    assert_int_equal(s->stats.closed, s->stats.accepted);
    assert_int_equal(s->ctx.violations, 0);
    assert_int_equal(s->ctx.bad_peer, 0);
    /* Every frame and spill buffer went back to the pool. */
    sl_frame_pool_stats(sl_loop_frame_pool(s->loop), &s->pool);
    assert_int_equal(s->pool.out_buffers, 0);
    sl_loop_destroy(s->loop);
    s->loop = NULL;
}

/* Polls a counter the loop thread updates. The bound only turns a hang
 * into a failure; no test depends on how fast anything happens. */
static void wait_for(atomic_uint *counter, unsigned want)
{
    struct timespec ts = {0, 1000000};
    for (int i = 0; i < 60000 && *counter < want; i++)
        nanosleep(&ts, NULL);
    assert_true(*counter >= want);
}

/* --- clients ---------------------------------------------------------------- */

/* Client helpers return false instead of asserting so that the worker
 * threads can use them; the main thread wraps them in assert_true. */
static int cl_connect_fd(uint16_t port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        return -1;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0) {
        close(fd);
        return -1;
    }
    struct timeval tv = {60, 0}; /* hang guard only */
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    return fd;
}

static int cl_connect(uint16_t port)
{
    int fd = cl_connect_fd(port);
    assert_true(fd >= 0);
    return fd;
}

static bool send_all(int fd, const void *p, size_t n)
{
    const uint8_t *b = p;
    while (n > 0) {
        ssize_t w = send(fd, b, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return false;
        b += w;
        n -= (size_t)w;
    }
    return true;
}

static void cl_send(int fd, const void *p, size_t n)
{
    assert_true(send_all(fd, p, n));
}

/* false on end of stream or error */
static bool recv_all(int fd, void *p, size_t n)
{
    uint8_t *b = p;
    while (n > 0) {
        ssize_t r = recv(fd, b, n, 0);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return false;
        b += r;
        n -= (size_t)r;
    }
    return true;
}

/* The server closed: end of stream or reset, not a timeout. */
static bool cl_closed(int fd)
{
    uint8_t b;
    ssize_t r;
    do {
        r = recv(fd, &b, 1, 0);
    } while (r < 0 && errno == EINTR);
    return r == 0 || (r < 0 && (errno == ECONNRESET || errno == EPIPE));
}

static uint8_t body_byte(size_t i, uint64_t request)
{
    return (uint8_t)(i * 7u + request * 13u);
}

/* Not inlined: gcc 12 at -O3, inlining this into a caller with a small
 * constant length, reports its vectorised store as overflowing a buffer
 * that is exactly long enough (-Wstringop-overflow, a known false positive). */
__attribute__((noinline)) static void fill_body(uint8_t *body, uint32_t len, uint64_t request)
{
    for (uint32_t i = 0; i < len; i++)
        body[i] = body_byte(i, request);
}

/* A NonReplicated request frame with a recognisable body; act goes into
 * the timestamp field for the handler. NULL when out of memory. */
static uint8_t *new_frame(uint32_t body_len, uint64_t request, uint8_t act, uint32_t *size)
{
    /* Sized in size_t: a u32 sum that could wrap lets gcc -O3 see a
     * buffer shorter than the loop below writes. */
    if (body_len > UINT32_MAX - SL_HEADER_SIZE)
        return NULL;
    size_t bytes = (size_t)SL_HEADER_SIZE + body_len;
    *size = (uint32_t)bytes;
    uint8_t *f = malloc(bytes);
    if (!f)
        return NULL;
    sl_request_header_t h = {.size = *size,
                             .client = {42, 0},
                             .timestamp = act,
                             .request = request,
                             .operation = SL_OP_NON_REPLICATED,
                             .code = 1};
    sl_request_header_encode(f, &h);
    fill_body(f + SL_HEADER_SIZE, body_len, request);
    return f;
}

static uint8_t *make_frame(uint32_t body_len, uint64_t request, uint8_t act, uint32_t *size)
{
    uint8_t *f = new_frame(body_len, request, act, size);
    assert_non_null(f);
    return f;
}

/* Reads one reply: a valid Reply header echoing `request`, then the body. */
static bool expect_reply(int fd, uint32_t body_len, uint64_t request)
{
    uint8_t hdr[SL_HEADER_SIZE];
    sl_reply_header_t h;
    if (!recv_all(fd, hdr, sizeof(hdr)) || sl_reply_header_decode(hdr, SL_FRAME_MAX_DEFAULT, &h))
        return false;
    if (h.size != SL_HEADER_SIZE + body_len || h.request != request)
        return false;
    uint8_t *body = malloc(body_len + 1u);
    bool ok = body && recv_all(fd, body, body_len);
    for (size_t i = 0; ok && i < body_len; i++)
        ok = body[i] == body_byte(i, request);
    free(body);
    return ok;
}

static void cl_expect_reply(int fd, uint32_t body_len, uint64_t request)
{
    assert_true(expect_reply(fd, body_len, request));
}

static bool roundtrip(int fd, uint32_t body_len, uint64_t request)
{
    uint32_t size;
    uint8_t *f = new_frame(body_len, request, ACT_ECHO, &size);
    bool ok = f && send_all(fd, f, size);
    free(f);
    return ok && expect_reply(fd, body_len, request);
}

static void cl_roundtrip(int fd, uint32_t body_len, uint64_t request)
{
    assert_true(roundtrip(fd, body_len, request));
}

/* A bare header with an arbitrary size field. */
static void cl_send_header(int fd, uint32_t size_field)
{
    uint32_t size;
    uint8_t *f = make_frame(0, 1, ACT_ECHO, &size);
    sl_store_u32(f + SL_HDR_OFF_SIZE, size_field);
    cl_send(fd, f, SL_HEADER_SIZE);
    free(f);
}

/* --- tests ------------------------------------------------------------------ */

static void test_one_frame(void **state)
{
    (void)state;
    server_t *s = server_start(MODE_NOW);
    int fd = cl_connect(s->port);
    cl_roundtrip(fd, 100, 1);
    close(fd);
    server_stop(s);
    assert_int_equal(s->stats.frames, 1);
    assert_int_equal(s->stats.accepted, 1);
    assert_int_equal(s->ctx.sent, 1);
    free(s);
}

static void test_header_only_and_many_frames(void **state)
{
    (void)state;
    server_t *s = server_start(MODE_NOW);
    int fd = cl_connect(s->port);
    for (uint32_t i = 0; i < 1000; i++)
        cl_roundtrip(fd, (i * 37u) % 3000u, i + 1u); /* includes empty bodies */
    close(fd);
    server_stop(s);
    assert_int_equal(s->stats.frames, 1000);
    free(s);
}

static void test_one_byte_writes(void **state)
{
    (void)state;
    server_t *s = server_start(MODE_NOW);
    int fd = cl_connect(s->port);
    for (uint64_t r = 1; r <= 2; r++) {
        uint32_t size;
        uint8_t *f = make_frame(300, r, ACT_ECHO, &size);
        for (uint32_t i = 0; i < size; i++)
            cl_send(fd, f + i, 1);
        free(f);
        cl_expect_reply(fd, 300, r);
    }
    close(fd);
    server_stop(s);
    assert_int_equal(s->stats.frames, 2);
    free(s);
}

/* Two frames in one write while the handler answers only on a later tick:
 * the second must not be delivered before the first has been answered
 * (h_frame counts a violation otherwise). */
static void test_two_frames_one_write(void **state)
{
    (void)state;
    server_t *s = server_start(MODE_DEFER);
    int fd = cl_connect(s->port);
    uint32_t n1, n2;
    uint8_t *f1 = make_frame(50, 1, ACT_ECHO, &n1);
    uint8_t *f2 = make_frame(70, 2, ACT_ECHO, &n2);
    uint8_t *both = malloc(n1 + n2);
    assert_non_null(both);
    memcpy(both, f1, n1);
    memcpy(both + n1, f2, n2);
    cl_send(fd, both, n1 + n2);
    cl_expect_reply(fd, 50, 1);
    cl_expect_reply(fd, 70, 2);
    free(f1);
    free(f2);
    free(both);
    close(fd);
    server_stop(s);
    assert_int_equal(s->stats.frames, 2);
    free(s);
}

static void test_16mib_frame(void **state)
{
    (void)state;
    server_t *s = server_start(MODE_NOW);
    int fd = cl_connect(s->port);
    cl_roundtrip(fd, 16u * 1024u * 1024u - SL_HEADER_SIZE, 7);
    cl_roundtrip(fd, 10, 8); /* the connection is in a clean state after */
    /* The second large frame reuses the first one's buffer. */
    cl_roundtrip(fd, 16u * 1024u * 1024u - SL_HEADER_SIZE, 9);
    close(fd);
    server_stop(s);
    assert_int_equal(s->pool.misses, 1);
    assert_int_equal(s->pool.hits, 1);
    assert_int_equal(s->pool.idle_bytes, 20u << 20); /* 16 MiB + prefix: the 20 MiB class */
    free(s);
}

/* --- a toy transport (XOR with one byte) ------------------------------------------- */

/* Enough of a transport for the seam: no handshake, every stream byte one
 * socket byte, input buffered until read, need as a real one answers. Its
 * input calls are counted: each is one receive completion. */
typedef struct xor_state {
    sl_buf_t *out;
    sl_buf_t in;
    size_t off;
} xor_state_t;

static atomic_uint xor_inputs;
static atomic_uint xor_large_inputs; /* inputs above one receive buffer */

static int xor_open(void *ctx, sl_buf_t *out, void **state)
{
    (void)ctx;
    xor_state_t *x = calloc(1, sizeof(*x));
    if (!x)
        return -ENOMEM;
    x->out = out;
    sl_buf_init(&x->in, 0);
    *state = x;
    return 0;
}

static void xor_close(void *state)
{
    xor_state_t *x = state;
    sl_buf_free(&x->in);
    free(x);
}

static int xor_input(void *state, const uint8_t *data, uint32_t n)
{
    xor_state_t *x = state;
    xor_inputs++;
    if (n > SL_LOOP_BUF_SIZE_DEFAULT)
        xor_large_inputs++;
    sl_put_bytes(&x->in, data, n);
    return sl_buf_ok(&x->in) ? 0 : -ENOMEM;
}

static int xor_read(void *state, uint8_t *dst, uint32_t n)
{
    xor_state_t *x = state;
    size_t have = x->in.len - x->off, take = have < n ? have : n;
    for (size_t i = 0; i < take; i++)
        dst[i] = x->in.data[x->off + i] ^ 0x5a;
    x->off += take;
    if (x->off == x->in.len) {
        sl_buf_reset(&x->in);
        x->off = 0;
    }
    return (int)take;
}

static int xor_write(void *state, const uint8_t *src, size_t n)
{
    xor_state_t *x = state;
    uint8_t *p = sl_buf_extend(x->out, n);
    if (!p)
        return -ENOMEM;
    for (size_t i = 0; i < n; i++)
        p[i] = src[i] ^ 0x5a;
    return 0;
}

static bool xor_established(const void *state)
{
    (void)state;
    return true;
}

static const char *xor_why(const void *state)
{
    (void)state;
    return "xor";
}

static uint32_t xor_need(void *state, uint32_t stream_bytes)
{
    xor_state_t *x = state;
    size_t held = x->in.len - x->off;
    return stream_bytes > held ? stream_bytes - (uint32_t)held : 0;
}

static const sl_conn_transport_t xor_transport = {.name = "xor",
                                                  .open = xor_open,
                                                  .close = xor_close,
                                                  .input = xor_input,
                                                  .read = xor_read,
                                                  .write = xor_write,
                                                  .established = xor_established,
                                                  .why = xor_why,
                                                  .need = xor_need};

static void xor_bytes(uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        p[i] ^= 0x5a;
}

/* One request through the toy transport, its echo checked. */
static void xor_roundtrip(int fd, uint32_t body_len, uint64_t request)
{
    uint32_t size;
    uint8_t *f = make_frame(body_len, request, ACT_ECHO, &size);
    xor_bytes(f, size);
    cl_send(fd, f, size);
    uint8_t *r = malloc(size);
    assert_non_null(r);
    assert_true(recv_all(fd, r, size));
    xor_bytes(r, size);
    sl_reply_header_t h;
    assert_int_equal(sl_reply_header_decode(r, SL_FRAME_MAX_DEFAULT, &h), 0);
    assert_int_equal(h.size, size);
    assert_int_equal(h.request, request);
    for (uint32_t i = 0; i < body_len; i++)
        assert_int_equal(r[SL_HEADER_SIZE + i], body_byte(i, request));
    free(r);
    free(f);
}

/* A large body through a transport arrives in a few large receives straight
 * into the frame (need), not one receive buffer per loop turn; replies are
 * encoded a chunk at a time. With receives capped small, the same frames
 * still arrive whole and in order. */
static void test_transport_bulk_receive(void **state)
{
    (void)state;
    for (int capped = 0; capped < 2; capped++) {
        server_t *s = calloc(1, sizeof(*s));
        assert_non_null(s);
        sl_loop_config_t cfg;
        server_config(&cfg, s);
        cfg.transport = &xor_transport;
        if (capped)
            cfg.faults = (sl_loop_faults_t){.send_max = 5000, .recv_max = 70000};
        server_start_cfg(s, &cfg, MODE_NOW);
        int fd = cl_connect(s->port);
        xor_inputs = xor_large_inputs = 0;
        xor_roundtrip(fd, 4u << 20, 1);
        unsigned inputs = xor_inputs;
        xor_roundtrip(fd, 100, 2);
        xor_roundtrip(fd, 300000, 3);
        close(fd);
        server_stop(s);
        free(s);
        if (capped)
            continue;
        /* 4 MiB in chunks of SL_LOOP_TRANSPORT_CHUNK, plus the first buffer
         * and a small remainder at most; 16 KiB receives would take 256. */
        assert_true(inputs <= 4u * 1024u * 1024u / SL_LOOP_TRANSPORT_CHUNK + 3u);
        assert_true(xor_large_inputs >= 4u * 1024u * 1024u / SL_LOOP_TRANSPORT_CHUNK - 1u);
    }
}

/* Every send and body receive capped at a few hundred bytes: the short
 * write and short read paths, deterministically. */
static void test_short_reads_and_writes(void **state)
{
    (void)state;
    server_t *s = calloc(1, sizeof(*s));
    assert_non_null(s);
    sl_loop_config_t cfg;
    server_config(&cfg, s);
    cfg.faults = (sl_loop_faults_t){.send_max = 333, .recv_max = 777};
    server_start_cfg(s, &cfg, MODE_NOW);
    int fd = cl_connect(s->port);
    cl_roundtrip(fd, 100000, 1);
    cl_roundtrip(fd, 0, 2);
    cl_roundtrip(fd, 5000, 3);
    close(fd);
    server_stop(s);
    free(s);
}

static void test_bad_sizes_close(void **state)
{
    (void)state;
    server_t *s = calloc(1, sizeof(*s));
    assert_non_null(s);
    sl_loop_config_t cfg;
    server_config(&cfg, s);
    cfg.max_frame = 1024u * 1024u;
    server_start_cfg(s, &cfg, MODE_NOW);
    int good = cl_connect(s->port);
    cl_roundtrip(good, 10, 1);

    int small = cl_connect(s->port);
    cl_send_header(small, SL_HEADER_SIZE - 1);
    assert_true(cl_closed(small));
    int zero = cl_connect(s->port);
    cl_send_header(zero, 0);
    assert_true(cl_closed(zero));
    int big = cl_connect(s->port);
    cl_send_header(big, cfg.max_frame + 1u);
    assert_true(cl_closed(big));

    cl_roundtrip(good, 20, 2);                             /* unaffected */
    cl_roundtrip(good, cfg.max_frame - SL_HEADER_SIZE, 3); /* the limit itself is fine */
    close(small);
    close(zero);
    close(big);
    close(good);
    server_stop(s);
    assert_int_equal(s->stats.bad_frames, 3);
    assert_int_equal(s->stats.frames, 3);
    free(s);
}

typedef struct worker {
    uint16_t port;
    int index;
    bool ok;
} worker_t;

static void *worker_main(void *arg)
{
    worker_t *w = arg;
    int fd = cl_connect_fd(w->port);
    bool ok = fd >= 0;
    for (uint32_t i = 0; ok && i < 100; i++)
        ok = roundtrip(fd, (uint32_t)(w->index * 131 + i * 17) % 5000u, i + 1u);
    if (fd >= 0)
        close(fd);
    w->ok = ok;
    return NULL;
}

static void run_workers(server_t *s, int n)
{
    pthread_t t[64];
    worker_t w[64];
    assert_true(n <= 64);
    for (int i = 0; i < n; i++) {
        w[i] = (worker_t){.port = s->port, .index = i};
        assert_int_equal(pthread_create(&t[i], NULL, worker_main, &w[i]), 0);
    }
    for (int i = 0; i < n; i++) {
        assert_int_equal(pthread_join(t[i], NULL), 0);
        assert_true(w[i].ok);
    }
}

static void check_unique_ids(const tctx_t *ctx)
{
    for (uint32_t i = 0; i < ctx->nids; i++) {
        assert_int_not_equal(ctx->ids[i], 0);
        for (uint32_t j = i + 1; j < ctx->nids; j++)
            assert_int_not_equal(ctx->ids[i], ctx->ids[j]);
    }
}

static void test_64_connections(void **state)
{
    (void)state;
    server_t *s = server_start(MODE_NOW);
    run_workers(s, 64);
    server_stop(s);
    assert_int_equal(s->stats.accepted, 64);
    assert_int_equal(s->stats.frames, 64 * 100);
    check_unique_ids(&s->ctx);
    free(s);
}

/* Answers given only at the end of a turn (how sluiced's group commit
 * answers staged sends) reach every connection, none is lost or answered
 * twice, and the hook runs on every turn. */
static void test_turn_end_answers(void **state)
{
    (void)state;
    server_t *s = calloc(1, sizeof(*s));
    assert_non_null(s);
    sl_loop_config_t cfg;
    server_config(&cfg, s);
    cfg.tick_ms = 60000; /* no tick can answer */
    server_start_cfg(s, &cfg, MODE_TURN_END);
    run_workers(s, 16);
    server_stop(s);
    assert_int_equal(s->stats.frames, 16 * 100);
    assert_int_equal(s->ctx.sent, 16 * 100);
    assert_int_equal(s->ctx.ndeferred, 0);
    assert_true(s->ctx.turn_ends >= s->stats.turns);
    assert_true(s->ctx.turn_ends > 0);
    free(s);
}

/* Two provided buffers of 256 bytes for 64 connections: receives find the
 * ring empty (ENOBUFS) and must come back once buffers return. */
static void test_64_connections_starved_buffers(void **state)
{
    (void)state;
    server_t *s = calloc(1, sizeof(*s));
    assert_non_null(s);
    sl_loop_config_t cfg;
    server_config(&cfg, s);
    cfg.buf_count = 2;
    cfg.buf_size = SL_HEADER_SIZE;
    server_start_cfg(s, &cfg, MODE_NOW);
    run_workers(s, 64);
    server_stop(s);
    assert_int_equal(s->stats.frames, 64 * 100);
    free(s);
}

static void test_disconnect_mid_frame(void **state)
{
    (void)state;
    server_t *s = server_start(MODE_NOW);
    int fds[4];
    for (int i = 0; i < 4; i++)
        fds[i] = cl_connect(s->port);
    uint32_t size;
    uint8_t *f = make_frame(1024u * 1024u, 1, ACT_ECHO, &size);
    cl_send(fds[0], f, 100);          /* inside the header */
    cl_send(fds[1], f, 256 + 100000); /* inside a 1 MiB body */
    cl_send(fds[2], f, 256 + 100);    /* ditto, then a reset */
    struct linger lg = {1, 0};
    setsockopt(fds[2], SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
    wait_for(&s->ctx.opens, 4);
    for (int i = 0; i < 4; i++)
        close(fds[i]); /* fds[3] sent nothing at all */
    wait_for(&s->ctx.closes, 4);
    free(f);
    server_stop(s);
    assert_int_equal(s->stats.frames, 0);
    free(s);
}

/* Stop while the handler holds a frame (it answers on a later tick): the
 * answer is still written, then the connection is closed; an idle
 * connection is closed too. */
static void test_stop_with_frame_in_flight(void **state)
{
    (void)state;
    server_t *s = server_start(MODE_DEFER);
    int idle = cl_connect(s->port);
    int fd = cl_connect(s->port);
    uint32_t size;
    uint8_t *f = make_frame(5000, 9, ACT_ECHO, &size);
    cl_send(fd, f, size);
    free(f);
    wait_for(&s->ctx.frames, 1);
    sl_loop_stop(s->loop);
    cl_expect_reply(fd, 5000, 9);
    assert_true(cl_closed(fd));
    assert_true(cl_closed(idle));
    server_stop(s); /* a second stop is harmless */
    assert_int_equal(s->ctx.sent, 1);
    close(fd);
    close(idle);
    free(s);
}

/* A handler that never answers cannot hold stop up for ever: after the
 * grace period the connection is closed and run returns. */
static void test_stop_grace_closes_unanswered(void **state)
{
    (void)state;
    server_t *s = calloc(1, sizeof(*s));
    assert_non_null(s);
    sl_loop_config_t cfg;
    server_config(&cfg, s);
    cfg.tick_ms = 10;
    cfg.stop_grace_ms = 20;
    server_start_cfg(s, &cfg, MODE_NOW);
    int fd = cl_connect(s->port);
    uint32_t size;
    uint8_t *f = make_frame(10, 1, ACT_HOLD, &size);
    cl_send(fd, f, size);
    free(f);
    wait_for(&s->ctx.frames, 1);
    server_stop(s);
    assert_true(cl_closed(fd));
    assert_int_equal(s->ctx.sent, 0);
    close(fd);
    free(s);
}

/* An IPv6 listener gives "[::1]:port" peers; skipped without IPv6. */
static void test_ipv6_peer_text(void **state)
{
    (void)state;
    server_t *s = calloc(1, sizeof(*s));
    assert_non_null(s);
    sl_loop_config_t cfg;
    server_config(&cfg, s);
    cfg.host = "::1";
    s->ctx.peer_prefix = "[::1]:";
    if (sl_loop_create(&cfg, &s->loop) != 0) {
        free(s);
        skip();
    }
    s->port = sl_loop_port(s->loop);
    assert_int_equal(pthread_create(&s->thread, NULL, server_main, s), 0);
    int fd = socket(AF_INET6, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    struct sockaddr_in6 a = {.sin6_family = AF_INET6, .sin6_port = htons(s->port)};
    a.sin6_addr = in6addr_loopback;
    assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    cl_roundtrip(fd, 33, 1);
    close(fd);
    server_stop(s); /* checks bad_peer == 0 */
    assert_int_equal(s->stats.frames, 1);
    free(s);
}

static void test_max_connections(void **state)
{
    (void)state;
    server_t *s = calloc(1, sizeof(*s));
    assert_non_null(s);
    sl_loop_config_t cfg;
    server_config(&cfg, s);
    cfg.max_conns = 2;
    server_start_cfg(s, &cfg, MODE_NOW);
    int a = cl_connect(s->port);
    int b = cl_connect(s->port);
    cl_roundtrip(a, 1, 1);
    cl_roundtrip(b, 1, 1);
    int c = cl_connect(s->port);
    assert_true(cl_closed(c));
    cl_roundtrip(a, 2, 2); /* the others are unaffected */
    close(a);
    wait_for(&s->ctx.closes, 1);
    int d = cl_connect(s->port);
    cl_roundtrip(d, 3, 1);
    close(b);
    close(c);
    close(d);
    server_stop(s);
    assert_int_equal(s->stats.accepted, 3);
    assert_int_equal(s->stats.refused, 1);
    free(s);
}

/* Thirty dropped frames and one echoed frame in one write: all delivered
 * in order, one at a time, never more than frames_per_turn in one turn. */
static void test_fairness_cap_and_drops(void **state)
{
    (void)state;
    server_t *s = calloc(1, sizeof(*s));
    assert_non_null(s);
    sl_loop_config_t cfg;
    server_config(&cfg, s);
    cfg.frames_per_turn = 3;
    server_start_cfg(s, &cfg, MODE_NOW);
    int fd = cl_connect(s->port);
    uint8_t all[31 * SL_HEADER_SIZE];
    for (uint32_t i = 0; i < 31; i++) {
        uint32_t size;
        uint8_t *f = make_frame(0, i + 1u, i < 30 ? ACT_DROP : ACT_ECHO, &size);
        memcpy(all + i * SL_HEADER_SIZE, f, size);
        free(f);
    }
    cl_send(fd, all, sizeof(all));
    cl_expect_reply(fd, 0, 31);
    close(fd);
    server_stop(s);
    assert_int_equal(s->stats.frames, 31);
    assert_true(s->ctx.max_in_turn >= 1 && s->ctx.max_in_turn <= 3);
    free(s);
}

/* The budget itself, without a socket's timing: five dropped frames are
 * already buffered; one step delivers exactly frames_per_turn of them and
 * says work is left, the next delivers the rest and arms a receive. */
static void test_step_budget(void **state)
{
    (void)state;
    server_t s = {0};
    sl_loop_config_t cfg;
    server_config(&cfg, &s);
    sl_loop_t *loop;
    assert_int_equal(sl_loop_create(&cfg, &loop), 0);
    int sv[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    sl_conn_t *c = sl_conn_new(loop, sv[0], NULL);
    assert_non_null(c);
    sl_dlist_push(&loop->conns, &c->all_link); /* what loop_admit does */
    loop->nconns++;
    h_open(&s.ctx, c);
    c->spill = sl_frame_pool_get(sl_loop_frame_pool(loop), 5 * SL_HEADER_SIZE + 3);
    assert_non_null(c->spill);
    for (uint32_t i = 0; i < 5; i++) {
        uint32_t size;
        uint8_t *f = make_frame(0, i + 1u, ACT_DROP, &size);
        memcpy(c->spill + i * SL_HEADER_SIZE, f, size);
        free(f);
    }
    c->spill_len = 5 * SL_HEADER_SIZE + 3; /* and the start of a sixth */
    assert_true(sl_conn_step(c, 3));
    assert_int_equal(s.ctx.frames, 3);
    assert_false(sl_conn_step(c, 3));
    assert_int_equal(s.ctx.frames, 5);
    assert_null(c->spill);
    assert_int_equal(c->hdr_have, 3);
    assert_true(c->recv_armed);
    assert_int_equal(s.ctx.violations, 0);
    /* A loop that never ran still closes its connections on destroy. */
    sl_loop_destroy(loop);
    assert_int_equal(s.ctx.closes, 1);
    close(sv[1]);
}

static void test_reply_close_take_and_close(void **state)
{
    (void)state;
    server_t *s = server_start(MODE_NOW);
    uint32_t size;
    int fd = cl_connect(s->port);
    uint8_t *f = make_frame(4000, 5, ACT_TAKE, &size);
    cl_send(fd, f, size);
    free(f);
    cl_expect_reply(fd, 4000, 5); /* written from the buffer the handler took */
    f = make_frame(10, 6, ACT_REPLY_CLOSE, &size);
    cl_send(fd, f, size);
    free(f);
    cl_expect_reply(fd, 10, 6);
    assert_true(cl_closed(fd));
    close(fd);

    fd = cl_connect(s->port);
    f = make_frame(10, 1, ACT_CLOSE, &size);
    cl_send(fd, f, size);
    free(f);
    assert_true(cl_closed(fd));
    close(fd);
    server_stop(s);
    assert_int_equal(s->stats.frames, 3);
    free(s);
}

/* Two loops (two shards) accepting from one listening socket. */
static void test_shared_listen_socket(void **state)
{
    (void)state;
    int lfd;
    assert_int_equal(sl_loop_listen("127.0.0.1", 0, 64, &lfd), 0);
    server_t *s[2];
    for (int i = 0; i < 2; i++) {
        s[i] = calloc(1, sizeof(*s[i]));
        assert_non_null(s[i]);
        sl_loop_config_t cfg;
        server_config(&cfg, s[i]);
        cfg.listen_fd = lfd;
        server_start_cfg(s[i], &cfg, MODE_NOW);
    }
    assert_int_equal(s[0]->port, s[1]->port);
    for (uint32_t i = 0; i < 16; i++) {
        int fd = cl_connect(s[0]->port);
        cl_roundtrip(fd, i, 1);
        close(fd);
    }
    uint64_t accepted = 0;
    for (int i = 0; i < 2; i++) {
        server_stop(s[i]);
        accepted += s[i]->stats.accepted;
        free(s[i]);
    }
    assert_int_equal(accepted, 16);
    close(lfd);
}

static void test_stop_before_run_and_config(void **state)
{
    (void)state;
    server_t s = {0};
    sl_loop_config_t cfg;
    server_config(&cfg, &s);
    sl_loop_t *loop;
    cfg.buf_count = 3; /* not a power of two */
    assert_int_equal(sl_loop_create(&cfg, &loop), -EINVAL);
    server_config(&cfg, &s);
    cfg.cb.on_frame = NULL;
    assert_int_equal(sl_loop_create(&cfg, &loop), -EINVAL);
    server_config(&cfg, &s);
    cfg.host = "not-an-address";
    assert_int_equal(sl_loop_create(&cfg, &loop), -EINVAL);

    server_config(&cfg, &s);
    assert_int_equal(sl_loop_create(&cfg, &loop), 0);
    sl_loop_stop(loop);
    assert_int_equal(sl_loop_run(loop), 0);
    assert_int_equal(sl_loop_run(loop), -EALREADY);
    sl_loop_destroy(loop);
}

static void test_diagnose(void **state)
{
    (void)state;
    char t[320];
    sl_loop_explain(t, sizeof(t), -EPERM, 2, 0, 0);
    assert_non_null(strstr(t, "kernel.io_uring_disabled = 2"));
    sl_loop_explain(t, sizeof(t), -EPERM, 1, 0, 0);
    assert_non_null(strstr(t, "io_uring_group"));
    sl_loop_explain(t, sizeof(t), -EPERM, 0, 2, 0);
    assert_non_null(strstr(t, "seccomp"));
    sl_loop_explain(t, sizeof(t), -ENOSYS, 0, 2, 0);
    assert_non_null(strstr(t, "seccomp"));
    sl_loop_explain(t, sizeof(t), -ENOMEM, 0, 0, 64 * 1024);
    assert_non_null(strstr(t, "RLIMIT_MEMLOCK is 64 KiB"));
    sl_loop_explain(t, sizeof(t), -ENOSYS, 0, 0, 0);
    assert_non_null(strstr(t, "no io_uring"));
    sl_loop_explain(t, sizeof(t), -EINVAL, 0, 0, 0);
    assert_non_null(strstr(t, "too old"));
    /* With this host's real facts (io_uring works here, so neither the
     * sysctl nor seccomp is in the way), ENOMEM points at the rlimit. */
    assert_non_null(strstr(sl_loop_diagnose(-ENOMEM), "RLIMIT_MEMLOCK"));
}

/* --- limits: frame limit, frame budget, timeouts --------------------------- */

/* Waits until the tick has copied budget_used == want (the tick runs every
 * 10 ms in these tests; the bound only turns a hang into a failure). */
static void wait_budget_used(tctx_t *ctx, uint64_t want)
{
    struct timespec ts = {0, 1000000};
    for (int i = 0; i < 60000 && ctx->budget_used != want; i++)
        nanosleep(&ts, NULL);
    assert_int_equal(ctx->budget_used, want);
}

/* A header above the connection's limit closes it before any buffer is
 * taken; at the limit it is served; once the handler raised the limit
 * (what sluiced does after a login) a large frame passes. */
static void test_frame_limit(void **state)
{
    (void)state;
    server_t *s = calloc(1, sizeof(*s));
    assert_non_null(s);
    sl_loop_config_t cfg;
    server_config(&cfg, s);
    cfg.tick_ms = 10;
    cfg.max_frame = 1024u * 1024u;
    s->ctx.open_limit = 4096;
    server_start_cfg(s, &cfg, MODE_NOW);

    int over = cl_connect(s->port);
    cl_send_header(over, 4097);
    assert_true(cl_closed(over));

    int fd = cl_connect(s->port);
    cl_roundtrip(fd, 4096 - SL_HEADER_SIZE, 1); /* the limit itself is fine */
    uint32_t size;
    uint8_t *f = make_frame(10, 2, ACT_RAISE, &size);
    cl_send(fd, f, size);
    free(f);
    cl_expect_reply(fd, 10, 2);
    cl_roundtrip(fd, cfg.max_frame - SL_HEADER_SIZE, 3);
    close(over);
    close(fd);
    server_stop(s);
    assert_int_equal(s->stats.over_limit, 1);
    assert_int_equal(s->stats.bad_frames, 0);
    assert_int_equal(s->stats.frames, 3);
    /* The refused header never got a frame buffer: of the frames served,
     * two are small (allocated at their size) and one is a class buffer. */
    assert_int_equal(s->pool.misses + s->pool.hits, 1);
    free(s);
}

/* Sends the header and the first part bytes of a frame of body_len. */
static uint8_t *cl_send_part(int fd, uint32_t body_len, uint64_t request, uint32_t part)
{
    uint32_t size;
    uint8_t *f = make_frame(body_len, request, ACT_ECHO, &size);
    cl_send(fd, f, part);
    return f;
}

/* A budget of two 1 MiB frames: two partly sent frames hold it all, so a
 * complete third frame and a 100 KiB fourth behind it wait with nothing
 * delivered, while a frame that fits a receive buffer is served at once;
 * when the first is answered the third goes in, and the fourth only after
 * the third (no overtaking), while the second is still open. */
static void test_frame_budget_waits(void **state)
{
    (void)state;
    const uint32_t mib = 1024u * 1024u, body = mib - SL_HEADER_SIZE, part = SL_HEADER_SIZE + 1000;
    server_t *s = calloc(1, sizeof(*s));
    assert_non_null(s);
    sl_loop_config_t cfg;
    server_config(&cfg, s);
    cfg.tick_ms = 10;
    cfg.max_frame = mib;
    cfg.frame_budget = 2ull * mib;
    server_start_cfg(s, &cfg, MODE_NOW);
    int a = cl_connect(s->port), b = cl_connect(s->port);
    int c = cl_connect(s->port), d = cl_connect(s->port);
    uint8_t *fa = cl_send_part(a, body, 1, part);
    uint8_t *fb = cl_send_part(b, body, 2, part);
    wait_budget_used(&s->ctx, 2ull * mib);

    uint8_t *fc = cl_send_part(c, body, 3, mib); /* all of it */
    wait_for(&s->ctx.budget_waiting, 1);
    const uint32_t mid = 100u * 1024u;
    uint8_t *fd4 = cl_send_part(d, mid, 4, SL_HEADER_SIZE + mid);
    wait_for(&s->ctx.budget_waiting, 2);
    assert_int_equal(s->ctx.frames, 0);
    int e = cl_connect(s->port);
    cl_roundtrip(e, cfg.buf_size - SL_HEADER_SIZE, 5); /* one receive buffer: no wait */
    assert_int_equal(s->ctx.budget_waiting, 2);

    cl_send(a, fa + part, mib - part);
    cl_expect_reply(a, body, 1);
    cl_expect_reply(c, body, 3);
    cl_expect_reply(d, mid, 4);
    assert_int_equal(s->ctx.frames, 4);
    assert_int_equal(s->ctx.order[0], 5);
    assert_int_equal(s->ctx.order[1], 1);
    assert_int_equal(s->ctx.order[2], 3);
    assert_int_equal(s->ctx.order[3], 4);
    cl_send(b, fb + part, mib - part);
    cl_expect_reply(b, body, 2);
    wait_budget_used(&s->ctx, 0);
    free(fa);
    free(fb);
    free(fc);
    free(fd4);
    close(a);
    close(b);
    close(c);
    close(d);
    close(e);
    server_stop(s);
    assert_int_equal(s->stats.budget_waits, 2);
    assert_int_equal(s->stats.frames, 5);
    free(s);
}

/* A waiting connection has no receive armed, so the loop learns that its
 * client went away when its turn comes: the receive then finds the end of
 * the stream, the connection closes and the frame behind it gets the
 * bytes (here one the handler takes over, whose bytes go back with it). */
static void test_frame_budget_leave_and_take(void **state)
{
    (void)state;
    const uint32_t mib = 1024u * 1024u, body = mib - SL_HEADER_SIZE, part = SL_HEADER_SIZE + 10;
    server_t *s = calloc(1, sizeof(*s));
    assert_non_null(s);
    sl_loop_config_t cfg;
    server_config(&cfg, s);
    cfg.tick_ms = 10;
    cfg.max_frame = mib;
    cfg.frame_budget = mib;
    server_start_cfg(s, &cfg, MODE_NOW);
    int a = cl_connect(s->port), b = cl_connect(s->port), c = cl_connect(s->port);
    uint8_t *fa = cl_send_part(a, body, 1, part);
    wait_budget_used(&s->ctx, mib);
    uint8_t *fb = cl_send_part(b, body, 2, SL_HEADER_SIZE);
    wait_for(&s->ctx.budget_waiting, 1);
    uint32_t size;
    const uint32_t mid = 100u * 1024u;
    uint8_t *fc = make_frame(mid, 3, ACT_TAKE, &size);
    cl_send(c, fc, size);
    wait_for(&s->ctx.budget_waiting, 2);
    close(b); /* first in line leaves */
    cl_send(a, fa + part, mib - part);
    cl_expect_reply(a, body, 1);
    cl_expect_reply(c, mid, 3);
    wait_for(&s->ctx.closes, 1);
    wait_budget_used(&s->ctx, 0);
    free(fa);
    free(fb);
    free(fc);
    close(a);
    close(c);
    server_stop(s);
    assert_int_equal(s->stats.frames, 2);
    assert_int_equal(s->stats.budget_waits, 2);
    free(s);
}

typedef struct trickle {
    uint16_t port;
    uint32_t sent;
    bool closed;
} trickle_t;

/* Sends a 5000-byte frame one byte per 20 ms until the server closes the
 * connection (or, after 100 s, gives up: the test then fails). */
static void *trickle_main(void *arg)
{
    trickle_t *t = arg;
    int fd = cl_connect_fd(t->port);
    uint32_t size;
    uint8_t *f = new_frame(5000 - SL_HEADER_SIZE, 1, ACT_ECHO, &size);
    for (uint32_t i = 0; fd >= 0 && f && i < size && !t->closed; i++) {
        if (!send_all(fd, f + i, 1))
            t->closed = true;
        t->sent = i + 1;
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, 20) > 0)
            t->closed = cl_closed(fd);
    }
    free(f);
    if (fd >= 0)
        close(fd);
    return NULL;
}

/* frame_timeout: a client trickling a frame is closed once the timeout has
 * passed since its first byte, while a frame held by the handler (the
 * server's time) and an idle connection between frames are left alone, and
 * another client is served throughout. */
static void test_frame_timeout(void **state)
{
    (void)state;
    server_t *s = calloc(1, sizeof(*s));
    assert_non_null(s);
    sl_loop_config_t cfg;
    server_config(&cfg, s);
    cfg.tick_ms = 10;
    cfg.stop_grace_ms = 20; /* the held frame is never answered */
    cfg.frame_timeout_ms = 200;
    server_start_cfg(s, &cfg, MODE_NOW);
    int idle = cl_connect(s->port);
    cl_roundtrip(idle, 10, 1);
    int held = cl_connect(s->port);
    uint32_t size;
    uint8_t *f = make_frame(10, 1, ACT_HOLD, &size);
    cl_send(held, f, size);
    free(f);
    wait_for(&s->ctx.frames, 2);

    trickle_t t = {.port = s->port};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, trickle_main, &t), 0);
    int good = cl_connect(s->port);
    for (uint64_t r = 1; r <= 5; r++)
        cl_roundtrip(good, 100, r);
    assert_int_equal(pthread_join(th, NULL), 0);
    assert_true(t.closed);
    assert_true(t.sent > 1 && t.sent < 5000); /* closed mid-frame, not at its end */
    /* The held connection started before the trickler: had it been timed,
     * the same tick would have closed it. A roundtrip is a turn later. */
    cl_roundtrip(good, 100, 6);
    cl_roundtrip(idle, 10, 2);
    assert_int_equal(s->ctx.closes, 1);
    close(good);
    close(idle);
    close(held);
    server_stop(s);
    assert_int_equal(s->stats.frame_timeouts, 1);
    assert_int_equal(s->stats.reply_timeouts, 0);
    free(s);
}

/* reply_timeout: a client that asks for a 16 MiB echo and never reads it
 * is closed once the timeout has passed, which releases the reply and its
 * frame; another client is served meanwhile. */
static void test_reply_timeout(void **state)
{
    (void)state;
    server_t *s = calloc(1, sizeof(*s));
    assert_non_null(s);
    sl_loop_config_t cfg;
    server_config(&cfg, s);
    cfg.tick_ms = 10;
    cfg.reply_timeout_ms = 200;
    server_start_cfg(s, &cfg, MODE_NOW);
    int lazy = cl_connect(s->port);
    uint32_t size;
    uint8_t *f = make_frame(16u * 1024u * 1024u - SL_HEADER_SIZE, 1, ACT_ECHO, &size);
    cl_send(lazy, f, size);
    free(f);
    int good = cl_connect(s->port);
    cl_roundtrip(good, 100, 1);
    wait_for(&s->ctx.reply_timeouts, 1);
    wait_for(&s->ctx.closes, 1);
    wait_budget_used(&s->ctx, 0);
    cl_roundtrip(good, 100, 2);
    close(lazy);
    close(good);
    server_stop(s);
    assert_int_equal(s->stats.reply_timeouts, 1);
    assert_int_equal(s->stats.frame_timeouts, 0);
    assert_int_equal(s->ctx.sent, 2); /* good's two; lazy's reply never completed */
    free(s);
}

int main(void)
{
    struct io_uring probe;
    int err = io_uring_queue_init(8, &probe, 0);
    if (err) {
        fprintf(stderr, "test_loop: skipped: %s\n", sl_loop_diagnose(err));
        return 77;
    }
    io_uring_queue_exit(&probe);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_frame),
        cmocka_unit_test(test_header_only_and_many_frames),
        cmocka_unit_test(test_one_byte_writes),
        cmocka_unit_test(test_two_frames_one_write),
        cmocka_unit_test(test_16mib_frame),
        cmocka_unit_test(test_short_reads_and_writes),
        cmocka_unit_test(test_transport_bulk_receive),
        cmocka_unit_test(test_bad_sizes_close),
        cmocka_unit_test(test_64_connections),
        cmocka_unit_test(test_turn_end_answers),
        cmocka_unit_test(test_64_connections_starved_buffers),
        cmocka_unit_test(test_disconnect_mid_frame),
        cmocka_unit_test(test_stop_with_frame_in_flight),
        cmocka_unit_test(test_stop_grace_closes_unanswered),
        cmocka_unit_test(test_ipv6_peer_text),
        cmocka_unit_test(test_max_connections),
        cmocka_unit_test(test_fairness_cap_and_drops),
        cmocka_unit_test(test_step_budget),
        cmocka_unit_test(test_reply_close_take_and_close),
        cmocka_unit_test(test_shared_listen_socket),
        cmocka_unit_test(test_stop_before_run_and_config),
        cmocka_unit_test(test_diagnose),
        cmocka_unit_test(test_frame_limit),
        cmocka_unit_test(test_frame_budget_waits),
        cmocka_unit_test(test_frame_budget_leave_and_take),
        cmocka_unit_test(test_frame_timeout),
        cmocka_unit_test(test_reply_timeout),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
