/* Batch records (wire/batch.h): golden vectors c, d and e, every admission
 * check of messages.md 3.2 on its own and in order, checksums, stamping,
 * slicing, iteration, the builder and hostile records. */
#include "testutil.h"

#include <sluice/error.h>
#include <stdlib.h>
#include <string.h>

#include "base/xxh3.h"
#include "wire/batch.h"

#define C_BATCH_AT  20u /* the batch starts after the 20-byte metadata of vector c */
#define C_BATCH_LEN 374u
#define FRAME2_AT   321u /* batch offset of vector c's second frame */

static const uint8_t headers_kv[12] = {0x02, 0x01, 0, 0, 0, 'k', 0x02, 0x01, 0, 0, 0, 'v'};

/* --- helpers ------------------------------------------------------------------ */

/* The batch record of vector c in an exact-size heap buffer (so ASan sees
 * any read past its end). */
static uint8_t *vector_c_batch(void)
{
    size_t n;
    uint8_t *c = tu_vector("c_send_messages_body.hex", &n);
    assert_int_equal(n, C_BATCH_AT + C_BATCH_LEN);
    uint8_t *batch = malloc(C_BATCH_LEN);
    assert_non_null(batch);
    memcpy(batch, c + C_BATCH_AT, C_BATCH_LEN);
    free(c);
    return batch;
}

/* Builds vector c's batch from its listed inputs. */
static sl_span_t build_vector_c(sl_buf_t *buf)
{
    sl_batch_builder_t bb;
    sl_batch_begin(&bb, buf);
    uint64_t ts = 1700000000000000ull;
    assert_int_equal(sl_batch_add(&bb, (sl_u128_t){1, 0}, ts, sl_span_str("hello"),
                                  sl_span(headers_kv, sizeof(headers_kv))),
                     0);
    assert_int_equal(
        sl_batch_add(&bb, (sl_u128_t){2, 0}, ts, sl_span_str("world"), sl_span(NULL, 0)), 0);
    sl_span_t record;
    assert_int_equal(sl_batch_finish(&bb, &record), 0);
    return record;
}

/* Recomputes every frame checksum that fits, then the batch checksum, so a
 * test can break one rule and keep the others. */
static void refresh(uint8_t *rec, size_t len)
{
    uint64_t end = sl_load_u64(rec + SL_BATCH_OFF_LENGTH);
    if (end > len)
        end = len;
    size_t pos = SL_BATCH_HEADER_SIZE;
    while (pos + SL_FRAME_HEADER_SIZE <= end) {
        uint8_t *f = rec + pos;
        uint64_t n = SL_FRAME_HEADER_SIZE + (uint64_t)sl_load_u32(f + SL_FRAME_OFF_HEADERS_LENGTH) +
                     sl_load_u32(f + SL_FRAME_OFF_PAYLOAD_LENGTH);
        if (n > end - pos)
            break;
        sl_store_u64(f, sl_frame_checksum(sl_span(f, (size_t)n)));
        pos += (size_t)n;
    }
    sl_store_u64(rec + SL_BATCH_OFF_CHECKSUM, sl_batch_checksum(sl_span(rec, len)));
}

/* The batch checksum computed the slow way: one buffer of 44 + 8N bytes. */
static uint64_t batch_checksum_reference(const uint8_t *rec)
{
    uint32_t count = sl_load_u32(rec + SL_BATCH_OFF_COUNT);
    size_t n = 44 + 8 * (size_t)count;
    uint8_t *in = malloc(n);
    assert_non_null(in);
    memcpy(in, rec, 40);
    memcpy(in + 40, rec + 48, 4);
    size_t pos = SL_BATCH_HEADER_SIZE;
    for (uint32_t i = 0; i < count; i++) {
        memcpy(in + 44 + 8 * i, rec + pos, 8);
        pos += SL_FRAME_HEADER_SIZE + sl_load_u32(rec + pos + SL_FRAME_OFF_HEADERS_LENGTH) +
               sl_load_u32(rec + pos + SL_FRAME_OFF_PAYLOAD_LENGTH);
    }
    uint64_t h = sl_xxh3_64(in, n);
    free(in);
    return h;
}

/* sl_batch_validate's verdict, checked to be sl_batch_validate_keep's too (same checks, same
 * order, same codes), whose kept sums are the batch checksum's input exactly when it accepts. */
static int validate_copy(const uint8_t *rec, size_t len, uint32_t expected)
{
    uint8_t *copy = malloc(len ? len : 1);
    assert_non_null(copy);
    memcpy(copy, rec, len);
    int rc = sl_batch_validate(sl_span(copy, len), expected);
    sl_buf_t sums;
    sl_buf_init(&sums, 0);
    sl_put_zeros(&sums, 3); /* reset first */
    assert_int_equal(sl_batch_validate_keep(sl_span(copy, len), expected, &sums), rc);
    if (rc == 0) {
        uint32_t count = sl_load_u32(copy + SL_BATCH_OFF_COUNT);
        assert_int_equal(sums.len, SL_BATCH_SUMS_FIELDS + 8 * (size_t)count);
        assert_int_equal(sl_xxh3_64(sums.data, sums.len), sl_load_u64(copy + SL_BATCH_OFF_CHECKSUM));
    } else {
        assert_int_equal(sums.len, 0);
    }
    sl_buf_free(&sums);
    free(copy);
    return rc;
}

/* --- golden vectors --------------------------------------------------------------- */

static void test_vector_c_built(void **state)
{
    (void)state;
    uint8_t *want = vector_c_batch();
    sl_buf_t buf;
    sl_buf_init(&buf, 0);
    sl_span_t record = build_vector_c(&buf);
    assert_bytes_equal(record.ptr, record.len, want, C_BATCH_LEN);

    sl_batch_header_t h;
    sl_batch_header_read(record.ptr, &h);
    assert_int_equal(h.partition_id, 0);
    assert_int_equal(h.base_offset, 0);
    assert_int_equal(h.base_timestamp, 0);
    assert_int_equal(h.origin_timestamp, 1700000000000000ull);
    assert_int_equal(h.batch_length, 374);
    assert_int_equal(h.batch_checksum, 0x34dfdc2b0c9f6dbbull);
    assert_int_equal(h.message_count, 2);

    sl_frame_header_t f1, f2;
    sl_frame_header_read(record.ptr + 256, &f1);
    sl_frame_header_read(record.ptr + FRAME2_AT, &f2);
    assert_int_equal(f1.checksum, 0x839962c56fee513cull);
    assert_int_equal(f2.checksum, 0x1494866d7573b3beull);
    assert_true(sl_u128_eq(f1.id, (sl_u128_t){1, 0}));
    assert_true(sl_u128_eq(f2.id, (sl_u128_t){2, 0}));
    assert_int_equal(f1.offset_delta, 0);
    assert_int_equal(f2.offset_delta, 1);
    assert_int_equal(f1.user_headers_length, 12);
    assert_int_equal(f2.user_headers_length, 0);
    assert_int_equal(f1.payload_length, 5);
    assert_int_equal(f2.payload_length, 5);
    assert_int_equal(f1.reserved | f2.reserved | f1.timestamp_delta | f2.timestamp_delta, 0);
    sl_buf_free(&buf);
    free(want);
}

