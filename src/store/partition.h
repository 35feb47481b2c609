/* A partition on disk (storage.md): its segments, the in-memory journal of batches not yet
 * flushed, the flush gate, rotation, boot recovery, polls, retention, purge and the consumer
 * offsets stored beside it (store/offsets.h). No network and no server knowledge: the server
 * resolves streams, topics, strategies and permissions and calls in with plain numbers.
 *
 * Threading: one owner. The shard that owns a partition makes every call; nothing locks.
 *
 * Ownership on the write path: an appended batch is never copied. The caller hands over the
 * allocation that holds the validated record (typically the whole request frame) with a pointer
 * to the record inside it; the partition stamps the record in place, keeps it in its journal
 * (which polls read directly), writes it to the .log straight from that memory with vectored
 * writes, and releases the allocation (cfg.release, or free()) once it is on disk. Polls copy
 * out of the journal or the files into the caller's buffer, so nothing they return borrows
 * partition memory.
 *
 * I/O errors on the write path: the append that hit one is not acknowledged and leaves nothing
 * behind (bytes written are cut off again, its offsets are handed out again); batches journaled
 * and acknowledged before it stay in memory and are written by the next flush. */
#ifndef SL_STORE_PARTITION_H
#define SL_STORE_PARTITION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/assert.h"
#include "base/bytes.h"
#include "wire/topic_options.h"

typedef struct sl_partition sl_partition_t;

/* Gives back an allocation handed over with an append, once the partition is done with it. */
typedef void (*sl_partition_release_fn)(void *ctx, void *owner);
/* The bytes of memory an allocation handed over with an append holds (its capacity, whatever
 * part of it the record fills); ctx is the config's release_ctx. */
typedef size_t (*sl_partition_held_fn)(void *ctx, const void *owner);

/* The bound on the memory that unflushed journals hold, shared by the partitions of one owner
 * thread (the server has one for all its partitions). Every journaled batch counts with the
 * memory its owner holds (held hook), not its record length. When an append brings the total
 * above max, journals are flushed early, the partition whose oldest unflushed batch is oldest
 * first, until the total is within max again; an append the bound cannot make room for (those
 * flushes fail: a full disk) is refused and takes nothing, so the total stays within max.
 * The fields are the store's: read them, never write them (sl_journal_bound_init sets up). */
typedef struct sl_journal_bound {
    uint64_t max;           /* bytes; 0: no bound */
    uint64_t held;          /* bytes held by the journals of the partitions listed */
    uint64_t early_flushes; /* flushes the bound started */
    uint64_t refused;       /* appends refused because no room could be made */
    /* Partitions whose journal holds something, in the order their oldest unflushed batch
     * arrived: a partition joins at the newest end when its journal stops being empty and
     * leaves when it is empty again. */
    sl_partition_t *oldest, *newest;
    uint32_t partitions;
} sl_journal_bound_t;

/* An empty bound of max bytes (0: none). Every partition using it must be closed before the
 * bound goes away. */
void sl_journal_bound_init(sl_journal_bound_t *b, uint64_t max);

/* Where a partition's first segment is created off the owner thread (docs/architecture.md,
 * "First segments created off the loop"). A partition with no segment (new, or purged) whose
 * flush gate trips calls begin instead of creating <dir>/<start:020>.log and .index itself,
 * unless its topic enforces fsync (the append waits for the files, so it creates them as
 * before) or writes an index entry per batch (a cluster's replicas). begin starts creating, in
 * this order: dir (and its parents) when make_dir, then the two files with O_CREAT | O_EXCL;
 * true when started, false when the creator is full (the partition then creates them itself,
 * now). Meanwhile the partition's batches stay journaled (polls serve them from memory; a
 * non-fsync send was always acknowledged from memory), and on the owner thread, when done,
 * the creator calls sl_partition_created with the same seq, which installs the files and
 * flushes the journal. wait completes every creation in flight (each one's
 * sl_partition_created runs inside it) before it returns: the partition calls it before
 * anything that must not race a creation (close, purge, a flush that may not be deferred,
 * the journal bound's early flushes), so a delete or purge of a partition never runs while
 * its files are being created. Partitions that share a journal bound share one creator. */
