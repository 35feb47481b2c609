/* The server's WebSocket door without a socket (server/ws.h): the strict
 * upgrade reader, RFC 6455's accept key, and sessions fed bytes directly:
 * masks, fragments, control frames, the one-frame-per-message rule, the
 * limits, and replies framed one message each. */
#include "testutil.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "server/loop.h"
#include "server/ws.h"
#include "wire/header.h"

static const char good_request[] = "GET /any/path?x=1 HTTP/1.1\r\n"
                                   "Host: localhost:8092\r\n"
                                   "Upgrade: websocket\r\n"
                                   "Connection: keep-alive, Upgrade\r\n"
                                   "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                                   "Sec-WebSocket-Version: 13\r\n"
                                   "\r\n";

static sl_ws_upgrade_verdict_t parse_text(const char *text, sl_ws_upgrade_t *u)
{
    return sl_ws_upgrade_parse((const uint8_t *)text, strlen(text), u);
}

/* good_request with one substring replaced. */
static const char *edited(const char *from, const char *to)
{
    static char buf[1024];
    const char *at = strstr(good_request, from);
    assert_non_null(at);
    snprintf(buf, sizeof(buf), "%.*s%s%s", (int)(at - good_request), good_request, to,
             at + strlen(from));
    return buf;
}

static void expect_refused(const char *text, int status)
{
    sl_ws_upgrade_t u;
    assert_int_equal(parse_text(text, &u), SL_WS_UPGRADE_BAD);
    assert_int_equal(u.status, status);
    assert_non_null(u.why);
}

