/* wire/tlv: the user-headers example of encodings.md 9, the options golden
 * block of options.md 1, every structural and options rule, iteration, find,
 * and the u32-prefixed POptions form. */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/limits.h"
#include "wire/tlv.h"

static const char options_golden[] = "02 0d 00 00 00 65 6e 66 6f 72 63 65 5f 66 73 79"
                                     "6e 63 03 01 00 00 00 01 02 0c 00 00 00 73 65 67"
                                     "6d 65 6e 74 5f 73 69 7a 65 0c 08 00 00 00 00 00"
                                     "00 40 00 00 00 00";

/* Validates hex as both kinds of block; returns the two verdicts. */
static void validate_hex(const char *hex, bool *headers_ok, bool *options_ok)
{
    size_t n;
    uint8_t *p = tu_hex(hex, &n);
    uint32_t pairs;
    *headers_ok = sl_user_headers_validate(sl_span(p, n), &pairs);
    *options_ok = sl_options_validate(sl_span(p, n), &pairs);
    free(p);
}

/* Appends a field with `len` bytes of `fill`. */
static void put_field(sl_buf_t *b, uint8_t kind, size_t len, uint8_t fill)
{
    sl_put_u8(b, kind);
    sl_put_u32(b, (uint32_t)len);
    uint8_t *p = sl_buf_extend(b, len);
    assert_non_null(p);
    memset(p, fill, len);
}

/* --- golden bytes ----------------------------------------------------------------- */

static void test_user_headers_example(void **state)
{
    (void)state;
    size_t n;
    uint8_t *want = tu_hex("02 01 00 00 00 6b 02 01 00 00 00 76", &n);
    assert_int_equal(n, 12);
    uint32_t pairs = 0;
    assert_true(sl_user_headers_validate(sl_span(want, n), &pairs));
    assert_int_equal(pairs, 1);
    sl_tlv_iter_t it = sl_tlv_iter(sl_span(want, n));
    sl_tlv_entry_t e;
    assert_true(sl_tlv_next(&it, &e));
    assert_int_equal(e.key.kind, SL_KIND_STRING);
    assert_span_str(e.key.data, "k");
    assert_int_equal(e.value.kind, SL_KIND_STRING);
    assert_span_str(e.value.data, "v");
    assert_false(sl_tlv_next(&it, &e));

    sl_buf_t b;
    sl_buf_init(&b, 0);
    assert_true(sl_tlv_put_pair(&b, "k", SL_KIND_STRING, sl_span_str("v")));
    assert_bytes_equal(b.data, b.len, want, n);
    sl_buf_free(&b);
    free(want);
}

static void test_options_golden(void **state)
{
    (void)state;
    size_t n;
    uint8_t *want = tu_hex(options_golden, &n);
    assert_int_equal(n, 54);
    sl_span_t block = sl_span(want, n);
    uint32_t pairs = 0;
    assert_true(sl_options_validate(block, &pairs));
    assert_int_equal(pairs, 2);

    sl_tlv_field_t f;
    assert_true(sl_options_find(block, "enforce_fsync", &f));
    assert_int_equal(f.kind, SL_KIND_BOOL);
    assert_int_equal(f.data.len, 1);
    assert_int_equal(f.data.ptr[0], 1);
    assert_true(sl_options_find(block, "segment_size", &f));
    assert_int_equal(f.kind, SL_KIND_UINT64);
    assert_int_equal(f.data.len, 8);
    assert_int_equal(sl_load_u64(f.data.ptr), 1024ull * 1024 * 1024);
    assert_ptr_equal(f.data.ptr, want + 46); /* borrowed from the block */
    assert_false(sl_options_find(block, "segment", &f));
    assert_false(sl_options_find(block, "segment_size_", &f));
    assert_false(sl_options_find(block, "", &f));

    /* Iteration yields the pairs in wire order. */
    sl_tlv_iter_t it = sl_tlv_iter(block);
    sl_tlv_entry_t e;
    assert_true(sl_tlv_next(&it, &e));
    assert_span_str(e.key.data, "enforce_fsync");
    assert_true(sl_tlv_next(&it, &e));
    assert_span_str(e.key.data, "segment_size");
    assert_false(sl_tlv_next(&it, &e));

    /* The encoder produces the same bytes. */
    sl_buf_t b;
    sl_buf_init(&b, 0);
    const uint8_t yes = 1;
    uint8_t gib[8];
    sl_store_u64(gib, 1024ull * 1024 * 1024);
    assert_true(sl_tlv_put_pair(&b, "enforce_fsync", SL_KIND_BOOL, sl_span(&yes, 1)));
    assert_true(sl_tlv_put_pair(&b, "segment_size", SL_KIND_UINT64, sl_span(gib, 8)));
    assert_bytes_equal(b.data, b.len, want, n);
    sl_buf_free(&b);
    free(want);
}

