/* WebSocket sessions of the server (server/ws.h): the upgrade, then
 * wslay's frame layer with the rules of RFC 6455 and websocket.md 2 on
 * top, over the socket's bytes or a TLS session's plaintext.
 *
 * Receiving. Frame payloads are unmasked by wslay in its own 4 KiB buffer
 * and copied straight to where frame assembly wants them (dst); what does
 * not fit waits in pend (at most one of wslay's chunks), so nothing is
 * decoded ahead of what the connection asked for beyond that. A message
 * must be exactly one binary-protocol frame: its size field is read from
 * its first 52 bytes, a byte past that size fails the connection before
 * it is handed on, and the frame's last byte is held back until the
 * message's final WebSocket frame has ended, so a frame is never delivered
 * from a message that turns out to be malformed.
 *
 * Sending. Each binary-protocol frame of the reply stream becomes one
 * unfragmented binary message: its WebSocket header is written once the
 * frame's size field has been seen, then the bytes follow as they come. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wslay/wslay.h>

#include "server/loop.h"
#include "server/ws.h"
#include "wire/header.h"

/* Bytes of a binary-protocol frame up to and including its size field. */
#define WS_SIZE_END (SL_HDR_OFF_SIZE + 4u)
/* Frames decoded in one read at most: each consumes input, which is at most
 * a few receive buffers, so this is never reached by a real peer. */
#define WS_READ_PASSES (1u << 20)

struct sl_ws_session {
    const sl_ws_door_t *door;
    sl_buf_t *out;         /* the connection's output */
    sl_tls_session_t *tls; /* WSS; NULL for WS */
    sl_buf_t stage;        /* WSS: WebSocket bytes before they are encrypted */
    sl_buf_t in;           /* WS: socket bytes not yet decoded, from in_off */
    size_t in_off;
    sl_buf_t hs; /* the upgrade request; after it, its leftover from hs_off */
    size_t hs_off;
    bool upgraded;
    int failed;    /* the error every later read returns, 0 none */
    int lower_err; /* an error of the TLS layer met inside a wslay callback */
    wslay_frame_context_ptr wf;

    /* The WebSocket frame being received. */
    bool frame_open;
    uint8_t frame_op;
    bool frame_fin;
    uint64_t frame_len;
    uint64_t frame_off;
    uint8_t ctrl[125]; /* a control frame's payload */
    uint8_t ctrl_len;
    /* The message being received. */
    bool in_msg;
    uint64_t msg_have;
    uint32_t msg_size; /* its frame's size field, 0 until seen */
    uint8_t msg_head[WS_SIZE_END];
    bool holding; /* the frame's last byte waits for the message's end */
    uint8_t held;

    /* Where the current read puts the stream, and what did not fit. */
    uint8_t *dst;
    size_t dst_cap;
    size_t dst_have;
    sl_buf_t pend;
    size_t pend_off;

    /* The reply message being sent. */
    uint64_t out_size;
    uint64_t out_left;
    uint8_t out_head[WS_SIZE_END];
    uint32_t out_head_len;

    char error[160];
};

/* --- the layer below: the socket's bytes or TLS ------------------------------------- */

/* Moves up to n bytes of b, from *off, to dst; an emptied buffer starts
 * over (and gives its memory back when release). Returns the count. */
static size_t take_from(sl_buf_t *b, size_t *off, uint8_t *dst, size_t n, bool release)
{
    size_t have = b->len - *off;
    size_t take = have < n ? have : n;
    if (take == 0)
        return 0;
    memcpy(dst, b->data + *off, take);
    *off += take;
    if (*off == b->len) {
        if (release)
            sl_buf_free(b);
        else
            sl_buf_reset(b);
        *off = 0;
    }
    return take;
}

/* Up to n bytes of the raw stream: the count, 0 when none is here, -errno. */
static int lower_read(sl_ws_session_t *s, uint8_t *dst, size_t n)
{
    if (s->tls)
        return sl_tls_read(s->tls, dst, n);
    return (int)take_from(&s->in, &s->in_off, dst, n, false);
}

static void emit(sl_ws_session_t *s, const void *bytes, size_t n)
{
    sl_put_bytes(s->tls ? &s->stage : s->out, bytes, n);
}

