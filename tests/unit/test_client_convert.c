/* libsluice conversions (src/client/convert.c), without sockets: topic
 * options into request blocks (options.md golden vector), permission sets
 * both ways (permissions.md example), topic settings from stored blocks,
 * identifiers, and allocation failure. */
#include "test_client_fixtures.h"

#include "wire/perms.h"
#include "wire/tlv.h"
#include "wire/topic_options.h"

/* options.md 1: enforce_fsync = true, segment_size = 1 GiB. */
#define HEX_OPTIONS_GOLDEN                                                                         \
    "02 0d 00 00 00 65 6e 66 6f 72 63 65 5f 66 73 79 "                                             \
    "6e 63 03 01 00 00 00 01 02 0c 00 00 00 73 65 67 "                                             \
    "6d 65 6e 74 5f 73 69 7a 65 0c 08 00 00 00 00 00 "                                             \
    "00 40 00 00 00 00"

/* permissions.md 1, Example. */
#define HEX_PERMISSIONS_EXAMPLE                                                                    \
    "00 00 00 00 00 01 00 00 00 00 01 01 00 00 00 00 "                                             \
    "01 00 00 01 00 01 02 00 00 00 00 01 00 00 00 00"

static void test_options_golden_vector(void **state)
{
    (void)state;
    sl_topic_options_t o = {.set = SL_TOPIC_OPT_SEGMENT_SIZE | SL_TOPIC_OPT_ENFORCE_FSYNC,
                            .segment_size = 1u << 30,
                            .enforce_fsync = true};
    sl_buf_t b;
    sl_buf_init(&b, 0);
    assert_int_equal(sl_client_topic_options_encode(&b, &o), 0);
    size_t len;
    uint8_t *want = tu_hex(HEX_OPTIONS_GOLDEN, &len);
    assert_bytes_equal(b.data, b.len, want, len);
    free(want);
    sl_buf_free(&b);
    /* No options: no bytes. */
    sl_buf_init(&b, 0);
    assert_int_equal(sl_client_topic_options_encode(&b, NULL), 0);
    assert_int_equal(b.len, 0);
    sl_buf_free(&b);
}

static void test_all_options_sorted_and_accepted(void **state)
{
    (void)state;
    sl_topic_options_t o = {
        .set = 0xff,
        .compression = SL_TOPIC_COMPRESSION_GZIP,
        .message_expiry_us = 7000000,
        .max_topic_size = 1u << 30,
        .segment_size = 1u << 24,
        .enforce_fsync = true,
        .messages_required_to_save = 64,
        .size_of_messages_required_to_save = 1u << 16,
        .preallocate_segments = true,
    };
    sl_buf_t b;
    sl_buf_init(&b, 0);
    assert_int_equal(sl_client_topic_options_encode(&b, &o), 0);
    uint32_t pairs;
    assert_true(sl_options_validate(sl_buf_span(&b), &pairs));
    assert_int_equal(pairs, 8);
    /* sorted by key bytes, each in its canonical kind */
    sl_tlv_iter_t it = sl_tlv_iter(sl_buf_span(&b));
    sl_tlv_entry_t e, prev = {0};
    for (uint32_t i = 0; sl_tlv_next(&it, &e); i++) {
        if (i > 0) {
            size_t n = prev.key.data.len < e.key.data.len ? prev.key.data.len : e.key.data.len;
            int cmp = memcmp(prev.key.data.ptr, e.key.data.ptr, n);
            assert_true(cmp < 0 || (cmp == 0 && prev.key.data.len < e.key.data.len));
        }
        sl_topic_key_t key;
        assert_true(sl_topic_key_find(e.key.data, &key));
        assert_int_equal(e.value.kind, sl_topic_option_catalog[key].kind);
        prev = e;
    }
    /* The server's resolution reads back every value. */
    sl_topic_config_t cfg;
    assert_int_equal(sl_topic_options_resolve_create(sl_buf_span(&b), 2, &cfg), 0);
    assert_int_equal(cfg.explicit_keys, 0xff);
    assert_int_equal(cfg.compression_algorithm, SL_COMPRESSION_GZIP);
    assert_int_equal(cfg.message_expiry, 7000000);
    assert_int_equal(cfg.max_topic_size, 1u << 30);
    assert_int_equal(cfg.segment_size, 1u << 24);
    assert_true(cfg.enforce_fsync);
    assert_int_equal(cfg.messages_required_to_save, 64);
    assert_int_equal(cfg.size_of_messages_required_to_save, 1u << 16);
    assert_true(cfg.preallocate_segments);
    sl_buf_free(&b);
}

