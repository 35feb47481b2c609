/* sluice-bench: iggy-bench's command line. Global options come before the
 * kind, the kind's own options after it, then the transport with its
 * options, then an optional `output` subcommand with its own: the order
 * iggy-bench (clap subcommands) imposes, so a command line from Iggy's docs
 * parses unchanged. Pure functions: errors come back as text, nothing is
 * printed here except by the two help functions. */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <getopt.h>
#include <string.h>

#include "sluice_bench_iggy.h"

/* --- names ---------------------------------------------------------------------- */

static const struct {
    const char *name, *alias, *title, *key;
} kinds[SB_KIND_COUNT] = {
    [SB_KIND_PP] = {"pinned-producer", "pp", "Pinned Producer", "pinned_producer"},
    [SB_KIND_PC] = {"pinned-consumer", "pc", "Pinned Consumer", "pinned_consumer"},
    [SB_KIND_PPC] = {"pinned-producer-and-consumer", "ppc", "Pinned Producer And Consumer",
                     "pinned_producer_and_consumer"},
    [SB_KIND_BP] = {"balanced-producer", "bp", "Balanced Producer", "balanced_producer"},
    [SB_KIND_BCG] = {"balanced-consumer-group", "bcg", "Balanced Consumer Group",
                     "balanced_consumer_group"},
    [SB_KIND_BPCG] = {"balanced-producer-and-consumer-group", "bpcg",
                      "Balanced Producer And Consumer Group",
                      "balanced_producer_and_consumer_group"},
    [SB_KIND_E2E] = {"end-to-end-producing-consumer", "e2e", "End To End Producing Consumer",
                     "end_to_end_producing_consumer"},
    [SB_KIND_E2ECG] = {"end-to-end-producing-consumer-group", "e2ecg",
                       "End To End Producing Consumer Group",
                       "end_to_end_producing_consumer_group"},
};

const char *sb_kind_name(sb_kind_t k)
{
    return k > SB_KIND_NONE && k < SB_KIND_COUNT ? kinds[k].name : "none";
}

const char *sb_kind_title(sb_kind_t k)
{
    return k > SB_KIND_NONE && k < SB_KIND_COUNT ? kinds[k].title : "None";
}

const char *sb_kind_key(sb_kind_t k)
{
    return k > SB_KIND_NONE && k < SB_KIND_COUNT ? kinds[k].key : "none";
}

const char *sb_transport_name(sb_transport_t t)
{
    switch (t) {
    case SB_TRANSPORT_TCP:
        return "tcp";
    case SB_TRANSPORT_CEILING:
        return "ceiling";
    case SB_TRANSPORT_PEERS:
        return "peers";
    default:
        return "none";
    }
}

static sb_kind_t kind_of(const char *word)
{
    for (int k = SB_KIND_NONE + 1; k < SB_KIND_COUNT; k++)
        if (strcmp(word, kinds[k].name) == 0 || strcmp(word, kinds[k].alias) == 0)
            return (sb_kind_t)k;
    return SB_KIND_NONE;
}

/* --- values ------------------------------------------------------------------------ */

/* A non-negative decimal number with an optional fraction; *end after it. */
static bool read_number(const char *s, double *out, const char **end)
{
    if (!isdigit((unsigned char)*s))
        return false;
    errno = 0;
    char *e;
    double v = strtod(s, &e);
    if (errno != 0 || e == s || v < 0)
        return false;
    *out = v;
    *end = e;
    return true;
}

int sb_parse_size(const char *s, uint64_t *out)
{
    static const struct {
        const char *unit;
        double factor;
    } units[] = {
        {"", 1},
        {"b", 1},
        {"kb", 1e3},
        {"mb", 1e6},
        {"gb", 1e9},
        {"tb", 1e12},
        {"kib", 1024.0},
        {"mib", 1048576.0},
        {"gib", 1073741824.0},
        {"tib", 1099511627776.0},
        {"k", 1e3},
        {"m", 1e6},
        {"g", 1e9},
    };
    double v;
    const char *e;
    if (!s || !read_number(s, &v, &e))
        return -1;
    while (*e == ' ')
        e++;
    char unit[8];
    size_t len = 0;
    for (; e[len] != '\0' && len < sizeof(unit) - 1; len++)
        unit[len] = (char)tolower((unsigned char)e[len]);
    if (e[len] != '\0')
        return -1; /* longer than any unit */
    unit[len] = '\0';
    for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
        if (strcmp(unit, units[i].unit) == 0) {
            double bytes = v * units[i].factor;
            if (bytes >= 1.8e19)
                return -1;
            *out = (uint64_t)(bytes + 0.5);
            return 0;
        }
    }
    return -1;
}

