/* snapshot.bin and superblock.a/.b: formats, verification and durable writes
 * (meta/checkpoint.h). Every write goes to a .tmp file that is fsynced before it is renamed
 * into place, and the directory is fsynced after the rename. */
#include "meta/checkpoint.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <sluice/error.h>
#include <stdio.h>
#include <string.h>

#include "base/io.h"
#include "base/log.h"
#include "base/xxh3.h"

static const char *const slot_files[2] = {SL_META_SUPERBLOCK_A_FILE, SL_META_SUPERBLOCK_B_FILE};

/* <dir>/<name><suffix> into out; false when it does not fit. */
static bool join(char out[PATH_MAX], const char *dir, const char *name, const char *suffix)
{
    int n = snprintf(out, PATH_MAX, "%s/%s%s", dir, name, suffix);
    return n > 0 && n < PATH_MAX;
}

/* --- snapshot ------------------------------------------------------------------------- */

int sl_meta_snapshot_write_tmp(const char *dir, sl_span_t state, sl_u128_t *checksum)
{
    char path[PATH_MAX];
    if (!join(path, dir, SL_META_SNAPSHOT_TMP_FILE, ""))
        return -SL_ERR_CANNOT_WRITE_TO_FILE;
    *checksum = (sl_u128_t){sl_xxh3_64(state.ptr, state.len), 0};
    sl_buf_t file;
    sl_buf_init(&file, 0);
    sl_put_span(&file, state);
    sl_put_u32(&file, SL_META_SNAPSHOT_MAGIC);
    sl_put_u128(&file, *checksum);
    int rc = sl_buf_ok(&file) ? sl_io_write_file_synced(path, sl_buf_span(&file)) : -ENOMEM;
    sl_buf_free(&file);
    if (rc < 0) {
        sl_log_error("metadata snapshot %s: cannot write: %s", path, strerror(-rc));
        /* Nothing names it yet (the superblock comes after), and on a full disk its blocks are
         * what the next commit needs. */
        sl_io_unlink(path);
        return -SL_ERR_CANNOT_WRITE_TO_FILE;
    }
    return 0;
}

/* Renames dir/from over dir/to and fsyncs dir; *renamed as in the header. */
static int rename_durably(const char *dir, const char *from, const char *to, bool *renamed)
{
    *renamed = false;
    char from_path[PATH_MAX], to_path[PATH_MAX];
    if (!join(from_path, dir, from, "") || !join(to_path, dir, to, ""))
        return -SL_ERR_CANNOT_OVERWRITE_FILE;
    int rc = sl_io_rename(from_path, to_path);
    if (rc < 0) {
        sl_log_error("metadata: cannot rename %s to %s: %s", from_path, to_path, strerror(-rc));
        return -SL_ERR_CANNOT_OVERWRITE_FILE;
    }
    *renamed = true;
    rc = sl_io_fsync_dir(dir);
    if (rc < 0) {
        sl_log_error("metadata: cannot fsync directory %s after renaming %s: %s", dir, to,
                     strerror(-rc));
        return -SL_ERR_CANNOT_SYNC_FILE;
    }
    return 0;
}

int sl_meta_snapshot_install(const char *dir, bool *renamed)
{
    return rename_durably(dir, SL_META_SNAPSHOT_TMP_FILE, SL_META_SNAPSHOT_FILE, renamed);
}

int sl_meta_snapshot_read(const char *path, sl_buf_t *out, sl_u128_t *checksum, char *err,
                          size_t err_len)
{
    *checksum = (sl_u128_t){0, 0};
    int rc = sl_io_read_file(path, out, SL_META_SNAPSHOT_MAX);
    if (rc == -ENOENT)
        return -SL_ERR_STATE_FILE_NOT_FOUND;
    if (rc < 0) {
        snprintf(err, err_len, "metadata snapshot %s: cannot read: %s", path, strerror(-rc));
        return -SL_ERR_CANNOT_READ_FILE;
    }
    if (out->len < SL_META_SNAPSHOT_TRAILER_SIZE) {
        snprintf(err, err_len, "metadata snapshot %s: %zu bytes, shorter than its trailer", path,
                 out->len);
        return -SL_ERR_STATE_FILE_CORRUPTED;
    }
    size_t state_len = out->len - SL_META_SNAPSHOT_TRAILER_SIZE;
    const uint8_t *trailer = out->data + state_len;
    sl_u128_t stored = sl_load_u128(trailer + 4);
    sl_u128_t actual = {sl_xxh3_64(out->data, state_len), 0};
    if (sl_load_u32(trailer) != SL_META_SNAPSHOT_MAGIC) {
        snprintf(err, err_len,
                 "metadata snapshot %s: no trailer magic (file cut or not a snapshot)", path);
        return -SL_ERR_STATE_FILE_CORRUPTED;
    }
    if (!sl_u128_eq(stored, actual)) {
        snprintf(err, err_len,
                 "metadata snapshot %s: checksum mismatch (trailer %016" PRIx64
                 ", contents %016" PRIx64 ")",
                 path, stored.lo, actual.lo);
        return -SL_ERR_STATE_FILE_CORRUPTED;
    }
    out->len = state_len;
    *checksum = stored;
    return 0;
}

