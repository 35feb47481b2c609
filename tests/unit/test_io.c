/* src/base/io: the libc wrappers, their write/read loops, and the fault hook tests use to make
 * them fail (after N calls, on a path, short transfers, sticky or one-shot). */
#include "testutil.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/io.h"
#include "tu_tmpdir.h"

typedef struct io_fixture {
    char dir[PATH_MAX];
} io_fixture_t;

static int setup(void **state)
{
    io_fixture_t *f = calloc(1, sizeof(*f));
    assert_non_null(f);
    assert_true(tu_tmpdir_make(f->dir, "sluice-io"));
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    io_fixture_t *f = *state;
    sl_io_fault_arm(NULL);
    tu_tmpdir_remove(f->dir);
    free(f);
    return 0;
}

static void path_of(const io_fixture_t *f, const char *name, char out[PATH_MAX])
{
    assert_true(tu_path(out, f->dir, name));
}

static size_t file_size(const char *path)
{
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    return (size_t)st.st_size;
}

static void test_io_passthrough_without_hook(void **state)
{
    io_fixture_t *f = *state;
    char path[PATH_MAX];
    path_of(f, "plain", path);
    int fd = sl_io_open(path, O_RDWR | O_CREAT, 0644);
    assert_true(fd >= 0);
    assert_int_equal(sl_io_pwrite_all(fd, "hello world", 11, 0), 0);
    assert_int_equal(sl_io_fdatasync(fd), 0);
    assert_int_equal(sl_io_fsync(fd), 0);
    uint64_t size;
    assert_int_equal(sl_io_size(fd, &size), 0);
    assert_int_equal(size, 11);
    char got[16] = {0};
    assert_int_equal(sl_io_pread_all(fd, got, sizeof(got), 0), 11);
    assert_string_equal(got, "hello world");
    assert_int_equal(sl_io_ftruncate(fd, 5), 0);
    assert_int_equal(sl_io_pread_all(fd, got, sizeof(got), 0), 5);
    assert_int_equal(sl_io_close(fd), 0);
    assert_int_equal(sl_io_fsync_dir(f->dir), 0);
    char moved[PATH_MAX];
    path_of(f, "moved", moved);
    assert_int_equal(sl_io_rename(path, moved), 0);
    assert_int_equal(sl_io_open(path, O_RDONLY, 0), -ENOENT);
    assert_int_equal(sl_io_unlink(moved), 0);
    assert_int_equal(sl_io_unlink(moved), -ENOENT);
    char sub[PATH_MAX];
    path_of(f, "sub", sub);
    assert_int_equal(sl_io_mkdir(sub, 0755), 0);
    assert_int_equal(sl_io_mkdir(sub, 0755), -EEXIST);
}

static void test_io_fault_after_n_calls_one_shot(void **state)
{
    io_fixture_t *f = *state;
    char path[PATH_MAX];
    path_of(f, "n", path);
    int fd = sl_io_open(path, O_RDWR | O_CREAT, 0644);
    assert_true(fd >= 0);
    sl_io_fault_t plan = {.calls = SL_IO_MASK_WRITES, .after = 2, .count = 1, .error = ENOSPC};
    sl_io_fault_arm(&plan);
    assert_int_equal(sl_io_pwrite(fd, "a", 1, 0), 1);
    assert_int_equal(sl_io_pwrite(fd, "b", 1, 1), 1);
    assert_int_equal(sl_io_fdatasync(fd), 0); /* not a matching call: not counted */
    assert_int_equal(sl_io_pwrite(fd, "c", 1, 2), -ENOSPC);
    assert_int_equal(sl_io_pwrite(fd, "d", 1, 2), 1);
    assert_int_equal(plan.seen, 4);
    assert_int_equal(plan.fired, 1);
    sl_io_fault_arm(NULL);
    char got[4];
    assert_int_equal(sl_io_pread_all(fd, got, sizeof(got), 0), 3);
    assert_memory_equal(got, "abd", 3);
    sl_io_close(fd);
}

