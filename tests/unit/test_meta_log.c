/* src/meta entry, journal and checkpoint files: the Prepare header codec and its checksums,
 * journal.wal append / scan / torn-tail repair / replay / rewrite under injected faults, and the
 * snapshot.bin and superblock.a/.b formats with the superblock read rules of storage.md 6. */
#include "testutil.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sluice/error.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/io.h"
#include "base/log.h"
#include "base/xxh3.h"
#include "meta/checkpoint.h"
#include "meta/entry.h"
#include "meta/journal.h"
#include "tu_meta.h"
#include "tu_tmpdir.h"

typedef struct fixture {
    char dir[PATH_MAX];
    char journal[PATH_MAX];
} fixture_t;

static int setup(void **state)
{
    fixture_t *f = calloc(1, sizeof(*f));
    assert_non_null(f);
    assert_true(tu_tmpdir_make(f->dir, "sluice-metalog"));
    assert_true(tu_path(f->journal, f->dir, SL_META_JOURNAL_FILE));
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture_t *f = *state;
    sl_io_fault_arm(NULL);
    tu_tmpdir_remove(f->dir);
    free(f);
    return 0;
}

/* --- file helpers -------------------------------------------------------------------- */

static uint8_t *read_all(const char *path, size_t *len)
{
    sl_buf_t b;
    sl_buf_init(&b, 0);
    assert_int_equal(sl_io_read_file(path, &b, SIZE_MAX), 0);
    *len = b.len;
    uint8_t *copy = malloc(b.len ? b.len : 1);
    assert_non_null(copy);
    if (b.len)
        memcpy(copy, b.data, b.len);
    sl_buf_free(&b);
    return copy;
}

static void write_all(const char *path, const void *p, size_t len)
{
    FILE *fp = fopen(path, "wb");
    assert_non_null(fp);
    assert_int_equal(fwrite(p, 1, len, fp), len);
    assert_int_equal(fclose(fp), 0);
}

static uint64_t size_of(const char *path)
{
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    return (uint64_t)st.st_size;
}

static bool exists(const char *path)
{
    return access(path, F_OK) == 0;
}

/* Where entry op starts in a journal holding ops 1.. of variant 0. */
static uint64_t offset_of(uint64_t op)
{
    uint64_t at = 0;
    for (uint64_t k = 1; k < op; k++)
        at += SL_META_HEADER_SIZE + tu_entry_body_len(k, 0);
    return at;
}

/* Redirects stderr (the log) into a file; capture_end returns what was written. */
typedef struct capture {
    int saved;
    char path[PATH_MAX];
} capture_t;

