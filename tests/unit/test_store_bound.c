/* src/store: the journal bound shared by several partitions (sl_journal_bound_t). Journaled
 * batches count with the memory their owner holds, not their length; an append that takes the
 * total past the bound flushes the partition whose unflushed data is oldest first, until the
 * total is within it again; when those flushes fail (a full disk) the append is refused and the
 * total does not grow; closing and purging a partition take its memory out; every acknowledged
 * message stays readable, also after a reopen. */
#include "testutil.h"

#include <errno.h>
#include <malloc.h>

#include "base/log.h"
#include "store/partition_internal.h"
#include "tu_store.h"

#define PARTS 8
/* What the test's "pool" says a frame holds beyond malloc's usable size, so a bound counted by
 * record length would differ from one counted by held memory. */
#define SPARE 8192u

typedef struct bound_fixture {
    sl_journal_bound_t bound;
    tu_part_t parts[PARTS];
    uint64_t released;
} bound_fixture_t;

static void release_frame(void *ctx, void *owner)
{
    bound_fixture_t *f = ctx;
    f->released++;
    free(owner);
}

static size_t held_frame(void *ctx, const void *owner)
{
    (void)ctx;
    return malloc_usable_size((void *)(uintptr_t)owner) + SPARE;
}

/* Opens PARTS partitions sharing one bound of max bytes; the flush gates stay out of the way. */
static bound_fixture_t *fixture_open(uint64_t max)
{
    bound_fixture_t *f = calloc(1, sizeof(*f));
    assert_non_null(f);
    sl_journal_bound_init(&f->bound, max);
    for (int i = 0; i < PARTS; i++) {
        sl_partition_config_t cfg;
        tu_config_small(&cfg);
        cfg.bound = &f->bound;
        cfg.release = release_frame;
        cfg.held = held_frame;
        cfg.release_ctx = f;
        tu_part_init(&f->parts[i], &cfg);
    }
    return f;
}

static void fixture_close(bound_fixture_t *f)
{
    for (int i = 0; i < PARTS; i++)
        tu_part_fini(&f->parts[i]);
    assert_int_equal(f->bound.held, 0);
    assert_int_equal(f->bound.partitions, 0);
    assert_null(f->bound.oldest);
    assert_null(f->bound.newest);
    free(f);
}

/* The bound's books agree with the partitions': the listed ones are exactly those with a
 * journal, their memory adds up to held, and held is within max. */
static void check_books(const bound_fixture_t *f)
{
    uint64_t sum = 0;
    uint32_t with_journal = 0;
    for (int i = 0; i < PARTS; i++) {
        const sl_partition_t *p = f->parts[i].p;
        sum += sl_partition_journal_held(p);
        with_journal += sl_partition_journal_messages(p) > 0;
        assert_true((sl_partition_journal_messages(p) > 0) == (sl_partition_journal_held(p) > 0));
    }
    assert_int_equal(sum, f->bound.held);
    assert_int_equal(with_journal, f->bound.partitions);
    assert_true(f->bound.held <= f->bound.max);
    /* The list, walked both ways: every partition on it has a journal. */
    uint32_t listed = 0;
    const sl_partition_t *last = NULL;
    for (const sl_partition_t *p = f->bound.oldest; p && listed <= PARTS; p = p->bound_newer) {
        assert_true(p->journal_count > 0 && p->bound_listed);
        assert_ptr_equal(p->bound_older, last);
        last = p;
        listed++;
    }
    assert_int_equal(listed, f->bound.partitions);
    assert_ptr_equal(last, f->bound.newest);
}

/* What one batch of count messages of payload bytes will hold once journaled. */
static uint64_t held_of(uint32_t count, size_t payload)
{
    size_t len;
    uint8_t *frame = tu_batch_make(0, count, payload, &len);
    uint64_t held = held_frame(NULL, frame);
    free(frame);
    return held;
}

