/* Sessions and the request gate against the real sluiced, with raw frames:
 * ping before login, login and its evictions, pre-login rules, unknown
 * codes, bad headers, request checksums, fenced sessions, retried creates,
 * hostile bytes, restart and kill -9 durability. */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>
// clang-format off
#include <cmocka.h>
// clang-format on

#include "harness.h"
#include "raw.h"
#include "wire/cmd_streams.h"
#include "wire/cmd_users.h"
#include "wire/command.h"

static th_server_t srv;

static int start(void **state)
{
    (void)state;
    if (!th_start(&srv, NULL))
        return -1;
    return 0;
}

static int stop(void **state)
{
    (void)state;
    assert_int_equal(th_stop(&srv, SIGTERM), 0); /* a clean exit, status 0 */
    th_cleanup(&srv);
    return 0;
}

static sl_span_t create_stream_body(sl_buf_t *b, const char *name)
{
    sl_buf_reset(b);
    sl_create_stream_request_t q = {.name = sl_span_str(name)};
    assert_int_equal(sl_create_stream_request_encode(b, &q), 0);
    return sl_buf_span(b);
}

static void login_root(raw_session_t *r)
{
    raw_reply_t rep = raw_login(r, "iggy", "iggy");
    assert_false(rep.evicted);
    assert_int_equal(rep.status, 0);
    assert_int_equal(rep.result, 0);
    assert_true(r->session > 0);
}

/* Counts the streams GetStreams lists. */
static uint32_t stream_count(raw_session_t *r)
{
    raw_reply_t rep = raw_read(r, SL_CMD_GET_STREAMS, sl_span(NULL, 0));
    assert_int_equal(rep.status, 0);
    sl_arena_t arena;
    sl_arena_init(&arena, 4096, 1 << 20);
    sl_get_streams_reply_t list;
    assert_int_equal(sl_get_streams_reply_decode(rep.payload, &arena, &list), 0);
    uint32_t n = list.count;
    sl_arena_free(&arena);
    return n;
}

static void test_ping_vector(void **state)
{
    (void)state;
    int fd = th_connect(srv.port);
    /* vectors/a_ping_request.hex, built here from its listed fields. */
    sl_request_header_t h = {.size = 256,
                             .client = {0x0706050403020100ull, 0x0f0e0d0c0b0a0908ull},
                             .request = 1,
                             .operation = SL_OP_NON_REPLICATED,
                             .code = 1};
    uint8_t frame[256], reply[4096];
    sl_request_header_encode(frame, &h);
    assert_true(th_send_all(fd, frame, sizeof(frame)));
    assert_int_equal(th_read_frame(fd, reply, sizeof(reply), 5000), 256);
    sl_reply_header_t r;
    assert_int_equal(sl_reply_header_decode(reply, 1 << 20, &r), 0);
    assert_int_equal(r.status, 0);
    assert_int_equal(r.operation, SL_OP_NON_REPLICATED);
    assert_int_equal(r.request, 1);
    assert_true(sl_u128_eq(r.client, h.client));
    close(fd);
}

