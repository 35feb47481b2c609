/* A partition group's checkpoint snapshot and its DeleteSegments record
 * (server/cluster_snapshot.h): what is encoded decodes to the same entries; the snapshots of
 * older versions (no record, no purge generation) still decode; every truncation of a
 * snapshot that carries a record is refused, and so are a record of another version, of too
 * many entries, with bytes to spare, with an entry of no client or no op, or with a client
 * twice. */
#include "testutil.h"

#include <stdlib.h>
#include <string.h>

#include <sluice/error.h>

#include "server/cluster_snapshot.h"

static sl_delete_seen_t entry(uint64_t client, uint64_t request, uint64_t op)
{
    return (sl_delete_seen_t){.client = {client, client ^ 0x5a5a},
                              .request_checksum = {request * 3, request * 7},
                              .request = request,
                              .below = 1000 + op,
                              .generation = 2,
                              .op = op};
}

/* A version 2 snapshot: next 500, two consumer offsets, purge generation 2, the record of
 * seen. */
static void snapshot_put(sl_buf_t *out, const sl_delete_seen_t seen[SL_CLUSTER_DELETES_SEEN])
{
    sl_put_u64(out, 500);
    sl_put_u32(out, 2);
    for (uint32_t i = 0; i < 2; i++) {
        sl_put_u8(out, 1);
        sl_put_u32(out, 10 + i);
        sl_put_u64(out, 100 + i);
    }
    sl_put_u64(out, 2);
    sl_psnapshot_put_deletes(out, seen);
}

static void test_record_round_trip(void **state)
{
    (void)state;
    sl_delete_seen_t seen[SL_CLUSTER_DELETES_SEEN] = {0};
    /* Used entries where replacement left them, free ones between. */
    seen[1] = entry(7, 70, 12);
    seen[4] = entry(9, 3, 40);
    seen[7] = entry(11, 1, 5);
    sl_buf_t b;
    sl_buf_init(&b, 0);
    snapshot_put(&b, seen);
    assert_true(sl_buf_ok(&b));
    assert_int_equal(b.len, 20 + 2 * SL_PSNAPSHOT_OFFSET_SIZE + 2 + 3 * SL_PSNAPSHOT_DELETE_SIZE);

    sl_psnapshot_t s;
    char err[160] = "";
    assert_int_equal(sl_psnapshot_decode(sl_buf_span(&b), &s, err, sizeof(err)), 0);
    assert_int_equal(s.next, 500);
    assert_int_equal(s.offsets_count, 2);
    assert_int_equal(sl_load_u32(s.offsets + SL_PSNAPSHOT_OFFSET_SIZE + 1), 11);
    assert_true(s.has_log_gen && s.has_deletes);
    assert_int_equal(s.log_gen, 2);
    const sl_delete_seen_t want[3] = {seen[1], seen[4], seen[7]};
    for (uint32_t i = 0; i < 3; i++)
        assert_memory_equal(&s.deletes[i], &want[i], sizeof(want[i]));
    for (uint32_t i = 3; i < SL_CLUSTER_DELETES_SEEN; i++)
        assert_true(sl_u128_is_zero(s.deletes[i].client));

    /* A full record and an empty one. */
    for (uint32_t i = 0; i < SL_CLUSTER_DELETES_SEEN; i++)
        seen[i] = entry(100 + i, i, 1 + i);
    sl_buf_reset(&b);
    sl_psnapshot_put_deletes(&b, seen);
    assert_int_equal(b.len, SL_PSNAPSHOT_DELETES_MAX);
    sl_delete_seen_t got[SL_CLUSTER_DELETES_SEEN];
    assert_int_equal(sl_psnapshot_deletes_decode(sl_buf_span(&b), got, err, sizeof(err)), 0);
    assert_memory_equal(got, seen, sizeof(got));
    memset(seen, 0, sizeof(seen));
    sl_buf_reset(&b);
    sl_psnapshot_put_deletes(&b, seen);
    assert_int_equal(b.len, 2);
    assert_int_equal(sl_psnapshot_deletes_decode(sl_buf_span(&b), got, err, sizeof(err)), 0);
    assert_true(sl_u128_is_zero(got[0].client));
    sl_buf_free(&b);
}

