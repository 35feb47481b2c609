/* wire/prim: every body primitive of encodings.md with its examples,
 * truncation at every length, bad kinds and lengths, invalid UTF-8, and the
 * XXH32 consumer key / partition index. */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/xxh3.h"
#include "wire/prim.h"

/* --- helpers ------------------------------------------------------------------ */

/* One decoder under a common signature; out points at the primitive's type. */
typedef bool (*decode_fn)(sl_reader_t *r, void *out);

static bool dec_name(sl_reader_t *r, void *out)
{
    return sl_name_decode(r, out);
}
static bool dec_str8(sl_reader_t *r, void *out)
{
    return sl_str8_decode(r, out);
}
static bool dec_str32(sl_reader_t *r, void *out)
{
    return sl_str32_decode(r, out);
}
static bool dec_ident(sl_reader_t *r, void *out)
{
    return sl_ident_decode(r, out);
}
static bool dec_consumer(sl_reader_t *r, void *out)
{
    return sl_consumer_decode(r, out);
}
static bool dec_opt_partition(sl_reader_t *r, void *out)
{
    return sl_opt_partition_decode(r, out);
}
static bool dec_partitioning(sl_reader_t *r, void *out)
{
    return sl_partitioning_decode(r, out);
}
static bool dec_strategy(sl_reader_t *r, void *out)
{
    return sl_strategy_decode(r, out);
}
static bool dec_ack(sl_reader_t *r, void *out)
{
    return sl_ack_decode(r, out);
}

/* Storage big enough for any primitive's decoded value. */
typedef union {
    sl_span_t span;
    sl_ident_t ident;
    sl_consumer_t consumer;
    sl_opt_partition_t opt;
    sl_partitioning_t part;
    sl_strategy_t strategy;
    uint8_t ack;
} any_t;

/* Decodes hex exactly (all bytes consumed) into *out; false when refused.
 * Decoded spans borrow `held`, which stays valid until the next call. */
static uint8_t held[512];

static bool decode_hex(decode_fn dec, const char *hex, any_t *out)
{
    size_t n;
    uint8_t *p = tu_hex(hex, &n);
    assert_true(n <= sizeof(held));
    memcpy(held, p, n);
    free(p);
    sl_reader_t r = sl_reader(sl_span(held, n));
    memset(out, 0xa5, sizeof(*out));
    bool ok = dec(&r, out);
    assert_int_equal(ok, sl_reader_ok(&r));
    if (ok)
        assert_true(sl_reader_done(&r));
    return ok;
}

/* The valid encoding decodes; each prefix of it is refused (the reader
 * fails); each prefix sits in its own allocation so ASan sees overreads. */
static void check_truncations(decode_fn dec, const char *hex)
{
    size_t n;
    uint8_t *full = tu_hex(hex, &n);
    for (size_t len = 0; len < n; len++) {
        uint8_t *cut = malloc(len ? len : 1);
        assert_non_null(cut);
        memcpy(cut, full, len);
        sl_reader_t r = sl_reader(sl_span(cut, len));
        any_t out;
        if (dec(&r, &out))
            fail_msg("prefix of %zu bytes of '%s' accepted", len, hex);
        assert_false(sl_reader_ok(&r));
        free(cut);
    }
    sl_reader_t r = sl_reader(sl_span(full, n));
    any_t out;
    assert_true(dec(&r, &out));
    assert_true(sl_reader_done(&r));
    free(full);
}

static void assert_encoded(const sl_buf_t *b, const char *hex)
{
    size_t n;
    uint8_t *want = tu_hex(hex, &n);
    assert_bytes_equal(b->data, b->len, want, n);
    free(want);
}

/* --- strings ------------------------------------------------------------------- */

