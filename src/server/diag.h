/* GetSnapshot (commands.md 11): a ZIP archive, built in memory with libzip,
 * holding one text entry per requested snapshot type: the data directory
 * tree, the process list, resource usage, recent log lines, the effective
 * configuration, or a fixed test text. */
#ifndef SL_SERVER_DIAG_H
#define SL_SERVER_DIAG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/assert.h"
#include "base/bytes.h"
#include "wire/cmd_system.h"

/* Bounds on what one snapshot collects, so a huge data directory or process
 * table cannot make the archive (or the time spent) unbounded. */
#define SL_DIAG_FS_ENTRIES_MAX 10000u
#define SL_DIAG_FS_DEPTH_MAX   16u
#define SL_DIAG_PROCESSES_MAX  20000u
#define SL_DIAG_SECTION_MAX    (8u * 1024u * 1024u) /* bytes of text per entry */
#define SL_DIAG_PROC_FILE_MAX  (64u * 1024u)        /* bytes read of one /proc file */

/* What the caller knows and diag does not look up itself. Borrowed for the
 * duration of the call. */
typedef struct sl_diag_input {
    const char *data_dir;  /* system.path: the FilesystemOverview root */
    sl_span_t config_text; /* the ServerConfig entry, secrets already hidden */
    uint64_t frame_limit;  /* message_bus.max_message_size; 0 = SL_FRAME_MAX_DEFAULT */
} sl_diag_input_t;

/* Builds the archive and appends it to zip_out. types are snapshot type
 * codes (sl_snapshot_type_t): All (100) alone expands to FilesystemOverview,
 * ProcessList, ResourceUsage, ServerLogs and ServerConfig; a type named twice
 * gets one entry. Entries are named "filesystem_overview.txt",
 * "process_list.txt", "resource_usage.txt", "test.txt", "server_logs.txt",
 * "server_config.txt", in request order, each compressed with the method of
 * compression (sl_snapshot_compression_t). No list gives an empty archive.
 *
 * Blocking: it walks the data directory and /proc, so run it off a shard's
 * event loop. At most one snapshot is built at a time in the process.
 *
 * Returns 0, or
 *   -SL_ERR_INVALID_COMMAND an unknown compression or type code, All with
 *                           other types (the request decoder refuses these
 *                           first; checked again here),
 *   -SL_ERR_FEATURE_UNAVAILABLE the installed libzip cannot compress with
 *                           that method (logged, naming it),
 *   -SL_ERR_SNAPSHOT_FILE_COMPLETION_FAILED another snapshot is being built,
 *                           256 + the archive exceeds the frame limit, zip_out
 *                           cannot hold it, or libzip failed (logged).
 * On failure zip_out holds what it held before. */
SL_WUR int sl_diag_snapshot(const sl_diag_input_t *in, uint8_t compression, const uint8_t *types,
                            size_t types_count, sl_buf_t *zip_out);

/* True when this build can write archives with that compression code. */
bool sl_diag_compression_supported(uint8_t compression);
/* "Stored", "Deflated", "Bzip2", "Zstd", "Lzma", "Xz", or NULL. */
const char *sl_diag_compression_name(uint8_t compression);
/* The archive entry of a snapshot type ("test.txt"), or NULL for All and
 * unknown codes. */
const char *sl_diag_entry_name(uint8_t type);

/* The single-flight guard sl_diag_snapshot takes for its duration. A caller
 * may hold it to keep snapshots out (sl_diag_snapshot then fails with
 * 9000), e.g. tests. Acquire returns false when it is already held. */
SL_WUR bool sl_diag_guard_acquire(void);
void sl_diag_guard_release(void);

#endif
