/* src/base/log: the per-call-site rate limit and the sink. A fake clock drives the
 * windows; the lines written are read back from the in-memory ring. */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"

/* Only moves forward, across tests too, as the monotonic clock does. */
static uint64_t fake_now_us = 1000000;

static uint64_t fake_clock(void)
{
    return fake_now_us;
}

/* Occurrences of needle in the ring's recent lines. */
static int ring_count(const char *needle)
{
    static char buf[SL_LOG_RING_SIZE + 1];
    size_t n = sl_log_recent(buf, SL_LOG_RING_SIZE);
    buf[n] = '\0';
    int count = 0;
    for (const char *p = strstr(buf, needle); p; p = strstr(p + 1, needle))
        count++;
    return count;
}

static int setup(void **state)
{
    (void)state;
    fake_now_us += 100 * SL_LOG_SITE_WINDOW_US;
    sl_log_set_clock(fake_clock);
    sl_log_set_level(SL_LOG_INFO);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    sl_log_limit_set(0, 0);
    sl_log_set_clock(NULL);
    return 0;
}

/* One call site, called n times: the macro's static is the site. */
static void site_a(int n, const char *tag)
{
    for (int i = 0; i < n; i++)
        sl_log_warn("site-a %s line %d", tag, i);
}

static void site_b(int n, const char *tag)
{
    for (int i = 0; i < n; i++)
        sl_log_info("site-b %s line %d", tag, i);
}

static void test_without_the_limit_every_line_is_written(void **state)
{
    (void)state;
    sl_log_limit_set(0, 0);
    site_a(50, "off");
    assert_int_equal(ring_count("site-a off line"), 50);
}

static void test_a_site_writes_its_burst_then_counts(void **state)
{
    (void)state;
    sl_log_limit_set(SL_LOG_SITE_BURST, SL_LOG_SITE_WINDOW_US);
    site_a(100, "burst");
    assert_int_equal(ring_count("site-a burst line"), SL_LOG_SITE_BURST);
    /* The window is not over: the tick owes nothing yet. */
    fake_now_us += SL_LOG_SITE_WINDOW_US / 2;
    sl_log_tick();
    assert_int_equal(ring_count("more lines like \"site-a %s line %d\""), 0);
    /* Over: one line with the count of the rest. */
    fake_now_us += SL_LOG_SITE_WINDOW_US;
    sl_log_tick();
    char summary[128];
    snprintf(summary, sizeof(summary), "%u more lines like \"site-a %%s line %%d\"",
             100 - SL_LOG_SITE_BURST);
    assert_int_equal(ring_count(summary), 1);
    /* Once said, it is not said again. */
    fake_now_us += 2 * SL_LOG_SITE_WINDOW_US;
    sl_log_tick();
    assert_int_equal(ring_count(summary), 1);
    /* And the site has a fresh burst. */
    site_a(SL_LOG_SITE_BURST, "again");
    assert_int_equal(ring_count("site-a again line"), SL_LOG_SITE_BURST);
}

/* Without a tick, the site's next line after its window ended carries the
 * count first. */
static void test_the_next_line_writes_the_count(void **state)
{
    (void)state;
    sl_log_limit_set(SL_LOG_SITE_BURST, SL_LOG_SITE_WINDOW_US);
    site_b(SL_LOG_SITE_BURST + 7, "next");
    fake_now_us += SL_LOG_SITE_WINDOW_US;
    site_b(1, "later");
    assert_int_equal(ring_count("7 more lines like \"site-b %s line %d\""), 1);
    assert_int_equal(ring_count("site-b later line 0"), 1);
}

/* Sites are counted apart: a flood on one does not silence another. */
static void test_sites_are_independent(void **state)
{
    (void)state;
    sl_log_limit_set(SL_LOG_SITE_BURST, SL_LOG_SITE_WINDOW_US);
    fake_now_us += 10 * SL_LOG_SITE_WINDOW_US;
    sl_log_tick();
    site_a(1000, "flood");
    site_b(3, "quiet");
    assert_int_equal(ring_count("site-a flood line"), SL_LOG_SITE_BURST);
    assert_int_equal(ring_count("site-b quiet line"), 3);
}

/* A flood over many windows writes at most a burst and one count per
 * window: the rate is bounded whatever the callers do. */