static void test_option_value_forms_and_extras(void **state)
{
    (void)state;
    sl_buf_t b;
    sl_buf_init(&b, 0);
    /* An unknown compression code goes out as Uint8 for the server to judge. */
    sl_topic_options_t odd = {.set = SL_TOPIC_OPT_COMPRESSION, .compression = 9};
    assert_int_equal(sl_client_topic_options_encode(&b, &odd), 0);
    sl_tlv_field_t v;
    assert_true(sl_options_find(sl_buf_span(&b), "compression_algorithm", &v));
    assert_int_equal(v.kind, SL_KIND_UINT8);
    assert_int_equal(v.data.len, 1);
    assert_int_equal(v.data.ptr[0], 9);
    sl_buf_reset(&b);
    /* extras follow the set fields verbatim */
    sl_option_t extra = {.key = "message_expiry",
                         .kind = SL_KIND_STRING,
                         .value = (const uint8_t *)"7 days",
                         .value_len = 6};
    sl_topic_options_t o = {.set = SL_TOPIC_OPT_COMPRESSION,
                            .compression = SL_TOPIC_COMPRESSION_NONE,
                            .extra_count = 1,
                            .extra = &extra};
    assert_int_equal(sl_client_topic_options_encode(&b, &o), 0);
    assert_true(sl_options_find(sl_buf_span(&b), "compression_algorithm", &v));
    assert_int_equal(v.kind, SL_KIND_STRING);
    assert_span_str(v.data, "none");
    assert_true(sl_options_find(sl_buf_span(&b), "message_expiry", &v));
    assert_span_str(v.data, "7 days");
    sl_topic_config_t cfg;
    assert_int_equal(sl_topic_options_resolve_create(sl_buf_span(&b), 1, &cfg), 0);
    assert_int_equal(cfg.message_expiry, 7ull * 24 * 3600 * 1000000);
    /* entries that cannot be encoded */
    sl_option_t bad[] = {
        {.key = NULL, .kind = 2, .value = (const uint8_t *)"x", .value_len = 1},
        {.key = "k", .kind = 2, .value = NULL, .value_len = 1},
        {.key = "k", .kind = 2, .value = (const uint8_t *)"x", .value_len = 0},
        {.key = "", .kind = 2, .value = (const uint8_t *)"x", .value_len = 1},
        {.key = "k", .kind = 2, .value = (const uint8_t *)"x", .value_len = 256},
    };
    for (size_t i = 0; i < SL_ARRAY_LEN(bad); i++) {
        sl_buf_reset(&b);
        sl_topic_options_t x = {.extra_count = 1, .extra = &bad[i]};
        assert_int_equal(sl_client_topic_options_encode(&b, &x), -SL_ERR_INVALID_COMMAND);
    }
    sl_topic_options_t missing = {.extra_count = 2};
    assert_int_equal(sl_client_topic_options_encode(&b, &missing), -SL_ERR_INVALID_COMMAND);
    sl_buf_free(&b);
}

static void test_permissions_example(void **state)
{
    (void)state;
    sl_topic_permission_t topic = {.topic_id = 2, .read_topic = true};
    sl_stream_permission_t stream = {.stream_id = 1,
                                     .read_stream = true,
                                     .poll_messages = true,
                                     .topics_count = 1,
                                     .topics = &topic};
    sl_permission_set_t set = {.read_streams = true, .streams_count = 1, .streams = &stream};
    sl_arena_t arena;
    sl_arena_init(&arena, 1024, 1 << 20);
    sl_client_conv_t cv = {&arena, false};
    sl_buf_t b;
    sl_buf_init(&b, 0);
    assert_int_equal(sl_client_permissions_encode(&b, &cv, &set), 0);
    size_t len;
    uint8_t *want = tu_hex(HEX_PERMISSIONS_EXAMPLE, &len);
    assert_bytes_equal(b.data, b.len, want, len);
    /* and back */
    const sl_permission_set_t *p = sl_client_conv_permissions(&cv, sl_span(want, len));
    assert_false(cv.failed);
    assert_true(p->read_streams);
    assert_false(p->read_topics);
    assert_int_equal(p->streams_count, 1);
    assert_int_equal(p->streams[0].stream_id, 1);
    assert_true(p->streams[0].poll_messages);
    assert_false(p->streams[0].send_messages);
    assert_int_equal(p->streams[0].topics[0].topic_id, 2);
    assert_true(p->streams[0].topics[0].read_topic);
    free(want);
    /* counts without arrays cannot be encoded */
    sl_buf_reset(&b);
    sl_permission_set_t no_streams = {.streams_count = 1};
    assert_int_equal(sl_client_permissions_encode(&b, &cv, &no_streams), -SL_ERR_INVALID_COMMAND);
    sl_stream_permission_t no_topics_stream = {.stream_id = 1, .topics_count = 2};
    sl_permission_set_t no_topics = {.streams_count = 1, .streams = &no_topics_stream};
    assert_int_equal(sl_client_permissions_encode(&b, &cv, &no_topics), -SL_ERR_INVALID_COMMAND);
    sl_buf_free(&b);
    sl_arena_free(&arena);
}

