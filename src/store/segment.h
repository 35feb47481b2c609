/* One segment of a partition on disk (storage.md 2 and 4): a .log of stamped batch records back
 * to back and its sparse .index of 24-byte entries, both named by the segment's start offset in
 * 20 digits. This module owns the file formats: naming, the appending write with its index
 * entry, index lookups, a cursor that walks records, and the recovery of one segment's bounds.
 * The partition (store/partition.c) owns the list of segments and decides when to call what.
 *
 * Every file operation goes through base/io.h so tests can fail it. Single-threaded: the shard
 * that owns the partition calls everything. */
#ifndef SL_STORE_SEGMENT_H
#define SL_STORE_SEGMENT_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "base/assert.h"
#include "base/bytes.h"
#include "base/limits.h"

#define SL_SEGMENT_LOG_EXT     ".log"
#define SL_SEGMENT_INDEX_EXT   ".index"
#define SL_SEGMENT_STAGING_EXT ".staging"
/* 20 digits of start offset + ".index" + NUL. */
#define SL_SEGMENT_NAME_MAX 32u

/* One .index entry (storage.md 2.2): the first batch a flush wrote into this segment. */
#define SL_INDEX_ENTRY_SIZE 24u
typedef struct sl_index_entry {
    uint64_t offset;    /* base_offset of that batch */
    uint64_t timestamp; /* its base_timestamp */
    uint64_t position;  /* its first byte in the .log */
} sl_index_entry_t;

/* The smallest stored record: a batch header and one frame header. */
#define SL_SEGMENT_RECORD_MIN (SL_BATCH_HEADER_SIZE + SL_FRAME_HEADER_SIZE)

typedef struct sl_segment {
    const char *dir;        /* the partition directory (borrowed from the partition), for logs */
    uint64_t start_offset;  /* offset of its first message; names the files */
    uint64_t messages;      /* messages in whole batches on disk: last = start + messages - 1 */
    uint64_t size;          /* bytes of whole batches in the .log: where the next batch goes */
    uint64_t end_timestamp; /* base_timestamp of the newest batch; 0 when empty */
    uint64_t index_entries; /* whole entries in the .index */
    bool sealed;
    /* A failed append may have left bytes past size / index_entries that could not be cut;
     * no byte is written until they are (the cut is retried first). */
    bool tail_dirty;
    int log_fd; /* open only while the segment is active, else -1 */
    int index_fd;
} sl_segment_t;

/* Encodes e into raw (little endian offset, timestamp, position). */
void sl_segment_index_encode(uint8_t raw[SL_INDEX_ENTRY_SIZE], const sl_index_entry_t *e);
/* Reads index entry k of an .index. 0 or -errno (-EIO when the file ends first). */
SL_WUR int sl_segment_index_read(int fd, uint64_t k, sl_index_entry_t *e);

/* "<dir>/<start:020><ext>" into out; false when it does not fit. */
bool sl_segment_path(char out[PATH_MAX], const char *dir, uint64_t start, const char *ext);
/* Parses "<20 digits><ext>" (exactly, ext ".log" or ".index") into *start. */
bool sl_segment_parse_name(const char *name, const char *ext, uint64_t *start);

/* Creates the empty .log and .index of a new active segment (truncating leftovers of that name,
 * which never hold data: the name is the partition's next offset). preallocate reserves bytes
 * for the .log without changing its size, best effort. 0 or -SL_ERR_CANNOT_CREATE_SEGMENT_*. */
SL_WUR int sl_segment_create(sl_segment_t *s, const char *dir, uint64_t start,
                             uint64_t preallocate);
/* A new active segment from its .log and .index opened elsewhere (created empty by a
 * partition's creator, store/partition.h); preallocate as sl_segment_create. */
void sl_segment_adopt(sl_segment_t *s, const char *dir, uint64_t start, int log_fd, int index_fd,
                      uint64_t preallocate);