static void test_a_long_flood_is_bounded_per_window(void **state)
{
    (void)state;
    sl_log_limit_set(SL_LOG_SITE_BURST, SL_LOG_SITE_WINDOW_US);
    fake_now_us += 10 * SL_LOG_SITE_WINDOW_US;
    sl_log_tick();
    enum { WINDOWS = 5, PER_WINDOW = 400 };
    for (int w = 0; w < WINDOWS; w++) {
        site_a(PER_WINDOW, "long");
        fake_now_us += SL_LOG_SITE_WINDOW_US;
        sl_log_tick();
    }
    assert_int_equal(ring_count("site-a long line"), WINDOWS * SL_LOG_SITE_BURST);
    char summary[128];
    snprintf(summary, sizeof(summary), "%u more lines like \"site-a %%s line %%d\"",
             PER_WINDOW - SL_LOG_SITE_BURST);
    assert_int_equal(ring_count(summary), WINDOWS);
}

/* --- the sink ------------------------------------------------------------------------ */

typedef struct seen {
    int count;
    sl_log_level_t level;
    char message[256];
    char file[128];
    int line;
    uint64_t unix_ns;
    bool recurse; /* the sink logs a line itself */
} seen_t;

static void sink_fn(void *ctx, const sl_log_record_t *r)
{
    seen_t *s = ctx;
    s->count++;
    s->level = r->level;
    snprintf(s->message, sizeof(s->message), "%.*s", (int)r->message_len, r->message);
    snprintf(s->file, sizeof(s->file), "%s", r->file);
    s->line = r->line;
    s->unix_ns = r->unix_ns;
    if (s->recurse)
        sl_log_warn("from inside the sink");
}

/* The sink sees each written line once: its message without the time,
 * level or location the stderr line adds, with its level and call site. */
static void test_the_sink_sees_written_lines(void **state)
{
    (void)state;
    seen_t seen = {0};
    sl_log_sink_t sink = {sink_fn, &seen};
    sl_log_set_sink(&sink);
    sl_log_warn("sink %s %d", "warned", 42);
    int line = __LINE__ - 1;
    assert_int_equal(seen.count, 1);
    assert_int_equal(seen.level, SL_LOG_WARN);
    assert_string_equal(seen.message, "sink warned 42");
    assert_non_null(strstr(seen.file, "test_log.c"));
    assert_int_equal(seen.line, line);
    assert_true(seen.unix_ns > 1600000000ull * 1000000000ull);
    /* The stderr line (and the ring) keep their location suffix. */
    assert_int_equal(ring_count("sink warned 42 (test_log.c:"), 1);
    sl_log_info("sink info");
    assert_int_equal(seen.count, 2);
    assert_string_equal(seen.message, "sink info");
    /* A line below the level is not written, so not sunk either. */
    sl_log_debug("sink debug");
    assert_int_equal(seen.count, 2);
    sl_log_set_sink(NULL);
    sl_log_info("sink gone");
    assert_int_equal(seen.count, 2);
}

/* Only lines the rate limit lets through reach the sink; the count line
 * does too. */
static void test_the_sink_is_behind_the_rate_limit(void **state)
{
    (void)state;
    seen_t seen = {0};
    sl_log_sink_t sink = {sink_fn, &seen};
    sl_log_set_sink(&sink);
    sl_log_limit_set(SL_LOG_SITE_BURST, SL_LOG_SITE_WINDOW_US);
    site_a(100, "sunk");
    assert_int_equal(seen.count, SL_LOG_SITE_BURST);
    fake_now_us += 2 * SL_LOG_SITE_WINDOW_US;
    sl_log_tick();
    assert_int_equal(seen.count, SL_LOG_SITE_BURST + 1);
    assert_non_null(strstr(seen.message, "more lines like \"site-a %s line %d\" suppressed"));
    sl_log_set_sink(NULL);
}

/* A line the sink logs itself is written but not handed back to it. */
static void test_the_sink_does_not_recurse(void **state)
{
    (void)state;
    seen_t seen = {.recurse = true};
    sl_log_sink_t sink = {sink_fn, &seen};
    sl_log_set_sink(&sink);
    sl_log_info("outer line");
    sl_log_set_sink(NULL);
    assert_int_equal(seen.count, 1);
    assert_string_equal(seen.message, "outer line");
    assert_int_equal(ring_count("from inside the sink"), 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_without_the_limit_every_line_is_written, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_a_site_writes_its_burst_then_counts, setup, teardown),
        cmocka_unit_test_setup_teardown(test_the_next_line_writes_the_count, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sites_are_independent, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_long_flood_is_bounded_per_window, setup, teardown),
        cmocka_unit_test_setup_teardown(test_the_sink_sees_written_lines, setup, teardown),
        cmocka_unit_test_setup_teardown(test_the_sink_is_behind_the_rate_limit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_the_sink_does_not_recurse, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
