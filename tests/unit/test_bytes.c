/* src/base: the bounds-checked reader, the growable writer, the UTF-8 and
 * zero scans, the arena, the error-name table and XXH3's entry points. */
#include "testutil.h"

#include <limits.h>
#include <sluice/error.h>
#include <stdio.h>
#include <stdlib.h>
#include <ctype.h>
#include <string.h>
#if defined(__x86_64__)
#include <cpuid.h>
#endif

#include "base/arena.h"
#include "base/bytes.h"
#include "base/xxh3.h"
#include "base/xxh3_inline.h"

static const uint8_t seq[32] = {1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11, 12, 13, 14, 15, 16,
                                17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32};

/* A heap copy of the first n bytes of seq: ASan catches any read past n. */
static uint8_t *heap_seq(size_t n)
{
    uint8_t *p = malloc(n ? n : 1);
    assert_non_null(p);
    memcpy(p, seq, n);
    return p;
}

/* --- reader ------------------------------------------------------------------- */

/* Reads `width` bytes with the read type under test; the value read is
 * returned as the low 64 bits (u128: the low half, span: first byte). */
static bool read_one(sl_reader_t *r, int width, uint64_t *value)
{
    switch (width) {
    case 1: {
        uint8_t v;
        bool ok = sl_read_u8(r, &v);
        *value = v;
        return ok;
    }
    case 2: {
        uint16_t v;
        bool ok = sl_read_u16(r, &v);
        *value = v;
        return ok;
    }
    case 4: {
        uint32_t v;
        bool ok = sl_read_u32(r, &v);
        *value = v;
        return ok;
    }
    case 8:
        return sl_read_u64(r, value);
    case 16: {
        sl_u128_t v;
        bool ok = sl_read_u128(r, &v);
        *value = v.lo;
        if (ok)
            assert_int_equal(v.hi, 0x100f0e0d0c0b0a09ull);
        else
            assert_int_equal(v.hi, 0);
        return ok;
    }
    default:
        abort();
    }
}

/* Every byte: the sixteen digits of either case have their value, nothing else does. */
static void test_hex_digit(void **state)
{
    (void)state;
    static const char digits[] = "0123456789abcdef";
    for (unsigned c = 0; c < 256; c++) {
        const char *at = c ? strchr(digits, tolower((int)c)) : NULL;
        int want = at ? (int)(at - digits) : -1;
        assert_int_equal(sl_hex_digit((unsigned char)c), want);
    }
    assert_int_equal(sl_hex_digit('F'), 15);
    assert_int_equal(sl_hex_digit('g'), -1);
}

static void test_reader_exact_and_short(void **state)
{
    (void)state;
    static const struct {
        int width;
        uint64_t want;
    } cases[] = {
        {1, 0x01},
        {2, 0x0201},
        {4, 0x04030201},
        {8, 0x0807060504030201ull},
        {16, 0x0807060504030201ull},
    };
    for (size_t i = 0; i < SL_ARRAY_LEN(cases); i++) {
        int w = cases[i].width;
        uint8_t *exact = heap_seq((size_t)w);
        sl_reader_t r = sl_reader(sl_span(exact, (size_t)w));
        uint64_t v = 0;
        assert_true(read_one(&r, w, &v));
        assert_int_equal(v, cases[i].want);
        assert_true(sl_reader_done(&r));
        assert_int_equal(sl_reader_left(&r), 0);
        free(exact);

        uint8_t *shorter = heap_seq((size_t)w - 1);
        r = sl_reader(sl_span(shorter, (size_t)w - 1));
        v = 99;
        assert_false(read_one(&r, w, &v));
        assert_int_equal(v, 0); /* a failed read yields zero, never garbage */
        assert_false(sl_reader_ok(&r));
        assert_false(sl_reader_done(&r));
        assert_int_equal(r.pos, 0);
        free(shorter);
    }
}

