/* Hostile clients against the real sluiced: several connections at once send random and
 * mutated frames (valid headers with garbage bodies, bodies cut mid-frame, sizes that lie,
 * random header fields, sessions and request numbers out of order, logged in and not) while a
 * well-behaved client keeps probing. The server must stay up, answer every well-formed request
 * (the probe's ping, stream read, send and poll-back; and on every fresh hostile connection a
 * ping, and half the time a token login), and stop cleanly at the end. Its resident memory is
 * measured before (idle, the probe connected), at its peak and after the hostile connections
 * closed, from /proc/<pid>/status; the figures are printed, and checked against the idle level
 * when SLUICE_SOAK is set (make soak).
 *
 * The frames start from a corpus recorded at the start: a libsluice session of about forty
 * commands passes through a recording proxy, so every mutation starts from bytes a real
 * client sends. Every choice comes from one seed (printed; SLUICE_CRASH_SEED=<seed> replays
 * the choices; the corpus's timestamps, ids and token differ between runs). The frame count
 * is SLUICE_HOSTILE_FRAMES (10 000 by default, 100 000 with SLUICE_SOAK set, as make soak
 * does). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
// clang-format off
#include <cmocka.h>
// clang-format on
#include <sluice/client.h>
#include <sluice/error.h>

#include "crash_util.h"
#include "harness.h"
#include "raw.h"
#include "wire/command.h"
#include "wire/header.h"

#define FRAMES_DEFAULT 10000u
#define FRAMES_SOAK    100000u
#define CONNECTIONS    4u
#define CORPUS_MAX     96u
/* Largest garbage body generated (a few are this big; most are small). */
#define GARBAGE_MAX (64u * 1024u)
/* A frame that cannot be written for this long (the server waits for a body we never
 * complete and stopped reading) ends the connection. */
#define SEND_STALL_MS 2000
/* Liveness bound on an answer to a well-formed request (not a measurement). */
#define ANSWER_TIMEOUT_MS 30000
/* Strict mode: resident memory after the run may exceed the idle level by this much. */
#define RSS_SLACK_KIB (8u * 1024u)

static th_server_t srv;
static char token[128]; /* the hostile user's personal access token */

