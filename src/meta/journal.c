/* metadata/journal.wal: append with fdatasync, scan and repair at open, replay, and the
 * checkpoint rewrite (meta/journal.h). Entries are [256-byte Prepare header][body]; the
 * in-memory index holds one (op, offset, size) slot per entry, and ops are consecutive. The
 * blocks past the last entry are preallocated (the reserve) so that some appends need no free
 * space on the disk. */
#define _GNU_SOURCE /* FALLOC_FL_KEEP_SIZE */
#include "meta/journal.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <sluice/error.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/io.h"
#include "base/log.h"

typedef struct journal_slot {
    uint64_t op;
    uint64_t offset;
    uint32_t size;
} journal_slot_t;

struct sl_meta_journal {
    int fd;
    char dir[PATH_MAX];
    char path[PATH_MAX];
    char tmp_path[PATH_MAX];
    journal_slot_t *slots; /* slots[i].op == slots[0].op + i */
    size_t count;
    size_t cap;
    uint64_t end;            /* bytes of valid entries: where the next append goes */
    sl_u128_t last_checksum; /* header seal of the last entry, the next one's parent */
    uint64_t last_timestamp;
    bool tail_dirty;       /* bytes of a failed append may lie past end */
    bool dir_sync_pending; /* a rename into dir is not known durable yet */
    /* Blocks are known allocated from 0 up to here (a fallocate that succeeded). A truncate
     * may drop the blocks past the end (ext4 does), so it lowers this to end. */
    uint64_t allocated;
    bool cannot_preallocate; /* the filesystem refused fallocate: no reserve */
    sl_buf_t scratch;        /* one entry read from the file */
};

uint64_t sl_meta_journal_first_op(const sl_meta_journal_t *j)
{
    return j->count ? j->slots[0].op : 0;
}

uint64_t sl_meta_journal_last_op(const sl_meta_journal_t *j)
{
    return j->count ? j->slots[j->count - 1].op : 0;
}

uint64_t sl_meta_journal_entries(const sl_meta_journal_t *j)
{
    return j->count;
}

uint64_t sl_meta_journal_size(const sl_meta_journal_t *j)
{
    return j->end;
}

uint64_t sl_meta_journal_reserved(const sl_meta_journal_t *j)
{
    return j->allocated > j->end ? j->allocated - j->end : 0;
}

/* --- the reserve ------------------------------------------------------------------------ */

/* What must stay preallocated behind an entry of each class. */
static uint64_t reserve_kept(sl_meta_reserve_t reserve)
{
    switch (reserve) {
    case SL_META_RESERVE_KEEP:
        return SL_META_JOURNAL_RESERVE;
    case SL_META_RESERVE_HALF:
        return SL_META_JOURNAL_RESERVE / 2;
    case SL_META_RESERVE_ALL:
        return 0;
    }
    sl_assert(!"unknown reserve class");
    return SL_META_JOURNAL_RESERVE;
}

/* Preallocates the file up to `to` bytes, its size unchanged. Blocks already allocated cost
 * nothing, so asking again after a truncate needs no free space. 0 or -errno. */
static int preallocate(sl_meta_journal_t *j, uint64_t to)
{
    if (j->cannot_preallocate || to <= j->allocated)
        return 0;
    int rc = sl_io_fallocate(j->fd, FALLOC_FL_KEEP_SIZE, 0, (off_t)to);
    if (rc == 0) {
        j->allocated = to;
        return 0;
    }
    if (rc == -EOPNOTSUPP || rc == -ENOSYS) {
        j->cannot_preallocate = true;
        sl_log_warn("metadata journal %s: the filesystem cannot preallocate (%s): no space is "
                    "kept for the operations that free space on a full disk",
                    j->path, strerror(-rc));
        return 0;
    }
    return rc;
}

/* Preallocates a whole reserve past `end`, plus a step so that the next appends need no call;
 * when the disk cannot give the step, the reserve alone. 0 or -errno. */
static int top_up(sl_meta_journal_t *j, uint64_t end)
{
    uint64_t want = end + SL_META_JOURNAL_RESERVE;
    if (j->allocated >= want)
        return 0;
    int rc = preallocate(j, want + SL_META_JOURNAL_RESERVE_STEP);
    if (rc < 0)
        rc = preallocate(j, want);
    return rc;
}

/* Room for e (size bytes) under its class's rule: 0, or -SL_ERR_CANNOT_WRITE_TO_FILE when the
 * entry would use the part of the reserve its class must leave. */
