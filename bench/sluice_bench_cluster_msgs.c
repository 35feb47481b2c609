/* sluice-bench cluster, messages: produce and consume of 1 MB batches
 * (--batch-messages messages of --message-bytes each: 1000 x 1000 B by
 * default) on one sluiced next to the leader of a 3-node cluster, both
 * started by sluice_bench_cluster.c, in the same run with rounds
 * alternating, on a plain topic and an enforce_fsync one. Each figure
 * gives the rate, the send (or poll) trip's p50 and p99, and the CPU time
 * of every sluiced of the side (utime + stime from /proc/<pid>/stat) per
 * MB acknowledged (or read): on 3 nodes that is what replicating a
 * megabyte costs the machine. After the rounds the backups are asked how
 * many messages they hold, so the output says whether the messages were
 * replicated at all. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sluice/error.h>

#include "base/clock.h"
#include "sluice_bench.h"

enum { SIDE_ONE, SIDE_THREE, SIDES };
enum { TOPIC_PLAIN, TOPIC_FSYNC, TOPICS };
enum { DIR_PRODUCE, DIR_CONSUME, DIRS };
enum {
    ROUNDS_MAX = 64,
    TRIPS_MAX = 100000, /* per figure and round, beside the time */
};

static const char *const topic_names[TOPICS] = {"plain", "fsync"};
static const char stream_name[] = "bench-cluster-messages";

typedef struct figure {
    sb_lat_t lat;
    double rate[ROUNDS_MAX]; /* MB/s of each round */
    uint64_t bytes;          /* payload bytes acknowledged (or read) in all rounds */
    uint64_t cpu_ns;         /* the side's server CPU over those trips */
} figure_t;

typedef struct msgs_side {
    const sb_cluster_side_t *side;
    sl_client_t *lib;
    bool topics_made;
    uint64_t produced[TOPICS]; /* messages acknowledged this round */
    figure_t fig[TOPICS][DIRS];
    uint64_t retries; /* sends refused with 57/58 and sent again */
} msgs_side_t;

typedef struct msgs {
    const sb_options_t *o;
    msgs_side_t sides[SIDES];
    sl_send_message_t *batch;
    uint8_t *payload;
} msgs_t;

static uint64_t side_cpu_ns(const sb_cluster_side_t *s)
{
    uint64_t sum = 0;
    for (int k = 0; k < s->count; k++)
        sum += sb_process_cpu_ns(s->pids[k]);
    return sum;
}

static sl_client_t *leader_client(const sb_options_t *o, uint16_t port)
{
    /* 57/58 replayed by the library (a partition group still electing its
     * primary after CreateTopic); settlement off: the bench picked the
     * leader. */
    sl_client_options_t opts = {.connect_timeout_ms = 10000,
                                .request_timeout_ms = 60000,
                                .transient_retries = 100,
                                .transient_delay_ms = 10,
                                .settle_on_leader = SL_CLIENT_SETTLE_OFF};
    sl_client_t *c = NULL;
    int rc = sl_client_connect("127.0.0.1", port, &opts, &c);
    if (rc == 0)
        rc = sl_client_login(c, o->user, o->password, NULL);
    if (rc != 0)
        sb_die("cannot log in on 127.0.0.1:%u: %s", port, sl_strerror(rc));
    return c;
}

/* Fresh topics for a round (untimed), so no side keeps more than a round's
 * data and each figure starts on an empty partition. */
static void topics_reset(msgs_side_t *s)
{
    sl_id_t stream = sl_id_name(stream_name);
    for (int t = 0; t < TOPICS; t++) {
        int rc =
            s->topics_made ? sl_client_delete_topic(s->lib, stream, sl_id_name(topic_names[t])) : 0;
        if (rc != 0)
            sb_die("DeleteTopic %s: %s", topic_names[t], sl_strerror(rc));
        sl_topic_options_t opt = {.set = SL_TOPIC_OPT_ENFORCE_FSYNC,
                                  .enforce_fsync = t == TOPIC_FSYNC};
        rc = sl_client_create_topic(s->lib, stream, topic_names[t], 1, &opt, NULL);
        if (rc != 0)
            sb_die("CreateTopic %s on %s: %s", topic_names[t], s->side->name, sl_strerror(rc));
        s->produced[t] = 0;
    }
    s->topics_made = true;
}