typedef struct sl_partition_creator {
    bool (*begin)(void *ctx, sl_partition_t *p, uint64_t seq, const char *dir, uint64_t start,
                  bool make_dir);
    void (*wait)(void *ctx);
    void *ctx;
} sl_partition_creator_t;

/* How one partition stores its messages: the topic's options (options.md 4.5) plus two server
 * settings. Zero in a numeric field means its default. */
typedef struct sl_partition_config {
    uint64_t segment_size;                      /* soft size of a segment; 0: 1 GiB */
    uint32_t messages_required_to_save;         /* flush gate: journal messages; 0: 1024 */
    uint64_t size_of_messages_required_to_save; /* flush gate: journal bytes; 0: 1 MiB */
    bool enforce_fsync;              /* fdatasync before an append returns, and offset stores */
    bool preallocate_segments;       /* reserve segment_size bytes for each new .log */
    bool validate_checksum;          /* re-verify every record a poll reads from disk */
    /* An .index entry for every batch instead of one per flush, and recovery rebuilds an
     * index that lacks one: the segment files are then a function of the batches appended
     * alone, whenever the flushes came (segment boundaries always are: a segment ends with
     * the batch that takes it to segment_size). A cluster's replicas of one partition hold
     * identical files this way (server/cluster_partition.c). Create-only. */
    bool index_every_batch;
    uint64_t message_expiry;         /* microseconds; 0 or UINT64_MAX: never */
    uint64_t max_size_share;         /* this partition's share of max_topic_size; 0 or UINT64_MAX:
                                      * unlimited */
    uint64_t batch_max;              /* largest record accepted and read back; 0: 64 MiB (the frame
                                      * limit) */
    uint64_t created_revision;       /* the incarnation purge.gen records are matched against (the
                                      * server uses the topic's created_at); create-only */
    sl_partition_release_fn release; /* NULL: free(owner) */
    sl_partition_held_fn held;       /* NULL: malloc_usable_size(owner) when release is NULL too
                                      * (owner is malloc's), else the record's length */
    void *release_ctx;
    sl_journal_bound_t *bound; /* shared with the owner's other partitions; NULL: none.
                                * Create-only; it must outlive the partition */
    /* Creates first segments off the owner thread; NULL: the partition creates them itself.
     * Create-only; it must outlive the partition. */
    const sl_partition_creator_t *creator;
    sl_buf_t *read_buf;        /* scratch for the file reads of polls, shared with the
                                * owner's other partitions (one poll runs at a time), so
                                * read memory does not grow with partitions; NULL: the
                                * partition's own. Create-only; must outlive it */
} sl_partition_config_t;

/* The config of one of partitions_count partitions of a topic: its options, max_topic_size
 * shared equally (storage.md 8), validate_checksum on. */
void sl_partition_config_from_topic(const sl_topic_config_t *topic, uint32_t partitions_count,
                                    sl_partition_config_t *out);

/* --- open and close ------------------------------------------------------------------------ */

/* Opens the partition in dir (creating dir, its parents and offsets/{consumers,groups} when
 * absent) and recovers it (storage.md 4): *.staging files and .index files without a .log are
 * deleted; each segment's bounds come from its index and a walk of the .log from the last
 * entry, or a walk of the whole .log when the index is missing, torn or garbled (it is then
 * rebuilt); torn tails are cut; the segments must form a chain; the last
 * becomes the active one; then the consumer offsets are loaded (store/offsets.h). A fresh
 * directory gets segment 0. now_us is the wall clock, used to warn when the newest stored
 * timestamp lies in the future (appends never go back in time, storage.md 2.2 lookups rely on
 * it).
 *
 * Refusals, with the reason in err and an error log line; the partition must be fenced, not
 * the node, and no file has been changed except the sweep:
 *   -SL_ERR_CANNOT_READ_INDEX_POSITION: an .index's last entry points past the end of its .log;
 *   -SL_ERR_STATE_FILE_CORRUPTED: the segments do not form a chain (a gap, an empty segment
 *    that is not the last, a batch whose offset breaks the sequence).
 * Other errors: -SL_ERR_CANNOT_CREATE_PARTITION_DIRECTORY, -SL_ERR_CANNOT_READ_PARTITIONS (the
 * directory cannot be listed), -SL_ERR_CANNOT_OPEN_PARTITION_LOG_FILE, -SL_ERR_CANNOT_READ_FILE,
 * -SL_ERR_CANNOT_WRITE_TO_FILE (a repair failed), -SL_ERR_CANNOT_READ_CONSUMER_OFFSETS. */
