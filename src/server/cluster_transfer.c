/* State transfer of a partition group's checkpoint: segments and consumer offsets
 * (server/cluster_transfer.h). */
#include "server/cluster_transfer.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <sluice/error.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/clock.h"
#include "base/io.h"
#include "base/log.h"
#include "base/xxh3.h"
#include "store/offsets.h"
#include "store/segment.h"

/* The CONSUMER_OFFSETS artifact a receiver accepts: a snapshot of 65536 offsets is 850 kB. */
#define OFFSETS_MAX (16u << 20)
/* Bytes read at a time to hash a segment. */
#define HASH_CHUNK (1u << 20)

typedef struct offer {
    uint64_t op; /* 0: none */
    sl_vsr_artifact_t *list;
    uint32_t count, cap;
    sl_buf_t offsets; /* the CONSUMER_OFFSETS artifact's bytes */
} offer_t;

struct sl_ptransfer {
    sl_partition_t *p;
    uint64_t group;
    uint64_t created_revision;
    bool enforce_fsync;
    offer_t offers[2]; /* the newest and the one before */
    uint32_t newest;
    sl_buf_t chunk; /* what serve returns */
    /* receiving */
    bool receiving;
    uint64_t stage_op;
    int stage_fd; /* the segment being staged, -1: none */
    uint64_t stage_start;
    sl_buf_t stage_offsets;
    bool have_offsets;
    uint32_t next_index;
};

static bool staging_path(const sl_ptransfer_t *x, char out[PATH_MAX])
{
    int n = snprintf(out, PATH_MAX, "%s/%s", sl_partition_dir(x->p), SL_PTRANSFER_STAGING);
    return n > 0 && n < PATH_MAX;
}

sl_ptransfer_t *sl_ptransfer_new(sl_partition_t *p, uint64_t group, uint64_t created_revision,
                                 bool enforce_fsync)
{
    sl_ptransfer_t *x = calloc(1, sizeof(*x));
    if (!x)
        return NULL;
    x->p = p;
    x->group = group;
    x->created_revision = created_revision;
    x->enforce_fsync = enforce_fsync;
    x->stage_fd = -1;
    for (int i = 0; i < 2; i++)
        sl_buf_init(&x->offers[i].offsets, OFFSETS_MAX);
    sl_buf_init(&x->chunk, 0);
    sl_buf_init(&x->stage_offsets, OFFSETS_MAX);
    return x;
}

void sl_ptransfer_free(sl_ptransfer_t *x)
{
    if (!x)
        return;
    for (int i = 0; i < 2; i++) {
        free(x->offers[i].list);
        sl_buf_free(&x->offers[i].offsets);
    }
    if (x->stage_fd >= 0)
        sl_io_close(x->stage_fd);
    sl_buf_free(&x->chunk);
    sl_buf_free(&x->stage_offsets);
    free(x);
}

bool sl_ptransfer_receiving(const sl_ptransfer_t *x)
{
    return x && x->receiving;
}

/* --- serving ---------------------------------------------------------------------------- */

static int open_segment(const sl_ptransfer_t *x, uint64_t start)
{
    char path[PATH_MAX];
    if (!sl_segment_path(path, sl_partition_dir(x->p), start, SL_SEGMENT_LOG_EXT))
        return -ENAMETOOLONG;
    return sl_io_open(path, O_RDONLY | O_CLOEXEC, 0);
}

/* XXH3-64 of the first len bytes of segment start; false when they cannot be read. */
static bool hash_segment(sl_ptransfer_t *x, uint64_t start, uint64_t len, uint64_t *out)
{
    int fd = open_segment(x, start);
    if (fd < 0)
        return false;
    sl_xxh3_state_t st;
    sl_xxh3_reset(&st);
    sl_buf_reset(&x->chunk);
    uint8_t *buf = sl_buf_extend(&x->chunk, len < HASH_CHUNK ? (size_t)len : HASH_CHUNK);
    bool ok = buf != NULL || len == 0;
    for (uint64_t at = 0; ok && at < len;) {
        size_t n = len - at < HASH_CHUNK ? (size_t)(len - at) : HASH_CHUNK;
        ok = sl_io_pread(fd, buf, n, (off_t)at) == (ssize_t)n;
        if (ok)
            sl_xxh3_update(&st, buf, n);
        at += n;
    }
    sl_io_close(fd);
    *out = sl_xxh3_digest(&st);
    return ok;
}

