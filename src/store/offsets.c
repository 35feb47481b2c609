/* Consumer offsets of a partition (store/offsets.h, storage.md 5): the 16-byte record, the
 * table in memory, loading at open, stores, deletes and purge. */
#include "store/offsets.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sluice/error.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/io.h"
#include "base/log.h"
#include "base/xxh3.h"
#include "store/partition_internal.h"

/* --- the record ----------------------------------------------------------------------------- */

void sl_offsets_record_encode(uint8_t out[SL_OFFSETS_RECORD_SIZE], uint64_t offset)
{
    sl_store_u64(out, offset);
    sl_store_u64(out + 8, sl_xxh3_64(out, 8));
}

sl_offsets_record_t sl_offsets_record_decode(sl_span_t bytes, uint64_t *offset)
{
    if (bytes.len < SL_OFFSETS_LEGACY_SIZE)
        return SL_OFFSETS_RECORD_TORN;
    if (bytes.len == SL_OFFSETS_LEGACY_SIZE) {
        *offset = sl_load_u64(bytes.ptr);
        return SL_OFFSETS_RECORD_LEGACY;
    }
    if (bytes.len != SL_OFFSETS_RECORD_SIZE ||
        sl_xxh3_64(bytes.ptr, 8) != sl_load_u64(bytes.ptr + 8))
        return SL_OFFSETS_RECORD_CORRUPT;
    *offset = sl_load_u64(bytes.ptr);
    return SL_OFFSETS_RECORD_OK;
}

/* --- the table ------------------------------------------------------------------------------ */

static uint64_t key_of(sl_offsets_kind_t kind, uint32_t id)
{
    return (uint64_t)kind << 32 | id;
}

/* Index of the first slot with a key >= key; *found when it is key. */
static size_t table_find(const offset_table_t *t, uint64_t key, bool *found)
{
    size_t lo = 0, hi = t->count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (t->slots[mid].key < key)
            lo = mid + 1;
        else
            hi = mid;
    }
    *found = lo < t->count && t->slots[lo].key == key;
    return lo;
}

static bool table_reserve(offset_table_t *t)
{
    if (t->count < t->cap)
        return true;
    size_t cap = t->cap ? t->cap * 2 : 16;
    offset_slot_t *slots = realloc(t->slots, cap * sizeof(*slots));
    if (!slots)
        return false;
    t->slots = slots;
    t->cap = cap;
    return true;
}

/* Sets key to offset; the caller reserved room when key may be new. */
static void table_set(offset_table_t *t, uint64_t key, uint64_t offset)
{
    bool found;
    size_t i = table_find(t, key, &found);
    if (!found) {
        sl_assert(t->count < t->cap);
        memmove(t->slots + i + 1, t->slots + i, (t->count - i) * sizeof(*t->slots));
        t->count++;
    }
    t->slots[i] = (offset_slot_t){key, offset};
}

static void table_remove(offset_table_t *t, size_t i)
{
    memmove(t->slots + i, t->slots + i + 1, (t->count - i - 1) * sizeof(*t->slots));
    t->count--;
}

/* --- paths ---------------------------------------------------------------------------------- */

bool sl_offsets_dir_path(char out[PATH_MAX], const char *dir, const char *child)
{
    int n = child ? snprintf(out, PATH_MAX, "%s/%s/%s", dir, SL_OFFSETS_DIR, child)
                  : snprintf(out, PATH_MAX, "%s/%s", dir, SL_OFFSETS_DIR);
    return n > 0 && n < PATH_MAX;
}

static const char *kind_dir(sl_offsets_kind_t kind)
{
    return kind == SL_OFFSETS_GROUP ? SL_OFFSETS_GROUPS : SL_OFFSETS_CONSUMERS;
}

static bool file_path(char out[PATH_MAX], const sl_partition_t *p, sl_offsets_kind_t kind,
                      uint32_t id)
{
    int n =
        snprintf(out, PATH_MAX, "%s/%s/%s/%" PRIu32, p->dir, SL_OFFSETS_DIR, kind_dir(kind), id);
    return n > 0 && n < PATH_MAX;
}

static bool kind_valid(sl_offsets_kind_t kind)
{
    return kind == SL_OFFSETS_CONSUMER || kind == SL_OFFSETS_GROUP;
}

/* A file name the store writes: the id in canonical decimal ("7", never "007"). */
static bool parse_id(const char *name, uint32_t *id)
{
    size_t len = strlen(name);
    if (len == 0 || len > 10 || (name[0] == '0' && len > 1))
        return false;
    uint64_t value = 0;
    for (size_t i = 0; i < len; i++) {
        if (name[i] < '0' || name[i] > '9')
            return false;
        value = value * 10 + (uint64_t)(name[i] - '0');
    }
    if (value > UINT32_MAX)
        return false;
    *id = (uint32_t)value;
    return true;
}

