/* sluice-bench message figures (issue 4): one producer sending batches of
 * 1000 x 1000-byte messages (about 1 MB per request; --batch-messages and
 * --message-bytes choose another shape) to a 1-partition topic,
 * one consumer polling them back, and the producer again on a topic with
 * enforce_fsync; each next to the bare sink (sluice_bench_sink.c) driven by
 * the same lockstep client loop, the figures taking turns in slices. The
 * producer and the consumer run three ways against sluiced: a raw socket
 * resending a prebuilt frame (or ignoring the reply), libsluice lockstep,
 * and libsluice pipelined (the next batch built, or the last reply
 * verified, while a request is in flight; client.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "sluice_bench.h"
#include "wire/cmd_messages.h"
#include "wire/codec.h"
#include "wire/command.h"

enum {
    ROUNDS_MAX = 64,
    SLICES = 5, /* per figure and round (see messages_round) */
    SLICE_TRIPS_MAX = 100000,
    COPY_REGION = 64 * 1024 * 1024, /* the memcpy figure's source, larger than any cache */
};
#define WARMUP_SECONDS 0.1

enum {
    FIG_SINK_WRITE,
    FIG_RAW_SEND,
    FIG_LIB_SEND,
    FIG_PIPE_SEND,
    FIG_SINK_READ,
    FIG_RAW_POLL,
    FIG_LIB_POLL,
    FIG_PIPE_POLL,
    FIG_SINK_SYNC,
    FIG_RAW_SEND_SYNC,
    FIG_LIB_SEND_SYNC,
    FIGS,
    FIGS_PER_GROUP_MAX = 4, /* a baseline and up to three ways of driving sluiced */
};

enum { TOPIC_PLAIN, TOPIC_FSYNC, TOPICS };
static const char *const topic_names[TOPICS] = {"plain", "fsync"};

static const struct {
    const char *label;
    int baseline;
    int topic;
} figures[FIGS] = {
    {"sink: recv + write() (baseline)", FIG_SINK_WRITE, TOPIC_PLAIN},
    {"sluiced SendMessages, raw socket, prebuilt frame", FIG_SINK_WRITE, TOPIC_PLAIN},
    {"sluiced SendMessages, libsluice send_messages", FIG_SINK_WRITE, TOPIC_PLAIN},
    {"sluiced SendMessages, libsluice pipelined", FIG_SINK_WRITE, TOPIC_PLAIN},
    {"sink: 256 B request, pread() + send (baseline)", FIG_SINK_READ, TOPIC_PLAIN},
    {"sluiced PollMessages, raw socket, no checks", FIG_SINK_READ, TOPIC_PLAIN},
    {"sluiced PollMessages, libsluice poll_messages", FIG_SINK_READ, TOPIC_PLAIN},
    {"sluiced PollMessages, libsluice pipelined", FIG_SINK_READ, TOPIC_PLAIN},
    {"sink: recv + write() + fdatasync (baseline)", FIG_SINK_SYNC, TOPIC_FSYNC},
    {"sluiced SendMessages fsync topic, raw socket", FIG_SINK_SYNC, TOPIC_FSYNC},
    {"sluiced SendMessages fsync topic, libsluice", FIG_SINK_SYNC, TOPIC_FSYNC},
};

typedef struct msg_ctx {
    const sb_options_t *o;
    char stream[64];
    sb_trip_t sink, raw;
    sl_client_t *lib;
    sl_u128_t client; /* the raw connection's session */
    uint64_t session;
    uint8_t *send_frame[TOPICS]; /* prebuilt SendMessages, one per topic */
    uint8_t *sink_frame[TOPICS]; /* the same bytes as sink requests (write, write + sync) */
    size_t send_len;
    uint32_t poll_reply_body; /* body of a one-batch poll reply, the sink's read length */
    uint32_t count, size;     /* messages per request (and per poll), payload of each */
    uint8_t *payloads;        /* count x size */
    sl_send_message_t *messages;
    uint64_t next_offset[FIGS]; /* the consumers' cursors */
    bool topics_made;
    pid_t sink_pid, server_pid;
    /* results */
    double rate[FIGS][ROUNDS_MAX], ratio[FIGS][ROUNDS_MAX];
    double cpu_us[FIGS][ROUNDS_MAX];    /* the serving process's, per trip */
    double client_us[FIGS][ROUNDS_MAX]; /* the bench's own, per trip */
    double copy_rate[ROUNDS_MAX];
    sb_lat_t lat[FIGS];
} msg_ctx_t;

