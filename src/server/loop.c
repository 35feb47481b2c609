/* The io_uring event loop of one shard thread: ring and provided-buffer set
 * up, multishot accept, the periodic tick, the run queue that delivers
 * frames fairly, the reaper that frees closed connections, and stop.
 *
 * A turn: submit what is queued and wait (only when nothing is runnable),
 * drain the completions, run the connections that became runnable (each
 * with a budget of frames), free the connections the kernel let go of. */
#include "server/conn.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <time.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/log.h"
#include "wire/header.h"

/* Completions taken from the ring per peek. */
#define SL_LOOP_CQE_BATCH 64u
/* Largest provided-buffer ring the kernel accepts. */
#define SL_LOOP_BUF_COUNT_MAX 32768u

void sl_loop_config_init(sl_loop_config_t *cfg)
{
    *cfg = (sl_loop_config_t){
        .host = "127.0.0.1",
        .port = 0,
        .listen_fd = -1,
        .max_frame = SL_FRAME_MAX_DEFAULT,
        .frame_budget = SL_LOOP_FRAME_BUDGET_DEFAULT,
        .frame_timeout_ms = SL_LOOP_FRAME_TIMEOUT_MS_DEFAULT,
        .reply_timeout_ms = SL_LOOP_REPLY_TIMEOUT_MS_DEFAULT,
        .max_conns = SL_LOOP_MAX_CONNS_DEFAULT,
        .frames_per_turn = SL_LOOP_FRAMES_PER_TURN_DEFAULT,
        .tick_ms = SL_LOOP_TICK_MS_DEFAULT,
        .stop_grace_ms = SL_LOOP_STOP_GRACE_MS_DEFAULT,
        .ring_entries = SL_LOOP_RING_ENTRIES_DEFAULT,
        .buf_count = SL_LOOP_BUF_COUNT_DEFAULT,
        .buf_size = SL_LOOP_BUF_SIZE_DEFAULT,
    };
}

static bool events_ok(const sl_loop_config_t *cfg)
{
    if (cfg->events_count > SL_LOOP_EVENTS_MAX)
        return false;
    for (uint32_t i = 0; i < cfg->events_count; i++)
        if (cfg->events[i].fd < 0 || !cfg->events[i].on_event)
            return false;
    return true;
}

static bool loop_config_ok(const sl_loop_config_t *cfg)
{
    bool pow2 = cfg->buf_count && (cfg->buf_count & (cfg->buf_count - 1)) == 0;
    return cfg->cb.on_frame && pow2 && cfg->buf_count <= SL_LOOP_BUF_COUNT_MAX &&
           cfg->buf_size >= SL_HEADER_SIZE && cfg->max_frame >= SL_HEADER_SIZE &&
           cfg->frame_budget >= cfg->max_frame && cfg->max_conns > 0 && cfg->frames_per_turn > 0 &&
           cfg->tick_ms > 0 && cfg->ring_entries >= 8 && (cfg->listen_fd >= 0 || cfg->host) &&
           events_ok(cfg) && cfg->door_count <= SL_LOOP_DOORS_MAX;
}

/* --- set-up ---------------------------------------------------------------- */

static int loop_ring_init(sl_loop_t *loop)
{
    /* COOP_TASKRUN: completions are posted when this thread enters the
     * kernel anyway, saving interrupts; SUBMIT_ALL: one bad submission does
     * not hold back the rest of a batch. Older kernels reject the flags, so
     * fall back to none. */
    struct io_uring_params p = {.flags = IORING_SETUP_COOP_TASKRUN | IORING_SETUP_SUBMIT_ALL};
    int err = io_uring_queue_init_params(loop->cfg.ring_entries, &loop->ring, &p);
    if (err == -EINVAL) {
        memset(&p, 0, sizeof(p));
        err = io_uring_queue_init_params(loop->cfg.ring_entries, &loop->ring, &p);
    }
    if (err)
        return err;
    loop->ring_ok = true;
    return 0;
}

/* The provided-buffer ring, registered by hand (liburing 2.3 has no
 * io_uring_setup_buf_ring): page-aligned ring memory we own, one slab of
 * buffers, every buffer handed to the kernel up front. */
