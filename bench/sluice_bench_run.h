/* sluice-bench, Iggy's kinds: what the planner, the actors, the ceiling and
 * the report share. One sb_run_t is one run of a kind against one target
 * (the ceiling, sluiced, a peer); its actors are threads, each with its own
 * connection, recording one sample per request (or per send + poll for the
 * producing consumers). */
#ifndef SLUICE_BENCH_RUN_H
#define SLUICE_BENCH_RUN_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "sluice_bench.h"
#include "sluice_bench_iggy.h"

typedef enum sb_target {
    SB_TARGET_CEILING,
    SB_TARGET_SLUICED,
    SB_TARGET_NATS,
    SB_TARGET_REDIS,
    SB_TARGETS,
} sb_target_t;

typedef enum sb_role {
    SB_ROLE_PRODUCER,
    SB_ROLE_CONSUMER,
    SB_ROLE_PRODUCING_CONSUMER,
    SB_ROLES,
} sb_role_t;

/* One request (or send + poll) of an actor. end_us: since the run's start. */
typedef struct sb_sample {
    uint64_t end_us;
    uint64_t latency_ns;
    uint64_t bytes; /* payload bytes moved (user data, as iggy-bench counts) */
    uint32_t messages;
} sb_sample_t;

/* A prebuilt SendMessages request: the header (stamped per connection), the
 * metadata section, the batch record at record_off. */
typedef struct sb_frame {
    uint8_t *data;
    size_t len;
    size_t record_off;
    uint32_t messages;
    uint64_t payload; /* bytes of payloads in the batch */
} sb_frame_t;

/* Consumers that share what they read: the members of one group, or one
 * pinned consumer (or producing consumer) alone. Messages are claimed
 * before a poll and the claim is settled after it, so the set reads
 * exactly `expected` messages, whatever the target answers. */
typedef struct sb_set {
    _Atomic uint64_t claimed;
    _Atomic uint64_t consumed;
    uint64_t expected;
    uint32_t members;
} sb_set_t;

typedef struct sb_run sb_run_t;

typedef struct sb_actor {
    sb_run_t *run;
    uint32_t id;     /* 1-based, as iggy-bench numbers actors */
    sb_role_t role;  /* what its figures are counted as */
    bool produces, consumes;
    uint32_t stream; /* 1-based: bench-stream-N */
    /* producing */
    sb_frame_t *frames; /* variants, sent in turn; owned by the plan */
    uint32_t variants;
    uint64_t batches; /* to send */
    /* consuming */
    sb_set_t *set;
    bool group;          /* poll as a member of the stream's group (next, auto-commit) */
    uint32_t group_id;   /* the server's id of that group */
    uint32_t member;     /* index among the set's members (the ceiling's assignment) */
    uint32_t poll_max;   /* messages asked per poll */
    uint64_t offset;     /* a pinned consumer's cursor */
    uint32_t partitions[SB_PARTITIONS_MAX];
    uint32_t partitions_count, next_partition;
    const sb_frame_t *load; /* what the ceiling's reader answers this actor's polls with */
    /* the connection */
    sb_trip_t trip;
    sl_u128_t client;
    uint64_t session;
    uint64_t rate_bps; /* 0: no limit */
    uint8_t *scratch;  /* poll requests */
    /* results */
    sb_sample_t *samples;
    size_t samples_n, samples_cap;
    uint64_t sent_messages, sent_bytes, sent_batches;
    uint64_t received_messages, received_bytes, polls, empty_polls;
} sb_actor_t;

struct sb_run {
    const sb_iggy_args_t *args;
    sb_target_t target;
    const char *host;
    uint16_t port;
    uint32_t partitions; /* per topic, as created */
    sb_actor_t *actors;
    uint32_t actors_count;
    pthread_barrier_t ready; /* all logged in and joined */
    pthread_barrier_t go;    /* all synced: the clock starts */
    uint64_t t0_ns;
    _Atomic uint64_t progress_ns; /* last time any actor moved a message */
    _Atomic uint32_t done;
    uint64_t elapsed_ns;
    /* CPU time of the server's process (0: not known) and of the bench,
     * from the start (every actor logged in) to the end of the run. */
    pid_t server_pid;
    uint64_t server_cpu_ns, client_cpu_ns;
    void *(*actor_main)(void *); /* NULL: the Iggy-protocol actors; the peers set theirs */
};

/* --- the actors (sluice_bench_actor.c) ----------------------------------------------- */

/* Connects every actor (and logs in and joins groups on sluiced), runs them
 * all from one start, waits for them (dying when nothing moves for 30 s). */
void sb_run_actors(sb_run_t *run);

/* Records one sample (t0, t1: monotonic ns) and notes progress. */
void sb_actor_sample(sb_actor_t *a, uint64_t t0, uint64_t t1, uint32_t messages, uint64_t bytes);
/* Claims up to max of what the set still expects (0: all claimed), then
 * settles the claim with what the poll got. */
uint32_t sb_set_claim(sb_set_t *s, uint32_t max);
void sb_set_settle(sb_set_t *s, uint32_t claimed, uint32_t got);

/* The raw login on a connection of the run's target: fills client/session. */
void sb_actor_login(sb_actor_t *a, const char *user, const char *password);