int sb_parse_duration(const char *s, uint64_t *out_us)
{
    static const struct {
        const char *unit;
        double us;
    } units[] = {
        {"ns", 1e-3}, {"us", 1},     {"µs", 1},     {"ms", 1e3},    {"s", 1e6},     {"sec", 1e6},
        {"m", 60e6},  {"min", 60e6}, {"h", 3600e6}, {"hr", 3600e6}, {"d", 86400e6},
    };
    if (!s)
        return -1;
    double total = 0;
    const char *p = s;
    for (int parts = 0; parts < 8; parts++) { /* "1h 2m 3s" has three parts */
        while (*p == ' ')
            p++;
        double v;
        const char *e;
        if (!read_number(p, &v, &e))
            return -1;
        const char *u = e;
        while (*e && *e != ' ' && !isdigit((unsigned char)*e))
            e++;
        size_t len = (size_t)(e - u);
        if (len == 0) { /* a bare number: only "0", which iggy-bench takes too */
            if (v != 0 || parts > 0)
                return -1;
        } else {
            size_t i, count = sizeof(units) / sizeof(units[0]);
            for (i = 0; i < count; i++)
                if (strlen(units[i].unit) == len && strncmp(u, units[i].unit, len) == 0)
                    break;
            if (i == count)
                return -1;
            total += v * units[i].us;
        }
        p = e;
        while (*p == ' ')
            p++;
        if (*p == '\0') {
            if (total >= 1.8e19)
                return -1;
            *out_us = (uint64_t)(total + 0.5);
            return 0;
        }
    }
    return -1;
}

static bool read_u32(const char *s, uint32_t min, uint32_t max, uint32_t *out)
{
    if (!s || !isdigit((unsigned char)*s))
        return false;
    errno = 0;
    char *e;
    unsigned long long v = strtoull(s, &e, 10);
    if (errno != 0 || *e != '\0' || v < min || v > max)
        return false;
    *out = (uint32_t)v;
    return true;
}

int sb_parse_range(const char *s, uint32_t max, sb_range_t *out)
{
    char low[32];
    const char *dots = s ? strstr(s, "..") : NULL;
    if (!s)
        return -1;
    if (!dots) {
        if (!read_u32(s, 1, max, &out->min))
            return -1;
        out->max = out->min;
        return 0;
    }
    size_t n = (size_t)(dots - s);
    if (n == 0 || n >= sizeof(low))
        return -1;
    memcpy(low, s, n);
    low[n] = '\0';
    if (!read_u32(low, 1, max, &out->min) || !read_u32(dots + 2, 1, max, &out->max) ||
        out->max < out->min)
        return -1;
    return 0;
}

/* --- the parser ------------------------------------------------------------------------ */

typedef struct parser {
    int argc, i;
    char **argv;
    char *err;
    size_t errlen;
} parser_t;

__attribute__((format(printf, 2, 3))) static int refuse(parser_t *p, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->err, p->errlen, fmt, ap);
    va_end(ap);
    return -1;
}

/* One option of the section in argv[p->i]: its long name (without "--")
 * or its short letter. On a match *value gets its argument (the rest of
 * "--name=value", of "-xVALUE", or the next word) when it takes one.
 * Returns 1 on a match, 0 when argv[i] is not this option, -1 when its
 * value is missing. */
static int option(parser_t *p, const char *lng, char shrt, bool takes_value, const char **value)
{
    const char *a = p->argv[p->i];
    const char *inline_value = NULL;
    if (a[0] == '-' && a[1] == '-') {
        size_t n = strlen(lng);
        if (strncmp(a + 2, lng, n) != 0 || (a[2 + n] != '\0' && a[2 + n] != '='))
            return 0;
        if (a[2 + n] == '=')
            inline_value = a + 3 + n;
    } else if (a[0] == '-' && shrt && a[1] == shrt) {
        if (a[2] != '\0')
            inline_value = a[2] == '=' ? a + 3 : a + 2;
    } else {
        return 0;
    }
    if (!takes_value)
        return inline_value ? -1 : 1;
    if (inline_value) {
        *value = inline_value;
    } else {
        if (p->i + 1 >= p->argc)
            return -1;
        *value = p->argv[++p->i];
    }
    return 1;
}

static bool is_help(const char *a)
{
    return strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0;
}

/* Each table row: long name, short letter, takes a value. */
typedef struct opt_row {
    const char *lng;
    char shrt;
    bool value;
} opt_row_t;