static void test_reader_f32_span_take(void **state)
{
    (void)state;
    /* f32: bit pattern of 1.5f is 0x3fc00000. */
    const uint8_t f[4] = {0x00, 0x00, 0xc0, 0x3f};
    sl_reader_t r = sl_reader(sl_span(f, 4));
    float x = 0;
    assert_true(sl_read_f32(&r, &x));
    assert_true(x == 1.5f);
    assert_true(sl_reader_done(&r));
    r = sl_reader(sl_span(f, 3));
    assert_false(sl_read_f32(&r, &x));
    assert_true(x == 0.0f);

    /* span and take: n bytes at exact length, then one short. */
    uint8_t *five = heap_seq(5);
    r = sl_reader(sl_span(five, 5));
    sl_span_t s;
    assert_true(sl_read_span(&r, 5, &s));
    assert_ptr_equal(s.ptr, five);
    assert_int_equal(s.len, 5);
    assert_true(sl_reader_done(&r));
    r = sl_reader(sl_span(five, 5));
    assert_false(sl_read_span(&r, 6, &s));
    assert_null(s.ptr);
    assert_int_equal(s.len, 0);
    r = sl_reader(sl_span(five, 5));
    assert_ptr_equal(sl_read_take(&r, 2), five);
    assert_ptr_equal(sl_read_take(&r, 3), five + 2);
    assert_null(sl_read_take(&r, 1));
    /* A length that would wrap the position is refused, not wrapped. */
    r = sl_reader(sl_span(five, 5));
    assert_true(sl_read_take(&r, 1) != NULL);
    assert_null(sl_read_take(&r, SIZE_MAX));
    assert_false(sl_reader_ok(&r));
    /* Zero bytes at the end is fine. */
    r = sl_reader(sl_span(five, 5));
    assert_true(sl_read_span(&r, 5, &s));
    assert_true(sl_read_span(&r, 0, &s));
    assert_int_equal(s.len, 0);
    assert_true(sl_reader_done(&r));
    free(five);
}

static void test_reader_sticky_and_rest(void **state)
{
    (void)state;
    uint8_t *buf = heap_seq(10);
    sl_reader_t r = sl_reader(sl_span(buf, 10));
    uint32_t v32;
    uint64_t v64;
    uint8_t v8;
    assert_true(sl_read_u32(&r, &v32));
    assert_false(sl_read_u64(&r, &v64)); /* 6 left */
    /* Sticky: reads that would fit now fail too, and the position stays. */
    assert_false(sl_read_u8(&r, &v8));
    assert_int_equal(v8, 0);
    assert_false(sl_read_u32(&r, &v32));
    assert_int_equal(r.pos, 4);
    assert_false(sl_reader_ok(&r));
    /* sl_read_rest of a failed reader is empty. */
    sl_span_t rest = sl_read_rest(&r);
    assert_null(rest.ptr);
    assert_int_equal(rest.len, 0);

    r = sl_reader(sl_span(buf, 10));
    assert_true(sl_read_u16(&r, &(uint16_t){0}));
    rest = sl_read_rest(&r);
    assert_ptr_equal(rest.ptr, buf + 2);
    assert_int_equal(rest.len, 8);
    assert_true(sl_reader_done(&r));
    /* Nothing left: an empty rest, still fine. */
    rest = sl_read_rest(&r);
    assert_int_equal(rest.len, 0);
    assert_true(sl_reader_ok(&r));
    assert_false(sl_read_u8(&r, &v8));
    free(buf);
}

/* --- writer ------------------------------------------------------------------- */

