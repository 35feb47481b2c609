/* One client connection of the event loop: assembling whole frames from the
 * byte stream, lockstep delivery, vectored replies, and a close that never
 * frees memory the kernel still points at.
 *
 * How a frame is read (the copy budget). The 256-byte header is received
 * into a buffer of the loop's provided-buffer ring, so an idle connection
 * pins no receive memory. As soon as the header is complete its size is
 * checked and a buffer for that size is taken from the loop's frame pool
 * (server/frame_pool.h); the header and whatever else that receive brought
 * (at most one provided buffer, 16 KiB by default) are copied into it, and
 * the rest of the body is received by plain recv straight into the frame at
 * its fill offset. A 1 MiB SendMessages frame therefore costs one copy of at
 * most 16 KiB (under 2% of it) and the buffer is never grown or moved; the
 * handler may take it over by ownership (sl_conn_take_frame). Small frames
 * usually arrive whole in one provided buffer and are copied once. Bytes
 * past the end of a frame (a client that pipelines) are kept in a spill
 * buffer, also from the pool, until the frame is answered. Every buffer
 * goes back to the pool, never to free().
 *
 * What a header may claim. A size above the connection's frame limit closes
 * the connection at once, so a client that has not logged in cannot make
 * the server reserve more than a login needs. A size within it, above one
 * receive buffer, is reserved against the loop's frame budget before the
 * buffer is taken; when the budget is spent the header waits
 * (SL_CONN_WAIT) with no receive armed, and whatever else its receive
 * brought waits in the spill. */
#include "server/conn.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/log.h"
#include "wire/header.h"

/* The transport seam (the section "transports" below): a connection with a
 * transport receives its socket bytes into provided buffers and hands them
 * to conn_xport_input; frame assembly pulls the stream from the transport
 * (conn_xport_pull) where it would otherwise arm a receive; replies are
 * encoded by the transport and its output sent from c->xsend. */
static void conn_xport_input(sl_conn_t *c, const uint8_t *data, uint32_t n);
static bool conn_xport_pull(sl_conn_t *c);
static void conn_xport_arm_send(sl_conn_t *c);
static void conn_xport_sent(sl_conn_t *c, size_t n);
static void conn_xport_flush(sl_conn_t *c);
static int conn_xport_send_final(sl_conn_t *c, const void *bytes, size_t len);

/* Connection numbers are process-wide so that logs of different shards
 * never reuse one; 0 is skipped so it can mean "none". */
static _Atomic uint32_t conn_next_id;

static uint32_t conn_new_id(void)
{
    uint32_t id = atomic_fetch_add(&conn_next_id, 1) + 1;
    /* The counter wraps after 2^32 connections; one retry skips 0. */
    if (id == 0)
        id = atomic_fetch_add(&conn_next_id, 1) + 1;
    return id;
}

static void conn_peer_text(sl_conn_t *c)
{
    struct sockaddr_storage ss;
    socklen_t len = sizeof(ss);
    char host[INET6_ADDRSTRLEN] = "?";
    unsigned port = 0;
    snprintf(c->peer, sizeof(c->peer), "?");
    if (getpeername(c->fd, (struct sockaddr *)&ss, &len) != 0)
        return;
    if (ss.ss_family == AF_INET) {
        const struct sockaddr_in *a = (const struct sockaddr_in *)&ss;
        inet_ntop(AF_INET, &a->sin_addr, host, sizeof(host));
        port = ntohs(a->sin_port);
        snprintf(c->peer, sizeof(c->peer), "%s:%u", host, port);
    } else if (ss.ss_family == AF_INET6) {
        const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)&ss;
        inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof(host));
        port = ntohs(a->sin6_port);
        snprintf(c->peer, sizeof(c->peer), "[%s]:%u", host, port);
    }
}

_Static_assert(_Alignof(sl_door_state_t) > SL_UD_TAG_MASK, "door pointers carry a tag");

static bool conn_xport_open(sl_conn_t *c, const sl_door_state_t *door)
{
    /* Transport output has no bound of its own: what lands there is
     * bounded by the reply chunk, or by a handshake's or a control frame's
     * size. */
    sl_buf_init(&c->xout, 0);
    sl_buf_init(&c->xsend, 0);
    if (!door || !door->transport)
        return true;
    if (door->transport->open(door->transport_ctx, &c->xout, &c->xstate) != 0)
        return false;
    c->xport = door->transport;
    return true;
}