static const opt_row_t global_rows[] = {
    {"message-size", 'm', true},
    {"messages-per-batch", 'P', true},
    {"message-batches", 'b', true},
    {"total-data", 'T', true},
    {"rate-limit", 'r', true},
    {"warmup-time", 'w', true},
    {"sampling-time", 't', true},
    {"moving-average-window", 'W', true},
    {"username", 'u', true},
    {"password", 'p', true},
    {"enforce-fsync", 0, false},
    {"durability", 0, true},
    {"reuse-streams", 0, false},
    {"no-ceiling", 0, false},
    {"pretty", 0, false},
    {"sluiced", 0, true},
    {"dir", 0, true},
    {"high-level-api", 'H', false},
};

/* Finds which row of rows matches argv[p->i]: its index, or -1 (none) or
 * -2 (its value is missing, err set). */
static int match_row(parser_t *p, const opt_row_t *rows, int n, const char **value)
{
    for (int r = 0; r < n; r++) {
        int m = option(p, rows[r].lng, rows[r].shrt, rows[r].value, value);
        if (m < 0) {
            refuse(p, "option --%s %s", rows[r].lng,
                   rows[r].value ? "needs a value" : "takes no value");
            return -2;
        }
        if (m > 0)
            return r;
    }
    return -1;
}

static int apply_global(parser_t *p, sb_iggy_args_t *o, int row, const char *v)
{
    switch (row) {
    case 0:
        return sb_parse_range(v, SB_MESSAGE_SIZE_MAX, &o->message_size)
                   ? refuse(p,
                            "-m/--message-size: a size in bytes or a range like 200..500 (1..%d), "
                            "not '%s'",
                            SB_MESSAGE_SIZE_MAX, v)
                   : 0;
    case 1:
        return sb_parse_range(v, SB_BATCH_MESSAGES_MAX, &o->messages_per_batch)
                   ? refuse(p,
                            "-P/--messages-per-batch: a count or a range like 10..100 (1..%d), not "
                            "'%s'",
                            SB_BATCH_MESSAGES_MAX, v)
                   : 0;
    case 2:
        if (o->total_data)
            return refuse(p, "-b/--message-batches and -T/--total-data exclude each other");
        return read_u32(v, 1, UINT32_MAX, &o->message_batches)
                   ? 0
                   : refuse(p, "-b/--message-batches: a positive count, not '%s'", v);
    case 3:
        if (o->message_batches)
            return refuse(p, "-b/--message-batches and -T/--total-data exclude each other");
        return sb_parse_size(v, &o->total_data) || o->total_data == 0
                   ? refuse(p, "-T/--total-data: a size like 1GB or 10GiB, not '%s'", v)
                   : 0;
    case 4:
        return sb_parse_size(v, &o->rate_limit) || o->rate_limit == 0
                   ? refuse(p, "-r/--rate-limit: bytes per second like 100MB, not '%s'", v)
                   : 0;
    case 5:
        return sb_parse_duration(v, &o->warmup_us)
                   ? refuse(p, "-w/--warmup-time: a duration like 10s, not '%s'", v)
                   : 0;
    case 6:
        return sb_parse_duration(v, &o->sampling_us) || o->sampling_us < 1000
                   ? refuse(p, "-t/--sampling-time: a duration of at least 1ms, not '%s'", v)
                   : 0;
    case 7:
        return read_u32(v, 1, 100000, &o->moving_average_window)
                   ? 0
                   : refuse(p, "-W/--moving-average-window: 1..100000, not '%s'", v);
    case 8:
        o->username = v;
        return 0;
    case 9:
        o->password = v;
        return 0;
    case 10:
        o->enforce_fsync = true;
        return 0;
    case 11:
        /* Iggy's durability policies: "persisted" waits for stable storage,
         * which is what a Sluice topic with enforce_fsync does. */
        if (strcmp(v, "persisted") == 0)
            o->enforce_fsync = true;
        else if (strcmp(v, "replicated") != 0)
            return refuse(p, "--durability: replicated or persisted, not '%s'", v);
        return 0;
    case 12:
        o->reuse_streams = true;
        return 0;
    case 13:
        o->no_ceiling = true;
        return 0;
    case 14:
        o->pretty = true;
        return 0;
    case 15:
        o->sluiced = v;
        return 0;
    case 16:
        o->dir = v;
        return 0;
    default:
        return refuse(p, "-H/--high-level-api is not supported: sluice-bench drives raw frames "
                         "built with the wire codecs (docs/benchmarks.md)");
    }
}