/* Opens the files of a recovered segment that becomes active (s->dir must be set). */
SL_WUR int sl_segment_open_active(sl_segment_t *s, const char *dir);
/* Closes the fds (the segment is sealed or the partition closes). */
void sl_segment_close(sl_segment_t *s);
/* Deletes the .log, then the .index (an orphan .index is swept at boot, a .log never is).
 * 0 or -SL_ERR_CANNOT_DELETE_FILE. */
SL_WUR int sl_segment_unlink(const char *dir, uint64_t start);

/* Buffers per vectored write (the kernel's IOV_MAX on Linux). */
#define SL_SEGMENT_IOV_MAX 1024

/* Whole batches one flush writes into one segment: their buffers (borrowed, consumed by the
 * write), and what the segment learns from them. */
typedef struct sl_segment_chunk {
    struct iovec *iov;
    size_t iovcnt;
    uint64_t bytes;
    uint64_t messages;
    uint64_t first_offset;    /* base_offset of the first batch: the index entry */
    uint64_t first_timestamp; /* its base_timestamp */
    uint64_t last_timestamp;  /* base_timestamp of the last batch */
    /* Index entries to write instead of the one for the first batch (NULL: that one):
     * index_count encoded entries (index_entry_encode's layout), whose positions are
     * absolute in the .log. A replicated partition indexes every batch this way, so its
     * .index does not depend on when it flushed (sl_partition_config_t.index_every_batch). */
    const uint8_t *index_raw;
    size_t index_count;
} sl_segment_chunk_t;

/* Writes the chunk at the end of the .log with vectored writes of at most SL_SEGMENT_IOV_MAX
 * buffers, then one index entry for its first batch (or chunk->index_raw's) at the end of the
 * .index, in one write; with sync
 * fdatasyncs the .log, then the .index. On success size, index_entries, messages and
 * end_timestamp advance. On failure nothing is counted and the bytes written are cut off again
 * (or, when even that fails, before the next write). Returns 0,
 * -SL_ERR_CANNOT_SAVE_MESSAGES_TO_SEGMENT, -SL_ERR_CANNOT_SAVE_INDEX_TO_SEGMENT or
 * -SL_ERR_CANNOT_SYNC_FILE. */
SL_WUR int sl_segment_append(sl_segment_t *s, sl_segment_chunk_t *chunk, bool sync);

/* Files of a segment opened for reading: the active segment lends its fds, a sealed one is
 * opened here and closed by sl_segment_reader_close. */
typedef struct sl_segment_reader {
    int log_fd;
    int index_fd; /* -1 when the .index cannot be opened: lookups then start at position 0 */
    bool owned;
} sl_segment_reader_t;

SL_WUR int sl_segment_reader_open(const sl_segment_t *s, const char *dir, sl_segment_reader_t *r);
void sl_segment_reader_close(sl_segment_reader_t *r);

/* Where to start walking for a target: binary search of the .index for the last entry whose
 * offset is <= target (by offset) or whose timestamp is < target (by timestamp). *position and
 * *offset get that entry's position and base offset, or 0 and the segment's start offset when
 * no entry qualifies. 0 or -SL_ERR_CANNOT_READ_FILE. */
SL_WUR int sl_segment_lookup(const sl_segment_t *s, int index_fd, bool by_timestamp,
                             uint64_t target, uint64_t *position, uint64_t *offset);

/* Walks records of a .log from a position, reading the file in chunks into buf. */
typedef struct sl_segment_cursor {
    int fd;
    uint64_t pos;       /* file position of the next record */
    uint64_t end;       /* the walk never reads at or past this position */
    uint64_t batch_max; /* a larger batch_length is not a record */
    sl_buf_t *buf;      /* holds file bytes [buf_pos, buf_pos + buf->len) */
    uint64_t buf_pos;
    uint8_t head[SL_BATCH_HEADER_SIZE]; /* a header peeked at outside buf */
} sl_segment_cursor_t;