static void test_io_fault_sticky_fails_everything_after(void **state)
{
    io_fixture_t *f = *state;
    char path[PATH_MAX];
    path_of(f, "s", path);
    int fd = sl_io_open(path, O_RDWR | O_CREAT, 0644);
    assert_true(fd >= 0);
    sl_io_fault_t plan = {.after = 1, .error = EIO}; /* every call kind, forever after #1 */
    sl_io_fault_arm(&plan);
    assert_int_equal(sl_io_pwrite(fd, "x", 1, 0), 1);
    assert_int_equal(sl_io_fdatasync(fd), -EIO);
    assert_int_equal(sl_io_pwrite(fd, "y", 1, 1), -EIO);
    assert_int_equal(sl_io_ftruncate(fd, 0), -EIO);
    assert_int_equal(sl_io_fsync_dir(f->dir), -EIO);
    assert_int_equal(sl_io_rename(path, path), -EIO);
    assert_int_equal(sl_io_open(path, O_RDONLY, 0), -EIO);
    uint64_t size = 99;
    assert_int_equal(sl_io_size(fd, &size), -EIO);
    assert_int_equal(size, 0);
    assert_int_equal(plan.fired, 7);
    assert_int_equal(sl_io_close(fd), 0); /* close is never faulted */
    sl_io_fault_arm(NULL);
    assert_int_equal(file_size(path), 1);
}

static void test_io_fault_by_path_including_fd_calls(void **state)
{
    io_fixture_t *f = *state;
    char a[PATH_MAX], b[PATH_MAX], c[PATH_MAX];
    path_of(f, "journal.wal", a);
    path_of(f, "other.bin", b);
    path_of(f, "renamed.wal", c);
    sl_io_fault_t plan = {.path_contains = ".wal",
                          .error = ENOSPC,
                          .calls = SL_IO_MASK_WRITES | SL_IO_BIT(SL_IO_RENAME)};
    sl_io_fault_arm(&plan);
    int fa = sl_io_open(a, O_RDWR | O_CREAT, 0644);
    int fb = sl_io_open(b, O_RDWR | O_CREAT, 0644);
    assert_true(fa >= 0 && fb >= 0);
    assert_int_equal(sl_io_pwrite(fa, "1", 1, 0), -ENOSPC);
    assert_int_equal(sl_io_pwrite(fb, "1", 1, 0), 1);
    /* A rename matches on either name. */
    assert_int_equal(sl_io_rename(b, c), -ENOSPC);
    assert_int_equal(plan.seen, 2);
    sl_io_close(fa);
    sl_io_close(fb);
    sl_io_fault_arm(NULL);
    assert_int_equal(file_size(a), 0);
    assert_int_equal(file_size(b), 1);
}

static void test_io_short_writes_are_completed_by_the_loops(void **state)
{
    io_fixture_t *f = *state;
    char path[PATH_MAX];
    path_of(f, "short", path);
    int fd = sl_io_open(path, O_RDWR | O_CREAT, 0644);
    assert_true(fd >= 0);
    uint8_t data[100];
    for (size_t i = 0; i < sizeof(data); i++)
        data[i] = (uint8_t)(i * 7 + 1);
    sl_io_fault_t plan = {.calls = SL_IO_MASK_WRITES | SL_IO_BIT(SL_IO_PREAD), .short_len = 3};
    sl_io_fault_arm(&plan);
    assert_int_equal(sl_io_pwrite_all(fd, data, 40, 0), 0);
    assert_int_equal(plan.seen, 14); /* 13 writes of 3 bytes, one of 1 */
    struct iovec iov[3] = {{data + 40, 0}, {data + 40, 25}, {data + 65, 35}};
    assert_int_equal(sl_io_pwritev_all(fd, iov, 3, 40), 0);
    uint8_t got[100] = {0};
    assert_int_equal(sl_io_pread_all(fd, got, sizeof(got), 0), 100);
    assert_true(plan.fired > 40);
    sl_io_fault_arm(NULL);
    assert_memory_equal(got, data, sizeof(data));
    sl_io_close(fd);
}

static void test_io_short_write_then_enospc_tears_the_write(void **state)
{
    io_fixture_t *f = *state;
    char path[PATH_MAX];
    path_of(f, "torn", path);
    int fd = sl_io_open(path, O_RDWR | O_CREAT, 0644);
    assert_true(fd >= 0);
    uint8_t data[64];
    memset(data, 0xab, sizeof(data));
    sl_io_fault_t plan = {.calls = SL_IO_MASK_WRITES, .short_len = 10, .error = ENOSPC};
    sl_io_fault_arm(&plan);
    struct iovec iov[2] = {{data, 20}, {data + 20, 44}};
    assert_int_equal(sl_io_pwritev_all(fd, iov, 2, 0), -ENOSPC);
    assert_int_equal(plan.fired, 2);
    sl_io_fault_arm(NULL);
    assert_int_equal(file_size(path), 10);
    sl_io_close(fd);
}