#ifdef SL_TRIP_TRACE
#include <fcntl.h>
#include <unistd.h>
/* The client's ends of a trip, in the format of src/server/trip_trace.h
 * (which the bench may not include): built with -DSL_TRIP_TRACE only. */
static void trip_trace(const char *point, int topic)
{
    static int fd = -2;
    if (fd == -2) {
        const char *path = getenv("SL_TRIP_TRACE_FILE");
        fd = path ? open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644) : -1;
    }
    if (fd < 0)
        return;
    char line[96];
    int n = snprintf(line, sizeof(line), "%llu %d %s 0 %d\n",
                     (unsigned long long)sl_clock_monotonic_ns(), (int)getpid(), point, topic);
    if (n > 0 && write(fd, line, (size_t)n) < 0)
        return;
}
#define TRIP(point, topic) trip_trace(point, topic)
#else
#define TRIP(point, topic) ((void)0)
#endif

/* Sends the batch for seconds (at most TRIPS_MAX); returns payload bytes. */
static uint64_t produce(msgs_t *m, msgs_side_t *s, int t, double seconds)
{
    const sb_options_t *o = m->o;
    uint64_t start = sl_clock_monotonic_ns(), now = start, bytes = 0;
    uint64_t deadline = start + (uint64_t)(seconds * 1e9);
    for (int trips = 0; trips < TRIPS_MAX && now < deadline; trips++) {
        sl_send_result_t r;
        uint64_t t0 = now;
        TRIP("client_send", t);
        int rc = sl_client_send_messages(s->lib, sl_id_name(stream_name),
                                         sl_id_name(topic_names[t]), sl_partitioning_partition(0),
                                         m->batch, (uint32_t)o->batch_messages, &r);
        now = sl_clock_monotonic_ns();
        TRIP("client_done", t);
        if (rc != 0)
            sb_die("SendMessages to %s on %s: %s", topic_names[t], s->side->name, sl_strerror(rc));
        sb_lat_push(&s->fig[t][DIR_PRODUCE].lat, now - t0);
        s->produced[t] += (uint64_t)o->batch_messages;
        bytes += (uint64_t)o->batch_messages * (uint64_t)o->message_bytes;
    }
    return bytes;
}

/* Polls what was produced, from offset 0, for at most seconds; returns
 * payload bytes read. */
static uint64_t consume(msgs_t *m, msgs_side_t *s, int t, double seconds)
{
    uint64_t start = sl_clock_monotonic_ns(), now = start, bytes = 0, offset = 0;
    uint64_t deadline = start + (uint64_t)(seconds * 1e9);
    for (int trips = 0; trips < TRIPS_MAX && now < deadline && offset < s->produced[t]; trips++) {
        sl_polled_messages_t got;
        uint64_t t0 = now;
        int rc = sl_client_poll_messages(s->lib, sl_consumer_single(sl_id_num(1)),
                                         sl_id_name(stream_name), sl_id_name(topic_names[t]), 0,
                                         sl_poll_offset(offset), (uint32_t)m->o->batch_messages,
                                         false, &got);
        now = sl_clock_monotonic_ns();
        if (rc != 0 || got.count == 0)
            sb_die("PollMessages %s at %llu on %s: %s", topic_names[t], (unsigned long long)offset,
                   s->side->name, rc ? sl_strerror(rc) : "nothing");
        sb_lat_push(&s->fig[t][DIR_CONSUME].lat, now - t0);
        for (uint32_t i = 0; i < got.count; i++)
            bytes += got.messages[i].payload_len;
        offset = got.messages[got.count - 1].offset + 1;
    }
    return bytes;
}