static void test_vector_c_checksums(void **state)
{
    (void)state;
    uint8_t *c = vector_c_batch();
    /* 2.1: frame 1 = XXH3 of batch bytes 264..321, frame 2 of 329..374. */
    assert_int_equal(sl_frame_checksum(sl_span(c + 256, 65)), 0x839962c56fee513cull);
    assert_int_equal(sl_xxh3_64(c + 264, 321 - 264), 0x839962c56fee513cull);
    assert_int_equal(sl_frame_checksum(sl_span(c + FRAME2_AT, 53)), 0x1494866d7573b3beull);
    assert_int_equal(sl_xxh3_64(c + 329, 374 - 329), 0x1494866d7573b3beull);
    /* 2.2: the 60-byte input. */
    uint8_t in[60];
    memcpy(in, c, 40);
    memcpy(in + 40, c + 48, 4);
    memcpy(in + 44, c + 256, 8);
    memcpy(in + 52, c + FRAME2_AT, 8);
    assert_int_equal(sl_xxh3_64(in, sizeof(in)), 0x34dfdc2b0c9f6dbbull);
    assert_int_equal(sl_batch_checksum(sl_span(c, C_BATCH_LEN)), 0x34dfdc2b0c9f6dbbull);
    assert_int_equal(sl_batch_validate(sl_span(c, C_BATCH_LEN), 2), 0);
    assert_int_equal(sl_batch_check_layout(sl_span(c, C_BATCH_LEN)), 0);
    free(c);
}

static void test_stamp_vector_d(void **state)
{
    (void)state;
    uint8_t *c = vector_c_batch();
    size_t n;
    uint8_t *d = tu_vector("d_stored_batch.hex", &n);
    assert_int_equal(n, C_BATCH_LEN);

    /* Admission alone (partition 1, base fields still 0): the informational value. */
    sl_batch_stamp(c, C_BATCH_LEN, 1, 0, 0);
    assert_int_equal(sl_load_u64(c + SL_BATCH_OFF_CHECKSUM), 0x4b15e0cc46fd5866ull);
    sl_batch_stamp(c, C_BATCH_LEN, 1, 10, 1700000000000123ull);
    assert_bytes_equal(c, C_BATCH_LEN, d, n);
    assert_int_equal(sl_load_u64(d + SL_BATCH_OFF_CHECKSUM), 0x3bdd7d542a477509ull);
    /* The stamped record still passes every check (a backup re-checks it). */
    assert_int_equal(sl_batch_validate(sl_span(d, n), 2), 0);

    sl_frame_iter_t it = sl_frame_iter(sl_span(d, n));
    sl_message_t m;
    assert_true(sl_frame_next(&it, &m));
    assert_int_equal(m.offset, 10);
    assert_int_equal(m.timestamp, 1700000000000123ull);
    assert_int_equal(m.origin_timestamp, 1700000000000000ull);
    assert_true(sl_u128_eq(m.id, (sl_u128_t){1, 0}));
    assert_int_equal(m.checksum, 0x839962c56fee513cull);
    assert_span_str(m.payload, "hello");
    assert_bytes_equal(m.user_headers.ptr, m.user_headers.len, headers_kv, sizeof(headers_kv));
    assert_true(m.frame.ptr == d + 256 && m.frame.len == 65);
    assert_true(sl_frame_next(&it, &m));
    assert_int_equal(m.offset, 11);
    assert_int_equal(m.timestamp, 1700000000000123ull);
    assert_true(sl_u128_eq(m.id, (sl_u128_t){2, 0}));
    assert_span_str(m.payload, "world");
    assert_int_equal(m.user_headers.len, 0);
    assert_false(sl_frame_next(&it, &m));
    assert_false(sl_frame_next(&it, &m));
    free(c);
    free(d);
}

static void test_slice_vector_e(void **state)
{
    (void)state;
    size_t nd, ne;
    uint8_t *d = tu_vector("d_stored_batch.hex", &nd);
    uint8_t *e = tu_vector("e_poll_reply_body_sliced.hex", &ne);
    assert_int_equal(ne, 325);
    sl_buf_t out;
    sl_buf_init(&out, 0);
    uint32_t taken = 99;
    assert_int_equal(sl_batch_slice_offset(&out, sl_span(d, nd), 11, 1, &taken), 0);
    assert_int_equal(taken, 1);
    assert_bytes_equal(out.data, out.len, e + 16, ne - 16);
    assert_int_equal(sl_load_u64(out.data + SL_BATCH_OFF_CHECKSUM), 0xa97f17f394933237ull);
    assert_int_equal(sl_load_u64(out.data + SL_BATCH_OFF_LENGTH), 309);
    /* The slice satisfies 2.1/2.2; frames are not renumbered. */
    assert_int_equal(sl_batch_check_layout(sl_buf_span(&out)), 0);
    assert_int_equal(sl_batch_checksum(sl_buf_span(&out)), 0xa97f17f394933237ull);
    /* What a client verifies: vector d whole and the slice (offset_delta 1) pass; one bit off
     * in a frame, then in the batch checksum, is caught with its own code. */
    assert_int_equal(sl_batch_verify(sl_buf_span(&out)), 0);
    assert_int_equal(sl_batch_verify(sl_span(d, nd)), 0);
    d[SL_BATCH_HEADER_SIZE + SL_FRAME_HEADER_SIZE + 1] ^= 1; /* frame 0's payload */
    assert_int_equal(sl_batch_verify(sl_span(d, nd)), -SL_ERR_INVALID_MESSAGE_CHECKSUM);
    d[SL_BATCH_HEADER_SIZE + SL_FRAME_HEADER_SIZE + 1] ^= 1;
    d[SL_BATCH_OFF_CHECKSUM] ^= 1;
    assert_int_equal(sl_batch_verify(sl_span(d, nd)), -SL_ERR_INVALID_BATCH_CHECKSUM);
    d[SL_BATCH_OFF_CHECKSUM] ^= 1;
    out.data[out.len - 1] ^= 1; /* the slice's last payload byte */
    assert_int_equal(sl_batch_verify(sl_buf_span(&out)), -SL_ERR_INVALID_MESSAGE_CHECKSUM);
    out.data[out.len - 1] ^= 1;
    sl_frame_iter_t it = sl_frame_iter(sl_buf_span(&out));
    sl_message_t m;
    assert_true(sl_frame_next(&it, &m));
    assert_int_equal(m.offset, 11);
    assert_span_str(m.payload, "world");
    assert_false(sl_frame_next(&it, &m));
    sl_buf_free(&out);
    free(d);
    free(e);
}