static int parse_globals(parser_t *p, sb_iggy_args_t *o)
{
    const int rows = (int)(sizeof(global_rows) / sizeof(global_rows[0]));
    for (; p->i < p->argc; p->i++) {
        const char *a = p->argv[p->i], *v = NULL;
        if (a[0] != '-')
            return 0; /* the kind */
        if (is_help(a)) {
            o->help = true;
            continue;
        }
        int row = match_row(p, global_rows, rows, &v);
        if (row == -2)
            return -1;
        if (row < 0)
            return refuse(p, "unknown option '%s' before the benchmark kind (see --help)", a);
        if (apply_global(p, o, row, v) != 0)
            return -1;
    }
    return 0;
}

/* --- kind options ------------------------------------------------------------------------ */

enum { K_STREAMS, K_PARTITIONS, K_PRODUCERS, K_CONSUMERS, K_GROUPS, K_MAX_TOPIC, K_PCONSUMERS };

static const opt_row_t kind_rows[] = {
    [K_STREAMS] = {"streams", 's', true},
    [K_PARTITIONS] = {"partitions", 'a', true},
    [K_PRODUCERS] = {"producers", 'p', true},
    [K_CONSUMERS] = {"consumers", 'c', true},
    [K_GROUPS] = {"consumer-groups", 'g', true},
    [K_MAX_TOPIC] = {"max-topic-size", 'T', true},
    [K_PCONSUMERS] = {"producing-consumers", 0, true},
};

/* Which kind options each kind takes (bit per K_*), as iggy-bench has them;
 * balanced-consumer-group also takes --partitions here, since it has to
 * fill its topic itself (docs/benchmarks.md). */
static unsigned kind_options(sb_kind_t k)
{
    switch (k) {
    case SB_KIND_PP:
        return 1u << K_STREAMS | 1u << K_PRODUCERS | 1u << K_MAX_TOPIC;
    case SB_KIND_PC:
        return 1u << K_STREAMS | 1u << K_CONSUMERS;
    case SB_KIND_PPC:
        return 1u << K_STREAMS | 1u << K_PARTITIONS | 1u << K_PRODUCERS | 1u << K_CONSUMERS |
               1u << K_MAX_TOPIC;
    case SB_KIND_BP:
        return 1u << K_STREAMS | 1u << K_PARTITIONS | 1u << K_PRODUCERS | 1u << K_MAX_TOPIC;
    case SB_KIND_BCG:
        return 1u << K_STREAMS | 1u << K_PARTITIONS | 1u << K_CONSUMERS | 1u << K_GROUPS;
    case SB_KIND_E2E:
        return 1u << K_STREAMS | 1u << K_PRODUCERS | 1u << K_PCONSUMERS | 1u << K_MAX_TOPIC;
    default: /* bpcg, e2ecg */
        return 1u << K_STREAMS | 1u << K_PARTITIONS | 1u << K_PRODUCERS | 1u << K_CONSUMERS |
               1u << K_GROUPS | 1u << K_MAX_TOPIC;
    }
}

static int parse_kind_options(parser_t *p, sb_iggy_args_t *o, bool given[])
{
    const int rows = (int)(sizeof(kind_rows) / sizeof(kind_rows[0]));
    for (; p->i < p->argc; p->i++) {
        const char *a = p->argv[p->i], *v = NULL;
        if (a[0] != '-')
            return 0; /* the transport */
        if (is_help(a)) {
            o->help = true;
            continue;
        }
        int row = match_row(p, kind_rows, rows, &v);
        if (row == -2)
            return -1;
        if (row < 0 || !(kind_options(o->kind) & (1u << row)))
            return refuse(p, "'%s' is not an option of %s (see --help)", a, sb_kind_name(o->kind));
        given[row] = true;
        uint32_t n = 0;
        if (row == K_MAX_TOPIC) {
            if (sb_parse_size(v, &o->max_topic_size) || o->max_topic_size == 0)
                return refuse(p, "--max-topic-size: a size like 1GiB, not '%s'", v);
            continue;
        }
        uint32_t max = row == K_PARTITIONS ? SB_PARTITIONS_MAX
                       : row == K_STREAMS  ? SB_STREAMS_MAX
                                           : SB_ACTORS_MAX;
        if (!read_u32(v, 1, max, &n))
            return refuse(p, "--%s: 1..%u, not '%s'", kind_rows[row].lng, max, v);
        if (row == K_STREAMS)
            o->streams = n;
        else if (row == K_PARTITIONS)
            o->partitions = n;
        else if (row == K_PRODUCERS || row == K_PCONSUMERS)
            o->producers = n;
        else if (row == K_CONSUMERS)
            o->consumers = n;
        else
            o->consumer_groups = n;
    }
    return 0;
}