static int reserve_room(sl_meta_journal_t *j, const sl_meta_entry_t *e, uint64_t size,
                        sl_meta_reserve_t reserve)
{
    uint64_t end = j->end + size;
    int rc = top_up(j, end);
    if (rc == 0 || j->allocated >= end + reserve_kept(reserve))
        return 0;
    /* Past the reserve an operation that frees space still tries: the write itself may find
     * a free block, and refusing it could leave no way to make room. */
    if (reserve == SL_META_RESERVE_ALL)
        return 0;
    sl_log_warn("metadata journal %s: no room for op %" PRIu64 " (operation %u) outside the "
                "%" PRIu64 " bytes kept for operations that free space (%s); refused",
                j->path, e->op, e->operation, sl_meta_journal_reserved(j), strerror(-rc));
    return -SL_ERR_CANNOT_WRITE_TO_FILE;
}

static bool slots_reserve(sl_meta_journal_t *j, size_t more)
{
    if (j->count + more <= j->cap)
        return true;
    size_t cap = j->cap ? j->cap * 2 : 64;
    while (cap < j->count + more)
        cap *= 2;
    journal_slot_t *slots = realloc(j->slots, cap * sizeof(*slots));
    if (!slots)
        return false;
    j->slots = slots;
    j->cap = cap;
    return true;
}

/* Reads size bytes at offset (one entry, header and body) into scratch; fewer at end of file. */
static int read_entry(sl_meta_journal_t *j, uint64_t offset, uint32_t size, sl_span_t *out)
{
    sl_buf_reset(&j->scratch);
    uint8_t *p = sl_buf_extend(&j->scratch, size);
    if (!p)
        return -ENOMEM;
    ssize_t got = sl_io_pread_all(j->fd, p, size, (off_t)offset);
    if (got < 0)
        return (int)got;
    *out = sl_span(p, (size_t)got);
    return 0;
}

/* Checks the entry at offset. Returns 0 with *reason NULL when it is valid (h filled), 0 with
 * *reason set when the scan must stop here, or -errno when the file could not be read. */
static int scan_entry(sl_meta_journal_t *j, uint64_t file_size, uint64_t offset,
                      sl_meta_header_t *h, const char **reason)
{
    *reason = NULL;
    uint8_t head[SL_META_HEADER_SIZE];
    if (file_size - offset < SL_META_HEADER_SIZE) {
        *reason = "header cut short";
        return 0;
    }
    ssize_t got = sl_io_pread_all(j->fd, head, sizeof(head), (off_t)offset);
    if (got < 0)
        return (int)got;
    if ((size_t)got < sizeof(head)) {
        *reason = "header cut short";
        return 0;
    }
    int rc = sl_meta_header_decode(head, h);
    if (rc == -SL_ERR_INVALID_STATE_ENTRY_CHECKSUM) {
        *reason = "header checksum mismatch";
        return 0;
    }
    if (rc < 0) {
        *reason = "invalid header field";
        return 0;
    }
    if (file_size - offset < h->size) {
        *reason = "body cut short";
        return 0;
    }
    sl_span_t entry = {0};
    rc = read_entry(j, offset, h->size, &entry);
    if (rc < 0)
        return rc;
    if (entry.len < h->size) {
        *reason = "body cut short"; /* the file shrank while being read */
        return 0;
    }
    if (!sl_meta_body_verify(
            h, sl_span(entry.ptr + SL_META_HEADER_SIZE, entry.len - SL_META_HEADER_SIZE))) {
        *reason = "body checksum mismatch";
        return 0;
    }
    if (j->count && h->entry.op != j->slots[j->count - 1].op + 1)
        *reason = "op does not follow the previous entry";
    else if (j->count && !sl_u128_eq(h->parent, j->last_checksum))
        *reason = "parent does not match the previous entry";
    return 0;
}

