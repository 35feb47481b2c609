/* Module tests of libsluice's connection care (src/client/care.c) over
 * socketpairs: the backoff schedule, replays of transient refusals with the
 * same request number, reconnects through a substituted dialer (each
 * "connection" is a fresh socketpair whose server end the test plays),
 * re-logins after lost sessions, and the heartbeat of sl_client_tick. The
 * waits between attempts go to a recorder instead of sleeping. */
#include "test_client_fixtures.h"

#include <poll.h>
#include <pthread.h>
#include <time.h>

#include "wire/command.h"

/* --- a dialer of socketpairs and a sleep recorder ----------------------------------- */

typedef struct dialer {
    int clients[4]; /* the ends handed to the client, in order */
    int servers[4]; /* the test's ends */
    int count;
    int next;
    int fail_first; /* dials that fail before one works */
    int dials;
} dialer_t;

static int fake_dial(void *ctx, int *fd)
{
    dialer_t *d = ctx;
    d->dials++;
    if (d->fail_first > 0) {
        d->fail_first--;
        return -SL_ERR_CANNOT_ESTABLISH_CONNECTION;
    }
    if (d->next >= d->count)
        return -SL_ERR_CANNOT_ESTABLISH_CONNECTION;
    *fd = d->clients[d->next];
    d->clients[d->next++] = -1; /* the client owns it now */
    return 0;
}

/* Prepares the next connection; returns a handle for its server end. */
static tf_conn_t dialer_add(dialer_t *d, sl_client_t *client)
{
    int sv[2];
    assert_true(d->count < 4);
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    d->clients[d->count] = sv[0];
    d->servers[d->count] = sv[1];
    d->count++;
    return (tf_conn_t){.server = sv[1], .client = client};
}

static void dialer_close(dialer_t *d)
{
    for (int i = 0; i < d->count; i++) {
        if (d->clients[i] >= 0)
            close(d->clients[i]);
        if (d->servers[i] >= 0)
            close(d->servers[i]);
    }
}

typedef struct sleeper {
    uint32_t ms[16];
    int count;
} sleeper_t;

static void fake_sleep(void *ctx, uint32_t ms)
{
    sleeper_t *s = ctx;
    assert_true(s->count < 16);
    s->ms[s->count++] = ms;
}

typedef struct rig {
    tf_conn_t t;
    dialer_t dialer;
    sleeper_t sleeper;
} rig_t;

/* A client with the given care options, wired to the fakes. */
static void rig_open(rig_t *r, const sl_client_options_t *o)
{
    *r = (rig_t){.t = tf_open(o)};
    r->t.client->care.dial = fake_dial;
    r->t.client->care.dial_ctx = &r->dialer;
    r->t.client->care.sleep = fake_sleep;
    r->t.client->care.sleep_ctx = &r->sleeper;
}

static void rig_close(rig_t *r)
{
    tf_close(&r->t);
    dialer_close(&r->dialer);
}

static sl_session_info_t info_of(const rig_t *r)
{
    sl_session_info_t info;
    sl_client_session_info(r->t.client, &info);
    return info;
}

/* The client's old connection is gone: the server end saw no request
 * (end of stream, or a reset when the client left frames unread). */
static void assert_closed_quietly(int server)
{
    uint8_t byte;
    ssize_t r = recv(server, &byte, 1, 0);
    assert_true(r == 0 || (r < 0 && errno == ECONNRESET));
}

/* Frames the server end writes only once a request has arrived: an
 * eviction queued before the call would read as one pushed while idle. */
typedef struct late {
    int fd;
    sl_buf_t frames[4];
    int count;
    pthread_t thread;
} late_t;

static void *late_run(void *arg)
{
    late_t *l = arg;
    struct pollfd p = {.fd = l->fd, .events = POLLIN};
    if (poll(&p, 1, 10000) == 1)
        for (int i = 0; i < l->count; i++)
            if (send(l->fd, l->frames[i].data, l->frames[i].len, MSG_NOSIGNAL) < 0)
                break;
    return NULL;
}

