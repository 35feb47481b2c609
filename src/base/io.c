/* File I/O wrappers over libc with a test hook (base/io.h).
 * Each wrapper asks the hook first (when one is installed), then makes the system call,
 * retrying EINTR, and turns failures into -errno. */
#define _GNU_SOURCE /* fallocate */
#include "base/io.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static sl_io_hook_fn io_hook;
static void *io_hook_ctx;
static bool io_group_access;

static const char *const io_call_names[SL_IO_CALL_COUNT] = {
    [SL_IO_OPEN] = "open",           [SL_IO_WRITE] = "write",     [SL_IO_PWRITE] = "pwrite",
    [SL_IO_WRITEV] = "writev",       [SL_IO_PWRITEV] = "pwritev", [SL_IO_PREAD] = "pread",
    [SL_IO_FDATASYNC] = "fdatasync", [SL_IO_FSYNC] = "fsync",     [SL_IO_FSYNC_DIR] = "fsync_dir",
    [SL_IO_RENAME] = "rename",       [SL_IO_UNLINK] = "unlink",   [SL_IO_FTRUNCATE] = "ftruncate",
    [SL_IO_MKDIR] = "mkdir",         [SL_IO_SIZE] = "size",       [SL_IO_FALLOCATE] = "fallocate",
};

const char *sl_io_call_name(sl_io_call_t call)
{
    return (unsigned)call < SL_IO_CALL_COUNT ? io_call_names[call] : "?";
}

void sl_io_set_group_access(bool group)
{
    io_group_access = group;
}

mode_t sl_io_file_mode(void)
{
    return io_group_access ? 0640 : 0600;
}

mode_t sl_io_dir_mode(void)
{
    return io_group_access ? 0750 : 0700;
}

static sl_io_sync_observer_fn io_sync_observer;
static void *io_sync_observer_ctx;

void sl_io_set_sync_observer(sl_io_sync_observer_fn fn, void *ctx)
{
    io_sync_observer_ctx = ctx;
    io_sync_observer = fn;
}

static uint64_t io_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Runs one sync call (fdatasync or fsync), EINTR retried, and tells the observer how long
 * it took. */
static int io_sync(int fd, int (*sync_fn)(int))
{
    uint64_t start = io_sync_observer ? io_now_ns() : 0;
    int rc;
    do
        rc = sync_fn(fd);
    while (rc < 0 && errno == EINTR);
    int saved = errno;
    if (io_sync_observer)
        io_sync_observer(io_sync_observer_ctx, io_now_ns() - start);
    errno = saved;
    return rc < 0 ? -errno : 0;
}

void sl_io_set_hook(sl_io_hook_fn fn, void *ctx)
{
    io_hook = fn;
    io_hook_ctx = ctx;
}

/* Asks the hook about a call: 0 to run it (with *len possibly lowered) or -errno. */
static int io_ask(sl_io_call_t call, int fd, const char *path, const char *path2, size_t *len)
{
    sl_io_op_t op = {call, fd, path, path2, len ? *len : 0};
    /* The kernel knows each fd's current path; asking costs a syscall, paid only by tests. */
    char fd_path[PATH_MAX];
    if (fd >= 0 && !path) {
        char link[32];
        snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
        ssize_t n = readlink(link, fd_path, sizeof(fd_path) - 1);
        if (n > 0) {
            fd_path[n] = '\0';
            op.path = fd_path;
        }
    }
    int error = io_hook(io_hook_ctx, &op);
    if (error)
        return -error;
    if (len) {
        /* A hook may shorten a transfer but never turn it into a zero-byte one, which callers
         * would read as end of file (or loop on forever when writing). */
        sl_assert(op.len <= *len && (op.len > 0 || *len == 0));
        *len = op.len;
    }
    return 0;
}

#define IO_ASK(call, fd, path, path2, len)                                                         \
    do {                                                                                           \
        if (__builtin_expect(io_hook != NULL, 0)) {                                                \
            int io_ask_rc_ = io_ask((call), (fd), (path), (path2), (len));                         \
            if (io_ask_rc_)                                                                        \
                return io_ask_rc_;                                                                 \
        }                                                                                          \
    } while (0)

