/* Shared fixtures of the libsluice unit tests: the reply bodies of
 * commands.md 13 as hex, reply/eviction frame builders, and a fake server
 * end for the module tests that run the client over a socketpair.
 *
 * The socketpair tests are module tests of the client's I/O and decoding,
 * not integration tests: the test writes the "server" frames itself, so
 * nothing here says how a real sluiced answers. */
#ifndef SL_TEST_CLIENT_FIXTURES_H
#define SL_TEST_CLIENT_FIXTURES_H

#include "testutil.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "client/client_internal.h"

/* --- commands.md 13 bodies --------------------------------------------------- */

/* 13.1 GetStreams: stream 0 "orders", 1 topic. */
#define HEX_GET_STREAMS                                                                            \
    "00 00 00 00 00 40 1e 18 24 0a 06 00 01 00 00 00 "                                             \
    "00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 "                                             \
    "06 6f 72 64 65 72 73 00 00 00 00"

/* 13.2 GetTopic: topic 0 "events", 2 partitions, explicit segment_size. */
#define HEX_GET_TOPIC                                                                              \
    "00 00 00 00 00 40 1e 18 24 0a 06 00 02 00 00 00 "                                             \
    "ff ff ff ff ff ff ff ff 01 ff ff ff ff ff ff ff "                                             \
    "ff 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 "                                             \
    "00 06 65 76 65 6e 74 73 1e 00 00 00 02 0c 00 00 "                                             \
    "00 73 65 67 6d 65 6e 74 5f 73 69 7a 65 0c 08 00 "                                             \
    "00 00 00 00 00 08 00 00 00 00 f4 00 00 00 02 15 "                                             \
    "00 00 00 63 6f 6d 70 72 65 73 73 69 6f 6e 5f 61 "                                             \
    "6c 67 6f 72 69 74 68 6d 02 04 00 00 00 6e 6f 6e "                                             \
    "65 02 0d 00 00 00 65 6e 66 6f 72 63 65 5f 66 73 "                                             \
    "79 6e 63 03 01 00 00 00 00 02 0e 00 00 00 6d 61 "                                             \
    "78 5f 74 6f 70 69 63 5f 73 69 7a 65 0c 08 00 00 "                                             \
    "00 ff ff ff ff ff ff ff ff 02 0e 00 00 00 6d 65 "                                             \
    "73 73 61 67 65 5f 65 78 70 69 72 79 0c 08 00 00 "                                             \
    "00 ff ff ff ff ff ff ff ff 02 19 00 00 00 6d 65 "                                             \
    "73 73 61 67 65 73 5f 72 65 71 75 69 72 65 64 5f "                                             \
    "74 6f 5f 73 61 76 65 0b 04 00 00 00 00 04 00 00 "                                             \
    "02 14 00 00 00 70 72 65 61 6c 6c 6f 63 61 74 65 "                                             \
    "5f 73 65 67 6d 65 6e 74 73 03 01 00 00 00 00 02 "                                             \
    "21 00 00 00 73 69 7a 65 5f 6f 66 5f 6d 65 73 73 "                                             \
    "61 67 65 73 5f 72 65 71 75 69 72 65 64 5f 74 6f "                                             \
    "5f 73 61 76 65 0c 08 00 00 00 00 00 10 00 00 00 "                                             \
    "00 00 00 00 00 00 00 40 1e 18 24 0a 06 00 01 00 "                                             \
    "00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 "                                             \
    "00 00 00 00 00 00 00 00 00 00 01 00 00 00 00 40 "                                             \
    "1e 18 24 0a 06 00 01 00 00 00 00 00 00 00 00 00 "                                             \
    "00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 "                                             \
    "00 00"
/* In HEX_GET_TOPIC: the TopicHeader's length and where a partition's
 * segments_count sits (commands.md 2.2, 2.3). */
#define GET_TOPIC_HEADER_LEN      338u
#define PARTITION_SEGMENTS_OFF(i) (GET_TOPIC_HEADER_LEN + 40u * (i) + 12u)