static void late_start(late_t *l, const tf_conn_t *t)
{
    l->fd = t->server;
    assert_int_equal(pthread_create(&l->thread, NULL, late_run, l), 0);
}

static void late_join(late_t *l)
{
    pthread_join(l->thread, NULL);
    for (int i = 0; i < l->count; i++)
        sl_buf_free(&l->frames[i]);
}

/* Takes one request and checks its operation (and code for reads). */
static tf_request_t take_op(tf_conn_t *t, uint8_t operation, uint32_t code)
{
    tf_request_t q = tf_take(t);
    assert_int_equal(q.header.operation, operation);
    if (operation == SL_OP_NON_REPLICATED)
        assert_int_equal(q.header.code, code);
    return q;
}

static void assert_login_body(const tf_request_t *q, const char *username, const char *password)
{
    assert_int_equal(q->header.operation, SL_OP_REGISTER);
    sl_login_register_request_t login;
    assert_int_equal(sl_login_register_request_decode(tf_body(q), &login), 0);
    assert_span_str(login.login.username, username);
    assert_span_str(login.login.password, password);
}

static sl_buf_t streams_reply(void)
{
    return tf_reply_hex(SL_OP_NON_REPLICATED, HEX_GET_STREAMS);
}

/* A CreateStream success payload: stream 0 "orders" without topics. */
static sl_buf_t create_stream_reply(void)
{
    size_t len;
    uint8_t *body = tu_hex(HEX_GET_STREAMS, &len);
    body[12] = 0;
    sl_buf_t b = tf_reply_ok(SL_OP_CREATE_STREAM, body, len);
    free(body);
    return b;
}

/* --- backoff --------------------------------------------------------------------------- */

static void test_backoff_schedule(void **state)
{
    (void)state;
    const uint32_t randoms[] = {0, 1, 7, 12345, UINT32_MAX};
    for (uint32_t attempt = 0; attempt < 40; attempt++) {
        uint64_t d = 100ull << (attempt < 20 ? attempt : 20);
        if (d > 5000)
            d = 5000;
        for (size_t i = 0; i < SL_ARRAY_LEN(randoms); i++) {
            uint32_t ms = sl_client_backoff_ms(100, 5000, attempt, randoms[i]);
            assert_true(ms >= d - d / 2 && ms <= d);
        }
    }
    /* The ends of the jitter range, and no overflow near the limits. */
    assert_int_equal(sl_client_backoff_ms(100, 5000, 0, 0), 50);
    assert_int_equal(sl_client_backoff_ms(100, 5000, 0, 50), 100);
    assert_int_equal(sl_client_backoff_ms(100, 5000, 3, 0), 400);
    assert_int_equal(sl_client_backoff_ms(100, 5000, 31, 2500), 5000);
    assert_int_equal(sl_client_backoff_ms(UINT32_MAX, UINT32_MAX, 100, 0),
                     UINT32_MAX - UINT32_MAX / 2);
    assert_int_equal(sl_client_backoff_ms(1, 1, 5, 0), 1);
    assert_int_equal(sl_client_backoff_ms(0, 0, 5, 9), 0);
}

/* --- transient refusals ----------------------------------------------------------------- */

static void test_57_is_replayed_with_the_same_number(void **state)
{
    (void)state;
    rig_t r;
    sl_client_options_t o = {.transient_retries = 3, .transient_delay_ms = 4};
    rig_open(&r, &o);
    tf_login(&r.t);
    tf_queue(&r.t, tf_reply_result(SL_OP_CREATE_STREAM, SL_ERR_TRANSIENT_NOT_COMMITTED));
    tf_queue(&r.t, create_stream_reply());
    assert_int_equal(sl_client_create_stream(r.t.client, "orders", NULL), 0);
    tf_request_t first = take_op(&r.t, SL_OP_CREATE_STREAM, 0);
    tf_request_t again = take_op(&r.t, SL_OP_CREATE_STREAM, 0);
    /* Byte for byte the same request: client, session, number, checksum. */
    assert_bytes_equal(first.raw, SL_HEADER_SIZE, again.raw, SL_HEADER_SIZE);
    assert_bytes_equal(first.body, first.body_len, again.body, again.body_len);
    assert_int_equal(first.header.request, 1);
    assert_int_equal(r.sleeper.count, 1);
    assert_true(r.sleeper.ms[0] >= 2 && r.sleeper.ms[0] <= 4);
    assert_int_equal(info_of(&r).replays, 1);
    assert_int_equal(info_of(&r).request, 2);
    tf_request_free(&first);
    tf_request_free(&again);
    rig_close(&r);
}

