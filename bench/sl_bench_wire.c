/* Wire-layer micro benchmarks: batch validation against raw XXH3 over the
 * same bytes, and frame header codecs. Built with the tree, never run by
 * the tests: `make bench` or ./build/bench/sl_bench_wire. */
#include <sluice/error.h>
#include <stdio.h>
#include <stdlib.h>

#include "base/assert.h"
#include "base/clock.h"
#include "base/xxh3.h"
#include "wire/batch.h"
#include "wire/header.h"

enum {
    MESSAGES = 1000,
    PAYLOAD_BYTES = 1000,
    RUNS = 5,
};
/* Each figure runs for about a second in total, split over RUNS runs. */
#define RUN_NS (1000000000ull / RUNS)

/* Results flow here so the compiler cannot drop the measured work. */
static volatile uint64_t sink;

/* Tells the compiler the bytes at p may have changed, so work over them
 * cannot be hoisted out of a loop. */
static inline void clobber(const void *p)
{
    __asm__ volatile("" : : "r"(p) : "memory");
}

typedef struct bench_ctx {
    sl_span_t record;
    uint8_t request[SL_HEADER_SIZE];
    uint8_t reply[SL_HEADER_SIZE];
    sl_request_header_t request_fields;
    sl_reply_header_t reply_fields;
} bench_ctx_t;

typedef uint64_t (*bench_fn_t)(bench_ctx_t *ctx, uint64_t iterations);

static uint64_t run_xxh3(bench_ctx_t *ctx, uint64_t iterations)
{
    uint64_t acc = 0;
    for (uint64_t i = 0; i < iterations; i++) {
        clobber(ctx->record.ptr);
        acc += sl_xxh3_64(ctx->record.ptr, ctx->record.len);
    }
    return acc;
}

/* The floor for validation: one XXH3 call per frame over the same bytes
 * (frame bytes 8..end), nothing else. */
static uint64_t run_xxh3_frames(bench_ctx_t *ctx, uint64_t iterations)
{
    uint64_t acc = 0;
    for (uint64_t i = 0; i < iterations; i++) {
        clobber(ctx->record.ptr);
        sl_frame_iter_t it = sl_frame_iter(ctx->record);
        sl_message_t m;
        while (sl_frame_next(&it, &m))
            acc += sl_xxh3_64(m.frame.ptr + 8, m.frame.len - 8);
    }
    return acc;
}

static uint64_t run_validate(bench_ctx_t *ctx, uint64_t iterations)
{
    uint64_t acc = 0;
    for (uint64_t i = 0; i < iterations; i++) {
        clobber(ctx->record.ptr);
        acc += (uint64_t)sl_batch_validate(ctx->record, MESSAGES);
    }
    return acc;
}

static uint64_t run_request_decode(bench_ctx_t *ctx, uint64_t iterations)
{
    uint64_t acc = 0;
    for (uint64_t i = 0; i < iterations; i++) {
        sl_request_header_t h;
        clobber(ctx->request);
        acc += sl_request_header_decode(ctx->request, SL_FRAME_MAX_DEFAULT, &h) + h.request;
    }
    return acc;
}

static uint64_t run_request_encode(bench_ctx_t *ctx, uint64_t iterations)
{
    uint64_t acc = 0;
    for (uint64_t i = 0; i < iterations; i++) {
        ctx->request_fields.request = i;
        sl_request_header_encode(ctx->request, &ctx->request_fields);
        clobber(ctx->request);
        acc += ctx->request[SL_REQ_OFF_REQUEST];
    }
    return acc;
}

static uint64_t run_reply_encode(bench_ctx_t *ctx, uint64_t iterations)
{
    uint64_t acc = 0;
    for (uint64_t i = 0; i < iterations; i++) {
        ctx->reply_fields.request = i;
        sl_reply_header_encode(ctx->reply, &ctx->reply_fields);
        clobber(ctx->reply);
        acc += ctx->reply[SL_REP_OFF_REQUEST];
    }
    return acc;
}

/* Nanoseconds one call of fn with `iterations` takes. */
static uint64_t time_once(bench_fn_t fn, bench_ctx_t *ctx, uint64_t iterations)
{
    uint64_t start = sl_clock_monotonic_ns();
    sink += fn(ctx, iterations);
    return sl_clock_monotonic_ns() - start;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Iterations of fn that take about RUN_NS. */
static uint64_t calibrate(bench_fn_t fn, bench_ctx_t *ctx)
{
    uint64_t iterations = 1, elapsed;
    while ((elapsed = time_once(fn, ctx, iterations)) < RUN_NS / 20)
        iterations *= 2;
    return (uint64_t)((double)iterations * (double)RUN_NS / (double)elapsed) + 1;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(v[0]), cmp_double);
    return v[n / 2];
}

