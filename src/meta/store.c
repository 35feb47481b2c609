/* The durable metadata log (meta/store.h): recovery at open, commit, and the checkpoint
 * sequence with its crash-safe ordering. */
#include "meta/store.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <sluice/error.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/io.h"
#include "base/log.h"
#include "meta/checkpoint.h"
#include "meta/journal.h"
#include "wire/header.h"

/* The snapshot's state bytes start with the store's own prefix, then the machine's bytes. */
#define STORE_SNAPSHOT_MAGIC       0x534D4C53u /* "SLMS" */
#define STORE_SNAPSHOT_VERSION     1u
#define STORE_SNAPSHOT_PREFIX_SIZE 24u /* magic, version, checkpoint op, last timestamp */

/* How far an interrupted checkpoint got; each later step only runs after the previous one is
 * durable, and a phase past IDLE is resumed, never restarted (snapshot.bin.tmp may be the file
 * the newest superblock names). */
typedef enum checkpoint_phase {
    PHASE_IDLE = 0,
    PHASE_SUPERBLOCK_RENAMED, /* new superblock in place, directory not yet fsynced */
    PHASE_SUPERBLOCK_DURABLE, /* superblock names snapshot.bin.tmp's checksum */
    PHASE_SNAPSHOT_RENAMED,   /* snapshot.bin is the new one, directory not yet fsynced */
} checkpoint_phase_t;

struct sl_meta_store {
    char dir[PATH_MAX]; /* <data_dir>/metadata */
    sl_meta_machine_t machine;
    sl_meta_journal_t *journal;
    sl_meta_superblock_t superblock;
    uint32_t interval;
    uint64_t last_op;
    uint64_t last_timestamp;
    checkpoint_phase_t phase;
    uint64_t pending_op; /* the checkpoint in progress (phase past IDLE) */
    bool rewrite_pending;
    sl_meta_store_info_t info;
    sl_buf_t scratch; /* snapshot bytes, replay replies */
    sl_buf_t body;    /* an entry's body as journaled or as replayed (machine seal/open) */
};

uint64_t sl_meta_store_last_op(const sl_meta_store_t *s)
{
    return s->last_op;
}

uint64_t sl_meta_store_last_timestamp(const sl_meta_store_t *s)
{
    return s->last_timestamp;
}

const sl_meta_store_info_t *sl_meta_store_info(const sl_meta_store_t *s)
{
    return &s->info;
}

static bool path_in(char out[PATH_MAX], const char *dir, const char *name)
{
    int n = snprintf(out, PATH_MAX, "%s/%s", dir, name);
    return n > 0 && n < PATH_MAX;
}

/* --- recovery ------------------------------------------------------------------------ */

/* Creates <data_dir>/metadata when absent, making its entry durable. */
static int make_dir(sl_meta_store_t *s, const char *data_dir, char *err, size_t err_len)
{
    if (!path_in(s->dir, data_dir, SL_META_DIR)) {
        snprintf(err, err_len, "metadata: data directory path too long: %s", data_dir);
        return -SL_ERR_INVALID_CONFIGURATION;
    }
    int rc = sl_io_mkdir(s->dir, sl_io_dir_mode());
    if (rc == -EEXIST)
        return 0;
    if (rc == 0)
        rc = sl_io_fsync_dir(data_dir);
    if (rc < 0) {
        snprintf(err, err_len, "metadata: cannot create %s: %s", s->dir, strerror(-rc));
        return -SL_ERR_CANNOT_CREATE_STATE_DIRECTORY;
    }
    return 0;
}

/* Why a snapshot file cannot be the superblock's, for the refusal message. */
static void describe_snapshot(char *out, size_t len, int rc, const char *why, sl_u128_t checksum)
{
    if (rc == -SL_ERR_STATE_FILE_NOT_FOUND)
        snprintf(out, len, "is missing");
    else if (rc < 0)
        snprintf(out, len, "cannot be used (%s)", why);
    else
        snprintf(out, len, "has checksum %016" PRIx64, checksum.lo);
}

/* Loads the snapshot the superblock names into s->scratch: snapshot.bin, or snapshot.bin.tmp
 * when a checkpoint stopped between its superblock and its rename (then the rename is done
 * now). Anything else refuses the boot. */