SL_WUR int sl_partition_open(const char *dir, uint32_t partition_id,
                             const sl_partition_config_t *cfg, uint64_t now_us,
                             sl_partition_t **out, char *err, size_t err_len);

/* A partition known to be new (its directory was just cleared: CreatePartitions, a new
 * topic): nothing is read, and nothing is created on disk until its first write, which makes
 * dir and its parents (a segment at the first flush, a consumer offset, a purge record). So a
 * topic of 1000 partitions is created without a syscall per partition. Its purge generation
 * is 0. 0 or -SL_ERR_CANNOT_CREATE_PARTITION_DIRECTORY (out of memory, dir too long). */
SL_WUR int sl_partition_create(const char *dir, uint32_t partition_id,
                               const sl_partition_config_t *cfg, sl_partition_t **out);

/* Forgets everything held in memory (the journal's unflushed batches too) and opens the
 * partition's directory again as sl_partition_open does: a cluster state transfer
 * (server/cluster_transfer.c) calls it after sl_partition_install_roll replaced the segments.
 * Errors as sl_partition_open; the partition then holds nothing until reloaded again. */
SL_WUR int sl_partition_reload(sl_partition_t *p, uint64_t now_us, char *err, size_t err_len);

/* --- segments installed by a cluster state transfer (store/install.c) ---------------------
 *
 * A replica whose partition fell behind its group's checkpoint gets the segments of a peer
 * (docs/cluster.md "State transfer"). They are staged whole as <staging>/<start:020>.log
 * (verified by the caller), then committed by sl_partition_install_commit, which writes
 * <staging>/INSTALL (through a .tmp, fsynced, renamed, directory fsynced) after fsyncing every
 * staged file: the marker is the commit point. sl_partition_install_roll then replaces the
 * partition's files: every .index goes (rebuilt at open), every .log not staged goes, each
 * staged .log is renamed into the partition directory, the directory is fsynced and purge.gen
 * written. Every step can run again: a crash before the marker leaves the old segments (the
 * staging is discarded at the next roll), one after it is rolled forward by the next boot
 * (server/partitions.c calls the roll before it opens a partition), so the partition holds
 * either the old set or the new one, never a mix. The caller removes the staging directory
 * (sl_partition_install_done) once what the blob carries is applied. */
#define SL_PARTITION_INSTALL_MARKER "INSTALL"
SL_WUR int sl_partition_install_commit(const char *staging, uint64_t generation,
                                       const uint64_t *starts, uint32_t n, sl_span_t blob);
/* 0 with *rolled false when no marker is there (a staging directory without one is removed),
 * 0 with *rolled true and the marker's blob appended to blob_out when the files were rolled
 * (files false: only the blob, the files having been rolled before), or a negative error (a
 * marker that does not verify, a rename or sync that failed). */
SL_WUR int sl_partition_install_roll(const char *dir, const char *staging,
                                     uint64_t created_revision, bool files, sl_buf_t *blob_out,
                                     bool *rolled);
SL_WUR int sl_partition_install_done(const char *staging);

/* True for the two refusals of sl_partition_open (as opposed to I/O errors worth a retry). */
bool sl_partition_refused(int rc);

/* Writes every journaled batch to disk (shutdown; fsyncs when the topic enforces it).
 * 0 or the error of sl_partition_append; what could not be written stays journaled. */
SL_WUR int sl_partition_flush(sl_partition_t *p);

/* Flushes, then makes every stored batch durable whatever the topic's enforce_fsync: the
 * segments sealed since the last sync and the active one are fdatasynced (.log and .index),
 * and the directory names leading to them. A cluster checkpoint calls it before it names the
 * partition's next offset (server/cluster_partition.c). 0, or the flush's error, or
 * -SL_ERR_CANNOT_SYNC_FILE. */
SL_WUR int sl_partition_sync(sl_partition_t *p);