static void test_settings_from_stored_blocks(void **state)
{
    (void)state;
    size_t len;
    uint8_t *bytes = tu_hex(HEX_GET_TOPIC, &len);
    sl_reader_t r = sl_reader(sl_span(bytes, GET_TOPIC_HEADER_LEN));
    sl_topic_header_t h;
    assert_true(sl_topic_header_decode(&r, &h));
    sl_topic_options_t s;
    sl_client_conv_settings(h.options, h.derived_options, &s);
    assert_int_equal(s.set, SL_TOPIC_OPT_SEGMENT_SIZE);
    assert_int_equal(s.segment_size, 128u << 20);
    assert_int_equal(s.compression, SL_TOPIC_COMPRESSION_NONE);
    assert_true(s.message_expiry_us == UINT64_MAX);
    assert_true(s.max_topic_size == UINT64_MAX);
    assert_int_equal(s.messages_required_to_save, 1024);
    assert_false(s.preallocate_segments);
    assert_null(s.extra);
    /* A block that does not validate gives no entries. */
    sl_arena_t arena;
    sl_arena_init(&arena, 1024, 1 << 20);
    sl_client_conv_t cv = {&arena, false};
    const sl_option_t *items = (const sl_option_t *)&items;
    uint32_t count = 9;
    sl_client_conv_options(&cv, sl_span("\x02\x01\x00", 3), &items, &count);
    assert_null(items);
    assert_int_equal(count, 0);
    sl_client_conv_options(&cv, h.derived_options, &items, &count);
    assert_int_equal(count, 7);
    assert_string_equal(items[6].key, "size_of_messages_required_to_save");
    sl_arena_free(&arena);
    free(bytes);
}

static void test_identifiers(void **state)
{
    (void)state;
    sl_ident_t w;
    assert_true(sl_client_ident(sl_id_num(7), &w));
    assert_int_equal(w.kind, SL_IDENT_NUMERIC);
    assert_int_equal(w.number, 7);
    assert_true(sl_client_ident(sl_id_name("orders"), &w));
    assert_int_equal(w.kind, SL_IDENT_STRING);
    assert_span_str(w.name, "orders");
    assert_false(sl_client_ident(sl_id_name(NULL), &w));
    sl_id_t zero = {0};
    assert_false(sl_client_ident(zero, &w));
}

static void test_allocation_failure_is_sticky(void **state)
{
    (void)state;
    sl_arena_t arena;
    sl_arena_init(&arena, 64, 64); /* room for almost nothing */
    sl_client_conv_t cv = {&arena, false};
    char big[200];
    memset(big, 'a', sizeof(big));
    const char *s = sl_client_conv_str(&cv, sl_span(big, sizeof(big)));
    assert_string_equal(s, "");
    assert_true(cv.failed);
    assert_int_equal(sl_client_conv_end(&cv), -SL_ERR_ERROR);
    cv.failed = false;
    assert_null(SL_CONV_NEW(&cv, sl_stream_t, SIZE_MAX / 2));
    assert_true(cv.failed);
    cv.failed = false;
    assert_null(SL_CONV_NEW(&cv, sl_stream_t, 0)); /* nothing asked, nothing failed */
    assert_false(cv.failed);
    sl_arena_free(&arena);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_options_golden_vector),
        cmocka_unit_test(test_all_options_sorted_and_accepted),
        cmocka_unit_test(test_option_value_forms_and_extras),
        cmocka_unit_test(test_permissions_example),
        cmocka_unit_test(test_settings_from_stored_blocks),
        cmocka_unit_test(test_identifiers),
        cmocka_unit_test(test_allocation_failure_is_sticky),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