static int journal_scan(sl_meta_journal_t *j, sl_meta_journal_info_t *info, char *err,
                        size_t err_len)
{
    uint64_t file_size;
    int rc = sl_io_size(j->fd, &file_size);
    const char *reason = NULL;
    while (rc == 0 && j->end < file_size) {
        sl_meta_header_t h;
        rc = scan_entry(j, file_size, j->end, &h, &reason);
        if (rc < 0 || reason)
            break;
        if (!slots_reserve(j, 1)) {
            rc = -ENOMEM;
            break;
        }
        j->slots[j->count++] = (journal_slot_t){h.entry.op, j->end, h.size};
        j->end += h.size;
        j->last_checksum = h.checksum;
        j->last_timestamp = h.entry.timestamp;
    }
    if (rc < 0) {
        snprintf(err, err_len, "metadata journal %s: cannot read: %s", j->path, strerror(-rc));
        return -SL_ERR_CANNOT_READ_FILE;
    }
    info->torn_bytes = file_size - j->end;
    info->torn_reason = reason;
    if (j->end == file_size)
        return 0;
    sl_log_warn("metadata journal %s: torn tail cut at offset %" PRIu64 " (%" PRIu64
                " bytes dropped after %zu valid entries): %s",
                j->path, j->end, file_size - j->end, j->count, reason);
    rc = sl_io_ftruncate(j->fd, (off_t)j->end);
    if (rc == 0)
        rc = sl_io_fdatasync(j->fd);
    if (rc < 0) {
        snprintf(err, err_len, "metadata journal %s: cannot cut the torn tail at %" PRIu64 ": %s",
                 j->path, j->end, strerror(-rc));
        return -SL_ERR_CANNOT_WRITE_TO_FILE;
    }
    return 0;
}

static int build_path(char *out, const char *dir, const char *name, char *err, size_t err_len)
{
    int n = snprintf(out, PATH_MAX, "%s/%s", dir, name);
    if (n < 0 || n >= PATH_MAX) {
        snprintf(err, err_len, "metadata path too long: %s/%s", dir, name);
        return -SL_ERR_INVALID_CONFIGURATION;
    }
    return 0;
}

int sl_meta_journal_open(sl_meta_journal_t **out, const char *dir, sl_meta_journal_info_t *info,
                         char *err, size_t err_len)
{
    *out = NULL;
    *info = (sl_meta_journal_info_t){0};
    sl_meta_journal_t *j = calloc(1, sizeof(*j));
    if (!j) {
        snprintf(err, err_len, "metadata journal: out of memory");
        return -SL_ERR_CANNOT_READ_FILE;
    }
    j->fd = -1;
    sl_buf_init(&j->scratch, SL_META_ENTRY_SIZE_MAX);
    int rc = build_path(j->path, dir, SL_META_JOURNAL_FILE, err, err_len);
    if (rc == 0)
        rc = build_path(j->tmp_path, dir, SL_META_JOURNAL_TMP_FILE, err, err_len);
    if (rc < 0) {
        sl_meta_journal_close(j);
        return rc;
    }
    snprintf(j->dir, sizeof(j->dir), "%s", dir); /* fits: the longer paths above did */
    /* A leftover of a rewrite that did not reach its rename: the journal itself is whole. */
    sl_io_unlink(j->tmp_path);
    j->fd = sl_io_open(j->path, O_RDWR | O_CREAT, sl_io_file_mode());
    if (j->fd < 0) {
        snprintf(err, err_len, "metadata journal %s: cannot open: %s", j->path, strerror(-j->fd));
        sl_meta_journal_close(j);
        return -SL_ERR_CANNOT_READ_FILE;
    }
    rc = journal_scan(j, info, err, err_len);
    if (rc == 0 && (rc = sl_io_fsync_dir(j->dir)) < 0) {
        snprintf(err, err_len, "metadata journal: cannot fsync directory %s: %s", j->dir,
                 strerror(-rc));
        rc = -SL_ERR_CANNOT_SYNC_FILE;
    }
    if (rc < 0) {
        sl_meta_journal_close(j);
        return rc;
    }
    int reserve = top_up(j, j->end);
    if (reserve < 0) /* not fatal: ordinary operations wait for room, the others can go on */
        sl_log_warn("metadata journal %s: cannot preallocate its reserve (%s): ordinary "
                    "metadata operations are refused until there is room",
                    j->path, strerror(-reserve));
    info->entries = j->count;
    info->first_op = sl_meta_journal_first_op(j);
    info->last_op = sl_meta_journal_last_op(j);
    info->last_timestamp = j->last_timestamp;
    info->size = j->end;
    *out = j;
    return 0;
}

void sl_meta_journal_close(sl_meta_journal_t *j)
{
    if (!j)
        return;
    if (j->fd >= 0)
        sl_io_close(j->fd);
    free(j->slots);
    sl_buf_free(&j->scratch);
    free(j);
}

/* Removes the bytes of a failed append so no reader ever sees them; when that fails too the
 * next append retries it before writing. */