static void test_replays_are_bounded(void **state)
{
    (void)state;
    rig_t r;
    sl_client_options_t o = {.transient_retries = 2, .transient_delay_ms = 4};
    rig_open(&r, &o);
    tf_login(&r.t);
    for (int i = 0; i < 3; i++)
        tf_queue(&r.t, tf_reply_result(SL_OP_DELETE_STREAM, SL_ERR_TRANSIENT_NOT_ACCEPTED));
    assert_int_equal(sl_client_delete_stream(r.t.client, sl_id_num(1)),
                     -SL_ERR_TRANSIENT_NOT_ACCEPTED);
    for (int i = 0; i < 3; i++) {
        tf_request_t q = take_op(&r.t, SL_OP_DELETE_STREAM, 0);
        assert_int_equal(q.header.request, 1);
        tf_request_free(&q);
    }
    assert_true(tf_nothing_sent(&r.t));
    /* Two waits, the second from a doubled range. */
    assert_int_equal(r.sleeper.count, 2);
    assert_true(r.sleeper.ms[0] >= 2 && r.sleeper.ms[0] <= 4);
    assert_true(r.sleeper.ms[1] >= 4 && r.sleeper.ms[1] <= 8);
    assert_int_equal(info_of(&r).replays, 2);
    rig_close(&r);
}

static void test_partition_ops_replay_58_only(void **state)
{
    (void)state;
    rig_t r;
    sl_client_options_t o = {.transient_retries = 3};
    rig_open(&r, &o);
    tf_login(&r.t);
    sl_send_message_t m = {.payload = "x", .payload_len = 1};
    /* 58: nothing was stored, so the batch goes again. */
    tf_queue(&r.t, tf_reply(SL_OP_SEND_MESSAGES, SL_ERR_TRANSIENT_NOT_ACCEPTED, NULL, 0));
    tf_queue(&r.t, tf_reply(SL_OP_SEND_MESSAGES, 0, "\0\0\0\0", 4));
    assert_int_equal(sl_client_send_messages(r.t.client, sl_id_num(0), sl_id_num(0),
                                             sl_partitioning_balanced(), &m, 1, NULL),
                     0);
    tf_request_t a = take_op(&r.t, SL_OP_SEND_MESSAGES, 0);
    tf_request_t b = take_op(&r.t, SL_OP_SEND_MESSAGES, 0);
    assert_bytes_equal(a.raw, SL_HEADER_SIZE, b.raw, SL_HEADER_SIZE);
    assert_bytes_equal(a.body, a.body_len, b.body, b.body_len);
    tf_request_free(&a);
    tf_request_free(&b);
    /* 57: the partition plane does not deduplicate; a replay could store
     * the batch twice, so the refusal is returned. */
    tf_queue(&r.t, tf_reply(SL_OP_SEND_MESSAGES, SL_ERR_TRANSIENT_NOT_COMMITTED, NULL, 0));
    assert_int_equal(sl_client_send_messages(r.t.client, sl_id_num(0), sl_id_num(0),
                                             sl_partitioning_balanced(), &m, 1, NULL),
                     -SL_ERR_TRANSIENT_NOT_COMMITTED);
    a = take_op(&r.t, SL_OP_SEND_MESSAGES, 0);
    tf_request_free(&a);
    assert_true(tf_nothing_sent(&r.t));
    rig_close(&r);
}

