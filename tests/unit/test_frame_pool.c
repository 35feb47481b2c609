/* The frame-buffer pool: size classes and their clipped top, small frames
 * left to malloc, reuse of idle buffers, the idle cap, stats, trim, and the
 * guard that stops a buffer given back twice. */
#include "testutil.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "server/frame_pool.h"

#define KIB 1024u
#define MIB (1024u * KIB)

static sl_frame_pool_t *make(uint32_t class_min, uint32_t frame_max, uint64_t idle_max)
{
    sl_frame_pool_t *pool = NULL;
    assert_int_equal(sl_frame_pool_create(class_min, frame_max, idle_max, &pool), 0);
    assert_non_null(pool);
    return pool;
}

static sl_frame_pool_stats_t stats_of(const sl_frame_pool_t *pool)
{
    sl_frame_pool_stats_t st;
    sl_frame_pool_stats(pool, &st);
    return st;
}

/* Takes a buffer and writes every byte of it, so ASan sees it is big enough. */
static uint8_t *get_filled(sl_frame_pool_t *pool, uint32_t size)
{
    uint8_t *f = sl_frame_pool_get(pool, size);
    assert_non_null(f);
    assert_int_equal((uintptr_t)f % 16, 0);
    memset(f, 0xA5, size);
    return f;
}

static void test_classes(void **state)
{
    (void)state;
    /* 16 KiB .. 64 MiB doubles 12 times; the 13th step is clipped so the
     * largest frame, prefix included, fits exactly. */
    sl_frame_pool_t *pool = make(16 * KIB, 64 * MIB, 0);
    sl_frame_pool_stats_t st = stats_of(pool);
    assert_int_equal(st.classes, 14);
    assert_int_equal(sl_frame_pool_class_capacity(pool, 0), 16 * KIB - SL_FRAME_POOL_PREFIX);
    assert_int_equal(sl_frame_pool_class_capacity(pool, 1), 32 * KIB - SL_FRAME_POOL_PREFIX);
    assert_int_equal(sl_frame_pool_class_capacity(pool, 12), 64 * MIB - SL_FRAME_POOL_PREFIX);
    assert_int_equal(sl_frame_pool_class_capacity(pool, 13), 64 * MIB);
    sl_frame_pool_destroy(pool);

    /* class_min is rounded up to a power of two, and never below 1 KiB. */
    pool = make(10000, MIB, 0);
    assert_int_equal(sl_frame_pool_class_capacity(pool, 0), 16 * KIB - SL_FRAME_POOL_PREFIX);
    sl_frame_pool_destroy(pool);
    pool = make(100, 4 * KIB, 0);
    assert_int_equal(stats_of(pool).classes, 4); /* 1, 2, 4 KiB, then 4 KiB + prefix */
    assert_int_equal(sl_frame_pool_class_capacity(pool, 0), KIB - SL_FRAME_POOL_PREFIX);
    assert_int_equal(sl_frame_pool_class_capacity(pool, 2), 4 * KIB - SL_FRAME_POOL_PREFIX);
    assert_int_equal(sl_frame_pool_class_capacity(pool, 3), 4 * KIB);
    sl_frame_pool_destroy(pool);

    /* A largest frame below the smallest class: one class of exactly its size. */
    pool = make(16 * KIB, 300, 0);
    assert_int_equal(stats_of(pool).classes, 1);
    assert_int_equal(sl_frame_pool_class_capacity(pool, 0), 300);
    sl_frame_pool_destroy(pool);
}

static void test_create_refuses(void **state)
{
    (void)state;
    sl_frame_pool_t *pool = NULL;
    assert_int_equal(sl_frame_pool_create(16 * KIB, 0, 0, &pool), -EINVAL);
    assert_int_equal(sl_frame_pool_create(16 * KIB, (1u << 30) + 1, 0, &pool), -EINVAL);
    assert_null(pool);
    assert_int_equal(sl_frame_pool_create(16 * KIB, 1u << 30, 0, &pool), 0);
    assert_int_equal(stats_of(pool).classes, 18);
    sl_frame_pool_destroy(pool);
}