static int loop_bufs_init(sl_loop_t *loop)
{
    uint32_t count = loop->cfg.buf_count;
    long page = sysconf(_SC_PAGESIZE);
    size_t bytes = count * sizeof(struct io_uring_buf);
    bytes = (bytes + (size_t)page - 1) / (size_t)page * (size_t)page;
    void *br = NULL;
    if (posix_memalign(&br, (size_t)page, bytes) != 0)
        return -ENOMEM;
    memset(br, 0, bytes);
    loop->br = br;
    loop->br_bytes = bytes;
    loop->bufs = malloc((size_t)count * loop->cfg.buf_size);
    if (!loop->bufs)
        return -ENOMEM;
    struct io_uring_buf_reg reg = {
        .ring_addr = (uint64_t)(uintptr_t)br, .ring_entries = count, .bgid = SL_LOOP_BGID};
    int err = io_uring_register_buf_ring(&loop->ring, &reg, 0);
    if (err)
        return err;
    loop->br_registered = true;
    io_uring_buf_ring_init(loop->br);
    int mask = io_uring_buf_ring_mask(count);
    for (uint32_t i = 0; i < count; i++) {
        uint8_t *buf = loop->bufs + (size_t)i * loop->cfg.buf_size;
        io_uring_buf_ring_add(loop->br, buf, loop->cfg.buf_size, (unsigned short)i, mask, (int)i);
    }
    io_uring_buf_ring_advance(loop->br, (int)count);
    return 0;
}

int sl_listen_retry(int (*listen_fn)(void *ctx), void *ctx)
{
    int rc = listen_fn(ctx);
    for (uint32_t i = 0; rc == -EADDRINUSE && i < SL_LISTEN_RETRY_MS / SL_LISTEN_RETRY_STEP_MS;
         i++) {
        struct timespec step = {0, (long)SL_LISTEN_RETRY_STEP_MS * 1000000L};
        nanosleep(&step, NULL);
        rc = listen_fn(ctx);
    }
    return rc;
}

int sl_loop_listen(const char *host, uint16_t port, int backlog, int *fd_out)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC,
                             .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_PASSIVE | AI_NUMERICHOST | AI_NUMERICSERV};
    char service[8];
    snprintf(service, sizeof(service), "%u", (unsigned)port);
    struct addrinfo *ai = NULL;
    if (getaddrinfo(host, service, &hints, &ai) != 0 || !ai)
        return -EINVAL;
    int err = 0;
    int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int one = 1;
    if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0 ||
        bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 || listen(fd, backlog) != 0)
        err = -errno;
    freeaddrinfo(ai);
    if (err) {
        if (fd >= 0)
            close(fd);
        return err;
    }
    *fd_out = fd;
    return 0;
}

/* Door 0 is the listener of cfg (given or bound here), then cfg.doors. */
static int loop_fds_init(sl_loop_t *loop)
{
    const sl_loop_config_t *cfg = &loop->cfg;
    loop->wake_fd = eventfd(0, EFD_CLOEXEC);
    if (loop->wake_fd < 0)
        return -errno;
    sl_door_state_t *d = &loop->doors[0];
    *d = (sl_door_state_t){
        .fd = cfg->listen_fd, .transport = cfg->transport, .transport_ctx = cfg->transport_ctx};
    loop->ndoors = 1;
    for (uint32_t i = 0; i < cfg->door_count; i++)
        loop->doors[loop->ndoors++] =
            (sl_door_state_t){.fd = cfg->doors[i].listen_fd,
                              .transport = cfg->doors[i].transport,
                              .transport_ctx = cfg->doors[i].transport_ctx};
    if (cfg->listen_fd < 0) {
        int err = sl_loop_listen(cfg->host, cfg->port, SOMAXCONN, &d->fd);
        if (err)
            return err;
        d->own = true;
    }
    loop->listen_fd = d->fd;
    return 0;
}

/* The frame pool: the caller's, or one of the loop's own. It serves frames
 * (up to max_frame) and spills (up to one provided buffer). */
static int loop_pool_init(sl_loop_t *loop)
{
    uint32_t largest =
        loop->cfg.max_frame > loop->cfg.buf_size ? loop->cfg.max_frame : loop->cfg.buf_size;
    loop->pool = loop->cfg.frame_pool;
    if (loop->pool) {
        sl_frame_pool_stats_t st;
        sl_frame_pool_stats(loop->pool, &st);
        return sl_frame_pool_class_capacity(loop->pool, st.classes - 1) >= largest ? 0 : -EINVAL;
    }
    int err = sl_frame_pool_create(loop->cfg.buf_size, largest, SL_FRAME_POOL_IDLE_MAX_DEFAULT,
                                   &loop->pool);
    loop->own_pool = err == 0;
    return err;
}

