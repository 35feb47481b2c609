/* libsluice's message-id keystream (src/client/random.c): the ChaCha20
 * blocks against known answers, fresh bytes on every draw, key erasure,
 * and a forked child that must not repeat its parent's ids. */
#include "testutil.h"

#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../src/client/random.c"

/* Key 00 01 .. 1f, 64-bit block counter in words 12-13, nonce zero;
 * computed with an independent ChaCha20 (Python's cryptography package). */
static const char *const block_hex[] = {
    "39fd2b7dd9c5196a8dbd0377b8dc4a498a35d86fbcde6accb2cc7d4cd8ea2492"
    "2b23cce7a26023ab3f0eef693ac87f64258235eab1f7a32dc22762a0485b410c",
    "18b84231ade6a6d113615c61af434e27f8b1f3f5e1ad5b5cecf8fc122a35755c"
    "7208086dd1ee3c5d9d815824640e003c9ba0f65ede5d59ce0d2a4a7f31955acd",
};
static const char *const block5_hex =
    "0be7ffa5fa90293ceda7b19d2a9741d1545f1ec0adf49ca599aca44e3567c05a"
    "206ffc953274f6e500ff395d44ff12b27a067f5c5178b1a42a1bb03748b79504";

static void key_0_to_31(uint32_t key[8])
{
    uint8_t bytes[32];
    for (int i = 0; i < 32; i++)
        bytes[i] = (uint8_t)i;
    for (int i = 0; i < 8; i++)
        key[i] = sl_load_u32(bytes + 4 * i);
}

static void assert_block(const uint8_t *got, const char *hex)
{
    size_t len;
    uint8_t *want = tu_hex(hex, &len);
    assert_int_equal(len, 64);
    assert_memory_equal(got, want, 64);
    free(want);
}

static void test_blocks_match_known_answers(void **state)
{
    (void)state;
    uint32_t key[8];
    key_0_to_31(key);
    uint8_t out[64 * LANES];
    chacha20_blocks(key, 0, out);
    assert_block(out, block_hex[0]);
    assert_block(out + 64, block_hex[1]);
    /* Every lane carries its own counter. */
    chacha20_blocks(key, 4, out);
    assert_block(out + 64, block5_hex);
    /* The baseline (SSE2) build gives the same bytes as the one chosen here (AVX2 where
     * the CPU has it). */
    uint8_t sse[64 * LANES];
    for (int l = 0; l < LANES; l += SSE_LANES)
        blocks_sse(key, 4 + (uint64_t)l, sse + 64 * l);
    assert_memory_equal(sse, out, sizeof(out));
}

static int cmp_id(const void *a, const void *b)
{
    return memcmp(a, b, 16);
}

static void test_draws_are_fresh(void **state)
{
    (void)state;
    enum { IDS = 3000 }; /* several refills */
    sl_client_rng_t one = {0}, two = {0};
    uint8_t(*ids)[16] = calloc(IDS, 16);
    assert_non_null(ids);
    for (int i = 0; i < IDS; i++)
        assert_int_equal(sl_client_rng_bytes(&one, ids[i], 16), 0);
    qsort(ids, IDS, 16, cmp_id);
    for (int i = 1; i < IDS; i++)
        assert_true(memcmp(ids[i - 1], ids[i], 16) != 0);
    /* Two generators are keyed apart. */
    uint8_t a[32], b[32];
    assert_int_equal(sl_client_rng_bytes(&one, a, sizeof(a)), 0);
    assert_int_equal(sl_client_rng_bytes(&two, b, sizeof(b)), 0);
    assert_true(memcmp(a, b, sizeof(a)) != 0);
    free(ids);
}

static void test_refill_erases_the_key(void **state)
{
    (void)state;
    sl_client_rng_t r = {0};
    uint8_t byte;
    assert_int_equal(sl_client_rng_bytes(&r, &byte, 1), 0);
    uint32_t before[8];
    memcpy(before, r.key, sizeof(before));
    /* The key now is the head of the blocks just served from. */
    uint8_t rest[SL_CLIENT_RNG_POOL];
    assert_int_equal(sl_client_rng_bytes(&r, rest, r.left + 1), 0);
    assert_true(memcmp(before, r.key, sizeof(before)) != 0);
    /* Served bytes do not stay in the pool. */
    assert_true(sl_all_zero(r.pool, sizeof(r.pool) - r.left));
}

static void test_reseeds_after_its_budget(void **state)
{
    (void)state;
    sl_client_rng_t r = {0};
    uint8_t byte;
    assert_int_equal(sl_client_rng_bytes(&r, &byte, 1), 0);
    assert_int_equal(r.reseed_left, SL_CLIENT_RNG_RESEED_BYTES - SL_CLIENT_RNG_POOL);
    r.reseed_left = 0;
    r.left = 0;
    assert_int_equal(sl_client_rng_bytes(&r, &byte, 1), 0);
    assert_int_equal(r.reseed_left, SL_CLIENT_RNG_RESEED_BYTES - SL_CLIENT_RNG_POOL);
}

/* A child forked with a half-used pool must draw other bytes than the
 * parent does next. */
static void test_fork_draws_other_bytes(void **state)
{
    (void)state;
    sl_client_rng_t r = {0};
    uint8_t first[16], parent[16], child[16];
    assert_int_equal(sl_client_rng_bytes(&r, first, sizeof(first)), 0);
    int pipe_fd[2];
    assert_int_equal(pipe(pipe_fd), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        int ok = sl_client_rng_bytes(&r, child, sizeof(child)) == 0 &&
                 write(pipe_fd[1], child, sizeof(child)) == (ssize_t)sizeof(child);
        _exit(ok ? 0 : 1);
    }
    assert_int_equal(sl_client_rng_bytes(&r, parent, sizeof(parent)), 0);
    assert_int_equal(read(pipe_fd[0], child, sizeof(child)), (ssize_t)sizeof(child));
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    assert_true(memcmp(parent, child, sizeof(parent)) != 0);
    close(pipe_fd[0]);
    close(pipe_fd[1]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_blocks_match_known_answers),
        cmocka_unit_test(test_draws_are_fresh),
        cmocka_unit_test(test_refill_erases_the_key),
        cmocka_unit_test(test_reseeds_after_its_budget),
        cmocka_unit_test(test_fork_draws_other_bytes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
