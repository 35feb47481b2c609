/* Segments installed by a cluster state transfer (store/partition.h, "segments installed by a
 * cluster state transfer"): the marker that commits a staged set and the roll that puts it in
 * place, both safe to run again after a crash at any point. */
#include <dirent.h>
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
#include "base/xxh3.h"
#include "store/partition.h"
#include "store/purge_gen.h"
#include "store/segment.h"

/* The marker: "ISI1", generation u64, n u32, n x start u64, blob length u32, the blob, then
 * the XXH3-64 of everything before. */
#define MARKER_MAGIC "ISI1"
#define MARKER_MAX   (64u << 20)

static bool join(char out[PATH_MAX], const char *dir, const char *name)
{
    int n = snprintf(out, PATH_MAX, "%s/%s", dir, name);
    return n > 0 && n < PATH_MAX;
}

static int write_file(const char *path, sl_span_t bytes)
{
    int fd = sl_io_open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, sl_io_file_mode());
    if (fd < 0)
        return -SL_ERR_CANNOT_WRITE_TO_FILE;
    int rc = sl_io_pwrite(fd, bytes.ptr, bytes.len, 0) == (ssize_t)bytes.len ? 0
                                                                             : -SL_ERR_CANNOT_WRITE_TO_FILE;
    if (rc == 0 && sl_io_fsync(fd) != 0)
        rc = -SL_ERR_CANNOT_SYNC_FILE;
    sl_io_close(fd);
    return rc;
}

static int sync_file(const char *path)
{
    int fd = sl_io_open(path, O_RDONLY | O_CLOEXEC, 0);
    if (fd < 0)
        return -SL_ERR_CANNOT_READ_FILE;
    int rc = sl_io_fsync(fd) == 0 ? 0 : -SL_ERR_CANNOT_SYNC_FILE;
    sl_io_close(fd);
    return rc;
}

int sl_partition_install_commit(const char *staging, uint64_t generation, const uint64_t *starts,
                                uint32_t n, sl_span_t blob)
{
    char path[PATH_MAX], tmp[PATH_MAX], name[SL_SEGMENT_NAME_MAX];
    /* Every staged segment durable first: the marker must never name bytes a crash loses. */
    for (uint32_t i = 0; i < n; i++) {
        snprintf(name, sizeof(name), "%020" PRIu64 "%s", starts[i], SL_SEGMENT_LOG_EXT);
        if (!join(path, staging, name))
            return -SL_ERR_CANNOT_WRITE_TO_FILE;
        int rc = sync_file(path);
        if (rc != 0)
            return rc;
    }
    if (blob.len > MARKER_MAX || (uint64_t)n * 8 > MARKER_MAX)
        return -SL_ERR_CANNOT_WRITE_TO_FILE;
    sl_buf_t b;
    sl_buf_init(&b, 0);
    sl_put_bytes(&b, MARKER_MAGIC, 4);
    sl_put_u64(&b, generation);
    sl_put_u32(&b, n);
    for (uint32_t i = 0; i < n; i++)
        sl_put_u64(&b, starts[i]);
    sl_put_u32(&b, (uint32_t)blob.len);
    sl_put_span(&b, blob);
    if (sl_buf_ok(&b))
        sl_put_u64(&b, sl_xxh3_64(b.data, b.len));
    int rc = sl_buf_ok(&b) ? 0 : -SL_ERR_CANNOT_WRITE_TO_FILE;
    if (rc == 0 && (!join(path, staging, SL_PARTITION_INSTALL_MARKER) ||
                    !join(tmp, staging, SL_PARTITION_INSTALL_MARKER ".tmp")))
        rc = -SL_ERR_CANNOT_WRITE_TO_FILE;
    if (rc == 0)
        rc = write_file(tmp, sl_buf_span(&b));
    if (rc == 0 && sl_io_rename(tmp, path) != 0)
        rc = -SL_ERR_CANNOT_WRITE_TO_FILE;
    if (rc == 0 && sl_io_fsync_dir(staging) != 0)
        rc = -SL_ERR_CANNOT_SYNC_FILE;
    sl_buf_free(&b);
    return rc;
}

/* The marker's fields; false when it does not verify. */
typedef struct marker {
    uint64_t generation;
    uint32_t n;
    const uint8_t *starts;
    sl_span_t blob;
} marker_t;

static bool marker_parse(sl_span_t bytes, marker_t *m)
{
    if (bytes.len < 4 + 8 + 4 + 4 + 8)
        return false;
    size_t covered = bytes.len - 8;
    if (sl_load_u64(bytes.ptr + covered) != sl_xxh3_64(bytes.ptr, covered) ||
        memcmp(bytes.ptr, MARKER_MAGIC, 4) != 0)
        return false;
    m->generation = sl_load_u64(bytes.ptr + 4);
    m->n = sl_load_u32(bytes.ptr + 12);
    size_t at = 16;
    if ((covered - at) / 8 < m->n)
        return false;
    m->starts = bytes.ptr + at;
    at += (size_t)m->n * 8;
    if (covered - at < 4)
        return false;
    uint32_t blen = sl_load_u32(bytes.ptr + at);
    at += 4;
    if (covered - at != blen)
        return false;
    m->blob = sl_span(bytes.ptr + at, blen);
    return true;
}

