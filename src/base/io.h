/* File I/O over libc through one seam that tests can make fail.
 *
 * Every durable file operation (journal, snapshot, superblock, later segments) goes through
 * these wrappers. They return -errno on failure and retry EINTR. A process-wide hook, set only
 * by tests, sees each call first and may fail it (ENOSPC, EIO, ...) or shorten a read or write;
 * with no hook set the cost is one predictable branch. sl_io_fault_t is a ready-made hook:
 * "fail the 3rd write to a path containing journal.wal with ENOSPC, and everything after". */
#ifndef SL_BASE_IO_H
#define SL_BASE_IO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "base/assert.h"
#include "base/bytes.h"

/* The calls a hook sees. Each wrapper below is one kind, except sl_io_close (never faulted). */
typedef enum sl_io_call {
    SL_IO_OPEN = 0,
    SL_IO_WRITE,
    SL_IO_PWRITE,
    SL_IO_WRITEV,
    SL_IO_PWRITEV,
    SL_IO_PREAD,
    SL_IO_FDATASYNC,
    SL_IO_FSYNC,
    SL_IO_FSYNC_DIR,
    SL_IO_RENAME,
    SL_IO_UNLINK,
    SL_IO_FTRUNCATE,
    SL_IO_MKDIR,
    SL_IO_SIZE,
    SL_IO_FALLOCATE,
    SL_IO_CALL_COUNT,
} sl_io_call_t;

#define SL_IO_BIT(call) (1u << (call))
/* Masks for sl_io_fault_t.calls. */
#define SL_IO_MASK_WRITES                                                                          \
    (SL_IO_BIT(SL_IO_WRITE) | SL_IO_BIT(SL_IO_PWRITE) | SL_IO_BIT(SL_IO_WRITEV) |                  \
     SL_IO_BIT(SL_IO_PWRITEV))
#define SL_IO_MASK_SYNCS                                                                           \
    (SL_IO_BIT(SL_IO_FDATASYNC) | SL_IO_BIT(SL_IO_FSYNC) | SL_IO_BIT(SL_IO_FSYNC_DIR))
/* Every call: what a crash stops. */
#define SL_IO_MASK_ALL ((1u << SL_IO_CALL_COUNT) - 1u)

/* One call as the hook sees it. */
typedef struct sl_io_op {
    sl_io_call_t call;
    int fd;            /* -1 for calls made by path */
    const char *path;  /* the path; for fd calls the file's current path (from /proc) */
    const char *path2; /* rename: the target; else NULL */
    size_t len;        /* reads and writes: bytes asked for; the hook may lower it */
} sl_io_op_t;

/* Returns 0 to let the call run (a read or write moves at most op->len bytes, which must be at
 * least 1 when the caller asked for any), or a positive errno to fail it without running it. */
typedef int (*sl_io_hook_fn)(void *ctx, sl_io_op_t *op);

/* Installs (fn != NULL) or removes the hook. Tests only: not thread-safe against calls in
 * flight. The path of an fd call is looked up when the call is made, so files opened before the
 * hook was installed are matched by path too. */
void sl_io_set_hook(sl_io_hook_fn fn, void *ctx);

/* Called after every fdatasync, fsync and directory fsync that ran, with its duration in
 * nanoseconds, on whichever thread made the call (the observer must be thread-safe). Set once
 * at start-up (the server's metrics, server/metrics.h) and cleared before the observer goes;
 * NULL: none. With no observer the cost is one predictable branch. */
typedef void (*sl_io_sync_observer_fn)(void *ctx, uint64_t ns);
void sl_io_set_sync_observer(sl_io_sync_observer_fn fn, void *ctx);

/* --- the modes of what the process creates ---------------------------------------------- */

/* The server's files hold password hashes, token digests and every message: by default only the
 * owner may read them (files 0600, directories 0700); with group access on, the group may read
 * them too (0640, 0750), never write. Callers that create a file or directory pass these modes.
 * Process-wide: set once at start-up, before anything is created (default: owner only). */
void sl_io_set_group_access(bool group);
mode_t sl_io_file_mode(void);
mode_t sl_io_dir_mode(void);

/* --- the wrappers: -errno on failure ----------------------------------------------------- */