/* --- superblock ------------------------------------------------------------------------- */

void sl_meta_vsr_state_encode(uint8_t out[SL_META_VSR_STATE_SIZE], const sl_meta_vsr_state_t *v)
{
    sl_store_u128(out + 0, v->cluster);
    out[16] = v->replica_id;
    out[17] = v->replica_count;
    sl_store_u32(out + 18, v->view);
    sl_store_u32(out + 22, v->log_view);
    sl_store_u64(out + 26, v->commit_max);
    sl_store_u64(out + 34, v->checkpoint_op);
    sl_store_u128(out + 42, v->checkpoint_checksum);
    sl_store_u64(out + 58, v->offset_frontier);
}

int sl_meta_vsr_state_decode(sl_span_t payload, sl_meta_vsr_state_t *out)
{
    memset(out, 0, sizeof(*out));
    if (payload.len != SL_META_VSR_STATE_SIZE && payload.len != SL_META_VSR_STATE_SIZE_OLD)
        return -SL_ERR_STATE_FILE_CORRUPTED;
    sl_reader_t r = sl_reader(payload);
    sl_read_u128(&r, &out->cluster);
    sl_read_u8(&r, &out->replica_id);
    sl_read_u8(&r, &out->replica_count);
    sl_read_u32(&r, &out->view);
    sl_read_u32(&r, &out->log_view);
    sl_read_u64(&r, &out->commit_max);
    sl_read_u64(&r, &out->checkpoint_op);
    sl_read_u128(&r, &out->checkpoint_checksum);
    if (sl_reader_left(&r) > 0)
        sl_read_u64(&r, &out->offset_frontier);
    if (!sl_reader_done(&r) || out->log_view > out->view)
        return -SL_ERR_STATE_FILE_CORRUPTED;
    return 0;
}

void sl_meta_superblock_encode(uint8_t out[SL_META_SUPERBLOCK_SIZE], uint64_t sequence,
                               const sl_meta_vsr_state_t *v)
{
    sl_store_u32(out + 0, SL_META_SUPERBLOCK_MAGIC);
    sl_store_u16(out + 4, SL_META_SUPERBLOCK_VERSION);
    sl_store_u16(out + 6, 0);
    sl_store_u64(out + 8, sequence);
    sl_store_u64(out + 16, 0); /* parent checksum: unused */
    sl_store_u32(out + 24, SL_META_VSR_STATE_SIZE);
    sl_meta_vsr_state_encode(out + SL_META_SUPERBLOCK_HEAD_SIZE, v);
    size_t body = SL_META_SUPERBLOCK_HEAD_SIZE + SL_META_VSR_STATE_SIZE;
    sl_store_u64(out + body, sl_xxh3_64(out, body));
}

int sl_meta_superblock_decode(sl_span_t file, uint64_t *sequence, sl_meta_vsr_state_t *out,
                              const char **why)
{
    *sequence = 0;
    memset(out, 0, sizeof(*out));
    const uint8_t *p = file.ptr;
    *why = NULL;
    if (file.len < SL_META_SUPERBLOCK_OVERHEAD)
        *why = "shorter than a superblock";
    else if (sl_load_u32(p) != SL_META_SUPERBLOCK_MAGIC)
        *why = "bad magic";
    else if (sl_load_u16(p + 4) != SL_META_SUPERBLOCK_VERSION)
        *why = "unknown version";
    else if (sl_load_u32(p + 24) > SL_META_SUPERBLOCK_PAYLOAD_MAX)
        *why = "payload length over 4096";
    else if (file.len != SL_META_SUPERBLOCK_OVERHEAD + sl_load_u32(p + 24))
        *why = "file size does not match the payload length";
    else if (sl_load_u64(p + file.len - 8) != sl_xxh3_64(p, file.len - 8))
        *why = "checksum mismatch";
    else if (sl_meta_vsr_state_decode(
                 sl_span(p + SL_META_SUPERBLOCK_HEAD_SIZE, sl_load_u32(p + 24)), out) < 0)
        *why = "invalid VSR state payload";
    if (*why)
        return -SL_ERR_STATE_FILE_CORRUPTED;
    *sequence = sl_load_u64(p + 8);
    return 0;
}

