/* Module test of libsluice's session handling over a socketpair: the test
 * plays the server by writing reply frames itself and reading back what the
 * client sent. Not an integration test (no sluiced involved): it pins the
 * client's login, numbering, eviction, error and raw-access behaviour. */
#include "test_client_fixtures.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>

#include "base/xxh3.h"
#include "wire/command.h"

static sl_session_info_t info_of(const tf_conn_t *t)
{
    sl_session_info_t info;
    sl_client_session_info(t->client, &info);
    return info;
}

/* --- login and numbering ------------------------------------------------------------ */

static void test_login_sends_the_vector_body(void **state)
{
    (void)state;
    sl_client_options_t o = {.sdk_name = "c-sdk", .sdk_version = "0.1.0"};
    tf_conn_t t = tf_open(&o);
    size_t len;
    uint8_t *vector = tu_vector("b_login_register_request.hex", &len);
    tf_queue(&t, tf_reply_hex(SL_OP_REGISTER, HEX_LOGIN_BODY));
    sl_identity_t id;
    assert_int_equal(sl_client_login(t.client, "iggy", "iggy", &id), 0);
    assert_int_equal(id.user_id, 0);
    assert_int_equal(id.session, 5);
    assert_int_equal(id.server_protocol_version, 0x2C00);
    assert_string_equal(id.server_version, "0.9.0-edge.5");

    tf_request_t q = tf_take(&t);
    /* Byte for byte the vector, except the random client id at 128..144. */
    assert_bytes_equal(q.body, q.body_len, vector + SL_HEADER_SIZE, len - SL_HEADER_SIZE);
    assert_bytes_equal(q.raw, SL_REQ_OFF_CLIENT, vector, SL_REQ_OFF_CLIENT);
    assert_bytes_equal(q.raw + 144, SL_HEADER_SIZE - 144, vector + 144, SL_HEADER_SIZE - 144);
    assert_false(sl_u128_is_zero(q.header.client));
    assert_int_equal(q.header.operation, SL_OP_REGISTER);
    assert_int_equal(q.header.request, 0);
    assert_int_equal(q.header.session, 0);

    sl_session_info_t info = info_of(&t);
    assert_true(info.logged_in);
    assert_int_equal(info.session, 5);
    assert_int_equal(info.request, 1);
    assert_int_equal(info.client_id_lo, q.header.client.lo);
    assert_int_equal(info.client_id_hi, q.header.client.hi);
    tf_request_free(&q);
    free(vector);
    tf_close(&t);
}

static void test_relogin_logs_out_and_mints_a_new_id(void **state)
{
    (void)state;
    tf_conn_t t = tf_open(NULL);
    tf_queue(&t, tf_reply_hex(SL_OP_REGISTER, HEX_LOGIN_BODY));
    assert_int_equal(sl_client_login_token(t.client, "tok", NULL), 0);
    tf_request_t first = tf_take(&t);

    tf_queue(&t, tf_reply(SL_OP_LOGOUT, 0, NULL, 0));
    tf_queue(&t, tf_reply_hex(SL_OP_REGISTER, HEX_LOGIN_BODY));
    assert_int_equal(sl_client_login(t.client, "iggy", "secret", NULL), 0);
    tf_request_t logout = tf_take(&t);
    tf_request_t second = tf_take(&t);

    assert_int_equal(logout.header.operation, SL_OP_LOGOUT);
    assert_true(sl_u128_eq(logout.header.client, first.header.client));
    assert_int_equal(logout.header.session, 5);
    assert_int_equal(logout.header.request, 1);
    assert_int_equal(logout.body_len, 0);
    assert_true(sl_u128_eq(logout.header.request_checksum, (sl_u128_t){sl_xxh3_64("", 0), 0}));

    assert_int_equal(second.header.operation, SL_OP_REGISTER);
    assert_false(sl_u128_eq(second.header.client, first.header.client));
    /* The token body: version prefix, token str8, context_len 0. */
    sl_login_register_with_pat_request_t pat;
    assert_int_equal(sl_login_register_with_pat_request_decode(tf_body(&first), &pat), 0);
    assert_span_str(pat.login.token, "tok");
    assert_span_str(pat.version.sdk_name, "sluice-c");
    assert_int_equal(info_of(&t).request, 1);
    tf_request_free(&first);
    tf_request_free(&logout);
    tf_request_free(&second);
    tf_close(&t);
}