/* Iggy's defaults: 8 producers and 8 consumers; pinned kinds one stream per
 * actor and one partition; balanced kinds 1 stream of 24 partitions and one
 * consumer group per stream. */
static void kind_defaults(sb_iggy_args_t *o, const bool given[])
{
    sb_kind_t k = o->kind;
    bool pinned = k == SB_KIND_PP || k == SB_KIND_PC || k == SB_KIND_PPC || k == SB_KIND_E2E;
    bool produces = k != SB_KIND_PC && k != SB_KIND_BCG;
    bool consumes = k != SB_KIND_PP && k != SB_KIND_BP && k != SB_KIND_E2E;
    bool groups = k == SB_KIND_BCG || k == SB_KIND_BPCG || k == SB_KIND_E2ECG;
    if (!given[K_PRODUCERS] && !given[K_PCONSUMERS])
        o->producers = produces ? 8 : 0;
    if (!given[K_CONSUMERS])
        o->consumers = consumes ? 8 : 0;
    if (k == SB_KIND_E2E)
        o->consumers = o->producers; /* each actor does both */
    if (!given[K_PARTITIONS])
        o->partitions = pinned ? 1 : 24;
    if (!given[K_STREAMS])
        o->streams = k == SB_KIND_E2E  ? 8
                     : k == SB_KIND_PC ? o->consumers
                     : pinned          ? o->producers
                                       : 1;
    if (!given[K_GROUPS])
        o->consumer_groups = groups ? 1 : 0;
}

/* The rules iggy-bench checks, with its wording where it has one. */
static int check_kind(parser_t *p, const sb_iggy_args_t *o)
{
    uint32_t s = o->streams, a = o->partitions, pr = o->producers, c = o->consumers,
             g = o->consumer_groups;
    switch (o->kind) {
    case SB_KIND_PP:
        if (s != pr)
            return refuse(p,
                          "For pinned producer, number of streams (%u) must be equal to the "
                          "number of producers (%u).",
                          s, pr);
        break;
    case SB_KIND_PC:
        if (s > c)
            return refuse(p,
                          "For pinned consumer, number of streams (%u) must be less than or "
                          "equal to the number of consumers (%u).",
                          s, c);
        break;
    case SB_KIND_PPC:
        if (a > 1)
            return refuse(p, "For pinned producer, number of partitions must be 1, got %u", a);
        if (s != pr)
            return refuse(p,
                          "In pinned producer and consumer, the number of producers (%u) must "
                          "be equal to the number of streams (%u).",
                          pr, s);
        break;
    case SB_KIND_BP:
        if (a < 2)
            return refuse(
                p, "For balanced producer, number of partitions must be at least 2, got %u", a);
        break;
    case SB_KIND_E2E:
        if (s > pr)
            return refuse(p,
                          "For producing consumer, number of streams (%u) must be less than or "
                          "equal to the number of producers (%u).",
                          s, pr);
        break;
    case SB_KIND_E2ECG:
        if (s > pr)
            return refuse(p,
                          "For producing consumer group benchmark, number of streams (%u) must "
                          "be less than or equal to the number of producers (%u).",
                          s, pr);
        break;
    case SB_KIND_BPCG:
        if (a < c)
            return refuse(p,
                          "Consumer number (%u) must be less than or equal to the number of "
                          "partitions (%u).",
                          c, a);
        break;
    default:
        break;
    }
    if (g && g != s) /* one group per stream, as iggy-bench creates them */
        return refuse(p,
                      "consumer groups (%u) must equal the number of streams (%u): one group "
                      "per stream",
                      g, s);
    if (o->producers + o->consumers > SB_ACTORS_MAX)
        return refuse(p, "at most %d producers and consumers in all", SB_ACTORS_MAX);
    return 0;
}

/* --- transport and output ------------------------------------------------------------------ */

static int parse_address(parser_t *p, sb_iggy_args_t *o, const char *v)
{
    const char *colon = strrchr(v, ':');
    uint32_t port;
    if (!colon || colon == v || (size_t)(colon - v) >= sizeof(o->host) ||
        !read_u32(colon + 1, 1, 65535, &port))
        return refuse(p, "--server-address: HOST:PORT, not '%s'", v);
    memcpy(o->host, v, (size_t)(colon - v));
    o->host[colon - v] = '\0';
    o->port = (uint16_t)port;
    return 0;
}

static const opt_row_t output_rows[] = {
    {"output-dir", 'o', true},   {"identifier", 0, true}, {"remark", 0, true},
    {"extra-info", 0, true},     {"gitref", 0, true},     {"gitref-date", 0, true},
    {"open-charts", 'c', false},
};

