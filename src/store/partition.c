/* Partition lifecycle (store/partition.h): configuration, the directory tree, boot recovery of
 * the segment chain (storage.md 4), accessors, close and removal. Appends live in append.c,
 * polls in poll.c, deletion and retention in retention.c. */
#include "store/partition.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <sluice/error.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/io.h"
#include "base/limits.h"
#include "base/log.h"
#include "store/partition_internal.h"
#include "store/purge_gen.h"

/* A read buffer grown past this by one large record is given back after the poll. */
#define READ_BUF_KEEP (4u * 1024u * 1024u)

static void config_resolve(sl_partition_config_t *c)
{
    if (c->segment_size == 0)
        c->segment_size = SL_SEGMENT_SIZE_DEFAULT;
    if (c->messages_required_to_save == 0)
        c->messages_required_to_save = SL_MESSAGES_TO_SAVE_DEFAULT;
    if (c->size_of_messages_required_to_save == 0)
        c->size_of_messages_required_to_save = SL_SIZE_TO_SAVE_DEFAULT;
    if (c->batch_max == 0)
        c->batch_max = SL_FRAME_MAX_DEFAULT;
    if (c->message_expiry == 0)
        c->message_expiry = UINT64_MAX;
    if (c->max_size_share == 0)
        c->max_size_share = UINT64_MAX;
}

void sl_partition_config_from_topic(const sl_topic_config_t *topic, uint32_t partitions_count,
                                    sl_partition_config_t *out)
{
    *out = (sl_partition_config_t){
        .segment_size = topic->segment_size,
        .messages_required_to_save = topic->messages_required_to_save,
        .size_of_messages_required_to_save = topic->size_of_messages_required_to_save,
        .enforce_fsync = topic->enforce_fsync,
        .preallocate_segments = topic->preallocate_segments,
        .validate_checksum = true,
        .message_expiry = topic->message_expiry,
        .max_size_share = UINT64_MAX,
    };
    if (topic->max_topic_size != SL_TOPIC_SIZE_SERVER_DEFAULT &&
        topic->max_topic_size != SL_TOPIC_SIZE_UNLIMITED && partitions_count > 0)
        out->max_size_share = topic->max_topic_size / partitions_count;
}

void sl_partition_reconfigure(sl_partition_t *p, const sl_partition_config_t *cfg)
{
    sl_partition_config_t next = *cfg;
    config_resolve(&next);
    p->cfg.message_expiry = next.message_expiry;
    p->cfg.max_size_share = next.max_size_share;
    p->cfg.validate_checksum = next.validate_checksum;
}

bool sl_partition_refused(int rc)
{
    return rc == -SL_ERR_CANNOT_READ_INDEX_POSITION || rc == -SL_ERR_STATE_FILE_CORRUPTED;
}

/* --- the directory tree --------------------------------------------------------------------- */

/* fsyncs the directory holding path (path is modified and restored). */
static int fsync_parent(char *path)
{
    char *slash = strrchr(path, '/');
    if (!slash)
        return sl_io_fsync_dir(".");
    if (slash == path)
        return sl_io_fsync_dir("/");
    *slash = '\0';
    int rc = sl_io_fsync_dir(path);
    *slash = '/';
    return rc;
}

/* Creates path and its missing parents. Their names are made durable later,
 * when something durable is written (sl_partition_tree_durable). Leaf first:
 * a partition's parents exist once its topic has one partition directory, so
 * the usual case is one mkdir; only when it answers ENOENT does the walk go up
 * to the deepest ancestor that exists and come back down creating the rest
 * (creating every component from the root, as before, cost a failed mkdir of
 * each parent, a path walk each, on the loop thread, for every partition's
 * first segment: docs/benchmarks.md, "Issue 14", shape 3). */
