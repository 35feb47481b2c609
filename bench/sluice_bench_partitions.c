/* sluice-bench many-partition figure (issue 9 item 7): the same ~1 MB
 * SendMessages frames sent Balanced (round-robin) to a topic of N
 * partitions and to a 1-partition topic (the baseline), in interleaved
 * slices over one raw connection, with sluiced's VmRSS read after every
 * reply; then the stream is deleted and VmRSS read again with no further
 * request, right after the reply and 2 s later. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/clock.h"
#include "sluice_bench.h"
#include "wire/cmd_messages.h"
#include "wire/codec.h"
#include "wire/command.h"

enum {
    ROUNDS_MAX = 64,
    SLICES = 5,
    BATCH_MESSAGES = 1000,
    SETTLE_MS = 2000,
};

enum { ONE, MANY, TOPICS };
static const char *const topic_names[TOPICS] = {"one", "many"};

typedef struct parts_ctx {
    const sb_options_t *o;
    pid_t pid;
    char stream[64];
    sl_client_t *lib;
    sb_trip_t raw;
    sl_u128_t client;
    uint64_t session;
    uint8_t *frame[TOPICS];
    size_t frame_len[TOPICS];
    uint64_t batches; /* per topic and round */
    /* per round */
    double rate[TOPICS][ROUNDS_MAX];
    double ratio[ROUNDS_MAX];
    /* The slices that began after every partition had been sent to once, so
     * had its first segment (created by its first flush): the round-robin
     * steady state, with the 1-partition slices of the same turns. */
    double warm_ratio[ROUNDS_MAX];
    double rss_created[ROUNDS_MAX], rss_peak[ROUNDS_MAX], rss_deleted[ROUNDS_MAX];
    double rss_settled[ROUNDS_MAX], delete_ms[ROUNDS_MAX];
} parts_ctx_t;

static double rss_mib(const parts_ctx_t *c)
{
    sb_memory_t m;
    if (!sb_memory_read(c->pid, &m))
        sb_die("cannot read /proc/%d/status", (int)c->pid);
    return (double)m.rss_kb / 1024.0;
}

/* A valid Balanced SendMessages frame for topic, on the raw session. */
static uint8_t *build_frame(parts_ctx_t *c, int topic, size_t *len)
{
    sl_buf_t b;
    sl_buf_init(&b, 0);
    memset(sl_buf_extend(&b, SL_HEADER_SIZE), 0, SL_HEADER_SIZE);
    sl_send_messages_request_t q = {
        .stream_id = sl_ident_name(c->stream),
        .topic_id = sl_ident_name(topic_names[topic]),
        .partitioning = {.kind = SL_PARTITIONING_BALANCED},
        .messages_count = BATCH_MESSAGES,
    };
    if (sl_send_messages_metadata_encode(&b, &q) != 0)
        sb_die("cannot encode the SendMessages metadata");
    sl_batch_builder_t bb;
    sl_batch_begin(&bb, &b);
    size_t bytes = (size_t)c->o->partition_message_bytes;
    uint8_t *payload = malloc(bytes);
    if (!payload)
        sb_die("out of memory");
    uint64_t now = sl_clock_realtime_us();
    for (uint32_t i = 0; i < BATCH_MESSAGES; i++) {
        memset(payload, (int)(i * 131u), bytes);
        if (sl_batch_add(&bb, (sl_u128_t){i + 1, (uint64_t)getpid()}, now, sl_span(payload, bytes),
                         sl_span(NULL, 0)) != 0)
            sb_die("cannot add message %u", i);
    }
    free(payload);
    sl_span_t record;
    if (sl_batch_finish(&bb, &record) != 0 || !sl_buf_ok(&b))
        sb_die("cannot finish the batch");
    sl_request_header_t h = {
        .size = (uint32_t)b.len,
        .client = c->client,
        .request = 1,
        .operation = SL_OP_SEND_MESSAGES,
        .session = c->session,
    };
    sl_request_header_encode(b.data, &h);
    *len = b.len;
    return b.data;
}

static void make_topics(parts_ctx_t *c)
{
    int rc = sl_client_create_stream(c->lib, c->stream, NULL);
    for (int t = 0; t < TOPICS && rc == 0; t++)
        rc = sl_client_create_topic(c->lib, sl_id_name(c->stream), topic_names[t],
                                    t == MANY ? (uint32_t)c->o->partitions : 1, NULL, NULL);
    if (rc != 0)
        sb_die("creating stream %s and its topics: %s", c->stream, sl_strerror(rc));
}

/* n trips of topic's frame; returns the elapsed ns, raises *peak to the
 * largest VmRSS read after a reply. */
static uint64_t send_batches(parts_ctx_t *c, int topic, uint64_t n, double *peak)
{
    uint64_t start = sl_clock_monotonic_ns();
    for (uint64_t i = 0; i < n; i++) {
        sb_frame_trip(&c->raw, c->frame[topic], c->frame_len[topic]);
        double rss = rss_mib(c);
        *peak = rss > *peak ? rss : *peak;
    }
    return sl_clock_monotonic_ns() - start;
}

