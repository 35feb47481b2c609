/* Process and host figures of GetStats (server/sysinfo.h): every field
 * plausible against what the test reads itself (getpid, uname, gethostname,
 * statvfs), CPU deltas after burning CPU, the semver rule of defaults.md,
 * and the os-release and text helpers (the .c is included to reach them). */
#include "testutil.h"

#include <sluice/error.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "server/sysinfo.c"

static void test_semver(void **state)
{
    (void)state;
    assert_int_equal(sl_sysinfo_semver("0.1.0"), 1000);
    assert_int_equal(sl_sysinfo_semver("0.9.0"), 9000);
    assert_int_equal(sl_sysinfo_semver("0.9.0-edge.5"), 9000);
    assert_int_equal(sl_sysinfo_semver("0.11.0"), 11000);
    assert_int_equal(sl_sysinfo_semver("1.2.3"), 1002003);
    assert_int_equal(sl_sysinfo_semver("1.2.3+build.7"), 1002003);
    assert_int_equal(sl_sysinfo_semver("12.345.678"), 12345678);
    assert_int_equal(sl_sysinfo_semver("0.0.999"), 999);
    assert_int_equal(sl_sysinfo_semver("4294.967.295"), 4294967295u);
    /* Not representable or not of the form. */
    assert_int_equal(sl_sysinfo_semver("4294.967.296"), 0);
    assert_int_equal(sl_sysinfo_semver("4295.0.0"), 0);
    assert_int_equal(sl_sysinfo_semver("99999999999999999999.0.0"), 0);
    assert_int_equal(sl_sysinfo_semver("1.1000.0"), 0);
    assert_int_equal(sl_sysinfo_semver("1.0.1000"), 0);
    assert_int_equal(sl_sysinfo_semver("1.2"), 0);
    assert_int_equal(sl_sysinfo_semver("1.2."), 0);
    assert_int_equal(sl_sysinfo_semver("1.2.3.4"), 0);
    assert_int_equal(sl_sysinfo_semver("1.2.3x"), 0);
    assert_int_equal(sl_sysinfo_semver("v1.2.3"), 0);
    assert_int_equal(sl_sysinfo_semver(" 1.2.3"), 0);
    assert_int_equal(sl_sysinfo_semver("1.-2.3"), 0);
    assert_int_equal(sl_sysinfo_semver(""), 0);
    assert_int_equal(sl_sysinfo_semver(NULL), 0);
}

static void test_init_refuses(void **state)
{
    (void)state;
    sl_sysinfo_t si;
    char *long_path = malloc(SL_SYSINFO_PATH_CAPACITY + 1);
    assert_non_null(long_path);
    memset(long_path, 'a', SL_SYSINFO_PATH_CAPACITY);
    long_path[SL_SYSINFO_PATH_CAPACITY] = '\0';
    assert_int_equal(sl_sysinfo_init(&si, long_path, "0.1.0"), -SL_ERR_INVALID_CONFIGURATION);
    free(long_path);
    char long_version[SL_SYSINFO_TEXT_CAPACITY + 1];
    memset(long_version, '1', SL_SYSINFO_TEXT_CAPACITY);
    long_version[SL_SYSINFO_TEXT_CAPACITY] = '\0';
    assert_int_equal(sl_sysinfo_init(&si, "/tmp", long_version), -SL_ERR_INVALID_CONFIGURATION);
    assert_int_equal(sl_sysinfo_init(&si, "/tmp", "0.1.0\xff"), -SL_ERR_INVALID_CONFIGURATION);
}

static uint64_t proc_self_u64(const char *file, const char *key)
{
    char path[64], text[PROC_TEXT_CAPACITY];
    snprintf(path, sizeof(path), "/proc/self/%s", file);
    uint64_t v = 0;
    if (sl_io_read_text(path, text, sizeof(text)) > 0 && !find_u64(text, key, &v))
        v = 0;
    return v;
}

static void assert_span_cstr(sl_span_t got, const char *want)
{
    assert_span_str(got, want);
}

