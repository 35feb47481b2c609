/* sluice-bench, Iggy's kinds: the `output` subcommand's files. report.json
 * uses iggy-bench's field names (params, group_metrics[].summary.
 * total_throughput_megabytes_per_second, ..., individual_metrics) for the
 * main target, with the other targets under "targets"; chart.svg draws
 * throughput and latency over time, one line per target and actor group,
 * in one self-contained file any browser opens. */
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

static const char *const group_keys[SB_GROUPS_MAX] = {"producers", "consumers",
                                                      "producing_consumers",
                                                      "producers_and_consumers"};
static const char *const group_titles[SB_GROUPS_MAX] = {"producers", "consumers",
                                                        "producing consumers", "all actors"};
static const char *const role_keys[SB_ROLES] = {"producer", "consumer", "producing_consumer"};

/* --- JSON ------------------------------------------------------------------------------------- */

static void json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(f, "\\%c", *p);
        else if (*p < 0x20)
            fprintf(f, "\\u%04x", *p);
        else
            fputc(*p, f);
    }
    fputc('"', f);
}

/* Finite numbers only: JSON has no NaN or infinity. */
static void json_number(FILE *f, double v)
{
    fprintf(f, isfinite(v) ? "%.3f" : "null", v);
}

static void json_params(FILE *f, const sb_iggy_args_t *a)
{
    fprintf(f, "{\"benchmark_kind\":");
    json_string(f, sb_kind_key(a->kind));
    fprintf(f, ",\"transport\":");
    json_string(f, sb_transport_name(a->transport));
    fprintf(f, ",\"message_size\":{\"min\":%u,\"max\":%u},\"messages_per_batch\":{\"min\":%u,"
               "\"max\":%u},\"message_batches\":%u,\"total_data\":%llu,\"rate_limit\":%llu,"
               "\"warmup_time_us\":%llu,\"sampling_time_us\":%llu,\"moving_average_window\":%u,"
               "\"producers\":%u,\"consumers\":%u,\"streams\":%u,\"partitions\":%u,"
               "\"consumer_groups\":%u,\"enforce_fsync\":%s,\"identifier\":",
            a->message_size.min, a->message_size.max, a->messages_per_batch.min,
            a->messages_per_batch.max, a->message_batches, (unsigned long long)a->total_data,
            (unsigned long long)a->rate_limit, (unsigned long long)a->warmup_us,
            (unsigned long long)a->sampling_us, a->moving_average_window, a->producers,
            a->consumers, a->streams, a->partitions, a->consumer_groups,
            a->enforce_fsync ? "true" : "false");
    json_string(f, a->identifier);
    fprintf(f, ",\"remark\":");
    json_string(f, a->remark);
    fprintf(f, ",\"extra_info\":");
    json_string(f, a->extra_info);
    fprintf(f, ",\"gitref\":");
    json_string(f, a->gitref);
    fprintf(f, ",\"gitref_date\":");
    json_string(f, a->gitref_date);
    fprintf(f, "}");
}

static void json_latencies(FILE *f, double p50, double p90, double p95, double p99, double p999,
                           double p9999, double avg, double median, double min, double max,
                           double sd, const char *prefix)
{
    const double v[] = {p50, p90, p95, p99, p999, p9999, avg, median, min, max, sd};
    const char *const k[] = {"p50_latency_ms",  "p90_latency_ms",   "p95_latency_ms",
                             "p99_latency_ms",  "p999_latency_ms",  "p9999_latency_ms",
                             "latency_ms",      "median_latency_ms", "min_latency_ms",
                             "max_latency_ms",  "std_dev_latency_ms"};
    for (int i = 0; i < 11; i++) {
        bool plain = i >= 8; /* min, max, std dev carry no "average_" */
        fprintf(f, ",\"%s%s\":", plain ? "" : prefix, k[i]);
        json_number(f, v[i]);
    }
}

static void json_series(FILE *f, const sb_result_t *r, const double *v)
{
    fprintf(f, "{\"points\":[");
    bool first = true;
    for (uint32_t b = 0; v && b < r->points; b++) {
        if (!isfinite(v[b]))
            continue;
        fprintf(f, "%s{\"time_s\":%.3f,\"value\":", first ? "" : ",",
                (double)(b + 1) * (double)r->series_us / 1e6);
        json_number(f, v[b]);
        fputc('}', f);
        first = false;
    }
    fprintf(f, "]}");
}

