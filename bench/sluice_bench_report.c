/* sluice-bench, Iggy's kinds: the figures. Per actor: throughput over its
 * measured time (after the warmup) and latency percentiles over its
 * samples, interpolated as iggy-bench does; per actor group: throughputs
 * summed, latency figures averaged over the actors (iggy-bench's "average
 * p50" and so on), min and max over all. Printed in iggy-bench's words,
 * written as JSON (iggy-bench's field names) and drawn as an SVG chart. */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "sluice_bench_run.h"

enum {
    SERIES_POINTS_MAX = 2000, /* the time-series bucket grows to keep to this */
    G_PRODUCERS = 0,
    G_CONSUMERS = 1,
    G_PRODUCING = 2,
    G_AGGREGATE = 3,
    S_MB = 0,
    S_MSG = 1,
    S_LAT = 2,
};

const char *sb_target_name(sb_target_t t)
{
    static const char *const names[SB_TARGETS] = {"ceiling", "sluiced", "nats", "redis"};
    return t < SB_TARGETS ? names[t] : "?";
}

static const char *target_title(sb_target_t t)
{
    static const char *const titles[SB_TARGETS] = {"ceiling", "sluiced", "NATS JetStream",
                                                   "Redis Streams"};
    return t < SB_TARGETS ? titles[t] : "?";
}

static const char *group_prefix(int g)
{
    static const char *const p[SB_GROUPS_MAX] = {"Producers Results", "Consumers Results",
                                                 "Producing Consumer Results",
                                                 "Aggregate Results"};
    return p[g];
}

static const char *group_actor(int g)
{
    static const char *const p[SB_GROUPS_MAX] = {"Producer", "Consumer", "Producing Consumer",
                                                 "Actor"};
    return p[g];
}

/* --- per actor -------------------------------------------------------------------------------- */

static int cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

/* iggy-bench's percentile: linear interpolation between the two nearest
 * ranks of the sorted samples. */
static double percentile(const double *sorted, size_t n, double q)
{
    if (n == 0)
        return 0;
    double rank = q / 100.0 * (double)(n - 1);
    size_t lo = (size_t)floor(rank), hi = (size_t)ceil(rank);
    if (hi >= n)
        hi = n - 1;
    double w = rank - (double)lo;
    return sorted[lo] * (1.0 - w) + sorted[hi] * w;
}

static void actor_metrics(const sb_run_t *run, const sb_actor_t *x, sb_actor_metrics_t *m)
{
    uint64_t from = run->args->warmup_us, last = from;
    double *lat = malloc((x->samples_n ? x->samples_n : 1) * sizeof(double));
    if (!lat)
        sb_die("out of memory");
    size_t n = 0;
    double sum = 0;
    *m = (sb_actor_metrics_t){.id = x->id, .role = x->role, .sent_messages = x->sent_messages,
                              .received_messages = x->received_messages};
    for (size_t i = 0; i < x->samples_n; i++) {
        const sb_sample_t *s = &x->samples[i];
        if (s->end_us <= from)
            continue; /* warmup */
        lat[n] = (double)s->latency_ns / 1e6;
        sum += lat[n++];
        m->messages += s->messages;
        m->bytes += s->bytes;
        m->batches++;
        last = s->end_us > last ? s->end_us : last;
    }
    qsort(lat, n, sizeof(double), cmp_double);
    m->time_s = (double)(last - from) / 1e6;
    if (m->time_s > 0) {
        m->mb_s = (double)m->bytes / 1e6 / m->time_s;
        m->msg_s = (double)m->messages / m->time_s;
    }
    m->p50 = percentile(lat, n, 50);
    m->p90 = percentile(lat, n, 90);
    m->p95 = percentile(lat, n, 95);
    m->p99 = percentile(lat, n, 99);
    m->p999 = percentile(lat, n, 99.9);
    m->p9999 = percentile(lat, n, 99.99);
    m->avg = n ? sum / (double)n : 0;
    m->median = n ? (n % 2 ? lat[n / 2] : (lat[n / 2 - 1] + lat[n / 2]) / 2) : 0;
    m->min = n ? lat[0] : 0;
    m->max = n ? lat[n - 1] : 0;
    double var = 0;
    for (size_t i = 0; i < n; i++)
        var += (lat[i] - m->avg) * (lat[i] - m->avg);
    m->std_dev = n > 1 ? sqrt(var / (double)(n - 1)) : 0;
    free(lat);
}