static void test_login_and_prelogin_rules(void **state)
{
    (void)state;
    raw_session_t r;
    raw_open(&r, srv.port);
    /* Before login: reads are 40 with commit 0, replicated ops evict (1). */
    raw_reply_t rep = raw_call(&r, SL_OP_NON_REPLICATED, SL_CMD_GET_STREAMS, 1, 0,
                               sl_span(NULL, 0), false);
    assert_int_equal(rep.status, SL_ERR_UNAUTHENTICATED);
    assert_int_equal(rep.header.commit, 0);
    sl_buf_t b;
    sl_buf_init(&b, 0);
    rep = raw_call(&r, SL_OP_CREATE_STREAM, 0, 1, 1, create_stream_body(&b, "x"), true);
    assert_true(rep.evicted);
    assert_int_equal(rep.reason, SL_EVICT_NO_SESSION);
    /* Logout when not logged in: empty success. */
    rep = raw_call(&r, SL_OP_LOGOUT, 0, 1, 1, sl_span(NULL, 0), true);
    assert_false(rep.evicted);
    assert_int_equal(rep.status, 0);
    assert_int_equal(rep.body.len, 0);
    /* Legacy login codes: eviction 15, logged in or not. */
    rep = raw_call(&r, SL_OP_NON_REPLICATED, SL_CMD_LOGIN_USER, 1, 0, sl_span(NULL, 0), false);
    assert_true(rep.evicted);
    assert_int_equal(rep.reason, SL_EVICT_MALFORMED_LOGIN);
    rep = raw_call(&r, SL_OP_NON_REPLICATED, SL_CMD_LOGIN_WITH_PERSONAL_ACCESS_TOKEN, 1, 0,
                   sl_span(NULL, 0), false);
    assert_int_equal(rep.reason, SL_EVICT_MALFORMED_LOGIN);

    login_root(&r);
    assert_int_equal(r.user_id, 0);
    rep = raw_read(&r, SL_CMD_GET_STREAMS, sl_span(NULL, 0));
    assert_int_equal(rep.status, 0);
    /* Logging in again on a bound connection repeats the session. */
    uint64_t session = r.session;
    rep = raw_login(&r, "iggy", "iggy");
    assert_int_equal(rep.result, 0);
    assert_int_equal(r.session, session);
    sl_buf_free(&b);
    raw_close(&r);
}

static void test_login_vector_bytes(void **state)
{
    (void)state;
    /* vectors/b_login_register_request.hex: iggy/iggy with a checksum. */
    int fd = th_connect(srv.port);
    static const uint8_t body[30] = {0x00, 0x2c, 0x00, 0x00, 0x05, 'c', '-', 's', 'd', 'k',
                                     0x05, '0',  '.',  '1',  '.',  '0', 0x04, 'i', 'g', 'g',
                                     'y',  0x04, 'i',  'g',  'g',  'y', 0,    0,   0,   0};
    sl_request_header_t h = {.size = 286,
                             .client = {0x0706050403020100ull, 0x0f0e0d0c0b0a0908ull},
                             .request_checksum = {0x9bdab50046817879ull, 0},
                             .operation = SL_OP_REGISTER};
    uint8_t frame[286], reply[4096];
    sl_request_header_encode(frame, &h);
    memcpy(frame + 256, body, sizeof(body));
    assert_true(th_send_all(fd, frame, sizeof(frame)));
    int n = th_read_frame(fd, reply, sizeof(reply), 10000);
    assert_true(n > 256);
    sl_reply_header_t r;
    assert_int_equal(sl_reply_header_decode(reply, 1 << 20, &r), 0);
    assert_int_equal(r.operation, SL_OP_REGISTER);
    assert_int_equal(r.request, 0);
    /* count 0, user 0, session, protocol 0x2C00, version name */
    assert_int_equal(sl_load_u32(reply + 256), 0);
    assert_int_equal(sl_load_u32(reply + 260), 0);
    assert_true(sl_load_u64(reply + 264) > 0);
    assert_int_equal(sl_load_u32(reply + 272), SL_PROTOCOL_VERSION);
    assert_int_equal(r.op, sl_load_u64(reply + 264));
    close(fd);
}