static void test_numbering_through_calls(void **state)
{
    (void)state;
    tf_conn_t t = tf_open(NULL);
    tf_login(&t);
    size_t len;
    uint8_t *streams = tu_hex(HEX_GET_STREAMS, &len);
    streams[12] = 0; /* topics_count 0: also a valid CreateStream reply */

    tf_queue(&t, tf_reply_ok(SL_OP_CREATE_STREAM, streams, len));
    assert_int_equal(sl_client_create_stream(t.client, "orders", NULL), 0);
    tf_queue(&t, tf_reply(SL_OP_NON_REPLICATED, 0, streams, len));
    const sl_stream_t *list;
    uint32_t count;
    assert_int_equal(sl_client_get_streams(t.client, &list, &count), 0);
    tf_queue(&t, tf_reply_ok(SL_OP_TRUNCATE_PARTITION, NULL, 0));
    assert_int_equal(sl_client_delete_segments(t.client, sl_id_num(0), sl_id_num(0), 0, 1), 0);
    /* The reference's undecodable-body path: operation 138, empty body. */
    tf_queue(&t, tf_reply(SL_OP_DELETE_SEGMENTS, 0, NULL, 0));
    assert_int_equal(sl_client_delete_segments(t.client, sl_id_num(0), sl_id_num(0), 0, 1), 0);
    sl_raw_reply_t raw;
    tf_queue(&t, tf_reply(SL_OP_SEND_MESSAGES, 0, "\0\0\0\0", 4));
    assert_int_equal(sl_client_request_raw(t.client, SL_OP_SEND_MESSAGES, 0, "b", 1, &raw), 0);
    tf_queue(&t, tf_reply(SL_OP_LOGOUT, 0, NULL, 0));
    assert_int_equal(sl_client_logout(t.client), 0);

    struct {
        uint8_t operation;
        uint64_t request;
        uint32_t code;
        bool stamped;
    } want[] = {
        {SL_OP_CREATE_STREAM, 1, 0, true},   {SL_OP_NON_REPLICATED, 2, 201, false},
        {SL_OP_DELETE_SEGMENTS, 2, 0, true}, {SL_OP_DELETE_SEGMENTS, 3, 0, true},
        {SL_OP_SEND_MESSAGES, 4, 0, false},  {SL_OP_LOGOUT, 5, 0, true},
    };
    for (size_t i = 0; i < SL_ARRAY_LEN(want); i++) {
        tf_request_t q = tf_take(&t);
        assert_int_equal(q.header.operation, want[i].operation);
        assert_int_equal(q.header.request, want[i].request);
        assert_int_equal(q.header.session, 5);
        assert_int_equal(q.header.code, want[i].code);
        sl_u128_t stamp = {want[i].stamped ? sl_xxh3_64(q.body, q.body_len) : 0, 0};
        assert_true(sl_u128_eq(q.header.request_checksum, stamp));
        tf_request_free(&q);
    }
    sl_session_info_t info = info_of(&t);
    assert_false(info.logged_in);
    assert_int_equal(info.request, 1);
    free(streams);
    tf_close(&t);
}