/* WSS: encrypts what was staged. 0 or -errno. */
static int flush(sl_ws_session_t *s)
{
    if (!s->tls || s->stage.len == 0)
        return 0;
    int rc = sl_buf_ok(&s->stage) ? sl_tls_write(s->tls, s->stage.data, s->stage.len) : -ENOMEM;
    if (s->stage.cap > SL_LOOP_BUF_SIZE_DEFAULT)
        sl_buf_free(&s->stage); /* a large reply's staging is not kept while idle */
    else
        sl_buf_reset(&s->stage);
    return rc;
}

static ssize_t frame_recv(uint8_t *buf, size_t len, int flags, void *user)
{
    (void)flags;
    sl_ws_session_t *s = user;
    /* The upgrade request's leftover first: a client may send its first
     * frame right behind the request. */
    if (s->hs_off < s->hs.len)
        return (ssize_t)take_from(&s->hs, &s->hs_off, buf, len, true);
    int r = lower_read(s, buf, len);
    if (r < 0)
        s->lower_err = r;
    return r > 0 ? r : -1; /* wslay reads -1 (and 0) as "want read" */
}

static ssize_t frame_send(const uint8_t *data, size_t len, int flags, void *user)
{
    (void)flags;
    emit(user, data, len);
    return (ssize_t)len;
}

static int frame_genmask(uint8_t *buf, size_t len, void *user)
{
    (void)buf, (void)len, (void)user;
    return -1; /* a server never masks */
}

/* --- sessions ------------------------------------------------------------------------ */

int sl_ws_session_new(const sl_ws_door_t *door, sl_buf_t *out, sl_ws_session_t **out_s)
{
    *out_s = NULL;
    sl_ws_session_t *s = calloc(1, sizeof(*s));
    if (!s)
        return -ENOMEM;
    s->door = door;
    s->out = out;
    sl_buf_init(&s->stage, 0);
    sl_buf_init(&s->in, 0);
    sl_buf_init(&s->hs, SL_WS_HANDSHAKE_MAX);
    sl_buf_init(&s->pend, 0);
    struct wslay_frame_callbacks cb = {frame_send, frame_recv, frame_genmask};
    if (wslay_frame_context_init(&s->wf, &cb, s) != 0 ||
        (door->tls && sl_tls_session_new(door->tls, out, &s->tls) != 0)) {
        sl_ws_session_free(s);
        return -ENOMEM;
    }
    *out_s = s;
    return 0;
}

void sl_ws_session_free(sl_ws_session_t *s)
{
    if (!s)
        return;
    if (s->wf)
        wslay_frame_context_free(s->wf);
    sl_tls_session_free(s->tls);
    sl_buf_free(&s->stage);
    sl_buf_free(&s->in);
    sl_buf_free(&s->hs);
    sl_buf_free(&s->pend);
    free(s);
}

int sl_ws_input(sl_ws_session_t *s, const uint8_t *data, size_t n)
{
    if (s->tls)
        return sl_tls_input(s->tls, data, n);
    sl_put_bytes(&s->in, data, n);
    return sl_buf_ok(&s->in) ? 0 : -ENOMEM;
}

bool sl_ws_established(const sl_ws_session_t *s)
{
    return s->upgraded;
}

const char *sl_ws_last_error(const sl_ws_session_t *s)
{
    if (s->error[0])
        return s->error;
    return s->tls ? sl_tls_last_error(s->tls) : "unknown";
}

static int set_error(sl_ws_session_t *s, int rc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int set_error(sl_ws_session_t *s, int rc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->error, sizeof(s->error), fmt, ap);
    va_end(ap);
    s->failed = rc;
    return rc;
}

/* --- the upgrade ----------------------------------------------------------------------- */

