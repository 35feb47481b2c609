/* The pure half of the client's framing: request headers with the numbering
 * and stamping rules of framing.md 3 and 5, and reply processing in the
 * decode order of framing.md 7.2. No I/O here, so the tests drive it with
 * crafted bytes. */
#include "client/client_internal.h"

#include <string.h>

/* --- requests --------------------------------------------------------------- */

bool sl_client_op_stamped(uint8_t operation)
{
    return operation == SL_OP_REGISTER || operation == SL_OP_LOGOUT ||
           operation == SL_OP_DELETE_SEGMENTS || sl_op_metadata(operation);
}

bool sl_client_op_advances(uint8_t operation)
{
    return operation != SL_OP_REGISTER && operation != SL_OP_NON_REPLICATED;
}

void sl_client_session_reset(sl_client_session_t *s)
{
    s->session = 0;
    s->request = 1;
    s->user_id = 0;
}

int sl_client_frame_finish(sl_buf_t *tx, sl_client_session_t *s, uint8_t operation, uint32_t code,
                           uint32_t frame_max)
{
    if (!sl_buf_ok(tx) || tx->len > frame_max)
        return -SL_ERR_COMMAND_LENGTH_ERROR;
    sl_assert(tx->len >= SL_HEADER_SIZE);
    sl_assert(!sl_u128_is_zero(s->client_id));
    sl_span_t body = sl_span(tx->data + SL_HEADER_SIZE, tx->len - SL_HEADER_SIZE);
    sl_request_header_t h = {
        .size = (uint32_t)tx->len,
        .client = s->client_id,
        .operation = operation,
        .code = operation == SL_OP_NON_REPLICATED ? code : 0,
    };
    if (sl_client_op_stamped(operation))
        h.request_checksum = sl_request_checksum(body);
    if (operation == SL_OP_REGISTER) {
        /* Register carries neither a session nor a number (framing.md 3). */
        h.session = 0;
        h.request = 0;
    } else {
        h.session = s->session;
        h.request = s->request;
        if (sl_client_op_advances(operation))
            s->request++;
    }
    sl_request_header_encode(tx->data, &h);
    return 0;
}

/* --- replies ----------------------------------------------------------------- */

int sl_client_frame_size(const uint8_t hdr[SL_HEADER_SIZE], uint32_t frame_max, uint32_t *size)
{
    uint32_t n = sl_header_size(hdr);
    if (n < SL_HEADER_SIZE || n > frame_max)
        return -SL_ERR_INVALID_COMMAND;
    uint8_t command = sl_header_command(hdr);
    if (command == SL_COMMAND_EVICTION) {
        /* An eviction is header-only; a size beyond 256 is a broken frame
         * (framing.md 8), and reading its "body" would desynchronise us. */
        if (n != SL_HEADER_SIZE)
            return -SL_ERR_INVALID_COMMAND;
    } else if (command != SL_COMMAND_REPLY) {
        return -SL_ERR_INVALID_COMMAND;
    }
    *size = n;
    return 0;
}

/* Codes are u32 on the wire; one that does not fit an int is not an IggyError. */
static int negated(uint32_t code)
{
    return code > INT32_MAX ? -SL_ERR_INVALID_COMMAND : -(int)code;
}

static int bad_frame(sl_client_reply_t *out)
{
    out->outcome = SL_CLIENT_REPLY_BAD_FRAME;
    return -SL_ERR_INVALID_COMMAND;
}

static int process_eviction(const uint8_t *hdr, sl_client_reply_t *out)
{
    if (sl_eviction_header_decode(hdr, &out->eviction) != 0)
        return bad_frame(out);
    out->outcome = SL_CLIENT_REPLY_EVICTED;
    return -sl_eviction_error(&out->eviction);
}

/* Step 4 comes before step 5: a status is reported even when the operation
 * byte is one the header decoder refuses. The header fields a raw caller
 * reads are then filled by offset. */
static int process_status(const uint8_t *hdr, sl_client_reply_t *out)
{
    if (out->body.len != 0)
        return bad_frame(out);
    if (sl_reply_header_decode(hdr, (uint32_t)out->frame.len, &out->header) != 0) {
        out->header.size = (uint32_t)out->frame.len;
        out->header.status = sl_load_u32(hdr + SL_REP_OFF_STATUS);
        out->header.operation = hdr[SL_REP_OFF_OPERATION];
        out->header.request = sl_load_u64(hdr + SL_REP_OFF_REQUEST);
    }
    out->outcome = SL_CLIENT_REPLY_STATUS;
    return negated(out->header.status);
}

/* Steps 6-7: the reply's own operation byte decides the framing. */
static int process_body(sl_client_reply_t *out)
{
    uint8_t op = out->header.operation;
    if (op == SL_OP_REGISTER && out->body.len == 0) {
        out->outcome = SL_CLIENT_REPLY_EMPTY_REGISTER;
        return -SL_ERR_EMPTY_RESPONSE;
    }
    out->framed = sl_op_result_framed(op) || op == SL_OP_REGISTER;
    if (!out->framed) {
        out->payload = out->body;
        out->outcome = SL_CLIENT_REPLY_OK;
        return 0;
    }
    if (sl_result_split(out->body, &out->result, &out->payload) != 0) {
        out->outcome = SL_CLIENT_REPLY_BAD_RESULT;
        return -SL_ERR_INVALID_COMMAND;
    }
    if (out->result != 0) {
        out->outcome = SL_CLIENT_REPLY_RESULT;
        return negated(out->result);
    }
    out->outcome = SL_CLIENT_REPLY_OK;
    return 0;
}

int sl_client_reply_process(sl_span_t frame, uint32_t frame_max, sl_client_reply_t *out)
{
    *out = (sl_client_reply_t){.outcome = SL_CLIENT_REPLY_BAD_FRAME, .frame = frame};
    if (frame.len < SL_HEADER_SIZE)
        return -SL_ERR_EMPTY_RESPONSE;
    const uint8_t *hdr = frame.ptr;
    uint32_t size;
    if (sl_client_frame_size(hdr, frame_max, &size) != 0 || size != frame.len)
        return bad_frame(out);
    if (sl_header_command(hdr) == SL_COMMAND_EVICTION)
        return process_eviction(hdr, out);
    out->body = sl_span(hdr + SL_HEADER_SIZE, frame.len - SL_HEADER_SIZE);
    if (sl_load_u32(hdr + SL_REP_OFF_STATUS) != 0)
        return process_status(hdr, out);
    /* Step 5: an undeclared operation (also 0) cannot be framed. */
    if (sl_reply_header_decode(hdr, frame_max, &out->header) != 0)
        return bad_frame(out);
    return process_body(out);
}