int sl_loop_create(const sl_loop_config_t *cfg, sl_loop_t **out)
{
    *out = NULL;
    if (!loop_config_ok(cfg))
        return -EINVAL;
    sl_loop_t *loop = calloc(1, sizeof(*loop));
    if (!loop)
        return -ENOMEM;
    loop->cfg = *cfg;
    loop->listen_fd = -1;
    loop->doors[0].fd = -1;
    loop->wake_fd = -1;
    sl_dlist_init(&loop->conns);
    sl_dlist_init(&loop->runq);
    sl_dlist_init(&loop->starved);
    sl_dlist_init(&loop->waiters);
    loop->tick_ts.tv_sec = cfg->tick_ms / 1000;
    loop->tick_ts.tv_nsec = (long long)(cfg->tick_ms % 1000) * 1000000;
    int err = loop_pool_init(loop);
    if (!err)
        err = loop_ring_init(loop);
    if (!err)
        err = loop_bufs_init(loop);
    if (!err)
        err = loop_fds_init(loop);
    if (err) {
        sl_loop_destroy(loop);
        return err;
    }
    *out = loop;
    return 0;
}

void sl_loop_destroy(sl_loop_t *loop)
{
    if (!loop)
        return;
    if (loop->br_registered)
        (void)io_uring_unregister_buf_ring(&loop->ring, SL_LOOP_BGID);
    if (loop->ring_ok)
        io_uring_queue_exit(&loop->ring);
    /* Only a failed run leaves connections; the ring is gone, so the kernel
     * holds none of their memory any more. Their budget goes back without
     * granting it to the others, which are about to be freed too. */
    loop->tearing_down = true;
    for (uint32_t n = loop->nconns; n > 0 && !sl_dlist_empty(&loop->conns); n--) {
        sl_conn_t *c = SL_CONTAINER_OF(loop->conns.next, sl_conn_t, all_link);
        sl_dlist_remove(&c->all_link);
        c->inflight = 0;
        if (loop->cfg.cb.on_close)
            loop->cfg.cb.on_close(loop->cfg.ctx, c);
        sl_conn_free(c);
    }
    free(loop->bufs);
    free(loop->br);
    if (loop->own_pool)
        sl_frame_pool_destroy(loop->pool);
    if (loop->wake_fd >= 0)
        close(loop->wake_fd);
    if (loop->doors[0].own)
        close(loop->doors[0].fd);
    free(loop);
}

/* --- helpers for conn.c ------------------------------------------------------ */

struct io_uring_sqe *sl_loop_sqe(sl_loop_t *loop)
{
    struct io_uring_sqe *sqe = io_uring_get_sqe(&loop->ring);
    /* A full submission queue is handed to the kernel and the request
     * retried; one submit empties it, the rest is a safety margin. */
    for (int i = 0; i < 4 && !sqe; i++) {
        (void)io_uring_submit(&loop->ring);
        sqe = io_uring_get_sqe(&loop->ring);
    }
    sl_assert(sqe != NULL);
    return sqe;
}

void sl_loop_enqueue(sl_loop_t *loop, sl_conn_t *c)
{
    if (c->queued || c->dead)
        return;
    c->queued = true;
    sl_dlist_push(&loop->runq, &c->run_link);
}

void sl_loop_starve(sl_loop_t *loop, sl_conn_t *c, bool starve)
{
    if (c->starved == starve)
        return;
    c->starved = starve;
    if (starve)
        sl_dlist_push(&loop->starved, &c->starve_link);
    else
        sl_dlist_remove(&c->starve_link);
}

/* Re-arms parked receives now that the drain has returned its buffers. Each
 * receive takes at most one buffer, so re-arming more than the ring holds
 * would only buy more ENOBUFS; the rest wait for the next turn, in order. */
static void loop_unstarve(sl_loop_t *loop)
{
    for (uint32_t i = 0; i < loop->cfg.buf_count && !sl_dlist_empty(&loop->starved); i++) {
        sl_conn_t *c = SL_CONTAINER_OF(loop->starved.next, sl_conn_t, starve_link);
        sl_loop_starve(loop, c, false);
        sl_loop_enqueue(loop, c);
    }
}

/* --- the frame budget ---------------------------------------------------------- */

bool sl_loop_budget_take(sl_loop_t *loop, sl_conn_t *c, uint32_t size)
{
    sl_assert(c->reserved == 0 && !c->waiting);
    if (sl_dlist_empty(&loop->waiters) && loop->budget_used + size <= loop->cfg.frame_budget) {
        loop->budget_used += size;
        c->reserved = size;
        return true;
    }
    c->waiting = true;
    sl_dlist_push(&loop->waiters, &c->wait_link);
    loop->stats.budget_waits++;
    return false;
}