static int make_dirs(const char *path)
{
    char buf[PATH_MAX];
    size_t len = strlen(path);
    if (len == 0 || len >= sizeof(buf))
        return -ENAMETOOLONG;
    memcpy(buf, path, len + 1);
    int rc;
    /* Up: cut the last component off until a mkdir succeeds or finds it there. */
    while ((rc = sl_io_mkdir(buf, sl_io_dir_mode())) == -ENOENT) {
        char *slash = strrchr(buf, '/');
        while (slash && slash > buf && slash[-1] == '/')
            slash--; /* "a//b": cut at the first of the slashes */
        if (!slash || slash == buf)
            return rc; /* nothing above to create */
        *slash = '\0';
    }
    if (rc < 0 && rc != -EEXIST)
        return rc;
    /* Down: put each cut slash back and create that component. */
    for (size_t at = strlen(buf); at < len; at = strlen(buf)) {
        while (at < len && buf[at] == '\0')
            buf[at++] = '/';
        rc = sl_io_mkdir(buf, sl_io_dir_mode());
        if (rc < 0 && rc != -EEXIST)
            return rc;
    }
    return 0;
}

int sl_partition_make_dir(sl_partition_t *p)
{
    if (p->dir_made)
        return 0;
    int rc = make_dirs(p->dir);
    if (rc < 0) {
        sl_log_error("partition %s: cannot create it: %s", p->dir, strerror(-rc));
        return -SL_ERR_CANNOT_CREATE_PARTITION_DIRECTORY;
    }
    p->dir_made = true;
    return 0;
}

int sl_partition_tree_durable(sl_partition_t *p)
{
    if (p->tree_durable)
        return 0;
    if (sl_partition_make_dir(p) < 0)
        return -SL_ERR_CANNOT_SYNC_FILE;
    char path[PATH_MAX];
    int rc = sl_offsets_dir_path(path, p->dir, SL_OFFSETS_CONSUMERS) ? 0 : -ENAMETOOLONG;
    /* offsets/ (names consumers and groups) when it exists, then the
     * partition directory (its files and offsets/), then each ancestor's
     * parent up to the one holding streams/: 6 levels below the data root. */
    if (rc == 0 && p->offsets_dirs)
        rc = fsync_parent(path);
    if (rc == 0)
        rc = sl_io_fsync_dir(p->dir);
    size_t len = strlen(p->dir);
    if (len >= sizeof(path))
        rc = -ENAMETOOLONG;
    else
        memcpy(path, p->dir, len + 1);
    for (int level = 0; rc == 0 && level < 6; level++) {
        rc = fsync_parent(path);
        char *slash = strrchr(path, '/');
        if (!slash || slash == path)
            break;
        *slash = '\0';
    }
    if (rc < 0) {
        sl_log_error("partition %s: cannot make its directories durable: %s", p->dir,
                     strerror(-rc));
        return -SL_ERR_CANNOT_SYNC_FILE;
    }
    p->tree_durable = true;
    return 0;
}

static int make_tree(sl_partition_t *p, char *err, size_t err_len)
{
    int rc = make_dirs(p->dir);
    if (rc < 0) {
        snprintf(err, err_len, "partition %s: cannot create it: %s", p->dir, strerror(-rc));
        return -SL_ERR_CANNOT_CREATE_PARTITION_DIRECTORY;
    }
    p->dir_made = true;
    return 0;
}

/* --- scanning ------------------------------------------------------------------------------- */

typedef struct u64_list {
    uint64_t *items;
    size_t count;
    size_t cap;
} u64_list_t;

static bool u64_push(u64_list_t *l, uint64_t v)
{
    if (l->count == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 16;
        uint64_t *items = realloc(l->items, cap * sizeof(*items));
        if (!items)
            return false;
        l->items = items;
        l->cap = cap;
    }
    l->items[l->count++] = v;
    return true;
}