static void test_login_evictions(void **state)
{
    (void)state;
    raw_session_t r;
    raw_open(&r, srv.port);
    raw_reply_t rep = raw_login(&r, "iggy", "wrong");
    assert_true(rep.evicted);
    assert_int_equal(rep.reason, SL_EVICT_INVALID_CREDENTIALS);
    rep = raw_login(&r, "nobody", "secret");
    assert_int_equal(rep.reason, SL_EVICT_INVALID_CREDENTIALS);
    rep = raw_login(&r, "iggy", "ig"); /* password shorter than 3 bytes */
    assert_int_equal(rep.reason, SL_EVICT_INVALID_CREDENTIALS);

    /* A protocol outside the window: 14 with the window in the header. */
    sl_buf_t b;
    sl_buf_init(&b, 0);
    sl_login_register_request_t q = {
        .version = {0x3000, sl_span_str("t"), sl_span_str("1")},
        .login = {sl_span_str("iggy"), sl_span_str("iggy"), sl_span(NULL, 0)},
    };
    assert_int_equal(sl_login_register_request_encode(&b, &q), 0);
    rep = raw_call(&r, SL_OP_REGISTER, 0, 0, 0, sl_buf_span(&b), true);
    assert_true(rep.evicted);
    assert_int_equal(rep.reason, SL_EVICT_INCOMPATIBLE_PROTOCOL);
    assert_int_equal(sl_load_u32(r.frame + SL_EVI_OFF_VERSION_MAX), SL_PROTOCOL_VERSION);
    assert_int_equal(sl_load_u32(r.frame + SL_EVI_OFF_VERSION_MIN), SL_PROTOCOL_VERSION_MIN);
    /* A body without a version prefix: 15. */
    uint8_t junk[3] = {1, 2, 3};
    rep = raw_call(&r, SL_OP_REGISTER, 0, 0, 0, sl_span(junk, 3), false);
    assert_int_equal(rep.reason, SL_EVICT_MALFORMED_LOGIN);
    /* The connection is still usable: log in properly. */
    login_root(&r);
    sl_buf_free(&b);
    raw_close(&r);
}

static void test_unknown_codes_and_checksums(void **state)
{
    (void)state;
    raw_session_t r;
    raw_open(&r, srv.port);
    login_root(&r);
    raw_reply_t rep = raw_read(&r, 999, sl_span(NULL, 0));
    assert_int_equal(rep.status, SL_ERR_INVALID_COMMAND);
    rep = raw_read(&r, SL_CMD_CREATE_STREAM, sl_span(NULL, 0)); /* replicated code as op 2 */
    assert_int_equal(rep.status, SL_ERR_FEATURE_UNAVAILABLE);
    rep = raw_read(&r, SL_CMD_FLUSH_UNSAVED_BUFFER, sl_span(NULL, 0));
    assert_int_equal(rep.status, SL_ERR_FEATURE_UNAVAILABLE);
    rep = raw_read(&r, SL_CMD_LOGIN_REGISTER, sl_span(NULL, 0)); /* empty success */
    assert_int_equal(rep.status, 0);
    assert_int_equal(rep.body.len, 0);
    rep = raw_read(&r, SL_CMD_PING, sl_span(NULL, 0));
    assert_int_equal(rep.status, 0);

    /* A stamp that does not match the body: status 4, nothing applied. */
    sl_buf_t b;
    sl_buf_init(&b, 0);
    uint32_t before = stream_count(&r);
    sl_span_t body = create_stream_body(&b, "stamp-test");
    sl_request_header_t h = {.size = (uint32_t)(256 + body.len),
                             .client = r.client,
                             .request_checksum = {12345, 0},
                             .request = ++r.request,
                             .operation = SL_OP_CREATE_STREAM,
                             .session = r.session};
    uint8_t hdr[256];
    sl_request_header_encode(hdr, &h);
    assert_true(th_send_all(r.fd, hdr, 256) && th_send_all(r.fd, body.ptr, body.len));
    assert_true(th_read_frame(r.fd, r.frame, sizeof(r.frame), 5000) == 256);
    assert_int_equal(sl_load_u32(r.frame + SL_REP_OFF_STATUS), SL_ERR_INVALID_FORMAT);
    assert_int_equal(stream_count(&r), before);
    /* An undecodable metadata body is status 3 (the reference crashes on
     * some of these). */
    uint8_t bad[2] = {2, 1};
    rep = raw_meta(&r, SL_OP_DELETE_STREAM, sl_span(bad, 2));
    assert_int_equal(rep.status, SL_ERR_INVALID_COMMAND);
    rep = raw_meta(&r, SL_OP_PURGE_TOPIC, sl_span(NULL, 0));
    assert_int_equal(rep.status, SL_ERR_INVALID_COMMAND);
    /* Internal operations from a client: eviction 4, 68 included. */
    rep = raw_meta(&r, SL_OP_TRUNCATE_PARTITION, sl_span(bad, 2));
    assert_true(rep.evicted);
    assert_int_equal(rep.reason, SL_EVICT_INVALID_REQUEST_OPERATION);
    sl_buf_free(&b);
    raw_close(&r);
}