static void test_without_session(void **state)
{
    (void)state;
    tf_conn_t t = tf_open(NULL);
    /* A replicated command without a session would be dropped by the
     * server; the client refuses it without sending. */
    assert_int_equal(sl_client_delete_stream(t.client, sl_id_num(1)), -SL_ERR_UNAUTHENTICATED);
    assert_int_equal(sl_client_create_topic(t.client, sl_id_num(1), "t", 1, NULL, NULL),
                     -SL_ERR_UNAUTHENTICATED);
    assert_int_equal(sl_client_logout(t.client), 0);
    assert_true(tf_nothing_sent(&t));
    /* PING is allowed: the current counter (1), session 0. */
    tf_queue(&t, tf_reply(SL_OP_NON_REPLICATED, 0, NULL, 0));
    assert_int_equal(sl_client_ping(t.client), 0);
    tf_request_t q = tf_take(&t);
    assert_int_equal(q.header.request, 1);
    assert_int_equal(q.header.session, 0);
    assert_int_equal(q.header.code, 1);
    tf_request_free(&q);
    /* Reads are sent; the server answers 40. */
    tf_queue(&t, tf_reply(SL_OP_NON_REPLICATED, SL_ERR_UNAUTHENTICATED, NULL, 0));
    const sl_stats_t *stats;
    assert_int_equal(sl_client_get_stats(t.client, &stats), -SL_ERR_UNAUTHENTICATED);
    q = tf_take(&t);
    assert_int_equal(q.header.code, 10);
    tf_request_free(&q);
    tf_close(&t);
}

/* --- evictions -------------------------------------------------------------------- */

static void test_eviction_ends_the_session(void **state)
{
    (void)state;
    tf_conn_t t = tf_open(NULL);
    tf_login(&t);
    tf_queue(&t, tf_eviction(SL_EVICT_SESSION_TOO_LOW, 0, 0));
    assert_int_equal(sl_client_purge_stream(t.client, sl_id_name("orders")),
                     -SL_ERR_UNAUTHENTICATED);
    tf_request_t q = tf_take(&t);
    tf_request_free(&q);
    sl_session_info_t info = info_of(&t);
    assert_false(info.logged_in);
    assert_true(info.connected);
    /* Replicated calls now stop locally; the connection still works. */
    assert_int_equal(sl_client_create_stream(t.client, "x", NULL), -SL_ERR_UNAUTHENTICATED);
    assert_true(tf_nothing_sent(&t));
    tf_queue(&t, tf_reply(SL_OP_NON_REPLICATED, 0, NULL, 0));
    assert_int_equal(sl_client_ping(t.client), 0);
    q = tf_take(&t);
    tf_request_free(&q);
    /* And a new login works on the same connection. */
    tf_login(&t);
    assert_true(info_of(&t).logged_in);
    tf_close(&t);
}

static void test_login_failures(void **state)
{
    (void)state;
    struct {
        sl_buf_t reply;
        int rc;
    } cases[] = {
        {tf_eviction(SL_EVICT_INVALID_CREDENTIALS, 0, 0), -SL_ERR_INVALID_CREDENTIALS},
        {tf_eviction(SL_EVICT_INCOMPATIBLE_PROTOCOL, 0x2C00, 0x2C00),
         -SL_ERR_INCOMPATIBLE_PROTOCOL_VERSION},
        {tf_eviction(SL_EVICT_MALFORMED_LOGIN, 0, 0), -SL_ERR_INVALID_FORMAT},
        {tf_reply_result(SL_OP_REGISTER, SL_ERR_TRANSIENT_NOT_ACCEPTED),
         -SL_ERR_TRANSIENT_NOT_ACCEPTED},
        {tf_reply(SL_OP_REGISTER, 0, NULL, 0), -SL_ERR_EMPTY_RESPONSE},
        /* session 0 in a success body cannot be echoed */
        {tf_reply_hex(SL_OP_REGISTER, "00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 "
                                      "00 2c 00 00 01 31"),
         -SL_ERR_INVALID_FORMAT},
        {tf_reply_hex(SL_OP_REGISTER, "00 00 00 00 01"), -SL_ERR_INVALID_FORMAT},
    };
    tf_conn_t t = tf_open(NULL);
    for (size_t i = 0; i < SL_ARRAY_LEN(cases); i++) {
        tf_queue(&t, cases[i].reply);
        assert_int_equal(sl_client_login(t.client, "iggy", "wrong", NULL), cases[i].rc);
        tf_request_t q = tf_take(&t);
        tf_request_free(&q);
        sl_session_info_t info = info_of(&t);
        assert_false(info.logged_in);
        assert_true(info.connected);
    }
    tf_close(&t);
}