/* --- load ----------------------------------------------------------------------------------- */

static int write_record(const char *path, uint64_t offset, bool known, bool fsync);

/* An offset stored past the partition's last message: the messages it covered were lost after
 * it was written (a topic without enforce_fsync acknowledges from memory, and a kill loses what
 * was not flushed, while the offset's file survives). The new messages take those offsets
 * again, so "next" (stored + 1) would skip them. The offset becomes the last message there is,
 * as StoreConsumerOffset would have accepted (an offset above the current one is 4100), and
 * with no message left it is dropped, as none can be stored on an empty partition. The repair
 * is written and synced before the partition serves: left in memory only, a later restart
 * would read the old value back once new messages reach it. Returns false when the offset is
 * dropped. A failed repair is logged and the repaired value serves until the next restart. */
static bool fit_to_end(const sl_partition_t *p, sl_offsets_kind_t kind, const char *path,
                       uint64_t *offset)
{
    if (p->next_offset > *offset)
        return true;
    if (p->next_offset == 0) {
        sl_log_warn("consumer offset %s: %" PRIu64 " is past the partition's end (no message "
                    "left): dropped",
                    path, *offset);
        char dir[PATH_MAX];
        int rc = sl_io_unlink(path);
        if (rc == 0)
            rc = sl_offsets_dir_path(dir, p->dir, kind_dir(kind)) ? sl_io_fsync_dir(dir)
                                                                  : -ENAMETOOLONG;
        if (rc < 0)
            sl_log_error("consumer offset %s: cannot drop it: %s", path, strerror(-rc));
        return false;
    }
    uint64_t last = p->next_offset - 1;
    sl_log_warn("consumer offset %s: %" PRIu64 " is past the partition's end (offset %" PRIu64
                "): set to %" PRIu64,
                path, *offset, last, last);
    *offset = last;
    if (write_record(path, last, false, true) < 0)
        sl_log_error("consumer offset %s: the repair is not written; a restart reads the old "
                     "value again",
                     path);
    return true;
}

static int load_file(sl_partition_t *p, sl_offsets_kind_t kind, uint32_t id, const char *path,
                     sl_buf_t *scratch)
{
    int rc = sl_io_read_file(path, scratch, 64);
    if (rc == -EFBIG) {
        sl_log_warn("consumer offset %s: too long, discarded", path);
        return 0;
    }
    if (rc < 0)
        return rc;
    uint64_t offset;
    switch (sl_offsets_record_decode(sl_buf_span(scratch), &offset)) {
    case SL_OFFSETS_RECORD_TORN:
        sl_log_warn("consumer offset %s: torn (%zu bytes), ignored", path, scratch->len);
        return 0;
    case SL_OFFSETS_RECORD_CORRUPT:
        sl_log_warn("consumer offset %s: checksum mismatch, discarded", path);
        return 0;
    case SL_OFFSETS_RECORD_OK:
    case SL_OFFSETS_RECORD_LEGACY:
        break;
    }
    if (!fit_to_end(p, kind, path, &offset))
        return 0;
    if (!table_reserve(&p->offsets))
        return -ENOMEM;
    table_set(&p->offsets, key_of(kind, id), offset);
    return 0;
}

static int load_kind(sl_partition_t *p, sl_offsets_kind_t kind, char *err, size_t err_len)
{
    char dir[PATH_MAX], path[PATH_MAX];
    if (!sl_offsets_dir_path(dir, p->dir, kind_dir(kind)))
        return -ENAMETOOLONG;
    DIR *d = opendir(dir);
    if (!d && errno == ENOENT)
        return 0; /* made with the first stored offset (ensure_dirs) */
    if (!d) {
        snprintf(err, err_len, "partition %s: cannot list %s: %s", p->dir, dir, strerror(errno));
        return -SL_ERR_CANNOT_READ_CONSUMER_OFFSETS;
    }
    p->offsets_dirs = true;
    sl_buf_t scratch;
    sl_buf_init(&scratch, 0);
    int rc = 0;
    struct dirent *de;
    while (rc == 0 && (de = readdir(d)) != NULL) {
        uint32_t id;
        if (de->d_name[0] == '.')
            continue;
        if (!parse_id(de->d_name, &id)) {
            sl_log_warn("partition %s: ignoring %s/%s (not a consumer id)", p->dir, dir,
                        de->d_name);
            continue;
        }
        int n = snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
        rc =
            n > 0 && n < (int)sizeof(path) ? load_file(p, kind, id, path, &scratch) : -ENAMETOOLONG;
        if (rc < 0)
            snprintf(err, err_len, "partition %s: cannot read consumer offset %s: %s", p->dir, path,
                     strerror(-rc));
    }
    closedir(d);
    sl_buf_free(&scratch);
    return rc < 0 ? -SL_ERR_CANNOT_READ_CONSUMER_OFFSETS : 0;
}