static void parts_round(parts_ctx_t *c, int r)
{
    make_topics(c);
    c->rss_created[r] = rss_mib(c);
    uint64_t ns[TOPICS] = {0, 0}, warm_ns[TOPICS] = {0, 0};
    double peak = c->rss_created[r];
    uint64_t per_slice = (c->batches + SLICES - 1) / SLICES;
    int warm_slices = 0;
    for (int s = 0; s < SLICES; s++) {
        bool warm = (uint64_t)s * per_slice >= (uint64_t)c->o->partitions;
        warm_slices += warm;
        for (int k = 0; k < TOPICS; k++) {
            int t = (s + k) % TOPICS; /* rotating order: a slow spell hits both */
            uint64_t took = send_batches(c, t, per_slice, &peak);
            ns[t] += took;
            warm_ns[t] += warm ? took : 0;
        }
    }
    for (int t = 0; t < TOPICS; t++)
        c->rate[t][r] = ns[t] ? (double)(per_slice * SLICES * c->frame_len[t]) * 1e3 / (double)ns[t]
                              : 0.0; /* MB/s: bytes per microsecond */
    c->ratio[r] = c->rate[ONE][r] > 0 ? c->rate[MANY][r] / c->rate[ONE][r] : 0.0;
    /* Both topics send frames of the same size, so the time ratio is the rate ratio. */
    c->warm_ratio[r] = warm_slices && warm_ns[MANY] ? (double)warm_ns[ONE] / (double)warm_ns[MANY]
                                                    : 0.0;
    c->rss_peak[r] = peak;
    uint64_t t0 = sl_clock_monotonic_ns();
    int rc = sl_client_delete_stream(c->lib, sl_id_name(c->stream));
    if (rc != 0)
        sb_die("DeleteStream %s: %s", c->stream, sl_strerror(rc));
    c->delete_ms[r] = (double)(sl_clock_monotonic_ns() - t0) / 1e6;
    c->rss_deleted[r] = rss_mib(c);
    sb_sleep_ms(SETTLE_MS); /* no request meanwhile: memory must go back by itself */
    c->rss_settled[r] = rss_mib(c);
    printf("  round %d: 1 partition %.0f MB/s, %d partitions %.0f MB/s (%.1f %%; %.1f %% in the "
           "%d slices after each partition had a segment); VmRSS MiB "
           "created %.1f, peak %.1f, after DeleteStream %.1f (it took %.0f ms), %d s later %.1f\n",
           r + 1, c->rate[ONE][r], c->o->partitions, c->rate[MANY][r], 100.0 * c->ratio[r],
           100.0 * c->warm_ratio[r], warm_slices,
           c->rss_created[r], c->rss_peak[r], c->rss_deleted[r], c->delete_ms[r], SETTLE_MS / 1000,
           c->rss_settled[r]);
}

static double median_of(const double *src, int n)
{
    double v[ROUNDS_MAX];
    memcpy(v, src, sizeof(double) * (size_t)n);
    return sb_median(v, n);
}

static void raw_connect(parts_ctx_t *c, const char *host, uint16_t port)
{
    sb_conn_t conn = {0};
    conn.fd = sb_connect(host, port);
    sb_raw_login(&conn, c->o->user, c->o->password);
    sl_request_header_t h;
    if (sl_request_header_decode(conn.frame, UINT32_MAX, &h) != SL_HDR_OK)
        sb_die("cannot read back the raw session");
    c->client = h.client;
    c->session = h.session;
    c->raw = (sb_trip_t){.fd = conn.fd, .name = "sluiced"};
}

void sb_partitions_run(const sb_options_t *o, const char *host, uint16_t port, pid_t server_pid)
{
    if (server_pid <= 0) {
        printf("\nMany partitions: skipped (needs the sluiced the bench starts, for its VmRSS)\n");
        return;
    }
    int rounds = o->rounds < ROUNDS_MAX ? o->rounds : ROUNDS_MAX;
    parts_ctx_t *c = calloc(1, sizeof(*c));
    if (!c)
        sb_die("out of memory");
    c->o = o;
    c->pid = server_pid;
    snprintf(c->stream, sizeof(c->stream), "sluice-bench-parts-%d", (int)getpid());
    /* Deleting a stream of many partitions with data in them takes a while. */
    sl_client_options_t opt = {.request_timeout_ms = 120000};
    int rc = sl_client_connect(host, port, &opt, &c->lib);
    if (rc == 0)
        rc = sl_client_login(c->lib, o->user, o->password, NULL);
    if (rc != 0)
        sb_die("libsluice connect/login: %s", sl_strerror(rc));
    raw_connect(c, host, port);
    for (int t = 0; t < TOPICS; t++)
        c->frame[t] = build_frame(c, t, &c->frame_len[t]);
    c->batches = (uint64_t)o->partition_mb * 1000000ull / c->frame_len[MANY] + 1;
    printf("\nMany partitions (%d x %d-byte messages: %zu-byte SendMessages frames, Balanced, raw "
           "socket; per round %llu frames to a 1-partition topic (baseline) and to a %d-partition "
           "topic in %d interleaved slices; VmRSS of sluiced after every reply; %d rounds)\n",
           BATCH_MESSAGES, o->partition_message_bytes, c->frame_len[MANY],
           (unsigned long long)(c->batches + SLICES - 1) / SLICES * SLICES, o->partitions, SLICES,
           rounds);
    printf("  idle VmRSS before: %.1f MiB\n", rss_mib(c));
    for (int r = 0; r < rounds; r++)
        parts_round(c, r);
    printf("  median: 1 partition %.0f MB/s, %d partitions %.0f MB/s = %.1f %% of it (%.1f %% once "
           "every partition had a segment); VmRSS MiB "
           "peak %.1f (created %.1f), after DeleteStream %.1f, %d s later %.1f\n",
           median_of(c->rate[ONE], rounds), o->partitions, median_of(c->rate[MANY], rounds),
           100.0 * median_of(c->ratio, rounds), 100.0 * median_of(c->warm_ratio, rounds),
           median_of(c->rss_peak, rounds),
           median_of(c->rss_created, rounds), median_of(c->rss_deleted, rounds), SETTLE_MS / 1000,
           median_of(c->rss_settled, rounds));
    sl_client_close(c->lib);
    sb_trip_close(&c->raw);
    for (int t = 0; t < TOPICS; t++)
        free(c->frame[t]);
    free(c);
}