static void test_name(void **state)
{
    (void)state;
    any_t v;
    assert_true(decode_hex(dec_name, "01 73", &v));
    assert_span_str(v.span, "s");
    sl_buf_t b;
    sl_buf_init(&b, 0);
    assert_true(sl_name_encode(&b, sl_span_str("s")));
    assert_encoded(&b, "01 73");

    check_truncations(dec_name, "01 73");
    check_truncations(dec_name, "03 e2 82 ac");
    assert_false(decode_hex(dec_name, "00", &v));       /* length 0 */
    assert_false(decode_hex(dec_name, "00 73", &v));    /* length 0, then bytes */
    assert_false(decode_hex(dec_name, "01 ff", &v));    /* invalid UTF-8 */
    assert_false(decode_hex(dec_name, "02 c0 80", &v)); /* overlong */
    assert_false(decode_hex(dec_name, "02 e2 82", &v)); /* cut sequence */
    assert_false(decode_hex(dec_name, "05 61 62", &v)); /* longer than input */

    /* 1..255 bytes encode; 0 and 256 do not. */
    char big[256];
    memset(big, 'z', sizeof(big));
    sl_buf_reset(&b);
    assert_false(sl_name_encode(&b, sl_span(big, 0)));
    assert_false(sl_name_encode(&b, sl_span(big, 256)));
    assert_int_equal(b.len, 0);
    assert_true(sl_name_encode(&b, sl_span(big, 255)));
    assert_int_equal(b.len, 256);
    assert_int_equal(b.data[0], 255);
    sl_reader_t r = sl_reader(sl_buf_span(&b));
    sl_span_t s;
    assert_true(sl_name_decode(&r, &s));
    assert_int_equal(s.len, 255);
    assert_ptr_equal(s.ptr, b.data + 1); /* borrowed, not copied */
    sl_buf_free(&b);
}

static void test_str8_and_str32(void **state)
{
    (void)state;
    any_t v;
    /* str8: empty is allowed (passwords, tokens). */
    assert_true(decode_hex(dec_str8, "00", &v));
    assert_int_equal(v.span.len, 0);
    assert_true(decode_hex(dec_str8, "02 c3 a9", &v));
    assert_span_str(v.span, "é");
    check_truncations(dec_str8, "03 61 62 63");
    assert_false(decode_hex(dec_str8, "01 80", &v));
    assert_false(decode_hex(dec_str8, "03 ed a0 80", &v)); /* surrogate */
    sl_buf_t b;
    sl_buf_init(&b, 0);
    assert_true(sl_str8_encode(&b, sl_span(NULL, 0)));
    assert_true(sl_str8_encode(&b, sl_span_str("pw")));
    assert_encoded(&b, "00 02 70 77");
    char big[256];
    memset(big, 'q', sizeof(big));
    sl_buf_reset(&b);
    assert_false(sl_str8_encode(&b, sl_span(big, 256)));
    assert_true(sl_str8_encode(&b, sl_span(big, 255)));

    /* str32: u32 length. */
    assert_true(decode_hex(dec_str32, "00 00 00 00", &v));
    assert_int_equal(v.span.len, 0);
    assert_true(
        decode_hex(dec_str32, "0f 00 00 00 31 32 37 2e 30 2e 30 2e 31 3a 35 31 32 33 34", &v));
    assert_span_str(v.span, "127.0.0.1:51234");
    check_truncations(dec_str32, "03 00 00 00 61 62 63");
    assert_false(decode_hex(dec_str32, "ff ff ff ff 61", &v)); /* length past the input */
    assert_false(decode_hex(dec_str32, "04 00 00 01 61 62 63 64", &v));
    assert_false(decode_hex(dec_str32, "01 00 00 00 fe", &v));
    sl_buf_reset(&b);
    assert_true(sl_str32_encode(&b, sl_span_str("ab")));
    assert_encoded(&b, "02 00 00 00 61 62");
    sl_buf_free(&b);
}

/* --- identifier and consumer ------------------------------------------------------ */