static int parse_output(parser_t *p, sb_iggy_args_t *o)
{
    o->output = true;
    const int rows = (int)(sizeof(output_rows) / sizeof(output_rows[0]));
    for (p->i++; p->i < p->argc; p->i++) {
        const char *a = p->argv[p->i], *v = NULL;
        if (is_help(a)) {
            o->help = true;
            continue;
        }
        int row = match_row(p, output_rows, rows, &v);
        if (row == -2)
            return -1;
        if (row < 0)
            return refuse(p, "'%s' is not an option of output (see --help)", a);
        const char **slot[] = {&o->output_dir, &o->identifier, &o->remark,
                               &o->extra_info, &o->gitref,     &o->gitref_date};
        if (row == 6)
            return refuse(p, "output --open-charts is not supported: open the chart.svg it "
                             "writes in a browser");
        *slot[row] = v;
    }
    return 0;
}

static int parse_transport(parser_t *p, sb_iggy_args_t *o)
{
    if (p->i >= p->argc)
        return o->help ? 0
                       : refuse(p, "%s needs a transport after its options: tcp, ceiling or peers",
                                sb_kind_name(o->kind));
    const char *t = p->argv[p->i];
    if (strcmp(t, "tcp") == 0)
        o->transport = SB_TRANSPORT_TCP;
    else if (strcmp(t, "ceiling") == 0)
        o->transport = SB_TRANSPORT_CEILING;
    else if (strcmp(t, "peers") == 0)
        o->transport = SB_TRANSPORT_PEERS;
    else if (!strcmp(t, "quic") || !strcmp(t, "http") || !strcmp(t, "websocket") ||
             !strcmp(t, "ws"))
        return refuse(p, "transport %s is not supported: sluice-bench runs tcp, ceiling or peers",
                      t);
    else
        return refuse(p, "unknown transport '%s': tcp, ceiling or peers", t);
    for (p->i++; p->i < p->argc; p->i++) {
        const char *a = p->argv[p->i], *v = NULL;
        if (strcmp(a, "output") == 0)
            return parse_output(p, o);
        if (is_help(a)) {
            o->help = true;
            continue;
        }
        int m = o->transport == SB_TRANSPORT_TCP ? option(p, "server-address", 0, true, &v) : 0;
        if (m < 0)
            return refuse(p, "--server-address needs HOST:PORT");
        if (m > 0) {
            if (parse_address(p, o, v) != 0)
                return -1;
            continue;
        }
        if (o->transport == SB_TRANSPORT_TCP && strcmp(a, "--nodelay") == 0)
            continue; /* sluice-bench always sets TCP_NODELAY */
        if (o->transport == SB_TRANSPORT_TCP && strncmp(a, "--tls", 5) == 0)
            return refuse(p, "%s is not supported: sluice-bench speaks plain TCP", a);
        return refuse(p, "'%s' is not an option of %s (see --help)", a, t);
    }
    return 0;
}

/* --- the whole line ------------------------------------------------------------------------- */

static void defaults(sb_iggy_args_t *o)
{
    *o = (sb_iggy_args_t){
        .message_size = {1000, 1000},
        .messages_per_batch = {1000, 1000},
        .sampling_us = 10000,
        .moving_average_window = 20,
        .username = "iggy",
        .password = "iggy",
        .output_dir = "performance_results",
    };
}

/* A batch (request frame) must fit the server's frame limit, and -T must
 * hold at least two messages, as iggy-bench requires. */
static int check_sizes(parser_t *p, sb_iggy_args_t *o)
{
    uint64_t frame = 512 + (uint64_t)o->messages_per_batch.max * (48 + o->message_size.max);
    if (frame > SB_BATCH_BYTES_MAX)
        return refuse(p,
                      "a batch of %u messages of up to %u bytes makes a %llu-byte request; at "
                      "most %d",
                      o->messages_per_batch.max, o->message_size.max, (unsigned long long)frame,
                      SB_BATCH_BYTES_MAX);
    if (o->total_data && o->total_data / o->message_size.min <= 1)
        return refuse(p, "--total-data must be at least 2x greater than --message-size");
    if (!o->total_data && !o->message_batches)
        o->message_batches = 1000;
    return 0;
}