/* Stamps a prebuilt frame's header for a session. */
void sb_frame_stamp(uint8_t *frame, size_t len, sl_u128_t client, uint64_t session,
                    uint8_t operation, uint32_t code);

/* --- the ceiling (sluice_bench_ceiling.c) -------------------------------------------- */

/* The request code of the ceiling's private "load" request: its body is a
 * poll reply (prefix + one record) the reader answers polls of this
 * connection from. Operation 2 with a code no command has. */
#define SB_CEILING_LOAD_CODE 0x53420001u

/* Starts the loopback ceiling: a forked child, one blocking thread per
 * connection; SendMessages bodies are write()n to a file per connection in
 * dir (fdatasync'd when fsync), 256-byte replies; polls are answered from
 * the loaded record. Returns its pid. */
pid_t sb_ceiling_start(const char *dir, bool fsync, uint16_t *port);
void sb_ceiling_stop(pid_t pid);

/* --- metrics and report (sluice_bench_report.c) --------------------------------------- */

/* One actor group's figures (iggy-bench's summary). */
typedef struct sb_group_metrics {
    bool present;
    sb_role_t role; /* producers, consumers, producing consumers */
    bool aggregate; /* "Aggregate Results": producers and consumers together */
    uint32_t actors;
    double total_mb_s, total_msg_s, avg_mb_s, avg_msg_s;
    double p50, p90, p95, p99, p999, p9999, avg, median, min, max, std_dev; /* ms */
    double total_time_s;
    uint64_t messages, bytes, batches;
} sb_group_metrics_t;

/* Per-actor figures: the same fields for one actor. */
typedef struct sb_actor_metrics {
    uint32_t id;
    sb_role_t role;
    double mb_s, msg_s, p50, p90, p95, p99, p999, p9999, avg, median, min, max, std_dev, time_s;
    uint64_t messages, bytes, batches;
    uint64_t sent_messages, received_messages;
} sb_actor_metrics_t;

enum { SB_GROUPS_MAX = 4 }; /* producers, consumers, producing consumers, aggregate */

typedef struct sb_result {
    sb_target_t target;
    bool present;
    sb_group_metrics_t groups[SB_GROUPS_MAX];
    sb_actor_metrics_t *actors;
    uint32_t actors_count;
    /* time series per group (bucket of series_us): MB/s, msg/s, latency ms */
    uint32_t points;
    uint64_t series_us;
    double *series[SB_GROUPS_MAX][3];
    uint64_t sent_messages, received_messages, expected_messages;
    /* CPU time during the timed run (preload and set-up excluded), in ns:
     * the target's process (0 when it is not a child of the bench, i.e.
     * --server-address) and the bench's own (every actor thread). CPU per
     * byte moves much less than throughput on a busy machine. */
    uint64_t server_cpu_ns, client_cpu_ns;
    bool server_cpu_known;
} sb_result_t;

const char *sb_target_name(sb_target_t t);

/* Computes the figures of a finished run. */
void sb_result_compute(const sb_run_t *run, sb_result_t *out);
void sb_result_free(sb_result_t *r);

/* Prints iggy-bench's "Benchmark: ..." line and one line per group. Lines of
 * a target other than sluiced are prefixed with its name so that scripts
 * written for iggy-bench only match sluiced's. */
void sb_result_print(const sb_iggy_args_t *a, const sb_result_t *r);
/* "Producers Results, sluiced vs ceiling: throughput N %, ..." lines: main
 * against base, group by group, where both have the group. */
void sb_result_print_ratios(const sb_result_t *main, const sb_result_t *base);
/* "CPU per MB, sluiced vs ceiling: server N us (N us), Nx; client ..." when
 * both server figures are known. */
void sb_result_print_cpu(const sb_result_t *main, const sb_result_t *base);

/* Writes DIR/<run name>/report.json and chart.svg; returns 0 or -1 (errno). */
int sb_report_write(const sb_iggy_args_t *a, const sb_result_t *results, int count,
                    char *dir_out, size_t dir_len);


/* --- batches (sluice_bench_actor.c) --------------------------------------------------- */

/* What one batch variant holds. Variants are drawn from the -m and -P
 * ranges by a generator seeded with (seed, variant), so the planner knows
 * every actor's message counts before anything is sent. */
typedef struct sb_shape {
    uint32_t messages;
    uint64_t payload;
} sb_shape_t;

/* How many variants an actor cycles through: 1 for fixed sizes, else 8. */
uint32_t sb_variants(const sb_iggy_args_t *a);
void sb_shape_of(const sb_iggy_args_t *a, uint32_t seed, uint32_t variant, sb_shape_t *out);
/* Builds the SendMessages frame of that variant for bench-stream-<stream>,
 * topic-1: partition 0 when pinned, balanced partitioning otherwise. Every
 * checksum in place; the header is stamped later (sb_frame_stamp). */
void sb_frame_build(const sb_iggy_args_t *a, uint32_t seed, uint32_t variant, uint32_t stream,
                    bool pinned, sb_frame_t *out);

/* Sends batches frames (cycling variants) to stream over one logged-in raw
 * connection of the run's target, untimed: the data consumer-only kinds
 * read. */
void sb_preload(sb_run_t *run, sb_frame_t *frames, uint32_t variants, uint64_t batches);

#endif
