/* GetSnapshot archives (server/diag.h): every produced archive is opened
 * again with libzip from memory to check entry names, compression methods
 * and contents; refusals (unsupported method, frame limit, a snapshot in
 * progress, bad codes); the bounds of the filesystem walk; and the log ring
 * of base/log.h that feeds the ServerLogs entry. */
#define _GNU_SOURCE /* nftw and its FTW_* flags, to remove scratch trees */
#include "testutil.h"

#include <fcntl.h>
#include <ftw.h>
#include <pthread.h>
#include <sluice/error.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zip.h>

#include "base/limits.h"
#include "base/log.h"
#include "server/diag.h"

#ifndef ZIP_CM_ZSTD
#define ZIP_CM_ZSTD 93
#endif

/* The zip method number each protocol compression code must produce. */
static const struct {
    uint8_t code;
    int32_t method;
} methods[] = {
    {SL_SNAPSHOT_STORED, ZIP_CM_STORE}, {SL_SNAPSHOT_DEFLATED, ZIP_CM_DEFLATE},
    {SL_SNAPSHOT_BZIP2, ZIP_CM_BZIP2},  {SL_SNAPSHOT_ZSTD, ZIP_CM_ZSTD},
    {SL_SNAPSHOT_LZMA, ZIP_CM_LZMA},    {SL_SNAPSHOT_XZ, ZIP_CM_XZ},
};

static const char *const all_entries[] = {"filesystem_overview.txt", "process_list.txt",
                                          "resource_usage.txt", "server_logs.txt",
                                          "server_config.txt"};

static const char config_text[] = "[tcp]\nenabled = true\n[root]\npassword = \"<hidden>\"\n";

/* Sends stderr to /dev/null while tests log a lot; returns the saved fd. */
static int quiet_stderr(void)
{
    fflush(stderr);
    int saved = dup(2);
    int null_fd = open("/dev/null", O_WRONLY);
    assert_true(saved >= 0 && null_fd >= 0);
    dup2(null_fd, 2);
    close(null_fd);
    return saved;
}

static void restore_stderr(int saved)
{
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
}

static sl_diag_input_t input_for(const char *data_dir)
{
    return (sl_diag_input_t){
        .data_dir = data_dir,
        .config_text = sl_span(config_text, strlen(config_text)),
        .frame_limit = 0,
    };
}

/* Builds a snapshot that must succeed; the caller frees *b. */
static void snapshot_ok(const sl_diag_input_t *in, uint8_t compression, const uint8_t *types,
                        size_t count, sl_buf_t *b)
{
    sl_buf_init(b, 0);
    int rc = sl_diag_snapshot(in, compression, types, count, b);
    assert_int_equal(rc, 0);
    assert_true(b->len >= 22); /* at least the end-of-central-directory record */
}

static zip_t *open_zip(const sl_buf_t *b)
{
    zip_error_t error;
    zip_error_init(&error);
    zip_source_t *src = zip_source_buffer_create(b->data, b->len, 0, &error);
    assert_non_null(src);
    zip_t *za = zip_open_from_source(src, ZIP_RDONLY | ZIP_CHECKCONS, &error);
    if (za == NULL)
        fail_msg("libzip cannot open the archive: %s", zip_error_strerror(&error));
    zip_error_fini(&error);
    return za;
}

/* The entry's bytes, NUL-terminated, malloc'd; fails the test when absent. */
static char *read_entry(zip_t *za, const char *name, size_t *len)
{
    zip_stat_t st;
    if (zip_stat(za, name, 0, &st) != 0)
        fail_msg("no entry %s", name);
    char *text = malloc(st.size + 1);
    assert_non_null(text);
    zip_file_t *f = zip_fopen(za, name, 0);
    assert_non_null(f);
    zip_int64_t n = zip_fread(f, text, st.size);
    assert_int_equal(n, (zip_int64_t)st.size);
    zip_fclose(f);
    text[st.size] = '\0';
    *len = st.size;
    return text;
}