int sl_io_open(const char *path, int flags, mode_t mode)
{
    IO_ASK(SL_IO_OPEN, -1, path, NULL, NULL);
    int fd;
    do
        fd = open(path, flags | O_CLOEXEC, mode);
    while (fd < 0 && errno == EINTR);
    return fd < 0 ? -errno : fd;
}

int sl_io_close(int fd)
{
    /* Not offered to the hook: close has no durable effect here, and Linux releases the fd
     * even when close reports an error, so callers have nothing to recover. */
    return close(fd) == 0 ? 0 : -errno;
}

ssize_t sl_io_write(int fd, const void *p, size_t n)
{
    IO_ASK(SL_IO_WRITE, fd, NULL, NULL, &n);
    ssize_t rc;
    do
        rc = write(fd, p, n);
    while (rc < 0 && errno == EINTR);
    return rc < 0 ? -errno : rc;
}

ssize_t sl_io_pwrite(int fd, const void *p, size_t n, off_t off)
{
    IO_ASK(SL_IO_PWRITE, fd, NULL, NULL, &n);
    ssize_t rc;
    do
        rc = pwrite(fd, p, n, off);
    while (rc < 0 && errno == EINTR);
    return rc < 0 ? -errno : rc;
}

static size_t iov_total(const struct iovec *iov, int iovcnt)
{
    size_t total = 0;
    for (int i = 0; i < iovcnt; i++)
        total += iov[i].iov_len;
    return total;
}

/* A shortened vectored write: writes (part of) the first non-empty iovec only, which is a
 * legal short write, so callers see exactly what a partial kernel write looks like. */
static ssize_t iov_short(int fd, const struct iovec *iov, int iovcnt, size_t n, off_t off,
                         bool positioned)
{
    int i = 0;
    while (i < iovcnt - 1 && iov[i].iov_len == 0)
        i++;
    size_t len = iov[i].iov_len < n ? iov[i].iov_len : n;
    ssize_t rc;
    do
        rc = positioned ? pwrite(fd, iov[i].iov_base, len, off) : write(fd, iov[i].iov_base, len);
    while (rc < 0 && errno == EINTR);
    return rc < 0 ? -errno : rc;
}

ssize_t sl_io_writev(int fd, const struct iovec *iov, int iovcnt)
{
    size_t n = iov_total(iov, iovcnt);
    size_t asked = n;
    IO_ASK(SL_IO_WRITEV, fd, NULL, NULL, &n);
    if (n < asked)
        return iov_short(fd, iov, iovcnt, n, 0, false);
    ssize_t rc;
    do
        rc = writev(fd, iov, iovcnt);
    while (rc < 0 && errno == EINTR);
    return rc < 0 ? -errno : rc;
}

ssize_t sl_io_pwritev(int fd, const struct iovec *iov, int iovcnt, off_t off)
{
    size_t n = iov_total(iov, iovcnt);
    size_t asked = n;
    IO_ASK(SL_IO_PWRITEV, fd, NULL, NULL, &n);
    if (n < asked)
        return iov_short(fd, iov, iovcnt, n, off, true);
    ssize_t rc;
    do
        rc = pwritev(fd, iov, iovcnt, off);
    while (rc < 0 && errno == EINTR);
    return rc < 0 ? -errno : rc;
}

ssize_t sl_io_pread(int fd, void *p, size_t n, off_t off)
{
    IO_ASK(SL_IO_PREAD, fd, NULL, NULL, &n);
    ssize_t rc;
    do
        rc = pread(fd, p, n, off);
    while (rc < 0 && errno == EINTR);
    return rc < 0 ? -errno : rc;
}

int sl_io_fdatasync(int fd)
{
    IO_ASK(SL_IO_FDATASYNC, fd, NULL, NULL, NULL);
    return io_sync(fd, fdatasync);
}