/* --- frames ------------------------------------------------------------------------- */

/* The request header of the raw connection's session for one operation. */
static void raw_header(const msg_ctx_t *m, uint8_t *frame, size_t len, uint8_t operation,
                       uint32_t code)
{
    sl_request_header_t h = {
        .size = (uint32_t)len,
        .client = m->client,
        .request = 1, /* > 0; partition ops are not deduplicated (framing.md 6.2) */
        .operation = operation,
        .session = m->session,
        .code = code,
    };
    sl_request_header_encode(frame, &h);
}

/* A valid SendMessages request for topic, built once with the wire
 * builder: metadata section, then the batch record with every checksum. */
static uint8_t *build_send_frame(msg_ctx_t *m, int topic, size_t *len)
{
    sl_buf_t b;
    sl_buf_init(&b, 0);
    memset(sl_buf_extend(&b, SL_HEADER_SIZE), 0, SL_HEADER_SIZE);
    sl_send_messages_request_t q = {
        .stream_id = sl_ident_name(m->stream),
        .topic_id = sl_ident_name(topic_names[topic]),
        .partitioning = {.kind = SL_PARTITIONING_BALANCED},
        .messages_count = m->count,
    };
    sl_batch_builder_t bb;
    sl_span_t record;
    if (sl_send_messages_metadata_encode(&b, &q) != 0)
        sb_die("cannot encode the SendMessages metadata");
    sl_batch_begin(&bb, &b);
    uint64_t now = sl_clock_realtime_us();
    for (uint32_t i = 0; i < m->count; i++) {
        sl_u128_t id = {i + 1, (uint64_t)getpid()};
        sl_span_t payload = sl_span(m->payloads + (size_t)i * m->size, m->size);
        if (sl_batch_add(&bb, id, now, payload, sl_span(NULL, 0)) != 0)
            sb_die("cannot add message %u to the batch", i);
    }
    if (sl_batch_finish(&bb, &record) != 0 || !sl_buf_ok(&b))
        sb_die("cannot finish the batch");
    m->poll_reply_body = (uint32_t)(SL_POLL_REPLY_PREFIX_SIZE + record.len);
    *len = b.len;
    raw_header(m, b.data, b.len, SL_OP_SEND_MESSAGES, 0);
    return b.data; /* the buffer's memory, now owned by the caller */
}

static uint8_t *sink_copy(const uint8_t *frame, size_t len, uint32_t mode)
{
    uint8_t *copy = malloc(len);
    if (!copy)
        sb_die("out of memory");
    memcpy(copy, frame, len);
    sb_sink_frame(copy, (uint32_t)len, mode, 0);
    return copy;
}

/* The raw PollMessages request for m->count from offset (a single
 * consumer, partition absent = 0, no auto-commit). */
static size_t poll_frame(const msg_ctx_t *m, uint64_t offset, uint8_t *out, size_t cap)
{
    sl_buf_t b;
    sl_buf_init_fixed(&b, out, cap);
    memset(sl_buf_extend(&b, SL_HEADER_SIZE), 0, SL_HEADER_SIZE);
    sl_poll_messages_request_t q = {
        .consumer = {.kind = SL_CONSUMER_SINGLE, .id = sl_ident_number(1)},
        .stream_id = sl_ident_name(m->stream),
        .topic_id = sl_ident_name(topic_names[TOPIC_PLAIN]),
        .strategy = {.kind = SL_STRATEGY_OFFSET, .value = offset},
        .count = m->count,
    };
    if (sl_poll_messages_request_encode(&b, &q) != 0 || !sl_buf_ok(&b))
        sb_die("cannot encode the poll request");
    raw_header(m, out, b.len, SL_OP_NON_REPLICATED, SL_CMD_POLL_MESSAGES);
    return b.len;
}