/* --- errors that keep or close the connection ------------------------------------- */

static void test_errors_that_keep_the_connection(void **state)
{
    (void)state;
    tf_conn_t t = tf_open(NULL);
    tf_login(&t);
    /* status */
    tf_queue(&t, tf_reply(SL_OP_NON_REPLICATED, SL_ERR_UNAUTHORIZED, NULL, 0));
    const sl_stream_t *s;
    assert_int_equal(sl_client_get_stream(t.client, sl_id_num(0), &s), -SL_ERR_UNAUTHORIZED);
    /* the committed rejection frame of commands.md 13.5 */
    size_t len;
    uint8_t *frame = tu_hex(HEX_REJECTION_FRAME, &len);
    tf_send(&t, frame, len);
    free(frame);
    assert_int_equal(sl_client_create_stream(t.client, "orders", &s),
                     -SL_ERR_STREAM_NAME_ALREADY_EXISTS);
    /* a malformed result section */
    tf_queue(&t, tf_reply_hex(SL_OP_CREATE_STREAM, "01 00 00 00"));
    assert_int_equal(sl_client_create_stream(t.client, "orders", &s), -SL_ERR_INVALID_COMMAND);
    /* a payload that does not decode */
    tf_queue(&t, tf_reply_hex(SL_OP_NON_REPLICATED, "01 02 03"));
    assert_int_equal(sl_client_get_stream(t.client, sl_id_num(0), &s), -SL_ERR_INVALID_FORMAT);
    sl_session_info_t info = info_of(&t);
    assert_true(info.connected);
    assert_true(info.logged_in);
    for (int i = 0; i < 4; i++) {
        tf_request_t q = tf_take(&t);
        tf_request_free(&q);
    }
    tf_queue(&t, tf_reply(SL_OP_NON_REPLICATED, 0, NULL, 0));
    assert_int_equal(sl_client_ping(t.client), 0);
    tf_close(&t);
}

/* Runs ping against whatever bytes the server end queued and then closed
 * (or not), and checks the error and that the connection is gone. */
static void expect_fatal(const void *bytes, size_t len, bool close_server, uint32_t frame_max,
                         int rc)
{
    sl_client_options_t o = {.frame_max = frame_max, .request_timeout_ms = 200};
    tf_conn_t t = tf_open(&o);
    if (len > 0)
        tf_send(&t, bytes, len);
    if (close_server) {
        shutdown(t.server, SHUT_WR);
    }
    assert_int_equal(sl_client_ping(t.client), rc);
    sl_session_info_t info = info_of(&t);
    assert_false(info.connected);
    assert_int_equal(sl_client_ping(t.client), -SL_ERR_NOT_CONNECTED);
    assert_int_equal(sl_client_login(t.client, "a", "b", NULL), -SL_ERR_NOT_CONNECTED);
    tf_close(&t);
}

