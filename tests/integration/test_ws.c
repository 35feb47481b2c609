/* The WebSocket door of the real sluiced (websocket.md): libsluice's WS and
 * WSS clients log in, send and poll (one request bigger than a WebSocket
 * frame may be, so it travels fragmented); the connection is listed as
 * WebSocket and GetClusterMetadata names the port; and hostile peers over
 * raw sockets: bad upgrade requests each get their HTTP error, bad frames
 * (unmasked, text, garbage, too large, two frames in one message) a Close
 * with its code, a stalled upgrade is cut at message_bus.handshake_grace,
 * and none of it stops a client that is being served. */
#define _GNU_SOURCE /* memmem */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
// clang-format off
#include <cmocka.h>
// clang-format on

#include <sluice/client.h>

#include "certs.h"
#include "harness.h"
#include "raw.h"
#include "wire/command.h"
#include "wire/header.h"

#define OK(expr) assert_int_equal((expr), 0)

static th_server_t srv;
static sl_client_t *served; /* logged in before the hostile cases, checked after each */

static int start(void **state)
{
    (void)state;
    /* The default limits (16 MiB frames), a short handshake grace. */
    th_options_t o = {.extra_config = "[websocket]\naddress = \"127.0.0.1:0\"\n"
                                      "[message_bus]\nhandshake_grace = \"1 s\"\n"};
    if (!th_start(&srv, &o))
        return -1;
    assert_int_not_equal(srv.ws_port, 0);
    return 0;
}

static int stop(void **state)
{
    (void)state;
    sl_client_close(served);
    served = NULL;
    assert_int_equal(th_stop(&srv, SIGTERM), 0);
    th_cleanup(&srv);
    return 0;
}

static sl_client_t *ws_client(uint16_t port, bool tls, const char *ca)
{
    sl_client_options_t o = {.connect_timeout_ms = 5000,
                             .request_timeout_ms = 20000,
                             .transport = SL_CLIENT_WEBSOCKET,
                             .tls_enabled = tls,
                             .tls_domain = tls ? "localhost" : NULL,
                             .tls_ca_file = ca};
    sl_client_t *c = NULL;
    OK(sl_client_connect("127.0.0.1", port, &o, &c));
    OK(sl_client_login(c, "iggy", "iggy", NULL));
    return c;
}

/* --- raw WebSocket ------------------------------------------------------------------ */

static int tcp_connect(uint16_t port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    return fd;
}

static const char upgrade_request[] = "GET / HTTP/1.1\r\nHost: localhost\r\n"
                                      "Upgrade: websocket\r\nConnection: Upgrade\r\n"
                                      "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                                      "Sec-WebSocket-Version: 13\r\n\r\n";

/* Everything the server sends until it closes (or 10 s pass). */
static size_t read_until_closed(int fd, uint8_t *buf, size_t cap, bool *closed)
{
    size_t have = 0;
    *closed = false;
    while (have < cap) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, 10000) <= 0)
            break;
        ssize_t n = recv(fd, buf + have, cap - have, 0);
        if (n <= 0) {
            *closed = true;
            break;
        }
        have += (size_t)n;
    }
    return have;
}

/* Sends bytes, then expects the HTTP status line and the connection closed. */
static void expect_http_refusal(const char *request, size_t len, const char *status_line)
{
    int fd = tcp_connect(srv.ws_port);
    assert_true(th_send_all(fd, request, len));
    uint8_t buf[4096];
    bool closed;
    size_t n = read_until_closed(fd, buf, sizeof(buf) - 1, &closed);
    buf[n] = '\0';
    if (strncmp((const char *)buf, status_line, strlen(status_line)) != 0)
        fail_msg("expected '%s', got '%s'", status_line, (const char *)buf);
    assert_true(closed);
    close(fd);
    OK(sl_client_ping(served)); /* the door still serves its clients */
}

/* A connection past the upgrade (the 101 read and checked). */
static int upgraded(void)
{
    int fd = tcp_connect(srv.ws_port);
    assert_true(th_send_all(fd, upgrade_request, sizeof(upgrade_request) - 1));
    char head[512];
    size_t have = 0;
    while (!memmem(head, have, "\r\n\r\n", 4)) {
        assert_true(th_readable(fd, 10000));
        ssize_t n = recv(fd, head + have, 1, 0); /* byte by byte: nothing past the head */
        assert_true(n == 1 && have < sizeof(head));
        have++;
    }
    assert_memory_equal(head, "HTTP/1.1 101 Switching Protocols\r\n", 34);
    assert_non_null(
        memmem(head, have, "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n", 51));
    return fd;
}

