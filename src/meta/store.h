/* The durable metadata log: journal.wal + snapshot.bin + superblock.a/.b under
 * <data_dir>/metadata, driving a pluggable deterministic state machine.
 *
 * commit = journal append + fdatasync, then apply. Every checkpoint_interval ops the store
 * checkpoints: snapshot.bin.tmp (fsync) -> superblock naming it (ping-pong, dir fsync) ->
 * rename to snapshot.bin (dir fsync) -> journal rewritten without the ops it covers. Open
 * recovers: superblock -> snapshot (its checksum must be the superblock's) -> replay of the
 * journal above the checkpoint. A crash at any point of a checkpoint recovers to exactly the
 * committed ops: until the superblock names the new snapshot the old pair and the whole journal
 * stand; after it, snapshot.bin or (before its rename) snapshot.bin.tmp carries that checksum
 * and open finishes the rename. The store owns the files; the machine's ctx stays the
 * caller's. Single-threaded: the metadata owner thread calls everything. */
#ifndef SL_META_STORE_H
#define SL_META_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/assert.h"
#include "base/bytes.h"
#include "meta/entry.h"
#include "meta/journal.h"

#define SL_META_DIR "metadata"

/* The state machine the store makes durable. All three must be deterministic functions of
 * the state and their input: replaying the journal must rebuild the same state. */
typedef struct sl_meta_machine {
    void *ctx;
    /* Applies a committed entry and appends its reply body to reply. 0, or negative when the
     * entry cannot be applied at all (a bug: admitted entries always apply). */
    int (*apply)(void *ctx, const sl_meta_entry_t *e, sl_buf_t *reply);
    /* Appends the whole state to out (the snapshot). 0 or negative. */
    int (*encode)(void *ctx, sl_buf_t *out);
    /* Replaces the state with the one encoded in bytes (untrusted: bounds-checked). */
    int (*decode)(void *ctx, sl_span_t bytes);
    /* Optional, both or neither (at-rest encryption, server/encryption.h): seal appends to out
     * the form of e's body that the journal stores; open appends to out the body back from a
     * journaled entry's, or fails (negative) when it does not verify. The header (op,
     * timestamp, operation, ...) is journaled as it is. */
    int (*seal)(void *ctx, const sl_meta_entry_t *e, sl_buf_t *out);
    int (*open)(void *ctx, const sl_meta_entry_t *e, sl_buf_t *out);
} sl_meta_machine_t;

typedef struct sl_meta_store sl_meta_store_t;

/* What open found and what checkpoints did since, for logs, stats and tests. */
typedef struct sl_meta_store_info {
    bool fresh;                   /* no superblock and no journal entry: nothing existed */
    bool rolled_forward;          /* open finished a checkpoint's snapshot rename */
    uint64_t superblock_sequence; /* of the newest superblock record (0 when fresh) */
    uint64_t checkpoint_op;       /* op of the snapshot in force (0: none) */
    uint64_t replayed;            /* journal entries applied at open */
    uint64_t torn_bytes;          /* bytes cut from the journal's tail at open */
    uint64_t checkpoints;         /* completed since open */
    uint64_t checkpoint_failures; /* attempts that failed (retried on the next commit) */
} sl_meta_store_info_t;

/* Opens <data_dir>/metadata (creating it when absent; data_dir must exist) and recovers the
 * machine, whose ctx must hold the empty state. checkpoint_interval: ops between checkpoints,
 * 0 = only when sl_meta_store_checkpoint is called. On a refusal (unreadable superblock,
 * snapshot not matching it, ops missing between snapshot and journal, an entry that does not
 * apply, journal.wal missing next to a superblock) returns -SL_ERR_STATE_FILE_CORRUPTED with a
 * message naming the files in err; I/O errors give -SL_ERR_CANNOT_READ_FILE and similar. After
 * a failed open the machine's state is unspecified: discard it. */
SL_WUR int sl_meta_store_open(sl_meta_store_t **out, const char *data_dir,
                              const sl_meta_machine_t *machine, uint32_t checkpoint_interval,
                              char *err, size_t err_len);
void sl_meta_store_close(sl_meta_store_t *s);

/* How much of the journal's reserve (meta/journal.h) an entry of this operation may use: all
 * of it for the operations that free space on disk (DeleteStream, DeleteTopic,
 * DeletePartitions, DeleteSegments, PurgeStream, PurgeTopic, DeleteConsumerGroup), half for
 * logins and logouts (so an operator can get in, while a crowd of reconnecting clients cannot
 * take what the deletes need), none for the rest. */
sl_meta_reserve_t sl_meta_reserve_for(uint8_t operation);

/* Journals e (append + fdatasync), then applies it, appending the reply body to reply.
 * The journal append uses the reserve as sl_meta_reserve_for(e->operation) allows: on a full
 * disk an ordinary operation fails with -SL_ERR_CANNOT_WRITE_TO_FILE and nothing applied.
 * e->op must be last op + 1 and e->timestamp above the last timestamp (asserted).
 * On an I/O error nothing is applied, the error (-SL_ERR_CANNOT_WRITE_TO_FILE or
 * -SL_ERR_CANNOT_SYNC_FILE) is returned and the same op may be committed again later.
 * A failing checkpoint after a successful apply is logged and retried, not returned: the
 * entry is committed either way. A negative apply result is returned as is (the entry is
 * journaled and counted: the caller must treat it as a bug). */
SL_WUR int sl_meta_store_commit(sl_meta_store_t *s, const sl_meta_entry_t *e, sl_buf_t *reply);

/* Checkpoints now (or resumes an interrupted checkpoint). 0 or a negative SL_ERR. A failure
 * leaves the files as they were, or as a later attempt resumes them, and removes what it wrote
 * that nothing names (a full disk gets its space back). */
SL_WUR int sl_meta_store_checkpoint(sl_meta_store_t *s);

/* The last committed op and its timestamp: the server continues with op + 1 and a strictly
 * greater timestamp. Both 0 on a fresh store. */
uint64_t sl_meta_store_last_op(const sl_meta_store_t *s);
uint64_t sl_meta_store_last_timestamp(const sl_meta_store_t *s);
const sl_meta_store_info_t *sl_meta_store_info(const sl_meta_store_t *s);

#endif