/* 1 once upgraded, 0 while the request is incomplete, -errno. */
static int upgrade(sl_ws_session_t *s)
{
    if (!sl_buf_reserve(&s->hs, SL_WS_HANDSHAKE_MAX - s->hs.len))
        return set_error(s, -ENOMEM, "no memory for the upgrade request");
    /* Bounded by the request limit: each pass but the last adds bytes. */
    for (uint32_t pass = 0; pass <= SL_WS_HANDSHAKE_MAX; pass++) {
        size_t space = SL_WS_HANDSHAKE_MAX - s->hs.len;
        int r = space ? lower_read(s, s->hs.data + s->hs.len, space) : 0;
        if (r < 0)
            return s->failed = r;
        s->hs.len += (size_t)r;
        sl_ws_upgrade_t u;
        sl_ws_upgrade_verdict_t v = sl_ws_upgrade_parse(s->hs.data, s->hs.len, &u);
        if (v == SL_WS_UPGRADE_MORE && r > 0)
            continue;
        if (v == SL_WS_UPGRADE_MORE)
            return 0;
        sl_ws_upgrade_answer(&u, s->tls ? &s->stage : s->out);
        int rc = flush(s);
        if (v != SL_WS_UPGRADE_OK)
            return set_error(s, -EPROTO, "upgrade refused with %d: %s", u.status, u.why);
        if (rc != 0)
            return s->failed = rc;
        s->hs_off = u.length;
        s->upgraded = true;
        return 1;
    }
    return set_error(s, -EPROTO, "the upgrade request never completes");
}

/* --- receiving ------------------------------------------------------------------------- */

/* A Close with code, then every read fails: the peer broke the protocol. */
static int fail(sl_ws_session_t *s, uint16_t code, const char *why)
{
    uint8_t payload[2] = {(uint8_t)(code >> 8), (uint8_t)code};
    struct wslay_frame_iocb io = {.fin = 1,
                                  .opcode = WSLAY_CONNECTION_CLOSE,
                                  .payload_length = 2,
                                  .data = payload,
                                  .data_length = 2};
    (void)wslay_frame_send(s->wf, &io);
    (void)flush(s);
    return set_error(s, -EPROTO, "%s (closed with %u)", why, code);
}

static void deliver(sl_ws_session_t *s, const uint8_t *data, size_t n)
{
    size_t room = s->dst_cap - s->dst_have;
    size_t take = n < room ? n : room;
    memcpy(s->dst + s->dst_have, data, take);
    s->dst_have += take;
    if (take < n)
        sl_put_bytes(&s->pend, data + take, n - take);
}

static int message_bytes(sl_ws_session_t *s, const uint8_t *data, size_t n)
{
    if (n == 0)
        return 0;
    if (s->holding)
        return fail(s, 1002, "a message holds more than one frame");
    if (s->msg_size == 0) {
        size_t take = WS_SIZE_END - s->msg_have < n ? WS_SIZE_END - s->msg_have : n;
        memcpy(s->msg_head + s->msg_have, data, take);
        if (s->msg_have + take == WS_SIZE_END) {
            s->msg_size = sl_load_u32(s->msg_head + SL_HDR_OFF_SIZE);
            if (s->msg_size < SL_HEADER_SIZE)
                return fail(s, 1002, "a message's frame is shorter than its header");
            if (s->msg_size > s->door->message_max)
                return fail(s, 1009, "a message's frame is above the message limit");
        }
    }
    if (s->msg_size && s->msg_have + n > s->msg_size)
        return fail(s, 1002, "a message holds more than one frame");
    bool ends = s->msg_size && s->msg_have + n == s->msg_size;
    bool last = s->frame_fin && s->frame_off + n == s->frame_len;
    size_t give = n;
    if (ends && !last) {
        s->holding = true;
        s->held = data[n - 1];
        give = n - 1;
    }
    deliver(s, data, give);
    s->msg_have += n;
    return 0;
}

static int frame_begin(sl_ws_session_t *s, const struct wslay_frame_iocb *io)
{
    const sl_ws_door_t *d = s->door;
    if (io->rsv)
        return fail(s, 1002, "a frame with reserved bits set");
    if (!io->mask && !d->accept_unmasked)
        return fail(s, 1002, "an unmasked client frame");
    if (io->payload_length > d->frame_max)
        return fail(s, 1009, "a frame above websocket.max_frame_size");
    switch (io->opcode) {
    case WSLAY_CONTINUATION_FRAME:
        if (!s->in_msg)
            return fail(s, 1002, "a continuation frame outside a message");
        break;
    case WSLAY_TEXT_FRAME:
        return fail(s, 1003, "a text message (the protocol is binary)");
    case WSLAY_BINARY_FRAME:
        if (s->in_msg)
            return fail(s, 1002, "a new message inside a fragmented one");
        s->in_msg = true;
        s->msg_have = 0;
        s->msg_size = 0;
        break;
    case WSLAY_CONNECTION_CLOSE:
    case WSLAY_PING:
    case WSLAY_PONG:
        s->ctrl_len = 0; /* wslay checked: at most 125 bytes, never fragmented */
        break;
    default:
        return fail(s, 1002, "an unknown opcode");
    }
    if (!wslay_is_ctrl_frame(io->opcode) && s->msg_have + io->payload_length > d->message_max)
        return fail(s, 1009, "a message above websocket.max_message_size");
    s->frame_open = true;
    s->frame_op = io->opcode;
    s->frame_fin = io->fin;
    s->frame_len = io->payload_length;
    s->frame_off = 0;
    return 0;
}