/* --- slicing -------------------------------------------------------------------- */

static void expect_slice(sl_span_t d, bool by_time, uint64_t from, uint32_t count,
                         uint32_t want_taken, uint64_t want_first_offset)
{
    sl_buf_t out;
    sl_buf_init(&out, 0);
    sl_put_u8(&out, 0xAA); /* slices append after what is there */
    uint32_t taken;
    int rc = by_time ? sl_batch_slice_timestamp(&out, d, from, count, &taken)
                     : sl_batch_slice_offset(&out, d, from, count, &taken);
    assert_int_equal(rc, 0);
    assert_int_equal(taken, want_taken);
    assert_int_equal(out.data[0], 0xAA);
    sl_span_t rec = sl_span(out.data + 1, out.len - 1);
    if (want_taken == 0) {
        assert_int_equal(rec.len, 0);
    } else if (want_taken == 2) {
        assert_span_equal(rec, d); /* the whole batch: the stored bytes */
    } else {
        assert_int_equal(sl_batch_check_layout(rec), 0);
        assert_int_equal(sl_load_u32(rec.ptr + SL_BATCH_OFF_COUNT), want_taken);
        assert_int_equal(sl_load_u64(rec.ptr + SL_BATCH_OFF_CHECKSUM), sl_batch_checksum(rec));
        assert_bytes_equal(rec.ptr, 32, d.ptr, 32); /* ids, offsets, timestamps kept */
        sl_frame_iter_t it = sl_frame_iter(rec);
        sl_message_t m;
        assert_true(sl_frame_next(&it, &m));
        assert_int_equal(m.offset, want_first_offset);
    }
    sl_buf_free(&out);
}

static void test_slice_selection(void **state)
{
    (void)state;
    size_t n;
    uint8_t *d = tu_vector("d_stored_batch.hex", &n);
    sl_span_t rec = sl_span(d, n);
    expect_slice(rec, false, 0, 100, 2, 10);
    expect_slice(rec, false, 10, 2, 2, 10);
    expect_slice(rec, false, 10, 1, 1, 10);
    expect_slice(rec, false, 11, 5, 1, 11);
    expect_slice(rec, false, 12, 5, 0, 0);
    expect_slice(rec, false, UINT64_MAX, 5, 0, 0);
    expect_slice(rec, false, 0, 0, 0, 0);
    /* Timestamp polls match the batch's base_timestamp, all or nothing. */
    expect_slice(rec, true, 0, 10, 2, 10);
    expect_slice(rec, true, 1700000000000123ull, 10, 2, 10);
    expect_slice(rec, true, 1700000000000124ull, 10, 0, 0);
    expect_slice(rec, true, 1700000000000000ull, 1, 1, 10);
    expect_slice(rec, true, 1, 0, 0, 0);
    free(d);
}

static void test_slice_hostile(void **state)
{
    (void)state;
    size_t n;
    uint8_t *d = tu_vector("d_stored_batch.hex", &n);
    sl_buf_t out;
    sl_buf_init(&out, 0);
    uint32_t taken = 7;
    /* A stored record whose layout broke is refused, nothing appended. */
    for (size_t cut = 0; cut < n; cut++) {
        uint8_t *p = malloc(cut ? cut : 1);
        memcpy(p, d, cut);
        assert_int_equal(sl_batch_slice_offset(&out, sl_span(p, cut), 0, 5, &taken),
                         -SL_ERR_INVALID_FORMAT);
        assert_int_equal(taken, 0);
        free(p);
    }
    sl_store_u32(d + 256 + SL_FRAME_OFF_PAYLOAD_LENGTH, 1000);
    assert_int_equal(sl_batch_slice_offset(&out, sl_span(d, n), 0, 5, &taken),
                     -SL_ERR_INVALID_FORMAT);
    assert_int_equal(sl_batch_slice_timestamp(&out, sl_span(d, n), 0, 5, &taken),
                     -SL_ERR_INVALID_FORMAT);
    assert_int_equal(sl_batch_slice_timestamp(&out, sl_span(d, n), UINT64_MAX, 5, &taken),
                     -SL_ERR_INVALID_FORMAT);
    assert_int_equal(out.len, 0);
    sl_buf_free(&out);

    /* An output buffer too small for the selection. */
    sl_store_u32(d + 256 + SL_FRAME_OFF_PAYLOAD_LENGTH, 5);
    uint8_t small[320];
    sl_buf_init_fixed(&out, small, sizeof(small));
    assert_int_equal(sl_batch_slice_offset(&out, sl_span(d, n), 0, 5, &taken),
                     -SL_ERR_COMMAND_LENGTH_ERROR);
    assert_int_equal(taken, 0);
    sl_buf_init_fixed(&out, small, sizeof(small));
    assert_int_equal(sl_batch_slice_offset(&out, sl_span(d, n), 0, 1, &taken),
                     -SL_ERR_COMMAND_LENGTH_ERROR);
    sl_buf_init_fixed(&out, small, sizeof(small));
    assert_int_equal(sl_batch_slice_offset(&out, sl_span(d, n), 11, 1, &taken), 0);
    assert_int_equal(taken, 1);
    assert_int_equal(out.len, 309);
    free(d);
}

/* --- admission checks (messages.md 3.2) ------------------------------------------------- */

/* A copy of vector c's batch with room for 64 more bytes, and the original. */
typedef struct admission_fixture {
    uint8_t *c;
    uint8_t *b;
} admission_fixture_t;

static admission_fixture_t fixture_new(void)
{
    admission_fixture_t fx = {vector_c_batch(), malloc(C_BATCH_LEN + 64)};
    assert_non_null(fx.b);
    memcpy(fx.b, fx.c, C_BATCH_LEN);
    return fx;
}

static uint8_t *fixture_reset(admission_fixture_t *fx)
{
    memcpy(fx->b, fx->c, C_BATCH_LEN);
    return fx->b;
}

static void fixture_free(admission_fixture_t *fx)
{
    free(fx->b);
    free(fx->c);
}

