/* The frame-buffer pool: quarter-step size classes and their clipped top,
 * small frames left to malloc, what a buffer holds, reuse of idle buffers,
 * the idle cap, memory leaving the process when a buffer is freed, stats,
 * trim, and the guard that stops a buffer given back twice. */
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
    /* 16 KiB .. 64 MiB in quarter steps: 12 doublings of 4 classes, then the
     * top clipped so the largest frame, prefix included, fits exactly. */
    sl_frame_pool_t *pool = make(16 * KIB, 64 * MIB, 0);
    sl_frame_pool_stats_t st = stats_of(pool);
    assert_int_equal(st.classes, 50);
    const uint32_t kib[] = {16, 20, 24, 28, 32, 40, 48, 56, 64, 80};
    for (uint32_t i = 0; i < sizeof(kib) / sizeof(kib[0]); i++)
        assert_int_equal(sl_frame_pool_class_capacity(pool, i),
                         kib[i] * KIB - SL_FRAME_POOL_PREFIX);
    assert_int_equal(sl_frame_pool_class_capacity(pool, 44), 32 * MIB - SL_FRAME_POOL_PREFIX);
    assert_int_equal(sl_frame_pool_class_capacity(pool, 47), 56 * MIB - SL_FRAME_POOL_PREFIX);
    assert_int_equal(sl_frame_pool_class_capacity(pool, 48), 64 * MIB - SL_FRAME_POOL_PREFIX);
    assert_int_equal(sl_frame_pool_class_capacity(pool, 49), 64 * MIB);
    sl_frame_pool_destroy(pool);

    /* class_min is rounded up to a power of two, and never below 1 KiB. */
    pool = make(10000, MIB, 0);
    assert_int_equal(sl_frame_pool_class_capacity(pool, 0), 16 * KIB - SL_FRAME_POOL_PREFIX);
    sl_frame_pool_destroy(pool);
    pool = make(100, 4 * KIB, 0);
    /* 1, 1.25, 1.5, 1.75, 2, 2.5, 3, 3.5, 4 KiB, then 4 KiB + prefix */
    assert_int_equal(stats_of(pool).classes, 10);
    assert_int_equal(sl_frame_pool_class_capacity(pool, 0), KIB - SL_FRAME_POOL_PREFIX);
    assert_int_equal(sl_frame_pool_class_capacity(pool, 1), KIB + KIB / 4 - SL_FRAME_POOL_PREFIX);
    assert_int_equal(sl_frame_pool_class_capacity(pool, 8), 4 * KIB - SL_FRAME_POOL_PREFIX);
    assert_int_equal(sl_frame_pool_class_capacity(pool, 9), 4 * KIB);
    sl_frame_pool_destroy(pool);

    /* A largest frame below the smallest class: one class of exactly its size. */
    pool = make(16 * KIB, 300, 0);
    assert_int_equal(stats_of(pool).classes, 1);
    assert_int_equal(sl_frame_pool_class_capacity(pool, 0), 300);
    sl_frame_pool_destroy(pool);
}

/* Every frame size gets the smallest class that holds it, so its buffer is
 * at most a quarter larger than the frame (prefix included), and what the
 * pool says a buffer holds is that class. */