/* --- one trip of each kind ---------------------------------------------------------- */

static size_t trip_raw_poll(msg_ctx_t *m)
{
    uint8_t frame[512];
    size_t len = poll_frame(m, m->next_offset[FIG_RAW_POLL], frame, sizeof(frame));
    size_t size = sb_frame_trip(&m->raw, frame, len);
    if (m->raw.reply_len < SL_POLL_REPLY_PREFIX_SIZE)
        sb_die("short poll reply");
    uint32_t count = sl_load_u32(m->raw.reply + 12);
    m->next_offset[FIG_RAW_POLL] = count ? m->next_offset[FIG_RAW_POLL] + count : 0;
    return size;
}

/* The size of a poll reply: header, prefix, one record header per batch,
 * frames; and the consumer's cursor moved past its messages (back to 0 at
 * the end of the data, as the raw consumer does). */
static size_t polled(msg_ctx_t *m, int fig, const sl_polled_messages_t *out)
{
    m->next_offset[fig] = out->count ? m->next_offset[fig] + out->count : 0;
    size_t size = SL_HEADER_SIZE + SL_POLL_REPLY_PREFIX_SIZE +
                  (size_t)SL_BATCH_HEADER_SIZE * ((out->count + m->count - 1) / m->count);
    for (uint32_t i = 0; i < out->count; i++)
        size += SL_FRAME_HEADER_SIZE + out->messages[i].payload_len + out->messages[i].headers_len;
    return size;
}

static size_t trip_lib_poll(msg_ctx_t *m)
{
    sl_polled_messages_t out;
    int rc = sl_client_poll_messages(
        m->lib, sl_consumer_single(sl_id_num(1)), sl_id_name(m->stream),
        sl_id_name(topic_names[TOPIC_PLAIN]), SL_PARTITION_NONE,
        sl_poll_offset(m->next_offset[FIG_LIB_POLL]), m->count, false, &out);
    if (rc != 0)
        sb_die("sl_client_poll_messages: %s", sl_strerror(rc));
    return polled(m, FIG_LIB_POLL, &out);
}

/* A pipelined poll trip: collect the poll in flight (submitting one when
 * none is), which chains the next poll before verifying this reply. chain
 * false: the last collect of a slice, leaving nothing in flight. */
static size_t pipe_poll(msg_ctx_t *m, bool chain)
{
    uint64_t ticket, chained = 0;
    if (sl_client_in_flight(m->lib) == 0) {
        if (!chain)
            return 0;
        int rc = sl_client_poll_submit(
            m->lib, sl_consumer_single(sl_id_num(1)), sl_id_name(m->stream),
            sl_id_name(topic_names[TOPIC_PLAIN]), SL_PARTITION_NONE,
            sl_poll_offset(m->next_offset[FIG_PIPE_POLL]), m->count, false, &ticket);
        if (rc != 0)
            sb_die("sl_client_poll_submit: %s", sl_strerror(rc));
    }
    sl_polled_messages_t out;
    int rc = sl_client_poll_collect(m->lib, chain, &ticket, &chained, &out);
    if (rc != 0)
        sb_die("sl_client_poll_collect: %s", sl_strerror(rc));
    return polled(m, FIG_PIPE_POLL, &out);
}

/* A pipelined send trip: submit this batch, then collect the one before
 * it (which the server handled while this one was built). */
static void pipe_collect(msg_ctx_t *m)
{
    uint64_t ticket;
    sl_send_result_t r;
    int rc = sl_client_send_collect(m->lib, &ticket, &r);
    if (rc != 0)
        sb_die("sl_client_send_collect: %s", sl_strerror(rc));
}

static size_t trip_pipe_send(msg_ctx_t *m)
{
    uint64_t ticket;
    int rc = sl_client_send_messages_submit(
        m->lib, sl_id_name(m->stream), sl_id_name(topic_names[TOPIC_PLAIN]),
        sl_partitioning_balanced(), m->messages, m->count, &ticket);
    if (rc != 0)
        sb_die("sl_client_send_messages_submit: %s", sl_strerror(rc));
    if (sl_client_in_flight(m->lib) > 1)
        pipe_collect(m);
    return m->send_len;
}

