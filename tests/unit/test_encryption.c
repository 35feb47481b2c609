/* src/auth/aead.c and src/server/encryption.c: AES-256-GCM seal and open
 * (known answers, tampering, the previous key), sealing a batch record and
 * opening runs of sealed records, hostile sealed bytes. */
#define _GNU_SOURCE
#include "testutil.h"

#include <sluice/error.h>
#include <stdlib.h>
#include <string.h>

#include "auth/aead.h"
#include "server/encryption.h"
#include "server/frame_pool.h"
#include "server/tail_cache.h"
#include "wire/batch.h"
#include "wire/tlv.h"

static const uint8_t key_a[32] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16,
                                  17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32};
static const uint8_t key_b[32] = {0xb0, 0xb1, 0xb2, 0xb3};

/* The engine the tests of a group run on (main runs them on each). */
static sl_aead_engine_t engine = SL_AEAD_ENGINE_OPENSSL;

static sl_aead_t *aead(const uint8_t *key, const uint8_t *previous)
{
    sl_aead_t *a;
    assert_int_equal(sl_aead_create_engine(key, previous, engine, &a), 0);
    assert_int_equal(sl_aead_engine(a), engine);
    return a;
}

/* The default engine is intel-ipsec-mb exactly when this build has it and
 * the CPU has AES-NI; an engine that cannot run is refused, not replaced. */
static void test_engine_choice(void **state)
{
    (void)state;
    bool want = sl_aead_engine_built(SL_AEAD_ENGINE_IPSEC_MB) && __builtin_cpu_supports("aes");
    assert_int_equal(sl_aead_engine_available(SL_AEAD_ENGINE_IPSEC_MB), want);
    assert_true(sl_aead_engine_available(SL_AEAD_ENGINE_OPENSSL));
    sl_aead_t *a;
    assert_int_equal(sl_aead_create(key_a, NULL, &a), 0);
    assert_int_equal(sl_aead_engine(a), want ? SL_AEAD_ENGINE_IPSEC_MB : SL_AEAD_ENGINE_OPENSSL);
    print_message("default engine: %s\n", sl_aead_engine_name(a));
    sl_aead_destroy(a);
    if (!want)
        assert_int_equal(sl_aead_create_engine(key_a, NULL, SL_AEAD_ENGINE_IPSEC_MB, &a),
                         -SL_ERR_FEATURE_UNAVAILABLE);
}

/* What one engine seals the other opens, at every length around the block
 * and the 16-block boundaries, with and without additional data, and a
 * flipped bit is refused by both: data written before a change of engine
 * (an upgrade that adds intel-ipsec-mb, a CPU without AES-NI) stays
 * readable. */
static void test_engines_interoperate(void **state)
{
    (void)state;
    if (!sl_aead_engine_available(SL_AEAD_ENGINE_IPSEC_MB)) {
        print_message("intel-ipsec-mb not in this build or CPU: one engine, nothing to compare\n");
        return;
    }
    sl_aead_t *e[2];
    assert_int_equal(sl_aead_create_engine(key_a, NULL, SL_AEAD_ENGINE_OPENSSL, &e[0]), 0);
    assert_int_equal(sl_aead_create_engine(key_a, NULL, SL_AEAD_ENGINE_IPSEC_MB, &e[1]), 0);
    static const size_t lens[] = {0, 1, 15, 16, 17, 255, 256, 257, 1024, 4097};
    static uint8_t plain[4097], sealed[4097 + SL_AEAD_OVERHEAD], work[sizeof(sealed)],
        out[sizeof(plain)];
    for (size_t i = 0; i < sizeof(plain); i++)
        plain[i] = (uint8_t)(i * 7 + 3);
    for (size_t l = 0; l < sizeof(lens) / sizeof(lens[0]); l++) {
        size_t n = lens[l], blob = n + SL_AEAD_OVERHEAD;
        for (int from = 0; from < 2; from++) {
            sl_span_t aad = l % 2 ? sl_span_str("stream 1 topic 2") : (sl_span_t){NULL, 0};
            assert_int_equal(sl_aead_seal(e[from], aad, plain, n, sealed), 0);
            sl_aead_t *to = e[1 - from];
            memcpy(work, sealed, blob);
            assert_int_equal(sl_aead_open(to, aad, work, blob, NULL), 0);
            assert_memory_equal(work + SL_AEAD_NONCE_SIZE, plain, n);
            assert_int_equal(sl_aead_open_to(to, aad, sealed, blob, out, NULL), 0);
            assert_memory_equal(out, plain, n);
            sealed[blob - 1 - (n % SL_AEAD_TAG_SIZE)] ^= 0x40; /* the tag, or the body */
            memcpy(work, sealed, blob);
            assert_int_equal(sl_aead_open(to, aad, work, blob, NULL), -SL_ERR_CANNOT_DECRYPT_DATA);
            assert_int_equal(sl_aead_open(e[from], aad, work, blob, NULL),
                             -SL_ERR_CANNOT_DECRYPT_DATA);
        }
    }
    sl_aead_destroy(e[0]);
    sl_aead_destroy(e[1]);
}