static void test_identifier(void **state)
{
    (void)state;
    any_t v;
    assert_true(decode_hex(dec_ident, "01 04 01 00 00 00", &v));
    assert_int_equal(v.ident.kind, SL_IDENT_NUMERIC);
    assert_int_equal(v.ident.number, 1);
    assert_true(decode_hex(dec_ident, "02 01 74", &v));
    assert_int_equal(v.ident.kind, SL_IDENT_STRING);
    assert_span_str(v.ident.name, "t");

    sl_buf_t b;
    sl_buf_init(&b, 0);
    sl_ident_t one = sl_ident_number(1), t = sl_ident_name("t");
    assert_true(sl_ident_encode(&b, &one));
    assert_true(sl_ident_encode(&b, &t));
    assert_encoded(&b, "01 04 01 00 00 00  02 01 74");

    check_truncations(dec_ident, "01 04 01 00 00 00");
    check_truncations(dec_ident, "02 05 68 65 6c 6c 6f");
    static const char *const bad[] = {
        "00 04 01 00 00 00",    /* kind 0 */
        "03 04 01 00 00 00",    /* kind 3 */
        "ff 01 74",             /* kind 255 */
        "01 03 01 00 00",       /* numeric length 3 */
        "01 03 01 00 00 00",    /* numeric length 3, enough bytes */
        "01 05 01 00 00 00 00", /* numeric length 5 */
        "01 00",                /* numeric length 0 */
        "02 00",                /* string length 0 */
        "02 01 ff",             /* invalid UTF-8 */
        "02 02 c1 bf",          /* overlong */
        "02 03 ed b0 80",       /* surrogate */
    };
    for (size_t i = 0; i < SL_ARRAY_LEN(bad); i++)
        if (decode_hex(dec_ident, bad[i], &v))
            fail_msg("identifier '%s' accepted", bad[i]);

    /* Encoders refuse other kinds and names of 0 or 256 bytes. */
    sl_buf_reset(&b);
    sl_ident_t weird = {.kind = 3, .number = 1};
    assert_false(sl_ident_encode(&b, &weird));
    sl_ident_t empty = sl_ident_name("");
    assert_false(sl_ident_encode(&b, &empty));
    char big[256];
    memset(big, 'i', sizeof(big));
    sl_ident_t huge = {.kind = SL_IDENT_STRING, .name = sl_span(big, 256)};
    assert_false(sl_ident_encode(&b, &huge));

    /* Equality compares kind and value, never a number against a name. */
    sl_ident_t one_again = sl_ident_number(1), two = sl_ident_number(2);
    sl_ident_t t_again = sl_ident_name("t"), u = sl_ident_name("u"), tt = sl_ident_name("tt");
    sl_ident_t one_text = sl_ident_name("1");
    assert_true(sl_ident_eq(&one, &one_again));
    assert_false(sl_ident_eq(&one, &two));
    assert_true(sl_ident_eq(&t, &t_again));
    assert_false(sl_ident_eq(&t, &u));
    assert_false(sl_ident_eq(&t, &tt));
    assert_false(sl_ident_eq(&one, &one_text));
    sl_buf_free(&b);
}

static void test_consumer(void **state)
{
    (void)state;
    any_t v;
    assert_true(decode_hex(dec_consumer, "01 01 04 07 00 00 00", &v));
    assert_int_equal(v.consumer.kind, SL_CONSUMER_SINGLE);
    assert_int_equal(v.consumer.id.number, 7);
    assert_true(decode_hex(dec_consumer, "02 02 02 67 31", &v));
    assert_int_equal(v.consumer.kind, SL_CONSUMER_GROUP);
    assert_span_str(v.consumer.id.name, "g1");
    check_truncations(dec_consumer, "01 01 04 07 00 00 00");
    check_truncations(dec_consumer, "02 02 02 67 31");
    assert_false(decode_hex(dec_consumer, "00 01 04 07 00 00 00", &v));
    assert_false(decode_hex(dec_consumer, "03 01 04 07 00 00 00", &v));
    assert_false(decode_hex(dec_consumer, "01 04 04 07 00 00 00", &v)); /* bad ident kind */
    assert_false(decode_hex(dec_consumer, "02 02 01 ff", &v));

    sl_buf_t b;
    sl_buf_init(&b, 0);
    sl_consumer_t c = {.kind = SL_CONSUMER_GROUP, .id = sl_ident_name("g1")};
    assert_true(sl_consumer_encode(&b, &c));
    assert_encoded(&b, "02 02 02 67 31");
    c.kind = 0;
    assert_false(sl_consumer_encode(&b, &c));
    c.kind = 3;
    assert_false(sl_consumer_encode(&b, &c));
    sl_buf_free(&b);
}

/* --- fixed-size primitives ---------------------------------------------------------- */

static void test_opt_partition(void **state)
{
    (void)state;
    any_t v;
    /* Only flag 1 means present; any other flag is absent and the id ignored. */
    static const struct {
        const char *hex;
        bool present;
        uint32_t id;
    } cases[] = {
        {"00 00 00 00 00", false, 0}, {"01 05 00 00 00", true, 5},
        {"00 05 00 00 00", false, 0}, {"02 05 00 00 00", false, 0},
        {"ff ff ff ff ff", false, 0}, {"01 ff ff ff ff", true, 0xffffffffu},
    };
    for (size_t i = 0; i < SL_ARRAY_LEN(cases); i++) {
        assert_true(decode_hex(dec_opt_partition, cases[i].hex, &v));
        assert_int_equal(v.opt.present, cases[i].present);
        assert_int_equal(v.opt.id, cases[i].id);
    }
    check_truncations(dec_opt_partition, "01 05 00 00 00");
    check_truncations(dec_opt_partition, "00 00 00 00 00");

    sl_buf_t b;
    sl_buf_init(&b, 0);
    assert_true(sl_opt_partition_encode(&b, (sl_opt_partition_t){.present = true, .id = 3}));
    assert_true(sl_opt_partition_encode(&b, (sl_opt_partition_t){.present = false, .id = 9}));
    assert_encoded(&b, "01 03 00 00 00  00 00 00 00 00");
    sl_buf_free(&b);
}