static int load_snapshot(sl_meta_store_t *s, char *err, size_t err_len)
{
    const sl_meta_vsr_state_t *vsr = &s->superblock.vsr;
    char path[PATH_MAX], why[PATH_MAX + 128] = "", what[PATH_MAX + 160];
    sl_u128_t checksum;
    if (!path_in(path, s->dir, SL_META_SNAPSHOT_FILE))
        return -SL_ERR_INVALID_CONFIGURATION;
    int rc = sl_meta_snapshot_read(path, &s->scratch, &checksum, why, sizeof(why));
    if (rc == 0 && sl_u128_eq(checksum, vsr->checkpoint_checksum))
        return 0;
    if (rc < 0 && rc != -SL_ERR_STATE_FILE_NOT_FOUND && rc != -SL_ERR_STATE_FILE_CORRUPTED) {
        snprintf(err, err_len, "%s", why);
        return rc;
    }
    describe_snapshot(what, sizeof(what), rc, why, checksum);
    char tmp[PATH_MAX], tmp_why[PATH_MAX + 128];
    sl_u128_t tmp_checksum;
    if (path_in(tmp, s->dir, SL_META_SNAPSHOT_TMP_FILE) &&
        sl_meta_snapshot_read(tmp, &s->scratch, &tmp_checksum, tmp_why, sizeof(tmp_why)) == 0 &&
        sl_u128_eq(tmp_checksum, vsr->checkpoint_checksum)) {
        bool renamed;
        rc = sl_meta_snapshot_install(s->dir, &renamed);
        if (rc < 0) {
            snprintf(err, err_len, "metadata: cannot finish the checkpoint rename of %s", tmp);
            return rc;
        }
        sl_log_info("metadata: finished an interrupted checkpoint: %s renamed to %s", tmp, path);
        s->info.rolled_forward = true;
        return 0;
    }
    snprintf(err, err_len,
             "metadata: %s/%s (sequence %" PRIu64 ") names checkpoint op %" PRIu64
             " with checksum %016" PRIx64 ", but %s %s; refusing to boot",
             s->dir, s->superblock.slot ? SL_META_SUPERBLOCK_B_FILE : SL_META_SUPERBLOCK_A_FILE,
             s->superblock.sequence, vsr->checkpoint_op, vsr->checkpoint_checksum.lo, path, what);
    return -SL_ERR_STATE_FILE_CORRUPTED;
}

/* Checks the store's prefix of the loaded snapshot and hands the rest to the machine. */
static int restore_snapshot(sl_meta_store_t *s, char *err, size_t err_len)
{
    sl_reader_t r = sl_reader(sl_buf_span(&s->scratch));
    uint32_t magic = 0, version = 0;
    uint64_t op = 0, timestamp = 0;
    sl_read_u32(&r, &magic);
    sl_read_u32(&r, &version);
    sl_read_u64(&r, &op);
    sl_read_u64(&r, &timestamp);
    uint64_t want = s->superblock.vsr.checkpoint_op;
    if (!sl_reader_ok(&r) || magic != STORE_SNAPSHOT_MAGIC || version != STORE_SNAPSHOT_VERSION ||
        op != want) {
        snprintf(err, err_len,
                 "metadata: %s/%s is not a snapshot of checkpoint op %" PRIu64
                 " (format or op mismatch); refusing to boot",
                 s->dir, SL_META_SNAPSHOT_FILE, want);
        return -SL_ERR_STATE_FILE_CORRUPTED;
    }
    int rc = s->machine.decode(s->machine.ctx, sl_read_rest(&r));
    if (rc < 0) {
        snprintf(err, err_len, "metadata: %s/%s: the state machine cannot decode it (%d)", s->dir,
                 SL_META_SNAPSHOT_FILE, rc);
        return -SL_ERR_STATE_FILE_CORRUPTED;
    }
    s->last_op = op;
    s->last_timestamp = timestamp;
    s->info.checkpoint_op = op;
    return 0;
}

