/* Request accounting on the loop thread and the Prometheus text of
 * /metrics (metrics.h, docs/metrics.md). */
#include "server/metrics.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/io.h"
#include "server/internal.h"
#include "server/otel.h"
#include "server/tail_cache.h"
#include "server/server.h"
#include "store/offsets.h"
#include "wire/command.h"

/* Microseconds: 50 us to 10 s, roughly 1-2.5-5 per decade. */
static const uint64_t bucket_us[SL_METRICS_BUCKETS] = {
    50,    100,    250,    500,    1000,    2500,    5000,    10000,    25000,
    50000, 100000, 250000, 500000, 1000000, 2500000, 5000000, 10000000, 30000000,
};

static uint16_t slot_internal(void)
{
    return (uint16_t)sl_commands_count;
}

uint16_t sl_metrics_slot_other(void)
{
    return (uint16_t)(sl_commands_count + 1);
}

static void on_sync(void *ctx, uint64_t ns)
{
    sl_metrics_t *m = ctx;
    uint64_t us = ns / 1000u;
    size_t i = 0;
    while (i < SL_METRICS_BUCKETS && us > bucket_us[i])
        i++;
    atomic_fetch_add_explicit(&m->fsync_buckets[i], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&m->fsync_count, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&m->fsync_sum_ns, ns, memory_order_relaxed);
    sl_otel_note_sync(ns); /* a span's fsync time (otel.h) */
}

void sl_metrics_init(sl_metrics_t *m)
{
    sl_assert(sl_commands_count + 2 <= SL_METRICS_COMMANDS_MAX);
    memset(m, 0, sizeof(*m));
    memset(m->by_operation, 0xFF, sizeof(m->by_operation));
    for (size_t i = 0; i < sl_commands_count; i++) {
        const sl_command_t *c = &sl_commands[i];
        if (c->operation != 2 && m->by_operation[c->operation] == 0xFF &&
            c->plane != SL_PLANE_LEGACY)
            m->by_operation[c->operation] = (uint8_t)i;
    }
    sl_io_set_sync_observer(on_sync, m);
}

void sl_metrics_close(sl_metrics_t *m)
{
    (void)m;
    sl_io_set_sync_observer(NULL, NULL);
}

uint16_t sl_metrics_slot(const sl_metrics_t *m, uint8_t operation, uint32_t code)
{
    if (operation != 2)
        return m->by_operation[operation] == 0xFF ? sl_metrics_slot_other()
                                                  : m->by_operation[operation];
    if (sl_internal_code(code))
        return slot_internal();
    const sl_command_t *c = sl_command_by_code(code);
    return c ? (uint16_t)(c - sl_commands) : sl_metrics_slot_other();
}

void sl_histogram_add(sl_histogram_t *h, uint64_t us)
{
    size_t i = 0;
    while (i < SL_METRICS_BUCKETS && us > bucket_us[i])
        i++;
    h->buckets[i]++;
    h->count++;
    h->sum_us += us;
}

void sl_metrics_answered(sl_metrics_t *m, uint16_t slot, uint64_t latency_us, bool error)
{
    if (slot >= SL_METRICS_COMMANDS_MAX)
        slot = sl_metrics_slot_other();
    m->requests[slot]++;
    if (error)
        m->errors[slot]++;
    sl_histogram_add(&m->latency[slot], latency_us);
}

/* --- rendering ------------------------------------------------------------------------- */