static void test_io_read_file_and_write_file_synced(void **state)
{
    io_fixture_t *f = *state;
    char path[PATH_MAX];
    path_of(f, "whole", path);
    sl_buf_t b;
    sl_buf_init(&b, 0);
    assert_int_equal(sl_io_read_file(path, &b, 100), -ENOENT);
    assert_int_equal(sl_io_write_file_synced(path, sl_span("0123456789", 10)), 0);
    assert_int_equal(sl_io_read_file(path, &b, 100), 0);
    assert_span_str(sl_buf_span(&b), "0123456789");
    assert_int_equal(sl_io_read_file(path, &b, 9), -EFBIG);
    /* Rewriting truncates what was there. */
    assert_int_equal(sl_io_write_file_synced(path, sl_span("ab", 2)), 0);
    assert_int_equal(sl_io_read_file(path, &b, 100), 0);
    assert_span_str(sl_buf_span(&b), "ab");
    /* Each step fails cleanly. */
    sl_io_fault_t plan = {.calls = SL_IO_BIT(SL_IO_FSYNC), .error = EIO};
    sl_io_fault_arm(&plan);
    assert_int_equal(sl_io_write_file_synced(path, sl_span("xyz", 3)), -EIO);
    plan = (sl_io_fault_t){.calls = SL_IO_BIT(SL_IO_PREAD), .error = EIO};
    sl_io_fault_arm(&plan);
    assert_int_equal(sl_io_read_file(path, &b, 100), -EIO);
    sl_io_fault_arm(NULL);
    sl_buf_free(&b);
}

/* A small text file, as of /proc, into a bounded buffer: NUL-terminated, cut at cap - 1
 * bytes; a missing file or a directory gives -errno; a fault plan does not touch it. */
static void test_io_read_text(void **state)
{
    io_fixture_t *f = *state;
    char path[PATH_MAX];
    path_of(f, "text", path);
    char buf[8];
    assert_int_equal(sl_io_read_text(path, buf, sizeof(buf)), -ENOENT);
    assert_int_equal(sl_io_write_file_synced(path, sl_span("0123456789", 10)), 0);
    memset(buf, 'x', sizeof(buf));
    assert_int_equal(sl_io_read_text(path, buf, sizeof(buf)), 7);
    assert_string_equal(buf, "0123456");
    assert_int_equal(sl_io_read_text(path, buf, 1), 0);
    assert_string_equal(buf, "");
    char whole[32];
    sl_io_fault_t plan = {.error = EIO};
    sl_io_fault_arm(&plan);
    assert_int_equal(sl_io_read_text(path, whole, sizeof(whole)), 10);
    sl_io_fault_arm(NULL);
    assert_string_equal(whole, "0123456789");
    assert_int_equal(sl_io_read_text(f->dir, whole, sizeof(whole)), -EISDIR);
    /* A /proc file reports a size of 0: it is read all the same, up to cap - 1 bytes. */
    assert_true(sl_io_read_text("/proc/self/stat", whole, sizeof(whole)) == 31);
}

/* A slow disk: a delayed sync sleeps at least delay_ms, then succeeds (error 0); calls outside
 * the plan's window are not delayed; a delay with an error fails after the wait. Only lower
 * bounds are checked: the sleep cannot make a call faster, and a loaded machine only slower. */