/* The hash of a segment as an earlier offer sealed it, when it is the same length. */
static bool known_hash(const sl_ptransfer_t *x, uint64_t start, uint64_t len, uint64_t *out)
{
    for (int i = 0; i < 2; i++) {
        const offer_t *o = &x->offers[i];
        for (uint32_t k = 0; o->op != 0 && k < o->count; k++) {
            const sl_vsr_artifact_t *a = &o->list[k];
            if (a->kind == SL_VSR_ARTIFACT_SEGMENT_LOG && a->frontier == start && a->len == len) {
                *out = a->checksum;
                return true;
            }
        }
    }
    return false;
}

/* An offer kept for op whose segments are all still there at their sealed lengths: a second
 * requester of the same checkpoint gets it unchanged, so the first one's artifact indexes and
 * lengths stay what it was told. */
static bool offer_intact(const sl_ptransfer_t *x, const offer_t *o)
{
    char path[PATH_MAX];
    for (uint32_t k = 0; k < o->count; k++) {
        const sl_vsr_artifact_t *a = &o->list[k];
        struct stat st;
        if (a->kind == SL_VSR_ARTIFACT_SEGMENT_LOG &&
            (!sl_segment_path(path, sl_partition_dir(x->p), a->frontier, SL_SEGMENT_LOG_EXT) ||
             stat(path, &st) != 0 || (uint64_t)st.st_size < a->len))
            return false;
    }
    return true;
}

int sl_ptransfer_offer(sl_ptransfer_t *x, uint64_t op, sl_span_t snapshot,
                       const sl_vsr_artifact_t **list, uint32_t *count)
{
    for (int i = 0; i < 2; i++) {
        offer_t *kept = &x->offers[i];
        if (kept->op == op && op != 0 && offer_intact(x, kept)) {
            *list = kept->list;
            *count = kept->count;
            return 0;
        }
    }
    /* The segments must hold at least what the checkpoint names: flushed (a checkpoint
     * synced them already; whatever came since is flushed too, and so served). */
    int rc = sl_partition_flush(x->p);
    if (rc != 0)
        return rc;
    /* A replica whose own segments end before its checkpoint (it is waiting
     * for a transfer itself) has nothing to offer. */
    if (snapshot.len < 8 || sl_partition_next_offset(x->p) < sl_load_u64(snapshot.ptr))
        return -SL_ERR_STATE_FILE_CORRUPTED;
    uint32_t segments = sl_partition_segments(x->p);
    uint32_t slot = x->offers[x->newest].op == op ? x->newest : 1u - x->newest;
    offer_t *o = &x->offers[slot];
    if (segments + 1 > o->cap) {
        sl_vsr_artifact_t *l = realloc(o->list, (segments + 1) * sizeof(*l));
        if (!l)
            return -ENOMEM;
        o->list = l;
        o->cap = segments + 1;
    }
    o->op = 0;
    uint32_t n = 0;
    for (uint32_t i = 0; i < segments; i++) {
        sl_segment_info_t si;
        if (!sl_partition_segment_info(x->p, i, &si))
            return -EIO;
        if (si.size == 0 && i + 1 == segments && i > 0)
            continue; /* an empty active segment: the receiver makes its own */
        uint64_t sum;
        if (!known_hash(x, si.start_offset, si.size, &sum) &&
            !hash_segment(x, si.start_offset, si.size, &sum))
            return -EIO;
        o->list[n++] = (sl_vsr_artifact_t){SL_VSR_ARTIFACT_SEGMENT_LOG, si.start_offset, si.size,
                                           sum};
    }
    sl_buf_reset(&o->offsets);
    sl_put_span(&o->offsets, snapshot);
    sl_put_u64(&o->offsets, sl_partition_purge_generation(x->p));
    if (!sl_buf_ok(&o->offsets))
        return -ENOMEM;
    o->list[n++] = (sl_vsr_artifact_t){SL_VSR_ARTIFACT_CONSUMER_OFFSETS, op, o->offsets.len,
                                       sl_xxh3_64(o->offsets.data, o->offsets.len)};
    o->count = n;
    o->op = op;
    x->newest = slot;
    *list = o->list;
    *count = n;
    return 0;
}