/* --- structural rules (both blocks) -------------------------------------------------- */

static void test_structural_rules(void **state)
{
    (void)state;
    bool h, o;
    /* The empty block is valid for both. */
    validate_hex("", &h, &o);
    assert_true(h && o);
    static const char *const bad[] = {
        "00 01 00 00 00 6b 02 01 00 00 00 76",       /* key kind 0 */
        "02 01 00 00 00 6b 00 01 00 00 00 76",       /* value kind 0 */
        "02 00 00 00 00 02 01 00 00 00 76",          /* key length 0 */
        "02 01 00 00 00 6b 02 00 00 00 00",          /* value length 0 */
        "02 01 00 00 00 6b 02 00 01 00 00 76",       /* value length 256 */
        "02 01 00 00 00 6b 02 02 00 00 00 76",       /* value past the end */
        "02 01 00 00 00 6b 02 ff ff ff ff 76",       /* value length huge */
        "02 01 00 00 00 6b 02 01 00 00 00 76 00",    /* a trailing byte */
        "02 01 00 00 00 6b 02 01 00 00 00 76 02 01", /* a trailing partial field */
        "02 01 00 00 00 6b",                         /* odd field count: key alone */
        "02 01 00 00 00 6b 02 01 00 00 00 76 02 01 00 00 00 6c",
        "02 01 00 00", /* field header cut */
        "02",
    };
    for (size_t i = 0; i < SL_ARRAY_LEN(bad); i++) {
        validate_hex(bad[i], &h, &o);
        if (h || o)
            fail_msg("block '%s' accepted (headers %d, options %d)", bad[i], h, o);
    }

    /* Every truncation of a valid block is refused by both validators,
     * except the whole pairs at its start. */
    size_t n;
    uint8_t *full = tu_hex(options_golden, &n);
    for (size_t len = 0; len < n; len++) {
        uint8_t *cut = malloc(len ? len : 1);
        assert_non_null(cut);
        memcpy(cut, full, len);
        uint32_t pairs;
        bool expect = len == 0 || len == 24; /* 24 = first pair */
        assert_int_equal(sl_user_headers_validate(sl_span(cut, len), &pairs), expect);
        assert_int_equal(sl_options_validate(sl_span(cut, len), &pairs), expect);
        free(cut);
    }
    free(full);

    /* Lengths 1 and 255 are the bounds that hold. */
    sl_buf_t b;
    sl_buf_init(&b, 0);
    put_field(&b, SL_KIND_STRING, 255, 'a');
    put_field(&b, SL_KIND_RAW, 1, 0xff);
    put_field(&b, SL_KIND_STRING, 1, 'b');
    put_field(&b, SL_KIND_RAW, 255, 0x00);
    uint32_t pairs;
    assert_true(sl_user_headers_validate(sl_buf_span(&b), &pairs));
    assert_int_equal(pairs, 2);
    assert_true(sl_options_validate(sl_buf_span(&b), &pairs));
    assert_int_equal(pairs, 2);
    sl_buf_free(&b);

    /* sl_tlv_put refuses what the rules refuse. */
    sl_buf_init(&b, 0);
    char big[256];
    memset(big, 'x', sizeof(big));
    assert_false(sl_tlv_put(&b, 0, sl_span(big, 1)));
    assert_false(sl_tlv_put(&b, SL_KIND_RAW, sl_span(big, 0)));
    assert_false(sl_tlv_put(&b, SL_KIND_RAW, sl_span(big, 256)));
    assert_int_equal(b.len, 0);
    assert_true(sl_tlv_put(&b, SL_KIND_RAW, sl_span(big, 255)));
    assert_false(sl_tlv_put_pair(&b, "", SL_KIND_RAW, sl_span(big, 1)));
    sl_buf_free(&b);
}