/* Checks 3..6: the batch header. */
static void test_admission_header_checks(void **state)
{
    (void)state;
    admission_fixture_t fx = fixture_new();
    uint8_t *b;
    const int cmd = -SL_ERR_INVALID_COMMAND;
    /* 3: fewer than 256 batch bytes. */
    assert_int_equal(validate_copy(fx.c, 255, 2), cmd);
    assert_int_equal(validate_copy(fx.c, 0, 2), cmd);
    /* 4: batch_length below 256 (everything else consistent). */
    b = fixture_reset(&fx);
    sl_store_u64(b + SL_BATCH_OFF_LENGTH, 255);
    assert_int_equal(validate_copy(b, C_BATCH_LEN, 2), cmd);
    sl_store_u64(b + SL_BATCH_OFF_LENGTH, 0);
    assert_int_equal(validate_copy(b, C_BATCH_LEN, 2), cmd);
    /* 5: each reserved header byte. */
    for (size_t i = SL_BATCH_OFF_RESERVED; i < SL_BATCH_HEADER_SIZE; i++) {
        b = fixture_reset(&fx);
        b[i] = 0x01;
        assert_int_equal(validate_copy(b, C_BATCH_LEN, 2), cmd);
    }
    /* 6: batch_length beyond the bytes present (also a huge one). */
    b = fixture_reset(&fx);
    sl_store_u64(b + SL_BATCH_OFF_LENGTH, C_BATCH_LEN + 1);
    refresh(b, C_BATCH_LEN);
    assert_int_equal(validate_copy(b, C_BATCH_LEN, 2), cmd);
    sl_store_u64(b + SL_BATCH_OFF_LENGTH, UINT64_MAX);
    assert_int_equal(validate_copy(b, C_BATCH_LEN, 2), cmd);
    fixture_free(&fx);
}

/* Checks 7..9: the frame walk. */
static void test_admission_frame_checks(void **state)
{
    (void)state;
    admission_fixture_t fx = fixture_new();
    uint8_t *b;
    const int cmd = -SL_ERR_INVALID_COMMAND;
    /* 7 (caught by 9): a frame's reserved u64 set, its checksum made right. */
    for (size_t i = 0; i < 8; i++) {
        b = fixture_reset(&fx);
        b[FRAME2_AT + SL_FRAME_OFF_RESERVED + i] = 0x80;
        refresh(b, C_BATCH_LEN);
        assert_int_equal(validate_copy(b, C_BATCH_LEN, 2), cmd);
    }
    /* 7: a frame whose payload runs past the blob. */
    b = fixture_reset(&fx);
    sl_store_u32(b + FRAME2_AT + SL_FRAME_OFF_PAYLOAD_LENGTH, 6);
    assert_int_equal(validate_copy(b, C_BATCH_LEN, 2), cmd);
    sl_store_u32(b + FRAME2_AT + SL_FRAME_OFF_PAYLOAD_LENGTH, UINT32_MAX);
    sl_store_u32(b + FRAME2_AT + SL_FRAME_OFF_HEADERS_LENGTH, UINT32_MAX);
    assert_int_equal(validate_copy(b, C_BATCH_LEN, 2), cmd);
    /* 8: each frame's checksum. */
    b = fixture_reset(&fx);
    b[256] ^= 1;
    assert_int_equal(validate_copy(b, C_BATCH_LEN, 2), -SL_ERR_INVALID_MESSAGE_CHECKSUM);
    b = fixture_reset(&fx);
    b[FRAME2_AT + 7] ^= 0x80;
    assert_int_equal(validate_copy(b, C_BATCH_LEN, 2), -SL_ERR_INVALID_MESSAGE_CHECKSUM);
    /* 9: message_count above / below the frames walked. */
    b = fixture_reset(&fx);
    sl_store_u32(b + SL_BATCH_OFF_COUNT, 3);
    refresh(b, C_BATCH_LEN);
    assert_int_equal(validate_copy(b, C_BATCH_LEN, 3), cmd);
    b = fixture_reset(&fx);
    sl_store_u32(b + SL_BATCH_OFF_COUNT, 1);
    refresh(b, C_BATCH_LEN);
    assert_int_equal(validate_copy(b, C_BATCH_LEN, 1), cmd);
    /* 9: frames do not cover the blob (47 spare bytes, too few for a frame). */
    b = fixture_reset(&fx);
    memset(b + C_BATCH_LEN, 0, 47);
    sl_store_u64(b + SL_BATCH_OFF_LENGTH, C_BATCH_LEN + 47);
    refresh(b, C_BATCH_LEN + 47);
    assert_int_equal(validate_copy(b, C_BATCH_LEN + 47, 2), cmd);
    fixture_free(&fx);
}

/* Checks 10..13 and Sluice's offset_delta rule. */
static void test_admission_batch_checks(void **state)
{
    (void)state;
    admission_fixture_t fx = fixture_new();
    uint8_t *b;
    const int cmd = -SL_ERR_INVALID_COMMAND;
    /* 10: the batch checksum, and each field it covers. */
    b = fixture_reset(&fx);
    b[SL_BATCH_OFF_CHECKSUM] ^= 1;
    assert_int_equal(validate_copy(b, C_BATCH_LEN, 2), -SL_ERR_INVALID_BATCH_CHECKSUM);
    for (size_t i = 0; i < SL_BATCH_OFF_LENGTH; i++) {
        b = fixture_reset(&fx);
        b[i] ^= 0x10;
        assert_int_equal(validate_copy(b, C_BATCH_LEN, 2), -SL_ERR_INVALID_BATCH_CHECKSUM);
    }
    /* 11: an empty batch with every other check passing. */
    b = fixture_reset(&fx);
    sl_store_u64(b + SL_BATCH_OFF_LENGTH, 256);
    sl_store_u32(b + SL_BATCH_OFF_COUNT, 0);
    refresh(b, 256);
    assert_int_equal(validate_copy(b, 256, 0), cmd);
    /* 12: the metadata's messages_count differs. */
    assert_int_equal(validate_copy(fx.c, C_BATCH_LEN, 1), cmd);
    assert_int_equal(validate_copy(fx.c, C_BATCH_LEN, 3), cmd);
    /* 13: bytes after the batch. */
    b = fixture_reset(&fx);
    b[C_BATCH_LEN] = 0;
    assert_int_equal(validate_copy(b, C_BATCH_LEN + 1, 2), cmd);
    /* Sluice's rule: offset_delta must be the frame index. */
    b = fixture_reset(&fx);
    sl_store_u32(b + FRAME2_AT + SL_FRAME_OFF_OFFSET_DELTA, 2);
    refresh(b, C_BATCH_LEN);
    assert_int_equal(validate_copy(b, C_BATCH_LEN, 2), cmd);
    b = fixture_reset(&fx);
    sl_store_u32(b + 256 + SL_FRAME_OFF_OFFSET_DELTA, 1);
    sl_store_u32(b + FRAME2_AT + SL_FRAME_OFF_OFFSET_DELTA, 0);
    refresh(b, C_BATCH_LEN);
    assert_int_equal(validate_copy(b, C_BATCH_LEN, 2), cmd);
    /* What the reference does not check passes: server fields, deltas, ids. */
    b = fixture_reset(&fx);
    sl_store_u64(b + SL_BATCH_OFF_PARTITION_ID, 77);
    sl_store_u64(b + SL_BATCH_OFF_BASE_OFFSET, 5);
    sl_store_u32(b + 256 + SL_FRAME_OFF_TIMESTAMP_DELTA, 123);
    memset(b + 256 + SL_FRAME_OFF_ID, 0, 16);
    refresh(b, C_BATCH_LEN);
    assert_int_equal(validate_copy(b, C_BATCH_LEN, 2), 0);
    fixture_free(&fx);
}