static void cut_tail(sl_meta_journal_t *j)
{
    int rc = sl_io_ftruncate(j->fd, (off_t)j->end);
    if (rc == 0) {
        j->allocated = j->end;
        rc = sl_io_fdatasync(j->fd);
    }
    j->tail_dirty = rc < 0;
}

/* What must hold before bytes go into the file: its name durable and no stale tail. */
static int append_prepare(sl_meta_journal_t *j)
{
    if (j->dir_sync_pending) {
        int rc = sl_io_fsync_dir(j->dir);
        if (rc < 0) {
            sl_log_error("metadata journal: cannot fsync directory %s: %s", j->dir, strerror(-rc));
            return -SL_ERR_CANNOT_SYNC_FILE;
        }
        j->dir_sync_pending = false;
    }
    if (j->tail_dirty) {
        int rc = sl_io_ftruncate(j->fd, (off_t)j->end);
        if (rc < 0) {
            sl_log_error("metadata journal %s: cannot cut a failed append at %" PRIu64 ": %s",
                         j->path, j->end, strerror(-rc));
            return -SL_ERR_CANNOT_WRITE_TO_FILE;
        }
        j->tail_dirty = false;
        j->allocated = j->end;
    }
    return slots_reserve(j, 1) ? 0 : -SL_ERR_CANNOT_WRITE_TO_FILE;
}

int sl_meta_journal_append(sl_meta_journal_t *j, const sl_meta_entry_t *e,
                           sl_meta_reserve_t reserve)
{
    sl_assert(j->count == 0 || e->op == j->slots[j->count - 1].op + 1);
    if (e->op == UINT64_MAX) {
        /* No entry could follow it, and decoding refuses it (meta/entry.c): a journal
         * recovered at op 2^64 - 2 (only a crafted file gets there) takes no more. */
        sl_log_error("metadata journal %s: op %" PRIu64 " is past the last op a journal holds",
                     j->path, e->op);
        return -SL_ERR_CANNOT_WRITE_TO_FILE;
    }
    int rc = append_prepare(j);
    if (rc == 0)
        rc = reserve_room(j, e, SL_META_HEADER_SIZE + e->body.len, reserve);
    if (rc < 0)
        return rc;
    uint8_t head[SL_META_HEADER_SIZE];
    sl_u128_t seal = sl_meta_header_encode(head, e, j->last_checksum);
    struct iovec iov[2] = {{head, sizeof(head)}, {(void *)e->body.ptr, e->body.len}};
    rc = sl_io_pwritev_all(j->fd, iov, e->body.len ? 2 : 1, (off_t)j->end);
    int err = rc < 0 ? -SL_ERR_CANNOT_WRITE_TO_FILE : 0;
    if (rc == 0 && (rc = sl_io_fdatasync(j->fd)) < 0)
        err = -SL_ERR_CANNOT_SYNC_FILE;
    if (err) {
        sl_log_error("metadata journal %s: cannot append op %" PRIu64 " at offset %" PRIu64 ": %s",
                     j->path, e->op, j->end, strerror(-rc));
        cut_tail(j);
        return err;
    }
    uint32_t size = (uint32_t)(SL_META_HEADER_SIZE + e->body.len);
    j->slots[j->count++] = (journal_slot_t){e->op, j->end, size};
    j->end += size;
    j->last_checksum = seal;
    j->last_timestamp = e->timestamp;
    return 0;
}

/* Reads and re-verifies slot i: the bytes were checked when written or scanned, and are checked
 * again on the way out in case the disk changed them since. */
static int load_slot(sl_meta_journal_t *j, size_t i, sl_meta_header_t *h, sl_span_t *entry)
{
    const journal_slot_t *slot = &j->slots[i];
    int rc = read_entry(j, slot->offset, slot->size, entry);
    if (rc < 0) {
        sl_log_error("metadata journal %s: cannot read op %" PRIu64 ": %s", j->path, slot->op,
                     strerror(-rc));
        return -SL_ERR_CANNOT_READ_FILE;
    }
    if (entry->len < slot->size || sl_meta_header_decode(entry->ptr, h) < 0 ||
        h->entry.op != slot->op || h->size != slot->size ||
        !sl_meta_body_verify(
            h, sl_span(entry->ptr + SL_META_HEADER_SIZE, entry->len - SL_META_HEADER_SIZE))) {
        sl_log_error("metadata journal %s: op %" PRIu64 " at offset %" PRIu64
                     " changed on disk since it was verified",
                     j->path, slot->op, slot->offset);
        return -SL_ERR_STATE_FILE_CORRUPTED;
    }
    h->entry.body = sl_span(entry->ptr + SL_META_HEADER_SIZE, entry->len - SL_META_HEADER_SIZE);
    return 0;
}