static void test_writer_growth_and_encoding(void **state)
{
    (void)state;
    sl_buf_t b;
    sl_buf_init(&b, 0);
    assert_int_equal(b.max, SIZE_MAX);
    for (uint32_t i = 0; i < 1000; i++)
        sl_put_u32(&b, i * 2654435761u);
    assert_true(sl_buf_ok(&b));
    assert_int_equal(b.len, 4000);
    assert_true(b.cap >= b.len);
    for (uint32_t i = 0; i < 1000; i++)
        assert_int_equal(sl_load_u32(b.data + 4 * i), i * 2654435761u);

    /* Every put writes little-endian. */
    sl_buf_reset(&b);
    assert_int_equal(b.len, 0);
    sl_put_u8(&b, 0xab);
    sl_put_u16(&b, 0x0102);
    sl_put_u32(&b, 0x03040506);
    sl_put_u64(&b, 0x0708090a0b0c0d0eull);
    sl_put_u128(&b, (sl_u128_t){0x1112131415161718ull, 0x2122232425262728ull});
    sl_put_f32(&b, 1.5f);
    sl_put_zeros(&b, 3);
    sl_put_bytes(&b, "xy", 2);
    sl_put_span(&b, sl_span_str("z"));
    size_t n;
    uint8_t *want = tu_hex("ab 02 01 06 05 04 03 0e 0d 0c 0b 0a 09 08 07"
                           "18 17 16 15 14 13 12 11 28 27 26 25 24 23 22 21"
                           "00 00 c0 3f 00 00 00 78 79 7a",
                           &n);
    assert_bytes_equal(b.data, b.len, want, n);
    free(want);

    /* Patch a length placeholder. */
    sl_buf_reset(&b);
    size_t at = b.len;
    sl_put_u32(&b, 0);
    sl_put_bytes(&b, "hello", 5);
    sl_buf_patch_u32(&b, at, (uint32_t)(b.len - at - 4));
    assert_int_equal(sl_load_u32(b.data), 5);
    assert_int_equal(b.len, 9);

    /* extend hands out the bytes it appended. */
    uint8_t *p = sl_buf_extend(&b, 3);
    assert_ptr_equal(p, b.data + 9);
    assert_int_equal(b.len, 12);
    assert_true(sl_buf_reserve(&b, 10000));
    assert_true(b.cap >= 10012);
    assert_int_equal(b.len, 12);
    sl_buf_free(&b);
    assert_null(b.data);
    assert_int_equal(b.len, 0);
}

/* Zero-byte writes before the first allocation: no undefined NULL + 0 (UBSan
 * checks this in make asan), success, nothing written. */
static void test_writer_empty_before_allocation(void **state)
{
    (void)state;
    sl_buf_t b;
    sl_buf_init(&b, 0);
    assert_null(b.data);
    assert_non_null(sl_buf_extend(&b, 0));
    sl_put_span(&b, sl_span(NULL, 0));
    sl_put_bytes(&b, NULL, 0);
    sl_put_zeros(&b, 0);
    assert_true(sl_buf_ok(&b));
    assert_int_equal(b.len, 0);
    sl_put_u8(&b, 7);
    assert_int_equal(b.len, 1);
    assert_int_equal(b.data[0], 7);
    sl_buf_free(&b);

    /* The same on a fixed buffer over no memory. */
    sl_buf_init_fixed(&b, NULL, 0);
    assert_non_null(sl_buf_extend(&b, 0));
    assert_true(sl_buf_ok(&b));
    assert_null(sl_buf_extend(&b, 1));
    assert_false(sl_buf_ok(&b));
}

