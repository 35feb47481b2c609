/* At-rest encryption's cipher engines side by side: seal and open of one
 * message (100 B, 1 KiB, 16 KiB) through each AES-256-GCM engine this build
 * and CPU have (auth/aead.h), in the same run, taking turns. Built with the
 * tree, never run by the tests: ./build/bench/sl_bench_aead. */
#include <sluice/error.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "auth/aead.h"
#include "base/clock.h"

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
    sl_aead_destroy(e[0]);
    sl_aead_destroy(e[1]);
    return 0;
}