int sl_offsets_load(sl_partition_t *p, char *err, size_t err_len)
{
    int rc = load_kind(p, SL_OFFSETS_CONSUMER, err, err_len);
    if (rc == 0)
        rc = load_kind(p, SL_OFFSETS_GROUP, err, err_len);
    return rc;
}

void sl_offsets_free(sl_partition_t *p)
{
    free(p->offsets.slots);
    p->offsets = (offset_table_t){0};
}

/* --- store, get, delete -------------------------------------------------------------------- */

/* Writes the record over the file in place: a 16-byte write at offset 0 never leaves a
 * shorter file behind, where truncate-then-write would leave an empty one after a crash in
 * between. A file this process has not written yet is cut to 16 bytes after the write, in
 * case it was longer (a corrupt one). */
static int write_record(const char *path, uint64_t offset, bool known, bool fsync)
{
    int fd = sl_io_open(path, O_WRONLY | O_CREAT, sl_io_file_mode());
    if (fd < 0) {
        sl_log_error("consumer offset %s: cannot open: %s", path, strerror(-fd));
        return -SL_ERR_CANNOT_OPEN_CONSUMER_OFFSETS_FILE;
    }
    uint8_t record[SL_OFFSETS_RECORD_SIZE];
    sl_offsets_record_encode(record, offset);
    int err = -SL_ERR_CANNOT_WRITE_TO_FILE;
    int rc = sl_io_pwrite_all(fd, record, sizeof(record), 0);
    if (rc == 0 && !known)
        rc = sl_io_ftruncate(fd, SL_OFFSETS_RECORD_SIZE);
    if (rc == 0 && fsync) {
        err = -SL_ERR_CANNOT_SYNC_FILE;
        rc = sl_io_fdatasync(fd);
    }
    sl_io_close(fd);
    if (rc < 0) {
        sl_log_error("consumer offset %s: cannot store %" PRIu64 ": %s", path, offset,
                     strerror(-rc));
        return err;
    }
    return 0;
}

/* offsets/, offsets/consumers and offsets/groups, made with the first offset
 * stored rather than with the partition (a topic's many partitions open
 * faster); their names join the tree made durable next. */
static int ensure_dirs(sl_partition_t *p)
{
    if (p->offsets_dirs)
        return 0;
    if (sl_partition_make_dir(p) < 0)
        return -SL_ERR_CANNOT_OPEN_CONSUMER_OFFSETS_FILE;
    char dir[PATH_MAX];
    mode_t mode = sl_io_dir_mode();
    int rc = sl_offsets_dir_path(dir, p->dir, NULL) ? sl_io_mkdir(dir, mode) : -ENAMETOOLONG;
    for (int k = 0; k < 2 && (rc == 0 || rc == -EEXIST); k++) {
        sl_offsets_kind_t kind = k == 0 ? SL_OFFSETS_CONSUMER : SL_OFFSETS_GROUP;
        rc = sl_offsets_dir_path(dir, p->dir, kind_dir(kind)) ? sl_io_mkdir(dir, mode)
                                                              : -ENAMETOOLONG;
    }
    if (rc < 0 && rc != -EEXIST) {
        sl_log_error("partition %s: cannot create its offsets directories: %s", p->dir,
                     strerror(-rc));
        return -SL_ERR_CANNOT_OPEN_CONSUMER_OFFSETS_FILE;
    }
    p->offsets_dirs = true;
    p->tree_durable = false; /* two new names */
    return 0;
}

int sl_offsets_store(sl_partition_t *p, sl_offsets_kind_t kind, uint32_t id, uint64_t offset,
                     bool fsync, bool never_backwards)
{
    if (!kind_valid(kind))
        return -SL_ERR_INVALID_COMMAND;
    uint64_t key = key_of(kind, id);
    bool found;
    size_t i = table_find(&p->offsets, key, &found);
    if (found && never_backwards && p->offsets.slots[i].offset >= offset)
        return 0;
    char path[PATH_MAX];
    if (!file_path(path, p, kind, id) || !table_reserve(&p->offsets))
        return -SL_ERR_CANNOT_OPEN_CONSUMER_OFFSETS_FILE;
    int rc = sl_partition_purge_record(p) < 0 ? -SL_ERR_CANNOT_WRITE_TO_FILE : 0;
    if (rc == 0)
        rc = ensure_dirs(p);
    if (rc == 0 && fsync)
        rc = sl_partition_tree_durable(p);
    if (rc == 0)
        rc = write_record(path, offset, found, fsync);
    if (rc == 0 && fsync && !found) {
        char dir[PATH_MAX];
        /* A new file's name must be as durable as its bytes. */
        if (!sl_offsets_dir_path(dir, p->dir, kind_dir(kind)) || sl_io_fsync_dir(dir) < 0)
            rc = -SL_ERR_CANNOT_SYNC_FILE;
    }
    if (rc < 0)
        return rc;
    table_set(&p->offsets, key, offset);
    return 0;
}