static void test_errors_that_close_the_connection(void **state)
{
    (void)state;
    sl_buf_t ok = tf_reply(SL_OP_NON_REPLICATED, 0, "abcdefgh", 8);
    /* end of stream before, inside the header, inside the body */
    expect_fatal(NULL, 0, true, 0, -SL_ERR_CONNECTION_CLOSED);
    expect_fatal(ok.data, 1, true, 0, -SL_ERR_EMPTY_RESPONSE);
    expect_fatal(ok.data, SL_HEADER_SIZE - 1, true, 0, -SL_ERR_EMPTY_RESPONSE);
    expect_fatal(ok.data, SL_HEADER_SIZE, true, 0, -SL_ERR_CONNECTION_CLOSED);
    expect_fatal(ok.data, ok.len - 1, true, 0, -SL_ERR_CONNECTION_CLOSED);
    /* no reply at all within the timeout */
    expect_fatal(NULL, 0, false, 0, -SL_ERR_TASK_TIMEOUT);
    /* a size above the client's limit, below a header */
    sl_buf_t big = tf_reply(SL_OP_NON_REPLICATED, 0, NULL, 0);
    sl_store_u32(big.data + SL_HDR_OFF_SIZE, 8192);
    expect_fatal(big.data, big.len, false, 4096, -SL_ERR_INVALID_COMMAND);
    sl_store_u32(big.data + SL_HDR_OFF_SIZE, 100);
    expect_fatal(big.data, big.len, false, 0, -SL_ERR_INVALID_COMMAND);
    /* a command byte that is no reply; an undeclared operation */
    sl_store_u32(big.data + SL_HDR_OFF_SIZE, SL_HEADER_SIZE);
    big.data[SL_HDR_OFF_COMMAND] = SL_COMMAND_REQUEST;
    expect_fatal(big.data, big.len, false, 0, -SL_ERR_INVALID_COMMAND);
    big.data[SL_HDR_OFF_COMMAND] = SL_COMMAND_REPLY;
    big.data[SL_REP_OFF_OPERATION] = 70;
    expect_fatal(big.data, big.len, false, 0, -SL_ERR_INVALID_COMMAND);
    sl_buf_free(&big);
    sl_buf_free(&ok);
}

/* --- raw access ------------------------------------------------------------------- */

static void test_raw_access(void **state)
{
    (void)state;
    tf_conn_t t = tf_open(NULL);
    sl_raw_reply_t raw;
    tf_queue(&t, tf_reply(SL_OP_NON_REPLICATED, SL_ERR_INVALID_COMMAND, NULL, 0));
    assert_int_equal(sl_client_request_raw(t.client, SL_OP_NON_REPLICATED, 999, "zz", 2, &raw), 0);
    assert_false(raw.evicted);
    assert_int_equal(raw.status, SL_ERR_INVALID_COMMAND);
    assert_int_equal(raw.error, -SL_ERR_INVALID_COMMAND);
    assert_int_equal(raw.operation, SL_OP_NON_REPLICATED);
    assert_int_equal(raw.request, 3);
    assert_int_equal(raw.frame_len, SL_HEADER_SIZE);
    tf_request_t q = tf_take(&t);
    assert_int_equal(q.header.code, 999);
    assert_bytes_equal(q.body, q.body_len, "zz", 2);
    tf_request_free(&q);

    /* A framed body comes back whole; error says what it means. */
    tf_queue(&t, tf_reply_result(SL_OP_CREATE_STREAM, 1012));
    assert_int_equal(sl_client_request_raw(t.client, SL_OP_CREATE_STREAM, 0, NULL, 0, &raw), 0);
    assert_int_equal(raw.body_len, 12);
    assert_int_equal(raw.error, -1012);
    /* Raw sends what the client has, even when a server would drop it. */
    q = tf_take_as(&t, SL_HDR_BAD_NUMBERING);
    assert_int_equal(sl_load_u64(q.raw + SL_REQ_OFF_SESSION), 0);
    assert_int_equal(q.raw[SL_REQ_OFF_OPERATION], SL_OP_CREATE_STREAM);
    tf_request_free(&q);

    /* Fully raw bytes out, an eviction in. */
    size_t len;
    uint8_t *ping = tu_vector("a_ping_request.hex", &len);
    assert_int_equal(sl_client_send_bytes(t.client, ping, len), 0);
    uint8_t echoed[256];
    tf_read_exact(t.server, echoed, sizeof(echoed));
    assert_bytes_equal(echoed, sizeof(echoed), ping, len);
    free(ping);
    tf_queue(&t, tf_eviction(SL_EVICT_INCOMPATIBLE_PROTOCOL, 0x2C00, 0x2C00));
    assert_int_equal(sl_client_recv_frame(t.client, &raw), 0);
    assert_true(raw.evicted);
    assert_int_equal(raw.eviction_reason, 14);
    assert_int_equal(raw.version_min, 0x2C00);
    assert_int_equal(raw.error, -SL_ERR_INCOMPATIBLE_PROTOCOL_VERSION);

    /* A broken frame is an error even raw, and closes the connection. */
    sl_buf_t bad = tf_reply(SL_OP_NON_REPLICATED, 0, NULL, 0);
    bad.data[SL_REP_OFF_OPERATION] = 4;
    tf_queue(&t, bad);
    assert_int_equal(sl_client_recv_frame(t.client, &raw), -SL_ERR_INVALID_COMMAND);
    assert_false(info_of(&t).connected);
    assert_int_equal(sl_client_send_bytes(t.client, "x", 1), -SL_ERR_NOT_CONNECTED);
    tf_close(&t);
}

