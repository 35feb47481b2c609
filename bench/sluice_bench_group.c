/* sluice-bench group commit: small batches to one partition of an
 * enforce_fsync topic, from one producer and from several at once, beside
 * the fsync sink (one connection; recv, write, fdatasync per batch, which is
 * the best a server that syncs once per request can do on one file). With
 * group commit, sends that arrive in the same loop turn share one fdatasync,
 * so several producers together can pass what one fsync per request allows. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/clock.h"
#include "sluice_bench.h"

enum {
    GROUP_MESSAGES = 10,   /* per batch */
    GROUP_BYTES = 1000,    /* per message */
    GROUP_FIGS = 3,        /* sink, one producer, many producers */
    GROUP_ROUNDS_MAX = 32, /* rounds kept for medians */
    GROUP_TRIPS_MAX = 1 << 20,
};

static const char *const group_labels[GROUP_FIGS] = {
    "sink: recv + write() + fdatasync, 1 connection (baseline)",
    "sluiced enforce_fsync, 1 producer (libsluice)",
    "sluiced enforce_fsync, N producers (libsluice)",
};

typedef struct group_producer {
    sl_client_t *client;
    const char *stream;
    const sl_send_message_t *messages;
    uint64_t deadline_ns;
    uint64_t trips;
    sb_lat_t lat;
    int error;
} group_producer_t;

typedef struct group_ctx {
    const sb_options_t *o;
    char stream[64];
    int producers;
    group_producer_t *prod; /* producers entries; prod[0] also runs the 1-producer figure */
    sb_trip_t sink;
    uint8_t *sink_frame;
    size_t sink_len;
    uint8_t *payloads;
    sl_send_message_t messages[GROUP_MESSAGES];
    double rate[GROUP_FIGS][GROUP_ROUNDS_MAX]; /* batches per second */
    sb_lat_t lat[GROUP_FIGS];
} group_ctx_t;

static void lat_merge(sb_lat_t *into, const sb_lat_t *from)
{
    for (size_t i = 0; i < from->n; i++)
        sb_lat_push(into, from->ns[i]);
}

static void *producer_main(void *arg)
{
    group_producer_t *p = arg;
    p->trips = 0;
    p->lat.n = 0;
    uint64_t now = sl_clock_monotonic_ns();
    while (now < p->deadline_ns && p->trips < GROUP_TRIPS_MAX && p->error == 0) {
        uint64_t t0 = now;
        sl_send_result_t r;
        p->error =
            sl_client_send_messages(p->client, sl_id_name(p->stream), sl_id_name("gc"),
                                    sl_partitioning_partition(0), p->messages, GROUP_MESSAGES, &r);
        now = sl_clock_monotonic_ns();
        sb_lat_push(&p->lat, now - t0);
        p->trips++;
    }
    return NULL;
}

/* n producers at once for seconds; returns batches per second. */
static double run_producers(group_ctx_t *g, int n, double seconds, sb_lat_t *lat)
{
    pthread_t threads[64];
    uint64_t start = sl_clock_monotonic_ns();
    for (int i = 0; i < n; i++) {
        g->prod[i].deadline_ns = start + (uint64_t)(seconds * 1e9);
        if (pthread_create(&threads[i], NULL, producer_main, &g->prod[i]) != 0)
            sb_die("pthread_create");
    }
    uint64_t trips = 0;
    for (int i = 0; i < n; i++) {
        pthread_join(threads[i], NULL);
        if (g->prod[i].error != 0)
            sb_die("producer %d: sl_client_send_messages: %s", i, sl_strerror(g->prod[i].error));
        trips += g->prod[i].trips;
        if (lat)
            lat_merge(lat, &g->prod[i].lat);
    }
    uint64_t elapsed = sl_clock_monotonic_ns() - start;
    return elapsed ? (double)trips * 1e9 / (double)elapsed : 0.0;
}

static double run_sink(group_ctx_t *g, double seconds, sb_lat_t *lat)
{
    uint64_t start = sl_clock_monotonic_ns(), now = start, trips = 0;
    uint64_t deadline = start + (uint64_t)(seconds * 1e9);
    while (now < deadline && trips < GROUP_TRIPS_MAX) {
        uint64_t t0 = now;
        sb_frame_trip(&g->sink, g->sink_frame, g->sink_len);
        now = sl_clock_monotonic_ns();
        if (lat)
            sb_lat_push(lat, now - t0);
        trips++;
    }
    return (double)trips * 1e9 / (double)(now - start);
}

static double run_group_figure(group_ctx_t *g, int fig, double seconds, sb_lat_t *lat)
{
    if (fig == 0)
        return run_sink(g, seconds, lat);
    return run_producers(g, fig == 1 ? 1 : g->producers, seconds, lat);
}

static void group_connect(group_ctx_t *g, const char *host, uint16_t port)
{
    for (int i = 0; i < g->producers; i++) {
        sl_client_options_t opt = {.request_timeout_ms = 30000};
        int rc = sl_client_connect(host, port, &opt, &g->prod[i].client);
        if (rc == 0)
            rc = sl_client_login(g->prod[i].client, g->o->user, g->o->password, NULL);
        if (rc != 0)
            sb_die("producer %d: connect/login: %s", i, sl_strerror(rc));
        g->prod[i].stream = g->stream;
        g->prod[i].messages = g->messages;
    }
    sl_client_t *c = g->prod[0].client;
    sl_topic_options_t opt = {.set = SL_TOPIC_OPT_ENFORCE_FSYNC, .enforce_fsync = true};
    int rc = sl_client_create_stream(c, g->stream, NULL);
    if (rc == 0)
        rc = sl_client_create_topic(c, sl_id_name(g->stream), "gc", 1, &opt, NULL);
    if (rc != 0)
        sb_die("CreateStream/CreateTopic %s: %s", g->stream, sl_strerror(rc));
}