sl_span_t sl_ptransfer_serve(sl_ptransfer_t *x, uint64_t op, uint32_t index, uint64_t offset,
                             uint32_t len)
{
    const offer_t *o = NULL;
    for (int i = 0; i < 2; i++)
        if (x->offers[i].op == op && op != 0)
            o = &x->offers[i];
    if (!o || index >= o->count || offset >= o->list[index].len)
        return sl_span(NULL, 0);
    const sl_vsr_artifact_t *a = &o->list[index];
    uint64_t n = a->len - offset < len ? a->len - offset : len;
    if (a->kind == SL_VSR_ARTIFACT_CONSUMER_OFFSETS)
        return sl_span(o->offsets.data + offset, (size_t)n);
    /* Bytes a later flush wrote after what was offered are never read: the offered length
     * bounds every chunk. */
    int fd = open_segment(x, a->frontier);
    if (fd < 0)
        return sl_span(NULL, 0);
    sl_buf_reset(&x->chunk);
    uint8_t *buf = sl_buf_extend(&x->chunk, (size_t)n);
    bool ok = buf && sl_io_pread(fd, buf, (size_t)n, (off_t)offset) == (ssize_t)n;
    sl_io_close(fd);
    return ok ? sl_span(buf, (size_t)n) : sl_span(NULL, 0);
}

/* --- receiving ---------------------------------------------------------------------------- */

static void stage_close(sl_ptransfer_t *x)
{
    if (x->stage_fd >= 0)
        sl_io_close(x->stage_fd);
    x->stage_fd = -1;
}

/* Drops whatever was staged and makes the staging directory empty. */
static int stage_begin(sl_ptransfer_t *x, uint64_t op)
{
    char dir[PATH_MAX];
    stage_close(x);
    x->receiving = true;
    x->stage_op = op;
    x->have_offsets = false;
    x->next_index = 0;
    sl_buf_reset(&x->stage_offsets);
    if (!staging_path(x, dir) || sl_store_remove_tree(dir) != 0)
        return -SL_ERR_CANNOT_DELETE_FILE;
    int rc = sl_io_mkdir(dir, sl_io_dir_mode());
    return rc == 0 || rc == -EEXIST ? 0 : -SL_ERR_CANNOT_CREATE_PARTITION_DIRECTORY;
}

/* The staged segment re-read and hashed: what is verified is what is on disk. */
static bool staged_ok(sl_ptransfer_t *x, const sl_vsr_artifact_t *a)
{
    sl_xxh3_state_t st;
    sl_xxh3_reset(&st);
    sl_buf_reset(&x->chunk);
    uint8_t *buf = sl_buf_extend(&x->chunk, HASH_CHUNK);
    bool ok = buf != NULL;
    uint64_t size = 0;
    ok = ok && sl_io_size(x->stage_fd, &size) == 0 && size == a->len;
    for (uint64_t at = 0; ok && at < a->len;) {
        size_t n = a->len - at < HASH_CHUNK ? (size_t)(a->len - at) : HASH_CHUNK;
        ok = sl_io_pread(x->stage_fd, buf, n, (off_t)at) == (ssize_t)n;
        if (ok)
            sl_xxh3_update(&st, buf, n);
        at += n;
    }
    return ok && sl_xxh3_digest(&st) == a->checksum;
}