static void loop_wait_remove(sl_conn_t *c)
{
    if (!c->waiting)
        return;
    c->waiting = false;
    sl_dlist_remove(&c->wait_link);
}

/* Grants waiting frames in arrival order while they fit; the first that
 * does not fit stops the walk, so a large frame is not starved by smaller
 * ones behind it. The budget holds at least one largest frame, so the head
 * always fits once enough is released. */
static void loop_budget_grant(sl_loop_t *loop)
{
    for (uint32_t i = 0; i < loop->nconns && !sl_dlist_empty(&loop->waiters); i++) {
        sl_conn_t *c = SL_CONTAINER_OF(loop->waiters.next, sl_conn_t, wait_link);
        uint32_t size = sl_header_size(c->hdr);
        if (loop->budget_used + size > loop->cfg.frame_budget)
            return;
        loop->budget_used += size;
        c->reserved = size;
        loop_wait_remove(c);
        sl_loop_enqueue(loop, c);
    }
}

void sl_loop_budget_release(sl_loop_t *loop, sl_conn_t *c)
{
    if (c->reserved == 0)
        return;
    sl_assert(loop->budget_used >= c->reserved);
    loop->budget_used -= c->reserved;
    c->reserved = 0;
    if (!loop->tearing_down)
        loop_budget_grant(loop);
}

void sl_loop_budget_leave(sl_loop_t *loop, sl_conn_t *c)
{
    if (!c->waiting)
        return;
    /* The frame behind it may fit where this one did not. */
    bool head = loop->waiters.next == &c->wait_link;
    loop_wait_remove(c);
    if (head && !loop->tearing_down)
        loop_budget_grant(loop);
}

const uint8_t *sl_loop_buf(const sl_loop_t *loop, uint16_t bid)
{
    return loop->bufs + (size_t)bid * loop->cfg.buf_size;
}

void sl_loop_buf_return(sl_loop_t *loop, uint16_t bid)
{
    int mask = io_uring_buf_ring_mask(loop->cfg.buf_count);
    io_uring_buf_ring_add(loop->br, loop->bufs + (size_t)bid * loop->cfg.buf_size,
                          loop->cfg.buf_size, bid, mask, 0);
    io_uring_buf_ring_advance(loop->br, 1);
}

/* --- loop-wide operations -------------------------------------------------- */

static void loop_arm_accept(sl_loop_t *loop, sl_door_state_t *d)
{
    struct io_uring_sqe *sqe = sl_loop_sqe(loop);
    /* Peer addresses come from getpeername: a multishot accept would write
     * every address into the same place before we read it. */
    io_uring_prep_multishot_accept(sqe, d->fd, NULL, NULL, SOCK_CLOEXEC);
    io_uring_sqe_set_data64(sqe, sl_ud(d, SL_UD_ACCEPT));
    d->armed = true;
    d->retry = false;
}

static void loop_arm_accepts(sl_loop_t *loop)
{
    for (uint32_t i = 0; i < loop->ndoors; i++)
        loop_arm_accept(loop, &loop->doors[i]);
}

static void loop_cancel_accepts(sl_loop_t *loop)
{
    for (uint32_t i = 0; i < loop->ndoors; i++) {
        if (!loop->doors[i].armed)
            continue;
        struct io_uring_sqe *sqe = sl_loop_sqe(loop);
        io_uring_prep_cancel64(sqe, sl_ud(&loop->doors[i], SL_UD_ACCEPT), 0);
        io_uring_sqe_set_data64(sqe, SL_UD_IGNORE);
    }
}

static bool loop_accepts_armed(const sl_loop_t *loop)
{
    for (uint32_t i = 0; i < loop->ndoors; i++)
        if (loop->doors[i].armed)
            return true;
    return false;
}

static void loop_arm_tick(sl_loop_t *loop)
{
    struct io_uring_sqe *sqe = sl_loop_sqe(loop);
    io_uring_prep_timeout(sqe, &loop->tick_ts, 0, 0);
    io_uring_sqe_set_data64(sqe, SL_UD_TICK);
    loop->tick_armed = true;
}

static void loop_arm_wake(sl_loop_t *loop)
{
    struct io_uring_sqe *sqe = sl_loop_sqe(loop);
    io_uring_prep_read(sqe, loop->wake_fd, &loop->wake_val, sizeof(loop->wake_val), 0);
    io_uring_sqe_set_data64(sqe, SL_UD_WAKE);
    loop->wake_armed = true;
}