/* Closes the files and releases the journal (its memory leaves cfg.bound). Batches not flushed
 * are lost: flush first. */
void sl_partition_close(sl_partition_t *p);

/* Deletes a partition directory and everything in it (the partition must be closed).
 * A missing directory is not an error. 0 or -SL_ERR_CANNOT_DELETE_PARTITION_DIRECTORY. */
SL_WUR int sl_partition_remove(const char *dir);

/* Deletes dir and everything under it, children first, links not followed, at most
 * SL_STORE_TREE_DEPTH_MAX levels of directories deep (a stream's tree is six: topics/T/
 * partitions/P/offsets/consumers), then fsyncs dir's parent so the deletion is durable. It keeps
 * going past a failure to delete as much as it can. A missing dir is not an error and is not
 * synced (its parent may be missing too). 0 or -SL_ERR_CANNOT_DELETE_FILE (logged). */
#define SL_STORE_TREE_DEPTH_MAX 8
SL_WUR int sl_store_remove_tree(const char *dir);

/* Changes the options that can change while open (message_expiry and max_size_share after an
 * UpdateTopic or a new partitions count, validate_checksum); the create-only ones are kept. */
void sl_partition_reconfigure(sl_partition_t *p, const sl_partition_config_t *cfg);

/* --- append (messages.md 3.3, storage.md 3) ------------------------------------------------- */

/* A batch handed to the partition: record (len bytes) lies inside the allocation owner (owner
 * may be record itself); owner is what gets released, so each batch needs its own. */
typedef struct sl_partition_batch {
    void *owner;
    uint8_t *record;
    size_t len;
    /* What sl_batch_validate_keep left for this record (the batch checksum's input), which the
     * stamp then reuses instead of walking the frames; NULL: none, the stamp walks. Borrowed
     * for the call; overwritten by it. */
    uint8_t *sums;
    size_t sums_len;
} sl_partition_batch_t;

/* Appends one batch record that already passed sl_batch_validate. The record is stamped in place
 * (partition_id, base_offset = the next offset, base_timestamp = max(timestamp_us, the newest
 * stored timestamp), batch_checksum) and journaled; when the flush gate trips (journal messages
 * >= messages_required_to_save, journal bytes >= size_of_messages_required_to_save, the active
 * segment plus the journal at segment_size, or enforce_fsync) the journal is written out, with
 * rotation at segment_size, and with enforce_fsync fdatasynced before this returns.
 *
 * Then, when the journals of cfg.bound hold more than its max, the oldest of them are flushed
 * (sl_journal_bound_t), this partition's included.
 *
 * On success the partition owns `owner` and *base_offset_out gets the batch's base offset: the
 * batch is acknowledged. On failure nothing is acknowledged: the caller keeps `owner` (its
 * record may be stamped already), the offsets are handed out again by the next append, the
 * bytes of the failed flush are cut off, earlier journaled batches stay journaled and are
 * written by a later flush. Errors: -SL_ERR_INVALID_MESSAGES_SIZE (a record larger than
 * batch_max), -SL_ERR_CANNOT_SAVE_MESSAGES_TO_SEGMENT, -SL_ERR_CANNOT_SAVE_INDEX_TO_SEGMENT,
 * -SL_ERR_CANNOT_SYNC_FILE, -SL_ERR_CANNOT_CREATE_SEGMENT_LOG_FILE: from this partition's flush,
 * or from the early flush of another one when the bound could not be met without it (the
 * batch would have taken the journals past cfg.bound's max). */
SL_WUR int sl_partition_append(sl_partition_t *p, void *owner, uint8_t *record, size_t len,
                               uint64_t timestamp_us, uint64_t *base_offset_out);

/* Group commit: appends n batches in order with one flush (and one fdatasync per segment
 * written) for all of them. *accepted gets how many were acknowledged, in order from the first:
 * batches [0, accepted) are owned by the partition and base_offsets[i] holds their offsets;
 * the caller keeps the rest. Returns 0 when all were accepted, else the error. */
SL_WUR int sl_partition_append_many(sl_partition_t *p, const sl_partition_batch_t *batches,
                                    size_t n, uint64_t timestamp_us, uint64_t *base_offsets,
                                    size_t *accepted);