int sl_ptransfer_stage(sl_ptransfer_t *x, uint64_t op, uint32_t index, const sl_vsr_artifact_t *a,
                       uint64_t offset, sl_span_t bytes)
{
    if (a == NULL)
        return stage_begin(x, op);
    if (!x->receiving || op != x->stage_op || index < x->next_index || x->have_offsets)
        return -SL_ERR_INVALID_FORMAT;
    if (a->kind == SL_VSR_ARTIFACT_CONSUMER_OFFSETS) {
        if (a->len > OFFSETS_MAX || a->frontier != op || offset != x->stage_offsets.len)
            return -SL_ERR_INVALID_FORMAT;
        sl_put_span(&x->stage_offsets, bytes);
        if (!sl_buf_ok(&x->stage_offsets))
            return -ENOMEM;
        if (offset + bytes.len == a->len) {
            if (sl_xxh3_64(x->stage_offsets.data, x->stage_offsets.len) != a->checksum)
                return -SL_ERR_INVALID_FORMAT;
            x->have_offsets = true;
            x->next_index = index + 1;
        }
        return 0;
    }
    if (a->kind != SL_VSR_ARTIFACT_SEGMENT_LOG)
        return -SL_ERR_INVALID_FORMAT;
    if (offset == 0) {
        char dir[PATH_MAX], path[PATH_MAX];
        stage_close(x);
        if (!staging_path(x, dir) || !sl_segment_path(path, dir, a->frontier, SL_SEGMENT_LOG_EXT))
            return -SL_ERR_CANNOT_WRITE_TO_FILE;
        x->stage_fd =
            sl_io_open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, sl_io_file_mode());
        if (x->stage_fd < 0) {
            x->stage_fd = -1;
            return -SL_ERR_CANNOT_WRITE_TO_FILE;
        }
        x->stage_start = a->frontier;
    } else if (x->stage_fd < 0 || x->stage_start != a->frontier) {
        return -SL_ERR_INVALID_FORMAT;
    }
    if (sl_io_pwrite(x->stage_fd, bytes.ptr, bytes.len, (off_t)offset) != (ssize_t)bytes.len)
        return -SL_ERR_CANNOT_WRITE_TO_FILE;
    if (offset + bytes.len == a->len) {
        bool ok = staged_ok(x, a);
        stage_close(x);
        if (!ok) {
            sl_log_warn("cluster: partition group %" PRIx64 ": staged segment %" PRIu64
                        " does not verify",
                        x->group, a->frontier);
            return -SL_ERR_INVALID_FORMAT;
        }
        x->next_index = index + 1;
    }
    return 0;
}

/* The snapshot part of a CONSUMER_OFFSETS artifact (cluster_transfer.h) and the generation
 * its segments are of; false when it does not decode. */
static bool offsets_split(sl_span_t bytes, sl_span_t *snapshot, uint64_t *generation)
{
    if (bytes.len < 28)
        return false;
    uint32_t n = sl_load_u32(bytes.ptr + 8);
    if ((bytes.len - 28) / 13 < n || bytes.len != 28 + (size_t)n * 13)
        return false;
    *snapshot = sl_span(bytes.ptr, bytes.len - 8);
    *generation = sl_load_u64(bytes.ptr + bytes.len - 8);
    return true;
}

/* The partition's consumer offsets become the snapshot's: the others are deleted. */
static int offsets_apply(sl_ptransfer_t *x, sl_span_t snapshot)
{
    uint32_t n = sl_load_u32(snapshot.ptr + 8);
    for (uint32_t i = sl_offsets_count(x->p); i > 0; i--) {
        sl_offsets_kind_t kind;
        uint32_t id;
        uint64_t offset;
        if (!sl_offsets_at(x->p, i - 1, &kind, &id, &offset))
            continue;
        bool keep = false;
        for (uint32_t k = 0; k < n && !keep; k++) {
            const uint8_t *e = snapshot.ptr + 12 + (size_t)k * 13;
            keep = e[0] == (uint8_t)kind && sl_load_u32(e + 1) == id;
        }
        if (!keep && sl_offsets_delete(x->p, kind, id) != 0)
            return -SL_ERR_CANNOT_DELETE_CONSUMER_OFFSET_FILE;
    }
    for (uint32_t k = 0; k < n; k++) {
        const uint8_t *e = snapshot.ptr + 12 + (size_t)k * 13;
        int rc = sl_offsets_store(x->p, (sl_offsets_kind_t)e[0], sl_load_u32(e + 1),
                                  sl_load_u64(e + 5), true, false);
        if (rc != 0)
            return rc;
    }
    return 0;
}