/* Event source i reads into its own counter; its user data carries i above the tag. */
static uint64_t event_ud(uint32_t i)
{
    return (uint64_t)i << 3 | SL_UD_EVENT;
}

static void loop_arm_event(sl_loop_t *loop, uint32_t i)
{
    struct io_uring_sqe *sqe = sl_loop_sqe(loop);
    io_uring_prep_read(sqe, loop->cfg.events[i].fd, &loop->event_val[i], sizeof(uint64_t), 0);
    io_uring_sqe_set_data64(sqe, event_ud(i));
    loop->event_armed[i] = true;
}

static bool events_armed(const sl_loop_t *loop)
{
    for (uint32_t i = 0; i < loop->cfg.events_count; i++)
        if (loop->event_armed[i])
            return true;
    return false;
}

static void loop_cancel(sl_loop_t *loop, uint64_t target)
{
    struct io_uring_sqe *sqe = sl_loop_sqe(loop);
    if (target == SL_UD_TICK)
        io_uring_prep_timeout_remove(sqe, target, 0);
    else
        io_uring_prep_cancel64(sqe, target, 0);
    io_uring_sqe_set_data64(sqe, SL_UD_IGNORE);
}

/* A new socket: refuse it at the connection cap (or while stopping), else
 * open a connection and queue its first receive. */
static void loop_admit(sl_loop_t *loop, int fd, const sl_door_state_t *door)
{
    if (loop->stopping || loop->nconns >= loop->cfg.max_conns) {
        close(fd);
        loop->stats.refused++;
        return;
    }
    sl_conn_t *c = sl_conn_new(loop, fd, door);
    if (!c) {
        close(fd);
        loop->stats.refused++;
        return;
    }
    sl_dlist_push(&loop->conns, &c->all_link);
    loop->nconns++;
    loop->stats.accepted++;
    if (loop->cfg.cb.on_open)
        loop->cfg.cb.on_open(loop->cfg.ctx, c);
    sl_loop_enqueue(loop, c);
}

sl_conn_t *sl_loop_adopt(sl_loop_t *loop, int fd, const char *label)
{
    uint32_t before = loop->nconns;
    loop_admit(loop, fd, NULL); /* internal: always plain */
    if (loop->nconns == before)
        return NULL; /* refused: fd is closed */
    sl_conn_t *c = SL_CONTAINER_OF(loop->conns.prev, sl_conn_t, all_link);
    snprintf(c->peer, sizeof(c->peer), "%s", label);
    return c;
}

static void loop_on_accept(sl_loop_t *loop, sl_door_state_t *d, int res, uint32_t flags)
{
    if (!(flags & IORING_CQE_F_MORE))
        d->armed = false;
    if (res >= 0)
        loop_admit(loop, res, d);
    bool transient =
        res >= 0 || res == -ECANCELED || res == -EINTR || res == -EAGAIN || res == -ECONNABORTED;
    if (!transient)
        sl_log_warn("accept: %s (retrying on the next tick)", strerror(-res));
    if (d->armed || loop->stopping)
        return;
    /* Multishot accept ends on errors and when the kernel runs short; hard
     * errors (EMFILE, ENOMEM) wait for the next tick rather than spin. */
    if (transient)
        loop_arm_accept(loop, d);
    else
        d->retry = true;
}

static void loop_close_all(sl_loop_t *loop)
{
    sl_dlink_t *n = loop->conns.next;
    for (uint32_t i = 0; i < loop->nconns && n != &loop->conns; i++) {
        sl_conn_t *c = SL_CONTAINER_OF(n, sl_conn_t, all_link);
        n = n->next;
        sl_conn_close(c);
    }
}

/* The tick's look at every connection for the two timeouts (conn.c says
 * what is timed). Bounded by the connection count; a closed connection
 * stays on the list until it is reaped, so the walk stays valid. */
static void loop_check_timeouts(sl_loop_t *loop)
{
    uint64_t frame_us = (uint64_t)loop->cfg.frame_timeout_ms * 1000u;
    uint64_t reply_us = (uint64_t)loop->cfg.reply_timeout_ms * 1000u;
    uint64_t handshake_us = (uint64_t)loop->cfg.handshake_timeout_ms * 1000u;
    if (frame_us == 0 && reply_us == 0 && handshake_us == 0)
        return;
    uint64_t now = sl_clock_monotonic_us();
    sl_dlink_t *n = loop->conns.next;
    for (uint32_t i = 0; i < loop->nconns && n != &loop->conns; i++) {
        sl_conn_t *c = SL_CONTAINER_OF(n, sl_conn_t, all_link);
        n = n->next;
        sl_conn_check_timeouts(c, now, frame_us, reply_us);
        sl_conn_check_handshake(c, now, handshake_us);
    }
}