/* The end of a pipelined slice: what is still in flight is collected
 * inside the slice's time (a poll's reply counts its bytes). */
static size_t pipe_drain(msg_ctx_t *m, int fig)
{
    size_t bytes = 0;
    if (fig == FIG_PIPE_POLL)
        return pipe_poll(m, false);
    while (fig == FIG_PIPE_SEND && sl_client_in_flight(m->lib) > 0)
        pipe_collect(m);
    return bytes;
}

static size_t trip_lib_send(msg_ctx_t *m, int topic)
{
    sl_send_result_t r;
    int rc = sl_client_send_messages(m->lib, sl_id_name(m->stream), sl_id_name(topic_names[topic]),
                                     sl_partitioning_balanced(), m->messages, m->count, &r);
    if (rc != 0)
        sb_die("sl_client_send_messages: %s", sl_strerror(rc));
    return m->send_len;
}

/* One trip of fig; returns the bytes it moved: the request frame for
 * producers, the reply frame for consumers. */
static size_t trip(msg_ctx_t *m, int fig)
{
    uint8_t read_req[SL_HEADER_SIZE] = {0};
    switch (fig) {
    case FIG_SINK_WRITE:
    case FIG_SINK_SYNC:
        sb_frame_trip(&m->sink, m->sink_frame[figures[fig].topic], m->send_len);
        return m->send_len;
    case FIG_RAW_SEND:
    case FIG_RAW_SEND_SYNC:
        sb_frame_trip(&m->raw, m->send_frame[figures[fig].topic], m->send_len);
        return m->send_len;
    case FIG_LIB_SEND:
    case FIG_LIB_SEND_SYNC:
        return trip_lib_send(m, figures[fig].topic);
    case FIG_PIPE_SEND:
        return trip_pipe_send(m);
    case FIG_PIPE_POLL:
        return pipe_poll(m, true);
    case FIG_SINK_READ:
        sb_sink_frame(read_req, SL_HEADER_SIZE, SB_SINK_READ, m->poll_reply_body);
        return sb_frame_trip(&m->sink, read_req, sizeof(read_req));
    case FIG_RAW_POLL:
        return trip_raw_poll(m);
    default:
        return trip_lib_poll(m);
    }
}

/* Trips of fig for seconds (and at most SLICE_TRIPS_MAX); bytes moved go
 * to *bytes, each trip's latency to lat (when given). */
static sb_rate_t run_figure(msg_ctx_t *m, int fig, double seconds, uint64_t *bytes, sb_lat_t *lat)
{
    uint64_t start = sl_clock_monotonic_ns(), now = start;
    uint64_t deadline = start + (uint64_t)(seconds * 1e9);
    uint64_t trips = 0;
    while (trips < SLICE_TRIPS_MAX && now < deadline) {
        uint64_t t0 = now;
        *bytes += trip(m, fig);
        now = sl_clock_monotonic_ns();
        if (lat)
            sb_lat_push(lat, now - t0);
        trips++;
    }
    if (fig == FIG_PIPE_SEND || fig == FIG_PIPE_POLL) {
        *bytes += pipe_drain(m, fig);
        now = sl_clock_monotonic_ns();
    }
    return (sb_rate_t){trips, now - start};
}

/* --- memcpy bandwidth (context for the consumer figure) --------------------------------- */

/* Batch-sized copies out of a 64 MB region for about seconds; bytes per second. */
static double copy_bandwidth(const uint8_t *region, uint8_t *dst, size_t chunk, double seconds)
{
    uint64_t start = sl_clock_monotonic_ns(), now = start, copied = 0;
    uint64_t deadline = start + (uint64_t)(seconds * 1e9);
    for (size_t at = 0, i = 0; i < 1000000 && now < deadline; i++) {
        memcpy(dst, region + at, chunk);
        copied += chunk;
        at = at + 2 * chunk <= COPY_REGION ? at + chunk : 0;
        now = sl_clock_monotonic_ns();
    }
    __asm__ volatile("" : : "r"(dst) : "memory"); /* the copies are used */
    return now > start ? (double)copied * 1e9 / (double)(now - start) : 0.0;
}