/* Nanoseconds per iteration of each of n functions, median over RUNS runs.
 * The functions take turns within each run, so a slow spell of the machine
 * hits all of them alike; ratio[i] is the median of per-run ratios of
 * fns[0] to fns[i]. */
static void measure(const bench_fn_t *fns, int n, bench_ctx_t *ctx, double *ns, double *ratio)
{
    uint64_t iterations[8];
    double per[8][RUNS], rel[8][RUNS];
    sl_assert(n <= 8);
    for (int i = 0; i < n; i++)
        iterations[i] = calibrate(fns[i], ctx);
    for (int r = 0; r < RUNS; r++) {
        for (int i = 0; i < n; i++)
            per[i][r] = (double)time_once(fns[i], ctx, iterations[i]) / (double)iterations[i];
        for (int i = 0; i < n; i++)
            rel[i][r] = per[0][r] / per[i][r];
    }
    for (int i = 0; i < n; i++) {
        ns[i] = median(per[i], RUNS);
        ratio[i] = median(rel[i], RUNS);
    }
}

/* The benchmark batch: 1000 messages of 1000 payload bytes, no headers. */
static sl_span_t build_batch(sl_buf_t *buf)
{
    static uint8_t payload[PAYLOAD_BYTES];
    for (size_t i = 0; i < sizeof(payload); i++)
        payload[i] = (uint8_t)(i * 131 + 7);
    sl_batch_builder_t bb;
    sl_batch_begin(&bb, buf);
    for (uint32_t i = 0; i < MESSAGES; i++) {
        sl_u128_t id = {i + 1, 0};
        if (sl_batch_add(&bb, id, 1700000000000000ull + i, sl_span(payload, sizeof(payload)),
                         sl_span(NULL, 0)) != 0)
            abort();
    }
    sl_span_t record;
    if (sl_batch_finish(&bb, &record) != 0 || sl_batch_validate(record, MESSAGES) != 0)
        abort();
    return record;
}

static void setup_headers(bench_ctx_t *ctx)
{
    ctx->request_fields = (sl_request_header_t){
        .size = SL_HEADER_SIZE + 394,
        .client = {0x0706050403020100ull, 0x0f0e0d0c0b0a0908ull},
        .request = 1,
        .operation = SL_OP_SEND_MESSAGES,
        .session = 1,
    };
    sl_request_header_encode(ctx->request, &ctx->request_fields);
    ctx->reply_fields = (sl_reply_header_t){
        .size = SL_HEADER_SIZE + 24,
        .client = ctx->request_fields.client,
        .request = 1,
        .operation = SL_OP_SEND_MESSAGES,
        .op = 42,
        .commit = 42,
    };
}

int main(void)
{
    sl_buf_t buf;
    sl_buf_init(&buf, 0);
    bench_ctx_t ctx;
    ctx.record = build_batch(&buf);
    setup_headers(&ctx);

    double bytes = (double)ctx.record.len;
    const bench_fn_t hashing[] = {run_xxh3, run_xxh3_frames, run_validate};
    const bench_fn_t headers[] = {run_request_decode, run_request_encode, run_reply_encode};
    double hash_ns[3], hash_ratio[3], header_ns[3], header_ratio[3];
    measure(hashing, 3, &ctx, hash_ns, hash_ratio);
    measure(headers, 3, &ctx, header_ns, header_ratio);

    printf("sl_bench_wire: xxh3 %s; batch %u x %u-byte payloads = %zu bytes; "
           "median of %d runs\n",
           sl_xxh3_impl(), MESSAGES, PAYLOAD_BYTES, ctx.record.len, RUNS);
    printf("%-40s %10s  %-8s %s\n", "figure", "value", "unit", "vs raw xxh3");
    printf("%-40s %10.2f  %-8s\n", "xxh3-64 raw over the batch", bytes / hash_ns[0], "GB/s");
    printf("%-40s %10.2f  %-8s %5.1f %%\n", "xxh3-64 per frame (same bytes)", bytes / hash_ns[1],
           "GB/s", 100.0 * hash_ratio[1]);
    printf("%-40s %10.2f  %-8s %5.1f %%\n", "sl_batch_validate", bytes / hash_ns[2], "GB/s",
           100.0 * hash_ratio[2]);
    printf("%-40s %10.2f  %-8s\n", "request header decode", header_ns[0], "ns/call");
    printf("%-40s %10.2f  %-8s\n", "request header encode", header_ns[1], "ns/call");
    printf("%-40s %10.2f  %-8s\n", "reply header encode", header_ns[2], "ns/call");
    printf("(ratios: median of per-run ratios, the figures taking turns within each run)\n");
    (void)header_ratio;
    sl_buf_free(&buf);
    return 0;
}