static int control_end(sl_ws_session_t *s)
{
    struct wslay_frame_iocb io = {
        .fin = 1, .payload_length = s->ctrl_len, .data = s->ctrl, .data_length = s->ctrl_len};
    if (s->frame_op == WSLAY_PONG)
        return 0;
    if (s->frame_op == WSLAY_PING) {
        io.opcode = WSLAY_PONG; /* websocket.md 2: answered with its payload */
        (void)wslay_frame_send(s->wf, &io);
        return 0;
    }
    /* Close: answered with the peer's code, then the connection ends. */
    io.opcode = WSLAY_CONNECTION_CLOSE;
    io.payload_length = io.data_length = s->ctrl_len >= 2 ? 2 : 0;
    (void)wslay_frame_send(s->wf, &io);
    (void)flush(s);
    return set_error(s, -ECONNRESET, "the peer sent Close");
}

static int frame_end(sl_ws_session_t *s)
{
    s->frame_open = false;
    if (wslay_is_ctrl_frame(s->frame_op))
        return control_end(s);
    if (!s->frame_fin)
        return 0;
    if (s->msg_size == 0 || s->msg_have != s->msg_size)
        return fail(s, 1002, "a message is not exactly one frame");
    if (s->holding)
        deliver(s, &s->held, 1);
    s->holding = false;
    s->in_msg = false;
    return 0;
}

static int chunk(sl_ws_session_t *s, const struct wslay_frame_iocb *io)
{
    if (!s->frame_open) {
        int rc = frame_begin(s, io);
        if (rc)
            return rc;
    }
    size_t n = io->data_length;
    if (wslay_is_ctrl_frame(s->frame_op) && n > 0) {
        memcpy(s->ctrl + s->ctrl_len, io->data, n); /* <= 125 in all */
        s->ctrl_len = (uint8_t)(s->ctrl_len + n);
    } else if (!wslay_is_ctrl_frame(s->frame_op)) {
        int rc = message_bytes(s, io->data, n);
        if (rc)
            return rc;
    }
    s->frame_off += n;
    return s->frame_off == s->frame_len ? frame_end(s) : 0;
}

static void pend_serve(sl_ws_session_t *s)
{
    s->dst_have = take_from(&s->pend, &s->pend_off, s->dst, s->dst_cap, false);
}

int sl_ws_read(sl_ws_session_t *s, uint8_t *dst, size_t n)
{
    sl_assert(n > 0);
    if (s->failed)
        return s->failed;
    if (!s->upgraded) {
        int rc = upgrade(s);
        if (rc <= 0)
            return rc;
    }
    s->dst = dst;
    s->dst_cap = n;
    pend_serve(s);
    for (uint32_t pass = 0; s->dst_have < n; pass++) {
        if (pass == WS_READ_PASSES)
            return fail(s, 1008, "too many frames at once");
        struct wslay_frame_iocb io;
        memset(&io, 0, sizeof(io));
        ssize_t r = wslay_frame_recv(s->wf, &io);
        if (r == WSLAY_ERR_WANT_READ && s->lower_err)
            return s->failed = s->lower_err;
        if (r == WSLAY_ERR_WANT_READ)
            break;
        if (r < 0)
            return fail(s, 1002, "a malformed frame");
        int rc = chunk(s, &io);
        if (rc)
            return rc;
    }
    if (!sl_buf_ok(&s->pend) || !sl_buf_ok(s->out))
        return set_error(s, -ENOMEM, "no memory for the WebSocket stream");
    int rc = flush(s); /* pongs */
    if (rc)
        return s->failed = rc;
    return (int)s->dst_have;
}

/* --- sending ----------------------------------------------------------------------------- */