static void test_logout_and_login_replay_57(void **state)
{
    (void)state;
    rig_t r;
    sl_client_options_t o = {.transient_retries = 1};
    rig_open(&r, &o);
    /* The login's Register, absorbed while its twin is in flight. */
    tf_queue(&r.t, tf_reply_result(SL_OP_REGISTER, SL_ERR_TRANSIENT_NOT_COMMITTED));
    tf_queue(&r.t, tf_reply_hex(SL_OP_REGISTER, HEX_LOGIN_BODY));
    assert_int_equal(sl_client_login(r.t.client, "iggy", "iggy", NULL), 0);
    tf_request_t a = take_op(&r.t, SL_OP_REGISTER, 0);
    tf_request_t b = take_op(&r.t, SL_OP_REGISTER, 0);
    assert_bytes_equal(a.raw, SL_HEADER_SIZE, b.raw, SL_HEADER_SIZE); /* same client id */
    tf_request_free(&a);
    tf_request_free(&b);
    /* Logout answers with a status (lifecycle.md 7). */
    tf_queue(&r.t, tf_reply(SL_OP_LOGOUT, SL_ERR_TRANSIENT_NOT_COMMITTED, NULL, 0));
    tf_queue(&r.t, tf_reply(SL_OP_LOGOUT, 0, NULL, 0));
    assert_int_equal(sl_client_logout(r.t.client), 0);
    a = take_op(&r.t, SL_OP_LOGOUT, 0);
    b = take_op(&r.t, SL_OP_LOGOUT, 0);
    assert_int_equal(a.header.request, b.header.request);
    assert_false(info_of(&r).logged_in);
    tf_request_free(&a);
    tf_request_free(&b);
    rig_close(&r);
}

static void test_without_care_nothing_is_replayed(void **state)
{
    (void)state;
    rig_t r;
    rig_open(&r, NULL);
    tf_login(&r.t);
    tf_queue(&r.t, tf_reply_result(SL_OP_CREATE_STREAM, SL_ERR_TRANSIENT_NOT_COMMITTED));
    assert_int_equal(sl_client_create_stream(r.t.client, "orders", NULL),
                     -SL_ERR_TRANSIENT_NOT_COMMITTED);
    tf_request_t q = take_op(&r.t, SL_OP_CREATE_STREAM, 0);
    tf_request_free(&q);
    assert_true(tf_nothing_sent(&r.t));
    /* A closed connection stays closed. */
    close(r.t.server);
    r.t.server = -1;
    const sl_stream_t *s;
    uint32_t n;
    assert_int_equal(sl_client_get_streams(r.t.client, &s, &n), -SL_ERR_DISCONNECTED); /* EPIPE */
    assert_int_equal(sl_client_get_streams(r.t.client, &s, &n), -SL_ERR_NOT_CONNECTED);
    assert_int_equal(sl_client_tick(r.t.client), -SL_ERR_NOT_CONNECTED);
    assert_int_equal(r.dialer.dials, 0);
    rig_close(&r);
}

/* --- reconnects ---------------------------------------------------------------------------- */

static void test_reconnect_and_relogin_between_calls(void **state)
{
    (void)state;
    rig_t r;
    sl_client_options_t o = {.reconnect_attempts = 3};
    rig_open(&r, &o);
    tf_login(&r.t);
    sl_session_info_t before = info_of(&r);
    tf_conn_t next = dialer_add(&r.dialer, r.t.client);
    tf_queue(&next, tf_reply_hex(SL_OP_REGISTER, HEX_LOGIN_BODY));
    tf_queue(&next, streams_reply());
    close(r.t.server); /* the server went away while the client was idle */
    r.t.server = -1;

    const sl_stream_t *s;
    uint32_t n;
    assert_int_equal(sl_client_get_streams(r.t.client, &s, &n), 0);
    assert_int_equal(n, 1);
    assert_string_equal(s[0].name, "orders");
    tf_request_t login = tf_take(&next);
    assert_login_body(&login, "iggy", "iggy");
    tf_request_t q = take_op(&next, SL_OP_NON_REPLICATED, SL_CMD_GET_STREAMS);
    /* A fresh client id, logged in, counter back at 1. */
    assert_true(sl_u128_eq(q.header.client, login.header.client));
    assert_false(q.header.client.lo == before.client_id_lo &&
                 q.header.client.hi == before.client_id_hi);
    assert_int_equal(q.header.session, 5);
    sl_session_info_t after = info_of(&r);
    assert_int_equal(after.reconnects, 1);
    assert_int_equal(after.relogins, 1);
    assert_true(after.logged_in);
    assert_int_equal(r.dialer.dials, 1);
    assert_int_equal(r.sleeper.count, 0); /* the first dial is immediate */
    tf_request_free(&login);
    tf_request_free(&q);
    rig_close(&r);
}