static void test_writer_max_and_fixed(void **state)
{
    (void)state;
    /* A growable buffer capped at 10 bytes. */
    sl_buf_t b;
    sl_buf_init(&b, 10);
    sl_put_u64(&b, 1);
    assert_true(sl_buf_ok(&b));
    sl_put_u32(&b, 2); /* 12 > 10 */
    assert_false(sl_buf_ok(&b));
    assert_int_equal(b.len, 8);
    sl_put_u8(&b, 3); /* would fit, but failure is sticky */
    assert_false(sl_buf_ok(&b));
    assert_int_equal(b.len, 8);
    assert_null(sl_buf_extend(&b, 0));
    assert_false(sl_buf_reserve(&b, 1));
    /* Patching a failed buffer does nothing (and does not assert). */
    sl_buf_patch_u32(&b, 100, 7);
    /* Reset clears the failure; exactly the maximum fits. */
    sl_buf_reset(&b);
    assert_true(sl_buf_ok(&b));
    sl_put_zeros(&b, 10);
    assert_true(sl_buf_ok(&b));
    assert_int_equal(b.len, 10);
    assert_true(b.cap <= 10);
    sl_put_u8(&b, 0);
    assert_false(sl_buf_ok(&b));
    /* A huge request is refused without wrapping. */
    sl_buf_reset(&b);
    assert_false(sl_buf_reserve(&b, SIZE_MAX));
    assert_false(sl_buf_ok(&b));
    sl_buf_free(&b);

    /* A fixed buffer never grows and never writes past its memory. */
    uint8_t mem[8];
    memset(mem, 0xcc, sizeof(mem));
    sl_buf_init_fixed(&b, mem, 6);
    sl_put_u32(&b, 0x01020304);
    assert_true(sl_buf_ok(&b));
    sl_put_u32(&b, 0x05060708);
    assert_false(sl_buf_ok(&b));
    assert_int_equal(b.len, 4);
    assert_ptr_equal(b.data, mem);
    assert_int_equal(mem[4], 0xcc);
    assert_int_equal(mem[5], 0xcc);
    sl_put_u8(&b, 9);
    assert_int_equal(b.len, 4);
    sl_buf_reset(&b);
    sl_put_u16(&b, 0xbeef);
    sl_put_u32(&b, 0xdeadbeef);
    assert_true(sl_buf_ok(&b));
    assert_int_equal(b.len, 6);
    assert_int_equal(mem[6], 0xcc);
    sl_buf_free(&b); /* must not free stack memory */
    assert_null(b.data);
}

/* --- UTF-8 --------------------------------------------------------------------- */

static bool utf8_hex(const char *hex)
{
    size_t n;
    uint8_t *p = tu_hex(hex, &n);
    bool ok = sl_utf8_valid(p, n);
    free(p);
    return ok;
}

static void test_utf8_sequences(void **state)
{
    (void)state;
    static const char *const valid[] = {
        "",
        "41",
        "7f",
        "c2 80",       /* U+0080 */
        "c3 a9",       /* é */
        "df bf",       /* U+07FF */
        "e0 a0 80",    /* U+0800 */
        "e2 82 ac",    /* € */
        "ed 9f bf",    /* U+D7FF, just below the surrogates */
        "ee 80 80",    /* U+E000, just above */
        "ef bf bf",    /* U+FFFF */
        "f0 90 80 80", /* U+10000 */
        "f0 9f 98 80", /* 😀 */
        "f4 8f bf bf", /* U+10FFFF */
        "41 c3 a9 e2 82 ac f0 9f 98 80 42",
    };
    for (size_t i = 0; i < SL_ARRAY_LEN(valid); i++)
        if (!utf8_hex(valid[i]))
            fail_msg("valid UTF-8 refused: %s", valid[i]);

    static const char *const invalid[] = {
        "c0 80",          /* overlong NUL */
        "c1 bf",          /* overlong */
        "e0 80 80",       /* overlong NUL, 3 bytes */
        "e0 9f bf",       /* overlong U+07FF */
        "f0 80 80 80",    /* overlong NUL, 4 bytes */
        "f0 8f bf bf",    /* overlong U+FFFF */
        "ed a0 80",       /* U+D800 */
        "ed bf bf",       /* U+DFFF */
        "f4 90 80 80",    /* U+110000 */
        "f5 80 80 80",    /* lead byte above F4 */
        "f8 88 80 80 80", /* 5-byte form */
        "fe",
        "ff",
        "80", /* stray continuation */
        "bf",
        "41 80 41",
        "c3 a9 a9", /* one continuation too many */
        "c3",       /* truncated at the end */
        "41 c3",
        "e2 82",
        "e2",
        "f0 9f 98",
        "f0 9f",
        "f0",
        "c3 41", /* continuation expected */
        "e2 28 a1",
        "f0 9f 28 80",
        "f0 9f 98 28",
    };
    for (size_t i = 0; i < SL_ARRAY_LEN(invalid); i++)
        if (utf8_hex(invalid[i]))
            fail_msg("invalid UTF-8 accepted: %s", invalid[i]);
}