static void test_admission_order(void **state)
{
    (void)state;
    uint8_t *c = vector_c_batch();
    uint8_t *b = malloc(C_BATCH_LEN + 1);
    const int cmd = -SL_ERR_INVALID_COMMAND;
    /* 5 before 8: reserved byte and a bad frame checksum. */
    memcpy(b, c, C_BATCH_LEN);
    b[100] = 1;
    b[256] ^= 1;
    assert_int_equal(validate_copy(b, C_BATCH_LEN, 2), cmd);
    /* 8 before 9: bad checksum on frame 1, count wrong. */
    memcpy(b, c, C_BATCH_LEN);
    b[256] ^= 1;
    sl_store_u32(b + SL_BATCH_OFF_COUNT, 5);
    assert_int_equal(validate_copy(b, C_BATCH_LEN, 2), -SL_ERR_INVALID_MESSAGE_CHECKSUM);
    /* The walk stops at a broken frame: a bad checksum after it is not seen. */
    memcpy(b, c, C_BATCH_LEN);
    sl_store_u32(b + 256 + SL_FRAME_OFF_PAYLOAD_LENGTH, 400);
    b[FRAME2_AT] ^= 1;
    assert_int_equal(validate_copy(b, C_BATCH_LEN, 2), cmd);
    /* ... but one before it is (first mismatch wins). */
    memcpy(b, c, C_BATCH_LEN);
    b[256 + 60] ^= 1; /* a user-header byte of frame 1 */
    sl_store_u32(b + FRAME2_AT + SL_FRAME_OFF_PAYLOAD_LENGTH, 400);
    assert_int_equal(validate_copy(b, C_BATCH_LEN, 2), -SL_ERR_INVALID_MESSAGE_CHECKSUM);
    /* 9 before 10. */
    memcpy(b, c, C_BATCH_LEN);
    sl_store_u32(b + SL_BATCH_OFF_COUNT, 3);
    assert_int_equal(validate_copy(b, C_BATCH_LEN, 3), cmd);
    /* 10 before 11, 12, 13 and the offset_delta rule. */
    memcpy(b, c, C_BATCH_LEN);
    b[SL_BATCH_OFF_CHECKSUM] ^= 1;
    assert_int_equal(validate_copy(b, C_BATCH_LEN, 1), -SL_ERR_INVALID_BATCH_CHECKSUM);
    b[C_BATCH_LEN] = 0;
    assert_int_equal(validate_copy(b, C_BATCH_LEN + 1, 2), -SL_ERR_INVALID_BATCH_CHECKSUM);
    sl_store_u32(b + FRAME2_AT + SL_FRAME_OFF_OFFSET_DELTA, 9);
    sl_store_u64(b + FRAME2_AT, sl_frame_checksum(sl_span(b + FRAME2_AT, 53)));
    assert_int_equal(validate_copy(b, C_BATCH_LEN, 2), -SL_ERR_INVALID_BATCH_CHECKSUM);
    free(b);
    free(c);
}

static void test_admission_truncation_and_corruption(void **state)
{
    (void)state;
    uint8_t *c = vector_c_batch();
    for (size_t cut = 0; cut < C_BATCH_LEN; cut++)
        assert_int_equal(validate_copy(c, cut, 2), -SL_ERR_INVALID_COMMAND);
    /* Every single-bit change anywhere in the record is refused. */
    for (size_t i = 0; i < C_BATCH_LEN; i++) {
        for (int bit = 0; bit < 8; bit++) {
            c[i] ^= (uint8_t)(1u << bit);
            int rc = validate_copy(c, C_BATCH_LEN, 2);
            c[i] ^= (uint8_t)(1u << bit);
            assert_int_not_equal(rc, 0);
            bool in_frame_1 = i >= 256 && i < FRAME2_AT;
            size_t at = in_frame_1 ? i - 256 : i - FRAME2_AT;
            bool framed = i >= 256;
            /* A changed checksum, id, delta, payload or header byte is a
             * checksum mismatch of that frame. */
            if (framed && (at < SL_FRAME_OFF_HEADERS_LENGTH || at >= SL_FRAME_HEADER_SIZE))
                assert_int_equal(rc, -SL_ERR_INVALID_MESSAGE_CHECKSUM);
            if (framed && at >= SL_FRAME_OFF_RESERVED && at < SL_FRAME_HEADER_SIZE)
                assert_int_equal(rc, -SL_ERR_INVALID_COMMAND);
            if (i < SL_BATCH_OFF_LENGTH || (i >= SL_BATCH_OFF_CHECKSUM && i < SL_BATCH_OFF_COUNT))
                assert_int_equal(rc, -SL_ERR_INVALID_BATCH_CHECKSUM);
            if (i >= SL_BATCH_OFF_LENGTH && i < SL_BATCH_OFF_CHECKSUM)
                assert_int_equal(rc, -SL_ERR_INVALID_COMMAND);
            if (i >= SL_BATCH_OFF_COUNT && i < SL_BATCH_HEADER_SIZE)
                assert_int_equal(rc, -SL_ERR_INVALID_COMMAND);
        }
    }
    free(c);
}

/* --- layout check and iteration over hostile records ----------------------------------- */