/* A creation begun by cfg.creator->begin(.., seq, ..) is done: dir_rc is the result of the
 * directory's mkdir (0 when none was asked), log_fd and index_fd the opened files or negative
 * errnos. Installs the files as the active segment and flushes the journal; when a file could
 * not be created (a missing parent, say) it closes and unlinks what it created and the flush
 * creates the segment here, as without a creator. A flush error is logged: the batches were
 * acknowledged and stay journaled for the next flush. Owner thread only. */
void sl_partition_created(sl_partition_t *p, uint64_t seq, int dir_rc, int log_fd, int index_fd);
/* True while a creation begun for the partition is in flight. */
bool sl_partition_creating(const sl_partition_t *p);

/* --- poll (messages.md 4) ------------------------------------------------------------------- */

typedef enum sl_partition_poll_kind {
    SL_PARTITION_POLL_OFFSET = 1,    /* value = first offset wanted */
    SL_PARTITION_POLL_TIMESTAMP = 2, /* value = microseconds: batches with base_timestamp >= it */
} sl_partition_poll_kind_t;

typedef struct sl_partition_poll {
    sl_partition_poll_kind_t kind;
    uint64_t value;
    uint32_t count; /* at most this many messages; 0: none */
} sl_partition_poll_t;

typedef struct sl_partition_poll_result {
    uint32_t messages;       /* messages in the records appended to out */
    uint64_t current_offset; /* the newest offset (0 when empty) */
    bool empty;              /* no offset was ever given out (since creation or purge) */
    uint64_t first_offset;   /* offset of the first message appended (when messages > 0) */
    uint64_t last_offset;    /* offset of the last message appended (when messages > 0) */
    int read_error;          /* 0, or why a disk read stopped early: -SL_ERR_CANNOT_READ_FILE
                              * (I/O), -SL_ERR_INVALID_FORMAT (no valid batch where the next
                              * one must be), or what sl_batch_validate said of a record that
                              * failed verification (-SL_ERR_INVALID_MESSAGE_CHECKSUM,
                              * -SL_ERR_INVALID_BATCH_CHECKSUM, -SL_ERR_INVALID_COMMAND) */
    bool out_full;           /* stopped because the next record did not fit in out */
} sl_partition_poll_result_t;

/* Appends to out the records of messages.md 4.1 for q: each stored batch with selected frames
 * either byte for byte (all its frames) or as a sliced record (sl_batch_slice_*), from the
 * journal or from the segments (index lookup, then a walk). By offset, frames from q->value
 * on (a value below the oldest retained offset starts at the oldest); by timestamp, whole
 * batches whose base_timestamp >= q->value. At most q->count messages and never a record that
 * does not fit in out (out->max). With validate_checksum every record served from disk is
 * verified first (frame and batch checksums); a record that fails, or a read error, ends the
 * poll there: what came before it is served. Returns 0 (see res for what happened) or
 * -SL_ERR_INVALID_COMMAND for an unknown kind. */
SL_WUR int sl_partition_poll(sl_partition_t *p, const sl_partition_poll_t *q, sl_buf_t *out,
                             sl_partition_poll_result_t *res);

/* --- accessors ------------------------------------------------------------------------------ */

uint32_t sl_partition_id(const sl_partition_t *p);
/* The newest offset (0 when empty). */
uint64_t sl_partition_current_offset(const sl_partition_t *p);
/* The base offset the next batch gets (0 when empty): current + 1 once anything was stored. */
uint64_t sl_partition_next_offset(const sl_partition_t *p);
/* The partition's directory; sl_partition_ensure_dir creates it (and its parents) when a
 * partition created new has not written anything yet. 0 or
 * -SL_ERR_CANNOT_CREATE_PARTITION_DIRECTORY. */