static int on_openssl(void **state)
{
    (void)state;
    engine = SL_AEAD_ENGINE_OPENSSL;
    return 0;
}

static int on_ipsec_mb(void **state)
{
    (void)state;
    engine = SL_AEAD_ENGINE_IPSEC_MB;
    return 0;
}

/* GCM's published test case 14 (AES-256, zero key, zero nonce, one zero
 * block): opening the known blob proves the cipher is AES-256-GCM and the
 * blob order is nonce ‖ ciphertext ‖ tag. */
static void test_known_answer(void **state)
{
    (void)state;
    static const uint8_t zero_key[32];
    uint8_t blob[12 + 16 + 16] = {0};
    static const uint8_t ct[16] = {0xce, 0xa7, 0x40, 0x3d, 0x4d, 0x60, 0x6b, 0x6e,
                                   0x07, 0x4e, 0xc5, 0xd3, 0xba, 0xf3, 0x9d, 0x18};
    static const uint8_t tag[16] = {0xd0, 0xd1, 0xc8, 0xa7, 0x99, 0x99, 0x6b, 0xf0,
                                    0x26, 0x5b, 0x98, 0xb5, 0xd4, 0x8a, 0xb9, 0x19};
    memcpy(blob + 12, ct, 16);
    memcpy(blob + 28, tag, 16);
    sl_aead_t *a = aead(zero_key, NULL);
    sl_aead_key_used_t used = 0;
    assert_int_equal(sl_aead_open(a, (sl_span_t){NULL, 0}, blob, sizeof(blob), &used), 0);
    assert_int_equal(used, SL_AEAD_KEY_CURRENT);
    static const uint8_t zeros[16];
    assert_memory_equal(blob + 12, zeros, 16);
    sl_aead_destroy(a);
}

static void test_seal_open_tamper(void **state)
{
    (void)state;
    sl_aead_t *a = aead(key_a, NULL);
    const char *msg = "the quick brown fox";
    size_t n = strlen(msg);
    uint8_t sealed[64], again[64], work[64];
    sl_span_t aad = sl_span_str("aad");
    assert_int_equal(sl_aead_seal(a, aad, (const uint8_t *)msg, n, sealed), 0);
    assert_int_equal(sl_aead_seal(a, aad, (const uint8_t *)msg, n, again), 0);
    /* A fresh nonce each time: the same plaintext never seals the same. */
    assert_memory_not_equal(sealed, again, SL_AEAD_NONCE_SIZE);
    assert_memory_not_equal(sealed + 12, again + 12, n);
    memcpy(work, sealed, n + SL_AEAD_OVERHEAD);
    assert_int_equal(sl_aead_open(a, aad, work, n + SL_AEAD_OVERHEAD, NULL), 0);
    assert_memory_equal(work + 12, msg, n);
    /* Every byte of the blob is covered: nonce, ciphertext and tag. */
    for (size_t i = 0; i < n + SL_AEAD_OVERHEAD; i++) {
        memcpy(work, sealed, n + SL_AEAD_OVERHEAD);
        work[i] ^= 0x01;
        assert_int_equal(sl_aead_open(a, aad, work, n + SL_AEAD_OVERHEAD, NULL),
                         -SL_ERR_CANNOT_DECRYPT_DATA);
        /* Nothing unverified is left behind. */
        static const uint8_t zeros[64];
        assert_memory_equal(work + 12, zeros, n);
    }
    memcpy(work, sealed, n + SL_AEAD_OVERHEAD);
    assert_int_equal(sl_aead_open(a, sl_span_str("aae"), work, n + SL_AEAD_OVERHEAD, NULL),
                     -SL_ERR_CANNOT_DECRYPT_DATA);
    assert_int_equal(sl_aead_open(a, aad, work, SL_AEAD_OVERHEAD - 1, NULL),
                     -SL_ERR_CANNOT_DECRYPT_DATA);
    /* An empty plaintext still carries a tag. */
    assert_int_equal(sl_aead_seal(a, aad, NULL, 0, work), 0);
    assert_int_equal(sl_aead_open(a, aad, work, SL_AEAD_OVERHEAD, NULL), 0);
    sl_aead_destroy(a);
}