/* The eight-byte ASCII fast path must not skip over a bad byte near a
 * boundary: try every position in buffers of 7, 8, 9, 16 and 17 bytes. */
static void test_utf8_fast_path_boundaries(void **state)
{
    (void)state;
    const size_t lens[] = {7, 8, 9, 15, 16, 17, 24};
    const uint8_t bad[] = {0x80, 0xff, 0xc0, 0xc3 /* lead without continuation */};
    for (size_t l = 0; l < SL_ARRAY_LEN(lens); l++) {
        size_t n = lens[l];
        uint8_t *p = malloc(n);
        assert_non_null(p);
        memset(p, 'a', n);
        assert_true(sl_utf8_valid(p, n));
        for (size_t at = 0; at < n; at++) {
            for (size_t k = 0; k < SL_ARRAY_LEN(bad); k++) {
                p[at] = bad[k];
                if (sl_utf8_valid(p, n))
                    fail_msg("len %zu: byte %02x at %zu accepted", n, bad[k], at);
            }
            p[at] = 'a';
            /* A valid 2-byte sequence at every position (straddling too). */
            if (at + 1 < n) {
                p[at] = 0xc3;
                p[at + 1] = 0xa9;
                if (!sl_utf8_valid(p, n))
                    fail_msg("len %zu: c3 a9 at %zu refused", n, at);
                /* Cut short by the buffer end: only the lead byte is inside. */
                assert_false(sl_utf8_valid(p, at + 1));
                p[at] = 'a';
                p[at + 1] = 'a';
            }
        }
        free(p);
    }
}

static void test_all_zero(void **state)
{
    (void)state;
    for (size_t n = 0; n <= 20; n++) {
        uint8_t *p = calloc(n ? n : 1, 1);
        assert_non_null(p);
        assert_true(sl_all_zero(p, n));
        for (size_t at = 0; at < n; at++) {
            p[at] = 0x01;
            assert_false(sl_all_zero(p, n));
            p[at] = 0x80;
            assert_false(sl_all_zero(p, n));
            /* The byte just past the range is not looked at. */
            assert_true(sl_all_zero(p, at));
            p[at] = 0;
        }
        free(p);
    }
}

/* --- arena ------------------------------------------------------------------------ */

static void test_arena_alignment_and_zeroing(void **state)
{
    (void)state;
    sl_arena_t a;
    sl_arena_init(&a, 128, 0);
    for (size_t align = 1; align <= 16; align *= 2) {
        /* Misalign the bump pointer first. */
        assert_non_null(sl_arena_alloc(&a, 1, 1));
        uint8_t *p = sl_arena_alloc(&a, 24, align);
        assert_non_null(p);
        assert_int_equal((uintptr_t)p % align, 0);
        for (int i = 0; i < 24; i++)
            assert_int_equal(p[i], 0);
        memset(p, 0xff, 24);
    }
    /* Alignments that are not powers of two, or above 16, are refused. */
    assert_null(sl_arena_alloc(&a, 8, 0));
    assert_null(sl_arena_alloc(&a, 8, 3));
    assert_null(sl_arena_alloc(&a, 8, 12));
    assert_null(sl_arena_alloc(&a, 8, 32));
    uint64_t *u = SL_ARENA_NEW(&a, uint64_t, 4);
    assert_non_null(u);
    assert_int_equal((uintptr_t)u % _Alignof(uint64_t), 0);
    /* Larger than a chunk: its own chunk, still zeroed. */
    uint8_t *big = sl_arena_alloc(&a, 1000, 8);
    assert_non_null(big);
    for (int i = 0; i < 1000; i++)
        assert_int_equal(big[i], 0);
    /* Reused memory after reset is zeroed again. */
    sl_arena_reset(&a);
    uint8_t *again = sl_arena_alloc(&a, 24, 1);
    assert_non_null(again);
    for (int i = 0; i < 24; i++)
        assert_int_equal(again[i], 0);
    sl_arena_free(&a);
    assert_null(a.head);
    assert_int_equal(a.used_bytes, 0);
}

