/* Building reply and eviction frames (framing.md 7, 8). The header and body
 * of the reply live in the session until the loop reports them written. */
#include <errno.h>
#include <sluice/error.h>

#include "base/clock.h"
#include "base/log.h"
#include "server/server.h"
#include "wire/codec.h"

/* Fields every reply to req shares: echoes of the request (framing.md 7). */
static sl_reply_header_t reply_base(const sl_session_t *s, const sl_request_header_t *req)
{
    return (sl_reply_header_t){
        .request_checksum = req->request_checksum,
        .client = req->client,
        .op = s->bound ? s->epoch : 0,
        .commit = s->bound ? sl_meta_last_op(s->server->meta) : 0,
        .timestamp = req->timestamp,
        .request = req->request,
        .operation = req->operation,
    };
}

void sl_reply_account(sl_session_t *s, size_t frame_bytes, bool error)
{
    sl_metrics_t *m = &s->server->metrics;
    m->bytes_out += frame_bytes;
    sl_metrics_answered(m, s->metric_slot, sl_clock_monotonic_us() - s->metric_start_us, error);
    sl_otel_journaled(s->server->otel, &s->span);
    sl_otel_replied(&s->span, frame_bytes, 0, error,
                    frame_bytes ? SL_OTEL_REPLIED : SL_OTEL_DROPPED);
}

void sl_reply_span_end(sl_session_t *s)
{
    sl_otel_end(s->server->otel, &s->span, s->bound ? s->user_id : SL_OTEL_NONE, s->id,
                s->internal);
}

/* A refusal: a status, or a result section whose count is not 0. */
static bool reply_refused(const sl_reply_header_t *h, sl_span_t body)
{
    if (h->status != 0)
        return true;
    bool framed = sl_op_result_framed(h->operation) || h->operation == SL_OP_REGISTER;
    return framed && body.len >= 4 && sl_load_u32(body.ptr) != 0;
}

/* What a span reports as the request's status: the reply's status, else
 * the code of a refused result section. */
static uint32_t reply_code(const sl_reply_header_t *h, sl_span_t body)
{
    return h->status == 0 && reply_refused(h, body) ? sl_load_u32(body.ptr) : h->status;
}

static void send_frame(sl_session_t *s, const sl_reply_header_t *h, sl_span_t body, bool close)
{
    sl_reply_account(s, SL_HEADER_SIZE + body.len, reply_refused(h, body));
    sl_otel_status(&s->span, reply_code(h, body), SL_OTEL_REPLIED);
    sl_reply_header_t hdr = *h;
    hdr.size = (uint32_t)(SL_HEADER_SIZE + body.len);
    sl_reply_header_encode(s->reply_header, &hdr);
    struct iovec iov[2] = {{s->reply_header, SL_HEADER_SIZE}, {(void *)body.ptr, body.len}};
    int count = body.len ? 2 : 1;
    int rc = close ? sl_conn_reply_close(s->conn, iov, count) : sl_conn_reply(s->conn, iov, count);
    if (rc != 0 && rc != -ECONNRESET)
        sl_log_warn("connection %u: reply not sent: %d", s->id, rc);
}

void sl_reply_status(sl_session_t *s, const sl_request_header_t *req, uint32_t status)
{
    sl_reply_header_t h = reply_base(s, req);
    h.status = status;
    send_frame(s, &h, sl_span(NULL, 0), false);
}

void sl_reply_body(sl_session_t *s, const sl_request_header_t *req, uint8_t operation)
{
    sl_reply_header_t h = reply_base(s, req);
    h.operation = operation;
    send_frame(s, &h, sl_buf_span(&s->reply_body), false);
}

void sl_reply_committed(sl_session_t *s, const sl_request_header_t *req, uint8_t operation,
                        uint64_t op, uint64_t timestamp, sl_span_t body)
{
    sl_reply_header_t h = reply_base(s, req);
    h.client = s->bound ? s->client : req->client;
    h.operation = operation;
    h.op = op;
    h.commit = op;
    h.timestamp = timestamp;
    send_frame(s, &h, body, false);
}

void sl_reply_frame(sl_session_t *s, const sl_reply_header_t *h, sl_span_t body)
{
    send_frame(s, h, body, false);
}

void sl_reply_result(sl_session_t *s, const sl_request_header_t *req, uint8_t operation,
                     uint32_t code)
{
    sl_buf_reset(&s->reply_body);
    sl_result_put_error(&s->reply_body, code);
    sl_reply_body(s, req, operation);
}

void sl_reply_evict(sl_session_t *s, sl_u128_t client, uint8_t reason, bool close)
{
    sl_eviction_header_t e = {.client = client, .reason = reason};
    if (reason == SL_EVICT_INCOMPATIBLE_PROTOCOL) {
        e.version_max = SL_PROTOCOL_VERSION;
        e.version_min = SL_PROTOCOL_VERSION_MIN;
    }
    sl_eviction_header_encode(s->reply_header, &e);
    sl_reply_account(s, SL_HEADER_SIZE, true);
    sl_otel_status(&s->span, reason, SL_OTEL_EVICTED);
    struct iovec iov = {s->reply_header, SL_HEADER_SIZE};
    int rc = close ? sl_conn_reply_close(s->conn, &iov, 1) : sl_conn_reply(s->conn, &iov, 1);
    if (rc != 0 && rc != -ECONNRESET)
        sl_log_warn("connection %u: eviction not sent: %d", s->id, rc);
    sl_log_info("connection %u (%s): evicted, reason %u %s", s->id, sl_conn_peer(s->conn), reason,
                sl_evict_reason_name(reason));
}

void sl_reply_drop(sl_session_t *s)
{
    sl_reply_account(s, 0, true);
    sl_reply_span_end(s); /* nothing will be written */
    sl_conn_done(s->conn);
}