/* --- rounds ------------------------------------------------------------------------- */

/* Fresh topics for a round (untimed): the data of the last one goes, so the
 * page cache never holds more than a round's worth of dirty bytes; the
 * sink truncates its files for the same reason. */
static void topics_reset(msg_ctx_t *m)
{
    for (int t = 0; t < TOPICS; t++) {
        sl_id_t stream = sl_id_name(m->stream);
        int rc =
            m->topics_made ? sl_client_delete_topic(m->lib, stream, sl_id_name(topic_names[t])) : 0;
        if (rc != 0)
            sb_die("DeleteTopic %s: %s", topic_names[t], sl_strerror(rc));
        sl_topic_options_t opt = {.set = SL_TOPIC_OPT_ENFORCE_FSYNC,
                                  .enforce_fsync = t == TOPIC_FSYNC};
        rc = sl_client_create_topic(m->lib, stream, topic_names[t], 1, &opt, NULL);
        if (rc != 0)
            sb_die("CreateTopic %s: %s", topic_names[t], sl_strerror(rc));
    }
    m->topics_made = true;
    uint8_t reset[SL_HEADER_SIZE] = {0};
    sb_sink_frame(reset, SL_HEADER_SIZE, SB_SINK_RESET, 0);
    sb_frame_trip(&m->sink, reset, sizeof(reset));
    memset(m->next_offset, 0, sizeof(m->next_offset));
}

/* One group (a baseline and the two sluiced figures measured against it):
 * each gets o->message_seconds in SLICES slices, taking turns in rotating
 * order so a slow spell of the shared machine lands on all three alike. */
static void group_round(msg_ctx_t *m, int first, int figs, int r)
{
    sb_rate_t total[FIGS_PER_GROUP_MAX];
    uint64_t bytes[FIGS_PER_GROUP_MAX], cpu[FIGS_PER_GROUP_MAX], client[FIGS_PER_GROUP_MAX];
    memset(total, 0, sizeof(total));
    memset(bytes, 0, sizeof(bytes));
    memset(cpu, 0, sizeof(cpu));
    memset(client, 0, sizeof(client));
    double slice = m->o->message_seconds / SLICES;
    for (int s = 0; s < SLICES; s++) {
        for (int k = 0; k < figs; k++) {
            int i = (s + k) % figs, fig = first + i;
            pid_t pid = i == 0 ? m->sink_pid : m->server_pid;
            uint64_t before = sb_process_cpu_ns(pid), own = sl_clock_thread_cpu_ns();
            sb_rate_t x = run_figure(m, fig, slice, &bytes[i], &m->lat[fig]);
            cpu[i] += sb_process_cpu_ns(pid) - before;
            client[i] += sl_clock_thread_cpu_ns() - own;
            total[i].trips += x.trips;
            total[i].elapsed_ns += x.elapsed_ns;
        }
    }
    for (int i = 0; i < figs; i++) {
        int fig = first + i;
        m->rate[fig][r] =
            total[i].elapsed_ns ? (double)bytes[i] * 1e9 / (double)total[i].elapsed_ns : 0.0;
        double trips = total[i].trips ? (double)total[i].trips : 1.0;
        m->cpu_us[fig][r] = (double)cpu[i] / 1e3 / trips;
        m->client_us[fig][r] = (double)client[i] / 1e3 / trips;
        m->ratio[fig][r] = m->rate[first][r] > 0 ? m->rate[fig][r] / m->rate[first][r] : 0.0;
    }
}