/* --- per group ---------------------------------------------------------------------------------- */

static int group_of(sb_role_t r)
{
    return r == SB_ROLE_PRODUCER ? G_PRODUCERS : r == SB_ROLE_CONSUMER ? G_CONSUMERS : G_PRODUCING;
}

static bool in_group(int g, sb_role_t r)
{
    return g == G_AGGREGATE ? r != SB_ROLE_PRODUCING_CONSUMER : group_of(r) == g;
}

static void group_metrics(const sb_result_t *r, int g, sb_group_metrics_t *out)
{
    *out = (sb_group_metrics_t){.min = INFINITY};
    for (uint32_t i = 0; i < r->actors_count; i++) {
        const sb_actor_metrics_t *m = &r->actors[i];
        if (!in_group(g, m->role))
            continue;
        out->actors++;
        out->total_mb_s += m->mb_s;
        out->total_msg_s += m->msg_s;
        out->p50 += m->p50;
        out->p90 += m->p90;
        out->p95 += m->p95;
        out->p99 += m->p99;
        out->p999 += m->p999;
        out->p9999 += m->p9999;
        out->avg += m->avg;
        out->median += m->median;
        out->std_dev += m->std_dev;
        out->min = m->min < out->min ? m->min : out->min;
        out->max = m->max > out->max ? m->max : out->max;
        out->total_time_s = m->time_s > out->total_time_s ? m->time_s : out->total_time_s;
        out->messages += m->messages;
        out->bytes += m->bytes;
        out->batches += m->batches;
    }
    if (!out->actors) {
        out->min = 0;
        return;
    }
    double n = out->actors;
    out->present = true;
    out->aggregate = g == G_AGGREGATE;
    out->avg_mb_s = out->total_mb_s / n;
    out->avg_msg_s = out->total_msg_s / n;
    out->p50 /= n;
    out->p90 /= n;
    out->p95 /= n;
    out->p99 /= n;
    out->p999 /= n;
    out->p9999 /= n;
    out->avg /= n;
    out->median /= n;
    out->std_dev /= n;
}

/* Buckets of series_us: MB/s and msg/s summed over the group's actors
 * (then iggy-bench's moving average), latency averaged over the samples
 * that ended in the bucket (NAN where none did). */
static void group_series(const sb_run_t *run, sb_result_t *r, int g)
{
    uint32_t n = r->points;
    double *mb = calloc(n, sizeof(double)), *msg = calloc(n, sizeof(double));
    double *lat = calloc(n, sizeof(double)), *cnt = calloc(n, sizeof(double));
    if (!mb || !msg || !lat || !cnt)
        sb_die("out of memory");
    double bucket_s = (double)r->series_us / 1e6;
    for (uint32_t i = 0; i < run->actors_count; i++) {
        const sb_actor_t *x = &run->actors[i];
        if (!in_group(g, x->role))
            continue;
        for (size_t k = 0; k < x->samples_n; k++) {
            const sb_sample_t *s = &x->samples[k];
            uint64_t b = s->end_us / r->series_us;
            if (b >= n)
                b = n - 1;
            mb[b] += (double)s->bytes / 1e6 / bucket_s;
            msg[b] += s->messages / bucket_s;
            lat[b] += (double)s->latency_ns / 1e6;
            cnt[b]++;
        }
    }
    for (uint32_t b = 0; b < n; b++)
        lat[b] = cnt[b] > 0 ? lat[b] / cnt[b] : NAN;
    uint32_t w = run->args->moving_average_window;
    for (int s = S_MB; s <= S_MSG; s++) {
        double *v = s == S_MB ? mb : msg, *avg = cnt; /* cnt is free now */
        double acc = 0;
        for (uint32_t b = 0; b < n; b++) {
            acc += v[b];
            if (b >= w)
                acc -= v[b - w];
            avg[b] = acc / (double)(b + 1 < w ? b + 1 : w);
        }
        memcpy(v, avg, n * sizeof(double));
    }
    free(cnt);
    r->series[g][S_MB] = mb;
    r->series[g][S_MSG] = msg;
    r->series[g][S_LAT] = lat;
}