static void test_bad_headers(void **state)
{
    (void)state;
    raw_session_t ok;
    raw_open(&ok, srv.port);
    login_root(&ok);
    uint8_t hdr[256];
    /* size below 256: the connection is closed */
    int fd = th_connect(srv.port);
    sl_request_header_t h = {.size = 100, .client = {1, 0}, .operation = 2, .code = 1};
    sl_request_header_encode(hdr, &h);
    assert_true(th_send_all(fd, hdr, 256));
    assert_true(th_wait_closed(fd, 5000));
    close(fd);
    /* command byte above 29 */
    fd = th_connect(srv.port);
    h.size = 256;
    sl_request_header_encode(hdr, &h);
    hdr[60] = 200;
    assert_true(th_send_all(fd, hdr, 256));
    assert_true(th_wait_closed(fd, 5000));
    close(fd);
    /* an undeclared operation: eviction 4, connection kept */
    raw_session_t r;
    raw_open(&r, srv.port);
    raw_reply_t rep = raw_call(&r, 150, 0, 1, 1, sl_span(NULL, 0), false);
    assert_true(rep.evicted);
    assert_int_equal(rep.reason, SL_EVICT_INVALID_REQUEST_OPERATION);
    rep = raw_call(&r, SL_OP_NON_REPLICATED, SL_CMD_PING, 0, 0, sl_span(NULL, 0), false);
    assert_int_equal(rep.status, 0);
    raw_close(&r);
    /* the other client never noticed */
    assert_int_equal(raw_read(&ok, SL_CMD_PING, sl_span(NULL, 0)).status, 0);
    raw_close(&ok);
}

static void test_hostile_bytes(void **state)
{
    (void)state;
    raw_session_t ok;
    raw_open(&ok, srv.port);
    login_root(&ok);
    uint8_t junk[4096];
    for (int round = 0; round < 50; round++) {
        int fd = th_connect(srv.port);
        if (getrandom(junk, sizeof(junk), 0) != sizeof(junk))
            abort();
        size_t n = 1 + (size_t)(junk[0] | junk[1] << 8) % sizeof(junk);
        if (round % 2 == 0) {
            /* A plausible header with random fields and a small size. */
            sl_store_u32(junk + 48, (uint32_t)(256 + junk[2]));
            junk[60] = SL_COMMAND_REQUEST;
        }
        th_send_all(fd, junk, n);
        close(fd);
    }
    assert_true(th_alive(&srv));
    assert_int_equal(raw_read(&ok, SL_CMD_PING, sl_span(NULL, 0)).status, 0);
    raw_close(&ok);
}

static void test_retried_create_applied_once(void **state)
{
    (void)state;
    raw_session_t r;
    raw_open(&r, srv.port);
    login_root(&r);
    sl_buf_t b;
    sl_buf_init(&b, 0);
    uint32_t before = stream_count(&r);
    sl_span_t body = create_stream_body(&b, "retried");
    raw_reply_t first = raw_meta(&r, SL_OP_CREATE_STREAM, body);
    assert_int_equal(first.status, 0);
    assert_int_equal(first.result, 0);
    uint8_t saved[4096];
    size_t saved_len = (size_t)r.frame_len;
    memcpy(saved, r.frame, saved_len);
    /* The same request number and bytes again: the cached reply, byte for
     * byte, and still one stream. */
    raw_reply_t again = raw_call(&r, SL_OP_CREATE_STREAM, 0, r.request, r.session, body, true);
    assert_int_equal(again.status, 0);
    assert_int_equal((size_t)r.frame_len, saved_len);
    assert_memory_equal(r.frame, saved, saved_len);
    assert_int_equal(stream_count(&r), before + 1);
    /* A new number with the same name: committed rejection 1012. */
    raw_reply_t dup = raw_meta(&r, SL_OP_CREATE_STREAM, body);
    assert_int_equal(dup.status, 0);
    assert_int_equal(dup.result, SL_ERR_STREAM_NAME_ALREADY_EXISTS);
    sl_buf_free(&b);
    raw_close(&r);
}