static void test_partitioning(void **state)
{
    (void)state;
    any_t v;
    assert_true(decode_hex(dec_partitioning, "01 00", &v));
    assert_int_equal(v.part.kind, SL_PARTITIONING_BALANCED);
    assert_true(decode_hex(dec_partitioning, "02 04 01 00 00 00", &v));
    assert_int_equal(v.part.kind, SL_PARTITIONING_PARTITION_ID);
    assert_int_equal(v.part.partition_id, 1);
    /* Keys are raw bytes: not required to be UTF-8. */
    assert_true(decode_hex(dec_partitioning, "03 03 ff fe 00", &v));
    assert_int_equal(v.part.kind, SL_PARTITIONING_MESSAGES_KEY);
    assert_int_equal(v.part.key.len, 3);
    assert_int_equal(v.part.key.ptr[0], 0xff);

    check_truncations(dec_partitioning, "01 00");
    check_truncations(dec_partitioning, "02 04 01 00 00 00");
    check_truncations(dec_partitioning, "03 03 6b 65 79");
    static const char *const bad[] = {
        "01 01 00",       /* Balanced with length 1 */
        "02 03 01 00 00", /* PartitionId length 3 */
        "02 05 01 00 00 00 00",
        "02 00",
        "03 00", /* key length 0 */
        "00 00", /* kind 0 */
        "04 00", /* kind 4 */
        "ff 04 01 00 00 00",
    };
    for (size_t i = 0; i < SL_ARRAY_LEN(bad); i++)
        if (decode_hex(dec_partitioning, bad[i], &v))
            fail_msg("partitioning '%s' accepted", bad[i]);

    sl_buf_t b;
    sl_buf_init(&b, 0);
    sl_partitioning_t bal = {.kind = SL_PARTITIONING_BALANCED};
    sl_partitioning_t pid = {.kind = SL_PARTITIONING_PARTITION_ID, .partition_id = 1};
    sl_partitioning_t key = {.kind = SL_PARTITIONING_MESSAGES_KEY, .key = sl_span_str("key")};
    assert_true(sl_partitioning_encode(&b, &bal));
    assert_true(sl_partitioning_encode(&b, &pid));
    assert_true(sl_partitioning_encode(&b, &key));
    assert_encoded(&b, "01 00  02 04 01 00 00 00  03 03 6b 65 79");
    char big[256];
    memset(big, 'k', sizeof(big));
    sl_partitioning_t bad_key = {.kind = SL_PARTITIONING_MESSAGES_KEY, .key = sl_span(big, 0)};
    assert_false(sl_partitioning_encode(&b, &bad_key));
    bad_key.key = sl_span(big, 256);
    assert_false(sl_partitioning_encode(&b, &bad_key));
    bad_key.key = sl_span(big, 255);
    assert_true(sl_partitioning_encode(&b, &bad_key));
    sl_partitioning_t bad_kind = {.kind = 4};
    assert_false(sl_partitioning_encode(&b, &bad_kind));
    bad_kind.kind = 0;
    assert_false(sl_partitioning_encode(&b, &bad_kind));
    sl_buf_free(&b);
}

static void test_strategy_and_ack(void **state)
{
    (void)state;
    any_t v;
    for (uint8_t k = 1; k <= 5; k++) {
        char hex[64];
        snprintf(hex, sizeof(hex), "%02x 2a 00 00 00 00 00 00 80", k);
        assert_true(decode_hex(dec_strategy, hex, &v));
        assert_int_equal(v.strategy.kind, k);
        assert_int_equal(v.strategy.value, 0x800000000000002aull);
    }
    check_truncations(dec_strategy, "01 e8 03 00 00 00 00 00 00");
    assert_false(decode_hex(dec_strategy, "00 00 00 00 00 00 00 00 00", &v));
    assert_false(decode_hex(dec_strategy, "06 00 00 00 00 00 00 00 00", &v));
    assert_false(decode_hex(dec_strategy, "ff 00 00 00 00 00 00 00 00", &v));
    sl_buf_t b;
    sl_buf_init(&b, 0);
    assert_true(sl_strategy_encode(&b, (sl_strategy_t){SL_STRATEGY_OFFSET, 1000}));
    assert_encoded(&b, "01 e8 03 00 00 00 00 00 00");
    assert_false(sl_strategy_encode(&b, (sl_strategy_t){0, 0}));
    assert_false(sl_strategy_encode(&b, (sl_strategy_t){6, 0}));
    sl_buf_free(&b);

    assert_true(decode_hex(dec_ack, "00", &v));
    assert_int_equal(v.ack, SL_ACK_NONE);
    assert_true(decode_hex(dec_ack, "01", &v));
    assert_int_equal(v.ack, SL_ACK_QUORUM);
    assert_false(decode_hex(dec_ack, "02", &v));
    assert_false(decode_hex(dec_ack, "ff", &v));
    check_truncations(dec_ack, "01");
}