/* 13.3 GetMe: connection 1, user 0, TCP, 127.0.0.1:51234, one group. */
#define HEX_GET_ME                                                                                 \
    "01 00 00 00 00 00 00 00 01 0f 00 00 00 31 32 37 "                                             \
    "2e 30 2e 30 2e 31 3a 35 31 32 33 34 01 00 00 00 "                                             \
    "00 00 00 00 00 00 00 00 00 00 00 00"

/* 13.4 CreateConsumerGroup success body (with the result section). */
#define HEX_CREATE_GROUP_BODY                                                                      \
    "00 00 00 00 00 00 00 00 02 00 00 00 00 00 00 00 "                                             \
    "07 77 6f 72 6b 65 72 73"

/* 13.5 CreateStream rejected with 1012: the complete 268-byte frame. */
#define HEX_REJECTION_FRAME                                                                        \
    "00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 "                                             \
    "00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 "                                             \
    "00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 "                                             \
    "0c 01 00 00 00 00 00 00 00 00 00 00 08 00 00 00 "                                             \
    "00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 "                                             \
    "00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 "                                             \
    "00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 "                                             \
    "00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 "                                             \
    "00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 "                                             \
    "00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 "                                             \
    "10 32 54 76 98 ba dc fe ef cd ab 89 67 45 23 01 "                                             \
    "2a 00 00 00 00 00 00 00 2a 00 00 00 00 00 00 00 "                                             \
    "00 00 00 00 00 00 00 00 07 00 00 00 00 00 00 00 "                                             \
    "80 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 "                                             \
    "00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 "                                             \
    "00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 "                                             \
    "01 00 00 00 00 00 00 00 f4 03 00 00"

/* 13.6 SyncConsumerGroup: generation 3, partitions [0, 2]. */
#define HEX_SYNC "03 00 00 00 00 00 00 00 02 00 00 00 00 00 00 00 02 00 00 00"

/* 13.6 LoginRegister success body: user 0, session 5, 0x2C00, "0.9.0-edge.5". */
#define HEX_LOGIN_BODY                                                                             \
    "00 00 00 00 00 00 00 00 05 00 00 00 00 00 00 00 00 2c 00 00 "                                 \
    "0c 30 2e 39 2e 30 2d 65 64 67 65 2e 35"

/* 13.6 GetUser for root: all global permissions, no streams. */
#define HEX_ROOT_USER                                                                              \
    "00 00 00 00 01 00 00 00 00 00 00 00 01 04 69 67 "                                             \
    "67 79 00 00 00 00 01 0b 00 00 00 01 01 01 01 01 "                                             \
    "01 01 01 01 01 00"

/* --- frame builders ------------------------------------------------------------- */

/* A Reply frame (framing.md 7) with the given operation, status and body. */
static inline sl_buf_t tf_reply(uint8_t operation, uint32_t status, const void *body, size_t len)
{
    sl_buf_t b;
    sl_buf_init(&b, 0);
    uint8_t *hdr = sl_buf_extend(&b, SL_HEADER_SIZE);
    sl_reply_header_t h = {
        .size = (uint32_t)(SL_HEADER_SIZE + len),
        .client = {0x1111, 0x2222},
        .op = 17,
        .commit = 17,
        .request = 3,
        .operation = operation,
        .status = status,
    };
    sl_reply_header_encode(hdr, &h);
    sl_put_bytes(&b, body, len);
    return b;
}

/* A Reply whose body is the hex text. */
static inline sl_buf_t tf_reply_hex(uint8_t operation, const char *hex)
{
    size_t len;
    uint8_t *body = tu_hex(hex, &len);
    sl_buf_t b = tf_reply(operation, 0, body, len);
    free(body);
    return b;
}

/* A result-framed success: [count 0] then payload. */
static inline sl_buf_t tf_reply_ok(uint8_t operation, const void *payload, size_t len)
{
    sl_buf_t body;
    sl_buf_init(&body, 0);
    sl_put_u32(&body, 0);
    sl_put_bytes(&body, payload, len);
    sl_buf_t b = tf_reply(operation, 0, body.data, body.len);
    sl_buf_free(&body);
    return b;
}

/* A result-framed rejection {count 1, index 0, code}. */
static inline sl_buf_t tf_reply_result(uint8_t operation, uint32_t code)
{
    uint8_t body[12];
    sl_store_u32(body, 1);
    sl_store_u32(body + 4, 0);
    sl_store_u32(body + 8, code);
    return tf_reply(operation, 0, body, sizeof(body));
}