static void assert_contains(const char *text, const char *what)
{
    if (strstr(text, what) == NULL)
        fail_msg("text lacks \"%s\"", what);
}

static void test_names(void **state)
{
    (void)state;
    assert_string_equal(sl_diag_entry_name(SL_SNAPSHOT_FILESYSTEM_OVERVIEW),
                        "filesystem_overview.txt");
    assert_string_equal(sl_diag_entry_name(SL_SNAPSHOT_TEST), "test.txt");
    assert_string_equal(sl_diag_entry_name(SL_SNAPSHOT_SERVER_CONFIG), "server_config.txt");
    assert_null(sl_diag_entry_name(SL_SNAPSHOT_ALL));
    assert_null(sl_diag_entry_name(0));
    assert_null(sl_diag_entry_name(7));
    assert_string_equal(sl_diag_compression_name(SL_SNAPSHOT_STORED), "Stored");
    assert_string_equal(sl_diag_compression_name(SL_SNAPSHOT_XZ), "Xz");
    assert_null(sl_diag_compression_name(0));
    assert_null(sl_diag_compression_name(7));
    assert_false(sl_diag_compression_supported(0));
    assert_false(sl_diag_compression_supported(7));
    /* zlib is a hard dependency of libzip: these two always work. */
    assert_true(sl_diag_compression_supported(SL_SNAPSHOT_STORED));
    assert_true(sl_diag_compression_supported(SL_SNAPSHOT_DEFLATED));
}

/* The Test entry with every compression code: an archive with the right
 * method when libzip can write it, FeatureUnavailable and nothing written
 * otherwise. */
static void test_compressions(void **state)
{
    (void)state;
    sl_diag_input_t in = input_for("/tmp");
    const uint8_t types[] = {SL_SNAPSHOT_TEST};
    for (size_t i = 0; i < SL_ARRAY_LEN(methods); i++) {
        uint8_t code = methods[i].code;
        bool supported = zip_compression_method_supported(methods[i].method, 1) != 0;
        assert_int_equal(sl_diag_compression_supported(code), supported);
        if (!supported) {
            sl_buf_t b;
            sl_buf_init(&b, 0);
            sl_put_u8(&b, 0xAB); /* left alone on failure */
            int saved = quiet_stderr();
            int rc = sl_diag_snapshot(&in, code, types, 1, &b);
            restore_stderr(saved);
            assert_int_equal(rc, -SL_ERR_FEATURE_UNAVAILABLE);
            assert_int_equal(b.len, 1);
            sl_buf_free(&b);
            continue;
        }
        sl_buf_t b;
        snapshot_ok(&in, code, types, 1, &b);
        zip_t *za = open_zip(&b);
        assert_int_equal(zip_get_num_entries(za, 0), 1);
        assert_string_equal(zip_get_name(za, 0, 0), "test.txt");
        zip_stat_t st;
        assert_int_equal(zip_stat_index(za, 0, 0, &st), 0);
        assert_int_equal(st.comp_method, methods[i].method);
        size_t len;
        char *text = read_entry(za, "test.txt", &len);
        assert_string_equal(text, "test\n");
        free(text);
        zip_close(za);
        sl_buf_free(&b);
    }
}

/* The archive is appended after what the buffer already holds. */
static void test_appends(void **state)
{
    (void)state;
    sl_diag_input_t in = input_for("/tmp");
    const uint8_t types[] = {SL_SNAPSHOT_TEST};
    sl_buf_t b;
    sl_buf_init(&b, 0);
    sl_put_bytes(&b, "HDR", 3);
    assert_int_equal(sl_diag_snapshot(&in, SL_SNAPSHOT_STORED, types, 1, &b), 0);
    assert_memory_equal(b.data, "HDR", 3);
    assert_memory_equal(b.data + 3, "PK\x03\x04", 4);
    sl_buf_free(&b);
}

/* --- a scratch data directory --------------------------------------------- */

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