static void test_user_headers_only_rules(void **state)
{
    (void)state;
    bool h, o;
    /* User-header keys need not be String; kinds above 15 are carried through. */
    validate_hex("01 02 00 00 00 ff fe 06 04 00 00 00 01 00 00 00", &h, &o);
    assert_true(h);
    assert_false(o); /* options keys must be String */
    validate_hex("02 01 00 00 00 6b c8 01 00 00 00 00", &h, &o);
    assert_true(h);
    assert_true(o); /* value kinds are not restricted structurally */
    /* Duplicate keys are fine in user headers, not in options. */
    validate_hex("02 01 00 00 00 6b 02 01 00 00 00 76 02 01 00 00 00 6b 02 01 00 00 00 77", &h, &o);
    assert_true(h);
    assert_false(o);
}

/* --- options rules -------------------------------------------------------------------- */

static void test_options_keys(void **state)
{
    (void)state;
    bool h, o;
    static const char *const bad[] = {
        "01 01 00 00 00 6b 02 01 00 00 00 76",          /* Raw key */
        "06 04 00 00 00 01 00 00 00 02 01 00 00 00 76", /* Int32 key */
        "02 01 00 00 00 ff 02 01 00 00 00 76",          /* invalid UTF-8 key */
        "02 02 00 00 00 c0 80 02 01 00 00 00 76",       /* overlong key */
        "02 03 00 00 00 ed a0 80 02 01 00 00 00 76",    /* surrogate key */
        /* duplicates, adjacent */
        "02 01 00 00 00 61 09 01 00 00 00 01 02 01 00 00 00 61 09 01 00 00 00 02",
        /* duplicates, not adjacent: a, b, a */
        "02 01 00 00 00 61 09 01 00 00 00 01 02 01 00 00 00 62 09 01 00 00 00 02"
        "02 01 00 00 00 61 09 01 00 00 00 03",
        /* duplicates, not adjacent and out of order: b, a, c, b */
        "02 01 00 00 00 62 09 01 00 00 00 01 02 01 00 00 00 61 09 01 00 00 00 02"
        "02 01 00 00 00 63 09 01 00 00 00 03 02 01 00 00 00 62 09 01 00 00 00 04",
    };
    for (size_t i = 0; i < SL_ARRAY_LEN(bad); i++) {
        validate_hex(bad[i], &h, &o);
        if (o)
            fail_msg("options block '%s' accepted", bad[i]);
    }
    /* A key that is a prefix of another, and a value equal to a key, are fine. */
    validate_hex("02 01 00 00 00 61 09 01 00 00 00 01 02 02 00 00 00 61 62 02 01 00 00 00 61", &h,
                 &o);
    assert_true(o);
    /* A non-ASCII but valid key. */
    validate_hex("02 02 00 00 00 c3 a9 09 01 00 00 00 01", &h, &o);
    assert_true(o);
}

/* n pairs with distinct 4-digit String keys and a 1-byte value: 15 bytes each. */
static void build_pairs(sl_buf_t *b, uint32_t n)
{
    assert_true(n <= 10000); /* keys stay 4 digits, pairs 15 bytes */
    for (uint32_t i = 0; i < n; i++) {
        char key[sizeof("4294967295")]; /* room for any u32, so no key is cut short */
        snprintf(key, sizeof(key), "%04u", (unsigned)i);
        const uint8_t v = (uint8_t)i;
        assert_true(sl_tlv_put_pair(b, key, SL_KIND_UINT8, sl_span(&v, 1)));
    }
}

