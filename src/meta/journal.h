/* metadata/journal.wal: the append-only log of metadata entries (storage.md 7.1).
 *
 * An append returns only after fdatasync, so a returned 0 means the entry survives a crash.
 * The file keeps SL_META_JOURNAL_RESERVE bytes preallocated past its last entry (fallocate,
 * the size unchanged), and each append says how much of that reserve it may use, so the
 * operations that free space still commit when the disk is full.
 * Open scans the file, stops at the first entry that is not valid (bad header, bad body
 * checksum, cut short, op or parent not following its predecessor), cuts the file there and
 * logs the offset. A checkpoint rewrites the file without the entries it covers. The journal
 * owns its fd and an index (op, offset, size) of the entries in the file. Single-threaded. */
#ifndef SL_META_JOURNAL_H
#define SL_META_JOURNAL_H

#include <stddef.h>
#include <stdint.h>

#include "base/assert.h"
#include "meta/entry.h"

#define SL_META_JOURNAL_FILE     "journal.wal"
#define SL_META_JOURNAL_TMP_FILE "journal.wal.tmp"

typedef struct sl_meta_journal sl_meta_journal_t;

/* What open found. */
typedef struct sl_meta_journal_info {
    uint64_t entries;        /* valid entries kept */
    uint64_t first_op;       /* 0 when empty */
    uint64_t last_op;        /* 0 when empty */
    uint64_t last_timestamp; /* of the last entry; 0 when empty */
    uint64_t size;           /* bytes kept */
    uint64_t torn_bytes;     /* bytes cut from the tail (0: the file was clean) */
    const char *torn_reason; /* static text, NULL when nothing was cut */
} sl_meta_journal_info_t;

/* Opens (creating when absent) <dir>/journal.wal, scans and repairs it as above, and fsyncs
 * the directory. 0 or a negative SL_ERR with a message in err. */
SL_WUR int sl_meta_journal_open(sl_meta_journal_t **out, const char *dir,
                                sl_meta_journal_info_t *info, char *err, size_t err_len);
void sl_meta_journal_close(sl_meta_journal_t *j);

/* How much of the preallocated reserve an append may use. */
typedef enum sl_meta_reserve {
    SL_META_RESERVE_KEEP = 0, /* ordinary operations: the whole reserve stays after the entry */
    SL_META_RESERVE_HALF,     /* logins and logouts: half of it must stay */
    SL_META_RESERVE_ALL,      /* operations that free space: all of it, and then any free space */
} sl_meta_reserve_t;

/* Appends e and fdatasyncs. When the journal holds entries e->op must be last op + 1
 * (asserted). Before writing, the preallocation is grown to keep the reserve behind the entry;
 * when the disk cannot give that, an append whose class may not use the reserve is refused with
 * -SL_ERR_CANNOT_WRITE_TO_FILE and nothing written. On any failure nothing is appended: the
 * partial bytes are cut (now or before the next append) and -SL_ERR_CANNOT_WRITE_TO_FILE or
 * -SL_ERR_CANNOT_SYNC_FILE is returned. Where the filesystem cannot preallocate there is no
 * reserve and every class is treated alike. */
SL_WUR int sl_meta_journal_append(sl_meta_journal_t *j, const sl_meta_entry_t *e,
                                  sl_meta_reserve_t reserve);

/* Calls fn for each entry with op > after_op, in op order, re-verifying each as it is read.
 * The entry's body is valid only during the call. A non-zero return from fn stops and is
 * returned; a read or verification failure gives -SL_ERR_CANNOT_READ_FILE or
 * -SL_ERR_STATE_FILE_CORRUPTED. */
typedef int (*sl_meta_journal_entry_fn)(void *ctx, const sl_meta_entry_t *e);
SL_WUR int sl_meta_journal_replay(sl_meta_journal_t *j, uint64_t after_op,
                                  sl_meta_journal_entry_fn fn, void *ctx);

/* Rewrites the file without the entries with op <= checkpoint_op: journal.wal.tmp, fsync,
 * rename, directory fsync, then the reserve preallocated in the new file (the old file's blocks
 * are free by then; a failure there is logged and retried by the next append). On a failure
 * before the rename the old file stays in use unchanged.
 * If only the directory fsync fails the new file is in use and the next append retries that
 * fsync first (an append must not land in a file whose name might not survive a crash). */
SL_WUR int sl_meta_journal_rewrite(sl_meta_journal_t *j, uint64_t checkpoint_op);

uint64_t sl_meta_journal_first_op(const sl_meta_journal_t *j); /* 0 when empty */
uint64_t sl_meta_journal_last_op(const sl_meta_journal_t *j);  /* 0 when empty */
uint64_t sl_meta_journal_entries(const sl_meta_journal_t *j);
uint64_t sl_meta_journal_size(const sl_meta_journal_t *j); /* bytes of valid entries */
/* Bytes known preallocated past the last entry (0 where the filesystem cannot preallocate). */
uint64_t sl_meta_journal_reserved(const sl_meta_journal_t *j);

#endif