static void test_wrong_and_previous_key(void **state)
{
    (void)state;
    sl_aead_t *old = aead(key_a, NULL), *other = aead(key_b, NULL), *rotated = aead(key_b, key_a);
    uint8_t sealed[40], work[40];
    const uint8_t plain[12] = "hello, world";
    assert_int_equal(sl_aead_seal(old, sl_span_str("x"), plain, 12, sealed), 0);
    memcpy(work, sealed, sizeof(work));
    assert_int_equal(sl_aead_open(other, sl_span_str("x"), work, 40, NULL),
                     -SL_ERR_CANNOT_DECRYPT_DATA);
    /* After a rotation the old key still opens (the current one is tried
     * first and its failed attempt must not spoil the bytes). */
    memcpy(work, sealed, sizeof(work));
    sl_aead_key_used_t used = 0;
    assert_int_equal(sl_aead_open(rotated, sl_span_str("x"), work, 40, &used), 0);
    assert_int_equal(used, SL_AEAD_KEY_PREVIOUS);
    assert_memory_equal(work + 12, plain, 12);
    /* New seals use the new key only. */
    assert_int_equal(sl_aead_seal(rotated, sl_span_str("x"), plain, 12, sealed), 0);
    memcpy(work, sealed, sizeof(work));
    assert_int_equal(sl_aead_open(other, sl_span_str("x"), work, 40, &used), 0);
    assert_int_equal(used, SL_AEAD_KEY_CURRENT);
    memcpy(work, sealed, sizeof(work));
    assert_int_equal(sl_aead_open(old, sl_span_str("x"), work, 40, NULL),
                     -SL_ERR_CANNOT_DECRYPT_DATA);
    sl_aead_destroy(old);
    sl_aead_destroy(other);
    sl_aead_destroy(rotated);
}

/* sl_aead_open_to, the poll path's open: the plaintext goes to another
 * buffer, the blob is left as stored, and what does not verify leaves zeros.
 * Opens follow each other on one context (after a failure too), so the nonce
 * and tag of one message must never carry over to the next; and this
 * libcrypto takes the one-call nonce and tag (sl_aead_fast_open). */
static void test_open_to(void **state)
{
    (void)state;
    sl_aead_t *a = aead(key_a, NULL), *rotated = aead(key_b, key_a), *other = aead(key_b, NULL);
    assert_true(sl_aead_fast_open(a));
    uint8_t sealed[3][1024 + SL_AEAD_OVERHEAD], keep[sizeof(sealed[0])], out[1024];
    uint8_t plain[3][1024];
    for (int m = 0; m < 3; m++) {
        for (size_t i = 0; i < sizeof(plain[m]); i++)
            plain[m][i] = (uint8_t)(i * 31 + (size_t)m);
        assert_int_equal(sl_aead_seal(a, sl_span_str("id"), plain[m], 1024, sealed[m]), 0);
    }
    static const uint8_t zeros[1024];
    for (int round = 0; round < 2; round++) {
        for (int m = 0; m < 3; m++) {
            memcpy(keep, sealed[m], sizeof(keep));
            sl_aead_key_used_t used = 0;
            memset(out, 0xee, sizeof(out));
            assert_int_equal(sl_aead_open_to(round ? rotated : a, sl_span_str("id"), sealed[m],
                                             sizeof(keep), out, &used),
                             0);
            assert_int_equal(used, round ? SL_AEAD_KEY_PREVIOUS : SL_AEAD_KEY_CURRENT);
            assert_memory_equal(out, plain[m], 1024);
            assert_memory_equal(sealed[m], keep, sizeof(keep));
            /* Between good opens: one with the other message's tag, one with
             * another aad, one under a key that never sealed it. */
            uint8_t bad[sizeof(keep)];
            memcpy(bad, sealed[m], sizeof(bad));
            memcpy(bad + sizeof(bad) - SL_AEAD_TAG_SIZE,
                   sealed[(m + 1) % 3] + sizeof(bad) - SL_AEAD_TAG_SIZE, SL_AEAD_TAG_SIZE);
            assert_int_equal(sl_aead_open_to(a, sl_span_str("id"), bad, sizeof(bad), out, NULL),
                             -SL_ERR_CANNOT_DECRYPT_DATA);
            assert_memory_equal(out, zeros, 1024);
            memset(out, 0xee, sizeof(out));
            assert_int_equal(sl_aead_open_to(rotated, sl_span_str("ie"), sealed[m], sizeof(keep),
                                             out, NULL),
                             -SL_ERR_CANNOT_DECRYPT_DATA);
            assert_memory_equal(out, zeros, 1024);
            assert_int_equal(sl_aead_open_to(other, sl_span_str("id"), sealed[m], sizeof(keep),
                                             out, NULL),
                             -SL_ERR_CANNOT_DECRYPT_DATA);
            assert_memory_equal(sealed[m], keep, sizeof(keep));
        }
    }
    /* Every byte of a blob is covered, as for the in-place open. */
    for (size_t i = 0; i < sizeof(keep); i += 7) {
        memcpy(keep, sealed[1], sizeof(keep));
        keep[i] ^= 0x40;
        assert_int_equal(sl_aead_open_to(a, sl_span_str("id"), keep, sizeof(keep), out, NULL),
                         -SL_ERR_CANNOT_DECRYPT_DATA);
        assert_memory_equal(out, zeros, 1024);
    }
    assert_int_equal(
        sl_aead_open_to(a, sl_span_str("id"), sealed[1], SL_AEAD_OVERHEAD - 1, out, NULL),
        -SL_ERR_CANNOT_DECRYPT_DATA);
    sl_aead_destroy(a);
    sl_aead_destroy(rotated);
    sl_aead_destroy(other);
}