static void test_held_counts_capacity(void **state)
{
    (void)state;
    bound_fixture_t *f = fixture_open(UINT64_MAX / 2);
    tu_part_t *t = &f->parts[0];
    uint64_t h = held_of(3, 100);
    tu_append(t, 3, 100);
    tu_append(t, 3, 100);
    assert_int_equal(sl_partition_journal_held(t->p), 2 * h);
    assert_true(sl_partition_journal_held(t->p) > sl_partition_journal_bytes(t->p) + 2 * SPARE);
    assert_int_equal(f->bound.held, 2 * h);
    assert_int_equal(f->bound.partitions, 1);
    assert_ptr_equal(f->bound.oldest, t->p);
    assert_int_equal(sl_partition_flush(t->p), 0);
    assert_int_equal(sl_partition_journal_held(t->p), 0);
    assert_int_equal(f->bound.held, 0);
    assert_int_equal(f->bound.partitions, 0);
    assert_int_equal(f->released, 2);
    assert_int_equal(f->bound.early_flushes, 0);
    check_books(f);
    fixture_close(f);
}

/* Room for three batches: the fourth flushes the partition whose data is oldest, and a
 * partition that is appended to again keeps its place (its oldest batch has not moved). */
static void test_oldest_flushed_first(void **state)
{
    (void)state;
    uint64_t h = held_of(4, 200);
    bound_fixture_t *f = fixture_open(3 * h);
    tu_part_t *a = &f->parts[0], *b = &f->parts[1], *c = &f->parts[2], *d = &f->parts[3];
    tu_append(a, 4, 200);
    tu_append(b, 4, 200);
    tu_append(c, 4, 200);
    assert_int_equal(f->bound.early_flushes, 0);
    assert_int_equal(f->bound.held, 3 * h);
    tu_append(d, 4, 200); /* 4h > 3h: a goes to disk */
    assert_int_equal(f->bound.early_flushes, 1);
    assert_int_equal(sl_partition_journal_messages(a->p), 0);
    assert_int_equal(sl_partition_messages(a->p), 4);
    assert_int_equal(f->bound.held, 3 * h);
    assert_ptr_equal(f->bound.oldest, b->p);
    assert_ptr_equal(f->bound.newest, d->p);
    check_books(f);
    /* c again: b is still the oldest, so b goes, not c. */
    tu_append(c, 4, 200);
    assert_int_equal(sl_partition_journal_messages(b->p), 0);
    assert_int_equal(sl_partition_journal_messages(c->p), 8);
    assert_ptr_equal(f->bound.oldest, c->p);
    check_books(f);
    /* c's own oldest batch is now the oldest of all: appending to c flushes c itself, the
     * batch just appended with it (it is on disk when the append returns). */
    tu_append(c, 4, 200);
    assert_int_equal(sl_partition_journal_messages(c->p), 0);
    assert_int_equal(f->bound.held, h);
    assert_ptr_equal(f->bound.oldest, d->p);
    check_books(f);
    for (int i = 0; i < 4; i++) {
        tu_poll_all(&f->parts[i], 3);
        tu_reopen(&f->parts[i]); /* only d had a journal: its batch is lost by design */
    }
    assert_int_equal(sl_partition_messages(d->p), 0);
    d->next_id = 0;
    for (int i = 0; i < 3; i++)
        tu_poll_all(&f->parts[i], 5);
    check_books(f);
    fixture_close(f);
}

/* Many appends of varying sizes over all partitions: the bound holds after every one, and
 * every message is readable afterwards. */
static void test_bound_holds_under_load(void **state)
{
    (void)state;
    uint64_t h = held_of(8, 300);
    bound_fixture_t *f = fixture_open(5 * h);
    uint32_t seed = 12345;
    for (int i = 0; i < 400; i++) {
        seed = seed * 1103515245u + 12345u;
        tu_part_t *t = &f->parts[(seed >> 8) % PARTS];
        uint32_t count = 1 + (seed >> 16) % 8;
        size_t payload = 50 + (seed >> 20) % 500;
        tu_append(t, count, payload);
        check_books(f);
    }
    assert_true(f->bound.early_flushes > 100);
    assert_int_equal(f->bound.refused, 0);
    for (int i = 0; i < PARTS; i++)
        tu_poll_all(&f->parts[i], 9);
    fixture_close(f);
}

/* A batch larger than the whole bound is written through: accepted, nothing kept. */
static void test_batch_larger_than_bound(void **state)
{
    (void)state;
    bound_fixture_t *f = fixture_open(1000);
    tu_append(&f->parts[0], 10, 500);
    assert_int_equal(f->bound.held, 0);
    assert_int_equal(sl_partition_messages(f->parts[0].p), 10);
    assert_int_equal(sl_partition_journal_messages(f->parts[0].p), 0);
    tu_poll_all(&f->parts[0], 4);
    fixture_close(f);
}