/* --- large frames in pieces -------------------------------------------------------- */

#define BIG_LEN (3u << 20) /* larger than any socket buffer here */

typedef struct dribble {
    int fd;
    size_t request_len; /* what the server read */
    uint32_t request_code;
} dribble_t;

/* The server side: reads the whole request in small bites, then answers
 * with a BIG_LEN body written in uneven chunks. */
static void *dribble_server(void *arg)
{
    dribble_t *d = arg;
    uint8_t hdr[SL_HEADER_SIZE];
    tf_read_exact(d->fd, hdr, sizeof(hdr));
    d->request_code = sl_load_u32(hdr + SL_REQ_OFF_CODE);
    size_t left = sl_header_size(hdr) - SL_HEADER_SIZE;
    uint8_t chunk[4096];
    d->request_len = SL_HEADER_SIZE;
    while (left > 0) {
        size_t n = left < 777 ? left : 777;
        tf_read_exact(d->fd, chunk, n);
        left -= n;
        d->request_len += n;
    }
    sl_buf_t reply = tf_reply(SL_OP_NON_REPLICATED, 0, NULL, 0);
    sl_store_u32(reply.data + SL_HDR_OFF_SIZE, SL_HEADER_SIZE + BIG_LEN);
    send(d->fd, reply.data, reply.len, MSG_NOSIGNAL);
    sl_buf_free(&reply);
    for (size_t sent = 0, i = 0; sent < BIG_LEN; i++) {
        size_t n = 1000 + (i % 7) * 333;
        if (n > BIG_LEN - sent)
            n = BIG_LEN - sent;
        for (size_t k = 0; k < n; k++)
            chunk[k] = (uint8_t)((sent + k) * 31u);
        if (send(d->fd, chunk, n, MSG_NOSIGNAL) != (ssize_t)n)
            break;
        sent += n;
    }
    return NULL;
}

static void test_large_frames_in_pieces(void **state)
{
    (void)state;
    sl_client_options_t o = {.frame_max = 8u << 20};
    tf_conn_t t = tf_open(&o);
    dribble_t d = {.fd = t.server};
    pthread_t thread;
    assert_int_equal(pthread_create(&thread, NULL, dribble_server, &d), 0);
    /* A 2 MiB raw request: partial sends while the server reads slowly. */
    uint8_t *body = calloc(1, 2u << 20);
    assert_non_null(body);
    sl_raw_reply_t raw;
    assert_int_equal(sl_client_request_raw(t.client, SL_OP_NON_REPLICATED, SL_CMD_GET_SNAPSHOT,
                                           body, 2u << 20, &raw),
                     0);
    assert_int_equal(pthread_join(thread, NULL), 0);
    assert_int_equal(d.request_len, SL_HEADER_SIZE + (2u << 20));
    assert_int_equal(d.request_code, SL_CMD_GET_SNAPSHOT);
    assert_int_equal(raw.body_len, BIG_LEN);
    for (size_t k = 0; k < BIG_LEN; k += 4099)
        assert_int_equal(raw.body[k], (uint8_t)(k * 31u));
    free(body);
    /* The large buffers are given back at the next call. */
    tf_queue(&t, tf_reply(SL_OP_NON_REPLICATED, 0, NULL, 0));
    assert_int_equal(sl_client_ping(t.client), 0);
    assert_true(t.client->rx.cap <= SL_CLIENT_KEEP_BYTES);
    assert_true(t.client->tx.cap <= SL_CLIENT_KEEP_BYTES);
    /* A request beyond the frame limit is refused before anything is sent. */
    uint8_t *huge = calloc(1, 8u << 20);
    assert_non_null(huge);
    assert_int_equal(sl_client_request_raw(t.client, SL_OP_NON_REPLICATED, 1, huge, 8u << 20, &raw),
                     -SL_ERR_COMMAND_LENGTH_ERROR);
    free(huge);
    assert_true(info_of(&t).connected);
    tf_request_t q = tf_take(&t); /* the ping */
    tf_request_free(&q);
    assert_true(tf_nothing_sent(&t));
    tf_close(&t);
}