/* The nonce scheme (auth/aead.h): one context counts its nonce up by one
 * per seal, never repeating; a second context for the same key (another
 * thread, or sluiced after a restart) starts from its own random point.
 * Every blob still opens. */
enum { NONCE_RUN = 300 };

static uint64_t nonce_counter(const uint8_t *blob)
{
    uint64_t v = 0;
    for (int i = 4; i < 12; i++)
        v = v << 8 | blob[i];
    return v;
}

static void seal_run(sl_aead_t *a, uint8_t blobs[][SL_AEAD_OVERHEAD + 3])
{
    static const uint8_t plain[3] = {'a', 'b', 'c'};
    for (int i = 0; i < NONCE_RUN; i++)
        assert_int_equal(sl_aead_seal(a, sl_span_str("aad"), plain, 3, blobs[i]), 0);
}

static void test_nonces_never_repeat(void **state)
{
    (void)state;
    static uint8_t one[NONCE_RUN][SL_AEAD_OVERHEAD + 3], two[NONCE_RUN][SL_AEAD_OVERHEAD + 3];
    sl_aead_t *a = aead(key_a, NULL), *b = aead(key_a, NULL);
    seal_run(a, one);
    seal_run(b, two); /* the "restarted" process: a fresh context, same key */
    for (int i = 1; i < NONCE_RUN; i++) {
        /* The 4 fixed bytes stay; the invocation field steps by one. */
        assert_memory_equal(one[i], one[0], 4);
        assert_true(nonce_counter(one[i]) == nonce_counter(one[i - 1]) + 1 ||
                    (nonce_counter(one[i - 1]) == UINT64_MAX && nonce_counter(one[i]) == 0));
    }
    for (int i = 0; i < NONCE_RUN; i++)
        for (int j = 0; j < NONCE_RUN; j++)
            assert_memory_not_equal(one[i], two[j], SL_AEAD_NONCE_SIZE);
    for (int i = 0; i < NONCE_RUN; i++) {
        assert_int_equal(sl_aead_open(a, sl_span_str("aad"), two[i], sizeof(two[i]), NULL), 0);
        assert_memory_equal(two[i] + SL_AEAD_NONCE_SIZE, "abc", 3);
    }
    sl_aead_destroy(a);
    sl_aead_destroy(b);
}

static void test_key_decode(void **state)
{
    (void)state;
    uint8_t key[32];
    assert_true(sl_aead_key_decode("AQIDBAUGBwgJCgsMDQ4PEBESExQVFhcYGRobHB0eHyA=", key));
    assert_memory_equal(key, key_a, 32);
    assert_false(sl_aead_key_decode("AQIDBAUGBwgJCgsMDQ4PEBESExQVFhcYGRobHB0eHw==", key)); /* 31 */
    assert_false(sl_aead_key_decode("AQIDBAUGBwgJCgsMDQ4PEBESExQVFhcYGRobHB0eHyAh", key)); /* 33 */
    assert_false(sl_aead_key_decode("not base64 at all!!", key));
    assert_false(sl_aead_key_decode("", key));
}

/* --- records ------------------------------------------------------------------------------ */

/* A validated record of n messages: payload i is i * 37 % 300 bytes, every
 * third message carries a user-headers block. */