/* Superblock and snapshot: the state at the checkpoint (or the empty state when fresh). */
static int recover_checkpoint(sl_meta_store_t *s, char *err, size_t err_len)
{
    char path[PATH_MAX];
    for (int slot = 0; slot < 2; slot++) {
        const char *name =
            slot ? SL_META_SUPERBLOCK_B_FILE ".tmp" : SL_META_SUPERBLOCK_A_FILE ".tmp";
        if (path_in(path, s->dir, name))
            sl_io_unlink(path); /* never named by anything: a write that did not finish */
    }
    int rc = sl_meta_superblock_load(s->dir, &s->superblock, err, err_len);
    if (rc < 0)
        return rc;
    const sl_meta_vsr_state_t *vsr = &s->superblock.vsr;
    s->info.superblock_sequence = s->superblock.sequence;
    if (s->superblock.found &&
        (vsr->replica_count != 1 || vsr->replica_id != 0 || !sl_u128_is_zero(vsr->cluster))) {
        snprintf(err, err_len,
                 "metadata: superblock in %s belongs to replica %u of %u (cluster %016" PRIx64
                 "), not this single node; refusing to boot",
                 s->dir, vsr->replica_id, vsr->replica_count, vsr->cluster.lo);
        return -SL_ERR_STATE_FILE_CORRUPTED;
    }
    if (s->superblock.found) {
        rc = load_snapshot(s, err, err_len);
        if (rc == 0)
            rc = restore_snapshot(s, err, err_len);
    } else if (path_in(path, s->dir, SL_META_SNAPSHOT_FILE) && access(path, F_OK) == 0) {
        snprintf(err, err_len, "metadata: %s exists but neither superblock does; refusing to boot",
                 path);
        rc = -SL_ERR_STATE_FILE_CORRUPTED;
    }
    if (rc == 0 && path_in(path, s->dir, SL_META_SNAPSHOT_TMP_FILE))
        sl_io_unlink(path); /* not named by the superblock in force */
    return rc;
}

static int replay_one(void *ctx, const sl_meta_entry_t *e)
{
    sl_meta_store_t *s = ctx;
    sl_assert(e->op == s->last_op + 1); /* the journal's ops are consecutive, checked at open */
    sl_meta_entry_t opened;
    if (s->machine.open) {
        sl_buf_reset(&s->body);
        if (s->machine.open(s->machine.ctx, e, &s->body) < 0 || !sl_buf_ok(&s->body)) {
            sl_log_error("metadata: journaled op %" PRIu64 " cannot be decrypted (a key that is "
                         "not configured, or the file was changed)",
                         e->op);
            return -SL_ERR_CANNOT_DECRYPT_DATA;
        }
        opened = *e;
        opened.body = sl_buf_span(&s->body);
        e = &opened;
    }
    sl_buf_reset(&s->scratch);
    int rc = s->machine.apply(s->machine.ctx, e, &s->scratch);
    if (rc < 0) {
        sl_log_error("metadata: journaled op %" PRIu64 " (operation %u) does not apply: %d", e->op,
                     e->operation, rc);
        return -SL_ERR_STATE_FILE_CORRUPTED;
    }
    s->last_op = e->op;
    s->last_timestamp = e->timestamp;
    s->info.replayed++;
    return 0;
}

/* Journal: ops above the checkpoint must follow it without a gap; entries the checkpoint
 * covers are dropped now (a checkpoint that stopped before its journal rewrite). */
static int recover_journal(sl_meta_store_t *s, char *err, size_t err_len)
{
    /* The journal exists from the first open on and rewrites replace it atomically: without it
     * the ops committed after the checkpoint would vanish unnoticed. */
    char path[PATH_MAX];
    if (s->superblock.found && path_in(path, s->dir, SL_META_JOURNAL_FILE) &&
        access(path, F_OK) != 0) {
        snprintf(err, err_len, "metadata: %s is missing but a superblock exists; refusing to boot",
                 path);
        return -SL_ERR_STATE_FILE_CORRUPTED;
    }
    sl_meta_journal_info_t info;
    int rc = sl_meta_journal_open(&s->journal, s->dir, &info, err, err_len);
    if (rc < 0)
        return rc;
    s->info.torn_bytes = info.torn_bytes;
    /* No checkpoint and no journaled op: nothing was ever committed here. */
    s->info.fresh = !s->superblock.found && info.entries == 0;
    uint64_t base = s->last_op;
    if (info.entries && info.last_op > base && info.first_op > base + 1) {
        snprintf(err, err_len,
                 "metadata: %s/%s starts at op %" PRIu64 " but the checkpoint ends at op %" PRIu64
                 ": ops %" PRIu64 "..%" PRIu64 " are missing; refusing to boot",
                 s->dir, SL_META_JOURNAL_FILE, info.first_op, base, base + 1, info.first_op - 1);
        return -SL_ERR_STATE_FILE_CORRUPTED;
    }
    if (info.entries && info.first_op <= base &&
        (rc = sl_meta_journal_rewrite(s->journal, base)) < 0) {
        /* The journal is whole either way, and replay skips what the checkpoint covers; on a
         * full disk refusing to boot would leave no way to free space. */
        sl_log_warn("metadata: cannot drop checkpointed ops from %s/%s yet (%d); retried after "
                    "the next commit",
                    s->dir, SL_META_JOURNAL_FILE, rc);
        s->rewrite_pending = true;
    }
    rc = sl_meta_journal_replay(s->journal, base, replay_one, s);
    if (rc == -SL_ERR_CANNOT_DECRYPT_DATA)
        snprintf(err, err_len,
                 "metadata: op %" PRIu64 " of %s/%s cannot be decrypted: it was sealed with a key "
                 "that is neither system.encryption.key nor previous_key, or the file was changed",
                 s->last_op + 1, s->dir, SL_META_JOURNAL_FILE);
    else if (rc < 0)
        snprintf(err, err_len, "metadata: replay of %s/%s failed at op %" PRIu64 " (%d)", s->dir,
                 SL_META_JOURNAL_FILE, s->last_op + 1, rc);
    return rc;
}