/* Every field against an independent reading; metadata counts untouched. */
static void test_fields(void **state)
{
    (void)state;
    sl_sysinfo_t si;
    assert_int_equal(sl_sysinfo_init(&si, "/tmp", "0.1.0"), 0);
    sl_get_stats_reply_t r = {.streams_count = 7, .messages_count = 99, .clients_count = 3};
    time_t before = time(NULL);
    sl_sysinfo_fill(&si, &r);
    time_t after = time(NULL);

    assert_int_equal(r.process_id, (uint32_t)getpid());
    assert_true(r.cpu_usage == 0.0f); /* first call */
    assert_true(r.total_cpu_usage >= 0.0f && r.total_cpu_usage <= 100.0f);
    assert_true(r.memory_usage > 0);
    assert_int_equal(r.memory_usage % (uint64_t)sysconf(_SC_PAGESIZE), 0);
    assert_true(r.total_memory > r.available_memory);
    assert_true(r.available_memory > 0);
    assert_true(r.memory_usage < r.total_memory);

    assert_int_equal(r.start_time_us % 1000000u, 0);
    assert_int_equal(r.run_time_us % 1000000u, 0);
    uint64_t start_s = r.start_time_us / 1000000u, run_s = r.run_time_us / 1000000u;
    assert_true(start_s <= (uint64_t)after);
    /* start + run is "now", give or take the rounding of both. */
    assert_true(start_s + run_s + 2 >= (uint64_t)before && start_s + run_s <= (uint64_t)after + 1);

    assert_true(r.read_bytes <= proc_self_u64("io", "read_bytes:"));
    assert_true(r.written_bytes <= proc_self_u64("io", "write_bytes:"));
    assert_true(r.threads_count >= 1);
    assert_int_equal(r.threads_count, proc_self_u64("status", "Threads:"));

    char host[256] = "";
    assert_int_equal(gethostname(host, sizeof(host)), 0);
    assert_true(r.hostname.len > 0);
    assert_span_cstr(r.hostname, host[0] ? host : "unknown_hostname");
    struct utsname u;
    assert_int_equal(uname(&u), 0);
    assert_span_cstr(r.kernel_version, u.release);
    assert_true(r.os_name.len > 0 && r.os_version.len > 0);
    assert_null(memchr(r.os_name.ptr, '"', r.os_name.len));
    assert_span_cstr(r.server_version, "0.1.0");
    assert_int_equal(r.server_semver, 1000);

    struct statvfs st;
    assert_int_equal(statvfs("/tmp", &st), 0);
    assert_true(r.total_disk_space >= r.free_disk_space);
    assert_true(r.free_disk_space > 0);
    assert_int_equal(r.total_disk_space, (uint64_t)st.f_blocks * st.f_frsize);

    /* The server's fields are left alone. */
    assert_int_equal(r.streams_count, 7);
    assert_int_equal(r.messages_count, 99);
    assert_int_equal(r.clients_count, 3);
    sl_sysinfo_destroy(&si);
}

/* The filled reply encodes and decodes back: strings are valid Str32 text. */
static void test_encodes(void **state)
{
    (void)state;
    sl_sysinfo_t si;
    assert_int_equal(sl_sysinfo_init(&si, "/tmp", "0.1.0-dev"), 0);
    sl_get_stats_reply_t r = {0};
    sl_sysinfo_fill(&si, &r);
    sl_buf_t b;
    sl_buf_init(&b, 0);
    assert_int_equal(sl_get_stats_reply_encode(&b, &r), 0);
    sl_arena_t arena;
    sl_arena_init(&arena, 4096, 1u << 20);
    sl_get_stats_reply_t d;
    assert_int_equal(sl_get_stats_reply_decode(sl_buf_span(&b), &arena, &d), 0);
    assert_int_equal(d.process_id, r.process_id);
    assert_int_equal(d.memory_usage, r.memory_usage);
    assert_span_equal(d.hostname, r.hostname);
    assert_span_equal(d.os_name, r.os_name);
    assert_span_equal(d.os_version, r.os_version);
    assert_span_equal(d.kernel_version, r.kernel_version);
    assert_span_str(d.server_version, "0.1.0-dev");
    assert_int_equal(d.server_semver, 1000);
    assert_int_equal(d.free_disk_space, r.free_disk_space);
    sl_arena_free(&arena);
    sl_buf_free(&b);
    sl_sysinfo_destroy(&si);
}

static int64_t thread_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Burns at least `ms` of this thread's CPU time: the loop only ends when
 * the thread's CPU clock says so, whatever the optimiser does to its body. */
static void burn_cpu(int64_t ms)
{
    int64_t start = thread_cpu_ns();
    while (thread_cpu_ns() - start < ms * 1000000)
        continue;
}

/* After burning CPU the process shows a positive share, at most all cores;
 * the host figure stays a percentage. */