static sl_span_t make_record(sl_buf_t *buf, uint32_t n)
{
    static uint8_t payload[300];
    for (size_t i = 0; i < sizeof(payload); i++)
        payload[i] = (uint8_t)('a' + i % 26);
    /* One Raw header "k" = "vv": kind, u32 length, bytes; key then value. */
    static const uint8_t headers[] = {1, 1, 0, 0, 0, 'k', 1, 2, 0, 0, 0, 'v', 'v'};
    sl_buf_init(buf, 0);
    sl_batch_builder_t bb;
    sl_batch_begin(&bb, buf);
    for (uint32_t i = 0; i < n; i++) {
        sl_span_t h = i % 3 == 0 ? (sl_span_t){headers, sizeof(headers)} : (sl_span_t){NULL, 0};
        assert_int_equal(sl_batch_add(&bb, (sl_u128_t){i + 1, 7}, 1000 + i,
                                      (sl_span_t){payload, (i * 37) % 300}, h),
                         0);
    }
    sl_span_t rec;
    assert_int_equal(sl_batch_finish(&bb, &rec), 0);
    assert_int_equal(sl_batch_validate(rec, n), 0);
    return rec;
}

static uint8_t *seal(sl_aead_t *a, sl_span_t rec, size_t *len)
{
    uint32_t count = sl_load_u32(rec.ptr + SL_BATCH_OFF_COUNT);
    *len = sl_encryption_sealed_len(rec.len, count);
    uint8_t *out = malloc(*len);
    assert_non_null(out);
    assert_int_equal(sl_encryption_seal_record(a, rec, out), 0);
    return out;
}

static void test_record_round_trip(void **state)
{
    (void)state;
    sl_aead_t *a = aead(key_a, NULL);
    sl_buf_t b1, b2;
    sl_span_t r1 = make_record(&b1, 10), r2 = make_record(&b2, 1);
    size_t l1, l2;
    uint8_t *s1 = seal(a, r1, &l1), *s2 = seal(a, r2, &l2);
    assert_int_equal(l1, r1.len + 10 * 28);
    /* The sealed record is a valid record in its own right: the checksums
     * cover the sealed bytes (docs/compatibility.md). */
    assert_int_equal(sl_batch_validate((sl_span_t){s1, l1}, 10), 0);
    assert_int_equal(sl_batch_check_layout((sl_span_t){s2, l2}), 0);
    /* No plaintext payload survives in it. */
    assert_null(memmem(s1, l1, "abcdefghij", 10));
    /* Two records back to back open to exactly the original bytes. */
    uint8_t *run = malloc(l1 + l2);
    memcpy(run, s1, l1);
    memcpy(run + l1, s2, l2);
    size_t opened;
    uint64_t bad;
    assert_int_equal(sl_encryption_open_run(a, run, l1 + l2, &opened, &bad), 0);
    assert_int_equal(opened, r1.len + r2.len);
    assert_memory_equal(run, r1.ptr, r1.len);
    assert_memory_equal(run + r1.len, r2.ptr, r2.len);
    assert_int_equal(sl_encryption_open_run(a, run, 0, &opened, &bad), 0);
    assert_int_equal(opened, 0);
    free(run);
    free(s1);
    free(s2);
    sl_buf_free(&b1);
    sl_buf_free(&b2);
    sl_aead_destroy(a);
}

/* The plaintext tail (server/tail_cache.h): a batch kept at seal time is
 * served unchanged without opening; a sealed frame that differs from the
 * one sealed (tag, header) is opened instead and fails closed; a ciphertext
 * change that keeps header, checksum field, nonce and tag gets the sealed
 * plaintext; the bound evicts the oldest batch and gives its frame back. */
static uint8_t *seal_into_tail(sl_aead_t *a, sl_tail_cache_t *tail, sl_frame_pool_t *pool,
                               sl_span_t rec, size_t *len)
{
    uint32_t count = sl_load_u32(rec.ptr + SL_BATCH_OFF_COUNT);
    *len = sl_encryption_sealed_len(rec.len, count);
    uint8_t *owner = sl_frame_pool_get(pool, (uint32_t)rec.len + 100);
    uint8_t *out = malloc(*len);
    sl_sealed_note_t *notes = calloc(count, sizeof(*notes));
    assert_true(owner && out && notes);
    memcpy(owner + 100, rec.ptr, rec.len);
    assert_int_equal(sl_encryption_seal_record_noted(a, rec, out, notes), 0);
    sl_tail_cache_add(tail, owner, owner + 100, out, notes, count);
    free(notes);
    return out;
}