static void test_check_layout(void **state)
{
    (void)state;
    size_t n;
    uint8_t *d = tu_vector("d_stored_batch.hex", &n);
    for (size_t cut = 0; cut < n; cut++) {
        uint8_t *p = malloc(cut ? cut : 1);
        memcpy(p, d, cut);
        assert_int_equal(sl_batch_check_layout(sl_span(p, cut)), -SL_ERR_INVALID_FORMAT);
        /* Iteration and the checksum stay inside the bytes present. */
        sl_frame_iter_t it = sl_frame_iter(sl_span(p, cut));
        sl_message_t m;
        int frames = 0;
        while (sl_frame_next(&it, &m))
            frames++;
        assert_true(frames <= 2);
        if (cut >= SL_BATCH_HEADER_SIZE)
            (void)sl_batch_checksum(sl_span(p, cut));
        free(p);
    }
    /* Checksums are not checked here: a wrong one passes the layout. */
    d[256] ^= 1;
    assert_int_equal(sl_batch_check_layout(sl_span(d, n)), 0);
    d[256] ^= 1;
    sl_store_u32(d + SL_BATCH_OFF_COUNT, 1);
    assert_int_equal(sl_batch_check_layout(sl_span(d, n)), -SL_ERR_INVALID_FORMAT);
    sl_store_u32(d + SL_BATCH_OFF_COUNT, 3);
    assert_int_equal(sl_batch_check_layout(sl_span(d, n)), -SL_ERR_INVALID_FORMAT);
    sl_store_u32(d + SL_BATCH_OFF_COUNT, UINT32_MAX);
    assert_int_equal(sl_batch_check_layout(sl_span(d, n)), -SL_ERR_INVALID_FORMAT);
    sl_frame_iter_t it = sl_frame_iter(sl_span(d, n));
    sl_message_t m;
    assert_true(sl_frame_next(&it, &m));
    assert_true(sl_frame_next(&it, &m));
    assert_false(sl_frame_next(&it, &m)); /* count says more, the bytes end */
    sl_store_u32(d + SL_BATCH_OFF_COUNT, 2);
    d[FRAME2_AT + SL_FRAME_OFF_RESERVED] = 1;
    assert_int_equal(sl_batch_check_layout(sl_span(d, n)), -SL_ERR_INVALID_FORMAT);
    d[FRAME2_AT + SL_FRAME_OFF_RESERVED] = 0;
    sl_store_u64(d + SL_BATCH_OFF_LENGTH, n - 1);
    assert_int_equal(sl_batch_check_layout(sl_span(d, n)), -SL_ERR_INVALID_FORMAT);
    sl_store_u64(d + SL_BATCH_OFF_LENGTH, n);
    sl_store_u32(d + 256 + SL_FRAME_OFF_HEADERS_LENGTH, UINT32_MAX);
    assert_int_equal(sl_batch_check_layout(sl_span(d, n)), -SL_ERR_INVALID_FORMAT);
    it = sl_frame_iter(sl_span(d, n));
    assert_false(sl_frame_next(&it, &m));
    free(d);
}

static void test_record_iter(void **state)
{
    (void)state;
    size_t n;
    uint8_t *d = tu_vector("d_stored_batch.hex", &n);
    uint8_t *run = malloc(2 * n + 10);
    memcpy(run, d, n);
    memcpy(run + n, d, n);
    sl_record_iter_t it = sl_record_iter(sl_span(run, 2 * n));
    sl_span_t rec;
    assert_true(sl_record_next(&it, &rec));
    assert_true(rec.ptr == run && rec.len == n);
    assert_true(sl_record_next(&it, &rec));
    assert_true(rec.ptr == run + n && rec.len == n);
    assert_false(sl_record_next(&it, &rec));
    /* A short tail, a length below 256, a length past the end. */
    it = sl_record_iter(sl_span(run, 2 * n - 1));
    assert_true(sl_record_next(&it, &rec));
    assert_false(sl_record_next(&it, &rec));
    sl_store_u64(run + SL_BATCH_OFF_LENGTH, 255);
    it = sl_record_iter(sl_span(run, 2 * n));
    assert_false(sl_record_next(&it, &rec));
    sl_store_u64(run + SL_BATCH_OFF_LENGTH, UINT64_MAX);
    assert_false(sl_record_next(&it, &rec));
    it = sl_record_iter(sl_span(run, 100));
    assert_false(sl_record_next(&it, &rec));
    free(run);
    free(d);
}

static void test_header_views(void **state)
{
    (void)state;
    uint8_t hdr[SL_BATCH_HEADER_SIZE];
    memset(hdr, 0xEE, sizeof(hdr));
    sl_batch_header_t h = {1, 2, 3, 4, 5, 6, 7}, back;
    sl_batch_header_write(hdr, &h);
    assert_true(sl_all_zero(hdr + SL_BATCH_OFF_RESERVED, 204));
    assert_int_equal(sl_load_u64(hdr + 40), 6);
    assert_int_equal(sl_load_u32(hdr + 48), 7);
    sl_batch_header_read(hdr, &back);
    assert_int_equal(back.partition_id, 1);
    assert_int_equal(back.base_offset, 2);
    assert_int_equal(back.base_timestamp, 3);
    assert_int_equal(back.origin_timestamp, 4);
    assert_int_equal(back.batch_length, 5);
    assert_int_equal(back.batch_checksum, 6);
    assert_int_equal(back.message_count, 7);

    uint8_t f[SL_FRAME_HEADER_SIZE];
    sl_frame_header_t fh = {9, {10, 11}, 12, 13, 14, 15, 16}, fb;
    sl_frame_header_write(f, &fh);
    sl_frame_header_read(f, &fb);
    assert_memory_equal(&fh, &fb, sizeof(fh));
    assert_int_equal(sl_load_u64(f + 8), 10);
    assert_int_equal(sl_load_u64(f + 16), 11);
    assert_int_equal(sl_load_u32(f + 36), 15);
}

/* --- builder --------------------------------------------------------------------------- */

static void test_builder_timestamps(void **state)
{
    (void)state;
    sl_buf_t buf;
    sl_buf_init(&buf, 0);
    sl_put_bytes(&buf, "meta", 4); /* a batch may follow other bytes */
    sl_batch_builder_t bb;
    sl_batch_begin(&bb, &buf);
    assert_int_equal(
        sl_batch_add(&bb, (sl_u128_t){7, 0}, 1050, sl_span_str("ab"), sl_span(NULL, 0)), 0);
    assert_int_equal(sl_batch_add(&bb, (sl_u128_t){8, 1}, 1000, sl_span(NULL, 0), sl_span(NULL, 0)),
                     0);
    assert_int_equal(sl_batch_add(&bb, (sl_u128_t){9, 0}, 1000 + (uint64_t)UINT32_MAX,
                                  sl_span_str("c"), sl_span(headers_kv, sizeof(headers_kv))),
                     0);
    sl_span_t rec;
    assert_int_equal(sl_batch_finish(&bb, &rec), 0);
    assert_true(rec.ptr == buf.data + 4);
    assert_int_equal(rec.len, 256 + 3 * 48 + 2 + 1 + 12);
    assert_int_equal(sl_batch_validate(rec, 3), 0);
    assert_int_equal(sl_load_u64(rec.ptr + SL_BATCH_OFF_ORIGIN_TIMESTAMP), 1000);
    sl_frame_iter_t it = sl_frame_iter(rec);
    sl_message_t m;
    uint64_t want_ts[3] = {1050, 1000, 1000 + (uint64_t)UINT32_MAX};
    for (int i = 0; i < 3; i++) {
        assert_true(sl_frame_next(&it, &m));
        assert_int_equal(m.origin_timestamp, want_ts[i]);
        assert_int_equal(m.offset, (uint64_t)i);
        assert_int_equal(m.id.lo, 7 + (uint64_t)i);
    }
    assert_int_equal(m.user_headers.len, 12);
    assert_int_equal(sl_batch_checksum(rec), batch_checksum_reference(rec.ptr));
    sl_buf_free(&buf);
}