static void test_cpu_delta(void **state)
{
    (void)state;
    sl_sysinfo_t si;
    assert_int_equal(sl_sysinfo_init(&si, "/tmp", "0.1.0"), 0);
    sl_get_stats_reply_t r = {0};
    sl_sysinfo_fill(&si, &r);
    assert_true(r.cpu_usage == 0.0f);
    burn_cpu(300);
    sl_sysinfo_fill(&si, &r);
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    /* 300 ms of CPU is 30 ticks at 100 Hz: the delta cannot be zero. */
    assert_true(r.cpu_usage > 0.0f);
    assert_true(r.cpu_usage <= 100.0f * (float)cores);
    assert_true(r.total_cpu_usage >= 0.0f && r.total_cpu_usage <= 100.0f);
    /* A call within a tick of the last repeats the figure instead of dividing
     * by ~0. Whether two calls land within 10 ms is up to the scheduler on a
     * loaded machine: each try burns 20 ms so the first call of the pair
     * computes afresh, and only a pair whose interval, measured around both
     * calls, stayed under 10 ms is checked. One such pair is needed. */
    bool checked = false;
    for (int i = 0; i < 200 && !checked; i++) {
        burn_cpu(20);
        uint64_t t0 = monotonic_ns();
        sl_sysinfo_fill(&si, &r);
        float first = r.cpu_usage;
        sl_sysinfo_fill(&si, &r);
        if (monotonic_ns() - t0 >= 10000000ull)
            continue;
        assert_true(r.cpu_usage == first);
        checked = true;
    }
    assert_true(checked);
    sl_sysinfo_destroy(&si);
}

/* A data directory not created yet reports its nearest existing ancestor's
 * volume; relative paths resolve from the working directory. */
static void test_disk_of_missing_dir(void **state)
{
    (void)state;
    const char *dirs[] = {"/tmp/sl_sysinfo_missing/a/b/", "sl_sysinfo_missing_relative/x", ""};
    for (size_t i = 0; i < SL_ARRAY_LEN(dirs); i++) {
        sl_sysinfo_t si;
        assert_int_equal(sl_sysinfo_init(&si, dirs[i], "0.1.0"), 0);
        sl_get_stats_reply_t r = {0};
        sl_sysinfo_fill(&si, &r);
        assert_true(r.free_disk_space > 0);
        assert_true(r.total_disk_space >= r.free_disk_space);
    }
    /* A path through a regular file (ENOTDIR) falls back to the file. */
    struct statvfs st;
    assert_true(statvfs_nearest("/etc/hostname/x/y", &st));
}

static void test_os_release_parse(void **state)
{
    (void)state;
    const char *text = "PRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\n"
                       "NAME=\"Debian GNU/Linux\"\n"
                       "VERSION_ID='12'\n"
                       "ID=debian\n"
                       "QUOTED=\"say \\\"hi\\\" \\\\ now\"\n"
                       "EMPTY=\n";
    char v[64];
    assert_true(os_release_value(text, "NAME", v, sizeof(v)));
    assert_string_equal(v, "Debian GNU/Linux");
    assert_true(os_release_value(text, "VERSION_ID", v, sizeof(v)));
    assert_string_equal(v, "12");
    assert_true(os_release_value(text, "ID", v, sizeof(v)));
    assert_string_equal(v, "debian");
    assert_true(os_release_value(text, "QUOTED", v, sizeof(v)));
    assert_string_equal(v, "say \"hi\" \\ now");
    assert_true(os_release_value(text, "EMPTY", v, sizeof(v)));
    assert_string_equal(v, "");
    assert_false(os_release_value(text, "VERSION", v, sizeof(v)));
    assert_false(os_release_value(text, "AME", v, sizeof(v)));
    char small[8];
    assert_true(os_release_value(text, "PRETTY_NAME", small, sizeof(small)));
    assert_string_equal(small, "Debian ");
}

static void test_copy_text(void **state)
{
    (void)state;
    char out[6];
    copy_text(out, sizeof(out), "abc", 3, "fb");
    assert_string_equal(out, "abc");
    copy_text(out, sizeof(out), "", 0, "none");
    assert_string_equal(out, "none");
    copy_text(out, sizeof(out), "ab\xff", 3, "bad");
    assert_string_equal(out, "bad");
    /* "abcd" + a 2-byte character would not fit: cut before it, not inside. */
    copy_text(out, sizeof(out), "abcd\xc3\xa9", 6, "x");
    assert_string_equal(out, "abcd");
    copy_text(out, sizeof(out), "abcdefgh", 8, "x");
    assert_string_equal(out, "abcde");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_semver),           cmocka_unit_test(test_init_refuses),
        cmocka_unit_test(test_fields),           cmocka_unit_test(test_encodes),
        cmocka_unit_test(test_cpu_delta),        cmocka_unit_test(test_disk_of_missing_dir),
        cmocka_unit_test(test_os_release_parse), cmocka_unit_test(test_copy_text),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