static void messages_round(msg_ctx_t *m, int r, const uint8_t *region, uint8_t *dst)
{
    topics_reset(m);
    m->copy_rate[r] = copy_bandwidth(region, dst, (size_t)m->count * m->size, 0.1);
    /* Producers first: the consumers read their data. */
    group_round(m, FIG_SINK_WRITE, FIG_SINK_READ - FIG_SINK_WRITE, r);
    group_round(m, FIG_SINK_READ, FIG_SINK_SYNC - FIG_SINK_READ, r);
    group_round(m, FIG_SINK_SYNC, FIGS - FIG_SINK_SYNC, r);
}

/* --- output --------------------------------------------------------------------------- */

static double min_of(const double *v, int n)
{
    double x = v[0];
    for (int i = 1; i < n; i++)
        x = v[i] < x ? v[i] : x;
    return x;
}

static double max_of(const double *v, int n)
{
    double x = v[0];
    for (int i = 1; i < n; i++)
        x = v[i] > x ? v[i] : x;
    return x;
}

static double median_of(const double *src, int rounds)
{
    double v[ROUNDS_MAX];
    memcpy(v, src, sizeof(double) * (size_t)rounds);
    return sb_median(v, rounds);
}

static void print_per_round(const char *label, const double *v, int rounds)
{
    printf("  per-round %s:", label);
    for (int r = 0; r < rounds; r++)
        printf(" %.1f%%", 100.0 * v[r]);
    printf("\n");
}

/* Medians (and ranges) over rounds; latencies over every trip of all rounds. */
static void print_row(msg_ctx_t *m, int fig, int rounds)
{
    double v[ROUNDS_MAX];
    memcpy(v, m->rate[fig], sizeof(double) * (size_t)rounds);
    double lo = min_of(v, rounds) / 1e6, hi = max_of(v, rounds) / 1e6;
    double rate = sb_median(v, rounds) / 1e6;
    memcpy(v, m->ratio[fig], sizeof(double) * (size_t)rounds);
    double ratio = sb_median(v, rounds) * 100.0;
    double rlo = min_of(v, rounds) * 100.0, rhi = max_of(v, rounds) * 100.0;
    double cpu = median_of(m->cpu_us[fig], rounds), client = median_of(m->client_us[fig], rounds);
    sb_lat_t *l = &m->lat[fig];
    uint64_t p50 = sb_percentile(l->ns, l->n, 0.50), p99 = sb_percentile(l->ns, l->n, 0.99);
    printf("  %-50s %6.0f %5.2f %5.0f-%-5.0f %6.1f%% %4.0f-%-4.0f %6.3f %6.3f %6.0f %6.0f %6zu\n",
           figures[fig].label, rate, rate / 1e3, lo, hi, ratio, rlo, rhi, (double)p50 / 1e6,
           (double)p99 / 1e6, cpu, client, l->n);
}

static const char *met(bool ok)
{
    return ok ? "met" : "MISSED";
}

/* Issue 14, shape 5: libsluice (lockstep, pipelined) against the raw
 * socket of the same rounds, per round and the median, with the bench's
 * own CPU per trip. */
static void print_vs_raw(msg_ctx_t *m, int rounds, int raw, int lib, const char *what)
{
    for (int fig = lib; fig <= lib + 1; fig++) {
        double v[ROUNDS_MAX];
        printf("  %s, libsluice %s / raw socket, per round:", what,
               fig == lib ? "lockstep" : "pipelined");
        for (int r = 0; r < rounds; r++) {
            v[r] = m->rate[raw][r] > 0 ? m->rate[fig][r] / m->rate[raw][r] : 0.0;
            printf(" %.2f", v[r]);
        }
        double ratio = sb_median(v, rounds);
        printf("; median %.2f, aim >= 0.90 %s; bench CPU per trip %.0f us (raw %.0f us)\n", ratio,
               met(ratio >= 0.90), median_of(m->client_us[fig], rounds),
               median_of(m->client_us[raw], rounds));
    }
}