static void json_groups(FILE *f, const sb_result_t *r)
{
    fprintf(f, "[");
    bool first = true;
    for (int g = 0; g < SB_GROUPS_MAX; g++) {
        const sb_group_metrics_t *m = &r->groups[g];
        if (!m->present)
            continue;
        fprintf(f, "%s{\"summary\":{\"kind\":\"%s\",\"actors\":%u,"
                   "\"total_throughput_megabytes_per_second\":",
                first ? "" : ",", group_keys[g], m->actors);
        json_number(f, m->total_mb_s);
        fprintf(f, ",\"total_throughput_messages_per_second\":");
        json_number(f, m->total_msg_s);
        fprintf(f, ",\"average_throughput_megabytes_per_second\":");
        json_number(f, m->avg_mb_s);
        fprintf(f, ",\"average_throughput_messages_per_second\":");
        json_number(f, m->avg_msg_s);
        json_latencies(f, m->p50, m->p90, m->p95, m->p99, m->p999, m->p9999, m->avg, m->median,
                       m->min, m->max, m->std_dev, "average_");
        fprintf(f, ",\"total_time_secs\":");
        json_number(f, m->total_time_s);
        fprintf(f, ",\"total_messages\":%llu,\"total_user_data_bytes\":%llu,"
                   "\"total_message_batches\":%llu},\"avg_throughput_mb_ts\":",
                (unsigned long long)m->messages, (unsigned long long)m->bytes,
                (unsigned long long)m->batches);
        json_series(f, r, r->series[g][0]);
        fprintf(f, ",\"avg_throughput_msg_ts\":");
        json_series(f, r, r->series[g][1]);
        fprintf(f, ",\"avg_latency_ts\":");
        json_series(f, r, r->series[g][2]);
        fprintf(f, "}");
        first = false;
    }
    fprintf(f, "]");
}

static void json_actors(FILE *f, const sb_result_t *r)
{
    fprintf(f, "[");
    for (uint32_t i = 0; i < r->actors_count; i++) {
        const sb_actor_metrics_t *m = &r->actors[i];
        fprintf(f, "%s{\"summary\":{\"actor_kind\":\"%s\",\"actor_id\":%u,\"total_time_secs\":",
                i ? "," : "", role_keys[m->role], m->id);
        json_number(f, m->time_s);
        fprintf(f, ",\"total_user_data_bytes\":%llu,\"total_messages\":%llu,"
                   "\"total_message_batches\":%llu,\"messages_sent\":%llu,"
                   "\"messages_received\":%llu,\"throughput_megabytes_per_second\":",
                (unsigned long long)m->bytes, (unsigned long long)m->messages,
                (unsigned long long)m->batches, (unsigned long long)m->sent_messages,
                (unsigned long long)m->received_messages);
        json_number(f, m->mb_s);
        fprintf(f, ",\"throughput_messages_per_second\":");
        json_number(f, m->msg_s);
        json_latencies(f, m->p50, m->p90, m->p95, m->p99, m->p999, m->p9999, m->avg, m->median,
                       m->min, m->max, m->std_dev, "");
        fprintf(f, "}}");
    }
    fprintf(f, "]");
}

static void json_target(FILE *f, const sb_result_t *r)
{
    fprintf(f, "{\"target\":\"%s\",\"messages_sent\":%llu,\"messages_received\":%llu,"
               "\"messages_expected\":%llu,\"server_cpu_ns\":%llu,\"bench_cpu_ns\":%llu,"
               "\"group_metrics\":",
            sb_target_name(r->target), (unsigned long long)r->sent_messages,
            (unsigned long long)r->received_messages, (unsigned long long)r->expected_messages,
            (unsigned long long)r->server_cpu_ns, (unsigned long long)r->client_cpu_ns);
    json_groups(f, r);
    fprintf(f, ",\"individual_metrics\":");
    json_actors(f, r);
    fprintf(f, "}");
}