void sb_result_compute(const sb_run_t *run, sb_result_t *out)
{
    memset(out, 0, sizeof(*out));
    out->target = run->target;
    out->present = true;
    out->actors_count = run->actors_count;
    out->actors = calloc(run->actors_count ? run->actors_count : 1, sizeof(sb_actor_metrics_t));
    if (!out->actors)
        sb_die("out of memory");
    for (uint32_t i = 0; i < run->actors_count; i++) {
        actor_metrics(run, &run->actors[i], &out->actors[i]);
        out->sent_messages += run->actors[i].sent_messages;
        out->received_messages += run->actors[i].received_messages;
    }
    uint64_t duration_us = run->elapsed_ns / 1000 + 1;
    out->series_us = run->args->sampling_us;
    if (duration_us / out->series_us + 1 > SERIES_POINTS_MAX)
        out->series_us = duration_us / SERIES_POINTS_MAX + 1;
    out->points = (uint32_t)(duration_us / out->series_us + 1);
    bool producers = false, consumers = false;
    for (int g = 0; g < SB_GROUPS_MAX; g++) {
        if (g == G_AGGREGATE && !(producers && consumers))
            continue;
        group_metrics(out, g, &out->groups[g]);
        if (!out->groups[g].present)
            continue;
        producers |= g == G_PRODUCERS;
        consumers |= g == G_CONSUMERS;
        group_series(run, out, g);
    }
}

void sb_result_free(sb_result_t *r)
{
    free(r->actors);
    for (int g = 0; g < SB_GROUPS_MAX; g++)
        for (int s = 0; s < 3; s++)
            free(r->series[g][s]);
    memset(r, 0, sizeof(*r));
}

/* --- printing ---------------------------------------------------------------------------------- */

static uint64_t total_messages(const sb_result_t *r)
{
    uint64_t n = 0;
    for (uint32_t i = 0; i < r->actors_count; i++)
        n += r->actors[i].messages;
    return n;
}

static uint64_t total_bytes(const sb_result_t *r)
{
    uint64_t n = 0;
    for (uint32_t i = 0; i < r->actors_count; i++)
        n += r->actors[i].bytes;
    return n;
}

static void human_bytes(uint64_t n, char *out, size_t len)
{
    static const char *const units[] = {"B", "kB", "MB", "GB", "TB"};
    double v = (double)n;
    int u = 0;
    while (v >= 1000 && u < 4) {
        v /= 1000;
        u++;
    }
    snprintf(out, len, u ? "%.2f %s" : "%.0f %s", v, units[u]);
}

static void print_params(const sb_iggy_args_t *a, const sb_result_t *r, const char *suffix)
{
    char size[32], batch[32], batches[32], data[32];
    snprintf(size, sizeof(size), a->message_size.min == a->message_size.max ? "%u" : "%u..%u",
             a->message_size.min, a->message_size.max);
    snprintf(batch, sizeof(batch),
             a->messages_per_batch.min == a->messages_per_batch.max ? "%u" : "%u..%u",
             a->messages_per_batch.min, a->messages_per_batch.max);
    uint64_t b = 0;
    for (int g = 0; g < SB_GROUPS_MAX - 1; g++)
        b += r->groups[g].batches;
    snprintf(batches, sizeof(batches), "%llu", (unsigned long long)b);
    human_bytes(total_bytes(r), data, sizeof(data));
    printf("Benchmark%s: %s, ", suffix, sb_kind_title(a->kind));
    if (a->kind == SB_KIND_E2E || a->kind == SB_KIND_E2ECG)
        printf("%u producing consumers, ", a->producers);
    else if (a->producers)
        printf("%u producers, ", a->producers);
    if (a->consumers && a->kind != SB_KIND_E2E)
        printf("%u consumers, ", a->consumers);
    printf("%u streams, 1 topic per stream, %u partitions per topic, ", a->streams, a->partitions);
    if (a->consumer_groups)
        printf("%u consumer groups, ", a->consumer_groups);
    printf("%llu messages, %s messages per batch, %s message batches, %s bytes per message, %s of "
           "data processed\n",
           (unsigned long long)total_messages(r), batch, batches, size, data);
}

static void print_group(const sb_group_metrics_t *m, int g, const char *suffix)
{
    printf("%s%s: Total throughput: %.2f MB/s, %.0f messages/s, average throughput per %s: "
           "%.2f MB/s, p50 latency: %.2f ms, p90 latency: %.2f ms, p95 latency: %.2f ms, p99 "
           "latency: %.2f ms, p999 latency: %.2f ms, p9999 latency: %.2f ms, average latency: "
           "%.2f ms, median latency: %.2f ms, min: %.2f ms, max: %.2f ms, std dev: %.2f ms, total "
           "time: %.2f s\n",
           group_prefix(g), suffix, m->total_mb_s, m->total_msg_s, group_actor(g), m->avg_mb_s,
           m->p50, m->p90, m->p95, m->p99, m->p999, m->p9999, m->avg, m->median, m->min, m->max,
           m->std_dev, m->total_time_s);
}