/* Index of the first slot with op > after_op (count when none). */
static size_t first_slot_after(const sl_meta_journal_t *j, uint64_t after_op)
{
    if (j->count == 0 || after_op < j->slots[0].op)
        return 0;
    uint64_t skip = after_op - j->slots[0].op + 1;
    return skip >= j->count ? j->count : (size_t)skip;
}

int sl_meta_journal_replay(sl_meta_journal_t *j, uint64_t after_op, sl_meta_journal_entry_fn fn,
                           void *ctx)
{
    for (size_t i = first_slot_after(j, after_op); i < j->count; i++) {
        sl_meta_header_t h;
        sl_span_t entry = {0};
        int rc = load_slot(j, i, &h, &entry);
        if (rc == 0)
            rc = fn(ctx, &h.entry);
        if (rc != 0)
            return rc;
    }
    return 0;
}

/* Copies slots from..count into fd (a fresh file), re-verifying each. */
static int copy_slots(sl_meta_journal_t *j, size_t from, int fd)
{
    uint64_t at = 0;
    for (size_t i = from; i < j->count; i++) {
        sl_meta_header_t h;
        sl_span_t entry = {0};
        int rc = load_slot(j, i, &h, &entry);
        if (rc < 0)
            return rc;
        rc = sl_io_pwrite_all(fd, entry.ptr, entry.len, (off_t)at);
        if (rc < 0) {
            sl_log_error("metadata journal %s: cannot write: %s", j->tmp_path, strerror(-rc));
            return -SL_ERR_CANNOT_WRITE_TO_FILE;
        }
        at += entry.len;
    }
    int rc = sl_io_fsync(fd);
    if (rc < 0) {
        sl_log_error("metadata journal %s: cannot fsync: %s", j->tmp_path, strerror(-rc));
        return -SL_ERR_CANNOT_SYNC_FILE;
    }
    return 0;
}

/* The renamed file is now the journal: forget the dropped slots and move offsets down. */
static void switch_to(sl_meta_journal_t *j, size_t from, int fd)
{
    uint64_t base = from < j->count ? j->slots[from].offset : j->end;
    sl_io_close(j->fd);
    j->fd = fd;
    memmove(j->slots, j->slots + from, (j->count - from) * sizeof(*j->slots));
    j->count -= from;
    for (size_t i = 0; i < j->count; i++)
        j->slots[i].offset -= base;
    j->end -= base;
    j->tail_dirty = false;
    j->allocated = 0;
}

int sl_meta_journal_rewrite(sl_meta_journal_t *j, uint64_t checkpoint_op)
{
    size_t from = first_slot_after(j, checkpoint_op);
    if (from == 0)
        return 0; /* nothing covered by the checkpoint */
    int fd = sl_io_open(j->tmp_path, O_RDWR | O_CREAT | O_TRUNC, sl_io_file_mode());
    if (fd < 0) {
        sl_log_error("metadata journal %s: cannot create: %s", j->tmp_path, strerror(-fd));
        return -SL_ERR_CANNOT_WRITE_TO_FILE;
    }
    int rc = copy_slots(j, from, fd);
    if (rc == 0 && (rc = sl_io_rename(j->tmp_path, j->path)) < 0) {
        sl_log_error("metadata journal: cannot rename %s to %s: %s", j->tmp_path, j->path,
                     strerror(-rc));
        rc = -SL_ERR_CANNOT_OVERWRITE_FILE;
    }
    if (rc < 0) {
        sl_io_close(fd);
        sl_io_unlink(j->tmp_path); /* best effort: open removes leftovers too */
        return rc;
    }
    switch_to(j, from, fd);
    /* After the rename, so the old file's blocks are free again: rewriting must not need room
     * for two reserves. */
    int reserve = top_up(j, j->end);
    if (reserve < 0)
        sl_log_warn("metadata journal %s: cannot preallocate its reserve after the rewrite (%s); "
                    "retried by the next append",
                    j->path, strerror(-reserve));
    rc = sl_io_fsync_dir(j->dir);
    if (rc < 0) {
        sl_log_error("metadata journal: cannot fsync directory %s: %s", j->dir, strerror(-rc));
        j->dir_sync_pending = true;
        return -SL_ERR_CANNOT_SYNC_FILE;
    }
    return 0;
}