int sl_io_fsync(int fd)
{
    IO_ASK(SL_IO_FSYNC, fd, NULL, NULL, NULL);
    return io_sync(fd, fsync);
}

int sl_io_fsync_dir(const char *path)
{
    IO_ASK(SL_IO_FSYNC_DIR, -1, path, NULL, NULL);
    int fd;
    do
        fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    while (fd < 0 && errno == EINTR);
    if (fd < 0)
        return -errno;
    int rc = io_sync(fd, fsync);
    close(fd);
    return rc;
}

int sl_io_rename(const char *from, const char *to)
{
    IO_ASK(SL_IO_RENAME, -1, from, to, NULL);
    return rename(from, to) == 0 ? 0 : -errno;
}

int sl_io_unlink(const char *path)
{
    IO_ASK(SL_IO_UNLINK, -1, path, NULL, NULL);
    return unlink(path) == 0 ? 0 : -errno;
}

int sl_io_ftruncate(int fd, off_t len)
{
    IO_ASK(SL_IO_FTRUNCATE, fd, NULL, NULL, NULL);
    int rc;
    do
        rc = ftruncate(fd, len);
    while (rc < 0 && errno == EINTR);
    return rc < 0 ? -errno : 0;
}

int sl_io_mkdir(const char *path, mode_t mode)
{
    IO_ASK(SL_IO_MKDIR, -1, path, NULL, NULL);
    return mkdir(path, mode) == 0 ? 0 : -errno;
}

int sl_io_size(int fd, uint64_t *out)
{
    *out = 0;
    IO_ASK(SL_IO_SIZE, fd, NULL, NULL, NULL);
    struct stat st;
    if (fstat(fd, &st) != 0)
        return -errno;
    *out = (uint64_t)st.st_size;
    return 0;
}

int sl_io_fallocate(int fd, int mode, off_t off, off_t len)
{
    IO_ASK(SL_IO_FALLOCATE, fd, NULL, NULL, NULL);
    int rc;
    do
        rc = fallocate(fd, mode, off, len);
    while (rc < 0 && errno == EINTR);
    return rc < 0 ? -errno : 0;
}

/* --- loops ------------------------------------------------------------------------------ */

int sl_io_pwrite_all(int fd, const void *p, size_t n, off_t off)
{
    const uint8_t *at = p;
    while (n > 0) {
        ssize_t rc = sl_io_pwrite(fd, at, n, off);
        if (rc < 0)
            return (int)rc;
        if (rc == 0)
            return -EIO; /* no progress: never spin */
        at += rc;
        n -= (size_t)rc;
        off += rc;
    }
    return 0;
}

int sl_io_pwritev_all(int fd, const struct iovec *iov, int iovcnt, off_t off)
{
    struct iovec left[8];
    sl_assert(iovcnt >= 0 && iovcnt <= (int)SL_ARRAY_LEN(left));
    memcpy(left, iov, sizeof(*iov) * (size_t)iovcnt);
    int first = 0;
    while (first < iovcnt) {
        if (left[first].iov_len == 0) {
            first++;
            continue;
        }
        ssize_t rc = sl_io_pwritev(fd, left + first, iovcnt - first, off);
        if (rc < 0)
            return (int)rc;
        if (rc == 0)
            return -EIO;
        off += rc;
        size_t done = (size_t)rc;
        while (done > 0) {
            size_t take = done < left[first].iov_len ? done : left[first].iov_len;
            left[first].iov_base = (uint8_t *)left[first].iov_base + take;
            left[first].iov_len -= take;
            done -= take;
            if (left[first].iov_len == 0)
                first++;
        }
    }
    return 0;
}

ssize_t sl_io_pread_all(int fd, void *p, size_t n, off_t off)
{
    uint8_t *at = p;
    size_t got = 0;
    while (got < n) {
        ssize_t rc = sl_io_pread(fd, at + got, n - got, off + (off_t)got);
        if (rc < 0)
            return rc;
        if (rc == 0)
            break;
        got += (size_t)rc;
    }
    return (ssize_t)got;
}