static void test_dials_back_off_and_give_up(void **state)
{
    (void)state;
    rig_t r;
    sl_client_options_t o = {.reconnect_attempts = 3, .reconnect_delay_ms = 10};
    rig_open(&r, &o);
    tf_login(&r.t);
    close(r.t.server);
    r.t.server = -1;
    /* Two refused dials, then one that works. */
    r.dialer.fail_first = 2;
    tf_conn_t next = dialer_add(&r.dialer, r.t.client);
    tf_queue(&next, tf_reply_hex(SL_OP_REGISTER, HEX_LOGIN_BODY));
    tf_queue(&next, tf_reply(SL_OP_NON_REPLICATED, 0, NULL, 0));
    assert_int_equal(sl_client_ping(r.t.client), 0);
    assert_int_equal(r.dialer.dials, 3);
    assert_int_equal(r.sleeper.count, 2);
    assert_true(r.sleeper.ms[0] >= 5 && r.sleeper.ms[0] <= 10);
    assert_true(r.sleeper.ms[1] >= 10 && r.sleeper.ms[1] <= 20);
    tf_request_t a = take_op(&next, SL_OP_REGISTER, 0);
    tf_request_t b = take_op(&next, SL_OP_NON_REPLICATED, SL_CMD_PING);
    tf_request_free(&a);
    tf_request_free(&b);

    /* Now every dial fails: the call reports it after the attempts. */
    close(next.server);
    r.dialer.servers[0] = -1;
    r.dialer.fail_first = 100;
    r.dialer.dials = 0;
    r.sleeper.count = 0;
    assert_int_equal(sl_client_ping(r.t.client), -SL_ERR_CANNOT_ESTABLISH_CONNECTION);
    assert_int_equal(r.dialer.dials, 3);
    assert_int_equal(r.sleeper.count, 2);
    assert_false(info_of(&r).connected);
    assert_int_equal(sl_client_tick(r.t.client), -SL_ERR_CANNOT_ESTABLISH_CONNECTION);
    rig_close(&r);
}

static void test_failure_in_flight(void **state)
{
    (void)state;
    rig_t r;
    sl_client_options_t o = {.reconnect_attempts = 2, .request_timeout_ms = 100};
    rig_open(&r, &o);
    tf_login(&r.t);
    /* A command that changes state timed out: it may have been applied,
     * so it is not sent again; the connection is closed. */
    assert_int_equal(sl_client_create_stream(r.t.client, "orders", NULL), -SL_ERR_TASK_TIMEOUT);
    tf_request_t q = take_op(&r.t, SL_OP_CREATE_STREAM, 0);
    tf_request_free(&q);
    assert_int_equal(r.dialer.dials, 0);
    assert_false(info_of(&r).connected);

    /* The next call dials first; its read then times out on that
     * connection too and is re-issued on a third one. */
    tf_conn_t second = dialer_add(&r.dialer, r.t.client);
    tf_conn_t third = dialer_add(&r.dialer, r.t.client);
    tf_queue(&second, tf_reply_hex(SL_OP_REGISTER, HEX_LOGIN_BODY));
    tf_queue(&third, tf_reply_hex(SL_OP_REGISTER, HEX_LOGIN_BODY));
    tf_queue(&third, streams_reply());
    const sl_stream_t *s;
    uint32_t n;
    assert_int_equal(sl_client_get_streams(r.t.client, &s, &n), 0);
    assert_int_equal(n, 1);
    tf_request_t a = take_op(&second, SL_OP_REGISTER, 0);
    tf_request_t b = take_op(&second, SL_OP_NON_REPLICATED, SL_CMD_GET_STREAMS);
    tf_request_t c = take_op(&third, SL_OP_REGISTER, 0);
    tf_request_t d = take_op(&third, SL_OP_NON_REPLICATED, SL_CMD_GET_STREAMS);
    assert_int_equal(info_of(&r).reconnects, 2);
    assert_int_equal(info_of(&r).relogins, 2);
    tf_request_free(&a);
    tf_request_free(&b);
    tf_request_free(&c);
    tf_request_free(&d);
    rig_close(&r);
}