int sl_offsets_get(const sl_partition_t *p, sl_offsets_kind_t kind, uint32_t id, uint64_t *offset)
{
    bool found;
    size_t i = table_find(&p->offsets, key_of(kind, id), &found);
    if (!found)
        return -SL_ERR_CONSUMER_OFFSET_NOT_FOUND;
    *offset = p->offsets.slots[i].offset;
    return 0;
}

int sl_offsets_delete(sl_partition_t *p, sl_offsets_kind_t kind, uint32_t id)
{
    if (!kind_valid(kind))
        return -SL_ERR_INVALID_COMMAND;
    bool found;
    size_t i = table_find(&p->offsets, key_of(kind, id), &found);
    char path[PATH_MAX];
    if (!file_path(path, p, kind, id))
        return -SL_ERR_CANNOT_DELETE_CONSUMER_OFFSET_FILE;
    /* A torn or corrupt file of that id is not an offset, but it goes too. */
    int rc = sl_io_unlink(path);
    if (!found)
        return -SL_ERR_CONSUMER_OFFSET_NOT_FOUND;
    if (rc < 0 && rc != -ENOENT) {
        sl_log_error("consumer offset %s: cannot delete: %s", path, strerror(-rc));
        return -SL_ERR_CANNOT_DELETE_CONSUMER_OFFSET_FILE;
    }
    table_remove(&p->offsets, i);
    if (p->cfg.enforce_fsync) {
        char dir[PATH_MAX];
        if (sl_offsets_dir_path(dir, p->dir, kind_dir(kind)) && sl_io_fsync_dir(dir) < 0)
            sl_log_warn("consumer offset %s: deleted, but the directory did not fsync", path);
    }
    return 0;
}

uint32_t sl_offsets_count(const sl_partition_t *p)
{
    return (uint32_t)p->offsets.count;
}

bool sl_offsets_at(const sl_partition_t *p, uint32_t i, sl_offsets_kind_t *kind, uint32_t *id,
                   uint64_t *offset)
{
    if (i >= p->offsets.count)
        return false;
    const offset_slot_t *s = &p->offsets.slots[i];
    *kind = (sl_offsets_kind_t)(s->key >> 32);
    *id = (uint32_t)s->key;
    *offset = s->offset;
    return true;
}

/* --- purge ---------------------------------------------------------------------------------- */

static int purge_kind(const sl_partition_t *p, sl_offsets_kind_t kind)
{
    char dir[PATH_MAX], path[PATH_MAX];
    if (!sl_offsets_dir_path(dir, p->dir, kind_dir(kind)))
        return -SL_ERR_CANNOT_DELETE_CONSUMER_OFFSET_FILE;
    DIR *d = opendir(dir);
    if (!d)
        return errno == ENOENT ? 0 : -SL_ERR_CANNOT_DELETE_CONSUMER_OFFSET_FILE;
    int rc = 0;
    uint32_t unlinked = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        int n = snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
        int err = n > 0 && n < (int)sizeof(path) ? sl_io_unlink(path) : -ENAMETOOLONG;
        if (err < 0 && err != -ENOENT) {
            sl_log_error("consumer offset %s: cannot delete: %s", path, strerror(-err));
            rc = -SL_ERR_CANNOT_DELETE_CONSUMER_OFFSET_FILE;
        }
        unlinked += err == 0;
    }
    closedir(d);
    /* Durable before the purge record that says they are gone (written later, when owed). */
    if (unlinked > 0 && sl_io_fsync_dir(dir) < 0)
        sl_log_warn("partition %s: %s did not fsync after the purge", p->dir, dir);
    return rc;
}

int sl_offsets_purge(sl_partition_t *p)
{
    p->offsets.count = 0;
    /* No offsets directory was found at open or made since: nothing to list. */
    if (!p->offsets_dirs)
        return 0;
    int rc = purge_kind(p, SL_OFFSETS_CONSUMER);
    int err = purge_kind(p, SL_OFFSETS_GROUP);
    return rc < 0 ? rc : err;
}