/* The ratio of each group's throughput to the ceiling's, when both ran. */
static void json_ratios(FILE *f, const sb_result_t *m, const sb_result_t *base)
{
    fprintf(f, "{");
    bool first = true;
    for (int g = 0; m && base && g < SB_GROUPS_MAX; g++) {
        if (!m->groups[g].present || !base->groups[g].present || base->groups[g].total_mb_s <= 0)
            continue;
        fprintf(f, "%s\"%s\":{\"throughput\":", first ? "" : ",", group_keys[g]);
        json_number(f, m->groups[g].total_mb_s / base->groups[g].total_mb_s);
        fprintf(f, ",\"p50_latency\":");
        json_number(f, base->groups[g].p50 > 0 ? m->groups[g].p50 / base->groups[g].p50 : NAN);
        fprintf(f, ",\"p99_latency\":");
        json_number(f, base->groups[g].p99 > 0 ? m->groups[g].p99 / base->groups[g].p99 : NAN);
        fprintf(f, "}");
        first = false;
    }
    fprintf(f, "}");
}

static const sb_result_t *find(const sb_result_t *r, int n, sb_target_t t)
{
    for (int i = 0; i < n; i++)
        if (r[i].present && r[i].target == t)
            return &r[i];
    return NULL;
}

static const sb_result_t *main_of(const sb_result_t *r, int n)
{
    const sb_result_t *m = find(r, n, SB_TARGET_SLUICED);
    return m ? m : find(r, n, SB_TARGET_CEILING);
}

static int write_json(const char *path, const sb_iggy_args_t *a, const sb_result_t *r, int n)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    const sb_result_t *m = main_of(r, n), *ceiling = find(r, n, SB_TARGET_CEILING);
    char date[40];
    time_t now = time(NULL);
    strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
    fprintf(f, "{\"tool\":\"sluice-bench\",\"timestamp\":\"%s\",\"params\":", date);
    json_params(f, a);
    fprintf(f, ",\"target\":\"%s\",\"group_metrics\":", m ? sb_target_name(m->target) : "none");
    if (m)
        json_groups(f, m);
    else
        fprintf(f, "[]");
    fprintf(f, ",\"individual_metrics\":");
    if (m)
        json_actors(f, m);
    else
        fprintf(f, "[]");
    fprintf(f, ",\"vs_ceiling\":");
    json_ratios(f, m != ceiling ? m : NULL, ceiling);
    fprintf(f, ",\"targets\":[");
    bool first = true;
    for (int i = 0; i < n; i++) {
        if (!r[i].present)
            continue;
        fprintf(f, "%s", first ? "" : ",");
        json_target(f, &r[i]);
        first = false;
    }
    fprintf(f, "]}\n");
    return fclose(f) == 0 ? 0 : -1;
}

/* --- SVG -------------------------------------------------------------------------------------- */

enum {
    W = 1200,
    PANEL_H = 300,
    LEFT = 90,
    RIGHT = 340, /* the legend */
    TOP = 100,
    GAP = 80,
};

static const char *const colors[SB_TARGETS][SB_GROUPS_MAX] = {
    {"#9e9e9e", "#bdbdbd", "#757575", "#616161"}, /* ceiling: greys */
    {"#1f77b4", "#d62728", "#2ca02c", "#9467bd"}, /* sluiced */
    {"#ff7f0e", "#e377c2", "#8c564b", "#bcbd22"}, /* NATS */
    {"#17becf", "#7f7f7f", "#aec7e8", "#98df8a"}, /* Redis */
};

/* A "nice" step (1, 2 or 5 times a power of ten) giving about 5 ticks. */
static double nice_step(double range)
{
    if (!(range > 0))
        return 1;
    double raw = range / 5, p = pow(10, floor(log10(raw))), m = raw / p;
    return (m < 1.5 ? 1 : m < 3.5 ? 2 : m < 7.5 ? 5 : 10) * p;
}

static void svg_text(FILE *f, double x, double y, const char *anchor, int size, const char *text)
{
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"%s\" font-size=\"%d\">", x, y, anchor,
            size);
    for (const char *p = text; *p; p++) {
        if (*p == '<')
            fputs("&lt;", f);
        else if (*p == '>')
            fputs("&gt;", f);
        else if (*p == '&')
            fputs("&amp;", f);
        else
            fputc(*p, f);
    }
    fputs("</text>\n", f);
}

static double series_max(const sb_result_t *r, int n, int s, double *t_max)
{
    double v = 0;
    for (int i = 0; i < n; i++) {
        if (!r[i].present)
            continue;
        double t = (double)r[i].points * (double)r[i].series_us / 1e6;
        *t_max = t > *t_max ? t : *t_max;
        for (int g = 0; g < SB_GROUPS_MAX; g++)
            for (uint32_t b = 0; r[i].series[g][s] && b < r[i].points; b++)
                if (isfinite(r[i].series[g][s][b]) && r[i].series[g][s][b] > v)
                    v = r[i].series[g][s][b];
    }
    return v;
}

