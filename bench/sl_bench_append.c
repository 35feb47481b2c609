/* The server's write path without the network: what sluiced does with a
 * SendMessages batch once it is received (sl_batch_validate_keep, then
 * sl_partition_append_many: stamp, journal, flush gate, writev, index entry),
 * next to the least any server does with it (write() to a file), both
 * after the same copy into a warm buffer that stands for the receive.
 * Thread CPU time per batch, the two taking turns in slices. Under
 * callgrind (`--batches N`) it counts the instructions of each path
 * repeatably, which this noisy machine's clocks cannot:
 *   valgrind --tool=callgrind --toggle-collect=run_store \
 *       ./build/bench/sl_bench_append --batches 200 100x1000
 * `--first-segments N` times instead what a partition's first flush adds:
 * N partitions created new (sl_partition_create) under one topic directory,
 * each given one 100 x 100 B batch and flushed (its directory, its first
 * segment's .log and .index, the write), against the same batch written to
 * a file already open; thread CPU per partition, rounds taking turns.
 * Built with the tree, never run by the tests. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sluice/error.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/assert.h"
#include "base/clock.h"
#include "store/partition.h"
#include "wire/batch.h"

enum {
    POOL = 64,       /* frame buffers at most, allocated as the journal needs them */
    SLICES = 10,     /* per figure and round */
    SHAPES_MAX = 16, /* shapes on one command line */
};

typedef struct shape {
    uint32_t size, count;
} shape_t;

typedef struct bench {
    shape_t shape;
    uint8_t *source; /* the batch record as the client built it */
    size_t len;
    uint8_t *pool[POOL];
    bool pool_free[POOL];
    uint32_t last; /* the buffer take() gave last */
    sl_partition_t *partition;
    int file; /* the write() floor's */
    char dir[256];
    uint64_t now_us;
    sl_buf_t sums; /* the batch checksum's input, as messages.c keeps it */
} bench_t;

static _Noreturn void die(const char *what, int rc)
{
    fprintf(stderr, "sl_bench_append: %s: %s\n", what, rc < 0 ? sl_strerror(rc) : strerror(errno));
    exit(1);
}

/* The partition's release hook: the buffer goes back to the pool. */
static void release(void *ctx, void *owner)
{
    bench_t *b = ctx;
    for (int i = 0; i < POOL; i++)
        if (b->pool[i] == owner)
            b->pool_free[i] = true;
}

static size_t held(void *ctx, const void *owner)
{
    (void)owner;
    return ((bench_t *)ctx)->len;
}

/* A free buffer holding a fresh copy of the batch (the receive's copy). */
static uint8_t *take(bench_t *b)
{
    for (uint32_t i = 0; i < POOL; i++) {
        if (!b->pool[i]) {
            b->pool[i] = malloc(b->len);
            if (!b->pool[i])
                die("malloc", 0);
            memset(b->pool[i], 0, b->len); /* warm, as the server's reused buffers are */
            b->pool_free[i] = true;
        }
        if (b->pool_free[i]) {
            b->pool_free[i] = false;
            b->last = i;
            memcpy(b->pool[i], b->source, b->len);
            return b->pool[i];
        }
    }
    die("every buffer is journaled (raise POOL)", 0);
}

static void build_source(bench_t *b)
{
    sl_buf_t buf;
    sl_buf_init(&buf, 0);
    sl_batch_builder_t bb;
    sl_batch_begin(&bb, &buf);
    uint8_t *payload = malloc(b->shape.size ? b->shape.size : 1);
    for (uint32_t i = 0; i < b->shape.size; i++)
        payload[i] = (uint8_t)(i * 7 + 1);
    for (uint32_t m = 0; m < b->shape.count; m++) {
        sl_u128_t id = {m + 1, 0};
        if (sl_batch_add(&bb, id, 1000000 + m, sl_span(payload, b->shape.size), sl_span(NULL, 0)))
            die("batch add", -1);
    }
    sl_span_t rec;
    if (sl_batch_finish(&bb, &rec) != 0)
        die("batch finish", -1);
    b->len = rec.len;
    b->source = malloc(rec.len);
    memcpy(b->source, rec.ptr, rec.len);
    sl_buf_free(&buf);
    free(payload);
}

static void open_targets(bench_t *b)
{
    char path[300];
    snprintf(path, sizeof(path), "%s/partition", b->dir);
    sl_partition_config_t cfg = {.release = release, .held = held, .release_ctx = b};
    char err[256];
    int rc = sl_partition_open(path, 0, &cfg, b->now_us, &b->partition, err, sizeof(err));
    if (rc != 0)
        die(err, rc);
    snprintf(path, sizeof(path), "%s/floor", b->dir);
    b->file = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (b->file < 0)
        die(path, 0);
}