static void test_arena_reset_and_cap(void **state)
{
    (void)state;
    sl_arena_t a;
    sl_arena_init(&a, 64, 200);
    uint8_t *first = sl_arena_alloc(&a, 60, 1);
    assert_non_null(first);
    assert_int_equal(a.used_bytes, 64);
    assert_non_null(sl_arena_alloc(&a, 60, 1)); /* second chunk */
    assert_non_null(sl_arena_alloc(&a, 60, 1)); /* third chunk: 192 */
    assert_int_equal(a.used_bytes, 192);
    assert_null(sl_arena_alloc(&a, 60, 1)); /* a fourth would pass 200 */
    assert_null(sl_arena_alloc(&a, 1000, 1));
    assert_int_equal(a.used_bytes, 192);
    /* Small requests still fit in the current chunk's slack. */
    assert_non_null(sl_arena_alloc(&a, 4, 1));

    /* Reset keeps one chunk and hands its memory out again. */
    sl_arena_reset(&a);
    assert_int_equal(a.used_bytes, 64);
    assert_ptr_equal(sl_arena_alloc(&a, 8, 1), first);
    assert_non_null(sl_arena_alloc(&a, 60, 1));
    sl_arena_free(&a);

    /* A single request above the cap fails; the cap counts chunk bytes. */
    sl_arena_init(&a, 16, 100);
    assert_null(sl_arena_alloc(&a, 101, 1));
    assert_non_null(sl_arena_alloc(&a, 100, 1));
    assert_int_equal(a.used_bytes, 100);
    assert_null(sl_arena_alloc(&a, 1, 1));
    assert_null(SL_ARENA_NEW(&a, uint32_t, SIZE_MAX / 8));
    sl_arena_free(&a);

    /* Reset of an arena that never allocated is harmless. */
    sl_arena_init(&a, 0, 0);
    sl_arena_reset(&a);
    assert_null(a.head);
    sl_arena_free(&a);
}

static void test_arena_strndup(void **state)
{
    (void)state;
    sl_arena_t a;
    sl_arena_init(&a, 0, 0);
    const char src[] = {'a', 'b', 'c', 'd'};
    char *s = sl_arena_strndup(&a, src, 3);
    assert_non_null(s);
    assert_string_equal(s, "abc");
    char *e = sl_arena_strndup(&a, src, 0);
    assert_non_null(e);
    assert_string_equal(e, "");
    char *nul = sl_arena_strndup(&a, "x\0y", 3); /* copies all n bytes */
    assert_non_null(nul);
    assert_int_equal(nul[2], 'y');
    assert_int_equal(nul[3], '\0');
    assert_null(sl_arena_strndup(&a, src, SIZE_MAX));
    sl_arena_free(&a);
}

/* --- error names --------------------------------------------------------------- */

static const struct {
    int code;
    const char *name;
} all_errors[] = {
#define SL_ERROR(num, cname, pname) {num, pname},
#include <sluice/error_codes.h>
#undef SL_ERROR
};