int sl_ptransfer_install(sl_ptransfer_t *x, uint64_t op, const sl_vsr_artifact_t *list,
                         uint32_t count, sl_buf_t *snapshot)
{
    char dir[PATH_MAX];
    sl_span_t snap;
    uint64_t generation;
    if (!x->receiving || op != x->stage_op || !x->have_offsets || x->next_index != count ||
        !offsets_split(sl_buf_span(&x->stage_offsets), &snap, &generation) ||
        !staging_path(x, dir))
        return -SL_ERR_INVALID_FORMAT;
    uint64_t *starts = calloc(count ? count : 1, sizeof(*starts));
    if (!starts)
        return -ENOMEM;
    uint32_t n = 0;
    for (uint32_t i = 0; i < count; i++) {
        if (list[i].kind != SL_VSR_ARTIFACT_SEGMENT_LOG)
            continue;
        if (list[i].len == 0) {
            /* Never staged (an empty artifact): an empty file stands for it. */
            char path[PATH_MAX];
            int fd = sl_segment_path(path, dir, list[i].frontier, SL_SEGMENT_LOG_EXT)
                         ? sl_io_open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
                                      sl_io_file_mode())
                         : -1;
            if (fd < 0) {
                free(starts);
                return -SL_ERR_CANNOT_WRITE_TO_FILE;
            }
            sl_io_close(fd);
        }
        starts[n++] = list[i].frontier;
    }
    /* The commit point: from here a crash rolls forward at the next boot
     * (sl_ptransfer_roll_at_open, then sl_ptransfer_boot). */
    int rc = sl_partition_install_commit(dir, generation, starts, n, sl_buf_span(&x->stage_offsets));
    free(starts);
    if (rc != 0) {
        sl_log_error("cluster: partition group %" PRIx64 ": cannot commit a state transfer: %s",
                     x->group, sl_strerror(rc));
        return rc;
    }
    sl_buf_t blob;
    sl_buf_init(&blob, 0);
    bool rolled = false;
    char err[PATH_MAX + 256];
    rc = sl_partition_install_roll(sl_partition_dir(x->p), dir, x->created_revision, true, &blob,
                                   &rolled);
    sl_buf_free(&blob);
    if (rc == 0)
        rc = sl_partition_reload(x->p, sl_clock_realtime_us(), err, sizeof(err));
    if (rc == 0)
        rc = offsets_apply(x, snap);
    if (rc == 0)
        rc = sl_partition_install_done(dir);
    if (rc != 0) {
        /* Committed: the next boot finishes it. Until then this replica stays out. */
        sl_log_error("cluster: partition group %" PRIx64 ": a committed state transfer did not "
                     "install (a restart finishes it): %s",
                     x->group, sl_strerror(rc));
        return rc;
    }
    x->receiving = false;
    sl_put_span(snapshot, snap);
    sl_log_info("cluster: partition group %" PRIx64 ": installed checkpoint %" PRIu64
                ": %u segments, next offset %" PRIu64 ", purge generation %" PRIu64,
                x->group, op, n, sl_partition_next_offset(x->p), generation);
    return 0;
}

int sl_ptransfer_roll_at_open(const char *partition_dir, uint64_t created_revision)
{
    char dir[PATH_MAX];
    int n = snprintf(dir, sizeof(dir), "%s/%s", partition_dir, SL_PTRANSFER_STAGING);
    if (n <= 0 || n >= (int)sizeof(dir))
        return -SL_ERR_INVALID_CONFIGURATION;
    sl_buf_t blob;
    sl_buf_init(&blob, 0);
    bool rolled = false;
    char marker[PATH_MAX + 16];
    snprintf(marker, sizeof(marker), "%s/%s", dir, SL_PARTITION_INSTALL_MARKER);
    int rc = 0;
    /* Only a committed install is touched here; an uncommitted staging waits for the group's
     * open, which discards it. */
    struct stat st;
    if (stat(marker, &st) == 0 || errno != ENOENT) {
        rc = sl_partition_install_roll(partition_dir, dir, created_revision, true, &blob, &rolled);
        if (rolled)
            sl_log_warn("partition %s: a state transfer interrupted by a restart was rolled "
                        "forward",
                        partition_dir);
    }
    sl_buf_free(&blob);
    return rc;
}

int sl_ptransfer_boot(sl_ptransfer_t *x)
{
    char dir[PATH_MAX];
    if (!staging_path(x, dir))
        return -SL_ERR_INVALID_CONFIGURATION;
    sl_buf_t blob;
    sl_buf_init(&blob, 0);
    bool rolled = false;
    int rc = sl_partition_install_roll(sl_partition_dir(x->p), dir, x->created_revision, false,
                                       &blob, &rolled);
    sl_span_t snap;
    uint64_t generation;
    if (rc == 0 && rolled) {
        rc = offsets_split(sl_buf_span(&blob), &snap, &generation) ? offsets_apply(x, snap)
                                                                   : -SL_ERR_STATE_FILE_CORRUPTED;
        if (rc == 0)
            rc = sl_partition_install_done(dir);
    }
    sl_buf_free(&blob);
    return rc;
}