sl_conn_t *sl_conn_new(sl_loop_t *loop, int fd, const sl_door_state_t *door)
{
    sl_conn_t *c = calloc(1, sizeof(*c));
    if (!c)
        return NULL;
    if (!conn_xport_open(c, door)) {
        free(c);
        return NULL;
    }
    c->open_us = sl_clock_monotonic_us();
    c->loop = loop;
    c->fd = fd;
    c->id = conn_new_id();
    c->state = SL_CONN_HEAD;
    sl_dlist_init(&c->all_link);
    sl_dlist_init(&c->run_link);
    sl_dlist_init(&c->starve_link);
    sl_dlist_init(&c->wait_link);
    c->frame_limit = loop->cfg.max_frame;
    /* Replies are whole frames written at once; Nagle would only delay the
     * last segment of each until the client's delayed ACK. */
    int one = 1;
    if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) != 0)
        sl_log_debug("conn %u: TCP_NODELAY: %s", c->id, strerror(errno));
    conn_peer_text(c);
    return c;
}

static void conn_frame_release(sl_conn_t *c)
{
    sl_frame_pool_put(c->loop->pool, c->frame);
    c->frame = NULL;
    c->frame_size = c->frame_have = 0;
    sl_loop_budget_release(c->loop, c);
}

static void conn_iov_release(sl_conn_t *c)
{
    if (c->iov != c->iov_inline)
        free(c->iov);
    c->iov = NULL;
    c->iov_cnt = c->iov_idx = 0;
}

void sl_conn_free(sl_conn_t *c)
{
    sl_assert(c->inflight == 0);
    close(c->fd);
    conn_frame_release(c);
    conn_iov_release(c);
    sl_frame_pool_put(c->loop->pool, c->spill);
    if (c->xport)
        c->xport->close(c->xstate);
    sl_buf_free(&c->xout);
    sl_buf_free(&c->xsend);
    free(c);
}

/* Queues the connection for on_close and free once nothing is in flight. */
static void conn_maybe_dead(sl_conn_t *c)
{
    if (!c->closing || c->inflight > 0 || c->dead)
        return;
    c->dead = true;
    c->dead_next = c->loop->dead;
    c->loop->dead = c;
}

static void conn_cancel(sl_conn_t *c, unsigned tag)
{
    struct io_uring_sqe *sqe = sl_loop_sqe(c->loop);
    io_uring_prep_cancel64(sqe, sl_ud(c, tag), 0);
    io_uring_sqe_set_data64(sqe, SL_UD_IGNORE);
}

void sl_conn_close(sl_conn_t *c)
{
    if (c->closing)
        return;
    c->closing = true;
    sl_loop_budget_leave(c->loop, c);
    /* The receive and the send point into this connection's memory: ask the
     * kernel to let go of them; their completions bring inflight to 0. */
    if (c->recv_armed)
        conn_cancel(c, SL_UD_RECV);
    if (c->send_armed)
        conn_cancel(c, SL_UD_SEND);
    conn_maybe_dead(c);
}

/* --- frame assembly -------------------------------------------------------- */

static void conn_frame_complete(sl_conn_t *c)
{
    c->state = SL_CONN_READY;
    c->frame_start_us = 0;
}

/* The frame's bytes are reserved (c->reserved): take its buffer and copy
 * the header to its start. */
static int conn_alloc_frame(sl_conn_t *c)
{
    uint32_t size = sl_header_size(c->hdr);
    sl_assert(c->reserved == size || (c->reserved == 0 && size <= c->loop->cfg.buf_size));
    c->frame = sl_frame_pool_get(c->loop->pool, size);
    if (!c->frame) {
        sl_log_warn("conn %u: no memory for a %u-byte frame", c->id, size);
        return -ENOMEM;
    }
    memcpy(c->frame, c->hdr, SL_HEADER_SIZE);
    c->frame_size = size;
    c->frame_have = SL_HEADER_SIZE;
    c->hdr_have = 0;
    c->state = SL_CONN_BODY;
    if (size == SL_HEADER_SIZE)
        conn_frame_complete(c);
    return 0;
}

/* The header is complete: check its size (framing.md 9: out of range closes
 * the connection; so does a size above this connection's limit), reserve
 * it and allocate the whole frame, or wait for the budget. */
