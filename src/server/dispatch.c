/* The request gate of framing.md 9 and lifecycle.md 9: header verdicts, the
 * request checksum, session rules, then the plane handlers. */
#include <sluice/error.h>

#include "base/clock.h"
#include "base/log.h"
#include "server/internal.h"
#include "server/server.h"
#include "wire/command.h"

/* Header problems. The reference drops most of them silently, which leaves a
 * lockstep client waiting for its timeout; framing.md 9 allows answering
 * operation problems with Eviction 4 and framing problems by closing, which
 * both SDKs surface as errors. Sluice does that. */
static void bad_header(sl_session_t *s, const uint8_t *frame, sl_hdr_verdict_t v)
{
    sl_u128_t client = sl_load_u128(frame + SL_REQ_OFF_CLIENT);
    sl_log_debug("connection %u: bad request header: %s", s->id, sl_hdr_verdict_name(v));
    switch (v) {
    case SL_HDR_NOT_REQUEST: /* a valid header type that is not ours: ignored */
        sl_reply_drop(s);
        return;
    case SL_HDR_BAD_OPERATION:
    case SL_HDR_BAD_NUMBERING:
        if (!sl_u128_is_zero(client)) {
            sl_reply_evict(s, client, SL_EVICT_INVALID_REQUEST_OPERATION, false);
            return;
        }
        break;
    default:
        break;
    }
    /* Size, command byte, client 0: not a conversation we can answer. */
    sl_conn_close(s->conn);
}

static bool is_login_code(uint32_t code)
{
    return code == SL_CMD_LOGOUT_USER || code == SL_CMD_LOGIN_REGISTER ||
           code == SL_CMD_LOGIN_REGISTER_WITH_PAT;
}

/* Operation 2 (framing.md 9 step 6, commands.md 1.9). */
static void non_replicated(sl_session_t *s, const sl_request_header_t *req, sl_span_t body)
{
    if (req->code == SL_CMD_LOGIN_USER || req->code == SL_CMD_LOGIN_WITH_PERSONAL_ACCESS_TOKEN) {
        sl_reply_evict(s, req->client, SL_EVICT_MALFORMED_LOGIN, false);
        return;
    }
    if (s->internal && sl_internal_code(req->code)) {
        sl_internal_handle(s, req, body);
        return;
    }
    if (!s->bound && req->code != SL_CMD_PING) {
        sl_reply_status(s, req, SL_ERR_UNAUTHENTICATED);
        return;
    }
    const sl_command_t *cmd = sl_command_by_code(req->code);
    if (!cmd) {
        sl_reply_status(s, req, SL_ERR_INVALID_COMMAND);
        return;
    }
    if (is_login_code(req->code)) {
        sl_buf_reset(&s->reply_body);
        sl_reply_body(s, req, SL_OP_NON_REPLICATED);
        return;
    }
    if (cmd->plane != SL_PLANE_READ || req->code == SL_CMD_FLUSH_UNSAVED_BUFFER) {
        sl_reply_status(s, req, SL_ERR_FEATURE_UNAVAILABLE);
        return;
    }
    sl_reads_handle(s, req, body);
}

static void replicated(sl_session_t *s, const sl_request_header_t *req, const uint8_t *frame,
                       sl_span_t body)
{
    if (!s->bound) {
        sl_reply_evict(s, req->client, SL_EVICT_NO_SESSION, false);
        return;
    }
    /* The whole 64..127 band is server-internal: refused from clients, 68
     * included (framing.md 9 table). */
    if (sl_op_internal(req->operation)) {
        sl_reply_evict(s, req->client, SL_EVICT_INVALID_REQUEST_OPERATION, false);
        return;
    }
    if (sl_op_partition(req->operation)) {
        sl_messages_partition_op(s, req, frame, body);
        return;
    }
    sl_admit_metadata(s, req, body);
}

void sl_dispatch_frame(void *ctx, sl_conn_t *conn, const uint8_t *frame, uint32_t size)
{
    (void)ctx;
    sl_session_t *s = sl_conn_user(conn);
    s->metric_slot = sl_metrics_slot_other();
    s->metric_start_us = sl_clock_monotonic_us();
    s->server->metrics.bytes_in += size;
    sl_request_header_t req;
    sl_hdr_verdict_t v = sl_request_header_decode(frame, s->server->frame_max, &req);
    if (v != SL_HDR_OK) {
        bad_header(s, frame, v);
        return;
    }
    s->metric_slot = sl_metrics_slot(&s->server->metrics, req.operation, req.code);
    sl_otel_begin(s->server->otel, &s->span, s->metric_slot, req.code, size);
    sl_span_t body = sl_span(frame + SL_HEADER_SIZE, size - SL_HEADER_SIZE);
    if (!sl_request_checksum_ok(req.request_checksum, body)) {
        sl_reply_status(s, &req, SL_ERR_INVALID_FORMAT);
        return;
    }
    /* Sends staged for the turn's group commit are made durable and
     * answered before anything that could read or change their partition
     * (or the session's standing) runs. */
    if (req.operation != SL_OP_SEND_MESSAGES)
        sl_messages_commit_staged(s->server);
    /* A session whose user was deleted or deactivated meanwhile is over:
     * the request is then judged as one without a session (40, or
     * Eviction 1). */
    (void)sl_admit_user_current(s);
    s->last_seen_us = s->metric_start_us;
    sl_arena_reset(&s->arena);
    sl_buf_reset(&s->reply_body);

    switch (req.operation) {
    case SL_OP_NON_REPLICATED:
        non_replicated(s, &req, body);
        return;
    case SL_OP_REGISTER:
        sl_admit_register(s, &req, body);
        return;
    case SL_OP_LOGOUT:
        sl_admit_logout(s, &req);
        return;
    default:
        replicated(s, &req, frame, body);
        return;
    }
}