/* What sl_segment_next found. */
typedef enum sl_segment_step {
    SL_SEGMENT_RECORD = 1, /* *record holds a record whose length fields fit */
    SL_SEGMENT_END = 0,    /* pos reached end */
    SL_SEGMENT_TORN = -1,  /* bytes that are not a whole record: a header or body cut short, or a
                            * batch_length below one frame or above batch_max */
    SL_SEGMENT_IO = -2,    /* a read failed */
} sl_segment_step_t;

void sl_segment_cursor_init(sl_segment_cursor_t *c, int fd, uint64_t pos, uint64_t end,
                            uint64_t batch_max, sl_buf_t *buf);
/* The next record, borrowed from buf until the next call. Only the batch_length is checked
 * here; callers check what else they need. On RECORD pos moves past it. */
sl_segment_step_t sl_segment_next(sl_segment_cursor_t *c, sl_span_t *record);
/* The next record's 256-byte header only (same checks and results as sl_segment_next), without
 * moving: sl_segment_next then returns that record, sl_segment_skip passes over it without
 * reading its frames (a poll skipping the batches before its start). When buf does not hold
 * the header, only the header is read (into the cursor), not a chunk: a caller that then
 * reads a large record whole (a poll's direct read) or skips it reads no byte twice. */
sl_segment_step_t sl_segment_peek(sl_segment_cursor_t *c, sl_span_t *header);
void sl_segment_skip(sl_segment_cursor_t *c, sl_span_t header);

/* --- recovery (storage.md 4) -------------------------------------------------------------- */

/* What recovering one segment found, and the repairs to make once the whole chain checks. */
typedef struct sl_segment_recovery {
    uint64_t messages;
    uint64_t size;          /* end of the last whole batch */
    uint64_t end_timestamp; /* its base_timestamp */
    uint64_t log_size;      /* the .log's size on disk: bytes past size are a torn tail */
    uint64_t index_found;   /* whole entries the .index held */
    uint64_t index_keep;    /* index entries to keep (when not rebuilding) */
    bool index_rebuild;     /* the .index is missing, torn or garbled: replace it */
    sl_buf_t rebuilt;       /* the new .index bytes when index_rebuild */
} sl_segment_recovery_t;

/* Reads the bounds of segment `start` in dir without changing any file: from the last whole
 * index entry's position (backing off over entries that point at a torn tail), or by walking
 * the .log from 0 when the index is missing, torn or garbled. Every record walked must be a
 * valid stamped batch (layout and checksums) continuing the offsets; the first one that is not
 * ends the segment (a torn tail). Refusals, with a message in err:
 *   -SL_ERR_CANNOT_READ_INDEX_POSITION: the last index entry points past the end of the .log;
 *   -SL_ERR_STATE_FILE_CORRUPTED: a valid batch whose base offset breaks the sequence.
 * With every_batch the index must have an entry per batch: one that lacks the entries of the
 * batches after its last (a crash between the .log write and the .index write) is rebuilt
 * with an entry per batch, as is a missing or garbled one.
 * I/O errors give -SL_ERR_CANNOT_READ_FILE. rec->rebuilt must be initialised by the caller
 * (sl_buf_init) and freed by it. */
SL_WUR int sl_segment_recover(const char *dir, uint64_t start, uint64_t batch_max, bool every_batch,
                              sl_buf_t *buf, sl_segment_recovery_t *rec, char *err, size_t err_len);

/* Applies a recovery's repairs: cuts the torn tail of the .log (cut_log: only the active
 * segment is appended to, but any segment's junk tail may go) and trims or rewrites the .index,
 * then fills s. 0 or -SL_ERR_CANNOT_WRITE_TO_FILE. */
SL_WUR int sl_segment_repair(sl_segment_t *s, const char *dir, uint64_t start,
                             const sl_segment_recovery_t *rec);

#endif