static void test_builder_errors(void **state)
{
    (void)state;
    sl_buf_t buf;
    sl_buf_init(&buf, 0);
    sl_batch_builder_t bb;
    sl_span_t rec;
    sl_span_t none = sl_span(NULL, 0);
    /* Empty batch. */
    sl_batch_begin(&bb, &buf);
    assert_int_equal(sl_batch_finish(&bb, &rec), -SL_ERR_INVALID_MESSAGES_COUNT);
    assert_null(rec.ptr);
    /* Timestamps more than a u32 of microseconds apart; the error sticks. */
    sl_batch_begin(&bb, &buf);
    assert_int_equal(sl_batch_add(&bb, (sl_u128_t){1, 0}, 5000000000ull, none, none), 0);
    assert_int_equal(
        sl_batch_add(&bb, (sl_u128_t){2, 0}, 5000000000ull - UINT32_MAX - 1, none, none),
        -SL_ERR_INVALID_MESSAGE_TIMESTAMP_DELTA);
    assert_int_equal(sl_batch_add(&bb, (sl_u128_t){3, 0}, 5000000000ull, none, none),
                     -SL_ERR_INVALID_MESSAGE_TIMESTAMP_DELTA);
    assert_int_equal(sl_batch_finish(&bb, &rec), -SL_ERR_INVALID_MESSAGE_TIMESTAMP_DELTA);
    sl_batch_begin(&bb, &buf);
    assert_int_equal(sl_batch_add(&bb, (sl_u128_t){1, 0}, 0, none, none), 0);
    assert_int_equal(sl_batch_add(&bb, (sl_u128_t){1, 0}, (uint64_t)UINT32_MAX + 1, none, none),
                     -SL_ERR_INVALID_MESSAGE_TIMESTAMP_DELTA);
    /* Sizes are checked before any byte is read (the spans are never touched). */
    static const uint8_t byte = 0;
    sl_batch_begin(&bb, &buf);
    assert_int_equal(
        sl_batch_add(&bb, (sl_u128_t){1, 0}, 0, sl_span(&byte, SL_PAYLOAD_MAX + 1ull), none),
        -SL_ERR_TOO_BIG_MESSAGE_PAYLOAD);
    sl_batch_begin(&bb, &buf);
    assert_int_equal(
        sl_batch_add(&bb, (sl_u128_t){1, 0}, 0, none, sl_span(&byte, SL_USER_HEADERS_MAX + 1)),
        -SL_ERR_TOO_BIG_USER_HEADERS);
    /* Malformed user headers: truncated, zero kind, empty key, odd fields. */
    static const uint8_t bad[][12] = {
        {0x02, 0x01, 0, 0, 0, 'k', 0x02, 0x02, 0, 0, 0, 'v'},
        {0x00, 0x01, 0, 0, 0, 'k', 0x02, 0x01, 0, 0, 0, 'v'},
        {0x02, 0x00, 0, 0, 0, 0x02, 0x01, 0, 0, 0, 'v', 0},
    };
    for (size_t i = 0; i < SL_ARRAY_LEN(bad); i++) {
        sl_batch_begin(&bb, &buf);
        assert_int_equal(sl_batch_add(&bb, (sl_u128_t){1, 0}, 0, none, sl_span(bad[i], 12)),
                         -SL_ERR_INVALID_COMMAND);
    }
    sl_batch_begin(&bb, &buf);
    assert_int_equal(sl_batch_add(&bb, (sl_u128_t){1, 0}, 0, none, sl_span(headers_kv, 6)),
                     -SL_ERR_INVALID_COMMAND);
    sl_buf_free(&buf);
    /* A buffer that cannot hold the batch: at begin, at add. */
    uint8_t small[300];
    sl_buf_init_fixed(&buf, small, 100);
    sl_batch_begin(&bb, &buf);
    assert_int_equal(sl_batch_add(&bb, (sl_u128_t){1, 0}, 0, none, none),
                     -SL_ERR_COMMAND_LENGTH_ERROR);
    assert_int_equal(sl_batch_finish(&bb, &rec), -SL_ERR_COMMAND_LENGTH_ERROR);
    sl_buf_init_fixed(&buf, small, sizeof(small));
    sl_batch_begin(&bb, &buf);
    assert_int_equal(sl_batch_add(&bb, (sl_u128_t){1, 0}, 0, sl_span_str("x"), none),
                     -SL_ERR_COMMAND_LENGTH_ERROR);
    assert_int_equal(sl_batch_finish(&bb, &rec), -SL_ERR_COMMAND_LENGTH_ERROR);
}

/* The batch checksum gathers frame checksums on the stack and switches to
 * the streaming state past 128 frames: check both sides of the switch. */