static int u64_cmp(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static bool u64_contains(const u64_list_t *l, uint64_t v)
{
    return l->count && bsearch(&v, l->items, l->count, sizeof(v), u64_cmp) != NULL;
}

static bool has_suffix(const char *name, const char *suffix)
{
    size_t n = strlen(name), s = strlen(suffix);
    return n >= s && strcmp(name + n - s, suffix) == 0;
}

static void unlink_in(const char *dir, const char *name, const char *why)
{
    char path[PATH_MAX];
    int n = snprintf(path, sizeof(path), "%s/%s", dir, name);
    if (n <= 0 || n >= (int)sizeof(path))
        return;
    int rc = sl_io_unlink(path);
    if (rc == 0)
        sl_log_info("partition %s: deleted %s (%s)", dir, name, why);
    else
        sl_log_warn("partition %s: cannot delete %s (%s): %s", dir, name, why, strerror(-rc));
}

/* Lists the directory once (storage.md 4 step 1): deletes *.staging files and .index files
 * without a .log, collects the .log start offsets, sorted. */
static int scan_dir(sl_partition_t *p, u64_list_t *logs, char *err, size_t err_len)
{
    u64_list_t indexes = {0};
    DIR *d = opendir(p->dir);
    if (!d) {
        snprintf(err, err_len, "partition %s: cannot list: %s", p->dir, strerror(errno));
        return -SL_ERR_CANNOT_READ_PARTITIONS;
    }
    bool ok = true;
    struct dirent *de;
    while (ok && (de = readdir(d)) != NULL) {
        uint64_t start;
        if (has_suffix(de->d_name, SL_SEGMENT_STAGING_EXT))
            unlink_in(p->dir, de->d_name, "staging file");
        else if (sl_segment_parse_name(de->d_name, SL_SEGMENT_LOG_EXT, &start))
            ok = u64_push(logs, start);
        else if (sl_segment_parse_name(de->d_name, SL_SEGMENT_INDEX_EXT, &start))
            ok = u64_push(&indexes, start);
    }
    closedir(d);
    if (ok && logs->count)
        qsort(logs->items, logs->count, sizeof(uint64_t), u64_cmp);
    for (size_t i = 0; ok && i < indexes.count; i++) {
        if (!u64_contains(logs, indexes.items[i])) {
            char name[SL_SEGMENT_NAME_MAX];
            snprintf(name, sizeof(name), "%020" PRIu64 "%s", indexes.items[i],
                     SL_SEGMENT_INDEX_EXT);
            unlink_in(p->dir, name, "index without a log");
        }
    }
    free(indexes.items);
    if (!ok) {
        snprintf(err, err_len, "partition %s: out of memory listing segments", p->dir);
        return -SL_ERR_CANNOT_READ_PARTITIONS;
    }
    return 0;
}

/* --- recovery ------------------------------------------------------------------------------- */

bool sl_partition_segments_reserve(sl_partition_t *p, size_t n)
{
    if (p->segment_count + n <= p->segment_cap)
        return true;
    size_t cap = p->segment_cap ? p->segment_cap : 8;
    while (cap < p->segment_count + n)
        cap *= 2;
    sl_segment_t *segments = realloc(p->segments, cap * sizeof(*segments));
    if (!segments)
        return false;
    p->segments = segments;
    p->segment_cap = cap;
    return true;
}

/* Storage.md 4 step 6: each segment starts where the previous one ends, and only the last
 * may be empty. */
static int check_chain(const sl_partition_t *p, const uint64_t *starts,
                       const sl_segment_recovery_t *recs, size_t n, char *err, size_t err_len)
{
    for (size_t i = 1; i < n; i++) {
        const sl_segment_recovery_t *prev = &recs[i - 1];
        if (prev->messages == 0) {
            snprintf(err, err_len,
                     "partition %s: segment %020" PRIu64 " holds no whole batch but is not the "
                     "last; refusing the partition",
                     p->dir, starts[i - 1]);
            return -SL_ERR_STATE_FILE_CORRUPTED;
        }
        if (starts[i] != starts[i - 1] + prev->messages) {
            snprintf(err, err_len,
                     "partition %s: segment %020" PRIu64 " ends at offset %" PRIu64
                     " but the next segment starts at %" PRIu64 "; refusing the partition",
                     p->dir, starts[i - 1], starts[i - 1] + prev->messages - 1, starts[i]);
            return -SL_ERR_STATE_FILE_CORRUPTED;
        }
    }
    return 0;
}

/* Reads every segment's bounds, checks the chain, and only then repairs files (so a refused
 * partition is left as found), filling p->segments. */
static int recover_segments(sl_partition_t *p, const u64_list_t *logs, char *err, size_t err_len)
{
    size_t n = logs->count;
    if (n == 0)
        return 0;
    sl_segment_recovery_t *recs = calloc(n, sizeof(*recs));
    if (!recs || !sl_partition_segments_reserve(p, n)) {
        free(recs);
        snprintf(err, err_len, "partition %s: out of memory", p->dir);
        return -SL_ERR_CANNOT_READ_FILE;
    }
    int rc = 0;
    size_t recovered = 0;
    for (; rc == 0 && recovered < n; recovered++) {
        sl_buf_init(&recs[recovered].rebuilt, 0);
        rc = sl_segment_recover(p->dir, logs->items[recovered], p->cfg.batch_max,
                                p->cfg.index_every_batch, &p->read_buf, &recs[recovered], err,
                                err_len);
    }
    if (rc == 0)
        rc = check_chain(p, logs->items, recs, n, err, err_len);
    for (size_t i = 0; rc == 0 && i < n; i++) {
        rc = sl_segment_repair(&p->segments[i], p->dir, logs->items[i], &recs[i]);
        if (rc < 0)
            snprintf(err, err_len, "partition %s: cannot repair segment %020" PRIu64, p->dir,
                     logs->items[i]);
        else
            p->segments[p->segment_count++].sealed = i + 1 < n;
    }
    for (size_t i = 0; i < recovered; i++)
        sl_buf_free(&recs[i].rebuilt);
    free(recs);
    return rc;
}

/* Makes the last segment the active one (or creates segment 0) and derives the offsets. */
static int activate(sl_partition_t *p, char *err, size_t err_len)
{
    /* A partition without segments gets its first one with its first flush
     * (sl_partition_ensure_active): opening the many partitions of a new
     * topic creates no files. */
    if (p->segment_count == 0)
        return 0;
    sl_segment_t *active = &p->segments[p->segment_count - 1];
    int rc = sl_segment_open_active(active, p->dir);
    if (rc < 0) {
        snprintf(err, err_len, "partition %s: cannot open segment %020" PRIu64, p->dir,
                 active->start_offset);
        return rc;
    }
    p->next_offset = active->start_offset + active->messages;
    for (size_t i = 0; i < p->segment_count; i++)
        if (p->segments[i].end_timestamp > p->last_timestamp)
            p->last_timestamp = p->segments[i].end_timestamp;
    return 0;
}

static int open_recover(sl_partition_t *p, uint64_t now_us, char *err, size_t err_len)
{
    int rc = make_tree(p, err, err_len);
    u64_list_t logs = {0};
    if (rc == 0)
        rc = scan_dir(p, &logs, err, err_len);
    if (rc == 0)
        rc = recover_segments(p, &logs, err, err_len);
    free(logs.items);
    if (rc == 0)
        rc = activate(p, err, err_len);
    if (rc == 0)
        rc = sl_offsets_load(p, err, err_len);
    if (rc == 0) {
        rc = sl_purge_gen_read(p->dir, p->cfg.created_revision, &p->purge_generation);
        if (rc < 0)
            snprintf(err, err_len, "partition %s: cannot read %s", p->dir, SL_PURGE_GEN_FILE);
    }
    if (rc == 0 && p->last_timestamp > now_us)
        sl_log_warn("partition %s: its newest batch is stamped %" PRIu64 " us, after the clock "
                    "(%" PRIu64 " us); new batches keep that timestamp until the clock passes it",
                    p->dir, p->last_timestamp, now_us);
    return rc;
}

/* A partition in memory with nothing read or created yet; NULL (err set) when out of memory
 * or dir is empty or too long. */
static sl_partition_t *partition_new(const char *dir, uint32_t partition_id,
                                     const sl_partition_config_t *cfg, char *err, size_t err_len)
{
    size_t len = strlen(dir);
    if (len == 0 || len >= PATH_MAX) {
        snprintf(err, err_len, "partition directory path empty or too long");
        return NULL;
    }
    sl_partition_t *p = calloc(1, sizeof(*p));
    if (!p) {
        snprintf(err, err_len, "partition %s: out of memory", dir);
        return NULL;
    }
    p->id = partition_id;
    p->cfg = *cfg;
    config_resolve(&p->cfg);
    sl_buf_init(&p->read_buf, 0);
    memcpy(p->dir, dir, len + 1);
    return p;
}

int sl_partition_create(const char *dir, uint32_t partition_id, const sl_partition_config_t *cfg,
                        sl_partition_t **out)
{
    char err[PATH_MAX + 64];
    *out = partition_new(dir, partition_id, cfg, err, sizeof(err));
    if (!*out) {
        sl_log_error("%s", err);
        return -SL_ERR_CANNOT_CREATE_PARTITION_DIRECTORY;
    }
    return 0;
}

int sl_partition_open(const char *dir, uint32_t partition_id, const sl_partition_config_t *cfg,
                      uint64_t now_us, sl_partition_t **out, char *err, size_t err_len)
{
    char local[PATH_MAX + 256];
    if (!err || err_len == 0) {
        err = local;
        err_len = sizeof(local);
    }
    err[0] = '\0';
    *out = NULL;
    sl_partition_t *p = partition_new(dir, partition_id, cfg, err, err_len);
    if (!p)
        return -SL_ERR_CANNOT_CREATE_PARTITION_DIRECTORY;
    int rc = open_recover(p, now_us, err, err_len);
    if (rc < 0) {
        sl_log_error("%s", err);
        sl_partition_close(p);
        return rc;
    }
    sl_buf_free(&p->read_buf);
    *out = p;
    return 0;
}

int sl_partition_reload(sl_partition_t *p, uint64_t now_us, char *err, size_t err_len)
{
    sl_partition_wait_created(p);
    for (size_t i = 0; i < p->journal_count; i++) {
        sl_journal_held_sub(p, p->journal[i].held);
        sl_partition_release(p, &p->journal[i]);
    }
    p->journal_count = 0;
    p->journal_bytes = p->journal_messages = 0;
    sl_journal_bound_update(p);
    for (size_t i = 0; i < p->segment_count; i++)
        sl_segment_close(&p->segments[i]);
    p->segment_count = 0;
    sl_offsets_free(p);
    p->next_offset = p->last_timestamp = p->unsynced_from = 0;
    p->purge_generation = 0;
    p->purge_record_owed = p->tree_durable = p->offsets_dirs = p->dir_made = false;
    int rc = open_recover(p, now_us, err, err_len);
    sl_buf_free(&p->read_buf);
    if (rc < 0)
        sl_log_error("%s", err);
    return rc;
}

/* --- close and remove ------------------------------------------------------------------------ */

void sl_partition_release(sl_partition_t *p, journal_entry_t *e)
{
    if (p->cfg.release)
        p->cfg.release(p->cfg.release_ctx, e->owner);
    else
        free(e->owner);
    e->owner = NULL;
}

void sl_partition_close(sl_partition_t *p)
{
    if (!p)
        return;
    /* Never leave a creation running behind a close: the completion would find the
     * partition gone, and a delete that follows (the rename into the trash) must carry the
     * files with it, not race their creation. */
    sl_partition_wait_created(p);
    for (size_t i = 0; i < p->journal_count; i++) {
        sl_journal_held_sub(p, p->journal[i].held);
        sl_partition_release(p, &p->journal[i]);
    }
    p->journal_count = 0;
    sl_journal_bound_update(p);
    for (size_t i = 0; i < p->segment_count; i++)
        sl_segment_close(&p->segments[i]);
    free(p->journal);
    free(p->iov);
    free(p->index_raw);
    free(p->segments);
    sl_buf_free(&p->read_buf);
    sl_offsets_free(p);
    free(p);
}

void sl_partition_trim_read_buf(sl_partition_t *p)
{
    sl_buf_t *buf = p->cfg.read_buf ? p->cfg.read_buf : &p->read_buf;
    if (buf->cap > READ_BUF_KEEP)
        sl_buf_free(buf);
}

/* Deletes what dir holds, depth levels of directories deep, then dir itself. The depth is
 * bounded, so a deep tree is refused (ENOTEMPTY) rather than recursed into. */
static int remove_tree(const char *dir, int depth)
{
    DIR *d = opendir(dir);
    if (!d)
        return errno == ENOENT ? 0 : -errno;
    int rc = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        char path[PATH_MAX];
        int n = snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
        if (n <= 0 || n >= (int)sizeof(path)) {
            rc = -ENAMETOOLONG;
            continue;
        }
        struct stat st;
        int err;
        if (lstat(path, &st) == 0 && S_ISDIR(st.st_mode))
            err = depth > 0 ? remove_tree(path, depth - 1) : -ENOTEMPTY;
        else
            err = sl_io_unlink(path);
        if (err < 0 && err != -ENOENT && rc == 0)
            rc = err;
    }
    closedir(d);
    if (rc == 0 && rmdir(dir) != 0 && errno != ENOENT)
        rc = -errno;
    return rc;
}