static void ws_send(int fd, bool fin, uint8_t opcode, const void *data, size_t n, bool mask)
{
    static uint8_t frame[1 << 16];
    static const uint8_t key[4] = {0xa1, 0xb2, 0xc3, 0xd4};
    size_t at = 0;
    frame[at++] = (uint8_t)((fin ? 0x80 : 0) | opcode);
    uint8_t m = mask ? 0x80 : 0;
    if (n < 126) {
        frame[at++] = (uint8_t)(m | n);
    } else {
        frame[at++] = m | 126;
        frame[at++] = (uint8_t)(n >> 8);
        frame[at++] = (uint8_t)n;
    }
    if (mask) {
        memcpy(frame + at, key, 4);
        at += 4;
    }
    assert_true(at + n <= sizeof(frame));
    for (size_t i = 0; i < n; i++)
        frame[at + i] = mask ? ((const uint8_t *)data)[i] ^ key[i % 4] : ((const uint8_t *)data)[i];
    assert_true(th_send_all(fd, frame, at + n));
}

static void read_exact(int fd, uint8_t *p, size_t n)
{
    for (size_t got = 0; got < n;) {
        assert_true(th_readable(fd, 10000));
        ssize_t k = recv(fd, p + got, n - got, 0);
        assert_true(k > 0);
        got += (size_t)k;
    }
}

/* One server frame: its opcode and payload (servers never mask). */
static size_t ws_recv(int fd, uint8_t *opcode, uint8_t *payload, size_t cap)
{
    uint8_t h[10];
    read_exact(fd, h, 2);
    assert_int_equal(h[0] & 0x70, 0);
    assert_int_equal(h[1] & 0x80, 0);
    *opcode = h[0] & 0x0f;
    uint64_t n = h[1] & 0x7f;
    if (n == 126) {
        read_exact(fd, h + 2, 2);
        n = (uint64_t)h[2] << 8 | h[3];
    } else if (n == 127) {
        read_exact(fd, h + 2, 8);
        n = 0;
        for (int i = 2; i < 10; i++)
            n = n << 8 | h[i];
    }
    assert_true(n <= cap);
    read_exact(fd, payload, (size_t)n);
    return (size_t)n;
}

/* A pre-login binary Ping request (framing.md): a bare 256-byte header. */
static size_t ping_request(uint8_t *out)
{
    sl_request_header_t h = {.size = SL_HEADER_SIZE,
                             .client = raw_client_id(),
                             .request = 1,
                             .operation = SL_OP_NON_REPLICATED,
                             .code = SL_CMD_PING};
    sl_request_header_encode(out, &h);
    return SL_HEADER_SIZE;
}

static void expect_close(int fd, unsigned code)
{
    uint8_t op, p[125];
    size_t n = ws_recv(fd, &op, p, sizeof(p));
    assert_int_equal(op, 8);
    assert_int_equal(n, 2);
    assert_int_equal((unsigned)p[0] << 8 | p[1], code);
    assert_true(th_wait_closed(fd, 10000));
    close(fd);
    OK(sl_client_ping(served));
}

/* --- the tests ------------------------------------------------------------------------- */

static void test_client_round_trip(void **state)
{
    (void)state;
    served = ws_client(srv.ws_port, false, NULL);
    sl_client_t *c = ws_client(srv.ws_port, false, NULL);
    const sl_client_info_t *me;
    OK(sl_client_get_me(c, &me));
    assert_int_equal(me->transport, 4); /* WebSocket (defaults.md 1) */
    const sl_cluster_t *cl;
    OK(sl_client_get_cluster_metadata(c, &cl));
    assert_int_equal(cl->nodes[0].websocket_port, srv.ws_port);
    assert_int_equal(cl->nodes[0].tcp_port, srv.tcp_port);

    OK(sl_client_create_stream(c, "ws", NULL));
    OK(sl_client_create_topic(c, sl_id_name("ws"), "t", 1, NULL, NULL));
    /* 17 messages of 1 MiB: one request above the 16 MiB a WebSocket frame
     * may carry, sent as two frames of one message. */
    enum { N = 17, LEN = 1024 * 1024 };
    uint8_t *blob = malloc((size_t)N * LEN);
    assert_non_null(blob);
    sl_send_message_t m[N];
    for (uint32_t i = 0; i < N; i++) {
        for (uint32_t j = 0; j < LEN; j++)
            blob[(size_t)i * LEN + j] = (uint8_t)(i * 31 + j * 7);
        m[i] = (sl_send_message_t){
            .id = {i + 1, 0}, .payload = blob + (size_t)i * LEN, .payload_len = LEN};
    }
    sl_send_result_t r;
    OK(sl_client_send_messages(c, sl_id_name("ws"), sl_id_name("t"), sl_partitioning_partition(0),
                               m, N, &r));
    assert_true(r.confirmed);
    assert_int_equal(r.messages_count, N);
    /* Polled back in replies of up to 2 MiB (the server's poll slice), each
     * one binary message written in several chunks. */
    uint32_t have = 0;
    for (int round = 0; round < N && have < N; round++) {
        sl_polled_messages_t out;
        OK(sl_client_poll_messages(c, sl_consumer_single(sl_id_num(1)), sl_id_name("ws"),
                                   sl_id_name("t"), 0, sl_poll_offset(have), N, false, &out));
        assert_true(out.count > 0);
        for (uint32_t i = 0; i < out.count; i++, have++) {
            assert_int_equal(out.messages[i].offset, have);
            assert_int_equal(out.messages[i].payload_len, LEN);
            assert_memory_equal(out.messages[i].payload, blob + (size_t)have * LEN, LEN);
        }
    }
    assert_int_equal(have, N);
    free(blob);
    OK(sl_client_logout(c));
    sl_client_close(c);
}