static void remove_tree(const char *dir)
{
    assert_int_equal(nftw(dir, remove_one, 16, FTW_DEPTH | FTW_PHYS), 0);
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void make_tree(char *dir)
{
    assert_non_null(mkdtemp(dir));
    char path[512];
    snprintf(path, sizeof(path), "%s/a.txt", dir);
    write_file(path, "hello");
    snprintf(path, sizeof(path), "%s/sub", dir);
    assert_int_equal(mkdir(path, 0700), 0);
    snprintf(path, sizeof(path), "%s/sub/b.bin", dir);
    write_file(path, "0123456789");
}

/* --- one entry per type --------------------------------------------------- */

static char *snapshot_entry(const sl_diag_input_t *in, uint8_t type, size_t *len)
{
    sl_buf_t b;
    snapshot_ok(in, SL_SNAPSHOT_DEFLATED, &type, 1, &b);
    zip_t *za = open_zip(&b);
    assert_int_equal(zip_get_num_entries(za, 0), 1);
    assert_string_equal(zip_get_name(za, 0, 0), sl_diag_entry_name(type));
    char *text = read_entry(za, sl_diag_entry_name(type), len);
    zip_close(za);
    sl_buf_free(&b);
    return text;
}

static void test_each_type(void **state)
{
    (void)state;
    char dir[] = "/tmp/sl_diag_XXXXXX";
    make_tree(dir);
    sl_diag_input_t in = input_for(dir);
    size_t len;
    char line[600];

    char *fs = snapshot_entry(&in, SL_SNAPSHOT_FILESYSTEM_OVERVIEW, &len);
    snprintf(line, sizeof(line), "            5 ");
    assert_contains(fs, line);
    snprintf(line, sizeof(line), " %s/a.txt\n", dir);
    assert_contains(fs, line);
    snprintf(line, sizeof(line), " %s/sub/b.bin\n", dir);
    assert_contains(fs, line);
    /* The subdirectory's line starts with its kind. */
    snprintf(line, sizeof(line), " %s/sub\n", dir);
    const char *sub = strstr(fs, line);
    assert_non_null(sub);
    while (sub > fs && sub[-1] != '\n')
        sub--;
    assert_memory_equal(sub, "d ", 2);
    snprintf(line, sizeof(line), "f           10 ");
    assert_contains(fs, line);
    assert_contains(fs, "\n3 entries\n");
    free(fs);

    char *ps = snapshot_entry(&in, SL_SNAPSHOT_PROCESS_LIST, &len);
    snprintf(line, sizeof(line), "\n%7d ", (int)getpid());
    assert_contains(ps, line);
    assert_contains(ps, "test_diag");
    assert_contains(ps, " processes\n");
    free(ps);

    char *ru = snapshot_entry(&in, SL_SNAPSHOT_RESOURCE_USAGE, &len);
    assert_contains(ru, "== Load average (/proc/loadavg) ==");
    assert_contains(ru, "MemTotal:");
    assert_contains(ru, "Threads:");
    assert_contains(ru, "max_rss_kib ");
    free(ru);

    char *test = snapshot_entry(&in, SL_SNAPSHOT_TEST, &len);
    assert_string_equal(test, "test\n");
    free(test);

    sl_log_write(SL_LOG_WARN, __FILE__, __LINE__, "marker line %d for the snapshot", 4242);
    char *logs = snapshot_entry(&in, SL_SNAPSHOT_SERVER_LOGS, &len);
    assert_contains(logs, "marker line 4242 for the snapshot");
    assert_true(len <= SL_LOG_RING_SIZE);
    free(logs);

    char *cfg = snapshot_entry(&in, SL_SNAPSHOT_SERVER_CONFIG, &len);
    assert_string_equal(cfg, config_text);
    free(cfg);
    remove_tree(dir);
}

/* All expands to five entries (no Test), in order, each with the method. */
static void test_all(void **state)
{
    (void)state;
    char dir[] = "/tmp/sl_diag_XXXXXX";
    make_tree(dir);
    sl_diag_input_t in = input_for(dir);
    const uint8_t all[] = {SL_SNAPSHOT_ALL};
    for (size_t i = 0; i < SL_ARRAY_LEN(methods); i++) {
        if (!sl_diag_compression_supported(methods[i].code))
            continue;
        sl_buf_t b;
        snapshot_ok(&in, methods[i].code, all, 1, &b);
        zip_t *za = open_zip(&b);
        assert_int_equal(zip_get_num_entries(za, 0), SL_ARRAY_LEN(all_entries));
        for (zip_uint64_t e = 0; e < SL_ARRAY_LEN(all_entries); e++) {
            zip_stat_t st;
            assert_int_equal(zip_stat_index(za, e, 0, &st), 0);
            assert_string_equal(st.name, all_entries[e]);
            assert_int_equal(st.comp_method, methods[i].method);
        }
        assert_int_equal(zip_name_locate(za, "test.txt", 0), -1);
        size_t len;
        char *cfg = read_entry(za, "server_config.txt", &len);
        assert_string_equal(cfg, config_text);
        free(cfg);
        zip_close(za);
        sl_buf_free(&b);
    }
    remove_tree(dir);
}

/* Several types keep request order; a repeated type gets one entry. */
static void test_list_and_repeats(void **state)
{
    (void)state;
    sl_diag_input_t in = input_for("/tmp");
    const uint8_t types[] = {SL_SNAPSHOT_SERVER_CONFIG, SL_SNAPSHOT_TEST, SL_SNAPSHOT_SERVER_CONFIG,
                             SL_SNAPSHOT_TEST};
    sl_buf_t b;
    snapshot_ok(&in, SL_SNAPSHOT_STORED, types, SL_ARRAY_LEN(types), &b);
    zip_t *za = open_zip(&b);
    assert_int_equal(zip_get_num_entries(za, 0), 2);
    assert_string_equal(zip_get_name(za, 0, 0), "server_config.txt");
    assert_string_equal(zip_get_name(za, 1, 0), "test.txt");
    zip_close(za);
    sl_buf_free(&b);
}

/* No types: a valid archive with no entries (the decoder accepts the list). */
static void test_empty_list(void **state)
{
    (void)state;
    sl_diag_input_t in = input_for("/tmp");
    sl_buf_t b;
    snapshot_ok(&in, SL_SNAPSHOT_DEFLATED, NULL, 0, &b);
    assert_int_equal(b.len, 22);
    assert_memory_equal(b.data, "PK\x05\x06", 4);
    zip_t *za = open_zip(&b);
    assert_int_equal(zip_get_num_entries(za, 0), 0);
    zip_close(za);
    sl_buf_free(&b);
}

static void test_bad_codes(void **state)
{
    (void)state;
    sl_diag_input_t in = input_for("/tmp");
    sl_buf_t b;
    sl_buf_init(&b, 0);
    const uint8_t all_mixed[] = {SL_SNAPSHOT_TEST, SL_SNAPSHOT_ALL};
    const uint8_t all_twice[] = {SL_SNAPSHOT_ALL, SL_SNAPSHOT_ALL};
    const uint8_t unknown[] = {SL_SNAPSHOT_TEST, 7};
    const uint8_t zero[] = {0};
    const uint8_t test[] = {SL_SNAPSHOT_TEST};
    assert_int_equal(sl_diag_snapshot(&in, 1, all_mixed, 2, &b), -SL_ERR_INVALID_COMMAND);
    assert_int_equal(sl_diag_snapshot(&in, 1, all_twice, 2, &b), -SL_ERR_INVALID_COMMAND);
    assert_int_equal(sl_diag_snapshot(&in, 1, unknown, 2, &b), -SL_ERR_INVALID_COMMAND);
    assert_int_equal(sl_diag_snapshot(&in, 1, zero, 1, &b), -SL_ERR_INVALID_COMMAND);
    assert_int_equal(sl_diag_snapshot(&in, 0, test, 1, &b), -SL_ERR_INVALID_COMMAND);
    assert_int_equal(sl_diag_snapshot(&in, 7, test, 1, &b), -SL_ERR_INVALID_COMMAND);
    assert_int_equal(b.len, 0);
    sl_buf_free(&b);
}

/* 256 + archive may equal the frame limit, not exceed it. The Test archive
 * has a fixed size, so the boundary can be found exactly. */
static void test_frame_limit(void **state)
{
    (void)state;
    sl_diag_input_t in = input_for("/tmp");
    const uint8_t test[] = {SL_SNAPSHOT_TEST};
    sl_buf_t b;
    snapshot_ok(&in, SL_SNAPSHOT_STORED, test, 1, &b);
    size_t size = b.len;
    sl_buf_reset(&b);
    in.frame_limit = SL_HEADER_SIZE + size;
    assert_int_equal(sl_diag_snapshot(&in, SL_SNAPSHOT_STORED, test, 1, &b), 0);
    assert_int_equal(b.len, size);
    sl_buf_reset(&b);
    in.frame_limit = SL_HEADER_SIZE + size - 1;
    int saved = quiet_stderr();
    int rc = sl_diag_snapshot(&in, SL_SNAPSHOT_STORED, test, 1, &b);
    in.frame_limit = 100; /* smaller than the header alone */
    int rc_tiny = sl_diag_snapshot(&in, SL_SNAPSHOT_STORED, test, 1, &b);
    restore_stderr(saved);
    assert_int_equal(rc, -SL_ERR_SNAPSHOT_FILE_COMPLETION_FAILED);
    assert_int_equal(rc_tiny, -SL_ERR_SNAPSHOT_FILE_COMPLETION_FAILED);
    assert_int_equal(b.len, 0);
    /* A reply buffer that cannot hold the archive fails the same way. */
    sl_buf_t small;
    sl_buf_init(&small, 64);
    in.frame_limit = 0;
    saved = quiet_stderr();
    rc = sl_diag_snapshot(&in, SL_SNAPSHOT_STORED, test, 1, &small);
    restore_stderr(saved);
    assert_int_equal(rc, -SL_ERR_SNAPSHOT_FILE_COMPLETION_FAILED);
    assert_true(sl_buf_ok(&small)); /* refused before writing: still usable */
    assert_int_equal(small.len, 0);
    sl_buf_free(&small);
    sl_buf_free(&b);
}

/* A snapshot already being collected refuses the next with 9000. */
static void test_single_flight(void **state)
{
    (void)state;
    sl_diag_input_t in = input_for("/tmp");
    const uint8_t test[] = {SL_SNAPSHOT_TEST};
    sl_buf_t b;
    sl_buf_init(&b, 0);
    assert_true(sl_diag_guard_acquire());
    assert_false(sl_diag_guard_acquire());
    int saved = quiet_stderr();
    int rc = sl_diag_snapshot(&in, SL_SNAPSHOT_STORED, test, 1, &b);
    restore_stderr(saved);
    assert_int_equal(rc, -SL_ERR_SNAPSHOT_FILE_COMPLETION_FAILED);
    assert_int_equal(b.len, 0);
    sl_diag_guard_release();
    assert_int_equal(sl_diag_snapshot(&in, SL_SNAPSHOT_STORED, test, 1, &b), 0);
    /* The snapshot released the guard when done. */
    assert_true(sl_diag_guard_acquire());
    sl_diag_guard_release();
    sl_buf_free(&b);
}

/* --- bounds of the filesystem walk ---------------------------------------- */

/* A chain deeper than SL_DIAG_FS_DEPTH_MAX is listed to the cap, no further. */
static void test_walk_depth(void **state)
{
    (void)state;
    char dir[] = "/tmp/sl_diag_XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[1024];
    size_t len = (size_t)snprintf(path, sizeof(path), "%s", dir);
    for (unsigned level = 1; level <= SL_DIAG_FS_DEPTH_MAX + 4; level++) {
        len += (size_t)snprintf(path + len, sizeof(path) - len, "/d%02u", level);
        assert_int_equal(mkdir(path, 0700), 0);
    }
    sl_diag_input_t in = input_for(dir);
    char *fs = snapshot_entry(&in, SL_SNAPSHOT_FILESYSTEM_OVERVIEW, &len);
    char want[32];
    snprintf(want, sizeof(want), "/d%02u\n", SL_DIAG_FS_DEPTH_MAX);
    assert_contains(fs, want);
    snprintf(want, sizeof(want), "/d%02u\n", SL_DIAG_FS_DEPTH_MAX + 1);
    assert_null(strstr(fs, want));
    snprintf(want, sizeof(want), "\n%u entries (truncated)\n", SL_DIAG_FS_DEPTH_MAX);
    assert_contains(fs, want);
    free(fs);
    remove_tree(dir);
}

/* More files than SL_DIAG_FS_ENTRIES_MAX: exactly the cap is listed. */
static void test_walk_entries(void **state)
{
    (void)state;
    char dir[] = "/tmp/sl_diag_XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[256];
    for (unsigned i = 0; i < SL_DIAG_FS_ENTRIES_MAX + 20; i++) {
        snprintf(path, sizeof(path), "%s/f%05u", dir, i);
        int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
        assert_true(fd >= 0);
        close(fd);
    }
    sl_diag_input_t in = input_for(dir);
    size_t len;
    char *fs = snapshot_entry(&in, SL_SNAPSHOT_FILESYSTEM_OVERVIEW, &len);
    char want[64];
    snprintf(want, sizeof(want), "\n%u entries (truncated)\n", SL_DIAG_FS_ENTRIES_MAX);
    assert_contains(fs, want);
    size_t lines = 0;
    for (const char *p = fs; (p = strstr(p, "\nf ")) != NULL; p++)
        lines++;
    assert_int_equal(lines, SL_DIAG_FS_ENTRIES_MAX);
    free(fs);
    remove_tree(dir);
}

/* A missing data directory is reported in the entry, not as a failure. */
static void test_walk_missing_root(void **state)
{
    (void)state;
    sl_diag_input_t in = input_for("/tmp/sl_diag_does_not_exist/x");
    size_t len;
    char *fs = snapshot_entry(&in, SL_SNAPSHOT_FILESYSTEM_OVERVIEW, &len);
    assert_contains(fs, "/tmp/sl_diag_does_not_exist/x: cannot open: ");
    assert_contains(fs, "\n0 entries\n");
    free(fs);
}

/* --- the log ring ----------------------------------------------------------- */

/* Every line the ring hands out is whole: a timestamp start, a newline end. */
static void assert_whole_lines(const char *text, size_t len)
{
    size_t start = 0;
    for (size_t i = 0; i < len; i++) {
        if (text[i] != '\n')
            continue;
        assert_true(i - start > 27);
        assert_memory_equal(text + start, "20", 2);
        assert_int_equal(text[start + 26], 'Z');
        start = i + 1;
    }
    assert_int_equal(start, len);
}

static void test_log_ring_recent(void **state)
{
    (void)state;
    int saved = quiet_stderr();
    for (int i = 0; i < 10; i++)
        sl_log_write(SL_LOG_INFO, __FILE__, __LINE__, "ring line %d", i);
    restore_stderr(saved);
    char *buf = malloc(SL_LOG_RING_SIZE);
    assert_non_null(buf);
    size_t n = sl_log_recent(buf, SL_LOG_RING_SIZE);
    assert_true(n > 0 && n <= sl_log_recent(NULL, 0));
    assert_whole_lines(buf, n);
    /* Newest last, in order. */
    buf[n - 1] = '\0';
    char *nine = strstr(buf, "ring line 9");
    char *eight = strstr(buf, "ring line 8");
    assert_non_null(nine);
    assert_non_null(eight);
    assert_true(eight < nine);
    assert_null(strchr(nine, '\n'));
    /* A small buffer gets only the newest whole lines that fit. */
    size_t line_len = strlen(strrchr(buf, '\n') + 1) + 1;
    n = sl_log_recent(buf, line_len + line_len / 2);
    assert_int_equal(n, line_len);
    assert_whole_lines(buf, n);
    buf[n] = '\0';
    assert_non_null(strstr(buf, "ring line 9\n"));
    assert_int_equal(sl_log_recent(buf, line_len - 1), 0);
    free(buf);
}

/* Far more than the ring holds: it keeps at most SL_LOG_RING_SIZE bytes, the
 * newest lines, and starts at a line boundary. */
static void test_log_ring_bounded(void **state)
{
    (void)state;
    int saved = quiet_stderr();
    unsigned lines = 4 * SL_LOG_RING_SIZE / 64;
    for (unsigned i = 0; i < lines; i++)
        sl_log_write(SL_LOG_INFO, __FILE__, __LINE__, "bounded line %07u", i);
    restore_stderr(saved);
    assert_int_equal(sl_log_recent(NULL, 0), SL_LOG_RING_SIZE);
    char *buf = malloc(SL_LOG_RING_SIZE + 1);
    assert_non_null(buf);
    size_t n = sl_log_recent(buf, SL_LOG_RING_SIZE + 1);
    assert_true(n <= SL_LOG_RING_SIZE && n > SL_LOG_RING_SIZE - 200);
    assert_whole_lines(buf, n);
    buf[n] = '\0';
    char want[32];
    snprintf(want, sizeof(want), "bounded line %07u\n", lines - 1);
    assert_non_null(strstr(buf, want));
    assert_null(strstr(buf, "bounded line 0000000\n"));
    free(buf);
}

enum { RING_THREADS = 4, RING_LINES = 3000 };

static void *log_many(void *arg)
{
    int id = (int)(intptr_t)arg;
    for (int i = 0; i < RING_LINES; i++)
        sl_log_write(SL_LOG_INFO, __FILE__, __LINE__, "thread %d line %d", id, i);
    return NULL;
}

/* Concurrent writers never interleave inside a line of the ring. */
static void test_log_ring_threads(void **state)
{
    (void)state;
    int saved = quiet_stderr();
    pthread_t threads[RING_THREADS];
    for (int t = 0; t < RING_THREADS; t++)
        assert_int_equal(pthread_create(&threads[t], NULL, log_many, (void *)(intptr_t)t), 0);
    for (int t = 0; t < RING_THREADS; t++)
        pthread_join(threads[t], NULL);
    restore_stderr(saved);
    char *buf = malloc(SL_LOG_RING_SIZE);
    assert_non_null(buf);
    size_t n = sl_log_recent(buf, SL_LOG_RING_SIZE);
    assert_whole_lines(buf, n);
    size_t start = 0;
    for (size_t i = 0; i < n; i++) {
        if (buf[i] != '\n')
            continue;
        buf[i] = '\0';
        int id, line;
        const char *msg = strstr(buf + start, "thread ");
        assert_non_null(msg);
        assert_int_equal(sscanf(msg, "thread %d line %d", &id, &line), 2);
        assert_true(id >= 0 && id < RING_THREADS && line >= 0 && line < RING_LINES);
        start = i + 1;
    }
    free(buf);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_names),
        cmocka_unit_test(test_compressions),
        cmocka_unit_test(test_appends),
        cmocka_unit_test(test_each_type),
        cmocka_unit_test(test_all),
        cmocka_unit_test(test_list_and_repeats),
        cmocka_unit_test(test_empty_list),
        cmocka_unit_test(test_bad_codes),
        cmocka_unit_test(test_frame_limit),
        cmocka_unit_test(test_single_flight),
        cmocka_unit_test(test_walk_depth),
        cmocka_unit_test(test_walk_entries),
        cmocka_unit_test(test_walk_missing_root),
        cmocka_unit_test(test_log_ring_recent),
        cmocka_unit_test(test_log_ring_bounded),
        cmocka_unit_test(test_log_ring_threads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