int sl_io_read_file(const char *path, sl_buf_t *out, size_t max)
{
    sl_buf_reset(out);
    int fd = sl_io_open(path, O_RDONLY, 0);
    if (fd < 0)
        return fd;
    uint64_t size;
    int rc = sl_io_size(fd, &size);
    if (rc == 0 && size > max)
        rc = -EFBIG;
    uint8_t *p = NULL;
    if (rc == 0) {
        p = sl_buf_extend(out, (size_t)size);
        if (!p)
            rc = -ENOMEM;
    }
    if (rc == 0) {
        ssize_t got = sl_io_pread_all(fd, p, (size_t)size, 0);
        if (got < 0)
            rc = (int)got;
        else
            out->len = (size_t)got; /* the file shrank under us: keep what was there */
    }
    sl_io_close(fd);
    return rc;
}

long sl_io_read_text(const char *path, char *buf, size_t cap)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    size_t len = 0;
    while (len + 1 < cap) {
        ssize_t n = read(fd, buf + len, cap - 1 - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            int err = errno;
            close(fd);
            return -err;
        }
        if (n == 0)
            break;
        len += (size_t)n;
    }
    close(fd);
    buf[len] = '\0';
    return (long)len;
}

int sl_io_write_file_synced(const char *path, sl_span_t data)
{
    int fd = sl_io_open(path, O_WRONLY | O_CREAT | O_TRUNC, sl_io_file_mode());
    if (fd < 0)
        return fd;
    int rc = sl_io_pwrite_all(fd, data.ptr, data.len, 0);
    if (rc == 0)
        rc = sl_io_fsync(fd);
    sl_io_close(fd);
    return rc;
}

/* --- fault plan ------------------------------------------------------------------------- */

static bool fault_matches(const sl_io_fault_t *plan, const sl_io_op_t *op)
{
    uint32_t calls = plan->calls ? plan->calls : SL_IO_MASK_ALL;
    if (!(calls & SL_IO_BIT(op->call)))
        return false;
    if (!plan->path_contains)
        return true;
    return (op->path && strstr(op->path, plan->path_contains)) ||
           (op->path2 && strstr(op->path2, plan->path_contains));
}

static bool call_moves_bytes(sl_io_call_t call)
{
    return (SL_IO_MASK_WRITES | SL_IO_BIT(SL_IO_PREAD)) & SL_IO_BIT(call);
}

/* Sleeps ms milliseconds, resuming after signals so the whole delay is served. */
static void io_sleep_ms(uint32_t ms)
{
    struct timespec left = {ms / 1000u, (long)(ms % 1000u) * 1000000L};
    while (nanosleep(&left, &left) != 0 && errno == EINTR)
        ;
}

int sl_io_fault_hook(void *ctx, sl_io_op_t *op)
{
    sl_io_fault_t *plan = ctx;
    if (!fault_matches(plan, op))
        return 0;
    uint64_t number = plan->seen++;
    if (plan->trace)
        plan->trace(plan->trace_ctx, op);
    if (number < plan->after || (plan->count && number - plan->after >= plan->count))
        return 0;
    if (plan->delay_ms) {
        /* A slow disk: the call waits, then fails or (error 0) runs as it would have. */
        io_sleep_ms(plan->delay_ms);
        if (plan->error == 0 && plan->short_len == 0) {
            plan->fired++;
            return 0;
        }
    }
    if (call_moves_bytes(op->call) && plan->short_len && op->len > plan->short_len &&
        (plan->error == 0 || plan->fired == 0)) {
        plan->fired++;
        op->len = plan->short_len;
        return 0;
    }
    if (plan->error)
        plan->fired++;
    return plan->error;
}

void sl_io_fault_arm(sl_io_fault_t *plan)
{
    if (!plan) {
        sl_io_set_hook(NULL, NULL);
        return;
    }
    plan->seen = 0;
    plan->fired = 0;
    sl_io_set_hook(sl_io_fault_hook, plan);
}