static void test_hostile_upgrades(void **state)
{
    (void)state;
    char req[sizeof(upgrade_request) + 64];
#define EDIT(from, to)                                                                             \
    do {                                                                                           \
        const char *at = strstr(upgrade_request, from);                                            \
        snprintf(req, sizeof(req), "%.*s%s%s", (int)(at - upgrade_request), upgrade_request, to,   \
                 at + strlen(from));                                                               \
    } while (0)
    EDIT("dGhlIHNhbXBsZSBub25jZQ==", "not-a-key");
    expect_http_refusal(req, strlen(req), "HTTP/1.1 400 Bad Request\r\n");
    EDIT("Upgrade: websocket\r\n", "");
    expect_http_refusal(req, strlen(req), "HTTP/1.1 400 Bad Request\r\n");
    EDIT("HTTP/1.1", "HTTP/1.0");
    expect_http_refusal(req, strlen(req), "HTTP/1.1 505 HTTP Version Not Supported\r\n");
    EDIT("GET", "PUT");
    expect_http_refusal(req, strlen(req), "HTTP/1.1 405 Method Not Allowed\r\n");
    EDIT("Version: 13", "Version: 12");
    expect_http_refusal(req, strlen(req), "HTTP/1.1 426 Upgrade Required\r\n");
#undef EDIT
    /* Oversized headers: refused once the limit is passed, not when they end. */
    static char big[12000];
    int n = snprintf(big, sizeof(big), "GET / HTTP/1.1\r\nX-Big: ");
    memset(big + n, 'x', sizeof(big) - (size_t)n);
    expect_http_refusal(big, sizeof(big), "HTTP/1.1 431 Request Header Fields Too Large\r\n");
    /* A binary frame where a request should be (a TCP client at the wrong port). */
    uint8_t frame[SL_HEADER_SIZE];
    ping_request(frame);
    expect_http_refusal((const char *)frame, sizeof(frame), "HTTP/1.1 400 Bad Request\r\n");
}

/* Half an upgrade, then silence: cut at the handshake grace (1 s here). */
static void test_stalled_upgrade(void **state)
{
    (void)state;
    int fd = tcp_connect(srv.ws_port);
    assert_true(th_send_all(fd, upgrade_request, 20));
    assert_true(th_wait_closed(fd, 15000));
    close(fd);
    OK(sl_client_ping(served));
    assert_non_null(strstr(th_log(&srv), "closed: no ws handshake within 1000 ms"));
}

static void test_frames_served(void **state)
{
    (void)state;
    uint8_t req[SL_HEADER_SIZE], op, got[1024];
    ping_request(req);
    /* One request in three fragments with a WebSocket ping between them:
     * the pong comes first, then the reply as one binary message. */
    int fd = upgraded();
    ws_send(fd, false, 2, req, 100, true);
    ws_send(fd, true, 9, "are you there", 13, true);
    ws_send(fd, false, 0, req + 100, 100, true);
    ws_send(fd, true, 0, req + 200, 56, true);
    size_t n = ws_recv(fd, &op, got, sizeof(got));
    assert_int_equal(op, 10);
    assert_int_equal(n, 13);
    assert_memory_equal(got, "are you there", 13);
    n = ws_recv(fd, &op, got, sizeof(got));
    assert_int_equal(op, 2);
    assert_int_equal(n, SL_HEADER_SIZE);
    assert_int_equal(sl_load_u32(got + SL_HDR_OFF_SIZE), SL_HEADER_SIZE);
    /* A first frame right behind the upgrade request is served too. */
    close(fd);
    fd = tcp_connect(srv.ws_port);
    assert_true(th_send_all(fd, upgrade_request, sizeof(upgrade_request) - 1));
    ws_send(fd, true, 2, req, sizeof(req), true);
    bool closed;
    uint8_t all[2048];
    size_t have = 0;
    while (have < 129 + 4 + SL_HEADER_SIZE) {
        assert_true(th_readable(fd, 10000));
        ssize_t k = recv(fd, all + have, sizeof(all) - have, 0);
        assert_true(k > 0);
        have += (size_t)k;
    }
    assert_non_null(memmem(all, have, "\r\n\r\n\x82\x7e\x01\x00", 8));
    /* A Close from the client is answered with its code, then the end. */
    ws_send(fd, true, 8, "\x03\xe8", 2, true);
    n = read_until_closed(fd, all, sizeof(all), &closed);
    assert_true(closed);
    assert_int_equal(n, 4);
    assert_memory_equal(all, "\x88\x02\x03\xe8", 4);
    close(fd);
}

