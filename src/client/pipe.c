/* Pipelined requests: submit writes a request and lists it in flight,
 * collect reads the reply of the oldest one. The server answers the
 * requests of one connection in order (sluiced delivers a connection's next
 * frame only after the previous reply is written), so replies are matched
 * to entries by position, and the echoed request number is checked too.
 *
 * The list is a ring of SL_CLIENT_IN_FLIGHT_MAX entries. An entry stays
 * until collected, also when the connection is lost with it in flight: it
 * is then cut (its collect returns the error at once), so every submitted
 * request has exactly one outcome, reported in submit order. */
#include "client/client_internal.h"

#include <string.h>

#include "base/clock.h"
#include "wire/command.h"

bool sl_client_pipe_busy(const sl_client_t *c)
{
    return c->pipe.live > 0;
}

static sl_client_flight_t *flight_at(sl_client_t *c, uint32_t i)
{
    return &c->pipe.flights[(c->pipe.head + i) % SL_CLIENT_IN_FLIGHT_MAX];
}

/* The connection is gone: every request still waiting for a reply gets
 * rc when collected (their outcome is unknown). */
static void pipe_cut(sl_client_t *c, int rc)
{
    for (uint32_t i = 0; i < c->pipe.count; i++) {
        sl_client_flight_t *f = flight_at(c, i);
        if (f->cut == 0)
            f->cut = rc;
    }
    c->pipe.live = 0;
    c->pipe.holding = false; /* never written: nothing of it was stored */
}

/* What a submit checks before it writes anything. */
static int submit_allowed(const sl_client_t *c, uint8_t operation)
{
    const sl_client_pipe_t *p = &c->pipe;
    if (p->count >= SL_CLIENT_IN_FLIGHT_MAX)
        return -SL_ERR_INVALID_COMMAND;
    /* One kind at a time: a large send behind a large poll reply could
     * leave both ends blocked writing (sluiced reads a connection's next
     * request only after its reply is written). */
    if (p->count > 0 && p->flights[p->head].operation != operation)
        return -SL_ERR_INVALID_COMMAND;
    /* One send waits behind the one on the wire, no more. */
    if (p->holding)
        return -SL_ERR_INVALID_COMMAND;
    return 0;
}

/* Whether this request waits for the reply before it (sends only: a poll
 * request is small, and its reply is read by the client's own calls). */
static bool must_hold(const sl_client_t *c, uint8_t operation)
{
    return operation == SL_OP_SEND_MESSAGES && c->pipe.live > 0;
}

/* Writes a request; a failure closes the connection and cuts every
 * request before it (none of their replies can come now). */
static int pipe_write(sl_client_t *c, const sl_buf_t *request)
{
    int rc = sl_client_link_send(c, request->data, request->len,
                                 sl_client_deadline(c->request_timeout_ms));
    if (rc != 0) {
        sl_client_disconnect(c);
        pipe_cut(c, -SL_ERR_DISCONNECTED);
        return rc;
    }
    c->care.last_send_us = sl_clock_monotonic_us();
    return 0;
}

int sl_client_pipe_submit(sl_client_t *c, uint8_t operation, uint32_t code, uint32_t messages,
                          bool care, uint64_t *ticket)
{
    *ticket = 0;
    int rc = submit_allowed(c, operation);
    if (rc == 0 && care && c->pipe.live == 0)
        rc = sl_client_care_prepare(c, operation);
    if (rc != 0)
        return rc;
    if (c->fd < 0)
        return -SL_ERR_NOT_CONNECTED;
    if (sl_client_needs_session(operation) && c->session.session == 0)
        return -SL_ERR_UNAUTHENTICATED;
    size_t body_len = c->tx.len - SL_HEADER_SIZE;
    if (operation == SL_OP_NON_REPLICATED && body_len > SL_CLIENT_POLL_BODY_MAX)
        return -SL_ERR_INVALID_COMMAND;    /* the encoder's bounds make this impossible */
    uint64_t request = c->session.request; /* the number frame_finish gives it */
    rc = sl_client_frame_finish(&c->tx, &c->session, operation, code, c->frame_max);
    if (rc != 0)
        return rc;
    bool hold = must_hold(c, operation);
    if (hold) {
        /* tx is free again for the caller's next batch. */
        sl_buf_t swap = c->pipe.held;
        c->pipe.held = c->tx;
        c->tx = swap;
        c->pipe.holding = true;
    } else {
        rc = pipe_write(c, &c->tx);
        if (rc != 0)
            return rc;
    }
    sl_client_flight_t *f = flight_at(c, c->pipe.count);
    f->ticket = ++c->pipe.tickets;
    f->operation = operation;
    f->request = request;
    f->messages = messages;
    f->cut = 0;
    f->body_len = 0;
    if (operation == SL_OP_NON_REPLICATED) {
        f->body_len = (uint32_t)body_len;
        memcpy(f->body, c->tx.data + SL_HEADER_SIZE, body_len);
    }
    c->pipe.count++;
    c->pipe.live++;
    *ticket = f->ticket;
    return 0;
}