/* A block of exactly `size` bytes (size >= 20): distinct String keys, Raw
 * values; every pair is 520 bytes (the largest) except the tail. */
static void build_sized(sl_buf_t *b, size_t size)
{
    uint32_t i = 0;
    while (size > 0) {
        size_t pair = size <= 520 ? size : size - 520 >= 20 ? 520 : size / 2;
        size_t key_len = (pair - 10) / 2, value_len = pair - 10 - key_len;
        assert_true(key_len >= 5 && key_len <= 255 && value_len >= 1 && value_len <= 255);
        size_t at = b->len;
        put_field(b, SL_KIND_STRING, key_len, 'k');
        char tag[8];
        snprintf(tag, sizeof(tag), "%05u", (unsigned)i++);
        memcpy(b->data + at + 5, tag, 5); /* makes the key unique */
        put_field(b, SL_KIND_RAW, value_len, 0x5a);
        size -= pair;
    }
}

static void test_options_limits(void **state)
{
    (void)state;
    uint32_t pairs;
    sl_buf_t b;
    sl_buf_init(&b, 0);
    build_pairs(&b, SL_OPTIONS_ENTRIES_MAX);
    assert_true(sl_options_validate(sl_buf_span(&b), &pairs));
    assert_int_equal(pairs, 1024);
    sl_buf_reset(&b);
    build_pairs(&b, SL_OPTIONS_ENTRIES_MAX + 1);
    assert_false(sl_options_validate(sl_buf_span(&b), &pairs));
    /* User headers have no pair cap. */
    assert_true(sl_user_headers_validate(sl_buf_span(&b), &pairs));
    assert_int_equal(pairs, 1025);

    /* Byte limits: 100000 accepted, 100001 refused, for both blocks. */
    sl_buf_reset(&b);
    build_sized(&b, SL_OPTIONS_BYTES_MAX);
    assert_int_equal(b.len, 100000);
    assert_true(sl_options_validate(sl_buf_span(&b), &pairs));
    assert_true(sl_user_headers_validate(sl_buf_span(&b), &pairs));
    sl_buf_reset(&b);
    build_sized(&b, SL_OPTIONS_BYTES_MAX + 1);
    assert_int_equal(b.len, 100001);
    assert_false(sl_user_headers_validate(sl_buf_span(&b), &pairs));
    assert_false(sl_options_validate(sl_buf_span(&b), &pairs));
    sl_buf_free(&b);
}

/* --- kinds ----------------------------------------------------------------------------- */

static void test_kinds(void **state)
{
    (void)state;
    static const struct {
        uint8_t kind;
        uint32_t width;
        const char *name;
    } kinds[] = {
        {1, 0, "raw"},       {2, 0, "string"},   {3, 1, "bool"},     {4, 1, "int8"},
        {5, 2, "int16"},     {6, 4, "int32"},    {7, 8, "int64"},    {8, 16, "int128"},
        {9, 1, "uint8"},     {10, 2, "uint16"},  {11, 4, "uint32"},  {12, 8, "uint64"},
        {13, 16, "uint128"}, {14, 4, "float32"}, {15, 8, "float64"},
    };
    for (size_t i = 0; i < SL_ARRAY_LEN(kinds); i++) {
        assert_int_equal(sl_kind_width(kinds[i].kind), kinds[i].width);
        assert_string_equal(sl_kind_name(kinds[i].kind), kinds[i].name);
        assert_int_equal(sl_kind_parse(kinds[i].name), kinds[i].kind);
    }
    assert_int_equal(sl_kind_width(0), 0);
    assert_int_equal(sl_kind_width(16), 0);
    assert_int_equal(sl_kind_width(255), 0);
    assert_null(sl_kind_name(0));
    assert_null(sl_kind_name(16));
    assert_null(sl_kind_name(255));
    assert_int_equal(sl_kind_parse("nope"), 0);
    assert_int_equal(sl_kind_parse(""), 0);
    assert_int_equal(sl_kind_parse("String"), 0);
}