/* --- lost sessions ------------------------------------------------------------------------- */

static void test_no_session_eviction_relogs_and_reissues(void **state)
{
    (void)state;
    rig_t r;
    sl_client_options_t o = {.reconnect_attempts = 1};
    rig_open(&r, &o);
    tf_login(&r.t);
    late_t late = {.frames = {tf_eviction(SL_EVICT_NO_SESSION, 0, 0),
                              tf_reply_hex(SL_OP_REGISTER, HEX_LOGIN_BODY), create_stream_reply()},
                   .count = 3};
    late_start(&late, &r.t);
    const sl_stream_t *s;
    assert_int_equal(sl_client_create_stream(r.t.client, "orders", &s), 0);
    late_join(&late);
    assert_string_equal(s->name, "orders");
    tf_request_t first = take_op(&r.t, SL_OP_CREATE_STREAM, 0);
    tf_request_t login = take_op(&r.t, SL_OP_REGISTER, 0);
    tf_request_t again = take_op(&r.t, SL_OP_CREATE_STREAM, 0);
    /* Same body, new identity: the first was refused, nothing applied. */
    assert_bytes_equal(first.body, first.body_len, again.body, again.body_len);
    assert_false(sl_u128_eq(first.header.client, again.header.client));
    assert_true(sl_u128_eq(login.header.client, again.header.client));
    assert_int_equal(again.header.request, 1);
    assert_int_equal(info_of(&r).relogins, 1);
    assert_int_equal(info_of(&r).reconnects, 0);
    tf_request_free(&first);
    tf_request_free(&login);
    tf_request_free(&again);
    rig_close(&r);
}

static void test_refused_relogin_forgets_the_credentials(void **state)
{
    (void)state;
    rig_t r;
    sl_client_options_t o = {.reconnect_attempts = 1};
    rig_open(&r, &o);
    tf_login(&r.t);
    late_t late = {.frames = {tf_eviction(SL_EVICT_SESSION_TOO_LOW, 0, 0),
                              tf_eviction(SL_EVICT_INVALID_CREDENTIALS, 0, 0)},
                   .count = 2};
    late_start(&late, &r.t);
    assert_int_equal(sl_client_purge_stream(r.t.client, sl_id_num(0)), -SL_ERR_INVALID_CREDENTIALS);
    late_join(&late);
    tf_request_t a = take_op(&r.t, SL_OP_PURGE_STREAM, 0);
    tf_request_t b = take_op(&r.t, SL_OP_REGISTER, 0);
    tf_request_free(&a);
    tf_request_free(&b);
    /* No second try: the next command stops locally. */
    assert_int_equal(sl_client_purge_stream(r.t.client, sl_id_num(0)), -SL_ERR_UNAUTHENTICATED);
    assert_true(tf_nothing_sent(&r.t));
    assert_true(r.t.client->care.username == NULL && r.t.client->care.password == NULL);
    rig_close(&r);
}