/* A real TCP connection on loopback: the connect path, TCP_NODELAY, a
 * blocking socket, and one exchange with the test as the server. */
static void test_tcp_connect_and_ping(void **state)
{
    (void)state;
    int listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(listener >= 0);
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_equal(bind(listener, (struct sockaddr *)&addr, sizeof(addr)), 0);
    assert_int_equal(listen(listener, 4), 0);
    socklen_t addr_len = sizeof(addr);
    assert_int_equal(getsockname(listener, (struct sockaddr *)&addr, &addr_len), 0);
    uint16_t port = ntohs(addr.sin_port);

    const char *hosts[] = {"127.0.0.1", "localhost"};
    for (size_t i = 0; i < SL_ARRAY_LEN(hosts); i++) {
        sl_client_t *c = NULL;
        assert_int_equal(sl_client_connect(hosts[i], port, NULL, &c), 0);
        int server = accept(listener, NULL, NULL);
        assert_true(server >= 0);
        int nodelay = 0;
        socklen_t len = sizeof(nodelay);
        assert_int_equal(getsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &nodelay, &len), 0);
        assert_int_equal(nodelay, 1);
        assert_int_equal(fcntl(c->fd, F_GETFL) & O_NONBLOCK, 0);

        tf_conn_t t = {.server = server, .client = c};
        tf_queue(&t, tf_reply(SL_OP_NON_REPLICATED, 0, NULL, 0));
        assert_int_equal(sl_client_ping(c), 0);
        tf_request_t q = tf_take(&t);
        assert_int_equal(q.header.code, SL_CMD_PING);
        tf_request_free(&q);
        tf_close(&t);
    }
    close(listener);
}

static void test_connect_errors(void **state)
{
    (void)state;
    sl_client_t *c = NULL;
    assert_int_equal(sl_client_connect("", 8090, NULL, &c), -SL_ERR_INVALID_SERVER_ADDRESS);
    assert_null(c);
    assert_int_equal(sl_client_connect(NULL, 8090, NULL, &c), -SL_ERR_INVALID_SERVER_ADDRESS);
    /* Port 1 on loopback: nobody listens, the connection is refused. */
    assert_int_equal(sl_client_connect("127.0.0.1", 1, NULL, &c),
                     -SL_ERR_CANNOT_ESTABLISH_CONNECTION);
    assert_null(c);
    sl_client_close(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_login_sends_the_vector_body),
        cmocka_unit_test(test_relogin_logs_out_and_mints_a_new_id),
        cmocka_unit_test(test_numbering_through_calls),
        cmocka_unit_test(test_without_session),
        cmocka_unit_test(test_eviction_ends_the_session),
        cmocka_unit_test(test_login_failures),
        cmocka_unit_test(test_errors_that_keep_the_connection),
        cmocka_unit_test(test_errors_that_close_the_connection),
        cmocka_unit_test(test_raw_access),
        cmocka_unit_test(test_large_frames_in_pieces),
        cmocka_unit_test(test_tcp_connect_and_ping),
        cmocka_unit_test(test_connect_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
