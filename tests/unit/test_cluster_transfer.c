/* The serving side's hashing of a state transfer's segments (server/cluster_transfer.c, the
 * .c included to reach it): a segment hashed in pieces through the kept tail gives the hash
 * of the whole, reads only what was appended since (a changed prefix is not seen again), and
 * starts over for another segment; the tail serves the segment it holds, else the newest. */
#include "testutil.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "server/cluster_transfer.c"
#include "tu_tmpdir.h"

/* A little over three hash chunks, so the pieces cross chunk boundaries. */
#define SEGMENT_BYTES (3u * HASH_CHUNK + 12345u)

static uint8_t *pattern(size_t n, uint32_t seed)
{
    uint8_t *b = malloc(n);
    assert_non_null(b);
    uint32_t x = seed;
    for (size_t i = 0; i < n; i++) {
        x = x * 1664525u + 1013904223u;
        b[i] = (uint8_t)(x >> 24);
    }
    return b;
}

static void write_at(const char *dir, uint64_t start, const uint8_t *bytes, size_t n, off_t at)
{
    char path[PATH_MAX];
    assert_true(sl_segment_path(path, dir, start, SL_SEGMENT_LOG_EXT));
    int fd = open(path, O_WRONLY | O_CREAT, 0600);
    assert_true(fd >= 0);
    assert_int_equal(pwrite(fd, bytes, n, at), (ssize_t)n);
    close(fd);
}

static hash_tail_t *tail_new(void)
{
    hash_tail_t *t = aligned_alloc(_Alignof(hash_tail_t), sizeof(hash_tail_t));
    assert_non_null(t);
    memset(t, 0, sizeof(*t));
    return t;
}

static void test_tail_hashes_what_was_appended(void **state)
{
    (void)state;
    char dir[PATH_MAX];
    assert_true(tu_tmpdir_make(dir, "sl-transfer"));
    uint8_t *bytes = pattern(SEGMENT_BYTES, 7);
    uint8_t *buf = malloc(HASH_CHUNK);
    assert_non_null(buf);
    hash_tail_t *tail = tail_new();
    uint64_t sum = 0;
    const uint64_t first = HASH_CHUNK + 100, second = 2u * HASH_CHUNK + 7;

    /* The segment as first offered, hashed whole; the tail keeps its state. */
    write_at(dir, 0, bytes, first, 0);
    assert_true(hash_segment(dir, 0, first, buf, tail, &sum));
    assert_int_equal(sum, sl_xxh3_64(bytes, first));
    assert_int_equal(tail->start, 0);
    assert_int_equal(tail->len, first);
    /* Without a tail, the same. */
    assert_true(hash_segment(dir, 0, first, buf, NULL, &sum));
    assert_int_equal(sum, sl_xxh3_64(bytes, first));

    /* Grown: the tail goes on from where it was. The prefix changed on disk is not read
     * again (what an append-only segment never does: it shows what was read). */
    write_at(dir, 0, bytes + first, SEGMENT_BYTES - first, (off_t)first);
    uint8_t zero = (uint8_t)~bytes[0];
    write_at(dir, 0, &zero, 1, 0);
    assert_true(hash_segment(dir, 0, second, buf, tail, &sum));
    assert_int_equal(sum, sl_xxh3_64(bytes, second));
    assert_int_equal(tail->len, second);
    assert_true(hash_segment(dir, 0, SEGMENT_BYTES, buf, tail, &sum));
    assert_int_equal(sum, sl_xxh3_64(bytes, SEGMENT_BYTES));
    /* Read whole (no tail), the changed byte counts. */
    assert_true(hash_segment(dir, 0, SEGMENT_BYTES, buf, NULL, &sum));
    assert_int_not_equal(sum, sl_xxh3_64(bytes, SEGMENT_BYTES));

    /* Another segment: the tail starts over on it. */
    uint8_t *other = pattern(5000, 9);
    write_at(dir, 77, other, 5000, 0);
    assert_true(hash_segment(dir, 77, 4000, buf, tail, &sum));
    assert_int_equal(sum, sl_xxh3_64(other, 4000));
    assert_int_equal(tail->start, 77);
    assert_int_equal(tail->len, 4000);
    /* A missing segment: false, and the tail is left as it was. */
    assert_false(hash_segment(dir, 999, 10, buf, tail, &sum));
    assert_int_equal(tail->start, 77);
    assert_int_equal(tail->len, 4000);
    /* A segment shorter than asked: false, and the tail holds nothing of it. */
    assert_false(hash_segment(dir, 77, 6000, buf, tail, &sum));
    assert_int_equal(tail->len, 0);

    free(other);
    free(tail);
    free(buf);
    free(bytes);
    tu_tmpdir_remove(dir);
}

static void test_tail_serves_its_segment_or_the_newest(void **state)
{
    (void)state;
    hash_job_t *job = calloc(1, sizeof(*job) + 3 * sizeof(hash_item_t));
    assert_non_null(job);
    job->count = 3;
    job->items[0] = (hash_item_t){.start = 0, .len = 100, .known = true};
    job->items[1] = (hash_item_t){.start = 100, .len = 100};
    job->items[2] = (hash_item_t){.start = 200, .len = 10};
    /* No tail kept: the newest (hashed whole). */
    assert_int_equal(tail_item(job), 2);
    hash_tail_t *tail = tail_new();
    job->tail = tail;
    /* An empty tail: the newest segment. */
    assert_int_equal(tail_item(job), 2);
    /* A tail of the segment sealed since: that one. */
    tail->start = 100;
    tail->len = 60;
    assert_int_equal(tail_item(job), 1);
    /* A tail longer than what is offered of it (not a prefix): the newest. */
    tail->len = 160;
    assert_int_equal(tail_item(job), 2);
    /* The newest already hashed and no match: none. */
    job->items[2].known = true;
    assert_int_equal(tail_item(job), UINT32_MAX);
    free(tail);
    free(job);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tail_hashes_what_was_appended),
        cmocka_unit_test(test_tail_serves_its_segment_or_the_newest),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
