/* Client-side CPU of libsluice's message calls, without sluiced: a thread
 * plays the server over TCP loopback with canned replies, and the bench
 * times sl_client_send_messages (1000 x 1000-byte batch) and
 * sl_client_poll_messages (a ~1 MB one-record reply) against raw socket
 * trips moving the same bytes. Usage: sl_bench_client [seconds per figure]. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "client/client_internal.h"
#include "wire/batch.h"
#include "wire/command.h"

enum { MESSAGES = 1000, MESSAGE_BYTES = 1000, ROUNDS = 5 };

typedef struct fake_server {
    int listen_fd;
    sl_buf_t poll_reply; /* a whole frame: header, prefix, one record */
    sl_buf_t send_reply;
    sl_buf_t login_reply;
    uint8_t *body; /* request bodies land here */
} fake_server_t;

static void die(const char *what)
{
    fprintf(stderr, "sl_bench_client: %s\n", what);
    exit(1);
}

static void reply_frame(sl_buf_t *b, uint8_t operation, const uint8_t *body, size_t len)
{
    sl_buf_init(b, 0);
    sl_reply_header_t h = {.size = (uint32_t)(SL_HEADER_SIZE + len),
                           .client = {1, 2},
                           .op = 1,
                           .commit = 1,
                           .request = 1,
                           .operation = operation};
    sl_reply_header_encode(sl_buf_extend(b, SL_HEADER_SIZE), &h);
    sl_put_bytes(b, body, len);
}

/* One stamped record of MESSAGES frames, as sluiced serves it. */
static void build_record(sl_buf_t *out)
{
    sl_batch_builder_t bb;
    sl_batch_begin(&bb, out);
    uint8_t payload[MESSAGE_BYTES];
    for (size_t i = 0; i < sizeof(payload); i++)
        payload[i] = (uint8_t)(i * 7);
    for (uint32_t i = 0; i < MESSAGES; i++)
        if (sl_batch_add(&bb, (sl_u128_t){i + 1, 9}, 1700000000000000ull + i,
                         sl_span(payload, sizeof(payload)), sl_span(NULL, 0)) != 0)
            die("batch add");
    sl_span_t rec;
    if (sl_batch_finish(&bb, &rec) != 0)
        die("batch finish");
    sl_batch_stamp((uint8_t *)rec.ptr, rec.len, 1, 0, 1700000000000000ull);
}

static void server_init(fake_server_t *s, uint16_t *port)
{
    sl_buf_t p;
    sl_buf_init(&p, 0);
    sl_put_u32(&p, 1);
    sl_put_u64(&p, MESSAGES - 1);
    sl_put_u32(&p, MESSAGES);
    build_record(&p);
    reply_frame(&s->poll_reply, SL_OP_NON_REPLICATED, p.data, p.len);
    sl_buf_reset(&p);
    sl_send_confirmation_t item = {.stream_id = 1, .topic_id = 1, .partition_id = 1};
    sl_send_messages_reply_t r = {.count = 1, .items = &item};
    if (sl_send_messages_reply_encode(&p, &r) != 0)
        die("send reply");
    reply_frame(&s->send_reply, SL_OP_SEND_MESSAGES, p.data, p.len);
    sl_buf_reset(&p);
    sl_put_u32(&p, 0); /* result section: success */
    sl_login_register_reply_t login = {
        .session = 5, .user_id = 1, .server_version = sl_span_str("bench")};
    if (sl_login_register_reply_encode(&p, &login) != 0)
        die("login reply");
    reply_frame(&s->login_reply, SL_OP_REGISTER, p.data, p.len);
    sl_buf_free(&p);
    s->body = malloc(SL_FRAME_MAX_DEFAULT);
    s->listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(a);
    if (!s->body || s->listen_fd < 0 || bind(s->listen_fd, (struct sockaddr *)&a, len) != 0 ||
        listen(s->listen_fd, 4) != 0 || getsockname(s->listen_fd, (struct sockaddr *)&a, &len))
        die("listen");
    *port = ntohs(a.sin_port);
}

static bool read_all(int fd, uint8_t *p, size_t n)
{
    while (n > 0) {
        ssize_t r = recv(fd, p, n, MSG_WAITALL);
        if (r <= 0)
            return false;
        p += r;
        n -= (size_t)r;
    }
    return true;
}

static bool write_all(int fd, const uint8_t *p, size_t n)
{
    while (n > 0) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w <= 0)
            return false;
        p += w;
        n -= (size_t)w;
    }
    return true;
}

/* Serves one connection until it closes: every request gets the canned
 * reply of its kind. Two of these run, one per client connection. */
static void *serve(void *arg)
{
    fake_server_t *s = arg;
    {
        int fd = accept(s->listen_fd, NULL, NULL);
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        uint8_t hdr[SL_HEADER_SIZE];
        while (read_all(fd, hdr, sizeof(hdr))) {
            uint32_t size = sl_header_size(hdr);
            if (size < SL_HEADER_SIZE || size > SL_FRAME_MAX_DEFAULT ||
                !read_all(fd, s->body, size - SL_HEADER_SIZE))
                break;
            uint8_t op = hdr[SL_REQ_OFF_OPERATION];
            const sl_buf_t *r = op == SL_OP_REGISTER        ? &s->login_reply
                                : op == SL_OP_SEND_MESSAGES ? &s->send_reply
                                                            : &s->poll_reply;
            if (!write_all(fd, r->data, r->len))
                break;
        }
        close(fd);
    }
    return NULL;
}

typedef struct bench {
    sl_client_t *lib;
    int raw;
    uint8_t *payloads;
    sl_send_message_t messages[MESSAGES];
    uint8_t *raw_send; /* a prebuilt SendMessages frame */
    size_t raw_send_len;
    uint8_t *raw_reply;
} bench_t;