static void test_accept_key(void **state)
{
    (void)state;
    char accept[32];
    /* RFC 6455 1.3's example. */
    assert_int_equal(sl_ws_accept_of("dGhlIHNhbXBsZSBub25jZQ==", 24, accept), 0);
    assert_string_equal(accept, "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
}

static void test_upgrade_ok_and_incremental(void **state)
{
    (void)state;
    sl_ws_upgrade_t u;
    size_t len = strlen(good_request);
    assert_int_equal(parse_text(good_request, &u), SL_WS_UPGRADE_OK);
    assert_int_equal(u.length, len);
    assert_string_equal(u.accept, "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
    /* Every prefix is "more", never a refusal. */
    for (size_t n = 0; n < len; n++)
        assert_int_equal(sl_ws_upgrade_parse((const uint8_t *)good_request, n, &u),
                         SL_WS_UPGRADE_MORE);
    /* Bytes after the request (a first frame) are not part of it. */
    char more[600];
    snprintf(more, sizeof(more), "%s\x82\x80", good_request);
    assert_int_equal(parse_text(more, &u), SL_WS_UPGRADE_OK);
    assert_int_equal(u.length, len);
    /* Header names and the upgrade token in any case. */
    assert_int_equal(parse_text(edited("Upgrade: websocket", "UPGRADE: WebSocket"), &u),
                     SL_WS_UPGRADE_OK);
    assert_int_equal(
        parse_text(edited("Connection: keep-alive, Upgrade", "connection:upgrade"), &u),
        SL_WS_UPGRADE_OK);
}

static void test_upgrade_refusals(void **state)
{
    (void)state;
    expect_refused(edited("GET", "POST"), 405);
    expect_refused(edited("HTTP/1.1", "HTTP/1.0"), 505);
    expect_refused(edited("HTTP/1.1", "HTTP/2.0"), 505);
    expect_refused(edited("HTTP/1.1", "HTXP/1.1"), 400);
    expect_refused(edited("Sec-WebSocket-Version: 13", "Sec-WebSocket-Version: 8"), 426);
    expect_refused(edited("Sec-WebSocket-Version: 13\r\n", ""), 400);
    expect_refused(edited("Upgrade: websocket\r\n", ""), 400);
    expect_refused(edited("Upgrade: websocket", "Upgrade: h2c"), 400);
    expect_refused(edited("Connection: keep-alive, Upgrade", "Connection: keep-alive"), 400);
    expect_refused(edited("Host: localhost:8092\r\n", ""), 400);
    expect_refused(edited("Host: localhost:8092\r\n", "Host: a\r\nHost: b\r\n"), 400);
    /* Keys: not base64 of 16 bytes. */
    expect_refused(edited("dGhlIHNhbXBsZSBub25jZQ==", "abc"), 400);
    expect_refused(edited("dGhlIHNhbXBsZSBub25jZQ==", "dGhlIHNhbXBsZSBub25jZQ="), 400);
    expect_refused(edited("dGhlIHNhbXBsZSBub25jZQ==", "dGhlIHNhbXBsZSBub25jZR=="), 400);
    expect_refused(edited("dGhlIHNhbXBsZSBub25jZQ==", "dGhlIHNhbXBsZSBub25j*Q=="), 400);
    expect_refused(edited("Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n", ""), 400);
    expect_refused(edited("Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n",
                          "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                          "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"),
                   400);
    /* HTTP syntax: bare LF, folding, space before the colon, a body. */
    expect_refused(edited("Host: localhost:8092\r\n", "Host: localhost:8092\n"), 400);
    expect_refused(edited("Host: localhost:8092\r\n", "Host: localhost:8092\r\n  folded\r\n"), 400);
    expect_refused(edited("Host: localhost:8092", "Host : localhost:8092"), 400);
    expect_refused(
        edited("Host: localhost:8092\r\n", "Host: localhost:8092\r\nContent-Length: 4\r\n"), 400);
    expect_refused(edited("Host: localhost:8092\r\n",
                          "Host: localhost:8092\r\nTransfer-Encoding: chunked\r\n"),
                   400);
}

static void test_upgrade_limits_and_garbage(void **state)
{
    (void)state;
    sl_ws_upgrade_t u;
    /* Headers past the size limit: 431, without waiting for their end. */
    static uint8_t big[SL_WS_HANDSHAKE_MAX + 100];
    int n = snprintf((char *)big, sizeof(big), "GET / HTTP/1.1\r\nX-Pad: ");
    memset(big + n, 'a', sizeof(big) - (size_t)n);
    assert_int_equal(sl_ws_upgrade_parse(big, sizeof(big), &u), SL_WS_UPGRADE_BAD);
    assert_int_equal(u.status, 431);
    /* Too many header lines. */
    char many[4096];
    size_t at = (size_t)snprintf(many, sizeof(many), "GET / HTTP/1.1\r\n");
    for (unsigned i = 0; i < SL_WS_HANDSHAKE_LINES_MAX + 2; i++)
        at += (size_t)snprintf(many + at, sizeof(many) - at, "X-%u: 1\r\n", i);
    snprintf(many + at, sizeof(many) - at, "\r\n");
    expect_refused(many, 431);
    /* A TLS hello and a binary frame are refused on their first bytes. */
    const uint8_t hello[] = {0x16, 0x03, 0x01, 0x00};
    assert_int_equal(sl_ws_upgrade_parse(hello, sizeof(hello), &u), SL_WS_UPGRADE_BAD);
    assert_int_equal(u.status, 400);
    const uint8_t frame[] = {0x00, 0x00, 0x01};
    assert_int_equal(sl_ws_upgrade_parse(frame, sizeof(frame), &u), SL_WS_UPGRADE_BAD);
    expect_refused("G\xc3T / HTTP/1.1\r\n", 400);
}

static void test_upgrade_answers(void **state)
{
    (void)state;
    sl_buf_t out;
    sl_buf_init(&out, 0);
    sl_ws_upgrade_t u;
    assert_int_equal(parse_text(good_request, &u), SL_WS_UPGRADE_OK);
    sl_ws_upgrade_answer(&u, &out);
    sl_put_u8(&out, 0);
    assert_string_equal((const char *)out.data,
                        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
                        "Connection: Upgrade\r\nSec-WebSocket-Accept: "
                        "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n");
    sl_buf_reset(&out);
    assert_int_equal(parse_text(edited("13", "7"), &u), SL_WS_UPGRADE_BAD);
    sl_ws_upgrade_answer(&u, &out);
    sl_put_u8(&out, 0);
    assert_non_null(strstr((const char *)out.data, "HTTP/1.1 426 Upgrade Required\r\n"));
    assert_non_null(strstr((const char *)out.data, "Sec-WebSocket-Version: 13\r\n"));
    assert_non_null(strstr((const char *)out.data, "Connection: close\r\n"));
    sl_buf_free(&out);
}

/* --- sessions -------------------------------------------------------------------- */

typedef struct ws_fixture {
    sl_ws_door_t door;
    sl_buf_t out;
    sl_ws_session_t *s;
} ws_fixture_t;

static void fixture_open(ws_fixture_t *f, uint64_t message_max, uint64_t frame_max, bool unmasked)
{
    memset(f, 0, sizeof(*f));
    f->door = (sl_ws_door_t){message_max, frame_max, unmasked, NULL};
    sl_buf_init(&f->out, 0);
    assert_int_equal(sl_ws_session_new(&f->door, &f->out, &f->s), 0);
    assert_false(sl_ws_established(f->s));
    assert_int_equal(sl_ws_input(f->s, (const uint8_t *)good_request, strlen(good_request)), 0);
    uint8_t b[1];
    assert_int_equal(sl_ws_read(f->s, b, 1), 0);
    assert_true(sl_ws_established(f->s));
    assert_true(f->out.len > 12 && memcmp(f->out.data, "HTTP/1.1 101", 12) == 0);
    sl_buf_reset(&f->out);
}

static void fixture_close(ws_fixture_t *f)
{
    sl_ws_session_free(f->s);
    sl_buf_free(&f->out);
}

/* A binary-protocol frame of size bytes: size field set, a counting body. */
static void proto_frame(uint8_t *p, uint32_t size, uint8_t seed)
{
    memset(p, 0, SL_HEADER_SIZE);
    sl_store_u32(p + SL_HDR_OFF_SIZE, size);
    for (uint32_t i = SL_HEADER_SIZE; i < size; i++)
        p[i] = (uint8_t)(seed + i);
}

/* One client WebSocket frame (masked unless mask_key is NULL) into b. */
static void ws_frame(sl_buf_t *b, bool fin, uint8_t opcode, const uint8_t *data, size_t n,
                     const uint8_t *mask_key)
{
    sl_put_u8(b, (uint8_t)((fin ? 0x80 : 0) | opcode));
    uint8_t m = mask_key ? 0x80 : 0;
    if (n < 126) {
        sl_put_u8(b, (uint8_t)(m | n));
    } else if (n < 65536) {
        sl_put_u8(b, m | 126);
        sl_put_u8(b, (uint8_t)(n >> 8));
        sl_put_u8(b, (uint8_t)n);
    } else {
        sl_put_u8(b, m | 127);
        for (int i = 7; i >= 0; i--)
            sl_put_u8(b, (uint8_t)((uint64_t)n >> (8 * i)));
    }
    if (mask_key)
        sl_put_bytes(b, mask_key, 4);
    for (size_t i = 0; i < n; i++)
        sl_put_u8(b, mask_key ? data[i] ^ mask_key[i % 4] : data[i]);
}

static const uint8_t key4[4] = {0x11, 0x22, 0x33, 0x44};

/* Reads everything the session has now, in reads of at most step bytes. */
static size_t read_all(ws_fixture_t *f, uint8_t *dst, size_t cap, size_t step, int *rc)
{
    size_t have = 0;
    *rc = 0;
    while (have < cap) {
        size_t want = cap - have < step ? cap - have : step;
        int r = sl_ws_read(f->s, dst + have, want);
        if (r <= 0) {
            *rc = r;
            break;
        }
        have += (size_t)r;
    }
    return have;
}

static void feed(ws_fixture_t *f, const sl_buf_t *b)
{
    assert_int_equal(sl_ws_input(f->s, b->data, b->len), 0);
}

/* The close frame the server sent last, its code. */
static unsigned close_code(const sl_buf_t *out)
{
    assert_true(out->len >= 4);
    const uint8_t *p = out->data + out->len - 4;
    assert_int_equal(p[0], 0x88);
    assert_int_equal(p[1], 2);
    return (unsigned)p[2] << 8 | p[3];
}

static void test_session_messages(void **state)
{
    (void)state;
    ws_fixture_t f;
    fixture_open(&f, 1 << 20, 1 << 20, false);
    static uint8_t a[70000], b[300], got[80000];
    proto_frame(a, sizeof(a), 1);
    proto_frame(b, sizeof(b), 7);
    sl_buf_t in;
    sl_buf_init(&in, 0);
    /* a in one frame; b fragmented in three with a ping in the middle. */
    ws_frame(&in, true, 2, a, sizeof(a), key4);
    ws_frame(&in, false, 2, b, 100, key4);
    ws_frame(&in, true, 9, (const uint8_t *)"hi", 2, key4);
    ws_frame(&in, false, 0, b + 100, 150, key4);
    ws_frame(&in, true, 0, b + 250, 50, key4);
    feed(&f, &in);
    int rc;
    /* Small reads exercise what waits between them. */
    size_t n = read_all(&f, got, sizeof(got), 1000, &rc);
    assert_int_equal(rc, 0);
    assert_int_equal(n, sizeof(a) + sizeof(b));
    assert_memory_equal(got, a, sizeof(a));
    assert_memory_equal(got + sizeof(a), b, sizeof(b));
    /* The ping was answered with its payload. */
    assert_int_equal(f.out.len, 4);
    assert_memory_equal(f.out.data, "\x8a\x02hi", 4);
    sl_buf_free(&in);
    fixture_close(&f);
}

/* A message holding a whole frame in a non-final WebSocket frame: its last
 * byte waits until the message ends. */
static void test_session_held_until_message_end(void **state)
{
    (void)state;
    ws_fixture_t f;
    fixture_open(&f, 1 << 20, 1 << 20, false);
    uint8_t a[400], got[400];
    proto_frame(a, sizeof(a), 3);
    sl_buf_t in;
    sl_buf_init(&in, 0);
    ws_frame(&in, false, 2, a, sizeof(a), key4);
    feed(&f, &in);
    int rc;
    assert_int_equal(read_all(&f, got, sizeof(got), sizeof(got), &rc), sizeof(a) - 1);
    assert_int_equal(rc, 0);
    sl_buf_reset(&in);
    ws_frame(&in, true, 0, NULL, 0, key4);
    feed(&f, &in);
    assert_int_equal(sl_ws_read(f.s, got + sizeof(a) - 1, 1), 1);
    assert_memory_equal(got, a, sizeof(a));
    sl_buf_free(&in);
    fixture_close(&f);
}

/* Each bad input: nothing is handed on (the read fails), the close code. */
static void expect_fail(const sl_buf_t *in, bool unmasked, uint64_t frame_max, unsigned code)
{
    ws_fixture_t f;
    fixture_open(&f, 1 << 20, frame_max, unmasked);
    feed(&f, in);
    static uint8_t got[1 << 16];
    int rc;
    assert_int_equal(read_all(&f, got, sizeof(got), sizeof(got), &rc), 0);
    assert_int_equal(rc, -EPROTO);
    assert_int_equal(close_code(&f.out), code);
    assert_non_null(strstr(sl_ws_last_error(f.s), "closed with"));
    /* It stays failed. */
    assert_int_equal(sl_ws_read(f.s, got, 1), -EPROTO);
    fixture_close(&f);
}

static void test_session_refusals(void **state)
{
    (void)state;
    uint8_t a[300], two[600];
    proto_frame(a, sizeof(a), 5);
    proto_frame(two, 300, 5);
    proto_frame(two + 300, 300, 6);
    sl_buf_t in;
    sl_buf_init(&in, 0);
    ws_frame(&in, true, 1, (const uint8_t *)"text", 4, key4);
    expect_fail(&in, false, 1 << 20, 1003);
    sl_buf_reset(&in);
    ws_frame(&in, true, 2, a, sizeof(a), NULL); /* unmasked */
    expect_fail(&in, false, 1 << 20, 1002);
    sl_buf_reset(&in);
    ws_frame(&in, true, 2, two, sizeof(two), key4); /* two frames, one message */
    expect_fail(&in, false, 1 << 20, 1002);
    sl_buf_reset(&in);
    ws_frame(&in, true, 2, a, 280, key4); /* a message shorter than its frame */
    expect_fail(&in, false, 1 << 20, 1002);
    sl_buf_reset(&in);
    ws_frame(&in, true, 0, a, sizeof(a), key4); /* continuation without a start */
    expect_fail(&in, false, 1 << 20, 1002);
    sl_buf_reset(&in);
    ws_frame(&in, false, 2, a, 100, key4); /* a new message inside a fragmented one */
    ws_frame(&in, true, 2, a + 100, 200, key4);
    expect_fail(&in, false, 1 << 20, 1002);
    sl_buf_reset(&in);
    ws_frame(&in, true, 2, a, sizeof(a), key4); /* above max_frame_size */
    expect_fail(&in, false, 299, 1009);
    sl_buf_reset(&in);
    sl_put_bytes(&in, "\x82\xff\xff\xff\xff\xff\xff\xff\xff\xff", 10); /* 2^64 - 1 bytes */
    expect_fail(&in, false, 1 << 20, 1002);
    sl_buf_reset(&in);
    ws_frame(&in, true, 3, a, 10, key4); /* a reserved opcode */
    expect_fail(&in, false, 1 << 20, 1002);
    sl_buf_reset(&in);
    sl_put_bytes(&in, "\xc2\x80\x01\x02\x03\x04", 6); /* RSV1 */
    expect_fail(&in, false, 1 << 20, 1002);
    uint8_t big[126];
    memset(big, 'p', sizeof(big));
    sl_buf_reset(&in);
    ws_frame(&in, true, 9, big, sizeof(big), key4); /* a control frame above 125 bytes */
    expect_fail(&in, false, 1 << 20, 1002);
    sl_buf_reset(&in);
    ws_frame(&in, false, 9, big, 10, key4); /* a fragmented control frame */
    expect_fail(&in, false, 1 << 20, 1002);
    sl_buf_reset(&in);
    ws_frame(&in, false, 2, a, 100, key4); /* a Close inside a message is still a Close */
    ws_frame(&in, true, 8, (const uint8_t *)"\x03\xe8", 2, key4);
    ws_fixture_t c;
    fixture_open(&c, 1 << 20, 1 << 20, false);
    feed(&c, &in);
    uint8_t part[300];
    int crc;
    read_all(&c, part, sizeof(part), sizeof(part), &crc);
    assert_int_equal(crc, -ECONNRESET);
    assert_int_equal(close_code(&c.out), 1000);
    fixture_close(&c);
    /* accept_unmasked_frames lets the unmasked frame through. */
    ws_fixture_t f;
    fixture_open(&f, 1 << 20, 1 << 20, true);
    sl_buf_reset(&in);
    ws_frame(&in, true, 2, a, sizeof(a), NULL);
    feed(&f, &in);
    uint8_t got[300];
    int rc;
    assert_int_equal(read_all(&f, got, sizeof(got), sizeof(got), &rc), sizeof(a));
    assert_memory_equal(got, a, sizeof(a));
    fixture_close(&f);
    sl_buf_free(&in);
}

static void test_session_close_and_message_limit(void **state)
{
    (void)state;
    ws_fixture_t f;
    fixture_open(&f, 1000, 1000, false);
    uint8_t a[1200];
    proto_frame(a, sizeof(a), 2);
    sl_buf_t in;
    sl_buf_init(&in, 0);
    ws_frame(&in, false, 2, a, 600, key4); /* 1200 bytes in all: above the message limit */
    ws_frame(&in, true, 0, a + 600, 600, key4);
    feed(&f, &in);
    uint8_t got[2000];
    int rc;
    read_all(&f, got, sizeof(got), sizeof(got), &rc);
    assert_int_equal(rc, -EPROTO);
    assert_int_equal(close_code(&f.out), 1009);
    fixture_close(&f);
    /* A Close is answered with its code and ends the session. */
    fixture_open(&f, 1000, 1000, false);
    sl_buf_reset(&in);
    ws_frame(&in, true, 8,
             (const uint8_t *)"\x03\xe9"
                              "bye",
             5, key4);
    feed(&f, &in);
    assert_int_equal(sl_ws_read(f.s, got, 10), -ECONNRESET);
    assert_int_equal(close_code(&f.out), 1001);
    fixture_close(&f);
    sl_buf_free(&in);
}

static void test_session_replies(void **state)
{
    (void)state;
    ws_fixture_t f;
    fixture_open(&f, 1 << 20, 1 << 20, false);
    static uint8_t small[300], large[70000];
    proto_frame(small, sizeof(small), 9);
    proto_frame(large, sizeof(large), 4);
    /* Written in pieces, the size field split between two of them. */
    assert_int_equal(sl_ws_write(f.s, small, 10), 0);
    assert_int_equal(f.out.len, 0);
    assert_int_equal(sl_ws_write(f.s, small + 10, 40), 0);
    assert_int_equal(sl_ws_write(f.s, small + 50, 250), 0);
    assert_int_equal(sl_ws_write(f.s, large, sizeof(large)), 0);
    /* Two unmasked binary messages, one frame each. */
    const uint8_t *p = f.out.data;
    assert_int_equal(f.out.len, 4 + sizeof(small) + 10 + sizeof(large));
    assert_memory_equal(p, "\x82\x7e\x01\x2c", 4);
    assert_memory_equal(p + 4, small, sizeof(small));
    p += 4 + sizeof(small);
    assert_memory_equal(p, "\x82\x7f\x00\x00\x00\x00\x00\x01\x11\x70", 10);
    assert_memory_equal(p + 10, large, sizeof(large));
    /* A frame whose size is below a header is refused. */
    uint8_t bad[SL_HEADER_SIZE];
    proto_frame(bad, 100, 0);
    assert_int_equal(sl_ws_write(f.s, bad, sizeof(bad)), -EPROTO);
    fixture_close(&f);
}

/* The transport's need never asks for more frame bytes than the client
 * still has to send (the loop waits for them with MSG_WAITALL). */
static void test_session_need(void **state)
{
    (void)state;
    ws_fixture_t f;
    fixture_open(&f, 1 << 20, 1 << 20, false);
    static uint8_t a[200000], got[200000];
    proto_frame(a, sizeof(a), 6);
    sl_buf_t in;
    sl_buf_init(&in, 0);
    /* Several fragments with pings among them. */
    for (size_t at = 0, n = 30000; at < sizeof(a); at += n) {
        n = sizeof(a) - at < n ? sizeof(a) - at : n;
        ws_frame(&in, at + n == sizeof(a), at ? 0 : 2, a + at, n, key4);
        ws_frame(&in, true, 9, (const uint8_t *)"p", 1, key4);
    }
    size_t fed = 0, have = 0;
    for (size_t piece = 1000; have < sizeof(a); piece = piece * 5 % 40000 + 3) {
        uint32_t need = sl_ws_transport.need(f.s, (uint32_t)(sizeof(a) - have));
        assert_true(need <= in.len - fed);
        size_t n = in.len - fed < piece ? in.len - fed : piece;
        assert_int_equal(sl_ws_input(f.s, in.data + fed, n), 0);
        fed += n;
        int r = sl_ws_read(f.s, got + have, sizeof(got) - have);
        assert_true(r >= 0);
        have += (size_t)r;
    }
    assert_memory_equal(got, a, sizeof(a));
    sl_buf_free(&in);
    fixture_close(&f);
}

static void test_session_before_upgrade(void **state)
{
    (void)state;
    sl_ws_door_t door = {1 << 20, 1 << 20, false, NULL};
    sl_buf_t out;
    sl_buf_init(&out, 0);
    sl_ws_session_t *s;
    assert_int_equal(sl_ws_session_new(&door, &out, &s), 0);
    uint8_t b[16];
    assert_int_equal(sl_ws_write(s, b, sizeof(b)), -EPROTO);
    assert_int_equal(sl_ws_input(s, (const uint8_t *)"POST / HTTP/1.1\r\n", 17), 0);
    assert_int_equal(sl_ws_read(s, b, sizeof(b)), -EPROTO);
    sl_put_u8(&out, 0);
    assert_non_null(strstr((const char *)out.data, "405 Method Not Allowed"));
    assert_non_null(strstr(sl_ws_last_error(s), "405"));
    sl_ws_session_free(s);
    sl_buf_free(&out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_accept_key),
        cmocka_unit_test(test_upgrade_ok_and_incremental),
        cmocka_unit_test(test_upgrade_refusals),
        cmocka_unit_test(test_upgrade_limits_and_garbage),
        cmocka_unit_test(test_upgrade_answers),
        cmocka_unit_test(test_session_messages),
        cmocka_unit_test(test_session_held_until_message_end),
        cmocka_unit_test(test_session_refusals),
        cmocka_unit_test(test_session_close_and_message_limit),
        cmocka_unit_test(test_session_replies),
        cmocka_unit_test(test_session_need),
        cmocka_unit_test(test_session_before_upgrade),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