static void print_aims(msg_ctx_t *m, int rounds)
{
    print_vs_raw(m, rounds, FIG_RAW_SEND, FIG_LIB_SEND, "produce");
    print_vs_raw(m, rounds, FIG_RAW_POLL, FIG_LIB_POLL, "consume");
    for (int fig = FIG_RAW_SEND; fig <= FIG_LIB_SEND; fig++) {
        sb_lat_t *l = &m->lat[fig];
        double p99 = (double)sb_percentile(l->ns, l->n, 0.99) / 1e6;
        double ratio = median_of(m->ratio[fig], rounds);
        printf(
            "  aim produce >= 75 %% of the sink, p99 < 2.5 ms (%s): %.1f %% %s, p99 %.3f ms %s\n",
            fig == FIG_RAW_SEND ? "raw" : "libsluice", 100.0 * ratio, met(ratio >= 0.75), p99,
            met(p99 < 2.5));
    }
    for (int fig = FIG_RAW_POLL; fig <= FIG_LIB_POLL; fig++) {
        double rate = median_of(m->rate[fig], rounds) / 1e9;
        printf("  aim consume >= 1.5 GB/s (%s): %.2f GB/s %s\n",
               fig == FIG_RAW_POLL ? "raw" : "libsluice", rate, met(rate >= 1.5));
    }
    for (int fig = FIG_RAW_SEND_SYNC; fig <= FIG_LIB_SEND_SYNC; fig++) {
        double ratio = median_of(m->ratio[fig], rounds);
        printf("  aim produce with enforce_fsync >= 80 %% of the fsync sink (%s): %.1f %% %s\n",
               fig == FIG_RAW_SEND_SYNC ? "raw" : "libsluice", 100.0 * ratio, met(ratio >= 0.80));
    }
}

static void print_results(msg_ctx_t *m, int rounds)
{
    for (int fig = 0; fig < FIGS; fig++)
        if (figures[fig].baseline != fig)
            print_per_round(figures[fig].label, m->ratio[fig], rounds);
    printf("  %-50s %6s %5s %11s %7s %9s %6s %6s %6s %6s %6s\n", "figure", "MB/s", "GB/s",
           "MB/s range", "vs base", "range %", "p50 ms", "p99 ms", "srv us", "cli us", "trips");
    for (int fig = 0; fig < FIGS; fig++)
        print_row(m, fig, rounds);
    printf("  memcpy of batch-sized blocks out of a 64 MB region (context): %.2f GB/s (median; "
           "%.2f-%.2f)\n",
           median_of(m->copy_rate, rounds) / 1e9, min_of(m->copy_rate, rounds) / 1e9,
           max_of(m->copy_rate, rounds) / 1e9);
    printf(
        "  (MB = 10^6 bytes of request frames (produce) or reply frames (consume); medians of "
        "%d rounds, ranges min-max of rounds; vs base: medians of per-round ratios; latency: "
        "one request to its whole reply, over all trips; srv us: CPU time of the serving process "
        "(sink or sluiced, all threads, clock-tick resolution) per trip; cli us: the bench's "
        "own CPU time per trip)\n",
        rounds);
    print_aims(m, rounds);
}

/* --- set-up ------------------------------------------------------------------------------ */

/* The raw connection to sluiced: a raw login, whose session the prebuilt
 * frames carry. */
static void raw_connect(msg_ctx_t *m, const char *host, uint16_t port)
{
    sb_conn_t c = {0};
    c.fd = sb_connect(host, port);
    sb_raw_login(&c, m->o->user, m->o->password);
    sl_request_header_t h;
    if (sl_request_header_decode(c.frame, UINT32_MAX, &h) != SL_HDR_OK)
        sb_die("cannot read back the raw session");
    m->client = h.client;
    m->session = h.session;
    m->raw = (sb_trip_t){.fd = c.fd, .name = "sluiced"};
}

static void library_connect(msg_ctx_t *m, const char *host, uint16_t port)
{
    /* Deleting a topic with a round's data in it takes a while. */
    sl_client_options_t opt = {.request_timeout_ms = 30000};
    int rc = sl_client_connect(host, port, &opt, &m->lib);
    if (rc == 0)
        rc = sl_client_login(m->lib, m->o->user, m->o->password, NULL);
    if (rc == 0)
        rc = sl_client_create_stream(m->lib, m->stream, NULL);
    if (rc != 0)
        sb_die("libsluice connect/login/CreateStream %s: %s", m->stream, sl_strerror(rc));
}

