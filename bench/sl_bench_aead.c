/* At-rest encryption's cipher engines side by side: seal and open of one
 * message (100 B, 1 KiB, 16 KiB) through each AES-256-GCM engine this build
 * and CPU have (auth/aead.h), in the same run, taking turns. Then what an
 * encrypted poll does with a sealed record of 1024 messages of 1 KiB
 * (sl_encryption_open_run: open each blob in place, move its frame down,
 * rebuild the checksums) beside the cipher alone over the same blobs, per
 * message. Built with the tree, never run by the tests:
 * ./build/bench/sl_bench_aead. */
#include <sluice/error.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "auth/aead.h"
#include "base/clock.h"
#include "server/encryption.h"
#include "wire/batch.h"

enum { ROUNDS = 5, MAX_LEN = 16384 };
/* Each figure runs about 0.2 s per round. */
#define RUN_NS 200000000ull

static uint8_t plain[MAX_LEN], sealed[MAX_LEN + SL_AEAD_OVERHEAD], out[MAX_LEN];

/* ns per operation over about RUN_NS of back-to-back operations. */
static double time_op(sl_aead_t *a, size_t len, bool open)
{
    sl_span_t aad = sl_span_str("0123456789abcdef\x01\x00\x00\x00");
    if (sl_aead_seal(a, aad, plain, len, sealed) != 0)
        abort();
    uint64_t n = 0, start = sl_clock_monotonic_ns(), now = start;
    while (now - start < RUN_NS) {
        for (int i = 0; i < 256; i++) {
            int rc = open ? sl_aead_open_to(a, aad, sealed, len + SL_AEAD_OVERHEAD, out, NULL)
                          : sl_aead_seal(a, aad, plain, len, sealed);
            if (rc != 0)
                abort();
        }
        n += 256;
        now = sl_clock_monotonic_ns();
    }
    return (double)(now - start) / (double)n;
}

static int cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

enum { RECORD_MESSAGES = 1024, RECORD_PAYLOAD = 1024, RECORD_COPIES = 64 };

/* A poll's opening of one sealed record (open_run) or the cipher alone over
 * its blobs (!open_run), ns per message over about RUN_NS. Before each
 * pass the record is copied in from one of RECORD_COPIES sealed copies (64
 * MiB), as a poll reads it into its reply. */
static double time_record(sl_aead_t *a, const uint8_t *copies, size_t sealed_len, uint8_t *run,
                          bool open_run)
{
    uint64_t spent = 0, n = 0, start = sl_clock_monotonic_ns();
    for (unsigned k = 0; sl_clock_monotonic_ns() - start < RUN_NS; k++) {
        memcpy(run, copies + (size_t)(k % RECORD_COPIES) * sealed_len, sealed_len);
        uint64_t t0 = sl_clock_monotonic_ns();
        if (open_run) {
            size_t opened;
            uint64_t bad;
            if (sl_encryption_open_run(a, run, sealed_len, &opened, &bad) != 0)
                abort();
        } else {
            size_t at = SL_BATCH_HEADER_SIZE;
            for (int i = 0; i < RECORD_MESSAGES; i++) {
                /* The additional data as the server binds it: the message
                 * id and the user headers' length (server/encryption.h). */
                const uint8_t *frame = run + at;
                uint8_t aad[20], *blob = run + at + SL_FRAME_HEADER_SIZE;
                size_t blob_len = RECORD_PAYLOAD + SL_AEAD_OVERHEAD;
                memcpy(aad, frame + SL_FRAME_OFF_ID, 16);
                memcpy(aad + 16, frame + SL_FRAME_OFF_HEADERS_LENGTH, 4);
                if (sl_aead_open(a, (sl_span_t){aad, sizeof(aad)}, blob, blob_len, NULL) != 0)
                    abort();
                at += SL_FRAME_HEADER_SIZE + blob_len;
            }
        }
        spent += sl_clock_monotonic_ns() - t0;
        n += RECORD_MESSAGES;
    }
    return (double)spent / (double)n;
}