/* Reads one slot: 1 = a valid record, 0 = absent or empty, negative = refuse (err set). */
static int load_slot(const char *dir, int slot, uint64_t *sequence, sl_meta_vsr_state_t *v,
                     char *err, size_t err_len)
{
    char path[PATH_MAX];
    if (!join(path, dir, slot_files[slot], "")) {
        snprintf(err, err_len, "metadata path too long: %s/%s", dir, slot_files[slot]);
        return -SL_ERR_CANNOT_READ_FILE;
    }
    sl_buf_t file;
    sl_buf_init(&file, 0);
    /* Read a little past the largest valid file so an oversized one is seen as such. */
    int rc = sl_io_read_file(path, &file,
                             2 * (SL_META_SUPERBLOCK_OVERHEAD + SL_META_SUPERBLOCK_PAYLOAD_MAX));
    const char *why = NULL;
    if (rc == -ENOENT || (rc == 0 && file.len == 0)) {
        rc = 0;
    } else if (rc == -EFBIG) {
        why = "larger than any superblock";
    } else if (rc < 0) {
        snprintf(err, err_len, "metadata superblock %s: cannot read: %s", path, strerror(-rc));
        rc = -SL_ERR_CANNOT_READ_FILE;
    } else if (sl_meta_superblock_decode(sl_buf_span(&file), sequence, v, &why) == 0) {
        rc = 1;
    }
    sl_buf_free(&file);
    if (why) {
        snprintf(err, err_len,
                 "metadata superblock %s is unreadable (%s); refusing to boot and to write", path,
                 why);
        return -SL_ERR_STATE_FILE_CORRUPTED;
    }
    return rc;
}

int sl_meta_superblock_load(const char *dir, sl_meta_superblock_t *out, char *err, size_t err_len)
{
    *out = (sl_meta_superblock_t){.found = false, .slot = -1};
    uint64_t sequence[2] = {0, 0};
    sl_meta_vsr_state_t vsr[2];
    int valid[2];
    for (int slot = 0; slot < 2; slot++) {
        valid[slot] = load_slot(dir, slot, &sequence[slot], &vsr[slot], err, err_len);
        if (valid[slot] < 0)
            return valid[slot];
    }
    if (!valid[0] && !valid[1])
        return 0;
    if (valid[0] && valid[1] && sequence[0] == sequence[1]) {
        snprintf(err, err_len,
                 "metadata superblocks %s/%s and %s/%s both hold sequence %" PRIu64
                 "; refusing to boot",
                 dir, slot_files[0], dir, slot_files[1], sequence[0]);
        return -SL_ERR_STATE_FILE_CORRUPTED;
    }
    int newest = !valid[0] ? 1 : !valid[1] ? 0 : sequence[1] > sequence[0] ? 1 : 0;
    out->found = true;
    out->slot = newest;
    out->sequence = sequence[newest];
    out->vsr = vsr[newest];
    return 0;
}

int sl_meta_superblock_store(const char *dir, sl_meta_superblock_t *sb,
                             const sl_meta_vsr_state_t *vsr, bool *renamed)
{
    *renamed = false;
    int slot = sb->slot == 0 ? 1 : 0;
    uint64_t sequence = sb->sequence + 1;
    uint8_t record[SL_META_SUPERBLOCK_SIZE];
    sl_meta_superblock_encode(record, sequence, vsr);
    char tmp_name[64], tmp_path[PATH_MAX];
    snprintf(tmp_name, sizeof(tmp_name), "%s.tmp", slot_files[slot]);
    if (!join(tmp_path, dir, tmp_name, ""))
        return -SL_ERR_CANNOT_WRITE_TO_FILE;
    int rc = sl_io_write_file_synced(tmp_path, sl_span(record, sizeof(record)));
    if (rc < 0) {
        sl_log_error("metadata superblock %s: cannot write: %s", tmp_path, strerror(-rc));
        sl_io_unlink(tmp_path);
        return -SL_ERR_CANNOT_WRITE_TO_FILE;
    }
    rc = rename_durably(dir, tmp_name, slot_files[slot], renamed);
    if (*renamed) {
        sb->found = true;
        sb->slot = slot;
        sb->sequence = sequence;
        sb->vsr = *vsr;
    } else {
        sl_io_unlink(tmp_path);
    }
    return rc;
}