static void test_fenced_session(void **state)
{
    (void)state;
    raw_session_t a, b;
    raw_open(&a, srv.port);
    login_root(&a);
    raw_open(&b, srv.port);
    b.client = a.client; /* deliberately reuse the client id: a rebind */
    login_root(&b);
    assert_true(b.session > a.session);
    sl_buf_t buf;
    sl_buf_init(&buf, 0);
    /* The old holder is unbound: its next replicated request is evicted. */
    raw_reply_t rep = raw_meta(&a, SL_OP_CREATE_STREAM, create_stream_body(&buf, "fenced"));
    assert_true(rep.evicted);
    assert_true(rep.reason == SL_EVICT_NO_SESSION || rep.reason == SL_EVICT_SESSION_TOO_LOW);
    /* The new holder works and keeps the watermark. */
    b.request = a.request + 1;
    rep = raw_meta(&b, SL_OP_CREATE_STREAM, create_stream_body(&buf, "fenced-ok"));
    assert_int_equal(rep.status, 0);
    assert_int_equal(rep.result, 0);
    sl_buf_free(&buf);
    raw_close(&a);
    raw_close(&b);
}

static void test_restart_and_kill9(void **state)
{
    (void)state;
    raw_session_t r;
    raw_open(&r, srv.port);
    login_root(&r);
    sl_buf_t b;
    sl_buf_init(&b, 0);
    assert_int_equal(raw_meta(&r, SL_OP_CREATE_STREAM, create_stream_body(&b, "durable")).result,
                     0);
    uint32_t count = stream_count(&r);
    raw_close(&r);

    /* Clean restart. */
    assert_int_equal(th_stop(&srv, SIGTERM), 0);
    th_options_t opt = {.data_dir = srv.data_dir};
    assert_true(th_start(&srv, &opt));
    raw_open(&r, srv.port);
    login_root(&r);
    assert_int_equal(stream_count(&r), count);

    /* kill -9 right after an acknowledged create. */
    assert_int_equal(raw_meta(&r, SL_OP_CREATE_STREAM, create_stream_body(&b, "after-kill")).result,
                     0);
    th_stop(&srv, SIGKILL);
    raw_close(&r);
    assert_true(th_start(&srv, &opt));
    raw_open(&r, srv.port);
    login_root(&r);
    assert_int_equal(stream_count(&r), count + 1);
    sl_get_stream_request_t q = {.stream_id = sl_ident_name("after-kill")};
    sl_buf_reset(&b);
    assert_int_equal(sl_get_stream_request_encode(&b, &q), 0);
    raw_reply_t rep = raw_read(&r, SL_CMD_GET_STREAM, sl_buf_span(&b));
    assert_int_equal(rep.status, 0);
    assert_true(rep.payload.len > 0);
    sl_buf_free(&b);
    raw_close(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ping_vector),
        cmocka_unit_test(test_login_and_prelogin_rules),
        cmocka_unit_test(test_login_vector_bytes),
        cmocka_unit_test(test_login_evictions),
        cmocka_unit_test(test_unknown_codes_and_checksums),
        cmocka_unit_test(test_bad_headers),
        cmocka_unit_test(test_hostile_bytes),
        cmocka_unit_test(test_retried_create_applied_once),
        cmocka_unit_test(test_fenced_session),
        cmocka_unit_test(test_restart_and_kill9),
    };
    return cmocka_run_group_tests(tests, start, stop);
}