static int conn_start_body(sl_conn_t *c)
{
    sl_loop_t *loop = c->loop;
    uint32_t size = sl_header_size(c->hdr);
    if (size < SL_HEADER_SIZE || size > loop->cfg.max_frame) {
        loop->stats.bad_frames++;
        sl_log_debug("conn %u (%s): frame size %u out of range", c->id, c->peer, size);
        return -EPROTO;
    }
    if (size > c->frame_limit) {
        loop->stats.over_limit++;
        sl_log_info("conn %u (%s): closed: it declared a %u-byte frame, above the %u bytes it "
                    "may send now",
                    c->id, c->peer, size, c->frame_limit);
        return -EPROTO;
    }
    /* A frame that fits one receive buffer is part of what every connection
     * may cost, like its spill: it never waits, so a ping or a login gets
     * through while large frames queue for the budget. */
    if (size > loop->cfg.buf_size && !sl_loop_budget_take(loop, c, size)) {
        /* The wait is the server's doing: the frame's clock restarts when
         * its bytes are granted. */
        c->state = SL_CONN_WAIT;
        c->frame_start_us = 0;
        return 0;
    }
    return conn_alloc_frame(c);
}

/* Consumes bytes into the frame being assembled and stops at its end.
 * Returns how many bytes were used, or -errno for a frame to refuse. */
static int64_t conn_feed(sl_conn_t *c, const uint8_t *data, uint32_t n)
{
    uint32_t used = 0;
    if (c->state == SL_CONN_HEAD) {
        if (c->frame_start_us == 0 && n > 0)
            c->frame_start_us = sl_clock_monotonic_us();
        uint32_t take = SL_HEADER_SIZE - c->hdr_have;
        take = take < n ? take : n;
        memcpy(c->hdr + c->hdr_have, data, take);
        c->hdr_have += take;
        used = take;
        if (c->hdr_have < SL_HEADER_SIZE)
            return used;
        int err = conn_start_body(c);
        if (err)
            return err;
    }
    if (c->state == SL_CONN_BODY) {
        uint32_t take = c->frame_size - c->frame_have;
        take = take < n - used ? take : n - used;
        memcpy(c->frame + c->frame_have, data + used, take);
        c->frame_have += take;
        used += take;
        if (c->frame_have == c->frame_size)
            conn_frame_complete(c);
    }
    return used;
}

/* Bytes from a provided buffer: feed them, keep what follows a complete
 * frame, so the buffer can go back to the ring at once. */
static void conn_take_bytes(sl_conn_t *c, const uint8_t *data, uint32_t n)
{
    int64_t used = conn_feed(c, data, n);
    if (used < 0) {
        sl_conn_close(c);
        return;
    }
    if ((uint32_t)used == n)
        return;
    sl_assert(c->spill == NULL);
    c->spill = sl_frame_pool_get(c->loop->pool, n - (uint32_t)used);
    if (!c->spill) {
        sl_conn_close(c);
        return;
    }
    memcpy(c->spill, data + used, n - (uint32_t)used);
    c->spill_off = 0;
    c->spill_len = n - (uint32_t)used;
}

static void conn_feed_spill(sl_conn_t *c)
{
    int64_t used = conn_feed(c, c->spill + c->spill_off, c->spill_len - c->spill_off);
    if (used < 0) {
        sl_conn_close(c);
        return;
    }
    c->spill_off += (uint32_t)used;
    if (c->spill_off == c->spill_len) {
        sl_frame_pool_put(c->loop->pool, c->spill);
        c->spill = NULL;
        c->spill_off = c->spill_len = 0;
    }
}

/* --- receiving ------------------------------------------------------------- */

/* The socket bytes a transport connection can wait for in one receive into
 * its frame's free tail: what the transport says must still come, at most
 * that tail and one transport chunk, and only when it is more than a
 * receive buffer (below that a provided buffer serves as well). 0: use a
 * provided buffer. The chunk bound lets the body be decoded piece by piece
 * while the client still encodes and sends the rest. */
static uint32_t conn_xport_bulk(const sl_conn_t *c)
{
    if (!c->xport || !c->xport->need || c->state != SL_CONN_BODY)
        return 0;
    uint32_t tail = c->frame_size - c->frame_have;
    uint32_t need = c->xport->need(c->xstate, tail);
    need = need < tail ? need : tail;
    need = need < SL_LOOP_TRANSPORT_CHUNK ? need : SL_LOOP_TRANSPORT_CHUNK;
    return need > c->loop->cfg.buf_size ? need : 0;
}

