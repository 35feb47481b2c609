/* purge.gen (store/purge_gen.h, storage.md 5): the record, its atomic replacement and its
 * reading at open. */
#include "store/purge_gen.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <sluice/error.h>
#include <stdio.h>
#include <string.h>

#include "base/io.h"
#include "base/log.h"

void sl_purge_gen_encode(uint8_t out[SL_PURGE_GEN_SIZE], uint64_t generation,
                         uint64_t created_revision)
{
    sl_store_u64(out, generation);
    sl_store_u64(out + 8, created_revision);
}

uint64_t sl_purge_gen_decode(sl_span_t bytes, uint64_t created_revision)
{
    if (bytes.len != SL_PURGE_GEN_SIZE || sl_load_u64(bytes.ptr + 8) != created_revision)
        return 0;
    return sl_load_u64(bytes.ptr);
}

static bool path_in(char out[PATH_MAX], const char *dir, const char *name)
{
    int n = snprintf(out, PATH_MAX, "%s/%s", dir, name);
    return n > 0 && n < PATH_MAX;
}

int sl_purge_gen_read(const char *dir, uint64_t created_revision, uint64_t *generation)
{
    *generation = 0;
    char path[PATH_MAX];
    if (!path_in(path, dir, SL_PURGE_GEN_FILE))
        return -SL_ERR_CANNOT_READ_FILE;
    sl_buf_t bytes;
    sl_buf_init(&bytes, 0);
    /* Anything longer than a record is not one; reading a little more tells them apart. */
    int rc = sl_io_read_file(path, &bytes, SL_PURGE_GEN_SIZE * 4);
    if (rc == 0)
        *generation = sl_purge_gen_decode(sl_buf_span(&bytes), created_revision);
    if ((rc == 0 && bytes.len != SL_PURGE_GEN_SIZE) || rc == -EFBIG)
        sl_log_warn("%s: not a 16-byte record (torn); read as generation 0", path);
    if (rc == -EFBIG || rc == -ENOENT)
        rc = 0;
    sl_buf_free(&bytes);
    if (rc < 0) {
        sl_log_error("%s: cannot read: %s", path, strerror(-rc));
        return -SL_ERR_CANNOT_READ_FILE;
    }
    return 0;
}

int sl_purge_gen_write(const char *dir, uint64_t generation, uint64_t created_revision)
{
    char tmp[PATH_MAX], path[PATH_MAX];
    if (!path_in(tmp, dir, SL_PURGE_GEN_TMP) || !path_in(path, dir, SL_PURGE_GEN_FILE))
        return -SL_ERR_CANNOT_WRITE_TO_FILE;
    uint8_t record[SL_PURGE_GEN_SIZE];
    sl_purge_gen_encode(record, generation, created_revision);
    int rc = sl_io_write_file_synced(tmp, sl_span(record, sizeof(record)));
    if (rc == 0)
        rc = sl_io_rename(tmp, path);
    if (rc < 0) {
        sl_log_error("%s: cannot record purge generation %" PRIu64 ": %s", path, generation,
                     strerror(-rc));
        sl_io_unlink(tmp);
        return -SL_ERR_CANNOT_WRITE_TO_FILE;
    }
    rc = sl_io_fsync_dir(dir);
    if (rc < 0) {
        sl_log_error("%s: the directory did not fsync after recording purge generation %" PRIu64
                     ": %s",
                     path, generation, strerror(-rc));
        return -SL_ERR_CANNOT_SYNC_FILE;
    }
    return 0;
}