static void test_quarter_steps_fit(void **state)
{
    (void)state;
    sl_frame_pool_t *pool = make(16 * KIB, 8 * MIB, 0);
    uint32_t checked = 0;
    for (uint64_t size = 8 * KIB; size <= 8 * MIB; size += size / 7 + 1) {
        for (int64_t d = -1; d <= 1; d++) { /* both sides of every step nearby */
            uint32_t n = (uint32_t)((int64_t)size + d);
            if (n > 8 * MIB)
                continue;
            uint8_t *f = get_filled(pool, n);
            uint64_t need = (uint64_t)n + SL_FRAME_POOL_PREFIX;
            size_t held = sl_frame_pool_held(pool, f);
            assert_true(held >= need);
            if (need > 16 * KIB)
                assert_true(held * 4 <= need * 5 + 16 * KIB / 4);
            else if (need > 8 * KIB)
                assert_int_equal(held, 16 * KIB); /* the smallest class */
            else
                assert_int_equal(held, need); /* small: its own size */
            assert_int_equal(stats_of(pool).out_bytes, held);
            sl_frame_pool_put(pool, f);
            assert_int_equal(stats_of(pool).out_bytes, 0);
            checked++;
        }
    }
    assert_true(checked > 100);
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
    assert_int_equal(stats_of(pool).classes, 66);
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
    /* A 1 MiB SendMessages frame needs the 1.25 MiB class (1 MiB + 16 does not fit 1 MiB). */
    uint8_t *f = get_filled(pool, MIB);
    assert_int_equal(sl_frame_pool_held(pool, f), MIB + MIB / 4);
    sl_frame_pool_put(pool, f);
    sl_frame_pool_stats_t st = stats_of(pool);
    assert_int_equal(st.misses, 1);
    assert_int_equal(st.idle_buffers, 1);
    assert_int_equal(st.idle_bytes, MIB + MIB / 4);
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
    /* Room for three 24 KiB buffers (the class of a 20 KiB frame). */
    sl_frame_pool_t *pool = make(16 * KIB, MIB, 3 * 24 * KIB);
    uint8_t *f[4];
    for (int i = 0; i < 4; i++)
        f[i] = get_filled(pool, 20 * KIB);
    for (int i = 0; i < 4; i++)
        sl_frame_pool_put(pool, f[i]);
    sl_frame_pool_stats_t st = stats_of(pool);
    assert_int_equal(st.idle_buffers, 3);
    assert_int_equal(st.idle_bytes, 3 * 24 * KIB);
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

/* This process's resident anonymous memory, in bytes. */
static uint64_t rss_anon(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    assert_non_null(f);
    char line[256];
    unsigned long long kb = 0;
    bool found = false;
    for (int i = 0; i < 200 && !found && fgets(line, sizeof(line), f); i++)
        found = sscanf(line, "RssAnon: %llu kB", &kb) == 1;
    fclose(f);
    assert_true(found);
    return kb * 1024u;
}

#define RETURN_BUFFERS 32

/* Buffers freed beyond the idle cap leave the process at once, even after
 * glibc raised its mmap threshold: freeing a mapped 19 MiB block (what
 * Argon2id does at the first login) makes malloc serve later 1-2 MiB
 * requests from the heap, whose freed chunks stayed resident. */
static void test_freed_buffers_leave_the_process(void **state)
{
    (void)state;
#if defined(__SANITIZE_ADDRESS__)
    skip(); /* buffers are malloc's under ASan, by design */
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
    skip();
#endif
#endif
    uint8_t *argon = malloc(19u * MIB);
    assert_non_null(argon);
    memset(argon, 1, 19u * MIB);
    free(argon);
    sl_frame_pool_t *pool = make(16 * KIB, 64 * MIB, 0);
    uint8_t *f[RETURN_BUFFERS];
    for (int i = 0; i < RETURN_BUFFERS; i++)
        f[i] = get_filled(pool, MIB); /* 1.25 MiB each, all of it touched */
    uint64_t held = rss_anon();
    for (int i = 0; i < RETURN_BUFFERS; i++)
        sl_frame_pool_put(pool, f[i]);
    uint64_t after = rss_anon();
    assert_true(after + RETURN_BUFFERS * MIB <= held);
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
        cmocka_unit_test(test_quarter_steps_fit),
        cmocka_unit_test(test_create_refuses),
        cmocka_unit_test(test_small_frames_are_not_pooled),
        cmocka_unit_test(test_reuse),
        cmocka_unit_test(test_idle_cap),
        cmocka_unit_test(test_zero_cap_keeps_nothing),
        cmocka_unit_test(test_freed_buffers_leave_the_process),
        cmocka_unit_test(test_release_hook),
        cmocka_unit_test(test_guards),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