/* The second table: sl_encryption_open_run beside the cipher alone. */
static void bench_records(sl_aead_t *a)
{
    static uint8_t payload[RECORD_PAYLOAD];
    memset(payload, 'x', sizeof(payload));
    sl_buf_t buf;
    sl_buf_init(&buf, 0);
    sl_batch_builder_t bb;
    sl_batch_begin(&bb, &buf);
    for (uint32_t i = 0; i < RECORD_MESSAGES; i++)
        if (sl_batch_add(&bb, (sl_u128_t){i + 1, 7}, 1000 + i, (sl_span_t){payload, sizeof(payload)},
                         (sl_span_t){NULL, 0}) != 0)
            abort();
    sl_span_t record;
    if (sl_batch_finish(&bb, &record) != 0)
        abort();
    size_t sealed_len = sl_encryption_sealed_len(record.len, RECORD_MESSAGES);
    uint8_t *copies = malloc(sealed_len * RECORD_COPIES), *run = malloc(sealed_len);
    if (!copies || !run)
        abort();
    for (int c = 0; c < RECORD_COPIES; c++)
        if (sl_encryption_seal_record(a, record, copies + (size_t)c * sealed_len) != 0)
            abort();
    double t[2][ROUNDS];
    for (int r = 0; r < ROUNDS; r++)
        for (int k = 0; k < 2; k++)
            t[k][r] = time_record(a, copies, sealed_len, run, k == 1);
    qsort(t[0], ROUNDS, sizeof(double), cmp_double);
    qsort(t[1], ROUNDS, sizeof(double), cmp_double);
    printf("\nA sealed record of %d x %d B opened in place (%s), median of %d rounds, ns per "
           "message\n",
           RECORD_MESSAGES, RECORD_PAYLOAD, sl_aead_engine_name(a), ROUNDS);
    printf("  %-44s %8.0f\n", "the cipher alone over its blobs", t[0][ROUNDS / 2]);
    printf("  %-44s %8.0f\n", "sl_encryption_open_run (a poll's opening)", t[1][ROUNDS / 2]);
    sl_buf_free(&buf);
    free(copies);
    free(run);
}

int main(void)
{
    static const uint8_t key[SL_AEAD_KEY_SIZE] = "sl_bench_aead key of 32 bytes...";
    static const size_t lens[] = {100, 1024, 16384};
    sl_aead_t *e[2] = {NULL, NULL};
    if (sl_aead_create_engine(key, NULL, SL_AEAD_ENGINE_OPENSSL, &e[0]) != 0)
        return 1;
    if (sl_aead_engine_available(SL_AEAD_ENGINE_IPSEC_MB) &&
        sl_aead_create_engine(key, NULL, SL_AEAD_ENGINE_IPSEC_MB, &e[1]) != 0)
        return 1;
    for (size_t i = 0; i < sizeof(plain); i++)
        plain[i] = (uint8_t)(i * 13);
    printf("AES-256-GCM per message, median of %d rounds (engines taking turns), ns\n", ROUNDS);
    printf("  %-34s %8s %8s %10s %10s\n", "engine", "bytes", "seal", "open", "open GB/s");
    for (size_t l = 0; l < sizeof(lens) / sizeof(lens[0]); l++) {
        double t[2][2][ROUNDS];
        for (int r = 0; r < ROUNDS; r++)
            for (int k = 0; k < 2; k++)
                for (int op = 0; op < 2; op++)
                    t[k][op][r] = e[k] ? time_op(e[k], lens[l], op == 1) : 0;
        for (int k = 0; k < 2; k++) {
            if (!e[k])
                continue;
            qsort(t[k][0], ROUNDS, sizeof(double), cmp_double);
            qsort(t[k][1], ROUNDS, sizeof(double), cmp_double);
            double seal = t[k][0][ROUNDS / 2], open = t[k][1][ROUNDS / 2];
            printf("  %-34s %8zu %8.0f %10.0f %10.2f\n", sl_aead_engine_name(e[k]), lens[l], seal,
                   open, (double)lens[l] / open);
        }
    }
    if (!e[1])
        printf("  (intel-ipsec-mb: not in this build, or no AES-NI)\n");
    bench_records(e[1] ? e[1] : e[0]);
    sl_aead_destroy(e[0]);
    sl_aead_destroy(e[1]);
    return 0;
}