SL_WUR int sl_io_open(const char *path, int flags, mode_t mode); /* fd */
int sl_io_close(int fd);
SL_WUR ssize_t sl_io_write(int fd, const void *p, size_t n);
SL_WUR ssize_t sl_io_pwrite(int fd, const void *p, size_t n, off_t off);
SL_WUR ssize_t sl_io_writev(int fd, const struct iovec *iov, int iovcnt);
SL_WUR ssize_t sl_io_pwritev(int fd, const struct iovec *iov, int iovcnt, off_t off);
SL_WUR ssize_t sl_io_pread(int fd, void *p, size_t n, off_t off);
SL_WUR int sl_io_fdatasync(int fd);
SL_WUR int sl_io_fsync(int fd);
/* Opens the directory, fsyncs it and closes it: makes creates, renames and unlinks durable. */
SL_WUR int sl_io_fsync_dir(const char *path);
SL_WUR int sl_io_rename(const char *from, const char *to);
int sl_io_unlink(const char *path); /* often best effort: result may be ignored */
SL_WUR int sl_io_ftruncate(int fd, off_t len);
SL_WUR int sl_io_mkdir(const char *path, mode_t mode);
/* The file's size in bytes (fstat). */
SL_WUR int sl_io_size(int fd, uint64_t *out);
/* fallocate(2): allocates [off, off + len) (mode FALLOC_FL_KEEP_SIZE leaves the size alone).
 * -EOPNOTSUPP where the filesystem cannot. */
SL_WUR int sl_io_fallocate(int fd, int mode, off_t off, off_t len);

/* --- loops over the wrappers ------------------------------------------------------------- */

/* Writes all n bytes at off, continuing after short writes. 0 or -errno. */
SL_WUR int sl_io_pwrite_all(int fd, const void *p, size_t n, off_t off);
/* Writes every iovec (at most 8) at off, continuing after short writes. 0 or -errno. */
SL_WUR int sl_io_pwritev_all(int fd, const struct iovec *iov, int iovcnt, off_t off);
/* Reads up to n bytes at off, continuing after short reads until n or end of file.
 * Returns the bytes read (fewer than n only at end of file) or -errno. */
SL_WUR ssize_t sl_io_pread_all(int fd, void *p, size_t n, off_t off);
/* Reads a whole file into out (reset first). -ENOENT when absent, -EFBIG when over max bytes. */
SL_WUR int sl_io_read_file(const char *path, sl_buf_t *out, size_t max);
/* Reads at most cap - 1 bytes (cap >= 1) of a small text file, such as one of /proc, which
 * reports no size, into buf and NUL-terminates it. Returns the length or -errno. Plain
 * open/read: no fault plan counts or fails these calls. */
SL_WUR long sl_io_read_text(const char *path, char *buf, size_t cap);
/* Creates or replaces path with data and fsyncs it (not its directory). 0 or -errno. */
SL_WUR int sl_io_write_file_synced(const char *path, sl_span_t data);

/* --- the ready-made fault plan --------------------------------------------------------- */

/* Counts calls matching `calls` (0 = SL_IO_MASK_ALL) and `path_contains` (NULL = any path;
 * else a substring of the path or rename target). Matching calls number 0, 1, 2, ...; call
 * number `after` and the `count` - 1 after it (count 0 = every later one: a full disk, or a
 * crash) are faulted. A faulted call fails with `error`, except that a read or write asked for
 * more than a non-zero `short_len` bytes moves only short_len bytes and succeeds when it is the
 * first faulted call or `error` is 0. So {short_len 10, error ENOSPC, count 0} tears a write
 * after 10 bytes and fails what follows; {short_len 1, error 0} makes every write short.
 * A non-zero `delay_ms` makes a slow disk: each faulted call first sleeps that long (on the
 * thread that made it), then fails with `error` or, when `error` is 0, runs and succeeds. So
 * {calls SL_IO_MASK_SYNCS, delay_ms 200} makes every sync take at least 200 ms. */
typedef struct sl_io_fault {
    uint32_t calls;
    const char *path_contains;
    uint64_t after;
    uint64_t count;
    int error;
    size_t short_len;
    uint32_t delay_ms; /* sleep before each faulted call; 0: none */
    /* outputs */
    uint64_t seen;  /* matching calls so far */
    uint64_t fired; /* calls failed, shortened or delayed */
    /* optional trace of every matching call (call, path) for order checks */
    void (*trace)(void *trace_ctx, const sl_io_op_t *op);
    void *trace_ctx;
} sl_io_fault_t;

/* The sl_io_hook_fn for a sl_io_fault_t (ctx = the plan). */
int sl_io_fault_hook(void *ctx, sl_io_op_t *op);
/* Installs plan as the hook with seen/fired reset; NULL removes it. */
void sl_io_fault_arm(sl_io_fault_t *plan);

const char *sl_io_call_name(sl_io_call_t call);

#endif