enum { FIG_RAW_SEND, FIG_LIB_SEND, FIG_RAW_POLL, FIG_LIB_POLL, FIGS };
static const char *const names[FIGS] = {
    "SendMessages, raw socket (prebuilt frame)",
    "SendMessages, libsluice send_messages",
    "PollMessages, raw socket (no checks)",
    "PollMessages, libsluice poll_messages",
};

static void raw_trip(bench_t *b, const uint8_t *frame, size_t len)
{
    uint8_t hdr[SL_HEADER_SIZE];
    if (!write_all(b->raw, frame, len) || !read_all(b->raw, hdr, sizeof(hdr)) ||
        !read_all(b->raw, b->raw_reply, sl_header_size(hdr) - SL_HEADER_SIZE))
        die("raw trip");
}

static void trip(bench_t *b, int fig)
{
    uint8_t poll[SL_HEADER_SIZE] = {0};
    sl_polled_messages_t out;
    sl_send_result_t sent;
    switch (fig) {
    case FIG_RAW_SEND:
        raw_trip(b, b->raw_send, b->raw_send_len);
        break;
    case FIG_LIB_SEND:
        if (sl_client_send_messages(b->lib, sl_id_num(1), sl_id_num(1), sl_partitioning_balanced(),
                                    b->messages, MESSAGES, &sent) != 0)
            die("send_messages");
        break;
    case FIG_RAW_POLL: {
        sl_request_header_t h = {.size = SL_HEADER_SIZE,
                                 .client = {1, 1},
                                 .operation = SL_OP_NON_REPLICATED,
                                 .code = SL_CMD_POLL_MESSAGES};
        sl_request_header_encode(poll, &h);
        raw_trip(b, poll, sizeof(poll));
        break;
    }
    default:
        if (sl_client_poll_messages(b->lib, sl_consumer_single(sl_id_num(1)), sl_id_num(1),
                                    sl_id_num(1), 1, sl_poll_offset(0), MESSAGES, false,
                                    &out) != 0 ||
            out.count != MESSAGES)
            die("poll_messages");
        break;
    }
}

static void setup(bench_t *b, uint16_t port)
{
    if (sl_client_connect("127.0.0.1", port, NULL, &b->lib) != 0 ||
        sl_client_login(b->lib, "u", "p", NULL) != 0)
        die("libsluice connect");
    b->payloads = malloc((size_t)MESSAGES * MESSAGE_BYTES);
    b->raw_reply = malloc(SL_FRAME_MAX_DEFAULT);
    if (!b->payloads || !b->raw_reply)
        die("out of memory");
    for (size_t i = 0; i < (size_t)MESSAGES * MESSAGE_BYTES; i++)
        b->payloads[i] = (uint8_t)(i * 131 + (i >> 10));
    for (uint32_t i = 0; i < MESSAGES; i++)
        b->messages[i] = (sl_send_message_t){.payload = b->payloads + (size_t)i * MESSAGE_BYTES,
                                             .payload_len = MESSAGE_BYTES};
    /* The raw frame: what the library just built, sent again as is. */
    if (sl_client_send_messages(b->lib, sl_id_num(1), sl_id_num(1), sl_partitioning_balanced(),
                                b->messages, MESSAGES, NULL) != 0)
        die("first send");
    b->raw_send_len = b->lib->tx.len;
    b->raw_send = malloc(b->raw_send_len);
    if (!b->raw_send)
        die("out of memory");
    memcpy(b->raw_send, b->lib->tx.data, b->raw_send_len);
    b->raw = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {
        .sin_family = AF_INET, .sin_port = htons(port), .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    int one = 1;
    if (b->raw < 0 || connect(b->raw, (struct sockaddr *)&a, sizeof(a)) != 0)
        die("raw connect");
    setsockopt(b->raw, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

static int cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

int main(int argc, char **argv)
{
    double seconds = argc > 1 ? atof(argv[1]) : 0.4;
    static fake_server_t s;
    static bench_t b;
    uint16_t port;
    server_init(&s, &port);
    pthread_t t[2];
    for (int i = 0; i < 2; i++)
        if (pthread_create(&t[i], NULL, serve, &s) != 0)
            die("thread");
    setup(&b, port);
    double cpu_us[FIGS][ROUNDS], rate[FIGS][ROUNDS];
    for (int r = 0; r < ROUNDS; r++)
        for (int f = 0; f < FIGS; f++) {
            int fig = (f + r) % FIGS;
            uint64_t trips = 0, c0 = sl_clock_thread_cpu_ns(), t0 = sl_clock_monotonic_ns(), now = t0;
            while (now - t0 < (uint64_t)(seconds * 1e9)) {
                trip(&b, fig);
                trips++;
                now = sl_clock_monotonic_ns();
            }
            cpu_us[fig][r] = (double)(sl_clock_thread_cpu_ns() - c0) / 1e3 / (double)trips;
            rate[fig][r] = (double)trips / ((double)(now - t0) / 1e9);
        }
    printf("client CPU per ~1 MB trip, fake server thread over TCP loopback, %d rounds x %.2f s\n",
           ROUNDS, seconds);
    printf("  %-44s %12s %12s\n", "figure", "cli us/trip", "trips/s");
    for (int f = 0; f < FIGS; f++) {
        qsort(cpu_us[f], ROUNDS, sizeof(double), cmp_double);
        qsort(rate[f], ROUNDS, sizeof(double), cmp_double);
        printf("  %-44s %12.1f %12.0f\n", names[f], cpu_us[f][ROUNDS / 2], rate[f][ROUNDS / 2]);
    }
    sl_client_close(b.lib);
    close(b.raw);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    return 0;
}