/* Both targets start again empty, so neither runs into writeback the other
 * left behind more than the other does. */
static void reset_targets(bench_t *b)
{
    if (sl_partition_flush(b->partition) != 0)
        die("flush", -1);
    sl_partition_close(b->partition);
    close(b->file);
    char path[300];
    snprintf(path, sizeof(path), "%s/partition", b->dir);
    if (sl_partition_remove(path) != 0)
        die("remove", -1);
    open_targets(b);
}

/* sluiced's work per batch after the receive (messages.c send_messages). */
__attribute__((noinline)) static void run_store(bench_t *b, uint64_t batches)
{
    for (uint64_t i = 0; i < batches; i++) {
        uint8_t *frame = take(b);
        int rc = sl_batch_validate_keep(sl_span(frame, b->len), b->shape.count, &b->sums);
        sl_partition_batch_t batch = {frame, frame, b->len, b->sums.len ? b->sums.data : NULL,
                                      b->sums.len};
        uint64_t base;
        size_t accepted;
        if (rc == 0)
            rc = sl_partition_append_many(b->partition, &batch, 1, b->now_us++, &base, &accepted);
        if (rc != 0)
            die("append", rc);
    }
}

/* The ceiling's work per batch after the receive. */
__attribute__((noinline)) static void run_floor(bench_t *b, uint64_t batches)
{
    for (uint64_t i = 0; i < batches; i++) {
        uint8_t *frame = take(b);
        ssize_t n = write(b->file, frame, b->len);
        b->pool_free[b->last] = true;
        if (n != (ssize_t)b->len)
            die("write", 0);
    }
}

static int cmp_u64(const void *x, const void *y)
{
    uint64_t a = *(const uint64_t *)x, c = *(const uint64_t *)y;
    return a < c ? -1 : a > c;
}

static void measure(bench_t *b, uint32_t rounds, double seconds)
{
    /* Batches per slice: about seconds / SLICES of writing at 1 GB/s. */
    uint64_t per_slice = (uint64_t)(seconds * 1e9 / SLICES) / b->len + 1;
    uint64_t store[64], floor_[64];
    for (uint32_t r = 0; r < rounds; r++) {
        uint64_t cpu[2] = {0, 0};
        for (int s = 0; s < SLICES; s++) {
            for (int k = 0; k < 2; k++) {
                int which = (s + k) % 2; /* the order alternates */
                uint64_t t0 = sl_clock_thread_cpu_ns();
                if (which == 0)
                    run_store(b, per_slice);
                else
                    run_floor(b, per_slice);
                cpu[which] += sl_clock_thread_cpu_ns() - t0;
            }
        }
        store[r] = cpu[0] / (per_slice * SLICES);
        floor_[r] = cpu[1] / (per_slice * SLICES);
        reset_targets(b);
    }
    qsort(store, rounds, sizeof(uint64_t), cmp_u64);
    qsort(floor_, rounds, sizeof(uint64_t), cmp_u64);
    double mb = (double)b->shape.size * b->shape.count / 1e6;
    uint64_t s = store[rounds / 2], f = floor_[rounds / 2];
    printf("%6u B x %4u  %9zu  %9.1f  %9.1f  %6.2fx  %9.1f  %9.1f\n", b->shape.size,
           b->shape.count, b->len, s / 1e3, f / 1e3, (double)s / (double)f, s / 1e3 / mb,
           f / 1e3 / mb);
}

static bool parse_shape(const char *arg, shape_t *out)
{
    char *end;
    unsigned long size = strtoul(arg, &end, 10);
    if (*end != 'x')
        return false;
    unsigned long count = strtoul(end + 1, &end, 10);
    if (*end || count == 0 || count > 100000 || size > 1000000 ||
        (uint64_t)(size + 48) * count > 60u * 1024 * 1024)
        return false;
    *out = (shape_t){(uint32_t)size, (uint32_t)count};
    return true;
}

/* --first-segments: per partition, the first flush of a partition created new (directory,
 * .log, .index, write) against the same batch written to a file already open. */