static void svg_axes(FILE *f, int y0, double t_max, double v_max, const char *title,
                     const char *unit)
{
    int plot_w = W - LEFT - RIGHT;
    fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"#ffffff\" "
               "stroke=\"#333333\"/>\n", LEFT, y0, plot_w, PANEL_H);
    svg_text(f, LEFT, y0 - 12, "start", 16, title);
    double step = nice_step(v_max);
    char label[32];
    for (int i = 0; i <= 10 && i * step <= v_max * 1.0001; i++) {
        double y = y0 + PANEL_H - PANEL_H * (i * step) / v_max;
        fprintf(f, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#e0e0e0\"/>\n", LEFT,
                y, LEFT + plot_w, y);
        snprintf(label, sizeof(label), step < 1 ? "%.2f" : "%.0f", i * step);
        svg_text(f, LEFT - 8, y + 4, "end", 12, label);
    }
    double tstep = nice_step(t_max);
    for (int i = 0; i <= 10 && i * tstep <= t_max * 1.0001; i++) {
        double x = LEFT + plot_w * (i * tstep) / t_max;
        fprintf(f, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#e0e0e0\"/>\n", x, y0,
                x, y0 + PANEL_H);
        snprintf(label, sizeof(label), tstep < 1 ? "%.2f" : "%.0f", i * tstep);
        svg_text(f, x, y0 + PANEL_H + 16, "middle", 12, label);
    }
    svg_text(f, LEFT + plot_w / 2.0, y0 + PANEL_H + 34, "middle", 12, "time (s)");
    fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\" font-size=\"12\" "
               "transform=\"rotate(-90 %d %d)\">%s</text>\n",
            22, y0 + PANEL_H / 2, 22, y0 + PANEL_H / 2, unit);
}

static void svg_line(FILE *f, const sb_result_t *r, const double *v, int y0, double t_max,
                     double v_max, const char *color, bool dashed)
{
    int plot_w = W - LEFT - RIGHT;
    fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\"%s points=\"", color,
            dashed ? " stroke-dasharray=\"6 4\"" : "");
    for (uint32_t b = 0; b < r->points; b++) {
        if (!isfinite(v[b]))
            continue;
        double t = (double)(b + 1) * (double)r->series_us / 1e6;
        double x = LEFT + plot_w * t / t_max, y = y0 + PANEL_H - PANEL_H * v[b] / v_max;
        fprintf(f, "%.1f,%.1f ", x, y < y0 ? y0 : y);
    }
    fputs("\"/>\n", f);
}

static void svg_panel(FILE *f, const sb_result_t *r, int n, int s, int y0, const char *title,
                      const char *unit)
{
    double t_max = 0, v_max = series_max(r, n, s, &t_max) * 1.1;
    if (!(v_max > 0))
        v_max = 1;
    if (!(t_max > 0))
        t_max = 1;
    svg_axes(f, y0, t_max, v_max, title, unit);
    int legend = 0;
    for (int i = 0; i < n; i++) {
        for (int g = 0; r[i].present && g < SB_GROUPS_MAX; g++) {
            /* the aggregate is the sum of the other two: its line adds
             * nothing a reader needs and hides theirs */
            if (!r[i].groups[g].present || !r[i].series[g][s] || r[i].groups[g].aggregate)
                continue;
            const char *color = colors[r[i].target][g];
            bool dashed = r[i].target == SB_TARGET_CEILING;
            svg_line(f, &r[i], r[i].series[g][s], y0, t_max, v_max, color, dashed);
            char label[96];
            const sb_group_metrics_t *m = &r[i].groups[g];
            if (s == 0)
                snprintf(label, sizeof(label), "%s %s: %.1f MB/s", sb_target_name(r[i].target),
                         group_titles[g], m->total_mb_s);
            else
                snprintf(label, sizeof(label), "%s %s: p50 %.2f, p99 %.2f ms",
                         sb_target_name(r[i].target), group_titles[g], m->p50, m->p99);
            int ly = y0 + 14 + 20 * legend++;
            fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"%s\" "
                       "stroke-width=\"3\"%s/>\n",
                    W - RIGHT + 12, ly - 4, W - RIGHT + 36, ly - 4, color,
                    dashed ? " stroke-dasharray=\"6 4\"" : "");
            svg_text(f, W - RIGHT + 42, ly, "start", 12, label);
        }
    }
}

