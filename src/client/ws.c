/* The WebSocket transport of the client (websocket.md 6): the RFC 6455
 * upgrade on the raw stream (the socket, or TLS over it for WSS), then
 * every request one masked binary message and the replies read as a byte
 * stream whatever their message boundaries, as the Rust SDK reads them.
 * Framing and masking are wslay's (wslay_frame_*).
 *
 * Reading. The raw stream is read ahead into a buffer of
 * SL_CLIENT_WS_READ_AHEAD bytes (wslay asks for at most 4 KiB at a time),
 * payloads are unmasked by wslay and copied straight to the caller's
 * buffer; what does not fit waits in pend. Pings are answered at once
 * (lockstep: no request is being written while a reply is read); a Close
 * ends the connection. */
#include <errno.h>
#include <openssl/evp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <wslay/wslay.h>

#include "client/client_internal.h"

/* The upgrade answer's headers: a server's are a few hundred bytes. */
#define WS_ANSWER_MAX 8192u
/* Raw bytes read at once: a 1 MiB reply in 16 reads rather than 256. */
#define SL_CLIENT_WS_READ_AHEAD (64u * 1024u)
/* The largest WebSocket frame sent: the reference's servers refuse larger
 * ones by default (websocket.md 3), so a larger request goes fragmented. */
#define SL_CLIENT_WS_FRAME_MAX (16u * 1024u * 1024u)

struct sl_client_ws {
    sl_client_t *c;
    wslay_frame_context_ptr wf;
    uint8_t *raw; /* read ahead: raw_len bytes, from raw_off */
    size_t raw_off;
    size_t raw_len;
    short want;  /* what the raw stream waits for after a short read */
    int raw_err; /* -1 end of stream, -2 error, met inside a wslay callback */
    bool closed; /* the server sent Close */
    /* The frame being received. */
    bool frame_open;
    uint8_t op;
    uint64_t len;
    uint64_t off;
    uint8_t ctrl[125];
    uint8_t ctrl_len;
    /* Where decoded payload goes, and what did not fit. */
    uint8_t *dst;
    size_t dst_cap;
    size_t dst_have;
    sl_buf_t pend;
    size_t pend_off;
    sl_buf_t out; /* a message being framed and masked */
};

/* --- wslay's callbacks --------------------------------------------------------------- */

static ssize_t ws_send_cb(const uint8_t *data, size_t len, int flags, void *user)
{
    (void)flags;
    sl_client_ws_t *ws = user;
    sl_put_bytes(&ws->out, data, len);
    return sl_buf_ok(&ws->out) ? (ssize_t)len : -1;
}

static ssize_t ws_recv_cb(uint8_t *buf, size_t len, int flags, void *user)
{
    (void)flags;
    sl_client_ws_t *ws = user;
    if (ws->raw_off == ws->raw_len) {
        ssize_t r = sl_client_raw_read(ws->c, ws->raw, SL_CLIENT_WS_READ_AHEAD, &ws->want);
        if (r <= 0) {
            ws->raw_err = (int)r; /* 0: would block */
            return -1;            /* wslay reads it as "want read" */
        }
        ws->raw_off = 0;
        ws->raw_len = (size_t)r;
    }
    size_t take = ws->raw_len - ws->raw_off < len ? ws->raw_len - ws->raw_off : len;
    memcpy(buf, ws->raw + ws->raw_off, take);
    ws->raw_off += take;
    return (ssize_t)take;
}

static int ws_genmask_cb(uint8_t *buf, size_t len, void *user)
{
    sl_client_ws_t *ws = user;
    return sl_client_rng_bytes(&ws->c->rng, buf, len) == 0 ? 0 : -1;
}

/* --- the upgrade ------------------------------------------------------------------------ */

static void key_make(sl_client_t *c, char key[32], char expect[32])
{
    uint8_t nonce[16];
    uint8_t joined[64];
    uint8_t digest[EVP_MAX_MD_SIZE];
    unsigned digest_len = 0;
    static const char guid[] = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";
    if (sl_client_rng_bytes(&c->rng, nonce, sizeof(nonce)) != 0)
        memset(nonce, 0x5a, sizeof(nonce)); /* a nonce only needs to differ, not be secret */
    EVP_EncodeBlock((unsigned char *)key, nonce, sizeof(nonce));
    memcpy(joined, key, 24);
    memcpy(joined + 24, guid, sizeof(guid) - 1);
    expect[0] = '\0';
    if (EVP_Digest(joined, 24 + sizeof(guid) - 1, digest, &digest_len, EVP_sha1(), NULL) == 1)
        EVP_EncodeBlock((unsigned char *)expect, digest, 20);
}