static void first_segments(uint32_t partitions, uint32_t rounds)
{
    bench_t b = {.shape = {100, 100}, .now_us = 1700000000000000ull};
    build_source(&b);
    const char *tmp = getenv("TMPDIR");
    printf("%-10s %12s %12s %12s\n", "round", "first us", "write us", "difference");
    for (uint32_t r = 0; r < rounds; r++) {
        snprintf(b.dir, sizeof(b.dir), "%s/sl_bench_append-XXXXXX", tmp ? tmp : "/tmp");
        if (!mkdtemp(b.dir))
            die("mkdtemp", 0);
        char path[400];
        snprintf(path, sizeof(path), "%s/floor", b.dir);
        b.file = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        if (b.file < 0)
            die(path, 0);
        sl_partition_config_t cfg = {.release = release, .held = held, .release_ctx = &b};
        uint64_t first = 0, floor_ = 0;
        for (uint32_t i = 0; i < partitions; i++) {
            /* The data root's streams/<s>/topics/<t>/partitions/<p>, as sluiced names it. */
            snprintf(path, sizeof(path), "%s/data/streams/1/topics/1/partitions/%u", b.dir, i);
            uint64_t t0 = sl_clock_thread_cpu_ns();
            sl_partition_t *p;
            if (sl_partition_create(path, i, &cfg, &p) != 0)
                die("create", -1);
            uint8_t *frame = take(&b);
            uint64_t base;
            if (sl_partition_append(p, frame, frame, b.len, b.now_us++, &base) != 0 ||
                sl_partition_flush(p) != 0)
                die("append", -1);
            uint64_t t1 = sl_clock_thread_cpu_ns();
            frame = take(&b);
            ssize_t n = write(b.file, frame, b.len);
            b.pool_free[b.last] = true;
            if (n != (ssize_t)b.len)
                die("write", 0);
            uint64_t t2 = sl_clock_thread_cpu_ns();
            first += t1 - t0;
            floor_ += t2 - t1;
            sl_partition_close(p);
        }
        printf("%-10u %12.1f %12.1f %12.1f\n", r + 1, first / 1e3 / partitions,
               floor_ / 1e3 / partitions, ((double)first - (double)floor_) / 1e3 / partitions);
        close(b.file);
        snprintf(path, sizeof(path), "%s/data", b.dir);
        if (sl_store_remove_tree(path) != 0)
            die("remove", -1);
        snprintf(path, sizeof(path), "%s/floor", b.dir);
        unlink(path);
        rmdir(b.dir);
    }
    for (int k = 0; k < POOL; k++)
        free(b.pool[k]);
    free(b.source);
}

int main(int argc, char **argv)
{
    shape_t shapes[SHAPES_MAX];
    int n = 0;
    uint32_t rounds = 5;
    double seconds = 1.0;
    uint64_t batches = 0; /* fixed count, for callgrind */
    uint32_t partitions = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--rounds") && i + 1 < argc)
            rounds = (uint32_t)atoi(argv[++i]);
        else if (!strcmp(argv[i], "--seconds") && i + 1 < argc)
            seconds = atof(argv[++i]);
        else if (!strcmp(argv[i], "--batches") && i + 1 < argc)
            batches = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--first-segments") && i + 1 < argc)
            partitions = (uint32_t)strtoul(argv[++i], NULL, 10);
        else if (n < SHAPES_MAX && parse_shape(argv[i], &shapes[n]))
            n++;
        else {
            fprintf(stderr, "usage: sl_bench_append [--rounds N] [--seconds S] [--batches N] "
                            "[SIZExCOUNT ...]\n       sl_bench_append --first-segments N "
                            "[--rounds N]\n");
            return 2;
        }
    }
    if (rounds < 1 || rounds > 64)
        rounds = 5;
    if (partitions) {
        first_segments(partitions, rounds);
        return 0;
    }
    if (n == 0) {
        shapes[n++] = (shape_t){100, 1000};
        shapes[n++] = (shape_t){1000, 1000};
        shapes[n++] = (shape_t){10240, 100};
        shapes[n++] = (shape_t){10240, 1000};
    }
    const char *tmp = getenv("TMPDIR");
    if (batches == 0)
        printf("%-15s %9s  %9s  %9s  %7s  %9s  %9s\n", "shape", "record B", "store us",
               "write us", "ratio", "store/MB", "write/MB");
    for (int i = 0; i < n; i++) {
        bench_t b = {.shape = shapes[i], .now_us = 1700000000000000ull};
        sl_buf_init(&b.sums, 0);
        snprintf(b.dir, sizeof(b.dir), "%s/sl_bench_append-XXXXXX", tmp ? tmp : "/tmp");
        if (!mkdtemp(b.dir))
            die("mkdtemp", 0);
        build_source(&b);
        open_targets(&b);
        if (batches) {
            run_store(&b, batches);
            run_floor(&b, batches);
        } else {
            measure(&b, rounds, seconds);
        }
        if (sl_partition_flush(b.partition) != 0)
            die("flush", -1);
        sl_partition_close(b.partition);
        close(b.file);
        char path[300];
        snprintf(path, sizeof(path), "%s/partition", b.dir);
        if (sl_partition_remove(path) != 0)
            die("remove", -1);
        snprintf(path, sizeof(path), "%s/floor", b.dir);
        unlink(path);
        rmdir(b.dir);
        for (int k = 0; k < POOL; k++)
            free(b.pool[k]);
        free(b.source);
        sl_buf_free(&b.sums);
    }
    return 0;
}