int sb_iggy_parse(int argc, char **argv, sb_iggy_args_t *out, char *err, size_t errlen)
{
    parser_t p = {.argc = argc, .i = 1, .argv = argv, .err = err, .errlen = errlen};
    bool given[sizeof(kind_rows) / sizeof(kind_rows[0])] = {0};
    if (errlen)
        err[0] = '\0';
    defaults(out);
    if (parse_globals(&p, out) != 0)
        return -1;
    if (p.i >= argc)
        return out->help ? 0 : refuse(&p, "no benchmark kind (see --help)");
    const char *word = argv[p.i];
    if (strcmp(word, "examples") == 0 || strcmp(word, "e") == 0) {
        out->examples = true;
        return 0;
    }
    out->kind = kind_of(word);
    if (out->kind == SB_KIND_NONE)
        return refuse(&p, "unknown benchmark kind '%s' (see --help)", word);
    p.i++;
    if (parse_kind_options(&p, out, given) != 0)
        return -1;
    kind_defaults(out, given);
    if (parse_transport(&p, out) != 0)
        return -1;
    if (out->help)
        return 0;
    if (check_kind(&p, out) != 0 || check_sizes(&p, out) != 0)
        return -1;
    return 0;
}

/* The long options of the earlier interface, each with its value. */
/* The earlier command line's long options: its parser (sluice_bench_main.c)
 * and the test below read this one table, so an option added there is
 * never taken for the start of an Iggy command line. */
const struct option sb_old_options[] = {
    {"sluiced", 1, 0, 's'},
    {"host", 1, 0, 'h'},
    {"port", 1, 0, 'p'},
    {"user", 1, 0, 'u'},
    {"password", 1, 0, 'w'},
    {"rounds", 1, 0, 'r'},
    {"seconds", 1, 0, 't'},
    {"connections", 1, 0, 'c'},
    {"streams", 1, 0, 'n'},
    {"dir", 1, 0, 'd'},
    {"only", 1, 0, 'o'},
    {"message-seconds", 1, 0, 'm'},
    {"producers", 1, 0, 'P'},
    {"partitions", 1, 0, 'N'},
    {"partition-mb", 1, 0, 'M'},
    {"partition-message-bytes", 1, 0, 'B'},
    {"stall-streams", 1, 0, 'S'},
    {"message-bytes", 1, 0, 'b'},
    {"batch-messages", 1, 0, 'k'},
    {"help", 0, 0, 'H'},
    {0, 0, 0, 0},
};

static bool old_option(const char *a)
{
    if (strncmp(a, "--", 2) != 0)
        return false;
    for (size_t i = 0; sb_old_options[i].name; i++)
        if (sb_old_options[i].has_arg && strcmp(a + 2, sb_old_options[i].name) == 0)
            return true;
    return false;
}

bool sb_iggy_wanted(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0)
            continue;
        if (!old_option(a))
            return true;
        i++; /* its value */
    }
    return false;
}

/* --- help ----------------------------------------------------------------------------------- */