static void conn_arm_recv(sl_conn_t *c)
{
    const sl_loop_config_t *cfg = &c->loop->cfg;
    sl_assert(c->state == SL_CONN_HEAD || c->state == SL_CONN_BODY);
    if (c->starved)
        sl_loop_starve(c->loop, c, false);
    struct io_uring_sqe *sqe = sl_loop_sqe(c->loop);
    uint32_t bulk = conn_xport_bulk(c);
    if (bulk > 0) {
        /* A large encrypted (or framed) body: the transport's bytes wait in
         * the frame's tail, all of them in one completion, and are handed
         * to input from there; read then writes the stream over them. */
        if (cfg->faults.recv_max && cfg->faults.recv_max < bulk)
            bulk = cfg->faults.recv_max;
        io_uring_prep_recv(sqe, c->fd, c->frame + c->frame_have, bulk, MSG_WAITALL);
    } else if (c->state == SL_CONN_HEAD || c->xport) {
        /* The kernel picks a provided buffer when data arrives (always with
         * a transport: its bytes are not yet the frame's). */
        uint32_t len = cfg->buf_size;
        if (cfg->faults.recv_max && cfg->faults.recv_max < len)
            len = cfg->faults.recv_max;
        io_uring_prep_recv(sqe, c->fd, NULL, len, 0);
        sqe->flags |= IOSQE_BUFFER_SELECT;
        sqe->buf_group = SL_LOOP_BGID;
    } else {
        /* The body goes straight to its place in the frame. MSG_WAITALL
         * lets the kernel retry short receives itself (one completion per
         * body); a short count still comes back on close or error. */
        uint32_t len = c->frame_size - c->frame_have;
        if (cfg->faults.recv_max && cfg->faults.recv_max < len)
            len = cfg->faults.recv_max;
        io_uring_prep_recv(sqe, c->fd, c->frame + c->frame_have, len, MSG_WAITALL);
    }
    io_uring_sqe_set_data64(sqe, sl_ud(c, SL_UD_RECV));
    c->recv_armed = true;
    c->inflight++;
}

/* Nothing complete is buffered: read more, unless the loop is stopping, in
 * which case a partly read frame is abandoned and the connection closed. */
static void conn_read_more(sl_conn_t *c)
{
    if (c->loop->stopping) {
        sl_conn_close(c);
        return;
    }
    if (!c->recv_armed)
        conn_arm_recv(c);
}

static void conn_recv_error(sl_conn_t *c, int res)
{
    if (res == -ENOBUFS) {
        /* Backpressure: more connections had data than the ring had
         * buffers. Buffers go back as completions are handled; the loop
         * re-arms parked receives after that, a ring's worth per turn. */
        c->loop->stats.enobufs++;
        sl_loop_starve(c->loop, c, true);
        return;
    }
    if (res == -EINTR || res == -EAGAIN) {
        sl_loop_enqueue(c->loop, c);
        return;
    }
    if (res != 0 && res != -ECONNRESET)
        sl_log_debug("conn %u (%s): recv: %s", c->id, c->peer, strerror(-res));
    sl_conn_close(c); /* 0: the peer closed */
}

void sl_conn_on_recv(sl_conn_t *c, int res, uint32_t flags)
{
    sl_assert(c->inflight > 0 && c->recv_armed);
    c->inflight--;
    c->recv_armed = false;
    if (flags & IORING_CQE_F_BUFFER) {
        /* A provided buffer must go back even when the connection is
         * closing, or the ring would lose it. */
        uint16_t bid = (uint16_t)(flags >> IORING_CQE_BUFFER_SHIFT);
        if (res > 0 && !c->closing && c->xport)
            conn_xport_input(c, sl_loop_buf(c->loop, bid), (uint32_t)res);
        else if (res > 0 && !c->closing)
            conn_take_bytes(c, sl_loop_buf(c->loop, bid), (uint32_t)res);
        sl_loop_buf_return(c->loop, bid);
    } else if (res > 0 && !c->closing && c->xport) {
        conn_xport_input(c, c->frame + c->frame_have, (uint32_t)res); /* conn_xport_bulk */
    } else if (res > 0 && !c->closing) {
        c->frame_have += (uint32_t)res;
        if (c->frame_have == c->frame_size)
            conn_frame_complete(c);
    }
    if (c->closing) {
        conn_maybe_dead(c);
        return;
    }
    if (res <= 0) {
        conn_recv_error(c, res);
        return;
    }
    sl_loop_enqueue(c->loop, c);
}

/* --- delivery -------------------------------------------------------------- */

static void conn_deliver(sl_conn_t *c)
{
    sl_loop_t *loop = c->loop;
    c->state = SL_CONN_HANDLER;
    loop->stats.frames++;
    loop->cfg.cb.on_frame(loop->cfg.ctx, c, c->frame, c->frame_size);
}