static void group_messages_init(group_ctx_t *g)
{
    g->payloads = malloc((size_t)GROUP_MESSAGES * GROUP_BYTES);
    /* The sink gets a frame of the size of libsluice's request: header,
     * metadata (about 30 bytes), batch header (64) and frames (64 + payload). */
    g->sink_len = 256 + 30 + 64 + (size_t)GROUP_MESSAGES * (64 + GROUP_BYTES);
    g->sink_frame = calloc(1, g->sink_len);
    if (!g->payloads || !g->sink_frame)
        sb_die("out of memory");
    for (size_t i = 0; i < (size_t)GROUP_MESSAGES * GROUP_BYTES; i++)
        g->payloads[i] = (uint8_t)(i * 151 + 7);
    memcpy(g->sink_frame + 256, g->payloads,
           g->sink_len - 256 < GROUP_MESSAGES * GROUP_BYTES ? g->sink_len - 256
                                                            : (size_t)GROUP_MESSAGES * GROUP_BYTES);
    sb_sink_frame(g->sink_frame, (uint32_t)g->sink_len, SB_SINK_WRITE_SYNC, 0);
    for (int i = 0; i < GROUP_MESSAGES; i++)
        g->messages[i] = (sl_send_message_t){.payload = g->payloads + (size_t)i * GROUP_BYTES,
                                             .payload_len = GROUP_BYTES};
}

static void print_group(group_ctx_t *g, int rounds)
{
    printf("  %-58s %9s %8s %9s %8s %8s\n", "figure", "batches/s", "MB/s", "vs sink", "p50 ms",
           "p99 ms");
    double ratio[GROUP_ROUNDS_MAX];
    for (int fig = 0; fig < GROUP_FIGS; fig++) {
        for (int r = 0; r < rounds; r++)
            ratio[r] = g->rate[0][r] > 0 ? g->rate[fig][r] / g->rate[0][r] : 0.0;
        double v[GROUP_ROUNDS_MAX];
        memcpy(v, g->rate[fig], sizeof(double) * (size_t)rounds);
        double rate = sb_median(v, rounds);
        sb_lat_t *l = &g->lat[fig];
        printf("  %-58s %9.0f %8.1f %8.1f%% %8.3f %8.3f\n", group_labels[fig], rate,
               rate * GROUP_MESSAGES * GROUP_BYTES / 1e6, 100.0 * sb_median(ratio, rounds),
               (double)sb_percentile(l->ns, l->n, 0.50) / 1e6,
               (double)sb_percentile(l->ns, l->n, 0.99) / 1e6);
    }
    printf("  (N = %d; MB = 10^6 payload bytes; medians of %d rounds, vs sink: median of "
           "per-round ratios; latency over all trips)\n",
           g->producers, rounds);
}

void sb_group_run(const sb_options_t *o, const char *host, uint16_t port, const char *dir)
{
    group_ctx_t *g = calloc(1, sizeof(*g));
    if (!g)
        sb_die("out of memory");
    g->o = o;
    g->producers = o->group_producers;
    g->prod = calloc((size_t)g->producers, sizeof(*g->prod));
    if (!g->prod)
        sb_die("out of memory");
    int rounds = o->rounds < GROUP_ROUNDS_MAX ? o->rounds : GROUP_ROUNDS_MAX;
    snprintf(g->stream, sizeof(g->stream), "sluice-bench-group-%d", (int)getpid());
    group_messages_init(g);
    uint16_t sink_port;
    sb_sink_files_t files;
    double lifetime = 120.0 + (double)rounds * (GROUP_FIGS * o->message_seconds + 10.0);
    pid_t sink = sb_sink_start(dir, &sink_port, lifetime, &files);
    g->sink = (sb_trip_t){.fd = sb_connect("127.0.0.1", sink_port), .name = "the sink"};
    group_connect(g, host, port);
    printf("\nGroup commit (%d x %d-byte messages per batch, one enforce_fsync partition, %d "
           "producers for the N figure; %d rounds x %.2f s per figure, order rotating)\n",
           GROUP_MESSAGES, GROUP_BYTES, g->producers, rounds, o->message_seconds);
    for (int fig = 0; fig < GROUP_FIGS; fig++) /* warm-up */
        run_group_figure(g, fig, 0.1, NULL);
    for (int r = 0; r < rounds; r++)
        for (int k = 0; k < GROUP_FIGS; k++) {
            int fig = (r + k) % GROUP_FIGS;
            g->rate[fig][r] = run_group_figure(g, fig, o->message_seconds, &g->lat[fig]);
        }
    print_group(g, rounds);
    if (sl_client_delete_stream(g->prod[0].client, sl_id_name(g->stream)) != 0)
        fprintf(stderr, "sluice-bench: could not delete stream %s\n", g->stream);
    for (int i = 0; i < g->producers; i++) {
        sl_client_close(g->prod[i].client);
        free(g->prod[i].lat.ns);
    }
    for (int fig = 0; fig < GROUP_FIGS; fig++)
        free(g->lat[fig].ns);
    sb_trip_close(&g->sink);
    sb_sink_stop(sink, &files);
    free(g->prod);
    free(g->payloads);
    free(g->sink_frame);
    free(g);
}