/* Takes the oldest entry off the ring into *out. */
static void pipe_pop(sl_client_t *c, sl_client_flight_t *out)
{
    sl_client_flight_t *f = flight_at(c, 0);
    memcpy(out, f, offsetof(sl_client_flight_t, body) + f->body_len);
    c->pipe.head = (c->pipe.head + 1) % SL_CLIENT_IN_FLIGHT_MAX;
    c->pipe.count--;
    if (out->cut == 0)
        c->pipe.live--;
}

/* The reply before the held send is in: the send is written now, before
 * that reply is decoded, so the server can read it at once. A failure is
 * the held send's outcome (the cut), not the collect's. */
static void write_held(sl_client_t *c)
{
    c->pipe.holding = false;
    int rc = pipe_write(c, &c->pipe.held);
    (void)rc;
    if (c->pipe.held.cap > SL_CLIENT_KEEP_BYTES) {
        sl_buf_free(&c->pipe.held);
        sl_buf_init(&c->pipe.held, c->frame_max);
    }
}

/* Reads and processes the oldest live entry's reply. */
static int read_reply(sl_client_t *c, sl_client_reply_t *reply)
{
    sl_span_t frame;
    int rc = sl_client_read_frame(c, sl_client_deadline(c->request_timeout_ms), &frame);
    if (rc != 0) {
        sl_client_disconnect(c);
        pipe_cut(c, -SL_ERR_DISCONNECTED);
        return rc;
    }
    rc = sl_client_reply_process(frame, c->frame_max, reply);
    sl_client_reply_apply(c, reply);
    /* Behind an eviction the server may drop the requests that follow
     * (no session) or close the connection; behind a broken frame the
     * stream is lost. Either way no reply can be expected for them. */
    if (reply->outcome == SL_CLIENT_REPLY_EVICTED || reply->outcome == SL_CLIENT_REPLY_BAD_FRAME) {
        if (c->pipe.live > 0)
            sl_client_disconnect(c);
        pipe_cut(c, -SL_ERR_DISCONNECTED);
    }
    return rc;
}

int sl_client_pipe_collect(sl_client_t *c, uint8_t operation, sl_client_flight_t *flight,
                           sl_client_reply_t *reply)
{
    *reply = (sl_client_reply_t){.outcome = SL_CLIENT_REPLY_BAD_FRAME};
    flight->ticket = 0;
    flight->body_len = 0;
    if (c->pipe.count == 0 || flight_at(c, 0)->operation != operation)
        return -SL_ERR_INVALID_COMMAND;
    sl_client_results_release(c); /* the previous call's results end here */
    pipe_pop(c, flight);
    if (flight->cut != 0)
        return flight->cut;
    int rc = read_reply(c, reply);
    if (reply->outcome == SL_CLIENT_REPLY_OK && reply->header.request != 0 &&
        reply->header.request != flight->request) {
        /* The reply echoes another request's number (framing.md 7): the
         * stream is out of step with the list, so nothing on it can be
         * matched any more. */
        sl_client_disconnect(c);
        pipe_cut(c, -SL_ERR_DISCONNECTED);
        return -SL_ERR_INVALID_COMMAND;
    }
    if (c->pipe.holding && c->pipe.live == 1)
        write_held(c);
    return rc;
}

uint32_t sl_client_in_flight(const sl_client_t *c)
{
    return c->pipe.count;
}