static int open_tail(sl_aead_t *a, sl_tail_cache_t *tail, const uint8_t *sealed, size_t len,
                     sl_span_t want)
{
    uint8_t *work = malloc(len);
    memcpy(work, sealed, len);
    size_t opened;
    uint64_t bad;
    int rc = sl_encryption_open_run_cached(a, tail, work, len, &opened, &bad);
    if (rc == 0) {
        assert_int_equal(opened, want.len);
        assert_memory_equal(work, want.ptr, want.len);
    }
    free(work);
    return rc;
}

static void test_tail_cache(void **state)
{
    (void)state;
    sl_aead_t *a = aead(key_a, NULL);
    sl_frame_pool_t *pool;
    sl_tail_cache_t *tail;
    assert_int_equal(sl_frame_pool_create(16384, 1 << 20, 0, &pool), 0);
    assert_int_equal(sl_tail_cache_create(64 * 1024, pool, &tail), 0);
    sl_buf_t b1, b2;
    sl_span_t r1 = make_record(&b1, 10), r2 = make_record(&b2, 7);
    size_t l1, l2;
    uint8_t *s1 = seal_into_tail(a, tail, pool, r1, &l1);
    sl_tail_cache_stats_t st;
    assert_int_equal(open_tail(a, tail, s1, l1, r1), 0);
    sl_tail_cache_stats(tail, &st);
    assert_int_equal(st.hits, 10);
    assert_int_equal(st.misses, 0);
    /* The third frame: its tag, then its id (part of the header and of the
     * additional data), then one ciphertext byte with the checksum field
     * kept. */
    size_t f = SL_BATCH_HEADER_SIZE;
    for (int i = 0; i < 2; i++)
        f += SL_FRAME_HEADER_SIZE + sl_load_u32(s1 + f + SL_FRAME_OFF_PAYLOAD_LENGTH) +
             sl_load_u32(s1 + f + SL_FRAME_OFF_HEADERS_LENGTH);
    size_t blob_end = f + SL_FRAME_HEADER_SIZE + sl_load_u32(s1 + f + SL_FRAME_OFF_PAYLOAD_LENGTH) +
                      sl_load_u32(s1 + f + SL_FRAME_OFF_HEADERS_LENGTH);
    size_t spots[3] = {blob_end - 1, f + SL_FRAME_OFF_ID, f + SL_FRAME_HEADER_SIZE + 12};
    for (int i = 0; i < 3; i++) {
        s1[spots[i]] ^= 0x01;
        int rc = open_tail(a, tail, s1, l1, r1);
        assert_int_equal(rc, i < 2 ? -SL_ERR_CANNOT_DECRYPT_DATA : 0);
        s1[spots[i]] ^= 0x01;
    }
    sl_tail_cache_stats(tail, &st);
    assert_int_equal(st.misses, 2); /* the two that changed what was sealed */
    /* A second batch that does not fit beside the first evicts it: the
     * first is opened again, and still opens. */
    sl_tail_cache_t *small;
    assert_int_equal(sl_tail_cache_create(1, pool, &small), 0);
    uint8_t *s2 = seal_into_tail(a, small, pool, r2, &l2);
    sl_tail_cache_stats(small, &st);
    assert_int_equal(st.skipped, 1); /* larger than the whole bound */
    sl_tail_cache_destroy(small);
    sl_tail_cache_stats(tail, &st);
    sl_tail_cache_destroy(tail);
    assert_int_equal(sl_tail_cache_create(st.held + 1, pool, &tail), 0);
    free(s1);
    s1 = seal_into_tail(a, tail, pool, r1, &l1);
    free(s2);
    s2 = seal_into_tail(a, tail, pool, r2, &l2);
    sl_tail_cache_stats(tail, &st);
    assert_int_equal(st.evicted, 1);
    assert_int_equal(st.batches, 1);
    assert_true(st.held <= st.max);
    assert_int_equal(open_tail(a, tail, s1, l1, r1), 0);
    assert_int_equal(open_tail(a, tail, s2, l2, r2), 0);
    sl_tail_cache_stats(tail, &st);
    assert_int_equal(st.misses, 10);
    assert_int_equal(st.hits, 7);
    sl_tail_cache_destroy(tail);
    sl_frame_pool_destroy(pool); /* asserts every frame came back */
    free(s1);
    free(s2);
    sl_buf_free(&b1);
    sl_buf_free(&b2);
    sl_aead_destroy(a);
}

/* A run opened in place whose frames come from the tail and from the
 * cipher in turn: a cached record between two opened ones, each record
 * moved down over the gaps the records before it left (28 bytes a
 * message), gives exactly the three plaintext records. */