static void print_actors(const sb_result_t *r)
{
    printf("  %-20s %10s %12s %9s %9s %9s %9s %9s %12s\n", "actor", "MB/s", "msg/s", "p50 ms",
           "p99 ms", "p999 ms", "max ms", "time s", "messages");
    for (uint32_t i = 0; i < r->actors_count; i++) {
        const sb_actor_metrics_t *m = &r->actors[i];
        char name[40];
        snprintf(name, sizeof(name), "%s %u", group_actor(group_of(m->role)), m->id);
        printf("  %-20s %10.2f %12.0f %9.3f %9.3f %9.3f %9.3f %9.2f %12llu\n", name, m->mb_s,
               m->msg_s, m->p50, m->p99, m->p999, m->max, m->time_s,
               (unsigned long long)m->messages);
    }
}

void sb_result_print(const sb_iggy_args_t *a, const sb_result_t *r)
{
    /* The main target's lines are exactly iggy-bench's; the others carry
     * their name, so a script that looks for "Producers Results: Total
     * throughput" finds sluiced's line (printed first) and only that. */
    bool main_target = r->target == SB_TARGET_SLUICED ||
                       (a->transport == SB_TRANSPORT_CEILING && r->target == SB_TARGET_CEILING);
    char suffix[48] = "";
    if (!main_target)
        snprintf(suffix, sizeof(suffix), " (%s)", target_title(r->target));
    print_params(a, r, suffix);
    for (int g = 0; g < SB_GROUPS_MAX; g++)
        if (r->groups[g].present)
            print_group(&r->groups[g], g, suffix);
    if (a->pretty)
        print_actors(r);
    printf("messages sent %llu, received %llu (expected to be received %llu)\n\n",
           (unsigned long long)r->sent_messages, (unsigned long long)r->received_messages,
           (unsigned long long)r->expected_messages);
}

void sb_result_print_ratios(const sb_result_t *m, const sb_result_t *base)
{
    for (int g = 0; g < SB_GROUPS_MAX; g++) {
        const sb_group_metrics_t *x = &m->groups[g], *b = &base->groups[g];
        if (!x->present || !b->present || b->total_mb_s <= 0)
            continue;
        printf("%s, %s vs %s: throughput %.1f %% (%.2f of %.2f MB/s), p50 latency %.2fx "
               "(%.3f vs %.3f ms), p99 latency %.2fx (%.3f vs %.3f ms)\n",
               group_prefix(g), target_title(m->target), target_title(base->target),
               100.0 * x->total_mb_s / b->total_mb_s,
               x->total_mb_s, b->total_mb_s, b->p50 > 0 ? x->p50 / b->p50 : 0, x->p50, b->p50,
               b->p99 > 0 ? x->p99 / b->p99 : 0, x->p99, b->p99);
    }
}

/* Payload bytes of every group but the aggregate. */
static uint64_t moved_bytes(const sb_result_t *r)
{
    uint64_t bytes = 0;
    for (int g = 0; g < SB_GROUPS_MAX; g++)
        if (r->groups[g].present && !r->groups[g].aggregate)
            bytes += r->groups[g].bytes;
    return bytes;
}

void sb_result_print_cpu(const sb_result_t *m, const sb_result_t *base)
{
    uint64_t mb = moved_bytes(m), bb = moved_bytes(base);
    if (!m->server_cpu_known || !base->server_cpu_known || mb == 0 || bb == 0 ||
        base->server_cpu_ns == 0)
        return;
    /* us per 10^6 payload bytes: ns / bytes * 1000. */
    double ms = 1e3 * (double)m->server_cpu_ns / (double)mb;
    double bs = 1e3 * (double)base->server_cpu_ns / (double)bb;
    double mc = 1e3 * (double)m->client_cpu_ns / (double)mb;
    double bc = 1e3 * (double)base->client_cpu_ns / (double)bb;
    printf("CPU per MB of payload, %s vs %s: server %.0f vs %.0f us (%.2fx), bench %.0f vs %.0f "
           "us\n",
           target_title(m->target), target_title(base->target), ms, bs, ms / bs, mc, bc);
}