static void loop_on_tick(sl_loop_t *loop, int res)
{
    loop->tick_armed = false;
    if (res == -ECANCELED || loop->finishing)
        return;
    loop_check_timeouts(loop);
    for (uint32_t i = 0; i < loop->ndoors && !loop->stopping; i++)
        if (loop->doors[i].retry)
            loop_arm_accept(loop, &loop->doors[i]);
    if (loop->stopping && sl_clock_monotonic_us() >= loop->stop_deadline_us) {
        sl_log_warn("stop: handlers did not answer in time; closing %u connections", loop->nconns);
        loop_close_all(loop);
    }
    if (loop->cfg.cb.on_tick)
        loop->cfg.cb.on_tick(loop->cfg.ctx, loop);
    loop_arm_tick(loop);
}

static void loop_begin_stop(sl_loop_t *loop)
{
    if (loop->stopping)
        return;
    loop->stopping = true;
    loop->stop_deadline_us = sl_clock_monotonic_us() + (uint64_t)loop->cfg.stop_grace_ms * 1000u;
    loop_cancel_accepts(loop);
    /* Every connection runs once more: idle ones close, frames already read
     * are delivered, answers being written finish first. */
    sl_dlink_t *n = loop->conns.next;
    for (uint32_t i = 0; i < loop->nconns && n != &loop->conns; i++) {
        sl_loop_enqueue(loop, SL_CONTAINER_OF(n, sl_conn_t, all_link));
        n = n->next;
    }
}

static void loop_on_wake(sl_loop_t *loop, int res)
{
    loop->wake_armed = false;
    if (res == (int)sizeof(loop->wake_val)) {
        loop_begin_stop(loop);
        return;
    }
    if (res != -ECANCELED && !loop->stopping)
        loop_arm_wake(loop);
}

/* Kept armed while stopping: a handler may be waiting for this event to
 * answer. Only loop_check_done cancels it. */
static void loop_on_event(sl_loop_t *loop, uint32_t i, int res)
{
    sl_assert(i < loop->cfg.events_count);
    loop->event_armed[i] = false;
    if (res == (int)sizeof(uint64_t))
        loop->cfg.events[i].on_event(loop->cfg.ctx, loop);
    else if (res != -ECANCELED && res != -EINTR && res != -EAGAIN)
        sl_log_error("event read: %s", strerror(-res)); /* not re-armed: it would spin */
    bool retry = res == (int)sizeof(uint64_t) || res == -EINTR || res == -EAGAIN;
    if (retry && !loop->finishing)
        loop_arm_event(loop, i);
}

static void loop_complete(sl_loop_t *loop, uint64_t ud, int res, uint32_t flags)
{
    sl_conn_t *c = (sl_conn_t *)(uintptr_t)(ud & ~(uint64_t)SL_UD_TAG_MASK);
    switch (ud & SL_UD_TAG_MASK) {
    case SL_UD_ACCEPT:
        loop_on_accept(loop, (sl_door_state_t *)(void *)c, res, flags);
        break;
    case SL_UD_WAKE:
        loop_on_wake(loop, res);
        break;
    case SL_UD_TICK:
        loop_on_tick(loop, res);
        break;
    case SL_UD_EVENT:
        loop_on_event(loop, (uint32_t)(ud >> 3), res);
        break;
    case SL_UD_RECV:
        sl_conn_on_recv(c, res, flags);
        break;
    case SL_UD_SEND:
        sl_conn_on_send(c, res);
        break;
    default:
        break; /* cancellations: their targets complete on their own */
    }
}

/* --- the turn --------------------------------------------------------------- */

static int loop_wait(sl_loop_t *loop)
{
    bool idle = sl_dlist_empty(&loop->runq) && sl_dlist_empty(&loop->starved) && !loop->dead;
    /* Not idle: still enter the kernel, because with COOP_TASKRUN finished
     * operations are only posted when this thread does. */
    int ret = idle ? io_uring_submit_and_wait(&loop->ring, 1)
                   : io_uring_submit_and_get_events(&loop->ring);
    /* EINTR: a signal; EAGAIN/EBUSY: the kernel wants completions reaped
     * first, which the drain that follows does. */
    if (ret >= 0 || ret == -EINTR || ret == -EAGAIN || ret == -EBUSY)
        return 0;
    sl_log_error("io_uring_submit: %s", strerror(-ret));
    return ret;
}