int sl_store_remove_tree(const char *dir)
{
    /* Nothing to delete, and nothing to make durable: its parent may not exist either (the
     * server clears the directory of every new topic this way). */
    struct stat st;
    if (lstat(dir, &st) != 0 && errno == ENOENT)
        return 0;
    int rc = remove_tree(dir, SL_STORE_TREE_DEPTH_MAX);
    if (rc < 0) {
        sl_log_error("cannot delete %s completely: %s", dir, strerror(-rc));
        return -SL_ERR_CANNOT_DELETE_FILE;
    }
    char parent[PATH_MAX];
    size_t len = strlen(dir);
    if (len < sizeof(parent)) {
        memcpy(parent, dir, len + 1);
        if (fsync_parent(parent) < 0)
            sl_log_warn("%s: deleted, but the parent directory did not fsync", dir);
    }
    return 0;
}

int sl_partition_remove(const char *dir)
{
    return sl_store_remove_tree(dir) == 0 ? 0 : -SL_ERR_CANNOT_DELETE_PARTITION_DIRECTORY;
}

/* --- accessors ------------------------------------------------------------------------------ */

uint32_t sl_partition_id(const sl_partition_t *p)
{
    return p->id;
}

uint64_t sl_partition_purge_generation(const sl_partition_t *p)
{
    return p->purge_generation;
}