/* One figure of one round: its rate and the side's CPU over it. */
static void measure(msgs_t *m, msgs_side_t *s, int t, int dir, int round)
{
    figure_t *f = &s->fig[t][dir];
    uint64_t cpu0 = side_cpu_ns(s->side), t0 = sl_clock_monotonic_ns();
    uint64_t bytes = dir == DIR_PRODUCE ? produce(m, s, t, m->o->message_seconds)
                                        : consume(m, s, t, m->o->message_seconds);
    uint64_t elapsed = sl_clock_monotonic_ns() - t0;
    f->cpu_ns += side_cpu_ns(s->side) - cpu0;
    f->bytes += bytes;
    f->rate[round] = elapsed ? (double)bytes / 1e6 * 1e9 / (double)elapsed : 0.0;
}

/* --- replication seen from the backups ------------------------------------------------------ */

/* Messages node port holds in topic t's partition (its newest offset + 1),
 * or -1 when it does not answer. */
static long long held_on(const sb_options_t *o, uint16_t port, int t)
{
    sl_client_t *c = leader_client(o, port);
    sl_polled_messages_t got;
    int rc =
        sl_client_poll_messages(c, sl_consumer_single(sl_id_num(1)), sl_id_name(stream_name),
                                sl_id_name(topic_names[t]), 0, sl_poll_offset(0), 1, false, &got);
    long long held = rc != 0 ? -1 : got.count ? (long long)got.current_offset + 1 : 0;
    sl_client_close(c);
    return held;
}

/* What each backup of the cluster holds of the last round's messages; a
 * backup may apply a heartbeat late, so it is asked a few times. True when
 * every backup holds them all. */
static bool print_replication(msgs_t *m)
{
    msgs_side_t *s = &m->sides[SIDE_THREE];
    const sb_cluster_side_t *c = s->side;
    printf("  replication, after the last round:");
    bool all = true;
    for (int k = 0; k < c->count; k++) {
        if (c->ports[k] == c->leader_port)
            continue;
        for (int t = 0; t < TOPICS; t++) {
            long long held = -1;
            for (int tries = 0; tries < 50; tries++) {
                held = held_on(m->o, c->ports[k], t);
                if (held == (long long)s->produced[t])
                    break;
                sb_sleep_ms(100);
            }
            all = all && held == (long long)s->produced[t];
            printf(" node %d %s %lld/%llu;", k, topic_names[t], held,
                   (unsigned long long)s->produced[t]);
        }
    }
    printf("\n  %s\n", all ? "every backup holds every message the leader acknowledged"
                           : "the backups do not hold the leader's messages: messages are not "
                             "replicated (main before partition groups), so the 3-node figures "
                             "are one node's work beside two idle ones");
    return all;
}

/* --- output ------------------------------------------------------------------------------------
 */

static void print_row(const char *name, figure_t *f, int rounds, double out[3])
{
    double rate = sb_median(f->rate, rounds);
    double p50 = (double)sb_percentile(f->lat.ns, f->lat.n, 0.5) / 1e6;
    double p99 = (double)sb_percentile(f->lat.ns, f->lat.n, 0.99) / 1e6;
    double mb = (double)f->bytes / 1e6;
    double cpu = mb > 0 ? (double)f->cpu_ns / 1e6 / mb : 0.0;
    printf("    %-10s %9.1f %9.2f %9.2f %10.2f %9.0f\n", name, rate, p50, p99, cpu, mb);
    out[0] = rate;
    out[1] = p99;
    out[2] = cpu;
}