int sl_meta_store_open(sl_meta_store_t **out, const char *data_dir,
                       const sl_meta_machine_t *machine, uint32_t checkpoint_interval, char *err,
                       size_t err_len)
{
    *out = NULL;
    if (err_len)
        err[0] = '\0';
    sl_meta_store_t *s = calloc(1, sizeof(*s));
    if (!s) {
        snprintf(err, err_len, "metadata: out of memory");
        return -SL_ERR_CANNOT_READ_FILE;
    }
    s->machine = *machine;
    s->interval = checkpoint_interval;
    sl_buf_init(&s->scratch, 0);
    sl_buf_init(&s->body, 0);
    int rc = make_dir(s, data_dir, err, err_len);
    if (rc == 0)
        rc = recover_checkpoint(s, err, err_len);
    if (rc == 0)
        rc = recover_journal(s, err, err_len);
    if (rc < 0) {
        sl_meta_store_close(s);
        return rc;
    }
    /* The owner logs the summary (fresh or recovered) at info level. */
    sl_log_debug("metadata: %s at op %" PRIu64 " (checkpoint op %" PRIu64 ", %" PRIu64
                 " journal entries replayed)",
                 s->info.fresh ? "fresh" : "recovered", s->last_op, s->info.checkpoint_op,
                 s->info.replayed);
    *out = s;
    return 0;
}

void sl_meta_store_close(sl_meta_store_t *s)
{
    if (!s)
        return;
    sl_meta_journal_close(s->journal);
    sl_buf_free(&s->scratch);
    sl_buf_free(&s->body);
    free(s);
}

/* --- checkpoint ----------------------------------------------------------------------- */

/* Step 1 and 2: snapshot.bin.tmp, then the superblock naming it. */
static int checkpoint_begin(sl_meta_store_t *s)
{
    sl_buf_t *b = &s->scratch;
    sl_buf_reset(b);
    sl_put_u32(b, STORE_SNAPSHOT_MAGIC);
    sl_put_u32(b, STORE_SNAPSHOT_VERSION);
    sl_put_u64(b, s->last_op);
    sl_put_u64(b, s->last_timestamp);
    int rc = s->machine.encode(s->machine.ctx, b);
    if (rc < 0 || !sl_buf_ok(b)) {
        sl_log_error("metadata: the state machine cannot encode a snapshot (%d)", rc);
        return -SL_ERR_CANNOT_SERIALIZE_RESOURCE;
    }
    sl_meta_vsr_state_t vsr = {
        .replica_count = 1, .commit_max = s->last_op, .checkpoint_op = s->last_op};
    rc = sl_meta_snapshot_write_tmp(s->dir, sl_buf_span(b), &vsr.checkpoint_checksum);
    if (rc < 0)
        return rc;
    bool renamed;
    rc = sl_meta_superblock_store(s->dir, &s->superblock, &vsr, &renamed);
    if (renamed) {
        s->pending_op = vsr.checkpoint_op;
        s->phase = rc == 0 ? PHASE_SUPERBLOCK_DURABLE : PHASE_SUPERBLOCK_RENAMED;
    } else {
        /* No superblock names the new snapshot: its blocks go back (a full disk needs them). */
        char path[PATH_MAX];
        if (path_in(path, s->dir, SL_META_SNAPSHOT_TMP_FILE))
            sl_io_unlink(path);
    }
    return rc;
}