/* A header waiting for the frame budget: false while it still waits (the
 * loop queues the connection again when its bytes are granted). */
static bool conn_wait_budget(sl_conn_t *c)
{
    if (c->loop->stopping) {
        sl_conn_close(c); /* a partly read frame is abandoned, as in conn_read_more */
        return false;
    }
    if (c->reserved == 0)
        return false;
    if (conn_alloc_frame(c) != 0) {
        sl_conn_close(c);
        return false;
    }
    if (c->state == SL_CONN_BODY)
        c->frame_start_us = sl_clock_monotonic_us();
    return true;
}

bool sl_conn_step(sl_conn_t *c, uint32_t budget)
{
    /* Each pass delivers one frame or feeds the spill up to the end of the
     * next frame, so 2 * budget + 2 passes cover a whole budget. */
    const uint32_t passes = 2 * budget + 2;
    for (uint32_t pass = 0; pass < passes; pass++) {
        if (c->closing)
            return false;
        switch (c->state) {
        case SL_CONN_READY:
            if (budget == 0)
                return true;
            budget--;
            conn_deliver(c);
            break;
        case SL_CONN_HANDLER:
        case SL_CONN_SENDING:
            return false; /* lockstep: wait for the answer */
        case SL_CONN_WAIT:
            if (!conn_wait_budget(c))
                return false;
            break;
        case SL_CONN_HEAD:
        case SL_CONN_BODY:
            if (c->spill) {
                conn_feed_spill(c);
                break;
            }
            /* With a receive armed the transport has no new input (its
             * bytes may be landing in the frame's tail: conn_xport_bulk). */
            if (c->xport && !c->recv_armed && conn_xport_pull(c))
                break;
            if (!c->closing)
                conn_read_more(c);
            return false;
        }
    }
    return true;
}

/* The handler is finished with the frame: read or deliver the next one. */
static void conn_next(sl_conn_t *c)
{
    conn_frame_release(c);
    c->state = SL_CONN_HEAD;
    sl_loop_enqueue(c->loop, c);
}

void sl_conn_done(sl_conn_t *c)
{
    if (c->state != SL_CONN_HANDLER) {
        sl_assert_debug(c->closing);
        return;
    }
    conn_next(c);
}

uint8_t *sl_conn_take_frame(sl_conn_t *c)
{
    if (c->state != SL_CONN_HANDLER)
        return NULL;
    uint8_t *frame = c->frame;
    c->frame = NULL;
    /* Its bytes are the new owner's to account for (a partition's journal). */
    sl_loop_budget_release(c->loop, c);
    return frame;
}

/* --- replies --------------------------------------------------------------- */

static void conn_arm_send(sl_conn_t *c)
{
    if (c->xport) {
        conn_xport_arm_send(c);
        return;
    }
    uint32_t cap = c->loop->cfg.faults.send_max;
    memset(&c->msg, 0, sizeof(c->msg));
    c->msg.msg_iov = c->iov + c->iov_idx;
    c->msg.msg_iovlen = c->iov_cnt - c->iov_idx;
    if (cap && c->iov[c->iov_idx].iov_len > cap) {
        c->iov_capped = (struct iovec){c->iov[c->iov_idx].iov_base, cap};
        c->msg.msg_iov = &c->iov_capped;
        c->msg.msg_iovlen = 1;
    } else if (cap) {
        c->msg.msg_iovlen = 1;
    }
    struct io_uring_sqe *sqe = sl_loop_sqe(c->loop);
    /* MSG_NOSIGNAL: a vanished peer is an error result, not a SIGPIPE.
     * MSG_WAITALL: the kernel retries short sends itself; short counts
     * that still come back are handled by conn_advance. */
    io_uring_prep_sendmsg(sqe, c->fd, &c->msg, MSG_NOSIGNAL | MSG_WAITALL);
    io_uring_sqe_set_data64(sqe, sl_ud(c, SL_UD_SEND));
    c->send_armed = true;
    c->inflight++;
}

/* Drops the written bytes from the front of the iovec array; returns true
 * when all of it is written. Bounded by the array's length. */
static bool conn_advance(sl_conn_t *c, size_t written)
{
    while (c->iov_idx < c->iov_cnt) {
        struct iovec *v = &c->iov[c->iov_idx];
        if (written < v->iov_len) {
            v->iov_base = (uint8_t *)v->iov_base + written;
            v->iov_len -= written;
            return false;
        }
        written -= v->iov_len;
        c->iov_idx++;
    }
    return true;
}