static void print_figures(msgs_t *m, int rounds, double ratio[TOPICS])
{
    static const char *const dirs[DIRS] = {"produce (send trip)", "consume (poll trip)"};
    for (int dir = 0; dir < DIRS; dir++)
        for (int t = 0; t < TOPICS; t++) {
            printf("  %s, %s topic%s\n", dirs[dir], topic_names[t],
                   t == TOPIC_FSYNC ? " (enforce_fsync)" : "");
            printf("    %-10s %9s %9s %9s %10s %9s\n", "", "MB/s", "p50 ms", "p99 ms", "CPU ms/MB",
                   "MB");
            double x[SIDES][3];
            print_row("1 node", &m->sides[SIDE_ONE].fig[t][dir], rounds, x[SIDE_ONE]);
            print_row("3 nodes", &m->sides[SIDE_THREE].fig[t][dir], rounds, x[SIDE_THREE]);
            printf("    %-10s %8.2fx %9s %8.2fx %9.2fx\n", "3 / 1",
                   x[0][0] > 0 ? x[1][0] / x[0][0] : 0.0, "", x[0][1] > 0 ? x[1][1] / x[0][1] : 0.0,
                   x[0][2] > 0 ? x[1][2] / x[0][2] : 0.0);
            if (dir == DIR_PRODUCE)
                ratio[t] = x[0][0] > 0 ? x[1][0] / x[0][0] : 0.0;
        }
}

void sb_cluster_messages_run(const sb_options_t *o, const sb_cluster_side_t sides[2])
{
    int rounds = o->rounds < ROUNDS_MAX ? o->rounds : ROUNDS_MAX;
    msgs_t *m = calloc(1, sizeof(*m));
    size_t count = (size_t)o->batch_messages, len = (size_t)o->message_bytes;
    if (!m || !(m->batch = calloc(count, sizeof(*m->batch))) || !(m->payload = malloc(len)))
        sb_die("out of memory");
    memset(m->payload, 'c', len);
    for (size_t i = 0; i < count; i++)
        m->batch[i] = (sl_send_message_t){.payload = m->payload, .payload_len = len};
    m->o = o;
    for (int i = 0; i < SIDES; i++) {
        msgs_side_t *s = &m->sides[i];
        s->side = &sides[i];
        s->lib = leader_client(o, sides[i].leader_port);
        int rc = sl_client_create_stream(s->lib, stream_name, NULL);
        if (rc != 0)
            sb_die("CreateStream on %s: %s", sides[i].name, sl_strerror(rc));
    }
    /* Rounds alternate the sides so that drift on the shared machine hits
     * both; within a side each topic is produced, then read back. */
    for (int r = 0; r < rounds; r++)
        for (int k = 0; k < SIDES; k++) {
            msgs_side_t *s = &m->sides[(r + k) % SIDES];
            topics_reset(s);
            for (int t = 0; t < TOPICS; t++) {
                measure(m, s, t, DIR_PRODUCE, r);
                measure(m, s, t, DIR_CONSUME, r);
            }
        }
    printf("\nMessages on 1 node and on the leader of a 3-node cluster, same run, %d rounds\n"
           "alternating, %.1f s per figure and round, batches of %d x %d B (%.2f MB) to one\n"
           "partition; medians of per-round rates, latency over every trip, CPU of every\n"
           "sluiced of the side per MB acknowledged (produce) or read (consume)\n",
           rounds, o->message_seconds, o->batch_messages, o->message_bytes,
           (double)count * (double)len / 1e6);
    bool replicated = print_replication(m);
    double ratio[TOPICS] = {0};
    print_figures(m, rounds, ratio);
    if (replicated)
        printf("  aim replicated produce >= 40 %% of one node: plain %.0f %% %s, enforce_fsync "
               "%.0f %% %s\n",
               100 * ratio[TOPIC_PLAIN], ratio[TOPIC_PLAIN] >= 0.4 ? "met" : "MISSED",
               100 * ratio[TOPIC_FSYNC], ratio[TOPIC_FSYNC] >= 0.4 ? "met" : "MISSED");
    else
        printf("  aim replicated produce >= 40 %% of one node: not measured (nothing was "
               "replicated)\n");
    for (int i = 0; i < SIDES; i++) {
        sl_client_close(m->sides[i].lib);
        for (int t = 0; t < TOPICS; t++)
            for (int d = 0; d < DIRS; d++)
                free(m->sides[i].fig[t][d].lat.ns);
    }
    free(m->payload);
    free(m->batch);
    free(m);
}