static void loop_drain(sl_loop_t *loop)
{
    struct io_uring_cqe *cqes[SL_LOOP_CQE_BATCH];
    /* Bounded by the completion queue's size: what arrives meanwhile waits
     * for the next turn. */
    unsigned rounds = loop->ring.cq.ring_entries / SL_LOOP_CQE_BATCH + 1;
    for (unsigned r = 0; r < rounds; r++) {
        unsigned n = io_uring_peek_batch_cqe(&loop->ring, cqes, SL_LOOP_CQE_BATCH);
        if (n == 0)
            return;
        for (unsigned i = 0; i < n; i++)
            loop_complete(loop, cqes[i]->user_data, cqes[i]->res, cqes[i]->flags);
        io_uring_cq_advance(&loop->ring, n);
    }
}

static void loop_run_queue(sl_loop_t *loop)
{
    sl_dlink_t batch;
    loop_unstarve(loop);
    sl_dlist_move_all(&loop->runq, &batch);
    /* Connections queued while this runs land on loop->runq for the next
     * turn, so each gets one budget per turn; the batch holds at most every
     * connection once. */
    const uint32_t bound = loop->nconns;
    for (uint32_t i = 0; i < bound && !sl_dlist_empty(&batch); i++) {
        sl_conn_t *c = SL_CONTAINER_OF(batch.next, sl_conn_t, run_link);
        sl_dlist_remove(&c->run_link);
        c->queued = false;
        if (sl_conn_step(c, loop->cfg.frames_per_turn))
            sl_loop_enqueue(loop, c);
    }
    sl_assert(sl_dlist_empty(&batch));
}

static void loop_reap(sl_loop_t *loop)
{
    /* on_close may close other connections, which join the list; each
     * connection dies once, so the count of connections bounds this. */
    const uint32_t bound = loop->nconns;
    for (uint32_t i = 0; i < bound && loop->dead; i++) {
        sl_conn_t *c = loop->dead;
        loop->dead = c->dead_next;
        if (c->queued)
            sl_dlist_remove(&c->run_link);
        sl_loop_starve(loop, c, false);
        sl_loop_budget_leave(loop, c);
        sl_dlist_remove(&c->all_link);
        loop->nconns--;
        loop->stats.closed++;
        if (loop->cfg.cb.on_close)
            loop->cfg.cb.on_close(loop->cfg.ctx, c);
        sl_conn_free(c);
    }
}

/* Stopping and no connection left: cancel the loop-wide operations (their
 * memory lives in the loop) and finish once all of them have completed. */
static void loop_check_done(sl_loop_t *loop)
{
    if (!loop->stopping || loop->nconns > 0)
        return;
    if (!loop->finishing) {
        loop->finishing = true;
        loop_cancel_accepts(loop);
        if (loop->tick_armed)
            loop_cancel(loop, SL_UD_TICK);
        if (loop->wake_armed)
            loop_cancel(loop, SL_UD_WAKE);
        for (uint32_t i = 0; i < loop->cfg.events_count; i++)
            if (loop->event_armed[i])
                loop_cancel(loop, event_ud(i));
    }
    loop->done =
        !loop_accepts_armed(loop) && !loop->tick_armed && !loop->wake_armed && !events_armed(loop);
}

int sl_loop_run(sl_loop_t *loop)
{
    if (loop->ran)
        return -EALREADY;
    loop->ran = true;
    loop_arm_wake(loop);
    loop_arm_tick(loop);
    loop_arm_accepts(loop);
    for (uint32_t i = 0; i < loop->cfg.events_count; i++)
        loop_arm_event(loop, i);
    int err = 0;
    /* One pass per turn until stop has run its course; the wait inside
     * blocks whenever nothing is runnable, so this never spins. */
    while (!loop->done && !err) {
        err = loop_wait(loop);
        if (err)
            break;
        loop_drain(loop);
        loop_run_queue(loop);
        if (loop->cfg.cb.on_turn_end)
            loop->cfg.cb.on_turn_end(loop->cfg.ctx, loop);
        loop_reap(loop);
        loop_check_done(loop);
        loop->stats.turns++;
    }
    return err;
}

void sl_loop_stop(sl_loop_t *loop)
{
    /* Async-signal-safe: one write(2); errno is kept for the interrupted code. */
    int saved = errno;
    uint64_t one = 1;
    ssize_t n = write(loop->wake_fd, &one, sizeof(one));
    (void)n;
    errno = saved;
}