/* --- POptions -------------------------------------------------------------------------- */

static void test_poptions(void **state)
{
    (void)state;
    size_t n;
    uint8_t *block = tu_hex(options_golden, &n);
    sl_buf_t b;
    sl_buf_init(&b, 0);
    assert_true(sl_poptions_encode(&b, sl_span(block, n)));
    assert_int_equal(b.len, 4 + 54);
    assert_int_equal(sl_load_u32(b.data), 54);
    assert_bytes_equal(b.data + 4, 54, block, n);
    /* A field after the block is left for the caller. */
    sl_put_u32(&b, 0xdeadbeef);
    sl_reader_t r = sl_reader(sl_buf_span(&b));
    sl_span_t got;
    assert_true(sl_poptions_decode(&r, &got));
    assert_int_equal(got.len, 54);
    assert_ptr_equal(got.ptr, b.data + 4);
    assert_int_equal(sl_reader_left(&r), 4);

    /* Every truncation of prefix + block is refused. */
    for (size_t len = 0; len < 58; len++) {
        uint8_t *cut = malloc(len ? len : 1);
        assert_non_null(cut);
        memcpy(cut, b.data, len);
        r = sl_reader(sl_span(cut, len));
        assert_false(sl_poptions_decode(&r, &got));
        assert_false(sl_reader_ok(&r));
        free(cut);
    }
    /* A length larger than the input, up to the largest u32. */
    const uint32_t lens[] = {55, 58, 100001, 0xffffffffu};
    for (size_t i = 0; i < SL_ARRAY_LEN(lens); i++) {
        sl_store_u32(b.data, lens[i]);
        r = sl_reader(sl_span(b.data, 58));
        assert_false(sl_poptions_decode(&r, &got));
    }
    /* A length that cuts the block inside a field. */
    sl_store_u32(b.data, 30);
    r = sl_reader(sl_buf_span(&b));
    assert_false(sl_poptions_decode(&r, &got));
    /* A length of the first pair alone is a valid, shorter block. */
    sl_store_u32(b.data, 24);
    r = sl_reader(sl_buf_span(&b));
    assert_true(sl_poptions_decode(&r, &got));
    assert_int_equal(got.len, 24);
    /* Empty block. */
    const uint8_t zero[4] = {0};
    r = sl_reader(sl_span(zero, 4));
    assert_true(sl_poptions_decode(&r, &got));
    assert_int_equal(got.len, 0);
    assert_true(sl_reader_done(&r));
    /* A block breaking an options rule (duplicate key) inside the prefix. */
    sl_buf_reset(&b);
    sl_put_u32(&b, 24);
    const uint8_t one = 1;
    assert_true(sl_tlv_put_pair(&b, "a", SL_KIND_UINT8, sl_span(&one, 1)));
    assert_true(sl_tlv_put_pair(&b, "a", SL_KIND_UINT8, sl_span(&one, 1)));
    r = sl_reader(sl_buf_span(&b));
    assert_false(sl_poptions_decode(&r, &got));
    /* Encoding a block above 100000 bytes is refused. */
    sl_buf_reset(&b);
    uint8_t *huge = calloc(100001, 1);
    assert_non_null(huge);
    assert_false(sl_poptions_encode(&b, sl_span(huge, 100001)));
    free(huge);
    sl_buf_free(&b);
    free(block);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_user_headers_example),
        cmocka_unit_test(test_options_golden),
        cmocka_unit_test(test_structural_rules),
        cmocka_unit_test(test_user_headers_only_rules),
        cmocka_unit_test(test_options_keys),
        cmocka_unit_test(test_options_limits),
        cmocka_unit_test(test_kinds),
        cmocka_unit_test(test_poptions),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
