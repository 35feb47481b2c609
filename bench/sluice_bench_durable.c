/* sluice-bench durable operations: CreateStream over one libsluice connection
 * (each acknowledged only after the metadata journal's fdatasync) next to the
 * raw cost of one durable append, a 256-byte write + fdatasync on a file in
 * the journal's directory. The two take turns round by round. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/clock.h"
#include "sluice_bench.h"

enum {
    ROUNDS_MAX = 64,
    APPEND_BYTES = 256,
    WARMUP_OPS = 20,
    CHUNK_OPS = 20, /* operations of one kind before the other kind's turn */
};

/* count CreateStream operations, or fewer when the deadline passes; each
 * one's latency goes to lat[0..done). Names are numbered by *seq. */
static sb_rate_t create_ops(sl_client_t *client, uint64_t *seq, int count, uint64_t deadline_ns,
                            uint64_t *lat)
{
    uint64_t start = sl_clock_monotonic_ns(), now = start;
    uint64_t done = 0;
    char name[64];
    while (done < (uint64_t)count && now < deadline_ns) {
        snprintf(name, sizeof(name), "sluice-bench-%d-%llu", (int)getpid(),
                 (unsigned long long)(*seq)++);
        uint64_t t0 = now;
        int rc = sl_client_create_stream(client, name, NULL);
        if (rc != 0)
            sb_die("CreateStream %s: %s", name, sl_strerror(rc));
        now = sl_clock_monotonic_ns();
        lat[done++] = now - t0;
    }
    return (sb_rate_t){done, now - start};
}

/* The same for 256-byte appends, each followed by fdatasync. */
static sb_rate_t append_ops(int fd, int count, uint64_t deadline_ns, uint64_t *lat)
{
    uint8_t block[APPEND_BYTES];
    memset(block, 0xa5, sizeof(block));
    uint64_t start = sl_clock_monotonic_ns(), now = start;
    uint64_t done = 0;
    while (done < (uint64_t)count && now < deadline_ns) {
        uint64_t t0 = now;
        if (write(fd, block, sizeof(block)) != (ssize_t)sizeof(block))
            sb_die("baseline write: %s", strerror(errno));
        if (fdatasync(fd) != 0)
            sb_die("baseline fdatasync: %s", strerror(errno));
        now = sl_clock_monotonic_ns();
        lat[done++] = now - t0;
    }
    return (sb_rate_t){done, now - start};
}

/* Removes what an external server got from this run (untimed). */
static void delete_streams(sl_client_t *client, uint64_t count)
{
    char name[64];
    for (uint64_t i = 0; i < count; i++) {
        snprintf(name, sizeof(name), "sluice-bench-%d-%llu", (int)getpid(), (unsigned long long)i);
        if (sl_client_delete_stream(client, sl_id_name(name)) != 0)
            fprintf(stderr, "sluice-bench: could not delete stream %s\n", name);
    }
}

typedef struct durable_figures {
    double create_rate[ROUNDS_MAX], append_rate[ROUNDS_MAX], ratio[ROUNDS_MAX];
    uint64_t *create_lat, *append_lat;
    size_t creates, appends;
    uint64_t seq; /* streams created so far, warm-up included */
} durable_figures_t;

/* One round: per_round operations of each kind in chunks of CHUNK_OPS, the
 * two kinds taking turns chunk by chunk (in rotating order) so a slow spell
 * of the shared disk lands on both. Bounded by the round's time cap. */
static void durable_round(durable_figures_t *f, int r, sl_client_t *client, int fd, int per_round,
                          double seconds_max)
{
    uint64_t deadline = sl_clock_monotonic_ns() + (uint64_t)(seconds_max * 1e9);
    sb_rate_t c = {0, 0}, a = {0, 0};
    for (int left = per_round, chunk = 0; left > 0; left -= CHUNK_OPS, chunk++) {
        int count = left < CHUNK_OPS ? left : CHUNK_OPS;
        for (int k = 0; k < 2; k++) {
            sb_rate_t x;
            if ((chunk + k) % 2 == 0) {
                x = create_ops(client, &f->seq, count, deadline, f->create_lat + f->creates);
                f->creates += x.trips;
                c.trips += x.trips;
                c.elapsed_ns += x.elapsed_ns;
            } else {
                x = append_ops(fd, count, deadline, f->append_lat + f->appends);
                f->appends += x.trips;
                a.trips += x.trips;
                a.elapsed_ns += x.elapsed_ns;
            }
        }
    }
    f->create_rate[r] = sb_per_second(c);
    f->append_rate[r] = sb_per_second(a);
    f->ratio[r] = f->append_rate[r] > 0 ? f->create_rate[r] / f->append_rate[r] : 0.0;
}