static void test_error_table(void **state)
{
    (void)state;
    /* sl_err_name binary-searches the table: it must be sorted and unique. */
    assert_int_equal(SL_ARRAY_LEN(all_errors), 238);
    for (size_t i = 1; i < SL_ARRAY_LEN(all_errors); i++)
        if (all_errors[i].code <= all_errors[i - 1].code)
            fail_msg("error table not increasing at %d", all_errors[i].code);
    /* Every entry is found, and every gap between entries is not. */
    for (size_t i = 0; i < SL_ARRAY_LEN(all_errors); i++) {
        const char *name = sl_err_name(all_errors[i].code);
        assert_non_null(name);
        assert_string_equal(name, all_errors[i].name);
        assert_ptr_equal(sl_err_name(-all_errors[i].code), name);
        if (i > 0)
            for (int c = all_errors[i - 1].code + 1; c < all_errors[i].code && c < 20000; c++)
                if (sl_err_name(c) != NULL)
                    fail_msg("gap code %d has a name", c);
    }
    assert_int_equal(all_errors[0].code, 1);
    assert_int_equal(all_errors[SL_ARRAY_LEN(all_errors) - 1].code, 14003);
}

static void test_error_names(void **state)
{
    (void)state;
    assert_string_equal(sl_err_name(0), "Ok");
    assert_string_equal(sl_err_name(SL_ERR_INVALID_COMMAND), "InvalidCommand");
    assert_string_equal(sl_err_name(-SL_ERR_INVALID_COMMAND), "InvalidCommand");
    assert_string_equal(sl_err_name(1009), "StreamIdNotFound");
    assert_string_equal(sl_err_name(5000), "ConsumerGroupIdNotFound");
    assert_string_equal(sl_err_name(14003), "IncompatibleProtocolVersion");
    assert_null(sl_err_name(17));
    assert_null(sl_err_name(-17));
    assert_null(sl_err_name(14002));
    assert_null(sl_err_name(14004));
    assert_null(sl_err_name(INT_MAX));
    assert_null(sl_err_name(INT_MIN));

    assert_string_equal(sl_strerror(SL_ERR_INVALID_COMMAND), "invalid command (3)");
    assert_string_equal(sl_strerror(-SL_ERR_INVALID_COMMAND), "invalid command (3)");
    assert_string_equal(sl_strerror(40), "unauthenticated (40)");
    assert_string_equal(sl_strerror(-5000), "consumer group id not found (5000)");
    assert_string_equal(sl_strerror(0), "ok (0)");
    assert_string_equal(sl_strerror(17), "unknown error (17)");
    assert_string_equal(sl_strerror(-17), "unknown error (17)");
    assert_string_equal(sl_strerror(99999), "unknown error (99999)");
    assert_string_equal(sl_strerror(INT_MAX), "unknown error (2147483647)");
    assert_string_equal(sl_strerror(INT_MIN), "unknown error (2147483648)");
    /* Every known code gives a non-empty text ending in its number. */
    for (size_t i = 0; i < SL_ARRAY_LEN(all_errors); i++) {
        char tail[16];
        snprintf(tail, sizeof(tail), " (%d)", all_errors[i].code);
        const char *t = sl_strerror(all_errors[i].code);
        size_t tl = strlen(t), sl = strlen(tail);
        assert_true(tl > sl);
        assert_string_equal(t + tl - sl, tail);
    }
}

/* sl_xxh3_64 takes inputs up to 240 bytes straight to XXH3's short paths and longer ones to
 * the build chosen at run time: either way it gives what the streaming form (always the chosen
 * build) gives, on both sides of every length boundary of XXH3; so does sl_xxh3_64_inline. */