static void test_io_fault_delay_slows_syncs(void **state)
{
    io_fixture_t *f = *state;
    char path[PATH_MAX];
    path_of(f, "slow", path);
    int fd = sl_io_open(path, O_RDWR | O_CREAT, 0644);
    assert_true(fd >= 0);
    assert_int_equal(sl_io_pwrite_all(fd, "slow", 4, 0), 0);
    sl_io_fault_t plan = {.calls = SL_IO_MASK_SYNCS, .count = 2, .delay_ms = 150};
    sl_io_fault_arm(&plan);
    for (int i = 0; i < 2; i++) {
        uint64_t t0 = sl_clock_monotonic_ns();
        assert_int_equal(i ? sl_io_fsync(fd) : sl_io_fdatasync(fd), 0);
        assert_true(sl_clock_monotonic_ns() - t0 >= 150u * 1000000u);
    }
    assert_int_equal(plan.fired, 2);
    assert_int_equal(sl_io_fdatasync(fd), 0); /* past count: not delayed, not counted */
    assert_int_equal(plan.fired, 2);
    assert_int_equal(plan.seen, 3);
    /* Writes are outside the mask: never delayed. */
    assert_int_equal(sl_io_pwrite_all(fd, "more", 4, 4), 0);
    assert_int_equal(plan.seen, 3);
    plan = (sl_io_fault_t){.calls = SL_IO_BIT(SL_IO_FDATASYNC), .delay_ms = 100, .error = EIO};
    sl_io_fault_arm(&plan);
    uint64_t t0 = sl_clock_monotonic_ns();
    assert_int_equal(sl_io_fdatasync(fd), -EIO);
    assert_true(sl_clock_monotonic_ns() - t0 >= 100u * 1000000u);
    assert_int_equal(plan.fired, 1);
    sl_io_fault_arm(NULL);
    sl_io_close(fd);
}

/* The modes callers create with: owner only by default, group-readable on
 * request; write_file_synced uses them (umask 000, so the mode is exact). */
static void test_io_modes(void **state)
{
    io_fixture_t *f = *state;
    mode_t saved = umask(0);
    assert_int_equal(sl_io_file_mode(), 0600);
    assert_int_equal(sl_io_dir_mode(), 0700);
    char path[PATH_MAX];
    path_of(f, "private", path);
    assert_int_equal(sl_io_write_file_synced(path, sl_span("x", 1)), 0);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0600);
    sl_io_set_group_access(true);
    assert_int_equal(sl_io_file_mode(), 0640);
    assert_int_equal(sl_io_dir_mode(), 0750);
    path_of(f, "shared", path);
    assert_int_equal(sl_io_write_file_synced(path, sl_span("x", 1)), 0);
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0640);
    sl_io_set_group_access(false);
    assert_int_equal(sl_io_file_mode(), 0600);
    umask(saved);
}

typedef struct trace_log {
    sl_io_call_t calls[16];
    char names[16][32];
    size_t n;
} trace_log_t;

static void record(void *ctx, const sl_io_op_t *op)
{
    trace_log_t *t = ctx;
    if (t->n < 16) {
        const char *slash = op->path ? strrchr(op->path, '/') : NULL;
        snprintf(t->names[t->n], sizeof(t->names[0]), "%s", slash ? slash + 1 : "?");
        t->calls[t->n++] = op->call;
    }
}

static void test_io_trace_sees_calls_in_order_with_paths(void **state)
{
    io_fixture_t *f = *state;
    char path[PATH_MAX];
    path_of(f, "traced", path);
    trace_log_t log = {0};
    sl_io_fault_t plan = {.trace = record, .trace_ctx = &log};
    sl_io_fault_arm(&plan);
    assert_int_equal(sl_io_write_file_synced(path, sl_span("abc", 3)), 0);
    sl_io_fault_arm(NULL);
    assert_int_equal(log.n, 3);
    assert_int_equal(log.calls[0], SL_IO_OPEN);
    assert_int_equal(log.calls[1], SL_IO_PWRITE);
    assert_int_equal(log.calls[2], SL_IO_FSYNC);
    for (size_t i = 0; i < log.n; i++)
        assert_string_equal(log.names[i], "traced");
    assert_string_equal(sl_io_call_name(SL_IO_FSYNC_DIR), "fsync_dir");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_io_passthrough_without_hook, setup, teardown),
        cmocka_unit_test_setup_teardown(test_io_fault_after_n_calls_one_shot, setup, teardown),
        cmocka_unit_test_setup_teardown(test_io_fault_sticky_fails_everything_after, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_io_fault_by_path_including_fd_calls, setup, teardown),
        cmocka_unit_test_setup_teardown(test_io_short_writes_are_completed_by_the_loops, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_io_short_write_then_enospc_tears_the_write, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_io_read_text, setup, teardown),
        cmocka_unit_test_setup_teardown(test_io_read_file_and_write_file_synced, setup, teardown),
        cmocka_unit_test_setup_teardown(test_io_modes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_io_fault_delay_slows_syncs, setup, teardown),
        cmocka_unit_test_setup_teardown(test_io_trace_sees_calls_in_order_with_paths, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