static void test_small_frames_are_not_pooled(void **state)
{
    (void)state;
    sl_frame_pool_t *pool = make(16 * KIB, MIB, 64 * MIB);
    /* Up to half the smallest class (prefix included) is malloc'd as is. */
    uint8_t *a = get_filled(pool, 256);
    uint8_t *b = get_filled(pool, 8 * KIB - SL_FRAME_POOL_PREFIX);
    sl_frame_pool_stats_t st = stats_of(pool);
    assert_int_equal(st.small, 2);
    assert_int_equal(st.misses, 0);
    assert_int_equal(st.out_buffers, 2);
    sl_frame_pool_put(pool, a);
    sl_frame_pool_put(pool, b);
    st = stats_of(pool);
    assert_int_equal(st.idle_buffers, 0);
    assert_int_equal(st.idle_bytes, 0);
    assert_int_equal(st.out_buffers, 0);
    assert_int_equal(st.dropped, 0); /* small ones are not "dropped": never meant to stay */
    /* One byte more goes to the smallest class. */
    uint8_t *c = get_filled(pool, 8 * KIB - SL_FRAME_POOL_PREFIX + 1);
    assert_int_equal(stats_of(pool).misses, 1);
    sl_frame_pool_put(pool, c);
    assert_int_equal(stats_of(pool).idle_bytes, 16 * KIB);
    sl_frame_pool_put(pool, NULL); /* ignored */
    sl_frame_pool_destroy(pool);
}

static void test_reuse(void **state)
{
    (void)state;
    sl_frame_pool_t *pool = make(16 * KIB, 64 * MIB, 64 * MIB);
    /* A 1 MiB SendMessages frame needs the 2 MiB class (1 MiB + 16 does not fit 1 MiB). */
    uint8_t *f = get_filled(pool, MIB);
    sl_frame_pool_put(pool, f);
    sl_frame_pool_stats_t st = stats_of(pool);
    assert_int_equal(st.misses, 1);
    assert_int_equal(st.idle_buffers, 1);
    assert_int_equal(st.idle_bytes, 2 * MIB);
    /* Any size of the same class gets that buffer back. */
    uint8_t *g = get_filled(pool, MIB + 100);
    assert_ptr_equal(g, f);
    st = stats_of(pool);
    assert_int_equal(st.hits, 1);
    assert_int_equal(st.idle_buffers, 0);
    assert_int_equal(st.idle_bytes, 0);
    /* Another class does not: a miss of its own. */
    uint8_t *h = get_filled(pool, MIB - 100);
    assert_ptr_not_equal(h, g);
    assert_int_equal(stats_of(pool).misses, 2);
    /* Last in, first out: the warmest buffer is served first. */
    uint8_t *i = get_filled(pool, MIB + 1);
    sl_frame_pool_put(pool, g);
    sl_frame_pool_put(pool, i);
    assert_ptr_equal(sl_frame_pool_get(pool, MIB + 2), i);
    assert_ptr_equal(sl_frame_pool_get(pool, MIB + 3), g);
    sl_frame_pool_put(pool, g);
    sl_frame_pool_put(pool, i);
    sl_frame_pool_put(pool, h);
    /* The largest frame fits the clipped top class. */
    uint8_t *top = get_filled(pool, 64 * MIB);
    sl_frame_pool_put(pool, top);
    st = stats_of(pool);
    assert_int_equal(st.out_buffers, 0);
    assert_int_equal(st.hits, 3);
    assert_int_equal(st.misses, 4);
    sl_frame_pool_destroy(pool);
}

