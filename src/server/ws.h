/* The WebSocket door (websocket.md): the HTTP upgrade, then the binary
 * protocol carried in WebSocket binary messages, one frame per message,
 * over the socket (WS) or over TLS (WSS). Framing is wslay's
 * (wslay_frame_*); the rules of RFC 6455 and websocket.md 2 on top of it
 * (masks, opcodes, fragments, control frames, sizes) are here.
 *
 * A session does no socket I/O, like a TLS session (tls.h): bytes from the
 * socket go in with sl_ws_input, sl_ws_read hands out the frame stream,
 * sl_ws_write frames the reply stream, and whatever the session has to send
 * (the 101 answer, pongs, a close, reply messages; for WSS their TLS
 * records) is appended to the sl_buf_t given at sl_ws_session_new.
 *
 * Threads: a door's settings may be shared by the sessions of one thread; a
 * session belongs to one thread. */
#ifndef SL_SERVER_WS_H
#define SL_SERVER_WS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/assert.h"
#include "base/bytes.h"
#include "server/tls.h"

/* The largest upgrade request, request line and headers (a browser's is
 * under 2 KiB); more is answered 431 and the connection closed. */
#define SL_WS_HANDSHAKE_MAX 8192u
/* Header lines one upgrade request may have. */
#define SL_WS_HANDSHAKE_LINES_MAX 64u
/* websocket.md 3: the reference's (tungstenite's) default largest frame. */
#define SL_WS_FRAME_MAX_DEFAULT (16u * 1024u * 1024u)

/* A door's settings (transport_ctx of sl_ws_transport / sl_wss_transport). */
typedef struct sl_ws_door {
    uint64_t message_max; /* largest message after reassembly */
    uint64_t frame_max;   /* largest single WebSocket frame */
    bool accept_unmasked; /* websocket.accept_unmasked_frames */
    sl_tls_ctx_t *tls;    /* WSS: the context; NULL for WS */
} sl_ws_door_t;

typedef struct sl_ws_session sl_ws_session_t;

/* A session of door whose output goes to out (borrowed: it must outlive the
 * session). 0 or -ENOMEM. */
int sl_ws_session_new(const sl_ws_door_t *door, sl_buf_t *out, sl_ws_session_t **s) SL_WUR;
void sl_ws_session_free(sl_ws_session_t *s);
/* Bytes from the socket, kept until sl_ws_read takes them. 0 or -ENOMEM. */
int sl_ws_input(sl_ws_session_t *s, const uint8_t *data, size_t n) SL_WUR;
/* Up to n (> 0) bytes of the frame stream into dst, driving the TLS
 * handshake and the upgrade first. The count, 0 when more input is needed,
 * -ECONNRESET when the peer closed (its Close is answered in out), -EPROTO
 * when the peer broke the protocol (an HTTP error or a WebSocket Close is
 * in out; sl_ws_last_error says why). */
int sl_ws_read(sl_ws_session_t *s, uint8_t *dst, size_t n) SL_WUR;
/* Frames n bytes of the reply stream into out: each binary-protocol frame
 * one unfragmented binary message. 0, or -EPROTO before the upgrade, on a
 * frame shorter than its header or a TLS failure, -ENOMEM. */
int sl_ws_write(sl_ws_session_t *s, const uint8_t *src, size_t n) SL_WUR;
/* The upgrade (and the TLS handshake under it) is done. */
bool sl_ws_established(const sl_ws_session_t *s);
const char *sl_ws_last_error(const sl_ws_session_t *s);

/* --- the upgrade request (ws_handshake.c, pure) ----------------------------- */

typedef enum sl_ws_upgrade_verdict {
    SL_WS_UPGRADE_MORE = 0, /* no complete request yet */
    SL_WS_UPGRADE_OK,
    SL_WS_UPGRADE_BAD,
} sl_ws_upgrade_verdict_t;

typedef struct sl_ws_upgrade {
    size_t length;   /* OK: bytes of the request, its blank line included */
    char accept[32]; /* OK: Sec-WebSocket-Accept (28 characters) */
    int status;      /* BAD: the HTTP status to answer (400, 405, 426, 431, 505) */
    const char *why; /* BAD: for the log */
} sl_ws_upgrade_t;

/* Reads an RFC 6455 opening handshake from the first len bytes of a
 * connection. Strict: GET, HTTP/1.1, CRLF line ends, a Host, an Upgrade
 * naming websocket, a Connection naming Upgrade, Sec-WebSocket-Version 13
 * (426 otherwise) and a Sec-WebSocket-Key that is base64 of 16 bytes, each
 * header once; no body; at most SL_WS_HANDSHAKE_MAX bytes and
 * SL_WS_HANDSHAKE_LINES_MAX lines (431). Bytes that cannot start an HTTP
 * request are refused as soon as they arrive. Any request target is
 * accepted (websocket.md 1). */
sl_ws_upgrade_verdict_t sl_ws_upgrade_parse(const uint8_t *buf, size_t len, sl_ws_upgrade_t *out);
/* Sec-WebSocket-Accept of a key: base64(SHA-1(key + the RFC's GUID)). 0,
 * or -1 when OpenSSL fails. accept gets 28 characters and a NUL. */
int sl_ws_accept_of(const char *key, size_t key_len, char accept[32]) SL_WUR;
/* The answer to a request: 101 with the accept key, or the error status
 * with Connection: close (426 names version 13). Appended to out. */
void sl_ws_upgrade_answer(const sl_ws_upgrade_t *u, sl_buf_t *out);

/* The WebSocket door's transports (loop.h), WS and WSS (door->tls set);
 * transport_ctx is an sl_ws_door_t. Connections are listed with transport
 * 4 (WebSocket) either way. */
struct sl_conn_transport;
extern const struct sl_conn_transport sl_ws_transport;
extern const struct sl_conn_transport sl_wss_transport;

#endif