/* The value of header name in the answer's header lines, or NULL. */
static const char *header_find(const char *head, const char *name, size_t *len)
{
    size_t nlen = strlen(name);
    for (const char *p = strstr(head, "\r\n"); p && p[2] != '\r'; p = strstr(p + 2, "\r\n")) {
        const char *line = p + 2;
        if (strncasecmp(line, name, nlen) != 0 || line[nlen] != ':')
            continue;
        const char *v = line + nlen + 1;
        while (*v == ' ' || *v == '\t')
            v++;
        const char *end = strstr(v, "\r\n");
        while (end > v && (end[-1] == ' ' || end[-1] == '\t'))
            end--;
        *len = (size_t)(end - v);
        return v;
    }
    return NULL;
}

static bool header_is(const char *head, const char *name, const char *value)
{
    size_t len = 0;
    const char *v = header_find(head, name, &len);
    return v && len == strlen(value) && strncasecmp(v, value, len) == 0;
}

/* Reads the answer's status line and headers into ws->raw; *head_len is
 * their length, the bytes after them stay for the frames. */
static int answer_read(sl_client_ws_t *ws, uint64_t deadline_us, size_t *head_len)
{
    for (;;) {
        ws->raw[ws->raw_len] = '\0';
        const char *end = strstr((const char *)ws->raw, "\r\n\r\n");
        if (end) {
            *head_len = (size_t)(end + 4 - (const char *)ws->raw);
            return 0;
        }
        if (ws->raw_len >= WS_ANSWER_MAX)
            return -SL_ERR_WEB_SOCKET_CONNECTION_ERROR;
        short events = 0;
        ssize_t r =
            sl_client_raw_read(ws->c, ws->raw + ws->raw_len, WS_ANSWER_MAX - ws->raw_len, &events);
        if (r < 0)
            return -SL_ERR_WEB_SOCKET_CONNECTION_ERROR;
        ws->raw_len += (size_t)r;
        int rc = r == 0 ? sl_client_wait_ready(ws->c->fd, events, deadline_us) : 0;
        if (rc != 0)
            return rc == -SL_ERR_TASK_TIMEOUT ? -SL_ERR_WEB_SOCKET_CONNECTION_ERROR : rc;
    }
}

static int upgrade(sl_client_ws_t *ws, const char *host, uint16_t port, uint64_t deadline_us)
{
    char key[32], expect[32], request[1400];
    key_make(ws->c, key, expect);
    bool v6 = strchr(host, ':') != NULL;
    int n = snprintf(request, sizeof(request),
                     "GET / HTTP/1.1\r\nHost: %s%s%s:%u\r\nUpgrade: websocket\r\n"
                     "Connection: Upgrade\r\nSec-WebSocket-Key: %s\r\n"
                     "Sec-WebSocket-Version: 13\r\n\r\n",
                     v6 ? "[" : "", host, v6 ? "]" : "", (unsigned)port, key);
    if (n <= 0 || (size_t)n >= sizeof(request))
        return -SL_ERR_INVALID_SERVER_ADDRESS;
    int rc = sl_client_raw_send(ws->c, (const uint8_t *)request, (size_t)n, deadline_us);
    size_t head_len = 0;
    if (rc == 0)
        rc = answer_read(ws, deadline_us, &head_len);
    if (rc != 0)
        return rc == -SL_ERR_TASK_TIMEOUT ? -SL_ERR_WEB_SOCKET_CONNECTION_ERROR : rc;
    const char *head = (const char *)ws->raw;
    ws->raw[head_len - 2] = '\0'; /* the header lines end at the blank line */
    bool ok = strncmp(head, "HTTP/1.1 101 ", 13) == 0 && header_is(head, "Upgrade", "websocket") &&
              header_is(head, "Connection", "Upgrade") && expect[0] &&
              header_is(head, "Sec-WebSocket-Accept", expect);
    ws->raw_off = head_len;
    return ok ? 0 : -SL_ERR_WEB_SOCKET_CONNECTION_ERROR;
}