static int write_svg(const char *path, const sb_iggy_args_t *a, const sb_result_t *r, int n)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    int h = TOP + 2 * PANEL_H + GAP + 60;
    fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
               "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
               "viewBox=\"0 0 %d %d\" font-family=\"sans-serif\">\n"
               "<rect width=\"100%%\" height=\"100%%\" fill=\"#fafafa\"/>\n",
            W, h, W, h);
    char title[256], size[32], batch[32];
    snprintf(size, sizeof(size), a->message_size.min == a->message_size.max ? "%u" : "%u..%u",
             a->message_size.min, a->message_size.max);
    snprintf(batch, sizeof(batch),
             a->messages_per_batch.min == a->messages_per_batch.max ? "%u" : "%u..%u",
             a->messages_per_batch.min, a->messages_per_batch.max);
    snprintf(title, sizeof(title), "sluice-bench %s (%s): %s-byte messages, %s per batch%s",
             sb_kind_name(a->kind), sb_transport_name(a->transport), size, batch,
             a->enforce_fsync ? ", enforce_fsync" : "");
    svg_text(f, W / 2.0, 30, "middle", 18, title);
    svg_text(f, W / 2.0, 54, "middle", 13,
             "dashed grey: the ceiling (loopback sink on this machine, same client); solid: the "
             "server measured");
    svg_panel(f, r, n, 0, TOP, "Throughput (moving average)", "MB/s");
    svg_panel(f, r, n, 2, TOP + PANEL_H + GAP, "Latency (average per bucket)", "ms");
    fputs("</svg>\n", f);
    return fclose(f) == 0 ? 0 : -1;
}

/* --- the directory ----------------------------------------------------------------------------- */

/* iggy-bench's run name: kind_actors_size_batch_volume_transport[_remark][_gitref][_identifier]. */
static void run_name(const sb_iggy_args_t *a, char *out, size_t len)
{
    char size[32], batch[32], volume[32];
    snprintf(size, sizeof(size), a->message_size.min == a->message_size.max ? "%u" : "%u..%u",
             a->message_size.min, a->message_size.max);
    snprintf(batch, sizeof(batch),
             a->messages_per_batch.min == a->messages_per_batch.max ? "%u" : "%u..%u",
             a->messages_per_batch.min, a->messages_per_batch.max);
    if (a->total_data)
        snprintf(volume, sizeof(volume), "%lluB", (unsigned long long)a->total_data);
    else
        snprintf(volume, sizeof(volume), "%u", a->message_batches);
    uint32_t actors = a->kind == SB_KIND_E2E ? a->producers : a->producers + a->consumers;
    int n = snprintf(out, len, "%s_%u_%s_%s_%s_%s", sb_kind_key(a->kind), actors, size, batch,
                     volume, sb_transport_name(a->transport));
    const char *extra[] = {a->remark, a->gitref, a->identifier};
    for (int i = 0; i < 3 && n > 0 && (size_t)n < len; i++)
        if (extra[i] && extra[i][0])
            n += snprintf(out + n, len - (size_t)n, "_%s", extra[i]);
    for (char *p = out; *p; p++) /* a file name: no separators from user text */
        if (*p == '/' || *p == ' ')
            *p = '-';
}

int sb_report_write(const sb_iggy_args_t *a, const sb_result_t *results, int count,
                    char *dir_out, size_t dir_len)
{
    char name[256], path[1024];
    sb_iggy_args_t named = *a;
    char host[64] = "";
    if (!named.identifier) {
        gethostname(host, sizeof(host) - 1);
        named.identifier = host;
    }
    run_name(&named, name, sizeof(name));
    snprintf(dir_out, dir_len, "%s/%s", a->output_dir, name);
    if (mkdir(a->output_dir, 0755) != 0 && errno != EEXIST)
        return -1;
    if (mkdir(dir_out, 0755) != 0 && errno != EEXIST)
        return -1;
    snprintf(path, sizeof(path), "%s/report.json", dir_out);
    if (write_json(path, &named, results, count) != 0)
        return -1;
    snprintf(path, sizeof(path), "%s/chart.svg", dir_out);
    return write_svg(path, &named, results, count);
}
