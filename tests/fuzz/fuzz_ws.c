/* libFuzzer target: the WebSocket door's input side (server/ws.h). Input
 * [mode][schedule][bytes]. mode bit 0: accept unmasked frames; bit 1: small
 * limits (frame 300, message 1000 bytes) instead of 1 MiB; bit 2: bytes are
 * an upgrade request for sl_ws_upgrade_parse alone; bit 3: bytes follow a
 * valid upgrade request (else they bring their own). schedule picks the
 * sizes of the pieces the bytes arrive in and of the reads.
 *
 * What must hold: a read never hands out more than asked, nor more stream
 * bytes than came in; an error is sticky and -EPROTO leaves an answer (an
 * HTTP error or a Close) in the output; the same schedule gives the same
 * stream; and need, asked before every piece with the stream still to come,
 * never exceeds the bytes still to arrive (the loop waits for that many
 * with MSG_WAITALL, so an overstatement hangs a connection). */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/assert.h"
#include "base/bytes.h"
#include "server/loop.h"
#include "server/ws.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum { MODE_UNMASKED = 1, MODE_SMALL = 2, MODE_UPGRADE_ONLY = 4, MODE_PREFIX = 8 };

static const char upgrade_request[] = "GET / HTTP/1.1\r\n"
                                      "Host: localhost:8092\r\n"
                                      "Upgrade: websocket\r\n"
                                      "Connection: Upgrade\r\n"
                                      "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                                      "Sec-WebSocket-Version: 13\r\n"
                                      "\r\n";

/* The stream one schedule makes of the input; with check_need, need is
 * asked before each piece with what is still to come (total - have). */
typedef struct run {
    uint8_t *stream;
    size_t have;
    int rc; /* the last read's error, 0 none */
} run_t;

static size_t piece_size(uint32_t *x)
{
    *x = *x * 1103515245u + 12345u;
    uint32_t r = *x >> 16;
    return (r & 3) == 0 ? 1 + (r >> 2) % 7 : 1 + (r >> 2) % 3000;
}

/* One read of a schedule's size: false once it hands out nothing. */
static bool read_piece(sl_ws_session_t *s, run_t *run, size_t n, uint32_t *x)
{
    size_t want = piece_size(x), room = n + 1 - run->have;
    want = want < room ? want : room;
    int r = sl_ws_read(s, run->stream + run->have, want);
    sl_assert(r <= (int)want);
    if (r <= 0) {
        run->rc = r;
        return false;
    }
    run->have += (size_t)r;
    return true;
}

static void run_session(const sl_ws_door_t *door, const uint8_t *in, size_t n, uint8_t schedule,
                        run_t *run, size_t total)
{
    sl_buf_t out;
    sl_buf_init(&out, 0);
    sl_ws_session_t *s;
    sl_assert(sl_ws_session_new(door, &out, &s) == 0);
    uint32_t x = schedule;
    run->have = 0;
    run->rc = 0;
    for (size_t at = 0; at < n && run->rc == 0;) {
        if (total > run->have) {
            size_t rest = total - run->have;
            uint32_t need =
                sl_ws_transport.need(s, rest > UINT32_MAX ? UINT32_MAX : (uint32_t)rest);
            sl_assert(need <= n - at);
        }
        size_t k = piece_size(&x);
        k = k < n - at ? k : n - at;
        sl_assert(sl_ws_input(s, in + at, k) == 0);
        at += k;
        /* A few reads or none, as the loop does when a frame ends (what is
         * left waits in the session); all of it once the input is in. */
        size_t reads = at == n ? SIZE_MAX : piece_size(&x) % 4;
        for (size_t i = 0; i < reads; i++) { /* bounded: each pass hands out bytes or ends */
            if (!read_piece(s, run, n, &x))
                break;
        }
        sl_assert(run->have <= at);
    }
    if (run->rc < 0) {
        uint8_t b[1];
        sl_assert(sl_ws_read(s, b, 1) == run->rc);
        sl_assert(sl_ws_last_error(s)[0] != '\0');
        if (run->rc == -EPROTO)
            sl_assert(out.len > 0);
    }
    sl_ws_session_free(s);
    sl_buf_free(&out);
}

static void check_upgrade(const uint8_t *p, size_t n)
{
    sl_ws_upgrade_t u;
    sl_ws_upgrade_verdict_t v = sl_ws_upgrade_parse(p, n, &u);
    if (v == SL_WS_UPGRADE_OK) {
        sl_assert(u.length > 0 && u.length <= n);
        sl_assert(strlen(u.accept) == 28);
        sl_ws_upgrade_t again;
        sl_assert(sl_ws_upgrade_parse(p, u.length, &again) == SL_WS_UPGRADE_OK);
        sl_assert(again.length == u.length && strcmp(again.accept, u.accept) == 0);
        sl_assert(sl_ws_upgrade_parse(p, u.length - 1, &again) == SL_WS_UPGRADE_MORE);
    } else if (v == SL_WS_UPGRADE_BAD) {
        sl_assert(u.status == 400 || u.status == 405 || u.status == 426 || u.status == 431 ||
                  u.status == 505);
        sl_assert(u.why != NULL);
    } else {
        sl_assert(n <= SL_WS_HANDSHAKE_MAX);
    }
    if (v != SL_WS_UPGRADE_MORE) {
        sl_buf_t out;
        sl_buf_init(&out, 0);
        sl_ws_upgrade_answer(&u, &out);
        sl_assert(out.len > 12 && memcmp(out.data, "HTTP/1.1 ", 9) == 0);
        sl_buf_free(&out);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2 || size > (1u << 20))
        return 0;
    uint8_t mode = data[0], schedule = data[1];
    data += 2;
    size -= 2;
    if (mode & MODE_UPGRADE_ONLY) {
        check_upgrade(data, size);
        return 0;
    }
    bool small = (mode & MODE_SMALL) != 0;
    sl_ws_door_t door = {.message_max = small ? 1000 : 1u << 20,
                         .frame_max = small ? 300 : 1u << 20,
                         .accept_unmasked = (mode & MODE_UNMASKED) != 0};
    size_t pre = (mode & MODE_PREFIX) ? sizeof(upgrade_request) - 1 : 0;
    uint8_t *in = malloc(pre + size + 1);
    run_t first = {.stream = malloc(pre + size + 1)}, second = {.stream = malloc(pre + size + 1)};
    sl_assert(in && first.stream && second.stream);
    memcpy(in, upgrade_request, pre);
    if (size > 0)
        memcpy(in + pre, data, size);
    run_session(&door, in, pre + size, schedule, &first, 0);
    run_session(&door, in, pre + size, schedule, &second, first.have);
    sl_assert(second.have == first.have && second.rc == first.rc);
    sl_assert(first.have == 0 || memcmp(first.stream, second.stream, first.have) == 0);
    free(first.stream);
    free(second.stream);
    free(in);
    return 0;
}