/* Versions 0 and 1 (a snapshot of an older server): no record. */
static void test_older_versions(void **state)
{
    (void)state;
    sl_delete_seen_t seen[SL_CLUSTER_DELETES_SEEN] = {0};
    seen[0] = entry(7, 70, 12);
    sl_buf_t b;
    sl_buf_init(&b, 0);
    snapshot_put(&b, seen);
    sl_psnapshot_t s;
    char err[160];
    size_t v1 = 20 + 2 * SL_PSNAPSHOT_OFFSET_SIZE, v0 = v1 - 8;
    assert_int_equal(sl_psnapshot_decode(sl_span(b.data, v1), &s, err, sizeof(err)), 0);
    assert_true(s.has_log_gen);
    assert_false(s.has_deletes);
    assert_true(sl_u128_is_zero(s.deletes[0].client));
    assert_int_equal(sl_psnapshot_decode(sl_span(b.data, v0), &s, err, sizeof(err)), 0);
    assert_false(s.has_log_gen);
    assert_int_equal(s.offsets_count, 2);
    sl_buf_free(&b);
}

/* Every length that is none of the three versions' is refused with a reason. */
static void test_truncated(void **state)
{
    (void)state;
    sl_delete_seen_t seen[SL_CLUSTER_DELETES_SEEN] = {0};
    seen[0] = entry(7, 70, 12);
    seen[1] = entry(8, 2, 20);
    sl_buf_t b;
    sl_buf_init(&b, 0);
    snapshot_put(&b, seen);
    size_t v1 = 20 + 2 * SL_PSNAPSHOT_OFFSET_SIZE, v0 = v1 - 8;
    for (size_t len = 0; len < b.len; len++) {
        if (len == v0 || len == v1)
            continue;
        /* A copy of exactly len bytes, so a read past them is ASan's to see. */
        uint8_t *copy = malloc(len ? len : 1);
        assert_non_null(copy);
        memcpy(copy, b.data, len);
        sl_psnapshot_t s;
        char err[160] = "";
        assert_int_equal(sl_psnapshot_decode(sl_span(copy, len), &s, err, sizeof(err)),
                         -SL_ERR_STATE_FILE_CORRUPTED);
        assert_true(err[0] != '\0');
        free(copy);
    }
    /* A byte too many. */
    sl_put_u8(&b, 0);
    sl_psnapshot_t s;
    char err[160];
    assert_int_equal(sl_psnapshot_decode(sl_buf_span(&b), &s, err, sizeof(err)),
                     -SL_ERR_STATE_FILE_CORRUPTED);
    sl_buf_free(&b);
}

static void assert_record_refused(const uint8_t *bytes, size_t len, const char *reason)
{
    sl_delete_seen_t got[SL_CLUSTER_DELETES_SEEN];
    char err[160] = "";
    assert_int_equal(sl_psnapshot_deletes_decode(sl_span(bytes, len), got, err, sizeof(err)),
                     -SL_ERR_STATE_FILE_CORRUPTED);
    if (strstr(err, reason) == NULL)
        fail_msg("refused as \"%s\", expected it to say \"%s\"", err, reason);
    for (uint32_t i = 0; i < SL_CLUSTER_DELETES_SEEN; i++)
        assert_true(sl_u128_is_zero(got[i].client));
}

static void test_corrupt(void **state)
{
    (void)state;
    sl_delete_seen_t seen[SL_CLUSTER_DELETES_SEEN] = {0};
    seen[0] = entry(7, 70, 12);
    seen[1] = entry(8, 2, 20);
    sl_buf_t b;
    sl_buf_init(&b, 0);
    sl_psnapshot_put_deletes(&b, seen);
    uint8_t *r = b.data;
    size_t len = b.len;
    const size_t entry1 = 2 + SL_PSNAPSHOT_DELETE_SIZE;

    r[0] = 2; /* another version */
    assert_record_refused(r, len, "version 2");
    r[0] = 0;
    assert_record_refused(r, len, "version 0");
    r[0] = SL_PSNAPSHOT_DELETES_VERSION;

    r[1] = SL_CLUSTER_DELETES_SEEN + 1; /* more entries than a replica keeps */
    assert_record_refused(r, len, "entries (at most");
    r[1] = 3; /* more entries than the bytes hold */
    assert_record_refused(r, len, "3 entries in");
    r[1] = 1; /* fewer: bytes to spare */
    assert_record_refused(r, len, "1 entries in");
    r[1] = 2;

    uint8_t keep[16];
    memcpy(keep, r + entry1, 16);
    memset(r + entry1, 0, 16); /* an entry of no client */
    assert_record_refused(r, len, "entry 1 has no client");
    memcpy(r + entry1, r + 2, 16); /* the first entry's client again */
    assert_record_refused(r, len, "same client");
    memcpy(r + entry1, keep, 16);

    memset(r + entry1 + 56, 0, 8); /* no op */
    assert_record_refused(r, len, "entry 1 has no op");
    sl_buf_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_record_round_trip),
        cmocka_unit_test(test_older_versions),
        cmocka_unit_test(test_truncated),
        cmocka_unit_test(test_corrupt),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