/* Moves an in-progress checkpoint one step; 0 when the step is done. */
static int checkpoint_step(sl_meta_store_t *s)
{
    int rc = 0;
    bool renamed = false;
    switch (s->phase) {
    case PHASE_IDLE:
        return checkpoint_begin(s);
    case PHASE_SUPERBLOCK_RENAMED:
    case PHASE_SNAPSHOT_RENAMED:
        if ((rc = sl_io_fsync_dir(s->dir)) < 0) {
            sl_log_error("metadata: cannot fsync directory %s: %s", s->dir, strerror(-rc));
            return -SL_ERR_CANNOT_SYNC_FILE;
        }
        s->phase = s->phase == PHASE_SUPERBLOCK_RENAMED ? PHASE_SUPERBLOCK_DURABLE : PHASE_IDLE;
        return 0;
    case PHASE_SUPERBLOCK_DURABLE:
        rc = sl_meta_snapshot_install(s->dir, &renamed);
        if (renamed)
            s->phase = rc == 0 ? PHASE_IDLE : PHASE_SNAPSHOT_RENAMED;
        return rc;
    }
    sl_assert(!"unknown checkpoint phase");
    return -SL_ERR_ERROR;
}

int sl_meta_store_checkpoint(sl_meta_store_t *s)
{
    if (s->phase == PHASE_IDLE && !s->rewrite_pending && s->last_op == s->info.checkpoint_op)
        return 0;
    int rc = 0;
    if (s->phase != PHASE_IDLE || s->last_op != s->info.checkpoint_op) {
        /* At most four steps (begin, fsync, rename, fsync) reach IDLE again. */
        for (int step = 0; step < 4 && rc == 0; step++) {
            rc = checkpoint_step(s);
            if (rc == 0 && s->phase == PHASE_IDLE)
                break;
        }
        if (rc < 0) {
            s->info.checkpoint_failures++;
            return rc;
        }
        sl_assert(s->phase == PHASE_IDLE);
        s->info.checkpoint_op = s->pending_op;
        s->info.superblock_sequence = s->superblock.sequence;
        s->info.checkpoints++;
        s->rewrite_pending = true;
    }
    /* The superblock and snapshot are durable: the journal may now forget what they cover. */
    rc = sl_meta_journal_rewrite(s->journal, s->info.checkpoint_op);
    if (rc < 0) {
        s->info.checkpoint_failures++;
        return rc;
    }
    s->rewrite_pending = false;
    return 0;
}

/* --- commit ------------------------------------------------------------------------- */

sl_meta_reserve_t sl_meta_reserve_for(uint8_t operation)
{
    switch (operation) {
    case SL_OP_DELETE_STREAM:
    case SL_OP_PURGE_STREAM:
    case SL_OP_DELETE_TOPIC:
    case SL_OP_PURGE_TOPIC:
    case SL_OP_DELETE_PARTITIONS:
    case SL_OP_DELETE_SEGMENTS:
    case SL_OP_TRUNCATE_PARTITION: /* what DeleteSegments commits as */
    case SL_OP_DELETE_CONSUMER_GROUP:
        return SL_META_RESERVE_ALL;
    case SL_OP_REGISTER:
    case SL_OP_LOGOUT:
        return SL_META_RESERVE_HALF;
    default:
        return SL_META_RESERVE_KEEP;
    }
}

int sl_meta_store_commit(sl_meta_store_t *s, const sl_meta_entry_t *e, sl_buf_t *reply)
{
    sl_assert(e->op == s->last_op + 1);
    sl_assert(e->timestamp > s->last_timestamp);
    const sl_meta_entry_t *journaled = e;
    sl_meta_entry_t sealed;
    if (s->machine.seal) {
        sl_buf_reset(&s->body);
        if (s->machine.seal(s->machine.ctx, e, &s->body) < 0 || !sl_buf_ok(&s->body))
            return -SL_ERR_CANNOT_ENCRYPT_DATA; /* nothing journaled, nothing applied */
        sealed = *e;
        sealed.body = sl_buf_span(&s->body);
        journaled = &sealed;
    }
    int rc = sl_meta_journal_append(s->journal, journaled, sl_meta_reserve_for(e->operation));
    if (rc < 0)
        return rc;
    s->last_op = e->op;
    s->last_timestamp = e->timestamp;
    rc = s->machine.apply(s->machine.ctx, e, reply);
    if (rc < 0) {
        sl_log_error("metadata: op %" PRIu64 " (operation %u) is journaled but does not apply: %d",
                     e->op, e->operation, rc);
        return rc;
    }
    bool due = s->interval && s->last_op - s->info.checkpoint_op >= s->interval;
    if (due || s->phase != PHASE_IDLE || s->rewrite_pending) {
        int ckpt = sl_meta_store_checkpoint(s);
        if (ckpt < 0)
            sl_log_warn("metadata: checkpoint at op %" PRIu64 " failed (%d); retrying after the "
                        "next commit",
                        s->last_op, ckpt);
    }
    return 0;
}