static void test_builder_many_frames(void **state)
{
    (void)state;
    static const uint32_t counts[] = {1, 127, 128, 129, 130, 300, 1000};
    for (size_t k = 0; k < SL_ARRAY_LEN(counts); k++) {
        sl_buf_t buf;
        sl_buf_init(&buf, 0);
        sl_batch_builder_t bb;
        sl_batch_begin(&bb, &buf);
        for (uint32_t i = 0; i < counts[k]; i++) {
            uint8_t payload[17];
            memset(payload, (int)i, sizeof(payload));
            assert_int_equal(sl_batch_add(&bb, (sl_u128_t){i, ~(uint64_t)i}, 1000 + i % 7,
                                          sl_span(payload, i % sizeof(payload)), sl_span(NULL, 0)),
                             0);
        }
        sl_span_t rec;
        assert_int_equal(sl_batch_finish(&bb, &rec), 0);
        assert_int_equal(sl_load_u64(rec.ptr + SL_BATCH_OFF_CHECKSUM),
                         batch_checksum_reference(rec.ptr));
        assert_int_equal(sl_batch_validate(rec, counts[k]), 0);
        /* Corrupting the last frame's checksum is caught at 8. */
        uint8_t *mut = buf.data;
        size_t last = rec.len - SL_FRAME_HEADER_SIZE - ((counts[k] - 1) % 17);
        mut[last] ^= 1;
        assert_int_equal(sl_batch_validate(rec, counts[k]), -SL_ERR_INVALID_MESSAGE_CHECKSUM);
        mut[last] ^= 1;
        /* Stamping from the kept sums gives the record the walking stamp gives. */
        sl_buf_t sums;
        sl_buf_init(&sums, 0);
        assert_int_equal(sl_batch_validate_keep(rec, counts[k], &sums), 0);
        uint8_t *copy = malloc(rec.len);
        assert_non_null(copy);
        memcpy(copy, rec.ptr, rec.len);
        sl_batch_stamp_kept(copy, rec.len, 3, 100, 5000, sums.data, sums.len);
        /* Stamping recomputes the same way. */
        sl_batch_stamp(mut, rec.len, 3, 100, 5000);
        assert_int_equal(sl_load_u64(rec.ptr + SL_BATCH_OFF_CHECKSUM),
                         batch_checksum_reference(rec.ptr));
        assert_bytes_equal(copy, rec.len, rec.ptr, rec.len);
        assert_int_equal(sl_batch_validate(rec, counts[k]), 0);
        free(copy);
        sl_buf_free(&sums);
        sl_buf_free(&buf);
    }
}

/* Vector d again, stamped from what validation kept: the same bytes. */
static void test_stamp_kept_vector_d(void **state)
{
    (void)state;
    uint8_t *c = vector_c_batch();
    size_t n;
    uint8_t *d = tu_vector("d_stored_batch.hex", &n);
    sl_buf_t sums;
    sl_buf_init(&sums, 0);
    assert_int_equal(sl_batch_validate_keep(sl_span(c, C_BATCH_LEN), 2, &sums), 0);
    assert_int_equal(sums.len, SL_BATCH_SUMS_FIELDS + 2 * 8);
    sl_batch_stamp_kept(c, C_BATCH_LEN, 1, 10, 1700000000000123ull, sums.data, sums.len);
    assert_bytes_equal(c, C_BATCH_LEN, d, n);
    /* Stamping again (a failed append hands the offsets out again) works from the same sums. */
    sl_batch_stamp_kept(c, C_BATCH_LEN, 1, 11, 1700000000000124ull, sums.data, sums.len);
    assert_int_equal(sl_batch_validate(sl_span(c, C_BATCH_LEN), 2), 0);
    assert_int_equal(sl_load_u64(c + SL_BATCH_OFF_BASE_OFFSET), 11);
    sl_buf_free(&sums);
    free(c);
    free(d);
}

/* A record of more than SL_BATCH_SUMS_FRAMES_MAX messages is validated without keeping its
 * sums; one announcing more messages than its bytes can hold is refused as before. */
static void test_validate_keep_limits(void **state)
{
    (void)state;
    sl_buf_t buf, sums;
    sl_buf_init(&buf, 0);
    sl_buf_init(&sums, 0);
    sl_batch_builder_t bb;
    sl_batch_begin(&bb, &buf);
    uint32_t count = SL_BATCH_SUMS_FRAMES_MAX + 1;
    for (uint32_t i = 0; i < count; i++)
        assert_int_equal(sl_batch_add(&bb, (sl_u128_t){i, 1}, 1000, sl_span(NULL, 0),
                                      sl_span(NULL, 0)),
                         0);
    sl_span_t rec;
    assert_int_equal(sl_batch_finish(&bb, &rec), 0);
    assert_int_equal(sl_batch_validate_keep(rec, count, &sums), 0);
    assert_int_equal(sums.len, 0);
    /* A count above what the blob can hold: check 7, nothing kept. */
    uint8_t *mut = buf.data;
    sl_store_u32(mut + SL_BATCH_OFF_COUNT, UINT32_MAX);
    assert_int_equal(sl_batch_validate_keep(rec, UINT32_MAX, &sums), -SL_ERR_INVALID_COMMAND);
    assert_int_equal(sums.len, 0);
    sl_buf_free(&sums);
    sl_buf_free(&buf);
}

/* More frames than the count announces: the frames past the kept slots are still verified,
 * so a bad checksum there is reported as 8 (first), as sl_batch_validate reports it. */
static void test_validate_keep_past_count(void **state)
{
    (void)state;
    sl_buf_t buf;
    sl_buf_init(&buf, 0);
    sl_batch_builder_t bb;
    sl_batch_begin(&bb, &buf);
    for (uint32_t i = 0; i < 3; i++)
        assert_int_equal(sl_batch_add(&bb, (sl_u128_t){i, 2}, 1000, sl_span("abc", 3),
                                      sl_span(NULL, 0)),
                         0);
    sl_span_t rec;
    assert_int_equal(sl_batch_finish(&bb, &rec), 0);
    uint8_t *mut = buf.data;
    sl_store_u32(mut + SL_BATCH_OFF_COUNT, 2);
    assert_int_equal(validate_copy(rec.ptr, rec.len, 2), -SL_ERR_INVALID_COMMAND);
    mut[rec.len - 3 - SL_FRAME_HEADER_SIZE] ^= 1; /* the third frame's checksum */
    assert_int_equal(validate_copy(rec.ptr, rec.len, 2), -SL_ERR_INVALID_MESSAGE_CHECKSUM);
    sl_buf_free(&buf);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vector_c_built),
        cmocka_unit_test(test_vector_c_checksums),
        cmocka_unit_test(test_stamp_vector_d),
        cmocka_unit_test(test_slice_vector_e),
        cmocka_unit_test(test_slice_selection),
        cmocka_unit_test(test_slice_hostile),
        cmocka_unit_test(test_admission_header_checks),
        cmocka_unit_test(test_admission_frame_checks),
        cmocka_unit_test(test_admission_batch_checks),
        cmocka_unit_test(test_admission_order),
        cmocka_unit_test(test_admission_truncation_and_corruption),
        cmocka_unit_test(test_check_layout),
        cmocka_unit_test(test_record_iter),
        cmocka_unit_test(test_header_views),
        cmocka_unit_test(test_builder_timestamps),
        cmocka_unit_test(test_builder_errors),
        cmocka_unit_test(test_builder_many_frames),
        cmocka_unit_test(test_stamp_kept_vector_d),
        cmocka_unit_test(test_validate_keep_limits),
        cmocka_unit_test(test_validate_keep_past_count),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