static void test_idle_cap(void **state)
{
    (void)state;
    /* Room for three 32 KiB buffers. */
    sl_frame_pool_t *pool = make(16 * KIB, MIB, 3 * 32 * KIB);
    uint8_t *f[4];
    for (int i = 0; i < 4; i++)
        f[i] = get_filled(pool, 20 * KIB);
    for (int i = 0; i < 4; i++)
        sl_frame_pool_put(pool, f[i]);
    sl_frame_pool_stats_t st = stats_of(pool);
    assert_int_equal(st.idle_buffers, 3);
    assert_int_equal(st.idle_bytes, 3 * 32 * KIB);
    assert_int_equal(st.dropped, 1);
    /* A 16 KiB buffer does not fit the rest either (0 bytes left). */
    uint8_t *s = get_filled(pool, 10 * KIB);
    sl_frame_pool_put(pool, s);
    assert_int_equal(stats_of(pool).dropped, 2);
    /* A class larger than the whole cap is never kept. */
    uint8_t *big = get_filled(pool, 200 * KIB);
    sl_frame_pool_put(pool, big);
    st = stats_of(pool);
    assert_int_equal(st.dropped, 3);
    assert_true(st.idle_bytes <= st.idle_max);
    /* Trim gives the idle buffers back to the system. */
    sl_frame_pool_trim(pool);
    st = stats_of(pool);
    assert_int_equal(st.idle_buffers, 0);
    assert_int_equal(st.idle_bytes, 0);
    uint8_t *again = get_filled(pool, 20 * KIB);
    assert_int_equal(stats_of(pool).hits, 0);
    sl_frame_pool_trim(pool); /* the buffer that is out stays out */
    assert_int_equal(stats_of(pool).out_buffers, 1);
    sl_frame_pool_put(pool, again);
    sl_frame_pool_destroy(pool);
}

static void test_zero_cap_keeps_nothing(void **state)
{
    (void)state;
    sl_frame_pool_t *pool = make(16 * KIB, MIB, 0);
    for (int i = 0; i < 5; i++)
        sl_frame_pool_put(pool, get_filled(pool, 100 * KIB));
    sl_frame_pool_stats_t st = stats_of(pool);
    assert_int_equal(st.misses, 5);
    assert_int_equal(st.hits, 0);
    assert_int_equal(st.dropped, 5);
    assert_int_equal(st.idle_bytes, 0);
    sl_frame_pool_destroy(pool);
}

/* The partition release hook: ctx is the pool. */
static void test_release_hook(void **state)
{
    (void)state;
    sl_frame_pool_t *pool = make(16 * KIB, MIB, MIB);
    uint8_t *f = get_filled(pool, 64 * KIB);
    void (*release)(void *, void *) = sl_frame_pool_release;
    release(pool, f);
    sl_frame_pool_stats_t st = stats_of(pool);
    assert_int_equal(st.out_buffers, 0);
    assert_int_equal(st.idle_buffers, 1);
    sl_frame_pool_destroy(pool);
}

/* Runs fn in a child; true when it died of SIGABRT (sl_assert). */
static bool aborts(void (*fn)(void))
{
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        /* The assertion's message is expected: keep the test output clean. */
        if (!freopen("/dev/null", "w", stderr))
            _exit(3);
        fn();
        _exit(0);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    return WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT;
}

static void put_twice(void)
{
    sl_frame_pool_t *pool = make(16 * KIB, MIB, MIB);
    uint8_t *f = sl_frame_pool_get(pool, 64 * KIB);
    sl_frame_pool_put(pool, f);
    sl_frame_pool_put(pool, f); /* idle already: the guard word says so */
}

static void destroy_with_buffer_out(void)
{
    sl_frame_pool_t *pool = make(16 * KIB, MIB, MIB);
    (void)sl_frame_pool_get(pool, 64 * KIB);
    sl_frame_pool_destroy(pool);
}

static void put_foreign(void)
{
    sl_frame_pool_t *pool = make(16 * KIB, MIB, MIB);
    uint8_t *f = calloc(1, 64 * KIB);
    sl_frame_pool_put(pool, f + 64); /* inside a buffer, but not one of the pool's */
}

static void test_guards(void **state)
{
    (void)state;
    assert_true(aborts(put_twice));
    assert_true(aborts(destroy_with_buffer_out));
    assert_true(aborts(put_foreign));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_classes),
        cmocka_unit_test(test_create_refuses),
        cmocka_unit_test(test_small_frames_are_not_pooled),
        cmocka_unit_test(test_reuse),
        cmocka_unit_test(test_idle_cap),
        cmocka_unit_test(test_zero_cap_keeps_nothing),
        cmocka_unit_test(test_release_hook),
        cmocka_unit_test(test_guards),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