/* An Eviction frame (framing.md 8); the window only matters for reason 14. */
static inline sl_buf_t tf_eviction(uint8_t reason, uint32_t version_min, uint32_t version_max)
{
    sl_buf_t b;
    sl_buf_init(&b, 0);
    uint8_t *hdr = sl_buf_extend(&b, SL_HEADER_SIZE);
    sl_eviction_header_t h = {
        .client = {0xabc, 0},
        .version_min = version_min,
        .version_max = version_max,
        .reason = reason,
    };
    sl_eviction_header_encode(hdr, &h);
    return b;
}

/* --- the fake server end of a socketpair ------------------------------------- */

typedef struct tf_conn {
    int server; /* the test's end */
    sl_client_t *client;
} tf_conn_t;

static inline tf_conn_t tf_open(const sl_client_options_t *options)
{
    int sv[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    tf_conn_t t = {.server = sv[1]};
    assert_int_equal(sl_client_adopt(sv[0], options, &t.client), 0);
    return t;
}

static inline void tf_close(tf_conn_t *t)
{
    sl_client_close(t->client);
    if (t->server >= 0)
        close(t->server);
}

/* Queues bytes for the client to read (the socket buffer holds them). */
static inline void tf_send(tf_conn_t *t, const void *bytes, size_t len)
{
    assert_int_equal(send(t->server, bytes, len, MSG_NOSIGNAL), (ssize_t)len);
}

/* Queues a frame built above and frees it. */
static inline void tf_queue(tf_conn_t *t, sl_buf_t frame)
{
    tf_send(t, frame.data, frame.len);
    sl_buf_free(&frame);
}

/* A request the client wrote: the header as the server's validator decodes
 * it (which must accept it) and a malloc'd copy of the body. */
typedef struct tf_request {
    sl_request_header_t header;
    uint8_t raw[SL_HEADER_SIZE];
    uint8_t *body;
    size_t body_len;
} tf_request_t;

static inline void tf_read_exact(int fd, void *p, size_t n)
{
    size_t done = 0;
    while (done < n) {
        ssize_t r = recv(fd, (uint8_t *)p + done, n - done, 0);
        assert_true(r > 0);
        done += (size_t)r;
    }
}

/* Reads one request whose header gets the given verdict from the server's
 * validator; header is filled only for SL_HDR_OK. */
static inline tf_request_t tf_take_as(tf_conn_t *t, sl_hdr_verdict_t verdict)
{
    tf_request_t q = {0};
    tf_read_exact(t->server, q.raw, SL_HEADER_SIZE);
    assert_int_equal(sl_request_header_decode(q.raw, SL_FRAME_MAX_DEFAULT, &q.header), verdict);
    q.body_len = sl_header_size(q.raw) - SL_HEADER_SIZE;
    q.body = malloc(q.body_len + 1);
    assert_non_null(q.body);
    tf_read_exact(t->server, q.body, q.body_len);
    return q;
}

static inline tf_request_t tf_take(tf_conn_t *t)
{
    return tf_take_as(t, SL_HDR_OK);
}

static inline sl_span_t tf_body(const tf_request_t *q)
{
    return sl_span(q->body, q->body_len);
}

static inline void tf_request_free(tf_request_t *q)
{
    free(q->body);
    q->body = NULL;
}

/* True when the client wrote nothing since the last tf_take. */
static inline bool tf_nothing_sent(tf_conn_t *t)
{
    uint8_t byte;
    ssize_t r = recv(t->server, &byte, 1, MSG_DONTWAIT);
    return r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
}

/* Logs the client in with the 13.6 login reply (session 5). */
static inline void tf_login(tf_conn_t *t)
{
    tf_queue(t, tf_reply_hex(SL_OP_REGISTER, HEX_LOGIN_BODY));
    assert_int_equal(sl_client_login(t->client, "iggy", "iggy", NULL), 0);
    tf_request_t q = tf_take(t);
    assert_int_equal(q.header.operation, SL_OP_REGISTER);
    tf_request_free(&q);
}

#endif