const char *sl_partition_dir(const sl_partition_t *p);
SL_WUR int sl_partition_ensure_dir(sl_partition_t *p);
/* The oldest offset still stored (= next offset when nothing is). */
uint64_t sl_partition_first_offset(const sl_partition_t *p);
/* True until the first append (and again after a purge). */
bool sl_partition_empty(const sl_partition_t *p);
/* Messages stored (retention and segment deletion lower it). */
uint64_t sl_partition_messages(const sl_partition_t *p);
/* Bytes of stored records, journaled ones included. */
uint64_t sl_partition_size(const sl_partition_t *p);
/* Segments, the active one included: at least 1. */
uint32_t sl_partition_segments(const sl_partition_t *p);
/* Messages and bytes in the journal, not yet on disk. */
uint64_t sl_partition_journal_messages(const sl_partition_t *p);
uint64_t sl_partition_journal_bytes(const sl_partition_t *p);
/* Memory the journal's batches hold (cfg.held of each), what counts against cfg.bound. */
uint64_t sl_partition_journal_held(const sl_partition_t *p);

typedef struct sl_segment_info {
    uint64_t start_offset;
    uint64_t end_offset; /* last offset; start_offset - 1 when empty (use messages) */
    uint64_t messages;
    uint64_t size;
    uint64_t end_timestamp;
    bool sealed;
} sl_segment_info_t;

/* Segment i (0 = oldest). false when i is out of range. */
bool sl_partition_segment_info(const sl_partition_t *p, uint32_t i, sl_segment_info_t *out);

/* --- deletion (storage.md 8) ----------------------------------------------------------------- */

/* Deletes every segment, journaled batches and stored consumer offset; offsets restart at 0
 * in a new segment 0, created by the next flush. 0 or -SL_ERR_CANNOT_DELETE_FILE /
 * -SL_ERR_CANNOT_DELETE_CONSUMER_OFFSET_FILE. */
SL_WUR int sl_partition_purge(sl_partition_t *p);

/* The purge generation recorded in purge.gen (store/purge_gen.h) for cfg.created_revision:
 * read at open (0 when missing, torn or of another incarnation), raised by
 * sl_partition_purge_to (also while its record is still owed). The server compares it with its
 * topic's generation. */
uint64_t sl_partition_purge_generation(const sl_partition_t *p);

/* sl_partition_purge, then purge.gen owed at generation: written (atomically, data-synced)
 * before the partition's next segment write or consumer offset, which fail while it cannot
 * be. A crash before that leaves the old record with an empty partition, so the purge is done
 * again, never skipped, and finds nothing to lose. Errors as sl_partition_purge (the record is
 * then left as it was); no file is written here, and an empty partition costs no syscall. */
SL_WUR int sl_partition_purge_to(sl_partition_t *p, uint64_t generation);

/* Deletes the `count` oldest sealed segments (never the active one); *deleted gets how many
 * were. 0 or -SL_ERR_CANNOT_DELETE_FILE (those deleted before the failure are counted). */
SL_WUR int sl_partition_delete_segments(sl_partition_t *p, uint32_t count, uint32_t *deleted);

/* What the retention pass at now_us would delete, deleting nothing: how many of the oldest
 * sealed segments, and in *keep_from the start offset of the oldest segment it keeps. A
 * cluster's group primary decides with it and submits the deletion to the group's log
 * (server/cluster_partition.c). */
uint32_t sl_partition_retention_plan(const sl_partition_t *p, uint64_t now_us, uint64_t *keep_from);

/* The start offset of the segment after the `count` oldest sealed ones (fewer when fewer are
 * sealed): what DeleteSegments of count deletes below. */
uint64_t sl_partition_sealed_end(const sl_partition_t *p, uint32_t count);

/* Deletes every sealed segment that ends below offset (its last offset < offset), oldest
 * first: idempotent, so a replica replaying the op that named offset deletes nothing more.
 * *deleted gets how many went. 0 or -SL_ERR_CANNOT_DELETE_FILE. */
SL_WUR int sl_partition_delete_before(sl_partition_t *p, uint64_t offset, uint32_t *deleted);

/* The retention pass of the segment cleaner at now_us: deletes the oldest sealed segments
 * whose newest message is older than message_expiry (a segment with timestamp 0 never expires),
 * then, while the sealed bytes exceed max_size_share (floored at segment_size + batch_max so
 * the newest sealed segment stays), the oldest sealed segment: sl_partition_retention_plan's
 * segments. Only a prefix of the chain is ever deleted. *deleted gets how many segments went. 0 or
 * -SL_ERR_CANNOT_DELETE_FILE. */
SL_WUR int sl_partition_retention(sl_partition_t *p, uint64_t now_us, uint32_t *deleted);

#endif