/* The messages a libsluice producer sends: payloads in one block, ids left
 * 0 (the library draws a random UUIDv4 each, as it does for a user who sets
 * none), origin timestamps 0 (now). */
static void messages_init(msg_ctx_t *m)
{
    m->payloads = malloc((size_t)m->count * m->size);
    m->messages = calloc(m->count, sizeof(*m->messages));
    if (!m->payloads || !m->messages)
        sb_die("out of memory");
    for (size_t i = 0; i < (size_t)m->count * m->size; i++)
        m->payloads[i] = (uint8_t)(i * 131 + (i >> 10));
    for (uint32_t i = 0; i < m->count; i++) {
        m->messages[i].payload = m->payloads + (size_t)i * m->size;
        m->messages[i].payload_len = m->size;
    }
}

static void warm_up(msg_ctx_t *m)
{
    uint64_t bytes = 0;
    for (int fig = 0; fig < FIGS; fig++)
        run_figure(m, fig, WARMUP_SECONDS, &bytes, NULL);
}

static void messages_free(msg_ctx_t *m)
{
    for (int t = 0; t < TOPICS; t++) {
        free(m->send_frame[t]);
        free(m->sink_frame[t]);
    }
    for (int fig = 0; fig < FIGS; fig++)
        free(m->lat[fig].ns);
    free(m->payloads);
    free(m->messages);
    free(m);
}

void sb_messages_run(const sb_options_t *o, const char *host, uint16_t port, const char *dir,
                     pid_t server_pid)
{
    int rounds = o->rounds < ROUNDS_MAX ? o->rounds : ROUNDS_MAX;
    msg_ctx_t *m = calloc(1, sizeof(*m));
    if (!m)
        sb_die("out of memory");
    m->o = o;
    m->count = (uint32_t)o->batch_messages;
    m->size = (uint32_t)o->message_bytes;
    m->server_pid = server_pid;
    snprintf(m->stream, sizeof(m->stream), "sluice-bench-msg-%d", (int)getpid());
    messages_init(m);
    uint16_t sink_port;
    sb_sink_files_t files;
    double lifetime = 120.0 + (double)rounds * (FIGS * o->message_seconds + 30.0);
    m->sink_pid = sb_sink_start(dir, &sink_port, lifetime, &files);
    m->sink = (sb_trip_t){.fd = sb_connect("127.0.0.1", sink_port), .name = "the sink"};
    raw_connect(m, host, port);
    library_connect(m, host, port);
    for (int t = 0; t < TOPICS; t++) {
        m->send_frame[t] = build_send_frame(m, t, &m->send_len);
        m->sink_frame[t] = sink_copy(m->send_frame[t], m->send_len,
                                     t == TOPIC_PLAIN ? SB_SINK_WRITE : SB_SINK_WRITE_SYNC);
    }
    uint8_t *region = malloc(COPY_REGION), *dst = malloc((size_t)m->count * m->size);
    if (!region || !dst)
        sb_die("out of memory");
    memset(region, 0x5a, COPY_REGION);
    printf("\nMessages (%d x %d-byte messages per batch, %zu-byte SendMessages frames, polls of "
           "%d; 1-partition topics; %d rounds x %.2f s per figure in %d interleaved slices; "
           "sink on port %u, files in %s)\n",
           m->count, m->size, m->send_len, m->count, rounds, o->message_seconds, SLICES, sink_port,
           dir);
    topics_reset(m);
    warm_up(m);
    for (int r = 0; r < rounds; r++)
        messages_round(m, r, region, dst);
    print_results(m, rounds);
    if (sl_client_delete_stream(m->lib, sl_id_name(m->stream)) != 0)
        fprintf(stderr, "sluice-bench: could not delete stream %s\n", m->stream);
    sl_client_close(m->lib);
    sb_trip_close(&m->raw);
    sb_trip_close(&m->sink);
    sb_sink_stop(m->sink_pid, &files);
    free(region);
    free(dst);
    messages_free(m);
}