static void conn_send_finished(sl_conn_t *c)
{
    sl_loop_t *loop = c->loop;
    conn_iov_release(c);
    c->reply_start_us = 0;
    if (loop->cfg.cb.on_sent)
        loop->cfg.cb.on_sent(loop->cfg.ctx, c);
    if (c->closing) {
        /* on_sent closed it (a final frame followed the reply). */
        conn_frame_release(c);
        return;
    }
    if (c->close_after_send) {
        conn_frame_release(c);
        sl_conn_close(c);
        return;
    }
    conn_next(c);
}

void sl_conn_on_send(sl_conn_t *c, int res)
{
    sl_assert(c->inflight > 0 && c->send_armed);
    c->inflight--;
    c->send_armed = false;
    if (c->closing) {
        conn_maybe_dead(c);
        return;
    }
    if (res == -EINTR || res == -EAGAIN) {
        conn_arm_send(c);
        return;
    }
    if (res <= 0) {
        /* 0 bytes for a non-empty send means the socket is unusable. */
        sl_log_debug("conn %u (%s): send: %s", c->id, c->peer, res ? strerror(-res) : "0 bytes");
        sl_conn_close(c);
        return;
    }
    if (c->xport) {
        conn_xport_sent(c, (size_t)res);
        return;
    }
    if (conn_advance(c, (size_t)res))
        conn_send_finished(c);
    else
        conn_arm_send(c);
}

/* Copies the iovec array, leaving out empty runs; returns how many remain
 * or -ENOMEM. */
static int conn_copy_iov(sl_conn_t *c, const struct iovec *iov, int iovcnt)
{
    c->iov = c->iov_inline;
    if (iovcnt > SL_CONN_IOV_INLINE) {
        c->iov = malloc((size_t)iovcnt * sizeof(*iov));
        if (!c->iov)
            return -ENOMEM;
    }
    uint32_t n = 0;
    for (int i = 0; i < iovcnt; i++) {
        if (iov[i].iov_len > 0)
            c->iov[n++] = iov[i];
    }
    c->iov_cnt = n;
    c->iov_idx = 0;
    return (int)n;
}

static int conn_reply(sl_conn_t *c, const struct iovec *iov, int iovcnt, bool close_after)
{
    if (c->closing)
        return -ECONNRESET;
    if (c->state != SL_CONN_HANDLER || iovcnt < 1 || iovcnt > SL_LOOP_IOV_MAX || !iov)
        return -EINVAL;
    int n = conn_copy_iov(c, iov, iovcnt);
    if (n < 0) {
        sl_conn_close(c);
        return n;
    }
    c->close_after_send = close_after;
    c->state = SL_CONN_SENDING;
    c->reply_start_us = sl_clock_monotonic_us();
    if (n == 0) {
        conn_send_finished(c); /* nothing to write is written at once */
        return 0;
    }
    if (c->xport)
        conn_xport_flush(c);
    else
        conn_arm_send(c);
    return 0;
}

int sl_conn_reply(sl_conn_t *c, const struct iovec *iov, int iovcnt)
{
    return conn_reply(c, iov, iovcnt, false);
}

int sl_conn_reply_close(sl_conn_t *c, const struct iovec *iov, int iovcnt)
{
    return conn_reply(c, iov, iovcnt, true);
}

int sl_conn_send_final(sl_conn_t *c, const void *bytes, size_t len)
{
    if (c->closing)
        return -ECONNRESET;
    if (c->send_armed)
        return -EBUSY; /* a reply is being written: bytes would interleave */
    if (c->xport)
        return conn_xport_send_final(c, bytes, len);
    /* A small frame fits an idle socket's send buffer; a peer that does not
     * read loses it, and is closed either way. */
    ssize_t n = send(c->fd, bytes, len, MSG_DONTWAIT | MSG_NOSIGNAL);
    sl_conn_close(c);
    return n == (ssize_t)len ? 0 : -EAGAIN;
}

/* --- transports --------------------------------------------------------------- */

/* The transport refused: log why, send what it has to say (a TLS alert, a
 * WebSocket close) if the socket takes it now, and close. */
static void conn_xport_fail(sl_conn_t *c, int err)
{
    c->loop->stats.transport_errors++;
    if (err == -ECONNRESET)
        sl_log_debug("conn %u (%s): %s: the peer closed", c->id, c->peer, c->xport->name);
    else
        sl_log_info("conn %u (%s): closed: %s: %s", c->id, c->peer, c->xport->name,
                    c->xport->why(c->xstate));
    if (!c->send_armed && c->xout.len > 0)
        (void)!send(c->fd, c->xout.data, c->xout.len, MSG_DONTWAIT | MSG_NOSIGNAL);
    sl_conn_close(c);
}