/* --- hashing ---------------------------------------------------------------------- */

/* Literal XXH32 (seed 0) values computed with an independent implementation
 * written from the published algorithm (python, outside this repository);
 * "", "a", "abc" and the 39-byte sentence are also the well-known reference
 * values of xxHash and python-xxhash. */
static const struct {
    const char *text;
    uint32_t xxh32;
} xxh32_literals[] = {
    {"", 0x02cc5d05u},
    {"a", 0x550d7456u},
    {"abc", 0x32d153ffu},
    {"workers", 0x8dd857dcu},
    {"orders-consumer", 0x82702c5bu},
    {"Nobody inspects the spammish repetition", 0xe2293b2fu},
};

static void test_consumer_key(void **state)
{
    (void)state;
    for (size_t i = 0; i < SL_ARRAY_LEN(xxh32_literals); i++) {
        const char *s = xxh32_literals[i].text;
        assert_int_equal(sl_xxh32(s, strlen(s), 0), xxh32_literals[i].xxh32);
    }
    /* Numeric ids are used as they are. */
    sl_ident_t n0 = sl_ident_number(0), n7 = sl_ident_number(7);
    sl_ident_t nmax = sl_ident_number(0xffffffffu);
    assert_int_equal(sl_consumer_key(&n0), 0);
    assert_int_equal(sl_consumer_key(&n7), 7);
    assert_int_equal(sl_consumer_key(&nmax), 0xffffffffu);
    /* Names hash their bytes with XXH32, seed 0. */
    sl_ident_t w = sl_ident_name("workers");
    assert_int_equal(sl_consumer_key(&w), sl_xxh32("workers", 7, 0));
    assert_int_equal(sl_consumer_key(&w), 0x8dd857dcu);
    sl_ident_t oc = sl_ident_name("orders-consumer");
    assert_int_equal(sl_consumer_key(&oc), 0x82702c5bu);
    /* A decoded name gives the same key as the literal. */
    size_t n;
    uint8_t *wire = tu_hex("02 07 77 6f 72 6b 65 72 73", &n);
    sl_reader_t r = sl_reader(sl_span(wire, n));
    sl_ident_t d;
    assert_true(sl_ident_decode(&r, &d));
    assert_int_equal(sl_consumer_key(&d), 0x8dd857dcu);
    free(wire);
}

static void test_partitioning_key_index(void **state)
{
    (void)state;
    sl_span_t key = sl_span_str("workers");
    assert_int_equal(sl_partitioning_key_index(key, 1), 0);
    assert_int_equal(sl_partitioning_key_index(key, 3), 0x8dd857dcu % 3);
    assert_int_equal(sl_partitioning_key_index(key, 3), 1);
    assert_int_equal(sl_partitioning_key_index(key, 1000), 724);
    assert_int_equal(sl_partitioning_key_index(key, 0xffffffffu), 0x8dd857dcu);
    const uint8_t raw[] = {0xff, 0xfe, 0x00};
    assert_int_equal(sl_partitioning_key_index(sl_span(raw, 3), 10), 0x835d612du % 10);
    for (uint32_t count = 1; count <= 64; count++)
        assert_true(sl_partitioning_key_index(key, count) < count);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_name),
        cmocka_unit_test(test_str8_and_str32),
        cmocka_unit_test(test_identifier),
        cmocka_unit_test(test_consumer),
        cmocka_unit_test(test_opt_partition),
        cmocka_unit_test(test_partitioning),
        cmocka_unit_test(test_strategy_and_ack),
        cmocka_unit_test(test_consumer_key),
        cmocka_unit_test(test_partitioning_key_index),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