static void test_open_in_place_mixed(void **state)
{
    (void)state;
    sl_aead_t *a = aead(key_a, NULL);
    sl_frame_pool_t *pool;
    sl_tail_cache_t *tail;
    assert_int_equal(sl_frame_pool_create(16384, 1 << 20, 0, &pool), 0);
    assert_int_equal(sl_tail_cache_create(64 * 1024, pool, &tail), 0);
    sl_buf_t b1, b2;
    sl_span_t r1 = make_record(&b1, 10), r2 = make_record(&b2, 7);
    size_t l1, l2;
    uint8_t *s1 = seal_into_tail(a, tail, pool, r1, &l1), *s2 = seal(a, r2, &l2);
    size_t len = l2 + l1 + l2;
    uint8_t *run = malloc(len), *want = malloc(r2.len + r1.len + r2.len);
    memcpy(run, s2, l2);
    memcpy(run + l2, s1, l1);
    memcpy(run + l2 + l1, s2, l2);
    memcpy(want, r2.ptr, r2.len);
    memcpy(want + r2.len, r1.ptr, r1.len);
    memcpy(want + r2.len + r1.len, r2.ptr, r2.len);
    size_t opened;
    uint64_t bad;
    assert_int_equal(sl_encryption_open_run_cached(a, tail, run, len, &opened, &bad), 0);
    assert_int_equal(opened, r2.len + r1.len + r2.len);
    assert_memory_equal(run, want, opened);
    sl_tail_cache_stats_t st;
    sl_tail_cache_stats(tail, &st);
    assert_int_equal(st.hits, 10);
    assert_int_equal(st.misses, 14);
    sl_tail_cache_destroy(tail);
    sl_frame_pool_destroy(pool);
    free(run);
    free(want);
    free(s1);
    free(s2);
    sl_buf_free(&b1);
    sl_buf_free(&b2);
    sl_aead_destroy(a);
}

/* Opens a copy of sealed; returns the result and the failing offset. */
static int open_copy(sl_aead_t *a, const uint8_t *sealed, size_t len, uint64_t *bad)
{
    uint8_t *work = malloc(len ? len : 1);
    memcpy(work, sealed, len);
    size_t opened;
    int rc = sl_encryption_open_run(a, work, len, &opened, bad);
    if (rc == 0)
        assert_true(opened <= len);
    free(work);
    return rc;
}

static void test_record_hostile(void **state)
{
    (void)state;
    sl_aead_t *a = aead(key_a, NULL), *other = aead(key_b, NULL);
    sl_buf_t b;
    sl_span_t rec = make_record(&b, 6);
    size_t len;
    uint8_t *sealed = seal(a, rec, &len);
    uint64_t bad = 0;
    assert_int_equal(open_copy(other, sealed, len, &bad), -SL_ERR_CANNOT_DECRYPT_DATA);
    /* Any flipped byte of any frame body is found, and the offset named is
     * that frame's (base_offset 0 here: offset = index). */
    size_t pos = SL_BATCH_HEADER_SIZE;
    for (uint32_t i = 0; i < 6; i++) {
        sl_frame_header_t fh;
        sl_frame_header_read(sealed + pos, &fh);
        size_t body = (size_t)fh.payload_length + fh.user_headers_length;
        sealed[pos + SL_FRAME_HEADER_SIZE + body / 2] ^= 0x80;
        assert_int_equal(open_copy(a, sealed, len, &bad), -SL_ERR_CANNOT_DECRYPT_DATA);
        assert_int_equal(bad, i);
        sealed[pos + SL_FRAME_HEADER_SIZE + body / 2] ^= 0x80;
        /* Shifting a byte from payload to headers changes the aad. */
        if (fh.payload_length > SL_AEAD_OVERHEAD) {
            sl_store_u32(sealed + pos + SL_FRAME_OFF_PAYLOAD_LENGTH, fh.payload_length - 1);
            sl_store_u32(sealed + pos + SL_FRAME_OFF_HEADERS_LENGTH, fh.user_headers_length + 1);
            assert_int_equal(open_copy(a, sealed, len, &bad), -SL_ERR_CANNOT_DECRYPT_DATA);
            sl_frame_header_write(sealed + pos, &fh);
        }
        pos += SL_FRAME_HEADER_SIZE + body;
    }
    assert_int_equal(open_copy(a, sealed, len, &bad), 0);
    /* Every cut of the run is refused, never read past. */
    for (size_t cut = 1; cut < len; cut++)
        assert_int_equal(open_copy(a, sealed, cut, &bad), -SL_ERR_CANNOT_DECRYPT_DATA);
    /* A frame whose reserved field is set (the blob does not cover it). */
    sealed[SL_BATCH_HEADER_SIZE + SL_FRAME_OFF_RESERVED] = 1;
    assert_int_equal(open_copy(a, sealed, len, &bad), -SL_ERR_CANNOT_DECRYPT_DATA);
    sealed[SL_BATCH_HEADER_SIZE + SL_FRAME_OFF_RESERVED] = 0;
    assert_int_equal(open_copy(a, sealed, len, &bad), 0);
    /* A frame too short to hold a blob, and a record length past the run. */
    sl_store_u32(sealed + SL_BATCH_HEADER_SIZE + SL_FRAME_OFF_PAYLOAD_LENGTH, 3);
    assert_int_equal(open_copy(a, sealed, len, &bad), -SL_ERR_CANNOT_DECRYPT_DATA);
    sl_store_u64(sealed + SL_BATCH_OFF_LENGTH, len + 1);
    assert_int_equal(open_copy(a, sealed, len, &bad), -SL_ERR_CANNOT_DECRYPT_DATA);
    sl_store_u64(sealed + SL_BATCH_OFF_LENGTH, 10);
    assert_int_equal(open_copy(a, sealed, len, &bad), -SL_ERR_CANNOT_DECRYPT_DATA);
    free(sealed);
    sl_buf_free(&b);
    sl_aead_destroy(a);
    sl_aead_destroy(other);
}