/* --- queries ----------------------------------------------------------------- */

uint16_t sl_loop_port(const sl_loop_t *loop)
{
    return sl_loop_socket_port(loop->listen_fd);
}

uint16_t sl_loop_socket_port(int listen_fd)
{
    struct sockaddr_storage ss;
    socklen_t len = sizeof(ss);
    if (getsockname(listen_fd, (struct sockaddr *)&ss, &len) != 0)
        return 0;
    if (ss.ss_family == AF_INET)
        return ntohs(((const struct sockaddr_in *)&ss)->sin_port);
    if (ss.ss_family == AF_INET6)
        return ntohs(((const struct sockaddr_in6 *)&ss)->sin6_port);
    return 0;
}

uint64_t sl_loop_turn(const sl_loop_t *loop)
{
    return loop->stats.turns;
}

void sl_loop_stats(const sl_loop_t *loop, sl_loop_stats_t *out)
{
    *out = loop->stats;
    out->conns = loop->nconns;
    out->budget_used = loop->budget_used;
    out->budget_waiting = 0;
    const sl_dlink_t *n = loop->waiters.next;
    for (uint32_t i = 0; i < loop->nconns && n != &loop->waiters; i++, n = n->next)
        out->budget_waiting++;
}

sl_frame_pool_t *sl_loop_frame_pool(const sl_loop_t *loop)
{
    return loop->pool;
}

/* --- start-up diagnosis ------------------------------------------------------- */

static int read_int_file(const char *path)
{
    FILE *f = fopen(path, "r");
    int v = -1;
    if (!f)
        return -1;
    if (fscanf(f, "%d", &v) != 1)
        v = -1;
    fclose(f);
    return v;
}

static int read_seccomp_mode(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    int mode = -1;
    if (!f)
        return -1;
    /* /proc/self/status has some 60 lines; 200 is a generous bound. */
    for (int i = 0; i < 200 && fgets(line, sizeof(line), f); i++) {
        if (sscanf(line, "Seccomp: %d", &mode) == 1)
            break;
    }
    fclose(f);
    return mode;
}

void sl_loop_explain(char *out, size_t cap, int err, int disabled, int seccomp, uint64_t memlock)
{
    if (disabled == 2)
        snprintf(out, cap,
                 "io_uring is disabled on this host (kernel.io_uring_disabled = 2); "
                 "set the sysctl to 0");
    else if (disabled == 1 && err == -EPERM)
        snprintf(out, cap,
                 "io_uring is limited to the io_uring_group (kernel.io_uring_disabled "
                 "= 1); set it to 0 or run sluiced in that group");
    else if ((err == -EPERM || err == -ENOSYS) && seccomp > 0)
        snprintf(out, cap,
                 "a seccomp filter blocks io_uring (Seccomp: %d in /proc/self/status); "
                 "allow io_uring_setup/enter/register (container profile)",
                 seccomp);
    else if (err == -ENOMEM)
        snprintf(out, cap,
                 "not enough locked memory for the ring: RLIMIT_MEMLOCK is %llu KiB "
                 "(kernels before 5.12 charge rings to it); raise `ulimit -l` or lower "
                 "ring_entries/buf_count",
                 (unsigned long long)(memlock / 1024));
    else if (err == -ENOSYS)
        snprintf(out, cap,
                 "the kernel has no io_uring (older than 5.1 or built without "
                 "CONFIG_IO_URING); Sluice needs Linux 5.19 or newer");
    else if (err == -EINVAL)
        snprintf(out, cap,
                 "the kernel refused a ring feature (provided buffer rings need "
                 "Linux 5.19 or newer): the kernel is probably too old");
    else if (err == -EPERM)
        snprintf(out, cap,
                 "io_uring was refused (EPERM): check kernel.io_uring_disabled, "
                 "seccomp and LSM policy");
    else
        snprintf(out, cap, "io_uring set-up failed: %s", strerror(err < 0 ? -err : err));
}

const char *sl_loop_diagnose(int err)
{
    static _Thread_local char text[320];
    struct rlimit rl = {0, 0};
    uint64_t memlock = 0;
    if (getrlimit(RLIMIT_MEMLOCK, &rl) == 0)
        memlock = rl.rlim_cur == RLIM_INFINITY ? UINT64_MAX : (uint64_t)rl.rlim_cur;
    sl_loop_explain(text, sizeof(text), err, read_int_file("/proc/sys/kernel/io_uring_disabled"),
                    read_seccomp_mode(), memlock);
    return text;
}