static void capture_begin(capture_t *c, const char *dir)
{
    assert_true(tu_path(c->path, dir, "stderr.log"));
    fflush(stderr);
    int fd = open(c->path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    assert_true(fd >= 0);
    c->saved = dup(2);
    assert_true(c->saved >= 0);
    assert_true(dup2(fd, 2) >= 0);
    close(fd);
}

static char *capture_end(capture_t *c)
{
    fflush(stderr);
    dup2(c->saved, 2);
    close(c->saved);
    size_t len;
    uint8_t *text = read_all(c->path, &len);
    char *s = realloc(text, len + 1);
    assert_non_null(s);
    s[len] = '\0';
    unlink(c->path);
    return s;
}

/* --- entry header ------------------------------------------------------------------- */

static void test_entry_header_layout(void **state)
{
    (void)state;
    tu_entry_t t;
    tu_entry_make(&t, 42, 0);
    sl_u128_t parent = {0x1111222233334444ull, 0x5555666677778888ull};
    uint8_t h[SL_META_HEADER_SIZE];
    sl_u128_t seal = sl_meta_header_encode(h, &t.e, parent);
    size_t body_len = t.e.body.len;
    /* Checksums: the seal covers bytes 16..256, the body checksum the body; both widened. */
    assert_int_equal(sl_load_u64(h + 0), sl_xxh3_64(h + 16, 240));
    assert_int_equal(sl_load_u64(h + 8), 0);
    assert_int_equal(seal.lo, sl_load_u64(h + 0));
    assert_int_equal(sl_load_u64(h + 16), sl_xxh3_64(t.body, body_len));
    assert_int_equal(sl_load_u64(h + 24), 0);
    assert_true(sl_all_zero(h + 32, 16)); /* cluster */
    assert_int_equal(sl_load_u32(h + 48), 256 + body_len);
    assert_int_equal(sl_load_u32(h + 52), 0); /* view */
    assert_int_equal(sl_load_u32(h + 56), 0); /* release */
    assert_int_equal(h[60], 6);
    assert_int_equal(h[61], 0);
    assert_true(sl_all_zero(h + 62, 66));
    assert_true(sl_u128_eq(sl_load_u128(h + 128), t.e.client));
    assert_true(sl_u128_eq(sl_load_u128(h + 144), parent));
    assert_true(sl_u128_eq(sl_load_u128(h + 160), t.e.request_checksum));
    assert_int_equal(sl_load_u64(h + 176), 42);
    assert_int_equal(sl_load_u64(h + 184), 41); /* commit = op - 1 */
    assert_int_equal(sl_load_u64(h + 192), t.e.timestamp);
    assert_int_equal(sl_load_u64(h + 200), t.e.request);
    assert_int_equal(h[208], t.e.operation);
    assert_true(sl_all_zero(h + 209, 7));
    assert_int_equal(sl_load_u64(h + 216), 0x8000000000000000ull);
    assert_int_equal(sl_load_u32(h + 224), t.e.user_id);
    assert_true(sl_all_zero(h + 228, 28));

    sl_meta_header_t d;
    assert_int_equal(sl_meta_header_decode(h, &d), 0);
    t.e.body = sl_span(t.body, body_len);
    sl_meta_entry_t got = d.entry;
    assert_null(got.body.ptr);
    assert_int_equal(got.body.len, body_len);
    got.body = sl_span(t.body, body_len);
    tu_assert_entry_equal(&got, &t.e);
    assert_true(sl_u128_eq(d.parent, parent));
    assert_true(sl_u128_eq(d.checksum, seal));
    assert_int_equal(d.commit, 41);
    assert_int_equal(d.size, 256 + body_len);
    assert_true(sl_meta_body_verify(&d, t.e.body));
}

static void test_entry_every_header_bit_flip_is_detected(void **state)
{
    (void)state;
    tu_entry_t t;
    tu_entry_make(&t, 7, 0);
    uint8_t h[SL_META_HEADER_SIZE];
    sl_meta_header_encode(h, &t.e, (sl_u128_t){9, 0});
    sl_meta_header_t d;
    for (size_t bit = 0; bit < SL_META_HEADER_SIZE * 8; bit++) {
        h[bit / 8] ^= (uint8_t)(1u << (bit % 8));
        assert_int_not_equal(sl_meta_header_decode(h, &d), 0);
        h[bit / 8] ^= (uint8_t)(1u << (bit % 8));
    }
    assert_int_equal(sl_meta_header_decode(h, &d), 0);
    /* The body: every bit flip and every wrong length fail verification. */
    uint8_t body[128];
    memcpy(body, t.body, t.e.body.len);
    for (size_t bit = 0; bit < t.e.body.len * 8; bit++) {
        body[bit / 8] ^= (uint8_t)(1u << (bit % 8));
        assert_false(sl_meta_body_verify(&d, sl_span(body, t.e.body.len)));
        body[bit / 8] ^= (uint8_t)(1u << (bit % 8));
    }
    assert_true(sl_meta_body_verify(&d, sl_span(body, t.e.body.len)));
    assert_false(sl_meta_body_verify(&d, sl_span(body, t.e.body.len - 1)));
}

/* Re-seals a header after a test changed a field, so only the field rule can reject it. */
static void reseal(uint8_t *h)
{
    sl_store_u128(h, (sl_u128_t){sl_xxh3_64(h + 16, 240), 0});
}

static void test_entry_field_rules_behind_a_valid_seal(void **state)
{
    (void)state;
    tu_entry_t t;
    tu_entry_make(&t, 5, 0);
    uint8_t good[SL_META_HEADER_SIZE], h[SL_META_HEADER_SIZE];
    sl_meta_header_encode(good, &t.e, (sl_u128_t){0, 0});
    struct {
        size_t at;
        uint8_t value;
    } cases[] = {
        {60, 5},        /* command: a Request, not a Prepare */
        {60, 0},        /* command 0 */
        {56, 1},        /* release */
        {48 + 3, 0x10}, /* size > 64 MiB */
        {216 + 7, 0},   /* group: not the metadata group */
        {62, 1},        /* reserved prefix byte */
        {127, 1},       /* last reserved prefix byte */
        {209, 1},       /* operation padding */
        {215, 1},       /* operation padding */
        {228, 1},       /* reserved tail */
        {255, 1},       /* reserved tail */
    };
    sl_meta_header_t d;
    for (size_t i = 0; i < SL_ARRAY_LEN(cases); i++) {
        memcpy(h, good, sizeof(h));
        h[cases[i].at] = cases[i].value;
        reseal(h);
        assert_int_equal(sl_meta_header_decode(h, &d), -SL_ERR_STATE_FILE_CORRUPTED);
    }
    /* size below a header, op 0, op 2^64 - 1 (no entry could follow it: the next append
     * would wrap to op 0; fuzz_meta_journal found a sealed journal ending there), commit
     * not below op */
    memcpy(h, good, sizeof(h));
    sl_store_u32(h + 48, 255);
    reseal(h);
    assert_int_equal(sl_meta_header_decode(h, &d), -SL_ERR_STATE_FILE_CORRUPTED);
    memcpy(h, good, sizeof(h));
    sl_store_u64(h + 176, 0);
    sl_store_u64(h + 184, 0);
    reseal(h);
    assert_int_equal(sl_meta_header_decode(h, &d), -SL_ERR_STATE_FILE_CORRUPTED);
    memcpy(h, good, sizeof(h));
    sl_store_u64(h + 176, UINT64_MAX);
    sl_store_u64(h + 184, UINT64_MAX - 1);
    reseal(h);
    assert_int_equal(sl_meta_header_decode(h, &d), -SL_ERR_STATE_FILE_CORRUPTED);
    memcpy(h, good, sizeof(h));
    sl_store_u64(h + 176, UINT64_MAX - 1);
    sl_store_u64(h + 184, UINT64_MAX - 2);
    reseal(h);
    assert_int_equal(sl_meta_header_decode(h, &d), 0);
    memcpy(h, good, sizeof(h));
    sl_store_u64(h + 184, 5);
    reseal(h);
    assert_int_equal(sl_meta_header_decode(h, &d), -SL_ERR_STATE_FILE_CORRUPTED);
    /* A flipped seal is a checksum error. */
    memcpy(h, good, sizeof(h));
    h[3] ^= 0x40;
    assert_int_equal(sl_meta_header_decode(h, &d), -SL_ERR_INVALID_STATE_ENTRY_CHECKSUM);
    /* Exactly 64 MiB is allowed. */
    memcpy(h, good, sizeof(h));
    sl_store_u32(h + 48, SL_META_ENTRY_SIZE_MAX);
    reseal(h);
    assert_int_equal(sl_meta_header_decode(h, &d), 0);
    assert_int_equal(d.entry.body.len, SL_META_ENTRY_SIZE_MAX - 256);
}

/* --- journal ---------------------------------------------------------------------------- */

static sl_meta_journal_t *journal_open(const char *dir, sl_meta_journal_info_t *info)
{
    sl_meta_journal_t *j = NULL;
    char err[512] = "";
    int rc = sl_meta_journal_open(&j, dir, info, err, sizeof(err));
    if (rc != 0)
        print_error("journal open: %s\n", err);
    assert_int_equal(rc, 0);
    return j;
}

static void append_range(sl_meta_journal_t *j, uint64_t from, uint64_t to)
{
    for (uint64_t op = from; op <= to; op++) {
        tu_entry_t t;
        tu_entry_make(&t, op, 0);
        assert_int_equal(sl_meta_journal_append(j, &t.e, SL_META_RESERVE_KEEP), 0);
    }
}

static void make_journal(const char *dir, uint64_t n)
{
    sl_meta_journal_info_t info;
    sl_meta_journal_t *j = journal_open(dir, &info);
    append_range(j, 1, n);
    sl_meta_journal_close(j);
}

typedef struct replay_check {
    uint64_t next_op;
    uint64_t count;
    uint64_t stop_at; /* return 99 at this op (0: never) */
} replay_check_t;

static int check_entry(void *ctx, const sl_meta_entry_t *e)
{
    replay_check_t *c = ctx;
    if (c->stop_at && e->op == c->stop_at)
        return 99;
    tu_entry_t want;
    tu_entry_make(&want, c->next_op, 0);
    tu_assert_entry_equal(e, &want.e);
    c->next_op++;
    c->count++;
    return 0;
}

/* Reopens dir and asserts it holds exactly ops first..last of variant 0 and nothing cut. */
static void assert_journal_holds(const char *dir, uint64_t first, uint64_t last)
{
    sl_meta_journal_info_t info;
    sl_meta_journal_t *j = journal_open(dir, &info);
    assert_int_equal(info.torn_bytes, 0);
    assert_int_equal(info.entries, last >= first ? last - first + 1 : 0);
    assert_int_equal(info.first_op, last >= first ? first : 0);
    assert_int_equal(info.last_op, last >= first ? last : 0);
    replay_check_t c = {.next_op = first};
    assert_int_equal(sl_meta_journal_replay(j, 0, check_entry, &c), 0);
    assert_int_equal(c.count, info.entries);
    sl_meta_journal_close(j);
}

static void test_journal_append_reopen_replay(void **state)
{
    fixture_t *f = *state;
    sl_meta_journal_info_t info;
    sl_meta_journal_t *j = journal_open(f->dir, &info);
    assert_int_equal(info.entries, 0);
    assert_int_equal(info.torn_bytes, 0);
    assert_null(info.torn_reason);
    assert_true(exists(f->journal));
    append_range(j, 1, 20);
    assert_int_equal(sl_meta_journal_last_op(j), 20);
    assert_int_equal(sl_meta_journal_size(j), offset_of(21));
    sl_meta_journal_close(j);
    assert_int_equal(size_of(f->journal), offset_of(21));

    j = journal_open(f->dir, &info);
    assert_int_equal(info.entries, 20);
    assert_int_equal(info.first_op, 1);
    assert_int_equal(info.last_op, 20);
    assert_int_equal(info.last_timestamp, 1000000 + 200);
    assert_int_equal(info.size, offset_of(21));
    replay_check_t c = {.next_op = 1};
    assert_int_equal(sl_meta_journal_replay(j, 0, check_entry, &c), 0);
    assert_int_equal(c.count, 20);
    c = (replay_check_t){.next_op = 16};
    assert_int_equal(sl_meta_journal_replay(j, 15, check_entry, &c), 0);
    assert_int_equal(c.count, 5);
    c = (replay_check_t){.next_op = 21};
    assert_int_equal(sl_meta_journal_replay(j, 20, check_entry, &c), 0);
    assert_int_equal(sl_meta_journal_replay(j, 1000, check_entry, &c), 0);
    assert_int_equal(c.count, 0);
    /* A callback's non-zero result stops the replay and comes back. */
    c = (replay_check_t){.next_op = 1, .stop_at = 4};
    assert_int_equal(sl_meta_journal_replay(j, 0, check_entry, &c), 99);
    assert_int_equal(c.count, 3);
    /* Appending continues the chain after a reopen. */
    append_range(j, 21, 22);
    sl_meta_journal_close(j);
    assert_journal_holds(f->dir, 1, 22);
}

/* The last op a journal holds is 2^64 - 2: an entry at 2^64 - 1 would have no successor
 * (the next op wraps to 0), so decoding refuses it and an append of it is refused with the
 * journal left as it was (fuzz_meta_journal found a sealed file ending at 2^64 - 1, whose
 * recovery then asserted on the next append). */
static void test_journal_last_op(void **state)
{
    fixture_t *f = *state;
    sl_meta_journal_info_t info;
    sl_meta_journal_t *j = journal_open(f->dir, &info);
    tu_entry_t t;
    tu_entry_make(&t, UINT64_MAX - 1, 0);
    assert_int_equal(sl_meta_journal_append(j, &t.e, SL_META_RESERVE_KEEP), 0);
    tu_entry_make(&t, UINT64_MAX, 0);
    assert_int_equal(sl_meta_journal_append(j, &t.e, SL_META_RESERVE_KEEP),
                     -SL_ERR_CANNOT_WRITE_TO_FILE);
    sl_meta_journal_close(j);
    j = journal_open(f->dir, &info);
    assert_int_equal(info.entries, 1);
    assert_int_equal(info.last_op, UINT64_MAX - 1);
    assert_int_equal(info.torn_bytes, 0);
    sl_meta_journal_close(j);
}

static void test_journal_empty_body_entries(void **state)
{
    fixture_t *f = *state;
    sl_meta_journal_info_t info;
    sl_meta_journal_t *j = journal_open(f->dir, &info);
    tu_entry_t t;
    tu_entry_make(&t, 1, 0);
    t.e.body = sl_span(NULL, 0);
    assert_int_equal(sl_meta_journal_append(j, &t.e, SL_META_RESERVE_KEEP), 0);
    sl_meta_journal_close(j);
    assert_int_equal(size_of(f->journal), 256);
    j = journal_open(f->dir, &info);
    assert_int_equal(info.entries, 1);
    assert_int_equal(info.torn_bytes, 0);
    sl_meta_journal_close(j);
}

static void test_journal_torn_tail_at_every_offset_of_the_last_entry(void **state)
{
    fixture_t *f = *state;
    make_journal(f->dir, 5);
    size_t len;
    uint8_t *pristine = read_all(f->journal, &len);
    uint64_t start = offset_of(5);
    assert_int_equal(len, offset_of(6));
    for (uint64_t cut = start; cut < len; cut++) {
        write_all(f->journal, pristine, cut);
        sl_meta_journal_info_t info;
        capture_t cap;
        capture_begin(&cap, f->dir);
        sl_meta_journal_t *j = journal_open(f->dir, &info);
        char *log = capture_end(&cap);
        assert_int_equal(info.entries, 4);
        assert_int_equal(info.last_op, 4);
        assert_int_equal(info.torn_bytes, cut - start);
        assert_int_equal(size_of(f->journal), start);
        if (cut == start) {
            assert_null(info.torn_reason);
            assert_string_equal(log, "");
        } else {
            assert_non_null(info.torn_reason);
            char want[128];
            snprintf(want, sizeof(want), "torn tail cut at offset %llu (%llu bytes dropped",
                     (unsigned long long)start, (unsigned long long)(cut - start));
            assert_non_null(strstr(log, want));
            assert_non_null(strstr(log, SL_META_JOURNAL_FILE));
        }
        free(log);
        replay_check_t c = {.next_op = 1};
        assert_int_equal(sl_meta_journal_replay(j, 0, check_entry, &c), 0);
        assert_int_equal(c.count, 4);
        sl_meta_journal_close(j);
    }
    /* After the cut the journal takes op 5 again. */
    sl_meta_journal_info_t info;
    sl_meta_journal_t *j = journal_open(f->dir, &info);
    append_range(j, 5, 6);
    sl_meta_journal_close(j);
    assert_journal_holds(f->dir, 1, 6);
    free(pristine);
}

static void test_journal_bit_flip_in_last_entry_is_a_torn_tail(void **state)
{
    fixture_t *f = *state;
    make_journal(f->dir, 4);
    size_t len;
    uint8_t *pristine = read_all(f->journal, &len);
    uint64_t start = offset_of(4);
    /* One bit per byte of the last entry, header and body, cycling through bit positions. */
    for (uint64_t at = start; at < len; at++) {
        pristine[at] ^= (uint8_t)(1u << (at % 8));
        write_all(f->journal, pristine, len);
        pristine[at] ^= (uint8_t)(1u << (at % 8));
        sl_meta_journal_info_t info;
        sl_meta_journal_t *j = journal_open(f->dir, &info);
        assert_int_equal(info.entries, 3);
        assert_int_equal(info.torn_bytes, len - start);
        assert_non_null(info.torn_reason);
        if (at - start >= SL_META_HEADER_SIZE)
            assert_string_equal(info.torn_reason, "body checksum mismatch");
        sl_meta_journal_close(j);
        assert_int_equal(size_of(f->journal), start);
    }
    free(pristine);
}

static void test_journal_garbage_in_the_middle_stops_the_scan(void **state)
{
    fixture_t *f = *state;
    make_journal(f->dir, 6);
    size_t len;
    uint8_t *pristine = read_all(f->journal, &len);
    /* Garbage over the header of op 3, then in its body only. */
    uint64_t at_list[2] = {offset_of(3) + 100, offset_of(3) + SL_META_HEADER_SIZE + 2};
    for (size_t k = 0; k < 2; k++) {
        uint8_t *bytes = malloc(len);
        assert_non_null(bytes);
        memcpy(bytes, pristine, len);
        memset(bytes + at_list[k], 0xEE, 10);
        write_all(f->journal, bytes, len);
        free(bytes);
        sl_meta_journal_info_t info;
        sl_meta_journal_t *j = journal_open(f->dir, &info);
        assert_int_equal(info.entries, 2);
        assert_int_equal(info.last_op, 2);
        assert_int_equal(info.torn_bytes, len - offset_of(3));
        assert_string_equal(info.torn_reason,
                            k == 0 ? "header checksum mismatch" : "body checksum mismatch");
        assert_int_equal(size_of(f->journal), offset_of(3));
        /* The valid entries after the garbage went with it; the log goes on from op 3. */
        append_range(j, 3, 3);
        sl_meta_journal_close(j);
        assert_journal_holds(f->dir, 1, 3);
    }
    /* Plain zeros (a preallocated or zero-filled tail) stop the scan as well. */
    uint8_t *bytes = calloc(1, len + 300);
    assert_non_null(bytes);
    memcpy(bytes, pristine, len);
    write_all(f->journal, bytes, len + 300);
    free(bytes);
    sl_meta_journal_info_t info;
    sl_meta_journal_t *j = journal_open(f->dir, &info);
    assert_int_equal(info.entries, 6);
    assert_int_equal(info.torn_bytes, 300);
    sl_meta_journal_close(j);
    free(pristine);
}

/* Builds a journal of ops from..to (variant) in a sub directory and returns its bytes. */
static uint8_t *foreign_journal(const fixture_t *f, const char *name, uint64_t from, uint64_t to,
                                uint8_t variant, size_t *len)
{
    char dir[PATH_MAX], path[PATH_MAX];
    assert_true(tu_path(dir, f->dir, name));
    assert_int_equal(mkdir(dir, 0755), 0);
    sl_meta_journal_info_t info;
    sl_meta_journal_t *j = journal_open(dir, &info);
    for (uint64_t op = from; op <= to; op++) {
        tu_entry_t t;
        tu_entry_make(&t, op, variant);
        assert_int_equal(sl_meta_journal_append(j, &t.e, SL_META_RESERVE_KEEP), 0);
    }
    sl_meta_journal_close(j);
    assert_true(tu_path(path, dir, SL_META_JOURNAL_FILE));
    return read_all(path, len);
}

static void test_journal_entries_must_chain(void **state)
{
    fixture_t *f = *state;
    make_journal(f->dir, 3);
    size_t len, other_len;
    uint8_t *mine = read_all(f->journal, &len);
    /* Op 4 of a different history: valid on its own, but its parent is not our op 3. */
    uint8_t *other = foreign_journal(f, "other", 1, 4, 1, &other_len);
    uint64_t other_start = 0;
    for (uint64_t op = 1; op < 4; op++)
        other_start += SL_META_HEADER_SIZE + tu_entry_body_len(op, 1);
    uint8_t *mixed = malloc(len + other_len);
    assert_non_null(mixed);
    memcpy(mixed, mine, len);
    memcpy(mixed + len, other + other_start, other_len - other_start);
    write_all(f->journal, mixed, len + other_len - other_start);
    sl_meta_journal_info_t info;
    sl_meta_journal_t *j = journal_open(f->dir, &info);
    assert_int_equal(info.entries, 3);
    assert_string_equal(info.torn_reason, "parent does not match the previous entry");
    sl_meta_journal_close(j);
    /* An entry whose op skips one is cut too: the journal itself (ops 1..3) + its own op 1. */
    memcpy(mixed + len, mine, SL_META_HEADER_SIZE + tu_entry_body_len(1, 0));
    write_all(f->journal, mixed, len + SL_META_HEADER_SIZE + tu_entry_body_len(1, 0));
    j = journal_open(f->dir, &info);
    assert_int_equal(info.entries, 3);
    assert_string_equal(info.torn_reason, "op does not follow the previous entry");
    sl_meta_journal_close(j);
    free(mixed);
    free(other);
    free(mine);
}

static void test_journal_rewrite_drops_checkpointed_entries(void **state)
{
    fixture_t *f = *state;
    char tmp[PATH_MAX];
    assert_true(tu_path(tmp, f->dir, SL_META_JOURNAL_TMP_FILE));
    sl_meta_journal_info_t info;
    sl_meta_journal_t *j = journal_open(f->dir, &info);
    append_range(j, 1, 10);
    assert_int_equal(sl_meta_journal_rewrite(j, 0), 0); /* nothing covered: no-op */
    assert_int_equal(sl_meta_journal_rewrite(j, 4), 0);
    assert_int_equal(sl_meta_journal_first_op(j), 5);
    assert_int_equal(sl_meta_journal_entries(j), 6);
    assert_int_equal(sl_meta_journal_size(j), offset_of(11) - offset_of(5));
    assert_false(exists(tmp));
    replay_check_t c = {.next_op = 5};
    assert_int_equal(sl_meta_journal_replay(j, 0, check_entry, &c), 0);
    assert_int_equal(c.count, 6);
    c = (replay_check_t){.next_op = 8};
    assert_int_equal(sl_meta_journal_replay(j, 7, check_entry, &c), 0);
    assert_int_equal(c.count, 3);
    append_range(j, 11, 12); /* appends land in the new file */
    sl_meta_journal_close(j);
    assert_journal_holds(f->dir, 5, 12);

    j = journal_open(f->dir, &info);
    assert_int_equal(sl_meta_journal_rewrite(j, 12), 0); /* everything covered */
    assert_int_equal(sl_meta_journal_entries(j), 0);
    assert_int_equal(size_of(f->journal), 0);
    append_range(j, 13, 13);
    sl_meta_journal_close(j);
    assert_journal_holds(f->dir, 13, 13);
    /* A leftover temp file from an interrupted rewrite is removed at open. */
    write_all(tmp, "junk", 4);
    assert_journal_holds(f->dir, 13, 13);
    assert_false(exists(tmp));
}

static void test_journal_rewrite_failures_keep_a_usable_journal(void **state)
{
    fixture_t *f = *state;
    char tmp[PATH_MAX];
    assert_true(tu_path(tmp, f->dir, SL_META_JOURNAL_TMP_FILE));
    sl_meta_journal_info_t info;
    sl_meta_journal_t *j = journal_open(f->dir, &info);
    append_range(j, 1, 6);
    /* Before the rename: the old file stays, nothing changes. */
    uint32_t before[] = {SL_IO_BIT(SL_IO_OPEN), SL_IO_MASK_WRITES, SL_IO_BIT(SL_IO_FSYNC),
                         SL_IO_BIT(SL_IO_RENAME), SL_IO_BIT(SL_IO_PREAD)};
    for (size_t i = 0; i < SL_ARRAY_LEN(before); i++) {
        sl_io_fault_t plan = {.calls = before[i], .error = EIO};
        sl_io_fault_arm(&plan);
        assert_true(sl_meta_journal_rewrite(j, 3) < 0);
        sl_io_fault_arm(NULL);
        assert_int_equal(plan.fired, 1);
        assert_int_equal(sl_meta_journal_entries(j), 6);
        assert_false(exists(tmp));
    }
    /* After the rename: the new file is in use; appends first make its name durable. */
    sl_io_fault_t plan = {.calls = SL_IO_BIT(SL_IO_FSYNC_DIR), .error = EIO};
    sl_io_fault_arm(&plan);
    assert_int_equal(sl_meta_journal_rewrite(j, 3), -SL_ERR_CANNOT_SYNC_FILE);
    assert_int_equal(sl_meta_journal_first_op(j), 4);
    tu_entry_t t;
    tu_entry_make(&t, 7, 0);
    assert_int_equal(sl_meta_journal_append(j, &t.e, SL_META_RESERVE_KEEP),
                     -SL_ERR_CANNOT_SYNC_FILE);
    sl_io_fault_arm(NULL);
    assert_int_equal(sl_meta_journal_append(j, &t.e, SL_META_RESERVE_KEEP), 0);
    sl_meta_journal_close(j);
    assert_journal_holds(f->dir, 4, 7);
}

static void test_journal_append_failures_leave_no_trace(void **state)
{
    fixture_t *f = *state;
    sl_meta_journal_info_t info;
    sl_meta_journal_t *j = journal_open(f->dir, &info);
    append_range(j, 1, 3);
    uint64_t end = offset_of(4);
    tu_entry_t bad;
    tu_entry_make(&bad, 4, 1);
    struct {
        sl_io_fault_t plan;
        int want;
    } cases[] = {
        {{.calls = SL_IO_MASK_WRITES, .count = 1, .error = ENOSPC}, -SL_ERR_CANNOT_WRITE_TO_FILE},
        {{.calls = SL_IO_MASK_WRITES, .count = 1, .error = EIO}, -SL_ERR_CANNOT_WRITE_TO_FILE},
        {{.calls = SL_IO_MASK_WRITES, .short_len = 50, .error = ENOSPC},
         -SL_ERR_CANNOT_WRITE_TO_FILE},
        {{.calls = SL_IO_BIT(SL_IO_FDATASYNC), .count = 1, .error = EIO}, -SL_ERR_CANNOT_SYNC_FILE},
    };
    for (size_t i = 0; i < SL_ARRAY_LEN(cases); i++) {
        sl_io_fault_arm(&cases[i].plan);
        assert_int_equal(sl_meta_journal_append(j, &bad.e, SL_META_RESERVE_KEEP), cases[i].want);
        sl_io_fault_arm(NULL);
        assert_int_equal(sl_meta_journal_last_op(j), 3);
        assert_int_equal(sl_meta_journal_size(j), end);
        assert_int_equal(size_of(f->journal), end); /* the partial bytes were cut at once */
    }
    /* A torn write whose cut fails too: the next append cuts first. */
    sl_io_fault_t plan = {
        .calls = SL_IO_MASK_WRITES | SL_IO_BIT(SL_IO_FTRUNCATE), .short_len = 50, .error = ENOSPC};
    sl_io_fault_arm(&plan);
    assert_int_equal(sl_meta_journal_append(j, &bad.e, SL_META_RESERVE_KEEP),
                     -SL_ERR_CANNOT_WRITE_TO_FILE);
    sl_io_fault_arm(NULL);
    assert_int_equal(size_of(f->journal), end + 50);
    append_range(j, 4, 5); /* variant 0 this time */
    sl_meta_journal_close(j);
    assert_int_equal(size_of(f->journal), offset_of(6));
    assert_journal_holds(f->dir, 1, 5);
}

static void test_journal_open_errors(void **state)
{
    fixture_t *f = *state;
    make_journal(f->dir, 2);
    char err[512] = "";
    sl_meta_journal_t *j = NULL;
    sl_meta_journal_info_t info;
    sl_io_fault_t plan = {.calls = SL_IO_BIT(SL_IO_PREAD), .error = EIO};
    sl_io_fault_arm(&plan);
    /* A read error is not a torn tail: nothing is cut and open fails. */
    assert_int_equal(sl_meta_journal_open(&j, f->dir, &info, err, sizeof(err)),
                     -SL_ERR_CANNOT_READ_FILE);
    sl_io_fault_arm(NULL);
    assert_null(j);
    assert_non_null(strstr(err, "cannot read"));
    assert_int_equal(size_of(f->journal), offset_of(3));
    char missing[PATH_MAX];
    assert_true(tu_path(missing, f->dir, "no/such"));
    assert_int_equal(sl_meta_journal_open(&j, missing, &info, err, sizeof(err)),
                     -SL_ERR_CANNOT_READ_FILE);
    assert_non_null(strstr(err, "cannot open"));
}

/* --- snapshot.bin ------------------------------------------------------------------------ */

static void test_snapshot_file_format_and_checks(void **state)
{
    fixture_t *f = *state;
    char path[PATH_MAX], tmp[PATH_MAX], err[512];
    assert_true(tu_path(path, f->dir, SL_META_SNAPSHOT_FILE));
    assert_true(tu_path(tmp, f->dir, SL_META_SNAPSHOT_TMP_FILE));
    sl_buf_t state_bytes;
    sl_buf_init(&state_bytes, 0);
    sl_u128_t checksum, got_checksum;
    assert_int_equal(sl_meta_snapshot_read(path, &state_bytes, &checksum, err, sizeof(err)),
                     -SL_ERR_STATE_FILE_NOT_FOUND);
    const char *text = "the whole state";
    assert_int_equal(sl_meta_snapshot_write_tmp(f->dir, sl_span_str(text), &checksum), 0);
    assert_int_equal(checksum.lo, sl_xxh3_64(text, strlen(text)));
    assert_int_equal(checksum.hi, 0);
    assert_true(exists(tmp));
    bool renamed = false;
    assert_int_equal(sl_meta_snapshot_install(f->dir, &renamed), 0);
    assert_true(renamed);
    assert_false(exists(tmp));
    size_t len;
    uint8_t *file = read_all(path, &len);
    assert_int_equal(len, strlen(text) + 20);
    const uint8_t magic[4] = {0x50, 0x4e, 0x53, 0x49};
    assert_memory_equal(file + strlen(text), magic, 4);
    assert_int_equal(sl_load_u64(file + strlen(text) + 4), checksum.lo);
    assert_true(sl_all_zero(file + strlen(text) + 12, 8));
    assert_int_equal(sl_meta_snapshot_read(path, &state_bytes, &got_checksum, err, sizeof(err)), 0);
    assert_span_str(sl_buf_span(&state_bytes), text);
    assert_true(sl_u128_eq(got_checksum, checksum));
    /* Every flipped byte, a cut trailer, a short file: refused. */
    for (size_t at = 0; at < len; at++) {
        file[at] ^= 0x01;
        write_all(path, file, len);
        file[at] ^= 0x01;
        assert_int_equal(sl_meta_snapshot_read(path, &state_bytes, &got_checksum, err, sizeof(err)),
                         -SL_ERR_STATE_FILE_CORRUPTED);
        assert_non_null(strstr(err, SL_META_SNAPSHOT_FILE));
    }
    write_all(path, file, len - 1);
    assert_int_equal(sl_meta_snapshot_read(path, &state_bytes, &got_checksum, err, sizeof(err)),
                     -SL_ERR_STATE_FILE_CORRUPTED);
    write_all(path, file, 19);
    assert_int_equal(sl_meta_snapshot_read(path, &state_bytes, &got_checksum, err, sizeof(err)),
                     -SL_ERR_STATE_FILE_CORRUPTED);
    /* An empty state is a valid snapshot of 20 bytes. */
    assert_int_equal(sl_meta_snapshot_write_tmp(f->dir, sl_span(NULL, 0), &checksum), 0);
    assert_int_equal(sl_meta_snapshot_install(f->dir, &renamed), 0);
    assert_int_equal(size_of(path), 20);
    assert_int_equal(sl_meta_snapshot_read(path, &state_bytes, &got_checksum, err, sizeof(err)), 0);
    assert_int_equal(state_bytes.len, 0);
    /* Install without a temp file: the rename fails and nothing is claimed done. */
    assert_int_equal(sl_meta_snapshot_install(f->dir, &renamed), -SL_ERR_CANNOT_OVERWRITE_FILE);
    assert_false(renamed);
    free(file);
    sl_buf_free(&state_bytes);
}

/* --- superblocks ----------------------------------------------------------------------- */

static sl_meta_vsr_state_t sample_vsr(uint64_t checkpoint_op)
{
    return (sl_meta_vsr_state_t){
        .cluster = {0, 0},
        .replica_id = 0,
        .replica_count = 1,
        .view = 3,
        .log_view = 2,
        .commit_max = checkpoint_op + 5,
        .checkpoint_op = checkpoint_op,
        .checkpoint_checksum = {0xABCDEF0123456789ull, 0},
        .offset_frontier = 0,
    };
}

static void assert_vsr_equal(const sl_meta_vsr_state_t *got, const sl_meta_vsr_state_t *want)
{
    assert_true(sl_u128_eq(got->cluster, want->cluster));
    assert_int_equal(got->replica_id, want->replica_id);
    assert_int_equal(got->replica_count, want->replica_count);
    assert_int_equal(got->view, want->view);
    assert_int_equal(got->log_view, want->log_view);
    assert_int_equal(got->commit_max, want->commit_max);
    assert_int_equal(got->checkpoint_op, want->checkpoint_op);
    assert_true(sl_u128_eq(got->checkpoint_checksum, want->checkpoint_checksum));
    assert_int_equal(got->offset_frontier, want->offset_frontier);
}

static void test_superblock_layout(void **state)
{
    (void)state;
    sl_meta_vsr_state_t v = sample_vsr(77);
    v.cluster = (sl_u128_t){0x0102030405060708ull, 0x1112131415161718ull};
    v.replica_id = 2;
    v.replica_count = 3;
    v.offset_frontier = 0x55;
    uint8_t rec[SL_META_SUPERBLOCK_SIZE];
    sl_meta_superblock_encode(rec, 9, &v);
    assert_int_equal(sizeof(rec), 102);
    const uint8_t head[] = {0x4b, 0x4c, 0x42, 0x53, 0x01, 0x00, 0x00, 0x00};
    assert_memory_equal(rec, head, sizeof(head));
    assert_int_equal(sl_load_u64(rec + 8), 9);
    assert_int_equal(sl_load_u64(rec + 16), 0);
    assert_int_equal(sl_load_u32(rec + 24), 66);
    const uint8_t *p = rec + 28;
    assert_true(sl_u128_eq(sl_load_u128(p), v.cluster));
    assert_int_equal(p[16], 2);
    assert_int_equal(p[17], 3);
    assert_int_equal(sl_load_u32(p + 18), 3);
    assert_int_equal(sl_load_u32(p + 22), 2);
    assert_int_equal(sl_load_u64(p + 26), 82);
    assert_int_equal(sl_load_u64(p + 34), 77);
    assert_true(sl_u128_eq(sl_load_u128(p + 42), v.checkpoint_checksum));
    assert_int_equal(sl_load_u64(p + 58), 0x55);
    assert_int_equal(sl_load_u64(rec + 94), sl_xxh3_64(rec, 94));
    uint64_t seq;
    sl_meta_vsr_state_t got;
    const char *why;
    assert_int_equal(sl_meta_superblock_decode(sl_span(rec, sizeof(rec)), &seq, &got, &why), 0);
    assert_int_equal(seq, 9);
    assert_vsr_equal(&got, &v);
}

/* A record with a 58-byte (older) payload: same fields minus offset_frontier. */
static size_t old_form_record(uint8_t *out, uint64_t seq, const sl_meta_vsr_state_t *v)
{
    uint8_t payload[SL_META_VSR_STATE_SIZE];
    sl_meta_vsr_state_encode(payload, v);
    sl_store_u32(out, SL_META_SUPERBLOCK_MAGIC);
    sl_store_u16(out + 4, 1);
    sl_store_u16(out + 6, 0);
    sl_store_u64(out + 8, seq);
    sl_store_u64(out + 16, 0);
    sl_store_u32(out + 24, 58);
    memcpy(out + 28, payload, 58);
    sl_store_u64(out + 86, sl_xxh3_64(out, 86));
    return 94;
}

static void test_superblock_decode_rejections(void **state)
{
    (void)state;
    sl_meta_vsr_state_t v = sample_vsr(10);
    v.offset_frontier = 0;
    uint8_t rec[SL_META_SUPERBLOCK_SIZE + 8];
    uint64_t seq;
    sl_meta_vsr_state_t got;
    const char *why;
    /* Older 58-byte payload: accepted, missing field 0. */
    size_t n = old_form_record(rec, 4, &v);
    assert_int_equal(sl_meta_superblock_decode(sl_span(rec, n), &seq, &got, &why), 0);
    assert_int_equal(seq, 4);
    assert_int_equal(got.offset_frontier, 0);
    assert_int_equal(got.checkpoint_op, 10);

    sl_meta_superblock_encode(rec, 4, &v);
    size_t len = SL_META_SUPERBLOCK_SIZE;
    /* Each flipped bit anywhere. */
    for (size_t bit = 0; bit < len * 8; bit++) {
        rec[bit / 8] ^= (uint8_t)(1u << (bit % 8));
        assert_int_equal(sl_meta_superblock_decode(sl_span(rec, len), &seq, &got, &why),
                         -SL_ERR_STATE_FILE_CORRUPTED);
        assert_non_null(why);
        rec[bit / 8] ^= (uint8_t)(1u << (bit % 8));
    }
    /* Every shorter length, and a longer file. */
    for (size_t cut = 0; cut < len; cut++)
        assert_int_equal(sl_meta_superblock_decode(sl_span(rec, cut), &seq, &got, &why),
                         -SL_ERR_STATE_FILE_CORRUPTED);
    rec[len] = 0;
    assert_int_equal(sl_meta_superblock_decode(sl_span(rec, len + 1), &seq, &got, &why),
                     -SL_ERR_STATE_FILE_CORRUPTED);
    assert_string_equal(why, "file size does not match the payload length");
    /* Re-checksummed but wrong: version 2, payload length 5000, log_view > view, 60-byte VSR. */
    struct {
        size_t at;
        uint32_t value;
        int width;
        const char *why;
    } cases[] = {
        {4, 2, 2, "unknown version"},
        {24, 5000, 4, "payload length over 4096"},
        {28 + 22, 4, 4, "invalid VSR state payload"}, /* log_view 4 > view 3 */
        {0, 0x53424C4C, 4, "bad magic"},
    };
    for (size_t i = 0; i < SL_ARRAY_LEN(cases); i++) {
        sl_meta_superblock_encode(rec, 4, &v);
        if (cases[i].width == 2)
            sl_store_u16(rec + cases[i].at, (uint16_t)cases[i].value);
        else
            sl_store_u32(rec + cases[i].at, cases[i].value);
        sl_store_u64(rec + 94, sl_xxh3_64(rec, 94));
        assert_int_equal(sl_meta_superblock_decode(sl_span(rec, len), &seq, &got, &why),
                         -SL_ERR_STATE_FILE_CORRUPTED);
        assert_string_equal(why, cases[i].why);
    }
    sl_meta_superblock_encode(rec, 4, &v);
    sl_store_u32(rec + 24, 60);
    sl_store_u64(rec + 88, sl_xxh3_64(rec, 88));
    assert_int_equal(sl_meta_superblock_decode(sl_span(rec, 96), &seq, &got, &why),
                     -SL_ERR_STATE_FILE_CORRUPTED);
    assert_string_equal(why, "invalid VSR state payload");
}

typedef enum slot_kind { ABSENT, EMPTY, VALID, CORRUPT } slot_kind_t;

static void put_slot(const fixture_t *f, const char *name, slot_kind_t kind, uint64_t seq)
{
    char path[PATH_MAX];
    assert_true(tu_path(path, f->dir, name));
    unlink(path);
    uint8_t rec[SL_META_SUPERBLOCK_SIZE];
    sl_meta_vsr_state_t v = sample_vsr(seq * 100);
    sl_meta_superblock_encode(rec, seq, &v);
    if (kind == EMPTY)
        write_all(path, rec, 0);
    else if (kind == VALID)
        write_all(path, rec, sizeof(rec));
    else if (kind == CORRUPT) {
        rec[40] ^= 0x08;
        write_all(path, rec, sizeof(rec));
    }
}

static void test_superblock_read_rules(void **state)
{
    fixture_t *f = *state;
    struct {
        slot_kind_t a;
        uint64_t seq_a;
        slot_kind_t b;
        uint64_t seq_b;
        int want_rc;
        int want_slot; /* -1: fresh */
        const char *err_names;
    } rows[] = {
        {VALID, 5, VALID, 6, 0, 1, NULL},
        {VALID, 7, VALID, 6, 0, 0, NULL},
        {VALID, 3, ABSENT, 0, 0, 0, NULL},
        {VALID, 3, EMPTY, 0, 0, 0, NULL},
        {ABSENT, 0, VALID, 4, 0, 1, NULL},
        {EMPTY, 0, VALID, 4, 0, 1, NULL},
        {ABSENT, 0, ABSENT, 0, 0, -1, NULL},
        {EMPTY, 0, ABSENT, 0, 0, -1, NULL},
        {EMPTY, 0, EMPTY, 0, 0, -1, NULL},
        {VALID, 3, CORRUPT, 9, -SL_ERR_STATE_FILE_CORRUPTED, 0, "superblock.b"},
        {CORRUPT, 9, VALID, 3, -SL_ERR_STATE_FILE_CORRUPTED, 0, "superblock.a"},
        {CORRUPT, 1, ABSENT, 0, -SL_ERR_STATE_FILE_CORRUPTED, 0, "superblock.a"},
        {EMPTY, 0, CORRUPT, 1, -SL_ERR_STATE_FILE_CORRUPTED, 0, "superblock.b"},
        {VALID, 3, VALID, 3, -SL_ERR_STATE_FILE_CORRUPTED, 0, "superblock.a"},
    };
    for (size_t i = 0; i < SL_ARRAY_LEN(rows); i++) {
        put_slot(f, SL_META_SUPERBLOCK_A_FILE, rows[i].a, rows[i].seq_a);
        put_slot(f, SL_META_SUPERBLOCK_B_FILE, rows[i].b, rows[i].seq_b);
        sl_meta_superblock_t sb;
        char err[512] = "";
        int rc = sl_meta_superblock_load(f->dir, &sb, err, sizeof(err));
        assert_int_equal(rc, rows[i].want_rc);
        if (rc < 0) {
            assert_non_null(strstr(err, rows[i].err_names));
            assert_non_null(strstr(err, "refusing to boot"));
            continue;
        }
        assert_int_equal(sb.found, rows[i].want_slot >= 0);
        assert_int_equal(sb.slot, rows[i].want_slot);
        uint64_t seq = rows[i].want_slot == 0   ? rows[i].seq_a
                       : rows[i].want_slot == 1 ? rows[i].seq_b
                                                : 0;
        assert_int_equal(sb.sequence, seq);
        assert_int_equal(sb.vsr.checkpoint_op, seq * 100);
    }
}

static void test_superblock_store_ping_pong(void **state)
{
    fixture_t *f = *state;
    sl_meta_superblock_t sb, loaded;
    char err[512];
    assert_int_equal(sl_meta_superblock_load(f->dir, &sb, err, sizeof(err)), 0);
    assert_false(sb.found);
    for (uint64_t n = 1; n <= 5; n++) {
        sl_meta_vsr_state_t v = sample_vsr(n * 10);
        bool renamed = false;
        assert_int_equal(sl_meta_superblock_store(f->dir, &sb, &v, &renamed), 0);
        assert_true(renamed);
        assert_int_equal(sb.sequence, n);
        assert_int_equal(sb.slot, (int)((n - 1) % 2)); /* a, b, a, b, a */
        assert_int_equal(sl_meta_superblock_load(f->dir, &loaded, err, sizeof(err)), 0);
        assert_true(loaded.found);
        assert_int_equal(loaded.slot, sb.slot);
        assert_int_equal(loaded.sequence, n);
        assert_vsr_equal(&loaded.vsr, &v);
    }
    char path[PATH_MAX];
    assert_true(tu_path(path, f->dir, SL_META_SUPERBLOCK_A_FILE));
    assert_int_equal(size_of(path), 102);
    assert_true(tu_path(path, f->dir, "superblock.b.tmp"));
    assert_false(exists(path));
    /* A failed write before the rename changes nothing, on disk or in memory. */
    uint32_t before[] = {SL_IO_BIT(SL_IO_OPEN), SL_IO_MASK_WRITES, SL_IO_BIT(SL_IO_FSYNC),
                         SL_IO_BIT(SL_IO_RENAME)};
    for (size_t i = 0; i < SL_ARRAY_LEN(before); i++) {
        sl_io_fault_t plan = {.calls = before[i], .error = ENOSPC};
        sl_io_fault_arm(&plan);
        sl_meta_vsr_state_t v = sample_vsr(999);
        bool renamed = true;
        assert_true(sl_meta_superblock_store(f->dir, &sb, &v, &renamed) < 0);
        sl_io_fault_arm(NULL);
        assert_false(renamed);
        assert_int_equal(sb.sequence, 5);
        assert_false(exists(path));
        assert_int_equal(sl_meta_superblock_load(f->dir, &loaded, err, sizeof(err)), 0);
        assert_int_equal(loaded.sequence, 5);
    }
    /* A failed directory fsync after the rename: the record is in place and in memory. */
    sl_io_fault_t plan = {.calls = SL_IO_BIT(SL_IO_FSYNC_DIR), .error = EIO};
    sl_io_fault_arm(&plan);
    sl_meta_vsr_state_t v = sample_vsr(600);
    bool renamed = false;
    assert_int_equal(sl_meta_superblock_store(f->dir, &sb, &v, &renamed), -SL_ERR_CANNOT_SYNC_FILE);
    sl_io_fault_arm(NULL);
    assert_true(renamed);
    assert_int_equal(sb.sequence, 6);
    assert_int_equal(sl_meta_superblock_load(f->dir, &loaded, err, sizeof(err)), 0);
    assert_int_equal(loaded.sequence, 6);
    assert_int_equal(loaded.vsr.checkpoint_op, 600);
}

int main(void)
{
    sl_log_set_level(SL_LOG_WARN);
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_entry_header_layout),
        T(test_entry_every_header_bit_flip_is_detected),
        T(test_entry_field_rules_behind_a_valid_seal),
        T(test_journal_append_reopen_replay),
        T(test_journal_last_op),
        T(test_journal_empty_body_entries),
        T(test_journal_torn_tail_at_every_offset_of_the_last_entry),
        T(test_journal_bit_flip_in_last_entry_is_a_torn_tail),
        T(test_journal_garbage_in_the_middle_stops_the_scan),
        T(test_journal_entries_must_chain),
        T(test_journal_rewrite_drops_checkpointed_entries),
        T(test_journal_rewrite_failures_keep_a_usable_journal),
        T(test_journal_append_failures_leave_no_trace),
        T(test_journal_open_errors),
        T(test_snapshot_file_format_and_checks),
        T(test_superblock_layout),
        T(test_superblock_decode_rejections),
        T(test_superblock_read_rules),
        T(test_superblock_store_ping_pong),
    };
#undef T
    return cmocka_run_group_tests(tests, NULL, NULL);
}