static int send_payload(sl_ws_session_t *s, const uint8_t *p, size_t n)
{
    struct wslay_frame_iocb io = {.fin = 1,
                                  .opcode = WSLAY_BINARY_FRAME,
                                  .payload_length = s->out_size,
                                  .data = p,
                                  .data_length = n};
    ssize_t r = wslay_frame_send(s->wf, &io);
    return r == (ssize_t)n ? 0 : -EPROTO;
}

int sl_ws_write(sl_ws_session_t *s, const uint8_t *src, size_t n)
{
    if (!s->upgraded)
        return -EPROTO;
    int rc = 0;
    /* Each pass consumes bytes: at most two per frame plus one. */
    while (n > 0 && rc == 0) {
        if (s->out_left > 0) {
            size_t take = n < s->out_left ? n : (size_t)s->out_left;
            rc = send_payload(s, src, take);
            s->out_left -= take;
            src += take;
            n -= take;
            continue;
        }
        /* A new message: its length is the frame's size field. */
        size_t take = WS_SIZE_END - s->out_head_len;
        take = take < n ? take : n;
        memcpy(s->out_head + s->out_head_len, src, take);
        s->out_head_len += (uint32_t)take;
        src += take;
        n -= take;
        if (s->out_head_len < WS_SIZE_END)
            break;
        uint32_t size = sl_load_u32(s->out_head + SL_HDR_OFF_SIZE);
        if (size < SL_HEADER_SIZE)
            return set_error(s, -EPROTO, "a reply frame shorter than its header");
        s->out_size = size;
        s->out_left = size - WS_SIZE_END;
        s->out_head_len = 0;
        rc = send_payload(s, s->out_head, WS_SIZE_END);
    }
    if (rc == 0 && !sl_buf_ok(s->tls ? &s->stage : s->out))
        rc = -ENOMEM;
    return rc ? rc : flush(s);
}

/* --- the doors' transports ---------------------------------------------------------------- */

static int ws_open(void *ctx, sl_buf_t *out, void **state)
{
    return sl_ws_session_new(ctx, out, (sl_ws_session_t **)state);
}

static void ws_close(void *state)
{
    sl_ws_session_free(state);
}

static int ws_input(void *state, const uint8_t *data, uint32_t n)
{
    return sl_ws_input(state, data, n);
}

static int ws_read(void *state, uint8_t *dst, uint32_t n)
{
    return sl_ws_read(state, dst, n);
}

static int ws_write(void *state, const uint8_t *src, size_t n)
{
    return sl_ws_write(state, src, n);
}

static bool ws_established(const void *state)
{
    return sl_ws_established(state);
}

static const char *ws_why(const void *state)
{
    return sl_ws_last_error(state);
}

/* wslay's input buffer (struct wslay_frame_context's ibuf). */
#define WS_WSLAY_BUFFER 4096u

/* Every stream byte costs at least one byte of a WebSocket frame; held now
 * are the decoded bytes waiting, the upgrade's leftover, the undecoded
 * input (WS) and what wslay has taken in. Under WSS, TLS then says what
 * those frame bytes cost in ciphertext. */
static uint32_t ws_need(void *state, uint32_t stream_bytes)
{
    sl_ws_session_t *s = state;
    if (!s->upgraded || s->failed)
        return 0;
    size_t held = (s->pend.len - s->pend_off) + (s->hs.len - s->hs_off) + (s->in.len - s->in_off) +
                  WS_WSLAY_BUFFER + (s->holding ? 1u : 0u);
    size_t raw = stream_bytes > held ? stream_bytes - held : 0;
    if (raw == 0)
        return 0;
    return (uint32_t)(s->tls ? sl_tls_need(s->tls, raw) : raw);
}

/* WS and WSS differ only in the name the log shows (door->tls decides);
 * both are listed as WebSocket (defaults.md 1). */
// clang-format off
#define WS_TRANSPORT(label)                                                                        \
    {.name = label, .report_code = 4, .open = ws_open, .close = ws_close, .input = ws_input,       \
     .read = ws_read, .write = ws_write, .established = ws_established, .why = ws_why,        \
     .need = ws_need}
// clang-format on

const sl_conn_transport_t sl_ws_transport = WS_TRANSPORT("ws");
const sl_conn_transport_t sl_wss_transport = WS_TRANSPORT("wss");