__attribute__((format(printf, 2, 3))) static void put(sl_buf_t *out, const char *fmt, ...)
{
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    if (n > 0)
        sl_put_bytes(out, line, (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1);
}

static void family(sl_buf_t *out, const char *name, const char *type, const char *help)
{
    put(out, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void gauge(sl_buf_t *out, const char *name, const char *help, uint64_t v)
{
    family(out, name, "gauge", help);
    put(out, "%s %llu\n", name, (unsigned long long)v);
}

static void counter(sl_buf_t *out, const char *name, const char *help, uint64_t v)
{
    family(out, name, "counter", help);
    put(out, "%s_total %llu\n", name, (unsigned long long)v);
}

const char *sl_metrics_slot_name(uint16_t slot)
{
    if (slot < sl_commands_count)
        return sl_commands[slot].name;
    return slot == slot_internal() ? "Internal" : "Other";
}

/* Histogram samples of one series; labels is "" or `name="x",`. */
static void histogram_samples(sl_buf_t *out, const char *name, const char *labels,
                              const uint64_t *buckets, uint64_t count, double sum_s)
{
    uint64_t cumulative = 0;
    for (size_t i = 0; i < SL_METRICS_BUCKETS; i++) {
        cumulative += buckets[i];
        put(out, "%s_bucket{%sle=\"%g\"} %llu\n", name, labels, (double)bucket_us[i] / 1e6,
            (unsigned long long)cumulative);
    }
    put(out, "%s_bucket{%sle=\"+Inf\"} %llu\n", name, labels, (unsigned long long)count);
    size_t n = strlen(labels);
    put(out, "%s_sum%s%.*s%s %.6f\n", name, n ? "{" : "", n ? (int)n - 1 : 0, labels, n ? "}" : "",
        sum_s);
    put(out, "%s_count%s%.*s%s %llu\n", name, n ? "{" : "", n ? (int)n - 1 : 0, labels,
        n ? "}" : "", (unsigned long long)count);
}

static void render_requests(const sl_metrics_t *m, sl_buf_t *out)
{
    uint16_t slots = (uint16_t)(sl_commands_count + 2);
    family(out, "sluice_requests", "counter", "Requests answered, per command.");
    for (uint16_t i = 0; i < slots; i++)
        if (m->requests[i])
            put(out, "sluice_requests_total{command=\"%s\"} %llu\n", sl_metrics_slot_name(i),
                (unsigned long long)m->requests[i]);
    family(out, "sluice_request_errors", "counter",
           "Requests refused (status, result code or eviction), per command.");
    for (uint16_t i = 0; i < slots; i++)
        if (m->requests[i])
            put(out, "sluice_request_errors_total{command=\"%s\"} %llu\n", sl_metrics_slot_name(i),
                (unsigned long long)m->errors[i]);
    family(out, "sluice_request_duration_seconds", "histogram",
           "Time from a request frame's delivery to its answer, per command.");
    for (uint16_t i = 0; i < slots; i++) {
        const sl_histogram_t *h = &m->latency[i];
        if (!h->count)
            continue;
        char labels[96];
        snprintf(labels, sizeof(labels), "command=\"%s\",", sl_metrics_slot_name(i));
        histogram_samples(out, "sluice_request_duration_seconds", labels, h->buckets, h->count,
                          (double)h->sum_us / 1e6);
    }
}

static void render_fsync(sl_metrics_t *m, sl_buf_t *out)
{
    uint64_t buckets[SL_METRICS_BUCKETS + 1];
    for (size_t i = 0; i <= SL_METRICS_BUCKETS; i++)
        buckets[i] = atomic_load_explicit(&m->fsync_buckets[i], memory_order_relaxed);
    uint64_t count = 0;
    for (size_t i = 0; i <= SL_METRICS_BUCKETS; i++)
        count += buckets[i];
    uint64_t sum_ns = atomic_load_explicit(&m->fsync_sum_ns, memory_order_relaxed);
    family(out, "sluice_fsync_duration_seconds", "histogram",
           "Duration of every fdatasync and fsync the server made.");
    histogram_samples(out, "sluice_fsync_duration_seconds", "", buckets, count,
                      (double)sum_ns / 1e9);
}

static uint64_t resident_bytes(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    unsigned long long size = 0, rss = 0;
    if (f) {
        if (fscanf(f, "%llu %llu", &size, &rss) != 2)
            rss = 0;
        fclose(f);
    }
    return rss * (uint64_t)sysconf(_SC_PAGESIZE);
}

static void render_server(sl_server_t *srv, sl_buf_t *out)
{
    sl_loop_stats_t ls;
    sl_loop_stats(srv->loop, &ls);
    uint32_t sessions = 0;
    for (uint32_t i = 0; i < srv->sessions_count; i++)
        sessions += srv->sessions[i]->bound && !srv->sessions[i]->internal;
    uint32_t clients = srv->sessions_count - srv->internal_count;
    gauge(out, "sluice_connections", "Open binary-protocol connections.", clients);
    gauge(out, "sluice_sessions", "Logged-in binary-protocol sessions.", sessions);
    gauge(out, "clients", "total count of clients.", clients);
    counter(out, "sluice_received_bytes", "Bytes of request frames received.",
            srv->metrics.bytes_in);
    counter(out, "sluice_sent_bytes", "Bytes of reply frames sent.", srv->metrics.bytes_out);
    counter(out, "sluice_messages_received", "Messages admitted by SendMessages.",
            srv->metrics.messages_in);
    counter(out, "sluice_messages_sent", "Messages returned by polls.", srv->metrics.messages_out);
    gauge(out, "process_resident_memory_bytes", "Resident memory of the process.",
          resident_bytes());
    uint64_t now = sl_clock_realtime_us();
    gauge(out, "sluice_uptime_seconds", "Seconds since the server started.",
          now > srv->start_us ? (now - srv->start_us) / 1000000u : 0);
}

static void render_counts(sl_server_t *srv, sl_buf_t *out)
{
    sl_meta_counts_t n;
    sl_meta_counts(srv->meta, &n);
    sl_partitions_stats_t st;
    sl_partitions_all_stats(&srv->partitions, &st);
    gauge(out, "streams", "total count of streams.", n.streams);
    gauge(out, "topics", "total count of topics.", n.topics);
    gauge(out, "partitions", "total count of partitions.", n.partitions);
    gauge(out, "segments", "total count of segments.", st.segments);
    gauge(out, "messages", "total count of messages.", st.messages);
    gauge(out, "users", "total count of users.", n.users);
    gauge(out, "sluice_consumer_groups", "Consumer groups.", n.groups);
}

/* The four per-partition families, one pass per family so each family's
 * samples stay together as the format wants. */
static void render_partitions(sl_server_t *srv, sl_buf_t *out)
{
    static const struct {
        const char *name;
        const char *help;
    } families[] = {
        {"sluice_partition_messages", "Messages stored in the partition."},
        {"sluice_partition_bytes", "Bytes of records stored in the partition."},
        {"sluice_partition_segments", "Segments of the partition, the open one included."},
        {"sluice_partition_current_offset", "Newest offset of the partition (0 when empty)."},
    };
    sl_partitions_t *ps = &srv->partitions;
    for (size_t f = 0; f < SL_ARRAY_LEN(families); f++) {
        family(out, families[f].name, "gauge", families[f].help);
        for (uint32_t t = 0; t < ps->count; t++) {
            const sl_topic_rt_t *rt = ps->topics[t];
            for (uint32_t i = 0; i < rt->partitions_count; i++) {
                const sl_partition_t *p = rt->partitions[i];
                if (!p)
                    continue;
                uint64_t v = f == 0   ? sl_partition_messages(p)
                             : f == 1 ? sl_partition_size(p)
                             : f == 2 ? sl_partition_segments(p)
                                      : sl_partition_current_offset(p);
                put(out, "%s{stream=\"%u\",topic=\"%u\",partition=\"%u\"} %llu\n", families[f].name,
                    rt->stream_id, rt->topic_id, i, (unsigned long long)v);
            }
        }
    }
}

static void render_topic_totals(sl_server_t *srv, sl_buf_t *out)
{
    sl_partitions_t *ps = &srv->partitions;
    family(out, "sluice_topic_messages", "gauge", "Messages stored in the topic.");
    for (uint32_t t = 0; t < ps->count; t++) {
        sl_partitions_stats_t st;
        sl_partitions_topic_stats(ps, ps->topics[t]->stream_id, ps->topics[t]->topic_id, &st);
        put(out, "sluice_topic_messages{stream=\"%u\",topic=\"%u\"} %llu\n",
            ps->topics[t]->stream_id, ps->topics[t]->topic_id, (unsigned long long)st.messages);
    }
    family(out, "sluice_topic_bytes", "gauge", "Bytes of records stored in the topic.");
    for (uint32_t t = 0; t < ps->count; t++) {
        sl_partitions_stats_t st;
        sl_partitions_topic_stats(ps, ps->topics[t]->stream_id, ps->topics[t]->topic_id, &st);
        put(out, "sluice_topic_bytes{stream=\"%u\",topic=\"%u\"} %llu\n", ps->topics[t]->stream_id,
            ps->topics[t]->topic_id, (unsigned long long)st.size_bytes);
    }
    family(out, "sluice_stream_messages", "gauge", "Messages stored in the stream.");
    for (const sl_meta_stream_t *s = sl_meta_stream_next(srv->meta, NULL); s;
         s = sl_meta_stream_next(srv->meta, s)) {
        sl_partitions_stats_t st;
        sl_partitions_stream_stats(ps, s->id, &st);
        put(out, "sluice_stream_messages{stream=\"%u\"} %llu\n", s->id,
            (unsigned long long)st.messages);
    }
}

/* Messages of p the group has not consumed: from its stored offset (or the
 * oldest retained message when none is stored) to the newest. */
static uint64_t group_lag(const sl_partition_t *p, uint32_t group_id)
{
    if (sl_partition_empty(p))
        return 0;
    uint64_t next = sl_partition_current_offset(p) + 1;
    uint64_t stored;
    uint64_t from = sl_offsets_get(p, SL_OFFSETS_GROUP, group_id, &stored) == 0
                        ? stored + 1
                        : sl_partition_first_offset(p);
    return next > from ? next - from : 0;
}

static void render_groups(sl_server_t *srv, sl_buf_t *out, bool lag)
{
    family(out, lag ? "sluice_consumer_group_lag" : "sluice_consumer_group_members", "gauge",
           lag ? "Messages of the partition the group has not committed past."
               : "Members of the consumer group.");
    for (const sl_meta_stream_t *s = sl_meta_stream_next(srv->meta, NULL); s;
         s = sl_meta_stream_next(srv->meta, s)) {
        for (uint32_t t = 0; t < s->topics.count; t++) {
            const sl_meta_topic_t *topic = sl_meta_topic_at(s, t);
            for (uint32_t g = 0; g < topic->groups.count; g++) {
                const sl_meta_group_t *group = sl_meta_group_at(topic, g);
                if (!lag) {
                    put(out,
                        "sluice_consumer_group_members{stream=\"%u\",topic=\"%u\",group=\"%u\"} "
                        "%u\n",
                        s->id, topic->id, group->id, group->members_count);
                    continue;
                }
                for (uint32_t i = 0; i < topic->partitions_count; i++) {
                    const sl_partition_t *p =
                        sl_partitions_get(&srv->partitions, s->id, topic->id, i);
                    if (p)
                        put(out,
                            "sluice_consumer_group_lag{stream=\"%u\",topic=\"%u\",group=\"%u\","
                            "partition=\"%u\"} %llu\n",
                            s->id, topic->id, group->id, i,
                            (unsigned long long)group_lag(p, group->id));
                }
            }
        }
    }
}

/* The OpenTelemetry export's counters (otel.h); all zero with telemetry off. */
static void render_telemetry(const sl_server_t *srv, sl_buf_t *out)
{
    static const char *const signals[2] = {"logs", "traces"};
    sl_otel_stats_t st;
    sl_otel_stats(srv->otel, &st);
    family(out, "sluice_telemetry_exported", "counter",
           "Log records and spans the OpenTelemetry collector took.");
    for (int s = 0; s < 2; s++)
        put(out, "sluice_telemetry_exported_total{signal=\"%s\"} %llu\n", signals[s],
            (unsigned long long)st.exported[s]);
    family(out, "sluice_telemetry_dropped", "counter",
           "Log records and spans dropped: the export queue was full, or the export failed.");
    for (int s = 0; s < 2; s++) {
        put(out, "sluice_telemetry_dropped_total{signal=\"%s\",reason=\"queue_full\"} %llu\n",
            signals[s], (unsigned long long)st.dropped_full[s]);
        put(out, "sluice_telemetry_dropped_total{signal=\"%s\",reason=\"export_failed\"} %llu\n",
            signals[s], (unsigned long long)st.dropped_failed[s]);
    }
    family(out, "sluice_telemetry_export_failures", "counter",
           "Export requests the collector did not take (unreachable, timeout, error status).");
    for (int s = 0; s < 2; s++)
        put(out, "sluice_telemetry_export_failures_total{signal=\"%s\"} %llu\n", signals[s],
            (unsigned long long)st.export_failures[s]);
}

/* At-rest encryption's plaintext tail (server/tail_cache.h); all zero when off. */
static void render_tail_cache(const sl_server_t *srv, sl_buf_t *out)
{
    sl_tail_cache_stats_t st;
    sl_tail_cache_stats(srv->tail_cache, &st);
    counter(out, "sluice_encryption_tail_hits", "Polled messages served from the plaintext tail.",
            st.hits);
    counter(out, "sluice_encryption_tail_misses", "Polled messages that were decrypted.",
            st.misses);
    counter(out, "sluice_encryption_tail_evicted", "Batches the plaintext tail let go for room.",
            st.evicted);
    gauge(out, "sluice_encryption_tail_bytes", "Bytes the plaintext tail holds.", st.held);
    gauge(out, "sluice_encryption_tail_batches", "Batches the plaintext tail holds.", st.batches);
}

void sl_metrics_render(sl_server_t *srv, sl_buf_t *out)
{
    render_counts(srv, out);
    render_server(srv, out);
    render_requests(&srv->metrics, out);
    render_fsync(&srv->metrics, out);
    render_telemetry(srv, out);
    render_tail_cache(srv, out);
    render_topic_totals(srv, out);
    render_partitions(srv, out);
    render_groups(srv, out, false);
    render_groups(srv, out, true);
}