void sb_iggy_usage(FILE *f)
{
    fputs(
        "usage: sluice-bench [GLOBAL OPTIONS] <KIND> [KIND OPTIONS] <TRANSPORT> [TRANSPORT "
        "OPTIONS]\n"
        "                    [output [OUTPUT OPTIONS]]\n"
        "       sluice-bench [--only LIST] [earlier options]   (the figures of "
        "docs/benchmarks.md)\n"
        "\n"
        "Iggy's benchmark kinds (iggy-bench's names and aliases):\n"
        "  pinned-producer (pp)                       N producers, each to its own stream (1 "
        "partition)\n"
        "  pinned-consumer (pc)                       N consumers, each polling its own stream by "
        "offset\n"
        "  pinned-producer-and-consumer (ppc)         both of the above at once\n"
        "  balanced-producer (bp)                     N producers to M partitions, balanced "
        "partitioning\n"
        "  balanced-consumer-group (bcg)              N consumers in one group per stream\n"
        "  balanced-producer-and-consumer-group (bpcg)  N producers and L group consumers at once\n"
        "  end-to-end-producing-consumer (e2e)        each actor sends a batch, then polls it "
        "back\n"
        "  end-to-end-producing-consumer-group (e2ecg)  the same with consumer groups\n"
        "  examples (e)                               print example command lines\n"
        "\n"
        "Global options (before the kind):\n"
        "  -m, --message-size N|A..B        bytes per message, or a range (default 1000)\n"
        "  -P, --messages-per-batch N|A..B  messages per batch, or a range (default 1000)\n"
        "  -b, --message-batches N          batches per actor (default 1000)\n"
        "  -T, --total-data SIZE            data over all actors instead, e.g. 1GB, 10GiB\n"
        "  -r, --rate-limit SIZE            bytes per second over all actors, e.g. 100MB\n"
        "  -w, --warmup-time DURATION       left out of the figures, e.g. 10s (default 0s)\n"
        "  -t, --sampling-time DURATION     time-series bucket (default 10ms)\n"
        "  -W, --moving-average-window N    of the throughput series (default 20)\n"
        "  -u, --username U  -p, --password P   credentials (default iggy/iggy)\n"
        "      --enforce-fsync              topics with enforce_fsync (and the ceiling "
        "fdatasyncs)\n"
        "      --durability persisted|replicated  persisted = --enforce-fsync\n"
        "      --reuse-streams              keep existing bench streams (default: delete them)\n"
        "      --no-ceiling                 tcp without the ceiling run beside it\n"
        "      --pretty                     a per-actor table too\n"
        "      --sluiced PATH               the sluiced to start (no --server-address)\n"
        "      --dir DIR                    temporary data (default $TMPDIR or /tmp)\n"
        "\n"
        "Kind options (after the kind; defaults as iggy-bench's):\n"
        "  -s, --streams N          streams bench-stream-1.. (pinned: one per actor; balanced: 1)\n"
        "  -a, --partitions N       partitions per topic (pinned 1, balanced 24)\n"
        "  -p, --producers N        producers (default 8); e2e: --producing-consumers N\n"
        "  -c, --consumers N        consumers (default 8)\n"
        "  -g, --consumer-groups N  one group per stream (default 1)\n"
        "  -T, --max-topic-size SIZE  topic size limit (default: the server's)\n"
        "\n"
        "Transports (last):\n"
        "  tcp [--server-address HOST:PORT]  sluiced: the one at HOST:PORT, or (without the\n"
        "                           option) one started here in a temporary directory; the same\n"
        "                           kind runs first against the ceiling, and every figure is\n"
        "                           also printed as a percentage of it (--no-ceiling: not)\n"
        "  ceiling                  only the built-in loopback sink: the same client against a\n"
        "                           server that does recv + write() (+ fdatasync) and answers\n"
        "                           polls from memory: what this machine allows\n"
        "  peers                    ceiling, sluiced, then NATS JetStream and Redis Streams where\n"
        "                           nats-server / redis-server are installed (pp, pc, ppc)\n"
        "\n"
        "output [-o DIR] [--identifier ID] [--remark R] [--extra-info E] [--gitref G] "
        "[--gitref-date D]\n"
        "  writes DIR/<run name>/report.json and chart.svg (default DIR performance_results)\n"
        "\n"
        "The summary line of each actor group reads as iggy-bench's:\n"
        "  Producers Results: Total throughput: N MB/s, N messages/s, average throughput per\n"
        "  Producer: N MB/s, p50 latency: N ms, ... total time: N s\n",
        f);
}

void sb_iggy_examples(FILE *f)
{
    fputs("EXAMPLES (sluice-bench starts its own sluiced unless tcp --server-address names one):\n"
          "\n"
          "  sluice-bench pinned-producer --streams 10 --producers 10 tcp\n"
          "  sluice-bench pinned-consumer --streams 10 --consumers 10 tcp\n"
          "  sluice-bench pinned-producer-and-consumer --streams 10 --producers 10 --consumers 10 "
          "tcp\n"
          "  sluice-bench balanced-producer --partitions 24 --producers 6 tcp\n"
          "  sluice-bench balanced-consumer-group --consumers 6 tcp\n"
          "  sluice-bench balanced-producer-and-consumer-group --partitions 24 --producers 6 "
          "--consumers 6 tcp\n"
          "  sluice-bench --total-data 10GiB bpcg tcp\n"
          "  sluice-bench end-to-end-producing-consumer --producing-consumers 12 --streams 12 tcp\n"
          "  sluice-bench end-to-end-producing-consumer-group --partitions 24 --producers 6 "
          "--consumers 6 tcp\n"
          "  sluice-bench -m 1000 -P 1000 -b 1000 pinned-producer --streams 8 --producers 8 tcp "
          "--server-address 127.0.0.1:8090\n"
          "  sluice-bench -T 1GB pp --producers 4 tcp\n"
          "  sluice-bench -T 1GB pp --producers 4 ceiling\n"
          "  sluice-bench --message-size 100..1000 --messages-per-batch 100 --total-data 1GiB "
          "balanced-producer --streams 5 --producers 5 tcp\n"
          "  sluice-bench --enforce-fsync -P 10 -b 200 pp --producers 1 tcp output -o results "
          "--remark fsync\n"
          "  sluice-bench -m 1000 -P 1000 -b 300 pp --producers 1 peers\n",
          f);
}