static void conn_xport_input(sl_conn_t *c, const uint8_t *data, uint32_t n)
{
    int rc = c->xport->input(c->xstate, data, n);
    if (rc < 0)
        conn_xport_fail(c, rc);
}

/* Moves stream bytes the transport holds into the frame being assembled,
 * exactly as a receive would have: true when some arrived (the caller goes
 * round again), false when the transport needs more from the socket or the
 * connection closed. A header is taken at most up to its end, a body
 * straight into the frame, so nothing is ever spilled. */
static bool conn_xport_pull(sl_conn_t *c)
{
    uint8_t head[SL_HEADER_SIZE];
    int n;
    if (c->state == SL_CONN_HEAD) {
        n = c->xport->read(c->xstate, head, SL_HEADER_SIZE - c->hdr_have);
        if (n > 0 && conn_feed(c, head, (uint32_t)n) < 0) {
            sl_conn_close(c);
            return false;
        }
    } else {
        n = c->xport->read(c->xstate, c->frame + c->frame_have, c->frame_size - c->frame_have);
        if (n > 0) {
            c->frame_have += (uint32_t)n;
            if (c->frame_have == c->frame_size)
                conn_frame_complete(c);
        }
    }
    if (n < 0) {
        conn_xport_fail(c, n);
        return false;
    }
    conn_xport_flush(c); /* a handshake step or a control frame may want to answer */
    return n > 0 && !c->closing;
}

/* Encodes the next chunk of the reply into c->xout. Room for the chunk and
 * the transport's framing (TLS adds 22 bytes per 16 KiB record) is made
 * first, so the buffer is not grown step by step while it fills. */
static int conn_xport_encode(sl_conn_t *c)
{
    size_t budget = SL_LOOP_TRANSPORT_CHUNK;
    (void)sl_buf_reserve(&c->xout, budget + budget / 64 + 64); /* a failure shows in write */
    for (uint32_t i = c->iov_idx; i < c->iov_cnt && budget > 0; i++) {
        const struct iovec *v = &c->iov[c->iov_idx];
        size_t take = v->iov_len < budget ? v->iov_len : budget;
        int rc = c->xport->write(c->xstate, v->iov_base, take);
        if (rc < 0)
            return rc;
        budget -= take;
        conn_advance(c, take);
    }
    return 0;
}

static void conn_xport_arm_send(sl_conn_t *c)
{
    uint32_t cap = c->loop->cfg.faults.send_max;
    size_t len = c->xsend.len - c->xsent;
    if (cap && len > cap)
        len = cap;
    struct io_uring_sqe *sqe = sl_loop_sqe(c->loop);
    io_uring_prep_send(sqe, c->fd, c->xsend.data + c->xsent, len, MSG_NOSIGNAL | MSG_WAITALL);
    io_uring_sqe_set_data64(sqe, sl_ud(c, SL_UD_SEND));
    c->send_armed = true;
    c->inflight++;
}

/* Large buffers go back once empty and the reply is done (kept between
 * its chunks, so a large reply does not allocate and fault its buffers in
 * again for each): an idle connection keeps little. */
static void conn_xport_trim(sl_buf_t *b)
{
    sl_buf_reset(b);
    if (b->cap > SL_LOOP_BUF_SIZE_DEFAULT)
        sl_buf_free(b);
}

/* Sends what the transport produced and keeps the reply's next chunk
 * encoded ahead; finishes the reply once every byte of it is written. */
static void conn_xport_flush(sl_conn_t *c)
{
    if (c->closing)
        return;
    bool replying = c->state == SL_CONN_SENDING;
    if (replying && c->iov_idx < c->iov_cnt && c->xout.len < SL_LOOP_TRANSPORT_CHUNK) {
        int rc = conn_xport_encode(c);
        if (rc < 0) {
            conn_xport_fail(c, rc);
            return;
        }
    }
    if (!c->send_armed && c->xout.len > 0) {
        sl_buf_t t = c->xsend;
        c->xsend = c->xout;
        c->xout = t;
        sl_buf_reset(&c->xout);
        c->xsent = 0;
        conn_xport_arm_send(c);
        if (replying && c->iov_idx < c->iov_cnt)
            conn_xport_flush(c); /* once: xout is empty and the send armed */
        return;
    }
    if (!c->send_armed && replying && c->iov_idx == c->iov_cnt) {
        conn_xport_trim(&c->xout);
        conn_xport_trim(&c->xsend);
        conn_send_finished(c);
    }
}

