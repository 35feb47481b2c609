/* Raw protocol sessions over a plain socket (raw.h). */
#include "raw.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "harness.h"
#include "wire/cmd_users.h"
#include "wire/codec.h"

void raw_open(raw_session_t *r, uint16_t port)
{
    memset(r, 0, sizeof(*r));
    r->fd = th_connect(port);
    r->client = raw_client_id();
}

void raw_close(raw_session_t *r)
{
    if (r->fd >= 0)
        close(r->fd);
    r->fd = -1;
}

sl_u128_t raw_client_id(void)
{
    sl_u128_t id = {0, 0};
    while (sl_u128_is_zero(id))
        if (getrandom(&id, sizeof(id), 0) != sizeof(id))
            abort();
    return id;
}

bool raw_send(raw_session_t *r, uint8_t operation, uint32_t code, uint64_t request,
              uint64_t session, sl_span_t body, bool stamp)
{
    sl_request_header_t h = {
        .size = (uint32_t)(SL_HEADER_SIZE + body.len),
        .client = r->client,
        .request_checksum = stamp ? sl_request_checksum(body) : (sl_u128_t){0, 0},
        .request = request,
        .operation = operation,
        .session = session,
        .code = code,
    };
    uint8_t hdr[SL_HEADER_SIZE];
    sl_request_header_encode(hdr, &h);
    return th_send_all(r->fd, hdr, sizeof(hdr)) &&
           (body.len == 0 || th_send_all(r->fd, body.ptr, body.len));
}

raw_reply_t raw_receive(raw_session_t *r, int timeout_ms)
{
    raw_reply_t out;
    memset(&out, 0, sizeof(out));
    r->frame_len = th_read_frame(r->fd, r->frame, sizeof(r->frame), timeout_ms);
    if (r->frame_len <= 0) {
        out.closed = true;
        return out;
    }
    if (r->frame[SL_HDR_OFF_COMMAND] == SL_COMMAND_EVICTION) {
        out.evicted = true;
        out.reason = r->frame[SL_EVI_OFF_REASON];
        return out;
    }
    if (sl_reply_header_decode(r->frame, 1u << 20, &out.header) != 0) {
        out.closed = true;
        return out;
    }
    out.status = out.header.status;
    out.body = sl_span(r->frame + SL_HEADER_SIZE, (size_t)r->frame_len - SL_HEADER_SIZE);
    out.payload = out.body;
    bool framed = sl_op_result_framed(out.header.operation) ||
                  (out.header.operation == SL_OP_REGISTER && out.body.len > 0);
    if (out.status == 0 && framed && sl_result_split(out.body, &out.result, &out.payload) != 0)
        out.result = UINT32_MAX; /* malformed result section */
    return out;
}

raw_reply_t raw_call(raw_session_t *r, uint8_t operation, uint32_t code, uint64_t request,
                     uint64_t session, sl_span_t body, bool stamp)
{
    if (!raw_send(r, operation, code, request, session, body, stamp)) {
        raw_reply_t out;
        memset(&out, 0, sizeof(out));
        out.closed = true;
        return out;
    }
    return raw_receive(r, 10000);
}

/* Sends a Register body and, on success, takes the session it grants. */
static raw_reply_t register_body(raw_session_t *r, const sl_buf_t *b)
{
    raw_reply_t rep = raw_call(r, SL_OP_REGISTER, 0, 0, 0, sl_buf_span(b), true);
    if (!rep.evicted && !rep.closed && rep.status == 0 && rep.result == 0) {
        sl_login_register_reply_t lr;
        if (sl_login_register_reply_decode(rep.payload, NULL, &lr) == 0) {
            r->session = lr.session;
            r->user_id = lr.user_id;
            r->request = 0;
        }
    }
    return rep;
}

raw_reply_t raw_login(raw_session_t *r, const char *user, const char *password)
{
    sl_buf_t b;
    sl_buf_init(&b, 0);
    sl_login_register_request_t q = {
        .version = {SL_PROTOCOL_VERSION, sl_span_str("sluice-tests"), sl_span_str("0.1.0")},
        .login = {sl_span_str(user), sl_span_str(password), sl_span(NULL, 0)},
    };
    if (sl_login_register_request_encode(&b, &q) != 0)
        abort();
    raw_reply_t rep = register_body(r, &b);
    sl_buf_free(&b);
    return rep;
}

raw_reply_t raw_login_token(raw_session_t *r, const char *token)
{
    sl_buf_t b;
    sl_buf_init(&b, 0);
    sl_login_register_with_pat_request_t q = {
        .version = {SL_PROTOCOL_VERSION, sl_span_str("sluice-tests"), sl_span_str("0.1.0")},
        .login = {sl_span_str(token), sl_span(NULL, 0)},
    };
    if (sl_login_register_with_pat_request_encode(&b, &q) != 0)
        abort();
    raw_reply_t rep = register_body(r, &b);
    sl_buf_free(&b);
    return rep;
}

raw_reply_t raw_meta(raw_session_t *r, uint8_t operation, sl_span_t body)
{
    r->request++;
    return raw_call(r, operation, 0, r->request, r->session, body, true);
}

raw_reply_t raw_read(raw_session_t *r, uint32_t code, sl_span_t body)
{
    return raw_call(r, SL_OP_NON_REPLICATED, code, r->request, r->session, body, false);
}