uint64_t sl_partition_current_offset(const sl_partition_t *p)
{
    return p->next_offset ? p->next_offset - 1 : 0;
}

uint64_t sl_partition_next_offset(const sl_partition_t *p)
{
    return p->next_offset;
}

const char *sl_partition_dir(const sl_partition_t *p)
{
    return p->dir;
}

int sl_partition_ensure_dir(sl_partition_t *p)
{
    return sl_partition_make_dir(p);
}

uint64_t sl_partition_first_offset(const sl_partition_t *p)
{
    if (p->segment_count)
        return p->segments[0].start_offset;
    return p->journal_count ? p->journal[0].base_offset : p->next_offset;
}

bool sl_partition_empty(const sl_partition_t *p)
{
    return p->next_offset == 0;
}

uint64_t sl_partition_messages(const sl_partition_t *p)
{
    uint64_t n = p->journal_messages;
    for (size_t i = 0; i < p->segment_count; i++)
        n += p->segments[i].messages;
    return n;
}

uint64_t sl_partition_size(const sl_partition_t *p)
{
    uint64_t n = p->journal_bytes;
    for (size_t i = 0; i < p->segment_count; i++)
        n += p->segments[i].size;
    return n;
}

uint32_t sl_partition_segments(const sl_partition_t *p)
{
    return p->segment_count ? (uint32_t)p->segment_count : 1;
}

uint64_t sl_partition_journal_messages(const sl_partition_t *p)
{
    return p->journal_messages;
}

uint64_t sl_partition_journal_bytes(const sl_partition_t *p)
{
    return p->journal_bytes;
}

uint64_t sl_partition_journal_held(const sl_partition_t *p)
{
    return p->journal_held;
}

bool sl_partition_segment_info(const sl_partition_t *p, uint32_t i, sl_segment_info_t *out)
{
    if (i >= p->segment_count)
        return false;
    const sl_segment_t *s = &p->segments[i];
    *out = (sl_segment_info_t){
        .start_offset = s->start_offset,
        .end_offset = s->start_offset + s->messages - 1,
        .messages = s->messages,
        .size = s->size,
        .end_timestamp = s->end_timestamp,
        .sealed = s->sealed,
    };
    return true;
}