static void test_unauthenticated_read_relogs(void **state)
{
    (void)state;
    rig_t r;
    sl_client_options_t o = {.reconnect_attempts = 1};
    rig_open(&r, &o);
    tf_queue(&r.t, tf_reply_hex(SL_OP_REGISTER, HEX_LOGIN_BODY));
    assert_int_equal(sl_client_login_token(r.t.client, "secret-token", NULL), 0);
    tf_request_t q = take_op(&r.t, SL_OP_REGISTER, 0);
    tf_request_free(&q);
    /* Another login took over the client id: reads answer 40. */
    tf_queue(&r.t, tf_reply(SL_OP_NON_REPLICATED, SL_ERR_UNAUTHENTICATED, NULL, 0));
    tf_queue(&r.t, tf_reply_hex(SL_OP_REGISTER, HEX_LOGIN_BODY));
    tf_queue(&r.t, streams_reply());
    const sl_stream_t *s;
    uint32_t n;
    assert_int_equal(sl_client_get_streams(r.t.client, &s, &n), 0);
    q = take_op(&r.t, SL_OP_NON_REPLICATED, SL_CMD_GET_STREAMS);
    tf_request_free(&q);
    q = take_op(&r.t, SL_OP_REGISTER, 0);
    sl_login_register_with_pat_request_t pat;
    assert_int_equal(sl_login_register_with_pat_request_decode(tf_body(&q), &pat), 0);
    assert_span_str(pat.login.token, "secret-token"); /* the remembered token */
    tf_request_free(&q);
    q = take_op(&r.t, SL_OP_NON_REPLICATED, SL_CMD_GET_STREAMS);
    tf_request_free(&q);
    rig_close(&r);
}

static void test_pushed_stale_eviction_reconnects(void **state)
{
    (void)state;
    rig_t r;
    sl_client_options_t o = {.reconnect_attempts = 1};
    rig_open(&r, &o);
    tf_login(&r.t);
    /* The heartbeat verifier evicted the idle member (lifecycle.md 8). */
    tf_queue(&r.t, tf_eviction(SL_EVICT_STALE_CLIENT, 0, 0));
    tf_conn_t next = dialer_add(&r.dialer, r.t.client);
    tf_queue(&next, tf_reply_hex(SL_OP_REGISTER, HEX_LOGIN_BODY));
    tf_queue(&next, create_stream_reply());
    assert_int_equal(sl_client_create_stream(r.t.client, "orders", NULL), 0);
    assert_closed_quietly(r.t.server); /* the old connection carried no request */
    tf_request_t a = take_op(&next, SL_OP_REGISTER, 0);
    tf_request_t b = take_op(&next, SL_OP_CREATE_STREAM, 0);
    tf_request_free(&a);
    tf_request_free(&b);
    assert_int_equal(info_of(&r).reconnects, 1);
    rig_close(&r);
}

static void test_logout_means_no_relogin(void **state)
{
    (void)state;
    rig_t r;
    sl_client_options_t o = {.reconnect_attempts = 1};
    rig_open(&r, &o);
    tf_login(&r.t);
    tf_queue(&r.t, tf_reply(SL_OP_LOGOUT, 0, NULL, 0));
    assert_int_equal(sl_client_logout(r.t.client), 0);
    tf_request_t q = take_op(&r.t, SL_OP_LOGOUT, 0);
    tf_request_free(&q);
    close(r.t.server);
    r.t.server = -1;
    tf_conn_t next = dialer_add(&r.dialer, r.t.client);
    /* Reconnected, but not logged in: the command stops locally. */
    assert_int_equal(sl_client_create_stream(r.t.client, "x", NULL), -SL_ERR_UNAUTHENTICATED);
    assert_int_equal(r.dialer.dials, 1);
    assert_true(tf_nothing_sent(&next));
    assert_int_equal(info_of(&r).relogins, 0);
    rig_close(&r);
}

/* --- heartbeat and explicit reconnect ------------------------------------------------------ */