int sl_client_ws_open(sl_client_t *c, const char *host, uint16_t port, uint64_t deadline_us)
{
    sl_client_ws_t *ws = calloc(1, sizeof(*ws));
    if (ws == NULL)
        return -SL_ERR_ERROR;
    ws->c = c;
    sl_buf_init(&ws->pend, 0);
    sl_buf_init(&ws->out, 0);
    c->link.ws = ws; /* freed by link_close, also on failure */
    /* One byte more than the answer may take, for the terminator. */
    ws->raw = malloc(SL_CLIENT_WS_READ_AHEAD > WS_ANSWER_MAX ? SL_CLIENT_WS_READ_AHEAD
                                                             : WS_ANSWER_MAX + 1);
    struct wslay_frame_callbacks cb = {ws_send_cb, ws_recv_cb, ws_genmask_cb};
    if (ws->raw == NULL || wslay_frame_context_init(&ws->wf, &cb, ws) != 0)
        return -SL_ERR_ERROR;
    return upgrade(ws, host, port, deadline_us);
}

void sl_client_ws_free(sl_client_ws_t *ws)
{
    if (ws == NULL)
        return;
    if (ws->wf)
        wslay_frame_context_free(ws->wf);
    free(ws->raw);
    sl_buf_free(&ws->pend);
    sl_buf_free(&ws->out);
    free(ws);
}

/* --- sending ------------------------------------------------------------------------------ */

/* Frames one message into ws->out: binary, then continuations. */
static int frame_message(sl_client_ws_t *ws, uint8_t opcode, const uint8_t *p, size_t n)
{
    size_t done = 0;
    /* One pass per WebSocket frame; a message of 0 bytes is one empty frame. */
    for (uint8_t op = opcode; done < n || (n == 0 && done == 0); op = WSLAY_CONTINUATION_FRAME) {
        size_t len = n - done < SL_CLIENT_WS_FRAME_MAX ? n - done : SL_CLIENT_WS_FRAME_MAX;
        struct wslay_frame_iocb io = {.fin = done + len == n,
                                      .opcode = op,
                                      .mask = 1,
                                      .payload_length = len,
                                      .data = p + done,
                                      .data_length = len};
        if (wslay_frame_send(ws->wf, &io) != (ssize_t)len)
            return -SL_ERR_ERROR;
        done += len;
        if (n == 0)
            break;
    }
    return 0;
}

/* Sends what is framed in ws->out and empties it. */
static int out_flush(sl_client_ws_t *ws, uint64_t deadline_us)
{
    int rc = sl_client_raw_send(ws->c, ws->out.data, ws->out.len, deadline_us);
    sl_buf_reset(&ws->out);
    if (ws->out.cap > SL_CLIENT_KEEP_BYTES)
        sl_buf_free(&ws->out);
    return rc;
}

int sl_client_ws_send(sl_client_t *c, const uint8_t *p, size_t n, uint64_t deadline_us)
{
    sl_client_ws_t *ws = c->link.ws;
    sl_buf_reset(&ws->out);
    if (!sl_buf_reserve(&ws->out, n + 14 * (n / SL_CLIENT_WS_FRAME_MAX + 1)))
        return -SL_ERR_ERROR;
    int rc = frame_message(ws, WSLAY_BINARY_FRAME, p, n);
    return rc != 0 ? rc : out_flush(ws, deadline_us);
}

/* --- receiving ---------------------------------------------------------------------------- */

static void deliver(sl_client_ws_t *ws, const uint8_t *data, size_t n)
{
    size_t room = ws->dst_cap - ws->dst_have;
    size_t take = n < room ? n : room;
    if (take > 0)
        memcpy(ws->dst + ws->dst_have, data, take);
    ws->dst_have += take;
    if (take < n)
        sl_put_bytes(&ws->pend, data + take, n - take);
}

/* A control frame is complete: answer a Ping, end at a Close. */
static int control(sl_client_ws_t *ws)
{
    if (ws->op == WSLAY_CONNECTION_CLOSE) {
        ws->closed = true;
        return -SL_ERR_CONNECTION_CLOSED;
    }
    if (ws->op != WSLAY_PING)
        return 0;
    sl_buf_reset(&ws->out);
    if (frame_message(ws, WSLAY_PONG, ws->ctrl, ws->ctrl_len) != 0)
        return -SL_ERR_ERROR;
    /* A pong is a few bytes: the socket's buffer takes it at once. */
    return out_flush(ws, sl_client_deadline(ws->c->request_timeout_ms));
}

/* One step of wslay's reader: 1 when something was decoded, 0 when the raw
 * stream would block (ws->want says for what), or the negated error. */
