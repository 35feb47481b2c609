/* The partition's state, shared by the files of the store module (partition.c, poll.c,
 * offsets.c) and nothing else. */
#ifndef SL_STORE_PARTITION_INTERNAL_H
#define SL_STORE_PARTITION_INTERNAL_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "base/bytes.h"
#include "store/offsets.h"
#include "store/partition.h"
#include "store/segment.h"

/* A stamped batch waiting in memory for a flush; polls read it in place. */
typedef struct journal_entry {
    void *owner;     /* released once the batch is on disk */
    uint8_t *record; /* inside owner */
    size_t len;
    size_t held; /* memory owner holds, counted in journal_held and cfg.bound */
    uint64_t base_offset;
    uint64_t timestamp;
    uint32_t count;
} journal_entry_t;

/* Consumer offsets in memory, sorted by key = kind << 32 | id for binary search. */
typedef struct offset_slot {
    uint64_t key;
    uint64_t offset;
} offset_slot_t;

typedef struct offset_table {
    offset_slot_t *slots;
    size_t count;
    size_t cap;
} offset_table_t;

struct sl_partition {
    char dir[PATH_MAX];
    uint32_t id;
    sl_partition_config_t cfg;
    /* Oldest first; the last is the active one. Empty only after a purge whose new segment
     * could not be created: the next flush creates it. */
    sl_segment_t *segments;
    size_t segment_count;
    size_t segment_cap;
    /* Batches not yet on disk, in offset order; journal[0] starts where the disk ends. */
    journal_entry_t *journal;
    size_t journal_count;
    size_t journal_cap;
    uint64_t journal_bytes;
    uint64_t journal_messages;
    uint64_t journal_held;
    /* Neighbours in cfg.bound's list, which holds the partition while its journal is not
     * empty (journal_bound.c). */
    sl_partition_t *bound_older, *bound_newer;
    bool bound_listed;
    uint64_t next_offset;    /* the base offset of the next batch */
    uint64_t last_timestamp; /* newest base_timestamp stored */
    struct iovec *iov;       /* flush scratch, journal_cap entries */
    uint8_t *index_raw;      /* flush scratch with index_every_batch, journal_cap entries */
    sl_buf_t read_buf;       /* chunks of .log files read by polls and recovery */
    offset_table_t offsets;
    uint64_t purge_generation; /* what purge.gen holds for cfg.created_revision */
    /* A purge to purge_generation is done but purge.gen could not be written (a full disk,
     * with nothing to free in this partition): written before anything else is
     * (sl_partition_purge_record). */
    bool purge_record_owed;
    /* Whether the names of the partition's directories (up to streams/)
     * and of its first segment are known durable: made so once, the first
     * time something durable is written (sl_partition_tree_durable). */
    bool tree_durable;
    bool offsets_dirs; /* offsets/consumers and offsets/groups exist */
    /* sl_partition_sync: segments starting at or above this offset may hold bytes not yet
     * fdatasynced (those below were synced by it, or at seal under enforce_fsync). */
    uint64_t unsynced_from;
    /* The partition directory exists: made at open, or, for a partition created new
     * (sl_partition_create), by the first write that needs it (sl_partition_make_dir). */
    bool dir_made;
    /* cfg.creator is creating the first segment (sl_partition_created ends it): flushes that
     * may wait leave the journal as it is meanwhile. creating_seq names the creation begun
     * last, creating_start its segment's start offset. */
    bool creating;
    uint64_t creating_seq;
    uint64_t creating_start;
};

/* partition.c and append.c, for each other and poll.c. */
/* Makes the names of the partition's directory tree durable: its offsets
 * directories, its files, the partition directory and its ancestors up to
 * the data root's `streams` (8 directory fsyncs, once per partition per
 * process). Creating a partition syncs nothing, so a topic with many
 * partitions is created quickly; a crash before anything durable was
 * written loses only directories boot creates again. 0 or
 * -SL_ERR_CANNOT_SYNC_FILE. */
int sl_partition_tree_durable(sl_partition_t *p);
/* Creates the partition directory and its parents when dir_made is false. 0 or
 * -SL_ERR_CANNOT_CREATE_PARTITION_DIRECTORY (logged). */
SL_WUR int sl_partition_make_dir(sl_partition_t *p);
/* Room for n more segments. */
bool sl_partition_segments_reserve(sl_partition_t *p, size_t n);
/* Creates the active segment at the next offset when there is none (a fresh partition, or a
 * purge whose new segment could not be created), or reopens its files when a failed purge
 * closed them. 0 or an error of sl_segment_create / sl_segment_open_active. */
SL_WUR int sl_partition_ensure_active(sl_partition_t *p);
/* Completes the creation in flight (cfg.creator->wait) when there is one. */
void sl_partition_wait_created(sl_partition_t *p);
/* Gives an entry's allocation back (cfg.release or free). */
void sl_partition_release(sl_partition_t *p, journal_entry_t *e);
/* Frees the read buffer when one large record grew it past what is worth keeping. */
void sl_partition_trim_read_buf(sl_partition_t *p);
/* Writes purge.gen when a purge could not (purge_record_owed); every durable write of the
 * partition calls it first, so no byte lands in data a later boot would purge. 0 or the error
 * of sl_purge_gen_write. */
SL_WUR int sl_partition_purge_record(sl_partition_t *p);
/* Deletes the oldest segment, which must be sealed. 0 or -SL_ERR_CANNOT_DELETE_FILE. */
SL_WUR int sl_partition_delete_oldest(sl_partition_t *p);

/* journal_bound.c, for append.c, retention.c and partition.c: an entry's memory counted in
 * (after it joined the journal) and out (after it left), and the bound's list kept in step
 * with whether the journal is empty. */
void sl_journal_held_add(sl_partition_t *p, size_t held);
void sl_journal_held_sub(sl_partition_t *p, size_t held);
void sl_journal_bound_update(sl_partition_t *p);

/* offsets.c, for partition.c: load at open, forget at purge, free at close. */
SL_WUR int sl_offsets_load(sl_partition_t *p, char *err, size_t err_len);
SL_WUR int sl_offsets_purge(sl_partition_t *p);
void sl_offsets_free(sl_partition_t *p);
/* "<dir>/offsets" and its two children. */
bool sl_offsets_dir_path(char out[PATH_MAX], const char *dir, const char *child);

#endif