static void pause_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static void test_tick_pings_when_idle(void **state)
{
    (void)state;
    rig_t r;
    sl_client_options_t o = {.heartbeat_interval_ms = 200};
    rig_open(&r, &o);
    tf_login(&r.t);
    assert_int_equal(sl_client_tick(r.t.client), 0);
    assert_true(tf_nothing_sent(&r.t)); /* the login was just now */
    pause_ms(250);
    tf_queue(&r.t, tf_reply(SL_OP_NON_REPLICATED, 0, NULL, 0));
    assert_int_equal(sl_client_tick(r.t.client), 0);
    tf_request_t q = take_op(&r.t, SL_OP_NON_REPLICATED, SL_CMD_PING);
    assert_int_equal(q.header.session, 5);
    tf_request_free(&q);
    assert_int_equal(sl_client_tick(r.t.client), 0);
    assert_true(tf_nothing_sent(&r.t));
    /* Any request counts as activity. */
    pause_ms(100);
    tf_queue(&r.t, streams_reply());
    const sl_stream_t *s;
    uint32_t n;
    assert_int_equal(sl_client_get_streams(r.t.client, &s, &n), 0);
    q = take_op(&r.t, SL_OP_NON_REPLICATED, SL_CMD_GET_STREAMS);
    tf_request_free(&q);
    pause_ms(120); /* 220 ms after the ping, 120 after the read */
    assert_int_equal(sl_client_tick(r.t.client), 0);
    assert_true(tf_nothing_sent(&r.t));
    /* An open batch is left alone. */
    pause_ms(250);
    assert_int_equal(
        sl_client_send_begin(r.t.client, sl_id_num(0), sl_id_num(0), sl_partitioning_balanced()),
        0);
    assert_int_equal(sl_client_tick(r.t.client), 0);
    assert_true(tf_nothing_sent(&r.t));
    sl_client_send_abandon(r.t.client);
    rig_close(&r);
}

static void test_tick_and_reconnect_dial_again(void **state)
{
    (void)state;
    rig_t r;
    sl_client_options_t o = {.reconnect_attempts = 2};
    rig_open(&r, &o);
    tf_login(&r.t);
    assert_int_equal(sl_client_tick(r.t.client), 0);
    assert_int_equal(r.dialer.dials, 0);
    close(r.t.server);
    r.t.server = -1;
    tf_conn_t second = dialer_add(&r.dialer, r.t.client);
    tf_queue(&second, tf_reply_hex(SL_OP_REGISTER, HEX_LOGIN_BODY));
    assert_int_equal(sl_client_tick(r.t.client), 0);
    tf_request_t q = take_op(&second, SL_OP_REGISTER, 0);
    tf_request_free(&q);
    assert_true(info_of(&r).logged_in);
    /* An explicit reconnect replaces a healthy connection too. */
    tf_conn_t third = dialer_add(&r.dialer, r.t.client);
    tf_queue(&third, tf_reply_hex(SL_OP_REGISTER, HEX_LOGIN_BODY));
    assert_int_equal(sl_client_reconnect(r.t.client), 0);
    assert_closed_quietly(second.server);
    q = take_op(&third, SL_OP_REGISTER, 0);
    tf_request_free(&q);
    assert_int_equal(info_of(&r).reconnects, 2);
    rig_close(&r);

    /* A client handed a socket has no address to dial. */
    tf_conn_t t = tf_open(NULL);
    assert_int_equal(sl_client_reconnect(t.client), -SL_ERR_NOT_CONNECTED);
    tf_close(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_backoff_schedule),
        cmocka_unit_test(test_57_is_replayed_with_the_same_number),
        cmocka_unit_test(test_replays_are_bounded),
        cmocka_unit_test(test_partition_ops_replay_58_only),
        cmocka_unit_test(test_logout_and_login_replay_57),
        cmocka_unit_test(test_without_care_nothing_is_replayed),
        cmocka_unit_test(test_reconnect_and_relogin_between_calls),
        cmocka_unit_test(test_dials_back_off_and_give_up),
        cmocka_unit_test(test_failure_in_flight),
        cmocka_unit_test(test_no_session_eviction_relogs_and_reissues),
        cmocka_unit_test(test_refused_relogin_forgets_the_credentials),
        cmocka_unit_test(test_unauthenticated_read_relogs),
        cmocka_unit_test(test_pushed_stale_eviction_reconnects),
        cmocka_unit_test(test_logout_means_no_relogin),
        cmocka_unit_test(test_tick_pings_when_idle),
        cmocka_unit_test(test_tick_and_reconnect_dial_again),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