static void conn_xport_sent(sl_conn_t *c, size_t n)
{
    c->xsent += n;
    if (c->xsent < c->xsend.len) {
        conn_xport_arm_send(c);
        return;
    }
    if (c->state == SL_CONN_SENDING)
        sl_buf_reset(&c->xsend); /* the next chunk goes in it: trimmed at the reply's end */
    else
        conn_xport_trim(&c->xsend);
    c->xsent = 0;
    conn_xport_flush(c);
}

static int conn_xport_send_final(sl_conn_t *c, const void *bytes, size_t len)
{
    int rc = c->xport->write(c->xstate, bytes, len);
    ssize_t n = rc == 0 ? send(c->fd, c->xout.data, c->xout.len, MSG_DONTWAIT | MSG_NOSIGNAL) : -1;
    bool whole = n == (ssize_t)c->xout.len;
    sl_conn_close(c);
    return whole ? 0 : -EAGAIN;
}

void sl_conn_check_handshake(sl_conn_t *c, uint64_t now, uint64_t handshake_us)
{
    if (c->closing || !c->xport || handshake_us == 0 || now - c->open_us <= handshake_us ||
        c->xport->established(c->xstate))
        return;
    c->loop->stats.handshake_timeouts++;
    sl_log_info("conn %u (%s): closed: no %s handshake within %llu ms", c->id, c->peer,
                c->xport->name, (unsigned long long)(handshake_us / 1000u));
    sl_conn_close(c);
}

/* --- timeouts --------------------------------------------------------------- */

void sl_conn_check_timeouts(sl_conn_t *c, uint64_t now, uint64_t frame_us, uint64_t reply_us)
{
    if (c->closing)
        return;
    /* A frame being assembled: its first byte arrived, its last has not. A
     * starved receive is waiting for the server's buffers, not the client. */
    bool reading = (c->state == SL_CONN_HEAD || c->state == SL_CONN_BODY) && !c->starved;
    if (frame_us && reading && c->frame_start_us && now - c->frame_start_us > frame_us) {
        c->loop->stats.frame_timeouts++;
        sl_log_info("conn %u (%s): closed: a frame was still incomplete %llu ms after its first "
                    "byte (%u of %u bytes)",
                    c->id, c->peer, (unsigned long long)(frame_us / 1000u),
                    c->state == SL_CONN_HEAD ? c->hdr_have : c->frame_have,
                    c->state == SL_CONN_HEAD ? SL_HEADER_SIZE : c->frame_size);
        sl_conn_close(c);
        return;
    }
    bool sending = c->state == SL_CONN_SENDING && c->send_armed;
    if (reply_us && sending && c->reply_start_us && now - c->reply_start_us > reply_us) {
        c->loop->stats.reply_timeouts++;
        sl_log_info("conn %u (%s): closed: its reply was not read within %llu ms", c->id, c->peer,
                    (unsigned long long)(reply_us / 1000u));
        sl_conn_close(c);
    }
}

/* --- accessors ------------------------------------------------------------- */

void sl_conn_set_frame_limit(sl_conn_t *c, uint32_t bytes)
{
    uint32_t max = c->loop->cfg.max_frame;
    c->frame_limit = bytes < SL_HEADER_SIZE ? SL_HEADER_SIZE : bytes > max ? max : bytes;
}

uint32_t sl_conn_frame_limit(const sl_conn_t *c)
{
    return c->frame_limit;
}

bool sl_conn_replying(const sl_conn_t *c)
{
    return c->state == SL_CONN_SENDING;
}

void *sl_conn_user(const sl_conn_t *c)
{
    return c->user;
}

void sl_conn_set_user(sl_conn_t *c, void *user)
{
    c->user = user;
}

const char *sl_conn_peer(const sl_conn_t *c)
{
    return c->peer;
}

uint32_t sl_conn_id(const sl_conn_t *c)
{
    return c->id;
}

sl_loop_t *sl_conn_loop(const sl_conn_t *c)
{
    return c->loop;
}

bool sl_conn_closing(const sl_conn_t *c)
{
    return c->closing;
}

uint8_t sl_conn_transport_code(const sl_conn_t *c)
{
    return c->xport ? c->xport->report_code : 0;
}