/* A metadata entry's sealed body opens only as the op and operation it was
 * sealed for; the snapshot blob helpers round-trip. */
static void test_metadata_entries(void **state)
{
    (void)state;
    sl_aead_t *a = aead(key_a, NULL);
    const char *body = "stream named secret";
    sl_meta_entry_t e = {.op = 42, .operation = 128, .body = sl_span_str(body)};
    sl_buf_t sealed, opened;
    sl_buf_init(&sealed, 0);
    sl_buf_init(&opened, 0);
    assert_int_equal(sl_encryption_seal_entry(a, &e, &sealed), 0);
    assert_int_equal(sealed.len, strlen(body) + SL_AEAD_OVERHEAD);
    assert_null(memmem(sealed.data, sealed.len, "secret", 6));
    sl_meta_entry_t j = e;
    j.body = sl_buf_span(&sealed);
    assert_int_equal(sl_encryption_open_entry(a, &j, &opened), 0);
    assert_span_str(sl_buf_span(&opened), body);
    j.op = 43;
    sl_buf_reset(&opened);
    assert_int_equal(sl_encryption_open_entry(a, &j, &opened), -SL_ERR_CANNOT_DECRYPT_DATA);
    assert_int_equal(opened.len, 0);
    j.op = 42;
    j.operation = 129;
    assert_int_equal(sl_encryption_open_entry(a, &j, &opened), -SL_ERR_CANNOT_DECRYPT_DATA);
    j.operation = 128;
    j.body.len = SL_AEAD_OVERHEAD - 1;
    assert_int_equal(sl_encryption_open_entry(a, &j, &opened), -SL_ERR_CANNOT_DECRYPT_DATA);
    /* An empty body still seals (28 bytes) and opens empty. */
    e.body = (sl_span_t){NULL, 0};
    sl_buf_reset(&sealed);
    assert_int_equal(sl_encryption_seal_entry(a, &e, &sealed), 0);
    j = e;
    j.body = sl_buf_span(&sealed);
    assert_int_equal(sl_encryption_open_entry(a, &j, &opened), 0);
    assert_int_equal(opened.len, 0);
    sl_buf_free(&sealed);
    sl_buf_free(&opened);
    sl_aead_destroy(a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_known_answer),
        cmocka_unit_test(test_seal_open_tamper),
        cmocka_unit_test(test_wrong_and_previous_key),
        cmocka_unit_test(test_open_to),
        cmocka_unit_test(test_key_decode),
        cmocka_unit_test(test_record_round_trip),
        cmocka_unit_test(test_record_hostile),
        cmocka_unit_test(test_metadata_entries),
        cmocka_unit_test(test_nonces_never_repeat),
        cmocka_unit_test(test_tail_cache),
        cmocka_unit_test(test_open_in_place_mixed),
    };
    const struct CMUnitTest engines[] = {
        cmocka_unit_test(test_engine_choice),
        cmocka_unit_test(test_engines_interoperate),
    };
    int failed = cmocka_run_group_tests_name("engines", engines, NULL, NULL);
    failed += cmocka_run_group_tests_name("OpenSSL EVP", tests, on_openssl, NULL);
    if (sl_aead_engine_available(SL_AEAD_ENGINE_IPSEC_MB))
        failed += cmocka_run_group_tests_name("intel-ipsec-mb", tests, on_ipsec_mb, NULL);
    return failed;
}
