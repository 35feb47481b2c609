/* sluice-bench, Iggy's benchmark kinds: the command line of iggy-bench
 * (global options, a kind and its options, a transport and its options, an
 * optional `output`), the plan every actor follows, the actors themselves,
 * the built-in loopback ceiling, the metrics and their report (Iggy's
 * summary lines, JSON, an SVG chart). docs/benchmarks.md, "Iggy's benchmark
 * kinds", says how to run them and how to read what they print.
 *
 * The argument parser (sluice_bench_args.c) is pure: it neither prints nor
 * exits, so the unit tests include it as it is. */
#ifndef SLUICE_BENCH_IGGY_H
#define SLUICE_BENCH_IGGY_H

#include <getopt.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* --- the command line (sluice_bench_args.c) ------------------------------------ */

typedef enum sb_kind {
    SB_KIND_NONE,
    SB_KIND_PP,    /* pinned-producer */
    SB_KIND_PC,    /* pinned-consumer */
    SB_KIND_PPC,   /* pinned-producer-and-consumer */
    SB_KIND_BP,    /* balanced-producer */
    SB_KIND_BCG,   /* balanced-consumer-group */
    SB_KIND_BPCG,  /* balanced-producer-and-consumer-group */
    SB_KIND_E2E,   /* end-to-end-producing-consumer */
    SB_KIND_E2ECG, /* end-to-end-producing-consumer-group */
    SB_KIND_COUNT,
} sb_kind_t;

typedef enum sb_transport {
    SB_TRANSPORT_NONE,
    SB_TRANSPORT_TCP,     /* sluiced, after the ceiling unless --no-ceiling */
    SB_TRANSPORT_CEILING, /* the built-in loopback sink alone */
    SB_TRANSPORT_PEERS,   /* ceiling, sluiced, then NATS and Redis where installed */
} sb_transport_t;

/* A value or an inclusive range "min..max" (message sizes, batch sizes). */
typedef struct sb_range {
    uint32_t min, max;
} sb_range_t;

enum {
    SB_ACTORS_MAX = 256,                    /* producers + consumers of one run */
    SB_STREAMS_MAX = 1000,                  /* bench-stream-1 .. */
    SB_PARTITIONS_MAX = 1000,               /* per topic, the protocol's bound */
    SB_MESSAGE_SIZE_MAX = 10 * 1000 * 1000, /* one payload, below the server's limit */
    SB_BATCH_MESSAGES_MAX = 100000,
    SB_BATCH_BYTES_MAX = 60 * 1000 * 1000, /* a request frame under the 64 MiB frame limit */
};

typedef struct sb_iggy_args {
    sb_kind_t kind;
    /* global options (before the kind) */
    sb_range_t message_size;         /* -m, bytes (default 1000) */
    sb_range_t messages_per_batch;   /* -P (default 1000) */
    uint32_t message_batches;        /* -b, per actor; 0 when -T is given */
    uint64_t total_data;             /* -T, bytes over all actors; 0 when -b is given */
    uint64_t rate_limit;             /* -r, bytes per second over all actors; 0 none */
    uint64_t warmup_us;              /* -w */
    uint64_t sampling_us;            /* -t, the time-series bucket */
    uint32_t moving_average_window;  /* -W */
    const char *username, *password; /* -u, -p */
    bool enforce_fsync;              /* --enforce-fsync, --durability persisted */
    bool reuse_streams;              /* --reuse-streams */
    bool no_ceiling;                 /* --no-ceiling: tcp without the ceiling run */
    bool pretty;                     /* --pretty: a per-actor table too */
    const char *sluiced;             /* --sluiced PATH (NULL: the default binary) */
    const char *dir;                 /* --dir: temporary data (NULL: $TMPDIR or /tmp) */
    /* kind options */
    uint32_t streams, partitions, producers, consumers, consumer_groups;
    uint64_t max_topic_size; /* -T after the kind; 0 server default */
    /* transport */
    sb_transport_t transport;
    char host[64]; /* --server-address host, "" when not given */
    uint16_t port; /* 0: start a sluiced of our own */
    /* output subcommand */
    bool output;
    const char *output_dir, *identifier, *remark, *extra_info, *gitref, *gitref_date;
    bool help, examples;
} sb_iggy_args_t;

/* True when argv is an Iggy-style command line: anything other than the
 * long options of the earlier interface with their values (--rounds,
 * --only, ...). So `sluice-bench` alone and `sluice-bench --only ping` keep
 * their meaning, and a command line naming a kind is Iggy's. */
bool sb_iggy_wanted(int argc, char **argv);
/* The earlier command line's long options (getopt_long form). */
extern const struct option sb_old_options[];

/* Parses an Iggy-style command line into out (defaults filled in, kind
 * rules checked). 0, or -1 with a one-line reason in err. --help and
 * `examples` set out->help / out->examples and return 0. */
int sb_iggy_parse(int argc, char **argv, sb_iggy_args_t *out, char *err, size_t errlen);

/* "1GB" (10^9), "10GiB" (2^30), "512KB", "100" (bytes); 0 or -1. */
int sb_parse_size(const char *s, uint64_t *out);
/* "10s", "100ms", "1m 30s", "2h", "0" (microseconds); 0 or -1. */
int sb_parse_duration(const char *s, uint64_t *out_us);
/* "1000" or "200..500", each in [1, max]; 0 or -1. */
int sb_parse_range(const char *s, uint32_t max, sb_range_t *out);

/* "pinned-producer", "Pinned Producer", "pinned_producer". */
const char *sb_kind_name(sb_kind_t k);
const char *sb_kind_title(sb_kind_t k);
const char *sb_kind_key(sb_kind_t k);
/* What the transport is called on the command line. */
const char *sb_transport_name(sb_transport_t t);

void sb_iggy_usage(FILE *f);
void sb_iggy_examples(FILE *f);

/* --- the run (sluice_bench_kinds.c) ---------------------------------------------- */

/* The whole Iggy-style run: parse, plan, run each transport, report.
 * Returns the process exit status. */
int sb_iggy_main(int argc, char **argv);

#endif