static int step(sl_client_ws_t *ws)
{
    if (ws->closed)
        return -SL_ERR_CONNECTION_CLOSED;
    struct wslay_frame_iocb io;
    memset(&io, 0, sizeof(io));
    ws->raw_err = 0;
    ssize_t r = wslay_frame_recv(ws->wf, &io);
    if (r == WSLAY_ERR_WANT_READ)
        return ws->raw_err == 0    ? 0
               : ws->raw_err == -1 ? -SL_ERR_CONNECTION_CLOSED
                                   : -SL_ERR_DISCONNECTED;
    /* A malformed frame, or a masked one: servers never mask. */
    if (r < 0 || io.mask || io.rsv)
        return -SL_ERR_WEB_SOCKET_RECEIVE_ERROR;
    if (!ws->frame_open) {
        ws->frame_open = true;
        ws->op = io.opcode;
        ws->len = io.payload_length;
        ws->off = 0;
        ws->ctrl_len = 0;
    }
    if (wslay_is_ctrl_frame(ws->op)) {
        if (io.data_length > 0)
            memcpy(ws->ctrl + ws->ctrl_len, io.data, io.data_length); /* <= 125 in all */
        ws->ctrl_len = (uint8_t)(ws->ctrl_len + io.data_length);
    } else {
        deliver(ws, io.data, io.data_length); /* binary or text: the Rust SDK takes both */
    }
    ws->off += io.data_length;
    if (ws->off < ws->len)
        return 1;
    ws->frame_open = false;
    int rc = wslay_is_ctrl_frame(ws->op) ? control(ws) : 0;
    return rc < 0 ? rc : 1;
}

static void pend_take(sl_client_ws_t *ws)
{
    size_t have = ws->pend.len - ws->pend_off;
    size_t take = have < ws->dst_cap - ws->dst_have ? have : ws->dst_cap - ws->dst_have;
    if (take == 0)
        return;
    memcpy(ws->dst + ws->dst_have, ws->pend.data + ws->pend_off, take);
    ws->dst_have += take;
    ws->pend_off += take;
    if (ws->pend_off == ws->pend.len) {
        sl_buf_reset(&ws->pend);
        ws->pend_off = 0;
    }
}

/* Decodes into p until n bytes are there or the stream would block: the
 * count so far in *have, and 0 or the negated error. */
static int pump(sl_client_ws_t *ws, uint8_t *p, size_t n, size_t *have)
{
    ws->dst = p;
    ws->dst_cap = n;
    ws->dst_have = *have;
    pend_take(ws);
    int rc = 1;
    /* Each step decodes input or returns 0: bounded by what was read. */
    while (ws->dst_have < n && rc == 1)
        rc = step(ws);
    *have = ws->dst_have;
    ws->dst = NULL;
    ws->dst_cap = ws->dst_have = 0;
    return rc < 0 ? rc : 0;
}

int sl_client_ws_recv(sl_client_t *c, uint8_t *p, size_t n, uint64_t deadline_us, size_t *got)
{
    sl_client_ws_t *ws = c->link.ws;
    size_t have = 0;
    int rc = 0;
    while (have < n && rc == 0) {
        ws->want = POLLIN;
        rc = pump(ws, p, n, &have);
        if (rc == 0 && have < n)
            rc = sl_client_wait_ready(c->fd, ws->want, deadline_us);
    }
    *got = have;
    return rc;
}

ssize_t sl_client_ws_read_some(sl_client_t *c, uint8_t *p, size_t n, short *events)
{
    sl_client_ws_t *ws = c->link.ws;
    size_t have = 0;
    ws->want = POLLIN;
    int rc = pump(ws, p, n, &have);
    *events = ws->want;
    if (have > 0)
        return (ssize_t)have;
    return rc == 0 ? 0 : -1;
}

int sl_client_ws_peek(sl_client_t *c, uint8_t *p, size_t n)
{
    sl_client_ws_t *ws = c->link.ws;
    /* Decode into pend alone (no destination), then copy without taking. */
    ws->dst = NULL;
    ws->dst_cap = ws->dst_have = 0;
    int rc = 1;
    while (ws->pend.len - ws->pend_off < n && rc == 1)
        rc = step(ws);
    size_t have = ws->pend.len - ws->pend_off;
    if (have == 0)
        return rc < 0 ? -1 : 0;
    size_t take = have < n ? have : n;
    memcpy(p, ws->pend.data + ws->pend_off, take);
    return (int)take;
}