static int read_marker(const char *path, sl_buf_t *out, bool *present)
{
    *present = false;
    int fd = sl_io_open(path, O_RDONLY | O_CLOEXEC, 0);
    if (fd == -ENOENT)
        return 0;
    if (fd < 0)
        return -SL_ERR_CANNOT_READ_FILE;
    uint64_t size = 0;
    int rc = sl_io_size(fd, &size) == 0 && size <= 2ull * MARKER_MAX ? 0 : -SL_ERR_CANNOT_READ_FILE;
    uint8_t *p = rc == 0 ? sl_buf_extend(out, size) : NULL;
    if (rc == 0 && (!p || sl_io_pread(fd, p, size, 0) != (ssize_t)size))
        rc = -SL_ERR_CANNOT_READ_FILE;
    sl_io_close(fd);
    *present = rc == 0;
    return rc;
}

static bool listed(const marker_t *m, uint64_t start)
{
    for (uint32_t i = 0; i < m->n; i++)
        if (sl_load_u64(m->starts + (size_t)i * 8) == start)
            return true;
    return false;
}

int sl_partition_install_roll(const char *dir, const char *staging, uint64_t created_revision,
                              bool files, sl_buf_t *blob_out, bool *rolled)
{
    *rolled = false;
    char path[PATH_MAX], to[PATH_MAX], name[SL_SEGMENT_NAME_MAX];
    if (!join(path, staging, SL_PARTITION_INSTALL_MARKER))
        return -SL_ERR_CANNOT_READ_FILE;
    sl_buf_t b;
    sl_buf_init(&b, 0);
    bool present;
    int rc = read_marker(path, &b, &present);
    if (rc != 0 || !present) {
        sl_buf_free(&b);
        if (rc != 0)
            return rc;
        /* Nothing committed: a transfer cut short leaves only its staging. */
        return sl_store_remove_tree(staging) == 0 ? 0 : -SL_ERR_CANNOT_DELETE_FILE;
    }
    marker_t m;
    if (!marker_parse(sl_buf_span(&b), &m)) {
        sl_log_error("partition %s: the state transfer marker %s does not verify", dir, path);
        sl_buf_free(&b);
        return -SL_ERR_STATE_FILE_CORRUPTED;
    }
    if (!files) {
        sl_put_span(blob_out, m.blob);
        *rolled = true;
        sl_buf_free(&b);
        return 0;
    }
    /* The old set goes: every index (rebuilt at open), every log the new set does not name. */
    DIR *d = opendir(dir);
    if (!d) {
        sl_buf_free(&b);
        return -SL_ERR_CANNOT_READ_PARTITIONS;
    }
    struct dirent *de;
    while (rc == 0 && (de = readdir(d)) != NULL) {
        uint64_t start;
        bool index = sl_segment_parse_name(de->d_name, SL_SEGMENT_INDEX_EXT, &start);
        bool log = !index && sl_segment_parse_name(de->d_name, SL_SEGMENT_LOG_EXT, &start);
        if ((index || (log && !listed(&m, start))) && join(to, dir, de->d_name)) {
            int u = sl_io_unlink(to);
            if (u != 0 && u != -ENOENT)
                rc = -SL_ERR_CANNOT_DELETE_FILE;
        }
    }
    closedir(d);
    /* Then each staged log takes its place (one renamed by an earlier roll is there already). */
    for (uint32_t i = 0; rc == 0 && i < m.n; i++) {
        snprintf(name, sizeof(name), "%020" PRIu64 "%s", sl_load_u64(m.starts + (size_t)i * 8),
                 SL_SEGMENT_LOG_EXT);
        if (!join(path, staging, name) || !join(to, dir, name)) {
            rc = -SL_ERR_CANNOT_WRITE_TO_FILE;
            break;
        }
        int r = sl_io_rename(path, to);
        if (r != 0 && r != -ENOENT)
            rc = -SL_ERR_CANNOT_WRITE_TO_FILE;
    }
    if (rc == 0 && sl_io_fsync_dir(dir) != 0)
        rc = -SL_ERR_CANNOT_SYNC_FILE;
    if (rc == 0)
        rc = sl_purge_gen_write(dir, m.generation, created_revision);
    if (rc == 0) {
        sl_put_span(blob_out, m.blob);
        *rolled = true;
        sl_log_info("partition %s: %u segments of a state transfer installed", dir, m.n);
    } else {
        sl_log_error("partition %s: the state transfer's segments could not be installed: %s",
                     dir, sl_strerror(rc));
    }
    sl_buf_free(&b);
    return rc;
}

int sl_partition_install_done(const char *staging)
{
    return sl_store_remove_tree(staging) == 0 ? 0 : -SL_ERR_CANNOT_DELETE_FILE;
}