static void print_row(const char *name, uint64_t ops, double rate, uint64_t *lat, size_t n,
                      const char *ratio)
{
    uint64_t p50 = sb_percentile(lat, n, 0.50), p99 = sb_percentile(lat, n, 0.99);
    uint64_t max = sb_percentile(lat, n, 1.0);
    printf("  %-44s %6llu %10.0f %9.3f %9.3f %9.3f  %s\n", name, (unsigned long long)ops, rate,
           (double)p50 / 1e6, (double)p99 / 1e6, (double)max / 1e6, ratio);
}

/* Which operation was the slowest (before the percentiles sort the array). */
static size_t slowest(const uint64_t *lat, size_t n)
{
    size_t at = 0;
    for (size_t i = 1; i < n; i++)
        at = lat[i] > lat[at] ? i : at;
    return at;
}

static void print_figures(durable_figures_t *f, int rounds)
{
    printf("  per-round CreateStream / baseline:");
    for (int r = 0; r < rounds; r++)
        printf(" %.1f%%", 100.0 * f->ratio[r]);
    size_t worst = slowest(f->create_lat, f->creates);
    printf("\n  slowest CreateStream: the %zu-th after the %d warm-up ones (%.1f ms)\n", worst + 1,
           WARMUP_OPS, f->creates ? (double)f->create_lat[worst] / 1e6 : 0.0);
    double create_rate = sb_median(f->create_rate, rounds);
    double append_rate = sb_median(f->append_rate, rounds);
    double ratio = sb_median(f->ratio, rounds);
    char text[64];
    snprintf(text, sizeof(text), "%5.1f %%", 100.0 * ratio);
    printf("  %-44s %6s %10s %9s %9s %9s  %s\n", "figure", "ops", "ops/s", "p50 ms", "p99 ms",
           "max ms", "vs baseline");
    print_row("write 256 B + fdatasync (baseline)", f->appends, append_rate, f->append_lat,
              f->appends, "100 %");
    print_row("CreateStream, acked after journal fdatasync", f->creates, create_rate, f->create_lat,
              f->creates, text);
    printf("  (ops/s: median of %d rounds; ratio: median of per-round ratios; latencies over "
           "all operations)\n",
           rounds);
}

static int open_baseline(const char *dir, char *path, size_t cap)
{
    snprintf(path, cap, "%s/sluice-bench-append.bin", dir);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0)
        sb_die("cannot create %s: %s", path, strerror(errno));
    return fd;
}

void sb_durable_run(const sb_options_t *o, const char *host, uint16_t port, const char *dir)
{
    int rounds = o->rounds < ROUNDS_MAX ? o->rounds : ROUNDS_MAX;
    int per_round = o->streams / rounds > 0 ? o->streams / rounds : 1;
    sl_client_t *client;
    sl_client_options_t opt = {.request_timeout_ms = 10000};
    int rc = sl_client_connect(host, port, &opt, &client);
    if (rc == 0)
        rc = sl_client_login(client, o->user, o->password, NULL);
    if (rc != 0)
        sb_die("libsluice connect/login to %s:%u: %s", host, port, sl_strerror(rc));
    char path[512];
    int fd = open_baseline(dir, path, sizeof(path));
    durable_figures_t f = {
        .create_lat = calloc((size_t)rounds * (size_t)per_round, sizeof(uint64_t)),
        .append_lat = calloc((size_t)rounds * (size_t)per_round, sizeof(uint64_t)),
    };
    if (!f.create_lat || !f.append_lat)
        sb_die("out of memory");
    printf("CreateStream: %d rounds x %d operations per figure, interleaved in chunks of %d; 1 "
           "connection; baseline file %s\n",
           rounds, per_round, CHUNK_OPS, path);
    /* Warm-up, not counted: the first appends extend a fresh file and a
     * fresh journal, and the first requests fault in the server's code. */
    uint64_t scratch[WARMUP_OPS];
    uint64_t warm_deadline =
        sl_clock_monotonic_ns() + (uint64_t)(o->durable_round_seconds_max * 1e9);
    create_ops(client, &f.seq, WARMUP_OPS, warm_deadline, scratch);
    append_ops(fd, WARMUP_OPS, warm_deadline, scratch);
    for (int r = 0; r < rounds; r++)
        durable_round(&f, r, client, fd, per_round, o->durable_round_seconds_max);
    print_figures(&f, rounds);
    if (o->port != 0)
        delete_streams(client, f.seq);
    close(fd);
    unlink(path);
    sl_client_close(client);
    free(f.create_lat);
    free(f.append_lat);
}