static void test_xxh3_lengths(void **state)
{
    (void)state;
    static const size_t lengths[] = {0,   1,   3,   4,   8,   9,    16,   17,   64,  128,
                                     129, 200, 239, 240, 241, 255,  256,  1023, 1024, 1025,
                                     4096, 65536};
    uint8_t *buf = malloc(65536);
    assert_non_null(buf);
    for (size_t i = 0; i < 65536; i++)
        buf[i] = (uint8_t)(i * 131u + (i >> 8));
    assert_int_equal(sl_xxh3_64(buf, 0), 0x2d06800538d394c2ull); /* XXH3_64bits of nothing */
    for (size_t k = 0; k < SL_ARRAY_LEN(lengths); k++) {
        size_t n = lengths[k];
        sl_xxh3_state_t st;
        sl_xxh3_reset(&st);
        sl_xxh3_update(&st, buf, n / 3);
        sl_xxh3_update(&st, buf + n / 3, n - n / 3);
        assert_int_equal(sl_xxh3_64(buf, n), sl_xxh3_digest(&st));
        assert_int_equal(sl_xxh3_64_inline(buf, n), sl_xxh3_digest(&st));
    }
    /* The inline form (frame checksums) agrees at every length of the short paths. */
    for (size_t n = 0; n <= 300; n++)
        assert_int_equal(sl_xxh3_64_inline(buf + n, n), sl_xxh3_64(buf + n, n));
    free(buf);
}

#if defined(__x86_64__)
/* XINUSE (XGETBV with ECX = 1), where the CPU has it: bit 2 says the upper
 * halves of ymm0-15 are not in their initial (zero) state. */
static bool xinuse_available(void)
{
    unsigned a, b, c, d;
    return __get_cpuid_count(0xd, 1, &a, &b, &c, &d) && (a & 4u) != 0;
}

static bool ymm_upper_dirty(void)
{
    uint32_t lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(1));
    return (lo & 4u) != 0;
}
#endif

/* The AVX2 build leaves the upper halves of the ymm registers clean after
 * each of its entry points (vzeroupper). GCC did not, where the long hash
 * ends in a call: the SSE code that ran next, and intel-ipsec-mb's AVX-512
 * cipher on entry, then stalled on every call (an encrypted poll opened its
 * messages at half the speed; docs/benchmarks.md). */
static void test_xxh3_leaves_ymm_clean(void **state)
{
    (void)state;
#if defined(__x86_64__)
    if (strcmp(sl_xxh3_impl(), "avx2") != 0 || !xinuse_available())
        skip(); /* no AVX2 build in use, or no way to see the state */
    uint8_t *buf = malloc(4096);
    assert_non_null(buf);
    for (size_t i = 0; i < 4096; i++)
        buf[i] = (uint8_t)(i * 7u);
    static const size_t lengths[] = {241, 1088, 4096};
    for (size_t k = 0; k < SL_ARRAY_LEN(lengths); k++) {
        uint64_t h = sl_xxh3_64(buf, lengths[k]);
        assert_false(ymm_upper_dirty());
        sl_xxh3_state_t st;
        sl_xxh3_reset(&st);
        assert_false(ymm_upper_dirty());
        sl_xxh3_update(&st, buf, lengths[k]);
        assert_false(ymm_upper_dirty());
        uint64_t d = sl_xxh3_digest(&st);
        assert_false(ymm_upper_dirty());
        assert_int_equal(h, d);
    }
    free(buf);
#else
    skip(); /* x86-64 only */
#endif
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hex_digit),
        cmocka_unit_test(test_reader_exact_and_short),
        cmocka_unit_test(test_reader_f32_span_take),
        cmocka_unit_test(test_reader_sticky_and_rest),
        cmocka_unit_test(test_writer_growth_and_encoding),
        cmocka_unit_test(test_writer_empty_before_allocation),
        cmocka_unit_test(test_writer_max_and_fixed),
        cmocka_unit_test(test_utf8_sequences),
        cmocka_unit_test(test_utf8_fast_path_boundaries),
        cmocka_unit_test(test_all_zero),
        cmocka_unit_test(test_arena_alignment_and_zeroing),
        cmocka_unit_test(test_arena_reset_and_cap),
        cmocka_unit_test(test_arena_strndup),
        cmocka_unit_test(test_error_table),
        cmocka_unit_test(test_error_names),
        cmocka_unit_test(test_xxh3_lengths),
        cmocka_unit_test(test_xxh3_leaves_ymm_clean),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