static void test_hostile_frames(void **state)
{
    (void)state;
    uint8_t req[SL_HEADER_SIZE];
    ping_request(req);
    int fd = upgraded();
    ws_send(fd, true, 2, req, sizeof(req), false); /* unmasked */
    expect_close(fd, 1002);
    fd = upgraded();
    ws_send(fd, true, 1, "hello", 5, true); /* text */
    expect_close(fd, 1003);
    fd = upgraded();
    assert_true(th_send_all(fd, "\x0f\xff\x00garbage after the upgrade", 28));
    expect_close(fd, 1002);
    /* Above websocket.max_frame_size (16 MiB): refused on its header and
     * first bytes, so the rest is never sent. */
    fd = upgraded();
    uint8_t head[14 + 100] = {0x82, 0xff, 0, 0, 0, 0, 0x01, 0x00, 0x00, 0x01, 1, 2, 3, 4};
    assert_true(th_send_all(fd, head, sizeof(head)));
    expect_close(fd, 1009);
    /* Two binary-protocol frames in one message: neither is answered. */
    fd = upgraded();
    uint8_t two[2 * SL_HEADER_SIZE];
    memcpy(two, req, SL_HEADER_SIZE);
    memcpy(two + SL_HEADER_SIZE, req, SL_HEADER_SIZE);
    ws_send(fd, true, 2, two, sizeof(two), true);
    expect_close(fd, 1002);
    /* A message shorter than the frame it starts. */
    fd = upgraded();
    ws_send(fd, true, 2, req, 200, true);
    expect_close(fd, 1002);
}

/* WSS: TLS first, then the upgrade; a verified client is served, a plain
 * WebSocket client is refused at its upgrade, a wrong name at TLS. */
static void test_wss(void **state)
{
    (void)state;
    char dir[256];
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof(dir), "%s/sluice-ws-certs-XXXXXX", tmp ? tmp : "/tmp");
    assert_non_null(mkdtemp(dir));
    th_certs_t certs;
    assert_true(th_certs_make(dir, &certs));
    char extra[1400];
    snprintf(extra, sizeof(extra),
             "[websocket]\naddress = \"127.0.0.1:0\"\n[websocket.tls]\nenabled = true\n"
             "self_signed = false\ncert_file = \"%s\"\nkey_file = \"%s\"\n",
             certs.leaf, certs.leaf_key);
    th_server_t wss;
    th_options_t o = {.extra_config = extra};
    assert_true(th_start(&wss, &o));
    assert_non_null(strstr(th_log(&wss), "(WSS)"));
    sl_client_t *c = ws_client(wss.ws_port, true, certs.ca);
    const sl_client_info_t *me;
    OK(sl_client_get_me(c, &me));
    assert_int_equal(me->transport, 4);
    OK(sl_client_create_stream(c, "wss", NULL));
    sl_client_close(c);
    sl_client_options_t plain = {.connect_timeout_ms = 3000, .transport = SL_CLIENT_WEBSOCKET};
    assert_int_equal(sl_client_connect("127.0.0.1", wss.ws_port, &plain, &c),
                     -SL_ERR_WEB_SOCKET_CONNECTION_ERROR);
    sl_client_options_t wrong = {.connect_timeout_ms = 3000,
                                 .transport = SL_CLIENT_WEBSOCKET,
                                 .tls_enabled = true,
                                 .tls_domain = "not-localhost",
                                 .tls_ca_file = certs.ca};
    assert_int_equal(sl_client_connect("127.0.0.1", wss.ws_port, &wrong, &c),
                     -SL_ERR_INVALID_TLS_CERTIFICATE);
    assert_int_equal(th_stop(&wss, SIGTERM), 0);
    th_cleanup(&wss);
    char cmd[300];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_client_round_trip), cmocka_unit_test(test_hostile_upgrades),
        cmocka_unit_test(test_stalled_upgrade),   cmocka_unit_test(test_frames_served),
        cmocka_unit_test(test_hostile_frames),    cmocka_unit_test(test_wss),
    };
    return cmocka_run_group_tests(tests, start, stop);
}