/* A full disk: the flushes that would make room fail, so the append is refused (its offsets
 * are handed out again, its buffer stays the caller's) and the total does not grow, however
 * often it is tried; what was acknowledged stays journaled and is written once the disk has
 * room again. */
static void test_full_disk_refuses_without_growing(void **state)
{
    (void)state;
    uint64_t h = held_of(2, 100);
    bound_fixture_t *f = fixture_open(2 * h);
    tu_part_t *a = &f->parts[0], *b = &f->parts[1];
    tu_append(a, 2, 100);
    tu_append(b, 2, 100);
    assert_int_equal(f->bound.held, 2 * h);
    sl_io_fault_t plan = {.calls = SL_IO_MASK_WRITES, .path_contains = ".log", .error = ENOSPC};
    sl_io_fault_arm(&plan);
    for (int i = 0; i < 20; i++) {
        assert_int_equal(tu_try_append(&f->parts[i % 3], 2, 100),
                         -SL_ERR_CANNOT_SAVE_MESSAGES_TO_SEGMENT);
        assert_int_equal(f->bound.held, 2 * h);
        check_books(f);
    }
    assert_int_equal(f->bound.refused, 20);
    sl_io_fault_arm(NULL);
    assert_int_equal(sl_partition_journal_messages(a->p), 2);
    assert_int_equal(sl_partition_journal_messages(b->p), 2);
    assert_int_equal(sl_partition_messages(f->parts[2].p), 0);
    tu_poll_all(a, 1); /* served from memory meanwhile */
    /* Room again: the next append flushes a, the oldest, and is accepted. */
    tu_append(&f->parts[2], 2, 100);
    assert_int_equal(sl_partition_journal_messages(a->p), 0);
    check_books(f);
    for (int i = 0; i < 3; i++)
        assert_int_equal(sl_partition_flush(f->parts[i].p), 0);
    for (int i = 0; i < 3; i++) {
        tu_reopen(&f->parts[i]);
        tu_poll_all(&f->parts[i], 3);
    }
    fixture_close(f);
}

/* Closing a partition (its data deleted) and purging one take their journals' memory out of
 * the bound and the partition off its list. */
static void test_close_and_purge_leave_the_bound(void **state)
{
    (void)state;
    uint64_t h = held_of(2, 100);
    bound_fixture_t *f = fixture_open(10 * h);
    tu_append(&f->parts[0], 2, 100);
    tu_append(&f->parts[1], 2, 100);
    tu_append(&f->parts[2], 2, 100);
    assert_int_equal(f->bound.partitions, 3);
    tu_close(&f->parts[1]); /* the middle of the list */
    assert_int_equal(f->bound.held, 2 * h);
    assert_int_equal(f->bound.partitions, 2);
    assert_ptr_equal(f->bound.oldest, f->parts[0].p);
    assert_ptr_equal(f->bound.newest, f->parts[2].p);
    assert_int_equal(f->released, 1);
    tu_open(&f->parts[1]);
    f->parts[1].next_id = 0;
    assert_int_equal(sl_partition_purge(f->parts[0].p), 0);
    f->parts[0].next_id = 0;
    assert_int_equal(f->bound.held, h);
    assert_ptr_equal(f->bound.oldest, f->parts[2].p);
    assert_ptr_equal(f->bound.newest, f->parts[2].p);
    tu_close(&f->parts[2]); /* the last one */
    assert_int_equal(f->bound.held, 0);
    assert_null(f->bound.oldest);
    tu_open(&f->parts[2]);
    f->parts[2].next_id = 0;
    check_books(f);
    fixture_close(f);
}

int main(void)
{
    sl_log_set_level(SL_LOG_ERROR); /* failed flushes are logged, and expected here */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_held_counts_capacity),
        cmocka_unit_test(test_oldest_flushed_first),
        cmocka_unit_test(test_bound_holds_under_load),
        cmocka_unit_test(test_batch_larger_than_bound),
        cmocka_unit_test(test_full_disk_refuses_without_growing),
        cmocka_unit_test(test_close_and_purge_leave_the_bound),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