static void sleep_ms(uint32_t ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        continue;
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* --- the corpus: frames a real client sends, recorded by a proxy ------------------------ */

typedef struct frame {
    uint8_t *bytes;
    uint32_t len;
} frame_t;

static frame_t corpus[CORPUS_MAX];
static uint32_t corpus_count;

typedef struct proxy {
    int listen_fd;
    uint16_t port;
    pthread_t thread;
    uint8_t *rec; /* every byte the client sent */
    size_t rec_len, rec_cap;
} proxy_t;

static void proxy_record(proxy_t *p, const uint8_t *b, size_t n)
{
    if (p->rec_len + n > p->rec_cap) {
        p->rec_cap = 2 * (p->rec_len + n);
        p->rec = realloc(p->rec, p->rec_cap);
        if (!p->rec)
            abort();
    }
    memcpy(p->rec + p->rec_len, b, n);
    p->rec_len += n;
}

/* Forwards one read from `from` to `to`; false at the end of either side. */
static bool proxy_pump(proxy_t *p, int from, int to, bool record)
{
    uint8_t buf[65536];
    ssize_t n = recv(from, buf, sizeof(buf), 0);
    if (n <= 0)
        return false;
    if (record)
        proxy_record(p, buf, (size_t)n);
    return th_send_all(to, buf, (size_t)n);
}

static void *proxy_main(void *arg)
{
    proxy_t *p = arg;
    int client = accept(p->listen_fd, NULL, NULL);
    if (client < 0)
        return NULL;
    int server = th_connect(srv.port);
    for (;;) { /* ends when the client closes */
        struct pollfd f[2] = {{.fd = client, .events = POLLIN}, {.fd = server, .events = POLLIN}};
        if (poll(f, 2, ANSWER_TIMEOUT_MS) <= 0)
            break;
        if (f[0].revents && !proxy_pump(p, client, server, true))
            break;
        if (f[1].revents && !proxy_pump(p, server, client, false))
            break;
    }
    close(client);
    close(server);
    return NULL;
}

static void proxy_start(proxy_t *p)
{
    memset(p, 0, sizeof(*p));
    p->listen_fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(p->listen_fd >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(a);
    assert_int_equal(bind(p->listen_fd, (struct sockaddr *)&a, sizeof(a)), 0);
    assert_int_equal(listen(p->listen_fd, 1), 0);
    assert_int_equal(getsockname(p->listen_fd, (struct sockaddr *)&a, &len), 0);
    p->port = ntohs(a.sin_port);
    assert_int_equal(pthread_create(&p->thread, NULL, proxy_main, p), 0);
}

/* Cuts the recording into frames by their size fields. */
static void proxy_finish(proxy_t *p)
{
    assert_int_equal(pthread_join(p->thread, NULL), 0);
    close(p->listen_fd);
    size_t at = 0;
    while (at + SL_HEADER_SIZE <= p->rec_len && corpus_count < CORPUS_MAX) {
        uint32_t size = sl_load_u32(p->rec + at + SL_HDR_OFF_SIZE);
        assert_true(size >= SL_HEADER_SIZE && at + size <= p->rec_len);
        assert_true(size <= GARBAGE_MAX); /* the mutation buffer holds it */
        frame_t *f = &corpus[corpus_count++];
        f->bytes = malloc(size);
        assert_non_null(f->bytes);
        memcpy(f->bytes, p->rec + at, size);
        f->len = size;
        at += size;
    }
    free(p->rec);
}

/* A refusal is as good as an answer here: gcc will not let (void) drop the result. */
#define TRY(call) (refused += (call) != 0)

/* The commands of the recorded session. Some are refused (the hostile user may not create
 * streams, say): the frames are what matters. */
static void corpus_session(sl_client_t *c)
{
    sl_id_t play = sl_id_name("play"), t = sl_id_name("t"), t2 = sl_id_name("t2");
    const sl_client_info_t *info;
    const sl_stats_t *stats;
    const sl_user_t *users;
    const sl_cluster_t *cluster;
    const sl_option_info_t *options;
    const sl_stream_t *streams;
    const sl_topic_t *topics;
    const sl_assignment_t *assignment;
    const sl_consumer_group_t *groups;
    const sl_token_t *tokens;
    uint32_t n, refused = 0;
    uint8_t payload[CU_PAYLOAD_MAX];
    sl_header_t headers[2] = {{sl_hv_str("k"), sl_hv_str("v")}, {sl_hv_str("n"), sl_hv_u64(7)}};
    sl_send_message_t msgs[3];
    for (int i = 0; i < 3; i++)
        msgs[i] = (sl_send_message_t){.payload = payload,
                                      .payload_len = cu_payload((uint64_t)i, payload),
                                      .headers = i == 1 ? headers : NULL,
                                      .headers_count = i == 1 ? 2 : 0};
    sl_send_result_t r;
    sl_topic_options_t opt = {.set = SL_TOPIC_OPT_MESSAGE_EXPIRY | SL_TOPIC_OPT_SEGMENT_SIZE,
                              .message_expiry_us = 3600000000ull,
                              .segment_size = 1024 * 1024};
    sl_topic_options_t expiry = {.set = SL_TOPIC_OPT_MESSAGE_EXPIRY,
                                 .message_expiry_us = 7200000000ull};
    sl_polled_messages_t polled;
    sl_consumer_offset_t off;
    const char *tok;
    TRY(sl_client_ping(c));
    TRY(sl_client_get_me(c, &info));
    TRY(sl_client_get_stats(c, &stats));
    TRY(sl_client_get_clients(c, &info, &n));
    TRY(sl_client_get_users(c, &users, &n));
    TRY(sl_client_get_user(c, sl_id_num(0), &users));
    TRY(sl_client_get_cluster_metadata(c, &cluster));
    TRY(sl_client_describe_options(c, 1, &options, &n));
    TRY(sl_client_get_streams(c, &streams, &n));
    TRY(sl_client_get_stream(c, play, &streams));
    TRY(sl_client_create_stream(c, "not-allowed", NULL));
    TRY(sl_client_update_stream(c, play, "play"));
    TRY(sl_client_create_topic(c, play, "t2", 2, &opt, NULL));
    TRY(sl_client_get_topic(c, play, t2, &topics));
    TRY(sl_client_get_topics(c, play, &topics, &n));
    TRY(sl_client_update_topic(c, play, t2, "t2", &expiry));
    TRY(sl_client_create_partitions(c, play, t2, 1));
    TRY(sl_client_delete_partitions(c, play, t2, 1));
    TRY(sl_client_send_messages(c, play, t, sl_partitioning_partition(0), msgs, 3, &r));
    TRY(sl_client_send_messages(c, play, t, sl_partitioning_balanced(), msgs, 1, &r));
    TRY(sl_client_send_messages(c, play, t, sl_partitioning_messages_key("key", 3), msgs, 2, &r));
    TRY(sl_client_poll_messages(c, sl_consumer_single(sl_id_num(1)), play, t, 0, sl_poll_offset(0),
                                10, false, &polled));
    TRY(sl_client_poll_messages(c, sl_consumer_single(sl_id_name("reader")), play, t, 0,
                                sl_poll_next(), 10, true, &polled));
    TRY(sl_client_poll_messages(c, sl_consumer_single(sl_id_num(1)), play, t, 0, sl_poll_last(), 2,
                                false, &polled));
    TRY(sl_client_store_consumer_offset(c, sl_consumer_single(sl_id_num(1)), play, t, 0, 1,
                                        SL_ACK_LEVEL_NONE));
    TRY(sl_client_get_consumer_offset(c, sl_consumer_single(sl_id_num(1)), play, t, 0, &off));
    TRY(sl_client_delete_consumer_offset(c, sl_consumer_single(sl_id_num(1)), play, t, 0,
                                         SL_ACK_LEVEL_QUORUM));
    TRY(sl_client_create_consumer_group(c, play, t, "cg", NULL));
    TRY(sl_client_join_consumer_group(c, play, t, sl_id_name("cg")));
    TRY(sl_client_sync_consumer_group(c, play, t, sl_id_name("cg"), &assignment));
    TRY(sl_client_poll_messages(c, sl_consumer_in_group(sl_id_name("cg")), play, t, 0,
                                sl_poll_next(), 5, true, &polled));
    TRY(sl_client_get_consumer_group(c, play, t, sl_id_name("cg"), &groups));
    TRY(sl_client_get_consumer_groups(c, play, t, &groups, &n));
    TRY(sl_client_leave_consumer_group(c, play, t, sl_id_name("cg")));
    TRY(sl_client_delete_consumer_group(c, play, t, sl_id_name("cg")));
    TRY(sl_client_create_token(c, "corpus", 60000000ull, &tok));
    TRY(sl_client_get_tokens(c, &tokens, &n));
    TRY(sl_client_delete_token(c, "corpus"));
    TRY(sl_client_delete_segments(c, play, t, 0, 1));
    TRY(sl_client_purge_topic(c, play, t2));
    TRY(sl_client_delete_topic(c, play, t2));
    TRY(sl_client_flush_unsaved_buffer(c, play, t, 0, true));
    TRY(sl_client_logout(c));
    fprintf(stderr, "hostile: corpus session: %u of its commands refused\n", refused);
}

static void record_corpus(void)
{
    proxy_t p;
    proxy_start(&p);
    sl_client_options_t o = {.request_timeout_ms = ANSWER_TIMEOUT_MS};
    sl_client_t *c = NULL;
    assert_int_equal(sl_client_connect("127.0.0.1", p.port, &o, &c), 0);
    assert_int_equal(sl_client_login_token(c, token, NULL), 0);
    corpus_session(c);
    sl_client_close(c);
    proxy_finish(&p);
    assert_true(corpus_count >= 40);
    fprintf(stderr, "hostile: corpus of %u frames recorded\n", corpus_count);
}

/* --- setup: a probe stream, the hostile user's playground and token ---------------------- */

static void setup(void)
{
    if (!th_start(&srv, NULL)) {
        fprintf(stderr, "io_uring unavailable: skipped\n");
        exit(77);
    }
    sl_client_t *root = cu_connect(&srv);
    const sl_stream_t *play = NULL;
    assert_int_equal(sl_client_create_stream(root, "probe", NULL), 0);
    assert_int_equal(sl_client_create_topic(root, sl_id_name("probe"), "t", 1, NULL, NULL), 0);
    assert_int_equal(sl_client_create_stream(root, "play", &play), 0);
    uint32_t play_id = play->id; /* results last until the next call */
    assert_int_equal(sl_client_create_topic(root, sl_id_name("play"), "t", 2, NULL, NULL), 0);
    /* Reads, sends and polls everywhere; managing only its own stream. */
    sl_stream_permission_t own = {.stream_id = play_id,
                                  .manage_stream = true,
                                  .read_stream = true,
                                  .manage_topics = true,
                                  .read_topics = true,
                                  .poll_messages = true,
                                  .send_messages = true};
    sl_permission_set_t perms = {.read_servers = true,
                                 .read_users = true,
                                 .read_streams = true,
                                 .read_topics = true,
                                 .poll_messages = true,
                                 .send_messages = true,
                                 .streams_count = 1,
                                 .streams = &own};
    assert_int_equal(
        sl_client_create_user(root, "hostile", "hostile-pass", SL_USER_STATUS_ACTIVE, &perms, NULL),
        0);
    sl_client_close(root);
    sl_client_t *h = th_client(srv.port, "hostile", "hostile-pass");
    assert_non_null(h);
    const char *t = NULL;
    assert_int_equal(sl_client_create_token(h, "hostile", 0, &t), 0);
    assert_true(strlen(t) < sizeof(token));
    strcpy(token, t);
    sl_client_close(h);
    record_corpus();
}

/* --- one hostile connection ---------------------------------------------------------------- */

typedef struct hostile {
    uint32_t index;
    uint64_t rng;
    uint32_t frames; /* to send */
    pthread_t thread;
    raw_session_t *raw; /* raw.fd is the connection */
    bool logged_in;
    uint8_t *buf;
    bool failed;
    char error[256];
    /* figures */
    uint32_t connections, logins, server_closes, stalls, cuts;
    uint64_t bytes;
} hostile_t;

static atomic_bool hostile_done;
static atomic_uint hostile_finished;

__attribute__((format(printf, 2, 3))) static void hfail(hostile_t *h, const char *fmt, ...)
{
    if (h->failed)
        return;
    h->failed = true;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(h->error, sizeof(h->error), fmt, ap);
    va_end(ap);
}

/* A fresh connection: its first request is well formed, so it must be answered. */
static bool hostile_connect(hostile_t *h)
{
    if (h->raw->fd >= 0)
        raw_close(h->raw);
    raw_open(h->raw, srv.port);
    h->connections++;
    h->logged_in = false;
    raw_reply_t rep =
        raw_call(h->raw, SL_OP_NON_REPLICATED, SL_CMD_PING, 0, 0, sl_span(NULL, 0), false);
    if (rep.closed || rep.evicted || rep.status != 0) {
        hfail(h,
              "connection %u: a ping on a fresh connection was not answered (closed %d, "
              "evicted %d, status %u)",
              h->connections, rep.closed, rep.evicted, rep.status);
        return false;
    }
    if (cu_rand(&h->rng) & 1) {
        rep = raw_login_token(h->raw, token);
        if (rep.closed || rep.evicted || rep.status != 0 || rep.result != 0) {
            hfail(h,
                  "connection %u: a token login was refused (closed %d, evicted %d reason %u, "
                  "status %u, result %u)",
                  h->connections, rep.closed, rep.evicted, rep.reason, rep.status, rep.result);
            return false;
        }
        h->logged_in = true;
        h->logins++;
    }
    int fl = fcntl(h->raw->fd, F_GETFL);
    fcntl(h->raw->fd, F_SETFL, fl | O_NONBLOCK);
    return true;
}

/* Reads and drops whatever the server sent; false when it closed the connection. */
static bool drain(hostile_t *h)
{
    uint8_t sink[65536];
    for (int i = 0; i < 64; i++) { /* bounded: a few MiB per call at most */
        ssize_t n = recv(h->raw->fd, sink, sizeof(sink), MSG_DONTWAIT);
        if (n > 0)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
            return true;
        return false;
    }
    return true;
}

/* Writes len bytes, draining replies while the socket is full. 1: written, 0: the server
 * closed, -1: stalled (it waits for something else and stopped reading). */
static int send_bytes(hostile_t *h, const uint8_t *p, size_t len)
{
    double start = now_ms();
    while (len > 0) {
        ssize_t n = send(h->raw->fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n > 0) {
            p += n;
            len -= (size_t)n;
            h->bytes += (uint64_t)n;
            continue;
        }
        if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
            return 0;
        if (!drain(h))
            return 0;
        if (now_ms() - start > SEND_STALL_MS)
            return -1;
        struct pollfd f = {.fd = h->raw->fd, .events = POLLIN | POLLOUT};
        poll(&f, 1, 50);
    }
    return 1;
}

static uint32_t rnd(hostile_t *h, uint32_t lo, uint32_t hi)
{
    return (uint32_t)cu_rand_range(&h->rng, lo, hi);
}

static void fill_random(hostile_t *h, uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (uint8_t)cu_rand(&h->rng);
}

/* Lengths that hit boundaries more often than uniform ones would. */
static uint32_t garbage_len(hostile_t *h)
{
    switch (rnd(h, 0, 5)) {
    case 0:
        return 0;
    case 1:
        return rnd(h, 1, 8);
    case 2:
        return rnd(h, 1, 64);
    case 3:
        return rnd(h, 1, 1024);
    case 4:
        return rnd(h, 1, 8192);
    default:
        return rnd(h, 1, GARBAGE_MAX);
    }
}

/* Values a mutated field is set to. */
static uint32_t interesting_u32(hostile_t *h)
{
    static const uint32_t v[] = {
        0,          1,      2,       0x7f,       0x80,           0xff,
        0x100,      0xffff, 0x10000, 0x7fffffff, 0x80000000,     0xfffffffe,
        0xffffffff, 1000,   1001,    64u << 20,  (64u << 20) + 1};
    return rnd(h, 0, 3) == 0 ? (uint32_t)cu_rand(&h->rng) : v[rnd(h, 0, sizeof(v) / 4 - 1)];
}

/* Fixes the header so the frame gets past the gates: the real size, this connection's
 * session and a request number (in order or not), the stamp. */
static void restamp(hostile_t *h, uint8_t *f, uint32_t len, bool in_order)
{
    sl_store_u32(f + SL_HDR_OFF_SIZE, len);
    sl_store_u128(f + SL_REQ_OFF_CLIENT, h->raw->client);
    uint8_t op = f[SL_REQ_OFF_OPERATION];
    if (op == SL_OP_REGISTER) {
        sl_store_u64(f + SL_REQ_OFF_SESSION, 0);
        sl_store_u64(f + SL_REQ_OFF_REQUEST, 0);
    } else if (in_order) {
        sl_store_u64(f + SL_REQ_OFF_SESSION, h->raw->session);
        sl_store_u64(f + SL_REQ_OFF_REQUEST, ++h->raw->request);
    } else {
        sl_store_u64(f + SL_REQ_OFF_SESSION, rnd(h, 0, 3) ? h->raw->session : cu_rand(&h->rng));
        sl_store_u64(f + SL_REQ_OFF_REQUEST, rnd(h, 0, 1) ? rnd(h, 0, 5) : cu_rand(&h->rng));
    }
    if (!sl_u128_is_zero(sl_load_u128(f + SL_REQ_OFF_REQUEST_CHECKSUM)) || rnd(h, 0, 3) == 0)
        sl_store_u128(f + SL_REQ_OFF_REQUEST_CHECKSUM,
                      sl_request_checksum(sl_span(f + SL_HEADER_SIZE, len - SL_HEADER_SIZE)));
}

/* One to eight mutations of a copy of a corpus frame; returns its new length. */
static uint32_t mutate(hostile_t *h, uint8_t *f, uint32_t len)
{
    uint32_t k = rnd(h, 1, 8);
    for (uint32_t i = 0; i < k; i++) {
        uint32_t body = len - SL_HEADER_SIZE;
        uint32_t at = SL_HEADER_SIZE + (body ? rnd(h, 0, body - 1) : 0);
        switch (rnd(h, 0, 5)) {
        case 0: /* flip a bit of the body */
            if (body)
                f[at] ^= (uint8_t)(1u << rnd(h, 0, 7));
            break;
        case 1: /* a random byte */
            if (body)
                f[at] = (uint8_t)cu_rand(&h->rng);
            break;
        case 2: /* a length or count field set to a boundary */
            if (body >= 4) {
                at = SL_HEADER_SIZE + rnd(h, 0, body - 4);
                sl_store_u32(f + at, interesting_u32(h));
            }
            break;
        case 3: /* cut the body */
            len = SL_HEADER_SIZE + (body ? rnd(h, 0, body - 1) : 0);
            break;
        case 4: /* grow it with random bytes */ {
            uint32_t more = rnd(h, 1, 256);
            fill_random(h, f + len, more);
            len += more;
            break;
        }
        default: /* a header byte outside the fields the gates read */
            f[rnd(h, 0, SL_HEADER_SIZE - 1)] = (uint8_t)cu_rand(&h->rng);
            break;
        }
    }
    return len;
}

typedef enum {
    K_MUTATED, /* a mutated corpus frame, usually restamped */
    K_NUMBERS, /* a corpus frame with sessions and request numbers out of order */
    K_GARBAGE, /* a corpus header with a garbage body */
    K_HEADER,  /* random header fields */
    K_SIZE,    /* a size field that lies */
    K_CUT,     /* a frame cut mid-way, then the connection closed */
    K_RANDOM,  /* random bytes */
    K_WELL,    /* a corpus frame with this connection's own numbering */
} kind_t;

static kind_t pick_kind(hostile_t *h)
{
    static const kind_t weights[] = {K_MUTATED, K_MUTATED, K_MUTATED, K_MUTATED, K_MUTATED,
                                     K_MUTATED, K_NUMBERS, K_NUMBERS, K_GARBAGE, K_GARBAGE,
                                     K_GARBAGE, K_HEADER,  K_HEADER,  K_SIZE,    K_SIZE,
                                     K_CUT,     K_RANDOM,  K_WELL,    K_WELL,    K_WELL};
    return weights[rnd(h, 0, sizeof(weights) / sizeof(weights[0]) - 1)];
}

/* Builds the next frame into h->buf; returns how many bytes to send and sets *close_after. */
static uint32_t build(hostile_t *h, bool *close_after)
{
    const frame_t *c = &corpus[rnd(h, 0, corpus_count - 1)];
    uint8_t *f = h->buf;
    memcpy(f, c->bytes, c->len);
    uint32_t len = c->len;
    *close_after = false;
    switch (pick_kind(h)) {
    case K_MUTATED:
        len = mutate(h, f, len);
        if (rnd(h, 0, 9) < 8)
            restamp(h, f, len, rnd(h, 0, 1));
        return len;
    case K_NUMBERS:
        restamp(h, f, len, false);
        return len;
    case K_GARBAGE:
        len = SL_HEADER_SIZE + garbage_len(h);
        fill_random(h, f + SL_HEADER_SIZE, len - SL_HEADER_SIZE);
        restamp(h, f, len, rnd(h, 0, 1));
        return len;
    case K_HEADER:
        len = SL_HEADER_SIZE + rnd(h, 0, 64);
        fill_random(h, f + SL_HEADER_SIZE, len - SL_HEADER_SIZE);
        restamp(h, f, len, true);
        f[SL_HDR_OFF_COMMAND] = rnd(h, 0, 3) ? 5 : (uint8_t)cu_rand(&h->rng);
        f[SL_REQ_OFF_OPERATION] = (uint8_t)cu_rand(&h->rng);
        sl_store_u32(f + SL_REQ_OFF_CODE, rnd(h, 0, 1) ? rnd(h, 0, 700) : interesting_u32(h));
        if (rnd(h, 0, 7) == 0)
            sl_store_u128(f + SL_REQ_OFF_CLIENT, (sl_u128_t){0, 0});
        return len;
    case K_SIZE:
        restamp(h, f, len, true);
        sl_store_u32(f + SL_HDR_OFF_SIZE, rnd(h, 0, 1) ? interesting_u32(h) : rnd(h, 0, 300));
        *close_after = rnd(h, 0, 1);
        return len;
    case K_CUT:
        restamp(h, f, len, true);
        *close_after = true;
        h->cuts++;
        return rnd(h, 1, len - 1);
    case K_RANDOM:
        len = rnd(h, 1, 600);
        fill_random(h, f, len);
        return len;
    case K_WELL:
        if (f[SL_REQ_OFF_OPERATION] == SL_OP_NON_REPLICATED) {
            sl_store_u128(f + SL_REQ_OFF_CLIENT, h->raw->client);
            sl_store_u64(f + SL_REQ_OFF_SESSION, h->raw->session);
            sl_store_u64(f + SL_REQ_OFF_REQUEST, h->raw->request);
            return len;
        }
        restamp(h, f, len, true);
        return len;
    }
    return len;
}

static void hostile_run(hostile_t *h)
{
    if (!hostile_connect(h))
        return;
    for (uint32_t i = 0; i < h->frames && !h->failed; i++) {
        bool close_after;
        uint32_t len = build(h, &close_after);
        int sent = send_bytes(h, h->buf, len);
        bool closed = sent == 0 || !drain(h);
        if (sent < 0)
            h->stalls++;
        if (closed)
            h->server_closes++;
        /* A fresh connection now and then, so every connection's first frame is probed. */
        if (closed || sent < 0 || close_after || rnd(h, 0, 63) == 0)
            if (!hostile_connect(h))
                return;
    }
    raw_close(h->raw);
}

static void *hostile_main(void *arg)
{
    hostile_run(arg);
    atomic_fetch_add(&hostile_finished, 1);
    return NULL;
}

/* --- the well-behaved client ----------------------------------------------------------------- */

typedef struct prober {
    pthread_t thread;
    sl_client_t *c;
    uint64_t rounds;
    double max_ms;
    bool failed;
    char error[256];
} prober_t;

/* Ping, a stream read, a send and the poll of what it sent: every one must be answered right. */
static bool probe_round(prober_t *p, uint64_t n)
{
    int rc = sl_client_ping(p->c);
    const sl_stream_t *s = NULL;
    if (rc == 0)
        rc = sl_client_get_stream(p->c, sl_id_name("probe"), &s);
    if (rc == 0 && !s)
        rc = -SL_ERR_STREAM_ID_NOT_FOUND;
    sl_send_result_t r;
    if (rc == 0)
        rc = cu_send(p->c, sl_id_name("probe"), sl_id_name("t"), 0, 3, n, 1, &r);
    sl_polled_messages_t out;
    if (rc == 0)
        rc = sl_client_poll_messages(p->c, sl_consumer_single(sl_id_num(1)), sl_id_name("probe"),
                                     sl_id_name("t"), 0, sl_poll_offset(r.base_offset), 1, false,
                                     &out);
    uint64_t got;
    if (rc == 0 && (out.count != 1 || !cu_message_number(&out.messages[0], 3, &got) || got != n)) {
        snprintf(p->error, sizeof(p->error),
                 "probe %" PRIu64 ": the poll did not return what the "
                 "send stored",
                 n);
        return false;
    }
    if (rc != 0)
        snprintf(p->error, sizeof(p->error), "probe %" PRIu64 ": %d (%s)", n, rc, sl_strerror(rc));
    return rc == 0;
}

static void *prober_main(void *arg)
{
    prober_t *p = arg;
    while (!atomic_load(&hostile_done)) { /* ends with the hostile connections */
        double t0 = now_ms();
        if (!probe_round(p, p->rounds)) {
            p->failed = true;
            return NULL;
        }
        double ms = now_ms() - t0;
        p->max_ms = ms > p->max_ms ? ms : p->max_ms;
        p->rounds++;
        sleep_ms(2);
    }
    return NULL;
}

/* --- the run ---------------------------------------------------------------------------------- */

static uint32_t frames_wanted(void)
{
    const char *env = getenv("SLUICE_HOSTILE_FRAMES");
    uint32_t dflt = getenv("SLUICE_SOAK") ? FRAMES_SOAK : FRAMES_DEFAULT;
    uint32_t n = env && env[0] ? (uint32_t)strtoul(env, NULL, 10) : dflt;
    return n ? n : dflt;
}

/* RSS once it stops falling (frees and trims happen as connections close), up to 5 s. */
static uint64_t settled_rss(void)
{
    uint64_t last = cu_rss_kib(srv.pid);
    for (int i = 0; i < 25; i++) {
        sleep_ms(200);
        uint64_t now = cu_rss_kib(srv.pid);
        if (now >= last && i >= 2)
            return now;
        last = now;
    }
    return last;
}

static void test_hostile_clients(void **state)
{
    (void)state;
    uint64_t seed = cu_seed();
    uint64_t rng = seed;
    uint32_t frames = frames_wanted();
    fprintf(stderr,
            "hostile: seed %" PRIu64 " (SLUICE_CRASH_SEED=%" PRIu64 " replays it), %u "
            "frames over %u connections\n",
            seed, seed, frames, CONNECTIONS);
    setup();
    prober_t prober = {.c = cu_connect(&srv)};
    assert_true(probe_round(&prober, 0));
    prober.rounds = 1;
    uint64_t idle = settled_rss();

    hostile_t h[CONNECTIONS];
    double t0 = now_ms();
    atomic_store(&hostile_done, false);
    atomic_store(&hostile_finished, 0);
    assert_int_equal(pthread_create(&prober.thread, NULL, prober_main, &prober), 0);
    for (uint32_t i = 0; i < CONNECTIONS; i++) {
        h[i] = (hostile_t){.index = i, .rng = cu_rand(&rng) | 1u, .frames = frames / CONNECTIONS};
        h[i].raw = malloc(sizeof(*h[i].raw));
        h[i].buf = malloc(GARBAGE_MAX + 2 * 65536 + 1024);
        assert_non_null(h[i].raw);
        assert_non_null(h[i].buf);
        h[i].raw->fd = -1;
        assert_int_equal(pthread_create(&h[i].thread, NULL, hostile_main, &h[i]), 0);
    }
    uint64_t peak = idle;
    while (atomic_load(&hostile_finished) < CONNECTIONS) { /* ends with the threads */
        uint64_t rss = cu_rss_kib(srv.pid);
        peak = rss > peak ? rss : peak;
        sleep_ms(50);
    }
    for (uint32_t i = 0; i < CONNECTIONS; i++)
        assert_int_equal(pthread_join(h[i].thread, NULL), 0);
    atomic_store(&hostile_done, true);
    assert_int_equal(pthread_join(prober.thread, NULL), 0);
    double elapsed = now_ms() - t0;

    uint32_t conns = 0, logins = 0, closes = 0, stalls = 0, cuts = 0;
    uint64_t bytes = 0;
    for (uint32_t i = 0; i < CONNECTIONS; i++) {
        if (h[i].failed)
            fail_msg("hostile connection %u: %s\n%s", i, h[i].error, th_log(&srv));
        conns += h[i].connections;
        logins += h[i].logins;
        closes += h[i].server_closes;
        stalls += h[i].stalls;
        cuts += h[i].cuts;
        bytes += h[i].bytes;
        free(h[i].raw);
        free(h[i].buf);
    }
    if (prober.failed)
        fail_msg("the well-behaved client: %s", prober.error);
    assert_true(th_alive(&srv));
    /* Still answering, and the state is sound enough to read. */
    assert_true(probe_round(&prober, prober.rounds));
    const sl_stats_t *stats = NULL;
    assert_int_equal(sl_client_get_stats(prober.c, &stats), 0);
    uint32_t partitions = stats->partitions_count, streams = stats->streams_count;
    uint64_t after = settled_rss();
    fprintf(stderr,
            "hostile: %u frames (%.1f MiB) in %.1f s over %u connections (%u token logins, %u "
            "seen closed by the server, %u stalled sends, %u cut frames); probe: %" PRIu64
            " rounds all answered, slowest %.1f ms\n",
            frames, (double)bytes / 1048576.0, elapsed / 1000.0, conns, logins, closes, stalls,
            cuts, prober.rounds, prober.max_ms);
    fprintf(stderr,
            "hostile: sluiced RSS idle %" PRIu64 " KiB, peak %" PRIu64 " KiB, after %" PRIu64
            " KiB (%+" PRId64 " KiB; %u streams, %u partitions now)\n",
            idle, peak, after, (int64_t)after - (int64_t)idle, streams, partitions);
    sl_client_close(prober.c);
    if (getenv("SLUICE_SOAK") && after > idle + RSS_SLACK_KIB)
        fail_msg("RSS after the hostile clients is %" PRIu64 " KiB, idle was %" PRIu64
                 " KiB (slack %u KiB)",
                 after, idle, RSS_SLACK_KIB);
    cu_stop_clean(&srv);
    th_cleanup(&srv);
    for (uint32_t i = 0; i < corpus_count; i++)
        free(corpus[i].bytes);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hostile_clients),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
